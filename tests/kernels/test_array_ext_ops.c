/* test_array_ext_ops.c - StridedSlice (+StridedSliceGrad), Split, SplitV, Unpack
 * builder, ReverseV2, Cumsum and Cumprod: hand-computed forward values, finite-
 * difference gradients and error paths. Mirrors TF 1.15's strided_slice_op_test.py
 * (StridedSliceTest: testStridedSlice, testReverse, testDegenerateSlices, testEllipsis,
 * testShrink, testExpand, testOptimizedCases, the bad-input checks; StridedSliceGradTest),
 * split_op_test.py (testSplitV with -1, testRandom / gradient), reverse_op_test.py
 * (testReverse{0..}D, testInvalidAxis, testReverseRepeatedAxis) and scan_ops_test.py
 * (CumsumTest / CumprodTest: test1D, testAxis, exclusive and reverse, testGradient*). */
#include "gradcheck.h"
#include "op_test_util.h"
#include "kernels_fixture.h"

/* x[i][j][k] = i*12 + j*4 + k, shape [2, 3, 4] */
static vg_output arange234(vg_graph *g, vg_dtype dt) {
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    int64_t d[3] = {2, 3, 4};
    return cst(g, dt, d, 3, v);
}

typedef struct ss_case {
    const char *py;
    int n;
    int32_t b[4], e[4], s[4];
    vg_strided_slice_masks m;
    int nd;
    int64_t dims[5];
    double v[24];
} ss_case;

