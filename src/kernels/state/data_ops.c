/*
 * data_ops.c - ops that feed the input pipeline: IdxRecord (records of MNIST-format
 * IDX files by index) and CountUpTo (the epoch counter of tf.train.limit_epochs).
 *
 * IdxRecord keeps the two files in memory per (session, op) kernel state. They are
 * loaded on the first run under the state's own mutex (not the session's), so other
 * runs of the session are not held up meanwhile; a failed load is retried by the next
 * run. After loading, runs only read the arrays (no lock).
 */
#include "kernels/kernel.h"
#include "io/io.h"
#include "vigil/queue_ops.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define DATA_FLAGS (VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE)

/* ------------------------------------------------------------------------ */
/* IdxRecord */

typedef struct idx_state {
    pthread_mutex_t mu;
    atomic_bool loaded;
    uint8_t *images;  /* n * rows * cols */
    int64_t *labels;  /* n */
    int64_t n, rows, cols;
} idx_state;

static void *idx_state_create(const vg_op *op, vg_status *st) {
    idx_state *s = vg__calloc_or_oom(sizeof *s, "IdxRecord state", st);
    if (!s) return NULL;
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->loaded, false);
    return s;
}

static void idx_state_destroy(void *p) {
    idx_state *s = p;
    vg__free(s->images);
    vg__free(s->labels);
    pthread_mutex_destroy(&s->mu);
    vg__free(s);
}

static bool attr_path(const vg_op *op, const char *name, char *buf, size_t len) {
    const char *v;
    size_t n;
    if (!vg_op_attr_string(op, name, &v, &n) || n == 0 || n >= len) return false;
    memcpy(buf, v, n);
    buf[n] = 0;
    return true;
}

/* Reads both files (state mutex held). */
static vg_code idx_load(idx_state *s, const vg_op *op, vg_status *st) {
    char ip[4096], lp[4096];
    if (!attr_path(op, "images_path", ip, sizeof ip) || !attr_path(op, "labels_path", lp, sizeof lp))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "IdxRecord needs 'images_path' and 'labels_path'");
    int64_t idims[4], ldims[4];
    int ind = 0, lnd = 0;
    void *img = NULL, *lab = NULL;
    size_t ib, lb;
    vg_code rc = vg__idx_read(ip, VG__IDX_U8, idims, &ind, &img, &ib, st);
    if (rc == VG_OK) rc = vg__idx_read(lp, VG__IDX_U8, ldims, &lnd, &lab, &lb, st);
    if (rc == VG_OK && ind != 3)
        rc = vg_status_set(st, VG_DATA_LOSS, "%s: expected 3 dimensions (images, rows, cols), got %d", ip, ind);
    if (rc == VG_OK && lnd != 1)
        rc = vg_status_set(st, VG_DATA_LOSS, "%s: expected 1 dimension (labels), got %d", lp, lnd);
    if (rc == VG_OK && idims[0] != ldims[0])
        rc = vg_status_set(st, VG_DATA_LOSS, "%s has %lld images but %s has %lld labels", ip, (long long)idims[0], lp,
                           (long long)ldims[0]);
    int64_t *labels = NULL;
    if (rc == VG_OK && !(labels = vg__malloc(sizeof(int64_t) * (size_t)(ldims[0] ? ldims[0] : 1))))
        rc = VG_OOM(st, "labels");
    if (rc != VG_OK) {
        vg__free(img);
        vg__free(lab);
        return rc;
    }
    for (int64_t i = 0; i < ldims[0]; i++) labels[i] = ((const uint8_t *)lab)[i];
    vg__free(lab);
    s->images = img;
    s->labels = labels;
    s->n = idims[0];
    s->rows = idims[1];
    s->cols = idims[2];
    atomic_store_explicit(&s->loaded, true, memory_order_release);
    return VG_OK;
}

static vg_code kernel_idx_record(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    void *p;
    vg_code rc = vg__kctx_state(ctx, idx_state_create, idx_state_destroy, &p);
    if (rc != VG_OK) return rc;
    idx_state *s = p;
    if (!atomic_load_explicit(&s->loaded, memory_order_acquire)) {
        pthread_mutex_lock(&s->mu);
        if (!atomic_load(&s->loaded)) rc = idx_load(s, vg__kctx_op(ctx), st);
        pthread_mutex_unlock(&s->mu);
        if (rc != VG_OK) return rc;
    }
    // indices is S (int32 or int64); images out is S+[rows, cols], labels out is S
    const vg_tensor *idx = vg__kctx_input(ctx, 0);
    vg_dtype dt = vg_tensor_dtype(idx);
    int nd = vg_tensor_ndims(idx);
    if (nd + 2 > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "IdxRecord: indices rank %d too large", nd);
    int64_t count = vg_tensor_num_elements(idx), dims[VG_MAX_DIMS];
    memcpy(dims, vg_tensor_dims(idx), sizeof(int64_t) * (size_t)nd);
    dims[nd] = s->rows;
    dims[nd + 1] = s->cols;
    vg_tensor *img, *lab;
    if ((rc = vg__kctx_alloc_output(ctx, 0, VG_UINT8, dims, nd + 2, &img)) != VG_OK) return rc;
    if ((rc = vg__kctx_alloc_output(ctx, 1, VG_INT64, dims, nd, &lab)) != VG_OK) return rc;
    size_t rb = (size_t)(s->rows * s->cols);
    uint8_t *io = vg_tensor_data(img);
    int64_t *lo = vg_tensor_data(lab);
    const int32_t *i32 = dt == VG_INT32 ? vg_tensor_data(idx) : NULL;
    const int64_t *i64 = dt == VG_INT64 ? vg_tensor_data(idx) : NULL;
    for (int64_t k = 0; k < count; k++) {
        int64_t i = i32 ? i32[k] : i64[k];
        if (i < 0 || i >= s->n)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "IdxRecord: index %lld is out of range [0, %lld)",
                                 (long long)i, (long long)s->n);
        memcpy(io + (size_t)k * rb, s->images + (size_t)i * rb, rb);
        lo[k] = s->labels[i];
    }
    return VG_OK;
}

