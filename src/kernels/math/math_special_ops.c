/*
 * math_special_ops.c - transcendental element-wise ops of TF's math family: Sin, Cos,
 * Erf, Log1p, Expm1 (float32 and float64 kernels), with math_grad.py's gradients:
 *   Sin: grad * cos(x)          Cos: -grad * sin(x)
 *   Erf: grad * 2/sqrt(pi) * exp(-x^2)
 *   Log1p: grad * reciprocal(1 + x)     Expm1: grad * exp(x)
 */
#include "kernels/ew_internal.h"
#include <math.h>

VG__EW_UN_F(sin_op, sinf(x), sin(x))
VG__EW_UN_F(cos_op, cosf(x), cos(x))
VG__EW_UN_F(erf_op, erff(x), erf(x))
VG__EW_UN_F(log1p_op, log1pf(x), log1p(x))
VG__EW_UN_F(expm1_op, expm1f(x), expm1(x))

#define UNARY(name)                                                                               \
    static const vg__ew_un_tbl t_##name = {name##_op_f32, name##_op_f64, NULL, NULL};              \
    static vg_code shape_##name(vg_op *op, vg_status *st) { return vg__ew_unary_shape(op, &t_##name, st); } \
    static vg_code kernel_##name(vg__kctx *ctx) { return vg__ew_unary_kernel(ctx, &t_##name, NULL, 0); }
UNARY(sin)
UNARY(cos)
UNARY(erf)
UNARY(log1p)
UNARY(expm1)

static vg_code grad_sin(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, dy[0], vg_cos(g, vg_op_input(op, 0), "Cos"), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_cos(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, vg_neg(g, dy[0], "Neg"), vg_sin(g, vg_op_input(op, 0), "Sin"), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_erf(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0);
    vg_output two_over_root_pi = vg__ew_scalar_like(g, x, 1.1283791670955126) /* 2/sqrt(pi) */;
    vg_output e = vg_exp(g, vg_neg(g, vg_square(g, x, "Square"), "Neg"), "Exp");
    dx[0] = vg_mul(g, vg_mul(g, dy[0], two_over_root_pi, "mul"), e, "mul_1");
    return vg_graph_status(g, NULL);
}

static vg_code grad_log1p(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0);
    vg_output one = vg__ew_scalar_like(g, x, 1.0);
    dx[0] = vg_mul(g, dy[0], vg_reciprocal(g, vg_add(g, one, x, "add"), "Reciprocal"), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_expm1(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, dy[0], vg_exp(g, vg_op_input(op, 0), "Exp"), "mul");
    return vg_graph_status(g, NULL);
}

vg_output vg_sin(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Sin", x, name); }
vg_output vg_cos(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Cos", x, name); }
vg_output vg_erf(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Erf", x, name); }
vg_output vg_log1p(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Log1p", x, name); }
vg_output vg_expm1(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Expm1", x, name); }

const vg__op_def vg__ops_math_special[] = {
    {"Sin", 1, 1, 0, 0, shape_sin, kernel_sin, grad_sin},
    {"Cos", 1, 1, 0, 0, shape_cos, kernel_cos, grad_cos},
    {"Erf", 1, 1, 0, 0, shape_erf, kernel_erf, grad_erf},
    {"Log1p", 1, 1, 0, 0, shape_log1p, kernel_log1p, grad_log1p},
    {"Expm1", 1, 1, 0, 0, shape_expm1, kernel_expm1, grad_expm1},
    {0},
};
