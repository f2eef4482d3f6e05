/* magenta_events_rnn.c - port of magenta's event-sequence RNN (magenta/magenta,
 * magenta/models/shared/events_rnn_graph.py: make_rnn_cell, get_build_graph_fn for the
 * 'train' and 'eval' modes; events_rnn_train.py: run_training, run_eval,
 * EvalLoggingTensorHook; the flags of melody_rnn_train.py) on synthetic melodies written
 * at run time as SequenceExamples and read by the ported sequence_example_lib
 * (magenta_sequence_example_lib.h). See examples/tf1/README.md for the mapping.
 *
 * Usage: magenta_events_rnn --run_dir D [--sequence_example_file F] [--eval 0|1]
 *          [--num_training_steps N] [--summary_frequency 10] [--num_checkpoints 10]
 *          [--num_eval_examples N] [--hparams "batch_size=8,rnn_layer_sizes=[32,32],..."]
 *          [--save_checkpoint_secs 60] [--eval_interval_secs 60] [--eval_timeout_secs 300]
 *          [--num_melodies 256]
 * Training writes checkpoints and summaries to D/train, evaluation its summaries to
 * D/eval. Without --sequence_example_file the program writes --num_melodies synthetic
 * melodies (an ascending C major scale, each note held one step, from a random
 * phase, 9..24 events) to D/training_melodies.tfrecord (D/eval_melodies.tfrecord with
 * --eval 1, another seed). The logging hooks print "Global Step = .., Loss = ..,
 * Perplexity = .., Accuracy = .." lines on stdout; training ends with "final loss <x>". */
#include "magenta_sequence_example_lib.h"
#include "vigil/vigil.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* MelodyOneHotEncoding(min_note=48, max_note=84): NO_EVENT (-2) -> 0, NOTE_OFF (-1) ->
 * 1, pitch p -> p - 48 + 2; OneHotEventSequenceEncoderDecoder: input_size = num_classes. */
#define MIN_NOTE 48
#define MAX_NOTE 84
#define NUM_SPECIAL_MELODY_EVENTS 2
#define NUM_CLASSES (MAX_NOTE - MIN_NOTE + NUM_SPECIAL_MELODY_EVENTS)
#define INPUT_SIZE NUM_CLASSES
#define NO_EVENT_LABEL 0 /* encoder_decoder.default_event_label */
#define MAX_LAYERS 8

/* EventSequenceRnnConfig's HParams (melody_rnn_model's 'basic_rnn' defaults). */
typedef struct hparams {
    int batch_size;
    int rnn_layer_sizes[MAX_LAYERS];
    int num_layers;
    double dropout_keep_prob;
    double clip_norm;
    double learning_rate;
} hparams;

static int parse_hparams(hparams *h, const char *s) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) return fprintf(stderr, "hparams: expected name=value, got '%s'\n", kv), 2;
        *eq = 0;
        const char *k = kv, *v = eq + 1;
        if (!strcmp(k, "batch_size")) h->batch_size = atoi(v);
        else if (!strcmp(k, "dropout_keep_prob")) h->dropout_keep_prob = atof(v);
        else if (!strcmp(k, "clip_norm")) h->clip_norm = atof(v);
        else if (!strcmp(k, "learning_rate")) h->learning_rate = atof(v);
        else if (!strcmp(k, "rnn_layer_sizes")) {
            /* [a,b,...]: the list's commas were split by strtok; gather until ']' */
            h->num_layers = 0;
            const char *p = v[0] == '[' ? v + 1 : v;
            for (;;) {
                if (h->num_layers >= MAX_LAYERS) return fprintf(stderr, "hparams: too many layers\n"), 2;
                h->rnn_layer_sizes[h->num_layers++] = atoi(p);
                if (strchr(p, ']') || v[0] != '[') break;
                p = strtok_r(NULL, ",", &save);
                if (!p) return fprintf(stderr, "hparams: unterminated rnn_layer_sizes\n"), 2;
            }
        } else return fprintf(stderr, "hparams: unknown hparam '%s'\n", k), 2;
    }
    if (h->batch_size <= 0 || h->num_layers <= 0 || h->dropout_keep_prob <= 0 || h->dropout_keep_prob > 1 ||
        h->learning_rate <= 0 || h->clip_norm < 0)
        return fprintf(stderr, "hparams: batch_size, rnn_layer_sizes and learning_rate must be positive, "
                               "dropout_keep_prob in (0, 1]\n"), 2;
    for (int i = 0; i < h->num_layers; i++)
        if (h->rnn_layer_sizes[i] <= 0) return fprintf(stderr, "hparams: rnn_layer_sizes must be positive\n"), 2;
    return 0;
}

