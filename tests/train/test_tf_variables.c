/* test_tf_variables.c - TF 1.15's tensorflow/python/kernel_tests/variables_test.py
 * translated to C (graph mode). Each test names the TF method it translates; the values
 * are the ones TF's assertions give.
 *
 * Not translated (no C form, or vigil has no such feature):
 *   VariablesTestCase.testIterable, testOperatorWrapping, testRepr, testConstraintArg,
 *     testVariableNamesPreserveNameScopesWithDefun: Python-only features (iteration
 *     protocol, operator wrappers, repr, constraint callables, defun).
 *   testCachingDevice, testColocation, testInitializerFunctionDevicePlacement,
 *     testDevicePlacement: caching devices and colocation groups ("loc:@v") are not
 *     kept by vigil (one CPU device).
 *   testVariableDefInitializedInstances, testTrainableInProto: Variable(variable_def=...)
 *     / to_proto() have no C API (the VariableDef round trip through a MetaGraphDef is
 *     tests/graph/test_import_meta_graph.c's).
 *   testInitialization's var._shared_name: a Python property (the VariableV2 op's name
 *     is asserted instead).
 *   ObsoleteIsInitializedTest.testNoVars: assert_variables_initialized() returns None
 *     (nothing is built), nothing to assert in C.
 *   PartitionedVariableTest (all): vigil has no PartitionedVariable / SaveSliceInfo.
 *   VariableContainerTest.testContainer: vigil has no ops.container() scope (VariableV2's
 *     "container" attr is always "": tests/kernels/test_state_ops.c).
 *   testCollectionsWithScope: get_collection's scope filter has no C API; the names it
 *     would match and the collections' order are asserted.
 *   "ObjectWithName..." (named in the brief): no such class in TF 1.15's variables_test.py.
 */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

static double fetch_scalar(vg_session *s, vg_output o) {
    vg_tensor *t = fetch(s, o);
    double v = t ? vg_tensor_scalar(t) : NAN;
    vg_tensor_free(t);
    return v;
}

/* Checks that t holds n values equal to want[i] (as doubles, within tol). */
static void check_values(const vg_tensor *t, const double *want, int64_t n, double tol) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    if (vg_tensor_num_elements(t) != n) return;
    const void *d = vg_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        double x;
        switch (vg_tensor_dtype(t)) {
        case VG_FLOAT: x = ((const float *)d)[i]; break;
        case VG_DOUBLE: x = ((const double *)d)[i]; break;
        case VG_INT32: x = ((const int32_t *)d)[i]; break;
        case VG_INT64: x = (double)((const int64_t *)d)[i]; break;
        case VG_BOOL: x = ((const bool *)d)[i] ? 1 : 0; break;
        default: x = NAN; break;
        }
        CHECK_NEAR(x, want[i], tol);
    }
}

static void check_fetch(vg_session *s, vg_output o, const double *want, int64_t n, double tol) {
    vg_tensor *t = fetch(s, o);
    check_values(t, want, n, tol);
    vg_tensor_free(t);
}

/* Fetching o fails with code and a message containing msg. */
static void check_fetch_fails(vg_session *s, vg_output o, vg_code code, const char *msg) {
    vg_status st;
    vg_tensor *t = fetch_st(s, o, &st);
    CHECK(t == NULL);
    vg_tensor_free(t);
    if (t) return;
    EXPECT_STATUS(&st, code, msg);
}

static vg_output const_f32v(vg_graph *g, const float *v, const int64_t *dims, int ndims) {
    return vg_const_array(g, VG_FLOAT, dims, ndims, v, NULL);
}

/* ------------------------------------------------------------------------ */
/* VariablesTestCase */

