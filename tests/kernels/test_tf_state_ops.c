/* test_tf_state_ops.c - the dense update and variable op tests of TF 1.15 translated to
 * C (graph mode): tensorflow/python/kernel_tests/dense_update_ops_test.py (AssignOpTest),
 * dense_update_ops_no_tsan_test.py (AssignOpTest) and variable_ops_test.py
 * (VariableOpTest). Each test names the TF method it translates; values are TF's.
 *
 * Not translated:
 *   VariableOpTest.testBasic for complex64 / complex128: vigil has no complex dtypes
 *     (float16, float32, float64, int32, int64 are translated).
 *   VariableOpTest.testTemporaryVariable, testDestroyNonexistentTemporaryVariable,
 *     testDuplicateTemporaryVariable, testDestroyTemporaryVariableTwice,
 *     testTemporaryVariableNoLeak, testTwoTemporaryVariablesNoLeaks: vigil has no
 *     TemporaryVariable / DestroyTemporaryVariable ops.
 *   The use_gpu=True halves and testAssignDependencyAcrossDevices' device pinning: vigil
 *     runs on the CPU only (the dependency the latter checks is translated).
 */
#include "test_util.h"
#include "session_test_util.h"
#include "op_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <pthread.h>

/* Element i as a double: op_test_util.h's get, and float16 too. */
static double elem(const vg_tensor *t, int64_t i) {
    if (vg_tensor_dtype(t) == VG_HALF) return vg_half_to_float(((const uint16_t *)vg_tensor_data(t))[i]);
    return get(t, i);
}

/* t has dtype dt, shape dims and values want (exactly). */
static void check_tensor(const vg_tensor *t, vg_dtype dt, const int64_t *dims, int ndims, const double *want) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_dtype(t), dt);
    CHECK_EQ_INT(vg_tensor_ndims(t), ndims);
    if (vg_tensor_ndims(t) != ndims) return;
    int64_t n = 1;
    for (int i = 0; i < ndims; i++) {
        CHECK_EQ_INT(vg_tensor_dim(t, i), dims[i]);
        n *= dims[i];
    }
    if (vg_tensor_num_elements(t) != n) return;
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++)
        if (elem(t, i) != want[i]) {
            fprintf(stderr, "  element %lld: %g, expected %g\n", (long long)i, elem(t, i), want[i]);
            bad++;
        }
    CHECK(bad == 0);
}

/* A Const of dtype dt and shape dims from double values (vg_const_values converts). */
static vg_output const_of(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const double *v, int64_t n) {
    return vg_const_values(g, dt, v, n, NULL, 0, dims, ndims, false, NULL);
}

/* tf.fill(dims, value) of dtype dt */
static vg_output fill(vg_graph *g, vg_dtype dt, int32_t d0, int32_t d1, double value) {
    vg_output dims = vg_const_i32_vec(g, (int32_t[]){d0, d1}, 2, NULL);
    return vg_fill(g, dims, vg_const_fill(g, dt, NULL, 0, value, NULL), NULL);
}

/* ------------------------------------------------------------------------ */
/* dense_update_ops_test.py AssignOpTest */

typedef enum { OP_ASSIGN, OP_ADD, OP_SUB } update_kind;

/* _initAssignFetch / _initAssignAddFetch / _initAssignSubFetch: p = Variable(x);
 * update = assign*(p, y); p.initializer.run(); new_value = update.eval(); p.eval(). */
