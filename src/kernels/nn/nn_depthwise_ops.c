/*
 * nn_depthwise_ops.c - DepthwiseConv2dNative and its backprops (TF 1.15
 * depthwise_conv_op.cc / depthwise_conv_grad_op.cc semantics), CPU, NHWC, float and
 * double, dilations 1:
 *   input [N,H,W,C], filter [KH,KW,C,M] -> output [N,OH,OW,C*M],
 *   out[n,oy,ox,c*M+m] = sum_{ky,kx} in[n, oy*sh+ky-pt, ox*sw+kx-pl, c] * f[ky,kx,c,m]
 * with TF's SAME / VALID window arithmetic. Gradient (nn_grad.py
 * _DepthwiseConv2dNativeGrad): DepthwiseConv2dNativeBackpropInput(Shape(input), filter,
 * dy) and DepthwiseConv2dNativeBackpropFilter(input, Shape(filter), dy).
 */
#include "core/bf16_round.h"
#include "kernels/ew_internal.h"
#include "kernels/nn/nn_internal.h"
#include "kernels/simd.h"

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops that need no epilogue ("very cheap" model): the
 * channel loops here need the dynamic cost model to use SIMD. */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif
#include "vigil/nn_ext.h"

typedef struct dw_attrs {
    int64_t sh, sw;
    bool same;
} dw_attrs;

