/* roofline.h - the machine's per-core float32 FMA peak, probed (shared by
 * bench_roofline.c and bench_train.c; header-only, static functions).
 *
 * The probe runs RL_ACC independent FMA chains (enough to cover FMA latency x ports on
 * current x86 cores) on registers only, for a short burst, several times, and keeps the
 * best burst: on a shared machine the best burst is the closest to the core's own peak.
 * Compiled with target attributes, so the binary runs on any x86-64 and probes only
 * what cpuid reports. */
#ifndef VG_BENCH_ROOFLINE_H
#define VG_BENCH_ROOFLINE_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "bench_util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RL_ACC 12

/* Runs iters x RL_ACC FMAs of vector width W floats on RL_ACC named accumulators
 * (explicitly unrolled so they stay in registers); returns a value to keep the
 * compiler from dropping the work. */
#define RL_FMA12(FMA)                                                                                   \
    a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c), a4 = FMA(a4, m, c),  \
    a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c), a8 = FMA(a8, m, c), a9 = FMA(a9, m, c),  \
    a10 = FMA(a10, m, c), a11 = FMA(a11, m, c)
#define RL_SUM12(ADD)                                                                                   \
    ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), ADD(ADD(a8, a9), ADD(a10, a11)))

__attribute__((target("avx512f"), noinline, unused)) static float rl_fma512(int64_t iters) {
    __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2), a3 = _mm512_set1_ps(3),
           a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5), a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7),
           a8 = _mm512_set1_ps(8), a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
    for (int64_t n = 0; n < iters; n++) {
        RL_FMA12(_mm512_fmadd_ps);
        __asm__("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    }
    return _mm512_reduce_add_ps(RL_SUM12(_mm512_add_ps));
}

__attribute__((target("avx2,fma"), noinline, unused)) static float rl_fma256(int64_t iters) {
    __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2), a3 = _mm256_set1_ps(3),
           a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5), a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7),
           a8 = _mm256_set1_ps(8), a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
    for (int64_t n = 0; n < iters; n++) {
        RL_FMA12(_mm256_fmadd_ps);
        __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
    }
    float v[8];
    _mm256_storeu_ps(v, RL_SUM12(_mm256_add_ps));
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

__attribute__((unused)) static volatile float rl_sink;

/* Best GFLOP/s of `bursts` bursts of ~burst_s seconds; width 16 (AVX-512) or 8 (AVX2).
 * Returns 0 when the CPU lacks the instructions. */
static inline double rl_fma_peak(int width, int bursts, double burst_s) {
    __builtin_cpu_init();
    if (width == 16 && !__builtin_cpu_supports("avx512f")) return 0;
    if (width == 8 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0;
    int64_t iters = 1 << 16;
    for (;;) { /* calibrate to burst_s */
        double t = now_s();
        rl_sink = width == 16 ? rl_fma512(iters) : rl_fma256(iters);
        t = now_s() - t;
        if (t >= burst_s / 4 || iters > ((int64_t)1 << 40)) {
            if (t > 0) iters = (int64_t)((double)iters * burst_s / t) + 1;
            break;
        }
        iters *= 4;
    }
    double best = 0;
    for (int b = 0; b < bursts; b++) {
        double t = now_s();
        rl_sink = width == 16 ? rl_fma512(iters) : rl_fma256(iters);
        t = now_s() - t;
        double gf = (double)iters * RL_ACC * width * 2 / t * 1e-9;
        if (gf > best) best = gf;
    }
    return best;
}
#else
static inline double rl_fma_peak(int width, int bursts, double burst_s) {
    (void)width, (void)bursts, (void)burst_s;
    return 0;
}
#endif

/* The best per-core peak the CPU has (AVX-512 where present, else AVX2), GFLOP/s. */
static inline double rl_core_peak(int bursts, double burst_s) {
    double p = rl_fma_peak(16, bursts, burst_s);
    return p > 0 ? p : rl_fma_peak(8, bursts, burst_s);
}

/* One core's memory bandwidth, GB/s of bytes read + written, probed: the best of
 * `rounds` passes of y = a * x + y (STREAM's triad minus one stream; two reads and one
 * write per element) over two 64 MB float arrays, far past the caches. The roofline of
 * memory-bound ops (batch norm, activations, element-wise) on this machine. */
static inline double rl_mem_bandwidth(int rounds) {
    const size_t n = (size_t)16 << 20;
    float *x = (float *)malloc(n * sizeof(float)), *y = (float *)malloc(n * sizeof(float));
    if (!x || !y) {
        free(x), free(y);
        return -1;
    }
    for (size_t i = 0; i < n; i++) x[i] = 1.0f, y[i] = 0.5f;
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        for (size_t i = 0; i < n; i++) y[i] = 0.999f * x[i] + y[i];
        double t = now_s() - t0;
        double gbs = 3.0 * (double)n * sizeof(float) / t * 1e-9;
        if (gbs > best) best = gbs;
    }
    volatile float sink = y[n / 2];
    (void)sink;
    free(x), free(y);
    return best;
}

/* Flops of one training step of bench_train's models at batch b (matrix products and
 * convolutions only: forward, and backward for weights and for every input that needs
 * a gradient; element-wise work is a few percent and left out). */
static inline double rl_mlp_step_flops(int b) {
    double fwd = 2.0 * b * (784.0 * 256 + 256.0 * 256 + 256.0 * 10);
    double dx = 2.0 * b * (256.0 * 256 + 256.0 * 10); /* no gradient into the input */
    return 2 * fwd + dx;
}
static inline double rl_cnn_step_flops(int b) {
    double c1 = 2.0 * b * 28 * 28 * 32 * (5 * 5 * 1), c2 = 2.0 * b * 14 * 14 * 64 * (5 * 5 * 32);
    double d1 = 2.0 * b * 3136 * 128, d2 = 2.0 * b * 128 * 10;
    return 2 * c1 + 3 * c2 + 3 * d1 + 3 * d2; /* conv1: forward + filter gradient only */
}

#endif
