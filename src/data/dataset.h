/*
 * dataset.h - tf.data's runtime (internal): dataset descriptions and their iterators.
 *
 * A vg__dataset is immutable and reference counted; dataset ops create one per run
 * and hand it out in a VG_RESOURCE scalar whose deallocator drops the reference.
 * vg__ds_iter_new makes an iterator: a small state machine with next() and free().
 * Iterators are not thread-safe (the iterator resource serializes get_next), except
 * the prefetch iterator's own producer thread and the asynchronous parallel map's pool
 * thread (which reads the map's input while the caller serves mapped elements), which
 * they manage.
 *
 * Saving and restoring (dataset_state.c, vg__ds_iter_save / _restore): an iterator's
 * state is its dataset's description (kind, parameters, tensors, its functions as
 * GraphDefs) followed by each iterator's position, depth first: plain
 * counters (range: next value; slices / take / skip / repeat / shard: counts; TFRecord:
 * file index + records read; text lines: file index + byte offset in the (inflated)
 * stream; fixed-length records: file index + offset) and buffered elements (shuffle: the
 * buffer in order + the RNG; map: the elements read ahead and mapped, not yet delivered;
 * prefetch: its ring, the producer thread stopped while it is read; interleave: each
 * open cycle element's arguments and state). The format does not depend on which fast
 * path (vectorized / native map, row views, slab shuffle) an iterator takes.
 */
#ifndef VG_DATASET_H
#define VG_DATASET_H

#include "core/core.h"
#include "io/example_io.h"
#include "io/io.h"
#include "vigil/data.h"
#include "vigil/session.h"
#include <pthread.h>
#include <stdatomic.h>

/* The dataset kinds. The numbers are written into saved iterator states (keep them). */
enum {
    VG__DS_SLICES, VG__DS_RANGE, VG__DS_TFRECORD, VG__DS_MAP, VG__DS_BATCH, VG__DS_SHUFFLE,
    VG__DS_REPEAT, VG__DS_TAKE, VG__DS_SKIP, VG__DS_PREFETCH, VG__DS_TEXTLINE, VG__DS_SHARD,
    VG__DS_INTERLEAVE, VG__DS_IGNORE_ERRORS, VG__DS_FROM_TENSORS, VG__DS_FILTER, VG__DS_UNBATCH,
    VG__DS_CONCATENATE, VG__DS_ZIP, VG__DS_FIXEDLEN, VG__DS_PADDED_BATCH, VG__DS_CACHE,
    VG__DS_WINDOW, VG__DS_WINDOW_ELEMENTS, VG__DS_GROUP_BY_WINDOW
};

/* CACHE: the elements of the first complete pass, shared by later iterators. */
typedef struct vg__ds_cache {
    pthread_mutex_t mu;
    char *file;                 /* cache(filename): a tensor bundle at this prefix; NULL = memory */
    bool writing;               /* an iterator is writing the file */
    bool complete;
    vg_tensor **elems;          /* n * ncomp */
    int64_t n;
} vg__ds_cache;

/* A map / interleave function: a graph with one placeholder per input component
 * (interleave: one output, a dataset). */
typedef struct vg__ds_fn {
    vg_graph *g;
    int nargs, nouts;
    vg_output args[VG_DATASET_MAX_COMPONENTS];
    vg_output outs[VG_DATASET_MAX_COMPONENTS];
    /* map: the function over a block of elements stacked on a new leading dimension
     * (dataset_vectorize.c), or NULL when one of its ops has no batched form */
    vg_graph *vec;
    vg_output vec_args[VG_DATASET_MAX_COMPONENTS];
    vg_output vec_outs[VG_DATASET_MAX_COMPONENTS];
    struct vg__ds_native *native; /* fn->vec without a session, or NULL (dataset_native.c) */
    struct vg__ds_native *native_b; /* fn over a vector of records, per record, or NULL */
    char key[600];              /* its key in the graph's user data (saved iterator states name it) */
    /* captured values (vg_dataset_capture): a placeholder in g per capture, fed with
     * the dataset's cap[] at every call (TF's captured inputs, after the arguments);
     * cap_outer: the captured outputs of the enclosing graph (build time only; {NULL}
     * in a function decoded from a saved state) */
    int ncap;
    vg_output caps[VG_DATASET_MAX_CAPTURES];
    vg_output cap_outer[VG_DATASET_MAX_CAPTURES];
} vg__ds_fn;

