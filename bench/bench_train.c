/* bench_train.c - training-step time of the MLP (784-256-256-10, ReLU, softmax
 * cross-entropy, SGD 0.1) or the CNN (conv5x5x32 SAME, relu, maxpool2, conv5x5x64
 * SAME, relu, maxpool2, dense 3136->128, relu, dense 10; Adam 1e-3) at batch 64, fed
 * through placeholders with pre-sliced Fashion-MNIST batches, side by side with the
 * PyTorch peer (bench/peers/torch_fmnist.py) in the same run, interleaved.
 *
 * Usage: bench_train [--model mlp|cnn] [--threads N] [--inter N] [--steps S] [--rounds R] [--no-peer]
 *                    [--profile] [--scaling T] [--precision bf16]
 * (--precision bf16: a second session of the same graph with TF's mixed-precision rewrite
 * (bfloat16, vigil/mixed_precision.h), timed in rounds interleaved with the float32 one;
 * its median, rounds, ratio to float32 and final loss go in the JSON line as bf16_*;
 * --profile then profiles the bfloat16 session)
 * (--inter: inter-op threads when not --threads; --profile: after the rounds, S more
 * steps traced at FULL_TRACE, and each node's median time printed to stderr, slowest
 * first; with VG_BENCH_TIMELINE set also the last traced step node by node, with its
 * thread and start/end in microseconds; --scaling T: a second session of the same
 * graph with T intra-op threads, timed in rounds interleaved with the first one's, in
 * the same process (same data, same allocator state, the same minute of a shared
 * machine), and the ratio of the two step times per round pair and its median; also
 * T independent sessions like the first run at once, one per thread, whose combined
 * throughput over the first's is the machine's own ceiling for that ratio in that
 * minute: on a shared VM the cores' caches and memory bandwidth are shared with other
 * tenants, and two processes that never synchronise gain less than 2x when they run
 * together)
 * Prints one JSON line: per-round medians and the median of rounds, for both, and the
 * roofline: the step's matrix/convolution flops as direct computation (roofline.h; effective
 * GFLOP/s where a kernel does fewer multiplies, as Winograd), the probed per-core FMA
 * peak (AVX-512 where present, else AVX2; best burst), the achieved GFLOP/s and
 * fraction of peak of both, and the FLOP-limit step time at the peak x threads. */
#include "../tools/mnist_nets.h"
#include "bench_util.h"
#include "io/io.h"
#include "roofline.h"
#include "vigil/vigil.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define B 64
#define NBATCH 256

static void die(const char *what, const vg_status *st) {
    fprintf(stderr, "bench_train: %s: %s\n", what, st ? st->msg : "");
    exit(1);
}

#include "torch_peer.h"

static const char *peer_path(void) {
    static const char *cands[] = {VG_SRCDIR "/bench/peers/torch_fmnist.py"};
    const char *e = getenv("VG_TORCH_PEER");
    if (e) return e;
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        FILE *f = fopen(cands[i], "r");
        if (f) { fclose(f); return cands[i]; }
    }
    return NULL;
}

static double run_peer(const char *model, int threads, int steps, const char *precision, double *rss_mb) {
    const char *p = peer_path();
    if (!p) return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s --model %s --threads %d --steps %d --epochs 0 --precision %s 2>/dev/null",
             bench_python(), p, model, threads, steps, precision);
    return peer_median_ms(cmd, rss_mb);
}

