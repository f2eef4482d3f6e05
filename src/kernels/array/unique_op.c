/*
 * unique_op.c - Unique (tf.unique): the distinct values of a 1-D tensor in order of
 * first occurrence (y) and, for each element, the index of its value in y (idx,
 * out_idx int32 or int64). int32, int64, float, double. Floats compare with ==, so
 * -0.0 and 0.0 are one value and every NaN is its own. Not differentiable (TF
 * registers no gradient). The optimizers use it to sum the rows of a sparse gradient
 * that share an index before a SparseApply* op (_deduplicate_indexed_slices).
 */
#include "kernels/kernel.h"
#include "vigil/ops_ext.h"
#include <math.h>
#include <stdlib.h>

static vg_code shape_unique(vg_op *op, vg_status *st) {
    vg_dtype t = vg__op_input_dtype(op, 0);
    if (t != VG_INT32 && t != VG_INT64 && t != VG_FLOAT && t != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Unique supports int32, int64, float and double, not %s",
                             vg_dtype_name(t));
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims >= 0 && s.ndims != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "unique expects a 1D vector (op '%s' got rank %d)",
                             vg_op_name(op), s.ndims);
    vg_dtype oi = VG_INT32;
    if (!vg_op_attr_type_(op, "out_idx", &oi)) vg__op_set_default_attr_type(op, "out_idx", VG_INT32);
    if (oi != VG_INT32 && oi != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Unique: out_idx must be int32 or int64, not %s",
                             vg_dtype_name(oi));
    vg__op_set_default_attr_type(op, "T", t);
    int64_t unk = -1;
    return vg__op_set_two_outputs(op, t, vg_shape_make(&unk, 1), oi, s.ndims == 1 ? s : vg_shape_make(&unk, 1));
}

typedef struct item {
    double f;
    int64_t i;
    int64_t pos;
} item;

static bool is_float(vg_dtype t) { return t == VG_FLOAT || t == VG_DOUBLE; }

static int cmp_int(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->i != y->i) return x->i < y->i ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_float(const void *a, const void *b) {
    const item *x = a, *y = b;
    bool nx = isnan(x->f), ny = isnan(y->f);
    if (nx != ny) return nx ? 1 : -1;
    if (!nx && x->f != y->f) return x->f < y->f ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static double elem_f(const vg_tensor *t, int64_t k) {
    return vg_tensor_dtype(t) == VG_FLOAT ? (double)((const float *)vg_tensor_data(t))[k]
                                          : ((const double *)vg_tensor_data(t))[k];
}

static int64_t elem_i(const vg_tensor *t, int64_t k) {
    return vg_tensor_dtype(t) == VG_INT32 ? (int64_t)((const int32_t *)vg_tensor_data(t))[k]
                                          : ((const int64_t *)vg_tensor_data(t))[k];
}

static vg_code kernel_unique(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    if (vg_tensor_ndims(x) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "unique expects a 1D vector, got rank %d", vg_tensor_ndims(x));
    vg_dtype t = vg_tensor_dtype(x), oi = VG_INT32;
    vg_op_attr_type_(vg__kctx_op(ctx), "out_idx", &oi);
    int64_t n = vg_tensor_dim(x, 0);
    if (oi == VG_INT32 && n > INT32_MAX)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Unique: %lld elements do not fit out_idx int32", (long long)n);
    size_t cnt = (size_t)(n > 0 ? n : 1);
    item *it = vg__malloc(sizeof(item) * cnt);
    int64_t *grp = vg__malloc(sizeof(int64_t) * cnt), *gid = vg__malloc(sizeof(int64_t) * cnt);
    unsigned char *first = vg__calloc(cnt, 1);
    vg_code rc = VG_OK;
    if (!it || !grp || !gid || !first) {
        rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in Unique");
        goto done;
    }
    bool fl = is_float(t);
    for (int64_t k = 0; k < n; k++) {
        it[k].pos = k;
        if (fl) it[k].f = elem_f(x, k);
        else it[k].i = elem_i(x, k);
    }
    if (n > 1) qsort(it, (size_t)n, sizeof(item), fl ? cmp_float : cmp_int);
    /* groups of equal values (each NaN alone); the first of a group is its first
     * occurrence (ties are ordered by position) */
    int64_t ngroups = 0;
    for (int64_t k = 0; k < n; k++) {
        bool same = k > 0 && (fl ? (!isnan(it[k].f) && it[k].f == it[k - 1].f) : it[k].i == it[k - 1].i);
        if (!same) {
            ngroups++;
            first[it[k].pos] = 1;
        }
        grp[it[k].pos] = ngroups - 1;
    }
    vg_tensor *y = NULL, *idx = NULL;
    int64_t ny = ngroups;
    if (vg__kctx_alloc_output(ctx, 0, t, &ny, 1, &y) || vg__kctx_alloc_output(ctx, 1, oi, &n, 1, &idx)) {
        rc = st->code;
        goto done;
    }
    size_t es = vg_dtype_size(t);
    const char *xs = vg_tensor_data(x);
    char *ys = vg_tensor_data(y);
    int64_t next = 0;
    for (int64_t k = 0; k < n; k++) {
        if (first[k]) {
            gid[grp[k]] = next;
            memcpy(ys + (size_t)next * es, xs + (size_t)k * es, es);
            next++;
        }
        int64_t id = gid[grp[k]];
        if (oi == VG_INT32) ((int32_t *)vg_tensor_data(idx))[k] = (int32_t)id;
        else ((int64_t *)vg_tensor_data(idx))[k] = id;
    }
done:
    vg__free(it);
    vg__free(grp);
    vg__free(gid);
    vg__free(first);
    return rc;
}

vg_op *vg_unique(vg_graph *g, vg_output x, vg_dtype out_idx, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Unique", name, NULL, (vg_output[]){x}, 1);
    if (x.op) vg_op_builder_set_attr_type(b, "T", vg_output_dtype(x));
    vg_op_builder_set_attr_type(b, "out_idx", out_idx);
    return vg_op_builder_finish(b);
}

const vg__op_def vg__ops_unique[] = {
    {"Unique", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_unique, kernel_unique, NULL},
    {0},
};
