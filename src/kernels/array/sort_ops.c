/*
 * sort_ops.c - TopKV2(input, k; sorted) and InTopKV2(predictions, targets, k) as TF 1.15's
 * topk_op.cc / in_topk_op.cc. TopKV2 works on the last dim; equal values keep the
 * lower index first (TF's stable order); indices are int32. InTopKV2: target t of row b
 * is in the top k when fewer than k classes have a strictly larger prediction; a
 * non-finite prediction in the row, or a target out of range, gives false.
 * Gradient of TopKV2 as nn_grad.py's _TopKGrad: the values' gradient scattered back to
 * the input positions with ScatterNd (constant offsets where the shapes are static).
 * InTopKV2 is not differentiable.
 */
#include "kernels/ew_internal.h"
#include <math.h>
#include <stdlib.h>

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
        if (vg__int_scalar(vg__op_const_input(op, 1), false, &k)) {
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
    return vg__op_set_two_outputs(op, dt, out, VG_INT32, out);
}

/* Row order: descending by value, then ascending by index; NaN sorts as TF's
 * std::greater leaves it (treated as smaller than everything here, deterministic).
 * Each row is sorted as (value, index) pairs of its own type: insertion sort for short
 * rows (the DNC's allocation sorts rows of 16), a bottom-up merge sort (stable, so the
 * index order of equal values stays) otherwise; only the first k are written. */
#define TOPK_INSERTION_MAX 32
#define TOPK_BEFORE(a, b, ISNAN) (!ISNAN((a).v) && (ISNAN((b).v) || (a).v > (b).v))
#define TOPK_NOTNAN(v) 0
#define TOPK_DEF(T, SUF, ISNAN)                                                                                     \
    typedef struct topk_pair_##SUF { T v; int32_t i; } topk_pair_##SUF;                                         \
    static void topk_rows_##SUF(const T *x, T *ov, int32_t *oi, int64_t rows, int64_t n, int64_t k,             \
                                topk_pair_##SUF *p, topk_pair_##SUF *tmp) {                                     \
        for (int64_t r = 0; r < rows; r++) {                                                                    \
            const T *row = x + r * n;                                                                           \
            if (n <= TOPK_INSERTION_MAX) {                                                                      \
                for (int64_t j = 0; j < n; j++) {                                                               \
                    topk_pair_##SUF e = {row[j], (int32_t)j};                                                   \
                    int64_t q = j;                                                                              \
                    while (q > 0 && TOPK_BEFORE(e, p[q - 1], ISNAN)) { p[q] = p[q - 1]; q--; }                          \
                    p[q] = e;                                                                                   \
                }                                                                                               \
            } else {                                                                                            \
                for (int64_t j = 0; j < n; j++) p[j] = (topk_pair_##SUF){row[j], (int32_t)j};                   \
                topk_pair_##SUF *src = p, *dst = tmp;                                                           \
                for (int64_t w = 1; w < n; w *= 2) {                                                            \
                    for (int64_t lo = 0; lo < n; lo += 2 * w) {                                                 \
                        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;            \
                        int64_t a = lo, b = mid, o = lo;                                                        \
                        while (a < mid && b < hi) dst[o++] = TOPK_BEFORE(src[b], src[a], ISNAN) ? src[b++] : src[a++]; \
                        while (a < mid) dst[o++] = src[a++];                                                    \
                        while (b < hi) dst[o++] = src[b++];                                                     \
                    }                                                                                           \
                    topk_pair_##SUF *t = src; src = dst; dst = t;                                               \
                }                                                                                               \
                if (src != p) memcpy(p, src, sizeof *p * (size_t)n);                                            \
            }                                                                                                   \
            for (int64_t j = 0; j < k; j++) ov[r * k + j] = p[j].v, oi[r * k + j] = p[j].i;                     \
        }                                                                                                       \
    }
TOPK_DEF(float, f32, isnan)
TOPK_DEF(double, f64, isnan)
TOPK_DEF(int32_t, i32, TOPK_NOTNAN)
TOPK_DEF(int64_t, i64, TOPK_NOTNAN)

