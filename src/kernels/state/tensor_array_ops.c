/*
 * tensor_array_ops.c - TF1's TensorArray (tensor_array_ops.cc / tensor_array.h):
 * TensorArrayV3 and its Write/Read/Gather/Scatter/Concat/Split/Size/Close/GradV3 ops,
 * with the gradients of tensor_array_grad.py.
 *
 * A TensorArray lives until the end of the run (a step resource, like TF's step
 * container); its handle is a VG_RESOURCE scalar and its "flow" a float scalar that
 * orders the ops (every op that changes the array returns a new flow). As TF:
 * dynamic_size lets a write past the end grow the array; clear_after_read drops an
 * element once read (a second read fails); element_shape (possibly partial) is checked
 * on write and gives the shape of reads of unwritten elements of a gradient array;
 * writing an index twice fails, except in a gradient array, where writes add up
 * (multiple_writes_aggregate). TensorArrayGradV3 makes, once per source, a gradient
 * array of the same size whose unwritten elements read as zeros.
 * Only numeric element types (not strings).
 */
#include "graph/graph_impl.h"
#include "kernels/kernel.h"
#include "vigil/control_flow.h"
#include "vigil/ops.h"
#include <stdio.h>

typedef struct ta_grad {
    char *source;
    struct vg__ta *ta;
} ta_grad;

/* What an array is made with (a gradient array: its forward array's dtype and element
 * shape, not dynamic, cleared after read, aggregating). */
typedef struct ta_kind {
    vg_dtype dtype;
    vg_shape element_shape;
    bool dynamic, clear_after_read, aggregate;
} ta_kind;

typedef struct vg__ta {
    vg_tensor **e;
    bool *written, *cleared;
    vg_shape *shapes;   /* per element: shape of what was written (kept after clear) */
    int size, cap;
    ta_kind k;
    bool closed;
    ta_grad *grads;
    int ngrads;
    char name[96];
} vg__ta;

static void ta_destroy(void *p) {
    vg__ta *t = p;
    for (int i = 0; i < t->size; i++) vg_tensor_free(t->e[i]);
    vg__free(t->e);
    vg__free(t->written);
    vg__free(t->cleared);
    vg__free(t->shapes);
    for (int i = 0; i < t->ngrads; i++) vg__free(t->grads[i].source);
    vg__free(t->grads);
    vg__free(t);
}

static bool ta_resize(vg__ta *t, int n) {
    if (n <= t->cap) {
        t->size = n > t->size ? n : t->size;
        return true;
    }
    int nc = t->cap ? t->cap : 4;
    while (nc < n) nc *= 2;
    vg_tensor **e = vg__realloc(t->e, sizeof(vg_tensor *) * (size_t)t->cap, sizeof(vg_tensor *) * (size_t)nc);
    if (!e) return false;
    t->e = e;
    bool *w = vg__realloc(t->written, (size_t)t->cap, (size_t)nc);
    if (!w) return false;
    t->written = w;
    bool *c = vg__realloc(t->cleared, (size_t)t->cap, (size_t)nc);
    if (!c) return false;
    t->cleared = c;
    vg_shape *s = vg__realloc(t->shapes, sizeof(vg_shape) * (size_t)t->cap, sizeof(vg_shape) * (size_t)nc);
    if (!s) return false;
    t->shapes = s;
    for (int i = t->cap; i < nc; i++) {
        t->e[i] = NULL;
        t->written[i] = t->cleared[i] = false;
        t->shapes[i] = vg_shape_unknown();
    }
    t->cap = nc;
    t->size = n;
    return true;
}

static vg__ta *ta_new(vg__kctx *ctx, int size, const ta_kind *k, vg_status *st) {
    vg__ta *t = vg__calloc(1, sizeof *t);
    if (!t || !ta_resize(t, size)) {
        if (t) ta_destroy(t);
        VG_OOM(st, "TensorArray");
        return NULL;
    }
    t->size = size;
    t->k = *k;
    snprintf(t->name, sizeof t->name, "%s", vg_op_name(vg__kctx_op(ctx)));
    if (vg__kctx_step_resource(ctx, t, ta_destroy) != VG_OK) return NULL;
    return t;
}

static vg__ta *ta_of(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = vg__kctx_handle_input(ctx, 0, "TensorArray");
    if (!t) return NULL;
    if (t->closed) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray %s has already been closed.", t->name);
        return NULL;
    }
    return t;
}

static vg_code out_handle(vg__kctx *ctx, vg__ta *t) {
    vg_tensor *h;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, VG_RESOURCE, NULL, 0, &h);
    if (rc != VG_OK) return rc;
    memcpy(vg_tensor_data(h), &t, sizeof t);
    return VG_OK;
}

