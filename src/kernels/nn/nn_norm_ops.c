/*
 * nn_norm_ops.c - FusedBatchNormV3 and FusedBatchNormGradV3 as TF 1.15's
 * fused_batch_norm_op.cc computes them on the CPU (NHWC; T float or double, U = T):
 *
 *   inputs x [N,H,W,C], scale [C], offset [C], mean, variance ([C], or empty when
 *   training); outputs y, batch_mean, batch_variance, reserve_space_1..3.
 *   training:  mean/var over N,H,W (var biased); y = scale * (x - mean) / sqrt(var + eps)
 *              + offset; batch_variance = var * m / (m - 1) (Bessel, m = N*H*W > 1);
 *              reserve_space_1/2 = mean and the biased variance (what the gradient uses).
 *   inference: the given mean and variance are used and passed through.
 *   attrs epsilon (0.0001), data_format ("NHWC"; "NCHW" is UNIMPLEMENTED), is_training
 *   (true).
 *
 * Gradient (nn_grad.py _FusedBatchNormV3Grad): FusedBatchNormGradV3(dy, x, scale,
 * reserve_space_1, reserve_space_2, reserve_space_3) when training, with the given mean
 * and variance in place of the reserve spaces when not; gradients for x, scale and
 * offset, none for mean and variance. The grad op computes, per channel c with
 * r = rsqrt(var + eps), xhat = (x - mean) * r:
 *   training:  dx = scale * r * (dy - mean(dy) - xhat * mean(dy * xhat))
 *   inference: dx = dy * scale * r
 *   dscale = sum(dy * xhat), doffset = sum(dy).
 */
#include "core/bf16_round.h"
#include "kernels/ew_internal.h"
#include "kernels/simd.h"

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops that need no epilogue ("very cheap" model): the
 * channel loops here need the dynamic cost model to use SIMD. */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif
#include "vigil/nn_ext.h"
#include <math.h>

typedef struct bn_attrs {
    double eps;
    bool training;
} bn_attrs;

static vg_code get_attrs(const vg_op *op, bn_attrs *a, vg_status *st) {
    float f;
    bool b;
    const char *df;
    size_t dl;
    a->eps = vg_op_attr_float(op, "epsilon", &f) ? f : 0.0001;
    a->training = vg_op_attr_bool(op, "is_training", &b) ? b : true;
    if (vg_op_attr_string(op, "data_format", &df, &dl) && !(dl == 4 && memcmp(df, "NHWC", 4) == 0))
        return vg_status_set(st, VG_UNIMPLEMENTED, "%s: only data_format NHWC is supported on the CPU, got %.*s",
                             vg_op_type(op), (int)dl, df);
    return VG_OK;
}

static vg_code check_vec(vg_op *op, int i, const char *what, int64_t c, bool may_be_empty, vg_status *st) {
    vg_shape s = vg__op_input_shape(op, i);
    if (s.ndims >= 0 && s.ndims != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be 1-dimensional, got rank %d", vg_op_type(op), what,
                             s.ndims);
    if (s.ndims == 1 && c >= 0 && s.dims[0] >= 0 && s.dims[0] != c && !(may_be_empty && s.dims[0] == 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must have %lld elements (the channels), got %lld",
                             vg_op_type(op), what, (long long)c, (long long)s.dims[0]);
    return VG_OK;
}

/* nin 5: FusedBatchNormV3 (x, scale, offset, mean, variance);
 * nin 6: FusedBatchNormGradV3 (dy, x, scale, rs1, rs2, rs3). */
static vg_code bn_shape(vg_op *op, bool grad, vg_status *st) {
    bn_attrs a;
    vg_code c = get_attrs(op, &a, st);
    if (c != VG_OK) return c;
    int xi = grad ? 1 : 0;
    vg_dtype dt = vg__op_input_dtype(op, xi);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: x has dtype %s, which is not supported (float double)",
                             vg_op_type(op), vg_dtype_name(dt));
    int nin = vg_op_num_inputs(op);
    for (int i = 0; i < nin; i++) {
        if (grad && i == 5) continue; /* reserve_space_3: any float */
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d has dtype %s, expected %s", vg_op_type(op), i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
    }
    vg_shape xs = vg__op_input_shape(op, xi);
    if (xs.ndims >= 0 && xs.ndims != 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: x must be 4-dimensional, got rank %d", vg_op_type(op), xs.ndims);
    if (grad) {
        vg_shape ds = vg__op_input_shape(op, 0);
        if (ds.ndims >= 0 && ds.ndims != 4)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: y_backprop must be 4-dimensional, got rank %d",
                                 vg_op_type(op), ds.ndims);
        if (xs.ndims < 0) xs = ds;
    }
    int64_t ch = xs.ndims == 4 ? xs.dims[3] : -1;
    static const char *fwd_names[] = {"x", "scale", "offset", "mean", "variance"};
    static const char *grad_names[] = {"y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2"};
    for (int i = grad ? 2 : 1; i < 5; i++) {
        c = check_vec(op, i, grad ? grad_names[i] : fwd_names[i], ch, !grad && a.training && i >= 3, st);
        if (c != VG_OK) return c;
    }
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_type(op, "U", dt);
    vg__op_set_default_attr_string(op, "data_format", "NHWC");
    vg__op_set_default_attr_bool(op, "is_training", true);
    vg_shape vec = vg_shape_make(&ch, 1), empty;
    int64_t zero = 0;
    empty = vg_shape_make(&zero, 1);
    if (!grad) {
        vg__op_set_num_outputs(op, 6);
        vg__op_set_output(op, 0, dt, xs);
        for (int i = 1; i < 5; i++) vg__op_set_output(op, i, dt, vec);
        vg__op_set_output(op, 5, dt, empty);
    } else {
        vg__op_set_num_outputs(op, 5);
        vg__op_set_output(op, 0, dt, xs);
        vg__op_set_output(op, 1, dt, vec);
        vg__op_set_output(op, 2, dt, vec);
        vg__op_set_output(op, 3, dt, empty);
        vg__op_set_output(op, 4, dt, empty);
    }
    return VG_OK;
}
static vg_code shape_bn(vg_op *op, vg_status *st) { return bn_shape(op, false, st); }
static vg_code shape_bn_grad(vg_op *op, vg_status *st) { return bn_shape(op, true, st); }

