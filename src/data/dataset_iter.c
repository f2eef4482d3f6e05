/*
 * dataset_iter.c - tf.data's iterators (tensorflow/core/kernels/data/ *_dataset_op.cc
 * semantics): the generic part (making an iterator through its kind's iter_init,
 * saving and restoring it, the context the iterators of one top-level iterator share:
 * reshuffle counts) and the transformations' kinds: map (a function graph run by a
 * private session; vectorized, native and parallel forms), filter, batch, padded_batch,
 * unbatch, shuffle, repeat, take, skip, shard, ignore_errors, cache, concatenate, zip,
 * interleave / flat_map and prefetch (a producer thread and a bounded buffer), each
 * with its vg__ds_kind table at the end. The sources are in dataset_sources.c.
 */
#include "core/xoshiro.h"
#include "data/dataset.h"
#include "kernels/kernel.h"
#include "core/threadpool.h"
#include "io/example_io.h"
#include "io/io.h"
#include "vigil/example.h"
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sched.h>
#include <pthread.h>
#include <time.h>
#include <zlib.h>

/* ------------------------------------------------------------------------ */
/* what the iterators of one top-level iterator share */

typedef struct ctx_entry {
    const void *key;    /* the dataset's op, or the dataset (restored) */
    int64_t count;      /* reshuffle count of the next iterator */
} ctx_entry;

struct vg__ds_ctx {
    atomic_int refs;
    pthread_mutex_t mu;
    ctx_entry *v;
    int n, cap;
};

static vg__ds_ctx *ctx_new(void) {
    vg__ds_ctx *c = vg__calloc(1, sizeof *c);
    if (!c) return NULL;
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void ctx_unref(vg__ds_ctx *c) {
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
    pthread_mutex_destroy(&c->mu);
    vg__free(c->v);
    vg__free(c);
}

static const void *ctx_key(const vg__dataset *d) { return d->src ? d->src : (const void *)d; }

/* d's entry (made with d->iterations when absent), or NULL on OOM; mu held. */
static ctx_entry *ctx_find(vg__ds_ctx *c, const vg__dataset *d) {
    const void *k = ctx_key(d);
    for (int i = 0; i < c->n; i++)
        if (c->v[i].key == k) return &c->v[i];
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 4;
        ctx_entry *nv = vg__realloc(c->v, sizeof(ctx_entry) * (size_t)c->cap, sizeof(ctx_entry) * (size_t)nc);
        if (!nv) return NULL;
        c->v = nv;
        c->cap = nc;
    }
    c->v[c->n].key = k;
    c->v[c->n].count = (int64_t)atomic_load(&((vg__dataset *)d)->iterations);
    return &c->v[c->n++];
}

/* The reshuffle count of a new iterator over d (then advanced). */
static vg__ds_iter *child_new(const vg__ds_iter *parent, vg__dataset *d, vg_status *st);

static int64_t ctx_take(vg__ds_ctx *c, const vg__dataset *d) {
    pthread_mutex_lock(&c->mu);
    ctx_entry *e = ctx_find(c, d);
    int64_t v = e ? e->count++ : (int64_t)atomic_load(&((vg__dataset *)d)->iterations);
    pthread_mutex_unlock(&c->mu);
    return v;
}

static void ctx_set(vg__ds_ctx *c, const vg__dataset *d, int64_t count) {
    pthread_mutex_lock(&c->mu);
    ctx_entry *e = ctx_find(c, d);
    if (e) e->count = count;
    pthread_mutex_unlock(&c->mu);
}

int64_t vg__ds_ctx_iterations(vg__ds_ctx *c, const vg__dataset *d) {
    if (!c) return (int64_t)atomic_load(&((vg__dataset *)d)->iterations);
    const void *k = ctx_key(d);
    int64_t v = (int64_t)atomic_load(&((vg__dataset *)d)->iterations);
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n; i++)
        if (c->v[i].key == k) v = c->v[i].count;
    pthread_mutex_unlock(&c->mu);
    return v;
}

vg__dataset *vg__dataset_new(int kind) {
    vg__dataset *d = vg__calloc(1, sizeof *d);
    if (!d) return NULL;
    atomic_init(&d->refs, 1);
    atomic_init(&d->iterations, 0);
    d->self = d;
    d->kind = kind;
    return d;
}

vg__dataset *vg__dataset_ref(vg__dataset *d) {
    if (d) atomic_fetch_add(&d->refs, 1);
    return d;
}

void vg__dataset_unref(vg__dataset *d) {
    if (!d || atomic_fetch_sub(&d->refs, 1) != 1) return;
    for (int i = 0; i < VG_DATASET_MAX_COMPONENTS; i++) vg_tensor_free(d->comps[i]);
    for (int i = 0; i < d->ncap; i++) vg_tensor_free(d->cap[i]);
    vg_tensor_free(d->files);
    vg__dataset_unref(d->input);
    for (int i = 0; i < d->nmore; i++) vg__dataset_unref(d->more[i]);
    if (d->own_fn) vg__ds_fn_free(d->own_fn);
    if (d->own_fn2) vg__ds_fn_free(d->own_fn2);
    if (d->own_fn3) vg__ds_fn_free(d->own_fn3);
    for (int64_t i = 0; i < d->nelems; i++) vg_tensor_free(d->elems[i]);
    vg__free(d->elems);
    if (d->cache) {
        for (int64_t i = 0; i < d->cache->n * d->ncomp; i++) vg_tensor_free(d->cache->elems[i]);
        vg__free(d->cache->elems);
        vg__free(d->cache->file);
        pthread_mutex_destroy(&d->cache->mu);
        vg__free(d->cache);
    }
    vg__free(d);
}

static void dataset_dealloc(void *data, size_t len, void *payload) {
    (void)data, (void)len;
    vg__dataset_unref(payload);
}

vg_tensor *vg__dataset_tensor(vg__dataset *d, vg_status *st) {
    vg_tensor *t = vg_tensor_new_from(VG_RESOURCE, NULL, 0, &d->self, sizeof d->self, dataset_dealloc, d, st);
    if (!t) vg__dataset_unref(d);
    return t;
}

vg__dataset *vg__dataset_of(const vg_tensor *t, vg_status *st) {
    vg__dataset *d = NULL;
    if (t && vg_tensor_dtype(t) == VG_RESOURCE && vg_tensor_num_elements(t) == 1) memcpy(&d, vg_tensor_data(t), sizeof d);
    if (!d || d->self != d) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "expected a dataset");
        return NULL;
    }
    return d;
}

/* ------------------------------------------------------------------------ */
/* tensor helpers */

/* Row i of t (dims[1:]) as a new tensor. */
vg_tensor *vg__ds_slice_row(const vg_tensor *t, int64_t i, vg_status *st) { return vg__tensor_row(t, i, st); }

void vg__ds_free_elem(vg_tensor **e, int n) {
    for (int i = 0; i < n; i++) {
        vg_tensor_free(e[i]);
        e[i] = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* transformations with one input */

typedef struct unary_it unary_it;
typedef struct slab slab;
/* Records of a block, one after the other: record i is buf[off[i] .. off[i + 1]). */
typedef struct rec_arena {
    uint8_t *buf;
    size_t len, cap;
    size_t *off;
} rec_arena;
static void pmap_release(unary_it *u);
static void slab_free(slab *sb, int nc);

/* Elements (or errors) handed out before anything else: a map's read-ahead and a
 * shuffle's picked element after a save or a restore. */
typedef struct ds_item {
    vg_tensor *t[VG_DATASET_MAX_COMPONENTS];
    vg_code code;
    char *msg;          /* an error's message (vg__malloc) */
} ds_item;
typedef struct ds_queue {
    ds_item *v;
    int64_t n, pos, cap;
} ds_queue;

static void queue_clear(ds_queue *q) {
    for (int64_t i = q->pos; i < q->n; i++) vg__ds_free_elem(q->v[i].t, VG_DATASET_MAX_COMPONENTS);
    for (int64_t i = 0; i < q->n; i++) vg__free(q->v[i].msg);
    q->n = q->pos = 0;
}

static void queue_free(ds_queue *q) {
    queue_clear(q);
    vg__free(q->v);
    q->v = NULL;
    q->cap = 0;
}

/* Appends an element (its references taken over) or an error (code != OK, msg copied). */
static vg_code queue_push(ds_queue *q, vg_code code, vg_tensor *const *t, int nc, const char *msg, vg_status *st) {
    if (q->n == q->cap) {
        int64_t nc2 = q->cap ? q->cap * 2 : 16;
        ds_item *nv = vg__realloc(q->v, sizeof(ds_item) * (size_t)q->cap, sizeof(ds_item) * (size_t)nc2);
        if (!nv) return VG_OOM(st, "iterator queue");
        q->v = nv;
        q->cap = nc2;
    }
    ds_item *e = &q->v[q->n];
    memset(e, 0, sizeof *e);
    e->code = code;
    if (code == VG_OK) memcpy(e->t, t, sizeof(vg_tensor *) * (size_t)nc);
    else if (!(e->msg = vg__strndup(msg ? msg : "", msg ? strlen(msg) : 0))) return VG_OOM(st, "iterator queue");
    q->n++;
    return VG_OK;
}

static inline bool queue_has(const ds_queue *q) { return q->pos < q->n; }

/* Hands out the queue's next item as next() would. */
static vg_code queue_pop(ds_queue *q, vg_tensor **out, int nc, vg_status *st) {
    ds_item *e = &q->v[q->pos++];
    vg_code rc = e->code;
    if (rc == VG_OK) {
        memcpy(out, e->t, sizeof(vg_tensor *) * (size_t)nc);
        memset(e->t, 0, sizeof e->t);
    } else {
        vg_status_set(st, rc, "%s", e->msg ? e->msg : "");
    }
    if (q->pos == q->n) queue_clear(q);
    return rc;
}

static vg_code queue_save(const ds_queue *q, vg__ds_wr *w, int nc, vg_status *st) {
    vg__ds_put_i64(w, q->n - q->pos);
    vg_code rc = VG_OK;
    for (int64_t i = q->pos; i < q->n && rc == VG_OK; i++)
        rc = vg__ds_put_item(w, q->v[i].code, q->v[i].t, nc, q->v[i].msg, st);
    return rc;
}

static vg_code queue_restore(ds_queue *q, vg__ds_rd *r, int nc, vg_status *st) {
    int64_t n = vg__ds_get_range(r, 0, INT64_MAX);
    vg_code rc = vg__ds_rd_status(r, "queue", st);
    for (int64_t i = 0; i < n && rc == VG_OK; i++) {
        vg_tensor *t[VG_DATASET_MAX_COMPONENTS] = {0};
        vg_code code;
        char *msg = NULL;
        if ((rc = vg__ds_get_item(r, nc, &code, t, &msg, st)) != VG_OK) break;
        if (code == VG_OUT_OF_RANGE) rc = vg_status_set(st, VG_INVALID_ARGUMENT, "corrupt iterator state (queue)");
        else rc = queue_push(q, code, t, nc, msg, st);
        if (rc != VG_OK) vg__ds_free_elem(t, nc);
        vg__free(msg);
    }
    return rc;
}

struct unary_it {
    vg__ds_iter base;
    vg__ds_iter *in;
    int64_t count, epoch, in_epoch;
    vg_session *sess;                 /* map */
    vg_session *vsess;                /* map: the vectorized function (blocks of elements) */
    vg_tensor **buf;                  /* shuffle: cap * ncomp */
    int64_t size, cap;
    uint64_t rng[4];
    bool in_end;
    vg__ds_iter **cycle;              /* interleave: cycle_length slots */
    vg__ds_iter *ins[VG_DATASET_MAX_COMPONENTS]; /* zip: the other inputs; concatenate: the second */
    vg_tensor *cur[VG_DATASET_MAX_COMPONENTS];   /* unbatch: the element being split */
    vg_tensor *held[VG_DATASET_MAX_COMPONENTS];  /* map rows: the element of the last view */
    slab *slab;                       /* shuffle over row views: the elements' storage */
    vg__ds_rows *rows;                /* shuffle / batch: the view read from the input */
    int64_t cur_n;
    vg__bundle_writer *cache_w;       /* file cache: this iterator writes the bundle */
    vg__bundle_reader *cache_r;       /* file cache: replaying the bundle */
    struct pmap_block *blk;           /* block map: two blocks of results, served in order */
    int64_t nslots;                   /* elements per block */
    int bcur;                         /* the block being served */
    bool direct;                      /* block map: records read straight into blocks (next_records) */
    bool async, started, busy;        /* async: blk[bcur ^ 1] filled by a pool task (busy) */
    pthread_mutex_t amu;
    pthread_cond_t acv;
    vg__pool *pool;
    int64_t cycle_index, block_index, num_open;
    bool native;                      /* map: fn->native computes the blocks */
    rec_arena arena;                  /* native map: the block's records */
    vg__ds_native_scratch scratch;    /* native map: per-record scratch */
    ds_queue rq;                      /* map, shuffle: handed out first (saved read-ahead) */
    vg_tensor **cycle_args;           /* interleave: the arguments of each open cycle element */
};

typedef struct pmap_slot {
    vg_tensor *in[VG_DATASET_MAX_COMPONENTS], *out[VG_DATASET_MAX_COMPONENTS];
    vg_code rc;
    vg_status st;
} pmap_slot;

/* A block of mapped elements: slots [pos, n) still to serve; in_end: the input ended
 * while it was filled. */
typedef struct pmap_block {
    pmap_slot *slots; /* nslots + 1 (room for an input error after the elements) */
    int64_t n, pos;
    bool in_end;
    /* direct blocks run batched: the function's outputs, rows [0, vrows) are elements
     * 0.. of the block, cut out when served (on the serving thread, so that elements
     * are allocated and freed by the same thread) */
    vg_tensor *vout[VG_DATASET_MAX_COMPONENTS];
    int64_t vrows;
    vg_tensor *nat[VG_DATASET_MAX_COMPONENTS]; /* native blocks: the rows, reused */
    bool native;      /* vout are nat: rows in vg__ds_native_out's form */
} pmap_block;

/* Waits until no fill task runs (the async map's task reads the input). */
static void pmap_quiesce(unary_it *u, bool cancel) {
    if (!u->async) return;
    pthread_mutex_lock(&u->amu);
    if (u->busy && cancel) {
        pthread_mutex_unlock(&u->amu);
        vg__ds_iter_cancel(u->in); /* a task blocked in its input returns */
        pthread_mutex_lock(&u->amu);
    }
    while (u->busy) pthread_cond_wait(&u->acv, &u->amu);
    pthread_mutex_unlock(&u->amu);
}

static void pmap_release(unary_it *u) {
    if (u->pool) vg__pool_free(u->pool);
    for (int b = 0; u->blk && b < 2; b++) {
        vg__ds_free_elem(u->blk[b].vout, VG_DATASET_MAX_COMPONENTS);
        vg__ds_free_elem(u->blk[b].nat, VG_DATASET_MAX_COMPONENTS);
        for (int64_t i = 0; u->blk[b].slots && i <= u->nslots; i++) {
            vg__ds_free_elem(u->blk[b].slots[i].in, VG_DATASET_MAX_COMPONENTS);
            vg__ds_free_elem(u->blk[b].slots[i].out, VG_DATASET_MAX_COMPONENTS);
        }
        vg__free(u->blk[b].slots);
    }
    vg__free(u->blk);
    vg__free(u->arena.buf);
    vg__free(u->arena.off);
    vg__ds_native_scratch_free(&u->scratch);
    if (u->async) {
        pthread_mutex_destroy(&u->amu);
        pthread_cond_destroy(&u->acv);
    }
}

static void unary_free(vg__ds_iter *it) {
    unary_it *u = (unary_it *)it;
    pmap_quiesce(u, true);
    vg__ds_iter_free(u->in);
    if (u->sess) vg_session_free(u->sess);
    if (u->vsess) vg_session_free(u->vsess);
    if (u->buf) vg__ds_free_elem(u->buf, (int)(u->size * it->ds->ncomp));
    vg__free(u->buf);
    if (u->cycle)
        for (int64_t i = 0; i < it->ds->a; i++) vg__ds_iter_free(u->cycle[i]);
    vg__free(u->cycle);
    for (int i = 0; i < VG_DATASET_MAX_COMPONENTS; i++) {
        vg__ds_iter_free(u->ins[i]);
        vg_tensor_free(u->cur[i]);
    }
    if (u->cache_w) { /* an unfinished cache file is discarded (its temp files removed) */
        vg__bundle_writer_free(u->cache_w);
        pthread_mutex_lock(&it->ds->cache->mu);
        it->ds->cache->writing = false;
        pthread_mutex_unlock(&it->ds->cache->mu);
    }
    vg__bundle_reader_free(u->cache_r);
    pmap_release(u);
    slab_free(u->slab, it->ds->ncomp);
    vg__free(u->rows);
    vg__ds_free_elem(u->held, VG_DATASET_MAX_COMPONENTS);
    queue_free(&u->rq);
    if (u->cycle_args) {
        int na = it->ds->fn ? it->ds->fn->nargs : 0;
        vg__ds_free_elem(u->cycle_args, (int)(it->ds->a * na));
        vg__free(u->cycle_args);
    }
}

static vg_code map_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__ds_fn *fn = it->ds->fn;
    if (queue_has(&u->rq)) return queue_pop(&u->rq, out, fn->nouts, st);
    vg_tensor *in[VG_DATASET_MAX_COMPONENTS] = {0};
    vg_code rc = u->in->next(u->in, in, end, st);
    if (rc != VG_OK || *end) return rc;
    rc = vg__ds_fn_run(u->sess, it->ds, in, out, fn->nouts, st);
    vg__ds_free_elem(in, fn->nargs);
    return rc;
}


/* A map whose function parses a vector of records (ParseExample of a batch) with a
 * native form: each record computed straight into the output rows (a deferred image
 * through a row of scratch); the session runs the element when a record is not the
 * plain case, so results and errors are the ops'. Sequential whatever
 * num_parallel_calls (the order is the same): the records cost a fraction of a
 * microsecond each. */
static vg_code native_batch_map_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__ds_fn *fn = it->ds->fn;
    if (queue_has(&u->rq)) return queue_pop(&u->rq, out, fn->nouts, st);
    vg_tensor *in[VG_DATASET_MAX_COMPONENTS] = {0};
    vg_code rc = u->in->next(u->in, in, end, st);
    if (rc != VG_OK || *end) return rc;
    const vg_tensor *recs = in[0];
    int64_t n = vg_tensor_ndims(recs) == 1 ? vg_tensor_dim(recs, 0) : 0;
    bool ok = n > 0 && vg_tensor_dtype(recs) == VG_STRING;
    size_t raw[VG_DATASET_MAX_COMPONENTS], rawmax = 0;
    const vg__ds_xform *xf[VG_DATASET_MAX_COMPONENTS];
    int64_t cnt[VG_DATASET_MAX_COMPONENTS];
    if (ok) {
        size_t l0;
        const char *r0 = vg_tensor_string(recs, 0, &l0);
        ok = vg__ds_native_dyn_counts(fn->native_b, &u->scratch, (const uint8_t *)r0, l0);
    }
    for (int c = 0; ok && c < fn->nouts; c++) {
        xf[c] = vg__ds_native_out(fn->native_b, c, &raw[c]);
        cnt[c] = vg__ds_native_count(fn->native_b, &u->scratch, c);
        if (xf[c]) raw[c] = (size_t)cnt[c]; /* uint8 values */
        vg_shape s = vg_output_shape(fn->outs[c]);
        s.dims[0] = n;
        if (s.ndims == 2 && s.dims[1] < 0) s.dims[1] = cnt[c]; /* a decode_raw of run-time length */
        if (!(out[c] = vg_tensor_new(vg_output_dtype(fn->outs[c]), s.dims, s.ndims, st))) {
            vg__ds_free_elem(out, c);
            vg__ds_free_elem(in, fn->nargs);
            return st->code ? st->code : VG_RESOURCE_EXHAUSTED;
        }
        if (xf[c] && raw[c] > rawmax) rawmax = raw[c];
    }
    if (ok && rawmax > u->arena.cap) {
        uint8_t *nb = vg__malloc(rawmax * VG_DATASET_MAX_COMPONENTS);
        ok = nb != NULL;
        if (nb) {
            vg__free(u->arena.buf);
            u->arena.buf = nb;
            u->arena.cap = rawmax;
        }
    }
    for (int64_t i = 0; ok && i < n; i++) {
        uint8_t *dst[VG_DATASET_MAX_COMPONENTS];
        for (int c = 0; c < fn->nouts; c++) {
            size_t rb = vg_tensor_nbytes(out[c]) / (size_t)n;
            uint8_t *base = xf[c] ? u->arena.buf : vg_tensor_data(out[c]); /* NULL when empty */
            dst[c] = !base ? NULL : xf[c] ? base + (size_t)c * u->arena.cap : base + (size_t)i * rb;
        }
        size_t l;
        const char *p = vg_tensor_string(recs, i, &l);
        ok = vg__ds_native_row(fn->native_b, &u->scratch, (const uint8_t *)p, l, dst);
        for (int c = 0; ok && c < fn->nouts; c++)
            if (xf[c])
                vg__ds_xform_apply_n(xf[c], dst[c], (uint8_t *)vg_tensor_data(out[c]) + (size_t)i * (vg_tensor_nbytes(out[c]) / (size_t)n),
                                     cnt[c]);
    }
    if (!ok) {
        vg__ds_free_elem(out, fn->nouts);
        rc = vg__ds_fn_run(u->sess, it->ds, in, out, fn->nouts, st);
    }
    vg__ds_free_elem(in, fn->nargs);
    return rc;
}