/* The vectorized function run without a session (dataset_native.c): ParseExample of
 * the records into each output through DecodeRaw / Reshape / Cast / arithmetic with a
 * scalar constant, one record at a time into the caller's rows. */
typedef struct vg__ds_native vg__ds_native;
typedef struct vg__ds_xform vg__ds_xform;
/* Per-thread scratch of vg__ds_native_row (zero-initialised; freed by _scratch_free). */
typedef struct vg__ds_native_scratch {
    vg__features fs;
    void *buf[2];
    size_t cap[2];
    int64_t dyn_count[VG_DATASET_MAX_COMPONENTS]; /* see vg__ds_native_dyn_counts */
} vg__ds_native_scratch;
/* The native form of fn->vec, or NULL when the function is not of that form. */
VG_HIDDEN vg__ds_native *vg__ds_native_compile(const vg__ds_fn *fn);
/* The native form of fn itself when its argument is a vector of records (a map after
 * batch: ParseExample of the whole batch), per record; NULL when not of that form. */
VG_HIDDEN vg__ds_native *vg__ds_native_compile_batched(const vg__ds_fn *fn);
VG_HIDDEN void vg__ds_native_free(vg__ds_native *nf);
VG_HIDDEN void vg__ds_native_scratch_free(vg__ds_native_scratch *s);
/* Output c as vg__ds_native_row writes it: *raw bytes per element, and the transform
 * that makes the element of them (NULL: the raw bytes are the element's). */
VG_HIDDEN const vg__ds_xform *vg__ds_native_out(const vg__ds_native *nf, int c, size_t *raw);
/* Computes the outputs of one serialized Example into dst[c] (the raw bytes of
 * vg__ds_native_out); false, with the rows in an unspecified state, when the record is not the plain
 * case (the session's ops then decide its results or errors). */
VG_HIDDEN bool vg__ds_native_row(const vg__ds_native *nf, vg__ds_native_scratch *s, const uint8_t *rec, size_t len,
                                 uint8_t *const *dst);

/* A map over batches may decode_raw records of a length known at run time only (no
 * reshape): their values per record are set from rec (the batch's first record) into
 * s->dyn_count, which vg__ds_native_row then requires of every record (DecodeRaw's
 * "all the same size"); false when rec does not give them (the session decides). */
VG_HIDDEN bool vg__ds_native_dyn_counts(const vg__ds_native *nf, vg__ds_native_scratch *s, const uint8_t *rec,
                                        size_t len);
/* Output c's values per record (dyn_count for a run-time length). */
VG_HIDDEN int64_t vg__ds_native_count(const vg__ds_native *nf, const vg__ds_native_scratch *s, int c);
/* vg__ds_xform_apply for n values. */
VG_HIDDEN void vg__ds_xform_apply_n(const vg__ds_xform *xf, const uint8_t *src, uint8_t *dst, int64_t n);

/* Frees a function (its graphs and native forms); the destructor of its graph user data. */
VG_HIDDEN void vg__ds_fn_free(void *fn);
/* Stores f in g's user data under "vigil.dataset_fn:<g's unique name for name>", writes that
 * key to key[0..keycap) and f->key. VG_RESOURCE_EXHAUSTED when g cannot store it (f freed). */
VG_HIDDEN vg_code vg__ds_fn_store(vg_graph *g, vg__ds_fn *f, const char *name, char *key, size_t keycap);
/* Builds fn->vec (see dataset_vectorize.c); false (fn->vec NULL) when fn has an op it
 * cannot batch. */
