/* nmt.h - the port of tensorflow/nmt (nmt/model.py, attention_model.py, model_helper.py,
 * train.py, utils/iterator_utils.py, utils/vocab_utils.py, utils/nmt_utils.py): the
 * hparams, the batched input, the model and the three graphs. See README.md. */
#ifndef NMT_PORT_H
#define NMT_PORT_H

#include <vigil/vigil.h>
#include <stdbool.h>

/* vocab_utils.py */
#define NMT_UNK "<unk>"
#define NMT_SOS "<s>"
#define NMT_EOS "</s>"
#define NMT_UNK_ID 0

typedef enum { NMT_TRAIN = 0, NMT_EVAL = 1, NMT_INFER = 2 } nmt_mode; /* tf.contrib.learn.ModeKeys */

/* the hparams nmt.py's create_hparams / extend_hparams give (the ones used here) */
typedef struct nmt_hparams {
    /* data */
    const char *src_vocab_file, *tgt_vocab_file; /* vocab_prefix + "." + src / tgt */
    const char *train_prefix, *dev_prefix, *test_prefix, *src, *tgt, *out_dir;
    int64_t src_vocab_size, tgt_vocab_size;
    int64_t src_max_len, tgt_max_len, src_max_len_infer, tgt_max_len_infer;
    /* network */
    int64_t num_units, num_encoder_layers, num_decoder_layers;
    int64_t num_encoder_residual_layers, num_decoder_residual_layers;
    const char *encoder_type; /* "uni" | "bi" */
    const char *unit_type;    /* "lstm" | "gru" */
    double forget_bias, dropout;
    bool time_major;
    /* attention */
    const char *attention;              /* "" | luong | scaled_luong | bahdanau | normed_bahdanau */
    const char *attention_architecture; /* "standard" */
    bool output_attention, pass_hidden_state;
    /* training */
    const char *optimizer; /* "sgd" | "adam" */
    double learning_rate, max_gradient_norm, init_weight;
    const char *init_op; /* uniform | glorot_normal | glorot_uniform */
    const char *warmup_scheme, *decay_scheme;
    int64_t warmup_steps, num_train_steps, batch_size, num_buckets, steps_per_stats, num_keep_ckpts;
    int64_t steps_per_external_eval;
    /* inference */
    const char *infer_mode; /* greedy | beam_search */
    int64_t beam_width, num_translations_per_input, infer_batch_size;
    double length_penalty_weight, decoding_length_factor;
    const char *metrics; /* "bleu", "accuracy", comma-separated */
    int64_t random_seed;
} nmt_hparams;

/* iterator_utils.BatchedInput */
typedef struct nmt_batched_input {
    vg_op *initializer;
    vg_output source, target_input, target_output, source_sequence_length, target_sequence_length;
} nmt_batched_input;

/* vocab_utils.py */
vg_code nmt_check_vocab(const char *vocab_file, int64_t *vocab_size, vg_status *st);
void nmt_create_vocab_tables(vg_graph *g, const char *src_vocab_file, const char *tgt_vocab_file,
                             vg_lookup_table *src_table, vg_lookup_table *tgt_table);

/* iterator_utils.py; batch_size fixed at build time (see README) */
vg_code nmt_get_iterator(vg_graph *g, vg_output src_dataset, vg_output tgt_dataset, const vg_lookup_table *src_table,
                         const vg_lookup_table *tgt_table, int64_t batch_size, int64_t random_seed,
                         int64_t num_buckets, int64_t src_max_len, int64_t tgt_max_len, int64_t output_buffer_size,
                         int64_t src_pad_len, nmt_batched_input *out);
vg_code nmt_get_infer_iterator(vg_graph *g, vg_output src_dataset, const vg_lookup_table *src_table,
                               int64_t batch_size, int64_t src_max_len, int64_t src_pad_len, nmt_batched_input *out);
/* The length the source is padded to: src_max_len (train) or src_max_len_infer, else
 * src_max_len (eval, infer) for attention models, whose memory needs a static length;
 * -1 (the batch's longest, as the Python) without attention. */
int64_t nmt_src_pad_len(const nmt_hparams *hp, nmt_mode mode);

