/*
 * seq2seq_beam.c - tf.contrib.seq2seq's BeamSearchDecoder and tile_batch (TF 1.15
 * beam_search_decoder.py) on the public API, without the coverage penalty and the
 * TensorArray reordering. Semantics in vigil/seq2seq.h.
 */
#include "train_util.h"
#include "vigil/seq2seq.h"
#include "vigil/ops_ext.h"
#include "vigil/variable_scope.h"
#include "vigil/train_lib.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vg_output none(void) { return (vg_output){NULL, 0}; }

vg_output vg_tile_batch(vg_graph *g, vg_output t, int multiplier, const char *name) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return none();
    vg_shape s = t.op ? vg_output_shape(t) : vg_shape_unknown();
    if (s.ndims < 1 || multiplier < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "t must have statically known rank (tile_batch), and multiplier >= 1");
        return none();
    }
    char scope[256], ns[260];
    vg_graph_unique_name(g, name && *name ? name : "tile_batch", scope, sizeof scope);
    snprintf(ns, sizeof ns, "%s/", scope);
    vg_graph_push_scope(g, ns);
    /* tile(expand_dims(t, 1), [1, multiplier, 1, ...]), reshape to [batch * multiplier, ...] */
    int32_t tiling[VG_MAX_DIMS];
    for (int i = 0; i <= s.ndims && i < VG_MAX_DIMS; i++) tiling[i] = i == 1 ? multiplier : 1;
    vg_output tiled = vg_tile(g, vg_expand_dims(g, t, 1, "ExpandDims"),
                              vg_const_i32_vec(g, tiling, s.ndims + 1, "Tile/multiples"), "Tile");
    int64_t dims[VG_MAX_DIMS];
    dims[0] = s.dims[0] >= 0 ? s.dims[0] * multiplier : -1;
    bool known = true;
    for (int i = 1; i < s.ndims; i++) {
        dims[i] = s.dims[i];
        if (dims[i] < 0) known = false;
    }
    vg_output out;
    if (known || dims[0] >= 0) {
        if (!known) dims[0] = -1;
        out = vg_reshape_c(g, tiled, dims, s.ndims, "Reshape");
    } else { /* concat([shape(t)[0] * multiplier], shape(t)[1:]) */
        vg_output sh = vg_shape_op(g, t, VG_INT32, "Shape");
        vg_output b = vg_mul(g, vg_slice_c(g, sh, (int64_t[]){0}, (int64_t[]){1}, 1, "Slice"),
                             vg_const_i32(g, multiplier, "mul/y"), "mul");
        vg_output rest = vg_slice_c(g, sh, (int64_t[]){1}, (int64_t[]){-1}, 1, "Slice_1");
        out = vg_reshape(g, tiled, vg_concat_c(g, (vg_output[]){b, rest}, 2, 0, "concat"), "Reshape");
    }
    vg_graph_pop_scope(g);
    return out;
}

typedef struct beam_dec {
    vg_rnn_cell *cell;
    vg_layer *layer;
    vg_output embedding, start_tokens, batch, start_inputs;
    int32_t end_token;
    int K;
    int64_t V, Bs; /* Bs: the static batch size, -1 if unknown */
    double lp;
    int ns;
    vg_shape *shapes; /* the cell's per-example state shapes */
    vg_output *init;  /* the initial cell state, split to [batch, beam, ...] */
    vg_dtype dt;
} beam_dec;

static void beam_free(void *u) {
    beam_dec *b = u;
    if (!b) return;
    free(b->shapes);
    free(b->init);
    free(b);
}

/* reshape to [-1, K, shape...] / [-1, shape...] */
static vg_output split_bb(vg_graph *g, vg_output t, int64_t Bs, int K, vg_shape s) {
    int64_t d[VG_MAX_DIMS];
    d[0] = Bs;
    d[1] = K;
    for (int i = 0; i < s.ndims && i + 2 < VG_MAX_DIMS; i++) d[i + 2] = s.dims[i];
    return vg_reshape_c(g, t, d, s.ndims + 2, "Reshape");
}

