/*
 * conv_ops.c - the convolution half of the nn op family (NHWC, filters HWIO):
 * Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, MaxPoolGrad, AvgPool,
 * AvgPoolGrad. Shape functions, float32/float64 kernels, gradients (TF 1.15's
 * nn_grad.py) and builders; the table is vg__ops_conv.
 *
 * Convolutions are im2col + GEMM: the batch is cut into row chunks (a row is one
 * output pixel) small enough that the im2col buffer stays in cache, and the chunks
 * are spread over the intra-op threads, each thread with its own buffer.
 *   forward:        y[rows, co]   = col(x)[rows, kd] * f[kd, co]
 *   backprop input: dcol[rows, kd] = dy[rows, co] * f^T, then col2im (scatter-add)
 *   backprop filter: df[kd, co]  = sum over chunks col(x)^T * dy (per-thread partials)
 * with kd = kh * kw * ci. Padding follows TF: SAME gives out = ceil(in / stride) and
 * pad_before = pad_total / 2. Faster paths are tried first (conv_exec): Winograd
 * F(2x2,5x5) for float32 5x5 stride-1 convolutions (conv_winograd.c), oneDNN's
 * primitives, the direct AVX-512 / AVX2 kernels.
 */
#include "kernels/nn/nn_internal.h"
#include "kernels/backend/dnnl_backend.h"
#include "core/bf16_round.h"
#include "kernels/nn/conv_winograd.h"
#include "kernels/simd.h"
#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>

#if defined(__GNUC__) && !defined(__clang__)
/* See nn_ops.c: the copy/max loops need GCC's dynamic vectorizer cost model. */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* Target size of one im2col chunk buffer (per thread): about the L2 size. Measured on
 * the CNN benchmark's convolutions (5x5, 1->32 and 32->64 channels): 1 MiB is as good
 * as anything from 256 KiB to 2 MiB within the noise, smaller chunks pay more BLAS
 * packing per row and larger ones spill. */
#define CONV_COL_BYTES (1024 * 1024)
/* A convolution uses another thread only for this many flops or more per thread. */
#define CONV_MIN_FLOPS_PER_UNIT 4.0e6

/* Units of whole images for a batch of n taking flops in all: one per thread, at least
 * CONV_MIN_FLOPS_PER_UNIT each, at most n, at least 1. */
static int64_t image_units(vg__kctx *ctx, double flops, int64_t n) {
    int64_t units = vg__kctx_num_threads(ctx);
    if ((double)units > flops / CONV_MIN_FLOPS_PER_UNIT) units = (int64_t)(flops / CONV_MIN_FLOPS_PER_UNIT);
    if (units > n) units = n;
    return units < 1 ? 1 : units;
}

static size_t real_size(vg_dtype dt) { return dt == VG_DOUBLE ? sizeof(double) : sizeof(float); }

/* ------------------------------------------------------------------------ */
/* Attributes and window arithmetic */

typedef struct win_attrs {
    int64_t ksize[4];   /* pools only */
    int64_t strides[4];
    bool same;          /* padding SAME (else VALID) */
} win_attrs;

