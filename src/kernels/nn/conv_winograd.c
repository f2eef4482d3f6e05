/*
 * conv_winograd.c - Winograd F(2x2,5x5) / F(5x5,2x2) float32 convolutions on AVX-512
 * (see conv_winograd.h). Interpolation points 0, 1, -1, 2, -2 and infinity:
 *
 *   B^T (input tiles, 6x6)      G (filter, 6x5)                 A^T (output, 2x6)
 *   [4  0 -5  0  1  0]          [ 1/4     0     0    0    0 ]   [1 1  1 1  1 0]
 *   [0 -4 -4  1  1  0]          [-1/6  -1/6  -1/6 -1/6 -1/6 ]   [0 1 -1 2 -2 1]
 *   [0  4 -4 -1  1  0]          [-1/6   1/6  -1/6  1/6 -1/6 ]
 *   [0 -2 -1  2  1  0]          [1/24  1/12   1/6  1/3  2/3 ]
 *   [0  2 -1 -2  1  0]          [1/24 -1/12   1/6 -1/3  2/3 ]
 *   [0  4  0 -5  0  1]          [ 0       0     0    0    1 ]
 *
 * out tile (2x2) = A^T [ (G f G^T) . (B^T d B) ] A over the 36 points, summed over
 * input channels: for each point one GEMM (tiles x ic) * (ic x oc).
 *
 * The filter gradient is the correlation of a 6x6 input tile with a 2x2 tile of dy,
 * giving 5x5: F(5x5,2x2) with the same points, so the same B^T, and
 *   G2 (dy tiles, 6x2)   [1/4 0; -1/6 -1/6; -1/6 1/6; 1/24 1/12; 1/24 -1/12; 0 1]
 *   A2^T (5x6)           [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 0; 0 1 1 16 16 1]
 * and the sum over all tiles of the batch taken in the transform domain: for each
 * point one GEMM (ic x tiles) * (tiles x oc), then one inverse transform per call.
 *
 * Work goes in blocks of tiles (possibly spanning images) small enough that the
 * transformed tiles (36 x tb x ic) and products (36 x tb x oc) stay in L2; the GEMMs
 * are register-blocked microkernels (6 tiles x 64 channels, 12 x 32 or 14 x 16).
 */
#include "kernels/nn/conv_winograd.h"
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WINO_X86 1
#include <immintrin.h>
#endif

size_t vg__wino_filter_floats(int64_t ic, int64_t oc) { return (size_t)(36 * ic * oc); }

bool vg__wino_channels_ok(int64_t ic, int64_t oc) { return ic > 0 && oc > 0 && ic % 16 == 0 && oc % 16 == 0; }

/* Tiles per block: the block's transformed data (36 x tb x (ic + oc) floats) within
 * about `bytes` (WINO_BLOCK_BYTES, or WINO_BF_BLOCK_BYTES for the filter gradient),
 * at least 8 tiles. */
#ifndef WINO_BLOCK_BYTES
#define WINO_BLOCK_BYTES (384 * 1024)
#endif
static int64_t block_tiles(int64_t ic, int64_t oc, int64_t bytes) {
    int64_t tb = bytes / (36 * 4 * (ic + oc));
    return tb < 8 ? 8 : tb;
}

/* Floats of the padded image copy (pad_img), rounded to 16. */
static size_t pad_floats(const vg__wino_conv *c) {
    int64_t th = (c->oh + 1) / 2, tw = (c->ow + 1) / 2;
    return (size_t)(((2 * th + 4) * (2 * tw + 4) * c->ic + 15) / 16 * 16);
}

/* Floats of scratch for blocks of tb tiles: V and W of a block, then the padded image. */
static size_t scratch_floats(const vg__wino_conv *c, int64_t tb) {
    return (size_t)(36 * tb * (c->ic + c->oc)) + pad_floats(c) + 16;
}

size_t vg__wino_conv_scratch_floats(const vg__wino_conv *c) {
    return scratch_floats(c, block_tiles(c->ic, c->oc, WINO_BLOCK_BYTES));
}

