// Device kernels and host launchers shared by the blobs under kernels/.
//
// Each blob instantiates one launcher for one (op, element type, block size)
// and exports it with C linkage. A launcher owns its device memory: it
// allocates, copies in, launches, copies out and frees, and returns the first
// failing hipError_t as an int (0 is hipSuccess), so the Rust side needs no
// HIP bindings of its own.
#pragma once

#include <hip/hip_runtime.h>

#include <stddef.h>
#include <vector>

// Returns the status of `expr` from the enclosing launcher when it failed.
#define HK_TRY(expr)                          \
    do {                                      \
        hipError_t hk_status_ = (expr);       \
        if (hk_status_ != hipSuccess) {       \
            return hk_status_;                \
        }                                     \
    } while (0)

namespace hk {

// Device memory released on every return path of a launcher.
template <typename T>
struct DeviceBuffer {
    T* ptr = nullptr;
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (ptr != nullptr) {
            (void)hipFree(ptr);
        }
    }
    hipError_t alloc(size_t n) { return hipMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(T)); }
};

// Enough blocks to cover n with a grid-stride loop, capped so one launch
// never asks for an absurd grid.
inline unsigned grid_for(size_t n, int block) {
    size_t blocks = (n + block - 1) / block;
    return blocks > 1024 ? 1024u : static_cast<unsigned>(blocks);
}

// y[i] = alpha * x[i] + y[i], computed in float whatever the element type.
template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) scale_add_kernel(float alpha, const T* x, T* y, size_t n) {
    size_t stride = static_cast<size_t>(gridDim.x) * BLOCK;
    for (size_t i = static_cast<size_t>(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        y[i] = static_cast<T>(alpha * static_cast<float>(x[i]) + static_cast<float>(y[i]));
    }
}

// One partial sum per block: a grid-stride accumulation, then a tree
// reduction in shared memory.
template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) sum_kernel(const T* x, size_t n, float* partial) {
    __shared__ float lane[BLOCK];
    float acc = 0.0f;
    size_t stride = static_cast<size_t>(gridDim.x) * BLOCK;
    for (size_t i = static_cast<size_t>(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
        acc += static_cast<float>(x[i]);
    }
    lane[threadIdx.x] = acc;
    __syncthreads();
    for (int width = BLOCK / 2; width > 0; width /= 2) {
        if (static_cast<int>(threadIdx.x) < width) {
            lane[threadIdx.x] += lane[threadIdx.x + width];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = lane[0];
    }
}

// y = alpha * x + y over n host elements.
template <int BLOCK, typename T>
hipError_t scale_add(float alpha, const T* x, T* y, size_t n) {
    if (n == 0) {
        return hipSuccess;
    }
    DeviceBuffer<T> dx, dy;
    HK_TRY(dx.alloc(n));
    HK_TRY(dy.alloc(n));
    HK_TRY(hipMemcpy(dx.ptr, x, n * sizeof(T), hipMemcpyHostToDevice));
    HK_TRY(hipMemcpy(dy.ptr, y, n * sizeof(T), hipMemcpyHostToDevice));
    hipLaunchKernelGGL((scale_add_kernel<BLOCK, T>), dim3(grid_for(n, BLOCK)), dim3(BLOCK), 0, 0,
                       alpha, dx.ptr, dy.ptr, n);
    HK_TRY(hipGetLastError());
    HK_TRY(hipMemcpy(y, dy.ptr, n * sizeof(T), hipMemcpyDeviceToHost));
    return hipSuccess;
}

// *out = sum of n host elements (accumulated in float on the device, the
// per-block partial sums added in double on the host).
template <int BLOCK, typename T>
hipError_t sum(const T* x, size_t n, float* out) {
    *out = 0.0f;
    if (n == 0) {
        return hipSuccess;
    }
    unsigned grid = grid_for(n, BLOCK);
    DeviceBuffer<T> dx;
    DeviceBuffer<float> dpartial;
    HK_TRY(dx.alloc(n));
    HK_TRY(dpartial.alloc(grid));
    HK_TRY(hipMemcpy(dx.ptr, x, n * sizeof(T), hipMemcpyHostToDevice));
    hipLaunchKernelGGL((sum_kernel<BLOCK, T>), dim3(grid), dim3(BLOCK), 0, 0, dx.ptr, n, dpartial.ptr);
    HK_TRY(hipGetLastError());
    std::vector<float> partial(grid);
    HK_TRY(hipMemcpy(partial.data(), dpartial.ptr, grid * sizeof(float), hipMemcpyDeviceToHost));
    double total = 0.0;
    for (float p : partial) {
        total += p;
    }
    *out = static_cast<float>(total);
    return hipSuccess;
}

}  // namespace hk
