/* test_tf_variable_scope.c - the rest of TF 1.15's
 * tensorflow/python/kernel_tests/variable_scope_test.py, in graph mode: every case C can
 * express that tests/train/test_variable_scope.c and tests/graph/test_naming_scopes.c do not already
 * translate in full. Each test cites the TF test it translates; expected names and
 * values are the ones in TF's assertions.
 *
 * How the Python maps to C:
 * - `with tf.variable_scope(name, default_name, ...)`: vg_variable_scope_push / _pop;
 *   re-entering a captured VariableScope: vg_variable_scope_enter; `with
 *   ops.name_scope(n) as sc`: ns_probe of scope_test_util.h (push, read, pop).
 * - tf.get_variable(reuse=False) outside any reusing scope: VG_REUSE_INHERIT; the
 *   store's own get_variable with its default reuse=None (testGetVar, testNameExists)
 *   creates or returns without a check, which is get_variable(reuse=tf.AUTO_REUSE).
 * - TF's ValueError / TypeError: VG_INVALID_ARGUMENT. A vigil graph keeps its first
 *   error (sticky) and builds nothing after it, while TF goes on after
 *   `assertRaises(ValueError)`; so each expected error is checked in a graph of its
 *   own, built the same way up to that call (the failed call creates nothing in TF).
 *
 * Translated elsewhere (not repeated here): testVarScopeInitializer,
 * testGetVariableScope, testVarScopeNameScope, testVarScopeObjectReuse,
 * testVarOpScopeUniqueNamesWithJump, testVarScopeOuterScope, testVarOpScopeReuseError,
 * testNoSideEffectsWithIdentityCustomGetter, testNestedCustomGetters
 * (tests/graph/test_naming_scopes.c, tests/train/test_variable_scope.c).
 *
 * Not translated, and why:
 * - Eager only: testGetVariableInGraphNestedUnderEagerContext, testEagerVariableStore,
 *   testEagerVariableStoreWithEagerDefun, testEagerVariablesStoreAddsToCollections
 *   (EagerVariableStore), testEagerVariablesOutsideStoreNotAddedToCollections,
 *   VariableScopeWithPartitioningTest.testNoReuseInEagerByDefault,
 *   testPartitionConcatenatesAlongCorrectAxisResourceInEager.
 * - Python objects and Python-only errors: testVarScopeNestingError (RuntimeError when a
 *   `with` block is exited out of order; vg_variable_scope_pop always leaves the
 *   innermost scope, there is no scope handle to exit), testAuxiliaryNameScopeIsInvalid
 *   (TypeError for a non-bool; C's bool), testSignatureGetVarVsGetLocalVar (argspec),
 *   testGetVariableWithInitializerWhichTakesNoArgs / ...TakesOptionalArgs /
 *   ...TakesUnprovidedArgsAndNoShape (Python lambdas as initializers),
 *   testNonCallableGetterFails (custom_getter=3; a C function pointer),
 *   testVariableCreatorNestingError (RuntimeError of `with` misuse), the TypeError of
 *   get_variable("x4", initializer={}) in testInitFromNonTensorValue.
 * - Missing in vigil, and TF1 programs do use these:
 *   - get_variable(use_resource=True) / variable_scope(use_resource=True) and
 *     tf.enable_resource_variables(): testResource, testEnableResourceVariables,
 *     testPartitionConcatenatesAlongCorrectAxisResource. vigil has resource variables
 *     (vigil/resource_variables.h) but get_variable always makes a ref VariableV2.
 *   - constraint= on get_variable / variable_scope (applied by TF's optimizers after
 *     each update): testVarScopeConstraint.
 *   - caching_device= and VariableScope.set_caching_device: testVarScopeCachingDevice.
 *   - A Tensor (or a Python/numpy value) as get_variable's initializer, shape and dtype
 *     taken from it (e.g. pretrained embeddings), with its "If initializer is a
 *     constant, do not specify shape." and "don't match" dtype errors:
 *     testInitializeFromValue; testInitFromNonTensorValue and testGetVarWithDevice are
 *     translated with the shape given and vg_init_constant / vg_init_constant_array.
 *   - Partitioned variables (partitioner=, PartitionedVariable, _PartitionInfo):
 *     VariableScopeWithPartitioningTest (testResultNameMatchesRequested,
 *     testBreaksIfPartitioningChanges, testReturnsExistingConcatenatedValueIfReuse,
 *     testAllowsReuseWithoutPartitioner, testPropagatePartitionerOnReopening,
 *     testScalarIgnoresPartitioner, testPartitionConcatenatesAlongCorrectAxis) and
 *     PartitionInfoTest (testConstructorChecks, testSingleOffset, testSingleSliceDim).
 *   - get_variable(collections=[...]): the "foo" collection of testGetLocalVar
 *     (vigil has the `local` flag for LOCAL_VARIABLES only; the rest is translated).
 *   - synchronization= / aggregation= (distribution strategies):
 *     testSynchronizationAndAggregationWithCustomGetter and the ON_READ / ON_WRITE
 *     variables of testGetTrainableVariablesWithGetVariable / ...WithVariable (their
 *     other assertions are translated).
 *   - tf.variable_creator_scope: testVariableCreator.
 *   - Variable scopes (and name scopes) per thread: TF 1.15's _VariableScopeStore is a
 *     threading.local, each thread starting at the root scope; vigil keeps one scope
 *     stack per graph and graph building is not thread-safe, so
 *     testTwoThreadsNestedScopeEntry (two threads inside "foo" at once) and
 *     testReenterMainScope (a thread's "bar" while the main thread is in "main") are
 *     not expressible. testTwoThreadsDisjointScopeEntry (one thread after the other) is.
 *   - dtypes int8, int16, uint16 (testInitFromNonInitializer runs uint8, int32, int64,
 *     bool).
 */
#include "test_util.h"
#include "status_fixture.h"
#include "scope_test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "vigil/control_flow.h"
#include "vigil/variable_scope.h"
#include <pthread.h>

/* ------------------------------------------------------------------------ */
/* helpers */

/* get_variable(name, [1]) */
static vg_variable getv1(vg_graph *g, const char *name) {
    static const int64_t one[1] = {1};
    vg_get_variable_opts o = vopts(one, 1);
    return vg_get_variable_ex(g, name, &o);
}

/* constant_op.constant([], name=name).name, without ":0" */
static const char *const_name(vg_graph *g, const char *name) {
    vg_output c = vg_const_f32(g, 0.0f, name);
    return c.op ? vg_op_name(c.op) : "(failed)";
}

static vg_session *checked_session(vg_graph *g) {
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    return s;
}

static void run_target_if(vg_session *s, vg_op *op) {
    vg_status st;
    if (!s) return;
    CHECK_OK(vg_session_run_targets(s, &op, 1, &st), &st);
}

/* Element i of a float fetch (NaN when the run fails). */
static double fetch_f32(vg_session *s, vg_output o, int i) {
    vg_status st;
    vg_tensor *t = NULL;
    if (!s) return NAN;
    CHECK_OK(vg_session_run1(s, o, &t, &st), &st);
    double r = t ? ((const float *)vg_tensor_data(t))[i] : NAN;
    vg_tensor_free(t);
    return r;
}

static void check_run_fails(vg_session *s, vg_output o, vg_code code, const char *needle) {
    vg_status st;
    memset(&st, 0, sizeof st);
    vg_tensor *t = NULL;
    if (!s) return;
    CHECK_EQ_INT(vg_session_run1(s, o, &t, &st), code);
    CHECK(t == NULL);
    vg_tensor_free(t);
    CHECK_STR_CONTAINS(st.msg, needle);
}

