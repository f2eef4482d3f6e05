/*
 * reverse_ops.c - ReverseV2(tensor, axis) as TF 1.15's reverse_op.cc (axis int32/int64,
 * negative axes count from the end; a repeated axis or one out of range fails with
 * INVALID_ARGUMENT), gradient as array_grad.py _ReverseV2Grad: ReverseV2(dy, axis).
 */
#include "kernels/ew_internal.h"
#include <string.h>

/* Resolves the axis tensor into a per-dim flag. */
static vg_code rev_axes(const vg_tensor *ax, int r, bool *flip, vg_status *st) {
    memset(flip, 0, sizeof(bool) * VG_MAX_DIMS);
    if (vg_tensor_ndims(ax) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "'axis' must be 1-D, not rank %d", vg_tensor_ndims(ax));
    for (int64_t i = 0; i < vg_tensor_dim(ax, 0); i++) {
        int64_t a = vg_tensor_dtype(ax) == VG_INT32 ? ((const int32_t *)vg_tensor_data(ax))[i]
                                                    : ((const int64_t *)vg_tensor_data(ax))[i];
        int64_t canon = a < 0 ? a + r : a;
        if (canon < 0 || canon >= r)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "'axis'[%lld] = %lld is out of valid range [%d, %d]",
                                 (long long)i, (long long)a, -r, r - 1);
        if (flip[canon])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "axis %lld specified more than once.", (long long)canon);
        flip[canon] = true;
    }
    return VG_OK;
}

static vg_code shape_reverse(vg_op *op, vg_status *st) {
    vg_dtype at = vg__op_input_dtype(op, 1);
    if (at != VG_INT32 && at != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReverseV2: axis must be int32 or int64, got %s", vg_dtype_name(at));
    vg_shape in = vg__op_input_shape(op, 0);
    const vg_tensor *ax = vg__op_const_input(op, 1);
    if (ax && in.ndims >= 0) {
        bool flip[VG_MAX_DIMS];
        vg_code c = rev_axes(ax, in.ndims, flip, st);
        if (c != VG_OK) return c;
    }
    vg__op_set_default_attr_type(op, "T", vg__op_input_dtype(op, 0));
    vg__op_set_default_attr_type(op, "Tidx", at);
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), in);
}

static vg_code kernel_reverse(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0);
    int r = vg_tensor_ndims(x);
    bool flip[VG_MAX_DIMS];
    vg_code c = rev_axes(vg__kctx_input(ctx, 1), r, flip, st);
    if (c != VG_OK) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    if (esz == 0) return vg_status_set(st, VG_UNIMPLEMENTED, "ReverseV2 of dtype %s", vg_dtype_name(vg_tensor_dtype(x)));
    /* trailing dims that are not flipped are copied as one block */
    int last = r - 1;
    size_t block = esz;
    while (last >= 0 && !flip[last]) block *= (size_t)vg_tensor_dim(x, last--);
    if (last < 0) { /* nothing flipped */
        vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
        return VG_OK;
    }
    vg_tensor *o;
    if ((c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), r, &o)) != VG_OK) return c;
    int64_t n = 1, str[VG_MAX_DIMS], idx[VG_MAX_DIMS] = {0};
    for (int i = 0; i <= last; i++) n *= vg_tensor_dim(x, i);
    if (n == 0 || block == 0) return VG_OK;
    int64_t acc = 1;
    for (int i = last; i >= 0; i--) { str[i] = acc; acc *= vg_tensor_dim(x, i); }
    const char *src = vg_tensor_data(x);
    char *dst = vg_tensor_data(o);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int i = 0; i <= last; i++) off += (flip[i] ? vg_tensor_dim(x, i) - 1 - idx[i] : idx[i]) * str[i];
        memcpy(dst + (size_t)k * block, src + (size_t)off * block, block);
        for (int d = last; d >= 0; d--) {
            if (++idx[d] < vg_tensor_dim(x, d)) break;
            idx[d] = 0;
        }
    }
    return VG_OK;
}

static vg_code grad_reverse(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_reverse(g, dy[0], vg_op_input(op, 1), "ReverseV2");
    return vg_graph_status(g, NULL);
}

vg_output vg_reverse(vg_graph *g, vg_output x, vg_output axis, const char *name) {
    return vg__ew_build2(g, "ReverseV2", x, axis, name);
}

vg_output vg_reverse_c(vg_graph *g, vg_output x, const int32_t *axes, int naxes, const char *name) {
    if (naxes < 0 || (naxes > 0 && !axes)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "reverse: bad axes (%d)", naxes);
        return vg_out(NULL, 0);
    }
    return vg_reverse(g, x, vg_const_i32_vec(g, axes, naxes, "ReverseV2/axis"), name);
}

const vg__op_def vg__ops_reverse[] = {
    {"ReverseV2", 2, 2, 0, 0, shape_reverse, kernel_reverse, grad_reverse},
    {0},
};
