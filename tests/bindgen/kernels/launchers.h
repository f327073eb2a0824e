/* The launchers of this crate's kernels, declared once: the Rust
 * declarations are generated from this header (ck_jit_build::bindings::
 * Launchers) and every kernel source includes it, so the C compiler checks
 * each definition against the same declaration. */
#ifndef CK_JIT_BINDGEN_TESTS_LAUNCHERS_H
#define CK_JIT_BINDGEN_TESTS_LAUNCHERS_H

#include <stddef.h>
#include <stdint.h>

/** How `affine_i32` combines its parameters. */
typedef enum { AFFINE_ADD = 0, AFFINE_MUL = 1 } affine_op;

/** Parameters passed by pointer. */
typedef struct {
    int32_t scale;
    int32_t bias;
    affine_op op;
} affine_params;

/** A vector passed by value: three floats and a weight. */
typedef struct {
    float x, y, z;
    uint8_t weight;
} vec3;

/** out[i] = a[i] + b[i] for i < n. */
void vadd_f32(const float* a, const float* b, float* out, size_t n);

/** x[i] = x[i] * scale + bias (AFFINE_ADD) or x[i] * scale * bias
 * (AFFINE_MUL); returns the sum of the new values. */
int64_t affine_i32(const affine_params* p, int32_t* x, size_t n);

/** The weighted dot product of two vectors passed by value. */
float vec3_dot(vec3 a, vec3 b);

#endif