static vg_code kvec(vg__kctx *ctx, const vg_tensor *t, const char *what, int64_t c, vg_dtype dt) {
    if (vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) != c)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s must be a 1-D tensor of %lld elements", what,
                             (long long)c);
    if (vg_tensor_dtype(t) != dt)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s has dtype %s, expected %s (the input's)",
                             what, vg_dtype_name(vg_tensor_dtype(t)), vg_dtype_name(dt));
    return VG_OK;
}

static vg_code alloc_vec(vg__kctx *ctx, int i, vg_dtype dt, int64_t n, vg_tensor **o) {
    return vg__kctx_alloc_output(ctx, i, dt, &n, 1, o);
}

/* The kernels walk x row by row (rows = N*H*W, the channels contiguous and innermost,
 * so the compiler vectorizes the channel loop) in two passes: per-channel sums, then
 * the element-wise result from per-channel coefficients. The sums are taken over a
 * fixed number of row pieces (set by the shape alone) into double partials added in
 * piece order, so the bits do not depend on the thread count; the forward pass sums
 * x - shift (shift = the first row, near the mean) and its square, one read of x for
 * mean and variance without the cancellation of E[x^2] - E[x]^2. Before, every
 * element went through vg_tensor_data / vg_tensor_dtype calls, one channel at a time
 * with a stride of C (issue 30: a third of a MobileNet step). */
typedef struct bn_job {
    int64_t rows, ch, rows_per_piece, npieces;
    const void *x, *dy;
    void *out;
    double *part;         /* stats: npieces x 2 x ch */
    const double *shift;  /* stats: per channel */
    const void *m, *a, *b, *off; /* apply: per channel, in T */
    const void *feat;     /* fused gradients: the activation's output, for its mask */
    const void *fm, *fa, *fo; /* or the forward's m, a and offset, its output recomputed
                                 (y = (x - m) * a + off, bit for bit: see bn_backward) */
    bool training;
    bool rnd;             /* painted by the mixed-precision rewrite (exec/amp.c), float32:
                             y / dx rounded to bfloat16 as each row is written, and the
                             recomputed y of a fused gradient rounded before its mask */
    int act;              /* fused: 0 none, 1 Relu, 2 Relu6 (applied to y / masking dy) */
} bn_job;

/* A painted forward wrote y rounded to bfloat16, so a fused gradient that recomputes y
 * from x must take the mask of the rounded value: bf16(v) > 0 iff v > 2^-134 (half the
 * smallest bfloat16 subnormal; the tie goes to even, 0) and bf16(v) < 6 iff v <
 * 5.984375 (halfway between 5.96875 and 6; the tie goes to 6, the even one). The
 * thresholds (mlo, mhi: 0 and 6 unpainted) keep the mask loops a compare each. */
#define RELU_MASK_R(v) ((v) > mlo)
#define RELU6_MASK_R(v) (((v) > mlo) & ((v) < mhi))
/* The row just written, rounded in place while it is in cache (painted float32 only). */
static inline void bn_rrow_f32(float *row, int64_t n, bool on) {
    if (on) vg__bf16_round_n(row, row, (size_t)n);
}
static inline void bn_rrow_f64(double *row, int64_t n, bool on) { (void)row, (void)n, (void)on; }

/* The activation's gradient mask from its output f (ReluGrad / Relu6Grad of TF). */
#define RELU_MASK(f) ((f) > 0)
#define RELU6_MASK(f) (((f) > 0) & ((f) < 6))