/* --profile: per-node median wall time over `steps` traced steps, slowest first. */
typedef struct prof_row { const char *name, *op; double *t; double med; } prof_row;
static int cmp_row(const void *a, const void *b) {
    double x = ((const prof_row *)a)->med, y = ((const prof_row *)b)->med;
    return x < y ? 1 : x > y ? -1 : 0;
}
static void profile_steps(vg_session *s, const vg_output *feeds, vg_tensor **xb, vg_tensor **yb,
                          const vg_output *loss, vg_op *const *train, int steps) {
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    prof_row *rows = NULL;
    int nrows = 0;
    vg_status st;
    double step_sum = 0;
    for (int i = 0; i < steps; i++) {
        vg_tensor *fv[2] = {xb[i % NBATCH], yb[i % NBATCH]}, *l;
        vg_run_metadata_clear(md);
        double t0 = now_ms();
        if (vg_session_run(s, &ro, feeds, fv, 2, loss, &l, 1, train, 1, md, &st)) die("profile step", &st);
        step_sum += now_ms() - t0;
        vg_tensor_free(l);
        int n = vg_run_metadata_num_nodes(md);
        if (!rows) {
            nrows = n;
            rows = calloc((size_t)n, sizeof *rows);
            for (int k = 0; k < n; k++) rows[k].t = calloc((size_t)steps, sizeof(double));
        }
        /* the metadata lists nodes in the order they finished, which differs from step
         * to step when several threads run them: rows are matched by node name */
        for (int k = 0; k < n; k++) {
            const vg_node_stats *ns = vg_run_metadata_node(md, k);
            int r = 0;
            while (r < nrows && rows[r].name && strcmp(rows[r].name, ns->node_name)) r++;
            if (r == nrows) continue;
            if (!rows[r].name) {
                rows[r].name = strdup(ns->node_name);
                rows[r].op = strdup(ns->op_type);
            }
            rows[r].t[i] = (double)(ns->end_us - ns->start_us);
        }
    }
    if (getenv("VG_BENCH_TIMELINE")) { /* the last traced step, node by node */
        int n = vg_run_metadata_num_nodes(md);
        int64_t t0 = INT64_MAX;
        for (int k = 0; k < n; k++) if (vg_run_metadata_node(md, k)->start_us < t0) t0 = vg_run_metadata_node(md, k)->start_us;
        for (int k = 0; k < n; k++) {
            const vg_node_stats *ns = vg_run_metadata_node(md, k);
            if (ns->end_us - ns->start_us >= atoi(getenv("VG_BENCH_TIMELINE")))
                fprintf(stderr, "  T%d %6lld-%6lld %-24s %s\n", ns->thread_id, (long long)(ns->start_us - t0),
                        (long long)(ns->end_us - t0), ns->op_type, ns->node_name);
        }
    }
    double tot = 0;
    for (int k = 0; k < nrows; k++) { rows[k].med = median(rows[k].t, steps); tot += rows[k].med; }
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_row);
    fprintf(stderr, "profile: %d nodes, traced step %.3f ms (mean), sum of node medians %.3f ms\n", nrows,
            step_sum / steps, tot * 1e-3);
    for (int k = 0; k < nrows; k++) {
        if (rows[k].med >= 5) fprintf(stderr, "  %8.1f us  %-24s %s\n", rows[k].med, rows[k].op, rows[k].name);
        free(rows[k].t);
        free((char *)rows[k].name);
        free((char *)rows[k].op);
    }
    free(rows);
    vg_run_metadata_free(md);
}

/* One round: warm-up steps, then `steps` timed steps; returns their median (ms). */
static double time_round(vg_session *s, const vg_output *feeds, vg_tensor **xb, vg_tensor **yb, const vg_output *loss,
                         vg_op *const *train, int warm, int steps, double *t, double *last_loss) {
    vg_status st;
    for (int i = 0; i < warm + steps; i++) {
        vg_tensor *fv[2] = {xb[i % NBATCH], yb[i % NBATCH]}, *l;
        double t0 = now_ms();
        if (vg_session_run(s, NULL, feeds, fv, 2, loss, &l, 1, train, 1, NULL, &st)) die("step", &st);
        double dt = now_ms() - t0;
        *last_loss = vg_tensor_scalar(l);
        vg_tensor_free(l);
        if (i >= warm) t[i - warm] = dt;
    }
    return median(t, steps);
}

/* --scaling: one of the independent sessions run side by side */
typedef struct pair_arg {
    vg_session *s;
    const vg_output *feeds, *loss;
    vg_tensor **xb, **yb;
    vg_op *const *train;
    int warm, steps;
    pthread_barrier_t *bar;
    double med;
} pair_arg;

static void *pair_main(void *a) {
    pair_arg *p = a;
    double *t = malloc(sizeof(double) * (size_t)p->steps), l;
    if (!t) { fprintf(stderr, "out of memory\n"); exit(1); }
    pthread_barrier_wait(p->bar);
    p->med = time_round(p->s, p->feeds, p->xb, p->yb, p->loss, p->train, p->warm, p->steps, t, &l);
    free(t);
    return NULL;
}

