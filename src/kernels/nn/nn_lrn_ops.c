/*
 * nn_lrn_ops.c - LRN (tf.nn.local_response_normalization) and LRNGrad as TF 1.15's
 * lrn_op.cc, float32/float64, NHWC (the window runs over the last dim):
 *     sqr_sum[..., d] = sum(x[..., d - r : d + r + 1] ^ 2)
 *     y = x / (bias + alpha * sqr_sum) ^ beta
 * attrs depth_radius (5), bias (1), alpha (1), beta (0.5). Gradient as nn_grad.py
 * _LRNGrad: LRNGrad(dy, x, y) with the same attrs, whose kernel is TF's CPU loop.
 */
#include "kernels/ew_internal.h"
#include "kernels/simd.h"
#include <math.h>
#include <stdatomic.h>

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
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, n == 3 ? 1 : 0));
}
static vg_code shape_lrn(vg_op *op, vg_status *st) { return lrn_shape(op, 1, st); }
static vg_code shape_lrn_grad(vg_op *op, vg_status *st) { return lrn_shape(op, 3, st); }

/* Rows (the positions of N, H, W) are independent: each range of rows is one job for
 * the intra-op threads; float32 with a radius up to LRN_F32_MAX_R runs lrn_row_f32
 * (below), the rest is computed in double from the row's squares. Window sums come
 * from prefix sums (O(depth) per row whatever the radius), norm^-beta takes square roots
 * for TF's common betas (0.5, 0.75, 1) and pow otherwise. The gradient uses that a window
 * is symmetric (k in window(j) iff j in window(k)):
 *   dx[k] = g[k] norm[k]^-beta - 2 alpha beta x[k] sum_{j in window(k)} g[j] y[j] / norm[j]
 * which is TF's double loop regrouped. Before, every element went through accessor
 * calls and the gradient was O(depth * radius) with a pow per term (78% of the CIFAR-10
 * tutorial's step; issue 30). */
typedef struct lrn_job {
    lrn_attrs a;
    int64_t depth;
    bool f32;
    const void *x, *g, *y; /* forward: x; gradient: g = dy, x, y */
    void *out;
    atomic_int oom;
} lrn_job;

static inline double pow_neg_beta(double n, double beta) {
    if (beta == 0.75) return 1.0 / (sqrt(n) * sqrt(sqrt(n)));
    if (beta == 0.5) return 1.0 / sqrt(n);
    if (beta == 1.0) return 1.0 / n;
    return pow(n, -beta);
}