/* ---- synthetic melodies ------------------------------------------------------ */
/* An ascending C major scale from middle C, each note followed by one NO_EVENT (held),
 * from a random phase: predicting the note after a hold needs the note before it. */
static int melody_event(int pos) {
    static const int scale[8] = {60, 62, 64, 65, 67, 69, 71, 72};
    if (pos % 2) return NO_EVENT_LABEL;
    return scale[(pos / 2) % 8] - MIN_NOTE + NUM_SPECIAL_MELODY_EVENTS;
}

/* One melody of 9..24 events at a random phase, encoded (encoder_decoder.encode): inputs
 * = one-hot of events[0 .. len-2], labels = events[1 .. len-1]. ctx: the rand_r seed. */
static int melody_example(void *ctx, float *inputs, int64_t *labels) {
    unsigned *seed = ctx;
    int len = 9 + (int)(rand_r(seed) % 16), phase = (int)(rand_r(seed) % 16);
    int events[25];
    for (int t = 0; t < len; t++) events[t] = melody_event(phase + t);
    memset(inputs, 0, 24 * INPUT_SIZE * sizeof *inputs);
    for (int t = 0; t + 1 < len; t++) {
        inputs[t * INPUT_SIZE + events[t]] = 1.0f;
        labels[t] = events[t + 1];
    }
    return len - 1;
}

static int write_melodies(const char *path, int n, unsigned seed) {
    return write_sequence_examples(path, n, INPUT_SIZE, 24, melody_example, &seed);
}

/* ---- events_rnn_graph.py ------------------------------------------------------ */
/* make_rnn_cell(rnn_layer_sizes, dropout_keep_prob, attn_length=0,
 * base_cell=BasicLSTMCell, residual_connections=False) */
static vg_rnn_cell *make_rnn_cell(const hparams *h, double dropout_keep_prob) {
    vg_rnn_cell *cells[MAX_LAYERS];
    for (int i = 0; i < h->num_layers; i++) {
        vg_rnn_cell *cell = vg_basic_lstm_cell_new(h->rnn_layer_sizes[i], 1.0f, true);
        cells[i] = vg_dropout_wrapper_new(cell, 1.0, dropout_keep_prob, 1.0, 0);
    }
    return vg_multi_rnn_cell_new(cells, h->num_layers);
}

/* batch_labels_to_num_steps(labels, lengths) through tf.py_func: the sum over the batch
 * of encoder_decoder.labels_to_num_steps(labels[:length]), which for one-hot melodies
 * is the length. */
static vg_code batch_labels_to_num_steps(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user,
                                         vg_status *st) {
    (void)nin, (void)nout, (void)user;
    const int32_t *lengths = vg_tensor_data(in[1]);
    double num_steps = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(in[1]); i++) num_steps += lengths[i];
    out[0] = vg_tensor_new_scalar_f32((float)num_steps, st);
    return out[0] ? VG_OK : st->code;
}

static void summarize(vg_graph *g, const char *name, vg_output value) {
    vg_summary_scalar(g, name, value);
    vg_graph_add_to_collection(g, name, value);
}

