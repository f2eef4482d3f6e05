/*
 * linalg_ops.c - BatchMatMulV2 (batch dims broadcast, adj_x / adj_y; float/double via
 * OpenBLAS GEMM per matrix, some small float products by a direct AVX2 kernel), MatrixBandPart, Diag and DiagPart as TF 1.15's
 * batch_matmul_op_impl.h, matrix_band_part_op.cc and diag_op.cc, with math_grad.py /
 * array_grad.py gradients (_BatchMatMulV2: the four adjoint cases, then Sum over the
 * broadcast batch axes via BroadcastGradientArgs of shape[:-2]; _MatrixBandPartGrad:
 * the same band of the gradient; Diag <-> DiagPart), MatrixDiagPart and MatrixSetDiag
 * (matrix_diag_op.cc, matrix_set_diag_op.cc; _MatrixSetDiagGrad, _MatrixDiagPartGrad).
 */
#include "kernels/ew_internal.h"
#include <cblas.h>
#include <stdio.h>
#include <string.h>

/* ---- BatchMatMulV2 ---------------------------------------------------------------- */

static vg_code shape_bmm(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "BatchMatMulV2: x has dtype %s, which is not supported (float double)",
                             vg_dtype_name(dt));
    if (vg__op_input_dtype(op, 1) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "BatchMatMulV2: y has dtype %s but x has %s",
                             vg_dtype_name(vg__op_input_dtype(op, 1)), vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_bool(op, "adj_x", false);
    vg__op_set_default_attr_bool(op, "adj_y", false);
    bool ax = false, ay = false;
    vg_op_attr_bool(op, "adj_x", &ax);
    vg_op_attr_bool(op, "adj_y", &ay);
    vg_shape a = vg__op_input_shape(op, 0), b = vg__op_input_shape(op, 1), o = vg_shape_unknown();
    vg__op_set_num_outputs(op, 1);
    if (a.ndims >= 0 && a.ndims < 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "In[0] ndims must be >= 2: %d", a.ndims);
    if (b.ndims >= 0 && b.ndims < 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "In[1] ndims must be >= 2: %d", b.ndims);
    if (a.ndims >= 2 && b.ndims >= 2) {
        int64_t m = a.dims[a.ndims - (ax ? 1 : 2)], ka = a.dims[a.ndims - (ax ? 2 : 1)];
        int64_t kb = b.dims[b.ndims - (ay ? 1 : 2)], n = b.dims[b.ndims - (ay ? 2 : 1)];
        if (ka >= 0 && kb >= 0 && ka != kb)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "In[0] mismatch In[1] shape: %lld vs. %lld: adj_x %d adj_y %d", (long long)ka,
                                 (long long)kb, ax, ay);
        vg_shape ba = a, bb = b, bo;
        ba.ndims -= 2;
        bb.ndims -= 2;
        vg_code c = vg__shape_broadcast(&ba, &bb, &bo, st);
        if (c != VG_OK) return c;
        o = bo;
        o.ndims += 2;
        o.dims[o.ndims - 2] = m;
        o.dims[o.ndims - 1] = n;
    }
    vg__op_set_output(op, 0, dt, o);
    return VG_OK;
}

/* Small float products (the DNC's [1, 16] x [16, 16]^T, its norms' outer products, 16
 * per node): there one GEMM call per matrix costs more than the arithmetic, so with
 * AVX2 + FMA a direct kernel runs them: outer products (k = 1) four output rows at a
 * time with their 8-wide column blocks in registers, A Y^T (adj_y) as dot products of
 * rows. Every sum runs in a fixed order (the same on every run and thread count). The
 * other shapes measured no faster than OpenBLAS's small-matrix GEMM and stay there. */