static vg_code read_list4(const vg_op *op, const char *name, int64_t out[4], vg_status *st) {
    const int64_t *v;
    int n;
    if (!vg_op_attr_int_list(op, name, &v, &n) || n != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Sliding window %s field must specify 4 dimensions", name);
    for (int i = 0; i < 4; i++) {
        if (v[i] < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be positive, got %lld", name, (long long)v[i]);
        out[i] = v[i];
    }
    return VG_OK;
}

/* Reads and validates strides (and ksize for pools), padding, data_format, dilations. */
static vg_code read_win_attrs(const vg_op *op, bool pool, win_attrs *w, vg_status *st) {
    if (read_list4(op, "strides", w->strides, st)) return st->code;
    if (pool && read_list4(op, "ksize", w->ksize, st)) return st->code;
    const char *s;
    size_t len;
    if (!vg_op_attr_string(op, "padding", &s, &len))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "missing attr 'padding'");
    if (len == 4 && memcmp(s, "SAME", 4) == 0) w->same = true;
    else if (len == 5 && memcmp(s, "VALID", 5) == 0) w->same = false;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "padding must be SAME or VALID, got '%.*s'", (int)len, s);
    if (vg_op_attr_string(op, "data_format", &s, &len) && !(len == 4 && memcmp(s, "NHWC", 4) == 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "data_format %.*s is not supported (CPU: NHWC only)", (int)len, s);
    if (w->strides[0] != 1 || w->strides[3] != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Current implementation does not yet support strides in the batch and depth dimensions.");
    if (pool && w->ksize[0] != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Pooling is not yet supported on the batch dimension.");
    if (pool && w->ksize[3] != 1)
        return vg_status_set(st, VG_UNIMPLEMENTED, "Pooling over the depth dimension is not supported.");
    const int64_t *d;
    int n;
    if (!pool && vg_op_attr_int_list(op, "dilations", &d, &n)) {
        for (int i = 0; i < n; i++)
            if (d[i] != 1) return vg_status_set(st, VG_UNIMPLEMENTED, "dilations other than 1 are not supported");
    }
    return VG_OK;
}

/* TF's GetWindowedOutputSize (dilation 1): output size and padding before. */
static vg_code window_out(int64_t in, int64_t k, int64_t s, bool same, int64_t *out, int64_t *pad, vg_status *st) {
    *pad = 0;
    if (in < 0 || k < 0) {
        *out = -1;
        return VG_OK;
    }
    if (same) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + k - in;
        *pad = total > 0 ? total / 2 : 0;
    } else {
        *out = (in - k + s) / s;
    }
    if (*out < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Computed output size would be negative: %lld [input_size: %lld, effective_filter_size: %lld, stride: %lld]",
                             (long long)*out, (long long)in, (long long)k, (long long)s);
    return VG_OK;
}

/* Sets the default attrs TF's op defs have. */
static void set_conv_defaults(vg_op *op, vg_dtype dt) {
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg__op_set_default_attr_bool(op, "use_cudnn_on_gpu", true);
}

static vg_code check_real(const vg_op *op, int i, const char *what, vg_dtype want, vg_status *st) {
    if (vg__nn_check_real(op, i, what, st)) return st->code;
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (want != VG_DTYPE_INVALID && dt != want)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s has dtype %s, expected %s", what, vg_dtype_name(dt),
                             vg_dtype_name(want));
    return VG_OK;
}

static vg_code check_rank4(const vg_shape *s, const char *what, vg_status *st) {
    char b[128];
    if (s->ndims >= 0 && s->ndims != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be 4-dimensional: %s", what, vg_shape_str(s, b, sizeof b));
    return VG_OK;
}

/* A 4-D shape given by a shape-tensor input (input_sizes, filter_sizes,
 * orig_input_shape): its Const value, or the static shape behind a Shape op. */
static vg_code shape_from_tensor_input(const vg_op *op, int i, const char *what, vg_shape *out, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be int32 or int64, got %s", what, vg_dtype_name(dt));
    int64_t unk[4] = {-1, -1, -1, -1};
    *out = vg_shape_make(unk, 4);
    const vg_tensor *t = vg__op_const_input(op, i);
    vg_output in = vg_op_input(op, i);
    if (t) {
        if (vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != 4)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be a 4-element vector", what);
        for (int k = 0; k < 4; k++)
            out->dims[k] = dt == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[k] : ((const int64_t *)vg_tensor_data(t))[k];
    } else if (in.op && strcmp(vg_op_type(in.op), "Shape") == 0) {
        vg_shape s = vg_output_shape(vg_op_input(in.op, 0));
        if (check_rank4(&s, what, st)) return st->code;
        if (s.ndims == 4) *out = s;
    }
    return VG_OK;
}

/* Reads a 4-element int32/int64 shape tensor at run time. */
static vg_code kread_sizes(vg__kctx *ctx, int i, const char *what, int64_t out[4]) {
    const vg_tensor *t = vg__kctx_input(ctx, i);
    vg_dtype dt = vg_tensor_dtype(t);
    if ((dt != VG_INT32 && dt != VG_INT64) || vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != 4)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s must be a 4-element int32/int64 vector", what);
    for (int k = 0; k < 4; k++) {
        out[k] = dt == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[k] : ((const int64_t *)vg_tensor_data(t))[k];
        if (out[k] < 0)
            return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s has a negative dimension", what);
    }
    return VG_OK;
}

static bool dims_eq(const vg_tensor *t, const int64_t d[4]) {
    if (vg_tensor_ndims(t) != 4) return false;
    for (int i = 0; i < 4; i++)
        if (vg_tensor_dim(t, i) != d[i]) return false;
    return true;
}

static char *dstr(const int64_t d[4], char *buf, size_t len) {
    snprintf(buf, len, "[%lld,%lld,%lld,%lld]", (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3]);
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Geometry shared by the conv and pool kernels */

typedef struct conv_geom {
    int64_t n, h, w, ci;   /* input (N, H, W, Ci) */
    int64_t kh, kw, co;    /* filter (KH, KW, Ci, Co); pools: co = ci */
    int64_t sh, sw;        /* strides */
    int64_t oh, ow;        /* output (N, OH, OW, Co) */
    int64_t pt, pl;        /* padding before (top, left) */
} conv_geom;

/* Geometry from the input and filter dims (pool: fd = NULL, window from ksize). */
static vg_code make_geom(const vg_op *op, const int64_t xd[4], const int64_t *fd, conv_geom *g, vg_status *st) {
    win_attrs w;
    if (read_win_attrs(op, fd == NULL, &w, st)) return st->code;
    g->n = xd[0]; g->h = xd[1]; g->w = xd[2]; g->ci = xd[3];
    if (fd) {
        if (fd[2] != xd[3])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                                 (long long)xd[3], (long long)fd[2]);
        g->kh = fd[0]; g->kw = fd[1]; g->co = fd[3];
    } else {
        g->kh = w.ksize[1]; g->kw = w.ksize[2]; g->co = xd[3];
    }
    g->sh = w.strides[1]; g->sw = w.strides[2];
    if (window_out(g->h, g->kh, g->sh, w.same, &g->oh, &g->pt, st) ||
        window_out(g->w, g->kw, g->sw, w.same, &g->ow, &g->pl, st))
        return st->code;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* im2col / col2im over a range of rows r = (img, oy, ox) of the whole batch; the
 * columns are (ky, kx, ci), matching the filter's (KH, KW, Ci) flattening. */

#define CONV_DEFINE_COL(T, SFX)                                                                         \
    /* Copies (add = false) or adds (add = true) one window row of kw*ci elements between the           \
     * col row d and the input row xr at column ix0; columns outside the input are zeros (copy)         \
     * or dropped (add). */                                                                             \
    static inline void window_row_##SFX(const conv_geom *g, T *restrict d, T *restrict xr, int64_t ix0,  \
                                        bool add) {                                                     \
        const int64_t ci = g->ci, rowlen = g->kw * ci;                                                  \
        if (ix0 >= 0 && ix0 + g->kw <= g->w) { /* interior: one contiguous run */                       \
            T *s = xr + ix0 * ci;                                                                       \
            if (add) for (int64_t j = 0; j < rowlen; j++) s[j] += d[j];                                 \
            else if (rowlen >= 32) memcpy(d, s, (size_t)rowlen * sizeof(T));                            \
            else for (int64_t j = 0; j < rowlen; j++) d[j] = s[j];                                      \
            return;                                                                                     \
        }                                                                                               \
        for (int64_t kx = 0; kx < g->kw; kx++) {                                                        \
            int64_t ix = ix0 + kx;                                                                      \
            T *dk = d + kx * ci;                                                                        \
            if (ix < 0 || ix >= g->w) {                                                                 \
                if (!add) for (int64_t c = 0; c < ci; c++) dk[c] = 0;                                   \
            } else if (add) {                                                                           \
                for (int64_t c = 0; c < ci; c++) xr[ix * ci + c] += dk[c];                              \
            } else {                                                                                    \
                for (int64_t c = 0; c < ci; c++) dk[c] = xr[ix * ci + c];                               \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* window_row for outputs ox0..ox1 of one input row, walking the (kx, c) columns: for small         \
     * kw*ci a call per window would cost more than the copy. */                                        \
    static void window_cols_##SFX(const conv_geom *g, T *restrict d, T *restrict xr, int64_t ox0,       \
                                  int64_t ox1, bool add) {                                              \
        const int64_t ci = g->ci, kd = g->kh * g->kw * ci, sw = g->sw;                                  \
        for (int64_t kx = 0; kx < g->kw; kx++) {                                                        \
            /* outputs whose column ix = ox*sw - pl + kx lies inside the input: [lo, hi) */             \
            int64_t off = kx - g->pl, lo = off >= 0 ? 0 : (-off + sw - 1) / sw;                         \
            int64_t hi = g->w - off > 0 ? (g->w - off + sw - 1) / sw : 0;                               \
            lo = lo < ox0 ? ox0 : lo;                                                                   \
            hi = hi > ox1 ? ox1 : hi;                                                                   \
            for (int64_t c = 0; c < ci; c++) {                                                          \
                T *dc = d + kx * ci + c; /* dc[(ox - ox0) * kd] is output ox's element */               \
                const T *xc = xr + c;    /* xc[(ox * sw + off) * ci] is its input */                     \
                if (add) {                                                                              \
                    for (int64_t ox = lo; ox < hi; ox++) xr[(ox * sw + off) * ci + c] += dc[(ox - ox0) * kd]; \
                    continue;                                                                           \
                }                                                                                       \
                for (int64_t ox = ox0; ox < lo && ox < ox1; ox++) dc[(ox - ox0) * kd] = 0;              \
                for (int64_t ox = lo; ox < hi; ox++) dc[(ox - ox0) * kd] = xc[(ox * sw + off) * ci];    \
                for (int64_t ox = hi > lo ? hi : lo; ox < ox1; ox++) dc[(ox - ox0) * kd] = 0;           \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* im2col (add = false): col (r1 - r0, kd) from x; col2im (add = true): x += col. Rows are          \
     * walked in runs of one output row (img, oy) so that each ky's input row is found once. */          \
    static void cols_##SFX(const conv_geom *g, T *x, int64_t r0, int64_t r1, T *col, bool add) {         \
        const int64_t P = g->oh * g->ow, ci = g->ci, rowlen = g->kw * ci, kd = g->kh * rowlen;          \
        for (int64_t r = r0; r < r1;) {                                                                 \
            int64_t img = r / P, p = r % P, oy = p / g->ow, ox0 = p % g->ow;                            \
            int64_t ox1 = r1 - r < g->ow - ox0 ? ox0 + (r1 - r) : g->ow;                                \
            T *xi = x + img * g->h * g->w * ci, *crow = col + (r - r0) * kd;                            \
            for (int64_t ky = 0; ky < g->kh; ky++) {                                                    \
                int64_t iy = oy * g->sh - g->pt + ky;                                                   \
                T *d = crow + ky * rowlen;                                                              \
                if (iy < 0 || iy >= g->h) { /* padding row */                                           \
                    if (!add)                                                                           \
                        for (int64_t ox = ox0; ox < ox1; ox++, d += kd) memset(d, 0, (size_t)rowlen * sizeof(T)); \
                    continue;                                                                           \
                }                                                                                       \
                T *xr = xi + iy * g->w * ci;                                                            \
                if (rowlen < 16) { /* short windows (few channels): fill column by column */            \
                    window_cols_##SFX(g, d, xr, ox0, ox1, add);                                         \
                    continue;                                                                           \
                }                                                                                       \
                for (int64_t ox = ox0; ox < ox1; ox++, d += kd)                                         \
                    window_row_##SFX(g, d, xr, ox * g->sw - g->pl, add);                                \
            }                                                                                           \
            r += ox1 - ox0;                                                                             \
        }                                                                                               \
    }

CONV_DEFINE_COL(float, f32)
CONV_DEFINE_COL(double, f64)

/* Rows [r0, r1) of the im2col matrix of x into col (r1 - r0, kh*kw*ci). */
static void im2col(vg_dtype dt, const conv_geom *g, const void *x, int64_t r0, int64_t r1, void *col) {
    if (dt == VG_DOUBLE) cols_f64(g, (double *)x, r0, r1, col, false);
    else cols_f32(g, (float *)x, r0, r1, col, false);
}
/* x += col2im(col) for rows [r0, r1): each row's patch added back into the input gradient. */
static void col2im(vg_dtype dt, const conv_geom *g, const void *col, int64_t r0, int64_t r1, void *x) {
    if (dt == VG_DOUBLE) cols_f64(g, x, r0, r1, (double *)col, true);
    else cols_f32(g, x, r0, r1, (float *)col, true);
}

/* ------------------------------------------------------------------------ */
/* Convolution kernels */

enum { CONV_FWD, CONV_BP_INPUT, CONV_BP_FILTER };

typedef struct conv_job {
    int mode;
    vg_dtype dt;
    conv_geom g;
    bool direct;             /* 1x1, stride 1: x itself is the im2col matrix */
    const char *x, *f, *dy;  /* inputs (those the mode uses) */
    char *out;               /* y, dx or df */
    char *col;               /* units * col_stride bytes of im2col buffers */
    char *partial;           /* filter grad: (units - 1) partial sums of (kd, co) */
    size_t col_stride;
    int64_t kd, rows, units, chunk;
    const void *bias;        /* forward only: bias (co) added, then ReLU if relu (fused ops) */
    bool relu;
    bool epi_done;           /* set when the path applied bias / relu itself */
    const void *pool;        /* forward, fused max pool: its pool_job (y as its input), else NULL */
    int64_t pool_oh;         /* rows of one pooled image */
    bool pool_done;          /* set when the path pooled each image itself (after its epilogue) */
    int64_t groups;          /* oneDNN only: 0 plain; ci for a depthwise convolution (co = ci * M) */
    bool bf16;               /* oneDNN only: bfloat16 operands (a node painted by the mixed-precision rewrite) */
} conv_job;

static void pool_fwd_rows(void *arg, int64_t r0, int64_t r1);

/* The rows of unit u: an even share of all rows, or of whole images for the input
 * gradient (col2im of two units must not touch the same image). */
static void unit_rows(const conv_job *j, int64_t u, int64_t *r0, int64_t *r1) {
    if (j->mode == CONV_BP_INPUT) {
        int64_t P = j->g.oh * j->g.ow;
        *r0 = u * j->g.n / j->units * P;
        *r1 = (u + 1) * j->g.n / j->units * P;
    } else {
        *r0 = u * j->rows / j->units;
        *r1 = (u + 1) * j->rows / j->units;
    }
}

static void conv_unit(const conv_job *j, int64_t u) {
    const conv_geom *g = &j->g;
    size_t es = real_size(j->dt);
    int64_t r0, r1, kd = j->kd, co = g->co;
    unit_rows(j, u, &r0, &r1);
    char *col = j->col + (size_t)u * j->col_stride;
    if (j->mode == CONV_BP_INPUT) {
        /* zero this unit's images of dx, then scatter-add each chunk */
        int64_t img_elems = g->h * g->w * g->ci, P = g->oh * g->ow;
        if (P > 0) memset(j->out + (size_t)(r0 / P * img_elems) * es, 0, (size_t)((r1 - r0) / P * img_elems) * es);
    }
    char *df = j->mode == CONV_BP_FILTER ? (u == 0 ? j->out : j->partial + (size_t)((u - 1) * kd * co) * es) : NULL;
    if (df && r1 <= r0) memset(df, 0, (size_t)(kd * co) * es);
    for (int64_t r = r0; r < r1; r += j->chunk) {
        int64_t nr = r1 - r < j->chunk ? r1 - r : j->chunk;
        const char *cx = j->direct ? j->x + (size_t)(r * kd) * es : col;
        switch (j->mode) {
        case CONV_FWD: // y[r:r+nr, co] = col[nr, kd] * f[kd, co]
            if (!j->direct) im2col(j->dt, g, j->x, r, r + nr, col);
            vg__nn_gemm1(j->dt, false, false, nr, co, kd, cx, kd, j->f, co, 0.0, j->out + (size_t)(r * co) * es, co);
            break;
        case CONV_BP_FILTER: // df[kd, co] += col[nr, kd]^T * dy[r:r+nr, co]
            if (!j->direct) im2col(j->dt, g, j->x, r, r + nr, col);
            vg__nn_gemm1(j->dt, true, false, kd, co, nr, cx, kd, j->dy + (size_t)(r * co) * es, co,
                         r == r0 ? 0.0 : 1.0, df, co);
            break;
        case CONV_BP_INPUT: // dcol[nr, kd] = dy[r:r+nr, co] * f[kd, co]^T; dx += col2im(dcol)
            if (j->direct) {
                vg__nn_gemm1(j->dt, false, true, nr, kd, co, j->dy + (size_t)(r * co) * es, co, j->f, co, 0.0,
                             j->out + (size_t)(r * kd) * es, kd);
            } else {
                vg__nn_gemm1(j->dt, false, true, nr, kd, co, j->dy + (size_t)(r * co) * es, co, j->f, co, 0.0, col, kd);
                col2im(j->dt, g, col, r, r + nr, j->out);
            }
            break;
        }
    }
}

static void conv_units(void *arg, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) conv_unit(arg, u);
}

/* Scratch memory (im2col buffers, filter partials) of a conv op, kept in the op's
 * per-session kernel state across runs so that a training step does not fault in
 * fresh pages for it every time. A concurrent run of the same op (rare) allocates
 * its own block instead of waiting. */
typedef struct conv_scratch {
    pthread_mutex_t mu;
    char *buf;
    size_t size;
} conv_scratch;

static void *scratch_new(const vg_op *op, vg_status *st) {
    conv_scratch *s = vg__calloc_or_oom(sizeof *s, "conv scratch", st);
    if (!s) return NULL;
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

static void scratch_free(void *p) {
    conv_scratch *s = p;
    vg__free(s->buf);
    pthread_mutex_destroy(&s->mu);
    vg__free(s);
}

/* Borrows size bytes (64-aligned): the op's cached block when it is free (*held set),
 * else a fresh one. NULL with the status set on failure. */
static char *scratch_get(vg__kctx *ctx, size_t size, conv_scratch **held) {
    conv_scratch *s = NULL;
    *held = NULL;
    if (vg__kctx_state(ctx, scratch_new, scratch_free, (void **)&s) != VG_OK) return NULL;
    if (pthread_mutex_trylock(&s->mu) == 0) {
        if (s->size < size) {
            vg__free(s->buf);
            s->size = 0;
            s->buf = vg__aligned_alloc(size, 64);
            if (!s->buf) {
                pthread_mutex_unlock(&s->mu);
                VG_OOM(vg__kctx_status(ctx), "conv scratch");
                return NULL;
            }
            s->size = size;
        }
        *held = s;
        return s->buf;
    }
    char *p = vg__aligned_alloc(size, 64);
    if (!p) VG_OOM(vg__kctx_status(ctx), "conv scratch");
    return p;
}

static void scratch_put(conv_scratch *held, char *p) {
    if (held) pthread_mutex_unlock(&held->mu);
    else vg__free(p);
}

/* Runs a convolution job: picks units and chunk size, borrows the scratch, runs the
 * units on the pool and reduces the filter partials. */
static vg_code conv_run(vg__kctx *ctx, conv_job *j) {
    vg_status *st = vg__kctx_status(ctx);
    const conv_geom *g = &j->g;
    size_t es = real_size(j->dt);
    j->kd = g->kh * g->kw * g->ci;
    j->rows = g->n * g->oh * g->ow;
    j->direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0;
    double flops = 2.0 * (double)j->rows * (double)j->kd * (double)g->co;
    int64_t units = vg__kctx_num_threads(ctx);
    if ((double)units > flops / CONV_MIN_FLOPS_PER_UNIT) units = (int64_t)(flops / CONV_MIN_FLOPS_PER_UNIT);
    if (j->mode == CONV_BP_INPUT && units > g->n) units = g->n;
    if (units > j->rows) units = j->rows;
    if (units < 1) units = 1;
    j->units = units;
    j->chunk = (int64_t)(CONV_COL_BYTES / ((size_t)j->kd * es));
    if (j->chunk < 1) j->chunk = 1;
    if (j->direct && j->mode != CONV_BP_INPUT) j->chunk = j->rows; /* no buffer: one GEMM per unit */
    if (j->direct && j->mode == CONV_BP_INPUT) j->chunk = j->rows;
    j->col_stride = j->direct ? 0 : ((size_t)(j->chunk * j->kd) * es + 63) / 64 * 64;
    size_t col_bytes = j->col_stride * (size_t)units;
    size_t partial_bytes = j->mode == CONV_BP_FILTER ? (size_t)((units - 1) * j->kd * g->co) * es : 0;
    conv_scratch *held = NULL;
    char *scratch = NULL;
    if (col_bytes + partial_bytes > 0) {
        scratch = scratch_get(ctx, col_bytes + partial_bytes, &held);
        if (!scratch) return st->code;
        j->col = scratch;
        j->partial = partial_bytes ? scratch + col_bytes : NULL;
    }
    if (units == 1) conv_units(j, 0, 1);
    else vg__kctx_parallel_for(ctx, units, (int64_t)(flops / (double)units), conv_units, j);
    if (j->partial) {
        int64_t n = j->kd * g->co;
        for (int64_t u = 1; u < units; u++) {
            if (j->dt == VG_DOUBLE) {
                double *o = (double *)j->out;
                const double *p = (const double *)j->partial + (u - 1) * n;
                for (int64_t i = 0; i < n; i++) o[i] += p[i];
            } else {
                float *o = (float *)j->out;
                const float *p = (const float *)j->partial + (u - 1) * n;
                for (int64_t i = 0; i < n; i++) o[i] += p[i];
            }
        }
    }
    if (scratch) scratch_put(held, scratch);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Direct convolution (float32, x86-64 with AVX-512F or AVX2+FMA, output channel counts
 * that are multiples of the vector length, 16 or 8): no im2col and no BLAS packing. Each image is copied once into a zero-padded
 * buffer xp (HP, WP, C); for a fixed ky the (kx, c) pairs of a window are then one
 * contiguous run of J = KW * C floats, so
 *   forward:  y[oy, ox, :] = sum over ky, j of xp[oy*sh + ky, ox*sw, j] * f[ky, j, :]
 *             with PB output pixels x 32 channels of accumulators held in registers;
 *   filter:   df[ky, j, :] += sum over pixels of xp[oy*sh + ky, ox*sw, j] * dy[oy, ox, :]
 *             with JB j's x 32 channels of accumulators, the pixels streamed per image;
 *   input:    (stride 1) the forward kernel on dy padded by (KH-1-pt, KW-1-pl) with the
 *             filter rotated by 180 degrees and its in/out channels swapped.
 * Other cases (double, strided input gradient, odd channel counts, no AVX-512) take
 * the im2col path above. */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define CONV_DIRECT 1
#endif

#ifdef CONV_DIRECT

/* Forward block: PB output pixels x NCB vectors of VL channels. x points at xp (row
 * oy*sh, column ox0*sw, j = 0), w at f (ky = 0, j = 0, first channel), y at the first
 * output pixel. bias (at the block's first channel; NULL: none) is added and then ReLU
 * applied (relu) in registers before the store: y + b, then max(0, v), which is
 * v < 0 ? 0 : v bit for bit (NaN and -0 kept), as the separate epilogue. */
#define DCONV_FWD_BLOCK(ISA, TGT, V, VL, LD, ST, BC, FMA, ZR, MAX, PB, NCB)                             \
    __attribute__((target(TGT))) static void dfwd##ISA##_##PB##_##NCB(                                  \
        const float *x, int64_t xrow, int64_t px, const float *w, int64_t wky, int64_t co, int64_t kh,   \
        int64_t J, float *y, const float *bias, bool relu) {                                            \
        V a[PB][NCB];                                                                                   \
        _Pragma("GCC unroll 16") for (int p = 0; p < PB; p++)                                           \
            _Pragma("GCC unroll 2") for (int c = 0; c < NCB; c++) a[p][c] = ZR();                       \
        for (int64_t ky = 0; ky < kh; ky++, x += xrow, w += wky) {                                      \
            for (int64_t j = 0; j < J; j++) {                                                           \
                V w0 = LD(w + j * co), w1 = NCB > 1 ? LD(w + j * co + VL) : w0;                         \
                _Pragma("GCC unroll 16") for (int p = 0; p < PB; p++) {                                 \
                    V b = BC(x[p * px + j]);                                                            \
                    a[p][0] = FMA(b, w0, a[p][0]);                                                      \
                    if (NCB > 1) a[p][NCB - 1] = FMA(b, w1, a[p][NCB - 1]);                             \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
        if (bias) {                                                                                     \
            V b0 = LD(bias), b1 = NCB > 1 ? LD(bias + VL) : b0;                                         \
            _Pragma("GCC unroll 16") for (int p = 0; p < PB; p++) {                                     \
                a[p][0] = a[p][0] + b0;                                                                 \
                if (NCB > 1) a[p][NCB - 1] = a[p][NCB - 1] + b1;                                        \
            }                                                                                           \
            if (relu)                                                                                   \
                _Pragma("GCC unroll 16") for (int p = 0; p < PB; p++)                                   \
                    _Pragma("GCC unroll 2") for (int c = 0; c < NCB; c++) a[p][c] = MAX(ZR(), a[p][c]); \
        }                                                                                               \
        _Pragma("GCC unroll 16") for (int p = 0; p < PB; p++)                                           \
            _Pragma("GCC unroll 2") for (int c = 0; c < NCB; c++) ST(y + p * co + c * VL, a[p][c]);     \
    }

/* Filter block: JB j's x NCB vectors of channels of df, summed over the OH x OW pixels
 * of one image. x points at xp (row ky, column 0, j0), d at dy (pixel 0, first
 * channel), df at (ky, j0, first channel); first: start from zero instead of df. */
#define DCONV_BF_BLOCK(ISA, TGT, V, VL, LD, ST, BC, FMA, ZR, MAX, JB, NCB)                                   \
    __attribute__((target(TGT))) static void dbf##ISA##_##JB##_##NCB(                                   \
        const float *x, int64_t xrow, int64_t px, int64_t oh, int64_t ow, const float *d, int64_t co,    \
        float *df, bool first) {                                                                        \
        V a[JB][NCB];                                                                                   \
        _Pragma("GCC unroll 16") for (int q = 0; q < JB; q++)                                           \
            _Pragma("GCC unroll 2") for (int c = 0; c < NCB; c++)                                       \
                a[q][c] = first ? ZR() : LD(df + q * co + c * VL);                                      \
        for (int64_t oy = 0; oy < oh; oy++, x += xrow) {                                                \
            const float *xq = x;                                                                        \
            for (int64_t ox = 0; ox < ow; ox++, xq += px, d += co) {                                    \
                V d0 = LD(d), d1 = NCB > 1 ? LD(d + VL) : d0;                                           \
                _Pragma("GCC unroll 16") for (int q = 0; q < JB; q++) {                                 \
                    V b = BC(xq[q]);                                                                    \
                    a[q][0] = FMA(b, d0, a[q][0]);                                                      \
                    if (NCB > 1) a[q][NCB - 1] = FMA(b, d1, a[q][NCB - 1]);                             \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
        _Pragma("GCC unroll 16") for (int q = 0; q < JB; q++)                                           \
            _Pragma("GCC unroll 2") for (int c = 0; c < NCB; c++) ST(df + q * co + c * VL, a[q][c]);    \
    }

/* AVX-512: 32 registers hold 14 x 2 accumulators + 2 weights; AVX2: 16 hold 6 x 2 + 2. */
#define DCONV_512(X, W, NCB)                                                                            \
    X(512, "avx512f", __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps,    \
      _mm512_setzero_ps, _mm512_max_ps, W, NCB)
#define DCONV_256(X, W, NCB)                                                                            \
    X(256, "avx2,fma", __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps,    \
      _mm256_setzero_ps, _mm256_max_ps, W, NCB)
#define DCONV_ALL(ISA, X, W0, W1, W2, W3, W4)                                                           \
    ISA(X, W0, 2) ISA(X, W1, 2) ISA(X, W2, 2) ISA(X, W3, 2) ISA(X, W4, 2)                               \
    ISA(X, W0, 1) ISA(X, W1, 1) ISA(X, W2, 1) ISA(X, W3, 1) ISA(X, W4, 1)
DCONV_ALL(DCONV_512, DCONV_FWD_BLOCK, 14, 8, 4, 2, 1)
DCONV_ALL(DCONV_512, DCONV_BF_BLOCK, 14, 8, 4, 2, 1)
DCONV_ALL(DCONV_256, DCONV_FWD_BLOCK, 6, 4, 3, 2, 1)
DCONV_ALL(DCONV_256, DCONV_BF_BLOCK, 6, 4, 3, 2, 1)

typedef void (*dfwd_fn)(const float *, int64_t, int64_t, const float *, int64_t, int64_t, int64_t, int64_t, float *,
                        const float *, bool);
typedef void (*dbf_fn)(const float *, int64_t, int64_t, int64_t, int64_t, const float *, int64_t, float *, bool);

/* The kernels of one instruction set: block widths (largest first) and the functions
 * for 1 and 2 vectors of channels. */
typedef struct dconv_isa {
    int vl;
    int widths[5];
    dfwd_fn fwd[2][5];
    dbf_fn bf[2][5];
} dconv_isa;

static const dconv_isa dconv_avx512 = {
    16, {14, 8, 4, 2, 1},
    {{dfwd512_14_1, dfwd512_8_1, dfwd512_4_1, dfwd512_2_1, dfwd512_1_1},
     {dfwd512_14_2, dfwd512_8_2, dfwd512_4_2, dfwd512_2_2, dfwd512_1_2}},
    {{dbf512_14_1, dbf512_8_1, dbf512_4_1, dbf512_2_1, dbf512_1_1},
     {dbf512_14_2, dbf512_8_2, dbf512_4_2, dbf512_2_2, dbf512_1_2}}};
static const dconv_isa dconv_avx2 = {
    8, {6, 4, 3, 2, 1},
    {{dfwd256_6_1, dfwd256_4_1, dfwd256_3_1, dfwd256_2_1, dfwd256_1_1},
     {dfwd256_6_2, dfwd256_4_2, dfwd256_3_2, dfwd256_2_2, dfwd256_1_2}},
    {{dbf256_6_1, dbf256_4_1, dbf256_3_1, dbf256_2_1, dbf256_1_1},
     {dbf256_6_2, dbf256_4_2, dbf256_3_2, dbf256_2_2, dbf256_1_2}}};

static atomic_int g_direct_max = 2; /* vg__conv_set_direct: highest kernel level used */

/* The CPU's kernel level: 2 AVX-512F, 1 AVX2+FMA, 0 none. */
static int dconv_cpu_level(void) {
    static int level = -1; /* benign race: every thread computes the same value */
    if (level < 0)
        level = __builtin_cpu_supports("avx512f")                                   ? 2
                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1
                                                                                  : 0;
    return level;
}

/* The kernels to use (NULL: im2col + GEMM). */
static const dconv_isa *dconv_cpu_isa(void) {
    int level = dconv_cpu_level(), max = atomic_load(&g_direct_max);
    if (level > max) level = max;
    return level == 2 ? &dconv_avx512 : level == 1 ? &dconv_avx2 : NULL;
}

/* One direct convolution: "in" images (n, ih, iw, ic) are padded into (hp, wp, ic)
 * with the input at (pt, pl); windows kh x kw with strides sh, sw; the output or dy
 * is (n, oh, ow, oc). */
typedef struct dconv_job {
    int mode;             /* CONV_FWD (also used for the input gradient) or CONV_BP_FILTER */
    int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, pt, pl, hp, wp;
    const float *in, *f, *dy;
    float *out, *pad, *partial;  /* pad: units * hp*wp*ic; partial: (units-1) * kh*kw*ic*oc */
    const float *bias;    /* forward: y = [relu](y + bias), in the kernels' registers before the store */
    bool relu;
    const void *pool;     /* forward: then the image's max pool (a pool_job), while it is in cache */
    int64_t pool_oh;
    int64_t units;
    const dconv_isa *isa;
} dconv_job;

/* Copies image img of in into the unit's padded buffer. */
static void dconv_pad(const dconv_job *j, int64_t img, float *xp) {
    const int64_t ic = j->ic;
    memset(xp, 0, sizeof(float) * (size_t)(j->hp * j->wp * ic));
    int64_t x0 = j->pl < 0 ? -j->pl : 0, x1 = j->iw; /* input columns that land in [0, wp) */
    if (x1 + j->pl > j->wp) x1 = j->wp - j->pl;
    if (x1 <= x0) return;
    for (int64_t iy = 0; iy < j->ih; iy++) {
        int64_t py = iy + j->pt;
        if (py < 0 || py >= j->hp) continue;
        memcpy(xp + (py * j->wp + j->pl + x0) * ic, j->in + ((img * j->ih + iy) * j->iw + x0) * ic,
               sizeof(float) * (size_t)((x1 - x0) * ic));
    }
}

/* Picks the widest block of the ISA that fits in n. */
static int dconv_width(const dconv_isa *isa, int64_t n) {
    int w = 0;
    while (isa->widths[w] > n) w++;
    return w;
}

static void dconv_unit(const dconv_job *j, int64_t u) {
    const dconv_isa *isa = j->isa;
    const int64_t ic = j->ic, oc = j->oc, J = j->kw * ic, xrow = j->wp * ic, px = j->sw * ic, vl = isa->vl;
    float *xp = j->pad + (size_t)u * (size_t)(j->hp * j->wp * ic);
    float *df = u == 0 ? j->out : j->partial + (size_t)(u - 1) * (size_t)(j->kh * J * oc);
    int64_t i0 = u * j->n / j->units, i1 = (u + 1) * j->n / j->units;
    if (j->mode == CONV_BP_FILTER && i1 <= i0) memset(df, 0, sizeof(float) * (size_t)(j->kh * J * oc));
    for (int64_t img = i0; img < i1; img++) {
        dconv_pad(j, img, xp);
        if (j->mode == CONV_BP_FILTER) {
            const float *d = j->dy + img * j->oh * j->ow * oc;
            for (int64_t ky = 0; ky < j->kh; ky++)
                for (int64_t j0 = 0; j0 < J;) {
                    int w = dconv_width(isa, J - j0);
                    for (int64_t cob = 0; cob < oc; cob += 2 * vl) {
                        int ncb = oc - cob >= 2 * vl ? 2 : 1;
                        isa->bf[ncb - 1][w](xp + ky * xrow + j0, j->sh * xrow, px, j->oh, j->ow, d + cob, oc,
                                            df + (ky * J + j0) * oc + cob, img == i0);
                    }
                    j0 += isa->widths[w];
                }
            continue;
        }
        for (int64_t oy = 0; oy < j->oh; oy++) {
            float *y = j->out + (img * j->oh + oy) * j->ow * oc;
            const float *x = xp + oy * j->sh * xrow;
            for (int64_t cob = 0; cob < oc; cob += 2 * vl) {
                int ncb = oc - cob >= 2 * vl ? 2 : 1;
                for (int64_t ox = 0; ox < j->ow;) {
                    int w = dconv_width(isa, j->ow - ox);
                    isa->fwd[ncb - 1][w](x + ox * px, xrow, px, j->f + cob, J * oc, oc, j->kh, J, y + ox * oc + cob,
                                         j->bias ? j->bias + cob : NULL, j->relu);
                    ox += isa->widths[w];
                }
            }
        }
        if (j->pool) pool_fwd_rows((void *)j->pool, img * j->pool_oh, (img + 1) * j->pool_oh);
    }
}

static void dconv_units(void *arg, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) dconv_unit(arg, u);
}

/* Runs a convolution job on the direct path if it applies; *done tells whether it
 * did. Fails with RESOURCE_EXHAUSTED. */
static vg_code dconv_try(vg__kctx *ctx, const conv_job *cj, bool *done) {
    const conv_geom *g = &cj->g;
    *done = false;
    const dconv_isa *isa = dconv_cpu_isa();
    if (cj->dt != VG_FLOAT || !isa) return VG_OK;
    dconv_job j = {.mode = cj->mode == CONV_BP_FILTER ? CONV_BP_FILTER : CONV_FWD, .n = g->n, .kh = g->kh,
                   .kw = g->kw, .sh = g->sh, .sw = g->sw, .isa = isa};
    if (cj->mode == CONV_BP_INPUT) {
        /* dx = conv(dy padded by k-1-p, rot180(f) with channels swapped), stride 1 only */
        if (g->sh != 1 || g->sw != 1 || g->ci % isa->vl) return VG_OK;
        j.in = (const float *)cj->dy;
        j.ih = g->oh, j.iw = g->ow, j.ic = g->co, j.oh = g->h, j.ow = g->w, j.oc = g->ci;
        j.pt = g->kh - 1 - g->pt, j.pl = g->kw - 1 - g->pl;
    } else {
        if (g->co % isa->vl) return VG_OK;
        j.in = (const float *)cj->x;
        j.ih = g->h, j.iw = g->w, j.ic = g->ci, j.oh = g->oh, j.ow = g->ow, j.oc = g->co;
        j.pt = g->pt, j.pl = g->pl;
        j.f = (const float *)cj->f;
        j.dy = (const float *)cj->dy;
        if (cj->mode == CONV_FWD) j.bias = cj->bias, j.relu = cj->relu, j.pool = cj->pool, j.pool_oh = cj->pool_oh;
    }
    j.hp = (j.oh - 1) * j.sh + j.kh;
    j.wp = (j.ow - 1) * j.sw + j.kw;
    int64_t groups = cj->groups > 1 ? cj->groups : 1;
    double flops = 2.0 * (double)(g->n * g->oh * g->ow) * (double)(g->kh * g->kw * g->ci * g->co) / (double)groups;
    int64_t units = image_units(ctx, flops, g->n);
    j.units = units;
    size_t pad = (size_t)(j.hp * j.wp * j.ic), fsz = (size_t)(g->kh * g->kw * g->ci * g->co);
    size_t nfloats = pad * (size_t)units + (cj->mode == CONV_BP_INPUT ? fsz : 0) +
                     (cj->mode == CONV_BP_FILTER ? fsz * (size_t)(units - 1) : 0);
    conv_scratch *held = NULL;
    float *scratch = (float *)scratch_get(ctx, nfloats * sizeof(float), &held);
    if (!scratch) return vg__kctx_status(ctx)->code;
    j.pad = scratch;
    j.out = (float *)cj->out;
    if (cj->mode == CONV_BP_FILTER) j.partial = scratch + pad * (size_t)units;
    if (cj->mode == CONV_BP_INPUT) {
        /* g[ky, kx, co, ci] = f[kh-1-ky, kw-1-kx, ci, co] */
        float *gf = scratch + pad * (size_t)units;
        const float *f = (const float *)cj->f;
        for (int64_t ky = 0; ky < g->kh; ky++)
            for (int64_t kx = 0; kx < g->kw; kx++) {
                const float *src = f + ((g->kh - 1 - ky) * g->kw + (g->kw - 1 - kx)) * g->ci * g->co;
                float *dst = gf + (ky * g->kw + kx) * g->co * g->ci;
                for (int64_t c = 0; c < g->ci; c++)
                    for (int64_t o = 0; o < g->co; o++) dst[o * g->ci + c] = src[c * g->co + o];
            }
        j.f = gf;
    }
    if (units == 1) dconv_units(&j, 0, 1);
    else vg__kctx_parallel_for(ctx, units, (int64_t)(flops / (double)units), dconv_units, &j);
    if (cj->mode == CONV_BP_FILTER) {
        for (int64_t u = 1; u < units; u++) {
            const float *p = j.partial + (size_t)(u - 1) * fsz;
            for (size_t i = 0; i < fsz; i++) j.out[i] += p[i];
        }
    }
    scratch_put(held, (char *)scratch);
    *done = true;
    return VG_OK;
}

#endif /* CONV_DIRECT */

int vg__conv_set_direct(int max_level) {
#ifdef CONV_DIRECT
    atomic_store(&g_direct_max, max_level);
    int level = dconv_cpu_level();
    return level < max_level ? level : max_level;
#else
    (void)max_level;
    return 0;
#endif
}

/* ------------------------------------------------------------------------ */
/* oneDNN convolution primitives (float32, backend oneDNN): the batch is split into
 * one slice per thread, each slice a cached oneDNN primitive run on one thread (see
 * dnnl_backend.c). The filter is reordered once per call into oneDNN's blocked layout;
 * filter gradients come back per slice in that layout and are summed in HWIO. */

static atomic_int g_dnnl_conv = 1; /* vg__conv_set_dnnl: 0 off, 1 where it wins, 2 always */
static atomic_llong g_dnnl_conv_runs; /* vg__conv_dnnl_runs */

long long vg__conv_dnnl_runs(void) { return atomic_load(&g_dnnl_conv_runs); }

bool vg__conv_set_dnnl(int mode) {
    atomic_store(&g_dnnl_conv, mode < 0 ? 0 : mode > 2 ? 2 : mode);
#ifdef VIGIL_HAVE_DNNL
    return true;
#else
    return false;
#endif
}

typedef struct xconv_job {
    int mode;
    int64_t n, units;
    const vg__dconv_plan *plan[2];  /* sub-batch n / units and n / units + 1 */
    const float *in, *w[2], *bias;  /* w: per plan (FWD, BWD_DATA); BWD_WEIGHTS: dy */
    float *out, *dbias;
    const void *pool;               /* FWD with a fused max pool: its pool_job, run per unit */
    int64_t pool_oh;
    char *unit_mem;                 /* units * unit_stride bytes */
    size_t unit_stride, scratch_bytes, wpart_bytes;
    int64_t in_img, out_img;        /* floats per image of in and out (FWD, BWD_DATA) / of x and dy */
    int64_t fsz, co;
    size_t es;                      /* bytes per element of in (and of BWD_WEIGHTS' dy): 2 for bfloat16 */
    atomic_int failed;
} xconv_job;

static void xconv_unit(xconv_job *j, int64_t u) {
    int64_t i0 = u * j->n / j->units, i1 = (u + 1) * j->n / j->units;
    const vg__dconv_plan *p = j->plan[i1 - i0 == j->n / j->units ? 0 : 1];
    char *mem = j->unit_mem + (size_t)u * j->unit_stride;
    bool ok;
    if (j->mode == VG__DCONV_BWD_WEIGHTS) {
        /* unit memory: scratchpad, the blocked partial gradient, its HWIO copy, dbias */
        float *wpart = (float *)(mem + j->scratch_bytes);
        float *hwio = u == 0 ? j->out : (float *)(mem + j->scratch_bytes + j->wpart_bytes);
        float *db = u == 0 ? j->dbias : hwio + j->fsz;
        bool blocked = vg__dconv_weights_bytes(p) > 0;
        ok = vg__dconv_exec(p, (const float *)((const char *)j->in + (size_t)(i0 * j->in_img) * j->es),
                            (const float *)((const char *)j->w[0] + (size_t)(i0 * j->out_img) * j->es), NULL,
                            blocked ? wpart : hwio, db, mem);
        if (ok && blocked) ok = vg__dconv_reorder_weights(p, wpart, hwio);
    } else {
        ok = vg__dconv_exec(p, (const float *)((const char *)j->in + (size_t)(i0 * j->in_img) * j->es),
                            j->w[p == j->plan[0] ? 0 : 1], j->bias, j->out + i0 * j->out_img, NULL, mem);
        if (ok && j->pool) pool_fwd_rows((void *)j->pool, i0 * j->pool_oh, i1 * j->pool_oh);
    }
    if (!ok) atomic_store(&j->failed, 1);
}

static void xconv_units(void *arg, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) xconv_unit(arg, u);
}

/* Runs a float32 convolution through oneDNN if it applies; *done tells whether it did.
 * bias / relu (FWD) and dbias (BWD_WEIGHTS) are the fused epilogues (NULL / false:
 * none). Fails only with RESOURCE_EXHAUSTED. */
static vg_code xconv_try(vg__kctx *ctx, const conv_job *cj, const float *bias, bool relu, float *dbias, bool *done) {
    const conv_geom *g = &cj->g;
    *done = false;
    int use = atomic_load(&g_dnnl_conv);
    if (cj->bf16) use = 2; /* bfloat16: oneDNN's primitive is the fast path there is */
    if (cj->dt != VG_FLOAT || !use || (!cj->bf16 && !vg__backend_use_dnnl())) return VG_OK;
    int mode = cj->mode == CONV_FWD ? VG__DCONV_FWD : cj->mode == CONV_BP_INPUT ? VG__DCONV_BWD_DATA : VG__DCONV_BWD_WEIGHTS;
    /* Where oneDNN wins (measured, 1 thread, AVX-512, batch 64, 5x5 SAME): every filter
     * gradient (28x28x1->32: 0.48 ms vs 0.61 direct; 14x14x32->64: 5.5 vs 6.3), forward
     * and input gradient with 16+ input and output channels (14x14x32->64: 5.3 vs 5.8, 5.5
     * vs 5.9). With few input channels its forward loses to the direct kernel
     * (28x28x1->32: 0.52 vs 0.38 ms) and its input gradient to im2col (6.0 vs 1.7). */
    if (use == 1 && mode == VG__DCONV_FWD && g->ci < 16) return VG_OK;
    if (use == 1 && mode == VG__DCONV_BWD_DATA && g->co < 16) return VG_OK;
    if (use == 1 && mode == VG__DCONV_BWD_DATA && g->ci < 16) return VG_OK;
    int64_t groups = cj->groups > 1 ? cj->groups : 1;
    double flops = 2.0 * (double)(g->n * g->oh * g->ow) * (double)(g->kh * g->kw * g->ci * g->co) / (double)groups;
    int64_t units = image_units(ctx, flops, g->n);
    /* a fused max pool runs on each unit's images after its convolution (sub-batches of
     * 4 to 16 images, pooled while in cache, measured no faster at 1 thread) */
    const void *pool = mode == VG__DCONV_FWD && relu ? cj->pool : NULL;
    xconv_job j = {.mode = mode, .n = g->n, .units = units, .bias = bias, .dbias = dbias, .co = g->co,
                   .pool = pool, .pool_oh = cj->pool_oh,
                   .fsz = g->kh * g->kw * g->ci * g->co / groups, .es = cj->bf16 ? 2 : sizeof(float)};
    vg__dconv_geom dg = {.h = g->h, .w = g->w, .ci = g->ci, .kh = g->kh, .kw = g->kw, .co = g->co, .sh = g->sh,
                         .sw = g->sw, .oh = g->oh, .ow = g->ow, .pt = g->pt, .pl = g->pl, .relu = relu,
                         .bias = bias != NULL || dbias != NULL, .groups = cj->groups > 1 ? cj->groups : 0,
                         .bf16 = cj->bf16};
    int np = g->n % units ? 2 : 1;
    for (int k = 0; k < np; k++) {
        dg.n = g->n / units + k;
        if (!(j.plan[k] = vg__dconv_plan_get(mode, &dg))) return VG_OK;
    }
    if (np == 1) j.plan[1] = j.plan[0];
    size_t wb[2] = {vg__dconv_weights_bytes(j.plan[0]), np > 1 ? vg__dconv_weights_bytes(j.plan[1]) : 0};
    j.scratch_bytes = vg__dconv_scratch_bytes(j.plan[0]);
    if (np > 1 && vg__dconv_scratch_bytes(j.plan[1]) > j.scratch_bytes) j.scratch_bytes = vg__dconv_scratch_bytes(j.plan[1]);
    size_t shared = 0;
    if (mode == VG__DCONV_BWD_WEIGHTS) {
        j.wpart_bytes = wb[0] > wb[1] ? wb[0] : wb[1];
        j.unit_stride = j.scratch_bytes + j.wpart_bytes + ((size_t)(j.fsz + g->co) * sizeof(float) + 63) / 64 * 64;
    } else {
        shared = wb[0] + wb[1];
        j.unit_stride = j.scratch_bytes;
    }
    /* bfloat16: the operands converted (x and/or dy), after the weights */
    size_t nx = (size_t)(g->n * g->h * g->w * g->ci), ndy = (size_t)(g->n * g->oh * g->ow * g->co);
    size_t cvt = !cj->bf16 ? 0 : mode == VG__DCONV_FWD ? nx : mode == VG__DCONV_BWD_DATA ? ndy : nx + ndy;
    size_t cvt_bytes = (cvt * 2 + 63) / 64 * 64;
    shared += cvt_bytes;
    size_t total = shared + j.unit_stride * (size_t)units;
    conv_scratch *held = NULL;
    char *scratch = NULL;
    if (total) {
        scratch = scratch_get(ctx, total, &held);
        if (!scratch) return vg__kctx_status(ctx)->code;
    }
    j.unit_mem = scratch + shared;
    bool ok = true;
    uint16_t *cvt16 = cvt ? (uint16_t *)(scratch + shared - cvt_bytes) : NULL;
    if (cvt16 && mode != VG__DCONV_BWD_DATA) vg__f32_to_bf16_n((const float *)cj->x, cvt16, nx);
    if (cvt16 && mode != VG__DCONV_FWD)
        vg__f32_to_bf16_n((const float *)cj->dy, cvt16 + (mode == VG__DCONV_BWD_WEIGHTS ? nx : 0), ndy);
    if (mode == VG__DCONV_BWD_WEIGHTS) {
        j.in = cvt16 ? (const float *)cvt16 : (const float *)cj->x;
        j.w[0] = cvt16 ? (const float *)(cvt16 + nx) : (const float *)cj->dy;
        j.out = (float *)cj->out;
        j.in_img = g->h * g->w * g->ci;
        j.out_img = g->oh * g->ow * g->co;
    } else {
        j.in = cvt16 ? (const float *)cvt16 : (const float *)(mode == VG__DCONV_FWD ? cj->x : cj->dy);
        j.out = (float *)cj->out;
        j.in_img = mode == VG__DCONV_FWD ? g->h * g->w * g->ci : g->oh * g->ow * g->co;
        j.out_img = mode == VG__DCONV_FWD ? g->oh * g->ow * g->co : g->h * g->w * g->ci;
        for (int k = 0; k < np && ok; k++) {
            if (!wb[k]) {
                j.w[k] = (const float *)cj->f;
                continue;
            }
            float *wbuf = (float *)(scratch + (k ? wb[0] : 0));
            ok = vg__dconv_reorder_weights(j.plan[k], (const float *)cj->f, wbuf);
            j.w[k] = wbuf;
        }
        if (np == 1) j.w[1] = j.w[0];
    }
    if (ok) {
        if (units == 1) xconv_units(&j, 0, 1);
        else vg__kctx_parallel_for(ctx, units, (int64_t)(flops / (double)units), xconv_units, &j);
        ok = !atomic_load(&j.failed);
    }
    if (ok && mode == VG__DCONV_BWD_WEIGHTS) {
        for (int64_t u = 1; u < units; u++) {
            const float *p = (const float *)(j.unit_mem + (size_t)u * j.unit_stride + j.scratch_bytes + j.wpart_bytes);
            for (int64_t i = 0; i < j.fsz; i++) j.out[i] += p[i];
            if (dbias)
                for (int64_t i = 0; i < g->co; i++) dbias[i] += p[j.fsz + i];
        }
    }
    if (scratch) scratch_put(held, scratch);
    if (ok) atomic_fetch_add(&g_dnnl_conv_runs, 1);
    *done = ok;
    return VG_OK;
}

/* Depthwise convolutions on oneDNN's grouped primitives (see nn_internal.h): the
 * same batch split, plans and scratch as the plain convolutions. */
vg_code vg__conv_depthwise_dnnl(vg__kctx *ctx, int mode, const vg__dw_geom *dg, const float *x, const float *f,
                                const float *dy, float *out, bool *done) {
    *done = false;
    conv_job cj = {.mode = mode == 0 ? CONV_FWD : mode == 1 ? CONV_BP_INPUT : CONV_BP_FILTER, .dt = VG_FLOAT,
                   .groups = dg->c};
    cj.g = (conv_geom){.n = dg->n, .h = dg->h, .w = dg->w, .ci = dg->c, .kh = dg->kh, .kw = dg->kw,
                       .co = dg->c * dg->m, .sh = dg->sh, .sw = dg->sw, .oh = dg->oh, .ow = dg->ow, .pt = dg->pt,
                       .pl = dg->pl};
    cj.x = (const char *)x, cj.f = (const char *)f, cj.dy = (const char *)dy, cj.out = (char *)out;
    if (dg->c < 2 || dg->n == 0) return VG_OK;
    return xconv_try(ctx, &cj, NULL, false, NULL, done);
}

/* ------------------------------------------------------------------------ */
/* Winograd F(2x2,5x5) (conv_winograd.c): float32, 5x5 windows, stride 1, channel
 * counts a multiple of 16, AVX-512. The batch is split into one run of images per
 * unit; the filter is transformed once per call; filter gradients are summed per unit
 * in the transform domain, added up, then transformed back once. */

static atomic_int g_wino = 1; /* vg__conv_set_winograd: 0 off, 1 where it wins, 2 always */
static atomic_llong g_wino_runs;

int vg__conv_set_winograd(int mode) {
    atomic_store(&g_wino, mode < 0 ? 0 : mode > 2 ? 2 : mode);
    return vg__wino_cpu_ok();
}

long long vg__conv_winograd_runs(void) { return atomic_load(&g_wino_runs); }

/* Winograd work is cut into pieces of the batch that the threads claim as they go
 * (vg__kctx_parallel_for_slots): on a VM whose vCPUs run at different speeds once both
 * are busy (the slower 10-30% behind in some minutes) or whose other vCPU stalls for a
 * while, fixed halves make the faster thread wait for the slower one at the end of
 * every call. Forward and input gradient: WCONV_PIECES pieces per thread, each image's
 * output computed alone, so the result does not depend on who ran what. Filter
 * gradient: WCONV_BF_PIECES pieces per thread, each summing its images into its own
 * partial, the partials then added in piece order: the same sums, in the same order,
 * whichever thread ran each piece (bit-identical run to run at a given thread count). */
#define WCONV_PIECES 4
#define WCONV_BF_PIECES 2
#define WCONV_MAX_UNITS 256

typedef struct wconv_job {
    int mode;
    vg__wino_conv c;
    const float *in, *dy, *f;
    int64_t ci, co;      /* the filter's (HWIO) */
    float *out;
    int64_t n, units;
    float *mem;          /* units * stride floats: each thread slot's scratch */
    size_t stride, scratch;
    int64_t pieces;      /* BP_FILTER: pieces of the batch, each with a partial sum */
    float *part;         /* BP_FILTER: pieces * fsz floats of transform-domain partial sums */
    size_t fsz;
    const void *pool;    /* FWD: the fused max pool's pool_job, run per image */
    int64_t pool_oh;
} wconv_job;

static void wconv_pool(void *arg, int64_t img) {
    const wconv_job *j = arg;
    pool_fwd_rows((void *)j->pool, img * j->pool_oh, (img + 1) * j->pool_oh);
}

/* Images [i0, i1), one piece, with the scratch of the calling thread's slot; for the
 * filter gradient into the piece's own partial sum. */
static void wconv_images(void *arg, int64_t i0, int64_t i1, int slot) {
    const wconv_job *j = arg;
    float *mem = j->mem + (size_t)slot * j->stride;
    if (j->mode == CONV_BP_FILTER) {
        /* pieces are [n c / P, n (c + 1) / P), P <= n; a range normally is one piece, but
         * a caller that runs the whole batch itself (one thread, or no pool) still fills
         * every piece's partial, which wconv_grad_blocks adds up */
        for (int64_t c = (i0 * j->pieces + j->n - 1) / j->n; c < j->pieces; c++) {
            int64_t b = j->n * c / j->pieces, e = j->n * (c + 1) / j->pieces;
            if (b >= i1) break;
            vg__wino_bf_images(&j->c, j->in, j->dy, b, e, j->part + (size_t)c * j->fsz, true, mem);
        }
    } else {
        vg__wino_conv_images(&j->c, j->in, j->out, i0, i1, mem, j->pool ? wconv_pool : NULL, (void *)j);
    }
}

/* Rows [r0, r1) of the transformed filter. */
static void wconv_filter_rows(void *arg, int64_t r0, int64_t r1) {
    const wconv_job *j = arg;
    vg__wino_filter(j->f, j->ci, j->co, j->mode == CONV_BP_INPUT, (float *)j->c.U, r0, r1);
}

/* Filter gradient, blocks [b0, b1) of 16 elements of each point's matrix: the units'
 * sums added into unit 0's, then transformed back into the HWIO gradient. */
static void wconv_grad_blocks(void *arg, int64_t b0, int64_t b1) {
    const wconv_job *j = arg;
    const int64_t n = j->ci * j->co;
    float *acc = j->part;
    for (int64_t c = 1; c < j->pieces; c++) {
        const float *part = j->part + (size_t)c * j->fsz;
        for (int64_t p = 0; p < 36; p++)
            for (int64_t e = 16 * b0; e < 16 * b1; e++) acc[p * n + e] += part[p * n + e];
    }
    vg__wino_filter_grad_out(acc, j->ci, j->co, j->out, 16 * b0, 16 * b1);
}

/* Runs the convolution with Winograd if it applies (and, in mode 1, where it was
 * measured faster); *done tells whether it did. Fails with RESOURCE_EXHAUSTED. */
static vg_code wconv_try(vg__kctx *ctx, const conv_job *cj, bool *done) {
    const conv_geom *g = &cj->g;
    *done = false;
    int use = atomic_load(&g_wino);
    if (!use || cj->dt != VG_FLOAT || g->kh != 5 || g->kw != 5 || g->sh != 1 || g->sw != 1 || !vg__wino_cpu_ok())
        return VG_OK;
    wconv_job j = {.mode = cj->mode, .n = g->n};
    if (cj->mode == CONV_BP_INPUT) {
        j.c = (vg__wino_conv){.ih = g->oh, .iw = g->ow, .ic = g->co, .oh = g->h, .ow = g->w, .oc = g->ci,
                              .pt = g->kh - 1 - g->pt, .pl = g->kw - 1 - g->pl};
        j.in = (const float *)cj->dy;
    } else {
        j.c = (vg__wino_conv){.ih = g->h, .iw = g->w, .ic = g->ci, .oh = g->oh, .ow = g->ow, .oc = g->co,
                              .pt = g->pt, .pl = g->pl};
        j.in = (const float *)cj->x;
        j.dy = (const float *)cj->dy;
    }
    if (!vg__wino_channels_ok(j.c.ic, j.c.oc) || j.c.oh <= 0 || j.c.ow <= 0) return VG_OK;
    /* Where it wins (measured against oneDNN 2.6's primitives, 1 thread, AVX-512, 5x5
     * SAME; ms off/on): 64 x 14x14 32->64 (the CNN's conv2) forward 5.7/3.0, input
     * gradient 6.5/3.2, filter gradient 6.0/3.6; 4 x 14x14: 0.35/0.22; 16 x 28x28 16->32:
     * 1.5/0.94; 2 x 56x56 64->64: 6.0/3.0. It loses or ties with few tiles per filter
     * (8 x 7x7 64->64 filter gradient 0.30/0.34; 1 x 8x8 128->128; 1 x 7x7 16->16) and
     * where 2x2 tiles overhang much (7x7: 49 of 64 outputs used); 1 x 14x14 32->64 still
     * wins (0.084/0.068). Mode 1 takes it with at least 32 tiles, at least 4 tiles per
     * 16x16 channel block of the filter, and 80% of the tiles' outputs used. */
    int64_t th = (j.c.oh + 1) / 2, tw = (j.c.ow + 1) / 2, tiles = g->n * th * tw;
    if (use == 1 && (tiles < 32 || tiles * 256 < 4 * j.c.ic * j.c.oc || j.c.oh * j.c.ow * 5 < th * tw * 16))
        return VG_OK;
    int64_t groups = cj->groups > 1 ? cj->groups : 1;
    double flops = 2.0 * (double)(g->n * g->oh * g->ow) * (double)(g->kh * g->kw * g->ci * g->co) / (double)groups;
    int64_t units = image_units(ctx, flops, g->n);
    if (units > WCONV_MAX_UNITS) units = WCONV_MAX_UNITS;
    j.units = units;
    size_t fsz = vg__wino_filter_floats(j.c.ic, j.c.oc);
    j.pieces = cj->mode != CONV_BP_FILTER ? 0
               : units == 1                      ? 1
               : units * WCONV_BF_PIECES < g->n  ? units * WCONV_BF_PIECES
                                                 : g->n;
    /* a filter-gradient piece holds at most ceil(n / pieces) images (wconv_images) */
    j.scratch = (cj->mode == CONV_BP_FILTER ? vg__wino_bf_scratch_floats(&j.c, (g->n + j.pieces - 1) / j.pieces)
                                            : vg__wino_conv_scratch_floats(&j.c));
    j.scratch = (j.scratch + 15) / 16 * 16;
    j.stride = j.scratch;
    j.fsz = fsz;
    /* U (FWD, BP_INPUT), then each slot's scratch, then (BP_FILTER) the partial sums */
    size_t total = (cj->mode != CONV_BP_FILTER ? fsz : 0) + j.stride * (size_t)units + fsz * (size_t)j.pieces;
    conv_scratch *held = NULL;
    float *scratch = (float *)scratch_get(ctx, total * sizeof(float), &held);
    if (!scratch) return vg__kctx_status(ctx)->code;
    j.mem = scratch + (cj->mode != CONV_BP_FILTER ? fsz : 0);
    j.part = j.mem + j.stride * (size_t)units;
    j.ci = g->ci, j.co = g->co;
    j.out = (float *)cj->out;
    if (cj->mode != CONV_BP_FILTER) {
        j.f = (const float *)cj->f;
        j.c.U = scratch;
        /* the filter transform (~80 flops per filter element), split over the threads */
        if (units == 1) wconv_filter_rows(&j, 0, j.c.ic);
        else vg__kctx_parallel_for(ctx, j.c.ic, 80 * 25 * j.c.oc, wconv_filter_rows, &j);
        if (cj->mode == CONV_FWD) {
            j.c.bias = (const float *)cj->bias;
            j.c.relu = cj->bias && cj->relu;
            j.pool = cj->bias && cj->relu ? cj->pool : NULL;
            j.pool_oh = cj->pool_oh;
        }
    }
    if (cj->mode == CONV_BP_FILTER) {
        if (units == 1) wconv_images(&j, 0, g->n, 0);
        else vg__kctx_parallel_for_slots(ctx, g->n, (int)units, j.pieces, wconv_images, &j);
    } else {
        if (units == 1) wconv_images(&j, 0, g->n, 0);
        else vg__kctx_parallel_for_slots(ctx, g->n, (int)units, units * WCONV_PIECES, wconv_images, &j);
    }
    if (cj->mode == CONV_BP_FILTER) {
        int64_t blocks = g->ci * g->co / 16;
        if (units == 1) wconv_grad_blocks(&j, 0, blocks);
        else vg__kctx_parallel_for(ctx, blocks, 36 * 16 * (units + 20), wconv_grad_blocks, &j);
    }
    scratch_put(held, (char *)scratch);
    atomic_fetch_add(&g_wino_runs, 1);
    *done = true;
    return VG_OK;
}

/* Runs a convolution: Winograd where it applies and wins, else oneDNN's primitives
 * (backend oneDNN), else the direct kernels when they apply, else im2col + GEMM. */
static vg_code conv_exec(vg__kctx *ctx, conv_job *j) {
    const conv_geom *cg = &j->g;
    if (j->dt == VG_FLOAT && vg__kctx_amp(ctx) &&
        j->mode != CONV_BP_FILTER && cg->ci >= 16 && (j->mode != CONV_BP_INPUT || cg->co >= 16)) {
        /* painted by the mixed-precision rewrite: bfloat16 on oneDNN; else float32 below on
         * the bfloat16 values the executor rounded the inputs to, which gives the same sums
         * (a product of two bfloat16 values is exact in float32; both accumulate in float32):
         * the float32 kernels stay where oneDNN 2.6's bfloat16 ones lose: few input channels
         * (the CNN's first layer, 11 ms against 1 ms forward) and every filter gradient (its
         * AMX backward-weights kernel: 14.7 ms on the CNN's 14x14x32->64 layer, float32 5.5) */
        bool done = false;
        j->bf16 = true;
        vg_code c = xconv_try(ctx, j, j->bias, j->relu, NULL, &done);
        j->bf16 = false;
        if (c != VG_OK || done) {
            j->epi_done = done;
            j->pool_done = done && j->pool && j->relu;
            return c;
        }
    }
    bool wdone = false;
    vg_code wc = wconv_try(ctx, j, &wdone);
    if (wc != VG_OK || wdone) {
        j->epi_done = wdone && j->mode == CONV_FWD;
        j->pool_done = j->epi_done && j->pool && j->relu;
        return wc;
    }
    bool xdone = false;
    vg_code xc = xconv_try(ctx, j, j->bias, j->relu, NULL, &xdone);
    if (xc != VG_OK || xdone) {
        j->epi_done = xdone;
        j->pool_done = xdone && j->pool && j->relu; /* xconv pooled each unit's images */
        return xc;
    }
#ifdef CONV_DIRECT
    bool done = false;
    vg_code c = dconv_try(ctx, j, &done);
    if (c != VG_OK || done) {
        j->epi_done = done && j->mode == CONV_FWD && j->dt == VG_FLOAT;
        j->pool_done = j->epi_done && j->pool;
        return c;
    }
#endif
    return conv_run(ctx, j);
}

/* -- Conv2D -- */

static vg_code shape_conv2d(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (check_real(op, 0, "input", VG_DTYPE_INVALID, st) || check_real(op, 1, "filter", dt, st)) return st->code;
    set_conv_defaults(op, dt);
    vg_shape x = vg__op_input_shape(op, 0), f = vg__op_input_shape(op, 1);
    if (check_rank4(&x, "input", st) || check_rank4(&f, "filter", st)) return st->code;
    win_attrs w;
    if (read_win_attrs(op, false, &w, st)) return st->code;
    int64_t xd[4] = {-1, -1, -1, -1}, fd[4] = {-1, -1, -1, -1}, od[4], pad;
    if (x.ndims == 4) memcpy(xd, x.dims, sizeof xd);
    if (f.ndims == 4) memcpy(fd, f.dims, sizeof fd);
    if (xd[3] >= 0 && fd[2] >= 0 && xd[3] != fd[2])
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                             (long long)xd[3], (long long)fd[2]);
    od[0] = xd[0];
    od[3] = fd[3];
    if (window_out(xd[1], fd[0], w.strides[1], w.same, &od[1], &pad, st) ||
        window_out(xd[2], fd[1], w.strides[2], w.same, &od[2], &pad, st))
        return st->code;
    return vg__op_set_single_output(op, dt, vg_shape_make(od, 4));
}

/* Checks a kernel input tensor: real dtype (== want if given) and rank 4. */
static vg_code kcheck4(vg__kctx *ctx, const vg_tensor *t, const char *what, vg_dtype want) {
    vg_dtype dt = vg_tensor_dtype(t);
    char b[128];
    vg_shape s = vg_tensor_shape(t);
    if ((dt != VG_FLOAT && dt != VG_DOUBLE) || (want != VG_DTYPE_INVALID && dt != want))
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s has unsupported dtype %s", what,
                             vg_dtype_name(dt));
    if (s.ndims != 4)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s must be 4-dimensional: %s", what,
                             vg_shape_str(&s, b, sizeof b));
    return VG_OK;
}

static vg_code kernel_conv2d(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *f = vg__kctx_input(ctx, 1), *y;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck4(ctx, x, "input", VG_DTYPE_INVALID) || kcheck4(ctx, f, "filter", dt)) return st->code;
    conv_job j = {.mode = CONV_FWD, .dt = dt};
    if (make_geom(vg__kctx_op(ctx), vg_tensor_dims(x), vg_tensor_dims(f), &j.g, st)) return st->code;
    // x is (N, H, W, Ci); f is (KH, KW, Ci, Co); y is (N, OH, OW, Co)
    int64_t od[4] = {j.g.n, j.g.oh, j.g.ow, j.g.co};
    if (vg__kctx_alloc_output(ctx, 0, dt, od, 4, &y)) return st->code;
    if (vg_tensor_num_elements(y) == 0) return VG_OK;
    if (j.g.kh * j.g.kw * j.g.ci == 0) {
        memset(vg_tensor_data(y), 0, vg_tensor_nbytes(y));
        return VG_OK;
    }
    j.x = vg_tensor_data(x);
    j.f = vg_tensor_data(f);
    j.out = vg_tensor_data(y);
    return conv_exec(ctx, &j);
}

/* -- _VigilFusedConv2DBias[Relu](input, filter, bias): Conv2D + BiasAdd [+ Relu] --
 * Only the executor's plan-time fusion (src/exec/fuse.c) puts these in a plan; attrs
 * are the Conv2D op's. On oneDNN the bias and ReLU are the primitive's epilogue; else
 * one pass over the output after the convolution. */

typedef struct epi_job {
    vg_dtype dt;
    bool relu;
    int64_t co;
    const void *b;
    void *y;
} epi_job;

static void epi_rows(void *arg, int64_t r0, int64_t r1) {
    const epi_job *j = arg;
    const int64_t co = j->co;
    if (j->dt == VG_DOUBLE) {
        const double *b = j->b;
        for (int64_t r = r0; r < r1; r++) {
            double *y = (double *)j->y + r * co;
            for (int64_t c = 0; c < co; c++) {
                double v = y[c] + b[c];
                y[c] = j->relu && v < 0 ? 0 : v;
            }
        }
        return;
    }
    const float *b = j->b;
    for (int64_t r = r0; r < r1; r++) {
        float *y = (float *)j->y + r * co;
        if (j->relu)
            for (int64_t c = 0; c < co; c++) {
                float v = y[c] + b[c];
                y[c] = v < 0 ? 0 : v;
            }
        else
            for (int64_t c = 0; c < co; c++) y[c] += b[c];
    }
}

typedef struct pool_job pool_job;
static size_t pool_job_size(void);
static vg_code pool_job_2x2(vg__kctx *ctx, const vg_tensor *x, vg_tensor **y, pool_job *pj);
static void pool_run_all(vg__kctx *ctx, pool_job *j);

static vg_code kernel_fused_conv2d(vg__kctx *ctx, bool relu, bool pool) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *f = vg__kctx_input(ctx, 1), *b = vg__kctx_input(ctx, 2), *y;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck4(ctx, x, "input", VG_DTYPE_INVALID) || kcheck4(ctx, f, "filter", dt)) return st->code;
    if (!b) return vg_status_set(st, VG_INVALID_ARGUMENT, "fused Conv2D without a bias input");
    conv_job j = {.mode = CONV_FWD, .dt = dt};
    if (make_geom(vg__kctx_op(ctx), vg_tensor_dims(x), vg_tensor_dims(f), &j.g, st)) return st->code;
    char sb[128];
    if (vg_tensor_dtype(b) != dt || vg_tensor_ndims(b) != 1 || vg_tensor_dim(b, 0) != j.g.co)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Must provide as many biases as the last dimension of the input tensor: %s (%s) vs. %lld",
                             vg__tshape_str(b, sb, sizeof sb), vg_dtype_name(vg_tensor_dtype(b)), (long long)j.g.co);
    int64_t od[4] = {j.g.n, j.g.oh, j.g.ow, j.g.co};
    if (vg__kctx_alloc_output(ctx, 0, dt, od, 4, &y)) return st->code;
    if (vg_tensor_num_elements(y) == 0) return VG_OK;
    j.x = vg_tensor_data(x);
    j.f = vg_tensor_data(f);
    j.out = vg_tensor_data(y);
    pool_job *pj = NULL;
    vg_tensor *py = NULL;
    if (pool) { /* output 1: MaxPool 2x2 / 2 VALID of output 0 */
        pj = vg__malloc(pool_job_size());
        if (!pj) return VG_OOM(st, "fused max pool");
        if (pool_job_2x2(ctx, y, &py, pj)) {
            vg__free(pj);
            return st->code;
        }
        j.pool = pj;
        j.pool_oh = vg_tensor_dim(py, 1);
    }
    if (j.g.kh * j.g.kw * j.g.ci == 0) {
        memset(vg_tensor_data(y), 0, vg_tensor_nbytes(y));
    } else {
        j.bias = vg_tensor_data(b);
        j.relu = relu;
        if (conv_exec(ctx, &j)) {
            vg__free(pj);
            return st->code;
        }
    }
    if (!j.epi_done) {
        epi_job e = {dt, relu, j.g.co, vg_tensor_data(b), j.out};
        int64_t rows = j.g.n * j.g.oh * j.g.ow;
        if (rows * j.g.co < 65536 || vg__kctx_num_threads(ctx) <= 1) epi_rows(&e, 0, rows);
        else vg__kctx_parallel_for(ctx, rows, j.g.co, epi_rows, &e);
    }
    if (pj && !j.pool_done) pool_run_all(ctx, pj);
    vg__free(pj);
    return VG_OK;
}
static vg_code kernel_fused_conv2d_bias(vg__kctx *ctx) { return kernel_fused_conv2d(ctx, false, false); }
static vg_code kernel_fused_conv2d_bias_relu(vg__kctx *ctx) { return kernel_fused_conv2d(ctx, true, false); }
/* _VigilFusedConv2DBiasReluMaxPool(input, filter, bias): as _VigilFusedConv2DBiasRelu,
 * and output 1 = MaxPool (2x2 window, stride 2, VALID, NHWC) of output 0, pooled image
 * by image while it is in cache on the direct path (fuse.c: where such a MaxPool reads
 * the Relu, as in conv -> bias -> relu -> max_pool). */
static vg_code kernel_fused_conv2d_bias_relu_pool(vg__kctx *ctx) { return kernel_fused_conv2d(ctx, true, true); }

/* _VigilFusedForward: the BiasAdd / Relu nodes of a fused chain pass input 0 on. */
static vg_code kernel_fused_forward(vg__kctx *ctx) {
    vg_tensor *x = vg__kctx_input(ctx, 0);
    if (!x) return vg_status_set(vg__kctx_status(ctx), VG_INTERNAL, "fused forward without an input");
    vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
    return VG_OK;
}

static vg_code shape_fused_conv2d(vg_op *op, vg_status *st) {
    if (shape_conv2d(op, st)) return st->code;
    return check_real(op, 2, "bias", vg__op_input_dtype(op, 0), st);
}

static vg_code shape_fused_forward(vg_op *op, vg_status *st) {
    (void)st;
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), vg__op_input_shape(op, 0));
}

/* TF's _Conv2DGrad: Conv2DBackpropInput(Shape(x), f, dy), Conv2DBackpropFilter(x, Shape(f), dy). */
static void win_attr_copy(const vg_op *op, int64_t strides[4], const char **padding) {
    const int64_t *v;
    int n;
    static char same[] = "SAME", valid[] = "VALID";
    const char *s;
    size_t len;
    strides[0] = strides[1] = strides[2] = strides[3] = 1;
    if (vg_op_attr_int_list(op, "strides", &v, &n) && n == 4) memcpy(strides, v, sizeof(int64_t) * 4);
    *padding = vg_op_attr_string(op, "padding", &s, &len) && len == 4 && memcmp(s, "SAME", 4) == 0 ? same : valid;
}

static vg_code grad_conv2d(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t strides[4];
    const char *padding;
    win_attr_copy(op, strides, &padding);
    vg_output x = vg_op_input(op, 0), f = vg_op_input(op, 1);
    dx[0] = vg_conv2d_backprop_input(g, vg_shape_op(g, x, VG_INT32, "Shape"), f, dy[0], strides, padding, NULL);
    dx[1] = vg_conv2d_backprop_filter(g, x, vg_shape_op(g, f, VG_INT32, "Shape_1"), dy[0], strides, padding, NULL);
    return vg_graph_status(g, NULL);
}

/* -- Conv2DBackpropInput(input_sizes, filter, out_backprop) -- */

/* Checks that dy has the conv's output shape (build time, unknown dims pass). */
static vg_code check_dy_shape(const vg_op *op, const vg_shape *x, const vg_shape *f, const vg_shape *dy, bool pool,
                              vg_status *st) {
    win_attrs w;
    if (read_win_attrs(op, pool, &w, st)) return st->code;
    if (x->ndims != 4 || dy->ndims != 4) return VG_OK;
    int64_t kh = pool ? w.ksize[1] : (f->ndims == 4 ? f->dims[0] : -1);
    int64_t kw = pool ? w.ksize[2] : (f->ndims == 4 ? f->dims[1] : -1);
    int64_t co = pool ? x->dims[3] : (f->ndims == 4 ? f->dims[3] : -1);
    int64_t want[4] = {x->dims[0], -1, -1, co}, pad;
    if (window_out(x->dims[1], kh, w.strides[1], w.same, &want[1], &pad, st) ||
        window_out(x->dims[2], kw, w.strides[2], w.same, &want[2], &pad, st))
        return st->code;
    for (int i = 0; i < 4; i++) {
        if (want[i] >= 0 && dy->dims[i] >= 0 && want[i] != dy->dims[i]) {
            char a[128], b[128];
            vg_shape ws = vg_shape_make(want, 4);
            return vg_status_set(st, VG_INVALID_ARGUMENT, "out_backprop has shape %s but the forward output is %s",
                                 vg_shape_str(dy, a, sizeof a), vg_shape_str(&ws, b, sizeof b));
        }
    }
    return VG_OK;
}

/* Shape function of Conv2DBackpropInput (sizes = 0: input_sizes, T from the filter)
 * and Conv2DBackpropFilter (sizes = 1: filter_sizes, T from the input); the output has
 * the shape the sizes give. */
static vg_code shape_conv2d_bp(vg_op *op, int sizes, vg_status *st) {
    int t = sizes == 0 ? 1 : 0;
    const char *tname = sizes == 0 ? "filter" : "input";
    vg_dtype dt = vg__op_input_dtype(op, t);
    if (check_real(op, t, tname, VG_DTYPE_INVALID, st) || check_real(op, 2, "out_backprop", dt, st)) return st->code;
    set_conv_defaults(op, dt);
    vg_shape x, f, dy = vg__op_input_shape(op, 2);
    vg_shape *given = sizes == 0 ? &x : &f, *known = sizes == 0 ? &f : &x;
    *known = vg__op_input_shape(op, t);
    if (shape_from_tensor_input(op, sizes, sizes == 0 ? "input_sizes" : "filter_sizes", given, st) ||
        check_rank4(known, tname, st) || check_rank4(&dy, "out_backprop", st) ||
        check_dy_shape(op, &x, &f, &dy, false, st))
        return st->code;
    if (known->ndims == 4 && x.dims[3] >= 0 && f.dims[2] >= 0 && x.dims[3] != f.dims[2])
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input and filter must have the same depth: %lld vs %lld",
                             (long long)x.dims[3], (long long)f.dims[2]);
    return vg__op_set_single_output(op, dt, *given);
}