static vg_code kernel_topk(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t k;
    if (!vg__int_scalar(vg__kctx_input(ctx, 1), false, &k)) return vg_status_set(st, VG_INVALID_ARGUMENT, "k must be a scalar");
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
    /* scratch: two arrays of n pairs (16 bytes each at most), on the stack for short rows */
    _Alignas(16) char local[2 * TOPK_INSERTION_MAX * 16];
    size_t pair = 16, need = 2 * (size_t)n * pair;
    char *buf = need <= sizeof local ? local : vg__malloc(need);
    if (!buf) return VG_OOM(st, "TopKV2 scratch");
    void *p = buf, *tmp = buf + (size_t)n * pair;
    const void *xv = vg_tensor_data(x);
    void *vv = vg_tensor_data(ov);
    int32_t *iv = vg_tensor_data(oi);
    switch (dt) {
    case VG_FLOAT: topk_rows_f32(xv, vv, iv, rows, n, k, p, tmp); break;
    case VG_DOUBLE: topk_rows_f64(xv, vv, iv, rows, n, k, p, tmp); break;
    case VG_INT32: topk_rows_i32(xv, vv, iv, rows, n, k, p, tmp); break;
    default: topk_rows_i64(xv, vv, iv, rows, n, k, p, tmp); break;
    }
    if (buf != local) vg__free(buf);
    return VG_OK;
}

/* _TopKGrad: the values' gradient scattered to the positions the indices name, in the
 * flattened input (ScatterNd of the row-offset indices), reshaped to the input's shape.
 * Where the shapes are static, the offsets and shapes are constants; otherwise the
 * Python's graph (Shape, Gather of the last dims, Range of the row offsets). */
