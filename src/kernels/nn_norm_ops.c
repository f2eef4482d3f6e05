/*
 * nn_norm_ops.c - FusedBatchNormV3 and FusedBatchNormGradV3 as TF 1.15's
 * fused_batch_norm_op.cc computes them on the CPU (NHWC; T float or double, U = T):
 *
 *   inputs x [N,H,W,C], scale [C], offset [C], mean, variance ([C], or empty when
 *   training); outputs y, batch_mean, batch_variance, reserve_space_1..3.
 *   training:  mean/var over N,H,W (var biased); y = scale * (x - mean) / sqrt(var + eps)
 *              + offset; batch_variance = var * m / (m - 1) (Bessel, m = N*H*W > 1);
 *              reserve_space_1/2 = mean and the biased variance (what the gradient uses).
 *   inference: the given mean and variance are used and passed through.
 *   attrs epsilon (0.0001), data_format ("NHWC"; "NCHW" is UNIMPLEMENTED), is_training
 *   (true).
 *
 * Gradient (nn_grad.py _FusedBatchNormV3Grad): FusedBatchNormGradV3(dy, x, scale,
 * reserve_space_1, reserve_space_2, reserve_space_3) when training, with the given mean
 * and variance in place of the reserve spaces when not; gradients for x, scale and
 * offset, none for mean and variance. The grad op computes, per channel c with
 * r = rsqrt(var + eps), xhat = (x - mean) * r:
 *   training:  dx = scale * r * (dy - mean(dy) - xhat * mean(dy * xhat))
 *   inference: dx = dy * scale * r
 *   dscale = sum(dy * xhat), doffset = sum(dy).
 */
#include "kernels/ew_internal.h"
#include "vigil/nn_ext.h"
#include <math.h>

typedef struct bn_attrs {
    double eps;
    bool training;
} bn_attrs;

static vg_code get_attrs(const vg_op *op, bn_attrs *a, vg_status *st) {
    float f;
    bool b;
    const char *df;
    size_t dl;
    a->eps = vg_op_attr_float(op, "epsilon", &f) ? f : 0.0001;
    a->training = vg_op_attr_bool(op, "is_training", &b) ? b : true;
    if (vg_op_attr_string(op, "data_format", &df, &dl) && !(dl == 4 && memcmp(df, "NHWC", 4) == 0))
        return vg_status_set(st, VG_UNIMPLEMENTED, "%s: only data_format NHWC is supported on the CPU, got %.*s",
                             vg_op_type(op), (int)dl, df);
    return VG_OK;
}

static vg_code check_vec(vg_op *op, int i, const char *what, int64_t c, bool may_be_empty, vg_status *st) {
    vg_shape s = vg__op_input_shape(op, i);
    if (s.ndims >= 0 && s.ndims != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be 1-dimensional, got rank %d", vg_op_type(op), what,
                             s.ndims);
    if (s.ndims == 1 && c >= 0 && s.dims[0] >= 0 && s.dims[0] != c && !(may_be_empty && s.dims[0] == 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must have %lld elements (the channels), got %lld",
                             vg_op_type(op), what, (long long)c, (long long)s.dims[0]);
    return VG_OK;
}

/* nin 5: FusedBatchNormV3 (x, scale, offset, mean, variance);
 * nin 6: FusedBatchNormGradV3 (dy, x, scale, rs1, rs2, rs3). */
static vg_code bn_shape(vg_op *op, bool grad, vg_status *st) {
    bn_attrs a;
    vg_code c = get_attrs(op, &a, st);
    if (c != VG_OK) return c;
    int xi = grad ? 1 : 0;
    vg_dtype dt = vg__op_input_dtype(op, xi);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: x has dtype %s, which is not supported (float double)",
                             vg_op_type(op), vg_dtype_name(dt));
    int nin = vg_op_num_inputs(op);
    for (int i = 0; i < nin; i++) {
        if (grad && i == 5) continue; /* reserve_space_3: any float */
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d has dtype %s, expected %s", vg_op_type(op), i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
    }
    vg_shape xs = vg__op_input_shape(op, xi);
    if (xs.ndims >= 0 && xs.ndims != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: x must be 4-dimensional, got rank %d", vg_op_type(op), xs.ndims);
    if (grad) {
        vg_shape ds = vg__op_input_shape(op, 0);
        if (ds.ndims >= 0 && ds.ndims != 4)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: y_backprop must be 4-dimensional, got rank %d",
                                 vg_op_type(op), ds.ndims);
        if (xs.ndims < 0) xs = ds;
    }
    int64_t ch = xs.ndims == 4 ? xs.dims[3] : -1;
    static const char *fwd_names[] = {"x", "scale", "offset", "mean", "variance"};
    static const char *grad_names[] = {"y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2"};
    for (int i = grad ? 2 : 1; i < 5; i++) {
        c = check_vec(op, i, grad ? grad_names[i] : fwd_names[i], ch, !grad && a.training && i >= 3, st);
        if (c != VG_OK) return c;
    }
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_type(op, "U", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg__op_set_default_attr_bool(op, "is_training", true);
    vg_shape vec = vg_shape_make(&ch, 1), empty;
    int64_t zero = 0;
    empty = vg_shape_make(&zero, 1);
    if (!grad) {
        vg__op_set_num_outputs(op, 6);
        vg__op_set_output(op, 0, dt, xs);
        for (int i = 1; i < 5; i++) vg__op_set_output(op, i, dt, vec);
        vg__op_set_output(op, 5, dt, empty);
    } else {
        vg__op_set_num_outputs(op, 5);
        vg__op_set_output(op, 0, dt, xs);
        vg__op_set_output(op, 1, dt, vec);
        vg__op_set_output(op, 2, dt, vec);
        vg__op_set_output(op, 3, dt, empty);
        vg__op_set_output(op, 4, dt, empty);
    }
    return VG_OK;
}
static vg_code shape_bn(vg_op *op, vg_status *st) { return bn_shape(op, false, st); }
static vg_code shape_bn_grad(vg_op *op, vg_status *st) { return bn_shape(op, true, st); }

static double at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_FLOAT ? ((const float *)vg_tensor_data(t))[i] : ((const double *)vg_tensor_data(t))[i];
}
static void put(vg_tensor *t, int64_t i, double v) {
    if (vg_tensor_dtype(t) == VG_FLOAT) ((float *)vg_tensor_data(t))[i] = (float)v;
    else ((double *)vg_tensor_data(t))[i] = v;
}

