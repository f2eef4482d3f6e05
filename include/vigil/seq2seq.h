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
 *         vg_layer_config c = vg_layer_config_default(VG_LAYER_DENSE);
 *         c.units = 32;
 *         c.use_bias = false;
 *         vg_layer *proj = vg_layer_new(&c);
 *         vg_decoder *d = vg_basic_decoder_new(cell, h, encoder_state, proj);
 *         vg_dynamic_decode_options o = VG_DYNAMIC_DECODE_OPTIONS_INIT;
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
 *    in place, the stacked time-major outputs and the final state after the loop.
 * A callback returns VG_OK or an error code (also when it set a graph error). */
typedef struct vg_decoder {
    int output_count;                                 /* 1 .. VG_DECODER_MAX_OUTPUTS */
    vg_dtype output_dtypes[VG_DECODER_MAX_OUTPUTS];
    vg_shape output_shapes[VG_DECODER_MAX_OUTPUTS];   /* per-example (no batch dims) */
    int state_count;                                  /* >= 1 */
    bool tracks_own_finished;                         /* BeamSearchDecoder: true */
    int batch_dims;                                   /* leading batch dims of outputs: 1 ([batch]);
                                                         BeamSearchDecoder 2 ([batch, beam]) */
    vg_code (*initialize)(vg_graph *g, void *user, vg_output *finished, vg_output *inputs, vg_output *state);
    vg_code (*step)(vg_graph *g, void *user, vg_output time, vg_output inputs, const vg_output *state,
                    vg_output *outputs, vg_output *next_state, vg_output *next_inputs, vg_output *finished);
    vg_code (*finalize)(vg_graph *g, void *user, vg_output *outputs, vg_output *final_state,
                        vg_output sequence_lengths);
    void (*free_user)(void *user); /* vg_decoder_free calls it on user; may be NULL */
    void *user;
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
#define VG_DYNAMIC_DECODE_OPTIONS_INIT {false, false, {NULL, 0}, 32, false, NULL}

/* tf.contrib.seq2seq.dynamic_decode(decoder, output_time_major, impute_finished,
 * maximum_iterations, parallel_iterations, swap_memory, scope), as TF 1.15's
 * decoder.py: in tf.variable_scope(scope or "decoder"), initialize (finished is or-ed
 * with 0 >= maximum_iterations), then a while loop ("decoder/while") over (time,
 * output TensorArrays, state, inputs, finished, sequence_lengths) that runs while not
 * all are finished, for at most maximum_iterations steps. Each step's finished is the
 * decoder's, or-ed with the previous unless tracks_own_finished; sequence_lengths
 * become time + 1 for the entries not finished before the step. Writes
 * final_outputs[0 .. output_count) ([batch, time, ...] or time-major), final_state
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
