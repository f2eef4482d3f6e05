/*
 * math_reduce_ops.c - the reduction ops (Sum, Mean, Max, Min, Prod, All, Any) and
 * ArgMax/ArgMin: shape functions, kernels, gradients (TF's _SumGrad, _MeanGrad,
 * _MinOrMaxGrad), the reduction builders of vigil/ops.h and the op table
 * vg__ops_math_reduce.
 *
 * A reduction kernel drops the input's size-1 dims and merges adjacent dims that are
 * all reduced or all kept, giving e.g. [R] (reduce all), [K,R] (last axis), [R,K]
 * (first axis) or [K,R,K]. It then walks the input once in memory order: the
 * innermost dim either folds a whole row into one output element (row loop) or
 * combines a row into a row of outputs (accumulate loop), both tight loops. Work is
 * split over the intra-op pool by chunks with partial results (reduce all), by the
 * outermost kept dim, or by columns ([R,K]).
 */
#include "kernels/math/math_internal.h"
#include "kernels/simd.h"
#include <complex.h>
#include <math.h>
#include <stdio.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* see math_cwise_ops.c */
#endif

enum { R_SUM, R_PROD, R_MAX, R_MIN, R_ALL, R_ANY, R_N };

/* ------------------------------------------------------------------------ */
/* Per (reducer, dtype) loops. */

typedef struct red_impl {
    void (*init)(void *out, int64_t n);                 /* out[0..n) = identity */
    void (*row)(const void *x, int64_t n, void *acc);   /* *acc = op(*acc, x[0..n)) */
    void (*accum)(const void *x, int64_t n, void *out); /* out[j] = op(out[j], x[j]) */
    /* accum over rows of x (rows x n) in row order, one call: a per-channel mean of NHWC
     * activations folds 131072 rows of 16 (the ResNet's moments: 1.27 ms a call, ~10 ns
     * a row in call overhead, before) */
    void (*accum_rows)(const void *x, int64_t rows, int64_t n, void *out);
} red_impl;

#define RED_INIT(NAME, T, V) \
    static void NAME##_init(void *o_, int64_t n) { T *o = o_; for (int64_t i = 0; i < n; i++) o[i] = (V); }
#define RED_ACCUM(NAME, T, COMB)                                          \
    static void NAME##_accum(const void *x_, int64_t n, void *o_) {       \
        const T *restrict xs = x_;                                        \
        T *restrict o = o_;                                               \
        for (int64_t i = 0; i < n; i++) { T a = o[i], x = xs[i]; o[i] = (COMB); } \
    }                                                                     \
    VG_SIMD_CLONES static void NAME##_accum_rows(const void *x_, int64_t rows, int64_t n, void *o_) { \
        const T *restrict xs = x_;                                        \
        T *restrict o = o_;                                               \
        /* narrow rows: the running values in registers (a constant width) */ \
        if (n == 16 || n == 32 || n == 64) {                              \
            T acc[64];                                                    \
            for (int64_t i0 = 0; i0 < n; i0 += 16) {                      \
                for (int i = 0; i < 16; i++) acc[i] = o[i0 + i];          \
                const T *xr = xs + i0;                                    \
                for (int64_t r = 0; r < rows; r++, xr += n)               \
                    for (int i = 0; i < 16; i++) { T a = acc[i], x = xr[i]; acc[i] = (COMB); } \
                for (int i = 0; i < 16; i++) o[i0 + i] = acc[i];          \
            }                                                             \
            return;                                                       \
        }                                                                 \
        for (int64_t r = 0; r < rows; r++, xs += n)                       \
            for (int64_t i = 0; i < n; i++) { T a = o[i], x = xs[i]; o[i] = (COMB); } \
    }
/* Row fold with 16 independent lanes: vectorizable without reassociation and more
 * accurate for floating-point sums than one running total. */
#define RED_ROW(NAME, T, V, COMB)                                          \
    static void NAME##_row(const void *x_, int64_t n, void *acc_) {        \
        const T *xs = x_;                                                  \
        T l[16];                                                           \
        for (int k = 0; k < 16; k++) l[k] = (V);                           \
        int64_t i = 0;                                                     \
        for (; i + 16 <= n; i += 16)                                       \
            for (int k = 0; k < 16; k++) { T a = l[k], x = xs[i + k]; l[k] = (COMB); } \
        T a = *(T *)acc_;                                                  \
        for (; i < n; i++) { T x = xs[i]; a = (COMB); }                    \
        for (int k = 0; k < 16; k++) { T x = l[k]; a = (COMB); }           \
        *(T *)acc_ = a;                                                    \
    }
#define RED3(NAME, T, V, COMB) RED_INIT(NAME, T, V) RED_ACCUM(NAME, T, COMB) RED_ROW(NAME, T, V, COMB)
#define RI(NAME) {NAME##_init, NAME##_row, NAME##_accum, NAME##_accum_rows}

#define WADD(T, U) ((T)((U)a + (U)x))
#define WMUL(T, U) ((T)((U)a * (U)x))

