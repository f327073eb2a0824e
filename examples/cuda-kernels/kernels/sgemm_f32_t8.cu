// sgemm with 8 x 8 tiles: C = A * B.
#include "sgemm.cuh"

extern "C" int sgemm_f32_t8(const float* a, const float* b, float* c, size_t m, size_t n, size_t k) {
    return sgemm<8>(a, b, c, m, n, k);
}