static inline double ld(const lrn_job *j, const void *p, int64_t i) {
    return j->f32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* float32 rows with a window of up to 33: vectors across the row's depth. Window sums
 * add the 2r+1 shifted squares of a zero-padded copy (no loop-carried prefix sum, so
 * the compiler vectorizes them), in float as TF's Eigen kernel does; norm^-beta by
 * square roots for TF's common betas. (LRN was at 7-12% of the memory roofline in the
 * double prefix-sum loop; issue 30's census.) */
#define LRN_F32_MAX_R 16
#pragma GCC push_options
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic") /* sqrtf too: -fno-math-errno (CMake) */
VG_SIMD_CLONES
static void lrn_pow_f32(int64_t D, const float *restrict nrm, float beta, float *restrict out) {
    if (beta == 0.75f)
        for (int64_t d = 0; d < D; d++) out[d] = 1.0f / (sqrtf(nrm[d]) * sqrtf(sqrtf(nrm[d])));
    else if (beta == 0.5f)
        for (int64_t d = 0; d < D; d++) out[d] = 1.0f / sqrtf(nrm[d]);
    else if (beta == 1.0f)
        for (int64_t d = 0; d < D; d++) out[d] = 1.0f / nrm[d];
    else
        for (int64_t d = 0; d < D; d++) out[d] = powf(nrm[d], -beta);
}

VG_SIMD_CLONES
static void lrn_window_f32(int64_t D, int64_t R, const float *restrict padded, float *restrict sum) {
    int64_t d = 0;
    for (; d + 16 <= D; d += 16) { /* 16 sums in registers across the 2r+1 shifts */
        float acc[16] = {0};
        for (int64_t t = 0; t <= 2 * R; t++)
            for (int k = 0; k < 16; k++) acc[k] += padded[d + t + k];
        for (int k = 0; k < 16; k++) sum[d + k] = acc[k];
    }
    for (; d < D; d++) {
        float a = 0.0f;
        for (int64_t t = 0; t <= 2 * R; t++) a += padded[d + t];
        sum[d] = a;
    }
}

VG_SIMD_CLONES
static void lrn_row_f32(const lrn_job *j, int64_t base, bool grad, float *restrict pad, float *restrict nrm,
                        float *restrict pw, float *restrict ws) {
    const int64_t D = j->depth, R = j->a.r;
    const float *restrict x = (const float *)j->x + base;
    float *restrict out = (float *)j->out + base;
    const float bias = (float)j->a.bias, alpha = (float)j->a.alpha;
    for (int64_t d = 0; d < D; d++) pad[R + d] = x[d] * x[d];
    lrn_window_f32(D, R, pad, ws);
    for (int64_t d = 0; d < D; d++) nrm[d] = bias + alpha * ws[d];
    lrn_pow_f32(D, nrm, (float)j->a.beta, pw);
    if (!grad) {
        for (int64_t d = 0; d < D; d++) out[d] = x[d] * pw[d];
        return;
    }
    const float *restrict g = (const float *)j->g + base, *restrict y = (const float *)j->y + base;
    for (int64_t d = 0; d < D; d++) pad[R + d] = g[d] * y[d] / nrm[d];
    lrn_window_f32(D, R, pad, ws);
    const float c = (float)(2.0 * j->a.alpha * j->a.beta);
    for (int64_t d = 0; d < D; d++) out[d] = g[d] * pw[d] - c * x[d] * ws[d];
}
#pragma GCC pop_options

static void lrn_rows(void *arg, int64_t r0, int64_t r1, bool grad) {
    lrn_job *j = arg;
    const int64_t D = j->depth, R = j->a.r;
    if (j->f32 && R >= 0 && R <= LRN_F32_MAX_R) {
        float *buf = vg__malloc(sizeof(float) * (size_t)(4 * D + 2 * R + 8));
        if (!buf) {
            atomic_store(&j->oom, 1);
            return;
        }
        float *pad = buf, *nrm = pad + D + 2 * R, *pw = nrm + D, *ws = pw + D;
        for (int64_t k = 0; k < R; k++) pad[k] = pad[R + D + k] = 0.0f;
        for (int64_t r = r0; r < r1; r++) lrn_row_f32(j, r * D, grad, pad, nrm, pw, ws);
        vg__free(buf);
        return;
    }
    double *pre = vg__malloc(sizeof(double) * (size_t)(3 * D + 2)), *nrm = pre + D + 1, *tsum = nrm + D;
    if (!pre) {
        atomic_store(&j->oom, 1);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        int64_t base = r * D;
        pre[0] = 0;
        for (int64_t k = 0; k < D; k++) {
            double v = ld(j, j->x, base + k);
            pre[k + 1] = pre[k] + v * v;
        }
        for (int64_t d = 0; d < D; d++) {
            int64_t lo = d - R < 0 ? 0 : d - R, hi = d + R + 1 > D ? D : d + R + 1;
            nrm[d] = j->a.bias + j->a.alpha * (pre[hi] - pre[lo]);
        }
        if (!grad) {
            for (int64_t d = 0; d < D; d++) {
                double y = ld(j, j->x, base + d) * pow_neg_beta(nrm[d], j->a.beta);
                if (j->f32) ((float *)j->out)[base + d] = (float)y;
                else ((double *)j->out)[base + d] = y;
            }
            continue;
        }
        /* prefix sums of t[j] = g[j] y[j] / norm[j] */
        tsum[0] = 0;
        for (int64_t k = 0; k < D; k++)
            tsum[k + 1] = tsum[k] + ld(j, j->g, base + k) * ld(j, j->y, base + k) / nrm[k];
        for (int64_t k = 0; k < D; k++) {
            int64_t lo = k - R < 0 ? 0 : k - R, hi = k + R + 1 > D ? D : k + R + 1;
            double dx = ld(j, j->g, base + k) * pow_neg_beta(nrm[k], j->a.beta) -
                        2.0 * j->a.alpha * j->a.beta * ld(j, j->x, base + k) * (tsum[hi] - tsum[lo]);
            if (j->f32) ((float *)j->out)[base + k] = (float)dx;
            else ((double *)j->out)[base + k] = dx;
        }
    }
    vg__free(pre);
}
static void lrn_fwd_rows(void *arg, int64_t r0, int64_t r1) { lrn_rows(arg, r0, r1, false); }
static void lrn_grad_rows(void *arg, int64_t r0, int64_t r1) { lrn_rows(arg, r0, r1, true); }

static vg_code lrn_run(vg__kctx *ctx, lrn_job *j, int64_t rows, bool grad) {
    if (rows > 0 && j->depth > 0)
        vg__kctx_parallel_for(ctx, rows, (grad ? 12 : 6) * j->depth, grad ? lrn_grad_rows : lrn_fwd_rows, j);
    if (atomic_load(&j->oom))
        return vg_status_set(vg__kctx_status(ctx), VG_RESOURCE_EXHAUSTED, "out of memory in %s",
                             vg_op_type(vg__kctx_op(ctx)));
    return VG_OK;
}

/* Reads the op's attributes into j, allocates the output (x's shape and dtype) and runs
 * the job over x's pixels: LRN (grad false) or LRNGrad. */
static vg_code lrn_start(vg__kctx *ctx, lrn_job *j, const vg_tensor *x, bool grad) {
    get_attrs(vg__kctx_op(ctx), &j->a);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), 4, &o);
    if (c != VG_OK) return c;
    j->out = vg_tensor_data(o);
    return lrn_run(ctx, j, j->depth ? vg_tensor_num_elements(x) / j->depth : 0, grad);
}

