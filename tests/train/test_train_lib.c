/* test_train_lib.c - learning-rate schedules and gradient clipping (vigil/train_lib.h).
 * Mirrors TF 1.15's learning_rate_decay_test.py (LRDecayTest testContinuous /
 * testStaircase / testPiecewiseConstant, LinearDecayTest, SqrtDecayTest,
 * PolynomialDecayTest with cycle, ExponentialDecayTest / InverseDecayTest natural and
 * staircase, CosineDecayTest, CosineDecayRestartsTest, LinearCosineDecayTest: the same
 * NumPy reference formulas written in C) and clip_ops_test.py (testClipByNorm*,
 * testClipByGlobalNorm*, the zero-norm gradient). */
#include "gradcheck.h"
#include "op_test_util.h"
#include "status_fixture.h"

static const double PI = 3.14159265358979323846;

/* Runs lr at global step value `step` fed into the int64 placeholder gs. */
static double lr_at(vg_graph *g, vg_output gs, vg_output lr, int64_t step) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v = vg_tensor_new_scalar_i64(step, &st), *out = NULL;
    double r = NAN;
    if (vg_session_run(s, NULL, &gs, &v, 1, &lr, &out, 1, NULL, 0, NULL, &st) == VG_OK) {
        CHECK_EQ_INT(vg_tensor_dtype(out), VG_FLOAT);
        r = vg_tensor_scalar(out);
        vg_tensor_free(out);
    } else {
        fprintf(stderr, "run: %s\n", st.msg);
        vg_test_failures++;
    }
    vg_tensor_free(v);
    vg_session_free(s);
    return r;
}

static vg_output step_ph(vg_graph *g) { return vg_placeholder(g, VG_INT64, NULL, 0, "global_step"); }