/* ParallelMapDataset: blocks of up to 32 x num_parallel_calls input elements are mapped
 * concurrently (the function's session is thread-safe) and served in input order, so
 * the output order is the sequential one (TF's deterministic, non-sloppy mode).
 *
 * When the function has a vectorized form (fn->vec, dataset_vectorize.c), MapDataset
 * and ParallelMapDataset both work on blocks of VEC_BLOCK x max(1, num_parallel_calls)
 * elements: each part of a block (one per parallel call; the whole block when its
 * records are read straight from a TFRecord source) is stacked, run once through the
 * vectorized function and split back into elements. A part whose elements do not
 * stack (different shapes) or whose batched run fails is mapped element by element,
 * so its results and errors are exactly the per-element ones. */
#define VEC_BLOCK 64

static bool vectorize_on = true;

void vg__ds_set_vectorize(bool on) { __atomic_store_n(&vectorize_on, on, __ATOMIC_RELAXED); }

typedef struct pmap_job {
    unary_it *u;
    const vg__ds_fn *fn;
    pmap_slot *slots;
} pmap_job;

/* Runs the vectorized function on the stacked inputs `in` (n rows) and puts row i of
 * the results in slots[i].out; false (slots untouched) when the run fails or an output
 * does not have n rows. */
static bool vec_run(unary_it *u, const vg__ds_fn *fn, vg_tensor *const *in, pmap_slot *slots, int64_t n) {
    vg_tensor *out[VG_DATASET_MAX_COMPONENTS] = {0};
    vg_status st;
    bool ok = vg_session_run(u->vsess, NULL, fn->vec_args, (vg_tensor **)in, fn->nargs, fn->vec_outs, out, fn->nouts,
                             NULL, 0, NULL, &st) == VG_OK;
    for (int c = 0; ok && c < fn->nouts; c++) ok = vg_tensor_ndims(out[c]) >= 1 && vg_tensor_dim(out[c], 0) == n;
    if (!ok) {
        vg__ds_free_elem(out, fn->nouts);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        pmap_slot *sl = &slots[i];
        vg_status_clear(&sl->st);
        sl->rc = VG_OK;
        for (int c = 0; c < fn->nouts && sl->rc == VG_OK; c++)
            if (!(sl->out[c] = vg__ds_slice_row(out[c], i, &sl->st))) {
                sl->rc = sl->st.code ? sl->st.code : VG_RESOURCE_EXHAUSTED;
                vg__ds_free_elem(sl->out, c);
            }
    }
    vg__ds_free_elem(out, fn->nouts);
    return true;
}

/* Maps slots [begin, end) with one run of the vectorized function; false (the slots'
 * inputs untouched) when the elements do not stack or the run fails. */
static bool vec_chunk(unary_it *u, const vg__ds_fn *fn, pmap_slot *slots, int64_t begin, int64_t end) {
    int64_t n = end - begin;
    vg_tensor *in[VG_DATASET_MAX_COMPONENTS] = {0};
    vg_status st;
    bool ok = true;
    for (int k = 0; ok && k < fn->nargs; k++) {
        const vg_tensor *first = slots[begin].in[k];
        int nd = vg_tensor_ndims(first);
        vg_dtype dt = vg_tensor_dtype(first);
        if (nd + 1 > VG_MAX_DIMS) {
            ok = false;
            break;
        }
        for (int64_t i = begin + 1; ok && i < end; i++) {
            const vg_tensor *e = slots[i].in[k];
            ok = vg_tensor_dtype(e) == dt && vg_tensor_ndims(e) == nd &&
                 !memcmp(vg_tensor_dims(e), vg_tensor_dims(first), sizeof(int64_t) * (size_t)nd);
        }
        int64_t dims[VG_MAX_DIMS];
        dims[0] = n;
        memcpy(dims + 1, vg_tensor_dims(first), sizeof(int64_t) * (size_t)nd);
        if (!ok || !(in[k] = vg_tensor_new(dt, dims, nd + 1, &st))) {
            ok = false;
            break;
        }
        int64_t per = vg_tensor_num_elements(first);
        if (dt == VG_STRING) {
            for (int64_t i = 0; ok && i < n; i++)
                for (int64_t j = 0; ok && j < per; j++) {
                    size_t l;
                    const char *p = vg_tensor_string(slots[begin + i].in[k], j, &l);
                    ok = vg_tensor_set_string(in[k], i * per + j, p, l, &st) == VG_OK;
                }
        } else {
            size_t rb = vg_tensor_nbytes(first);
            for (int64_t i = 0; rb && i < n; i++)
                memcpy((uint8_t *)vg_tensor_data(in[k]) + (size_t)i * rb, vg_tensor_data(slots[begin + i].in[k]), rb);
        }
    }
    if (!ok) {
        vg__ds_free_elem(in, fn->nargs);
        return false;
    }
    ok = vec_run(u, fn, in, slots + begin, n);
    vg__ds_free_elem(in, fn->nargs);
    if (ok)
        for (int64_t i = begin; i < end; i++) vg__ds_free_elem(slots[i].in, fn->nargs);
    return ok;
}

/* Maps slots [begin, end) one element at a time. */
static void pmap_elems(pmap_job *j, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; i++) {
        pmap_slot *sl = &j->slots[i];
        vg_status_clear(&sl->st);
        sl->rc = vg__ds_fn_run(j->u->sess, j->u->base.ds, sl->in, sl->out, j->fn->nouts, &sl->st);
        vg__ds_free_elem(sl->in, j->fn->nargs);
    }
}

static void pmap_chunk(void *arg, int64_t begin, int64_t end) {
    pmap_job *j = arg;
    if (j->u->vsess && end > begin) {
        /* a part of up to VEC_BLOCK elements per run (a part of a parallel block is
         * already that size) */
        for (int64_t b = begin; b < end; b += VEC_BLOCK) {
            int64_t e = end - b > VEC_BLOCK ? b + VEC_BLOCK : end;
            if (!vec_chunk(j->u, j->fn, j->slots, b, e)) pmap_elems(j, b, e);
        }
        return;
    }
    pmap_elems(j, begin, end);
}

/* The sinks of next_records: a string tensor's element i; the native function's row i
 * (and the record kept in the arena, for the session when a record is not the plain
 * case). */
static vg_code string_sink(void *arg, int64_t i, const uint8_t *p, size_t len, vg_status *st) {
    return vg_tensor_set_string(arg, i, (const char *)p, len, st);
}

typedef struct native_fill {
    unary_it *u;
    pmap_block *b;
    bool ok;            /* every record so far computed natively */
} native_fill;

static vg_code native_sink(void *arg, int64_t i, const uint8_t *p, size_t len, vg_status *st) {
    native_fill *f = arg;
    unary_it *u = f->u;
    rec_arena *a = &u->arena;
    if (a->len + len > a->cap) {
        size_t nc = a->cap ? a->cap : 65536;
        while (nc < a->len + len) nc *= 2;
        uint8_t *nb = vg__realloc(a->buf, a->len, nc);
        if (!nb) return VG_OOM(st, "map records");
        a->buf = nb;
        a->cap = nc;
    }
    if (len) memcpy(a->buf + a->len, p, len); /* an empty record: buf may still be NULL */
    a->off[i] = a->len;
    a->len += len;
    a->off[i + 1] = a->len;
    if (f->ok) {
        const vg__ds_fn *fn = u->base.ds->fn;
        uint8_t *dst[VG_DATASET_MAX_COMPONENTS];
        for (int c = 0; c < fn->nouts; c++) {
            uint8_t *base = vg_tensor_data(f->b->nat[c]); /* NULL for an empty output */
            dst[c] = base ? base + (size_t)i * vg_tensor_nbytes(f->b->nat[c]) / (size_t)u->nslots : NULL;
        }
        f->ok = vg__ds_native_row(fn->native, &u->scratch, p, len, dst);
    }
    return VG_OK;
}

/* The block's row tensors of the native function ([nslots] + each output's shape) and
 * the arena's offsets, made at the first fill. */
static vg_code native_rows_ready(unary_it *u, pmap_block *b, vg_status *st) {
    const vg__ds_fn *fn = u->base.ds->fn;
    if (!u->arena.off && !(u->arena.off = vg__malloc(sizeof(size_t) * (size_t)(u->nslots + 1))))
        return VG_OOM(st, "map records");
    for (int c = 0; c < fn->nouts; c++) {
        if (b->nat[c]) continue;
        vg_shape s = vg_output_shape(fn->outs[c]);
        int64_t dims[VG_MAX_DIMS];
        if (s.ndims + 1 > VG_MAX_DIMS)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "map: output %d has too many dimensions", c);
        dims[0] = u->nslots;
        memcpy(dims + 1, s.dims, sizeof(int64_t) * (size_t)s.ndims);
        size_t raw;
        if (vg__ds_native_out(fn->native, c, &raw)) { /* the raw bytes of a deferred output */
            dims[1] = (int64_t)raw;
            b->nat[c] = vg_tensor_new(VG_UINT8, dims, 2, st);
        } else {
            b->nat[c] = vg_tensor_new(vg_output_dtype(fn->outs[c]), dims, s.ndims + 1, st);
        }
        if (!b->nat[c]) return st->code;
    }
    return VG_OK;
}

/* Reads up to nslots elements into block b and maps them (on the pool when the map is
 * parallel and not async). */
static void pmap_fill(unary_it *u, pmap_block *b) {
    const vg__ds_fn *fn = u->base.ds->fn;
    vg_status st;
    vg_status_clear(&st);
    vg_code rc = VG_OK;
    b->n = b->pos = 0;
    vg__ds_free_elem(b->vout, VG_DATASET_MAX_COMPONENTS);
    b->vrows = 0;
    b->native = false;
    if (u->direct) {
        /* the records go straight into the vectorized function's input tensor (no
         * tensor per record, no stacking), or, with a native form of the function,
         * into an arena while each is computed into the block's rows; per-element
         * inputs are made only for a block whose batched run fails */
        vg_tensor *t = NULL;
        native_fill nfill = {u, b, true};
        if (u->native) {
            u->arena.len = 0;
            rc = native_rows_ready(u, b, &st);
            if (rc == VG_OK) rc = u->in->next_records(u->in, native_sink, &nfill, 0, u->nslots, &b->n, &b->in_end, &st);
            if (b->n > 0 && nfill.ok) { /* every record computed: the rows are the block */
                for (int c = 0; c < fn->nouts; c++) b->vout[c] = vg_tensor_ref(b->nat[c]);
                b->vrows = b->n;
                b->native = true;
            } else if (b->n > 0) { /* the records, for the session */
                t = vg_tensor_new(VG_STRING, &b->n, 1, &b->slots[0].st);
                for (int64_t i = 0; t && i < b->n; i++)
                    if (vg_tensor_set_string(t, i, u->arena.buf ? (const char *)u->arena.buf + u->arena.off[i] : "",
                                             u->arena.off[i + 1] - u->arena.off[i], &b->slots[0].st) != VG_OK) {
                        vg_tensor_free(t);
                        t = NULL;
                    }
            }
        } else {
            t = vg_tensor_new(VG_STRING, &u->nslots, 1, &st);
            rc = t ? u->in->next_records(u->in, string_sink, t, 0, u->nslots, &b->n, &b->in_end, &st) : st.code;
        }
        vg_tensor *in = t;
        if (t && b->n > 0 && b->n < vg_tensor_num_elements(t)) { /* a short block: a tensor of its size */
            in = vg_tensor_new(VG_STRING, &b->n, 1, &st);
            for (int64_t i = 0; in && i < b->n; i++) {
                size_t l;
                const char *p = vg_tensor_string(t, i, &l);
                if (vg_tensor_set_string(in, i, p, l, &st) != VG_OK) {
                    vg_tensor_free(in);
                    in = NULL;
                }
            }
        }
        bool ok = b->vrows > 0;
        if (!ok && b->n > 0 && in) {
            ok = vg_session_run(u->vsess, NULL, fn->vec_args, &in, 1, fn->vec_outs, b->vout, fn->nouts, NULL, 0, NULL,
                                &b->slots[0].st) == VG_OK;
            for (int c = 0; ok && c < fn->nouts; c++)
                ok = vg_tensor_ndims(b->vout[c]) >= 1 && vg_tensor_dim(b->vout[c], 0) == b->n;
            if (ok) b->vrows = b->n;
            else vg__ds_free_elem(b->vout, VG_DATASET_MAX_COMPONENTS);
        }
        if (b->n > 0 && !ok) {
            for (int64_t i = 0; i < b->n; i++) {
                size_t l = 0;
                const char *p = t ? vg_tensor_string(t, i, &l) : NULL;
                if (!p && u->native) { /* the tensor could not be made: from the arena */
                    p = (const char *)u->arena.buf + u->arena.off[i];
                    l = u->arena.off[i + 1] - u->arena.off[i];
                }
                if (!p || !(b->slots[i].in[0] = vg_tensor_new_string_scalar(p, l, &b->slots[i].st))) {
                    b->slots[i].rc = b->slots[i].st.code ? b->slots[i].st.code : VG_RESOURCE_EXHAUSTED;
                    continue;
                }
                pmap_job j = {u, fn, b->slots};
                pmap_elems(&j, i, i + 1);
            }
        }
        if (in != t) vg_tensor_free(in);
        vg_tensor_free(t);
        if (rc != VG_OK) {
            b->slots[b->n].rc = rc;
            vg_status_copy(&b->slots[b->n].st, &st);
            memset(b->slots[b->n].out, 0, sizeof b->slots[b->n].out);
            b->n++;
        }
        return;
    }
    while (b->n < u->nslots) {
        rc = u->in->next(u->in, b->slots[b->n].in, &b->in_end, &st);
        if (rc != VG_OK || b->in_end) break;
        b->n++;
    }
    pmap_job j = {u, fn, b->slots};
    if (b->n > 0) {
        if (u->pool && !u->async) vg__pool_parallel_for(u->pool, b->n, (int)u->base.ds->c, pmap_chunk, &j);
        else pmap_chunk(&j, 0, b->n);
    }
    if (rc != VG_OK) { /* an input error after some elements: report it after them */
        b->slots[b->n].rc = rc;
        vg_status_copy(&b->slots[b->n].st, &st);
        memset(b->slots[b->n].out, 0, sizeof b->slots[b->n].out);
        b->n++;
    }
}

static void pmap_task(void *arg) {
    unary_it *u = arg;
    pmap_fill(u, &u->blk[u->bcur ^ 1]);
    pthread_mutex_lock(&u->amu);
    u->busy = false;
    pthread_cond_broadcast(&u->acv);
    pthread_mutex_unlock(&u->amu);
}

/* Starts filling blk[bcur ^ 1] on the pool (inline when it cannot be queued). */
static void pmap_start(unary_it *u) {
    pthread_mutex_lock(&u->amu);
    u->busy = true;
    pthread_mutex_unlock(&u->amu);
    if (!vg__pool_submit(u->pool, pmap_task, u)) pmap_task(u);
}

/* MapDataset with a vectorized function and ParallelMapDataset: elements are mapped a
 * block at a time and served in input order. A vectorized map with num_parallel_calls
 * 2 is asynchronous (TF's ParallelMapDataset runs its calls in the background too):
 * the pool's thread reads and maps the next block while the caller serves this one,
 * so the map overlaps with the work downstream (shuffle, batch). Otherwise each block
 * is mapped by the pool and the caller together (a per-element function may be heavy,
 * e.g. image decoding, and then splitting the block is what pays). */
/* Makes u->blk[u->bcur] hold an element to serve (filling or switching blocks); false
 * at the end of the input. */
static bool pmap_ready(unary_it *u) {
    pmap_block *b = &u->blk[u->bcur];
    if (b->pos < b->n) return true;
    if (b->in_end) return false;
    if (!u->async) {
        pmap_fill(u, b);
    } else {
        if (!u->started) {
            u->started = true;
            pmap_start(u);
        }
        pmap_quiesce(u, false);
        u->bcur ^= 1;
        b = &u->blk[u->bcur];
        if (!b->in_end) pmap_start(u);
    }
    return b->pos < b->n;
}

/* Hands out block b's next element (b->pos < b->n). */
static vg_code pmap_take(unary_it *u, pmap_block *b, vg_tensor **out, vg_status *st) {
    const vg__ds_fn *fn = u->base.ds->fn;
    if (b->pos < b->vrows && b->native) { /* a row of the native function */
        for (int c = 0; c < fn->nouts; c++) {
            size_t raw;
            const vg__ds_xform *xf = vg__ds_native_out(fn->native, c, &raw);
            vg_shape s = vg_output_shape(fn->outs[c]);
            if (!(out[c] = vg_tensor_new(vg_output_dtype(fn->outs[c]), s.dims, s.ndims, st))) {
                vg__ds_free_elem(out, c);
                return st->code ? st->code : VG_RESOURCE_EXHAUSTED;
            }
            const uint8_t *src = (const uint8_t *)vg_tensor_data(b->vout[c]) + (size_t)b->pos * raw;
            if (xf) vg__ds_xform_apply(xf, src, vg_tensor_data(out[c]));
            else if (raw) memcpy(vg_tensor_data(out[c]), src, raw);
        }
        if (++b->pos == b->vrows) vg__ds_free_elem(b->vout, VG_DATASET_MAX_COMPONENTS);
        return VG_OK;
    }
    if (b->pos < b->vrows) { /* a row of a batched run */
        for (int c = 0; c < fn->nouts; c++)
            if (!(out[c] = vg__ds_slice_row(b->vout[c], b->pos, st))) {
                vg__ds_free_elem(out, c);
                return st->code ? st->code : VG_RESOURCE_EXHAUSTED;
            }
        if (++b->pos == b->vrows) vg__ds_free_elem(b->vout, VG_DATASET_MAX_COMPONENTS);
        return VG_OK;
    }
    pmap_slot *sl = &b->slots[b->pos++];
    if (sl->rc != VG_OK) {
        vg__ds_free_elem(sl->out, fn->nouts);
        return vg_status_set(st, sl->rc, "%s", sl->st.msg);
    }
    memcpy(out, sl->out, sizeof(vg_tensor *) * (size_t)fn->nouts);
    memset(sl->out, 0, sizeof sl->out);
    return VG_OK;
}

