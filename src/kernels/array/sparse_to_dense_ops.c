/*
 * sparse_to_dense_ops.c - SparseToDense(sparse_indices, output_shape, sparse_values,
 * default_value) as TF 1.15's sparse_to_dense_op.cc: a dense tensor of output_shape
 * filled with default_value, with sparse_values[i] (or the one scalar value) placed at
 * sparse_indices[i]. Indices are a scalar, a vector (one index per value, for a 1-D
 * output) or an [N, rank] matrix, int32/int64. validate_indices (default true) checks
 * that the indices are in bounds, in lexicographic order and not repeated; out-of-range
 * indices are INVALID_ARGUMENT even without it (never a write out of bounds).
 * Gradient as sparse_grad.py _SparseToDenseGrad: values get GatherNd(grad, indices)
 * (summed for a scalar value), default_value gets sum(grad) - sum(values' gradient).
 */
#include "kernels/ew_internal.h"
#include <stdio.h>
#include <string.h>

static int64_t ix(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[i]
                                          : ((const int64_t *)vg_tensor_data(t))[i];
}

static bool is_index(vg_dtype dt) { return dt == VG_INT32 || dt == VG_INT64; }

static vg_code shape_std(vg_op *op, vg_status *st) {
    vg_dtype it = vg__op_input_dtype(op, 0), st_dt = vg__op_input_dtype(op, 1);
    vg_dtype vt = vg__op_input_dtype(op, 2), dt = vg__op_input_dtype(op, 3);
    if (!is_index(it) || st_dt != it)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "SparseToDense: sparse_indices and output_shape must both be int32 or int64 (got %s, %s)",
                             vg_dtype_name(it), vg_dtype_name(st_dt));
    if (vt != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "SparseToDense: sparse_values (%s) and default_value (%s) must have the same dtype",
                             vg_dtype_name(vt), vg_dtype_name(dt));
    if (vg_dtype_size(vt) == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "SparseToDense: unsupported dtype %s", vg_dtype_name(vt));
    vg_shape is = vg__op_input_shape(op, 0), ss = vg__op_input_shape(op, 1);
    vg_shape vs = vg__op_input_shape(op, 2), ds = vg__op_input_shape(op, 3);
    if (is.ndims > 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "SparseToDense: sparse_indices should be a scalar, vector, or matrix, got rank %d",
                             is.ndims);
    if (vg__shape_need_rank(&ss, 1, "SparseToDense: output_shape should be a vector, got rank %d", st)) return st->code;
    if (vs.ndims > 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "SparseToDense: sparse_values should be a scalar or vector, got rank %d",
                             vs.ndims);
    if (ds.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "SparseToDense: default_value should be a scalar, got rank %d", ds.ndims);
    vg_shape out = {.ndims = -1};
    const vg_tensor *shp = vg__op_const_input(op, 1);
    if (shp && vg_tensor_ndims(shp) == 1 && vg_tensor_dim(shp, 0) <= VG_MAX_DIMS) {
        out.ndims = (int)vg_tensor_dim(shp, 0);
        for (int i = 0; i < out.ndims; i++) out.dims[i] = ix(shp, i);
    } else if (ss.ndims == 1 && ss.dims[0] >= 0 && ss.dims[0] <= VG_MAX_DIMS) {
        out.ndims = (int)ss.dims[0];
        for (int i = 0; i < out.ndims; i++) out.dims[i] = -1;
    }
    vg__op_set_default_attr_type(op, "T", vt);
    vg__op_set_default_attr_type(op, "Tindices", it);
    vg__op_set_default_attr_bool(op, "validate_indices", true);
    return vg__op_set_single_output(op, vt, out);
}

static void fmt_index(char *buf, size_t len, const int64_t *v, int n) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)v[i]);
}

