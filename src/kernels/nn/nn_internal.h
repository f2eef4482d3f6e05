/*
 * nn_internal.h - helpers shared by the nn op family files: nn_ops.c (MatMul,
 * activations, softmax, cross-entropy; table vg__ops_nn) and conv_ops.c (Conv2D and
 * pooling; table vg__ops_conv).
 */
#ifndef VG_NN_INTERNAL_H
#define VG_NN_INTERNAL_H

#include "kernels/kernel.h"
#include "vigil/ops.h"

/* Fails with INVALID_ARGUMENT unless input i is float32 or float64 (or unknown). */
VG_HIDDEN vg_code vg__nn_check_real(const vg_op *op, int i, const char *what, vg_status *st);

/* Row-major C[M,N] = op(A)[M,K] * op(B)[K,N] (+ beta * C) in float or double.
 * A is (M,K) with lda, or (K,M) when ta; B is (K,N) with ldb, or (N,K) when tb;
 * ldc = N. Splits the rows (or columns) of C over the kernel's intra-op threads when
 * the GEMM is large enough to pay; calls BLAS once otherwise. Never fails. */
VG_HIDDEN void vg__nn_gemm(vg__kctx *ctx, vg_dtype dt, bool ta, bool tb, int64_t M, int64_t N,
                           int64_t K, const void *A, int64_t lda, const void *B, int64_t ldb,
                           double beta, void *C);

/* One BLAS call (no threading), same conventions as vg__nn_gemm but any ldc. */
VG_HIDDEN void vg__nn_gemm1(vg_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                            const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                            void *C, int64_t ldc);

/* Caps the direct float32 convolution kernels at a level: 2 = AVX-512F (the default
 * cap: the best the CPU has), 1 = AVX2+FMA, 0 = none (im2col + GEMM only), so that
 * tests and benchmarks can exercise every path on one machine. Returns the level now
 * in use on this CPU. Process-wide; not meant to change while sessions run. */
VG_HIDDEN int vg__conv_set_direct(int max_level);

/* When float32 convolutions use oneDNN's primitives (backend oneDNN only): 0 never,
 * 1 for the shapes where they beat vigil's kernels (the default), 2 always (tests).
 * Returns whether they can run here (vigil built with oneDNN). Process-wide; not
 * meant to change while sessions run. */
VG_HIDDEN bool vg__conv_set_dnnl(int mode);

/* Turns the AVX-512 max pool and max-pool gradient (float32, windows that tile the
 * input, channels a multiple of 16) on (1, the default) or off (0: the generic loops),
 * for tests. Returns whether they run on this CPU. Process-wide. */
VG_HIDDEN int vg__pool_set_simd(int on);

/* Turns the AVX-512 float32 ApplyAdam loop (src/kernels/state/training_ops.c) on (1, the
 * default) or off (0: 4-wide SSE and scalar), for tests. Returns whether it runs on
 * this CPU. Process-wide. */
VG_HIDDEN int vg__adam_set_simd(int on);

/* When float32 5x5 stride-1 convolutions (forward, input and filter gradients) use
 * Winograd F(2x2,5x5) (src/kernels/nn/conv_winograd.c; AVX-512, channel counts a multiple
 * of 16): 0 never, 1 where it was measured faster (the default), 2 always where it
 * applies (tests). Returns whether it can run on this CPU. Process-wide; not meant to
 * change while sessions run. */
VG_HIDDEN int vg__conv_set_winograd(int mode);

/* Convolutions run with Winograd so far (process-wide), for tests. */
VG_HIDDEN long long vg__conv_winograd_runs(void);

/* Convolutions run by oneDNN so far (process-wide), for tests. */
VG_HIDDEN long long vg__conv_dnnl_runs(void);

/* A depthwise convolution's geometry (DepthwiseConv2dNative: input [n,h,w,c], filter
 * [kh,kw,c,m], output [n,oh,ow,c*m], strides, padding before). */
typedef struct vg__dw_geom {
    int64_t n, h, w, c, kh, kw, m, sh, sw, oh, ow, pt, pl;
} vg__dw_geom;

/* Runs a float32 depthwise convolution (mode 0 forward: out = y from x, f; 1 input
 * gradient: out = dx from f, dy; 2 filter gradient: out = df from x, dy) on oneDNN's
 * grouped convolution primitives where the backend is oneDNN and vg__conv_set_dnnl
 * allows it; *done false (nothing written) otherwise, when the caller runs its own
 * kernels. Fails only with RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__conv_depthwise_dnnl(vg__kctx *ctx, int mode, const vg__dw_geom *g, const float *x,
                                          const float *f, const float *dy, float *out, bool *done);

#endif