RED_INIT(sum_f32, float, 0.0f)
RED_ACCUM(sum_f32, float, a + x)
/* float sums fold blocks of 4096 in float lanes and the block totals in double. */
static void sum_f32_row(const void *x_, int64_t n, void *acc_) {
    const float *xs = x_;
    double total = *(float *)acc_;
    for (int64_t b = 0; b < n; b += 4096) {
        int64_t e = n - b < 4096 ? n : b + 4096, i = b;
        float l[16] = {0};
        for (; i + 16 <= e; i += 16)
            for (int k = 0; k < 16; k++) l[k] += xs[i + k];
        float s = 0;
        for (; i < e; i++) s += xs[i];
        for (int k = 0; k < 16; k++) s += l[k];
        total += s;
    }
    *(float *)acc_ = (float)total;
}
RED3(sum_f64, double, 0.0, a + x)
RED3(sum_i32, int32_t, 0, WADD(int32_t, uint32_t))
RED3(sum_i64, int64_t, 0, WADD(int64_t, uint64_t))
RED3(prod_f32, float, 1.0f, a * x)
RED3(prod_f64, double, 1.0, a * x)
RED3(prod_i32, int32_t, 1, WMUL(int32_t, uint32_t))
RED3(prod_i64, int64_t, 1, WMUL(int64_t, uint64_t))
RED3(max_f32, float, -INFINITY, a < x ? x : a)
RED3(max_f64, double, -INFINITY, a < x ? x : a)
RED3(max_i32, int32_t, INT32_MIN, a < x ? x : a)
RED3(max_i64, int64_t, INT64_MIN, a < x ? x : a)
RED3(min_f32, float, INFINITY, x < a ? x : a)
RED3(min_f64, double, INFINITY, x < a ? x : a)
RED3(min_i32, int32_t, INT32_MAX, x < a ? x : a)
RED3(min_i64, int64_t, INT64_MAX, x < a ? x : a)
typedef float _Complex cf32;
typedef double _Complex cf64;
RED3(sum_c64, cf32, 0.0f, a + x)
RED3(sum_c128, cf64, 0.0, a + x)
RED3(prod_c64, cf32, 1.0f, a * x)
RED3(prod_c128, cf64, 1.0, a * x)
RED3(all_b, uint8_t, 1, (uint8_t)(a & (x != 0)))
RED3(any_b, uint8_t, 0, (uint8_t)(a | (x != 0)))

#define RNUM4(OP) {[VG__MS_F32] = RI(OP##_f32), [VG__MS_F64] = RI(OP##_f64), [VG__MS_I32] = RI(OP##_i32), \
                   [VG__MS_I64] = RI(OP##_i64)}
static const red_impl red_tbl[R_N][VG__MS_N] = {
    [R_SUM] = {[VG__MS_F32] = RI(sum_f32), [VG__MS_F64] = RI(sum_f64), [VG__MS_I32] = RI(sum_i32),
               [VG__MS_I64] = RI(sum_i64), [VG__MS_C64] = RI(sum_c64), [VG__MS_C128] = RI(sum_c128)},
    [R_PROD] = {[VG__MS_F32] = RI(prod_f32), [VG__MS_F64] = RI(prod_f64), [VG__MS_I32] = RI(prod_i32),
                [VG__MS_I64] = RI(prod_i64), [VG__MS_C64] = RI(prod_c64), [VG__MS_C128] = RI(prod_c128)},
    [R_MAX] = RNUM4(max), [R_MIN] = RNUM4(min),
    [R_ALL] = {[VG__MS_BOOL] = RI(all_b)}, [R_ANY] = {[VG__MS_BOOL] = RI(any_b)},
};

/* ------------------------------------------------------------------------ */
/* Shape function (shared by all reductions). */

/* Reads a reduction-axes tensor (int32/int64, scalar or vector) into the mask red[]
 * for rank r. INVALID_ARGUMENT on out-of-range or duplicate axes. */
static vg_code axes_mask(const vg_tensor *ax, int r, bool *red, vg_status *st) {
    int64_t n = vg_tensor_num_elements(ax);
    vg_dtype dt = vg_tensor_dtype(ax);
    for (int i = 0; i < r; i++) red[i] = false;
    if (dt != VG_INT32 && dt != VG_INT64) return vg__math_check_dtype("reduction_indices", dt, VG__M_INDEX, st);
    for (int64_t i = 0; i < n; i++) {
        int64_t a = dt == VG_INT32 ? ((const int32_t *)vg_tensor_data(ax))[i] : ((const int64_t *)vg_tensor_data(ax))[i];
        if (a < -r || a >= r)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid reduction dimension %lld for input with %d dimensions.",
                                 (long long)a, r);
        if (a < 0) a += r;
        if (red[a])
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Invalid reduction arguments: Axes contains duplicate dimension: %lld", (long long)a);
        red[a] = true;
    }
    return VG_OK;
}

static bool is_bool_reduction(const char *type) { return !strcmp(type, "All") || !strcmp(type, "Any"); }

