/* test_metrics.c - tf.metrics (vigil/metrics.h). Cases from TF 1.15's metrics_test.py:
 * MeanTest (testBasic 1.65 over four fed batches, testWeighted1d 0.45, testWeighted2d
 * -0.05), AccuracyTest (effectively equivalent shapes [40,1] vs [40], different sizes ->
 * error, weighted), PrecisionTest/RecallTest (some correct 0.5, weighted 1d/2d, all
 * incorrect, zero denominators -> 0), AUCTest (some correct 0.5, weighted 0.7, PR special
 * cases 0.79166 / 0.610317 / 0.90277, zero positives -> 1), {True,False}{Positives,
 * Negatives}Test (+ weighted), *_AtThresholdsTest, MeanIOUTest (hand-computed confusion
 * matrices), recall_at_k / precision_at_k (single and multiple labels, class_id), the
 * variables' names and collections, resetting through local_variables_initializer, and
 * the bad-input errors. */
#include "op_test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"

typedef struct sess_t {
    vg_graph *g;
    vg_session *s;
} sess_t;

static sess_t open_sess(vg_graph *g) {
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_op *init = vg_graph_op_by_name(g, "init");
    if (!init) init = vg_local_variables_initializer(g);
    CHECK(init != NULL);
    sess_t r = {g, vg_session_new(g, NULL, &st)};
    CHECK(r.s != NULL);
    if (r.s && init) CHECK_OK(vg_session_run_targets(r.s, &init, 1, &st), &st);
    return r;
}

/* Runs y (feeding f <- fv when f.op) and returns the value (caller frees). */
static vg_tensor *eval(sess_t *s, vg_output y, vg_output f, vg_tensor *fv) {
    vg_status st;
    vg_tensor *out = NULL;
    if (!s->s) return NULL;
    vg_code c = vg_session_run(s->s, NULL, &f, &fv, f.op ? 1 : 0, &y, &out, 1, NULL, 0, NULL, &st);
    if (c) {
        fprintf(stderr, "run failed: %s\n", st.msg);
        vg_test_failures++;
    }
    return out;
}

static double eval_scalar(sess_t *s, vg_output y) {
    vg_tensor *t = eval(s, y, vg_out(NULL, 0), NULL);
    double r = t ? get(t, 0) : NAN;
    vg_tensor_free(t);
    return r;
}

static void close_sess(sess_t *s) {
    vg_session_free(s->s);
    vg_graph_free(s->g);
}

/* update once, then value: both must equal want */
static void check_metric(vg_graph *g, vg_metric m, double want, double tol) {
    CHECK(m.value.op && m.update.op);
    if (!m.value.op || !m.update.op) {
        vg_status st;
        vg_graph_status(g, &st);
        fprintf(stderr, "graph error: %s\n", st.msg);
        vg_graph_free(g);
        return;
    }
    sess_t s = open_sess(g);
    CHECK_NEAR(eval_scalar(&s, m.update), want, tol);
    CHECK_NEAR(eval_scalar(&s, m.value), want, tol);
    close_sess(&s);
}

/* update once (its value dropped), then value must be want (and, unless before is NaN,
 * value must be before first); frees g. */
static void check_value_after_update(vg_graph *g, vg_metric m, double before, double want, double tol) {
    CHECK(m.value.op && m.update.op);
    if (!m.value.op || !m.update.op) {
        vg_graph_free(g);
        return;
    }
    sess_t s = open_sess(g);
    if (!isnan(before)) CHECK_NEAR(eval_scalar(&s, m.value), before, 0);
    vg_tensor_free(eval(&s, m.update, vg_out(NULL, 0), NULL));
    CHECK_NEAR(eval_scalar(&s, m.value), want, tol);
    close_sess(&s);
}

/* Running update fails with INVALID_ARGUMENT (a value out of range); frees g. */
static void check_update_invalid(vg_graph *g, vg_metric m) {
    CHECK(m.update.op != NULL);
    if (!m.update.op) {
        vg_graph_free(g);
        return;
    }
    sess_t s = open_sess(g);
    vg_status st;
    vg_tensor *out = NULL;
    CHECK(vg_session_run(s.s, NULL, NULL, NULL, 0, &m.update, &out, 1, NULL, 0, NULL, &st) == VG_INVALID_ARGUMENT);
    vg_tensor_free(out);
    close_sess(&s);
}

/* One update in a new session on g (freed here): its result must equal the value read
 * after it, which is returned. */
static double update_equals_value(vg_graph *g, vg_metric m) {
    sess_t s = open_sess(g);
    double u = eval_scalar(&s, m.update), v = eval_scalar(&s, m.value);
    CHECK_NEAR(u, v, 1e-6);
    close_sess(&s);
    return v;
}

static void check_vector_metric(vg_graph *g, vg_metric m, const double *want, int n) {
    CHECK(m.value.op && m.update.op);
    if (!m.value.op) {
        vg_graph_free(g);
        return;
    }
    sess_t s = open_sess(g);
    vg_tensor *u = eval(&s, m.update, vg_out(NULL, 0), NULL);
    check_elems(u, want, n, 1e-6);
    vg_tensor_free(u);
    vg_tensor *v = eval(&s, m.value, vg_out(NULL, 0), NULL);
    check_elems(v, want, n, 1e-6);
    vg_tensor_free(v);
    close_sess(&s);
}

static const int64_t D12[2] = {1, 2}, D14[2] = {1, 4}, D41[2] = {4, 1}, D24[2] = {2, 4}, D45[2] = {4, 5};
static const double MEAN_VALUES[8] = {0, 1, -4.2, 9.1, 6.5, 0, -3.2, 4.0};

