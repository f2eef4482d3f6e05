/* model.c - nmt/model.py: BaseModel (_set_params_initializer, build_graph, _build_decoder,
 * _compute_loss, _set_train_or_infer with the learning-rate warmup / decay, gradient_clip
 * of model_helper.py) and Model (_build_encoder: "uni" and "bi"). The decoder cell is
 * attention_model.c's (or the plain Model's). */
#include "nmt.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_STATE 32

typedef struct lr_ctx {
    vg_output lr, inv_decay, global_step;
    double decay_steps, decay_factor;
    int64_t start_decay_step;
} lr_ctx;

static vg_code lr_warm(vg_graph *g, void *u, vg_output *o) {
    lr_ctx *c = u;
    o[0] = vg_mul(g, c->inv_decay, c->lr, NULL);
    return VG_OK;
}
static vg_code lr_same(vg_graph *g, void *u, vg_output *o) {
    lr_ctx *c = u;
    o[0] = vg_identity(g, c->lr, NULL);
    return VG_OK;
}
/* tf.train.exponential_decay(lr, global_step - start_decay_step, decay_steps, decay_factor, staircase=True) */
static vg_code lr_decay(vg_graph *g, void *u, vg_output *o) {
    lr_ctx *c = u;
    vg_output step = vg_cast(g, vg_sub(g, c->global_step, vg_const_i32(g, (int32_t)c->start_decay_step, NULL), NULL),
                             VG_FLOAT, NULL);
    /* lr * decay_factor ^ floor(step / decay_steps), lr a tensor here */
    vg_output p = vg_floor(g, vg_div(g, step, vg_const_f32(g, (float)c->decay_steps, NULL), NULL), NULL);
    o[0] = vg_mul(g, c->lr, vg_pow(g, vg_const_f32(g, (float)c->decay_factor, NULL), p, NULL), "ExponentialDecay");
    return VG_OK;
}

/* _get_decay_info */
static void decay_info(const nmt_hparams *hp, int64_t *start, int64_t *steps, double *factor) {
    const char *s = hp->decay_scheme;
    if (!strcmp(s, "luong5") || !strcmp(s, "luong10") || !strcmp(s, "luong234")) {
        int times;
        *factor = 0.5;
        if (!strcmp(s, "luong234"))
            *start = (int64_t)(hp->num_train_steps * 2.0 / 3.0), times = 4;
        else
            *start = (int64_t)(hp->num_train_steps / 2.0), times = !strcmp(s, "luong5") ? 5 : 10;
        *steps = (int64_t)((double)(hp->num_train_steps - *start) / times);
    } else { /* no decay */
        *start = hp->num_train_steps, *steps = 0, *factor = 1.0;
    }
}

/* model_helper.create_emb_for_encoder_and_decoder (share_vocab False, no partitions, no
 * pretrained embedding files): "embeddings/encoder/embedding_encoder",
 * "embeddings/decoder/embedding_decoder", the scope's initializer */
static void init_embeddings(vg_graph *g, const nmt_hparams *hp, nmt_model *m) {
    vg_variable_scope_push(g, "embeddings", NULL);
    vg_variable_scope_push(g, "encoder", NULL);
    vg_get_variable_opts o = {0};
    o.dims = (const int64_t[]){hp->src_vocab_size, hp->num_units};
    o.ndims = 2;
    m->embedding_encoder = vg_get_variable_ex(g, "embedding_encoder", &o).ref;
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "decoder", NULL);
    o.dims = (const int64_t[]){hp->tgt_vocab_size, hp->num_units};
    m->embedding_decoder = vg_get_variable_ex(g, "embedding_decoder", &o).ref;
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
}

/* Model._build_encoder: encoder_outputs [max_time, batch, units] (time major) and the
 * state (n tensors, TF's nest.flatten order) */