static vg_code out_flow(vg__kctx *ctx, int i) {
    vg_tensor *f;
    vg_code rc = vg__kctx_alloc_output(ctx, i, VG_FLOAT, NULL, 0, &f);
    if (rc == VG_OK) *(float *)vg_tensor_data(f) = 0.0f;
    return rc;
}

static bool shape_fits(const vg_shape *want, const vg_tensor *v) {
    if (want->ndims < 0) return true;
    if (want->ndims != vg_tensor_ndims(v)) return false;
    for (int i = 0; i < want->ndims; i++)
        if (want->dims[i] >= 0 && want->dims[i] != vg_tensor_dim(v, i)) return false;
    return true;
}

static int64_t scalar_index(const vg_tensor *t) {
    return vg_tensor_dtype(t) == VG_INT64 ? *(const int64_t *)vg_tensor_data(t) : *(const int32_t *)vg_tensor_data(t);
}

/* Writes v (a new reference is taken) at index i. */
static vg_code ta_write(vg__ta *t, int64_t i, vg_tensor *v, vg_status *st) {
    char a[128], b[128];
    if (vg_tensor_dtype(v) != t->k.dtype)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: Could not write to TensorArray index %lld because the value dtype is %s "
                             "but TensorArray dtype is %s.",
                             t->name, (long long)i, vg_dtype_name(vg_tensor_dtype(v)), vg_dtype_name(t->k.dtype));
    if (i < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray %s: Tried to write to index %lld but it is negative",
                             t->name, (long long)i);
    if (i >= t->size) {
        if (!t->k.dynamic)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "TensorArray %s: Tried to write to index %lld but array is not resizeable and size "
                                 "is: %d",
                                 t->name, (long long)i, t->size);
        if (i >= (1 << 30) || !ta_resize(t, (int)i + 1)) return VG_OOM(st, "TensorArray");
    }
    if (!shape_fits(&t->k.element_shape, v)) {
        vg_shape vs = vg_shape_make(vg_tensor_dims(v), vg_tensor_ndims(v));
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: Could not write to TensorArray index %lld because the value shape is %s "
                             "which is incompatible with the TensorArray's inferred element shape: %s",
                             t->name, (long long)i, vg_shape_str(&vs, a, sizeof a),
                             vg_shape_str(&t->k.element_shape, b, sizeof b));
    }
    if (t->written[i]) {
        if (!t->k.aggregate)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "TensorArray %s: Could not write to TensorArray index %lld because it has already been "
                                 "written to.",
                                 t->name, (long long)i);
        vg_tensor *old = t->e[i];
        if (!old) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray %s: index %lld was already read", t->name, (long long)i);
        if (vg_tensor_num_elements(old) != vg_tensor_num_elements(v) ||
            (t->k.dtype != VG_FLOAT && t->k.dtype != VG_DOUBLE))
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "TensorArray %s: Could not aggregate to TensorArray index %lld: shapes or dtype differ",
                                 t->name, (long long)i);
        vg_tensor *sum = vg_tensor_copy(old, st);
        if (!sum) return st->code;
        int64_t n = vg_tensor_num_elements(v);
        if (t->k.dtype == VG_FLOAT) {
            float *d = vg_tensor_data(sum);
            const float *s = vg_tensor_data(v);
            for (int64_t k = 0; k < n; k++) d[k] += s[k];
        } else {
            double *d = vg_tensor_data(sum);
            const double *s = vg_tensor_data(v);
            for (int64_t k = 0; k < n; k++) d[k] += s[k];
        }
        vg_tensor_free(old);
        t->e[i] = sum;
        return VG_OK;
    }
    t->e[i] = vg_tensor_ref(v);
    t->written[i] = true;
    t->shapes[i] = vg_shape_make(vg_tensor_dims(v), vg_tensor_ndims(v));
    return VG_OK;
}

/* Reads index i: a new reference in *out. */
static vg_code ta_read(vg__ta *t, int64_t i, vg_tensor **out, vg_status *st) {
    *out = NULL;
    if (i < 0 || i >= t->size)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: Tried to read from index %lld but array size is: %d", t->name,
                             (long long)i, t->size);
    if (t->cleared[i])
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: Could not read index %lld twice because it was cleared after a previous "
                             "read (perhaps try setting clear_after_read = false?)",
                             t->name, (long long)i);
    if (!t->written[i]) {
        /* a gradient array's unwritten element reads as zeros of its known shape */
        vg_shape s = t->shapes[i].ndims >= 0 ? t->shapes[i] : t->k.element_shape;
        if (t->k.aggregate && vg_shape_is_fully_defined(&s)) {
            *out = vg_tensor_new_zeros(t->k.dtype, s.dims, s.ndims, st);
            return *out ? VG_OK : st->code;
        }
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: Could not read from TensorArray index %lld because it has not yet been "
                             "written to.",
                             t->name, (long long)i);
    }
    *out = vg_tensor_ref(t->e[i]);
    if (t->k.clear_after_read) {
        vg_tensor_free(t->e[i]);
        t->e[i] = NULL;
        t->cleared[i] = true;
    }
    return VG_OK;
}

