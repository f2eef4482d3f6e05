/*
 * blas_compare.c - single-threaded sgemm (and conv) throughput of OpenBLAS, BLIS and
 * oneDNN on the GEMM shapes of vigil's training benchmarks (bench_train: MLP
 * 784-256-256-10 and the CNN, batch 64). Not part of the build; run through
 * bench/blas_compare.sh, which compiles this file once per library (OpenBLAS and BLIS
 * both export cblas_sgemm, so they cannot share an executable):
 *
 *   -DUSE_OPENBLAS  cblas_sgemm                 (-lopenblas)
 *   -DUSE_BLIS      bli_sgemm, BLIS typed API    (libblis.so.4, serial build)
 *   -DUSE_DNNL      dnnl_sgemm; also the matmul primitive and the convolution
 *                   primitives (forward, backward data, backward weights)   (-ldnnl)
 *
 * Every build also times vigil's conv algorithm (im2col + GEMM in row chunks of
 * 512 KiB of im2col buffer, as in src/kernels/nn/conv_ops.c) through its GEMM.
 *
 * Shapes. MLP: the eight GEMMs of one step (784x256, 256x256, 256x10 forward and backward at batch 64). CNN conv: the
 * GEMMs conv_ops.c issues, i.e. one chunk of nr = 512 KiB / (kd*4) rows, weighted by
 * rows/nr chunks per step (conv1: nr 5242 of 50176 rows, kd 25; conv2: nr 163 of 12544
 * rows, kd 800); conv1's input gradient is not computed (the input is a placeholder).
 * CNN dense: 3136->128->10 forward and backward.
 *
 * Timing: per shape, warm-up, then REPS repetitions of >= MIN_REP_S each (iteration
 * count calibrated); the median repetition is reported. A workload's time is the
 * count-weighted sum of its shapes' medians; its GFLOP/s is its flops over that time.
 * Output: one JSON line per library variant on stdout.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(USE_OPENBLAS)
#include <cblas.h>
extern char *openblas_get_config(void);
extern char *openblas_get_corename(void);
extern void openblas_set_num_threads(int);
extern int openblas_get_num_threads(void);
#define LIBNAME "openblas"
#elif defined(USE_BLIS)
#include <blis.h>
#define LIBNAME "blis"
#elif defined(USE_DNNL)
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#define LIBNAME "dnnl"
#else
#error "define USE_OPENBLAS, USE_BLIS or USE_DNNL"
#endif

enum { REPS = 7 };
static const double MIN_REP_S = 0.02;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *randbuf(size_t n) {
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, (n ? n : 1) * sizeof(float)) != 0) abort();
    for (size_t i = 0; i < n; i++) p[i] = (float)rand() / RAND_MAX - 0.5f;
    return p;
}

/* Median seconds per call of fn(arg). */
static double time_fn(void (*fn)(void *), void *arg) {
    for (int i = 0; i < 3; i++) fn(arg);
    long iters = 1;
    for (;;) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) fn(arg);
        double dt = now_s() - t0;
        if (dt >= MIN_REP_S) break;
        iters = dt > 0 ? (long)(iters * (MIN_REP_S * 1.2 / dt)) + 1 : iters * 2;
    }
    double per[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) fn(arg);
        per[r] = (now_s() - t0) / iters;
    }
    qsort(per, REPS, sizeof per[0], cmp_d);
    return per[REPS / 2];
}

/* ------------------------------------------------------------------------ */
/* The GEMM of each library: C[MxN] = alpha op(A) op(B) + beta C, row-major. */

static void gemm(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta,
                 float *C, int ldc) {
#if defined(USE_OPENBLAS)
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, lda,
                B, ldb, beta, C, ldc);
#elif defined(USE_BLIS)
    float one = 1.0f;
    /* strides are those of the stored matrices (row stride = ld, column stride 1) */
    bli_sgemm(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, M, N, K, &one,
              (float *)A, lda, 1, (float *)B, ldb, 1, &beta, C, ldc, 1);
