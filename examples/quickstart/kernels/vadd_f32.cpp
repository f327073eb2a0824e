#include "vec_ops.hpp"
extern "C" void vadd_f32(const float* a, const float* b, float* out, std::size_t n) { quick::vadd(a, b, out, n); }