static void test_exponential_decay(void) {
    vg_graph *g = vg_graph_new();
    vg_output gs = step_ph(g);
    vg_output lr = vg_exponential_decay(g, 0.05, gs, 10, 0.96, false, NULL);
    CHECK(lr.op && strcmp(vg_op_name(lr.op), "ExponentialDecay") == 0);
    CHECK(vg_graph_op_by_name(g, "ExponentialDecay/Pow") != NULL);
    CHECK_NEAR(lr_at(g, gs, lr, 5), 0.05 * pow(0.96, 5.0 / 10.0), 1e-6);
    vg_output st = vg_exponential_decay(g, 0.1, gs, 3, 0.96, true, NULL);
    CHECK(st.op && strcmp(vg_op_name(st.op), "ExponentialDecay_1") == 0);
    CHECK_NEAR(lr_at(g, gs, st, 1), 0.1, 1e-6);
    CHECK_NEAR(lr_at(g, gs, st, 2), 0.1, 1e-6);
    CHECK_NEAR(lr_at(g, gs, st, 100), 0.1 * pow(0.96, 100 / 3), 1e-6);
    /* natural_exp_decay and inverse_time_decay, continuous and staircase, steps 0..k */
    vg_output ne = vg_natural_exp_decay(g, 0.1, gs, 10, 0.96, false, NULL);
    vg_output nes = vg_natural_exp_decay(g, 0.1, gs, 10, 0.96, true, NULL);
    vg_output it = vg_inverse_time_decay(g, 0.1, gs, 10, 0.96, false, NULL);
    vg_output its = vg_inverse_time_decay(g, 0.1, gs, 10, 0.96, true, NULL);
    CHECK(it.op && strcmp(vg_op_name(it.op), "InverseTimeDecay") == 0);
    for (int i = 0; i <= 25; i += 5) {
        CHECK_NEAR(lr_at(g, gs, ne, i), 0.1 * exp(-(double)i / 10 * 0.96), 1e-6);
        CHECK_NEAR(lr_at(g, gs, nes, i), 0.1 * exp(-(double)(i / 10) * 0.96), 1e-6);
        CHECK_NEAR(lr_at(g, gs, it, i), 0.1 / (1 + (double)i / 10 * 0.96), 1e-6);
        CHECK_NEAR(lr_at(g, gs, its, i), 0.1 / (1 + 0.96 * (i / 10)), 1e-6);
    }
    vg_graph_free(g);
    /* no global step: INVALID_ARGUMENT as TF's ValueError */
    g = vg_graph_new();
    CHECK(vg_exponential_decay(g, 0.1, vg_out(NULL, 0), 3, 0.9, false, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "global_step is required for exponential_decay.");
    vg_graph_free(g);
}

static void test_piecewise_constant(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_INT64, NULL, 0, "x");
    double b[3] = {100, 110, 120}, v[4] = {1.0, 0.1, 0.01, 0.001};
    vg_output pc = vg_piecewise_constant(g, x, b, v, 4, NULL);
    CHECK(pc.op && strcmp(vg_op_name(pc.op), "PiecewiseConstant") == 0);
    int64_t xs[7] = {-999, 100, 105, 110, 120, 121, 999};
    double want[7] = {1.0, 1.0, 0.1, 0.1, 0.01, 0.001, 0.001};
    for (int i = 0; i < 7; i++) CHECK_NEAR(lr_at(g, x, pc, xs[i]), want[i], 1e-7);
    /* one boundary */
    vg_output pc1 = vg_piecewise_constant(g, x, b, v, 2, NULL);
    CHECK_NEAR(lr_at(g, x, pc1, 100), 1.0, 1e-7);
    CHECK_NEAR(lr_at(g, x, pc1, 101), 0.1, 1e-7);
    CHECK(vg_piecewise_constant(g, x, b, v, 1, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "The length of boundaries should be 1 less than the length of values");
    vg_graph_free(g);
}

static void test_polynomial_decay(void) {
    vg_graph *g = vg_graph_new();
    vg_output gs = step_ph(g);
    double lr = 0.05, end = 0.001;
    vg_output half = vg_polynomial_decay(g, lr, gs, 10, 0.0, 1.0, false, NULL);
    CHECK(half.op && strcmp(vg_op_name(half.op), "PolynomialDecay") == 0);
    CHECK_NEAR(lr_at(g, gs, half, 5), lr * 0.5, 1e-6);
    vg_output we = vg_polynomial_decay(g, lr, gs, 10, end, 1.0, false, NULL);
    CHECK_NEAR(lr_at(g, gs, we, 5), (lr - end) * 0.5 + end, 1e-6);
    CHECK_NEAR(lr_at(g, gs, we, 10), end, 1e-6);
    CHECK_NEAR(lr_at(g, gs, we, 15), end, 1e-6);
    vg_output cyc = vg_polynomial_decay(g, lr, gs, 10, end, 1.0, true, NULL);
    CHECK_NEAR(lr_at(g, gs, cyc, 15), (lr - end) * 0.25 + end, 1e-6);
    CHECK_NEAR(lr_at(g, gs, cyc, 0), lr, 1e-6); /* multiplier 1 at step 0 */
    vg_output sq = vg_polynomial_decay(g, lr, gs, 10, end, 0.5, false, NULL);
    CHECK_NEAR(lr_at(g, gs, sq, 5), (lr - end) * pow(0.5, 0.5) + end, 1e-6);
    vg_output sqc = vg_polynomial_decay(g, lr, gs, 10, end, 0.5, true, NULL);
    CHECK_NEAR(lr_at(g, gs, sqc, 15), (lr - end) * pow(0.25, 0.5) + end, 1e-6);
    vg_graph_free(g);
}

static double np_cosine(double step, double ds, double alpha) {
    step = step < ds ? step : ds;
    double d = 0.5 * (1 + cos(PI * step / ds));
    return (1 - alpha) * d + alpha;
}

static double np_restarts(double step, double ds, double t_mul, double m_mul, double alpha) {
    double fac = 1.0;
    while (step >= ds) {
        step -= ds;
        ds *= t_mul;
        fac *= m_mul;
    }
    double d = fac * 0.5 * (1.0 + cos(PI * step / ds));
    return (1.0 - alpha) * d + alpha;
}

static double np_linear_cosine(double step, double ds, double alpha, double beta, double num_periods) {
    step = step < ds ? step : ds;
    double linear = (ds - step) / ds, fraction = 2.0 * num_periods * step / ds;
    double c = 0.5 * (1.0 + cos(PI * fraction));
    return (alpha + linear) * c + beta;
}

static void test_cosine_schedules(void) {
    vg_graph *g = vg_graph_new();
    vg_output gs = step_ph(g);
    double lr = 0.05;
    vg_output c0 = vg_cosine_decay(g, lr, gs, 1000, 0.0, NULL), c1 = vg_cosine_decay(g, lr, gs, 1000, 0.1, NULL);
    vg_output r0 = vg_cosine_decay_restarts(g, lr, gs, 1000, 2.0, 1.0, 0.0, NULL);
    vg_output r1 = vg_cosine_decay_restarts(g, lr, gs, 1000, 1.0, 1.0, 0.0, NULL);
    vg_output r2 = vg_cosine_decay_restarts(g, lr, gs, 1000, 2.0, 0.1, 0.1, NULL);
    vg_output l0 = vg_linear_cosine_decay(g, lr, gs, 1000, 0.5, 0.0, 0.001, NULL);
    vg_output l1 = vg_linear_cosine_decay(g, lr, gs, 1000, 2.0, 0.1, 0.001, NULL);
    CHECK(r0.op && strcmp(vg_op_name(r0.op), "SGDRDecay") == 0);
    for (int step = 0; step < 5000; step += 250) {
        CHECK_NEAR(lr_at(g, gs, c0, step), lr * np_cosine(step, 1000, 0.0), 1e-5);
        CHECK_NEAR(lr_at(g, gs, c1, step), lr * np_cosine(step, 1000, 0.1), 1e-5);
        CHECK_NEAR(lr_at(g, gs, r0, step), lr * np_restarts(step, 1000, 2.0, 1.0, 0.0), 1e-4);
        CHECK_NEAR(lr_at(g, gs, r1, step), lr * np_restarts(step, 1000, 1.0, 1.0, 0.0), 1e-4);
        CHECK_NEAR(lr_at(g, gs, r2, step), lr * np_restarts(step, 1000, 2.0, 0.1, 0.1), 1e-4);
        CHECK_NEAR(lr_at(g, gs, l0, step), lr * np_linear_cosine(step, 1000, 0.0, 0.001, 0.5), 1e-5);
        CHECK_NEAR(lr_at(g, gs, l1, step), lr * np_linear_cosine(step, 1000, 0.1, 0.001, 2.0), 1e-5);
    }
    vg_graph_free(g);
}

/* NoisyLinearCosineDecayTest: at decay_steps the cosine term is 0 (lr * beta exactly);
 * at step 0 the noise has stddev 1 around lr * (1 + beta). */
static void test_noisy_linear_cosine(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 42);
    vg_output gs = step_ph(g);
    double lr = 0.05;
    vg_output nl = vg_noisy_linear_cosine_decay(g, lr, gs, 1000, 1.0, 0.55, 0.5, 0.0, 0.001, 0, NULL);
    CHECK(nl.op && strcmp(vg_op_name(nl.op), "NoisyLinearCosineDecay") == 0);
    CHECK_NEAR(lr_at(g, gs, nl, 1000), lr * 0.001, 1e-6);
    CHECK_NEAR(lr_at(g, gs, nl, 5000), lr * 0.001, 1e-6);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v = vg_tensor_new_scalar_i64(0, &st);
    double sum = 0, sq = 0;
    int n = 2000;
    for (int i = 0; i < n; i++) {
        vg_tensor *out = NULL;
        if (vg_session_run(s, NULL, &gs, &v, 1, &nl, &out, 1, NULL, 0, NULL, &st) != VG_OK) { vg_test_failures++; break; }
        double x = vg_tensor_scalar(out) / lr - 1.001;
        sum += x, sq += x * x;
        vg_tensor_free(out);
    }
    CHECK_NEAR(sum / n, 0.0, 0.1);
    CHECK_NEAR(sqrt(sq / n), 1.0, 0.1);
    vg_tensor_free(v);
    free_session_graph(s, g);
}

