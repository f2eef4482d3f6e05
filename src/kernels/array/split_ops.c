/*
 * split_ops.c - Split(split_dim, value; num_split) and SplitV(value, size_splits,
 * split_dim; num_split) as TF 1.15's split_op.cc / split_v_op.cc (one -1 in
 * size_splits is inferred; messages as TF's), gradients as array_grad.py _SplitGrad /
 * _SplitVGrad (ConcatV2 of the output gradients along split_dim; missing ones are
 * zeros), and the builders of tf.split and tf.unstack (Unpack lives in array_ops).
 */
#include "kernels/ew_internal.h"
#include <stdio.h>
#include <string.h>

static int64_t elem_int(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[i]
                                          : ((const int64_t *)vg_tensor_data(t))[i];
}

/* Resolves a split axis against rank r; INVALID_ARGUMENT as TF. */
static vg_code resolve_axis(int64_t *axis, int r, vg_status *st) {
    if (*axis < -r || *axis >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "-input rank(-%d) <= split_dim < input rank (%d), but got %lld", r,
                             r, (long long)*axis);
    if (*axis < 0) *axis += r;
    return VG_OK;
}

/* size_splits (n entries, at most one -1) against a dim of size d (-1 unknown). */
static vg_code resolve_sizes(int64_t *sz, int n, int64_t d, vg_status *st) {
    int neg = -1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sz[i] == -1) {
            if (neg >= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "There can only be one -1 in the input.");
            neg = i;
        } else if (sz[i] < 0) {
            return vg_status_set(st, VG_INVALID_ARGUMENT, "size_splits[%d] = %lld is negative", i, (long long)sz[i]);
        } else {
            total += sz[i];
        }
    }
    if (d < 0) return VG_OK;
    if ((neg < 0 && total != d) || (neg >= 0 && total > d))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Determined shape must either match input shape along split_dim exactly if fully "
                             "specified, or be less than the size of the input along split_dim if not fully "
                             "specified.  Got: %lld",
                             (long long)total);
    if (neg >= 0) sz[neg] = d - total;
    return VG_OK;
}

/* Shared shape function. value_i / dim_i: input indices; sizes NULL for Split. */
static vg_code split_shape(vg_op *op, int value_i, int dim_i, int sizes_i, vg_status *st) {
    int64_t num = 0;
    if (!vg_op_attr_int(op, "num_split", &num) || num < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: attr num_split must be >= 1", vg_op_type(op));
    if (num > (1 << 20)) /* every output is an op output slot: refuse absurd counts up front */
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: num_split = %lld is too large (at most %d)", vg_op_type(op),
                             (long long)num, 1 << 20);
    vg_dtype dt = vg__op_input_dtype(op, value_i), at = vg__op_input_dtype(op, dim_i);
    if (at != VG_INT32 && (sizes_i < 0 || at != VG_INT64))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: split_dim must be int32, got %s", vg_op_type(op),
                             vg_dtype_name(at));
    vg__op_set_default_attr_type(op, "T", dt);
    if (sizes_i >= 0) {
        vg_dtype lt = vg__op_input_dtype(op, sizes_i);
        if (lt != VG_INT32 && lt != VG_INT64)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "SplitV: size_splits must be int32 or int64, got %s",
                                 vg_dtype_name(lt));
        vg__op_set_default_attr_type(op, "Tlen", lt);
    }
    vg__op_set_num_outputs(op, (int)num);
    vg_shape in = vg__op_input_shape(op, value_i);
    int64_t axis;
    vg_shape outs[1];
    outs[0] = vg_shape_unknown();
    if (in.ndims < 0 || !vg__int_scalar(vg__op_const_input(op, dim_i), true, &axis)) {
        if (in.ndims >= 0) { /* rank known, axis unknown */
            outs[0] = in;
            for (int i = 0; i < in.ndims; i++) outs[0].dims[i] = -1;
        }
        for (int k = 0; k < num; k++) vg__op_set_output(op, k, dt, outs[0]);
        return VG_OK;
    }
    vg_code c = resolve_axis(&axis, in.ndims, st);
    if (c != VG_OK) return c;
    int64_t d = in.dims[axis];
    if (sizes_i < 0) {
        if (d >= 0 && d % num != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Number of ways to split should evenly divide the split dimension, but got "
                                 "split_dim %lld (size = %lld) and num_split %lld",
                                 (long long)axis, (long long)d, (long long)num);
        vg_shape o = in;
        o.dims[axis] = d >= 0 ? d / num : -1;
        for (int k = 0; k < num; k++) vg__op_set_output(op, k, dt, o);
        return VG_OK;
    }
    const vg_tensor *szt = vg__op_const_input(op, sizes_i);
    if (!szt || vg_tensor_ndims(szt) != 1 || vg_tensor_dim(szt, 0) != num) {
        if (szt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "SplitV: size_splits must be a 1-D tensor of num_split = %lld values",
                                 (long long)num);
        vg_shape o = in;
        o.dims[axis] = -1;
        for (int k = 0; k < num; k++) vg__op_set_output(op, k, dt, o);
        return VG_OK;
    }
    int64_t *sz = vg__malloc(sizeof(int64_t) * (size_t)num);
    if (!sz) return VG_OOM(st, "SplitV sizes");
    for (int64_t i = 0; i < num; i++) sz[i] = elem_int(szt, i);
    c = resolve_sizes(sz, (int)num, d, st);
    for (int k = 0; c == VG_OK && k < num; k++) {
        vg_shape o = in;
        o.dims[axis] = sz[k] == -1 ? -1 : sz[k];
        vg__op_set_output(op, k, dt, o);
    }
    vg__free(sz);
    return c;
}

