/* cifar10.c - port of cifar10.py: the CIFAR-10 network (conv1, pool1, norm1, conv2,
 * norm2, pool2, local3, local4, softmax_linear), its loss with weight decay, the loss
 * averages and the training op with ExponentialMovingAverage of the variables. The
 * data preparation replaces maybe_download_and_extract (see README). */
#include "cifar10.h"
#include "../tf1_util.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

cifar10_flags FLAGS = {128, "/tmp/cifar10_data", "/usr/share/datasets/fashion-mnist", 0, 16};

#define TOWER_NAME "tower"

int cifar10_parse_flag(const char *arg, const char *next, bool *handled, bool *used_next) {
    *handled = false;
    *used_next = false;
    static const char *names[] = {"batch_size", "data_dir", "fmnist_dir", "limit", "num_preprocess_threads"};
    if (strncmp(arg, "--", 2) != 0) return 0;
    for (int i = 0; i < 5; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(arg + 2, names[i], n) != 0 || (arg[2 + n] != '=' && arg[2 + n] != 0)) continue;
        const char *v = arg[2 + n] == '=' ? arg + 3 + n : next;
        if (!v) {
            fprintf(stderr, "flag --%s needs a value\n", names[i]);
            return 2;
        }
        *used_next = arg[2 + n] != '=';
        *handled = true;
        if (i == 1) FLAGS.data_dir = v;
        else if (i == 2) FLAGS.fmnist_dir = v;
        else {
            int x = atoi(v);
            if (x < 0 || (x == 0 && i != 3)) {
                fprintf(stderr, "flag --%s: bad value %s\n", names[i], v);
                return 2;
            }
            if (i == 0) FLAGS.batch_size = x;
            else if (i == 3) FLAGS.limit = x;
            else FLAGS.num_preprocess_threads = x;
        }
        return 0;
    }
    return 0;
}

int cifar10_parse_args(int argc, char **argv, int (*own)(const char *arg, const char *value, bool eq, bool *used_next)) {
    for (int i = 1; i < argc; i++) {
        bool handled, used_next = false;
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (cifar10_parse_flag(a, next, &handled, &used_next)) return 2;
        if (!handled) {
            const char *eq = strchr(a, '=');
            int rc = own(a, eq ? eq + 1 : next, eq != NULL, &used_next);
            if (rc < 0) fprintf(stderr, "unknown flag %s\n", a);
            if (rc) return rc < 0 ? 2 : rc;
        }
        i += used_next;
    }
    return 0;
}

/* _activation_summary(x): histogram and sparsity (tf.nn.zero_fraction) summaries,
 * named after the op without the tower prefix. */
static void activation_summary(vg_graph *g, vg_output x) {
    char tensor_name[512], tag[600];
    const char *n = vg_op_name(x.op);
    if (strncmp(n, TOWER_NAME "_", 6) == 0 && strchr(n, '/')) n = strchr(n, '/') + 1;
    snprintf(tensor_name, sizeof tensor_name, "%s", n);
    snprintf(tag, sizeof tag, "%s/activations", tensor_name);
    vg_summary_histogram(g, tag, x);
    snprintf(tag, sizeof tag, "%s/sparsity", tensor_name);
    vg_summary_scalar(g, tag, vg_zero_fraction(g, x, NULL));
}

/* _variable_on_cpu(name, shape, initializer): tf.device('/cpu:0') is not modelled
 * (vigil runs on the CPU). */
static vg_variable variable_on_cpu(vg_graph *g, const char *name, const int64_t *shape, int nd, vg_initializer init) {
    vg_get_variable_opts o = {0};
    o.dims = shape;
    o.ndims = nd;
    o.has_init = true;
    o.init = init;
    return vg_get_variable_ex(g, name, &o);
}

/* _variable_with_weight_decay(name, shape, stddev, wd) */
static vg_variable variable_with_weight_decay(vg_graph *g, const char *name, const int64_t *shape, int nd, double stddev,
                                              const double *wd) {
    vg_variable var = variable_on_cpu(g, name, shape, nd, vg_init_truncated_normal(0.0, stddev, 0));
    if (wd) {
        vg_output weight_decay = vg_mul(g, vg_l2_loss(g, var.read, NULL), vg_const_f32(g, (float)*wd, NULL), "weight_loss");
        vg_graph_add_to_collection(g, "losses", weight_decay);
    }
    return var;
}

