/*
 * seq2seq_attention.c - tf.contrib.seq2seq's BahdanauAttention, LuongAttention and
 * AttentionWrapper (TF 1.15 attention_wrapper.py) on the public API. The wrapper is a
 * custom RNN cell (vg_custom_rnn_cell_new), so dynamic_rnn and dynamic_decode take it.
 * Semantics and names in vigil/seq2seq.h.
 */
#include "vigil/seq2seq.h"
#include "vigil/ops_ext.h"
#include "vigil/variable_scope.h"
#include "vigil/train_lib.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vg_output none(void) { return (vg_output){NULL, 0}; }

struct vg_attention_mechanism {
    bool luong;
    bool normalize, scale;
    int64_t num_units;
    vg_output values, keys, seq; /* seq: memory_sequence_length as int32 or none */
    int64_t max_time, depth;
    vg_layer *query_layer; /* Bahdanau */
    vg_probability_fn prob_fn;
    void *prob_user;
    double mask_value;
};

void vg_attention_mechanism_set_probability_fn(vg_attention_mechanism *m, vg_probability_fn fn, void *user) {
    if (!m) return;
    m->prob_fn = fn;
    m->prob_user = user;
}

void vg_attention_mechanism_set_score_mask_value(vg_attention_mechanism *m, double value) {
    if (m) m->mask_value = value;
}

vg_output vg_hardmax(vg_graph *g, vg_output logits, void *user) {
    (void)user;
    if (!g || vg_graph_status(g, NULL) != VG_OK) return none();
    vg_shape s = logits.op ? vg_output_shape(logits) : vg_shape_unknown();
    if (s.ndims < 1 || s.dims[s.ndims - 1] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "hardmax: the logits' last dimension must be known");
        return none();
    }
    vg_graph_push_scope(g, "Hardmax");
    vg_output am = vg_argmax(g, logits, s.ndims - 1, VG_INT32, "ArgMax");
    vg_output oh = vg_one_hot(g, am, (int)s.dims[s.ndims - 1], 1.0f, 0.0f, "one_hot");
    if (vg_output_dtype(logits) != VG_FLOAT) oh = vg_cast(g, oh, vg_output_dtype(logits), "Cast");
    vg_graph_pop_scope(g);
    return oh;
}

static vg_attention_mechanism *mechanism_new(vg_graph *g, bool luong, int64_t num_units, vg_output memory,
                                             vg_output memory_sequence_length, bool flag, const char *name) {
    const char *what = luong ? "LuongAttention" : "BahdanauAttention";
    if (!g || vg_graph_status(g, NULL) != VG_OK) return NULL;
    vg_shape ms = memory.op ? vg_output_shape(memory) : vg_shape_unknown();
    if (num_units <= 0 || ms.ndims != 3 || ms.dims[1] < 0 || ms.dims[2] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "%s: needs num_units > 0 and a memory [batch, max_time, depth] with max_time and depth known",
                           what);
        return NULL;
    }
    if (memory_sequence_length.op && vg_output_shape(memory_sequence_length).ndims != 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: memory_sequence_length must be a vector", what);
        return NULL;
    }
    vg_attention_mechanism *m = calloc(1, sizeof *m);
    if (!m) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        return NULL;
    }
    m->luong = luong;
    m->mask_value = -INFINITY;
    m->normalize = !luong && flag;
    m->scale = luong && flag;
    m->num_units = num_units;
    m->max_time = ms.dims[1];
    m->depth = ms.dims[2];
    if (!luong) {
        vg_layer_config qc = {.kind = VG_LAYER_DENSE};
        qc.name = "query_layer";
        qc.units = num_units;
        qc.no_bias = true;
        m->query_layer = vg_layer_new(&qc);
        if (!m->query_layer) {
            free(m);
            vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
            return NULL;
        }
    }
    /* with ops.name_scope(name, "BaseAttentionMechanismInit"): values = _prepare_memory
     * (memory * sequence_mask), keys = memory_layer(values) */
    char scope[256], ns[260];
    vg_graph_unique_name(g, name && *name ? name : "BaseAttentionMechanismInit", scope, sizeof scope);
    snprintf(ns, sizeof ns, "%s/", scope);
    vg_graph_push_scope(g, ns);
    vg_output values = vg_identity(g, memory, "memory");
    if (memory_sequence_length.op) {
        m->seq = vg_identity(g, vg_output_dtype(memory_sequence_length) == VG_INT32
                                    ? memory_sequence_length
                                    : vg_cast(g, memory_sequence_length, VG_INT32, NULL),
                             "memory_sequence_length");
        vg_output mask = vg_sequence_mask(g, m->seq, vg_const_i32(g, (int32_t)m->max_time, "maxlen"),
                                          vg_output_dtype(memory), "SequenceMask");
        values = vg_mul(g, values, vg_expand_dims(g, mask, 2, "ExpandDims"), "mul");
    }
    vg_graph_pop_scope(g);
    m->values = values;
    vg_layer_config mc = {.kind = VG_LAYER_DENSE};
    mc.name = "memory_layer";
    mc.units = num_units;
    mc.no_bias = true;
    vg_layer *ml = vg_layer_new(&mc);
    if (ml) {
        m->keys = vg_layer_apply(ml, g, values, none());
        vg_layer_free(ml);
    } else {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
    }
    if (vg_graph_status(g, NULL) != VG_OK) {
        vg_attention_mechanism_free(m);
        return NULL;
    }
    return m;
}

