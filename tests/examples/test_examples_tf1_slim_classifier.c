/* test_examples_tf1_slim_classifier.c - the TF-slim image classifier port
 * (examples/tf1/slim_classifier: train_image_classifier.py, nets/mobilenet_v1.py,
 * nets/resnet_v1.py + resnet_utils.py, nets_factory.py, inception_preprocessing.py):
 *   - resnet_v1_50 built through nets_factory: its model variables are the names and
 *     shapes of the Python (listed by hand from resnet_v1.py / resnet_utils.py), 267 of
 *     them (53 convolutions with a batch norm of 4 variables, logits weights and biases);
 *   - a TFRecord of 64x64 JPEGs in slim's Example layout (image/encoded, image/format,
 *     image/class/label) written here, three classes of distinct colours and patterns;
 *     train_image_classifier_main trains mobilenet_v1_025 on it (64x64, batch 16, 120
 *     steps, the script's default RMSProp and exponential decay, epsilon 0.01, moving
 *     averages) with the inception preprocessing (distorted bounding-box crops, flips,
 *     colour distortion): the median loss of the last 20 steps is below half of chance
 *     (ln 3; measured 0.12-0.23 from about 1.1), the checkpoint holds slim's variable
 *     names and the moving averages;
 *   - warm start: a second run with --checkpoint_path (the first run's directory),
 *     --checkpoint_exclude_scopes=MobilenetV1/Logits, 4 classes and
 *     --trainable_scopes=MobilenetV1/Logits: new logits of the new shape, the body
 *     restored (a weight equals the first checkpoint's, bit for bit);
 *   - resnet_v1_50 trains 2 steps through the program (tiny images);
 *   - slim.variance_scaling_initializer (vg_init_variance_scaling, new for
 *     resnet_arg_scope): the spread of resnet_v1_50/conv1/weights and of the uniform
 *     FAN_AVG and truncated FAN_OUT forms against sqrt(3 f / n) and sqrt(1.3 f / n). */
#include "../examples/tf1/slim_classifier/inception_preprocessing.c"
#include "../examples/tf1/slim_classifier/mobilenet_v1.c"
#include "../examples/tf1/slim_classifier/nets_factory.c"
#include "../examples/tf1/slim_classifier/resnet_utils.c"
#include "../examples/tf1/slim_classifier/resnet_v1.c"
#include "example_test_util.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[512];
static char g_out[1 << 21];

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double urand(void) { return ex_urand(&rs); }