/* get_build_graph_fn(mode, config, sequence_example_file_paths)() */
static void build_graph(vg_graph *g, bool train, const hparams *h, const char *file, vg_optimizer **opt_out) {
    const char *files[1] = {file};
    vg_output batch[3];
    /* magenta.common.get_padded_batch(paths, batch_size, input_size, shuffle=mode == 'train') */
    get_padded_batch(g, files, 1, h->batch_size, INPUT_SIZE, 0, 4, train, batch);
    vg_output inputs = batch[0], labels = batch[1], lengths = batch[2];
    double dropout_keep_prob = h->dropout_keep_prob; /* 1.0 only in 'generate' */
    vg_rnn_cell *cell = make_rnn_cell(h, dropout_keep_prob);
    vg_output initial_state[2 * MAX_LAYERS], final_state[2 * MAX_LAYERS], outputs;
    vg_rnn_cell_zero_state(cell, g, h->batch_size, vg_out(NULL, 0), VG_FLOAT, initial_state);
    vg_status st;
    vg_dynamic_rnn(cell, g, inputs, lengths, initial_state, VG_FLOAT, 32, false, NULL, &outputs, final_state, &st);
    vg_rnn_cell_free(cell);

    vg_output outputs_flat = flatten_maybe_padded_sequences(g, outputs, lengths);
    outputs_flat = vg_reshape_c(g, outputs_flat, (const int64_t[]){-1, h->rnn_layer_sizes[h->num_layers - 1]}, 2,
                                NULL); /* the static depth flatten's GatherNd leaves unknown */
    vg_output logits_flat = vg_fully_connected(g, outputs_flat, NUM_CLASSES, VG_ACT_NONE, NULL); /* contrib.layers.linear */
    vg_output labels_flat = flatten_maybe_padded_sequences(g, labels, lengths);
    vg_output softmax_cross_entropy = vg_out(vg_sparse_softmax_xent(g, logits_flat, labels_flat, NULL), 0);
    vg_output predictions_flat = vg_argmax(g, logits_flat, 1, VG_INT64, NULL);
    vg_output correct_predictions = vg_cast(g, vg_equal(g, labels_flat, predictions_flat, NULL), VG_FLOAT, "ToFloat");
    vg_output no_event = vg_const_i64(g, NO_EVENT_LABEL, NULL);
    vg_output event_positions = vg_cast(g, vg_not_equal(g, labels_flat, no_event, NULL), VG_FLOAT, "ToFloat_1");
    vg_output no_event_positions = vg_cast(g, vg_equal(g, labels_flat, no_event, NULL), VG_FLOAT, "ToFloat_2");
    vg_output py_in[2] = {labels, lengths};
    vg_dtype tout = VG_FLOAT;
    vg_op *pf = vg_py_func(g, batch_labels_to_num_steps, NULL, py_in, 2, &tout, 1, true, NULL, NULL, NULL);
    vg_output num_steps = vg_out(pf, 0);

    if (train) {
        vg_output loss = vg_reduce_mean(g, softmax_cross_entropy, NULL, -1, false, NULL);
        vg_output perplexity = vg_exp(g, loss, NULL);
        vg_output accuracy = vg_reduce_mean(g, correct_predictions, NULL, -1, false, NULL);
        vg_output event_accuracy = vg_div(
            g, vg_reduce_sum(g, vg_mul(g, correct_predictions, event_positions, NULL), NULL, -1, false, NULL),
            vg_reduce_sum(g, event_positions, NULL, -1, false, NULL), NULL);
        vg_output no_event_accuracy = vg_div(
            g, vg_reduce_sum(g, vg_mul(g, correct_predictions, no_event_positions, NULL), NULL, -1, false, NULL),
            vg_reduce_sum(g, no_event_positions, NULL, -1, false, NULL), NULL);
        vg_output loss_per_step =
            vg_div(g, vg_reduce_sum(g, softmax_cross_entropy, NULL, -1, false, NULL), num_steps, NULL);
        vg_output perplexity_per_step = vg_exp(g, loss_per_step, NULL);

        vg_optimizer *opt = vg_optimizer_new_adam(h->learning_rate, 0.9, 0.999, 1e-8);
        *opt_out = opt;
        /* tf.contrib.slim.learning.create_train_op(loss, optimizer, clip_gradient_norm) */
        vg_create_train_op_opts to = {0};
        to.clip_gradient_norm = h->clip_norm;
        vg_create_train_op(g, loss, opt, &to); /* adds itself to the 'train_op' collection */

        summarize(g, "loss", loss);
        summarize(g, "metrics/perplexity", perplexity);
        summarize(g, "metrics/accuracy", accuracy);
        summarize(g, "metrics/event_accuracy", event_accuracy);
        summarize(g, "metrics/no_event_accuracy", no_event_accuracy);
        summarize(g, "metrics/loss_per_step", loss_per_step);
        summarize(g, "metrics/perplexity_per_step", perplexity_per_step);
    } else {
        vg_metric_opts w = {0};
        w.weights = num_steps;
        vg_metric m[6] = {
            vg_metrics_mean(g, softmax_cross_entropy, NULL),
            vg_metrics_accuracy(g, labels_flat, predictions_flat, NULL),
            vg_metrics_mean_per_class_accuracy(g, labels_flat, predictions_flat, NUM_CLASSES, NULL),
            vg_metrics_recall(g, event_positions, correct_predictions, NULL),
            vg_metrics_recall(g, no_event_positions, correct_predictions, NULL),
            vg_metrics_mean(
                g, vg_div(g, vg_reduce_sum(g, softmax_cross_entropy, NULL, -1, false, NULL), num_steps, NULL), &w),
        };
        static const char *const names[6] = {"loss",
                                              "metrics/accuracy",
                                              "metrics/per_class_accuracy",
                                              "metrics/event_accuracy",
                                              "metrics/no_event_accuracy",
                                              "metrics/loss_per_step"};
        vg_output values[6], updates[6];
        vg_aggregate_metric_map(m, 6, values, updates);
        for (int i = 0; i < 6; i++)
            if (updates[i].op) vg_graph_add_to_collection(g, "eval_ops", updates[i]);
        for (int i = 0; i < 6; i++)
            if (values[i].op) summarize(g, names[i], values[i]);
        /* Perplexity is just exp(loss) and doesn't need its own update op. */
        summarize(g, "metrics/perplexity", vg_exp(g, values[0], NULL));
        summarize(g, "metrics/perplexity_per_step", vg_exp(g, values[5], NULL));
    }
}