/* The filter gradient's blocks are larger: every block reads and writes the whole
 * transform-domain sum (36 x ic x oc floats, 295 KB for 32->64), so its traffic per
 * tile falls as blocks grow, while the block itself streams. Measured on a 2-vCPU
 * Zen 4 VM (1 MB L2), 64 x 14x14 32->64 (the CNN's conv2), medians of 30 calls,
 * alternating processes, 1 thread / 2 threads (ms): 384 KB 5.49-5.72 / 3.25-3.39;
 * 768 KB 5.23-5.55 / 2.93-3.48; 1536 KB 5.27-5.41 / 2.78-2.98; 2560 KB 5.15-5.56 /
 * 2.77-3.04. The forward and input-gradient blocks keep 384 KB (192 KB ties, 768 KB
 * and up lose there). */
#ifndef WINO_BF_BLOCK_BYTES
#define WINO_BF_BLOCK_BYTES (1536 * 1024)
#endif

/* Tiles per filter-gradient block for a call of `tiles` tiles: a call's blocks hold at
 * most its own tiles, so with many threads (small pieces of the batch) the scratch
 * stays near what the tiles need. */
static int64_t bf_block_tiles(int64_t ic, int64_t oc, int64_t tiles) {
    int64_t tb = block_tiles(ic, oc, WINO_BF_BLOCK_BYTES);
    return tiles < tb ? (tiles < 1 ? 1 : tiles) : tb;
}

size_t vg__wino_bf_scratch_floats(const vg__wino_conv *c, int64_t max_images) {
    return scratch_floats(c, bf_block_tiles(c->ic, c->oc, max_images * ((c->oh + 1) / 2) * ((c->ow + 1) / 2)));
}

#ifdef WINO_X86

#define T512 __attribute__((target("avx512f")))
#define AI inline __attribute__((always_inline))

bool vg__wino_cpu_ok(void) { return __builtin_cpu_supports("avx512f"); }

/* ---- GEMM microkernel ----------------------------------------------------------
 * C[r, 16v..] (+)= sum over k of A(r, k) * B[k, 16v..] for r < R, v < NV, where
 * A(r, k) = A[r * ars + k * aks]; B rows ldb apart, C rows ldc apart. */
static AI T512 void mk(const float *A, int64_t ars, int64_t aks, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t K, const int R, const int NV, bool acc) {
    __m512 c[14][4];
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) c[r][v] = acc ? _mm512_loadu_ps(C + r * ldc + 16 * v) : _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m512 b[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) b[v] = _mm512_loadu_ps(B + k * ldb + 16 * v);
        const float *a = A + k * aks;
#pragma GCC unroll 14
        for (int r = 0; r < R; r++) {
            __m512 av = _mm512_set1_ps(a[r * ars]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) c[r][v] = _mm512_fmadd_ps(av, b[v], c[r][v]);
        }
    }
#pragma GCC unroll 14
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) _mm512_storeu_ps(C + r * ldc + 16 * v, c[r][v]);
}

typedef void (*mk_fn)(const float *, int64_t, int64_t, const float *, int64_t, float *, int64_t, int64_t, bool);

#define MK_DEF(R, NV)                                                                                              \
    static T512 void mk_##R##_##NV(const float *A, int64_t ars, int64_t aks, const float *B, int64_t ldb, float *C, \
                                   int64_t ldc, int64_t K, bool acc) {                                             \
        mk(A, ars, aks, B, ldb, C, ldc, K, R, NV, acc);                                                            \
    }
MK_DEF(1, 4) MK_DEF(2, 4) MK_DEF(3, 4) MK_DEF(4, 4) MK_DEF(5, 4) MK_DEF(6, 4)
MK_DEF(1, 2) MK_DEF(2, 2) MK_DEF(3, 2) MK_DEF(4, 2) MK_DEF(5, 2) MK_DEF(6, 2)
MK_DEF(7, 2) MK_DEF(8, 2) MK_DEF(9, 2) MK_DEF(10, 2) MK_DEF(11, 2) MK_DEF(12, 2)
MK_DEF(1, 1) MK_DEF(2, 1) MK_DEF(3, 1) MK_DEF(4, 1) MK_DEF(5, 1) MK_DEF(6, 1) MK_DEF(7, 1)
MK_DEF(8, 1) MK_DEF(9, 1) MK_DEF(10, 1) MK_DEF(11, 1) MK_DEF(12, 1) MK_DEF(13, 1) MK_DEF(14, 1)

static const mk_fn mk4[7] = {NULL, mk_1_4, mk_2_4, mk_3_4, mk_4_4, mk_5_4, mk_6_4};
static const mk_fn mk2[13] = {NULL, mk_1_2, mk_2_2, mk_3_2, mk_4_2, mk_5_2, mk_6_2,
                              mk_7_2, mk_8_2, mk_9_2, mk_10_2, mk_11_2, mk_12_2};
