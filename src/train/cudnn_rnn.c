/*
 * cudnn_rnn.c - tf.contrib.cudnn_rnn's Python half in C (vigil/cudnn_rnn.h): the op
 * builders, the CudnnLSTM layer (contrib/cudnn_rnn/python/layers/cudnn_rnn.py: one
 * opaque variable initialized from canonical weights, the saveable made in build), the
 * CudnnLSTMSaveable (python/ops/cudnn_rnn_ops.py: the opaque buffer saved as the
 * CudnnCompatibleLSTMCell's kernel and bias per layer and direction, restored by the
 * reverse transform and CudnnRNNCanonicalToParams) and CudnnCompatibleLSTMCell. The
 * ops' kernels are in src/kernels/nn/cudnn_rnn_ops.c. Public API only, plus the
 * train layer's saveable registry (train_util.h).
 */
#include "train_util.h"
#include "vigil/cudnn_rnn.h"
#include "vigil/rnn.h"
#include "vigil/variable_scope.h"
#include "vigil/variables.h"

/* ------------------------------------------------------------------------ */
/* op builders */

static void set_attrs(vg_op_builder *b, const vg_cudnn_rnn_attrs *a, bool training_attr) {
    static const vg_cudnn_rnn_attrs none = {0};
    if (!a) a = &none;
    const char *mode = a->rnn_mode ? a->rnn_mode : "lstm", *im = a->input_mode ? a->input_mode : "linear_input",
               *dir = a->direction ? a->direction : "unidirectional";
    vg_op_builder_set_attr_type(b, "T", VG_FLOAT);
    vg_op_builder_set_attr_string(b, "rnn_mode", mode, strlen(mode));
    vg_op_builder_set_attr_string(b, "input_mode", im, strlen(im));
    vg_op_builder_set_attr_string(b, "direction", dir, strlen(dir));
    vg_op_builder_set_attr_float(b, "dropout", a->dropout);
    vg_op_builder_set_attr_int(b, "seed", a->seed);
    vg_op_builder_set_attr_int(b, "seed2", a->seed2);
    if (training_attr) vg_op_builder_set_attr_bool(b, "is_training", !a->inference);
}

vg_op *vg_cudnn_rnn(vg_graph *g, vg_output input, vg_output input_h, vg_output input_c, vg_output params,
                    const vg_cudnn_rnn_attrs *a, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "CudnnRNN", name ? name : "CudnnRNN");
    if (!b) return NULL;
    vg_output in[4] = {input, input_h, input_c, params};
    vg_op_builder_add_inputs(b, in, 4);
    set_attrs(b, a, true);
    return vg_op_builder_finish(b);
}

vg_output vg_cudnn_rnn_params_size(vg_graph *g, vg_output num_layers, vg_output num_units, vg_output input_size,
                                   vg_dtype S, const vg_cudnn_rnn_attrs *a, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "CudnnRNNParamsSize", name ? name : "CudnnRNNParamsSize");
    if (!b) return (vg_output){NULL, 0};
    vg_output in[3] = {num_layers, num_units, input_size};
    vg_op_builder_add_inputs(b, in, 3);
    set_attrs(b, a, false);
    vg_op_builder_set_attr_type(b, "S", S ? S : VG_INT32);
    vg_op *op = vg_op_builder_finish(b);
    return op ? vg_out(op, 0) : (vg_output){NULL, 0};
}

vg_op *vg_cudnn_rnn_params_to_canonical(vg_graph *g, vg_output num_layers, vg_output num_units, vg_output input_size,
                                        vg_output params, int num_params, const vg_cudnn_rnn_attrs *a,
                                        const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "CudnnRNNParamsToCanonical", name ? name : "CudnnRNNParamsToCanonical");
    if (!b) return NULL;
    vg_output in[4] = {num_layers, num_units, input_size, params};
    vg_op_builder_add_inputs(b, in, 4);
    set_attrs(b, a, false);
    vg_op_builder_set_attr_int(b, "num_params", num_params);
    return vg_op_builder_finish(b);
}

