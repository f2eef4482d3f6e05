/* test_check_ops.c - the check_ops.py assertions (src/kernels/math/check_ops.c), translated
 * from TF 1.15's check_ops_test.py: AssertEqualTest (test_doesnt_raise_when_equal,
 * test_raises_when_greater, test_raises_when_less,
 * test_doesnt_raise_when_equal_and_broadcastable_shapes,
 * test_raises_when_equal_but_non_broadcastable_shapes, test_doesnt_raise_when_both_empty),
 * AssertNoneEqualTest (test_raises_when_equal, test_doesnt_raise_when_not_equal),
 * AssertLessTest / AssertLessEqualTest / AssertGreaterTest / AssertGreaterEqualTest
 * (test_raises_when_equal, test_raises_when_greater / _less,
 * test_doesnt_raise_when_less_and_broadcastable_shapes), AssertNegativeTest,
 * AssertPositiveTest, AssertNonNegativeTest, AssertNonPositiveTest (the raises / doesn't
 * raise pairs and test_empty_tensor_doesnt_raise), AssertRankTest and
 * AssertRankAtLeastTest (the static and dynamic rank cases) and AssertTypeTest. The
 * dynamic cases feed placeholders and check the Assert's run-time message. As TF 1.15,
 * only assert_equal checks Consts at build time. */
#include "op_test_util.h"
#include "vigil/ops_ext.h"
#include "kernels_fixture.h"

