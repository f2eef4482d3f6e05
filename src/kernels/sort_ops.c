/*
 * sort_ops.c - TopKV2(input, k; sorted) and InTopKV2(predictions, targets, k) as TF 1.15's
 * topk_op.cc / in_topk_op.cc. TopKV2 works on the last dim; equal values keep the
 * lower index first (TF's stable order); indices are int32. InTopKV2: target t of row b
 * is in the top k when fewer than k classes have a strictly larger prediction; a
 * non-finite prediction in the row, or a target out of range, gives false.
 * Gradient of TopKV2: the values' gradient is scattered back to the input positions
 * (TF's _TopKGrad uses ScatterNd; here the same sum is built as
 * Sum(OneHot(indices, n) * ExpandDims(dy, -1), axis -2), which needs the last dim n
 * known at build time). InTopKV2 is not differentiable.
 */
#include "kernels/ew_internal.h"
#include <math.h>
#include <stdlib.h>

static bool read_scalar_int(const vg_tensor *t, int64_t *v) {
    if (!t || vg_tensor_num_elements(t) != 1 || vg_tensor_ndims(t) != 0) return false;
    if (vg_tensor_dtype(t) == VG_INT32) *v = *(const int32_t *)vg_tensor_data(t);
    else if (vg_tensor_dtype(t) == VG_INT64) *v = *(const int64_t *)vg_tensor_data(t);
    else return false;
    return true;
}

static vg_code shape_topk(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE && dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "TopKV2: input has dtype %s, which is not supported", vg_dtype_name(dt));
    if (vg__op_input_dtype(op, 1) != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "TopKV2: k must be int32");
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_bool(op, "sorted", true);
    vg_shape in = vg__op_input_shape(op, 0), out = in;
    if (in.ndims == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be >= 1-D, got shape []");
    int64_t k;
    if (in.ndims > 0) {
        if (read_scalar_int(vg__op_const_input(op, 1), &k)) {
            if (k < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)k);
            int64_t n = in.dims[in.ndims - 1];
            if (n >= 0 && n < k)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "input must have at least k columns. Had %lld, needed %lld",
                                     (long long)n, (long long)k);
            out.dims[in.ndims - 1] = k;
        } else {
            out.dims[in.ndims - 1] = -1;
        }
    }
    vg__op_set_num_outputs(op, 2);
    vg__op_set_output(op, 0, dt, out);
    vg__op_set_output(op, 1, VG_INT32, out);
    return VG_OK;
}

typedef struct topk_ctx { const void *row; vg_dtype dt; } topk_ctx;
static _Thread_local topk_ctx g_tk;

static double val_at(int32_t i) {
    switch (g_tk.dt) {
    case VG_FLOAT: return ((const float *)g_tk.row)[i];
    case VG_DOUBLE: return ((const double *)g_tk.row)[i];
    case VG_INT32: return ((const int32_t *)g_tk.row)[i];
    default: return (double)((const int64_t *)g_tk.row)[i];
    }
}

/* descending by value, then ascending by index; NaN sorts as TF's std::greater
 * leaves it (treated as smaller than everything here, deterministic). */
static int cmp_desc(const void *a, const void *b) {
    int32_t ia = *(const int32_t *)a, ib = *(const int32_t *)b;
    double va = val_at(ia), vb = val_at(ib);
    bool na = isnan(va), nb = isnan(vb);
    if (na != nb) return na ? 1 : -1;
    if (!na && va != vb) return va > vb ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

static vg_code kernel_topk(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t k;
    if (!read_scalar_int(vg__kctx_input(ctx, 1), &k)) return vg_status_set(st, VG_INVALID_ARGUMENT, "k must be a scalar");
    int r = vg_tensor_ndims(x);
    if (r < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be >= 1-D, got shape []");
    if (k < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)k);
    int64_t n = vg_tensor_dim(x, r - 1);
    if (n < k)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must have at least k columns. Had %lld, needed %lld",
                             (long long)n, (long long)k);
    if (n > INT32_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "TopKV2: last dim too large for int32 indices");
    int64_t dims[VG_MAX_DIMS];
    memcpy(dims, vg_tensor_dims(x), sizeof(int64_t) * (size_t)r);
    dims[r - 1] = k;
    vg_tensor *ov, *oi;
    vg_dtype dt = vg_tensor_dtype(x);
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, dims, r, &ov);
    if (c == VG_OK) c = vg__kctx_alloc_output(ctx, 1, VG_INT32, dims, r, &oi);
    if (c != VG_OK) return c;
    int64_t rows = n ? vg_tensor_num_elements(x) / n : 0;
    if (k == 0 || rows == 0) return VG_OK;
    int32_t *perm = vg__malloc(sizeof(int32_t) * (size_t)n);
    if (!perm) return VG_OOM(st, "TopKV2 scratch");
    size_t esz = vg_dtype_size(dt);
    for (int64_t b = 0; b < rows; b++) {
        g_tk.row = (const char *)vg_tensor_data(x) + (size_t)(b * n) * esz;
        g_tk.dt = dt;
        for (int32_t i = 0; i < n; i++) perm[i] = i;
        qsort(perm, (size_t)n, sizeof(int32_t), cmp_desc);
        for (int64_t j = 0; j < k; j++) {
            memcpy((char *)vg_tensor_data(ov) + (size_t)(b * k + j) * esz, (const char *)g_tk.row + (size_t)perm[j] * esz,
                   esz);
            ((int32_t *)vg_tensor_data(oi))[b * k + j] = perm[j];
        }
    }
    vg__free(perm);
    return VG_OK;
}