vg_output vg_cudnn_rnn_canonical_to_params(vg_graph *g, vg_output num_layers, vg_output num_units,
                                           vg_output input_size, const vg_output *weights, const vg_output *biases,
                                           int num_params, const vg_cudnn_rnn_attrs *a, const char *name) {
    vg_output none = {NULL, 0};
    if (!g) return none;
    if (!weights || !biases || num_params < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "CudnnRNNCanonicalToParams: needs num_params >= 1 weights and biases");
        return none;
    }
    vg_op_builder *b = vg_op_builder_new(g, "CudnnRNNCanonicalToParams", name ? name : "CudnnRNNCanonicalToParams");
    if (!b) return none;
    vg_output in[3] = {num_layers, num_units, input_size};
    vg_op_builder_add_inputs(b, in, 3);
    vg_op_builder_add_inputs(b, weights, num_params);
    vg_op_builder_add_inputs(b, biases, num_params);
    set_attrs(b, a, false);
    vg_op_builder_set_attr_int(b, "num_params", num_params);
    vg_op *op = vg_op_builder_finish(b);
    return op ? vg_out(op, 0) : none;
}

/* ------------------------------------------------------------------------ */
/* the saveable: canonical tensors <-> opaque buffer */

#define MAX_PARTS 384

typedef struct cudnn_saveable {
    vg_op *var;              /* the opaque VariableV2 */
    int L, D, NG;            /* NG: 4 (lstm), 3 (gru), 1 (rnn_tanh, rnn_relu) */
    bool relu;
    int64_t H, I;
    char input_mode[16];
    int nparts;              /* TF's order: all weights, then all biases; per pseudo-layer
                                1 (lstm: kernel) or 3 (gru: gates, input / hidden projection) */
    vg_op *parts[MAX_PARTS]; /* the saved tensors' ops */
    vg_output restored[MAX_PARTS];
    vg_op *restore_op;       /* the RestoreV2 the collected parts come from */
    int seen;
} cudnn_saveable;

static vg_cudnn_rnn_attrs attrs_of(const cudnn_saveable *s) {
    vg_cudnn_rnn_attrs a = {0};
    a.rnn_mode = s->NG == 3 ? "gru" : s->NG == 1 ? (s->relu ? "rnn_relu" : "rnn_tanh") : "lstm";
    a.input_mode = s->input_mode;
    a.direction = s->D == 2 ? "bidirectional" : "unidirectional";
    return a;
}

static int64_t in_size(const cudnn_saveable *s, int l) { return l == 0 ? s->I : s->D * s->H; }
static int per_layer(const cudnn_saveable *s) { return s->NG == 3 ? 3 : 1; }

/* cuDNN gate j (i, f, c, o) for TF position k (i, c, f, o) and back: the same swap */
static const int k_swap[4] = {0, 2, 1, 3};

static vg_output transpose2(vg_graph *g, vg_output x) { return vg_transpose_c(g, x, (int32_t[]){1, 0}, 2, NULL); }

/* The reverse of the saved form (_tf_to_cudnn_weights / _tf_to_cudnn_biases): cuDNN's
 * 2 * NG weights and biases of pseudo-layer p from the TF tensors tw[0..n), tb[0..n). */
