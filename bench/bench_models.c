/* bench_models.c - training-step time of the models real TF1 programs train, built with
 * vigil's public TF1-style API, side by side with the same model in PyTorch
 * (bench/peers/torch_models.py, Debian's python3-torch) in the same run, rounds
 * interleaved (issue 30's model suite; models are added here one by one).
 *
 *   mobilenet  MobileNet v1 as slim's nets/mobilenet_v1.py lays it out (depth multiplier
 *              1): Conv2d_0 3x3/2 x32, then 13 depthwise separable blocks (depthwise 3x3,
 *              batch norm, ReLU6, pointwise 1x1, batch norm, ReLU6; strides and depths of
 *              MOBILENETV1_CONV_DEFS), global average pool, Logits 1x1 conv to the classes,
 *              sparse softmax cross-entropy, RMSProp (decay 0.9, momentum 0.9, epsilon
 *              1.0: train_image_classifier.py's defaults) at learning rate 0.01; slim's
 *              batch norm (fused, center, no scale, decay 0.9997, epsilon 0.001),
 *              convolutions without biases; 128x128x3 inputs, 1000 classes, batch 32
 *              (train_image_classifier.py's default), random data.
 *   cifar10    the CIFAR-10 tutorial of examples/tf1/cifar10 (its own cifar10_inference,
 *              cifar10_loss and cifar10_train, linked in: conv 5x5x64, max pool 3x3/2,
 *              LRN, conv 5x5x64, LRN, pool, dense 384, 192, 10, weight decay, SGD with
 *              exponential decay and the variables' moving averages), 24x24x3, batch
 *              128 (FLAGS.batch_size), random data fed in place of its queue pipeline.
 *   resnet     the CIFAR ResNet of examples/tf1/resnet (resnet_model.c linked in:
 *              ResNet-32, 5 residual units per stage, 16/32/64 filters, its own batch
 *              norm from moments with moving averages as extra train ops, leaky ReLU
 *              0.1, weight decay 2e-4, momentum 0.9), 32x32x3, batch 128 (resnet_main's
 *              train mode), one-hot labels.
 *
 * Usage: bench_models [--model mobilenet] [--threads N] [--batch B] [--size S] [--steps S]
 *                     [--rounds R] [--no-peer] [--profile]
 * --profile: after the rounds, the steps again at VG_TRACE_FULL and, per op type, the
 * median per step of its nodes' summed time and its share of the summed step (stderr).
 * Peers: PyTorch in Python (bench/peers/torch_models.py) and libtorch, PyTorch's C++ API
 * (bench/peers/libtorch_models.cpp, built where CMake finds Debian's libtorch-dev), each
 * run once per round after vigil's steps.
 * Prints one JSON line per model: per-round medians and the median of rounds for vigil and
 * both peers, ratio_pytorch / ratio_libtorch = vigil / peer. */
#include "roofline.h"
#include "../examples/tf1/cifar10/cifar10.h"
#include "../examples/tf1/resnet/resnet_model.h"
void cifar10_free_averages(void); /* examples/tf1/cifar10/cifar10.c */
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return v[n / 2];
}
static void die(const char *what, const vg_status *st) {
    fprintf(stderr, "bench_models: %s: %s\n", what, st ? st->msg : "");
    exit(1);
}

#include "torch_peer.h"

#ifndef VG_LIBTORCH_PEER
#define VG_LIBTORCH_PEER "" /* libtorch-dev not found when configured */
#endif

/* The Python peer (native = false) or the libtorch one; median ms, -1 when none. */
static double run_peer(bool native, const char *model, int threads, int batch, int size, int steps) {
    char cmd[1024], line[4096];
    if (native && !VG_LIBTORCH_PEER[0]) return -1;
    if (native)
        snprintf(cmd, sizeof cmd, "%s --model %s --threads %d --batch %d --size %d --steps %d 2>/dev/null",
                 VG_LIBTORCH_PEER, model, threads, batch, size, steps);
    else
        snprintf(cmd, sizeof cmd, "%s %s --model %s --threads %d --batch %d --size %d --steps %d 2>/dev/null",
                 bench_python(), VG_SRCDIR "/bench/peers/torch_models.py", model, threads, batch, size, steps);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    double med = -1;
    while (fgets(line, sizeof line, f)) {
        char *m = strstr(line, "\"median_ms\": ");
        if (m) med = atof(m + 13);
    }
    pclose(f);
    return med;
}

/* ---- MobileNet v1 (slim) ---- */