/* Reads the image file's header at build time so that the output shape is known
 * (shuffle_batch needs fully defined shapes). A file that cannot be read now leaves
 * the dims unknown; the kernel reports the error when it runs. */
static vg_code shape_idx_record(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "IdxRecord: indices must be int32 or int64, got %s",
                             vg_dtype_name(dt));
    char ip[4096], lp[4096];
    if (!attr_path(op, "images_path", ip, sizeof ip) || !attr_path(op, "labels_path", lp, sizeof lp))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "IdxRecord needs non-empty 'images_path' and 'labels_path'");
    vg__op_set_default_attr_type(op, "Tindices", dt);
    int64_t rows = -1, cols = -1;
    vg_status ignore;
    vg__idx_reader *r = vg__idx_reader_open(ip, VG__IDX_U8, &ignore);
    if (r) {
        int nd;
        const int64_t *d = vg__idx_reader_dims(r, &nd);
        if (nd == 3) rows = d[1], cols = d[2];
        vg__idx_reader_close(r);
    }
    vg_shape s = vg__op_input_shape(op, 0), is = s;
    if (s.ndims >= 0 && s.ndims + 2 <= VG_MAX_DIMS) {
        is.dims[is.ndims++] = rows;
        is.dims[is.ndims++] = cols;
    } else {
        is = vg_shape_unknown();
    }
    return vg__op_set_two_outputs(op, VG_UINT8, is, VG_INT64, s);
}

vg_op *vg_idx_record(vg_graph *g, const char *images_path, const char *labels_path, vg_output indices,
                     const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "IdxRecord", name, "IdxRecord", (vg_output[]){indices}, 1);
    vg_op_builder_set_attr_string(b, "images_path", images_path ? images_path : "",
                                  images_path ? strlen(images_path) : 0);
    vg_op_builder_set_attr_string(b, "labels_path", labels_path ? labels_path : "",
                                  labels_path ? strlen(labels_path) : 0);
    return vg_op_builder_finish(b);
}

/* ------------------------------------------------------------------------ */
/* CountUpTo(ref, limit): output = the value before the increment; OUT_OF_RANGE
 * "Reached limit of N" once the variable has reached limit. */

static vg_code shape_count_up_to(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "CountUpTo: ref must be int32 or int64, got %s",
                             vg_dtype_name(dt));
    vg_shape s = vg__op_input_shape(op, 0);
    char buf[128];
    if (s.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "CountUpTo: ref must be a scalar, got shape %s",
                             vg_shape_str(&s, buf, sizeof buf));
    int64_t limit;
    if (!vg_op_attr_int(op, "limit", &limit)) return vg_status_set(st, VG_INVALID_ARGUMENT, "CountUpTo needs 'limit'");
    return vg__op_set_t_output(op, dt, vg_shape_make(NULL, 0));
}

static vg_code kernel_count_up_to(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int64_t limit = 0;
    vg_op_attr_int(vg__kctx_op(ctx), "limit", &limit);
    vg__var *v = vg__kctx_var(ctx, 0);
    if (!v) return vg_status_set(st, VG_INVALID_ARGUMENT, "CountUpTo: input 0 is not a variable");
    vg__var_lock(v);
    vg_tensor *t = vg__var_mutable(v, st);
    if (!t) {
        vg__var_unlock(v);
        return st->code;
    }
    if (vg_tensor_ndims(t) != 0) {
        char buf[128];
        vg_shape s = vg_tensor_shape(t);
        vg__var_unlock(v);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input is not a scalar: %s", vg_shape_str(&s, buf, sizeof buf));
    }
    vg_dtype dt = vg_tensor_dtype(t);
    int64_t before = dt == VG_INT32 ? *(int32_t *)vg_tensor_data(t) : *(int64_t *)vg_tensor_data(t);
    if (before >= limit) {
        vg__var_unlock(v);
        return vg_status_set(st, VG_OUT_OF_RANGE, "Reached limit of %lld", (long long)limit);
    }
    if (dt == VG_INT32) *(int32_t *)vg_tensor_data(t) = (int32_t)(before + 1);
    else *(int64_t *)vg_tensor_data(t) = before + 1;
    vg__var_unlock(v);
    return vg__kctx_output_int_scalar(ctx, dt, before);
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_data[] = {
    {"IdxRecord", 1, 1, DATA_FLAGS, 0, shape_idx_record, kernel_idx_record, NULL},
    {"CountUpTo", 1, 1, DATA_FLAGS, 1u, shape_count_up_to, kernel_count_up_to, NULL},
    {0},
};