static vg_output named(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, const double *v, const char *name) {
    vg_tensor *t = mk(dt, dims, nd, v);
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

/* Runs `out` under a control dependency on chk (TF's with control_dependencies([chk]):
 * identity(x)); returns the run's code, *st holding the message. */
static vg_code run_guarded(vg_graph *g, vg_op *chk, vg_output x, const vg_output *f, vg_tensor *const *fv, int nf,
                           vg_status *st) {
    vg_graph_push_control_deps(g, &chk, 1);
    vg_output out = vg_identity(g, x, NULL);
    vg_graph_pop_control_deps(g);
    vg_tensor *t = run_feeds(g, out, f, fv, nf, st);
    vg_tensor_free(t);
    return t ? VG_OK : st->code;
}

static void expect_static_fail(vg_graph *g, vg_op *chk, const char *m1, const char *m2) {
    vg_status st;
    CHECK(chk == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, m1);
    if (m2) CHECK_STR_CONTAINS(st.msg, m2);
}

static void expect_ok(vg_graph *g, vg_op *chk, vg_output x) {
    vg_status st;
    CHECK(chk != NULL);
    if (chk) CHECK_OK(run_guarded(g, chk, x, NULL, NULL, 0, &st), &st);
}

static void test_assert_equal(void) {
    int64_t d2[1] = {2};
    /* test_doesnt_raise_when_equal */
    vg_graph *g = vg_graph_new();
    vg_output small = named(g, VG_INT32, d2, 1, (double[]){1, 2}, "small");
    vg_op *chk = vg_assert_equal(g, small, small, NULL, 3, NULL);
    CHECK(chk && !strcmp(vg_op_name(chk), "assert_equal/Assert/Assert"));
    CHECK(vg_graph_op_by_name(g, "assert_equal/All") != NULL && vg_graph_op_by_name(g, "assert_equal/Equal") != NULL);
    expect_ok(g, chk, small);
    /* equal Consts that are different tensors: reduce_all(Equal) and an Assert */
    vg_output small2 = named(g, VG_INT32, d2, 1, (double[]){1, 2}, "small_2");
    chk = vg_assert_equal(g, small, small2, NULL, 3, NULL);
    CHECK(chk && !strcmp(vg_op_type(chk), "Assert") && !strcmp(vg_op_name(chk), "assert_equal_1/Assert/Assert"));
    expect_ok(g, chk, small);
    /* test_doesnt_raise_when_equal_and_broadcastable_shapes */
    vg_output col = named(g, VG_INT32, (int64_t[]){1, 2}, 2, (double[]){1, 2}, "col");
    expect_ok(g, vg_assert_equal(g, small, col, NULL, 3, NULL), small);
    /* test_doesnt_raise_when_both_empty */
    vg_output larry = named(g, VG_FLOAT, (int64_t[]){0}, 1, NULL, "larry");
    vg_output curly = named(g, VG_FLOAT, (int64_t[]){0}, 1, NULL, "curly");
    expect_ok(g, vg_assert_equal(g, larry, curly, NULL, 3, NULL), larry);
    vg_graph_free(g);
    /* test_raises_when_greater: static, data joined by newlines ("fail.*big.*small") */
    g = vg_graph_new();
    vg_output big = named(g, VG_INT32, d2, 1, (double[]){3, 4}, "big");
    small = named(g, VG_INT32, d2, 1, (double[]){1, 2}, "small");
    expect_static_fail(g, vg_assert_equal(g, big, small, "fail", 3, NULL),
                       "fail\nCondition x == y did not hold element-wise:\nx (big:0) = \n[3 4]\ny (small:0) = \n[1 2]",
                       NULL);
    vg_graph_free(g);
    /* test_raises_when_less */
    g = vg_graph_new();
    big = named(g, VG_INT32, d2, 1, (double[]){3, 4}, "big");
    small = named(g, VG_INT32, d2, 1, (double[]){3, 1}, "small");
    expect_static_fail(g, vg_assert_equal(g, small, big, "fail", 3, NULL), "fail", "x (small:0) = ");
    vg_graph_free(g);
    /* test_raises_when_equal_but_non_broadcastable_shapes */
    g = vg_graph_new();
    vg_output s3 = named(g, VG_INT32, (int64_t[]){3}, 1, (double[]){1, 1, 1}, "small");
    vg_output s2 = named(g, VG_INT32, d2, 1, (double[]){1, 1}, "small_2");
    CHECK(vg_assert_equal(g, s3, s2, NULL, 3, NULL) == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Incompatible shapes");
    vg_graph_free(g);
    /* dynamic: fed values fail the run with TF's Assert message */
    g = vg_graph_new();
    vg_output px = vg_placeholder(g, VG_INT32, d2, 1, "x"), py = vg_placeholder(g, VG_INT32, d2, 1, "y");
    chk = vg_assert_equal(g, px, py, NULL, 3, NULL);
    vg_output f[2] = {px, py};
    vg_tensor *fv[2] = {mk(VG_INT32, d2, 1, (double[]){1, 2}), mk(VG_INT32, d2, 1, (double[]){1, 3})};
    CHECK_CODE(run_guarded(g, chk, px, f, fv, 2, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "assertion failed: [] [Condition x == y did not hold element-wise:] [x (x:0) = ] [1 2] "
                               "[y (y:0) = ] [1 3]");
    set(fv[1], 1, 2);
    CHECK_OK(run_guarded(g, chk, px, f, fv, 2, &st), &st);
    /* with a message and summarize 1 */
    chk = vg_assert_equal(g, px, py, "fail", 1, "eq");
    set(fv[1], 0, 7);
    CHECK_CODE(run_guarded(g, chk, px, f, fv, 2, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "assertion failed: [fail] [Condition x == y did not hold element-wise:] [x (x:0) = ] "
                               "[1...] [y (y:0) = ] [7...]");
    CHECK(!strcmp(vg_op_name(chk), "eq/Assert/Assert"));
    kt_teardown(g, NULL, (vg_tensor *[]){fv[0], fv[1]}, 2, NULL, 0);
}

static void test_assert_none_equal(void) {
    int64_t d2[1] = {2};
    vg_graph *g = vg_graph_new();
    /* test_raises_when_equal ("x != y did not hold"; at run time in TF 1.15) */
    vg_output small = named(g, VG_INT32, d2, 1, (double[]){3, 1}, "small");
    vg_op *chk = vg_assert_none_equal(g, small, small, NULL, 3, NULL);
    vg_status st;
    CHECK(chk != NULL);
    CHECK_CODE(run_guarded(g, chk, small, NULL, NULL, 0, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "assertion failed: [] [Condition x != y did not hold for every single element:] "
                               "[x (small:0) = ] [3 1] [y (small:0) = ] [3 1]");
    /* one equal pair is enough */
    vg_output small2 = named(g, VG_INT32, d2, 1, (double[]){3, 2}, "small_2");
    chk = vg_assert_none_equal(g, small, small2, "fail", 3, NULL);
    CHECK_STATUS(run_guarded(g, chk, small, NULL, NULL, 0, &st), &st, VG_INVALID_ARGUMENT, "[fail] [Condition x != y");
    vg_graph_free(g);
    /* test_doesnt_raise_when_not_equal */
    g = vg_graph_new();
    small = named(g, VG_INT32, d2, 1, (double[]){1, 2}, "small");
    vg_output big = named(g, VG_INT32, d2, 1, (double[]){10, 20}, "big");
    expect_ok(g, vg_assert_none_equal(g, big, small, NULL, 3, NULL), big);
    vg_graph_free(g);
}

typedef vg_op *(*binfn)(vg_graph *, vg_output, vg_output, const char *, int, const char *);

/* One of assert_less / _less_equal / _greater / _greater_equal over (a, b) Consts:
 * ok says whether it holds; sym is the condition's symbol. */
static void order_case(binfn fn, const char *sym, const double *a, const double *b, bool ok) {
    int64_t d2[1] = {2};
    vg_graph *g = vg_graph_new();
    vg_output x = named(g, VG_FLOAT, d2, 1, a, "x_c"), y = named(g, VG_FLOAT, d2, 1, b, "y_c");
    vg_op *chk = fn(g, x, y, "failure message", 3, NULL);
    char cond[96];
    snprintf(cond, sizeof cond, "Condition x %s y did not hold element-wise:", sym);
    vg_status st;
    if (ok) expect_ok(g, chk, x);
    else { /* Consts too fail at run time ("failure message.*\n*.* x < y") */
        CHECK(chk != NULL);
        CHECK_STATUS(run_guarded(g, chk, x, NULL, NULL, 0, &st), &st, VG_INVALID_ARGUMENT, "[failure message] [");
        CHECK_STR_CONTAINS(st.msg, cond);
    }
    vg_graph_free(g);
    /* the same at run time */
    g = vg_graph_new();
    vg_output px = vg_placeholder(g, VG_FLOAT, d2, 1, "px"), py = vg_placeholder(g, VG_FLOAT, d2, 1, "py");
    chk = fn(g, px, py, NULL, 3, NULL);
    vg_output f[2] = {px, py};
    vg_tensor *fv[2] = {mk(VG_FLOAT, d2, 1, a), mk(VG_FLOAT, d2, 1, b)};
    vg_code c = run_guarded(g, chk, px, f, fv, 2, &st);
    if (ok) CHECK_OK(c, &st);
    else {
        CHECK_STATUS(c, &st, VG_INVALID_ARGUMENT, cond);
        CHECK_STR_CONTAINS(st.msg, "[x (px:0) = ]");
    }
    kt_teardown(g, NULL, (vg_tensor *[]){fv[0], fv[1]}, 2, NULL, 0);
}

static void test_assert_order(void) {
    const double s[2] = {1, 2}, bg[2] = {3, 4}, mixed[2] = {1, 4};
    /* AssertLessTest */
    order_case(vg_assert_less, "<", s, s, false);   /* test_raises_when_equal */
    order_case(vg_assert_less, "<", bg, s, false);  /* test_raises_when_greater */
    order_case(vg_assert_less, "<", s, bg, true);   /* test_doesnt_raise_when_less */
    order_case(vg_assert_less, "<", mixed, bg, false);
    /* AssertLessEqualTest */
    order_case(vg_assert_less_equal, "<=", s, s, true);
    order_case(vg_assert_less_equal, "<=", bg, s, false);
    /* AssertGreaterTest */
    order_case(vg_assert_greater, ">", s, s, false);
    order_case(vg_assert_greater, ">", s, bg, false);
    order_case(vg_assert_greater, ">", bg, s, true);
    /* AssertGreaterEqualTest */
    order_case(vg_assert_greater_equal, ">=", s, s, true);
    order_case(vg_assert_greater_equal, ">=", s, bg, false);
    /* test_doesnt_raise_when_less_and_broadcastable_shapes: [1] < [3, 2] */
    vg_graph *g = vg_graph_new();
    vg_output one = named(g, VG_INT32, (int64_t[]){1}, 1, (double[]){1}, "small");
    vg_output big = named(g, VG_INT32, (int64_t[]){2}, 1, (double[]){3, 2}, "big");
    expect_ok(g, vg_assert_less(g, one, big, NULL, 3, NULL), one);
    expect_ok(g, vg_assert_greater_equal(g, big, one, NULL, 3, NULL), one);
    vg_graph_free(g);
}

typedef vg_op *(*unfn)(vg_graph *, vg_output, const char *, int, const char *);

static void sign_case(unfn fn, const char *text, const double *v, int n, bool ok) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {n};
    vg_output x = named(g, VG_INT32, d, 1, v, "doug");
    vg_op *chk = fn(g, x, "fail", 3, NULL);
    vg_status st;
    if (ok) expect_ok(g, chk, x);
    else { /* "fail.*doug" at run time */
        CHECK(chk != NULL);
        CHECK_STATUS(run_guarded(g, chk, x, NULL, NULL, 0, &st), &st, VG_INVALID_ARGUMENT,
            "assertion failed: [fail] [");
        CHECK_STR_CONTAINS(st.msg, text);
        CHECK_STR_CONTAINS(st.msg, "x (doug:0) = ");
    }
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "p");
    chk = fn(g, p, NULL, 3, NULL);
    vg_tensor *pv = mk(VG_INT32, d, 1, v);
    vg_code c = run_guarded(g, chk, p, &p, &pv, 1, &st);
    if (ok) CHECK_OK(c, &st);
    else {
        CHECK_STATUS(c, &st, VG_INVALID_ARGUMENT, "assertion failed: [] [");
        CHECK_STR_CONTAINS(st.msg, text);
    }
    vg_tensor_free(pv);
    vg_graph_free(g);
}

static void test_assert_sign(void) {
    const double neg[2] = {-1, -2}, pos[2] = {1, 2}, zero[1] = {0}, zpos[2] = {0, 2}, zneg[2] = {0, -2},
                 some[3] = {0, 2, 3};
    /* AssertNegativeTest */
    sign_case(vg_assert_negative, "Condition x < 0 did not hold element-wise:", neg, 2, true);
    sign_case(vg_assert_negative, "Condition x < 0 did not hold element-wise:", pos, 2, false);
    sign_case(vg_assert_negative, "Condition x < 0 did not hold element-wise:", zero, 1, false);
    sign_case(vg_assert_negative, "x < 0", NULL, 0, true); /* test_empty_tensor_doesnt_raise */
    /* AssertPositiveTest */
    sign_case(vg_assert_positive, "Condition x > 0 did not hold element-wise:", neg, 2, false);
    sign_case(vg_assert_positive, "Condition x > 0 did not hold element-wise:", pos, 2, true);
    sign_case(vg_assert_positive, "Condition x > 0 did not hold element-wise:", some, 3, false);
    /* AssertNonNegativeTest */
    sign_case(vg_assert_non_negative, "Condition x >= 0 did not hold element-wise:", neg, 2, false);
    sign_case(vg_assert_non_negative, "Condition x >= 0 did not hold element-wise:", zpos, 2, true);
    /* AssertNonPositiveTest (TF 1.15 runs its two strings together) */
    sign_case(vg_assert_non_positive, "Condition x <= 0 did not hold element-wise:x (", zneg, 2, true);
    sign_case(vg_assert_non_positive, "Condition x <= 0 did not hold element-wise:x (", zpos, 2, false);
    /* the structure: assert_positive/Const and the nested assert_less */
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "p");
    vg_op *chk = vg_assert_positive(g, p, NULL, 3, NULL);
    /* float data: TF's AssertGuard cond around the Assert; its Merge is the returned op */
    CHECK(chk && !strcmp(vg_op_name(chk), "assert_positive/assert_less/Assert/AssertGuard/Merge"));
    CHECK(vg_graph_op_by_name(g, "assert_positive/assert_less/Assert/AssertGuard/Assert") != NULL);
    CHECK(vg_graph_op_by_name(g, "assert_positive/assert_less/Assert/AssertGuard/NoOp") != NULL);
    CHECK(vg_graph_op_by_name(g, "assert_positive/Const") != NULL);
    CHECK(vg_graph_op_by_name(g, "assert_positive/assert_less/All") != NULL);
    vg_graph_free(g);
}

static void test_assert_rank(void) {
    /* test_rank_zero_tensor_raises_if_rank_too_small_static_rank */
    vg_graph *g = vg_graph_new();
    vg_output t = vg_const_i32(g, 1, "my_tensor");
    CHECK(vg_assert_rank(g, t, 1, "fail", 3, NULL) == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "fail.  Tensor my_tensor:0 must have rank 1.  Received rank 0, shape ()");
    vg_graph_free(g);
    /* test_rank_one_tensor_raises_if_rank_too_large_static_rank */
    g = vg_graph_new();
    t = vg_const_i32_vec(g, (int32_t[]){1, 2}, 2, "my_tensor");
    CHECK(vg_assert_rank(g, t, 0, NULL, 3, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        ".  Tensor my_tensor:0 must have rank 0.  Received rank 1, shape (2,)");
    vg_graph_free(g);
    /* test_rank_zero_tensor_doesnt_raise_if_rank_just_right_static_rank */
    g = vg_graph_new();
    t = vg_const_i32(g, 1, "my_tensor");
    vg_op *chk = vg_assert_rank(g, t, 0, NULL, 3, NULL);
    CHECK(chk && !strcmp(vg_op_name(chk), "assert_rank/static_checks_determined_all_ok"));
    expect_ok(g, chk, t);
    vg_graph_free(g);
    /* test_rank_zero_tensor_raises_if_rank_too_small_dynamic_rank ("fail.*my_tensor.*rank") */
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, NULL, -1, "my_tensor");
    chk = vg_assert_rank(g, p, 1, "fail", 3, NULL);
    CHECK(chk && !strcmp(vg_op_type(chk), "Assert"));
    vg_tensor *v = vg_tensor_new(VG_FLOAT, NULL, 0, NULL);
    CHECK_STATUS(run_guarded(g, chk, p, &p, &v, 1, &st), &st, VG_INVALID_ARGUMENT,
        "assertion failed: [fail] [Tensor my_tensor:0 must have rank] [1] [Received shape: ] []");
    vg_tensor_free(v);
    v = vg_tensor_new(VG_FLOAT, (int64_t[]){3}, 1, NULL);
    CHECK_OK(run_guarded(g, chk, p, &p, &v, 1, &st), &st);
    vg_tensor_free(v);
    vg_graph_free(g);
    /* AssertRankAtLeastTest */
    g = vg_graph_new();
    t = vg_const_i32(g, 1, "my_tensor");
    CHECK(vg_assert_rank_at_least(g, t, 1, "fail", 3, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "fail.  Tensor my_tensor:0 must have rank at least 1.  Received rank 0, shape ()");
    vg_graph_free(g);
    g = vg_graph_new();
    t = vg_const_i32_vec(g, (int32_t[]){1, 2}, 2, "my_tensor");
    expect_ok(g, vg_assert_rank_at_least(g, t, 0, NULL, 3, NULL), t); /* rank too large is fine */
    p = vg_placeholder(g, VG_FLOAT, NULL, -1, "my_tensor_1");
    chk = vg_assert_rank_at_least(g, p, 1, NULL, 3, NULL);
    v = vg_tensor_new(VG_FLOAT, NULL, 0, NULL);
    CHECK_STATUS(run_guarded(g, chk, p, &p, &v, 1, &st), &st, VG_INVALID_ARGUMENT,
        "[Tensor my_tensor_1:0 must have rank at least] [1]");
    vg_tensor_free(v);
    v = vg_tensor_new(VG_FLOAT, (int64_t[]){2, 2}, 2, NULL);
    CHECK_OK(run_guarded(g, chk, p, &p, &v, 1, &st), &st);
    vg_tensor_free(v);
    vg_graph_free(g);
}

static void test_assert_type(void) {
    vg_graph *g = vg_graph_new();
    /* test_doesnt_raise_when_correct_type */
    vg_output ints = named(g, VG_INT64, (int64_t[]){2}, 1, (double[]){1, 2}, "integers");
    vg_op *chk = vg_assert_type(g, ints, VG_INT64, NULL, NULL);
    CHECK(chk && !strcmp(vg_op_name(chk), "assert_type/statically_determined_correct_type"));
    expect_ok(g, chk, ints);
    /* test_raises_when_wrong_type ("must be of type.*int32") */
    vg_output floats = named(g, VG_FLOAT, (int64_t[]){2}, 1, (double[]){1, 2}, "floats");
    CHECK(vg_assert_type(g, floats, VG_INT32, "fail", NULL) == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "fail  floats:0 must be of type <dtype: 'int32'>");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_assert_equal);
    RUN_TEST(test_assert_none_equal);
    RUN_TEST(test_assert_order);
    RUN_TEST(test_assert_sign);
    RUN_TEST(test_assert_rank);
    RUN_TEST(test_assert_type);
    TEST_MAIN_END();
}