/* The names of scope.get_collection(key), joined by ",". */
static const char *scope_collection(vg_graph *g, const vg_vscope *scope, const char *key, char *buf, size_t len) {
    vg_output items[16];
    int n = vg_vscope_get_collection(g, scope, key, items, 16);
    buf[0] = 0;
    for (int i = 0; i < n && i < 16; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? "," : "", vg_op_name(items[i].op));
    }
    return buf;
}

/* ------------------------------------------------------------------------ */
/* VariableScopeTest */

/* testGetVar: the store's get_variable (reuse=None: create or get, i.e. AUTO_REUSE)
 * returns the same variable twice. */
static void test_get_var(void) {
    vg_graph *g = vg_graph_new();
    static const int64_t one[1] = {1};
    vg_get_variable_opts o = vopts(one, 1);
    o.reuse = VG_REUSE_AUTO;
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_variable v1 = vg_get_variable_ex(g, "v", &o);
    CHECK(v.var != NULL && v.var == v1.var && v.read.op == v1.read.op);
    CHECK_NAME(var_name(v), "v");
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testNameExists: no check with the store's default; reuse=False fails on an existing
 * name, reuse=True on a new one. */
static void name_exists_prefix(vg_graph *g, vg_variable *v) {
    static const int64_t one[1] = {1};
    vg_get_variable_opts o = vopts(one, 1);
    o.reuse = VG_REUSE_AUTO;
    *v = vg_get_variable_ex(g, "v", &o);
    vg_variable v1 = vg_get_variable_ex(g, "v", &o);
    CHECK(v->var != NULL && v->var == v1.var);
    vg_get_variable_opts no = vopts(one, 1); /* reuse=False (inherited from the root scope) */
    CHECK_NAME(var_name(vg_get_variable_ex(g, "w", &no)), "w"); /* That's ok. */
}

static void test_name_exists(void) {
    static const int64_t one[1] = {1};
    vg_variable v;
    vg_graph *g = vg_graph_new();
    name_exists_prefix(g, &v);
    vg_get_variable_opts no = vopts(one, 1);
    CHECK(vg_get_variable_ex(g, "v", &no).var == NULL); /* That fails. */
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable v already exists, disallowed.");
    vg_graph_free(g);

    g = vg_graph_new();
    name_exists_prefix(g, &v);
    vg_get_variable_opts yes = vopts(one, 1);
    yes.reuse = VG_REUSE_TRUE;
    CHECK(vg_get_variable_ex(g, "v", &yes).var == v.var); /* That's ok. */
    CHECK(vg_get_variable_ex(g, "u", &yes).var == NULL); /* That fails. */
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable u does not exist, or was not created with tf.get_variable().");
    vg_graph_free(g);
}

/* testNamelessStore: the store holds exactly v1 and v2, named "v1:0", "v2:0". */
static void test_nameless_store(void) {
    vg_graph *g = vg_graph_new();
    static const int64_t two[1] = {2};
    vg_get_variable_opts o = vopts(two, 1);
    vg_variable v1 = vg_get_variable_ex(g, "v1", &o);
    vg_variable v2 = vg_get_variable_ex(g, "v2", &o);
    CHECK_NAME(var_name(v1), "v1");
    CHECK_NAME(var_name(v2), "v2");
    CHECK(vg_variable_scope_find(g, "v1").var == v1.var && v1.var != NULL);
    CHECK(vg_variable_scope_find(g, "v2").var == v2.var && v2.var != NULL);
    int n;
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 2);
    vg_graph_free(g);
}

/* testVarScopeDType: a scope's dtype, given by string and when re-entering an object. */
static void test_var_scope_dtype(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "tower2", NULL);
    vg_vscope *tower = vg_get_variable_scope(g);
    vg_variable_scope_push(g, "foo", &(vg_variable_scope_opts){.dtype = VG_HALF});
    vg_variable v = getv0(g, "v");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, tower, &(vg_variable_scope_opts){.dtype = VG_HALF});
    vg_variable w = getv0(g, "w");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_output_dtype(v.ref), VG_HALF);
    CHECK_EQ_INT(vg_output_dtype(w.ref), VG_HALF);
    CHECK_NAME(var_name(w), "tower2/w");
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testStringDefaultInitializer: a string variable without initializer starts as "". */
static void test_string_default_initializer(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = vopts(NULL, 0);
    o.dt = VG_STRING;
    vg_variable v = vg_get_variable_ex(g, "string", &o);
    CHECK_NAME(var_name(v), "string");
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = checked_session(g);
    run_target_if(s, init);
    vg_tensor *t = NULL;
    vg_status st;
    if (s) CHECK_OK(vg_session_run1(s, v.ref, &t, &st), &st);
    CHECK(t != NULL && vg_tensor_dtype(t) == VG_STRING);
    if (t) {
        size_t len = 99;
        const char *str = vg_tensor_string(t, 0, &len);
        CHECK(str != NULL);
        CHECK_EQ_INT(len, 0);
    }
    vg_tensor_free(t);
    free_session_graph(s, g);

    /* from 1000 elements on, zeros is a Fill of "" (array_ops.zeros: _constant_if_small) */
    g = vg_graph_new();
    static const int64_t big[2] = {40, 30};
    vg_get_variable_opts ob = vopts(big, 2);
    ob.dt = VG_STRING;
    v = vg_get_variable_ex(g, "strings", &ob);
    vg_op *fill = vg_graph_op_by_name(g, "strings/Initializer/zeros");
    CHECK(fill != NULL && strcmp(vg_op_type(fill), "Fill") == 0);
    init = vg_global_variables_initializer(g);
    s = checked_session(g);
    run_target_if(s, init);
    t = NULL;
    if (s) CHECK_OK(vg_session_run1(s, v.ref, &t, &st), &st);
    CHECK(t != NULL && vg_tensor_num_elements(t) == 1200);
    for (int64_t i = 0; t && i < 1200; i++) {
        size_t len = 99;
        vg_tensor_string(t, i, &len);
        CHECK_EQ_INT(len, 0);
    }
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* testInitFromNonTensorValue: get_variable("v4", initializer=4, dtype=int32) and
 * ("w4", initializer=numpy.array([1, 2, 3]), dtype=int64). vigil takes no value as an
 * initializer (see the top): the shapes ([] and [3]) are given, the values as constant
 * initializers. */
static void test_init_from_non_tensor_value(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = vopts(NULL, 0);
    o.dt = VG_INT32;
    o.has_init = true;
    o.init = vg_init_constant(4);
    vg_variable v = vg_get_variable_ex(g, "v4", &o);
    static const double vals[3] = {1, 2, 3};
    vg_constant_array arr = {vals, 3, NULL, 0, false};
    static const int64_t three[1] = {3};
    vg_get_variable_opts ow = vopts(three, 1);
    ow.dt = VG_INT64;
    ow.has_init = true;
    ow.init = vg_init_constant_array(&arr);
    vg_variable w = vg_get_variable_ex(g, "w4", &ow);
    vg_output both[2] = {v.ref, w.ref};
    vg_op *init = vg_variables_initializer(g, both, 2, "init");
    vg_session *s = checked_session(g);
    run_target_if(s, init);
    vg_tensor *t[2] = {NULL, NULL};
    vg_status st;
    if (s) CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, both, t, 2, NULL, 0, NULL, &st), &st);
    CHECK(t[0] && t[1]);
    if (t[0] && t[1]) {
        CHECK_EQ_INT(vg_tensor_dtype(t[0]), VG_INT32);
        CHECK_EQ_INT(((const int32_t *)vg_tensor_data(t[0]))[0], 4);
        CHECK_EQ_INT(vg_tensor_dtype(t[1]), VG_INT64);
        for (int i = 0; i < 3; i++) CHECK_EQ_INT(((const int64_t *)vg_tensor_data(t[1]))[i], i + 1);
    }
    vg_tensor_free(t[0]);
    vg_tensor_free(t[1]);
    free_session_graph(s, g);
}