void cifar10_distorted_inputs(vg_graph *g, vg_output *images, vg_output *labels) {
    char data_dir[1100];
    snprintf(data_dir, sizeof data_dir, "%s/cifar-10-batches-bin", FLAGS.data_dir);
    cifar10_input_distorted_inputs(g, data_dir, FLAGS.batch_size, images, labels);
}

void cifar10_inputs(vg_graph *g, bool eval_data, vg_output *images, vg_output *labels) {
    char data_dir[1100];
    snprintf(data_dir, sizeof data_dir, "%s/cifar-10-batches-bin", FLAGS.data_dir);
    cifar10_input_inputs(g, eval_data, data_dir, FLAGS.batch_size, images, labels);
}

static const double wd0 = 0.0, wd004 = 0.004;

/* conv1 / conv2: relu(conv2d(x, 5x5 kernel of in -> 64 channels, stddev, no weight decay)
 * + biases (bias_init)) under the variable scope name, the ReLU named after the scope. */
static vg_output conv_layer(vg_graph *g, const char *name, vg_output x, int64_t in, double stddev, double bias_init) {
    int64_t s1[4] = {1, 1, 1, 1};
    vg_variable_scope_push(g, name, NULL);
    const char *scope = vg_variable_scope_name(g);
    vg_variable kernel = variable_with_weight_decay(g, "weights", (int64_t[]){5, 5, in, 64}, 4, stddev, &wd0);
    vg_output conv = vg_conv2d(g, x, kernel.read, s1, "SAME", NULL);
    vg_variable biases = variable_on_cpu(g, "biases", (int64_t[]){64}, 1, vg_init_constant(bias_init));
    vg_output bias = vg_bias_add(g, conv, biases.read, NULL);
    vg_output out = vg_relu(g, bias, scope);
    activation_summary(g, out);
    vg_variable_scope_pop(g);
    return out;
}

/* local3 / local4: relu(x W + b) under the variable scope name, W [in, out] (stddev 0.04,
 * weight decay 0.004), b 0.1; flatten: x is first reshaped to [batch_size, -1] (in: its
 * second dimension). */
static vg_output local_layer(vg_graph *g, const char *name, vg_output x, bool flatten, int64_t in, int64_t out) {
    vg_variable_scope_push(g, name, NULL);
    const char *scope = vg_variable_scope_name(g);
    if (flatten) {
        x = vg_reshape_c(g, x, (int64_t[]){FLAGS.batch_size, -1}, 2, NULL);
        in = vg_output_shape(x).dims[1];
    }
    vg_variable weights = variable_with_weight_decay(g, "weights", (int64_t[]){in, out}, 2, 0.04, &wd004);
    vg_variable biases = variable_on_cpu(g, "biases", (int64_t[]){out}, 1, vg_init_constant(0.1));
    vg_output local = vg_relu(g, vg_add(g, vg_matmul(g, x, weights.read, false, false, NULL), biases.read, NULL),
                              scope);
    activation_summary(g, local);
    vg_variable_scope_pop(g);
    return local;
}

vg_output cifar10_inference(vg_graph *g, vg_output images) {
    vg_output conv1 = conv_layer(g, "conv1", images, 3, 1e-4, 0.0);
    /* pool1, norm1 */
    vg_output pool1 = vg_max_pool(g, conv1, (int64_t[]){1, 3, 3, 1}, (int64_t[]){1, 2, 2, 1}, "SAME", "pool1");
    vg_output norm1 = vg_lrn(g, pool1, 4, 1.0f, 0.001f / 9.0f, 0.75f, "norm1");
    vg_output conv2 = conv_layer(g, "conv2", norm1, 64, 1e-2, 0.1);
    /* norm2, pool2 */
    vg_output norm2 = vg_lrn(g, conv2, 4, 1.0f, 0.001f / 9.0f, 0.75f, "norm2");
    vg_output pool2 = vg_max_pool(g, norm2, (int64_t[]){1, 3, 3, 1}, (int64_t[]){1, 2, 2, 1}, "SAME", "pool2");
    vg_output local3 = local_layer(g, "local3", pool2, true, 0, 384);
    vg_output local4 = local_layer(g, "local4", local3, false, 384, 192);
    /* softmax, i.e. softmax(WX + b) */
    vg_variable_scope_push(g, "softmax_linear", NULL);
    const char *scope = vg_variable_scope_name(g);
    vg_variable weights = variable_with_weight_decay(g, "weights", (int64_t[]){192, NUM_CLASSES}, 2, 1 / 192.0, &wd0);
    vg_variable biases = variable_on_cpu(g, "biases", (int64_t[]){NUM_CLASSES}, 1, vg_init_constant(0.0));
    vg_output softmax_linear = vg_add(g, vg_matmul(g, local4, weights.read, false, false, NULL), biases.read, scope);
    activation_summary(g, softmax_linear);
    vg_variable_scope_pop(g);
    return softmax_linear;
}

