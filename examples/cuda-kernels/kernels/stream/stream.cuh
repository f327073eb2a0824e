// Shared by the blobs under kernels/stream/: launchers that take device
// pointers and a stream (cudaStream_t passed as void*), launch, and return
// the launch status without synchronising, so a CUDA graph can capture them.
#pragma once

#include <cuda_runtime.h>

#include <stddef.h>

namespace ckx {

inline unsigned grid_for(size_t n, int block) {
    size_t blocks = (n + block - 1) / block;
    return blocks > 65535 ? 65535u : static_cast<unsigned>(blocks);
}

}  // namespace ckx
