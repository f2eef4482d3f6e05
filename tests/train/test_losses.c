/* test_losses.c - tf.losses (vigil/losses.h). Mirrors TF 1.15's losses_test.py:
 * AbsoluteDifferenceLossTest (testNonZeroLoss 5.5, python-scalar weight, batch weights
 * [[1.2], [0]] -> 5.6, sample weights -> 16.6, all-zero weights -> 0), MeanSquaredErrorTest
 * (49.5), HingeLossTest (testAllOutsideMargin, testSomeInsideMargin 0.175),
 * SigmoidCrossEntropyLossTest / SoftmaxCrossEntropyLossTest (all correct, label
 * smoothing), SparseSoftmaxCrossEntropyLossTest (testNonZeroLoss 10), CosineDistanceLossTest
 * (testPartiallyCorrectWithIntegerValues 1), the Reduction modes, the LOSSES collection,
 * get_total_loss and the l1/l2 regularizers; finite-difference gradients. */
#include "gradcheck.h"
#include "op_test_util.h"
#include "status_fixture.h"

static const double PRED[6] = {4, 8, 12, 8, 1, 3}, LAB[6] = {1, 9, 2, -5, -2, 6};
static const int64_t D23[2] = {2, 3};

static double run_scalar(vg_graph *g, vg_output y) {
    vg_tensor *t = run(g, y);
    double r = t ? vg_tensor_scalar(t) : NAN;
    vg_tensor_free(t);
    return r;
}

static void test_absolute_difference_and_weights(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = cst(g, VG_FLOAT, D23, 2, PRED), l = cst(g, VG_FLOAT, D23, 2, LAB);
    vg_output loss = vg_losses_absolute_difference(g, l, p, NULL);
    CHECK(loss.op && strcmp(vg_op_name(loss.op), "absolute_difference/value") == 0);
    CHECK_NEAR(run_scalar(g, loss), 5.5, 1e-6);
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, p, p, NULL)), 0.0, 0);
    vg_loss_opts o = {.weights = vg_const_f32(g, 2.3f, NULL), .reduction = VG_REDUCTION_SUM_BY_NONZERO_WEIGHTS};
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, l, p, &o)), 5.5 * 2.3, 1e-5);
    int64_t d21[2] = {2, 1};
    double bw[2] = {1.2, 0.0};
    o.weights = cst(g, VG_FLOAT, d21, 2, bw);
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, l, p, &o)), 5.6, 1e-5);
    /* the other reductions with the same weights: sum 16.8 */
    o.reduction = VG_REDUCTION_SUM;
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, l, p, &o)), 16.8, 1e-5);
    o.reduction = VG_REDUCTION_MEAN;
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, l, p, &o)), 16.8 / 3.6, 1e-5);
    o.reduction = VG_REDUCTION_SUM_OVER_BATCH_SIZE;
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, l, p, &o)), 16.8 / 6, 1e-5);
    o.reduction = VG_REDUCTION_NONE;
    double none[6] = {3 * 1.2, 1 * 1.2, 10 * 1.2, 0, 0, 0};
    expect_tol(run(g, vg_losses_absolute_difference(g, l, p, &o)), VG_FLOAT, D23, 2, none, 1e-6);
    double sw[6] = {3, 6, 5, 0, 4, 2}, zw[6] = {0};
    vg_loss_opts o2 = {cst(g, VG_FLOAT, D23, 2, sw), NULL, NULL, 0};
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, l, p, &o2)), 16.6, 1e-5);
    o2.weights = cst(g, VG_FLOAT, D23, 2, zw);
    CHECK_NEAR(run_scalar(g, vg_losses_absolute_difference(g, l, p, &o2)), 0.0, 0);
    /* incompatible shapes; weights that cannot broadcast */
    int64_t d3[1] = {3};
    CHECK(vg_losses_absolute_difference(g, cst(g, VG_FLOAT, d3, 1, LAB), p, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "are incompatible");
    vg_graph_free(g);
    g = vg_graph_new();
    p = cst(g, VG_FLOAT, D23, 2, PRED), l = cst(g, VG_FLOAT, D23, 2, LAB);
    int64_t d32[2] = {3, 2};
    vg_loss_opts o3 = {cst(g, VG_FLOAT, d32, 2, sw), NULL, NULL, 0};
    CHECK(vg_losses_absolute_difference(g, l, p, &o3).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "weights can not be broadcast to values.");
    vg_graph_free(g);
}