static vg_output bn_relu6(vg_graph *g, vg_output x, vg_output training) {
    vg_layer_config c = vg_layer_config_default(VG_LAYER_BATCH_NORMALIZATION);
    c.name = "BatchNorm";
    c.momentum = 0.9997;
    c.epsilon = 0.001;
    c.scale = false;
    return vg_relu6(g, vg_layers_apply(g, &c, x, training), NULL);
}

static vg_output conv(vg_graph *g, vg_output x, int64_t filters, int k, int stride) {
    vg_layer_config c = vg_layer_config_default(VG_LAYER_CONV2D);
    c.name = "Conv2d";
    c.units = filters;
    c.kernel_size[0] = c.kernel_size[1] = k;
    c.strides[0] = c.strides[1] = stride;
    c.padding = "same";
    c.use_bias = false;
    c.kernel_initializer = vg_init_truncated_normal(0, 0.09, 0);
    return vg_layers_apply(g, &c, x, (vg_output){NULL, 0});
}

static vg_output depthwise(vg_graph *g, vg_output x, int64_t ch, int stride) {
    vg_get_variable_opts o = {.dt = VG_FLOAT, .dims = (int64_t[]){3, 3, ch, 1}, .ndims = 4, .has_init = true,
                              .init = vg_init_truncated_normal(0, 0.09, 0)};
    vg_variable w = vg_get_variable_ex(g, "depthwise_weights", &o);
    int64_t st[4] = {1, stride, stride, 1};
    return vg_depthwise_conv2d_native(g, x, w.read, st, "SAME", "depthwise");
}

static vg_output mobilenet_v1(vg_graph *g, vg_output x, vg_output training, int classes) {
    static const struct { int stride; int64_t depth; } defs[13] = {
        {1, 64}, {2, 128}, {1, 128}, {2, 256}, {1, 256}, {2, 512}, {1, 512},
        {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024}};
    vg_variable_scope_push(g, "MobilenetV1", NULL);
    vg_variable_scope_push(g, "Conv2d_0", NULL);
    vg_output h = bn_relu6(g, conv(g, x, 32, 3, 2), training);
    vg_variable_scope_pop(g);
    int64_t ch = 32;
    for (int i = 0; i < 13; i++) {
        char name[64];
        snprintf(name, sizeof name, "Conv2d_%d_depthwise", i + 1);
        vg_variable_scope_push(g, name, NULL);
        h = bn_relu6(g, depthwise(g, h, ch, defs[i].stride), training);
        vg_variable_scope_pop(g);
        snprintf(name, sizeof name, "Conv2d_%d_pointwise", i + 1);
        vg_variable_scope_push(g, name, NULL);
        h = bn_relu6(g, conv(g, h, defs[i].depth, 1, 1), training);
        vg_variable_scope_pop(g);
        ch = defs[i].depth;
    }
    vg_variable_scope_push(g, "Logits", NULL);
    h = vg_reduce_mean(g, h, (int32_t[]){1, 2}, 2, true, "AvgPool_1a");
    vg_layer_config c = vg_layer_config_default(VG_LAYER_CONV2D);
    c.name = "Conv2d_1c_1x1";
    c.units = classes;
    c.kernel_size[0] = c.kernel_size[1] = 1;
    c.kernel_initializer = vg_init_truncated_normal(0, 0.09, 0);
    h = vg_layers_apply(g, &c, h, (vg_output){NULL, 0});
    h = vg_squeeze(g, h, (int32_t[]){1, 2}, 2, "SpatialSqueeze");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    return h;
}

/* --profile: per op type, the median over steps of the summed time of its nodes, and
 * the work the type's nodes do per step: flops of convolutions and matrix products
 * (direct computation) and the compulsory bytes of every node (each input read once,
 * each output written once, static shapes; float32). The roofline time of a type is
 * max(flops / FMA peak, bytes / bandwidth): whichever bounds it. */
typedef struct op_row { char op[64]; double *t; double med, flops, bytes; } op_row;

static double nelem(vg_output o) {
    vg_shape s = vg_output_shape(o);
    double n = 1;
    for (int i = 0; i < s.ndims; i++) n *= s.dims[i] > 0 ? (double)s.dims[i] : 1;
    return s.ndims < 0 ? 0 : n;
}

static int64_t dim(vg_output o, int i) {
    vg_shape s = vg_output_shape(o);
    return i < s.ndims && s.dims[i] > 0 ? s.dims[i] : 0;
}

