/*
 * rnn_ops.c - the fused LSTM op family of TF 1.15 (core/ops/rnn_ops.cc, kernels
 * lstm_ops.cc, gradients contrib/rnn/python/ops/lstm_ops.py): LSTMBlockCell,
 * LSTMBlockCellGrad, BlockLSTM, BlockLSTMGrad; float32 CPU kernels. Matrix products go
 * through vg__nn_gemm (oneDNN/OpenBLAS, split over the intra-op threads); BlockLSTM
 * multiplies all time steps' inputs by the input half of w in one GEMM and only the
 * recurrent half per step; its gradient does the same backwards (one GEMM per step for
 * h_prev's gradient, one each at the end for x's and w's). The element-wise gate math
 * is split over batch rows on the intra-op pool. Semantics in vigil/rnn_ops.h.
 */
#include "kernels/vmath.h"
#include "kernels/nn/nn_internal.h"
#include "kernels/simd.h"
#include "vigil/ops_ext.h"
#include "vigil/rnn_ops.h"
#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* CMakeLists.txt compiles this file with -fno-trapping-math, so that the gate loops'
 * clamps (float comparisons) if-convert and vectorize in every SIMD clone. */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* ------------------------------------------------------------------------ */
/* shape functions */

static vg_code need_float(vg_op *op, int i, const char *what, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (dt != VG_DTYPE_INVALID && dt != VG_FLOAT)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be float32, got %s", vg_op_type(op), what,
                             vg_dtype_name(dt));
    return VG_OK;
}

static vg_code need_rank(vg_op *op, int i, int rank, const char *what, vg_shape *s, vg_status *st) {
    *s = vg__op_input_shape(op, i);
    if (s->ndims >= 0 && s->ndims != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be rank %d, got rank %d", vg_op_type(op), what,
                             rank, s->ndims);
    return VG_OK;
}

static int64_t dim_of(const vg_shape *s, int i) { return s->ndims > i ? s->dims[i] : -1; }

/* Shared part: x (rank xr), cs_prev, h_prev, w, wci, wcf, wco, b starting at input `first`
 * (x at first). Gives batch, units, input size (-1 unknown). */
static const char *const k_names[] = {"x", "cs_prev", "h_prev", "w", "wci", "wcf", "wco", "b"};

static vg_code common_shapes(vg_op *op, int first, int xr, int64_t *T, int64_t *B, int64_t *H, int64_t *I,
                             vg_status *st) {
    static const int ranks[8] = {0, 2, 2, 2, 1, 1, 1, 1};
    vg_shape s[8];
    for (int k = 0; k < 8; k++) {
        if (need_float(op, first + k, k_names[k], st)) return st->code;
        if (need_rank(op, first + k, k ? ranks[k] : xr, k_names[k], &s[k], st)) return st->code;
    }
    int xo = xr == 3 ? 1 : 0;
    *T = xr == 3 ? dim_of(&s[0], 0) : 1;
    *B = dim_of(&s[0], xo);
    int64_t w1 = dim_of(&s[3], 1);
    if (w1 >= 0 && w1 % 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: w's second dimension (%lld) must be 4 * num_units",
                             vg_op_type(op), (long long)w1);
    *H = w1 >= 0 ? w1 / 4 : dim_of(&s[1], 1);
    *I = dim_of(&s[0], xo + 1);
    int64_t w0 = dim_of(&s[3], 0);
    if (w0 >= 0 && *I >= 0 && *H >= 0 && w0 != *I + *H)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "%s: w's first dimension (%lld) must be input_size + num_units (%lld + %lld)",
                             vg_op_type(op), (long long)w0, (long long)*I, (long long)*H);
    for (int k = 1; k <= 2; k++) {
        int64_t b0 = dim_of(&s[k], 0), h1 = dim_of(&s[k], 1);
        if ((b0 >= 0 && *B >= 0 && b0 != *B) || (h1 >= 0 && *H >= 0 && h1 != *H))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be [batch, num_units] = [%lld, %lld]",
                                 vg_op_type(op), k_names[k], (long long)*B, (long long)*H);
        if (*B < 0) *B = b0;
    }
    for (int k = 4; k <= 7; k++) {
        int64_t d = dim_of(&s[k], 0), want = k == 7 ? (*H >= 0 ? 4 * *H : -1) : *H;
        if (d >= 0 && want >= 0 && d != want)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must have %lld elements, got %lld", vg_op_type(op),
                                 k_names[k], (long long)want, (long long)d);
    }
    return VG_OK;
}

