/* nmt_main.c - nmt/nmt.py (flags, create_hparams, extend_hparams, run_main) and
 * nmt/train.py (train: the train / eval / infer graphs and sessions, the loop with
 * stats, checkpoints, internal (perplexity) and external (decode + metrics) evaluation)
 * and nmt/inference.py (inference with --inference_input_file). See README.md. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include "nmt.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static vg_flags *FLAGS;
#define S(n) vg_flags_string(FLAGS, n)
#define I(n) vg_flags_integer(FLAGS, n)
#define F(n) vg_flags_float(FLAGS, n)
#define B(n) vg_flags_boolean(FLAGS, n)

/* nmt.py add_arguments (the flags this port uses; defaults as the Python's) */
static vg_code add_arguments(vg_status *st) {
    vg_flags *f = FLAGS;
    vg_code c = VG_OK;
#define DS(n, d, h) c = c ? c : vg_flags_define_string(f, n, d, h, st)
#define DI(n, d, h) c = c ? c : vg_flags_define_integer(f, n, d, h, st)
#define DF(n, d, h) c = c ? c : vg_flags_define_float(f, n, d, h, st)
#define DB(n, d, h) c = c ? c : vg_flags_define_boolean(f, n, d, h, st)
    /* network */
    DI("num_units", 32, "Network size.");
    DI("num_layers", 2, "Network depth.");
    DI("num_encoder_layers", 0, "Encoder depth, equal to num_layers if None.");
    DI("num_decoder_layers", 0, "Decoder depth, equal to num_layers if None.");
    DS("encoder_type", "uni", "uni | bi | gnmt.");
    DB("residual", false, "Whether to add residual connections.");
    DB("time_major", true, "Whether to use time-major mode for dynamic RNN.");
    /* attention mechanisms */
    DS("attention", "", "luong | scaled_luong | bahdanau | normed_bahdanau or set to \"\" for no attention");
    DS("attention_architecture", "standard", "standard | gnmt | gnmt_v2.");
    DB("output_attention", true, "Only used in standard attention_architecture.");
    DB("pass_hidden_state", true, "Whether to pass encoder's hidden state to decoder when using an attention based model.");
    /* optimizer */
    DS("optimizer", "sgd", "sgd | adam");
    DF("learning_rate", 1.0, "Learning rate. Adam: 0.001 | 0.0001");
    DI("warmup_steps", 0, "How many steps we inverse-decay learning.");
    DS("warmup_scheme", "t2t", "How to warmup learning rates.");
    DS("decay_scheme", "", "luong5 | luong10 | luong234, or \"\" for no decay.");
    DI("num_train_steps", 12000, "Num steps to train.");
    /* initializer */
    DS("init_op", "uniform", "uniform | glorot_normal | glorot_uniform");
    DF("init_weight", 0.1, "for uniform init_op, initialize weights between [-this, this].");
    /* data */
    DS("src", "", "Source suffix, e.g., en.");
    DS("tgt", "", "Target suffix, e.g., de.");
    DS("train_prefix", "", "Train prefix, expect files with src/tgt suffixes.");
    DS("dev_prefix", "", "Dev prefix, expect files with src/tgt suffixes.");
    DS("test_prefix", "", "Test prefix, expect files with src/tgt suffixes.");
    DS("out_dir", "", "Store log/model files.");
    /* vocab */
    DS("vocab_prefix", "", "Vocab prefix, expect files with src/tgt suffixes.");
    DI("src_max_len", 50, "Max length of src sequences during training.");
    DI("tgt_max_len", 50, "Max length of tgt sequences during training.");
    DI("src_max_len_infer", 0, "Max length of src sequences during inference.");
    DI("tgt_max_len_infer", 0, "Max length of tgt sequences during inference.");
    /* default settings works well (rarely need to change) */
    DS("unit_type", "lstm", "lstm | gru");
    DF("forget_bias", 1.0, "Forget bias for BasicLSTMCell.");
    DF("dropout", 0.2, "Dropout rate (not keep_prob)");
    DF("max_gradient_norm", 5.0, "Clip gradients to this norm.");
    DI("batch_size", 128, "Batch size.");
    DI("steps_per_stats", 100, "How many training steps to do per stats logging.Save checkpoint every 10x steps_per_stats");
    DI("num_buckets", 5, "Put data into similar-length buckets.");
    DS("metrics", "bleu", "Comma-separated list of evaluations metrics (bleu,rouge,accuracy)");
    DI("steps_per_external_eval", 0, "How many training steps to do per external evaluation.");
    DI("random_seed", 0, "Random seed (>0, set a specific seed).");
    DI("num_keep_ckpts", 5, "Max number of checkpoints to keep.");
    /* inference */
    DS("ckpt", "", "Checkpoint file to load a model for inference.");
    DS("inference_input_file", "", "Set to the text to decode.");
    DI("infer_batch_size", 32, "Batch size for inference mode.");
    DS("inference_output_file", "", "Output file to store decoding results.");
    DS("inference_ref_file", "", "Reference file to compute evaluation scores (if provided).");
    DS("infer_mode", "greedy", "Which type of decoder to use during inference.");
    DI("beam_width", 0, "beam width when using beam search decoder. If 0 (default), use standard decoder with greedy helper.");
    DF("length_penalty_weight", 0.0, "Length penalty for beam search.");
    DI("num_translations_per_input", 1, "Number of translations generated for each sentence.");
    return c;
}