static void tf_to_cudnn(vg_graph *g, const cudnn_saveable *s, int p, const vg_output *tw, const vg_output *tb,
                        vg_output *w, vg_output *b) {
    int32_t in = (int32_t)in_size(s, p / s->D), H = (int32_t)s->H;
    vg_output half = vg_const_f32(g, 0.5f, NULL);
    if (s->NG == 1) { /* CudnnRNNSimpleSaveable: kernel [in + H, H], bias bW + bR */
        vg_op *wr = vg_split_v(g, transpose2(g, tw[0]), (int32_t[]){in, H}, 2, 1, NULL);
        if (!wr) return;
        w[0] = vg_out(wr, 0);
        w[1] = vg_out(wr, 1);
        b[0] = b[1] = vg_mul(g, tb[0], half, NULL);
        return;
    }
    if (s->NG == 4) {
        vg_op *gates = vg_split_v(g, transpose2(g, tw[0]), (int32_t[]){H, H, H, H}, 4, 0, NULL);
        vg_op *bs = vg_split_v(g, tb[0], (int32_t[]){H, H, H, H}, 4, 0, NULL);
        if (!gates || !bs) return;
        for (int k = 0; k < 4; k++) {
            int j = k_swap[k];
            vg_op *wr = vg_split_v(g, vg_out(gates, k), (int32_t[]){in, H}, 2, 1, NULL);
            if (!wr) return;
            w[j] = vg_out(wr, 0);
            w[4 + j] = vg_out(wr, 1);
            b[j] = b[4 + j] = vg_mul(g, vg_out(bs, k), half, NULL);
        }
        return;
    }
    /* GRU: gates kernel [in + H, 2H] (r, u), candidate input / hidden projections */
    vg_op *gates = vg_split_v(g, transpose2(g, tw[0]), (int32_t[]){H, H}, 2, 0, NULL);
    vg_op *bs = vg_split_v(g, vg_mul(g, tb[0], half, NULL), (int32_t[]){H, H}, 2, 0, NULL);
    if (!gates || !bs) return;
    for (int j = 0; j < 2; j++) {
        vg_op *wr = vg_split_v(g, vg_out(gates, j), (int32_t[]){in, H}, 2, 1, NULL);
        if (!wr) return;
        w[j] = vg_out(wr, 0);
        w[3 + j] = vg_out(wr, 1);
        b[j] = b[3 + j] = vg_out(bs, j);
    }
    w[2] = transpose2(g, tw[1]);
    w[5] = transpose2(g, tw[2]);
    b[2] = tb[1];
    b[5] = tb[2];
}

static vg_output i32(vg_graph *g, int64_t v) { return vg_const_i32(g, (int32_t)v, NULL); }

static vg_op *saveable_restore(vg_graph *g, vg_output t, vg_output restored, void *user) {
    cudnn_saveable *s = user;
    int k = 0;
    while (k < s->nparts && s->parts[k] != t.op) k++;
    if (k == s->nparts) {
        vg_graph_set_error(g, VG_INTERNAL, "cudnn saveable: %s is not one of its tensors", vg_op_name(t.op));
        return NULL;
    }
    if (restored.op != s->restore_op) { /* another saver's restore: start over */
        for (int i = 0; i < s->nparts; i++) s->restored[i] = (vg_output){NULL, 0};
        s->seen = 0;
        s->restore_op = restored.op;
    }
    if (!s->restored[k].op) s->seen++;
    s->restored[k] = restored;
    if (s->seen < s->nparts) return vg_identity(g, restored, NULL).op;
    /* the last part: CudnnOpaqueParamsSaveable.restore */
    int P = s->L * s->D, NW = 2 * s->NG, n = NW * P, q = per_layer(s);
    vg_output *w = vg_calloc((size_t)(2 * n), sizeof *w), *b = w ? w + n : NULL;
    vg_op *assign = NULL;
    if (!w) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "cudnn saveable: out of memory");
        return NULL;
    }
    for (int p = 0; p < P; p++)
        tf_to_cudnn(g, s, p, s->restored + q * p, s->restored + q * (P + p), w + NW * p, b + NW * p);
    vg_cudnn_rnn_attrs a = attrs_of(s);
    vg_output params = vg_graph_status(g, NULL) == VG_OK
                           ? vg_cudnn_rnn_canonical_to_params(g, i32(g, s->L), i32(g, s->H), i32(g, s->I), w, b, n, &a, NULL)
                           : (vg_output){NULL, 0};
    vg_free(w);
    if (params.op) {
        /* TF's Saver restores saveable objects after variables: order this after the
         * opaque variable's own Assign from the same RestoreV2, when there is one */
        vg_op *deps[8];
        int nd = 0;
        for (int i = 0, N = vg_graph_num_ops(g); i < N && nd < 8; i++) {
            vg_op *op = vg_graph_op(g, i);
            if (strcmp(vg_op_type(op), "Assign") || vg_op_num_inputs(op) < 2) continue;
            if (vg_op_input(op, 0).op == s->var && vg_op_input(op, 1).op == restored.op) deps[nd++] = op;
        }
        if (nd) vg_graph_push_control_deps(g, deps, nd);
        vg_output as = vg_assign(g, vg_out(s->var, 0), params, true, NULL);
        if (nd) vg_graph_pop_control_deps(g);
        assign = as.op;
    }
    for (int i = 0; i < s->nparts; i++) s->restored[i] = (vg_output){NULL, 0};
    s->seen = 0;
    s->restore_op = NULL;
    return assign;
}