/* ---- events_rnn_train.py ------------------------------------------------------ */
static void print_line(void *payload, const char *line) {
    (void)payload;
    printf("%s\n", line);
    fflush(stdout);
}

/* "Global Step = 10, Loss = 2.1, Perplexity = 8.2, Accuracy = 0.3" */
typedef struct last_logged {
    double step, loss;
} last_logged;

static void format_values(void *payload, const char *const *names, vg_tensor *const *values, int n, char *buf,
                          size_t len) {
    last_logged *last = payload;
    if (last && n >= 2) last->step = vg_tensor_scalar(values[0]), last->loss = vg_tensor_scalar(values[1]);
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used < len; i++) {
        double v = vg_tensor_scalar(values[i]);
        int k = vg_tensor_dtype(values[i]) == VG_INT64
                    ? snprintf(buf + used, len - used, "%s%s = %lld", i ? ", " : "", names[i], (long long)v)
                    : snprintf(buf + used, len - used, "%s%s = %g", i ? ", " : "", names[i], v);
        if (k < 0) break;
        used += (size_t)k;
    }
}

static const char *const k_log_names[4] = {"Global Step", "Loss", "Perplexity", "Accuracy"};

static vg_output first_of(vg_graph *g, const char *collection) {
    int n = 0;
    const vg_output *c = vg_graph_collection(g, collection, &n);
    return n > 0 ? c[0] : vg_out(NULL, 0);
}

/* run_training(graph, train_dir, num_training_steps, summary_frequency,
 * save_checkpoint_secs, checkpoints_to_keep) */
static int run_training(vg_graph *g, const char *train_dir, int64_t num_training_steps, int64_t summary_frequency,
                        double save_checkpoint_secs, int checkpoints_to_keep) {
    vg_status st;
    vg_output global_step = vg_get_or_create_global_step(g);
    vg_output loss = first_of(g, "loss"), perplexity = first_of(g, "metrics/perplexity");
    vg_output accuracy = first_of(g, "metrics/accuracy"), train_op = first_of(g, "train_op");
    vg_output logging[4] = {global_step, loss, perplexity, accuracy};

    vg_hook hooks[4];
    int nhooks = 0;
    vg_nan_tensor_hook(loss, true, &hooks[nhooks++], &st);
    vg_logging_tensor_options lo = {0};
    lo.tensors = logging;
    lo.names = k_log_names;
    lo.ntensors = 4;
    lo.every_n_iter = summary_frequency;
    last_logged last = {NAN, NAN};
    lo.formatter = format_values;
    lo.formatter_payload = &last;
    lo.sink = print_line;
    vg_logging_tensor_hook(&lo, &hooks[nhooks++], &st);
    vg_step_counter_options so = {0};
    so.output_dir = train_dir;
    so.every_n_steps = summary_frequency;
    vg_step_counter_hook(&so, &hooks[nhooks++], &st);
    if (num_training_steps) vg_stop_at_step_hook(num_training_steps, -1, &hooks[nhooks++], &st);

    /* scaffold = tf.train.Scaffold(saver=tf.train.Saver(max_to_keep=checkpoints_to_keep)) */
    vg_saver_options svo = {0};
    svo.max_to_keep = checkpoints_to_keep;
    vg_saver *saver = vg_saver_new(g, &svo, &st);
    vg_scaffold_options sco = {0};
    sco.saver = saver;
    vg_scaffold *scaffold = vg_scaffold_new(&sco);

    fprintf(stderr, "Starting training loop...\n");
    /* tf.contrib.training.train(train_op, logdir, scaffold, hooks, save_checkpoint_secs,
     * save_summaries_steps) */
    vg_mts_options mo = {0};
    mo.checkpoint_dir = train_dir;
    mo.scaffold = scaffold;
    mo.hooks = hooks;
    mo.nhooks = nhooks;
    mo.save_checkpoint_secs = save_checkpoint_secs;
    mo.save_summaries_steps = summary_frequency;
    /* train()'s return value is the last value of train_op, which is (as in TF 1.15)
     * the first entry of the 'train_op' collection: apply_gradients' global-step
     * update, not create_train_op's loss tensor; the loss is taken from the logging
     * hook's last line instead */
    double train_value = NAN;
    vg_code rc = vg_training_train(g, train_op, &mo, &train_value, &st);
    vg_scaffold_free(scaffold);
    vg_saver_free(saver);
    if (rc != VG_OK) return fprintf(stderr, "training: %s: %s\n", vg_code_name(rc), st.msg), 1;
    fprintf(stderr, "Training complete.\n");
    printf("final loss %.6f (logged at global step %.0f)\n", last.loss, last.step);
    return 0;
}

