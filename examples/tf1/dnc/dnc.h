/* dnc.h - port of DeepMind's Differentiable Neural Computer (google-deepmind/dnc,
 * dnc/{util,addressing,access,dnc,repeat_copy}.py at 859834212572054d866c671577f7dd370ad09561,
 * the Sonnet 1 / TF1-graph version) as plain C functions on vigil's public API. Each
 * Python module is a C file; Sonnet modules become structs holding their variables,
 * named as Sonnet names them ("dnc/lstm/w_gates", "dnc/memory_access/read_keys/w",
 * "dnc/output_linear/b", ...). See examples/tf1/dnc/README.md for the line mapping. */
#ifndef DNC_PORT_H
#define DNC_PORT_H

#include "vigil/vigil.h"

/* ---- util.py ---------------------------------------------------------------------- */
vg_output dnc_batch_invert_permutation(vg_graph *g, vg_output permutations);
vg_output dnc_batch_gather(vg_graph *g, vg_output values, vg_output indices);
vg_output dnc_reduce_prod(vg_graph *g, vg_output x, int axis, const char *name);

/* ---- addressing.py ------------------------------------------------------------------ */
#define DNC_EPSILON 1e-6
vg_output dnc_weighted_softmax(vg_graph *g, vg_output activations, vg_output strengths);
/* CosineWeights(num_heads, word_size, strength_op=softplus): no variables. */
vg_output dnc_cosine_weights(vg_graph *g, vg_output memory, vg_output keys, vg_output strengths, const char *name);
/* TemporalLinkage(memory_size, num_writes) */
typedef struct dnc_temporal_linkage {
    int64_t memory_size, num_writes;
} dnc_temporal_linkage;
/* __call__(write_weights, prev_state) -> (link, precedence_weights) */
void dnc_temporal_linkage_call(vg_graph *g, const dnc_temporal_linkage *m, vg_output write_weights, vg_output prev_link,
                               vg_output prev_precedence_weights, vg_output *link, vg_output *precedence_weights);
vg_output dnc_directional_read_weights(vg_graph *g, const dnc_temporal_linkage *m, vg_output link,
                                       vg_output prev_read_weights, bool forward);
/* Freeness(memory_size) */
typedef struct dnc_freeness {
    int64_t memory_size;
} dnc_freeness;
vg_output dnc_freeness_call(vg_graph *g, const dnc_freeness *m, vg_output write_weights, vg_output free_gate,
                            vg_output read_weights, vg_output prev_usage);
vg_output dnc_write_allocation_weights(vg_graph *g, const dnc_freeness *m, vg_output usage, vg_output write_gates,
                                       int64_t num_writes);
vg_output dnc_allocation(vg_graph *g, const dnc_freeness *m, vg_output usage);

/* ---- access.py ---------------------------------------------------------------------- */
typedef struct dnc_linear { /* snt.Linear: <scope>/<name>/{w,b} */
    vg_output w, b;
} dnc_linear;
vg_code dnc_linear_build(vg_graph *g, dnc_linear *l, const char *name, int64_t input_size, int64_t output_size);
vg_output dnc_linear_call(vg_graph *g, const dnc_linear *l, vg_output inputs, const char *name);

typedef struct dnc_memory_access {
    int64_t memory_size, word_size, num_reads, num_writes;
    dnc_temporal_linkage linkage;
    dnc_freeness freeness;
    dnc_linear write_vectors, erase_vectors, free_gate, allocation_gate, write_gate, read_mode, write_keys,
        write_strengths, read_keys, read_strengths;
} dnc_memory_access;
/* AccessState flattened: memory, read_weights, write_weights, linkage.link,
 * linkage.precedence_weights, usage */
enum { ACC_MEMORY, ACC_READ_WEIGHTS, ACC_WRITE_WEIGHTS, ACC_LINK, ACC_PRECEDENCE_WEIGHTS, ACC_USAGE, ACC_STATE_COUNT };
void dnc_memory_access_init(dnc_memory_access *m, int64_t memory_size, int64_t word_size, int64_t num_reads,
                            int64_t num_writes);
void dnc_memory_access_state_shapes(const dnc_memory_access *m, vg_shape *shapes);
/* Creates the variables (under the current variable scope + "memory_access"). */
vg_code dnc_memory_access_build(vg_graph *g, dnc_memory_access *m, int64_t input_size);
/* _build(inputs, prev_state) -> read_words [B, num_reads, word_size], next_state */
vg_output dnc_memory_access_call(vg_graph *g, dnc_memory_access *m, vg_output inputs, const vg_output *prev_state,
                                 vg_output *next_state);
