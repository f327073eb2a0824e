#include "vec_ops.hpp"
extern "C" void saxpy_f64(double alpha, const double* x, double* y, std::size_t n) { quick::saxpy(alpha, x, y, n); }