static vg_code shape_conv2d_bp_input(vg_op *op, vg_status *st) { return shape_conv2d_bp(op, 0, st); }

/* Checks dy against the geometry at run time. */
static vg_code kcheck_dy(vg__kctx *ctx, const vg_tensor *dy, const conv_geom *g, const char *what) {
    int64_t want[4] = {g->n, g->oh, g->ow, g->co};
    char a[128], b[128];
    if (!dims_eq(dy, want))
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s has shape %s, expected %s", what,
                             vg__tshape_str(dy, a, sizeof a), dstr(want, b, sizeof b));
    return VG_OK;
}

/* Kernel of Conv2DBackpropInput (sizes = 0: input_sizes, filter, out_backprop) and
 * Conv2DBackpropFilter (sizes = 1: input, filter_sizes, out_backprop), TF's checks in
 * TF's order. The output (the shape the sizes give) is zero-filled when nothing
 * accumulates into it. */
static vg_code kernel_conv2d_bp(vg__kctx *ctx, int sizes) {
    vg_status *st = vg__kctx_status(ctx);
    bool bp_input = sizes == 0;
    const char *tname = bp_input ? "filter" : "input";
    vg_tensor *in = vg__kctx_input(ctx, bp_input ? 1 : 0), *dy = vg__kctx_input(ctx, 2), *out;
    vg_dtype dt = vg_tensor_dtype(in);
    int64_t od[4];
    bool bad = bp_input ? kread_sizes(ctx, 0, "input_sizes", od) || kcheck4(ctx, in, tname, VG_DTYPE_INVALID)
                        : kcheck4(ctx, in, tname, VG_DTYPE_INVALID) || kread_sizes(ctx, 1, "filter_sizes", od);
    if (bad || kcheck4(ctx, dy, "out_backprop", dt)) return st->code;
    conv_job j = {.mode = bp_input ? CONV_BP_INPUT : CONV_BP_FILTER, .dt = dt};
    const int64_t *xd = bp_input ? od : vg_tensor_dims(in), *fd = bp_input ? vg_tensor_dims(in) : od;
    if (make_geom(vg__kctx_op(ctx), xd, fd, &j.g, st) || kcheck_dy(ctx, dy, &j.g, "out_backprop")) return st->code;
    // dy is (N, OH, OW, Co); f is (KH, KW, Ci, Co); x and dx are (N, H, W, Ci); df is like f
    if (vg__kctx_alloc_output(ctx, 0, dt, od, 4, &out)) return st->code;
    if (vg_tensor_num_elements(out) == 0) return VG_OK;
    if (vg_tensor_num_elements(dy) == 0 || (bp_input && j.g.kh * j.g.kw == 0)) {
        memset(vg_tensor_data(out), 0, vg_tensor_nbytes(out));
        return VG_OK;
    }
    if (bp_input)
        j.f = vg_tensor_data(in);
    else
        j.x = vg_tensor_data(in);
    j.dy = vg_tensor_data(dy);
    j.out = vg_tensor_data(out);
    return conv_exec(ctx, &j);
}