static vg_code shape_reduce(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0), it = vg__op_input_dtype(op, 1), t;
    const char *type = vg_op_type(op);
    bool cplx = !strcmp(type, "Sum") || !strcmp(type, "Mean") || !strcmp(type, "Prod"); /* also complex */
    vg_code c = vg__math_check_dtype("input", dt,
                                     is_bool_reduction(type) ? VG__M_BOOL : VG__M_NUM | (cplx ? VG__M_COMPLEX : 0u), st);
    if (c == VG_OK) c = vg__math_check_dtype("reduction_indices", it, VG__M_INDEX, st);
    if (c != VG_OK) return c;
    if (!is_bool_reduction(vg_op_type(op))) {
        if (vg_op_attr_type_(op, "T", &t) && t != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "attr 'T' is %s but the input has dtype %s",
                                 vg_dtype_name(t), vg_dtype_name(dt));
        vg__op_set_default_attr_type(op, "T", dt);
    }
    vg__op_set_default_attr_type(op, "Tidx", it);
    vg__op_set_default_attr_bool(op, "keep_dims", false);
    bool keep = false;
    vg_op_attr_bool(op, "keep_dims", &keep);
    vg_shape xs = vg__op_input_shape(op, 0), out = vg_shape_unknown();
    vg_shape as = vg__op_input_shape(op, 1);
    if (as.ndims > 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "reduction_indices must be a scalar or a vector");
    const vg_tensor *ax = vg__op_const_input(op, 1);
    if (xs.ndims >= 0 && ax) {
        bool red[VG_MAX_DIMS];
        if ((c = axes_mask(ax, xs.ndims, red, st)) != VG_OK) return c;
        out.ndims = 0;
        for (int i = 0; i < xs.ndims; i++) {
            if (!red[i]) out.dims[out.ndims++] = xs.dims[i];
            else if (keep) out.dims[out.ndims++] = 1;
        }
    } else if (xs.ndims >= 0 && keep) {
        out.ndims = xs.ndims;
        for (int i = 0; i < xs.ndims; i++) out.dims[i] = -1;
    }
    return vg__op_set_single_output(op, dt, out);
}

/* ------------------------------------------------------------------------ */
/* Reduction kernel */

typedef struct red_job {
    const red_impl *impl;
    const char *x;
    char *out;
    size_t esz;
    int nd;                        /* collapsed dims, outer to inner */
    int64_t dims[VG_MAX_DIMS];
    bool red[VG_MAX_DIMS];
    int64_t ostr[VG_MAX_DIMS];     /* output element stride per dim (0 where reduced) */
    int64_t rows_per_outer;        /* input rows (all dims but the last) per index of dim 0 */
    int64_t chunk;                 /* reduce-all: elements per partial */
    char *partials;
} red_job;

/* Processes input rows [row0, row1) (a row = the innermost collapsed dim). */
static void red_rows(const red_job *j, int64_t row0, int64_t row1) {
    int last = j->nd - 1;
    int64_t inner = j->dims[last];
    if (j->nd == 2 && j->red[0] && !j->red[1]) { /* [R, K] -> [K]: every row into out */
        if (row1 > row0) j->impl->accum_rows(j->x + (size_t)(row0 * inner) * j->esz, row1 - row0, inner, j->out);
        return;
    }
    int64_t idx[VG_MAX_DIMS], oo = 0, r = row0;
    for (int d = last - 1; d >= 0; d--) {
        idx[d] = r % j->dims[d];
        r /= j->dims[d];
        oo += idx[d] * j->ostr[d];
    }
    for (int64_t row = row0; row < row1; row++) {
        const char *xr = j->x + (size_t)(row * inner) * j->esz;
        if (j->red[last]) j->impl->row(xr, inner, j->out + (size_t)oo * j->esz);
        else j->impl->accum(xr, inner, j->out + (size_t)oo * j->esz);
        for (int d = last - 1; d >= 0; d--) {
            oo += j->ostr[d];
            if (++idx[d] < j->dims[d]) break;
            oo -= j->ostr[d] * j->dims[d];
            idx[d] = 0;
        }
    }
}

/* parallel_for bodies */
static void red_outer_run(void *arg, int64_t b, int64_t e) {
    const red_job *j = arg;
    red_rows(j, b * j->rows_per_outer, e * j->rows_per_outer);
}
static void red_cols_run(void *arg, int64_t b, int64_t e) { /* [R, K]: columns [b, e) */
    const red_job *j = arg;
    int64_t K = j->dims[1];
    for (int64_t r = 0; r < j->dims[0]; r++)
        j->impl->accum(j->x + (size_t)(r * K + b) * j->esz, e - b, j->out + (size_t)b * j->esz);
}
static void red_chunks_run(void *arg, int64_t b, int64_t e) { /* [R]: partial per chunk */
    const red_job *j = arg;
    for (int64_t c = b; c < e; c++) {
        int64_t s = c * j->chunk, n = j->dims[0] - s < j->chunk ? j->dims[0] - s : j->chunk;
        char *p = j->partials + (size_t)c * j->esz;
        j->impl->init(p, 1);
        j->impl->row(j->x + (size_t)s * j->esz, n, p);
    }
}

static void red_rowchunks_run(void *arg, int64_t b, int64_t e) { /* [R, K], K small: partial rows */
    const red_job *j = arg;
    int64_t R = j->dims[0], K = j->dims[1];
    for (int64_t c = b; c < e; c++) {
        int64_t r1 = (c + 1) * j->chunk < R ? (c + 1) * j->chunk : R;
        char *p = j->partials + (size_t)(c * K) * j->esz;
        j->impl->init(p, K);
        if (r1 > c * j->chunk) j->impl->accum_rows(j->x + (size_t)(c * j->chunk * K) * j->esz, r1 - c * j->chunk, K, p);
    }
}