#elif defined(USE_DNNL)
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc) != dnnl_success) {
        fprintf(stderr, "dnnl_sgemm failed\n");
        exit(1);
    }
#endif
}

struct shape {
    const char *wl, *name;
    int M, N, K, ta, tb;
    float beta;
    double count; /* calls per training step */
};

#define CHUNK(kd) (512 * 1024 / ((kd) * 4))
static const struct shape shapes[] = {
    /* MLP 784-256-256-10, batch 64 */
    {"mlp", "fwd_L1", 64, 256, 784, 0, 0, 0, 1},
    {"mlp", "fwd_L2", 64, 256, 256, 0, 0, 0, 1},
    {"mlp", "fwd_L3", 64, 10, 256, 0, 0, 0, 1},
    {"mlp", "bwd_dW3", 256, 10, 64, 1, 0, 0, 1},
    {"mlp", "bwd_dH2", 64, 256, 10, 0, 1, 0, 1},
    {"mlp", "bwd_dW2", 256, 256, 64, 1, 0, 0, 1},
    {"mlp", "bwd_dH1", 64, 256, 256, 0, 1, 0, 1},
    {"mlp", "bwd_dW1", 784, 256, 64, 1, 0, 0, 1},
    /* CNN convs as conv_ops.c chunks them: conv1 28x28x1->32 (kd 25), conv2 14x14x32->64 (kd 800) */
    {"cnn_conv", "c1_fwd", CHUNK(25), 32, 25, 0, 0, 0, 50176.0 / CHUNK(25)},
    {"cnn_conv", "c1_dW", 25, 32, CHUNK(25), 1, 0, 1, 50176.0 / CHUNK(25)},
    {"cnn_conv", "c2_fwd", CHUNK(800), 64, 800, 0, 0, 0, 12544.0 / CHUNK(800)},
    {"cnn_conv", "c2_dW", 800, 64, CHUNK(800), 1, 0, 1, 12544.0 / CHUNK(800)},
    {"cnn_conv", "c2_dX", CHUNK(800), 800, 64, 0, 1, 0, 12544.0 / CHUNK(800)},
    /* CNN dense 3136-128-10, batch 64 */
    {"cnn_dense", "fwd_D1", 64, 128, 3136, 0, 0, 0, 1},
    {"cnn_dense", "fwd_D2", 64, 10, 128, 0, 0, 0, 1},
    {"cnn_dense", "bwd_dW2", 128, 10, 64, 1, 0, 0, 1},
    {"cnn_dense", "bwd_dH1", 64, 128, 10, 0, 1, 0, 1},
    {"cnn_dense", "bwd_dW1", 3136, 128, 64, 1, 0, 0, 1},
    {"cnn_dense", "bwd_dX", 64, 3136, 128, 0, 1, 0, 1},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };
static const char *const workloads[] = {"mlp", "cnn_conv", "cnn_dense"};

struct gemm_arg {
    const struct shape *s;
    float *A, *B, *C;
    int lda, ldb;
#if defined(USE_DNNL)
    dnnl_primitive_t mm;
    dnnl_stream_t stream;
    dnnl_memory_t mA, mB, mC;
#endif
};

static void gemm_call(void *p) {
    struct gemm_arg *g = p;
    const struct shape *s = g->s;
    gemm(s->ta, s->tb, s->M, s->N, s->K, g->A, g->lda, g->B, g->ldb, s->beta, g->C, s->N);
}

