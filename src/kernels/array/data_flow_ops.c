/*
 * data_flow_ops.c - TensorFlow's DynamicStitch and ParallelDynamicStitch (TF 1.15
 * core/kernels/dynamic_stitch_op.cc, data_flow_ops.cc shape function), with the
 * gradient of data_flow_grad.py (_DynamicStitchGrads: indices get none, data[i] gets
 * gather(grad, indices[i])). TF1 graphs use DynamicStitch in the gradient of Mean and
 * other reductions (math_grad._ReductionGradAssist), so imported training graphs need it.
 *
 *   merged[indices[m][i, ...], ...] = data[m][i, ..., ...]
 * inputs: N int32 index tensors, then N data tensors; attrs N, T. Output shape
 * [max index + 1] + data[0].shape[indices[0].rank:]. Later (m, i) win where indices
 * repeat; rows no index names are zero (TF leaves them unspecified).
 */
#include "kernels/kernel.h"
#include "vigil/ops.h"
#include <stdio.h>

static vg_code shape_stitch(vg_op *op, vg_status *st) {
    int n2 = vg_op_num_inputs(op);
    if (n2 % 2 != 0 || n2 < 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "DynamicStitch takes N indices then N data inputs, got %d inputs",
                             n2);
    int n = n2 / 2;
    int64_t nattr = n;
    vg__op_set_default_attr_int(op, "N", n);
    if (vg_op_attr_int(op, "N", &nattr) && nattr != n)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "attr N is %lld but there are %d index inputs", (long long)nattr, n);
    vg_dtype dt = vg__op_input_dtype(op, n), t = dt;
    vg__op_set_default_attr_type(op, "T", dt);
    if (vg_op_attr_type_(op, "T", &t) && t != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "data is %s but attr T is %s", vg_dtype_name(dt), vg_dtype_name(t));
    if (dt == VG_STRING || dt == VG_RESOURCE)
        return vg_status_set(st, VG_UNIMPLEMENTED, "DynamicStitch of %s is not supported by vigil", vg_dtype_name(dt));
    bool all_const = true;
    int64_t max_index = -1;
    for (int i = 0; i < n; i++) {
        if (vg__op_input_dtype(op, i) != VG_INT32)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "indices[%d] must be int32, got %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)));
        if (vg__op_input_dtype(op, n + i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "data[%d] is %s, data[0] is %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, n + i)), vg_dtype_name(dt));
        const vg_tensor *c = vg__op_const_input(op, i);
        if (!c) {
            all_const = false;
            continue;
        }
        const int32_t *ix = vg_tensor_data(c);
        for (int64_t k = 0; k < vg_tensor_num_elements(c); k++)
            if (ix[k] > max_index) max_index = ix[k];
    }
    vg_shape i0 = vg__op_input_shape(op, 0), d0 = vg__op_input_shape(op, n), out = vg_shape_unknown();
    if (i0.ndims >= 0 && d0.ndims >= 0) {
        if (d0.ndims < i0.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "data[0] has rank %d, less than indices[0]'s %d", d0.ndims,
                                 i0.ndims);
        out.ndims = 1 + d0.ndims - i0.ndims;
        if (out.ndims > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "DynamicStitch result rank too large");
        out.dims[0] = all_const ? max_index + 1 : -1;
        for (int k = i0.ndims; k < d0.ndims; k++) out.dims[1 + k - i0.ndims] = d0.dims[k];
    }
    return vg__op_set_single_output(op, dt, out);
}

static vg_code kernel_stitch(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx) / 2;
    vg_tensor *d0 = vg__kctx_input(ctx, n);
    vg_tensor *i0 = vg__kctx_input(ctx, 0);
    int r0 = vg_tensor_ndims(i0);
    if (vg_tensor_ndims(d0) < r0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "data[0] has rank %d, less than indices[0]'s %d",
                             vg_tensor_ndims(d0), r0);
    /* slice = data[0].shape[indices[0].rank:], the same for every data[i] */
    int srank = vg_tensor_ndims(d0) - r0;
    const int64_t *sdims = vg_tensor_dims(d0) + r0;
    int64_t slice = 1;
    for (int k = 0; k < srank; k++) slice *= sdims[k];
    int64_t max_index = -1;
    for (int i = 0; i < n; i++) {
        vg_tensor *ix = vg__kctx_input(ctx, i), *d = vg__kctx_input(ctx, n + i);
        int r = vg_tensor_ndims(ix);
        bool ok = vg_tensor_ndims(d) == r + srank;
        for (int k = 0; ok && k < r; k++) ok = vg_tensor_dim(d, k) == vg_tensor_dim(ix, k);
        for (int k = 0; ok && k < srank; k++) ok = vg_tensor_dim(d, r + k) == sdims[k];
        if (!ok) {
            char a[128], b[128];
            vg_shape ds = vg_tensor_shape(d), is = vg_tensor_shape(ix);
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "data[%d].shape = %s does not start with indices[%d].shape = %s and end with the "
                                 "slice shape of data[0]",
                                 i, vg_shape_str(&ds, a, sizeof a), i, vg_shape_str(&is, b, sizeof b));
        }
        const int32_t *p = vg_tensor_data(ix);
        for (int64_t k = 0; k < vg_tensor_num_elements(ix); k++) {
            if (p[k] < 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "indices[%d][%lld] = %d is negative", i, (long long)k, p[k]);
            if (p[k] > max_index) max_index = p[k];
        }
    }
    int64_t dims[VG_MAX_DIMS];
    dims[0] = max_index + 1;
    for (int k = 0; k < srank; k++) dims[1 + k] = sdims[k];
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(d0), dims, 1 + srank, &out);
    if (c != VG_OK) return c;
    size_t row = (size_t)slice * vg_dtype_size(vg_tensor_dtype(d0));
    uint8_t *o = vg_tensor_data(out);
    memset(o, 0, row * (size_t)dims[0]);
    for (int i = 0; i < n; i++) {
        vg_tensor *ix = vg__kctx_input(ctx, i);
        const uint8_t *d = vg_tensor_data(vg__kctx_input(ctx, n + i));
        const int32_t *p = vg_tensor_data(ix);
        for (int64_t k = 0; k < vg_tensor_num_elements(ix); k++)
            if (row) memcpy(o + (size_t)p[k] * row, d + (size_t)k * row, row);
    }
    return VG_OK;
}

/* _DynamicStitchGrads: no gradient for the indices; data[i] gets gather(grad, indices[i]). */
static vg_code grad_stitch(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int n = vg_op_num_inputs(op) / 2;
    for (int i = 0; i < n; i++) {
        dx[i] = (vg_output){NULL, 0};
        dx[n + i] = vg_gather(g, dy[0], vg_op_input(op, i), 0, NULL);
    }
    return vg_graph_status(g, NULL);
}

const vg__op_def vg__ops_data_flow[] = {
    {"DynamicStitch", 2, -1, 0, 0, shape_stitch, kernel_stitch, grad_stitch},
    {"ParallelDynamicStitch", 2, -1, 0, 0, shape_stitch, kernel_stitch, grad_stitch},
    {0},
};
