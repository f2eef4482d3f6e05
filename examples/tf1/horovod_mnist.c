/* horovod_mnist.c - port of horovod/horovod examples/tensorflow_mnist.py (issue 15):
 * the 2-layer convolution model trained with RMSProp(0.001 * size) wrapped in Horovod's
 * DistributedOptimizer, BroadcastGlobalVariablesHook(0), StopAtStepHook(last_step =
 * 20000 // size), LoggingTensorHook({step, loss}, every_n_iter=10), checkpoints only on
 * rank 0, batches of 100 fed through placeholders from a per-rank shuffling generator,
 * all under a MonitoredTrainingSession. Run it with `mpirun -np 2 horovod_mnist`; run
 * alone it is a world of one rank. See examples/tf1/README.md for the mapping.
 *
 * Usage: horovod_mnist [--data-dir D] [--checkpoint-dir C] [--steps 20000] [--train-limit N]
 * The data are Fashion-MNIST's IDX files (same layout as MNIST's; Debian's
 * dataset-fashion-mnist); without them (or with --synthetic) 2000 synthetic images are
 * made. Rank 0 prints "final loss <x>". */
#include "tf1_util.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* conv_model(feature, target, mode=TRAIN) -> predict, loss */
static void conv_model(vg_graph *g, vg_output feature, vg_output target, vg_output *predict, vg_output *loss) {
    /* target = tf.one_hot(tf.cast(target, tf.int32), 10, 1, 0) */
    vg_output onehot = vg_one_hot(g, vg_cast(g, target, VG_INT32, NULL), 10, 1, 0, NULL);
    feature = vg_reshape_c(g, feature, (int64_t[]){-1, 28, 28, 1}, 4, NULL);
    static const int64_t k[4] = {1, 2, 2, 1}, s[4] = {1, 2, 2, 1};
    vg_graph_push_scope(g, "conv_layer1");
    vg_output h_conv1 = vg_layers_conv2d(g, feature, 32, 5, 5, 1, "SAME", VG_ACT_RELU, NULL);
    vg_output h_pool1 = vg_max_pool(g, h_conv1, k, s, "SAME", NULL);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "conv_layer2");
    vg_output h_conv2 = vg_layers_conv2d(g, h_pool1, 64, 5, 5, 1, "SAME", VG_ACT_RELU, NULL);
    vg_output h_pool2 = vg_max_pool(g, h_conv2, k, s, "SAME", NULL);
    vg_output h_pool2_flat = vg_reshape_c(g, h_pool2, (int64_t[]){-1, 7 * 7 * 64}, 2, NULL);
    vg_graph_pop_scope(g);
    /* layers.dropout(layers.dense(h_pool2_flat, 1024, relu), rate=0.5,
     * training=mode == tf.estimator.ModeKeys.TRAIN) */
    vg_output h_fc1 = vg_layers_dropout(g, vg_layers_dense(g, h_pool2_flat, 1024, VG_ACT_RELU, NULL), 0.5,
                                        vg_const_bool(g, true, "training"), 0, NULL);
    vg_output logits = vg_layers_dense(g, h_fc1, 10, VG_ACT_NONE, NULL);
    *loss = vg_losses_softmax_cross_entropy(g, onehot, logits, 0, NULL);
    *predict = vg_argmax(g, logits, 1, VG_INT64, NULL);
}

/* The data: x [n, 784] in [0, 1], y [n] as float (the original's placeholder dtype). */
static int64_t load(const char *dir, int64_t limit, float **x, float **y) {
    int64_t di[4], dl[4];
    uint8_t *pix, *lab;
    tf1_read_mnist_train(dir, &pix, &lab, di, dl);
    int64_t n;
    if (pix && lab) {
        n = di[0] < dl[0] ? di[0] : dl[0];
        if (limit > 0 && limit < n) n = limit;
    } else { /* synthetic: class c lights up row band c of the image, with noise */
        n = 2000;
    }
    *x = malloc((size_t)n * 784 * sizeof(float));
    *y = malloc((size_t)n * sizeof(float));
    unsigned seed = 12345;
    for (int64_t i = 0; i < n; i++) {
        int c = pix ? lab[i] : (int)(i % 10);
        (*y)[i] = (float)c;
        for (int p = 0; p < 784; p++) {
            seed = seed * 1103515245u + 12345u;
            float noise = (float)((seed >> 16) & 0xff) / 255.0f;
            (*x)[i * 784 + p] = pix ? pix[i * 784 + p] / 255.0f : ((p / 28) / 3 == c ? 0.8f : 0.0f) + 0.2f * noise;
        }
    }
    vg_free(pix);
    vg_free(lab);
    return n;
}

/* train_input_generator(x_train, y_train, batch_size): a fresh permutation per pass. */
typedef struct gen {
    const float *x, *y;
    int64_t n, index, *perm;
    unsigned rng;
} gen;
static void gen_shuffle(gen *g) {
    for (int64_t i = 0; i < g->n; i++) g->perm[i] = i;
    for (int64_t i = g->n - 1; i > 0; i--) {
        g->rng = g->rng * 1664525u + 1013904223u;
        int64_t j = (int64_t)(g->rng % (unsigned)(i + 1)), t = g->perm[i];
        g->perm[i] = g->perm[j];
        g->perm[j] = t;
    }
    g->index = 0;
}
static void gen_next(gen *g, int64_t b, vg_tensor *xi, vg_tensor *yi) {
    if (g->index > g->n - b) gen_shuffle(g);
    float *xp = vg_tensor_data(xi), *yp = vg_tensor_data(yi);
    for (int64_t k = 0; k < b; k++) {
        int64_t r = g->perm[g->index + k];
        memcpy(xp + k * 784, g->x + r * 784, 784 * sizeof(float));
        yp[k] = g->y[r];
    }
    g->index += b;
}