static vg_code parallel_map_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    if (queue_has(&u->rq)) return queue_pop(&u->rq, out, it->ds->fn->nouts, st);
    if (!pmap_ready(u)) {
        *end = true;
        return VG_OK;
    }
    return pmap_take(u, &u->blk[u->bcur], out, st);
}

/* Moves the elements the block map has read ahead (both blocks of an async map, its
 * background fill finished first) into u->rq, in order, so that a save sees them as a
 * list; the map then continues from a fresh block as a new one would. */
static vg_code pmap_drain(unary_it *u, vg_status *st) {
    const vg__ds_fn *fn = u->base.ds->fn;
    pmap_quiesce(u, false);
    pmap_block *cur = &u->blk[u->bcur], *other = &u->blk[u->bcur ^ 1];
    bool with_other = u->async && u->started && !cur->in_end;
    bool in_end = cur->in_end || (with_other && other->in_end);
    vg_code rc = VG_OK;
    for (int k = 0; k < (with_other ? 2 : 1) && rc == VG_OK; k++) {
        pmap_block *b = k == 0 ? cur : other;
        while (b->pos < b->n && rc == VG_OK) {
            vg_tensor *out[VG_DATASET_MAX_COMPONENTS] = {0};
            vg_status e;
            vg_status_clear(&e);
            vg_code c = pmap_take(u, b, out, &e);
            if ((rc = queue_push(&u->rq, c, out, fn->nouts, e.msg, st)) != VG_OK) vg__ds_free_elem(out, fn->nouts);
        }
    }
    if (rc != VG_OK) return rc;
    for (int k = 0; k < 2; k++) {
        pmap_block *b = &u->blk[k];
        vg__ds_free_elem(b->vout, VG_DATASET_MAX_COMPONENTS);
        b->n = b->pos = b->vrows = 0;
        b->in_end = false;
        b->native = false;
    }
    u->blk[u->bcur].in_end = in_end;
    u->started = false;
    return VG_OK;
}

static bool rows_on = true, native_on = true;

void vg__ds_set_rows(bool on) { __atomic_store_n(&rows_on, on, __ATOMIC_RELAXED); }
void vg__ds_set_native(bool on) { __atomic_store_n(&native_on, on, __ATOMIC_RELAXED); }

/* Sets component c of r's shape from t, whose leading dimension is dropped when
 * `stacked`; false when t is not numeric. */
static bool rows_spec(vg__ds_rows *r, int c, const vg_tensor *t, bool stacked) {
    vg_dtype dt = vg_tensor_dtype(t);
    int nd = vg_tensor_ndims(t) - (stacked ? 1 : 0);
    if (dt == VG_STRING || nd < 0) return false;
    r->dtype[c] = dt;
    r->ndims[c] = nd;
    memcpy(r->dims[c], vg_tensor_dims(t) + (stacked ? 1 : 0), sizeof(int64_t) * (size_t)nd);
    size_t e = vg_dtype_size(dt);
    for (int k = 0; k < nd; k++) e *= (size_t)r->dims[c][k];
    r->bytes[c] = e;
    r->raw[c] = e;
    r->xf[c] = NULL;
    return true;
}

/* The map's row views: rows of a batched run straight from its result tensors; an
 * element mapped on its own (a block that did not run batched) as a view of one,
 * its tensors held until the next call. */
static vg_code map_next_rows(vg__ds_iter *it, int64_t max, vg__ds_rows *r, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__ds_fn *fn = it->ds->fn;
    vg__ds_free_elem(u->held, fn->nouts);
    if (queue_has(&u->rq)) { /* restored read-ahead: views of one */
        vg_code rc = queue_pop(&u->rq, u->held, fn->nouts, st);
        if (rc != VG_OK) return rc;
        for (int c = 0; c < fn->nouts; c++) {
            if (!rows_spec(r, c, u->held[c], false))
                return vg_status_set(st, VG_INTERNAL, "map: row views of a %s component",
                                     vg_dtype_name(vg_tensor_dtype(u->held[c])));
            r->data[0][c] = vg_tensor_data(u->held[c]);
        }
        r->n = 1;
        return VG_OK;
    }
    pmap_block *cb = &u->blk[u->bcur];
    if (cb->vrows && cb->pos == cb->vrows) vg__ds_free_elem(cb->vout, VG_DATASET_MAX_COMPONENTS); /* on this thread */
    if (!pmap_ready(u)) {
        *end = true;
        return VG_OK;
    }
    pmap_block *b = &u->blk[u->bcur];
    if (b->pos < b->vrows && b->native) {
        int64_t k = b->vrows - b->pos < max ? b->vrows - b->pos : max;
        for (int c = 0; c < fn->nouts; c++) {
            vg_shape s = vg_output_shape(fn->outs[c]);
            r->dtype[c] = vg_output_dtype(fn->outs[c]);
            r->ndims[c] = s.ndims;
            memcpy(r->dims[c], s.dims, sizeof(int64_t) * (size_t)s.ndims);
            size_t e = vg_dtype_size(r->dtype[c]);
            for (int d = 0; d < s.ndims; d++) e *= (size_t)s.dims[d];
            r->bytes[c] = e;
            r->xf[c] = vg__ds_native_out(fn->native, c, &r->raw[c]);
            const uint8_t *p = (const uint8_t *)vg_tensor_data(b->vout[c]) + (size_t)b->pos * r->raw[c];
            for (int64_t i = 0; i < k; i++) r->data[i][c] = p + (size_t)i * r->raw[c];
        }
        r->n = k;
        b->pos += k;
        return VG_OK;
    }
    if (b->pos < b->vrows) {
        int64_t k = b->vrows - b->pos < max ? b->vrows - b->pos : max;
        for (int c = 0; c < fn->nouts; c++) {
            if (!rows_spec(r, c, b->vout[c], true))
                return vg_status_set(st, VG_INTERNAL, "map: row views of a %s component",
                                     vg_dtype_name(vg_tensor_dtype(b->vout[c])));
            const uint8_t *p = (const uint8_t *)vg_tensor_data(b->vout[c]) + (size_t)b->pos * r->bytes[c];
            for (int64_t i = 0; i < k; i++) r->data[i][c] = p + (size_t)i * r->bytes[c];
        }
        r->n = k;
        b->pos += k;
        return VG_OK;
    }
    pmap_slot *sl = &b->slots[b->pos++];
    if (sl->rc != VG_OK) {
        vg__ds_free_elem(sl->out, fn->nouts);
        return vg_status_set(st, sl->rc, "%s", sl->st.msg);
    }
    memcpy(u->held, sl->out, sizeof(vg_tensor *) * (size_t)fn->nouts);
    memset(sl->out, 0, sizeof sl->out);
    for (int c = 0; c < fn->nouts; c++) {
        if (!rows_spec(r, c, u->held[c], false))
            return vg_status_set(st, VG_INTERNAL, "map: row views of a %s component",
                                 vg_dtype_name(vg_tensor_dtype(u->held[c])));
        r->data[0][c] = vg_tensor_data(u->held[c]);
    }
    r->n = 1;
    return VG_OK;
}

/* Prefetches the bytes of an element's numeric components (and the line after them,
 * where the allocator's next chunk header lives). */
static void prefetch_row(vg_tensor *const *row, int nc) {
    for (int c = 0; c < nc; c++) {
        if (vg_tensor_dtype(row[c]) == VG_STRING) continue;
        const char *p = vg_tensor_data(row[c]);
        size_t nb = vg_tensor_nbytes(row[c]);
        for (size_t o = 0; o < nb + 64 && o < 65536; o += 64) __builtin_prefetch(p + o);
    }
}

static vg_code batch_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    int nc = d->ncomp;
    int64_t bs = d->a, n = 0;
    vg_tensor **rows = vg__calloc((size_t)(bs * nc), sizeof(vg_tensor *));
    if (!rows) return VG_OOM(st, "batch");
    vg_code rc = VG_OK;
    bool in_end = false;
    while (n < bs && !in_end && rc == VG_OK) {
        rc = u->in->next(u->in, rows + n * nc, &in_end, st);
        if (rc == VG_OK && !in_end) {
            /* the elements come from anywhere in a shuffle buffer (tens of MB): start
             * loading each one's header now and, a row later, its bytes, so that the
             * copies below read from cache */
            for (int c = 0; c < nc; c++) __builtin_prefetch(rows[n * nc + c]);
            if (n > 0) prefetch_row(rows + (n - 1) * nc, nc);
            n++;
        }
    }
    if (n > 0) prefetch_row(rows + (n - 1) * nc, nc);
    if (rc == VG_OK && (n == 0 || (n < bs && d->flag))) *end = true;
    for (int c = 0; c < nc && rc == VG_OK && !*end; c++) {
        const vg_tensor *first = rows[c];
        int nd = vg_tensor_ndims(first);
        for (int64_t k = 1; k < n && rc == VG_OK; k++) {
            const vg_tensor *e = rows[k * nc + c];
            if (vg_tensor_dtype(e) != vg_tensor_dtype(first)) { /* only a hostile restored state gets here */
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "Cannot batch tensors with different dtypes in component %d: %s and %s (element %lld)",
                                   c, vg_dtype_name(vg_tensor_dtype(first)), vg_dtype_name(vg_tensor_dtype(e)),
                                   (long long)k);
                break;
            }
            if (vg_tensor_ndims(e) != nd || memcmp(vg_tensor_dims(e), vg_tensor_dims(first), sizeof(int64_t) * (size_t)nd)) {
                char a[128], b[128];
                vg_shape sa = vg_tensor_shape(first), sb = vg_tensor_shape(e);
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "Cannot batch tensors with different shapes in component %d. First element had "
                                   "shape %s and element %lld had shape %s.",
                                   c, vg_shape_str(&sa, a, sizeof a), (long long)k, vg_shape_str(&sb, b, sizeof b));
            }
        }
        if (rc != VG_OK) break;
        if (nd + 1 > VG_MAX_DIMS) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "batch: element rank too large");
            break;
        }
        int64_t dims[VG_MAX_DIMS];
        dims[0] = n;
        memcpy(dims + 1, vg_tensor_dims(first), sizeof(int64_t) * (size_t)nd);
        vg_tensor *o = vg_tensor_new(vg_tensor_dtype(first), dims, nd + 1, st);
        if (!o) {
            rc = st->code;
            break;
        }
        int64_t per = vg_tensor_num_elements(first);
        for (int64_t k = 0; k < n && rc == VG_OK; k++) {
            const vg_tensor *e = rows[k * nc + c];
            if (vg_tensor_dtype(o) == VG_STRING) {
                for (int64_t j = 0; j < per && rc == VG_OK; j++) {
                    size_t l;
                    const char *s = vg_tensor_string(e, j, &l);
                    rc = vg_tensor_set_string(o, k * per + j, s, l, st);
                }
            } else {
                size_t rb = vg_tensor_nbytes(e);
                if (rb) memcpy((uint8_t *)vg_tensor_data(o) + (size_t)k * rb, vg_tensor_data(e), rb);
            }
        }
        out[c] = o;
    }
    if (rc != VG_OK) vg__ds_free_elem(out, nc);
    vg__ds_free_elem(rows, (int)(bs * nc));
    vg__free(rows);
    return rc;
}

/* batch_next over an input with row views (BatchDatasetV2 semantics kept: the batch's
 * elements are read first, then an input error, the end (drop_remainder) or a shape
 * that differs from the first element's decides; the message names the first
 * differing element of the lowest component): each row is copied from its view
 * straight into the batch's tensors, allocated at the first element's shape. */
static vg_code batch_rows_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    int nc = d->ncomp;
    int64_t bs = d->a, n = 0;
    vg__ds_rows *r = u->rows;
    vg_tensor *o[VG_DATASET_MAX_COMPONENTS] = {0};
    int64_t first_dims[VG_DATASET_MAX_COMPONENTS][VG_MAX_DIMS];
    int first_nd[VG_DATASET_MAX_COMPONENTS];
    int64_t bad_at[VG_DATASET_MAX_COMPONENTS]; /* the first element of another shape, -1 */
    vg_shape bad_shape[VG_DATASET_MAX_COMPONENTS];
    bool in_end = false;
    vg_code rc = VG_OK;
    for (int c = 0; c < nc; c++) bad_at[c] = -1;
    while (n < bs && !in_end) {
        rc = u->in->next_rows(u->in, bs - n, r, &in_end, st);
        if (rc != VG_OK || in_end) break;
        if (n == 0) {
            for (int c = 0; c < nc && rc == VG_OK; c++) {
                if (r->ndims[c] + 1 > VG_MAX_DIMS) {
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "batch: element rank too large");
                    break;
                }
                first_nd[c] = r->ndims[c];
                memcpy(first_dims[c], r->dims[c], sizeof(int64_t) * (size_t)r->ndims[c]);
                int64_t dims[VG_MAX_DIMS];
                dims[0] = bs;
                memcpy(dims + 1, r->dims[c], sizeof(int64_t) * (size_t)r->ndims[c]);
                if (!(o[c] = vg_tensor_new(r->dtype[c], dims, r->ndims[c] + 1, st))) rc = st->code;
            }
            if (rc != VG_OK) break;
        }
        for (int c = 0; c < nc && rc == VG_OK; c++)
            if (r->dtype[c] != vg_tensor_dtype(o[c])) /* only a hostile restored state gets here */
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "Cannot batch tensors with different dtypes in component %d: %s and %s", c,
                                   vg_dtype_name(vg_tensor_dtype(o[c])), vg_dtype_name(r->dtype[c]));
        if (rc != VG_OK) break;
        for (int c = 0; c < nc; c++) {
            bool same = r->ndims[c] == first_nd[c] &&
                        !memcmp(r->dims[c], first_dims[c], sizeof(int64_t) * (size_t)first_nd[c]);
            if (!same) {
                if (bad_at[c] < 0) {
                    bad_at[c] = n;
                    bad_shape[c] = vg_shape_make(r->dims[c], r->ndims[c]);
                }
                continue;
            }
            if (bad_at[c] >= 0) continue; /* the batch fails: no copies */
            size_t rb = r->bytes[c], raw = r->raw[c];
            const vg__ds_xform *xf = r->xf[c];
            uint8_t *dst = (uint8_t *)vg_tensor_data(o[c]) + (size_t)n * rb;
            for (int64_t i = 0; i < r->n; i++) {
                /* the next row's source is loaded while this one is copied (a shuffle's
                 * rows come from anywhere in a buffer of tens of MB) */
                if (i + 1 < r->n)
                    for (size_t k = 0; k < raw && k < 4096; k += 64) __builtin_prefetch(r->data[i + 1][c] + k);
                if (xf) vg__ds_xform_apply(xf, r->data[i][c], dst + (size_t)i * rb);
                else memcpy(dst + (size_t)i * rb, r->data[i][c], rb);
            }
        }
        n += r->n;
    }
    if (rc == VG_OK && (n == 0 || (n < bs && d->flag))) *end = true;
    for (int c = 0; c < nc && rc == VG_OK && !*end; c++) {
        if (bad_at[c] < 0) continue;
        char a[128], b[128];
        vg_shape sa = vg_shape_make(first_dims[c], first_nd[c]);
        rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                           "Cannot batch tensors with different shapes in component %d. First element had shape %s "
                           "and element %lld had shape %s.",
                           c, vg_shape_str(&sa, a, sizeof a), (long long)bad_at[c], vg_shape_str(&bad_shape[c], b, sizeof b));
    }
    if (rc == VG_OK && !*end && n < bs) { /* the last, smaller batch */
        for (int c = 0; c < nc && rc == VG_OK; c++) {
            int64_t dims[VG_MAX_DIMS];
            dims[0] = n;
            memcpy(dims + 1, first_dims[c], sizeof(int64_t) * (size_t)first_nd[c]);
            vg_tensor *t = vg_tensor_new(vg_tensor_dtype(o[c]), dims, first_nd[c] + 1, st);
            if (!t) {
                rc = st->code;
                break;
            }
            if (vg_tensor_nbytes(t)) memcpy(vg_tensor_data(t), vg_tensor_data(o[c]), vg_tensor_nbytes(t));
            vg_tensor_free(o[c]);
            o[c] = t;
        }
    }
    if (rc != VG_OK || *end) {
        vg__ds_free_elem(o, nc);
        return rc;
    }
    memcpy(out, o, sizeof(vg_tensor *) * (size_t)nc);
    return VG_OK;
}


static vg_code shuffle_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    int nc = it->ds->ncomp;
    if (queue_has(&u->rq)) return queue_pop(&u->rq, out, nc, st);
    while (!u->in_end && u->size < u->cap) {
        if (u->size * nc >= u->count) { /* grow the buffer as elements arrive */
            int64_t nn = u->count ? u->count * 2 : 16 * nc, lim = u->cap * nc;
            if (nn > lim) nn = lim;
            vg_tensor **nb = vg__realloc(u->buf, sizeof(vg_tensor *) * (size_t)u->count, sizeof(vg_tensor *) * (size_t)nn);
            if (!nb) return VG_OOM(st, "shuffle buffer");
            u->buf = nb;
            u->count = nn;
        }
        vg_code rc = u->in->next(u->in, u->buf + u->size * nc, &u->in_end, st);
        if (rc != VG_OK) return rc;
        if (!u->in_end) u->size++;
    }
    if (u->size == 0) {
        *end = true;
        return VG_OK;
    }
    int64_t k = (int64_t)(vg__xoshiro_next(u->rng) % (uint64_t)u->size);
    memcpy(out, u->buf + k * nc, sizeof(vg_tensor *) * (size_t)nc);
    u->size--;
    if (k != u->size) memcpy(u->buf + k * nc, u->buf + u->size * nc, sizeof(vg_tensor *) * (size_t)nc);
    return VG_OK;
}

/* ShuffleDataset over an input with row views: the buffer's elements live in a slab of
 * fixed-size slots (the first element's shapes; an element of other shapes keeps its
 * own tensors, `ext`), the buffer itself is the array of slot numbers `idx`, filled,
 * picked from and compacted exactly as shuffle_next does its array of elements, so the
 * order is the same. Slots are allocated in chunks as the buffer grows (no more than
 * the buffer needs) and reused: no allocation per element. A view's slots are freed
 * at the next call (the consumer copies them first). */
