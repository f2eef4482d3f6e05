/*
 * vigil/cudnn_rnn.h - tf.contrib.cudnn_rnn on the CPU: the cuDNN RNN ops (CudnnRNN and
 * its gradient CudnnRNNBackprop, CudnnRNNParamsSize, CudnnRNNParamsToCanonical,
 * CudnnRNNCanonicalToParams) for LSTM, GRU, tanh and relu RNNs, the layers CudnnLSTM,
 * CudnnGRU, CudnnRNNTanh, CudnnRNNRelu with their one opaque parameter variable, and
 * CudnnCompatibleLSTMCell / CudnnCompatibleGRUCell, so that checkpoints written by GPU
 * runs of TF restore here and checkpoints move between the fused layers and the cells.
 *
 * The opaque buffer has cuDNN's layout (TF keeps it as cuDNN lays it out):
 *   all weight matrices first, pseudo-layer by pseudo-layer (layer 0 forward, layer 0
 *   backward, layer 1 forward, ...), each pseudo-layer's 8 matrices in the order
 *   W_i, W_f, W_c, W_o ([num_units, in_l] row-major, applied to the layer's input;
 *   in_0 = input_size, in_l = dirs * num_units) then R_i, R_f, R_c, R_o ([num_units,
 *   num_units], applied to h); then all biases in the same order, 8 vectors
 *   bW_i..bW_o, bR_i..bR_o [num_units] per pseudo-layer.
 *   i = sigmoid(W_i x + R_i h + bW_i + bR_i), f, o alike, c' = tanh(W_c x + R_c h + ...),
 *   c = f * c_prev + i * c', h = o * tanh(c) (no forget bias, no clipping).
 * GRU ("gru"): 6 matrices per pseudo-layer, W_r, W_u, W_h, R_r, R_u, R_h, and 6 biases:
 *   r = sigmoid(W_r x + R_r h + bW_r + bR_r), u alike,
 *   h' = tanh(W_h x + bW_h + r * (R_h h + bR_h)), h = (1 - u) * h' + u * h_prev.
 * "rnn_tanh", "rnn_relu": W, R and bW, bR; h = tanh / relu(W x + R h + bW + bR).
 * For all but LSTM input_c is ignored and output_c is a dummy scalar, as in TF.
 * Inputs are time-major [time, batch, input_size]; h and c [num_layers * dirs, batch,
 * num_units]; the output [time, batch, dirs * num_units] (forward units first).
 *
 * What vigil leaves out (clear errors, never another computation): input_mode
 * "skip_input" (also "auto_select" with input_size == num_units, which means
 * skip_input) fails with UNIMPLEMENTED; so does a nonzero dropout between layers in
 * training (cuDNN's dropout stream cannot be reproduced; at inference dropout is
 * ignored, as in cuDNN); float16/float64 too.
 * Sequence lengths (CudnnRNNV3) are not offered.
 *
 *     vg_cudnn_rnn_options o = {.num_layers = 2, .num_units = 64};
 *     vg_cudnn_layer *lstm = vg_cudnn_lstm_new(&o);       // "cudnn_lstm/opaque_kernel"
 *     vg_output outputs, hc[2];                         // hc: h, c
 *     vg_cudnn_layer_call(lstm, g, x, NULL, true, &outputs, hc, NULL); // x [time, batch, depth]
 *     vg_saver *saver = vg_saver_new(g, NULL, NULL);    // + the canonical tensors
 *     vg_saver_free(saver);
 *     vg_cudnn_layer_free(lstm);
 */
#ifndef VIGIL_CUDNN_RNN_H
#define VIGIL_CUDNN_RNN_H

#include "ops.h"
#include "variables.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_rnn_cell vg_rnn_cell;

/* The attributes the cuDNN ops share (zero = TF's defaults). */
typedef struct vg_cudnn_rnn_attrs {
    const char *rnn_mode;   /* NULL: "lstm" */
    const char *input_mode; /* NULL: "linear_input" */
    const char *direction;  /* NULL: "unidirectional"; or "bidirectional" */
    float dropout;          /* 0 */
    int64_t seed, seed2;    /* 0 */
    bool inference;         /* false: TF's is_training = true (CudnnRNN only) */
} vg_cudnn_rnn_attrs;

/* CudnnRNN(input [time, batch, input_size], input_h, input_c [num_layers * dirs, batch,
 * num_units], params (the opaque buffer [params_size]); a may be NULL): outputs
 * output [time, batch, dirs * num_units], output_h, output_c, reserve_space (vigil's
 * float32 buffer of activations for CudnnRNNBackprop). num_layers is input_h's first
 * dimension / dirs. Builder (sticky graph error, NULL) and run-time failures:
 * INVALID_ARGUMENT naming the input (rank, dtype, shape mismatch, "params size
 * mismatch: N vs. M"), UNIMPLEMENTED as at the top. Differentiable w.r.t. input,
 * input_h, input_c and params (CudnnRNNBackprop). */