/* Prefetch of the data 2 KB past row r's start, a line at a time (rw 1: to be written):
 * each pass streams its rows, but the hardware prefetcher alone held the passes to ~12
 * GB/s; with this, MobileNet's batch-norm gradient + ReLU6 85 -> 69 ms a step and its
 * forward 53 -> 42 ms (1 thread, 2-vCPU Xeon). */
#define BN_PF(T, base, r, ch, rw)                                                           \
    for (int64_t o_ = 0; o_ < (ch); o_ += 64 / (int64_t)sizeof(T))                          \
    __builtin_prefetch((const T *)(base) + (r) * (ch) + o_ + 2048 / (int64_t)sizeof(T), rw, 3)

#define BN_KERNELS(T, SFX)                                                                                        \
    /* forward stats: sum(x - shift), sum((x - shift)^2) */                                                       \
    VG_SIMD_CLONES static void bn_fstats_##SFX(void *arg, int64_t p0, int64_t p1) {                                              \
        const bn_job *j = arg;                                                                                    \
        const T *x = j->x;                                                                                        \
        const int64_t ch = j->ch;                                                                                 \
        for (int64_t p = p0; p < p1; p++) {                                                                       \
            double *restrict s1 = j->part + p * 2 * ch, *restrict s2 = s1 + ch;                                   \
            const double *restrict sh = j->shift;                                                                 \
            memset(s1, 0, sizeof(double) * (size_t)(2 * ch));                                                     \
            int64_t r1 = (p + 1) * j->rows_per_piece < j->rows ? (p + 1) * j->rows_per_piece : j->rows;           \
            for (int64_t r = p * j->rows_per_piece; r < r1; r++) {                                                \
                BN_PF(T, x, r, ch, 0);                                                                              \
                const T *restrict xr = x + r * ch;                                                                \
                for (int64_t k = 0; k < ch; k++) {                                                                \
                    double d = (double)xr[k] - sh[k];                                                             \
                    s1[k] += d;                                                                                   \
                    s2[k] += d * d;                                                                               \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* gradient stats: sum(dy), sum(dy * (x - mean)) */                                                           \
    VG_SIMD_CLONES static void bn_gstats_##SFX(void *arg, int64_t p0, int64_t p1) {                                              \
        const bn_job *j = arg;                                                                                    \
        const T *x = j->x, *dy = j->dy;                                                                           \
        const int64_t ch = j->ch;                                                                                 \
        for (int64_t p = p0; p < p1; p++) {                                                                       \
            double *restrict s1 = j->part + p * 2 * ch, *restrict s2 = s1 + ch;                                   \
            const double *restrict mu = j->shift;                                                                 \
            memset(s1, 0, sizeof(double) * (size_t)(2 * ch));                                                     \
            int64_t r1 = (p + 1) * j->rows_per_piece < j->rows ? (p + 1) * j->rows_per_piece : j->rows;           \
            for (int64_t r = p * j->rows_per_piece; r < r1; r++) {                                                \
                BN_PF(T, x, r, ch, 0);                                                                              \
                BN_PF(T, dy, r, ch, 0);                                                                             \
                const T *restrict xr = x + r * ch, *gr = dy + r * ch;                                             \
                if (j->act && !j->feat) { /* the mask from y recomputed (see bn_backward) */                    \
                    const T *restrict fm = j->fm, *restrict fa = j->fa, *restrict fo = j->fo, mlo = j->rnd ? (T)0x1p-134 : (T)0, mhi = j->rnd ? (T)5.984375 : (T)6;                     \
                    T *restrict tmp = (T *)(j->part + j->npieces * 2 * ch + p * ch);                              \
                    if (j->act == 1)                                                                              \
                        for (int64_t k = 0; k < ch; k++) {                                                        \
                            T gv = gr[k], v = (xr[k] - fm[k]) * fa[k] + fo[k];                                    \
                            tmp[k] = RELU_MASK_R(v) ? gv : (T)0;                                                    \
                        }                                                                                         \
                    else                                                                                          \
                        for (int64_t k = 0; k < ch; k++) {                                                        \
                            T gv = gr[k], v = (xr[k] - fm[k]) * fa[k] + fo[k];                                    \
                            tmp[k] = RELU6_MASK_R(v) ? gv : (T)0;                                                   \
                        }                                                                                         \
                    gr = tmp;                                                                                     \
                } else if (j->act) { /* the masked row first (a select GCC vectorizes), then the sums */          \
                    const T *restrict fr = (const T *)j->feat + r * ch;                                           \
                    T *restrict tmp = (T *)(j->part + j->npieces * 2 * ch + p * ch);                              \
                    if (j->act == 1)                                                                              \
                        for (int64_t k = 0; k < ch; k++) {                                                        \
                            T gv = gr[k];                                                                         \
                            tmp[k] = RELU_MASK(fr[k]) ? gv : (T)0;                                                \
                        }                                                                                         \
                    else                                                                                          \
                        for (int64_t k = 0; k < ch; k++) {                                                        \
                            T gv = gr[k];                                                                         \
                            tmp[k] = RELU6_MASK(fr[k]) ? gv : (T)0;                                               \
                        }                                                                                         \
                    gr = tmp;                                                                                     \
                }                                                                                                 \
                for (int64_t k = 0; k < ch; k++) {                                                                \
                    double g = (double)gr[k];                                                                     \
                    s1[k] += g;                                                                                   \
                    s2[k] += g * ((double)xr[k] - mu[k]);                                                         \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    /* forward: y = (x - m) * a + off */                                                                          \
    VG_SIMD_CLONES static void bn_fapply_##SFX(void *arg, int64_t r0, int64_t r1) {                                              \
        const bn_job *j = arg;                                                                                    \
        const int64_t ch = j->ch;                                                                                 \
        const T *restrict m = j->m, *restrict a = j->a, *restrict off = j->off;                                   \
        for (int64_t r = r0; r < r1; r++) {                                                                       \
            BN_PF(T, j->x, r, ch, 0);                                                                               \
            BN_PF(T, j->out, r, ch, 1);                                                                             \
            const T *restrict xr = (const T *)j->x + r * ch;                                                      \
            T *restrict yr = (T *)j->out + r * ch;                                                                \
            if (j->act == 0)                                                                                      \
                for (int64_t k = 0; k < ch; k++) yr[k] = (xr[k] - m[k]) * a[k] + off[k];                          \
            else if (j->act == 1)                                                                                 \
                for (int64_t k = 0; k < ch; k++) {                                                                \
                    T v = (xr[k] - m[k]) * a[k] + off[k];                                                         \
                    yr[k] = v < (T)0 ? (T)0 : v; /* NaN passes, as Relu */                                       \
                }                                                                                                 \
            else                                                                                                  \
                for (int64_t k = 0; k < ch; k++) {                                                                \
                    T v = (xr[k] - m[k]) * a[k] + off[k], t = v > (T)6 ? (T)6 : v;                                \
                    yr[k] = v < (T)0 ? (T)0 : t; /* NaN passes, as Relu6 */                                      \
                }                                                                                                 \
            bn_rrow_##SFX(yr, ch, j->rnd);                                                                        \
        }                                                                                                         \
    }                                                                                                             \
    /* gradient: dx = (dy - off) * a - (x - m) * b (training), dy * a (inference) */                              \
    VG_SIMD_CLONES static void bn_gapply_##SFX(void *arg, int64_t r0, int64_t r1) {                                              \
        const bn_job *j = arg;                                                                                    \
        const int64_t ch = j->ch;                                                                                 \
        const T *restrict m = j->m, *restrict a = j->a, *restrict b = j->b, *restrict off = j->off;               \
        for (int64_t r = r0; r < r1; r++) {                                                                       \
            BN_PF(T, j->x, r, ch, 0);                                                                               \
            BN_PF(T, j->out, r, ch, 1);                                                                             \
            BN_PF(T, j->dy, r, ch, 0);                                                                              \
            const T *restrict xr = (const T *)j->x + r * ch, *restrict gr = (const T *)j->dy + r * ch;            \
            T *restrict dr = (T *)j->out + r * ch;                                                                \
            if (j->act && !j->feat) { /* the mask from y recomputed (see bn_backward) */                        \
                const T *restrict fm = j->fm, *restrict fa = j->fa, *restrict fo = j->fo, mlo = j->rnd ? (T)0x1p-134 : (T)0, mhi = j->rnd ? (T)5.984375 : (T)6;                         \
                if (j->training && j->act == 1)                                                                   \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k], v = (xr[k] - fm[k]) * fa[k] + fo[k], g = RELU_MASK_R(v) ? gv : (T)0;          \
                        dr[k] = (g - off[k]) * a[k] - (xr[k] - m[k]) * b[k];                                      \
                    }                                                                                             \
                else if (j->training)                                                                             \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k], v = (xr[k] - fm[k]) * fa[k] + fo[k], g = RELU6_MASK_R(v) ? gv : (T)0;         \
                        dr[k] = (g - off[k]) * a[k] - (xr[k] - m[k]) * b[k];                                      \
                    }                                                                                             \
                else if (j->act == 1)                                                                             \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k], v = (xr[k] - fm[k]) * fa[k] + fo[k];                                        \
                        dr[k] = (RELU_MASK_R(v) ? gv : (T)0) * a[k];                                                \
                    }                                                                                             \
                else                                                                                              \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k], v = (xr[k] - fm[k]) * fa[k] + fo[k];                                        \
                        dr[k] = (RELU6_MASK_R(v) ? gv : (T)0) * a[k];                                               \
                    }                                                                                             \
            } else if (j->act) {                                                                                  \
                const T *restrict fr = (const T *)j->feat + r * ch;                                               \
                if (j->training && j->act == 1)                                                                   \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k], g = RELU_MASK(fr[k]) ? gv : (T)0;                                                    \
                        dr[k] = (g - off[k]) * a[k] - (xr[k] - m[k]) * b[k];                                      \
                    }                                                                                             \
                else if (j->training)                                                                             \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k], g = RELU6_MASK(fr[k]) ? gv : (T)0;                                                   \
                        dr[k] = (g - off[k]) * a[k] - (xr[k] - m[k]) * b[k];                                      \
                    }                                                                                             \
                else if (j->act == 1)                                                                             \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k];                                                                             \
                        dr[k] = (RELU_MASK(fr[k]) ? gv : (T)0) * a[k];                                            \
                    }                                                                                             \
                else                                                                                              \
                    for (int64_t k = 0; k < ch; k++) {                                                            \
                        T gv = gr[k];                                                                             \
                        dr[k] = (RELU6_MASK(fr[k]) ? gv : (T)0) * a[k];                                           \
                    }                                                                                             \
            } else if (j->training)                                                                               \
                for (int64_t k = 0; k < ch; k++) dr[k] = (gr[k] - off[k]) * a[k] - (xr[k] - m[k]) * b[k];         \
            else                                                                                                  \
                for (int64_t k = 0; k < ch; k++) dr[k] = gr[k] * a[k];                                            \
            bn_rrow_##SFX(dr, ch, j->rnd);                                                                        \
        }                                                                                                         \
    }

