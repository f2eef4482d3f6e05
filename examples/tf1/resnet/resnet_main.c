/* resnet_main.c - port of research/resnet/resnet_main.py: train() under a
 * MonitoredTrainingSession with LoggingTensorHook, the _LearningRateSetterHook that
 * feeds the learning rate each step and a chief-only SummarySaverHook; evaluate()
 * restoring the newest checkpoint with a Saver and reporting precision. See README.md
 * for the line-by-line map and the flags vigil adds. */
#define _POSIX_C_SOURCE 200809L
#include "resnet_model.h"
#include "../tf1_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* tf.app.flags of resnet_main.py */
static struct {
    const char *dataset;          /* cifar10 */
    const char *mode;             /* train */
    const char *train_data_path;  /* '' */
    const char *eval_data_path;   /* '' */
    int image_size;               /* 32 */
    const char *train_dir;        /* '' */
    const char *eval_dir;         /* '' */
    int eval_batch_count;         /* 50 */
    bool eval_once;               /* False */
    const char *log_root;         /* '' */
    int num_gpus;                 /* 0 */
    /* vigil's additions (README: "Flags vigil adds") */
    const char *prepare_data_dir; /* NULL: write no data */
    const char *fmnist_dir;       /* /usr/share/datasets/fashion-mnist */
    int limit;                    /* 0: all of Fashion-MNIST */
    int batch_size;               /* 0: 128 (train) / 100 (eval) as main() */
    int num_residual_units;       /* 5 */
    long max_steps;               /* 0: train forever, as the Python */
    int log_every_n_iter;         /* 100 */
} FLAGS = {"cifar10", "train", "", "", 32, "", "", 50, false, "", 0,
           NULL, "/usr/share/datasets/fashion-mnist", 0, 0, 5, 0, 100};

/* ---- class _LearningRateSetterHook(tf.train.SessionRunHook) ------------------ */
typedef struct lr_setter {
    vg_output global_step, lrn_rate;
    double _lrn_rate;
    vg_tensor *feed_value;
} lr_setter;

static vg_code lr_begin(void *p, vg_graph *g, vg_status *st) {
    (void)g, (void)st;
    ((lr_setter *)p)->_lrn_rate = 0.1;
    return VG_OK;
}

static vg_code lr_before_run(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    (void)ctx;
    lr_setter *h = p;
    /* SessionRunArgs(model.global_step, feed_dict={model.lrn_rate: self._lrn_rate}) */
    if (!h->feed_value && !(h->feed_value = vg_tensor_new(VG_FLOAT, NULL, 0, st))) return st->code;
    *(float *)vg_tensor_data(h->feed_value) = (float)h->_lrn_rate;
    args->fetches = &h->global_step;
    args->nfetches = 1;
    args->feeds = &h->lrn_rate;
    args->feed_values = &h->feed_value;
    args->nfeeds = 1;
    return VG_OK;
}

static vg_code lr_after_run(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    (void)ctx, (void)st;
    lr_setter *h = p;
    if (v->nresults < 1) return VG_OK;
    int64_t train_step = *(const int64_t *)vg_tensor_data(v->results[0]);
    if (train_step < 40000) h->_lrn_rate = 0.1;
    else if (train_step < 60000) h->_lrn_rate = 0.01;
    else if (train_step < 80000) h->_lrn_rate = 0.001;
    else h->_lrn_rate = 0.0001;
    return VG_OK;
}

static void lr_destroy(void *p) {
    lr_setter *h = p;
    vg_tensor_free(h->feed_value);
    free(h);
}

