/* train_image_classifier_main.c - port of research/slim/train_image_classifier.py:
 * trains a slim network (nets_factory) on a TFRecord dataset of images (dataset.c)
 * with inception preprocessing, one clone, the learning-rate schedule and optimizer
 * the flags choose, optional moving averages, summaries, and warm start from
 * --checkpoint_path without --checkpoint_exclude_scopes (_get_init_fn), through
 * vg_slim_learning_train. See README.md for the line-by-line map. */
#include "slim_classifier.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static vg_flags *FLAGS;
#define S(name) vg_flags_string(FLAGS, name)
#define I(name) vg_flags_integer(FLAGS, name)
#define F(name) vg_flags_float(FLAGS, name)
#define B(name) vg_flags_boolean(FLAGS, name)

static int define_flags(vg_status *st) {
    vg_flags *f = FLAGS;
    vg_code c = VG_OK;
#define DS(n, d, h) c = c ? c : vg_flags_define_string(f, n, d, h, st)
#define DI(n, d, h) c = c ? c : vg_flags_define_integer(f, n, d, h, st)
#define DF(n, d, h) c = c ? c : vg_flags_define_float(f, n, d, h, st)
#define DB(n, d, h) c = c ? c : vg_flags_define_boolean(f, n, d, h, st)
    DS("master", "", "The address of the TensorFlow master to use.");
    DS("train_dir", "/tmp/tfmodel/", "Directory where checkpoints and event logs are written to.");
    DI("num_clones", 1, "Number of model clones to deploy.");
    DB("clone_on_cpu", false, "Use CPUs to deploy clones.");
    DI("worker_replicas", 1, "Number of worker replicas.");
    DI("num_ps_tasks", 0, "The number of parameter servers. If the value is 0, then the parameters are handled locally by the worker.");
    DI("num_readers", 4, "The number of parallel readers that read data from the dataset.");
    DI("num_preprocessing_threads", 4, "The number of threads used to create the batches.");
    DI("log_every_n_steps", 10, "The frequency with which logs are print.");
    DI("save_summaries_secs", 600, "The frequency with which summaries are saved, in seconds.");
    DI("save_interval_secs", 600, "The frequency with which the model is saved, in seconds.");
    DI("task", 0, "Task id of the replica running the training.");
    /* Optimization Flags */
    DF("weight_decay", 0.00004, "The weight decay on the model weights.");
    DS("optimizer", "rmsprop", "The name of the optimizer, one of \"adadelta\", \"adagrad\", \"adam\",\"ftrl\", \"momentum\", \"sgd\" or \"rmsprop\".");
    DF("adadelta_rho", 0.95, "The decay rate for adadelta.");
    DF("adagrad_initial_accumulator_value", 0.1, "Starting value for the AdaGrad accumulators.");
    DF("adam_beta1", 0.9, "The exponential decay rate for the 1st moment estimates.");
    DF("adam_beta2", 0.999, "The exponential decay rate for the 2nd moment estimates.");
    DF("opt_epsilon", 1.0, "Epsilon term for the optimizer.");
    DF("ftrl_learning_rate_power", -0.5, "The learning rate power.");
    DF("ftrl_initial_accumulator_value", 0.1, "Starting value for the FTRL accumulators.");
    DF("ftrl_l1", 0.0, "The FTRL l1 regularization strength.");
    DF("ftrl_l2", 0.0, "The FTRL l2 regularization strength.");
    DF("momentum", 0.9, "The momentum for the MomentumOptimizer and RMSPropOptimizer.");
    DF("rmsprop_momentum", 0.9, "Momentum.");
    DF("rmsprop_decay", 0.9, "Decay term for RMSProp.");
    /* Learning Rate Flags */
    DS("learning_rate_decay_type", "exponential", "Specifies how the learning rate is decayed. One of \"fixed\", \"exponential\", or \"polynomial\"");
    DF("learning_rate", 0.01, "Initial learning rate.");
    DF("end_learning_rate", 0.0001, "The minimal end learning rate used by a polynomial decay learning rate.");
    DF("label_smoothing", 0.0, "The amount of label smoothing.");
    DF("learning_rate_decay_factor", 0.94, "Learning rate decay factor.");
    DF("num_epochs_per_decay", 2.0, "Number of epochs after which learning rate decays.");
    DB("sync_replicas", false, "Whether or not to synchronize the replicas during training.");
    DI("replicas_to_aggregate", 1, "The Number of gradients to collect before updating params.");
    DF("moving_average_decay", 0.0, "The decay to use for the moving average.If left as None (0 here), then moving averages are not used.");
    /* Dataset Flags */
    DS("dataset_name", "imagenet", "The name of the dataset to load.");
    DS("dataset_split_name", "train", "The name of the train/test split.");
    DS("dataset_dir", "", "The directory where the dataset files are stored.");
    DI("labels_offset", 0, "An offset for the labels in the dataset. This flag is primarily used to evaluate the VGG and ResNet architectures which do not use a background class for the ImageNet dataset.");
    DS("model_name", "inception_v3", "The name of the architecture to train.");
    DS("preprocessing_name", "", "The name of the preprocessing to use. If left as `None`, then the model_name flag is used.");
    DI("batch_size", 32, "The number of samples in each batch.");
    DI("train_image_size", 0, "Train image size (0: None, the network's default)");
    DI("max_number_of_steps", 0, "The maximum number of training steps (0: None).");
    /* Fine-Tuning Flags */
    DS("checkpoint_path", "", "The path to a checkpoint from which to fine-tune.");
    DS("checkpoint_exclude_scopes", "", "Comma-separated list of scopes of variables to exclude when restoring from a checkpoint.");
    DS("trainable_scopes", "", "Comma-separated list of scopes to filter the set of variables to train.By default, None would train all the variables.");
    DB("ignore_missing_vars", false, "When restoring a checkpoint would ignore missing variables.");
    /* vigil: the sizes of dataset 'custom' (not in slim's dataset_factory) */
    DI("dataset_num_samples", 0, "dataset 'custom': number of samples of the split.");
    DI("dataset_num_classes", 0, "dataset 'custom': number of classes.");
    return c;
}