/* Mean over the sessions of their median step times, all running at once. */
static double time_pairs(vg_session **ps, int n, const vg_output *feeds, vg_tensor **xb, vg_tensor **yb,
                         const vg_output *loss, vg_op *const *train, int warm, int steps) {
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    pair_arg pa[16];
    pthread_t th[16];
    for (int k = 0; k < n; k++) {
        pa[k] = (pair_arg){ps[k], feeds, loss, xb, yb, train, warm, steps, &bar, 0};
        if (pthread_create(&th[k], NULL, pair_main, &pa[k])) { fprintf(stderr, "pthread_create failed\n"); exit(1); }
    }
    double sum = 0;
    for (int k = 0; k < n; k++) {
        pthread_join(th[k], NULL);
        sum += pa[k].med;
    }
    pthread_barrier_destroy(&bar);
    return sum / n;
}

int main(int argc, char **argv) {
    const char *model = "mlp";
    int threads = 1, inter = -1, steps = -1, rounds = 3, warm = -1;
    bool peer = true, profile = false;
    int scaling = 0;
    bool bf16 = false;
    const bench_arg args[] = {{"--model", 's', &model},     {"--threads", 'i', &threads}, {"--inter", 'i', &inter},
                              {"--steps", 'i', &steps},     {"--rounds", 'i', &rounds},   {"--no-peer", 'f', &peer},
                              {"--profile", 't', &profile}, {"--scaling", 'i', &scaling}};
    for (int i = 1; i < argc; i++) {
        if (bench_match_arg(argc, argv, &i, args, (int)(sizeof args / sizeof args[0]))) continue;
        if (!strcmp(argv[i], "--precision") && i + 1 < argc) bf16 = !strcmp(argv[++i], "bf16");
    }
    bool cnn = !strcmp(model, "cnn");
    if (steps < 0) steps = cnn ? 60 : 1000;
    warm = cnn ? 10 : 50;
    vg_status st;
    int64_t dims[4];
    int nd;
    void *img = NULL, *lab = NULL;
    size_t nb;
    const char *dir = "/usr/share/datasets/fashion-mnist";
    char path[512];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    if (vg_idx_read(path, VG_IDX_ANY, dims, &nd, &img, &nb, &st)) die("images", &st);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
    if (vg_idx_read(path, VG_IDX_ANY, dims, &nd, &lab, &nb, &st)) die("labels", &st);
    /* pre-sliced batches of a fixed permutation */
    vg_tensor *xb[NBATCH], *yb[NBATCH];
    int64_t xd[4] = {B, 28, 28, 1}, xd2[2] = {B, 784}, yd[1] = {B};
    srand(1);
    for (int k = 0; k < NBATCH; k++) {
        xb[k] = cnn ? vg_tensor_new(VG_FLOAT, xd, 4, &st) : vg_tensor_new(VG_FLOAT, xd2, 2, &st);
        yb[k] = vg_tensor_new(VG_INT64, yd, 1, &st);
        float *x = vg_tensor_data(xb[k]);
        int64_t *y = vg_tensor_data(yb[k]);
        for (int i = 0; i < B; i++) {
            int r = rand() % 60000;
            for (int j = 0; j < 784; j++) x[i * 784 + j] = ((uint8_t *)img)[(size_t)r * 784 + j] / 255.0f;
            y[i] = ((uint8_t *)lab)[r];
        }
    }
    vg_free(img);
    vg_free(lab);

    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    vg_output x = cnn ? vg_placeholder(g, VG_FLOAT, xd, 4, "x") : vg_placeholder(g, VG_FLOAT, xd2, 2, "x");
    vg_output y = vg_placeholder(g, VG_INT64, yd, 1, "y");
    vg_output logits = cnn ? mnist_cnn(g, x, "VALID") : mnist_mlp(g, x);
    vg_output loss = vg_reduce_mean(g, vg_out(vg_sparse_softmax_xent(g, logits, y, NULL), 0), NULL, -1, false, "loss");
    vg_optimizer *opt = cnn ? vg_optimizer_new_adam(1e-3, 0.9, 0.999, 1e-8) : vg_optimizer_new_sgd(0.1);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st)) die("graph", &st);
    vg_session_options so = {threads, inter > 0 ? inter : threads};
    vg_session *s = vg_session_new(g, &so, &st);
    if (!s || vg_session_run_targets(s, &init, 1, &st)) die("session", &st);
    vg_session *sb = NULL; /* --precision bf16 */
    double br[16], pbr[16], bf16_loss = 0;
    if (bf16) {
        sb = vg_session_new(g, &so, &st);
        if (!sb || vg_session_set_auto_mixed_precision(sb, true, &st) || vg_session_run_targets(sb, &init, 1, &st))
            die("session (--precision bf16)", &st);
    }
    vg_output feeds[2] = {x, y};
    double *t = malloc(sizeof(double) * (size_t)steps), vr[16], pr[16], last_loss = 0, peer_rss = -1;
    if (rounds > 16) rounds = 16;
    const char *peer_status = "disabled (--no-peer)";
    if (peer && !bench_torch_probe(&peer_status)) peer = false;
    vg_session *s2 = NULL, *ps[16] = {0};
    double sr[16], sq[16], cr[16];
    if (scaling > 16) scaling = 16;
    int npairs = scaling > 1 ? scaling : 0;
    if (scaling > 0) {
        vg_session_options so2 = {scaling, scaling};
        s2 = vg_session_new(g, &so2, &st);
        if (!s2 || vg_session_run_targets(s2, &init, 1, &st)) die("session (--scaling)", &st);
        for (int k = 0; k < npairs; k++) {
            ps[k] = vg_session_new(g, &so, &st);
            if (!ps[k] || vg_session_run_targets(ps[k], &init, 1, &st)) die("session (--scaling ceiling)", &st);
        }
    }
    for (int r = 0; r < rounds; r++) {
        vr[r] = time_round(s, feeds, xb, yb, &loss, &train, warm, steps, t, &last_loss);
        pr[r] = peer ? run_peer(model, threads, steps, "fp32", &peer_rss) : -1;
        fprintf(stderr, "round %d: vigil %.4f ms  peer %.4f ms\n", r, vr[r], pr[r]);
        if (sb) {
            br[r] = time_round(sb, feeds, xb, yb, &loss, &train, warm, steps, t, &bf16_loss);
            pbr[r] = peer ? run_peer(model, threads, steps, "bf16", NULL) : -1;
            fprintf(stderr, "round %d: vigil bf16 %.4f ms (%.3fx float32)  peer bf16 autocast %.4f ms\n", r, br[r],
                    br[r] / vr[r], pbr[r]);
        }
        if (s2) {
            double l2;
            sr[r] = time_round(s2, feeds, xb, yb, &loss, &train, warm, steps, t, &l2);
            sq[r] = vr[r] / sr[r];
            fprintf(stderr, "round %d: vigil %d thread%s %.4f ms (%.2fx)\n", r, scaling, scaling > 1 ? "s" : "", sr[r],
                    sq[r]);
            if (npairs) {
                double tp = time_pairs(ps, npairs, feeds, xb, yb, &loss, &train, warm, steps);
                cr[r] = npairs * vr[r] / tp;
                fprintf(stderr, "round %d: %d independent sessions at once %.4f ms per step each (ceiling %.2fx)\n", r,
                        npairs, tp, cr[r]);
            }
        }
    }
    if (profile) profile_steps(sb ? sb : s, feeds, xb, yb, &loss, &train, steps);
    double vm = median(vr, rounds), pm = median(pr, rounds);
    double flop = cnn ? rl_cnn_step_flops(B) : rl_mlp_step_flops(B);
    double peak = rl_core_peak(20, 0.01) * threads; /* after the rounds: same clock state */
    double limit_ms = peak > 0 ? flop / (peak * 1e9) * 1e3 : -1;
    /* the step's flops are those of direct convolutions and plain GEMMs: where a kernel
     * does fewer multiplies (Winograd F(2x2,5x5) for the CNN's conv2) the GFLOP/s are
     * effective ones and can pass the peak */
    fprintf(stderr, "roofline: %.3f GFLOP/step (direct), peak %.1f GFLOP/s (%d thread%s): limit %.3f ms; vigil %.1f "
            "effective GFLOP/s (%.0f%% of peak, %.2fx the limit)\n", flop * 1e-9, peak, threads, threads > 1 ? "s" : "", limit_ms,
            flop / vm * 1e-6, peak > 0 ? 100 * flop / vm * 1e-6 / peak : 0, limit_ms > 0 ? vm / limit_ms : 0);
    printf("{\"bench\":\"train_step\",\"model\":\"%s\",\"batch\":%d,\"threads\":%d,\"steps\":%d,\"rounds\":%d,"
           "\"vigil_median_ms\":%.4f,\"peer_median_ms\":%.4f,\"ratio\":%.3f,\"vigil_rounds_ms\":[",
           model, B, threads, steps, rounds, vm, pm, pm > 0 ? vm / pm : -1.0);
    for (int r = 0; r < rounds; r++) printf("%s%.4f", r ? "," : "", vr[r]);
    printf("],\"peer_rounds_ms\":[");
    for (int r = 0; r < rounds; r++) printf("%s%.4f", r ? "," : "", pr[r]);
    printf("],\"step_gflop\":%.4f,\"peak_gflops\":%.1f,\"flop_limit_ms\":%.4f,\"vigil_gflops\":%.1f,"
           "\"vigil_peak_fraction\":%.3f,\"vigil_over_limit\":%.2f,\"peer_gflops\":%.1f,\"peer_peak_fraction\":%.3f",
           flop * 1e-9, peak, limit_ms, flop / vm * 1e-6, peak > 0 ? flop / vm * 1e-6 / peak : 0,
           limit_ms > 0 ? vm / limit_ms : 0, pm > 0 ? flop / pm * 1e-6 : -1,
           pm > 0 && peak > 0 ? flop / pm * 1e-6 / peak : -1);
    if (sb) {
        double bq[16];
        for (int r = 0; r < rounds; r++) bq[r] = br[r] / vr[r];
        printf(",\"bf16_rounds_ms\":[");
        for (int r = 0; r < rounds; r++) printf("%s%.4f", r ? "," : "", br[r]);
        printf("],\"bf16_over_f32_rounds\":[");
        for (int r = 0; r < rounds; r++) printf("%s%.3f", r ? "," : "", bq[r]);
        printf("],\"bf16_median_ms\":%.4f,\"bf16_over_f32_median\":%.3f,\"bf16_final_loss\":%.4f", median(br, rounds),
               median(bq, rounds), bf16_loss);
        printf(",\"peer_bf16_rounds_ms\":[");
        for (int r = 0; r < rounds; r++) printf("%s%.4f", r ? "," : "", pbr[r]);
        double pbm = median(pbr, rounds);
        printf("],\"peer_bf16_median_ms\":%.4f,\"bf16_over_peer_bf16\":%.3f", pbm, pbm > 0 ? median(br, rounds) / pbm : -1.0);
    }
    if (s2) {
        printf(",\"scaling_threads\":%d,\"scaling_rounds_ms\":[", scaling);
        for (int r = 0; r < rounds; r++) printf("%s%.4f", r ? "," : "", sr[r]);
        printf("],\"scaling_ratios\":[");
        for (int r = 0; r < rounds; r++) printf("%s%.3f", r ? "," : "", sq[r]);
        printf("],\"scaling_ratio_median\":%.3f", median(sq, rounds));
        if (npairs) {
            printf(",\"scaling_ceiling_ratios\":[");
            for (int r = 0; r < rounds; r++) printf("%s%.3f", r ? "," : "", cr[r]);
            double cm = median(cr, rounds);
            printf("],\"scaling_ceiling_median\":%.3f,\"scaling_of_ceiling\":%.3f", cm, median(sq, rounds) / cm);
        }
    }
    printf(",\"backend\":\"%s\",\"final_loss\":%.4f,\"peer\":\"pytorch %s\",\"peer_status\":\"%s\"}\n",
           vg_backend_name(vg_backend_get()), last_loss, peer_path() ? peer_path() : "unavailable", peer_status);
    vg_session_free(s);
    vg_session_free(sb);
    vg_session_free(s2);
    for (int k = 0; k < npairs; k++) vg_session_free(ps[k]);
    vg_optimizer_free(opt);
    vg_graph_free(g);
    for (int k = 0; k < NBATCH; k++) { vg_tensor_free(xb[k]); vg_tensor_free(yb[k]); }
    free(t);
    return 0;
}