BN_KERNELS(float, f32)
BN_KERNELS(double, f64)

/* Number of row pieces for the sums: about 32k elements each, at most 64. */
static int64_t bn_pieces(int64_t rows, int64_t ch) {
    int64_t n = rows * ch / 32768;
    if (n > 64) n = 64;
    if (n > rows) n = rows;
    return n < 1 ? 1 : n;
}

/* Sums of the stats kernel fn over x's rows into s (2 x ch doubles, in piece order). */
static vg_code bn_sums(vg__kctx *ctx, bn_job *j, vg__range_fn fn, double *s) {
    int64_t np = bn_pieces(j->rows, j->ch);
    j->rows_per_piece = (j->rows + np - 1) / np;
    np = j->rows_per_piece ? (j->rows + j->rows_per_piece - 1) / j->rows_per_piece : 0;
    memset(s, 0, sizeof(double) * (size_t)(2 * j->ch));
    if (np == 0) return VG_OK;
    j->npieces = np; /* partial sums, then a row of scratch per piece */
    j->part = vg__malloc(sizeof(double) * (size_t)(np * 3 * j->ch));
    if (!j->part)
        return vg_status_set(vg__kctx_status(ctx), VG_RESOURCE_EXHAUSTED, "out of memory in %s",
                             vg_op_type(vg__kctx_op(ctx)));
    vg__kctx_parallel_for(ctx, np, 3 * j->rows_per_piece * j->ch, fn, j);
    for (int64_t p = 0; p < np; p++)
        for (int64_t k = 0; k < 2 * j->ch; k++) s[k] += j->part[p * 2 * j->ch + k];
    vg__free(j->part);
    j->part = NULL;
    return VG_OK;
}

