/*
 * nn_ops.c - the dense half of the nn op family: MatMul (OpenBLAS GEMM, split over the
 * intra-op threads when large), BiasAdd/BiasAddGrad (NHWC: bias on the last dim),
 * Relu/Sigmoid/Tanh and their *Grad ops, Softmax, LogSoftmax and the two
 * SoftmaxCrossEntropyWithLogits ops. Shape functions, float32/float64 kernels,
 * gradients (TF 1.15's math_grad.py / nn_grad.py) and the builders of vigil/ops.h.
 * Conv2D and pooling live in conv_ops.c.
 */
#include "kernels/nn/nn_internal.h"
#include "kernels/backend/bf16.h"
#include "kernels/backend/dnnl_backend.h"
#include "kernels/simd.h"
#include "kernels/vmath.h"
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops that need no epilogue ("very cheap" model);
 * the row loops here need the dynamic cost model to use SIMD. */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* Below this much work (rough flops) a kernel runs inline without asking the pool. */
#define NN_INLINE_WORK 65536
/* A GEMM is split over threads only when every part gets at least this many flops. */
#define NN_GEMM_MIN_FLOPS_PER_PART 2.0e6

/* ------------------------------------------------------------------------ */
/* Shared helpers */

static size_t real_size(vg_dtype dt) { return dt == VG_DOUBLE ? sizeof(double) : sizeof(float); }
static bool is_real(vg_dtype dt) { return dt == VG_FLOAT || dt == VG_DOUBLE; }

vg_code vg__nn_check_real(const vg_op *op, int i, const char *what, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (dt != VG_DTYPE_INVALID && !is_real(dt))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be float or double, got %s", what,
                             vg_dtype_name(dt));
    return VG_OK;
}

/* Checks inputs [0, n) are real and of one dtype; sets attr T; returns the dtype. */
static vg_code check_same_real(vg_op *op, int n, vg_dtype *dt, vg_status *st) {
    vg_dtype d0 = vg__op_input_dtype(op, 0);
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "input %d", i);
        if (vg__nn_check_real(op, i, what, st)) return st->code;
        if (vg__op_input_dtype(op, i) != d0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "input %d has dtype %s, expected %s (as input 0)",
                                 i, vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(d0));
    }
    vg__op_set_default_attr_type(op, "T", d0);
    *dt = d0;
    return VG_OK;
}

/* Merges two dims that must agree (-1 = unknown); -2 on conflict. */
static int64_t merge_dim(int64_t a, int64_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    return a == b ? a : -2;
}

/* Merges two shapes that must be equal (elementwise ops). */
static vg_code merge_shapes(const vg_shape *a, const vg_shape *b, vg_shape *out, vg_status *st) {
    if (a->ndims < 0) { *out = *b; return VG_OK; }
    if (b->ndims < 0) { *out = *a; return VG_OK; }
    char sa[128], sb[128];
    if (a->ndims != b->ndims) goto bad;
    *out = *a;
    for (int i = 0; i < a->ndims; i++) {
        out->dims[i] = merge_dim(a->dims[i], b->dims[i]);
        if (out->dims[i] == -2) goto bad;
    }
    return VG_OK;
bad:
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Inputs must have the same shape: %s vs. %s",
                         vg_shape_str(a, sa, sizeof sa), vg_shape_str(b, sb, sizeof sb));
}

/* Runtime dtype check of a kernel input. */
static vg_code kcheck_real(vg__kctx *ctx, const vg_tensor *t, vg_dtype want) {
    vg_dtype dt = vg_tensor_dtype(t);
    if (!is_real(dt) || (want != VG_DTYPE_INVALID && dt != want))
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "unsupported or mismatched dtype %s",
                             vg_dtype_name(dt));
    return VG_OK;
}

/* Runs fn over [0, n) units of cost flops each: inline when small, else on the pool. */
static void run_range(vg__kctx *ctx, int64_t n, int64_t cost, vg__range_fn fn, void *arg) {
    if (n <= 0) return;
    if (n * cost < NN_INLINE_WORK || vg__kctx_num_threads(ctx) <= 1) fn(arg, 0, n);
    else vg__kctx_parallel_for(ctx, n, cost, fn, arg);
}

/* ------------------------------------------------------------------------ */
/* GEMM */

void vg__nn_gemm1(vg_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
                  int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    if (dt != VG_DOUBLE && vg__backend_use_dnnl() &&
        vg__dnnl_gemm(ta, tb, M, N, K, A, lda, B, ldb, (float)beta, C, ldc))
        return;
    if (dt == VG_DOUBLE)
        cblas_dgemm(CblasRowMajor, TA, TB, (blasint)M, (blasint)N, (blasint)K, 1.0, A, (blasint)lda, B,
                    (blasint)ldb, beta, C, (blasint)ldc);
    else
        cblas_sgemm(CblasRowMajor, TA, TB, (blasint)M, (blasint)N, (blasint)K, 1.0f, A, (blasint)lda, B,
                    (blasint)ldb, (float)beta, C, (blasint)ldc);
}

typedef struct gemm_job {
    vg_dtype dt;
    bool ta, tb, by_rows;
    int64_t M, N, K, lda, ldb, block;
    const char *A, *B;
    char *C;
    double beta;
} gemm_job;

/* Parts [begin, end) of the split: rows (or columns) [begin*block, end*block) of C. */
static void gemm_part(void *arg, int64_t begin, int64_t end) {
    const gemm_job *j = arg;
    size_t es = real_size(j->dt);
    int64_t dim = j->by_rows ? j->M : j->N;
    int64_t r0 = begin * j->block, r1 = end * j->block;
    if (r1 > dim) r1 = dim;
    if (r1 <= r0) return;
    if (j->by_rows) {
        const char *A = j->A + (size_t)(j->ta ? r0 : r0 * j->lda) * es;
        vg__nn_gemm1(j->dt, j->ta, j->tb, r1 - r0, j->N, j->K, A, j->lda, j->B, j->ldb, j->beta,
                     j->C + (size_t)(r0 * j->N) * es, j->N);
    } else {
        const char *B = j->B + (size_t)(j->tb ? r0 * j->ldb : r0) * es;
        vg__nn_gemm1(j->dt, j->ta, j->tb, j->M, r1 - r0, j->K, j->A, j->lda, B, j->ldb, j->beta,
                     j->C + (size_t)r0 * es, j->N);
    }
}

/* A split of the reduction: part p adds A[:, kp] B[kp, :] for its block kp of K, into C
 * (part 0, with beta) or into its own M x N partial (summed into C after). */
typedef struct gemm_kjob {
    vg_dtype dt;
    bool ta, tb;
    int64_t M, N, K, lda, ldb, block;
    const char *A, *B;
    char *C, *partial; /* partial: (parts - 1) M x N blocks */
    double beta;
} gemm_kjob;

static void gemm_kpart(void *arg, int64_t begin, int64_t end) {
    const gemm_kjob *j = arg;
    size_t es = real_size(j->dt);
    for (int64_t p = begin; p < end; p++) {
        int64_t k0 = p * j->block, k1 = k0 + j->block < j->K ? k0 + j->block : j->K;
        if (k1 <= k0) continue;
        const char *A = j->A + (size_t)(j->ta ? k0 * j->lda : k0) * es;
        const char *B = j->B + (size_t)(j->tb ? k0 : k0 * j->ldb) * es;
        char *C = p == 0 ? j->C : j->partial + (size_t)((p - 1) * j->M * j->N) * es;
        vg__nn_gemm1(j->dt, j->ta, j->tb, j->M, j->N, k1 - k0, A, j->lda, B, j->ldb, p == 0 ? j->beta : 0.0, C, j->N);
    }
}