VG_HIDDEN bool vg__ds_fn_vectorize(vg__ds_fn *fn);
/* Whether new map iterators use fn->vec (default true; tests and benchmarks compare). */
VG_HIDDEN void vg__ds_set_vectorize(bool on);

typedef struct vg__dataset {
    atomic_int refs;
    struct vg__dataset *self;   /* the resource tensor's 8 data bytes: a pointer to this */
    int kind;
    int ncomp;
    vg_dtype types[VG_DATASET_MAX_COMPONENTS];
    struct vg__dataset *input;
    struct vg__dataset *more[VG_DATASET_MAX_COMPONENTS]; /* CONCATENATE: more[0]; ZIP: the others */
    int nmore;
    vg_tensor *comps[VG_DATASET_MAX_COMPONENTS]; /* SLICES, FROM_TENSORS (references);
                                                     PADDED_BATCH: the padding values */
    vg_shape padded[VG_DATASET_MAX_COMPONENTS];  /* PADDED_BATCH: -1 = the batch's longest */
    vg_tensor *files;           /* TFRECORD, TEXTLINE, FIXEDLEN: string tensor (reference) */
    int compression;
    int64_t a, b, c;            /* RANGE start/stop/step; counts; batch size; buffer sizes;
                                   SHARD num_shards/index; INTERLEAVE cycle/block length;
                                   FIXEDLEN header/record/footer bytes;
                                   MAP c = num_parallel_calls */
    bool flag;                  /* BATCH drop_remainder; SHUFFLE reshuffle_each_iteration */
    int64_t seed, seed2;
    atomic_llong iterations;    /* SHUFFLE: the reshuffle count of its first iterator in a
                                   top-level iterator (0; a restored state's count) */
    const void *src;            /* the op that made it (NULL: restored from a state) */
    const vg__ds_fn *fn;        /* MAP, INTERLEAVE, FILTER (owned by the graph, or own_fn) */
    vg__ds_fn *own_fn;          /* a function rebuilt from a saved state: the dataset's */
    const vg__ds_fn *fn2, *fn3; /* GROUP_BY_WINDOW: reduce_func, window_size_func (fn: key_func;
                                   their captured values follow fn's in cap[]) */
    vg__ds_fn *own_fn2, *own_fn3; /* the same rebuilt from a saved state: the dataset's */
    vg__ds_cache *cache;        /* CACHE */
    vg_tensor **elems;          /* WINDOW_ELEMENTS: the window's elements (nelems, one component
                                   each; references) */
    int64_t nelems;
    /* MAP, INTERLEAVE, FILTER: the captured values (the op's other_arguments, evaluated
     * when the dataset was made; references), fed to fn->caps[] */
    int ncap;
    vg_tensor *cap[VG_DATASET_MAX_CAPTURES];
} vg__dataset;

/* Runs d's function (d->fn) over in[0..fn->nargs) with d's captured values fed to its
 * capture placeholders: out[0..nout) = the first nout outputs (new references). */
VG_HIDDEN vg_code vg__ds_fn_run(vg_session *s, const vg__dataset *d, vg_tensor *const *in, vg_tensor **out, int nout,
                                vg_status *st);
/* The same for a function fn and captured values cap[0..fn->ncap) (ReduceDataset). */
VG_HIDDEN vg_code vg__ds_fn_run_with(vg_session *s, const vg__ds_fn *fn, vg_tensor *const *cap, vg_tensor *const *in,
                                     vg_tensor **out, int nout, vg_status *st);

/* A new dataset with one reference (zeroed, refs = 1). NULL on OOM. */
VG_HIDDEN vg__dataset *vg__dataset_new(int kind);
VG_HIDDEN vg__dataset *vg__dataset_ref(vg__dataset *d);
VG_HIDDEN void vg__dataset_unref(vg__dataset *d);
/* Wraps d in a VG_RESOURCE scalar that owns the reference (on failure the reference
 * is dropped). */
