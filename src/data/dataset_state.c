/*
 * dataset_state.c - the bytes of a saved iterator state (SerializeIterator /
 * DeserializeIterator, tf.data.experimental.make_saveable_from_iterator): a byte
 * writer and a bounds-checked reader, tensors and elements, and the description of a
 * dataset (its kind, parameters, tensors and functions, with its inputs), from which a
 * restore rebuilds the dataset as TF rebuilds it from the GraphDef in its state: a
 * function is its graph as a GraphDef, its argument and result tensor names, and the
 * functions of the dataset ops inside it (a flat_map's inner map), so a state restores
 * into any graph. The iterators' own positions are written by dataset_iter.c.
 *
 * Layout (vigil's own; TF's variant encoding of an iterator state is internal to TF):
 * "VGDSITER", version (int64: 1, or 2 when a function of the pipeline captures values:
 * then each function also lists its capture placeholders after its results, and each
 * dataset with a function its captured values after the function), the dataset
 * description, the iterator state. Integers
 * are 8 bytes little-endian; byte strings a length then the bytes; a tensor its dtype,
 * rank, dimensions, then its values (numbers in host order, which every supported
 * machine shares: little-endian) or each string as a byte string.
 */
#include "data/dataset.h"
#include "graph/fn_hooks.h"
#include "graph/registry.h"
#include "vigil/import.h"
#include <stdio.h>

#define STATE_MAGIC "VGDSITER"
#define STATE_VERSION 2 /* 2: with captured values (written only when there are some) */
#define DS_TAG 0x44534554 /* "DSET" */
#define MAX_DEPTH 512

/* ------------------------------------------------------------------------ */
/* writer */

void vg__ds_put_i64(vg__ds_wr *w, int64_t v) {
    if (!vg__pb_reserve(&w->b, 8)) return;
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++) w->b.data[w->b.len++] = (uint8_t)(u >> (8 * i));
}

void vg__ds_put_bytes(vg__ds_wr *w, const void *p, size_t n) {
    vg__ds_put_i64(w, (int64_t)n);
    if (!n || !vg__pb_reserve(&w->b, n)) return;
    memcpy(w->b.data + w->b.len, p, n);
    w->b.len += n;
}

/* A dataset held in an element: VG_RESOURCE, its description, its own elements. */
static vg_code put_dataset_value(vg__ds_wr *w, const vg_tensor *t, vg_status *st) {
    vg_status tmp;
    const vg__dataset *d = vg_tensor_num_elements(t) == 1 ? vg__dataset_of(t, &tmp) : NULL;
    if (!d)
        return vg_status_set(st, VG_UNIMPLEMENTED, "an element holding a %s tensor that is not a dataset cannot be saved",
                             vg_dtype_name(VG_RESOURCE));
    vg__ds_put_i64(w, VG_RESOURCE);
    vg_code rc = vg__ds_encode(d, NULL, w, st);
    vg__ds_put_i64(w, d->nelems);
    for (int64_t i = 0; i < d->nelems && rc == VG_OK; i++)
        rc = vg_tensor_dtype(d->elems[i]) == VG_RESOURCE
                 ? vg_status_set(st, VG_UNIMPLEMENTED, "a window of datasets cannot be saved")
                 : vg__ds_put_tensor(w, d->elems[i], st);
    return rc;
}

vg_code vg__ds_put_tensor(vg__ds_wr *w, const vg_tensor *t, vg_status *st) {
    vg_dtype dt = vg_tensor_dtype(t);
    if (dt == VG_RESOURCE) /* in a description (from_tensors of a dataset) */
        return vg_status_set(st, VG_UNIMPLEMENTED, "an element holding a %s tensor (a dataset) cannot be saved",
                             vg_dtype_name(dt));
    int nd = vg_tensor_ndims(t);
    vg__ds_put_i64(w, dt);
    vg__ds_put_i64(w, nd);
    for (int k = 0; k < nd; k++) vg__ds_put_i64(w, vg_tensor_dim(t, k));
    if (dt == VG_STRING) {
        int64_t n = vg_tensor_num_elements(t);
        for (int64_t i = 0; i < n; i++) {
            size_t l;
            const char *s = vg_tensor_string(t, i, &l);
            vg__ds_put_bytes(w, s, l);
        }
    } else {
        vg__ds_put_bytes(w, vg_tensor_data(t), vg_tensor_nbytes(t));
    }
    return w->b.oom ? VG_OOM(st, "iterator state") : VG_OK;
}