static vg_code build_encoder(vg_graph *g, const nmt_hparams *hp, nmt_mode mode, const nmt_batched_input *it,
                             const nmt_model *m, vg_output *outputs, vg_output *state, int *nstate,
                             vg_rnn_cell **cells_out) {
    vg_output seq = it->source;
    if (hp->time_major) seq = vg_transpose_c(g, seq, (const int32_t[]){1, 0}, 2, NULL);
    vg_variable_scope_push(g, "encoder", NULL);
    vg_output emb = vg_embedding_lookup(g, m->embedding_encoder, seq, NULL);
    vg_code rc;
    if (!strcmp(hp->encoder_type, "bi")) {
        int64_t nbi = hp->num_encoder_layers / 2, nbires = hp->num_encoder_residual_layers / 2;
        vg_rnn_cell *fw = nmt_create_rnn_cell(hp->unit_type, hp->num_units, nbi, nbires, hp->forget_bias,
                                              hp->dropout, mode);
        vg_rnn_cell *bw = nmt_create_rnn_cell(hp->unit_type, hp->num_units, nbi, nbires, hp->forget_bias,
                                              hp->dropout, mode);
        cells_out[0] = fw, cells_out[1] = bw;
        vg_output bi[2], sfw[MAX_STATE], sbw[MAX_STATE];
        rc = vg_bidirectional_dynamic_rnn(fw, bw, g, emb, it->source_sequence_length, NULL, NULL, VG_FLOAT, 0,
                                          hp->time_major, NULL, bi, sfw, sbw, NULL);
        /* encoder_outputs = tf.concat(bi_outputs, -1) */
        *outputs = vg_concat_c(g, bi, 2, -1, NULL);
        int per_layer = vg_rnn_cell_state_count(fw) / (int)nbi, k = 0;
        if (nbi == 1) { /* encoder_state = bi_encoder_state: (fw state, bw state) */
            for (int i = 0; i < per_layer; i++) state[k++] = sfw[i];
            for (int i = 0; i < per_layer; i++) state[k++] = sbw[i];
        } else { /* fw and bw states of each layer alternate */
            for (int l = 0; l < nbi; l++) {
                for (int i = 0; i < per_layer; i++) state[k++] = sfw[l * per_layer + i];
                for (int i = 0; i < per_layer; i++) state[k++] = sbw[l * per_layer + i];
            }
        }
        *nstate = k;
    } else {
        vg_rnn_cell *cell = nmt_create_rnn_cell(hp->unit_type, hp->num_units, hp->num_encoder_layers,
                                                hp->num_encoder_residual_layers, hp->forget_bias, hp->dropout, mode);
        cells_out[0] = cell;
        rc = vg_dynamic_rnn(cell, g, emb, it->source_sequence_length, NULL, VG_FLOAT, 0, hp->time_major, NULL,
                            outputs, state, NULL);
        *nstate = vg_rnn_cell_state_count(cell);
    }
    vg_variable_scope_pop(g);
    return rc ? rc : vg_graph_status(g, NULL);
}