void vg__nn_gemm(vg__kctx *ctx, vg_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                 const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C) {
    double flops = 2.0 * (double)M * (double)N * (double)K;
    int64_t parts = ctx ? vg__kctx_num_threads(ctx) : 1;
    if ((double)parts > flops / NN_GEMM_MIN_FLOPS_PER_PART) parts = (int64_t)(flops / NN_GEMM_MIN_FLOPS_PER_PART);
    /* A long reduction into a small C (a dense layer's forward: 64x3136 by 3136x128):
     * splitting K gives each thread half of both inputs instead of all of one of them
     * (each thread streaming the whole 64x3136 activation cost more than the 64x128
     * partial sums it adds; measured at 2 threads, inputs in cache: 126 vs 141-146 us) */
    if (parts > 1 && K >= 8 * (M > N ? M : N) && M * N <= 65536 && K / parts >= 64) {
        size_t es = real_size(dt);
        int64_t block = ((K + parts - 1) / parts + 15) / 16 * 16;
        parts = (K + block - 1) / block;
        gemm_kjob j = {dt, ta, tb, M, N, K, lda, ldb, block, A, B, C, NULL, beta};
        if (parts > 1 && (j.partial = vg__malloc((size_t)((parts - 1) * M * N) * es))) {
            vg__kctx_parallel_for(ctx, parts, (int64_t)(flops / (double)parts), gemm_kpart, &j);
            for (int64_t p = 1; p < parts; p++) {
                if (dt == VG_DOUBLE) {
                    const double *src = (const double *)j.partial + (p - 1) * M * N;
                    double *dst = C;
                    for (int64_t i = 0; i < M * N; i++) dst[i] += src[i];
                } else {
                    const float *src = (const float *)j.partial + (p - 1) * M * N;
                    float *dst = C;
                    for (int64_t i = 0; i < M * N; i++) dst[i] += src[i];
                }
            }
            vg__free(j.partial);
            return;
        }
    }
    /* Split the larger side of C, in blocks of 16 (a multiple of the BLAS micro-tile). */
    bool by_rows = M >= N;
    int64_t dim = by_rows ? M : N;
    if (parts > dim / 16) parts = dim / 16;
    if (parts <= 1) {
        vg__nn_gemm1(dt, ta, tb, M, N, K, A, lda, B, ldb, beta, C, N);
        return;
    }
    int64_t block = (dim + parts - 1) / parts;
    block = (block + 15) / 16 * 16;
    parts = (dim + block - 1) / block;
    gemm_job j = {dt, ta, tb, by_rows, M, N, K, lda, ldb, block, A, B, C, beta};
    vg__kctx_parallel_for(ctx, parts, (int64_t)(flops / (double)parts), gemm_part, &j);
}

/* ------------------------------------------------------------------------ */
/* MatMul */

static vg_code shape_matmul(vg_op *op, vg_status *st) {
    vg_dtype dt = VG_BFLOAT16;
    if (vg__op_input_dtype(op, 0) == VG_BFLOAT16 && vg__op_input_dtype(op, 1) == VG_BFLOAT16) /* bf16_dnnl.c */
        vg__op_set_default_attr_type(op, "T", dt);
    else if (check_same_real(op, 2, &dt, st)) return st->code;
    bool ta = false, tb = false;
    vg_op_attr_bool(op, "transpose_a", &ta);
    vg_op_attr_bool(op, "transpose_b", &tb);
    vg__op_set_default_attr_bool(op, "transpose_a", false);
    vg__op_set_default_attr_bool(op, "transpose_b", false);
    vg_shape a = vg__op_input_shape(op, 0), b = vg__op_input_shape(op, 1), out;
    char sa[128], sb[128];
    for (int i = 0; i < 2; i++) {
        const vg_shape *s = i ? &b : &a;
        if (s->ndims >= 0 && s->ndims != 2)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank 2 but is rank %d for input %d: %s",
                                 s->ndims, i, vg_shape_str(s, sa, sizeof sa));
    }
    int64_t m = a.ndims == 2 ? a.dims[ta ? 1 : 0] : -1, ka = a.ndims == 2 ? a.dims[ta ? 0 : 1] : -1;
    int64_t n = b.ndims == 2 ? b.dims[tb ? 0 : 1] : -1, kb = b.ndims == 2 ? b.dims[tb ? 1 : 0] : -1;
    if (merge_dim(ka, kb) == -2)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Dimensions must be equal, but are %lld and %lld for MatMul with input shapes: %s, %s",
                             (long long)ka, (long long)kb, vg_shape_str(&a, sa, sizeof sa),
                             vg_shape_str(&b, sb, sizeof sb));
    int64_t dims[2] = {m, n};
    out = vg_shape_make(dims, 2);
    return vg__op_set_single_output(op, dt, out);
}

static vg_code kernel_matmul(vg__kctx *ctx) {
    const vg_op *op = vg__kctx_op(ctx);
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *a = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1), *c;
    bool ta = false, tb = false;
    vg_op_attr_bool(op, "transpose_a", &ta);
    vg_op_attr_bool(op, "transpose_b", &tb);
    vg_dtype dt = vg_tensor_dtype(a);
    bool bf16 = dt == VG_BFLOAT16 && vg_tensor_dtype(b) == dt;
    if (!bf16 && (kcheck_real(ctx, a, VG_DTYPE_INVALID) || kcheck_real(ctx, b, dt))) return st->code;
    char sa[128], sb[128];
    if (vg_tensor_ndims(a) != 2 || vg_tensor_ndims(b) != 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "In[0] and In[1] must be matrices: In[0]: %s, In[1]: %s",
                             vg__tshape_str(a, sa, sizeof sa), vg__tshape_str(b, sb, sizeof sb));
    // a is (M, K) or (K, M) when ta; b is (K, N) or (N, K) when tb; c is (M, N)
    int64_t M = vg_tensor_dim(a, ta ? 1 : 0), K = vg_tensor_dim(a, ta ? 0 : 1);
    int64_t N = vg_tensor_dim(b, tb ? 0 : 1), Kb = vg_tensor_dim(b, tb ? 1 : 0);
    if (K != Kb)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s",
                             vg__tshape_str(a, sa, sizeof sa), vg__tshape_str(b, sb, sizeof sb));
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MatMul dimensions too large for BLAS: %s, %s",
                             vg__tshape_str(a, sa, sizeof sa), vg__tshape_str(b, sb, sizeof sb));
    int64_t dims[2] = {M, N};
    if (vg__kctx_alloc_output(ctx, 0, dt, dims, 2, &c)) return st->code;
    if (M == 0 || N == 0) return VG_OK;
    if (K == 0) {
        memset(vg_tensor_data(c), 0, vg_tensor_nbytes(c));
        return VG_OK;
    }
    if (bf16 || (dt == VG_FLOAT && vg__kctx_amp(ctx))) return vg__bf16_matmul(ctx, a, b, ta, tb, M, N, K, c);
    vg__nn_gemm(ctx, dt, ta, tb, M, N, K, vg_tensor_data(a), ta ? M : K, vg_tensor_data(b), tb ? K : N, 0.0,
                vg_tensor_data(c));
    return VG_OK;
}

/* _VigilFusedMatMulSum (plan-time, src/exec/fuse_matmul.c): AddN(MatMul(A_1, B_1), ...,
 * MatMul(A_T, B_T)), every product with the same transpose_a and transpose_b = false, as
 * the gradient of a weight used at every step of an unrolled RNN builds it (TF sums the
 * per-step x_t^T d_t). Inputs A_1 .. A_T, B_1 .. B_T; one GEMM over the concatenated
 * reduction dimension (A_t stacked along K, B_t stacked by rows), so that a product of
 * K = 20 rows per step becomes one of 700 (about 3x the FLOP rate on the PTB language
 * model's [768, 2048] and [1024, 2048] weights). The sum is the same up to rounding
 * (one accumulation instead of T products added in order). */
