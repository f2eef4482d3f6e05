/* test_optimizers_ext.c - Adagrad, Adadelta, Ftrl (+ l2_shrinkage: ApplyFtrlV2) and
 * ProximalGradientDescent through vg_optimizer_apply_gradients, with the expected values
 * of TF 1.15's adagrad_test.py (testBasic, testMinimizeSparseResourceVariable through
 * Gather's gradient), adadelta_test.py (doTestBasic's reference recurrence, slots
 * checked each step), ftrl_test.py (testFtrlwithoutRegularization[2], testFtrlWithL1,
 * testFtrlWithL1_L2, testFtrlWithL1_L2_L2Shrinkage) and proximal_gradient_descent_test.py
 * (without regularization [2], WithL1_L2); float32 and float64; slot names; TF's default
 * arguments; constructor argument errors; compute_gradients/apply_gradients with
 * GATE_GRAPH. */
#include "op_test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "train_fixture.h"

typedef struct setup {
    vg_graph *g;
    vg_variable v0, v1;
    vg_op *train;
} setup;

static vg_output vec(vg_graph *g, vg_dtype dt, double a, double b) {
    double v[2] = {a, b};
    int64_t d = 2;
    return cst(g, dt, &d, 1, v);
}

/* var0, var1 and constant gradients applied by opt (freed here). */
static setup build(vg_optimizer *opt, vg_dtype dt, const double init[4], const double grads[4]) {
    setup s;
    s.g = vg_graph_new();
    s.v0 = vg_variable_new(s.g, "var0", vec(s.g, dt, init[0], init[1]), VG_VAR_TRAINABLE);
    s.v1 = vg_variable_new(s.g, "var1", vec(s.g, dt, init[2], init[3]), VG_VAR_TRAINABLE);
    vg_output gr[2] = {vec(s.g, dt, grads[0], grads[1]), vec(s.g, dt, grads[2], grads[3])};
    vg_output vars[2] = {s.v0.ref, s.v1.ref};
    s.train = vg_optimizer_apply_gradients(opt, s.g, gr, vars, 2, vg_out(NULL, 0), NULL);
    vg_optimizer_free(opt);
    vg_status st;
    if (s.train) CHECK_OK(vg_graph_status(s.g, &st), &st);
    return s;
}

static void fetch2(vg_session *sess, vg_output x, double out[2]) {
    vg_status st;
    vg_tensor *t = NULL;
    out[0] = out[1] = NAN;
    if (!sess) return;
    CHECK_OK(vg_session_run1(sess, x, &t, &st), &st);
    if (!t) return;
    out[0] = get(t, 0);
    out[1] = get(t, 1);
    vg_tensor_free(t);
}

static void step(vg_session *sess, vg_op *train) {
    vg_status st;
    if (sess) CHECK_OK(vg_session_run_targets(sess, &train, 1, &st), &st);
}

/* Runs steps and compares var0/var1 with want[4]. */
static void run_case(vg_optimizer *opt, vg_dtype dt, const double init[4], const double grads[4], int steps,
                     const double want[4], double tol) {
    setup s = build(opt, dt, init, grads);
    if (!s.train) {
        vg_graph_free(s.g);
        CHECK(0);
        return;
    }
    vg_session *sess = initialized_session(s.g);
    double a[2];
    fetch2(sess, s.v0.read, a);
    CHECK_NEAR(a[0], init[0], 0);
    for (int i = 0; i < steps; i++) step(sess, s.train);
    double v0[2], v1[2];
    fetch2(sess, s.v0.read, v0);
    fetch2(sess, s.v1.read, v1);
    for (int i = 0; i < 2; i++) {
        CHECK_NEAR(v0[i], want[i], tol);
        CHECK_NEAR(v1[i], want[2 + i], tol);
    }
    free_session_graph(sess, s.g);
}

static const double G_SMALL[4] = {0.1, 0.1, 0.01, 0.01}, G_FTRL[4] = {0.1, 0.2, 0.01, 0.02};
static const double I12_34[4] = {1, 2, 3, 4}, I12_43[4] = {1, 2, 4, 3}, I00[4] = {0, 0, 0, 0};

