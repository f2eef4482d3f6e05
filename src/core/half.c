/*
 * half.c - binary16 conversions (a portable C version and an F16C one chosen at run time)
 * and bfloat16 conversions (portable C; the loops vectorize).
 */
#include "core/half.h"

#include <stdatomic.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define VG_HALF_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static inline uint32_t f_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float vg__half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return bits_f(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0)); /* inf, NaN (quieted) */
    if (exp != 0) return bits_f(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0) return bits_f(sign);
    /* subnormal: man * 2^-24, exact in float */
    int e = -1;
    do { man <<= 1; e++; } while (!(man & 0x400u));
    return bits_f(sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13));
}

uint16_t vg__float_to_half(float f) {
    uint32_t u = f_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xff) /* inf / NaN: keep the top 10 payload bits, quiet a NaN */
        return (uint16_t)(sign | 0x7c00u | (man ? (0x200u | (man >> 13)) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u); /* overflow */
    if (e <= 0) {
        if (e < -10) return sign; /* below half the smallest subnormal: rounds to zero */
        uint32_t m = man | 0x800000u; /* implicit bit */
        uint32_t shift = (uint32_t)(14 - e); /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (r & 1u))) r++;
        return (uint16_t)(sign | r); /* r may carry into the smallest normal: still right */
    }
    uint32_t r = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++; /* may carry to inf: right */
    return (uint16_t)(sign | r);
}

#ifdef VG_HALF_X86
__attribute__((target("f16c"))) static void h2f_f16c(const uint16_t *h, float *f, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(h + i))));
    for (; i < n; i++) f[i] = _cvtsh_ss(h[i]);
}
__attribute__((target("f16c"))) static void f2h_f16c(const float *f, uint16_t *h, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) h[i] = (uint16_t)_cvtss_sh(f[i], _MM_FROUND_TO_NEAREST_INT);
}
#endif

bool vg__half_has_f16c(void) {
#ifdef VG_HALF_X86
    /* cpuid leaf 1: ECX bit 29 F16C, 28 AVX, 27 OSXSAVE; then XCR0 bits 1-2 (the OS
     * saves SSE and AVX state). By hand: clang 14's __builtin_cpu_supports has no "f16c"
     * (and src/kernels/backend/cpu_features.c is a layer above core). */
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    if (!(c & (1u << 29)) || !(c & (1u << 28)) || !(c & (1u << 27))) return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u;
#else
    return false;
#endif
}

static atomic_int g_allow = 1;

bool vg__half_set_f16c(bool allow) { return atomic_exchange(&g_allow, allow ? 1 : 0) != 0; }

static bool use_f16c(void) {
    static atomic_int cached = -1;
    int c = atomic_load(&cached);
    if (c < 0) { c = vg__half_has_f16c() ? 1 : 0; atomic_store(&cached, c); }
    return c && atomic_load(&g_allow);
}

void vg__half_to_float_n(const uint16_t *h, float *f, size_t n) {
#ifdef VG_HALF_X86
    if (use_f16c()) { h2f_f16c(h, f, n); return; }
#endif
    for (size_t i = 0; i < n; i++) f[i] = vg__half_to_float(h[i]);
}

void vg__float_to_half_n(const float *f, uint16_t *h, size_t n) {
#ifdef VG_HALF_X86
    if (use_f16c()) { f2h_f16c(f, h, n); return; }
#endif
    for (size_t i = 0; i < n; i++) h[i] = vg__float_to_half(f[i]);
}

/* ------------------------------------------------------------------------ */
/* bfloat16: TF 1.15's bfloat16.h round_to_bfloat16 (add 0x7fff plus the lowest kept bit,
 * keep the high half; NaN -> 0x7fc0). */

float vg__bf16_to_float(uint16_t b) { return bits_f((uint32_t)b << 16); }

uint16_t vg__float_to_bf16(float f) {
    if (f != f) return 0x7fc0u;
    uint32_t u = f_bits(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

void vg__bf16_to_float_n(const uint16_t *b, float *f, size_t n) {
    for (size_t i = 0; i < n; i++) f[i] = vg__bf16_to_float(b[i]);
}

void vg__float_to_bf16_n(const float *f, uint16_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = f_bits(f[i]);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        b[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : r); /* NaN: TF's quiet NaN */
    }
}