static vg_code grad_topk(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_shape in = vg_output_shape(vg_op_input(op, 0));
    if (in.ndims < 1 || in.dims[in.ndims - 1] < 0 || in.dims[in.ndims - 1] > INT32_MAX)
        return vg_graph_set_error(g, VG_UNIMPLEMENTED,
                                  "TopKV2 gradient needs the last dimension of '%s' known at graph construction",
                                  vg_op_name(op));
    int depth = (int)in.dims[in.ndims - 1];
    vg_output oh = vg_one_hot(g, vg_out(op, 1), depth, 1.0f, 0.0f, "OneHot");
    if (oh.op && vg_output_dtype(dy[0]) != VG_FLOAT) oh = vg_cast(g, oh, vg_output_dtype(dy[0]), "Cast");
    vg_output prod = vg_mul(g, oh, vg_expand_dims(g, dy[0], -1, "ExpandDims"), "mul");
    int32_t ax = -2;
    dx[0] = vg_reduce_sum(g, prod, &ax, 1, false, "Sum");
    return vg_graph_status(g, NULL);
}

/* InTopKV2(predictions [batch, classes] float, targets [batch] int, k scalar int) */
static vg_code shape_in_topk(vg_op *op, vg_status *st) {
    vg_dtype pt = vg__op_input_dtype(op, 0), tt = vg__op_input_dtype(op, 1), kt = vg__op_input_dtype(op, 2);
    if (pt != VG_FLOAT)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "InTopKV2: predictions must be float, got %s", vg_dtype_name(pt));
    if ((tt != VG_INT32 && tt != VG_INT64) || kt != tt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "InTopKV2: targets and k must be int32 or int64 of one dtype");
    vg_shape p = vg__op_input_shape(op, 0), t = vg__op_input_shape(op, 1);
    if (p.ndims >= 0 && p.ndims != 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "predictions must be 2-dimensional, got rank %d", p.ndims);
    if (t.ndims >= 0 && t.ndims != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "targets must be 1-dimensional, got rank %d", t.ndims);
    int64_t b = p.ndims == 2 ? p.dims[0] : -1;
    if (t.ndims == 1 && t.dims[0] >= 0) {
        if (b >= 0 && b != t.dims[0])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "First dimension of predictions %lld must match length of targets %lld",
                                 (long long)b, (long long)t.dims[0]);
        b = t.dims[0];
    }
    vg__op_set_default_attr_type(op, "T", tt);
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_BOOL, vg_shape_make(&b, 1));
    return VG_OK;
}

static vg_code kernel_in_topk(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *p = vg__kctx_input(ctx, 0), *t = vg__kctx_input(ctx, 1);
    int64_t k;
    if (!read_scalar_int(vg__kctx_input(ctx, 2), &k)) return vg_status_set(st, VG_INVALID_ARGUMENT, "k must be a scalar");
    if (vg_tensor_ndims(p) != 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "predictions must be 2-dimensional");
    if (vg_tensor_ndims(t) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "targets must be 1-dimensional");
    int64_t nb = vg_tensor_dim(p, 0), nc = vg_tensor_dim(p, 1);
    if (vg_tensor_dim(t, 0) != nb)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "First dimension of predictions %lld must match length of targets %lld",
                             (long long)nb, (long long)vg_tensor_dim(t, 0));
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_BOOL, &nb, 1, &o);
    if (c != VG_OK) return c;
    const float *pv = vg_tensor_data(p);
    uint8_t *ov = vg_tensor_data(o);
    for (int64_t b = 0; b < nb; b++) {
        int64_t target = vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[b]
                                                       : ((const int64_t *)vg_tensor_data(t))[b];
        float tp = (target >= 0 && target < nc) ? pv[b * nc + target] : NAN;
        bool cannot_say = !isfinite(tp);
        int64_t more = 0;
        for (int64_t i = 0; !cannot_say && i < nc; i++) {
            float v = pv[b * nc + i];
            if (!isfinite(v)) cannot_say = true;
            else if (v > tp && ++more > k) break;
        }
        ov[b] = !cannot_say && more < k;
    }
    return VG_OK;
}

vg_op *vg_top_k(vg_graph *g, vg_output input, int k, bool sorted, const char *name) {
    vg_output kc = vg_const_i32(g, k, "TopKV2/k");
    vg_op_builder *b = vg_op_builder_new(g, "TopKV2", name);
    if (!b) return NULL;
    vg_op_builder_add_input(b, input);
    vg_op_builder_add_input(b, kc);
    vg_op_builder_set_attr_bool(b, "sorted", sorted);
    return vg_op_builder_finish(b);
}

vg_output vg_in_top_k(vg_graph *g, vg_output predictions, vg_output targets, int k, const char *name) {
    vg_output kc = vg_output_dtype(targets) == VG_INT64 ? vg_const_i64(g, k, "in_top_k/InTopKV2/k")
                                                        : vg_const_i32(g, k, "in_top_k/InTopKV2/k");
    vg_op_builder *b = vg_op_builder_new(g, "InTopKV2", name ? name : "in_top_k/InTopKV2");
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_add_input(b, predictions);
    vg_op_builder_add_input(b, targets);
    vg_op_builder_add_input(b, kc);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_sort[] = {
    {"TopKV2", 2, 2, 0, 0, shape_topk, kernel_topk, grad_topk},
    {"InTopKV2", 3, 3, VG__OP_NOT_DIFFERENTIABLE, 0, shape_in_topk, kernel_in_topk, NULL},
    {0},
};