static void node_work(const vg_graph *g, const char *name, const char *type, double *flops, double *bytes) {
    *flops = *bytes = 0;
    vg_op *op = vg_graph_op_by_name(g, name);
    if (!op) return;
    const char *t = vg_op_type(op); /* the graph's op (a fused node keeps its name) */
    if (!strcmp(t, "Conv2D") || !strcmp(t, "DepthwiseConv2dNative")) {
        vg_output y = vg_out(op, 0), f = vg_op_input(op, 1);
        /* per output element: KH*KW*Ci multiply-adds (depthwise: KH*KW) */
        *flops = 2.0 * nelem(y) * (double)(dim(f, 0) * dim(f, 1)) * (!strcmp(t, "Conv2D") ? (double)dim(f, 2) : 1.0);
    } else if (!strcmp(t, "Conv2DBackpropInput") || !strcmp(t, "DepthwiseConv2dNativeBackpropInput")) {
        vg_output dy = vg_op_input(op, 2), f = vg_op_input(op, 1);
        *flops = 2.0 * nelem(dy) * (double)(dim(f, 0) * dim(f, 1)) * (!strcmp(t, "Conv2DBackpropInput") ? (double)dim(f, 2) : 1.0);
    } else if (!strcmp(t, "Conv2DBackpropFilter") || !strcmp(t, "DepthwiseConv2dNativeBackpropFilter")) {
        vg_output dy = vg_op_input(op, 2), df = vg_out(op, 0);
        *flops = 2.0 * nelem(dy) * (double)(dim(df, 0) * dim(df, 1)) *
                 (!strcmp(t, "Conv2DBackpropFilter") ? (double)dim(df, 2) : 1.0);
    } else if (!strcmp(t, "MatMul")) {
        vg_output a = vg_op_input(op, 0), y = vg_out(op, 0);
        bool ta = false;
        vg_op_attr_bool(op, "transpose_a", &ta);
        *flops = 2.0 * nelem(y) * (double)dim(a, ta ? 0 : 1);
    }
    for (int i = 0; i < vg_op_num_inputs(op); i++) *bytes += 4 * nelem(vg_op_input(op, i));
    for (int i = 0; i < vg_op_num_outputs(op); i++) *bytes += 4 * nelem(vg_out(op, i));
    /* a fused gradient also reads the activation's output (the same size as x) */
    if (strstr(type, "_VigilFusedBatchNormGrad")) *bytes += 4 * nelem(vg_op_input(op, 1));
}
static int cmp_op(const void *a, const void *b) {
    double x = ((const op_row *)a)->med, y = ((const op_row *)b)->med;
    return x < y ? 1 : x > y ? -1 : 0;
}
static void profile(const vg_graph *g, vg_session *s, int threads, const vg_output *feeds, vg_tensor **fv,
                    vg_output train, vg_op *train_op, int steps) {
    vg_run_options ro = vg_run_options_default();
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    op_row rows[256];
    int nrows = 0;
    double *step = calloc((size_t)steps, sizeof(double)), *sum = calloc((size_t)steps, sizeof(double));
    vg_status st;
    for (int i = 0; i < steps; i++) {
        vg_run_metadata_clear(md);
        double t0 = now_ms();
        vg_tensor *l = NULL;
        if (vg_session_run(s, &ro, feeds, fv, 2, &train, &l, 1, &train_op, train_op ? 1 : 0, md, &st))
            die("profile step", &st);
        vg_tensor_free(l);
        step[i] = now_ms() - t0;
        int n = vg_run_metadata_num_nodes(md);
        for (int k = 0; k < n; k++) {
            const vg_node_stats *ns = vg_run_metadata_node(md, k);
            int r = 0;
            while (r < nrows && strcmp(rows[r].op, ns->op_type)) r++;
            if (r == nrows) {
                if (nrows == 256) continue;
                snprintf(rows[r].op, sizeof rows[r].op, "%s", ns->op_type);
                rows[r].t = calloc((size_t)steps, sizeof(double));
                rows[r].flops = rows[r].bytes = 0;
                nrows++;
            }
            if (i == 0) {
                double fl, by;
                node_work(g, ns->node_name, ns->op_type, &fl, &by);
                rows[r].flops += fl, rows[r].bytes += by;
            }
            double us = (double)(ns->end_us - ns->start_us);
            rows[r].t[i] += us * 1e-3;
            sum[i] += us * 1e-3;
        }
    }
    double tot = median(sum, steps);
    for (int r = 0; r < nrows; r++) rows[r].med = median(rows[r].t, steps);
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_op);
    double peak = rl_core_peak(20, 0.01) * threads, bw = rl_mem_bandwidth(5);
    fprintf(stderr, "profile: traced step %.1f ms (median), node times summed %.1f ms; roofline: %.1f GFLOP/s "
            "(FMA peak x %d thread%s), %.1f GB/s (one core's triad); per op type:\n", median(step, steps), tot, peak,
            threads, threads > 1 ? "s" : "", bw);
    fprintf(stderr, "  %9s  %6s  %-38s %13s %9s  %-6s %s\n", "ms/step", "share", "op type", "GFLOP/s", "GB/s", "bound",
            "of roofline");
    for (int r = 0; r < nrows; r++) {
        if (rows[r].med >= 0.005 * tot) {
            double tf = peak > 0 ? rows[r].flops / peak * 1e-6 : 0, tb = bw > 0 ? rows[r].bytes / bw * 1e-6 : 0;
            fprintf(stderr, "  %9.2f  %5.1f%%  %-38s %13.1f %9.1f  %-6s %.0f%%\n", rows[r].med, 100 * rows[r].med / tot,
                    rows[r].op, rows[r].flops / rows[r].med * 1e-6, rows[r].bytes / rows[r].med * 1e-6,
                    tf >= tb ? "flops" : "memory", 100 * (tf > tb ? tf : tb) / rows[r].med);
        }
        free(rows[r].t);
    }
    free(step), free(sum);
    vg_run_metadata_free(md);
}