/* [R, K] over the pool: by columns when rows are wide, else by row chunks that each
 * fold into their own partial row (combined at the end). */
static void red_first_axis(vg__kctx *ctx, red_job *j, int64_t nx) {
    int64_t R = j->dims[0], K = j->dims[1];
    int64_t nchunks = nx / (VG__MATH_PAR_MIN / 4);
    if (nchunks > 64) nchunks = 64;
    if (nchunks > R) nchunks = R;
    if (K >= 512 || nchunks < 2) {
        vg__kctx_parallel_for(ctx, K, R, red_cols_run, j);
        return;
    }
    j->chunk = (R + nchunks - 1) / nchunks;
    nchunks = (R + j->chunk - 1) / j->chunk;
    j->partials = vg__malloc((size_t)(nchunks * K) * j->esz);
    if (!j->partials) { /* no scratch: do it on this thread */
        red_rows(j, 0, R);
        return;
    }
    vg__kctx_parallel_for(ctx, nchunks, j->chunk * K, red_rowchunks_run, j);
    for (int64_t c = 0; c < nchunks; c++) j->impl->accum(j->partials + (size_t)(c * K) * j->esz, K, j->out);
    vg__free(j->partials);
    j->partials = NULL;
}

/* Runs the collapsed reduction (out already holds the identity). */
static void red_execute(vg__kctx *ctx, red_job *j, int64_t nx) {
    bool par = nx >= VG__MATH_PAR_MIN && vg__kctx_num_threads(ctx) > 1;
    if (j->nd == 1 && j->red[0]) {
        int64_t nchunks = par ? (nx + VG__MATH_PAR_MIN - 1) / VG__MATH_PAR_MIN : 1;
        if (nchunks > 64) nchunks = 64;
        if (nchunks <= 1) {
            j->impl->row(j->x, nx, j->out);
            return;
        }
        int64_t pbuf[64];
        j->partials = (char *)pbuf;
        j->chunk = (nx + nchunks - 1) / nchunks;
        nchunks = (nx + j->chunk - 1) / j->chunk;
        vg__kctx_parallel_for(ctx, nchunks, j->chunk, red_chunks_run, j);
        j->impl->row(j->partials, nchunks, j->out);
        return;
    }
    int64_t rows = nx / j->dims[j->nd - 1];
    if (!par) {
        red_rows(j, 0, rows);
    } else if (!j->red[0]) {
        j->rows_per_outer = rows / j->dims[0];
        vg__kctx_parallel_for(ctx, j->dims[0], nx / j->dims[0], red_outer_run, j);
    } else if (j->nd == 2) {
        red_first_axis(ctx, j, nx);
    } else {
        red_rows(j, 0, rows);
    }
}

/* Mean: out /= count. */
static void mean_finish(void *out, vg_dtype dt, int64_t n, int64_t count) {
    switch (dt) {
    case VG_FLOAT: { float *o = out, c = (float)count; for (int64_t i = 0; i < n; i++) o[i] /= c; break; }
    case VG_DOUBLE: { double *o = out, c = (double)count; for (int64_t i = 0; i < n; i++) o[i] /= c; break; }
    case VG_INT32: { int32_t *o = out; for (int64_t i = 0; i < n; i++) o[i] = count ? (int32_t)(o[i] / count) : 0; break; }
    case VG_INT64: { int64_t *o = out; for (int64_t i = 0; i < n; i++) o[i] = count ? o[i] / count : 0; break; }
    case VG_COMPLEX64: { cf32 *o = out; float c = (float)count; for (int64_t i = 0; i < n; i++) o[i] /= c; break; }
    case VG_COMPLEX128: { cf64 *o = out; double c = (double)count; for (int64_t i = 0; i < n; i++) o[i] /= c; break; }
    default: break;
    }
}

