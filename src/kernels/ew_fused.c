/*
 * ew_fused.c - _VigilFusedElementwise: the kernel of a fused element-wise cluster
 * (plan-time fusion, src/exec/fuse_ew.c; the program's layout is in exec/ewfuse.h).
 *
 * The op never appears in a user graph: the planner gives a plan node this def and a
 * program. The kernel walks the cluster's shape in tiles of whole channel rows (about
 * 512 values), evaluates the program into tile registers (2 KB each, in L1), writes
 * the outputs the plan reads straight from the registers that compute them, and sums
 * the reduced registers per channel or per row. Per-channel reductions go into one
 * partial per fixed piece of tiles (double), added in piece order at the end; a row's
 * sum is whole inside one tile and goes straight to its output (16 float lanes, each
 * summing every 16th value in order, the lanes added pairwise in a fixed tree, the
 * tail added in double, in every ISA clone): the same sums whatever the number of threads.
 * Row inputs (one value per row of the cluster's shape) are read in place by binary
 * instructions (each row's value against the other operand's row), and spread along
 * their rows into a tile register for the other instructions. Element-wise values are those of the separate kernels (the same float
 * operation per element, math_cwise_ops.c's NaN conventions for Maximum / Minimum).
 *
 * Chain paths (issue 30; off with VG_EW_CHAIN=0 or vg__ew_set_chain, the same bits either
 * way): instructions whose operands are all broadcast (scalars, channel vectors, and
 * such instructions, as the batch-norm gradients' tiled coefficients) are computed once
 * per run instead of per tile; and the common clusters (the ResNet's batch norm + leaky
 * ReLU forward, its gradient's reduction pass and dx, layer norm's normalization and
 * its gradient's sums; matched at plan time on the program's structure, fuse_ew.c) run
 * their whole chain per element in one loop, the values in vector registers, instead of
 * one pass over the tile per instruction.
 *
 * The run's arrays (broadcast values, hoisted values, tile registers, reduction
 * partials, pointer tables) live in one block kept on the program between runs
 * (ewfuse.h vg__ew_cache): a run allocates only the first time, or when its thread
 * count needs a bigger block.
 */
/* no-tree-sink: a chain loop's select keeps both operands computed before it
 * (chain_bn_leaky), so it if-converts without AVX-512 masks (the x86-64-v3 clone
 * stayed scalar otherwise) */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-tree-sink")
#include "kernels/kernel.h"
#include "kernels/simd.h"
#include "exec/ewfuse.h"
#include <stdatomic.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#define EW_TILE 512       /* target values per tile */
#define EW_PIECE_TILES 8  /* tiles per reduction piece (fixed: thread-count independent) */

typedef struct ew_job {
    const vg__ew_prog *p;
    int nregs;
    int64_t L, ntiles, npieces;
    const float **in_f;    /* full or row float inputs (NULL otherwise) */
    const uint8_t **in_b;  /* full or row bool inputs */
    const float *bcast;    /* per input: L broadcast values (scalar / channel inputs) */
    float **out_f;         /* per output: float data of full outputs */
    uint8_t **out_b;       /* per output: bool data */
    int *reg_store;        /* per register: the full float output written in place, -1 */
    int nred;
    int *row_arg;          /* per instruction: which operand (0 / 1) is a float row input
                              read in place (eval_row), -1 */
    bool *fill;            /* per input: a row input some instruction reads spread out */
    int *red_of;           /* per output: its index among the reductions, -1 */
    double *part;          /* npieces x nred x C */
    const float **hoisted; /* per register: the L values of an instruction of broadcast
                              operands only, computed once per run (NULL: per tile) */
    int chain;             /* the program's chain loop (VG__EW_CHAIN_*) when the chain paths
                              are on, 0: op by op */
    float *scratch;        /* per slot: nregs x L + C floats */
    int64_t scratch_per;
} ew_job;

