/* test_cf_construction.c - loops and conds built as TF 1.15's ControlFlowContext.AddOp
 * builds them (control_flow_ops.py: WhileContext._AddOpInternal,
 * _MaybeAddControlDependency, _RemoveExternalControlEdges; CondContext._AddOpInternal,
 * _BuildCondTensor; ops.init_scope / control_dependencies(None)), checked by what the
 * graphs compute. Regression tests of issue 28's construction items. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "cf_callbacks.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

/* Runs fetch with a 10 s timeout (a loop that would not end fails the test, not CI). */
static double run_scalar(vg_session *s, vg_output o, vg_status *st) {
    vg_run_options ro = {0};
    ro.timeout_in_ms = 10000;
    vg_tensor *t = NULL;
    if (vg_session_run(s, &ro, NULL, NULL, 0, &o, &t, 1, NULL, 0, NULL, st) != VG_OK) {
        fprintf(stderr, "run %s: %s\n", vg_op_name(o.op), st->msg);
        return NAN;
    }
    double v = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return v;
}

static vg_code lt3(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {
    (void)n, (void)u;
    *p = vg_less(g, v[0], vg_const_i32(g, 3, "three"), NULL);
    return VG_OK;
}

/* An op of the body whose inputs are all loop invariants (a ref to an outer variable and
 * an outer constant) gets the body pivot as control input (_MaybeAddControlDependency):
 * it runs 3 times in 3 iterations, not a 4th time in the iteration whose condition is
 * false. */
typedef struct bump_ctx {
    vg_variable v;
    vg_output one; /* built outside the loop */
} bump_ctx;
static vg_code body_bump(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    bump_ctx *c = u;
    vg_output up = vg_assign_add(g, c->v.ref, c->one, "bump");
    o[0] = kt_inc_after(g, up.op, v[0], "inc", "next");
    return VG_OK;
}
static void test_cfc__loop_invariant_op_runs_once_per_iteration(void) {
    for (int threads = 1; threads <= 2; threads++) {
        vg_graph *g = vg_graph_new();
        bump_ctx c = {vg_variable_new(g, "count", vg_const_f32(g, 0, "zero"), 0), vg_const_f32(g, 1, "one")};
        vg_output i0 = vg_const_i32(g, 0, "i0"), out;
        vg_status st;
        CHECK_OK(vg_while_loop(g, lt3, body_bump, &c, &i0, 1, NULL, 1, vg_out(NULL, 0), "while", &out, &st), &st);
        /* the AssignAdd waits for the pivot */
        vg_op *bump = vg_graph_op_by_name(g, "while/bump");
        CHECK(bump && vg_op_num_control_inputs(bump) == 1);
        vg_session *s = threaded_session(g, threads);
        CHECK_OK(vg_session_run_targets(s, &c.v.initializer, 1, &st), &st);
        CHECK_NEAR(run_scalar(s, out, &st), 3, 0);
        CHECK_NEAR(run_scalar(s, c.v.read, &st), 3, 0);
        free_session_graph(s, g);
    }
}

/* A body may return a tensor built outside the loop: its NextIteration reads the
 * captured invariant and waits for the pivot, so the loop ends (x = 7 after it). */
typedef struct outer_ctx {
    vg_output seven;
} outer_ctx;
static vg_code body_outer(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    outer_ctx *c = u;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, "inc"), "next");
    o[1] = c->seven;
    return VG_OK;
}
static void test_cfc__body_returns_outer_tensor(void) {
    for (int threads = 1; threads <= 2; threads++) {
        vg_graph *g = vg_graph_new();
        outer_ctx c = {vg_const_f32(g, 7, "seven")};
        vg_output lv[2] = {vg_const_i32(g, 0, "i0"), vg_const_f32(g, 0, "x0")}, out[2];
        vg_status st;
        CHECK_OK(vg_while_loop(g, lt3, body_outer, &c, lv, 2, NULL, 10, vg_out(NULL, 0), "while", out, &st), &st);
        vg_session *s = threaded_session(g, threads);
        CHECK_NEAR(run_scalar(s, out[1], &st), 7, 0);
        CHECK_NEAR(run_scalar(s, out[0], &st), 3, 0);
        free_session_graph(s, g);
    }
}

