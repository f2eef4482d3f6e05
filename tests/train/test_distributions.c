/* test_distributions.c - tf.distributions (src/train/distributions.c) translated from TF
 * 1.15's tensorflow/python/kernel_tests/distributions/{normal,bernoulli,categorical,
 * uniform,beta,dirichlet}_test.py and contrib's mvn_diag_test.py (the TF test named in
 * each block). TF compares with scipy.stats; here the expected values are the closed
 * forms computed in the test (lgamma from libm, digamma as lgamma's central difference),
 * sample moments within 5 standard errors, and the gradients of reparameterized samples
 * by finite differences: through fresh sessions (the same seeds replay the same draws)
 * for Normal / Uniform / MVNDiag, and through the inverse regularized incomplete gamma
 * (bisection on its series) for Beta, as random_grad_test.py's
 * testCompareToExplicitDerivative. */
#include "op_test_util.h"
#include "status_fixture.h"

#define NONE vg_out(NULL, 0)

static double dgm(double x) { return (lgamma(x + 1e-5) - lgamma(x - 1e-5)) / 2e-5; }

static vg_output c1d(vg_graph *g, vg_dtype dt, int n, const double *v) {
    int64_t d[1] = {n};
    return cst(g, dt, d, 1, v);
}

static void free_n(vg_tensor **t, int n) {
    for (int i = 0; i < n; i++) vg_tensor_free(t[i]);
}

/* Mean and variance of column j of an n x m tensor. */
static void moments(const vg_tensor *t, int64_t n, int64_t m, int64_t j, double *mean, double *var) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) s += get(t, i * m + j);
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) s2 += (get(t, i * m + j) - *mean) * (get(t, i * m + j) - *mean);
    *var = s2 / (double)(n - 1);
}

/* ---- Normal (normal_test.py) ------------------------------------------------------- */

static void test_normal(void) {
    vg_graph *g = vg_graph_new();
    /* testNormalLogPDF: mu 3, sigma sqrt(10), x [-2.5, 2.5, 4, 0, -1, 2] */
    double mu[6] = {3, 3, 3, 3, 3, 3}, sg[6], x[6] = {-2.5, 2.5, 4.0, 0.0, -1.0, 2.0}, lp[6], pd[6], cd[6];
    for (int i = 0; i < 6; i++) sg[i] = sqrt(10.0);
    for (int i = 0; i < 6; i++) {
        double z = (x[i] - mu[i]) / sg[i];
        lp[i] = -0.5 * z * z - log(sg[i] * sqrt(2 * M_PI));
        pd[i] = exp(lp[i]);
        cd[i] = 0.5 * erfc(-z / sqrt(2.0)); /* testNormalCDF: stats.norm.cdf */
    }
    vg_distribution *n = vg_normal(g, c1d(g, VG_DOUBLE, 6, mu), c1d(g, VG_DOUBLE, 6, sg), false, NULL);
    CHECK(n != NULL);
    CHECK(strcmp(vg_distribution_name(n), "Normal") == 0);
    CHECK(vg_distribution_is_reparameterized(n));
    CHECK(strcmp(vg_op_name(vg_distribution_param(n, "loc").op), "Normal/loc") == 0);
    vg_shape bs = vg_distribution_batch_shape(n), es = vg_distribution_event_shape(n);
    CHECK(bs.ndims == 1 && bs.dims[0] == 6 && es.ndims == 0);
    vg_output xo = c1d(g, VG_DOUBLE, 6, x);
    vg_output lpo = vg_distribution_log_prob(n, xo, NULL);
    CHECK(strncmp(vg_op_name(lpo.op), "Normal/log_prob/", 16) == 0);
    int64_t d6[1] = {6};
    expect_tol(run(g, lpo), VG_DOUBLE, d6, 1, lp, 1e-12);
    expect_tol(run(g, vg_distribution_prob(n, xo, NULL)), VG_DOUBLE, d6, 1, pd, 1e-12);
    expect_tol(run(g, vg_distribution_cdf(n, xo, NULL)), VG_DOUBLE, d6, 1, cd, 1e-12);
    /* testNormalLogCDF / testNormalSurvivalFunction / testNormalLogSurvivalFunction */
    double lcd[6], sf[6], lsf[6];
    for (int i = 0; i < 6; i++) lcd[i] = log(cd[i]), sf[i] = 1 - cd[i], lsf[i] = log1p(-cd[i]);
    expect_tol(run(g, vg_distribution_log_cdf(n, xo, NULL)), VG_DOUBLE, d6, 1, lcd, 1e-12);
    expect_tol(run(g, vg_distribution_survival_function(n, xo, NULL)), VG_DOUBLE, d6, 1, sf, 1e-12);
    expect_tol(run(g, vg_distribution_log_survival_function(n, xo, NULL)), VG_DOUBLE, d6, 1, lsf, 1e-12);
    vg_distribution_free(n);

    /* testNormalEntropyWithScalarInputs: 0.5 log(2 pi e sigma^2); testNormalEntropy with
     * batch: mu [1, 1, 1], sigma [[1], [2], [3]] -> [3, 3] */
    n = vg_normal(g, vg_const_f32(g, 2.34f, NULL), vg_const_f32(g, 4.56f, NULL), false, NULL);
    CHECK(strcmp(vg_distribution_name(n), "Normal_1") == 0);
    vg_tensor *t = run(g, vg_distribution_entropy(n, NULL));
    if (t) CHECK_NEAR(get(t, 0), 0.5 * log(2 * M_PI * M_E * 4.56 * 4.56), 1e-6);
    vg_tensor_free(t);
    vg_distribution_free(n);
    int64_t d31[2] = {3, 1}, d33[2] = {3, 3};
    n = vg_normal(g, c1d(g, VG_DOUBLE, 3, (double[]){1, 1, 1}), cst(g, VG_DOUBLE, d31, 2, (double[]){1, 2, 3}), false, NULL);
    double ent[9];
    for (int i = 0; i < 9; i++) ent[i] = 0.5 * log(2 * M_PI * M_E) + log(1.0 + i / 3);
    expect_tol(run(g, vg_distribution_entropy(n, NULL)), VG_DOUBLE, d33, 2, ent, 1e-12);
    vg_distribution_free(n);

    /* testNormalMeanAndMode / testNormalVariance / testNormalStandardDeviation */
    n = vg_normal(g, c1d(g, VG_DOUBLE, 1, (double[]){7}), c1d(g, VG_DOUBLE, 3, (double[]){11, 12, 13}), false, NULL);
    int64_t d3[1] = {3};
    expect_tol(run(g, vg_distribution_mean(n, NULL)), VG_DOUBLE, d3, 1, (double[]){7, 7, 7}, 0);
    expect_tol(run(g, vg_distribution_mode(n, NULL)), VG_DOUBLE, d3, 1, (double[]){7, 7, 7}, 0);
    expect_tol(run(g, vg_distribution_variance(n, NULL)), VG_DOUBLE, d3, 1, (double[]){121, 144, 169}, 1e-12);
    expect_tol(run(g, vg_distribution_stddev(n, NULL)), VG_DOUBLE, d3, 1, (double[]){11, 12, 13}, 1e-12);
    vg_distribution_free(n);
    vg_graph_free(g);
}