static vg_output merge_bb(vg_graph *g, vg_output t, int64_t BKs, vg_shape s) {
    int64_t d[VG_MAX_DIMS];
    d[0] = BKs;
    for (int i = 0; i < s.ndims && i + 1 < VG_MAX_DIMS; i++) d[i + 1] = s.dims[i];
    return vg_reshape_c(g, t, d, s.ndims + 1, "Reshape");
}

/* [K] row {first, rest, rest, ...} tiled to [batch, K] */
static vg_output beam_rows(vg_graph *g, beam_dec *b, vg_dtype dt, double first, double rest, const char *name) {
    double *v = malloc(sizeof(double) * (size_t)b->K);
    if (!v) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "BeamSearchDecoder: out of memory");
        return none();
    }
    for (int i = 0; i < b->K; i++) v[i] = i == 0 ? first : rest;
    vg_output row = vg_const_values(g, dt, v, b->K, NULL, 0, (int64_t[]){1, b->K}, 2, false, name);
    free(v);
    vg_output mult = vg_pack(g, (vg_output[]){b->batch, vg_const_i32(g, 1, NULL)}, 2, 0, NULL);
    return vg_tile(g, row, mult, NULL);
}

static vg_code beam_initialize(vg_graph *g, void *user, vg_output *finished, vg_output *inputs, vg_output *state) {
    beam_dec *b = user;
    int n = b->ns;
    memcpy(state, b->init, sizeof(vg_output) * (size_t)n);
    /* finished: one_hot(zeros, beam, on=False, off=True); log_probs: 0 for beam 0, -inf */
    vg_output fin = beam_rows(g, b, VG_BOOL, 0, 1, "finished");
    state[n] = beam_rows(g, b, b->dt, 0, -INFINITY, "log_probs");
    state[n + 1] = fin;
    state[n + 2] = vg_zeros_like_dtype(g, fin, VG_INT64, "lengths");
    *finished = fin;
    *inputs = b->start_inputs;
    return vg_graph_status(g, NULL);
}

/* _tensor_gather_helper: rows of from ([batch, range_size, ...] flattened to rows of
 * `row` elements) at indices [batch, K] + range(batch) * range_size */
static vg_output gather_helper(vg_graph *g, beam_dec *b, vg_output indices, vg_output from, int64_t range_size,
                               const int64_t *out_dims, int out_nd, int64_t row) {
    vg_graph_push_scope(g, "tensor_gather_helper");
    vg_output range = vg_range(g, vg_const_i32(g, 0, "range/start"), b->batch, vg_const_i32(g, 1, "range/delta"), "range");
    vg_output off = vg_expand_dims(g, vg_mul(g, range, vg_const_i32(g, (int32_t)range_size, "mul/y"), "mul"), 1,
                                   "ExpandDims");
    vg_output idx = vg_reshape_c(g, vg_add(g, indices, off, "add"), (int64_t[]){-1}, 1, "Reshape");
    vg_output flat = row > 0 ? vg_reshape_c(g, from, (int64_t[]){-1, row}, 2, "Reshape_1")
                             : vg_reshape_c(g, from, (int64_t[]){-1}, 1, "Reshape_1");
    vg_output out = vg_reshape_c(g, vg_gather(g, flat, idx, 0, "GatherV2"), out_dims, out_nd, "output");
    vg_graph_pop_scope(g);
    return out;
}

