// scale_add, f16, block 64: y = alpha * x + y.
#include "hip_kernels.hpp"

extern "C" int scale_add_f16_b64(float alpha, const _Float16* x, _Float16* y, size_t n) {
    return hk::scale_add<64>(alpha, x, y, n);
}