/* Reads element k of a float or double vector. */
static double vat(const vg_tensor *t, int64_t k) {
    return vg_tensor_dtype(t) == VG_FLOAT ? ((const float *)vg_tensor_data(t))[k] : ((const double *)vg_tensor_data(t))[k];
}

/* Writes the per-channel vectors v[0..nv) (doubles, nv x ch) into typed outputs / the
 * coefficient buffer. */
static void vput(void *dst, vg_dtype dt, int64_t k, double v) {
    if (dt == VG_FLOAT) ((float *)dst)[k] = (float)v;
    else ((double *)dst)[k] = v;
}

/* The forward's per-channel coefficient a = scale / sqrt(var + eps), in double from the
 * variance as stored; one function for the forward and the fused gradient that
 * recomputes y from it, so both round the same value to T. */
static double bn_coef(double scale, double var, double eps) { return scale / sqrt(var + eps); }

static vg_code bn_forward(vg__kctx *ctx, int act) {
    vg_status *st = vg__kctx_status(ctx);
    bn_attrs a;
    vg_code c = get_attrs(vg__kctx_op(ctx), &a, st);
    if (c != VG_OK) return c;
    const vg_tensor *x = vg__kctx_input(ctx, 0), *scale = vg__kctx_input(ctx, 1), *offset = vg__kctx_input(ctx, 2),
                    *mean_in = vg__kctx_input(ctx, 3), *var_in = vg__kctx_input(ctx, 4);
    if (vg_tensor_ndims(x) != 4) return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be 4-dimensional");
    vg_dtype dt = vg_tensor_dtype(x);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: dtype %s is not supported (float double)",
                             vg_op_type(vg__kctx_op(ctx)), vg_dtype_name(dt));
    int64_t ch = vg_tensor_dim(x, 3), rows = ch ? vg_tensor_num_elements(x) / ch : 0;
    if ((c = kvec(ctx, scale, "scale", ch, dt)) || (c = kvec(ctx, offset, "offset", ch, dt))) return c;
    if (!a.training && ((c = kvec(ctx, mean_in, "mean", ch, dt)) || (c = kvec(ctx, var_in, "variance", ch, dt)))) return c;
    vg_tensor *y, *bm, *bv, *r1, *r2, *r3;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), 4, &y)) || (c = alloc_vec(ctx, 1, dt, ch, &bm)) ||
        (c = alloc_vec(ctx, 2, dt, ch, &bv)) || (c = alloc_vec(ctx, 3, dt, ch, &r1)) ||
        (c = alloc_vec(ctx, 4, dt, ch, &r2)) || (c = alloc_vec(ctx, 5, dt, 0, &r3)))
        return c;
    (void)r3;
    size_t esz = dt == VG_FLOAT ? sizeof(float) : sizeof(double);
    /* s: 2*ch sums, then shift (ch); coefficients m, a in T */
    double *s = vg__malloc(sizeof(double) * (size_t)(3 * ch + 1));
    char *coef = vg__malloc(esz * (size_t)(2 * ch + 1));
    if (!s || !coef) {
        vg__free(s), vg__free(coef);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in %s", vg_op_type(vg__kctx_op(ctx)));
    }
    double *shift = s + 2 * ch;
    bn_job j = {.rows = rows, .ch = ch, .x = vg_tensor_data(x), .out = vg_tensor_data(y), .shift = shift,
                .m = coef, .a = coef + esz * (size_t)ch, .off = vg_tensor_data(offset), .training = a.training,
                .rnd = dt == VG_FLOAT && vg__kctx_amp(ctx), .act = act};
    if (a.training) {
        for (int64_t k = 0; k < ch; k++) shift[k] = rows ? vat(x, k) : 0;
        if ((c = bn_sums(ctx, &j, dt == VG_FLOAT ? bn_fstats_f32 : bn_fstats_f64, s))) {
            vg__free(s), vg__free(coef);
            return c;
        }
    }
    for (int64_t k = 0; k < ch; k++) {
        double mean, var;
        if (a.training) {
            double d1 = rows ? s[k] / (double)rows : 0;
            mean = shift[k] + d1;
            var = rows ? s[ch + k] / (double)rows - d1 * d1 : 0;
            if (var < 0) var = 0;
            vput(vg_tensor_data(bm), dt, k, mean);
            vput(vg_tensor_data(bv), dt, k, rows > 1 ? var * (double)rows / (double)(rows - 1) : var);
        } else {
            mean = vat(mean_in, k);
            var = vat(var_in, k);
            vput(vg_tensor_data(bm), dt, k, mean);
            vput(vg_tensor_data(bv), dt, k, var);
        }
        vput(vg_tensor_data(r1), dt, k, mean);
        vput(vg_tensor_data(r2), dt, k, var);
        vput(coef, dt, k, mean);
        /* from the variance as stored (reserve_space_2, in T), so that a fused gradient
         * recomputes this coefficient, and y, bit for bit */
        double var_t = dt == VG_FLOAT ? (double)(float)var : var;
        vput(coef, dt, ch + k, bn_coef(vat(scale, k), var_t, a.eps));
    }
    if (rows) vg__kctx_parallel_for(ctx, rows, 3 * ch, dt == VG_FLOAT ? bn_fapply_f32 : bn_fapply_f64, &j);
    vg__free(s), vg__free(coef);
    return VG_OK;
}