static vg_code kernel_conv2d_bp_input(vg__kctx *ctx) { return kernel_conv2d_bp(ctx, 0); }

/* The gradients of the two backprop ops (bp_input: Conv2DBackpropInput(sizes, f, dy),
 * else Conv2DBackpropFilter(x, sizes, dy)) for grad:
 * _Conv2DBackpropInputGrad: (none, Conv2DBackpropFilter(grad, Shape(f), dy), Conv2D(grad, f));
 * _Conv2DBackpropFilterGrad: (Conv2DBackpropInput(Shape(x), grad, dy), none, Conv2D(x, grad)). */
static vg_code grad_conv2d_bp(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx, bool bp_input) {
    int64_t strides[4];
    const char *padding;
    win_attr_copy(op, strides, &padding);
    vg_output other = vg_op_input(op, bp_input ? 1 : 0), d = vg_op_input(op, 2); /* f or x */
    vg_output shape = vg_shape_op(g, other, VG_INT32, "Shape");
    dx[bp_input ? 0 : 1] = (vg_output){NULL, 0};
    if (bp_input) {
        dx[1] = vg_conv2d_backprop_filter(g, dy[0], shape, d, strides, padding, NULL);
        dx[2] = vg_conv2d(g, dy[0], other, strides, padding, NULL);
    } else {
        dx[0] = vg_conv2d_backprop_input(g, shape, dy[0], d, strides, padding, NULL);
        dx[2] = vg_conv2d(g, other, dy[0], strides, padding, NULL);
    }
    return vg_graph_status(g, NULL);
}

