/* bench_matmul.c - the MatMul kernel against a bare OpenBLAS cblas_sgemm on the eight
 * GEMM shapes of an MLP 784-256-256-10 training step at batch 64 (the shapes of
 * bench/blas_compare.c), one thread.
 *
 * Three timings per shape, interleaved rep by rep so that machine noise hits all alike:
 *   sgemm:   cblas_sgemm on preallocated buffers (the bound);
 *   kernel:  a session run of a graph of NOPS independent MatMul ops on the same two fed
 *            placeholders (a NoOp target groups them), divided by NOPS: the kernel with
 *            its executor dispatch and output allocation, feed/run overhead amortized;
 *   session: a session run of one MatMul with both inputs fed and the product fetched.
 * Each timing is the median of REPS repetitions of >= ~20 ms (iterations calibrated).
 * GFLOP/s figures are total flops of the eight shapes over the sum of their medians.
 *
 * Output: one JSON line {"bench":"matmul", "shapes":[...], "sgemm_gflops", "vigil_gflops"
 * (kernel path), "session_gflops", "ratio" (vigil/sgemm), "session_ratio",
 * "dnnl_sgemm_gflops" (bare oneDNN sgemm, interleaved as a fourth timing when vigil is
 * built with oneDNN and threads = 1), "best_bare_gflops", "vigil_over_best" (the issue's
 * >= 0.9 target), "backend"}.
 * Run: ./bench_matmul [--suite] [--cputime] [reps [threads]]   (not part of ctest).
 *   --suite: issue 30's model-suite shapes instead of the MLP's (the PTB LSTM LM's
 *            softmax products and per-step input/state gradients, the graph-network
 *            block's MLP products and their gradients), with two more bare timings per
 *            shape at 1 thread: "dnnl_matmul" (the cached oneDNN matmul primitive,
 *            vg__dnnl_matmul) and "auto" (vg__dnnl_gemm: the path vigil picks, with
 *            cblas_sgemm where it declines); "path" names the pick.
 *   --cputime: time by the process's CPU time instead of the wall clock (steadier on
 *            a loaded machine; meaningful at 1 thread only). With threads > 1 the
 * sessions get that many intra-op threads and the bare sgemm that many OpenBLAS
 * threads (vigil's kernels call OpenBLAS single-threaded and split the GEMM themselves).
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"
#include "vigil/vigil.h"
#include "kernels/backend/dnnl_backend.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern void openblas_set_num_threads(int num_threads);

#define NOPS 16
#define MAX_REPS 31

typedef struct shape {
    const char *name;
    int M, N, K, ta, tb;
} shape;

static const shape mlp_shapes[] = {
    {"fwd_L1", 64, 256, 784, 0, 0},  /* X[64x784] @ W1[784x256] */
    {"fwd_L2", 64, 256, 256, 0, 0},  /* H1 @ W2 */
    {"fwd_L3", 64, 10, 256, 0, 0},   /* H2 @ W3[256x10] */
    {"bwd_dW3", 256, 10, 64, 1, 0},  /* H2^T @ dY */
    {"bwd_dH2", 64, 256, 10, 0, 1},  /* dY @ W3^T */
    {"bwd_dW2", 256, 256, 64, 1, 0}, /* H1^T @ dH2 */
    {"bwd_dH1", 64, 256, 256, 0, 1}, /* dH2 @ W2^T */
    {"bwd_dW1", 784, 256, 64, 1, 0}, /* X^T @ dH1 */
};