/* EvalLoggingTensorHook: LoggingTensorHook that is reset at begin() and counts the
 * iteration before the run, so that it logs after the last of every_n_iter batches. */
typedef struct eval_logging {
    vg_output tensors[4];
    int64_t every_n_iter, iter_count;
    bool triggered;
} eval_logging;

static vg_code el_begin(void *p, vg_graph *g, vg_status *st) {
    (void)g, (void)st;
    ((eval_logging *)p)->iter_count = 0;
    return VG_OK;
}

static vg_code el_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    (void)ctx, (void)st;
    eval_logging *h = p;
    h->iter_count++;
    h->triggered = h->iter_count % h->every_n_iter == 0;
    if (h->triggered) {
        args->fetches = h->tensors;
        args->nfetches = 4;
    }
    return VG_OK;
}

static vg_code el_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    (void)ctx, (void)st;
    eval_logging *h = p;
    if (h->triggered && v->nresults == 4) {
        char line[512];
        format_values(NULL, k_log_names, v->results, 4, line, sizeof line);
        print_line(NULL, line);
    }
    return VG_OK;
}

static void el_destroy(void *p) { free(p); }

/* run_eval(graph, train_dir, eval_dir, num_batches, timeout_secs) */
static int run_eval(vg_graph *g, const char *train_dir, const char *eval_dir, int64_t num_batches,
                    double eval_interval_secs, double timeout_secs) {
    vg_status st;
    if (num_batches <= 0)
        return fprintf(stderr, "`num_batches` must be greater than 0. Check that the batch size is no larger than "
                               "the number of records in the eval set.\n"), 2;
    vg_output global_step = vg_get_or_create_global_step(g);
    eval_logging *el = calloc(1, sizeof *el);
    if (!el) return 1;
    el->tensors[0] = global_step;
    el->tensors[1] = first_of(g, "loss");
    el->tensors[2] = first_of(g, "metrics/perplexity");
    el->tensors[3] = first_of(g, "metrics/accuracy");
    el->every_n_iter = num_batches;
    int n = 0;
    const vg_output *eval_ops = vg_graph_collection(g, "eval_ops", &n);
    vg_op *ops[8];
    for (int i = 0; i < n && i < 8; i++) ops[i] = eval_ops[i].op;

    vg_hook hooks[3];
    memset(hooks, 0, sizeof hooks);
    hooks[0].name = "EvalLoggingTensorHook";
    hooks[0].begin = el_begin;
    hooks[0].before_run = el_before;
    hooks[0].after_run = el_after;
    hooks[0].destroy = el_destroy;
    hooks[0].payload = el;
    vg_stop_after_n_evals_hook(num_batches, true, &hooks[1], &st);
    vg_summary_at_end_hook(eval_dir, NULL, vg_out(NULL, 0), &hooks[2], &st);

    /* tf.contrib.training.evaluate_repeatedly(train_dir, eval_ops, hooks,
     * eval_interval_secs=60, timeout=timeout_secs) */
    vg_evaluate_options o = {0};
    o.eval_ops = ops;
    o.neval_ops = n < 8 ? n : 8;
    o.hooks = hooks;
    o.nhooks = 3;
    int64_t evaluations = 0;
    vg_code rc = vg_evaluate_repeatedly(g, train_dir, &o, eval_interval_secs, 0, timeout_secs, NULL, &evaluations, &st);
    if (rc != VG_OK) return fprintf(stderr, "evaluation: %s: %s\n", vg_code_name(rc), st.msg), 1;
    printf("evaluations %lld\n", (long long)evaluations);
    return 0;
}

