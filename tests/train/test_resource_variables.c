/* test_resource_variables.c - resource variables (vigil/resource_variables.h): the
 * graph-mode cases of TF 1.15's resource_variable_ops_test.py that C can express (each
 * cites its TF test), the read-at-execution / snapshot semantics, the errors with TF's
 * codes and messages, and the gradients of ReadVariableOp and ResourceGather. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

static vg_code run_op(vg_session *s, vg_op *op, vg_status *st) { return vg_session_run_targets(s, &op, 1, st); }

static vg_output c_i32(vg_graph *g, int32_t v) { return vg_const_i32(g, v, "Const"); }
static vg_output c_i32_mat(vg_graph *g, int32_t v) {
    return vg_const_array(g, VG_INT32, (int64_t[]){1, 1}, 2, &v, "Const");
}
static vg_output c_f32_vec(vg_graph *g, const float *v, int64_t n) {
    return vg_const_array(g, VG_FLOAT, &n, 1, v, "Const");
}

static void check_f32(const vg_tensor *t, const float *want, int64_t n) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_dtype(t), VG_FLOAT);
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    const float *d = vg_tensor_data(t);
    for (int64_t i = 0; i < n && i < vg_tensor_num_elements(t); i++) CHECK_NEAR(d[i], want[i], 1e-6);
}

static void check_i32(const vg_tensor *t, const int32_t *want, int64_t n) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_dtype(t), VG_INT32);
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    const int32_t *d = vg_tensor_data(t);
    for (int64_t i = 0; i < n && i < vg_tensor_num_elements(t); i++) CHECK_EQ_INT(d[i], want[i]);
}

/* Runs init, then fetches x; returns it (NULL on failure). */
static vg_tensor *init_then_fetch(vg_session *s, vg_op *init, vg_output x, vg_status *st) {
    if (init && run_op(s, init, st) != VG_OK) return NULL;
    return fetch_st(s, x, st);
}

/* ------------------------------------------------------------------------ */

/* TF: testHandleDtypeShapeMatch - a float value and a [1] value do not match the
 * handle's int32 scalar at build time (ValueError); an int32 scalar does. */
static void test_rv__handle_dtype_shape_match(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    CHECK(vg_assign_variable_op(g, h, vg_const_f32(g, 0.0f, "f"), NULL) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected int32 got float");
    vg_graph_free(g);

    g = vg_graph_new();
    h = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    int32_t zero = 0;
    CHECK(vg_assign_variable_op(g, h, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &zero, "c"), NULL) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Shapes must be equal rank, but are 0 and 1");
    vg_graph_free(g);

    g = vg_graph_new();
    h = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    vg_op *a = vg_assign_variable_op(g, h, c_i32(g, 0), NULL);
    CHECK(a != NULL);
    CHECK_EQ_INT(vg_op_num_outputs(a), 0);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, a, &st), &st);
    free_session_graph(s, g);
}

/* The ops' TF attrs: VarHandleOp's shared_name defaults to its name (as TF's Python
 * passes it), the handle is a scalar resource. */
static void test_rv__op_attrs(void) {
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_FLOAT, (int64_t[]){2, 3}, 2, NULL, NULL, "w");
    vg_output h2 = vg_var_handle_op(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "c1", "shared", "w");
    CHECK(h.op && h2.op);
    CHECK(strcmp(vg_op_type(h.op), "VarHandleOp") == 0);
    CHECK(strcmp(vg_op_name(h2.op), "w_1") == 0);
    const char *sv;
    size_t len;
    CHECK(vg_op_attr_string(h.op, "shared_name", &sv, &len) && len == 1 && memcmp(sv, "w", 1) == 0);
    CHECK(vg_op_attr_string(h.op, "container", &sv, &len) && len == 0);
    CHECK(vg_op_attr_string(h2.op, "shared_name", &sv, &len) && len == 6 && memcmp(sv, "shared", 6) == 0);
    CHECK(vg_op_attr_string(h2.op, "container", &sv, &len) && len == 2);
    vg_dtype dt;
    vg_shape sh;
    CHECK(vg_op_attr_type_(h.op, "dtype", &dt) && dt == VG_FLOAT);
    CHECK(vg_op_attr_shape(h.op, "shape", &sh) && sh.ndims == 2 && sh.dims[0] == 2 && sh.dims[1] == 3);
    CHECK_EQ_INT(vg_output_dtype(h), VG_RESOURCE);
    CHECK_EQ_INT(vg_output_shape(h).ndims, 0);
    CHECK(vg_is_resource_variable(h));
    CHECK_EQ_INT(vg_resource_variable_dtype(h), VG_FLOAT);
    CHECK_EQ_INT(vg_resource_variable_shape(h).dims[1], 3);
    vg_output r = vg_read_variable_op(g, h, VG_FLOAT, NULL);
    CHECK(strcmp(vg_op_name(r.op), "ReadVariableOp") == 0);
    CHECK_EQ_INT(vg_output_dtype(r), VG_FLOAT);
    CHECK_EQ_INT(vg_output_shape(r).ndims, 2);
    CHECK_EQ_INT(vg_output_shape(r).dims[0], 2);
    vg_op *d = vg_destroy_resource_op(g, h, false, NULL);
    bool b = true;
    CHECK(d && vg_op_attr_bool(d, "ignore_lookup_error", &b) && !b);
    vg_output vs = vg_variable_shape(g, h, VG_INT64, NULL);
    CHECK_EQ_INT(vg_output_dtype(vs), VG_INT64);
    CHECK_EQ_INT(vg_output_shape(vs).dims[0], 2);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* TF: testFetchHandle - the handle itself can be fetched. */
