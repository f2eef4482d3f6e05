/* ptb_lm.c - bench_models' PTB word language model as tensorflow/models'
 * tutorials/rnn/ptb/ptb_word_lm.py builds its training graph (PTBModel, is_training,
 * rnn_mode BLOCK), at the shape: vocabulary 10000, embedding 256 (the tutorial
 * uses hidden_size for both; here the embedding is 256 and the LSTMs 512 wide, so layer
 * 0's kernel is [256 + 512, 2048]), two LSTMBlockCell layers of 512 units (forget_bias
 * 0), num_steps 35 and batch 20 (MediumConfig's; --size sets num_steps), keep_prob 0.5,
 * init_scale 0.05, SGD at lr 1.0 (the tutorial's lr variable, assigned 1.0), max_grad_norm 5.
 *
 * Graph, name scope "Train", variable scope "Model" (random_uniform(-0.05, 0.05)):
 * tf.nn.embedding_lookup on "Model/embedding" [10000, 256] of the int32 input_data [20, 35],
 * tf.nn.dropout 0.5; MultiRNNCell of DropoutWrapper(LSTMBlockCell, output_keep_prob 0.5)
 * ("Model/RNN/multi_rnn_cell/cell_<i>/lstm_cell/{kernel,bias}") called step by step on
 * inputs[:, t, :] (StridedSlice) from the zero state (fed with zeros, as run_epoch feeds the
 * previous final state); the 35 outputs concatenated on axis 1, reshaped to [700, 512],
 * xw_plus_b with "Model/softmax_w" [512, 10000] and "Model/softmax_b", reshaped to
 * [20, 35, 10000]; sequence_loss (weights ones, averaged across the batch only), cost =
 * reduce_sum; tf.gradients of the cost w.r.t. the trainable variables, clip_by_global_norm
 * 5, GradientDescentOptimizer(lr).apply_gradients with the global step. The embedding's
 * gradient is vigil's graph form of IndexedSlices (UnsortedSegmentSum), applied densely
 * by GradientDescent (vigil/optimizer.h). Fetched: the cost. */
#include "models.h"
#include <stdlib.h>
#include <string.h>

enum { VOCAB = 10000, EMB = 256, HIDDEN = 512, LAYERS = 2 };
#define KEEP_PROB 0.5
#define INIT_SCALE 0.05
#define MAX_GRAD_NORM 5.0

/* tf.nn.dropout(x, keep_prob) as TF 1.15 builds it. */
static vg_output dropout(vg_graph *g, vg_output x, double keep) {
    vg_graph_push_scope(g, "dropout");
    vg_output shape = vg_shape_op(g, x, VG_INT32, "Shape");
    vg_output u = vg_random_uniform_range(g, shape, 0.0, 1.0, VG_FLOAT, 0, "random_uniform");
    vg_output mask = vg_cast(g, vg_greater_equal(g, u, vg_const_f32(g, (float)(1.0 - keep), "rate"), "GreaterEqual"),
                             VG_FLOAT, "Cast");
    vg_output y = vg_mul(g, vg_mul(g, x, vg_const_f32(g, (float)(1.0 / keep), "truediv"), "mul"), mask, "mul_1");
    vg_graph_pop_scope(g);
    return y;
}

typedef struct ptb_state { vg_rnn_cell *cell; } ptb_state;

static void cleanup(void *p) {
    ptb_state *s = p;
    vg_rnn_cell_free(s->cell);
    free(s);
}