VG_SIMD_CLONES
static void eval_ins(int op, int64_t m, float *restrict o, const float *restrict a, const float *restrict b,
                     const float *restrict c) {
    switch (op) {
    case VG__EWI_ADD: for (int64_t i = 0; i < m; i++) o[i] = a[i] + b[i]; break;
    case VG__EWI_SUB: for (int64_t i = 0; i < m; i++) o[i] = a[i] - b[i]; break;
    case VG__EWI_MUL: for (int64_t i = 0; i < m; i++) o[i] = a[i] * b[i]; break;
    case VG__EWI_DIV: for (int64_t i = 0; i < m; i++) o[i] = a[i] / b[i]; break;
    case VG__EWI_MAX: for (int64_t i = 0; i < m; i++) o[i] = a[i] < b[i] ? b[i] : a[i]; break;
    case VG__EWI_MIN: for (int64_t i = 0; i < m; i++) o[i] = b[i] < a[i] ? b[i] : a[i]; break;
    case VG__EWI_SQDIFF:
        for (int64_t i = 0; i < m; i++) {
            float d = a[i] - b[i];
            o[i] = d * d;
        }
        break;
    case VG__EWI_LESS: for (int64_t i = 0; i < m; i++) o[i] = a[i] < b[i] ? 1.0f : 0.0f; break;
    case VG__EWI_LESS_EQUAL: for (int64_t i = 0; i < m; i++) o[i] = a[i] <= b[i] ? 1.0f : 0.0f; break;
    case VG__EWI_GREATER: for (int64_t i = 0; i < m; i++) o[i] = a[i] > b[i] ? 1.0f : 0.0f; break;
    case VG__EWI_GREATER_EQUAL: for (int64_t i = 0; i < m; i++) o[i] = a[i] >= b[i] ? 1.0f : 0.0f; break;
    case VG__EWI_SELECT: for (int64_t i = 0; i < m; i++) o[i] = a[i] != 0.0f ? b[i] : c[i]; break;
    case VG__EWI_NEG: for (int64_t i = 0; i < m; i++) o[i] = -a[i]; break;
    case VG__EWI_SQUARE: for (int64_t i = 0; i < m; i++) o[i] = a[i] * a[i]; break;
    case VG__EWI_COPY: for (int64_t i = 0; i < m; i++) o[i] = a[i]; break;
    case VG__EWI_RELU: for (int64_t i = 0; i < m; i++) o[i] = a[i] < 0.0f ? 0.0f : a[i]; break; /* NaN passes */
    case VG__EWI_RELU_GRAD: for (int64_t i = 0; i < m; i++) o[i] = b[i] > 0.0f ? a[i] : 0.0f; break;
    case VG__EWI_ZERO: for (int64_t i = 0; i < m; i++) o[i] = 0.0f; break;
    case VG__EWI_ONE: for (int64_t i = 0; i < m; i++) o[i] = 1.0f; break;
    default: break;
    }
}

VG_SIMD_CLONES
static void add_into(int64_t m, float *restrict o, const float *restrict b) {
    for (int64_t i = 0; i < m; i++) o[i] += b[i];
}

VG_SIMD_CLONES
static void add_rows(int64_t rows, int64_t C, const float *restrict x, float *restrict acc, double *restrict part) {
    int64_t r4 = rows & ~(int64_t)3; /* four rows per step, as var_tile */
    for (int64_t c = 0; c < C; c++) acc[c] = 0.0f;
    for (int64_t r = 0; r < r4; r += 4) {
        const float *x0 = x + r * C, *x1 = x0 + C, *x2 = x1 + C, *x3 = x2 + C;
        for (int64_t c = 0; c < C; c++) acc[c] += (x0[c] + x1[c]) + (x2[c] + x3[c]);
    }
    for (int64_t r = r4; r < rows; r++)
        for (int64_t c = 0; c < C; c++) acc[c] += x[r * C + c];
    for (int64_t c = 0; c < C; c++) part[c] += (double)acc[c];
}

/* A moments variance (ewfuse.h: var): the tile's per-channel mean and squared deviations
 * (float, x read twice while in L1; a tile holds at most EW_TILE / C rows) folded in
 * double into the piece's running mean and M2, of na rows so far, by Chan et al.'s
 * pairwise update. */
VG_SIMD_CLONES
static void var_tile(int64_t rows, int64_t C, const float *restrict x, float *restrict s, float *restrict q,
                     double *restrict mean, double *restrict m2, int64_t na) {
    /* four rows per step: a short channel row (C = 16: one vector) otherwise waits on
     * the previous row's add through s / q (store-to-load latency per row) */
    int64_t r4 = rows & ~(int64_t)3;
    for (int64_t c = 0; c < C; c++) s[c] = 0.0f, q[c] = 0.0f;
    for (int64_t r = 0; r < r4; r += 4) {
        const float *x0 = x + r * C, *x1 = x0 + C, *x2 = x1 + C, *x3 = x2 + C;
        for (int64_t c = 0; c < C; c++) s[c] += (x0[c] + x1[c]) + (x2[c] + x3[c]);
    }
    for (int64_t r = r4; r < rows; r++)
        for (int64_t c = 0; c < C; c++) s[c] += x[r * C + c];
    const float inv = 1.0f / (float)rows;
    for (int64_t c = 0; c < C; c++) s[c] *= inv;
    for (int64_t r = 0; r < r4; r += 4) {
        const float *x0 = x + r * C, *x1 = x0 + C, *x2 = x1 + C, *x3 = x2 + C;
        for (int64_t c = 0; c < C; c++) {
            float d0 = x0[c] - s[c], d1 = x1[c] - s[c], d2 = x2[c] - s[c], d3 = x3[c] - s[c];
            q[c] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
        }
    }
    for (int64_t r = r4; r < rows; r++)
        for (int64_t c = 0; c < C; c++) {
            float d = x[r * C + c] - s[c];
            q[c] += d * d;
        }
    if (na == 0) {
        for (int64_t c = 0; c < C; c++) mean[c] = (double)s[c], m2[c] = (double)q[c];
        return;
    }
    const double nb = (double)rows, n = (double)na + nb, wb = nb / n, wab = (double)na * nb / n;
    for (int64_t c = 0; c < C; c++) {
        double delta = (double)s[c] - mean[c];
        mean[c] += delta * wb;
        m2[c] += (double)q[c] + delta * delta * wab;
    }
}

