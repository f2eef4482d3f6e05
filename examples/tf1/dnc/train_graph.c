/* train_graph.c - the graph train.py's train() builds around the data (google-deepmind/dnc
 * 859834212572054d866c671577f7dd370ad09561): run_model (dynamic_rnn, time major, over
 * the DNC core), the visualisation output, the masked sigmoid cross-entropy, gradients
 * clipped by global norm, the global step and RMSProp's apply_gradients. Factored out of
 * dnc_train.c (same calls, same order) so that bench/models/dnc.c builds the same step
 * over fed sequences. */
#include "dnc.h"
#include <stdlib.h>
#include <string.h>

/* run_model(input_sequence, output_size) */
static vg_output run_model(vg_graph *g, const dnc_train_config *cfg, dnc_core **core_out, vg_output input_sequence,
                           int64_t output_size, vg_status *st) {
    dnc_core *dnc_core = dnc_new(cfg->memory_size, cfg->word_size, cfg->num_read_heads, cfg->num_write_heads,
                                 cfg->hidden_size, output_size, cfg->clip_value);
    *core_out = dnc_core;
    if (!dnc_core) return vg_out(NULL, 0);
    vg_output initial_state[DNC_STATE_COUNT], final_state[DNC_STATE_COUNT], output_sequence;
    dnc_initial_state(g, dnc_core, cfg->batch_size, initial_state);
    vg_dynamic_rnn(dnc_core->cell, g, input_sequence, vg_out(NULL, 0), initial_state, VG_FLOAT, 0, true /* time_major */,
                   NULL, &output_sequence, final_state, st);
    return output_sequence;
}

vg_code dnc_train_graph_build(vg_graph *g, const dnc_train_config *cfg, vg_output observations, vg_output target,
                              vg_output mask, int64_t output_size, bool time_average_cost, bool log_prob_in_bits,
                              dnc_train_graph *out, vg_status *st) {
    memset(out, 0, sizeof *out);
    vg_status local;
    if (!st) st = &local;
    vg_output output_logits = run_model(g, cfg, &out->core, observations, output_size, st);
    /* used for visualization */
    out->output = vg_round(
        g, vg_mul(g, vg_expand_dims(g, mask, -1, "ExpandDims"), vg_sigmoid(g, output_logits, "Sigmoid"), "mul"), "Round");
    out->train_loss = dnc_masked_sigmoid_cross_entropy(g, output_logits, target, mask, time_average_cost, log_prob_in_bits);
    /* optimizer with global norm clipping */
    int nvars = 0;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nvars);
    vg_output *trainable_variables = calloc((size_t)(nvars ? nvars : 1) * 3, sizeof(vg_output));
    if (!trainable_variables) return st->code = VG_RESOURCE_EXHAUSTED;
    vg_output *grads = trainable_variables + nvars, *clipped = grads + nvars;
    if (nvars) memcpy(trainable_variables, tv, sizeof(vg_output) * (size_t)nvars);
    vg_code rc = VG_OK;
    if (vg_graph_status(g, st) != VG_OK || !out->core) {
        rc = out->core ? st->code : (st->code = VG_RESOURCE_EXHAUSTED);
        goto done;
    }
    if ((rc = vg_gradients(g, &out->train_loss, 1, trainable_variables, nvars, NULL, grads, st)) != VG_OK) goto done;
    vg_clip_by_global_norm(g, grads, nvars, vg_const_f32(g, (float)cfg->max_grad_norm, "clip_by_global_norm/clip_norm"),
                           vg_out(NULL, 0), clipped, NULL, NULL);
    out->global_step = vg_get_or_create_global_step(g);
    out->optimizer = vg_optimizer_new_rmsprop(cfg->learning_rate, 0.9, 0.0, cfg->optimizer_epsilon);
    out->train_step =
        vg_optimizer_apply_gradients(out->optimizer, g, clipped, trainable_variables, nvars, out->global_step, NULL);
    rc = vg_graph_status(g, st);
done:
    free(trainable_variables);
    return rc;
}

void dnc_train_graph_free(dnc_train_graph *t) {
    vg_optimizer_free(t->optimizer);
    dnc_free(t->core);
    t->optimizer = NULL;
    t->core = NULL;
}
