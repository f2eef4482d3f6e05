/* test_linalg_random_ext.c - BatchMatMulV2 (broadcast batch dims, all adjoint cases,
 * gradients), MatrixBandPart, Diag/DiagPart, and the Python-level constructors
 * tf.random_uniform(minval, maxval) / tf.random_normal(mean, stddev) /
 * tf.truncated_normal and tf.zeros / tf.ones of run-time shapes. Mirrors TF 1.15's
 * batch_matmul_op_test.py (_testNonEmpty against a naive product, broadcasting,
 * BatchMatmulGradientTest), matrix_band_part_op_test.py (against tril/triu by hand),
 * diag_op_test.py (testRankOneIntTensor, testRankTwoFloatTensor, DiagPart errors,
 * gradients) and random_ops_test.py (RandomUniformTest testRange, RandomNormalTest /
 * TruncatedNormalTest moments and seeding). */
#include "gradcheck.h"
#include "op_test_util.h"
#include "kernels_fixture.h"

static double naive(const double *a, const double *b, int m, int k, int n, int i, int j, bool ax, bool ay) {
    double s = 0;
    for (int t = 0; t < k; t++) s += (ax ? a[t * m + i] : a[i * k + t]) * (ay ? b[j * k + t] : b[t * n + j]);
    return s;
}

static void test_batch_matmul(void) {
    /* x [2, 1, 3, 4] (or adjoint [.., 4, 3]), y [5, 4, 2] (or [.., 2, 4]) -> [2, 5, 3, 2] */
    for (int c = 0; c < 4; c++) {
        bool ax = c & 1, ay = c & 2;
        vg_graph *g = vg_graph_new();
        double xv[24], yv[40];
        for (int i = 0; i < 24; i++) xv[i] = sin(i * 0.7) * 2;
        for (int i = 0; i < 40; i++) yv[i] = cos(i * 0.3);
        int64_t dx[4] = {2, 1, ax ? 4 : 3, ax ? 3 : 4}, dy[3] = {5, ay ? 2 : 4, ay ? 4 : 2}, dout[4] = {2, 5, 3, 2};
        double e[60];
        for (int b0 = 0; b0 < 2; b0++)
            for (int b1 = 0; b1 < 5; b1++)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 2; j++)
                        e[((b0 * 5 + b1) * 3 + i) * 2 + j] = naive(xv + b0 * 12, yv + b1 * 8, 3, 4, 2, i, j, ax, ay);
        vg_output y = vg_batch_matmul(g, cst(g, VG_DOUBLE, dx, 4, xv), cst(g, VG_DOUBLE, dy, 3, yv), ax, ay, NULL);
        vg_shape s = vg_output_shape(y);
        CHECK_EQ_INT(s.ndims, 4);
        expect_tol(run(g, y), VG_DOUBLE, dout, 4, e, 1e-12);
        y = vg_batch_matmul(g, cst(g, VG_FLOAT, dx, 4, xv), cst(g, VG_FLOAT, dy, 3, yv), ax, ay, NULL);
        expect_tol(run(g, y), VG_FLOAT, dout, 4, e, 1e-5);
        /* gradients through the broadcast */
        vg_tensor *tx, *ty;
        vg_output px = ph(g, VG_DOUBLE, dx, 4, xv, &tx), py = ph(g, VG_DOUBLE, dy, 3, yv, &ty);
        vg_output ins[2] = {px, py};
        vg_tensor *vals[2] = {tx, ty};
        CHECK_EQ_INT(vg_gradcheck(g, ins, vals, 2, vg_batch_matmul(g, px, py, ax, ay, NULL), 1e-6, 1e-7), 0);
        vg_tensor_free(tx), vg_tensor_free(ty);
        vg_graph_free(g);
    }
    /* same-shape batches: the gradient skips the reduction */
    vg_graph *g = vg_graph_new();
    int64_t d[3] = {2, 2, 3}, d2[3] = {2, 3, 2};
    double a[12], b[12];
    for (int i = 0; i < 12; i++) a[i] = 0.1 * i - 0.4, b[i] = 0.3 - 0.05 * i;
    vg_tensor *ta, *tb;
    vg_output pa = ph(g, VG_DOUBLE, d, 3, a, &ta), pb = ph(g, VG_DOUBLE, d2, 3, b, &tb);
    vg_output ins[2] = {pa, pb};
    vg_tensor *vals[2] = {ta, tb};
    CHECK_EQ_INT(vg_gradcheck(g, ins, vals, 2, vg_batch_matmul(g, pa, pb, false, false, NULL), 1e-6, 1e-7), 0);
    /* mismatched inner dims */
    vg_status st;
    CHECK(vg_batch_matmul(g, pa, pa, false, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "In[0] mismatch In[1] shape");
    vg_tensor_free(ta), vg_tensor_free(tb);
    vg_graph_free(g);
}

