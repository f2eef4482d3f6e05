/* test_nn_depthwise.c - DepthwiseConv2dNative and its two backprops against a direct
 * loop written here from TF's definition (depthwise_conv_op.cc), at MobileNet's shapes
 * (3x3, strides 1 and 2, SAME and VALID, channel multiplier 1 and 2), float32 at 1 and
 * 2 intra-op threads, on vigil's own kernels (which split by rows, the filter
 * gradient by pieces summed in a fixed order, so 1 and 2 threads give the same bits)
 * and on oneDNN's grouped convolutions where vigil has them, and gradients by finite
 * differences in float64. */
#include "gradcheck.h"
#include "test_util.h"
#include "kernels/nn/nn_internal.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>

typedef struct shp {
    int64_t n, h, w, c, k, m, s;
    bool same;
} shp;

static int64_t osz(int64_t in, int64_t k, int64_t s, bool same, int64_t *pad) {
    if (same) {
        int64_t o = (in + s - 1) / s, t = (o - 1) * s + k - in;
        *pad = t > 0 ? t / 2 : 0;
        return o;
    }
    *pad = 0;
    return (in - k + s) / s;
}

/* out, dx and df by the definition, in double */
static void reference(const shp *p, const float *x, const float *f, const float *dy, double *out, double *dx,
                      double *df) {
    int64_t pt, pl, oh = osz(p->h, p->k, p->s, p->same, &pt), ow = osz(p->w, p->k, p->s, p->same, &pl);
    int64_t CM = p->c * p->m;
    memset(out, 0, sizeof(double) * (size_t)(p->n * oh * ow * CM));
    memset(dx, 0, sizeof(double) * (size_t)(p->n * p->h * p->w * p->c));
    memset(df, 0, sizeof(double) * (size_t)(p->k * p->k * CM));
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t ky = 0; ky < p->k; ky++)
                    for (int64_t kx = 0; kx < p->k; kx++) {
                        int64_t iy = oy * p->s + ky - pt, ix = ox * p->s + kx - pl;
                        if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
                        for (int64_t c = 0; c < p->c; c++)
                            for (int64_t m = 0; m < p->m; m++) {
                                int64_t xi = ((n * p->h + iy) * p->w + ix) * p->c + c;
                                int64_t fi = ((ky * p->k + kx) * p->c + c) * p->m + m;
                                int64_t oi = ((n * oh + oy) * ow + ox) * CM + c * p->m + m;
                                out[oi] += (double)x[xi] * f[fi];
                                dx[xi] += (double)dy[oi] * f[fi];
                                df[fi] += (double)dy[oi] * x[xi];
                            }
                    }
}

static double maxrel(const vg_tensor *t, const double *want, int64_t n) {
    double m = 0, scale = 1e-6;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    const float *v = vg_tensor_data(t);
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(v[i] - want[i]) / scale);
    return m;
}