/* model.py's Model / AttentionModel: the built graph's handles */
typedef struct nmt_model {
    nmt_mode mode;
    vg_variable global_step; /* tf.Variable(0, trainable=False): "Variable" */
    vg_output embedding_encoder, embedding_decoder;
    vg_output train_loss, eval_loss, predict_count, word_count, batch_size;
    vg_output learning_rate, grad_norm;
    vg_op *update;
    vg_output sample_id, sample_words; /* infer: [time, batch] or [time, batch, beam] */
    vg_output infer_summary;           /* greedy attention model: the attention images */
    vg_saver *saver;
} nmt_model;

vg_code nmt_model_build(vg_graph *g, const nmt_hparams *hp, nmt_mode mode, const nmt_batched_input *it,
                        const vg_lookup_table *src_table, const vg_lookup_table *tgt_table,
                        const vg_lookup_table *reverse_tgt_table, nmt_model *m, vg_status *st);

/* attention_model.py: AttentionModel._build_decoder_cell; plain Model's when
 * hp->attention is "". encoder_state: n tensors. Fills *cell (to free with
 * nmt_decoder_cell_free) and the initial state (*nstate tensors). */
typedef struct nmt_decoder_cell {
    vg_rnn_cell *cell;                 /* what the decoder calls */
    vg_rnn_cell *owned;                /* plain model: the cell; attention: NULL */
    vg_attention_wrapper *wrapper;     /* attention: the wrapper */
    vg_attention_mechanism *mechanism; /* attention */
} nmt_decoder_cell;
vg_code nmt_build_decoder_cell(vg_graph *g, const nmt_hparams *hp, nmt_mode mode, vg_output encoder_outputs,
                               const vg_output *encoder_state, int n_enc_state, vg_output source_sequence_length,
                               nmt_decoder_cell *dc, vg_output *initial_state, int *nstate);
void nmt_decoder_cell_free(nmt_decoder_cell *dc);

/* model_helper.py */
vg_rnn_cell *nmt_create_rnn_cell(const char *unit_type, int64_t num_units, int64_t num_layers,
                                 int64_t num_residual_layers, double forget_bias, double dropout, nmt_mode mode);
vg_initializer nmt_get_initializer(const char *init_op, int64_t seed, double init_weight);

typedef struct nmt_train_model {
    vg_graph *graph;
    nmt_model model;
    nmt_batched_input iterator;
} nmt_train_model;
typedef struct nmt_eval_model {
    vg_graph *graph;
    nmt_model model;
    nmt_batched_input iterator;
    vg_output src_file_placeholder, tgt_file_placeholder;
} nmt_eval_model;
typedef struct nmt_infer_model {
    vg_graph *graph;
    nmt_model model;
    nmt_batched_input iterator;
    vg_output src_placeholder;
} nmt_infer_model;
vg_code nmt_create_train_model(const nmt_hparams *hp, nmt_train_model *out, vg_status *st);
vg_code nmt_create_eval_model(const nmt_hparams *hp, nmt_eval_model *out, vg_status *st);
vg_code nmt_create_infer_model(const nmt_hparams *hp, nmt_infer_model *out, vg_status *st);
void nmt_model_free(nmt_model *m);
/* create_or_load_model / load_model: restore ckpt (or, for create_or_load_model
 * without one, run the initializers), then the tables' initializer. */
vg_code nmt_create_or_load_model(vg_graph *g, nmt_model *m, const char *model_dir, vg_session *sess,
                                 int64_t *global_step, vg_status *st);
vg_code nmt_load_model(vg_graph *g, nmt_model *m, const char *ckpt, vg_session *sess, vg_status *st);

/* nmt_utils.decode_and_evaluate over the infer model (session loaded): feeds the source
 * lines, writes trans_file, computes the metrics against ref_file into scores (one per
 * metric, in hp->metrics' order; returns how many). */
vg_code nmt_decode_and_evaluate(nmt_infer_model *im, vg_session *sess, const nmt_hparams *hp, const char *src_file,
                                const char *ref_file, const char *trans_file, double *scores, int max_scores,
                                int *nscores, vg_status *st);
/* evaluation_utils.evaluate(ref_file, trans_file, metric): "bleu" (nmt/scripts/bleu.py,
 * max_order 4, no smoothing, x100), "accuracy" (sentence exact match, x100),
 * "word_accuracy". -1 on a file error or an unknown metric. */
double nmt_evaluate(const char *ref_file, const char *trans_file, const char *metric);

/* small file helpers */
int nmt_read_lines(const char *path, char ***lines, int *n);
void nmt_free_lines(char **lines, int n);

#endif