static vg_code kvec(vg__kctx *ctx, const vg_tensor *t, const char *what, int64_t c) {
    if (vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != c)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s must be a 1-D tensor of %lld elements", what,
                             (long long)c);
    return VG_OK;
}

static vg_code alloc_vec(vg__kctx *ctx, int i, vg_dtype dt, int64_t n, vg_tensor **o) {
    return vg__kctx_alloc_output(ctx, i, dt, &n, 1, o);
}

static vg_code kernel_bn(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    bn_attrs a;
    vg_code c = get_attrs(vg__kctx_op(ctx), &a, st);
    if (c != VG_OK) return c;
    const vg_tensor *x = vg__kctx_input(ctx, 0), *scale = vg__kctx_input(ctx, 1), *offset = vg__kctx_input(ctx, 2),
                    *mean_in = vg__kctx_input(ctx, 3), *var_in = vg__kctx_input(ctx, 4);
    if (vg_tensor_ndims(x) != 4) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be 4-dimensional");
    int64_t ch = vg_tensor_dim(x, 3), rows = ch ? vg_tensor_num_elements(x) / ch : 0;
    if ((c = kvec(ctx, scale, "scale", ch)) || (c = kvec(ctx, offset, "offset", ch))) return c;
    if (!a.training && ((c = kvec(ctx, mean_in, "mean", ch)) || (c = kvec(ctx, var_in, "variance", ch)))) return c;
    vg_dtype dt = vg_tensor_dtype(x);
    vg_tensor *y, *bm, *bv, *r1, *r2, *r3;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), 4, &y)) || (c = alloc_vec(ctx, 1, dt, ch, &bm)) ||
        (c = alloc_vec(ctx, 2, dt, ch, &bv)) || (c = alloc_vec(ctx, 3, dt, ch, &r1)) ||
        (c = alloc_vec(ctx, 4, dt, ch, &r2)) || (c = alloc_vec(ctx, 5, dt, 0, &r3)))
        return c;
    (void)r3;
    for (int64_t k = 0; k < ch; k++) {
        double mean, var;
        if (a.training) {
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < rows; i++) s += at(x, i * ch + k);
            mean = rows ? s / (double)rows : 0;
            for (int64_t i = 0; i < rows; i++) {
                double d = at(x, i * ch + k) - mean;
                s2 += d * d;
            }
            var = rows ? s2 / (double)rows : 0;
            put(bm, k, mean);
            put(bv, k, rows > 1 ? var * (double)rows / (double)(rows - 1) : var);
        } else {
            mean = at(mean_in, k);
            var = at(var_in, k);
            put(bm, k, mean);
            put(bv, k, var);
        }
        put(r1, k, mean);
        put(r2, k, var);
        double r = 1.0 / sqrt(var + a.eps), sc = at(scale, k), off = at(offset, k);
        for (int64_t i = 0; i < rows; i++) put(y, i * ch + k, sc * (at(x, i * ch + k) - mean) * r + off);
    }
    return VG_OK;
}

