#include "vec_ops.hpp"
extern "C" void saxpy_f32(float alpha, const float* x, float* y, std::size_t n) { quick::saxpy(alpha, x, y, n); }