static vg_code reduce_kernel(vg__kctx *ctx, int kind, bool mean) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0), *ax = vg__kctx_input(ctx, 1);
    vg_dtype dt = vg_tensor_dtype(x);
    int slot = vg__math_slot(dt);
    const red_impl *impl = slot >= 0 ? &red_tbl[kind][slot] : NULL;
    if (!impl || !impl->row) return vg__math_check_dtype("input", dt, 0, st);
    if (vg_tensor_ndims(ax) > 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "reduction_indices must be a scalar or a vector");
    int r = vg_tensor_ndims(x);
    const int64_t *xd = vg_tensor_dims(x);
    bool red[VG_MAX_DIMS], keep = false;
    vg_code c = axes_mask(ax, r, red, st);
    if (c != VG_OK) return c;
    vg_op_attr_bool(vg__kctx_op(ctx), "keep_dims", &keep);
    int64_t od[VG_MAX_DIMS], count = 1;
    int ond = 0;
    for (int i = 0; i < r; i++) {
        if (!red[i]) od[ond++] = xd[i];
        else {
            count *= xd[i];
            if (keep) od[ond++] = 1;
        }
    }
    vg_tensor *o;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, od, ond, &o)) != VG_OK) return c;
    int64_t no = vg_tensor_num_elements(o), nx = vg_tensor_num_elements(x);
    if (no == 0) return VG_OK;
    if (nx == no) { /* every reduced dim has size 1: a copy */
        memcpy(vg_tensor_data(o), vg_tensor_data(x), (size_t)nx * vg_dtype_size(dt));
        return VG_OK;
    }
    impl->init(vg_tensor_data(o), no);
    if (nx > 0) {
        red_job j;
        memset(&j, 0, sizeof j);
        j.impl = impl;
        j.x = vg_tensor_data(x);
        j.out = vg_tensor_data(o);
        j.esz = vg_dtype_size(dt);
        /* collapse: drop size-1 dims, merge neighbours of the same kind */
        for (int i = 0; i < r; i++) {
            if (xd[i] == 1) continue;
            if (j.nd > 0 && j.red[j.nd - 1] == red[i]) {
                j.dims[j.nd - 1] *= xd[i];
            } else {
                j.dims[j.nd] = xd[i];
                j.red[j.nd++] = red[i];
            }
        }
        if (j.nd == 0) { /* a single element */
            j.dims[0] = 1;
            j.red[0] = false;
            j.nd = 1;
        }
        int64_t s = 1;
        for (int d = j.nd - 1; d >= 0; d--) {
            j.ostr[d] = j.red[d] ? 0 : s;
            if (!j.red[d]) s *= j.dims[d];
        }
        red_execute(ctx, &j, nx);
    }
    if (mean) mean_finish(vg_tensor_data(o), dt, no, count);
    return VG_OK;
}

static vg_code kernel_sum(vg__kctx *ctx) { return reduce_kernel(ctx, R_SUM, false); }
static vg_code kernel_mean(vg__kctx *ctx) { return reduce_kernel(ctx, R_SUM, true); }
static vg_code kernel_max(vg__kctx *ctx) { return reduce_kernel(ctx, R_MAX, false); }
static vg_code kernel_min(vg__kctx *ctx) { return reduce_kernel(ctx, R_MIN, false); }
static vg_code kernel_prod(vg__kctx *ctx) { return reduce_kernel(ctx, R_PROD, false); }
static vg_code kernel_all(vg__kctx *ctx) { return reduce_kernel(ctx, R_ALL, false); }
static vg_code kernel_any(vg__kctx *ctx) { return reduce_kernel(ctx, R_ANY, false); }

/* ------------------------------------------------------------------------ */
/* ArgMax / ArgMin(input, dimension), output_type int32/int64. First index wins ties. */

typedef void (*arg_fn)(const void *x, void *o, int64_t outer, int64_t n, int64_t inner, void *tmp);