static void test_rv__fetch_handle(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, (int64_t[]){1}, 1, NULL, NULL, "foo");
    vg_session *s = new_session(g);
    vg_tensor *t = fetch_st(s, h, &st);
    CHECK(t != NULL);
    CHECK_EQ_INT(vg_tensor_dtype(t), VG_RESOURCE);
    CHECK_EQ_INT(vg_tensor_num_elements(t), 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* TF: testReadVariableDtypeMismatchEager, in graph mode: at build time against the
 * handle's dtype; at run time (a second handle of another dtype naming the same
 * variable) the kernel's "Expected float got int32". */
static void test_rv__read_variable_dtype_mismatch(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, (int64_t[]){1}, 1, NULL, NULL, "foo");
    CHECK(vg_read_variable_op(g, h, VG_FLOAT, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected int32 got float");
    vg_graph_free(g);

    g = vg_graph_new();
    h = vg_var_handle_op(g, VG_INT32, (int64_t[]){1}, 1, NULL, NULL, "foo");
    int32_t one = 1;
    vg_op *a = vg_assign_variable_op(g, h, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &one, "c"), NULL);
    vg_output hf = vg_var_handle_op(g, VG_FLOAT, (int64_t[]){1}, 1, NULL, "foo", "foo_f");
    vg_output r = vg_read_variable_op(g, hf, VG_FLOAT, NULL);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, a, &st), &st);
    CHECK(fetch_st(s, r, &st) == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "Trying to read variable with wrong dtype. Expected float got int32");
    free_session_graph(s, g);
}

/* TF: testAssignVariableDtypeMismatchEager, in graph mode through a second handle. */
static void test_rv__assign_variable_dtype_mismatch(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, (int64_t[]){1}, 1, NULL, NULL, "foo");
    int32_t one = 1;
    vg_op *a = vg_assign_variable_op(g, h, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &one, "c"), NULL);
    vg_output hf = vg_var_handle_op(g, VG_FLOAT, (int64_t[]){1}, 1, NULL, "foo", "foo_f");
    vg_op *af = vg_assign_variable_op(g, hf, c_f32_vec(g, (float[]){1}, 1), NULL);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, a, &st), &st);
    CHECK_STATUS(run_op(s, af, &st), &st, VG_INVALID_ARGUMENT,
                 "Trying to assign variable with wrong dtype. Expected int32 got float");
    free_session_graph(s, g);
}

/* TF: testDtypeSurvivesIdentity - the handle's dtype and shape are known through an
 * Identity. */
static void test_rv__dtype_survives_identity(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    vg_output id = vg_identity(g, h, NULL);
    CHECK_EQ_INT(vg_output_dtype(id), VG_RESOURCE);
    vg_op *a = vg_assign_variable_op(g, id, c_i32(g, 0), NULL);
    vg_output r = vg_read_variable_op(g, id, VG_INT32, NULL);
    CHECK_EQ_INT(vg_output_shape(r).ndims, 0);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, a, &st), &st);
    vg_tensor *t = fetch_st(s, r, &st);
    check_i32(t, (int32_t[]){0}, 1);
    vg_tensor_free(t);
    vg_session_free(s);
    CHECK(vg_assign_variable_op(g, id, vg_const_f32(g, 0, "f"), NULL) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Expected int32 got float");
    vg_graph_free(g);
}

/* TF: testCreateRead */
static void test_rv__create_read(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    vg_op *a = vg_assign_variable_op(g, h, c_i32(g, 1), NULL);
    vg_output r = vg_read_variable_op(g, h, VG_INT32, NULL);
    vg_session *s = new_session(g);
    vg_tensor *t = init_then_fetch(s, a, r, &st);
    check_i32(t, (int32_t[]){1}, 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* TF: testManyAssigns - reads ordered by control dependencies see the writes before
 * them and not those after, in one run. */
static void test_rv__many_assigns(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    vg_op *create = vg_assign_variable_op(g, h, c_i32(g, 1), NULL);
    vg_graph_push_control_deps(g, &create, 1);
    vg_output first = vg_read_variable_op(g, h, VG_INT32, NULL);
    vg_graph_pop_control_deps(g);
    vg_graph_push_control_deps(g, &first.op, 1);
    vg_op *write = vg_assign_variable_op(g, h, c_i32(g, 2), NULL);
    vg_graph_pop_control_deps(g);
    vg_graph_push_control_deps(g, &write, 1);
    vg_output second = vg_read_variable_op(g, h, VG_INT32, NULL);
    vg_graph_pop_control_deps(g);
    vg_session *s = new_session(g);
    for (int rep = 0; rep < 20; rep++) { /* the order holds every time, whatever the scheduling */
        vg_output fetches[2] = {first, second};
        vg_tensor *out[2] = {NULL, NULL};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fetches, out, 2, NULL, 0, NULL, &st), &st);
        check_i32(out[0], (int32_t[]){1}, 1);
        check_i32(out[1], (int32_t[]){2}, 1);
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
    }
    free_session_graph(s, g);
}