/* VariablesTestCase.testInitialization */
static void test_tfvar__initialization(void) {
    vg_graph *g = vg_graph_new();
    vg_variable var0 = vg_variable_new(g, NULL, vg_const_f32(g, 0.0f, NULL), 0);
    vg_variable var1 = vg_variable_new(g, NULL, vg_const_f32(g, 1.1f, NULL), 0);
    CHECK(var0.var && strcmp(vg_op_name(var0.var), "Variable") == 0);
    CHECK(var1.var && strcmp(vg_op_name(var1.var), "Variable_1") == 0);
    CHECK(shape_is(var0.ref, NULL, 0));
    CHECK(shape_is(var1.ref, NULL, 0));
    vg_session *s = new_session(g);
    check_fetch_fails(s, var0.ref, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value");
    check_fetch_fails(s, var1.ref, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value");
    run_target(s, vg_global_variables_initializer(g));
    CHECK_NEAR(fetch_scalar(s, var0.ref), 0.0, 1e-6);
    CHECK_NEAR(fetch_scalar(s, var1.ref), 1.1, 1e-6);
    free_session_graph(s, g);
}

/* VariablesTestCase.testInitializationOrder: initial values that read other variables
 * (rnd.initialized_value()) give the same values whatever order the initializers run in. */
static void test_tfvar__initialization_order(void) {
    vg_graph *g = vg_graph_new();
    const int64_t d36[2] = {3, 6};
    vg_output shape = vg_const_i32_vec(g, (int32_t[]){3, 6}, 2, "random_uniform/shape");
    vg_variable rnd = vg_variable_new(g, "rnd", vg_random_uniform(g, shape, VG_FLOAT, 0, 0, "random_uniform"), 0);
    CHECK(rnd.var && strcmp(vg_op_name(rnd.var), "rnd") == 0);
    CHECK(shape_is(rnd.ref, d36, 2));
    vg_variable dep = vg_variable_new(g, "dep", rnd.read, 0);
    CHECK(dep.var && strcmp(vg_op_name(dep.var), "dep") == 0);
    CHECK(shape_is(dep.ref, d36, 2));
    vg_output added = vg_add(g, vg_add(g, rnd.read, dep.read, NULL), vg_const_f32(g, 2.0f, NULL), NULL);
    vg_variable depdep = vg_variable_new(g, "depdep", added, 0);
    CHECK(depdep.var && strcmp(vg_op_name(depdep.var), "depdep") == 0);
    CHECK(shape_is(depdep.ref, d36, 2));
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    vg_output f[3] = {rnd.ref, dep.ref, depdep.ref};
    vg_tensor *o[3] = {NULL, NULL, NULL};
    vg_status st;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 3, NULL, 0, NULL, &st), &st);
    if (o[0] && o[1] && o[2]) {
        const float *r = vg_tensor_data(o[0]), *d = vg_tensor_data(o[1]), *dd = vg_tensor_data(o[2]);
        for (int i = 0; i < 18; i++) {
            CHECK(r[i] >= 0.0f && r[i] < 1.0f);
            CHECK_NEAR(d[i], r[i], 0);
            CHECK_NEAR(dd[i], r[i] + d[i] + 2.0f, 1e-6);
        }
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
    free_session_graph(s, g);
}

/* VariablesTestCase.testAssignments */
static void test_tfvar__assignments(void) {
    vg_graph *g = vg_graph_new();
    vg_variable var = vg_variable_new(g, NULL, vg_const_f32(g, 0.0f, NULL), VG_VAR_TRAINABLE);
    vg_output plus_one = vg_assign_add(g, var.ref, vg_const_f32(g, 1.0f, NULL), NULL);
    vg_output minus_one = vg_assign_sub(g, var.ref, vg_const_f32(g, 2.0f, NULL), NULL);
    vg_output four = vg_assign(g, var.ref, vg_const_f32(g, 4.0f, NULL), true, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    CHECK_NEAR(fetch_scalar(s, var.ref), 0.0, 0);
    CHECK_NEAR(fetch_scalar(s, plus_one), 1.0, 0);
    CHECK_NEAR(fetch_scalar(s, var.ref), 1.0, 0);
    CHECK_NEAR(fetch_scalar(s, minus_one), -1.0, 0);
    CHECK_NEAR(fetch_scalar(s, var.ref), -1.0, 0);
    CHECK_NEAR(fetch_scalar(s, four), 4.0, 0);
    CHECK_NEAR(fetch_scalar(s, var.ref), 4.0, 0);
    free_session_graph(s, g);
}

/* VariablesTestCase.testResourceAssignments */
static void test_tfvar__resource_assignments(void) {
    vg_graph *g = vg_graph_new();
    vg_resource_variable var = vg_resource_variable_new(g, NULL, vg_const_f32(g, 0.0f, NULL), VG_VAR_TRAINABLE);
    vg_op *plus_one = vg_resource_variable_assign_add(g, var.handle, vg_const_f32(g, 1.0f, NULL), NULL);
    vg_op *minus_one = vg_resource_variable_assign_sub(g, var.handle, vg_const_f32(g, 2.0f, NULL), NULL);
    vg_op *four = vg_resource_variable_assign(g, var.handle, vg_const_f32(g, 4.0f, NULL), NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = new_session(g);
    run_target(s, init);
    CHECK_NEAR(fetch_scalar(s, var.value), 0.0, 0);
    run_target(s, plus_one);
    CHECK_NEAR(fetch_scalar(s, var.value), 1.0, 0);
    run_target(s, minus_one);
    CHECK_NEAR(fetch_scalar(s, var.value), -1.0, 0);
    run_target(s, four);
    CHECK_NEAR(fetch_scalar(s, var.value), 4.0, 0);
    free_session_graph(s, g);
}

/* VariablesTestCase.testZeroSizeStringAssign: a local string variable of shape [0]
 * assigned its own value. */
static void test_tfvar__zero_size_string_assign(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t zero = 0;
    vg_tensor *empty = vg_tensor_new(VG_STRING, &zero, 1, &st);
    vg_variable array = vg_variable_new(g, "foo", vg_const(g, empty, "zeros"), VG_VAR_LOCAL);
    vg_tensor_free(empty);
    CHECK(array.var != NULL);
    vg_op *linit = vg_local_variables_initializer(g);
    vg_output copy_op = vg_assign(g, array.ref, array.read, true, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = new_session(g);
    run_target(s, linit);
    vg_tensor *t = fetch(s, copy_op);
    CHECK(t && vg_tensor_dtype(t) == VG_STRING && vg_tensor_ndims(t) == 1 && vg_tensor_num_elements(t) == 0);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* var.count_up_to(limit): state_ops.count_up_to builds CountUpTo(ref, limit). */
static vg_output count_up_to(vg_graph *g, vg_output ref, int64_t limit) {
    vg_op_builder *b = vg_op_builder_new(g, "CountUpTo", "CountUpTo");
    vg_op_builder_add_input(b, ref);
    vg_op_builder_set_attr_int(b, "limit", limit);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* VariablesTestCase._countUpToTest (testCountUpToInt32, testCountUpToInt64) */
static void count_up_to_test(vg_dtype dt) {
    vg_graph *g = vg_graph_new();
    vg_output zero = dt == VG_INT32 ? vg_const_i32(g, 0, "Const") : vg_const_i64(g, 0, "Const");
    vg_variable var = vg_variable_new(g, NULL, zero, VG_VAR_TRAINABLE);
    vg_output cnt = count_up_to(g, var.ref, 3);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK_EQ_INT(vg_output_dtype(cnt), dt);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    CHECK_NEAR(fetch_scalar(s, var.ref), 0, 0);
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(fetch_scalar(s, cnt), i, 0);
        CHECK_NEAR(fetch_scalar(s, var.ref), i + 1, 0);
    }
    for (int k = 0; k < 2; k++) {
        check_fetch_fails(s, cnt, VG_OUT_OF_RANGE, "Reached limit of 3");
        CHECK_NEAR(fetch_scalar(s, var.ref), 3, 0);
    }
    free_session_graph(s, g);
}

static void test_tfvar__count_up_to_int32(void) { count_up_to_test(VG_INT32); } /* testCountUpToInt32 */
static void test_tfvar__count_up_to_int64(void) { count_up_to_test(VG_INT64); } /* testCountUpToInt64 */

/* VariablesTestCase.testControlDepsNone: a variable made under control_dependencies([c])
 * gets none (its initial value is converted under init_scope, as TF's VariableV1 does). */
static void test_tfvar__control_deps_none(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_f32(g, 1.0f, "Const");
    vg_graph_push_control_deps(g, &c.op, 1);
    vg_output d = vg_const_f32(g, 2.0f, "Const_1");
    vg_graph_push_init_scope(g);
    vg_output two = vg_const_f32(g, 2.0f, "Variable/initial_value");
    vg_graph_pop_init_scope(g);
    vg_variable var_x = vg_variable_new(g, NULL, two, VG_VAR_TRAINABLE);
    vg_graph_pop_control_deps(g);
    CHECK(var_x.var != NULL);
    CHECK_EQ_INT(vg_op_num_control_inputs(d.op), 1);
    if (vg_op_num_control_inputs(d.op) == 1) CHECK(vg_op_control_input(d.op, 0) == c.op);
    CHECK_EQ_INT(vg_op_num_control_inputs(var_x.initializer), 0);
    CHECK_EQ_INT(vg_op_num_control_inputs(var_x.read.op), 0); /* var_x.value().op */
    CHECK_EQ_INT(vg_op_num_control_inputs(var_x.var), 0);     /* var_x._ref().op */
    vg_graph_free(g);
}

/* VariablesTestCase.testControlFlow: variables made inside cond branches (their initial
 * values under init_scope, as TF converts them) are initialized outside the cond. */
typedef struct cf_ctx {
    vg_variable v0, v1, v2;
} cf_ctx;

static vg_code cf_branch(vg_graph *g, cf_ctx *c, bool then, vg_output *outs) {
    vg_graph_push_init_scope(g);
    vg_output iv = vg_const_i32(g, then ? 1 : 2, then ? "v1/initial_value" : "v2/initial_value");
    vg_graph_pop_init_scope(g);
    vg_variable v = vg_variable_new(g, then ? "v1" : "v2", iv, VG_VAR_TRAINABLE);
    if (then) c->v1 = v;
    else c->v2 = v;
    outs[0] = vg_add(g, v.read, c->v0.read, NULL);
    return outs[0].op ? VG_OK : VG_INVALID_ARGUMENT;
}
static vg_code cf_then(vg_graph *g, void *user, vg_output *outs) { return cf_branch(g, user, true, outs); }
static vg_code cf_else(vg_graph *g, void *user, vg_output *outs) { return cf_branch(g, user, false, outs); }

static void test_tfvar__control_flow(void) {
    vg_graph *g = vg_graph_new();
    cf_ctx c;
    memset(&c, 0, sizeof c);
    c.v0 = vg_variable_new(g, "v0", vg_const_i32(g, 0, "v0/initial_value"), VG_VAR_TRAINABLE);
    vg_output add;
    vg_status st;
    CHECK_OK(vg_cond(g, vg_less(g, c.v0.read, vg_const_i32(g, 10, NULL), NULL), cf_then, cf_else, &c, 1, &add, NULL,
                     &st),
             &st);
    CHECK(c.v1.var && c.v2.var && add.op);
    if (!c.v1.var || !c.v2.var || !add.op) {
        vg_graph_free(g);
        return;
    }
    vg_session *s = new_session(g);
    run_target(s, c.v1.initializer);
    CHECK_NEAR(fetch_scalar(s, c.v1.ref), 1, 0);
    run_target(s, c.v2.initializer);
    CHECK_NEAR(fetch_scalar(s, c.v2.ref), 2, 0);
    check_fetch_fails(s, c.v0.ref, VG_FAILED_PRECONDITION, "uninitialized");
    check_fetch_fails(s, add, VG_FAILED_PRECONDITION, "uninitialized");
    run_target(s, c.v0.initializer);
    CHECK_NEAR(fetch_scalar(s, add), 1, 0); /* 0 < 10: v1 + v0 */
    free_session_graph(s, g);
}

/* VariablesTestCase.testControlFlowInitialization: an initial value computed inside a
 * while loop is ValueError "... inside a control-flow construct ...". */
static vg_code cfi_cond(vg_graph *g, const vg_output *vars, int n, void *user, vg_output *pred) {
    (void)n, (void)user;
    *pred = vg_less(g, vars[0], vg_const_i32(g, 10, NULL), NULL);
    return VG_OK;
}
static vg_code cfi_body(vg_graph *g, const vg_output *vars, int n, void *user, vg_output *outs) {
    (void)n, (void)user;
    vg_output zero = vg_const_fill(g, VG_INT32, NULL, 0, 0, "zeros");
    vg_variable v = vg_variable_new(g, NULL, zero, VG_VAR_TRAINABLE);
    if (!v.var) return VG_INVALID_ARGUMENT;
    outs[0] = vg_add(g, vars[0], vg_const_i32(g, 1, NULL), NULL);
    outs[1] = vg_identity(g, v.ref, "read");
    return VG_OK;
}

static void test_tfvar__control_flow_initialization(void) {
    vg_graph *g = vg_graph_new();
    vg_output lv[2] = {vg_const_i32(g, 0, NULL), vg_const_i32(g, 0, NULL)}, out[2];
    vg_status st;
    CHECK_CODE(vg_while_loop(g, cfi_cond, cfi_body, NULL, lv, 2, NULL, 10, vg_out(NULL, 0), NULL, out, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "inside a control-flow");
    vg_graph_free(g);
}

/* VariablesTestCase.testUseVariableAsTensor */
static void test_tfvar__use_variable_as_tensor(void) {
    vg_graph *g = vg_graph_new();
    vg_variable x = vg_variable_new(g, NULL, vg_const_f32(g, 2.0f, NULL), VG_VAR_TRAINABLE);
    vg_variable y = vg_variable_new(g, NULL, vg_const_f32(g, 3.0f, NULL), VG_VAR_TRAINABLE);
    vg_output sum = vg_add(g, x.read, y.read, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    CHECK_NEAR(fetch_scalar(s, x.ref), 2.0, 0);
    CHECK_NEAR(fetch_scalar(s, y.ref), 3.0, 0);
    CHECK_NEAR(fetch_scalar(s, sum), 5.0, 0);
    free_session_graph(s, g);
}

/* VariablesTestCase.testZeroSizeVarSameAsConst */
static void test_tfvar__zero_size_var_same_as_const(void) {
    vg_graph *g = vg_graph_new();
    vg_variable zvar =
        vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, (int64_t[]){0, 2}, 2, 0, "zeros"), VG_VAR_TRAINABLE);
    vg_output zconst = vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 0}, 2, 1, "ones");
    vg_output variable_mul = vg_matmul(g, zconst, zvar.read, false, false, NULL);
    vg_output const_mul = vg_matmul(g, zconst, zconst, false, true, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    const double zeros[4] = {0, 0, 0, 0};
    vg_tensor *v = fetch(s, variable_mul), *c = fetch(s, const_mul);
    check_values(v, zeros, 4, 0);
    check_values(c, zeros, 4, 0);
    CHECK(v && vg_tensor_ndims(v) == 2 && vg_tensor_dim(v, 0) == 2 && vg_tensor_dim(v, 1) == 2);
    vg_tensor_free(v);
    vg_tensor_free(c);
    free_session_graph(s, g);
}

static bool collection_is(vg_graph *g, const char *key, const vg_op *const *ops, int n) {
    int m;
    const vg_output *items = vg_graph_collection(g, key, &m);
    if (m != n) {
        fprintf(stderr, "  collection %s has %d items, expected %d\n", key, m, n);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (items[i].op != ops[i]) return false;
    return true;
}

/* VariablesTestCase.testCollections (var_t's explicit collections [TRAINABLE, GLOBAL]
 * are VG_VAR_TRAINABLE's) */
static void test_tfvar__collections(void) {
    vg_graph *g = vg_graph_new();
    vg_variable x = vg_variable_new(g, NULL, vg_const_f32(g, 2, NULL), VG_VAR_TRAINABLE);
    vg_variable y = vg_variable_new(g, NULL, vg_const_f32(g, 2, NULL), 0);
    vg_variable z = vg_variable_new(g, NULL, vg_const_f32(g, 2, NULL), VG_VAR_TRAINABLE);
    vg_variable t = vg_variable_new(g, NULL, vg_const_f32(g, 2, NULL), VG_VAR_TRAINABLE);
    const vg_op *all[4] = {x.var, y.var, z.var, t.var}, *tr[3] = {x.var, z.var, t.var};
    CHECK(collection_is(g, VG_GLOBAL_VARIABLES, all, 4));
    CHECK(collection_is(g, VG_TRAINABLE_VARIABLES, tr, 3));
    vg_graph_free(g);
}

/* VariablesTestCase.testCollectionsWithScope */
static void test_tfvar__collections_with_scope(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_push_scope(g, "scope_1");
    vg_variable x = vg_variable_new(g, NULL, vg_const_f32(g, 2, NULL), VG_VAR_TRAINABLE);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "scope_2");
    vg_variable y = vg_variable_new(g, NULL, vg_const_f32(g, 2, NULL), VG_VAR_TRAINABLE);
    vg_graph_pop_scope(g);
    const vg_op *both[2] = {x.var, y.var};
    CHECK(collection_is(g, VG_GLOBAL_VARIABLES, both, 2));
    CHECK(collection_is(g, VG_TRAINABLE_VARIABLES, both, 2));
    CHECK(x.var && strcmp(vg_op_name(x.var), "scope_1/Variable") == 0);
    CHECK(y.var && strcmp(vg_op_name(y.var), "scope_2/Variable") == 0);
    vg_graph_free(g);
}

/* VariablesTestCase.testOperators: the ops TF's operator overloads build on a variable
 * (Add, Sub, Mul, RealDiv, Less, ..., FloorMod, LogicalAnd/Or, logical_xor, LogicalNot,
 * StridedSlice, MatMul). */
static void test_tfvar__operators(void) {
    vg_graph *g = vg_graph_new();
    vg_variable var_f = vg_variable_new(g, NULL, const_f32v(g, (float[]){2.0f}, (int64_t[]){1}, 1), VG_VAR_TRAINABLE);
    vg_output f = var_f.read;
#define C(x) vg_const_f32(g, x, NULL)
    vg_output ops[18] = {
        vg_add(g, f, C(0.0f), NULL),        vg_add(g, C(1.0f), f, NULL),          vg_sub(g, f, C(1.0f), NULL),
        vg_sub(g, C(1.0f), f, NULL),        vg_mul(g, f, C(10.0f), NULL),         vg_mul(g, C(10.0f), f, NULL),
        vg_div(g, f, C(10.0f), NULL),       vg_div(g, C(10.0f), f, NULL),         vg_less(g, f, C(3.0f), NULL),
        vg_less(g, C(3.0f), f, NULL),       vg_less_equal(g, f, C(2.0f), NULL),   vg_less_equal(g, C(2.0f), f, NULL),
        vg_greater(g, f, C(3.0f), NULL),    vg_greater(g, C(3.0f), f, NULL),      vg_greater_equal(g, f, C(2.0f), NULL),
        vg_greater_equal(g, C(2.0f), f, NULL), vg_neg(g, f, NULL),                vg_abs(g, f, NULL)};
#undef C
    const double want[18] = {2, 3, 1, -1, 20, 20, 0.2, 5, 1, 0, 1, 1, 0, 1, 1, 1, -2, 2};
    vg_variable var_i = vg_variable_new(g, NULL, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, (int32_t[]){20}, NULL),
                                        VG_VAR_TRAINABLE);
    vg_output mod = vg_floor_mod(g, var_i.read, vg_const_i32(g, 7, NULL), NULL);
    vg_output rmod = vg_floor_mod(g, vg_const_i32(g, 103, NULL), var_i.read, NULL);
    vg_variable var_b = vg_variable_new(
        g, NULL, vg_const_array(g, VG_BOOL, (int64_t[]){2}, 1, (bool[]){true, false}, NULL), VG_VAR_TRAINABLE);
    vg_output b = var_b.read;
    vg_output and_v = vg_logical_and(g, b, vg_const_array(g, VG_BOOL, (int64_t[]){2}, 1, (bool[]){true, true}, NULL),
                                     NULL);
    vg_output or_v = vg_logical_or(g, b, vg_const_array(g, VG_BOOL, (int64_t[]){2}, 1, (bool[]){false, true}, NULL),
                                   NULL);
    /* math_ops.logical_xor(x, y) = logical_and(logical_or(x, y), logical_not(logical_and(x, y))) */
    vg_output ff = vg_const_array(g, VG_BOOL, (int64_t[]){2}, 1, (bool[]){false, false}, NULL);
    vg_output xor_v = vg_logical_and(g, vg_logical_or(g, b, ff, NULL),
                                     vg_logical_not(g, vg_logical_and(g, b, ff, NULL), NULL), "LogicalXor");
    vg_output invert_v = vg_logical_not(g, b, NULL);
    float rnd[16];
    for (int i = 0; i < 16; i++) rnd[i] = (float)i / 16.0f;
    vg_variable var_t = vg_variable_new(g, NULL, const_f32v(g, rnd, (int64_t[]){4, 4}, 2), VG_VAR_TRAINABLE);
    vg_strided_slice_masks shrink0 = {0, 0, 0, 0, 1}; /* var_t[2, 0:0] */
    vg_output slice_v = vg_strided_slice_c(g, var_t.read, (int32_t[]){2, 0}, (int32_t[]){3, 0}, (int32_t[]){1, 1}, 2,
                                           &shrink0, NULL);
    vg_variable var_m =
        vg_variable_new(g, NULL, const_f32v(g, (float[]){2, 3}, (int64_t[]){1, 2}, 2), VG_VAR_TRAINABLE);
    vg_output col = const_f32v(g, (float[]){10, 20}, (int64_t[]){2, 1}, 2);
    vg_output matmul = vg_matmul(g, var_m.read, col, false, false, NULL);
    vg_output rmatmul = vg_matmul(g, col, var_m.read, false, false, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    for (int i = 0; i < 18; i++) check_fetch(s, ops[i], &want[i], 1, 1e-6);
    check_fetch(s, mod, (double[]){6}, 1, 0);
    check_fetch(s, rmod, (double[]){3}, 1, 0);
    check_fetch(s, and_v, (double[]){1, 0}, 2, 0);
    check_fetch(s, or_v, (double[]){1, 1}, 2, 0);
    check_fetch(s, xor_v, (double[]){1, 0}, 2, 0);
    check_fetch(s, invert_v, (double[]){0, 1}, 2, 0);
    vg_tensor *sl = fetch(s, slice_v);
    CHECK(sl && vg_tensor_ndims(sl) == 1 && vg_tensor_dim(sl, 0) == 0);
    vg_tensor_free(sl);
    check_fetch(s, matmul, (double[]){80}, 1, 0);
    check_fetch(s, rmatmul, (double[]){20, 30, 40, 60}, 4, 0);
    free_session_graph(s, g);
}

/* VariablesTestCase.testSession */
static void test_tfvar__session(void) {
    vg_graph *g = vg_graph_new();
    vg_variable var =
        vg_variable_new(g, NULL, vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 12}, NULL), 0);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    check_fetch(s, var.ref, (double[]){1, 12}, 2, 0);
    free_session_graph(s, g);
}

/* VariablesTestCase.testInitializerFunction (the lambda's constant built by the
 * caller): v1's initial value evaluates without v1; v2 = -v1.initialized_value() has
 * the negated initial value while v1 is uninitialized. */
static void test_tfvar__initializer_function(void) {
    vg_graph *g = vg_graph_new();
    const float value[2] = {-42.0f, 133.7f};
    const int64_t shape[2] = {2, 1};
    vg_variable v1 = vg_variable_new(g, NULL, const_f32v(g, value, shape, 2), VG_VAR_TRAINABLE);
    CHECK(shape_is(v1.ref, shape, 2));
    vg_variable v2 = vg_variable_new(g, NULL, vg_neg(g, v1.read, NULL), VG_VAR_TRAINABLE);
    CHECK(shape_is(v2.ref, shape, 2));
    if (!v1.var || !v2.var) {
        vg_graph_free(g);
        return;
    }
    vg_output iv1 = vg_op_input(v1.initializer, 1), iv2 = vg_op_input(v2.initializer, 1);
    vg_session *s = new_session(g);
    check_fetch(s, iv1, (double[]){-42.0, 133.7}, 2, 1e-6);
    check_fetch_fails(s, v1.ref, VG_FAILED_PRECONDITION, "uninitialized");
    check_fetch(s, iv2, (double[]){42.0, -133.7}, 2, 1e-6);
    check_fetch_fails(s, v2.ref, VG_FAILED_PRECONDITION, "uninitialized");
    run_target(s, vg_global_variables_initializer(g));
    check_fetch(s, v2.ref, (double[]){42.0, -133.7}, 2, 1e-6);
    free_session_graph(s, g);
}

/* VariablesTestCase.testNoRefDataRace */
static void test_tfvar__no_ref_data_race(void) {
    vg_graph *g = vg_graph_new();
    vg_variable a = vg_variable_new(g, NULL, const_f32v(g, (float[]){1, 2, 3}, (int64_t[]){3}, 1), VG_VAR_TRAINABLE);
    vg_variable b = vg_variable_new(g, NULL, vg_add(g, a.read, vg_const_f32(g, 2, NULL), NULL), VG_VAR_TRAINABLE);
    vg_variable c = vg_variable_new(g, NULL, vg_add(g, b.read, vg_const_f32(g, 2, NULL), NULL), VG_VAR_TRAINABLE);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    check_fetch(s, a.ref, (double[]){1, 2, 3}, 3, 0);
    check_fetch(s, b.ref, (double[]){3, 4, 5}, 3, 0);
    check_fetch(s, c.ref, (double[]){5, 6, 7}, 3, 0);
    free_session_graph(s, g);
}

/* VariablesTestCase.testLoad: var.load(value) runs the initializer with its initial
 * value fed. */
static void test_tfvar__load(void) {
    vg_graph *g = vg_graph_new();
    const int64_t d55[2] = {5, 5};
    vg_variable var = vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, d55, 2, 0, NULL), VG_VAR_TRAINABLE);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    vg_status st;
    vg_tensor *ones = vg_tensor_new(VG_FLOAT, d55, 2, &st);
    for (int i = 0; i < 25; i++) ((float *)vg_tensor_data(ones))[i] = 1.0f;
    vg_output iv = vg_op_input(var.initializer, 1);
    CHECK_OK(vg_session_run(s, NULL, &iv, &ones, 1, NULL, NULL, 0, &var.initializer, 1, NULL, &st), &st);
    vg_tensor_free(ones);
    double want[25];
    for (int i = 0; i < 25; i++) want[i] = 1;
    check_fetch(s, var.ref, want, 25, 0);
    free_session_graph(s, g);
}