static vg_shape attr_shape(const vg_op *op, const char *name) {
    vg_shape s = vg_shape_unknown();
    vg_op_attr_shape(op, name, &s);
    return s;
}

static vg_code kernel_ta_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    vg_tensor *sz = vg__kctx_input(ctx, 0);
    if (vg_tensor_ndims(sz) != 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray size must be scalar");
    int64_t n = scalar_index(sz);
    if (n < 0 || n > (1 << 30)) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray size %lld is negative or too large", (long long)n);
    vg_dtype dt = VG_FLOAT;
    bool dyn = false, clear = true;
    vg_op_attr_type_(op, "dtype", &dt);
    vg_op_attr_bool(op, "dynamic_size", &dyn);
    vg_op_attr_bool(op, "clear_after_read", &clear);
    if (vg_dtype_size(dt) == 0 || dt == VG_RESOURCE)
        return vg_status_set(st, VG_UNIMPLEMENTED, "TensorArray of dtype %s", vg_dtype_name(dt));
    ta_kind k = {dt, attr_shape(op, "element_shape"), dyn, clear, false};
    vg__ta *t = ta_new(ctx, (int)n, &k, st);
    if (!t) return st->code;
    vg_code rc = out_handle(ctx, t);
    return rc == VG_OK ? out_flow(ctx, 1) : rc;
}

static vg_code kernel_ta_grad_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    const char *src = "";
    size_t len = 0;
    vg_op_attr_string(vg__kctx_op(ctx), "source", &src, &len);
    vg__ta *gt = NULL;
    for (int i = 0; i < t->ngrads && !gt; i++)
        if (strlen(t->grads[i].source) == len && memcmp(t->grads[i].source, src, len) == 0) gt = t->grads[i].ta;
    if (!gt) {
        ta_kind k = {t->k.dtype, t->k.element_shape, false, true, true};
        gt = ta_new(ctx, t->size, &k, st);
        if (!gt) return st->code;
        for (int i = 0; i < t->size; i++) gt->shapes[i] = t->shapes[i];
        ta_grad *ng = vg__realloc(t->grads, sizeof(ta_grad) * (size_t)t->ngrads, sizeof(ta_grad) * (size_t)(t->ngrads + 1));
        if (!ng) return VG_OOM(st, "TensorArray grad");
        t->grads = ng;
        t->grads[t->ngrads].source = vg__strndup(src, len);
        if (!t->grads[t->ngrads].source) return VG_OOM(st, "TensorArray grad");
        t->grads[t->ngrads++].ta = gt;
        size_t nl = strlen(t->name);
        memcpy(gt->name, t->name, nl < 80 ? nl : 80);
        gt->name[nl < 80 ? nl : 80] = 0;
        strcat(gt->name, "@grad");
    }
    vg_code rc = out_handle(ctx, gt);
    return rc == VG_OK ? out_flow(ctx, 1) : rc;
}

static vg_code kernel_write_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    vg_code rc = ta_write(t, scalar_index(vg__kctx_input(ctx, 1)), vg__kctx_input(ctx, 2), st);
    return rc == VG_OK ? out_flow(ctx, 0) : rc;
}

static vg_code kernel_read_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    vg_tensor *v;
    vg_code rc = ta_read(t, scalar_index(vg__kctx_input(ctx, 1)), &v, st);
    if (rc != VG_OK) return rc;
    vg__kctx_set_output(ctx, 0, v);
    return VG_OK;
}