static void test_clip_by_norm(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    double x[6] = {-3.0, 0.0, 0.0, 4.0, 0.0, 0.0};
    vg_output c = cst(g, VG_FLOAT, d, 2, x);
    double e4[6] = {-2.4, 0.0, 0.0, 3.2, 0.0, 0.0};
    vg_output y = vg_clip_by_norm(g, c, vg_const_f32(g, 4.0f, NULL), NULL, -1, NULL);
    CHECK(y.op && strcmp(vg_op_name(y.op), "clip_by_norm") == 0);
    expect_tol(run(g, y), VG_FLOAT, d, 2, e4, 1e-6);
    expect_tol(run(g, vg_clip_by_norm(g, c, vg_const_f32(g, 6.0f, NULL), NULL, -1, NULL)), VG_FLOAT, d, 2, x, 1e-6);
    int32_t ax0 = 0, ax1 = 1;
    expect_tol(run(g, vg_clip_by_norm(g, c, vg_const_f32(g, 4.0f, NULL), &ax0, 1, NULL)), VG_FLOAT, d, 2, e4, 1e-6);
    expect_tol(run(g, vg_clip_by_norm(g, c, vg_const_f32(g, 4.0f, NULL), &ax1, 1, NULL)), VG_FLOAT, d, 2, x, 1e-6);
    double z[6] = {0};
    expect_tol(run(g, vg_clip_by_norm(g, cst(g, VG_FLOAT, d, 2, z), vg_const_f32(g, 6.0f, NULL), NULL, -1, NULL)),
              VG_FLOAT, d, 2, z, 0);
    vg_graph_free(g);
    /* testClipByNormGradientZeros: d clip_by_norm(0, 1) / dx = 1, finite */
    g = vg_graph_new();
    int64_t d3[1] = {3};
    vg_output px = vg_placeholder(g, VG_FLOAT, d3, 1, "x"), dx;
    vg_output y0 = vg_clip_by_norm(g, px, vg_const_f32(g, 1.0f, NULL), NULL, -1, NULL);
    vg_status st;
    CHECK_OK(vg_gradients(g, &y0, 1, &px, 1, NULL, &dx, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    double zv[3] = {0, 0, 0}, ones[3] = {1, 1, 1};
    vg_tensor *tz = mk(VG_FLOAT, d3, 1, zv), *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, &px, &tz, 1, &dx, &out, 1, NULL, 0, NULL, &st), &st);
    expect_tol(out, VG_FLOAT, d3, 1, ones, 0);
    vg_tensor_free(tz);
    free_session_graph(s, g);
    /* finite differences, clipped and per-axis */
    g = vg_graph_new();
    double xv[6] = {-3.0, 1.0, 0.5, 4.0, -2.0, 0.25};
    vg_tensor *tx;
    px = ph(g, VG_DOUBLE, d, 2, xv, &tx);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_clip_by_norm(g, px, vg_const_f64(g, 4.0, NULL), NULL, -1, NULL), 1e-6,
                              1e-7), 0);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_clip_by_norm(g, px, vg_const_f64(g, 2.0, NULL), &ax1, 1, NULL), 1e-6,
                              1e-7), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

