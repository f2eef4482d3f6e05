/*
 * complex_ops.c - the complex-number ops of TF 1.15's math_ops.cc: Complex(real, imag),
 * Real, Imag, Conj, Angle and ComplexAbs, with their shape functions, kernels,
 * gradients (math_grad.py's _ComplexGrad, _RealGrad, _ImagGrad, _ConjGrad, _AngleGrad,
 * _ComplexAbsGrad) and the builders of vigil/ops_ext.h, and the op table
 * vg__ops_complex.
 *
 * complex64 / complex128 tensors hold interleaved (re, im) pairs of float / double:
 * the layout of C's float _Complex / double _Complex and of std::complex.
 */
#include "kernels/math/math_internal.h"
#include "vigil/ops_ext.h"

#include <math.h>
#include <string.h>

static bool is_complex(vg_dtype dt) { return dt == VG_COMPLEX64 || dt == VG_COMPLEX128; }
static vg_dtype real_of(vg_dtype dt) { return dt == VG_COMPLEX128 ? VG_DOUBLE : VG_FLOAT; }
static vg_dtype complex_of(vg_dtype dt) { return dt == VG_DOUBLE ? VG_COMPLEX128 : VG_COMPLEX64; }

/* Checks attr `name` agrees with dt when set, then defaults it to dt. */
static vg_code type_attr(vg_op *op, const char *name, vg_dtype dt, vg_status *st) {
    vg_dtype t;
    if (vg_op_attr_type_(op, name, &t) && t != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: attr '%s' is %s but %s is required", vg_op_type(op), name,
                             vg_dtype_name(t), vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, name, dt);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Complex(real, imag): T in {float, double}, Tout the matching complex type,
 * NumPy broadcasting. */

static vg_code shape_complex(vg_op *op, vg_status *st) {
    vg_dtype a = vg__op_input_dtype(op, 0), b = vg__op_input_dtype(op, 1);
    vg_code c = vg__math_check_dtype("input 'real'", a, VG__M_FLOAT, st);
    if (c != VG_OK) return c;
    if (b != a)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'imag' of 'Complex' Op has type %s that does not match type %s of argument 'real'.",
                             vg_dtype_name(b), vg_dtype_name(a));
    if ((c = type_attr(op, "T", a, st)) != VG_OK || (c = type_attr(op, "Tout", complex_of(a), st)) != VG_OK) return c;
    vg_shape sa = vg__op_input_shape(op, 0), sb = vg__op_input_shape(op, 1), so;
    if ((c = vg__shape_broadcast(&sa, &sb, &so, st)) != VG_OK) return c;
    return vg__op_set_single_output(op, complex_of(a), so);
}

static vg_code kernel_complex(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *a = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1);
    int na = vg_tensor_ndims(a), nb = vg_tensor_ndims(b), r = na > nb ? na : nb;
    const int64_t *da = vg_tensor_dims(a), *db = vg_tensor_dims(b);
    int64_t od[VG_MAX_DIMS], sa[VG_MAX_DIMS], sb[VG_MAX_DIMS];
    int64_t stra = 1, strb = 1;
    for (int i = r - 1; i >= 0; i--) {
        int64_t xa = i - (r - na) >= 0 ? da[i - (r - na)] : 1, xb = i - (r - nb) >= 0 ? db[i - (r - nb)] : 1;
        if (xa != xb && xa != 1 && xb != 1) {
            vg_shape s1 = vg_tensor_shape(a), s2 = vg_tensor_shape(b);
            char t1[128], t2[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                                 vg_shape_str(&s1, t1, sizeof t1), vg_shape_str(&s2, t2, sizeof t2));
        }
        od[i] = xa == 1 ? xb : xa;
        sa[i] = xa == 1 ? 0 : stra;
        sb[i] = xb == 1 ? 0 : strb;
        stra *= xa;
        strb *= xb;
    }
    vg_dtype dt = vg_tensor_dtype(a);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, complex_of(dt), od, r, &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(o), idx[VG_MAX_DIMS] = {0}, ia = 0, ib = 0;
    for (int64_t k = 0; k < n; k++) {
        if (dt == VG_DOUBLE) {
            double *d = (double *)vg_tensor_data(o) + 2 * k;
            d[0] = ((const double *)vg_tensor_data(a))[ia];
            d[1] = ((const double *)vg_tensor_data(b))[ib];
        } else {
            float *d = (float *)vg_tensor_data(o) + 2 * k;
            d[0] = ((const float *)vg_tensor_data(a))[ia];
            d[1] = ((const float *)vg_tensor_data(b))[ib];
        }
        for (int i = r - 1; i >= 0; i--) { /* odometer */
            ia += sa[i];
            ib += sb[i];
            if (++idx[i] < od[i]) break;
            ia -= sa[i] * od[i];
            ib -= sb[i] * od[i];
            idx[i] = 0;
        }
    }
    return VG_OK;
}