/* A model first built inside a loop body (tf.get_variable in the body, as an RNN cell
 * does on its first call): the variable and its initializer are created outside every
 * control-flow context (init_scope), so the global initializer runs and the loop reads
 * it: acc = 3 * 2. */
static vg_code body_model(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n, (void)u;
    vg_variable w = vg_get_variable(g, "w", VG_FLOAT, NULL, 0, vg_init_constant(2), VG_VAR_TRAINABLE);
    if (!w.var) return VG_INTERNAL;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, "inc"), "next");
    o[1] = vg_add(g, v[1], w.read, "acc");
    return VG_OK;
}
static void test_cfc__model_built_inside_loop(void) {
    vg_graph *g = vg_graph_new();
    vg_output lv[2] = {vg_const_i32(g, 0, "i0"), vg_const_f32(g, 0, "acc0")}, out[2];
    vg_status st;
    CHECK_OK(vg_while_loop(g, lt3, body_model, NULL, lv, 2, NULL, 10, vg_out(NULL, 0), "while", out, &st), &st);
    vg_op *w = vg_graph_op_by_name(g, "w");
    CHECK(w != NULL);
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = threaded_session(g, 1);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_NEAR(run_scalar(s, out[1], &st), 6, 0);
    /* the variable, its initializer and its snapshot run outside the loop: the
     * initializer ran above without the loop, and w is fetched directly */
    CHECK_NEAR(run_scalar(s, vg_out(w, 0), &st), 2, 0);
    free_session_graph(s, g);
}

/* TF's ValueError: a tf.Variable whose initial value is computed inside the loop. */
static vg_code body_bad_var(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n, (void)u;
    vg_variable bad = vg_variable_new(g, "bad", vg_cast(g, v[0], VG_FLOAT, NULL), 0);
    (void)bad;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, "inc"), "next");
    return VG_OK;
}
static void test_cfc__initial_value_from_inside_loop_fails(void) {
    vg_graph *g = vg_graph_new();
    vg_output i0 = vg_const_i32(g, 0, "i0"), out;
    vg_status st;
    vg_code rc = vg_while_loop(g, lt3, body_bad_var, NULL, &i0, 1, NULL, 10, vg_out(NULL, 0), "while", &out, &st);
    CHECK_STATUS(rc, &st, VG_INVALID_ARGUMENT, "is from inside a control-flow construct");
    vg_graph_free(g);
}

/* A cond branch may return an op (TF's _BuildCondTensor: the branch pivot with a
 * control dependency on it): the taken branch's assign runs, the other does not. */
typedef struct assign_ctx {
    vg_variable v;
} assign_ctx;
static vg_code branch_assign(vg_graph *g, void *u, vg_output *o) {
    assign_ctx *c = u;
    vg_output a = vg_assign(g, c->v.ref, vg_const_f32(g, 1, "one"), true, "set_one");
    vg_op *grp = vg_group(g, &a.op, 1, "grp");
    o[0] = vg_out(grp, 0);
    return VG_OK;
}
CF_BRANCH1(branch_noop, vg_out(vg_no_op(g, "nothing"), 0))
static void test_cfc__cond_branch_returns_op(void) {
    vg_graph *g = vg_graph_new();
    assign_ctx c = {vg_variable_new(g, "v", vg_const_f32(g, 0, "zero"), 0)};
    vg_output pred = vg_placeholder(g, VG_BOOL, NULL, 0, "pred"), r;
    vg_status st;
    CHECK_OK(vg_cond(g, pred, branch_assign, branch_noop, &c, 1, &r, "cond", &st), &st);
    CHECK_EQ_INT(vg_output_dtype(r), VG_BOOL);
    vg_session *s = threaded_session(g, 1);
    CHECK_OK(vg_session_run_targets(s, &c.v.initializer, 1, &st), &st);
    for (int k = 0; k < 2; k++) {
        bool want = k == 1;
        vg_tensor *pv = vg_tensor_new(VG_BOOL, NULL, 0, &st), *o = NULL;
        *(bool *)vg_tensor_data(pv) = want;
        CHECK_OK(vg_session_run(s, NULL, &pred, &pv, 1, &r, &o, 1, NULL, 0, NULL, &st), &st);
        if (o) CHECK_EQ_INT(*(bool *)vg_tensor_data(o), want);
        vg_tensor_free(o);
        vg_tensor_free(pv);
        CHECK_NEAR(run_scalar(s, c.v.read, &st), want ? 1 : 0, 0);
    }
    free_session_graph(s, g);
}