static void test_band_part_and_diag(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {3, 4};
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = i + 1;
    struct { int64_t lo, hi; } cases[4] = {{1, 0}, {-1, 1}, {0, -1}, {0, 0}};
    for (int c = 0; c < 4; c++) {
        double e[12];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                bool keep = (cases[c].lo < 0 || i - j <= cases[c].lo) && (cases[c].hi < 0 || j - i <= cases[c].hi);
                e[i * 4 + j] = keep ? x[i * 4 + j] : 0;
            }
        expect_tol(run(g, vg_matrix_band_part_c(g, cst(g, VG_FLOAT, d, 2, x), cases[c].lo, cases[c].hi, NULL)),
                  VG_FLOAT, d, 2, e, 0);
    }
    /* lower part (-1, 0) of a 2x2 by hand */
    int64_t d22[2] = {2, 2};
    double m[4] = {1, 2, 3, 4}, low[4] = {1, 0, 3, 4};
    expect_tol(run(g, vg_matrix_band_part_c(g, cst(g, VG_INT32, d22, 2, m), -1, 0, NULL)), VG_INT32, d22, 2, low, 0);
    vg_status st;
    vg_tensor *t = run_st(g, vg_matrix_band_part_c(g, cst(g, VG_FLOAT, d, 2, x), 4, 0, NULL), &st);
    CHECK(t == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    /* Diag / DiagPart */
    int64_t d3[1] = {3}, d33[2] = {3, 3};
    double v[3] = {1, 2, 3}, dg[9] = {1, 0, 0, 0, 2, 0, 0, 0, 3};
    expect_tol(run(g, vg_diag(g, cst(g, VG_INT32, d3, 1, v), NULL)), VG_INT32, d33, 2, dg, 0);
    expect_tol(run(g, vg_diag_part(g, cst(g, VG_FLOAT, d33, 2, dg), NULL)), VG_FLOAT, d3, 1, v, 0);
    int64_t d2222[4] = {2, 2, 2, 2};
    double r2[16] = {0};
    r2[0] = 1, r2[5] = 2, r2[10] = 3, r2[15] = 4;
    expect_tol(run(g, vg_diag(g, cst(g, VG_DOUBLE, d22, 2, m), NULL)), VG_DOUBLE, d2222, 4, r2, 0);
    expect_tol(run(g, vg_diag_part(g, cst(g, VG_DOUBLE, d2222, 4, r2), NULL)), VG_DOUBLE, d22, 2, m, 0);
    CHECK(vg_diag_part(g, cst(g, VG_FLOAT, d3, 1, v), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "even rank");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_diag_part(g, cst(g, VG_FLOAT, d, 2, x), NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* gradients */
    g = vg_graph_new();
    vg_tensor *tx, *tv, *tm;
    vg_output px = ph(g, VG_DOUBLE, d, 2, x, &tx), pv = ph(g, VG_DOUBLE, d3, 1, v, &tv);
    vg_output pm = ph(g, VG_DOUBLE, d33, 2, dg, &tm);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_matrix_band_part_c(g, px, 1, 0, NULL), 1e-6, 1e-8), 0);
    CHECK_EQ_INT(vg_gradcheck(g, &pv, &tv, 1, vg_diag(g, pv, NULL), 1e-6, 1e-8), 0);
    CHECK_EQ_INT(vg_gradcheck(g, &pm, &tm, 1, vg_diag_part(g, pm, NULL), 1e-6, 1e-8), 0);
    vg_tensor_free(tx), vg_tensor_free(tv), vg_tensor_free(tm);
    vg_graph_free(g);
}

static double moment(const vg_tensor *t, int p, double c) {
    double s = 0;
    int64_t n = vg_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) s += pow(get(t, i) - c, p);
    return s / (double)n;
}

