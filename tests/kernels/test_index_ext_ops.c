/* test_index_ext_ops.c - TopKV2, InTopKV2, GatherNd, ScatterNd, TensorScatterUpdate:
 * forward values, finite-difference gradients, error paths. Mirrors TF 1.15's
 * topk_op_test.py (testTop1, testTop2, testTopAll, ties keep the lower index),
 * in_topk_op_test.py (testInTop1, testInTop2, testInTop2Tie, testInTopNan,
 * testBadTarget), gather_nd_op_test.py (testSimpleDtype, testHigherRankParams,
 * testBadIndices) and scatter_nd_ops_test.py (testSimple, duplicate indices add,
 * TensorScatterUpdate testUpdate, the bad-index checks, gradients). */
#include "gradcheck.h"
#include "op_test_util.h"
#include "kernels_fixture.h"

static void test_top_k(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 4};
    double x[8] = {0.1, 0.3, 0.2, 0.4, 0.1, 0.3, 0.4, 0.2};
    vg_output c = cst(g, VG_FLOAT, d, 2, x);
    vg_op *t1 = vg_top_k(g, c, 1, true, NULL);
    int64_t d1[2] = {2, 1}, d2[2] = {2, 2};
    double v1[2] = {0.4, 0.4}, i1[2] = {3, 2};
    expect_tol(run(g, vg_out(t1, 0)), VG_FLOAT, d1, 2, v1, 1e-7);
    expect_tol(run(g, vg_out(t1, 1)), VG_INT32, d1, 2, i1, 0);
    vg_op *t2 = vg_top_k(g, c, 2, true, NULL);
    double v2[4] = {0.4, 0.3, 0.4, 0.3}, i2[4] = {3, 1, 2, 1};
    expect_tol(run(g, vg_out(t2, 0)), VG_FLOAT, d2, 2, v2, 1e-7);
    expect_tol(run(g, vg_out(t2, 1)), VG_INT32, d2, 2, i2, 0);
    vg_op *t4 = vg_top_k(g, c, 4, true, NULL);
    double i4[8] = {3, 1, 2, 0, 2, 1, 3, 0};
    expect_tol(run(g, vg_out(t4, 1)), VG_INT32, d, 2, i4, 0);
    /* ties: the lower index first */
    int64_t dt[1] = {4};
    double tie[4] = {0.1, 0.3, 0.3, 0.2}, it[2] = {1, 2};
    int64_t dt2[1] = {2};
    expect_tol(run(g, vg_out(vg_top_k(g, cst(g, VG_DOUBLE, dt, 1, tie), 2, true, NULL), 1)), VG_INT32, dt2, 1, it, 0);
    /* int32 input */
    double iv[4] = {5, -2, 9, 7}, ie[2] = {9, 7};
    expect_tol(run(g, vg_out(vg_top_k(g, cst(g, VG_INT32, dt, 1, iv), 2, true, NULL), 0)), VG_INT32, dt2, 1, ie, 0);
    vg_status st;
    CHECK(vg_top_k(g, c, 5, true, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "input must have at least k columns. Had 4, needed 5");
    vg_graph_free(g);
    /* gradient of the values (distinct inputs) */
    g = vg_graph_new();
    double xv[8] = {0.5, -1.0, 2.0, 0.25, 3.0, 1.5, -0.5, 0.75};
    vg_tensor *tx;
    vg_output px = ph(g, VG_DOUBLE, d, 2, xv, &tx);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_out(vg_top_k(g, px, 2, true, NULL), 0), 1e-6, 1e-8), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