static int train(resnet_hparams hps) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *dev = FLAGS.num_gpus == 0 ? "/cpu:0" : "/gpu:0";
    vg_graph_push_device(g, dev); /* with tf.device(dev) */
    vg_output images, labels;
    cifar_input_build_input(g, FLAGS.dataset, FLAGS.train_data_path, hps.batch_size, FLAGS.mode, FLAGS.image_size,
                            &images, &labels);
    resnet_model model;
    resnet_model_init(&model, hps, images, labels, FLAGS.mode);
    resnet_model_build_graph(&model, g);

    /* tfprof's TRAINABLE_VARS_PARAMS_STAT_OPTIONS: the parameter count */
    int ntv = 0;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &ntv);
    long long total_params = 0;
    for (int i = 0; i < ntv; i++) {
        vg_shape s = vg_output_shape(tv[i]);
        long long n = 1;
        for (int d = 0; d < s.ndims; d++) n *= s.dims[d];
        total_params += n;
    }
    printf("total_params: %lld\n", total_params);

    vg_output truth = vg_argmax(g, model.labels, 1, VG_INT64, NULL);
    vg_output predictions = vg_argmax(g, model.predictions, 1, VG_INT64, NULL);
    vg_output precision =
        vg_reduce_mean(g, vg_cast(g, vg_equal(g, predictions, truth, NULL), VG_FLOAT, "ToFloat"), NULL, -1, false, NULL);

    vg_output merged[2] = {model.summaries, vg_summary_scalar(g, "Precision", precision)};
    vg_output summary_op = vg_summary_merge(g, merged, 2, NULL);
    vg_graph_pop_device(g);
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "building the graph failed: %s\n", st.msg);
        resnet_model_free(&model);
        vg_graph_free(g);
        return 1;
    }

    vg_hook hooks[3], chief_only_hooks[1];
    int nh = 0;
    vg_summary_saver_options so = {0};
    so.save_steps = 100;
    so.output_dir = FLAGS.train_dir;
    so.summary_op = summary_op;
    vg_code rc = vg_summary_saver_hook(&so, &chief_only_hooks[0], &st);

    /* LoggingTensorHook(tensors={'step', 'loss', 'precision'}, every_n_iter=100): TF
     * logs a dict's tensors in sorted key order */
    vg_output log_tensors[3] = {model.cost, precision, model.global_step};
    const char *log_names[3] = {"loss", "precision", "step"};
    vg_logging_tensor_options lo = {0};
    lo.tensors = log_tensors;
    lo.names = log_names;
    lo.ntensors = 3;
    lo.every_n_iter = FLAGS.log_every_n_iter;
    if (rc == VG_OK) rc = vg_logging_tensor_hook(&lo, &hooks[nh++], &st);
    lr_setter *lrs = calloc(1, sizeof *lrs);
    if (rc == VG_OK && lrs) {
        lrs->global_step = model.global_step;
        lrs->lrn_rate = model.lrn_rate;
        vg_hook h = {"_LearningRateSetterHook", lr_begin, NULL, lr_before_run, lr_after_run, NULL, lr_destroy, lrs};
        hooks[nh++] = h;
        lrs = NULL;
    }
    free(lrs);
    /* not in the Python (it trains until killed): --max_steps adds a StopAtStepHook */
    if (rc == VG_OK && FLAGS.max_steps > 0) rc = vg_stop_at_step_hook(-1, FLAGS.max_steps, &hooks[nh++], &st);
    if (rc != VG_OK) {
        fprintf(stderr, "hooks: %s\n", st.msg);
        for (int i = 0; i < nh; i++) vg_hook_free(&hooks[i]);
        vg_hook_free(&chief_only_hooks[0]);
        resnet_model_free(&model);
        vg_graph_free(g);
        return 1;
    }

    vg_mts_options mo = {0};
    mo.checkpoint_dir = FLAGS.log_root;
    mo.hooks = hooks;
    mo.nhooks = nh;
    mo.chief_only_hooks = chief_only_hooks;
    mo.nchief_only_hooks = 1;
    /* Since we provide a SummarySaverHook, we need to disable default
     * SummarySaverHook. To do that we set save_summaries_steps to 0. */
    mo.no_summaries = true; /* TF: save_summaries_steps=0 */
    vg_config_proto config = {0}; /* config=tf.ConfigProto(allow_soft_placement=True) */
    config.allow_soft_placement = true;
    mo.config = &config;
    vg_monitored_session *mon_sess = vg_monitored_training_session_new(g, &mo, &st);
    if (!mon_sess) {
        fprintf(stderr, "MonitoredTrainingSession: %s\n", st.msg);
        resnet_model_free(&model);
        vg_graph_free(g);
        return 1;
    }
    vg_run_args a = {0};
    a.targets = &model.train_op;
    a.ntargets = 1;
    rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(mon_sess))
        rc = vg_monitored_session_run(mon_sess, &a, NULL, NULL, &st);
    rc = vg_monitored_session_end(mon_sess, rc, &st);
    if (rc != VG_OK) fprintf(stderr, "training failed: %s\n", st.msg);
    vg_monitored_session_free(mon_sess);
    resnet_model_free(&model);
    vg_graph_free(g);
    return rc == VG_OK ? 0 : 1;
}