static void set_attr_defaults(vg_op *op) {
    vg__op_set_default_attr_type(op, "T", VG_FLOAT);
    vg__op_set_default_attr_bool(op, "use_peephole", false);
}

static vg_code shape_cell(vg_op *op, vg_status *st) {
    int64_t T, B, H, I;
    if (common_shapes(op, 0, 2, &T, &B, &H, &I, st)) return st->code;
    set_attr_defaults(op);
    vg__op_set_num_outputs(op, 7);
    int64_t d[2] = {B, H};
    for (int k = 0; k < 7; k++) vg__op_set_output(op, k, VG_FLOAT, vg_shape_make(d, 2));
    return VG_OK;
}

static vg_code shape_cell_grad(vg_op *op, vg_status *st) {
    int64_t T, B, H, I;
    if (common_shapes(op, 0, 2, &T, &B, &H, &I, st)) return st->code;
    for (int k = 8; k < 16; k++)
        if (need_float(op, k, "a forward output or gradient", st)) return st->code;
    set_attr_defaults(op);
    vg__op_set_num_outputs(op, 5);
    int64_t d[2] = {B, H}, d4[2] = {B, H >= 0 ? 4 * H : -1}, h[1] = {H};
    vg__op_set_output(op, 0, VG_FLOAT, vg_shape_make(d, 2));
    vg__op_set_output(op, 1, VG_FLOAT, vg_shape_make(d4, 2));
    for (int k = 2; k < 5; k++) vg__op_set_output(op, k, VG_FLOAT, vg_shape_make(h, 1));
    return VG_OK;
}

static vg_code check_seq_len(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_DTYPE_INVALID && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: seq_len_max must be int64, got %s", vg_op_type(op),
                             vg_dtype_name(dt));
    vg_shape s;
    return need_rank(op, 0, 0, "seq_len_max", &s, st);
}

static vg_code shape_block(vg_op *op, vg_status *st) {
    int64_t T, B, H, I;
    if (check_seq_len(op, st) || common_shapes(op, 1, 3, &T, &B, &H, &I, st)) return st->code;
    set_attr_defaults(op);
    vg__op_set_num_outputs(op, 7);
    int64_t d[3] = {T, B, H};
    for (int k = 0; k < 7; k++) vg__op_set_output(op, k, VG_FLOAT, vg_shape_make(d, 3));
    return VG_OK;
}