static vg_code get_attrs(const vg_op *op, dw_attrs *a, vg_status *st) {
    const int64_t *v;
    int n;
    if (!vg_op_attr_int_list(op, "strides", &v, &n) || n != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: strides must have 4 elements", vg_op_type(op));
    if (v[0] != 1 || v[3] != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Current implementation does not yet support strides in the batch and depth dimensions.");
    if (v[1] < 1 || v[2] < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: strides must be positive", vg_op_type(op));
    a->sh = v[1];
    a->sw = v[2];
    const char *s;
    size_t len;
    if (!vg_op_attr_string(op, "padding", &s, &len)) return vg_status_set(st, VG_INVALID_ARGUMENT, "missing attr 'padding'");
    if (len == 4 && memcmp(s, "SAME", 4) == 0) a->same = true;
    else if (len == 5 && memcmp(s, "VALID", 5) == 0) a->same = false;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "padding must be SAME or VALID, got '%.*s'", (int)len, s);
    if (vg_op_attr_string(op, "data_format", &s, &len) && !(len == 4 && memcmp(s, "NHWC", 4) == 0))
        return vg_status_set(st, VG_UNIMPLEMENTED, "%s: data_format %.*s is not supported (CPU: NHWC only)",
                             vg_op_type(op), (int)len, s);
    if (vg_op_attr_int_list(op, "dilations", &v, &n))
        for (int i = 0; i < n; i++)
            if (v[i] != 1) return vg_status_set(st, VG_UNIMPLEMENTED, "%s: dilations other than 1 are not supported", vg_op_type(op));
    return VG_OK;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, bool same, int64_t *pad) {
    *pad = 0;
    if (in < 0 || k < 0) return -1;
    if (same) {
        int64_t o = (in + s - 1) / s, total = (o - 1) * s + k - in;
        *pad = total > 0 ? total / 2 : 0;
        return o;
    }
    return in >= k ? (in - k + s) / s : -2;
}

/* Shape: which inputs are the input / filter shapes (given as tensors for backprops). */
typedef enum { FWD, BP_INPUT, BP_FILTER } dw_kind;

static bool shape_of_input(vg_op *op, int i, int64_t d[4]) {
    const vg_tensor *t = vg__op_const_input(op, i);
    if (t) {
        if (vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != 4) return false;
        for (int k = 0; k < 4; k++)
            d[k] = vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[k] : ((const int64_t *)vg_tensor_data(t))[k];
        return true;
    }
    vg_output in = vg_op_input(op, i);
    if (in.op && strcmp(vg_op_type(in.op), "Shape") == 0) {
        vg_shape s = vg_output_shape(vg_op_input(in.op, 0));
        if (s.ndims == 4) {
            memcpy(d, s.dims, sizeof(int64_t) * 4);
            return true;
        }
    }
    for (int k = 0; k < 4; k++) d[k] = -1;
    return true;
}

static vg_code dw_shape(vg_op *op, dw_kind kind, vg_status *st) {
    dw_attrs a;
    if (get_attrs(op, &a, st)) return st->code;
    int ri = kind == BP_FILTER ? 0 : kind == BP_INPUT ? 1 : 0; /* a real-valued input */
    vg_dtype dt = vg__op_input_dtype(op, kind == FWD ? 0 : ri);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: dtype %s is not supported (float double)", vg_op_type(op),
                             vg_dtype_name(dt));
    int64_t xd[4], fd[4];
    vg_shape s;
    if (kind == BP_INPUT) {
        if (!shape_of_input(op, 0, xd)) return vg_status_set(st, VG_INVALID_ARGUMENT, "input_sizes must be a 4-element vector");
    } else {
        s = vg__op_input_shape(op, 0);
        if (s.ndims >= 0 && s.ndims != 4)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input must be 4-dimensional, got rank %d", vg_op_type(op), s.ndims);
        for (int k = 0; k < 4; k++) xd[k] = s.ndims == 4 ? s.dims[k] : -1;
    }
    if (kind == BP_FILTER) {
        if (!shape_of_input(op, 1, fd)) return vg_status_set(st, VG_INVALID_ARGUMENT, "filter_sizes must be a 4-element vector");
    } else {
        s = vg__op_input_shape(op, 1);
        if (s.ndims >= 0 && s.ndims != 4)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: filter must be 4-dimensional, got rank %d", vg_op_type(op), s.ndims);
        for (int k = 0; k < 4; k++) fd[k] = s.ndims == 4 ? s.dims[k] : -1;
    }
    if (xd[3] >= 0 && fd[2] >= 0 && xd[3] != fd[2])
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                             (long long)xd[3], (long long)fd[2]);
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg__op_set_num_outputs(op, 1);
    if (kind == FWD) {
        int64_t p, o[4] = {xd[0], out_size(xd[1], fd[0], a.sh, a.same, &p), out_size(xd[2], fd[1], a.sw, a.same, &p),
                           fd[2] >= 0 && fd[3] >= 0 ? fd[2] * fd[3] : -1};
        if (o[1] == -2 || o[2] == -2)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the filter is larger than the input with VALID padding",
                                 vg_op_type(op));
        vg__op_set_output(op, 0, dt, vg_shape_make(o, 4));
    } else {
        vg__op_set_output(op, 0, dt, vg_shape_make(kind == BP_INPUT ? xd : fd, 4));
    }
    return VG_OK;
}
static vg_code shape_dw(vg_op *op, vg_status *st) { return dw_shape(op, FWD, st); }
static vg_code shape_dw_bi(vg_op *op, vg_status *st) { return dw_shape(op, BP_INPUT, st); }
static vg_code shape_dw_bf(vg_op *op, vg_status *st) { return dw_shape(op, BP_FILTER, st); }

typedef struct geom {
    int64_t n, h, w, c, kh, kw, m, oh, ow, pt, pl;
} geom;

static vg_code make_geom(vg__kctx *ctx, const dw_attrs *a, const int64_t xd[4], const int64_t fd[4], geom *g) {
    vg_status *st = vg__kctx_status(ctx);
    if (xd[3] != fd[2])
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                             (long long)xd[3], (long long)fd[2]);
    for (int k = 0; k < 4; k++)
        if (xd[k] < 0 || fd[k] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "negative dimension");
    g->n = xd[0], g->h = xd[1], g->w = xd[2], g->c = xd[3];
    g->kh = fd[0], g->kw = fd[1], g->m = fd[3];
    g->oh = out_size(g->h, g->kh, a->sh, a->same, &g->pt);
    g->ow = out_size(g->w, g->kw, a->sw, a->same, &g->pl);
    if (g->oh < 0 || g->ow < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "the filter is larger than the input with VALID padding");
    return VG_OK;
}