#define SLAB_CHUNK 256
struct slab {
    vg__ds_rows spec;           /* n unused: the slots' dtypes, shapes and bytes */
    bool spec_set;              /* false until the first view (a restored buffer is all ext) */
    size_t off[VG_DATASET_MAX_COMPONENTS], slot_bytes;
    uint8_t **chunks;
    int64_t nchunks, nslots;    /* slots made so far, in chunks of SLAB_CHUNK (the last maybe fewer) */
    int64_t room;               /* the length of idx and freel */
    int64_t *idx;               /* the buffer: size slot numbers */
    int64_t *freel, nfree;      /* free slots (a stack) */
    int64_t pend[VG__DS_ROWS_MAX], npend; /* slots of the last view */
    int64_t carry;              /* a picked slot not yet handed out (-1: none) */
    vg_tensor **ext;            /* ext_cap * ncomp: the tensors of an element of other shapes */
    int64_t ext_cap;
    vg_code err;                /* an input error met after a view's first element, */
    vg_status err_st;           /* returned by the next call */
};

static inline uint8_t *slot_ptr(const slab *sb, int64_t slot) {
    return sb->chunks[slot / SLAB_CHUNK] + (size_t)(slot % SLAB_CHUNK) * sb->slot_bytes;
}

static bool slot_is_ext(const slab *sb, int64_t slot, int nc) {
    return slot < sb->ext_cap && sb->ext[slot * nc] != NULL;
}

static void slab_release(slab *sb, int64_t slot, int nc) {
    if (slot < sb->ext_cap) vg__ds_free_elem(sb->ext + slot * nc, nc);
    sb->freel[sb->nfree++] = slot;
}

static void slab_free(slab *sb, int nc) {
    if (!sb) return;
    for (int64_t i = 0; i < sb->nslots && i < sb->ext_cap; i++) vg__ds_free_elem(sb->ext + i * nc, nc);
    for (int64_t k = 0; k < sb->nchunks; k++) vg__free(sb->chunks[k]);
    vg__free(sb->chunks);
    vg__free(sb->idx);
    vg__free(sb->freel);
    vg__free(sb->ext);
    vg__free(sb);
}

/* A free slot (a new one when none is free); -1 on OOM. */
static int64_t slab_alloc(slab *sb, int64_t cap) {
    if (sb->nfree > 0) return sb->freel[--sb->nfree];
    if (sb->nslots == sb->room) {
        /* the buffer (cap), a view (VG__DS_ROWS_MAX) and a carried element are the most
         * slots in use at once: idx and the free list never need more room */
        int64_t most = cap + VG__DS_ROWS_MAX + 1, room = sb->room + SLAB_CHUNK;
        if (room > most) room = most;
        int64_t *ni = vg__realloc(sb->idx, sizeof(int64_t) * (size_t)sb->room, sizeof(int64_t) * (size_t)room);
        if (!ni) return -1;
        sb->idx = ni;
        int64_t *nf = vg__realloc(sb->freel, sizeof(int64_t) * (size_t)sb->room, sizeof(int64_t) * (size_t)room);
        if (!nf) return -1;
        sb->freel = nf;
        sb->room = room;
    }
    return sb->nslots++;
}

/* Makes the chunks up to the one of `slot` (allocated when a slot of the spec's shapes
 * is first written: a restored buffer's slots are ext ones until the spec is known);
 * false on OOM. */
static bool slab_chunks_for(slab *sb, int64_t slot) {
    while (slot / SLAB_CHUNK >= sb->nchunks) {
        uint8_t **nc = vg__realloc(sb->chunks, sizeof(uint8_t *) * (size_t)sb->nchunks,
                                   sizeof(uint8_t *) * (size_t)(sb->nchunks + 1));
        if (!nc) return false;
        sb->chunks = nc;
        /* the last chunk only as large as needed: room grows by whole chunks up to its
         * final size, so a chunk smaller than SLAB_CHUNK is the last one there will be */
        int64_t n = sb->room - sb->nchunks * SLAB_CHUNK;
        if (n > SLAB_CHUNK) n = SLAB_CHUNK;
        uint8_t *chunk = vg__aligned_alloc(sb->slot_bytes * (size_t)n, 64);
        if (!chunk) return false;
        sb->chunks[sb->nchunks++] = chunk;
    }
    return true;
}

/* Stores row i of the view r in a slot; -1 on OOM. */
static int64_t slab_put(unary_it *u, slab *sb, const vg__ds_rows *r, int64_t i, int nc, vg_status *st) {
    bool same = sb->spec_set;
    for (int c = 0; c < nc && same; c++)
        same = r->dtype[c] == sb->spec.dtype[c] && r->ndims[c] == sb->spec.ndims[c] && r->xf[c] == sb->spec.xf[c] &&
               !memcmp(r->dims[c], sb->spec.dims[c], sizeof(int64_t) * (size_t)r->ndims[c]);
    int64_t slot = slab_alloc(sb, u->cap);
    if (slot < 0) {
        VG_OOM(st, "shuffle buffer");
        return -1;
    }
    if (same && !slab_chunks_for(sb, slot)) {
        slab_release(sb, slot, nc);
        VG_OOM(st, "shuffle buffer");
        return -1;
    }
    if (same) {
        uint8_t *p = slot_ptr(sb, slot);
        for (int c = 0; c < nc; c++) memcpy(p + sb->off[c], r->data[i][c], r->raw[c]);
        return slot;
    }
    if (slot >= sb->ext_cap) { /* the tensors of an element of other shapes */
        int64_t ncap = sb->room;
        vg_tensor **ne = vg__realloc(sb->ext, sizeof(vg_tensor *) * (size_t)(sb->ext_cap * nc),
                                     sizeof(vg_tensor *) * (size_t)(ncap * nc));
        if (!ne) {
            slab_release(sb, slot, nc);
            VG_OOM(st, "shuffle buffer");
            return -1;
        }
        memset(ne + sb->ext_cap * nc, 0, sizeof(vg_tensor *) * (size_t)((ncap - sb->ext_cap) * nc));
        sb->ext = ne;
        sb->ext_cap = ncap;
    }
    for (int c = 0; c < nc; c++) {
        vg_tensor *t = vg_tensor_new(r->dtype[c], r->dims[c], r->ndims[c], st);
        if (!t) {
            slab_release(sb, slot, nc);
            return -1;
        }
        if (r->xf[c]) vg__ds_xform_apply(r->xf[c], r->data[i][c], vg_tensor_data(t));
        else if (r->bytes[c]) memcpy(vg_tensor_data(t), r->data[i][c], r->bytes[c]);
        sb->ext[slot * nc + c] = t;
    }
    return slot;
}

/* A slab whose slots' shapes are not known yet. */
static slab *slab_empty(void) {
    slab *sb = vg__calloc(1, sizeof *sb);
    if (sb) sb->carry = -1;
    return sb;
}

/* The slots' shapes: the first view's. */
static void slab_set_spec(slab *sb, const vg__ds_rows *r, int nc) {
    sb->spec = *r;
    sb->spec_set = true;
    size_t off = 0;
    for (int c = 0; c < nc; c++) {
        sb->off[c] = off;
        off += (r->raw[c] + 63) & ~(size_t)63;
    }
    sb->slot_bytes = off ? off : 64;
}

/* Fills the buffer from the input's views up to its capacity (or the input's end). */
static vg_code slab_fill(unary_it *u, int nc, vg_status *st) {
    while (!u->in_end && u->size < u->cap) {
        int64_t want = u->cap - u->size;
        if (want > VG__DS_ROWS_MAX) want = VG__DS_ROWS_MAX;
        vg__ds_rows *r = u->rows;
        vg_code rc = u->in->next_rows(u->in, want, r, &u->in_end, st);
        if (rc != VG_OK) return rc;
        if (u->in_end) break;
        if (!u->slab && !(u->slab = slab_empty())) return VG_OOM(st, "shuffle buffer");
        if (!u->slab->spec_set) slab_set_spec(u->slab, r, nc);
        for (int64_t i = 0; i < r->n; i++) {
            /* a slot is only taken when the element has room in the buffer (r->n <= want) */
            int64_t slot = slab_put(u, u->slab, r, i, nc, st);
            if (slot < 0) {
                /* the view's remaining elements cannot be kept: an error for them, as an
                 * allocation failure in the element path loses that element */
                return st->code ? st->code : VG_RESOURCE_EXHAUSTED;
            }
            u->slab->idx[u->size++] = slot;
        }
    }
    return VG_OK;
}

/* One pick, as shuffle_next: the slot of the element handed out next, -1 at the end. */
static int64_t slab_pick(unary_it *u) {
    slab *sb = u->slab;
    if (u->size == 0) return -1;
    int64_t k = (int64_t)(vg__xoshiro_next(u->rng) % (uint64_t)u->size);
    int64_t slot = sb->idx[k];
    u->size--;
    if (k != u->size) sb->idx[k] = sb->idx[u->size];
    return slot;
}

/* Frees the slots of the last view. */
static void slab_unpend(slab *sb, int nc) {
    if (!sb) return;
    for (int64_t i = 0; i < sb->npend; i++) slab_release(sb, sb->pend[i], nc);
    sb->npend = 0;
}

/* Component shapes of slot's element into r (element 0's spec) when r->n == 0, else
 * whether they match r's. */
static bool slot_spec(const slab *sb, int64_t slot, int nc, vg__ds_rows *r) {
    if (!slot_is_ext(sb, slot, nc)) {
        if (r->n == 0) {
            memcpy(r->dtype, sb->spec.dtype, sizeof r->dtype);
            memcpy(r->ndims, sb->spec.ndims, sizeof r->ndims);
            memcpy(r->dims, sb->spec.dims, sizeof r->dims);
            memcpy(r->bytes, sb->spec.bytes, sizeof r->bytes);
            memcpy(r->xf, sb->spec.xf, sizeof r->xf);
            memcpy(r->raw, sb->spec.raw, sizeof r->raw);
            return true;
        }
        for (int c = 0; c < nc; c++)
            if (r->dtype[c] != sb->spec.dtype[c] || r->ndims[c] != sb->spec.ndims[c] || r->xf[c] != sb->spec.xf[c] ||
                memcmp(r->dims[c], sb->spec.dims[c], sizeof(int64_t) * (size_t)r->ndims[c]))
                return false;
        return true;
    }
    vg__ds_rows one;
    vg__ds_rows *d = r->n == 0 ? r : &one;
    for (int c = 0; c < nc; c++) rows_spec(d, c, sb->ext[slot * nc + c], false);
    if (r->n == 0) return true;
    for (int c = 0; c < nc; c++)
        if (r->dtype[c] != one.dtype[c] || r->ndims[c] != one.ndims[c] || r->xf[c] != NULL ||
            memcmp(r->dims[c], one.dims[c], sizeof(int64_t) * (size_t)r->ndims[c]))
            return false;
    return true;
}

static void view_add(const slab *sb, int64_t slot, int nc, vg__ds_rows *r) {
    if (slot_is_ext(sb, slot, nc)) {
        for (int c = 0; c < nc; c++) r->data[r->n][c] = vg_tensor_data(sb->ext[slot * nc + c]);
    } else {
        const uint8_t *p = slot_ptr(sb, slot);
        for (int c = 0; c < nc; c++) r->data[r->n][c] = p + sb->off[c];
    }
    r->n++;
}

static vg_code shuffle_next_rows(vg__ds_iter *it, int64_t max, vg__ds_rows *r, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    int nc = it->ds->ncomp;
    slab *sb = u->slab;
    slab_unpend(sb, nc);
    vg__ds_free_elem(u->held, nc);
    if (queue_has(&u->rq)) { /* a restored picked element or error: a view of one */
        vg_code rc = queue_pop(&u->rq, u->held, nc, st);
        if (rc != VG_OK) return rc;
        for (int c = 0; c < nc; c++) {
            if (!rows_spec(r, c, u->held[c], false))
                return vg_status_set(st, VG_INTERNAL, "shuffle: row views of a %s component",
                                     vg_dtype_name(vg_tensor_dtype(u->held[c])));
            r->data[0][c] = vg_tensor_data(u->held[c]);
        }
        r->n = 1;
        return VG_OK;
    }
    if (sb && sb->err != VG_OK) { /* met while filling the last view */
        vg_code rc = sb->err;
        sb->err = VG_OK;
        vg_status_copy(st, &sb->err_st);
        return rc;
    }
    r->n = 0;
    if (max > VG__DS_ROWS_MAX) max = VG__DS_ROWS_MAX;
    while (r->n < max) {
        int64_t slot;
        if (sb && sb->carry >= 0) {
            slot = sb->carry;
            sb->carry = -1;
        } else {
            vg_code rc = slab_fill(u, nc, st);
            sb = u->slab;
            if (rc != VG_OK) {
                if (r->n == 0) return rc;
                sb->err = rc; /* after the elements already picked */
                vg_status_copy(&sb->err_st, st);
                break;
            }
            if (!sb || (slot = slab_pick(u)) < 0) break;
        }
        if (!slot_spec(sb, slot, nc, r)) { /* other shapes: the next view starts with it */
            sb->carry = slot;
            break;
        }
        view_add(sb, slot, nc, r);
        sb->pend[sb->npend++] = slot;
    }
    if (r->n == 0) *end = true;
    return VG_OK;
}

/* shuffle_next for a shuffle over row views: the element's tensors from its slot. */
static vg_code shuffle_slab_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    int nc = it->ds->ncomp;
    if (queue_has(&u->rq)) return queue_pop(&u->rq, out, nc, st);
    vg__ds_rows one;
    one.n = 0;
    vg_code rc = shuffle_next_rows(it, 1, &one, end, st);
    if (rc != VG_OK || *end) return rc;
    slab *sb = u->slab;
    int64_t slot = sb->pend[0];
    if (slot_is_ext(sb, slot, nc)) {
        memcpy(out, sb->ext + slot * nc, sizeof(vg_tensor *) * (size_t)nc);
        memset(sb->ext + slot * nc, 0, sizeof(vg_tensor *) * (size_t)nc);
        return VG_OK;
    }
    for (int c = 0; c < nc; c++) {
        if (!(out[c] = vg_tensor_new(one.dtype[c], one.dims[c], one.ndims[c], st))) {
            vg__ds_free_elem(out, c);
            return st->code ? st->code : VG_RESOURCE_EXHAUSTED;
        }
        if (one.xf[c]) vg__ds_xform_apply(one.xf[c], one.data[0][c], vg_tensor_data(out[c]));
        else if (one.bytes[c]) memcpy(vg_tensor_data(out[c]), one.data[0][c], one.bytes[c]);
    }
    return VG_OK;
}

static vg_code repeat_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    for (;;) {
        if (!u->in) {
            if (d->a >= 0 && u->epoch >= d->a) {
                *end = true;
                return VG_OK;
            }
            if (!(u->in = child_new(it, d->input, st))) return st->code;
            u->in_epoch = 0;
        }
        bool e = false;
        vg_code rc = u->in->next(u->in, out, &e, st);
        if (rc != VG_OK) return rc;
        if (!e) {
            u->in_epoch++;
            return VG_OK;
        }
        vg__ds_iter_free(u->in);
        u->in = NULL;
        u->epoch++;
        if (u->in_epoch == 0 && d->a < 0) { /* an empty input repeated forever ends */
            *end = true;
            return VG_OK;
        }
    }
}

/* repeat_next's loop for sources of strings */
static vg_code repeat_next_records(vg__ds_iter *it, vg__ds_rec_sink sink, void *arg, int64_t at, int64_t max,
                                   int64_t *got, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    *got = 0;
    while (*got < max) {
        if (!u->in) {
            if (d->a >= 0 && u->epoch >= d->a) {
                *end = true;
                return VG_OK;
            }
            if (!(u->in = child_new(it, d->input, st))) return st->code;
            u->in_epoch = 0;
        }
        bool e = false;
        int64_t g = 0;
        vg_code rc = u->in->next_records(u->in, sink, arg, at + *got, max - *got, &g, &e, st);
        *got += g;
        u->in_epoch += g;
        if (rc != VG_OK) return rc;
        if (!e) continue;
        vg__ds_iter_free(u->in);
        u->in = NULL;
        u->epoch++;
        if (u->in_epoch == 0 && d->a < 0) {
            *end = true;
            return VG_OK;
        }
    }
    return VG_OK;
}

/* Whether iterators of d have next_records. */
static bool strings_source(const vg__dataset *d) {
    const vg__ds_kind *k = vg__ds_kind_of(d->kind);
    return k->offers_records && k->offers_records(d);
}

static vg_code take_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    if (it->ds->a >= 0 && u->count >= it->ds->a) {
        *end = true;
        return VG_OK;
    }
    vg_code rc = u->in->next(u->in, out, end, st);
    if (rc == VG_OK && !*end) u->count++;
    return rc;
}

static vg_code skip_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    int nc = it->ds->ncomp;
    while (it->ds->a < 0 || u->count < it->ds->a) {
        vg_code rc = u->in->next(u->in, out, end, st);
        if (rc != VG_OK || *end) return rc;
        vg__ds_free_elem(out, nc);
        u->count++;
    }
    return u->in->next(u->in, out, end, st);
}


/* IgnoreErrorsDataset: elements whose production failed are dropped. */
static vg_code ignore_errors_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    for (;;) {
        vg_status e;
        vg_status_clear(&e);
        vg_code rc = u->in->next(u->in, out, end, &e);
        if (rc == VG_OK) return VG_OK;
        if (rc == VG_CANCELLED) {
            vg_status_copy(st, &e);
            return rc;
        }
        u->count++; /* errors skipped so far */
    }
}

static vg_code shard_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    for (;;) {
        vg_code rc = u->in->next(u->in, out, end, st);
        if (rc != VG_OK || *end) return rc;
        int64_t i = u->count++;
        if (i % d->a == d->b) return VG_OK;
        vg__ds_free_elem(out, d->ncomp);
    }
}

/* Opens cycle element `slot` over the dataset fn(args) (args referenced, kept in
 * u->cycle_args for a save). */
static vg_code interleave_open(unary_it *u, int64_t slot, vg_tensor *const *args, vg_status *st) {
    const vg__dataset *d = u->base.ds;
    const vg__ds_fn *fn = d->fn;
    vg_tensor *dt = NULL;
    vg_code rc = vg__ds_fn_run(u->sess, d, args, &dt, 1, st);
    if (rc != VG_OK) return rc;
    vg__dataset *inner = vg__dataset_of(dt, st);
    if (inner && inner->ncomp != d->ncomp) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "interleave: the function's dataset has %d components, "
                      "expected %d", inner->ncomp, d->ncomp);
        inner = NULL;
    }
    vg__ds_iter **cur = &u->cycle[slot];
    if (inner && d->c > 1) {
        /* ParallelInterleaveDatasetV2: each open cycle element is read ahead by
         * its own thread (a prefetch of 2 blocks); the output order is
         * interleave's (TF's sloppy = false). */
        vg__dataset *pf = vg__dataset_new(VG__DS_PREFETCH);
        if (!pf) {
            vg_tensor_free(dt);
            return VG_OOM(st, "parallel interleave");
        }
        pf->ncomp = inner->ncomp;
        memcpy(pf->types, inner->types, sizeof(vg_dtype) * (size_t)inner->ncomp);
        pf->input = vg__dataset_ref(inner);
        pf->a = 2 * d->b;
        *cur = child_new(&u->base, pf, st);
        vg__dataset_unref(pf);
    } else {
        *cur = inner ? child_new(&u->base, inner, st) : NULL;
    }
    vg_tensor_free(dt);
    if (!*cur) return st->code;
    vg_tensor **keep = u->cycle_args + slot * fn->nargs;
    vg__ds_free_elem(keep, fn->nargs);
    for (int i = 0; i < fn->nargs; i++) keep[i] = vg_tensor_ref(args[i]);
    return VG_OK;
}