VG_HIDDEN vg_tensor *vg__dataset_tensor(vg__dataset *d, vg_status *st);
/* The dataset in a resource tensor (borrowed), or NULL with INVALID_ARGUMENT. */
VG_HIDDEN vg__dataset *vg__dataset_of(const vg_tensor *t, vg_status *st);

typedef struct vg__ds_iter vg__ds_iter;
typedef struct vg__ds_rows vg__ds_rows;
/* What the iterators of one top-level iterator share (TF keeps it in the iterator
 * resource): the count of iterators made so far over each reshuffling shuffle (its
 * epochs), keyed by the op that made the dataset (by the dataset when restored). */
typedef struct vg__ds_ctx vg__ds_ctx;
typedef vg_code (*vg__ds_next_fn)(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st);
typedef vg_code (*vg__ds_rec_sink)(void *arg, int64_t i, const uint8_t *p, size_t len, vg_status *st);
struct vg__ds_iter {
    /* VG_OK with out[0..ncomp) set (new references), or VG_OK with *end = true, or an
     * error (the iterator stays usable: the next call retries or continues). */
    vg_code (*next)(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st);
    void (*free)(vg__ds_iter *it);
    /* wake blocked waiters (prefetch) and make them fail with CANCELLED; may be NULL */
    void (*cancel)(vg__ds_iter *it);
    /* Sources of scalar strings (TFRecord files, repeated): the next elements' bytes
     * handed to sink(arg, i, bytes, len) for i = at, at + 1, ... (*got of them, <= max)
     * as next() would return them one by one, the bytes valid during the call only;
     * stops early at the end (*end), at an error (returned after the *got good ones)
     * or at a sink's error (returned, that record not counted but consumed). NULL for
     * other iterators. */
    vg_code (*next_records)(vg__ds_iter *it, vg__ds_rec_sink sink, void *arg, int64_t at, int64_t max, int64_t *got,
                            bool *end, vg_status *st);
    /* Row views (NULL where not offered): the next 1..max (<= VG__DS_ROWS_MAX) elements
     * as next() would return them, all of one shape, described in *r without a tensor
     * per element; the bytes stay valid until the next call on `it` (or its free). At
     * the end *end; an error is returned at its position (after the elements before it
     * came in earlier views), and the iterator stays usable as with next(). Offered by
     * iterators whose components are all numeric: the vectorized map (rows of its
     * batched results), the shuffle over such a map (rows of its slab); the batch that
     * reads them copies rows straight into its output (see dataset_iter.c). */
    vg_code (*next_rows)(vg__ds_iter *it, int64_t max, vg__ds_rows *r, bool *end, vg_status *st);
    const vg__dataset *ds;
    vg__ds_ctx *ctx;            /* shared with its parent (a reference) */
};

#define VG__DS_ROWS_MAX 64
/* A view of n elements whose component c has dtype[c] and shape dims[c][0..ndims[c])
 * (bytes[c] bytes, numeric) for every element; element i's component c starts at
 * data[i][c]. */
struct vg__ds_rows {
    int64_t n;
    vg_dtype dtype[VG_DATASET_MAX_COMPONENTS];
    int ndims[VG_DATASET_MAX_COMPONENTS];
    int64_t dims[VG_DATASET_MAX_COMPONENTS][VG_MAX_DIMS];
    size_t bytes[VG_DATASET_MAX_COMPONENTS];
    /* xf[c] NULL: data[i][c] holds the component's bytes; else raw[c] bytes that
     * vg__ds_xform_apply(xf[c], ...) turns into them (a native map's last elementwise
     * steps, deferred to whoever copies the element out: 1/4 of the bytes for an
     * image of uint8 scaled to float) */
    const struct vg__ds_xform *xf[VG_DATASET_MAX_COMPONENTS];
    size_t raw[VG_DATASET_MAX_COMPONENTS];
    const uint8_t *data[VG__DS_ROWS_MAX][VG_DATASET_MAX_COMPONENTS];
};
/* Expands one element's raw bytes into its bytes (dst: the component's size). */
VG_HIDDEN void vg__ds_xform_apply(const vg__ds_xform *xf, const uint8_t *src, uint8_t *dst);

