/*
 * vigil/seq2seq.h - tf.contrib.seq2seq (TF 1.15) in C: dynamic_decode over a decoder
 * interface, BasicDecoder with TrainingHelper / GreedyEmbeddingHelper /
 * SampleEmbeddingHelper, Bahdanau and Luong attention with AttentionWrapper (an RNN
 * cell), BeamSearchDecoder, tile_batch and the GatherTree op.
 *
 * Nests are flat lists, as in vigil/rnn.h: a decoder's outputs, a cell's state and a
 * beam search state are arrays of tensors in TF's nest.flatten order.
 *
 *     #include <vigil/vigil.h>
 *     // greedy decoding of a cell whose outputs pass through a vocab-sized dense layer
 *     vg_output decode(vg_graph *g, vg_rnn_cell *cell, vg_output embedding,
 *                      vg_output start_tokens, const vg_output *encoder_state) {
 *         vg_decoder_helper *h = vg_greedy_embedding_helper_new(g, embedding, start_tokens, 1);
 *         vg_layer_config c = {.kind = VG_LAYER_DENSE};
 *         c.units = 32;
 *         c.no_bias = true;
 *         vg_layer *proj = vg_layer_new(&c);
 *         vg_decoder *d = vg_basic_decoder_new(cell, h, encoder_state, proj);
 *         vg_dynamic_decode_options o = {0};
 *         o.maximum_iterations = vg_const_i32(g, 20, "maximum_iterations");
 *         vg_output outs[2], state[2], lengths;
 *         vg_dynamic_decode(g, d, &o, outs, state, &lengths, NULL);
 *         vg_decoder_free(d);
 *         vg_layer_free(proj);
 *         vg_decoder_helper_free(h);
 *         return outs[1]; // sample_id [batch, time]
 *     }
 *
 * Graph errors are sticky: a failing builder sets the graph's error and returns its
 * code (and in st when st is not NULL).
 */
#ifndef VIGIL_SEQ2SEQ_H
#define VIGIL_SEQ2SEQ_H

#include "rnn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_DECODER_MAX_OUTPUTS 8

/* ---- the decoder interface (tf.contrib.seq2seq.Decoder) ------------------------
 * A decoder is this struct of callbacks and a payload, filled by a constructor below
 * or by the caller (a user-defined decoder: fill it, pass it to vg_dynamic_decode, and
 * do not call vg_decoder_free unless free_user is set and the struct is heap-made).
 *  - initialize(g, user, finished, inputs, state): builds the first step's finished
 *    (bool [batch...]), inputs and state (state_count tensors); it runs in
 *    dynamic_decode's variable scope, before the loop.
 *  - step(g, user, time, inputs, state, outputs, next_state, next_inputs, finished):
 *    one decoding step inside the while loop (time an int32 scalar): fills
 *    output_count outputs ([batch, output_shapes[i]...] of output_dtypes[i]),
 *    state_count next state tensors, the next inputs and finished.
 *  - finalize(g, user, outputs, final_state, sequence_lengths) (may be NULL): replaces,
 *    in place, the stacked time-major outputs (an array of VG_DECODER_MAX_OUTPUTS;
 *    final_output_count of them on return) and the final state after the loop.
 * A callback returns VG_OK or an error code (also when it set a graph error). */
typedef struct vg_decoder {
    int output_count;                                 /* 1 .. VG_DECODER_MAX_OUTPUTS */
    vg_dtype output_dtypes[VG_DECODER_MAX_OUTPUTS];
    vg_shape output_shapes[VG_DECODER_MAX_OUTPUTS];   /* per-example (no batch dims) */
    int state_count;                                  /* >= 1 */
    bool tracks_own_finished;                         /* BeamSearchDecoder: true */
    int batch_dims;                                   /* leading batch dims before output_shapes
                                                         (0 means 1: [batch]; BeamSearchDecoder: 1,
                                                         its shapes are [beam]) */
    vg_code (*initialize)(vg_graph *g, void *user, vg_output *finished, vg_output *inputs, vg_output *state);
    vg_code (*step)(vg_graph *g, void *user, vg_output time, vg_output inputs, const vg_output *state,
                    vg_output *outputs, vg_output *next_state, vg_output *next_inputs, vg_output *finished);
    vg_code (*finalize)(vg_graph *g, void *user, vg_output *outputs, vg_output *final_state,
                        vg_output sequence_lengths);
    void (*free_user)(void *user); /* vg_decoder_free calls it on user; may be NULL */
    void *user;
    int final_output_count;        /* outputs after finalize: 0 = output_count
                                      (BeamSearchDecoder: 4), <= VG_DECODER_MAX_OUTPUTS */
} vg_decoder;

