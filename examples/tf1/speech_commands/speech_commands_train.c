/* speech_commands_train.c - port of tensorflow/examples/speech_commands/train.py:
 * trains a keyword-spotting model ('conv' by default) on a folder of WAV files with a
 * plain session, a Saver and FileWriters, the learning-rate schedule given as
 * comma-separated lists, validation every eval_step_interval steps, checkpoints every
 * save_step_interval steps and the final test accuracy with its confusion matrix. See
 * README.md for the line-by-line map. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include "input_data.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static vg_flags *FLAGS;

#define S(name) vg_flags_string(FLAGS, name)
#define I(name) vg_flags_integer(FLAGS, name)
#define F(name) vg_flags_float(FLAGS, name)

static int define_flags(vg_status *st) {
    vg_flags *f = FLAGS;
    vg_code c = VG_OK;
    /* no network: the default is empty (the Python downloads speech_commands_v0.02.tar.gz) */
    c = c ? c : vg_flags_define_string(f, "data_url", "", "Location of speech training data archive on the web.", st);
    c = c ? c
          : vg_flags_define_string(f, "data_dir", "/tmp/speech_dataset/",
                                   "Where to download the speech training data to.", st);
    c = c ? c
          : vg_flags_define_float(f, "background_volume", 0.1,
                                  "How loud the background noise should be, between 0 and 1.", st);
    c = c ? c
          : vg_flags_define_float(f, "background_frequency", 0.8,
                                  "How many of the training samples have background noise mixed in.", st);
    c = c ? c
          : vg_flags_define_float(f, "silence_percentage", 10.0, "How much of the training data should be silence.",
                                  st);
    c = c ? c
          : vg_flags_define_float(f, "unknown_percentage", 10.0,
                                  "How much of the training data should be unknown words.", st);
    c = c ? c
          : vg_flags_define_float(f, "time_shift_ms", 100.0, "Range to randomly shift the training audio by in time.",
                                  st);
    c = c ? c
          : vg_flags_define_integer(f, "testing_percentage", 10, "What percentage of wavs to use as a test set.", st);
    c = c ? c
          : vg_flags_define_integer(f, "validation_percentage", 10,
                                    "What percentage of wavs to use as a validation set.", st);
    c = c ? c : vg_flags_define_integer(f, "sample_rate", 16000, "Expected sample rate of the wavs", st);
    c = c ? c
          : vg_flags_define_integer(f, "clip_duration_ms", 1000, "Expected duration in milliseconds of the wavs", st);
    c = c ? c : vg_flags_define_float(f, "window_size_ms", 30.0, "How long each spectrogram timeslice is.", st);
    c = c ? c
          : vg_flags_define_float(f, "window_stride_ms", 10.0, "How far to move in time between spectogram timeslices.",
                                  st);
    c = c ? c
          : vg_flags_define_integer(f, "feature_bin_count", 40, "How many bins to use for the MFCC fingerprint", st);
    c = c ? c
          : vg_flags_define_string(f, "how_many_training_steps", "15000,3000", "How many training loops to run", st);
    c = c ? c
          : vg_flags_define_integer(f, "eval_step_interval", 400, "How often to evaluate the training results.", st);
    c = c ? c
          : vg_flags_define_string(f, "learning_rate", "0.001,0.0001",
                                   "How large a learning rate to use when training.", st);
    c = c ? c : vg_flags_define_integer(f, "batch_size", 100, "How many items to train with at once", st);
    c = c ? c
          : vg_flags_define_string(f, "summaries_dir", "/tmp/retrain_logs",
                                   "Where to save summary logs for TensorBoard.", st);
    c = c ? c
          : vg_flags_define_string(f, "wanted_words", "yes,no,up,down,left,right,on,off,stop,go",
                                   "Words to use (others will be added to an unknown label)", st);
    c = c ? c
          : vg_flags_define_string(f, "train_dir", "/tmp/speech_commands_train",
                                   "Directory to write event logs and checkpoint.", st);
    c = c ? c : vg_flags_define_integer(f, "save_step_interval", 100, "Save model checkpoint every save_steps.", st);
    c = c ? c
          : vg_flags_define_string(f, "start_checkpoint", "",
                                   "If specified, restore this pretrained model before any training.", st);
    c = c ? c : vg_flags_define_string(f, "model_architecture", "conv", "What model architecture to use", st);
    c = c ? c
          : vg_flags_define_string(f, "preprocess", "mfcc",
                                   "Spectrogram processing mode. Can be \"mfcc\" or \"average\"", st);
    return c != VG_OK;
}