static vg_code grad_conv2d_bp_input(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    return grad_conv2d_bp(g, op, dy, dx, true);
}

/* -- Conv2DBackpropFilter(input, filter_sizes, out_backprop) -- */

static vg_code shape_conv2d_bp_filter(vg_op *op, vg_status *st) { return shape_conv2d_bp(op, 1, st); }

static vg_code kernel_conv2d_bp_filter(vg__kctx *ctx) { return kernel_conv2d_bp(ctx, 1); }

static vg_code grad_conv2d_bp_filter(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    return grad_conv2d_bp(g, op, dy, dx, false);
}

/* ------------------------------------------------------------------------ */
/* Pooling kernels. Windows are clipped to the input: padding never counts, neither
 * for the max nor for the average's divisor (as TF). */

enum { POOL_MAX, POOL_AVG };

/* The clipped window [*y0, *y1) x [*x0, *x1) of output (oy, ox). */
static void pool_window(const conv_geom *g, int64_t oy, int64_t ox, int64_t *y0, int64_t *y1, int64_t *x0, int64_t *x1) {
    int64_t ys = oy * g->sh - g->pt, xs = ox * g->sw - g->pl;
    *y0 = ys < 0 ? 0 : ys;
    *y1 = ys + g->kh < g->h ? ys + g->kh : g->h;
    *x0 = xs < 0 ? 0 : xs;
    *x1 = xs + g->kw < g->w ? xs + g->kw : g->w;
}