static vg_code add_part(vg_graph *g, cudnn_saveable *s, int idx, vg_output t, const char *prefix, const char *suffix) {
    char key[1024];
    if (vg_graph_status(g, NULL) != VG_OK) return vg_graph_status(g, NULL);
    s->parts[idx] = t.op;
    snprintf(key, sizeof key, "%s/%s", prefix, suffix);
    return vg__register_saveable(g, t, key, saveable_restore, s);
}

/* Builds the saved tensors from the variable's value (_TransformCanonical) and
 * registers them. */
static vg_code make_saveable(vg_graph *g, cudnn_saveable *s, vg_output value, const char *scope, vg_op **parts) {
    int P = s->L * s->D, NW = 2 * s->NG, n = NW * P, q = per_layer(s);
    const char *cell = s->NG == 3 ? "cudnn_compatible_gru_cell" : s->NG == 1 ? "basic_rnn_cell" : "cudnn_compatible_lstm_cell";
    vg_cudnn_rnn_attrs a = attrs_of(s);
    vg_op *can = vg_cudnn_rnn_params_to_canonical(g, i32(g, s->L), i32(g, s->H), i32(g, s->I), value, n, &a, NULL);
    if (!can) return vg_graph_status(g, NULL);
    for (int p = 0; p < P; p++) {
        int l = p / s->D;
        char prefix[600];
        if (s->D == 1)
            snprintf(prefix, sizeof prefix, "%s%srnn/multi_rnn_cell/cell_%d/%s", scope, *scope ? "/" : "", l, cell);
        else
            snprintf(prefix, sizeof prefix, "%s%sstack_bidirectional_rnn/cell_%d/bidirectional_rnn/%s/%s", scope,
                     *scope ? "/" : "", l, p % 2 ? "bw" : "fw", cell);
        vg_output cw[8], cb[8];
        for (int j = 0; j < NW; j++) cw[j] = vg_out(can, NW * p + j), cb[j] = vg_out(can, n + NW * p + j);
        if (s->NG == 1) {
            vg_output wr = vg_concat_c(g, (vg_output[]){cw[0], cw[1]}, 2, 1, NULL);
            if (add_part(g, s, p, transpose2(g, wr), prefix, "kernel") ||
                add_part(g, s, P + p, vg_add(g, cb[0], cb[1], NULL), prefix, "bias"))
                return vg_graph_status(g, NULL);
        } else if (s->NG == 4) {
            vg_output wg[4], bg[4];
            for (int k = 0; k < 4; k++) {
                int j = k_swap[k];
                wg[k] = vg_concat_c(g, (vg_output[]){cw[j], cw[4 + j]}, 2, 1, NULL);
                bg[k] = vg_add(g, cb[j], cb[4 + j], NULL);
            }
            if (add_part(g, s, p, transpose2(g, vg_concat_c(g, wg, 4, 0, NULL)), prefix, "kernel") ||
                add_part(g, s, P + p, vg_concat_c(g, bg, 4, 0, NULL), prefix, "bias"))
                return vg_graph_status(g, NULL);
        } else {
            vg_output wir[2] = {vg_concat_c(g, (vg_output[]){cw[0], cw[3]}, 2, 1, NULL),
                                vg_concat_c(g, (vg_output[]){cw[1], cw[4]}, 2, 1, NULL)};
            vg_output bir = vg_add(g, vg_concat_c(g, (vg_output[]){cb[0], cb[1]}, 2, 0, NULL),
                                   vg_concat_c(g, (vg_output[]){cb[3], cb[4]}, 2, 0, NULL), NULL);
            if (add_part(g, s, q * p, transpose2(g, vg_concat_c(g, wir, 2, 0, NULL)), prefix, "gates/kernel") ||
                add_part(g, s, q * p + 1, transpose2(g, cw[2]), prefix, "candidate/input_projection/kernel") ||
                add_part(g, s, q * p + 2, transpose2(g, cw[5]), prefix, "candidate/hidden_projection/kernel") ||
                add_part(g, s, q * (P + p), bir, prefix, "gates/bias") ||
                add_part(g, s, q * (P + p) + 1, vg_identity(g, cb[2], NULL), prefix, "candidate/input_projection/bias") ||
                add_part(g, s, q * (P + p) + 2, vg_identity(g, cb[5], NULL), prefix, "candidate/hidden_projection/bias"))
                return vg_graph_status(g, NULL);
        }
    }
    s->nparts = 2 * q * P;
    for (int i = 0; i < s->nparts; i++) parts[i] = s->parts[i];
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* the layers */

struct vg_cudnn_layer {
    int L, D, NG;
    bool relu;
    int64_t H, I;
    char input_mode[16];
    float dropout;
    int64_t seed;
    vg_initializer kinit, binit;
    char *name;
    vg_graph *g;     /* the graph of the first call */
    vg_vscope *scope;
    vg_variable var;
    int nparts;
    vg_op *parts[MAX_PARTS];
};

static vg_cudnn_layer *layer_new(const vg_cudnn_rnn_options *o, int NG, bool relu, const char *dflt_name) {
    if (!o || o->num_layers < 1 || o->num_units < 1 || o->num_layers * 2 * 6 > MAX_PARTS) return NULL;
    const char *dir = o->direction ? o->direction : "unidirectional";
    const char *im = o->input_mode ? o->input_mode : "linear_input";
    if (strcmp(dir, "unidirectional") && strcmp(dir, "bidirectional")) return NULL;
    if (strcmp(im, "linear_input") && strcmp(im, "skip_input") && strcmp(im, "auto_select")) return NULL;
    vg_cudnn_layer *l = vg_calloc(1, sizeof *l);
    if (!l || !(l->name = vg__train_strdup(o->name ? o->name : dflt_name))) {
        vg_free(l);
        return NULL;
    }
    l->L = o->num_layers;
    l->D = strcmp(dir, "bidirectional") ? 1 : 2;
    l->NG = NG;
    l->relu = relu;
    l->H = o->num_units;
    snprintf(l->input_mode, sizeof l->input_mode, "%s", im);
    l->dropout = o->dropout;
    l->seed = o->seed;
    l->kinit = o->kernel_initializer ? *o->kernel_initializer : vg_init_glorot_uniform(o->seed);
    l->binit = o->bias_initializer ? *o->bias_initializer : vg_init_constant(0.0);
    return l;
}

vg_cudnn_layer *vg_cudnn_lstm_new(const vg_cudnn_rnn_options *o) { return layer_new(o, 4, false, "cudnn_lstm"); }
vg_cudnn_layer *vg_cudnn_gru_new(const vg_cudnn_rnn_options *o) { return layer_new(o, 3, false, "cudnn_gru"); }
vg_cudnn_layer *vg_cudnn_rnn_tanh_new(const vg_cudnn_rnn_options *o) { return layer_new(o, 1, false, "cudnn_rnn_tanh"); }
vg_cudnn_layer *vg_cudnn_rnn_relu_new(const vg_cudnn_rnn_options *o) { return layer_new(o, 1, true, "cudnn_rnn_relu"); }

void vg_cudnn_layer_free(vg_cudnn_layer *l) {
    if (!l) return;
    vg_free(l->name);
    vg_free(l);
}

vg_output vg_cudnn_layer_opaque_kernel(const vg_cudnn_layer *l) { return l && l->var.var ? l->var.ref : (vg_output){NULL, 0}; }
int vg_cudnn_layer_num_saveables(const vg_cudnn_layer *l) { return l ? l->nparts : 0; }
vg_output vg_cudnn_layer_saveable(const vg_cudnn_layer *l, int i) {
    return l && i >= 0 && i < l->nparts ? vg_out(l->parts[i], 0) : (vg_output){NULL, 0};
}

static vg_cudnn_rnn_attrs layer_attrs(const vg_cudnn_layer *l, bool training) {
    vg_cudnn_rnn_attrs a = {0};
    a.rnn_mode = l->NG == 3 ? "gru" : l->NG == 1 ? (l->relu ? "rnn_relu" : "rnn_tanh") : "lstm";
    a.input_mode = l->input_mode;
    a.direction = l->D == 2 ? "bidirectional" : "unidirectional";
    a.dropout = l->dropout;
    a.seed = l->seed;
    a.inference = !training;
    return a;
}

static void saveable_free(void *p) { vg_free(p); }

/* build(): in the layer's variable scope (entered by the caller) */
static vg_code build(vg_cudnn_layer *l, vg_graph *g) {
    int P = l->L * l->D, NW = 2 * l->NG, n = NW * P;
    vg_output *w = vg_calloc((size_t)(2 * n), sizeof *w), *b = w ? w + n : NULL;
    if (!w) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "CudnnRNN layer: out of memory");
    /* canonical_weight_shapes / canonical_bias_shapes, each drawn by its initializer */
    for (int k = 0; k < n; k++) {
        int64_t wd[2] = {l->H, k % NW < l->NG ? (k / NW / l->D == 0 ? l->I : l->D * l->H) : l->H}, bd[1] = {l->H};
        w[k] = vg_initializer_build(g, l->kinit, VG_FLOAT, wd, 2);
        b[k] = vg_initializer_build(g, l->binit, VG_FLOAT, bd, 1);
    }
    vg_cudnn_rnn_attrs a = layer_attrs(l, true);
    vg_output opaque = vg_graph_status(g, NULL) == VG_OK
                           ? vg_cudnn_rnn_canonical_to_params(g, i32(g, l->L), i32(g, l->H), i32(g, l->I), w, b, n, &a, NULL)
                           : (vg_output){NULL, 0};
    vg_free(w);
    if (!opaque.op) return vg_graph_status(g, NULL);
    l->var = vg_variable_new(g, "opaque_kernel", opaque, VG_VAR_TRAINABLE);
    if (!l->var.var) return vg_graph_status(g, NULL);
    /* the saveable, in the layer's variable scope (TF's _create_saveable) */
    cudnn_saveable *s = vg_calloc(1, sizeof *s);
    char key[700];
    snprintf(key, sizeof key, "vigil.cudnn_saveable.%s", vg_op_name(l->var.var));
    if (!s || vg_graph_set_user_data(g, key, s, saveable_free) != VG_OK) {
        vg_free(s);
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "CudnnRNN layer: out of memory");
    }
    s->var = l->var.var;
    s->L = l->L, s->D = l->D, s->NG = l->NG, s->relu = l->relu, s->H = l->H, s->I = l->I;
    memcpy(s->input_mode, l->input_mode, sizeof s->input_mode);
    if (make_saveable(g, s, l->var.read, vg_variable_scope_name(g), l->parts)) return vg_graph_status(g, NULL);
    l->nparts = s->nparts;
    return VG_OK;
}