static void test_adagrad(void) {
    static const double want[4] = {-1.6026098728179932, -0.6026098728179932, 2.715679168701172, 3.715679168701172};
    run_case(vg_optimizer_new_adagrad(3.0, 0.1), VG_FLOAT, I12_34, G_SMALL, 3, want, 1e-6);
    /* TF's expected values are float32 results: float64 agrees to float32 precision */
    run_case(vg_optimizer_new_adagrad_default(3.0), VG_DOUBLE, I12_34, G_SMALL, 3, want, 1e-7);
    /* names: slot "<var>/Adagrad", apply "Adagrad/update_var0/ApplyAdagrad" */
    setup s = build(vg_optimizer_new_adagrad(3.0, 0.1), VG_FLOAT, I12_34, G_SMALL);
    CHECK(vg_graph_op_by_name(s.g, "var0/Adagrad") && vg_graph_op_by_name(s.g, "var1/Adagrad"));
    vg_op *apply = vg_graph_op_by_name(s.g, "Adagrad/update_var0/ApplyAdagrad");
    CHECK(apply && strcmp(vg_op_type(apply), "ApplyAdagrad") == 0);
    CHECK(s.train && strcmp(vg_op_name(s.train), "Adagrad") == 0);
    vg_session *sess = initialized_session(s.g);
    double acc[2];
    fetch2(sess, vg_out(vg_graph_op_by_name(s.g, "var0/Adagrad"), 0), acc);
    CHECK_NEAR(acc[0], 0.1, 1e-7);
    step(sess, s.train);
    fetch2(sess, vg_out(vg_graph_op_by_name(s.g, "var0/Adagrad"), 0), acc);
    CHECK_NEAR(acc[0], 0.1 + 0.01, 1e-6);
    free_session_graph(sess, s.g);
}

/* testMinimizeSparseResourceVariable: loss = (embedding_lookup([var0], [0]) x)^2 through
 * Gather's (dense) gradient; one step of Adagrad(1.0) takes var0 to about [[0, 1]]. */
static void test_adagrad_gather_minimize(void) {
    vg_graph *g = vg_graph_new();
    int64_t d12[2] = {1, 2}, d21[2] = {2, 1}, d1 = 1;
    double v0[2] = {1, 2}, xv[2] = {4, 5}, idx[1] = {0};
    vg_variable var0 = vg_variable_new(g, "var0", cst(g, VG_FLOAT, d12, 2, v0), VG_VAR_TRAINABLE);
    vg_output emb = vg_gather(g, var0.read, cst(g, VG_INT32, &d1, 1, idx), 0, "embedding_lookup");
    vg_output pred = vg_matmul(g, emb, cst(g, VG_FLOAT, d21, 2, xv), false, false, NULL);
    vg_output loss = vg_mul(g, pred, pred, "loss");
    vg_optimizer *opt = vg_optimizer_new_adagrad_default(1.0);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
    vg_optimizer_free(opt);
    CHECK(train != NULL);
    vg_session *sess = initialized_session(g);
    step(sess, train);
    double out[2];
    fetch2(sess, var0.read, out);
    /* g = 2 * 14 * [4, 5]; var -= g / sqrt(0.1 + g^2) */
    double g0 = 112, g1 = 140;
    CHECK_NEAR(out[0], 1 - g0 / sqrt(0.1 + g0 * g0), 1e-6);
    CHECK_NEAR(out[1], 2 - g1 / sqrt(0.1 + g1 * g1), 1e-6);
    CHECK_NEAR(out[0], 0, 0.01);
    CHECK_NEAR(out[1], 1, 0.01);
    free_session_graph(sess, g);
}

