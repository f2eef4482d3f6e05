/* test_variables_guard.c - TF's _try_guard_against_uninitialized_dependencies
 * (variables.py): a variable whose initial value reads another variable gets the other
 * variable's initial value while that one is uninitialized. Mirrors
 * session_manager_test.py testWaitForSessionInsufficientReadyForLocalInitCheck (as in
 * TF with the guard: local_init_op runs, ready_op reports v, and wait_for_session
 * times out with "Session was not ready after waiting N secs.") and
 * testPrepareSessionWithReadyForLocalInitOp's model (v = 1, w = Variable(v) local). */
#include "test_util.h"
#include "status_fixture.h"
#include "vigil/vigil.h"

static double value_of(vg_session *s, vg_output o, vg_status *st) {
    vg_tensor *t = NULL;
    double v = vg_session_run1(s, o, &t, st) == VG_OK ? vg_tensor_scalar(t) : -999;
    vg_tensor_free(t);
    return v;
}

/* w = Variable(v) (through v's snapshot) and u = Variable(v's ref): their initializers
 * run before v's, and in any order with it */
static void test_guard__initializer_before_dependency(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_i32(g, 1, "one"), VG_VAR_TRAINABLE);
    vg_variable w = vg_variable_new(g, "w", v.read, VG_VAR_LOCAL);
    vg_variable u = vg_variable_new(g, "u", v.ref, VG_VAR_LOCAL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &w.initializer, 1, &st), &st); /* v uninitialized */
    CHECK_NEAR(value_of(s, w.ref, &st), 1, 0);
    CHECK_OK(vg_session_run_targets(s, &u.initializer, 1, &st), &st);
    CHECK_NEAR(value_of(s, u.ref, &st), 1, 0);
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, v.ref, &t, &st), VG_FAILED_PRECONDITION); /* v still is */
    CHECK_OK(vg_session_run_targets(s, &v.initializer, 1, &st), &st);
    CHECK_NEAR(value_of(s, v.ref, &st), 1, 0);
    free_session_graph(s, g);
    /* reads deeper in an expression are guarded too (TF copies the ops in between:
     * "x/..._<name>") */
    g = vg_graph_new();
    v = vg_variable_new(g, "v", vg_const_f32(g, 1.5f, "init_v"), VG_VAR_TRAINABLE);
    vg_output x = vg_mul(g, v.read, vg_const_f32(g, 2.0f, "two"), "x");
    vg_variable d = vg_variable_new(g, "d", vg_add(g, x, x, "y"), VG_VAR_LOCAL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_graph_op_by_name(g, "x_d") != NULL);
    CHECK(vg_graph_op_by_name(g, "y_d") != NULL);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &d.initializer, 1, &st), &st);
    CHECK_NEAR(value_of(s, d.ref, &st), 6.0, 0);
    CHECK_CODE(vg_session_run1(s, x, &t, &st), VG_FAILED_PRECONDITION); /* the original still reads v */
    free_session_graph(s, g);
    /* the guard reads the live value when v is initialized */
    g = vg_graph_new();
    v = vg_variable_new(g, "v", vg_const_i32(g, 1, "one"), VG_VAR_TRAINABLE);
    vg_op *set7 = vg_assign(g, v.ref, vg_const_i32(g, 7, "seven"), true, "set7").op;
    w = vg_variable_new(g, "w", v.read, VG_VAR_LOCAL);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &set7, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &w.initializer, 1, &st), &st);
    CHECK_NEAR(value_of(s, w.ref, &st), 7, 0);
    free_session_graph(s, g);
}

/* testWaitForSessionInsufficientReadyForLocalInitCheck: ready_for_local_init_op None,
 * local_init_op = w.initializer: local init succeeds (guarded), ready_op keeps
 * reporting v, and wait_for_session gives up with DeadlineExceeded. */
static void test_guard__wait_for_session_insufficient_ready_for_local_init_check(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_i32(g, 1, "one"), VG_VAR_TRAINABLE);
    vg_variable w = vg_variable_new(g, "w", v.read, VG_VAR_LOCAL);
    vg_session_manager_options o = {0};
    o.ready_op = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    o.local_init_op = w.initializer;
    o.recovery_wait_secs = 0.05;
    vg_session_manager *sm = vg_session_manager_new(g, &o, &st);
    CHECK(sm != NULL);
    if (!sm) return;
    vg_prepare_options po = {0};
    po.max_wait_secs = 0.2;
    vg_session *s = vg_session_manager_wait_for_session(sm, &po, &st);
    CHECK(s == NULL);
    EXPECT_STATUS(&st, VG_DEADLINE_EXCEEDED, "Session was not ready after waiting");
    vg_session_free(s);
    vg_session_manager_free(sm);
    vg_graph_free(g);
}

/* testPrepareSessionWithReadyForLocalInitOp's model through prepare_session: v = 1 and
 * w = 1, both initialized */
static void test_guard__prepare_session(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_i32(g, 1, "one"), VG_VAR_TRAINABLE);
    vg_variable w = vg_variable_new(g, "w", v.read, VG_VAR_LOCAL);
    int n;
    const vg_output *globals = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    vg_session_manager_options o = {0};
    o.ready_op = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    o.ready_for_local_init_op = vg_report_uninitialized_variables(g, globals, n, "ready_local");
    o.local_init_op = w.initializer;
    vg_session_manager *sm = vg_session_manager_new(g, &o, &st);
    vg_prepare_options po = {0};
    po.init_op = vg_global_variables_initializer(g);
    vg_session *s = vg_session_manager_prepare_session(sm, &po, &st);
    CHECK(s != NULL);
    if (s) {
        CHECK_NEAR(value_of(s, v.ref, &st), 1, 0);
        CHECK_NEAR(value_of(s, w.ref, &st), 1, 0);
    }
    vg_session_free(s);
    vg_session_manager_free(sm);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_guard__initializer_before_dependency);
    RUN_TEST(test_guard__wait_for_session_insufficient_ready_for_local_init_check);
    RUN_TEST(test_guard__prepare_session);
    TEST_MAIN_END();
}
