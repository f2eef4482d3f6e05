/*
 * slim.c - TF-slim (TF 1.15 tf.contrib.slim) from vigil's public API: arg_scope
 * (contrib/framework/python/ops/arg_scope.py), the layers of contrib/layers/python/
 * layers/layers.py with slim's scope and variable names, model variables and
 * assign_from_checkpoint(_fn) (contrib/framework/python/ops/variables.py).
 * slim.learning.train is in src/monitored/slim_learning.c.
 */
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/losses.h"
#include "vigil/nn_ext.h"
#include "vigil/ops_ext.h"
#include "vigil/saver.h"
#include "vigil/slim.h"
#include "vigil/train_lib.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLIM_KEY "vigil.slim"
#define NAME_MAX_ 512

/* ---- arg_scope state (graph user data) ------------------------------------ */

typedef struct entry {
    char **fns;
    int nfns;
    vg_slim_args args;
    struct vg_slim_arg_scope *saved; /* an entered captured scope (owned): it replaces
                                        the scopes below it */
} entry;

struct vg_slim_arg_scope {
    entry *entries; /* bottom first */
    int n;
};

typedef struct slim_state {
    char **registered;
    int nreg, capreg;
    entry *stack;
    int depth, cap;
} slim_state;

static const char *const builtin_fns[] = {VG_SLIM_CONV2D,   VG_SLIM_SEPARABLE_CONV2D, VG_SLIM_FULLY_CONNECTED,
                                          VG_SLIM_BATCH_NORM_FN, VG_SLIM_MAX_POOL2D, VG_SLIM_AVG_POOL2D,
                                          VG_SLIM_DROPOUT, VG_SLIM_FLATTEN};

static void entry_clear(entry *e) {
    for (int i = 0; i < e->nfns; i++) free(e->fns[i]);
    free(e->fns);
    e->fns = NULL;
    e->nfns = 0;
    vg_slim_arg_scope_free(e->saved);
    e->saved = NULL;
}

void vg_slim_arg_scope_free(vg_slim_arg_scope *sc) {
    if (!sc) return;
    for (int i = 0; i < sc->n; i++) entry_clear(&sc->entries[i]);
    free(sc->entries);
    free(sc);
}

static char *dupstr(const char *s);

/* deep copy of entries [0, n) (names and saved scopes; args as they are) */
static vg_slim_arg_scope *copy_entries(const entry *src, int n) {
    vg_slim_arg_scope *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->entries = calloc((size_t)(n ? n : 1), sizeof *c->entries);
    if (!c->entries) {
        free(c);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        entry *d = &c->entries[c->n++];
        d->args = src[i].args;
        d->fns = calloc((size_t)(src[i].nfns ? src[i].nfns : 1), sizeof(char *));
        bool ok = d->fns != NULL;
        for (int j = 0; ok && j < src[i].nfns; j++) {
            d->fns[j] = dupstr(src[i].fns[j]);
            ok = d->fns[j] != NULL;
            if (ok) d->nfns++;
        }
        if (ok && src[i].saved) {
            d->saved = copy_entries(src[i].saved->entries, src[i].saved->n);
            ok = d->saved != NULL;
        }
        if (!ok) {
            vg_slim_arg_scope_free(c);
            return NULL;
        }
    }
    return c;
}

static void state_free(void *p) {
    slim_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->nreg; i++) free(s->registered[i]);
    free(s->registered);
    for (int i = 0; i < s->depth; i++) entry_clear(&s->stack[i]);
    free(s->stack);
    free(s);
}

static slim_state *state_peek(const vg_graph *g) { return g ? vg_graph_user_data(g, SLIM_KEY) : NULL; }

static slim_state *state_get(vg_graph *g) {
    slim_state *s = state_peek(g);
    if (s) return s;
    s = calloc(1, sizeof *s);
    if (!s || vg_graph_set_user_data(g, SLIM_KEY, s, state_free) != VG_OK) {
        free(s);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "slim: out of memory");
        return NULL;
    }
    return s;
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

bool vg_slim_has_arg_scope(vg_graph *g, const char *fn) {
    if (!fn) return false;
    for (size_t i = 0; i < sizeof builtin_fns / sizeof *builtin_fns; i++)
        if (strcmp(builtin_fns[i], fn) == 0) return true;
    slim_state *s = state_peek(g);
    for (int i = 0; s && i < s->nreg; i++)
        if (strcmp(s->registered[i], fn) == 0) return true;
    return false;
}

vg_code vg_slim_add_arg_scope(vg_graph *g, const char *fn) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (!fn || !*fn) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "add_arg_scope: a function name is required");
    if (vg_slim_has_arg_scope(g, fn)) return VG_OK;
    slim_state *s = state_get(g);
    if (!s) return VG_RESOURCE_EXHAUSTED;
    if (s->nreg == s->capreg) {
        int nc = s->capreg ? 2 * s->capreg : 8;
        char **r = realloc(s->registered, (size_t)nc * sizeof *r);
        if (!r) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "add_arg_scope: out of memory");
        s->registered = r;
        s->capreg = nc;
    }
    char *d = dupstr(fn);
    if (!d) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "add_arg_scope: out of memory");
    s->registered[s->nreg++] = d;
    return VG_OK;
}

/* Room for one more entry on s's stack (NULL s: the state could not be made). */
static vg_code stack_reserve(vg_graph *g, slim_state *s) {
    if (!s) return VG_RESOURCE_EXHAUSTED;
    if (s->depth == s->cap) {
        int nc = s->cap ? 2 * s->cap : 8;
        entry *st = realloc(s->stack, (size_t)nc * sizeof *st);
        if (!st) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "arg_scope: out of memory");
        s->stack = st;
        s->cap = nc;
    }
    return VG_OK;
}

