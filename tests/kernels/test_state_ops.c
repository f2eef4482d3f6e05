/* test_state_ops.c - VariableV2, Assign, AssignAdd, AssignSub, IsVariableInitialized,
 * Assert: values, copy-on-write, uninitialized reads and the error paths. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static vg_output const_vec_f(vg_graph *g, const float *v, int64_t n, const char *name) {
    return vg_const_array(g, VG_FLOAT, &n, 1, v, name);
}

static void check_floats(const vg_tensor *t, const float *want, int n) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    const float *d = vg_tensor_data(t);
    for (int i = 0; i < n && i < vg_tensor_num_elements(t); i++) CHECK_NEAR(d[i], want[i], 1e-6);
}

static void test_state__variable_op_attrs(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "v");
    CHECK(v.op != NULL);
    CHECK(strcmp(vg_op_type(v.op), "VariableV2") == 0);
    CHECK(strcmp(vg_op_name(v.op), "v") == 0);
    vg_dtype dt;
    vg_shape sh;
    const char *s;
    size_t len;
    CHECK(vg_op_attr_type_(v.op, "dtype", &dt) && dt == VG_FLOAT);
    CHECK(vg_op_attr_shape(v.op, "shape", &sh) && sh.ndims == 2 && sh.dims[1] == 3);
    CHECK(vg_op_attr_string(v.op, "container", &s, &len) && len == 0);
    CHECK(vg_op_attr_string(v.op, "shared_name", &s, &len) && len == 0);
    CHECK_EQ_INT(vg_output_dtype(v), VG_FLOAT);
    CHECK_EQ_INT(vg_output_shape(v).dims[0], 2);
    vg_graph_free(g);
}

static void test_state__uninitialized_read(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2}, 1, "weights");
    vg_output r = vg_identity(g, v, "r");
    vg_session *s = new_session(g);
    vg_status st;
    vg_tensor *t = fetch_st(s, r, &st);
    CHECK(t == NULL);
    CHECK_STATUS(st.code, &st, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value weights");
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_state__assign_and_read(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2}, 1, "v");
    vg_output a = vg_assign(g, v, const_vec_f(g, (float[]){1, 2}, 2, "c"), true, NULL);
    vg_output r = vg_identity(g, v, "r");
    CHECK(strcmp(vg_op_name(a.op), "Assign") == 0);
    bool b = false;
    CHECK(vg_op_attr_bool(a.op, "validate_shape", &b) && b);
    CHECK(vg_op_attr_bool(a.op, "use_locking", &b) && b);
    vg_dtype dt;
    CHECK(vg_op_attr_type_(a.op, "T", &dt) && dt == VG_FLOAT);
    vg_session *s = new_session(g);
    vg_status st;
    vg_tensor *t = fetch_st(s, a, &st);
    check_floats(t, (float[]){1, 2}, 2);
    vg_tensor_free(t);
    t = fetch_st(s, r, &st);
    check_floats(t, (float[]){1, 2}, 2);
    vg_tensor_free(t);
    /* a second session has its own, uninitialized, slot */
    vg_session *s2 = new_session(g);
    t = fetch_st(s2, r, &st);
    CHECK(t == NULL);
    CHECK_EQ_INT(st.code, VG_FAILED_PRECONDITION);
    vg_session_free(s2);
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_state__assign_shape_mismatch(void) {
    /* build time: both shapes known */
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2}, 1, "v");
    vg_output a = vg_assign(g, v, const_vec_f(g, (float[]){1, 2, 3}, 3, "c"), true, NULL);
    vg_status st;
    CHECK(a.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Assign");
    CHECK_STR_CONTAINS(st.msg, "Dimension 0 in both shapes must be equal, but are 2 and 3");
    vg_graph_free(g);

    /* run time: the value's shape is unknown at build time */
    g = vg_graph_new();
    v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2}, 1, "v");
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "p");
    a = vg_assign(g, v, p, true, NULL);
    CHECK(a.op != NULL);
    vg_session *s = new_session(g);
    vg_tensor *val = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){3}, 1, (float[]){1, 2, 3}, 12, &st);
    vg_tensor *out = NULL;
    CHECK_STATUS(vg_session_run(s, NULL, &p, &val, 1, &a, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "Assign requires shapes of both tensors to match. lhs shape= [2] rhs shape= [3]");
    /* once initialized, the current value's shape counts */
    vg_tensor *ok = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){2}, 1, (float[]){5, 6}, 8, &st);
    CHECK_OK(vg_session_run(s, NULL, &p, &ok, 1, &a, &out, 1, NULL, 0, NULL, &st), &st);
    vg_tensor_free(out);
    CHECK_STATUS(vg_session_run(s, NULL, &p, &val, 1, &a, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "lhs shape= [2] rhs shape= [3]");
    kt_teardown(g, s, (vg_tensor *[]){ok, val}, 2, NULL, 0);
}

