/*
 * dataset_ops.c - tf.data's graph ops: the dataset ops (TensorSliceDataset,
 * RangeDataset, TFRecordDataset, MapDataset, BatchDatasetV2, ShuffleDataset,
 * RepeatDataset, TakeDataset, SkipDataset, PrefetchDataset, TextLineDataset, ShardDataset,
 * InterleaveDataset), which each output a new
 * immutable dataset value, and the iterator ops (IteratorV2, MakeIterator,
 * OneShotIterator, IteratorGetNext) over a per-session iterator resource; plus the
 * builders of vigil/data.h.
 *
 * The iterator resource serializes get_next with its mutex (one element at a time,
 * as TF's IteratorResource); session close cancels it, so a get_next blocked in a
 * prefetch returns CANCELLED.
 */
#include "data/dataset.h"
#include "kernels/kernel.h"
#include "vigil/example.h"
#include "vigil/ops.h"
#include "vigil/reader.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>

#define DS_FLAGS (VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE)
#define IT_FLAGS (VG__OP_STATEFUL | VG__OP_BLOCKING | VG__OP_NOT_DIFFERENTIABLE)
#define FN_KEY_PREFIX "vigil.dataset_fn:"

/* A dataset op, or a function's argument that is a dataset (a window's component: a
 * VG_RESOURCE Placeholder that carries output_types / output_shapes, see build_fn). */
static bool is_dataset_op(const vg_op *op) {
    const vg_dtype *t;
    int n;
    /* an Identity of a dataset: an imported function's argument ("<call>/<arg>") or return */
    for (int d = 0; op && d < 64 && !strcmp(vg_op_type(op), "Identity") && vg_op_num_inputs(op) == 1; d++)
        op = vg_op_input(op, 0).op;
    return op && vg_op_attr_type_list(op, "output_types", &t, &n) && n > 0 &&
           (strstr(vg_op_type(op), "Dataset") != NULL || !strcmp(vg_op_type(op), "Placeholder"));
}

int vg_dataset_components(vg_output ds, vg_dtype *types, vg_shape *shapes) {
    for (int d = 0; ds.op && d < 64 && !strcmp(vg_op_type(ds.op), "Identity") && vg_op_num_inputs(ds.op) == 1; d++)
        ds = vg_op_input(ds.op, 0);
    if (!ds.op || !is_dataset_op(ds.op)) return 0;
    const vg_dtype *t;
    const vg_shape *s;
    int n, ns;
    vg_op_attr_type_list(ds.op, "output_types", &t, &n);
    if (!vg_op_attr_shape_list(ds.op, "output_shapes", &s, &ns) || ns != n) return 0;
    for (int i = 0; i < n && i < VG_DATASET_MAX_COMPONENTS; i++) {
        if (types) types[i] = t[i];
        if (shapes) shapes[i] = s[i];
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* dataset ops */

/* Dataset ops without a dataset input. */
static bool is_source(const char *type) {
    const vg__ds_kind *k = vg__ds_kind_of(vg__ds_kind_by_op(type));
    return k && k->inputs == 0;
}

static vg_code shape_dataset(vg_op *op, vg_status *st) {
    const vg_dtype *t;
    const vg_shape *s;
    int n = 0, ns = 0;
    if (!vg_op_attr_type_list(op, "output_types", &t, &n) || n < 1 || n > VG_DATASET_MAX_COMPONENTS ||
        !vg_op_attr_shape_list(op, "output_shapes", &s, &ns) || ns != n)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s needs output_types and output_shapes (1 to %d components)",
                             vg_op_type(op), VG_DATASET_MAX_COMPONENTS);
    if (!is_source(vg_op_type(op))) {
        vg_output in = vg_op_input(op, 0);
        if (vg_output_dtype(in) != VG_RESOURCE || !is_dataset_op(in.op))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input 0 must be a dataset", vg_op_type(op));
    }
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_RESOURCE, vg_shape_make(NULL, 0));
    return VG_OK;
}

static void set_types(vg__dataset *d, const vg_op *op) {
    const vg_dtype *t;
    int n = 0;
    vg_op_attr_type_list(op, "output_types", &t, &n);
    d->ncomp = n;
    memcpy(d->types, t, sizeof(vg_dtype) * (size_t)n);
}

/* An integer scalar input, exactly (through a double, int64 values past 2^53, such as
 * range bounds near the limits or 64-bit seeds, lost their low bits). */
int64_t vg__ds_scalar_i64(const vg_tensor *t) {
    if (t && vg_tensor_num_elements(t) >= 1) {
        if (vg_tensor_dtype(t) == VG_INT64) return *(const int64_t *)vg_tensor_data(t);
        if (vg_tensor_dtype(t) == VG_INT32) return *(const int32_t *)vg_tensor_data(t);
    }
    return (int64_t)vg_tensor_scalar(t);
}

/* A nondeterministic 64-bit value (TF's random::New64). */
uint64_t vg__ds_random_u64(const void *salt) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        static _Atomic uint64_t counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)(uintptr_t)salt << 16) ^
            (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ull);
    }
    return v;
}

/* Builds the dataset of the kernel's op and sets output 0. */
static vg_code kernel_dataset(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const char *type = vg_op_type(op);
    int kind = vg__ds_kind_by_op(type);
    if (kind < 0) return vg_status_set(st, VG_INTERNAL, "%s is not a dataset kind", type);
    vg__dataset *d = vg__dataset_new(kind);
    if (!d) return VG_OOM(st, "dataset");
    d->src = op;
    set_types(d, op);
    vg_code rc = VG_OK;
    if (!is_source(type)) {
        vg__dataset *in = vg__dataset_of(vg__kctx_input(ctx, 0), st);
        if (!in) rc = st->code;
        else d->input = vg__dataset_ref(in);
    }
    if (rc == VG_OK && vg__ds_kind_of(kind)->inputs == 2) {
        int n = vg__kctx_num_inputs(ctx);
        for (int i = 1; i < n && i <= VG_DATASET_MAX_COMPONENTS && rc == VG_OK; i++) {
            vg__dataset *in = vg__dataset_of(vg__kctx_input(ctx, i), st);
            if (!in) rc = st->code;
            else d->more[d->nmore++] = vg__dataset_ref(in);
        }
    }
    const vg__ds_kind *k = vg__ds_kind_of(kind);
    if (rc == VG_OK && k->params) {
        vg_tensor *in[2 * VG_DATASET_MAX_COMPONENTS + VG_DATASET_MAX_CAPTURES + 4];
        int nin = vg__kctx_num_inputs(ctx);
        if (nin > (int)(sizeof in / sizeof in[0])) nin = (int)(sizeof in / sizeof in[0]);
        for (int i = 0; i < nin; i++) in[i] = vg__kctx_input(ctx, i);
        vg__ds_op_args args = {op, in, nin};
        rc = k->params(d, &args, st);
    }
    if (rc != VG_OK) {
        vg__dataset_unref(d);
        return rc;
    }
    vg_tensor *t = vg__dataset_tensor(d, st);
    if (!t) return st->code;
    vg__kctx_set_output(ctx, 0, t);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* the iterator resource */

typedef struct iter_res {
    char key[1100];       /* the session resource name: the string handle */
    pthread_mutex_t mu;   /* serializes get_next / make_iterator */
    pthread_mutex_t cmu;  /* guards `it` against a concurrent cancel */
    vg__ds_iter *it;
    bool cancelled;
    int64_t produced;     /* elements handed out since the last (re)initialization */
    bool ff_done;         /* the position variable was consulted (once per session) */
} iter_res;

static void *iter_create(void *arg, vg_status *st) {
    iter_res *r = vg__calloc(1, sizeof *r);
    if (!r) {
        VG_OOM(st, "iterator");
        return NULL;
    }
    snprintf(r->key, sizeof r->key, "%s", (const char *)arg);
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->cmu, NULL);
    return r;
}

static void iter_cancel(void *p) {
    iter_res *r = p;
    pthread_mutex_lock(&r->cmu);
    r->cancelled = true;
    vg__ds_iter_cancel(r->it);
    pthread_mutex_unlock(&r->cmu);
}

static void iter_destroy(void *p) {
    iter_res *r = p;
    vg__ds_iter_free(r->it);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->cmu);
    vg__free(r);
}

static const vg__resource_ops iter_ops = {iter_cancel, iter_destroy};

static vg_code iter_resource(vg__kctx *ctx, iter_res **out) {
    const vg_op *op = vg__kctx_op(ctx);
    const char *shared;
    size_t sl = 0;
    char key[1100];
    if (vg_op_attr_string(op, "shared_name", &shared, &sl) && sl > 0)
        snprintf(key, sizeof key, "iterator:%.*s", (int)(sl < 1000 ? sl : 1000), shared);
    else
        snprintf(key, sizeof key, "iterator:%s", vg_op_name(op));
    void *r;
    vg_code rc = vg__session_resource(vg__kctx_session(ctx), key, &iter_ops, iter_create, key, &r,
                                      vg__kctx_status(ctx));
    *out = r;
    return rc;
}

/* A lookup that never creates: the handle names no iterator of this session. */
static void *iter_missing(void *arg, vg_status *st) {
    vg_status_set(st, VG_NOT_FOUND, "no iterator with string handle '%s' in this session", (const char *)arg);
    return NULL;
}

static vg_code set_handle(vg__kctx *ctx, iter_res *r) {
    vg_tensor *out;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, VG_RESOURCE, NULL, 0, &out);
    if (rc == VG_OK) memcpy(vg_tensor_data(out), &r, sizeof r);
    return rc;
}

static iter_res *iter_of(vg__kctx *ctx, int i) {
    vg_tensor *h = vg__kctx_input(ctx, i);
    iter_res *r = NULL;
    if (h && vg_tensor_dtype(h) == VG_RESOURCE && vg_tensor_num_elements(h) == 1) memcpy(&r, vg_tensor_data(h), sizeof r);
    if (!r) vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "expected an iterator handle");
    return r;
}

/* Makes `it` the iterator's position (mu held). */
static void install_iter(iter_res *r, vg__ds_iter *it) {
    pthread_mutex_lock(&r->cmu);
    vg__ds_iter *old = r->it;
    r->it = it;
    r->produced = 0;
    if (r->cancelled) vg__ds_iter_cancel(it);
    pthread_mutex_unlock(&r->cmu);
    vg__ds_iter_free(old);
}