vg_code vg_slim_arg_scope_push(vg_graph *g, const char *const *fns, int nfns, const vg_slim_args *args) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (!args || nfns < 0 || (nfns > 0 && !fns))
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "arg_scope: list_ops_or_scope and the arguments are required");
    for (int i = 0; i < nfns; i++)
        if (!vg_slim_has_arg_scope(g, fns[i]))
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s is not decorated with @add_arg_scope",
                                      fns[i] ? fns[i] : "(null)");
    slim_state *s = state_get(g);
    vg_code rc = stack_reserve(g, s);
    if (rc != VG_OK) return rc;
    entry e = {calloc((size_t)(nfns ? nfns : 1), sizeof(char *)), 0, *args, NULL};
    if (!e.fns) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "arg_scope: out of memory");
    for (int i = 0; i < nfns; i++) {
        e.fns[i] = dupstr(fns[i]);
        if (!e.fns[i]) {
            entry_clear(&e);
            return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "arg_scope: out of memory");
        }
        e.nfns++;
    }
    s->stack[s->depth++] = e;
    return VG_OK;
}

void vg_slim_arg_scope_pop(vg_graph *g) {
    slim_state *s = state_peek(g);
    if (!s || s->depth == 0) return;
    entry_clear(&s->stack[--s->depth]);
}

int vg_slim_arg_scope_depth(const vg_graph *g) {
    slim_state *s = state_peek(g);
    return s ? s->depth : 0;
}

/* fills the fields of d that are unset from s */
static void merge_unset(vg_slim_args *d, const vg_slim_args *s) {
#define M(f) \
    if (!d->f) d->f = s->f
    for (int i = 0; i < 2; i++) {
        M(stride[i]);
        M(rate[i]);
    }
    M(padding);
    M(depth_multiplier);
    M(activation_fn);
    M(normalizer_fn);
    M(normalizer_params);
    M(weights_initializer);
    if (!d->weights_regularizer.fn) d->weights_regularizer = s->weights_regularizer;
    /* biases_initializer / no_biases and is_training / is_training_tensor are one
     * Python argument each: set together */
    if (!d->biases_initializer && !d->no_biases) {
        d->biases_initializer = s->biases_initializer;
        d->no_biases = s->no_biases;
    }
    if (!d->biases_regularizer.fn) d->biases_regularizer = s->biases_regularizer;
    M(trainable);
    M(reuse);
    M(decay);
    M(center);
    M(scale);
    M(epsilon);
    if (!d->is_training && !d->is_training_tensor.op) {
        d->is_training = s->is_training;
        d->is_training_tensor = s->is_training_tensor;
    }
    M(fused);
    M(updates_collections);
    M(zero_debias_moving_mean);
    M(keep_prob);
    M(seed);
    M(user);
#undef M
}

/* merges the entries [0, n) listing fn into r, the top first; an entered captured
 * scope stands for everything below it */
static void resolve_in(const entry *es, int n, const char *fn, vg_slim_args *r) {
    for (int i = n - 1; i >= 0; i--) {
        const entry *e = &es[i];
        if (e->saved) {
            resolve_in(e->saved->entries, e->saved->n, fn, r);
            return;
        }
        for (int j = 0; j < e->nfns; j++)
            if (strcmp(e->fns[j], fn) == 0) {
                merge_unset(r, &e->args);
                break;
            }
    }
}

vg_slim_args vg_slim_resolve_args(const vg_graph *g, const char *fn, const vg_slim_args *call) {
    vg_slim_args r;
    memset(&r, 0, sizeof r);
    if (call) r = *call;
    slim_state *s = state_peek(g);
    if (!s || !fn) return r;
    resolve_in(s->stack, s->depth, fn, &r);
    return r;
}

vg_slim_arg_scope *vg_slim_current_arg_scope(vg_graph *g) {
    if (!g) return NULL;
    slim_state *s = state_peek(g);
    vg_slim_arg_scope *c = copy_entries(s ? s->stack : NULL, s ? s->depth : 0);
    if (!c) vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "current_arg_scope: out of memory");
    return c;
}

vg_code vg_slim_arg_scope_enter(vg_graph *g, const vg_slim_arg_scope *sc) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (!sc) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "arg_scope: a captured scope is required");
    slim_state *s = state_get(g);
    vg_code rc = stack_reserve(g, s);
    if (rc != VG_OK) return rc;
    entry e;
    memset(&e, 0, sizeof e);
    e.saved = copy_entries(sc->entries, sc->n);
    if (!e.saved) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "arg_scope: out of memory");
    s->stack[s->depth++] = e;
    return VG_OK;
}

void vg_slim_arg_scope_pop_to(vg_graph *g, int depth) {
    while (vg_slim_arg_scope_depth(g) > depth && depth >= 0) vg_slim_arg_scope_pop(g);
}

/* ---- helpers ------------------------------------------------------------- */

static vg_output none_out(void) {
    vg_output o = {NULL, 0};
    return o;
}

static bool failed(vg_graph *g) { return vg_graph_status(g, NULL) != VG_OK; }

/* a variable of the layer: get_variable + model_variables. keras_name: the variable
 * comes from a tf.layers (Keras) layer whose weight is renamed (kernel -> weights): its
 * regularizer runs after the variable is made, under "<layer>/<keras_name>/Regularizer/"
 * (TF: "Conv/kernel/Regularizer/l2_regularizer"); NULL: get_variable applies it. */