static const mk_fn mk1[15] = {NULL, mk_1_1, mk_2_1, mk_3_1, mk_4_1, mk_5_1, mk_6_1, mk_7_1,
                              mk_8_1, mk_9_1, mk_10_1, mk_11_1, mk_12_1, mk_13_1, mk_14_1};

/* C (M x N, ldc) (+)= A(M x K) * B (K x N, ldb), A(r, k) = A[r * ars + k * aks];
 * N a multiple of 16. Rows split evenly into groups of at most the kernel's height. */
static T512 void gemm(const float *A, int64_t ars, int64_t aks, const float *B, int64_t ldb, float *C, int64_t ldc,
                      int64_t M, int64_t N, int64_t K, bool acc) {
    for (int64_t n0 = 0; n0 < N;) {
        int64_t left = N - n0;
        int nv = left >= 64 ? 4 : left >= 32 ? 2 : 1, rmax = nv == 4 ? 6 : nv == 2 ? 12 : 14;
        const mk_fn *tab = nv == 4 ? mk4 : nv == 2 ? mk2 : mk1;
        int64_t groups = (M + rmax - 1) / rmax;
        for (int64_t gi = 0, m0 = 0; gi < groups; gi++) {
            int64_t m1 = (gi + 1) * M / groups;
            tab[m1 - m0](A + m0 * ars, ars, aks, B + n0, ldb, C + m0 * ldc + n0, ldc, K, acc);
            m0 = m1;
        }
        n0 += 16 * nv;
    }
}

/* ---- transforms ------------------------------------------------------------------ */

/* B^T applied to 6 vectors (d, s floats apart) into o (os floats apart). */
static AI T512 void bt6(const __m512 d[6], __m512 o[6]) {
    const __m512 four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f), two = _mm512_set1_ps(2.f);
    o[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
    o[1] = _mm512_fnmadd_ps(four, _mm512_add_ps(d[1], d[2]), _mm512_add_ps(d[3], d[4]));
    o[2] = _mm512_fmadd_ps(four, _mm512_sub_ps(d[1], d[2]), _mm512_sub_ps(d[4], d[3]));
    o[3] = _mm512_fmadd_ps(two, _mm512_sub_ps(d[3], d[1]), _mm512_sub_ps(d[4], d[2]));
    o[4] = _mm512_fmadd_ps(two, _mm512_sub_ps(d[1], d[3]), _mm512_sub_ps(d[4], d[2]));
    o[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
}

/* The zero-padded copy of image img that input tiles read: (ph, pw, ic) with the
 * image at (pt, pl); ph = 2 th + 4, pw = 2 tw + 4 cover every tile. */
typedef struct pad_img {
    float *buf;
    int64_t ph, pw, img;
} pad_img;

static void pad_image(pad_img *pi, const float *in, int64_t ih, int64_t iw, int64_t ic, int64_t pt, int64_t pl,
                      int64_t img) {
    const float *src = in + img * ih * iw * ic;
    /* input rows / columns that land inside the buffer */
    int64_t y0 = pt < 0 ? -pt : 0, y1 = ih < pi->ph - pt ? ih : pi->ph - pt;
    int64_t x0 = pl < 0 ? -pl : 0, x1 = iw < pi->pw - pl ? iw : pi->pw - pl;
    memset(pi->buf, 0, sizeof(float) * (size_t)(pi->ph * pi->pw * ic));
    if (x1 > x0)
        for (int64_t y = y0; y < y1; y++)
            memcpy(pi->buf + ((y + pt) * pi->pw + x0 + pl) * ic, src + (y * iw + x0) * ic,
                   sizeof(float) * (size_t)((x1 - x0) * ic));
    pi->img = img;
}

/* One tile: base at the tile's first element (row stride rs floats), channels
 * [c0, c0 + 16 nc) into vt (36, IC) at c0. */
static AI T512 void input_tile(const float *base, int64_t rs, float *vt, const int64_t IC, int64_t c0, int nc) {
    __m512 tmp[36];
    for (int cg = 0; cg < nc; cg++) {
        const float *p0 = base + c0 + 16 * cg;
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            __m512 d[6];
#pragma GCC unroll 6
            for (int j = 0; j < 6; j++) d[j] = _mm512_loadu_ps(p0 + i * rs + j * IC);
            bt6(d, tmp + i * 6);
        }
#pragma GCC unroll 6
        for (int j = 0; j < 6; j++) {
            __m512 col[6], o[6];
#pragma GCC unroll 6
            for (int i = 0; i < 6; i++) col[i] = tmp[i * 6 + j];
            bt6(col, o);
#pragma GCC unroll 6
            for (int i = 0; i < 6; i++) _mm512_storeu_ps(vt + (i * 6 + j) * IC + c0 + 16 * cg, o[i]);
        }
    }
}