VG_API vg_op *vg_cudnn_rnn(vg_graph *g, vg_output input, vg_output input_h, vg_output input_c, vg_output params,
                           const vg_cudnn_rnn_attrs *a, const char *name);
/* CudnnRNNParamsSize(num_layers, num_units, input_size: int32 scalars): the opaque
 * buffer's number of elements, [1] of S (VG_INT32 or VG_INT64; 0 = int32). */
VG_API vg_output vg_cudnn_rnn_params_size(vg_graph *g, vg_output num_layers, vg_output num_units, vg_output input_size,
                                          vg_dtype S, const vg_cudnn_rnn_attrs *a, const char *name);
/* CudnnRNNParamsToCanonical(num_layers, num_units, input_size, params; num_params =
 * num_layers * dirs * 8): outputs 0..num_params-1 the weights ([num_units, in] each, in
 * the layout's order), then num_params biases [num_units]. */
VG_API vg_op *vg_cudnn_rnn_params_to_canonical(vg_graph *g, vg_output num_layers, vg_output num_units,
                                               vg_output input_size, vg_output params, int num_params,
                                               const vg_cudnn_rnn_attrs *a, const char *name);
/* CudnnRNNCanonicalToParams(num_layers, num_units, input_size, weights[num_params],
 * biases[num_params]): the opaque buffer. Each weight and bias may have any shape with
 * the right number of elements; a wrong one fails with INVALID_ARGUMENT naming it
 * ("weights 9 (layer 0 backward, input) must be float32 with 12 elements ..."). */
VG_API vg_output vg_cudnn_rnn_canonical_to_params(vg_graph *g, vg_output num_layers, vg_output num_units,
                                                  vg_output input_size, const vg_output *weights,
                                                  const vg_output *biases, int num_params,
                                                  const vg_cudnn_rnn_attrs *a, const char *name);

/* ---- the CudnnLSTM and CudnnGRU layers ---------------------------------- */

typedef struct vg_cudnn_rnn_options {
    int num_layers;                            /* >= 1 */
    int64_t num_units;                         /* >= 1 */
    const char *input_mode;                    /* NULL: "linear_input" */
    const char *direction;                     /* NULL: "unidirectional" */
    float dropout;                             /* 0 */
    int64_t seed;                              /* op seed of the initializers; 0 = none */
    const vg_initializer *kernel_initializer;  /* NULL: glorot_uniform(seed); copied */
    const vg_initializer *bias_initializer;    /* NULL: zeros; copied */
    const char *name;                          /* NULL: "cudnn_lstm" / "cudnn_gru" (made unique) */
} vg_cudnn_rnn_options;

typedef struct vg_cudnn_layer vg_cudnn_layer;

/* tf.contrib.cudnn_rnn.CudnnLSTM / CudnnGRU / ...(num_layers, num_units, input_mode,
 * direction, dropout, seed, dtype=float32, kernel_initializer, bias_initializer, name).
 * NULL for NULL o, num_layers < 1 (or > 32), num_units < 1, an unknown direction or
 * input_mode, or out of memory. Owned by the caller (vg_cudnn_layer_free). */
VG_API vg_cudnn_layer *vg_cudnn_lstm_new(const vg_cudnn_rnn_options *o);
VG_API vg_cudnn_layer *vg_cudnn_gru_new(const vg_cudnn_rnn_options *o);
/* tf.contrib.cudnn_rnn.CudnnRNNTanh / CudnnRNNRelu (layer names "cudnn_rnn_tanh",
 * "cudnn_rnn_relu"); their compatible cell is BasicRNNCell (vigil/rnn.h,
 * vg_basic_rnn_cell_new with VG_ACT_NONE = tanh or VG_ACT_RELU). */
VG_API vg_cudnn_layer *vg_cudnn_rnn_tanh_new(const vg_cudnn_rnn_options *o);
VG_API vg_cudnn_layer *vg_cudnn_rnn_relu_new(const vg_cudnn_rnn_options *o);
/* Frees the layer (the graph keeps its variable and saveables). NULL is ignored. */
VG_API void vg_cudnn_layer_free(vg_cudnn_layer *l);