vg_attention_mechanism *vg_bahdanau_attention_new(vg_graph *g, int64_t num_units, vg_output memory,
                                                  vg_output memory_sequence_length, bool normalize, const char *name) {
    return mechanism_new(g, false, num_units, memory, memory_sequence_length, normalize, name);
}

vg_attention_mechanism *vg_luong_attention_new(vg_graph *g, int64_t num_units, vg_output memory,
                                               vg_output memory_sequence_length, bool scale, const char *name) {
    return mechanism_new(g, true, num_units, memory, memory_sequence_length, scale, name);
}

void vg_attention_mechanism_free(vg_attention_mechanism *m) {
    if (!m) return;
    vg_layer_free(m->query_layer);
    free(m);
}

vg_output vg_attention_mechanism_keys(const vg_attention_mechanism *m) { return m ? m->keys : none(); }
vg_output vg_attention_mechanism_values(const vg_attention_mechanism *m) { return m ? m->values : none(); }

/* _maybe_mask_score + softmax */
static vg_output probability(vg_graph *g, const vg_attention_mechanism *m, vg_output score) {
    if (m->seq.op) {
        vg_output mask = vg_sequence_mask(g, m->seq, vg_const_i32(g, (int32_t)m->max_time, "maxlen"), VG_BOOL,
                                          "SequenceMask");
        vg_output ninf = vg_mul(g, vg_const_fill(g, vg_output_dtype(score), NULL, 0, m->mask_value, "mul/x"),
                                vg_ones_like(g, score, "ones_like"), "mul");
        score = vg_select(g, mask, score, ninf, "Select");
    }
    if (m->prob_fn) {
        vg_output a = m->prob_fn(g, score, m->prob_user);
        if (!a.op && vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "attention mechanism: probability_fn gave no tensor");
        return a;
    }
    return vg_softmax(g, score, "Softmax");
}

