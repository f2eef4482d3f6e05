/* test_nn_ext_ops.c - Softplus, Softsign, Elu, Selu, Relu6, LeakyRelu (+ their *Grad
 * ops through tf.gradients), L2Loss and tf.nn.sigmoid_cross_entropy_with_logits:
 * forward values against hand formulas, finite-difference gradients, error paths.
 * Mirrors TF 1.15's softplus_op_test.py (testNumbers incl. the thresholds),
 * softsign_op_test.py, relu_op_test.py (Relu6Test, EluTest, SeluTest, LeakyReluTest:
 * testNpLeakyRelu alpha 0.1 / default 0.2), nn_test.py L2LossTest and
 * nn_impl / nn_xent_test.py SigmoidCrossEntropyWithLogitsTest (testLogisticOutput,
 * testShapeError, testGradient) and lrn_op_test.py (LRN / LRNGrad). */
#include "gradcheck.h"
#include "op_test_util.h"
#include "kernels_fixture.h"

static const double SELU_SCALE = 1.0507009873554804934193349852946;
static const double SELU_ALPHA = 1.6732632423543772848170429916717;

static double np_softplus(double x) { return log(1 + exp(x)); }
static double np_softsign(double x) { return x / (1 + fabs(x)); }
static double np_elu(double x) { return x < 0 ? exp(x) - 1 : x; }
static double np_selu(double x) { return x < 0 ? SELU_SCALE * SELU_ALPHA * (exp(x) - 1) : SELU_SCALE * x; }
static double np_relu6(double x) { return x < 0 ? 0 : x > 6 ? 6 : x; }
/* alpha is a float attr (as in TF), so even the float64 kernel multiplies by (double)0.2f */
static double np_leaky02(double x) { return x > 0 ? x : (double)0.2f * x; }

static vg_output leaky02(vg_graph *g, vg_output x, const char *name) { return vg_leaky_relu(g, x, 0.2f, name); }

static void test_activations_forward_and_grads(void) {
    int64_t d[2] = {2, 5};
    /* away from the kinks at 0 and 6 (finite differences) */
    double x[10] = {-9.0, -2.1, -0.7, -0.3, 0.25, 0.8, 1.9, 4.5, 6.7, 12.0};
    double (*ref[6])(double) = {np_softplus, np_softsign, np_elu, np_selu, np_relu6, np_leaky02};
    vg_output (*build[6])(vg_graph *, vg_output, const char *) = {vg_softplus, vg_softsign, vg_elu,
                                                                   vg_selu, vg_relu6, leaky02};
    const char *types[6] = {"Softplus", "Softsign", "Elu", "Selu", "Relu6", "LeakyRelu"};
    for (int k = 0; k < 6; k++) {
        vg_graph *g = vg_graph_new();
        double e[10];
        for (int i = 0; i < 10; i++) e[i] = ref[k](x[i]);
        vg_output y = build[k](g, cst(g, VG_DOUBLE, d, 2, x), NULL);
        CHECK(y.op && strcmp(vg_op_type(y.op), types[k]) == 0);
        expect_tol(run(g, y), VG_DOUBLE, d, 2, e, 1e-14);
        expect_tol(run(g, build[k](g, cst(g, VG_FLOAT, d, 2, x), NULL)), VG_FLOAT, d, 2, e, 2e-6);
        vg_tensor *tx;
        vg_output px = ph(g, VG_DOUBLE, d, 2, x, &tx);
        int bad = vg_gradcheck(g, &px, &tx, 1, build[k](g, px, NULL), 1e-6, 1e-7);
        if (bad) fprintf(stderr, "  gradient of %s\n", types[k]);
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(tx);
        vg_graph_free(g);
    }
}

static void test_softplus_thresholds(void) {
    /* softplus_op_test testNumbers: values near log(eps) + 2 for float32 */
    vg_graph *g = vg_graph_new();
    double th = log(1.1920928955078125e-07) + 2; /* ~ -13.94 */
    int64_t d[1] = {6};
    double x[6] = {th - 1, th + 0.5, -th - 0.5, -th + 1, 40, -40}, e[6];
    for (int i = 0; i < 6; i++) e[i] = x[i] > 30 ? x[i] : np_softplus(x[i]);
    expect_tol(run(g, vg_softplus(g, cst(g, VG_FLOAT, d, 1, x), NULL)), VG_FLOAT, d, 1, e, 1e-6);
    vg_graph_free(g);
}