static void test_normal_sample_and_grad(void) {
    /* testNormalSample: mu 3, sigma sqrt(3), n 100000 -> mean mu, std sigma */
    vg_graph *g = vg_graph_new();
    vg_distribution *n = vg_normal(g, vg_const_f64(g, 3, NULL), vg_const_f64(g, sqrt(3.0), NULL), false, NULL);
    vg_output s = vg_distribution_sample(n, 100000, 137, NULL);
    CHECK(strncmp(vg_op_name(s.op), "Normal/sample/", 14) == 0);
    vg_tensor *t = run(g, s);
    if (t) {
        CHECK_EQ_INT(vg_tensor_num_elements(t), 100000);
        double m, v;
        moments(t, 100000, 1, 0, &m, &v);
        CHECK(fabs(m - 3) < 5 * sqrt(3.0 / 1e5));
        CHECK(fabs(v - 3) < 5 * sqrt(2 * 9.0 / 1e5));
    }
    vg_tensor_free(t);
    vg_distribution_free(n);
    vg_graph_free(g);

    /* testNormalFullyReparameterized, by finite differences: L = sum(sample^2) of a
     * [5] x [2] sample; the sample's draws are replayed by each fresh session */
    double locv[2] = {0.5, -1.0}, scv[2] = {1.5, 0.7};
    g = vg_graph_new();
    vg_output loc = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2}, 1, "loc");
    vg_output sc = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2}, 1, "scale");
    n = vg_normal(g, loc, sc, false, NULL);
    s = vg_distribution_sample(n, 5, 11, NULL);
    vg_output L = vg_reduce_sum(g, vg_square(g, s, NULL), NULL, -1, false, NULL);
    vg_output dx[2];
    vg_status st;
    vg_output wrt[2] = {loc, sc};
    CHECK_OK(vg_gradients(g, &L, 1, wrt, 2, NULL, dx, &st), &st);
    vg_tensor *tl = mk(VG_DOUBLE, (int64_t[]){2}, 1, locv), *ts = mk(VG_DOUBLE, (int64_t[]){2}, 1, scv);
    vg_tensor *fv[2] = {tl, ts};
    vg_tensor *an[2] = {NULL, NULL};
    vg_session *ss = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(ss, NULL, wrt, fv, 2, dx, an, 2, NULL, 0, NULL, &st), &st);
    vg_session_free(ss);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 2; i++) {
            double x0 = get(fv[k], i), lv[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                set(fv[k], i, x0 + (sgn ? -1e-6 : 1e-6));
                vg_tensor *o = run_feeds(g, L, wrt, fv, 2, &st);
                lv[sgn] = o ? vg_tensor_scalar(o) : NAN;
                vg_tensor_free(o);
            }
            set(fv[k], i, x0);
            if (an[k]) CHECK_NEAR(get(an[k], i), (lv[0] - lv[1]) / 2e-6, 1e-5);
        }
    free_n(an, 2);
    vg_tensor_free(tl), vg_tensor_free(ts);
    vg_distribution_free(n);
    vg_graph_free(g);

    /* a batch shape known only at run time: [n] + shape(loc + scale) */
    g = vg_graph_new();
    vg_output lu = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "loc");
    n = vg_normal(g, lu, vg_const_f32(g, 1, NULL), false, NULL);
    CHECK(vg_distribution_batch_shape(n).ndims == 1 && vg_distribution_batch_shape(n).dims[0] == -1);
    vg_output s4 = vg_distribution_sample(n, 4, 2, NULL);
    vg_output s22 = vg_distribution_sample_shape(n, (const int64_t[]){2, 2}, 2, 2, NULL);
    vg_tensor *tlu = mk(VG_FLOAT, (int64_t[]){3}, 1, (double[]){0, 10, 20});
    t = run_feeds(g, s4, &lu, &tlu, 1, &st);
    CHECK(t && vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 0) == 4 && vg_tensor_dim(t, 1) == 3);
    vg_tensor_free(t);
    t = run_feeds(g, s22, &lu, &tlu, 1, &st);
    CHECK(t && vg_tensor_ndims(t) == 3 && vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 2 && vg_tensor_dim(t, 2) == 3);
    if (t && vg_tensor_num_elements(t) == 12) CHECK(fabs(get(t, 5) - 20) < 8); /* column 2 around loc 20 */
    vg_tensor_free(t);
    vg_tensor_free(tlu);
    vg_distribution_free(n);
    vg_graph_free(g);

    /* validate_args: a non-positive scale fails the run (testNormalShape / assert_positive) */
    g = vg_graph_new();
    n = vg_normal(g, vg_const_f32(g, 0, NULL), vg_const_f32(g, -1, NULL), true, NULL);
    expect_run_error(g, vg_distribution_mean(n, NULL), NULL, NULL, 0, VG_INVALID_ARGUMENT, "assertion failed");
    vg_distribution_free(n);
    /* differing dtypes are refused at build time */
    n = vg_normal(g, vg_const_f32(g, 0, NULL), vg_const_f64(g, 1, NULL), false, NULL);
    CHECK(n == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* ---- Bernoulli (bernoulli_test.py) --------------------------------------------------- */

static void test_bernoulli(void) {
    vg_graph *g = vg_graph_new();
    /* testPmfWithP / _testPmf: pmf(1) = p, pmf(0) = 1 - p, events broadcast against p */
    int64_t d22[2] = {2, 2};
    double p[4] = {0.2, 0.4, 0.3, 0.6};
    vg_distribution *b = vg_bernoulli(g, NONE, cst(g, VG_FLOAT, d22, 2, p), VG_DTYPE_INVALID, true, NULL);
    CHECK(b != NULL && vg_distribution_dtype(b) == VG_INT32 && !vg_distribution_is_reparameterized(b));
    double ev[4] = {1, 0, 0, 1}, pm[4] = {0.2, 0.6, 0.7, 0.6}, lpm[4];
    for (int i = 0; i < 4; i++) lpm[i] = log(pm[i]);
    vg_output e = cst(g, VG_INT32, d22, 2, ev);
    expect_tol(run(g, vg_distribution_prob(b, e, NULL)), VG_FLOAT, d22, 2, pm, 1e-6);
    expect_tol(run(g, vg_distribution_log_prob(b, e, NULL)), VG_FLOAT, d22, 2, lpm, 1e-5);
    /* event [2] broadcast against [2, 2] (testPmfCorrectBroadcastDynamicShape) */
    double pm2[4] = {0.2, 0.6, 0.3, 0.4};
    expect_tol(run(g, vg_distribution_prob(b, c1d(g, VG_INT32, 2, (double[]){1, 0}), NULL)), VG_FLOAT, d22, 2, pm2, 1e-6);
    /* testEntropyWithBatch, testMeanAndVariance, testMode (mode 0 at p <= 0.5) */
    double en[4], mv[4], md[4];
    for (int i = 0; i < 4; i++) {
        en[i] = -(p[i] * log(p[i]) + (1 - p[i]) * log(1 - p[i]));
        mv[i] = p[i] * (1 - p[i]);
        md[i] = p[i] > 0.5;
    }
    expect_tol(run(g, vg_distribution_entropy(b, NULL)), VG_FLOAT, d22, 2, en, 1e-5);
    expect_tol(run(g, vg_distribution_mean(b, NULL)), VG_FLOAT, d22, 2, p, 1e-7);
    expect_tol(run(g, vg_distribution_variance(b, NULL)), VG_FLOAT, d22, 2, mv, 1e-6);
    expect_tol(run(g, vg_distribution_mode(b, NULL)), VG_INT32, d22, 2, md, 0);
    /* logits: probs = sigmoid(logits) (testLogits) */
    vg_distribution *bl = vg_bernoulli(g, c1d(g, VG_FLOAT, 2, (double[]){-2, 3}), NONE, VG_DTYPE_INVALID, false, NULL);
    int64_t d2[1] = {2};
    expect_tol(run(g, vg_distribution_param(bl, "probs")), VG_FLOAT, d2, 1,
               (double[]){1 / (1 + exp(2.0)), 1 / (1 + exp(-3.0))}, 1e-6);
    /* testSampleN: p [0.2, 0.6], n 100000 -> frequencies p */
    vg_distribution *bs = vg_bernoulli(g, NONE, c1d(g, VG_FLOAT, 2, (double[]){0.2, 0.6}), VG_DTYPE_INVALID, false, NULL);
    vg_tensor *t = run(g, vg_distribution_sample(bs, 100000, 3, NULL));
    if (t) {
        CHECK(vg_tensor_dtype(t) == VG_INT32 && vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 1) == 2);
        for (int j = 0; j < 2; j++) {
            double m, v, pj = j ? 0.6 : 0.2;
            moments(t, 100000, 2, j, &m, &v);
            CHECK(fabs(m - pj) < 5 * sqrt(pj * (1 - pj) / 1e5));
        }
    }
    vg_tensor_free(t);
    /* testBernoulliBernoulliKL */
    double pa[3] = {0.5, 0.6, 0.4}, pb[3] = {0.3, 0.8, 0.1}, kl[3];
    for (int i = 0; i < 3; i++) kl[i] = pa[i] * log(pa[i] / pb[i]) + (1 - pa[i]) * log((1 - pa[i]) / (1 - pb[i]));
    vg_distribution *ka = vg_bernoulli(g, NONE, c1d(g, VG_DOUBLE, 3, pa), VG_DTYPE_INVALID, false, NULL);
    vg_distribution *kb = vg_bernoulli(g, NONE, c1d(g, VG_DOUBLE, 3, pb), VG_DTYPE_INVALID, false, NULL);
    vg_output klo = vg_kl_divergence(ka, kb, NULL);
    CHECK(strncmp(vg_op_name(klo.op), "KullbackLeibler/kl_bernoulli_bernoulli/", 39) == 0);
    int64_t d3[1] = {3};
    expect_tol(run(g, klo), VG_DOUBLE, d3, 1, kl, 1e-12);
    vg_distribution_free(b), vg_distribution_free(bl), vg_distribution_free(bs);
    vg_distribution_free(ka), vg_distribution_free(kb);
    vg_graph_free(g);

    /* both or neither of logits / probs; validate_args on probs > 1 */
    g = vg_graph_new();
    CHECK(vg_bernoulli(g, NONE, NONE, VG_DTYPE_INVALID, false, NULL) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Must pass probs or logits, but not both.");
    vg_graph_free(g);
    g = vg_graph_new();
    b = vg_bernoulli(g, NONE, c1d(g, VG_FLOAT, 2, (double[]){0.5, 1.5}), VG_DTYPE_INVALID, true, NULL);
    expect_run_error(g, vg_distribution_mean(b, NULL), NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "probs has components greater than 1.");
    vg_distribution_free(b);
    vg_graph_free(g);
}

/* ---- Categorical (categorical_test.py) -------------------------------------------- */

static void test_categorical(void) {
    vg_graph *g = vg_graph_new();
    /* testPMFWithBatch: Categorical(log(histograms) - 50.), prob([0, 1]) = [0.2, 0.4] */
    int64_t d22[2] = {2, 2}, d2[1] = {2};
    double h[4] = {0.2, 0.8, 0.6, 0.4}, lh[4];
    for (int i = 0; i < 4; i++) lh[i] = log(h[i]) - 50;
    vg_distribution *c = vg_categorical(g, cst(g, VG_FLOAT, d22, 2, lh), NONE, VG_DTYPE_INVALID, false, NULL);
    CHECK(c != NULL);
    vg_shape bs = vg_distribution_batch_shape(c);
    CHECK(bs.ndims == 1 && bs.dims[0] == 2);
    expect_tol(run(g, vg_distribution_prob(c, c1d(g, VG_INT32, 2, (double[]){0, 1}), NULL)), VG_FLOAT, d2, 1,
               (double[]){0.2, 0.4}, 1e-5);
    expect_tol(run(g, vg_distribution_log_prob(c, c1d(g, VG_INT32, 2, (double[]){1, 0}), NULL)), VG_FLOAT, d2, 1,
               (double[]){log(0.8), log(0.6)}, 1e-5);
    /* testEntropyWithBatch, testMode ([1, 0]); mean is not implemented (as TF 1.15) */
    expect_tol(run(g, vg_distribution_entropy(c, NULL)), VG_FLOAT, d2, 1,
               (double[]){-(0.2 * log(0.2) + 0.8 * log(0.8)), -(0.6 * log(0.6) + 0.4 * log(0.4))}, 1e-5);
    expect_tol(run(g, vg_distribution_mode(c, NULL)), VG_INT32, d2, 1, (double[]){1, 0}, 0);
    /* testSample: frequencies of 20000 draws per batch member */
    vg_tensor *t = run(g, vg_distribution_sample(c, 20000, 9, NULL));
    if (t) {
        CHECK(vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 0) == 20000 && vg_tensor_dim(t, 1) == 2);
        for (int j = 0; j < 2; j++) {
            double m, v, p1 = h[j * 2 + 1];
            moments(t, 20000, 2, j, &m, &v);
            CHECK(fabs(m - p1) < 5 * sqrt(p1 * (1 - p1) / 2e4)); /* mean of the indicator of class 1 */
        }
    }
    vg_tensor_free(t);
    /* testCategoricalCategoricalKL: sum p_a (log p_a - log p_b) */
    double la[6] = {0.1, -1.0, 2.0, 0.3, 0.3, -0.5}, lb[6] = {1.0, 0.0, -1.0, 0.2, -0.7, 0.9}, kl[2];
    for (int r = 0; r < 2; r++) {
        double za = 0, zb = 0;
        for (int k = 0; k < 3; k++) za += exp(la[r * 3 + k]), zb += exp(lb[r * 3 + k]);
        kl[r] = 0;
        for (int k = 0; k < 3; k++) {
            double pa = exp(la[r * 3 + k]) / za, pb = exp(lb[r * 3 + k]) / zb;
            kl[r] += pa * (log(pa) - log(pb));
        }
    }
    int64_t d23[2] = {2, 3};
    vg_distribution *ca = vg_categorical(g, cst(g, VG_DOUBLE, d23, 2, la), NONE, VG_DTYPE_INVALID, false, NULL);
    vg_distribution *cb = vg_categorical(g, cst(g, VG_DOUBLE, d23, 2, lb), NONE, VG_DTYPE_INVALID, false, NULL);
    expect_tol(run(g, vg_kl_divergence(ca, cb, NULL)), VG_DOUBLE, d2, 1, kl, 1e-12);
    /* probs given: logits = log(probs) */
    vg_distribution *cp = vg_categorical(g, NONE, c1d(g, VG_DOUBLE, 3, (double[]){0.5, 0.25, 0.25}), VG_INT64, false, NULL);
    t = run(g, vg_distribution_log_prob(cp, vg_const_i64(g, 1, NULL), NULL));
    if (t) CHECK_NEAR(get(t, 0), log(0.25), 1e-12);
    vg_tensor_free(t);
    /* testCDFWithBatch: [[0.1, 0.2, 0.3, 0.25, 0.15], [0.0, 0.75, 0.2, 0.05, 0.0]] at [0, 3]
     * -> [0.0, 0.95]; testCDFNoBatch: [0.1, 0.2, 0.3, 0.4] at 2 -> 0.3; k outside [0, K)
     * gives 0 or 1 */
    int64_t d25[2] = {2, 5};
    vg_distribution *cc = vg_categorical(g, NONE, cst(g, VG_FLOAT, d25, 2, (double[]){0.1, 0.2, 0.3, 0.25, 0.15, 0.0, 0.75,
                                                                                        0.2, 0.05, 0.0}),
                                         VG_DTYPE_INVALID, false, NULL);
    expect_tol(run(g, vg_distribution_cdf(cc, c1d(g, VG_INT32, 2, (double[]){0, 3}), NULL)), VG_FLOAT, d2, 1,
               (double[]){0.0, 0.95}, 1e-6);
    expect_tol(run(g, vg_distribution_cdf(cc, c1d(g, VG_INT32, 2, (double[]){-1, 10}), NULL)), VG_FLOAT, d2, 1,
               (double[]){0.0, 1.0}, 1e-6);
    vg_distribution *cn = vg_categorical(g, NONE, c1d(g, VG_FLOAT, 4, (double[]){0.1, 0.2, 0.3, 0.4}), VG_DTYPE_INVALID,
                                         false, NULL);
    t = run(g, vg_distribution_cdf(cn, vg_const_i32(g, 2, NULL), NULL));
    if (t) CHECK_NEAR(get(t, 0), 0.3, 1e-6);
    vg_tensor_free(t);
    vg_distribution_free(cc), vg_distribution_free(cn);
    vg_distribution_free(ca), vg_distribution_free(cb), vg_distribution_free(cp);
    /* Normal has no covariance in TF 1.15 (checked on a scratch graph: the error is sticky) */
    vg_graph *g2 = vg_graph_new();
    vg_distribution *nn = vg_normal(g2, vg_const_f32(g2, 0, NULL), vg_const_f32(g2, 1, NULL), false, NULL);
    CHECK(vg_distribution_covariance(nn, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g2, VG_UNIMPLEMENTED, "covariance is not implemented: Normal");
    vg_distribution_free(nn);
    vg_graph_free(g2);
    /* mean: NotImplementedError("mean is not implemented: Categorical") */
    vg_output m = vg_distribution_mean(c, NULL);
    CHECK(m.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_UNIMPLEMENTED, "mean is not implemented: Categorical");
    vg_distribution_free(c);
    vg_graph_free(g);
}

/* ---- Uniform (uniform_test.py) ------------------------------------------------------- */

static void test_uniform(void) {
    vg_graph *g = vg_graph_new();
    /* testUniformPDF / testUniformCDF: a [-3]*5 + [15]*5, b [11]*5 + [20]*5 */
    double a[10], b[10], x[10] = {-4, -3, 0, 10.9, 11, 14, 15, 17, 19.99, 25}, pd[10], cd[10];
    for (int i = 0; i < 10; i++) {
        a[i] = i < 5 ? -3 : 15;
        b[i] = i < 5 ? 11 : 20;
        pd[i] = (x[i] >= a[i] && x[i] < b[i]) ? 1 / (b[i] - a[i]) : 0;
        cd[i] = x[i] < a[i] ? 0 : x[i] >= b[i] ? 1 : (x[i] - a[i]) / (b[i] - a[i]);
    }
    vg_distribution *u = vg_uniform(g, c1d(g, VG_DOUBLE, 10, a), c1d(g, VG_DOUBLE, 10, b), true, NULL);
    vg_output xo = c1d(g, VG_DOUBLE, 10, x);
    int64_t d10[1] = {10};
    expect_tol(run(g, vg_distribution_prob(u, xo, NULL)), VG_DOUBLE, d10, 1, pd, 1e-12);
    double lpd[10];
    for (int i = 0; i < 10; i++) lpd[i] = pd[i] > 0 ? log(pd[i]) : -INFINITY;
    expect_tol(run(g, vg_distribution_log_prob(u, xo, NULL)), VG_DOUBLE, d10, 1, lpd, 1e-12);
    expect_tol(run(g, vg_distribution_cdf(u, xo, NULL)), VG_DOUBLE, d10, 1, cd, 1e-12);
    /* testUniformEntropy, testUniformMean, testUniformVariance, testUniformStd */
    double en[10], mn[10], vr[10], sd[10];
    for (int i = 0; i < 10; i++) {
        en[i] = log(b[i] - a[i]);
        mn[i] = (a[i] + b[i]) / 2;
        vr[i] = (b[i] - a[i]) * (b[i] - a[i]) / 12;
        sd[i] = sqrt(vr[i]);
    }
    expect_tol(run(g, vg_distribution_entropy(u, NULL)), VG_DOUBLE, d10, 1, en, 1e-12);
    expect_tol(run(g, vg_distribution_mean(u, NULL)), VG_DOUBLE, d10, 1, mn, 1e-12);
    expect_tol(run(g, vg_distribution_variance(u, NULL)), VG_DOUBLE, d10, 1, vr, 1e-12);
    expect_tol(run(g, vg_distribution_stddev(u, NULL)), VG_DOUBLE, d10, 1, sd, 1e-12);
    /* testUniformNans: a NaN x gives NaN */
    vg_tensor *t = run(g, vg_distribution_prob(u, vg_const_f64(g, NAN, NULL), NULL));
    if (t) CHECK(isnan(get(t, 0)));
    vg_tensor_free(t);
    /* mode: not implemented for Uniform; no KL registered for (Uniform, Normal) */
    vg_distribution *nn = vg_normal(g, vg_const_f64(g, 0, NULL), vg_const_f64(g, 1, NULL), false, NULL);
    vg_distribution_free(u);
    u = vg_uniform(g, NONE, NONE, false, "U");
    CHECK(u && vg_distribution_dtype(u) == VG_FLOAT && strcmp(vg_distribution_name(u), "U") == 0);
    /* testUniformSample: low 3, high [5, 7]-like defaults: here U[0, 1), n 100000 */
    t = run(g, vg_distribution_sample(u, 100000, 8, NULL));
    if (t) {
        double m, v;
        moments(t, 100000, 1, 0, &m, &v);
        CHECK(fabs(m - 0.5) < 5 * sqrt(1 / 12.0 / 1e5));
        CHECK(fabs(v - 1 / 12.0) < 5 * sqrt(1 / 180.0 / 1e5));
    }
    vg_tensor_free(t);
    vg_output klo = vg_kl_divergence(u, nn, NULL);
    vg_status st;
    CHECK(klo.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_UNIMPLEMENTED, "No KL(distribution_a || distribution_b) registered for distribution_a type Uniform "
                               "and distribution_b type Normal");
    vg_distribution_free(u), vg_distribution_free(nn);
    vg_graph_free(g);

    /* testUniformAssertMaxGtMin: validate_args fails the run with TF's message */
    g = vg_graph_new();
    u = vg_uniform(g, c1d(g, VG_FLOAT, 3, (double[]){1, 1, 1}), c1d(g, VG_FLOAT, 3, (double[]){1, 2, 3}), true, NULL);
    expect_run_error(g, vg_distribution_entropy(u, NULL), NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "uniform not defined when low >= high.");
    expect_run_error(g, vg_distribution_param(u, "low"), NULL, NULL, 0, VG_INVALID_ARGUMENT, "x < y");
    vg_distribution_free(u);
    vg_graph_free(g);

    /* reparameterized: d sample / d high = u, d sample / d low = 1 - u, checked by finite
     * differences through fresh sessions (testUniformFullyReparameterized) */
    g = vg_graph_new();
    vg_output lo = vg_placeholder(g, VG_DOUBLE, NULL, 0, "lo"), hi = vg_placeholder(g, VG_DOUBLE, NULL, 0, "hi");
    u = vg_uniform(g, lo, hi, false, NULL);
    vg_output L = vg_reduce_sum(g, vg_square(g, vg_distribution_sample(u, 6, 5, NULL), NULL), NULL, -1, false, NULL);
    vg_output wrt[2] = {lo, hi}, dx[2];
    CHECK_OK(vg_gradients(g, &L, 1, wrt, 2, NULL, dx, &st), &st);
    vg_tensor *fv[2] = {mk(VG_DOUBLE, NULL, 0, (double[]){-1}), mk(VG_DOUBLE, NULL, 0, (double[]){2})};
    for (int k = 0; k < 2; k++) {
        vg_tensor *an = run_feeds(g, dx[k], wrt, fv, 2, &st);
        double x0 = get(fv[k], 0), lv[2];
        for (int s = 0; s < 2; s++) {
            set(fv[k], 0, x0 + (s ? -1e-6 : 1e-6));
            vg_tensor *o = run_feeds(g, L, wrt, fv, 2, &st);
            lv[s] = o ? vg_tensor_scalar(o) : NAN;
            vg_tensor_free(o);
        }
        set(fv[k], 0, x0);
        CHECK(an != NULL);
        if (an) CHECK_NEAR(get(an, 0), (lv[0] - lv[1]) / 2e-6, 1e-5);
        vg_tensor_free(an);
    }
    vg_tensor_free(fv[0]), vg_tensor_free(fv[1]);
    vg_distribution_free(u);
    vg_graph_free(g);
}

/* ---- MultivariateNormalDiag (mvn_diag_test.py) --------------------------------------- */

static void test_mvn_diag(void) {
    vg_graph *g = vg_graph_new();
    /* testDist: mu [1, -1], diag [1, -5]; log_prob against the closed form */
    double mu[2] = {1, -1}, dg[2] = {1, -5}, x[4] = {0.5, 2.0, -3.0, 1.0}, lp[2];
    for (int r = 0; r < 2; r++) {
        lp[r] = -log(2 * M_PI) - log(1.0) - log(5.0);
        for (int k = 0; k < 2; k++) lp[r] -= 0.5 * pow((x[r * 2 + k] - mu[k]) / dg[k], 2);
    }
    vg_distribution *m = vg_mvn_diag(g, c1d(g, VG_DOUBLE, 2, mu), c1d(g, VG_DOUBLE, 2, dg), true, NULL);
    CHECK(m && strcmp(vg_distribution_name(m), "MultivariateNormalDiag") == 0);
    vg_shape es = vg_distribution_event_shape(m), bs = vg_distribution_batch_shape(m);
    CHECK(es.ndims == 1 && es.dims[0] == 2 && bs.ndims == 0);
    int64_t d22[2] = {2, 2}, d2[1] = {2};
    expect_tol(run(g, vg_distribution_log_prob(m, cst(g, VG_DOUBLE, d22, 2, x), NULL)), VG_DOUBLE, d2, 1, lp, 1e-12);
    /* entropy, mean, stddev */
    vg_tensor *t = run(g, vg_distribution_entropy(m, NULL));
    if (t) CHECK_NEAR(get(t, 0), 1 + log(2 * M_PI) + log(5.0), 1e-12);
    vg_tensor_free(t);
    expect_tol(run(g, vg_distribution_mean(m, NULL)), VG_DOUBLE, d2, 1, mu, 0);
    expect_tol(run(g, vg_distribution_stddev(m, NULL)), VG_DOUBLE, d2, 1, (double[]){1, 5}, 0);
    expect_tol(run(g, vg_distribution_variance(m, NULL)), VG_DOUBLE, d2, 1, (double[]){1, 25}, 1e-12);
    /* testCovariance: diag(scale_diag^2) */
    expect_tol(run(g, vg_distribution_covariance(m, NULL)), VG_DOUBLE, d22, 2, (double[]){1, 0, 0, 25}, 1e-12);
    /* testSample: mean mu, std |diag| over 50000 draws */
    t = run(g, vg_distribution_sample(m, 50000, 21, NULL));
    if (t) {
        CHECK(vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 1) == 2);
        for (int k = 0; k < 2; k++) {
            double mm, vv, sd = fabs(dg[k]);
            moments(t, 50000, 2, k, &mm, &vv);
            CHECK(fabs(mm - mu[k]) < 5 * sd / sqrt(5e4));
            CHECK(fabs(vv - sd * sd) < 5 * sd * sd * sqrt(2 / 5e4));
        }
    }
    vg_tensor_free(t);
    /* testKLDiag (closed form of two diagonal Gaussians), batch of 2 */
    double mua[4] = {0, 1, 2, -1}, sa[4] = {1, 2, 0.5, 1}, mub[4] = {1, 1, 0, 0}, sb[4] = {2, 1, 1, 3}, kl[2];
    for (int r = 0; r < 2; r++) {
        kl[r] = 0;
        for (int k = 0; k < 2; k++) {
            int i = r * 2 + k;
            kl[r] += log(sb[i] / sa[i]) + (sa[i] * sa[i] + pow(mua[i] - mub[i], 2)) / (2 * sb[i] * sb[i]) - 0.5;
        }
    }
    vg_distribution *a = vg_mvn_diag(g, cst(g, VG_DOUBLE, d22, 2, mua), cst(g, VG_DOUBLE, d22, 2, sa), false, NULL);
    vg_distribution *b = vg_mvn_diag(g, cst(g, VG_DOUBLE, d22, 2, mub), cst(g, VG_DOUBLE, d22, 2, sb), false, NULL);
    expect_tol(run(g, vg_kl_divergence(a, b, NULL)), VG_DOUBLE, d2, 1, kl, 1e-12);
    vg_distribution_free(a), vg_distribution_free(b), vg_distribution_free(m);
    vg_graph_free(g);

    /* reparameterized sample: finite differences of sum(sample^2) w.r.t. loc through
     * fresh sessions */
    g = vg_graph_new();
    vg_output loc = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2}, 1, "loc");
    m = vg_mvn_diag(g, loc, c1d(g, VG_DOUBLE, 2, (double[]){0.5, 2}), false, NULL);
    vg_output L = vg_reduce_sum(g, vg_square(g, vg_distribution_sample(m, 4, 3, NULL), NULL), NULL, -1, false, NULL);
    vg_output dl;
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, &loc, 1, NULL, &dl, &st), &st);
    vg_tensor *tl = mk(VG_DOUBLE, (int64_t[]){2}, 1, (double[]){0.3, -0.2});
    vg_tensor *an = run_feeds(g, dl, &loc, &tl, 1, &st);
    for (int i = 0; i < 2 && an; i++) {
        double x0 = get(tl, i), lv[2];
        for (int s = 0; s < 2; s++) {
            set(tl, i, x0 + (s ? -1e-6 : 1e-6));
            vg_tensor *o = run_feeds(g, L, &loc, &tl, 1, &st);
            lv[s] = o ? vg_tensor_scalar(o) : NAN;
            vg_tensor_free(o);
        }
        set(tl, i, x0);
        CHECK_NEAR(get(an, i), (lv[0] - lv[1]) / 2e-6, 1e-5);
    }
    CHECK(an != NULL);
    vg_tensor_free(an), vg_tensor_free(tl);
    vg_distribution_free(m);
    vg_graph_free(g);
}