static vg_code kernel_lrn(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    if (vg_tensor_ndims(x) != 4) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be 4-dimensional");
    vg_dtype dt = vg_tensor_dtype(x);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "LRN: dtype %s is not supported (float double)", vg_dtype_name(dt));
    lrn_job j = {.depth = vg_tensor_dim(x, 3), .f32 = dt == VG_FLOAT, .x = vg_tensor_data(x)};
    return lrn_start(ctx, &j, x, false);
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
    vg_dtype dt = vg_tensor_dtype(in);
    if ((dt != VG_FLOAT && dt != VG_DOUBLE) || vg_tensor_dtype(gr) != dt || vg_tensor_dtype(out) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "LRNGrad: the three inputs must be all float32 or all float64");
    lrn_job j = {.depth = vg_tensor_dim(in, 3), .f32 = dt == VG_FLOAT, .x = vg_tensor_data(in), .g = vg_tensor_data(gr),
                 .y = vg_tensor_data(out)};
    return lrn_start(ctx, &j, in, true);
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
    vg_op_builder *b = vg__builder_with_inputs(g, "LRNGrad", "LRNGrad", NULL,
                                               (vg_output[]){dy[0], vg_op_input(op, 0), vg_out(op, 0)}, 3);
    if (!b) return vg_graph_status(g, NULL);
    copy_attrs(b, op);
    dx[0] = vg_out(vg_op_builder_finish(b), 0);
    return vg_graph_status(g, NULL);
}

vg_output vg_lrn(vg_graph *g, vg_output x, int depth_radius, float bias, float alpha, float beta, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "LRN", name, NULL, (vg_output[]){x}, 1);
    if (!b) return vg_out(NULL, 0);
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
