#include "fused.hpp"
extern "C" void gemm_relu_f32(const float* x, const float* w, const float* bias, float* y, fused::Shape s) {
    fused::gemm(x, w, y, s.m, s.n, s.k, bias, fused::relu<float>);
}