/* --suite: the model suite's GEMMs (bench/models/ptb_lm.c, graph_net.c) */
static const shape suite_shapes[] = {
    {"ptb_softmax_fwd", 700, 10000, 512, 0, 0},  /* [700, 512] x [512, 10000] */
    {"ptb_softmax_dx", 700, 512, 10000, 0, 1},   /* dlogits x W^T */
    {"ptb_softmax_dw", 512, 10000, 700, 1, 0},   /* X^T x dlogits */
    {"ptb_lstm0_dx", 20, 768, 2048, 0, 1},       /* per step: dgates [20, 2048] x W0[768, 2048]^T */
    {"ptb_lstm1_dx", 20, 1024, 2048, 0, 1},      /* dgates x W1[1024, 2048]^T */
    {"gn_edge0_fwd", 12288, 128, 384, 0, 0},     /* edges [12288, 384] x [384, 128] */
    {"gn_edge0_dx", 12288, 384, 128, 0, 1},
    {"gn_edge0_dw", 384, 128, 12288, 1, 0},
    {"gn_edge1_fwd", 12288, 128, 128, 0, 0},
    {"gn_edge1_dx", 12288, 128, 128, 0, 1},
    {"gn_edge1_dw", 128, 128, 12288, 1, 0},
    {"gn_node0_fwd", 2048, 128, 256, 0, 0},
    {"gn_node0_dx", 2048, 256, 128, 0, 1},
    {"gn_node0_dw", 256, 128, 2048, 1, 0},
};
#define NSUITE ((int)(sizeof suite_shapes / sizeof suite_shapes[0]))
#define NSHAPES_MAX (NSUITE > 8 ? NSUITE : 8)
#define NKINDS 6
static const char *const path_names[] = {"blas", "dnnl_sgemm", "dnnl_matmul"};

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static vg_tensor *rand_tensor(int64_t r, int64_t c) {
    int64_t dims[2] = {r, c};
    vg_tensor *t = vg_tensor_new(VG_FLOAT, dims, 2, NULL);
    if (!t) return NULL;
    float *p = vg_tensor_data(t);
    for (int64_t i = 0; i < r * c; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return t;
}

/* One timed candidate: a callable with state. */
typedef struct cand {
    int kind; /* 0 sgemm, 1 kernel path, 2 session path, 3 bare dnnl_sgemm (1 thread),
                 4 bare dnnl matmul primitive, 5 vg__dnnl_gemm's pick (both 1 thread, --suite) */
    const shape *s;
    const float *A, *B;
    float *C;
    vg_session *sess;
    vg_output feeds[2];
    vg_tensor *vals[2];
    vg_output fetch;
    vg_op *target;
    long iters;
    double per_call[MAX_REPS];
} cand;

static int call(cand *c) {
    const shape *s = c->s;
    vg_status st;
    if (c->kind == 0) {
        cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->M, s->N,
                    s->K, 1.0f, c->A, s->ta ? s->M : s->K, c->B, s->tb ? s->K : s->N, 0.0f, c->C, s->N);
        return 0;
    }
    if (c->kind == 3) {
        vg__dnnl_sgemm(s->ta, s->tb, s->M, s->N, s->K, c->A, s->ta ? s->M : s->K, c->B, s->tb ? s->K : s->N, 0.0f,
                       c->C, s->N);
        return 0;
    }
    if (c->kind == 4) {
        vg__dnnl_matmul(s->ta, s->tb, s->M, s->N, s->K, c->A, s->ta ? s->M : s->K, c->B, s->tb ? s->K : s->N, c->C,
                        s->N);
        return 0;
    }
    if (c->kind == 5) {
        if (!vg__dnnl_gemm(s->ta, s->tb, s->M, s->N, s->K, c->A, s->ta ? s->M : s->K, c->B, s->tb ? s->K : s->N,
                           0.0f, c->C, s->N))
            cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->M,
                        s->N, s->K, 1.0f, c->A, s->ta ? s->M : s->K, c->B, s->tb ? s->K : s->N, 0.0f, c->C, s->N);
        return 0;
    }
    if (c->kind == 1) return vg_session_run(c->sess, NULL, c->feeds, c->vals, 2, NULL, NULL, 0, &c->target, 1, NULL, &st);
    vg_tensor *out = NULL;
    int rc = vg_session_run(c->sess, NULL, c->feeds, c->vals, 2, &c->fetch, &out, 1, NULL, 0, NULL, &st);
    vg_tensor_free(out);
    return rc;
}

static int g_cputime;