static vg_code bn_backward(vg__kctx *ctx, int act) {
    vg_status *st = vg__kctx_status(ctx);
    bn_attrs a;
    vg_code c = get_attrs(vg__kctx_op(ctx), &a, st);
    if (c != VG_OK) return c;
    const vg_tensor *dy = vg__kctx_input(ctx, 0), *x = vg__kctx_input(ctx, 1), *scale = vg__kctx_input(ctx, 2),
                    *mean = vg__kctx_input(ctx, 3), *var = vg__kctx_input(ctx, 4);
    if (vg_tensor_ndims(x) != 4 || vg_tensor_ndims(dy) != 4 ||
        memcmp(vg_tensor_dims(x), vg_tensor_dims(dy), 4 * sizeof(int64_t)) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "x and y_backprop must be 4-dimensional of the same shape");
    vg_dtype dt = vg_tensor_dtype(x);
    if ((dt != VG_FLOAT && dt != VG_DOUBLE) || vg_tensor_dtype(dy) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: x and y_backprop must be both float32 or both float64",
                             vg_op_type(vg__kctx_op(ctx)));
    int64_t ch = vg_tensor_dim(x, 3), rows = ch ? vg_tensor_num_elements(x) / ch : 0;
    if ((c = kvec(ctx, scale, "scale", ch, dt)) || (c = kvec(ctx, mean, "reserve_space_1", ch, dt)) ||
        (c = kvec(ctx, var, "reserve_space_2", ch, dt)))
        return c;
    vg_tensor *dx, *ds, *dof, *r4, *r5;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), 4, &dx)) || (c = alloc_vec(ctx, 1, dt, ch, &ds)) ||
        (c = alloc_vec(ctx, 2, dt, ch, &dof)) || (c = alloc_vec(ctx, 3, dt, 0, &r4)) || (c = alloc_vec(ctx, 4, dt, 0, &r5)))
        return c;
    size_t esz = dt == VG_FLOAT ? sizeof(float) : sizeof(double);
    double *s = vg__malloc(sizeof(double) * (size_t)(3 * ch + 1));
    char *coef = vg__malloc(esz * (size_t)(4 * ch + 1));
    if (!s || !coef) {
        vg__free(s), vg__free(coef);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in %s", vg_op_type(vg__kctx_op(ctx)));
    }
    double *mu = s + 2 * ch;
    for (int64_t k = 0; k < ch; k++) mu[k] = vat(mean, k);
    bn_job j = {.rows = rows, .ch = ch, .x = vg_tensor_data(x), .dy = vg_tensor_data(dy), .out = vg_tensor_data(dx),
                .shift = mu, .m = coef, .a = coef + esz * (size_t)ch, .b = coef + 2 * esz * (size_t)ch,
                .off = coef + 3 * esz * (size_t)ch, .training = a.training,
                .rnd = dt == VG_FLOAT && vg__kctx_amp(ctx), .act = act};
    char *fcoef = NULL;
    const vg_tensor *f6 = act ? vg__kctx_input(ctx, 6) : NULL;
    if (act && f6 && vg_tensor_ndims(f6) == 1) {
        /* input 6 is the forward's offset (the planner checked that the activation's
         * input is the y of the FusedBatchNormV3 with this x, scale, mean, variance and
         * epsilon): y = (x - m) * a + offset is recomputed with the forward's m (the
         * mean in T) and a (scale / sqrt(var + eps) in double from the variance in T,
         * rounded to T), the same float operations as bn_fapply, so the mask is the one
         * the activation's output gives, without reading that output (2 of 7 passes) */
        if ((c = kvec(ctx, f6, "offset", ch, dt)) != VG_OK) {
            vg__free(s), vg__free(coef);
            return c;
        }
        if (!(fcoef = vg__malloc(esz * (size_t)(2 * ch + 1)))) {
            vg__free(s), vg__free(coef);
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in %s", vg_op_type(vg__kctx_op(ctx)));
        }
        for (int64_t k = 0; k < ch; k++) {
            vput(fcoef, dt, k, vat(mean, k));
            vput(fcoef, dt, ch + k, bn_coef(vat(scale, k), vat(var, k), a.eps));
        }
        j.fm = fcoef, j.fa = fcoef + esz * (size_t)ch, j.fo = vg_tensor_data(f6);
    } else if (act) { /* the activation's output, input 6 of the fused op: dy masked by it */
        const vg_tensor *f = f6;
        if (!f || vg_tensor_dtype(f) != dt || vg_tensor_ndims(f) != 4 ||
            memcmp(vg_tensor_dims(f), vg_tensor_dims(x), 4 * sizeof(int64_t)) != 0) {
            vg__free(s), vg__free(coef);
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the activation output must match x",
                                 vg_op_type(vg__kctx_op(ctx)));
        }
        j.feat = vg_tensor_data(f);
    }
    if ((c = bn_sums(ctx, &j, dt == VG_FLOAT ? bn_gstats_f32 : bn_gstats_f64, s))) {
        vg__free(s), vg__free(coef), vg__free(fcoef);
        return c;
    }
    for (int64_t k = 0; k < ch; k++) {
        double r = 1.0 / sqrt(vat(var, k) + a.eps), sc = vat(scale, k);
        double sdy = s[k], sdyx = s[ch + k] * r; /* sum(dy), sum(dy * xhat) */
        vput(vg_tensor_data(ds), dt, k, sdyx);
        vput(vg_tensor_data(dof), dt, k, sdy);
        double mdy = rows ? sdy / (double)rows : 0, mdyx = rows ? sdyx / (double)rows : 0;
        /* training: dx = sc*r*(dy - mdy - (x - m)*r*mdyx) */
        vput(coef, dt, k, mu[k]);
        vput(coef, dt, ch + k, sc * r);
        vput(coef, dt, 2 * ch + k, sc * r * r * mdyx);
        vput(coef, dt, 3 * ch + k, mdy);
    }
    if (rows) vg__kctx_parallel_for(ctx, rows, 4 * ch, dt == VG_FLOAT ? bn_gapply_f32 : bn_gapply_f64, &j);
    vg__free(s), vg__free(coef), vg__free(fcoef);
    return VG_OK;
}