int main(int argc, char **argv) {
    const char *data_dir = "/usr/share/datasets/fashion-mnist", *ckpt = "./checkpoints";
    int64_t steps = 20000, limit = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--data-dir")) data_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--checkpoint-dir")) ckpt = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--train-limit")) limit = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--synthetic")) data_dir = NULL, i--;
        else {
            fprintf(stderr, "usage: horovod_mnist [--data-dir D] [--checkpoint-dir C] [--steps N] [--train-limit N]\n");
            return 2;
        }
    }
    vg_status st;
    /* Horovod: initialize Horovod. */
    if (vg_dist_init(&st) != VG_OK) {
        fprintf(stderr, "horovod_mnist: %s\n", st.msg);
        return 1;
    }
    int rank = vg_dist_rank(), size = vg_dist_size();
    float *x_train, *y_train;
    int64_t n = load(data_dir, limit, &x_train, &y_train);

    vg_graph *g = vg_graph_new();
    vg_graph_push_scope(g, "input");
    vg_output image = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 784}, 2, "image");
    vg_output label = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "label");
    vg_graph_pop_scope(g);
    vg_output predict, loss;
    conv_model(g, image, label, &predict, &loss);
    /* Horovod: adjust learning rate based on number of GPUs. */
    vg_optimizer *opt = vg_optimizer_new_rmsprop(0.001 * size, 0.9, 0.0, 1e-10);
    vg_output global_step = vg_get_or_create_global_step(g);
    /* Horovod: add Horovod Distributed Optimizer; opt.minimize(loss, global_step) */
    vg_op *train_op = vg_dist_minimize(opt, g, loss, NULL, 0, global_step, NULL, NULL);

    vg_hook hooks[3];
    int nh = 0;
    vg_code rc = vg_broadcast_global_variables_hook(0, &hooks[nh++], &st);
    /* Horovod: adjust number of steps based on number of GPUs. */
    if (rc == VG_OK) rc = vg_stop_at_step_hook(-1, steps / size, &hooks[nh++], &st);
    vg_output logged[2] = {global_step, loss};
    const char *names[2] = {"step", "loss"};
    vg_logging_tensor_options lo = {0};
    lo.tensors = logged;
    lo.names = names;
    lo.ntensors = 2;
    lo.every_n_iter = 10;
    if (rc == VG_OK) rc = vg_logging_tensor_hook(&lo, &hooks[nh++], &st);
    if (rc != VG_OK) {
        fprintf(stderr, "horovod_mnist: %s\n", st.msg);
        return 1;
    }
    /* config = tf.ConfigProto(); config.gpu_options.allow_growth = True (accepted, logged
     * once: vigil runs on the CPU); the GPU pinning (visible_device_list = local_rank) has
     * no CPU twin: the host's cores are shared among its ranks instead */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN) / vg_dist_local_size();
    vg_config_proto config = {0};
    config.gpu_allow_growth = true;
    config.intra_op_parallelism_threads = config.inter_op_parallelism_threads = ncpu > 1 ? (int)ncpu : 1;
    /* Horovod: save checkpoints only on worker 0 */
    vg_mts_options mo = {0};
    mo.checkpoint_dir = rank == 0 ? ckpt : NULL;
    mo.hooks = hooks;
    mo.nhooks = nh;
    mo.config = &config;
    vg_monitored_session *ms = vg_monitored_training_session_new(g, &mo, &st);
    if (!ms) {
        fprintf(stderr, "horovod_mnist: %s\n", st.msg);
        return 1;
    }
    gen gn = {x_train, y_train, n, n, malloc((size_t)n * sizeof(int64_t)), 1u + 7919u * (unsigned)rank};
    const int64_t batch = 100;
    vg_tensor *xi = vg_tensor_new(VG_FLOAT, (int64_t[]){batch, 784}, 2, &st);
    vg_tensor *yi = vg_tensor_new(VG_FLOAT, (int64_t[]){batch}, 1, &st);
    vg_output feeds[2] = {image, label};
    vg_tensor *vals[2] = {xi, yi};
    vg_run_args a = {0};
    a.feeds = feeds;
    a.feed_values = vals;
    a.nfeeds = 2;
    a.targets = &train_op;
    a.ntargets = 1;
    a.fetches = &loss;
    a.nfetches = 1;
    double last_loss = -1;
    rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        gen_next(&gn, batch, xi, yi);
        vg_tensor *lv = NULL;
        rc = vg_monitored_session_run(ms, &a, &lv, NULL, &st);
        if (lv) last_loss = vg_tensor_scalar(lv);
        vg_tensor_free(lv);
    }
    rc = vg_monitored_session_end(ms, rc, &st);
    if (rc != VG_OK) fprintf(stderr, "horovod_mnist: %s\n", st.msg);
    else if (rank == 0) printf("final loss %.4f\n", last_loss);
    vg_monitored_session_free(ms);
    vg_tensor_free(xi);
    vg_tensor_free(yi);
    free(gn.perm);
    free(x_train);
    free(y_train);
    vg_optimizer_free(opt);
    vg_graph_free(g);
    vg_dist_finalize(&st);
    return rc == VG_OK ? 0 : 1;
}