/* The running argmax of a max-pool window over C channels: where s beats best, take s
 * and its offset off + c (first maximum wins on ties). Written with integer masks so
 * that GCC vectorizes it (a branch here mispredicts on every other element). */
static inline __attribute__((always_inline)) void argmax_update_f32(const float *restrict s, float *restrict best, int32_t *restrict idx, int32_t off,
                              int64_t C) {
    for (int32_t c = 0; c < (int32_t)C; c++) {
        float v = s[c], b = best[c];
        int32_t m = -(int32_t)(v > b);
        best[c] = v > b ? v : b;
        idx[c] = (idx[c] & ~m) | ((off + c) & m);
    }
}
static inline __attribute__((always_inline)) void argmax_update_f64(const double *restrict s, double *restrict best, int64_t *restrict idx, int64_t off,
                              int64_t C) {
    for (int64_t c = 0; c < C; c++) {
        double v = s[c], b = best[c];
        int64_t m = -(int64_t)(v > b);
        best[c] = v > b ? v : b;
        idx[c] = (idx[c] & ~m) | ((off + c) & m);
    }
}

/* o[c] = dy[c] where idx[c] == off + c (the window's argmax is here), else 0: bit masks
 * rather than a select so that GCC vectorizes it. */
static inline __attribute__((always_inline)) void argmax_write_f32(float *restrict o, const float *restrict d, const int32_t *restrict idx, int32_t off,
                             int64_t C) {
    for (int32_t c = 0; c < (int32_t)C; c++) {
        int32_t m = -(int32_t)(idx[c] == off + c), b;
        memcpy(&b, &d[c], sizeof b);
        b &= m;
        memcpy(&o[c], &b, sizeof b);
    }
}
static inline __attribute__((always_inline)) void argmax_write_f64(double *restrict o, const double *restrict d, const int64_t *restrict idx, int64_t off,
                             int64_t C) {
    for (int64_t c = 0; c < C; c++) {
        int64_t m = -(int64_t)(idx[c] == off + c), b;
        memcpy(&b, &d[c], sizeof b);
        b &= m;
        memcpy(&o[c], &b, sizeof b);
    }
}

/* True when the pooling windows are disjoint and together cover the whole input, so
 * that a max-pool gradient can write every input element exactly once. */
static bool windows_tile_input(const conv_geom *g) {
    return g->sh == g->kh && g->sw == g->kw && g->pt == 0 && g->pl == 0 && g->oh * g->sh >= g->h &&
           g->ow * g->sw >= g->w;
}

#define POOL_DEFINE(T, SFX, IT)                                                                             \
    /* rows r = (img, oy) of y (N, OH, OW, C) from x (N, H, W, C) */                                    \
    VG_SIMD_CLONES static void pool_rows_##SFX(const conv_geom *g, int kind, const T *x, T *y, int64_t r0, int64_t r1) { \
        const int64_t C = g->ci;                                                                        \
        for (int64_t r = r0; r < r1; r++) {                                                             \
            int64_t img = r / g->oh, oy = r % g->oh;                                                    \
            const T *xi = x + img * g->h * g->w * C;                                                    \
            for (int64_t ox = 0; ox < g->ow; ox++) {                                                    \
                int64_t y0, y1, x0, x1;                                                                 \
                pool_window(g, oy, ox, &y0, &y1, &x0, &x1);                                             \
                T *o = y + (r * g->ow + ox) * C;                                                        \
                bool first = true;                                                                      \
                for (int64_t iy = y0; iy < y1; iy++)                                                    \
                    for (int64_t ix = x0; ix < x1; ix++) {                                              \
                        const T *s = xi + (iy * g->w + ix) * C;                                         \
                        if (first) for (int64_t c = 0; c < C; c++) o[c] = s[c];                         \
                        else if (kind == POOL_AVG) for (int64_t c = 0; c < C; c++) o[c] += s[c];        \
                        else for (int64_t c = 0; c < C; c++) o[c] = s[c] > o[c] ? s[c] : o[c];          \
                        first = false;                                                                  \
                    }                                                                                   \
                if (first) for (int64_t c = 0; c < C; c++) o[c] = 0;                                    \
                else if (kind == POOL_AVG) {                                                            \
                    T inv = (T)1 / (T)((y1 - y0) * (x1 - x0));                                          \
                    for (int64_t c = 0; c < C; c++) o[c] *= inv;                                        \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* dx of image img (zeroed here) from dy (N, OH, OW, C). Max: the gradient goes to the first        \
     * maximum of each window in row-major order (TF's argmax); best/idx are C-sized scratch, idx of    \
     * the element width so that the branch-free select vectorizes. */                                  \
    VG_SIMD_CLONES static void pool_grad_img_##SFX(const conv_geom *g, int kind, const T *x, const T *dy, T *dx,       \
                                    int64_t img, T *restrict best, IT *restrict idx) {                  \
        const int64_t C = g->ci, isz = g->h * g->w * C;                                                 \
        const T *xi = x ? x + img * isz : NULL;                                                         \
        T *di = dx + img * isz;                                                                         \
        /* disjoint windows tiling the input: write dx directly, no zeroing nor scatter */              \
        const bool tiled = kind == POOL_MAX && windows_tile_input(g);                                   \
        if (!tiled) memset(di, 0, (size_t)isz * sizeof(T));                                             \
        for (int64_t oy = 0; oy < g->oh; oy++)                                                          \
            for (int64_t ox = 0; ox < g->ow; ox++) {                                                    \
                int64_t y0, y1, x0, x1;                                                                 \
                pool_window(g, oy, ox, &y0, &y1, &x0, &x1);                                             \
                const T *d = dy + ((img * g->oh + oy) * g->ow + ox) * C;                                \
                if (y1 <= y0 || x1 <= x0) continue;                                                     \
                if (kind == POOL_AVG) {                                                                 \
                    T inv = (T)1 / (T)((y1 - y0) * (x1 - x0));                                          \
                    for (int64_t iy = y0; iy < y1; iy++)                                                \
                        for (int64_t ix = x0; ix < x1; ix++) {                                          \
                            T *o = di + (iy * g->w + ix) * C;                                           \
                            for (int64_t c = 0; c < C; c++) o[c] += d[c] * inv;                         \
                        }                                                                               \
                    continue;                                                                           \
                }                                                                                       \
                IT off0 = (IT)((y0 * g->w + x0) * C);                                                   \
                for (int64_t c = 0; c < C; c++) {                                                       \
                    best[c] = xi[off0 + c];                                                             \
                    idx[c] = off0 + (IT)c;                                                              \
                }                                                                                       \
                for (int64_t iy = y0; iy < y1; iy++)                                                    \
                    for (int64_t ix = x0; ix < x1; ix++) {                                              \
                        IT off = (IT)((iy * g->w + ix) * C);                                            \
                        argmax_update_##SFX(xi + off, best, idx, off, C);                               \
                    }                                                                                   \
                if (!tiled) {                                                                           \
                    for (int64_t c = 0; c < C; c++) di[idx[c]] += d[c];                                 \
                    continue;                                                                           \
                }                                                                                       \
                for (int64_t iy = y0; iy < y1; iy++)                                                    \
                    for (int64_t ix = x0; ix < x1; ix++) {                                              \
                        IT off = (IT)((iy * g->w + ix) * C);                                            \
                        argmax_write_##SFX(di + off, d, idx, off, C);                                   \
                    }                                                                                   \
            }                                                                                           \
    }

POOL_DEFINE(float, f32, int32_t)
POOL_DEFINE(double, f64, int64_t)

typedef struct pool_job {
    conv_geom g;
    int kind;
    vg_dtype dt;
    const char *x, *dy;
    char *out;
    char *scratch;          /* grad: per unit idx (C int64 slots) + best (C values) */
    size_t scratch_stride;
    int64_t units;          /* grad: units over images */
    bool relu_mask;         /* max grad fused with ReluGrad(dx, x): dx = 0 where x <= 0 */
    char *dbias_part;       /* with a fused BiasAddGrad: per unit, C sums of dx (dtype dt), else NULL */
} pool_job;

#ifdef CONV_DIRECT
/* The AVX-512 pool kernels prefetch their input this far ahead (4 KB, about one image
 * row of the CNN's pools): it was written long before and is mostly out of cache. */
#define POOL_PREFETCH_FLOATS 1024
static bool pool_simd_on(void);
/* The max pool's rows r = (img, oy) when the windows tile the input (2x2 / stride 2),
 * float32, C a multiple of 16, AVX-512: each output vector is the max of the window's
 * input vectors, kept in a register and stored once (the generic loop reads and writes
 * the output once per window element). Same values as pool_rows_f32: max is exact. */
__attribute__((target("avx512f"))) static void pool_fwd_tiled_max512(const conv_geom *g, const float *x, float *y,
                                                                      int64_t r0, int64_t r1) {
    const int64_t C = g->ci;
    const float *xend = x + g->n * g->h * g->w * C;
    for (int64_t r = r0; r < r1; r++) {
        int64_t img = r / g->oh, oy = r % g->oh;
        const float *xi = x + img * g->h * g->w * C;
        for (int64_t ox = 0; ox < g->ow; ox++) {
            int64_t y0, y1, x0, x1;
            pool_window(g, oy, ox, &y0, &y1, &x0, &x1);
            float *o = y + (r * g->ow + ox) * C;
            const float *pf = xi + (y0 * g->w + x0) * C + POOL_PREFETCH_FLOATS; /* as pool_grad_tiled_max512 */
            for (int64_t iy = 0; iy < y1 - y0; iy++)
                for (int64_t k = 0; k < (x1 - x0) * C; k += 16)
                    if (pf + iy * g->w * C + k < xend) _mm_prefetch((const char *)(pf + iy * g->w * C + k), _MM_HINT_T0);
            for (int64_t c = 0; c < C; c += 16) {
                __m512 m = _mm512_loadu_ps(xi + (y0 * g->w + x0) * C + c);
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++)
                        m = _mm512_max_ps(_mm512_loadu_ps(xi + (iy * g->w + ix) * C + c), m); /* NaN: as s > o ? s : o */
                _mm512_storeu_ps(o + c, m);
            }
        }
    }
}
#endif

static void pool_fwd_rows(void *arg, int64_t r0, int64_t r1) {
    const pool_job *j = arg;
#ifdef CONV_DIRECT
    if (j->dt == VG_FLOAT && j->kind == POOL_MAX && j->g.ci % 16 == 0 && windows_tile_input(&j->g) &&
        pool_simd_on()) {
        pool_fwd_tiled_max512(&j->g, (const float *)j->x, (float *)j->out, r0, r1);
        return;
    }
#endif
    if (j->dt == VG_DOUBLE) pool_rows_f64(&j->g, j->kind, (const double *)j->x, (double *)j->out, r0, r1);
    else pool_rows_f32(&j->g, j->kind, (const float *)j->x, (float *)j->out, r0, r1);
}

#ifdef CONV_DIRECT
/* The max-pool gradient of one image when the windows tile the input (the usual 2x2 /
 * stride 2 pool), float32, C a multiple of 16, AVX-512: per window and 16 channels the
 * window's inputs stay in registers, the argmax is a vector of window positions (first
 * maximum wins, as pool_grad_img: a later element must be strictly greater), and each
 * input position gets dy where it is the argmax, else 0. Every dx element is written
 * once; no scratch. */
__attribute__((target("avx512f"))) static void pool_grad_tiled_max512(const conv_geom *g, const float *x,
                                                                       const float *dy, float *dx, int64_t img,
                                                                       bool relu_mask, float *acc) {
    const int64_t C = g->ci, isz = g->h * g->w * C;
    const float *xi = x + img * isz, *xend = x + g->n * isz;
    float *di = dx + img * isz;
    for (int64_t oy = 0; oy < g->oh; oy++)
        for (int64_t ox = 0; ox < g->ow; ox++) {
            int64_t y0, y1, x0, x1;
            pool_window(g, oy, ox, &y0, &y1, &x0, &x1);
            const float *d = dy + ((img * g->oh + oy) * g->ow + ox) * C;
            /* x was written long before (the forward pass) and is usually not in cache:
             * prefetch the window's rows 4 KB ahead (measured: the CNN's 64x28x28x32
             * pool gradient 1.2 -> 0.84 ms; 1 KB and 8 KB ahead gain less) */
            const float *pf = xi + (y0 * g->w + x0) * C + POOL_PREFETCH_FLOATS;
            for (int64_t iy = 0; iy < y1 - y0; iy++)
                for (int64_t k = 0; k < (x1 - x0) * C; k += 16)
                    if (pf + iy * g->w * C + k < xend)
                        _mm_prefetch((const char *)(pf + iy * g->w * C + k), _MM_HINT_T0);
            for (int64_t c = 0; c < C; c += 16) {
                __m512 best = _mm512_loadu_ps(xi + (y0 * g->w + x0) * C + c);
                __m512i idx = _mm512_setzero_si512();
                int k = 0;
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++, k++) {
                        __m512 v = _mm512_loadu_ps(xi + (iy * g->w + ix) * C + c);
                        __mmask16 m = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
                        best = _mm512_mask_mov_ps(best, m, v);
                        idx = _mm512_mask_mov_epi32(idx, m, _mm512_set1_epi32(k));
                    }
                __m512 dv = _mm512_loadu_ps(d + c);
                if (acc) /* the window's dx sums to dy, or to 0 where ReluGrad masks the argmax */
                    _mm512_storeu_ps(acc + c, _mm512_add_ps(_mm512_loadu_ps(acc + c),
                                                            relu_mask ? _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(
                                                                            best, _mm512_setzero_ps(), _CMP_GT_OQ), dv)
                                                                      : dv));
                k = 0;
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++, k++) {
                        __mmask16 m = _mm512_cmpeq_epi32_mask(idx, _mm512_set1_epi32(k));
                        if (relu_mask)
                            m &= _mm512_cmp_ps_mask(_mm512_loadu_ps(xi + (iy * g->w + ix) * C + c),
                                                    _mm512_setzero_ps(), _CMP_GT_OQ);
                        _mm512_storeu_ps(di + (iy * g->w + ix) * C + c, _mm512_maskz_mov_ps(m, dv));
                    }
            }
        }
}
#endif

static atomic_int g_pool_simd = 1; /* vg__pool_set_simd */

#ifdef CONV_DIRECT
static bool pool_simd_on(void) { return atomic_load(&g_pool_simd) && dconv_cpu_level() == 2; }
#endif

/* ------------------------------------------------------------------------ */
/* The filter and bias gradients of a first convolution layer straight from its max
 * pool's gradient (_VigilFusedMaxPoolGradConv2DBackpropFilter, see fuse.c):
 *   dz  = ReluGrad(MaxPoolGrad(z, pool(z), dp), z)          (N, OH, OW, Co)
 *   db  = BiasAddGrad(dz)                                    (Co)
 *   df  = Conv2DBackpropFilter(x, filter_sizes, dz)          (KH, KW, Ci, Co)
 * for a 2x2 / stride 2 VALID pool, without writing dz (64x28x28x32 floats for the CNN)
 * or reading it back. dz is non-zero only at each window's argmax (first maximum, as
 * MaxPoolGrad) where z > 0, so per window and channel the gradient dp is routed to one
 * of four positions q, and df[ky][kx] += x[2py + qy + ky - pt][2px + qx + kx - pl] * dz_q:
 * the window's 6x6 input patch times four masked copies of dp. */
typedef struct mpcf_job {
    conv_geom cg;           /* the convolution: x (N, H, W, Ci) -> z (N, OH, OW, Co) */
    const float *x, *z, *dp;
    float *part;            /* per unit: KH*KW*Ci*Co filter sums, then Co bias sums */
    int64_t units;
} mpcf_job;

#ifdef CONV_DIRECT
/* Ci = 1, 5x5 filter, stride 1, Co a multiple of 16: the 25 taps of 16 channels stay in
 * registers over all windows of the unit's images. Per window, row ky of the patch and
 * row ky + 1 sit in one vector (lanes 0-5 and 8-13), and each channel lane picks its
 * argmax position's input with one permute per tap: 25 permutes and 25 FMAs per window
 * and 16 channels, instead of 100 FMAs on four masked copies of the gradient. */