static vg_code kernel_bn(vg__kctx *ctx) { return bn_forward(ctx, 0); }
static vg_code kernel_bn_relu(vg__kctx *ctx) { return bn_forward(ctx, 1); }
static vg_code kernel_bn_relu6(vg__kctx *ctx) { return bn_forward(ctx, 2); }
static vg_code kernel_bn_grad(vg__kctx *ctx) { return bn_backward(ctx, 0); }
static vg_code kernel_bn_grad_relu(vg__kctx *ctx) { return bn_backward(ctx, 1); }
static vg_code kernel_bn_grad_relu6(vg__kctx *ctx) { return bn_backward(ctx, 2); }

static void copy_bn_attrs(vg_op_builder *b, const vg_op *op) {
    float f;
    bool t;
    vg_op_builder_set_attr_float(b, "epsilon", vg_op_attr_float(op, "epsilon", &f) ? f : 0.0001f);
    vg_op_builder_set_attr_bool(b, "is_training", vg_op_attr_bool(op, "is_training", &t) ? t : true);
    vg_op_builder_set_attr_string(b, "data_format", "NHWC", 4);
}

static vg_code grad_bn(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    bool training = true;
    vg_op_attr_bool(op, "is_training", &training);
    vg_op_builder *b = vg_op_builder_new(g, "FusedBatchNormGradV3", "FusedBatchNormGradV3");
    if (!b) return vg_graph_status(g, NULL);
    vg_op_builder_add_input(b, dy[0]);
    vg_op_builder_add_input(b, vg_op_input(op, 0));
    vg_op_builder_add_input(b, vg_op_input(op, 1));
    vg_op_builder_add_input(b, training ? vg_out(op, 3) : vg_op_input(op, 3));
    vg_op_builder_add_input(b, training ? vg_out(op, 4) : vg_op_input(op, 4));
    vg_op_builder_add_input(b, vg_out(op, 5));
    copy_bn_attrs(b, op);
    vg_op *gr = vg_op_builder_finish(b);
    if (!gr) return vg_graph_status(g, NULL);
    dx[0] = vg_out(gr, 0);
    dx[1] = vg_out(gr, 1);
    dx[2] = vg_out(gr, 2);
    dx[3] = (vg_output){NULL, 0};
    dx[4] = (vg_output){NULL, 0};
    return vg_graph_status(g, NULL);
}

