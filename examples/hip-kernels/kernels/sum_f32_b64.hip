// sum, f32, block 64: *out = x[0] + ... + x[n - 1].
#include "hip_kernels.hpp"

extern "C" int sum_f32_b64(const float* x, size_t n, float* out) {
    return hk::sum<64>(x, n, out);
}