/* Whether new iterators use row views between them (default true; tests and
 * benchmarks compare with the element-by-element path). */
VG_HIDDEN void vg__ds_set_rows(bool on);
/* Whether new map iterators use fn->native (default true; tests compare). */
VG_HIDDEN void vg__ds_set_native(bool on);

/* ---- dataset kinds: the interface ----------------------------------------
 * Every kind is one vg__ds_kind, defined next to its iterator: the sources in
 * dataset_sources.c, window in dataset_window.c, the other transformations in
 * dataset_iter.c (whose table lists them all); vg__ds_kind_of maps the
 * number in vg__dataset.kind (and in saved states) to it. The generic code (making,
 * saving, restoring an iterator; decoding a description; finding a dataset op's kind)
 * calls these hooks and never tests a kind. */
typedef struct vg__ds_wr vg__ds_wr;
typedef struct vg__ds_rd vg__ds_rd;
/* What a dataset op's kernel hands its kind: the op (attrs; its graph holds the
 * functions) and its input tensors (a transformation's in[0] is its input dataset). */
typedef struct vg__ds_op_args {
    const vg_op *op;
    vg_tensor *const *in;
    int nin;
} vg__ds_op_args;

typedef struct vg__ds_kind {
    const char *name;           /* TF's op name (messages; "MapDataset") */
    const char *ops[4];         /* the graph op types that make it (dataset_ops.c) */
    size_t iter_size;           /* its iterator's struct (a vg__ds_iter first) */
    /* Sets d's parameters from its op's inputs and attrs (d's types, input and more[]
     * already set), checking them with TF's messages (INVALID_ARGUMENT); NULL: none. */
    vg_code (*params)(vg__dataset *d, const vg__ds_op_args *a, vg_status *st);
    /* Sets up a new iterator (iter_size zeroed bytes, ds and ctx set): its next() and
     * other hooks, its input iterators (vg__ds_iter_child). On failure the caller frees
     * it with vg__ds_iter_free, so it->free must cope with a partial set-up. */
    vg_code (*iter_init)(vg__ds_iter *it, vg_status *st);
    /* Its position after the generic tag (vg__ds_iter_save / _restore): see the
     * format in dataset_state.c. restore may leave r->bad set (reported by the caller). */
    vg_code (*save)(vg__ds_iter *it, vg__ds_wr *w, vg_status *st);
    vg_code (*restore)(vg__ds_iter *it, vg__ds_rd *r, vg_status *st);
    /* Whether a decoded description's parameters and element types are ones its
     * iterators can rely on (a corrupt state must not crash them). */
    bool (*valid)(const vg__dataset *d);
    /* Whether its iterators offer next_records (NULL: never). */
    bool (*offers_records)(const vg__dataset *d);
    int inputs;                 /* 0: a source; 1: d->input; 2: d->input and d->more[] */
    bool dataset_elements;      /* its elements are datasets (VG_RESOURCE components) */
    int fn;                     /* its function: VG__DS_FN_NONE, _MAP, _PREDICATE, _DATASET */
} vg__ds_kind;

/* _GROUP: three functions, fn, fn2, fn3 (group_by_window's key / reduce / window size) */
enum { VG__DS_FN_NONE, VG__DS_FN_MAP, VG__DS_FN_PREDICATE, VG__DS_FN_DATASET, VG__DS_FN_GROUP };