static vg_code shape_split(vg_op *op, vg_status *st) { return split_shape(op, 1, 0, -1, st); }
static vg_code shape_splitv(vg_op *op, vg_status *st) { return split_shape(op, 0, 2, 1, st); }

static vg_code split_kernel(vg__kctx *ctx, int value_i, int dim_i, int sizes_i) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, value_i);
    int64_t num = 0, axis;
    vg_op_attr_int(vg__kctx_op(ctx), "num_split", &num);
    if (!vg__int_scalar(vg__kctx_input(ctx, dim_i), true, &axis))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "split_dim must be a scalar");
    int r = vg_tensor_ndims(x);
    vg_code c = resolve_axis(&axis, r, st);
    if (c != VG_OK) return c;
    int64_t d = vg_tensor_dim(x, (int)axis);
    int64_t *sz = vg__malloc(sizeof(int64_t) * (size_t)num);
    if (!sz) return VG_OOM(st, "split sizes");
    if (sizes_i < 0) {
        if (d % num != 0) {
            vg__free(sz);
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Number of ways to split should evenly divide the split dimension, but got "
                                 "split_dim %lld (size = %lld) and num_split %lld",
                                 (long long)axis, (long long)d, (long long)num);
        }
        for (int64_t i = 0; i < num; i++) sz[i] = d / num;
    } else {
        const vg_tensor *szt = vg__kctx_input(ctx, sizes_i);
        if (vg_tensor_ndims(szt) != 1 || vg_tensor_dim(szt, 0) != num ||
            (vg_tensor_dtype(szt) != VG_INT32 && vg_tensor_dtype(szt) != VG_INT64)) {
            vg__free(sz);
            return vg_status_set(st, VG_INVALID_ARGUMENT, "SplitV: size_splits must have num_split = %lld values",
                                 (long long)num);
        }
        for (int64_t i = 0; i < num; i++) sz[i] = elem_int(szt, i);
        if ((c = resolve_sizes(sz, (int)num, d, st)) != VG_OK) {
            vg__free(sz);
            return c;
        }
    }
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= vg_tensor_dim(x, i);
    for (int i = (int)axis + 1; i < r; i++) inner *= vg_tensor_dim(x, i);
    const char *src = vg_tensor_data(x);
    int64_t start = 0;
    for (int64_t k = 0; k < num && c == VG_OK; k++) {
        int64_t dims[VG_MAX_DIMS];
        memcpy(dims, vg_tensor_dims(x), sizeof(int64_t) * (size_t)r);
        dims[axis] = sz[k];
        vg_tensor *o;
        if ((c = vg__kctx_alloc_output(ctx, (int)k, vg_tensor_dtype(x), dims, r, &o)) != VG_OK) break;
        size_t row = (size_t)(sz[k] * inner) * esz;
        for (int64_t j = 0; j < outer && row; j++)
            memcpy((char *)vg_tensor_data(o) + (size_t)j * row, src + ((size_t)(j * d + start) * (size_t)inner) * esz, row);
        start += sz[k];
    }
    vg__free(sz);
    return c;
}