static void values_mobilenet_shapes(bool dnnl) {
    const shp cases[] = {
        {2, 17, 15, 32, 3, 1, 1, true},  {2, 17, 15, 32, 3, 1, 2, true},  {2, 16, 16, 24, 3, 2, 1, false},
        {3, 13, 12, 8, 3, 1, 2, false}, {1, 9, 11, 64, 5, 1, 2, true},   {2, 8, 8, 5, 3, 3, 1, true},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const shp *p = &cases[ci];
        int64_t pt, pl, oh = osz(p->h, p->k, p->s, p->same, &pt), ow = osz(p->w, p->k, p->s, p->same, &pl);
        int64_t nx = p->n * p->h * p->w * p->c, nf = p->k * p->k * p->c * p->m, no = p->n * oh * ow * p->c * p->m;
        float *x = malloc(sizeof(float) * (size_t)nx), *f = malloc(sizeof(float) * (size_t)nf),
              *dy = malloc(sizeof(float) * (size_t)no);
        double *out = malloc(sizeof(double) * (size_t)no), *dx = malloc(sizeof(double) * (size_t)nx),
               *df = malloc(sizeof(double) * (size_t)nf);
        for (int64_t i = 0; i < nx; i++) x[i] = (float)sin(0.37 * (double)i);
        for (int64_t i = 0; i < nf; i++) f[i] = (float)cos(0.23 * (double)i);
        for (int64_t i = 0; i < no; i++) dy[i] = (float)sin(0.11 * (double)i + 1);
        reference(p, x, f, dy, out, dx, df);
        vg_tensor *got[2][3] = {{NULL}};
        long long runs0 = vg__conv_dnnl_runs();
        for (int threads = 1; threads <= 2; threads++) {
            vg_graph *g = vg_graph_new();
            int64_t xd[4] = {p->n, p->h, p->w, p->c}, fd[4] = {p->k, p->k, p->c, p->m}, od[4] = {p->n, oh, ow, p->c * p->m};
            vg_output xo = vg_const_array(g, VG_FLOAT, xd, 4, x, "x"), fo = vg_const_array(g, VG_FLOAT, fd, 4, f, "f");
            vg_output dyo = vg_const_array(g, VG_FLOAT, od, 4, dy, "dy");
            int64_t strides[4] = {1, p->s, p->s, 1};
            const char *pad = p->same ? "SAME" : "VALID";
            vg_output y = vg_depthwise_conv2d_native(g, xo, fo, strides, pad, "y");
            vg_status st;
            vg_output xs[2] = {xo, fo}, d[2]; /* the backprop ops, through tf.gradients with grad_ys = dy */
            CHECK_OK(vg_gradients(g, &y, 1, xs, 2, &dyo, d, &st), &st);
            vg_output bi = d[0], bf = d[1];
            vg_session_options so = {0};
            so.intra_op_threads = threads;
            so.inter_op_threads = 1;
            vg_session *s = vg_session_new(g, &so, &st);
            vg_output fe[3] = {y, bi, bf};
            CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fe, got[threads - 1], 3, NULL, 0, NULL, &st), &st);
            vg_session_free(s);
            vg_graph_free(g);
        }
        for (int t = 0; t < 2; t++) {
            if (!got[t][0]) continue;
            double e0 = maxrel(got[t][0], out, no), e1 = maxrel(got[t][1], dx, nx), e2 = maxrel(got[t][2], df, nf);
            if (e0 > 1e-5 || e1 > 1e-5 || e2 > 1e-5)
                fprintf(stderr, "case %zu threads %d: out %g dx %g df %g\n", ci, t + 1, e0, e1, e2);
            CHECK(e0 <= 1e-5 && e1 <= 1e-5 && e2 <= 1e-5);
        }
        /* oneDNN ran the three ops at both thread counts (where it is built in) */
        if (dnnl) CHECK(vg__conv_dnnl_runs() - runs0 == 6);
        else CHECK(vg__conv_dnnl_runs() == runs0);
        if (got[0][0] && got[1][0] && !dnnl)
            for (int k = 0; k < 3; k++) /* the same bits at 1 and 2 threads */
                CHECK(memcmp(vg_tensor_data(got[0][k]), vg_tensor_data(got[1][k]), vg_tensor_nbytes(got[0][k])) == 0);
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < 3; k++) vg_tensor_free(got[t][k]);
        free(x), free(f), free(dy), free(out), free(dx), free(df);
    }
}

static void test_depthwise__values_mobilenet_shapes(void) {
    vg__conv_set_dnnl(0);
    values_mobilenet_shapes(false);
    if (vg__conv_set_dnnl(2) && vg_backend_get() == VG_BACKEND_DNNL) values_mobilenet_shapes(true);
    vg__conv_set_dnnl(1);
}

/* d/dx and d/df of the op by finite differences (float64), stride 2 SAME with M = 2. */
static void test_depthwise__gradients(void) {
    for (int mode = 0; mode < 2; mode++) {
        vg_graph *g = vg_graph_new();
        vg_output xd = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 6, 5, 3}, 4, "x");
        vg_output fd = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3, 3, 3, 2}, 4, "f");
        int64_t st[4] = {1, mode ? 2 : 1, mode ? 2 : 1, 1};
        vg_output y = vg_depthwise_conv2d_native(g, xd, fd, st, mode ? "SAME" : "VALID", NULL);
        vg_tensor *xv = kt_wave_f64((int64_t[]){2, 6, 5, 3}, 4, false, 0.7);
        vg_tensor *fv = kt_wave_f64((int64_t[]){3, 3, 3, 2}, 4, true, 0.3);
        vg_output xs[2] = {xd, fd};
        vg_tensor *vals[2] = {xv, fv};
        CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, y, 1e-6, 1e-6), 0);
        kt_teardown(g, NULL, vals, 2, NULL, 0);
    }
}

int main(void) {
    RUN_TEST(test_depthwise__values_mobilenet_shapes);
    RUN_TEST(test_depthwise__gradients);
    TEST_MAIN_END();
}