static void test_pointwise_losses(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = cst(g, VG_FLOAT, D23, 2, PRED), l = cst(g, VG_FLOAT, D23, 2, LAB);
    CHECK_NEAR(run_scalar(g, vg_losses_mean_squared_error(g, l, p, NULL)), 49.5, 1e-5);
    /* huber by hand: |e| = 0.5 -> 0.125; |e| = 3 -> 0.5 + 2 */
    int64_t d2[1] = {2};
    double hp[2] = {0.5, 3.0}, hl[2] = {0, 0};
    CHECK_NEAR(run_scalar(g, vg_losses_huber_loss(g, cst(g, VG_FLOAT, d2, 1, hl), cst(g, VG_FLOAT, d2, 1, hp), 1.0,
                                                 NULL)),
               (0.125 + 2.5) / 2, 1e-6);
    /* hinge */
    int64_t d4[1] = {4}, d41[2] = {4, 1};
    double lo[4] = {1.2, -1.4, -1.0, 2.1}, la[4] = {1, 0, 0, 1};
    CHECK_NEAR(run_scalar(g, vg_losses_hinge_loss(g, cst(g, VG_FLOAT, d4, 1, la), cst(g, VG_FLOAT, d4, 1, lo), NULL)),
               0.0, 1e-7);
    double lo2[4] = {-0.7, -1.4, 1.4, 0.6}, la2[4] = {0, 0, 1, 1};
    CHECK_NEAR(run_scalar(g, vg_losses_hinge_loss(g, cst(g, VG_FLOAT, d41, 2, la2), cst(g, VG_FLOAT, d41, 2, lo2),
                                                  NULL)),
               0.175, 1e-6);
    /* log loss by hand */
    double lp[2] = {0.8, 0.3}, ll[2] = {1, 0};
    CHECK_NEAR(run_scalar(g, vg_losses_log_loss(g, cst(g, VG_FLOAT, d2, 1, ll), cst(g, VG_FLOAT, d2, 1, lp), 1e-7,
                                                NULL)),
               (-log(0.8 + 1e-7) - log(0.7 + 1e-7)) / 2, 1e-6);
    /* cosine distance */
    int64_t d323[3] = {3, 2, 3};
    double cp[18] = {1, 0, 0, 0, 0, -1, 1, 0, 0, 1, 0, 0, 0, 0, -1, 1, 0, 0};
    double cl[18] = {1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0};
    vg_output cd = vg_losses_cosine_distance(g, cst(g, VG_FLOAT, d323, 3, cl), cst(g, VG_FLOAT, d323, 3, cp), 2, NULL);
    CHECK(cd.op && strncmp(vg_op_name(cd.op), "cosine_distance_loss/", 21) == 0);
    CHECK_NEAR(run_scalar(g, cd), 1.0, 1e-6);
    vg_graph_free(g);
}

static void test_cross_entropy_losses(void) {
    vg_graph *g = vg_graph_new();
    int64_t d33[2] = {3, 3}, d13[2] = {1, 3}, d3[1] = {3};
    double logits[9] = {100, -100, -100, -100, 100, -100, -100, -100, 100}, eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    CHECK_NEAR(run_scalar(g, vg_losses_sigmoid_cross_entropy(g, cst(g, VG_FLOAT, d33, 2, eye),
                                                             cst(g, VG_FLOAT, d33, 2, logits), 0, NULL)),
               0.0, 1e-6);
    double l1[3] = {100, -100, -100}, z1[3] = {1, 0, 1};
    CHECK_NEAR(run_scalar(g, vg_losses_sigmoid_cross_entropy(g, cst(g, VG_INT32, d13, 2, z1),
                                                             cst(g, VG_FLOAT, d13, 2, l1), 0.1, NULL)),
               (100.0 + 50.0 * 0.1) / 3.0, 1e-4);
    double oh[3] = {1, 0, 0};
    vg_output sm = vg_losses_softmax_cross_entropy(g, cst(g, VG_INT32, d13, 2, oh), cst(g, VG_FLOAT, d13, 2, l1),
                                                   0.1, NULL);
    CHECK_NEAR(run_scalar(g, sm), 400.0 * 0.1 / 3.0, 1e-3);
    CHECK_NEAR(run_scalar(g, vg_losses_softmax_cross_entropy(g, cst(g, VG_FLOAT, d33, 2, eye),
                                                             cst(g, VG_FLOAT, d33, 2, logits), 0, NULL)),
               0.0, 1e-6);
    double sl[9] = {10, 0, 0, 0, 10, 0, 0, 0, 10}, lab[3] = {2, 0, 1};
    CHECK_NEAR(run_scalar(g, vg_losses_sparse_softmax_cross_entropy(g, cst(g, VG_INT32, d3, 1, lab),
                                                                    cst(g, VG_FLOAT, d33, 2, sl), NULL)),
               10.0, 1e-4);
    vg_graph_free(g);
}

