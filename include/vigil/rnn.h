/*
 * vigil/rnn.h - TF1's recurrent cells (tf.nn.rnn_cell / tf.contrib.rnn) and RNN drivers
 * in C, with TF's variable names so that checkpoints line up:
 *
 *   BasicRNNCell         basic_rnn_cell/{kernel,bias}
 *   BasicLSTMCell        basic_lstm_cell/{kernel,bias}
 *   LSTMCell             lstm_cell/{kernel,bias,w_f_diag,w_i_diag,w_o_diag,projection/kernel}
 *   GRUCell              gru_cell/{gates,candidate}/{kernel,bias}
 *   LSTMBlockCell        lstm_cell/{kernel,bias,w_i_diag,w_f_diag,w_o_diag} (op LSTMBlockCell)
 *   LSTMBlockFusedCell   lstm_fused_cell/{kernel,bias,...} (op BlockLSTM)
 *   MultiRNNCell         multi_rnn_cell/cell_<i>/<child's names>
 *   DropoutWrapper, ResidualWrapper: no variables, the wrapped cell's names
 *
 * all under the RNN's variable scope ("rnn" for vg_static_rnn and vg_dynamic_rnn by
 * default), e.g. "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel". Scopes are opened as
 * TF's Layer-based cells open them (docs/naming.md): a cell's first call captures a
 * variable scope named after the cell, made unique in the current variable scope (two
 * cells called in turn at the top: "basic_lstm_cell/kernel", then
 * "basic_lstm_cell_1/kernel"), and every later call re-enters it, sharing the
 * variables; MultiRNNCell opens "cell_<i>" around each child; the wrappers open none.
 * Kernels (and peepholes, projections) take the cell's initializer, which is TF's
 * None by default: the variable scope's initializer if it has one, else glorot_uniform;
 * biases zeros (GRU gates: ones; LSTMBlockCell, LSTMBlockFusedCell: Const 0.0).
 *
 * A cell's state is a flat list of tensors, TF's nest.flatten of its state: one for
 * BasicRNNCell, GRUCell and LSTMs with state_is_tuple = false (c and h concatenated),
 * two (c, h) for LSTM state tuples, the children's lists one after the other for
 * MultiRNNCell. vg_rnn_cell_state_count gives the length.
 *
 * A cell creates its variables on its first call (the input depth must be known then)
 * and reuses them on later calls. A cell called in another graph captures its scope
 * and builds its variables again there.
 *
 *     vg_rnn_cell *cell = vg_basic_lstm_cell_new(128, 1.0f, true);
 *     vg_output xs[28], outs[28], state[2];
 *     for (int t = 0; t < 28; t++) xs[t] = x;              // 28 inputs [batch, depth]
 *     vg_static_rnn(cell, g, xs, 28, NULL, VG_FLOAT, (vg_output){NULL, 0}, NULL, outs, state, NULL);
 *     vg_rnn_cell_free(cell);
 *
 * Cells are owned by the caller (vg_rnn_cell_free) except that MultiRNNCell and the
 * wrappers take over the cells given to them. Graph errors are sticky: a failing call
 * sets the graph's error and returns its code; constructors return NULL only when out
 * of memory or for bad arguments.
 */
#ifndef VIGIL_RNN_H
#define VIGIL_RNN_H

#include "control_flow.h"
#include "layers.h"
#include "rnn_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_rnn_cell vg_rnn_cell;

/* tf.nn.rnn_cell.BasicRNNCell(num_units, activation) (VG_ACT_NONE = tanh). */
VG_API vg_rnn_cell *vg_basic_rnn_cell_new(int64_t num_units, vg_activation activation);
/* tf.nn.rnn_cell.BasicLSTMCell(num_units, forget_bias=1.0, state_is_tuple=True). */
VG_API vg_rnn_cell *vg_basic_lstm_cell_new(int64_t num_units, float forget_bias, bool state_is_tuple);

typedef struct vg_lstm_cell_options {
    bool use_peepholes;
    float cell_clip;     /* <= 0: none */
    int64_t num_proj;    /* 0: no projection */
    float proj_clip;     /* <= 0: none */
    float forget_bias;   /* 0: TF's 1.0 (a bias of 0.0: zero_forget_bias) */
    bool concat_state;   /* false (TF's state_is_tuple=True); true: state_is_tuple=False */
    const vg_initializer *initializer; /* NULL: TF's None (the variable scope's, else
                                          glorot_uniform); copied at construction */
    bool zero_forget_bias; /* true: forget_bias 0.0 (zero in forget_bias stands for 1.0) */
} vg_lstm_cell_options;
/* tf.nn.rnn_cell.LSTMCell(num_units, use_peepholes, cell_clip, initializer, num_proj,
 * proj_clip, forget_bias, state_is_tuple): initializer for the kernel, the peepholes
 * and the projection; o NULL = defaults. */
