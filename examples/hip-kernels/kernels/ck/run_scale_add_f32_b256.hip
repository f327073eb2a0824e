// A blob shaped like a ComposableKernel instance: it defines one
// specialisation of run_ for the traits below and nothing else. The build
// passes -fvisibility=hidden (as CK's CMake does); ck-jit drops it so the
// specialisation stays exported.
#include "hip_kernels.hpp"
#include "run_api.hpp"

using trait_0 = scale_add_traits_<float, 256>;

namespace {

hipError_t launch(const stream_config& s, scale_add_args a, float* ms) {
    using T = trait_0::DataType;
    constexpr int kBlock = trait_0::kBlockSize;
    *ms = 0.0f;
    if (a.n == 0) {
        return hipSuccess;
    }
    hk::DeviceBuffer<T> dx, dy;
    HK_TRY(dx.alloc(a.n));
    HK_TRY(dy.alloc(a.n));
    HK_TRY(hipMemcpy(dx.ptr, a.x, a.n * sizeof(T), hipMemcpyHostToDevice));
    HK_TRY(hipMemcpy(dy.ptr, a.y, a.n * sizeof(T), hipMemcpyHostToDevice));
    hipEvent_t start = nullptr, stop = nullptr;
    if (s.time_kernel_) {
        HK_TRY(hipEventCreate(&start));
        HK_TRY(hipEventCreate(&stop));
        HK_TRY(hipEventRecord(start, s.stream_id_));
    }
    hipLaunchKernelGGL((hk::scale_add_kernel<kBlock, T>), dim3(hk::grid_for(a.n, kBlock)),
                       dim3(kBlock), 0, s.stream_id_, a.alpha, dx.ptr, dy.ptr, a.n);
    HK_TRY(hipGetLastError());
    if (s.time_kernel_) {
        HK_TRY(hipEventRecord(stop, s.stream_id_));
        HK_TRY(hipEventSynchronize(stop));
        HK_TRY(hipEventElapsedTime(ms, start, stop));
        (void)hipEventDestroy(start);
        (void)hipEventDestroy(stop);
    }
    HK_TRY(hipMemcpy(a.y, dy.ptr, a.n * sizeof(T), hipMemcpyDeviceToHost));
    return hipSuccess;
}

}  // namespace

template <>
float run_<trait_0>(const stream_config& s, scale_add_args a) {
    float ms = 0.0f;
    hipError_t status = launch(s, a, &ms);
    return status == hipSuccess ? ms : -static_cast<float>(status);
}
