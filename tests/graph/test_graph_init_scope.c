/* test_graph_init_scope.c - vg_graph_push/pop_init_scope (TF's ops.init_scope in a
 * graph) and vg_variable_set_parts.
 *
 * test_init_scope__clears_control_dependencies mirrors TF 1.15's
 * tensorflow/python/framework/ops_test.py InitScopeTest.testClearsControlDependencies. */
#include "oom_util.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include "vigil/vigil.h"

/* Whether op's control inputs are exactly want[0..n) (in any order). */
static bool controls_are(const vg_op *op, vg_op *const *want, int n) {
    if (!op || vg_op_num_control_inputs(op) != n) {
        fprintf(stderr, "  %s has %d control inputs, expected %d\n", op ? vg_op_name(op) : "NULL",
                op ? vg_op_num_control_inputs(op) : -1, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int j = 0; j < n; j++) found = found || vg_op_control_input(op, j) == want[i];
        if (!found) return false;
    }
    return true;
}

static void test_init_scope__clears_control_dependencies(void) {
    vg_graph *g = vg_graph_new();
    vg_op *a1 = vg_no_op(g, "a_1"), *a2 = vg_no_op(g, "a_2"), *a3 = vg_no_op(g, "a_3"), *a4 = vg_no_op(g, "a_4");
    vg_graph_push_control_deps(g, &a1, 1);
    vg_graph_push_control_deps(g, &a2, 1);
    vg_graph_push_init_scope(g);
    vg_graph_push_control_deps(g, &a3, 1);
    vg_graph_push_control_deps(g, &a4, 1);
    vg_op *b34 = vg_no_op(g, "b_3_4"); /* deps [a_3, a_4] */
    vg_graph_pop_control_deps(g);
    vg_op *b3 = vg_no_op(g, "b_3"); /* deps [a_3] */
    vg_graph_pop_control_deps(g);
    vg_op *bnone = vg_no_op(g, "b_none"); /* deps back to None */
    vg_graph_pop_control_deps(g);       /* extra pop inside the scope: a no-op */
    vg_op *bnone2 = vg_no_op(g, "b_none2");
    vg_graph_pop_init_scope(g);
    vg_op *b12 = vg_no_op(g, "b_1_2"); /* deps back to [a_1, a_2] */
    vg_graph_pop_control_deps(g);
    vg_graph_pop_control_deps(g);
    vg_op *after = vg_no_op(g, "after");

    vg_op *w34[] = {a3, a4}, *w12[] = {a1, a2};
    CHECK(controls_are(b34, w34, 2));
    CHECK(controls_are(b3, &a3, 1));
    CHECK(controls_are(bnone, NULL, 0));
    CHECK(controls_are(bnone2, NULL, 0));
    CHECK(controls_are(b12, w12, 2));
    CHECK(controls_are(after, NULL, 0));
    CHECK_CODE(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* Nested init scopes; pushes left open inside a scope are dropped with it; a pop with
 * no scope open changes nothing. */
static void test_init_scope__nesting_and_unbalanced(void) {
    vg_graph *g = vg_graph_new();
    vg_op *a = vg_no_op(g, "a"), *b = vg_no_op(g, "b");
    vg_graph_pop_init_scope(g); /* none open */
    vg_graph_push_control_deps(g, &a, 1);
    vg_graph_pop_init_scope(g); /* none open: a's scope stays */
    vg_op *x = vg_no_op(g, "x");
    CHECK(controls_are(x, &a, 1));
    vg_graph_push_init_scope(g);
    vg_graph_push_control_deps(g, &b, 1);
    vg_graph_push_init_scope(g);
    vg_op *y = vg_no_op(g, "y");
    vg_graph_pop_init_scope(g);
    vg_op *z = vg_no_op(g, "z");
    vg_graph_push_control_deps(g, &a, 1); /* left open */
    vg_graph_pop_init_scope(g);
    vg_op *w = vg_no_op(g, "w");
    vg_graph_pop_control_deps(g);
    vg_op *v = vg_no_op(g, "v");
    CHECK(controls_are(y, NULL, 0));
    CHECK(controls_are(z, &b, 1));
    CHECK(controls_are(w, &a, 1));
    CHECK(controls_are(v, NULL, 0));
    vg_graph_free(g);
}

/* Variables made under control dependencies get none (tf.Variable uses init_scope). */
static void test_init_scope__variables_ignore_outer_deps(void) {
    vg_graph *g = vg_graph_new();
    vg_op *dep = vg_no_op(g, "dep");
    vg_graph_push_control_deps(g, &dep, 1);
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 1.0f, "c"), 0);
    vg_op *after = vg_no_op(g, "after");
    vg_graph_pop_control_deps(g);
    CHECK(v.var != NULL);
    CHECK(controls_are(v.var, NULL, 0));
    CHECK(controls_are(v.initializer, NULL, 0));
    CHECK(controls_are(after, &dep, 1));
    vg_graph_free(g);
}