#define BMM_SMALL_DIM 64
#define BMM_SMALL_ABT_MN 64
#if defined(__x86_64__) && defined(__GNUC__)
typedef float bmm_v8 __attribute__((vector_size(32), aligned(4)));
__attribute__((target("avx2,fma"))) static void bmm_small_f32(const float *restrict A, int64_t lda,
                                                               const float *restrict B, int64_t ldb,
                                                               float *restrict C, int64_t m, int64_t n, int64_t k) {
    int64_t n8 = n & ~(int64_t)7;
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        const float *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        for (int64_t j = 0; j < n8; j += 8) {
            bmm_v8 c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
            for (int64_t p = 0; p < k; p++) {
                bmm_v8 b = *(const bmm_v8 *)(B + p * ldb + j);
                c0 += a0[p] * b, c1 += a1[p] * b, c2 += a2[p] * b, c3 += a3[p] * b;
            }
            *(bmm_v8 *)(C + i * n + j) = c0, *(bmm_v8 *)(C + (i + 1) * n + j) = c1;
            *(bmm_v8 *)(C + (i + 2) * n + j) = c2, *(bmm_v8 *)(C + (i + 3) * n + j) = c3;
        }
        for (int64_t j = n8; j < n; j++) {
            float c0 = 0, c1 = 0, c2 = 0, c3 = 0;
            for (int64_t p = 0; p < k; p++) {
                float b = B[p * ldb + j];
                c0 += a0[p] * b, c1 += a1[p] * b, c2 += a2[p] * b, c3 += a3[p] * b;
            }
            C[i * n + j] = c0, C[(i + 1) * n + j] = c1, C[(i + 2) * n + j] = c2, C[(i + 3) * n + j] = c3;
        }
    }
    for (; i < m; i++) {
        const float *a0 = A + i * lda;
        for (int64_t j = 0; j < n8; j += 8) {
            bmm_v8 c0 = {0};
            for (int64_t p = 0; p < k; p++) c0 += a0[p] * *(const bmm_v8 *)(B + p * ldb + j);
            *(bmm_v8 *)(C + i * n + j) = c0;
        }
        for (int64_t j = n8; j < n; j++) {
            float c0 = 0;
            for (int64_t p = 0; p < k; p++) c0 += a0[p] * B[p * ldb + j];
            C[i * n + j] = c0;
        }
    }
}
/* C = A Y^T with A m x k and Y n x k row-major (adj_y): each output a dot product of two
 * contiguous rows, 8 lanes wide then summed lane by lane, four columns at a time. */
__attribute__((target("avx2,fma"))) static void bmm_small_abt_f32(const float *restrict A, int64_t lda,
                                                                   const float *restrict Y, int64_t ldy,
                                                                   float *restrict C, int64_t m, int64_t n, int64_t k) {
    int64_t k8 = k & ~(int64_t)7;
    for (int64_t i = 0; i < m; i++) {
        const float *a = A + i * lda;
        int64_t j = 0;
        for (; j + 4 <= n; j += 4) {
            const float *y0 = Y + j * ldy, *y1 = y0 + ldy, *y2 = y1 + ldy, *y3 = y2 + ldy;
            bmm_v8 c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
            for (int64_t p = 0; p < k8; p += 8) {
                bmm_v8 av = *(const bmm_v8 *)(a + p);
                c0 += av * *(const bmm_v8 *)(y0 + p), c1 += av * *(const bmm_v8 *)(y1 + p);
                c2 += av * *(const bmm_v8 *)(y2 + p), c3 += av * *(const bmm_v8 *)(y3 + p);
            }
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int l = 0; l < 8; l++) s0 += c0[l], s1 += c1[l], s2 += c2[l], s3 += c3[l];
            for (int64_t p = k8; p < k; p++) s0 += a[p] * y0[p], s1 += a[p] * y1[p], s2 += a[p] * y2[p], s3 += a[p] * y3[p];
            C[i * n + j] = s0, C[i * n + j + 1] = s1, C[i * n + j + 2] = s2, C[i * n + j + 3] = s3;
        }
        for (; j < n; j++) {
            const float *y0 = Y + j * ldy;
            bmm_v8 c0 = {0};
            for (int64_t p = 0; p < k8; p += 8) c0 += *(const bmm_v8 *)(a + p) * *(const bmm_v8 *)(y0 + p);
            float s0 = 0;
            for (int l = 0; l < 8; l++) s0 += c0[l];
            for (int64_t p = k8; p < k; p++) s0 += a[p] * y0[p];
            C[i * n + j] = s0;
        }
    }
}
static bool bmm_small_ok(void) {
    static int ok = -1;
    if (ok < 0) ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return ok > 0;
}
#else
static void bmm_small_f32(const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t m, int64_t n,
                          int64_t k) {
    (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)m, (void)n, (void)k;
}
static void bmm_small_abt_f32(const float *A, int64_t lda, const float *Y, int64_t ldy, float *C, int64_t m,
                              int64_t n, int64_t k) {
    (void)A, (void)lda, (void)Y, (void)ldy, (void)C, (void)m, (void)n, (void)k;
}
static bool bmm_small_ok(void) { return false; }
#endif

