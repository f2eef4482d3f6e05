/* bench_allreduce.c - data-parallel training on MPI (issue 15). One JSON line per
 * measurement, printed by rank 0. Run it alone (1 rank) and under `mpirun -np N`:
 *
 *   bench_allreduce --mode train --model mlp|cnn [--steps S] [--threads T] [--inter T] [--fusion-threshold B]
 *                   [--compression none|fp16] [--hierarchical 0|1]
 *       training-step throughput, per-rank batch 64, Fashion-MNIST batches sliced
 *       beforehand from this rank's shard, the MLP (784-256-256-10, SGD 0.1) or the CNN
 *       (conv5x5x32, pool, conv5x5x64, pool, dense 128, dense 10, Adam 1e-3) of
 *       bench_train, with the DistributedOptimizer when N > 1; samples/s of the job.
 *       --inter: inter-op threads (default = --threads): --threads 1 --inter 2 lets a
 *       bucket's allreduce overlap back-propagation (with a --fusion-threshold below
 *       the model's gradient bytes); --compression fp16: Compression.fp16 on the ring.
 *   bench_allreduce --mode fused --model mlp|cnn [--reps R]
 *       the model's gradients (as many tensors, of the same shapes) averaged by one
 *       VigilFusedAllreduce op in a session run vs a bare MPI_Allreduce of the same bytes
 *       on a reused buffer; fused_over_bare = bare time / fused time (--compression fp16:
 *       the fused op carries half on the wire, the bare call stays float32).
 *
 *   bench_allreduce --mode sizes [--reps R]
 *       a bare MPI_Allreduce of 4 B .. 64 MB (the scaling model's latency and bandwidth).
 *
 * The PyTorch DistributedDataParallel peer (gloo) is bench/peers/torch_ddp.py. */
#include "../tools/mnist_nets.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef BENCH_HAVE_MPI
#include <mpi.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static vg_output model(vg_graph *g, vg_output x, bool cnn) {
    if (!cnn) return mnist_mlp(g, x);
    return mnist_cnn(g, vg_reshape_c(g, x, (int64_t[]){-1, 28, 28, 1}, 4, NULL), "SAME");
}

/* This rank's shard of Fashion-MNIST (random data when it is missing). */
static int64_t load(int rank, int size, float **x, int64_t **y) {
    const char *dir = "/usr/share/datasets/fashion-mnist";
    char ip[512], lp[512];
    snprintf(ip, sizeof ip, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(lp, sizeof lp, "%s/train-labels-idx1-ubyte.gz", dir);
    vg_status st;
    int64_t di[4], dl[4];
    int ni, nl;
    uint8_t *pix = NULL, *lab = NULL;
    size_t nb;
    bool ok = vg_idx_read(ip, VG_IDX_U8, di, &ni, (void **)&pix, &nb, &st) == VG_OK &&
              vg_idx_read(lp, VG_IDX_U8, dl, &nl, (void **)&lab, &nb, &st) == VG_OK;
    int64_t total = ok ? di[0] : 60000, n = total / size;
    *x = malloc((size_t)n * 784 * sizeof(float));
    *y = malloc((size_t)n * sizeof(int64_t));
    unsigned s = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i * size + rank;
        (*y)[i] = ok ? lab[r] : (int64_t)(rand_r(&s) % 10);
        for (int p = 0; p < 784; p++) (*x)[i * 784 + p] = ok ? pix[r * 784 + p] / 255.0f : (float)(rand_r(&s) % 256) / 255.0f;
    }
    vg_free(pix);
    vg_free(lab);
    return n;
}

static int64_t fusion_threshold = -1; /* --fusion-threshold BYTES; -1: the default (64 MB) */
static bool fp16, hierarchical;        /* --compression fp16, --hierarchical 1 */
static int inter = -1;                 /* --inter T; -1: = --threads */