static vg_code shape_block_grad(vg_op *op, vg_status *st) {
    int64_t T, B, H, I;
    if (check_seq_len(op, st) || common_shapes(op, 1, 3, &T, &B, &H, &I, st)) return st->code;
    for (int k = 9; k < 18; k++)
        if (need_float(op, k, "a forward output or gradient", st)) return st->code;
    set_attr_defaults(op);
    vg__op_set_num_outputs(op, 8);
    int64_t dx[3] = {T, B, I}, d[2] = {B, H}, w[2] = {I >= 0 && H >= 0 ? I + H : -1, H >= 0 ? 4 * H : -1},
            h[1] = {H}, b[1] = {H >= 0 ? 4 * H : -1};
    vg__op_set_output(op, 0, VG_FLOAT, vg_shape_make(dx, 3));
    vg__op_set_output(op, 1, VG_FLOAT, vg_shape_make(d, 2));
    vg__op_set_output(op, 2, VG_FLOAT, vg_shape_make(d, 2));
    vg__op_set_output(op, 3, VG_FLOAT, vg_shape_make(w, 2));
    for (int k = 4; k < 7; k++) vg__op_set_output(op, k, VG_FLOAT, vg_shape_make(h, 1));
    vg__op_set_output(op, 7, VG_FLOAT, vg_shape_make(b, 1));
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* run-time checks */

typedef struct dims {
    int64_t T, B, H, I;
} dims;

typedef struct attrs {
    float forget_bias, cell_clip;
    bool peephole;
} attrs;

static void get_attrs(const vg_op *op, attrs *a) {
    float f;
    bool b;
    a->forget_bias = vg_op_attr_float(op, "forget_bias", &f) ? f : 1.0f;
    a->cell_clip = vg_op_attr_float(op, "cell_clip", &f) ? f : 3.0f;
    a->peephole = vg_op_attr_bool(op, "use_peephole", &b) ? b : false;
}

static bool has_dims(const vg_tensor *t, int n, const int64_t *d) {
    if (vg_tensor_ndims(t) != n) return false;
    for (int i = 0; i < n; i++)
        if (vg_tensor_dim(t, i) != d[i]) return false;
    return true;
}

/* Checks the 8 inputs x, cs_prev, h_prev, w, wci, wcf, wco, b from input `first`. */
static vg_code check_inputs(vg__kctx *ctx, int first, int xr, dims *d) {
    vg_status *st = vg__kctx_status(ctx);
    for (int k = 0; k < 8; k++) {
        const vg_tensor *t = vg__kctx_input(ctx, first + k);
        if (vg_tensor_dtype(t) != VG_FLOAT)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be float32, got %s", k_names[k],
                                 vg_dtype_name(vg_tensor_dtype(t)));
    }
    const vg_tensor *x = vg__kctx_input(ctx, first), *w = vg__kctx_input(ctx, first + 3);
    if (vg_tensor_ndims(x) != xr) return vg_status_set(st, VG_INVALID_ARGUMENT, "x must be rank %d, got rank %d", xr, vg_tensor_ndims(x));
    if (vg_tensor_ndims(w) != 2 || vg_tensor_dim(w, 1) % 4)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "w must be [input_size + num_units, 4 * num_units]");
    d->T = xr == 3 ? vg_tensor_dim(x, 0) : 1;
    d->B = vg_tensor_dim(x, xr - 2);
    d->I = vg_tensor_dim(x, xr - 1);
    d->H = vg_tensor_dim(w, 1) / 4;
    if (vg_tensor_dim(w, 0) != d->I + d->H)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "w.dim(0) != input_size + num_units: %lld vs. %lld",
                             (long long)vg_tensor_dim(w, 0), (long long)(d->I + d->H));
    int64_t bh[2] = {d->B, d->H}, h1[1] = {d->H}, b1[1] = {4 * d->H};
    for (int k = 1; k <= 2; k++)
        if (!has_dims(vg__kctx_input(ctx, first + k), 2, bh))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be [batch_size, num_units] = [%lld, %lld]",
                                 k_names[k], (long long)d->B, (long long)d->H);
    for (int k = 4; k <= 6; k++)
        if (!has_dims(vg__kctx_input(ctx, first + k), 1, h1))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be [num_units] = [%lld]", k_names[k],
                                 (long long)d->H);
    if (!has_dims(vg__kctx_input(ctx, first + 7), 1, b1))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "b must be [4 * num_units] = [%lld]", (long long)(4 * d->H));
    return VG_OK;
}

static const float *fin(vg__kctx *ctx, int i) { return vg_tensor_data(vg__kctx_input(ctx, i)); }

/* exp in float without libm (kernels/vmath.h): the gate math vectorizes. */
#define vexp vg__vexpf
static inline float vsigm(float x) { return 1.0f / (1.0f + vexp(-x)); }
static inline float vtanh(float x) { return 1.0f - 2.0f / (vexp(2.0f * x) + 1.0f); }

/* ------------------------------------------------------------------------ */
/* the gate math, one batch row at a time (compiled per ISA: simd.h) */

typedef struct fwd_job {
    int64_t H;
    float forget_bias, clip; /* clip: +inf for none */
    const float *icfo;       /* [B, 4H]: x*wx + h*wh (no bias) */
    const float *cs_prev, *b, *wci, *wcf, *wco; /* peephole weights: zeros when unused */
    float *i, *cs, *f, *o, *ci, *co, *h;        /* [B, H] */
} fwd_job;

VG_SIMD_CLONES static void fwd_row(int64_t H, float fb, float clip, const float *restrict g, const float *restrict b,
                                   const float *restrict cp, const float *restrict wci, const float *restrict wcf,
                                   const float *restrict wco, float *restrict i, float *restrict cs,
                                   float *restrict f, float *restrict o, float *restrict ci, float *restrict co,
                                   float *restrict h) {
    for (int64_t k = 0; k < H; k++) {
        float iv = g[k] + b[k] + cp[k] * wci[k];
        float cv = g[H + k] + b[H + k];
        float fv = g[2 * H + k] + b[2 * H + k] + fb + cp[k] * wcf[k];
        float ig = vsigm(iv), fg = vsigm(fv), cg = vtanh(cv);
        float c = cg * ig + cp[k] * fg;
        c = c < -clip ? -clip : c;
        c = c > clip ? clip : c;
        float og = vsigm(g[3 * H + k] + b[3 * H + k] + c * wco[k]);
        float cto = vtanh(c);
        i[k] = ig;
        f[k] = fg;
        ci[k] = cg;
        cs[k] = c;
        o[k] = og;
        co[k] = cto;
        h[k] = cto * og;
    }
}