/* One small product C = op(X) op(Y) (X rows xr x xc, Y yr x yc): adjointed operands
 * copied row-major into the scratch first. */
static void bmm_small(const float *x, const float *y, float *c, int64_t m, int64_t n, int64_t k, int64_t xc,
                      int64_t yc, bool ax, bool ay, float *sa, float *sb) {
    const float *A = x, *B = y;
    int64_t lda = xc, ldb = yc;
    if (ax) { /* X is k x m */
        for (int64_t p = 0; p < k; p++)
            for (int64_t i = 0; i < m; i++) sa[i * k + p] = x[p * xc + i];
        A = sa, lda = k;
    }
    if (ay && k > 1) { /* Y is n x k: dot products of rows */
        bmm_small_abt_f32(A, lda, y, yc, c, m, n, k);
        return;
    }
    (void)sb; /* k == 1: Y^T is Y's single column read as a row */
    bmm_small_f32(A, lda, B, ay ? 1 : ldb, c, m, n, k);
}

static vg_code kernel_bmm(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0), *y = vg__kctx_input(ctx, 1);
    bool ax = false, ay = false;
    vg_op_attr_bool(vg__kctx_op(ctx), "adj_x", &ax);
    vg_op_attr_bool(vg__kctx_op(ctx), "adj_y", &ay);
    int ra = vg_tensor_ndims(x), rb = vg_tensor_ndims(y);
    if (ra < 2 || rb < 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "BatchMatMulV2: inputs must have rank >= 2");
    int64_t xr = vg_tensor_dim(x, ra - 2), xc = vg_tensor_dim(x, ra - 1), yr = vg_tensor_dim(y, rb - 2),
            yc = vg_tensor_dim(y, rb - 1);
    int64_t m = ax ? xc : xr, k = ax ? xr : xc, kb = ay ? yc : yr, n = ay ? yr : yc;
    if (k != kb)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "In[0] mismatch In[1] shape: %lld vs. %lld: [%lld,%lld] [%lld,%lld] %d %d",
                             (long long)k, (long long)kb, (long long)xr, (long long)xc, (long long)yr, (long long)yc, ax, ay);
    /* broadcast batch dims */
    int br = (ra > rb ? ra : rb) - 2;
    int64_t od[VG_MAX_DIMS], sa[VG_MAX_DIMS], sb[VG_MAX_DIMS], nb = 1, stra = 1, strb = 1;
    for (int i = br - 1; i >= 0; i--) {
        int ia = i - (br - (ra - 2)), ib = i - (br - (rb - 2));
        int64_t da = ia >= 0 ? vg_tensor_dim(x, ia) : 1, db = ib >= 0 ? vg_tensor_dim(y, ib) : 1;
        if (da != db && da != 1 && db != 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "In[0] and In[1] must have compatible batch dimensions: batch dim %d is %lld vs. %lld", i,
                                 (long long)da, (long long)db);
        vg__bcast2_dim(i, da, db, od, sa, sb, &stra, &strb);
        nb *= od[i];
    }
    od[br] = m;
    od[br + 1] = n;
    vg_tensor *o;
    vg_dtype dt = vg_tensor_dtype(x);
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, od, br + 2, &o);
    if (c != VG_OK || vg_tensor_num_elements(o) == 0) return c;
    if (k == 0) {
        memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
        return VG_OK;
    }
    int64_t idx[VG_MAX_DIMS] = {0}, oa = 0, ob = 0;
    size_t esz = vg_dtype_size(dt);
    /* where it measured faster than the GEMM call (16 products of the DNC's sizes): outer
     * products (k = 1), and A Y^T with few outputs per matrix */
    bool small = dt == VG_FLOAT && m <= BMM_SMALL_DIM && n <= BMM_SMALL_DIM && k <= BMM_SMALL_DIM &&
                 (k == 1 || (ay && !ax && m * n < BMM_SMALL_ABT_MN)) && bmm_small_ok();
    float scr_a[BMM_SMALL_DIM * BMM_SMALL_DIM], scr_b[BMM_SMALL_DIM * BMM_SMALL_DIM]; /* adjointed operands */
    for (int64_t t = 0; t < nb; t++) {
        const char *pa = (const char *)vg_tensor_data(x) + (size_t)(oa * xr * xc) * esz;
        const char *pb = (const char *)vg_tensor_data(y) + (size_t)(ob * yr * yc) * esz;
        char *po = (char *)vg_tensor_data(o) + (size_t)(t * m * n) * esz;
        if (small)
            bmm_small((const float *)pa, (const float *)pb, (float *)po, m, n, k, xc, yc, ax, ay, scr_a, scr_b);
        else if (dt == VG_FLOAT)
            cblas_sgemm(CblasRowMajor, ax ? CblasTrans : CblasNoTrans, ay ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                        1.0f, (const float *)pa, (int)xc, (const float *)pb, (int)yc, 0.0f, (float *)po, (int)n);
        else
            cblas_dgemm(CblasRowMajor, ax ? CblasTrans : CblasNoTrans, ay ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                        1.0, (const double *)pa, (int)xc, (const double *)pb, (int)yc, 0.0, (double *)po, (int)n);
        vg__bcast2_next(br, od, sa, sb, idx, &oa, &ob);
    }
    return VG_OK;
}