static void test_leaky_relu_alpha(void) {
    /* LeakyReluTest.testNpLeakyRelu: [[-0.9, 0.7, -0.5, 0.3, -0.1], [0.1, -0.3, 0.5, -0.7, 0.9]], alpha 0.1 */
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 5};
    double x[10] = {-0.9, 0.7, -0.5, 0.3, -0.1, 0.1, -0.3, 0.5, -0.7, 0.9};
    double e[10] = {-0.09, 0.7, -0.05, 0.3, -0.01, 0.1, -0.03, 0.5, -0.07, 0.9};
    vg_output y = vg_leaky_relu(g, cst(g, VG_FLOAT, d, 2, x), 0.1f, NULL);
    float alpha = 0;
    CHECK(vg_op_attr_float(y.op, "alpha", &alpha) && fabsf(alpha - 0.1f) < 1e-7f);
    expect_tol(run(g, y), VG_FLOAT, d, 2, e, 1e-6);
    vg_tensor *tx;
    vg_output px = ph(g, VG_DOUBLE, d, 2, x, &tx);
    vg_output y2 = vg_leaky_relu(g, px, 0.1f, NULL);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, y2, 1e-6, 1e-7), 0);
    /* the gradient op carries alpha */
    vg_op *lg = NULL;
    for (int i = 0; i < vg_graph_num_ops(g); i++)
        if (strcmp(vg_op_type(vg_graph_op(g, i)), "LeakyReluGrad") == 0) lg = vg_graph_op(g, i);
    CHECK(lg != NULL);
    CHECK(lg && vg_op_attr_float(lg, "alpha", &alpha) && fabsf(alpha - 0.1f) < 1e-7f);
    vg_tensor_free(tx);
    /* integer input: INVALID_ARGUMENT naming the op */
    vg_status st;
    CHECK(vg_elu(g, vg_const_i32(g, 1, NULL), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Elu");
    vg_graph_free(g);
}

static void test_relu6_grad_uses_output(void) {
    /* Relu6Grad masks 0 < x < 6 (hand values, including the saturated region) */
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {4};
    double x[4] = {-1, 3, 7, 5.5}, eg[4] = {0, 1, 0, 1};
    vg_output px = vg_placeholder(g, VG_DOUBLE, d, 1, "x");
    vg_output y = vg_relu6(g, px, NULL), dx;
    vg_status st;
    CHECK_OK(vg_gradients(g, &y, 1, &px, 1, NULL, &dx, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *tx = mk(VG_DOUBLE, d, 1, x), *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, &px, &tx, 1, &dx, &out, 1, NULL, 0, NULL, &st), &st);
    expect_tol(out, VG_DOUBLE, d, 1, eg, 0);
    kt_teardown(g, s, (vg_tensor *[]){tx}, 1, NULL, 0);
}

static void test_l2_loss(void) {
    /* L2LossTest.testL2Loss: [[1, 2, 3], [4, 5, 6]] -> 45.5 (sum of squares / 2) */
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    double x[6] = {1, 2, 3, 4, 5, 6}, e[1] = {45.5};
    expect_tol(run(g, vg_l2_loss(g, cst(g, VG_FLOAT, d, 2, x), NULL)), VG_FLOAT, NULL, 0, e, 0);
    expect_tol(run(g, vg_l2_loss(g, cst(g, VG_DOUBLE, d, 2, x), NULL)), VG_DOUBLE, NULL, 0, e, 0);
    vg_tensor *tx;
    double xv[6] = {0.3, -1.2, 2.2, 0.1, -0.5, 1.7};
    vg_output px = ph(g, VG_DOUBLE, d, 2, xv, &tx);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_l2_loss(g, px, NULL), 1e-6, 1e-7), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

static void test_sigmoid_xent(void) {
    /* SigmoidCrossEntropyWithLogitsTest._Inputs: x = [-100, -2, -2, 0, 2, 2, 2, 100], y = [0, 0, 1, 0, 0, 1, 0.5, 1]
     * loss = -y log(sigmoid(x)) - (1 - y) log(1 - sigmoid(x)), computed stably here by hand */
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {8};
    double x[8] = {-100, -2, -2, 0, 2, 2, 2, 100}, y[8] = {0, 0, 1, 0, 0, 1, 0.5, 1}, e[8];
    for (int i = 0; i < 8; i++) {
        double lp = -log1p(exp(-fabs(x[i]))) + (x[i] < 0 ? x[i] : 0); /* log sigmoid(x) */
        double lq = -log1p(exp(-fabs(x[i]))) + (x[i] > 0 ? -x[i] : 0); /* log(1 - sigmoid(x)) */
        e[i] = -y[i] * lp - (1 - y[i]) * lq;
    }
    vg_output loss = vg_sigmoid_cross_entropy_with_logits(g, cst(g, VG_DOUBLE, d, 1, y),
                                                          cst(g, VG_DOUBLE, d, 1, x), NULL);
    CHECK(loss.op && strcmp(vg_op_name(loss.op), "logistic_loss") == 0);
    CHECK(vg_graph_op_by_name(g, "logistic_loss/Log1p") != NULL);
    expect_tol(run(g, loss), VG_DOUBLE, d, 1, e, 1e-12);
    vg_output loss2 = vg_sigmoid_cross_entropy_with_logits(g, cst(g, VG_FLOAT, d, 1, y),
                                                           cst(g, VG_FLOAT, d, 1, x), NULL);
    CHECK(loss2.op && strcmp(vg_op_name(loss2.op), "logistic_loss_1") == 0);
    expect_tol(run(g, loss2), VG_FLOAT, d, 1, e, 1e-6);
    vg_graph_free(g);

    /* testGradient: w.r.t. logits and labels */
    g = vg_graph_new();
    int64_t d2[2] = {3, 2};
    double xl[6] = {-2.3, 0.4, 1.1, -0.6, 3.0, 0.05}, yl[6] = {0.1, 0.9, 0.5, 0, 1, 0.3};
    vg_tensor *tx, *ty;
    vg_output px = ph(g, VG_DOUBLE, d2, 2, xl, &tx), py = ph(g, VG_DOUBLE, d2, 2, yl, &ty);
    vg_output ins[2] = {px, py};
    vg_tensor *vals[2] = {tx, ty};
    CHECK_EQ_INT(vg_gradcheck(g, ins, vals, 2, vg_sigmoid_cross_entropy_with_logits(g, py, px, NULL), 1e-6, 1e-7), 0);
    vg_tensor_free(tx), vg_tensor_free(ty);
    vg_graph_free(g);

    /* testShapeError: labels [3] vs logits [2] -> INVALID_ARGUMENT */
    g = vg_graph_new();
    int64_t d3[1] = {3}, dd2[1] = {2};
    double v[3] = {1, 2, 3};
    vg_status st;
    CHECK(vg_sigmoid_cross_entropy_with_logits(g, cst(g, VG_FLOAT, d3, 1, v), cst(g, VG_FLOAT, dd2, 1, v),
                                               NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "logits and labels must have the same shape");
    vg_graph_free(g);
}

/* lrn_op_test.py: _LRN's loops as the reference (float attrs, so the reference uses the
 * float-rounded values), testCompute / testGradients. */
static void lrn_ref(const double *x, double *y, int64_t rows, int64_t depth, int r, float bias, float alpha, float beta) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t d = 0; d < depth; d++) {
            int64_t lo = d - r < 0 ? 0 : d - r, hi = d + r + 1 > depth ? depth : d + r + 1;
            double s = 0;
            for (int64_t k = lo; k < hi; k++) s += x[i * depth + k] * x[i * depth + k];
            y[i * depth + d] = x[i * depth + d] / pow((double)bias + (double)alpha * s, (double)beta);
        }
}