static double clock_s(void) {
    if (!g_cputime) return now_s();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Iterations so that one repetition lasts >= 20 ms. */
static void calibrate(cand *c) {
    for (int i = 0; i < 3; i++) call(c);
    c->iters = 1;
    for (;;) {
        double t0 = clock_s();
        for (long i = 0; i < c->iters; i++) call(c);
        if (clock_s() - t0 >= 0.02) break;
        c->iters *= 2;
    }
}

static int g_threads = 1;

static double rep(cand *c) {
    /* bare sgemm threads itself; vigil's kernels expect single-threaded OpenBLAS */
    openblas_set_num_threads(c->kind == 0 ? g_threads : 1);
    double t0 = clock_s();
    for (long i = 0; i < c->iters; i++) call(c);
    return (clock_s() - t0) / (double)c->iters;
}

int main(int argc, char **argv) {
    int suite = 0;
    while (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-') {
        if (!strcmp(argv[1], "--suite")) suite = 1;
        else if (!strcmp(argv[1], "--cputime")) g_cputime = 1;
        else {
            fprintf(stderr, "usage: bench_matmul [--suite] [--cputime] [reps [threads]]\n");
            return 2;
        }
        argv++, argc--;
    }
    const shape *shapes = suite ? suite_shapes : mlp_shapes;
    int NSHAPES = suite ? NSUITE : (int)(sizeof mlp_shapes / sizeof mlp_shapes[0]);
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 5) reps = 5;
    if (reps > MAX_REPS) reps = MAX_REPS;
    g_threads = argc > 2 ? atoi(argv[2]) : 1;
    if (g_threads < 1) g_threads = 1;
    openblas_set_num_threads(1);
    srand(1);
    /* oneDNN's sgemm as a second bare bound when vigil has it (1 thread only) */
    float one = 1, out1 = 0;
    int nk = g_threads == 1 && vg__dnnl_sgemm(false, false, 1, 1, 1, &one, 1, &one, 1, 0.0f, &out1, 1) ? 4 : 3;
    if (nk == 4) nk = NKINDS;
    double med[NSHAPES_MAX][NKINDS] = {{0}}, tot[NKINDS] = {0}, flops_total = 0;
    vg_status st;
    for (int si = 0; si < NSHAPES; si++) {
        const shape *s = &shapes[si];
        int64_t ar = s->ta ? s->K : s->M, ac = s->ta ? s->M : s->K;
        int64_t br = s->tb ? s->N : s->K, bc = s->tb ? s->K : s->N;
        vg_tensor *a = rand_tensor(ar, ac), *b = rand_tensor(br, bc);
        float *C = NULL;
        if (!a || !b || posix_memalign((void **)&C, 64, sizeof(float) * (size_t)s->M * (size_t)s->N)) {
            fprintf(stderr, "allocation failed\n");
            return 1;
        }
        /* graphs: one MatMul (session path) and NOPS MatMuls grouped (kernel path) */
        vg_graph *g1 = vg_graph_new(), *gn = vg_graph_new();
        int64_t ad[2] = {ar, ac}, bd[2] = {br, bc};
        vg_output a1 = vg_placeholder(g1, VG_FLOAT, ad, 2, "a"), b1 = vg_placeholder(g1, VG_FLOAT, bd, 2, "b");
        vg_output mm1 = vg_matmul(g1, a1, b1, s->ta, s->tb, NULL);
        vg_output an = vg_placeholder(gn, VG_FLOAT, ad, 2, "a"), bn = vg_placeholder(gn, VG_FLOAT, bd, 2, "b");
        vg_op *mms[NOPS];
        for (int i = 0; i < NOPS; i++) mms[i] = vg_matmul(gn, an, bn, s->ta, s->tb, NULL).op;
        vg_op *group = vg_group(gn, mms, NOPS, "all");
        vg_session_options o = {0};
        o.intra_op_threads = g_threads;
        o.inter_op_threads = 1;
        vg_session *s1 = vg_session_new(g1, &o, &st), *sn = s1 ? vg_session_new(gn, &o, &st) : NULL;
        if (!s1 || !sn) {
            fprintf(stderr, "session: %s\n", st.msg);
            return 1;
        }
        cand c[NKINDS] = {
            {.kind = 0, .s = s, .A = vg_tensor_data(a), .B = vg_tensor_data(b), .C = C},
            {.kind = 1, .s = s, .sess = sn, .feeds = {an, bn}, .vals = {a, b}, .target = group},
            {.kind = 2, .s = s, .sess = s1, .feeds = {a1, b1}, .vals = {a, b}, .fetch = mm1},
            {.kind = 3, .s = s, .A = vg_tensor_data(a), .B = vg_tensor_data(b), .C = C},
            {.kind = 4, .s = s, .A = vg_tensor_data(a), .B = vg_tensor_data(b), .C = C},
            {.kind = 5, .s = s, .A = vg_tensor_data(a), .B = vg_tensor_data(b), .C = C},
        };
        for (int k = 0; k < nk; k++) {
            openblas_set_num_threads(k == 0 ? g_threads : 1);
            if (call(&c[k]) != 0) {
                fprintf(stderr, "%s: run failed\n", s->name);
                return 1;
            }
            calibrate(&c[k]);
        }
        for (int r = 0; r < reps; r++)
            for (int k = 0; k < nk; k++) c[k].per_call[r] = rep(&c[k]);
        double flops = 2.0 * s->M * s->N * s->K;
        flops_total += flops;
        for (int k = 0; k < nk; k++) {
            qsort(c[k].per_call, (size_t)reps, sizeof(double), cmp_d);
            med[si][k] = c[k].per_call[reps / 2] / (k == 1 ? NOPS : 1);
            tot[k] += med[si][k];
        }
        vg_session_free(s1);
        vg_session_free(sn);
        vg_graph_free(g1);
        vg_graph_free(gn);
        vg_tensor_free(a);
        vg_tensor_free(b);
        free(C);
    }
    printf("{\"bench\":\"matmul\",\"set\":\"%s\",\"clock\":\"%s\",\"threads\":%d,\"reps\":%d,\"ops_per_run\":%d,"
           "\"shapes\":[",
           suite ? "suite" : "mlp", g_cputime ? "cpu" : "wall", g_threads, reps, NOPS);
    for (int si = 0; si < NSHAPES; si++) {
        const shape *s = &shapes[si];
        printf("%s{\"name\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,\"ta\":%d,\"tb\":%d,\"sgemm_us\":%.2f,\"kernel_us\":%.2f,"
               "\"session_us\":%.2f,\"ratio\":%.3f,\"dnnl_sgemm_us\":%.2f",
               si ? "," : "", s->name, s->M, s->N, s->K, s->ta, s->tb, med[si][0] * 1e6, med[si][1] * 1e6,
               med[si][2] * 1e6, med[si][0] / med[si][1], nk > 3 ? med[si][3] * 1e6 : -1.0);
        double gf = 2e-9 * s->M * s->N * s->K;
        if (nk > 4)
            printf(",\"dnnl_matmul_us\":%.2f,\"auto_us\":%.2f,\"path\":\"%s\",\"gflops\":{\"sgemm\":%.1f,"
                   "\"kernel\":%.1f,\"dnnl_sgemm\":%.1f,\"dnnl_matmul\":%.1f,\"auto\":%.1f}",
                   nk > 4 ? med[si][4] * 1e6 : -1.0, nk > 5 ? med[si][5] * 1e6 : -1.0,
                   path_names[vg__dnnl_gemm_path(s->ta, s->tb, s->M, s->N, s->K, 0.0f)], gf / med[si][0],
                   gf / med[si][1], nk > 3 ? gf / med[si][3] : -1.0, nk > 4 ? gf / med[si][4] : -1.0,
                   nk > 5 ? gf / med[si][5] : -1.0);
        printf("}");
    }
    printf("],\"sgemm_us\":%.1f,\"vigil_us\":%.1f,\"session_us\":%.1f,\"sgemm_gflops\":%.2f,\"vigil_gflops\":%.2f,"
           "\"session_gflops\":%.2f,\"ratio\":%.3f,\"session_ratio\":%.3f",
           tot[0] * 1e6, tot[1] * 1e6, tot[2] * 1e6, flops_total / tot[0] * 1e-9, flops_total / tot[1] * 1e-9,
           flops_total / tot[2] * 1e-9, tot[0] / tot[1], tot[0] / tot[2]);
    /* best bare sgemm of the backends measured; vigil's kernel path against it */
    double best = nk > 3 && tot[3] < tot[0] ? tot[3] : tot[0];
    printf(",\"dnnl_sgemm_gflops\":%.2f,\"best_bare_gflops\":%.2f,\"vigil_over_best\":%.3f,\"backend\":\"%s\"}\n",
           nk > 3 ? flops_total / tot[3] * 1e-9 : -1.0, flops_total / best * 1e-9, best / tot[1],
           vg_backend_name(vg_backend_get()));
    return 0;
}
