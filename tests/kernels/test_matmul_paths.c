/* test_matmul_paths.c - every float32 GEMM path MatMul can take (issue 30, h39) against a
 * double-precision loop: the cached oneDNN matmul primitive (vg__dnnl_matmul), bare
 * dnnl_sgemm (vg__dnnl_sgemm), the per-shape choice (vg__dnnl_gemm, with BLAS when it
 * declines), and the MatMul op through a session at 1 and 2 intra-op threads (where
 * vigil splits rows, columns or the reduction over its pool). Shapes: the model suite's
 * (PTB LM softmax and per-step gradients, graph-network MLPs; their large products are
 * checked on a sample of entries), odd sizes, all four transpose combinations, and
 * leading dimensions wider than the matrix (the entries past the matrix in C must stay
 * as they were). Also run under DNNL_MAX_CPU_ISA=AVX2/AVX/SSE41 (cmake/VigilTests.cmake)
 * and under MALLOC_PERTURB_ in CI. */
#include "test_util.h"
#include "kernels/backend/dnnl_backend.h"
#include "vigil/vigil.h"
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    int64_t M, N, K;
    int sampled; /* check a sample of entries only (the product is too large for the loop) */
    int t_only;  /* -1: all four transpose combinations; else ta + 2 tb, the suite's one */
} shape;

static const shape shapes[] = {
    {1, 1, 1, 0, -1},        {3, 5, 7, 0, -1},         {17, 33, 129, 0, -1},    {31, 1, 300, 0, -1},
    {1, 257, 64, 0, -1},     {20, 768, 2048, 0, -1},   {20, 1024, 2048, 0, -1}, {19, 771, 1031, 0, -1},
    {33, 100, 900, 0, -1},   {2048, 128, 256, 1, -1},  {12288, 128, 384, 1, -1}, {384, 128, 12288, 1, -1},
    {12288, 384, 128, 1, 2}, {700, 512, 10000, 1, 2},  {512, 10000, 700, 1, 1},  {700, 10000, 512, 1, 0},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static uint32_t g_seed = 12345;
static float rnd(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)((g_seed >> 8) & 0xffffff) / (float)(1 << 24) - 0.5f;
}

/* Row-major op(A) (r x c) entry (i, j) of a matrix stored with leading dimension ld. */
static double at(const float *X, int64_t ld, int t, int64_t i, int64_t j) {
    return t ? X[j * ld + i] : X[i * ld + j];
}

/* C's entry (i, j) against the double loop; the bound is the worst case of a float32
 * sum of K products, (K + 2) eps sum |a b|, which a wrong entry exceeds by far. */
static int check_entry(const float *A, int64_t lda, int ta, const float *B, int64_t ldb, int tb, int64_t K,
                       const float *C, int64_t ldc, int64_t i, int64_t j, float beta, float c0) {
    double s = 0, sa = 0;
    for (int64_t k = 0; k < K; k++) {
        double p = at(A, lda, ta, i, k) * at(B, ldb, tb, k, j);
        s += p;
        sa += fabs(p);
    }
    s += (double)beta * c0;
    sa += fabs((double)beta * c0);
    double got = C[i * ldc + j];
    return fabs(got - s) <= (double)(K + 2) * FLT_EPSILON * sa + 1e-30;
}

/* Checks C (M x N, ldc) against the loop: every entry, or 97 spread ones plus the corners. */
static int count_bad(const shape *s, const float *A, int64_t lda, int ta, const float *B, int64_t ldb, int tb,
                     const float *C, int64_t ldc, float beta, const float *C0) {
    int bad = 0;
    if (!s->sampled) {
        for (int64_t i = 0; i < s->M; i++)
            for (int64_t j = 0; j < s->N; j++)
                bad += !check_entry(A, lda, ta, B, ldb, tb, s->K, C, ldc, i, j, beta, C0 ? C0[i * ldc + j] : 0);
        return bad;
    }
    for (int q = 0; q < 101; q++) {
        int64_t i = q < 4 ? (q & 1 ? s->M - 1 : 0) : (int64_t)((uint64_t)q * 2654435761u % (uint64_t)s->M);
        int64_t j = q < 4 ? (q & 2 ? s->N - 1 : 0) : (int64_t)((uint64_t)q * 40503u % (uint64_t)s->N);
        bad += !check_entry(A, lda, ta, B, ldb, tb, s->K, C, ldc, i, j, beta, C0 ? C0[i * ldc + j] : 0);
    }
    return bad;
}

typedef struct operands {
    float *A, *B, *C, *C0;
    int64_t lda, ldb, ldc, nc;
} operands;

/* Operands for s with transposes ta, tb and `pad` extra columns in every leading
 * dimension; C and C0 filled with the same sentinel-free random values. */