/* "a,b,c" -> list; returns the count (0 on error) */
static int split_list(const char *s, char ***out) {
    int n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    char **v = calloc((size_t)n, sizeof *v);
    if (!v) return 0;
    const char *p = s;
    for (int i = 0; i < n; i++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        v[i] = malloc(len + 1);
        if (v[i]) memcpy(v[i], p, len), v[i][len] = 0;
        p = e ? e + 1 : p + len;
    }
    *out = v;
    return n;
}

static void free_list(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void mkdirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') *p = 0, mkdir(buf, 0755), *p = '/';
    mkdir(buf, 0755);
}

static void print_confusion_matrix(const char *level, const int32_t *m, int64_t n) {
    printf("%s:tensorflow:Confusion Matrix:\n [", level);
    for (int64_t r = 0; r < n; r++) {
        printf("%s[", r ? "\n " : "");
        for (int64_t c = 0; c < n; c++) printf("%s%d", c ? " " : "", m[r * n + c]);
        printf("]");
    }
    printf("]\n");
}

static int train_main(void) {
    vg_status st = {0};
    int rc = 1;
    char **wanted = NULL, **steps_s = NULL, **rates_s = NULL;
    int nwanted = split_list(S("wanted_words"), &wanted);
    int nsteps = split_list(S("how_many_training_steps"), &steps_s);
    int nrates = split_list(S("learning_rate"), &rates_s);
    vg_graph *g = vg_graph_new();
    audio_processor *ap = NULL;
    vg_saver *saver = NULL;
    vg_session *sess = NULL;
    vg_file_writer *train_writer = NULL, *validation_writer = NULL;
    vg_tensor *lr_t = NULL, *dropout_t = NULL;
    long *training_steps_list = NULL;
    double *learning_rates_list = NULL;
    const char *summaries_dir = S("summaries_dir");
    bool summaries = summaries_dir[0] != 0;
    const char *train_dir = S("train_dir");
    const char *arch = S("model_architecture");
    int64_t batch_size = I("batch_size");

    model_settings ms;
    if (prepare_model_settings(nwanted + 2, I("sample_rate"), I("clip_duration_ms"), F("window_size_ms"),
                               F("window_stride_ms"), I("feature_bin_count"), S("preprocess"), &ms))
        goto done;
    ap = audio_processor_new(g, S("data_url"), S("data_dir"), F("silence_percentage"), F("unknown_percentage"), wanted,
                             nwanted, (double)I("validation_percentage"), (double)I("testing_percentage"), &ms,
                             summaries_dir);
    if (!ap) goto done;
    int64_t fingerprint_size = ms.fingerprint_size;
    int64_t label_count = ms.label_count;
    int64_t time_shift_samples = (int64_t)((F("time_shift_ms") * (double)I("sample_rate")) / 1000);
    /* the learning-rate schedule */
    if (nsteps != nrates) {
        fprintf(stderr,
                "--how_many_training_steps and --learning_rate must be equal length lists, but are %d and %d long "
                "instead\n",
                nsteps, nrates);
        goto done;
    }
    training_steps_list = calloc((size_t)nsteps, sizeof *training_steps_list);
    learning_rates_list = calloc((size_t)nrates, sizeof *learning_rates_list);
    if (!training_steps_list || !learning_rates_list) goto done;
    for (int i = 0; i < nsteps; i++) {
        training_steps_list[i] = atol(steps_s[i]);
        learning_rates_list[i] = atof(rates_s[i]);
    }

    int64_t ind[2] = {-1, fingerprint_size};
    vg_output fingerprint_input = vg_placeholder(g, VG_FLOAT, ind, 2, "fingerprint_input");
    vg_output dropout_prob = {NULL, 0};
    vg_output logits = create_model(g, fingerprint_input, &ms, arch, true, &dropout_prob);
    if (!logits.op) goto graph_error;
    /* Define loss and optimizer */
    int64_t gtd[1] = {-1};
    vg_output ground_truth_input = vg_placeholder(g, VG_INT64, gtd, 1, "groundtruth_input");
    vg_graph_push_scope(g, "cross_entropy");
    vg_output cross_entropy_mean = vg_losses_sparse_softmax_cross_entropy(g, ground_truth_input, logits, NULL);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "train");
    vg_output learning_rate_input = vg_placeholder(g, VG_FLOAT, NULL, 0, "learning_rate_input");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.0);
    vg_optimizer_set_learning_rate_tensor(opt, learning_rate_input);
    vg_output no_step = {NULL, 0};
    vg_op *train_step = vg_optimizer_minimize(opt, g, cross_entropy_mean, NULL, 0, no_step, NULL);
    vg_optimizer_free(opt);
    vg_graph_pop_scope(g);
    vg_output predicted_indices = vg_argmax(g, logits, 1, VG_INT64, NULL);
    vg_output correct_prediction = vg_equal(g, predicted_indices, ground_truth_input, NULL);
    vg_output confusion_matrix =
        vg_confusion_matrix(g, ground_truth_input, predicted_indices, label_count, VG_INT32, NULL);
    vg_output evaluation_step =
        vg_reduce_mean(g, vg_cast(g, correct_prediction, VG_FLOAT, NULL), NULL, -1, false, NULL);
    vg_graph_push_scope(g, "eval");
    vg_output eval_summaries[2] = {vg_summary_scalar(g, "cross_entropy", cross_entropy_mean),
                                   vg_summary_scalar(g, "accuracy", evaluation_step)};
    vg_graph_pop_scope(g);

    vg_output global_step = vg_get_or_create_global_step(g);
    vg_output increment_global_step =
        vg_assign(g, global_step, vg_add(g, global_step, vg_const_i64(g, 1, NULL), NULL), true, NULL);

    if (vg_graph_status(g, &st) != VG_OK) goto graph_error;
    saver = vg_saver_new(g, NULL, &st);
    if (!saver) goto fail;
    /* merge_all(scope='eval') */
    vg_output merged_summaries = vg_summary_merge(g, eval_summaries, 2, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st) != VG_OK) goto graph_error;

    char path[4200];
    if (summaries) {
        snprintf(path, sizeof path, "%s/train", summaries_dir);
        train_writer = vg_file_writer_new(path, NULL, &st);
        if (!train_writer || vg_file_writer_add_graph(train_writer, g, 0, &st) != VG_OK) goto fail;
        snprintf(path, sizeof path, "%s/validation", summaries_dir);
        validation_writer = vg_file_writer_new(path, NULL, &st);
        if (!validation_writer) goto fail;
        if (audio_processor_open_writer(ap, g, summaries_dir, &st) != VG_OK) goto fail;
    }

    sess = vg_session_new(g, NULL, &st);
    if (!sess || vg_session_run_targets(sess, &init, 1, &st) != VG_OK) goto fail;

    long start_step = 1;
    if (S("start_checkpoint")[0]) {
        if (load_variables_from_checkpoint(g, sess, S("start_checkpoint"), &st) != VG_OK) goto fail;
        vg_tensor *gs = NULL;
        if (vg_session_run1(sess, global_step, &gs, &st) != VG_OK) goto fail;
        start_step = (long)*(const int64_t *)vg_tensor_data(gs);
        vg_tensor_free(gs);
    }
    printf("INFO:tensorflow:Training from step: %ld \n", start_step);

    /* Save graph.pbtxt (tf.io.write_graph(sess.graph_def, train_dir, '<arch>.pbtxt')). */
    mkdirs(train_dir);
    char *text = NULL;
    size_t text_len = 0;
    snprintf(path, sizeof path, "%s/%s.pbtxt", train_dir, arch);
    if (vg_graph_to_graphdef_text(g, &text, &text_len, &st) != VG_OK) goto fail;
    vg_code wc = vg_write_file_atomic(path, text, text_len, &st);
    vg_free(text);
    if (wc != VG_OK) goto fail;
    /* Save list of words. */
    snprintf(path, sizeof path, "%s/%s_labels.txt", train_dir, arch);
    FILE *lf = fopen(path, "w");
    if (!lf) {
        vg_status_set(&st, VG_PERMISSION_DENIED, "cannot write %s", path);
        goto fail;
    }
    for (int i = 0; i < ap->nwords; i++) fprintf(lf, "%s%s", i ? "\n" : "", ap->words_list[i]);
    fclose(lf);

    lr_t = vg_tensor_new(VG_FLOAT, NULL, 0, &st);
    dropout_t = vg_tensor_new(VG_FLOAT, NULL, 0, &st);
    if (!lr_t || !dropout_t) goto fail;
    int32_t *total_conf_matrix = calloc((size_t)(label_count * label_count), sizeof(int32_t));
    if (!total_conf_matrix) goto fail;

    /* Training loop. */
    long training_steps_max = 0;
    for (int i = 0; i < nsteps; i++) training_steps_max += training_steps_list[i];
    for (long training_step = start_step; training_step <= training_steps_max; training_step++) {
        /* Figure out what the current learning rate is. */
        double learning_rate_value = learning_rates_list[nsteps - 1];
        long training_steps_sum = 0;
        for (int i = 0; i < nsteps; i++) {
            training_steps_sum += training_steps_list[i];
            if (training_step <= training_steps_sum) {
                learning_rate_value = learning_rates_list[i];
                break;
            }
        }
        /* Pull the audio samples we'll use for training. */
        vg_tensor *train_fingerprints = NULL, *train_ground_truth = NULL;
        if (audio_processor_get_data(ap, batch_size, 0, &ms, F("background_frequency"), F("background_volume"),
                                     time_shift_samples, SET_TRAINING, sess, &train_fingerprints, &train_ground_truth,
                                     &st) != VG_OK)
            goto fail_cm;
        /* Run the graph with this batch of training data. */
        *(float *)vg_tensor_data(lr_t) = (float)learning_rate_value;
        *(float *)vg_tensor_data(dropout_t) = 0.5f;
        vg_output feeds[4] = {fingerprint_input, ground_truth_input, learning_rate_input, dropout_prob};
        vg_tensor *vals[4] = {train_fingerprints, train_ground_truth, lr_t, dropout_t};
        vg_output fetches[4] = {evaluation_step, cross_entropy_mean, increment_global_step, merged_summaries};
        vg_tensor *outs[4] = {NULL};
        vg_code c =
            vg_session_run(sess, NULL, feeds, vals, 4, fetches, outs, summaries ? 4 : 3, &train_step, 1, NULL, &st);
        vg_tensor_free(train_fingerprints);
        vg_tensor_free(train_ground_truth);
        if (c != VG_OK) goto fail_cm;
        float train_accuracy = *(const float *)vg_tensor_data(outs[0]);
        float cross_entropy_value = *(const float *)vg_tensor_data(outs[1]);
        if (summaries) {
            size_t len = 0;
            const char *bytes = vg_tensor_string(outs[3], 0, &len);
            c = vg_file_writer_add_summary(train_writer, bytes, len, training_step, &st);
        }
        for (int i = 0; i < 4; i++) vg_tensor_free(outs[i]);
        if (c != VG_OK) goto fail_cm;
        printf("INFO:tensorflow:Step #%ld: rate %f, accuracy %.1f%%, cross entropy %f\n", training_step,
               learning_rate_value, train_accuracy * 100, cross_entropy_value);
        fflush(stdout);
        bool is_last_step = training_step == training_steps_max;
        if (training_step % I("eval_step_interval") == 0 || is_last_step) {
            int set_size = audio_processor_set_size(ap, SET_VALIDATION);
            double total_accuracy = 0;
            memset(total_conf_matrix, 0, (size_t)(label_count * label_count) * sizeof(int32_t));
            for (int64_t i = 0; i < set_size; i += batch_size) {
                vg_tensor *vf = NULL, *vgt = NULL;
                if (audio_processor_get_data(ap, batch_size, i, &ms, 0.0, 0.0, 0, SET_VALIDATION, sess, &vf, &vgt,
                                             &st) != VG_OK)
                    goto fail_cm;
                *(float *)vg_tensor_data(dropout_t) = 1.0f;
                vg_output vfeeds[3] = {fingerprint_input, ground_truth_input, dropout_prob};
                vg_tensor *vvals[3] = {vf, vgt, dropout_t};
                vg_output vfetches[3] = {evaluation_step, confusion_matrix, merged_summaries};
                vg_tensor *vouts[3] = {NULL};
                c = vg_session_run(sess, NULL, vfeeds, vvals, 3, vfetches, vouts, summaries ? 3 : 2, NULL, 0, NULL,
                                   &st);
                vg_tensor_free(vf);
                vg_tensor_free(vgt);
                if (c != VG_OK) goto fail_cm;
                if (summaries) {
                    size_t len = 0;
                    const char *bytes = vg_tensor_string(vouts[2], 0, &len);
                    c = vg_file_writer_add_summary(validation_writer, bytes, len, training_step, &st);
                }
                double validation_accuracy = *(const float *)vg_tensor_data(vouts[0]);
                int64_t bs = batch_size < set_size - i ? batch_size : set_size - i;
                total_accuracy += (validation_accuracy * (double)bs) / set_size;
                const int32_t *cm = vg_tensor_data(vouts[1]);
                for (int64_t k = 0; k < label_count * label_count; k++) total_conf_matrix[k] += cm[k];
                for (int k = 0; k < 3; k++) vg_tensor_free(vouts[k]);
                if (c != VG_OK) goto fail_cm;
            }
            print_confusion_matrix("INFO", total_conf_matrix, label_count);
            printf("INFO:tensorflow:Step %ld: Validation accuracy = %.1f%% (N=%d)\n", training_step,
                   total_accuracy * 100, set_size);
        }
        /* Save the model checkpoint periodically. */
        if (training_step % I("save_step_interval") == 0 || training_step == training_steps_max) {
            char checkpoint_path[4200];
            snprintf(checkpoint_path, sizeof checkpoint_path, "%s/%s.ckpt", train_dir, arch);
            printf("INFO:tensorflow:Saving to \"%s-%ld\"\n", checkpoint_path, training_step);
            if (vg_saver_save(saver, sess, checkpoint_path, training_step, NULL, 0, &st) != VG_OK) goto fail_cm;
        }
    }

    int set_size = audio_processor_set_size(ap, SET_TESTING);
    printf("INFO:tensorflow:set_size=%d\n", set_size);
    double total_accuracy = 0;
    memset(total_conf_matrix, 0, (size_t)(label_count * label_count) * sizeof(int32_t));
    for (int64_t i = 0; i < set_size; i += batch_size) {
        vg_tensor *tf_ = NULL, *tgt = NULL;
        if (audio_processor_get_data(ap, batch_size, i, &ms, 0.0, 0.0, 0, SET_TESTING, sess, &tf_, &tgt, &st) != VG_OK)
            goto fail_cm;
        *(float *)vg_tensor_data(dropout_t) = 1.0f;
        vg_output tfeeds[3] = {fingerprint_input, ground_truth_input, dropout_prob};
        vg_tensor *tvals[3] = {tf_, tgt, dropout_t};
        vg_output tfetches[2] = {evaluation_step, confusion_matrix};
        vg_tensor *touts[2] = {NULL};
        vg_code c = vg_session_run(sess, NULL, tfeeds, tvals, 3, tfetches, touts, 2, NULL, 0, NULL, &st);
        vg_tensor_free(tf_);
        vg_tensor_free(tgt);
        if (c != VG_OK) goto fail_cm;
        double test_accuracy = *(const float *)vg_tensor_data(touts[0]);
        int64_t bs = batch_size < set_size - i ? batch_size : set_size - i;
        total_accuracy += (test_accuracy * (double)bs) / set_size;
        const int32_t *cm = vg_tensor_data(touts[1]);
        for (int64_t k = 0; k < label_count * label_count; k++) total_conf_matrix[k] += cm[k];
        vg_tensor_free(touts[0]);
        vg_tensor_free(touts[1]);
    }
    print_confusion_matrix("WARNING", total_conf_matrix, label_count);
    printf("WARNING:tensorflow:Final test accuracy = %.1f%% (N=%d)\n", total_accuracy * 100, set_size);
    free(total_conf_matrix);
    rc = 0;
    goto done;
