/* ew_internal.h - small shared pieces for the element-wise op families added for the
 * TF1 model-building library (math_rounding_ops.c, math_special_ops.c,
 * nn_activation_ops.c): dtype checks, a generic unary kernel driver, a same-shape
 * binary driver (the *Grad helper ops), a broadcasting binary driver (element at a
 * time; used by FloorDiv/FloorMod/TruncateDiv/ClipByValue where speed matters little)
 * and the broadcast-gradient reduction of TF's math_grad.py built from public
 * builders. Implemented in ew_util.c. */
#ifndef VG_EW_INTERNAL_H
#define VG_EW_INTERNAL_H

#include "kernels/kernel.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"

/* Loops over n elements: x (and y) in, o out. */
typedef void (*vg__ew_un_fn)(const void *x, void *o, int64_t n, double attr);
typedef void (*vg__ew_bin_fn)(const void *x, const void *y, void *o, int64_t n, double attr);
/* One element of a broadcasting binary op. */
typedef void (*vg__ew_elem_fn)(const void *x, const void *y, void *o);

/* Per-dtype function tables (NULL = dtype not supported). */
typedef struct vg__ew_un_tbl { vg__ew_un_fn f32, f64, i32, i64; } vg__ew_un_tbl;
typedef struct vg__ew_bin_tbl { vg__ew_bin_fn f32, f64; } vg__ew_bin_tbl;
typedef struct vg__ew_elem_tbl { vg__ew_elem_fn f32, f64, i32, i64, u8; } vg__ew_elem_tbl;

/* Shape function of a unary op supporting the dtypes of tbl: output = input; sets "T".
 * INVALID_ARGUMENT naming the dtype when unsupported. */
VG_HIDDEN vg_code vg__ew_unary_shape(vg_op *op, const vg__ew_un_tbl *tbl, vg_status *st);
/* Kernel: o = fn(x) with the float attr `attr_name` (NULL: none; attr_default when the
 * op lacks it) passed to fn. */
VG_HIDDEN vg_code vg__ew_unary_kernel(vg__kctx *ctx, const vg__ew_un_tbl *tbl, const char *attr_name,
                                      double attr_default);
/* Shape of a same-shape binary float op (gradients, features) -> output like input 0. */
VG_HIDDEN vg_code vg__ew_binary_same_shape(vg_op *op, vg_status *st);
VG_HIDDEN vg_code vg__ew_binary_same_kernel(vg__kctx *ctx, const vg__ew_bin_tbl *tbl, const char *attr_name,
                                            double attr_default);
/* Broadcasting binary op: shape (NumPy broadcasting, dtypes of tbl) and kernel. When
 * int_div_check, an integer divisor containing 0 fails with INVALID_ARGUMENT
 * "Integer division by zero" as TF's safe_div functors. */
VG_HIDDEN vg_code vg__ew_bcast_shape(vg_op *op, const vg__ew_elem_tbl *tbl, vg_status *st);
VG_HIDDEN vg_code vg__ew_bcast_kernel(vg__kctx *ctx, const vg__ew_elem_tbl *tbl, bool int_div_check);

/* dx[0] = reshape(reduce_sum(gx, rx), shape(x)), dx[1] likewise (gx / gy may be {NULL}),
 * x = op input 0, y = op input 1, through Shape/BroadcastGradientArgs as TF. */
VG_HIDDEN void vg__ew_bcast_reduce(vg_graph *g, vg_op *op, vg_output gx, vg_output gy, vg_output *dx);
/* Scalar Const of x's dtype. */
VG_HIDDEN vg_output vg__ew_scalar_like(vg_graph *g, vg_output x, double v);
/* One-input / two-input op builders. */
VG_HIDDEN vg_output vg__ew_build1(vg_graph *g, const char *type, vg_output x, const char *name);
VG_HIDDEN vg_output vg__ew_build2(vg_graph *g, const char *type, vg_output x, vg_output y, const char *name);

/* Defines f32/f64 loops NAME_f32 / NAME_f64 of a unary float op; the expression
 * sees x (the element) and a (the attr, as the element type). */
#define VG__EW_UN_F(NAME, EXPR_F, EXPR_D)                                               \
    static void NAME##_f32(const void *x_, void *o_, int64_t n, double a_) {            \
        const float *restrict xs = x_;                                                  \
        float *restrict o = o_;                                                         \
        const float a = (float)a_;                                                      \
        (void)a;                                                                        \
        for (int64_t i = 0; i < n; i++) { float x = xs[i]; o[i] = (EXPR_F); }          \
    }                                                                                   \
    static void NAME##_f64(const void *x_, void *o_, int64_t n, double a) {             \
        const double *restrict xs = x_;                                                 \
        double *restrict o = o_;                                                        \
        (void)a;                                                                        \
        for (int64_t i = 0; i < n; i++) { double x = xs[i]; o[i] = (EXPR_D); }         \
    }
/* Same for a same-shape binary float op: g (input 0) and x (input 1). */
#define VG__EW_BIN_F(NAME, EXPR_F, EXPR_D)                                              \
    static void NAME##_f32(const void *g_, const void *x_, void *o_, int64_t n, double a_) { \
        const float *restrict gs = g_, *restrict xs = x_;                               \
        float *restrict o = o_;                                                         \
        const float a = (float)a_;                                                      \
        (void)a;                                                                        \
        for (int64_t i = 0; i < n; i++) { float g = gs[i], x = xs[i]; o[i] = (EXPR_F); } \
    }                                                                                   \
    static void NAME##_f64(const void *g_, const void *x_, void *o_, int64_t n, double a) { \
        const double *restrict gs = g_, *restrict xs = x_;                              \
        double *restrict o = o_;                                                        \
        (void)a;                                                                        \
        for (int64_t i = 0; i < n; i++) { double g = gs[i], x = xs[i]; o[i] = (EXPR_D); } \
    }
/* One element of a broadcasting op over type T: x, y in, EXPR out. */
#define VG__EW_ELEM(NAME, T, EXPR)                                                      \
    static void NAME(const void *x_, const void *y_, void *o_) {                        \
        T x = *(const T *)x_, y = *(const T *)y_;                                       \
        *(T *)o_ = (EXPR);                                                              \
    }

#endif