/* MeanTest: four batches of [1, 2] fed through a placeholder */
static void run_mean(const double *weights, double want) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, D12, 2, "x");
    vg_output w = vg_placeholder(g, VG_FLOAT, D12, 2, "w");
    vg_metric_opts o = {weights ? w : vg_out(NULL, 0), NULL, NULL, NULL};
    vg_metric m = vg_metrics_mean(g, x, &o);
    CHECK(m.value.op && strcmp(vg_op_name(m.value.op), "mean/value") == 0);
    CHECK(m.update.op && strcmp(vg_op_name(m.update.op), "mean/update_op") == 0);
    sess_t s = open_sess(g);
    for (int b = 0; b < 4 && s.s; b++) {
        vg_tensor *xv = mk(VG_FLOAT, D12, 2, MEAN_VALUES + 2 * b);
        vg_tensor *wv = weights ? mk(VG_FLOAT, D12, 2, weights + 2 * b) : NULL;
        vg_output feeds[2] = {x, w};
        vg_tensor *vals[2] = {xv, wv};
        vg_tensor *out = NULL;
        vg_status st;
        CHECK_OK(vg_session_run(s.s, NULL, feeds, vals, weights ? 2 : 1, &m.update, &out, 1, NULL, 0, NULL, &st), &st);
        vg_tensor_free(out);
        vg_tensor_free(xv);
        vg_tensor_free(wv);
    }
    CHECK_NEAR(eval_scalar(&s, m.value), want, 1e-5);
    /* local_variables_initializer resets the metric */
    vg_status st;
    vg_op *init = vg_graph_op_by_name(g, "init");
    CHECK(init != NULL);
    if (s.s && init) CHECK_OK(vg_session_run_targets(s.s, &init, 1, &st), &st);
    CHECK_NEAR(eval_scalar(&s, m.value), 0.0, 0);
    close_sess(&s);
}

static void test_mean(void) {
    run_mean(NULL, 1.65);
    double w1[8] = {1, 1, 0, 0, 0, 0, 1, 1}; /* testWeighted1d: [[1], [0], [0], [1]] broadcast */
    run_mean(w1, (0 + 1 - 3.2 + 4.0) / 4.0);
    double w2[8] = {1, 0, 1, 0, 0, 1, 0, 1}; /* testWeighted2d */
    run_mean(w2, (0 - 4.2 + 0 + 4.0) / 4.0);

    /* variables, collections */
    vg_graph *g = vg_graph_new();
    vg_metric m = vg_metrics_mean(g, vg_const_f32(g, 1.0f, NULL), NULL);
    vg_metric m2 =
        vg_metrics_mean(g, vg_const_f32(g, 3.0f, NULL),
                        &(vg_metric_opts){.name = "my_mean", .metrics_collection = "mc", .updates_collection = "uc"});
    CHECK(vg_graph_op_by_name(g, "mean/total") && vg_graph_op_by_name(g, "mean/count"));
    CHECK(strcmp(vg_op_type(vg_graph_op_by_name(g, "mean/total")), "VariableV2") == 0);
    CHECK(m2.value.op && strcmp(vg_op_name(m2.value.op), "my_mean/value") == 0);
    int n;
    const vg_output *items = vg_graph_collection(g, VG_METRIC_VARIABLES, &n);
    CHECK_EQ_INT(n, 4);
    CHECK(n == 4 && strcmp(vg_op_name(items[0].op), "mean/total") == 0);
    vg_graph_collection(g, VG_LOCAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 4);
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 0);
    items = vg_graph_collection(g, "mc", &n);
    CHECK(n == 1 && items[0].op == m2.value.op);
    items = vg_graph_collection(g, "uc", &n);
    CHECK(n == 1 && items[0].op == m2.update.op);
    /* a second mean gets a unique scope */
    vg_metric m3 = vg_metrics_mean(g, vg_const_f32(g, 3.0f, NULL), NULL);
    CHECK(m3.value.op && strcmp(vg_op_name(m3.value.op), "mean_1/value") == 0);
    sess_t s = open_sess(g);
    CHECK_NEAR(eval_scalar(&s, m.value), 0.0, 0); /* div_no_nan before any update */
    CHECK_NEAR(eval_scalar(&s, m.update), 1.0, 0);
    CHECK_NEAR(eval_scalar(&s, m2.update), 3.0, 0);
    close_sess(&s);
}

static void test_accuracy(void) {
    /* testEffectivelyEquivalentShapes: predictions [40, 1], labels [40] */
    vg_graph *g = vg_graph_new();
    int64_t d401[2] = {40, 1}, d40 = 40;
    vg_output p = vg_const_fill(g, VG_FLOAT, d401, 2, 1, "p"), l = vg_const_fill(g, VG_FLOAT, &d40, 1, 1, "l");
    vg_metric m = vg_metrics_accuracy(g, l, p, NULL);
    CHECK(m.value.op && strcmp(vg_op_name(m.value.op), "accuracy/value") == 0);
    CHECK(vg_graph_op_by_name(g, "accuracy/total") && vg_graph_op_by_name(g, "accuracy/count"));
    check_metric(g, m, 1.0, 0);

    /* int labels, float predictions cast to the labels' dtype; weights */
    g = vg_graph_new();
    double pv[4] = {2, 1, 0, 1}, lv[4] = {2, 0, 0, 1}, wv[4] = {1, 1, 2, 0};
    int64_t d4 = 4;
    vg_output pl = cst(g, VG_INT64, &d4, 1, pv), ll = cst(g, VG_INT64, &d4, 1, lv);
    check_metric(g, vg_metrics_accuracy(g, ll, pl, NULL), 0.75, 1e-6);
    g = vg_graph_new();
    pl = cst(g, VG_INT64, &d4, 1, pv), ll = cst(g, VG_INT64, &d4, 1, lv);
    vg_metric_opts o = {cst(g, VG_FLOAT, &d4, 1, wv), NULL, NULL, NULL};
    check_metric(g, vg_metrics_accuracy(g, ll, pl, &o), 3.0 / 4.0, 1e-6);

    /* testPredictionsAndLabelsOfDifferentSizeRaisesValueError */
    g = vg_graph_new();
    int64_t d103[2] = {10, 3}, d104[2] = {10, 4};
    m = vg_metrics_accuracy(g, vg_const_fill(g, VG_FLOAT, d104, 2, 1, NULL), vg_const_fill(g, VG_FLOAT, d103, 2, 1, NULL),
                            NULL);
    CHECK(m.value.op == NULL && m.update.op == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "accuracy");
    CHECK_STR_CONTAINS(st.msg, "incompatible");
    vg_graph_free(g);
    /* weights that cannot broadcast */
    g = vg_graph_new();
    int64_t d3 = 3;
    m = vg_metrics_accuracy(g, vg_const_fill(g, VG_FLOAT, d103, 2, 1, NULL), vg_const_fill(g, VG_FLOAT, d103, 2, 1, NULL),
                            &(vg_metric_opts){.weights = vg_const_fill(g, VG_FLOAT, &d3, 1, 1, NULL)});
    /* [3] broadcasts against [10, 3]? TF requires equal rank or a scalar */
    CHECK(m.value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "weights can not be broadcast");
    vg_graph_free(g);
}