static int bench_train(bool cnn, int steps, int threads, int rank, int size) {
    vg_status st;
    const int64_t B = 64;
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, 784}, 2, "x");
    vg_output y = vg_placeholder(g, VG_INT64, (int64_t[]){B}, 1, "y");
    vg_output logits = model(g, x, cnn);
    vg_output loss = vg_reduce_mean(g, vg_out(vg_sparse_softmax_xent(g, logits, y, NULL), 0), NULL, -1, false, "loss");
    vg_optimizer *opt = cnn ? vg_optimizer_new_adam(1e-3, 0.9, 0.999, 1e-8) : vg_optimizer_new_sgd(0.1);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_dist_options dopt = {0};
    if (fusion_threshold >= 0) dopt.fusion_threshold_bytes = fusion_threshold;
    dopt.no_fusion = fusion_threshold == 0;
    dopt.compression = fp16 ? VG_DIST_COMPRESSION_FP16 : VG_DIST_COMPRESSION_NONE;
    dopt.hierarchical = hierarchical;
    vg_op *train = size > 1 ? vg_dist_minimize(opt, g, loss, NULL, 0, gs, &dopt, NULL)
                            : vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "graph: %s\n", st.msg);
        return 1;
    }
    vg_session_options so = {threads, inter > 0 ? inter : threads};
    vg_session *s = vg_session_new(g, &so, &st);
    vg_session_run_targets(s, &init, 1, &st);
    float *xs;
    int64_t *ys;
    int64_t n = load(rank, size, &xs, &ys), nbatch = n / B;
    vg_output feeds[2] = {x, y};
    int warm = cnn ? 5 : 30;
    double *t = malloc((size_t)steps * sizeof(double));
    vg_dist_barrier(&st);
    double t0 = 0, c0 = 0;
    for (int i = -warm; i < steps; i++) {
        int64_t b = ((i + warm) % nbatch) * B;
        vg_tensor *xv = vg_tensor_new_from(VG_FLOAT, (int64_t[]){B, 784}, 2, xs + b * 784, (size_t)(B * 784) * sizeof(float), NULL, NULL, &st);
        vg_tensor *yv = vg_tensor_new_from(VG_INT64, (int64_t[]){B}, 1, ys + b, (size_t)B * sizeof(int64_t), NULL, NULL, &st);
        vg_tensor *vals[2] = {xv, yv};
        if (i == 0) {
            t0 = now_s();
            c0 = cpu_s();
        }
        double ts = now_s();
        if (vg_session_run(s, NULL, feeds, vals, 2, NULL, NULL, 0, &train, 1, NULL, &st) != VG_OK) {
            fprintf(stderr, "run: %s\n", st.msg);
            return 1;
        }
        if (i >= 0) t[i] = now_s() - ts;
        vg_tensor_free(xv);
        vg_tensor_free(yv);
    }
    double wall = now_s() - t0, cpu = cpu_s() - c0;
    /* CPU seconds of all ranks (MPI's busy-wait in a collective counts: conservative) */
    vg_dist_allreduce(&cpu, 1, VG_DOUBLE, VG_REDUCE_SUM, &st);
    qsort(t, (size_t)steps, sizeof *t, cmp_d);
    if (rank == 0)
        printf("{\"bench\":\"dist_train\",\"model\":\"%s\",\"ranks\":%d,\"threads\":%d,\"batch_per_rank\":%lld,"
               "\"steps\":%d,\"median_step_ms\":%.3f,\"samples_per_s\":%.1f,\"samples_per_s_at_median\":%.1f,"
               "\"cpu_s\":%.3f,\"samples_per_cpu_s\":%.1f,\"fusion_threshold\":%lld,\"inter\":%d,"
               "\"compression\":\"%s\",\"hierarchical\":%s}\n",
               cnn ? "cnn" : "mlp", size, threads, (long long)B, steps, t[steps / 2] * 1e3,
               (double)steps * (double)B * size / wall, (double)B * size / t[steps / 2], cpu,
               (double)steps * (double)B * size / cpu, (long long)dopt.fusion_threshold_bytes, so.inter_op_threads,
               fp16 ? "fp16" : "none", hierarchical ? "true" : "false");
    free(t);
    free(xs);
    free(ys);
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
    return 0;
}