int main(int argc, char **argv) {
    const char *run_dir = NULL, *sequence_example_file = NULL, *hparams_str = "";
    bool eval = false;
    int64_t num_training_steps = 0, summary_frequency = 10, num_eval_examples = 0;
    int num_checkpoints = 10, num_melodies = 256;
    double save_checkpoint_secs = 60, eval_interval_secs = 60, eval_timeout_secs = 300;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--run_dir")) run_dir = v;
        else if (!strcmp(k, "--sequence_example_file")) sequence_example_file = v;
        else if (!strcmp(k, "--eval")) eval = atoi(v) != 0;
        else if (!strcmp(k, "--num_training_steps")) num_training_steps = atoll(v);
        else if (!strcmp(k, "--summary_frequency")) summary_frequency = atoll(v);
        else if (!strcmp(k, "--num_checkpoints")) num_checkpoints = atoi(v);
        else if (!strcmp(k, "--num_eval_examples")) num_eval_examples = atoll(v);
        else if (!strcmp(k, "--hparams")) hparams_str = v;
        else if (!strcmp(k, "--save_checkpoint_secs")) save_checkpoint_secs = atof(v);
        else if (!strcmp(k, "--eval_interval_secs")) eval_interval_secs = atof(v);
        else if (!strcmp(k, "--eval_timeout_secs")) eval_timeout_secs = atof(v);
        else if (!strcmp(k, "--num_melodies")) num_melodies = atoi(v);
        else return fprintf(stderr, "unknown flag %s\n", k), 2;
    }
    if (argc % 2 == 0) return fprintf(stderr, "flag %s has no value\n", argv[argc - 1]), 2;
    if (!run_dir) return fprintf(stderr, "--run_dir is required\n"), 2;
    if (summary_frequency <= 0 || num_training_steps < 0 || num_melodies <= 0)
        return fprintf(stderr, "--summary_frequency and --num_melodies must be positive, --num_training_steps "
                               "non-negative\n"), 2;
    hparams h = {128, {128, 128}, 2, 0.5, 5.0, 0.001}; /* melody_rnn 'basic_rnn' */
    if (parse_hparams(&h, hparams_str)) return 2;

    char train_dir[1024], eval_dir[1024], data[1024];
    snprintf(train_dir, sizeof train_dir, "%s/train", run_dir);
    snprintf(eval_dir, sizeof eval_dir, "%s/eval", run_dir);
    if (mkdir(run_dir, 0777) != 0 && errno != EEXIST) return fprintf(stderr, "cannot create %s\n", run_dir), 1;
    if (mkdir(eval ? eval_dir : train_dir, 0777) != 0 && errno != EEXIST)
        return fprintf(stderr, "cannot create %s\n", eval ? eval_dir : train_dir), 1;
    if (!sequence_example_file) {
        snprintf(data, sizeof data, "%s/%s_melodies.tfrecord", run_dir, eval ? "eval" : "training");
        if (write_melodies(data, num_melodies, eval ? 11u : 7u)) return 1;
        sequence_example_file = data;
    }
    vg_graph *g = vg_graph_new();
    vg_optimizer *opt = NULL;
    build_graph(g, !eval, &h, sequence_example_file, &opt);
    vg_status st;
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "graph: %s\n", st.msg);
        vg_optimizer_free(opt);
        vg_graph_free(g);
        return 1;
    }
    int rc;
    if (eval) {
        const char *files[1] = {sequence_example_file};
        int64_t examples = num_eval_examples ? num_eval_examples : count_records(files, 1, 0);
        rc = run_eval(g, train_dir, eval_dir, examples / h.batch_size, eval_interval_secs, eval_timeout_secs);
    } else {
        rc = run_training(g, train_dir, num_training_steps, summary_frequency, save_checkpoint_secs, num_checkpoints);
    }
    vg_optimizer_free(opt);
    vg_file_writer_cache_clear();
    vg_graph_free(g);
    return rc;
}