/* Closes cycle element `slot`. */
static void interleave_close(unary_it *u, int64_t slot) {
    vg__ds_iter_free(u->cycle[slot]);
    u->cycle[slot] = NULL;
    vg__ds_free_elem(u->cycle_args + slot * u->base.ds->fn->nargs, u->base.ds->fn->nargs);
}

/* InterleaveDatasetOp's loop: cycle_length open iterators, block_length elements from
 * each in turn; a finished one is replaced by the dataset of the next input element. */
static vg_code interleave_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    const vg__ds_fn *fn = d->fn;
    while (!u->in_end || u->num_open > 0) {
        vg__ds_iter **cur = &u->cycle[u->cycle_index];
        if (*cur) {
            bool e = false;
            vg_code rc = (*cur)->next(*cur, out, &e, st);
            if (rc != VG_OK) return rc;
            if (!e) {
                if (++u->block_index == d->b) {
                    u->block_index = 0;
                    u->cycle_index = (u->cycle_index + 1) % d->a;
                }
                return VG_OK;
            }
            interleave_close(u, u->cycle_index);
            u->num_open--;
            u->block_index = 0;
            u->cycle_index = (u->cycle_index + 1) % d->a;
        } else if (!u->in_end) {
            vg_tensor *args[VG_DATASET_MAX_COMPONENTS] = {0};
            vg_code rc = u->in->next(u->in, args, &u->in_end, st);
            if (rc != VG_OK) return rc;
            if (u->in_end) continue;
            rc = interleave_open(u, u->cycle_index, args, st);
            vg__ds_free_elem(args, fn->nargs);
            if (rc != VG_OK) return rc;
            u->num_open++;
        } else {
            u->block_index = 0;
            u->cycle_index = (u->cycle_index + 1) % d->a;
        }
    }
    *end = true;
    return VG_OK;
}


static vg_code filter_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    for (;;) {
        vg_code rc = u->in->next(u->in, out, end, st);
        if (rc != VG_OK || *end) return rc;
        vg_tensor *keep = NULL;
        rc = vg__ds_fn_run(u->sess, it->ds, out, &keep, 1, st);
        if (rc == VG_OK && (vg_tensor_dtype(keep) != VG_BOOL || vg_tensor_num_elements(keep) != 1))
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "`predicate` must return a scalar boolean tensor.");
        bool k = rc == VG_OK && *(const bool *)vg_tensor_data(keep);
        vg_tensor_free(keep);
        if (rc == VG_OK && k) return VG_OK;
        vg__ds_free_elem(out, it->ds->ncomp);
        if (rc != VG_OK) return rc;
    }
}

static vg_code unbatch_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    int nc = it->ds->ncomp;
    while (!u->cur[0] || u->count >= u->cur_n) {
        vg__ds_free_elem(u->cur, nc);
        vg_code rc = u->in->next(u->in, u->cur, end, st);
        if (rc != VG_OK || *end) return rc;
        u->count = 0;
        u->cur_n = vg_tensor_ndims(u->cur[0]) > 0 ? vg_tensor_dim(u->cur[0], 0) : -1;
        for (int c = 0; c < nc; c++)
            if (vg_tensor_ndims(u->cur[c]) < 1 || vg_tensor_dim(u->cur[c], 0) != u->cur_n) {
                vg__ds_free_elem(u->cur, nc);
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Input element must have a non-scalar value in each component, with the same "
                                     "first dimension (component %d)", c);
            }
    }
    for (int c = 0; c < nc; c++) {
        if (!(out[c] = vg__ds_slice_row(u->cur[c], u->count, st))) {
            vg__ds_free_elem(out, c);
            return st->code;
        }
    }
    u->count++;
    return VG_OK;
}

static vg_code concatenate_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    if (!u->in_end) {
        vg_code rc = u->in->next(u->in, out, &u->in_end, st);
        if (rc != VG_OK || !u->in_end) return rc;
    }
    if (!u->ins[0] && !(u->ins[0] = child_new(it, it->ds->more[0], st))) return st->code;
    return u->ins[0]->next(u->ins[0], out, end, st);
}

static vg_code zip_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    int at = 0;
    for (int k = 0; k <= d->nmore; k++) {
        vg__ds_iter *in = k == 0 ? u->in : u->ins[k - 1];
        const vg__dataset *src = k == 0 ? d->input : d->more[k - 1];
        vg_code rc = in->next(in, out + at, end, st);
        if (rc != VG_OK || *end) {
            vg__ds_free_elem(out, at);
            return rc;
        }
        at += src->ncomp;
    }
    return VG_OK;
}


/* PaddedBatchDatasetV2: like batch, each component padded (with its padding value) to
 * the padded shape, whose -1 dimensions take the batch's largest size. */
static vg_code padded_batch_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    int nc = d->ncomp;
    int64_t bs = d->a, n = 0;
    vg_tensor **rows = vg__calloc((size_t)(bs * nc), sizeof(vg_tensor *));
    if (!rows) return VG_OOM(st, "padded batch");
    vg_code rc = VG_OK;
    bool in_end = false;
    while (n < bs && !in_end && rc == VG_OK) {
        rc = u->in->next(u->in, rows + n * nc, &in_end, st);
        if (rc == VG_OK && !in_end) n++;
    }
    if (rc == VG_OK && (n == 0 || (n < bs && d->flag))) *end = true;
    for (int c = 0; c < nc && rc == VG_OK && !*end; c++) {
        const vg_shape *ps = &d->padded[c];
        int r = ps->ndims;
        int64_t dims[VG_MAX_DIMS];
        dims[0] = n;
        for (int k = 0; k < r; k++) dims[1 + k] = ps->dims[k] >= 0 ? ps->dims[k] : 0;
        for (int64_t e = 0; e < n && rc == VG_OK; e++) {
            const vg_tensor *x = rows[e * nc + c];
            if (vg_tensor_dtype(x) != d->types[c] || vg_tensor_dtype(d->comps[c]) != d->types[c]) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "padded_batch: component %d of element %lld is %s (padding value %s), the dataset's "
                                   "type is %s",
                                   c, (long long)e, vg_dtype_name(vg_tensor_dtype(x)),
                                   vg_dtype_name(vg_tensor_dtype(d->comps[c])), vg_dtype_name(d->types[c]));
                break;
            }
            if (vg_tensor_ndims(x) != r) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "padded_batch: component %d of element %lld has rank %d, the padded shape rank %d", c,
                                   (long long)e, vg_tensor_ndims(x), r);
                break;
            }
            for (int k = 0; k < r && rc == VG_OK; k++) {
                int64_t xd = vg_tensor_dim(x, k);
                if (ps->dims[k] < 0) {
                    if (xd > dims[1 + k]) dims[1 + k] = xd;
                } else if (xd > ps->dims[k]) {
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                       "Attempted to pad to a smaller size than the input element (component %d, "
                                       "dimension %d: %lld > %lld).",
                                       c, k, (long long)xd, (long long)ps->dims[k]);
                }
            }
        }
        if (rc != VG_OK) break;
        vg_dtype dt = d->types[c];
        vg_tensor *o = vg_tensor_new(dt, dims, r + 1, st);
        if (!o) {
            rc = st->code;
            break;
        }
        out[c] = o;
        int64_t total = vg_tensor_num_elements(o), per = n ? total / n : 0;
        const vg_tensor *pad = d->comps[c];
        size_t es = vg_dtype_size(dt);
        for (int64_t i = 0; i < total && rc == VG_OK; i++) { /* fill with the padding value */
            if (dt == VG_STRING) {
                size_t l;
                const char *p = vg_tensor_string(pad, 0, &l);
                if (l) rc = vg_tensor_set_string(o, i, p, l, st);
            } else {
                memcpy((uint8_t *)vg_tensor_data(o) + (size_t)i * es, vg_tensor_data(pad), es);
            }
        }
        int64_t ostride[VG_MAX_DIMS], acc = 1;
        for (int k = r - 1; k >= 0; k--) {
            ostride[k] = acc;
            acc *= dims[1 + k];
        }
        for (int64_t e = 0; e < n && rc == VG_OK; e++) {
            const vg_tensor *x = rows[e * nc + c];
            int64_t xn = vg_tensor_num_elements(x);
            const int64_t *xd = vg_tensor_dims(x);
            for (int64_t i = 0; i < xn && rc == VG_OK; i++) {
                int64_t rem = i, off = 0;
                for (int k = r - 1; k >= 0; k--) {
                    off += (rem % xd[k]) * ostride[k];
                    rem /= xd[k];
                }
                int64_t dst = e * per + off;
                if (dt == VG_STRING) {
                    size_t l;
                    const char *p = vg_tensor_string(x, i, &l);
                    rc = vg_tensor_set_string(o, dst, p, l, st);
                } else {
                    memcpy((uint8_t *)vg_tensor_data(o) + (size_t)dst * es, (const uint8_t *)vg_tensor_data(x) + (size_t)i * es,
                           es);
                }
            }
        }
    }
    if (rc != VG_OK || *end) vg__ds_free_elem(out, nc);
    vg__ds_free_elem(rows, (int)(bs * nc));
    vg__free(rows);
    return rc;
}


/* CacheDataset(filename): the first iterator that finds no "<filename>.index" reads
 * its input and writes every element into a tensor bundle at prefix filename (keys
 * "<index, 20 digits>_<component>"), finished (renamed into place) when the input
 * ends; iterators that find the bundle, in this session or a later process, read it
 * instead of the input. A second iterator starting while one writes reads the input
 * without writing; an iterator dropped before the end leaves no file. */
static void cache_stop_writing(unary_it *u, vg__ds_cache *c) {
    vg__bundle_writer_free(u->cache_w);
    u->cache_w = NULL;
    pthread_mutex_lock(&c->mu);
    c->writing = false;
    pthread_mutex_unlock(&c->mu);
}

static vg_code cache_file_read(unary_it *u, int nc, vg_tensor **out, bool *end, vg_status *st) {
    char key[64];
    snprintf(key, sizeof key, "%020lld_0", (long long)u->count);
    if (!vg__bundle_reader_find(u->cache_r, key)) {
        *end = true;
        return VG_OK;
    }
    for (int k = 0; k < nc; k++) out[k] = NULL;
    vg_code rc = VG_OK;
    for (int k = 0; k < nc && rc == VG_OK; k++) {
        snprintf(key, sizeof key, "%020lld_%d", (long long)u->count, k);
        int dt, nd;
        int64_t dims[VG__IO_MAX_DIMS];
        if ((rc = vg__bundle_reader_lookup(u->cache_r, key, &dt, dims, &nd, st)) != VG_OK) break;
        if (dt != (int)u->base.ds->types[k]) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "cache file %s: element %lld component %d has dtype %s, expected %s",
                               u->base.ds->cache->file, (long long)u->count, k, vg_dtype_name((vg_dtype)dt),
                               vg_dtype_name(u->base.ds->types[k]));
            break;
        }
        if ((rc = vg__bundle_reader_check_data(u->cache_r, key, st)) != VG_OK) break;
        if (!(out[k] = vg_tensor_new((vg_dtype)dt, dims, nd, st))) {
            rc = st->code ? st->code : VG_RESOURCE_EXHAUSTED;
            break;
        }
        if (dt != VG_STRING) {
            rc = vg__bundle_reader_read(u->cache_r, key, vg_tensor_data(out[k]), vg_tensor_nbytes(out[k]), st);
            continue;
        }
        char **strs = NULL;
        size_t *lens = NULL;
        int64_t n = 0;
        if ((rc = vg__bundle_reader_read_strings(u->cache_r, key, &strs, &lens, &n, st)) != VG_OK) break;
        for (int64_t i = 0; i < n && i < vg_tensor_num_elements(out[k]) && rc == VG_OK; i++)
            rc = vg_tensor_set_string(out[k], i, strs[i], lens[i], st);
        vg__bundle_strings_free(strs, lens, n);
    }
    if (rc != VG_OK) {
        vg__ds_free_elem(out, nc);
        return rc;
    }
    u->count++;
    return VG_OK;
}

static vg_code cache_file_add(unary_it *u, int nc, vg_tensor *const *el, vg_status *st) {
    vg_code rc = VG_OK;
    for (int k = 0; k < nc && rc == VG_OK; k++) {
        char key[64];
        snprintf(key, sizeof key, "%020lld_%d", (long long)u->count, k);
        const vg_tensor *t = el[k];
        if (vg_tensor_dtype(t) != VG_STRING) {
            rc = vg__bundle_writer_add(u->cache_w, key, vg_tensor_dtype(t), vg_tensor_dims(t), vg_tensor_ndims(t),
                                       vg_tensor_data(t), vg_tensor_nbytes(t), st);
            continue;
        }
        int64_t n = vg_tensor_num_elements(t);
        const char **strs = vg__malloc(sizeof(char *) * (size_t)(n ? n : 1));
        size_t *lens = vg__malloc(sizeof(size_t) * (size_t)(n ? n : 1));
        if (!strs || !lens) rc = VG_OOM(st, "cache file");
        for (int64_t i = 0; rc == VG_OK && i < n; i++) strs[i] = vg_tensor_string(t, i, &lens[i]);
        if (rc == VG_OK)
            rc = vg__bundle_writer_add_strings(u->cache_w, key, vg_tensor_dims(t), vg_tensor_ndims(t), strs, lens, n, st);
        vg__free(strs), vg__free(lens);
    }
    return rc;
}

static vg_code cache_file_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    vg__ds_cache *c = d->cache;
    int nc = d->ncomp;
    if (u->epoch == 0) { /* first call: replay the file, or read the input (and write) */
        u->epoch = 3;
        char idx[4200];
        snprintf(idx, sizeof idx, "%s.index", c->file);
        if (access(idx, F_OK) == 0) {
            if (!(u->cache_r = vg__bundle_reader_open(c->file, st))) return st->code;
            u->epoch = 2;
        } else {
            pthread_mutex_lock(&c->mu);
            bool mine = !c->writing;
            if (mine) c->writing = true;
            pthread_mutex_unlock(&c->mu);
            if (mine && !(u->cache_w = vg__bundle_writer_new(c->file, st))) {
                pthread_mutex_lock(&c->mu);
                c->writing = false;
                pthread_mutex_unlock(&c->mu);
                return st->code;
            }
            if (!(u->in = child_new(it, d->input, st))) return st->code;
        }
    }
    if (u->epoch == 2) return cache_file_read(u, nc, out, end, st);
    vg_code rc = u->in->next(u->in, out, end, st);
    if (rc != VG_OK || !u->cache_w) return rc;
    if (*end) {
        rc = vg__bundle_writer_finish(u->cache_w, st);
        cache_stop_writing(u, c);
        return rc;
    }
    if ((rc = cache_file_add(u, nc, out, st)) != VG_OK) {
        vg__ds_free_elem(out, nc);
        cache_stop_writing(u, c);
        return rc;
    }
    u->count++;
    return VG_OK;
}

/* CacheDataset (in memory): the first iterator that reads the input to its end
 * publishes what it read; later iterators (the next epochs of a repeat) replay it. An
 * iterator started before that reads the input itself. */
static vg_code cache_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    vg__ds_cache *c = d->cache;
    int nc = d->ncomp;
    if (c->file) return cache_file_next(it, out, end, st);
    if (u->epoch == 1) { /* replaying */
        if (u->count >= c->n) {
            *end = true;
            return VG_OK;
        }
        for (int k = 0; k < nc; k++) out[k] = vg_tensor_ref(c->elems[u->count * nc + k]);
        u->count++;
        return VG_OK;
    }
    if (!u->in) {
        pthread_mutex_lock(&c->mu);
        bool complete = c->complete;
        pthread_mutex_unlock(&c->mu);
        if (complete) { /* elems never change once complete */
            u->epoch = 1;
            return cache_next(it, out, end, st);
        }
        if (!(u->in = child_new(it, d->input, st))) return st->code;
    }
    vg_code rc = u->in->next(u->in, out, end, st);
    if (rc != VG_OK) return rc;
    if (*end) {
        pthread_mutex_lock(&c->mu);
        if (!c->complete) {
            c->complete = true;
            c->elems = u->buf;
            c->n = u->size;
            u->buf = NULL;
            u->size = 0;
        }
        pthread_mutex_unlock(&c->mu);
        return VG_OK;
    }
    if (u->size == u->cap) {
        int64_t nc2 = u->cap ? u->cap * 2 : 64;
        vg_tensor **nb = vg__realloc(u->buf, sizeof(vg_tensor *) * (size_t)(u->cap * nc), sizeof(vg_tensor *) * (size_t)(nc2 * nc));
        if (!nb) {
            vg__ds_free_elem(out, nc);
            return VG_OOM(st, "cache");
        }
        u->buf = nb;
        u->cap = nc2;
    }
    for (int k = 0; k < nc; k++) u->buf[u->size * nc + k] = vg_tensor_ref(out[k]);
    u->size++;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* prefetch */

typedef struct pf_item {
    vg_tensor *t[VG_DATASET_MAX_COMPONENTS];
    vg_code code;   /* VG_OK: an element; VG_OUT_OF_RANGE: the end; else an error */
    vg_status st;
} pf_item;

/* Hand-offs between the prefetch thread and its consumer: each side signals the other
 * only when it sleeps. Before sleeping a side spins for a bounded window watching the
 * ring's length, which saves the 5-50 us futex wake-up of a VM: the consumer (blocked
 * in get_next with nothing else to do) for VG_PREFETCH_SPIN_US (0..100000 us, default
 * 50, the thread pool's window), the producer (usually ahead, waiting for room) for a
 * tenth of it, so a pipeline that runs ahead of training wastes at most ~5 us of a core
 * per element. A spinner stops at once when the other side last ran on its CPU: there
 * the spin would only take the core the other side needs (on a 2-core VM shared with
 * other work, spinning regardless halved the batches/s of bench_input at 1 thread). */
typedef struct prefetch_it {
    vg__ds_iter base;
    vg__ds_iter *in;
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* the consumer waits here for an element */
    pthread_cond_t space;     /* the producer waits here for room in the ring */
    pf_item *ring;            /* rcap slots, grown up to cap as the ring fills */
    int64_t cap, rcap, head;
    int64_t size;             /* written under mu with __atomic stores; spinners read it */
    int csleep, psleep;       /* consumer / producer asleep on cv / space (under mu) */
    bool stop, cancelled, ended; /* stop and cancelled: __atomic stores under mu */
    bool pause;               /* a save stops the producer (it keeps what it produced) */
    int64_t spin_ns;
    int cpu[2];               /* CPU each side last ran on ([1]: consumer), __atomic */
} prefetch_it;

static int64_t g_spin_ns = -1;

/* The consumer's prefetch spin window (ns): VG_PREFETCH_SPIN_US, default 50 (see above). */
static int64_t ds_spin_ns(void) {
    int64_t v = __atomic_load_n(&g_spin_ns, __ATOMIC_RELAXED);
    if (v >= 0) return v;
    v = 50000;
    const char *e = getenv("VG_PREFETCH_SPIN_US");
    if (e && *e) {
        char *end;
        long x = strtol(e, &end, 10);
        if (!*end && x >= 0 && x <= 100000) v = (int64_t)x * 1000;
    }
    __atomic_store_n(&g_spin_ns, v, __ATOMIC_RELAXED);
    return v;
}