/* The three kernels over typed pointers, the channel loop innermost (contiguous in
 * NHWC and in the filter's [KH,KW,C,M] layout, so the compiler vectorizes it), split
 * over the intra-op threads by output rows (forward), input rows (input gradient, a
 * gather so that rows are disjoint) or pieces of output rows with one partial filter
 * gradient per piece, added in piece order (results do not depend on which thread
 * ran which piece). Before, every multiply-add went through vg_tensor_data /
 * vg_tensor_dtype calls and one thread (issue 30: 42% of a MobileNet step). */
typedef struct dw_job {
    const geom *g;
    const dw_attrs *a;
    const void *x, *f, *dy;
    void *o;
    void *partials; /* filter gradient: npieces * KH*KW*C*M */
    int64_t npieces, rows_per_piece;
    bool rnd;       /* painted by the mixed-precision rewrite (exec/amp.c), float32: each
                       output row rounded to bfloat16 once written, while in cache */
} dw_job;

static inline void dw_rrow_f32(float *row, int64_t n, bool on) {
    if (on) vg__bf16_round_n(row, row, (size_t)n);
}
static inline void dw_rrow_f64(double *row, int64_t n, bool on) { (void)row, (void)n, (void)on; }

#define DW_KERNELS(T, SFX)                                                                                         \
    VG_SIMD_CLONES static void dw_fwd_##SFX(void *arg, int64_t r0, int64_t r1) {                                                  \
        const dw_job *j = arg;                                                                                     \
        const geom *g = j->g;                                                                                      \
        const T *x = j->x, *f = j->f;                                                                              \
        T *o = j->o;                                                                                               \
        const int64_t C = g->c, M = g->m, CM = C * M;                                                             \
        for (int64_t r = r0; r < r1; r++) {                                                                        \
            int64_t n = r / g->oh, oy = r % g->oh;                                                                 \
            T *orow = o + (n * g->oh + oy) * g->ow * CM;                                                           \
            memset(orow, 0, sizeof(T) * (size_t)(g->ow * CM));                                                    \
            for (int64_t ky = 0; ky < g->kh; ky++) {                                                               \
                int64_t iy = oy * j->a->sh + ky - g->pt;                                                           \
                if (iy < 0 || iy >= g->h) continue;                                                                \
                const T *xrow = x + (n * g->h + iy) * g->w * C;                                                    \
                for (int64_t kx = 0; kx < g->kw; kx++) {                                                           \
                    const T *restrict fk = f + (ky * g->kw + kx) * CM;                                             \
                    for (int64_t ox = 0; ox < g->ow; ox++) {                                                       \
                        int64_t ix = ox * j->a->sw + kx - g->pl;                                                   \
                        if (ix < 0 || ix >= g->w) continue;                                                        \
                        const T *restrict xp = xrow + ix * C;                                                      \
                        T *restrict op = orow + ox * CM;                                                           \
                        if (M == 1)                                                                                \
                            for (int64_t c = 0; c < C; c++) op[c] += xp[c] * fk[c];                                \
                        else                                                                                       \
                            for (int64_t c = 0; c < C; c++)                                                        \
                                for (int64_t m = 0; m < M; m++) op[c * M + m] += xp[c] * fk[c * M + m];            \
                    }                                                                                              \
                }                                                                                                  \
            }                                                                                                      \
            dw_rrow_##SFX(orow, g->ow * CM, j->rnd);                                                               \
        }                                                                                                          \
    }                                                                                                              \
    VG_SIMD_CLONES static void dw_bin_##SFX(void *arg, int64_t r0, int64_t r1) {                                                  \
        const dw_job *j = arg;                                                                                     \
        const geom *g = j->g;                                                                                      \
        const T *dy = j->dy, *f = j->f;                                                                            \
        T *dx = j->o;                                                                                              \
        const int64_t C = g->c, M = g->m, CM = C * M, sh = j->a->sh;                                              \
        for (int64_t r = r0; r < r1; r++) {                                                                        \
            int64_t n = r / g->h, iy = r % g->h;                                                                   \
            T *dxrow = dx + (n * g->h + iy) * g->w * C;                                                            \
            memset(dxrow, 0, sizeof(T) * (size_t)(g->w * C));                                                     \
            for (int64_t ky = 0; ky < g->kh; ky++) {                                                               \
                int64_t t = iy + g->pt - ky;                                                                       \
                if (t < 0 || t % sh) continue;                                                                     \
                int64_t oy = t / sh;                                                                               \
                if (oy >= g->oh) continue;                                                                         \
                const T *dyrow = dy + (n * g->oh + oy) * g->ow * CM;                                               \
                for (int64_t kx = 0; kx < g->kw; kx++) {                                                           \
                    const T *restrict fk = f + (ky * g->kw + kx) * CM;                                             \
                    for (int64_t ox = 0; ox < g->ow; ox++) {                                                       \
                        int64_t ix = ox * j->a->sw + kx - g->pl;                                                   \
                        if (ix < 0 || ix >= g->w) continue;                                                        \
                        T *restrict dxp = dxrow + ix * C;                                                          \
                        const T *restrict dyp = dyrow + ox * CM;                                                   \
                        if (M == 1)                                                                                \
                            for (int64_t c = 0; c < C; c++) dxp[c] += dyp[c] * fk[c];                              \
                        else                                                                                       \
                            for (int64_t c = 0; c < C; c++) {                                                      \
                                T acc = 0;                                                                         \
                                for (int64_t m = 0; m < M; m++) acc += dyp[c * M + m] * fk[c * M + m];             \
                                dxp[c] += acc;                                                                     \
                            }                                                                                      \
                    }                                                                                              \
                }                                                                                                  \
            }                                                                                                      \
            dw_rrow_##SFX(dxrow, g->w * C, j->rnd);                                                                \
        }                                                                                                          \
    }                                                                                                              \
    VG_SIMD_CLONES static void dw_bfil_##SFX(void *arg, int64_t p0, int64_t p1) {                                                 \
        const dw_job *j = arg;                                                                                     \
        const geom *g = j->g;                                                                                      \
        const T *dy = j->dy, *x = j->x;                                                                            \
        const int64_t C = g->c, M = g->m, CM = C * M, fsz = g->kh * g->kw * CM, rows = g->n * g->oh;              \
        for (int64_t piece = p0; piece < p1; piece++) {                                                            \
            T *df = (T *)j->partials + piece * fsz;                                                                \
            memset(df, 0, sizeof(T) * (size_t)fsz);                                                               \
            int64_t r1 = (piece + 1) * j->rows_per_piece;                                                          \
            if (r1 > rows) r1 = rows;                                                                              \
            for (int64_t r = piece * j->rows_per_piece; r < r1; r++) {                                             \
                int64_t n = r / g->oh, oy = r % g->oh;                                                             \
                const T *dyrow = dy + (n * g->oh + oy) * g->ow * CM;                                               \
                for (int64_t ky = 0; ky < g->kh; ky++) {                                                           \
                    int64_t iy = oy * j->a->sh + ky - g->pt;                                                       \
                    if (iy < 0 || iy >= g->h) continue;                                                            \
                    const T *xrow = x + (n * g->h + iy) * g->w * C;                                                \
                    for (int64_t kx = 0; kx < g->kw; kx++) {                                                       \
                        T *restrict dfk = df + (ky * g->kw + kx) * CM;                                             \
                        for (int64_t ox = 0; ox < g->ow; ox++) {                                                   \
                            int64_t ix = ox * j->a->sw + kx - g->pl;                                               \
                            if (ix < 0 || ix >= g->w) continue;                                                    \
                            const T *restrict xp = xrow + ix * C;                                                  \
                            const T *restrict dyp = dyrow + ox * CM;                                               \
                            if (M == 1)                                                                            \
                                for (int64_t c = 0; c < C; c++) dfk[c] += dyp[c] * xp[c];                          \
                            else                                                                                   \
                                for (int64_t c = 0; c < C; c++)                                                    \
                                    for (int64_t m = 0; m < M; m++) dfk[c * M + m] += dyp[c * M + m] * xp[c];      \
                        }                                                                                          \
                    }                                                                                              \
                }                                                                                                  \
            }                                                                                                      \
        }                                                                                                          \
    }                                                                                                              \
    static void dw_sum_##SFX(const dw_job *j, T *out, int64_t fsz) {                                               \
        const T *pp = j->partials;                                                                                 \
        memcpy(out, pp, sizeof(T) * (size_t)fsz);                                                                  \
        for (int64_t piece = 1; piece < j->npieces; piece++)                                                       \
            for (int64_t i = 0; i < fsz; i++) out[i] += pp[piece * fsz + i];                                       \
        dw_rrow_##SFX(out, fsz, j->rnd);                                                                           \
    }

