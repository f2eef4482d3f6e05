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

#define MAX_PARTS 256

typedef struct cudnn_saveable {
    vg_op *var;              /* the opaque VariableV2 */
    int L, D;
    int64_t H, I;
    char input_mode[16];
    int nparts;              /* 2 per pseudo-layer: kernel, bias (TF's order: weights then biases) */
    vg_op *parts[MAX_PARTS]; /* the saved tensors' ops */
    vg_output restored[MAX_PARTS];
    int seen;
} cudnn_saveable;

static vg_cudnn_rnn_attrs attrs_of(const cudnn_saveable *s) {
    vg_cudnn_rnn_attrs a = {0};
    a.input_mode = s->input_mode;
    a.direction = s->D == 2 ? "bidirectional" : "unidirectional";
    return a;
}

static int64_t in_size(const cudnn_saveable *s, int l) { return l == 0 ? s->I : s->D * s->H; }

/* cuDNN gate j (i, f, c, o) for TF position k (i, c, f, o) and back: the same swap */
static const int k_swap[4] = {0, 2, 1, 3};

/* The reverse of the saved form: cuDNN's 8 weights and 8 biases of pseudo-layer p from
 * the TF kernel [in + H, 4H] and bias [4H]. */
static void tf_to_cudnn(vg_graph *g, const cudnn_saveable *s, int p, vg_output kernel, vg_output bias, vg_output *w,
                        vg_output *b) {
    int32_t in = (int32_t)in_size(s, p / s->D), H = (int32_t)s->H;
    vg_output wt = vg_transpose_c(g, kernel, (int32_t[]){1, 0}, 2, NULL);
    vg_op *gates = vg_split_v(g, wt, (int32_t[]){H, H, H, H}, 4, 0, NULL);
    vg_op *bs = vg_split_v(g, bias, (int32_t[]){H, H, H, H}, 4, 0, NULL);
    if (!gates || !bs) return;
    vg_output half = vg_const_f32(g, 0.5f, NULL);
    for (int k = 0; k < 4; k++) {
        int j = k_swap[k];
        vg_op *wr = vg_split_v(g, vg_out(gates, k), (int32_t[]){in, H}, 2, 1, NULL);
        if (!wr) return;
        w[j] = vg_out(wr, 0);
        w[4 + j] = vg_out(wr, 1);
        b[j] = b[4 + j] = vg_mul(g, vg_out(bs, k), half, NULL);
    }
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
    if (!s->restored[k].op) s->seen++;
    s->restored[k] = restored;
    if (s->seen < s->nparts) return vg_identity(g, restored, NULL).op;
    /* the last part: CudnnOpaqueParamsSaveable.restore */
    int P = s->L * s->D, n = 8 * P;
    vg_output *w = vg_calloc((size_t)(2 * n), sizeof *w), *b = w ? w + n : NULL;
    vg_op *assign = NULL;
    if (!w) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "cudnn saveable: out of memory");
        return NULL;
    }
    for (int p = 0; p < P; p++) tf_to_cudnn(g, s, p, s->restored[p], s->restored[P + p], w + 8 * p, b + 8 * p);
    vg_cudnn_rnn_attrs a = attrs_of(s);
    vg_output params = vg_cudnn_rnn_canonical_to_params(g, i32(g, s->L), i32(g, s->H), i32(g, s->I), w, b, n, &a, NULL);
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
    return assign;
}

