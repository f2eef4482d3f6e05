/* test_api_gaps.c - small TF 1.15 API pieces ports met (issue 35):
 * - Tensor.set_shape (ops_test.py TensorTest.testShape; ShapeRefiner::SetShape's merge
 *   and its errors "Shapes must be equal rank" / "Dimension 0 in both shapes must be
 *   equal, but are 4 and 3. Shapes are [4,3] and [3,4].");
 * - zeros_like / ones_like with a dtype (constant_op_test.py ZerosLikeTest.
 *   testZerosLikeDtype, OnesLikeTest.testOnesLike / testOnesLikePartialShape);
 * - tf.constant(list, shape) of constant_v1 (constant_op_test.py ConstantTest.
 *   testShapeInconsistent, testShapeWrong; verify_shape's TypeError);
 * - tf.constant_initializer(list) (init_ops_test.py ConstantInitializerTest.
 *   testNDimConstantInitializer, testNDimConstantInitializerLessValues,
 *   testNDimConstantInitializerMoreValues). */
#include "op_test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "train_fixture.h"

static vg_tensor *run1(vg_graph *g, vg_output o, const vg_output *feeds, vg_tensor *const *vals, int nf) {
    vg_status st;
    vg_tensor *out = NULL;
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) return NULL;
    if (vg_session_run(s, NULL, feeds, vals, nf, &o, &out, 1, NULL, 0, NULL, &st) != VG_OK)
        fprintf(stderr, "run: %s\n", st.msg);
    vg_session_free(s);
    return out;
}

static bool shape_is(vg_output o, const int64_t *dims, int nd) {
    vg_shape s = vg_output_shape(o);
    if (s.ndims != nd) return false;
    for (int i = 0; i < nd; i++)
        if (s.dims[i] != dims[i]) return false;
    return true;
}

/* ---- set_shape ---- */

static void test_set_shape(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    /* TensorTest.testShape: an unknown shape refined to [1, 2, 3] */
    vg_output u = vg_placeholder(g, VG_FLOAT, NULL, -1, "u");
    CHECK(vg_output_shape(u).ndims == -1);
    CHECK_OK(vg_set_shape(u, (int64_t[]){1, 2, 3}, 3, &st), &st);
    CHECK(shape_is(u, (int64_t[]){1, 2, 3}, 3));
    /* [?, 3] -> [4, 3]; ops built later see it */
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "p");
    CHECK_OK(vg_set_shape(p, (int64_t[]){4, 3}, 2, &st), &st);
    CHECK(shape_is(p, (int64_t[]){4, 3}, 2));
    vg_output sq = vg_square(g, p, NULL);
    CHECK(shape_is(sq, (int64_t[]){4, 3}, 2));
    /* incompatible: TF's ValueError text, the shape unchanged, the graph still usable */
    CHECK_CODE(vg_set_shape(p, (int64_t[]){3, 4}, 2, &st), VG_INVALID_ARGUMENT);
    CHECK(strcmp(st.msg, "Dimension 0 in both shapes must be equal, but are 4 and 3. Shapes are [4,3] and [3,4].") == 0);
    CHECK(shape_is(p, (int64_t[]){4, 3}, 2));
    CHECK_CODE(vg_set_shape(p, (int64_t[]){4, 3, 1}, 3, &st), VG_INVALID_ARGUMENT);
    CHECK(strcmp(st.msg, "Shapes must be equal rank, but are 2 and 3") == 0);
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* partial merges: [?, 3, ?] with [5, ?, ?] is [5, 3, ?]; an unknown rank changes nothing */
    vg_output q = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3, -1}, 3, "q");
    CHECK_OK(vg_set_shape(q, (int64_t[]){5, -1, -1}, 3, &st), &st);
    CHECK(shape_is(q, (int64_t[]){5, 3, -1}, 3));
    CHECK_OK(vg_set_shape(q, NULL, -1, &st), &st);
    CHECK(shape_is(q, (int64_t[]){5, 3, -1}, 3));
    vg_output r = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "r");
    CHECK_CODE(vg_set_shape(r, (int64_t[]){-1, 7}, 2, &st), VG_INVALID_ARGUMENT);
    CHECK(strcmp(st.msg, "Dimension 1 in both shapes must be equal, but are 2 and 7. Shapes are [?,2] and [?,7].") == 0);
    CHECK_CODE(vg_set_shape(vg_out(NULL, 0), (int64_t[]){1}, 1, &st), VG_INVALID_ARGUMENT);
    /* the refined shape is a build-time promise; the value still runs */
    vg_tensor *pv = mk(VG_FLOAT, (int64_t[]){4, 3}, 2, NULL);
    vg_tensor *o = run1(g, sq, &p, &pv, 1);
    CHECK(o != NULL);
    if (o) CHECK_NEAR(get(o, 11), 121.0, 0);
    vg_tensor_free(o);
    vg_tensor_free(pv);
    vg_graph_free(g);
}

/* ---- zeros_like / ones_like with dtype ---- */