static vg_code fused_matmul_sum(vg__kctx *ctx, bool ta) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx), T = n / 2;
    if (T < 1 || n != 2 * T) return vg_status_set(st, VG_INTERNAL, "fused MatMul sum with %d inputs", n);
    vg_tensor *a0 = vg__kctx_input(ctx, 0), *b0 = vg__kctx_input(ctx, T), *c;
    vg_dtype dt = vg_tensor_dtype(a0);
    if (kcheck_real(ctx, a0, VG_DTYPE_INVALID)) return st->code;
    int64_t M = vg_tensor_dim(a0, ta ? 1 : 0), N = vg_tensor_dim(b0, 1), K = 0;
    for (int t = 0; t < T; t++) {
        vg_tensor *a = vg__kctx_input(ctx, t), *b = vg__kctx_input(ctx, T + t);
        char sa[128], sb[128];
        if (vg_tensor_dtype(a) != dt || vg_tensor_dtype(b) != dt || vg_tensor_ndims(a) != 2 ||
            vg_tensor_ndims(b) != 2 || vg_tensor_dim(a, ta ? 1 : 0) != M || vg_tensor_dim(b, 1) != N ||
            vg_tensor_dim(a, ta ? 0 : 1) != vg_tensor_dim(b, 0))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s (product %d)",
                                 vg__tshape_str(a, sa, sizeof sa), vg__tshape_str(b, sb, sizeof sb), t);
        K += vg_tensor_dim(b, 0);
    }
    int64_t dims[2] = {M, N};
    if (vg__kctx_alloc_output(ctx, 0, dt, dims, 2, &c)) return st->code;
    if (M == 0 || N == 0) return VG_OK;
    size_t es = real_size(dt);
    if (K == 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX) {
        if (K == 0) memset(vg_tensor_data(c), 0, vg_tensor_nbytes(c));
        else return vg_status_set(st, VG_INVALID_ARGUMENT, "MatMul dimensions too large for BLAS");
        return VG_OK;
    }
    char *A = vg__malloc((size_t)(M * K) * es), *B = vg__malloc((size_t)(K * N) * es);
    if (!A || !B) {
        vg__free(A), vg__free(B);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in a fused MatMul sum");
    }
    int64_t k0 = 0;
    for (int t = 0; t < T; t++) {
        const vg_tensor *a = vg__kctx_input(ctx, t), *b = vg__kctx_input(ctx, T + t);
        int64_t kt = vg_tensor_dim(b, 0);
        memcpy(B + (size_t)(k0 * N) * es, vg_tensor_data(b), (size_t)(kt * N) * es);
        if (ta) memcpy(A + (size_t)(k0 * M) * es, vg_tensor_data(a), (size_t)(kt * M) * es); /* [K, M] rows */
        else
            for (int64_t i = 0; i < M; i++) /* [M, K] columns */
                memcpy(A + (size_t)(i * K + k0) * es, (const char *)vg_tensor_data(a) + (size_t)(i * kt) * es,
                       (size_t)kt * es);
        k0 += kt;
    }
    vg__nn_gemm(ctx, dt, ta, false, M, N, K, A, ta ? M : K, B, N, 0.0, vg_tensor_data(c));
    vg__free(A), vg__free(B);
    return VG_OK;
}

/* the products' transpose_a: false / true */
static vg_code kernel_fused_matmul_sum(vg__kctx *ctx) { return fused_matmul_sum(ctx, false); }
static vg_code kernel_fused_matmul_sum_ta(vg__kctx *ctx) { return fused_matmul_sum(ctx, true); }

static vg_code shape_fused_matmul_sum(vg_op *op, vg_status *st) {
    (void)op;
    return vg_status_set(st, VG_INVALID_ARGUMENT,
                         "_VigilFusedMatMulSum[TA] is made by the planner only; it cannot be built into a graph");
}