vg_code nmt_model_build(vg_graph *g, const nmt_hparams *hp, nmt_mode mode, const nmt_batched_input *it,
                        const vg_lookup_table *src_table, const vg_lookup_table *tgt_table,
                        const vg_lookup_table *reverse_tgt_table, nmt_model *m, vg_status *st) {
    (void)src_table;
    memset(m, 0, sizeof *m);
    m->mode = mode;
    bool beam = mode == NMT_INFER && !strcmp(hp->infer_mode, "beam_search");
    /* _set_params_initializer */
    m->batch_size = vg_size(g, it->source_sequence_length, NULL);
    m->global_step = vg_variable_new(g, NULL, vg_const_i32(g, 0, NULL), 0); /* tf.Variable(0, trainable=False) */
    vg_initializer init = nmt_get_initializer(hp->init_op, hp->random_seed, hp->init_weight);
    vg_vscope_set_initializer(vg_get_variable_scope(g), &init);
    init_embeddings(g, hp, m);

    /* build_graph: the projection, tf.layers.Dense(tgt_vocab_size, use_bias=False,
     * name="output_projection"); its variable is made by its first call, in
     * dynamic_seq2seq/decoder */
    vg_layer_config pc = {.kind = VG_LAYER_DENSE};
    pc.units = hp->tgt_vocab_size;
    pc.no_bias = true;
    pc.name = "output_projection";
    vg_layer *output_layer = vg_layer_new(&pc);

    vg_variable_scope_push(g, "dynamic_seq2seq", NULL);
    vg_output enc_out, enc_state[MAX_STATE];
    int n_enc = 0;
    vg_rnn_cell *enc_cells[2] = {NULL, NULL};
    vg_code rc = build_encoder(g, hp, mode, it, m, &enc_out, enc_state, &n_enc, enc_cells);

    /* _build_decoder */
    vg_output tgt_sos_id =
        vg_cast(g, vg_lookup_table_lookup(g, tgt_table, vg_const_string(g, NMT_SOS, NULL), NULL), VG_INT32, NULL);
    vg_output tgt_eos_id =
        vg_cast(g, vg_lookup_table_lookup(g, tgt_table, vg_const_string(g, NMT_EOS, NULL), NULL), VG_INT32, NULL);
    (void)tgt_eos_id;
    /* _get_infer_maximum_iterations */
    vg_output maximum_iterations;
    if (hp->tgt_max_len_infer > 0)
        maximum_iterations = vg_const_i32(g, (int32_t)hp->tgt_max_len_infer, NULL);
    else
        maximum_iterations = vg_cast(
            g,
            vg_round(g,
                     vg_mul(g, vg_cast(g, vg_reduce_max(g, it->source_sequence_length, NULL, -1, false, NULL), VG_FLOAT,
                                       NULL),
                            vg_const_f32(g, (float)hp->decoding_length_factor, NULL), NULL),
                     NULL),
            VG_INT32, NULL);

    nmt_decoder_cell dc = {0};
    vg_output init_state[MAX_STATE], logits = {0};
    int nstate = 0;
    vg_variable_scope_push(g, "decoder", NULL);
    if (rc == VG_OK)
        rc = nmt_build_decoder_cell(g, hp, mode, enc_out, enc_state, n_enc, it->source_sequence_length, &dc,
                                    init_state, &nstate);
    vg_variable_scope_pop(g);
    /* dynamic_decode(..., scope=decoder_scope) re-enters "dynamic_seq2seq/decoder" */
    vg_dynamic_decode_options dopt = {0};
    dopt.output_time_major = hp->time_major;
    dopt.scope = "decoder";
    vg_output outs[VG_DECODER_MAX_OUTPUTS], fstate[MAX_STATE + 4];
    if (rc == VG_OK && mode != NMT_INFER) {
        vg_output target_input = it->target_input;
        if (hp->time_major) target_input = vg_transpose_c(g, target_input, (const int32_t[]){1, 0}, 2, NULL);
        vg_variable_scope_push(g, "decoder", NULL);
        vg_output dec_emb = vg_embedding_lookup(g, m->embedding_decoder, target_input, NULL);
        vg_decoder_helper *helper =
            vg_training_helper_new(g, dec_emb, it->target_sequence_length, hp->time_major, NULL);
        vg_variable_scope_pop(g);
        vg_decoder *d = helper ? vg_basic_decoder_new(dc.cell, helper, init_state, NULL) : NULL;
        rc = d ? vg_dynamic_decode(g, d, &dopt, outs, fstate, NULL, NULL) : vg_graph_status(g, NULL);
        vg_decoder_free(d);
        vg_decoder_helper_free(helper);
        if (rc == VG_OK) {
            vg_variable_scope_push(g, "decoder", NULL);
            logits = vg_layer_apply(output_layer, g, outs[0], (vg_output){0}); /* self.output_layer(outputs.rnn_output) */
            vg_variable_scope_pop(g);
        }
    } else if (rc == VG_OK) {
        /* start_tokens = tf.fill([self.batch_size], tgt_sos_id) */
        vg_output start_tokens = vg_fill(g, vg_reshape_c(g, m->batch_size, (const int64_t[]){1}, 1, NULL),
                                         tgt_sos_id, NULL);
        int32_t end_token = 2; /* tgt_eos_id: </s> is line 2 of the checked vocab (check_vocab) */
        vg_decoder *d;
        vg_decoder_helper *helper = NULL;
        if (beam) {
            d = vg_beam_search_decoder_new(g, dc.cell, m->embedding_decoder, start_tokens, end_token, init_state,
                                           (int)hp->beam_width, output_layer, hp->length_penalty_weight);
        } else {
            helper = vg_greedy_embedding_helper_new(g, m->embedding_decoder, start_tokens, end_token);
            d = helper ? vg_basic_decoder_new(dc.cell, helper, init_state, output_layer) : NULL;
        }
        dopt.maximum_iterations = maximum_iterations;
        rc = d ? vg_dynamic_decode(g, d, &dopt, outs, fstate, NULL, NULL) : vg_graph_status(g, NULL);
        vg_decoder_free(d);
        vg_decoder_helper_free(helper);
        if (rc == VG_OK) {
            if (beam) {
                m->sample_id = outs[0]; /* predicted_ids */
            } else {
                logits = outs[0];
                m->sample_id = outs[1];
            }
        }
    }

    /* _compute_loss */
    vg_output loss = {0};
    if (rc == VG_OK && mode != NMT_INFER) {
        vg_output target_output = it->target_output;
        if (hp->time_major) target_output = vg_transpose_c(g, target_output, (const int32_t[]){1, 0}, 2, NULL);
        vg_output max_time = vg_strided_slice_c(g, vg_shape_op(g, target_output, VG_INT32, NULL),
                                                (const int32_t[]){hp->time_major ? 0 : 1},
                                                (const int32_t[]){hp->time_major ? 1 : 2}, NULL, 1,
                                                &(vg_strided_slice_masks){.shrink_axis_mask = 1}, NULL);
        vg_output crossent = vg_sparse_softmax_cross_entropy_with_logits(g, target_output, logits, NULL);
        vg_output w = vg_sequence_mask(g, it->target_sequence_length, max_time, VG_FLOAT, NULL);
        if (hp->time_major) w = vg_transpose_c(g, w, (const int32_t[]){1, 0}, 2, NULL);
        loss = vg_div(g, vg_reduce_sum(g, vg_mul(g, crossent, w, NULL), NULL, -1, false, NULL),
                      vg_cast(g, m->batch_size, VG_FLOAT, NULL), NULL);
    }
    vg_variable_scope_pop(g); /* dynamic_seq2seq */
    /* AttentionModel._get_infer_summary: _create_attention_images_summary of the greedy
     * decoder's final alignment_history (stack() [time, batch, src] -> [batch, src, time, 1] * 255) */
    vg_output infer_summary = {0};
    if (rc == VG_OK && mode == NMT_INFER && dc.wrapper && hp->beam_width == 0) {
        vg_output images = vg_attention_wrapper_alignment_history(dc.wrapper, g, fstate, NULL);
        images = vg_expand_dims(g, vg_transpose_c(g, images, (const int32_t[]){1, 2, 0}, 3, NULL), -1, NULL);
        images = vg_mul(g, images, vg_const_f32(g, 255.0f, NULL), NULL);
        infer_summary = vg_summary_image(g, "attention_images", images, 3);
    }
    nmt_decoder_cell_free(&dc);
    for (int i = 0; i < 2; i++) vg_rnn_cell_free(enc_cells[i]);
    vg_layer_free(output_layer);
    if (rc != VG_OK || vg_graph_status(g, st) != VG_OK) {
        if (rc != VG_OK && vg_graph_status(g, st) == VG_OK) vg_status_set(st, rc, "building the %d model", mode);
        return st->code;
    }

    /* _set_train_or_infer */
    if (mode == NMT_TRAIN) {
        m->train_loss = loss;
        m->word_count = vg_add(g, vg_reduce_sum(g, it->source_sequence_length, NULL, -1, false, NULL),
                               vg_reduce_sum(g, it->target_sequence_length, NULL, -1, false, NULL), NULL);
    } else if (mode == NMT_EVAL) {
        m->eval_loss = loss;
    } else {
        m->sample_words = vg_lookup_table_lookup(g, reverse_tgt_table, vg_cast(g, m->sample_id, VG_INT64, NULL), NULL);
        m->infer_summary = infer_summary;
    }
    if (mode != NMT_INFER) m->predict_count = vg_reduce_sum(g, it->target_sequence_length, NULL, -1, false, NULL);
    int nparams = 0;
    const vg_output *params = vg_graph_collection(g, "trainable_variables", &nparams);
    if (mode == NMT_TRAIN) {
        lr_ctx c = {0};
        c.global_step = m->global_step.read;
        c.lr = vg_const_f32(g, (float)hp->learning_rate, NULL);
        /* _get_learning_rate_warmup ("t2t") */
        if (strcmp(hp->warmup_scheme, "t2t") != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Unknown warmup scheme %s", hp->warmup_scheme);
        vg_output warmup_factor = vg_exp(g, vg_div(g, vg_log(g, vg_const_f32(g, 0.01f, NULL), NULL),
                                                   vg_const_f32(g, (float)hp->warmup_steps, NULL), NULL), NULL);
        c.inv_decay = vg_pow(g, warmup_factor,
                             vg_cast(g, vg_sub(g, vg_const_i32(g, (int32_t)hp->warmup_steps, NULL), c.global_step, NULL),
                                     VG_FLOAT, NULL), NULL);
        vg_output pred = vg_less(g, c.global_step, vg_const_i32(g, (int32_t)hp->warmup_steps, NULL), NULL);
        vg_output out;
        vg_cond(g, pred, lr_warm, lr_same, &c, 1, &out, "learning_rate_warump_cond", NULL);
        c.lr = out;
        /* _get_learning_rate_decay */
        int64_t start, steps;
        double factor;
        decay_info(hp, &start, &steps, &factor);
        c.start_decay_step = start, c.decay_steps = (double)steps, c.decay_factor = factor;
        pred = vg_less(g, c.global_step, vg_const_i32(g, (int32_t)start, NULL), NULL);
        vg_cond(g, pred, lr_same, lr_decay, &c, 1, &out, "learning_rate_decay_cond", NULL);
        c.lr = out;
        m->learning_rate = c.lr;
        vg_optimizer *opt;
        if (!strcmp(hp->optimizer, "sgd"))
            opt = vg_optimizer_new_sgd(hp->learning_rate);
        else if (!strcmp(hp->optimizer, "adam"))
            opt = vg_optimizer_new_adam(hp->learning_rate, 0.9, 0.999, 1e-8);
        else
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Unknown optimizer type %s", hp->optimizer);
        vg_optimizer_set_learning_rate_tensor(opt, m->learning_rate);
        /* gradients = tf.gradients(train_loss, params) */
        vg_output grads[256], clipped[256];
        if (nparams > 256) return vg_status_set(st, VG_UNIMPLEMENTED, "too many parameters");
        if (vg_gradients(g, &loss, 1, params, nparams, NULL, grads, st) != VG_OK) return st->code;
        /* model_helper.gradient_clip: tf.clip_by_global_norm(gradients, max_gradient_norm) */
        vg_clip_by_global_norm(g, grads, nparams, vg_const_f32(g, (float)hp->max_gradient_norm, NULL),
                               (vg_output){0}, clipped, &m->grad_norm, NULL);
        m->update = vg_optimizer_apply_gradients(opt, g, clipped, params, nparams, m->global_step.ref, NULL);
        vg_optimizer_free(opt);
    }
    /* self.saver = tf.train.Saver(tf.global_variables(), max_to_keep=num_keep_ckpts) */
    vg_saver_options so = {0}; /* keep_checkpoint_every_n_hours 10000, meta graph written */
    so.max_to_keep = (int)hp->num_keep_ckpts;
    so.keep_all_checkpoints = hp->num_keep_ckpts <= 0;
    if (vg_graph_status(g, st) != VG_OK) return st->code;
    m->saver = vg_saver_new(g, &so, st);
    return m->saver ? VG_OK : st->code;
}