static void check_all(vg_tensor *t, vg_dtype dt, int64_t n, double v) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_dtype(t), dt);
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    for (int64_t i = 0; i < n; i++) CHECK_NEAR(get(t, i), v, 0);
}

static void test_like_dtype(void) {
    vg_graph *g = vg_graph_new();
    /* testZerosLikeDtype: a [3, 5] input, every in/out dtype pair */
    vg_dtype dts[4] = {VG_FLOAT, VG_DOUBLE, VG_INT32, VG_BOOL};
    for (int a = 0; a < 4; a++) {
        vg_output x = cst(g, dts[a], (int64_t[]){3, 5}, 2, NULL);
        for (int b = 0; b < 4; b++) {
            vg_output z = vg_zeros_like_dtype(g, x, dts[b], NULL);
            vg_output o = vg_ones_like_dtype(g, x, dts[b], NULL);
            CHECK(z.op && o.op);
            if (!z.op || !o.op) continue;
            CHECK_EQ_INT(vg_output_dtype(z), dts[b]);
            CHECK(shape_is(z, (int64_t[]){3, 5}, 2) && shape_is(o, (int64_t[]){3, 5}, 2));
            vg_tensor *tz = run1(g, z, NULL, NULL, 0), *to = run1(g, o, NULL, NULL, 0);
            check_all(tz, dts[b], 15, 0);
            check_all(to, dts[b], 15, 1);
            vg_tensor_free(tz);
            vg_tensor_free(to);
        }
    }
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* names: TF's "zeros_like" / "ones_like" scopes, the input's own dtype keeps the op */
    vg_output x = cst(g, VG_FLOAT, (int64_t[]){2}, 1, NULL);
    CHECK(strcmp(vg_op_type(vg_zeros_like_dtype(g, x, VG_DTYPE_INVALID, NULL).op), "ZerosLike") == 0);
    CHECK(strcmp(vg_op_type(vg_ones_like_dtype(g, x, VG_FLOAT, NULL).op), "OnesLike") == 0);
    /* testOnesLikePartialShape: [?, 4, ?] int64 -> float ones of that static shape, at run
     * time the fed shape */
    vg_output p = vg_placeholder(g, VG_INT64, (int64_t[]){-1, 4, -1}, 3, "p");
    vg_output o = vg_ones_like_dtype(g, p, VG_FLOAT, NULL);
    vg_output z = vg_zeros_like_dtype(g, p, VG_DOUBLE, "zl");
    CHECK(shape_is(o, (int64_t[]){-1, 4, -1}, 3) && shape_is(z, (int64_t[]){-1, 4, -1}, 3));
    CHECK(strcmp(vg_op_type(o.op), "Fill") == 0 && strncmp(vg_op_name(o.op), "ones_like", 9) == 0);
    CHECK(strcmp(vg_op_name(z.op), "zl") == 0);
    vg_tensor *pv = mk(VG_INT64, (int64_t[]){2, 4, 3}, 3, NULL);
    vg_tensor *to = run1(g, o, &p, &pv, 1), *tz = run1(g, z, &p, &pv, 1);
    check_all(to, VG_FLOAT, 24, 1);
    check_all(tz, VG_DOUBLE, 24, 0);
    if (to) CHECK(vg_tensor_ndims(to) == 3 && vg_tensor_dim(to, 2) == 3);
    vg_tensor_free(to);
    vg_tensor_free(tz);
    vg_tensor_free(pv);
    /* half: ones are binary16 1.0 */
    vg_output h = vg_ones_like_dtype(g, x, VG_HALF, NULL);
    vg_tensor *th = run1(g, h, NULL, NULL, 0);
    CHECK(th && vg_tensor_dtype(th) == VG_HALF);
    if (th) CHECK_EQ_INT(((const uint16_t *)vg_tensor_data(th))[1], 0x3c00);
    vg_tensor_free(th);
    /* a string dtype is refused */
    CHECK(vg_zeros_like_dtype(g, x, VG_STRING, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* ---- constant_v1 and constant_initializer ---- */

static void test_const_values(void) {
    vg_status st;
    const double seven[7] = {1, 2, 3, 4, 5, 6, 7};
    vg_graph *g = vg_graph_new();
    /* testShapeInconsistent: 7 values, shape [10]: the last value fills the rest */
    vg_output c = vg_const_values(g, VG_INT32, seven, 7, NULL, 0, (int64_t[]){10}, 1, false, NULL);
    CHECK(shape_is(c, (int64_t[]){10}, 1));
    vg_tensor *t = run1(g, c, NULL, NULL, 0);
    const double want[10] = {1, 2, 3, 4, 5, 6, 7, 7, 7, 7};
    for (int i = 0; t && i < 10; i++) CHECK_NEAR(get(t, i), want[i], 0);
    vg_tensor_free(t);
    /* a [2, 3] value for a [2, 3] shape, float; no values at all: zeros */
    vg_output c2 = vg_const_values(g, VG_FLOAT, seven, 6, (int64_t[]){2, 3}, 2, (int64_t[]){2, 3}, 2, true, "c2");
    vg_output c3 = vg_const_values(g, VG_DOUBLE, NULL, 0, NULL, 0, (int64_t[]){2}, 1, false, NULL);
    t = run1(g, c2, NULL, NULL, 0);
    if (t) CHECK_NEAR(get(t, 5), 6, 0);
    vg_tensor_free(t);
    t = run1(g, c3, NULL, NULL, 0);
    if (t) CHECK(get(t, 0) == 0 && get(t, 1) == 0);
    vg_tensor_free(t);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_graph_free(g);
    /* testShapeWrong: ValueError "Too many elements provided. Needed at most 5, but received 7" */
    g = vg_graph_new();
    CHECK(vg_const_values(g, VG_INT32, seven, 7, NULL, 0, (int64_t[]){5}, 1, false, NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK(strcmp(st.msg, "Too many elements provided. Needed at most 5, but received 7") == 0);
    vg_graph_free(g);
    /* verify_shape: TypeError "Expected Tensor's shape: (2, 4), got (7,)." */
    g = vg_graph_new();
    CHECK(vg_const_values(g, VG_INT32, seven, 7, NULL, 0, (int64_t[]){2, 4}, 2, true, NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK(strcmp(st.msg, "Expected Tensor's shape: (2, 4), got (7,).") == 0);
    vg_graph_free(g);
}

/* init_ops_test.py ConstantInitializerTest with dtype int32 through get_variable. */
static vg_tensor *init_var(const vg_constant_array *a, const int64_t *dims, int nd, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_variable x = vg_get_variable(g, "x", VG_INT32, dims, nd, vg_init_constant_array(a), 0);
    vg_tensor *t = NULL;
    if (vg_graph_status(g, st) == VG_OK && x.var) {
        vg_op *init = vg_global_variables_initializer(g);
        vg_session *s = vg_session_new(g, NULL, st);
        if (s && vg_session_run_targets(s, &init, 1, st) == VG_OK) vg_session_run1(s, x.ref, &t, st);
        vg_session_free(s);
    }
    vg_graph_free(g);
    return t;
}

static void test_constant_initializer(void) {
    vg_status st;
    const double value[6] = {0, 1, 2, 3, 4, 5};
    /* testNDimConstantInitializer: flat, and shaped [2, 3] (np.asarray(value).reshape) */
    vg_constant_array flat = {value, 6, NULL, 0, false};
    vg_constant_array shaped = {value, 6, (int64_t[]){2, 3}, 2, false};
    const vg_constant_array *as[2] = {&flat, &shaped};
    for (int k = 0; k < 2; k++) {
        vg_tensor *t = init_var(as[k], (int64_t[]){2, 3}, 2, &st);
        CHECK(t != NULL);
        if (t) {
            CHECK_EQ_INT(vg_tensor_dtype(t), VG_INT32);
            for (int i = 0; i < 6; i++) CHECK_EQ_INT(get(t, i), value[i]);
        }
        vg_tensor_free(t);
    }
    /* testNDimConstantInitializerLessValues: [2, 4]: the last value repeats */
    vg_tensor *t = init_var(&flat, (int64_t[]){2, 4}, 2, &st);
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(vg_tensor_num_elements(t), 8);
        for (int i = 0; i < 8; i++) CHECK_EQ_INT(get(t, i), i < 6 ? value[i] : value[5]);
    }
    vg_tensor_free(t);
    /* testNDimConstantInitializerMoreValues: 8 values for [2, 3]: ValueError */
    const double eight[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    vg_constant_array more = {eight, 8, NULL, 0, false};
    CHECK(init_var(&more, (int64_t[]){2, 3}, 2, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Too many elements provided. Needed at most 6, but received 8");
    /* verify_shape=True with a flat list for [2, 3] */
    vg_constant_array verify = {value, 6, NULL, 0, true};
    CHECK(init_var(&verify, (int64_t[]){2, 3}, 2, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "Expected Tensor's shape: (2, 3), got (6,).");
    /* a float variable from the same list (the initializer's dtype is the variable's) */
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, (int64_t[]){8}, 1, vg_init_constant_array(&flat), 0);
    CHECK(v.var != NULL);
    CHECK(vg_graph_op_by_name(g, "v/Initializer/Const") != NULL);
    vg_session *s = initialized_session(g);
    t = NULL;
    CHECK_OK(vg_session_run1(s, v.ref, &t, &st), &st);
    if (t) {
        CHECK_EQ_INT(vg_tensor_dtype(t), VG_FLOAT);
        CHECK_NEAR(get(t, 4), 4.0, 0);
        CHECK_NEAR(get(t, 7), 5.0, 0);
    }
    vg_tensor_free(t);
    free_session_graph(s, g);
}

int main(void) {
    RUN_TEST(test_set_shape);
    RUN_TEST(test_like_dtype);
    RUN_TEST(test_const_values);
    RUN_TEST(test_constant_initializer);
    TEST_MAIN_END();
}