/* adadelta_test.doTestBasic */
static void test_adadelta(void) {
    const double grads[3] = {0.2, 0.1, 0.01}, lrs[3] = {1.0, 0.5, 0.1};
    const double rho = 0.95, eps = 1e-8;
    for (int gi = 0; gi < 3; gi++)
        for (int li = 0; li < 3; li++) {
            double gr = grads[gi], lr = lrs[li];
            double gv[4] = {gr, gr, gr, gr};
            setup s = build(vg_optimizer_new_adadelta(lr, rho, eps), VG_FLOAT, I12_34, gv);
            if (!s.train) {
                vg_graph_free(s.g);
                CHECK(0);
                continue;
            }
            if (gi == 0 && li == 0) {
                CHECK(vg_graph_op_by_name(s.g, "var0/Adadelta") && vg_graph_op_by_name(s.g, "var0/Adadelta_1"));
                CHECK(vg_graph_op_by_name(s.g, "Adadelta/lr") && vg_graph_op_by_name(s.g, "Adadelta/rho"));
                CHECK(vg_graph_op_by_name(s.g, "Adadelta/update_var1/ApplyAdadelta") != NULL);
            }
            vg_session *sess = initialized_session(s.g);
            vg_output accum = vg_out(vg_graph_op_by_name(s.g, "var0/Adadelta"), 0);
            vg_output accum_update = vg_out(vg_graph_op_by_name(s.g, "var0/Adadelta_1"), 0);
            double acc = 0, accu = 0, tot = 0;
            for (int k = 0; k < 4; k++) {
                step(sess, s.train);
                acc = acc * rho + gr * gr * (1 - rho);
                double upd = sqrt(accu + eps) * (1.0 / sqrt(acc + eps)) * gr;
                accu = accu * rho + upd * upd * (1 - rho);
                tot += upd * lr;
                double a[2], u[2], v0[2], v1[2];
                fetch2(sess, accum, a);
                fetch2(sess, accum_update, u);
                fetch2(sess, s.v0.read, v0);
                fetch2(sess, s.v1.read, v1);
                CHECK_NEAR(a[0], acc, 1e-5);
                CHECK_NEAR(u[1], accu, 1e-4);
                CHECK_NEAR(v0[0], 1 - tot, 1e-3);
                CHECK_NEAR(v0[1], 2 - tot, 1e-3);
                CHECK_NEAR(v1[0], 3 - tot, 1e-3);
            }
            free_session_graph(sess, s.g);
        }
    /* TF's defaults: lr 0.001, rho 0.95, epsilon 1e-8, one step from zero slots:
     * update = sqrt(eps) / sqrt(0.05 g^2 + eps) * g */
    double gv[4] = {0.5, 0.5, 0.5, 0.5}, gsq = 0.25 * 0.05;
    double u = sqrt(1e-8) / sqrt(gsq + 1e-8) * 0.5;
    double want[4] = {1 - 0.001 * u, 2 - 0.001 * u, 3 - 0.001 * u, 4 - 0.001 * u};
    run_case(vg_optimizer_new_adadelta_default(), VG_DOUBLE, I12_34, gv, 1, want, 1e-12);
}

static void test_ftrl(void) {
    static const double w1[4] = {-2.60260963, -4.29698515, -0.28432083, -0.56694895};
    run_case(vg_optimizer_new_ftrl(3.0, -0.5, 0.1, 0, 0, 0), VG_FLOAT, I00, G_FTRL, 3, w1, 1e-5);
    run_case(vg_optimizer_new_ftrl_default(3.0), VG_DOUBLE, I00, G_FTRL, 3, w1, 1e-6);
    static const double w2[4] = {-2.55607247, -3.98729396, -0.28232238, -0.56096673};
    run_case(vg_optimizer_new_ftrl(3.0, -0.5, 0.1, 0, 0, 0), VG_FLOAT, I12_43, G_FTRL, 3, w2, 1e-5);
    static const double wl1[4] = {-7.66718769, -10.91273689, -0.93460727, -1.86147261};
    run_case(vg_optimizer_new_ftrl(3.0, -0.5, 0.1, 0.001, 0, 0), VG_FLOAT, I12_43, G_FTRL, 10, wl1, 1e-5);
    static const double wl12[4] = {-0.24059935, -0.46829352, -0.02406147, -0.04830509};
    run_case(vg_optimizer_new_ftrl(3.0, -0.5, 0.1, 0.001, 2.0, 0), VG_FLOAT, I12_43, G_FTRL, 10, wl12, 1e-5);
    static const double wshr[4] = {-0.22578995, -0.44345796, -0.14378493, -0.13229476};
    run_case(vg_optimizer_new_ftrl(3.0, -0.5, 0.1, 0.001, 2.0, 0.1), VG_FLOAT, I12_43, G_FTRL, 10, wshr, 1e-5);

    /* names: "<var>/Ftrl" (accum), "<var>/Ftrl_1" (linear); V2 with shrinkage */
    setup s = build(vg_optimizer_new_ftrl(3.0, -0.5, 0.1, 0.001, 2.0, 0.1), VG_FLOAT, I12_43, G_FTRL);
    CHECK(vg_graph_op_by_name(s.g, "var0/Ftrl") && vg_graph_op_by_name(s.g, "var0/Ftrl_1"));
    CHECK(vg_graph_op_by_name(s.g, "Ftrl/update_var0/ApplyFtrlV2") != NULL);
    CHECK(vg_graph_op_by_name(s.g, "Ftrl/learning_rate_power") != NULL);
    vg_graph_free(s.g);
    s = build(vg_optimizer_new_ftrl_default(3.0), VG_FLOAT, I12_43, G_FTRL);
    CHECK(vg_graph_op_by_name(s.g, "Ftrl/update_var1/ApplyFtrl") != NULL);
    vg_graph_free(s.g);

    /* constructor arguments TF rejects */
    const double bad[4][5] = {{0.5, 0.1, 0, 0, 0}, {-0.5, -0.1, 0, 0, 0}, {-0.5, 0.1, -1, 0, 0}, {-0.5, 0.1, 0, 0, -1}};
    const char *msgs[4] = {"learning_rate_power", "initial_accumulator_value", "l1_regularization_strength",
                           "l2_shrinkage_regularization_strength"};
    for (int i = 0; i < 4; i++) {
        vg_optimizer *o = vg_optimizer_new_ftrl(3.0, bad[i][0], bad[i][1], bad[i][2], bad[i][3], bad[i][4]);
        setup b = build(o, VG_FLOAT, I00, G_FTRL);
        vg_status st;
        CHECK(b.train == NULL);
        CHECK_STATUS(vg_graph_status(b.g, &st), &st, VG_INVALID_ARGUMENT, msgs[i]);
        CHECK_STR_CONTAINS(st.msg, "Ftrl");
        vg_graph_free(b.g);
    }
    vg_optimizer *o = vg_optimizer_new_adagrad(1.0, 0.0);
    setup b = build(o, VG_FLOAT, I00, G_FTRL);
    vg_status st;
    CHECK(b.train == NULL);
    CHECK_STATUS(vg_graph_status(b.g, &st), &st, VG_INVALID_ARGUMENT, "initial_accumulator_value must be positive");
    vg_graph_free(b.g);
}