static int bench_fused(bool cnn, int reps, bool average, int rank, int size) {
    vg_status st;
    /* the gradients' shapes */
    static const int64_t mlp[][2] = {{784, 256}, {256, 1}, {256, 256}, {256, 1}, {256, 10}, {10, 1}};
    static const int64_t cnnv[][4] = {{5, 5, 1, 32}, {32, 1, 1, 1}, {5, 5, 32, 64}, {64, 1, 1, 1},
                                      {3136, 128, 1, 1}, {128, 1, 1, 1}, {128, 10, 1, 1}, {10, 1, 1, 1}};
    int n = cnn ? 8 : 6;
    vg_graph *g = vg_graph_new();
    vg_output xs[8];
    int64_t elems = 0;
    for (int i = 0; i < n; i++) {
        int64_t d[4] = {1, 1, 1, 1};
        if (cnn) memcpy(d, cnnv[i], sizeof d);
        else d[0] = mlp[i][0], d[1] = mlp[i][1];
        elems += d[0] * d[1] * d[2] * d[3];
        xs[i] = vg_const_fill(g, VG_FLOAT, d, 4, 0.5 + rank, NULL);
    }
    vg_op *op = vg_dist_fused_allreduce(g, xs, n, average, "fused");
    if (fp16 || hierarchical) { /* the same op with the wire attrs, as the optimizer builds it */
        vg_output ys[8];
        vg_dist_options o = {.sum = !average};
        o.compression = fp16 ? VG_DIST_COMPRESSION_FP16 : VG_DIST_COMPRESSION_NONE;
        o.hierarchical = hierarchical;
        if (vg_dist_allreduce_gradients(g, xs, n, &o, ys, &st) != VG_OK) {
            fprintf(stderr, "graph: %s\n", st.msg);
            return 1;
        }
        op = ys[0].op;
    }
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "graph: %s\n", st.msg);
        return 1;
    }
    vg_session_options so = {1, 1};
    vg_session *s = vg_session_new(g, &so, &st);
    double *tf = malloc((size_t)reps * sizeof(double)), *tb = malloc((size_t)reps * sizeof(double)),
           *th = malloc((size_t)reps * sizeof(double));
    float *buf = malloc((size_t)elems * sizeof(float));
    for (int64_t i = 0; i < elems; i++) buf[i] = 0.5f + (float)rank;
    for (int r = -5; r < reps; r++) { /* interleaved */
        vg_dist_barrier(&st);
        double t0 = now_s();
        if (vg_session_run_targets(s, &op, 1, &st) != VG_OK) {
            fprintf(stderr, "run: %s\n", st.msg);
            return 1;
        }
        double t1 = now_s();
        vg_dist_barrier(&st);
        double t2 = now_s();
#ifdef BENCH_HAVE_MPI
        if (size > 1) MPI_Allreduce(MPI_IN_PLACE, buf, (int)elems, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
        double t3 = now_s();
        vg_dist_barrier(&st);
        double t4 = now_s();
        vg_dist_allreduce(buf, elems, VG_FLOAT, VG_REDUCE_SUM, &st); /* through the communication thread */
        double t5 = now_s();
        if (r >= 0) {
            tf[r] = t1 - t0;
            tb[r] = t3 - t2;
            th[r] = t5 - t4;
        }
    }
    qsort(tf, (size_t)reps, sizeof *tf, cmp_d);
    qsort(tb, (size_t)reps, sizeof *tb, cmp_d);
    qsort(th, (size_t)reps, sizeof *th, cmp_d);
    double f = tf[reps / 2], b = tb[reps / 2];
    if (rank == 0)
        printf("{\"bench\":\"fused_allreduce\",\"model\":\"%s\",\"ranks\":%d,\"tensors\":%d,\"bytes\":%lld,"
               "\"fused_median_ms\":%.4f,\"bare_mpi_allreduce_median_ms\":%.4f,\"fused_over_bare\":%.3f,"
               "\"fused_gb_per_s\":%.3f,\"average\":%s,\"host_allreduce_median_ms\":%.4f,\"compression\":\"%s\"}\n",
               cnn ? "cnn" : "mlp", size, n, (long long)(elems * 4), f * 1e3, b * 1e3, f > 0 ? b / f : 0,
               f > 0 ? (double)elems * 4 / f / 1e9 : 0, average ? "true" : "false", th[reps / 2] * 1e3,
               fp16 ? "fp16" : "none");
    free(tf);
    free(tb);
    free(th);
    free(buf);
    vg_session_free(s);
    vg_graph_free(g);
    return 0;
}