static vg_code fail(vg_graph *g, vg_status *st) { return vg_graph_status(g, st); }

vg_code vg_cudnn_layer_call(vg_cudnn_layer *l, vg_graph *g, vg_output inputs, const vg_output *initial_state,
                            bool training, vg_output *outputs, vg_output *final_state, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "CudnnRNN layer: NULL graph");
    if (vg_graph_status(g, NULL) != VG_OK) return fail(g, st);
    if (!l || !inputs.op || !outputs || !final_state) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "CudnnRNN layer: NULL layer, inputs, outputs or final_state");
        return fail(g, st);
    }
    vg_shape xs = vg_output_shape(inputs);
    if (xs.ndims != 3 || xs.dims[2] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "%s: inputs must be rank 3 [time, batch, depth] with a known depth", l->name);
        return fail(g, st);
    }
    if (l->g && l->g != g) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: called in another graph than its first call's", l->name);
        return fail(g, st);
    }
    if (l->g && xs.dims[2] != l->I) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: inputs depth %lld, but the layer was built for %lld", l->name,
                           (long long)xs.dims[2], (long long)l->I);
        return fail(g, st);
    }
    /* Layer.__call__'s scopes: capture tf.variable_scope(None, default_name=name) */
    bool first = !l->g;
    if (first) {
        vg_variable_scope_opts o = {0};
        o.default_name = l->name;
        if (!vg_variable_scope_push(g, NULL, &o)) return fail(g, st);
        l->scope = vg_get_variable_scope(g);
        vg_variable_scope_pop(g);
        if (!l->scope) return fail(g, st);
    }
    vg_variable_scope_opts o = {0};
    o.no_name_scope = true;
    o.reuse = first ? VG_REUSE_INHERIT : VG_REUSE_TRUE;
    if (!vg_variable_scope_enter(g, l->scope, &o)) return fail(g, st);
    const char *ons = vg_vscope_original_name_scope(l->scope);
    vg_graph_push_scope(g, *ons ? ons : "/");
    if (first) {
        l->g = g;
        l->I = xs.dims[2];
        build(l, g);
    }
    vg_output h, c;
    if (initial_state) {
        h = initial_state[0];
        c = l->NG == 4 ? initial_state[1] : vg_const_fill(g, VG_FLOAT, (int64_t[]){0}, 1, 0.0, "Const");
    } else {
        /* zeros [num_layers * dirs, batch, num_units] */
        vg_output batch = vg_gather(g, vg_shape_op(g, inputs, VG_INT32, NULL), i32(g, 1), 0, NULL);
        vg_output dims = vg_pack(g, (vg_output[]){i32(g, l->L * l->D), batch, i32(g, l->H)}, 3, 0, NULL);
        h = c = vg_fill(g, dims, vg_const_f32(g, 0.0f, NULL), "zeros");
        if (l->NG != 4) c = vg_const_fill(g, VG_FLOAT, (int64_t[]){0}, 1, 0.0, "Const"); /* TF's constant([]) */
    }
    vg_op *op = NULL;
    if (vg_graph_status(g, NULL) == VG_OK) {
        vg_cudnn_rnn_attrs a = layer_attrs(l, training);
        op = vg_cudnn_rnn(g, inputs, h, c, l->var.read, &a, NULL);
    }
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    if (!op) return fail(g, st);
    *outputs = vg_out(op, 0);
    final_state[0] = vg_out(op, 1);
    if (l->NG == 4) final_state[1] = vg_out(op, 2);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* CudnnCompatibleLSTMCell */