static bool same_static(const vg_shape *a, const vg_shape *b) {
    if (!vg_shape_is_fully_defined(a) || !vg_shape_is_fully_defined(b) || a->ndims != b->ndims) return false;
    return memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndims) == 0;
}

static vg_code grad_bmm(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), y = vg_op_input(op, 1), gr = dy[0], gx, gy;
    bool ax = false, ay = false;
    vg_op_attr_bool(op, "adj_x", &ax);
    vg_op_attr_bool(op, "adj_y", &ay);
    /* _BatchMatMulGrad by (adj_x, adj_y): gx and gy as matmul(opnd[a], opnd[b], adj_a, adj_b)
     * over the operands {grad, x, y} */
    static const struct {
        int a, b;
        bool adj_a, adj_b;
    } rule[4][2] = {
        {{0, 2, false, true}, {1, 0, true, false}},  /* x @ y */
        {{0, 2, false, false}, {0, 1, true, false}}, /* x @ y^T */
        {{2, 0, false, true}, {1, 0, false, false}}, /* x^T @ y */
        {{2, 0, true, true}, {0, 1, true, true}},    /* x^T @ y^T */
    };
    const vg_output opnd[3] = {gr, x, y};
    const int k = (ax ? 2 : 0) + (ay ? 1 : 0);
    gx = vg_batch_matmul(g, opnd[rule[k][0].a], opnd[rule[k][0].b], rule[k][0].adj_a, rule[k][0].adj_b, "MatMul");
    gy = vg_batch_matmul(g, opnd[rule[k][1].a], opnd[rule[k][1].b], rule[k][1].adj_a, rule[k][1].adj_b, "MatMul_1");
    vg_shape sxs = vg_output_shape(x), sys = vg_output_shape(y);
    if (same_static(&sxs, &sys)) {
        dx[0] = gx;
        dx[1] = gy;
        return vg_graph_status(g, NULL);
    }
    vg_output sx = vg_shape_op(g, x, VG_INT32, "Shape"), sy = vg_shape_op(g, y, VG_INT32, "Shape_1");
    int32_t b0 = 0, e2 = -2, s1 = 1;
    vg_strided_slice_masks m = {1, 0, 0, 0, 0};
    vg_output bx = vg_strided_slice_c(g, sx, &b0, &e2, &s1, 1, &m, "strided_slice");
    vg_output by = vg_strided_slice_c(g, sy, &b0, &e2, &s1, 1, &m, "strided_slice_1");
    vg_op *bga = vg_broadcast_gradient_args(g, bx, by, "BroadcastGradientArgs");
    if (!bga) return vg_graph_status(g, NULL);
    dx[0] = vg_reshape(g, vg_sum(g, gx, vg_out(bga, 0), false, "Sum"), sx, "Reshape");
    dx[1] = vg_reshape(g, vg_sum(g, gy, vg_out(bga, 1), false, "Sum_1"), sy, "Reshape_1");
    return vg_graph_status(g, NULL);
}

vg_output vg_batch_matmul(vg_graph *g, vg_output x, vg_output y, bool adj_x, bool adj_y, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "BatchMatMulV2", name, NULL, (vg_output[]){x, y}, 2);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_bool(b, "adj_x", adj_x);
    vg_op_builder_set_attr_bool(b, "adj_y", adj_y);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ---- MatrixBandPart ------------------------------------------------------------------ */

