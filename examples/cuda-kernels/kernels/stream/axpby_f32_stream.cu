// y = a * x + b * y over n floats, on a stream.
#include "stream.cuh"

__global__ void axpby_kernel(float a, const float* x, float b, float* y, size_t n) {
    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i] + b * y[i];
    }
}

extern "C" int axpby_f32_stream(float a, const float* x, float b, float* y, size_t n, void* stream) {
    if (n == 0) {
        return cudaSuccess;
    }
    axpby_kernel<<<ckx::grid_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(a, x, b, y, n);
    return cudaGetLastError();
}