/* outputs, state = layer(inputs, initial_state, training): inputs [time, batch, depth]
 * (time-major, depth known). The first call builds the layer as TF's build does: a
 * variable scope named after the layer, made unique ("cudnn_lstm", "cudnn_lstm_1"),
 * holding the variable "opaque_kernel" (trainable, shape [params_size]) whose initial
 * value is CudnnRNNCanonicalToParams of the canonical weights (each drawn by
 * kernel_initializer with its canonical shape [num_units, in]) and biases
 * (bias_initializer); and the saveable objects (TF's CudnnLSTMSaveable /
 * CudnnGRUSaveable): every Saver made afterwards without a var_list saves, besides
 * "<scope>/opaque_kernel", per layer (and direction) the compatible cell's variables
 * under the names the cell has in a MultiRNNCell under dynamic_rnn (unidirectional) or
 * in stack_bidirectional_dynamic_rnn (bidirectional), inside a variable scope named as
 * the layer's:
 *   "<scope>/rnn/multi_rnn_cell/cell_<l>/<cell>/..."
 *   "<scope>/stack_bidirectional_rnn/cell_<l>/bidirectional_rnn/{fw,bw}/<cell>/..."
 * LSTM: <cell> "cudnn_compatible_lstm_cell", "kernel" [in + units, 4 * units] (gates
 * i, c, f, o) and "bias" [4 * units] (bW + bR). GRU: "cudnn_compatible_gru_cell",
 * "gates/kernel" [in + units, 2 * units] (r, u), "gates/bias" (bW + bR),
 * "candidate/input_projection/{kernel,bias}" (W_h transposed, bW_h) and
 * "candidate/hidden_projection/{kernel,bias}" (R_h transposed, bR_h). rnn_tanh / relu:
 * "basic_rnn_cell", "kernel" [in + units, units] and "bias" (bW + bR). The restore puts
 * them back into the opaque buffer (a summed bias is halved into bW and bR, as TF does),
 * after the opaque variable's own restore when both are in the checkpoint. A Saver given
 * a var_list must list all of vg_cudnn_layer_saveable's tensors or none (vg_saver_new
 * fails with INVALID_ARGUMENT naming a listed and an absent one otherwise). Later calls reuse the variable. initial_state NULL: zeros,
 * else {h, c} (LSTM) or {h} (the others), each [num_layers * dirs, batch, num_units].
 * training false passes is_training = false. Writes *outputs [time, batch, dirs *
 * num_units], final_state[0] = h and (LSTM) final_state[1] = c. Failures (returned, in
 * st and the graph's sticky error): INVALID_ARGUMENT (NULL arguments, inputs not rank 3
 * or of unknown depth, another depth than the first call's, a call in another graph),
 * the op's errors. */
VG_API vg_code vg_cudnn_layer_call(vg_cudnn_layer *l, vg_graph *g, vg_output inputs, const vg_output *initial_state,
                                   bool training, vg_output *outputs, vg_output *final_state, vg_status *st);
/* The opaque_kernel variable's ref output ({NULL, 0} before the first call). */
VG_API vg_output vg_cudnn_layer_opaque_kernel(const vg_cudnn_layer *l);
/* The layer's saveable tensors (TF's order: the weights of every layer and direction,
 * then the biases; key: vg_saveable_key of vigil/data.h), for a Saver's var_list;
 * 0 / {NULL, 0} before the first call or out of range. */
VG_API int vg_cudnn_layer_num_saveables(const vg_cudnn_layer *l);
VG_API vg_output vg_cudnn_layer_saveable(const vg_cudnn_layer *l, int i);

/* tf.contrib.cudnn_rnn.CudnnCompatibleLSTMCell(num_units): LSTMBlockCell with
 * forget_bias 0, no cell clipping, no peepholes, named "cudnn_compatible_lstm_cell"
 * (variables ".../cudnn_compatible_lstm_cell/{kernel,bias}"); use it in
 * vg_dynamic_rnn / MultiRNNCell (vigil/rnn.h) with time_major inputs to run a
 * CudnnLSTM's checkpoint without cuDNN. NULL for num_units < 1 or out of memory. */
VG_API vg_rnn_cell *vg_cudnn_compatible_lstm_cell_new(int64_t num_units);
/* tf.contrib.cudnn_rnn.CudnnCompatibleGRUCell(num_units): cuDNN's GRU variant
 *   [r, u] = sigmoid([x, h] gates/kernel + gates/bias)   (bias initialized to ones)
 *   c = tanh(x input_projection/kernel + b + r * (h hidden_projection/kernel + b))
 *   h' = u * h + (1 - u) * c
 * as a user-defined cell (vg_custom_rnn_cell_new) whose build opens a variable scope
 * "cudnn_compatible_gru_cell" (made unique) in the driver's scope; one state [num_units].
 * Two of them built directly in the same variable scope fail with INVALID_ARGUMENT (give
 * each its own, as MultiRNNCell's cell_<i> and the drivers do). NULL for num_units < 1
 * or out of memory. */
VG_API vg_rnn_cell *vg_cudnn_compatible_gru_cell_new(int64_t num_units);

#ifdef __cplusplus
}
#endif
#endif