static vg_code shape_band(vg_op *op, vg_status *st) {
    vg_dtype it = vg__op_input_dtype(op, 1);
    if ((it != VG_INT32 && it != VG_INT64) || vg__op_input_dtype(op, 2) != it)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MatrixBandPart: num_lower and num_upper must be int32 or int64 of one dtype");
    vg_shape in = vg__op_input_shape(op, 0);
    if (in.ndims >= 0 && in.ndims < 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be at least 2-dim, received shape: rank %d", in.ndims);
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (vg_dtype_size(dt) == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "MatrixBandPart: unsupported dtype %s", vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_type(op, "Tindex", it);
    return vg__op_set_single_output(op, dt, in);
}

static vg_code kernel_band(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t lo, hi;
    if (!vg__int_scalar(vg__kctx_input(ctx, 1), false, &lo)) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_lower must be scalar");
    if (!vg__int_scalar(vg__kctx_input(ctx, 2), false, &hi)) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_upper must be scalar");
    int r = vg_tensor_ndims(x);
    if (r < 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be at least 2-dim");
    int64_t rows = vg_tensor_dim(x, r - 2), cols = vg_tensor_dim(x, r - 1);
    if (lo > rows) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_lower must be negative or less or equal to number of rows (%lld) got: %lld", (long long)rows, (long long)lo);
    if (hi > cols) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_upper must be negative or less or equal to number of columns (%lld) got: %lld", (long long)cols, (long long)hi);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), r, &o);
    if (c != VG_OK) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    int64_t mats = (rows > 0 && cols > 0) ? vg_tensor_num_elements(x) / (rows * cols) : 0;
    const char *src = vg_tensor_data(x);
    char *dst = vg_tensor_data(o);
    for (int64_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                size_t p = (size_t)((b * rows + i) * cols + j) * esz;
                bool keep = (lo < 0 || i - j <= lo) && (hi < 0 || j - i <= hi);
                if (keep) memcpy(dst + p, src + p, esz);
                else memset(dst + p, 0, esz);
            }
    return VG_OK;
}

static vg_code grad_band(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_matrix_band_part(g, dy[0], vg_op_input(op, 1), vg_op_input(op, 2), "MatrixBandPart");
    return vg_graph_status(g, NULL);
}

vg_output vg_matrix_band_part(vg_graph *g, vg_output x, vg_output num_lower, vg_output num_upper, const char *name) {
    return vg__build_simple(g, "MatrixBandPart", name, NULL, (vg_output[]){x, num_lower, num_upper}, 3);
}

vg_output vg_matrix_band_part_c(vg_graph *g, vg_output x, int64_t num_lower, int64_t num_upper, const char *name) {
    return vg_matrix_band_part(g, x, vg_const_i64(g, num_lower, "band_part/num_lower"),
                               vg_const_i64(g, num_upper, "band_part/num_upper"), name);
}

/* ---- Diag / DiagPart ----------------------------------------------------------------- */

static vg_code shape_diag(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (vg_dtype_size(dt) == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Diag: unsupported dtype %s", vg_dtype_name(dt));
    vg_shape in = vg__op_input_shape(op, 0), o = vg_shape_unknown();
    if (in.ndims == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Input must be at least rank 1, got 0");
    if (in.ndims > 0) {
        if (2 * in.ndims > VG_MAX_DIMS)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Diag: result rank %d exceeds %d", 2 * in.ndims, VG_MAX_DIMS);
        o.ndims = 2 * in.ndims;
        for (int i = 0; i < in.ndims; i++) o.dims[i] = o.dims[i + in.ndims] = in.dims[i];
    }
    return vg__op_set_t_output(op, dt, o);
}

static vg_code kernel_diag(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int r = vg_tensor_ndims(x);
    if (r < 1 || 2 * r > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "Diag: input rank %d not in [1, %d]", r, VG_MAX_DIMS / 2);
    int64_t dims[VG_MAX_DIMS], n = vg_tensor_num_elements(x);
    for (int i = 0; i < r; i++) dims[i] = dims[i + r] = vg_tensor_dim(x, i);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), dims, 2 * r, &o);
    if (c != VG_OK) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)vg_tensor_data(o) + (size_t)(i * n + i) * esz, (const char *)vg_tensor_data(x) + (size_t)i * esz, esz);
    return VG_OK;
}

static vg_code shape_diag_part(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (vg_dtype_size(dt) == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "DiagPart: unsupported dtype %s", vg_dtype_name(dt));
    vg_shape in = vg__op_input_shape(op, 0), o = vg_shape_unknown();
    if (in.ndims >= 0) {
        if (in.ndims == 0 || in.ndims % 2)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Input must have even rank <= %d, input rank is %d", VG_MAX_DIMS, in.ndims);
        int k = in.ndims / 2;
        o.ndims = k;
        for (int i = 0; i < k; i++) {
            int64_t a = in.dims[i], b = in.dims[i + k];
            if (a >= 0 && b >= 0 && a != b)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid shape: dimensions %d and %d do not match", i, i + k);
            o.dims[i] = a >= 0 ? a : b;
        }
    }
    return vg__op_set_t_output(op, dt, o);
}

static vg_code kernel_diag_part(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int r = vg_tensor_ndims(x);
    if (r == 0 || r % 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "The rank of the tensor should be even and positive, got shape rank %d", r);
    int k = r / 2;
    int64_t n = 1;
    for (int i = 0; i < k; i++) {
        if (vg_tensor_dim(x, i) != vg_tensor_dim(x, i + k))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid shape: dimensions %d and %d do not match", i, i + k);
        n *= vg_tensor_dim(x, i);
    }
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), k, &o);
    if (c != VG_OK) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)vg_tensor_data(o) + (size_t)i * esz, (const char *)vg_tensor_data(x) + (size_t)(i * n + i) * esz, esz);
    return VG_OK;
}