/* Frees a decoder made by a constructor here (its payload; the cell, helper and layer
 * it borrowed stay the caller's). NULL is ignored. */
VG_API void vg_decoder_free(vg_decoder *d);

typedef struct vg_dynamic_decode_options {
    bool output_time_major;       /* false: outputs [batch, time, ...] */
    bool impute_finished;         /* false; true: outputs of finished entries are zeros and
                                     their state (every state tensor of rank >= 1) is copied through */
    vg_output maximum_iterations; /* {NULL, 0}: none; else an int32 scalar */
    int parallel_iterations;      /* <= 0: 32 */
    bool swap_memory;             /* ignored (vigil keeps loop values in host memory) */
    const char *scope;            /* NULL: "decoder" */
} vg_dynamic_decode_options;

/* tf.contrib.seq2seq.dynamic_decode(decoder, output_time_major, impute_finished,
 * maximum_iterations, parallel_iterations, swap_memory, scope), as TF 1.15's
 * decoder.py: in tf.variable_scope(scope or "decoder"), initialize (finished is or-ed
 * with 0 >= maximum_iterations), then a while loop ("decoder/while") over (time,
 * output TensorArrays, state, inputs, finished, sequence_lengths) that runs while not
 * all are finished, for at most maximum_iterations steps. Each step's finished is the
 * decoder's, or-ed with the previous unless tracks_own_finished; sequence_lengths
 * become time + 1 for the entries not finished before the step. Writes
 * final_outputs[0 .. final_output_count or output_count) ([batch, time, ...] or
 * time-major: the first two dimensions of each are swapped), final_state
 * (state_count tensors) and *final_sequence_lengths (int32 [batch...]; may be NULL).
 * o NULL = defaults. Failures (sticky graph error, returned and in st):
 * INVALID_ARGUMENT (NULL arguments, a decoder without callbacks or with bad counts,
 * maximum_iterations not a scalar), the callbacks' codes, the loop builder's errors. */
VG_API vg_code vg_dynamic_decode(vg_graph *g, vg_decoder *decoder, const vg_dynamic_decode_options *o,
                                 vg_output *final_outputs, vg_output *final_state, vg_output *final_sequence_lengths,
                                 vg_status *st);

/* ---- helpers (tf.contrib.seq2seq.Helper) -----------------------------------------
 * What BasicDecoder asks for its inputs and sample ids; a user-defined helper fills the
 * struct (nstate: the decoder's state count).
 *  - initialize: finished [batch] bool and the first inputs.
 *  - sample: sample ids from the step's outputs [batch, ...].
 *  - next_inputs: finished, the next inputs, and next_state (nstate tensors; copy state
 *    to keep it). */
typedef struct vg_decoder_helper {
    vg_dtype sample_ids_dtype; /* int32 for the built-in helpers */
    vg_shape sample_ids_shape; /* per example: scalar */
    vg_code (*initialize)(vg_graph *g, void *user, vg_output *finished, vg_output *next_inputs);
    vg_code (*sample)(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state, int nstate,
                      vg_output *sample_ids);
    vg_code (*next_inputs)(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state,
                           int nstate, vg_output sample_ids, vg_output *finished, vg_output *next_inputs,
                           vg_output *next_state);
    void (*free_user)(void *user);
    void *user;
} vg_decoder_helper;

/* Frees a helper made by a constructor here. NULL is ignored. */
VG_API void vg_decoder_helper_free(vg_decoder_helper *h);

/* tf.contrib.seq2seq.TrainingHelper(inputs, sequence_length, time_major, name): reads
 * the inputs [batch, time, depth] ([time, batch, depth] when time_major; depth known)
 * one step at a time from a TensorArray made here (name scope name or
 * "TrainingHelper"); finished = time + 1 >= sequence_length (int32 or int64 [batch],
 * cast to int32); the next inputs are zeros once all are finished (a tf.cond, as TF);
 * sample ids argmax(outputs) as int32. NULL on bad arguments (graph error
 * INVALID_ARGUMENT: inputs not rank 3 or depth unknown, sequence_length not rank 1). */