/* Bare MPI_Allreduce (sum, float32, reused buffer) over message sizes: the latency and
 * bandwidth terms of docs/distributed.md's scaling model. */
static int bench_sizes(int reps, int rank, int size) {
    vg_status st;
    static const int64_t bytes[] = {4, 4096, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
    float *buf = calloc((size_t)(64 << 20) / 4, 4);
    double *t = malloc((size_t)reps * sizeof(double));
    for (size_t k = 0; k < sizeof bytes / sizeof bytes[0]; k++) {
        int n = bytes[k] >= (16 << 20) ? (reps < 10 ? reps : 10) : reps;
        for (int r = -2; r < n; r++) {
            vg_dist_barrier(&st);
            double t0 = now_s();
#ifdef BENCH_HAVE_MPI
            if (size > 1) MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bytes[k] / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
            if (r >= 0) t[r] = now_s() - t0;
        }
        qsort(t, (size_t)n, sizeof *t, cmp_d);
        if (rank == 0)
            printf("{\"bench\":\"mpi_allreduce_size\",\"ranks\":%d,\"bytes\":%lld,\"median_ms\":%.4f,"
                   "\"algbw_gb_per_s\":%.3f}\n",
                   size, (long long)bytes[k], t[n / 2] * 1e3, (double)bytes[k] / t[n / 2] / 1e9);
    }
    free(buf);
    free(t);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = "train";
    bool cnn = false;
    int steps = -1, threads = 1, reps = 200;
    bool average = false; /* a bare MPI_Allreduce sums: compare like with like */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--model")) cnn = !strcmp(argv[i + 1], "cnn");
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--average")) average = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--fusion-threshold")) fusion_threshold = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--inter")) inter = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--compression")) fp16 = !strcmp(argv[i + 1], "fp16");
        else if (!strcmp(argv[i], "--hierarchical")) hierarchical = atoi(argv[i + 1]) != 0;
        else {
            fprintf(stderr, "usage: bench_allreduce [--mode train|fused|sizes] [--model mlp|cnn] [--steps S] [--threads T] "
                            "[--reps R] [--average 0|1] [--fusion-threshold BYTES] [--inter T] [--compression none|fp16] "
                            "[--hierarchical 0|1]\n");
            return 2;
        }
    }
    if (steps < 0) steps = cnn ? 40 : 400;
    vg_status st;
    if (vg_dist_init(&st) != VG_OK) {
        fprintf(stderr, "%s\n", st.msg);
        return 1;
    }
    int rank = vg_dist_rank(), size = vg_dist_size(), rc;
    if (!strcmp(mode, "fused")) rc = bench_fused(cnn, reps, average, rank, size);
    else if (!strcmp(mode, "sizes")) rc = bench_sizes(reps, rank, size);
    else rc = bench_train(cnn, steps, threads, rank, size);
    vg_dist_finalize(&st);
    return rc;
}