#if defined(USE_DNNL)
#define CK(x)                                                                        \
    do {                                                                             \
        dnnl_status_t st_ = (x);                                                     \
        if (st_ != dnnl_success) {                                                   \
            fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, st_); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static void exec(dnnl_primitive_t p, int n, const dnnl_exec_arg_t *args) {
    CK(dnnl_primitive_execute(p, strm, n, args));
}

/* The matmul primitive for one shape (created once; execution timed). beta = 1 is a
 * sum post-op. */
static void mm_create(struct gemm_arg *g) {
    const struct shape *s = g->s;
    dnnl_memory_desc_t a, b, c;
    dnnl_dims_t da = {s->M, s->K}, db = {s->K, s->N}, dc = {s->M, s->N};
    CK(dnnl_memory_desc_init_by_tag(&a, 2, da, dnnl_f32, s->ta ? dnnl_ba : dnnl_ab));
    CK(dnnl_memory_desc_init_by_tag(&b, 2, db, dnnl_f32, s->tb ? dnnl_ba : dnnl_ab));
    CK(dnnl_memory_desc_init_by_tag(&c, 2, dc, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    CK(dnnl_matmul_desc_init(&md, &a, &b, NULL, &c));
    dnnl_primitive_attr_t attr = NULL;
    if (s->beta != 0) {
        dnnl_post_ops_t po;
        CK(dnnl_post_ops_create(&po));
        CK(dnnl_post_ops_append_sum(po, 1.0f));
        CK(dnnl_primitive_attr_create(&attr));
        CK(dnnl_primitive_attr_set_post_ops(attr, po));
        dnnl_post_ops_destroy(po);
    }
    dnnl_primitive_desc_t pd;
    CK(dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL));
    CK(dnnl_primitive_create(&g->mm, pd));
    dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    CK(dnnl_memory_create(&g->mA, &a, eng, g->A));
    CK(dnnl_memory_create(&g->mB, &b, eng, g->B));
    CK(dnnl_memory_create(&g->mC, &c, eng, g->C));
}

static void mm_call(void *p) {
    struct gemm_arg *g = p;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, g->mA}, {DNNL_ARG_WEIGHTS, g->mB}, {DNNL_ARG_DST, g->mC}};
    exec(g->mm, 3, args);
}

static void mm_destroy(struct gemm_arg *g) {
    dnnl_primitive_destroy(g->mm);
    dnnl_memory_destroy(g->mA);
    dnnl_memory_destroy(g->mB);
    dnnl_memory_destroy(g->mC);
}
#endif

/* Prints ,"shapes":{...},"workloads":{...} for one GEMM variant (0: the library's
 * sgemm; 1: oneDNN's matmul primitive). */
static void run_gemms(int variant) {
    double med[NSHAPES];
    printf(",\"shapes\":{");
    for (int i = 0; i < NSHAPES; i++) {
        const struct shape *s = &shapes[i];
        struct gemm_arg g = {.s = s};
        g.A = randbuf((size_t)s->M * s->K);
        g.B = randbuf((size_t)s->K * s->N);
        g.C = randbuf((size_t)s->M * s->N);
        g.lda = s->ta ? s->M : s->K;
        g.ldb = s->tb ? s->K : s->N;
        if (variant == 0) {
            med[i] = time_fn(gemm_call, &g);
        } else {
#if defined(USE_DNNL)
            mm_create(&g);
            med[i] = time_fn(mm_call, &g);
            mm_destroy(&g);
#endif
        }
        double flop = 2.0 * s->M * s->N * s->K;
        printf("%s\"%s/%s\":{\"M\":%d,\"N\":%d,\"K\":%d,\"ta\":%d,\"tb\":%d,\"us\":%.3f,\"gflops\":%.2f}",
               i ? "," : "", s->wl, s->name, s->M, s->N, s->K, s->ta, s->tb, med[i] * 1e6, flop / med[i] * 1e-9);
        free(g.A);
        free(g.B);
        free(g.C);
    }
    printf("},\"workloads\":{");
    for (size_t w = 0; w < sizeof workloads / sizeof workloads[0]; w++) {
        double t = 0, f = 0;
        for (int i = 0; i < NSHAPES; i++) {
            if (strcmp(shapes[i].wl, workloads[w])) continue;
            t += shapes[i].count * med[i];
            f += shapes[i].count * 2.0 * shapes[i].M * shapes[i].N * shapes[i].K;
        }
        printf("%s\"%s\":{\"us\":%.2f,\"gflops\":%.2f}", w ? "," : "", workloads[w], t * 1e6, f / t * 1e-9);
    }
    printf("}");
}

