/* math_internal.h - pieces shared by the two math op families: math_cwise_ops.c
 * (element-wise ops; defines these helpers; table vg__ops_math_cwise) and
 * math_reduce_ops.c (reductions, ArgMax/ArgMin; table vg__ops_math_reduce). */
#ifndef VG_MATH_INTERNAL_H
#define VG_MATH_INTERNAL_H

#include "kernels/kernel.h"
#include "vigil/ops.h"

/* Kernel tables are indexed by a dtype slot (not by vg_dtype: its numbers are sparse). */
enum { VG__MS_F32, VG__MS_F64, VG__MS_I32, VG__MS_I64, VG__MS_U8, VG__MS_BOOL, VG__MS_C64, VG__MS_C128, VG__MS_N };

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
#define VG__M_COMPLEX (VG__M(VG_COMPLEX64) | VG__M(VG_COMPLEX128))

/* INVALID_ARGUMENT "<what> has dtype string, which is not supported (allowed: float, ...)"
 * unless dt is in mask. */
VG_HIDDEN vg_code vg__math_check_dtype(const char *what, vg_dtype dt, unsigned mask, vg_status *st);

/* Work (elements x rough cost per element) above which kernels split over the
 * intra-op pool. */
#define VG__MATH_PAR_MIN 32768

#endif