static void test_errors_mse_mae(void) {
    /* mean_squared_error / mean_absolute_error: hand-computed */
    double p[4] = {4, 8, 12, 8}, l[4] = {1, 9, 2, -5};
    vg_graph *g = vg_graph_new();
    vg_metric m = vg_metrics_mean_squared_error(g, cst(g, VG_FLOAT, D14, 2, l), cst(g, VG_FLOAT, D14, 2, p), NULL);
    CHECK(m.value.op && strcmp(vg_op_name(m.value.op), "mean_squared_error/value") == 0);
    check_metric(g, m, (9 + 1 + 100 + 169) / 4.0, 1e-6);
    g = vg_graph_new();
    check_metric(g, vg_metrics_mean_absolute_error(g, cst(g, VG_FLOAT, D14, 2, l), cst(g, VG_FLOAT, D14, 2, p), NULL),
                 (3 + 1 + 10 + 13) / 4.0, 1e-6);
    g = vg_graph_new();
    double w[4] = {0, 1, 0, 1};
    vg_metric_opts o = {cst(g, VG_FLOAT, D14, 2, w), NULL, NULL, NULL};
    check_metric(g, vg_metrics_mean_squared_error(g, cst(g, VG_FLOAT, D14, 2, l), cst(g, VG_FLOAT, D14, 2, p), &o),
                 (1 + 169) / 2.0, 1e-6);
    g = vg_graph_new();
    m = vg_metrics_root_mean_squared_error(g, cst(g, VG_FLOAT, D14, 2, l), cst(g, VG_FLOAT, D14, 2, p), NULL);
    CHECK(vg_graph_op_by_name(g, "root_mean_squared_error/total") != NULL);
    check_metric(g, m, sqrt((9 + 1 + 100 + 169) / 4.0), 1e-6);
    g = vg_graph_new();
    m = vg_metrics_mean_absolute_error(g, cst(g, VG_FLOAT, D14, 2, l), cst(g, VG_FLOAT, D41, 2, p), NULL);
    CHECK(m.value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "mean_absolute_error");
    vg_graph_free(g);
}

/* {True,False}{Positives,Negatives}Test.testUnweighted/testWeighted */
static const double CL[20] = {0, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1};
static const double CP[20] = {0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1};
static const double CW[4] = {1, 1.5, 2, 2.5};

typedef vg_metric (*count_fn)(vg_graph *, vg_output, vg_output, const vg_metric_opts *);

static void run_count(count_fn fn, const char *scope, double unweighted, double weighted) {
    vg_graph *g = vg_graph_new();
    vg_metric m = fn(g, cst(g, VG_INT64, D45, 2, CL), cst(g, VG_INT64, D45, 2, CP), NULL);
    char want[64];
    snprintf(want, sizeof want, "%s/count", scope);
    CHECK(vg_graph_op_by_name(g, want) != NULL);
    check_metric(g, m, unweighted, 0);
    g = vg_graph_new();
    vg_metric_opts o = {cst(g, VG_FLOAT, D41, 2, CW), NULL, NULL, NULL};
    check_metric(g, fn(g, cst(g, VG_FLOAT, D45, 2, CL), cst(g, VG_BOOL, D45, 2, CP), &o), weighted, 1e-6);
}

static void test_counts(void) {
    run_count(vg_metrics_true_positives, "true_positives", 7, 12);
    run_count(vg_metrics_false_positives, "false_positives", 7, 14);
    run_count(vg_metrics_true_negatives, "true_negatives", 3, 4);
    run_count(vg_metrics_false_negatives, "false_negatives", 3, 5);
}