static vg_variable model_var(vg_graph *g, const char *name, vg_dtype dt, const int64_t *dims, int ndims,
                             vg_initializer init, vg_regularizer reg, bool trainable, const char *keras_name) {
    vg_get_variable_opts o = vg__train_var_opts(dt, dims, ndims, init);
    if (!keras_name) o.regularizer = reg;
    o.not_trainable = !trainable;
    int before = vg_slim_get_model_variables(g, NULL, NULL, 0);
    vg_variable v = vg_slim_model_variable(g, name, &o);
    bool is_new = vg_slim_get_model_variables(g, NULL, NULL, 0) > before;
    if (v.var && keras_name && reg.fn && is_new) {
        char rs[NAME_MAX_ * 2];
        const char *cur = vg_graph_scope(g);
        snprintf(rs, sizeof rs, "%s%s%s/Regularizer/", cur, *cur ? "/" : "", keras_name);
        vg_graph_push_scope(g, rs);
        vg_output loss = reg.fn(g, v.read, reg.scale, reg.arg);
        vg_graph_pop_scope(g);
        if (loss.op) vg_graph_add_to_collection(g, VG_REGULARIZATION_LOSSES, loss);
    }
    return v;
}

static bool padding_of(vg_graph *g, const char *p, const char *def, char out[8], const char *layer) {
    if (!p) p = def;
    if (strlen(p) > 5) goto bad;
    for (int i = 0; p[i]; i++) out[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 32 : p[i]);
    out[strlen(p)] = 0;
    if (strcmp(out, "SAME") == 0 || strcmp(out, "VALID") == 0) return true;
bad:
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: Unknown padding %s (SAME or VALID)", layer, p);
    return false;
}

/* the input's NHWC shape with known depth */
static bool input4(vg_graph *g, vg_output x, vg_shape *s, const char *layer) {
    if (!x.op) {
        if (!failed(g)) vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: no input", layer);
        return false;
    }
    *s = vg_output_shape(x);
    if (s->ndims != 4) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: Invalid input rank %d: expected 4 (NHWC)", layer, s->ndims);
        return false;
    }
    if (s->dims[3] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: Number of in_channels must be known.", layer);
        return false;
    }
    return true;
}

/* Pushes "<current scope>/<op>/" verbatim (the scope TF opens for an op's constants). */
static void push_inside(vg_graph *g, const char *op) {
    char buf[NAME_MAX_ * 2];
    const char *cur = vg_graph_scope(g);
    snprintf(buf, sizeof buf, "%s%s%s/", cur, *cur ? "/" : "", op);
    vg_graph_push_scope(g, buf);
}

typedef enum { K_CONV, K_DEPTHWISE } kkind;

static vg_output conv_op(vg_graph *g, kkind k, vg_output x, vg_output w, const int64_t st[4], const char *pad,
                         const char *name) {
    return k == K_CONV ? vg_conv2d(g, x, w, st, pad, name) : vg_depthwise_conv2d_native(g, x, w, st, pad, name);
}

/* nn_ops' _WithSpaceToBatch around a VALID conv with rate > 1, as layers.c builds it;
 * stride 1 otherwise the op with strides */
static vg_output conv_maybe_dilated(vg_graph *g, kkind k, vg_output x, vg_output w, int kh, int kw, const int st[2],
                                    const int rate[2], const char *pad, const char *prefix, const char *opname_) {
    char opname[NAME_MAX_], s2b[NAME_MAX_], b2s[NAME_MAX_];
    snprintf(opname, sizeof opname, "%s%s", prefix, opname_);
    snprintf(s2b, sizeof s2b, "%sSpaceToBatchND", prefix);
    snprintf(b2s, sizeof b2s, "%sBatchToSpaceND", prefix);
    if (rate[0] == 1 && rate[1] == 1) {
        int64_t s4[4] = {1, st[0], st[1], 1};
        return conv_op(g, k, x, w, s4, pad, opname);
    }
    vg_shape s = vg_output_shape(x);
    if (s.dims[1] < 0 || s.dims[2] < 0) {
        vg_graph_set_error(g, VG_UNIMPLEMENTED, "slim: rate > 1 needs the input's spatial dimensions known");
        return none_out();
    }
    int32_t block[2], pads[4], crops[4];
    bool same = strcmp(pad, "SAME") == 0;
    int64_t ks[2] = {kh, kw}, rs[2] = {rate[0], rate[1]};
    vg__train_atrous_paddings(2, s.dims + 1, ks, rs, same, block, pads, crops);
    int64_t d2[2] = {2, 2}, one[4] = {1, 1, 1, 1};
    push_inside(g, s2b);
    vg_output bs = vg_const_i32_vec(g, block, 2, "block_shape");
    vg_output ps = vg_const_array(g, VG_INT32, d2, 2, pads, "paddings");
    vg_graph_pop_scope(g);
    vg_output sb = vg_space_to_batch_nd(g, x, bs, ps, s2b);
    vg_output y = conv_op(g, k, sb, w, one, "VALID", opname);
    push_inside(g, b2s);
    vg_output cs = vg_const_array(g, VG_INT32, d2, 2, crops, "crops");
    vg_graph_pop_scope(g);
    return vg_batch_to_space_nd(g, y, bs, cs, b2s);
}

/* checks and defaults of the convolution arguments */
static bool conv_args(vg_graph *g, vg_slim_args *a, int kh, int kw, char pad[8], const char *layer) {
    for (int i = 0; i < 2; i++) {
        if (!a->stride[i]) a->stride[i] = i == 1 ? a->stride[0] ? a->stride[0] : 1 : 1;
        if (!a->rate[i]) a->rate[i] = i == 1 ? a->rate[0] ? a->rate[0] : 1 : 1;
    }
    if (kh <= 0 || kw <= 0 || a->stride[0] <= 0 || a->stride[1] <= 0 || a->rate[0] <= 0 || a->rate[1] <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: kernel_size, stride and rate must be positive", layer);
        return false;
    }
    if ((a->rate[0] > 1 || a->rate[1] > 1) && (a->stride[0] > 1 || a->stride[1] > 1)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: strides > 1 not supported in conjunction with rate > 1", layer);
        return false;
    }
    return padding_of(g, a->padding, "SAME", pad, layer);
}

static vg_initializer weights_init(const vg_slim_args *a) {
    return a->weights_initializer ? *a->weights_initializer : vg_init_glorot_uniform(0);
}