vg_op *vg_fused_batch_norm_v3(vg_graph *g, vg_output x, vg_output scale, vg_output offset, vg_output mean,
                              vg_output variance, float epsilon, bool is_training, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "FusedBatchNormV3", name ? name : "FusedBatchNormV3");
    if (!b) return NULL;
    vg_op_builder_add_input(b, x);
    vg_op_builder_add_input(b, scale);
    vg_op_builder_add_input(b, offset);
    vg_op_builder_add_input(b, mean);
    vg_op_builder_add_input(b, variance);
    vg_op_builder_set_attr_float(b, "epsilon", epsilon);
    vg_op_builder_set_attr_bool(b, "is_training", is_training);
    vg_op_builder_set_attr_string(b, "data_format", "NHWC", 4);
    return vg_op_builder_finish(b);
}

const vg__op_def vg__ops_nn_norm[] = {
    {"FusedBatchNormV3", 5, 5, 0, 0, shape_bn, kernel_bn, grad_bn},
    {"FusedBatchNormGradV3", 6, 6, 0, 0, shape_bn_grad, kernel_bn_grad, NULL},
    /* plan-time fusion only (src/exec/fuse.c): FusedBatchNormV3 whose y only a Relu /
     * Relu6 reads writes the activation's output; FusedBatchNormGradV3 whose y_backprop
     * is a ReluGrad / Relu6Grad reads that op's inputs (input 0 its gradient, input 6
     * the activation's output) and masks on the fly. Never in a user graph. */
    {"_VigilFusedBatchNormRelu", 5, 5, VG__OP_NOT_DIFFERENTIABLE, 0, shape_bn, kernel_bn_relu, NULL},
    {"_VigilFusedBatchNormRelu6", 5, 5, VG__OP_NOT_DIFFERENTIABLE, 0, shape_bn, kernel_bn_relu6, NULL},
    {"_VigilFusedBatchNormGradReluGrad", 7, 7, VG__OP_NOT_DIFFERENTIABLE, 0, shape_bn_grad, kernel_bn_grad_relu, NULL},
    {"_VigilFusedBatchNormGradRelu6Grad", 7, 7, VG__OP_NOT_DIFFERENTIABLE, 0, shape_bn_grad, kernel_bn_grad_relu6,
     NULL},
    {0},
};
