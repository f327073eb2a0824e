// Row softmax: out[r][c] = exp(in[r][c] - max_r) / sum_c exp(in[r][c] - max_r)
// over a row-major rows x cols matrix; one block per row.
#include "cuda_kernels.cuh"

#include <math.h>

constexpr int kBlock = 256;

__device__ float block_reduce(float v, float* lane, bool is_max) {
    lane[threadIdx.x] = v;
    __syncthreads();
    for (int width = kBlock / 2; width > 0; width /= 2) {
        if (static_cast<int>(threadIdx.x) < width) {
            float other = lane[threadIdx.x + width];
            lane[threadIdx.x] = is_max ? fmaxf(lane[threadIdx.x], other) : lane[threadIdx.x] + other;
        }
        __syncthreads();
    }
    float r = lane[0];
    __syncthreads();
    return r;
}

__global__ void __launch_bounds__(kBlock) softmax_rows(const float* in, float* out, size_t cols) {
    __shared__ float lane[kBlock];
    const float* row = in + static_cast<size_t>(blockIdx.x) * cols;
    float* dst = out + static_cast<size_t>(blockIdx.x) * cols;
    float m = -INFINITY;
    for (size_t c = threadIdx.x; c < cols; c += kBlock) {
        m = fmaxf(m, row[c]);
    }
    m = block_reduce(m, lane, true);
    float s = 0.0f;
    for (size_t c = threadIdx.x; c < cols; c += kBlock) {
        s += expf(row[c] - m);
    }
    s = block_reduce(s, lane, false);
    for (size_t c = threadIdx.x; c < cols; c += kBlock) {
        dst[c] = expf(row[c] - m) / s;
    }
}

extern "C" int softmax_f32(const float* in, float* out, size_t rows, size_t cols) {
    if (rows == 0 || cols == 0) {
        return cudaSuccess;
    }
    if (rows > INT_MAX) {
        return cudaErrorInvalidValue;
    }
    size_t n = rows * cols;
    ckx::DeviceBuffer<float> din, dout;
    CK_TRY(din.alloc(n));
    CK_TRY(dout.alloc(n));
    CK_TRY(din.upload(in, n));
    softmax_rows<<<static_cast<unsigned>(rows), kBlock>>>(din.ptr, dout.ptr, cols);
    CK_TRY(cudaGetLastError());
    CK_TRY(dout.download(out, n));
    return cudaSuccess;
}