/* testInitFromNonInitializer: without an initializer, integer and bool variables equal
 * zeros_initializer's. */
static void test_init_from_non_initializer(void) {
    static const vg_dtype types[] = {VG_UINT8, VG_INT32, VG_INT64, VG_BOOL};
    static const int64_t dims[2] = {3, 4};
    vg_graph *g = vg_graph_new();
    vg_output x[4], y[4];
    for (int i = 0; i < 4; i++) {
        char xn[16], yn[16];
        snprintf(xn, sizeof xn, "xx%d", i);
        snprintf(yn, sizeof yn, "yy%d", i);
        vg_get_variable_opts o = vopts(dims, 2);
        o.dt = types[i];
        x[i] = vg_get_variable_ex(g, xn, &o).ref;
        o.has_init = true;
        o.init = vg_init_zeros();
        y[i] = vg_get_variable_ex(g, yn, &o).ref;
    }
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = checked_session(g);
    run_target_if(s, init);
    for (int i = 0; s && i < 4; i++) {
        vg_output f[2] = {x[i], y[i]};
        vg_tensor *t[2] = {NULL, NULL};
        vg_status st;
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, t, 2, NULL, 0, NULL, &st), &st);
        CHECK(t[0] && t[1]);
        if (t[0] && t[1]) {
            CHECK_EQ_INT(vg_tensor_dtype(t[0]), types[i]);
            CHECK_EQ_INT(vg_tensor_num_elements(t[0]), 12);
            CHECK_EQ_INT(vg_tensor_nbytes(t[0]), vg_tensor_nbytes(t[1]));
            CHECK(memcmp(vg_tensor_data(t[0]), vg_tensor_data(t[1]), vg_tensor_nbytes(t[0])) == 0);
            const unsigned char *b = vg_tensor_data(t[0]);
            for (size_t k = 0; k < vg_tensor_nbytes(t[0]); k++) CHECK_EQ_INT(b[k], 0);
        }
        vg_tensor_free(t[0]);
        vg_tensor_free(t[1]);
    }
    free_session_graph(s, g);
}

/* testVarScopeRegularizer: regularizer1(v) = reduce_mean(v) + 0.1, regularizer2 + 0.2
 * (the scale carries the constant); no_regularizer per variable, per scope and set on
 * the scope; a reused variable adds no loss. */
static vg_output mean_plus(vg_graph *g, vg_output v, double add, void *arg) {
    (void)arg;
    return vg_add(g, vg_reduce_mean(g, v, NULL, -1, false, NULL), vg_const_f32(g, (float)add, NULL), NULL);
}

static void test_var_scope_regularizer(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer init = vg_init_constant(0.3);
    vg_regularizer regularizer1 = {mean_plus, 0.1, NULL}, regularizer2 = {mean_plus, 0.2, NULL};
    int n;
    vg_variable_scope_push(g, "tower3", &(vg_variable_scope_opts){.regularizer = regularizer1});
    vg_vscope *tower = vg_get_variable_scope(g);
    vg_variable_scope_push(g, "foo", &(vg_variable_scope_opts){.initializer = &init});
    vg_variable v = getv0(g, "v");
    vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    CHECK_EQ_INT(n, 1);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, tower, &(vg_variable_scope_opts){.initializer = &init});
    vg_vscope *vs = vg_get_variable_scope(g);
    vg_variable u = getv0(g, "u");
    vg_vscope_set_regularizer(vs, regularizer2);
    vg_variable w = getv0(g, "w");
    /* Next 3 variable not regularized to test disabling regularization. */
    vg_get_variable_opts ox = vopts(NULL, 0);
    ox.regularizer = vg_regularizer_none();
    vg_variable x = vg_get_variable_ex(g, "x", &ox);
    vg_variable_scope_push(g, "baz", &(vg_variable_scope_opts){.regularizer = vg_regularizer_none()});
    vg_variable y = getv0(g, "y");
    vg_variable_scope_pop(g);
    vg_vscope_set_regularizer(vs, vg_regularizer_none());
    vg_variable z = getv0(g, "z");
    const vg_output *losses = vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    CHECK_EQ_INT(n, 3);
    vg_output fetch[3] = {{NULL, 0}};
    for (int i = 0; i < n && i < 3; i++) fetch[i] = losses[i];
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "foo", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_variable v_again = getv0(g, "v"); /* "v" is already there, reused */
    vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    CHECK_EQ_INT(n, 3); /* No new loss added. */
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK(v_again.var == v.var && v.var != NULL);
    CHECK_NAME(var_name(u), "tower3/u");
    CHECK(x.var && y.var && z.var && w.var);
    CHECK_NAME(var_name(y), "tower3/baz/y");
    vg_op *initop = vg_global_variables_initializer(g);
    vg_session *s = checked_session(g);
    run_target_if(s, initop);
    if (fetch[2].op) {
        CHECK_NEAR(fetch_f32(s, fetch[0], 0), 0.4, 1e-6);
        CHECK_NEAR(fetch_f32(s, fetch[1], 0), 0.4, 1e-6);
        CHECK_NEAR(fetch_f32(s, fetch[2], 0), 0.5, 1e-6);
        CHECK_STR_CONTAINS(vg_op_name(fetch[0].op), "tower3/foo/v/Regularizer/");
        CHECK_STR_CONTAINS(vg_op_name(fetch[1].op), "tower3/u/Regularizer/");
        CHECK_STR_CONTAINS(vg_op_name(fetch[2].op), "tower3/w/Regularizer/");
    }
    free_session_graph(s, g);
}

/* testControlDeps: a variable made inside control_dependencies([v0.value()]) does not
 * depend on v0: it initializes and reads while v0 is uninitialized; only the add made
 * there does. */
static void test_control_deps(void) {
    vg_graph *g = vg_graph_new();
    static const int64_t one[1] = {1};
    vg_get_variable_opts o = vopts(one, 1);
    o.has_init = true;
    o.init = vg_init_constant(0);
    vg_variable v0 = vg_get_variable_ex(g, "v0", &o);
    vg_graph_push_control_deps(g, &v0.read.op, 1);
    o.init = vg_init_constant(1);
    vg_variable v1 = vg_get_variable_ex(g, "v1", &o);
    vg_output add = vg_add(g, v1.read, v0.read, "add");
    vg_graph_pop_control_deps(g);
    vg_session *s = checked_session(g);
    /* v0 should be uninitialized. */
    check_run_fails(s, v0.ref, VG_FAILED_PRECONDITION, "uninitialized");
    /* We should be able to initialize and run v1 without initializing v0, even if the
     * variable was created with a control dep on v0. */
    run_target_if(s, v1.initializer);
    CHECK_NEAR(fetch_f32(s, v1.ref, 0), 1.0, 0);
    /* v0 should still be uninitialized. */
    check_run_fails(s, v0.ref, VG_FAILED_PRECONDITION, "uninitialized");
    check_run_fails(s, add, VG_FAILED_PRECONDITION, "uninitialized");
    /* If we initialize v0 we should be able to run 'add'. */
    run_target_if(s, v0.initializer);
    CHECK_NEAR(fetch_f32(s, add, 0), 1.0, 0);
    free_session_graph(s, g);
}

/* testControlFlow: get_variable in each branch of a cond: the variables live (and are
 * initialized) outside it, so they run while v0, read by the cond, is uninitialized. */
typedef struct cf_ctx {
    vg_output v0;
    vg_variable v1, v2;
} cf_ctx;

