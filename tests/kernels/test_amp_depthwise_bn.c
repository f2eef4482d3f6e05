/* test_amp_depthwise_bn.c - the mixed-precision rewrite (exec/amp.c) on MobileNet's
 * blocks (issue 34): DepthwiseConv2dNative and its two backprops are on the allow list
 * of TF's oneDNN lists (AutoMixedPrecisionListsMkl), FusedBatchNormV3 and its gradient
 * on the infer list. Checked through the values (a painted node's float32 output holds
 * bfloat16 values, low 16 bits zero):
 *   - colouring: a depthwise convolution is painted even between float32-only nodes;
 *     a batch norm between allow ops is painted, one that feeds a deny op (Sum) through
 *     clear ops is not;
 *   - a painted depthwise convolution (forward, input and filter gradients) equals the
 *     float32 op on bfloat16-rounded operands, rounded (the kernel rounds its own output);
 *   - a painted batch norm keeps its U tensors float32 (TF's bfloat16 FusedBatchNormV3:
 *     T = bfloat16, U = float): batch mean / variance and the scale / offset gradients are
 *     not rounded, the mean equals the float32 mean of the rounded x; y and x_backprop are;
 *   - a block conv -> BN -> ReLU6 -> depthwise -> BN -> ReLU6 -> conv (the plan fuses
 *     each BN with its ReLU6, forward and gradient, painted as well): values and every
 *     gradient against the float32 graph within bfloat16's tolerance, fused (only the
 *     block's output fetched) and unfused (the batch norms' y fetched too);
 *   - the fused ReLU6 gradient's band at bfloat16's resolution (5.99 rounds to 6.0). */
#include "test_util.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float rb(float f) { return vg_bfloat16_to_float(vg_float_to_bfloat16(f)); }

static void fill(float *v, int64_t n, uint32_t seed, float scale, float shift) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = scale * ((float)((seed >> 8) & 0xffffff) / (float)(1 << 23) - 1.0f) + shift;
    }
}

static int64_t nelem(const vg_tensor *t) { return vg_tensor_num_elements(t); }

static bool all_bf16(const vg_tensor *t) {
    const float *v = vg_tensor_data(t);
    for (int64_t i = 0; i < nelem(t); i++)
        if (fbits(v[i]) & 0xffffu) return false;
    return true;
}