/* ---- Beta (beta_test.py) ------------------------------------------------------------- */

static double lbeta2(double a, double b) { return lgamma(a) + lgamma(b) - lgamma(a + b); }

/* Regularized lower incomplete gamma P(a, x) (series) and its inverse in x (bisection). */
static double reg_p(double a, double x) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < 100000; n++) {
        term *= x / (a + n);
        sum += term;
        if (term < 1e-18 * sum) break;
    }
    return exp(a * log(x) - x - lgamma(a)) * sum;
}
static double reg_p_inv(double a, double u) {
    double lo = 0, hi = 1;
    while (reg_p(a, hi) < u) hi *= 2;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (reg_p(a, mid) < u) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}
/* d x / d a at fixed u = P(a, x): the explicit reparameterization derivative */
static double explicit_der(double a, double x) {
    double u = reg_p(a, x), h = 1e-4 * a;
    return (reg_p_inv(a + h, u) - reg_p_inv(a - h, u)) / (2 * h);
}

static void test_beta(void) {
    vg_graph *g = vg_graph_new();
    /* testPdfTwoBatches: a [1, 2], b [1, 2], x [.5, .5] -> [1, 1.5] */
    vg_distribution *bt = vg_beta(g, c1d(g, VG_DOUBLE, 2, (double[]){1, 2}), c1d(g, VG_DOUBLE, 2, (double[]){1, 2}), true, NULL);
    int64_t d2[1] = {2}, d3[1] = {3};
    expect_tol(run(g, vg_distribution_prob(bt, c1d(g, VG_DOUBLE, 2, (double[]){.5, .5}), NULL)), VG_DOUBLE, d2, 1,
               (double[]){1, 1.5}, 1e-12);
    vg_distribution_free(bt);
    /* testBetaMean / testBetaVariance / testBetaEntropy: a [1, 2, 3], b [2, 4, 1.2] */
    double a[3] = {1, 2, 3}, b[3] = {2, 4, 1.2}, mn[3], vr[3], en[3], lp[3], x[3] = {0.3, 0.1, 0.8};
    for (int i = 0; i < 3; i++) {
        double s = a[i] + b[i];
        mn[i] = a[i] / s;
        vr[i] = a[i] * b[i] / (s * s * (s + 1));
        en[i] = lbeta2(a[i], b[i]) - (a[i] - 1) * dgm(a[i]) - (b[i] - 1) * dgm(b[i]) + (s - 2) * dgm(s);
        lp[i] = (a[i] - 1) * log(x[i]) + (b[i] - 1) * log(1 - x[i]) - lbeta2(a[i], b[i]);
    }
    bt = vg_beta(g, c1d(g, VG_DOUBLE, 3, a), c1d(g, VG_DOUBLE, 3, b), false, NULL);
    expect_tol(run(g, vg_distribution_mean(bt, NULL)), VG_DOUBLE, d3, 1, mn, 1e-12);
    expect_tol(run(g, vg_distribution_variance(bt, NULL)), VG_DOUBLE, d3, 1, vr, 1e-12);
    expect_tol(run(g, vg_distribution_entropy(bt, NULL)), VG_DOUBLE, d3, 1, en, 1e-8);
    expect_tol(run(g, vg_distribution_log_prob(bt, c1d(g, VG_DOUBLE, 3, x), NULL)), VG_DOUBLE, d3, 1, lp, 1e-12);
    /* testBetaModeInvalid: NaN where a concentration <= 1 (a = 1 here) */
    expect_tol(run(g, vg_distribution_mode(bt, NULL)), VG_DOUBLE, d3, 1,
               (double[]){NAN, (2 - 1) / (6 - 2.0), (3 - 1) / (4.2 - 2)}, 1e-12);
    /* no Betainc in vigil: cdf is UNIMPLEMENTED (TF has it) */
    vg_distribution *b2 = vg_beta(g, c1d(g, VG_DOUBLE, 3, b), c1d(g, VG_DOUBLE, 3, a), false, NULL);
    /* testBetaBetaKL */
    double kl[3];
    for (int i = 0; i < 3; i++) {
        double a1 = a[i], b1 = b[i], a2 = b[i], b2_ = a[i];
        kl[i] = lbeta2(a2, b2_) - lbeta2(a1, b1) + (a1 - a2) * dgm(a1) + (b1 - b2_) * dgm(b1) +
                (a2 - a1 + b2_ - b1) * dgm(a1 + b1);
    }
    expect_tol(run(g, vg_kl_divergence(bt, b2, NULL)), VG_DOUBLE, d3, 1, kl, 1e-8);
    /* testBetaSample: a 1, b 2, n 100000: mean 1/3, variance 1/18 */
    vg_distribution *bs = vg_beta(g, vg_const_f64(g, 1, NULL), vg_const_f64(g, 2, NULL), false, NULL);
    vg_tensor *t = run(g, vg_distribution_sample(bs, 100000, 4, NULL));
    if (t) {
        double m, v;
        moments(t, 100000, 1, 0, &m, &v);
        CHECK(fabs(m - 1 / 3.0) < 5 * sqrt(1 / 18.0 / 1e5));
        CHECK(fabs(v - 1 / 18.0) < 0.002);
    }
    vg_tensor_free(t);
    /* testBetaCdf: I_x(1, b) = 1 - (1 - x)^b, I_x(a, 1) = x^a, I_x(2, 2) = 3x^2 - 2x^3,
     * x broadcast against the batch */
    vg_distribution *bc = vg_beta(g, c1d(g, VG_DOUBLE, 3, (double[]){1, 2.5, 2}), c1d(g, VG_DOUBLE, 3, (double[]){2, 1, 2}),
                                  false, NULL);
    int64_t d23[2] = {2, 3};
    double xc[2] = {0.3, 0.75}, ec[6];
    for (int r = 0; r < 2; r++) {
        ec[r * 3] = 1 - pow(1 - xc[r], 2);
        ec[r * 3 + 1] = pow(xc[r], 2.5);
        ec[r * 3 + 2] = 3 * xc[r] * xc[r] - 2 * pow(xc[r], 3);
    }
    int64_t d21[2] = {2, 1};
    expect_tol(run(g, vg_distribution_cdf(bc, cst(g, VG_DOUBLE, d21, 2, xc), NULL)), VG_DOUBLE, d23, 2, ec, 1e-12);
    vg_distribution_free(bc);
    /* Bernoulli has no cdf in TF 1.15: NotImplementedError's text */
    vg_distribution *bn = vg_bernoulli(g, NONE, vg_const_f64(g, 0.5, NULL), VG_DTYPE_INVALID, false, NULL);
    vg_output cdf = vg_distribution_cdf(bn, vg_const_i32(g, 1, NULL), NULL);
    vg_status st;
    CHECK(cdf.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_UNIMPLEMENTED, "cdf is not implemented: Bernoulli");
    vg_distribution_free(bn);
    vg_distribution_free(bt), vg_distribution_free(b2), vg_distribution_free(bs);
    vg_graph_free(g);

    /* testBetaFullyReparameterized: d sample / d concentration1 / 0 of x = g1 / (g1 + g2)
     * against the explicit derivative of each gamma draw (fixed CDF level, inverse by
     * bisection) and the chain rule */
    g = vg_graph_new();
    vg_output c1 = vg_placeholder(g, VG_DOUBLE, NULL, 0, "c1"), c0 = vg_placeholder(g, VG_DOUBLE, NULL, 0, "c0");
    bt = vg_beta(g, c1, c0, false, NULL);
    vg_output s = vg_distribution_sample(bt, 3, 77, NULL);
    vg_output g1 = vg_op_input(s.op, 0), g2 = vg_op_input(vg_op_input(s.op, 1).op, 1);
    vg_output L = vg_reduce_sum(g, s, NULL, -1, false, NULL);
    vg_output wrt[2] = {c1, c0}, dx[2];
    CHECK_OK(vg_gradients(g, &L, 1, wrt, 2, NULL, dx, &st), &st);
    vg_tensor *fv[2] = {mk(VG_DOUBLE, NULL, 0, (double[]){1.7}), mk(VG_DOUBLE, NULL, 0, (double[]){0.6})};
    vg_output fetch[5] = {s, g1, g2, dx[0], dx[1]};
    vg_tensor *out[5] = {NULL, NULL, NULL, NULL, NULL};
    vg_session *ss = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(ss, NULL, wrt, fv, 2, fetch, out, 5, NULL, 0, NULL, &st), &st);
    vg_session_free(ss);
    if (out[0] && out[4]) {
        double w1 = 0, w0 = 0;
        for (int i = 0; i < 3; i++) {
            double x1 = get(out[1], i), x2 = get(out[2], i), den = (x1 + x2) * (x1 + x2);
            CHECK_NEAR(get(out[0], i), x1 / (x1 + x2), 1e-12);
            w1 += explicit_der(1.7, x1) * x2 / den;
            w0 += -x1 * explicit_der(0.6, x2) / den;
        }
        CHECK_NEAR(get(out[3], 0), w1, 1e-5);
        CHECK_NEAR(get(out[4], 0), w0, 1e-5);
    }
    free_n(out, 5);
    vg_tensor_free(fv[0]), vg_tensor_free(fv[1]);
    vg_distribution_free(bt);
    vg_graph_free(g);
}