VG_API vg_rnn_cell *vg_lstm_cell_new(int64_t num_units, const vg_lstm_cell_options *o);
/* tf.nn.rnn_cell.GRUCell(num_units). */
VG_API vg_rnn_cell *vg_gru_cell_new(int64_t num_units);
/* tf.nn.rnn_cell.GRUCell(num_units, activation (VG_ACT_NONE = tanh),
 * kernel_initializer, bias_initializer): NULL initializers are TF's None (kernels: the
 * variable scope's, else glorot_uniform; biases: 1.0 for the gates, zeros for the
 * candidate); a bias_initializer is used for both biases, as in TF. Copied. */
VG_API vg_rnn_cell *vg_gru_cell_new_ex(int64_t num_units, vg_activation activation,
                                       const vg_initializer *kernel_initializer,
                                       const vg_initializer *bias_initializer);
/* tf.contrib.rnn.LSTMBlockCell(num_units, forget_bias, cell_clip (<= 0: none),
 * use_peephole): one LSTMBlockCell op per step; state tuple (c, h). */
VG_API vg_rnn_cell *vg_lstm_block_cell_new(int64_t num_units, float forget_bias, float cell_clip, bool use_peephole);
/* tf.contrib.rnn.LSTMBlockFusedCell(num_units, forget_bias, cell_clip, use_peephole):
 * a whole time-major sequence in one BlockLSTM op; run it with vg_fused_rnn (it cannot
 * be called step by step nor put in a MultiRNNCell). */
VG_API vg_rnn_cell *vg_lstm_block_fused_cell_new(int64_t num_units, float forget_bias, float cell_clip,
                                                 bool use_peephole);
/* tf.nn.rnn_cell.MultiRNNCell(cells): takes over the n cells (also on failure). */
VG_API vg_rnn_cell *vg_multi_rnn_cell_new(vg_rnn_cell *const *cells, int n);
/* tf.nn.rnn_cell.DropoutWrapper(cell, input_keep_prob, output_keep_prob,
 * state_keep_prob, seed): tf.nn.dropout on the inputs, outputs and new state (not on the
 * c of an LSTM state tuple, as TF's default filter); a keep probability of 1 adds no
 * ops. Takes over cell. */
VG_API vg_rnn_cell *vg_dropout_wrapper_new(vg_rnn_cell *cell, double input_keep_prob, double output_keep_prob,
                                           double state_keep_prob, int64_t seed);
/* tf.nn.rnn_cell.ResidualWrapper(cell): output = input + cell's output. Takes over cell. */
VG_API vg_rnn_cell *vg_residual_wrapper_new(vg_rnn_cell *cell);
/* A user-defined cell (a Python tf.nn.rnn_cell.RNNCell subclass or Sonnet RNNCore) with
 * a nested state: the state is given as its flat list (TF's nest.flatten order), each
 * entry [batch, state_shapes[i]...] (the per-example shapes must be fully known).
 *  - build(g, input_depth, dt, user) creates the cell's variables; it runs once, before
 *    the first call, under the variable scope current there (the driver's: "rnn" in
 *    vg_static_rnn / vg_dynamic_rnn, which runs it before its while loop); a build that
 *    wants names outside it, as Sonnet's modules have, re-enters a scope object
 *    captured beforehand (vg_variable_scope_enter, e.g. with the root scope of
 *    vg_get_variable_scope taken at the top). May be NULL.
 *  - call(g, input, state, output, new_state, user) builds one step: input [batch,
 *    depth], state the flat list; fills *output ([batch, output_size]) and new_state
 *    (state_count tensors of the same shapes as state). It runs under a fresh name
 *    scope `name` ("rnn_cell" if NULL) and may use the tensors its build made outside
 *    the loop (they are captured).
 * A callback returns VG_OK or an error code (also when it set a graph error); the
 * driver then fails with that code. */