static void test_in_top_k(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 4}, d2[1] = {2};
    double p[8] = {0.1, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3, 0.4};
    struct { double pred[8]; double tgt[2]; int k; double want[2]; } cases[] = {
        {{0.1, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3, 0.4}, {3, 1}, 1, {1, 0}},
        {{0.1, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3, 0.4}, {0, 2}, 2, {0, 1}},
        {{0.1, 0.3, 0.2, 0.2, 0.1, 0.3, 0.2, 0.2}, {2, 3}, 2, {1, 1}},
        {{0.1, NAN, 0.2, 0.4, 0.1, 0.2, 0.3, INFINITY}, {0, 2}, 2, {0, 0}},
        {{0.1, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3, 0.4}, {0, 80000}, 2, {0, 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vg_output y = vg_in_top_k(g, cst(g, VG_FLOAT, d, 2, cases[k].pred), cst(g, VG_INT32, d2, 1, cases[k].tgt),
                                  cases[k].k, NULL);
        expect_tol(run(g, y), VG_BOOL, d2, 1, cases[k].want, 0);
        y = vg_in_top_k(g, cst(g, VG_FLOAT, d, 2, cases[k].pred), cst(g, VG_INT64, d2, 1, cases[k].tgt),
                        cases[k].k, NULL);
        expect_tol(run(g, y), VG_BOOL, d2, 1, cases[k].want, 0);
    }
    vg_status st;
    int64_t d3[1] = {3};
    double t3[3] = {0, 1, 2};
    CHECK(vg_in_top_k(g, cst(g, VG_FLOAT, d, 2, p), cst(g, VG_INT32, d3, 1, t3), 1, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "must match length of targets");
    vg_graph_free(g);
}

static void test_gather_nd(void) {
    vg_graph *g = vg_graph_new();
    int64_t dp[3] = {2, 2, 2};
    double p[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    vg_output params = cst(g, VG_FLOAT, dp, 3, p);
    int64_t di[2] = {2, 2}, d22[2] = {2, 2};
    double i1[4] = {0, 1, 1, 0}, e1[4] = {3, 4, 5, 6};
    expect_tol(run(g, vg_gather_nd(g, params, cst(g, VG_INT32, di, 2, i1), NULL)), VG_FLOAT, d22, 2, e1, 0);
    int64_t di3[2] = {1, 3}, d1[1] = {1};
    double i3[3] = {1, 1, 1}, e3[1] = {8};
    expect_tol(run(g, vg_gather_nd(g, params, cst(g, VG_INT64, di3, 2, i3), NULL)), VG_FLOAT, d1, 1, e3, 0);
    int64_t dib[3] = {2, 1, 2}, dob[3] = {2, 1, 2};
    double ib[4] = {0, 0, 1, 1}, eb[4] = {1, 2, 7, 8};
    vg_output y = vg_gather_nd(g, params, cst(g, VG_INT32, dib, 3, ib), NULL);
    vg_shape s = vg_output_shape(y);
    CHECK_EQ_INT(s.ndims, 3);
    expect_tol(run(g, y), VG_FLOAT, dob, 3, eb, 0);
    /* bad index: INVALID_ARGUMENT naming it */
    double bad[4] = {0, 0, 0, 2};
    vg_status st;
    vg_tensor *t = run_st(g, vg_gather_nd(g, params, cst(g, VG_INT32, di, 2, bad), NULL), &st);
    CHECK(t == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "indices[1] = [0, 2] does not index into param shape [2,2,2]");
    vg_graph_free(g);
    /* gradient: duplicates accumulate through ScatterNd */
    g = vg_graph_new();
    vg_tensor *tx;
    vg_output px = ph(g, VG_DOUBLE, dp, 3, p, &tx);
    int64_t dd[2] = {3, 2};
    double dup[6] = {0, 1, 1, 0, 0, 1};
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_gather_nd(g, px, cst(g, VG_INT32, dd, 2, dup), NULL), 1e-6, 1e-8), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

static void test_scatter_nd(void) {
    vg_graph *g = vg_graph_new();
    int64_t di[2] = {4, 1}, du[1] = {4}, d8[1] = {8};
    double idx[4] = {4, 3, 1, 7}, up[4] = {9, 10, 11, 12}, e[8] = {0, 11, 0, 10, 9, 0, 0, 12};
    int32_t shape8[1] = {8};
    vg_output sc = vg_scatter_nd(g, cst(g, VG_INT32, di, 2, idx), cst(g, VG_FLOAT, du, 1, up),
                                 vg_const_i32_vec(g, shape8, 1, NULL), NULL);
    vg_shape s = vg_output_shape(sc);
    CHECK(s.ndims == 1 && s.dims[0] == 8);
    expect_tol(run(g, sc), VG_FLOAT, d8, 1, e, 0);
    /* duplicates add */
    int64_t d2i[2] = {2, 1}, d2[1] = {2};
    double didx[2] = {1, 1}, dup[2] = {1, 2}, ed[8] = {0, 3, 0, 0, 0, 0, 0, 0};
    expect_tol(run(g, vg_scatter_nd(g, cst(g, VG_INT32, d2i, 2, didx), cst(g, VG_INT32, d2, 1, dup),
                                      vg_const_i32_vec(g, shape8, 1, NULL), NULL)),
              VG_INT32, d8, 1, ed, 0);
    /* TensorScatterUpdate: ones(8) with slices replaced */
    double ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, eu[8] = {1, 11, 1, 10, 9, 1, 1, 12};
    expect_tol(run(g, vg_tensor_scatter_update(g, cst(g, VG_FLOAT, d8, 1, ones), cst(g, VG_INT32, di, 2, idx),
                                                 cst(g, VG_FLOAT, du, 1, up), NULL)),
              VG_FLOAT, d8, 1, eu, 0);
    /* slices of a 2-D tensor */
    int64_t d42[2] = {4, 2}, dsi[2] = {2, 1}, dsu[2] = {2, 2};
    double z8[8] = {0}, si[2] = {3, 0}, su[4] = {5, 6, 7, 8}, es[8] = {7, 8, 0, 0, 0, 0, 5, 6};
    expect_tol(run(g, vg_tensor_scatter_update(g, cst(g, VG_DOUBLE, d42, 2, z8), cst(g, VG_INT64, dsi, 2, si),
                                                 cst(g, VG_DOUBLE, dsu, 2, su), NULL)),
              VG_DOUBLE, d42, 2, es, 0);
    /* bad index at run time; wrong updates shape at build time */
    double bad[4] = {4, 3, 8, 7};
    vg_status st;
    vg_tensor *t = run_st(g, vg_scatter_nd(g, cst(g, VG_INT32, di, 2, bad), cst(g, VG_FLOAT, du, 1, up),
                                              vg_const_i32_vec(g, shape8, 1, NULL), NULL), &st);
    CHECK(t == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Invalid indices");
    CHECK_STR_CONTAINS(st.msg, "[8]");
    /* a shape whose element count overflows: a clean error, no allocation */
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40}, d2s[1] = {2};
    vg_output hs = vg_placeholder(g, VG_INT64, d2s, 1, "huge_shape");
    vg_output hsc = vg_scatter_nd(g, cst(g, VG_INT64, di, 2, idx), cst(g, VG_FLOAT, du, 1, up), hs, NULL);
    vg_session *sess = vg_session_new(g, NULL, &st);
    vg_tensor *th = vg_tensor_new_copy(VG_INT64, d2s, 1, huge, sizeof huge, &st), *oh = NULL;
    CHECK_CODE(vg_session_run(sess, NULL, &hs, &th, 1, &hsc, &oh, 1, NULL, 0, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK(oh == NULL);
    vg_tensor_free(th);
    vg_session_free(sess);
    CHECK(vg_scatter_nd(g, cst(g, VG_INT32, di, 2, idx), cst(g, VG_FLOAT, d2, 1, up),
                        vg_const_i32_vec(g, shape8, 1, NULL), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Must have updates.shape");
    vg_graph_free(g);
    /* gradients: ScatterNd w.r.t. updates; TensorScatterUpdate w.r.t. tensor and updates */
    g = vg_graph_new();
    vg_tensor *tu, *tt;
    double upv[4] = {0.5, -1.5, 2.0, 0.25}, tv[8] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    vg_output pu = ph(g, VG_DOUBLE, du, 1, upv, &tu), pt = ph(g, VG_DOUBLE, d8, 1, tv, &tt);
    vg_output ix = cst(g, VG_INT32, di, 2, idx);
    CHECK_EQ_INT(vg_gradcheck(g, &pu, &tu, 1, vg_scatter_nd(g, ix, pu, vg_const_i32_vec(g, shape8, 1, NULL), NULL), 1e-6,
                              1e-8), 0);
    vg_output ins[2] = {pt, pu};
    vg_tensor *vals[2] = {tt, tu};
    CHECK_EQ_INT(vg_gradcheck(g, ins, vals, 2, vg_tensor_scatter_update(g, pt, ix, pu, NULL), 1e-6, 1e-8), 0);
    vg_tensor_free(tu), vg_tensor_free(tt);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_top_k);
    RUN_TEST(test_in_top_k);
    RUN_TEST(test_gather_nd);
    RUN_TEST(test_scatter_nd);
    TEST_MAIN_END();
}