static void test_precision_recall(void) {
    double p4[4] = {1, 0, 1, 0}, l4[4] = {0, 1, 1, 0};
    /* testSomeCorrect (precision and recall 0.5) */
    vg_graph *g = vg_graph_new();
    vg_metric m = vg_metrics_precision(g, cst(g, VG_INT64, D14, 2, l4), cst(g, VG_FLOAT, D14, 2, p4), NULL);
    CHECK(vg_graph_op_by_name(g, "precision/true_positives/count") != NULL);
    CHECK(vg_graph_op_by_name(g, "precision/false_positives/count") != NULL);
    CHECK(m.value.op && strcmp(vg_op_name(m.value.op), "precision/value") == 0);
    check_metric(g, m, 0.5, 1e-6);
    g = vg_graph_new();
    m = vg_metrics_recall(g, cst(g, VG_INT32, D14, 2, l4), cst(g, VG_BOOL, D14, 2, p4), NULL);
    CHECK(vg_graph_op_by_name(g, "recall/false_negatives/count") != NULL);
    check_metric(g, m, 0.5, 1e-6);
    /* PrecisionTest.testWeighted1d: 0.5 */
    double pw[8] = {1, 0, 1, 0, 1, 0, 1, 0}, lw[8] = {0, 1, 1, 0, 1, 0, 0, 1}, w1[2] = {2, 5};
    int64_t d21[2] = {2, 1};
    g = vg_graph_new();
    vg_metric_opts o = {cst(g, VG_FLOAT, d21, 2, w1), NULL, NULL, NULL};
    check_metric(g, vg_metrics_precision(g, cst(g, VG_FLOAT, D24, 2, lw), cst(g, VG_FLOAT, D24, 2, pw), &o),
                 (2.0 + 5.0) / ((2.0 + 2.0) + (5.0 + 5.0)), 1e-6);
    /* RecallTest.testWeighted2d: 0.4 */
    double pr[8] = {1, 0, 1, 0, 0, 1, 0, 1}, w2[8] = {1, 2, 3, 4, 4, 3, 2, 1};
    g = vg_graph_new();
    o.weights = cst(g, VG_FLOAT, D24, 2, w2);
    check_metric(g, vg_metrics_recall(g, cst(g, VG_FLOAT, D24, 2, lw), cst(g, VG_FLOAT, D24, 2, pr), &o),
                 (3.0 + 1.0) / ((2.0 + 3.0) + (4.0 + 1.0)), 1e-6);
    /* testAllIncorrect -> 0; testZeroTrueAndFalsePositivesGivesZeroPrecision -> 0 */
    double inv[4] = {0, 1, 0, 1}, zeros[4] = {0};
    g = vg_graph_new();
    check_metric(g, vg_metrics_precision(g, cst(g, VG_FLOAT, D14, 2, inv), cst(g, VG_FLOAT, D14, 2, p4), NULL), 0, 0);
    g = vg_graph_new();
    check_metric(g, vg_metrics_precision(g, cst(g, VG_FLOAT, D14, 2, zeros), cst(g, VG_FLOAT, D14, 2, zeros), NULL), 0,
                 0);
    g = vg_graph_new();
    check_metric(g, vg_metrics_recall(g, cst(g, VG_FLOAT, D14, 2, zeros), cst(g, VG_FLOAT, D14, 2, zeros), NULL), 0, 0);
    /* different shapes */
    g = vg_graph_new();
    m = vg_metrics_recall(g, cst(g, VG_FLOAT, D24, 2, lw), cst(g, VG_FLOAT, D14, 2, p4), NULL);
    CHECK(m.value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* *_AtThresholdsTest */
static void test_at_thresholds(void) {
    static const double P[12] = {0.9, 0.2, 0.8, 0.1, 0.2, 0.9, 0.7, 0.6, 0.1, 0.2, 0.4, 0.3};
    static const double L[12] = {0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    static const double T[3] = {0.15, 0.5, 0.85};
    static const double W[4] = {0, 2, 3, 5};
    int64_t d34[2] = {3, 4};
    typedef vg_metric (*fn_t)(vg_graph *, vg_output, vg_output, const double *, int, const vg_metric_opts *);
    const fn_t fns[4] = {vg_metrics_true_positives_at_thresholds, vg_metrics_false_positives_at_thresholds,
                         vg_metrics_true_negatives_at_thresholds, vg_metrics_false_negatives_at_thresholds};
    const char *vars[4] = {"true_positives/true_positives", "false_positives/false_positives",
                           "true_negatives/true_negatives", "false_negatives/false_negatives"};
    const double unweighted[4][3] = {{3, 1, 0}, {7, 4, 2}, {2, 5, 7}, {0, 2, 3}};
    const double weighted[4][3] = {{5, 3, 0}, {20, 10, 2}, {5, 15, 23}, {0, 2, 5}};
    for (int i = 0; i < 4; i++) {
        vg_graph *g = vg_graph_new();
        vg_metric m = fns[i](g, cst(g, VG_INT64, d34, 2, L), cst(g, VG_FLOAT, d34, 2, P), T, 3, NULL);
        CHECK(vg_graph_op_by_name(g, vars[i]) != NULL);
        check_vector_metric(g, m, unweighted[i], 3);
        g = vg_graph_new();
        vg_metric_opts o = {cst(g, VG_FLOAT, D14, 2, W), NULL, NULL, NULL};
        check_vector_metric(g, fns[i](g, cst(g, VG_INT64, d34, 2, L), cst(g, VG_FLOAT, d34, 2, P), T, 3, &o),
                            weighted[i], 3);
    }
    /* PrecisionAtThresholdsTest / RecallAtThresholdsTest: tp / (tp + fp + 1e-7) */
    {
        const double prec[3] = {3.0 / 10, 1.0 / 5, 0.0}, rec[3] = {3.0 / 3, 1.0 / 3, 0.0};
        vg_graph *g = vg_graph_new();
        vg_metric m = vg_metrics_precision_at_thresholds(g, cst(g, VG_INT64, d34, 2, L), cst(g, VG_FLOAT, d34, 2, P),
                                                         T, 3, NULL);
        CHECK(m.value.op && strcmp(vg_op_name(m.value.op), "precision_at_thresholds/precision_value") == 0);
        check_vector_metric(g, m, prec, 3);
        g = vg_graph_new();
        m = vg_metrics_recall_at_thresholds(g, cst(g, VG_INT64, d34, 2, L), cst(g, VG_FLOAT, d34, 2, P), T, 3, NULL);
        CHECK(vg_graph_op_by_name(g, "recall_at_thresholds/false_negatives") != NULL);
        check_vector_metric(g, m, rec, 3);
    }
    /* predictions outside [0, 1] fail at run time */
    vg_graph *g = vg_graph_new();
    double bad[4] = {0.5, 1.5, 0, 0};
    vg_metric m = vg_metrics_true_positives_at_thresholds(g, cst(g, VG_INT64, D14, 2, L), cst(g, VG_FLOAT, D14, 2, bad),
                                                          T, 3, NULL);
    sess_t s = open_sess(g);
    vg_status st;
    vg_tensor *out = NULL;
    CHECK(vg_session_run(s.s, NULL, NULL, NULL, 0, &m.update, &out, 1, NULL, 0, NULL, &st) == VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "predictions must be in [0, 1]");
    vg_tensor_free(out);
    close_sess(&s);
}

static double auc_of(const double *p, const double *l, int n, const double *w, const char *curve, int nt,
                     const char *summation) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {1, n};
    vg_metric_opts o = {w ? cst(g, VG_FLOAT, d, 2, w) : vg_out(NULL, 0), NULL, NULL, NULL};
    vg_metric m = vg_metrics_auc(g, cst(g, VG_INT64, d, 2, l), cst(g, VG_FLOAT, d, 2, p), nt, curve, summation, &o);
    CHECK(m.value.op != NULL);
    if (!m.value.op) {
        vg_graph_free(g);
        return NAN;
    }
    CHECK(strcmp(vg_op_name(m.value.op), "auc/value") == 0);
    CHECK(vg_graph_op_by_name(g, "auc/true_positives") && vg_graph_op_by_name(g, "auc/false_negatives") &&
          vg_graph_op_by_name(g, "auc/true_negatives") && vg_graph_op_by_name(g, "auc/false_positives"));
    return update_equals_value(g, m);
}

static void test_auc(void) {
    double p4[4] = {1, 0, 1, 0}, l4[4] = {0, 1, 1, 0};
    CHECK_NEAR(auc_of(p4, p4, 4, NULL, NULL, 200, NULL), 1.0, 1e-5); /* testAllCorrect */
    CHECK_NEAR(auc_of(p4, l4, 4, NULL, NULL, 200, NULL), 0.5, 1e-5); /* testSomeCorrect */
    double w1[4] = {2, 2, 2, 2}, w2[4] = {1, 2, 3, 4};
    CHECK_NEAR(auc_of(p4, l4, 4, w1, NULL, 200, NULL), 0.5, 1e-5); /* testWeighted1d */
    CHECK_NEAR(auc_of(p4, l4, 4, w2, NULL, 200, NULL), 0.7, 1e-5); /* testWeighted2d */
    double inv[4] = {0, 1, 0, 1};
    CHECK_NEAR(auc_of(p4, inv, 4, NULL, NULL, 200, NULL), 0.0, 1e-5); /* testAllIncorrect */
    double z[4] = {0};
    CHECK_NEAR(auc_of(z, z, 4, NULL, NULL, 200, NULL), 1.0, 1e-6); /* testZeroTruePositivesAndFalseNegatives */
    double ones[4] = {1, 1, 1, 1}; /* testRecallOneAndPrecisionOneGivesOnePRAUC */
    CHECK_NEAR(auc_of(ones, ones, 4, NULL, "PR", 200, NULL), 1.0, 1e-6);
    /* testAUCPRSpecialCase, testAnotherAUCPRSpecialCase, testThirdAUCPRSpecialCase */
    double pa[4] = {0.1, 0.4, 0.35, 0.8}, la[4] = {0, 0, 1, 1};
    CHECK_NEAR(auc_of(pa, la, 4, NULL, "PR", 200, NULL), 0.79166, 1e-3);
    double pb[7] = {0.1, 0.4, 0.35, 0.8, 0.1, 0.135, 0.81}, lb[7] = {0, 0, 1, 0, 1, 0, 1};
    CHECK_NEAR(auc_of(pb, lb, 7, NULL, "PR", 200, NULL), 0.610317, 1e-3);
    double pc[7] = {0.0, 0.1, 0.2, 0.33, 0.3, 0.4, 0.5}, lc[7] = {0, 0, 0, 0, 1, 1, 1};
    CHECK_NEAR(auc_of(pc, lc, 7, NULL, "PR", 200, NULL), 0.90277, 1e-3);
    /* ROC of the first special case by hand: of the 4 (pos, neg) pairs 3 are ordered */
    CHECK_NEAR(auc_of(pa, la, 4, NULL, "ROC", 1000, NULL), 0.75, 2e-3);
    /* minoring <= trapezoidal <= majoring */
    double mi = auc_of(pb, lb, 7, NULL, NULL, 20, "minoring"), tr = auc_of(pb, lb, 7, NULL, NULL, 20, NULL);
    double ma = auc_of(pb, lb, 7, NULL, NULL, 20, "majoring");
    CHECK(mi <= tr + 1e-7 && tr <= ma + 1e-7 && mi < ma);

    /* unknown batch size: predictions and labels fed through [?] placeholders */
    {
        vg_graph *g = vg_graph_new();
        int64_t unk = -1, d4 = 4;
        vg_output pp = vg_placeholder(g, VG_FLOAT, &unk, 1, "p"), lp = vg_placeholder(g, VG_INT64, &unk, 1, "l");
        vg_metric m = vg_metrics_auc(g, lp, pp, 200, "PR", NULL, NULL);
        vg_metric a = vg_metrics_accuracy(g, lp, vg_cast(g, vg_greater(g, pp, vg_const_f32(g, 0.5f, NULL), NULL),
                                                          VG_INT64, NULL), NULL);
        CHECK(m.update.op && a.update.op);
        sess_t s = open_sess(g);
        vg_tensor *pv = mk(VG_FLOAT, &d4, 1, pa), *lv = mk(VG_INT64, &d4, 1, la);
        vg_output feeds[2] = {pp, lp}, fetch[2] = {m.update, a.update};
        vg_tensor *vals[2] = {pv, lv}, *out[2] = {NULL, NULL};
        vg_status st;
        if (s.s) CHECK_OK(vg_session_run(s.s, NULL, feeds, vals, 2, fetch, out, 2, NULL, 0, NULL, &st), &st);
        if (out[0]) CHECK_NEAR(get(out[0], 0), 0.79166, 1e-3);
        if (out[1]) CHECK_NEAR(get(out[1], 0), 0.75, 1e-6); /* [0, 0, 0, 1] vs [0, 0, 1, 1] */
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        vg_tensor_free(pv);
        vg_tensor_free(lv);
        close_sess(&s);
    }

    /* argument errors */
    vg_graph *g = vg_graph_new();
    vg_output l = cst(g, VG_INT64, D14, 2, l4), p = cst(g, VG_FLOAT, D14, 2, p4);
    CHECK(vg_metrics_auc(g, l, p, 200, "XY", NULL, NULL).value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "curve must be either ROC or PR");
    vg_graph_free(g);
    g = vg_graph_new();
    l = cst(g, VG_INT64, D14, 2, l4), p = cst(g, VG_FLOAT, D14, 2, p4);
    CHECK(vg_metrics_auc(g, l, p, 1, NULL, NULL, NULL).value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    l = cst(g, VG_INT64, D14, 2, l4), p = cst(g, VG_FLOAT, D24, 2, NULL);
    CHECK(vg_metrics_auc(g, l, p, 200, NULL, NULL, NULL).value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "incompatible");
    vg_graph_free(g);
}

static void test_mean_iou(void) {
    double l[5] = {0, 1, 1, 0, 1}, p[5] = {0, 1, 1, 1, 1};
    int64_t d5 = 5;
    /* cm [[1, 1], [0, 3]]: iou [1/2, 3/4] */
    vg_graph *g = vg_graph_new();
    vg_metric m = vg_metrics_mean_iou(g, cst(g, VG_INT64, &d5, 1, l), cst(g, VG_INT64, &d5, 1, p), 2, NULL);
    CHECK(vg_graph_op_by_name(g, "mean_iou/total_confusion_matrix") != NULL);
    CHECK(m.value.op != NULL);
    if (m.value.op) {
        sess_t s = open_sess(g);
        vg_tensor *cm = eval(&s, m.update, vg_out(NULL, 0), NULL); /* TF's update_op yields the matrix */
        double want_cm[4] = {1, 1, 0, 3};
        check_values(cm, VG_DOUBLE, (int64_t[]){2, 2}, 2, want_cm, 0);
        vg_tensor_free(cm);
        CHECK_NEAR(eval_scalar(&s, m.value), 0.625, 1e-6);
        vg_tensor_free(eval(&s, m.update, vg_out(NULL, 0), NULL));
        CHECK_NEAR(eval_scalar(&s, m.value), 0.625, 1e-6);
        close_sess(&s);
    } else {
        vg_graph_free(g);
    }
    /* a class that never appears is left out of the mean */
    g = vg_graph_new();
    m = vg_metrics_mean_iou(g, cst(g, VG_INT32, &d5, 1, l), cst(g, VG_INT32, &d5, 1, p), 3, NULL);
    check_value_after_update(g, m, 0.0 /* no classes yet */, 0.625, 1e-6);
    /* weights drop the wrong prediction: cm [[1, 0], [0, 3]] -> 1 */
    g = vg_graph_new();
    double w[5] = {1, 1, 1, 0, 1};
    vg_metric_opts o = {cst(g, VG_FLOAT, &d5, 1, w), NULL, NULL, NULL};
    m = vg_metrics_mean_iou(g, cst(g, VG_INT64, &d5, 1, l), cst(g, VG_INT64, &d5, 1, p), 2, &o);
    check_value_after_update(g, m, NAN, 1.0, 1e-6);
    /* out-of-range class ids fail at run time, bad arguments at build time */
    g = vg_graph_new();
    double bad[5] = {0, 1, 2, 0, 1};
    m = vg_metrics_mean_iou(g, cst(g, VG_INT64, &d5, 1, bad), cst(g, VG_INT64, &d5, 1, p), 2, NULL);
    check_update_invalid(g, m);
    g = vg_graph_new();
    int64_t d4 = 4;
    CHECK(vg_metrics_mean_iou(g, cst(g, VG_INT64, &d5, 1, l), cst(g, VG_INT64, &d4, 1, p), 2, NULL).value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_metrics_mean_iou(g, cst(g, VG_INT64, &d5, 1, l), cst(g, VG_INT64, &d5, 1, p), 0, NULL).value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

typedef vg_metric (*topk_fn)(vg_graph *, vg_output, vg_output, int, int, const vg_metric_opts *);

static double topk_value(topk_fn fn, const double *labels, int nl, int k, int class_id, const double *w,
                         const char *want_var) {
    static const double P[8] = {0.1, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3, 0.4};
    vg_graph *g = vg_graph_new();
    int64_t dl[2] = {2, nl};
    vg_output l = cst(g, VG_INT64, dl, nl == 1 ? 1 : 2, labels);
    int64_t d2 = 2;
    vg_metric_opts o = {w ? cst(g, VG_FLOAT, &d2, 1, w) : vg_out(NULL, 0), NULL, NULL, NULL};
    vg_metric m = fn(g, l, cst(g, VG_FLOAT, D24, 2, P), k, class_id, &o);
    CHECK(m.value.op != NULL);
    if (!m.value.op) {
        vg_status st;
        vg_graph_status(g, &st);
        fprintf(stderr, "graph error: %s\n", st.msg);
        vg_graph_free(g);
        return NAN;
    }
    if (want_var) {
        CHECK(vg_graph_op_by_name(g, want_var) != NULL);
        if (!vg_graph_op_by_name(g, want_var)) fprintf(stderr, "missing %s\n", want_var);
    }
    sess_t s = open_sess(g);
    double u = eval_scalar(&s, m.update), v = eval_scalar(&s, m.value);
    if (!isnan(u)) CHECK_NEAR(u, v, 1e-9);
    close_sess(&s);
    return v;
}

static void test_top_k(void) {
    /* scores rows: top 1 = {3}, {3}; top 2 = {3, 1}, {3, 2} */
    double l1[2] = {3, 0}, l2[4] = {3, 1, 0, 2};
    CHECK_NEAR(topk_value(vg_metrics_recall_at_k, l1, 1, 1, -1, NULL, "recall_at_1/true_positive_at_1"), 0.5, 1e-9);
    CHECK_NEAR(topk_value(vg_metrics_recall_at_k, l1, 1, 1, -1, NULL, "recall_at_1/false_negative_at_1"), 0.5, 1e-9);
    CHECK_NEAR(topk_value(vg_metrics_precision_at_k, l1, 1, 1, -1, NULL, "precision_at_1/false_positive_at_1"), 0.5,
               1e-9);
    CHECK_NEAR(topk_value(vg_metrics_recall_at_k, l1, 1, 2, -1, NULL, NULL), 0.5, 1e-9);
    CHECK_NEAR(topk_value(vg_metrics_precision_at_k, l1, 1, 2, -1, NULL, NULL), 0.25, 1e-9);
    /* two labels per row: tp 3 of 4 labels, 3 of 4 predictions */
    CHECK_NEAR(topk_value(vg_metrics_recall_at_k, l2, 2, 2, -1, NULL, NULL), 0.75, 1e-9);
    CHECK_NEAR(topk_value(vg_metrics_precision_at_k, l2, 2, 2, -1, NULL, NULL), 0.75, 1e-9);
    /* class_id 3 at k 1: recall 1/1, precision 1/2; class 0: recall 0, precision NaN */
    CHECK_NEAR(topk_value(vg_metrics_recall_at_k, l1, 1, 1, 3, NULL, "recall_at_1_class3/true_positive_at_1_class3"), 1.0,
               1e-9);
    CHECK_NEAR(topk_value(vg_metrics_precision_at_k, l1, 1, 1, 3, NULL, NULL), 0.5, 1e-9);
    CHECK_NEAR(topk_value(vg_metrics_recall_at_k, l1, 1, 1, 0, NULL, NULL), 0.0, 0);
    CHECK(isnan(topk_value(vg_metrics_precision_at_k, l1, 1, 1, 0, NULL, NULL)));
    /* weights per row: row 0 (hit) weighs 3, row 1 (miss) 1 */
    double w[2] = {3, 1};
    CHECK_NEAR(topk_value(vg_metrics_recall_at_k, l1, 1, 1, -1, w, NULL), 0.75, 1e-9);
    /* value before any update: 0 / 0 */
    vg_graph *g = vg_graph_new();
    int64_t d2 = 2;
    vg_metric m = vg_metrics_recall_at_k(g, cst(g, VG_INT64, &d2, 1, l1), cst(g, VG_FLOAT, D24, 2, NULL), 1, -1, NULL);
    CHECK(m.value.op && strcmp(vg_op_name(m.value.op), "recall_at_1") == 0);
    CHECK(m.update.op && strcmp(vg_op_name(m.update.op), "recall_at_1/update") == 0);
    vg_metric m2 = vg_metrics_recall_at_k(g, cst(g, VG_INT64, &d2, 1, l1), cst(g, VG_FLOAT, D24, 2, NULL), 1, -1, NULL);
    CHECK(m2.value.op && strcmp(vg_op_name(m2.value.op), "recall_at_1_1") == 0);
    CHECK(vg_graph_op_by_name(g, "recall_at_1_1/true_positive_at_1") != NULL);
    sess_t s = open_sess(g);
    CHECK(isnan(eval_scalar(&s, m.value)));
    close_sess(&s);
    /* recall_at_top_k with the indices */
    g = vg_graph_new();
    double idx[2] = {3, 3};
    int64_t d21[2] = {2, 1};
    m = vg_metrics_recall_at_top_k(g, cst(g, VG_INT64, &d2, 1, l1), cst(g, VG_INT32, d21, 2, idx), 1, -1, NULL);
    check_metric(g, m, 0.5, 1e-9);
    /* bad input */
    g = vg_graph_new();
    int64_t d3 = 3;
    CHECK(vg_metrics_recall_at_k(g, cst(g, VG_INT64, &d3, 1, NULL), cst(g, VG_FLOAT, D24, 2, NULL), 1, -1, NULL)
              .value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "recall_at_k");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_metrics_precision_at_k(g, cst(g, VG_FLOAT, &d2, 1, NULL), cst(g, VG_FLOAT, D24, 2, NULL), 1, -1, NULL)
              .value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_metrics_precision_at_k(g, cst(g, VG_INT64, &d2, 1, NULL), cst(g, VG_FLOAT, D24, 2, NULL), 0, -1, NULL)
              .value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* mean_relative_error, mean_cosine_distance, percentage_below, mean_tensor,
 * mean_per_class_accuracy: hand-computed (percentage_below: TF's
 * testSomePresentOneUpdate) */
static void test_other_means(void) {
    int64_t d4 = 4, d5 = 5, d33[2] = {3, 3};
    double lab[4] = {1, 3, 2, 3}, pred[4] = {2, 4, 6, 8}, z[4] = {0};
    vg_graph *g = vg_graph_new();
    vg_output l = cst(g, VG_FLOAT, &d4, 1, lab);
    vg_metric m = vg_metrics_mean_relative_error(g, l, cst(g, VG_FLOAT, &d4, 1, pred), l, NULL);
    CHECK(vg_graph_op_by_name(g, "mean_relative_error/total") != NULL);
    check_metric(g, m, (1.0 / 1 + 1.0 / 3 + 4.0 / 2 + 5.0 / 3) / 4, 1e-6);
    g = vg_graph_new();
    check_metric(g, vg_metrics_mean_relative_error(g, cst(g, VG_FLOAT, &d4, 1, lab), cst(g, VG_FLOAT, &d4, 1, pred),
                                                   cst(g, VG_FLOAT, &d4, 1, z), NULL),
                 0.0, 0);

    double cl[9] = {1, 0, 0, 0, 0, -1, 1, 0, 0}, cp[9] = {1, 0, 0, 0, 0, 1, 0, 1, 0};
    g = vg_graph_new();
    m = vg_metrics_mean_cosine_distance(g, cst(g, VG_FLOAT, d33, 2, cl), cst(g, VG_FLOAT, d33, 2, cp), 1, NULL);
    CHECK(vg_graph_op_by_name(g, "mean_cosine_distance/count") != NULL);
    check_metric(g, m, 1.0 - (1 - 1 + 0) / 3.0, 1e-6);
    g = vg_graph_new();
    check_metric(g, vg_metrics_mean_cosine_distance(g, cst(g, VG_FLOAT, d33, 2, cl), cst(g, VG_FLOAT, d33, 2, cl), 1, NULL),
                 0.0, 1e-6);

    double pv[4] = {2, 4, 6, 8};
    const double thr[3] = {100, 7, 1}, want[3] = {1.0, 0.75, 0.0};
    for (int i = 0; i < 3; i++) {
        g = vg_graph_new();
        m = vg_metrics_percentage_below(g, cst(g, VG_INT32, &d4, 1, pv), thr[i], NULL);
        CHECK(m.value.op && strcmp(vg_op_name(m.value.op), "percentage_below_threshold/value") == 0);
        check_metric(g, m, want[i], 1e-6);
    }

    /* mean_tensor over two fed batches */
    g = vg_graph_new();
    int64_t d22[2] = {2, 2};
    vg_output x = vg_placeholder(g, VG_FLOAT, d22, 2, "x");
    m = vg_metrics_mean_tensor(g, x, NULL);
    CHECK(vg_graph_op_by_name(g, "mean/total_tensor") && vg_graph_op_by_name(g, "mean/count_tensor"));
    if (m.update.op) {
        sess_t s = open_sess(g);
        double b1[4] = {1, 2, 1, 2}, b2[4] = {3, 4, 9, 10}, mean[4] = {2, 3, 5, 6};
        vg_tensor *t1 = mk(VG_FLOAT, d22, 2, b1), *t2 = mk(VG_FLOAT, d22, 2, b2);
        vg_tensor_free(eval(&s, m.update, x, t1));
        vg_tensor *u = eval(&s, m.update, x, t2);
        check_values(u, VG_FLOAT, d22, 2, mean, 1e-6);
        vg_tensor_free(u);
        u = eval(&s, m.value, vg_out(NULL, 0), NULL);
        check_values(u, VG_FLOAT, d22, 2, mean, 1e-6);
        vg_tensor_free(u);
        vg_tensor_free(t1);
        vg_tensor_free(t2);
        close_sess(&s);
    } else {
        CHECK(0);
        vg_graph_free(g);
    }

    /* mean_per_class_accuracy: classes 0: 1/2, 1: 2/2, 2: 0/1; the update yields the
     * per-class accuracies (TF's update_op), the value their mean */
    double pl[5] = {0, 0, 1, 1, 2}, pp[5] = {0, 1, 1, 1, 0};
    const double w[5] = {1, 0, 1, 1, 1};
    for (int c = 0; c < 3; c++) {
        int nc = c == 1 ? 4 : 3;
        g = vg_graph_new();
        vg_metric_opts o = {c == 2 ? cst(g, VG_FLOAT, &d5, 1, w) : vg_out(NULL, 0), NULL, NULL, NULL};
        m = vg_metrics_mean_per_class_accuracy(g, cst(g, c == 1 ? VG_INT32 : VG_INT64, &d5, 1, pl),
                                               cst(g, c == 1 ? VG_FLOAT : VG_INT64, &d5, 1, pp), nc, &o);
        CHECK(vg_graph_op_by_name(g, "mean_accuracy/total") && vg_graph_op_by_name(g, "mean_accuracy/count"));
        /* weights: the wrong class-0 prediction weighs 0 -> class 0: 1/1 */
        const double per[3][4] = {{0.5, 1, 0, 0}, {0.5, 1, 0, 0}, {1, 1, 0, 0}};
        double mean = 0;
        for (int k = 0; k < nc; k++) mean += per[c][k] / nc;
        if (!m.update.op) {
            CHECK(0);
            vg_graph_free(g);
            continue;
        }
        sess_t s = open_sess(g);
        vg_tensor *u = eval(&s, m.update, vg_out(NULL, 0), NULL);
        check_elems(u, per[c], nc, 1e-6);
        vg_tensor_free(u);
        CHECK_NEAR(eval_scalar(&s, m.value), mean, 1e-6);
        close_sess(&s);
    }
    /* a label outside [0, num_classes) */
    g = vg_graph_new();
    double bad[5] = {0, 0, 1, 1, 3};
    m = vg_metrics_mean_per_class_accuracy(g, cst(g, VG_INT64, &d5, 1, bad), cst(g, VG_INT64, &d5, 1, pp), 3, NULL);
    check_update_invalid(g, m);
    /* shape errors */
    g = vg_graph_new();
    CHECK(vg_metrics_mean_cosine_distance(g, cst(g, VG_FLOAT, d33, 2, cl), cst(g, VG_FLOAT, d33, 2, cl), 2, NULL).value.op ==
          NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    int64_t unk = -1;
    CHECK(vg_metrics_mean_tensor(g, vg_placeholder(g, VG_FLOAT, &unk, 1, NULL), NULL).value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* SensitivityAtSpecificityTest / SpecificityAtSensitivityTest (metrics_test.py) and
 * PrecisionRecallThresholdsTest.testExtremeThresholds */
static double rate_of(bool sens_at_spec, const double *p, double target, const double *w, int nw) {
    vg_graph *g = vg_graph_new();
    static const double L[10] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    int64_t d10 = 10, dw = nw;
    vg_metric_opts o = {w ? cst(g, VG_FLOAT, &dw, 1, w) : vg_out(NULL, 0), NULL, NULL, NULL};
    vg_output l = cst(g, VG_INT64, &d10, 1, L), pr = cst(g, VG_FLOAT, &d10, 1, p);
    vg_metric m = sens_at_spec ? vg_metrics_sensitivity_at_specificity(g, l, pr, target, 200, &o)
                               : vg_metrics_specificity_at_sensitivity(g, l, pr, target, 200, &o);
    CHECK(m.value.op != NULL);
    if (!m.value.op) {
        vg_graph_free(g);
        return NAN;
    }
    CHECK(vg_graph_op_by_name(g, sens_at_spec ? "sensitivity_at_specificity/true_positives"
                                              : "specificity_at_sensitivity/false_positives") != NULL);
    return update_equals_value(g, m);
}

static void test_rates_at(void) {
    const double hi[10] = {0.0, 0.1, 0.2, 0.3, 0.4, 0.1, 0.45, 0.5, 0.8, 0.9};
    const double lo[10] = {0.0, 0.1, 0.2, 0.3, 0.4, 0.01, 0.02, 0.25, 0.26, 0.26};
    const double w10[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, w1[1] = {3};
    CHECK_NEAR(rate_of(true, hi, 0.8, NULL, 0), 0.8, 1e-6);
    CHECK_NEAR(rate_of(true, lo, 0.4, NULL, 0), 0.6, 1e-6);
    CHECK_NEAR(rate_of(true, lo, 0.4, w10, 10), 0.675, 1e-6);
    const double hs[10] = {0.1, 0.2, 0.4, 0.3, 0.0, 0.1, 0.45, 0.5, 0.8, 0.9};
    const double ls[10] = {0.1, 0.2, 0.4, 0.3, 0.0, 0.1, 0.2, 0.2, 0.26, 0.26};
    CHECK_NEAR(rate_of(false, hs, 0.8, NULL, 0), 1.0, 1e-6);
    CHECK_NEAR(rate_of(false, ls, 0.4, NULL, 0), 0.6, 1e-6);
    CHECK_NEAR(rate_of(false, ls, 0.4, w1, 1), 0.6, 1e-6);
    CHECK_NEAR(rate_of(false, ls, 0.4, w10, 10), 8.0 / 15.0, 1e-6);
    vg_graph *g = vg_graph_new();
    int64_t d4 = 4;
    CHECK(vg_metrics_sensitivity_at_specificity(g, cst(g, VG_INT64, &d4, 1, NULL), cst(g, VG_FLOAT, &d4, 1, NULL), 1.5,
                                                200, NULL)
              .value.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "`specificity` must be in the range [0, 1].");
    vg_graph_free(g);

    /* testExtremeThresholds */
    double p[4] = {1, 0, 1, 0}, l[4] = {0, 1, 1, 1}, t[2] = {-1.0, 2.0};
    const double prec[2] = {0.75, 0}, rec[2] = {1, 0};
    g = vg_graph_new();
    check_vector_metric(g, vg_metrics_precision_at_thresholds(g, cst(g, VG_INT64, D14, 2, l), cst(g, VG_FLOAT, D14, 2, p), t, 2, NULL),
                        prec, 2);
    g = vg_graph_new();
    check_vector_metric(g, vg_metrics_recall_at_thresholds(g, cst(g, VG_INT64, D14, 2, l), cst(g, VG_FLOAT, D14, 2, p), t, 2, NULL),
                        rec, 2);
}

static void test_null_and_sticky(void) {
    vg_metric m = vg_metrics_mean(NULL, vg_out(NULL, 0), NULL);
    CHECK(m.value.op == NULL);
    vg_graph *g = vg_graph_new();
    m = vg_metrics_accuracy(g, vg_out(NULL, 0), vg_const_f32(g, 1, NULL), NULL);
    CHECK(m.value.op == NULL);
    vg_status st;
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    /* sticky: later metrics fail too */
    CHECK(vg_metrics_mean(g, vg_const_f32(g, 1, NULL), NULL).value.op == NULL);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_mean);
    RUN_TEST(test_accuracy);
    RUN_TEST(test_errors_mse_mae);
    RUN_TEST(test_counts);
    RUN_TEST(test_precision_recall);
    RUN_TEST(test_at_thresholds);
    RUN_TEST(test_auc);
    RUN_TEST(test_mean_iou);
    RUN_TEST(test_top_k);
    RUN_TEST(test_other_means);
    RUN_TEST(test_rates_at);
    RUN_TEST(test_null_and_sticky);
    TEST_MAIN_END();
}
