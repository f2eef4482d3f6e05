/*
 * vmath.h - float32 math that vectorizes: no libm call inside a loop, so GCC can keep
 * the loop in SIMD registers (in every clone of kernels/simd.h). Shared by the LSTM gate
 * loops (rnn_ops.c) and the softmax / cross-entropy rows (nn_ops.c).
 */
#ifndef VG_KERNELS_VMATH_H
#define VG_KERNELS_VMATH_H
#include <stdint.h>
#include <string.h>

/* exp(x): Cephes' expf polynomial after the reduction x = n ln2 + r, 2^n built in the
 * exponent bits; x clamped to [-87.3, 88.3] (the float range), relative error ~2e-7.
 * NaN stays NaN (through r; the integer part is taken from 0 then). */
static inline float vg__vexpf(float x) {
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.3f ? 88.3f : x;
    float t = x * 1.44269504088896341f;
    t = t == t ? t : 0.0f; /* NaN: a finite exponent (converting NaN to int is undefined); r stays NaN */
    int32_t n = (int32_t)(t + 128.5f) - 128; /* round(t): t + 128.5 > 0 */
    float fn = (float)n;
    float r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#endif