vg_rnn_cell *vg_cudnn_compatible_lstm_cell_new(int64_t num_units) {
    if (num_units < 1) return NULL;
    vg_rnn_cell *c = vg_lstm_block_cell_new(num_units, 0.0f, 0.0f, false);
    if (c) vg_rnn_cell_set_name(c, "cudnn_compatible_lstm_cell");
    return c;
}

/* ------------------------------------------------------------------------ */
/* CudnnCompatibleGRUCell: a user-defined cell (vigil/rnn.h). Its variables' reads live in
 * the graph's user data under the variable scope its build and calls run in (the
 * driver's), so the cell itself holds nothing but num_units. */

typedef struct gru_vars {
    vg_output gk, gb, ik, ib, hk, hb; /* gates, input_projection, hidden_projection */
} gru_vars;

static void gru_vars_free(void *p) { vg_free(p); }

static void gru_key(vg_graph *g, char *key, size_t n) {
    snprintf(key, n, "vigil.cudnn_compatible_gru_cell:%s", vg_variable_scope_name(g));
}

static vg_output gru_var(vg_graph *g, const char *name, int64_t d0, int64_t d1, vg_initializer init, vg_dtype dt) {
    int64_t dims[2] = {d0, d1};
    vg_variable v = vg_get_variable(g, name, dt, dims, d1 > 0 ? 2 : 1, init, VG_VAR_TRAINABLE);
    return v.var ? v.read : (vg_output){NULL, 0};
}