vg_code vg__ds_put_item(vg__ds_wr *w, vg_code code, vg_tensor *const *t, int nc, const char *msg, vg_status *st) {
    vg__ds_put_i64(w, code);
    if (code != VG_OK) {
        vg__ds_put_bytes(w, msg ? msg : "", msg ? strlen(msg) : 0);
        return w->b.oom ? VG_OOM(st, "iterator state") : VG_OK;
    }
    for (int c = 0; c < nc; c++) { /* a window's dataset: put_dataset_value (get_value reads it) */
        vg_code rc = vg_tensor_dtype(t[c]) == VG_RESOURCE ? put_dataset_value(w, t[c], st)
                                                           : vg__ds_put_tensor(w, t[c], st);
        if (rc != VG_OK) return rc;
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* reader */

int64_t vg__ds_get_i64(vg__ds_rd *r) {
    if (r->bad || r->len - r->pos < 8) {
        r->bad = true;
        return 0;
    }
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
    r->pos += 8;
    return (int64_t)u;
}

int64_t vg__ds_get_range(vg__ds_rd *r, int64_t lo, int64_t hi) {
    int64_t v = vg__ds_get_i64(r);
    if (v < lo || v > hi) {
        r->bad = true;
        return lo;
    }
    return v;
}

const uint8_t *vg__ds_get_bytes(vg__ds_rd *r, size_t *n) {
    int64_t l = vg__ds_get_i64(r);
    *n = 0;
    if (r->bad || l < 0 || (uint64_t)l > r->len - r->pos) {
        r->bad = true;
        return (const uint8_t *)"";
    }
    const uint8_t *p = r->p + r->pos;
    r->pos += (size_t)l;
    *n = (size_t)l;
    return p;
}

vg_tensor *vg__ds_get_tensor(vg__ds_rd *r, vg_status *st) {
    int64_t dt = vg__ds_get_i64(r), nd = vg__ds_get_range(r, 0, VG_MAX_DIMS);
    int64_t dims[VG_MAX_DIMS], n = 1;
    for (int k = 0; k < nd && !r->bad; k++) {
        dims[k] = vg__ds_get_range(r, 0, INT64_MAX);
        if (dims[k] > 0 && n > INT64_MAX / dims[k]) r->bad = true;
        else n *= dims[k];
    }
    bool str = dt == VG_STRING;
    size_t es = str ? 0 : vg_dtype_size((vg_dtype)dt);
    if (!str && (es == 0 || dt == VG_RESOURCE)) r->bad = true;
    /* every string takes at least 8 bytes of the state; numbers their bytes */
    if (!r->bad && (uint64_t)n > (r->len - r->pos) / (str ? 8 : es)) r->bad = true;
    if (r->bad) return NULL;
    vg_tensor *t = vg_tensor_new((vg_dtype)dt, dims, (int)nd, st);
    if (!t) return NULL;
    if (str) {
        for (int64_t i = 0; i < n && !r->bad; i++) {
            size_t l;
            const uint8_t *p = vg__ds_get_bytes(r, &l);
            if (!r->bad && vg_tensor_set_string(t, i, (const char *)p, l, st) != VG_OK) {
                vg_tensor_free(t);
                return NULL;
            }
        }
    } else {
        size_t l;
        const uint8_t *p = vg__ds_get_bytes(r, &l);
        if (!r->bad && l != vg_tensor_nbytes(t)) r->bad = true;
        if (!r->bad && l) memcpy(vg_tensor_data(t), p, l);
    }
    if (r->bad) {
        vg_tensor_free(t);
        return NULL;
    }
    return t;
}

static vg_tensor *get_dataset_value(vg__ds_rd *r, vg_status *st);

/* An element's component: a tensor, or a dataset (put_dataset_value; only here, so a
 * dataset in a dataset's description is not read: the recursion stays bounded). */
static vg_tensor *get_value(vg__ds_rd *r, vg_status *st) {
    size_t pos = r->pos;
    if (vg__ds_get_i64(r) == VG_RESOURCE && !r->bad) return get_dataset_value(r, st);
    if (!r->bad) r->pos = pos;
    return vg__ds_get_tensor(r, st);
}

vg_code vg__ds_get_item(vg__ds_rd *r, int nc, vg_code *code, vg_tensor **t, char **msg, vg_status *st) {
    *code = (vg_code)vg__ds_get_range(r, 0, 64);
    *msg = NULL;
    if (r->bad) return vg__ds_rd_status(r, "element", st);
    if (*code != VG_OK) {
        size_t l;
        const uint8_t *p = vg__ds_get_bytes(r, &l);
        if (r->bad) return vg__ds_rd_status(r, "element", st);
        if (!(*msg = vg__strndup((const char *)p, l))) return VG_OOM(st, "iterator state");
        return VG_OK;
    }
    for (int c = 0; c < nc; c++) {
        if (!(t[c] = get_value(r, st))) {
            for (int k = 0; k < c; k++) vg_tensor_free(t[k]), t[k] = NULL;
            return r->bad ? vg__ds_rd_status(r, "element", st) : st->code;
        }
    }
    return VG_OK;
}

vg_code vg__ds_rd_status(const vg__ds_rd *r, const char *what, vg_status *st) {
    if (!r->bad) return VG_OK;
    return vg_status_set(st, VG_INVALID_ARGUMENT, "corrupt iterator state (%s, near byte %zu of %zu)", what, r->pos,
                         r->len);
}

/* ------------------------------------------------------------------------ */
/* dataset descriptions */

const char *vg__ds_kind_name(int kind) {
    const vg__ds_kind *k = vg__ds_kind_of(kind);
    return k ? k->name : "Dataset";
}

#define FN_PREFIX "vigil.dataset_fn:"

/* The function of a dataset op inside function graph g (a flat_map's inner map), or NULL. */
static const vg__ds_fn *nested_fn(const vg_graph *g, const vg_op *op, const char **key_out) {
    const char *key;
    size_t kl;
    if (!strstr(vg_op_type(op), "Dataset")) return NULL;
    if (!vg_op_attr_string(op, "f", &key, &kl) && !vg_op_attr_string(op, "predicate", &key, &kl)) return NULL;
    char k[600];
    if (kl >= sizeof k) return NULL;
    memcpy(k, key, kl);
    k[kl] = 0;
    const vg__ds_fn *fn = strncmp(k, FN_PREFIX, sizeof FN_PREFIX - 1) == 0 ? vg_graph_user_data(g, k) : NULL;
    if (fn && key_out) *key_out = fn->key;
    return fn;
}

/* TF 1.15 refuses to serialize a dataset whose function has stateful ops (a restore
 * could not reproduce their state): the first such op of fn's graph or of the functions
 * inside it, or NULL. Dataset ops (an interleave's source) and Assert / Print are not
 * state the outputs depend on. */
static const vg_op *stateful_op(const vg__ds_fn *fn, int depth) {
    int n = vg_graph_num_ops(fn->g);
    for (int i = 0; i < n && depth < MAX_DEPTH; i++) {
        const vg_op *op = vg_graph_op(fn->g, i);
        const char *t = vg_op_type(op);
        const vg__ds_fn *inner = nested_fn(fn->g, op, NULL);
        const vg_op *sop = inner ? stateful_op(inner, depth + 1) : NULL;
        if (sop) return sop;
        const vg__op_def *def = vg__registry_find(t);
        if (!def || !(def->flags & VG__OP_STATEFUL) || strstr(t, "Dataset") || !strcmp(t, "Assert") ||
            !strncmp(t, "Print", 5))
            continue;
        return op;
    }
    return NULL;
}

static void put_str(vg__ds_wr *w, const char *s) { vg__ds_put_bytes(w, s, strlen(s)); }

static void put_tensor_name(vg__ds_wr *w, vg_output o) {
    char b[1100];
    snprintf(b, sizeof b, "%s:%d", vg_op_name(o.op), o.index);
    put_str(w, b);
}

/* A function: its key, arity, GraphDef, argument and result names, then the functions
 * of the dataset ops in it. */
static vg_code encode_fn(const vg__ds_fn *fn, vg__ds_wr *w, int depth, vg_status *st) {
    if (depth > MAX_DEPTH) return vg_status_set(st, VG_UNIMPLEMENTED, "dataset functions nested too deep to save");
    void *gd = NULL;
    size_t gl = 0;
    vg_code rc = vg__graph_to_graphdef_plain(fn->g, &gd, &gl, st); /* nested functions by key, below */
    if (rc != VG_OK) return rc;
    put_str(w, fn->key);
    vg__ds_put_i64(w, fn->nargs);
    vg__ds_put_i64(w, fn->nouts);
    vg__ds_put_bytes(w, gd, gl);
    vg_free(gd);
    for (int i = 0; i < fn->nargs; i++) put_tensor_name(w, fn->args[i]);
    for (int i = 0; i < fn->nouts; i++) put_tensor_name(w, fn->outs[i]);
    if (w->version >= 2) { /* its capture placeholders */
        vg__ds_put_i64(w, fn->ncap);
        for (int i = 0; i < fn->ncap; i++) put_tensor_name(w, fn->caps[i]);
    }
    int n = vg_graph_num_ops(fn->g), nn = 0;
    for (int i = 0; i < n; i++) nn += nested_fn(fn->g, vg_graph_op(fn->g, i), NULL) != NULL;
    vg__ds_put_i64(w, nn);
    for (int i = 0; i < n && rc == VG_OK; i++) {
        const vg__ds_fn *inner = nested_fn(fn->g, vg_graph_op(fn->g, i), NULL);
        if (inner) rc = encode_fn(inner, w, depth + 1, st);
    }
    if (rc == VG_OK && w->b.oom) rc = VG_OOM(st, "iterator state");
    return rc;
}

/* A function rebuilt from its encoding (a new one, the caller's); vectorized as the map
 * builders do when `vectorize`. */
static vg__ds_fn *decode_fn_graph(vg__ds_rd *r, bool vectorize, int depth, vg_status *st) {
    size_t kl, gl;
    const uint8_t *key = vg__ds_get_bytes(r, &kl);
    int nargs = (int)vg__ds_get_range(r, 0, VG_DATASET_MAX_COMPONENTS);
    int nouts = (int)vg__ds_get_range(r, 1, VG_DATASET_MAX_COMPONENTS);
    const uint8_t *gd = vg__ds_get_bytes(r, &gl);
    enum { MAXN = 2 * VG_DATASET_MAX_COMPONENTS + VG_DATASET_MAX_CAPTURES };
    static _Thread_local char names[MAXN][1100]; /* (recursion: read before the nested functions) */
    const char *np[MAXN];
    int ncap = 0;
    for (int i = 0; i < nargs + nouts + ncap && !r->bad; i++) {
        size_t l;
        const uint8_t *p = vg__ds_get_bytes(r, &l);
        if (l >= sizeof names[i] || memchr(p, 0, l)) r->bad = true; /* C strings from here on */
        if (r->bad) break;
        memcpy(names[i], p, l);
        names[i][l] = 0;
        np[i] = names[i];
        if (i == nargs + nouts - 1 && r->version >= 2) /* then the capture placeholders' */
            ncap = (int)vg__ds_get_range(r, 0, VG_DATASET_MAX_CAPTURES);
    }
    if (depth > MAX_DEPTH || kl >= sizeof ((vg__ds_fn *)0)->key || kl <= sizeof FN_PREFIX - 1 ||
        memcmp(key, FN_PREFIX, sizeof FN_PREFIX - 1) != 0 || memchr(key, 0, kl))
        r->bad = true;
    if (r->bad) {
        vg__ds_rd_status(r, "function", st);
        return NULL;
    }
    vg__ds_fn *f = vg__calloc(1, sizeof *f);
    if (!f || !(f->g = vg_graph_new())) {
        vg__free(f);
        VG_OOM(st, "dataset function");
        return NULL;
    }
    memcpy(f->key, key, kl);
    f->key[kl] = 0;
    f->nargs = nargs;
    f->nouts = nouts;
    f->ncap = ncap;
    vg_output rets[MAXN];
    vg_import_options io;
    memset(&io, 0, sizeof io);
    io.source = "the function of a saved iterator state";
    io.format = VG_IMPORT_BINARY;
    io.n_return_tensors = nargs + nouts + ncap;
    io.return_tensors = np;
    io.return_tensors_out = rets;
    vg_code rc = vg_graph_import_graph_def(f->g, gd, gl, &io, st);
    for (int i = 0; rc == VG_OK && i < nargs + nouts + ncap; i++) {
        if (i < nargs) f->args[i] = rets[i];
        else if (i < nargs + nouts) f->outs[i - nargs] = rets[i];
        else f->caps[i - nargs - nouts] = rets[i];
    }
    int64_t nn = rc == VG_OK ? vg__ds_get_range(r, 0, 4096) : 0;
    if (rc == VG_OK && r->bad) rc = vg__ds_rd_status(r, "function", st);
    for (int64_t i = 0; i < nn && rc == VG_OK; i++) {
        vg__ds_fn *inner = decode_fn_graph(r, true, depth + 1, st);
        if (!inner) rc = st->code;
        else if (vg_graph_set_user_data(f->g, inner->key, inner, vg__ds_fn_free) != VG_OK) {
            vg__ds_fn_free(inner);
            rc = VG_OOM(st, "dataset function");
        }
    }
    if (rc != VG_OK) {
        vg__ds_fn_free(f);
        return NULL;
    }
    if (vectorize) { /* as vg_dataset_map* and the interleave builders do */
        vg__ds_fn_vectorize(f);
        if (!f->vec) f->native_b = vg__ds_native_compile_batched(f);
    }
    return f;
}

static vg_code encode(const vg__dataset *d, vg__ds_ctx *ctx, vg__ds_wr *w, int depth, vg_status *st) {
    if (depth > MAX_DEPTH) return vg_status_set(st, VG_UNIMPLEMENTED, "dataset pipeline too deep to save");
    const vg_op *sop = d->fn ? stateful_op(d->fn, 0) : NULL;
    if (!sop && d->fn2) sop = stateful_op(d->fn2, 0);
    if (!sop && d->fn3) sop = stateful_op(d->fn3, 0);
    if (sop)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Failed to serialize the input pipeline: the function of %s has the stateful op %s "
                             "(%s), whose state an iterator checkpoint cannot hold",
                             vg__ds_kind_name(d->kind), vg_op_name(sop), vg_op_type(sop));
    vg__ds_put_i64(w, DS_TAG);
    vg__ds_put_i64(w, d->kind);
    vg__ds_put_i64(w, d->ncomp);
    for (int c = 0; c < d->ncomp; c++) vg__ds_put_i64(w, d->types[c]);
    vg__ds_put_i64(w, d->a);
    vg__ds_put_i64(w, d->b);
    vg__ds_put_i64(w, d->c);
    vg__ds_put_i64(w, d->flag);
    vg__ds_put_i64(w, d->seed);
    vg__ds_put_i64(w, d->seed2);
    vg__ds_put_i64(w, vg__ds_ctx_iterations(ctx, d));
    vg__ds_put_i64(w, d->compression);
    for (int c = 0; c < d->ncomp; c++) {
        vg__ds_put_i64(w, d->padded[c].ndims);
        for (int k = 0; k < d->padded[c].ndims; k++) vg__ds_put_i64(w, d->padded[c].dims[k]);
    }
    int64_t mask = 0;
    for (int c = 0; c < VG_DATASET_MAX_COMPONENTS; c++)
        if (d->comps[c]) mask |= (int64_t)1 << c;
    vg__ds_put_i64(w, mask);
    vg_code rc = VG_OK;
    for (int c = 0; c < VG_DATASET_MAX_COMPONENTS && rc == VG_OK; c++)
        if (d->comps[c]) rc = vg__ds_put_tensor(w, d->comps[c], st);
    vg__ds_put_i64(w, d->files != NULL);
    if (rc == VG_OK && d->files) rc = vg__ds_put_tensor(w, d->files, st);
    if (rc != VG_OK) {
        vg_status_prefix(st, "%s: ", vg__ds_kind_name(d->kind));
        return rc;
    }
    vg__ds_put_i64(w, d->fn != NULL);
    if (d->fn && (rc = encode_fn(d->fn, w, depth, st)) != VG_OK) return rc;
    if (vg__ds_kind_of(d->kind)->fn == VG__DS_FN_GROUP) { /* group_by_window's other two */
        if (!d->fn2 || !d->fn3) return vg_status_set(st, VG_INTERNAL, "group_by_window without its functions");
        if ((rc = encode_fn(d->fn2, w, depth, st)) != VG_OK || (rc = encode_fn(d->fn3, w, depth, st)) != VG_OK)
            return rc;
    }
    if (w->version >= 2) { /* the captured values (TF serializes the captured inputs) */
        vg__ds_put_i64(w, d->ncap);
        for (int i = 0; i < d->ncap && rc == VG_OK; i++) {
            if (vg_tensor_dtype(d->cap[i]) == VG_RESOURCE) /* a pointer into this session */
                return vg_status_set(st, VG_UNIMPLEMENTED,
                                     "%s: its function captures a resource handle (a lookup table, variable, iterator "
                                     "or dataset), which an iterator state cannot hold",
                                     d->src ? vg_op_type((const vg_op *)d->src) : vg__ds_kind_name(d->kind));
            rc = vg__ds_put_tensor(w, d->cap[i], st);
        }
        if (rc != VG_OK) {
            vg_status_prefix(st, "%s: ", vg__ds_kind_name(d->kind));
            return rc;
        }
    }
    vg__ds_put_i64(w, d->cache != NULL);
    if (d->cache) {
        const char *f = d->cache->file ? d->cache->file : "";
        vg__ds_put_bytes(w, f, strlen(f));
    }
    vg__ds_put_i64(w, d->input != NULL);
    if (d->input && (rc = encode(d->input, ctx, w, depth + 1, st)) != VG_OK) return rc;
    vg__ds_put_i64(w, d->nmore);
    for (int i = 0; i < d->nmore && rc == VG_OK; i++) rc = encode(d->more[i], ctx, w, depth + 1, st);
    if (rc == VG_OK && w->b.oom) rc = VG_OOM(st, "iterator state");
    return rc;
}

vg_code vg__ds_encode(const vg__dataset *d, vg__ds_ctx *ctx, vg__ds_wr *w, vg_status *st) {
    return encode(d, ctx, w, 0, st);
}

static bool same_types(const vg_dtype *a, const vg_dtype *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* A decoded dataset's function: takes the input's elements (and, for a map, returns
 * the dataset's). */
static vg_code check_fn(vg__dataset *d, vg_status *st) {
    const vg__ds_fn *fn = d->fn;
    const vg__dataset *in = d->input;
    vg_dtype args[VG_DATASET_MAX_COMPONENTS];
    for (int i = 0; i < fn->nargs; i++) args[i] = vg_output_dtype(fn->args[i]);
    bool ok = in && fn->nargs == in->ncomp && same_types(args, in->types, fn->nargs);
    int kfn = vg__ds_kind_of(d->kind)->fn;
    if (ok && kfn == VG__DS_FN_GROUP) { /* key(elements), reduce(key, window), window_size(key): one output each */
        const vg__ds_fn *r = d->fn2, *w = d->fn3;
        ok = fn->nouts == 1 && r && w && r->nargs == 2 && r->nouts == 1 && w->nargs == 1 && w->nouts == 1 &&
             vg_output_dtype(r->args[0]) == VG_INT64 && vg_output_dtype(r->args[1]) == VG_RESOURCE &&
             vg_output_dtype(w->args[0]) == VG_INT64;
    } else if (ok && kfn == VG__DS_FN_MAP) {
        vg_dtype outs[VG_DATASET_MAX_COMPONENTS];
        for (int i = 0; i < fn->nouts; i++) outs[i] = vg_output_dtype(fn->outs[i]);
        ok = fn->nouts == d->ncomp && same_types(outs, d->types, d->ncomp);
    } else if (ok) {
        ok = fn->nouts == 1 && (kfn != VG__DS_FN_PREDICATE || d->ncomp == in->ncomp);
    }
    if (!ok)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "corrupt iterator state (the function of %s does not take and return its elements)",
                             vg__ds_kind_name(d->kind));
    return VG_OK;
}

bool vg__ds_types_pass(const vg__dataset *d) {
    const vg__dataset *in = d->input;
    return in->ncomp == d->ncomp && same_types(in->types, d->types, d->ncomp);
}

static vg__dataset *decode(vg__ds_rd *r, int depth, vg_status *st) {
    if (depth > MAX_DEPTH || vg__ds_get_i64(r) != DS_TAG) r->bad = true;
    int kind = (int)vg__ds_get_range(r, 0, INT32_MAX);
    const vg__ds_kind *k = vg__ds_kind_of(kind);
    if (!k) r->bad = true;
    int nc = (int)vg__ds_get_range(r, 1, VG_DATASET_MAX_COMPONENTS);
    if (r->bad) {
        vg__ds_rd_status(r, "dataset", st);
        return NULL;
    }
    vg__dataset *d = vg__dataset_new(kind);
    if (!d) {
        VG_OOM(st, "dataset");
        return NULL;
    }
    d->ncomp = nc;
    for (int c = 0; c < nc; c++) {
        int64_t t = vg__ds_get_i64(r);
        if (t == VG_RESOURCE ? !k->dataset_elements : t != VG_STRING && vg_dtype_size((vg_dtype)t) == 0)
            r->bad = true;
        d->types[c] = (vg_dtype)t;
    }
    d->a = vg__ds_get_i64(r);
    d->b = vg__ds_get_i64(r);
    d->c = vg__ds_get_i64(r);
    d->flag = vg__ds_get_range(r, 0, 1) != 0;
    d->seed = vg__ds_get_i64(r);
    d->seed2 = vg__ds_get_i64(r);
    atomic_store(&d->iterations, (long long)vg__ds_get_range(r, 0, INT64_MAX));
    d->compression = (int)vg__ds_get_range(r, 0, 2);
    for (int c = 0; c < nc && !r->bad; c++) {
        int n = (int)vg__ds_get_range(r, -1, VG_MAX_DIMS);
        d->padded[c].ndims = n;
        for (int k = 0; k < n; k++) d->padded[c].dims[k] = vg__ds_get_i64(r);
    }
    int64_t mask = vg__ds_get_range(r, 0, ((int64_t)1 << VG_DATASET_MAX_COMPONENTS) - 1);
    vg_code rc = VG_OK;
    for (int c = 0; c < VG_DATASET_MAX_COMPONENTS && !r->bad && rc == VG_OK; c++)
        if (mask & ((int64_t)1 << c) && !(d->comps[c] = vg__ds_get_tensor(r, st)) && !r->bad) rc = st->code;
    if (vg__ds_get_range(r, 0, 1) && !r->bad && rc == VG_OK && !(d->files = vg__ds_get_tensor(r, st)) && !r->bad)
        rc = st->code;
    if (vg__ds_get_range(r, 0, 1) && !r->bad && rc == VG_OK) {
        bool vec = k->fn == VG__DS_FN_MAP || k->fn == VG__DS_FN_DATASET;
        if (k->fn == VG__DS_FN_NONE) r->bad = true;
        else if ((d->own_fn = decode_fn_graph(r, vec, depth, st))) d->fn = d->own_fn;
        else if (!r->bad) rc = st->code;
        if (k->fn == VG__DS_FN_GROUP && !r->bad && rc == VG_OK) { /* group_by_window's other two */
            if ((d->own_fn2 = decode_fn_graph(r, false, depth, st))) d->fn2 = d->own_fn2;
            else if (!r->bad) rc = st->code;
            if (!r->bad && rc == VG_OK && (d->own_fn3 = decode_fn_graph(r, false, depth, st))) d->fn3 = d->own_fn3;
            else if (!r->bad && rc == VG_OK) rc = st->code;
        }
    }
    if (r->version >= 2 && !r->bad && rc == VG_OK) {
        int ncap = (int)vg__ds_get_range(r, 0, VG_DATASET_MAX_CAPTURES);
        int want = d->fn ? d->fn->ncap : 0;
        if (d->fn2 && d->fn3) want += d->fn2->ncap + d->fn3->ncap;
        if (!r->bad && ncap != want) r->bad = true;
        for (int i = 0; i < ncap && !r->bad && rc == VG_OK; i++) {
            vg_tensor *t = vg__ds_get_tensor(r, st);
            if (!t) {
                if (!r->bad) rc = st->code;
                break;
            }
            d->cap[d->ncap++] = t;
            /* the captured value i of fn, then fn2's, fn3's */
            const vg__ds_fn *cf = d->fn;
            int ci = i;
            if (ci >= cf->ncap && d->fn2) ci -= cf->ncap, cf = d->fn2;
            if (ci >= cf->ncap && d->fn3) ci -= cf->ncap, cf = d->fn3;
            if (ci >= cf->ncap || vg_tensor_dtype(t) != vg_output_dtype(cf->caps[ci])) r->bad = true;
        }
    }
    if (vg__ds_get_range(r, 0, 1) && !r->bad && rc == VG_OK) {
        size_t fl;
        const uint8_t *f = vg__ds_get_bytes(r, &fl);
        if (!r->bad && (fl > 4000 || memchr(f, 0, fl))) r->bad = true;
        if (!r->bad) {
            if (!(d->cache = vg__calloc(1, sizeof *d->cache))) {
                rc = VG_OOM(st, "cache");
            } else {
                pthread_mutex_init(&d->cache->mu, NULL);
                if (fl && !(d->cache->file = vg__strndup((const char *)f, fl))) rc = VG_OOM(st, "cache");
            }
        }
    }
    if (vg__ds_get_range(r, 0, 1) && !r->bad && rc == VG_OK && !(d->input = decode(r, depth + 1, st)))
        rc = st->code;
    int nmore = (int)vg__ds_get_range(r, 0, VG_DATASET_MAX_COMPONENTS);
    for (int i = 0; i < nmore && !r->bad && rc == VG_OK; i++) {
        if (!(d->more[i] = decode(r, depth + 1, st))) rc = st->code;
        else d->nmore++;
    }
    if (rc == VG_OK && !r->bad) {
        if ((k->inputs > 0) != (d->input != NULL) || !k->valid(d)) r->bad = true;
        for (int i = 0; i < d->nmore && !r->bad; i++)
            if (d->more[i]->ncomp > VG_DATASET_MAX_COMPONENTS) r->bad = true;
    }
    if (rc == VG_OK && !r->bad && k->fn != VG__DS_FN_NONE) {
        if (!d->fn) r->bad = true;
        else rc = check_fn(d, st);
    }
    if (rc == VG_OK && r->bad) rc = vg__ds_rd_status(r, vg__ds_kind_name(kind), st);
    if (rc != VG_OK) {
        vg__dataset_unref(d);
        return NULL;
    }
    return d;
}

vg__dataset *vg__ds_decode(vg__ds_rd *r, vg_status *st) { return decode(r, 0, st); }

/* put_dataset_value's encoding: a new resource tensor, or NULL (r->bad, or st set). The
 * elements must be of the dataset's one component type. */
static vg_tensor *get_dataset_value(vg__ds_rd *r, vg_status *st) {
    vg__dataset *d = decode(r, 1, st);
    if (!d) return NULL;
    int64_t n = vg__ds_get_range(r, 0, (int64_t)((r->len - r->pos) / 8));
    if (!r->bad && n > 0 && (d->ncomp != 1 || !(d->elems = vg__calloc((size_t)n, sizeof(vg_tensor *))))) {
        if (d->ncomp != 1) r->bad = true;
        else VG_OOM(st, "iterator state");
        vg__dataset_unref(d);
        return NULL;
    }
    for (int64_t i = 0; i < n && !r->bad; i++) {
        vg_tensor *t = vg__ds_get_tensor(r, st);
        if (!t) break;
        d->elems[d->nelems++] = t;
        if (vg_tensor_dtype(t) != d->types[0]) r->bad = true;
    }
    if (r->bad || d->nelems != n) {
        vg__dataset_unref(d);
        return NULL;
    }
    return vg__dataset_tensor(d, st);
}

/* ------------------------------------------------------------------------ */
/* whole states */

/* Whether a function of fn (or of the dataset ops inside it) captures values. */
static bool fn_has_captures(const vg__ds_fn *fn, int depth) {
    if (fn->ncap > 0) return true;
    int n = vg_graph_num_ops(fn->g);
    for (int i = 0; i < n && depth < MAX_DEPTH; i++) {
        const vg__ds_fn *inner = nested_fn(fn->g, vg_graph_op(fn->g, i), NULL);
        if (inner && fn_has_captures(inner, depth + 1)) return true;
    }
    return false;
}

/* Whether d's pipeline has a function with captured values (a version 2 state). */
static bool has_captures(const vg__dataset *d, int depth) {
    if (!d || depth > MAX_DEPTH) return false;
    if (d->ncap > 0 || (d->fn && fn_has_captures(d->fn, 0))) return true;
    if ((d->fn2 && fn_has_captures(d->fn2, 0)) || (d->fn3 && fn_has_captures(d->fn3, 0))) return true;
    if (has_captures(d->input, depth + 1)) return true;
    for (int i = 0; i < d->nmore; i++)
        if (has_captures(d->more[i], depth + 1)) return true;
    return false;
}

vg_code vg__ds_serialize(vg__ds_iter *it, uint8_t **bytes, size_t *len, vg_status *st) {
    vg__ds_wr w = {0};
    *bytes = NULL;
    *len = 0;
    if (vg__pb_reserve(&w.b, 8)) {
        memcpy(w.b.data, STATE_MAGIC, 8);
        w.b.len = 8;
    }
    w.version = has_captures(it->ds, 0) ? 2 : 1; /* states without captures keep version 1's bytes */
    vg__ds_put_i64(&w, w.version);
    vg_code rc = vg__ds_encode(it->ds, it->ctx, &w, st);
    if (rc == VG_OK) rc = vg__ds_iter_save(it, &w, st);
    if (rc == VG_OK && w.b.oom) rc = VG_OOM(st, "iterator state");
    if (rc != VG_OK) {
        vg__free(w.b.data);
        return rc;
    }
    *bytes = w.b.data;
    *len = w.b.len;
    return VG_OK;
}

vg__ds_iter *vg__ds_deserialize(const uint8_t *bytes, size_t len, vg_status *st) {
    if (len < 8 || memcmp(bytes, STATE_MAGIC, 8) != 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "not a vigil iterator state (%zu bytes without its header)", len);
        return NULL;
    }
    vg__ds_rd r = {bytes, len, 8, false, 1};
    int64_t version = vg__ds_get_i64(&r);
    if (version != 1 && version != STATE_VERSION) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "iterator state of version %lld, this vigil reads versions 1 and %d",
                      (long long)version, STATE_VERSION);
        return NULL;
    }
    r.version = (int)version;
    vg__dataset *d = vg__ds_decode(&r, st);
    if (!d) return NULL;
    vg__ds_iter *it = vg__ds_iter_new(d, st);
    vg__dataset_unref(d);
    if (!it) return NULL;
    vg_code rc = vg__ds_iter_restore(it, &r, st);
    if (rc == VG_OK && (r.bad || r.pos != r.len)) {
        r.bad = true;
        rc = vg__ds_rd_status(&r, "trailing bytes", st);
    }
    if (rc != VG_OK) {
        vg__ds_iter_free(it);
        return NULL;
    }
    return it;
}