/* biases (no normalizer), normalizer, activation: the tail every slim layer shares */
static vg_output finish_layer(vg_graph *g, const vg_slim_args *a, vg_output y, int64_t nout, vg_activation def_act,
                              bool keras) {
    vg_dtype dt = vg_output_dtype(y);
    if (a->normalizer_fn == VG_SLIM_BATCH_NORM) {
        y = vg_slim_batch_norm(g, y, NULL, a->normalizer_params);
    } else if (a->no_biases != VG_SLIM_TRUE) {
        vg_initializer bi = a->biases_initializer ? *a->biases_initializer : vg_init_zeros();
        vg_variable b = model_var(g, "biases", dt, &nout, 1, bi, a->biases_regularizer, a->trainable != VG_SLIM_FALSE,
                                  keras ? "bias" : NULL);
        if (!b.var) return none_out();
        y = vg_bias_add(g, y, b.read, "BiasAdd");
    }
    vg_activation act = a->activation_fn ? a->activation_fn : def_act;
    if (act != VG_SLIM_LINEAR) y = vg__train_activate(g, y, act);
    return failed(g) ? none_out() : y;
}

static const char *push_vscope(vg_graph *g, const char *scope, const char *def, vg_reuse reuse) {
    vg_variable_scope_opts vo;
    memset(&vo, 0, sizeof vo);
    vo.reuse = reuse;
    vo.default_name = def;
    return vg_variable_scope_push(g, scope, &vo);
}

/* ---- layers --------------------------------------------------------------- */

/* The start of a convolution layer: its resolved arguments (*a), its 4-D input's shape
 * (*s) and padding (pad); false (the graph's error set, or an earlier one) when it
 * cannot be built. */
static bool conv_begin(vg_graph *g, vg_output x, const char *fn, const vg_slim_args *call, int kh, int kw,
                       const char *what, vg_slim_args *a, vg_shape *s, char pad[8]) {
    if (!g || failed(g)) return false;
    *a = vg_slim_resolve_args(g, fn, call);
    return input4(g, x, s, what) && conv_args(g, a, kh, kw, pad, what);
}

vg_output vg_slim_conv2d(vg_graph *g, vg_output x, int64_t num_outputs, int kh, int kw, const char *scope,
                         const vg_slim_args *call) {
    vg_slim_args a;
    vg_shape s;
    char pad[8];
    if (!conv_begin(g, x, VG_SLIM_CONV2D, call, kh, kw, "conv2d", &a, &s, pad)) return none_out();
    if (num_outputs <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "conv2d: num_outputs must be positive, got %lld",
                           (long long)num_outputs);
        return none_out();
    }
    if (!push_vscope(g, scope, "Conv", a.reuse)) return none_out();
    int64_t wd[4] = {kh, kw, s.dims[3], num_outputs};
    vg_variable w = model_var(g, "weights", vg_output_dtype(x), wd, 4, weights_init(&a), a.weights_regularizer,
                              a.trainable != VG_SLIM_FALSE, "kernel");
    vg_output y = none_out();
    if (w.var) {
        y = conv_maybe_dilated(g, K_CONV, x, w.read, kh, kw, a.stride, a.rate, pad, "", "Conv2D");
        y = finish_layer(g, &a, y, num_outputs, VG_ACT_RELU, true);
    }
    vg_variable_scope_pop(g);
    return failed(g) ? none_out() : y;
}

vg_output vg_slim_separable_conv2d(vg_graph *g, vg_output x, int64_t num_outputs, int kh, int kw, const char *scope,
                                   const vg_slim_args *call) {
    vg_slim_args a;
    vg_shape s;
    char pad[8];
    if (!conv_begin(g, x, VG_SLIM_SEPARABLE_CONV2D, call, kh, kw, "separable_conv2d", &a, &s, pad)) return none_out();
    int64_t dm = a.depth_multiplier ? a.depth_multiplier : 1;
    if (dm <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "separable_conv2d: depth_multiplier must be positive");
        return none_out();
    }
    if (!push_vscope(g, scope, "SeparableConv2d", a.reuse)) return none_out();
    vg_dtype dt = vg_output_dtype(x);
    bool tr = a.trainable != VG_SLIM_FALSE;
    int64_t in = s.dims[3], dd[4] = {kh, kw, in, dm};
    vg_output y = none_out();
    vg_variable dw = model_var(g, "depthwise_weights", dt, dd, 4, weights_init(&a), a.weights_regularizer, tr,
                               num_outputs > 0 ? "depthwise_kernel" : NULL);
    if (num_outputs > 0) {
        int64_t pd[4] = {1, 1, in * dm, num_outputs};
        vg_variable pw = model_var(g, "pointwise_weights", dt, pd, 4, weights_init(&a), a.weights_regularizer, tr,
                                   "pointwise_kernel");
        if (dw.var && pw.var) {
            /* nn.separable_conv2d: "separable_conv2d/depthwise" (its name scope), then a
             * 1x1 VALID Conv2D named after that scope, "separable_conv2d" */
            vg_output d = conv_maybe_dilated(g, K_DEPTHWISE, x, dw.read, kh, kw, a.stride, a.rate, pad,
                                             "separable_conv2d/", "depthwise");
            int64_t one[4] = {1, 1, 1, 1};
            y = vg_conv2d(g, d, pw.read, one, "VALID", "separable_conv2d");
            y = finish_layer(g, &a, y, num_outputs, VG_ACT_RELU, true);
        }
    } else if (dw.var) {
        /* num_outputs=None: nn.depthwise_conv2d only ("depthwise") */
        y = conv_maybe_dilated(g, K_DEPTHWISE, x, dw.read, kh, kw, a.stride, a.rate, pad, "", "depthwise");
        y = finish_layer(g, &a, y, in * dm, VG_ACT_RELU, false);
    }
    vg_variable_scope_pop(g);
    return failed(g) ? none_out() : y;
}