static int make(const shape *s, int ta, int tb, int64_t pad, operands *o) {
    int64_t ar = ta ? s->K : s->M, ac = ta ? s->M : s->K, br = tb ? s->N : s->K, bc = tb ? s->K : s->N;
    o->lda = ac + pad, o->ldb = bc + pad, o->ldc = s->N + pad;
    o->nc = s->M * o->ldc;
    o->A = malloc(sizeof(float) * (size_t)(ar * o->lda));
    o->B = malloc(sizeof(float) * (size_t)(br * o->ldb));
    o->C = malloc(sizeof(float) * (size_t)o->nc);
    o->C0 = malloc(sizeof(float) * (size_t)o->nc);
    if (!o->A || !o->B || !o->C || !o->C0) return -1;
    for (int64_t i = 0; i < ar * o->lda; i++) o->A[i] = rnd();
    for (int64_t i = 0; i < br * o->ldb; i++) o->B[i] = rnd();
    for (int64_t i = 0; i < o->nc; i++) o->C0[i] = o->C[i] = rnd();
    return 0;
}

static void release(operands *o) {
    free(o->A), free(o->B), free(o->C), free(o->C0);
}

/* The columns past N in each row of C untouched. */
static int pad_changed(const shape *s, const operands *o) {
    int n = 0;
    for (int64_t i = 0; i < s->M; i++)
        for (int64_t j = s->N; j < o->ldc; j++) n += o->C[i * o->ldc + j] != o->C0[i * o->ldc + j];
    return n;
}

enum { P_MATMUL, P_SGEMM, P_AUTO };

static void test_matmul_paths__direct(void) {
    float one = 1, out = 0;
    if (!vg__dnnl_sgemm(false, false, 1, 1, 1, &one, 1, &one, 1, 0.0f, &out, 1)) {
        printf("  (built without oneDNN: the oneDNN paths are not checked)\n");
        return;
    }
    for (int si = 0; si < NSHAPES; si++) {
        const shape *s = &shapes[si];
        for (int t = 0; t < 4; t++) {
            if (s->t_only >= 0 && t != s->t_only) continue;
            int ta = t & 1, tb = t >> 1;
            for (int path = P_MATMUL; path <= P_AUTO; path++) {
                /* padded leading dimensions on the small shapes (every entry checked) */
                for (int64_t pad = 0; pad <= (s->sampled ? 0 : 3); pad += 3) {
                    operands o;
                    CHECK_EQ_INT(make(s, ta, tb, pad, &o), 0);
                    float beta = path == P_MATMUL || pad == 0 ? 0.0f : 0.5f;
                    bool ok = false;
                    if (path == P_MATMUL)
                        ok = vg__dnnl_matmul(ta, tb, s->M, s->N, s->K, o.A, o.lda, o.B, o.ldb, o.C, o.ldc);
                    else if (path == P_SGEMM)
                        ok = vg__dnnl_sgemm(ta, tb, s->M, s->N, s->K, o.A, o.lda, o.B, o.ldb, beta, o.C, o.ldc);
                    else if (!(ok = vg__dnnl_gemm(ta, tb, s->M, s->N, s->K, o.A, o.lda, o.B, o.ldb, beta, o.C,
                                                  o.ldc))) {
                        /* declined: C untouched, and the caller's BLAS runs it */
                        CHECK_EQ_INT(memcmp(o.C, o.C0, sizeof(float) * (size_t)o.nc), 0);
                        CHECK_EQ_INT(vg__dnnl_gemm_path(ta, tb, s->M, s->N, s->K, beta), VG__GEMM_BLAS);
                        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                                    (int)s->M, (int)s->N, (int)s->K, 1.0f, o.A, (int)o.lda, o.B, (int)o.ldb, beta, o.C,
                                    (int)o.ldc);
                        ok = true;
                    }
                    CHECK(ok);
                    int bad = count_bad(s, o.A, o.lda, ta, o.B, o.ldb, tb, o.C, o.ldc, beta, beta != 0 ? o.C0 : NULL);
                    if (bad)
                        printf("  path %d: %lldx%lldx%lld ta %d tb %d pad %lld: %d bad entries\n", path,
                               (long long)s->M, (long long)s->N, (long long)s->K, ta, tb, (long long)pad, bad);
                    CHECK_EQ_INT(bad, 0);
                    CHECK_EQ_INT(pad_changed(s, &o), 0);
                    release(&o);
                }
            }
        }
    }
}

/* The choice: the PTB LSTM's per-step gradient product takes the matmul primitive when
 * oneDNN is the backend (and so does the graph network's weight gradient); the 10000-column
 * softmax, small products and beta != 0 stay on dnnl_sgemm; with the
 * OpenBLAS backend everything goes to BLAS. */
