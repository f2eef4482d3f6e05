/* test_bf16_conv.c - Conv2D and its two backprops in bfloat16 (issue 34, item 1): the
 * nodes painted by the mixed-precision rewrite run oneDNN's convolution primitives with
 * bfloat16 operands and float32 accumulation (Conv2D and the input gradient with 16+
 * channels; the rest float32 on the rounded operands: the same sums); their values against float32's (the same
 * graph without the rewrite) within bfloat16's tolerance, their results rounded to
 * bfloat16, for SAME and VALID padding, strides 1 and 2, a 1x1 filter, and channel counts
 * on and off oneDNN's blocking. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void fill(float *v, int64_t n, uint32_t seed) { kt_fill_lcg(v, n, seed, 23, 1.0f); }

typedef struct ccase {
    int64_t n, h, w, ci, kh, kw, co, s;
    const char *pad;
} ccase;

/* Runs y = conv(x, f), dx, df (dy = a fixed tensor) with or without the rewrite. */
static void run_case(const ccase *c, bool amp, const float *xv, const float *fv, const float *gv, vg_tensor **o) {
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {c->n, c->h, c->w, c->ci}, fd[4] = {c->kh, c->kw, c->ci, c->co};
    int64_t strides[4] = {1, c->s, c->s, 1};
    vg_tensor *tx = vg_tensor_new_copy(VG_FLOAT, xd, 4, xv, sizeof(float) * (size_t)(xd[0] * xd[1] * xd[2] * xd[3]), &st);
    vg_tensor *tf = vg_tensor_new_copy(VG_FLOAT, fd, 4, fv, sizeof(float) * (size_t)(fd[0] * fd[1] * fd[2] * fd[3]), &st);
    vg_output x = vg_const(g, tx, "x"), f = vg_const(g, tf, "f");
    vg_output y = vg_conv2d(g, x, f, strides, c->pad, "conv");
    vg_shape ys = vg_output_shape(y);
    int64_t ny = 1;
    for (int i = 0; i < 4; i++) ny *= ys.dims[i];
    vg_tensor *tg = vg_tensor_new_copy(VG_FLOAT, ys.dims, 4, gv, sizeof(float) * (size_t)ny, &st);
    vg_output dy = vg_const(g, tg, "dy"), xs[2] = {x, f}, dxs[2];
    CHECK_OK(vg_gradients(g, &y, 1, xs, 2, &dy, dxs, &st), &st);
    vg_output fetch[3] = {vg_identity(g, y, "y_out"), vg_identity(g, dxs[0], "dx_out"), vg_identity(g, dxs[1], "df_out")};
    kt_run_amp(g, amp, fetch, o, 3);
    vg_tensor_free(tx), vg_tensor_free(tf), vg_tensor_free(tg);
    vg_graph_free(g);
}