/* Comma-separated scopes, stripped; returns the count (at most max). */
static int split_scopes(const char *s, char out[][256], int max) {
    int n = 0;
    while (s && *s && n < max) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        while (len && (*s == ' ' || *s == '\t')) s++, len--;
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
        if (len >= 256) len = 255;
        memcpy(out[n], s, len), out[n][len] = 0;
        if (len) n++;
        s = e ? e + 1 : NULL;
    }
    return n;
}

static vg_output configure_learning_rate(vg_graph *g, int64_t num_samples_per_epoch, vg_output global_step,
                                         vg_status *st) {
    double decay_steps = (double)(int64_t)((double)num_samples_per_epoch / (double)I("batch_size") *
                                           F("num_epochs_per_decay"));
    if (B("sync_replicas")) decay_steps /= (double)I("replicas_to_aggregate");
    const char *t = S("learning_rate_decay_type");
    if (strcmp(t, "exponential") == 0)
        return vg_exponential_decay(g, F("learning_rate"), global_step, decay_steps, F("learning_rate_decay_factor"),
                                    true, "exponential_decay_learning_rate");
    if (strcmp(t, "fixed") == 0) return vg_const_f32(g, (float)F("learning_rate"), "fixed_learning_rate");
    if (strcmp(t, "polynomial") == 0)
        return vg_polynomial_decay(g, F("learning_rate"), global_step, decay_steps, F("end_learning_rate"), 1.0, false,
                                   "polynomial_decay_learning_rate");
    vg_status_set(st, VG_INVALID_ARGUMENT, "learning_rate_decay_type [%s] was not recognized", t);
    return (vg_output){NULL, 0};
}