static vg_code grad_diag(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)op;
    dx[0] = vg_diag_part(g, dy[0], "DiagPart");
    return vg_graph_status(g, NULL);
}

static vg_code grad_diag_part(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)op;
    dx[0] = vg_diag(g, dy[0], "Diag");
    return vg_graph_status(g, NULL);
}

vg_output vg_diag(vg_graph *g, vg_output diagonal, const char *name) { return vg__ew_build1(g, "Diag", diagonal, name); }
vg_output vg_diag_part(vg_graph *g, vg_output input, const char *name) { return vg__ew_build1(g, "DiagPart", input, name); }

/* ---- MatrixDiagPart / MatrixSetDiag (matrix_diag_op.cc, matrix_set_diag_op.cc) ------ */
/* The batched forms of tf.linalg.diag_part / tf.linalg.set_diag on the last two dims:
 * input [..., M, N], diagonal [..., min(M, N)]. Gradients as array_grad.py:
 * _MatrixSetDiagGrad: (set_diag(grad, zeros), diag_part(grad)); _MatrixDiagPartGrad:
 * set_diag(zeros_like(x), grad). */

static vg_code shape_mdiag_part(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (vg_dtype_size(dt) == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MatrixDiagPart: unsupported dtype %s", vg_dtype_name(dt));
    vg_shape in = vg__op_input_shape(op, 0), o = vg_shape_unknown();
    if (in.ndims >= 0) {
        if (in.ndims < 2)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be at least 2-dim, received shape: rank %d", in.ndims);
        o.ndims = in.ndims - 1;
        for (int i = 0; i < in.ndims - 2; i++) o.dims[i] = in.dims[i];
        int64_t m = in.dims[in.ndims - 2], n = in.dims[in.ndims - 1];
        o.dims[o.ndims - 1] = m >= 0 && n >= 0 ? (m < n ? m : n) : -1;
    }
    return vg__op_set_t_output(op, dt, o);
}

static vg_code kernel_mdiag_part(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int r = vg_tensor_ndims(x);
    if (r < 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be at least 2-dim, received shape: rank %d", r);
    int64_t m = vg_tensor_dim(x, r - 2), n = vg_tensor_dim(x, r - 1), k = m < n ? m : n, dims[VG_MAX_DIMS];
    for (int i = 0; i < r - 2; i++) dims[i] = vg_tensor_dim(x, i);
    dims[r - 2] = k;
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), dims, r - 1, &o);
    if (c != VG_OK) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    int64_t mats = m * n > 0 ? vg_tensor_num_elements(x) / (m * n) : 0;
    for (int64_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < k; i++)
            memcpy((char *)vg_tensor_data(o) + (size_t)(b * k + i) * esz,
                   (const char *)vg_tensor_data(x) + (size_t)((b * m + i) * n + i) * esz, esz);
    return VG_OK;
}