static vg_code grad_topk(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), idx = vg_out(op, 1);
    vg_shape in = vg_output_shape(x), is = vg_output_shape(idx);
    int64_t total = 1, rows = 1;
    bool fixed = vg_shape_is_fully_defined(&in) && vg_shape_is_fully_defined(&is) && in.ndims >= 1 && is.ndims == in.ndims;
    for (int i = 0; fixed && i < in.ndims; i++) total *= in.dims[i];
    for (int i = 0; fixed && i + 1 < is.ndims; i++) rows *= is.dims[i];
    if (fixed && total <= INT32_MAX && rows > 0) {
        int64_t n = in.dims[in.ndims - 1], k = is.dims[is.ndims - 1];
        vg_tensor *off = vg_tensor_new(VG_INT32, (const int64_t[]){rows, 1}, 2, NULL);
        if (!off) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "TopKV2 gradient: out of memory");
        for (int64_t r = 0; r < rows; r++) ((int32_t *)vg_tensor_data(off))[r] = (int32_t)(r * n);
        vg_output ind_2d = vg_reshape_c(g, idx, (const int64_t[]){rows, k}, 2, "Reshape");
        vg_output ind = vg_add(g, ind_2d, vg_const(g, off, "Cast"), "add");
        vg_tensor_free(off);
        ind = vg_reshape_c(g, ind, (const int64_t[]){-1, 1}, 2, "Reshape_1");
        vg_output upd = vg_reshape_c(g, dy[0], (const int64_t[]){-1}, 1, "Reshape_2");
        vg_output sc = vg_scatter_nd(g, ind, upd, vg_const_i32_vec(g, (const int32_t[]){(int32_t)total}, 1, "Prod"),
                                     "ScatterNd");
        dx[0] = vg_reshape_c(g, sc, in.dims, in.ndims, "Reshape_3");
        return vg_graph_status(g, NULL);
    }
    vg_output in_shape = vg_shape_op(g, x, VG_INT32, "Shape"), ind_shape = vg_shape_op(g, idx, VG_INT32, "Shape_1");
    vg_output one = vg_const_i32(g, 1, "sub/y");
    /* int32 is not supported on GPU hence up-casting (the Python's comment) */
    vg_output ind_lastdim = vg_gather(g, vg_cast(g, ind_shape, VG_INT64, "Cast"),
                                      vg_sub(g, vg_size(g, ind_shape, "Size"), one, "sub"), 0, "GatherV2");
    vg_output ind_2d = vg_reshape(
        g, idx, vg_pack(g, (const vg_output[]){vg_const_i64(g, -1, "stack/0"), ind_lastdim}, 2, 0, "stack"), "Reshape");
    vg_output in_lastdim = vg_gather(g, vg_cast(g, in_shape, VG_INT64, "Cast_1"),
                                     vg_sub(g, vg_size(g, in_shape, "Size_1"), one, "sub_1"), 0, "GatherV2_1");
    vg_strided_slice_masks sm = {0, 0, 0, 0, 1};
    vg_output outerdim = vg_strided_slice_c(g, vg_shape_op(g, ind_2d, VG_INT32, "Shape_2"), (const int32_t[]){0},
                                            (const int32_t[]){1}, NULL, 1, &sm, "strided_slice");
    vg_output rg = vg_range(g, vg_const_i64(g, 0, "range/start"),
                            vg_mul(g, vg_cast(g, outerdim, VG_INT64, "Cast_2"), in_lastdim, "mul"), in_lastdim, "range");
    vg_output ind = vg_reshape_c(
        g, vg_add(g, ind_2d, vg_cast(g, vg_expand_dims(g, rg, -1, "ExpandDims"), VG_INT32, "Cast_3"), "add"),
        (const int64_t[]){-1}, 1, "Reshape_1");
    vg_output sc = vg_scatter_nd(g, vg_expand_dims(g, ind, -1, "ExpandDims_1"),
                                 vg_reshape_c(g, dy[0], (const int64_t[]){-1}, 1, "Reshape_2"),
                                 vg_reshape_c(g, vg_prod(g, in_shape, vg_const_i32(g, 0, "Const"), false, "Prod"),
                                              (const int64_t[]){1}, 1, "Reshape_4"),
                                 "ScatterNd");
    dx[0] = vg_reshape(g, sc, in_shape, "Reshape_3");
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
    if (vg__shape_need_rank(&p, 2, "predictions must be 2-dimensional, got rank %d", st)) return st->code;
    if (vg__shape_need_rank(&t, 1, "targets must be 1-dimensional, got rank %d", st)) return st->code;
    int64_t b = p.ndims == 2 ? p.dims[0] : -1;
    if (t.ndims == 1 && t.dims[0] >= 0) {
        if (b >= 0 && b != t.dims[0])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "First dimension of predictions %lld must match length of targets %lld",
                                 (long long)b, (long long)t.dims[0]);
        b = t.dims[0];
    }
    vg__op_set_default_attr_type(op, "T", tt);
    return vg__op_set_single_output(op, VG_BOOL, vg_shape_make(&b, 1));
}

static vg_code kernel_in_topk(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *p = vg__kctx_input(ctx, 0), *t = vg__kctx_input(ctx, 1);
    int64_t k;
    if (!vg__int_scalar(vg__kctx_input(ctx, 2), false, &k)) return vg_status_set(st, VG_INVALID_ARGUMENT, "k must be a scalar");
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
    vg_op_builder *b = vg__builder_with_inputs(g, "TopKV2", name, NULL, (vg_output[]){input, kc}, 2);
    if (!b) return NULL;
    vg_op_builder_set_attr_bool(b, "sorted", sorted);
    return vg_op_builder_finish(b);
}

vg_output vg_in_top_k(vg_graph *g, vg_output predictions, vg_output targets, int k, const char *name) {
    vg_output kc = vg_output_dtype(targets) == VG_INT64 ? vg_const_i64(g, k, "in_top_k/InTopKV2/k")
                                                        : vg_const_i32(g, k, "in_top_k/InTopKV2/k");
    return vg__build_simple(g, "InTopKV2", name, "in_top_k/InTopKV2", (vg_output[]){predictions, targets, kc}, 3);
}

const vg__op_def vg__ops_sort[] = {
    {"TopKV2", 2, 2, 0, 0, shape_topk, kernel_topk, grad_topk},
    {"InTopKV2", 3, 3, VG__OP_NOT_DIFFERENTIABLE, 0, shape_in_topk, kernel_in_topk, NULL},
    {0},
};
