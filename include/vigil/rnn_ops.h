/*
 * vigil/rnn_ops.h - TF 1.15's fused LSTM ops (tensorflow/contrib/rnn, core/ops/rnn_ops.cc):
 * LSTMBlockCell (one time step) and BlockLSTM (a whole sequence, time-major), float32,
 * with their gradient ops LSTMBlockCellGrad and BlockLSTMGrad. The weight matrix w is
 * [input_size + num_units, 4 * num_units] with the gates in TF's order i, ci, f, o
 * (the same column order as tf.nn.rnn_cell.LSTMCell's i, j, f, o), b is [4 * num_units];
 * wci, wcf, wco are the peephole weights [num_units] (read only when use_peephole).
 *
 *   xh = [x, h_prev]; [i, ci, f, o] = xh * w + b
 *   i = sigmoid(i + cs_prev * wci); f = sigmoid(f + forget_bias + cs_prev * wcf)
 *   ci = tanh(ci); cs = ci * i + cs_prev * f; cs = clip(cs, -cell_clip, cell_clip) if cell_clip > 0
 *   o = sigmoid(o + cs * wco); co = tanh(cs); h = co * o
 *
 * The ops have seven outputs, i, cs, f, o, ci, co, h, in that order (vg_out(op, 6) is h).
 * Gradients (as TF's lstm_ops.py) flow from cs and h; cell clipping is not differentiated
 * (TF's gradient kernel ignores it too). Builders return NULL and set the graph's sticky
 * error on bad input (INVALID_ARGUMENT naming the input: rank, dtype, or a size that does
 * not match w).
 */
#ifndef VIGIL_RNN_OPS_H
#define VIGIL_RNN_OPS_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* LSTMBlockCell(x [batch, input], cs_prev [batch, units], h_prev [batch, units], w, wci,
 * wcf, wco, b; forget_bias, cell_clip (<= 0: none), use_peephole). */
VG_API vg_op *vg_lstm_block_cell(vg_graph *g, vg_output x, vg_output cs_prev, vg_output h_prev, vg_output w,
                                 vg_output wci, vg_output wcf, vg_output wco, vg_output b, float forget_bias,
                                 float cell_clip, bool use_peephole, const char *name);

/* BlockLSTM(seq_len_max (int64 scalar), x [time, batch, input], cs_prev, h_prev [batch,
 * units], w, wci, wcf, wco, b; ...): outputs [time, batch, units]; time steps at or after
 * seq_len_max are zeros in every output. */
VG_API vg_op *vg_block_lstm(vg_graph *g, vg_output seq_len_max, vg_output x, vg_output cs_prev, vg_output h_prev,
                            vg_output w, vg_output wci, vg_output wcf, vg_output wco, vg_output b, float forget_bias,
                            float cell_clip, bool use_peephole, const char *name);

#ifdef __cplusplus
}
#endif
#endif