/* TF: testAssignAdd */
static void test_rv__assign_add(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    vg_op *a = vg_assign_variable_op(g, h, c_i32(g, 1), NULL);
    vg_op *add = vg_assign_add_variable_op(g, h, c_i32(g, 1), NULL);
    vg_output r = vg_read_variable_op(g, h, VG_INT32, NULL);
    CHECK_EQ_INT(vg_op_num_outputs(add), 0);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, a, &st), &st);
    CHECK_OK(run_op(s, add, &st), &st);
    vg_tensor *t = fetch_st(s, r, &st);
    check_i32(t, (int32_t[]){2}, 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* One scatter op on a [1, 1] int32 variable holding init; returns the value after. */
typedef vg_op *(*scatter_fn)(vg_graph *, vg_output, vg_output, vg_output, const char *);
static int32_t scatter_once(scatter_fn fn, int32_t init, int32_t upd, bool scalar) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_INT32, (int64_t[]){1, 1}, 2, NULL, NULL, NULL);
    vg_op *a = vg_assign_variable_op(g, h, c_i32_mat(g, init), NULL);
    int32_t zero = 0;
    vg_output ix = vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &zero, "indices");
    vg_op *sc = fn(g, h, ix, scalar ? c_i32(g, upd) : c_i32_mat(g, upd), NULL);
    vg_output r = vg_read_variable_op(g, h, VG_INT32, NULL);
    int32_t got = INT32_MIN;
    vg_session *s = new_session(g);
    CHECK(sc != NULL);
    if (s && sc) {
        CHECK_OK(run_op(s, a, &st), &st);
        CHECK_OK(run_op(s, sc, &st), &st);
        vg_tensor *t = fetch_st(s, r, &st);
        CHECK(t && vg_tensor_num_elements(t) == 1 && vg_tensor_ndims(t) == 2);
        if (t) got = *(const int32_t *)vg_tensor_data(t);
        vg_tensor_free(t);
    }
    free_session_graph(s, g);
    return got;
}

/* TF: testScatterAdd, testScatterSub, testScatterMul, testScatterDiv, testScatterMin,
 * testScatterMax and their *Scalar variants. */
static void test_rv__scatter_ops(void) {
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_add, 1, 2, false), 3);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_sub, 1, 2, false), -1);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_mul, 1, 5, false), 5);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_div, 6, 3, false), 2);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_min, 6, 3, false), 3);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_max, 6, 3, false), 6);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_update, 6, 3, false), 3);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_add, 1, 2, true), 3);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_sub, 1, 2, true), -1);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_mul, 1, 5, true), 5);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_div, 6, 3, true), 2);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_min, 6, 3, true), 3);
    CHECK_EQ_INT(scatter_once(vg_resource_scatter_max, 6, 3, true), 6);
}

/* Repeated indices apply in order; rows not named stay; bad indices change nothing. */
static void test_rv__scatter_rows(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v =
        vg_resource_variable_new(g, "v", c_f32_vec(g, (float[]){1, 2, 3, 4}, 4), 0);
    int32_t ix[3] = {1, 3, 1};
    vg_output idx = vg_const_array(g, VG_INT32, (int64_t[]){3}, 1, ix, "ix");
    vg_op *add = vg_resource_scatter_add(g, v.handle, idx, c_f32_vec(g, (float[]){10, 20, 30}, 3), NULL);
    int64_t bad[2] = {0, 4};
    vg_output bidx = vg_const_array(g, VG_INT64, (int64_t[]){2}, 1, bad, "bad");
    vg_op *badop = vg_resource_scatter_update(g, v.handle, bidx, c_f32_vec(g, (float[]){7, 7}, 2), NULL);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, v.initializer, &st), &st);
    CHECK_OK(run_op(s, add, &st), &st);
    vg_tensor *t = fetch_st(s, v.value, &st);
    check_f32(t, (float[]){1, 42, 3, 24}, 4);
    vg_tensor_free(t);
    CHECK_STATUS(run_op(s, badop, &st), &st, VG_INVALID_ARGUMENT, "indices[1] = 4 is not in [0, 4)");
    t = fetch_st(s, v.value, &st);
    check_f32(t, (float[]){1, 42, 3, 24}, 4);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* TF: testScatterUpdateString, testScatterUpdateStringScalar */
static void test_rv__scatter_update_string(void) {
    vg_status st;
    for (int scalar = 0; scalar < 2; scalar++) {
        vg_graph *g = vg_graph_new();
        vg_output h = vg_var_handle_op(g, VG_STRING, (int64_t[]){1, 1}, 2, NULL, NULL, NULL);
        vg_tensor *a = vg_tensor_new(VG_STRING, (int64_t[]){1, 1}, 2, &st);
        vg_tensor_set_string(a, 0, "a", 1, &st);
        vg_output ca = vg_const(g, a, "a");
        vg_tensor_free(a);
        vg_tensor *b = vg_tensor_new(VG_STRING, (int64_t[]){1, 1}, scalar ? 0 : 2, &st);
        vg_tensor_set_string(b, 0, "b", 1, &st);
        vg_output cb = vg_const(g, b, "b");
        vg_tensor_free(b);
        vg_op *as = vg_assign_variable_op(g, h, ca, NULL);
        int32_t zero = 0;
        vg_op *up = vg_resource_scatter_update(g, h, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &zero, "i"), cb,
                                               NULL);
        vg_output r = vg_read_variable_op(g, h, VG_STRING, NULL);
        vg_session *s = new_session(g);
        CHECK_OK(run_op(s, as, &st), &st);
        CHECK_OK(run_op(s, up, &st), &st);
        vg_tensor *t = fetch_st(s, r, &st);
        CHECK(t != NULL);
        size_t n = 0;
        const char *str = t ? vg_tensor_string(t, 0, &n) : NULL;
        CHECK(str && n == 1 && str[0] == 'b');
        vg_tensor_free(t);
        free_session_graph(s, g);
    }
}

/* TF: testScatterUpdateInvalidArgs - updates [3] for indices [2] fail at build time. */
static void test_rv__scatter_update_invalid_args(void) {
    vg_graph *g = vg_graph_new();
    int32_t init[4] = {0, 1, 2, 3}, ix[2] = {0, 1}, up[3] = {0, 1, 2};
    vg_resource_variable v = vg_resource_variable_new(
        g, "update", vg_const_array(g, VG_INT32, (int64_t[]){4}, 1, init, "init"), 0);
    CHECK(v.handle_op != NULL);
    vg_op *op = vg_resource_scatter_update(g, v.handle, vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, ix, "ix"),
                                           vg_const_array(g, VG_INT32, (int64_t[]){3}, 1, up, "up"), NULL);
    CHECK(op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Dimension 0 in both shapes must be equal, but are 3 and 2. Shapes are [3] and [2].");
    vg_graph_free(g);
}