static void test_lrn(void) {
    int64_t d[4] = {2, 3, 3, 7};
    double x[126], y[126];
    for (int i = 0; i < 126; i++) x[i] = sin(i * 1.3) * 1.5;
    struct { int r; float bias, alpha, beta; } cases[3] = {{5, 1.0f, 1.0f, 0.5f}, {2, 1.2f, 0.3f, 0.75f},
                                                         {4, 1.0f, 0.001f / 9.0f, 0.75f}};
    for (int c = 0; c < 3; c++) {
        vg_graph *g = vg_graph_new();
        lrn_ref(x, y, 18, 7, cases[c].r, cases[c].bias, cases[c].alpha, cases[c].beta);
        expect_tol(run(g, vg_lrn(g, cst(g, VG_DOUBLE, d, 4, x), cases[c].r, cases[c].bias, cases[c].alpha,
                                   cases[c].beta, NULL)),
                  VG_DOUBLE, d, 4, y, 1e-12);
        expect_tol(run(g, vg_lrn(g, cst(g, VG_FLOAT, d, 4, x), cases[c].r, cases[c].bias, cases[c].alpha,
                                   cases[c].beta, NULL)),
                  VG_FLOAT, d, 4, y, 1e-5);
        int64_t ds[4] = {1, 2, 2, 7};
        vg_tensor *tx;
        vg_output px = ph(g, VG_DOUBLE, ds, 4, x, &tx);
        CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_lrn(g, px, cases[c].r, cases[c].bias, cases[c].alpha, cases[c].beta, NULL),
                                  1e-6, 1e-6), 0);
        vg_tensor_free(tx);
        vg_graph_free(g);
    }
    vg_graph *g = vg_graph_new();
    int64_t d2[2] = {2, 3};
    vg_status st;
    CHECK(vg_lrn(g, cst(g, VG_FLOAT, d2, 2, x), 5, 1, 1, 0.5f, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "4-dimensional");
    vg_graph_free(g);
}