/* x is (outer, n, inner); o is (outer, inner); tmp holds inner best values. */
#define ARG_FN(NAME, T, TO, BETTER)                                                        \
    static void NAME(const void *x_, void *o_, int64_t outer, int64_t n, int64_t inner, void *tmp) { \
        const T *xs = x_;                                                                  \
        TO *os = o_;                                                                       \
        T *best = tmp;                                                                     \
        for (int64_t p = 0; p < outer; p++) {                                              \
            const T *xp = xs + p * n * inner;                                              \
            TO *op = os + p * inner;                                                       \
            if (inner == 1) {                                                              \
                T b = xp[0];                                                               \
                int64_t bi = 0;                                                            \
                for (int64_t k = 1; k < n; k++) {                                          \
                    T a = xp[k];                                                           \
                    if (BETTER) { b = a; bi = k; }                                         \
                }                                                                          \
                op[0] = (TO)bi;                                                            \
                continue;                                                                  \
            }                                                                              \
            for (int64_t j = 0; j < inner; j++) { best[j] = xp[j]; op[j] = 0; }           \
            for (int64_t k = 1; k < n; k++) {                                              \
                const T *row = xp + k * inner;                                             \
                for (int64_t j = 0; j < inner; j++) {                                      \
                    T a = row[j], b = best[j];                                             \
                    if (BETTER) { best[j] = a; op[j] = (TO)k; }                            \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    }
#define ARG_ALL(T, SFX)                                   \
    ARG_FN(argmax_##SFX##_i32, T, int32_t, a > b)         \
    ARG_FN(argmax_##SFX##_i64, T, int64_t, a > b)         \
    ARG_FN(argmin_##SFX##_i32, T, int32_t, a < b)         \
    ARG_FN(argmin_##SFX##_i64, T, int64_t, a < b)
ARG_ALL(float, f32)
ARG_ALL(double, f64)
ARG_ALL(int32_t, i32)
ARG_ALL(int64_t, i64)
ARG_ALL(uint8_t, u8)

#define ARG_ROW(OP, SFX) {OP##_##SFX##_i32, OP##_##SFX##_i64}
/* [min?][slot][int64 output?] */
static const arg_fn arg_tbl[2][VG__MS_N][2] = {
    {[VG__MS_F32] = ARG_ROW(argmax, f32), [VG__MS_F64] = ARG_ROW(argmax, f64), [VG__MS_I32] = ARG_ROW(argmax, i32),
     [VG__MS_I64] = ARG_ROW(argmax, i64), [VG__MS_U8] = ARG_ROW(argmax, u8)},
    {[VG__MS_F32] = ARG_ROW(argmin, f32), [VG__MS_F64] = ARG_ROW(argmin, f64), [VG__MS_I32] = ARG_ROW(argmin, i32),
     [VG__MS_I64] = ARG_ROW(argmin, i64), [VG__MS_U8] = ARG_ROW(argmin, u8)},
};

static vg_code shape_argmax(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0), it = vg__op_input_dtype(op, 1), ot = VG_INT64;
    vg_code c = vg__math_check_dtype("input", dt, VG__M_CMP, st);
    if (c == VG_OK) c = vg__math_check_dtype("dimension", it, VG__M_INDEX, st);
    if (c != VG_OK) return c;
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_type(op, "Tidx", it);
    vg__op_set_default_attr_type(op, "output_type", VG_INT64);
    vg_op_attr_type_(op, "output_type", &ot);
    if ((c = vg__math_check_dtype("output_type", ot, VG__M_INDEX, st)) != VG_OK) return c;
    vg_shape xs = vg__op_input_shape(op, 0), out = vg_shape_unknown();
    const vg_tensor *dim = vg__op_const_input(op, 1);
    if (dim && vg_tensor_num_elements(dim) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "dimension must be a scalar");
    if (xs.ndims >= 0 && dim) {
        int64_t d = (int64_t)vg_tensor_scalar(dim);
        if (d < -xs.ndims || d >= xs.ndims || xs.ndims == 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected dimension in the range [%d, %d), but got %lld",
                                 -xs.ndims, xs.ndims, (long long)d);
        if (d < 0) d += xs.ndims;
        out.ndims = 0;
        for (int i = 0; i < xs.ndims; i++)
            if (i != d) out.dims[out.ndims++] = xs.dims[i];
    } else if (xs.ndims > 0) {
        out.ndims = xs.ndims - 1;
        for (int i = 0; i < out.ndims; i++) out.dims[i] = -1;
    }
    return vg__op_set_single_output(op, ot, out);
}

typedef struct arg_job {
    arg_fn fn;
    const char *x;
    char *o;
    int64_t n;
    size_t esz, osz;
} arg_job;

static void arg_rows_run(void *arg, int64_t b, int64_t e) { /* inner == 1: rows [b, e) */
    const arg_job *j = arg;
    j->fn(j->x + (size_t)(b * j->n) * j->esz, j->o + (size_t)b * j->osz, e - b, j->n, 1, NULL);
}

static vg_code arg_kernel(vg__kctx *ctx, int is_min) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0), *dim = vg__kctx_input(ctx, 1);
    vg_dtype dt = vg_tensor_dtype(x), ot = VG_INT64;
    vg_op_attr_type_(vg__kctx_op(ctx), "output_type", &ot);
    int slot = vg__math_slot(dt);
    arg_fn fn = slot >= 0 ? arg_tbl[is_min][slot][ot == VG_INT64] : NULL;
    if (!fn) return vg__math_check_dtype("input", dt, 0, st);
    if (vg_tensor_num_elements(dim) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "dimension must be a scalar, got %d dims", vg_tensor_ndims(dim));
    int r = vg_tensor_ndims(x);
    int64_t d = (int64_t)vg_tensor_scalar(dim);
    if (d < -r || d >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected dimension in the range [%d, %d), but got %lld", -r, r,
                             (long long)d);
    if (d < 0) d += r;
    const int64_t *xd = vg_tensor_dims(x);
    int64_t od[VG_MAX_DIMS], outer = 1, inner = 1, n = xd[d];
    int ond = 0;
    for (int i = 0; i < r; i++) {
        if (i == d) continue;
        od[ond++] = xd[i];
        if (i < d) outer *= xd[i];
        else inner *= xd[i];
    }
    if (n == 0) {
        vg_shape s = vg_tensor_shape(x);
        char buf[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Reduction axis %lld is empty in shape %s", (long long)d,
                             vg_shape_str(&s, buf, sizeof buf));
    }
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, ot, od, ond, &o);
    if (c != VG_OK || outer * inner == 0) return c;
    size_t esz = vg_dtype_size(dt);
    if (inner == 1) {
        arg_job j = {fn, vg_tensor_data(x), vg_tensor_data(o), n, esz, vg_dtype_size(ot)};
        if (outer * n < VG__MATH_PAR_MIN) arg_rows_run(&j, 0, outer);
        else vg__kctx_parallel_for(ctx, outer, n, arg_rows_run, &j);
        return VG_OK;
    }
    void *tmp = vg__malloc((size_t)inner * esz);
    if (!tmp) return VG_OOM(st, "ArgMax scratch");
    fn(vg_tensor_data(x), vg_tensor_data(o), outer, n, inner, tmp);
    vg__free(tmp);
    return VG_OK;
}

static vg_code kernel_argmax(vg__kctx *ctx) { return arg_kernel(ctx, 0); }
static vg_code kernel_argmin(vg__kctx *ctx) { return arg_kernel(ctx, 1); }

/* ------------------------------------------------------------------------ */
/* Gradients */

/* The kept-dims shape of a reduction (TF's reduced_shape: reduced dims set to 1) and
 * the Tile multiples back to the input shape (_safe_shape_div(input_shape, kept)),
 * both int32 vectors. Consts when the input shape is fully known and the axes are a
 * Const; Shape(x) * mask arithmetic when only the rank is; otherwise computed from
 * Rank/Range/Equal/Any on the axes tensor. */
static void reduction_shapes(vg_graph *g, vg_op *op, vg_output *kept, vg_output *tile) {
    vg_output x = vg_op_input(op, 0), axes = vg_op_input(op, 1);
    vg_shape sx = vg_output_shape(x);
    const vg_tensor *ct = vg__op_const_input(op, 1);
    bool red[VG_MAX_DIMS];
    if (sx.ndims >= 0 && ct && axes_mask(ct, sx.ndims, red, NULL) == VG_OK) {
        int32_t k[VG_MAX_DIMS], t[VG_MAX_DIMS], mk[VG_MAX_DIMS], mr[VG_MAX_DIMS];
        for (int i = 0; i < sx.ndims; i++) {
            k[i] = red[i] ? 1 : (int32_t)sx.dims[i];
            t[i] = red[i] ? (int32_t)sx.dims[i] : 1;
            mk[i] = !red[i];
            mr[i] = red[i];
        }
        if (vg_shape_is_fully_defined(&sx)) {
            *kept = vg_const_i32_vec(g, k, sx.ndims, "Const");
            *tile = vg_const_i32_vec(g, t, sx.ndims, "Const_1");
            return;
        }
        vg_output sh = vg_shape_op(g, x, VG_INT32, "Shape");
        vg_output ck = vg_const_i32_vec(g, mk, sx.ndims, "Const"), cr = vg_const_i32_vec(g, mr, sx.ndims, "Const_1");
        *kept = vg_add(g, vg_mul(g, sh, ck, "mul"), cr, "add");
        *tile = vg_add(g, vg_mul(g, sh, cr, "mul_1"), ck, "add_1");
        return;
    }
    /* dynamic: reduced[i] = any(i == normalized axes) */
    vg_output sh = vg_shape_op(g, x, VG_INT32, "Shape"), rank = vg_rank(g, x, "Rank");
    vg_output a = vg_output_dtype(axes) == VG_INT32 ? axes : vg_cast(g, axes, VG_INT32, "Cast");
    vg_output neg = vg_cast(g, vg_less(g, a, vg_const_i32(g, 0, "Const"), "Less"), VG_INT32, "Cast_1");
    a = vg_add(g, a, vg_mul(g, neg, rank, "mul"), "add");
    vg_output arow = vg_reshape_c(g, a, (const int64_t[]){1, -1}, 2, "Reshape");
    vg_output rng = vg_range(g, vg_const_i32(g, 0, "start"), rank, vg_const_i32(g, 1, "delta"), "range");
    vg_output rcol = vg_reshape_c(g, rng, (const int64_t[]){-1, 1}, 2, "Reshape_1");
    vg_output any = vg_any(g, vg_equal(g, rcol, arow, "Equal"), vg_const_i32(g, 1, "Const_1"), false, "Any");
    vg_output mr = vg_cast(g, any, VG_INT32, "Cast_2");
    vg_output mk = vg_sub(g, vg_const_i32(g, 1, "Const_2"), mr, "sub");
    *kept = vg_add(g, vg_mul(g, sh, mk, "mul_1"), mr, "add_1");
    *tile = vg_add(g, vg_mul(g, sh, mr, "mul_2"), mk, "add_2");
}

/* _SumGrad: tile(reshape(grad, kept_dims_shape), input_shape // kept_dims_shape). */
static vg_output sum_grad(vg_graph *g, vg_op *op, vg_output dy) {
    vg_output kept, tile;
    reduction_shapes(g, op, &kept, &tile);
    return vg_tile(g, vg_reshape(g, dy, kept, "Reshape"), tile, "Tile");
}

static vg_code grad_sum(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = sum_grad(g, op, dy[0]);
    return vg_graph_status(g, NULL);
}

/* _MeanGrad: sum_grad / (input size / output size). */
static vg_code grad_mean(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output sg = sum_grad(g, op, dy[0]);
    vg_output x = vg_op_input(op, 0), y = vg_out(op, 0);
    vg_shape sx = vg_output_shape(x), sy = vg_output_shape(y);
    vg_dtype dt = vg_output_dtype(x);
    vg_output factor;
    if (vg_shape_is_fully_defined(&sx) && vg_shape_is_fully_defined(&sy)) {
        int64_t nx = vg_shape_num_elements(&sx), ny = vg_shape_num_elements(&sy);
        factor = vg_const_fill(g, dt, NULL, 0, (double)(nx / (ny > 1 ? ny : 1)), "Const");
    } else {
        const int32_t zero = 0;
        vg_output ax = vg_const_i32_vec(g, &zero, 1, "Const");
        vg_output px = vg_prod(g, vg_shape_op(g, x, VG_INT32, "Shape"), ax, false, "Prod");
        vg_output py = vg_prod(g, vg_shape_op(g, y, VG_INT32, "Shape_1"), ax, false, "Prod_1");
        py = vg_maximum(g, py, vg_const_i32(g, 1, "Maximum_y"), "Maximum");
        factor = vg_div(g, vg_cast(g, px, dt, "Cast"), vg_cast(g, py, dt, "Cast_1"), "truediv");
    }
    dx[0] = vg_div(g, sg, factor, "truediv_1");
    return vg_graph_status(g, NULL);
}

/* _MinOrMaxGrad: the gradient is split evenly between the selected elements. */
static vg_code grad_min_max(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), axes = vg_op_input(op, 1), kept, tile;
    reduction_shapes(g, op, &kept, &tile);
    vg_output y = vg_reshape(g, vg_out(op, 0), kept, "Reshape");
    vg_output gr = vg_reshape(g, dy[0], kept, "Reshape_1");
    vg_output ind = vg_cast(g, vg_equal(g, y, x, "Equal"), vg_output_dtype(x), "Cast");
    vg_output num = vg_reshape(g, vg_sum(g, ind, axes, false, "Sum"), kept, "Reshape_2");
    dx[0] = vg_mul(g, vg_div(g, ind, num, "truediv"), gr, "mul");
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Builders */

static vg_output build_reduce(vg_graph *g, const char *type, vg_output x, vg_output axes, bool keep,
                              const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){x, axes}, 2);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_bool(b, "keep_dims", keep);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_sum(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name) {
    return build_reduce(g, "Sum", x, axes, keep_dims, name);
}
vg_output vg_mean(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name) {
    return build_reduce(g, "Mean", x, axes, keep_dims, name);
}
vg_output vg_max(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name) {
    return build_reduce(g, "Max", x, axes, keep_dims, name);
}
vg_output vg_min(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name) {
    return build_reduce(g, "Min", x, axes, keep_dims, name);
}
vg_output vg_prod(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name) {
    return build_reduce(g, "Prod", x, axes, keep_dims, name);
}
vg_output vg_all(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name) {
    return build_reduce(g, "All", x, axes, keep_dims, name);
}
vg_output vg_any(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name) {
    return build_reduce(g, "Any", x, axes, keep_dims, name);
}

/* TF's _ReductionDims: the axes as an int32 Const, or for axis=None (naxes < 0)
 * range(rank) as a Const when the rank is known, else Range(0, Rank(x), 1). */
static vg_output reduction_dims(vg_graph *g, vg_output x, const int32_t *axes, int naxes) {
    if (!x.op) return x;
    if (naxes >= 0) return vg_const_i32_vec(g, axes, naxes, "Const");
    vg_shape s = vg_output_shape(x);
    if (s.ndims >= 0) {
        int32_t r[VG_MAX_DIMS];
        for (int i = 0; i < s.ndims; i++) r[i] = i;
        return reduction_dims(g, x, r, s.ndims);
    }
    return vg_range(g, vg_const_i32(g, 0, "start"), vg_rank(g, x, "Rank"), vg_const_i32(g, 1, "delta"),
                    "range");
}

#define REDUCE_BUILDER(fn, type)                                                                           \
    vg_output fn(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name) { \
        return build_reduce(g, type, x, reduction_dims(g, x, axes, naxes), keep_dims, name);               \
    }
REDUCE_BUILDER(vg_reduce_sum, "Sum")
REDUCE_BUILDER(vg_reduce_mean, "Mean")
REDUCE_BUILDER(vg_reduce_max, "Max")
REDUCE_BUILDER(vg_reduce_min, "Min")
REDUCE_BUILDER(vg_reduce_all, "All")
REDUCE_BUILDER(vg_reduce_any, "Any")

static vg_output build_arg(vg_graph *g, const char *type, vg_output x, int axis, vg_dtype ot, const char *name) {
    vg_output dim = vg_const_i32(g, axis, "dimension");
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){x, dim}, 2);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_type(b, "output_type", ot);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_argmax(vg_graph *g, vg_output x, int axis, vg_dtype output_type, const char *name) {
    return build_arg(g, "ArgMax", x, axis, output_type, name);
}
vg_output vg_argmin(vg_graph *g, vg_output x, int axis, vg_dtype output_type, const char *name) {
    return build_arg(g, "ArgMin", x, axis, output_type, name);
}

/* ------------------------------------------------------------------------ */
/* The table */

#define ND VG__OP_NOT_DIFFERENTIABLE
const vg__op_def vg__ops_math_reduce[] = {
    {"Sum", 2, 2, 0, 0, shape_reduce, kernel_sum, grad_sum},
    {"Mean", 2, 2, 0, 0, shape_reduce, kernel_mean, grad_mean},
    {"Max", 2, 2, 0, 0, shape_reduce, kernel_max, grad_min_max},
    {"Min", 2, 2, 0, 0, shape_reduce, kernel_min, grad_min_max},
    {"Prod", 2, 2, 0, 0, shape_reduce, kernel_prod, NULL},
    {"All", 2, 2, ND, 0, shape_reduce, kernel_all, NULL},
    {"Any", 2, 2, ND, 0, shape_reduce, kernel_any, NULL},
    {"ArgMax", 2, 2, ND, 0, shape_argmax, kernel_argmax, NULL},
    {"ArgMin", 2, 2, ND, 0, shape_argmax, kernel_argmin, NULL},
    {0},
};