static vg_optimizer *configure_optimizer(vg_output learning_rate, vg_status *st) {
    const char *o = S("optimizer");
    vg_optimizer *opt = NULL;
    if (strcmp(o, "adadelta") == 0) opt = vg_optimizer_new_adadelta(0.001, F("adadelta_rho"), F("opt_epsilon"));
    else if (strcmp(o, "adagrad") == 0)
        opt = vg_optimizer_new_adagrad(0.001, F("adagrad_initial_accumulator_value"));
    else if (strcmp(o, "adam") == 0)
        opt = vg_optimizer_new_adam(0.001, F("adam_beta1"), F("adam_beta2"), F("opt_epsilon"));
    else if (strcmp(o, "ftrl") == 0)
        opt = vg_optimizer_new_ftrl(0.001, F("ftrl_learning_rate_power"), F("ftrl_initial_accumulator_value"),
                                    F("ftrl_l1"), F("ftrl_l2"), 0.0);
    else if (strcmp(o, "momentum") == 0) opt = vg_optimizer_new_momentum(0.001, F("momentum"), false);
    else if (strcmp(o, "rmsprop") == 0)
        opt = vg_optimizer_new_rmsprop(0.001, F("rmsprop_decay"), F("rmsprop_momentum"), F("opt_epsilon"));
    else if (strcmp(o, "sgd") == 0) opt = vg_optimizer_new_sgd(0.001);
    else {
        vg_status_set(st, VG_INVALID_ARGUMENT, "Optimizer [%s] was not recognized", o);
        return NULL;
    }
    if (!opt) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "optimizer");
        return NULL;
    }
    /* the schedule's tensor is the learning rate (the constant above is unused) */
    vg_optimizer_set_learning_rate_tensor(opt, learning_rate);
    return opt;
}

/* _get_init_fn: NULL when there is nothing to warm-start from. */
static vg_slim_init_fn *get_init_fn(vg_graph *g, vg_status *st) {
    const char *cp = S("checkpoint_path");
    if (!cp || !*cp) return NULL;
    char buf[4096];
    if (vg_latest_checkpoint(S("train_dir"), buf, sizeof buf)) {
        vg_logf(VG_LOG_INFO, "Ignoring --checkpoint_path because a checkpoint already exists in %s", S("train_dir"));
        return NULL;
    }
    char exclusions[64][256];
    int nex = split_scopes(S("checkpoint_exclude_scopes"), exclusions, 64);
    int nmv = vg_slim_get_model_variables(g, NULL, NULL, 0);
    vg_output *mv = calloc((size_t)(nmv ? nmv : 1), sizeof *mv), *restore = calloc((size_t)(nmv ? nmv : 1), sizeof *mv);
    vg_slim_get_model_variables(g, NULL, mv, nmv);
    int nr = 0;
    for (int i = 0; i < nmv; i++) {
        const char *name = vg_op_name(mv[i].op);
        bool excluded = false;
        for (int k = 0; k < nex && !excluded; k++) excluded = strncmp(name, exclusions[k], strlen(exclusions[k])) == 0;
        if (!excluded) restore[nr++] = mv[i];
    }
    struct stat sb;
    const char *path = cp;
    if (stat(cp, &sb) == 0 && S_ISDIR(sb.st_mode)) path = vg_latest_checkpoint(cp, buf, sizeof buf);
    if (!path) {
        vg_status_set(st, VG_NOT_FOUND, "no checkpoint in %s", cp);
        free(mv), free(restore);
        return NULL;
    }
    vg_logf(VG_LOG_INFO, "Fine-tuning from %s", path);
    vg_slim_init_fn *fn = vg_slim_assign_from_checkpoint_fn(g, path, restore, nr, NULL, B("ignore_missing_vars"), st);
    free(mv), free(restore);
    return fn;
}

/* prefetch_queue([images, labels], capacity): a FIFOQueue of the batches fed by a queue
 * runner, and its dequeue (slim.prefetch_queue.prefetch_queue, name "prefetch_queue"). */