/* Replaces the iterator's position with a fresh iterator over d (mu held). */
static vg_code reset_iter(iter_res *r, vg__dataset *d, vg_status *st) {
    vg__ds_iter *it = vg__ds_iter_new(d, st);
    if (!it) return st->code;
    install_iter(r, it);
    return VG_OK;
}

static vg_code kernel_iterator(vg__kctx *ctx) {
    iter_res *r;
    vg_code rc = iter_resource(ctx, &r);
    return rc != VG_OK ? rc : set_handle(ctx, r);
}

static vg_code kernel_one_shot(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    iter_res *r;
    vg_code rc = iter_resource(ctx, &r);
    if (rc != VG_OK) return rc;
    pthread_mutex_lock(&r->mu);
    if (!r->it) {
        vg__dataset *d = vg__dataset_of(vg__kctx_input(ctx, 0), st);
        rc = d ? reset_iter(r, d, st) : st->code;
    }
    pthread_mutex_unlock(&r->mu);
    return rc != VG_OK ? rc : set_handle(ctx, r);
}

static vg_code kernel_make_iterator(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__dataset *d = vg__dataset_of(vg__kctx_input(ctx, 0), st);
    iter_res *r = d ? iter_of(ctx, 1) : NULL;
    if (!r) return st->code;
    pthread_mutex_lock(&r->mu);
    vg_code rc = reset_iter(r, d, st);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* Under r->mu: r has an iterator (FAILED_PRECONDITION) yielding n components
 * (INVALID_ARGUMENT "iterator yields %d components, <expects> n"). */
static vg_code check_get_next(const iter_res *r, int n, const char *expects, vg_status *st) {
    if (!r->it)
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "GetNext() failed because the iterator has not been initialized. Ensure that you have run "
                             "the initializer operation for this iterator before getting the next element.");
    if (r->it->ds->ncomp != n)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "iterator yields %d components, %s %d", r->it->ds->ncomp,
                             expects, n);
    return VG_OK;
}

/* Hands a GetNext's n tensors out[] to the outputs after checking their dtypes against
 * types[] (a mismatch frees the rest); OUT_OF_RANGE when the iterator ended. */
static vg_code hand_out(vg__kctx *ctx, vg_tensor **out, int n, const vg_dtype *types, bool end, vg_status *st) {
    if (end) return vg_status_set(st, VG_OUT_OF_RANGE, "End of sequence");
    vg_code rc = VG_OK;
    for (int i = 0; i < n; i++) {
        if (rc == VG_OK && vg_tensor_dtype(out[i]) != types[i])
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "component %d has dtype %s, expected %s", i,
                               vg_dtype_name(vg_tensor_dtype(out[i])), vg_dtype_name(types[i]));
        if (rc == VG_OK) vg__kctx_set_output(ctx, i, out[i]);
        else vg_tensor_free(out[i]);
    }
    return rc;
}

static vg_code kernel_get_next(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    iter_res *r = iter_of(ctx, 0);
    if (!r) return st->code;
    const vg_dtype *types;
    int n = 0;
    vg_op_attr_type_list(vg__kctx_op(ctx), "output_types", &types, &n);
    vg_tensor *out[VG_DATASET_MAX_COMPONENTS] = {0};
    bool end = false;
    vg_code rc;
    pthread_mutex_lock(&r->mu);
    rc = check_get_next(r, n, "IteratorGetNext expects", st);
    if (rc == VG_OK) rc = r->it->next(r->it, out, &end, st);
    pthread_mutex_unlock(&r->mu);
    if (rc != VG_OK) return rc;
    return hand_out(ctx, out, n, types, end, st);
}


/* IteratorGetNextWithPosition (vigil): IteratorGetNext that also keeps the number of
 * elements handed out in an int64 variable (ref input 1), which a Saver checkpoints.
 * The first call in a session whose variable holds N > 0 (restored from a checkpoint)
 * first skips N elements: a deterministic pipeline (seeded shuffles) then continues
 * with the next unseen element. */
static vg_code kernel_get_next_pos(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    iter_res *r = iter_of(ctx, 0);
    vg__var *v = vg__kctx_var(ctx, 1);
    if (!r) return st->code;
    if (!v) return vg_status_set(st, VG_INVALID_ARGUMENT, "input 1 must be the position variable");
    const vg_dtype *types;
    int n = 0;
    vg_op_attr_type_list(vg__kctx_op(ctx), "output_types", &types, &n);
    vg_tensor *out[VG_DATASET_MAX_COMPONENTS] = {0};
    bool end = false;
    vg_code rc = VG_OK;
    pthread_mutex_lock(&r->mu);
    rc = check_get_next(r, n, "expected", st);
    if (rc == VG_OK && !r->ff_done) {
        vg__var_lock(v);
        vg_tensor *pv = vg__var_value(v);
        int64_t pos = pv && vg_tensor_dtype(pv) == VG_INT64 && vg_tensor_num_elements(pv) == 1
                          ? *(const int64_t *)vg_tensor_data(pv) : -1;
        vg__var_unlock(v);
        if (pos < 0) {
            rc = vg_status_set(st, VG_FAILED_PRECONDITION, "the iterator's position variable %s is not initialized",
                               vg__var_name(v));
        } else {
            r->ff_done = true;
            for (int64_t k = r->produced; k < pos && rc == VG_OK && !end; k++) {
                rc = r->it->next(r->it, out, &end, st);
                if (rc == VG_OK && !end) {
                    r->produced++;
                    for (int i = 0; i < n; i++) vg_tensor_free(out[i]), out[i] = NULL;
                }
            }
        }
    }
    if (rc == VG_OK && !end) rc = r->it->next(r->it, out, &end, st);
    if (rc == VG_OK && !end) r->produced++;
    if (rc == VG_OK) {
        vg__var_lock(v);
        vg_tensor *t = vg__var_mutable(v, st);
        if (t) *(int64_t *)vg_tensor_data(t) = r->produced;
        else rc = st->code;
        vg__var_unlock(v);
    }
    pthread_mutex_unlock(&r->mu);
    if (rc != VG_OK) {
        for (int i = 0; i < n; i++) vg_tensor_free(out[i]);
        return rc;
    }
    return hand_out(ctx, out, n, types, end, st);
}

/* SerializeIterator(resource_handle) -> serialized: the iterator's whole state (its
 * dataset's description and position, dataset_state.c), a string scalar here (TF: a
 * variant). */
static vg_code kernel_serialize_iterator(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    iter_res *r = iter_of(ctx, 0);
    if (!r) return st->code;
    uint8_t *bytes = NULL;
    size_t len = 0;
    vg_code rc;
    pthread_mutex_lock(&r->mu);
    if (!r->it)
        rc = vg_status_set(st, VG_FAILED_PRECONDITION,
                           "Save() failed because the iterator has not been initialized. Ensure that you have run the "
                           "initializer operation for this iterator before saving it.");
    else
        rc = vg__ds_serialize(r->it, &bytes, &len, st);
    pthread_mutex_unlock(&r->mu);
    vg_tensor *out = NULL;
    if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out);
    if (rc == VG_OK) rc = vg_tensor_set_string(out, 0, (const char *)bytes, len, st);
    vg__free(bytes);
    return rc;
}

/* DeserializeIterator(resource_handle, serialized): the iterator continues from the
 * saved state, over the dataset the state describes (TF's IteratorResource::Restore);
 * it need not have been initialized. */
static vg_code kernel_deserialize_iterator(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    iter_res *r = iter_of(ctx, 0);
    if (!r) return st->code;
    const vg_tensor *t = vg__kctx_input(ctx, 1);
    size_t len = 0;
    const char *bytes = vg_tensor_dtype(t) == VG_STRING && vg_tensor_num_elements(t) == 1 ? vg_tensor_string(t, 0, &len)
                                                                                           : NULL;
    if (!bytes) return vg_status_set(st, VG_INVALID_ARGUMENT, "DeserializeIterator: serialized must be a string scalar");
    vg__ds_iter *it = vg__ds_deserialize((const uint8_t *)bytes, len, st);
    if (!it) {
        vg_status_prefix(st, "restoring iterator '%s': ", r->key + 9);
        return st->code;
    }
    pthread_mutex_lock(&r->mu);
    install_iter(r, it);
    pthread_mutex_unlock(&r->mu);
    return VG_OK;
}

/* SerializeIterator and IteratorToStringHandle: iterator -> string scalar. */
static vg_code shape_iterator_to_string(vg_op *op, vg_status *st) {
    if (vg_output_dtype(vg_op_input(op, 0)) != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input must be an iterator", vg_op_type(op));
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_STRING, vg_shape_make(NULL, 0));
    return VG_OK;
}

static vg_code shape_deserialize_iterator(vg_op *op, vg_status *st) {
    if (vg_output_dtype(vg_op_input(op, 0)) != VG_RESOURCE || vg__op_input_dtype(op, 1) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "DeserializeIterator(resource_handle, serialized) needs an iterator and a string");
    vg__op_set_num_outputs(op, 0);
    return VG_OK;
}

static vg_code shape_get_next(vg_op *op, vg_status *st);

static vg_code shape_get_next_pos(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 1) != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "IteratorGetNextWithPosition: input 1 must be an int64 variable");
    return shape_get_next(op, st);
}

/* IteratorToStringHandle(iterator) -> string scalar */
static vg_code kernel_to_string_handle(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    iter_res *r = iter_of(ctx, 0);
    if (!r) return st->code;
    vg_tensor *out;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out);
    return rc != VG_OK ? rc : vg_tensor_set_string(out, 0, r->key, strlen(r->key), st);
}

