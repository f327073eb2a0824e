// sum, f16, block 64: *out = x[0] + ... + x[n - 1].
#include "hip_kernels.hpp"

extern "C" int sum_f16_b64(const _Float16* x, size_t n, float* out) {
    return hk::sum<64>(x, n, out);
}