DW_KERNELS(float, f32)
DW_KERNELS(double, f64)

static int64_t a_stride_area(const dw_attrs *a) { return a->sh * a->sw; }

/* Runs kind over the job (o allocated); RESOURCE_EXHAUSTED for the partials. */
static vg_code dw_exec(vg__kctx *ctx, dw_kind kind, dw_job *j, vg_dtype dt) {
    const geom *g = j->g;
    bool f32 = dt == VG_FLOAT;
    int64_t CM = g->c * g->m, taps = g->kh * g->kw;
    if (kind == FWD) {
        if (g->n * g->oh == 0) return VG_OK;
        vg__kctx_parallel_for(ctx, g->n * g->oh, 2 * g->ow * CM * taps, f32 ? dw_fwd_f32 : dw_fwd_f64, j);
        return VG_OK;
    }
    if (kind == BP_INPUT) {
        if (g->n * g->h == 0) return VG_OK;
        int64_t per_row = g->w * CM * taps / (a_stride_area(j->a) ? a_stride_area(j->a) : 1);
        vg__kctx_parallel_for(ctx, g->n * g->h, 2 * (per_row > 0 ? per_row : 1), f32 ? dw_bin_f32 : dw_bin_f64, j);
        return VG_OK;
    }
    int64_t rows = g->n * g->oh, fsz = taps * CM;
    size_t esz = f32 ? sizeof(float) : sizeof(double);
    if (rows == 0 || fsz == 0) {
        memset(j->o, 0, esz * (size_t)fsz);
        return VG_OK;
    }
    /* pieces: fixed by the shape alone (about 64k multiply-adds each, at most 32), never
     * by the thread count, so the partials are summed in the same order and the result
     * has the same bits at any number of threads */
    int64_t per_row = g->ow * CM * taps, npieces = per_row > 0 ? rows * per_row / 65536 : 1;
    if (npieces > 32) npieces = 32;
    if (npieces < 1) npieces = 1;
    if (npieces > rows) npieces = rows;
    j->rows_per_piece = (rows + npieces - 1) / npieces;
    j->npieces = (rows + j->rows_per_piece - 1) / j->rows_per_piece;
    j->partials = vg__malloc(esz * (size_t)(j->npieces * fsz));
    if (!j->partials) return vg_status_set(vg__kctx_status(ctx), VG_RESOURCE_EXHAUSTED, "out of memory in %s",
                                           vg_op_type(vg__kctx_op(ctx)));
    vg__kctx_parallel_for(ctx, j->npieces, 2 * j->rows_per_piece * g->ow * CM * taps, f32 ? dw_bfil_f32 : dw_bfil_f64,
                          j);
    if (f32) dw_sum_f32(j, j->o, fsz);
    else dw_sum_f64(j, j->o, fsz);
    vg__free(j->partials);
    return VG_OK;
}