/* Doubles the ring (up to cap), its elements in order from slot 0. The ring starts
 * small: a buffer_size of up to 2^20 (or one read from a checkpoint) costs memory only
 * as elements arrive. Lock held (or the producer not running). False when out of
 * memory. */
static bool pf_grow(prefetch_it *p) {
    int64_t nc = p->rcap * 2 < p->cap ? p->rcap * 2 : p->cap;
    pf_item *nr = vg__calloc((size_t)nc, sizeof(pf_item));
    if (!nr) return false;
    for (int64_t k = 0; k < p->size; k++) nr[k] = p->ring[(p->head + k) % p->rcap];
    vg__free(p->ring);
    p->ring = nr;
    p->rcap = nc;
    p->head = 0;
    return true;
}

/* Spins (the lock not held) until the ring has an element (consumer) or room
 * (producer), a stop or cancel, or the window ends. */
static void pf_spin(prefetch_it *p, bool consumer) {
    int64_t t0 = 0, window = consumer ? p->spin_ns : p->spin_ns / 10;
    if (window <= 0) return;
    int me = sched_getcpu();
    __atomic_store_n(&p->cpu[consumer], me, __ATOMIC_RELAXED);
    for (unsigned k = 0;; k++) {
        int64_t n = __atomic_load_n(&p->size, __ATOMIC_ACQUIRE);
        if ((consumer ? n > 0 : n < p->cap) || __atomic_load_n(&p->stop, __ATOMIC_RELAXED) ||
            __atomic_load_n(&p->cancelled, __ATOMIC_RELAXED) || __atomic_load_n(&p->pause, __ATOMIC_RELAXED))
            return;
        vg__spin_pause();
        if ((k & 15) == 15) {
            if (me >= 0 && __atomic_load_n(&p->cpu[!consumer], __ATOMIC_RELAXED) == me) return;
            int64_t t = vg__pool_now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > window) return;
        }
    }
}

static void *prefetch_main(void *arg) {
    prefetch_it *p = arg;
    int nc = p->base.ds->ncomp;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && !p->ended && !p->pause) {
        if (!p->stop && p->size == p->cap) {
            pthread_mutex_unlock(&p->mu);
            pf_spin(p, false);
            pthread_mutex_lock(&p->mu);
        }
        while (!p->stop && !p->pause && p->size == p->cap) {
            p->psleep++;
            pthread_cond_wait(&p->space, &p->mu);
            p->psleep--;
        }
        if (p->stop || p->pause) break;
        if (p->size == p->rcap && !pf_grow(p)) {
            p->cap = p->rcap; /* out of memory: the ring stays as large as it is */
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        pf_item it;
        memset(it.t, 0, sizeof it.t);
        vg_status_clear(&it.st);
        bool e = false;
        it.code = p->in->next(p->in, it.t, &e, &it.st);
        if (it.code == VG_OK && e) it.code = VG_OUT_OF_RANGE;
        __atomic_store_n(&p->cpu[0], sched_getcpu(), __ATOMIC_RELAXED);
        pthread_mutex_lock(&p->mu);
        if (p->stop) {
            vg__ds_free_elem(it.t, nc);
            break;
        }
        p->ring[(p->head + p->size) % p->rcap] = it;
        __atomic_store_n(&p->size, p->size + 1, __ATOMIC_RELEASE);
        if (it.code == VG_OUT_OF_RANGE) p->ended = true;
        bool wake = p->csleep > 0;
        /* signalled after the unlock: a consumer woken while the mutex is held would
         * block on it at once and need a second wake-up */
        pthread_mutex_unlock(&p->mu);
        if (wake) pthread_cond_signal(&p->cv);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static vg_code prefetch_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    prefetch_it *p = (prefetch_it *)it;
    int nc = it->ds->ncomp;
    __atomic_store_n(&p->cpu[1], sched_getcpu(), __ATOMIC_RELAXED);
    pthread_mutex_lock(&p->mu);
    if (!p->started) {
        if (pthread_create(&p->th, NULL, prefetch_main, p) != 0) {
            pthread_mutex_unlock(&p->mu);
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "cannot start the prefetch thread");
        }
        p->started = true;
    }
    if (p->size == 0 && !p->cancelled) {
        pthread_mutex_unlock(&p->mu);
        pf_spin(p, true);
        pthread_mutex_lock(&p->mu);
    }
    while (p->size == 0 && !p->cancelled) {
        p->csleep++;
        pthread_cond_wait(&p->cv, &p->mu);
        p->csleep--;
    }
    if (p->cancelled) {
        pthread_mutex_unlock(&p->mu);
        return vg_status_set(st, VG_CANCELLED, "Iterator was cancelled");
    }
    pf_item *item = &p->ring[p->head];
    vg_code rc = VG_OK;
    if (item->code == VG_OUT_OF_RANGE) {
        *end = true; /* stays in the ring: every later call ends too */
    } else {
        if (item->code == VG_OK) memcpy(out, item->t, sizeof(vg_tensor *) * (size_t)nc);
        else rc = vg_status_set(st, item->code, "%s", item->st.msg);
        p->head = (p->head + 1) % p->rcap;
        __atomic_store_n(&p->size, p->size - 1, __ATOMIC_RELEASE);
        bool wake = p->psleep > 0;
        pthread_mutex_unlock(&p->mu);
        if (wake) pthread_cond_signal(&p->space);
        return rc;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* Stops the producer thread (it finishes the element it is reading and keeps it in
 * the ring); the next prefetch_next starts a new one. */
static void prefetch_pause(prefetch_it *p) {
    pthread_mutex_lock(&p->mu);
    bool started = p->started;
    if (started) {
        __atomic_store_n(&p->pause, true, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&p->space);
    }
    pthread_mutex_unlock(&p->mu);
    if (!started) return;
    pthread_join(p->th, NULL);
    pthread_mutex_lock(&p->mu);
    p->started = false;
    __atomic_store_n(&p->pause, false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&p->mu);
}

static void prefetch_cancel(vg__ds_iter *it) {
    prefetch_it *p = (prefetch_it *)it;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->cancelled, true, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&p->cv);
    pthread_cond_broadcast(&p->space);
    pthread_mutex_unlock(&p->mu);
    vg__ds_iter_cancel(p->in);
}

static void prefetch_free(vg__ds_iter *it) {
    prefetch_it *p = (prefetch_it *)it;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->stop, true, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&p->cv);
    pthread_cond_broadcast(&p->space);
    pthread_mutex_unlock(&p->mu);
    vg__ds_iter_cancel(p->in); /* unblocks a producer waiting inside its input */
    if (p->started) pthread_join(p->th, NULL);
    for (int64_t k = 0; k < p->size; k++) vg__ds_free_elem(p->ring[(p->head + k) % p->rcap].t, it->ds->ncomp);
    vg__free(p->ring);
    vg__ds_iter_free(p->in);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->space);
}

/* ------------------------------------------------------------------------ */

static void unary_cancel(vg__ds_iter *it) {
    unary_it *u = (unary_it *)it;
    vg__ds_iter_cancel(u->in);
    if (u->cycle) /* interleave: the open cycle elements (read-ahead threads) */
        for (int64_t i = 0; i < it->ds->a; i++) vg__ds_iter_cancel(u->cycle[i]);
}

static vg__ds_iter *iter_make(vg__dataset *d, vg__ds_ctx *ctx, vg_status *st);

/* A child iterator of `parent` (sharing its context). */
static vg__ds_iter *child_new(const vg__ds_iter *parent, vg__dataset *d, vg_status *st) {
    return iter_make(d, parent->ctx, st);
}

vg__ds_iter *vg__ds_iter_child(const vg__ds_iter *parent, vg__dataset *d, vg_status *st) {
    return child_new(parent, d, st);
}

vg__ds_iter *vg__ds_iter_new(vg__dataset *d, vg_status *st) { return iter_make(d, NULL, st); }

static vg__ds_iter *iter_make(vg__dataset *d, vg__ds_ctx *ctx, vg_status *st) {
    const vg__ds_kind *k = vg__ds_kind_of(d->kind);
    vg__ds_iter *it = vg__calloc(1, k->iter_size);
    if (it && ctx) atomic_fetch_add(&ctx->refs, 1);
    else if (it && !(ctx = ctx_new())) {
        vg__free(it);
        it = NULL;
    }
    if (!it) {
        VG_OOM(st, "iterator");
        return NULL;
    }
    it->ctx = ctx;
    it->ds = vg__dataset_ref(d);
    if (k->iter_init(it, st) != VG_OK) {
        vg__ds_iter_free(it);
        return NULL;
    }
    return it;
}

/* ---- set-up of the transformations' iterators ---- */

static vg_code prefetch_init(vg__ds_iter *it, vg_status *st) {
    const vg__dataset *d = it->ds;
    prefetch_it *p = (prefetch_it *)it;
    it->next = prefetch_next;
    it->free = prefetch_free;
    it->cancel = prefetch_cancel;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->space, NULL);
    p->cap = d->a;
    p->rcap = p->cap < 16 ? p->cap : 16;
    p->spin_ns = ds_spin_ns();
    p->cpu[0] = p->cpu[1] = -1;
    if (!(p->ring = vg__calloc((size_t)p->rcap, sizeof(pf_item)))) return VG_OOM(st, "prefetch buffer");
    if (!(p->in = child_new(it, d->input, st))) return st->code;
    return VG_OK;
}

/* The common part of a one-input transformation: its free / cancel, next, and (when
 * `child`) its input's iterator. */
static vg_code unary_init(vg__ds_iter *it, vg__ds_next_fn next, bool child, vg_status *st) {
    unary_it *u = (unary_it *)it;
    it->free = unary_free;
    it->cancel = unary_cancel;
    it->next = next;
    if (child && !(u->in = child_new(it, (vg__dataset *)it->ds->input, st))) return st->code;
    return VG_OK;
}

/* A function's session runs its ops inline on the calling thread (one intra-op and
 * one inter-op thread): its kernels are small, and waking pool threads for them
 * cost more than the work (and, under a parallel map, fought over the cores with
 * the map's own threads). */
static vg_session *fn_session(vg_graph *g, vg_status *st) {
    vg_session_options fn_opts = {0};
    fn_opts.intra_op_threads = 1;
    fn_opts.inter_op_threads = 1;
    return vg_session_new(g, &fn_opts, st);
}

/* A shuffle's or a batch's reading of its input's row views (when offered). */
static vg_code rows_init(vg__ds_iter *it, vg__ds_next_fn next, vg_status *st) {
    unary_it *u = (unary_it *)it;
    if (!__atomic_load_n(&rows_on, __ATOMIC_RELAXED) || !u->in->next_rows) return VG_OK;
    if (!(u->rows = vg__malloc(sizeof *u->rows))) return VG_OOM(st, "row view");
    it->next = next;
    return VG_OK;
}

static vg_code map_init(vg__ds_iter *it, vg_status *st) {
    const vg__dataset *d = it->ds;
    unary_it *u = (unary_it *)it;
    vg_code rc = unary_init(it, d->c > 1 ? parallel_map_next : map_next, true, st);
    if (rc != VG_OK) return rc;
    if (!(u->sess = fn_session(d->fn->g, st))) return st->code;
    bool vec = d->fn->vec && __atomic_load_n(&vectorize_on, __ATOMIC_RELAXED);
    if (d->fn->native_b && __atomic_load_n(&native_on, __ATOMIC_RELAXED) &&
        __atomic_load_n(&vectorize_on, __ATOMIC_RELAXED)) {
        it->next = native_batch_map_next;
        return VG_OK;
    }
    if (vec && !(u->vsess = fn_session(d->fn->vec, st))) return st->code;
    if (d->c > 1 || vec) {
        int64_t par = d->c > 1 ? d->c : 1;
        /* a native function over records read straight from their source costs a
         * fraction of a microsecond a record: a second thread's hand-offs cost more than
         * they save, so the map runs on the caller (the order is the same) */
        if (vec && d->fn->native && __atomic_load_n(&native_on, __ATOMIC_RELAXED) && d->fn->nargs == 1 &&
            d->input->types[0] == VG_STRING && u->in->next_records)
            par = 1, u->native = true;
        u->nslots = (vec ? VEC_BLOCK : 32) * par;
        it->next = parallel_map_next;
        /* one string argument read straight from its source, the block mapped by one
         * thread (sequential or async) */
        u->direct = vec && d->fn->nargs == 1 && d->input->types[0] == VG_STRING && u->in->next_records && par <= 2;
        bool numeric = true;
        for (int c = 0; c < d->ncomp; c++) numeric = numeric && d->types[c] != VG_STRING;
        if (vec && numeric && __atomic_load_n(&rows_on, __ATOMIC_RELAXED)) it->next_rows = map_next_rows;
        if (par == 2 && vec) { /* a per-element function (possibly heavy: image decoding)
                                  keeps the block split over the pool thread and the caller */
            u->async = true;
            pthread_mutex_init(&u->amu, NULL);
            pthread_cond_init(&u->acv, NULL);
        }
        if (!(u->blk = vg__calloc(2, sizeof(pmap_block))) ||
            !(u->blk[0].slots = vg__calloc((size_t)u->nslots + 1, sizeof(pmap_slot))) ||
            !(u->blk[1].slots = vg__calloc((size_t)u->nslots + 1, sizeof(pmap_slot))) ||
            (par > 1 && !(u->pool = vg__pool_new((int)par - 1))))
            return VG_OOM(st, "parallel map");
    }
    return VG_OK;
}

static vg_code filter_init(vg__ds_iter *it, vg_status *st) {
    unary_it *u = (unary_it *)it;
    vg_code rc = unary_init(it, filter_next, true, st);
    if (rc == VG_OK && !(u->sess = fn_session(it->ds->fn->g, st))) rc = st->code;
    return rc;
}

static vg_code interleave_init(vg__ds_iter *it, vg_status *st) {
    const vg__dataset *d = it->ds;
    unary_it *u = (unary_it *)it;
    vg_code rc = unary_init(it, interleave_next, true, st);
    if (rc != VG_OK) return rc;
    if (!(u->cycle = vg__calloc((size_t)d->a, sizeof(vg__ds_iter *))) ||
        !(u->cycle_args = vg__calloc((size_t)(d->a * (d->fn->nargs ? d->fn->nargs : 1)), sizeof(vg_tensor *))))
        return VG_OOM(st, "interleave cycle");
    if (!(u->sess = fn_session(d->fn->g, st))) return st->code;
    return VG_OK;
}

static vg_code batch_init(vg__ds_iter *it, vg_status *st) {
    vg_code rc = unary_init(it, batch_next, true, st);
    return rc == VG_OK ? rows_init(it, batch_rows_next, st) : rc;
}

static vg_code shuffle_init(vg__ds_iter *it, vg_status *st) {
    const vg__dataset *d = it->ds;
    unary_it *u = (unary_it *)it;
    vg_code rc = unary_init(it, shuffle_next, true, st);
    if (rc == VG_OK) rc = rows_init(it, shuffle_slab_next, st);
    if (rc != VG_OK) return rc;
    if (u->rows) it->next_rows = shuffle_next_rows;
    u->cap = d->a;
    u->count = 0; /* buffer slots allocated so far */
    uint64_t x;
    if (d->seed == 0 && d->seed2 == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)it;
    } else {
        x = (uint64_t)d->seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)d->seed2;
    }
    if (d->flag) x += (uint64_t)ctx_take(it->ctx, d) * 0xda942042e4dd58b5ull;
    vg__xoshiro_seed(u->rng, x);
    return VG_OK;
}

static vg_code repeat_init(vg__ds_iter *it, vg_status *st) {
    vg_code rc = unary_init(it, repeat_next, false, st);
    if (strings_source(it->ds->input)) it->next_records = repeat_next_records;
    return rc;
}

static vg_code zip_init(vg__ds_iter *it, vg_status *st) {
    const vg__dataset *d = it->ds;
    unary_it *u = (unary_it *)it;
    vg_code rc = unary_init(it, zip_next, false, st);
    for (int k = 0; k < d->nmore && rc == VG_OK; k++)
        if (!(u->ins[k] = child_new(it, d->more[k], st))) rc = st->code;
    if (rc == VG_OK && !(u->in = child_new(it, d->input, st))) rc = st->code;
    return rc;
}

#define UNARY_INIT(name, next_fn, child)                                                                               \
    static vg_code name##_init(vg__ds_iter *it, vg_status *st) { return unary_init(it, next_fn, child, st); }
UNARY_INIT(take, take_next, true)
UNARY_INIT(skip, skip_next, true)
UNARY_INIT(shard, shard_next, true)
UNARY_INIT(ignore_errors, ignore_errors_next, true)
UNARY_INIT(unbatch, unbatch_next, true)
UNARY_INIT(concatenate, concatenate_next, true)
UNARY_INIT(padded_batch, padded_batch_next, true)
UNARY_INIT(cache, cache_next, false)

void vg__ds_iter_free(vg__ds_iter *it) {
    if (!it) return;
    if (it->free) it->free(it);
    vg__dataset_unref((vg__dataset *)it->ds);
    ctx_unref(it->ctx);
    vg__free(it);
}

void vg__ds_iter_cancel(vg__ds_iter *it) {
    if (it && it->cancel) it->cancel(it);
}

/* ------------------------------------------------------------------------ */
/* saving and restoring positions (the layout: dataset.h, dataset_state.c) */

#define ITER_TAG 0x49540000 /* "IT" << 16 | kind */

static vg_code rd_bad(const vg__ds_rd *r, const vg__dataset *d, vg_status *st) {
    return r->bad ? vg__ds_rd_status(r, vg__ds_kind_name(d->kind), st) : VG_OK;
}

static vg_code state_mismatch(const vg__dataset *d, const char *what, vg_status *st) {
    return vg_status_set(st, VG_INVALID_ARGUMENT, "corrupt iterator state (%s: %s)", vg__ds_kind_name(d->kind), what);
}

vg_code vg__ds_save_child(vg__ds_iter *child, vg__ds_wr *w, vg_status *st) {
    vg__ds_put_i64(w, child != NULL);
    return child ? vg__ds_iter_save(child, w, st) : VG_OK;
}

/* Restores a child iterator over d into *slot (made when absent; dropped when the state
 * has none, which is an error when `required`). */
static vg_code restore_child(const vg__ds_iter *parent, vg__ds_iter **slot, vg__dataset *d, bool required,
                             vg__ds_rd *r, vg_status *st) {
    bool present = vg__ds_get_range(r, 0, 1) != 0;
    if (r->bad || (required && !present)) {
        r->bad = true;
        return vg__ds_rd_status(r, "input iterator", st);
    }
    if (!present) {
        vg__ds_iter_free(*slot);
        *slot = NULL;
        return VG_OK;
    }
    if (!*slot && !(*slot = child_new(parent, d, st))) return st->code;
    return vg__ds_iter_restore(*slot, r, st);
}

/* Element `slot` of the slab as tensors: its own (ext: *owned false) or new ones. */
static vg_code slot_tensors(const slab *sb, int64_t slot, int nc, vg_tensor **t, bool *owned, vg_status *st) {
    *owned = false;
    if (slot_is_ext(sb, slot, nc)) {
        memcpy(t, sb->ext + slot * nc, sizeof(vg_tensor *) * (size_t)nc);
        return VG_OK;
    }
    *owned = true;
    const uint8_t *p = slot_ptr(sb, slot);
    for (int c = 0; c < nc; c++) {
        if (!(t[c] = vg_tensor_new(sb->spec.dtype[c], sb->spec.dims[c], sb->spec.ndims[c], st))) {
            vg__ds_free_elem(t, c);
            return st->code ? st->code : VG_RESOURCE_EXHAUSTED;
        }
        if (sb->spec.xf[c]) vg__ds_xform_apply(sb->spec.xf[c], p + sb->off[c], vg_tensor_data(t[c]));
        else if (sb->spec.bytes[c]) memcpy(vg_tensor_data(t[c]), p + sb->off[c], sb->spec.bytes[c]);
    }
    return VG_OK;
}

