#include "vec_ops.hpp"
extern "C" double dot_f64(const double* a, const double* b, std::size_t n) { return quick::dot(a, b, n); }
