/* attention_model.c - nmt/attention_model.py: AttentionModel._build_decoder_cell and
 * create_attention_mechanism; with hp->attention "" the plain Model._build_decoder_cell
 * of model.py. Runs inside variable scope dynamic_seq2seq/decoder. */
#include "nmt.h"
#include <math.h>
#include <string.h>

#define MAX_STATE 32

void nmt_decoder_cell_free(nmt_decoder_cell *dc) {
    if (dc->wrapper) vg_attention_wrapper_free(dc->wrapper); /* frees the wrapped cell too */
    if (dc->mechanism) vg_attention_mechanism_free(dc->mechanism);
    if (dc->owned) vg_rnn_cell_free(dc->owned);
    memset(dc, 0, sizeof *dc);
}

/* create_attention_mechanism(attention_option, num_units, memory, source_sequence_length, mode) */
static vg_attention_mechanism *create_attention_mechanism(vg_graph *g, const char *option, int64_t num_units,
                                                          vg_output memory, vg_output source_sequence_length) {
    if (!strcmp(option, "luong")) return vg_luong_attention_new(g, num_units, memory, source_sequence_length, false, NULL);
    if (!strcmp(option, "scaled_luong"))
        return vg_luong_attention_new(g, num_units, memory, source_sequence_length, true, NULL);
    if (!strcmp(option, "bahdanau"))
        return vg_bahdanau_attention_new(g, num_units, memory, source_sequence_length, false, NULL);
    if (!strcmp(option, "normed_bahdanau"))
        return vg_bahdanau_attention_new(g, num_units, memory, source_sequence_length, true, NULL);
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Unknown attention option %s", option);
    return NULL;
}

vg_code nmt_build_decoder_cell(vg_graph *g, const nmt_hparams *hp, nmt_mode mode, vg_output encoder_outputs,
                               const vg_output *encoder_state, int n_enc_state, vg_output source_sequence_length,
                               nmt_decoder_cell *dc, vg_output *initial_state, int *nstate) {
    memset(dc, 0, sizeof *dc);
    bool infer_beam = mode == NMT_INFER && hp->beam_width > 0;
    vg_output enc_state[MAX_STATE];
    for (int i = 0; i < n_enc_state; i++)
        enc_state[i] = infer_beam ? vg_tile_batch(g, encoder_state[i], (int)hp->beam_width, NULL) : encoder_state[i];
    vg_rnn_cell *cell = nmt_create_rnn_cell(hp->unit_type, hp->num_units, hp->num_decoder_layers,
                                            hp->num_decoder_residual_layers, hp->forget_bias, hp->dropout, mode);
    if (!cell) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "decoder cell: unit_type %s", hp->unit_type);
    if (!hp->attention[0]) {
        /* Model._build_decoder_cell: the encoder state (tile_batch'ed for beam search) */
        if (!hp->pass_hidden_state) {
            vg_rnn_cell_free(cell);
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                      "For non-attentional model, pass_hidden_state needs to be set to True");
        }
        if (vg_rnn_cell_state_count(cell) != n_enc_state) {
            vg_rnn_cell_free(cell);
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                      "the decoder's state (%d tensors) does not match the encoder's (%d)",
                                      vg_rnn_cell_state_count(cell), n_enc_state);
        }
        dc->cell = dc->owned = cell;
        for (int i = 0; i < n_enc_state; i++) initial_state[i] = enc_state[i];
        *nstate = n_enc_state;
        return vg_graph_status(g, NULL);
    }
    if (strcmp(hp->attention_architecture, "standard") != 0) {
        vg_rnn_cell_free(cell);
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Unknown attention architecture %s",
                                  hp->attention_architecture);
    }
    /* memory = tf.transpose(encoder_outputs, [1, 0, 2]) (time major); its static length
     * (the source padded to src_max_len) is set by a Reshape */
    vg_output memory = encoder_outputs;
    if (hp->time_major) memory = vg_transpose_c(g, memory, (const int32_t[]){1, 0, 2}, 3, NULL);
    int64_t max_time = nmt_src_pad_len(hp, mode);
    int64_t depth = vg_output_shape(encoder_outputs).ndims == 3 ? vg_output_shape(encoder_outputs).dims[2] : -1;
    memory = vg_reshape_c(g, memory, (const int64_t[]){-1, max_time, depth}, 3, NULL);
    vg_output ssl = source_sequence_length;
    vg_output batch_size = vg_size(g, source_sequence_length, NULL);
    if (infer_beam) {
        memory = vg_tile_batch(g, memory, (int)hp->beam_width, NULL);
        ssl = vg_tile_batch(g, ssl, (int)hp->beam_width, NULL);
        batch_size = vg_mul(g, batch_size, vg_const_i32(g, (int32_t)hp->beam_width, NULL), NULL);
    }
    dc->mechanism = create_attention_mechanism(g, hp->attention, hp->num_units, memory, ssl);
    if (!dc->mechanism) {
        vg_rnn_cell_free(cell);
        return vg_graph_status(g, NULL);
    }
    /* alignment_history = (mode == INFER and beam_width == 0); vigil's history is a
     * buffer in the state, as long as the most steps decoding can take:
     * tgt_max_len_infer, else round(decoding_length_factor * the padded source length),
     * which bounds _get_infer_maximum_iterations */
    vg_attention_wrapper_options wo = {0};
    wo.attention_layer_size = hp->num_units;
    wo.alignment_history = mode == NMT_INFER && hp->beam_width == 0;
    wo.alignment_history_max_steps = hp->tgt_max_len_infer > 0
                                         ? hp->tgt_max_len_infer
                                         : (int64_t)llround((double)max_time * hp->decoding_length_factor);
    wo.no_output_attention = !hp->output_attention;
    wo.name = "attention";
    dc->wrapper = vg_attention_wrapper_new(cell, dc->mechanism, &wo);
    if (!dc->wrapper) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "AttentionWrapper");
    dc->cell = vg_attention_wrapper_cell(dc->wrapper);
    /* zero_state(batch_size, dtype).clone(cell_state=encoder_state) or zero_state */
    *nstate = vg_rnn_cell_state_count(dc->cell);
    return vg_attention_wrapper_zero_state(dc->wrapper, g, -1, batch_size, VG_FLOAT,
                                           hp->pass_hidden_state ? enc_state : NULL, initial_state);
}