/* Stacks elements idx[0..n) into one [n, ...] tensor. */
static vg_code gather(vg__kctx *ctx, vg__ta *t, const vg_tensor *indices, vg_status *st) {
    int64_t n = vg_tensor_num_elements(indices);
    if (vg_tensor_ndims(indices) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "indices must be a vector");
    vg_tensor **parts = vg__calloc((size_t)n + 1, sizeof(vg_tensor *));
    if (!parts) return VG_OOM(st, "TensorArray gather");
    vg_code rc = VG_OK;
    for (int64_t k = 0; k < n && rc == VG_OK; k++) {
        int64_t i = vg_tensor_dtype(indices) == VG_INT64 ? ((const int64_t *)vg_tensor_data(indices))[k]
                                                         : ((const int32_t *)vg_tensor_data(indices))[k];
        rc = ta_read(t, i, &parts[k], st);
        if (rc == VG_OK && k > 0 &&
            (vg_tensor_ndims(parts[k]) != vg_tensor_ndims(parts[0]) ||
             memcmp(vg_tensor_dims(parts[k]), vg_tensor_dims(parts[0]), sizeof(int64_t) * (size_t)vg_tensor_ndims(parts[0]))))
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "TensorArray %s: Could not read from TensorArray index %lld: elements have different "
                               "shapes (gather/stack needs equal shapes)",
                               t->name, (long long)i);
    }
    if (rc == VG_OK) {
        int64_t dims[VG_MAX_DIMS + 1];
        int nd;
        if (n > 0) {
            nd = vg_tensor_ndims(parts[0]) + 1;
            if (nd > VG_MAX_DIMS) rc = vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray gather: too many dims");
            for (int d = 1; d < nd; d++) dims[d] = vg_tensor_dim(parts[0], d - 1);
        } else {
            if (!vg_shape_is_fully_defined(&t->k.element_shape))
                rc = vg_status_set(st, VG_UNIMPLEMENTED,
                                   "TensorArray %s: gather of no elements needs a fully defined element_shape",
                                   t->name);
            nd = t->k.element_shape.ndims + 1;
            for (int d = 1; d < nd && rc == VG_OK; d++) dims[d] = t->k.element_shape.dims[d - 1];
        }
        dims[0] = n;
        vg_tensor *o = NULL;
        if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, 0, t->k.dtype, dims, nd, &o);
        if (rc == VG_OK) {
            size_t each = n > 0 ? vg_tensor_nbytes(parts[0]) : 0;
            for (int64_t k = 0; k < n; k++)
                if (each) memcpy((char *)vg_tensor_data(o) + (size_t)k * each, vg_tensor_data(parts[k]), each);
        }
    }
    for (int64_t k = 0; k < n; k++) vg_tensor_free(parts[k]);
    vg__free(parts);
    return rc;
}

static vg_code kernel_gather_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    return gather(ctx, t, vg__kctx_input(ctx, 1), st);
}

/* A [rows...] slice of v as a new tensor. */
static vg_tensor *slice_rows(const vg_tensor *v, int64_t start, int64_t rows, vg_status *st) {
    int nd = vg_tensor_ndims(v);
    int64_t dims[VG_MAX_DIMS];
    for (int d = 0; d < nd; d++) dims[d] = vg_tensor_dim(v, d);
    int64_t row = 1;
    for (int d = 1; d < nd; d++) row *= dims[d];
    size_t es = vg_dtype_size(vg_tensor_dtype(v));
    dims[0] = rows;
    vg_tensor *o = vg_tensor_new(vg_tensor_dtype(v), dims, nd, st);
    if (o && rows * row > 0)
        memcpy(vg_tensor_data(o), (const char *)vg_tensor_data(v) + (size_t)(start * row) * es, (size_t)(rows * row) * es);
    return o;
}

static vg_code kernel_scatter_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    vg_tensor *idx = vg__kctx_input(ctx, 1), *v = vg__kctx_input(ctx, 2);
    int64_t n = vg_tensor_num_elements(idx);
    if (vg_tensor_ndims(idx) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "indices must be a vector");
    if (vg_tensor_ndims(v) < 1 || vg_tensor_dim(v, 0) != n)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: Expected len(indices) == values.shape[0], but saw: %lld vs. %lld", t->name,
                             (long long)n, vg_tensor_ndims(v) ? (long long)vg_tensor_dim(v, 0) : -1LL);
    for (int64_t k = 0; k < n; k++) {
        int64_t i = vg_tensor_dtype(idx) == VG_INT64 ? ((const int64_t *)vg_tensor_data(idx))[k]
                                                     : ((const int32_t *)vg_tensor_data(idx))[k];
        vg_tensor *row = slice_rows(v, k, 1, st);
        if (!row) return st->code;
        int64_t dims[VG_MAX_DIMS];
        for (int d = 1; d < vg_tensor_ndims(v); d++) dims[d - 1] = vg_tensor_dim(v, d);
        vg_tensor *el = vg__tensor_alias(row, dims, vg_tensor_ndims(v) - 1, st);
        vg_tensor_free(row);
        if (!el) return st->code;
        vg_code rc = ta_write(t, i, el, st);
        vg_tensor_free(el);
        if (rc != VG_OK) return rc;
    }
    return out_flow(ctx, 0);
}