static void prefetch_queue(vg_graph *g, vg_output *tensors, int n, int capacity, vg_output *out) {
    vg_graph_push_scope(g, "prefetch_queue/");
    vg_dtype dts[4];
    vg_shape shapes[4];
    for (int i = 0; i < n; i++) dts[i] = vg_output_dtype(tensors[i]), shapes[i] = vg_output_shape(tensors[i]);
    vg_output q = vg_fifo_queue(g, dts, shapes, n, capacity, "fifo_queue");
    vg_op *enq = vg_queue_enqueue(g, q, tensors, n, "fifo_queue_enqueue");
    vg_add_queue_runner(g, q, &enq, 1);
    char tag[64];
    snprintf(tag, sizeof tag, "fraction_of_%d_full", capacity);
    vg_summary_scalar(g, tag,
                      vg_mul(g, vg_cast(g, vg_queue_size(g, q, NULL), VG_FLOAT, "ToFloat"),
                             vg_const_f32(g, 1.f / (float)capacity, "mul/y"), "mul"));
    vg_graph_pop_scope(g);
    vg_op *deq = vg_queue_dequeue(g, q, "prefetch_queue_Dequeue");
    for (int i = 0; i < n; i++) out[i] = vg_out(deq, i);
}

static int fail(vg_status *st) {
    fprintf(stderr, "train_image_classifier: %s (%s)\n", st->msg, vg_code_name(st->code));
    return 1;
}

static int graph_failed(vg_graph *g, vg_status *st) { return vg_graph_status(g, st) != VG_OK; }

