#include "vec_ops.hpp"
extern "C" float dot_f32(const float* a, const float* b, std::size_t n) { return quick::dot(a, b, n); }