static vg_code gru_build(vg_graph *g, int64_t depth, vg_dtype dt, void *user) {
    int64_t H = (int64_t)(intptr_t)user;
    char key[700];
    gru_key(g, key, sizeof key);
    if (vg_graph_user_data(g, key))
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                  "CudnnCompatibleGRUCell: a second one built in variable scope '%s'; give each its "
                                  "own variable scope (MultiRNNCell and the RNN drivers do)",
                                  vg_variable_scope_name(g));
    gru_vars *v = vg_calloc(1, sizeof *v);
    if (!v || vg_graph_set_user_data(g, key, v, gru_vars_free) != VG_OK) {
        vg_free(v);
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "CudnnCompatibleGRUCell: out of memory");
    }
    /* Layer naming: tf.variable_scope(None, default_name="cudnn_compatible_gru_cell") */
    vg_variable_scope_opts o = {0};
    o.default_name = "cudnn_compatible_gru_cell";
    if (!vg_variable_scope_push(g, NULL, &o)) return vg_graph_status(g, NULL);
    if (vg_variable_scope_push(g, "gates", NULL)) { /* bias: ones, "not to reset and not update" */
        v->gk = gru_var(g, "kernel", depth + H, 2 * H, vg_init_default(), dt);
        v->gb = gru_var(g, "bias", 2 * H, 0, vg_init_constant(1.0), dt);
        vg_variable_scope_pop(g);
    }
    if (vg_variable_scope_push(g, "candidate", NULL)) {
        if (vg_variable_scope_push(g, "input_projection", NULL)) {
            v->ik = gru_var(g, "kernel", depth, H, vg_init_default(), dt);
            v->ib = gru_var(g, "bias", H, 0, vg_init_constant(0.0), dt);
            vg_variable_scope_pop(g);
        }
        if (vg_variable_scope_push(g, "hidden_projection", NULL)) {
            v->hk = gru_var(g, "kernel", H, H, vg_init_default(), dt);
            v->hb = gru_var(g, "bias", H, 0, vg_init_constant(0.0), dt);
            vg_variable_scope_pop(g);
        }
        vg_variable_scope_pop(g);
    }
    vg_variable_scope_pop(g);
    return vg_graph_status(g, NULL);
}

