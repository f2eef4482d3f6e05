/*
 * nn_activation_ops.c - TF's element-wise activations beyond Relu/Sigmoid/Tanh:
 * Softplus, Softsign, Elu, Selu, Relu6, LeakyRelu (attr alpha, default 0.2) and their
 * gradient ops SoftplusGrad, SoftsignGrad, EluGrad, SeluGrad, Relu6Grad, LeakyReluGrad.
 * Kernels as TF 1.15's softplus_op.h, softsign_op.h, elu_op.h, selu_op.h, relu_op.h;
 * gradients as nn_grad.py (Elu/Selu/Relu6 from the op's output, Softplus/Softsign/
 * LeakyRelu from its input). The *Grad ops have no gradient of their own here.
 */
#include "kernels/ew_internal.h"
#include <float.h>
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops that need no epilogue ("very cheap" model): the
 * element loops here need the dynamic cost model to use SIMD (Relu6 and its gradient
 * run after every batch norm of a MobileNet; issue 30). */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_SCALE_ALPHA 1.7580993408473768599402175208123

/* Softplus: x above -threshold -> x; below threshold -> exp(x); else log1p-free
 * log(exp(x) + 1), threshold = log(epsilon) + 2 (as TF). */
static inline float softplus_f(float x) {
    const float th = logf(FLT_EPSILON) + 2.0f;
    if (x > -th) return x;
    float e = expf(x);
    return x < th ? e : logf(e + 1.0f);
}
static inline double softplus_d(double x) {
    const double th = log(DBL_EPSILON) + 2.0;
    if (x > -th) return x;
    double e = exp(x);
    return x < th ? e : log(e + 1.0);
}

VG__EW_UN_F(softplus_op, softplus_f(x), softplus_d(x))
VG__EW_UN_F(softsign_op, x / (fabsf(x) + 1.0f), x / (fabs(x) + 1.0))
VG__EW_UN_F(elu_op, x < 0.0f ? expf(x) - 1.0f : x, x < 0.0 ? exp(x) - 1.0 : x)
VG__EW_UN_F(selu_op, x < 0.0f ? (float)SELU_SCALE_ALPHA * (expf(x) - 1.0f) : (float)SELU_SCALE * x,
            x < 0.0 ? SELU_SCALE_ALPHA * (exp(x) - 1.0) : SELU_SCALE * x)
/* Relu6: selects (which vectorize) instead of fminf/fmaxf (which do not, and turn NaN
 * into 0); NaN passes through, as TF's cwiseMax(0).cwiseMin(6) */
static inline float relu6_f(float x) {
    float t = x > 6.0f ? 6.0f : x; /* both comparisons always made: no trap to preserve */
    return x < 0.0f ? 0.0f : t;
}
static inline double relu6_d(double x) {
    double t = x > 6.0 ? 6.0 : x;
    return x < 0.0 ? 0.0 : t;
}
VG__EW_UN_F(relu6_op, relu6_f(x), relu6_d(x))
VG__EW_UN_F(leaky_op, x > 0.0f ? x : x * a, x > 0.0 ? x : x * a)

/* Gradient ops: g = incoming gradient (input 0), x = features or outputs (input 1). */
VG__EW_BIN_F(softplus_g, g / (expf(-x) + 1.0f), g / (exp(-x) + 1.0))
VG__EW_BIN_F(softsign_g, g / ((fabsf(x) + 1.0f) * (fabsf(x) + 1.0f)), g / ((fabs(x) + 1.0) * (fabs(x) + 1.0)))
VG__EW_BIN_F(elu_g, x < 0.0f ? (x + 1.0f) * g : g, x < 0.0 ? (x + 1.0) * g : g)
VG__EW_BIN_F(selu_g, x < 0.0f ? g * (x + (float)SELU_SCALE_ALPHA) : g * (float)SELU_SCALE,
             x < 0.0 ? g * (x + SELU_SCALE_ALPHA) : g * SELU_SCALE)
VG__EW_BIN_F(relu6_g, ((x > 0.0f) & (x < 6.0f)) ? g : 0.0f, ((x > 0.0) & (x < 6.0)) ? g : 0.0)
VG__EW_BIN_F(leaky_g, x > 0.0f ? g : g * a, x > 0.0 ? g : g * a)

