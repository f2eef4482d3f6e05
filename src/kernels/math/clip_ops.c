/*
 * clip_ops.c - ClipByValue(t, clip_value_min, clip_value_max) as TF 1.15's
 * cwise_op_clip.cc (min and max scalars or t's shape; out = max(min(t, hi), lo)) with
 * _ClipByValueGrad of math_grad.py, and tf.clip_by_value's composite builder
 * (clip_ops.py: Minimum then Maximum under the scope "clip_by_value").
 */
#include "kernels/ew_internal.h"
#include <stdio.h>

static bool scalar_or_same(const vg_shape *s, const vg_shape *t) {
    if (s->ndims <= 0 || t->ndims < 0) return true; /* scalar or unknown */
    if (s->ndims != t->ndims) return false;
    for (int i = 0; i < s->ndims; i++)
        if (s->dims[i] >= 0 && t->dims[i] >= 0 && s->dims[i] != t->dims[i]) return false;
    return true;
}

static vg_code shape_clip(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE && dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "ClipByValue: t has dtype %s, which is not supported (allowed: float double int32 int64)",
                             vg_dtype_name(dt));
    for (int i = 1; i < 3; i++)
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "ClipByValue: input %d has dtype %s but t has %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
    vg_shape t = vg__op_input_shape(op, 0), lo = vg__op_input_shape(op, 1), hi = vg__op_input_shape(op, 2);
    if (!scalar_or_same(&lo, &t) || !scalar_or_same(&hi, &t)) {
        char a[128], b[128], c[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "clip_value_min and clip_value_max must be either scalars or have the same shape as the "
                             "input: %s, %s, %s", vg_shape_str(&t, a, sizeof a), vg_shape_str(&lo, b, sizeof b),
                             vg_shape_str(&hi, c, sizeof c));
    }
    return vg__op_set_t_output(op, dt, t);
}

#define CLIP_LOOP(T)                                                                          \
    do {                                                                                      \
        const T *x = vg_tensor_data(t), *l = vg_tensor_data(lo), *h = vg_tensor_data(hi);     \
        T *o = vg_tensor_data(out);                                                           \
        for (int64_t i = 0; i < n; i++) {                                                     \
            T v = x[i], hv = h[hs ? i : 0], lv = l[ls ? i : 0];                               \
            v = hv < v ? hv : v;                                                              \
            o[i] = v < lv ? lv : v;                                                           \
        }                                                                                     \
    } while (0)

static vg_code kernel_clip(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *t = vg__kctx_input(ctx, 0), *lo = vg__kctx_input(ctx, 1), *hi = vg__kctx_input(ctx, 2);
    int64_t n = vg_tensor_num_elements(t);
    bool ls = vg_tensor_ndims(lo) > 0, hs = vg_tensor_ndims(hi) > 0;
    vg_shape ts = vg_tensor_shape(t), los = vg_tensor_shape(lo), his = vg_tensor_shape(hi);
    if ((ls && (!scalar_or_same(&los, &ts) || vg_tensor_num_elements(lo) != n)) ||
        (hs && (!scalar_or_same(&his, &ts) || vg_tensor_num_elements(hi) != n)) ||
        (!ls && vg_tensor_num_elements(lo) != 1) || (!hs && vg_tensor_num_elements(hi) != 1)) {
        char a[128], b[128], c[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "clip_value_min and clip_value_max must be either scalars or have the same shape as the "
                             "input: %s, %s, %s", vg_shape_str(&ts, a, sizeof a), vg_shape_str(&los, b, sizeof b),
                             vg_shape_str(&his, c, sizeof c));
    }
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(t), vg_tensor_dims(t), vg_tensor_ndims(t), &out);
    if (c != VG_OK) return c;
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: CLIP_LOOP(float); break;
    case VG_DOUBLE: CLIP_LOOP(double); break;
    case VG_INT32: CLIP_LOOP(int32_t); break;
    case VG_INT64: CLIP_LOOP(int64_t); break;
    default: return vg_status_set(st, VG_INVALID_ARGUMENT, "ClipByValue: unsupported dtype");
    }
    return VG_OK;
}

/* _ClipByValueGrad */
static vg_code grad_clip(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), y = vg_op_input(op, 1), z = vg_op_input(op, 2);
    vg_output sx = vg_shape_op(g, x, VG_INT32, "Shape"), sy = vg_shape_op(g, y, VG_INT32, "Shape_1");
    vg_output sz = vg_shape_op(g, z, VG_INT32, "Shape_2");
    vg_output zeros = vg_zeros_like(g, dy[0], "zeros");
    vg_output xymask = vg_less(g, x, y, "Less"), xzmask = vg_greater(g, x, z, "Greater");
    vg_op *bxy = vg_broadcast_gradient_args(g, sx, sy, "BroadcastGradientArgs");
    vg_op *bxz = vg_broadcast_gradient_args(g, sx, sz, "BroadcastGradientArgs_1");
    if (!bxy || !bxz) return vg_graph_status(g, NULL);
    /* y and z are scalars or x's shape, so both masks have x's shape */
    vg_output ymask = xymask, zmask = xzmask;
    vg_output xgrad = vg_select(g, vg_logical_or(g, ymask, zmask, "LogicalOr"), zeros, dy[0], "Select");
    vg_output ygrad = vg_select(g, ymask, dy[0], zeros, "Select_1");
    vg_output zgrad = vg_select(g, zmask, dy[0], zeros, "Select_2");
    dx[0] = vg_reshape(g, vg_sum(g, xgrad, vg_out(bxy, 0), false, "Sum"), sx, "Reshape");
    dx[1] = vg_reshape(g, vg_sum(g, ygrad, vg_out(bxy, 1), false, "Sum_1"), sy, "Reshape_1");
    dx[2] = vg_reshape(g, vg_sum(g, zgrad, vg_out(bxz, 1), false, "Sum_2"), sz, "Reshape_2");
    return vg_graph_status(g, NULL);
}

vg_output vg_clip_by_value_op(vg_graph *g, vg_output t, vg_output lo, vg_output hi, const char *name) {
    return vg__build_simple(g, "ClipByValue", name, NULL, (vg_output[]){t, lo, hi}, 3);
}

vg_output vg_clip_by_value(vg_graph *g, vg_output t, vg_output lo, vg_output hi, const char *name) {
    if (!t.op || !lo.op || !hi.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "clip_by_value: t, clip_value_min and clip_value_max are required");
        return vg_out(NULL, 0);
    }
    char full[1024], scope[1100];
    vg_graph_unique_name(g, name ? name : "clip_by_value", full, sizeof full);
    snprintf(scope, sizeof scope, "%s/", full);
    const char *slash = strrchr(full, '/');
    vg_graph_push_scope(g, scope);
    vg_output t_min = vg_minimum(g, t, hi, "Minimum");
    vg_graph_pop_scope(g);
    /* values.shape.merge_with(t_min.shape): clipping must not broadcast t */
    vg_shape st0 = vg_output_shape(t), st1 = vg_output_shape(t_min);
    if (t_min.op && !vg__graph_need_compatible(g, &st0, &st1, "clip_by_value: Shapes %s and %s are incompatible"))
        return vg_out(NULL, 0);
    return vg_maximum(g, t_min, lo, slash ? slash + 1 : full);
}

const vg__op_def vg__ops_clip[] = {
    {"ClipByValue", 3, 3, 0, 0, shape_clip, kernel_clip, grad_clip},
    {0},
};