/* y[r] = scale * sum of row r of x (rows x C), in a fixed order (see the top) */
VG_SIMD_CLONES
static void sum_rows(int64_t rows, int64_t C, const float *restrict x, float *restrict y, double scale) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * C;
        float acc[16] = {0};
        int64_t c = 0;
        for (; c + 16 <= C; c += 16)
            for (int k = 0; k < 16; k++) acc[k] += xr[c + k];
        for (int w = 8; w >= 1; w /= 2) /* lanes k and k + w, a fixed tree */
            for (int k = 0; k < w; k++) acc[k] += acc[k + w];
        double s = (double)acc[0];
        for (; c < C; c++) s += (double)xr[c];
        y[r] = (float)(s * scale);
    }
}

/* A binary instruction with one operand a float row input: per row, the other
 * operand's row against the row's value (the same float operation as eval_ins, the
 * operands in their order). */
#define EW_ROWLOOP(X, Y, EXPR)                                                      \
    for (int64_t r = 0; r < rows; r++) {                                            \
        const float s = v[r];                                                       \
        const float *restrict ar = a + r * C;                                       \
        float *restrict orr = o + r * C;                                            \
        for (int64_t c = 0; c < C; c++) {                                           \
            const float x = (X), y = (Y);                                           \
            orr[c] = (EXPR);                                                        \
        }                                                                           \
    }
#define EW_ROWOP(EXPR)                                                              \
    do {                                                                            \
        if (v_first) EW_ROWLOOP(s, ar[c], EXPR) else EW_ROWLOOP(ar[c], s, EXPR)     \
    } while (0)
VG_SIMD_CLONES
static void eval_row(int op, int64_t rows, int64_t C, float *restrict o, const float *restrict a,
                     const float *restrict v, bool v_first) {
    switch (op) {
    case VG__EWI_ADD: EW_ROWOP(x + y); break;
    case VG__EWI_SUB: EW_ROWOP(x - y); break;
    case VG__EWI_MUL: EW_ROWOP(x * y); break;
    case VG__EWI_DIV: EW_ROWOP(x / y); break;
    case VG__EWI_MAX: EW_ROWOP(x < y ? y : x); break;
    case VG__EWI_MIN: EW_ROWOP(y < x ? y : x); break;
    case VG__EWI_SQDIFF: EW_ROWOP((x - y) * (x - y)); break;
    default: break;
    }
}
#undef EW_ROWOP
#undef EW_ROWLOOP

static bool row_op(int op) {
    return op == VG__EWI_ADD || op == VG__EWI_SUB || op == VG__EWI_MUL || op == VG__EWI_DIV || op == VG__EWI_MAX ||
           op == VG__EWI_MIN || op == VG__EWI_SQDIFF;
}

/* o (rows x C) = v[r] along each row r */
VG_SIMD_CLONES
static void fill_rows(int64_t rows, int64_t C, const float *restrict v, float *restrict o) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < C; c++) o[r * C + c] = v[r];
}

VG_SIMD_CLONES
static void fill_rows_bool(int64_t rows, int64_t C, const uint8_t *restrict v, float *restrict o) {
    for (int64_t r = 0; r < rows; r++) {
        float x = v[r] ? 1.0f : 0.0f;
        for (int64_t c = 0; c < C; c++) o[r * C + c] = x;
    }
}

VG_SIMD_CLONES
static void bool_to_float(int64_t m, const uint8_t *restrict b, float *restrict o) {
    for (int64_t i = 0; i < m; i++) o[i] = b[i] ? 1.0f : 0.0f;
}

VG_SIMD_CLONES
static void float_to_bool(int64_t m, const float *restrict x, uint8_t *restrict o) {
    for (int64_t i = 0; i < m; i++) o[i] = x[i] != 0.0f;
}

/* Specialised chain loops (issue 30): the whole chain of a common cluster per element,
 * its values in vector registers, one pass over the tile instead of one per
 * instruction. Each is the same float operations, in the same order, as eval_ins would
 * do one instruction at a time (C11 mode: no contraction into FMA), so the values are
 * identical bit for bit. Matched at plan time on the program's structure (the patterns
 * and the matcher: fuse_ew.c ew_pats, vg__ew_prog_match_chain; chain_reg[k] is the
 * register of the pattern's node k, chain_out[k] the program output of its output k):
 * BN_LEAKY: batch normalization + leaky ReLU (tf.where): y = x * a + b, mask = y < z,
 *   out = mask ? s * y : y; outputs mask (bool), out.
 * BN_LEAKY_GRAD: its gradient's reduction pass: g = mask ? d : 0, h = mask ? 0 : d,
 *   u = h + s * g (AddN), v = x * u, w = u * c; outputs sum(u), w, sum(v).
 * BN_DX: batch-norm dx: (r + k * (x - mu)) + q or ((r + r2) + k * (x - mu)) + q.
 * LN: layer normalization, per-row rstd and mean: k = rstd * gamma,
 *   y = x * k + (beta - mean * k); outputs k, y.
 * LN_GRAD: layer norm's gradient row / channel sums: a = g * x, n = -x, u = a + rs * n
 *   (AddN), v = n * y, w = rr * u, z = u * c; outputs rowsum(v), sum(w), rowsum(z). */