/* TF's _MatMulGrad: one pair of MatMuls per transpose combination. */
static vg_code grad_matmul(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    bool ta = false, tb = false;
    vg_op_attr_bool(op, "transpose_a", &ta);
    vg_op_attr_bool(op, "transpose_b", &tb);
    vg_output a = vg_op_input(op, 0), b = vg_op_input(op, 1), gr = dy[0];
    if (!ta && !tb) {
        dx[0] = vg_matmul(g, gr, b, false, true, NULL);
        dx[1] = vg_matmul(g, a, gr, true, false, NULL);
    } else if (!ta && tb) {
        dx[0] = vg_matmul(g, gr, b, false, false, NULL);
        dx[1] = vg_matmul(g, gr, a, true, false, NULL);
    } else if (ta && !tb) {
        dx[0] = vg_matmul(g, b, gr, false, true, NULL);
        dx[1] = vg_matmul(g, a, gr, false, false, NULL);
    } else {
        dx[0] = vg_matmul(g, b, gr, true, true, NULL);
        dx[1] = vg_matmul(g, gr, a, true, true, NULL);
    }
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Row kernels: elementwise ops, BiasAdd, softmax, cross-entropy. One job struct for
 * all; the per-dtype loops are generated by macros (float and double). */

enum {
    ROW_RELU, ROW_SIGMOID, ROW_TANH, ROW_RELU_GRAD, ROW_SIGMOID_GRAD, ROW_TANH_GRAD, ROW_BIAS_ADD,
    ROW_SOFTMAX, ROW_LOG_SOFTMAX, ROW_XENT, ROW_SPARSE_XENT
};

typedef struct row_job {
    int kind;
    vg_dtype dt;
    int64_t C;          /* row length (elementwise ops: 1) */
    const void *a, *b;  /* inputs */
    void *y, *y2;       /* outputs */
    vg_dtype label_dt;  /* sparse xent */
} row_job;

/* Elementwise loops, one function per op and dtype: restrict pointers and
 * branch-free selects so that GCC vectorizes them. x = input 0, g = input 1. */
#define NN_EW1(NAME, T, EXPR)                                                                            \
    static void NAME(const T *restrict a, const T *restrict b, T *restrict y, int64_t s, int64_t e) {   \
        (void)b;                                                                                         \
        for (int64_t i = s; i < e; i++) {                                                                \
            T x = a[i];                                                                                  \
            y[i] = (EXPR);                                                                               \
        }                                                                                                \
    }
#define NN_EW2(NAME, T, EXPR)                                                                            \
    static void NAME(const T *restrict a, const T *restrict b, T *restrict y, int64_t s, int64_t e) {   \
        for (int64_t i = s; i < e; i++) {                                                                \
            T x = a[i], g = b[i];                                                                        \
            y[i] = (EXPR);                                                                               \
        }                                                                                                \
    }
#define NN_EW_ALL(T, SFX, EXP, TANH)                                                                     \
    NN_EW1(relu_##SFX, T, x < (T)0 ? (T)0 : x) /* NaN passes through, as TF */                          \
    NN_EW1(sigmoid_##SFX, T, (T)1 / ((T)1 + EXP(-x)))                                                    \
    NN_EW1(tanh_##SFX, T, TANH(x))                                                                       \
    NN_EW2(relu_grad_##SFX, T, g > (T)0 ? x : (T)0)     /* x = gradients, g = features */                \
    NN_EW2(sigmoid_grad_##SFX, T, g * x * ((T)1 - x))   /* x = y, g = dy */                              \
    NN_EW2(tanh_grad_##SFX, T, g * ((T)1 - x * x))                                                       \
    static void elementwise_##SFX(int kind, const T *a, const T *b, T *y, int64_t s, int64_t e) {        \
        switch (kind) {                                                                                  \
        case ROW_RELU: relu_##SFX(a, NULL, y, s, e); break;                                              \
        case ROW_SIGMOID: sigmoid_##SFX(a, NULL, y, s, e); break;                                        \
        case ROW_TANH: tanh_##SFX(a, NULL, y, s, e); break;                                              \
        case ROW_RELU_GRAD: relu_grad_##SFX(a, b, y, s, e); break;                                       \
        case ROW_SIGMOID_GRAD: sigmoid_grad_##SFX(a, b, y, s, e); break;                                 \
        case ROW_TANH_GRAD: tanh_grad_##SFX(a, b, y, s, e); break;                                       \
        }                                                                                                \
    }

NN_EW_ALL(float, f32, expf, tanhf)
NN_EW_ALL(double, f64, exp, tanh)

#pragma GCC push_options /* the row loops below vectorize (loops, not just SLP); no float
                          * reduction is reassociated by this, so results do not change */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
/* Row max and sum of exponentials for softmax and cross-entropy. float32: 16 lanes
 * combined in a fixed order (so every ISA clone of simd.h gives the same bits) and exp
 * without libm (kernels/vmath.h), so the rows vectorize (the [700, 10000] logits of the
 * PTB language model took 27 ms in a serial libm loop; issue 30). float64: plain loops.
 * NaN handling as the plain loop: a NaN first element makes the max NaN, later NaNs are
 * skipped by the max. */
static inline __attribute__((always_inline)) float rowmax_f32(const float *restrict x, int64_t C) {
    float acc[16], m;
    int64_t c = 0;
    for (int k = 0; k < 16; k++) acc[k] = x[0];
    for (; c + 16 <= C; c += 16)
        for (int k = 0; k < 16; k++) acc[k] = x[c + k] > acc[k] ? x[c + k] : acc[k];
    m = acc[0];
    for (int k = 1; k < 16; k++) m = acc[k] > m ? acc[k] : m;
    for (; c < C; c++) m = x[c] > m ? x[c] : m;
    return m;
}
static inline __attribute__((always_inline)) float expsum_f32(const float *restrict x, float m, float *restrict out, int64_t C) {
    float acc[16] = {0}, sum = 0;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16)
        for (int k = 0; k < 16; k++) {
            out[c + k] = vg__vexpf(x[c + k] - m);
            acc[k] += out[c + k];
        }
    for (int k = 0; k < 16; k++) sum += acc[k];
    for (; c < C; c++) {
        out[c] = vg__vexpf(x[c] - m);
        sum += out[c];
    }
    return sum;
}
static inline double rowmax_f64(const double *x, int64_t C) {
    double m = x[0];
    for (int64_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
    return m;
}
static inline double expsum_f64(const double *x, double m, double *out, int64_t C) {
    double sum = 0;
    for (int64_t c = 0; c < C; c++) {
        out[c] = exp(x[c] - m);
        sum += out[c];
    }
    return sum;
}

#define NN_DEFINE_ROWS(T, SFX, EXP, LOG)                                                                \
    /* x, y are (rows, C); bias is (C) */                                                                \
    static void bias_add_##SFX(const T *restrict x, const T *restrict bias, T *restrict y, int64_t C,   \
                               int64_t r0, int64_t r1) {                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                              \
            const T *xr = x + r * C;                                                                     \
            T *yr = y + r * C;                                                                           \
            for (int64_t c = 0; c < C; c++) yr[c] = xr[c] + bias[c];                                     \
        }                                                                                                \
    }                                                                                                    \
    /* x, y are (rows, C): y = softmax(x) or log_softmax(x) over each row */                             \
    /* always inlined into the cloned rows_##SFX, so that they vectorize per ISA */                     \
    static inline __attribute__((always_inline)) void softmax_##SFX(const T *x, T *y, int64_t C, int64_t r0, \
                                                                    int64_t r1, bool log_) { \
        for (int64_t r = r0; r < r1; r++) {                                                              \
            const T *xr = x + r * C;                                                                     \
            T *yr = y + r * C, m = rowmax_##SFX(xr, C);                                                  \
            T sum = expsum_##SFX(xr, m, yr, C); /* yr: the exponentials (scratch for log) */              \
            if (log_) {                                                                                  \
                T lse = LOG(sum) + m;                                                                    \
                for (int64_t c = 0; c < C; c++) yr[c] = xr[c] - lse;                                     \
            } else {                                                                                     \
                T inv = (T)1 / sum;                                                                      \
                for (int64_t c = 0; c < C; c++) yr[c] *= inv;                                            \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    /* logits, labels, back are (rows, C); loss is (rows). labels is dense (probabilities) or, when      \
     * sparse, an index per row (int32 or int64). back = softmax(logits) - labels. */                    \
    static inline __attribute__((always_inline)) void xent_##SFX(const T *x, const void *labels, vg_dtype ldt, \
                                                                 T *loss, T *back, int64_t C, \
                           int64_t r0, int64_t r1) {                                                     \
        for (int64_t r = r0; r < r1; r++) {                                                              \
            const T *xr = x + r * C;                                                                     \
            T *br = back + r * C, m = rowmax_##SFX(xr, C), l = 0;                                        \
            T sum = expsum_##SFX(xr, m, br, C);                                                          \
            T logsum = LOG(sum), inv = (T)1 / sum;                                                       \
            if (ldt == VG_DTYPE_INVALID) {                                                               \
                const T *lr = (const T *)labels + r * C;                                                 \
                for (int64_t c = 0; c < C; c++) {                                                        \
                    l += lr[c] * (logsum - (xr[c] - m));                                                 \
                    br[c] = br[c] * inv - lr[c];                                                         \
                }                                                                                        \
            } else {                                                                                     \
                int64_t k = ldt == VG_INT32 ? ((const int32_t *)labels)[r] : ((const int64_t *)labels)[r]; \
                for (int64_t c = 0; c < C; c++) br[c] *= inv;                                            \
                br[k] -= (T)1;                                                                           \
                l = logsum - (xr[k] - m);                                                                \
            }                                                                                            \
            loss[r] = l;                                                                                 \
        }                                                                                                \
    }                                                                                                    \
    /* cloned per ISA (simd.h): BiasAdd/Relu/ReluGrad over conv outputs vectorize with the  \
     * widest registers; no float reduction is reassociated, so results do not change */     \
    VG_SIMD_CLONES static void rows_##SFX(const row_job *j, int64_t r0, int64_t r1) {                    \
        switch (j->kind) {                                                                               \
        case ROW_BIAS_ADD: bias_add_##SFX(j->a, j->b, j->y, j->C, r0, r1); break;                        \
        case ROW_SOFTMAX: softmax_##SFX(j->a, j->y, j->C, r0, r1, false); break;                         \
        case ROW_LOG_SOFTMAX: softmax_##SFX(j->a, j->y, j->C, r0, r1, true); break;                      \
        case ROW_XENT: xent_##SFX(j->a, j->b, VG_DTYPE_INVALID, j->y, j->y2, j->C, r0, r1); break;       \
        case ROW_SPARSE_XENT: xent_##SFX(j->a, j->b, j->label_dt, j->y, j->y2, j->C, r0, r1); break;     \
        default: elementwise_##SFX(j->kind, j->a, j->b, j->y, r0, r1); break;                            \
        }                                                                                                \
    }

NN_DEFINE_ROWS(float, f32, expf, logf)
NN_DEFINE_ROWS(double, f64, exp, log)
#pragma GCC pop_options

static void rows_fn(void *arg, int64_t r0, int64_t r1) {
    const row_job *j = arg;
    if (j->dt == VG_DOUBLE) rows_f64(j, r0, r1);
    else rows_f32(j, r0, r1);
}

/* Rough cost per element of each kind, for the parallel split. */
static int64_t row_cost(int kind) {
    switch (kind) {
    case ROW_RELU: case ROW_RELU_GRAD: case ROW_BIAS_ADD: case ROW_SIGMOID_GRAD: case ROW_TANH_GRAD: return 1;
    default: return 20;
    }
}

static void run_rows(vg__kctx *ctx, row_job *j, int64_t rows) {
    run_range(ctx, rows, j->C * row_cost(j->kind), rows_fn, j);
}

/* ------------------------------------------------------------------------ */
/* Elementwise activations and their gradients */

static vg_code shape_unary(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (check_same_real(op, 1, &dt, st)) return st->code;
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, 0));
}

static vg_code shape_binary_same(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (check_same_real(op, 2, &dt, st)) return st->code;
    vg_shape a = vg__op_input_shape(op, 0), b = vg__op_input_shape(op, 1), out;
    if (merge_shapes(&a, &b, &out, st)) return st->code;
    return vg__op_set_single_output(op, dt, out);
}

static vg_code run_elementwise(vg__kctx *ctx, int kind, int nin) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *a = vg__kctx_input(ctx, 0), *b = nin > 1 ? vg__kctx_input(ctx, 1) : NULL, *y;
    vg_dtype dt = vg_tensor_dtype(a);
    if (kcheck_real(ctx, a, VG_DTYPE_INVALID) || (b && kcheck_real(ctx, b, dt))) return st->code;
    char sa[128], sb[128];
    if (b && !vg__same_dims(a, b))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Inputs must have the same shape: %s != %s",
                             vg__tshape_str(a, sa, sizeof sa), vg__tshape_str(b, sb, sizeof sb));
    if (vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(a), vg_tensor_ndims(a), &y)) return st->code;
    row_job j = {kind, dt, 1, vg_tensor_data(a), b ? vg_tensor_data(b) : NULL, vg_tensor_data(y), NULL,
                 VG_DTYPE_INVALID};
    run_rows(ctx, &j, vg_tensor_num_elements(a));
    return VG_OK;
}