static void test_state__assign_no_validate(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){-1}, 1, "v");
    vg_output a = vg_assign(g, v, const_vec_f(g, (float[]){1, 2, 3}, 3, "c"), false, NULL);
    vg_output r = vg_identity(g, v, "r");
    vg_session *s = new_session(g);
    vg_status st;
    vg_tensor *t = fetch_st(s, a, &st);
    vg_tensor_free(t);
    t = fetch_st(s, r, &st);
    check_floats(t, (float[]){1, 2, 3}, 3);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

static void test_state__assign_dtype_mismatch(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){1}, 1, "v");
    int32_t one = 1;
    vg_output a = vg_assign(g, v, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &one, "c"), true, NULL);
    vg_status st;
    CHECK(a.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "Input 'value' of 'Assign' Op has type int32 that does not match type float");
    vg_graph_free(g);
    /* a ref input must come from a variable */
    g = vg_graph_new();
    vg_output c = vg_const_f32(g, 1, "c");
    a = vg_assign(g, c, vg_const_f32(g, 2, "d"), true, NULL);
    CHECK(a.op == NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static void test_state__assign_add_sub(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2}, 1, "v");
    vg_output init = vg_assign(g, v, const_vec_f(g, (float[]){1, 2}, 2, "c"), true, "init");
    vg_output add = vg_assign_add(g, v, const_vec_f(g, (float[]){10, 20}, 2, "d"), NULL);
    vg_output sub = vg_assign_sub(g, v, const_vec_f(g, (float[]){1, 1}, 2, "e"), NULL);
    vg_output r = vg_identity(g, v, "r");
    CHECK(strcmp(vg_op_type(add.op), "AssignAdd") == 0 && strcmp(vg_op_type(sub.op), "AssignSub") == 0);
    bool b = true;
    CHECK(vg_op_attr_bool(add.op, "use_locking", &b) && !b);
    vg_session *s = new_session(g);
    vg_status st;
    /* uninitialized: FAILED_PRECONDITION naming the variable */
    vg_tensor *t = fetch_st(s, add, &st);
    CHECK(t == NULL);
    CHECK_STATUS(st.code, &st, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value v");
    t = fetch_st(s, init, &st);
    vg_tensor_free(t);
    /* hold the current value: the in-place update must not change it (copy-on-write) */
    vg_tensor *held = fetch_st(s, r, &st);
    t = fetch_st(s, add, &st);
    check_floats(t, (float[]){11, 22}, 2);
    vg_tensor_free(t);
    check_floats(held, (float[]){1, 2}, 2);
    vg_tensor_free(held);
    t = fetch_st(s, sub, &st);
    check_floats(t, (float[]){10, 21}, 2);
    vg_tensor_free(t);
    t = fetch_st(s, r, &st);
    check_floats(t, (float[]){10, 21}, 2);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

static void test_state__assign_add_int64(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_INT64, NULL, 0, "step");
    vg_output init = vg_assign(g, v, vg_const_i64(g, 5, "zero"), true, "init");
    vg_output inc = vg_assign_add(g, v, vg_const_i64(g, 1, "one"), "inc");
    vg_output dec = vg_assign_sub(g, v, vg_const_i64(g, 3, "three"), "dec");
    vg_session *s = new_session(g);
    vg_status st;
    vg_tensor *t = fetch_st(s, init, &st);
    vg_tensor_free(t);
    for (int i = 0; i < 3; i++) {
        t = fetch_st(s, inc, &st);
        CHECK(t && *(int64_t *)vg_tensor_data(t) == 6 + i);
        vg_tensor_free(t);
    }
    t = fetch_st(s, dec, &st);
    CHECK(t && *(int64_t *)vg_tensor_data(t) == 5);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

static void test_state__assign_add_shape_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2}, 1, "v");
    vg_output a = vg_assign_add(g, v, const_vec_f(g, (float[]){1, 2, 3}, 3, "c"), NULL);
    vg_status st;
    CHECK(a.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "AssignAdd");
    vg_graph_free(g);

    g = vg_graph_new();
    v = vg_variable_op(g, VG_FLOAT, (int64_t[]){2}, 1, "v");
    vg_output init = vg_assign(g, v, const_vec_f(g, (float[]){1, 2}, 2, "c"), true, "init");
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "p");
    a = vg_assign_sub(g, v, p, NULL);
    vg_session *s = new_session(g);
    vg_tensor *t = fetch_st(s, init, &st);
    vg_tensor_free(t);
    vg_tensor *val = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){3}, 1, (float[]){1, 2, 3}, 12, &st);
    CHECK_STATUS(vg_session_run(s, NULL, &p, &val, 1, &a, &t, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "must be the same size");
    kt_teardown(g, s, (vg_tensor *[]){val}, 1, NULL, 0);
}

