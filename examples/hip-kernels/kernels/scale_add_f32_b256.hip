// scale_add, f32, block 256: y = alpha * x + y.
#include "hip_kernels.hpp"

extern "C" int scale_add_f32_b256(float alpha, const float* x, float* y, size_t n) {
    return hk::scale_add<256>(alpha, x, y, n);
}