/* ------------------------------------------------------------------------ */
/* Convolutions: NHWC input, HWIO filter, 5x5 SAME, stride 1, batch 64. */

struct conv {
    const char *name;
    int n, h, w, ci, co, k;
    int bp_input; /* is the input gradient part of the step? */
    float *x, *f, *y, *dy, *dx, *df, *col;
    int kd, rows, chunk;
};

/* im2col (add = 0: col[r1 - r0, kd] from x) or col2im (add = 1: dx += col) over rows
 * [r0, r1), one row per output pixel, columns (ky, kx, ci): the algorithm of
 * conv_ops.c's cols_f32 (runs of one output row; short windows column by column). */
static void cols(const struct conv *c, int r0, int r1, float *col, int add) {
    const int P = c->h * c->w, ci = c->ci, k = c->k, pad = k / 2, rowlen = k * ci, kd = c->kd;
    float *x = add ? c->dx : c->x;
    for (int r = r0; r < r1;) {
        int img = r / P, p = r % P, oy = p / c->w, ox0 = p % c->w;
        int ox1 = r1 - r < c->w - ox0 ? ox0 + (r1 - r) : c->w;
        float *xi = x + (size_t)img * P * ci, *crow = col + (size_t)(r - r0) * kd;
        for (int ky = 0; ky < k; ky++) {
            int iy = oy - pad + ky;
            float *d = crow + ky * rowlen;
            if (iy < 0 || iy >= c->h) {
                if (!add)
                    for (int ox = ox0; ox < ox1; ox++, d += kd) memset(d, 0, (size_t)rowlen * sizeof(float));
                continue;
            }
            float *xr = xi + (size_t)iy * c->w * ci;
            if (rowlen < 16) { /* column by column */
                for (int kx = 0; kx < k; kx++) {
                    int off = kx - pad, lo = off >= 0 ? 0 : -off, hi = c->w - off;
                    if (lo < ox0) lo = ox0;
                    if (hi > ox1) hi = ox1;
                    for (int ch = 0; ch < ci; ch++) {
                        float *dc = d + kx * ci + ch;
                        if (add) {
                            for (int ox = lo; ox < hi; ox++) xr[(ox + off) * ci + ch] += dc[(ox - ox0) * kd];
                            continue;
                        }
                        for (int ox = ox0; ox < lo && ox < ox1; ox++) dc[(ox - ox0) * kd] = 0;
                        for (int ox = lo; ox < hi; ox++) dc[(ox - ox0) * kd] = xr[(ox + off) * ci + ch];
                        for (int ox = hi > lo ? hi : lo; ox < ox1; ox++) dc[(ox - ox0) * kd] = 0;
                    }
                }
                continue;
            }
            for (int ox = ox0; ox < ox1; ox++, d += kd) {
                int ix0 = ox - pad;
                if (ix0 >= 0 && ix0 + k <= c->w) { /* interior: one contiguous run */
                    float *s = xr + ix0 * ci;
                    if (add) for (int j = 0; j < rowlen; j++) s[j] += d[j];
                    else memcpy(d, s, (size_t)rowlen * sizeof(float));
                    continue;
                }
                for (int kx = 0; kx < k; kx++) {
                    int ix = ix0 + kx;
                    float *dk = d + kx * ci;
                    if (ix < 0 || ix >= c->w) {
                        if (!add) memset(dk, 0, (size_t)ci * sizeof(float));
                    } else if (add) {
                        for (int j = 0; j < ci; j++) xr[ix * ci + j] += dk[j];
                    } else {
                        memcpy(dk, xr + ix * ci, (size_t)ci * sizeof(float));
                    }
                }
            }
        }
        r += ox1 - ox0;
    }
}

static void im2col(const struct conv *c, int r0, int r1, float *col) { cols(c, r0, r1, col, 0); }
static void col2im(const struct conv *c, int r0, int r1, const float *col) { cols(c, r0, r1, (float *)col, 1); }