vg_output dnc_erase_and_write(vg_graph *g, vg_output memory, vg_output address, vg_output reset_weights,
                              vg_output values);

/* ---- dnc.py ----------------------------------------------------------------------- */
/* DNCState flattened (nest order): access_output, access_state (6), controller_state
 * (snt.LSTM's LSTMState(hidden, cell)). */
enum { DNC_ACCESS_OUTPUT = 0, DNC_ACCESS_STATE = 1, DNC_HIDDEN = 1 + ACC_STATE_COUNT, DNC_CELL, DNC_STATE_COUNT };
typedef struct dnc_core {
    dnc_memory_access access;
    int64_t hidden_size, output_size;
    double clip_value;
    vg_output w_gates, b_gates; /* snt.LSTM "dnc/lstm" */
    dnc_linear output_linear;   /* "dnc/output_linear" */
    vg_shape state_shapes[DNC_STATE_COUNT];
    vg_rnn_cell *cell; /* the custom vigil cell running this core */
    vg_vscope *scope;  /* the module's variable scope "dnc", captured at the top level */
} dnc_core;
/* DNC(access_config, controller_config, output_size, clip_value, name='dnc'); returns
 * NULL when out of memory. */
dnc_core *dnc_new(int64_t memory_size, int64_t word_size, int64_t num_reads, int64_t num_writes, int64_t hidden_size,
                  int64_t output_size, double clip_value);
void dnc_free(dnc_core *c);
/* initial_state(batch_size): zeros of every state entry. The first call also captures
 * the module's variable scope (Sonnet captures tf.variable_scope(None,
 * default_name="dnc") when the module is made, at the top level in train.py). */
void dnc_initial_state(vg_graph *g, dnc_core *c, int64_t batch_size, vg_output *state);

/* ---- repeat_copy.py -------------------------------------------------------------------- */
typedef struct dnc_repeat_copy {
    int num_bits, batch_size, min_length, max_length, min_repeats, max_repeats;
    double norm_max;
    bool log_prob_in_bits, time_average_cost;
} dnc_repeat_copy;
/* DatasetTensors(observations [T, B, num_bits + 2], target [T, B, num_bits + 1], mask [T, B]) */
void dnc_repeat_copy_build(vg_graph *g, const dnc_repeat_copy *d, vg_output *obs, vg_output *target, vg_output *mask);
vg_output dnc_masked_sigmoid_cross_entropy(vg_graph *g, vg_output logits, vg_output target, vg_output mask,
                                           bool time_average, bool log_prob_in_bits);

/* ---- train.py's train(): the training graph (train_graph.c) ---------------------------- */
typedef struct dnc_train_config { /* train.py's model and optimizer flags */
    int64_t hidden_size, memory_size, word_size, num_write_heads, num_read_heads;
    double clip_value, max_grad_norm, learning_rate, optimizer_epsilon;
    int64_t batch_size;
} dnc_train_config;
typedef struct dnc_train_graph {
    dnc_core *core;          /* owned: dnc_train_graph_free */
    vg_output output;        /* tf.round(expand_dims(mask, -1) * sigmoid(logits)) */
    vg_output train_loss;    /* dataset.cost(output_logits, target, mask) */
    vg_output global_step;
    vg_op *train_step;       /* RMSProp's apply_gradients of the clipped gradients */
    vg_optimizer *optimizer; /* owned: dnc_train_graph_free */
} dnc_train_graph;
/* Builds, after the data tensors (observations [T, B, obs], target [T, B, output_size],
 * mask [T, B]), the rest of train(): the DNC over the observations, the visualisation
 * output, the loss, tf.gradients over the trainable variables, clip_by_global_norm,
 * the global step and RMSProp (decay 0.9, momentum 0, epsilon). VG_OK, or the graph's
 * error (also in st). Free with dnc_train_graph_free, after the session. */
vg_code dnc_train_graph_build(vg_graph *g, const dnc_train_config *cfg, vg_output observations, vg_output target,
                              vg_output mask, int64_t output_size, bool time_average_cost, bool log_prob_in_bits,
                              dnc_train_graph *out, vg_status *st);
void dnc_train_graph_free(dnc_train_graph *t);

#endif