static _Atomic int64_t g_chain_runs[VG__EW_CHAIN_COUNT];

int64_t vg__ew_chain_runs(int kind) {
    int64_t s = 0;
    for (int k = 1; k < VG__EW_CHAIN_COUNT; k++) s += kind == 0 || kind == k ? g_chain_runs[k] : 0;
    return s;
}

VG_SIMD_CLONES
static void chain_bn_leaky(int64_t m, const float *restrict x, const float *restrict a, const float *restrict b,
                           const float *restrict z, const float *restrict s, uint8_t *restrict mask,
                           float *restrict out) {
    for (int64_t i = 0; i < m; i++) {
        float y = x[i] * a[i];
        y = y + b[i];
        float sy = s[i] * y;
        mask[i] = (uint8_t)(y < z[i]);
        out[i] = y < z[i] ? sy : y;
    }
}

VG_SIMD_CLONES
static void chain_bn_leaky_grad(int64_t m, const uint8_t *restrict mask, const float *restrict d,
                                const float *restrict s, const float *restrict x, const float *restrict c,
                                float *restrict u, float *restrict v, float *restrict w) {
    for (int64_t i = 0; i < m; i++) {
        float g = mask[i] ? d[i] : 0.0f, h = mask[i] ? 0.0f : d[i];
        float ui = h + s[i] * g;
        u[i] = ui;
        v[i] = x[i] * ui;
        w[i] = ui * c[i];
    }
}

VG_SIMD_CLONES
static void chain_bn_dx(int64_t m, const float *restrict x, const float *restrict mu, const float *restrict k,
                        const float *restrict r, const float *restrict r2, const float *restrict q,
                        float *restrict out) {
    if (r2)
        for (int64_t i = 0; i < m; i++) {
            float t = k[i] * (x[i] - mu[i]);
            out[i] = ((r[i] + r2[i]) + t) + q[i];
        }
    else
        for (int64_t i = 0; i < m; i++) {
            float t = k[i] * (x[i] - mu[i]);
            out[i] = (r[i] + t) + q[i];
        }
}

VG_SIMD_CLONES
static void chain_ln(int64_t rows, int64_t C, const float *restrict rs, const float *restrict g,
                     const float *restrict x, const float *restrict mr, const float *restrict b, float *restrict ko,
                     float *restrict y) {
    for (int64_t r = 0; r < rows; r++) {
        const float s = rs[r], mu = mr[r];
        const float *restrict gr = g + r * C, *restrict xr = x + r * C, *restrict br = b + r * C;
        float *restrict kr = ko + r * C, *restrict yr = y + r * C;
        for (int64_t c = 0; c < C; c++) {
            float k = s * gr[c];
            kr[c] = k;
            yr[c] = xr[c] * k + (br[c] - mu * k);
        }
    }
}

VG_SIMD_CLONES
static void chain_ln_grad(int64_t rows, int64_t C, const float *restrict g, const float *restrict x,
                          const float *restrict rs, const float *restrict y, const float *restrict rr,
                          const float *restrict c, float *restrict v, float *restrict w, float *restrict z) {
    for (int64_t r = 0; r < rows; r++) {
        const float s2 = rs[r], s4 = rr[r];
        const int64_t o = r * C;
        for (int64_t k = 0; k < C; k++) {
            float a = g[o + k] * x[o + k], n = -x[o + k];
            float u = a + s2 * n;
            v[o + k] = n * y[o + k];
            w[o + k] = s4 * u;
            z[o + k] = u * c[o + k];
        }
    }
}

static _Atomic int g_chain = -1; /* -1: VG_EW_CHAIN not read yet */

bool vg__ew_set_chain(bool on) {
    bool was = g_chain < 0 ? !(getenv("VG_EW_CHAIN") && getenv("VG_EW_CHAIN")[0] == '0') : g_chain == 1;
    g_chain = on ? 1 : 0;
    return was;
}

static bool chain_on(void) {
    if (g_chain < 0) vg__ew_set_chain(!(getenv("VG_EW_CHAIN") && getenv("VG_EW_CHAIN")[0] == '0'));
    return g_chain == 1;
}

/* The tile through a specialised loop (j->chain): full inputs and outputs in place, the
 * reduced registers into the slot's tile registers (R), for run_tile's reductions. */
static void run_chain(const ew_job *j, int64_t t0, int64_t m, float *scr) {
    const vg__ew_prog *p = j->p;
    const int64_t L = j->L, C = p->C;
    const int *g = p->chain_reg, *ok = p->chain_out;
    /* pattern node k's values for this tile: a float input in place (full) or broadcast,
     * a hoisted instruction's; a row input's rows (RW); a bool input (B) */
#define V(k) (g[k] >= p->ninputs ? j->hoisted[g[k]]                                                      \
              : p->in_kind[g[k]] == VG__EWIN_FULL ? j->in_f[g[k]] + t0 : j->bcast + (int64_t)g[k] * L)