/* IteratorFromStringHandleV2(string_handle) -> the iterator of that handle */
static vg_code kernel_from_string_handle(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *h = vg__kctx_input(ctx, 0);
    size_t l = 0;
    const char *p = vg_tensor_num_elements(h) == 1 ? vg_tensor_string(h, 0, &l) : NULL;
    if (!p || l == 0 || l >= 1100 || strncmp(p, "iterator:", 9) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "string_handle must be a handle made by string_handle()");
    char key[1100];
    memcpy(key, p, l);
    key[l] = 0;
    void *r;
    vg_code rc = vg__session_resource(vg__kctx_session(ctx), key, &iter_ops, iter_missing, key, &r, st);
    if (rc != VG_OK) return rc;
    iter_res *ir = r;
    const vg_dtype *types;
    int n = 0;
    vg_op_attr_type_list(vg__kctx_op(ctx), "output_types", &types, &n);
    pthread_mutex_lock(&ir->mu);
    bool ok = !ir->it || ir->it->ds->ncomp == n;
    for (int i = 0; ok && ir->it && i < n; i++) ok = ir->it->ds->types[i] == types[i];
    pthread_mutex_unlock(&ir->mu);
    if (!ok)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "The iterator of handle '%s' yields other types than this feedable iterator expects", key);
    return set_handle(ctx, ir);
}

static vg_code shape_from_string_handle(vg_op *op, vg_status *st) {
    const vg_dtype *t;
    int n = 0;
    if (vg__op_input_dtype(op, 0) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "IteratorFromStringHandleV2: string_handle must be a string");
    if (!vg_op_attr_type_list(op, "output_types", &t, &n) || n < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "IteratorFromStringHandleV2 needs output_types");
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_RESOURCE, vg_shape_make(NULL, 0));
    return VG_OK;
}

static vg_code shape_iterator(vg_op *op, vg_status *st) {
    const vg_dtype *t;
    int n = 0;
    if (!vg_op_attr_type_list(op, "output_types", &t, &n) || n < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s needs output_types", vg_op_type(op));
    if (!strcmp(vg_op_type(op), "OneShotIterator")) {
        vg_output in = vg_op_input(op, 0);
        if (!is_dataset_op(in.op)) return vg_status_set(st, VG_INVALID_ARGUMENT, "OneShotIterator: input must be a dataset");
    }
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_RESOURCE, vg_shape_make(NULL, 0));
    return VG_OK;
}

static vg_code shape_make_iterator(vg_op *op, vg_status *st) {
    if (!is_dataset_op(vg_op_input(op, 0).op) || vg_output_dtype(vg_op_input(op, 1)) != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MakeIterator(dataset, iterator) needs a dataset and an iterator");
    vg__op_set_num_outputs(op, 0);
    return VG_OK;
}

static vg_code shape_get_next(vg_op *op, vg_status *st) {
    const vg_dtype *t;
    const vg_shape *s;
    int n = 0, ns = 0;
    if (!vg_op_attr_type_list(op, "output_types", &t, &n) || !vg_op_attr_shape_list(op, "output_shapes", &s, &ns) ||
        n != ns || n < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "IteratorGetNext needs output_types and output_shapes");
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) vg__op_set_output(op, i, t[i], s[i]);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_op_builder *ds_builder(vg_graph *g, const char *type, const char *name, const vg_dtype *types,
                                 const vg_shape *shapes, int n) {
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : type);
    vg_op_builder_set_attr_type_list(b, "output_types", types, n);
    vg_op_builder_set_attr_shape_list(b, "output_shapes", shapes, n);
    return b;
}

static int input_components(vg_graph *g, vg_output ds, vg_dtype *t, vg_shape *s, const char *what) {
    int n = vg_dataset_components(ds, t, s);
    if (n == 0 && vg_graph_status(g, NULL) == VG_OK)
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: input is not a dataset", what);
    return n;
}

static vg_output finish(vg_op_builder *b) { return vg_out(vg_op_builder_finish(b), 0); }

vg_output vg_dataset_from_tensor_slices(vg_graph *g, const vg_output *components, int n, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    if (n < 1 || n > VG_DATASET_MAX_COMPONENTS || !components) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "from_tensor_slices needs 1 to %d components",
                           VG_DATASET_MAX_COMPONENTS);
        return (vg_output){NULL, 0};
    }
    for (int i = 0; i < n; i++) {
        if (!components[i].op) return (vg_output){NULL, 0};
        t[i] = vg_output_dtype(components[i]);
        vg_shape sh = vg_output_shape(components[i]);
        if (sh.ndims == 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "from_tensor_slices: component %d is a scalar", i);
            return (vg_output){NULL, 0};
        }
        if (sh.ndims > 0) {
            memmove(sh.dims, sh.dims + 1, sizeof(int64_t) * (size_t)(sh.ndims - 1));
            sh.ndims--;
        }
        s[i] = sh;
    }
    vg_op_builder *b = ds_builder(g, "TensorSliceDataset", name, t, s, n);
    vg_op_builder_add_inputs(b, components, n);
    vg_op_builder_set_attr_type_list(b, "Toutput_types", t, n);
    return finish(b);
}

vg_output vg_dataset_from_tensors(vg_graph *g, const vg_output *components, int n, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    if (n < 1 || n > VG_DATASET_MAX_COMPONENTS || !components) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "from_tensors needs 1 to %d components", VG_DATASET_MAX_COMPONENTS);
        return (vg_output){NULL, 0};
    }
    for (int i = 0; i < n; i++) {
        if (!components[i].op) return (vg_output){NULL, 0};
        t[i] = vg_output_dtype(components[i]);
        s[i] = vg_output_shape(components[i]);
    }
    vg_op_builder *b = ds_builder(g, "TensorDataset", name, t, s, n);
    vg_op_builder_add_inputs(b, components, n);
    vg_op_builder_set_attr_type_list(b, "Toutput_types", t, n);
    return finish(b);
}

/* A source dataset of scalar elements of dtype t: op `type` with inputs in[0..n). */
static vg_output scalar_source(vg_graph *g, const char *type, vg_dtype t, const vg_output *in, int n,
                               const char *name) {
    vg_shape s = vg_shape_make(NULL, 0);
    vg_op_builder *b = ds_builder(g, type, name, &t, &s, 1);
    vg_op_builder_add_inputs(b, in, n);
    return finish(b);
}

/* The file datasets' check: false (INVALID_ARGUMENT "<what>: filenames must be a string
 * tensor" set on g) when filenames is not a string tensor. */
static bool string_filenames(vg_graph *g, vg_output filenames, const char *what) {
    if (!filenames.op || vg_output_dtype(filenames) == VG_STRING) return true;
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: filenames must be a string tensor", what);
    return false;
}

vg_output vg_dataset_fixed_length_record(vg_graph *g, vg_output filenames, int64_t header_bytes, int64_t record_bytes,
                                         int64_t footer_bytes, const char *name) {
    if (!string_filenames(g, filenames, "FixedLengthRecordDataset")) return (vg_output){NULL, 0};
    vg_output in[6] = {filenames,
                       vg_const_i64(g, header_bytes, "header_bytes"),
                       vg_const_i64(g, record_bytes, "record_bytes"),
                       vg_const_i64(g, footer_bytes, "footer_bytes"),
                       vg_const_i64(g, 256 * 1024, "buffer_size"),
                       vg_const_string(g, "", "compression_type")};
    return scalar_source(g, "FixedLengthRecordDatasetV2", VG_STRING, in, 6, name);
}

vg_output vg_dataset_range(vg_graph *g, int64_t start, int64_t stop, int64_t step, const char *name) {
    vg_output in[3] = {vg_const_i64(g, start, "start"), vg_const_i64(g, stop, "stop"), vg_const_i64(g, step, "step")};
    return scalar_source(g, "RangeDataset", VG_INT64, in, 3, name);
}

/* TFRecordDataset / TextLineDataset: filenames, compression_type, buffer_size. */
static vg_output compressed_files(vg_graph *g, const char *type, vg_output filenames, const char *compression_type,
                                  const char *name) {
    if (!string_filenames(g, filenames, type)) return (vg_output){NULL, 0};
    vg_output in[3] = {filenames, vg_const_string(g, compression_type ? compression_type : "", "compression_type"),
                       vg_const_i64(g, 256 * 1024, "buffer_size")};
    return scalar_source(g, type, VG_STRING, in, 3, name);
}

vg_output vg_dataset_tfrecord(vg_graph *g, vg_output filenames, const char *compression_type, const char *name) {
    return compressed_files(g, "TFRecordDataset", filenames, compression_type, name);
}

vg_output vg_dataset_text_line(vg_graph *g, vg_output filenames, const char *compression_type, const char *name) {
    return compressed_files(g, "TextLineDataset", filenames, compression_type, name);
}

void vg__ds_fn_free(void *p) {
    vg__ds_fn *fn = p;
    vg_graph_free(fn->g);
    vg_graph_free(fn->vec);
    vg__ds_native_free(fn->native);
    vg__ds_native_free(fn->native_b);
    vg__free(fn);
}

/* ---- captured values (vg_dataset_capture) ----
 * While a function callback runs, its graph is on this thread's stack of function
 * graphs being built (innermost first), with the graph that owns the dataset op (an
 * enclosing function's graph for a flat_map's inner map). A capture adds a placeholder
 * to the function graph and records the outer output: the builder then adds the outer
 * outputs as the dataset op's other_arguments (TF's captured inputs, attr Targuments),
 * which the op evaluates when it makes the dataset (the iterator's initializer) and the
 * iterators feed to the placeholders at every call. */
typedef struct capture_frame {
    vg_graph *fg, *outer;
    vg__ds_fn *f;
    struct capture_frame *up;
} capture_frame;
static _Thread_local capture_frame *capture_frames;

static capture_frame *frame_of(const vg_graph *fg) {
    for (capture_frame *c = capture_frames; c; c = c->up)
        if (c->fg == fg) return c;
    return NULL;
}

static void fn_begin(capture_frame *c, vg_graph *fg, vg_graph *outer, vg__ds_fn *f) {
    c->fg = fg, c->outer = outer, c->f = f, c->up = capture_frames;
    capture_frames = c;
}

static void fn_end(capture_frame *c) { capture_frames = c->up; }

/* Attrs a captured handle keeps (the ops that read them from the handle's producer:
 * a dataset's or iterator's element spec, a table's key and value dtypes). */
