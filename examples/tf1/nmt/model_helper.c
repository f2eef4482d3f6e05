/* model_helper.c - nmt/model_helper.py: get_initializer, create_rnn_cell (_single_cell,
 * _cell_list), gradient_clip (in model.c), create_train_model / create_eval_model /
 * create_infer_model (three graphs that share checkpoints), create_or_load_model,
 * load_model. */
#include "nmt.h"
#include <stdio.h>
#include <string.h>

vg_initializer nmt_get_initializer(const char *init_op, int64_t seed, double init_weight) {
    if (strcmp(init_op, "glorot_uniform") == 0) return vg_init_glorot_uniform(seed);
    /* "uniform": tf.random_uniform_initializer(-init_weight, init_weight, seed=seed);
     * nmt_main refuses glorot_normal (not in vigil) before building */
    return vg_init_random_uniform(-init_weight, init_weight, seed);
}

/* _single_cell(unit_type, num_units, forget_bias, dropout, mode, residual_connection) */
static vg_rnn_cell *single_cell(const char *unit_type, int64_t num_units, double forget_bias, double dropout,
                                nmt_mode mode, bool residual_connection) {
    if (mode != NMT_TRAIN) dropout = 0.0;
    vg_rnn_cell *c = strcmp(unit_type, "gru") == 0 ? vg_gru_cell_new(num_units)
                                                   : vg_basic_lstm_cell_new(num_units, (float)forget_bias, true);
    if (c && dropout > 0.0) c = vg_dropout_wrapper_new(c, 1.0 - dropout, 1.0, 1.0, 0);
    if (c && residual_connection) c = vg_residual_wrapper_new(c);
    return c;
}

/* create_rnn_cell: _cell_list, then the single cell or MultiRNNCell(cell_list) */
vg_rnn_cell *nmt_create_rnn_cell(const char *unit_type, int64_t num_units, int64_t num_layers,
                                 int64_t num_residual_layers, double forget_bias, double dropout, nmt_mode mode) {
    vg_rnn_cell *cells[16];
    if (num_layers < 1 || num_layers > 16) return NULL;
    for (int64_t i = 0; i < num_layers; i++)
        cells[i] = single_cell(unit_type, num_units, forget_bias, dropout, mode, i >= num_layers - num_residual_layers);
    if (num_layers == 1) return cells[0];
    return vg_multi_rnn_cell_new(cells, (int)num_layers);
}

/* the three graphs. Each builds: vocab tables, datasets, iterator, model. */
static char *prefix_file(char *buf, size_t n, const char *prefix, const char *suffix) {
    snprintf(buf, n, "%s.%s", prefix, suffix);
    return buf;
}

/* The start of a model: its output struct (out, out_size bytes) zeroed, then its new
 * graph (*graph, a field of out) with its vocab tables (create_vocab_tables); NULL, with
 * st RESOURCE_EXHAUSTED, when out of memory. */
static vg_graph *model_graph(const nmt_hparams *hp, void *out, size_t out_size, vg_graph **graph,
                             vg_lookup_table *src_table, vg_lookup_table *tgt_table, vg_status *st) {
    memset(out, 0, out_size);
    vg_graph *g = *graph = vg_graph_new();
    if (!g) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "graph");
        return NULL;
    }
    nmt_create_vocab_tables(g, hp->src_vocab_file, hp->tgt_vocab_file, src_table, tgt_table);
    return g;
}

/* The train and eval graphs' end: TextLineDatasets of the (source, target) file names,
 * get_iterator over them with the mode's maximum lengths, then the model. */
static vg_code pair_model(vg_graph *g, const nmt_hparams *hp, nmt_mode mode, vg_output src_file, vg_output tgt_file,
                          const vg_lookup_table *src_table, const vg_lookup_table *tgt_table, int64_t src_max_len,
                          int64_t tgt_max_len, nmt_batched_input *iterator, nmt_model *model, vg_status *st) {
    vg_output src_dataset = vg_dataset_text_line(g, src_file, "", NULL);
    vg_output tgt_dataset = vg_dataset_text_line(g, tgt_file, "", NULL);
    nmt_get_iterator(g, src_dataset, tgt_dataset, src_table, tgt_table, hp->batch_size, hp->random_seed,
                     hp->num_buckets, src_max_len, tgt_max_len, 0, nmt_src_pad_len(hp, mode), iterator);
    if (vg_graph_status(g, st) != VG_OK) return st->code;
    return nmt_model_build(g, hp, mode, iterator, src_table, tgt_table, NULL, model, st);
}