vg_output cifar10_loss(vg_graph *g, vg_output logits, vg_output labels) {
    labels = vg_cast(g, labels, VG_INT64, NULL);
    vg_op *xent = vg_sparse_softmax_xent(g, logits, labels, "cross_entropy_per_example");
    vg_output cross_entropy_mean = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "cross_entropy");
    vg_graph_add_to_collection(g, "losses", cross_entropy_mean);
    int n;
    const vg_output *losses = vg_graph_collection(g, "losses", &n);
    return vg_add_n(g, losses, n, "total_loss");
}

/* _add_loss_summaries(total_loss) */
static vg_op *add_loss_summaries(vg_graph *g, vg_output total_loss, vg_ema **loss_averages_out) {
    vg_ema *loss_averages = vg_ema_new(g, 0.9, (vg_output){0}, false, "avg");
    int n;
    const vg_output *losses = vg_graph_collection(g, "losses", &n);
    vg_output all[16];
    for (int i = 0; i < n && i < 15; i++) all[i] = losses[i];
    all[n] = total_loss;
    vg_op *loss_averages_op = vg_ema_apply(loss_averages, all, n + 1);
    for (int i = 0; i <= n; i++) {
        char tag[600];
        snprintf(tag, sizeof tag, "%s (raw)", vg_op_name(all[i].op));
        vg_summary_scalar(g, tag, all[i]);
        vg_output avg = vg_ema_average(loss_averages, all[i]);
        vg_summary_scalar(g, vg_op_name(all[i].op), vg_variable_snapshot(avg.op));
    }
    *loss_averages_out = loss_averages;
    return loss_averages_op;
}

static vg_ema *g_loss_averages, *g_variable_averages;

vg_op *cifar10_train(vg_graph *g, vg_output total_loss, vg_output global_step) {
    double num_batches_per_epoch = (double)NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN / FLAGS.batch_size;
    int decay_steps = (int)(num_batches_per_epoch * NUM_EPOCHS_PER_DECAY);
    vg_output lr = vg_exponential_decay(g, INITIAL_LEARNING_RATE, global_step, decay_steps, LEARNING_RATE_DECAY_FACTOR,
                                        true, NULL);
    vg_summary_scalar(g, "learning_rate", lr);
    vg_op *loss_averages_op = add_loss_summaries(g, total_loss, &g_loss_averages);
    /* Compute gradients under control_dependencies([loss_averages_op]). */
    vg_graph_push_control_deps(g, &loss_averages_op, 1);
    vg_optimizer *opt = vg_optimizer_new_sgd(INITIAL_LEARNING_RATE);
    vg_optimizer_set_learning_rate_tensor(opt, lr);
    int nv;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    vg_output *vars = malloc(sizeof(vg_output) * (size_t)nv), *grads = malloc(sizeof(vg_output) * (size_t)nv);
    memcpy(vars, vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv), sizeof(vg_output) * (size_t)nv);
    vg_status st;
    if (vg_optimizer_compute_gradients(opt, g, total_loss, vars, nv, grads, &st) != VG_OK)
        vg_graph_set_error(g, st.code, "%s", st.msg);
    vg_graph_pop_control_deps(g);
    /* Apply gradients. */
    vg_op *apply_gradient_op = vg_graph_status(g, NULL) == VG_OK
                                   ? vg_optimizer_apply_gradients(opt, g, grads, vars, nv, global_step, NULL)
                                   : NULL;
    /* Add histograms for trainable variables and their gradients. */
    for (int i = 0; i < nv; i++) vg_summary_histogram(g, vg_op_name(vars[i].op), vars[i]);
    for (int i = 0; i < nv; i++)
        if (grads[i].op) {
            char tag[600];
            snprintf(tag, sizeof tag, "%s/gradients", vg_op_name(vars[i].op));
            vg_summary_histogram(g, tag, grads[i]);
        }
    /* Track the moving averages of all trainable variables. */
    g_variable_averages = vg_ema_new(g, MOVING_AVERAGE_DECAY, global_step, false, NULL);
    vg_op *variables_averages_op = vg_ema_apply(g_variable_averages, vars, nv);
    vg_op *deps[2] = {apply_gradient_op, variables_averages_op};
    vg_op *train_op = NULL;
    if (apply_gradient_op && variables_averages_op) {
        vg_graph_push_control_deps(g, deps, 2);
        train_op = vg_no_op(g, "train");
        vg_graph_pop_control_deps(g);
    }
    free(vars);
    free(grads);
    vg_optimizer_free(opt);
    return train_op;
}

