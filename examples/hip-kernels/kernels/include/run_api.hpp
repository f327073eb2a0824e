// The API of the CK-shaped blobs under kernels/ck/, modelled on
// ComposableKernel's fmha_fwd.hpp: one function template over a traits type,
// declared here and specialised once per blob. The specialisation is a C++
// function, so its exported name is Itanium-mangled; the runtime finds it by
// prefix (_Z4run_I...).
#pragma once

#include <hip/hip_runtime.h>

#include <stddef.h>

// Like ck_tile::stream_config: where to launch, and whether to time it.
struct stream_config {
    hipStream_t stream_id_ = nullptr;
    bool time_kernel_ = false;
};

// Like fmha_fwd_args: host pointers, sizes and scalars of one call.
struct scale_add_args {
    const void* x;
    void* y;
    float alpha;
    size_t n;
};

// Like fmha_fwd_traits_<...>: the compile-time shape of one variant.
template <typename DataType_, int kBlockSize_>
struct scale_add_traits_ {
    using DataType = DataType_;
    static constexpr int kBlockSize = kBlockSize_;
};

// Returns the kernel time in ms (0 unless s.time_kernel_), or -status when a
// HIP call failed, as a negative float (CK returns a negative time when a
// variant cannot run).
template <typename Traits>
float run_(const stream_config& s, scale_add_args a);