static vg_code var_in_clause(vg_graph *g, cf_ctx *c, bool then, vg_output *outs) {
    static const int64_t one[1] = {1};
    vg_get_variable_opts o = vopts(one, 1);
    o.has_init = true;
    o.init = vg_init_constant(then ? 1 : 2);
    vg_variable v = vg_get_variable_ex(g, then ? "v1" : "v2", &o);
    if (then) c->v1 = v;
    else c->v2 = v;
    outs[0] = vg_add(g, v.read, c->v0, NULL);
    return vg_graph_status(g, NULL);
}
static vg_code var_in_then_clause(vg_graph *g, void *user, vg_output *outs) { return var_in_clause(g, user, true, outs); }
static vg_code var_in_else_clause(vg_graph *g, void *user, vg_output *outs) {
    return var_in_clause(g, user, false, outs);
}

static void test_control_flow(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = vopts(NULL, 0);
    o.has_init = true;
    o.init = vg_init_constant(0);
    vg_variable v0 = vg_get_variable_ex(g, "v0", &o);
    cf_ctx c;
    memset(&c, 0, sizeof c);
    c.v0 = v0.read;
    vg_output add = {NULL, 0};
    vg_status st;
    CHECK_OK(vg_cond(g, vg_less(g, v0.read, vg_const_f32(g, 10, NULL), NULL), var_in_then_clause, var_in_else_clause,
                     &c, 1, &add, NULL, &st),
             &st);
    CHECK_NAME(var_name(c.v1), "v1");
    CHECK_NAME(var_name(c.v2), "v2");
    vg_session *s = checked_session(g);
    if (c.v1.var && c.v2.var) {
        run_target_if(s, c.v1.initializer);
        CHECK_NEAR(fetch_f32(s, c.v1.ref, 0), 1.0, 0);
        run_target_if(s, c.v2.initializer);
        CHECK_NEAR(fetch_f32(s, c.v2.ref, 0), 2.0, 0);
        /* v0 should still be uninitialized. */
        check_run_fails(s, v0.ref, VG_FAILED_PRECONDITION, "uninitialized");
        /* We should not be able to run 'add' yet. */
        check_run_fails(s, add, VG_FAILED_PRECONDITION, "uninitialized");
        /* If we initialize v0 we should be able to run 'add'. */
        run_target_if(s, v0.initializer);
        CHECK_NEAR(fetch_f32(s, add, 0), 1.0, 0);
    }
    free_session_graph(s, g);
}

/* testVarScope: scope names and the name scopes inside them. */
static void test_var_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_push(g, "tower4", NULL);
    vg_vscope *tower = vg_get_variable_scope(g);
    CHECK_NAME(vg_vscope_name(tower), "tower4");
    CHECK_NAME(ns_probe(g, "scope", b, sizeof b), "tower4/scope/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "tower5", NULL);
    vg_variable_scope_push(g, "bar", NULL);
    CHECK_NAME(vg_vscope_name(vg_get_variable_scope(g)), "tower5/bar");
    CHECK_NAME(ns_probe(g, "scope", b, sizeof b), "tower5/bar/scope/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "tower6", NULL);
    vg_variable_scope_enter(g, tower, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK_NAME(vg_vscope_name(vg_get_variable_scope(g)), "tower4");
    CHECK_NAME(ns_probe(g, "scope", b, sizeof b), "tower6/tower4/scope/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarScopeOriginalNameScope (in full: the re-entered original name scope after a
 * second "scope2", which is "scope2_1", gives "bar_1"). */
static void test_var_scope_original_name_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_graph_push_scope(g, "scope1");
    vg_variable_scope_push(g, "tower", NULL);
    vg_vscope *tower = vg_get_variable_scope(g);
    CHECK_NAME(vg_vscope_original_name_scope(tower), "scope1/tower/");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "scope1/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "scope2");
    vg_variable_scope_enter(g, tower, NULL);
    /* Re-entering preserves original name scope. */
    CHECK_NAME(vg_vscope_original_name_scope(vg_get_variable_scope(g)), "scope1/tower/");
    CHECK_NAME(ns_probe(g, "foo", b, sizeof b), "scope2/tower/foo/");
    vg_variable_scope_pop(g);
    /* Test re-entering original name scope. */
    vg_graph_push_scope(g, vg_vscope_original_name_scope(tower));
    CHECK_NAME(ns_probe(g, "bar", b, sizeof b), "scope1/tower/bar/");
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    CHECK_NAME(vg_graph_push_scope(g, "scope2"), "scope2_1");
    vg_variable_scope_enter(g, tower, NULL);
    vg_graph_push_scope(g, vg_vscope_original_name_scope(tower));
    CHECK_NAME(ns_probe(g, "bar", b, sizeof b), "scope1/tower/bar_1/");
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarScopeGetOrCreateReuse: assign(get_variable("var"), x) under AUTO_REUSE, three
 * times: one variable, created once; each assign stores its x. */
static void test_var_scope_get_or_create_reuse(void) {
    vg_graph *g = vg_graph_new();
    static const float values[3] = {42.f, 13.f, 17.f}; /* created, then reused */
    vg_output assigns[3], xs[3];
    vg_op *var = NULL;
    vg_variable_scope_opts auto_reuse = {.reuse = VG_REUSE_AUTO};
    for (int i = 0; i < 3; i++) {
        xs[i] = vg_const_f32(g, values[i], NULL);
        vg_variable_scope_push(g, "testVarScopeGetOrCreateReuse_bar", &auto_reuse);
        vg_variable v = getv0(g, "var");
        assigns[i] = vg_assign(g, v.ref, xs[i], true, NULL);
        vg_variable_scope_pop(g);
        vg_variable_scope_push(g, "testVarScopeGetOrCreateReuse_bar", &auto_reuse);
        vg_variable v2 = getv0(g, "var");
        vg_variable_scope_pop(g);
        CHECK(v.var != NULL && v2.var == v.var);
        if (i == 0) var = v.var;
        CHECK(v.var == var);
    }
    CHECK_NAME(var ? vg_op_name(var) : "", "testVarScopeGetOrCreateReuse_bar/var");
    int n;
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 1);
    vg_session *s = checked_session(g);
    for (int i = 0; s && var && i < 3; i++) {
        CHECK_NEAR(fetch_f32(s, xs[i], 0), values[i], 0);
        CHECK_NEAR(fetch_f32(s, assigns[i], 0), values[i], 0);
        CHECK_NEAR(fetch_f32(s, vg_out(var, 0), 0), values[i], 0);
    }
    free_session_graph(s, g);
}

/* testVarOpScope: variable_scope("tower", "default", []) twice (the second's
 * get_variable("w") is a ValueError; its name scope "tower_1"), then
 * variable_scope(None, "default", []) twice ("default", "default_1"). */
static void var_op_scope_run(bool with_error) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_opts dflt = {.default_name = "default"};
    vg_graph_push_scope(g, "testVarOpScope1");
    vg_variable_scope_push(g, "tower", &dflt);
    CHECK_NAME(gv(g, "w"), "tower/w");
    CHECK_NAME(ns_probe(g, "testVarOpScope2", b, sizeof b), "testVarOpScope1/tower/testVarOpScope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "tower", &dflt);
    if (with_error) {
        CHECK(getv0(g, "w").var == NULL);
        EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable tower/w already exists, disallowed.");
        vg_graph_free(g);
        return;
    }
    CHECK_NAME(ns_probe(g, "testVarOpScope2", b, sizeof b), "testVarOpScope1/tower_1/testVarOpScope2/");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "testVarOpScope2");
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "default/w");
    CHECK_NAME(ns_probe(g, "testVarOpScope2", b, sizeof b), "testVarOpScope2/default/testVarOpScope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "default_1/w");
    CHECK_NAME(ns_probe(g, "testVarOpScope2", b, sizeof b), "testVarOpScope2/default_1/testVarOpScope2/");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}
static void test_var_op_scope(void) {
    var_op_scope_run(false);
    var_op_scope_run(true);
}

/* testVarOpScopeUniqueNamesInterleavedSubstringScopes: "defaultScope1" and
 * "defaultScope" count apart. */
static void test_var_op_scope_unique_names_interleaved_substring_scopes(void) {
    vg_graph *g = vg_graph_new();
    static const char *const outer[4] = {"defaultScope1", "defaultScope1", "defaultScope", "defaultScope1"};
    static const char *const want[4] = {"defaultScope1/layer/w", "defaultScope1_1/layer/w", "defaultScope/layer/w",
                                        "defaultScope1_2/layer/w"};
    for (int i = 0; i < 4; i++) {
        vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = outer[i]});
        vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = "layer"});
        CHECK_NAME(gv(g, "w"), want[i]);
        vg_variable_scope_pop(g);
        vg_variable_scope_pop(g);
    }
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarOpScopeReuse: a re-entered "outer" with reuse=True finds its "tower" and
 * "default" variables again; its ops go to "outer_1". */
