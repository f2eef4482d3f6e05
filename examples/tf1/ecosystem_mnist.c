/* ecosystem_mnist.c - port of tensorflow/ecosystem docker/mnist.py, both of its modes:
 * string_input_producer -> TFRecordReader -> parse_single_example -> decode_raw ->
 * shuffle_batch (2 threads) -> mnist.inference/loss/training -> MonitoredTrainingSession
 * running train_op until should_stop; and the distributed form (issue 15): the flags
 * job_name, task_index, ps_hosts, worker_hosts, device_and_target() with ClusterSpec,
 * Server (a ps task joins and returns), replica_device_setter and
 * MonitoredTrainingSession(master=server.target, is_chief=(task_index == 0)).
 * Each worker task is an MPI rank:
 *   mpirun -np 2 ecosystem_mnist --job_name worker --ps_hosts h:2222 \
 *          --worker_hosts h:2223,h:2224 [--task_index defaults to the MPI rank]
 * Run without --job_name it is single-machine training, as the original. The ps/worker
 * program becomes synchronous data-parallel: mnist.training's plain minimize, built
 * after the Server joined the MPI world, averages the workers' gradients by allreduce
 * (issue 28) instead of each worker applying its own to ps-held variables. See
 * examples/tf1/README.md.
 *
 * Usage: ecosystem_mnist [--job_name worker|ps] [--task_index I] [--ps_hosts L]
 *                        [--worker_hosts L] [--data_dir D] [--train_dir T] [--num_epochs N]
 *                        [--batch_size 100] [--learning_rate 0.01] [--hidden1 128] [--hidden2 128]
 * Without --data_dir it writes a small synthetic train.tfrecords (the layout of TF's
 * convert_to_records.py: height, width, depth, label, image_raw) into a temporary
 * directory and trains 3 epochs on it. Prints "final loss <x>"; exits 0 when training
 * ended cleanly (at the end of the epochs). */
#include "tf1_util.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IMAGE_PIXELS 784
#define NUM_CLASSES 10

typedef struct flags {
    const char *job_name, *ps_hosts, *worker_hosts;
    int task_index;
    const char *data_dir, *train_dir;
    int64_t num_epochs, batch_size, hidden1, hidden2;
    double learning_rate;
} flags;

/* read_and_decode(filename_queue) */
static void read_and_decode(vg_graph *g, vg_output filename_queue, vg_output *image, vg_output *label) {
    vg_output reader = vg_tfrecord_reader(g, NULL, NULL);
    vg_op *read = vg_reader_read(g, reader, filename_queue, NULL);
    vg_feature_spec features[2] = {
        {"image_raw", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}},
        {"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}},
    }; /* defaults are not specified since both keys are required */
    vg_output f[2];
    vg_parse_single_example(g, vg_out(read, 1), features, 2, f, NULL, NULL);
    vg_output img = vg_decode_raw(g, f[0], VG_UINT8, true, NULL);
    img = vg_reshape_c(g, img, (int64_t[]){IMAGE_PIXELS}, 1, NULL); /* image.set_shape([IMAGE_PIXELS]) */
    /* [0, 255] -> [-0.5, 0.5] */
    img = vg_sub(g, vg_mul(g, vg_cast(g, img, VG_FLOAT, NULL), vg_const_f32(g, 1.0f / 255, NULL), NULL),
                 vg_const_f32(g, 0.5f, NULL), NULL);
    *image = img;
    *label = vg_cast(g, f[1], VG_INT32, NULL);
}

/* inputs(batch_size) */
static void inputs(vg_graph *g, const flags *fl, vg_output *images, vg_output *labels) {
    char filename[4096];
    snprintf(filename, sizeof filename, "%s/train.tfrecords", fl->data_dir);
    vg_graph_push_scope(g, "input");
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
    vg_tensor_set_string(t, 0, filename, strlen(filename), &st);
    vg_output files = vg_const(g, t, "Const");
    vg_tensor_free(t);
    vg_output filename_queue = vg_string_input_producer(g, files, fl->num_epochs, true, 0, 32, NULL);
    vg_output image, label;
    read_and_decode(g, filename_queue, &image, &label);
    vg_output out[2];
    vg_shuffle_batch(g, (vg_output[]){image, label}, 2, (int)fl->batch_size, 1000 + 3 * (int)fl->batch_size, 1000, 2,
                     0, false, NULL, out);
    vg_graph_pop_scope(g);
    *images = out[0];
    *labels = out[1];
}

/* mnist.inference: two ReLU layers and a linear softmax layer, weights from
 * truncated_normal(stddev = 1/sqrt(fan_in)), zero biases. */