static vg_code kernel_concat_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    vg_tensor **parts = vg__calloc((size_t)t->size + 1, sizeof(vg_tensor *));
    if (!parts) return VG_OOM(st, "TensorArray concat");
    vg_code rc = VG_OK;
    int64_t rows = 0;
    for (int i = 0; i < t->size && rc == VG_OK; i++) {
        rc = ta_read(t, i, &parts[i], st);
        if (rc != VG_OK) break;
        if (vg_tensor_ndims(parts[i]) < 1)
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray %s: Concat saw a scalar shape at index %d", t->name, i);
        else if (i > 0 && (vg_tensor_ndims(parts[i]) != vg_tensor_ndims(parts[0]) ||
                           memcmp(vg_tensor_dims(parts[i]) + 1, vg_tensor_dims(parts[0]) + 1,
                                  sizeof(int64_t) * (size_t)(vg_tensor_ndims(parts[0]) - 1))))
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "TensorArray %s: Concat: element %d's shape does not match element 0's past dim 0",
                               t->name, i);
        else rows += vg_tensor_dim(parts[i], 0);
    }
    vg_tensor *lens = NULL;
    if (rc == VG_OK) {
        int64_t n = t->size;
        rc = vg__kctx_alloc_output(ctx, 1, VG_INT64, &n, 1, &lens);
    }
    if (rc == VG_OK) {
        int64_t dims[VG_MAX_DIMS];
        int nd = 1;
        if (t->size > 0) {
            nd = vg_tensor_ndims(parts[0]);
            for (int d = 1; d < nd; d++) dims[d] = vg_tensor_dim(parts[0], d);
        } else if (t->k.element_shape.ndims > 0 && vg_shape_is_fully_defined(&t->k.element_shape)) {
            nd = t->k.element_shape.ndims;
            for (int d = 1; d < nd; d++) dims[d] = t->k.element_shape.dims[d];
        }
        dims[0] = rows;
        vg_tensor *o;
        rc = vg__kctx_alloc_output(ctx, 0, t->k.dtype, dims, nd, &o);
        size_t off = 0;
        for (int i = 0; rc == VG_OK && i < t->size; i++) {
            ((int64_t *)vg_tensor_data(lens))[i] = vg_tensor_dim(parts[i], 0);
            size_t nb = vg_tensor_nbytes(parts[i]);
            if (nb) memcpy((char *)vg_tensor_data(o) + off, vg_tensor_data(parts[i]), nb);
            off += nb;
        }
    }
    for (int i = 0; i < t->size; i++) vg_tensor_free(parts[i]);
    vg__free(parts);
    return rc;
}

static vg_code kernel_split_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    vg_tensor *v = vg__kctx_input(ctx, 1), *lens = vg__kctx_input(ctx, 2);
    if (vg_tensor_ndims(lens) != 1 || vg_tensor_dtype(lens) != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray %s: Expected lengths to be an int64 vector", t->name);
    if (vg_tensor_ndims(v) < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray %s: Expected value to be at least a vector", t->name);
    int64_t n = vg_tensor_num_elements(lens), total = 0;
    const int64_t *l = vg_tensor_data(lens);
    for (int64_t i = 0; i < n; i++) {
        if (l[i] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArray %s: negative length", t->name);
        total += l[i];
    }
    if (total != vg_tensor_dim(v, 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: Expected sum of lengths to be equal to values.shape[0], but sum of "
                             "lengths is %lld and value's shape is: [%lld...]",
                             t->name, (long long)total, (long long)vg_tensor_dim(v, 0));
    if (n != t->size && !t->k.dynamic)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "TensorArray %s: TensorArray's size is not equal to the size of lengths (%lld vs. %d), "
                             "and the TensorArray is not marked as dynamically resizeable",
                             t->name, (long long)n, t->size);
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        vg_tensor *part = slice_rows(v, at, l[i], st);
        if (!part) return st->code;
        at += l[i];
        vg_code rc = ta_write(t, i, part, st);
        vg_tensor_free(part);
        if (rc != VG_OK) return rc;
    }
    return out_flow(ctx, 0);
}

static vg_code kernel_size_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    return vg__kctx_output_int_scalar(ctx, VG_INT32, t->size);
}

static vg_code kernel_close_unlocked(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__ta *t = ta_of(ctx);
    if (!t) return st->code;
    for (int i = 0; i < t->size; i++) {
        vg_tensor_free(t->e[i]);
        t->e[i] = NULL;
    }
    t->closed = true;
    return VG_OK;
}

/* ---- shape functions ------------------------------------------------------------ */

static vg_code need_handle(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input 0 must be a TensorArray handle", op->def->type);
    return VG_OK;
}

static vg_code shape_ta(vg_op *op, vg_status *st) {
    vg_dtype it = vg__op_input_dtype(op, 0);
    if (it != VG_INT32) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArrayV3: size must be int32");
    vg_dtype dt;
    if (!vg_op_attr_type_(op, "dtype", &dt)) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArrayV3: no dtype");
    vg__op_set_default_attr_bool(op, "dynamic_size", false);
    vg__op_set_default_attr_bool(op, "clear_after_read", true);
    vg__op_set_default_attr_bool(op, "identical_element_shapes", false);
    vg__op_set_default_attr_string(op, "tensor_array_name", "");
    return vg__op_set_two_outputs(op, VG_RESOURCE, vg_shape_make((int64_t[]){2}, 1), VG_FLOAT, vg_shape_make(NULL, 0));
}