fail_cm:
    free(total_conf_matrix);
    goto fail;
graph_error:
    vg_graph_status(g, &st);
fail:
    fprintf(stderr, "speech_commands_train: %s\n", st.msg[0] ? st.msg : "failed");
done:
    vg_tensor_free(lr_t);
    vg_tensor_free(dropout_t);
    if (train_writer) vg_file_writer_close(train_writer, NULL);
    if (validation_writer) vg_file_writer_close(validation_writer, NULL);
    vg_file_writer_free(train_writer);
    vg_file_writer_free(validation_writer);
    audio_processor_free(ap); /* closes the data writer before the session goes */
    vg_session_free(sess);
    vg_saver_free(saver);
    vg_graph_free(g);
    free(training_steps_list);
    free(learning_rates_list);
    free_list(wanted, nwanted);
    free_list(steps_s, nsteps);
    free_list(rates_s, nrates);
    return rc;
}

int main(int argc, char **argv) {
    vg_status st = {0};
    FLAGS = vg_flags_new();
    if (!FLAGS || define_flags(&st)) {
        fprintf(stderr, "flags: %s\n", st.msg);
        vg_flags_free(FLAGS);
        return 1;
    }
    /* parse_known_args + tf.app.run: unknown flags are an error here */
    if (vg_flags_parse(FLAGS, &argc, argv, false, &st) != VG_OK) {
        fprintf(stderr, "%s\n", st.msg);
        vg_flags_free(FLAGS);
        return 2;
    }
    if (vg_flags_help_requested(FLAGS)) {
        char *h = vg_flags_help(FLAGS, argv[0]);
        if (h) puts(h);
        vg_free(h);
        vg_flags_free(FLAGS);
        return 0;
    }
    int rc = train_main();
    vg_flags_free(FLAGS);
    return rc;
}