static int64_t argmax_row(const float *p, int64_t n) {
    int64_t best = 0;
    for (int64_t j = 1; j < n; j++)
        if (p[j] > p[best]) best = j;
    return best;
}

static int evaluate(resnet_hparams hps) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *dev = FLAGS.num_gpus == 0 ? "/cpu:0" : "/gpu:0";
    vg_graph_push_device(g, dev);
    vg_output images, labels;
    cifar_input_build_input(g, FLAGS.dataset, FLAGS.eval_data_path, hps.batch_size, FLAGS.mode, FLAGS.image_size,
                            &images, &labels);
    resnet_model model;
    resnet_model_init(&model, hps, images, labels, FLAGS.mode);
    resnet_model_build_graph(&model, g);
    vg_graph_pop_device(g);
    vg_saver *saver = vg_graph_status(g, &st) == VG_OK ? vg_saver_new(g, NULL, &st) : NULL;
    vg_file_writer *summary_writer = saver ? vg_file_writer_new(FLAGS.eval_dir, NULL, &st) : NULL;
    vg_config_proto cfg = {0};
    cfg.allow_soft_placement = true;
    vg_session *sess = summary_writer ? vg_session_new_with_config(g, &cfg, &st) : NULL;
    vg_coord *coord = vg_coord_new(NULL, 0);
    int rc = 0;
    if (!sess || vg_start_queue_runners(sess, coord, &st) != VG_OK) {
        fprintf(stderr, "evaluate: %s\n", st.msg);
        rc = 1;
        goto done;
    }
    double best_precision = 0.0;
    for (;;) {
        vg_checkpoint_state *ckpt_state = NULL;
        vg_code c = vg_get_checkpoint_state(FLAGS.log_root, &ckpt_state, &st);
        if (c == VG_OUT_OF_RANGE) {
            vg_logf(VG_LOG_ERROR, "Cannot restore checkpoint: %s", st.msg);
            continue;
        }
        if (c != VG_OK || !ckpt_state || !ckpt_state->model_checkpoint_path) {
            vg_logf(VG_LOG_INFO, "No model to eval yet at %s", FLAGS.log_root);
            vg_checkpoint_state_free(ckpt_state);
            sleep(1); /* the Python retries at once */
            continue;
        }
        vg_logf(VG_LOG_INFO, "Loading checkpoint %s", ckpt_state->model_checkpoint_path);
        c = vg_saver_restore(saver, sess, ckpt_state->model_checkpoint_path, &st);
        vg_checkpoint_state_free(ckpt_state);
        if (c != VG_OK) {
            fprintf(stderr, "restore: %s\n", st.msg);
            rc = 1;
            goto done;
        }
        long long total_prediction = 0, correct_prediction = 0;
        float loss = 0;
        int64_t train_step = 0;
        vg_tensor *summaries = NULL;
        for (int b = 0; b < FLAGS.eval_batch_count; b++) {
            vg_output fetches[5] = {model.summaries, model.cost, model.predictions, model.labels, model.global_step};
            vg_tensor *out[5] = {NULL};
            if (vg_session_run(sess, NULL, NULL, NULL, 0, fetches, out, 5, NULL, 0, NULL, &st) != VG_OK) {
                fprintf(stderr, "evaluate: %s\n", st.msg);
                vg_tensor_free(summaries);
                rc = 1;
                goto done;
            }
            vg_tensor_free(summaries);
            summaries = out[0];
            loss = *(const float *)vg_tensor_data(out[1]);
            train_step = *(const int64_t *)vg_tensor_data(out[4]);
            int64_t rows = vg_tensor_dim(out[2], 0), cols = vg_tensor_dim(out[2], 1);
            const float *pred = vg_tensor_data(out[2]), *tru = vg_tensor_data(out[3]);
            for (int64_t r = 0; r < rows; r++)
                correct_prediction += argmax_row(pred + r * cols, cols) == argmax_row(tru + r * cols, cols);
            total_prediction += rows;
            for (int k = 1; k < 5; k++) vg_tensor_free(out[k]);
        }
        double precision = total_prediction ? 1.0 * (double)correct_prediction / (double)total_prediction : 0.0;
        if (precision > best_precision) best_precision = precision;
        vg_file_writer_add_scalar(summary_writer, "Precision", precision, train_step, NULL);
        vg_file_writer_add_scalar(summary_writer, "Best Precision", best_precision, train_step, NULL);
        if (summaries) {
            size_t len = 0;
            const char *bytes = vg_tensor_string(summaries, 0, &len);
            vg_file_writer_add_summary(summary_writer, bytes, len, train_step, NULL);
            vg_tensor_free(summaries);
        }
        vg_logf(VG_LOG_INFO, "loss: %.3f, precision: %.3f, best precision: %.3f", loss, precision, best_precision);
        vg_file_writer_flush(summary_writer, NULL);
        if (FLAGS.eval_once) break;
        sleep(60);
    }
