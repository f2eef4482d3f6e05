/* math_internal.h - shared pieces of the math op family: math_ops.c (element-wise ops,
 * builders, the vg__ops_math table) and math_reduce.c (reductions, ArgMax/ArgMin). */
#ifndef VG_MATH_INTERNAL_H
#define VG_MATH_INTERNAL_H

#include "graph/registry.h"
#include "vigil/ops.h"

/* Kernel tables are indexed by a dtype slot (not by vg_dtype: its numbers are sparse). */
enum { VG__MS_F32, VG__MS_F64, VG__MS_I32, VG__MS_I64, VG__MS_U8, VG__MS_BOOL, VG__MS_N };

/* dtype -> slot; -1 for dtypes the math kernels never handle. */
VG_HIDDEN int vg__math_slot(vg_dtype dt);

/* Bit masks of dtypes (1u << dtype) for the dtype checks of shape functions. */
#define VG__M(dt) (1u << (dt))
#define VG__M_FLOAT (VG__M(VG_FLOAT) | VG__M(VG_DOUBLE))
#define VG__M_NUM (VG__M_FLOAT | VG__M(VG_INT32) | VG__M(VG_INT64))
#define VG__M_CMP (VG__M_NUM | VG__M(VG_UINT8))
#define VG__M_EQ (VG__M_CMP | VG__M(VG_BOOL))
#define VG__M_BOOL VG__M(VG_BOOL)
#define VG__M_INDEX (VG__M(VG_INT32) | VG__M(VG_INT64))

/* INVALID_ARGUMENT "<what> has dtype string, which is not supported (allowed: float, ...)"
 * unless dt is in mask. */
VG_HIDDEN vg_code vg__math_check_dtype(const char *what, vg_dtype dt, unsigned mask, vg_status *st);

/* Work (elements x rough cost per element) above which kernels split over the
 * intra-op pool. */
#define VG__MATH_PAR_MIN 32768

/* ---- math_reduce.c: entries of the vg__ops_math table ------------------- */
VG_HIDDEN vg_code vg__math_shape_reduce(vg_op *op, vg_status *st);
VG_HIDDEN vg_code vg__math_kernel_sum(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_kernel_mean(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_kernel_max(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_kernel_min(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_kernel_prod(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_kernel_all(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_kernel_any(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_grad_sum(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx);
VG_HIDDEN vg_code vg__math_grad_mean(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx);
VG_HIDDEN vg_code vg__math_grad_min_max(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx);
VG_HIDDEN vg_code vg__math_shape_argmax(vg_op *op, vg_status *st);
VG_HIDDEN vg_code vg__math_kernel_argmax(vg__kctx *ctx);
VG_HIDDEN vg_code vg__math_kernel_argmin(vg__kctx *ctx);

#endif