static void test_var_op_scope_reuse(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_opts dflt = {.default_name = "default"};
    vg_variable_scope_push(g, "outer", NULL);
    vg_vscope *outer = vg_get_variable_scope(g);
    vg_variable_scope_push(g, "tower", &dflt);
    vg_variable w1 = getv0(g, "w");
    CHECK_NAME(var_name(w1), "outer/tower/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &dflt);
    vg_variable w2 = getv0(g, "w");
    CHECK_NAME(var_name(w2), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);

    vg_variable_scope_enter(g, outer, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_variable_scope_push(g, "tower", &dflt);
    vg_variable r1 = getv0(g, "w");
    CHECK_NAME(var_name(r1), "outer/tower/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &dflt);
    vg_variable r2 = getv0(g, "w");
    CHECK_NAME(var_name(r2), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK(r1.var == w1.var && r2.var == w2.var);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarScopeGetVar, in full: each ValueError (towerA without reuse; a new sub-scope
 * of a reusing towerA; another shape; another dtype) in a graph of its own. */
static void var_scope_get_var_run(int fail_at) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts reuse = {.reuse = VG_REUSE_TRUE};
    vg_variable_scope_push(g, "root", NULL);
    vg_variable_scope_push(g, "towerA", NULL);
    vg_vscope *tower_a = vg_get_variable_scope(g);
    vg_variable va = getv1(g, "v");
    CHECK_NAME(var_name(va), "root/towerA/v");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, tower_a, &reuse);
    CHECK(getv1(g, "v").var == va.var);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "towerB", NULL);
    CHECK_NAME(var_name(getv1(g, "v")), "root/towerB/v");
    vg_variable_scope_pop(g);
    if (fail_at == 1) {
        vg_variable_scope_push(g, "towerA", NULL);
        CHECK(getv1(g, "v").var == NULL);
        EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable root/towerA/v already exists, disallowed.");
        vg_graph_free(g);
        return;
    }
    vg_variable_scope_push(g, "towerA", &reuse);
    CHECK(getv1(g, "v").var == va.var);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "foo", NULL);
    vg_variable_scope_push(g, "bar", NULL);
    CHECK_NAME(var_name(getv1(g, "v")), "root/foo/bar/v");
    vg_variable_scope_enter(g, tower_a, &reuse);
    CHECK(getv1(g, "v").var == va.var);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    if (fail_at >= 2) {
        vg_variable_scope_enter(g, tower_a, &reuse);
        if (fail_at == 2) {
            vg_variable_scope_push(g, "baz", NULL);
            CHECK(getv1(g, "v").var == NULL);
            EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable root/towerA/baz/v does not exist");
        } else {
            static const int64_t two[1] = {2}, one[1] = {1};
            vg_get_variable_opts o = vopts(fail_at == 3 ? two : one, 1); /* Different shape. */
            if (fail_at == 4) o.dt = VG_INT32;
            CHECK(vg_get_variable_ex(g, "v", &o).var == NULL);
            EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, fail_at == 3 ? "shape" : "dtype");
        }
    }
    CHECK_EQ_INT(vg_graph_status(g, NULL), fail_at ? VG_INVALID_ARGUMENT : VG_OK);
    vg_graph_free(g);
}
static void test_var_scope_get_var(void) {
    for (int i = 0; i <= 4; i++) var_scope_get_var_run(i);
}

/* testVarScopeNestedOuterScope, in full (with the "default" sub-scopes). */
static void test_var_scope_nested_outer_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_opts reuse = {.reuse = VG_REUSE_TRUE};
    vg_variable_scope_push(g, "outer", NULL);
    vg_vscope *outer = vg_get_variable_scope(g);
    vg_variable_scope_enter(g, outer, NULL);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/outer/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "default", NULL);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, outer, &reuse);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/outer_1/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "default", &reuse);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/default_1/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarOpScopeReuseParam, in full: reuse=True on a sub-scope of the re-entered
 * "outer", then outer.reuse_variables() (outer being the entered scope object). */