void cifar10_free_averages(void);
void cifar10_free_averages(void) {
    vg_ema_free(g_loss_averages);
    vg_ema_free(g_variable_averages);
    g_loss_averages = g_variable_averages = NULL;
}

/* ---- data: CIFAR-10's binary layout written from Fashion-MNIST -------------------- */

/* One record: the label byte, then 32x32 pixels per channel (R, G, B planes): the
 * 28x28 grey image centred with a 2-pixel black border, in all three channels. */
static int write_batch(const char *path, const uint8_t *images, const uint8_t *labels, int64_t from, int64_t to) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint8_t rec[1 + 3072];
    for (int64_t i = from; i < to; i++) {
        rec[0] = labels[i];
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++) {
                    int sy = y - 2, sx = x - 2;
                    rec[1 + c * 1024 + y * 32 + x] =
                        (sy >= 0 && sy < 28 && sx >= 0 && sx < 28) ? images[i * 784 + sy * 28 + sx] : 0;
                }
        if (fwrite(rec, sizeof rec, 1, f) != 1) {
            fclose(f);
            fprintf(stderr, "write error on %s\n", path);
            return 1;
        }
    }
    return fclose(f) == 0 ? 0 : 1;
}

int cifar10_maybe_download_and_extract(void) {
    char dir[1100], path[1200];
    snprintf(dir, sizeof dir, "%s/cifar-10-batches-bin", FLAGS.data_dir);
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
        struct stat sb;
        if (stat(path, &sb) == 0) NUM_EXAMPLES_PER_EPOCH_FOR_EVAL = (int)(sb.st_size / 3073);
        int64_t total = 0;
        for (int i = 1; i <= 5; i++) {
            snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, i);
            if (stat(path, &sb) == 0) total += sb.st_size / 3073;
        }
        NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN = (int)total;
        return 0;
    }
    mkdir(FLAGS.data_dir, 0755);
    mkdir(dir, 0755);
    uint8_t *ti = NULL, *tl = NULL, *ei = NULL, *el = NULL;
    int64_t nti, ntl, nei, nel;
    int rc = tf1_load_idx(FLAGS.fmnist_dir, "train-images-idx3-ubyte.gz", &ti, &nti) || tf1_load_idx(FLAGS.fmnist_dir, "train-labels-idx1-ubyte.gz", &tl, &ntl) ||
             tf1_load_idx(FLAGS.fmnist_dir, "t10k-images-idx3-ubyte.gz", &ei, &nei) || tf1_load_idx(FLAGS.fmnist_dir, "t10k-labels-idx1-ubyte.gz", &el, &nel);
    if (!rc) {
        int64_t n = nti < ntl ? nti : ntl, ne = nei < nel ? nei : nel;
        if (FLAGS.limit > 0 && FLAGS.limit < n) n = FLAGS.limit;
        if (FLAGS.limit > 0 && FLAGS.limit / 5 < ne) ne = FLAGS.limit / 5 > 0 ? FLAGS.limit / 5 : 1;
        printf("Writing %lld training and %lld test examples in CIFAR-10's binary format to %s\n", (long long)n,
               (long long)ne, dir);
        for (int i = 0; i < 5 && !rc; i++) {
            snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, i + 1);
            rc = write_batch(path, ti, tl, n * i / 5, n * (i + 1) / 5);
        }
        snprintf(path, sizeof path, "%s/test_batch.bin", dir);
        if (!rc) rc = write_batch(path, ei, el, 0, ne);
        NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN = (int)n;
        NUM_EXAMPLES_PER_EPOCH_FOR_EVAL = (int)ne;
    }
    vg_free(ti);
    vg_free(tl);
    vg_free(ei);
    vg_free(el);
    return rc;
}