/* The output oneDNN wrote, rounded to bfloat16 in blocks over the intra-op threads. */
#define DW_RBLOCK 16384
typedef struct dw_rjob {
    float *o;
    int64_t n;
} dw_rjob;
static void dw_round_blocks(void *arg, int64_t b0, int64_t b1) {
    const dw_rjob *r = arg;
    for (int64_t b = b0; b < b1; b++) {
        int64_t e = (b + 1) * DW_RBLOCK < r->n ? (b + 1) * DW_RBLOCK : r->n;
        vg__bf16_round_n(r->o + b * DW_RBLOCK, r->o + b * DW_RBLOCK, (size_t)(e - b * DW_RBLOCK));
    }
}
static void dw_round_out(vg__kctx *ctx, float *o, int64_t n) {
    if (n <= 0) return;
    dw_rjob r = {o, n};
    vg__kctx_parallel_for(ctx, (n + DW_RBLOCK - 1) / DW_RBLOCK, 2 * DW_RBLOCK, dw_round_blocks, &r);
}

static vg_code read_sizes(vg__kctx *ctx, int i, int64_t d[4]) {
    const vg_tensor *t = vg__kctx_input(ctx, i);
    if (vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != 4 ||
        (vg_tensor_dtype(t) != VG_INT32 && vg_tensor_dtype(t) != VG_INT64))
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "sizes must be a 4-element int32/int64 vector");
    for (int k = 0; k < 4; k++)
        d[k] = vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[k] : ((const int64_t *)vg_tensor_data(t))[k];
    return VG_OK;
}