typedef struct vg_rnn_cell_def {
    const char *name;
    int state_count;
    const vg_shape *state_shapes; /* state_count per-example shapes, copied */
    int64_t output_size;
    vg_code (*build)(vg_graph *g, int64_t input_depth, vg_dtype dt, void *user);
    vg_code (*call)(vg_graph *g, vg_output input, const vg_output *state, vg_output *output, vg_output *new_state,
                    void *user);
    void *user; /* borrowed: the caller keeps it alive while the cell builds ops, and frees it */
} vg_rnn_cell_def;
/* Makes a cell of def (copied). NULL for a NULL def or call, state_count < 1, a missing
 * or not fully known state shape, or output_size <= 0. Works with vg_rnn_cell_call,
 * vg_rnn_cell_zero_state, vg_static_rnn, vg_dynamic_rnn and MultiRNNCell / wrappers. */
VG_API vg_rnn_cell *vg_custom_rnn_cell_new(const vg_rnn_cell_def *def);
/* Frees a cell (and the cells it took over). NULL is ignored. */
VG_API void vg_rnn_cell_free(vg_rnn_cell *cell);
/* Replaces the layer name ("lstm_cell", ...) used for the cell's variable scope. */
VG_API void vg_rnn_cell_set_name(vg_rnn_cell *cell, const char *name);

/* Number of state tensors; the size (last dim) of state i (-1 if i is out of range);
 * the size of the output. */
VG_API int vg_rnn_cell_state_count(const vg_rnn_cell *cell);
VG_API int64_t vg_rnn_cell_state_size(const vg_rnn_cell *cell, int i);
VG_API int64_t vg_rnn_cell_output_size(const vg_rnn_cell *cell);
/* The per-example shape of state i (without the batch dim): [size] for the built-in
 * cells, the def's shape for a custom cell; unknown if i is out of range. For a custom
 * cell vg_rnn_cell_state_size gives the shape's number of elements. */
VG_API vg_shape vg_rnn_cell_state_shape(const vg_rnn_cell *cell, int i);

/* cell.zero_state(batch_size, dtype): fills state[0 .. state_count-1] with zeros
 * [batch_size, state_shape_i...]. If batch_size < 0, batch_tensor (an int32 scalar) gives it at
 * run time. */
VG_API vg_code vg_rnn_cell_zero_state(vg_rnn_cell *cell, vg_graph *g, int64_t batch_size, vg_output batch_tensor,
                                      vg_dtype dt, vg_output *state);

/* output, new_state = cell(input, state): input [batch, depth] (depth known), state the
 * cell's flat state list. Variables are created on the first call, in the cell's own
 * variable scope under the current one (see the top of this header). Fails with INVALID_ARGUMENT (a NULL cell, output or state array, an input of
 * unknown depth, a fused cell) as a sticky graph error. */
VG_API vg_code vg_rnn_cell_call(vg_rnn_cell *cell, vg_graph *g, vg_output input, const vg_output *state,
                                vg_output *output, vg_output *new_state);

/* tf.nn.static_rnn(cell, inputs, initial_state, dtype, sequence_length, scope):
 * inputs[0 .. T-1] are [batch, depth]; initial_state NULL = zeros of dt; with
 * sequence_length (int32/int64 [batch]; op NULL = none) outputs past a sequence's end
 * are zeros and its state is copied through. Runs in tf.variable_scope(scope or
 * "rnn"), which reuses its variables from the second step on (a new cell in a second
 * static_rnn under the same scope fails as in TF: INVALID_ARGUMENT "Variable
 * rnn/basic_lstm_cell/kernel already exists, disallowed. ..." unless reuse is set). Writes T
 * outputs and state_count final state tensors. */
VG_API vg_code vg_static_rnn(vg_rnn_cell *cell, vg_graph *g, const vg_output *inputs, int T,
                             const vg_output *initial_state, vg_dtype dt, vg_output sequence_length, const char *scope,
                             vg_output *outputs, vg_output *final_state, vg_status *st);

/* LSTMBlockFusedCell's call(inputs, initial_state, dtype, sequence_length): inputs
 * [time, batch, depth] (depth known), initial_state NULL = zeros or (c, h); outputs
 * [time, batch, units] (zero past each sequence's end when sequence_length is given) and
 * the final (c, h) (taken at each sequence's last step). Variables in the cell's
 * variable scope ("lstm_fused_cell", made unique in the current variable scope). */
VG_API vg_code vg_fused_rnn(vg_rnn_cell *cell, vg_graph *g, vg_output inputs, const vg_output *initial_state,
                            vg_dtype dt, vg_output sequence_length, vg_output *outputs, vg_output *final_state,
                            vg_status *st);