static void fwd_rows(void *arg, int64_t r0, int64_t r1) {
    const fwd_job *j = arg;
    int64_t H = j->H;
    for (int64_t r = r0; r < r1; r++)
        fwd_row(H, j->forget_bias, j->clip, j->icfo + r * 4 * H, j->b, j->cs_prev + r * H, j->wci, j->wcf, j->wco,
                j->i + r * H, j->cs + r * H, j->f + r * H, j->o + r * H, j->ci + r * H, j->co + r * H, j->h + r * H);
}

typedef struct bwd_job {
    int64_t H;
    const float *cs_prev, *i, *cs, *f, *o, *ci, *co, *cs_grad, *h_grad, *wci, *wcf, *wco;
    const float *cs_grad2, *h_grad2; /* second terms (the recurrent gradients; zeros if none) */
    float *dicfo, *cs_prev_grad;     /* [B, 4H], [B, H] */
} bwd_job;

VG_SIMD_CLONES static void bwd_row(int64_t H, const float *restrict cp, const float *restrict ia,
                                   const float *restrict fa, const float *restrict oa, const float *restrict cia,
                                   const float *restrict coa, const float *restrict csg, const float *restrict hgr,
                                   const float *restrict csg2, const float *restrict hgr2, const float *restrict wci,
                                   const float *restrict wcf, const float *restrict wco, float *restrict d,
                                   float *restrict cpg) {
    for (int64_t k = 0; k < H; k++) {
        float hg = hgr[k] + hgr2[k], cg = csg[k] + csg2[k];
        float i = ia[k], f = fa[k], o = oa[k], ci = cia[k], co = coa[k];
        float dov = o * (1.0f - o) * hg * co;
        float dcs = (1.0f - co * co) * hg * o + cg + dov * wco[k];
        float dci = (1.0f - ci * ci) * dcs * i;
        float df = f * (1.0f - f) * dcs * cp[k];
        float di = i * (1.0f - i) * dcs * ci;
        d[k] = di;
        d[H + k] = dci;
        d[2 * H + k] = df;
        d[3 * H + k] = dov;
        cpg[k] = dcs * f + di * wci[k] + df * wcf[k];
    }
}

static void bwd_rows(void *arg, int64_t r0, int64_t r1) {
    const bwd_job *j = arg;
    int64_t H = j->H;
    for (int64_t r = r0; r < r1; r++) {
        int64_t q = r * H;
        bwd_row(H, j->cs_prev + q, j->i + q, j->f + q, j->o + q, j->ci + q, j->co + q, j->cs_grad + q, j->h_grad + q,
                j->cs_grad2 + q, j->h_grad2 + q, j->wci, j->wcf, j->wco, j->dicfo + r * 4 * H, j->cs_prev_grad + q);
    }
}

/* Peephole weight gradients: sum over rows of di*cs_prev, df*cs_prev, do*cs (added). */
static void peep_grads(int64_t B, int64_t H, const float *dicfo, const float *cs_prev, const float *cs, float *wci_g,
                       float *wcf_g, float *wco_g) {
    for (int64_t r = 0; r < B; r++) {
        const float *d = dicfo + r * 4 * H;
        for (int64_t k = 0; k < H; k++) {
            wci_g[k] += d[k] * cs_prev[r * H + k];
            wcf_g[k] += d[2 * H + k] * cs_prev[r * H + k];
            wco_g[k] += d[3 * H + k] * cs[r * H + k];
        }
    }
}

static float clip_of(const attrs *a) { return a->cell_clip > 0.0f ? a->cell_clip : FLT_MAX; }

/* The peephole weights input k (of wci, wcf, wco), or zeros when they are unused. */
static const float *peep_w(vg__kctx *ctx, const attrs *a, int input, const float *zeros) {
    return a->peephole ? fin(ctx, input) : zeros;
}

static void run_rows(vg__kctx *ctx, int64_t B, int64_t H, vg__range_fn fn, void *job) {
    vg__kctx_parallel_for(ctx, B, 40 * H, fn, job);
}