static vg_code shape_ta_grad(vg_op *op, vg_status *st) {
    vg_code rc = need_handle(op, st);
    if (rc != VG_OK) return rc;
    return vg__op_set_two_outputs(op, VG_RESOURCE, vg_shape_make((int64_t[]){2}, 1), VG_FLOAT, vg_shape_make(NULL, 0));
}

static vg_code shape_flow_out(vg_op *op, vg_status *st) {
    vg_code rc = need_handle(op, st);
    if (rc != VG_OK) return rc;
    /* T: the value's dtype (Split: input 1; Write, Scatter: input 2) */
    if (op->ninputs >= 3)
        vg__op_set_default_attr_type(op, "T", vg__op_input_dtype(op, strcmp(op->def->type, "TensorArraySplitV3") == 0 ? 1 : 2));
    return vg__op_set_single_output(op, VG_FLOAT, vg_shape_make(NULL, 0));
}

static vg_code shape_read(vg_op *op, vg_status *st) {
    vg_code rc = need_handle(op, st);
    if (rc != VG_OK) return rc;
    vg_dtype dt;
    if (!vg_op_attr_type_(op, "dtype", &dt)) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: no dtype", op->def->type);
    vg_shape es = attr_shape(op, "element_shape");
    vg__op_set_num_outputs(op, 1);
    if (strcmp(op->def->type, "TensorArrayGatherV3") == 0 && es.ndims >= 0 && es.ndims < VG_MAX_DIMS) {
        vg_shape o;
        o.ndims = es.ndims + 1;
        o.dims[0] = -1;
        for (int i = 0; i < es.ndims; i++) o.dims[i + 1] = es.dims[i];
        es = o;
    } else if (strcmp(op->def->type, "TensorArrayGatherV3") == 0) {
        es = vg_shape_unknown();
    }
    vg__op_set_output(op, 0, dt, es);
    return VG_OK;
}

static vg_code shape_concat(vg_op *op, vg_status *st) {
    vg_code rc = need_handle(op, st);
    if (rc != VG_OK) return rc;
    vg_dtype dt;
    if (!vg_op_attr_type_(op, "dtype", &dt)) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorArrayConcatV3: no dtype");
    return vg__op_set_two_outputs(op, dt, vg_shape_unknown(), VG_INT64, vg_shape_make((int64_t[]){-1}, 1));
}

static vg_code shape_size(vg_op *op, vg_status *st) {
    return vg__shape_scalar_after(op, need_handle(op, st), VG_INT32);
}

static vg_code shape_close(vg_op *op, vg_status *st) {
    return vg__shape_none_after(op, need_handle(op, st));
}

/* ---- gradients (tensor_array_grad.py) ---------------------------------------------- */

/* The gradient array of the forward array behind op's handle input, as TF's
 * _GetGradSource: source "gradients" (or the gradient scope's prefix). */
static vg_tensor_array grad_ta(vg_graph *g, vg_op *op, vg_output flow) {
    vg_dtype dt = VG_FLOAT;
    if (!vg_op_attr_type_(op, "dtype", &dt) && !vg_op_attr_type_(op, "T", &dt)) dt = VG_FLOAT;
    vg_tensor_array ta = {op->inputs[0], flow, dt};
    return vg_tensor_array_grad(g, ta, "gradients", NULL);
}

static vg_code grad_read(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    /* TensorArrayReadV3(handle, index, flow_in): the gradient is written at index */
    vg_tensor_array gt = grad_ta(g, op, op->inputs[2]);
    vg_tensor_array w = vg_tensor_array_write(g, gt, op->inputs[1], dy[0], NULL);
    dx[2] = w.flow;
    return vg_graph_status(g, NULL);
}

static vg_code grad_write(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    /* TensorArrayWriteV3(handle, index, value, flow_in) -> flow_out */
    vg_tensor_array gt = grad_ta(g, op, dy[0]);
    dx[2] = vg_tensor_array_read(g, gt, op->inputs[1], NULL);
    dx[3] = dy[0];
    return vg_graph_status(g, NULL);
}

static vg_code grad_gather(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_tensor_array gt = grad_ta(g, op, op->inputs[2]);
    dx[2] = vg_tensor_array_scatter(g, gt, op->inputs[1], dy[0], NULL).flow;
    return vg_graph_status(g, NULL);
}

static vg_code grad_scatter(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    /* TensorArrayScatterV3(handle, indices, value, flow_in) */
    vg_tensor_array gt = grad_ta(g, op, dy[0]);
    dx[2] = vg_tensor_array_gather(g, gt, op->inputs[1], NULL);
    dx[3] = dy[0];
    return vg_graph_status(g, NULL);
}

static vg_code grad_concat(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_tensor_array gt = grad_ta(g, op, op->inputs[1]);
    dx[1] = vg_tensor_array_split(g, gt, dy[0], vg_out(op, 1), NULL).flow;
    return vg_graph_status(g, NULL);
}