static void im2col_fwd(void *p) {
    struct conv *c = p;
    for (int r = 0; r < c->rows; r += c->chunk) {
        int nr = c->rows - r < c->chunk ? c->rows - r : c->chunk;
        im2col(c, r, r + nr, c->col);
        gemm(0, 0, nr, c->co, c->kd, c->col, c->kd, c->f, c->co, 0, c->y + (size_t)r * c->co, c->co);
    }
}

static void im2col_bpf(void *p) {
    struct conv *c = p;
    for (int r = 0; r < c->rows; r += c->chunk) {
        int nr = c->rows - r < c->chunk ? c->rows - r : c->chunk;
        im2col(c, r, r + nr, c->col);
        gemm(1, 0, c->kd, c->co, nr, c->col, c->kd, c->dy + (size_t)r * c->co, c->co, r ? 1.0f : 0.0f, c->df, c->co);
    }
}

static void im2col_bpi(void *p) {
    struct conv *c = p;
    memset(c->dx, 0, (size_t)c->n * c->h * c->w * c->ci * sizeof(float));
    for (int r = 0; r < c->rows; r += c->chunk) {
        int nr = c->rows - r < c->chunk ? c->rows - r : c->chunk;
        gemm(0, 1, nr, c->kd, c->co, c->dy + (size_t)r * c->co, c->co, c->f, c->co, 0, c->col, c->kd);
        col2im(c, r, r + nr, c->col);
    }
}

#if defined(USE_DNNL)
/* A oneDNN conv primitive plus the reorder of vigil's HWIO weights to (or from) the
 * layout the primitive picked; the reorder is part of the timed call. */
struct dconv {
    dnnl_primitive_t prim, reorder;
    dnnl_memory_t act_in, wei_user, wei_prim, act_out;
    int mode; /* 0 fwd, 1 bwd data, 2 bwd weights */
};

static void dconv_call(void *p) {
    struct dconv *d = p;
    if (d->reorder && d->mode != 2) {
        dnnl_exec_arg_t r[] = {{DNNL_ARG_FROM, d->wei_user}, {DNNL_ARG_TO, d->wei_prim}};
        exec(d->reorder, 2, r);
    }
    dnnl_memory_t w = d->reorder ? d->wei_prim : d->wei_user;
    if (d->mode == 0) {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, d->act_in}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, d->act_out}};
        exec(d->prim, 3, a);
    } else if (d->mode == 1) {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_DIFF_DST, d->act_in}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, d->act_out}};
        exec(d->prim, 3, a);
    } else {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, d->act_in}, {DNNL_ARG_DIFF_DST, d->act_out}, {DNNL_ARG_DIFF_WEIGHTS, w}};
        exec(d->prim, 3, a);
        if (d->reorder) {
            dnnl_exec_arg_t r[] = {{DNNL_ARG_FROM, d->wei_prim}, {DNNL_ARG_TO, d->wei_user}};
            exec(d->reorder, 2, r);
        }
    }
}