static void test_variable_set_parts(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 1.0f, "c"), 0);
    CHECK(vg_variable_initializer(v.var) == v.initializer);
    CHECK(vg_variable_snapshot(v.var).op == v.read.op);
    /* replace: another Assign and Identity */
    vg_op *init2 = vg_assign(g, v.ref, vg_const_f32(g, 2.0f, "c2"), true, "init2").op;
    vg_output read2 = vg_identity(g, v.ref, "read2");
    CHECK_OK(vg_variable_set_parts(v.var, init2, read2, &st), &st);
    CHECK(vg_variable_initializer(v.var) == init2);
    CHECK(vg_variable_snapshot(v.var).op == read2.op);
    CHECK_OK(vg_variable_set_parts(v.var, NULL, (vg_output){NULL, 0}, &st), &st);
    /* none recorded: falls back to "<name>/Assign" and "<name>/read" */
    CHECK(vg_variable_initializer(v.var) == v.initializer);
    CHECK(vg_variable_snapshot(v.var).op == v.read.op);
    /* errors */
    CHECK_CODE(vg_variable_set_parts(NULL, NULL, (vg_output){NULL, 0}, &st), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_variable_set_parts(init2, NULL, (vg_output){NULL, 0}, &st), &st, VG_INVALID_ARGUMENT, "init2");
    CHECK_CODE(vg_variable_set_parts(v.var, NULL, (vg_output){read2.op, 3}, &st), VG_INVALID_ARGUMENT);
    vg_graph *g2 = vg_graph_new();
    vg_op *other = vg_no_op(g2, "other");
    CHECK_CODE(vg_variable_set_parts(v.var, other, (vg_output){NULL, 0}, NULL), VG_INVALID_ARGUMENT);
    CHECK(vg_variable_initializer(v.var) == v.initializer);
    CHECK_CODE(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g2);
    vg_graph_free(g);
}

/* Each allocation of a push/build/pop sequence fails in turn: the graph reports
 * RESOURCE_EXHAUSTED (or, once nothing fails, the op has no control inputs), the pops
 * after a failed push are harmless, nothing crashes or leaks (run under ASan in CI). */
static void test_init_scope__allocation_failures(void) {
    oom_install();
    for (long n = 1; n < 200; n++) {
        arm(0);
        vg_graph *g = vg_graph_new();
        if (!g) continue;
        vg_op *a1 = vg_no_op(g, "a1");
        vg_graph_push_control_deps(g, &a1, 1);
        arm(n);
        vg_graph_push_init_scope(g);
        vg_graph_push_init_scope(g);
        vg_op *x = vg_no_op(g, "x");
        vg_graph_pop_init_scope(g);
        vg_graph_pop_init_scope(g);
        bool hit = injected(n);
        arm(0);
        vg_code c = vg_graph_status(g, NULL);
        if (hit) CHECK_CODE(c, VG_RESOURCE_EXHAUSTED);
        else {
            CHECK_CODE(c, VG_OK);
            CHECK(controls_are(x, NULL, 0));
        }
        vg_graph_pop_control_deps(g);
        vg_graph_free(g);
        if (!hit) break;
    }
    arm(0);
    vg_allocator_set(NULL);
}

int main(void) {
    RUN_TEST(test_init_scope__clears_control_dependencies);
    RUN_TEST(test_init_scope__nesting_and_unbalanced);
    RUN_TEST(test_init_scope__variables_ignore_outer_deps);
    RUN_TEST(test_variable_set_parts);
    RUN_TEST(test_init_scope__allocation_failures);
    TEST_MAIN_END();
}