static vg_code kernel_relu(vg__kctx *ctx) { return run_elementwise(ctx, ROW_RELU, 1); }
static vg_code kernel_sigmoid(vg__kctx *ctx) { return run_elementwise(ctx, ROW_SIGMOID, 1); }
static vg_code kernel_tanh(vg__kctx *ctx) { return run_elementwise(ctx, ROW_TANH, 1); }
static vg_code kernel_relu_grad(vg__kctx *ctx) { return run_elementwise(ctx, ROW_RELU_GRAD, 2); }
static vg_code kernel_sigmoid_grad(vg__kctx *ctx) { return run_elementwise(ctx, ROW_SIGMOID_GRAD, 2); }
static vg_code kernel_tanh_grad(vg__kctx *ctx) { return run_elementwise(ctx, ROW_TANH_GRAD, 2); }

/* Relu: ReluGrad(dy, features = Relu's output), as TF's _ReluGrad. */
static vg_code grad_relu(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_relu_grad(g, dy[0], vg_out(op, 0), NULL);
    return vg_graph_status(g, NULL);
}
static vg_code grad_sigmoid(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_sigmoid_grad(g, vg_out(op, 0), dy[0], NULL);
    return vg_graph_status(g, NULL);
}
static vg_code grad_tanh(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_tanh_grad(g, vg_out(op, 0), dy[0], NULL);
    return vg_graph_status(g, NULL);
}
/* _ReluGradGrad: (ReluGrad(grad, features), zeros for the features). */
static vg_code grad_relu_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 1);
    dx[0] = vg_relu_grad(g, dy[0], x, NULL);
    dx[1] = vg_zeros_like(g, x, NULL);
    return vg_graph_status(g, NULL);
}
/* _SigmoidGradGrad: a = y, b = dy; (grad*b - 2*grad*b*a, SigmoidGrad(a, grad)). */
static vg_code grad_sigmoid_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output a = vg_op_input(op, 0), b = vg_op_input(op, 1);
    vg_output gb = vg_mul(g, dy[0], b, "mul");
    vg_output two = vg_const_fill(g, vg_output_dtype(a), NULL, 0, 2.0, "mul_1/x");
    dx[0] = vg_sub(g, gb, vg_mul(g, vg_mul(g, two, gb, "mul_1"), a, "mul_2"), "sub");
    dx[1] = vg_sigmoid_grad(g, a, dy[0], NULL);
    return vg_graph_status(g, NULL);
}
/* _TanhGradGrad: (grad * -2 * b * a, TanhGrad(a, grad)). */
static vg_code grad_tanh_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output a = vg_op_input(op, 0), b = vg_op_input(op, 1);
    vg_output m2 = vg_const_fill(g, vg_output_dtype(a), NULL, 0, -2.0, "mul/y");
    dx[0] = vg_mul(g, vg_mul(g, vg_mul(g, dy[0], m2, "mul"), b, "mul_1"), a, "mul_2");
    dx[1] = vg_tanh_grad(g, a, dy[0], NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* BiasAdd, BiasAddGrad (data_format NHWC: the bias runs along the last dim) */

static vg_code check_nhwc(vg_op *op, vg_status *st) {
    const char *df;
    size_t len;
    if (vg_op_attr_string(op, "data_format", &df, &len) && !(len == 4 && memcmp(df, "NHWC", 4) == 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "data_format %.*s is not supported (CPU: NHWC only)",
                             (int)len, df);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    return VG_OK;
}

static vg_code shape_bias_add(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (check_same_real(op, 2, &dt, st) || check_nhwc(op, st)) return st->code;
    vg_shape x = vg__op_input_shape(op, 0), b = vg__op_input_shape(op, 1);
    char sx[128], sb[128];
    if (x.ndims >= 0 && x.ndims < 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                             vg_shape_str(&x, sx, sizeof sx));
    if (b.ndims >= 0 && b.ndims != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Biases must be 1D: %s", vg_shape_str(&b, sb, sizeof sb));
    if (x.ndims >= 2 && b.ndims == 1) {
        int64_t c = merge_dim(x.dims[x.ndims - 1], b.dims[0]);
        if (c == -2)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
                                 vg_shape_str(&b, sb, sizeof sb), vg_shape_str(&x, sx, sizeof sx));
        x.dims[x.ndims - 1] = c;
    }
    return vg__op_set_single_output(op, dt, x);
}

static vg_code kernel_bias_add(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1), *y;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck_real(ctx, x, VG_DTYPE_INVALID) || kcheck_real(ctx, b, dt)) return st->code;
    char sx[128], sb[128];
    int nd = vg_tensor_ndims(x);
    if (nd < 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                             vg__tshape_str(x, sx, sizeof sx));
    if (vg_tensor_ndims(b) != 1 || vg_tensor_dim(b, 0) != vg_tensor_dim(x, nd - 1))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
                             vg__tshape_str(b, sb, sizeof sb), vg__tshape_str(x, sx, sizeof sx));
    if (vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), nd, &y)) return st->code;
    // x, y are (rows, C); bias is (C)
    int64_t C = vg_tensor_dim(x, nd - 1);
    if (C == 0) return VG_OK;
    row_job j = {ROW_BIAS_ADD, dt, C, vg_tensor_data(x), vg_tensor_data(b), vg_tensor_data(y), NULL,
                 VG_DTYPE_INVALID};
    run_rows(ctx, &j, vg_tensor_num_elements(x) / C);
    return VG_OK;
}

static vg_code grad_bias_add(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = dy[0];
    dx[1] = vg_bias_add_grad(g, dy[0], NULL);
    return vg_graph_status(g, NULL);
}