static void test_var_op_scope_reuse_param(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_opts dflt = {.default_name = "default"};
    vg_variable_scope_push(g, "outer", NULL);
    vg_vscope *outer = vg_get_variable_scope(g);
    vg_variable_scope_push(g, "tower", &dflt);
    CHECK_NAME(gv(g, "w"), "outer/tower/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);

    vg_variable_scope_enter(g, outer, NULL);
    outer = vg_get_variable_scope(g); /* `as outer` */
    vg_variable_scope_push(g, "tower", &(vg_variable_scope_opts){.default_name = "default", .reuse = VG_REUSE_TRUE});
    CHECK_NAME(gv(g, "w"), "outer/tower/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_vscope_reuse_variables(outer);
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarOpScopeOuterScope: variable_scope(outer, "default", ...): the default name is
 * not used with a scope object. outer.reuse_variables() there changes the captured
 * object, not the entered copy (which reuses already). */
static void test_var_op_scope_outer_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_opts dflt = {.default_name = "default"};
    vg_variable_scope_opts dflt_reuse = {.default_name = "default", .reuse = VG_REUSE_TRUE};
    vg_variable_scope_push(g, "outer", NULL);
    vg_vscope *outer = vg_get_variable_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, outer, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/scope2/");
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);

    vg_variable_scope_enter(g, outer, &dflt_reuse);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_2/scope2/");
    vg_vscope_reuse_variables(outer);
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_2/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarOpScopeNestedOuterScope */
static void test_var_op_scope_nested_outer_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_opts dflt = {.default_name = "default"};
    vg_variable_scope_opts dflt_reuse = {.default_name = "default", .reuse = VG_REUSE_TRUE};
    vg_variable_scope_push(g, "outer", NULL);
    vg_vscope *outer = vg_get_variable_scope(g);
    vg_variable_scope_enter(g, outer, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/outer/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);

    vg_variable_scope_enter(g, outer, &dflt_reuse);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/scope2/");
    vg_variable_scope_push(g, NULL, &dflt);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testBasicWhenAuxiliaryNameScopeIsFalse, in full (the "outer"/"inner" half and the
 * rechecks that no name scope was taken). */
static void test_basic_when_auxiliary_name_scope_is_false(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts quiet = {.no_name_scope = true};
    vg_variable_scope_push(g, "scope", &quiet);
    vg_vscope *scope = vg_get_variable_scope(g);
    CHECK_NAME(vg_vscope_original_name_scope(scope), "");
    CHECK_NAME(gv(g, "w"), "scope/w");
    CHECK_NAME(const_name(g, "c"), "c");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, scope, &quiet);
    CHECK_NAME(vg_vscope_original_name_scope(scope), "");
    CHECK_NAME(gv(g, "w1"), "scope/w1");
    CHECK_NAME(const_name(g, "c1"), "c1");
    vg_variable_scope_pop(g);
    /* Recheck: new name scope is NOT created before */
    vg_graph_push_scope(g, "scope");
    CHECK_NAME(const_name(g, "c"), "scope/c");
    vg_graph_pop_scope(g);

    vg_variable_scope_push(g, "outer", NULL);
    vg_variable_scope_push(g, "inner", &quiet);
    vg_vscope *inner = vg_get_variable_scope(g);
    CHECK_NAME(vg_vscope_original_name_scope(inner), "outer/");
    CHECK_NAME(gv(g, "w"), "outer/inner/w");
    CHECK_NAME(const_name(g, "c"), "outer/c");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, inner, &quiet);
    CHECK_NAME(vg_vscope_original_name_scope(vg_get_variable_scope(g)), "outer/");
    CHECK_NAME(gv(g, "w1"), "outer/inner/w1");
    CHECK_NAME(const_name(g, "c1"), "outer/c1");
    vg_variable_scope_pop(g);
    /* Recheck: new name scope is NOT created before */
    vg_graph_push_scope(g, "inner");
    CHECK_NAME(const_name(g, "c"), "outer/inner/c");
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testCreatedByDefaultNameWhenAuxiliaryNameScopeIsFalse */
static void test_created_by_default_name_when_auxiliary_name_scope_is_false(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts quiet = {.default_name = "default", .no_name_scope = true};
    vg_variable_scope_push(g, NULL, &quiet);
    CHECK_NAME(vg_vscope_original_name_scope(vg_get_variable_scope(g)), "");
    CHECK_NAME(gv(g, "w"), "default/w");
    CHECK_NAME(const_name(g, "c"), "c");
    vg_variable_scope_pop(g);
    /* Recheck: new name scope is NOT created before */
    vg_graph_push_scope(g, "default");
    CHECK_NAME(const_name(g, "c"), "default/c");
    vg_graph_pop_scope(g);

    vg_variable_scope_push(g, "outer", NULL);
    vg_variable_scope_push(g, NULL, &quiet);
    CHECK_NAME(vg_vscope_original_name_scope(vg_get_variable_scope(g)), "outer/");
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(const_name(g, "c"), "outer/c");
    vg_variable_scope_pop(g);
    vg_graph_push_scope(g, "default");
    CHECK_NAME(const_name(g, "c"), "outer/default/c");
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testReenterRootScopeWhenAuxiliaryNameScopeIsFalse, in full. */
static void test_reenter_root_scope_when_auxiliary_name_scope_is_false(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts quiet = {.no_name_scope = true};
    vg_vscope *root_scope = vg_get_variable_scope(g);
    vg_variable_scope_enter(g, root_scope, &quiet);
    CHECK_NAME(vg_vscope_original_name_scope(vg_get_variable_scope(g)), "");
    CHECK_NAME(gv(g, "w"), "w");
    CHECK_NAME(const_name(g, "c"), "c");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "outer", NULL);
    vg_variable_scope_enter(g, root_scope, &quiet);
    CHECK_NAME(vg_vscope_original_name_scope(vg_get_variable_scope(g)), "");
    CHECK_NAME(gv(g, "w1"), "w1");
    CHECK_NAME(const_name(g, "c1"), "outer/c1");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testReuseScopeWithoutNameScopeCollision (GitHub issue #13429), in full. */
static void test_reuse_scope_without_name_scope_collision(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts quiet = {.no_name_scope = true};
    vg_variable_scope_push(g, "outer", NULL);
    vg_variable_scope_push(g, "inner", NULL);
    vg_vscope *inner = vg_get_variable_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);

    vg_variable_scope_enter(g, inner, &quiet);
    vg_graph_push_scope(g, vg_vscope_original_name_scope(vg_get_variable_scope(g)));
    CHECK_NAME(gv(g, "w"), "outer/inner/w");
    CHECK_NAME(const_name(g, "c"), "outer/inner/c");
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "inner");
    CHECK_NAME(const_name(g, "c"), "inner/c");
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);

    vg_variable_scope_push(g, "another", NULL);
    vg_variable_scope_enter(g, inner, &quiet);
    vg_graph_push_scope(g, vg_vscope_original_name_scope(vg_get_variable_scope(g)));
    CHECK_NAME(gv(g, "w1"), "outer/inner/w1");
    CHECK_NAME(const_name(g, "c1"), "outer/inner/c1");
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "inner");
    CHECK_NAME(const_name(g, "c"), "another/inner/c");
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetLocalVar: get_local_variable (local, not trainable) names and reuses as
 * get_variable. (Its collections=["foo"] is not expressible: see the top.) */
static void test_get_local_var(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts lo = vopts(NULL, 0);
    lo.local = true;
    lo.not_trainable = true;
    vg_variable_scope_push(g, "outer", NULL);
    vg_vscope *outer = vg_get_variable_scope(g);
    vg_variable_scope_enter(g, outer, &(vg_variable_scope_opts){.default_name = "default"});
    vg_variable local_var = vg_get_variable_ex(g, "w", &lo);
    CHECK_NAME(var_name(local_var), "outer/w");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK(in_collection(g, VG_LOCAL_VARIABLES, local_var.var));
    CHECK(!in_collection(g, VG_TRAINABLE_VARIABLES, local_var.var));
    CHECK(!in_collection(g, VG_GLOBAL_VARIABLES, local_var.var));
    /* Check that local variable respects `reuse`. */
    vg_variable_scope_enter(g, outer, &(vg_variable_scope_opts){.default_name = "default", .reuse = VG_REUSE_TRUE});
    vg_variable again = vg_get_variable_ex(g, "w", &lo);
    CHECK_NAME(var_name(again), "outer/w");
    CHECK(again.var == local_var.var);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetVarWithDevice: under a device scope, the variable ops are "x" (float32,
 * VariableV2) and "y" (int64; TF's initializer numpy.arange(73), here shape [73] with a
 * constant initializer 0..72), on the scope's device. */
static void test_get_var_with_device(void) {
    vg_graph *g = vg_graph_new();
    CHECK_OK(vg_graph_push_device(g, "/device:GPU:0"), &(vg_status){0});
    static const int64_t xd[2] = {100, 200}, yd[1] = {73};
    vg_get_variable_opts ox = vopts(xd, 2);
    vg_get_variable_ex(g, "x", &ox);
    double arange[73];
    for (int i = 0; i < 73; i++) arange[i] = i;
    vg_constant_array arr = {arange, 73, NULL, 0, false};
    vg_get_variable_opts oy = vopts(yd, 1);
    oy.dt = VG_INT64;
    oy.has_init = true;
    oy.init = vg_init_constant_array(&arr);
    vg_get_variable_ex(g, "y", &oy);
    vg_graph_pop_device(g);
    const char *names[4];
    vg_dtype dts[4];
    int n = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++) {
        vg_op *op = vg_graph_op(g, i);
        const char *t = vg_op_type(op);
        if (strcmp(t, "Variable") && strcmp(t, "VariableV2") && strcmp(t, "VarHandleOp")) continue;
        CHECK_NAME(vg_op_device(op), "/device:GPU:0");
        CHECK_NAME(t, "VariableV2");
        if (n < 4) {
            names[n] = vg_op_name(op);
            dts[n] = VG_DTYPE_INVALID;
            CHECK(vg_op_attr_type_(op, "dtype", &dts[n]));
        }
        n++;
    }
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_NAME(names[0], "x");
        CHECK_EQ_INT(dts[0], VG_FLOAT);
        CHECK_NAME(names[1], "y");
        CHECK_EQ_INT(dts[1], VG_INT64);
    }
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetCollection: scope.get_collection(key) is the collection filtered by the
 * scope's name + "/" ("testGetCollection_foo" does not take "testGetCollection_foo_/");
 * the root scope's is all of it. */
