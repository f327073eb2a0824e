// scale_add, f32, block 64: y = alpha * x + y.
#include "hip_kernels.hpp"

extern "C" int scale_add_f32_b64(float alpha, const float* x, float* y, size_t n) {
    return hk::scale_add<64>(alpha, x, y, n);
}