static vg_output layer(vg_graph *g, const char *scope, vg_output x, int64_t in, int64_t out, bool relu) {
    vg_graph_push_scope(g, scope);
    vg_output w = vg_variable_new(g, "weights",
                                  vg_initializer_build(g, vg_init_truncated_normal(0, 1.0 / sqrt((double)in), 0),
                                                       VG_FLOAT, (int64_t[]){in, out}, 2),
                                  VG_VAR_TRAINABLE).read;
    vg_output b = vg_variable_new(g, "biases", vg_initializer_build(g, vg_init_zeros(), VG_FLOAT, &out, 1),
                                  VG_VAR_TRAINABLE).read;
    vg_output y = vg_add(g, vg_matmul(g, x, w, false, false, NULL), b, NULL);
    if (relu) y = vg_relu(g, y, NULL);
    vg_graph_pop_scope(g);
    return y;
}

static int make_data(const char *dir, int n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/train.tfrecords", dir);
    vg_status st;
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
    if (!w) {
        fprintf(stderr, "%s\n", st.msg);
        return 1;
    }
    unsigned seed = 1;
    uint8_t img[IMAGE_PIXELS];
    for (int i = 0; i < n; i++) {
        int64_t label = rand_r(&seed) % NUM_CLASSES;
        for (int p = 0; p < IMAGE_PIXELS; p++) {
            int r = p / 28, c = p % 28, block = (r / 7) * 4 + c / 7;
            img[p] = (uint8_t)((block == label ? 160 : 0) + rand_r(&seed) % 96);
        }
        vg_example *ex = vg_example_new();
        int64_t h = 28, wd = 28, d = 1;
        vg_example_add_int64(ex, "height", &h, 1, &st);
        vg_example_add_int64(ex, "width", &wd, 1, &st);
        vg_example_add_int64(ex, "depth", &d, 1, &st);
        vg_example_add_int64(ex, "label", &label, 1, &st);
        vg_example_add_bytes(ex, "image_raw", (const char *[]){(const char *)img}, (size_t[]){IMAGE_PIXELS}, 1, &st);
        size_t len;
        const void *b = vg_example_serialize(ex, &len, &st);
        if (!b || vg_tfrecord_writer_write(w, b, len, &st) != VG_OK) {
            fprintf(stderr, "%s\n", st.msg);
            vg_example_free(ex);
            vg_tfrecord_writer_close(w, &st);
            return 1;
        }
        vg_example_free(ex);
    }
    return vg_tfrecord_writer_close(w, &st) == VG_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    flags fl = {NULL, "", "", -1, NULL, NULL, 0, 100, 128, 128, 0.01};
    const tf1_flag flag_table[] = {
        {"--job_name", 's', &fl.job_name},       {"--task_index", 'i', &fl.task_index},
        {"--ps_hosts", 's', &fl.ps_hosts},       {"--worker_hosts", 's', &fl.worker_hosts},
        {"--data_dir", 's', &fl.data_dir},       {"--train_dir", 's', &fl.train_dir},
        {"--num_epochs", 'l', &fl.num_epochs},   {"--batch_size", 'l', &fl.batch_size},
        {"--learning_rate", 'd', &fl.learning_rate}, {"--hidden1", 'l', &fl.hidden1},
        {"--hidden2", 'l', &fl.hidden2},
    };
    if (tf1_parse_flag_pairs(argc, argv, flag_table, (int)(sizeof flag_table / sizeof flag_table[0]))) return 2;
    char tmp[64] = "";
    if (!fl.data_dir) { /* self-test mode: synthetic data, 3 epochs */
        strcpy(tmp, "/tmp/vg_ecosystem_mnist_XXXXXX");
        if (!mkdtemp(tmp) || make_data(tmp, 2000)) return 1;
        fl.data_dir = fl.train_dir = tmp;
        fl.num_epochs = 3;
        fl.learning_rate = 0.1;
    }
    if (!fl.train_dir) {
        fprintf(stderr, "Must specify an explicit `train_dir`\n");
        return 2;
    }
    vg_status st;
    /* device_and_target() */
    const char *target = "";
    vg_cluster_spec *cluster_spec = NULL;
    vg_server *server = NULL;
    if (!fl.job_name) {
        printf("Running single-machine training\n");
    } else {
        printf("Running distributed training\n");
        if (vg_dist_init(&st) != VG_OK) { /* e.g. mpirun without VIGIL_MPI: names the build option */
            fprintf(stderr, "%s\n", st.msg);
            return 1;
        }
        if (fl.task_index < 0) fl.task_index = vg_dist_rank(); /* one worker task per MPI rank */
        if (!fl.ps_hosts[0] || !fl.worker_hosts[0]) {
            fprintf(stderr, "Must specify an explicit `ps_hosts` and `worker_hosts`\n");
            return 2;
        }
        cluster_spec = vg_cluster_spec_new();
        if (!cluster_spec || vg_cluster_spec_parse_job(cluster_spec, "ps", fl.ps_hosts, &st) != VG_OK ||
            vg_cluster_spec_parse_job(cluster_spec, "worker", fl.worker_hosts, &st) != VG_OK ||
            !(server = vg_server_new(cluster_spec, fl.job_name, fl.task_index, &st))) {
            fprintf(stderr, "%s\n", cluster_spec ? st.msg : "out of memory");
            vg_cluster_spec_free(cluster_spec);
            return 1;
        }
        if (!strcmp(fl.job_name, "ps")) { /* server.join(): nothing to serve, returns at once */
            vg_code jrc = vg_server_join(server, &st);
            vg_server_free(server);
            vg_cluster_spec_free(cluster_spec);
            return jrc == VG_OK ? 0 : 1;
        }
        char worker_device[64];
        snprintf(worker_device, sizeof worker_device, "/job:worker/task:%d", fl.task_index);
        printf("device %s (variables replicated)\n", vg_replica_device_setter(cluster_spec, worker_device));
        target = vg_server_target(server);
    }
    vg_graph *g = vg_graph_new();
    vg_output images, labels;
    inputs(g, &fl, &images, &labels);
    vg_output h1 = layer(g, "hidden1", images, IMAGE_PIXELS, fl.hidden1, true);
    vg_output h2 = layer(g, "hidden2", h1, fl.hidden1, fl.hidden2, true);
    vg_output logits = layer(g, "softmax_linear", h2, fl.hidden2, NUM_CLASSES, false);
    /* mnist.loss */
    vg_op *xent = vg_sparse_softmax_xent(g, logits, vg_cast(g, labels, VG_INT64, NULL), "xentropy");
    vg_output loss = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "xentropy_mean");
    /* mnist.training */
    vg_summary_scalar(g, "loss", loss);
    vg_optimizer *opt = vg_optimizer_new_sgd(fl.learning_rate);
    vg_output global_step = vg_variable_new(g, "global_step", vg_const_i64(g, 0, NULL), 0).ref;
    vg_graph_add_to_collection(g, VG_GLOBAL_STEP, global_step);
    /* optimizer.minimize: on more than one worker rank it averages the gradients */
    vg_op *train_op = vg_optimizer_minimize(opt, g, loss, NULL, 0, global_step, NULL);
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "graph: %s\n", st.msg);
        return 1;
    }
    vg_mts_options o = {0};
    o.not_chief = fl.task_index > 0; /* is_chief=(FLAGS.task_index == 0) */
    o.checkpoint_dir = fl.train_dir;
    o.no_step_counter = true;
    vg_monitored_session *sess = fl.job_name ? vg_distributed_training_session_new(g, target, &o, &st)
                                             : vg_monitored_training_session_new(g, &o, &st);
    if (!sess) {
        fprintf(stderr, "session: %s\n", st.msg);
        return 1;
    }
    vg_run_args a = {0};
    a.fetches = &loss;
    a.nfetches = 1;
    a.targets = &train_op;
    a.ntargets = 1;
    vg_code rc = VG_OK;
    double last = NAN;
    int64_t steps = 0;
    while (rc == VG_OK && !vg_monitored_session_should_stop(sess)) { /* sess.run(train_op) */
        vg_tensor *out = NULL;
        rc = vg_monitored_session_run(sess, &a, &out, NULL, &st);
        if (rc == VG_OK) {
            last = vg_tensor_scalar(out);
            steps++;
            vg_tensor_free(out);
        }
    }
    rc = vg_monitored_session_end(sess, rc, &st); /* OUT_OF_RANGE at the data's end: a clean exit */
    vg_monitored_session_free(sess);
    if (rc != VG_OK) fprintf(stderr, "training: %s: %s\n", vg_code_name(rc), st.msg);
    if (!fl.job_name || fl.task_index == 0) printf("steps %lld\nfinal loss %.6f\n", (long long)steps, last);
    vg_server_free(server);
    vg_cluster_spec_free(cluster_spec);
    vg_optimizer_free(opt);
    vg_file_writer_cache_clear();
    vg_graph_free(g);
    tf1_remove_tmpdir(tmp);
    vg_dist_finalize(&st);
    return rc == VG_OK ? 0 : 1;
}