static vg_code check4(vg__kctx *ctx, const vg_tensor *t, const char *what) {
    if (vg_tensor_ndims(t) != 4)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s must be 4-dimensional", what);
    return VG_OK;
}

static vg_code dw_run(vg__kctx *ctx, dw_kind kind) {
    dw_attrs a;
    vg_status *st = vg__kctx_status(ctx);
    if (get_attrs(vg__kctx_op(ctx), &a, st)) return st->code;
    int64_t xd[4], fd[4];
    const vg_tensor *x = NULL, *f = NULL, *dy = NULL;
    vg_code c;
    if (kind == FWD) {
        x = vg__kctx_input(ctx, 0), f = vg__kctx_input(ctx, 1);
        if ((c = check4(ctx, x, "input")) || (c = check4(ctx, f, "filter"))) return c;
        memcpy(xd, vg_tensor_dims(x), sizeof xd);
        memcpy(fd, vg_tensor_dims(f), sizeof fd);
    } else if (kind == BP_INPUT) {
        if ((c = read_sizes(ctx, 0, xd))) return c;
        f = vg__kctx_input(ctx, 1), dy = vg__kctx_input(ctx, 2);
        if ((c = check4(ctx, f, "filter")) || (c = check4(ctx, dy, "out_backprop"))) return c;
        memcpy(fd, vg_tensor_dims(f), sizeof fd);
    } else {
        x = vg__kctx_input(ctx, 0), dy = vg__kctx_input(ctx, 2);
        if ((c = check4(ctx, x, "input")) || (c = check4(ctx, dy, "out_backprop"))) return c;
        if ((c = read_sizes(ctx, 1, fd))) return c;
        memcpy(xd, vg_tensor_dims(x), sizeof xd);
    }
    geom g = {0}; /* filled by the geometry check */
    if ((c = make_geom(ctx, &a, xd, fd, &g))) return c;
    if (dy) {
        const int64_t *dd = vg_tensor_dims(dy);
        if (dd[0] != g.n || dd[1] != g.oh || dd[2] != g.ow || dd[3] != g.c * g.m)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "out_backprop has shape [%lld,%lld,%lld,%lld], expected [%lld,%lld,%lld,%lld]",
                                 (long long)dd[0], (long long)dd[1], (long long)dd[2], (long long)dd[3], (long long)g.n,
                                 (long long)g.oh, (long long)g.ow, (long long)(g.c * g.m));
    }
    vg_dtype dt = vg_tensor_dtype(f ? f : x);
    if ((x && vg_tensor_dtype(x) != dt) || (dy && vg_tensor_dtype(dy) != dt) || (dt != VG_FLOAT && dt != VG_DOUBLE))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input, filter and gradient must be all float32 or all float64",
                             vg_op_type(vg__kctx_op(ctx)));
    int64_t od[4] = {g.n, g.oh, g.ow, g.c * g.m};
    vg_tensor *o;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, kind == FWD ? od : kind == BP_INPUT ? xd : fd, 4, &o))) return c;
    /* painted (exec/amp.c): x, filter and dy hold bfloat16 values (the executor rounded
     * those from unpainted producers), so the float32 products are exact and the sums
     * run in float32 as oneDNN's bfloat16 depthwise kernels do; the result is rounded
     * here (the executor's own rounding pass skips this op) */
    bool rnd = dt == VG_FLOAT && vg__kctx_amp(ctx);
    dw_job j = {&g, &a, x ? vg_tensor_data(x) : NULL, f ? vg_tensor_data(f) : NULL, dy ? vg_tensor_data(dy) : NULL,
                vg_tensor_data(o), NULL, 0, 0, rnd};
    if (dt == VG_FLOAT) { /* oneDNN's depthwise kernels where it has them (issue 30) */
        vg__dw_geom dg = {g.n, g.h, g.w, g.c, g.kh, g.kw, g.m, a.sh, a.sw, g.oh, g.ow, g.pt, g.pl};
        bool done = false;
        if ((c = vg__conv_depthwise_dnnl(ctx, kind == FWD ? 0 : kind == BP_INPUT ? 1 : 2, &dg, j.x, j.f, j.dy, j.o,
                                         &done)))
            return c;
        if (done) {
            if (rnd) dw_round_out(ctx, vg_tensor_data(o), vg_tensor_num_elements(o));
            return VG_OK;
        }
    }
    return dw_exec(ctx, kind, &j, dt);
}
static vg_code kernel_dw(vg__kctx *ctx) { return dw_run(ctx, FWD); }
static vg_code kernel_dw_bi(vg__kctx *ctx) { return dw_run(ctx, BP_INPUT); }
static vg_code kernel_dw_bf(vg__kctx *ctx) { return dw_run(ctx, BP_FILTER); }

