/* train_util.h - small helpers for src/train, built on the public API only (the
 * allocation hook of vigil/status.h and POSIX clocks). Not installed. */
#ifndef VG_TRAIN_UTIL_H
#define VG_TRAIN_UTIL_H

#include "vigil/graph.h"
#include "vigil/layers.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/resource_variables.h"
#include "vigil/status.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* "Out of memory" status (the same text as the library's own). */
#ifndef VG_OOM
#define VG_OOM(st, what) vg_status_set((st), VG_RESOURCE_EXHAUSTED, "out of memory allocating %s", (what))
#endif

/* Copy of s[0..n) plus a NUL through the allocation hook; NULL on failure. */
static inline char *vg__train_strndup(const char *s, size_t n) {
    char *d = vg_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}
static inline char *vg__train_strdup(const char *s) { return vg__train_strndup(s, strlen(s)); }

/* Grows the array *arr of *cap elements of elem bytes (zero-filling the new part) to
 * hold at least need. Returns false, the array untouched, on allocation failure. */
static inline bool vg__train_grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap : 4;
    while (nc < need) nc *= 2;
    void *n = vg_realloc(*arr, (size_t)*cap * elem, (size_t)nc * elem);
    if (!n) return false;
    memset((char *)n + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = n;
    *cap = nc;
    return true;
}

/* weights_broadcast_ops.assert_broadcastable, statically: weights of shape sw can be
 * broadcast to values of shape sv when sw is a scalar (or unknown), sv's rank is
 * unknown, or both have the same rank with each known weights dim 1 or equal. */
static inline bool vg__train_weights_broadcastable(vg_shape sw, vg_shape sv) {
    if (sw.ndims <= 0 || sv.ndims < 0) return true;
    if (sw.ndims != sv.ndims) return false;
    for (int i = 0; i < sw.ndims; i++)
        if (sw.dims[i] >= 0 && sv.dims[i] >= 0 && sw.dims[i] != 1 && sw.dims[i] != sv.dims[i]) return false;
    return true;
}

/* A variable op of either kind (a ref variable, or a resource variable's VarHandleOp):
 * whether it is a resource variable, and its value's dtype and shape. */
static inline bool vg__train_is_resource(const vg_op *var) { return vg_is_resource_variable(vg_out((vg_op *)var, 0)); }
static inline vg_dtype vg__train_var_dtype(const vg_op *var) {
    vg_output v = vg_out((vg_op *)var, 0);
    return vg__train_is_resource(var) ? vg_resource_variable_dtype(v) : vg_output_dtype(v);
}
static inline vg_shape vg__train_var_shape(const vg_op *var) {
    vg_output v = vg_out((vg_op *)var, 0);
    return vg__train_is_resource(var) ? vg_resource_variable_shape(v) : vg_output_shape(v);
}

/* TF's `with ops.init_scope()` building absolute names: the init scope (outside the
 * caller's control dependencies) with the root name scope pushed; leave_root pops both. */
static inline void vg__train_enter_root(vg_graph *g) {
    vg_graph_push_init_scope(g);
    vg_graph_push_scope(g, "/");
}

static inline void vg__train_leave_root(vg_graph *g) {
    vg_graph_pop_scope(g);
    vg_graph_pop_init_scope(g);
}

/* Room for `need` bytes in a byte buffer *p of capacity *cap (vg_realloc'd: the first
 * capacity `first`, then doubling). False when out of memory (the buffer unchanged). */
static inline bool vg__train_reserve_bytes(void **p, size_t *cap, size_t need, size_t first) {
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap : first;
    while (nc < need) nc *= 2;
    void *np = vg_realloc(*p, *cap, nc);
    if (!np) return false;
    *p = np;
    *cap = nc;
    return true;
}

/* A growing byte buffer (zero-initialize it; free p with vg_free): appends keep a NUL
 * after the n bytes. Out of memory sets oom, after which appends do nothing. */
typedef struct vg__train_buf {
    char *p;
    size_t n, cap;
    bool oom;
} vg__train_buf;