static double maxabs(const vg_tensor *t) {
    const float *v = vg_tensor_data(t);
    double m = 0;
    for (int64_t i = 0; i < nelem(t); i++) m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

/* |got - want| <= rel * max|want| + atol element-wise */
static void near_t(const char *what, const vg_tensor *got, const vg_tensor *want, double rel, double atol) {
    CHECK(nelem(got) == nelem(want));
    const float *a = vg_tensor_data(got), *b = vg_tensor_data(want);
    double tol = rel * maxabs(want) + atol;
    for (int64_t i = 0; i < nelem(got); i++)
        if (!(fabs((double)a[i] - b[i]) <= tol)) {
            fprintf(stderr, "%s[%lld]: got %.9g want %.9g (tol %.3g)\n", what, (long long)i, a[i], b[i], tol);
            CHECK(0);
            return;
        }
}

static vg_output cst(vg_graph *g, const int64_t *d, int nd, const float *v, const char *name, vg_tensor **keep) {
    vg_status st = {0};
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= d[i];
    *keep = vg_tensor_new_copy(VG_FLOAT, d, nd, v, sizeof(float) * (size_t)n, &st);
    CHECK(*keep != NULL);
    return vg_const(g, *keep, name);
}

static void run(vg_graph *g, bool amp, const vg_output *fetch, int nf, vg_tensor **o) {
    vg_status st = {0};
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    CHECK_OK(vg_session_set_auto_mixed_precision(s, amp, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fetch, o, nf, NULL, 0, NULL, &st), &st);
    vg_session_free(s);
}

enum { N = 2, H = 9, W = 7, C = 8 };

/* A painted depthwise convolution and both gradients against float32 on the rounded
 * operands, rounded: bit for bit (the same float32 kernels, then the same rounding). */
static void test_amp_dw__depthwise_exact(void) {
    static const struct {
        int64_t kh, kw, m, s;
        const char *pad;
    } cases[] = {{3, 3, 1, 1, "SAME"}, {3, 3, 1, 2, "SAME"}, {3, 3, 2, 1, "VALID"}, {5, 3, 1, 2, "VALID"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int64_t xd[4] = {N, H, W, C}, fd[4] = {cases[k].kh, cases[k].kw, C, cases[k].m};
        int64_t nx = N * H * W * C, nf = fd[0] * fd[1] * C * fd[3];
        float xv[N * H * W * C], fv[5 * 3 * C * 2], xr[N * H * W * C], fr[5 * 3 * C * 2];
        fill(xv, nx, 11u + (uint32_t)k, 1.0f, 0.0f);
        fill(fv, nf, 23u + (uint32_t)k, 0.5f, 0.0f);
        for (int64_t i = 0; i < nx; i++) xr[i] = rb(xv[i]);
        for (int64_t i = 0; i < nf; i++) fr[i] = rb(fv[i]);
        vg_tensor *o[2][3] = {{NULL}};
        int64_t strides[4] = {1, cases[k].s, cases[k].s, 1};
        for (int amp = 0; amp < 2; amp++) {
            vg_graph *g = vg_graph_new();
            vg_tensor *keep[3];
            vg_output x = cst(g, xd, 4, amp ? xv : xr, "x", &keep[0]), f = cst(g, fd, 4, amp ? fv : fr, "f", &keep[1]);
            vg_output y = vg_depthwise_conv2d_native(g, x, f, strides, cases[k].pad, "dw");
            vg_shape ys = vg_output_shape(y);
            CHECK(ys.ndims == 4);
            int64_t ny = ys.dims[0] * ys.dims[1] * ys.dims[2] * ys.dims[3];
            float gv[N * H * W * C * 2];
            fill(gv, ny, 37u + (uint32_t)k, 1.0f, 0.0f);
            for (int64_t i = 0; i < ny; i++) gv[i] = rb(gv[i]);
            vg_output dy = cst(g, ys.dims, 4, gv, "dy", &keep[2]), xs[2] = {x, f}, dxs[2];
            vg_status st = {0};
            CHECK_OK(vg_gradients(g, &y, 1, xs, 2, &dy, dxs, &st), &st);
            vg_output fetch[3] = {vg_identity(g, y, "y_out"), vg_identity(g, dxs[0], "dx_out"),
                                  vg_identity(g, dxs[1], "df_out")};
            run(g, amp, fetch, 3, o[amp]);
            for (int i = 0; i < 3; i++) vg_tensor_free(keep[i]);
            vg_graph_free(g);
        }
        for (int i = 0; i < 3; i++) {
            CHECK(!all_bf16(o[0][i]));
            CHECK(all_bf16(o[1][i])); /* painted: DepthwiseConv2dNative and both backprops */
            CHECK(nelem(o[0][i]) == nelem(o[1][i]));
            const float *a = vg_tensor_data(o[1][i]), *b = vg_tensor_data(o[0][i]);
            for (int64_t e = 0; e < nelem(o[0][i]); e++)
                if (fbits(a[e]) != fbits(rb(b[e]))) {
                    fprintf(stderr, "case %zu output %d [%lld]: %.9g vs rounded float32 %.9g\n", k, i, (long long)e, a[e],
                            rb(b[e]));
                    CHECK(0);
                    break;
                }
        }
        for (int a = 0; a < 2; a++)
            for (int i = 0; i < 3; i++) vg_tensor_free(o[a][i]);
    }
}

/* The block; fetch: 0 the output, 1 dx, 2 d(conv1 filter), 3 d(dw filter), 4 d(conv2
 * filter), 5/6 d(scale)/d(offset) of BN 1, 7/8 of BN 2, 9 BN 1's batch mean, 10 BN 2's
 * batch variance; with unfused, 11/12 the y of BN 1 / BN 2. */
enum { CI = 4, CM = 16, CO = 12 };
static int block(bool amp, bool unfused, vg_tensor **o) {
    vg_graph *g = vg_graph_new();
    vg_tensor *keep[12];
    int nk = 0;
    float xv[N * H * W * CI], w1[CI * CM], wd[9 * CM], w2[CM * CO], sc[CM], of[CM];
    fill(xv, N * H * W * CI, 5u, 2.0f, 0.25f);
    fill(w1, CI * CM, 7u, 0.6f, 0.0f);
    fill(wd, 9 * CM, 9u, 0.4f, 0.0f);
    fill(w2, CM * CO, 13u, 0.3f, 0.0f);
    int64_t xd[4] = {N, H, W, CI}, d1[4] = {1, 1, CI, CM}, dd[4] = {3, 3, CM, 1}, d2[4] = {1, 1, CM, CO}, dc[1] = {CM},
            d0[1] = {0};
    vg_output x = cst(g, xd, 4, xv, "x", &keep[nk++]);
    vg_output f1 = cst(g, d1, 4, w1, "w1", &keep[nk++]), fd = cst(g, dd, 4, wd, "wd", &keep[nk++]),
              f2 = cst(g, d2, 4, w2, "w2", &keep[nk++]);
    vg_output scale[2], offset[2];
    for (int b = 0; b < 2; b++) {
        fill(sc, CM, 17u + (uint32_t)b, 0.3f, 1.0f); /* not bfloat16 values: they stay float32 */
        fill(of, CM, 19u + (uint32_t)b, 0.5f, 0.6f);
        scale[b] = cst(g, dc, 1, sc, b ? "scale2" : "scale1", &keep[nk++]);
        offset[b] = cst(g, dc, 1, of, b ? "offset2" : "offset1", &keep[nk++]);
    }
    float z = 0;
    vg_output empty = cst(g, d0, 1, &z, "empty", &keep[nk++]);
    int64_t s1[4] = {1, 1, 1, 1}, s2[4] = {1, 2, 2, 1};
    vg_output c1 = vg_conv2d(g, x, f1, s1, "SAME", "conv1");
    vg_op *bn1 = vg_fused_batch_norm_v3(g, c1, scale[0], offset[0], empty, empty, 0.001f, true, "bn1");
    vg_output r1 = vg_relu6(g, vg_out(bn1, 0), "relu1");
    vg_output dw = vg_depthwise_conv2d_native(g, r1, fd, s2, "SAME", "dw");
    vg_op *bn2 = vg_fused_batch_norm_v3(g, dw, scale[1], offset[1], empty, empty, 0.001f, true, "bn2");
    vg_output r2 = vg_relu6(g, vg_out(bn2, 0), "relu2");
    vg_output y = vg_conv2d(g, r2, f2, s1, "SAME", "conv2");
    vg_shape ys = vg_output_shape(y);
    int64_t ny = ys.dims[0] * ys.dims[1] * ys.dims[2] * ys.dims[3];
    float gv[N * H * W * CO];
    fill(gv, ny, 29u, 1.0f, 0.0f);
    vg_output dy = cst(g, ys.dims, 4, gv, "dy", &keep[nk++]);
    vg_output xs[8] = {x, f1, fd, f2, scale[0], offset[0], scale[1], offset[1]}, dxs[8];
    vg_status st = {0};
    CHECK_OK(vg_gradients(g, &y, 1, xs, 8, &dy, dxs, &st), &st);
    vg_output fetch[13];
    int nf = 0;
    fetch[nf++] = vg_identity(g, y, "y_out");
    for (int i = 0; i < 8; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "d%d", i);
        fetch[nf++] = vg_identity(g, dxs[i], nm);
    }
    fetch[nf++] = vg_identity(g, vg_out(bn1, 1), "bn1_mean");
    fetch[nf++] = vg_identity(g, vg_out(bn2, 2), "bn2_var");
    if (unfused) {
        fetch[nf++] = vg_identity(g, vg_out(bn1, 0), "bn1_y");
        fetch[nf++] = vg_identity(g, vg_out(bn2, 0), "bn2_y");
    }
    run(g, amp, fetch, nf, o);
    for (int i = 0; i < nk; i++) vg_tensor_free(keep[i]);
    vg_graph_free(g);
    return nf;
}

static void test_amp_dw__block(void) {
    static const char *const what[13] = {"y",        "dx",       "dconv1",    "ddw",     "dconv2", "dscale1", "doffset1",
                                         "dscale2",  "doffset2", "bn1_mean", "bn2_var", "bn1_y",  "bn2_y"};
    for (int unfused = 0; unfused < 2; unfused++) {
        vg_tensor *f32[13] = {NULL}, *b16[13] = {NULL};
        int nf = block(false, unfused, f32);
        CHECK(block(true, unfused, b16) == nf);
        /* painted: the output (conv2), dx (conv1's input gradient), the filter gradients
         * of the three convolutions and the batch norms' y; float32: the U tensors */
        for (int i = 0; i < nf; i++) {
            bool t = i <= 4 || i >= 11;
            if (all_bf16(b16[i]) != t) fprintf(stderr, "block (unfused %d): %s bfloat16 %d, expected %d\n", unfused, what[i], !t, t);
            CHECK(all_bf16(b16[i]) == t);
            CHECK(!all_bf16(f32[i]));
        }
        /* values and gradients within bfloat16's tolerance of float32: every operand of
         * the block's chain is rounded (2^-9 relative) at each of its seven nodes, and the
         * batch norms divide by the batch's spread, so 6% of the largest magnitude */
        for (int i = 0; i < nf; i++) near_t(what[i], b16[i], f32[i], i == 9 || i == 10 ? 2e-2 : 6e-2, 1e-6);
        for (int i = 0; i < nf; i++) vg_tensor_free(f32[i]), vg_tensor_free(b16[i]);
    }
}

/* x (N,H,W,C) -> 3x3 depthwise(f) "dw" -> training FusedBatchNormV3(scale, offset) "bn"
 * -> Relu6 "r" -> depthwise(f) "dw2" on g; the constants are kept in keep[0..4]. */
typedef struct dw_bn_net {
    vg_output scale, offset, empty, dw, dw2;
    vg_op *bn;
} dw_bn_net;
static const int64_t dwbn_xd[4] = {N, H, W, C};
static dw_bn_net dw_bn_dw(vg_graph *g, const float *xv, const float *fv, const float *sc, const float *of,
                          vg_tensor **keep) {
    static const float z = 0;
    int64_t fd[4] = {3, 3, C, 1}, dc[1] = {C}, d0[1] = {0}, s1[4] = {1, 1, 1, 1};
    dw_bn_net n;
    vg_output x = cst(g, dwbn_xd, 4, xv, "x", &keep[0]), f = cst(g, fd, 4, fv, "f", &keep[1]);
    n.scale = cst(g, dc, 1, sc, "scale", &keep[2]);
    n.offset = cst(g, dc, 1, of, "offset", &keep[3]);
    n.empty = cst(g, d0, 1, &z, "empty", &keep[4]);
    n.dw = vg_depthwise_conv2d_native(g, x, f, s1, "SAME", "dw");
    n.bn = vg_fused_batch_norm_v3(g, n.dw, n.scale, n.offset, n.empty, n.empty, 0.001f, true, "bn");
    n.dw2 = vg_depthwise_conv2d_native(g, vg_relu6(g, vg_out(n.bn, 0), "r"), f, s1, "SAME", "dw2");
    return n;
}

/* BN alone on a painted depthwise output: its batch mean is the float32 mean of the
 * bfloat16 values (U float32, unrounded), its y rounded; a BN whose y feeds a Sum (deny)
 * through a Relu6 (clear) is not painted (deny spreads back through clear, and it is
 * not between allow ops): its y is float32. */
static void test_amp_dw__bn_colouring(void) {
    vg_graph *g = vg_graph_new();
    vg_tensor *keep[6];
    float xv[N * H * W * C], fv[9 * C], sc[C], of[C];
    fill(xv, N * H * W * C, 3u, 1.5f, 0.1f);
    fill(fv, 9 * C, 4u, 0.5f, 0.0f);
    fill(sc, C, 5u, 0.3f, 1.0f);
    fill(of, C, 6u, 0.3f, 0.0f);
    dw_bn_net n = dw_bn_dw(g, xv, fv, sc, of, keep);
    vg_output dw = n.dw;
    vg_op *bn = n.bn;
    /* the second BN: Relu6 -> Sum */
    vg_op *bnb = vg_fused_batch_norm_v3(g, n.dw2, n.scale, n.offset, n.empty, n.empty, 0.001f, true, "bnb");
    int32_t ax[4] = {0, 1, 2, 3};
    int64_t d4[1] = {4};
    vg_status st = {0};
    keep[5] = vg_tensor_new_copy(VG_INT32, d4, 1, ax, sizeof ax, &st);
    vg_output sum = vg_sum(g, vg_relu6(g, vg_out(bnb, 0), "rb"), vg_const(g, keep[5], "axes"), false, "sum");
    vg_output fetch[5] = {vg_identity(g, dw, "dw_out"), vg_identity(g, vg_out(bn, 0), "y_out"),
                          vg_identity(g, vg_out(bn, 1), "mean_out"), vg_identity(g, vg_out(bnb, 0), "yb_out"), sum};
    vg_tensor *o[5] = {NULL};
    run(g, true, fetch, 5, o);
    CHECK(all_bf16(o[0]) && all_bf16(o[1]));
    CHECK(!all_bf16(o[2]) && !all_bf16(o[3]));
    const float *dv = vg_tensor_data(o[0]), *mv = vg_tensor_data(o[2]);
    for (int c = 0; c < C; c++) {
        double s = 0;
        for (int64_t r = 0; r < N * H * W; r++) s += dv[r * C + c];
        s /= N * H * W;
        CHECK(fabs(mv[c] - s) <= 1e-6 * fabs(s) + 1e-7);
    }
    for (int i = 0; i < 5; i++) vg_tensor_free(o[i]);
    for (int i = 0; i < 6; i++) vg_tensor_free(keep[i]);
    vg_graph_free(g);
}

/* The ReLU6 band at bfloat16's resolution: with scale 0 a training batch norm's y is its
 * offset, so the offset gradient is the sum of the activation gradient where the mask
 * passes. Painted, y is rounded: offsets 5.99 and 5.984375 (the tie, to even) round to
 * 6.0, outside the band (TF's Relu6Grad on the bfloat16 y gives 0), 5.9843747 rounds to
 * 5.96875 inside it; the fused gradient that recomputes y from x must agree. */
static void test_amp_dw__relu6_band(void) {
    static const float offs[C] = {5.99f, 5.97f, 3.0f, -1.0f, 5.984375f, 5.9843747f, 6.5f, 0.0f};
    static const bool pass16[C] = {false, true, true, false, false, true, false, false};
    static const bool pass32[C] = {true, true, true, false, true, true, false, false};
    vg_tensor *o[2][2] = {{NULL}};
    for (int amp = 0; amp < 2; amp++) {
        vg_graph *g = vg_graph_new();
        vg_tensor *keep[6];
        float xv[N * H * W * C], fv[9 * C], zs[C] = {0}, gv[N * H * W * C];
        fill(xv, N * H * W * C, 41u, 1.0f, 0.0f);
        fill(fv, 9 * C, 43u, 0.5f, 0.0f);
        fill(gv, N * H * W * C, 47u, 1.0f, 0.0f);
        dw_bn_net n = dw_bn_dw(g, xv, fv, zs, offs, keep);
        vg_output y = n.dw2, offset = n.offset;
        vg_output dy = cst(g, dwbn_xd, 4, gv, "dy", &keep[5]), doff;
        vg_status st = {0};
        CHECK_OK(vg_gradients(g, &y, 1, &offset, 1, &dy, &doff, &st), &st);
        vg_output fetch[2] = {vg_identity(g, y, "y_out"), vg_identity(g, doff, "doff")};
        run(g, amp, fetch, 2, o[amp]);
        for (int i = 0; i < 6; i++) vg_tensor_free(keep[i]);
        vg_graph_free(g);
    }
    CHECK(all_bf16(o[1][0]));
    const float *d32 = vg_tensor_data(o[0][1]), *d16 = vg_tensor_data(o[1][1]);
    for (int c = 0; c < C; c++) {
        CHECK((d32[c] != 0) == pass32[c]);
        if ((d16[c] != 0) != pass16[c]) fprintf(stderr, "offset %.9g: bfloat16 gradient %g\n", offs[c], d16[c]);
        CHECK((d16[c] != 0) == pass16[c]);
        if (getenv("AMP_DW_VERBOSE") || (pass16[c] && pass32[c] && !(fabs(d16[c] - d32[c]) <= 2e-2 * fabs(d32[c]) + 0.1)))
            fprintf(stderr, "offset %.9g: %.9g vs float32 %.9g\n", offs[c], d16[c], d32[c]);
        /* a sum of 126 bfloat16-rounded terms up to ~1.5 that can cancel (5.97: -0.31) */
        if (pass16[c] && pass32[c]) CHECK(fabs(d16[c] - d32[c]) <= 2e-2 * fabs(d32[c]) + 0.1);
    }
    for (int a = 0; a < 2; a++) vg_tensor_free(o[a][0]), vg_tensor_free(o[a][1]);
}

int main(void) {
    RUN_TEST(test_amp_dw__depthwise_exact);
    RUN_TEST(test_amp_dw__block);
    RUN_TEST(test_amp_dw__bn_colouring);
    RUN_TEST(test_amp_dw__relu6_band);
    TEST_MAIN_END();
}