vg_code nmt_create_train_model(const nmt_hparams *hp, nmt_train_model *out, vg_status *st) {
    char src_file[1024], tgt_file[1024];
    prefix_file(src_file, sizeof src_file, hp->train_prefix, hp->src);
    prefix_file(tgt_file, sizeof tgt_file, hp->train_prefix, hp->tgt);
    vg_lookup_table src_table, tgt_table;
    vg_graph *g = model_graph(hp, out, sizeof *out, &out->graph, &src_table, &tgt_table, st);
    if (!g) return VG_RESOURCE_EXHAUSTED;
    vg_output src = vg_const_string(g, src_file, NULL), tgt = vg_const_string(g, tgt_file, NULL);
    return pair_model(g, hp, NMT_TRAIN, src, tgt, &src_table, &tgt_table, hp->src_max_len, hp->tgt_max_len,
                      &out->iterator, &out->model, st);
}

vg_code nmt_create_eval_model(const nmt_hparams *hp, nmt_eval_model *out, vg_status *st) {
    vg_lookup_table src_table, tgt_table;
    vg_graph *g = model_graph(hp, out, sizeof *out, &out->graph, &src_table, &tgt_table, st);
    if (!g) return VG_RESOURCE_EXHAUSTED;
    out->src_file_placeholder = vg_placeholder(g, VG_STRING, NULL, 0, "src_file_placeholder");
    out->tgt_file_placeholder = vg_placeholder(g, VG_STRING, NULL, 0, "tgt_file_placeholder");
    return pair_model(g, hp, NMT_EVAL, out->src_file_placeholder, out->tgt_file_placeholder, &src_table, &tgt_table,
                      hp->src_max_len_infer, hp->tgt_max_len_infer, &out->iterator, &out->model, st);
}

vg_code nmt_create_infer_model(const nmt_hparams *hp, nmt_infer_model *out, vg_status *st) {
    vg_lookup_table src_table, tgt_table;
    vg_graph *g = model_graph(hp, out, sizeof *out, &out->graph, &src_table, &tgt_table, st);
    if (!g) return VG_RESOURCE_EXHAUSTED;
    /* reverse_tgt_vocab_table = index_to_string_table_from_file(tgt_vocab_file, default_value=UNK) */
    vg_index_to_string_options ro = {0};
    ro.default_value = NMT_UNK;
    vg_lookup_table reverse_tgt_table = vg_index_to_string_table_from_file(g, hp->tgt_vocab_file, &ro, NULL);
    out->src_placeholder = vg_placeholder(g, VG_STRING, (const int64_t[]){-1}, 1, "src_placeholder");
    vg_output src_dataset = vg_dataset_from_tensor_slices(g, &out->src_placeholder, 1, NULL);
    nmt_get_infer_iterator(g, src_dataset, &src_table, hp->infer_batch_size, hp->src_max_len_infer,
                           nmt_src_pad_len(hp, NMT_INFER), &out->iterator);
    if (vg_graph_status(g, st) != VG_OK) return st->code;
    return nmt_model_build(g, hp, NMT_INFER, &out->iterator, &src_table, &tgt_table, &reverse_tgt_table, &out->model,
                           st);
}

/* load_model: model.saver.restore(session, ckpt); session.run(tf.tables_initializer()) */
vg_code nmt_load_model(vg_graph *g, nmt_model *m, const char *ckpt, vg_session *sess, vg_status *st) {
    if (vg_saver_restore(m->saver, sess, ckpt, st) != VG_OK) return st->code;
    vg_op *tinit = vg_tables_initializer(g, NULL);
    return vg_session_run_targets(sess, &tinit, 1, st);
}

/* create_or_load_model: the latest checkpoint of model_dir, else fresh variables
 * (global_variables_initializer, tables_initializer); the global step it has. */
vg_code nmt_create_or_load_model(vg_graph *g, nmt_model *m, const char *model_dir, vg_session *sess,
                                 int64_t *global_step, vg_status *st) {
    char buf[1024];
    const char *latest = vg_latest_checkpoint(model_dir, buf, sizeof buf);
    if (latest) {
        if (nmt_load_model(g, m, latest, sess, st) != VG_OK) return st->code;
        printf("  loaded model parameters from %s\n", latest);
    } else {
        vg_op *init[2] = {vg_global_variables_initializer(g), vg_tables_initializer(g, NULL)};
        if (vg_session_run_targets(sess, init, 1, st) != VG_OK) return st->code;
        if (vg_session_run_targets(sess, init + 1, 1, st) != VG_OK) return st->code;
        printf("  created model with fresh parameters\n");
    }
    vg_tensor *t = NULL;
    if (vg_session_run1(sess, m->global_step.read, &t, st) != VG_OK) return st->code;
    *global_step = (int64_t)vg_tensor_scalar(t);
    vg_tensor_free(t);
    return VG_OK;
}

void nmt_model_free(nmt_model *m) {
    if (m->saver) vg_saver_free(m->saver);
    m->saver = NULL;
}