/* Transformed input tiles of tiles [g0, g0 + tb) of the batch (tile g: image g / tpi,
 * tile row (g % tpi) / tw, column % tw) into V (tb, 36, ic): tile origin in the input
 * (2 ty - pt, 2 tx - pl), read from the padded copy of its image (pi, refreshed when
 * the image changes). Channels in chunks of up to 64: a chunk's 36 x 4 vectors are
 * transformed in a stack buffer, then written out in address order. */
static AI T512 void input_tf_ic(const float *in, int64_t ih, int64_t iw, const int64_t IC, int64_t pt, int64_t pl,
                                int64_t tw, int64_t tpi, int64_t g0, int64_t tb, float *V, pad_img *pi) {
    const int64_t rs = pi->pw * IC;
    for (int64_t t = 0; t < tb; t++) {
        int64_t g = g0 + t, img = g / tpi, tt = g % tpi;
        if (img != pi->img) pad_image(pi, in, ih, iw, IC, pt, pl, img);
        const float *base = pi->buf + 2 * (tt / tw) * rs + 2 * (tt % tw) * IC;
        float *vt = V + t * 36 * IC;
        for (int64_t c0 = 0; c0 < IC; c0 += 64) input_tile(base, rs, vt, IC, c0, IC - c0 >= 64 ? 4 : (int)((IC - c0) / 16));
    }
}

static T512 void input_tf16(const float *in, int64_t ih, int64_t iw, int64_t pt, int64_t pl, int64_t tw, int64_t tpi,
                            int64_t g0, int64_t tb, float *V, pad_img *pi) {
    input_tf_ic(in, ih, iw, 16, pt, pl, tw, tpi, g0, tb, V, pi);
}
static T512 void input_tf32(const float *in, int64_t ih, int64_t iw, int64_t pt, int64_t pl, int64_t tw, int64_t tpi,
                            int64_t g0, int64_t tb, float *V, pad_img *pi) {
    input_tf_ic(in, ih, iw, 32, pt, pl, tw, tpi, g0, tb, V, pi);
}
static T512 void input_tf64(const float *in, int64_t ih, int64_t iw, int64_t pt, int64_t pl, int64_t tw, int64_t tpi,
                            int64_t g0, int64_t tb, float *V, pad_img *pi) {
    input_tf_ic(in, ih, iw, 64, pt, pl, tw, tpi, g0, tb, V, pi);
}
static T512 void input_tf(const float *in, int64_t ih, int64_t iw, int64_t ic, int64_t pt, int64_t pl, int64_t tw,
                          int64_t tpi, int64_t g0, int64_t tb, float *V, pad_img *pi) {
    if (ic == 16) input_tf16(in, ih, iw, pt, pl, tw, tpi, g0, tb, V, pi);
    else if (ic == 32) input_tf32(in, ih, iw, pt, pl, tw, tpi, g0, tb, V, pi);
    else if (ic == 64) input_tf64(in, ih, iw, pt, pl, tw, tpi, g0, tb, V, pi);
    else input_tf_ic(in, ih, iw, ic, pt, pl, tw, tpi, g0, tb, V, pi);
}

/* A^T applied to 6 vectors: two outputs. */
static AI T512 void at6(const __m512 m[6], __m512 *y0, __m512 *y1) {
    const __m512 two = _mm512_set1_ps(2.f);
    __m512 a = _mm512_add_ps(m[1], m[2]), b = _mm512_sub_ps(m[1], m[2]);
    __m512 c = _mm512_add_ps(m[3], m[4]), d = _mm512_sub_ps(m[3], m[4]);
    *y0 = _mm512_add_ps(_mm512_add_ps(m[0], a), c);
    *y1 = _mm512_add_ps(_mm512_fmadd_ps(two, d, b), m[5]);
}

