/*
 * dnnl_backend.h - oneDNN calls behind vigil's kernels, and the backend switch of
 * vigil/backend.h. Built without oneDNN (VIGIL_HAVE_DNNL undefined) the functions
 * exist and report that nothing was done.
 */
#ifndef VG_DNNL_BACKEND_H
#define VG_DNNL_BACKEND_H

#include "core/core.h"
#include "vigil/backend.h"
#include <stdbool.h>
#include <stdint.h>

/* True when float32 GEMMs should go to oneDNN (resolves the automatic choice at the
 * first call). Cheap: one relaxed atomic load after the first call. */
VG_HIDDEN bool vg__backend_use_dnnl(void);

/* Row-major C = op(A) op(B) + beta C through dnnl_sgemm on the calling thread only
 * (the OpenMP thread count of the calling thread is 1 for the call and restored
 * after). Returns false (C untouched) when oneDNN is not built in or refused the call;
 * the caller then uses BLAS. */
VG_HIDDEN bool vg__dnnl_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                              const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* Row-major C = op(A) op(B) + beta C (float32) by the path measured fastest for the
 * shape (dnnl_backend.c, "GEMM path choice"): a cached oneDNN matmul primitive, dnnl_sgemm,
 * or none. Runs on the calling thread only, like vg__dnnl_sgemm. Returns false (C
 * untouched) when the caller should use BLAS: oneDNN not built in, the backend is
 * OpenBLAS, the shape is one where OpenBLAS's own kernels measured faster, or oneDNN
 * refused the call. Thread-safe; primitives are created at the first use of a shape and
 * kept for the life of the process. */
VG_HIDDEN bool vg__dnnl_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                             const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* The path vg__dnnl_gemm takes for a shape (for tests and the benchmark). */
enum { VG__GEMM_BLAS, VG__GEMM_DNNL_SGEMM, VG__GEMM_DNNL_MATMUL };
VG_HIDDEN int vg__dnnl_gemm_path(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float beta);

/* C = op(A) op(B) (beta 0) through a cached oneDNN matmul primitive for this shape and
 * these leading dimensions, whatever vg__dnnl_gemm would choose. False (C untouched)
 * when oneDNN is not built in or has no primitive for it. */
VG_HIDDEN bool vg__dnnl_matmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                               const float *B, int64_t ldb, float *C, int64_t ldc);

/* ---- oneDNN convolutions (float32, input NHWC, filter HWIO as TF) ----
 * A plan is a cached oneDNN primitive for one mode and geometry (batch included):
 * created at the first use of a shape, kept for the life of the process, so steady-state
 * steps create nothing. Plans run one thread per call; the caller splits the batch over
 * its own threads (one plan per sub-batch size). */
enum { VG__DCONV_FWD, VG__DCONV_BWD_DATA, VG__DCONV_BWD_WEIGHTS };

typedef struct vg__dconv_geom {
    int64_t n, h, w, ci;  /* input */
    int64_t kh, kw, co;   /* filter */
    int64_t sh, sw;       /* strides */
    int64_t oh, ow;       /* output */
    int64_t pt, pl;       /* padding before (after follows from the sizes) */
    int relu;             /* FWD only: ReLU applied to the output (post-op) */
    int bias;             /* FWD: a bias is added; BWD_WEIGHTS: the bias gradient is written too */
    int64_t groups;       /* 0 or 1: a plain convolution; ci (co = ci * M): depthwise, the filter
                             [kh, kw, ci, M] as TF's DepthwiseConv2dNative takes it */
    int bf16;             /* bfloat16 operands, float32 results: FWD in and the weights, BWD_DATA in (dy)
                             and the weights, BWD_WEIGHTS in (x) and w (dy) are bfloat16; out, bias,
                             dbias and the HWIO filter (reordered to bfloat16 by the plan) float32 */
} vg__dconv_geom;

typedef struct vg__dconv_plan vg__dconv_plan;