/* _ComplexGrad: (reshape(sum(real(grad), rx), sx), reshape(sum(imag(grad), ry), sy)). */
static vg_code grad_complex(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), y = vg_op_input(op, 1);
    vg_output sx = vg_shape_op(g, x, VG_INT32, "Shape"), sy = vg_shape_op(g, y, VG_INT32, "Shape_1");
    vg_op *bga = vg_broadcast_gradient_args(g, sx, sy, "BroadcastGradientArgs");
    dx[0] = vg_reshape(g, vg_sum(g, vg_real(g, dy[0], "Real"), vg_out(bga, 0), false, "Sum"), sx, "Reshape");
    dx[1] = vg_reshape(g, vg_sum(g, vg_imag(g, dy[0], "Imag"), vg_out(bga, 1), false, "Sum_1"), sy, "Reshape_1");
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Real, Imag, Angle, ComplexAbs (complex -> real, Tout) and Conj (complex -> complex). */

enum { K_REAL, K_IMAG, K_ANGLE, K_ABS, K_CONJ };

static vg_code unary_shape(vg_op *op, int kind, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg_code c = vg__math_check_dtype("input", dt, VG__M_COMPLEX, st);
    if (c == VG_OK) c = type_attr(op, "T", dt, st);
    if (c == VG_OK && kind != K_CONJ) c = type_attr(op, "Tout", real_of(dt), st);
    if (c != VG_OK) return c;
    return vg__op_set_single_output(op, kind == K_CONJ ? dt : real_of(dt), vg__op_input_shape(op, 0));
}

#define CLOOP(T, R, ATAN2, HYPOT)                                                     \
    do {                                                                                      \
        const T *x = vg_tensor_data(in);                                                      \
        void *ov = vg_tensor_data(o);                                                         \
        for (int64_t i = 0; i < n; i++) {                                                     \
            R re = x[2 * i], im = x[2 * i + 1];                                               \
            switch (kind) {                                                                   \
            case K_REAL: ((R *)ov)[i] = re; break;                                            \
            case K_IMAG: ((R *)ov)[i] = im; break;                                            \
            case K_ANGLE: ((R *)ov)[i] = ATAN2(im, re); break;                                \
            case K_ABS: ((R *)ov)[i] = HYPOT(re, im); break;                                  \
            default: ((R *)ov)[2 * i] = re, ((R *)ov)[2 * i + 1] = -im; break;                \
            }                                                                                 \
        }                                                                                     \
    } while (0)

static vg_code unary_kernel(vg__kctx *ctx, int kind) {
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    vg_dtype dt = vg_tensor_dtype(in);
    if (!is_complex(dt)) return vg__math_check_dtype("input", dt, VG__M_COMPLEX, vg__kctx_status(ctx));
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, kind == K_CONJ ? dt : real_of(dt), vg_tensor_dims(in),
                                      vg_tensor_ndims(in), &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(in);
    if (dt == VG_COMPLEX64) CLOOP(float, float, atan2f, hypotf);
    else CLOOP(double, double, atan2, hypot);
    return VG_OK;
}

#define UNARY(name, kind)                                                                       \
    static vg_code shape_##name(vg_op *op, vg_status *st) { return unary_shape(op, kind, st); } \
    static vg_code kernel_##name(vg__kctx *ctx) { return unary_kernel(ctx, kind); }
UNARY(real, K_REAL)
UNARY(imag, K_IMAG)
UNARY(angle, K_ANGLE)
UNARY(complex_abs, K_ABS)
UNARY(conj, K_CONJ)

static vg_output zero_like_scalar(vg_graph *g, vg_output x) {
    return vg_const_fill(g, vg_output_dtype(x), NULL, 0, 0, "Const");
}