/* Builds the saved tensors from the variable's value and registers them. */
static vg_code make_saveable(vg_graph *g, cudnn_saveable *s, vg_output value, const char *scope, vg_op **parts) {
    int P = s->L * s->D, n = 8 * P;
    vg_cudnn_rnn_attrs a = attrs_of(s);
    vg_op *can = vg_cudnn_rnn_params_to_canonical(g, i32(g, s->L), i32(g, s->H), i32(g, s->I), value, n, &a, NULL);
    if (!can) return vg_graph_status(g, NULL);
    char key[1024];
    for (int p = 0; p < P; p++) {
        vg_output wg[4], bg[4];
        for (int k = 0; k < 4; k++) {
            int j = k_swap[k];
            wg[k] = vg_concat_c(g, (vg_output[]){vg_out(can, 8 * p + j), vg_out(can, 8 * p + 4 + j)}, 2, 1, NULL);
            bg[k] = vg_add(g, vg_out(can, n + 8 * p + j), vg_out(can, n + 8 * p + 4 + j), NULL);
        }
        vg_output kernel = vg_transpose_c(g, vg_concat_c(g, wg, 4, 0, NULL), (int32_t[]){1, 0}, 2, NULL);
        vg_output bias = vg_concat_c(g, bg, 4, 0, NULL);
        if (vg_graph_status(g, NULL) != VG_OK) return vg_graph_status(g, NULL);
        s->parts[p] = kernel.op;
        s->parts[P + p] = bias.op;
        int l = p / s->D;
        char prefix[600];
        if (s->D == 1)
            snprintf(prefix, sizeof prefix, "%s%srnn/multi_rnn_cell/cell_%d/cudnn_compatible_lstm_cell", scope,
                     *scope ? "/" : "", l);
        else
            snprintf(prefix, sizeof prefix,
                     "%s%sstack_bidirectional_rnn/cell_%d/bidirectional_rnn/%s/cudnn_compatible_lstm_cell", scope,
                     *scope ? "/" : "", l, p % 2 ? "bw" : "fw");
        snprintf(key, sizeof key, "%s/kernel", prefix);
        if (vg__register_saveable(g, kernel, key, saveable_restore, s)) return vg_graph_status(g, NULL);
        snprintf(key, sizeof key, "%s/bias", prefix);
        if (vg__register_saveable(g, bias, key, saveable_restore, s)) return vg_graph_status(g, NULL);
    }
    s->nparts = 2 * P;
    for (int i = 0; i < s->nparts; i++) parts[i] = s->parts[i];
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* the layer */

struct vg_cudnn_lstm {
    int L, D;
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

vg_cudnn_lstm *vg_cudnn_lstm_new(const vg_cudnn_lstm_options *o) {
    if (!o || o->num_layers < 1 || o->num_units < 1 || o->num_layers * 2 * 2 > MAX_PARTS) return NULL;
    const char *dir = o->direction ? o->direction : "unidirectional";
    const char *im = o->input_mode ? o->input_mode : "linear_input";
    if (strcmp(dir, "unidirectional") && strcmp(dir, "bidirectional")) return NULL;
    if (strcmp(im, "linear_input") && strcmp(im, "skip_input") && strcmp(im, "auto_select")) return NULL;
    vg_cudnn_lstm *l = vg_calloc(1, sizeof *l);
    if (!l || !(l->name = vg__train_strdup(o->name ? o->name : "cudnn_lstm"))) {
        vg_free(l);
        return NULL;
    }
    l->L = o->num_layers;
    l->D = strcmp(dir, "bidirectional") ? 1 : 2;
    l->H = o->num_units;
    snprintf(l->input_mode, sizeof l->input_mode, "%s", im);
    l->dropout = o->dropout;
    l->seed = o->seed;
    l->kinit = o->kernel_initializer ? *o->kernel_initializer : vg_init_glorot_uniform(o->seed);
    l->binit = o->bias_initializer ? *o->bias_initializer : vg_init_constant(0.0);
    return l;
}

void vg_cudnn_lstm_free(vg_cudnn_lstm *l) {
    if (!l) return;
    vg_free(l->name);
    vg_free(l);
}

vg_output vg_cudnn_lstm_opaque_kernel(const vg_cudnn_lstm *l) { return l && l->var.var ? l->var.ref : (vg_output){NULL, 0}; }
int vg_cudnn_lstm_num_saveables(const vg_cudnn_lstm *l) { return l ? l->nparts : 0; }
vg_output vg_cudnn_lstm_saveable(const vg_cudnn_lstm *l, int i) {
    return l && i >= 0 && i < l->nparts ? vg_out(l->parts[i], 0) : (vg_output){NULL, 0};
}

static vg_cudnn_rnn_attrs layer_attrs(const vg_cudnn_lstm *l, bool training) {
    vg_cudnn_rnn_attrs a = {0};
    a.input_mode = l->input_mode;
    a.direction = l->D == 2 ? "bidirectional" : "unidirectional";
    a.dropout = l->dropout;
    a.seed = l->seed;
    a.inference = !training;
    return a;
}

static void saveable_free(void *p) { vg_free(p); }

/* build(): in the layer's variable scope (entered by the caller) */
static vg_code build(vg_cudnn_lstm *l, vg_graph *g) {
    int P = l->L * l->D, n = 8 * P;
    vg_output *w = vg_calloc((size_t)(2 * n), sizeof *w), *b = w ? w + n : NULL;
    if (!w) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "CudnnLSTM: out of memory");
    /* canonical_weight_shapes / canonical_bias_shapes, each drawn by its initializer */
    for (int k = 0; k < n; k++) {
        int64_t wd[2] = {l->H, k % 8 < 4 ? (k / 8 / l->D == 0 ? l->I : l->D * l->H) : l->H}, bd[1] = {l->H};
        w[k] = vg_initializer_build(g, l->kinit, VG_FLOAT, wd, 2);
        b[k] = vg_initializer_build(g, l->binit, VG_FLOAT, bd, 1);
    }
    vg_cudnn_rnn_attrs a = layer_attrs(l, true);
    vg_output opaque = vg_cudnn_rnn_canonical_to_params(g, i32(g, l->L), i32(g, l->H), i32(g, l->I), w, b, n, &a, NULL);
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
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "CudnnLSTM: out of memory");
    }
    s->var = l->var.var;
    s->L = l->L, s->D = l->D, s->H = l->H, s->I = l->I;
    memcpy(s->input_mode, l->input_mode, sizeof s->input_mode);
    if (make_saveable(g, s, l->var.read, vg_variable_scope_name(g), l->parts)) return vg_graph_status(g, NULL);
    l->nparts = s->nparts;
    return VG_OK;
}