/* A body op with a control dependency on an op outside the loop: TF pulls it into the
 * loop as an Identity of its output (_AddOpInternal); the outer op (an update of w)
 * runs once per run, before the body reads w. Before, the edge was dropped and the
 * update never ran. */
typedef struct dep_ctx {
    vg_variable w;
    vg_op *update;
} dep_ctx;
static vg_code body_dep(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    dep_ctx *c = u;
    vg_graph_push_control_deps(g, &c->update, 1);
    vg_output wr = vg_identity(g, c->w.read, "w_now");
    vg_graph_pop_control_deps(g);
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, "inc"), "next");
    o[1] = vg_add(g, v[1], wr, "acc");
    return VG_OK;
}
static void test_cfc__outer_control_dependency_pulled_into_loop(void) {
    for (int threads = 1; threads <= 2; threads++) {
        vg_graph *g = vg_graph_new();
        dep_ctx c;
        c.w = vg_variable_new(g, "w", vg_const_f32(g, 0, "zero"), 0);
        c.update = vg_assign_add(g, c.w.ref, vg_const_f32(g, 1, "one"), "update").op;
        vg_op *noop_update = vg_group(g, &c.update, 1, "update_group"); /* an op without outputs */
        vg_output lv[2] = {vg_const_i32(g, 0, "i0"), vg_const_f32(g, 0, "acc0")}, out[2];
        vg_status st;
        CHECK_OK(vg_while_loop(g, lt3, body_dep, &c, lv, 2, NULL, 10, vg_out(NULL, 0), "while", out, &st), &st);
        dep_ctx c2 = {c.w, noop_update};
        vg_output out2[2];
        CHECK_OK(vg_while_loop(g, lt3, body_dep, &c2, lv, 2, NULL, 10, vg_out(NULL, 0), "while2", out2, &st), &st);
        vg_session *s = threaded_session(g, threads);
        CHECK_OK(vg_session_run_targets(s, &c.w.initializer, 1, &st), &st);
        CHECK_NEAR(run_scalar(s, out[1], &st), 3, 0); /* w = 1 in each of 3 iterations */
        CHECK_NEAR(run_scalar(s, out[1], &st), 6, 0); /* the next run: w = 2 */
        CHECK_NEAR(run_scalar(s, out2[1], &st), 9, 0); /* through a group without outputs: w = 3 */
        free_session_graph(s, g);
    }
}

/* A cond inside a loop: its ops lose control inputs from outside the loop
 * (CondContext._RemoveExternalControlEdges), the cond reads the loop's live values. */