/* ------------------------------------------------------------------------ */
/* IsInitializedTest */

static void check_strings(const vg_tensor *t, const char *const *want, int n) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    for (int i = 0; i < n && i < vg_tensor_num_elements(t); i++) {
        size_t len;
        const char *s = vg_tensor_string(t, i, &len);
        CHECK(s && len == strlen(want[i]) && memcmp(s, want[i], len) == 0);
    }
}

/* report_uninitialized_variables' value in s: exactly the names want[0..n). */
static void check_reported(vg_session *s, vg_output report, const char *const *want, int n) {
    vg_tensor *t = fetch(s, report);
    check_strings(t, want, n);
    vg_tensor_free(t);
}

/* IsInitializedTest.testNoVars */
static void test_tfvar__is_initialized_no_vars(void) {
    vg_graph *g = vg_graph_new();
    vg_output uninited = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_session *s = new_session(g);
    check_reported(s, uninited, NULL, 0);
    free_session_graph(s, g);
}

/* IsInitializedTest.testAssertVariablesInitialized */
static void test_tfvar__is_initialized_assert(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_new(g, "v", vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 2}, NULL), VG_VAR_TRAINABLE);
    vg_variable_new(g, "w", vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){3, 4}, NULL), VG_VAR_TRAINABLE);
    vg_output uninited = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    check_reported(s, uninited, (const char *[]){"v", "w"}, 2);
    run_target(s, init);
    check_reported(s, uninited, NULL, 0);
    free_session_graph(s, g);
}