/* TF: testGPUInt64 (on the CPU): an int64 resource variable. */
static void test_rv__int64(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, NULL, vg_const_i64(g, 1, "one"), 0);
    CHECK(strcmp(vg_op_name(v.handle_op), "Variable") == 0);
    CHECK_EQ_INT(v.dtype, VG_INT64);
    vg_session *s = new_session(g);
    vg_tensor *t = init_then_fetch(s, v.initializer, v.value, &st);
    CHECK(t && vg_tensor_dtype(t) == VG_INT64 && *(const int64_t *)vg_tensor_data(t) == 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* ResourceVariable's ops as TF names them, in its collections; from_handle finds the
 * parts again (TF: testToFromProto's handle and graph element). */
static void test_rv__variable_layout(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_push_scope(g, "foo");
    vg_output c = vg_const_f32(g, 300.0f, "c");
    vg_resource_variable v = vg_resource_variable_new(g, "var6", c, VG_VAR_TRAINABLE);
    vg_graph_pop_scope(g);
    CHECK(v.handle_op != NULL);
    if (!v.handle_op) {
        vg_graph_free(g);
        return;
    }
    /* TF: testSharedNameWithNamescope - shared_name is the full name */
    CHECK(strcmp(vg_op_name(v.handle_op), "foo/var6") == 0);
    const char *sv;
    size_t len;
    CHECK(vg_op_attr_string(v.handle_op, "shared_name", &sv, &len) && len == 8 && memcmp(sv, "foo/var6", 8) == 0);
    CHECK(strcmp(vg_op_name(v.initializer), "foo/var6/Assign") == 0);
    CHECK(strcmp(vg_op_type(v.initializer), "AssignVariableOp") == 0);
    CHECK(strcmp(vg_op_name(v.value.op), "foo/var6/Read/ReadVariableOp") == 0);
    CHECK(strcmp(vg_op_name(v.is_initialized.op), "foo/var6/IsInitialized/VarIsInitializedOp") == 0);
    CHECK(v.initial_value.op == c.op);
    int n;
    const vg_output *gv = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    CHECK(n == 1 && gv[0].op == v.handle_op);
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK(n == 1 && tv[0].op == v.handle_op);
    CHECK(vg_variable_initializer(v.handle_op) == v.initializer);
    vg_resource_variable w = vg_resource_variable_from_handle(v.handle);
    CHECK(w.handle_op == v.handle_op && w.value.op == v.value.op && w.initializer == v.initializer);
    CHECK(w.initial_value.op == c.op && w.is_initialized.op == v.is_initialized.op && w.dtype == VG_FLOAT);
    CHECK(vg_resource_variable_from_handle(c).handle_op == NULL);
    /* a local variable goes to local_variables only */
    vg_resource_variable l = vg_resource_variable_new(g, "l", vg_const_f32(g, 1, "lc"), VG_VAR_LOCAL);
    CHECK(l.handle_op != NULL);
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 1);
    const vg_output *lv = vg_graph_collection(g, VG_LOCAL_VARIABLES, &n);
    CHECK(n == 1 && lv[0].op == l.handle_op);
    /* a name in use is made unique, as tf.Variable's name_scope does */
    vg_resource_variable l2 = vg_resource_variable_new(g, "l", vg_const_f32(g, 1, "lc"), 0);
    CHECK(l2.handle_op && strcmp(vg_op_name(l2.handle_op), "l_1") == 0);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* TF: testInitFn, testInitFnDtype - an initializer's value is built under
 * "<name>/Initializer/"; testInitializeAllVariables. */
static void test_rv__init_fn(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new_init(g, NULL, VG_FLOAT, NULL, 0, vg_init_constant(1), 0);
    CHECK(v.handle_op != NULL);
    CHECK_EQ_INT(vg_output_dtype(v.value), VG_FLOAT);
    CHECK(strncmp(vg_op_name(v.initial_value.op), "Variable/Initializer/", 21) == 0);
    vg_resource_variable w = vg_resource_variable_new_init(g, "w", VG_FLOAT, (int64_t[]){2, 3}, 2, vg_init_ones(), 0);
    CHECK(w.handle_op && strcmp(vg_op_name(w.initial_value.op), "w/Initializer/ones") == 0);
    vg_op *init = vg_global_variables_initializer(g);
    CHECK(init != NULL);
    vg_session *s = new_session(g);
    vg_tensor *t = init_then_fetch(s, init, v.value, &st);
    check_f32(t, (float[]){1}, 1);
    vg_tensor_free(t);
    t = fetch_st(s, w.value, &st);
    check_f32(t, (float[]){1, 1, 1, 1, 1, 1}, 6);
    CHECK(t && vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 1) == 3);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* TF: testAssignMethod, testAssignAddMethod, testAssignSubMethod (read_value=True is a
 * read after the assign). */
static void test_rv__assign_methods(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "var0", vg_const_f32(g, 1.0f, "c"), 0);
    vg_op *a2 = vg_resource_variable_assign(g, v.handle, vg_const_f32(g, 2.0f, "c2"), NULL);
    vg_op *a3 = vg_resource_variable_assign(g, v.handle, vg_const_f32(g, 3.0f, "c3"), NULL);
    vg_output a3r = vg_resource_variable_read_after(g, v.handle, a3);
    vg_op *add = vg_resource_variable_assign_add(g, v.handle, vg_const_f32(g, 1.0f, "one"), NULL);
    vg_output addr = vg_resource_variable_read_after(g, v.handle, add);
    vg_op *sub = vg_resource_variable_assign_sub(g, v.handle, vg_const_f32(g, 1.5f, "onehalf"), NULL);
    vg_output subr = vg_resource_variable_read_after(g, v.handle, sub);
    vg_output rv = vg_resource_variable_read_value(g, v.handle);
    CHECK(strcmp(vg_op_name(rv.op), "Identity") == 0 && strcmp(vg_op_name(vg_op_input(rv.op, 0).op),
                                                                "Read/ReadVariableOp") == 0);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, v.initializer, &st), &st);
    CHECK_OK(run_op(s, a2, &st), &st);
    vg_tensor *t = fetch_st(s, v.value, &st);
    check_f32(t, (float[]){2}, 1);
    vg_tensor_free(t);
    t = fetch_st(s, a3r, &st);
    check_f32(t, (float[]){3}, 1);
    vg_tensor_free(t);
    t = fetch_st(s, addr, &st);
    check_f32(t, (float[]){4}, 1);
    vg_tensor_free(t);
    t = fetch_st(s, subr, &st);
    check_f32(t, (float[]){2.5f}, 1);
    vg_tensor_free(t);
    t = fetch_st(s, rv, &st);
    check_f32(t, (float[]){2.5f}, 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* The brief's ordering cases: a read under control_dependencies([assign_add]) sees the
 * update; a read ordered before an assign in the same run keeps its old value (a
 * snapshot: the in-place AssignAdd copies the shared value first; AssignVariableOp
 * replaces it). TF: testCachedValueReadBeforeWrite with the order made explicit. */
static void test_rv__read_ordering_and_snapshots(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "v", c_f32_vec(g, (float[]){1, 2}, 2), 0);
    /* read, then (after it) assign_add, then a read after that */
    vg_output before = vg_read_variable_op(g, v.handle, VG_FLOAT, "before");
    vg_graph_push_control_deps(g, &before.op, 1);
    vg_op *add = vg_assign_add_variable_op(g, v.handle, c_f32_vec(g, (float[]){10, 20}, 2), NULL);
    vg_graph_pop_control_deps(g);
    vg_graph_push_control_deps(g, &add, 1);
    vg_output after = vg_read_variable_op(g, v.handle, VG_FLOAT, "after");
    vg_graph_pop_control_deps(g);
    /* read, then a whole new value */
    vg_output before2 = vg_read_variable_op(g, v.handle, VG_FLOAT, "before2");
    vg_graph_push_control_deps(g, &before2.op, 1);
    vg_op *set = vg_assign_variable_op(g, v.handle, c_f32_vec(g, (float[]){-1, -2}, 2), NULL);
    vg_graph_pop_control_deps(g);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, v.initializer, &st), &st);
    for (int rep = 0; rep < 10; rep++) {
        vg_output f[2] = {before, after};
        vg_tensor *out[2] = {NULL, NULL};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, out, 2, NULL, 0, NULL, &st), &st);
        float b0 = 1 + 10.0f * (float)rep, b1 = 2 + 20.0f * (float)rep;
        check_f32(out[0], (float[]){b0, b1}, 2);
        check_f32(out[1], (float[]){b0 + 10, b1 + 20}, 2);
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
    }
    /* a value fetched earlier is not changed by a later in-place update either */
    vg_tensor *held = fetch_st(s, v.value, &st);
    CHECK_OK(run_op(s, add, &st), &st);
    check_f32(held, (float[]){101, 202}, 2);
    vg_tensor_free(held);
    vg_output f2[1] = {before2};
    vg_tensor *o2[1] = {NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f2, o2, 1, &set, 1, NULL, &st), &st);
    check_f32(o2[0], (float[]){111, 222}, 2);
    vg_tensor_free(o2[0]);
    vg_tensor *t = fetch_st(s, v.value, &st);
    check_f32(t, (float[]){-1, -2}, 2);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* TF: testSharedName - a second handle with the variable's shared_name reads it; an
 * unknown shared_name does not exist. */