/* ---- Dirichlet (dirichlet_test.py) --------------------------------------------------- */

static void test_dirichlet(void) {
    vg_graph *g = vg_graph_new();
    /* testPdfTwoBatches: alpha [1, 2], x [[.5, .5], [.3, .7]] -> [1, 1.4] */
    vg_distribution *d = vg_dirichlet(g, c1d(g, VG_DOUBLE, 2, (double[]){1, 2}), true, NULL);
    CHECK(d != NULL);
    vg_shape es = vg_distribution_event_shape(d), bs = vg_distribution_batch_shape(d);
    CHECK(es.ndims == 1 && es.dims[0] == 2 && bs.ndims == 0);
    int64_t d22[2] = {2, 2}, d2[1] = {2}, d3[1] = {3};
    expect_tol(run(g, vg_distribution_prob(d, cst(g, VG_DOUBLE, d22, 2, (double[]){.5, .5, .3, .7}), NULL)), VG_DOUBLE,
               d2, 1, (double[]){1, 1.4}, 1e-12);
    vg_distribution_free(d);
    /* testMean / testVariance / testEntropy / testMode: alpha [1.5, 2, 3] */
    double al[3] = {1.5, 2, 3}, s = 6.5, mn[3], vr[3], md[3], ent;
    ent = lgamma(1.5) + lgamma(2) + lgamma(3) - lgamma(s) + (s - 3) * dgm(s);
    for (int i = 0; i < 3; i++) {
        mn[i] = al[i] / s;
        vr[i] = mn[i] * (1 - mn[i]) / (s + 1);
        md[i] = (al[i] - 1) / (s - 3);
        ent -= (al[i] - 1) * dgm(al[i]);
    }
    d = vg_dirichlet(g, c1d(g, VG_DOUBLE, 3, al), false, NULL);
    expect_tol(run(g, vg_distribution_mean(d, NULL)), VG_DOUBLE, d3, 1, mn, 1e-12);
    expect_tol(run(g, vg_distribution_variance(d, NULL)), VG_DOUBLE, d3, 1, vr, 1e-12);
    expect_tol(run(g, vg_distribution_mode(d, NULL)), VG_DOUBLE, d3, 1, md, 1e-12);
    /* testCovarianceFromSampling's closed form: (diag(m) - m m^T) / (1 + total) */
    double cv[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) cv[i * 3 + j] = ((i == j) * mn[i] - mn[i] * mn[j]) / (1 + s);
    int64_t d33[2] = {3, 3};
    expect_tol(run(g, vg_distribution_covariance(d, NULL)), VG_DOUBLE, d33, 2, cv, 1e-12);
    vg_tensor *t = run(g, vg_distribution_entropy(d, NULL));
    if (t) CHECK_NEAR(get(t, 0), ent, 1e-8);
    vg_tensor_free(t);
    /* testModeInvalid: a concentration <= 1 gives NaN everywhere in that batch member */
    vg_distribution *dm = vg_dirichlet(g, c1d(g, VG_DOUBLE, 3, (double[]){0.5, 2, 3}), false, NULL);
    expect_tol(run(g, vg_distribution_mode(dm, NULL)), VG_DOUBLE, d3, 1, (double[]){NAN, NAN, NAN}, 0);
    /* testDirichletDirichletKL */
    double bl[3] = {2, 1, 0.5}, sb = 3.5, kl = 0;
    for (int i = 0; i < 3; i++) kl += (al[i] - bl[i]) * (dgm(al[i]) - dgm(s));
    kl += -(lgamma(1.5) + lgamma(2) + lgamma(3) - lgamma(s)) + (lgamma(2) + lgamma(1) + lgamma(0.5) - lgamma(sb));
    vg_distribution *db = vg_dirichlet(g, c1d(g, VG_DOUBLE, 3, bl), false, NULL);
    t = run(g, vg_kl_divergence(d, db, NULL));
    if (t) CHECK_NEAR(get(t, 0), kl, 1e-8);
    vg_tensor_free(t);
    /* testSample: moments of 30000 draws, rows on the simplex */
    t = run(g, vg_distribution_sample(d, 30000, 6, NULL));
    if (t) {
        CHECK(vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 1) == 3);
        bool simplex = true;
        for (int64_t i = 0; i < 30000; i++) simplex &= fabs(get(t, i * 3) + get(t, i * 3 + 1) + get(t, i * 3 + 2) - 1) < 1e-12;
        CHECK(simplex);
        for (int k = 0; k < 3; k++) {
            double m, v;
            moments(t, 30000, 3, k, &m, &v);
            CHECK(fabs(m - mn[k]) < 5 * sqrt(vr[k] / 3e4));
        }
    }
    vg_tensor_free(t);
    /* sample(sample_shape): shape [2, 5] + event [3], rows on the simplex; sample() of a
     * batch-free Normal is a scalar and of a [2]-batch Normal has shape [2], the
     * static shapes known at build time (distribution.py's _call_sample_n and
     * _set_sample_static_shape, checked by distribution_test.py testSampleShapeHints) */
    vg_output s25 = vg_distribution_sample_shape(d, (const int64_t[]){2, 5}, 2, 6, NULL);
    vg_shape st25 = vg_output_shape(s25);
    CHECK(st25.ndims == 3 && st25.dims[0] == 2 && st25.dims[1] == 5 && st25.dims[2] == 3);
    t = run(g, s25);
    CHECK(t && vg_tensor_ndims(t) == 3 && vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 5 && vg_tensor_dim(t, 2) == 3);
    for (int64_t i = 0; t && i < 10; i++) CHECK_NEAR(get(t, i * 3) + get(t, i * 3 + 1) + get(t, i * 3 + 2), 1, 1e-12);
    vg_tensor_free(t);
    vg_distribution *n1 = vg_normal(g, vg_const_f32(g, 0, NULL), vg_const_f32(g, 1, NULL), false, NULL);
    vg_distribution *n2 = vg_normal(g, c1d(g, VG_FLOAT, 2, (double[]){0, 1}), vg_const_f32(g, 1, NULL), false, NULL);
    vg_output s0 = vg_distribution_sample_shape(n1, NULL, 0, 1, NULL);
    CHECK(vg_output_shape(s0).ndims == 0);
    t = run(g, s0);
    CHECK(t && vg_tensor_ndims(t) == 0);
    vg_tensor_free(t);
    t = run(g, vg_distribution_sample_shape(n2, NULL, 0, 1, NULL));
    CHECK(t && vg_tensor_ndims(t) == 1 && vg_tensor_dim(t, 0) == 2);
    vg_tensor_free(t);
    vg_distribution_free(n1), vg_distribution_free(n2);
    vg_distribution_free(d), vg_distribution_free(dm), vg_distribution_free(db);
    vg_graph_free(g);

    /* reparameterized: d sample_i / d alpha_j = (delta_ij S - g_i) g_j' / S^2 with the
     * gamma draws g (S their sum) and g_j' their explicit derivatives */
    g = vg_graph_new();
    vg_output c = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3}, 1, "c");
    d = vg_dirichlet(g, c, false, NULL);
    vg_output smp = vg_distribution_sample(d, 2, 12, NULL);
    vg_output gs = vg_op_input(smp.op, 0);
    double w[3] = {1.0, -2.0, 0.5};
    vg_output L = vg_reduce_sum(g, vg_mul(g, smp, c1d(g, VG_DOUBLE, 3, w), NULL), NULL, -1, false, NULL);
    vg_output dc;
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, &c, 1, NULL, &dc, &st), &st);
    vg_tensor *tc = mk(VG_DOUBLE, (int64_t[]){3}, 1, (double[]){0.8, 2.5, 4.0});
    vg_output fetch[2] = {gs, dc};
    vg_tensor *out[2] = {NULL, NULL};
    vg_session *ss = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(ss, NULL, &c, &tc, 1, fetch, out, 2, NULL, 0, NULL, &st), &st);
    vg_session_free(ss);
    if (out[0] && out[1]) {
        double want[3] = {0, 0, 0};
        for (int r = 0; r < 2; r++) {
            double gg[3], S = 0;
            for (int k = 0; k < 3; k++) S += gg[k] = get(out[0], r * 3 + k);
            for (int j = 0; j < 3; j++) {
                double gj = explicit_der(get(tc, j), gg[j]);
                for (int i = 0; i < 3; i++) want[j] += w[i] * ((i == j) * S - gg[i]) * gj / (S * S);
            }
        }
        for (int j = 0; j < 3; j++) CHECK_NEAR(get(out[1], j), want[j], 1e-5);
    }
    free_n(out, 2);
    vg_tensor_free(tc);
    /* no cdf, so no log_cdf (NotImplementedError's text); last, as the error is sticky */
    vg_output lc = vg_distribution_log_cdf(d, c, NULL);
    CHECK(lc.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_UNIMPLEMENTED, "log_cdf is not implemented: Dirichlet");
    vg_distribution_free(d);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_normal);
    RUN_TEST(test_normal_sample_and_grad);
    RUN_TEST(test_bernoulli);
    RUN_TEST(test_categorical);
    RUN_TEST(test_uniform);
    RUN_TEST(test_mvn_diag);
    RUN_TEST(test_beta);
    RUN_TEST(test_dirichlet);
    TEST_MAIN_END();
}