/* IsInitializedTest.testVariableList */
static void test_tfvar__is_initialized_variable_list(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 2}, NULL),
                                    VG_VAR_TRAINABLE);
    vg_variable w = vg_variable_new(g, "w", vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){3, 4}, NULL),
                                    VG_VAR_TRAINABLE);
    vg_output uninited = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_session *s = new_session(g);
    check_reported(s, uninited, (const char *[]){"v", "w"}, 2);
    run_target(s, w.initializer);
    check_reported(s, uninited, (const char *[]){"v"}, 1);
    run_target(s, v.initializer);
    check_reported(s, uninited, NULL, 0);
    free_session_graph(s, g);
}

/* IsInitializedTest.testZeroSizeVarInitialized */
static void test_tfvar__is_initialized_zero_size_var(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_fill(g, VG_FLOAT, (int64_t[]){0, 2}, 2, 0, "zeros"),
                                    VG_VAR_TRAINABLE);
    vg_output uninited = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_session *s = new_session(g);
    run_target(s, v.initializer);
    check_reported(s, uninited, NULL, 0);
    free_session_graph(s, g);
}

/* IsInitializedTest.testTrainingWithZeroSizeVar: b - 0.1 * d(sum(b + a^T a))/db = 0.9 */
static void test_tfvar__training_with_zero_size_var(void) {
    vg_graph *g = vg_graph_new();
    vg_variable a =
        vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, (int64_t[]){0, 2}, 2, 0, "zeros"), VG_VAR_TRAINABLE);
    vg_variable b =
        vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 2}, 2, 1, "ones"), VG_VAR_TRAINABLE);
    vg_output objective = vg_reduce_sum(g, vg_add(g, b.read, vg_matmul(g, a.read, a.read, true, false, NULL), NULL),
                                        NULL, -1, false, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    vg_op *do_opt = vg_optimizer_minimize(opt, g, objective, NULL, 0, vg_out(NULL, 0), NULL);
    vg_optimizer_free(opt);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    if (do_opt) run_target(s, do_opt);
    check_fetch(s, b.ref, (double[]){0.9, 0.9, 0.9, 0.9}, 4, 1e-6);
    free_session_graph(s, g);
}