static vg_code kernel_split(vg__kctx *ctx) { return split_kernel(ctx, 1, 0, -1); }
static vg_code kernel_splitv(vg__kctx *ctx) { return split_kernel(ctx, 0, 2, 1); }

static vg_code split_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx, int value_i, int dim_i) {
    int n = vg_op_num_outputs(op);
    dx[value_i] = vg_concat(g, dy, n, vg_op_input(op, dim_i), "concat");
    return vg_graph_status(g, NULL);
}
static vg_code grad_split(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    return split_grad(g, op, dy, dx, 1, 0);
}
static vg_code grad_splitv(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    return split_grad(g, op, dy, dx, 0, 2);
}

/* Opens the scope "<unique name>/" for the Consts TF creates while converting the
 * op's arguments; *base gets the op's own name (relative to the enclosing scope). */
static void open_op_scope(vg_graph *g, const char *name, char *full, size_t len, const char **base) {
    vg_graph_unique_name(g, name, full, len);
    char s[1100];
    snprintf(s, sizeof s, "%s/", full);
    vg_graph_push_scope(g, s);
    const char *slash = strrchr(full, '/');
    *base = slash ? slash + 1 : full;
}

vg_op *vg_split(vg_graph *g, vg_output value, int num_split, int axis, const char *name) {
    char full[1024];
    const char *base;
    open_op_scope(g, name ? name : "split", full, sizeof full, &base);
    vg_output dim = vg_const_i32(g, axis, "split_dim");
    vg_graph_pop_scope(g);
    vg_op_builder *b = vg__builder_with_inputs(g, "Split", base, NULL, (vg_output[]){dim, value}, 2);
    if (!b) return NULL;
    vg_op_builder_set_attr_int(b, "num_split", num_split);
    return vg_op_builder_finish(b);
}

vg_op *vg_split_v(vg_graph *g, vg_output value, const int32_t *size_splits, int num_split, int axis, const char *name) {
    if (num_split < 1 || !size_splits) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "split: num_split must be >= 1 with size_splits given");
        return NULL;
    }
    char full[1024];
    const char *base;
    vg_output sizes = vg_const_i32_vec(g, size_splits, num_split, "Const");
    open_op_scope(g, name ? name : "split", full, sizeof full, &base);
    vg_output dim = vg_const_i32(g, axis, "split_dim");
    vg_graph_pop_scope(g);
    vg_op_builder *b = vg__builder_with_inputs(g, "SplitV", base, NULL, (vg_output[]){value, sizes, dim}, 3);
    if (!b) return NULL;
    vg_op_builder_set_attr_int(b, "num_split", num_split);
    return vg_op_builder_finish(b);
}

vg_op *vg_unpack(vg_graph *g, vg_output value, int num, int axis, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Unpack", name, "unstack", (vg_output[]){value}, 1);
    if (!b) return NULL;
    if (num >= 0) vg_op_builder_set_attr_int(b, "num", num);
    vg_op_builder_set_attr_int(b, "axis", axis);
    return vg_op_builder_finish(b);
}

const vg__op_def vg__ops_split[] = {
    {"Split", 2, 2, 0, 0, shape_split, kernel_split, grad_split},
    {"SplitV", 3, 3, 0, 0, shape_splitv, kernel_splitv, grad_splitv},
    {0},
};