static vg_op *build(vg_graph *g, const char *type, vg_output a, vg_output b, vg_output c, bool three,
                    const int64_t strides[4], const char *padding, const char *name) {
    vg_op_builder *bd = vg_op_builder_new(g, type, name ? name : type);
    if (!bd) return NULL;
    vg_op_builder_add_input(bd, a);
    vg_op_builder_add_input(bd, b);
    if (three) vg_op_builder_add_input(bd, c);
    vg_op_builder_set_attr_int_list(bd, "strides", strides, 4);
    vg_op_builder_set_attr_string(bd, "padding", padding ? padding : "", padding ? strlen(padding) : 0);
    vg_op_builder_set_attr_string(bd, "data_format", "NHWC", 4);
    int64_t ones[4] = {1, 1, 1, 1};
    vg_op_builder_set_attr_int_list(bd, "dilations", ones, 4);
    return vg_op_builder_finish(bd);
}

static void strides_padding(const vg_op *op, int64_t s[4], const char **pad) {
    const int64_t *v;
    int n;
    for (int i = 0; i < 4; i++) s[i] = 1;
    if (vg_op_attr_int_list(op, "strides", &v, &n) && n == 4) memcpy(s, v, sizeof(int64_t) * 4);
    const char *p;
    size_t len;
    *pad = vg_op_attr_string(op, "padding", &p, &len) && len == 4 ? "SAME" : "VALID";
}

static vg_code grad_dw(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t s[4];
    const char *pad;
    strides_padding(op, s, &pad);
    vg_output x = vg_op_input(op, 0), f = vg_op_input(op, 1);
    dx[0] = vg_out(build(g, "DepthwiseConv2dNativeBackpropInput", vg_shape_op(g, x, VG_INT32, "Shape"), f, dy[0], true,
                         s, pad, NULL), 0);
    dx[1] = vg_out(build(g, "DepthwiseConv2dNativeBackpropFilter", x, vg_shape_op(g, f, VG_INT32, "Shape_1"), dy[0], true,
                         s, pad, NULL), 0);
    return vg_graph_status(g, NULL);
}

vg_output vg_depthwise_conv2d_native(vg_graph *g, vg_output x, vg_output filter, const int64_t strides[4],
                                     const char *padding, const char *name) {
    return vg_out(build(g, "DepthwiseConv2dNative", x, filter, x, false, strides, padding, name), 0);
}

const vg__op_def vg__ops_nn_depthwise[] = {
    {"DepthwiseConv2dNative", 2, 2, 0, 0, shape_dw, kernel_dw, grad_dw},
    {"DepthwiseConv2dNativeBackpropInput", 3, 3, 0, 0, shape_dw_bi, kernel_dw_bi, NULL},
    {"DepthwiseConv2dNativeBackpropFilter", 3, 3, 0, 0, shape_dw_bf, kernel_dw_bf, NULL},
    {0},
};