static vg_code fail(vg_graph *g, vg_status *st) {
    vg_code c = vg_graph_status(g, st);
    return c;
}

vg_code vg_cudnn_lstm_call(vg_cudnn_lstm *l, vg_graph *g, vg_output inputs, const vg_output *initial_state,
                          bool training, vg_output *outputs, vg_output *final_state, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "CudnnLSTM: NULL graph");
    if (vg_graph_status(g, NULL) != VG_OK) return fail(g, st);
    if (!l || !inputs.op || !outputs || !final_state) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "CudnnLSTM: NULL layer, inputs, outputs or final_state");
        return fail(g, st);
    }
    vg_shape xs = vg_output_shape(inputs);
    if (xs.ndims != 3 || xs.dims[2] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "CudnnLSTM: inputs must be rank 3 [time, batch, depth] with a known depth");
        return fail(g, st);
    }
    if (l->g && l->g != g) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "CudnnLSTM %s: called in another graph than its first call's", l->name);
        return fail(g, st);
    }
    if (l->g && xs.dims[2] != l->I) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "CudnnLSTM %s: inputs depth %lld, but the layer was built for %lld",
                           l->name, (long long)xs.dims[2], (long long)l->I);
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
        c = initial_state[1];
    } else {
        /* zeros [num_layers * dirs, batch, num_units] */
        vg_output batch = vg_gather(g, vg_shape_op(g, inputs, VG_INT32, NULL), i32(g, 1), 0, NULL);
        vg_output dims = vg_pack(g, (vg_output[]){i32(g, l->L * l->D), batch, i32(g, l->H)}, 3, 0, NULL);
        h = c = vg_fill(g, dims, vg_const_f32(g, 0.0f, NULL), "zeros");
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
    final_state[1] = vg_out(op, 2);
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
