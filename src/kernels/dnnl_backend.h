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

#endif