static void copy_handle_attrs(vg_op_builder *b, const vg_op *src) {
    const char *t = vg_op_type(src);
    const vg_dtype *types;
    const vg_shape *shapes;
    int n = 0, ns = 0;
    bool spec = strstr(t, "Dataset") || strstr(t, "Iterator") ||
                (!strcmp(t, "Placeholder") && vg_op_attr_type_list(src, "output_types", &types, &n));
    if (spec && vg_op_attr_type_list(src, "output_types", &types, &n) &&
        vg_op_attr_shape_list(src, "output_shapes", &shapes, &ns) && n == ns && n > 0) {
        vg_op_builder_set_attr_type_list(b, "output_types", types, n);
        vg_op_builder_set_attr_shape_list(b, "output_shapes", shapes, n);
    }
    vg_dtype kd, vd;
    if (vg_op_attr_type_(src, "key_dtype", &kd) && vg_op_attr_type_(src, "value_dtype", &vd) &&
        (strstr(t, "HashTable") || !strcmp(t, "Placeholder"))) {
        vg_op_builder_set_attr_type(b, "key_dtype", kd);
        vg_op_builder_set_attr_type(b, "value_dtype", vd);
    }
}

vg_output vg_dataset_capture(vg_graph *fg, vg_output outer, const char *name) {
    const vg_output none = {NULL, 0};
    if (!fg) return none;
    if (vg_graph_status(fg, NULL) != VG_OK) return none;
    if (!outer.op) {
        vg_graph_set_error(fg, VG_INVALID_ARGUMENT, "vg_dataset_capture: no value to capture (its construction failed?)");
        return none;
    }
    vg_graph *og = vg_op_graph(outer.op);
    if (og == fg) return outer; /* already a value of the function */
    capture_frame *c = frame_of(fg);
    if (!c) {
        vg_graph_set_error(fg, VG_INVALID_ARGUMENT,
                           "vg_dataset_capture: the graph is not a tf.data function being built (call it from inside "
                           "the function callback, with the graph the callback received)");
        return none;
    }
    vg__ds_fn *f = c->f;
    if (og != c->outer) { /* from a graph further out: capture it into the enclosing function first */
        if (!frame_of(c->outer)) {
            vg_graph_set_error(fg, VG_INVALID_ARGUMENT,
                               "vg_dataset_capture: '%s' is not in the graph that owns the dataset or an enclosing "
                               "function's graph", vg_op_name(outer.op));
            return none;
        }
        outer = vg_dataset_capture(c->outer, outer, name);
        if (!outer.op) {
            vg_status es;
            vg_graph_status(c->outer, &es);
            vg_graph_set_error(fg, es.code ? es.code : VG_INVALID_ARGUMENT, "%s", es.msg);
            return none;
        }
    }
    for (int i = 0; i < f->ncap; i++) /* TF captures a tensor once */
        if (f->cap_outer[i].op == outer.op && f->cap_outer[i].index == outer.index) return f->caps[i];
    if (f->ncap >= VG_DATASET_MAX_CAPTURES) {
        vg_graph_set_error(fg, VG_RESOURCE_EXHAUSTED, "vg_dataset_capture: a function captures at most %d values",
                           VG_DATASET_MAX_CAPTURES);
        return none;
    }
    vg_dtype dt = vg_output_dtype(outer);
    vg_shape sh = vg_output_shape(outer);
    char nm[600];
    if (!name) snprintf(nm, sizeof nm, "%s", vg_op_name(outer.op));
    else snprintf(nm, sizeof nm, "%s", name);
    for (char *p = nm; *p; p++) /* a placeholder of the function graph's top scope */
        if (*p == '/') *p = '_';
    vg_op_builder *b = vg_op_builder_new(fg, "Placeholder", nm);
    vg_op_builder_set_attr_type(b, "dtype", dt);
    vg_op_builder_set_attr_shape(b, "shape", sh);
    if (dt == VG_RESOURCE) copy_handle_attrs(b, outer.op);
    vg_op *ph = vg_op_builder_finish(b);
    if (!ph) return none;
    f->cap_outer[f->ncap] = outer;
    f->caps[f->ncap] = vg_out(ph, 0);
    return f->caps[f->ncap++];
}

/* The captured values of f as the dataset op's other_arguments (attr Targuments). */
static void add_captures(vg_op_builder *b, const vg__ds_fn *f) {
    vg_dtype t[VG_DATASET_MAX_CAPTURES];
    for (int i = 0; i < f->ncap; i++) t[i] = vg_output_dtype(f->cap_outer[i]);
    if (f->ncap) vg_op_builder_add_inputs(b, f->cap_outer, f->ncap);
    vg_op_builder_set_attr_type_list(b, "Targuments", f->ncap ? t : NULL, f->ncap);
}

vg_code vg__ds_fn_run_with(vg_session *s, const vg__ds_fn *fn, vg_tensor *const *cap, vg_tensor *const *in,
                           vg_tensor **out, int nout, vg_status *st) {
    if (fn->ncap == 0)
        return vg_session_run(s, NULL, fn->args, in, fn->nargs, fn->outs, out, nout, NULL, 0, NULL, st);
    vg_output feeds[VG_DATASET_MAX_COMPONENTS + VG_DATASET_MAX_CAPTURES];
    vg_tensor *vals[VG_DATASET_MAX_COMPONENTS + VG_DATASET_MAX_CAPTURES];
    for (int i = 0; i < fn->nargs; i++) feeds[i] = fn->args[i], vals[i] = in[i];
    for (int i = 0; i < fn->ncap; i++) {
        if (!cap[i]) return vg_status_set(st, VG_INTERNAL, "dataset function: captured value %d missing", i);
        feeds[fn->nargs + i] = fn->caps[i], vals[fn->nargs + i] = cap[i];
    }
    return vg_session_run(s, NULL, feeds, vals, fn->nargs + fn->ncap, fn->outs, out, nout, NULL, 0, NULL, st);
}

vg_code vg__ds_fn_run(vg_session *s, const vg__dataset *d, vg_tensor *const *in, vg_tensor **out, int nout,
                      vg_status *st) {
    return vg__ds_fn_run_with(s, d->fn, d->cap, in, out, nout, st);
}

static bool fn_finish(vg_graph *g, vg__ds_fn *f, vg_dataset_map_fn fn, void *payload, const char *what,
                      const char *name, char *key, size_t keylen);

/* Builds the function graph of a map / interleave over ds's elements and stores it in
 * g's user data under *key. NULL on failure (the graph's error set). */
static vg__ds_fn *build_fn(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload, const char *what,
                           const char *name, char *key, size_t keylen) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, what);
    if (n == 0) return NULL;
    if (!fn) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: NULL function", what);
        return NULL;
    }
    vg__ds_fn *f = vg__calloc(1, sizeof *f);
    if (!f || !(f->g = vg_graph_new())) {
        vg__free(f);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        return NULL;
    }
    f->nargs = n;
    /* a window's elements are datasets, one per component of the window's input */
    vg_dtype wt[VG_DATASET_MAX_COMPONENTS];
    vg_shape ws[VG_DATASET_MAX_COMPONENTS];
    bool window = !strcmp(vg_op_type(ds.op), "WindowDataset") && vg_dataset_components(vg_op_input(ds.op, 0), wt, ws) == n;
    for (int i = 0; i < n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "arg%d", i);
        if (window) {
            vg_op_builder *b = vg_op_builder_new(f->g, "Placeholder", nm);
            vg_op_builder_set_attr_type(b, "dtype", VG_RESOURCE);
            vg_op_builder_set_attr_shape(b, "shape", vg_shape_make(NULL, 0));
            vg_op_builder_set_attr_type_list(b, "output_types", &wt[i], 1);
            vg_op_builder_set_attr_shape_list(b, "output_shapes", &ws[i], 1);
            f->args[i] = vg_out(vg_op_builder_finish(b), 0);
        } else {
            f->args[i] = vg_placeholder(f->g, t[i], s[i].ndims >= 0 ? s[i].dims : NULL, s[i].ndims, nm);
        }
    }
    return fn_finish(g, f, fn, payload, what, name, key, keylen) ? f : NULL;
}

/* Runs the callback over f's placeholders (f->args[0..f->nargs)), checks its outputs and
 * stores f in g's user data under *key. false on failure (f freed, the graph's error set). */
static bool fn_finish(vg_graph *g, vg__ds_fn *f, vg_dataset_map_fn fn, void *payload, const char *what,
                      const char *name, char *key, size_t keylen) {
    vg_status st;
    capture_frame cf;
    fn_begin(&cf, f->g, g, f);
    vg_code rc = fn(f->g, f->args, f->nargs, f->outs, &f->nouts, payload);
    fn_end(&cf);
    if (rc == VG_OK) rc = vg_graph_status(f->g, &st);
    else vg_status_set(&st, rc, "the function failed");
    if (rc == VG_OK && (f->nouts < 1 || f->nouts > VG_DATASET_MAX_COMPONENTS))
        rc = vg_status_set(&st, VG_INVALID_ARGUMENT, "the function must return 1 to %d outputs",
                           VG_DATASET_MAX_COMPONENTS);
    for (int i = 0; rc == VG_OK && i < f->nouts; i++)
        if (!f->outs[i].op || vg_op_graph(f->outs[i].op) != f->g)
            rc = vg_status_set(&st, VG_INVALID_ARGUMENT, "function output %d is not in the function graph", i);
    if (rc != VG_OK) {
        vg_graph_set_error(g, rc, "%s: %s", what, st.msg);
        vg__ds_fn_free(f);
        return false;
    }
    if (vg__ds_fn_store(g, f, name, key, keylen) != VG_OK) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        return false;
    }
    return true;
}

vg_code vg__ds_fn_store(vg_graph *g, vg__ds_fn *f, const char *name, char *key, size_t keycap) {
    char uniq[512];
    vg_graph_unique_name(g, name, uniq, sizeof uniq);
    snprintf(key, keycap, FN_KEY_PREFIX "%s", uniq);
    snprintf(f->key, sizeof f->key, "%s", key);
    if (vg_graph_set_user_data(g, key, f, vg__ds_fn_free) != VG_OK) {
        vg__ds_fn_free(f);
        return VG_RESOURCE_EXHAUSTED;
    }
    return VG_OK;
}

vg_output vg_dataset_map(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload, const char *name) {
    return vg_dataset_map_parallel(g, ds, fn, payload, 0, name);
}