static vg_code shape_bias_add_grad(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (check_same_real(op, 1, &dt, st) || check_nhwc(op, st)) return st->code;
    vg_shape x = vg__op_input_shape(op, 0);
    char sx[128];
    if (x.ndims >= 0 && x.ndims < 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                             vg_shape_str(&x, sx, sizeof sx));
    int64_t c = x.ndims >= 2 ? x.dims[x.ndims - 1] : -1;
    return vg__op_set_single_output(op, dt, vg_shape_make(&c, 1));
}

typedef struct colsum_job {
    vg_dtype dt;
    const char *x;
    char *partial; /* (units, C) */
    int64_t rows, C, units;
} colsum_job;

/* Units [u0, u1): unit u sums rows [u*rows/units, (u+1)*rows/units) into partial[u]. */
VG_SIMD_CLONES static void colsum_units(void *arg, int64_t u0, int64_t u1) {
    const colsum_job *j = arg;
    for (int64_t u = u0; u < u1; u++) {
        int64_t r0 = u * j->rows / j->units, r1 = (u + 1) * j->rows / j->units, C = j->C;
        if (j->dt == VG_DOUBLE) {
            const double *x = (const double *)j->x;
            double *acc = (double *)j->partial + u * C;
            for (int64_t c = 0; c < C; c++) acc[c] = 0;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = 0; c < C; c++) acc[c] += x[r * C + c];
        } else {
            const float *x = (const float *)j->x;
            float *acc = (float *)j->partial + u * C;
            for (int64_t c = 0; c < C; c++) acc[c] = 0;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = 0; c < C; c++) acc[c] += x[r * C + c];
        }
    }
}

static vg_code kernel_bias_add_grad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *y;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck_real(ctx, x, VG_DTYPE_INVALID)) return st->code;
    int nd = vg_tensor_ndims(x);
    char sx[128];
    if (nd < 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                             vg__tshape_str(x, sx, sizeof sx));
    // x is (rows, C); y is (C)
    int64_t C = vg_tensor_dim(x, nd - 1);
    if (vg__kctx_alloc_output(ctx, 0, dt, &C, 1, &y)) return st->code;
    int64_t rows = C ? vg_tensor_num_elements(x) / C : 0;
    int64_t units = vg__kctx_num_threads(ctx);
    if (units > rows * C / 32768) units = rows * C / 32768;
    if (units < 1) units = 1;
    size_t es = real_size(dt);
    colsum_job j = {dt, vg_tensor_data(x), vg_tensor_data(y), rows, C, units};
    if (units == 1) {
        colsum_units(&j, 0, 1);
        return VG_OK;
    }
    j.partial = vg__aligned_alloc((size_t)(units * C) * es, 64);
    if (!j.partial) return VG_OOM(st, "BiasAddGrad partial sums");
    vg__kctx_parallel_for(ctx, units, rows * C / units, colsum_units, &j);
    if (dt == VG_DOUBLE) {
        double *out = vg_tensor_data(y), *p = (double *)j.partial;
        for (int64_t c = 0; c < C; c++) out[c] = p[c];
        for (int64_t u = 1; u < units; u++)
            for (int64_t c = 0; c < C; c++) out[c] += p[u * C + c];
    } else {
        float *out = vg_tensor_data(y), *p = (float *)j.partial;
        for (int64_t c = 0; c < C; c++) out[c] = p[c];
        for (int64_t u = 1; u < units; u++)
            for (int64_t c = 0; c < C; c++) out[c] += p[u * C + c];
    }
    vg__free(j.partial);
    return VG_OK;
}

/* _BiasAddGradGrad broadcasts the gradient back over the input's shape; BiasAdd of
 * zeros does the same in one kernel. */
static vg_code grad_bias_add_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_bias_add(g, vg_zeros_like(g, vg_op_input(op, 0), NULL), dy[0], NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Softmax, LogSoftmax (over the last dim) */

static vg_code shape_softmax(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (check_same_real(op, 1, &dt, st)) return st->code;
    vg_shape x = vg__op_input_shape(op, 0);
    if (x.ndims == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "logits must have >= 1 dimension, got []");
    return vg__op_set_single_output(op, dt, x);
}

static vg_code run_softmax(vg__kctx *ctx, bool log_) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *y;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck_real(ctx, x, VG_DTYPE_INVALID)) return st->code;
    int nd = vg_tensor_ndims(x);
    if (nd < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "logits must have >= 1 dimension, got []");
    if (vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), nd, &y)) return st->code;
    // x, y are (rows, C)
    int64_t C = vg_tensor_dim(x, nd - 1);
    if (C == 0) return VG_OK;
    row_job j = {log_ ? ROW_LOG_SOFTMAX : ROW_SOFTMAX, dt, C, vg_tensor_data(x), NULL, vg_tensor_data(y), NULL,
                 VG_DTYPE_INVALID};
    run_rows(ctx, &j, vg_tensor_num_elements(x) / C);
    return VG_OK;
}
static vg_code kernel_softmax(vg__kctx *ctx) { return run_softmax(ctx, false); }
static vg_code kernel_log_softmax(vg__kctx *ctx) { return run_softmax(ctx, true); }

/* The last axis of o, as a positive index when the rank is known. */
static int32_t last_axis(vg_output o) {
    vg_shape s = vg_output_shape(o);
    return s.ndims > 0 ? s.ndims - 1 : -1;
}

/* _SoftmaxGrad: (grad - sum(grad * softmax, -1, keepdims)) * softmax. */
static vg_code grad_softmax(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output sm = vg_out(op, 0);
    int32_t ax = last_axis(sm);
    vg_output sum = vg_reduce_sum(g, vg_mul(g, dy[0], sm, "mul"), &ax, 1, true, "Sum");
    dx[0] = vg_mul(g, vg_sub(g, dy[0], sum, "sub"), sm, "mul_1");
    return vg_graph_status(g, NULL);
}

/* _LogSoftmaxGrad: grad - sum(grad, -1, keepdims) * exp(logsoftmax). */
static vg_code grad_log_softmax(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output y = vg_out(op, 0);
    int32_t ax = last_axis(y);
    vg_output sm = vg_exp(g, y, "Exp");
    vg_output sum = vg_reduce_sum(g, dy[0], &ax, 1, true, "Sum");
    dx[0] = vg_sub(g, dy[0], vg_mul(g, sum, sm, "mul"), "sub");
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits */

static vg_code shape_xent(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (check_same_real(op, 2, &dt, st)) return st->code;
    vg_shape x = vg__op_input_shape(op, 0), l = vg__op_input_shape(op, 1), m;
    char sx[128], sl[128];
    if ((x.ndims >= 0 && x.ndims != 2) || (l.ndims >= 0 && l.ndims != 2))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "logits and labels must be 2-D, got %s and %s",
                             vg_shape_str(&x, sx, sizeof sx), vg_shape_str(&l, sl, sizeof sl));
    if (merge_shapes(&x, &l, &m, st) != VG_OK)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "logits and labels must be same size: logits_size=%s labels_size=%s",
                             vg_shape_str(&x, sx, sizeof sx), vg_shape_str(&l, sl, sizeof sl));
    if (m.ndims < 0) {
        int64_t unk[2] = {-1, -1};
        m = vg_shape_make(unk, 2);
    }
    return vg__op_set_two_outputs(op, dt, vg_shape_make(m.dims, 1), dt, m);
}