/* ------------------------------------------------------------------------ */
/* ObsoleteIsInitializedTest: variables.assert_variables_initialized(var_list) builds
 * rank_internal(var, optimize=False) per variable (a Rank op reading it), stacked when
 * there are several. */

static vg_output assert_variables_initialized(vg_graph *g, const vg_variable *vars, int n) {
    vg_output ranks[8];
    for (int i = 0; i < n && i < 8; i++) ranks[i] = vg_rank(g, vars[i].ref, NULL);
    return n == 1 ? ranks[0] : vg_pack(g, ranks, n, 0, "stack");
}

/* ObsoleteIsInitializedTest.testVariables */
static void test_tfvar__obsolete_assert_variables(void) {
    vg_graph *g = vg_graph_new();
    vg_variable vw[2] = {
        vg_variable_new(g, NULL, vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 2}, NULL), 0),
        vg_variable_new(g, NULL, vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){3, 4}, NULL), 0)};
    vg_output inited = assert_variables_initialized(g, vw, 2);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    check_fetch_fails(s, inited, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value");
    run_target(s, init);
    check_fetch(s, inited, (double[]){1, 1}, 2, 0);
    free_session_graph(s, g);
}

/* ObsoleteIsInitializedTest.testVariableList */
static void test_tfvar__obsolete_assert_variable_list(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v =
        vg_variable_new(g, NULL, vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 2}, NULL), 0);
    vg_variable w =
        vg_variable_new(g, NULL, vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){3, 4}, NULL), 0);
    vg_output inited = assert_variables_initialized(g, &v, 1);
    vg_session *s = new_session(g);
    vg_status st;
    CHECK_STATUS(vg_session_run_targets(s, &inited.op, 1, &st), &st, VG_FAILED_PRECONDITION,
                 "Attempting to use uninitialized value");
    run_target(s, w.initializer);
    CHECK_STATUS(vg_session_run_targets(s, &inited.op, 1, &st), &st, VG_FAILED_PRECONDITION,
                 "Attempting to use uninitialized value");
    run_target(s, v.initializer);
    run_target(s, inited.op);
    free_session_graph(s, g);
}

