// sgemm with 32 x 32 tiles: C = A * B.
#include "sgemm.cuh"

extern "C" int sgemm_f32_t32(const float* a, const float* b, float* c, size_t m, size_t n, size_t k) {
    return sgemm<32>(a, b, c, m, n, k);
}