/* The plan for mode and g, or NULL when oneDNN is not built in or has no primitive for
 * it (the caller then uses its own kernels). Thread-safe. */
VG_HIDDEN const vg__dconv_plan *vg__dconv_plan_get(int mode, const vg__dconv_geom *g);

/* Bytes of the plan's scratchpad (per concurrent call, including the slack that
 * vg__dconv_exec needs to align it) and of its weights in oneDNN's layout (0 when the
 * plan takes HWIO as is; for BWD_WEIGHTS the layout of the filter gradient it writes).
 * Both multiples of 64. */
VG_HIDDEN size_t vg__dconv_scratch_bytes(const vg__dconv_plan *p);
VG_HIDDEN size_t vg__dconv_weights_bytes(const vg__dconv_plan *p);

/* FWD and BWD_DATA: the HWIO filter into the plan's layout (dst: weights_bytes).
 * BWD_WEIGHTS: the gradient in the plan's layout (src) back to HWIO (dst). */
VG_HIDDEN bool vg__dconv_reorder_weights(const vg__dconv_plan *p, const float *src, float *dst);

/* Runs the plan on the calling thread:
 *   FWD:          out (n,oh,ow,co) = conv(in (n,h,w,ci), w) [+ bias (co)] [relu]
 *   BWD_DATA:     out (n,h,w,ci)   = conv_transpose(in = dy (n,oh,ow,co), w)
 *   BWD_WEIGHTS:  out (weights)    = gradient from in = x and w = dy; and dbias (co) when g->bias
 * w is in the plan's layout (see above) or HWIO when weights_bytes is 0; scratch has
 * scratch_bytes at any alignment (oneDNN's own alignment is applied inside, and nothing
 * past scratch + scratch_bytes is touched). False when oneDNN failed (out is then
 * undefined). */
VG_HIDDEN bool vg__dconv_exec(const vg__dconv_plan *p, const float *in, const float *w, const float *bias, float *out,
                              float *dbias, void *scratch);

#ifdef VIGIL_HAVE_DNNL
#include <dnnl.h>
/* The CPU engine of vigil's oneDNN primitives (GEMM, bfloat16 matmul, convolution),
 * created at the first call; NULL when oneDNN cannot make one. Thread-safe. */
VG_HIDDEN dnnl_engine_t vg__dnnl_engine(void);
/* Holds OpenMP to one thread (oneDNN then sizes its primitives for, and runs them on, the
 * calling thread only); returns the previous count for vg__dnnl_one_thread_end. */
VG_HIDDEN int vg__dnnl_one_thread_begin(void);
VG_HIDDEN void vg__dnnl_one_thread_end(int old);
/* Runs primitive prim with args[0..nargs) on a new stream of eng, on one OpenMP thread;
 * true when it ran. */
VG_HIDDEN bool vg__dnnl_run(dnnl_engine_t eng, dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args);
/* A oneDNN matmul primitive on eng with a user scratchpad: C [M, N] (dtype cdt, row
 * stride ldc) = op(A) op(B), A [M, K] (stored transposed when ta) with row stride lda and
 * B [K, N] (transposed when tb) with row stride ldb, both of dtype abdt. The memory
 * descriptors of A, B, C and the scratchpad into a_md, b_md, c_md, sp_md, the scratchpad's
 * size into *sp_bytes; logs "<what> MxKxN: oneDNN <implementation>" at DEBUG when what is
 * not NULL. False (nothing to free) when oneDNN has none. */
VG_HIDDEN bool vg__dnnl_matmul_build(dnnl_engine_t eng, bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda,
                                     int64_t ldb, int64_t ldc, dnnl_data_type_t abdt, dnnl_data_type_t cdt,
                                     dnnl_memory_desc_t *a_md, dnnl_memory_desc_t *b_md, dnnl_memory_desc_t *c_md,
                                     dnnl_memory_desc_t *sp_md, size_t *sp_bytes, dnnl_primitive_t *prim,
                                     const char *what);
#endif

#endif