static vg_code put_slot(vg__ds_wr *w, const slab *sb, int64_t slot, int nc, vg_status *st) {
    vg_tensor *t[VG_DATASET_MAX_COMPONENTS] = {0};
    bool owned;
    vg_code rc = slot_tensors(sb, slot, nc, t, &owned, st);
    if (rc != VG_OK) return rc;
    rc = vg__ds_put_item(w, VG_OK, t, nc, NULL, st);
    if (owned) vg__ds_free_elem(t, nc);
    return rc;
}

/* Keeps a restored element (its references) in a slot of its own (an ext one). */
static vg_code slab_put_tensors(unary_it *u, slab *sb, vg_tensor **t, int nc, int64_t *slot_out, vg_status *st) {
    int64_t slot = slab_alloc(sb, u->cap);
    if (slot < 0) return VG_OOM(st, "shuffle buffer");
    if (slot >= sb->ext_cap) {
        int64_t ncap = sb->room;
        vg_tensor **ne = vg__realloc(sb->ext, sizeof(vg_tensor *) * (size_t)(sb->ext_cap * nc),
                                     sizeof(vg_tensor *) * (size_t)(ncap * nc));
        if (!ne) {
            sb->freel[sb->nfree++] = slot;
            return VG_OOM(st, "shuffle buffer");
        }
        memset(ne + sb->ext_cap * nc, 0, sizeof(vg_tensor *) * (size_t)((ncap - sb->ext_cap) * nc));
        sb->ext = ne;
        sb->ext_cap = ncap;
    }
    memcpy(sb->ext + slot * nc, t, sizeof(vg_tensor *) * (size_t)nc);
    *slot_out = slot;
    return VG_OK;
}

/* ShuffleDataset: the elements to hand out first (a restored or a picked one, an input
 * error met after a view), the RNG, the buffer in order, the input. */
static vg_code shuffle_save(unary_it *u, vg__ds_wr *w, vg_status *st) {
    const vg__dataset *d = u->base.ds;
    int nc = d->ncomp;
    slab *sb = u->slab;
    bool err = sb && sb->err != VG_OK, carry = sb && sb->carry >= 0;
    vg__ds_put_i64(w, u->rq.n - u->rq.pos + err + carry);
    vg_code rc = VG_OK;
    for (int64_t i = u->rq.pos; i < u->rq.n && rc == VG_OK; i++)
        rc = vg__ds_put_item(w, u->rq.v[i].code, u->rq.v[i].t, nc, u->rq.v[i].msg, st);
    if (rc == VG_OK && err) rc = vg__ds_put_item(w, sb->err, NULL, nc, sb->err_st.msg, st);
    if (rc == VG_OK && carry) rc = put_slot(w, sb, sb->carry, nc, st);
    for (int i = 0; i < 4; i++) vg__ds_put_i64(w, (int64_t)u->rng[i]);
    vg__ds_put_i64(w, u->in_end);
    vg__ds_put_i64(w, vg__ds_ctx_iterations(u->base.ctx, d));
    vg__ds_put_i64(w, u->size);
    for (int64_t k = 0; k < u->size && rc == VG_OK; k++)
        rc = sb ? put_slot(w, sb, sb->idx[k], nc, st) : vg__ds_put_item(w, VG_OK, u->buf + k * nc, nc, NULL, st);
    return rc == VG_OK ? vg__ds_save_child(u->in, w, st) : rc;
}

static vg_code shuffle_restore(unary_it *u, vg__ds_rd *r, vg_status *st) {
    vg__dataset *d = (vg__dataset *)u->base.ds;
    int nc = d->ncomp;
    vg_code rc = queue_restore(&u->rq, r, nc, st);
    if (rc != VG_OK) return rc;
    for (int i = 0; i < 4; i++) u->rng[i] = (uint64_t)vg__ds_get_i64(r);
    u->in_end = vg__ds_get_range(r, 0, 1) != 0;
    ctx_set(u->base.ctx, d, vg__ds_get_range(r, 0, INT64_MAX));
    int64_t n = vg__ds_get_range(r, 0, u->cap);
    if (n > (int64_t)((r->len - r->pos) / 8)) r->bad = true; /* every element takes 8 bytes or more */
    if ((rc = rd_bad(r, d, st)) != VG_OK) return rc;
    bool slabbed = u->base.next == shuffle_slab_next;
    if (!slabbed && n > 0) {
        if (!(u->buf = vg__calloc((size_t)(n * nc), sizeof(vg_tensor *)))) return VG_OOM(st, "shuffle buffer");
        u->count = n * nc;
    }
    if (slabbed && n > 0 && !(u->slab = slab_empty())) return VG_OOM(st, "shuffle buffer");
    for (int64_t k = 0; k < n; k++) {
        vg_tensor *t[VG_DATASET_MAX_COMPONENTS] = {0};
        vg_code code;
        char *msg = NULL;
        if ((rc = vg__ds_get_item(r, nc, &code, t, &msg, st)) != VG_OK) return rc;
        vg__free(msg);
        if (code != VG_OK) return state_mismatch(d, "an error in the buffer", st);
        if (slabbed) {
            int64_t slot = -1;
            if ((rc = slab_put_tensors(u, u->slab, t, nc, &slot, st)) != VG_OK) {
                vg__ds_free_elem(t, nc);
                return rc;
            }
            u->slab->idx[u->size++] = slot;
        } else {
            memcpy(u->buf + u->size * nc, t, sizeof(vg_tensor *) * (size_t)nc);
            u->size++;
        }
    }
    return restore_child(&u->base, &u->in, d->input, true, r, st);
}

/* CacheDataset: in memory, the elements read so far (and the input) or, replaying, the
 * whole cache (a restored dataset's cache is empty: the state publishes it, as TF's
 * does); from a file, the element index read back, or the input's position. An
 * iterator writing the cache file is saved as one reading its input: restored, it
 * continues without writing, and the next pass that finds no file writes it. */
static vg_code cache_save(unary_it *u, vg__ds_wr *w, vg_status *st) {
    const vg__dataset *d = u->base.ds;
    vg__ds_cache *c = d->cache;
    int nc = d->ncomp;
    vg__ds_put_i64(w, u->epoch);
    vg__ds_put_i64(w, u->count);
    vg_code rc = VG_OK;
    if (c->file) return u->epoch == 3 ? vg__ds_save_child(u->in, w, st) : VG_OK;
    if (u->epoch == 1) {
        vg__ds_put_i64(w, c->n);
        for (int64_t k = 0; k < c->n && rc == VG_OK; k++)
            rc = vg__ds_put_item(w, VG_OK, c->elems + k * nc, nc, NULL, st);
        return rc;
    }
    vg__ds_put_i64(w, u->size);
    for (int64_t k = 0; k < u->size && rc == VG_OK; k++) rc = vg__ds_put_item(w, VG_OK, u->buf + k * nc, nc, NULL, st);
    return rc == VG_OK ? vg__ds_save_child(u->in, w, st) : rc;
}

/* n elements of nc components into a new array (*out, n * nc references). */
static vg_code read_elements(vg__ds_rd *r, const vg__dataset *d, int64_t n, vg_tensor ***out, vg_status *st) {
    int nc = d->ncomp;
    vg_tensor **a = vg__calloc((size_t)(n ? n * nc : 1), sizeof(vg_tensor *));
    if (!a) return VG_OOM(st, "cache");
    vg_code rc = VG_OK;
    for (int64_t k = 0; k < n && rc == VG_OK; k++) {
        vg_code code;
        char *msg = NULL;
        rc = vg__ds_get_item(r, nc, &code, a + k * nc, &msg, st);
        vg__free(msg);
        if (rc == VG_OK && code != VG_OK) rc = state_mismatch(d, "an error among the cached elements", st);
    }
    if (rc != VG_OK) {
        vg__ds_free_elem(a, (int)(n * nc));
        vg__free(a);
        return rc;
    }
    *out = a;
    return VG_OK;
}

static vg_code cache_restore(unary_it *u, vg__ds_rd *r, vg_status *st) {
    vg__dataset *d = (vg__dataset *)u->base.ds;
    vg__ds_cache *c = d->cache;
    int nc = d->ncomp;
    u->epoch = vg__ds_get_range(r, 0, 3);
    u->count = vg__ds_get_range(r, 0, INT64_MAX);
    vg_code rc = rd_bad(r, d, st);
    if (rc != VG_OK) return rc;
    if (c->file) {
        if (u->epoch == 1) return state_mismatch(d, "mode", st);
        if (u->epoch == 2 && !(u->cache_r = vg__bundle_reader_open(c->file, st))) return st->code;
        return u->epoch == 3 ? restore_child(&u->base, &u->in, d->input, true, r, st) : VG_OK;
    }
    if (u->epoch > 1) return state_mismatch(d, "mode", st);
    int64_t n = vg__ds_get_range(r, 0, (int64_t)((r->len - r->pos) / 8));
    if ((rc = rd_bad(r, d, st)) != VG_OK) return rc;
    vg_tensor **elems = NULL;
    if ((rc = read_elements(r, d, n, &elems, st)) != VG_OK) return rc;
    if (u->epoch == 1) {
        if (u->count > n) {
            vg__ds_free_elem(elems, (int)(n * nc));
            vg__free(elems);
            return state_mismatch(d, "position beyond the cache", st);
        }
        pthread_mutex_lock(&c->mu);
        bool publish = !c->complete;
        if (publish) {
            c->complete = true;
            c->elems = elems;
            c->n = n;
        }
        pthread_mutex_unlock(&c->mu);
        if (!publish) { /* this dataset's cache is already complete: the same elements */
            vg__ds_free_elem(elems, (int)(n * nc));
            vg__free(elems);
        }
        return VG_OK;
    }
    u->buf = elems;
    u->size = u->cap = n;
    return restore_child(&u->base, &u->in, d->input, false, r, st);
}

static vg_code prefetch_save(prefetch_it *p, vg__ds_wr *w, vg_status *st) {
    int nc = p->base.ds->ncomp;
    prefetch_pause(p); /* the ring and the input stay as they are until the next call */
    vg__ds_put_i64(w, p->size);
    vg_code rc = VG_OK;
    for (int64_t k = 0; k < p->size && rc == VG_OK; k++) {
        const pf_item *e = &p->ring[(p->head + k) % p->rcap];
        rc = vg__ds_put_item(w, e->code, e->t, nc, e->st.msg, st);
    }
    return rc == VG_OK ? vg__ds_save_child(p->in, w, st) : rc;
}

static vg_code prefetch_restore(prefetch_it *p, vg__ds_rd *r, vg_status *st) {
    const vg__dataset *d = p->base.ds;
    int nc = d->ncomp;
    int64_t n = vg__ds_get_range(r, 0, p->cap);
    vg_code rc = rd_bad(r, d, st);
    for (int64_t k = 0; k < n && rc == VG_OK; k++) {
        if (k == p->rcap && !pf_grow(p)) {
            rc = VG_OOM(st, "prefetch buffer");
            break;
        }
        pf_item *e = &p->ring[k];
        char *msg = NULL;
        memset(e->t, 0, sizeof e->t);
        vg_status_clear(&e->st);
        if (p->ended) {
            rc = state_mismatch(d, "elements after the end", st);
            break;
        }
        if ((rc = vg__ds_get_item(r, nc, &e->code, e->t, &msg, st)) != VG_OK) break;
        if (e->code != VG_OK) vg_status_set(&e->st, e->code, "%s", msg ? msg : "");
        if (e->code == VG_OUT_OF_RANGE) p->ended = true;
        vg__free(msg);
        p->size = k + 1;
    }
    if (rc != VG_OK) return rc;
    p->head = 0;
    return restore_child(&p->base, &p->in, d->input, true, r, st);
}

/* InterleaveDataset: the loop's indices, the input, then each open cycle element's
 * arguments (the function is run on them again at a restore, as TF does) and state. */
static vg_code interleave_save(unary_it *u, vg__ds_wr *w, vg_status *st) {
    const vg__dataset *d = u->base.ds;
    int na = d->fn->nargs;
    vg__ds_put_i64(w, u->in_end);
    vg__ds_put_i64(w, u->cycle_index);
    vg__ds_put_i64(w, u->block_index);
    vg__ds_put_i64(w, u->num_open);
    vg_code rc = vg__ds_save_child(u->in, w, st);
    for (int64_t i = 0; i < d->a && rc == VG_OK; i++) {
        vg__ds_put_i64(w, u->cycle[i] != NULL);
        if (!u->cycle[i]) continue;
        rc = vg__ds_put_item(w, VG_OK, u->cycle_args + i * na, na, NULL, st);
        if (rc == VG_OK) rc = vg__ds_iter_save(u->cycle[i], w, st);
    }
    return rc;
}

static vg_code interleave_restore(unary_it *u, vg__ds_rd *r, vg_status *st) {
    const vg__dataset *d = u->base.ds;
    int na = d->fn->nargs;
    u->in_end = vg__ds_get_range(r, 0, 1) != 0;
    u->cycle_index = vg__ds_get_range(r, 0, d->a - 1);
    u->block_index = vg__ds_get_range(r, 0, d->b - 1);
    u->num_open = vg__ds_get_range(r, 0, d->a);
    vg_code rc = rd_bad(r, d, st);
    if (rc == VG_OK) rc = restore_child(&u->base, &u->in, d->input, true, r, st);
    int64_t open = 0;
    for (int64_t i = 0; i < d->a && rc == VG_OK; i++) {
        bool present = vg__ds_get_range(r, 0, 1) != 0;
        if ((rc = rd_bad(r, d, st)) != VG_OK || !present) continue;
        vg_tensor *args[VG_DATASET_MAX_COMPONENTS] = {0};
        vg_code code;
        char *msg = NULL;
        if ((rc = vg__ds_get_item(r, na, &code, args, &msg, st)) != VG_OK) break;
        vg__free(msg);
        if (code != VG_OK) {
            rc = state_mismatch(d, "cycle element arguments", st);
            break;
        }
        rc = interleave_open(u, i, args, st);
        vg__ds_free_elem(args, na);
        if (rc == VG_OK) rc = vg__ds_iter_restore(u->cycle[i], r, st);
        open++;
    }
    if (rc == VG_OK && open != u->num_open) rc = state_mismatch(d, "open cycle elements", st);
    return rc;
}

/* ---- the transformations' positions ---- */

static vg_code map_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    unary_it *u = (unary_it *)it;
    vg_code rc;
    if (u->blk && (rc = pmap_drain(u, st)) != VG_OK) return rc;
    if ((rc = queue_save(&u->rq, w, it->ds->fn->nouts, st)) != VG_OK) return rc;
    vg__ds_put_i64(w, u->blk ? u->blk[u->bcur].in_end : 0);
    return vg__ds_save_child(u->in, w, st);
}
static vg_code map_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    vg_code rc;
    if ((rc = queue_restore(&u->rq, r, d->fn->nouts, st)) != VG_OK) return rc;
    bool in_end = vg__ds_get_range(r, 0, 1) != 0;
    if (u->blk) u->blk[u->bcur].in_end = in_end;
    return restore_child(it, &u->in, d->input, true, r, st);
}

static vg_code shuffle_save_it(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    return shuffle_save((unary_it *)it, w, st);
}
static vg_code shuffle_restore_it(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    return shuffle_restore((unary_it *)it, r, st);
}
static vg_code cache_save_it(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) { return cache_save((unary_it *)it, w, st); }
static vg_code cache_restore_it(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    return cache_restore((unary_it *)it, r, st);
}
static vg_code interleave_save_it(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    return interleave_save((unary_it *)it, w, st);
}
static vg_code interleave_restore_it(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    return interleave_restore((unary_it *)it, r, st);
}
static vg_code prefetch_save_it(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    return prefetch_save((prefetch_it *)it, w, st);
}
static vg_code prefetch_restore_it(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    return prefetch_restore((prefetch_it *)it, r, st);
}

static vg_code repeat_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    unary_it *u = (unary_it *)it;
    vg__ds_put_i64(w, u->epoch);
    vg__ds_put_i64(w, u->in_epoch);
    return vg__ds_save_child(u->in, w, st);
}
static vg_code repeat_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    u->epoch = vg__ds_get_range(r, 0, INT64_MAX);
    u->in_epoch = vg__ds_get_range(r, 0, INT64_MAX);
    if (d->a >= 0 && u->epoch > d->a) r->bad = true;
    return restore_child(it, &u->in, d->input, false, r, st);
}

/* take, skip, shard, ignore_errors: a count */
static vg_code count_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    unary_it *u = (unary_it *)it;
    vg__ds_put_i64(w, u->count);
    return vg__ds_save_child(u->in, w, st);
}
static vg_code count_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    unary_it *u = (unary_it *)it;
    u->count = vg__ds_get_range(r, 0, INT64_MAX);
    return restore_child(it, &u->in, it->ds->input, true, r, st);
}

static vg_code unbatch_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    unary_it *u = (unary_it *)it;
    vg_code rc;
    vg__ds_put_i64(w, u->cur[0] != NULL);
    if (u->cur[0] && (rc = vg__ds_put_item(w, VG_OK, u->cur, it->ds->ncomp, NULL, st)) != VG_OK) return rc;
    vg__ds_put_i64(w, u->count);
    vg__ds_put_i64(w, u->cur_n);
    return vg__ds_save_child(u->in, w, st);
}
static vg_code unbatch_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    vg_code rc;
    if (vg__ds_get_range(r, 0, 1)) {
        vg_code code;
        char *msg = NULL;
        if ((rc = vg__ds_get_item(r, d->ncomp, &code, u->cur, &msg, st)) != VG_OK) return rc;
        vg__free(msg);
        if (code != VG_OK) return state_mismatch(d, "the element being split", st);
    }
    u->count = vg__ds_get_range(r, 0, INT64_MAX);
    u->cur_n = vg__ds_get_range(r, -1, INT64_MAX);
    if (u->cur[0]) {
        for (int c = 0; c < d->ncomp; c++)
            if (vg_tensor_ndims(u->cur[c]) < 1 || vg_tensor_dim(u->cur[c], 0) != u->cur_n) r->bad = true;
        if (u->count > u->cur_n) r->bad = true;
    }
    return restore_child(it, &u->in, d->input, true, r, st);
}

static vg_code concatenate_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    unary_it *u = (unary_it *)it;
    vg_code rc;
    vg__ds_put_i64(w, u->in_end);
    if ((rc = vg__ds_save_child(u->in, w, st)) != VG_OK) return rc;
    return vg__ds_save_child(u->ins[0], w, st);
}
static vg_code concatenate_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    vg_code rc;
    u->in_end = vg__ds_get_range(r, 0, 1) != 0;
    if ((rc = restore_child(it, &u->in, d->input, true, r, st)) != VG_OK) return rc;
    return restore_child(it, &u->ins[0], d->more[0], false, r, st);
}