/* _RealGrad: complex(grad, 0). */
static vg_code grad_real(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)op;
    dx[0] = vg_complex(g, dy[0], zero_like_scalar(g, dy[0]), "Complex");
    return vg_graph_status(g, NULL);
}

/* _ImagGrad: complex(0, grad). */
static vg_code grad_imag(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)op;
    dx[0] = vg_complex(g, zero_like_scalar(g, dy[0]), dy[0], "Complex");
    return vg_graph_status(g, NULL);
}

/* _ConjGrad: conj(grad). */
static vg_code grad_conj(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)op;
    dx[0] = vg_conj(g, dy[0], "Conj");
    return vg_graph_status(g, NULL);
}

/* _AngleGrad: -complex(grad, 0) * reciprocal(complex(imag(x), real(x))). */
static vg_code grad_angle(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0);
    vg_output z = vg_reciprocal(g, vg_complex(g, vg_imag(g, x, "Imag"), vg_real(g, x, "Real"), "Complex"),
                                "Reciprocal");
    vg_output cg = vg_complex(g, dy[0], zero_like_scalar(g, dy[0]), "Complex_1");
    dx[0] = vg_mul(g, vg_neg(g, cg, "Neg"), z, "mul");
    return vg_graph_status(g, NULL);
}

/* _ComplexAbsGrad: div_no_nan(complex(grad, 0) * x, complex(y, 0)), computed as
 * complex(div_no_nan(grad, y), 0) * x (y real: the same quotient; 0 where y == 0). */
static vg_code grad_complex_abs(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), y = vg_out(op, 0);
    vg_output zero = vg_zeros_like(g, y, "zeros_like");
    vg_output is0 = vg_equal(g, y, zero, "Equal");
    vg_output safe = vg_select(g, is0, vg_ones_like(g, y, "ones_like"), y, "Select");
    vg_output q = vg_select(g, is0, zero, vg_div(g, dy[0], safe, "truediv"), "Select_1");
    dx[0] = vg_mul(g, vg_complex(g, q, zero_like_scalar(g, q), "Complex"), x, "mul");
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Builders */

vg_output vg_complex(vg_graph *g, vg_output real, vg_output imag, const char *name) {
    return vg__build_simple(g, "Complex", name, NULL, (vg_output[]){real, imag}, 2);
}

static vg_output build1(vg_graph *g, const char *type, vg_output x, const char *name) {
    return vg__build_simple(g, type, name, NULL, (vg_output[]){x}, 1);
}

/* math_ops.real / imag / conj: on a real (float or integer) tensor real and conj return
 * x itself and imag zeros_like(x), as TF's Python wrappers. */
static bool real_numeric(vg_output x) {
    vg_dtype dt = vg_output_dtype(x);
    return x.op && (unsigned)dt < 32 && ((VG__M_NUM | VG__M(VG_UINT8) | VG__M(VG_HALF)) & VG__M(dt));
}
vg_output vg_real(vg_graph *g, vg_output x, const char *name) {
    return real_numeric(x) ? x : build1(g, "Real", x, name);
}
vg_output vg_imag(vg_graph *g, vg_output x, const char *name) {
    return real_numeric(x) ? vg_zeros_like(g, x, name) : build1(g, "Imag", x, name);
}
vg_output vg_conj(vg_graph *g, vg_output x, const char *name) {
    return real_numeric(x) ? x : build1(g, "Conj", x, name);
}
vg_output vg_angle(vg_graph *g, vg_output x, const char *name) { return build1(g, "Angle", x, name); }
vg_output vg_complex_abs(vg_graph *g, vg_output x, const char *name) { return build1(g, "ComplexAbs", x, name); }

/* ------------------------------------------------------------------------ */
/* The table */

const vg__op_def vg__ops_complex[] = {
    {"Complex", 2, 2, 0, 0, shape_complex, kernel_complex, grad_complex},
    {"Real", 1, 1, 0, 0, shape_real, kernel_real, grad_real},
    {"Imag", 1, 1, 0, 0, shape_imag, kernel_imag, grad_imag},
    {"Conj", 1, 1, 0, 0, shape_conj, kernel_conj, grad_conj},
    {"Angle", 1, 1, 0, 0, shape_angle, kernel_angle, grad_angle},
    {"ComplexAbs", 1, 1, 0, 0, shape_complex_abs, kernel_complex_abs, grad_complex_abs},
    {0},
};