static void test_clip_by_global_norm(void) {
    vg_graph *g = vg_graph_new();
    int64_t d0[2] = {2, 3}, d1[1] = {2};
    double x0[6] = {-2.0, 0.0, 0.0, 4.0, 0.0, 0.0}, x1[2] = {1.0, -2.0};
    vg_output ts[3] = {cst(g, VG_FLOAT, d0, 2, x0), vg_out(NULL, 0), cst(g, VG_FLOAT, d1, 1, x1)};
    vg_output gn = vg_global_norm(g, ts, 3, NULL);
    CHECK(gn.op && strcmp(vg_op_name(gn.op), "global_norm/global_norm") == 0);
    double five[1] = {5};
    expect_tol(run(g, gn), VG_FLOAT, NULL, 0, five, 1e-6);
    vg_output out[3], norm;
    vg_status st;
    CHECK_OK(vg_clip_by_global_norm(g, ts, 3, vg_const_f32(g, 4.0f, NULL), vg_out(NULL, 0), out, &norm, NULL), &st);
    CHECK(out[1].op == NULL);
    CHECK(out[0].op && strcmp(vg_op_name(out[0].op), "clip_by_global_norm/clip_by_global_norm/_0") == 0);
    double e0[6] = {-1.6, 0.0, 0.0, 3.2, 0.0, 0.0}, e1[2] = {0.8, -1.6};
    expect_tol(run(g, out[0]), VG_FLOAT, d0, 2, e0, 1e-6);
    expect_tol(run(g, out[2]), VG_FLOAT, d1, 1, e1, 1e-6);
    expect_tol(run(g, norm), VG_FLOAT, NULL, 0, five, 1e-6);
    /* not clipped */
    CHECK_OK(vg_clip_by_global_norm(g, ts, 3, vg_const_f32(g, 6.0f, NULL), vg_out(NULL, 0), out, NULL, NULL), &st);
    expect_tol(run(g, out[0]), VG_FLOAT, d0, 2, x0, 1e-6);
    /* an infinite norm makes every output NaN (testClipByGlobalNormInf) */
    double xi[2] = {INFINITY, 1.0}, nan2[2] = {NAN, NAN};
    vg_output ti[2] = {cst(g, VG_FLOAT, d1, 1, xi), cst(g, VG_FLOAT, d1, 1, x1)};
    CHECK_OK(vg_clip_by_global_norm(g, ti, 2, vg_const_f32(g, 6.0f, NULL), vg_out(NULL, 0), out, &norm, NULL), &st);
    expect_tol(run(g, out[1]), VG_FLOAT, d1, 1, nan2, 0);
    /* nothing to clip */
    vg_output none[1] = {vg_out(NULL, 0)};
    CHECK_CODE(vg_clip_by_global_norm(g, none, 1, vg_const_f32(g, 1.0f, NULL), vg_out(NULL, 0), out, NULL, NULL),
               VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* gradients of the clipped tensors w.r.t. both inputs */
    g = vg_graph_new();
    double a[6] = {-2.0, 1.0, 0.5, 4.0, -1.0, 0.3}, b[2] = {1.0, -2.5};
    vg_tensor *ta, *tb;
    vg_output pa = ph(g, VG_DOUBLE, d0, 2, a, &ta), pb = ph(g, VG_DOUBLE, d1, 1, b, &tb);
    vg_output ins[2] = {pa, pb};
    vg_tensor *vals[2] = {ta, tb};
    CHECK_OK(vg_clip_by_global_norm(g, ins, 2, vg_const_f64(g, 3.0, NULL), vg_out(NULL, 0), out, NULL, NULL), &st);
    vg_output flat[2] = {vg_reshape_c(g, out[0], (int64_t[]){-1}, 1, NULL), out[1]};
    CHECK_EQ_INT(vg_gradcheck(g, ins, vals, 2, vg_concat_c(g, flat, 2, 0, NULL), 1e-6, 1e-7), 0);
    vg_tensor_free(ta), vg_tensor_free(tb);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_exponential_decay);
    RUN_TEST(test_piecewise_constant);
    RUN_TEST(test_polynomial_decay);
    RUN_TEST(test_cosine_schedules);
    RUN_TEST(test_noisy_linear_cosine);
    RUN_TEST(test_clip_by_norm);
    RUN_TEST(test_clip_by_global_norm);
    TEST_MAIN_END();
}