#define RW(k) (j->in_f[g[k]] + t0 / C)
    /* a reduced output's tile register */
#define RED(k) (scr + (int64_t)p->outs[ok[k]].reg * L)
    switch (j->chain) {
    case VG__EW_CHAIN_BN_LEAKY:
        chain_bn_leaky(m, V(0), V(1), V(2), V(3), V(4), j->out_b[ok[0]] + t0, j->out_f[ok[1]] + t0);
        break;
    case VG__EW_CHAIN_BN_LEAKY_GRAD:
        chain_bn_leaky_grad(m, j->in_b[g[0]] + t0, V(1), V(2), V(3), V(4), RED(0), RED(2), j->out_f[ok[1]] + t0);
        break;
    case VG__EW_CHAIN_BN_DX:
        chain_bn_dx(m, V(0), V(1), V(2), V(3), p->chain_nin > 5 ? V(5) : NULL, V(4), j->out_f[ok[0]] + t0);
        break;
    case VG__EW_CHAIN_LN:
        chain_ln(m / C, C, RW(0), V(1), V(2), RW(3), V(4), j->out_f[ok[0]] + t0, j->out_f[ok[1]] + t0);
        break;
    case VG__EW_CHAIN_LN_GRAD:
        chain_ln_grad(m / C, C, V(0), V(1), RW(2), V(3), RW(4), V(5), RED(0), RED(1), RED(2));
        break;
    default: break;
    }
#undef V
#undef RW
#undef RED
}

static void run_tile(const ew_job *j, int64_t t0, int64_t m, float *scr, const float **R, double *part,
                     int64_t rows_before) {
    const vg__ew_prog *p = j->p;
    const int64_t L = j->L, C = p->C;
    /* The next tile's full inputs (to read) and outputs (to write) are prefetched: the
     * tile's first instructions stalled on memory (perf: the loads of full inputs took
     * most of eval_ins), the hardware prefetcher alone kept ~10 GB/s. Measured on the
     * ResNet's clusters (2-vCPU Xeon, 1 thread): 168 -> 141-149 ms a step; the graph
     * network's layer norms 11.5 -> 9.6 ms. Two tiles ahead was slower. */
    int64_t nx = p->n - (t0 + L) < L ? p->n - (t0 + L) : L; /* the next tile's values */
    for (int i = 0; i < p->ninputs && nx > 0; i++)
        if (p->in_kind[i] == VG__EWIN_FULL && j->in_f[i])
            for (int64_t e = 0; e < nx; e += 16) __builtin_prefetch(j->in_f[i] + t0 + L + e, 0, 3);
    for (int k = 0; k < p->nouts && nx > 0; k++)
        if (j->out_f[k] && !p->outs[k].reduce)
            for (int64_t e = 0; e < nx; e += 16) __builtin_prefetch(j->out_f[k] + t0 + L + e, 1, 3);
    if (j->chain) { /* the reduced outputs' registers are their tile slots */
        run_chain(j, t0, m, scr);
        for (int k = 0; k < p->nouts; k++)
            if (p->outs[k].reduce) R[p->outs[k].reg] = scr + (int64_t)p->outs[k].reg * L;
        goto outputs;
    }
    for (int i = 0; i < p->ninputs; i++) {
        if (p->in_kind[i] == VG__EWIN_ROW) { /* tiles hold whole rows: t0 is a multiple of C */
            R[i] = NULL;
            if (!j->fill[i]) continue;
            if (j->in_b[i]) fill_rows_bool(m / C, C, j->in_b[i] + t0 / C, scr + (int64_t)i * L);
            else fill_rows(m / C, C, j->in_f[i] + t0 / C, scr + (int64_t)i * L);
            R[i] = scr + (int64_t)i * L;
        } else if (p->in_kind[i] != VG__EWIN_FULL) R[i] = j->bcast + (int64_t)i * L;
        else if (j->in_b[i]) {
            bool_to_float(m, j->in_b[i] + t0, scr + (int64_t)i * L);
            R[i] = scr + (int64_t)i * L;
        } else R[i] = j->in_f[i] + t0;
    }
    for (int k = 0; k < p->nins; k++) {
        const vg__ew_ins *in = &p->ins[k];
        int r = p->ninputs + k, st = j->reg_store[r];
        if (j->hoisted[r]) {
            R[r] = j->hoisted[r];
            continue;
        }
        float *o = st >= 0 ? j->out_f[st] + t0 : scr + (int64_t)r * L;
        if (j->row_arg[k] >= 0) {
            int ra = j->row_arg[k];
            eval_row(in->op, m / C, C, o, R[in->args[1 - ra]], j->in_f[in->args[ra]] + t0 / C, ra == 0);
        } else if (in->op == VG__EWI_ADDN) {
            eval_ins(VG__EWI_ADD, m, o, R[in->args[0]], R[in->args[1]], NULL);
            for (int a = 2; a < in->nargs; a++) add_into(m, o, R[in->args[a]]);
        } else {
            eval_ins(in->op, m, o, in->nargs > 0 ? R[in->args[0]] : NULL, in->nargs > 1 ? R[in->args[1]] : NULL,
                     in->nargs > 2 ? R[in->args[2]] : NULL);
        }
        R[r] = o;
    }
outputs:;
    float *acc = scr + (int64_t)j->nregs * L;
    for (int k = 0; k < p->nouts; k++) {
        const vg__ew_out *o = &p->outs[k];
        if (o->reduce && o->row) sum_rows(m / C, C, R[o->reg], j->out_f[k] + t0 / C, o->scale);
        else if (o->reduce && o->var) {
            double *pm = part + (int64_t)j->red_of[k] * C;
            var_tile(m / C, C, R[o->reg], acc + C + 16, acc + 2 * C + 16, pm, pm + C, rows_before);
        }
        else if (o->reduce) add_rows(m / C, C, R[o->reg], acc, part + (int64_t)j->red_of[k] * C);
        else if (o->is_bool && !j->chain) float_to_bool(m, R[o->reg], j->out_b[k] + t0);
    }
}