/* tf.nn.dynamic_rnn(cell, inputs, sequence_length, initial_state, dtype,
 * parallel_iterations, swap_memory (ignored), time_major, scope): inputs [batch, time,
 * depth] ([time, batch, depth] when time_major; depth known), run by a while loop
 * (vigil/control_flow.h) over TensorArrays as TF's _dynamic_rnn_loop: ops under
 * "<scope>/while", "<scope>/TensorArray"..., variables in tf.variable_scope(scope or
 * "rnn"), created before the loop with the scopes the cell's first call in the loop
 * body would open (ops "rnn/while/basic_lstm_cell/MatMul", variables
 * "rnn/basic_lstm_cell/kernel"). sequence_length (int32/int64 [batch]; op NULL = none): past a
 * sequence's end outputs are zeros and the state is copied through. initial_state NULL
 * = zeros of dt. Writes *outputs (the inputs' layout with depth = output size) and
 * state_count final state tensors. parallel_iterations <= 0: 32 (TF's default).
 * Failures (sticky graph error, returned and in st): INVALID_ARGUMENT (NULL arguments,
 * inputs not rank 3 or of unknown depth, a fused cell), the loop builder's errors. */
VG_API vg_code vg_dynamic_rnn(vg_rnn_cell *cell, vg_graph *g, vg_output inputs, vg_output sequence_length,
                              const vg_output *initial_state, vg_dtype dt, int parallel_iterations, bool time_major,
                              const char *scope, vg_output *outputs, vg_output *final_state, vg_status *st);

/* tf.nn.bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length,
 * initial_state_fw, initial_state_bw, dtype, parallel_iterations, swap_memory,
 * time_major, scope): dynamic_rnn of cell_fw in the variable scope "<scope>/fw" and of
 * cell_bw in "<scope>/bw" (re-entered as scope objects, as TF does: variables
 * "bidirectional_rnn/fw/basic_lstm_cell/kernel", ops "bidirectional_rnn/fw/fw/while/...")
 * over the inputs reversed in time (each sequence within its length when
 * sequence_length is given, as tf.reverse_sequence), whose outputs are reversed back.
 * scope NULL = "bidirectional_rnn". Writes outputs[0] (fw), outputs[1] (bw), the fw
 * final state to final_fw and the bw one to final_bw. Failures as vg_dynamic_rnn. */
VG_API vg_code vg_bidirectional_dynamic_rnn(vg_rnn_cell *cell_fw, vg_rnn_cell *cell_bw, vg_graph *g,
                                            vg_output inputs, vg_output sequence_length,
                                            const vg_output *initial_state_fw, const vg_output *initial_state_bw,
                                            vg_dtype dt, int parallel_iterations, bool time_major, const char *scope,
                                            vg_output outputs[2], vg_output *final_fw, vg_output *final_bw,
                                            vg_status *st);

/* tf.nn.embedding_lookup(params, ids) with one params tensor [vocab, dim...]: Gather on
 * axis 0 ("<name>", default "embedding_lookup") then an Identity, as TF. The gradient
 * w.r.t. params is the gathered rows' gradients summed per id (UnsortedSegmentSum), the
 * graph form of TF's IndexedSlices: Momentum, RMSProp, Adagrad, Adadelta, Ftrl and
 * ProximalGradientDescent apply it to the looked-up rows only (vigil/optimizer.h,
 * "Sparse updates"), and the DistributedOptimizer allgathers it (vigil/distributed.h). */
VG_API vg_output vg_embedding_lookup(vg_graph *g, vg_output params, vg_output ids, const char *name);

/* tf.contrib.seq2seq.sequence_loss(logits [batch, time, classes], targets [batch, time]
 * (int32/int64), weights [batch, time] (logits' dtype), average_across_timesteps,
 * average_across_batch): the weighted sparse softmax cross-entropy, summed and divided
 * by the sum of the weights over the averaged axes (0 where that sum is 0, as
 * div_no_nan): a scalar when both are true, [batch] or [time] when one is, [batch, time]
 * when neither. Ops under "sequence_loss" (or name). Graph error INVALID_ARGUMENT when
 * logits is not rank 3. */
VG_API vg_output vg_sequence_loss(vg_graph *g, vg_output logits, vg_output targets, vg_output weights,
                                  bool average_across_timesteps, bool average_across_batch, const char *name);

#ifdef __cplusplus
}
#endif
#endif