static inline void vg__train_buf_put(vg__train_buf *b, const void *d, size_t n) {
    if (b->oom) return;
    if (!vg__train_reserve_bytes((void **)&b->p, &b->cap, b->n + n + 1, 64)) {
        b->oom = true;
        return;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* vg_calloc(1, size), or NULL with st RESOURCE_EXHAUSTED "out of memory allocating
 * <what>" (VG_OOM). */
static inline void *vg__train_calloc(size_t size, vg_status *st, const char *what) {
    void *p = vg_calloc(1, size);
    if (!p) VG_OOM(st, what);
    return p;
}

/* TF's `with ops.name_scope(name, default_name) as scope`: full is the unique scope name
 * ("ExponentialDecay_1"), pushed as the graph's name scope ("<full>/"); base is its last
 * component (the name TF gives the result op). The caller pops the scope. */
typedef struct vg__train_scope {
    char full[1024];
    const char *base;
} vg__train_scope;

static inline void vg__train_scope_open(vg_graph *g, const char *name, const char *def, vg__train_scope *s) {
    size_t nl = name ? strlen(name) : 0;
    if (nl && name[nl - 1] == '/') /* TF's name_scope("a/b/"): re-enter that exact scope */
        snprintf(s->full, sizeof s->full, "%.*s", (int)(nl - 1), name);
    else
        vg_graph_unique_name(g, name ? name : def, s->full, sizeof s->full);
    char sc[1100];
    snprintf(sc, sizeof sc, "%s/", s->full);
    vg_graph_push_scope(g, sc);
    const char *slash = strrchr(s->full, '/');
    s->base = slash ? slash + 1 : s->full;
}

/* The activation of tf.layers / slim (VG_ACT_NONE: x itself), with TF's op names. */
static inline vg_output vg__train_activate(vg_graph *g, vg_output x, vg_activation act) {
    switch (act) {
    case VG_ACT_RELU: return vg_relu(g, x, "Relu");
    case VG_ACT_SIGMOID: return vg_sigmoid(g, x, "Sigmoid");
    case VG_ACT_TANH: return vg_tanh(g, x, "Tanh");
    case VG_ACT_RELU6: return vg_relu6(g, x, "Relu6");
    case VG_ACT_ELU: return vg_elu(g, x, "Elu");
    case VG_ACT_SELU: return vg_selu(g, x, "Selu");
    case VG_ACT_SOFTPLUS: return vg_softplus(g, x, "Softplus");
    case VG_ACT_SOFTSIGN: return vg_softsign(g, x, "Softsign");
    case VG_ACT_LEAKY_RELU: return vg_leaky_relu(g, x, 0.2f, "LeakyRelu");
    default: return x;
    }
}

/* Monotonic clock in nanoseconds; wall clock in seconds. */
static inline int64_t vg__train_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static inline double vg__train_wall_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Pushes the verbatim scope "<full>/" (full: a unique or absolute name of < 1024 chars;
 * reserves nothing). */
static inline void vg__train_push_verbatim(vg_graph *g, const char *full) {
    char buf[1026];
    snprintf(buf, sizeof buf, "%s/", full);
    vg_graph_push_scope(g, buf);
}

/* tf.contrib.training.create_train_op's clip_gradient_norm: under the scope "clip_grads",
 * each gradient grads[i] that is there (op not NULL) becomes clip_by_norm(grads[i],
 * clip_norm) (a "clip_norm" constant of its dtype). Graph errors as vg_clip_by_norm.
 * Defined in train_op.c; gan.c's train ops clip the same way. */
void vg__train_clip_gradients(vg_graph *g, vg_output *grads, int n, double clip_norm);

/* The next inputs of an embedding-fed decoder step (GreedyEmbeddingHelper and
 * BeamSearchDecoder): cond(reduce_all(finished) "All", start_inputs,
 * embedding_lookup(embedding, ids)) named "cond"; a NULL op on a graph error. In
 * seq2seq.c. */
vg_output vg__train_embedding_next_inputs(vg_graph *g, vg_output finished, vg_output start_inputs, vg_output embedding,
                                          vg_output ids);

/* Registers t (output 0 of its op) as a saveable object of g (src/train/data_iterator.c's
 * list, TF's SAVEABLE_OBJECTS): savers made afterwards without a var_list save t under
 * key and restore it with restore(g, t, restored, user), whose op joins restore_all.
 * user is borrowed (keep it alive as long as g, e.g. in g's user data). Graph error
 * INVALID_ARGUMENT for a duplicate key or op, RESOURCE_EXHAUSTED. */
typedef vg_op *(*vg__saveable_restore_fn)(vg_graph *g, vg_output t, vg_output restored, void *user);
vg_code vg__register_saveable(vg_graph *g, vg_output t, const char *key, vg__saveable_restore_fn restore, void *user);
/* Saveables registered with the same restore and user are the parts of one object (a
 * cuDNN layer's canonical weights), restored together: true when every part of each
 * object that has a part in list[0..n) is in it; otherwise false with *missing the key of
 * an absent part and *present that of a listed one. */
bool vg__saveables_complete(const vg_graph *g, const vg_output *list, int n, const char **missing,
                            const char **present);

/* nn_ops.py required_space_to_batch_paddings for an atrous convolution
 * (_WithSpaceToBatch): for each of the n (1 or 2) spatial dimensions i, with input size
 * size[i], kernel size k[i] and rate r[i], the block shape r, the paddings (start, end)
 * that make the padded size a multiple of r (SAME: the dilated kernel's padding first),
 * and the crops (0, the extra end) of the BatchToSpaceND after. */
static inline void vg__train_atrous_paddings(int n, const int64_t *size, const int64_t *k, const int64_t *r, bool same,
                                             int32_t *block, int32_t *pads, int32_t *crops) {
    for (int i = 0; i < n; i++) {
        int64_t start = 0, end = 0;
        if (same) {
            int64_t extra = k[i] + (k[i] - 1) * (r[i] - 1) - 1;
            start = extra / 2;
            end = extra - start;
        }
        int64_t full = size[i] + start + end, extra_end = (r[i] - full % r[i]) % r[i];
        block[i] = (int32_t)r[i];
        pads[2 * i] = (int32_t)start;
        pads[2 * i + 1] = (int32_t)(end + extra_end);
        crops[2 * i] = 0;
        crops[2 * i + 1] = (int32_t)extra_end;
    }
}

/* The reshape back after a dense layer's product over a rank > 2 input of shape s
 * (flattened to [-1, s.dims[last]]): y [N, units] becomes s's leading dimensions then
 * units, named "Reshape_1", as tf.layers.dense and slim.fully_connected build it. More
 * than one unknown leading dimension cannot be expressed: graph error UNIMPLEMENTED
 * "<msg>" and a NULL op. */
static inline vg_output vg__train_unflatten_dense(vg_graph *g, vg_output y, vg_shape s, int64_t units,
                                                  const char *msg) {
    int64_t od[VG_MAX_DIMS];
    int unknown = 0;
    for (int i = 0; i < s.ndims - 1; i++) {
        od[i] = s.dims[i] < 0 ? -1 : s.dims[i];
        unknown += od[i] < 0;
    }
    od[s.ndims - 1] = units;
    if (unknown <= 1) return vg_reshape_c(g, y, od, s.ndims, "Reshape_1");
    vg_graph_set_error(g, VG_UNIMPLEMENTED, "%s", msg);
    return (vg_output){NULL, 0};
}

#endif