static void test_state__is_variable_initialized(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_DOUBLE, (int64_t[]){3}, 1, "v");
    vg_output init = vg_assign(g, v, vg_const_fill(g, VG_DOUBLE, (int64_t[]){3}, 1, 0.5, "c"), true, "init");
    vg_output is = vg_is_variable_initialized(g, v, NULL);
    CHECK(strcmp(vg_op_type(is.op), "IsVariableInitialized") == 0);
    CHECK_EQ_INT(vg_output_dtype(is), VG_BOOL);
    CHECK_EQ_INT(vg_output_shape(is).ndims, 0);
    vg_dtype dt;
    CHECK(vg_op_attr_type_(is.op, "dtype", &dt) && dt == VG_DOUBLE);
    vg_session *s = new_session(g);
    vg_status st;
    vg_tensor *t = fetch_st(s, is, &st);
    CHECK(t && !*(bool *)vg_tensor_data(t));
    vg_tensor_free(t);
    t = fetch_st(s, init, &st);
    vg_tensor_free(t);
    t = fetch_st(s, is, &st);
    CHECK(t && *(bool *)vg_tensor_data(t));
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

static void test_state__assert(void) {
    vg_graph *g = vg_graph_new();
    vg_output cond = vg_placeholder(g, VG_BOOL, NULL, 0, "cond");
    int32_t iv[4] = {1, 2, 3, 4};
    vg_output data[3] = {vg_const_string(g, "x is", "msg"), vg_const_array(g, VG_INT32, (int64_t[]){4}, 1, iv, "x"),
                         vg_const_f32(g, 1.5f, "y")};
    vg_op *as = vg_assert(g, cond, data, 3, 3, NULL);
    CHECK(as != NULL);
    CHECK(strcmp(vg_op_type(as), "Assert") == 0);
    int64_t summ = 0;
    CHECK(vg_op_attr_int(as, "summarize", &summ) && summ == 3);
    CHECK_EQ_INT(vg_op_num_outputs(as), 0);
    vg_session *s = new_session(g);
    vg_status st;
    vg_tensor *c = vg_tensor_new_scalar_bool(true, &st);
    CHECK_OK(vg_session_run(s, NULL, &cond, &c, 1, NULL, NULL, 0, &as, 1, NULL, &st), &st);
    vg_tensor_free(c);
    c = vg_tensor_new_scalar_bool(false, &st);
    CHECK_STATUS(vg_session_run(s, NULL, &cond, &c, 1, NULL, NULL, 0, &as, 1, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "assertion failed: [x is] [1 2 3...] [1.5]");
    kt_teardown(g, s, (vg_tensor *[]){c}, 1, NULL, 0);
}

static void test_state__assert_matrix_and_bad_condition(void) {
    vg_graph *g = vg_graph_new();
    vg_output cond = vg_placeholder(g, VG_BOOL, (int64_t[]){-1}, 1, "cond");
    float m[4] = {0.25f, 2, 3, 4};
    vg_output data = vg_const_array(g, VG_FLOAT, (int64_t[]){2, 2}, 2, m, "m");
    vg_op *as = vg_assert(g, cond, &data, 1, 10, "check");
    vg_session *s = new_session(g);
    vg_status st;
    vg_tensor *c = vg_tensor_new_copy(VG_BOOL, (int64_t[]){1}, 1, (bool[]){false}, 1, &st);
    CHECK_STATUS(vg_session_run(s, NULL, &cond, &c, 1, NULL, NULL, 0, &as, 1, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "assertion failed: [[0.25 2][3 4]]");
    vg_tensor_free(c);
    c = vg_tensor_new_copy(VG_BOOL, (int64_t[]){2}, 1, (bool[]){true, true}, 2, &st);
    CHECK_STATUS(vg_session_run(s, NULL, &cond, &c, 1, NULL, NULL, 0, &as, 1, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "should be a scalar");
    vg_tensor_free(c);
    vg_session_free(s);
    /* a non-bool condition fails at build time */
    vg_op *bad = vg_assert(g, vg_const_f32(g, 1, "f"), NULL, 0, 3, NULL);
    CHECK(bad == NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_state__variable_op_attrs);
    RUN_TEST(test_state__uninitialized_read);
    RUN_TEST(test_state__assign_and_read);
    RUN_TEST(test_state__assign_shape_mismatch);
    RUN_TEST(test_state__assign_no_validate);
    RUN_TEST(test_state__assign_dtype_mismatch);
    RUN_TEST(test_state__assign_add_sub);
    RUN_TEST(test_state__assign_add_int64);
    RUN_TEST(test_state__assign_add_shape_errors);
    RUN_TEST(test_state__is_variable_initialized);
    RUN_TEST(test_state__assert);
    RUN_TEST(test_state__assert_matrix_and_bad_condition);
    TEST_MAIN_END();
}