/* The kind of number `kind`, or NULL when there is none. */
VG_HIDDEN const vg__ds_kind *vg__ds_kind_of(int kind);
/* The kind number a dataset op type makes, or -1. */
VG_HIDDEN int vg__ds_kind_by_op(const char *op_type);

VG_HIDDEN extern const vg__ds_kind vg__ds_kind_slices, vg__ds_kind_range, vg__ds_kind_tfrecord,
    vg__ds_kind_textline, vg__ds_kind_from_tensors, vg__ds_kind_fixedlen, vg__ds_kind_map, vg__ds_kind_batch,
    vg__ds_kind_shuffle, vg__ds_kind_repeat, vg__ds_kind_take, vg__ds_kind_skip, vg__ds_kind_prefetch,
    vg__ds_kind_shard, vg__ds_kind_interleave, vg__ds_kind_ignore_errors, vg__ds_kind_filter, vg__ds_kind_unbatch,
    vg__ds_kind_concatenate, vg__ds_kind_zip, vg__ds_kind_padded_batch, vg__ds_kind_cache, vg__ds_kind_window,
    vg__ds_kind_window_elements, vg__ds_kind_group_by_window;

/* Helpers the kinds share. */
/* A new input iterator of `parent` over d (sharing its context); NULL with st set. */
VG_HIDDEN vg__ds_iter *vg__ds_iter_child(const vg__ds_iter *parent, vg__dataset *d, vg_status *st);
/* Row i of t (dims[1:]) as a new tensor. */
VG_HIDDEN vg_tensor *vg__ds_slice_row(const vg_tensor *t, int64_t i, vg_status *st);
/* Frees e[0..n) and clears them. */
VG_HIDDEN void vg__ds_free_elem(vg_tensor **e, int n);
/* An integer scalar tensor's value, exactly (int64 / int32; others through a double). */
VG_HIDDEN int64_t vg__ds_scalar_i64(const vg_tensor *t);
/* A nondeterministic 64-bit value (TF's random::New64), salted. */
VG_HIDDEN uint64_t vg__ds_random_u64(const void *salt);
/* Whether d's element types are its input's (a transformation that passes them through). */
VG_HIDDEN bool vg__ds_types_pass(const vg__dataset *d);

/* A new top-level iterator over d (which it references). Fails with RESOURCE_EXHAUSTED
 * or a source's error (e.g. a map function's session). */
VG_HIDDEN vg__ds_iter *vg__ds_iter_new(vg__dataset *d, vg_status *st);
/* The reshuffle count of d's next iterator under ctx (NULL ctx: d->iterations). */
VG_HIDDEN int64_t vg__ds_ctx_iterations(vg__ds_ctx *ctx, const vg__dataset *d);
VG_HIDDEN void vg__ds_iter_free(vg__ds_iter *it);
VG_HIDDEN void vg__ds_iter_cancel(vg__ds_iter *it);

/* ---- saved iterator state (dataset_state.c) ------------------------------ */

/* A growing byte buffer; a failed allocation sets b.oom (later writes are dropped). */
typedef struct vg__ds_wr {
    vg__pb_buf b;
    int version;                /* the state's format: 1 (no captures) or 2 (0: 1) */
} vg__ds_wr;
/* A bounded reader; reading past the end (or a malformed value) sets bad and yields 0. */
typedef struct vg__ds_rd {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
    int version;                /* the state's format (0: 1) */
} vg__ds_rd;

VG_HIDDEN void vg__ds_put_i64(vg__ds_wr *w, int64_t v);
VG_HIDDEN void vg__ds_put_bytes(vg__ds_wr *w, const void *p, size_t n);
/* A tensor (dtype, shape, values); VG_RESOURCE (a dataset in a description) is
 * UNIMPLEMENTED. */
VG_HIDDEN vg_code vg__ds_put_tensor(vg__ds_wr *w, const vg_tensor *t, vg_status *st);
/* An element of nc components, or an error (code != OK: msg) or the end (OUT_OF_RANGE).
 * A component that is a dataset (a window's) is written as its description and its
 * values (d->elems); vg__ds_get_item reads it back. */