/* ---- resnet_v1_50's variables, against resnet_v1.py ---- */
static void test_resnet_v1_50_names(void) {
    vg_graph *g = vg_graph_new();
    network_fn fn;
    vg_status st;
    CHECK_OK(nets_factory_get_network_fn("resnet_v1_50", 5, 0.0001, true, &fn, &st), &st);
    CHECK_EQ_INT(fn.default_image_size, 224);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 64, 64, 3}, 4, "images");
    end_points ep = {0};
    vg_output logits = network_fn_apply(g, &fn, x, &ep);
    CHECK_CODE(vg_graph_status(g, &st), VG_OK);
    CHECK(logits.op != NULL);
    vg_shape ls = vg_output_shape(logits);
    CHECK(ls.ndims == 2 && ls.dims[0] == 2 && ls.dims[1] == 5);
    /* 53 convolutions (conv1, 16 units x 3, 4 shortcuts) x (weights + BatchNorm beta, gamma,
     * moving_mean, moving_variance) + logits weights, biases */
    int n = vg_slim_get_model_variables(g, NULL, NULL, 0);
    CHECK_EQ_INT(n, 53 * 5 + 2);
    static const struct { const char *name; int64_t dims[4]; int nd; } want[] = {
        {"resnet_v1_50/conv1/weights", {7, 7, 3, 64}, 4},
        {"resnet_v1_50/conv1/BatchNorm/beta", {64}, 1},
        {"resnet_v1_50/conv1/BatchNorm/gamma", {64}, 1},
        {"resnet_v1_50/conv1/BatchNorm/moving_mean", {64}, 1},
        {"resnet_v1_50/conv1/BatchNorm/moving_variance", {64}, 1},
        {"resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/weights", {1, 1, 64, 256}, 4},
        {"resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/BatchNorm/gamma", {256}, 1},
        {"resnet_v1_50/block1/unit_1/bottleneck_v1/conv1/weights", {1, 1, 64, 64}, 4},
        {"resnet_v1_50/block1/unit_1/bottleneck_v1/conv2/weights", {3, 3, 64, 64}, 4},
        {"resnet_v1_50/block1/unit_1/bottleneck_v1/conv3/weights", {1, 1, 64, 256}, 4},
        {"resnet_v1_50/block1/unit_3/bottleneck_v1/conv2/weights", {3, 3, 64, 64}, 4},
        {"resnet_v1_50/block2/unit_1/bottleneck_v1/shortcut/weights", {1, 1, 256, 512}, 4},
        {"resnet_v1_50/block2/unit_4/bottleneck_v1/conv3/BatchNorm/moving_variance", {512}, 1},
        {"resnet_v1_50/block3/unit_6/bottleneck_v1/conv2/weights", {3, 3, 256, 256}, 4},
        {"resnet_v1_50/block4/unit_1/bottleneck_v1/shortcut/weights", {1, 1, 1024, 2048}, 4},
        {"resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/weights", {1, 1, 512, 2048}, 4},
        {"resnet_v1_50/logits/weights", {1, 1, 2048, 5}, 4},
        {"resnet_v1_50/logits/biases", {5}, 1},
    };
    vg_output *mv = calloc((size_t)n + 1, sizeof *mv);
    vg_slim_get_model_variables(g, NULL, mv, n);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int found = -1;
        for (int i = 0; i < n; i++)
            if (strcmp(vg_op_name(mv[i].op), want[k].name) == 0) found = i;
        if (found < 0) fprintf(stderr, "missing %s\n", want[k].name);
        CHECK(found >= 0);
        if (found < 0) continue;
        vg_shape s = vg_output_shape(mv[found]);
        CHECK_EQ_INT(s.ndims, want[k].nd);
        for (int d = 0; d < want[k].nd && d < s.ndims; d++) CHECK_EQ_INT(s.dims[d], want[k].dims[d]);
    }
    /* no shortcut convolution where the depth is unchanged, no block4 stride */
    for (int i = 0; i < n; i++) {
        const char *nm = vg_op_name(mv[i].op);
        CHECK(strstr(nm, "unit_2/bottleneck_v1/shortcut") == NULL);
        CHECK(strncmp(nm, "resnet_v1_50/", 13) == 0);
    }
    /* 64x64 input: strides 2 (conv1), 2 (pool1), 2, 2, 2 (blocks 1-3) -> 2x2 at block4 */
    vg_output b4 = end_points_get(&ep, "resnet_v1_50/block4");
    CHECK(b4.op != NULL);
    if (b4.op) {
        vg_shape s = vg_output_shape(b4);
        CHECK(s.ndims == 4 && s.dims[1] == 2 && s.dims[2] == 2 && s.dims[3] == 2048);
    }
    free(mv);
    vg_graph_free(g);
    /* unknown names: TF's ValueError */
    CHECK_STATUS(nets_factory_get_network_fn("vgg_16", 5, 0, true, &fn, &st), &st, VG_INVALID_ARGUMENT,
        "Name of network unknown vgg_16");
    preprocessing_fn pf;
    CHECK_CODE(preprocessing_factory_get("resnet_v1_50", &pf, &st), VG_UNIMPLEMENTED);
    CHECK_CODE(preprocessing_factory_get("bogus", &pf, &st), VG_INVALID_ARGUMENT);
    CHECK_OK(preprocessing_factory_get("mobilenet_v1", &pf, &st), &st);
}