static void test_matmul_paths__choice(void) {
    vg_status st;
    vg_backend was = vg_backend_get();
    if (was == VG_BACKEND_DNNL) {
        CHECK_EQ_INT(vg__dnnl_gemm_path(false, true, 20, 768, 2048, 0.0f), VG__GEMM_DNNL_MATMUL);
        CHECK_EQ_INT(vg__dnnl_gemm_path(false, true, 20, 768, 2048, 1.0f), VG__GEMM_DNNL_SGEMM);
        CHECK_EQ_INT(vg__dnnl_gemm_path(false, true, 20, 384, 2048, 0.0f), VG__GEMM_DNNL_MATMUL); /* 2-thread half */
        CHECK_EQ_INT(vg__dnnl_gemm_path(true, false, 384, 128, 12288, 0.0f), VG__GEMM_DNNL_MATMUL);
        CHECK_EQ_INT(vg__dnnl_gemm_path(false, false, 700, 10000, 512, 0.0f), VG__GEMM_DNNL_SGEMM);
        CHECK_EQ_INT(vg__dnnl_gemm_path(false, false, 4, 4, 4, 0.0f), VG__GEMM_DNNL_SGEMM);
        CHECK_EQ_INT(vg__dnnl_gemm_path(false, false, 64, 256, 784, 0.0f), VG__GEMM_DNNL_SGEMM); /* MLP */
        int w = vg__dnnl_gemm_path(true, false, 512, 10000, 700, 0.0f); /* BLAS where it runs AVX-512 kernels */
        CHECK(w == VG__GEMM_BLAS || w == VG__GEMM_DNNL_SGEMM);
    }
    CHECK_OK(vg_backend_set(VG_BACKEND_OPENBLAS, &st), &st);
    CHECK_EQ_INT(vg__dnnl_gemm_path(false, true, 20, 768, 2048, 0.0f), VG__GEMM_BLAS);
    float a = 2, b = 3, c = 7;
    CHECK(!vg__dnnl_gemm(false, false, 1, 1, 1, &a, 1, &b, 1, 0.0f, &c, 1));
    CHECK_EQ_INT(c == 7.0f, 1);
    CHECK_OK(vg_backend_set(was, &st), &st);
}

/* The MatMul op through a session, 1 and 2 intra-op threads, both backends. */
static void test_matmul_paths__session(void) {
    vg_status st;
    vg_backend was = vg_backend_get();
    for (int be = 0; be < 2; be++) {
        if (be == 1 && vg_backend_set(VG_BACKEND_OPENBLAS, &st)) break;
        for (int si = 0; si < NSHAPES; si++) {
            const shape *s = &shapes[si];
            if (s->sampled && be == 1) continue; /* the large ones once */
            for (int t = 0; t < 4; t++) {
                if (s->t_only >= 0 && t != s->t_only) continue;
                int ta = t & 1, tb = t >> 1;
                operands o;
                CHECK_EQ_INT(make(s, ta, tb, 0, &o), 0);
                int64_t ad[2] = {ta ? s->K : s->M, ta ? s->M : s->K}, bd[2] = {tb ? s->N : s->K, tb ? s->K : s->N};
                vg_tensor *va = vg_tensor_new_copy(VG_FLOAT, ad, 2, o.A, sizeof(float) * (size_t)(ad[0] * ad[1]), &st);
                vg_tensor *vb = vg_tensor_new_copy(VG_FLOAT, bd, 2, o.B, sizeof(float) * (size_t)(bd[0] * bd[1]), &st);
                CHECK(va && vb);
                vg_graph *g = vg_graph_new();
                vg_output pa = vg_placeholder(g, VG_FLOAT, ad, 2, "a"), pb = vg_placeholder(g, VG_FLOAT, bd, 2, "b");
                vg_output y = vg_matmul(g, pa, pb, ta, tb, "mm");
                for (int threads = 1; threads <= 2; threads++) {
                    vg_session_options opt = {.intra_op_threads = threads, .inter_op_threads = 1};
                    vg_session *sess = vg_session_new(g, &opt, &st);
                    CHECK(sess != NULL);
                    vg_output feeds[2] = {pa, pb};
                    vg_tensor *vals[2] = {va, vb}, *out = NULL;
                    CHECK_OK(vg_session_run(sess, NULL, feeds, vals, 2, &y, &out, 1, NULL, 0, NULL, &st), &st);
                    CHECK_EQ_INT(vg_tensor_dim(out, 0), s->M);
                    CHECK_EQ_INT(vg_tensor_dim(out, 1), s->N);
                    int bad = count_bad(s, o.A, ad[1], ta, o.B, bd[1], tb, vg_tensor_data(out), s->N, 0.0f, NULL);
                    if (bad)
                        printf("  session (%s, %d threads): %lldx%lldx%lld ta %d tb %d: %d bad entries\n",
                               be ? "openblas" : "auto", threads, (long long)s->M, (long long)s->N, (long long)s->K,
                               ta, tb, bad);
                    CHECK_EQ_INT(bad, 0);
                    vg_tensor_free(out);
                    vg_session_free(sess);
                }
                vg_graph_free(g);
                vg_tensor_free(va);
                vg_tensor_free(vb);
                release(&o);
            }
        }
    }
    CHECK_OK(vg_backend_set(was, &st), &st);
}

int main(void) {
    RUN_TEST(test_matmul_paths__direct);
    RUN_TEST(test_matmul_paths__choice);
    RUN_TEST(test_matmul_paths__session);
    TEST_MAIN_END();
}