vg_output vg_dataset_map_parallel(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload,
                                  int num_parallel_calls, const char *name) {
    char key[600];
    bool par = num_parallel_calls != 0;
    vg__ds_fn *f = build_fn(g, ds, fn, payload, "map", name ? name : par ? "ParallelMapDataset" : "MapDataset", key,
                            sizeof key);
    if (!f) return (vg_output){NULL, 0};
    vg__ds_fn_vectorize(f); /* when it cannot, the map runs element by element */
    if (!f->vec) f->native_b = vg__ds_native_compile_batched(f); /* a map after batch */
    vg_dtype ot[VG_DATASET_MAX_COMPONENTS];
    vg_shape os[VG_DATASET_MAX_COMPONENTS];
    for (int i = 0; i < f->nouts; i++) {
        ot[i] = vg_output_dtype(f->outs[i]);
        os[i] = vg_output_shape(f->outs[i]);
    }
    vg_op_builder *b = ds_builder(g, par ? "ParallelMapDataset" : "MapDataset", name, ot, os, f->nouts);
    vg_op_builder_add_input(b, ds);
    add_captures(b, f);
    if (par) {
        vg_op_builder_add_input(b, vg_const_i32(g, num_parallel_calls, "num_parallel_calls"));
        vg_op_builder_set_attr_bool(b, "sloppy", false);
    }
    vg_op_builder_set_attr_string(b, "f", key, strlen(key));
    return finish(b);
}

/* The datasets whose function returns a dataset (interleave, parallel interleave,
 * flat_map): op `type` over ds with the captures, then int64 Consts vals[0..nvals) named
 * val_names[i]; sloppy adds attr sloppy = false. `what` names the caller in errors. */
static vg_output dataset_fn_op(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload, const char *what,
                               const char *type, const int64_t *vals, const char *const *val_names, int nvals,
                               bool sloppy, const char *name) {
    char key[600];
    vg__ds_fn *f = build_fn(g, ds, fn, payload, what, name ? name : type, key, sizeof key);
    if (!f) return (vg_output){NULL, 0};
    vg__ds_fn_vectorize(f); /* when it cannot, the map runs element by element */
    if (!f->vec) f->native_b = vg__ds_native_compile_batched(f); /* a map after batch */
    vg_dtype ot[VG_DATASET_MAX_COMPONENTS];
    vg_shape os[VG_DATASET_MAX_COMPONENTS];
    int n = f->nouts == 1 ? vg_dataset_components(f->outs[0], ot, os) : 0;
    if (n == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: the function must return one dataset", what);
        return (vg_output){NULL, 0};
    }
    vg_output in[3];
    for (int i = 0; i < nvals; i++) in[i] = vg_const_i64(g, vals[i], val_names[i]);
    vg_op_builder *b = ds_builder(g, type, name, ot, os, n);
    vg_op_builder_add_input(b, ds);
    add_captures(b, f);
    if (nvals) vg_op_builder_add_inputs(b, in, nvals);
    vg_op_builder_set_attr_string(b, "f", key, strlen(key));
    if (sloppy) vg_op_builder_set_attr_bool(b, "sloppy", false);
    return finish(b);
}

static const char *const k_interleave_args[3] = {"cycle_length", "block_length", "num_parallel_calls"};

vg_output vg_dataset_interleave(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload, int64_t cycle_length,
                                int64_t block_length, const char *name) {
    const int64_t v[2] = {cycle_length, block_length};
    return dataset_fn_op(g, ds, fn, payload, "interleave", "InterleaveDataset", v, k_interleave_args, 2, false, name);
}

vg_output vg_dataset_interleave_parallel(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload,
                                         int64_t cycle_length, int64_t block_length, int num_parallel_calls,
                                         const char *name) {
    const int64_t v[3] = {cycle_length, block_length, num_parallel_calls};
    return dataset_fn_op(g, ds, fn, payload, "interleave", "ParallelInterleaveDatasetV2", v, k_interleave_args, 3,
                         true, name);
}

vg_output vg_dataset_flat_map(vg_graph *g, vg_output ds, vg_dataset_map_fn fn, void *payload, const char *name) {
    return dataset_fn_op(g, ds, fn, payload, "flat_map", "FlatMapDataset", NULL, NULL, 0, false, name);
}

vg_output vg_dataset_window(vg_graph *g, vg_output ds, int64_t size, int64_t shift, int64_t stride,
                            bool drop_remainder, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, "window");
    if (n == 0) return (vg_output){NULL, 0};
    vg_dtype rt[VG_DATASET_MAX_COMPONENTS];
    vg_shape rs[VG_DATASET_MAX_COMPONENTS];
    for (int i = 0; i < n; i++) rt[i] = VG_RESOURCE, rs[i] = vg_shape_make(NULL, 0);
    vg_output in[4] = {vg_const_i64(g, size, "size"), vg_const_i64(g, shift < 0 ? size : shift, "shift"),
                       vg_const_i64(g, stride, "stride"), vg_const_bool(g, drop_remainder, "drop_remainder")};
    vg_op_builder *b = ds_builder(g, "WindowDataset", name, rt, rs, n);
    vg_op_builder_add_input(b, ds);
    vg_op_builder_add_inputs(b, in, 4);
    return finish(b);
}

/* ---- GroupByWindowDataset (tf.contrib.data.group_by_window) ---- */

/* A new function graph with an int64 scalar placeholder "key" and, when n > 0, a
 * dataset placeholder "window" of element types/shapes t/s[0..n) (a VG_RESOURCE that
 * carries output_types / output_shapes, as a window's components). NULL on OOM. */
static vg__ds_fn *key_fn_new(const vg_dtype *t, const vg_shape *s, int n) {
    vg__ds_fn *f = vg__calloc(1, sizeof *f);
    if (!f || !(f->g = vg_graph_new())) {
        vg__free(f);
        return NULL;
    }
    f->args[f->nargs++] = vg_placeholder(f->g, VG_INT64, NULL, 0, "key");
    if (n > 0) {
        vg_op_builder *b = vg_op_builder_new(f->g, "Placeholder", "window");
        vg_op_builder_set_attr_type(b, "dtype", VG_RESOURCE);
        vg_op_builder_set_attr_shape(b, "shape", vg_shape_make(NULL, 0));
        vg_op_builder_set_attr_type_list(b, "output_types", t, n);
        vg_op_builder_set_attr_shape_list(b, "output_shapes", s, n);
        f->args[f->nargs++] = vg_out(vg_op_builder_finish(b), 0);
    }
    if (!f->args[0].op || (n > 0 && !f->args[1].op)) {
        vg__ds_fn_free(f);
        return NULL;
    }
    return f;
}

static vg_code constant_window_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                  void *payload) {
    (void)args, (void)nargs;
    outs[0] = vg_const_i64(fg, *(const int64_t *)payload, "window_size");
    *nouts = 1;
    return VG_OK;
}

static bool is_int64_scalar(vg_output o) {
    vg_shape s = vg_output_shape(o);
    return vg_output_dtype(o) == VG_INT64 && (s.ndims == 0 || s.ndims < 0);
}

static void add_fn_captures(vg_op_builder *b, const vg__ds_fn *f, const char *tattr) {
    vg_dtype t[VG_DATASET_MAX_CAPTURES];
    for (int i = 0; i < f->ncap; i++) t[i] = vg_output_dtype(f->cap_outer[i]);
    if (f->ncap) vg_op_builder_add_inputs(b, f->cap_outer, f->ncap);
    vg_op_builder_set_attr_type_list(b, tattr, f->ncap ? t : NULL, f->ncap);
}

vg_output vg_dataset_group_by_window(vg_graph *g, vg_output ds, vg_dataset_map_fn key_func,
                                     vg_dataset_map_fn reduce_func, int64_t window_size,
                                     vg_dataset_map_fn window_size_func, void *payload, const char *name) {
    const vg_output none = {NULL, 0};
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, "group_by_window");
    if (n == 0) return none;
    if (!key_func || !reduce_func) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "group_by_window: NULL key_func or reduce_func");
        return none;
    }
    if (window_size_func && window_size != -1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "Either the `window_size` argument or the `window_size_func` argument must be specified.");
        return none;
    }
    /* the functions' keys: the op's unique name and the attr */
    char base[400], kn[440], rn[440], wn[440];
    vg_graph_unique_name(g, name ? name : "GroupByWindowDataset", base, sizeof base);
    snprintf(kn, sizeof kn, "%s/key_func", base);
    snprintf(rn, sizeof rn, "%s/reduce_func", base);
    snprintf(wn, sizeof wn, "%s/window_size_func", base);
    char kkey[600], rkey[600], wkey[600];
    vg__ds_fn *kf = build_fn(g, ds, key_func, payload, "group_by_window key_func", kn, kkey, sizeof kkey);
    if (!kf) return none;
    if (kf->nouts != 1 || !is_int64_scalar(kf->outs[0])) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "`key_func` must return a single tf.int64 tensor.");
        return none;
    }
    vg__ds_fn *rf = key_fn_new(t, s, n);
    if (!rf) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "group_by_window: out of memory");
        return none;
    }
    if (!fn_finish(g, rf, reduce_func, payload, "group_by_window reduce_func", rn, rkey, sizeof rkey)) return none;
    vg_dtype ot[VG_DATASET_MAX_COMPONENTS];
    vg_shape os[VG_DATASET_MAX_COMPONENTS];
    int no = rf->nouts == 1 ? vg_dataset_components(rf->outs[0], ot, os) : 0;
    if (no == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "`reduce_func` must return a `Dataset` object.");
        return none;
    }
    vg__ds_fn *wf = key_fn_new(NULL, NULL, 0);
    if (!wf) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "group_by_window: out of memory");
        return none;
    }
    if (!fn_finish(g, wf, window_size_func ? window_size_func : constant_window_fn,
                   window_size_func ? payload : &window_size, "group_by_window window_size_func", wn, wkey, sizeof wkey))
        return none;
    if (wf->nouts != 1 || !is_int64_scalar(wf->outs[0])) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "`window_size_func` must return a single tf.int64 scalar tensor.");
        return none;
    }
    if (kf->ncap + rf->ncap + wf->ncap > VG_DATASET_MAX_CAPTURES) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "group_by_window: its functions capture more than %d values",
                           VG_DATASET_MAX_CAPTURES);
        return none;
    }
    vg_op_builder *b = ds_builder(g, "GroupByWindowDataset", name, ot, os, no);
    vg_op_builder_add_input(b, ds);
    add_fn_captures(b, kf, "Tkey_func_other_arguments");
    add_fn_captures(b, rf, "Treduce_func_other_arguments");
    add_fn_captures(b, wf, "Twindow_size_func_other_arguments");
    vg_op_builder_set_attr_string(b, "key_func", kkey, strlen(kkey));
    vg_op_builder_set_attr_string(b, "reduce_func", rkey, strlen(rkey));
    vg_op_builder_set_attr_string(b, "window_size_func", wkey, strlen(wkey));
    return finish(b);
}