/* Output tiles [g0, g0 + tb) from M (tb, 36, oc) into out, with bias and ReLU. */
static AI T512 void output_tf_oc(const vg__wino_conv *cv, const float *M, int64_t tw, int64_t tpi, int64_t g0,
                                 int64_t tb, float *out, const int64_t oc) {
    const int64_t oh = cv->oh, ow = cv->ow;
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t t = 0; t < tb; t++) {
        int64_t g = g0 + t, img = g / tpi, tt = g % tpi, y0 = 2 * (tt / tw), x0 = 2 * (tt % tw);
        float *o = out + ((img * oh + y0) * ow + x0) * oc;
        bool y1ok = y0 + 1 < oh, x1ok = x0 + 1 < ow;
        const float *mt = M + t * 36 * oc;
        for (int64_t c = 0; c < oc; c += 16) {
            __m512 s0[6], s1[6];
            #pragma GCC unroll 6
            for (int j = 0; j < 6; j++) {
                __m512 m[6];
                #pragma GCC unroll 6
                for (int i = 0; i < 6; i++) m[i] = _mm512_loadu_ps(mt + (i * 6 + j) * oc + c);
                at6(m, &s0[j], &s1[j]);
            }
            __m512 y00, y01, y10, y11;
            at6(s0, &y00, &y01);
            at6(s1, &y10, &y11);
            if (cv->bias) {
                __m512 b = _mm512_loadu_ps(cv->bias + c);
                y00 = _mm512_add_ps(y00, b), y01 = _mm512_add_ps(y01, b);
                y10 = _mm512_add_ps(y10, b), y11 = _mm512_add_ps(y11, b);
            }
            if (cv->relu) { /* max(0, v): v < 0 ? 0 : v, NaN and -0 kept */
                y00 = _mm512_max_ps(zero, y00), y01 = _mm512_max_ps(zero, y01);
                y10 = _mm512_max_ps(zero, y10), y11 = _mm512_max_ps(zero, y11);
            }
            _mm512_storeu_ps(o + c, y00);
            if (x1ok) _mm512_storeu_ps(o + oc + c, y01);
            if (y1ok) {
                _mm512_storeu_ps(o + ow * oc + c, y10);
                if (x1ok) _mm512_storeu_ps(o + ow * oc + oc + c, y11);
            }
        }
    }
}

static T512 void output_tf16(const vg__wino_conv *cv, const float *M, int64_t tw, int64_t tpi, int64_t g0, int64_t tb,
                             float *out) {
    output_tf_oc(cv, M, tw, tpi, g0, tb, out, 16);
}
static T512 void output_tf32(const vg__wino_conv *cv, const float *M, int64_t tw, int64_t tpi, int64_t g0, int64_t tb,
                             float *out) {
    output_tf_oc(cv, M, tw, tpi, g0, tb, out, 32);
}
static T512 void output_tf64(const vg__wino_conv *cv, const float *M, int64_t tw, int64_t tpi, int64_t g0, int64_t tb,
                             float *out) {
    output_tf_oc(cv, M, tw, tpi, g0, tb, out, 64);
}
static T512 void output_tf(const vg__wino_conv *cv, const float *M, int64_t tw, int64_t tpi, int64_t g0, int64_t tb,
                           float *out) {
    if (cv->oc == 16) output_tf16(cv, M, tw, tpi, g0, tb, out);
    else if (cv->oc == 32) output_tf32(cv, M, tw, tpi, g0, tb, out);
    else if (cv->oc == 64) output_tf64(cv, M, tw, tpi, g0, tb, out);
    else output_tf_oc(cv, M, tw, tpi, g0, tb, out, cv->oc);
}

/* G (6x5) */
static const float Gm[6][5] = {{0.25f, 0, 0, 0, 0},
                               {-1.f / 6, -1.f / 6, -1.f / 6, -1.f / 6, -1.f / 6},
                               {-1.f / 6, 1.f / 6, -1.f / 6, 1.f / 6, -1.f / 6},
                               {1.f / 24, 1.f / 12, 1.f / 6, 1.f / 3, 2.f / 3},
                               {1.f / 24, -1.f / 12, 1.f / 6, -1.f / 3, 2.f / 3},
                               {0, 0, 0, 0, 1}};

/* U (36, ic, oc) from g (5, 5) vectors of 16 consecutive oc of one ic, stored at
 * U + p * ic * oc (+ the caller's offset). */