static void run_pieces(void *arg, int64_t begin, int64_t end, int slot) {
    const ew_job *j = arg;
    float *scr = j->scratch + (int64_t)slot * j->scratch_per;
    const float *R[j->nregs > 0 ? j->nregs : 1];
    for (int64_t pc = begin; pc < end; pc++) {
        double *part = j->nred ? j->part + pc * (int64_t)j->nred * j->p->C : NULL;
        if (part) memset(part, 0, sizeof(double) * (size_t)(j->nred * j->p->C));
        int64_t t_end = (pc + 1) * EW_PIECE_TILES < j->ntiles ? (pc + 1) * EW_PIECE_TILES : j->ntiles;
        for (int64_t t = pc * EW_PIECE_TILES; t < t_end; t++) {
            int64_t t0 = t * j->L, m = j->p->n - t0 < j->L ? j->p->n - t0 : j->L;
            run_tile(j, t0, m, scr, R, part, (t0 - pc * EW_PIECE_TILES * j->L) / j->p->C);
        }
    }
}

static _Atomic int64_t g_work_allocs;

int64_t vg__ew_work_allocs(void) { return g_work_allocs; }

/* The next piece of the run's work block: n bytes at a 64-byte boundary. */
static void *carve(char *base, size_t *off, size_t n) {
    void *r = base ? base + *off : NULL;
    *off += (n + 63) & ~(size_t)63;
    return r;
}

/* Lays out the run's arrays in base (NULL: only sizes it); returns the bytes needed. */
static size_t layout(ew_job *j, char *base, int nslots, int nred, float **bcast, float **hbuf, bool **bc) {
    const vg__ew_prog *p = j->p;
    size_t off = 64, ni = (size_t)p->ninputs + 1, no = (size_t)p->nouts + 1, nr = (size_t)j->nregs + 1;
    j->in_f = carve(base, &off, ni * sizeof(float *));
    j->in_b = carve(base, &off, ni * sizeof(uint8_t *));
    *bcast = carve(base, &off, sizeof(float) * (size_t)(j->L * (int64_t)ni));
    j->out_f = carve(base, &off, no * sizeof(float *));
    j->out_b = carve(base, &off, no * sizeof(uint8_t *));
    j->reg_store = carve(base, &off, nr * sizeof(int));
    j->row_arg = carve(base, &off, ((size_t)p->nins + 1) * sizeof(int));
    j->fill = carve(base, &off, ni * sizeof(bool));
    j->hoisted = carve(base, &off, nr * sizeof(float *));
    j->red_of = carve(base, &off, no * sizeof(int));
    j->scratch = carve(base, &off, sizeof(float) * (size_t)(j->scratch_per * nslots));
    j->part = carve(base, &off, sizeof(double) * (size_t)(j->npieces * nred * p->C + 1));
    *hbuf = carve(base, &off, sizeof(float) * (size_t)(((int64_t)p->nins + 1) * j->L));
    *bc = carve(base, &off, nr * sizeof(bool));
    return off;
}