static void get_collection_in_scope(vg_graph *g) {
    getv0(g, "testGetCollection_a");
    vg_get_variable_opts nt = vopts(NULL, 0);
    nt.not_trainable = true;
    vg_get_variable_ex(g, "testGetCollection_b", &nt);
}

static void test_get_collection(void) {
    vg_graph *g = vg_graph_new();
    char b[1024];
    get_collection_in_scope(g);
    vg_variable_scope_push(g, "testGetCollection_foo_", NULL);
    vg_vscope *scope1 = vg_get_variable_scope(g);
    get_collection_in_scope(g);
    CHECK_NAME(scope_collection(g, scope1, VG_TRAINABLE_VARIABLES, b, sizeof b),
               "testGetCollection_foo_/testGetCollection_a");
    CHECK_NAME(scope_collection(g, scope1, VG_GLOBAL_VARIABLES, b, sizeof b),
               "testGetCollection_foo_/testGetCollection_a,testGetCollection_foo_/testGetCollection_b");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "testGetCollection_foo", NULL);
    vg_vscope *scope2 = vg_get_variable_scope(g);
    get_collection_in_scope(g);
    CHECK_NAME(scope_collection(g, scope2, VG_TRAINABLE_VARIABLES, b, sizeof b),
               "testGetCollection_foo/testGetCollection_a");
    CHECK_NAME(scope_collection(g, scope2, VG_GLOBAL_VARIABLES, b, sizeof b),
               "testGetCollection_foo/testGetCollection_a,testGetCollection_foo/testGetCollection_b");
    vg_variable_scope_pop(g);
    vg_vscope *scope = vg_get_variable_scope(g);
    CHECK_NAME(scope_collection(g, scope, VG_GLOBAL_VARIABLES, b, sizeof b),
               "testGetCollection_a,testGetCollection_b,"
               "testGetCollection_foo_/testGetCollection_a,testGetCollection_foo_/testGetCollection_b,"
               "testGetCollection_foo/testGetCollection_a,testGetCollection_foo/testGetCollection_b");
    CHECK_NAME(scope_collection(g, scope, VG_TRAINABLE_VARIABLES, b, sizeof b),
               "testGetCollection_a,testGetCollection_foo_/testGetCollection_a,"
               "testGetCollection_foo/testGetCollection_a");
    /* the count without copying, and a short buffer */
    CHECK_EQ_INT(vg_vscope_get_collection(g, scope, VG_GLOBAL_VARIABLES, NULL, 0), 6);
    vg_output two[2];
    CHECK_EQ_INT(vg_vscope_get_collection(g, scope2, VG_GLOBAL_VARIABLES, two, 1), 2);
    CHECK_NAME(vg_op_name(two[0].op), "testGetCollection_foo/testGetCollection_a");
    CHECK_EQ_INT(vg_vscope_get_collection(g, scope2, "no such collection", two, 2), 0);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetTrainableVariablesWithGetVariable: scope.trainable_variables() leaves out the
 * non-trainable variable and those outside the scope. (The synchronization= variables
 * d, e, f are not expressible: see the top.) */
static void test_get_trainable_variables_with_get_variable(void) {
    vg_graph *g = vg_graph_new();
    char b[512];
    getv0(g, "testGetTrainableVariables_a");
    vg_variable_scope_push(g, "testGetTrainableVariables_foo", NULL);
    vg_vscope *scope = vg_get_variable_scope(g);
    getv0(g, "testGetTrainableVariables_b");
    vg_get_variable_opts nt = vopts(NULL, 0);
    nt.not_trainable = true;
    vg_get_variable_ex(g, "testGetTrainableVariables_c", &nt);
    CHECK_NAME(scope_collection(g, scope, VG_TRAINABLE_VARIABLES, b, sizeof b),
               "testGetTrainableVariables_foo/testGetTrainableVariables_b");
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetTrainableVariablesWithVariable: the same with tf.Variable (variable_scope.
 * variable), named by the name scope the variable scope opened. (The synchronization=
 * variables are not expressible: see the top.) */
static void test_get_trainable_variables_with_variable(void) {
    vg_graph *g = vg_graph_new();
    char b[512];
    vg_variable_new(g, "testGetTrainableVariables_a", vg_const_f32(g, 1.0f, NULL), VG_VAR_TRAINABLE);
    vg_variable_scope_push(g, "testGetTrainableVariables_foo", NULL);
    vg_vscope *scope = vg_get_variable_scope(g);
    vg_variable bv = vg_variable_new(g, "testGetTrainableVariables_b", vg_const_f32(g, 1.0f, NULL), VG_VAR_TRAINABLE);
    vg_variable_new(g, "testGetTrainableVariables_c", vg_const_f32(g, 1.0f, NULL), 0);
    CHECK_NAME(var_name(bv), "testGetTrainableVariables_foo/testGetTrainableVariables_b");
    CHECK_NAME(scope_collection(g, scope, VG_TRAINABLE_VARIABLES, b, sizeof b),
               "testGetTrainableVariables_foo/testGetTrainableVariables_b");
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetGlobalVariables / testGetLocalVariables: scope.global_variables() and
 * scope.local_variables(). */
static void test_get_global_and_local_variables(void) {
    vg_graph *g = vg_graph_new();
    char b[512];
    getv0(g, "testGetGlobalVariables_a");
    vg_variable_scope_push(g, "testGetGlobalVariables_foo", NULL);
    vg_vscope *scope = vg_get_variable_scope(g);
    getv0(g, "testGetGlobalVariables_b");
    CHECK_NAME(scope_collection(g, scope, VG_GLOBAL_VARIABLES, b, sizeof b),
               "testGetGlobalVariables_foo/testGetGlobalVariables_b");
    vg_variable_scope_pop(g);
    vg_graph_free(g);

    /* testGetLocalVariables: collections=[LOCAL_VARIABLES] is vigil's `local` */
    g = vg_graph_new();
    vg_get_variable_opts lo = vopts(NULL, 0);
    lo.local = true;
    vg_get_variable_ex(g, "a", &lo);
    vg_variable_scope_push(g, "foo", NULL);
    scope = vg_get_variable_scope(g);
    vg_get_variable_ex(g, "b", &lo);
    getv0(g, "c");
    CHECK_NAME(scope_collection(g, scope, VG_LOCAL_VARIABLES, b, sizeof b), "foo/b");
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetVariableWithRefDtype: get_variable with a variable's own (ref) dtype. */
static void test_get_variable_with_ref_dtype(void) {
    vg_graph *g = vg_graph_new();
    static const int64_t d1[2] = {3, 4}, d2[2] = {5, 6};
    vg_get_variable_opts o = vopts(d1, 2);
    o.dt = VG_FLOAT;
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_get_variable_opts ow = vopts(d2, 2);
    ow.dt = vg_output_dtype(v.ref);
    vg_variable w = vg_get_variable_ex(g, "w", &ow);
    CHECK(w.var != NULL);
    CHECK_EQ_INT(vg_output_dtype(w.ref), VG_FLOAT);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testTwoGraphs: variable_scope("_") is a ValueError "'_' is not a valid scope name"
 * (Graph.name_scope's check: at the top a scope starts with a letter, digit or '.'), in
 * the graph it is opened in only. Nested in a name scope, a leading '_' is valid
 * (_VALID_SCOPE_NAME_REGEX). */
static void test_two_graphs(void) {
    vg_graph *g1 = vg_graph_new();
    vg_graph *g2 = vg_graph_new();
    CHECK(vg_variable_scope_push(g2, "_", NULL) == NULL);
    EXPECT_GRAPH_ERROR(g2, VG_INVALID_ARGUMENT, "'_' is not a valid scope name");
    CHECK_EQ_INT(vg_graph_status(g1, NULL), VG_OK);
    CHECK_NAME(vg_variable_scope_name(g2), "");
    vg_graph_free(g2);
    vg_graph_free(g1);

    vg_graph *g = vg_graph_new();
    CHECK(vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = "a b"}) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "'a b' is not a valid scope name");
    vg_graph_free(g);

    g = vg_graph_new();
    vg_variable_scope_push(g, "outer", NULL);
    CHECK(vg_variable_scope_push(g, "_inner", NULL) != NULL);
    CHECK_NAME(gv(g, "w"), "outer/_inner/w");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    /* no name scope opened: nothing to check (TF's auxiliary_name_scope=False) */
    CHECK(vg_variable_scope_push(g, "_quiet", &(vg_variable_scope_opts){.no_name_scope = true}) != NULL);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* ------------------------------------------------------------------------ */
/* VariableScopeWithCustomGetterTest */

/* testCustomGetterWithReuse: a getter sees the reuse flag; the identity it returns is
 * named from the top ("not_reused", "reused"), as TF runs getters under
 * name_scope(None). */
static vg_variable reuse_aware_getter(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a,
                                      void *user) {
    (void)user;
    vg_variable var = getter(g, a, ctx);
    /* kwargs["reuse"]: True or AUTO_REUSE are truthy */
    var.read = vg_identity(g, var.read, a->reuse != VG_REUSE_INHERIT ? "reused" : "not_reused");
    return var;
}

static void test_custom_getter_with_reuse(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.custom_getter = reuse_aware_getter});
    vg_vscope *scope = vg_get_variable_scope(g);
    vg_variable v = getv1(g, "v");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, scope, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_variable v2 = getv1(g, "v");
    vg_variable_scope_pop(g);
    CHECK(v.var != NULL && v2.var == v.var);
    CHECK_NAME(v.read.op ? vg_op_name(v.read.op) : "", "not_reused");
    CHECK_NAME(v2.read.op ? vg_op_name(v2.read.op) : "", "reused");
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetterThatCreatesTwoVariablesAndSumsThem, in full: the sum is
 * "custom_getter/add" (from the top) and equals the two variables' sum. */
static vg_variable two_var_sum_getter(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a,
                                      void *user) {
    (void)user;
    vg_variable two[2];
    get_two_sub_variables(g, getter, ctx, a, two);
    vg_graph_push_scope(g, "custom_getter");
    vg_variable r = two[0];
    r.read = vg_add(g, two[0].read, two[1].read, "add");
    vg_graph_pop_scope(g);
    return r;
}

static void test_getter_that_creates_two_variables_and_sums_them(void) {
    vg_graph *g = vg_graph_new();
    static const int64_t dims[3] = {1, 2, 3};
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.custom_getter = two_var_sum_getter});
    vg_get_variable_opts o = vopts(dims, 3);
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    vg_shape sh = vg_output_shape(v.read);
    CHECK_EQ_INT(sh.ndims, 3);
    if (sh.ndims == 3) CHECK(sh.dims[0] == 1 && sh.dims[1] == 2 && sh.dims[2] == 3);
    int n;
    const vg_output *true_vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK_EQ_INT(n, 2);
    if (n != 2) {
        vg_graph_free(g);
        return;
    }
    CHECK_NAME(vg_op_name(true_vars[0].op), "scope/v/0");
    CHECK_NAME(vg_op_name(true_vars[1].op), "scope/v/1");
    CHECK_NAME(v.read.op ? vg_op_name(v.read.op) : "", "custom_getter/add");
    vg_output fetch[3] = {true_vars[0], true_vars[1], v.read};
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = checked_session(g);
    run_target_if(s, init);
    vg_tensor *t[3] = {NULL, NULL, NULL};
    vg_status st;
    if (s) CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fetch, t, 3, NULL, 0, NULL, &st), &st);
    if (t[0] && t[1] && t[2]) {
        const float *a = vg_tensor_data(t[0]), *c = vg_tensor_data(t[1]), *sum = vg_tensor_data(t[2]);
        for (int i = 0; i < 6; i++) CHECK_NEAR(sum[i], (double)a[i] + c[i], 1e-6);
        CHECK(a[0] != c[0]); /* two glorot draws */
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(t[i]);
    free_session_graph(s, g);
}