/* ---- ReduceDataset ---- */

/* The number of captured inputs (other_arguments) of a function-taking dataset op. */
static int num_targuments(const vg_op *op) {
    const vg_dtype *t;
    int n = 0;
    return vg_op_attr_type_list(op, "Targuments", &t, &n) ? n : 0;
}

/* ReduceDataset(input_dataset, initial_state..., other_arguments..., f): the final state
 * (one output per state component, of the initial state's dtypes). */
static vg_code shape_reduce(vg_op *op, vg_status *st) {
    const vg_dtype *t;
    const vg_shape *s;
    int n = 0, ns = 0;
    if (!vg_op_attr_type_list(op, "output_types", &t, &n) || !vg_op_attr_shape_list(op, "output_shapes", &s, &ns) ||
        ns != n || n != vg_op_num_inputs(op) - 1 - num_targuments(op))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReduceDataset needs output_types and output_shapes, one per state");
    vg_output in = vg_op_input(op, 0);
    if (vg_output_dtype(in) != VG_RESOURCE || !is_dataset_op(in.op))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReduceDataset: input 0 must be a dataset");
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) vg__op_set_output(op, i, t[i], s[i]);
    return VG_OK;
}

/* Runs the dataset to its end, the function over (state, element) after each element
 * (TF's ReduceDatasetOp::DoCompute). */
static vg_code kernel_reduce(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    vg__dataset *d = vg__dataset_of(vg__kctx_input(ctx, 0), st);
    if (!d) return st->code;
    const char *key;
    size_t kl;
    if (!vg_op_attr_string(op, "f", &key, &kl)) return vg_status_set(st, VG_INVALID_ARGUMENT, "ReduceDataset needs attr f");
    char k[600];
    snprintf(k, sizeof k, "%.*s", (int)(kl < 590 ? kl : 590), key);
    const vg__ds_fn *fn = vg_graph_user_data(vg_op_graph(op), k);
    int ncap = num_targuments(op);
    int ns = vg__kctx_num_inputs(ctx) - 1 - ncap;
    if (!fn) return vg_status_set(st, VG_NOT_FOUND, "ReduceDataset: function '%s' not found", k);
    if (ncap != fn->ncap || ns < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReduceDataset: the function captures %d values, the op has %d",
                             fn->ncap, ncap);
    vg_tensor *cap[VG_DATASET_MAX_CAPTURES];
    for (int i = 0; i < ncap; i++) cap[i] = vg__kctx_input(ctx, 1 + ns + i);
    if (fn->nargs != ns + d->ncomp || fn->nouts != ns)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReduceDataset: the function takes %d arguments and returns %d, "
                             "the state has %d components and the elements %d", fn->nargs, fn->nouts, ns, d->ncomp);
    vg_tensor *args[2 * VG_DATASET_MAX_COMPONENTS] = {0};
    for (int i = 0; i < ns; i++) args[i] = vg_tensor_ref(vg__kctx_input(ctx, i + 1));
    vg_session_options so = {0};
    so.intra_op_threads = 1;
    so.inter_op_threads = 1;
    vg_session *sess = vg_session_new(fn->g, &so, st);
    vg__ds_iter *it = sess ? vg__ds_iter_new(d, st) : NULL;
    vg_code rc = it ? VG_OK : st->code;
    while (rc == VG_OK) {
        bool end = false;
        rc = it->next(it, args + ns, &end, st);
        if (rc != VG_OK || end) break;
        vg_tensor *next[VG_DATASET_MAX_COMPONENTS] = {0};
        rc = vg__ds_fn_run_with(sess, fn, cap, args, next, ns, st);
        vg__ds_free_elem(args + ns, d->ncomp);
        for (int i = 0; rc == VG_OK && i < ns; i++)
            if (vg_tensor_dtype(next[i]) != vg_tensor_dtype(args[i]))
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "ReduceDataset: the function's output %d has another dtype than the state", i);
        if (rc != VG_OK) {
            vg__ds_free_elem(next, ns);
            break;
        }
        for (int i = 0; i < ns; i++) {
            vg_tensor_free(args[i]);
            args[i] = next[i];
        }
    }
    vg__ds_iter_free(it);
    vg_session_free(sess);
    for (int i = 0; i < ns; i++) {
        if (rc == VG_OK) vg__kctx_set_output(ctx, i, args[i]);
        else vg_tensor_free(args[i]);
    }
    return rc;
}

/* The placeholders of a reduce function: the state's (unknown shapes where `loose`), then
 * the elements'. */
static vg__ds_fn *build_reduce_fn(vg_graph *g, const vg_output *state, int ns, const vg_dtype *et, const vg_shape *es,
                                  int ne, const bool *loose, vg_dataset_map_fn fn, void *payload, vg_status *st) {
    vg__ds_fn *f = vg__calloc(1, sizeof *f);
    if (!f || !(f->g = vg_graph_new())) {
        vg__free(f);
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    f->nargs = ns + ne;
    for (int i = 0; i < ns + ne; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, i < ns ? "state%d" : "arg%d", i < ns ? i : i - ns);
        vg_dtype dt = i < ns ? vg_output_dtype(state[i]) : et[i - ns];
        vg_shape sh = i < ns ? vg_output_shape(state[i]) : es[i - ns];
        if (i < ns && loose[i]) sh.ndims = -1;
        f->args[i] = vg_placeholder(f->g, dt, sh.ndims >= 0 ? sh.dims : NULL, sh.ndims, nm);
    }
    capture_frame cf;
    fn_begin(&cf, f->g, g, f);
    vg_code rc = fn(f->g, f->args, f->nargs, f->outs, &f->nouts, payload);
    fn_end(&cf);
    if (rc == VG_OK) rc = vg_graph_status(f->g, st);
    else vg_status_set(st, rc, "the function failed");
    if (rc == VG_OK && f->nouts != ns)
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "the function must return the state's %d components, got %d", ns,
                           f->nouts);
    for (int i = 0; rc == VG_OK && i < ns; i++) {
        if (!f->outs[i].op || vg_op_graph(f->outs[i].op) != f->g)
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "function output %d is not in the function graph", i);
        else if (vg_output_dtype(f->outs[i]) != vg_output_dtype(state[i]))
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "The element types for the new state must match the initial state. Expected %s; got %s.",
                               vg_dtype_name(vg_output_dtype(state[i])), vg_dtype_name(vg_output_dtype(f->outs[i])));
    }
    if (rc != VG_OK) {
        vg__ds_fn_free(f);
        return NULL;
    }
    return f;
}

static bool same_shape(vg_shape a, vg_shape b) {
    if (a.ndims != b.ndims) return false;
    for (int i = 0; i < a.ndims; i++)
        if (a.dims[i] != b.dims[i]) return false;
    return true;
}

int vg_dataset_reduce(vg_graph *g, vg_output ds, const vg_output *initial_state, int n, vg_dataset_map_fn reduce_fn,
                      void *payload, vg_output *outputs, const char *name) {
    vg_dtype et[VG_DATASET_MAX_COMPONENTS];
    vg_shape es[VG_DATASET_MAX_COMPONENTS];
    int ne = input_components(g, ds, et, es, "reduce");
    if (ne == 0) return 0;
    if (n < 1 || n > VG_DATASET_MAX_COMPONENTS || !initial_state || !outputs || !reduce_fn) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "reduce needs 1 to %d state components, outputs and a function",
                           VG_DATASET_MAX_COMPONENTS);
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (!initial_state[i].op) return 0;
    /* TF's reduce traces the function, and again with the state's shapes relaxed where
     * the new state's shape differs from the initial one */
    bool loose[VG_DATASET_MAX_COMPONENTS] = {0};
    vg_status st;
    vg__ds_fn *f = build_reduce_fn(g, initial_state, n, et, es, ne, loose, reduce_fn, payload, &st);
    bool again = false;
    for (int i = 0; f && i < n; i++)
        if (!same_shape(vg_output_shape(f->outs[i]), vg_output_shape(initial_state[i]))) loose[i] = again = true;
    if (f && again) {
        vg__ds_fn_free(f);
        f = build_reduce_fn(g, initial_state, n, et, es, ne, loose, reduce_fn, payload, &st);
    }
    if (!f) {
        vg_graph_set_error(g, st.code, "reduce: %s", st.msg);
        return 0;
    }
    char key[600];
    if (vg__ds_fn_store(g, f, name ? name : "ReduceDataset", key, sizeof key) != VG_OK) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "reduce: out of memory");
        return 0;
    }
    vg_dtype ot[VG_DATASET_MAX_COMPONENTS];
    vg_shape os[VG_DATASET_MAX_COMPONENTS];
    for (int i = 0; i < n; i++) {
        ot[i] = vg_output_dtype(initial_state[i]);
        os[i] = loose[i] ? vg_shape_make(NULL, -1) : vg_output_shape(initial_state[i]);
    }
    vg_op_builder *b = ds_builder(g, "ReduceDataset", name, ot, os, n);
    vg_op_builder_add_input(b, ds);
    vg_op_builder_add_inputs(b, initial_state, n);
    add_captures(b, f);
    vg_op_builder_set_attr_string(b, "f", key, strlen(key));
    vg_op_builder_set_attr_type_list(b, "Tstate", ot, n);
    vg_op_builder_set_attr_bool(b, "use_inter_op_parallelism", true);
    vg_op *op = vg_op_builder_finish(b);
    if (!op) return 0;
    for (int i = 0; i < n; i++) outputs[i] = vg_out(op, i);
    return n;
}