vg_output vg_slim_fully_connected(vg_graph *g, vg_output x, int64_t num_outputs, const char *scope,
                                  const vg_slim_args *call) {
    if (!g || failed(g)) return none_out();
    vg_slim_args a = vg_slim_resolve_args(g, VG_SLIM_FULLY_CONNECTED, call);
    if (!x.op) return none_out();
    vg_shape s = vg_output_shape(x);
    if (s.ndims < 2 || s.dims[s.ndims - 1] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "fully_connected: the input must have rank >= 2 and a known last dimension");
        return none_out();
    }
    if (num_outputs <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "fully_connected: num_outputs must be positive, got %lld",
                           (long long)num_outputs);
        return none_out();
    }
    if (!push_vscope(g, scope, "fully_connected", a.reuse)) return none_out();
    int64_t in = s.dims[s.ndims - 1], wd[2] = {in, num_outputs};
    vg_variable w = model_var(g, "weights", vg_output_dtype(x), wd, 2, weights_init(&a), a.weights_regularizer,
                              a.trainable != VG_SLIM_FALSE, "kernel");
    vg_output y = none_out();
    if (w.var) {
        vg_output xin = x;
        if (s.ndims > 2) xin = vg_reshape_c(g, x, (int64_t[]){-1, in}, 2, "Reshape");
        y = vg_matmul(g, xin, w.read, false, false, "MatMul");
        y = finish_layer(g, &a, y, num_outputs, VG_ACT_RELU, true);
        if (s.ndims > 2 && y.op)
            y = vg__train_unflatten_dense(g, y, s, num_outputs,
                                          "fully_connected: rank > 2 input with several unknown dims");
    }
    vg_variable_scope_pop(g);
    return failed(g) ? none_out() : y;
}

/* training: {NULL} with *static_val 1/0, or a bool tensor */
static vg_output training_of(const vg_slim_args *a, int *static_val) {
    if (a->is_training_tensor.op) {
        *static_val = -1;
        return a->is_training_tensor;
    }
    *static_val = a->is_training == VG_SLIM_FALSE ? 0 : 1;
    return none_out();
}

vg_output vg_slim_batch_norm(vg_graph *g, vg_output x, const char *scope, const vg_slim_args *call) {
    if (!g || failed(g)) return none_out();
    vg_slim_args a = vg_slim_resolve_args(g, VG_SLIM_BATCH_NORM_FN, call);
    if (!x.op) return none_out();
    vg_shape s = vg_output_shape(x);
    if (s.ndims < 2 || s.dims[s.ndims - 1] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "batch_norm: Inputs %s has undefined rank or last dimension",
                           vg_op_name(x.op));
        return none_out();
    }
    double decay = a.decay ? a.decay : 0.999, eps = a.epsilon ? a.epsilon : 0.001;
    int tr_static;
    vg_output training = training_of(&a, &tr_static);
    bool fused = a.fused != VG_SLIM_FALSE && (s.ndims == 2 || s.ndims == 4);
    if (!push_vscope(g, scope, "BatchNorm", a.reuse)) return none_out();
    vg_dtype dt = vg_output_dtype(x);
    int64_t c = s.dims[s.ndims - 1];
    bool trainable = a.trainable != VG_SLIM_FALSE;
    vg_output beta, gamma;
    vg_output y = none_out(), mean = none_out(), var = none_out();
    vg_variable mm = {0}, mv = {0};
    vg_regularizer inherit = {NULL, 0, NULL};
    /* TF takes contrib's own fused path for rank 2, zero_debias_moving_mean or other
     * updates_collections; else the tf.layers BatchNormalization layer, which makes
     * gamma before beta (same names and values) */
    bool keras_order = !(a.zero_debias_moving_mean == VG_SLIM_TRUE || s.ndims == 2 ||
                         (a.updates_collections && strcmp(a.updates_collections, VG_UPDATE_OPS) != 0));
    for (int pass = 0; pass < 2; pass++) {
        bool do_beta = (pass == 0) != keras_order;
        if (do_beta) {
            if (a.center != VG_SLIM_FALSE) {
                vg_variable b = model_var(g, "beta", dt, &c, 1, vg_init_zeros(), inherit, trainable, NULL);
                beta = b.read;
            } else {
                beta = vg_const_fill(g, dt, &c, 1, 0.0, "Const");
            }
        } else if (a.scale == VG_SLIM_TRUE) {
            vg_variable gv = model_var(g, "gamma", dt, &c, 1, vg_init_ones(), inherit, trainable, NULL);
            gamma = gv.read;
        } else {
            gamma = vg_const_fill(g, dt, &c, 1, 1.0, "Const");
        }
    }
    mm = model_var(g, "moving_mean", dt, &c, 1, vg_init_zeros(), inherit, false, NULL);
    mv = model_var(g, "moving_variance", dt, &c, 1, vg_init_ones(), inherit, false, NULL);
    if (failed(g)) goto out;
    if (fused) {
        vg_output xin = x;
        if (s.ndims == 2) xin = vg_reshape_c(g, x, (int64_t[]){-1, 1, 1, c}, 4, "Reshape");
        vg_output yt = none_out(), yi = none_out();
        if (tr_static != 0) {
            vg_output empty = vg_const_fill(g, dt, (int64_t[]){0}, 1, 0.0, "Const");
            vg_op *bn = vg_fused_batch_norm_v3(g, xin, gamma, beta, empty, empty, (float)eps, true, "FusedBatchNormV3");
            yt = vg_out(bn, 0);
            mean = vg_out(bn, 1);
            var = vg_out(bn, 2);
        }
        if (tr_static != 1) {
            vg_op *bn = vg_fused_batch_norm_v3(g, xin, gamma, beta, mm.read, mv.read, (float)eps, false,
                                               "FusedBatchNormV3");
            yi = vg_out(bn, 0);
        }
        y = tr_static == 1 ? yt : tr_static == 0 ? yi : vg_select(g, training, yt, yi, "cond/Merge");
        if (s.ndims == 2) y = vg_reshape_c(g, y, (int64_t[]){-1, c}, 2, "Reshape_1");
    } else {
        int32_t axes[VG_MAX_DIMS];
        for (int i = 0; i < s.ndims - 1; i++) axes[i] = i;
        vg_output yt = none_out(), yi = none_out();
        if (tr_static != 0) {
            vg_nn_moments(g, x, axes, s.ndims - 1, false, NULL, &mean, &var);
            yt = vg_nn_batch_normalization(g, x, mean, var, beta, gamma, eps, NULL);
        }
        if (tr_static != 1) yi = vg_nn_batch_normalization(g, x, mm.read, mv.read, beta, gamma, eps, NULL);
        y = tr_static == 1 ? yt : tr_static == 0 ? yi : vg_select(g, training, yt, yi, "cond/Merge");
    }
    if (tr_static != 0 && !failed(g)) {
        /* the moving-average updates (with a run-time is_training: decay 1 when false) */
        vg_output u1, u2;
        bool zd = a.zero_debias_moving_mean == VG_SLIM_TRUE;
        if (tr_static == 1) {
            u1 = vg_assign_moving_average(g, mm.ref, mean, decay, zd, NULL);
            u2 = vg_assign_moving_average(g, mv.ref, var, decay, false, NULL);
        } else {
            vg_output d = vg_select(g, training, vg_const_fill(g, dt, NULL, 0, decay, "decay"),
                                    vg_const_fill(g, dt, NULL, 0, 1.0, "no_decay"), "cond_1/Merge");
            u1 = vg_assign_moving_average_t(g, mm.ref, mean, d, zd, NULL);
            u2 = vg_assign_moving_average_t(g, mv.ref, var, d, false, NULL);
        }
        const char *coll = a.updates_collections ? a.updates_collections : VG_UPDATE_OPS;
        if (u1.op && u2.op) {
            if (*coll) {
                vg_graph_add_to_collection(g, coll, u1);
                vg_graph_add_to_collection(g, coll, u2);
            } else {
                vg_op *deps[2] = {u1.op, u2.op};
                vg_graph_push_control_deps(g, deps, 2);
                y = vg_identity(g, y, "Identity");
                vg_graph_pop_control_deps(g);
            }
        }
    }
    if (a.activation_fn && a.activation_fn != VG_SLIM_LINEAR) y = vg__train_activate(g, y, a.activation_fn);