static void init_update_fetch(update_kind k, vg_dtype dt, const double *x, const double *y, const double *want) {
    const int64_t d45[2] = {4, 5};
    vg_graph *g = vg_graph_new();
    vg_variable p = vg_variable_new(g, NULL, const_of(g, dt, d45, 2, x, 20), VG_VAR_TRAINABLE);
    vg_output yv = const_of(g, dt, d45, 2, y, 20);
    vg_output up = k == OP_ASSIGN ? vg_assign(g, p.ref, yv, true, NULL)
                   : k == OP_ADD  ? vg_assign_add(g, p.ref, yv, NULL)
                                  : vg_assign_sub(g, p.ref, yv, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = new_session(g);
    if (s && up.op) {
        run_target(s, p.initializer);
        vg_tensor *op_value = fetch(s, up), *var_value = fetch(s, p.ref);
        check_tensor(var_value, dt, d45, 2, want);
        check_tensor(op_value, dt, d45, 2, want);
        vg_tensor_free(op_value);
        vg_tensor_free(var_value);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

/* AssignOpTest.testBasic (_testTypes over float32, float64, int32, int64) */
static void test_tfstate__assign_basic(void) {
    const vg_dtype types[4] = {VG_FLOAT, VG_DOUBLE, VG_INT32, VG_INT64};
    double x[20], y[20], sum[20], diff[20];
    for (int i = 0; i < 20; i++) x[i] = 0, y[i] = i, sum[i] = x[i] + y[i], diff[i] = x[i] - y[i];
    for (int k = 0; k < 4; k++) {
        init_update_fetch(OP_ASSIGN, types[k], x, y, y);
        init_update_fetch(OP_ADD, types[k], x, y, sum);
        init_update_fetch(OP_SUB, types[k], x, y, diff);
    }
}

/* AssignOpTest.testAssignNonStrictShapeChecking */
static void test_tfstate__assign_non_strict_shape_checking(void) {
    vg_graph *g = vg_graph_new();
    vg_variable p =
        vg_variable_new(g, NULL, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, (int32_t[]){1}, NULL), 0);
    vg_output data = fill(g, VG_INT32, 1024, 1024, 0);
    vg_output a = vg_assign(g, p.ref, data, false, NULL);
    vg_output data2 = fill(g, VG_INT32, 10, 10, 1);
    vg_output a2 = vg_assign(g, p.ref, data2, false, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    static double want[1024 * 1024];
    run_target(s, a.op);
    vg_tensor *t = fetch(s, p.ref);
    check_tensor(t, VG_INT32, (int64_t[]){1024, 1024}, 2, want);
    vg_tensor_free(t);
    for (int i = 0; i < 100; i++) want[i] = 1;
    run_target(s, a2.op);
    t = fetch(s, p.ref);
    check_tensor(t, VG_INT32, (int64_t[]){10, 10}, 2, want);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

/* AssignOpTest.testInitRequiredAssignAdd / testInitRequiredAssignSub */
static void init_required(bool add) {
    vg_graph *g = vg_graph_new();
    vg_variable p = vg_variable_new(g, NULL, fill(g, VG_INT32, 1024, 1024, 1), 0);
    vg_output zero = fill(g, VG_INT32, 1024, 1024, 0);
    vg_output a = add ? vg_assign_add(g, p.ref, zero, NULL) : vg_assign_sub(g, p.ref, zero, NULL);
    vg_session *s = new_session(g);
    vg_status st;
    CHECK_STATUS(vg_session_run_targets(s, &a.op, 1, &st), &st, VG_FAILED_PRECONDITION, "use uninitialized");
    vg_session_free(s);
    vg_graph_free(g);
}
static void test_tfstate__init_required_assign_add(void) { init_required(true); }
static void test_tfstate__init_required_assign_sub(void) { init_required(false); }

/* Runs every op of ops[0..n) from its own thread on one session. */
typedef struct run_arg {
    vg_session *s;
    vg_op *op;
    vg_code rc;
} run_arg;

static void *run_thread(void *p) {
    run_arg *a = p;
    vg_status st;
    a->rc = vg_session_run_targets(a->s, &a->op, 1, &st);
    if (a->rc) fprintf(stderr, "  thread run %s: %s\n", vg_op_name(a->op), st.msg);
    return NULL;
}

static void run_in_threads(vg_session *s, vg_op *const *ops, int n) {
    pthread_t th[20];
    run_arg args[20];
    for (int i = 0; i < n; i++) {
        args[i] = (run_arg){s, ops[i], VG_OK};
        CHECK(pthread_create(&th[i], NULL, run_thread, &args[i]) == 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(args[i].rc, VG_OK);
    }
}

/* tf.assign_add(p, value, use_locking) */
static vg_op *assign_add_locking(vg_graph *g, vg_output ref, vg_output value, bool use_locking) {
    vg_op_builder *b = vg_op_builder_new(g, "AssignAdd", "AssignAdd");
    vg_op_builder_add_input(b, ref);
    vg_op_builder_add_input(b, value);
    vg_op_builder_set_attr_bool(b, "use_locking", use_locking);
    return vg_op_builder_finish(b);
}

/* Initializes p, runs the 20 ops on 20 threads at once in a session on g, and returns p's
 * value (checked to hold 1024 x 1024 elements; the caller frees it); frees g. */
static vg_tensor *run_ops_in_threads(vg_graph *g, vg_variable p, vg_op **ops) {
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = new_session(g);
    run_target(s, p.initializer);
    run_in_threads(s, ops, 20);
    vg_tensor *t = fetch(s, p.ref);
    CHECK(t && vg_tensor_num_elements(t) == 1024 * 1024);
    kt_teardown(g, s, NULL, 0, NULL, 0);
    return t;
}

/* AssignOpTest.testParallelUpdateWithLocking (dense_update_ops_test.py) and
 * testParallelUpdateWithoutLocking (dense_update_ops_no_tsan_test.py): 20 threads each
 * add ones. With locking every element is 20; without, TF only promises 1 <= x <= 20
 * (vigil holds the variable's lock either way, so it is 20 too). */
static void parallel_update(bool locking) {
    vg_graph *g = vg_graph_new();
    vg_output ones_t = fill(g, VG_FLOAT, 1024, 1024, 1.0);
    vg_variable p = vg_variable_new(g, NULL, fill(g, VG_FLOAT, 1024, 1024, 0.0), VG_VAR_TRAINABLE);
    vg_op *adds[20];
    for (int i = 0; i < 20; i++) adds[i] = assign_add_locking(g, p.ref, ones_t, locking);
    vg_tensor *t = run_ops_in_threads(g, p, adds);
    if (t) {
        const float *v = vg_tensor_data(t);
        bool ok = true;
        for (int i = 0; i < 1024 * 1024; i++) ok &= locking ? v[i] == 20.0f : (v[i] >= 1.0f && v[i] <= 20.0f);
        CHECK(ok);
    }
    vg_tensor_free(t);
}
static void test_tfstate__parallel_update_with_locking(void) { parallel_update(true); }
static void test_tfstate__parallel_update_without_locking(void) { parallel_update(false); }

/* AssignOpTest.testParallelAssignWithLocking (dense_update_ops_test.py): 20 threads
 * assign ones * i: every element is the same value, one of 1..20;
 * testParallelAssignWithoutLocking (no_tsan; assign(p, v, False) is validate_shape=False):
 * every element is in (0, 20]. The C argument is validate_shape in both (TF's
 * use_locking stays Assign's default, true, in both). */
static void parallel_assign(bool locking) {
    vg_graph *g = vg_graph_new();
    vg_output ones_t = fill(g, VG_FLOAT, 1024, 1024, 1.0);
    vg_variable p = vg_variable_new(g, NULL, fill(g, VG_FLOAT, 1024, 1024, 0.0), VG_VAR_TRAINABLE);
    vg_op *assigns[20];
    for (int i = 1; i <= 20; i++)
        assigns[i - 1] = vg_assign(g, p.ref, vg_mul(g, ones_t, vg_const_f32(g, (float)i, NULL), NULL), locking, NULL).op;
    vg_tensor *t = run_ops_in_threads(g, p, assigns);
    if (t) {
        const float *v = vg_tensor_data(t);
        bool ok = true;
        for (int i = 0; i < 1024 * 1024; i++) ok &= v[i] > 0.0f && v[i] <= 20.0f && (!locking || v[i] == v[0]);
        CHECK(ok);
    }
    vg_tensor_free(t);
}
static void test_tfstate__parallel_assign_with_locking(void) { parallel_assign(true); }
static void test_tfstate__parallel_assign_without_locking(void) { parallel_assign(false); }

/* ------------------------------------------------------------------------ */
/* variable_ops_test.py VariableOpTest */

/* VariableOpTest.testBasic (_testTypes / _initFetch): p = variable_op(x.shape, dtype);
 * assign(p, x).op.run(); p == x, for float16, float32, float64, int32, int64. */
static void test_tfvarop__basic(void) {
    const vg_dtype types[5] = {VG_HALF, VG_FLOAT, VG_DOUBLE, VG_INT32, VG_INT64};
    const int64_t d45[2] = {4, 5};
    double x[20];
    for (int i = 0; i < 20; i++) x[i] = i;
    for (int k = 0; k < 5; k++) {
        vg_graph *g = vg_graph_new();
        vg_output p = vg_variable_op(g, types[k], d45, 2, "Variable");
        vg_output op = vg_assign(g, p, const_of(g, types[k], d45, 2, x, 20), true, NULL);
        vg_status st;
        CHECK_OK(vg_graph_status(g, &st), &st);
        vg_session *s = new_session(g);
        if (s && op.op) {
            run_target(s, op.op);
            vg_tensor *t = fetch(s, p);
            check_tensor(t, types[k], d45, 2, x);
            vg_tensor_free(t);
        }
        vg_session_free(s);
        vg_graph_free(g);
    }
}

/* VariableOpTest.testset_shape: set_shape=False leaves the shape unknown. */
static void test_tfvarop__set_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = vg_variable_op(g, VG_FLOAT, (int64_t[]){1, 2}, 2, NULL);
    CHECK(shape_is(p, (int64_t[]){1, 2}, 2));
    vg_output q = vg_variable_op(g, VG_FLOAT, NULL, -1, NULL);
    CHECK_EQ_INT(vg_output_shape(q).ndims, -1);
    vg_graph_free(g);
}

/* The static shape of assign(var, value, validate_shape) for a var of shape [1, 2] or
 * unknown (var_shape false) and a value [[42, 43]] or a shapeless placeholder. */
static vg_shape assign_shape(bool var_shape, bool value_shape, bool validate, int kind) {
    vg_graph *g = vg_graph_new();
    vg_output var = vg_variable_op(g, VG_FLOAT, (int64_t[]){1, 2}, var_shape ? 2 : -1, NULL);
    vg_output value = value_shape ? vg_const_array(g, VG_FLOAT, (int64_t[]){1, 2}, 2, (float[]){42, 43}, NULL)
                                  : vg_placeholder(g, VG_FLOAT, NULL, -1, NULL);
    vg_output a = kind == 0 ? vg_assign(g, var, value, validate, NULL)
                  : kind == 1 ? vg_assign_add(g, var, value, NULL)
                              : vg_assign_sub(g, var, value, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_shape s = a.op ? vg_output_shape(a) : vg_shape_make((int64_t[]){-99}, 1);
    vg_graph_free(g);
    return s;
}

static bool is_12(vg_shape s) { return s.ndims == 2 && s.dims[0] == 1 && s.dims[1] == 2; }

/* VariableOpTest.testAssign ... testAssignNoShapeNoValidateShape */
static void test_tfvarop__assign_shapes(void) {
    CHECK(is_12(assign_shape(true, true, true, 0)));         /* testAssign */
    CHECK(is_12(assign_shape(true, true, false, 0)));        /* testAssignNoValidateShape */
    CHECK(is_12(assign_shape(false, true, true, 0)));        /* testAssignNoVarShape */
    CHECK(is_12(assign_shape(false, true, false, 0)));       /* testAssignNoVarShapeNoValidateShape */
    CHECK(is_12(assign_shape(true, false, true, 0)));        /* testAssignNoValueShape */
    CHECK(assign_shape(true, false, false, 0).ndims == -1);  /* testAssignNoValueShapeNoValidateShape */
    CHECK(assign_shape(false, false, true, 0).ndims == -1);  /* testAssignNoShape */
    CHECK(assign_shape(false, false, false, 0).ndims == -1); /* testAssignNoShapeNoValidateShape */
    /* testAssignNoValueShape: the variable keeps its shape */
    vg_graph *g = vg_graph_new();
    vg_output var = vg_variable_op(g, VG_FLOAT, (int64_t[]){1, 2}, 2, NULL);
    vg_assign(g, var, vg_placeholder(g, VG_FLOAT, NULL, -1, NULL), true, NULL);
    CHECK(is_12(vg_output_shape(var)));
    vg_graph_free(g);
}

/* VariableOpTest.testAssignUpdate, testAssignUpdateNoVarShape, testAssignUpdateNoValueShape,
 * testAssignUpdateNoShape (assign_add with [[2, 3]], assign_sub with [[12, 13]]: the
 * values do not matter for the shapes) */
static void test_tfvarop__assign_update_shapes(void) {
    for (int kind = 1; kind <= 2; kind++) {
        CHECK(is_12(assign_shape(true, true, true, kind)));          /* testAssignUpdate */
        CHECK(is_12(assign_shape(false, true, true, kind)));         /* testAssignUpdateNoVarShape */
        CHECK(is_12(assign_shape(true, false, true, kind)));         /* testAssignUpdateNoValueShape */
        CHECK(assign_shape(false, false, true, kind).ndims == -1);   /* testAssignUpdateNoShape */
    }
}

/* VariableOpTest.testAssignDependencyAcrossDevices (one device): a read under
 * control_dependencies([increment]) sees the incremented value: 2 * 2 = 4. */
static void test_tfvarop__assign_dependency(void) {
    vg_graph *g = vg_graph_new();
    vg_output var = vg_variable_op(g, VG_FLOAT, (int64_t[]){1}, 1, "Variable");
    vg_output set = vg_assign(g, var, vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, (float[]){1}, NULL), true, NULL);
    vg_output increment =
        vg_assign_add(g, var, vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, (float[]){1}, NULL), NULL);
    vg_graph_push_control_deps(g, &increment.op, 1);
    vg_output result = vg_mul(g, var, var, NULL);
    vg_graph_pop_control_deps(g);
    vg_session *s = new_session(g);
    run_target(s, set.op);
    vg_tensor *t = fetch(s, result);
    check_tensor(t, VG_FLOAT, (int64_t[]){1}, 1, (double[]){4});
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

/* VariableOpTest.testIsVariableInitialized */
static void test_tfvarop__is_variable_initialized(void) {
    vg_graph *g = vg_graph_new();
    vg_output v0 = vg_variable_op(g, VG_FLOAT, (int64_t[]){1, 2}, 2, "Variable");
    vg_output is = vg_is_variable_initialized(g, v0, NULL);
    vg_output a = vg_assign(g, v0, vg_const_array(g, VG_FLOAT, (int64_t[]){1, 2}, 2, (float[]){2, 3}, NULL), true, NULL);
    vg_session *s = new_session(g);
    vg_tensor *t = fetch(s, is);
    check_tensor(t, VG_BOOL, NULL, 0, (double[]){0});
    vg_tensor_free(t);
    t = fetch(s, a);
    check_tensor(t, VG_FLOAT, (int64_t[]){1, 2}, 2, (double[]){2, 3});
    vg_tensor_free(t);
    t = fetch(s, is);
    check_tensor(t, VG_BOOL, NULL, 0, (double[]){1});
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

int main(void) {
    RUN_TEST(test_tfstate__assign_basic);
    RUN_TEST(test_tfstate__assign_non_strict_shape_checking);
    RUN_TEST(test_tfstate__init_required_assign_add);
    RUN_TEST(test_tfstate__init_required_assign_sub);
    RUN_TEST(test_tfstate__parallel_update_with_locking);
    RUN_TEST(test_tfstate__parallel_update_without_locking);
    RUN_TEST(test_tfstate__parallel_assign_with_locking);
    RUN_TEST(test_tfstate__parallel_assign_without_locking);
    RUN_TEST(test_tfvarop__basic);
    RUN_TEST(test_tfvarop__set_shape);
    RUN_TEST(test_tfvarop__assign_shapes);
    RUN_TEST(test_tfvarop__assign_update_shapes);
    RUN_TEST(test_tfvarop__assign_dependency);
    RUN_TEST(test_tfvarop__is_variable_initialized);
    TEST_MAIN_END();
}