vg_output vg_dataset_filter(vg_graph *g, vg_output ds, vg_dataset_map_fn predicate, void *payload, const char *name) {
    char key[600];
    vg__ds_fn *f = build_fn(g, ds, predicate, payload, "filter", name ? name : "FilterDataset", key, sizeof key);
    if (!f) return (vg_output){NULL, 0};
    vg_shape ps = vg_output_shape(f->outs[0]);
    if (f->nouts != 1 || vg_output_dtype(f->outs[0]) != VG_BOOL || (ps.ndims > 0)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "filter: `predicate` must return a scalar boolean tensor.");
        return (vg_output){NULL, 0};
    }
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = vg_dataset_components(ds, t, s);
    vg_op_builder *b = ds_builder(g, "FilterDataset", name, t, s, n);
    vg_op_builder_add_input(b, ds);
    add_captures(b, f);
    vg_op_builder_set_attr_string(b, "predicate", key, strlen(key));
    return finish(b);
}

vg_output vg_dataset_unbatch(vg_graph *g, vg_output ds, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, "unbatch");
    if (n == 0) return (vg_output){NULL, 0};
    for (int i = 0; i < n; i++) {
        if (s[i].ndims == 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "unbatch: component %d is a scalar", i);
            return (vg_output){NULL, 0};
        }
        if (s[i].ndims > 0) {
            memmove(s[i].dims, s[i].dims + 1, sizeof(int64_t) * (size_t)(s[i].ndims - 1));
            s[i].ndims--;
        }
    }
    vg_op_builder *b = ds_builder(g, "UnbatchDataset", name, t, s, n);
    vg_op_builder_add_input(b, ds);
    return finish(b);
}

vg_output vg_dataset_concatenate(vg_graph *g, vg_output ds, vg_output other, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS], t2[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS], s2[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, "concatenate"), n2 = n ? input_components(g, other, t2, s2, "concatenate") : 0;
    if (n == 0 || n2 == 0) return (vg_output){NULL, 0};
    if (n != n2 || memcmp(t, t2, sizeof(vg_dtype) * (size_t)n) != 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "concatenate: the datasets have different types");
        return (vg_output){NULL, 0};
    }
    for (int i = 0; i < n; i++) { /* the most specific shape compatible with both */
        if (s[i].ndims != s2[i].ndims) {
            s[i] = vg_shape_unknown();
            continue;
        }
        for (int k = 0; k < s[i].ndims; k++)
            if (s[i].dims[k] != s2[i].dims[k]) s[i].dims[k] = -1;
    }
    vg_op_builder *b = ds_builder(g, "ConcatenateDataset", name, t, s, n);
    vg_op_builder_add_input(b, ds);
    vg_op_builder_add_input(b, other);
    return finish(b);
}

vg_output vg_dataset_zip(vg_graph *g, const vg_output *datasets, int n, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int nc = 0;
    if (n < 1 || n > VG_DATASET_MAX_COMPONENTS || !datasets) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "zip needs 1 to %d datasets", VG_DATASET_MAX_COMPONENTS);
        return (vg_output){NULL, 0};
    }
    for (int i = 0; i < n; i++) {
        vg_dtype ti[VG_DATASET_MAX_COMPONENTS];
        vg_shape si[VG_DATASET_MAX_COMPONENTS];
        int k = input_components(g, datasets[i], ti, si, "zip");
        if (k == 0) return (vg_output){NULL, 0};
        if (nc + k > VG_DATASET_MAX_COMPONENTS) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "zip: more than %d components", VG_DATASET_MAX_COMPONENTS);
            return (vg_output){NULL, 0};
        }
        memcpy(t + nc, ti, sizeof(vg_dtype) * (size_t)k);
        memcpy(s + nc, si, sizeof(vg_shape) * (size_t)k);
        nc += k;
    }
    vg_op_builder *b = ds_builder(g, "ZipDataset", name, t, s, nc);
    vg_op_builder_add_inputs(b, datasets, n);
    vg_op_builder_set_attr_int(b, "N", n);
    return finish(b);
}

vg_output vg_dataset_batch(vg_graph *g, vg_output ds, int64_t batch_size, bool drop_remainder, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, "batch");
    if (n == 0) return (vg_output){NULL, 0};
    for (int i = 0; i < n; i++) {
        if (s[i].ndims < 0) continue;
        if (s[i].ndims + 1 > VG_MAX_DIMS) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "batch: component %d has too many dimensions", i);
            return (vg_output){NULL, 0};
        }
        memmove(s[i].dims + 1, s[i].dims, sizeof(int64_t) * (size_t)s[i].ndims);
        s[i].dims[0] = drop_remainder ? batch_size : -1;
        s[i].ndims++;
    }
    vg_output in[2] = {vg_const_i64(g, batch_size, "batch_size"), vg_const_bool(g, drop_remainder, "drop_remainder")};
    vg_op_builder *b = ds_builder(g, "BatchDatasetV2", name, t, s, n);
    vg_op_builder_add_input(b, ds);
    vg_op_builder_add_inputs(b, in, 2);
    vg_op_builder_set_attr_bool(b, "parallel_copy", false);
    return finish(b);
}

/* _is_padded_shape_compatible_with: same rank (when both known) and no known input
 * dimension larger than a known padded one. */
static bool padded_shape_compatible(const vg_shape *padded, const vg_shape *in) {
    if (padded->ndims < 0 || in->ndims < 0) return true;
    if (padded->ndims != in->ndims) return false;
    for (int i = 0; i < in->ndims; i++)
        if (padded->dims[i] >= 0 && in->dims[i] >= 0 && in->dims[i] > padded->dims[i]) return false;
    return true;
}

vg_output vg_dataset_padded_batch(vg_graph *g, vg_output ds, int64_t batch_size, const vg_shape *padded_shapes,
                                  const vg_output *padding_values, bool drop_remainder, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, "padded_batch");
    if (n == 0) return (vg_output){NULL, 0};
    /* the build-time checks of TF 1.15's PaddedBatchDataset (ValueError / TypeError there) */
    for (int c = 0; c < n; c++) {
        char b1[160], b2[160];
        if (padded_shapes && !padded_shape_compatible(&padded_shapes[c], &s[c])) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "The padded shape %s is not compatible with the corresponding input component shape %s.",
                               vg__py_shape_str(&padded_shapes[c], b1, sizeof b1), vg__py_shape_str(&s[c], b2, sizeof b2));
            return (vg_output){NULL, 0};
        }
        if (padding_values && padding_values[c].op) {
            vg_shape ps = vg_output_shape(padding_values[c]);
            if (ps.ndims > 0) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Padding value should be a scalar, but is not: %s",
                                   vg_op_name(padding_values[c].op));
                return (vg_output){NULL, 0};
            }
            if (vg_output_dtype(padding_values[c]) != t[c]) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Padding value tensor (%s) does not match output type: %s",
                                   vg_op_name(padding_values[c].op), vg_dtype_name(t[c]));
                return (vg_output){NULL, 0};
            }
        }
    }
    vg_output in[2 + 2 * VG_DATASET_MAX_COMPONENTS + 1];
    int k = 0;
    in[k++] = vg_const_i64(g, batch_size, "batch_size");
    for (int c = 0; c < n; c++) {
        vg_shape p = padded_shapes ? padded_shapes[c] : s[c];
        if (p.ndims < 0 || p.ndims + 1 > VG_MAX_DIMS) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "padded_batch: component %d needs a padded shape of known rank", c);
            return (vg_output){NULL, 0};
        }
        in[k++] = vg_const_array(g, VG_INT64, (int64_t[]){p.ndims}, 1, p.dims, "padded_shapes");
        s[c] = p;
        memmove(s[c].dims + 1, s[c].dims, sizeof(int64_t) * (size_t)p.ndims);
        s[c].dims[0] = drop_remainder ? batch_size : -1;
        s[c].ndims++;
    }
    for (int c = 0; c < n; c++) {
        if (padding_values && padding_values[c].op) {
            in[k++] = padding_values[c];
        } else if (t[c] == VG_STRING) {
            in[k++] = vg_const_string(g, "", "padding_value");
        } else {
            in[k++] = vg_const_fill(g, t[c], NULL, 0, 0, "padding_value");
        }
    }
    in[k++] = vg_const_bool(g, drop_remainder, "drop_remainder");
    vg_op_builder *b = ds_builder(g, "PaddedBatchDatasetV2", name, t, s, n);
    vg_op_builder_add_input(b, ds);
    vg_op_builder_add_inputs(b, in, k);
    vg_op_builder_set_attr_int(b, "N", n);
    vg_op_builder_set_attr_bool(b, "parallel_copy", false);
    return finish(b);
}

static vg_output same_types(vg_graph *g, const char *type, vg_output ds, const vg_output *extra, int nextra,
                            int reshuffle, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, type);
    if (n == 0) return (vg_output){NULL, 0};
    vg_op_builder *b = ds_builder(g, type, name, t, s, n);
    vg_op_builder_add_input(b, ds);
    vg_op_builder_add_inputs(b, extra, nextra);
    if (reshuffle >= 0) vg_op_builder_set_attr_bool(b, "reshuffle_each_iteration", reshuffle != 0);
    return finish(b);
}

vg_output vg_dataset_shuffle(vg_graph *g, vg_output ds, int64_t buffer_size, int64_t seed,
                             bool reshuffle_each_iteration, const char *name) {
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    if (seed == 0 && vg_graph_seed(g) == 0) s1 = s2 = 0; /* both unset: nondeterministic */
    vg_output in[3] = {vg_const_i64(g, buffer_size, "buffer_size"), vg_const_i64(g, s1, "seed"),
                       vg_const_i64(g, s2, "seed2")};
    return same_types(g, "ShuffleDataset", ds, in, 3, reshuffle_each_iteration, name);
}

vg_output vg_dataset_repeat(vg_graph *g, vg_output ds, int64_t count, const char *name) {
    vg_output c = vg_const_i64(g, count, "count");
    return same_types(g, "RepeatDataset", ds, &c, 1, -1, name);
}
vg_output vg_dataset_take(vg_graph *g, vg_output ds, int64_t count, const char *name) {
    vg_output c = vg_const_i64(g, count, "count");
    return same_types(g, "TakeDataset", ds, &c, 1, -1, name);
}
vg_output vg_dataset_skip(vg_graph *g, vg_output ds, int64_t count, const char *name) {
    vg_output c = vg_const_i64(g, count, "count");
    return same_types(g, "SkipDataset", ds, &c, 1, -1, name);
}
vg_output vg_dataset_shard(vg_graph *g, vg_output ds, int64_t num_shards, int64_t index, const char *name) {
    vg_output c[2] = {vg_const_i64(g, num_shards, "num_shards"), vg_const_i64(g, index, "index")};
    return same_types(g, "ShardDataset", ds, c, 2, -1, name);
}