/* The kernels' own run-time checks, through the builders (a bad lr fed at run time). */
static void test_ftrl_kernel_checks(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vec(g, VG_FLOAT, 1, 2), 0);
    vg_variable a = vg_variable_new(g, "a", vec(g, VG_FLOAT, 0.1, 0.1), 0);
    vg_variable l = vg_variable_new(g, "l", vec(g, VG_FLOAT, 0, 0), 0);
    vg_output lr = vg_placeholder(g, VG_FLOAT, NULL, 0, "lr");
    vg_output up = vg_apply_ftrl(g, v.ref, a.ref, l.ref, vec(g, VG_FLOAT, 0.1, 0.2), lr, vg_const_f32(g, 0, NULL),
                                 vg_const_f32(g, 0, NULL), vg_const_f32(g, -0.5f, NULL), false, NULL);
    CHECK(up.op != NULL);
    vg_session *sess = initialized_session(g);
    vg_status st;
    double bad = -1;
    vg_tensor *lv = mk(VG_FLOAT, NULL, 0, &bad), *out = NULL;
    CHECK(vg_session_run(sess, NULL, &lr, &lv, 1, &up, &out, 1, NULL, 0, NULL, &st) == VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "lr is not a positive scalar");
    vg_tensor_free(lv);
    vg_tensor_free(out);
    free_session_graph(sess, g);
    /* shape mismatch of a slot at build time */
    g = vg_graph_new();
    v = vg_variable_new(g, "v", vec(g, VG_FLOAT, 1, 2), 0);
    int64_t d3 = 3;
    vg_variable acc3 = vg_variable_new(g, "a", vg_const_fill(g, VG_FLOAT, &d3, 1, 0.1, NULL), 0);
    up = vg_apply_adagrad(g, v.ref, acc3.ref, vg_const_f32(g, 1, NULL), vec(g, VG_FLOAT, 1, 1), false, true, NULL);
    CHECK(up.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

static void test_proximal_gd(void) {
    static const double w0[4] = {-0.9, -1.8, -0.09, -0.18};
    run_case(vg_optimizer_new_proximal_gd(3.0, 0, 0), VG_FLOAT, I00, G_FTRL, 3, w0, 1e-5);
    static const double w2[4] = {0.1, 0.2, 3.91, 2.82};
    run_case(vg_optimizer_new_proximal_gd(3.0, 0, 0), VG_DOUBLE, I12_43, G_FTRL, 3, w2, 1e-9);
    static const double wl[4] = {-0.0495, -0.0995, -0.0045, -0.0095};
    run_case(vg_optimizer_new_proximal_gd(3.0, 0.001, 2.0), VG_FLOAT, I12_43, G_FTRL, 10, wl, 1e-5);
    setup s = build(vg_optimizer_new_proximal_gd(3.0, 0.001, 2.0), VG_FLOAT, I12_43, G_FTRL);
    CHECK(vg_graph_op_by_name(s.g, "ProximalGradientDescent/update_var0/ApplyProximalGradientDescent") != NULL);
    CHECK(vg_graph_op_by_name(s.g, "ProximalGradientDescent/l1_regularization_strength") != NULL);
    vg_graph_free(s.g);
}

/* TF's defaults in one call, and compute_gradients + apply_gradients with GATE_GRAPH */
static void test_defaults_and_gating(void) {
    vg_optimizer *adam = vg_optimizer_new_adam_default();
    CHECK(adam && strcmp(vg_optimizer_name(adam), "Adam") == 0);
    /* one Adam step with TF's defaults moves each weight by lr * g / (|g| + eps') = 0.001 */
    double gv[4] = {0.5, -0.5, 2, -2};
    double want[4] = {1 - 0.001, 2 + 0.001, 3 - 0.001, 4 + 0.001};
    run_case(adam, VG_DOUBLE, I12_34, gv, 1, want, 1e-7);
    vg_optimizer *rms = vg_optimizer_new_rmsprop_default(0.1);
    CHECK(rms && strcmp(vg_optimizer_name(rms), "RMSProp") == 0);
    /* ms = 1 + 0.1 (g^2 - 1); var -= 0.1 g / sqrt(ms + 1e-10) */
    double g2 = 0.25, ms = 1 + 0.1 * (g2 - 1), d = 0.1 * 0.5 / sqrt(ms + 1e-10);
    double ms2 = 1 + 0.1 * (4 - 1), d2 = 0.1 * 2 / sqrt(ms2 + 1e-10);
    double want_r[4] = {1 - d, 2 + d, 3 - d2, 4 + d2};
    run_case(rms, VG_DOUBLE, I12_34, gv, 1, want_r, 1e-9);

    vg_graph *g = vg_graph_new();
    vg_variable w = vg_variable_new(g, "w", vec(g, VG_FLOAT, 1, 2), VG_VAR_TRAINABLE);
    vg_variable b = vg_variable_new(g, "b", vec(g, VG_FLOAT, 3, 4), VG_VAR_TRAINABLE);
    vg_output loss = vg_reduce_sum(g, vg_add(g, vg_square(g, w.read, NULL), b.read, NULL), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_adagrad(0.5, 0.1);
    vg_optimizer_set_gate_gradients(opt, VG_GATE_GRAPH);
    vg_output grads[2] = {{0}}, vars[2] = {w.ref, b.ref};
    vg_status st;
    CHECK_OK(vg_optimizer_compute_gradients(opt, g, loss, vars, 2, grads, &st), &st);
    CHECK(grads[0].op && strcmp(vg_op_name(grads[0].op), "tuple/control_dependency") == 0);
    CHECK(grads[1].op && strcmp(vg_op_name(grads[1].op), "tuple/control_dependency_1") == 0);
    CHECK(vg_graph_op_by_name(g, "tuple/group_deps") != NULL);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_op *train = vg_optimizer_apply_gradients(opt, g, grads, vars, 2, gs, "train");
    vg_optimizer_free(opt);
    CHECK(train && strcmp(vg_op_name(train), "train") == 0);
    vg_session *sess = initialized_session(g);
    step(sess, train);
    double wv[2], bv[2];
    fetch2(sess, w.read, wv);
    fetch2(sess, b.read, bv);
    /* grad w = 2w = [2, 4]; grad b = [1, 1] */
    CHECK_NEAR(wv[0], 1 - 0.5 * 2 / sqrt(0.1 + 4), 1e-6);
    CHECK_NEAR(wv[1], 2 - 0.5 * 4 / sqrt(0.1 + 16), 1e-6);
    CHECK_NEAR(bv[0], 3 - 0.5 * 1 / sqrt(0.1 + 1), 1e-6);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(sess, gs, &t, &st), &st);
    CHECK(t && get(t, 0) == 1);
    vg_tensor_free(t);
    free_session_graph(sess, g);
}

/* Unique: TF's doc example, int64 out_idx, floats (-0.0 == 0.0), errors */
static void test_unique(void) {
    vg_graph *g = vg_graph_new();
    double x[9] = {1, 1, 2, 4, 4, 4, 7, 8, 8};
    int64_t d9 = 9;
    vg_op *u = vg_unique(g, cst(g, VG_INT32, &d9, 1, x), VG_INT32, NULL);
    CHECK(u && strcmp(vg_op_type(u), "Unique") == 0);
    double y[5] = {1, 2, 4, 7, 8}, idx[9] = {0, 0, 1, 2, 2, 2, 3, 4, 4};
    int64_t d5 = 5;
    expect(run(g, vg_out(u, 0)), VG_INT32, &d5, 1, y);
    expect(run(g, vg_out(u, 1)), VG_INT32, &d9, 1, idx);
    double xf[5] = {3.5, -0.0, 3.5, 0.0, -1}, yf[3] = {3.5, 0, -1}, idf[5] = {0, 1, 0, 1, 2};
    int64_t d3 = 3;
    vg_op *uf = vg_unique(g, cst(g, VG_FLOAT, &d5, 1, xf), VG_INT64, NULL);
    expect(run(g, vg_out(uf, 0)), VG_FLOAT, &d3, 1, yf);
    expect(run(g, vg_out(uf, 1)), VG_INT64, &d5, 1, idf);
    int64_t d0 = 0; /* empty */
    vg_op *u0 = vg_unique(g, vg_const_array(g, VG_INT64, &d0, 1, NULL, NULL), VG_INT32, NULL);
    expect(run(g, vg_out(u0, 0)), VG_INT64, &d0, 1, NULL);
    CHECK(vg_unique(g, cst(g, VG_INT64, NULL, 0, x), VG_INT32, NULL) == NULL); /* a scalar */
    vg_status st;
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT); /* the scalar input */
    CHECK_STR_CONTAINS(st.msg, "unique expects a 1D vector");
    vg_graph_free(g);
}