__attribute__((target("avx512f"))) static void mpcf_unit_5x5_512(const mpcf_job *j, int64_t u) {
    const conv_geom *g = &j->cg;
    const int64_t C = g->co, PH = g->oh / 2, PW = g->ow / 2, zimg = g->oh * g->ow * C, pimg = PH * PW * C;
    const int64_t H = g->h, W = g->w;
    int64_t i0 = u * g->n / j->units, i1 = (u + 1) * g->n / j->units;
    float *df = j->part + (size_t)u * (size_t)(25 * C + C), *db = df + 25 * C;
    const float *zend = j->z + g->n * zimg, *pend = j->dp + g->n * pimg;
    const __m512i one = _mm512_set1_epi32(1);
    for (int64_t c = 0; c < C; c += 16) {
        __m512 acc[25], bacc = _mm512_setzero_ps();
#pragma GCC unroll 25
        for (int t = 0; t < 25; t++) acc[t] = _mm512_setzero_ps();
        for (int64_t img = i0; img < i1; img++) {
            const float *xi = j->x + img * H * W, *zi = j->z + img * zimg, *pi = j->dp + img * pimg;
            for (int64_t py = 0; py < PH; py++)
                for (int64_t px = 0; px < PW; px++) {
                    const float *zw = zi + ((2 * py) * g->ow + 2 * px) * C + c;
                    /* z was written in the forward pass, long ago: prefetch as the pool gradient does */
                    /* so was the pool's gradient (by the layer above, mostly past the cache) */
                    const float *pf = pi + (py * PW + px) * C + c + POOL_PREFETCH_FLOATS / 2;
                    if (pf < pend) _mm_prefetch((const char *)pf, _MM_HINT_T0);
                    if (zw + POOL_PREFETCH_FLOATS + g->ow * C < zend) {
                        _mm_prefetch((const char *)(zw + POOL_PREFETCH_FLOATS), _MM_HINT_T0);
                        _mm_prefetch((const char *)(zw + POOL_PREFETCH_FLOATS + C), _MM_HINT_T0);
                        _mm_prefetch((const char *)(zw + POOL_PREFETCH_FLOATS + g->ow * C), _MM_HINT_T0);
                        _mm_prefetch((const char *)(zw + POOL_PREFETCH_FLOATS + g->ow * C + C), _MM_HINT_T0);
                    }
                    __m512 best = _mm512_loadu_ps(zw);
                    __m512i idx = _mm512_setzero_si512();
#pragma GCC unroll 3
                    for (int k = 1; k < 4; k++) { /* first maximum wins: a later one must be greater */
                        __m512 v = _mm512_loadu_ps(zw + ((k >> 1) * g->ow + (k & 1)) * C);
                        __mmask16 m = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
                        best = _mm512_mask_mov_ps(best, m, v);
                        idx = _mm512_mask_mov_epi32(idx, m, _mm512_set1_epi32(k));
                    }
                    __mmask16 live = _mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_GT_OQ); /* ReluGrad */
                    if (!live) continue;
                    const float *pw = pi + (py * PW + px) * C + c;
                    __m512 d = _mm512_maskz_mov_ps(live, _mm512_loadu_ps(pw));
                    bacc = _mm512_add_ps(bacc, d);
                    /* lane index of the argmax's patch origin: qy * 8 + qx */
                    __m512i base = _mm512_add_epi32(_mm512_slli_epi32(_mm512_srli_epi32(idx, 1), 3),
                                                    _mm512_and_si512(idx, one));
                    int64_t y0 = 2 * py - g->pt, x0 = 2 * px - g->pl;
                    /* rows (ky, ky + 1) of the patch: from the image, or for a border
                     * window from a copy with zeros outside the image */
                    const float *r0, *r1;
                    int64_t step = W;
                    __mmask16 lo = 0x003F, hi = 0x3F00;
                    float pp[7][8];
                    if (y0 >= 0 && y0 + 6 <= H && x0 >= 0 && x0 + 6 <= W) {
                        r0 = xi + y0 * W + x0;
                        r1 = r0 + W - 8; /* in the image: W >= 8 (fast path) and y0 + 1 >= 1 */
                    } else {
                        memset(pp, 0, sizeof pp);
                        for (int r = 0; r < 6; r++)
                            for (int q = 0; q < 6; q++) {
                                int64_t yy = y0 + r, xx = x0 + q;
                                if (yy >= 0 && yy < H && xx >= 0 && xx < W) pp[r][q] = xi[yy * W + xx];
                            }
                        r0 = &pp[0][0], r1 = &pp[0][0], step = 8, lo = 0xFFFF, hi = 0;
                    }
#pragma GCC unroll 5
                    for (int ky = 0; ky < 5; ky++) {
                        /* lanes 8-13 from the next row: lane l reads r1 + ky * step + l */
                        __m512 row = _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(lo, r0 + ky * step), hi, r1 + ky * step);
#pragma GCC unroll 5
                        for (int kx = 0; kx < 5; kx++)
                            acc[ky * 5 + kx] = _mm512_fmadd_ps(
                                _mm512_permutexvar_ps(_mm512_add_epi32(base, _mm512_set1_epi32(kx)), row), d,
                                acc[ky * 5 + kx]);
                    }
                }
        }
#pragma GCC unroll 25
        for (int t = 0; t < 25; t++) _mm512_storeu_ps(df + t * C + c, acc[t]);
        _mm512_storeu_ps(db + c, bacc);
    }
}
#endif

/* Any geometry with a 2x2 / 2 pool over z (float32): the same sums, scalar. */
static void mpcf_unit_generic(const mpcf_job *j, int64_t u) {
    const conv_geom *g = &j->cg;
    const int64_t C = g->co, CI = g->ci, PH = g->oh / 2, PW = g->ow / 2, fsz = g->kh * g->kw * CI * C;
    int64_t i0 = u * g->n / j->units, i1 = (u + 1) * g->n / j->units;
    float *df = j->part + (size_t)u * (size_t)(fsz + C), *db = df + fsz;
    memset(df, 0, sizeof(float) * (size_t)(fsz + C));
    for (int64_t img = i0; img < i1; img++) {
        const float *xi = j->x + img * g->h * g->w * CI, *zi = j->z + img * g->oh * g->ow * C;
        const float *pi = j->dp + img * PH * PW * C;
        for (int64_t py = 0; py < PH; py++)
            for (int64_t px = 0; px < PW; px++)
                for (int64_t c = 0; c < C; c++) {
                    int best_k = 0;
                    float best = zi[((2 * py) * g->ow + 2 * px) * C + c];
                    for (int k = 1; k < 4; k++) {
                        float v = zi[((2 * py + (k >> 1)) * g->ow + 2 * px + (k & 1)) * C + c];
                        if (v > best) best = v, best_k = k;
                    }
                    if (!(best > 0)) continue;
                    float d = pi[(py * PW + px) * C + c];
                    db[c] += d;
                    /* z position (oy, ox) = (2py + qy, 2px + qx) */
                    int64_t oy = 2 * py + (best_k >> 1), ox = 2 * px + (best_k & 1);
                    for (int64_t ky = 0; ky < g->kh; ky++) {
                        int64_t iy = oy * g->sh + ky - g->pt;
                        if (iy < 0 || iy >= g->h) continue;
                        for (int64_t kx = 0; kx < g->kw; kx++) {
                            int64_t ix = ox * g->sw + kx - g->pl;
                            if (ix < 0 || ix >= g->w) continue;
                            const float *xp = xi + (iy * g->w + ix) * CI;
                            float *dfp = df + (ky * g->kw + kx) * CI * C + c;
                            for (int64_t ci = 0; ci < CI; ci++) dfp[ci * C] += xp[ci] * d;
                        }
                    }
                }
    }
}

#ifdef CONV_DIRECT
static bool mpcf_fast(const mpcf_job *j) {
    const conv_geom *g = &j->cg;
    return g->ci == 1 && g->kh == 5 && g->kw == 5 && g->sh == 1 && g->sw == 1 && g->w >= 8 && g->co % 16 == 0 &&
           pool_simd_on();
}
#endif

static void mpcf_units(void *arg, int64_t u0, int64_t u1) {
    const mpcf_job *j = arg;
    for (int64_t u = u0; u < u1; u++) {
#ifdef CONV_DIRECT
        if (mpcf_fast(j)) {
            mpcf_unit_5x5_512(j, u);
            continue;
        }
#endif
        mpcf_unit_generic(j, u);
    }
}

int vg__pool_set_simd(int on) {
    atomic_store(&g_pool_simd, on);
#ifdef CONV_DIRECT
    return on && dconv_cpu_level() == 2;
#else
    return 0;
#endif
}

static void pool_grad_units(void *arg, int64_t u0, int64_t u1) {
    const pool_job *j = arg;
    const int64_t C = j->g.ci;
#ifdef CONV_DIRECT
    if (j->dt == VG_FLOAT && j->kind == POOL_MAX && C % 16 == 0 && windows_tile_input(&j->g) &&
        atomic_load(&g_pool_simd) && dconv_cpu_level() == 2) {
        for (int64_t u = u0; u < u1; u++) {
            float *acc = j->dbias_part ? (float *)j->dbias_part + u * C : NULL;
            if (acc) memset(acc, 0, sizeof(float) * (size_t)C);
            for (int64_t img = u * j->g.n / j->units; img < (u + 1) * j->g.n / j->units; img++)
                pool_grad_tiled_max512(&j->g, (const float *)j->x, (const float *)j->dy, (float *)j->out, img,
                                       j->relu_mask, acc);
        }
        return;
    }
#endif
    const int64_t isz = j->g.h * j->g.w * C;
    for (int64_t u = u0; u < u1; u++) {
        char *sc = j->scratch ? j->scratch + (size_t)u * j->scratch_stride : NULL;
        char *best = sc ? sc + (size_t)C * sizeof(int64_t) : NULL;
        if (j->dbias_part) memset(j->dbias_part + (size_t)(u * C) * real_size(j->dt), 0, (size_t)C * real_size(j->dt));
        for (int64_t img = u * j->g.n / j->units; img < (u + 1) * j->g.n / j->units; img++) {
            if (j->dt == VG_DOUBLE)
                pool_grad_img_f64(&j->g, j->kind, (const double *)j->x, (const double *)j->dy, (double *)j->out, img,
                                  (double *)best, (int64_t *)sc);
            else
                pool_grad_img_f32(&j->g, j->kind, (const float *)j->x, (const float *)j->dy, (float *)j->out, img,
                                  (float *)best, (int32_t *)sc);
            if (j->relu_mask) {
                if (j->dt == VG_DOUBLE) { /* ReluGrad(dx, x): g > 0 ? dx : 0, on the image while in cache */
                    const double *xi = (const double *)j->x + img * isz;
                    double *di = (double *)j->out + img * isz;
                    for (int64_t i = 0; i < isz; i++) di[i] = xi[i] > 0 ? di[i] : 0;
                } else {
                    const float *xi = (const float *)j->x + img * isz;
                    float *di = (float *)j->out + img * isz;
                    for (int64_t i = 0; i < isz; i++) di[i] = xi[i] > 0 ? di[i] : 0;
                }
            }
            if (!j->dbias_part) continue;
            if (j->dt == VG_DOUBLE) { /* BiasAddGrad: the column sums of the image's dx */
                double *acc = (double *)j->dbias_part + u * C;
                const double *di = (const double *)j->out + img * isz;
                for (int64_t i = 0; i < isz; i += C)
                    for (int64_t c = 0; c < C; c++) acc[c] += di[i + c];
            } else {
                float *acc = (float *)j->dbias_part + u * C;
                const float *di = (const float *)j->out + img * isz;
                for (int64_t i = 0; i < isz; i += C)
                    for (int64_t c = 0; c < C; c++) acc[c] += di[i + c];
            }
        }
    }
}

static vg_code shape_pool(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (check_real(op, 0, "input", VG_DTYPE_INVALID, st)) return st->code;
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg_shape x = vg__op_input_shape(op, 0);
    win_attrs w;
    if (check_rank4(&x, "input", st) || read_win_attrs(op, true, &w, st)) return st->code;
    int64_t od[4] = {-1, -1, -1, -1}, pad;
    if (x.ndims == 4) {
        od[0] = x.dims[0];
        od[3] = x.dims[3];
        if (window_out(x.dims[1], w.ksize[1], w.strides[1], w.same, &od[1], &pad, st) ||
            window_out(x.dims[2], w.ksize[2], w.strides[2], w.same, &od[2], &pad, st))
            return st->code;
    }
    return vg__op_set_single_output(op, dt, vg_shape_make(od, 4));
}

static vg_code run_pool(vg__kctx *ctx, int kind) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *y;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck4(ctx, x, "input", VG_DTYPE_INVALID)) return st->code;
    pool_job j = {.kind = kind, .dt = dt};
    if (make_geom(vg__kctx_op(ctx), vg_tensor_dims(x), NULL, &j.g, st)) return st->code;
    // x is (N, H, W, C); y is (N, OH, OW, C)
    int64_t od[4] = {j.g.n, j.g.oh, j.g.ow, j.g.co};
    if (vg__kctx_alloc_output(ctx, 0, dt, od, 4, &y)) return st->code;
    if (vg_tensor_num_elements(y) == 0) return VG_OK;
    j.x = vg_tensor_data(x);
    j.out = vg_tensor_data(y);
    int64_t rows = j.g.n * j.g.oh, cost = j.g.ow * j.g.ci * j.g.kh * j.g.kw;
    if (rows * cost < 65536 || vg__kctx_num_threads(ctx) <= 1) pool_fwd_rows(&j, 0, rows);
    else vg__kctx_parallel_for(ctx, rows, cost, pool_fwd_rows, &j);
    return VG_OK;
}
static vg_code kernel_max_pool(vg__kctx *ctx) { return run_pool(ctx, POOL_MAX); }

static size_t pool_job_size(void) { return sizeof(pool_job); }

/* For the fused conv + max pool: *pj = the max pool 2x2 / 2 VALID of x (N, H, W, C),
 * its output allocated as the kernel's output 1 (*y). */
static vg_code pool_job_2x2(vg__kctx *ctx, const vg_tensor *x, vg_tensor **y, pool_job *pj) {
    const int64_t *d = vg_tensor_dims(x);
    memset(pj, 0, sizeof *pj);
    pj->kind = POOL_MAX;
    pj->dt = vg_tensor_dtype(x);
    conv_geom *g = &pj->g;
    g->n = d[0], g->h = d[1], g->w = d[2], g->ci = g->co = d[3];
    g->kh = g->kw = g->sh = g->sw = 2;
    g->oh = d[1] / 2, g->ow = d[2] / 2;
    int64_t od[4] = {g->n, g->oh, g->ow, g->co};
    if (vg__kctx_alloc_output(ctx, 1, pj->dt, od, 4, y)) return vg__kctx_status(ctx)->code;
    pj->x = vg_tensor_data(x);
    pj->out = vg_tensor_data(*y);
    return VG_OK;
}

/* Runs a pool job over all its rows (inline when small, else on the intra-op pool). */
static void pool_run_all(vg__kctx *ctx, pool_job *j) {
    int64_t rows = j->g.n * j->g.oh, cost = j->g.ow * j->g.ci * j->g.kh * j->g.kw;
    if (rows * cost < 65536 || vg__kctx_num_threads(ctx) <= 1) pool_fwd_rows(j, 0, rows);
    else vg__kctx_parallel_for(ctx, rows, cost, pool_fwd_rows, j);
}
static vg_code kernel_avg_pool(vg__kctx *ctx) { return run_pool(ctx, POOL_AVG); }

/* Runs a pool gradient over the images of dx (x is NULL for the average). */
static vg_code run_pool_grad(vg__kctx *ctx, pool_job *j) {
    const conv_geom *g = &j->g;
    size_t es = real_size(j->dt);
    int64_t cost = g->oh * g->ow * g->ci * g->kh * g->kw;
    int64_t units = vg__kctx_num_threads(ctx);
    if (units > g->n * cost / 65536) units = g->n * cost / 65536;
    if (units > g->n) units = g->n;
    if (units < 1) units = 1;
    j->units = units;
    if (j->kind == POOL_MAX) {
        j->scratch_stride = ((size_t)g->ci * (es + sizeof(int64_t)) + 63) / 64 * 64;
        j->scratch = vg__aligned_alloc(j->scratch_stride * (size_t)units, 64);
        if (!j->scratch) return VG_OOM(vg__kctx_status(ctx), "max pool gradient scratch");
    }
    char *dbias = j->dbias_part; /* the output: the units' partial sums go to scratch first */
    if (dbias && units > 1 && !(j->dbias_part = vg__aligned_alloc((size_t)(units * g->ci) * es, 64))) {
        vg__free(j->scratch);
        return VG_OOM(vg__kctx_status(ctx), "bias gradient partial sums");
    }
    if (units == 1) pool_grad_units(j, 0, 1);
    else vg__kctx_parallel_for(ctx, units, g->n / units * cost, pool_grad_units, j);
    vg__free(j->scratch);
    if (dbias && units > 1) {
        for (int64_t c = 0; c < g->ci; c++) {
            if (j->dt == VG_DOUBLE) {
                double v = 0;
                for (int64_t u = 0; u < units; u++) v += ((const double *)j->dbias_part)[u * g->ci + c];
                ((double *)dbias)[c] = v;
            } else {
                float v = 0;
                for (int64_t u = 0; u < units; u++) v += ((const float *)j->dbias_part)[u * g->ci + c];
                ((float *)dbias)[c] = v;
            }
        }
        vg__free(j->dbias_part);
    }
    return VG_OK;
}