/* ---- mobilenet_v1's variable names and the depth multiplier ---- */
static void test_mobilenet_v1_names(void) {
    vg_graph *g = vg_graph_new();
    network_fn fn;
    vg_status st;
    CHECK_OK(nets_factory_get_network_fn("mobilenet_v1_025", 7, 4e-5, true, &fn, &st), &st);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 64, 64, 3}, 4, "images");
    end_points ep = {0};
    vg_output logits = network_fn_apply(g, &fn, x, &ep);
    CHECK_CODE(vg_graph_status(g, &st), VG_OK);
    vg_shape ls = vg_output_shape(logits);
    CHECK(ls.ndims == 2 && ls.dims[1] == 7);
    /* Conv2d_0 + 13 x (depthwise, pointwise), each with BatchNorm beta, gamma (scale=True),
     * moving_mean, moving_variance: 27 x 5, + logits weights and biases */
    CHECK_EQ_INT(vg_slim_get_model_variables(g, NULL, NULL, 0), 27 * 5 + 2);
    static const struct { const char *name; int64_t dims[4]; int nd; } want[] = {
        {"MobilenetV1/Conv2d_0/weights", {3, 3, 3, 8}, 4}, /* max(int(32 * 0.25), 8) */
        {"MobilenetV1/Conv2d_0/BatchNorm/gamma", {8}, 1},
        {"MobilenetV1/Conv2d_0/BatchNorm/moving_mean", {8}, 1},
        {"MobilenetV1/Conv2d_1_depthwise/depthwise_weights", {3, 3, 8, 1}, 4},
        {"MobilenetV1/Conv2d_1_pointwise/weights", {1, 1, 8, 16}, 4},
        {"MobilenetV1/Conv2d_13_pointwise/weights", {1, 1, 256, 256}, 4},
        {"MobilenetV1/Conv2d_13_pointwise/BatchNorm/moving_variance", {256}, 1},
        {"MobilenetV1/Logits/Conv2d_1c_1x1/weights", {1, 1, 256, 7}, 4},
        {"MobilenetV1/Logits/Conv2d_1c_1x1/biases", {7}, 1},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        vg_op *op = vg_graph_op_by_name(g, want[k].name);
        if (!op) fprintf(stderr, "missing %s\n", want[k].name);
        CHECK(op != NULL);
        if (!op) continue;
        vg_shape s = vg_output_shape(vg_out(op, 0));
        CHECK_EQ_INT(s.ndims, want[k].nd);
        for (int d = 0; d < want[k].nd && d < s.ndims; d++) CHECK_EQ_INT(s.dims[d], want[k].dims[d]);
    }
    /* the depthwise convolutions carry no regularizer (regularize_depthwise=False): 14
     * conv weights regularized (Conv2d_0, 13 pointwise) and the logits */
    int nreg = 0;
    vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &nreg);
    CHECK_EQ_INT(nreg, 15);
    CHECK(end_points_get(&ep, "Conv2d_13_pointwise").op != NULL);
    CHECK(end_points_get(&ep, "AvgPool_1a").op != NULL);
    CHECK(end_points_get(&ep, "Predictions").op != NULL);
    vg_graph_free(g);
}

/* ---- slim.variance_scaling_initializer (resnet_arg_scope's), vg_init_variance_scaling ---- */
static void moments_of(vg_graph *g, vg_output v, double *sd, double *maxabs, int64_t *n) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_op *init = vg_global_variables_initializer(g);
    vg_tensor *t = NULL;
    *sd = *maxabs = 0, *n = 0;
    if (!s || vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, &st) != VG_OK ||
        vg_session_run(s, NULL, NULL, NULL, 0, &v, &t, 1, NULL, 0, NULL, &st) != VG_OK) {
        fprintf(stderr, "init failed: %s\n", st.msg);
        CHECK(0);
        vg_session_free(s);
        return;
    }
    const float *p = vg_tensor_data(t);
    double s1 = 0, s2 = 0;
    *n = vg_tensor_num_elements(t);
    for (int64_t i = 0; i < *n; i++) {
        s1 += p[i], s2 += (double)p[i] * p[i];
        if (fabs(p[i]) > *maxabs) *maxabs = fabs(p[i]);
    }
    *sd = sqrt(s2 / (double)*n - (s1 / (double)*n) * (s1 / (double)*n));
    vg_tensor_free(t);
    vg_session_free(s);
}