static vg_code kernel_bn_grad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    bn_attrs a;
    vg_code c = get_attrs(vg__kctx_op(ctx), &a, st);
    if (c != VG_OK) return c;
    const vg_tensor *dy = vg__kctx_input(ctx, 0), *x = vg__kctx_input(ctx, 1), *scale = vg__kctx_input(ctx, 2),
                    *mean = vg__kctx_input(ctx, 3), *var = vg__kctx_input(ctx, 4);
    if (vg_tensor_ndims(x) != 4 || vg_tensor_ndims(dy) != 4 ||
        memcmp(vg_tensor_dims(x), vg_tensor_dims(dy), 4 * sizeof(int64_t)) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "x and y_backprop must be 4-dimensional of the same shape");
    int64_t ch = vg_tensor_dim(x, 3), rows = ch ? vg_tensor_num_elements(x) / ch : 0;
    if ((c = kvec(ctx, scale, "scale", ch)) || (c = kvec(ctx, mean, "reserve_space_1", ch)) ||
        (c = kvec(ctx, var, "reserve_space_2", ch)))
        return c;
    vg_dtype dt = vg_tensor_dtype(x);
    vg_tensor *dx, *ds, *dof, *r4, *r5;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), 4, &dx)) || (c = alloc_vec(ctx, 1, dt, ch, &ds)) ||
        (c = alloc_vec(ctx, 2, dt, ch, &dof)) || (c = alloc_vec(ctx, 3, dt, 0, &r4)) || (c = alloc_vec(ctx, 4, dt, 0, &r5)))
        return c;
    for (int64_t k = 0; k < ch; k++) {
        double m = at(mean, k), r = 1.0 / sqrt(at(var, k) + a.eps), sc = at(scale, k);
        double sdy = 0, sdyx = 0;
        for (int64_t i = 0; i < rows; i++) {
            double g = at(dy, i * ch + k);
            sdy += g;
            sdyx += g * (at(x, i * ch + k) - m) * r;
        }
        put(ds, k, sdyx);
        put(dof, k, sdy);
        double mdy = rows ? sdy / (double)rows : 0, mdyx = rows ? sdyx / (double)rows : 0;
        for (int64_t i = 0; i < rows; i++) {
            double g = at(dy, i * ch + k);
            if (a.training) {
                double xhat = (at(x, i * ch + k) - m) * r;
                put(dx, i * ch + k, sc * r * (g - mdy - xhat * mdyx));
            } else {
                put(dx, i * ch + k, g * sc * r);
            }
        }
    }
    return VG_OK;
}

static void copy_bn_attrs(vg_op_builder *b, const vg_op *op) {
    float f;
    bool t;
    vg_op_builder_set_attr_float(b, "epsilon", vg_op_attr_float(op, "epsilon", &f) ? f : 0.0001f);
    vg_op_builder_set_attr_bool(b, "is_training", vg_op_attr_bool(op, "is_training", &t) ? t : true);
    vg_op_builder_set_attr_string(b, "data_format", "NHWC", 4);
}

static vg_code grad_bn(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    bool training = true;
    vg_op_attr_bool(op, "is_training", &training);
    vg_op_builder *b = vg_op_builder_new(g, "FusedBatchNormGradV3", "FusedBatchNormGradV3");
    if (!b) return vg_graph_status(g, NULL);
    vg_op_builder_add_input(b, dy[0]);
    vg_op_builder_add_input(b, vg_op_input(op, 0));
    vg_op_builder_add_input(b, vg_op_input(op, 1));
    vg_op_builder_add_input(b, training ? vg_out(op, 3) : vg_op_input(op, 3));
    vg_op_builder_add_input(b, training ? vg_out(op, 4) : vg_op_input(op, 4));
    vg_op_builder_add_input(b, vg_out(op, 5));
    copy_bn_attrs(b, op);
    vg_op *gr = vg_op_builder_finish(b);
    if (!gr) return vg_graph_status(g, NULL);
    dx[0] = vg_out(gr, 0);
    dx[1] = vg_out(gr, 1);
    dx[2] = vg_out(gr, 2);
    dx[3] = (vg_output){NULL, 0};
    dx[4] = (vg_output){NULL, 0};
    return vg_graph_status(g, NULL);
}

vg_op *vg_fused_batch_norm_v3(vg_graph *g, vg_output x, vg_output scale, vg_output offset, vg_output mean,
                              vg_output variance, float epsilon, bool is_training, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "FusedBatchNormV3", name ? name : "FusedBatchNormV3");
    if (!b) return NULL;
    vg_op_builder_add_input(b, x);
    vg_op_builder_add_input(b, scale);
    vg_op_builder_add_input(b, offset);
    vg_op_builder_add_input(b, mean);
    vg_op_builder_add_input(b, variance);
    vg_op_builder_set_attr_float(b, "epsilon", epsilon);
    vg_op_builder_set_attr_bool(b, "is_training", is_training);
    vg_op_builder_set_attr_string(b, "data_format", "NHWC", 4);
    return vg_op_builder_finish(b);
}

const vg__op_def vg__ops_nn_norm[] = {
    {"FusedBatchNormV3", 5, 5, 0, 0, shape_bn, kernel_bn, grad_bn},
    {"FusedBatchNormGradV3", 6, 6, 0, 0, shape_bn_grad, kernel_bn_grad, NULL},
    {0},
};