static void test_collections_and_regularizers(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = cst(g, VG_FLOAT, D23, 2, PRED), l = cst(g, VG_FLOAT, D23, 2, LAB);
    vg_output a = vg_losses_absolute_difference(g, l, p, NULL);
    vg_output m = vg_losses_mean_squared_error(g, l, p, NULL);
    vg_loss_opts no_coll = {{NULL, 0}, "scoped", "", 0};
    vg_output s = vg_losses_absolute_difference(g, l, p, &no_coll);
    CHECK(s.op && strncmp(vg_op_name(s.op), "scoped/", 7) == 0);
    int n = 0;
    const vg_output *c = vg_graph_collection(g, VG_LOSSES, &n);
    CHECK_EQ_INT(n, 2);
    if (n == 2) CHECK(c[0].op == a.op && c[1].op == m.op);
    int64_t d3[1] = {3};
    double w[3] = {1, -2, 3};
    vg_output wv = cst(g, VG_FLOAT, d3, 1, w);
    vg_output r2 = vg_l2_regularizer(g, 0.5, wv), r1 = vg_l1_regularizer(g, 0.5, wv);
    CHECK(r2.op && strcmp(vg_op_name(r2.op), "l2_regularizer") == 0);
    CHECK_NEAR(run_scalar(g, r2), 3.5, 1e-6);
    CHECK_NEAR(run_scalar(g, r1), 3.0, 1e-6);
    CHECK(vg_l2_regularizer(g, 0.0, wv).op == NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st); /* scale 0 is not an error */
    CHECK_NEAR(run_scalar(g, vg_losses_get_regularization_loss(g, NULL)), 0.0, 0);
    vg_graph_add_to_collection(g, VG_REGULARIZATION_LOSSES, r2);
    vg_graph_add_to_collection(g, VG_REGULARIZATION_LOSSES, r1);
    vg_output rl = vg_losses_get_regularization_loss(g, NULL);
    CHECK(rl.op && strcmp(vg_op_name(rl.op), "total_regularization_loss") == 0);
    CHECK_NEAR(run_scalar(g, rl), 6.5, 1e-6);
    vg_output total = vg_losses_get_total_loss(g, true, NULL);
    CHECK(total.op && strcmp(vg_op_name(total.op), "total_loss") == 0);
    CHECK_NEAR(run_scalar(g, total), 5.5 + 49.5 + 6.5, 1e-4);
    CHECK_NEAR(run_scalar(g, vg_losses_get_total_loss(g, false, "t2")), 55.0, 1e-4);
    CHECK(vg_l1_regularizer(g, -1.0, wv).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_losses_get_total_loss(g, true, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "No losses found");
    vg_graph_free(g);
}

/* The losses are reduced in float32 as TF does (float64 inputs are cast), so the central
 * differences use a step of 1e-2 and a matching tolerance. */
static void test_loss_gradients(void) {
    vg_graph *g = vg_graph_new();
    double pv[6] = {0.4, 1.8, -1.2, 0.8, 0.1, 0.3};
    vg_tensor *tp;
    vg_output p = ph(g, VG_DOUBLE, D23, 2, pv, &tp);
    vg_output l = cst(g, VG_DOUBLE, D23, 2, LAB);
    double sw[6] = {3, 6, 5, 0, 4, 2};
    vg_loss_opts o = {cst(g, VG_DOUBLE, D23, 2, sw), NULL, NULL, 0};
    CHECK_EQ_INT(vg_gradcheck(g, &p, &tp, 1, vg_losses_mean_squared_error(g, l, p, &o), 1e-2, 1e-2), 0);
    double hl[6] = {0.5, 1.0, -1.0, 0.0, 2.0, 0.2};
    CHECK_EQ_INT(vg_gradcheck(g, &p, &tp, 1, vg_losses_huber_loss(g, cst(g, VG_DOUBLE, D23, 2, hl), p, 1.0, NULL), 1e-2,
                              1e-2), 0);
    double oh[6] = {0, 1, 0, 1, 0, 0};
    CHECK_EQ_INT(vg_gradcheck(g, &p, &tp, 1,
                              vg_losses_softmax_cross_entropy(g, cst(g, VG_DOUBLE, D23, 2, oh), p, 0.1, NULL), 1e-2,
                              1e-2), 0);
    vg_tensor_free(tp);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_absolute_difference_and_weights);
    RUN_TEST(test_pointwise_losses);
    RUN_TEST(test_cross_entropy_losses);
    RUN_TEST(test_collections_and_regularizers);
    RUN_TEST(test_loss_gradients);
    TEST_MAIN_END();
}
