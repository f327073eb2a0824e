#include "vec_ops.hpp"
extern "C" void vadd_i32(const int* a, const int* b, int* out, std::size_t n) { quick::vadd(a, b, out, n); }