static vg_code beam_step(vg_graph *g, void *user, vg_output time, vg_output inputs, const vg_output *state,
                         vg_output *outputs, vg_output *next_state, vg_output *next_inputs, vg_output *finished) {
    (void)time;
    beam_dec *b = user;
    int n = b->ns, K = b->K;
    int64_t V = b->V;
    vg_dtype dt = b->dt;
    vg_output *cs = calloc((size_t)n * 2, sizeof(vg_output));
    if (!cs) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "BeamSearchDecoder: out of memory");
    vg_output *ncs = cs + n;
    vg_graph_push_scope(g, "BeamSearchDecoderStep");
    vg_shape is = vg_output_shape(inputs);
    vg_shape ies = is.ndims == 3 ? vg_shape_make(&is.dims[2], 1) : vg_shape_unknown();
    int64_t BK = b->Bs >= 0 ? b->Bs * K : -1;
    vg_output x = merge_bb(g, inputs, BK, ies);
    for (int i = 0; i < n; i++) cs[i] = merge_bb(g, state[i], BK, b->shapes[i]);
    vg_output out = none();
    vg_code rc = vg_rnn_cell_call(b->cell, g, x, cs, &out, ncs);
    if (rc != VG_OK) {
        vg_graph_pop_scope(g);
        free(cs);
        return rc;
    }
    int64_t osz = vg_rnn_cell_output_size(b->cell);
    out = split_bb(g, out, b->Bs, K, vg_shape_make(&osz, 1));
    for (int i = 0; i < n; i++) ncs[i] = split_bb(g, ncs[i], b->Bs, K, b->shapes[i]);
    if (b->layer) out = vg_layer_apply(b->layer, g, out, none());
    vg_output logits = out;
    vg_output log_probs = state[n], prev_fin = state[n + 1], lengths = state[n + 2];
    /* _beam_search_step */
    vg_output not_fin = vg_logical_not(g, prev_fin, "LogicalNot");
    vg_output step_lp = vg_log_softmax(g, logits, "LogSoftmax");
    /* _mask_probs: finished beams put all their probability on end_token */
    double *row = malloc(sizeof(double) * (size_t)V);
    if (!row) {
        vg_graph_pop_scope(g);
        free(cs);
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "BeamSearchDecoder: out of memory");
    }
    double dmin = dt == VG_DOUBLE ? -DBL_MAX : -FLT_MAX;
    for (int64_t v = 0; v < V; v++) row[v] = v == b->end_token ? 0.0 : dmin;
    vg_output frow = vg_const_values(g, dt, row, V, NULL, 0, (int64_t[]){1, 1, V}, 3, false, "finished_row");
    for (int64_t v = 0; v < V; v++) row[v] = v == b->end_token ? 0.0 : 1.0;
    vg_output add_row = vg_const_values(g, VG_INT64, row, V, NULL, 0, (int64_t[]){1, 1, V}, 3, false, "lengths_to_add");
    free(row);
    vg_output fmask = vg_tile(g, vg_expand_dims(g, prev_fin, 2, "ExpandDims"),
                              vg_const_i32_vec(g, (int32_t[]){1, 1, (int32_t)V}, 3, "Tile/multiples"), "Tile");
    vg_output fprobs = vg_add(g, vg_zeros_like(g, step_lp, "zeros_like"), frow, "finished_probs");
    step_lp = vg_select(g, fmask, fprobs, step_lp, "Select");
    vg_output total = vg_add(g, vg_expand_dims(g, log_probs, 2, "ExpandDims_1"), step_lp, "add");
    /* lengths of the continuations (end_token adds nothing, finished beams neither) */
    vg_output new_len = vg_add(
        g, vg_mul(g, add_row, vg_expand_dims(g, vg_cast(g, not_fin, VG_INT64, "Cast"), 2, "ExpandDims_2"), "mul"),
        vg_expand_dims(g, lengths, 2, "ExpandDims_3"), "add_1");
    vg_output scores = total;
    if (b->lp != 0.0) { /* _length_penalty: ((5 + len) ^ w) / (6 ^ w) */
        vg_output w = vg_const_f32(g, (float)b->lp, "penalty_factor");
        vg_output num = vg_pow(g, vg_add(g, vg_const_f32(g, 5.0f, "add/x"), vg_cast(g, new_len, VG_FLOAT, "Cast_1"),
                                         "add_2"),
                               w, "pow");
        vg_output pen = vg_div(g, num, vg_pow(g, vg_const_f32(g, 6.0f, "pow_1/x"), w, "pow_1"), "truediv");
        if (dt != VG_FLOAT) pen = vg_cast(g, pen, dt, "Cast_2");
        scores = vg_div(g, total, pen, "truediv_1");
    }
    vg_output flat = vg_reshape_c(g, scores, (int64_t[]){b->Bs, K * V}, 2, "Reshape_2");
    vg_op *top = vg_top_k(g, flat, K, true, "TopKV2");
    vg_output next_scores = top ? vg_out(top, 0) : none(), word_idx = top ? vg_out(top, 1) : none();
    vg_output vconst = vg_const_i32(g, (int32_t)V, "vocab_size");
    vg_output word_ids = vg_floor_mod(g, word_idx, vconst, "next_beam_word_ids");
    vg_output beam_ids = vg_floor_div(g, word_idx, vconst, "next_beam_parent_ids");
    vg_output next_lp = gather_helper(g, b, word_idx, total, K * V, (int64_t[]){b->Bs, K}, 2, 0);
    vg_output fin_g = gather_helper(g, b, beam_ids, prev_fin, K, (int64_t[]){b->Bs, K}, 2, 0);
    vg_output next_fin = vg_logical_or(g, fin_g, vg_equal(g, word_ids, vg_const_i32(g, b->end_token, "end_token"),
                                                          "Equal"),
                                       "next_beam_finished");
    vg_output len_g = gather_helper(g, b, beam_ids, lengths, K, (int64_t[]){b->Bs, K}, 2, 0);
    vg_output next_len = vg_add(g, len_g, vg_cast(g, vg_logical_not(g, fin_g, "LogicalNot_1"), VG_INT64, "Cast_3"),
                                "add_3");
    for (int i = 0; i < n; i++) {
        vg_shape s = b->shapes[i];
        int64_t d[VG_MAX_DIMS], rowsz = 1;
        d[0] = b->Bs;
        d[1] = K;
        for (int k = 0; k < s.ndims && k + 2 < VG_MAX_DIMS; k++) {
            d[k + 2] = s.dims[k];
            rowsz *= s.dims[k];
        }
        next_state[i] = gather_helper(g, b, beam_ids, ncs[i], K, d, s.ndims + 2, rowsz);
    }
    next_state[n] = next_lp;
    next_state[n + 1] = next_fin;
    next_state[n + 2] = next_len;
    outputs[0] = next_scores;
    outputs[1] = word_ids;
    outputs[2] = beam_ids;
    *finished = next_fin;
    *next_inputs = vg__train_embedding_next_inputs(g, next_fin, b->start_inputs, b->embedding, word_ids);
    vg_shape ss = vg_output_shape(b->start_inputs);
    if (next_inputs->op && ss.ndims == 3 && ss.dims[2] >= 0)
        *next_inputs = vg_reshape_c(g, *next_inputs, (int64_t[]){b->Bs, K, ss.dims[2]}, 3, NULL);
    vg_graph_pop_scope(g);
    free(cs);
    return vg_graph_status(g, NULL);
}

