// A CUDA blob with enough device code that each architecture's code
// generation shows in the compile time: a tiled matrix product
// instantiated for four tile sizes, behind one C entry point.
#include <cuda_runtime.h>

template <int T>
__global__ void tiles(const float* a, const float* b, float* c, int n) {
    __shared__ float sa[T][T + 1];
    __shared__ float sb[T][T + 1];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < n; k0 += T) {
        sa[threadIdx.y][threadIdx.x] = (row < n && k0 + threadIdx.x < n) ? a[row * n + k0 + threadIdx.x] : 0.f;
        sb[threadIdx.y][threadIdx.x] = (col < n && k0 + threadIdx.y < n) ? b[(k0 + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k) acc = fmaf(sa[threadIdx.y][k], sb[k][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = acc;
}

template <int T>
static int launch(const float* a, const float* b, float* c, int n) {
    dim3 block(T, T), grid((n + T - 1) / T, (n + T - 1) / T);
    tiles<T><<<grid, block>>>(a, b, c, n);
    return (int)cudaGetLastError();
}

// Device pointers in, 0 or a cudaError_t out.
extern "C" int arch_tiles(const float* a, const float* b, float* c, int n, int tile) {
    switch (tile) {
    case 8: return launch<8>(a, b, c, n);
    case 16: return launch<16>(a, b, c, n);
    case 24: return launch<24>(a, b, c, n);
    default: return launch<32>(a, b, c, n);
    }
}