VG_API vg_decoder_helper *vg_training_helper_new(vg_graph *g, vg_output inputs, vg_output sequence_length,
                                                 bool time_major, const char *name);
/* tf.contrib.seq2seq.GreedyEmbeddingHelper(embedding, start_tokens, end_token):
 * embedding [vocab, depth] (looked up with vg_embedding_lookup), start_tokens int32
 * [batch]; the first inputs are the start tokens' embeddings; sample ids
 * argmax(outputs) (int32); finished = sample_ids == end_token; once all are finished the
 * next inputs are the start inputs. NULL on bad arguments (graph error). */
VG_API vg_decoder_helper *vg_greedy_embedding_helper_new(vg_graph *g, vg_output embedding, vg_output start_tokens,
                                                         int32_t end_token);
/* tf.contrib.seq2seq.SampleEmbeddingHelper(embedding, start_tokens, end_token,
 * softmax_temperature, seed): as the greedy helper, but the sample ids are drawn from
 * Categorical(logits = outputs / softmax_temperature) (a Multinomial op with seed;
 * softmax_temperature <= 0: none, TF's None). */
VG_API vg_decoder_helper *vg_sample_embedding_helper_new(vg_graph *g, vg_output embedding, vg_output start_tokens,
                                                         int32_t end_token, double softmax_temperature, int64_t seed);

/* tf.contrib.seq2seq.ScheduledEmbeddingTrainingHelper(inputs, sequence_length,
 * embedding, sampling_probability, time_major, seed, scheduling_seed, name): a
 * TrainingHelper (name scope name or "ScheduledEmbeddingSamplingWrapper") whose sample
 * ids are drawn from Categorical(outputs) (Multinomial, seed) where uniform <
 * sampling_probability (a float/double scalar or [batch] tensor; RandomUniform with
 * scheduling_seed), -1 elsewhere; the next inputs are the drawn ids' embeddings there
 * and the given inputs elsewhere (the given inputs' zeros once all are finished). The
 * draws are vigil's own random stream. NULL with a graph error (INVALID_ARGUMENT: the
 * TrainingHelper's, no embedding, sampling_probability not rank 0 or 1 or not
 * floating). */
VG_API vg_decoder_helper *vg_scheduled_embedding_training_helper_new(vg_graph *g, vg_output inputs,
                                                                     vg_output sequence_length, vg_output embedding,
                                                                     vg_output sampling_probability, bool time_major,
                                                                     int64_t seed, int64_t scheduling_seed,
                                                                     const char *name);

/* tf.contrib.seq2seq.BasicDecoder(cell, helper, initial_state, output_layer): outputs
 * (rnn_output [batch, units] of the state's dtype, sample_id [batch] int32); a step
 * (name scope "BasicDecoderStep") calls the cell, then output_layer (a dense vg_layer;
 * NULL: none) on its output, samples with the helper and asks it for the next inputs.
 * initial_state: the cell's state_count tensors (copied array). cell, helper and
 * output_layer are borrowed: keep them alive until dynamic_decode returns. Variables:
 * the cell's and the layer's, created by their first call in the loop body under the
 * decoder's variable scope ("decoder/basic_lstm_cell/kernel", "decoder/dense/kernel").
 * NULL for NULL arguments or out of memory. */
VG_API vg_decoder *vg_basic_decoder_new(vg_rnn_cell *cell, vg_decoder_helper *helper, const vg_output *initial_state,
                                        vg_layer *output_layer);

/* ---- attention (attention_wrapper.py) ----------------------------------------------
 * An attention mechanism holds the memory [batch, max_time, depth] (max_time and depth
 * must be known: the wrapper's state is a custom cell's, whose shapes are static),
 * masked past memory_sequence_length (int32/int64 [batch]; op NULL = none) as TF's
 * _prepare_memory, and the keys = memory_layer(values): a dense layer without bias
 * named "memory_layer" built in the current variable scope when the mechanism is made
 * (variable "memory_layer/kernel"; its masking ops under name scope name or
 * "BaseAttentionMechanismInit"). A call scores a query against the keys in
 * tf.variable_scope(None, "bahdanau_attention" / "luong_attention") and returns the
 * alignments softmax(score), with score -inf past memory_sequence_length (TF's
 * score_mask_value default; the probability_fn is softmax).
 *  - Bahdanau: score = sum(v * tanh(keys + query_layer(query)), 2); query_layer a dense
 *    layer without bias ("bahdanau_attention/query_layer/kernel"), v "attention_v"
 *    [num_units] (glorot_uniform, or the scope's initializer); normalize: v becomes
 *    g * v / |v| with "attention_g" (scalar, sqrt(1 / num_units)) and a bias
 *    "attention_b" [num_units] (zeros) is added inside the tanh.
 *  - Luong: score = query . keys (the query's depth must equal num_units); scale:
 *    multiplied by "attention_g" (scalar, ones).
 * Constructors return NULL with a graph error (INVALID_ARGUMENT: num_units <= 0, memory
 * not rank 3 or with unknown max_time or depth, memory_sequence_length not a vector;
 * RESOURCE_EXHAUSTED). The caller frees the mechanism after the graph is built, after
 * the wrappers that use it. */
