// sgemm with 16 x 16 tiles: C = A * B.
#include "sgemm.cuh"

extern "C" int sgemm_f32_t16(const float* a, const float* b, float* c, size_t m, size_t n, size_t k) {
    return sgemm<16>(a, b, c, m, n, k);
}