/* Creates the three primitives of conv c; impl names go to impl[3]. */
static void dconv_create(struct conv *c, struct dconv d[3], const char *impl[3]) {
    dnnl_memory_desc_t src, dst, wany, wuser;
    dnnl_dims_t ds = {c->n, c->ci, c->h, c->w}, dd = {c->n, c->co, c->h, c->w}, dw = {c->co, c->ci, c->k, c->k};
    dnnl_dims_t strides = {1, 1}, pad = {c->k / 2, c->k / 2};
    CK(dnnl_memory_desc_init_by_tag(&src, 4, ds, dnnl_f32, dnnl_nhwc));
    CK(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_nhwc));
    CK(dnnl_memory_desc_init_by_tag(&wany, 4, dw, dnnl_f32, dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&wuser, 4, dw, dnnl_f32, dnnl_hwio));
    dnnl_convolution_desc_t fd, bd, wd;
    CK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &src, &wany, NULL, &dst,
                                          strides, pad, pad));
    CK(dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &src, &wany, &dst, strides, pad, pad));
    CK(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &src, &wany, NULL, &dst, strides, pad,
                                                   pad));
    dnnl_primitive_desc_t fpd, pds[3];
    CK(dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL));
    pds[0] = fpd;
    CK(dnnl_primitive_desc_create(&pds[1], &bd, NULL, eng, fpd));
    CK(dnnl_primitive_desc_create(&pds[2], &wd, NULL, eng, fpd));
    for (int m = 0; m < 3; m++) {
        d[m].mode = m;
        CK(dnnl_primitive_create(&d[m].prim, pds[m]));
        CK(dnnl_primitive_desc_query(pds[m], dnnl_query_impl_info_str, 0, &impl[m]));
        const dnnl_memory_desc_t *wmd =
            dnnl_primitive_desc_query_md(pds[m], m == 2 ? dnnl_query_diff_weights_md : dnnl_query_weights_md, 0);
        CK(dnnl_memory_create(&d[m].wei_user, &wuser, eng, m == 2 ? c->df : c->f));
        d[m].reorder = NULL;
        d[m].wei_prim = NULL;
        if (!dnnl_memory_desc_equal(wmd, &wuser)) {
            CK(dnnl_memory_create(&d[m].wei_prim, wmd, eng, DNNL_MEMORY_ALLOCATE));
            dnnl_primitive_desc_t rpd;
            if (m == 2) CK(dnnl_reorder_primitive_desc_create(&rpd, wmd, eng, &wuser, eng, NULL));
            else CK(dnnl_reorder_primitive_desc_create(&rpd, &wuser, eng, wmd, eng, NULL));
            CK(dnnl_primitive_create(&d[m].reorder, rpd));
            dnnl_primitive_desc_destroy(rpd);
        }
        float *in = m == 0 ? c->x : m == 1 ? c->dy : c->x, *out = m == 0 ? c->y : m == 1 ? c->dx : c->dy;
        CK(dnnl_memory_create(&d[m].act_in, m == 1 ? &dst : &src, eng, in));
        CK(dnnl_memory_create(&d[m].act_out, m == 0 || m == 2 ? &dst : &src, eng, out));
    }
    /* impl strings belong to the pds: keep them alive (leaked; the process ends soon) */
}

/* Max abs difference of a against b, relative to max |b|. */
static double rel_err(const float *a, const float *b, size_t n) {
    double m = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(b[i]) > m) m = fabs(b[i]);
        if (fabs(a[i] - b[i]) > e) e = fabs(a[i] - b[i]);
    }
    return m > 0 ? e / m : e;
}
#endif