/* SparseApplyAdagrad directly: adagrad_test.testSparseBasic (var [[1], [2]] with
 * IndexedSlices([0.1], [0]) and var [[3], [4]] with ([0.01], [1]), 3 steps of lr 3),
 * repeated indices applied in order, an index out of range. */
static void test_sparse_apply_kernels(void) {
    vg_graph *g = vg_graph_new();
    int64_t d21[2] = {2, 1}, d11[2] = {1, 1}, d1 = 1;
    double i0[2] = {1, 2}, i1[2] = {3, 4}, acc[2] = {0.1, 0.1}, g0[1] = {0.1}, g1[1] = {0.01}, ix0[1] = {0}, ix1[1] = {1};
    vg_variable v0 = vg_variable_new(g, "var0", cst(g, VG_FLOAT, d21, 2, i0), 0);
    vg_variable v1 = vg_variable_new(g, "var1", cst(g, VG_FLOAT, d21, 2, i1), 0);
    vg_variable a0 = vg_variable_new(g, "acc0", cst(g, VG_FLOAT, d21, 2, acc), 0);
    vg_variable a1 = vg_variable_new(g, "acc1", cst(g, VG_FLOAT, d21, 2, acc), 0);
    vg_output lr = vg_const_f32(g, 3.0f, "lr");
    vg_output u0 = vg_sparse_apply_adagrad(g, v0.ref, a0.ref, lr, cst(g, VG_FLOAT, d11, 2, g0),
                                           cst(g, VG_INT32, &d1, 1, ix0), false, true, NULL);
    vg_output u1 = vg_sparse_apply_adagrad(g, v1.ref, a1.ref, lr, cst(g, VG_FLOAT, d11, 2, g1),
                                           cst(g, VG_INT64, &d1, 1, ix1), false, true, NULL);
    CHECK(u0.op && u1.op);
    vg_session *sess = initialized_session(g);
    for (int k = 0; k < 3; k++) {
        step(sess, u0.op);
        step(sess, u1.op);
    }
    double r0[2], r1[2];
    fetch2(sess, v0.read, r0);
    fetch2(sess, v1.read, r1);
    CHECK_NEAR(r0[0], -1.6026098728179932, 1e-6);
    CHECK_NEAR(r0[1], 2.0, 0);
    CHECK_NEAR(r1[0], 3.0, 0);
    CHECK_NEAR(r1[1], 3.715679168701172, 1e-6);
    free_session_graph(sess, g);

    /* a repeated index: ProximalGD on row 1 twice, in order; an index out of range
     * changes nothing */
    g = vg_graph_new();
    int64_t d32[2] = {3, 2}, d22[2] = {2, 2}, d2 = 2;
    double iv[6] = {1, 2, 3, 4, 5, 6}, gv[4] = {1, 1, 2, 2}, ix[2] = {1, 1}, bad[2] = {1, 3};
    vg_variable v = vg_variable_new(g, "v", cst(g, VG_DOUBLE, d32, 2, iv), 0);
    vg_output ixp = vg_placeholder(g, VG_INT32, &d2, 1, "ix");
    vg_output up = vg_sparse_apply_proximal_gradient_descent(g, v.ref, vg_const_f64(g, 0.5, NULL),
                                                             vg_const_f64(g, 0, NULL), vg_const_f64(g, 1.0, NULL),
                                                             cst(g, VG_DOUBLE, d22, 2, gv), ixp, false, NULL);
    sess = initialized_session(g);
    vg_tensor *ixv = mk(VG_INT32, &d2, 1, ix), *out = NULL;
    vg_status st;
    CHECK_OK(vg_session_run(sess, NULL, &ixp, &ixv, 1, &up, &out, 1, NULL, 0, NULL, &st), &st);
    /* row 1: ((3 - 0.5) / 1.5 - 1.0) / 1.5, ((4 - 0.5) / 1.5 - 1.0) / 1.5 */
    double want[6] = {1, 2, ((3 - 0.5) / 1.5 - 1.0) / 1.5, ((4 - 0.5) / 1.5 - 1.0) / 1.5, 5, 6};
    check_values(out, VG_DOUBLE, d32, 2, want, 1e-12);
    vg_tensor_free(out);
    vg_tensor_free(ixv);
    ixv = mk(VG_INT32, &d2, 1, bad);
    out = NULL;
    CHECK(vg_session_run(sess, NULL, &ixp, &ixv, 1, &up, &out, 1, NULL, 0, NULL, &st) == VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Index 3 at offset 1 in indices is out of range");
    vg_tensor_free(out);
    vg_tensor_free(ixv);
    vg_tensor *now = NULL;
    CHECK_OK(vg_session_run1(sess, v.read, &now, &st), &st);
    check_values(now, VG_DOUBLE, d32, 2, want, 1e-12);
    vg_tensor_free(now);
    vg_session_free(sess);
    /* grad rows that do not match var's row shape */
    int64_t d23[2] = {2, 3};
    CHECK(vg_sparse_apply_proximal_gradient_descent(g, v.ref, vg_const_f64(g, 0.5, NULL), vg_const_f64(g, 0, NULL),
                                                    vg_const_f64(g, 0, NULL), cst(g, VG_DOUBLE, d23, 2, NULL), ixp,
                                                    false, NULL)
              .op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* The optimizers' sparse path through Gather's gradient: only the gathered rows (and
 * their slots) change, the repeated index's rows are summed first, and the touched rows
 * equal the dense update with the dense gradient. */
typedef vg_optimizer *(*mk_opt)(void);
static vg_optimizer *mk_adagrad(void) { return vg_optimizer_new_adagrad(0.5, 0.1); }
static vg_optimizer *mk_adadelta(void) { return vg_optimizer_new_adadelta(1.0, 0.9, 1e-6); }
static vg_optimizer *mk_ftrl(void) { return vg_optimizer_new_ftrl(0.5, -0.5, 0.1, 0.01, 0.1, 0); }
static vg_optimizer *mk_ftrl_v2(void) { return vg_optimizer_new_ftrl(0.5, -0.7, 0.1, 0.01, 0.1, 0.05); }
static vg_optimizer *mk_pgd(void) { return vg_optimizer_new_proximal_gd(0.5, 0.01, 0.1); }
static vg_optimizer *mk_momentum(void) { return vg_optimizer_new_momentum(0.5, 0.9, true); }
static vg_optimizer *mk_rmsprop(void) { return vg_optimizer_new_rmsprop(0.1, 0.9, 0.5, 1e-6); }

static const double EMB[12] = {1, -2, 3, 0.5, 0.25, -1, 2, 2, -3, 0.1, 0.2, 0.3};
static const double WG[9] = {1, 2, 3, -1, 0.5, 2, 0.25, -1.5, 1};

/* lookup: through tf.nn.embedding_lookup (Gather then Identity) instead of a bare Gather */
static void sparse_vs_dense(mk_opt make, const char *opname, int nslots, bool lookup) {
    int64_t d43[2] = {4, 3}, d33[2] = {3, 3}, d3 = 3;
    double ids[3] = {2, 0, 2};
    /* A: loss = sum(gather(emb, [2, 0, 2]) * W) -> sparse path */
    vg_graph *ga = vg_graph_new();
    vg_variable ea = vg_variable_new(ga, "emb", cst(ga, VG_FLOAT, d43, 2, EMB), VG_VAR_TRAINABLE);
    vg_output idt = cst(ga, VG_INT32, &d3, 1, ids);
    vg_output rows = lookup ? vg_embedding_lookup(ga, ea.read, idt, NULL) : vg_gather(ga, ea.read, idt, 0, "embedding_lookup");
    vg_output loss = vg_reduce_sum(ga, vg_mul(ga, rows, cst(ga, VG_FLOAT, d33, 2, WG), NULL), NULL, -1, false, "loss");
    vg_optimizer *oa = make();
    const char *oname = vg_optimizer_name(oa);
    vg_op *ta = vg_optimizer_minimize(oa, ga, loss, NULL, 0, vg_out(NULL, 0), NULL);
    vg_optimizer_free(oa);
    CHECK(ta != NULL);
    char want_op[128];
    snprintf(want_op, sizeof want_op, "%s/update_emb/%s", oname, opname);
    CHECK(vg_graph_op_by_name(ga, want_op) != NULL);
    if (!vg_graph_op_by_name(ga, want_op)) fprintf(stderr, "missing %s\n", want_op);
    snprintf(want_op, sizeof want_op, "%s/update_emb/Unique", oname);
    CHECK(vg_graph_op_by_name(ga, want_op) != NULL);
    /* B: the same update with the dense gradient (row 2: W0 + W2, row 0: W1) */
    double dense[12] = {0};
    for (int c = 0; c < 3; c++) {
        dense[0 * 3 + c] = WG[3 + c];
        dense[2 * 3 + c] = WG[c] + WG[6 + c];
    }
    vg_graph *gb = vg_graph_new();
    vg_variable eb = vg_variable_new(gb, "emb", cst(gb, VG_FLOAT, d43, 2, EMB), VG_VAR_TRAINABLE);
    vg_output gd = cst(gb, VG_FLOAT, d43, 2, dense);
    vg_optimizer *ob = make();
    vg_op *tb = vg_optimizer_apply_gradients(ob, gb, &gd, &eb.ref, 1, vg_out(NULL, 0), NULL);
    vg_optimizer_free(ob);
    CHECK(tb != NULL);
    if (!ta || !tb) {
        vg_graph_free(ga);
        vg_graph_free(gb);
        return;
    }
    vg_session *sa = initialized_session(ga), *sb = initialized_session(gb);
    for (int k = 0; k < 3; k++) {
        step(sa, ta);
        step(sb, tb);
    }
    vg_status st;
    vg_tensor *va = NULL, *vb = NULL;
    CHECK_OK(vg_session_run1(sa, ea.read, &va, &st), &st);
    CHECK_OK(vg_session_run1(sb, eb.read, &vb, &st), &st);
    if (va && vb) {
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 3; c++) {
                int i = r * 3 + c;
                if (r == 0 || r == 2) CHECK_NEAR(get(va, i), get(vb, i), 1e-5);
                else CHECK_NEAR(get(va, i), (float)EMB[i], 0); /* untouched */
                if (r == 2) CHECK(fabs(get(va, i) - EMB[i]) > 1e-4); /* and the touched rows moved */
            }
    }
    vg_tensor_free(va);
    vg_tensor_free(vb);
    /* the untouched rows of the slots keep their initial values */
    for (int sl = 0; sl < nslots; sl++) {
        char name[64];
        snprintf(name, sizeof name, sl ? "emb/%s_1" : "emb/%s", oname);
        vg_op *slot = vg_graph_op_by_name(ga, name);
        CHECK(slot != NULL);
        vg_tensor *t = NULL;
        if (slot) CHECK_OK(vg_session_run1(sa, vg_out(slot, 0), &t, &st), &st);
        if (t) {
            double init = (strcmp(oname, "Adagrad") == 0 || (strcmp(oname, "Ftrl") == 0 && sl == 0)) ? 0.1
                          : strcmp(oname, "RMSProp") == 0 && sl == 0                                   ? 1.0
                                                                                                       : 0.0;
            CHECK_NEAR(get(t, 3), init, 1e-7);
            CHECK_NEAR(get(t, 11), init, 1e-7);
        }
        vg_tensor_free(t);
    }
    vg_session_free(sa);
    free_session_graph(sb, ga);
    vg_graph_free(gb);
}

static void test_sparse_optimizers(void) {
    sparse_vs_dense(mk_adagrad, "SparseApplyAdagrad", 1, false);
    sparse_vs_dense(mk_adadelta, "SparseApplyAdadelta", 2, false);
    sparse_vs_dense(mk_ftrl, "SparseApplyFtrl", 2, false);
    sparse_vs_dense(mk_ftrl_v2, "SparseApplyFtrlV2", 2, false);
    sparse_vs_dense(mk_pgd, "SparseApplyProximalGradientDescent", 0, false);
    sparse_vs_dense(mk_momentum, "SparseApplyMomentum", 1, false);
    sparse_vs_dense(mk_rmsprop, "SparseApplyRMSProp", 2, false);
    /* vg_embedding_lookup's Identity passes the Gather gradient on: still sparse */
    sparse_vs_dense(mk_adagrad, "SparseApplyAdagrad", 1, true);
    sparse_vs_dense(mk_momentum, "SparseApplyMomentum", 1, true);
}

int main(void) {
    RUN_TEST(test_adagrad);
    RUN_TEST(test_adagrad_gather_minimize);
    RUN_TEST(test_adadelta);
    RUN_TEST(test_ftrl);
    RUN_TEST(test_ftrl_kernel_checks);
    RUN_TEST(test_proximal_gd);
    RUN_TEST(test_defaults_and_gating);
    RUN_TEST(test_unique);
    RUN_TEST(test_sparse_apply_kernels);
    RUN_TEST(test_sparse_optimizers);
    TEST_MAIN_END();
}