vg_output vg_dataset_list_files(vg_graph *g, const char *pattern, bool shuffle, int64_t seed, const char *name) {
    vg_graph_push_scope(g, name ? name : "list_files");
    vg_output pat = vg_const_string(g, pattern ? pattern : "", "file_pattern");
    vg_output files = vg_matching_files(g, pat, NULL);
    vg_output cond = vg_greater(g, vg_size(g, files, NULL), vg_const_i32(g, 0, NULL), NULL);
    vg_output msg = vg_const_string(g, "No files matched pattern: ", NULL);
    vg_op *check = vg_assert(g, cond, (vg_output[]){msg, pat}, 2, 3, "assert_not_empty/Assert");
    vg_graph_push_control_deps(g, &check, 1);
    files = vg_identity(g, files, NULL);
    vg_graph_pop_control_deps(g);
    vg_output ds = vg_dataset_from_tensor_slices(g, &files, 1, NULL);
    if (shuffle) {
        /* shuffle(buffer_size=max(number of files, 1)): the buffer grows with the
         * elements, so the file count bounds it */
        int64_t s1, s2;
        vg_graph_get_seed(g, seed, &s1, &s2);
        if (seed == 0 && vg_graph_seed(g) == 0) s1 = s2 = 0;
        vg_output n = vg_maximum(g, vg_cast(g, vg_size(g, files, NULL), VG_INT64, NULL), vg_const_i64(g, 1, NULL), NULL);
        vg_output in[3] = {n, vg_const_i64(g, s1, "seed"), vg_const_i64(g, s2, "seed2")};
        ds = same_types(g, "ShuffleDataset", ds, in, 3, 1, NULL);
    }
    vg_graph_pop_scope(g);
    return ds;
}

vg_output vg_dataset_cache(vg_graph *g, vg_output ds, const char *filename, const char *name) {
    vg_output c = vg_const_string(g, filename ? filename : "", "filename");
    return same_types(g, "CacheDataset", ds, &c, 1, -1, name);
}

vg_output vg_dataset_ignore_errors(vg_graph *g, vg_output ds, const char *name) {
    return same_types(g, "IgnoreErrorsDataset", ds, NULL, 0, -1, name);
}

vg_output vg_dataset_prefetch(vg_graph *g, vg_output ds, int64_t buffer_size, const char *name) {
    vg_output c = vg_const_i64(g, buffer_size, "buffer_size");
    return same_types(g, "PrefetchDataset", ds, &c, 1, -1, name);
}

static vg_op_builder *iter_builder(vg_graph *g, const char *type, vg_output ds, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = input_components(g, ds, t, s, type);
    if (n == 0) return NULL;
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : type);
    vg_op_builder_set_attr_type_list(b, "output_types", t, n);
    vg_op_builder_set_attr_shape_list(b, "output_shapes", s, n);
    vg_op_builder_set_attr_string(b, "container", "", 0);
    vg_op_builder_set_attr_string(b, "shared_name", "", 0);
    return b;
}

vg_output vg_iterator(vg_graph *g, vg_output ds, const char *name) {
    vg_op_builder *b = iter_builder(g, "IteratorV2", ds, name ? name : "Iterator");
    return b ? finish(b) : (vg_output){NULL, 0};
}

vg_op *vg_make_iterator(vg_graph *g, vg_output ds, vg_output iterator, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "MakeIterator", name ? name : "MakeIterator");
    vg_op_builder_add_input(b, ds);
    vg_op_builder_add_input(b, iterator);
    return vg_op_builder_finish(b);
}

vg_output vg_make_initializable_iterator(vg_graph *g, vg_output ds, vg_op **initializer, const char *name) {
    vg_output it = vg_iterator(g, ds, name);
    vg_op *init = it.op ? vg_make_iterator(g, ds, it, NULL) : NULL;
    if (initializer) *initializer = init;
    return init ? it : (vg_output){NULL, 0};
}

vg_output vg_make_one_shot_iterator(vg_graph *g, vg_output ds, const char *name) {
    vg_op_builder *b = iter_builder(g, "OneShotIterator", ds, name);
    if (!b) return (vg_output){NULL, 0};
    vg_op_builder_add_input(b, ds);
    return finish(b);
}

vg_output vg_iterator_string_handle(vg_graph *g, vg_output iterator, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "IteratorToStringHandle", name ? name : "IteratorToStringHandle");
    vg_op_builder_add_input(b, iterator);
    return finish(b);
}

vg_output vg_iterator_from_string_handle(vg_graph *g, vg_output string_handle, vg_output structure, const char *name) {
    vg_dtype t[VG_DATASET_MAX_COMPONENTS];
    vg_shape s[VG_DATASET_MAX_COMPONENTS];
    int n = 0;
    const vg_dtype *it;
    const vg_shape *is;
    int ni = 0, ns = 0;
    if (structure.op && vg_op_attr_type_list(structure.op, "output_types", &it, &ni) &&
        vg_op_attr_shape_list(structure.op, "output_shapes", &is, &ns) && ni == ns && ni <= VG_DATASET_MAX_COMPONENTS) {
        n = ni;
        memcpy(t, it, sizeof(vg_dtype) * (size_t)n);
        memcpy(s, is, sizeof(vg_shape) * (size_t)n);
    }
    if (n == 0) {
        if (vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "from_string_handle: structure must be a dataset or iterator");
        return (vg_output){NULL, 0};
    }
    vg_op_builder *b = vg_op_builder_new(g, "IteratorFromStringHandleV2", name ? name : "IteratorFromStringHandleV2");
    vg_op_builder_add_input(b, string_handle);
    vg_op_builder_set_attr_type_list(b, "output_types", t, n);
    vg_op_builder_set_attr_shape_list(b, "output_shapes", s, n);
    return finish(b);
}

int vg_iterator_signature(vg_graph *g, vg_output iterator, const char *what, const vg_dtype **types,
                          const vg_shape **shapes, int *n_types, int *n_shapes) {
    const vg_op *io = iterator.op;
    const vg_dtype *t;
    const vg_shape *s;
    int n = 0, ns = 0;
    if (!io || !vg_op_attr_type_list(io, "output_types", &t, &n) || !vg_op_attr_shape_list(io, "output_shapes", &s, &ns)) {
        if (vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: not an iterator", what ? what : "iterator");
        return 0;
    }
    *types = t;
    *shapes = s;
    *n_types = n;
    *n_shapes = ns;
    return 1;
}

vg_op *vg_iterator_get_next(vg_graph *g, vg_output iterator, const char *name) {
    const vg_dtype *t;
    const vg_shape *s;
    int n = 0, ns = 0;
    if (!vg_iterator_signature(g, iterator, "iterator_get_next", &t, &s, &n, &ns)) return NULL;
    vg_op_builder *b = vg_op_builder_new(g, "IteratorGetNext", name ? name : "IteratorGetNext");
    vg_op_builder_add_input(b, iterator);
    vg_op_builder_set_attr_type_list(b, "output_types", t, n);
    vg_op_builder_set_attr_shape_list(b, "output_shapes", s, ns);
    return vg_op_builder_finish(b);
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_dataset[] = {
    {"TensorSliceDataset", 1, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"RangeDataset", 3, 3, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"TFRecordDataset", 3, 3, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"MapDataset", 1, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ParallelMapDataset", 2, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"BatchDatasetV2", 3, 3, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ShuffleDataset", 4, 4, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"RepeatDataset", 2, 2, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"TakeDataset", 2, 2, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"SkipDataset", 2, 2, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"PrefetchDataset", 2, 2, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"TextLineDataset", 3, 3, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ShardDataset", 3, 3, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"InterleaveDataset", 3, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"FlatMapDataset", 1, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ParallelInterleaveDatasetV2", 4, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"IgnoreErrorsDataset", 1, 1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"CacheDataset", 2, 2, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"TensorDataset", 1, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"FixedLengthRecordDatasetV2", 6, 6, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"FilterDataset", 1, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"UnbatchDataset", 1, 1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ConcatenateDataset", 2, 2, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ZipDataset", 1, VG_DATASET_MAX_COMPONENTS, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"PaddedBatchDatasetV2", 5, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"WindowDataset", 5, 5, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"GroupByWindowDataset", 1, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ExperimentalGroupByWindowDataset", 1, -1, DS_FLAGS, 0, shape_dataset, kernel_dataset, NULL},
    {"ReduceDataset", 2, -1, DS_FLAGS, 0, shape_reduce, kernel_reduce, NULL},
    {"IteratorV2", 0, 0, IT_FLAGS, 0, shape_iterator, kernel_iterator, NULL},
    {"OneShotIterator", 1, 1, IT_FLAGS, 0, shape_iterator, kernel_one_shot, NULL},
    {"MakeIterator", 2, 2, IT_FLAGS, 0, shape_make_iterator, kernel_make_iterator, NULL},
    {"IteratorGetNext", 1, 1, IT_FLAGS, 0, shape_get_next, kernel_get_next, NULL},
    {"IteratorGetNextWithPosition", 2, 2, IT_FLAGS, 1u << 1, shape_get_next_pos, kernel_get_next_pos, NULL},
    {"IteratorToStringHandle", 1, 1, IT_FLAGS, 0, shape_iterator_to_string, kernel_to_string_handle, NULL},
    {"SerializeIterator", 1, 1, IT_FLAGS, 0, shape_iterator_to_string, kernel_serialize_iterator, NULL},
    {"DeserializeIterator", 2, 2, IT_FLAGS, 0, shape_deserialize_iterator, kernel_deserialize_iterator, NULL},
    {"IteratorFromStringHandleV2", 1, 1, IT_FLAGS, 0, shape_from_string_handle, kernel_from_string_handle, NULL},
    {0},
};