static void run_convs(void) {
    struct conv convs[] = {
        {.name = "conv1", .n = 64, .h = 28, .w = 28, .ci = 1, .co = 32, .k = 5, .bp_input = 0},
        {.name = "conv2", .n = 64, .h = 14, .w = 14, .ci = 32, .co = 64, .k = 5, .bp_input = 1},
    };
    printf(",\"conv\":{");
    for (int i = 0; i < 2; i++) {
        struct conv *c = &convs[i];
        size_t nx = (size_t)c->n * c->h * c->w * c->ci, ny = (size_t)c->n * c->h * c->w * c->co;
        c->kd = c->k * c->k * c->ci;
        c->rows = c->n * c->h * c->w;
        c->chunk = CHUNK(c->kd);
        c->x = randbuf(nx);
        c->dx = randbuf(nx);
        c->f = randbuf((size_t)c->kd * c->co);
        c->df = randbuf((size_t)c->kd * c->co);
        c->y = randbuf(ny);
        c->dy = randbuf(ny);
        c->col = randbuf((size_t)c->chunk * c->kd);
        double flop = 2.0 * c->rows * c->kd * c->co;
        double t[3] = {time_fn(im2col_fwd, c), time_fn(im2col_bpf, c), c->bp_input ? time_fn(im2col_bpi, c) : 0};
        printf("%s\"%s/im2col\":{\"fwd_us\":%.1f,\"bwd_filter_us\":%.1f,\"bwd_input_us\":%.1f,\"step_us\":%.1f,"
               "\"fwd_gflops\":%.2f}",
               i ? "," : "", c->name, t[0] * 1e6, t[1] * 1e6, t[2] * 1e6, (t[0] + t[1] + t[2]) * 1e6,
               flop / t[0] * 1e-9);
#if defined(USE_DNNL)
        struct dconv d[3];
        const char *impl[3];
        dconv_create(c, d, impl);
        /* check against im2col (the reference results are in y, df, dx) */
        float *ry = randbuf(ny), *rdf = randbuf((size_t)c->kd * c->co), *rdx = randbuf(nx);
        im2col_fwd(c);
        im2col_bpf(c);
        im2col_bpi(c);
        memcpy(ry, c->y, ny * 4);
        memcpy(rdf, c->df, (size_t)c->kd * c->co * 4);
        memcpy(rdx, c->dx, nx * 4);
        for (int m = 0; m < 3; m++) dconv_call(&d[m]);
        CK(dnnl_stream_wait(strm));
        double err = fmax(rel_err(c->y, ry, ny), fmax(rel_err(c->df, rdf, (size_t)c->kd * c->co), rel_err(c->dx, rdx, nx)));
        double u[3] = {time_fn(dconv_call, &d[0]), time_fn(dconv_call, &d[2]), c->bp_input ? time_fn(dconv_call, &d[1]) : 0};
        printf(",\"%s/dnnl_conv\":{\"fwd_us\":%.1f,\"bwd_filter_us\":%.1f,\"bwd_input_us\":%.1f,\"step_us\":%.1f,"
               "\"fwd_gflops\":%.2f,\"max_rel_err\":%.2g,\"impl\":[\"%s\",\"%s\",\"%s\"]}",
               c->name, u[0] * 1e6, u[1] * 1e6, u[2] * 1e6, (u[0] + u[1] + u[2]) * 1e6, flop / u[0] * 1e-9, err,
               impl[0], impl[2], impl[1]);
        free(ry);
        free(rdf);
        free(rdx);
#endif
        free(c->x); free(c->dx); free(c->f); free(c->df); free(c->y); free(c->dy); free(c->col);
    }
    printf("}");
}

int main(int argc, char **argv) {
    int do_conv = !(argc > 1 && strcmp(argv[1], "--no-conv") == 0);
    srand(1);
#if defined(USE_OPENBLAS)
    openblas_set_num_threads(1);
    printf("{\"lib\":\"openblas\",\"config\":\"%s\",\"core\":\"%s\",\"threads\":%d", openblas_get_config(),
           openblas_get_corename(), openblas_get_num_threads());
#elif defined(USE_BLIS)
    bli_thread_set_num_threads(1);
    printf("{\"lib\":\"blis\",\"config\":\"%s\",\"arch\":\"%s\",\"threads\":%ld", bli_info_get_version_str(),
           bli_arch_string(bli_arch_query_id()), (long)bli_thread_get_num_threads());
#elif defined(USE_DNNL)
    omp_set_num_threads(1);
    CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    printf("{\"lib\":\"dnnl\",\"config\":\"oneDNN %d.%d.%d cpu_runtime %u\",\"isa\":\"0x%x\",\"threads\":%d", v->major,
           v->minor, v->patch, v->cpu_runtime, (unsigned)dnnl_get_effective_cpu_isa(), omp_get_max_threads());
#endif
    run_gemms(0);
    if (do_conv) run_convs();
    printf("}\n");
    fflush(stdout);
#if defined(USE_DNNL)
    /* second line: the matmul primitive (shape fixed at creation, not timed) */
    printf("{\"lib\":\"dnnl_matmul\",\"config\":\"oneDNN %d.%d.%d matmul primitive\",\"threads\":%d", v->major,
           v->minor, v->patch, omp_get_max_threads());
    run_gemms(1);
    printf("}\n");
#endif
    return 0;
}
