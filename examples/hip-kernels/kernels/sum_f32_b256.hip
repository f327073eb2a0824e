// sum, f32, block 256: *out = x[0] + ... + x[n - 1].
#include "hip_kernels.hpp"

extern "C" int sum_f32_b256(const float* x, size_t n, float* out) {
    return hk::sum<256>(x, n, out);
}
