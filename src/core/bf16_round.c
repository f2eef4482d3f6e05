/*
 * bf16_round.c - float32 -> bfloat16 rounding in bulk for bfloat16 compute (the
 * mixed-precision rewrite's casts, bfloat16 MatMul's operands): TF's round_to_bfloat16
 * (nearest even, subnormals kept, every NaN to the quiet 0x7fc0) written without
 * branches so that gcc vectorizes it, once for the build's baseline and once for
 * AVX-512 (picked at run time). Not the AVX512-BF16 instruction: VCVTNEPS2BF16 flushes
 * subnormal inputs to zero, which TF's conversion does not.
 */
#include "core/bf16_round.h"
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#define F2B_BODY                                                                                                  \
    for (size_t i = 0; i < n; i++) {                                                                              \
        uint32_t u;                                                                                               \
        memcpy(&u, &f[i], 4);                                                                                     \
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                                                      \
        b[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : r);                                         \
    }

#define ROUND_BODY                                                                                                \
    for (size_t i = 0; i < n; i++) {                                                                              \
        uint32_t u;                                                                                               \
        memcpy(&u, &src[i], 4);                                                                                   \
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;                                              \
        r = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : r;                                                    \
        memcpy(&dst[i], &r, 4);                                                                                   \
    }

static void f2b_base(const float *restrict f, uint16_t *restrict b, size_t n) { F2B_BODY }
static void round_base(const float *src, float *dst, size_t n) { ROUND_BODY }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void f2b_avx512(const float *restrict f,
                                                                              uint16_t *restrict b, size_t n) {
    F2B_BODY
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void round_avx512(const float *src, float *dst,
                                                                                size_t n) {
    ROUND_BODY
}
static int have_avx512(void) {
    static int v = -1;
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl");
    }
    return v;
}
#endif

/* One place decides which pair of loops this CPU runs. */
typedef struct bf16_impl {
    void (*to_bf16)(const float *restrict f, uint16_t *restrict b, size_t n);
    void (*round)(const float *src, float *dst, size_t n);
} bf16_impl;

static const bf16_impl *impl(void) {
    static const bf16_impl base = {f2b_base, round_base};
#if defined(__x86_64__) && defined(__GNUC__)
    static const bf16_impl avx512 = {f2b_avx512, round_avx512};
    if (have_avx512()) return &avx512;
#endif
    return &base;
}

void vg__f32_to_bf16_n(const float *f, uint16_t *b, size_t n) { impl()->to_bf16(f, b, n); }

void vg__bf16_round_n(const float *src, float *dst, size_t n) { impl()->round(src, dst, n); }