out:
    vg_variable_scope_pop(g);
    return failed(g) ? none_out() : y;
}

static vg_output pool2d(vg_graph *g, vg_output x, int kh, int kw, const char *scope, const vg_slim_args *call,
                        bool max) {
    if (!g || failed(g)) return none_out();
    const char *layer = max ? "max_pool2d" : "avg_pool2d";
    vg_slim_args a = vg_slim_resolve_args(g, max ? VG_SLIM_MAX_POOL2D : VG_SLIM_AVG_POOL2D, call);
    vg_shape s;
    char pad[8];
    if (!input4(g, x, &s, layer) || !padding_of(g, a.padding, "VALID", pad, layer)) return none_out();
    int st0 = a.stride[0] ? a.stride[0] : 2, st1 = a.stride[1] ? a.stride[1] : a.stride[0] ? a.stride[0] : 2;
    if (kh <= 0 || kw <= 0 || st0 <= 0 || st1 <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: kernel_size and stride must be positive", layer);
        return none_out();
    }
    if (!vg_graph_push_scope(g, scope ? scope : max ? "MaxPool2D" : "AvgPool2D")) return none_out();
    int64_t k4[4] = {1, kh, kw, 1}, s4[4] = {1, st0, st1, 1};
    vg_output y = max ? vg_max_pool(g, x, k4, s4, pad, "MaxPool") : vg_avg_pool(g, x, k4, s4, pad, "AvgPool");
    vg_graph_pop_scope(g);
    return failed(g) ? none_out() : y;
}

vg_output vg_slim_max_pool2d(vg_graph *g, vg_output x, int kh, int kw, const char *scope, const vg_slim_args *a) {
    return pool2d(g, x, kh, kw, scope, a, true);
}

vg_output vg_slim_avg_pool2d(vg_graph *g, vg_output x, int kh, int kw, const char *scope, const vg_slim_args *a) {
    return pool2d(g, x, kh, kw, scope, a, false);
}

vg_output vg_slim_dropout(vg_graph *g, vg_output x, const char *scope, const vg_slim_args *call) {
    if (!g || failed(g)) return none_out();
    vg_slim_args a = vg_slim_resolve_args(g, VG_SLIM_DROPOUT, call);
    if (!x.op) return none_out();
    double kp = a.keep_prob ? a.keep_prob : 0.5;
    if (!(kp > 0 && kp <= 1)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dropout: keep_prob must be in (0, 1], got %g", kp);
        return none_out();
    }
    int tr_static;
    vg_output training = training_of(&a, &tr_static);
    /* core_layers.Dropout(name=sc.name) in slim's "Dropout" scope: the tf.layers dropout
     * named after the scope puts its ops in "<scope>/dropout/..." as TF; the scope name
     * is made unique as a name scope (dropout has no variables) */
    if (tr_static == 1) training = vg_const_bool(g, true, "is_training");
    vg_output y = vg_layers_dropout(g, x, 1.0 - kp, tr_static == 0 ? none_out() : training, a.seed,
                                    scope ? scope : "Dropout");
    return failed(g) ? none_out() : y;
}

vg_output vg_slim_flatten(vg_graph *g, vg_output x, const char *scope) {
    if (!g || failed(g) || !x.op) return none_out();
    if (!vg_graph_push_scope(g, scope ? scope : "Flatten")) return none_out();
    vg_output y = vg_layers_flatten(g, x, NULL);
    vg_graph_pop_scope(g);
    return failed(g) ? none_out() : y;
}