int main(int argc, char **argv) {
    const char *model = "mobilenet";
    int threads = 1, batch = 0, size = 0, steps = 5, rounds = 3, classes = 1000;
    bool peer = true, prof = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--size") && i + 1 < argc) size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peer")) peer = false;
        else if (!strcmp(argv[i], "--profile")) prof = true;
        else {
            fprintf(stderr, "usage: bench_models [--model mobilenet|cifar10|resnet] [--threads N] [--batch B] [--size S] "
                            "[--steps S] [--rounds R] [--no-peer] [--profile]\n");
            return 2;
        }
    }
    bool mobilenet = !strcmp(model, "mobilenet"), cifar = !strcmp(model, "cifar10"), resnet = !strcmp(model, "resnet");
    if (!mobilenet && !cifar && !resnet) {
        fprintf(stderr, "bench_models: unknown model %s (mobilenet cifar10 resnet)\n", model);
        return 2;
    }
    if (!batch) batch = mobilenet ? 32 : 128;
    if (!size) size = mobilenet ? 128 : cifar ? IMAGE_SIZE : 32;
    if (!mobilenet) classes = 10;
    if (steps < 1) steps = 1;
    if (rounds < 1) rounds = 1;
    if (rounds > 16) rounds = 16;
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    int64_t xd[4] = {batch, size, size, 3}, yd[2] = {batch, classes};
    vg_dtype ydt = mobilenet ? VG_INT64 : cifar ? VG_INT32 : VG_FLOAT;
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "input");
    vg_output y = vg_placeholder(g, ydt, yd, resnet ? 2 : 1, "labels");
    vg_output train = {NULL, 0}; /* fetched: the loss after a step */
    vg_op *train_op = NULL;      /* run as a target where the program has one */
    vg_optimizer *opt = NULL;
    resnet_model rm;
    if (mobilenet) {
        vg_output logits = mobilenet_v1(g, x, vg_const_bool(g, true, "is_training"), classes);
        vg_output loss = vg_reduce_mean(g, vg_out(vg_sparse_softmax_xent(g, logits, y, NULL), 0), NULL, -1, false, "loss");
        opt = vg_optimizer_new_rmsprop(0.01, 0.9, 0.9, 1.0);
        vg_get_or_create_global_step(g);
        /* slim.learning.create_train_op: the batch-norm moving averages (UPDATE_OPS) first,
         * then the gradients and the update; running its tensor trains one step */
        vg_create_train_op_opts to = vg_create_train_op_opts_default();
        train = vg_create_train_op(g, loss, opt, &to);
    } else if (cifar) {
        FLAGS.batch_size = batch;
        vg_output gs = vg_get_or_create_global_step(g);
        vg_output logits = cifar10_inference(g, x);
        train = cifar10_loss(g, logits, y);
        train_op = cifar10_train(g, train, gs);
    } else {
        resnet_hparams hps = {batch, classes, 0.0001, 0.1, 5, false, 0.0002, 0.1, "mom"};
        resnet_model_init(&rm, hps, x, y, "train");
        if (resnet_model_build_graph(&rm, g) == VG_OK) {
            train = rm.cost;
            train_op = rm.train_op;
        }
    }
    vg_op *init = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st)) die("graph", &st);
    vg_session_options so = VG_SESSION_OPTIONS_INIT;
    so.intra_op_threads = threads;
    so.inter_op_threads = threads;
    vg_session *s = vg_session_new(g, &so, &st);
    if (!s || vg_session_run_targets(s, &init, 1, &st)) die("session", &st);
    vg_tensor *xv = vg_tensor_new(VG_FLOAT, xd, 4, &st), *yv = vg_tensor_new(ydt, yd, resnet ? 2 : 1, &st);
    srand(1);
    for (int64_t i = 0; i < vg_tensor_num_elements(xv); i++) ((float *)vg_tensor_data(xv))[i] = (float)rand() / RAND_MAX;
    if (resnet) memset(vg_tensor_data(yv), 0, vg_tensor_nbytes(yv));
    for (int i = 0; i < batch; i++) {
        int c = rand() % classes;
        if (mobilenet) ((int64_t *)vg_tensor_data(yv))[i] = c;
        else if (cifar) ((int32_t *)vg_tensor_data(yv))[i] = c;
        else ((float *)vg_tensor_data(yv))[i * classes + c] = 1.0f; /* one-hot, as cifar_input */
    }
    vg_output feeds[2] = {x, y};
    vg_tensor *fv[2] = {xv, yv};
    const char *peer_status = "disabled (--no-peer)";
    bool npeer = peer && VG_LIBTORCH_PEER[0]; /* the libtorch peer needs no Python */
    if (peer && !bench_torch_probe(&peer_status)) peer = false;
    double vr[16], pr[16], lr[16], *t = malloc(sizeof(double) * (size_t)steps), last_loss = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = -1; i < steps; i++) { /* one warm-up step */
            vg_tensor *l = NULL;
            double t0 = now_ms();
            if (vg_session_run(s, NULL, feeds, fv, 2, &train, &l, 1, &train_op, train_op ? 1 : 0, NULL, &st))
                die("step", &st);
            if (i >= 0) t[i] = now_ms() - t0;
            last_loss = *(const float *)vg_tensor_data(l);
            vg_tensor_free(l);
        }
        vr[r] = median(t, steps);
        pr[r] = peer ? run_peer(false, model, threads, batch, size, steps) : -1;
        lr[r] = npeer ? run_peer(true, model, threads, batch, size, steps) : -1;
        fprintf(stderr, "round %d: vigil %.2f ms  pytorch %.2f ms  libtorch %.2f ms\n", r, vr[r], pr[r], lr[r]);
    }
    if (prof) profile(g, s, threads, feeds, fv, train, train_op, steps);
    double vm = median(vr, rounds), pm = median(pr, rounds), lm = median(lr, rounds);
    printf("{\"bench\":\"models\",\"model\":\"%s\",\"batch\":%d,\"size\":%d,\"threads\":%d,\"steps\":%d,\"rounds\":%d,"
           "\"vigil_median_ms\":%.2f,\"pytorch_median_ms\":%.2f,\"libtorch_median_ms\":%.2f,\"ratio_pytorch\":%.3f,"
           "\"ratio_libtorch\":%.3f,\"final_loss\":%.4f,\"vigil_rounds_ms\":[",
           model, batch, size, threads, steps, rounds, vm, pm, lm, pm > 0 ? vm / pm : -1.0, lm > 0 ? vm / lm : -1.0,
           last_loss);
    for (int r = 0; r < rounds; r++) printf("%s%.2f", r ? "," : "", vr[r]);
    printf("],\"pytorch_rounds_ms\":[");
    for (int r = 0; r < rounds; r++) printf("%s%.2f", r ? "," : "", pr[r]);
    printf("],\"libtorch_rounds_ms\":[");
    for (int r = 0; r < rounds; r++) printf("%s%.2f", r ? "," : "", lr[r]);
    printf("],\"backend\":\"%s\",\"peer_status\":\"%s\",\"libtorch_peer\":\"%s\"}\n",
           vg_backend_name(vg_backend_get()), peer_status, VG_LIBTORCH_PEER[0] ? VG_LIBTORCH_PEER : "not built (no libtorch-dev)");
    vg_tensor_free(xv), vg_tensor_free(yv);
    free(t);
    vg_session_free(s);
    vg_optimizer_free(opt);
    if (resnet) resnet_model_free(&rm);
    if (cifar) cifar10_free_averages();
    vg_graph_free(g);
    return 0;
}