static vg_code beam_finalize(vg_graph *g, void *user, vg_output *outputs, vg_output *final_state,
                             vg_output sequence_lengths) {
    (void)sequence_lengths;
    beam_dec *b = user;
    /* max_sequence_lengths = max over the beams of final_state.lengths */
    vg_output maxlen = vg_cast(g, vg_reduce_max(g, final_state[b->ns + 2], (int32_t[]){1}, 1, false, "Max"), VG_INT32,
                               "Cast");
    vg_output ids = vg_gather_tree(g, outputs[1], outputs[2], maxlen, vg_const_i32(g, b->end_token, "end_token"),
                                   "GatherTree");
    /* FinalBeamSearchDecoderOutput(predicted_ids, beam_search_decoder_output) */
    vg_output raw[3] = {outputs[0], outputs[1], outputs[2]};
    outputs[0] = ids;
    memcpy(outputs + 1, raw, sizeof raw);
    return vg_graph_status(g, NULL);
}

vg_decoder *vg_beam_search_decoder_new(vg_graph *g, vg_rnn_cell *cell, vg_output embedding, vg_output start_tokens,
                                       int32_t end_token, const vg_output *initial_state, int beam_width,
                                       vg_layer *output_layer, double length_penalty_weight) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return NULL;
    int ns = cell ? vg_rnn_cell_state_count(cell) : 0;
    bool ok = cell && embedding.op && start_tokens.op && initial_state && beam_width >= 1 &&
              (!output_layer || output_layer->config.kind == VG_LAYER_DENSE);
    for (int i = 0; ok && i < ns; i++) ok = initial_state[i].op != NULL;
    if (!ok) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "BeamSearchDecoder: needs a cell, an embedding, start_tokens, the initial state, "
                           "beam_width >= 1 and a dense output layer (or none)");
        return NULL;
    }
    if (vg_output_shape(start_tokens).ndims != 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "start_tokens must be a vector");
        return NULL;
    }
    int64_t V = output_layer ? output_layer->config.units : vg_rnn_cell_output_size(cell);
    vg_decoder *d = calloc(1, sizeof *d);
    beam_dec *b = calloc(1, sizeof *b);
    vg_shape *shapes = calloc((size_t)ns, sizeof(vg_shape));
    vg_output *init = calloc((size_t)ns, sizeof(vg_output));
    if (!d || !b || !shapes || !init) {
        free(d);
        free(b);
        free(shapes);
        free(init);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "BeamSearchDecoder: out of memory");
        return NULL;
    }
    b->cell = cell;
    b->layer = output_layer;
    b->embedding = embedding;
    b->end_token = end_token;
    b->K = beam_width;
    b->V = V;
    b->lp = length_penalty_weight;
    b->ns = ns;
    b->shapes = shapes;
    b->init = init;
    b->dt = vg_output_dtype(initial_state[0]);
    b->start_tokens = vg_output_dtype(start_tokens) == VG_INT32 ? start_tokens
                                                                 : vg_cast(g, start_tokens, VG_INT32, "start_tokens");
    b->batch = vg_size(g, b->start_tokens, "batch_size");
    b->Bs = vg_output_shape(start_tokens).dims[0];
    for (int i = 0; i < ns; i++) {
        shapes[i] = vg_rnn_cell_state_shape(cell, i);
        init[i] = split_bb(g, initial_state[i], b->Bs, beam_width, shapes[i]);
    }
    /* start_tokens tiled to [batch, beam], embedded */
    vg_output st = vg_tile(g, vg_expand_dims(g, b->start_tokens, 1, "ExpandDims"),
                           vg_const_i32_vec(g, (int32_t[]){1, beam_width}, 2, "Tile/multiples"), "Tile");
    b->start_inputs = vg_embedding_lookup(g, embedding, st, NULL);
    d->output_count = 3;
    d->final_output_count = 4;
    d->output_dtypes[0] = b->dt;
    d->output_dtypes[1] = VG_INT32;
    d->output_dtypes[2] = VG_INT32;
    int64_t kk = beam_width;
    for (int i = 0; i < 3; i++) d->output_shapes[i] = vg_shape_make(&kk, 1);
    d->state_count = ns + 3;
    d->tracks_own_finished = true;
    d->batch_dims = 1;
    d->initialize = beam_initialize;
    d->step = beam_step;
    d->finalize = beam_finalize;
    d->free_user = beam_free;
    d->user = b;
    if (vg_graph_status(g, NULL) != VG_OK || V <= 0) {
        if (vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "BeamSearchDecoder: the vocabulary size must be known");
        vg_decoder_free(d);
        return NULL;
    }
    return d;
}