vg_code vg_attention_mechanism_call(vg_attention_mechanism *m, vg_graph *g, vg_output query, vg_output *alignments) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (vg_graph_status(g, NULL) != VG_OK) return vg_graph_status(g, NULL);
    if (!m || !query.op || !alignments)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "attention mechanism: needs a mechanism, a query and "
                                                          "an alignments pointer");
    vg_shape qs = vg_output_shape(query);
    if (qs.ndims != 2 || qs.dims[1] < 0)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "attention mechanism: the query must be [batch, depth] with "
                                                          "depth known");
    if (m->luong && qs.dims[1] != m->num_units)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                  "Incompatible or unknown inner dimensions between query and keys.  Query (%lld) has "
                                  "units: %lld.  Keys have units: %lld.  Perhaps you need to set num_units to the keys' "
                                  "dimension (%lld)?",
                                  (long long)qs.dims[1], (long long)qs.dims[1], (long long)m->num_units,
                                  (long long)m->num_units);
    vg_variable_scope_opts vo;
    memset(&vo, 0, sizeof vo);
    vo.default_name = m->luong ? "luong_attention" : "bahdanau_attention";
    if (!vg_variable_scope_push(g, NULL, &vo)) return vg_graph_status(g, NULL);
    vg_dtype dt = vg_output_dtype(query);
    int64_t U = m->num_units;
    vg_output score;
    if (m->luong) {
        /* _luong_score: squeeze(matmul(expand_dims(query, 1), keys, transpose_b)) [* g] */
        vg_output q = vg_expand_dims(g, query, 1, "ExpandDims");
        score = vg_squeeze(g, vg_batch_matmul(g, q, m->keys, false, true, "MatMul"), (int32_t[]){1}, 1, "Squeeze");
        if (m->scale) {
            vg_variable gv = vg_get_variable(g, "attention_g", dt, NULL, 0, vg_init_ones(), VG_VAR_TRAINABLE);
            score = vg_mul(g, gv.read, score, "mul");
        }
    } else {
        /* _bahdanau_score: reduce_sum(v * tanh(keys + expand_dims(query_layer(query), 1)), [2]) */
        vg_output pq = vg_expand_dims(g, vg_layer_apply(m->query_layer, g, query, none()), 1, "ExpandDims");
        vg_variable v = vg_get_variable(g, "attention_v", dt, &U, 1, vg_init_default(), VG_VAR_TRAINABLE);
        vg_output sum;
        if (m->normalize) {
            vg_variable gv = vg_get_variable(g, "attention_g", dt, NULL, 0, vg_init_constant(sqrt(1.0 / (double)U)),
                                             VG_VAR_TRAINABLE);
            vg_variable b = vg_get_variable(g, "attention_b", dt, &U, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
            vg_output normed = vg_mul(
                g, vg_mul(g, gv.read, v.read, "mul"),
                vg_rsqrt(g, vg_reduce_sum(g, vg_square(g, v.read, "Square"), NULL, -1, false, "Sum"), "Rsqrt"),
                "mul_1");
            sum = vg_mul(g, normed, vg_tanh(g, vg_add(g, vg_add(g, m->keys, pq, "add"), b.read, "add_1"), "Tanh"),
                         "mul_2");
        } else {
            sum = vg_mul(g, v.read, vg_tanh(g, vg_add(g, m->keys, pq, "add"), "Tanh"), "mul");
        }
        score = vg_reduce_sum(g, sum, (int32_t[]){2}, 1, false, "Sum");
    }
    vg_variable_scope_pop(g);
    *alignments = probability(g, m, score);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* AttentionWrapper */

struct vg_attention_wrapper {
    vg_rnn_cell *self; /* the custom cell */
    vg_rnn_cell *cell;
    vg_attention_mechanism *m;
    int64_t attention_size;
    bool output_attention;
    int ncell;
    char name[64];
    vg_layer *attention_layer;
    vg_cell_input_fn cell_input_fn;
    void *cell_input_fn_user;
    vg_vscope *scope;
    vg_graph *scope_graph;
    int64_t history_steps; /* alignment_history: > 0, the buffer's steps */
};

static vg_code wrapper_call(vg_graph *g, vg_output inputs, const vg_output *state, vg_output *output,
                            vg_output *new_state, void *user) {
    vg_attention_wrapper *w = user;
    int n = w->ncell;
    /* the Layer scope: captured at the first call in the current variable scope
     * ("decoder/attention_wrapper"), re-entered later */
    if (!w->scope || w->scope_graph != g) {
        vg_variable_scope_opts vo;
        memset(&vo, 0, sizeof vo);
        vo.default_name = w->name;
        vo.no_name_scope = true;
        if (!vg_variable_scope_push(g, NULL, &vo)) return vg_graph_status(g, NULL);
        w->scope = vg_get_variable_scope(g);
        w->scope_graph = g;
    } else {
        vg_variable_scope_opts vo;
        memset(&vo, 0, sizeof vo);
        vo.no_name_scope = true;
        vo.reuse = VG_REUSE_TRUE; /* Layer.__call__: reuse=self.built */
        if (!vg_variable_scope_enter(g, w->scope, &vo)) return vg_graph_status(g, NULL);
    }
    vg_output attention = state[n];
    /* cell_input_fn, by default concat([inputs, attention], -1) */
    vg_output cin = w->cell_input_fn ? w->cell_input_fn(g, inputs, attention, w->cell_input_fn_user)
                                     : vg_concat_c(g, (vg_output[]){inputs, attention}, 2, 1, "concat");
    if (!cin.op) {
        vg_variable_scope_pop(g);
        return vg_graph_status(g, NULL) != VG_OK
                   ? vg_graph_status(g, NULL)
                   : vg_graph_set_error(g, VG_INVALID_ARGUMENT, "AttentionWrapper: cell_input_fn gave no tensor");
    }
    vg_output cell_out = none();
    vg_code rc = vg_rnn_cell_call(w->cell, g, cin, state, &cell_out, new_state);
    vg_output align = none();
    if (rc == VG_OK) rc = vg_attention_mechanism_call(w->m, g, cell_out, &align);
    if (rc == VG_OK) {
        /* _compute_attention: context = squeeze(matmul(expand_dims(alignments, 1), values), [1]) */
        vg_output ctx = vg_squeeze(
            g, vg_batch_matmul(g, vg_expand_dims(g, align, 1, "ExpandDims"), w->m->values, false, false, "MatMul"),
            (int32_t[]){1}, 1, "Squeeze");
        vg_output att = ctx;
        if (w->attention_layer)
            att = vg_layer_apply(w->attention_layer, g, vg_concat_c(g, (vg_output[]){cell_out, ctx}, 2, 1, "concat_1"),
                                 none());
        new_state[n] = att;
        new_state[n + 1] = align;
        new_state[n + 2] = align; /* attention_state: the alignments (Bahdanau, Luong) */
        if (w->history_steps > 0) {
            /* time + 1, and alignment_history.write(time, alignments): row `time` of the
             * [batch, steps, max_time] buffer; a step past the buffer fails (Assert) */
            vg_output t = state[n + 3], hist = state[n + 4];
            vg_dtype dt = vg_output_dtype(align);
            vg_output ti = vg_cast(g, t, VG_INT32, "history_time");
            vg_output lim = vg_const_i32(g, (int32_t)w->history_steps, "history_steps");
            vg_op *chk = vg_assert(
                g, vg_reduce_all(g, vg_less(g, ti, lim, "Less"), NULL, -1, false, "All"),
                (vg_output[]){vg_const_string(g, "AttentionWrapper alignment_history: more decoding steps than "
                                                 "alignment_history_max_steps",
                                              "history_msg")},
                1, 3, "history_assert");
            vg_graph_push_control_deps(g, &chk, 1);
            vg_output oh = vg_cast(g, vg_one_hot(g, ti, (int)w->history_steps, 1.0f, 0.0f, "history_one_hot"), dt,
                                   "history_cast");
            new_state[n + 4] = vg_add(g, hist,
                                      vg_mul(g, vg_expand_dims(g, oh, 2, "history_expand"),
                                             vg_expand_dims(g, align, 1, "history_expand_1"), "history_mul"),
                                      "history_add");
            vg_graph_pop_control_deps(g);
            new_state[n + 3] = vg_add(g, t, vg_cast(g, vg_const_f32(g, 1.0f, "one"), vg_output_dtype(t), NULL),
                                      "time_add");
        }
        *output = w->output_attention ? att : cell_out;
    }
    vg_variable_scope_pop(g);
    return rc != VG_OK ? rc : vg_graph_status(g, NULL);
}

vg_attention_wrapper *vg_attention_wrapper_new(vg_rnn_cell *cell, vg_attention_mechanism *m,
                                               const vg_attention_wrapper_options *o) {
    vg_attention_wrapper_options d = {0};
    if (!o) o = &d;
    if (!cell) return NULL;
    if (!m || o->attention_layer_size < 0 || (o->alignment_history && o->alignment_history_max_steps <= 0)) {
        vg_rnn_cell_free(cell);
        return NULL;
    }
    vg_attention_wrapper *w = calloc(1, sizeof *w);
    int n = vg_rnn_cell_state_count(cell);
    vg_shape *shapes = calloc((size_t)n + 5, sizeof(vg_shape));
    if (!w || !shapes) {
        free(w);
        free(shapes);
        vg_rnn_cell_free(cell);
        return NULL;
    }
    w->cell = cell;
    w->m = m;
    w->ncell = n;
    w->output_attention = !o->no_output_attention;
    w->cell_input_fn = o->cell_input_fn;
    w->cell_input_fn_user = o->cell_input_fn_user;
    w->attention_size = o->attention_layer_size > 0 ? o->attention_layer_size : m->depth;
    snprintf(w->name, sizeof w->name, "%s", o->name && *o->name ? o->name : "attention_wrapper");
    if (o->attention_layer_size > 0) {
        vg_layer_config lc = {.kind = VG_LAYER_DENSE};
        lc.name = "attention_layer";
        lc.units = o->attention_layer_size;
        lc.no_bias = true;
        w->attention_layer = vg_layer_new(&lc);
    }
    for (int i = 0; i < n; i++) shapes[i] = vg_rnn_cell_state_shape(cell, i);
    shapes[n] = vg_shape_make(&w->attention_size, 1);
    shapes[n + 1] = vg_shape_make(&m->max_time, 1);
    shapes[n + 2] = vg_shape_make(&m->max_time, 1);
    if (o->alignment_history) { /* time [], alignment_history [steps, max_time] per example */
        w->history_steps = o->alignment_history_max_steps;
        shapes[n + 3] = vg_shape_make(NULL, 0);
        shapes[n + 4] = vg_shape_make((const int64_t[]){w->history_steps, m->max_time}, 2);
    }
    vg_rnn_cell_def def = {w->name, n + (o->alignment_history ? 5 : 3), shapes,
                           w->output_attention ? w->attention_size : vg_rnn_cell_output_size(cell),
                           NULL, wrapper_call, w};
    w->self = (o->attention_layer_size > 0 && !w->attention_layer) ? NULL : vg_custom_rnn_cell_new(&def);
    free(shapes);
    if (!w->self) {
        vg_attention_wrapper_free(w);
        return NULL;
    }
    return w;
}

vg_rnn_cell *vg_attention_wrapper_cell(vg_attention_wrapper *w) { return w ? w->self : NULL; }

void vg_attention_wrapper_free(vg_attention_wrapper *w) {
    if (!w) return;
    vg_rnn_cell_free(w->self);
    vg_rnn_cell_free(w->cell);
    vg_layer_free(w->attention_layer);
    free(w);
}

vg_code vg_attention_wrapper_zero_state(vg_attention_wrapper *w, vg_graph *g, int64_t batch_size,
                                        vg_output batch_tensor, vg_dtype dt, const vg_output *cell_state,
                                        vg_output *state) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (!w || !state) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "AttentionWrapper zero_state: NULL argument");
    vg_graph_push_scope(g, "AttentionWrapperZeroState");
    vg_code rc = vg_rnn_cell_zero_state(w->self, g, batch_size, batch_tensor, dt, state);
    vg_graph_pop_scope(g);
    if (rc == VG_OK && cell_state) /* .clone(cell_state=...) */
        for (int i = 0; i < w->ncell; i++) state[i] = cell_state[i];
    return rc != VG_OK ? rc : vg_graph_status(g, NULL);
}