static vg_code kernel_std(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    vg_tensor *ind = vg__kctx_input(ctx, 0), *shp = vg__kctx_input(ctx, 1);
    vg_tensor *vals = vg__kctx_input(ctx, 2), *def = vg__kctx_input(ctx, 3);
    if (vg_tensor_ndims(ind) > 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "sparse_indices should be a scalar, vector, or matrix, got shape rank %d",
                             vg_tensor_ndims(ind));
    if (vg_tensor_ndims(shp) != 1 || vg_tensor_dim(shp, 0) > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "output_shape should be a vector (of at most %d entries)", VG_MAX_DIMS);
    int64_t num_elems = vg_tensor_ndims(ind) > 0 ? vg_tensor_dim(ind, 0) : 1;
    int64_t num_dims = vg_tensor_ndims(ind) > 1 ? vg_tensor_dim(ind, 1) : 1;
    bool scalar_value = vg_tensor_ndims(vals) == 0;
    if (!scalar_value && (vg_tensor_ndims(vals) != 1 || vg_tensor_dim(vals, 0) != num_elems))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "sparse_values has incorrect shape (rank %d, %lld values), should be [] or [%lld]",
                             vg_tensor_ndims(vals), (long long)vg_tensor_num_elements(vals), (long long)num_elems);
    if (vg_tensor_ndims(def) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "default_value should be a scalar.");
    int rank = (int)vg_tensor_dim(shp, 0);
    if (num_dims != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "sparse_indices has %lld columns but output_shape has %d dimensions", (long long)num_dims, rank);
    int64_t dims[VG_MAX_DIMS], strides[VG_MAX_DIMS];
    for (int i = 0; i < rank; i++) {
        dims[i] = ix(shp, i);
        if (dims[i] < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "output_shape has a negative dimension %lld", (long long)dims[i]);
    }
    int64_t nz = 1; /* the strides below: the non-zero dims must multiply within int64 */
    for (int i = 0; i < rank; i++)
        if (dims[i] && __builtin_mul_overflow(nz, dims[i], &nz))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "output_shape has more than 2**63 - 1 elements");
    int64_t acc = 1;
    for (int i = rank - 1; i >= 0; i--) strides[i] = acc, acc *= dims[i];
    bool validate = true;
    vg_op_attr_bool(op, "validate_indices", &validate);
    vg_dtype dt = vg_tensor_dtype(vals);
    size_t esz = vg_dtype_size(dt);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, dims, rank, &o);
    if (c != VG_OK) return c;
    char *dst = vg_tensor_data(o);
    const char *dv = vg_tensor_data(def), *sv = vg_tensor_data(vals);
    for (int64_t k = 0; k < acc; k++) memcpy(dst + (size_t)k * esz, dv, esz);
    int64_t prev[VG_MAX_DIMS], cur[VG_MAX_DIMS];
    char b1[256], b2[256];
    for (int64_t i = 0; i < num_elems; i++) {
        int64_t off = 0;
        for (int d = 0; d < rank; d++) cur[d] = ix(ind, i * num_dims + d);
        for (int d = 0; d < rank; d++) {
            if (cur[d] < 0 || cur[d] >= dims[d]) {
                fmt_index(b1, sizeof b1, cur, rank);
                fmt_index(b2, sizeof b2, dims, rank);
                return vg_status_set(st, VG_INVALID_ARGUMENT, "indices[%lld] = [%s] is out of bounds: need 0 <= index < [%s]",
                                     (long long)i, b1, b2);
            }
            off += cur[d] * strides[d];
        }
        if (validate && i > 0) {
            int cmp = 0;
            for (int d = 0; d < rank && !cmp; d++) cmp = cur[d] < prev[d] ? -1 : cur[d] > prev[d] ? 1 : 0;
            if (cmp <= 0) {
                fmt_index(b1, sizeof b1, cur, rank);
                return vg_status_set(st, VG_INVALID_ARGUMENT, "indices[%lld] = [%s] is %s", (long long)i, b1,
                                     cmp < 0 ? "out of order" : "repeated");
            }
        }
        memcpy(prev, cur, sizeof(int64_t) * (size_t)rank);
        memcpy(dst + (size_t)off * esz, sv + (scalar_value ? 0 : (size_t)i * esz), esz);
    }
    return VG_OK;
}

static vg_code grad_std(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output none = {NULL, 0};
    dx[0] = dx[1] = none;
    vg_output values_grad = vg_gather_nd(g, dy[0], vg_op_input(op, 0), NULL);
    if (vg_output_shape(vg_op_input(op, 2)).ndims == 0) values_grad = vg_reduce_sum(g, values_grad, NULL, -1, false, NULL);
    dx[2] = values_grad;
    dx[3] = vg_sub(g, vg_reduce_sum(g, dy[0], NULL, -1, false, NULL), vg_reduce_sum(g, values_grad, NULL, -1, false, NULL),
                   NULL);
    return vg_graph_status(g, NULL);
}

vg_output vg_sparse_to_dense(vg_graph *g, vg_output sparse_indices, vg_output output_shape, vg_output sparse_values,
                             vg_output default_value, bool validate_indices, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(
        g, "SparseToDense", name, NULL, (vg_output[]){sparse_indices, output_shape, sparse_values, default_value}, 4);
    vg_op_builder_set_attr_bool(b, "validate_indices", validate_indices);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_sparse_to_dense[] = {
    {"SparseToDense", 4, 4, 0, 0, shape_std, kernel_std, grad_std},
    {0},
};