static AI T512 void filter_tile(__m512 g[5][5], float *U, int64_t pstride) {
    __m512 t[6][5];
    for (int a = 0; a < 6; a++)
        for (int kx = 0; kx < 5; kx++) {
            __m512 s = _mm512_setzero_ps();
            for (int ky = 0; ky < 5; ky++)
                if (Gm[a][ky] != 0) s = _mm512_fmadd_ps(_mm512_set1_ps(Gm[a][ky]), g[ky][kx], s);
            t[a][kx] = s;
        }
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            __m512 s = _mm512_setzero_ps();
            for (int kx = 0; kx < 5; kx++)
                if (Gm[b][kx] != 0) s = _mm512_fmadd_ps(_mm512_set1_ps(Gm[b][kx]), t[a][kx], s);
            _mm512_storeu_ps(U + (a * 6 + b) * pstride, s);
        }
}

static T512 void filter_avx512(const float *f, int64_t ci, int64_t co, bool rot180, float *U, int64_t k0,
                               int64_t k1) {
    __m512 g[5][5];
    if (!rot180) { /* U[p][c][o]: vectors of 16 o, contiguous in f */
        for (int64_t c = k0; c < k1; c++)
            for (int64_t o = 0; o < co; o += 16) {
                for (int ky = 0; ky < 5; ky++)
                    for (int kx = 0; kx < 5; kx++) g[ky][kx] = _mm512_loadu_ps(f + ((ky * 5 + kx) * ci + c) * co + o);
                filter_tile(g, U + c * co + o, ci * co);
            }
        return;
    }
    /* U[p][o][c] from f rotated by 180 degrees: vectors of 16 c, gathered co apart */
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32((int)co));
    for (int64_t o = k0; o < k1; o++)
        for (int64_t c = 0; c < ci; c += 16) {
            for (int ky = 0; ky < 5; ky++)
                for (int kx = 0; kx < 5; kx++)
                    g[ky][kx] = _mm512_i32gather_ps(idx, f + (((4 - ky) * 5 + (4 - kx)) * ci + c) * co + o, 4);
            filter_tile(g, U + o * ci + c, co * ci);
        }
}

void vg__wino_filter(const float *f, int64_t ci, int64_t co, bool rot180, float *U, int64_t k0, int64_t k1) {
    filter_avx512(f, ci, co, rot180, U, k0, k1);
}

static T512 void conv_images(const vg__wino_conv *cv, const float *in, float *out, int64_t i0, int64_t i1,
                             float *scratch, void (*done)(void *, int64_t), void *arg) {
    const int64_t ic = cv->ic, oc = cv->oc, th = (cv->oh + 1) / 2, tw = (cv->ow + 1) / 2, tpi = th * tw;
    const int64_t TB = block_tiles(ic, oc, WINO_BLOCK_BYTES), G0 = i0 * tpi, G1 = i1 * tpi;
    if (tpi == 0) {
        for (int64_t img = i0; done && img < i1; img++) done(arg, img);
        return;
    }
    int64_t nblk = (G1 - G0 + TB - 1) / TB;
    float *V = scratch, *M = scratch + 36 * TB * ic;
    pad_img pi = {M + 36 * TB * oc, 2 * th + 4, 2 * tw + 4, -1};
    int64_t next_done = i0;
    for (int64_t b = 0; b < nblk; b++) {
        int64_t g0 = G0 + b * (G1 - G0) / nblk, g1 = G0 + (b + 1) * (G1 - G0) / nblk, tb = g1 - g0;
        input_tf(in, cv->ih, cv->iw, ic, cv->pt, cv->pl, tw, tpi, g0, tb, V, &pi);
        for (int p = 0; p < 36; p++)
            gemm(V + p * ic, 36 * ic, 1, cv->U + p * ic * oc, oc, M + p * oc, 36 * oc, tb, oc, ic, false);
        output_tf(cv, M, tw, tpi, g0, tb, out);
        while (next_done < i1 && (next_done + 1) * tpi <= g1) {
            if (done) done(arg, next_done);
            next_done++;
        }
    }
}

void vg__wino_conv_images(const vg__wino_conv *c, const float *in, float *out, int64_t i0, int64_t i1,
                          float *scratch, void (*done)(void *arg, int64_t img), void *arg) {
    conv_images(c, in, out, i0, i1, scratch, done, arg);
}

/* ---- filter gradient ---------------------------------------------------------------- */