static void test_rv__shared_name(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "var4", vg_const_f32(g, 300.0f, "c"), 0);
    vg_op *init = vg_global_variables_initializer(g);
    vg_output w = vg_var_handle_op(g, VG_FLOAT, NULL, 0, "", "var4", NULL);
    vg_output wr = vg_read_variable_op(g, w, VG_FLOAT, NULL);
    vg_output x = vg_var_handle_op(g, VG_FLOAT, NULL, 0, "", "var5", NULL);
    vg_output xr = vg_read_variable_op(g, x, VG_FLOAT, NULL);
    /* another container is another variable */
    vg_output y = vg_var_handle_op(g, VG_FLOAT, NULL, 0, "other", "var4", NULL);
    vg_output yr = vg_read_variable_op(g, y, VG_FLOAT, NULL);
    CHECK(v.handle_op != NULL);
    vg_session *s = new_session(g);
    vg_tensor *t = init_then_fetch(s, init, wr, &st);
    check_f32(t, (float[]){300}, 1);
    vg_tensor_free(t);
    CHECK(fetch_st(s, xr, &st) == NULL);
    EXPECT_STATUS(&st, VG_FAILED_PRECONDITION, "Resource localhost/var5/N10tensorflow3VarE does not exist");
    CHECK(fetch_st(s, yr, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "Error while reading resource variable var4 from Container: other.");
    /* each session has its own variables */
    vg_session *s2 = new_session(g);
    EXPECT_REFUSED(fetch_st(s2, wr, &st), &st, VG_FAILED_PRECONDITION);
    vg_session_free(s2);
    free_session_graph(s, g);
}