typedef struct vg_attention_mechanism vg_attention_mechanism;
/* tf.contrib.seq2seq.BahdanauAttention(num_units, memory, memory_sequence_length,
 * normalize, name). */
VG_API vg_attention_mechanism *vg_bahdanau_attention_new(vg_graph *g, int64_t num_units, vg_output memory,
                                                         vg_output memory_sequence_length, bool normalize,
                                                         const char *name);
/* tf.contrib.seq2seq.LuongAttention(num_units, memory, memory_sequence_length, scale,
 * name). */
VG_API vg_attention_mechanism *vg_luong_attention_new(vg_graph *g, int64_t num_units, vg_output memory,
                                                      vg_output memory_sequence_length, bool scale, const char *name);
VG_API void vg_attention_mechanism_free(vg_attention_mechanism *m);
/* The mechanism's keys [batch, max_time, num_units] and (masked) values [batch,
 * max_time, depth]. */
VG_API vg_output vg_attention_mechanism_keys(const vg_attention_mechanism *m);
VG_API vg_output vg_attention_mechanism_values(const vg_attention_mechanism *m);
/* mechanism(query, state): *alignments [batch, max_time] for query [batch, depth]
 * (depth known). Variables on the first call, in the current variable scope. Fails
 * (sticky) with INVALID_ARGUMENT (NULL arguments, a query of unknown depth, a Luong
 * query whose depth differs from num_units). */
VG_API vg_code vg_attention_mechanism_call(vg_attention_mechanism *m, vg_graph *g, vg_output query,
                                           vg_output *alignments);

/* probability_fn(g, score, user): alignments [batch, max_time] from the (masked)
 * scores, e.g. vg_hardmax. */
typedef vg_output (*vg_probability_fn)(vg_graph *g, vg_output score, void *user);
/* The mechanism's probability_fn (NULL: softmax) and score_mask_value (the score past
 * memory_sequence_length; TF's None = -inf), as TF's constructor arguments: set them
 * before the mechanism's first call. */
VG_API void vg_attention_mechanism_set_probability_fn(vg_attention_mechanism *m, vg_probability_fn fn, void *user);
VG_API void vg_attention_mechanism_set_score_mask_value(vg_attention_mechanism *m, double value);
/* tf.contrib.seq2seq.hardmax(logits): one_hot(argmax(logits, -1)) in logits' dtype; the
 * last dimension must be known. Usable as a probability_fn (user ignored). {NULL, 0}
 * with a graph error otherwise. */
VG_API vg_output vg_hardmax(vg_graph *g, vg_output logits, void *user);

/* cell_input_fn(g, inputs, attention, user): the wrapped cell's input [batch, depth]
 * from the inputs and the previous attention; depth must be the same at every call. */
typedef vg_output (*vg_cell_input_fn)(vg_graph *g, vg_output inputs, vg_output attention, void *user);

typedef struct vg_attention_wrapper_options {
    int64_t attention_layer_size; /* 0: TF's None (the attention is the context vector) */
    bool alignment_history;       /* false; true: the state records every step's
                                     alignments (see alignment_history_max_steps) */
    bool no_output_attention;     /* false (TF's output_attention=True): the output is the
                                     attention; true: the cell's output */
    const char *name;             /* NULL: "attention_wrapper" */
    vg_cell_input_fn cell_input_fn; /* NULL: concat([inputs, attention], -1) */
    void *cell_input_fn_user;       /* borrowed, passed to cell_input_fn */
    int64_t alignment_history_max_steps; /* with alignment_history (then > 0): the steps the
                                            state's history holds (a static bound on
                                            decoding, e.g. maximum_iterations); a run
                                            past it fails INVALID_ARGUMENT (an Assert) */
} vg_attention_wrapper_options;

