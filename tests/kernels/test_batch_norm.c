/* test_batch_norm.c - FusedBatchNormV3 / FusedBatchNormGradV3: forward values against a
 * hand-computed reference (training: batch statistics, Bessel-corrected batch variance;
 * inference: the given statistics), gradients by finite differences in both modes,
 * and the errors (rank, channel count, dtype, data format). */
#include "gradcheck.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>

static vg_tensor *tensor_d(const int64_t *dims, int nd, const double *v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, dims, nd, &st);
    int64_t n = vg_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) ((double *)vg_tensor_data(t))[i] = v[i];
    return t;
}

static const double X[2 * 2 * 1 * 3] = {1, -2, 0.5, 3, 4, -1, -1, 0, 2, 0.25, 1, 3};

static void test_forward_training(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 2, 1, 3}, 4, "x");
    double scv[3] = {1.5, -0.5, 2}, ofv[3] = {0.1, 0.2, -0.3};
    vg_output sc = vg_const_array(g, VG_DOUBLE, (int64_t[]){3}, 1, scv, "scale");
    vg_output of = vg_const_array(g, VG_DOUBLE, (int64_t[]){3}, 1, ofv, "offset");
    vg_output empty = vg_const_fill(g, VG_DOUBLE, (int64_t[]){0}, 1, 0, "empty");
    vg_op *bn = vg_fused_batch_norm_v3(g, x, sc, of, empty, empty, 0.001f, true, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK_EQ_INT(vg_op_num_outputs(bn), 6);
    CHECK_EQ_INT(vg_output_shape(vg_out(bn, 1)).dims[0], 3);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *xv = tensor_d((int64_t[]){2, 2, 1, 3}, 4, X);
    vg_output fetches[3] = {vg_out(bn, 0), vg_out(bn, 1), vg_out(bn, 2)};
    vg_tensor *outs[3] = {0};
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, fetches, outs, 3, NULL, 0, NULL, &st), &st);
    if (outs[0]) {
        for (int c = 0; c < 3; c++) {
            double m = 0, v = 0;
            for (int i = 0; i < 4; i++) m += X[i * 3 + c];
            m /= 4;
            for (int i = 0; i < 4; i++) v += (X[i * 3 + c] - m) * (X[i * 3 + c] - m);
            v /= 4;
            CHECK_NEAR(((double *)vg_tensor_data(outs[1]))[c], m, 1e-12);
            CHECK_NEAR(((double *)vg_tensor_data(outs[2]))[c], v * 4 / 3, 1e-12);
            for (int i = 0; i < 4; i++) {
                double want = scv[c] * (X[i * 3 + c] - m) / sqrt(v + (double)0.001f) + ofv[c];
                CHECK_NEAR(((double *)vg_tensor_data(outs[0]))[i * 3 + c], want, 1e-9);
            }
        }
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(outs[i]);
    kt_teardown(g, s, (vg_tensor *[]){xv}, 1, NULL, 0);
}

static void test_forward_inference(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 1, 2, 2}, 4, "x");
    float xv[4] = {1, 2, 3, 4}, scv[2] = {2, 1}, ofv[2] = {0, 1}, mv[2] = {1, 2}, vv[2] = {4, 0.25f};
    vg_output sc = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, scv, "scale");
    vg_output of = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, ofv, "offset");
    vg_output mean = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, mv, "mean");
    vg_output var = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, vv, "var");
    vg_op *bn = vg_fused_batch_norm_v3(g, x, sc, of, mean, var, 0.0f, false, "bn");
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_tensor *in = vg_tensor_new(VG_FLOAT, (int64_t[]){1, 1, 2, 2}, 4, &st);
    memcpy(vg_tensor_data(in), xv, sizeof xv);
    vg_output f = vg_out(bn, 0);
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, &x, &in, 1, &f, &out, 1, NULL, 0, NULL, &st), &st);
    if (out) {
        const float *o = vg_tensor_data(out);
        CHECK_NEAR(o[0], 2 * (1 - 1) / 2.0 + 0, 1e-6);   /* x=1, c0 */
        CHECK_NEAR(o[1], 1 * (2 - 2) / 0.5 + 1, 1e-6);   /* x=2, c1 */
        CHECK_NEAR(o[2], 2 * (3 - 1) / 2.0 + 0, 1e-6);   /* x=3, c0 */
        CHECK_NEAR(o[3], 1 * (4 - 2) / 0.5 + 1, 1e-6);   /* x=4, c1 */
    }
    kt_teardown(g, s, (vg_tensor *[]){out, in}, 2, NULL, 0);
}