/* Reading or updating a variable that does not exist yet: TF 1.15's codes and
 * messages; VarIsInitializedOp and report_uninitialized_variables see it. */
static void test_rv__uninitialized_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "v", c_f32_vec(g, (float[]){1, 2}, 2), 0);
    vg_op *add = vg_resource_variable_assign_add(g, v.handle, c_f32_vec(g, (float[]){1, 1}, 2), NULL);
    vg_output gather = vg_resource_variable_sparse_read(g, v.handle, vg_const_i32(g, 0, "i"), NULL);
    vg_output shape = vg_variable_shape(g, v.handle, VG_INT32, NULL);
    vg_output report = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_session *s = new_session(g);
    EXPECT_REFUSED(fetch_st(s, v.value, &st), &st, VG_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(st.msg, "Error while reading resource variable v from Container: localhost. This could mean "
                               "that the variable was uninitialized. Not found: Resource "
                               "localhost/v/N10tensorflow3VarE does not exist.");
    CHECK_STATUS(run_op(s, add, &st), &st, VG_NOT_FOUND, "Resource localhost/v/N10tensorflow3VarE does not exist.");
    EXPECT_REFUSED(fetch_st(s, gather, &st), &st, VG_NOT_FOUND);
    EXPECT_REFUSED(fetch_st(s, shape, &st), &st, VG_NOT_FOUND);
    vg_tensor *t = fetch_st(s, v.is_initialized, &st);
    CHECK(t && *(const bool *)vg_tensor_data(t) == false);
    vg_tensor_free(t);
    t = fetch_st(s, report, &st);
    CHECK(t && vg_tensor_num_elements(t) == 1);
    size_t n = 0;
    const char *name = t ? vg_tensor_string(t, 0, &n) : NULL;
    CHECK(name && n == 1 && name[0] == 'v');
    vg_tensor_free(t);
    CHECK_OK(run_op(s, v.initializer, &st), &st);
    t = fetch_st(s, v.is_initialized, &st);
    CHECK(t && *(const bool *)vg_tensor_data(t) == true);
    vg_tensor_free(t);
    t = fetch_st(s, report, &st);
    CHECK(t && vg_tensor_num_elements(t) == 0);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* TF: testDestroyResource, testDestruction */
static void test_rv__destroy_resource(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "var0", vg_const_f32(g, 3.0f, "c"), 0);
    vg_op *destroy = vg_destroy_resource_op(g, v.handle, true, NULL);
    vg_op *destroy_strict = vg_destroy_resource_op(g, v.handle, false, NULL);
    vg_output never = vg_var_handle_op(g, VG_INT32, NULL, 0, NULL, NULL, NULL);
    vg_op *destroy_never = vg_destroy_resource_op(g, never, true, NULL);
    vg_session *s = new_session(g);
    vg_tensor *t = init_then_fetch(s, v.initializer, v.value, &st);
    check_f32(t, (float[]){3}, 1);
    vg_tensor_free(t);
    CHECK_OK(run_op(s, destroy, &st), &st);
    EXPECT_REFUSED(fetch_st(s, v.value, &st), &st, VG_FAILED_PRECONDITION);
    CHECK_OK(run_op(s, destroy_never, &st), &st);
    CHECK_STATUS(run_op(s, destroy_strict, &st), &st, VG_NOT_FOUND,
                 "Resource localhost/var0/N10tensorflow3VarE does not exist.");
    /* assigning creates it again */
    t = init_then_fetch(s, v.initializer, v.value, &st);
    check_f32(t, (float[]){3}, 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* TF: testSparseRead, testShape, testVariableShape */
static void test_rv__sparse_read_and_shape(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int32_t init[64];
    for (int i = 0; i < 64; i++) init[i] = i;
    vg_resource_variable v = vg_resource_variable_new(
        g, "var3", vg_const_array(g, VG_INT32, (int64_t[]){4, 4, 4}, 3, init, "init"), 0);
    int32_t ix[4] = {0, 3, 1, 2};
    vg_output r = vg_resource_variable_sparse_read(g, v.handle, vg_const_i32_vec(g, ix, 4, "ix"), NULL);
    CHECK(r.op && strcmp(vg_op_name(r.op), "Identity") == 0);
    CHECK(strcmp(vg_op_name(vg_op_input(r.op, 0).op), "Gather") == 0);
    vg_shape rs = vg_output_shape(r);
    CHECK(rs.ndims == 3 && rs.dims[0] == 4 && rs.dims[1] == 4 && rs.dims[2] == 4);
    vg_output p = vg_placeholder(g, VG_INT32, NULL, -1, "p");
    vg_output rp = vg_resource_variable_sparse_read(g, v.handle, p, NULL);
    CHECK_EQ_INT(vg_output_shape(rp).ndims, -1);
    vg_output shp = vg_variable_shape(g, v.handle, VG_INT32, NULL);
    vg_output big = vg_resource_variable_new(g, "var5", vg_const_fill(g, VG_FLOAT, (int64_t[]){10, 20, 35}, 3, 1.0,
                                                                     "ones"), 0).handle;
    vg_output bigshape = vg_variable_shape(g, big, VG_INT64, NULL);
    vg_output sr3 = vg_resource_variable_sparse_read(g, big, vg_const_i32_vec(g, (int32_t[]){0, 1, 2}, 3, "i3"),
                                                     NULL);
    vg_shape s3 = vg_output_shape(sr3);
    CHECK(s3.ndims == 3 && s3.dims[0] == 3 && s3.dims[1] == 20 && s3.dims[2] == 35);
    vg_op *init_op = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    vg_tensor *t = init_then_fetch(s, init_op, r, &st);
    int32_t want[64];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 16; k++) want[i * 16 + k] = ix[i] * 16 + k;
    check_i32(t, want, 64);
    vg_tensor_free(t);
    t = fetch_st(s, shp, &st);
    check_i32(t, (int32_t[]){4, 4, 4}, 3);
    vg_tensor_free(t);
    t = fetch_st(s, bigshape, &st);
    CHECK(t && vg_tensor_dtype(t) == VG_INT64 && vg_tensor_num_elements(t) == 3);
    if (t) CHECK(((int64_t *)vg_tensor_data(t))[2] == 35);
    vg_tensor_free(t);
    /* scalar index: one row; out of range: TF's message */
    vg_tensor *i7 = vg_tensor_new_copy(VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 7}, 8, &st);
    vg_tensor *out = NULL;
    CHECK_STATUS(vg_session_run(s, NULL, &p, &i7, 1, &rp, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "indices[1] = 7 is not in [0, 4)");
    vg_tensor_free(i7);
    vg_tensor *i1 = vg_tensor_new_scalar_i32(1, &st);
    CHECK_OK(vg_session_run(s, NULL, &p, &i1, 1, &rp, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK(out && vg_tensor_ndims(out) == 2 && ((int32_t *)vg_tensor_data(out))[0] == 16);
    vg_tensor_free(out);
    vg_tensor_free(i1);
    free_session_graph(s, g);
}

/* TF: testSetInitialValue - the initializer run with another initial value fed. */
static void test_rv__set_initial_value(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, NULL, vg_const_f32(g, 2.0f, "c"), 0);
    vg_session *s = new_session(g);
    vg_tensor *three = vg_tensor_new_scalar_f32(3.0f, &st);
    CHECK_OK(vg_session_run(s, NULL, &v.initial_value, &three, 1, NULL, NULL, 0, &v.initializer, 1, NULL, &st), &st);
    vg_tensor *t = fetch_st(s, v.value, &st);
    check_f32(t, (float[]){3}, 1);
    vg_tensor_free(t);
    vg_tensor_free(three);
    free_session_graph(s, g);
}

/* TF: testAssignIncompatibleShape (build time) and testAssignDifferentShapes (an
 * AssignVariableOp of a value of unknown shape may change the shape, as TF's kernel
 * allows); an AssignAdd of another shape fails at run time with TF's message. */
static void test_rv__assign_shapes(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int32_t init[4] = {0, 1, 2, 3};
    vg_resource_variable v = vg_resource_variable_new(
        g, "v", vg_const_array(g, VG_INT32, (int64_t[]){4}, 1, init, "init"), 0);
    CHECK(vg_resource_variable_assign_add(g, v.handle, c_i32(g, 1), NULL) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Shapes must be equal rank, but are 1 and 0");
    vg_graph_free(g);

    g = vg_graph_new();
    vg_resource_variable x = vg_resource_variable_new_init(g, "x", VG_FLOAT, (int64_t[]){1, 1}, 2, vg_init_zeros(), 0);
    vg_output p = vg_placeholder(g, VG_FLOAT, NULL, -1, "p");
    vg_op *assign = vg_resource_variable_assign(g, x.handle, p, NULL);
    vg_op *add = vg_resource_variable_assign_add(g, x.handle, p, NULL);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, x.initializer, &st), &st);
    vg_tensor *z = vg_tensor_new_zeros(VG_FLOAT, (int64_t[]){2, 2}, 2, &st);
    CHECK_CODE(vg_session_run(s, NULL, &p, &z, 1, NULL, NULL, 0, &add, 1, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Cannot update variable with shape [1,1] using a Tensor with shape [2,2], shapes "
                               "must be equal.");
    CHECK_OK(vg_session_run(s, NULL, &p, &z, 1, NULL, NULL, 0, &assign, 1, NULL, &st), &st);
    vg_tensor *t = fetch_st(s, x.value, &st);
    CHECK(t && vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 2);
    vg_tensor_free(t);
    vg_tensor_free(z);
    free_session_graph(s, g);
}

/* TF: testOperatorOverload - a read is an ordinary tensor. */
static void test_rv__operator_overload(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "var0", vg_const_f32(g, 1.0f, "c"), 0);
    vg_output sum = vg_add(g, v.value, v.value, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    vg_tensor *t = init_then_fetch(s, init, sum, &st);
    check_f32(t, (float[]){2}, 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* A handle that is not a variable's fails at build time. */
static void test_rv__not_a_handle(void) {
    vg_graph *g = vg_graph_new();
    CHECK(vg_read_variable_op(g, vg_const_f32(g, 1, "c"), VG_FLOAT, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Input 'resource' of 'ReadVariableOp' Op has type float");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_resource_variable_read_value(g, vg_const_f32(g, 1, "c")).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "is not a resource variable handle");
    vg_graph_free(g);
}

/* tf.gradients(loss, v.handle): ReadVariableOp's gradient flows to the handle (two
 * reads: summed), ResourceGather's is UnsortedSegmentSum of the rows. */
static void test_rv__gradients(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "v", c_f32_vec(g, (float[]){1, 2, 3}, 3), 0);
    vg_resource_variable e = vg_resource_variable_new(
        g, "e", vg_const_array(g, VG_FLOAT, (int64_t[]){4, 2}, 2, (float[]){1, 2, 3, 4, 5, 6, 7, 8}, "ec"), 0);
    /* loss = sum(v * v) + sum(3 * read_value(v)) + sum(gather(e, [2, 0, 2]) * [1, 10]) */
    vg_output r1 = vg_read_variable_op(g, v.handle, VG_FLOAT, NULL);
    vg_output sq = vg_reduce_sum(g, vg_mul(g, r1, r1, NULL), NULL, -1, false, NULL);
    vg_output lin = vg_reduce_sum(g, vg_mul(g, vg_resource_variable_read_value(g, v.handle),
                                            vg_const_f32(g, 3, "three"), NULL),
                                  NULL, -1, false, NULL);
    vg_output rows = vg_resource_variable_sparse_read(g, e.handle, vg_const_i32_vec(g, (int32_t[]){2, 0, 2}, 3, "ix"),
                                                      NULL);
    vg_output w = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, (float[]){1, 10}, "w");
    vg_output gl = vg_reduce_sum(g, vg_mul(g, rows, w, NULL), NULL, -1, false, NULL);
    vg_output loss = vg_add(g, vg_add(g, sq, lin, NULL), gl, "loss");
    vg_output xs[2] = {v.handle, e.handle}, dx[2];
    CHECK_OK(vg_gradients(g, &loss, 1, xs, 2, NULL, dx, &st), &st);
    CHECK(dx[0].op && dx[1].op);
    if (!dx[0].op || !dx[1].op) {
        vg_graph_free(g);
        return;
    }
    CHECK_EQ_INT(vg_output_dtype(dx[0]), VG_FLOAT);
    CHECK(strcmp(vg_op_type(dx[1].op), "UnsortedSegmentSum") == 0);
    vg_shape es = vg_output_shape(dx[1]);
    CHECK(es.ndims == 2 && es.dims[1] == 2);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, init, &st), &st);
    vg_tensor *out[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, dx, out, 2, NULL, 0, NULL, &st), &st);
    check_f32(out[0], (float[]){2 * 1 + 3, 2 * 2 + 3, 2 * 3 + 3}, 3);
    check_f32(out[1], (float[]){1, 10, 0, 0, 2, 20, 0, 0}, 8);
    vg_tensor_free(out[0]);
    vg_tensor_free(out[1]);
    free_session_graph(s, g);
}

/* Unordered writers and readers in one run (the inter-op threads run them at once):
 * every AssignAdd lands (the variable's lock), and every read is one whole value,
 * never half of one update (1000 equal elements, before and after each update). */
static void test_rv__concurrent_updates(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(
        g, "v", vg_const_fill(g, VG_FLOAT, (int64_t[]){1000}, 1, 0.0, "zeros"), 0);
    vg_output one = vg_const_fill(g, VG_FLOAT, (int64_t[]){1000}, 1, 1.0, "ones");
    enum { NW = 16, NR = 16 };
    vg_op *writers[NW];
    vg_output reads[NR];
    for (int i = 0; i < NW; i++) writers[i] = vg_assign_add_variable_op(g, v.handle, one, NULL);
    for (int i = 0; i < NR; i++) reads[i] = vg_read_variable_op(g, v.handle, VG_FLOAT, NULL);
    vg_session_options so = {0};
    so.inter_op_threads = 4;
    vg_session *s = vg_session_new(g, &so, &st);
    CHECK(s != NULL);
    CHECK_OK(run_op(s, v.initializer, &st), &st);
    for (int rep = 0; rep < 20; rep++) {
        vg_tensor *out[NR] = {NULL};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, reads, out, NR, writers, NW, NULL, &st), &st);
        for (int i = 0; i < NR; i++) {
            const float *d = out[i] ? vg_tensor_data(out[i]) : NULL;
            CHECK(d != NULL);
            if (!d) continue;
            bool whole = d[0] >= (float)(rep * NW) && d[0] <= (float)((rep + 1) * NW) && d[0] == (float)(int)d[0];
            for (int k = 1; k < 1000; k++) whole = whole && d[k] == d[0];
            CHECK(whole);
            vg_tensor_free(out[i]);
        }
        vg_tensor *t = fetch_st(s, v.value, &st);
        CHECK(t && ((const float *)vg_tensor_data(t))[999] == (float)((rep + 1) * NW));
        vg_tensor_free(t);
    }
    free_session_graph(s, g);
}