static vg_code gru_call(vg_graph *g, vg_output input, const vg_output *state, vg_output *output, vg_output *new_state,
                        void *user) {
    int64_t H = (int64_t)(intptr_t)user;
    char key[700];
    gru_key(g, key, sizeof key);
    const gru_vars *v = vg_graph_user_data(g, key);
    if (!v) return vg_graph_set_error(g, VG_INTERNAL, "CudnnCompatibleGRUCell: no variables in scope '%s'", vg_variable_scope_name(g));
    vg_output h = state[0];
    /* gates: sigmoid([x, h] W + b), r and u */
    vg_output xh = vg_concat_c(g, (vg_output[]){input, h}, 2, 1, NULL);
    vg_output value = vg_sigmoid(g, vg_bias_add(g, vg_matmul(g, xh, v->gk, false, false, NULL), v->gb, NULL), NULL);
    vg_op *ru = vg_split_v(g, value, (int32_t[]){(int32_t)H, (int32_t)H}, 2, 1, NULL);
    if (!ru) return vg_graph_status(g, NULL);
    vg_output r = vg_out(ru, 0), u = vg_out(ru, 1);
    /* candidate: tanh(x W_i + b_i + r * (h W_h + b_h)) */
    vg_output hi = vg_bias_add(g, vg_matmul(g, input, v->ik, false, false, NULL), v->ib, NULL);
    vg_output hh = vg_mul(g, r, vg_bias_add(g, vg_matmul(g, h, v->hk, false, false, NULL), v->hb, NULL), NULL);
    vg_output c = vg_tanh(g, vg_add(g, hi, hh, NULL), NULL);
    /* new_h = u * h + (1 - u) * c */
    vg_output one_minus_u = vg_sub(g, vg_const_f32(g, 1.0f, NULL), u, NULL);
    vg_output nh = vg_add(g, vg_mul(g, u, h, NULL), vg_mul(g, one_minus_u, c, NULL), NULL);
    *output = nh;
    new_state[0] = nh;
    return vg_graph_status(g, NULL);
}

vg_rnn_cell *vg_cudnn_compatible_gru_cell_new(int64_t num_units) {
    if (num_units < 1) return NULL;
    vg_shape sh = vg_shape_make((int64_t[]){num_units}, 1);
    vg_rnn_cell_def def = {0};
    def.name = "cudnn_compatible_gru_cell";
    def.state_count = 1;
    def.state_shapes = &sh;
    def.output_size = num_units;
    def.build = gru_build;
    def.call = gru_call;
    def.user = (void *)(intptr_t)num_units;
    return vg_custom_rnn_cell_new(&def);
}
