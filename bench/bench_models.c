/* bench_models.c - training-step time of the models real TF1 programs train, built with
 * vigil's public TF1-style API, side by side with the same model in PyTorch
 * (bench/peers/torch_models.py, Debian's python3-torch) in the same run, rounds
 * interleaved (issue 30's model suite; models are added here one by one).
 *
 * The models live in bench/models/ (one file each, listed in models[] below):
 *   mobilenet  slim's MobileNet v1, 128x128x3, batch 32, RMSProp (bench/models/mobilenet.c)
 *   cifar10    the CIFAR-10 tutorial of examples/tf1/cifar10, batch 128
 *   resnet     the CIFAR ResNet-32 of examples/tf1/resnet, batch 128
 *   ptb_lm     the PTB word LSTM language model of tensorflow/models' ptb_word_lm.py
 *              (embedding 10000 x 256, two LSTMBlockCell layers of 512, dropout 0.5,
 *              full softmax over 10000 words), num_steps 35 (--size), batch 20, SGD 1.0
 *              after clip_by_global_norm 5 (bench/models/ptb_lm.c)
 *   graph_net  a graph-network block (graph_nets' InteractionNetwork with the demos'
 *              make_mlp_model: gather of the node features onto 12288 edges, edge MLP
 *              384->128->128 + layer norm, unsorted_segment_sum onto 2048 nodes, node MLP
 *              256->128->128 + layer norm, linear decoder to 2, MSE, Adam 1e-3; --size is
 *              the latent width 128, --batch unused) (bench/models/graph_net.c)
 *   dnc        DeepMind's DNC of examples/tf1/dnc (train.py's defaults: LSTM 64, memory
 *              16 x 16, 4 reads, 1 write, RMSProp with clip_by_global_norm), batch 16,
 *              repeat-copy sequences of --size steps fed (9: the longest of the default
 *              curriculum), dynamic_rnn's while loop forward and backward
 *
 * Usage: bench_models [--model NAME] [--threads N] [--batch B] [--size S] [--steps S]
 *                     [--rounds R] [--no-peer] [--profile] [--precision bf16]
 * --precision bf16: a second session of the same graph with TF's mixed-precision rewrite
 * (vigil/mixed_precision.h: bfloat16 MatMul / convolutions on oneDNN), timed in the same
 * rounds, and the Python peer under bfloat16 autocast; JSON bf16_* fields.
 * --profile: after the rounds, the steps again at VG_TRACE_FULL and, per op type, the
 * median per step of its nodes' summed time and its share of the summed step (stderr);
 * with --precision bf16, then the same for the mixed-precision session.
 * Peers: PyTorch in Python (bench/peers/torch_models.py) and libtorch, PyTorch's C++ API
 * (bench/peers/libtorch_models.cpp, built where CMake finds Debian's libtorch-dev), each
 * run once per round after vigil's steps.
 * Prints one JSON line per model: per-round medians and the median of rounds for vigil and
 * both peers, ratio_pytorch / ratio_libtorch = vigil / peer. */
#include "bench_util.h"
#include "roofline.h"
#include "models/models.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what, const vg_status *st) {
    fprintf(stderr, "bench_models: %s: %s\n", what, st ? st->msg : "");
    exit(1);
}

#include "torch_peer.h"

#ifndef VG_LIBTORCH_PEER
#define VG_LIBTORCH_PEER "" /* libtorch-dev not found when configured */
#endif

/* The Python peer (native = false) or the libtorch one; median ms, -1 when none.
 * bf16: the Python peer under torch.cpu.amp.autocast(bfloat16) (no libtorch form). */
static double run_peer(bool native, const char *model, int threads, int batch, int size, int steps, bool bf16) {
    char cmd[1024];
    if (native && (bf16 || !VG_LIBTORCH_PEER[0])) return -1;
    if (native)
        snprintf(cmd, sizeof cmd, "%s --model %s --threads %d --batch %d --size %d --steps %d 2>/dev/null",
                 VG_LIBTORCH_PEER, model, threads, batch, size, steps);
    else
        snprintf(cmd, sizeof cmd,
                 "%s %s --model %s --threads %d --batch %d --size %d --steps %d --precision %s 2>/dev/null",
                 bench_python(), VG_SRCDIR "/bench/peers/torch_models.py", model, threads, batch, size, steps,
                 bf16 ? "bf16" : "fp32");
    return peer_median_ms(cmd, NULL);
}

