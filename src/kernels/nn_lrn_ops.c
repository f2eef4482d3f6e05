/*
 * nn_lrn_ops.c - LRN (tf.nn.local_response_normalization) and LRNGrad as TF 1.15's
 * lrn_op.cc, float32/float64, NHWC (the window runs over the last dim):
 *     sqr_sum[..., d] = sum(x[..., d - r : d + r + 1] ^ 2)
 *     y = x / (bias + alpha * sqr_sum) ^ beta
 * attrs depth_radius (5), bias (1), alpha (1), beta (0.5). Gradient as nn_grad.py
 * _LRNGrad: LRNGrad(dy, x, y) with the same attrs, whose kernel is TF's CPU loop.
 */
#include "kernels/ew_internal.h"
#include <math.h>

typedef struct lrn_attrs {
    int64_t r;
    double bias, alpha, beta;
} lrn_attrs;

static void get_attrs(const vg_op *op, lrn_attrs *a) {
    float f;
    a->r = 5;
    vg_op_attr_int(op, "depth_radius", &a->r);
    a->bias = vg_op_attr_float(op, "bias", &f) ? f : 1.0;
    a->alpha = vg_op_attr_float(op, "alpha", &f) ? f : 1.0;
    a->beta = vg_op_attr_float(op, "beta", &f) ? f : 0.5;
}

static vg_code check4(vg_op *op, int i, vg_dtype dt, vg_status *st) {
    vg_shape s = vg__op_input_shape(op, i);
    if (s.ndims >= 0 && s.ndims != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d must be 4-dimensional, got rank %d", vg_op_type(op), i,
                             s.ndims);
    if (vg__op_input_dtype(op, i) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d has dtype %s, expected %s", vg_op_type(op), i,
                             vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
    return VG_OK;
}

static vg_code lrn_shape(vg_op *op, int n, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input has dtype %s, which is not supported (float double)",
                             vg_op_type(op), vg_dtype_name(dt));
    for (int i = 0; i < n; i++) {
        vg_code c = check4(op, i, dt, st);
        if (c != VG_OK) return c;
    }
    int64_t r = 5;
    if (vg_op_attr_int(op, "depth_radius", &r) && (r < 0 || r > INT32_MAX))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: depth_radius = %lld out of range", vg_op_type(op), (long long)r);
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_int(op, "depth_radius", 5);
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, dt, vg__op_input_shape(op, n == 3 ? 1 : 0));
    return VG_OK;
}
static vg_code shape_lrn(vg_op *op, vg_status *st) { return lrn_shape(op, 1, st); }
static vg_code shape_lrn_grad(vg_op *op, vg_status *st) { return lrn_shape(op, 3, st); }

static double at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_FLOAT ? ((const float *)vg_tensor_data(t))[i] : ((const double *)vg_tensor_data(t))[i];
}
static void put(vg_tensor *t, int64_t i, double v) {
    if (vg_tensor_dtype(t) == VG_FLOAT) ((float *)vg_tensor_data(t))[i] = (float)v;
    else ((double *)vg_tensor_data(t))[i] = v;
}

static vg_code kernel_lrn(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    if (vg_tensor_ndims(x) != 4) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be 4-dimensional");
    lrn_attrs a;
    get_attrs(vg__kctx_op(ctx), &a);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), 4, &o);
    if (c != VG_OK) return c;
    int64_t depth = vg_tensor_dim(x, 3), rows = depth ? vg_tensor_num_elements(x) / depth : 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t d = 0; d < depth; d++) {
            int64_t lo = d - a.r < 0 ? 0 : d - a.r, hi = d + a.r + 1 > depth ? depth : d + a.r + 1;
            double s = 0;
            for (int64_t k = lo; k < hi; k++) {
                double v = at(x, i * depth + k);
                s += v * v;
            }
            put(o, i * depth + d, at(x, i * depth + d) / pow(a.bias + a.alpha * s, a.beta));
        }
    return VG_OK;
}

/* LRNGrad(input_grads, input_image, output_image) */
static vg_code kernel_lrn_grad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *gr = vg__kctx_input(ctx, 0), *in = vg__kctx_input(ctx, 1), *out = vg__kctx_input(ctx, 2);
    int nd = vg_tensor_ndims(in);
    if (nd != 4 || vg_tensor_ndims(gr) != 4 || vg_tensor_ndims(out) != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "inputs must be 4-dimensional");
    if (memcmp(vg_tensor_dims(gr), vg_tensor_dims(in), sizeof(int64_t) * 4) ||
        memcmp(vg_tensor_dims(out), vg_tensor_dims(in), sizeof(int64_t) * 4))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input_grads, input_image and output_image must have the same shape");
    lrn_attrs a;
    get_attrs(vg__kctx_op(ctx), &a);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(in), vg_tensor_dims(in), 4, &o);
    if (c != VG_OK) return c;
    memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
    int64_t depth = vg_tensor_dim(in, 3), rows = depth ? vg_tensor_num_elements(in) / depth : 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < depth; j++) {
            int64_t lo = j - a.r < 0 ? 0 : j - a.r, hi = j + a.r + 1 > depth ? depth : j + a.r + 1;
            double norm = 0;
            for (int64_t k = lo; k < hi; k++) {
                double v = at(in, i * depth + k);
                norm += v * v;
            }
            norm = a.alpha * norm + a.bias;
            double yj = at(out, i * depth + j), gj = at(gr, i * depth + j);
            for (int64_t k = lo; k < hi; k++) {
                double dyi = -2.0 * a.alpha * a.beta * at(in, i * depth + k) * yj / norm;
                if (k == j) dyi += pow(norm, -a.beta);
                put(o, i * depth + k, at(o, i * depth + k) + dyi * gj);
            }
        }
    return VG_OK;
}

static void copy_attrs(vg_op_builder *b, const vg_op *op) {
    lrn_attrs a;
    get_attrs(op, &a);
    vg_op_builder_set_attr_int(b, "depth_radius", a.r);
    vg_op_builder_set_attr_float(b, "bias", (float)a.bias);
    vg_op_builder_set_attr_float(b, "alpha", (float)a.alpha);
    vg_op_builder_set_attr_float(b, "beta", (float)a.beta);
}

static vg_code grad_lrn(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_op_builder *b = vg_op_builder_new(g, "LRNGrad", "LRNGrad");
    if (!b) return vg_graph_status(g, NULL);
    vg_op_builder_add_input(b, dy[0]);
    vg_op_builder_add_input(b, vg_op_input(op, 0));
    vg_op_builder_add_input(b, vg_out(op, 0));
    copy_attrs(b, op);
    dx[0] = vg_out(vg_op_builder_finish(b), 0);
    return vg_graph_status(g, NULL);
}

vg_output vg_lrn(vg_graph *g, vg_output x, int depth_radius, float bias, float alpha, float beta, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "LRN", name);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_add_input(b, x);
    vg_op_builder_set_attr_int(b, "depth_radius", depth_radius);
    vg_op_builder_set_attr_float(b, "bias", bias);
    vg_op_builder_set_attr_float(b, "alpha", alpha);
    vg_op_builder_set_attr_float(b, "beta", beta);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_nn_lrn[] = {
    {"LRN", 1, 1, 0, 0, shape_lrn, kernel_lrn, grad_lrn},
    {"LRNGrad", 3, 3, 0, 0, shape_lrn_grad, kernel_lrn_grad, NULL},
    {0},
};