static vg_code shape_mset_diag(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (vg_dtype_size(dt) == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MatrixSetDiag: unsupported dtype %s", vg_dtype_name(dt));
    if (vg__op_input_dtype(op, 1) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MatrixSetDiag: diagonal has dtype %s, input %s",
                             vg_dtype_name(vg__op_input_dtype(op, 1)), vg_dtype_name(dt));
    vg_shape in = vg__op_input_shape(op, 0), d = vg__op_input_shape(op, 1);
    if (in.ndims >= 0 && in.ndims < 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be at least a matrix, received shape: rank %d", in.ndims);
    if (in.ndims >= 0 && d.ndims >= 0) {
        if (d.ndims != in.ndims - 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "diagonal must be of rank %d (one less than input), received rank %d", in.ndims - 1, d.ndims);
        int64_t m = in.dims[in.ndims - 2], n = in.dims[in.ndims - 1], k = m >= 0 && n >= 0 ? (m < n ? m : n) : -1;
        for (int i = 0; i < d.ndims; i++) {
            int64_t want = i < d.ndims - 1 ? in.dims[i] : k, got = d.dims[i];
            if (want >= 0 && got >= 0 && want != got)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "diagonal dimension %d is %lld, the input needs %lld", i, (long long)got, (long long)want);
        }
    }
    return vg__op_set_t_output(op, dt, in);
}

static vg_code kernel_mset_diag(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0), *d = vg__kctx_input(ctx, 1);
    int r = vg_tensor_ndims(x);
    if (r < 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be at least a matrix, received shape: rank %d", r);
    int64_t m = vg_tensor_dim(x, r - 2), n = vg_tensor_dim(x, r - 1), k = m < n ? m : n;
    bool ok = vg_tensor_ndims(d) == r - 1 && vg_tensor_dim(d, r - 2) == k;
    for (int i = 0; ok && i < r - 2; i++) ok = vg_tensor_dim(d, i) == vg_tensor_dim(x, i);
    if (!ok) return vg_status_set(st, VG_INVALID_ARGUMENT, "diagonal must have the input's batch dims and min(M, N) = %lld entries", (long long)k);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), r, &o);
    if (c != VG_OK) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    memcpy(vg_tensor_data(o), vg_tensor_data(x), vg_tensor_nbytes(x));
    int64_t mats = m * n > 0 ? vg_tensor_num_elements(x) / (m * n) : 0;
    for (int64_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < k; i++)
            memcpy((char *)vg_tensor_data(o) + (size_t)((b * m + i) * n + i) * esz,
                   (const char *)vg_tensor_data(d) + (size_t)(b * k + i) * esz, esz);
    return VG_OK;
}

static vg_code grad_mset_diag(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output diag = vg_op_input(op, 1);
    dx[0] = vg_matrix_set_diag(g, dy[0], vg_zeros_like(g, diag, "zeros_like"), "MatrixSetDiag");
    dx[1] = vg_matrix_diag_part(g, dy[0], "MatrixDiagPart");
    return vg_graph_status(g, NULL);
}

static vg_code grad_mdiag_part(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_matrix_set_diag(g, vg_zeros_like(g, vg_op_input(op, 0), "zeros_like"), dy[0], "MatrixSetDiag");
    return vg_graph_status(g, NULL);
}

vg_output vg_matrix_diag_part(vg_graph *g, vg_output input, const char *name) {
    return vg__ew_build1(g, "MatrixDiagPart", input, name ? name : "MatrixDiagPart");
}

vg_output vg_matrix_set_diag(vg_graph *g, vg_output input, vg_output diagonal, const char *name) {
    return vg__build_simple(g, "MatrixSetDiag", name, "MatrixSetDiag", (vg_output[]){input, diagonal}, 2);
}

const vg__op_def vg__ops_linalg[] = {
    {"BatchMatMulV2", 2, 2, 0, 0, shape_bmm, kernel_bmm, grad_bmm},
    {"MatrixBandPart", 3, 3, 0, 0, shape_band, kernel_band, grad_band},
    {"Diag", 1, 1, 0, 0, shape_diag, kernel_diag, grad_diag},
    {"DiagPart", 1, 1, 0, 0, shape_diag_part, kernel_diag_part, grad_diag_part},
    {"MatrixDiagPart", 1, 1, 0, 0, shape_mdiag_part, kernel_mdiag_part, grad_mdiag_part},
    {"MatrixSetDiag", 2, 2, 0, 0, shape_mset_diag, kernel_mset_diag, grad_mset_diag},
    {0},
};