static vg_code grad_split(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    /* TensorArraySplitV3(handle, value, lengths, flow_in) */
    vg_tensor_array gt = grad_ta(g, op, dy[0]);
    dx[1] = vg_tensor_array_concat(g, gt, NULL, NULL);
    dx[3] = dy[0];
    return vg_graph_status(g, NULL);
}

/* The executor may run two ops of one array at once (a read and a gather that depend only
 * on the same flow, or the TensorArrayGradV3 ops of two reads, which must find the same
 * gradient array). TF guards each array with a mutex; the kernels here take one lock
 * for all arrays: they only move tensor references and copy small slices. */
static pthread_mutex_t g_ta_mu = PTHREAD_MUTEX_INITIALIZER;
VG__KERNEL_UNDER_LOCK(kernel_ta, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_ta_grad, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_write, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_read, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_gather, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_scatter, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_concat, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_split, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_size, g_ta_mu)
VG__KERNEL_UNDER_LOCK(kernel_close, g_ta_mu)

const vg__op_def vg__ops_tensor_array[] = {
    {"TensorArrayV3", 1, 1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_ta, kernel_ta, NULL},
    {"TensorArrayGradV3", 2, 2, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_ta_grad, kernel_ta_grad, NULL},
    {"TensorArrayWriteV3", 4, 4, VG__OP_STATEFUL, 0, shape_flow_out, kernel_write, grad_write},
    {"TensorArrayReadV3", 3, 3, VG__OP_STATEFUL, 0, shape_read, kernel_read, grad_read},
    {"TensorArrayGatherV3", 3, 3, VG__OP_STATEFUL, 0, shape_read, kernel_gather, grad_gather},
    {"TensorArrayScatterV3", 4, 4, VG__OP_STATEFUL, 0, shape_flow_out, kernel_scatter, grad_scatter},
    {"TensorArrayConcatV3", 2, 2, VG__OP_STATEFUL, 0, shape_concat, kernel_concat, grad_concat},
    {"TensorArraySplitV3", 4, 4, VG__OP_STATEFUL, 0, shape_flow_out, kernel_split, grad_split},
    {"TensorArraySizeV3", 2, 2, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_size, kernel_size, NULL},
    {"TensorArrayCloseV3", 1, 1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_close, kernel_close, NULL},
    {0},
};

/* ---- builders ------------------------------------------------------------------- */

static const vg_tensor_array k_bad = {{NULL, 0}, {NULL, 0}, VG_FLOAT};

vg_tensor_array vg_tensor_array_new(vg_graph *g, vg_dtype dtype, vg_output size, bool dynamic_size,
                                    bool clear_after_read, const vg_shape *element_shape, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "TensorArrayV3", name, "TensorArray", (vg_output[]){size}, 1);
    vg_op_builder_set_attr_type(b, "dtype", dtype);
    vg_op_builder_set_attr_bool(b, "dynamic_size", dynamic_size);
    vg_op_builder_set_attr_bool(b, "clear_after_read", clear_after_read);
    vg_op_builder_set_attr_shape(b, "element_shape", element_shape ? *element_shape : vg_shape_unknown());
    vg_op *op = vg_op_builder_finish(b);
    if (!op) return k_bad;
    return (vg_tensor_array){vg_out(op, 0), vg_out(op, 1), dtype};
}

vg_tensor_array vg_tensor_array_grad(vg_graph *g, vg_tensor_array ta, const char *source, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "TensorArrayGradV3", name, "TensorArrayGrad/TensorArrayGradV3",
                                               (vg_output[]){ta.handle, ta.flow}, 2);
    vg_op_builder_set_attr_string(b, "source", source ? source : "", source ? strlen(source) : 0);
    vg_op *op = vg_op_builder_finish(b);
    if (!op) return k_bad;
    return (vg_tensor_array){vg_out(op, 0), vg_out(op, 1), ta.dtype};
}

vg_tensor_array vg_tensor_array_write(vg_graph *g, vg_tensor_array ta, vg_output index, vg_output value,
                                      const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "TensorArrayWriteV3", name, "TensorArrayWrite",
                                               (vg_output[]){ta.handle, index, value, ta.flow}, 4);
    vg_op *op = vg_op_builder_finish(b);
    if (!op) return k_bad;
    return (vg_tensor_array){ta.handle, vg_out(op, 0), ta.dtype};
}

/* The element_shape of the TensorArrayV3 behind a handle (through Enter / Identity /
 * Switch), as the Python object remembers it; unknown if not found. */