/* ------------------------------------------------------------------------ */
/* VariableScopeMultithreadedTest */

/* testTwoThreadsDisjointScopeEntry: thread 0 creates "foo/v"; thread 1, started after
 * thread 0 has finished, fails to create it again (the store is shared). */
typedef struct thread_arg {
    vg_graph *g;
    int i;
    char name[64];
    vg_code code;
} thread_arg;

static void *thread_fn(void *p) {
    thread_arg *t = p;
    vg_variable_scope_push(t->g, "foo", NULL);
    vg_variable v = getv0(t->g, "v");
    snprintf(t->name, sizeof t->name, "%s", var_name(v));
    t->code = vg_graph_status(t->g, NULL);
    vg_variable_scope_pop(t->g);
    return NULL;
}

static void test_two_threads_disjoint_scope_entry(void) {
    vg_graph *g = vg_graph_new();
    thread_arg args[2] = {{g, 0, "", VG_OK}, {g, 1, "", VG_OK}};
    for (int i = 0; i < 2; i++) {
        pthread_t th;
        CHECK_EQ_INT(pthread_create(&th, NULL, thread_fn, &args[i]), 0);
        pthread_join(th, NULL); /* Allow thread 0 to finish before starting thread 1. */
    }
    CHECK_NAME(args[0].name, "foo/v");
    CHECK_EQ_INT(args[0].code, VG_OK);
    CHECK_NAME(args[1].name, "(failed)");
    CHECK_EQ_INT(args[1].code, VG_INVALID_ARGUMENT);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable foo/v already exists, disallowed.");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_get_var);
    RUN_TEST(test_name_exists);
    RUN_TEST(test_nameless_store);
    RUN_TEST(test_var_scope_dtype);
    RUN_TEST(test_string_default_initializer);
    RUN_TEST(test_init_from_non_tensor_value);
    RUN_TEST(test_init_from_non_initializer);
    RUN_TEST(test_var_scope_regularizer);
    RUN_TEST(test_control_deps);
    RUN_TEST(test_control_flow);
    RUN_TEST(test_var_scope);
    RUN_TEST(test_var_scope_original_name_scope);
    RUN_TEST(test_var_scope_get_or_create_reuse);
    RUN_TEST(test_var_op_scope);
    RUN_TEST(test_var_op_scope_unique_names_interleaved_substring_scopes);
    RUN_TEST(test_var_op_scope_reuse);
    RUN_TEST(test_var_scope_get_var);
    RUN_TEST(test_var_scope_nested_outer_scope);
    RUN_TEST(test_var_op_scope_reuse_param);
    RUN_TEST(test_var_op_scope_outer_scope);
    RUN_TEST(test_var_op_scope_nested_outer_scope);
    RUN_TEST(test_basic_when_auxiliary_name_scope_is_false);
    RUN_TEST(test_created_by_default_name_when_auxiliary_name_scope_is_false);
    RUN_TEST(test_reenter_root_scope_when_auxiliary_name_scope_is_false);
    RUN_TEST(test_reuse_scope_without_name_scope_collision);
    RUN_TEST(test_get_local_var);
    RUN_TEST(test_get_var_with_device);
    RUN_TEST(test_get_collection);
    RUN_TEST(test_get_trainable_variables_with_get_variable);
    RUN_TEST(test_get_trainable_variables_with_variable);
    RUN_TEST(test_get_global_and_local_variables);
    RUN_TEST(test_get_variable_with_ref_dtype);
    RUN_TEST(test_two_graphs);
    RUN_TEST(test_custom_getter_with_reuse);
    RUN_TEST(test_getter_that_creates_two_variables_and_sums_them);
    RUN_TEST(test_two_threads_disjoint_scope_entry);
    TEST_MAIN_END();
}
