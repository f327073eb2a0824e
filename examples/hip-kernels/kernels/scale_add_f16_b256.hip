// scale_add, f16, block 256: y = alpha * x + y.
#include "hip_kernels.hpp"

extern "C" int scale_add_f16_b256(float alpha, const _Float16* x, _Float16* y, size_t n) {
    return hk::scale_add<256>(alpha, x, y, n);
}