static vg_code zip_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    unary_it *u = (unary_it *)it;
    vg_code rc = vg__ds_save_child(u->in, w, st);
    for (int k = 0; k < it->ds->nmore && rc == VG_OK; k++) rc = vg__ds_save_child(u->ins[k], w, st);
    return rc;
}
static vg_code zip_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    unary_it *u = (unary_it *)it;
    const vg__dataset *d = it->ds;
    vg_code rc = restore_child(it, &u->in, d->input, true, r, st);
    for (int k = 0; k < d->nmore && rc == VG_OK; k++) rc = restore_child(it, &u->ins[k], d->more[k], true, r, st);
    return rc;
}

/* batch, padded_batch, filter: nothing between elements */
static vg_code input_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    return vg__ds_save_child(((unary_it *)it)->in, w, st);
}
static vg_code input_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    return restore_child(it, &((unary_it *)it)->in, it->ds->input, true, r, st);
}

vg_code vg__ds_iter_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    const vg__dataset *d = it->ds;
    vg__ds_put_i64(w, ITER_TAG | d->kind);
    vg_code rc = vg__ds_kind_of(d->kind)->save(it, w, st);
    if (rc == VG_OK && w->b.oom) rc = VG_OOM(st, "iterator state");
    if (rc == VG_UNIMPLEMENTED && !strstr(st->msg, "Dataset")) /* name the innermost dataset op */
        vg_status_prefix(st, "%s: ", vg__ds_kind_name(d->kind));
    return rc;
}

vg_code vg__ds_iter_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    const vg__dataset *d = it->ds;
    if (vg__ds_get_i64(r) != (ITER_TAG | d->kind)) {
        r->bad = true;
        return rd_bad(r, d, st);
    }
    vg_code rc = vg__ds_kind_of(d->kind)->restore(it, r, st);
    if (rc == VG_OK) rc = rd_bad(r, d, st);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* the transformations' parameters from their ops */

/* map, filter, interleave, flat_map: the function named by the op's attr (in its graph) */
static vg_code fn_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    const char *type = vg_op_type(a->op), *key;
    size_t kl;
    int kfn = vg__ds_kind_of(d->kind)->fn;
    bool filter = kfn == VG__DS_FN_PREDICATE, interleave = kfn == VG__DS_FN_DATASET;
    if (!vg_op_attr_string(a->op, filter ? "predicate" : "f", &key, &kl))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MapDataset needs attr f");
    char k[600];
    snprintf(k, sizeof k, "%.*s", (int)(kl < 590 ? kl : 590), key);
    d->fn = vg_graph_user_data(vg_op_graph(a->op), k);
    if (!d->fn) return vg_status_set(st, VG_NOT_FOUND, "%s: function '%s' not found", type, k);
    /* other_arguments: the captured values, right after the input dataset (TF's order) */
    const vg_dtype *targs;
    int ncap = 0;
    if (!vg_op_attr_type_list(a->op, "Targuments", &targs, &ncap)) ncap = 0;
    if (ncap != d->fn->ncap || 1 + ncap > a->nin)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the function captures %d values, the op passes %d", type,
                             d->fn->ncap, ncap);
    for (int i = 0; i < ncap; i++) {
        vg_tensor *t = a->in[1 + i];
        if (vg_tensor_dtype(t) != targs[i] || vg_output_dtype(d->fn->caps[i]) != targs[i])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: captured value %d has dtype %s, expected %s", type, i,
                                 vg_dtype_name(vg_tensor_dtype(t)), vg_dtype_name(vg_output_dtype(d->fn->caps[i])));
        d->cap[d->ncap++] = vg_tensor_ref(t);
    }
    a = &(vg__ds_op_args){a->op, a->in + ncap, a->nin - ncap}; /* the scalar parameters follow them */
    if (!strcmp(type, "ParallelMapDataset")) {
        d->c = vg__ds_scalar_i64(a->in[1]);
        if (d->c == -1) d->c = 4; /* AUTOTUNE: a fixed width here */
        if (d->c <= 0 || d->c > 256)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "num_parallel_calls must be in [1, 256], got %lld",
                                 (long long)d->c);
    }
    if (interleave && !strcmp(type, "FlatMapDataset")) {
        d->a = 1, d->b = 1; /* flat_map: interleave with cycle_length 1 (each dataset read to its end) */
    } else if (interleave) {
        d->a = vg__ds_scalar_i64(a->in[1]), d->b = vg__ds_scalar_i64(a->in[2]);
        if (!strcmp(type, "ParallelInterleaveDatasetV2")) {
            d->c = vg__ds_scalar_i64(a->in[3]);
            if (d->c == -1) d->c = d->a; /* AUTOTUNE: one per cycle element */
            if (d->c <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_parallel_calls must be greater than zero.");
        }
        if (d->a <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "cycle_length must be greater than zero.");
        if (d->b <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "block_length must be greater than zero.");
        if (d->a > 4096) return vg_status_set(st, VG_INVALID_ARGUMENT, "cycle_length %lld is too large", (long long)d->a);
    }
    return VG_OK;
}

static vg_code shard_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->a = vg__ds_scalar_i64(a->in[1]), d->b = vg__ds_scalar_i64(a->in[2]);
    if (d->a <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Number of shards must be greater than zero (currently num_shards = %lld).", (long long)d->a);
    if (d->b < 0 || d->b >= d->a)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Index must be between 0 and %lld (currently index = %lld).",
                             (long long)(d->a - 1), (long long)d->b);
    return VG_OK;
}

/* inputs: dataset, batch_size, padded_shapes (ncomp int64 vectors), padding_values (ncomp
 * scalars), drop_remainder */
static vg_code padded_batch_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    int nc = d->ncomp;
    if (a->nin != 3 + 2 * nc)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "PaddedBatchDatasetV2 expects %d inputs", 3 + 2 * nc);
    d->a = vg__ds_scalar_i64(a->in[1]);
    d->flag = vg_tensor_scalar(a->in[2 + 2 * nc]) != 0;
    if (d->a <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Batch size must be greater than zero.");
    for (int c = 0; c < nc; c++) {
        vg_tensor *ps = a->in[2 + c], *pv = a->in[2 + nc + c];
        int64_t r = vg_tensor_num_elements(ps);
        if (vg_tensor_dtype(ps) != VG_INT64 || vg_tensor_ndims(ps) != 1 || r > VG_MAX_DIMS - 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "padded_shapes[%d] must be an int64 vector", c);
        if (vg_tensor_num_elements(pv) != 1 || vg_tensor_dtype(pv) != d->types[c])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "padding_values[%d] must be a %s scalar", c,
                                 vg_dtype_name(d->types[c]));
        d->padded[c] = vg_shape_make(vg_tensor_data(ps), (int)r);
        d->comps[c] = vg_tensor_ref(pv);
    }
    return VG_OK;
}

static vg_code cache_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    size_t l = 0;
    const char *fn = vg_tensor_string(a->in[1], 0, &l);
    if (fn && l && (l > 4000 || memchr(fn, 0, l))) return vg_status_set(st, VG_INVALID_ARGUMENT, "CacheDataset: bad filename");
    if (!(d->cache = vg__calloc(1, sizeof *d->cache))) return VG_OOM(st, "cache");
    pthread_mutex_init(&d->cache->mu, NULL);
    if (fn && l) {
        if (!(d->cache->file = vg__malloc(l + 1))) return VG_OOM(st, "cache");
        memcpy(d->cache->file, fn, l);
        d->cache->file[l] = 0;
    }
    return VG_OK;
}

static vg_code batch_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->a = vg__ds_scalar_i64(a->in[1]);
    d->flag = vg_tensor_scalar(a->in[2]) != 0;
    if (d->a <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Batch size must be greater than zero.");
    return VG_OK;
}

static vg_code shuffle_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->a = vg__ds_scalar_i64(a->in[1]), d->seed = vg__ds_scalar_i64(a->in[2]), d->seed2 = vg__ds_scalar_i64(a->in[3]);
    bool r = true;
    vg_op_attr_bool(a->op, "reshuffle_each_iteration", &r);
    d->flag = r;
    vg_code rc = VG_OK;
    if (d->a <= 0) rc = vg_status_set(st, VG_INVALID_ARGUMENT, "buffer_size must be greater than zero.");
    /* ShuffleDatasetOp::MakeDataset: seeds 0 and 0 are drawn at random here, once per
     * dataset, so every iterator over it (each epoch of a repeat) shares them; with
     * reshuffle_each_iteration = False the epochs then come in the same order */
    while (d->seed == 0 && d->seed2 == 0) {
        d->seed = (int64_t)vg__ds_random_u64(d);
        d->seed2 = (int64_t)vg__ds_random_u64(a->op);
    }
    return rc;
}

/* repeat, take, skip: a count (-1 = all) */
static vg_code count_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    (void)st;
    d->a = vg__ds_scalar_i64(a->in[1]);
    if (d->a < -1) d->a = -1;
    return VG_OK;
}

static vg_code prefetch_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->a = vg__ds_scalar_i64(a->in[1]);
    if (d->a < -1) /* TF's PrefetchDatasetOp: only AUTOTUNE (-1) may be negative */
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning, got %lld",
                             (long long)d->a);
    if (d->a < 1) d->a = 1; /* AUTOTUNE (-1) and 0: one element */
    else if (d->a > (1 << 20))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "prefetch buffer_size %lld is too large", (long long)d->a);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* the transformations' kinds */

static bool map_valid(const vg__dataset *d) { return d->c >= 0 && d->c <= 256; }
static bool interleave_valid(const vg__dataset *d) { return d->a > 0 && d->a <= 4096 && d->b > 0 && d->c >= 0; }
static bool batch_valid(const vg__dataset *d) { return vg__ds_types_pass(d) && d->a > 0 && d->a <= ((int64_t)1 << 31); }
static bool padded_batch_valid(const vg__dataset *d) {
    if (!batch_valid(d)) return false;
    for (int c = 0; c < d->ncomp; c++)
        if (!d->comps[c] || vg_tensor_dtype(d->comps[c]) != d->types[c] || vg_tensor_num_elements(d->comps[c]) != 1 ||
            d->padded[c].ndims < 0 || d->padded[c].ndims + 1 > VG_MAX_DIMS)
            return false;
    return true;
}
static bool shuffle_valid(const vg__dataset *d) { return vg__ds_types_pass(d) && d->a > 0; }
static bool prefetch_valid(const vg__dataset *d) { return vg__ds_types_pass(d) && d->a >= 1 && d->a <= (1 << 20); }
static bool shard_valid(const vg__dataset *d) { return vg__ds_types_pass(d) && d->a > 0 && d->b >= 0 && d->b < d->a; }
static bool cache_valid(const vg__dataset *d) { return vg__ds_types_pass(d) && d->cache != NULL; }
static bool zip_valid(const vg__dataset *d) {
    const vg__dataset *in = d->input;
    int n = in->ncomp;
    if (n > d->ncomp || memcmp(in->types, d->types, sizeof(vg_dtype) * (size_t)n)) return false;
    for (int i = 0; i < d->nmore; i++) {
        const vg__dataset *m = d->more[i];
        if (n + m->ncomp > d->ncomp || memcmp(m->types, d->types + n, sizeof(vg_dtype) * (size_t)m->ncomp)) return false;
        n += m->ncomp;
    }
    return n == d->ncomp;
}
static bool concatenate_valid(const vg__dataset *d) {
    return d->nmore == 1 && d->more[0]->ncomp == d->ncomp &&
           !memcmp(d->more[0]->types, d->types, sizeof(vg_dtype) * (size_t)d->ncomp) && vg__ds_types_pass(d);
}
static bool repeat_records(const vg__dataset *d) { return strings_source(d->input); }

const vg__ds_kind vg__ds_kind_map = {
    .name = "MapDataset",
    .ops = {"MapDataset", "ParallelMapDataset"},
    .iter_size = sizeof(unary_it),
    .params = fn_params,
    .iter_init = map_init,
    .save = map_save,
    .restore = map_restore,
    .valid = map_valid,
    .inputs = 1,
    .fn = VG__DS_FN_MAP,
};

const vg__ds_kind vg__ds_kind_filter = {
    .name = "FilterDataset",
    .ops = {"FilterDataset"},
    .iter_size = sizeof(unary_it),
    .params = fn_params,
    .iter_init = filter_init,
    .save = input_save,
    .restore = input_restore,
    .valid = vg__ds_types_pass,
    .inputs = 1,
    .fn = VG__DS_FN_PREDICATE,
};

const vg__ds_kind vg__ds_kind_interleave = {
    .name = "InterleaveDataset",
    .ops = {"InterleaveDataset", "ParallelInterleaveDatasetV2", "FlatMapDataset"},
    .iter_size = sizeof(unary_it),
    .params = fn_params,
    .iter_init = interleave_init,
    .save = interleave_save_it,
    .restore = interleave_restore_it,
    .valid = interleave_valid,
    .inputs = 1,
    .fn = VG__DS_FN_DATASET,
};

const vg__ds_kind vg__ds_kind_batch = {
    .name = "BatchDatasetV2",
    .ops = {"BatchDatasetV2"},
    .iter_size = sizeof(unary_it),
    .params = batch_params,
    .iter_init = batch_init,
    .save = input_save,
    .restore = input_restore,
    .valid = batch_valid,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_padded_batch = {
    .name = "PaddedBatchDatasetV2",
    .ops = {"PaddedBatchDatasetV2"},
    .iter_size = sizeof(unary_it),
    .params = padded_batch_params,
    .iter_init = padded_batch_init,
    .save = input_save,
    .restore = input_restore,
    .valid = padded_batch_valid,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_unbatch = {
    .name = "UnbatchDataset",
    .ops = {"UnbatchDataset"},
    .iter_size = sizeof(unary_it),
    .iter_init = unbatch_init,
    .save = unbatch_save,
    .restore = unbatch_restore,
    .valid = vg__ds_types_pass,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_shuffle = {
    .name = "ShuffleDataset",
    .ops = {"ShuffleDataset"},
    .iter_size = sizeof(unary_it),
    .params = shuffle_params,
    .iter_init = shuffle_init,
    .save = shuffle_save_it,
    .restore = shuffle_restore_it,
    .valid = shuffle_valid,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_repeat = {
    .name = "RepeatDataset",
    .ops = {"RepeatDataset"},
    .iter_size = sizeof(unary_it),
    .params = count_params,
    .iter_init = repeat_init,
    .save = repeat_save,
    .restore = repeat_restore,
    .valid = vg__ds_types_pass,
    .offers_records = repeat_records,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_take = {
    .name = "TakeDataset",
    .ops = {"TakeDataset"},
    .iter_size = sizeof(unary_it),
    .params = count_params,
    .iter_init = take_init,
    .save = count_save,
    .restore = count_restore,
    .valid = vg__ds_types_pass,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_skip = {
    .name = "SkipDataset",
    .ops = {"SkipDataset"},
    .iter_size = sizeof(unary_it),
    .params = count_params,
    .iter_init = skip_init,
    .save = count_save,
    .restore = count_restore,
    .valid = vg__ds_types_pass,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_shard = {
    .name = "ShardDataset",
    .ops = {"ShardDataset"},
    .iter_size = sizeof(unary_it),
    .params = shard_params,
    .iter_init = shard_init,
    .save = count_save,
    .restore = count_restore,
    .valid = shard_valid,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_ignore_errors = {
    .name = "IgnoreErrorsDataset",
    .ops = {"IgnoreErrorsDataset"},
    .iter_size = sizeof(unary_it),
    .iter_init = ignore_errors_init,
    .save = count_save,
    .restore = count_restore,
    .valid = vg__ds_types_pass,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_cache = {
    .name = "CacheDataset",
    .ops = {"CacheDataset"},
    .iter_size = sizeof(unary_it),
    .params = cache_params,
    .iter_init = cache_init,
    .save = cache_save_it,
    .restore = cache_restore_it,
    .valid = cache_valid,
    .inputs = 1,
};

const vg__ds_kind vg__ds_kind_concatenate = {
    .name = "ConcatenateDataset",
    .ops = {"ConcatenateDataset"},
    .iter_size = sizeof(unary_it),
    .iter_init = concatenate_init,
    .save = concatenate_save,
    .restore = concatenate_restore,
    .valid = concatenate_valid,
    .inputs = 2,
};

const vg__ds_kind vg__ds_kind_zip = {
    .name = "ZipDataset",
    .ops = {"ZipDataset"},
    .iter_size = sizeof(unary_it),
    .iter_init = zip_init,
    .save = zip_save,
    .restore = zip_restore,
    .valid = zip_valid,
    .inputs = 2,
};

const vg__ds_kind vg__ds_kind_prefetch = {
    .name = "PrefetchDataset",
    .ops = {"PrefetchDataset"},
    .iter_size = sizeof(prefetch_it),
    .params = prefetch_params,
    .iter_init = prefetch_init,
    .save = prefetch_save_it,
    .restore = prefetch_restore_it,
    .valid = prefetch_valid,
    .inputs = 1,
};

/* The kinds by number (VG__DS_*, the numbers of saved states). */
static const vg__ds_kind *const g_kinds[] = {
    [VG__DS_SLICES] = &vg__ds_kind_slices,         [VG__DS_RANGE] = &vg__ds_kind_range,
    [VG__DS_TFRECORD] = &vg__ds_kind_tfrecord,     [VG__DS_MAP] = &vg__ds_kind_map,
    [VG__DS_BATCH] = &vg__ds_kind_batch,           [VG__DS_SHUFFLE] = &vg__ds_kind_shuffle,
    [VG__DS_REPEAT] = &vg__ds_kind_repeat,         [VG__DS_TAKE] = &vg__ds_kind_take,
    [VG__DS_SKIP] = &vg__ds_kind_skip,             [VG__DS_PREFETCH] = &vg__ds_kind_prefetch,
    [VG__DS_TEXTLINE] = &vg__ds_kind_textline,     [VG__DS_SHARD] = &vg__ds_kind_shard,
    [VG__DS_INTERLEAVE] = &vg__ds_kind_interleave, [VG__DS_IGNORE_ERRORS] = &vg__ds_kind_ignore_errors,
    [VG__DS_FROM_TENSORS] = &vg__ds_kind_from_tensors, [VG__DS_FILTER] = &vg__ds_kind_filter,
    [VG__DS_UNBATCH] = &vg__ds_kind_unbatch,       [VG__DS_CONCATENATE] = &vg__ds_kind_concatenate,
    [VG__DS_ZIP] = &vg__ds_kind_zip,               [VG__DS_FIXEDLEN] = &vg__ds_kind_fixedlen,
    [VG__DS_PADDED_BATCH] = &vg__ds_kind_padded_batch, [VG__DS_CACHE] = &vg__ds_kind_cache,
    [VG__DS_WINDOW] = &vg__ds_kind_window,         [VG__DS_WINDOW_ELEMENTS] = &vg__ds_kind_window_elements,
    [VG__DS_GROUP_BY_WINDOW] = &vg__ds_kind_group_by_window,
};
#define NKINDS ((int)(sizeof g_kinds / sizeof g_kinds[0]))

const vg__ds_kind *vg__ds_kind_of(int kind) { return kind >= 0 && kind < NKINDS ? g_kinds[kind] : NULL; }

int vg__ds_kind_by_op(const char *op_type) {
    for (int k = 0; k < NKINDS; k++)
        for (int i = 0; g_kinds[k] && i < 4 && g_kinds[k]->ops[i]; i++)
            if (!strcmp(g_kinds[k]->ops[i], op_type)) return k;
    return -1;
}