/* --profile: per op type, the median over steps of the summed time of its nodes, and
 * the work the type's nodes do per step: flops of convolutions and matrix products
 * (direct computation; LSTMBlockCell's gates product too) and the compulsory bytes of every node (each input read once,
 * (MatMul, BatchMatMulV2; direct computation) and the compulsory bytes of every node (each input read once,
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
    } else if (!strncmp(type, "_VigilFusedMatMulSum", 20)) { /* an AddN of MatMuls, one GEMM */
        for (int i = 0; i < vg_op_num_inputs(op); i++) {
            vg_op *m = vg_op_input(op, i).op;
            bool ta = false;
            vg_op_attr_bool(m, "transpose_a", &ta);
            *flops += 2.0 * nelem(vg_out(m, 0)) * (double)dim(vg_op_input(m, 0), ta ? 0 : 1);
            *bytes += 4 * (nelem(vg_op_input(m, 0)) + nelem(vg_op_input(m, 1)));
        }
        *bytes += 4 * nelem(vg_out(op, 0));
        return;
    } else if (!strcmp(t, "MatMul")) {
        vg_output a = vg_op_input(op, 0), y = vg_out(op, 0);
        bool ta = false;
        vg_op_attr_bool(op, "transpose_a", &ta);
        *flops = 2.0 * nelem(y) * (double)dim(a, ta ? 0 : 1);
    } else if (!strcmp(t, "LSTMBlockCell")) {
        /* [x, h_prev] [B, I + H] times w [I + H, 4H] (the gates' matrix product) */
        vg_output w = vg_op_input(op, 3);
        *flops = 2.0 * (double)dim(vg_op_input(op, 0), 0) * nelem(w);
    } else if (!strcmp(t, "BatchMatMulV2") || !strcmp(t, "BatchMatMul")) {
        vg_output a = vg_op_input(op, 0), y = vg_out(op, 0);
        bool ax = false;
        vg_op_attr_bool(op, "adj_x", &ax);
        int r = vg_output_shape(a).ndims;
        *flops = r >= 2 ? 2.0 * nelem(y) * (double)dim(a, ax ? r - 2 : r - 1) : 0;
    }
    for (int i = 0; i < vg_op_num_inputs(op); i++) /* LSTMBlockCellGrad takes w but does not read it */
        if (i != 3 || strcmp(t, "LSTMBlockCellGrad")) *bytes += 4 * nelem(vg_op_input(op, i));
    for (int i = 0; i < vg_op_num_outputs(op); i++) *bytes += 4 * nelem(vg_out(op, i));
}
static int cmp_op(const void *a, const void *b) {
    double x = ((const op_row *)a)->med, y = ((const op_row *)b)->med;
    return x < y ? 1 : x > y ? -1 : 0;
}
static const char *g_nodes; /* --nodes TYPE */
static void profile(const vg_graph *g, vg_session *s, int threads, const bm_built *b, int steps) {
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    op_row rows[256];
    int nrows = 0, nnodes = 0;
    double node_med = 0;
    double *step = calloc((size_t)steps, sizeof(double)), *sum = calloc((size_t)steps, sizeof(double));
    vg_status st;
    for (int i = 0; i < steps; i++) {
        vg_run_metadata_clear(md);
        double t0 = now_ms();
        vg_tensor *l = NULL;
        if (vg_session_run(s, &ro, b->feeds, b->fv, b->nfeeds, &b->train, &l, 1, (vg_op **)&b->train_op,
                           b->train_op ? 1 : 0, md, &st))
            die("profile step", &st);
        vg_tensor_free(l);
        step[i] = now_ms() - t0;
        int n = vg_run_metadata_num_nodes(md);
        if (n < 0) n = 0;
        if (i == steps - 1 && g_nodes) /* --nodes TYPE: each node of that type, last step */
            for (int k = 0; k < n; k++) {
                const vg_node_stats *ns = vg_run_metadata_node(md, k);
                if (strcmp(ns->op_type, g_nodes)) continue;
                double fl, by, ms = (double)(ns->end_us - ns->start_us) * 1e-3;
                node_work(g, ns->node_name, ns->op_type, &fl, &by);
                vg_op *op = vg_graph_op_by_name(g, ns->node_name);
                char shp[256] = "";
                for (int q = 0; op && q < vg_op_num_inputs(op) && q < 3; q++) {
                    vg_shape sh = vg_output_shape(vg_op_input(op, q));
                    size_t L = strlen(shp);
                    vg_shape_str(&sh, shp + L, sizeof shp - L);
                    L = strlen(shp);
                    snprintf(shp + L, sizeof shp - L, " ");
                }
                fprintf(stderr, "  node %-60s %8.3f ms %7.1f GFLOP/s %6.1f GB/s  %s\n", ns->node_name, ms,
                        ms > 0 ? fl / ms * 1e-6 : 0, ms > 0 ? by / ms * 1e-6 : 0, shp);
            }
        if (i == steps - 1) { /* the executed node count and the median node time of one step */
            double *nt = malloc(sizeof(double) * (size_t)(n ? n : 1));
            for (int k = 0; k < n; k++)
                nt[k] = (double)(vg_run_metadata_node(md, k)->end_us - vg_run_metadata_node(md, k)->start_us);
            nnodes = n, node_med = n ? median(nt, n) : 0;
            free(nt);
        }
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
                /* a fused element-wise cluster: what its kernel read and wrote */
                if (!strcmp(ns->op_type, "_VigilFusedElementwise")) fl = 0, by = (double)(ns->bytes_allocated + ns->bytes_read);
                /* a fused batch-norm gradient: what its kernel read (the activation's
                 * output, or the forward's offset when it recomputes the mask) */
                if (strstr(ns->op_type, "_VigilFusedBatchNormGrad")) by = (double)(ns->bytes_allocated + ns->bytes_read);
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
    fprintf(stderr, "  %d nodes run per step: median node time %.0f us (trace resolution 1 us), mean %.2f us, "
            "traced step / nodes %.2f us\n", nnodes, node_med, nnodes ? 1e3 * tot / nnodes : 0.0,
            nnodes ? 1e3 * median(step, steps) / nnodes : 0.0);
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

static const bm_model *const models[] = {&bm_mobilenet, &bm_cifar10, &bm_resnet, &bm_ptb_lm, &bm_graph_net, &bm_dnc};
#define NMODELS (int)(sizeof models / sizeof models[0])

void bm_fill_uniform(vg_tensor *t) {
    float *p = vg_tensor_data(t);
    for (int64_t i = 0, n = vg_tensor_num_elements(t); i < n; i++) p[i] = (float)rand() / RAND_MAX;
}

/* One round: a warm-up step and `steps` timed ones; the median ms (t: scratch). */
static double time_steps(vg_session *s, const bm_built *b, int steps, double *t, double *last_loss, vg_status *st) {
    for (int i = -1; i < steps; i++) {
        vg_tensor *l = NULL;
        double t0 = now_ms();
        vg_op *train_op = b->train_op;
        if (vg_session_run(s, NULL, b->feeds, b->fv, b->nfeeds, &b->train, &l, 1, &train_op, train_op ? 1 : 0, NULL,
                           st))
            die("step", st);
        if (i >= 0) t[i] = now_ms() - t0;
        *last_loss = *(const float *)vg_tensor_data(l);
        vg_tensor_free(l);
    }
    return median(t, steps);
}

static void usage(void) {
    fprintf(stderr, "usage: bench_models [--model");
    for (int i = 0; i < NMODELS; i++) fprintf(stderr, "%s%s", i ? "|" : " ", models[i]->name);
    fprintf(stderr, "] [--threads N] [--batch B] [--size S] [--steps S] [--rounds R] [--no-peer] [--profile] [--nodes OP_TYPE] "
                    "[--precision bf16]\n");
}

int main(int argc, char **argv) {
    const char *model = "mobilenet";
    int threads = 1, batch = 0, size = 0, steps = 5, rounds = 3;
    bool peer = true, prof = false, bf16 = false;
    const bench_arg args[] = {{"--model", 's', &model},  {"--threads", 'i', &threads}, {"--batch", 'i', &batch},
                              {"--size", 'i', &size},    {"--steps", 'i', &steps},     {"--rounds", 'i', &rounds},
                              {"--no-peer", 'f', &peer}, {"--profile", 't', &prof}};
    for (int i = 1; i < argc; i++) {
        if (bench_match_arg(argc, argv, &i, args, (int)(sizeof args / sizeof args[0]))) continue;
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            prof = true, g_nodes = argv[++i];
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            const char *p = argv[++i];
            if (strcmp(p, "bf16") && strcmp(p, "fp32")) {
                usage();
                return 2;
            }
            bf16 = !strcmp(p, "bf16");
        }
        else {
            usage();
            return 2;
        }
    }
    const bm_model *bm = NULL;
    for (int i = 0; i < NMODELS; i++)
        if (!strcmp(model, models[i]->name)) bm = models[i];
    if (!bm) {
        fprintf(stderr, "bench_models: unknown model %s\n", model);
        usage();
        return 2;
    }
    if (!batch) batch = bm->batch;
    if (!size) size = bm->size;
    if (steps < 1) steps = 1;
    if (rounds < 1) rounds = 1;
    if (rounds > 16) rounds = 16;
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    srand(1);
    bm_built b = {0};
    if (bm->build(g, batch, size, &b, &st)) {
        if (st.code == VG_OK) vg_graph_status(g, &st);
        die("build", &st);
    }
    vg_op *init = vg_global_variables_initializer(g);
    vg_op *local = vg_local_variables_initializer(g);
    vg_op *inits[2] = {init, local};
    if (vg_graph_status(g, &st)) die("graph", &st);
    vg_session_options so = {0};
    so.intra_op_threads = threads;
    so.inter_op_threads = threads;
    vg_session *s = vg_session_new(g, &so, &st);
    if (!s || vg_session_run_targets(s, inits, 2, &st)) die("session", &st);
    const char *peer_status = "disabled (--no-peer)";
    bool npeer = peer && VG_LIBTORCH_PEER[0]; /* the libtorch peer needs no Python */
    if (peer && !bench_torch_probe(&peer_status)) peer = false;
    vg_session *sb = NULL; /* --precision bf16: the same graph, TF's mixed-precision rewrite */
    if (bf16) {
        sb = vg_session_new(g, &so, &st);
        if (!sb || vg_session_set_auto_mixed_precision(sb, true, &st) || vg_session_run_targets(sb, inits, 2, &st))
            die("session (--precision bf16)", &st);
    }
    double vr[16], pr[16], lr[16], br[16], pbr[16], *t = malloc(sizeof(double) * (size_t)steps), last_loss = 0,
                                                     bf16_loss = 0;
    for (int r = 0; r < rounds; r++) {
        vr[r] = time_steps(s, &b, steps, t, &last_loss, &st);
        pr[r] = peer ? run_peer(false, model, threads, batch, size, steps, false) : -1;
        lr[r] = npeer ? run_peer(true, model, threads, batch, size, steps, false) : -1;
        fprintf(stderr, "round %d: vigil %.2f ms  pytorch %.2f ms  libtorch %.2f ms\n", r, vr[r], pr[r], lr[r]);
        if (sb) {
            br[r] = time_steps(sb, &b, steps, t, &bf16_loss, &st);
            pbr[r] = peer ? run_peer(false, model, threads, batch, size, steps, true) : -1;
            fprintf(stderr, "round %d: vigil bf16 %.2f ms (%.3fx float32)  pytorch bf16 autocast %.2f ms\n", r, br[r],
                    br[r] / vr[r], pbr[r]);
        }
    }
    if (prof) profile(g, s, threads, &b, steps);
    if (prof && sb) { /* the census of the mixed-precision session, after float32's */
        fprintf(stderr, "profile of the bfloat16 session (--precision bf16):\n");
        profile(g, sb, threads, &b, steps);
    }
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
    if (sb) {
        double bm = median(br, rounds), pbm = median(pbr, rounds);
        printf("],\"bf16_median_ms\":%.2f,\"bf16_over_f32\":%.3f,\"pytorch_bf16_median_ms\":%.2f,"
               "\"bf16_ratio_pytorch_bf16\":%.3f,\"bf16_final_loss\":%.4f,\"bf16_rounds_ms\":[",
               bm, bm / vm, pbm, pbm > 0 ? bm / pbm : -1.0, bf16_loss);
        for (int r = 0; r < rounds; r++) printf("%s%.2f", r ? "," : "", br[r]);
        printf("],\"pytorch_bf16_rounds_ms\":[");
        for (int r = 0; r < rounds; r++) printf("%s%.2f", r ? "," : "", pbr[r]);
    }
    printf("],\"backend\":\"%s\",\"peer_status\":\"%s\",\"libtorch_peer\":\"%s\"}\n",
           vg_backend_name(vg_backend_get()), peer_status, VG_LIBTORCH_PEER[0] ? VG_LIBTORCH_PEER : "not built (no libtorch-dev)");
    for (int i = 0; i < b.nfeeds; i++) vg_tensor_free(b.fv[i]);
    free(t);
    vg_session_free(sb);
    vg_session_free(s);
    vg_graph_free(g);
    if (b.cleanup) b.cleanup(b.state);
    return 0;
}
