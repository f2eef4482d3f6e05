/*
 * bf16.h - bfloat16 compute helpers of the kernel layer (bf16_dnnl.c): oneDNN's
 * bfloat16 matmul behind MatMul's VG_BFLOAT16 inputs and the MatMuls that the
 * mixed-precision rewrite (exec/amp.c) painted.
 */
#ifndef VG_BF16_H
#define VG_BF16_H

#include "kernels/kernel.h"
#include <stdbool.h>
#include <stdint.h>

/* True when the CPU has AMX-BF16 or AVX512-BF16 (oneDNN runs bfloat16 natively). */
VG_HIDDEN bool vg__bf16_cpu_native(void);

/* Row-major C (M x N, float32, ldc N) = op(A) op(B): A (M,K), or (K,M) when ta; B
 * (K,N), or (N,K) when tb; bfloat16 elements, float32 accumulation. oneDNN's primitive,
 * else float32 on converted copies (logged once). Never fails. */
VG_HIDDEN void vg__bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t *A,
                             const uint16_t *B, float *C);

/* MatMul's bfloat16 path: a, b VG_BFLOAT16 and c VG_BFLOAT16 (c rounded from the
 * float32 product), or a, b, c float32 (a painted MatMul: a and b rounded to bfloat16,
 * c the float32 product, rounded by the executor). c allocated (M x N). Fails with
 * RESOURCE_EXHAUSTED (status set). */
VG_HIDDEN vg_code vg__bf16_matmul(vg__kctx *ctx, const vg_tensor *a, const vg_tensor *b, bool ta, bool tb,
                                  int64_t M, int64_t N, int64_t K, vg_tensor *c);

#endif