static void test_random_constructors(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 87654321);
    int32_t shp[2] = {100, 100};
    vg_output shape = vg_const_i32_vec(g, shp, 2, NULL);
    vg_output u = vg_random_uniform_range(g, shape, -1.0, 3.0, VG_FLOAT, 0, NULL);
    CHECK(u.op && strcmp(vg_op_name(u.op), "random_uniform") == 0);
    CHECK(vg_graph_op_by_name(g, "random_uniform/max") != NULL);
    vg_output nrm = vg_random_normal_dist(g, shape, 2.0, 0.5, VG_DOUBLE, 0, NULL);
    vg_output tn = vg_truncated_normal_dist(g, shape, -1.0, 2.0, VG_FLOAT, 0, NULL);
    vg_tensor *tu = run(g, u), *tnr = run(g, nrm), *ttn = run(g, tn);
    if (tu && tnr && ttn) {
        double mn = 1e9, mx = -1e9;
        for (int64_t i = 0; i < 10000; i++) {
            double v = get(tu, i);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        CHECK(mn >= -1.0 && mx < 3.0);
        CHECK(mn < -0.99 && mx > 2.99);
        CHECK_NEAR(moment(tu, 1, 0), 1.0, 0.05);             /* mean of U(-1, 3) */
        CHECK_NEAR(moment(tnr, 1, 0), 2.0, 0.02);            /* mean */
        CHECK_NEAR(sqrt(moment(tnr, 2, 2.0)), 0.5, 0.02);    /* stddev */
        double tmn = 1e9, tmx = -1e9;
        for (int64_t i = 0; i < 10000; i++) {
            double v = get(ttn, i);
            tmn = v < tmn ? v : tmn;
            tmx = v > tmx ? v : tmx;
        }
        CHECK(tmn >= -1.0 - 4.0 && tmx <= -1.0 + 4.0); /* within 2 stddev */
        CHECK_NEAR(moment(ttn, 1, 0), -1.0, 0.05);
        /* the truncated normal of stddev s has stddev ~0.88 s */
        CHECK_NEAR(sqrt(moment(ttn, 2, -1.0)), 0.8796 * 2.0, 0.05);
    }
    vg_tensor_free(tu), vg_tensor_free(tnr), vg_tensor_free(ttn);
    /* integer ranges: RandomUniformInt, every value of [-3, 5) drawn, none outside */
    vg_output ui = vg_random_uniform_range(g, shape, -3, 5, VG_INT32, 0, NULL);
    CHECK(ui.op && strcmp(vg_op_type(ui.op), "RandomUniformInt") == 0 && strcmp(vg_op_name(ui.op), "random_uniform_1") == 0);
    vg_tensor *ti = run(g, ui);
    if (ti) {
        int hist[8] = {0};
        bool in_range = true;
        for (int64_t i = 0; i < 10000; i++) {
            int32_t v = ((const int32_t *)vg_tensor_data(ti))[i];
            if (v < -3 || v >= 5) in_range = false;
            else hist[v + 3]++;
        }
        CHECK(in_range);
        for (int k = 0; k < 8; k++) CHECK_NEAR(hist[k] / 10000.0, 0.125, 0.02);
        vg_tensor_free(ti);
    }
    vg_output bad = vg_random_uniform_int(g, shape, vg_const_i64(g, 5, NULL), vg_const_i64(g, 5, NULL), 1, 2, NULL);
    vg_status st;
    vg_tensor *tb = run_st(g, bad, &st);
    CHECK(tb == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Need minval < maxval: 5 >= 5");
    vg_graph_free(g);
    /* the same graph seed and op seed give the same values in two graphs */
    double first[2];
    for (int k = 0; k < 2; k++) {
        g = vg_graph_new();
        vg_graph_set_seed(g, 5);
        int32_t s3[1] = {3};
        vg_tensor *t = run(g, vg_random_uniform_range(g, vg_const_i32_vec(g, s3, 1, NULL), 10, 20, VG_DOUBLE, 7, NULL));
        if (t) {
            first[k] = get(t, 2);
            CHECK(first[k] >= 10 && first[k] < 20);
        }
        vg_tensor_free(t);
        vg_graph_free(g);
    }
    CHECK(first[0] == first[1]);
}

static void test_zeros_ones_dynamic(void) {
    vg_graph *g = vg_graph_new();
    int64_t dyn[2] = {-1, 3};
    vg_output x = vg_placeholder(g, VG_FLOAT, dyn, 2, "x");
    vg_output shp = vg_shape_op(g, x, VG_INT32, NULL);
    vg_output z = vg_zeros(g, shp, VG_FLOAT, NULL), o = vg_ones(g, shp, VG_INT64, NULL);
    CHECK(z.op && strcmp(vg_op_name(z.op), "zeros") == 0 && strcmp(vg_op_type(z.op), "Fill") == 0);
    CHECK(o.op && strcmp(vg_op_name(o.op), "ones") == 0);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    int64_t d[2] = {2, 3};
    double xv[6] = {1, 2, 3, 4, 5, 6}, zs[6] = {0}, os[6] = {1, 1, 1, 1, 1, 1};
    vg_tensor *tx = mk(VG_FLOAT, d, 2, xv), *outs[2] = {NULL, NULL};
    vg_output f[2] = {z, o};
    CHECK_OK(vg_session_run(s, NULL, &x, &tx, 1, f, outs, 2, NULL, 0, NULL, &st), &st);
    expect_tol(outs[0], VG_FLOAT, d, 2, zs, 0);
    expect_tol(outs[1], VG_INT64, d, 2, os, 0);
    kt_teardown(g, s, (vg_tensor *[]){tx}, 1, NULL, 0);
}

/* multinomial_op_test.py: testSmallEntropy (one dominant logit), testLargeLogits,
 * frequencies close to the softmax, num_samples 0, seeding, the bad-input checks. */
static void test_multinomial(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1234);
    int64_t d[2] = {2, 3};
    double lg[6] = {log(0.1), log(0.2), log(0.7), -99999.0, 99999.0, -INFINITY};
    vg_output m = vg_multinomial(g, cst(g, VG_FLOAT, d, 2, lg), 20000, 0, VG_INT64, NULL);
    CHECK(m.op && strcmp(vg_op_name(m.op), "multinomial/Multinomial") == 0);
    vg_tensor *t = run(g, m);
    if (t) {
        CHECK_EQ_INT(vg_tensor_dim(t, 1), 20000);
        double cnt[3] = {0, 0, 0};
        bool row1_ok = true;
        for (int64_t j = 0; j < 20000; j++) {
            int64_t c0 = ((const int64_t *)vg_tensor_data(t))[j], c1 = ((const int64_t *)vg_tensor_data(t))[20000 + j];
            if (c0 >= 0 && c0 < 3) cnt[c0]++;
            row1_ok &= c1 == 1;
        }
        CHECK_NEAR(cnt[0] / 20000, 0.1, 0.02);
        CHECK_NEAR(cnt[1] / 20000, 0.2, 0.02);
        CHECK_NEAR(cnt[2] / 20000, 0.7, 0.02);
        CHECK(row1_ok);
        vg_tensor_free(t);
    }
    /* int32 output, zero samples */
    vg_output m0 = vg_multinomial(g, cst(g, VG_DOUBLE, d, 2, lg), 0, 0, VG_INT32, NULL);
    vg_shape s0 = vg_output_shape(m0);
    CHECK(s0.ndims == 2 && s0.dims[1] == 0);
    t = run(g, m0);
    if (t) CHECK_EQ_INT(vg_tensor_num_elements(t), 0);
    vg_tensor_free(t);
    vg_status st;
    CHECK(vg_multinomial(g, cst(g, VG_FLOAT, d, 2, lg), -1, 0, VG_INT64, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "num_samples should be nonnegative, got -1");
    vg_graph_free(g);
    /* the same seeds draw the same samples in a new graph */
    int64_t first[2][5];
    for (int k = 0; k < 2; k++) {
        g = vg_graph_new();
        vg_graph_set_seed(g, 9);
        int64_t d1[2] = {1, 4};
        double l1[4] = {0, 0, 0, 0};
        t = run(g, vg_multinomial(g, cst(g, VG_FLOAT, d1, 2, l1), 5, 3, VG_INT64, NULL));
        for (int j = 0; t && j < 5; j++) first[k][j] = ((const int64_t *)vg_tensor_data(t))[j];
        vg_tensor_free(t);
        vg_graph_free(g);
    }
    CHECK(memcmp(first[0], first[1], sizeof first[0]) == 0);
}

int main(void) {
    RUN_TEST(test_multinomial);
    RUN_TEST(test_batch_matmul);
    RUN_TEST(test_band_part_and_diag);
    RUN_TEST(test_random_constructors);
    RUN_TEST(test_zeros_ones_dynamic);
    TEST_MAIN_END();
}