static vg_code kernel_fused_elementwise(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg__ew_prog *p = vg__kctx_fused_prog(ctx);
    if (!p || vg__kctx_num_inputs(ctx) != p->ninputs)
        return vg_status_set(st, VG_INTERNAL, "fused element-wise node without its program");
    const int64_t C = p->C, n = p->n;
    int64_t L = C >= EW_TILE ? C : (EW_TILE / C) * C;
    ew_job j = {.p = p, .nregs = p->ninputs + p->nins, .L = L};
    j.ntiles = n > 0 ? (n + L - 1) / L : 0;
    j.npieces = (j.ntiles + EW_PIECE_TILES - 1) / EW_PIECE_TILES;
    int nslots = vg__kctx_num_threads(ctx);
    if (nslots > j.npieces) nslots = (int)(j.npieces > 0 ? j.npieces : 1);
    j.scratch_per = (int64_t)j.nregs * L + 3 * C + 16; /* acc, and 2C floats for var_tile */
    int nred_max = 0;
    for (int k = 0; k < p->nouts; k++)
        if (p->outs[k].reduce && !p->outs[k].row) nred_max += p->outs[k].var ? 2 : 1;
    /* the run's arrays: one block, kept on the program between runs (ewfuse.h
     * vg__ew_cache), allocated only when missing or too small */
    float *bcast, *hbuf;
    bool *bc;
    size_t need = layout(&j, NULL, nslots, nred_max, &bcast, &hbuf, &bc);
    char *blk = p->cache ? atomic_exchange(&p->cache->blk, NULL) : NULL;
    if (blk && *(size_t *)(void *)blk < need) vg__free(blk), blk = NULL;
    if (!blk) {
        g_work_allocs++;
        if (!(blk = vg__malloc(need)))
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in a fused element-wise kernel");
        *(size_t *)(void *)blk = need;
    }
    layout(&j, blk, nslots, nred_max, &bcast, &hbuf, &bc);
    const size_t ni = (size_t)p->ninputs + 1, no = (size_t)p->nouts + 1, nr = (size_t)j.nregs + 1;
    memset(j.in_f, 0, ni * sizeof(float *));
    memset(j.in_b, 0, ni * sizeof(uint8_t *));
    memset(j.out_f, 0, no * sizeof(float *));
    memset(j.out_b, 0, no * sizeof(uint8_t *));
    memset(j.fill, 0, ni * sizeof(bool));
    memset(j.hoisted, 0, nr * sizeof(float *));
    vg_code rc = VG_OK;
    j.bcast = bcast;
    for (int i = 0; i < p->ninputs; i++) {
        vg_tensor *t = vg__kctx_input(ctx, i);
        int64_t want = p->in_kind[i] == VG__EWIN_FULL      ? n
                       : p->in_kind[i] == VG__EWIN_CHANNEL ? C
                       : p->in_kind[i] == VG__EWIN_ROW     ? n / C
                                                           : 1;
        vg_dtype dt = p->in_bool[i] ? VG_BOOL : VG_FLOAT;
        if (!t || vg_tensor_dtype(t) != dt || vg_tensor_num_elements(t) != want) {
            rc = vg_status_set(st, VG_INTERNAL, "fused element-wise input %d: got %s of %lld values, planned %lld", i,
                               t ? vg_dtype_name(vg_tensor_dtype(t)) : "nothing",
                               t ? (long long)vg_tensor_num_elements(t) : 0LL, (long long)want);
            goto done;
        }
        const void *d = vg_tensor_data(t);
        if (p->in_kind[i] == VG__EWIN_FULL || p->in_kind[i] == VG__EWIN_ROW) {
            if (p->in_bool[i]) j.in_b[i] = d;
            else j.in_f[i] = d;
            continue;
        }
        float *b = bcast + (int64_t)i * L;
        if (p->in_bool[i]) { /* a broadcast condition: read as 0/1 */
            const uint8_t *s = d;
            for (int64_t e = 0; e < L; e++) b[e] = s[p->in_kind[i] == VG__EWIN_CHANNEL ? e % C : 0] ? 1.0f : 0.0f;
        } else {
            const float *s = d;
            for (int64_t e = 0; e < L; e++) b[e] = s[p->in_kind[i] == VG__EWIN_CHANNEL ? e % C : 0];
        }
    }
    for (int k = 0; k < p->nins; k++) { /* row inputs read in place, or spread per tile */
        const vg__ew_ins *in = &p->ins[k];
        int nrow = 0, ra = -1;
        for (int a = 0; a < in->nargs; a++)
            if (in->args[a] < p->ninputs && p->in_kind[in->args[a]] == VG__EWIN_ROW) nrow++, ra = a;
        j.row_arg[k] = row_op(in->op) && in->nargs == 2 && nrow == 1 && !p->in_bool[in->args[ra]] ? ra : -1;
        if (j.row_arg[k] < 0)
            for (int a = 0; a < in->nargs; a++)
                if (in->args[a] < p->ninputs && p->in_kind[in->args[a]] == VG__EWIN_ROW) j.fill[in->args[a]] = true;
    }
    for (int r = 0; r < j.nregs; r++) j.reg_store[r] = -1;
    for (int k = 0; k < p->nouts; k++) {
        const vg__ew_out *o = &p->outs[k];
        vg_tensor *t = NULL;
        j.red_of[k] = -1;
        if (o->reduce && o->row) { /* written row by row from the tiles */
            if ((rc = vg__kctx_alloc_output(ctx, k, VG_FLOAT, o->dims, o->ndims, &t)) != VG_OK) goto done;
            j.out_f[k] = vg_tensor_data(t);
            continue;
        }
        if (o->reduce) {
            j.red_of[k] = j.nred;
            j.nred += o->var ? 2 : 1; /* a variance: running mean and M2 */
            continue;
        }
        if ((rc = vg__kctx_alloc_output(ctx, k, o->is_bool ? VG_BOOL : VG_FLOAT, p->dims, p->ndims, &t)) != VG_OK)
            goto done;
        if (o->is_bool) j.out_b[k] = vg_tensor_data(t);
        else {
            j.out_f[k] = vg_tensor_data(t);
            j.reg_store[o->reg] = k; /* written where it is computed */
        }
    }
    /* Instructions of broadcast operands only (scalars, channel vectors, and such
     * instructions; none an output reads) are the same in every tile: computed once
     * here over L values, by the same loops. */
    if (chain_on()) {
        int nh = 0;
        memset(bc, 0, nr * sizeof(bool));
        for (int i = 0; i < p->ninputs; i++) bc[i] = p->in_kind[i] == VG__EWIN_SCALAR || p->in_kind[i] == VG__EWIN_CHANNEL;
        for (int k = 0; k < p->nins; k++) {
            bool all = true;
            for (int a = 0; a < p->ins[k].nargs; a++) all = all && bc[p->ins[k].args[a]];
            for (int o = 0; o < p->nouts; o++) all = all && p->outs[o].reg != p->ninputs + k;
            bc[p->ninputs + k] = all;
        }
        for (int k = 0; k < p->nins; k++) nh += bc[p->ninputs + k];
        const float **R = j.hoisted;
        for (int i = 0; i < p->ninputs; i++) R[i] = bc[i] ? j.bcast + (int64_t)i * L : NULL;
        float *h = hbuf;
        for (int k = 0; k < p->nins && nh; k++) {
            const vg__ew_ins *in = &p->ins[k];
            if (!bc[p->ninputs + k]) continue;
            if (in->op == VG__EWI_ADDN) {
                eval_ins(VG__EWI_ADD, L, h, R[in->args[0]], R[in->args[1]], NULL);
                for (int a = 2; a < in->nargs; a++) add_into(L, h, R[in->args[a]]);
            } else {
                eval_ins(in->op, L, h, in->nargs > 0 ? R[in->args[0]] : NULL, in->nargs > 1 ? R[in->args[1]] : NULL,
                         in->nargs > 2 ? R[in->args[2]] : NULL);
            }
            R[p->ninputs + k] = h;
            h += L;
        }
        for (int i = 0; i < p->ninputs; i++) R[i] = NULL; /* inputs: read as before */
        j.chain = p->chain;
        for (int k = 0; k < p->chain_nin && j.chain; k++) /* the pattern's inputs computed here: hoisted */
            if (p->chain_reg[k] >= p->ninputs && !j.hoisted[p->chain_reg[k]]) j.chain = VG__EW_CHAIN_NONE;
        if (j.chain) g_chain_runs[j.chain]++;
    }
    if (j.npieces > 0) vg__kctx_parallel_for_slots(ctx, j.npieces, nslots, j.npieces, run_pieces, &j);
    for (int k = 0; k < p->nouts; k++) {
        const vg__ew_out *o = &p->outs[k];
        if (!o->reduce || o->row) continue;
        vg_tensor *t = NULL;
        if ((rc = vg__kctx_alloc_output(ctx, k, VG_FLOAT, o->dims, o->ndims, &t)) != VG_OK) goto done;
        float *y = vg_tensor_data(t);
        if (o->var) { /* the pieces' (rows, mean, M2) combined in piece order */
            for (int64_t c = 0; c < C; c++) {
                double mean = 0, m2 = 0, na = 0;
                for (int64_t pc = 0; pc < j.npieces; pc++) {
                    int64_t e0 = pc * EW_PIECE_TILES * L, e1 = (pc + 1) * EW_PIECE_TILES * L;
                    double nb = (double)((e1 < n ? e1 : n) - e0) / (double)C, nn = na + nb;
                    const double *pm = j.part + (pc * j.nred + j.red_of[k]) * C;
                    double delta = pm[c] - mean;
                    mean += delta * (nb / nn);
                    m2 += pm[C + c] + delta * delta * (na * nb / nn);
                    na = nn;
                }
                y[c] = (float)(m2 * o->scale);
            }
            continue;
        }
        for (int64_t c = 0; c < C; c++) {
            double s = 0;
            for (int64_t pc = 0; pc < j.npieces; pc++) s += j.part[(pc * j.nred + j.red_of[k]) * C + c];
            y[c] = (float)(s * o->scale);
        }
    }
done:
    if (p->cache) vg__free(atomic_exchange(&p->cache->blk, blk)); /* back (another run's: freed) */
    else vg__free(blk);
    return rc;
}

static vg_code shape_fused_elementwise(vg_op *op, vg_status *st) {
    (void)op;
    return vg_status_set(st, VG_INVALID_ARGUMENT,
                         "_VigilFusedElementwise is made by the planner only; it cannot be built into a graph");
}

const vg__op_def vg__ops_ew_fused[] = {
    /* plan-time fusion only (src/exec/fuse_ew.c); never in a user graph */
    {"_VigilFusedElementwise", 0, -1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_fused_elementwise, kernel_fused_elementwise,
     NULL},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL},
};