typedef struct cl_ctx {
    vg_op *outer;
    vg_output i;
} cl_ctx;
static vg_code cl_true(vg_graph *g, void *u, vg_output *o) {
    cl_ctx *c = u;
    vg_graph_push_control_deps(g, &c->outer, 1);
    o[0] = vg_const_f32(g, 10, "ten");
    vg_graph_pop_control_deps(g);
    return VG_OK;
}
CF_BRANCH1(cl_false, vg_const_f32(g, 1, "one"))
static vg_code body_cond(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    cl_ctx *c = u;
    c->i = v[0];
    vg_output even = vg_equal(g, vg_floor_mod(g, v[0], vg_const_i32(g, 2, "two"), NULL), vg_const_i32(g, 0, "z"), NULL);
    vg_output r;
    vg_status st;
    vg_code rc = vg_cond(g, even, cl_true, cl_false, c, 1, &r, "cond", &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, "inc"), "next");
    o[1] = vg_add(g, v[1], r, "acc");
    return VG_OK;
}
static void test_cfc__cond_in_loop_drops_outer_control(void) {
    vg_graph *g = vg_graph_new();
    cl_ctx c = {vg_no_op(g, "outer"), {NULL, 0}};
    vg_output lv[2] = {vg_const_i32(g, 0, "i0"), vg_const_f32(g, 0, "acc0")}, out[2];
    vg_status st;
    CHECK_OK(vg_while_loop(g, lt3, body_cond, &c, lv, 2, NULL, 10, vg_out(NULL, 0), "while", out, &st), &st);
    vg_op *ten = vg_graph_op_by_name(g, "while/cond/ten");
    CHECK(ten != NULL);
    if (ten)
        for (int k = 0; k < vg_op_num_control_inputs(ten); k++)
            CHECK(vg_op_control_input(ten, k) != c.outer);
    vg_session *s = threaded_session(g, 1);
    CHECK_NEAR(run_scalar(s, out[1], &st), 10 + 1 + 10, 0); /* i = 0, 1, 2 */
    free_session_graph(s, g);
}

/* tf.gradients through stop_gradient of a loop's output is None, as without a loop. */
static vg_code body_mul(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n, (void)u;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, "inc"), "next");
    o[1] = vg_mul(g, v[1], vg_const_f32(g, 2, "two"), "x2");
    return VG_OK;
}
static void test_cfc__stop_gradient_of_loop_output(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_output lv[2] = {vg_const_i32(g, 0, "i0"), x}, out[2];
    vg_status st;
    CHECK_OK(vg_while_loop(g, lt3, body_mul, NULL, lv, 2, NULL, 10, vg_out(NULL, 0), "while", out, &st), &st);
    vg_output y = vg_stop_gradient(g, out[1], "sg"), dx = {NULL, 0};
    CHECK_OK(vg_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), &st);
    CHECK(dx.op == NULL);
    /* without stop_gradient: d(8x)/dx = 8 */
    vg_output dx2 = {NULL, 0};
    CHECK_OK(vg_gradients(g, &out[1], 1, &x, 1, NULL, &dx2, &st), &st);
    CHECK(dx2.op != NULL);
    vg_session *s = threaded_session(g, 1);
    vg_tensor *xv = vg_tensor_new_scalar_f32(1.5f, NULL), *o = NULL;
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &dx2, &o, 1, NULL, 0, NULL, &st), &st);
    if (o) CHECK_NEAR(vg_tensor_scalar(o), 8, 0);
    vg_tensor_free(o);
    vg_tensor_free(xv);
    free_session_graph(s, g);
}

int main(void) {
    RUN_TEST(test_cfc__loop_invariant_op_runs_once_per_iteration);
    RUN_TEST(test_cfc__body_returns_outer_tensor);
    RUN_TEST(test_cfc__model_built_inside_loop);
    RUN_TEST(test_cfc__initial_value_from_inside_loop_fails);
    RUN_TEST(test_cfc__cond_branch_returns_op);
    RUN_TEST(test_cfc__outer_control_dependency_pulled_into_loop);
    RUN_TEST(test_cfc__cond_in_loop_drops_outer_control);
    RUN_TEST(test_cfc__stop_gradient_of_loop_output);
    TEST_MAIN_END();
}