int main(void) {
    RUN_TEST(test_tfvar__initialization);
    RUN_TEST(test_tfvar__initialization_order);
    RUN_TEST(test_tfvar__assignments);
    RUN_TEST(test_tfvar__resource_assignments);
    RUN_TEST(test_tfvar__zero_size_string_assign);
    RUN_TEST(test_tfvar__count_up_to_int32);
    RUN_TEST(test_tfvar__count_up_to_int64);
    RUN_TEST(test_tfvar__control_deps_none);
    RUN_TEST(test_tfvar__control_flow);
    RUN_TEST(test_tfvar__control_flow_initialization);
    RUN_TEST(test_tfvar__use_variable_as_tensor);
    RUN_TEST(test_tfvar__zero_size_var_same_as_const);
    RUN_TEST(test_tfvar__collections);
    RUN_TEST(test_tfvar__collections_with_scope);
    RUN_TEST(test_tfvar__operators);
    RUN_TEST(test_tfvar__session);
    RUN_TEST(test_tfvar__initializer_function);
    RUN_TEST(test_tfvar__no_ref_data_race);
    RUN_TEST(test_tfvar__load);
    RUN_TEST(test_tfvar__is_initialized_no_vars);
    RUN_TEST(test_tfvar__is_initialized_assert);
    RUN_TEST(test_tfvar__is_initialized_variable_list);
    RUN_TEST(test_tfvar__is_initialized_zero_size_var);
    RUN_TEST(test_tfvar__training_with_zero_size_var);
    RUN_TEST(test_tfvar__obsolete_assert_variables);
    RUN_TEST(test_tfvar__obsolete_assert_variable_list);
    TEST_MAIN_END();
}