int main(int argc, char **argv) {
    vg_status st = {0};
    FLAGS = vg_flags_new();
    if (!FLAGS || define_flags(&st) != VG_OK || vg_flags_parse(FLAGS, &argc, argv, false, &st) != VG_OK) return fail(&st);
    if (vg_flags_help_requested(FLAGS)) {
        char *h = vg_flags_help(FLAGS, argv[0]);
        if (h) puts(h);
        vg_free(h);
        return 0;
    }
    if (!*S("dataset_dir")) {
        vg_status_set(&st, VG_INVALID_ARGUMENT, "You must supply the dataset directory with --dataset_dir");
        return fail(&st);
    }
    if (I("num_clones") != 1 || B("sync_replicas") || I("worker_replicas") != 1 || I("num_ps_tasks") != 0 ||
        *S("master")) {
        vg_status_set(&st, VG_UNIMPLEMENTED,
                      "this port trains one clone in one process (num_clones 1, no replicas, ps tasks or master)");
        return fail(&st);
    }
    vg_graph *g = vg_graph_new();
    vg_output global_step = vg_get_or_create_global_step(g); /* slim.create_global_step() */
    slim_dataset dataset;
    if (dataset_factory_get_dataset(S("dataset_name"), S("dataset_split_name"), S("dataset_dir"),
                                    I("dataset_num_samples"), (int)I("dataset_num_classes"), &dataset, &st) != VG_OK)
        return fail(&st);
    int num_classes = dataset.num_classes - (int)I("labels_offset");
    network_fn net;
    if (nets_factory_get_network_fn(S("model_name"), num_classes, F("weight_decay"), true, &net, &st) != VG_OK)
        return fail(&st);
    const char *preprocessing_name = *S("preprocessing_name") ? S("preprocessing_name") : S("model_name");
    preprocessing_fn image_preprocessing_fn;
    if (preprocessing_factory_get(preprocessing_name, &image_preprocessing_fn, &st) != VG_OK) return fail(&st);
    int batch_size = (int)I("batch_size");

    /* DatasetDataProvider(dataset, num_readers, common_queue_capacity=20 * batch_size,
     * common_queue_min=10 * batch_size) */
    vg_output image, label;
    if (dataset_data_provider_get(g, &dataset, (int)I("num_readers"), 20 * batch_size, 10 * batch_size, &image, &label,
                                  &st) != VG_OK)
        return fail(&st);
    label = vg_sub(g, label, vg_const_i64(g, I("labels_offset"), "sub/y"), "sub");
    int train_image_size = I("train_image_size") > 0 ? (int)I("train_image_size") : net.default_image_size;
    image = image_preprocessing_fn(g, image, train_image_size, train_image_size, true);
    vg_output batched[2];
    vg_output tensors[2] = {image, label};
    vg_batch(g, tensors, 2, batch_size, (int)I("num_preprocessing_threads"), 5 * batch_size, false, "batch", batched);
    /* slim.one_hot_encoding(labels, num_classes): name scope "OneHotEncoding" */
    vg_graph_push_scope(g, "OneHotEncoding/");
    vg_output labels = vg_one_hot(g, batched[1], num_classes, 1.f, 0.f, "one_hot");
    vg_graph_pop_scope(g);
    vg_output pre[2] = {batched[0], labels}, batch_queue[2];
    prefetch_queue(g, pre, 2, 2 * (int)I("num_clones"), batch_queue);
    if (graph_failed(g, &st)) return fail(&st);

    /* clone_fn(batch_queue): one clone, clone scope "" */
    end_points ep = {0};
    vg_output logits = network_fn_apply(g, &net, batch_queue[0], &ep);
    vg_losses_softmax_cross_entropy(g, batch_queue[1], logits, F("label_smoothing"), NULL);
    if (graph_failed(g, &st)) return fail(&st);

    /* summaries of the end points, the losses and the model variables */
    for (int i = 0; i < ep.n; i++) {
        char tag[300];
        snprintf(tag, sizeof tag, "activations/%s", ep.names[i]);
        vg_summary_histogram(g, tag, ep.out[i]);
        snprintf(tag, sizeof tag, "sparsity/%s", ep.names[i]);
        vg_summary_scalar(g, tag, vg_zero_fraction(g, ep.out[i], NULL));
    }
    int nl = 0;
    const vg_output *losses = vg_graph_collection(g, VG_LOSSES, &nl);
    vg_output loss_list[64];
    int nloss = 0;
    for (int i = 0; i < nl && nloss < 64; i++) loss_list[nloss++] = losses[i];
    for (int i = 0; i < nloss; i++) {
        char tag[300];
        snprintf(tag, sizeof tag, "losses/%s", vg_op_name(loss_list[i].op));
        vg_summary_scalar(g, tag, loss_list[i]);
    }
    int nmv = vg_slim_get_model_variables(g, NULL, NULL, 0);
    vg_output *mv = calloc((size_t)(nmv ? nmv : 1), sizeof *mv);
    vg_slim_get_model_variables(g, NULL, mv, nmv);
    for (int i = 0; i < nmv; i++) vg_summary_histogram(g, vg_op_name(mv[i].op), mv[i]);

    /* update ops of the (only) clone: the batch-norm moving statistics */
    int nu = 0;
    const vg_output *uo = vg_graph_collection(g, VG_UPDATE_OPS, &nu);
    vg_op **update_ops = calloc((size_t)nu + 2, sizeof *update_ops);
    int nupd = 0;
    for (int i = 0; i < nu; i++) update_ops[nupd++] = uo[i].op;

    /* moving averages */
    vg_ema *variable_averages = NULL;
    if (F("moving_average_decay") > 0) variable_averages = vg_ema_new(g, F("moving_average_decay"), global_step, false, NULL);

    vg_output learning_rate = configure_learning_rate(g, dataset.num_samples, global_step, &st);
    if (!learning_rate.op) return fail(&st);
    vg_optimizer *optimizer = configure_optimizer(learning_rate, &st);
    if (!optimizer) return fail(&st);
    vg_summary_scalar(g, "learning_rate", learning_rate);
    if (variable_averages) update_ops[nupd++] = vg_ema_apply(variable_averages, mv, nmv);

    /* _get_variables_to_train */
    int nt = 0;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nt);
    vg_output *variables_to_train = calloc((size_t)nt + 1, sizeof *variables_to_train);
    int nvt = 0;
    char scopes[64][256];
    int nsc = split_scopes(S("trainable_scopes"), scopes, 64);
    if (nsc == 0) {
        for (int i = 0; i < nt; i++) variables_to_train[nvt++] = tv[i];
    } else {
        for (int k = 0; k < nsc; k++)
            for (int i = 0; i < nt; i++)
                if (strncmp(vg_op_name(tv[i].op), scopes[k], strlen(scopes[k])) == 0) variables_to_train[nvt++] = tv[i];
    }

    /* model_deploy.optimize_clones(clones, optimizer, var_list): _gather_clone_loss */
    vg_output all_losses[2];
    int na = 0;
    vg_output clone_loss = {NULL, 0}, regularization_loss = {NULL, 0};
    if (nloss) all_losses[na++] = clone_loss = vg_add_n(g, loss_list, nloss, "clone_loss");
    int nreg = 0;
    const vg_output *reg = vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &nreg);
    if (nreg) all_losses[na++] = regularization_loss = vg_add_n(g, reg, nreg, "regularization_loss");
    vg_output sum_loss = vg_add_n(g, all_losses, na, "AddN");
    if (clone_loss.op) vg_summary_scalar(g, "Losses/clone_loss", clone_loss);
    if (regularization_loss.op) vg_summary_scalar(g, "Losses/regularization_loss", regularization_loss);
    vg_output *grads = calloc((size_t)nvt + 1, sizeof *grads);
    if (vg_optimizer_compute_gradients(optimizer, g, sum_loss, variables_to_train, nvt, grads, &st) != VG_OK)
        return fail(&st);
    vg_output total_loss = vg_add_n(g, &sum_loss, 1, "total_loss");
    vg_summary_scalar(g, "total_loss", total_loss);

    /* grad_updates = optimizer.apply_gradients(clones_gradients, global_step) */
    vg_op *grad_updates = vg_optimizer_apply_gradients(optimizer, g, grads, variables_to_train, nvt, global_step, NULL);
    update_ops[nupd++] = grad_updates;
    vg_op *update_op = vg_group(g, update_ops, nupd, "group_deps");
    /* train_tensor = control_flow_ops.with_dependencies([update_op], total_loss, name='train_op') */
    vg_output train_tensor = vg_identity(g, total_loss, "train_op");
    if (train_tensor.op && update_op) vg_op_add_control_input(train_tensor.op, update_op);
    if (graph_failed(g, &st)) return fail(&st);

    vg_slim_init_fn *init_fn = get_init_fn(g, &st);
    if (!init_fn && st.code != VG_OK) return fail(&st);
    vg_slim_train_opts opts = {0};
    opts.number_of_steps = I("max_number_of_steps");
    /* a negative flag value is slim's None */
    opts.log_every_n_steps = I("log_every_n_steps");
    opts.no_logging = opts.log_every_n_steps < 0;
    opts.save_summaries_secs = (double)I("save_summaries_secs");
    opts.no_summaries = opts.save_summaries_secs < 0;
    opts.save_interval_secs = (double)I("save_interval_secs");
    opts.no_checkpoints = opts.save_interval_secs < 0;
    if (opts.log_every_n_steps < 0) opts.log_every_n_steps = 0;
    if (opts.save_summaries_secs < 0) opts.save_summaries_secs = 0;
    if (opts.save_interval_secs < 0) opts.save_interval_secs = 0;
    if (init_fn) opts.init_fn = init_fn->fn, opts.init_fn_payload = init_fn;
    double final_loss = 0;
    vg_code c = vg_slim_learning_train(g, train_tensor, S("train_dir"), &opts, &final_loss, &st);
    if (c != VG_OK) return fail(&st);
    printf("final loss %.6f\n", final_loss);
    vg_slim_init_fn_free(init_fn);
    if (variable_averages) vg_ema_free(variable_averages);
    vg_optimizer_free(optimizer);
    free(grads), free(variables_to_train), free(update_ops), free(mv);
    vg_graph_free(g);
    vg_flags_free(FLAGS);
    return 0;
}