static vg_code alloc_n(vg__kctx *ctx, int first, int n, int nd, const int64_t *d, float **out) {
    for (int k = 0; k < n; k++) {
        vg_tensor *t;
        vg_code c = vg__kctx_alloc_output(ctx, first + k, VG_FLOAT, d, nd, &t);
        if (c != VG_OK) return c;
        out[k] = vg_tensor_data(t);
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* LSTMBlockCell / LSTMBlockCellGrad */

static vg_code seq_len(vg__kctx *ctx, const dims *d, int64_t *n);

/* The start of the four kernels: checks the inputs from `first` on (x of rank xr) into d,
 * for the block ops (L not NULL) seq_len_max (input 0) into *L, and reads the attrs. */
static vg_code lstm_begin(vg__kctx *ctx, int first, int xr, dims *d, int64_t *L, attrs *a) {
    vg_code c = check_inputs(ctx, first, xr, d);
    if (c == VG_OK && L) c = seq_len(ctx, d, L);
    if (c == VG_OK) get_attrs(vg__kctx_op(ctx), a);
    return c;
}

/* n floats of scratch followed by h zeros (*zeros, the absent peepholes' weights); NULL
 * with RESOURCE_EXHAUSTED "<what>: out of memory". */
static float *scratch_with_zeros(vg__kctx *ctx, int64_t n, int64_t h, const char *what, float **zeros) {
    float *p = vg_malloc(sizeof(float) * (size_t)(n + h + 1));
    if (!p) {
        vg_status_set(vg__kctx_status(ctx), VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        return NULL;
    }
    *zeros = p + n;
    memset(*zeros, 0, sizeof(float) * (size_t)h);
    return p;
}

static vg_code kernel_cell(vg__kctx *ctx) {
    dims d;
    attrs a;
    vg_code c = lstm_begin(ctx, 0, 2, &d, NULL, &a);
    if (c != VG_OK) return c;
    int64_t bh[2] = {d.B, d.H};
    float *o[7];
    if ((c = alloc_n(ctx, 0, 7, 2, bh, o)) != VG_OK) return c;
    float *zeros, *icfo = scratch_with_zeros(ctx, d.B * 4 * d.H, d.H, "LSTMBlockCell", &zeros);
    if (!icfo) return vg__kctx_status(ctx)->code;
    const float *w = fin(ctx, 3);
    int64_t G = 4 * d.H;
    vg__nn_gemm(ctx, VG_FLOAT, false, false, d.B, G, d.I, fin(ctx, 0), d.I, w, G, 0.0, icfo);
    vg__nn_gemm(ctx, VG_FLOAT, false, false, d.B, G, d.H, fin(ctx, 2), d.H, w + d.I * G, G, d.I ? 1.0 : 0.0, icfo);
    fwd_job j = {d.H, a.forget_bias, clip_of(&a), icfo, fin(ctx, 1), fin(ctx, 7), peep_w(ctx, &a, 4, zeros),
                 peep_w(ctx, &a, 5, zeros), peep_w(ctx, &a, 6, zeros), o[0], o[1], o[2], o[3], o[4], o[5], o[6]};
    run_rows(ctx, d.B, d.H, fwd_rows, &j);
    vg_free(icfo);
    return VG_OK;
}

/* Checks that inputs [from, to) are all [rows..., H] like `want`. */
static vg_code check_same(vg__kctx *ctx, int from, int to, int nd, const int64_t *want) {
    static const char *const names[] = {"i", "cs", "f", "o", "ci", "co", "h"};
    for (int k = from; k < to; k++) {
        const vg_tensor *t = vg__kctx_input(ctx, k);
        if (vg_tensor_dtype(t) != VG_FLOAT || !has_dims(t, nd, want))
            return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT,
                                 "input %d (%s) must be float32 of the forward outputs' shape", k,
                                 k - from < 7 ? names[k - from] : "gradient");
    }
    return VG_OK;
}

static vg_code kernel_cell_grad(vg__kctx *ctx) {
    dims d;
    attrs a;
    vg_code c = lstm_begin(ctx, 0, 2, &d, NULL, &a);
    if (c != VG_OK) return c;
    int64_t bh[2] = {d.B, d.H}, b4[2] = {d.B, 4 * d.H}, h1[1] = {d.H};
    if ((c = check_same(ctx, 8, 16, 2, bh)) != VG_OK) return c;
    float *cpg, *dicfo, *pg[3];
    if ((c = alloc_n(ctx, 0, 1, 2, bh, &cpg)) != VG_OK || (c = alloc_n(ctx, 1, 1, 2, b4, &dicfo)) != VG_OK ||
        (c = alloc_n(ctx, 2, 3, 1, h1, pg)) != VG_OK)
        return c;
    float *zeros = vg_calloc((size_t)(d.B * d.H + d.H + 1), sizeof(float));
    if (!zeros) return vg_status_set(vg__kctx_status(ctx), VG_RESOURCE_EXHAUSTED, "LSTMBlockCellGrad: out of memory");
    bwd_job j = {d.H, fin(ctx, 1), fin(ctx, 8), fin(ctx, 9), fin(ctx, 10), fin(ctx, 11), fin(ctx, 12), fin(ctx, 13),
                 fin(ctx, 14), fin(ctx, 15), peep_w(ctx, &a, 4, zeros), peep_w(ctx, &a, 5, zeros),
                 peep_w(ctx, &a, 6, zeros), zeros, zeros, dicfo, cpg};
    run_rows(ctx, d.B, d.H, bwd_rows, &j);
    vg_free(zeros);
    for (int k = 0; k < 3; k++) memset(pg[k], 0, sizeof(float) * (size_t)d.H);
    if (a.peephole) peep_grads(d.B, d.H, dicfo, fin(ctx, 1), fin(ctx, 9), pg[0], pg[1], pg[2]);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* BlockLSTM / BlockLSTMGrad */

static vg_code seq_len(vg__kctx *ctx, const dims *d, int64_t *n) {
    const vg_tensor *t = vg__kctx_input(ctx, 0);
    if (vg_tensor_dtype(t) != VG_INT64 || vg_tensor_ndims(t) != 0)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "seq_len_max must be an int64 scalar");
    int64_t v = *(const int64_t *)vg_tensor_data(t);
    if (v < 0) return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "seq_len_max = %lld must be >= 0", (long long)v);
    *n = v < d->T ? v : d->T;
    return VG_OK;
}

static vg_code kernel_block(vg__kctx *ctx) {
    dims d;
    attrs a;
    int64_t L;
    vg_code c = lstm_begin(ctx, 1, 3, &d, &L, &a);
    if (c != VG_OK) return c;
    int64_t tbh[3] = {d.T, d.B, d.H}, G = 4 * d.H, BH = d.B * d.H;
    float *o[7];
    if ((c = alloc_n(ctx, 0, 7, 3, tbh, o)) != VG_OK) return c;
    float *zeros, *icfo = scratch_with_zeros(ctx, L * d.B * G, d.H, "BlockLSTM", &zeros);
    if (!icfo) return vg__kctx_status(ctx)->code;
    const float *w = fin(ctx, 4);
    /* all steps' input projections at once */
    if (L > 0) vg__nn_gemm(ctx, VG_FLOAT, false, false, L * d.B, G, d.I, fin(ctx, 1), d.I, w, G, 0.0, icfo);
    for (int64_t t = 0; t < L; t++) {
        const float *hp = t ? o[6] + (t - 1) * BH : fin(ctx, 3), *cp = t ? o[1] + (t - 1) * BH : fin(ctx, 2);
        float *g = icfo + t * d.B * G;
        vg__nn_gemm(ctx, VG_FLOAT, false, false, d.B, G, d.H, hp, d.H, w + d.I * G, G, d.I ? 1.0 : 0.0, g);
        fwd_job j = {d.H, a.forget_bias, clip_of(&a), g, cp, fin(ctx, 8), peep_w(ctx, &a, 5, zeros),
                     peep_w(ctx, &a, 6, zeros), peep_w(ctx, &a, 7, zeros), o[0] + t * BH, o[1] + t * BH, o[2] + t * BH, o[3] + t * BH, o[4] + t * BH, o[5] + t * BH,
                     o[6] + t * BH};
        run_rows(ctx, d.B, d.H, fwd_rows, &j);
    }
    for (int k = 0; k < 7; k++) memset(o[k] + L * BH, 0, sizeof(float) * (size_t)((d.T - L) * BH));
    vg_free(icfo);
    return VG_OK;
}

static vg_code kernel_block_grad(vg__kctx *ctx) {
    dims d;
    attrs a;
    int64_t L;
    vg_code c = lstm_begin(ctx, 1, 3, &d, &L, &a);
    if (c != VG_OK) return c;
    int64_t tbh[3] = {d.T, d.B, d.H}, G = 4 * d.H, BH = d.B * d.H;
    if ((c = check_same(ctx, 9, 18, 3, tbh)) != VG_OK) return c;
    int64_t tbi[3] = {d.T, d.B, d.I}, bh[2] = {d.B, d.H}, wd[2] = {d.I + d.H, G}, h1[1] = {d.H}, b1[1] = {G};
    float *xg, *st2[2], *wg, *pg[3], *bg;
    if ((c = alloc_n(ctx, 0, 1, 3, tbi, &xg)) != VG_OK || (c = alloc_n(ctx, 1, 2, 2, bh, st2)) != VG_OK ||
        (c = alloc_n(ctx, 3, 1, 2, wd, &wg)) != VG_OK || (c = alloc_n(ctx, 4, 3, 1, h1, pg)) != VG_OK ||
        (c = alloc_n(ctx, 7, 1, 1, b1, &bg)) != VG_OK)
        return c;
    float *zeros, *dicfo = scratch_with_zeros(ctx, L * d.B * G + 3 * BH + L * BH, d.H, "BlockLSTMGrad", &zeros);
    if (!dicfo) return vg__kctx_status(ctx)->code;
    float *dh = dicfo + L * d.B * G, *dcs = dh + BH, *dcs2 = dcs + BH, *hprev = dcs2 + BH;
    const float *w = fin(ctx, 4), *cs = fin(ctx, 10), *h = fin(ctx, 15);
    memset(dh, 0, sizeof(float) * (size_t)BH);
    memset(dcs, 0, sizeof(float) * (size_t)BH);
    for (int k = 0; k < 3; k++) memset(pg[k], 0, sizeof(float) * (size_t)d.H);
    for (int64_t t = L - 1; t >= 0; t--) {
        int64_t q = t * BH;
        const float *cp = t ? cs + q - BH : fin(ctx, 2);
        /* dcs: the gradient flowing into cs[t] from step t+1; dcs2 receives cs[t-1]'s */
        bwd_job j = {d.H, cp, fin(ctx, 9) + q, cs + q, fin(ctx, 11) + q, fin(ctx, 12) + q, fin(ctx, 13) + q,
                     fin(ctx, 14) + q, fin(ctx, 16) + q, fin(ctx, 17) + q, peep_w(ctx, &a, 5, zeros),
                     peep_w(ctx, &a, 6, zeros), peep_w(ctx, &a, 7, zeros), dcs, dh, dicfo + t * d.B * G, dcs2};
        run_rows(ctx, d.B, d.H, bwd_rows, &j);
        float *tmp = dcs;
        dcs = dcs2;
        dcs2 = tmp;
        if (a.peephole) peep_grads(d.B, d.H, dicfo + t * d.B * G, cp, cs + q, pg[0], pg[1], pg[2]);
        vg__nn_gemm(ctx, VG_FLOAT, false, true, d.B, d.H, G, dicfo + t * d.B * G, G, w + d.I * G, G, 0.0, dh);
        memcpy(hprev + q, t ? h + q - BH : fin(ctx, 3), sizeof(float) * (size_t)BH);
    }
    memcpy(st2[0], dcs, sizeof(float) * (size_t)BH);
    memcpy(st2[1], dh, sizeof(float) * (size_t)BH);
    memset(xg, 0, sizeof(float) * (size_t)(d.T * d.B * d.I));
    memset(bg, 0, sizeof(float) * (size_t)G);
    if (L > 0) {
        vg__nn_gemm(ctx, VG_FLOAT, false, true, L * d.B, d.I, G, dicfo, G, w, G, 0.0, xg);
        vg__nn_gemm(ctx, VG_FLOAT, true, false, d.I, G, L * d.B, fin(ctx, 1), d.I, dicfo, G, 0.0, wg);
        vg__nn_gemm(ctx, VG_FLOAT, true, false, d.H, G, L * d.B, hprev, d.H, dicfo, G, 0.0, wg + d.I * G);
        for (int64_t r = 0; r < L * d.B; r++)
            for (int64_t k = 0; k < G; k++) bg[k] += dicfo[r * G + k];
    } else {
        memset(wg, 0, sizeof(float) * (size_t)((d.I + d.H) * G));
    }
    vg_free(dicfo);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* gradients (lstm_ops.py _LSTMBlockCellGrad, _BlockLSTMGrad) */

static void copy_attrs(vg_op_builder *b, const vg_op *op, bool all) {
    attrs a;
    get_attrs(op, &a);
    if (all) {
        vg_op_builder_set_attr_float(b, "forget_bias", a.forget_bias);
        vg_op_builder_set_attr_float(b, "cell_clip", a.cell_clip);
    }
    vg_op_builder_set_attr_bool(b, "use_peephole", a.peephole);
    vg_op_builder_set_attr_type(b, "T", VG_FLOAT);
}

static vg_code grad_cell(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_op_builder *b = vg_op_builder_new(g, "LSTMBlockCellGrad", "LSTMBlockCellGrad");
    if (!b) return vg_graph_status(g, NULL);
    for (int k = 0; k < 8; k++) vg_op_builder_add_input(b, vg_op_input(op, k));
    for (int k = 0; k < 6; k++) vg_op_builder_add_input(b, vg_out(op, k));
    vg_op_builder_add_input(b, dy[1]);
    vg_op_builder_add_input(b, dy[6]);
    copy_attrs(b, op, false);
    vg_op *gr = vg_op_builder_finish(b);
    if (!gr) return vg_graph_status(g, NULL);
    vg_output x = vg_op_input(op, 0), hp = vg_op_input(op, 2), w = vg_op_input(op, 3), dicfo = vg_out(gr, 1);
    vg_output xh = vg_concat_c(g, (vg_output[]){x, hp}, 2, 1, NULL);
    vg_output xh_grad = vg_matmul(g, dicfo, w, false, true, NULL);
    /* x_grad = xh_grad[:, :input_size], h_prev_grad = xh_grad[:, input_size:] */
    vg_shape xs = vg_output_shape(x);
    if (xs.ndims == 2 && xs.dims[1] >= 0) {
        vg_op *sp = vg_split_v(g, xh_grad, (int32_t[]){(int32_t)xs.dims[1], -1}, 2, 1, NULL);
        if (!sp) return vg_graph_status(g, NULL);
        dx[0] = vg_out(sp, 0);
        dx[2] = vg_out(sp, 1);
    } else {
        return vg_graph_set_error(g, VG_UNIMPLEMENTED, "LSTMBlockCell gradient: x's input size must be known");
    }
    dx[1] = vg_out(gr, 0);
    dx[3] = vg_matmul(g, xh, dicfo, true, false, NULL);
    dx[4] = vg_out(gr, 2);
    dx[5] = vg_out(gr, 3);
    dx[6] = vg_out(gr, 4);
    dx[7] = vg_bias_add_grad(g, dicfo, NULL);
    return vg_graph_status(g, NULL);
}

static vg_code grad_block(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_op_builder *b = vg_op_builder_new(g, "BlockLSTMGrad", "BlockLSTMGrad");
    if (!b) return vg_graph_status(g, NULL);
    for (int k = 0; k < 9; k++) vg_op_builder_add_input(b, vg_op_input(op, k));
    for (int k = 0; k < 7; k++) vg_op_builder_add_input(b, vg_out(op, k));
    vg_op_builder_add_input(b, dy[1]);
    vg_op_builder_add_input(b, dy[6]);
    copy_attrs(b, op, false);
    vg_op *gr = vg_op_builder_finish(b);
    if (!gr) return vg_graph_status(g, NULL);
    dx[0] = (vg_output){NULL, 0};
    for (int k = 0; k < 8; k++) dx[k + 1] = vg_out(gr, k);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_op *build(vg_graph *g, const char *type, const vg_output *in, int n, float forget_bias, float cell_clip,
                    bool peephole, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, type, name);
    if (!b) return NULL;
    vg_op_builder_add_inputs(b, in, n);
    vg_op_builder_set_attr_float(b, "forget_bias", forget_bias);
    vg_op_builder_set_attr_float(b, "cell_clip", cell_clip);
    vg_op_builder_set_attr_bool(b, "use_peephole", peephole);
    vg_op_builder_set_attr_type(b, "T", VG_FLOAT);
    return vg_op_builder_finish(b);
}

vg_op *vg_lstm_block_cell(vg_graph *g, vg_output x, vg_output cs_prev, vg_output h_prev, vg_output w, vg_output wci,
                          vg_output wcf, vg_output wco, vg_output b, float forget_bias, float cell_clip,
                          bool use_peephole, const char *name) {
    vg_output in[8] = {x, cs_prev, h_prev, w, wci, wcf, wco, b};
    return build(g, "LSTMBlockCell", in, 8, forget_bias, cell_clip, use_peephole, name ? name : "LSTMBlockCell");
}

vg_op *vg_block_lstm(vg_graph *g, vg_output seq_len_max, vg_output x, vg_output cs_prev, vg_output h_prev,
                     vg_output w, vg_output wci, vg_output wcf, vg_output wco, vg_output b, float forget_bias,
                     float cell_clip, bool use_peephole, const char *name) {
    vg_output in[9] = {seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b};
    return build(g, "BlockLSTM", in, 9, forget_bias, cell_clip, use_peephole, name ? name : "BlockLSTM");
}

const vg__op_def vg__ops_rnn[] = {
    {"LSTMBlockCell", 8, 8, 0, 0, shape_cell, kernel_cell, grad_cell},
    {"LSTMBlockCellGrad", 16, 16, 0, 0, shape_cell_grad, kernel_cell_grad, NULL},
    {"BlockLSTM", 9, 9, 0, 0, shape_block, kernel_block, grad_block},
    {"BlockLSTMGrad", 18, 18, 0, 0, shape_block_grad, kernel_block_grad, NULL},
    {0},
};