static vg_output repeat_stack(vg_graph *g, vg_output x, int n, vg_slim_layer_fn layer, void *arg,
                              void *const *args, const char *layer_name, const char *scope, const char *def,
                              const char *def_layer) {
    if (!g || failed(g)) return none_out();
    if (!layer || n < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: a layer and a non-negative count are required", def);
        return none_out();
    }
    if (!push_vscope(g, scope, def, VG_REUSE_INHERIT)) return none_out();
    const char *base = scope ? scope : layer_name ? layer_name : def_layer;
    vg_output y = x;
    for (int i = 0; i < n && y.op; i++) {
        char sc[NAME_MAX_];
        snprintf(sc, sizeof sc, "%s_%d", base, i + 1);
        y = layer(g, y, sc, args ? args[i] : arg);
    }
    vg_variable_scope_pop(g);
    return failed(g) ? none_out() : y;
}

vg_output vg_slim_repeat(vg_graph *g, vg_output x, int repetitions, vg_slim_layer_fn layer, void *arg,
                         const char *layer_name, const char *scope) {
    return repeat_stack(g, x, repetitions, layer, arg, NULL, layer_name, scope, "Repeat", "repeat");
}

vg_output vg_slim_stack(vg_graph *g, vg_output x, vg_slim_layer_fn layer, void *const *stack_args, int n,
                        const char *layer_name, const char *scope) {
    if (g && n > 0 && !stack_args) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "stack_args need to be a list or tuple");
        return none_out();
    }
    return repeat_stack(g, x, n, layer, NULL, stack_args, layer_name, scope, "Stack", "stack");
}

/* ---- variables ------------------------------------------------------------ */

vg_variable vg_slim_model_variable(vg_graph *g, const char *name, const vg_get_variable_opts *opts) {
    vg_variable v = vg_get_variable_ex(g, name, opts);
    if (v.var && !vg_graph_collection_has_op(g, VG_MODEL_VARIABLES, v.var)) vg_graph_add_to_collection(g, VG_MODEL_VARIABLES, v.ref);
    return v;
}

static bool starts_with(const char *s, const char *p) { return !p || strncmp(s, p, strlen(p)) == 0; }

static int filter(const vg_graph *g, const char *key, const char *scope, vg_output *out, int max) {
    int n = 0, k = 0;
    const vg_output *items = vg_graph_collection(g, key, &n);
    for (int i = 0; i < n; i++) {
        if (!items[i].op || !starts_with(vg_op_name(items[i].op), scope)) continue;
        if (out && k < max) out[k] = items[i];
        k++;
    }
    return k;
}

int vg_slim_get_model_variables(const vg_graph *g, const char *scope, vg_output *out, int max) {
    return g ? filter(g, VG_MODEL_VARIABLES, scope, out, max) : 0;
}

int vg_slim_get_variables(const vg_graph *g, const char *scope, vg_output *out, int max) {
    return g ? filter(g, VG_GLOBAL_VARIABLES, scope, out, max) : 0;
}

int vg_slim_get_variables_to_restore(const vg_graph *g, const char *const *include, int ninclude,
                                     const char *const *exclude, int nexclude, vg_output *out, int max) {
    if (!g) return 0;
    int n = 0, k = 0;
    const vg_output *items = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    int passes = include ? ninclude : 1;
    for (int p = 0; p < passes; p++) {
        for (int i = 0; i < n; i++) {
            const char *name = items[i].op ? vg_op_name(items[i].op) : NULL;
            if (!name || (include && !starts_with(name, include[p]))) continue;
            bool ex = false;
            for (int e = 0; e < nexclude && exclude && !ex; e++) ex = starts_with(name, exclude[e]);
            if (ex) continue;
            if (out && k < max) out[k] = items[i];
            k++;
        }
    }
    return k;
}

typedef struct ckpt_fn {
    vg_saver *saver;
    char path[4096];
} ckpt_fn;

static vg_code ckpt_init_fn(void *payload, vg_scaffold *scaffold, vg_session *sess, vg_status *st) {
    (void)scaffold;
    return vg_slim_init_fn_run(payload, sess, st);
}

vg_code vg_slim_init_fn_run(vg_slim_init_fn *f, vg_session *sess, vg_status *st) {
    if (!f || !f->priv || !sess) return vg_status_set(st, VG_INVALID_ARGUMENT, "init_fn: no callback or session");
    ckpt_fn *c = f->priv;
    return vg_saver_restore(c->saver, sess, c->path, st);
}

void vg_slim_init_fn_free(vg_slim_init_fn *f) {
    if (!f) return;
    ckpt_fn *c = f->priv;
    if (c) vg_saver_free(c->saver);
    free(c);
    free(f);
}