done:
    tf1_close_training(coord, sess, summary_writer);
    vg_saver_free(saver);
    resnet_model_free(&model);
    vg_graph_free(g);
    return rc;
}

static int parse_flags(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "unexpected argument %s\n", a);
            return 2;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, a + 2, nl);
        name[nl] = 0;
        if (!strcmp(name, "eval_once") && !eq) {
            FLAGS.eval_once = true;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            fprintf(stderr, "flag --%s needs a value\n", name);
            return 2;
        }
        int iv = atoi(v);
        if (!strcmp(name, "dataset")) FLAGS.dataset = v;
        else if (!strcmp(name, "mode")) FLAGS.mode = v;
        else if (!strcmp(name, "train_data_path")) FLAGS.train_data_path = v;
        else if (!strcmp(name, "eval_data_path")) FLAGS.eval_data_path = v;
        else if (!strcmp(name, "image_size")) FLAGS.image_size = iv;
        else if (!strcmp(name, "train_dir")) FLAGS.train_dir = v;
        else if (!strcmp(name, "eval_dir")) FLAGS.eval_dir = v;
        else if (!strcmp(name, "eval_batch_count")) FLAGS.eval_batch_count = iv;
        else if (!strcmp(name, "eval_once")) FLAGS.eval_once = !strcmp(v, "true") || !strcmp(v, "True") || iv;
        else if (!strcmp(name, "log_root")) FLAGS.log_root = v;
        else if (!strcmp(name, "num_gpus")) FLAGS.num_gpus = iv;
        else if (!strcmp(name, "prepare_data_dir")) FLAGS.prepare_data_dir = v;
        else if (!strcmp(name, "fmnist_dir")) FLAGS.fmnist_dir = v;
        else if (!strcmp(name, "limit")) FLAGS.limit = iv;
        else if (!strcmp(name, "batch_size")) FLAGS.batch_size = iv;
        else if (!strcmp(name, "num_residual_units")) FLAGS.num_residual_units = iv;
        else if (!strcmp(name, "max_steps")) FLAGS.max_steps = atol(v);
        else if (!strcmp(name, "log_every_n_iter")) FLAGS.log_every_n_iter = iv;
        else {
            fprintf(stderr, "unknown flag --%s\n", name);
            return 2;
        }
    }
    if (FLAGS.image_size < 8 || FLAGS.image_size > 512 || FLAGS.eval_batch_count < 1 || FLAGS.batch_size < 0 ||
        FLAGS.num_residual_units < 1 || FLAGS.log_every_n_iter < 1 || FLAGS.limit < 0) {
        fprintf(stderr, "bad flag value\n");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    int prc = parse_flags(argc, argv);
    if (prc) return prc;
    if (FLAGS.prepare_data_dir) {
        char probe[1200];
        struct stat sb;
        snprintf(probe, sizeof probe, "%s/test_batch.bin", FLAGS.prepare_data_dir);
        if (stat(probe, &sb) != 0 &&
            cifar_input_write_from_fashion_mnist(FLAGS.fmnist_dir, FLAGS.prepare_data_dir, FLAGS.image_size, FLAGS.limit))
            return 1;
    }
    if (FLAGS.num_gpus != 0 && FLAGS.num_gpus != 1) {
        fprintf(stderr, "Only support 0 or 1 gpu.\n");
        return 1;
    }
    int batch_size;
    if (!strcmp(FLAGS.mode, "train")) batch_size = 128;
    else if (!strcmp(FLAGS.mode, "eval")) batch_size = 100;
    else {
        fprintf(stderr, "unknown mode %s (train or eval)\n", FLAGS.mode);
        return 2;
    }
    if (FLAGS.batch_size > 0) batch_size = FLAGS.batch_size;
    int num_classes = !strcmp(FLAGS.dataset, "cifar100") ? 100 : 10;
    resnet_hparams hps = {batch_size, num_classes, 0.0001, 0.1, FLAGS.num_residual_units, false, 0.0002, 0.1, "mom"};
    return !strcmp(FLAGS.mode, "train") ? train(hps) : evaluate(hps);
}
