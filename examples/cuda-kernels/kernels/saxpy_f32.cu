// saxpy: y = a * x + y over n floats.
#include "cuda_kernels.cuh"

__global__ void saxpy_kernel(float a, const float* x, float* y, size_t n) {
    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}

extern "C" int saxpy_f32(float a, const float* x, float* y, size_t n) {
    if (n == 0) {
        return cudaSuccess;
    }
    ckx::DeviceBuffer<float> dx, dy;
    CK_TRY(dx.alloc(n));
    CK_TRY(dy.alloc(n));
    CK_TRY(dx.upload(x, n));
    CK_TRY(dy.upload(y, n));
    const int block = 256;
    size_t blocks = (n + block - 1) / block;
    unsigned grid = blocks > 65535 ? 65535u : static_cast<unsigned>(blocks);
    saxpy_kernel<<<grid, block>>>(a, dx.ptr, dy.ptr, n);
    CK_TRY(cudaGetLastError());
    CK_TRY(dy.download(y, n));
    return cudaSuccess;
}