static void gradcheck_mode(bool training) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 2, 1, 3}, 4, "x");
    vg_output sc = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3}, 1, "scale");
    vg_output of = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3}, 1, "offset");
    double mv[3] = {0.5, 1, -0.25}, vv[3] = {2, 0.5, 1};
    vg_output mean = training ? vg_const_fill(g, VG_DOUBLE, (int64_t[]){0}, 1, 0, "m")
                              : vg_const_array(g, VG_DOUBLE, (int64_t[]){3}, 1, mv, "m");
    vg_output var = training ? vg_const_fill(g, VG_DOUBLE, (int64_t[]){0}, 1, 0, "v")
                             : vg_const_array(g, VG_DOUBLE, (int64_t[]){3}, 1, vv, "v");
    vg_op *bn = vg_fused_batch_norm_v3(g, x, sc, of, mean, var, 0.01f, training, NULL);
    double scv[3] = {1.5, -0.5, 2}, ofv[3] = {0.1, 0.2, -0.3};
    vg_tensor *vals[3] = {tensor_d((int64_t[]){2, 2, 1, 3}, 4, X), tensor_d((int64_t[]){3}, 1, scv),
                          tensor_d((int64_t[]){3}, 1, ofv)};
    vg_output xs[3] = {x, sc, of};
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 3, vg_out(bn, 0), 1e-5, 1e-6), 0);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
}
static void test_gradient_training(void) { gradcheck_mode(true); }
static void test_gradient_inference(void) { gradcheck_mode(false); }