VG_HIDDEN vg_code vg__ds_put_item(vg__ds_wr *w, vg_code code, vg_tensor *const *t, int nc, const char *msg,
                                  vg_status *st);
VG_HIDDEN int64_t vg__ds_get_i64(vg__ds_rd *r);
/* A bool / count read as an int64 in [lo, hi]; bad when outside. */
VG_HIDDEN int64_t vg__ds_get_range(vg__ds_rd *r, int64_t lo, int64_t hi);
/* Bytes borrowed from the reader's buffer. */
VG_HIDDEN const uint8_t *vg__ds_get_bytes(vg__ds_rd *r, size_t *n);
/* A new tensor, or NULL (bad set, or st set on OOM). */
VG_HIDDEN vg_tensor *vg__ds_get_tensor(vg__ds_rd *r, vg_status *st);
/* An item written by vg__ds_put_item: *code, the tensors (new references) when OK,
 * else *msg (new string, vg__free) for an error. */
VG_HIDDEN vg_code vg__ds_get_item(vg__ds_rd *r, int nc, vg_code *code, vg_tensor **t, char **msg, vg_status *st);
/* The state's error status when the reader went bad (INVALID_ARGUMENT naming what), else
 * VG_OK. */
VG_HIDDEN vg_code vg__ds_rd_status(const vg__ds_rd *r, const char *what, vg_status *st);

/* TF's op name of a dataset kind ("RangeDataset", ...). */
VG_HIDDEN const char *vg__ds_kind_name(int kind);
/* The description of d and its inputs (reshuffle counts as ctx has them). */
VG_HIDDEN vg_code vg__ds_encode(const vg__dataset *d, vg__ds_ctx *ctx, vg__ds_wr *w, vg_status *st);
/* A new dataset (one reference) from a description; its functions are rebuilt from
 * the GraphDefs in it (as TF's state holds the dataset's function library). */
VG_HIDDEN vg__dataset *vg__ds_decode(vg__ds_rd *r, vg_status *st);
/* Writes its position (and its inputs', depth first). Never changes what `it` yields
 * next (a map's read-ahead, a prefetch's ring are kept, the prefetch thread restarts on
 * the next call). UNIMPLEMENTED for a state that cannot be saved (a cache file being
 * written), naming the dataset op. */
VG_HIDDEN vg_code vg__ds_iter_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st);
/* Saves an input iterator of a save function: whether it is open (child not NULL), then
 * its vg__ds_iter_save state when it is. */
VG_HIDDEN vg_code vg__ds_save_child(vg__ds_iter *child, vg__ds_wr *w, vg_status *st);
/* Restores a state written by vg__ds_iter_save into `it`, a new iterator over the same
 * dataset that has not been used yet. Fails with INVALID_ARGUMENT (a state that does not
 * match), the errors of reopening files (NOT_FOUND, DATA_LOSS when a file is shorter
 * than the saved position) or of re-running an interleave function. */
VG_HIDDEN vg_code vg__ds_iter_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st);
/* The whole state of an iterator: magic, version, vg__ds_encode(it->ds), vg__ds_iter_save.
 * *bytes is new (vg__free). */
VG_HIDDEN vg_code vg__ds_serialize(vg__ds_iter *it, uint8_t **bytes, size_t *len, vg_status *st);
/* A new iterator from vg__ds_serialize's bytes. */
VG_HIDDEN vg__ds_iter *vg__ds_deserialize(const uint8_t *bytes, size_t len, vg_status *st);

/* Installs the hooks that write dataset functions as FunctionDefs on GraphDef export and
 * build them from a GraphDef's library on import (dataset_fdef.c, graph/fn_hooks.h);
 * called once by the op-family list. */
VG_HIDDEN void vg__dataset_fdef_install(void);

#endif