/* Checks a pool input's shape against the geometry's output (orig_output, grad). */
static vg_code kcheck_pool_out(vg__kctx *ctx, const vg_tensor *t, const conv_geom *g, const char *what) {
    return kcheck_dy(ctx, t, g, what);
}

/* -- MaxPoolGrad(orig_input, orig_output, grad) -- */

static vg_code shape_max_pool_grad(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (check_real(op, 0, "orig_input", VG_DTYPE_INVALID, st) || check_real(op, 1, "orig_output", dt, st) ||
        check_real(op, 2, "grad", dt, st))
        return st->code;
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg_shape x = vg__op_input_shape(op, 0), y = vg__op_input_shape(op, 1), dy = vg__op_input_shape(op, 2);
    if (check_rank4(&x, "orig_input", st) || check_rank4(&y, "orig_output", st) || check_rank4(&dy, "grad", st) ||
        check_dy_shape(op, &x, NULL, &y, true, st) || check_dy_shape(op, &x, NULL, &dy, true, st))
        return st->code;
    return vg__op_set_single_output(op, dt, x);
}

static vg_code max_pool_grad(vg__kctx *ctx, bool relu_mask, bool bias_grad) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *y = vg__kctx_input(ctx, 1), *dy = vg__kctx_input(ctx, 2), *dx;
    vg_dtype dt = vg_tensor_dtype(x);
    if (kcheck4(ctx, x, "orig_input", VG_DTYPE_INVALID) || kcheck4(ctx, y, "orig_output", dt) ||
        kcheck4(ctx, dy, "grad", dt))
        return st->code;
    pool_job j = {.kind = POOL_MAX, .dt = dt, .relu_mask = relu_mask};
    if (make_geom(vg__kctx_op(ctx), vg_tensor_dims(x), NULL, &j.g, st) ||
        kcheck_pool_out(ctx, y, &j.g, "orig_output") || kcheck_pool_out(ctx, dy, &j.g, "grad"))
        return st->code;
    // x, dx are (N, H, W, C); dy is (N, OH, OW, C)
    if (dt == VG_FLOAT && j.g.h * j.g.w * j.g.ci > INT32_MAX) /* the float path keeps int32 argmax offsets */
        return vg_status_set(st, VG_UNIMPLEMENTED, "MaxPoolGrad: images of more than 2^31 elements");
    if (vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), 4, &dx)) return st->code;
    if (bias_grad) { /* output 1: BiasAddGrad(dx), the sums of dx over all but the last dim */
        vg_tensor *db;
        if (vg__kctx_alloc_output(ctx, 1, dt, &j.g.ci, 1, &db)) return st->code;
        memset(vg_tensor_data(db), 0, vg_tensor_nbytes(db));
        j.dbias_part = vg_tensor_data(db);
    }
    if (vg_tensor_num_elements(dx) == 0) return VG_OK;
    j.x = vg_tensor_data(x);
    j.dy = vg_tensor_data(dy);
    j.out = vg_tensor_data(dx);
    return run_pool_grad(ctx, &j);
}
static vg_code kernel_max_pool_grad(vg__kctx *ctx) { return max_pool_grad(ctx, false, false); }
/* _VigilFusedMaxPoolGradReluGrad(orig_input, orig_output, grad): ReluGrad(MaxPoolGrad(...),
 * orig_input), put in plans by src/exec/fuse.c where the pool's input is a Relu's
 * output and the ReluGrad is the pool gradient's only consumer. */
static vg_code kernel_max_pool_grad_relu(vg__kctx *ctx) { return max_pool_grad(ctx, true, false); }
/* _VigilFusedMaxPoolGradReluGradBiasAddGrad(orig_input, orig_output, grad): the same,
 * and output 1 = BiasAddGrad of that gradient (NHWC: the sums over N, H, W), summed
 * while each image's gradient is written (fuse.c: where a BiasAddGrad reads the fused
 * pool gradient, as with conv -> bias -> relu -> max_pool). */
static vg_code kernel_max_pool_grad_relu_bias(vg__kctx *ctx) { return max_pool_grad(ctx, true, true); }

static vg_code shape_fused_pool_grad_conv_filter(vg_op *op, vg_status *st) {
    if (check_real(op, 0, "input", VG_FLOAT, st) || check_real(op, 2, "orig_input", VG_FLOAT, st) ||
        check_real(op, 3, "orig_output", VG_FLOAT, st) || check_real(op, 4, "grad", VG_FLOAT, st))
        return st->code;
    set_conv_defaults(op, VG_FLOAT);
    vg_shape f;
    if (shape_from_tensor_input(op, 1, "filter_sizes", &f, st)) return st->code;
    int64_t co = f.ndims == 4 ? f.dims[3] : -1;
    return vg__op_set_two_outputs(op, VG_FLOAT, f, VG_FLOAT, vg_shape_make(&co, 1));
}

/* _VigilFusedMaxPoolGradConv2DBackpropFilter(input, filter_sizes, orig_input,
 * orig_output, grad): on a Conv2DBackpropFilter node (its attributes) whose
 * out_backprop was _VigilFusedMaxPoolGradReluGradBiasAddGrad(orig_input, orig_output,
 * grad) of a 2x2 / stride 2 VALID max pool, read by nothing else (fuse.c; the first
 * layer of a CNN, whose input gradient nobody asks for). Outputs: the filter gradient
 * and the bias gradient. float32 only (fuse.c checks the dtype). */
static vg_code kernel_fused_pool_grad_conv_filter(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *z = vg__kctx_input(ctx, 2), *p = vg__kctx_input(ctx, 3);
    vg_tensor *dp = vg__kctx_input(ctx, 4), *df, *db;
    int64_t fd[4];
    if (kcheck4(ctx, x, "input", VG_FLOAT) || kread_sizes(ctx, 1, "filter_sizes", fd) ||
        kcheck4(ctx, z, "orig_input", VG_FLOAT) || kcheck4(ctx, p, "orig_output", VG_FLOAT) ||
        kcheck4(ctx, dp, "grad", VG_FLOAT))
        return st->code;
    mpcf_job j = {.x = vg_tensor_data(x), .z = vg_tensor_data(z), .dp = vg_tensor_data(dp)};
    if (make_geom(vg__kctx_op(ctx), vg_tensor_dims(x), fd, &j.cg, st) ||
        kcheck_dy(ctx, z, &j.cg, "orig_input"))
        return st->code;
    conv_geom pg = {.n = j.cg.n, .h = j.cg.oh, .w = j.cg.ow, .ci = j.cg.co, .kh = 2, .kw = 2, .co = j.cg.co,
                    .sh = 2, .sw = 2, .oh = j.cg.oh / 2, .ow = j.cg.ow / 2};
    if (kcheck_pool_out(ctx, p, &pg, "orig_output") || kcheck_pool_out(ctx, dp, &pg, "grad")) return st->code;
    if (vg__kctx_alloc_output(ctx, 0, VG_FLOAT, fd, 4, &df) || vg__kctx_alloc_output(ctx, 1, VG_FLOAT, &j.cg.co, 1, &db))
        return st->code;
    int64_t fsz = vg_tensor_num_elements(df), C = j.cg.co;
    memset(vg_tensor_data(df), 0, vg_tensor_nbytes(df));
    memset(vg_tensor_data(db), 0, vg_tensor_nbytes(db));
    if (fsz == 0 || pg.n * pg.oh * pg.ow == 0) return VG_OK;
    double flops = 8.0 * (double)(pg.n * pg.oh * pg.ow) * (double)(fsz + C);
    int64_t units = image_units(ctx, flops, j.cg.n);
    j.units = units;
    j.part = vg__aligned_alloc(sizeof(float) * (size_t)((fsz + C) * units), 64);
    if (!j.part) return VG_OOM(st, "pool and filter gradient partial sums");
    if (units == 1) mpcf_units(&j, 0, 1);
    else vg__kctx_parallel_for(ctx, units, (int64_t)(flops / (double)units), mpcf_units, &j);
    float *o = vg_tensor_data(df), *ob = vg_tensor_data(db);
    for (int64_t u = 0; u < units; u++) {
        const float *pu = j.part + (size_t)(u * (fsz + C));
        for (int64_t i = 0; i < fsz; i++) o[i] += pu[i];
        for (int64_t c = 0; c < C; c++) ob[c] += pu[fsz + c];
    }
    vg__free(j.part);
    return VG_OK;
}

/* -- AvgPoolGrad(orig_input_shape, grad) -- */

static vg_code shape_avg_pool_grad(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 1);
    if (check_real(op, 1, "grad", VG_DTYPE_INVALID, st)) return st->code;
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg_shape x, dy = vg__op_input_shape(op, 1);
    if (shape_from_tensor_input(op, 0, "orig_input_shape", &x, st) || check_rank4(&dy, "grad", st) ||
        check_dy_shape(op, &x, NULL, &dy, true, st))
        return st->code;
    return vg__op_set_single_output(op, dt, x);
}

static vg_code kernel_avg_pool_grad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *dy = vg__kctx_input(ctx, 1), *dx;
    vg_dtype dt = vg_tensor_dtype(dy);
    int64_t xd[4];
    if (kread_sizes(ctx, 0, "orig_input_shape", xd) || kcheck4(ctx, dy, "grad", VG_DTYPE_INVALID)) return st->code;
    pool_job j = {.kind = POOL_AVG, .dt = dt};
    if (make_geom(vg__kctx_op(ctx), xd, NULL, &j.g, st) || kcheck_pool_out(ctx, dy, &j.g, "grad")) return st->code;
    // dy is (N, OH, OW, C); dx is (N, H, W, C)
    if (vg__kctx_alloc_output(ctx, 0, dt, xd, 4, &dx)) return st->code;
    if (vg_tensor_num_elements(dx) == 0) return VG_OK;
    j.dy = vg_tensor_data(dy);
    j.out = vg_tensor_data(dx);
    return run_pool_grad(ctx, &j);
}

static void pool_attr_copy(const vg_op *op, int64_t ksize[4], int64_t strides[4], const char **padding) {
    const int64_t *v;
    int n;
    win_attr_copy(op, strides, padding);
    ksize[0] = ksize[1] = ksize[2] = ksize[3] = 1;
    if (vg_op_attr_int_list(op, "ksize", &v, &n) && n == 4) memcpy(ksize, v, sizeof(int64_t) * 4);
}

/* _MaxPoolGrad: MaxPoolGrad(x, y, dy). */
static vg_code grad_max_pool(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t ksize[4], strides[4];
    const char *padding;
    pool_attr_copy(op, ksize, strides, &padding);
    dx[0] = vg_max_pool_grad(g, vg_op_input(op, 0), vg_out(op, 0), dy[0], ksize, strides, padding, NULL);
    return vg_graph_status(g, NULL);
}

/* _AvgPoolGrad: AvgPoolGrad(Shape(x), dy). */
static vg_code grad_avg_pool(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t ksize[4], strides[4];
    const char *padding;
    pool_attr_copy(op, ksize, strides, &padding);
    dx[0] = vg_avg_pool_grad(g, vg_shape_op(g, vg_op_input(op, 0), VG_INT32, "Shape"), dy[0], ksize, strides,
                             padding, NULL);
    return vg_graph_status(g, NULL);
}

/* _AvgPoolGradGrad: (none, AvgPool(grad)). */
static vg_code grad_avg_pool_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t ksize[4], strides[4];
    const char *padding;
    pool_attr_copy(op, ksize, strides, &padding);
    dx[0] = (vg_output){NULL, 0};
    dx[1] = vg_avg_pool(g, dy[0], ksize, strides, padding, NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Builders */

static void set_window(vg_op_builder *b, const int64_t *ksize, const int64_t strides[4], const char *padding) {
    static const int64_t ones[4] = {1, 1, 1, 1};
    if (ksize) vg_op_builder_set_attr_int_list(b, "ksize", ksize, 4);
    vg_op_builder_set_attr_int_list(b, "strides", strides ? strides : ones, 4);
    if (!padding) padding = "";
    vg_op_builder_set_attr_string(b, "padding", padding, strlen(padding));
    vg_op_builder_set_attr_string(b, "data_format", "NHWC", 4);
}

static void set_conv_attrs(vg_op_builder *b, const int64_t strides[4], const char *padding) {
    static const int64_t ones[4] = {1, 1, 1, 1};
    set_window(b, NULL, strides, padding);
    vg_op_builder_set_attr_bool(b, "use_cudnn_on_gpu", true);
    vg_op_builder_set_attr_int_list(b, "explicit_paddings", ones, 0);
    vg_op_builder_set_attr_int_list(b, "dilations", ones, 4);
}

/* A convolution node of type `type` over inputs in[0..n) with the Conv2D attributes. */
static vg_output build_conv(vg_graph *g, const char *type, const vg_output *in, int n, const int64_t strides[4],
                            const char *padding, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, in, n);
    set_conv_attrs(b, strides, padding);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_conv2d(vg_graph *g, vg_output x, vg_output filter, const int64_t strides[4], const char *padding,
                    const char *name) {
    return build_conv(g, "Conv2D", (vg_output[]){x, filter}, 2, strides, padding, name);
}

vg_output vg_conv2d_backprop_input(vg_graph *g, vg_output input_sizes, vg_output filter, vg_output dy,
                                   const int64_t strides[4], const char *padding, const char *name) {
    return build_conv(g, "Conv2DBackpropInput", (vg_output[]){input_sizes, filter, dy}, 3, strides, padding, name);
}

vg_output vg_conv2d_backprop_filter(vg_graph *g, vg_output input, vg_output filter_sizes, vg_output dy,
                                    const int64_t strides[4], const char *padding, const char *name) {
    return build_conv(g, "Conv2DBackpropFilter", (vg_output[]){input, filter_sizes, dy}, 3, strides, padding, name);
}

/* A pooling node (or its gradient) of type `type` over inputs in[0..n); ksize NULL: ones. */
static vg_output build_pool(vg_graph *g, const char *type, const vg_output *in, int n, const int64_t ksize[4],
                            const int64_t strides[4], const char *padding, const char *name) {
    static const int64_t ones[4] = {1, 1, 1, 1};
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, in, n);
    set_window(b, ksize ? ksize : ones, strides, padding);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_max_pool(vg_graph *g, vg_output x, const int64_t ksize[4], const int64_t strides[4], const char *padding,
                      const char *name) {
    return build_pool(g, "MaxPool", &x, 1, ksize, strides, padding, name);
}

vg_output vg_avg_pool(vg_graph *g, vg_output x, const int64_t ksize[4], const int64_t strides[4], const char *padding,
                      const char *name) {
    return build_pool(g, "AvgPool", &x, 1, ksize, strides, padding, name);
}

vg_output vg_max_pool_grad(vg_graph *g, vg_output x, vg_output y, vg_output dy, const int64_t ksize[4],
                           const int64_t strides[4], const char *padding, const char *name) {
    return build_pool(g, "MaxPoolGrad", (vg_output[]){x, y, dy}, 3, ksize, strides, padding, name);
}

vg_output vg_avg_pool_grad(vg_graph *g, vg_output input_shape, vg_output dy, const int64_t ksize[4],
                           const int64_t strides[4], const char *padding, const char *name) {
    return build_pool(g, "AvgPoolGrad", (vg_output[]){input_shape, dy}, 2, ksize, strides, padding, name);
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_conv[] = {
    {"Conv2D", 2, 2, 0, 0, shape_conv2d, kernel_conv2d, grad_conv2d},
    /* plan-time fusion only (src/exec/fuse.c); not differentiable, never in a user graph */
    {"_VigilFusedConv2DBias", 3, 3, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_conv2d, kernel_fused_conv2d_bias, NULL},
    {"_VigilFusedConv2DBiasRelu", 3, 3, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_conv2d, kernel_fused_conv2d_bias_relu,
     NULL},
    {"_VigilFusedConv2DBiasReluMaxPool", 3, 3, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_conv2d,
     kernel_fused_conv2d_bias_relu_pool, NULL},
    {"_VigilFusedForward", 1, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_forward, kernel_fused_forward, NULL},
    {"_VigilFusedMaxPoolGradReluGrad", 3, 3, VG__OP_NOT_DIFFERENTIABLE, 0, shape_max_pool_grad,
     kernel_max_pool_grad_relu, NULL},
    {"_VigilFusedMaxPoolGradReluGradBiasAddGrad", 3, 3, VG__OP_NOT_DIFFERENTIABLE, 0, shape_max_pool_grad,
     kernel_max_pool_grad_relu_bias, NULL},
    {"_VigilFusedMaxPoolGradConv2DBackpropFilter", 5, 5, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_pool_grad_conv_filter,
     kernel_fused_pool_grad_conv_filter, NULL},
    {"Conv2DBackpropInput", 3, 3, 0, 0, shape_conv2d_bp_input, kernel_conv2d_bp_input, grad_conv2d_bp_input},
    {"Conv2DBackpropFilter", 3, 3, 0, 0, shape_conv2d_bp_filter, kernel_conv2d_bp_filter, grad_conv2d_bp_filter},
    {"MaxPool", 1, 1, 0, 0, shape_pool, kernel_max_pool, grad_max_pool},
    {"MaxPoolGrad", 3, 3, 0, 0, shape_max_pool_grad, kernel_max_pool_grad, NULL},
    {"AvgPool", 1, 1, 0, 0, shape_pool, kernel_avg_pool, grad_avg_pool},
    {"AvgPoolGrad", 2, 2, 0, 0, shape_avg_pool_grad, kernel_avg_pool_grad, grad_avg_pool_grad},
    {0},
};