/* G2 applied to 2 vectors: 6 outputs. */
static AI T512 void g2(__m512 a, __m512 b, __m512 o[6]) {
    const __m512 q = _mm512_set1_ps(0.25f), s6 = _mm512_set1_ps(-1.f / 6), s24 = _mm512_set1_ps(1.f / 24),
                 s12 = _mm512_set1_ps(1.f / 12);
    o[0] = _mm512_mul_ps(q, a);
    o[1] = _mm512_mul_ps(s6, _mm512_add_ps(a, b));
    o[2] = _mm512_mul_ps(s6, _mm512_sub_ps(a, b));
    o[3] = _mm512_fmadd_ps(s24, a, _mm512_mul_ps(s12, b));
    o[4] = _mm512_fmsub_ps(s24, a, _mm512_mul_ps(s12, b));
    o[5] = b;
}

/* Transformed dy tiles [g0, g0 + tb) into W (tb, 36, oc). */
static AI T512 void dy_tf_oc(const float *dy, int64_t oh, int64_t ow, const int64_t oc, int64_t tw, int64_t tpi,
                             int64_t g0, int64_t tb, float *W) {
    for (int64_t t = 0; t < tb; t++) {
        int64_t g = g0 + t, img = g / tpi, tt = g % tpi, y0 = 2 * (tt / tw), x0 = 2 * (tt % tw);
        const float *d = dy + ((img * oh + y0) * ow + x0) * oc;
        bool y1ok = y0 + 1 < oh, x1ok = x0 + 1 < ow;
        float *wt = W + t * 36 * oc;
        for (int64_t c0 = 0; c0 < oc; c0 += 64) {
            int nc = oc - c0 >= 64 ? 4 : (int)((oc - c0) / 16);
            for (int cg = 0; cg < nc; cg++) {
                int64_t c = c0 + 16 * cg;
                __m512 z = _mm512_setzero_ps();
                __m512 d00 = _mm512_loadu_ps(d + c), d01 = x1ok ? _mm512_loadu_ps(d + oc + c) : z;
                __m512 d10 = y1ok ? _mm512_loadu_ps(d + ow * oc + c) : z;
                __m512 d11 = y1ok && x1ok ? _mm512_loadu_ps(d + ow * oc + oc + c) : z;
                __m512 r0[6], r1[6];
                g2(d00, d10, r0); /* columns: rows a of G2 dy */
                g2(d01, d11, r1);
#pragma GCC unroll 6
                for (int i = 0; i < 6; i++) {
                    __m512 o[6];
                    g2(r0[i], r1[i], o);
#pragma GCC unroll 6
                    for (int j = 0; j < 6; j++) _mm512_storeu_ps(wt + (i * 6 + j) * oc + c, o[j]);
                }
            }
        }
    }
}

static T512 void dy_tf32(const float *dy, int64_t oh, int64_t ow, int64_t tw, int64_t tpi, int64_t g0, int64_t tb,
                         float *W) {
    dy_tf_oc(dy, oh, ow, 32, tw, tpi, g0, tb, W);
}
static T512 void dy_tf64(const float *dy, int64_t oh, int64_t ow, int64_t tw, int64_t tpi, int64_t g0, int64_t tb,
                         float *W) {
    dy_tf_oc(dy, oh, ow, 64, tw, tpi, g0, tb, W);
}
static T512 void dy_tf(const float *dy, int64_t oh, int64_t ow, int64_t oc, int64_t tw, int64_t tpi, int64_t g0,
                       int64_t tb, float *W) {
    if (oc == 32) dy_tf32(dy, oh, ow, tw, tpi, g0, tb, W);
    else if (oc == 64) dy_tf64(dy, oh, ow, tw, tpi, g0, tb, W);
    else dy_tf_oc(dy, oh, ow, oc, tw, tpi, g0, tb, W);
}