static void test_variance_scaling(void) {
    /* resnet_v1_50/conv1/weights [7, 7, 3, 64]: fan_in 147, truncated normal of stddev
     * sqrt(1.3 * 2 / 147); a normal truncated at 2 sigma has 0.8796 of the stddev */
    vg_graph *g = vg_graph_new();
    network_fn fn;
    vg_status st;
    CHECK_OK(nets_factory_get_network_fn("resnet_v1_50", 5, 0.0001, true, &fn, &st), &st);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 32, 32, 3}, 4, "images");
    network_fn_apply(g, &fn, x, NULL);
    vg_op *w = vg_graph_op_by_name(g, "resnet_v1_50/conv1/weights");
    CHECK(w != NULL);
    double sd, mx;
    int64_t n;
    double s = sqrt(2.6 / 147.0);
    if (w) {
        moments_of(g, vg_out(w, 0), &sd, &mx, &n);
        CHECK_EQ_INT(n, 7 * 7 * 3 * 64);
        CHECK(fabs(sd / (0.8796 * s) - 1) < 0.04); /* relative */
        CHECK(mx <= 2 * s + 1e-6);
    }
    vg_graph_free(g);
    /* the uniform FAN_AVG and the truncated FAN_OUT forms, by hand */
    g = vg_graph_new();
    int64_t d[4] = {3, 3, 64, 128}; /* fan_in 576, fan_out 1152 */
    vg_get_variable_opts o = {.dt = VG_FLOAT, .dims = d, .ndims = 4, .has_init = true,
                              .init = vg_init_variance_scaling(1.0, VG_FAN_AVG, true, 0)};
    vg_variable u = vg_get_variable_ex(g, "u", &o);
    o.init = vg_init_variance_scaling(2.0, VG_FAN_OUT, false, 0);
    vg_variable t = vg_get_variable_ex(g, "t", &o);
    double limit = sqrt(3.0 * 1.0 / 864.0);
    moments_of(g, u.ref, &sd, &mx, &n);
    CHECK(mx <= limit + 1e-6 && mx > 0.95 * limit);
    CHECK(fabs(sd / (limit / sqrt(3.0)) - 1) < 0.03);
    s = sqrt(1.3 * 2.0 / 1152.0);
    moments_of(g, t.ref, &sd, &mx, &n);
    CHECK(fabs(sd / (0.8796 * s) - 1) < 0.03);
    CHECK(mx <= 2 * s + 1e-6);
    vg_graph_free(g);
}

/* ---- the data set ---- */

/* class 0: red, horizontal stripes; class 1: green, checkerboard; class 2: blue, diagonal */
static void draw(int cls, uint8_t *img) {
    double phase = urand() * 8, bright = 0.6 + 0.4 * urand();
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++) {
            double v;
            if (cls == 0) v = ((int)((y + phase) / 4) % 2) ? 1.0 : 0.35;
            else if (cls == 1) v = (((int)((x + phase) / 8) + (int)((y + phase) / 8)) % 2) ? 1.0 : 0.35;
            else v = ((int)((x + y + phase) / 6) % 2) ? 1.0 : 0.35;
            for (int c = 0; c < 3; c++) {
                double base = (c == cls) ? 220 * v * bright : 40 * urand();
                double p = base + 12 * (urand() - 0.5);
                img[(y * 64 + x) * 3 + c] = (uint8_t)(p < 0 ? 0 : p > 255 ? 255 : p);
            }
        }
}

#define PER_CLASS 40
static int write_dataset(const char *dir) {
    mkdir(dir, 0755);
    vg_graph *g = vg_graph_new();
    vg_output ph = vg_placeholder(g, VG_UINT8, (int64_t[]){64, 64, 3}, 3, "img");
    vg_output enc = vg_encode_jpeg(g, ph, "rgb", 95, "jpeg");
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) return 1;
    vg_tensor *img = vg_tensor_new(VG_UINT8, (int64_t[]){64, 64, 3}, 3, &st);
    int rc = 0;
    for (int shard = 0; shard < 2 && !rc; shard++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/custom_train_%05d-of-00002.tfrecord", dir, shard);
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
        if (!w) return 1;
        for (int i = 0; i < 3 * PER_CLASS / 2 && !rc; i++) {
            int cls = i % 3;
            draw(cls, vg_tensor_data(img));
            vg_tensor *out = NULL;
            if (vg_session_run(s, NULL, &ph, &img, 1, &enc, &out, 1, NULL, 0, NULL, &st) != VG_OK) {
                rc = 1;
                break;
            }
            size_t len;
            const char *bytes = vg_tensor_string(out, 0, &len);
            /* dataset_utils.image_to_tfexample(image_data, b'jpg', height, width, class_id) */
            vg_example *ex = vg_example_new();
            const char *fmt = "jpeg";
            size_t fl = 4;
            int64_t h = 64, wd = 64, label = cls;
            vg_example_add_bytes(ex, "image/encoded", &bytes, &len, 1, &st);
            vg_example_add_bytes(ex, "image/format", &fmt, &fl, 1, &st);
            vg_example_add_int64(ex, "image/class/label", &label, 1, &st);
            vg_example_add_int64(ex, "image/height", &h, 1, &st);
            vg_example_add_int64(ex, "image/width", &wd, 1, &st);
            size_t n;
            const void *data = vg_example_serialize(ex, &n, &st);
            if (!data || vg_tfrecord_writer_write(w, data, n, &st) != VG_OK) rc = 1;
            vg_example_free(ex);
            vg_tensor_free(out);
        }
        if (vg_tfrecord_writer_close(w, &st) != VG_OK) rc = 1;
    }
    vg_tensor_free(img);
    vg_session_free(s);
    vg_graph_free(g);
    return rc;
}