static vg_code shape_sparse_xent(vg_op *op, vg_status *st) {
    vg_dtype dt;
    if (check_same_real(op, 1, &dt, st)) return st->code;
    vg_dtype ldt = vg__op_input_dtype(op, 1);
    if (ldt != VG_INT32 && ldt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "labels must be int32 or int64, got %s", vg_dtype_name(ldt));
    vg__op_set_default_attr_type(op, "Tlabels", ldt);
    vg_shape x = vg__op_input_shape(op, 0), l = vg__op_input_shape(op, 1);
    char sx[128], sl[128];
    if (x.ndims >= 0 && x.ndims != 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "logits must be 2-D, but got shape %s",
                             vg_shape_str(&x, sx, sizeof sx));
    if (l.ndims >= 0 && l.ndims != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "labels must be 1-D, but got shape %s",
                             vg_shape_str(&l, sl, sizeof sl));
    int64_t dims[2] = {-1, -1};
    if (x.ndims == 2) { dims[0] = x.dims[0]; dims[1] = x.dims[1]; }
    if (l.ndims == 1) dims[0] = merge_dim(dims[0], l.dims[0]);
    if (dims[0] == -2)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "logits and labels must have the same first dimension, got logits shape %s and labels shape %s",
                             vg_shape_str(&x, sx, sizeof sx), vg_shape_str(&l, sl, sizeof sl));
    return vg__op_set_two_outputs(op, dt, vg_shape_make(dims, 1), dt, vg_shape_make(dims, 2));
}

static vg_code kernel_xent(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *l = vg__kctx_input(ctx, 1), *loss, *back;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck_real(ctx, x, VG_DTYPE_INVALID) || kcheck_real(ctx, l, dt)) return st->code;
    char sx[128], sl[128];
    if (vg_tensor_ndims(x) != 2 || !vg__same_dims(x, l))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "logits and labels must be 2-D and the same size: logits_size=%s labels_size=%s",
                             vg__tshape_str(x, sx, sizeof sx), vg__tshape_str(l, sl, sizeof sl));
    // x, l, back are (B, C); loss is (B)
    int64_t B = vg_tensor_dim(x, 0), C = vg_tensor_dim(x, 1);
    if (vg__kctx_alloc_output(ctx, 0, dt, &B, 1, &loss) ||
        vg__kctx_alloc_output(ctx, 1, dt, vg_tensor_dims(x), 2, &back))
        return st->code;
    if (C == 0) {
        memset(vg_tensor_data(loss), 0, vg_tensor_nbytes(loss));
        return VG_OK;
    }
    row_job j = {ROW_XENT, dt, C, vg_tensor_data(x), vg_tensor_data(l), vg_tensor_data(loss),
                 vg_tensor_data(back), VG_DTYPE_INVALID};
    run_rows(ctx, &j, B);
    return VG_OK;
}

static vg_code kernel_sparse_xent(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *l = vg__kctx_input(ctx, 1), *loss, *back;
    vg_dtype dt = vg_tensor_dtype(x), ldt = vg_tensor_dtype(l);
    if (kcheck_real(ctx, x, VG_DTYPE_INVALID)) return st->code;
    char sx[128], sl[128];
    if (ldt != VG_INT32 && ldt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "labels must be int32 or int64, got %s", vg_dtype_name(ldt));
    if (vg_tensor_ndims(x) != 2 || vg_tensor_ndims(l) != 1 || vg_tensor_dim(l, 0) != vg_tensor_dim(x, 0))
        return vg_status_set(
            st, VG_INVALID_ARGUMENT,
            "logits must be 2-D and labels 1-D with the same first dimension, got logits shape %s and labels shape %s",
            vg__tshape_str(x, sx, sizeof sx), vg__tshape_str(l, sl, sizeof sl));
    // x, back are (B, C); labels, loss are (B)
    int64_t B = vg_tensor_dim(x, 0), C = vg_tensor_dim(x, 1);
    const void *lab = vg_tensor_data(l);
    for (int64_t r = 0; r < B; r++) {
        int64_t k = ldt == VG_INT32 ? ((const int32_t *)lab)[r] : ((const int64_t *)lab)[r];
        if (k < 0 || k >= C) {
            /* TF's message, with up to the first 32 label values. */
            char vals[512];
            size_t n = 0;
            for (int64_t i = 0; i < B && i < 32 && n + 24 < sizeof vals; i++) {
                int64_t v = ldt == VG_INT32 ? ((const int32_t *)lab)[i] : ((const int64_t *)lab)[i];
                n += (size_t)snprintf(vals + n, sizeof vals - n, "%s%lld", i ? " " : "", (long long)v);
            }
            if (B > 32) snprintf(vals + n, sizeof vals - n, "...");
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Received a label value of %lld which is outside the valid range of [0, %lld).  "
                                 "Label values: %s",
                                 (long long)k, (long long)C, vals);
        }
    }
    if (vg__kctx_alloc_output(ctx, 0, dt, &B, 1, &loss) ||
        vg__kctx_alloc_output(ctx, 1, dt, vg_tensor_dims(x), 2, &back))
        return st->code;
    row_job j = {ROW_SPARSE_XENT, dt, C, vg_tensor_data(x), lab, vg_tensor_data(loss), vg_tensor_data(back), ldt};
    run_rows(ctx, &j, B);
    return VG_OK;
}

/* True when o is known to be all zeros (the framework's filler for an unused output). */
static bool is_zeros(vg_output o) {
    if (!o.op) return false;
    const char *t = vg_op_type(o.op);
    if (strcmp(t, "ZerosLike") == 0) return true;
    if (strcmp(t, "Const") == 0 || strcmp(t, "Fill") == 0) {
        const vg_tensor *v = NULL;
        if (strcmp(t, "Fill") == 0) {
            vg_output val = vg_op_input(o.op, 1);
            if (!val.op || strcmp(vg_op_type(val.op), "Const") != 0) return false;
            vg_op_attr_tensor(val.op, "value", &v);
        } else {
            vg_op_attr_tensor(o.op, "value", &v);
        }
        if (!v || !is_real(vg_tensor_dtype(v))) return false;
        int64_t n = vg_tensor_num_elements(v);
        for (int64_t i = 0; i < n; i++) {
            double d = vg_tensor_dtype(v) == VG_DOUBLE ? ((const double *)vg_tensor_data(v))[i]
                                                       : ((const float *)vg_tensor_data(v))[i];
            if (d != 0.0) return false;
        }
        return true;
    }
    return false;
}

/* TF's _BroadcastMul(vec, mat): expand_dims(vec, -1) * mat. */
static vg_output broadcast_mul(vg_graph *g, vg_output vec, vg_output mat) {
    vg_shape s = vg_output_shape(vec);
    return vg_mul(g, vg_expand_dims(g, vec, s.ndims >= 0 ? s.ndims : -1, "ExpandDims"), mat, "mul");
}

/* _SoftmaxCrossEntropyWithLogitsGrad: logits get grad_loss * backprop (plus the
 * second-order term when the backprop output itself has a gradient); labels get
 * grad_loss * -log_softmax(logits). */
static vg_code grad_xent(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output logits = vg_op_input(op, 0);
    vg_output gr = broadcast_mul(g, dy[0], vg_out(op, 1));
    if (!is_zeros(dy[1])) {
        int32_t ax = last_axis(logits);
        vg_output sm = vg_softmax(g, logits, "Softmax");
        vg_output dot = vg_reduce_sum(g, vg_mul(g, dy[1], sm, "mul_1"), &ax, 1, true, "Sum");
        gr = vg_add(g, gr, vg_mul(g, vg_sub(g, dy[1], dot, "sub"), sm, "mul_2"), "add");
    }
    dx[0] = gr;
    dx[1] = broadcast_mul(g, dy[0], vg_neg(g, vg_log_softmax(g, logits, "LogSoftmax"), "Neg"));
    return vg_graph_status(g, NULL);
}

