#include "vec_ops.hpp"
extern "C" void vadd_f64(const double* a, const double* b, double* out, std::size_t n) { quick::vadd(a, b, out, n); }