/* LRNGrad against TF's CPU loop (lrn_op.cc's LRNGradOp, the one vigil's kernel had
 * before it was regrouped into prefix sums): depth 64 as the CIFAR-10 tutorial, radii 4
 * and 30 (windows clipped at both ends), beta 0.75 (the square-root path) and 0.6 (pow),
 * float64 and float32, gradients fed through tf.gradients' grad_ys. */
static void lrn_grad_ref(const double *g, const double *x, const double *y, double *dx, int64_t rows, int64_t depth,
                         int r, double bias, double alpha, double beta) {
    memset(dx, 0, sizeof(double) * (size_t)(rows * depth));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < depth; j++) {
            int64_t lo = j - r < 0 ? 0 : j - r, hi = j + r + 1 > depth ? depth : j + r + 1;
            double norm = 0;
            for (int64_t k = lo; k < hi; k++) norm += x[i * depth + k] * x[i * depth + k];
            norm = alpha * norm + bias;
            for (int64_t k = lo; k < hi; k++) {
                double d = -2.0 * alpha * beta * x[i * depth + k] * y[i * depth + j] / norm;
                if (k == j) d += pow(norm, -beta);
                dx[i * depth + k] += d * g[i * depth + j];
            }
        }
}

static void test_lrn_grad_wide(void) {
    enum { N = 2, H = 3, W = 2, D = 64 };
    const int64_t rows = N * H * W, n = rows * D, d[4] = {N, H, W, D};
    double *x = malloc(sizeof(double) * n), *gy = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * n),
           *dx = malloc(sizeof(double) * n);
    for (int64_t i = 0; i < n; i++) x[i] = sin(i * 0.7) * 2, gy[i] = cos(i * 0.3);
    struct { int r; float bias, alpha, beta; } cases[3] = {{4, 1.0f, 0.001f / 9.0f, 0.75f}, {30, 2.0f, 0.05f, 0.6f},
                                                         {4, 1.0f, 0.3f, 0.75f}};
    for (int c = 0; c < 3; c++)
        for (int f32 = 0; f32 < 2; f32++) {
            vg_dtype dt = f32 ? VG_FLOAT : VG_DOUBLE;
            lrn_ref(x, y, rows, D, cases[c].r, cases[c].bias, cases[c].alpha, cases[c].beta);
            lrn_grad_ref(gy, x, y, dx, rows, D, cases[c].r, cases[c].bias, cases[c].alpha, cases[c].beta);
            vg_graph *g = vg_graph_new();
            vg_output xo = cst(g, dt, d, 4, x), go = cst(g, dt, d, 4, gy);
            vg_output yo = vg_lrn(g, xo, cases[c].r, cases[c].bias, cases[c].alpha, cases[c].beta, NULL), gx;
            vg_status st;
            CHECK_OK(vg_gradients(g, &yo, 1, &xo, 1, &go, &gx, &st), &st);
            expect_tol(run(g, gx), dt, d, 4, dx, f32 ? 2e-5 : 1e-11);
            vg_graph_free(g);
        }
    free(x), free(gy), free(y), free(dx);
}

int main(void) {
    RUN_TEST(test_lrn);
    RUN_TEST(test_lrn_grad_wide);
    RUN_TEST(test_activations_forward_and_grads);
    RUN_TEST(test_softplus_thresholds);
    RUN_TEST(test_leaky_relu_alpha);
    RUN_TEST(test_relu6_grad_uses_output);
    RUN_TEST(test_l2_loss);
    RUN_TEST(test_sigmoid_xent);
    TEST_MAIN_END();
}