/* tf.contrib.seq2seq.AttentionWrapper(cell, attention_mechanism, attention_layer_size,
 * alignment_history, cell_input_fn, output_attention, name) with one mechanism. Its RNN cell (vg_attention_wrapper_cell) has the flat state
 *     cell_state (the wrapped cell's n tensors), attention [batch, attention_size],
 *     alignments [batch, max_time], attention_state [batch, max_time]
 * (TF's AttentionWrapperState without time and alignment_history), and with
 * alignment_history two more, time [batch] (the steps taken, in the state's dtype; TF's
 * scalar time) and alignment_history [batch, alignment_history_max_steps, max_time]
 * (TF's TensorArray of alignments as a buffer: row t holds step t's alignments, the
 * rows not yet written are zeros; vg_attention_wrapper_alignment_history stacks it); a call
 * makes the cell's input with cell_input_fn (default: the inputs concatenated with the
 * previous attention), calls the wrapped cell, scores
 * its output with the mechanism, and makes the context (alignments x values), then the
 * attention = attention_layer([cell_output, context]) (a dense layer without bias,
 * "attention_layer/kernel") or the context when attention_layer_size is 0. Its output
 * is the attention (output_attention) or the cell's output. Variables in the wrapper's
 * variable scope, made unique in the current one at the first call
 * ("decoder/attention_wrapper/basic_lstm_cell/kernel",
 * "decoder/attention_wrapper/bahdanau_attention/attention_v",
 * "decoder/attention_wrapper/attention_layer/kernel"). Takes over cell (also on
 * failure); borrows m. NULL for a NULL cell or mechanism, alignment_history with
 * alignment_history_max_steps <= 0, or out of memory. o NULL = defaults. */
typedef struct vg_attention_wrapper vg_attention_wrapper;
VG_API vg_attention_wrapper *vg_attention_wrapper_new(vg_rnn_cell *cell, vg_attention_mechanism *m,
                                                      const vg_attention_wrapper_options *o);
/* TF's final_state.alignment_history.stack(): [time, batch, max_time], the alignments
 * of the steps taken (time = the largest `time` of state), from a state of a wrapper
 * made with alignment_history (state: its n + 5 tensors, e.g. dynamic_decode's final
 * state). Ops under name scope name or "alignment_history". {NULL, 0} with graph error
 * INVALID_ARGUMENT for NULL arguments or a wrapper without alignment_history. */
VG_API vg_output vg_attention_wrapper_alignment_history(vg_attention_wrapper *w, vg_graph *g, const vg_output *state,
                                                        const char *name);
/* The wrapper as an RNN cell (borrowed: valid until vg_attention_wrapper_free; do not
 * free it with vg_rnn_cell_free). */
VG_API vg_rnn_cell *vg_attention_wrapper_cell(vg_attention_wrapper *w);
/* Frees the wrapper, its cell and the wrapped cell. NULL is ignored. */
VG_API void vg_attention_wrapper_free(vg_attention_wrapper *w);
/* zero_state(batch_size, dtype), then .clone(cell_state=cell_state) when cell_state is
 * not NULL (the wrapped cell's n tensors, e.g. the encoder's final state): fills the
 * n + 3 (n + 5 with alignment_history) state tensors. batch_size < 0: batch_tensor
 * (int32 scalar) gives it. Fails
 * with INVALID_ARGUMENT (NULL arguments) or the zero state's errors. */
VG_API vg_code vg_attention_wrapper_zero_state(vg_attention_wrapper *w, vg_graph *g, int64_t batch_size,
                                               vg_output batch_tensor, vg_dtype dt, const vg_output *cell_state,
                                               vg_output *state);

/* tf.contrib.seq2seq.tile_batch(t, multiplier): t [batch, ...] (rank known) becomes
 * [batch * multiplier, ...] with each entry repeated multiplier times in a row (t[0],
 * t[0], ..., t[1], t[1], ...), ops under name or "tile_batch". {NULL, 0} with graph
 * error INVALID_ARGUMENT for an unknown rank, rank 0 or multiplier < 1. */
VG_API vg_output vg_tile_batch(vg_graph *g, vg_output t, int multiplier, const char *name);