static void test_bf16_conv__against_f32(void) {
    static const ccase cases[] = {
        {4, 12, 12, 16, 3, 3, 32, 1, "SAME"}, {2, 11, 9, 8, 5, 5, 16, 2, "VALID"}, {3, 7, 7, 32, 1, 1, 24, 1, "SAME"},
        {2, 14, 14, 3, 5, 5, 32, 1, "SAME"},  {2, 9, 9, 17, 3, 3, 5, 2, "SAME"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const ccase *c = &cases[k];
        int64_t nx = c->n * c->h * c->w * c->ci, nf = c->kh * c->kw * c->ci * c->co;
        int64_t ny = c->n * c->h * c->w * c->co; /* an upper bound for dy */
        float *xv = malloc(sizeof(float) * (size_t)nx), *fv = malloc(sizeof(float) * (size_t)nf),
              *gv = malloc(sizeof(float) * (size_t)ny);
        fill(xv, nx, 11 + (uint32_t)k);
        fill(fv, nf, 23 + (uint32_t)k);
        fill(gv, ny, 37 + (uint32_t)k);
        vg_tensor *o32[3] = {NULL}, *o16[3] = {NULL};
        run_case(c, false, xv, fv, gv, o32);
        run_case(c, true, xv, fv, gv, o16);
        /* each output element is a sum of products of operands below 1 in magnitude, each
         * operand off by 2^-9 relative in bfloat16, then the result rounded: bound the error
         * by the sum of the terms' magnitudes (<= the reduction length) times 2^-7 */
        int64_t red[3] = {c->kh * c->kw * c->ci, c->kh * c->kw * c->co, c->n * c->h * c->w};
        for (int i = 0; i < 3; i++) {
            if (!o32[i] || !o16[i]) {
                CHECK(0);
                continue;
            }
            int64_t n = vg_tensor_num_elements(o32[i]);
            CHECK_EQ_INT(vg_tensor_num_elements(o16[i]), n);
            const float *a = vg_tensor_data(o32[i]), *b = vg_tensor_data(o16[i]);
            int bad = 0, low = 0;
            double err = 0, mag = 0;
            for (int64_t e = 0; e < n; e++) {
                double d = fabs((double)a[e] - b[e]);
                if (!(d <= fabs((double)a[e]) / 128.0 + (double)red[i] / 2048.0)) bad++;
                if (fbits(b[e]) & 0xffffu) low++;
                err += d * d;
                mag += (double)a[e] * a[e];
            }
            if (bad) fprintf(stderr, "case %zu output %d: %d of %lld off\n", k, i, bad, (long long)n);
            CHECK_EQ_INT(bad, 0);
            CHECK_EQ_INT(low, 0);                 /* painted: bfloat16 results */
            CHECK(sqrt(err / (mag + 1e-30)) < 1e-2); /* relative RMS error ~ bfloat16's */
        }
        for (int i = 0; i < 3; i++) vg_tensor_free(o32[i]), vg_tensor_free(o16[i]);
        free(xv), free(fv), free(gv);
    }
}

/* Conv2D -> BiasAdd -> Relu -> 2x2 MaxPool -> Conv2D, all painted: the planner fuses the
 * chain (one rounding at its end, on oneDNN's bfloat16 convolution with the bias and ReLU
 * as post-ops) and the result stays within bfloat16's tolerance of float32. */
static void run_chain(bool amp, int ci, const float *xv, const float *fv, const float *f2v, const float *bv, vg_tensor **o) {
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {2, 8, 8, ci}, fd[4] = {3, 3, ci, 32}, f2d[4] = {3, 3, 32, 16}, bd[1] = {32};
    int64_t s1[4] = {1, 1, 1, 1}, k2[4] = {1, 2, 2, 1};
    vg_tensor *t[4] = {vg_tensor_new_copy(VG_FLOAT, xd, 4, xv, sizeof(float) * 2 * 8 * 8 * (size_t)ci, &st),
                       vg_tensor_new_copy(VG_FLOAT, fd, 4, fv, sizeof(float) * 9 * 32 * (size_t)ci, &st),
                       vg_tensor_new_copy(VG_FLOAT, f2d, 4, f2v, sizeof(float) * 9 * 32 * 16, &st),
                       vg_tensor_new_copy(VG_FLOAT, bd, 1, bv, sizeof(float) * 32, &st)};
    vg_output c1 = vg_conv2d(g, vg_const(g, t[0], "x"), vg_const(g, t[1], "f"), s1, "SAME", "c1");
    vg_output r = vg_relu(g, vg_bias_add(g, c1, vg_const(g, t[3], "b"), "ba"), "r");
    vg_output mp = vg_max_pool(g, r, k2, k2, "VALID", "mp");
    vg_output c2 = vg_conv2d(g, mp, vg_const(g, t[2], "f2"), s1, "SAME", "c2");
    vg_output xs[2] = {vg_op_input(c1.op, 0), vg_op_input(c1.op, 1)}, dxs[2];
    CHECK_OK(vg_gradients(g, &c2, 1, xs, 2, NULL, dxs, &st), &st); /* MaxPoolGrad -> ReluGrad -> ... */
    vg_output f[4] = {vg_identity(g, mp, "mp_out"), vg_identity(g, c2, "c2_out"), vg_identity(g, dxs[0], "dx_out"),
                      vg_identity(g, dxs[1], "df_out")};
    kt_run_amp(g, amp, f, o, 4);
    for (int i = 0; i < 4; i++) vg_tensor_free(t[i]);
    vg_graph_free(g);
}

static void test_bf16_conv__fused_chain(void) {
    for (int ci = 3; ci <= 32; ci += 29) { /* 3: float32 kernels on rounded operands; 32: oneDNN bfloat16 */
        static float xv[2 * 8 * 8 * 32], fv[9 * 32 * 32], f2v[9 * 32 * 16], bv[32];
        fill(xv, 2 * 8 * 8 * ci, 51), fill(fv, 9 * 32 * ci, 52), fill(f2v, 9 * 32 * 16, 53), fill(bv, 32, 54);
        vg_tensor *o16[4] = {NULL}, *o32[4] = {NULL};
        run_chain(true, ci, xv, fv, f2v, bv, o16);
        run_chain(false, ci, xv, fv, f2v, bv, o32);
        /* loose bounds on the sums' magnitudes. The gradients (dx, df) go through
         * MaxPoolGrad, which routes each window's gradient to its maximum: where two values
         * of a window round to the same bfloat16 (or swap order) the routing differs from
         * float32's, so they are held to a relative RMS error only (0.067 seen with 32
         * channels; garbage gives ~1) */
        double red[4] = {9.0 * ci + 1, 9.0 * 32 * 9 * ci, 0, 0};
        for (int i = 0; i < 4; i++) {
            if (!o16[i] || !o32[i]) {
                CHECK(0);
                continue;
            }
            int64_t n = vg_tensor_num_elements(o32[i]);
            const float *a = vg_tensor_data(o32[i]), *b = vg_tensor_data(o16[i]);
            int low = 0, bad = 0;
            double err = 0, mag = 0;
            for (int64_t e = 0; e < n; e++) {
                if (fbits(b[e]) & 0xffffu) low++;
                if (i < 2 && !(fabs((double)a[e] - b[e]) <= fabs((double)a[e]) / 64.0 + red[i] / 4096.0)) bad++;
                err += ((double)a[e] - b[e]) * ((double)a[e] - b[e]);
                mag += (double)a[e] * a[e];
            }
            if (bad || low) fprintf(stderr, "chain ci=%d output %d: %d off, %d not bfloat16, rms %g\n", ci, i, bad, low, sqrt(err / (mag + 1e-30)));
            CHECK_EQ_INT(bad, 0);
            CHECK_EQ_INT(low, 0);
            CHECK(sqrt(err / (mag + 1e-30)) < (i < 2 ? 2e-2 : 0.15));
        }
        for (int i = 0; i < 4; i++) vg_tensor_free(o16[i]), vg_tensor_free(o32[i]);
    }
}

int main(void) {
    RUN_TEST(test_bf16_conv__against_f32);
    RUN_TEST(test_bf16_conv__fused_chain);
    TEST_MAIN_END();
}
