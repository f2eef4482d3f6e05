/* test_bf16_conv.c - Conv2D and its two backprops in bfloat16 (issue 34, item 1): the
 * nodes painted by the mixed-precision rewrite run oneDNN's convolution primitives with
 * bfloat16 operands and float32 accumulation (Conv2D and the input gradient with 16+
 * channels; the rest float32 on the rounded operands: the same sums); their values against float32's (the same
 * graph without the rewrite) within bfloat16's tolerance, their results rounded to
 * bfloat16, for SAME and VALID padding, strides 1 and 2, a 1x1 filter, and channel counts
 * on and off oneDNN's blocking. */
#include "test_util.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void fill(float *v, int64_t n, uint32_t seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffffff) / (float)(1 << 23) - 1.0f;
    }
}

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
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_set_auto_mixed_precision(s, amp, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fetch, o, 3, NULL, 0, NULL, &st), &st);
    vg_session_free(s);
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

int main(void) {
    RUN_TEST(test_bf16_conv__against_f32);
    TEST_MAIN_END();
}