static int build(vg_graph *g, int batch, int steps, bm_built *b, vg_status *st) {
    int64_t xd[2] = {batch, steps};
    ptb_state *ps = calloc(1, sizeof *ps);
    if (!ps) return 1;
    b->cleanup = cleanup, b->state = ps;
    vg_output gs = vg_get_or_create_global_step(g);
    vg_graph_push_scope(g, "Train");
    vg_output x = vg_placeholder(g, VG_INT32, xd, 2, "input_data");
    vg_output y = vg_placeholder(g, VG_INT32, xd, 2, "targets");
    vg_initializer init = vg_init_random_uniform(-INIT_SCALE, INIT_SCALE, 0);
    vg_variable_scope_opts so = {.initializer = &init};
    vg_variable_scope_push(g, "Model", &so);
    vg_variable emb = vg_get_variable(g, "embedding", VG_FLOAT, (int64_t[]){VOCAB, EMB}, 2, vg_init_default(),
                                      VG_VAR_TRAINABLE);
    vg_output inputs = dropout(g, vg_embedding_lookup(g, emb.read, x, NULL), KEEP_PROB);

    vg_rnn_cell *cells[LAYERS];
    for (int i = 0; i < LAYERS; i++)
        cells[i] = vg_dropout_wrapper_new(vg_lstm_block_cell_new(HIDDEN, 0.0f, 0.0f, false), 1.0, KEEP_PROB, 1.0, 0);
    vg_rnn_cell *cell = ps->cell = vg_multi_rnn_cell_new(cells, LAYERS);
    if (!cell) return 1;
    int ns = vg_rnn_cell_state_count(cell);
    vg_output state[2 * LAYERS], outs[64];
    if (ns != 2 * LAYERS || steps > 64) return 1;
    if (vg_rnn_cell_zero_state(cell, g, batch, (vg_output){NULL, 0}, VG_FLOAT, state)) return 1;
    /* run_epoch feeds the initial state's c and h of each layer */
    for (int i = 0; i < ns; i++) {
        int64_t sd[2] = {batch, HIDDEN};
        b->feeds[2 + i] = state[i];
        if (!(b->fv[2 + i] = vg_tensor_new(VG_FLOAT, sd, 2, st))) return 1;
        memset(vg_tensor_data(b->fv[2 + i]), 0, sizeof(float) * (size_t)(batch * HIDDEN));
    }
    vg_variable_scope_push(g, "RNN", NULL);
    for (int t = 0; t < steps; t++) {
        vg_strided_slice_masks m = {.begin_mask = 5, .end_mask = 5, .shrink_axis_mask = 2};
        vg_output xt = vg_strided_slice_c(g, inputs, (int32_t[]){0, t, 0}, (int32_t[]){0, t + 1, 0}, NULL, 3, &m, NULL);
        if (vg_rnn_cell_call(cell, g, xt, state, &outs[t], state)) return 1;
    }
    vg_variable_scope_pop(g);
    vg_output output = vg_reshape_c(g, vg_concat_c(g, outs, steps, 1, "concat"), (int64_t[]){-1, HIDDEN}, 2, "Reshape");
    vg_variable sw = vg_get_variable(g, "softmax_w", VG_FLOAT, (int64_t[]){HIDDEN, VOCAB}, 2, vg_init_default(),
                                     VG_VAR_TRAINABLE);
    vg_variable sb = vg_get_variable(g, "softmax_b", VG_FLOAT, (int64_t[]){VOCAB}, 1, vg_init_default(),
                                     VG_VAR_TRAINABLE);
    vg_output logits = vg_xw_plus_b(g, output, sw.read, sb.read, NULL);
    logits = vg_reshape_c(g, logits, (int64_t[]){batch, steps, VOCAB}, 3, "Reshape_1");
    vg_output w = vg_const_fill(g, VG_FLOAT, xd, 2, 1.0, "ones");
    vg_output loss = vg_sequence_loss(g, logits, y, w, false, true, NULL);
    vg_output cost = vg_reduce_sum(g, loss, NULL, -1, false, "Sum");

    /* self._lr = tf.Variable(0.0, trainable=False), assigned config.learning_rate (1.0) */
    vg_variable lr = vg_variable_new(g, NULL, vg_const_f32(g, 1.0f, "Variable/initial_value"), 0);
    int ntv = 0;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &ntv);
    vg_output grads[16], clipped[16];
    if (ntv <= 0 || ntv > 16) return 1;
    vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
    vg_optimizer_set_learning_rate_tensor(opt, lr.read);
    if (vg_optimizer_compute_gradients(opt, g, cost, tv, ntv, grads, st) ||
        vg_clip_by_global_norm(g, grads, ntv, vg_const_f32(g, (float)MAX_GRAD_NORM, "Const"), (vg_output){NULL, 0},
                               clipped, NULL, NULL)) {
        vg_optimizer_free(opt);
        return 1;
    }
    b->train_op = vg_optimizer_apply_gradients(opt, g, clipped, tv, ntv, gs, NULL);
    vg_optimizer_free(opt);
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    if (!b->train_op) return 1;
    b->train = cost;
    b->feeds[0] = x, b->feeds[1] = y, b->nfeeds = 2 + ns;
    b->fv[0] = vg_tensor_new(VG_INT32, xd, 2, st);
    b->fv[1] = vg_tensor_new(VG_INT32, xd, 2, st);
    if (!b->fv[0] || !b->fv[1]) return 1;
    int32_t *xi = vg_tensor_data(b->fv[0]), *yi = vg_tensor_data(b->fv[1]);
    for (int i = 0; i < batch * steps; i++) xi[i] = rand() % VOCAB, yi[i] = rand() % VOCAB;
    return 0;
}

const bm_model bm_ptb_lm = {"ptb_lm", 20, 35, build};