static vg_shape handle_element_shape(vg_output h) {
    vg_op *op = h.op;
    for (int guard = 0; op && guard < 64; guard++) {
        const char *t = op->def->type;
        if (strcmp(t, "TensorArrayV3") == 0) return attr_shape(op, "element_shape");
        if ((strcmp(t, "Enter") && strcmp(t, "Identity") && strcmp(t, "Switch")) || op->ninputs < 1) break;
        op = op->inputs[0].op;
    }
    return vg_shape_unknown();
}

vg_output vg_tensor_array_read(vg_graph *g, vg_tensor_array ta, vg_output index, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "TensorArrayReadV3", name ? name : "TensorArrayRead");
    if (ta.handle.op) vg_op_builder_set_attr_shape(b, "element_shape", handle_element_shape(ta.handle));
    vg_op_builder_add_input(b, ta.handle);
    vg_op_builder_add_input(b, index);
    vg_op_builder_add_input(b, ta.flow);
    vg_op_builder_set_attr_type(b, "dtype", ta.dtype);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_tensor_array_gather(vg_graph *g, vg_tensor_array ta, vg_output indices, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "TensorArrayGatherV3", name ? name : "TensorArrayGather");
    if (ta.handle.op) vg_op_builder_set_attr_shape(b, "element_shape", handle_element_shape(ta.handle));
    vg_op_builder_add_input(b, ta.handle);
    vg_op_builder_add_input(b, indices);
    vg_op_builder_add_input(b, ta.flow);
    vg_op_builder_set_attr_type(b, "dtype", ta.dtype);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_tensor_array vg_tensor_array_scatter(vg_graph *g, vg_tensor_array ta, vg_output indices, vg_output value,
                                        const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "TensorArrayScatterV3", name, "TensorArrayScatter",
                                               (vg_output[]){ta.handle, indices, value, ta.flow}, 4);
    vg_op *op = vg_op_builder_finish(b);
    if (!op) return k_bad;
    return (vg_tensor_array){ta.handle, vg_out(op, 0), ta.dtype};
}

vg_output vg_tensor_array_concat(vg_graph *g, vg_tensor_array ta, vg_output *lengths, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "TensorArrayConcatV3", name, "TensorArrayConcat",
                                               (vg_output[]){ta.handle, ta.flow}, 2);
    vg_op_builder_set_attr_type(b, "dtype", ta.dtype);
    vg_op *op = vg_op_builder_finish(b);
    if (lengths) *lengths = vg_out(op, 1);
    return vg_out(op, 0);
}

vg_tensor_array vg_tensor_array_split(vg_graph *g, vg_tensor_array ta, vg_output value, vg_output lengths,
                                      const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "TensorArraySplitV3", name, "TensorArraySplit",
                                               (vg_output[]){ta.handle, value, lengths, ta.flow}, 4);
    vg_op *op = vg_op_builder_finish(b);
    if (!op) return k_bad;
    return (vg_tensor_array){ta.handle, vg_out(op, 0), ta.dtype};
}

vg_output vg_tensor_array_size(vg_graph *g, vg_tensor_array ta, const char *name) {
    return vg__build_simple(g, "TensorArraySizeV3", name, "TensorArraySize", (vg_output[]){ta.handle, ta.flow}, 2);
}

vg_op *vg_tensor_array_close(vg_graph *g, vg_tensor_array ta, const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "TensorArrayCloseV3", name, "TensorArrayClose", (vg_output[]){ta.handle}, 1);
    return vg_op_builder_finish(b);
}

vg_output vg_tensor_array_stack(vg_graph *g, vg_tensor_array ta, const char *name) {
    if (!g) return vg_out(NULL, 0);
    vg_graph_push_scope(g, name ? name : "TensorArrayStack");
    vg_output n = vg_tensor_array_size(g, ta, "TensorArraySizeV3");
    vg_output r = vg_range(g, vg_const_i32(g, 0, "range/start"), n, vg_const_i32(g, 1, "range/delta"), "range");
    vg_output o = vg_tensor_array_gather(g, ta, r, "TensorArrayGatherV3");
    vg_graph_pop_scope(g);
    return o;
}

vg_tensor_array vg_tensor_array_unstack(vg_graph *g, vg_tensor_array ta, vg_output value, const char *name) {
    if (!g) return k_bad;
    vg_graph_push_scope(g, name ? name : "TensorArrayUnstack");
    vg_output shp = vg_shape_op(g, value, VG_INT32, "Shape");
    vg_output n = vg_reshape_c(g, vg_slice_c(g, shp, (int64_t[]){0}, (int64_t[]){1}, 1, "strided_slice"), NULL, 0,
                               "strided_slice/Reshape");
    vg_output r = vg_range(g, vg_const_i32(g, 0, "range/start"), n, vg_const_i32(g, 1, "range/delta"), "range");
    vg_tensor_array o = vg_tensor_array_scatter(g, ta, r, value, "TensorArrayScatter");
    vg_graph_pop_scope(g);
    return o;
}