/* _SparseSoftmaxCrossEntropyWithLogitsGrad: grad_loss * backprop; labels get none. */
static vg_code grad_sparse_xent(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = broadcast_mul(g, dy[0], vg_out(op, 1));
    dx[1] = (vg_output){NULL, 0};
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Builders */

static vg_output build1(vg_graph *g, const char *type, vg_output x, const char *name) {
    return vg__build_simple(g, type, name, NULL, (vg_output[]){x}, 1);
}

static vg_op *build2(vg_graph *g, const char *type, vg_output x, vg_output y, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){x, y}, 2);
    return vg_op_builder_finish(b);
}

vg_output vg_matmul(vg_graph *g, vg_output a, vg_output b, bool transpose_a, bool transpose_b, const char *name) {
    vg_op_builder *bl = vg__builder_with_inputs(g, "MatMul", name, NULL, (vg_output[]){a, b}, 2);
    vg_op_builder_set_attr_bool(bl, "transpose_a", transpose_a);
    vg_op_builder_set_attr_bool(bl, "transpose_b", transpose_b);
    return vg_out(vg_op_builder_finish(bl), 0);
}

vg_output vg_bias_add(vg_graph *g, vg_output x, vg_output bias, const char *name) {
    return vg_out(build2(g, "BiasAdd", x, bias, name), 0);
}
vg_output vg_bias_add_grad(vg_graph *g, vg_output dy, const char *name) {
    return build1(g, "BiasAddGrad", dy, name);
}
vg_output vg_relu(vg_graph *g, vg_output x, const char *name) { return build1(g, "Relu", x, name); }
vg_output vg_sigmoid(vg_graph *g, vg_output x, const char *name) { return build1(g, "Sigmoid", x, name); }
vg_output vg_tanh(vg_graph *g, vg_output x, const char *name) { return build1(g, "Tanh", x, name); }
vg_output vg_softmax(vg_graph *g, vg_output logits, const char *name) { return build1(g, "Softmax", logits, name); }
vg_output vg_log_softmax(vg_graph *g, vg_output logits, const char *name) {
    return build1(g, "LogSoftmax", logits, name);
}
vg_op *vg_softmax_xent(vg_graph *g, vg_output logits, vg_output labels, const char *name) {
    return build2(g, "SoftmaxCrossEntropyWithLogits", logits, labels, name);
}
vg_op *vg_sparse_softmax_xent(vg_graph *g, vg_output logits, vg_output labels, const char *name) {
    return build2(g, "SparseSoftmaxCrossEntropyWithLogits", logits, labels, name);
}
/* tf.nn.sparse_softmax_cross_entropy_with_logits (nn_ops.py): the op itself for rank-2
 * logits; otherwise logits reshaped to [-1, num_classes], labels to [-1], and the cost
 * reshaped back to the labels' shape, in name scope name or
 * "SparseSoftmaxCrossEntropyWithLogits". */
vg_output vg_sparse_softmax_cross_entropy_with_logits(vg_graph *g, vg_output labels, vg_output logits,
                                                      const char *name) {
    if (!labels.op || !logits.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "sparse_softmax_cross_entropy_with_logits: NULL labels or logits");
        return (vg_output){0};
    }
    vg_shape ls = vg_output_shape(labels), xs = vg_output_shape(logits);
    if (ls.ndims >= 0 && xs.ndims >= 0 && ls.ndims != xs.ndims - 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "Rank mismatch: Rank of labels (received %d) should equal rank of logits minus 1 "
                           "(received %d).",
                           ls.ndims, xs.ndims);
        return (vg_output){0};
    }
    if (xs.ndims == 2) {
        vg_op *op = vg_sparse_softmax_xent(g, logits, labels, name ? name : "SparseSoftmaxCrossEntropyWithLogits");
        return op ? vg_out(op, 0) : (vg_output){0};
    }
    if (xs.ndims < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "sparse_softmax_cross_entropy_with_logits: logits of unknown rank or rank 0");
        return (vg_output){0};
    }
    vg_graph_push_scope(g, name ? name : "SparseSoftmaxCrossEntropyWithLogits");
    vg_output labels_shape = vg_shape_op(g, labels, VG_INT32, NULL);
    int64_t classes = xs.dims[xs.ndims - 1];
    vg_output flat_logits;
    if (classes >= 0) {
        flat_logits = vg_reshape_c(g, logits, (const int64_t[]){-1, classes}, 2, NULL);
    } else { /* num_classes = array_ops.shape(logits)[-1] */
        vg_output n = vg_slice_c(g, vg_shape_op(g, logits, VG_INT32, NULL), (const int64_t[]){xs.ndims - 1},
                                 (const int64_t[]){1}, 1, NULL);
        flat_logits = vg_reshape(
            g, logits, vg_concat_c(g, (vg_output[]){vg_const_i32_vec(g, (const int32_t[]){-1}, 1, NULL), n}, 2, 0, NULL),
            NULL);
    }
    vg_output flat_labels = vg_reshape_c(g, labels, (const int64_t[]){-1}, 1, NULL);
    vg_op *op = vg_sparse_softmax_xent(g, flat_logits, flat_labels, NULL);
    vg_output cost = op ? vg_reshape(g, vg_out(op, 0), labels_shape, NULL) : (vg_output){0};
    vg_graph_pop_scope(g);
    return cost;
}
vg_output vg_relu_grad(vg_graph *g, vg_output dy, vg_output features, const char *name) {
    return vg_out(build2(g, "ReluGrad", dy, features, name), 0);
}
vg_output vg_sigmoid_grad(vg_graph *g, vg_output y, vg_output dy, const char *name) {
    return vg_out(build2(g, "SigmoidGrad", y, dy, name), 0);
}
vg_output vg_tanh_grad(vg_graph *g, vg_output y, vg_output dy, const char *name) {
    return vg_out(build2(g, "TanhGrad", y, dy, name), 0);
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_nn[] = {
    {"MatMul", 2, 2, 0, 0, shape_matmul, kernel_matmul, grad_matmul},
    /* plan-time fusion only (src/exec/fuse_matmul.c); never in a user graph */
    {"_VigilFusedMatMulSum", 2, -1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_matmul_sum, kernel_fused_matmul_sum, NULL},
    {"_VigilFusedMatMulSumTA", 2, -1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_matmul_sum, kernel_fused_matmul_sum_ta,
     NULL},
    {"BiasAdd", 2, 2, 0, 0, shape_bias_add, kernel_bias_add, grad_bias_add},
    {"BiasAddGrad", 1, 1, 0, 0, shape_bias_add_grad, kernel_bias_add_grad, grad_bias_add_grad},
    {"Relu", 1, 1, 0, 0, shape_unary, kernel_relu, grad_relu},
    {"ReluGrad", 2, 2, 0, 0, shape_binary_same, kernel_relu_grad, grad_relu_grad},
    {"Sigmoid", 1, 1, 0, 0, shape_unary, kernel_sigmoid, grad_sigmoid},
    {"SigmoidGrad", 2, 2, 0, 0, shape_binary_same, kernel_sigmoid_grad, grad_sigmoid_grad},
    {"Tanh", 1, 1, 0, 0, shape_unary, kernel_tanh, grad_tanh},
    {"TanhGrad", 2, 2, 0, 0, shape_binary_same, kernel_tanh_grad, grad_tanh_grad},
    {"Softmax", 1, 1, 0, 0, shape_softmax, kernel_softmax, grad_softmax},
    {"LogSoftmax", 1, 1, 0, 0, shape_softmax, kernel_log_softmax, grad_log_softmax},
    {"SoftmaxCrossEntropyWithLogits", 2, 2, 0, 0, shape_xent, kernel_xent, grad_xent},
    {"SparseSoftmaxCrossEntropyWithLogits", 2, 2, 0, 0, shape_sparse_xent, kernel_sparse_xent, grad_sparse_xent},
    {0},
};