vg_slim_init_fn *vg_slim_assign_from_checkpoint_fn(vg_graph *g, const char *model_path, const vg_output *vars, int n,
                                                   const char *const *ckpt_names, bool ignore_missing_vars,
                                                   vg_status *st) {
    if (st) { st->code = VG_OK; st->msg[0] = 0; }
    if (!g || !model_path) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "assign_from_checkpoint_fn: a graph and model_path are required");
        return NULL;
    }
    if (!vars || n <= 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "var_list cannot be empty");
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", model_path);
    if (!vg_checkpoint_exists(path)) {
        /* a directory: its latest checkpoint (train_image_classifier.py's _get_init_fn) */
        char buf[4096];
        if (vg_latest_checkpoint(model_path, buf, sizeof buf)) snprintf(path, sizeof path, "%s", buf);
    }
    vg_output *keep = malloc((size_t)n * sizeof *keep);
    const char **names = malloc((size_t)n * sizeof *names);
    ckpt_fn *c = calloc(1, sizeof *c);
    vg_slim_init_fn *f = calloc(1, sizeof *f);
    vg_slim_init_fn *ret = NULL;
    vg_checkpoint_reader *r = NULL;
    if (!keep || !names || !c || !f) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "assign_from_checkpoint_fn: out of memory");
        goto done;
    }
    if (ignore_missing_vars) {
        r = vg_checkpoint_reader_new(path, st);
        if (!r) goto done;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!vars[i].op) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "assign_from_checkpoint_fn: variable %d is missing", i);
            goto done;
        }
        const char *key = ckpt_names ? ckpt_names[i] : vg_op_name(vars[i].op);
        if (r) {
            bool found = false;
            for (int t = 0; t < vg_checkpoint_reader_num_tensors(r) && !found; t++)
                found = strcmp(vg_checkpoint_reader_tensor(r, t, NULL, NULL), key) == 0;
            if (!found) {
                vg_logf(VG_LOG_WARN, "Variable %s missing in checkpoint %s", key, path);
                continue;
            }
        }
        keep[k] = vars[i];
        names[k++] = key;
    }
    if (k == 0) {
        vg_logf(VG_LOG_WARN, "No Variables to restore");
        goto done;
    }
    vg_saver_options so = {0};
    so.var_list = keep;
    so.nvars = k;
    so.var_names = names;
    so.no_meta_graph = true;
    c->saver = vg_saver_new(g, &so, st);
    if (!c->saver) goto done;
    snprintf(c->path, sizeof c->path, "%s", path);
    f->fn = ckpt_init_fn;
    f->priv = c;
    ret = f;
    c = NULL;
    f = NULL;
done:
    if (r) vg_checkpoint_reader_free(r);
    free(keep);
    free(names);
    free(c);
    free(f);
    return ret;
}

void vg_slim_feed_dict_free(vg_slim_feed_dict *fd) {
    if (!fd) return;
    for (int i = 0; i < fd->n; i++) vg_tensor_free(fd->values[i]);
    free(fd->feeds);
    free(fd->values);
    fd->feeds = NULL;
    fd->values = NULL;
    fd->n = 0;
}

static void shape_str(const int64_t *d, int n, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)d[i]);
}

vg_op *vg_slim_assign_from_checkpoint(vg_graph *g, const char *model_path, const vg_output *vars, int n,
                                      const char *const *ckpt_names, bool ignore_missing_vars, vg_slim_feed_dict *fd,
                                      vg_status *st) {
    if (st) {
        st->code = VG_OK;
        st->msg[0] = 0;
    }
    if (fd) memset(fd, 0, sizeof *fd);
    if (!g || !model_path || !fd) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "assign_from_checkpoint: a graph, model_path and feed_dict are required");
        return NULL;
    }
    if (!vars || n <= 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "var_list cannot be empty");
        return NULL;
    }
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(model_path, st);
    if (!r) return NULL;
    vg_op **assigns = calloc((size_t)n, sizeof *assigns);
    fd->feeds = calloc((size_t)n, sizeof *fd->feeds);
    fd->values = calloc((size_t)n, sizeof *fd->values);
    vg_op *grp = NULL;
    int na = 0;
    if (!assigns || !fd->feeds || !fd->values) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "assign_from_checkpoint: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (!vars[i].op) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "assign_from_checkpoint: variable %d is missing", i);
            goto done;
        }
        const char *vname = vg_op_name(vars[i].op), *key = ckpt_names ? ckpt_names[i] : vname;
        vg_dtype cdt = VG_DTYPE_INVALID;
        vg_shape cs = {0};
        bool found = false;
        for (int t = 0; t < vg_checkpoint_reader_num_tensors(r) && !found; t++)
            if (strcmp(vg_checkpoint_reader_tensor(r, t, &cdt, &cs), key) == 0) found = true;
        if (!found) {
            if (ignore_missing_vars) {
                vg_logf(VG_LOG_WARN, "Checkpoint is missing variable [%s]", key);
                continue;
            }
            vg_status_set(st, VG_INVALID_ARGUMENT, "Checkpoint is missing variable [%s]", key);
            goto done;
        }
        vg_shape vs = vg_output_shape(vars[i]);
        vg_dtype vdt = vg_output_dtype(vars[i]);
        bool same = vs.ndims == cs.ndims;
        for (int d = 0; same && d < vs.ndims; d++) same = vs.dims[d] == cs.dims[d];
        if (!same) {
            char a[256], b[256];
            shape_str(cs.dims, cs.ndims, a, sizeof a);
            shape_str(vs.dims, vs.ndims, b, sizeof b);
            vg_status_set(st, VG_INVALID_ARGUMENT,
                          "Total size of new array must be unchanged for %s lh_shape: [(%s)], rh_shape: [(%s)]", key,
                          a, b);
            goto done;
        }
        if (cdt != vdt) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "assign_from_checkpoint: %s has dtype %s in the checkpoint, %s here",
                          key, vg_dtype_name(cdt), vg_dtype_name(vdt));
            goto done;
        }
        vg_tensor *val = vg_checkpoint_reader_read(r, key, st);
        if (!val) goto done;
        char ph[NAME_MAX_ * 2];
        snprintf(ph, sizeof ph, "placeholder/%s", vname);
        vg_output p = vg_placeholder(g, vdt, vs.dims, vs.ndims, ph);
        vg_output as = vg_assign(g, vars[i], p, true, "Assign");
        if (!p.op || !as.op) {
            vg_tensor_free(val);
            vg_graph_status(g, st);
            goto done;
        }
        fd->feeds[fd->n] = p;
        fd->values[fd->n++] = val;
        assigns[na++] = as.op;
    }
    grp = vg_group(g, assigns, na, "group_deps");
    if (!grp) vg_graph_status(g, st);
done:
    if (!grp) vg_slim_feed_dict_free(fd);
    free(assigns);
    vg_checkpoint_reader_free(r);
    return grp;
}