int main(void) {
    RUN_TEST(test_rv__handle_dtype_shape_match);
    RUN_TEST(test_rv__op_attrs);
    RUN_TEST(test_rv__fetch_handle);
    RUN_TEST(test_rv__read_variable_dtype_mismatch);
    RUN_TEST(test_rv__assign_variable_dtype_mismatch);
    RUN_TEST(test_rv__dtype_survives_identity);
    RUN_TEST(test_rv__create_read);
    RUN_TEST(test_rv__many_assigns);
    RUN_TEST(test_rv__assign_add);
    RUN_TEST(test_rv__scatter_ops);
    RUN_TEST(test_rv__scatter_rows);
    RUN_TEST(test_rv__scatter_update_string);
    RUN_TEST(test_rv__scatter_update_invalid_args);
    RUN_TEST(test_rv__int64);
    RUN_TEST(test_rv__variable_layout);
    RUN_TEST(test_rv__init_fn);
    RUN_TEST(test_rv__assign_methods);
    RUN_TEST(test_rv__read_ordering_and_snapshots);
    RUN_TEST(test_rv__shared_name);
    RUN_TEST(test_rv__uninitialized_errors);
    RUN_TEST(test_rv__destroy_resource);
    RUN_TEST(test_rv__sparse_read_and_shape);
    RUN_TEST(test_rv__set_initial_value);
    RUN_TEST(test_rv__assign_shapes);
    RUN_TEST(test_rv__operator_overload);
    RUN_TEST(test_rv__not_a_handle);
    RUN_TEST(test_rv__gradients);
    RUN_TEST(test_rv__concurrent_updates);
    TEST_MAIN_END();
}