static void test_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x3 = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3, 4}, 3, "x");
    vg_output c4 = vg_const_fill(g, VG_FLOAT, (int64_t[]){4}, 1, 1, "c");
    CHECK(vg_fused_batch_norm_v3(g, x3, c4, c4, c4, c4, 0.001f, false, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "x must be 4-dimensional");
    vg_graph_free(g);

    g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3, 3, 5}, 4, "x");
    c4 = vg_const_fill(g, VG_FLOAT, (int64_t[]){4}, 1, 1, "c");
    CHECK(vg_fused_batch_norm_v3(g, x, c4, c4, c4, c4, 0.001f, false, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "scale must have 5 elements");
    vg_graph_free(g);

    g = vg_graph_new();
    x = vg_placeholder(g, VG_INT32, (int64_t[]){2, 3, 3, 4}, 4, "x");
    c4 = vg_const_fill(g, VG_FLOAT, (int64_t[]){4}, 1, 1, "c");
    CHECK(vg_fused_batch_norm_v3(g, x, c4, c4, c4, c4, 0.001f, false, NULL) == NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3, 3, 4}, 4, "x");
    c4 = vg_const_fill(g, VG_FLOAT, (int64_t[]){4}, 1, 1, "c");
    vg_op_builder *b = vg_op_builder_new(g, "FusedBatchNormV3", "bn");
    vg_output ins[5] = {x, c4, c4, c4, c4};
    vg_op_builder_add_inputs(b, ins, 5);
    vg_op_builder_set_attr_string(b, "data_format", "NCHW", 4);
    CHECK(vg_op_builder_finish(b) == NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_UNIMPLEMENTED);
    vg_graph_free(g);

    /* a run-time mismatch (unknown shapes at build time) is an error, not a crash */
    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, NULL, -1, "x");
    vg_output sc = vg_placeholder(g, VG_FLOAT, NULL, -1, "sc");
    vg_op *bn = vg_fused_batch_norm_v3(g, x, sc, sc, sc, sc, 0.001f, false, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *xv = vg_tensor_new(VG_FLOAT, (int64_t[]){1, 1, 1, 3}, 4, &st);
    vg_tensor *sv = vg_tensor_new(VG_FLOAT, (int64_t[]){2}, 1, &st);
    memset(vg_tensor_data(xv), 0, 12);
    memset(vg_tensor_data(sv), 0, 8);
    vg_output feeds[2] = {x, sc};
    vg_tensor *fv[2] = {xv, sv}, *out = NULL;
    vg_output f = vg_out(bn, 0);
    CHECK_STATUS(vg_session_run(s, NULL, feeds, fv, 2, &f, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "scale must be a 1-D tensor of 3 elements");
    kt_teardown(g, s, (vg_tensor *[]){xv, sv}, 2, NULL, 0);
}

/* float32 at a MobileNet block's shape ([8,50,48,32], offset mean 3 so a naive
 * E[x^2] - E[x]^2 would lose digits): y, batch mean/variance and the three gradients
 * against a double reference computed here, and the same bits at 1 and 2 intra-op
 * threads (the kernels sum fixed row pieces in a fixed order). */
static void test_float_large_threads(void) {
    enum { N = 8, H = 50, W = 48, C = 32 };
    const int64_t rows = N * H * W, nx = rows * C;
    float *x = malloc(sizeof(float) * nx), *dy = malloc(sizeof(float) * nx), sc[C], of[C];
    for (int64_t i = 0; i < nx; i++) x[i] = 3.0f + (float)sin(0.013 * (double)i) * (1.0f + (float)(i % C) / 8);
    for (int64_t i = 0; i < nx; i++) dy[i] = (float)cos(0.029 * (double)i);
    for (int k = 0; k < C; k++) sc[k] = 0.5f + 0.1f * (float)k, of[k] = 0.2f - 0.01f * (float)k;
    /* reference in double */
    double m[C] = {0}, v[C] = {0}, sdy[C] = {0}, sdyx[C] = {0};
    for (int64_t i = 0; i < rows; i++)
        for (int k = 0; k < C; k++) m[k] += x[i * C + k];
    for (int k = 0; k < C; k++) m[k] /= (double)rows;
    for (int64_t i = 0; i < rows; i++)
        for (int k = 0; k < C; k++) v[k] += (x[i * C + k] - m[k]) * (x[i * C + k] - m[k]);
    for (int k = 0; k < C; k++) v[k] /= (double)rows;
    const double eps = (double)0.001f;
    for (int64_t i = 0; i < rows; i++)
        for (int k = 0; k < C; k++) {
            double xh = (x[i * C + k] - m[k]) / sqrt(v[k] + eps);
            sdy[k] += dy[i * C + k], sdyx[k] += dy[i * C + k] * xh;
        }
    vg_tensor *got[2][5] = {{NULL}};
    for (int threads = 1; threads <= 2; threads++) {
        vg_graph *g = vg_graph_new();
        int64_t xd[4] = {N, H, W, C};
        vg_output xo = vg_const_array(g, VG_FLOAT, xd, 4, x, "x"), dyo = vg_const_array(g, VG_FLOAT, xd, 4, dy, "dy");
        vg_output so = vg_const_array(g, VG_FLOAT, (int64_t[]){C}, 1, sc, "scale");
        vg_output oo = vg_const_array(g, VG_FLOAT, (int64_t[]){C}, 1, of, "offset");
        vg_output empty = vg_const_fill(g, VG_FLOAT, (int64_t[]){0}, 1, 0, "empty");
        vg_op *bn = vg_fused_batch_norm_v3(g, xo, so, oo, empty, empty, 0.001f, true, NULL);
        vg_output y = vg_out(bn, 0), xs[3] = {xo, so, oo}, d[3];
        vg_status st;
        CHECK_OK(vg_gradients(g, &y, 1, xs, 3, &dyo, d, &st), &st);
        vg_session_options opt = {0};
        opt.intra_op_threads = threads;
        opt.inter_op_threads = 1;
        vg_session *s = vg_session_new(g, &opt, &st);
        vg_output fe[5] = {y, vg_out(bn, 1), d[0], d[1], d[2]};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fe, got[threads - 1], 5, NULL, 0, NULL, &st), &st);
        vg_session_free(s);
        vg_graph_free(g);
    }
    if (got[0][0]) {
        const float *y = vg_tensor_data(got[0][0]), *bm = vg_tensor_data(got[0][1]), *dx = vg_tensor_data(got[0][2]),
                    *ds = vg_tensor_data(got[0][3]), *dof = vg_tensor_data(got[0][4]);
        double ey = 0, edx = 0;
        for (int k = 0; k < C; k++) {
            CHECK_NEAR(bm[k], m[k], 1e-5);
            CHECK_NEAR(ds[k], sdyx[k], 1e-5 * rows);
            CHECK_NEAR(dof[k], sdy[k], 1e-6 * rows);
        }
        for (int64_t i = 0; i < rows; i++)
            for (int k = 0; k < C; k++) {
                double r = 1 / sqrt(v[k] + eps), xh = (x[i * C + k] - m[k]) * r;
                ey = fmax(ey, fabs(y[i * C + k] - (sc[k] * xh + of[k])));
                double want = sc[k] * r * (dy[i * C + k] - sdy[k] / rows - xh * sdyx[k] / rows);
                edx = fmax(edx, fabs(dx[i * C + k] - want));
            }
        CHECK(ey < 2e-5);
        CHECK(edx < 2e-5);
    }
    if (got[0][0] && got[1][0])
        for (int k = 0; k < 5; k++)
            CHECK(memcmp(vg_tensor_data(got[0][k]), vg_tensor_data(got[1][k]), vg_tensor_nbytes(got[0][k])) == 0);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 5; k++) vg_tensor_free(got[t][k]);
    free(x), free(dy);
}

int main(void) {
    RUN_TEST(test_forward_training);
    RUN_TEST(test_forward_inference);
    RUN_TEST(test_gradient_training);
    RUN_TEST(test_gradient_inference);
    RUN_TEST(test_errors);
    RUN_TEST(test_float_large_threads);
    TEST_MAIN_END();
}