#define ACT(name, attr, def)                                                                       \
    static const vg__ew_un_tbl t_##name = {name##_op_f32, name##_op_f64, NULL, NULL};               \
    static const vg__ew_bin_tbl tg_##name = {name##_g_f32, name##_g_f64};                           \
    static vg_code shape_##name(vg_op *op, vg_status *st) { return vg__ew_unary_shape(op, &t_##name, st); } \
    static vg_code kernel_##name(vg__kctx *ctx) { return vg__ew_unary_kernel(ctx, &t_##name, attr, def); } \
    static vg_code kernel_##name##_grad(vg__kctx *ctx) {                                           \
        return vg__ew_binary_same_kernel(ctx, &tg_##name, attr, def);                              \
    }
ACT(softplus, NULL, 0)
ACT(softsign, NULL, 0)
ACT(elu, NULL, 0)
ACT(selu, NULL, 0)
ACT(relu6, NULL, 0)
/* LeakyRelu's kernels are named leaky_op / leaky_g */
static const vg__ew_un_tbl t_leaky = {leaky_op_f32, leaky_op_f64, NULL, NULL};
static const vg__ew_bin_tbl tg_leaky = {leaky_g_f32, leaky_g_f64};
static vg_code shape_leaky(vg_op *op, vg_status *st) { return vg__ew_unary_shape(op, &t_leaky, st); }
static vg_code kernel_leaky(vg__kctx *ctx) { return vg__ew_unary_kernel(ctx, &t_leaky, "alpha", 0.2); }
static vg_code kernel_leaky_grad(vg__kctx *ctx) { return vg__ew_binary_same_kernel(ctx, &tg_leaky, "alpha", 0.2); }

static vg_code shape_grad_op(vg_op *op, vg_status *st) { return vg__ew_binary_same_shape(op, st); }

/* ---- gradients (nn_grad.py) ---------------------------------------------------- */

static vg_output grad_op(vg_graph *g, const char *type, vg_output dy, vg_output x, const vg_op *fwd) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, type, NULL, (vg_output[]){dy, x}, 2);
    if (!b) return vg_out(NULL, 0);
    float alpha;
    if (fwd && vg_op_attr_float(fwd, "alpha", &alpha)) vg_op_builder_set_attr_float(b, "alpha", alpha);
    return vg_out(vg_op_builder_finish(b), 0);
}

#define GRAD_FROM(name, type, from_output)                                                        \
    static vg_code grad_##name(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {      \
        dx[0] = grad_op(g, type, dy[0], from_output ? vg_out(op, 0) : vg_op_input(op, 0), op);     \
        return vg_graph_status(g, NULL);                                                          \
    }
GRAD_FROM(softplus, "SoftplusGrad", false)
GRAD_FROM(softsign, "SoftsignGrad", false)
GRAD_FROM(elu, "EluGrad", true)
GRAD_FROM(selu, "SeluGrad", true)
GRAD_FROM(relu6, "Relu6Grad", true)
GRAD_FROM(leaky, "LeakyReluGrad", false)

/* ---- builders -------------------------------------------------------------------- */

vg_output vg_softplus(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Softplus", x, name); }
vg_output vg_softsign(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Softsign", x, name); }
vg_output vg_elu(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Elu", x, name); }
vg_output vg_selu(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Selu", x, name); }
vg_output vg_relu6(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Relu6", x, name); }
vg_output vg_leaky_relu(vg_graph *g, vg_output x, float alpha, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "LeakyRelu", name, NULL, (vg_output[]){x}, 1);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_float(b, "alpha", alpha);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_nn_activation[] = {
    {"Softplus", 1, 1, 0, 0, shape_softplus, kernel_softplus, grad_softplus},
    {"Softsign", 1, 1, 0, 0, shape_softsign, kernel_softsign, grad_softsign},
    {"Elu", 1, 1, 0, 0, shape_elu, kernel_elu, grad_elu},
    {"Selu", 1, 1, 0, 0, shape_selu, kernel_selu, grad_selu},
    {"Relu6", 1, 1, 0, 0, shape_relu6, kernel_relu6, grad_relu6},
    {"LeakyRelu", 1, 1, 0, 0, shape_leaky, kernel_leaky, grad_leaky},
    {"SoftplusGrad", 2, 2, 0, 0, shape_grad_op, kernel_softplus_grad, NULL},
    {"SoftsignGrad", 2, 2, 0, 0, shape_grad_op, kernel_softsign_grad, NULL},
    {"EluGrad", 2, 2, 0, 0, shape_grad_op, kernel_elu_grad, NULL},
    {"SeluGrad", 2, 2, 0, 0, shape_grad_op, kernel_selu_grad, NULL},
    {"Relu6Grad", 2, 2, 0, 0, shape_grad_op, kernel_relu6_grad, NULL},
    {"LeakyReluGrad", 2, 2, 0, 0, shape_grad_op, kernel_leaky_grad, NULL},
    {0},
};