/* "global step N: loss = L" lines of slim.learning.train's log */
static int parse_losses(const char *out, double *losses, int max) {
    int n = 0;
    const char *p = out;
    while ((p = strstr(p, "global step ")) != NULL && n < max) {
        long step;
        double l;
        if (sscanf(p, "global step %ld: loss = %lf", &step, &l) == 2) losses[n++] = l;
        p += 12;
    }
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(const double *v, int n) {
    double t[64];
    memcpy(t, v, sizeof(double) * (size_t)n);
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static vg_tensor *ckpt_read(const char *dir, const char *name, vg_status *st) {
    char prefix[1024];
    if (!vg_latest_checkpoint(dir, prefix, sizeof prefix)) {
        vg_status_set(st, VG_NOT_FOUND, "no checkpoint in %s", dir);
        return NULL;
    }
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, st);
    if (!r) return NULL;
    vg_tensor *t = vg_checkpoint_reader_read(r, name, st);
    vg_checkpoint_reader_free(r);
    return t;
}

#define STEPS 120
static void test_train_and_warm_start(void) {
    char prog[1024], cmd[8192], data[700], dir1[700], dir2[700], dir3[700];
    snprintf(prog, sizeof prog, "%s/train_image_classifier_main", VG_BINDIR);
    if (!ex_built(prog)) return;
    snprintf(data, sizeof data, "%s/data", g_dir);
    snprintf(dir1, sizeof dir1, "%s/train1", g_dir);
    snprintf(dir2, sizeof dir2, "%s/train2", g_dir);
    snprintf(dir3, sizeof dir3, "%s/train3", g_dir);
    CHECK_EQ_INT(write_dataset(data), 0);
    const char *common = "--dataset_name=custom --dataset_split_name=train --dataset_num_samples=120 "
                         "--model_name=mobilenet_v1_025 --preprocessing_name=mobilenet_v1 --train_image_size=64 "
                         "--batch_size=16 --num_readers=2 --num_preprocessing_threads=2 --log_every_n_steps=1";
    snprintf(cmd, sizeof cmd,
             "'%s' %s --dataset_dir=%s --train_dir=%s --dataset_num_classes=3 --max_number_of_steps=%d "
             "--learning_rate=0.01 --opt_epsilon=0.01 --moving_average_decay=0.99",
             prog, common, data, dir1, STEPS);
    int rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fputs(g_out, stderr);
    CHECK_EQ_INT(rc, 0);
    static double losses[4000];
    int n = parse_losses(g_out, losses, 4000);
    CHECK_EQ_INT(n, STEPS);
    if (n >= 30) {
        /* medians: batch-norm training at this learning rate has the odd spike */
        double first = median(losses, 10), last = median(losses + n - 20, 20);
        fprintf(stderr, "slim_classifier: median loss of the first 10 steps %.3f, last 20 %.3f (chance ln 3 = %.3f)\n",
                first, last, log(3.0));
        CHECK(first > 0.8);
        CHECK(last < 0.5 * log(3.0));
    }
    /* slim's variable names in the checkpoint, the moving averages too */
    vg_status st;
    vg_tensor *w0 = ckpt_read(dir1, "MobilenetV1/Conv2d_0/weights", &st);
    CHECK(w0 != NULL);
    if (w0) CHECK_EQ_INT(vg_tensor_num_elements(w0), 3 * 3 * 3 * 8);
    static const char *names[] = {"MobilenetV1/Conv2d_0/BatchNorm/moving_mean",
                                  "MobilenetV1/Conv2d_7_depthwise/depthwise_weights",
                                  "MobilenetV1/Conv2d_13_pointwise/BatchNorm/gamma",
                                  "MobilenetV1/Logits/Conv2d_1c_1x1/biases",
                                  "MobilenetV1/Conv2d_0/weights/ExponentialMovingAverage",
                                  "global_step"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        vg_tensor *t = ckpt_read(dir1, names[i], &st);
        if (!t) fprintf(stderr, "checkpoint lacks %s: %s\n", names[i], st.msg);
        CHECK(t != NULL);
        if (t && strcmp(names[i], "global_step") == 0) CHECK_EQ_INT(*(const int64_t *)vg_tensor_data(t), STEPS);
        if (t && strstr(names[i], "biases")) CHECK_EQ_INT(vg_tensor_num_elements(t), 3);
        vg_tensor_free(t);
    }
    char ev[1200];
    snprintf(ev, sizeof ev, "ls %s/events.out.tfevents.* >/dev/null 2>&1", dir1);
    CHECK_EQ_INT(system(ev), 0);
    /* the script's summaries: inception_preprocessing's images (draw_bounding_boxes), the
     * learning rate, the losses, activations, the queues */
    static const char *tags[] = {"image_with_bounding_boxes/image/0", "images_with_distorted_bounding_box/image/0",
                                 "final_distorted_image/image/0", "learning_rate", "total_loss", "Losses/clone_loss",
                                 "sparsity/Conv2d_13_pointwise", "activations/Logits",
                                 "parallel_read/fraction_of_320_full", "prefetch_queue/fraction_of_2_full"};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        snprintf(ev, sizeof ev, "grep -a -q '%s' %s/events.out.tfevents.*", tags[i], dir1);
        if (system(ev) != 0) fprintf(stderr, "no summary %s\n", tags[i]);
        CHECK_EQ_INT(system(ev), 0);
    }

    /* warm start: 4 classes, new logits, the rest restored; only the logits train */
    snprintf(cmd, sizeof cmd,
             "'%s' %s --dataset_dir=%s --train_dir=%s --dataset_num_classes=4 --max_number_of_steps=3 "
             "--checkpoint_path=%s --checkpoint_exclude_scopes=MobilenetV1/Logits "
             "--trainable_scopes=MobilenetV1/Logits --optimizer=sgd",
             prog, common, data, dir2, dir1);
    rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fputs(g_out, stderr);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(g_out, "Fine-tuning from ");
    vg_tensor *w1 = ckpt_read(dir2, "MobilenetV1/Conv2d_0/weights", &st);
    CHECK(w1 != NULL);
    if (w0 && w1) {
        CHECK_EQ_INT(vg_tensor_num_elements(w1), vg_tensor_num_elements(w0));
        CHECK(memcmp(vg_tensor_data(w0), vg_tensor_data(w1), sizeof(float) * (size_t)vg_tensor_num_elements(w0)) == 0);
    }
    vg_tensor *lw = ckpt_read(dir2, "MobilenetV1/Logits/Conv2d_1c_1x1/weights", &st);
    CHECK(lw != NULL);
    if (lw) CHECK_EQ_INT(vg_tensor_num_elements(lw), 256 * 4);
    vg_tensor *gs = ckpt_read(dir2, "global_step", &st);
    CHECK(gs && *(const int64_t *)vg_tensor_data(gs) == 3); /* the global step is not restored (not a model variable) */
    vg_tensor_free(gs), vg_tensor_free(lw), vg_tensor_free(w1), vg_tensor_free(w0);
    /* without the exclusion the logits' shapes differ: the restore fails */
    snprintf(cmd, sizeof cmd, "'%s' %s --dataset_dir=%s --train_dir=%s/x --dataset_num_classes=4 "
             "--max_number_of_steps=1 --checkpoint_path=%s",
             prog, common, data, dir2, dir1);
    rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    CHECK(rc != 0);
    CHECK_STR_CONTAINS(g_out, "MobilenetV1/Logits/Conv2d_1c_1x1/");
    CHECK_STR_CONTAINS(g_out, "Assign requires shapes of both tensors to match");

    /* resnet_v1_50 through nets_factory, 2 steps on 32x32 crops (inception preprocessing) */
    snprintf(cmd, sizeof cmd,
             "'%s' --dataset_name=custom --dataset_num_samples=120 --dataset_num_classes=3 --dataset_dir=%s "
             "--train_dir=%s --model_name=resnet_v1_50 --preprocessing_name=inception --train_image_size=32 "
             "--batch_size=2 --num_readers=1 --num_preprocessing_threads=1 --max_number_of_steps=2 "
             "--optimizer=momentum --log_every_n_steps=1",
             prog, data, dir3);
    rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fputs(g_out, stderr);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(parse_losses(g_out, losses, 4000), 2);
    vg_tensor *rw = ckpt_read(dir3, "resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/weights", &st);
    CHECK(rw && vg_tensor_num_elements(rw) == 512 * 2048);
    vg_tensor_free(rw);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "slimcls")[0]) return 1;
    RUN_TEST(test_resnet_v1_50_names);
    RUN_TEST(test_mobilenet_v1_names);
    RUN_TEST(test_variance_scaling);
    RUN_TEST(test_train_and_warm_start);
    if (!getenv("KEEP")) tu_rmrf(g_dir);
    TEST_MAIN_END();
}