static const ss_case CASES[] = {
    {"x[1:2, 0:3:2, ::-1]", 3, {1, 0, 0}, {2, 3, 0}, {1, 2, -1}, {4, 4, 0, 0, 0}, 3, {1, 2, 4},
     {15, 14, 13, 12, 23, 22, 21, 20}},
    {"x[::-1, ::-2, -1]", 3, {0, 0, -1}, {0, 0, 0}, {-1, -2, 1}, {3, 3, 0, 0, 4}, 2, {2, 2}, {23, 15, 11, 3}},
    {"x[-100:100, 1:, :-1:2]", 3, {-100, 1, 0}, {100, 0, -1}, {1, 1, 2}, {4, 2, 0, 0, 0}, 3, {2, 2, 2},
     {4, 6, 8, 10, 16, 18, 20, 22}},
    {"x[tf.newaxis, :, 0]", 3, {0, 0, 0}, {0, 0, 1}, {1, 1, 1}, {2, 2, 0, 1, 4}, 3, {1, 2, 4},
     {0, 1, 2, 3, 12, 13, 14, 15}},
    {"x[0:1, ..., 0:1]", 3, {0, 0, 0}, {1, 0, 1}, {1, 1, 1}, {0, 0, 2, 0, 0}, 3, {1, 3, 1}, {0, 4, 8}},
    {"x[1, -1, :]", 3, {1, -1, 0}, {2, 0, 0}, {1, 1, 1}, {4, 4, 0, 0, 3}, 1, {4}, {20, 21, 22, 23}},
    {"x[1:0]", 1, {1}, {0}, {1}, {0, 0, 0, 0, 0}, 3, {0, 3, 4}, {0}},
    {"x[0:3:-1]", 1, {0}, {3}, {-1}, {0, 0, 0, 0, 0}, 3, {0, 3, 4}, {0}},
    {"x[..., 2]", 2, {0, 2}, {0, 3}, {1, 1}, {0, 0, 1, 0, 2}, 2, {2, 3}, {2, 6, 10, 14, 18, 22}},
    {"x[:, :, :]", 3, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, {7, 7, 0, 0, 0}, 3, {2, 3, 4},
     {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
};

static void check_case(const ss_case *c, bool runtime_spec) {
    vg_graph *g = vg_graph_new();
    vg_output x = arange234(g, VG_FLOAT), y;
    if (!runtime_spec) {
        y = vg_strided_slice_c(g, x, c->b, c->e, c->s, c->n, &c->m, NULL);
        vg_shape s = vg_output_shape(y);
        CHECK_EQ_INT(s.ndims, c->nd); /* static shape from the Const spec */
        for (int i = 0; i < c->nd && s.ndims == c->nd; i++) CHECK_EQ_INT(s.dims[i], c->dims[i]);
        expect_tol(run(g, y), VG_FLOAT, c->dims, c->nd, c->v, 0);
    } else { /* begin/end/strides fed at run time: shape unknown at build */
        int64_t d1[1] = {c->n};
        vg_output pb = vg_placeholder(g, VG_INT32, d1, 1, "b"), pe = vg_placeholder(g, VG_INT32, d1, 1, "e");
        vg_output ps = vg_placeholder(g, VG_INT32, d1, 1, "s");
        y = vg_strided_slice(g, x, pb, pe, ps, &c->m, NULL);
        vg_status st;
        vg_session *s = vg_session_new(g, NULL, &st);
        vg_tensor *tb = vg_tensor_new_copy(VG_INT32, d1, 1, c->b, sizeof(int32_t) * (size_t)c->n, &st);
        vg_tensor *te = vg_tensor_new_copy(VG_INT32, d1, 1, c->e, sizeof(int32_t) * (size_t)c->n, &st);
        vg_tensor *ts = vg_tensor_new_copy(VG_INT32, d1, 1, c->s, sizeof(int32_t) * (size_t)c->n, &st);
        vg_output feeds[3] = {pb, pe, ps};
        vg_tensor *fv[3] = {tb, te, ts}, *out = NULL;
        CHECK_OK(vg_session_run(s, NULL, feeds, fv, 3, &y, &out, 1, NULL, 0, NULL, &st), &st);
        expect_tol(out, VG_FLOAT, c->dims, c->nd, c->v, 0);
        vg_tensor_free(tb), vg_tensor_free(te), vg_tensor_free(ts);
        vg_session_free(s);
    }
    vg_graph_free(g);
}

static void test_strided_slice_forward(void) {
    int n = (int)(sizeof CASES / sizeof CASES[0]);
    for (int i = 0; i < n; i++) {
        int before = vg_test_failures;
        check_case(&CASES[i], false);
        check_case(&CASES[i], true);
        if (vg_test_failures != before) fprintf(stderr, "  case %s\n", CASES[i].py);
    }
    /* testExpand: x[tf.newaxis, ..., tf.newaxis] -> [1, 2, 3, 4, 1]; x[..., tf.newaxis] -> [2, 3, 4, 1] */
    vg_graph *g = vg_graph_new();
    vg_output x = arange234(g, VG_FLOAT);
    int32_t z3[3] = {0, 0, 0}, o3[3] = {1, 1, 1};
    vg_strided_slice_masks m = {0, 0, 2, 5, 0};
    vg_output y = vg_strided_slice_c(g, x, z3, z3, o3, 3, &m, NULL);
    vg_shape s = vg_output_shape(y);
    int64_t e5[5] = {1, 2, 3, 4, 1};
    CHECK_EQ_INT(s.ndims, 5);
    for (int i = 0; i < 5 && s.ndims == 5; i++) CHECK_EQ_INT(s.dims[i], e5[i]);
    vg_tensor *t = run(g, y);
    if (t) {
        CHECK_EQ_INT(vg_tensor_ndims(t), 5);
        CHECK_EQ_INT(vg_tensor_num_elements(t), 24);
        CHECK(get(t, 23) == 23);
        vg_tensor_free(t);
    }
    vg_strided_slice_masks m2 = {0, 0, 1, 2, 0};
    s = vg_output_shape(vg_strided_slice_c(g, x, z3, z3, o3, 2, &m2, NULL));
    CHECK_EQ_INT(s.ndims, 4);
    CHECK_EQ_INT(s.dims[3], 1);
    /* x[1, tf.newaxis, 2, ..., tf.newaxis] -> [1, 4, 1]: 1*12 + 2*4 + k */
    int32_t b5[5] = {1, 0, 2, 0, 0}, e5b[5] = {2, 0, 3, 0, 0}, s5[5] = {1, 1, 1, 1, 1};
    vg_strided_slice_masks m3 = {0, 0, 8, 2 | 16, 1 | 4};
    int64_t d3[3] = {1, 4, 1};
    double v3[4] = {20, 21, 22, 23};
    expect_tol(run(g, vg_strided_slice_c(g, x, b5, e5b, s5, 5, &m3, NULL)), VG_FLOAT, d3, 3, v3, 0);
    /* int32 / int64 / double inputs are copied the same way */
    int32_t b1[1] = {1}, e1[1] = {2};
    int64_t d1[3] = {1, 3, 4};
    double v12[12];
    for (int i = 0; i < 12; i++) v12[i] = 12 + i;
    expect_tol(run(g, vg_strided_slice_c(g, arange234(g, VG_INT64), b1, e1, NULL, 1, NULL, NULL)), VG_INT64, d1, 3,
              v12, 0);
    expect_tol(run(g, vg_strided_slice_c(g, arange234(g, VG_INT32), b1, e1, NULL, 1, NULL, NULL)), VG_INT32, d1, 3,
              v12, 0);
    vg_graph_free(g);
}

static void test_strided_slice_errors(void) {
    vg_status st;
    /* shrink index out of range (build time, Const spec) */
    vg_graph *g = vg_graph_new();
    int32_t b[2] = {0, 5}, e[2] = {0, 6}, s1[2] = {1, 1};
    vg_strided_slice_masks m = {1, 1, 0, 0, 2};
    CHECK(vg_strided_slice_c(g, arange234(g, VG_FLOAT), b, e, s1, 2, &m, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "slice index 5 of dimension 1 out of bounds.");
    vg_graph_free(g);
    /* zero stride */
    g = vg_graph_new();
    int32_t s0[1] = {0}, b0[1] = {0}, e0[1] = {1};
    CHECK(vg_strided_slice_c(g, arange234(g, VG_FLOAT), b0, e0, s0, 1, NULL, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "strides[0] must be non-zero");
    vg_graph_free(g);
    /* two ellipses */
    g = vg_graph_new();
    vg_strided_slice_masks me = {0, 0, 3, 0, 0};
    CHECK(vg_strided_slice_c(g, arange234(g, VG_FLOAT), b, e, s1, 2, &me, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Multiple ellipses");
    vg_graph_free(g);
    /* too many indices */
    g = vg_graph_new();
    int32_t z4[4] = {0, 0, 0, 0}, o4[4] = {1, 1, 1, 1};
    CHECK(vg_strided_slice_c(g, arange234(g, VG_FLOAT), z4, o4, o4, 4, NULL, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Index out of range");
    vg_graph_free(g);
    /* the same shrink error at run time (spec fed) leaves the session usable */
    g = vg_graph_new();
    int64_t d1[1] = {2};
    vg_output pb = vg_placeholder(g, VG_INT32, d1, 1, "b");
    vg_output y = vg_strided_slice(g, arange234(g, VG_FLOAT), pb, vg_const_i32_vec(g, e, 2, NULL),
                                   vg_const_i32_vec(g, s1, 2, NULL), &m, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *tb = vg_tensor_new_copy(VG_INT32, d1, 1, b, sizeof b, &st), *out = NULL;
    CHECK_STATUS(vg_session_run(s, NULL, &pb, &tb, 1, &y, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "out of bounds");
    int32_t ok[2] = {0, 1};
    memcpy(vg_tensor_data(tb), ok, sizeof ok);
    CHECK_OK(vg_session_run(s, NULL, &pb, &tb, 1, &y, &out, 1, NULL, 0, NULL, &st), &st);
    if (out) {
        CHECK_EQ_INT(vg_tensor_ndims(out), 2);
        CHECK(get(out, 1) == 5); /* x[:, 1][0][1] = 0*12 + 1*4 + 1 */
        vg_tensor_free(out);
    }
    kt_teardown(g, s, (vg_tensor *[]){tb}, 1, NULL, 0);
}

static void test_strided_slice_grad(void) {
    /* StridedSliceGradTest: gradients of the cases above by finite differences */
    int idx[5] = {0, 1, 2, 3, 5};
    for (int k = 0; k < 5; k++) {
        const ss_case *c = &CASES[idx[k]];
        vg_graph *g = vg_graph_new();
        double v[24];
        for (int i = 0; i < 24; i++) v[i] = 0.1 * i - 1;
        int64_t d[3] = {2, 3, 4};
        vg_tensor *tx;
        vg_output px = ph(g, VG_DOUBLE, d, 3, v, &tx);
        vg_output y = vg_strided_slice_c(g, px, c->b, c->e, c->s, c->n, &c->m, NULL);
        int bad = vg_gradcheck(g, &px, &tx, 1, y, 1e-6, 1e-8);
        if (bad) fprintf(stderr, "  case %s\n", c->py);
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(tx);
        vg_graph_free(g);
    }
    /* StridedSliceGrad directly: dy scattered into zeros of shape [2, 3, 4] */
    vg_graph *g = vg_graph_new();
    vg_output x = arange234(g, VG_FLOAT), dx;
    const ss_case *c = &CASES[1]; /* x[::-1, ::-2, -1] -> [[23, 15], [11, 3]] */
    vg_output y = vg_strided_slice_c(g, x, c->b, c->e, c->s, c->n, &c->m, NULL);
    vg_status st;
    CHECK_OK(vg_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), &st);
    double e[24] = {0};
    e[23] = e[15] = e[11] = e[3] = 1;
    int64_t d[3] = {2, 3, 4};
    expect_tol(run(g, dx), VG_FLOAT, d, 3, e, 0);
    vg_graph_free(g);
}

static void test_split(void) {
    vg_graph *g = vg_graph_new();
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    int64_t d[2] = {2, 6};
    vg_output x = cst(g, VG_FLOAT, d, 2, v);
    vg_op *sp = vg_split(g, x, 3, 1, NULL);
    CHECK(sp && vg_op_num_outputs(sp) == 3);
    CHECK(sp && strcmp(vg_op_type(sp), "Split") == 0 && strcmp(vg_op_name(sp), "split") == 0);
    CHECK(vg_graph_op_by_name(g, "split/split_dim") != NULL);
    int64_t d22[2] = {2, 2};
    double e1[4] = {2, 3, 8, 9};
    expect_tol(run(g, vg_out(sp, 1)), VG_FLOAT, d22, 2, e1, 0);
    /* SplitV with a -1 */
    int32_t sizes[3] = {1, -1, 2};
    vg_op *sv = vg_split_v(g, x, sizes, 3, -1, NULL);
    CHECK(sv && strcmp(vg_op_name(sv), "split_1") == 0);
    int64_t d21[2] = {2, 1}, d23[2] = {2, 3};
    double a0[2] = {0, 6}, a1[6] = {1, 2, 3, 7, 8, 9}, a2[4] = {4, 5, 10, 11};
    vg_shape s1 = vg_output_shape(vg_out(sv, 1));
    CHECK_EQ_INT(s1.dims[1], 3);
    expect_tol(run(g, vg_out(sv, 0)), VG_FLOAT, d21, 2, a0, 0);
    expect_tol(run(g, vg_out(sv, 1)), VG_FLOAT, d23, 2, a1, 0);
    expect_tol(run(g, vg_out(sv, 2)), VG_FLOAT, d22, 2, a2, 0);
    /* unstack along axis 1 */
    vg_op *u = vg_unpack(g, x, -1, 1, NULL);
    CHECK(u && vg_op_num_outputs(u) == 6);
    int64_t d2[1] = {2};
    double u4[2] = {4, 10};
    if (u) expect_tol(run(g, vg_out(u, 4)), VG_FLOAT, d2, 1, u4, 0);
    /* errors: uneven split, sizes that do not add up */
    vg_status st;
    CHECK(vg_split(g, x, 4, 1, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "evenly divide");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_split(g, cst(g, VG_FLOAT, d, 2, v), 1 << 30, 1, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "too large");
    vg_graph_free(g);
    g = vg_graph_new();
    int32_t bad[2] = {2, 2};
    CHECK(vg_split_v(g, cst(g, VG_FLOAT, d, 2, v), bad, 2, 1, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Determined shape must either match input shape");
    vg_graph_free(g);

    /* gradients: only some outputs used (the others get zeros) */
    g = vg_graph_new();
    vg_tensor *tx;
    vg_output px = ph(g, VG_DOUBLE, d, 2, v, &tx);
    sp = vg_split(g, px, 3, 1, NULL);
    vg_output parts[2] = {vg_out(sp, 2), vg_out(sp, 0)};
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_concat_c(g, parts, 2, 0, NULL), 1e-6, 1e-8), 0);
    sv = vg_split_v(g, px, sizes, 3, 1, NULL);
    vg_output parts2[2] = {vg_out(sv, 1), vg_out(sv, 2)};
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_concat_c(g, parts2, 2, 1, NULL), 1e-6, 1e-8), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

static void test_reverse(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = arange234(g, VG_FLOAT);
    int32_t ax1[1] = {1}, ax02[2] = {0, -1};
    double e1[24], e02[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                e1[i * 12 + j * 4 + k] = i * 12 + (2 - j) * 4 + k;
                e02[i * 12 + j * 4 + k] = (1 - i) * 12 + j * 4 + (3 - k);
            }
    int64_t d[3] = {2, 3, 4};
    expect_tol(run(g, vg_reverse_c(g, x, ax1, 1, NULL)), VG_FLOAT, d, 3, e1, 0);
    expect_tol(run(g, vg_reverse_c(g, x, ax02, 2, NULL)), VG_FLOAT, d, 3, e02, 0);
    double e0[24];
    for (int i = 0; i < 24; i++) e0[i] = i;
    expect_tol(run(g, vg_reverse_c(g, x, NULL, 0, NULL)), VG_FLOAT, d, 3, e0, 0);
    expect_tol(run(g, vg_reverse_c(g, arange234(g, VG_INT64), ax02, 2, NULL)), VG_INT64, d, 3, e02, 0);
    vg_status st;
    int32_t rep[2] = {1, -2};
    CHECK(vg_reverse_c(g, x, rep, 2, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "axis 1 specified more than once");
    vg_graph_free(g);
    g = vg_graph_new();
    int32_t oob[1] = {3};
    CHECK(vg_reverse_c(g, arange234(g, VG_FLOAT), oob, 1, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "out of valid range");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_tensor *tx;
    vg_output px = ph(g, VG_DOUBLE, d, 3, e1, &tx);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_reverse_c(g, px, ax02, 2, NULL), 1e-6, 1e-8), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

static void test_cumsum_cumprod(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {4};
    double x[4] = {1, 2, 3, 4};
    double cs[4][4] = {{1, 3, 6, 10}, {0, 1, 3, 6}, {10, 9, 7, 4}, {9, 7, 4, 0}};
    double cp[4][4] = {{1, 2, 6, 24}, {1, 1, 2, 6}, {24, 24, 12, 4}, {24, 12, 4, 1}};
    for (int k = 0; k < 4; k++) {
        bool excl = k & 1, rev = k & 2;
        expect_tol(run(g, vg_cumsum(g, cst(g, VG_FLOAT, d, 1, x), 0, excl, rev, NULL)), VG_FLOAT, d, 1, cs[k], 0);
        expect_tol(run(g, vg_cumsum(g, cst(g, VG_INT32, d, 1, x), -1, excl, rev, NULL)), VG_INT32, d, 1, cs[k], 0);
        expect_tol(run(g, vg_cumprod(g, cst(g, VG_DOUBLE, d, 1, x), 0, excl, rev, NULL)), VG_DOUBLE, d, 1, cp[k], 0);
        expect_tol(run(g, vg_cumprod(g, cst(g, VG_INT64, d, 1, x), 0, excl, rev, NULL)), VG_INT64, d, 1, cp[k], 0);
    }
    /* testAxis: [[1, 2, 3], [4, 5, 6]] along axis 0 and 1 */
    int64_t d2[2] = {2, 3};
    double m[6] = {1, 2, 3, 4, 5, 6}, a0[6] = {1, 2, 3, 5, 7, 9}, a1[6] = {1, 3, 6, 4, 9, 15};
    expect_tol(run(g, vg_cumsum(g, cst(g, VG_FLOAT, d2, 2, m), 0, false, false, NULL)), VG_FLOAT, d2, 2, a0, 0);
    expect_tol(run(g, vg_cumsum(g, cst(g, VG_FLOAT, d2, 2, m), 1, false, false, NULL)), VG_FLOAT, d2, 2, a1, 0);
    vg_status st;
    vg_tensor *t = run_st(g, vg_cumsum(g, cst(g, VG_FLOAT, d2, 2, m), 2, false, false, NULL), &st);
    CHECK(t == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Expected scan axis in the range [-2, 2), but got 2");
    vg_graph_free(g);
    /* gradients for every exclusive / reverse combination */
    for (int k = 0; k < 4; k++) {
        g = vg_graph_new();
        double xv[6] = {0.5, -1.2, 2.0, 1.5, 0.7, -0.9};
        vg_tensor *tx;
        vg_output px = ph(g, VG_DOUBLE, d2, 2, xv, &tx);
        CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_cumsum(g, px, 1, k & 1, k & 2, NULL), 1e-6, 1e-8), 0);
        CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_cumprod(g, px, 1, k & 1, k & 2, NULL), 1e-6, 1e-7), 0);
        CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_cumprod(g, px, 0, k & 1, k & 2, NULL), 1e-6, 1e-7), 0);
        vg_tensor_free(tx);
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_strided_slice_forward);
    RUN_TEST(test_strided_slice_errors);
    RUN_TEST(test_strided_slice_grad);
    RUN_TEST(test_split);
    RUN_TEST(test_reverse);
    RUN_TEST(test_cumsum_cumprod);
    TEST_MAIN_END();
}