vg_output vg_attention_wrapper_alignment_history(vg_attention_wrapper *w, vg_graph *g, const vg_output *state,
                                                 const char *name) {
    if (!g) return none();
    if (!w || !state || w->history_steps <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "AttentionWrapper alignment_history: %s",
                           !w || !state ? "NULL argument" : "the wrapper was made without alignment_history");
        return none();
    }
    int n = w->ncell;
    vg_graph_push_scope(g, name ? name : "alignment_history");
    /* alignment_history.stack(): rows 0 .. time of the buffer, time major */
    vg_output steps = vg_cast(g, vg_reduce_max(g, state[n + 3], NULL, -1, false, "Max"), VG_INT32, "steps");
    vg_output size = vg_concat_c(g,
                                 (vg_output[]){vg_const_i32_vec(g, (const int32_t[]){-1}, 1, NULL),
                                               vg_reshape_c(g, steps, (const int64_t[]){1}, 1, NULL),
                                               vg_const_i32_vec(g, (const int32_t[]){-1}, 1, NULL)},
                                 3, 0, "size");
    vg_output rows = vg_slice(g, state[n + 4], vg_const_i32_vec(g, (const int32_t[]){0, 0, 0}, 3, NULL), size, "Slice");
    vg_output out = vg_transpose_c(g, rows, (const int32_t[]){1, 0, 2}, 3, "stack");
    vg_graph_pop_scope(g);
    return out;
}