static T512 void bf_images(const vg__wino_conv *cv, const float *x, const float *dy, int64_t i0, int64_t i1,
                           float *acc, bool zero_acc, float *scratch) {
    const int64_t ic = cv->ic, oc = cv->oc, th = (cv->oh + 1) / 2, tw = (cv->ow + 1) / 2, tpi = th * tw;
    const int64_t G0 = i0 * tpi, G1 = i1 * tpi;
    if (zero_acc) memset(acc, 0, sizeof(float) * (size_t)(36 * ic * oc));
    if (G1 <= G0) return;
    const int64_t TB = bf_block_tiles(ic, oc, G1 - G0);
    int64_t nblk = (G1 - G0 + TB - 1) / TB;
    float *V = scratch, *W = scratch + 36 * TB * ic;
    pad_img pi = {W + 36 * TB * oc, 2 * th + 4, 2 * tw + 4, -1};
    for (int64_t b = 0; b < nblk; b++) {
        int64_t g0 = G0 + b * (G1 - G0) / nblk, g1 = G0 + (b + 1) * (G1 - G0) / nblk, tb = g1 - g0;
        input_tf(x, cv->ih, cv->iw, ic, cv->pt, cv->pl, tw, tpi, g0, tb, V, &pi);
        dy_tf(dy, cv->oh, cv->ow, oc, tw, tpi, g0, tb, W);
        /* acc[p] (ic x oc) += V[., p]^T (ic x tb) * W[., p] (tb x oc) */
        for (int p = 0; p < 36; p++)
            gemm(V + p * ic, 1, 36 * ic, W + p * oc, 36 * oc, acc + p * ic * oc, oc, ic, oc, tb, true);
    }
}

void vg__wino_bf_images(const vg__wino_conv *c, const float *x, const float *dy, int64_t i0, int64_t i1, float *acc,
                        bool zero_acc, float *scratch) {
    bf_images(c, x, dy, i0, i1, acc, zero_acc, scratch);
}

/* A2^T (5x6) */
static const float A2[5][6] = {{1, 1, 1, 1, 1, 0},
                               {0, 1, -1, 2, -2, 0},
                               {0, 1, 1, 4, 4, 0},
                               {0, 1, -1, 8, -8, 0},
                               {0, 1, 1, 16, 16, 1}};

static T512 void grad_out(const float *acc, int64_t ic, int64_t oc, float *df, int64_t e0, int64_t e1) {
    const int64_t n = ic * oc;
    for (int64_t e = e0; e < e1; e += 16) {
        __m512 m[6][6], t[5][6];
        for (int p = 0; p < 36; p++) m[p / 6][p % 6] = _mm512_loadu_ps(acc + p * n + e);
        for (int ky = 0; ky < 5; ky++)
            for (int j = 0; j < 6; j++) {
                __m512 s = _mm512_setzero_ps();
                for (int i = 0; i < 6; i++)
                    if (A2[ky][i] != 0) s = _mm512_fmadd_ps(_mm512_set1_ps(A2[ky][i]), m[i][j], s);
                t[ky][j] = s;
            }
        for (int ky = 0; ky < 5; ky++)
            for (int kx = 0; kx < 5; kx++) {
                __m512 s = _mm512_setzero_ps();
                for (int j = 0; j < 6; j++)
                    if (A2[kx][j] != 0) s = _mm512_fmadd_ps(_mm512_set1_ps(A2[kx][j]), t[ky][j], s);
                _mm512_storeu_ps(df + (ky * 5 + kx) * n + e, s);
            }
    }
}

void vg__wino_filter_grad_out(const float *acc, int64_t ic, int64_t oc, float *df, int64_t e0, int64_t e1) {
    grad_out(acc, ic, oc, df, e0, e1);
}

#else /* not x86-64 GCC: no kernels; callers check vg__wino_cpu_ok first */

bool vg__wino_cpu_ok(void) { return false; }
void vg__wino_filter(const float *f, int64_t ci, int64_t co, bool rot180, float *U, int64_t k0, int64_t k1) {
    (void)f, (void)ci, (void)co, (void)rot180, (void)U, (void)k0, (void)k1;
}
void vg__wino_conv_images(const vg__wino_conv *c, const float *in, float *out, int64_t i0, int64_t i1,
                          float *scratch, void (*done)(void *arg, int64_t img), void *arg) {
    (void)c, (void)in, (void)out, (void)i0, (void)i1, (void)scratch, (void)done, (void)arg;
}
void vg__wino_bf_images(const vg__wino_conv *c, const float *x, const float *dy, int64_t i0, int64_t i1, float *acc,
                        bool zero_acc, float *scratch) {
    (void)c, (void)x, (void)dy, (void)i0, (void)i1, (void)acc, (void)zero_acc, (void)scratch;
}
void vg__wino_filter_grad_out(const float *acc, int64_t ic, int64_t oc, float *df, int64_t e0, int64_t e1) {
    (void)acc, (void)ic, (void)oc, (void)df, (void)e0, (void)e1;
}

#endif