/* tf.contrib.seq2seq.BeamSearchDecoder(cell, embedding, start_tokens, end_token,
 * initial_state, beam_width, output_layer, length_penalty_weight) of TF 1.15, without
 * coverage_penalty_weight and reorder_tensor_arrays. initial_state: the cell's state
 * for batch * beam_width entries (tiled with vg_tile_batch; for an AttentionWrapper
 * tile the memory and its lengths too and make its zero state for batch * beam_width).
 * Each step runs the cell on the [batch * beam] merged inputs and state, applies
 * output_layer (NULL: none), takes log_softmax (finished beams put all their mass on
 * end_token), adds the beams' log probabilities, divides by the length penalty
 * ((5 + length) / 6) ^ length_penalty_weight (lengths not counting end_token; none when
 * the weight is 0), keeps the top beam_width of beam x vocab (TopKV2), and gathers
 * the chosen beams' state, log probabilities, finished and lengths. At the start only
 * beam 0 is live (log probability 0, the others -inf and finished). tracks_own_finished.
 * With vg_dynamic_decode: final_outputs (final_output_count 4, TF's
 * FinalBeamSearchDecoderOutput flattened) = predicted_ids [batch, time, beam] (int32,
 * traced back by GatherTree with each batch's longest beam length; beams best first),
 * scores [batch, time, beam], the raw step ids and the parent ids; final_state = the
 * cell's state [batch, beam, ...], log_probs [batch, beam], finished [batch, beam],
 * lengths int64 [batch, beam]. cell and output_layer are borrowed; embedding [vocab,
 * depth]; start_tokens int32 [batch]. NULL with a graph error (INVALID_ARGUMENT: NULL
 * arguments, beam_width < 1, start_tokens not a vector, an unknown vocabulary size;
 * RESOURCE_EXHAUSTED). Free with vg_decoder_free. */
VG_API vg_decoder *vg_beam_search_decoder_new(vg_graph *g, vg_rnn_cell *cell, vg_output embedding,
                                              vg_output start_tokens, int32_t end_token,
                                              const vg_output *initial_state, int beam_width, vg_layer *output_layer,
                                              double length_penalty_weight);

/* tf.contrib.seq2seq.sequence_loss(logits, targets, weights, average_across_timesteps,
 * average_across_batch, sum_over_timesteps, sum_over_batch, name) of TF 1.15 (vigil/rnn.h's
 * vg_sequence_loss is the form without the sum_over_* flags). The weighted
 * cross-entropies [batch, time] are, as TF's loss.py: with both average flags summed
 * and divided by the sum of the weights; else with both sum flags summed and divided by
 * the number of nonzero weights; else with one average flag summed over its axis
 * (batch: 0, time: 1) and divided by the weights' sum over it (a sum flag of the other
 * axis is then ignored, as in TF); else with one sum flag summed over its axis and
 * divided by the count of nonzero weights over it; else returned as they are. Every
 * division is div_no_nan (0 where the divisor is 0). o NULL = TF's defaults (average
 * both). {NULL, 0} with graph error INVALID_ARGUMENT: logits not rank 3, targets or
 * weights not rank 2, "average_across_timesteps and sum_over_timesteps cannot be set
 * to True at same time." (and the batch one). */
typedef struct vg_sequence_loss_options {
    bool no_average_across_timesteps; /* false (TF's average_across_timesteps=True) */
    bool no_average_across_batch;     /* false (TF's average_across_batch=True) */
    bool sum_over_timesteps;          /* false */
    bool sum_over_batch;              /* false */
    const char *name;                 /* NULL: "sequence_loss" */
} vg_sequence_loss_options;
VG_API vg_output vg_sequence_loss_ex(vg_graph *g, vg_output logits, vg_output targets, vg_output weights,
                                     const vg_sequence_loss_options *o);

/* The GatherTree op (tf.contrib.seq2seq.gather_tree): step_ids, parent_ids [max_time,
 * batch, beam] (int32 or int64), max_sequence_lengths int32 [batch], end_token a scalar
 * of step_ids' dtype; returns the beams [max_time, batch, beam] traced back through the
 * parents (end_token past each beam's first end_token and past its batch's length).
 * Run-time INVALID_ARGUMENT "Saw invalid parent id -1 at (batch, time, beam) == (0, 0,
 * 1)" for a parent outside [0, beam). Build failures: the graph's error, {NULL, 0}. */
VG_API vg_output vg_gather_tree(vg_graph *g, vg_output step_ids, vg_output parent_ids, vg_output max_sequence_lengths,
                                vg_output end_token, const char *name);

#ifdef __cplusplus
}
#endif
#endif
