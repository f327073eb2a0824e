// Shared by the blobs under kernels/: a status-returning macro and device
// memory that frees itself.
//
// Each blob exports one host launcher with C linkage. A launcher owns its
// device memory: it allocates, copies in, launches, copies out and frees,
// and returns the first failing cudaError_t as an int (0 is cudaSuccess), so
// the Rust side needs no CUDA bindings. The CUDA runtime is linked
// statically into each blob (nvcc's default), so a blob needs only the
// driver (libcuda.so.1) at run time.
#pragma once

#include <cuda_runtime.h>

#include <limits.h>
#include <stddef.h>

// Returns the status of `expr` from the enclosing launcher when it failed.
#define CK_TRY(expr)                          \
    do {                                      \
        cudaError_t ck_status_ = (expr);      \
        if (ck_status_ != cudaSuccess) {      \
            return ck_status_;                \
        }                                     \
    } while (0)

namespace ckx {

// Device memory released on every return path of a launcher.
template <typename T>
struct DeviceBuffer {
    T* ptr = nullptr;
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (ptr != nullptr) {
            (void)cudaFree(ptr);
        }
    }
    cudaError_t alloc(size_t n) { return cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(T)); }
    cudaError_t upload(const T* host, size_t n) {
        return cudaMemcpy(ptr, host, n * sizeof(T), cudaMemcpyHostToDevice);
    }
    cudaError_t download(T* host, size_t n) const {
        return cudaMemcpy(host, ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
    }
};

}  // namespace ckx