/* create_hparams + extend_hparams */
static vg_code create_hparams(nmt_hparams *hp, vg_status *st) {
    static char src_vocab[1024], tgt_vocab[1024];
    memset(hp, 0, sizeof *hp);
    hp->src = S("src"), hp->tgt = S("tgt");
    hp->train_prefix = S("train_prefix"), hp->dev_prefix = S("dev_prefix"), hp->test_prefix = S("test_prefix");
    hp->out_dir = S("out_dir");
    hp->num_units = I("num_units");
    int64_t nl = I("num_layers");
    hp->num_encoder_layers = I("num_encoder_layers") ? I("num_encoder_layers") : nl;
    hp->num_decoder_layers = I("num_decoder_layers") ? I("num_decoder_layers") : nl;
    hp->encoder_type = S("encoder_type"), hp->unit_type = S("unit_type");
    hp->forget_bias = F("forget_bias"), hp->dropout = F("dropout");
    hp->time_major = B("time_major");
    hp->attention = S("attention"), hp->attention_architecture = S("attention_architecture");
    hp->output_attention = B("output_attention"), hp->pass_hidden_state = B("pass_hidden_state");
    hp->optimizer = S("optimizer"), hp->learning_rate = F("learning_rate");
    hp->warmup_steps = I("warmup_steps"), hp->warmup_scheme = S("warmup_scheme"), hp->decay_scheme = S("decay_scheme");
    hp->num_train_steps = I("num_train_steps");
    hp->init_op = S("init_op"), hp->init_weight = F("init_weight");
    hp->src_max_len = I("src_max_len"), hp->tgt_max_len = I("tgt_max_len");
    hp->src_max_len_infer = I("src_max_len_infer"), hp->tgt_max_len_infer = I("tgt_max_len_infer");
    hp->max_gradient_norm = F("max_gradient_norm");
    hp->batch_size = I("batch_size"), hp->steps_per_stats = I("steps_per_stats"), hp->num_buckets = I("num_buckets");
    hp->metrics = S("metrics");
    hp->steps_per_external_eval = I("steps_per_external_eval");
    hp->random_seed = I("random_seed");
    hp->num_keep_ckpts = I("num_keep_ckpts");
    hp->infer_batch_size = I("infer_batch_size"), hp->infer_mode = S("infer_mode");
    hp->beam_width = I("beam_width"), hp->length_penalty_weight = F("length_penalty_weight");
    hp->num_translations_per_input = I("num_translations_per_input");
    hp->decoding_length_factor = 2.0;
    /* extend_hparams */
    if (!strcmp(hp->encoder_type, "bi") && hp->num_encoder_layers % 2 != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "For bi, num_encoder_layers %lld should be even",
                             (long long)hp->num_encoder_layers);
    if (strcmp(hp->encoder_type, "uni") && strcmp(hp->encoder_type, "bi"))
        return vg_status_set(st, VG_UNIMPLEMENTED, "encoder_type %s: the port has uni and bi (no gnmt)",
                             hp->encoder_type);
    if (strcmp(hp->init_op, "uniform") && strcmp(hp->init_op, "glorot_uniform"))
        return vg_status_set(st, VG_UNIMPLEMENTED, "init_op %s: vigil has no glorot_normal initializer", hp->init_op);
    if (strcmp(hp->infer_mode, "greedy") && strcmp(hp->infer_mode, "beam_search"))
        return vg_status_set(st, VG_UNIMPLEMENTED, "infer_mode %s: the port has greedy and beam_search", hp->infer_mode);
    if (!strcmp(hp->infer_mode, "beam_search") && hp->beam_width <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "beam_width must greater than 0 when using beam_search decoder.");
    if (!strcmp(hp->infer_mode, "greedy")) hp->beam_width = 0; /* the greedy decoder runs on the untiled batch */
    if (hp->num_translations_per_input != 1)
        return vg_status_set(st, VG_UNIMPLEMENTED, "num_translations_per_input > 1 is not ported");
    if (B("residual") && hp->num_encoder_layers > 1)
        hp->num_encoder_residual_layers = !strcmp(hp->encoder_type, "bi") ? hp->num_encoder_layers - 2
                                                                           : hp->num_encoder_layers - 1;
    if (B("residual") && hp->num_decoder_layers > 1) hp->num_decoder_residual_layers = hp->num_decoder_layers - 1;
    if (!S("vocab_prefix")[0]) return vg_status_set(st, VG_INVALID_ARGUMENT, "hparams.vocab_prefix must be provided.");
    snprintf(src_vocab, sizeof src_vocab, "%s.%s", S("vocab_prefix"), hp->src);
    snprintf(tgt_vocab, sizeof tgt_vocab, "%s.%s", S("vocab_prefix"), hp->tgt);
    hp->src_vocab_file = src_vocab, hp->tgt_vocab_file = tgt_vocab;
    if (nmt_check_vocab(src_vocab, &hp->src_vocab_size, st) != VG_OK) return st->code;
    if (nmt_check_vocab(tgt_vocab, &hp->tgt_vocab_size, st) != VG_OK) return st->code;
    if (hp->out_dir[0]) mkdir(hp->out_dir, 0755);
    return VG_OK;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* _internal_eval + compute_perplexity over the eval model */
static vg_code internal_eval(nmt_eval_model *em, vg_session *sess, const char *prefix, const nmt_hparams *hp,
                             const char *label, int64_t global_step, vg_status *st) {
    char src[1024], tgt[1024];
    snprintf(src, sizeof src, "%s.%s", prefix, hp->src);
    snprintf(tgt, sizeof tgt, "%s.%s", prefix, hp->tgt);
    vg_tensor *fs = vg_tensor_new_string_scalar(src, strlen(src), st), *ft = vg_tensor_new_string_scalar(tgt, strlen(tgt), st);
    vg_output feeds[2] = {em->src_file_placeholder, em->tgt_file_placeholder};
    vg_tensor *vals[2] = {fs, ft};
    vg_code rc = vg_session_run(sess, NULL, feeds, vals, 2, NULL, NULL, 0, &em->iterator.initializer, 1, NULL, st);
    vg_tensor_free(fs), vg_tensor_free(ft);
    if (rc != VG_OK) return rc;
    double total_loss = 0, total_predict_count = 0;
    for (;;) {
        vg_output f[3] = {em->model.eval_loss, em->model.predict_count, em->model.batch_size};
        vg_tensor *o[3] = {NULL, NULL, NULL};
        rc = vg_session_run(sess, NULL, NULL, NULL, 0, f, o, 3, NULL, 0, NULL, st);
        if (rc == VG_OUT_OF_RANGE) break;
        if (rc != VG_OK) return rc;
        total_loss += vg_tensor_scalar(o[0]) * vg_tensor_scalar(o[2]);
        total_predict_count += vg_tensor_scalar(o[1]);
        for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
    }
    double ppl = total_predict_count > 0 ? exp(total_loss / total_predict_count) : INFINITY;
    printf("  eval %s: perplexity %.2f, global step %lld\n", label, ppl, (long long)global_step);
    return VG_OK;
}

/* run_internal_eval: load the latest checkpoint into the eval graph, perplexity on dev
 * (and test) */
static vg_code run_internal_eval(nmt_eval_model *em, vg_session *sess, const nmt_hparams *hp, vg_status *st) {
    int64_t step;
    if (nmt_create_or_load_model(em->graph, &em->model, hp->out_dir, sess, &step, st) != VG_OK) return st->code;
    if (hp->dev_prefix[0] && internal_eval(em, sess, hp->dev_prefix, hp, "dev", step, st) != VG_OK) return st->code;
    if (hp->test_prefix[0] && internal_eval(em, sess, hp->test_prefix, hp, "test", step, st) != VG_OK) return st->code;
    return VG_OK;
}

/* run_external_eval / _external_eval: decode dev (and test) with the infer graph loaded
 * from the latest checkpoint; decode only once trained (global_step > 0) */
static vg_code run_external_eval(nmt_infer_model *im, vg_session *sess, const nmt_hparams *hp, vg_status *st) {
    int64_t step;
    if (nmt_create_or_load_model(im->graph, &im->model, hp->out_dir, sess, &step, st) != VG_OK) return st->code;
    if (step <= 0) return VG_OK;
    printf("# External evaluation, global step %lld\n", (long long)step);
    const char *prefixes[2] = {hp->dev_prefix, hp->test_prefix}, *labels[2] = {"dev", "test"};
    for (int k = 0; k < 2; k++) {
        if (!prefixes[k][0]) continue;
        char src[1024], tgt[1024], out[1024];
        double scores[8];
        int n;
        snprintf(src, sizeof src, "%s.%s", prefixes[k], hp->src);
        snprintf(tgt, sizeof tgt, "%s.%s", prefixes[k], hp->tgt);
        snprintf(out, sizeof out, "%s/output_%s", hp->out_dir, labels[k]);
        printf("  decoding to output %s\n", out);
        if (nmt_decode_and_evaluate(im, sess, hp, src, tgt, out, scores, 8, &n, st) != VG_OK) return st->code;
        char metrics[256];
        snprintf(metrics, sizeof metrics, "%s", hp->metrics);
        char *save = NULL, *m = strtok_r(metrics, ",", &save);
        for (int i = 0; i < n && m; i++, m = strtok_r(NULL, ",", &save))
            printf("  %s %s: %.1f, global step %lld\n", m, labels[k], scores[i], (long long)step);
    }
    return VG_OK;
}

static vg_session *new_session(vg_graph *g, vg_status *st) { return vg_session_new(g, NULL, st); }

/* train.py train() */
static vg_code train(const nmt_hparams *hp, vg_status *st) {
    int64_t steps_per_stats = hp->steps_per_stats, steps_per_eval = 10 * steps_per_stats;
    int64_t steps_per_external_eval = hp->steps_per_external_eval ? hp->steps_per_external_eval : 5 * steps_per_eval;
    nmt_train_model tm;
    nmt_eval_model em;
    nmt_infer_model im;
    memset(&tm, 0, sizeof tm), memset(&em, 0, sizeof em), memset(&im, 0, sizeof im);
    vg_session *train_sess = NULL, *eval_sess = NULL, *infer_sess = NULL;
    vg_code rc = nmt_create_train_model(hp, &tm, st);
    if (rc == VG_OK) rc = nmt_create_eval_model(hp, &em, st);
    if (rc == VG_OK) rc = nmt_create_infer_model(hp, &im, st);
    if (rc == VG_OK) {
        int n;
        const vg_output *params = vg_graph_collection(tm.graph, VG_TRAINABLE_VARIABLES, &n);
        printf("# Trainable variables\n");
        for (int i = 0; i < n; i++) printf("  %s\n", vg_op_name(params[i].op));
    }
    if (rc == VG_OK && !(train_sess = new_session(tm.graph, st))) rc = st->code;
    if (rc == VG_OK && !(eval_sess = new_session(em.graph, st))) rc = st->code;
    if (rc == VG_OK && !(infer_sess = new_session(im.graph, st))) rc = st->code;
    int64_t global_step = 0;
    if (rc == VG_OK) rc = nmt_create_or_load_model(tm.graph, &tm.model, hp->out_dir, train_sess, &global_step, st);
    /* First evaluation */
    if (rc == VG_OK) rc = run_internal_eval(&em, eval_sess, hp, st);
    if (rc == VG_OK) rc = run_external_eval(&im, infer_sess, hp, st);
    int64_t last_stats_step = global_step, last_eval_step = global_step, last_external_eval_step = global_step;
    double step_time = 0, loss_sum = 0, predict_count = 0, word_count = 0, grad_norm = 0, lr = 0;
    char ckpt[1024];
    snprintf(ckpt, sizeof ckpt, "%s/translate.ckpt", hp->out_dir);
    printf("# Start step %lld, %s\n", (long long)global_step, "epoch 0");
    /* train_sess.run(train_model.iterator.initializer, feed_dict={skip_count_placeholder: skip_count}) */
    if (rc == VG_OK) rc = vg_session_run_targets(train_sess, &tm.iterator.initializer, 1, st);
    while (rc == VG_OK && global_step < hp->num_train_steps) {
        double start = now();
        vg_output f[6] = {tm.model.train_loss, tm.model.predict_count, tm.model.word_count, tm.model.batch_size,
                          tm.model.grad_norm, tm.model.learning_rate};
        vg_tensor *o[6] = {0};
        rc = vg_session_run(train_sess, NULL, NULL, NULL, 0, f, o, 6, &tm.model.update, 1, NULL, st);
        if (rc == VG_OUT_OF_RANGE) {
            /* Finished an epoch: external evaluation, re-initialize the iterator */
            printf("# Finished an epoch, step %lld. Perform external evaluation\n", (long long)global_step);
            rc = run_external_eval(&im, infer_sess, hp, st);
            if (rc == VG_OK) rc = vg_session_run_targets(train_sess, &tm.iterator.initializer, 1, st);
            continue;
        }
        if (rc != VG_OK) break;
        /* update_stats */
        step_time += now() - start;
        loss_sum += vg_tensor_scalar(o[0]) * vg_tensor_scalar(o[3]);
        predict_count += vg_tensor_scalar(o[1]);
        word_count += vg_tensor_scalar(o[2]);
        grad_norm += vg_tensor_scalar(o[4]);
        lr = vg_tensor_scalar(o[5]);
        for (int i = 0; i < 6; i++) vg_tensor_free(o[i]);
        vg_tensor *gs = NULL;
        if ((rc = vg_session_run1(train_sess, tm.model.global_step.read, &gs, st)) != VG_OK) break;
        global_step = (int64_t)vg_tensor_scalar(gs);
        vg_tensor_free(gs);
        if (global_step - last_stats_step >= steps_per_stats) {
            /* process_stats + print_step_info */
            double ppl = predict_count > 0 ? exp(loss_sum / predict_count) : INFINITY;
            printf("  global step %lld lr %g step-time %.2fs wps %.2fK ppl %.2f gN %.2f\n", (long long)global_step, lr,
                   step_time / steps_per_stats, word_count / (1000 * step_time), ppl, grad_norm / steps_per_stats);
            fflush(stdout);
            last_stats_step = global_step;
            step_time = loss_sum = predict_count = word_count = grad_norm = 0;
            if (isnan(ppl) || isinf(ppl) || ppl > 1e20) {
                printf("  step %lld overflow, stop early\n", (long long)global_step);
                break;
            }
        }
        if (global_step - last_eval_step >= steps_per_eval) {
            last_eval_step = global_step;
            printf("# Save eval, global step %lld\n", (long long)global_step);
            rc = vg_saver_save(tm.model.saver, train_sess, ckpt, global_step, NULL, 0, st);
            if (rc == VG_OK) rc = run_internal_eval(&em, eval_sess, hp, st);
        }
        if (rc == VG_OK && global_step - last_external_eval_step >= steps_per_external_eval) {
            last_external_eval_step = global_step;
            rc = vg_saver_save(tm.model.saver, train_sess, ckpt, global_step, NULL, 0, st);
            if (rc == VG_OK) rc = run_external_eval(&im, infer_sess, hp, st);
        }
    }
    /* Done training */
    if (rc == VG_OK) rc = vg_saver_save(tm.model.saver, train_sess, ckpt, global_step, NULL, 0, st);
    if (rc == VG_OK) {
        printf("# Final, step %lld\n", (long long)global_step);
        rc = run_internal_eval(&em, eval_sess, hp, st); /* run_full_eval */
        if (rc == VG_OK) rc = run_external_eval(&im, infer_sess, hp, st);
    }
    vg_session_free(train_sess), vg_session_free(eval_sess), vg_session_free(infer_sess);
    nmt_model_free(&tm.model), nmt_model_free(&em.model), nmt_model_free(&im.model);
    vg_graph_free(tm.graph), vg_graph_free(em.graph), vg_graph_free(im.graph);
    return rc;
}

/* inference.py inference() (one worker) + run_main's evaluation of the output */
static vg_code inference(const nmt_hparams *hp, vg_status *st) {
    char ckpt_buf[1024];
    const char *ckpt = S("ckpt")[0] ? S("ckpt") : vg_latest_checkpoint(hp->out_dir, ckpt_buf, sizeof ckpt_buf);
    if (!ckpt) return vg_status_set(st, VG_NOT_FOUND, "no checkpoint in %s", hp->out_dir);
    nmt_infer_model im;
    memset(&im, 0, sizeof im);
    vg_session *sess = NULL;
    vg_code rc = nmt_create_infer_model(hp, &im, st);
    if (rc == VG_OK && !(sess = new_session(im.graph, st))) rc = st->code;
    if (rc == VG_OK) rc = nmt_load_model(im.graph, &im.model, ckpt, sess, st);
    double scores[8];
    int n = 0;
    nmt_hparams h = *hp;
    const char *ref = S("inference_ref_file");
    if (!ref[0]) h.metrics = ""; /* no reference: decode only */
    if (rc == VG_OK) {
        printf("# Start decoding %s with %s (%s)\n", S("inference_input_file"), ckpt, hp->infer_mode);
        rc = nmt_decode_and_evaluate(&im, sess, &h, S("inference_input_file"), ref, S("inference_output_file"), scores,
                                     8, &n, st);
    }
    vg_session_free(sess);
    nmt_model_free(&im.model);
    vg_graph_free(im.graph);
    return rc;
}

int main(int argc, char **argv) {
    vg_status st = {0};
    FLAGS = vg_flags_new();
    if (add_arguments(&st) != VG_OK || vg_flags_parse(FLAGS, &argc, argv, false, &st) != VG_OK) {
        fprintf(stderr, "nmt: %s\n", st.msg);
        return 2;
    }
    if (vg_flags_help_requested(FLAGS)) {
        char *h = vg_flags_help(FLAGS, argv[0]);
        fputs(h ? h : "", stdout);
        vg_free(h);
        vg_flags_free(FLAGS);
        return 0;
    }
    nmt_hparams hp;
    vg_code rc = create_hparams(&hp, &st);
    if (rc == VG_OK) rc = S("inference_input_file")[0] ? inference(&hp, &st) : train(&hp, &st);
    if (rc != VG_OK) fprintf(stderr, "nmt: %s\n", st.msg);
    vg_flags_free(FLAGS);
    return rc == VG_OK ? 0 : 1;
}
