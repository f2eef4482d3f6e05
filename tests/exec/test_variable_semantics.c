/* test_variable_semantics.c - when a variable is read (issue 28): a VariableV2 output is
 * a reference, so a consumer reads the variable when the consumer runs, after
 * everything it depends on; a fetched value is a snapshot the caller owns. Regression
 * tests for the silent wrong answers of TF1 programs ported line by line, each with
 * the value TF 1.15 computes. Also: a session runs ops added to its graph after it was
 * created, and a fed Placeholder used as a control input is satisfied by its feed. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static double run_scalar(vg_session *s, vg_output o, const vg_output *feeds, vg_tensor *const *vals, int nfeeds) {
    vg_status st;
    vg_tensor *t = NULL;
    if (vg_session_run(s, NULL, feeds, vals, nfeeds, &o, &t, 1, NULL, 0, NULL, &st) != VG_OK) {
        fprintf(stderr, "run %s: %s\n", vg_op_name(o.op), st.msg);
        return NAN;
    }
    double v = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return v;
}

/* The first case: assign_add(v, 5), then under control_dependencies([update])
 * identity(v): TF 1.15 reads 5, 10, 15 over three runs (the identity of v's snapshot
 * "v/read" aliases the variable, which the update changed in place). Before: 0, 5, 10. */
static void test_vsem__read_after_assign_add_under_control_dep(void) {
    for (int threads = 1; threads <= 2; threads++) {
        vg_graph *g = vg_graph_new();
        vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 0, "zero"), 0);
        vg_output update = vg_assign_add(g, v.ref, vg_const_f32(g, 5, "five"), "update");
        vg_graph_push_control_deps(g, &update.op, 1);
        vg_output y = vg_identity(g, v.read, "y");
        vg_output z = vg_mul(g, v.read, vg_const_f32(g, 2, "two"), "z"); /* any consumer, not only Identity */
        vg_graph_pop_control_deps(g);
        vg_session *s = threaded_session(g, threads);
        vg_status st;
        CHECK_OK(vg_session_run_targets(s, &v.initializer, 1, &st), &st);
        for (int i = 1; i <= 3; i++) CHECK_NEAR(run_scalar(s, y, NULL, NULL, 0), 5.0 * i, 0);
        for (int i = 4; i <= 5; i++) CHECK_NEAR(run_scalar(s, z, NULL, NULL, 0), 10.0 * i, 0);
        vg_session_free(s);
        vg_graph_free(g);
    }
}

/* A read not ordered with a write of the same run sees the value from before the write
 * (TF leaves the order open; vigil always runs such readers first), and a value read
 * before a write keeps its value after it (copy-on-write). */
static void test_vsem__unordered_read_sees_old_value(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 1, "one"), 0);
    vg_output before = vg_mul(g, v.read, vg_const_f32(g, 1, "k"), "before");
    vg_output update = vg_assign(g, v.ref, vg_const_f32(g, 7, "seven"), true, "update");
    for (int threads = 1; threads <= 2; threads++) {
        vg_session *s = threaded_session(g, threads);
        vg_status st;
        CHECK_OK(vg_session_run_targets(s, &v.initializer, 1, &st), &st);
        vg_output f[3] = {v.read, before, update};
        vg_tensor *o[3];
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 3, NULL, 0, NULL, &st), &st);
        CHECK_NEAR(vg_tensor_scalar(o[0]), 1, 0);
        CHECK_NEAR(vg_tensor_scalar(o[1]), 1, 0);
        CHECK_NEAR(vg_tensor_scalar(o[2]), 7, 0);
        for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
        CHECK_NEAR(run_scalar(s, v.read, NULL, NULL, 0), 7, 0);
        vg_session_free(s);
    }
    vg_graph_free(g);
}

/* TF1's most common pattern (the CIFAR-10 tutorial): with
 * control_dependencies([apply_gradient_op]): ema.apply(trainable_variables()) averages
 * the updated weights. w = 1, loss = w^2, SGD 0.25: w' = 1 - 0.25 * 2 = 0.5; EMA with
 * decay 0.9 from shadow 1: 0.9 * 1 + 0.1 * 0.5 = 0.95 (before: 1.0, the old weight). */
static void test_vsem__ema_after_optimizer(void) {
    vg_graph *g = vg_graph_new();
    vg_variable w = vg_variable_new(g, "w", vg_const_f32(g, 1, "w0"), VG_VAR_TRAINABLE);
    vg_output loss = vg_mul(g, w.read, w.read, "loss");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.25);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
    vg_optimizer_free(opt);
    vg_graph_push_control_deps(g, &train, 1);
    vg_ema *ema = vg_ema_new(g, 0.9, vg_out(NULL, 0), false, NULL);
    vg_op *avg = vg_ema_apply(ema, &w.ref, 1);
    vg_graph_pop_control_deps(g);
    vg_output shadow = vg_ema_average(ema, w.ref);
    vg_op *init = vg_global_variables_initializer(g);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = threaded_session(g, 1);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &avg, 1, &st), &st);
    CHECK_NEAR(run_scalar(s, w.read, NULL, NULL, 0), 0.5, 1e-7);
    CHECK_NEAR(run_scalar(s, shadow, NULL, NULL, 0), 0.95, 1e-6);
    /* second step: w'' = 0.5 - 0.25 * 1 = 0.25; shadow 0.9 * 0.95 + 0.1 * 0.25 = 0.88 */
    CHECK_OK(vg_session_run_targets(s, &avg, 1, &st), &st);
    CHECK_NEAR(run_scalar(s, shadow, NULL, NULL, 0), 0.88, 1e-6);
    vg_session_free(s);
    vg_ema_free(ema);
    vg_graph_free(g);
}

/* An online normalizer whose accumulators are updated and read in one step (the
 * simulation program of the issue): sum += x, count += 1, then under their control
 * dependencies mean = sum / count and x - mean. The first step with x = 10 gives mean
 * 10 and 0 (before: 0 / 0 = NaN), the second with x = 20 mean 15 and 5. */
static void test_vsem__normalizer_updated_and_read_in_one_step(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_variable sum = vg_variable_new(g, "sum", vg_const_f32(g, 0, "s0"), 0);
    vg_variable cnt = vg_variable_new(g, "count", vg_const_f32(g, 0, "c0"), 0);
    vg_output us = vg_assign_add(g, sum.ref, x, "update_sum");
    vg_output uc = vg_assign_add(g, cnt.ref, vg_const_f32(g, 1, "one"), "update_count");
    vg_op *deps[2] = {us.op, uc.op};
    vg_graph_push_control_deps(g, deps, 2);
    vg_output mean = vg_div(g, sum.read, cnt.read, "mean");
    vg_output centered = vg_sub(g, x, mean, "centered");
    vg_graph_pop_control_deps(g);
    vg_op *init = vg_global_variables_initializer(g);
    for (int threads = 1; threads <= 2; threads++) {
        vg_session *s = threaded_session(g, threads);
        vg_status st;
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        vg_tensor *xv = vg_tensor_new_scalar_f32(10, NULL);
        vg_output f[2] = {mean, centered};
        vg_tensor *o[2];
        CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, f, o, 2, NULL, 0, NULL, &st), &st);
        CHECK_NEAR(vg_tensor_scalar(o[0]), 10, 0);
        CHECK_NEAR(vg_tensor_scalar(o[1]), 0, 0);
        vg_tensor_free(o[0]), vg_tensor_free(o[1]), vg_tensor_free(xv);
        xv = vg_tensor_new_scalar_f32(20, NULL);
        CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, f, o, 2, NULL, 0, NULL, &st), &st);
        CHECK_NEAR(vg_tensor_scalar(o[0]), 15, 0);
        CHECK_NEAR(vg_tensor_scalar(o[1]), 5, 0);
        vg_tensor_free(o[0]), vg_tensor_free(o[1]), vg_tensor_free(xv);
        vg_session_free(s);
    }
    vg_graph_free(g);
}

/* A while loop that updates a variable reads the live value in every iteration:
 * body: assign_add(v, 1), then (under its control dependency) acc += v. From v = 0 and
 * three iterations TF gives acc = 1 + 2 + 3 = 6 and v = 3 (before: the value at loop
 * entry, acc = 0 + ...). */
typedef struct loop_ctx {
    vg_variable v;
} loop_ctx;
static vg_code lt3(vg_graph *g, const vg_output *vars, int n, void *user, vg_output *pred) {
    (void)n, (void)user;
    *pred = vg_less(g, vars[0], vg_const_i32(g, 3, "three"), NULL);
    return VG_OK;
}
static vg_code body_acc(vg_graph *g, const vg_output *vars, int n, void *user, vg_output *outs) {
    (void)n;
    loop_ctx *c = user;
    vg_output up = vg_assign_add(g, c->v.ref, vg_const_f32(g, 1, "one"), "bump");
    vg_graph_push_control_deps(g, &up.op, 1);
    outs[1] = vg_add(g, vars[1], c->v.read, "acc");
    vg_graph_pop_control_deps(g);
    outs[0] = vg_add(g, vars[0], vg_const_i32(g, 1, "inc"), "i");
    return VG_OK;
}
static void test_vsem__loop_reads_live_value(void) {
    for (int threads = 1; threads <= 2; threads++) {
        vg_graph *g = vg_graph_new();
        loop_ctx c;
        c.v = vg_variable_new(g, "v", vg_const_f32(g, 0, "v0"), 0);
        vg_output lv[2] = {vg_const_i32(g, 0, "i0"), vg_const_f32(g, 0, "acc0")}, out[2];
        vg_status st;
        CHECK_OK(vg_while_loop(g, lt3, body_acc, &c, lv, 2, NULL, 1, vg_out(NULL, 0), "while", out, &st), &st);
        vg_session *s = threaded_session(g, threads);
        CHECK_OK(vg_session_run_targets(s, &c.v.initializer, 1, &st), &st);
        CHECK_NEAR(run_scalar(s, out[1], NULL, NULL, 0), 6, 0);
        CHECK_NEAR(run_scalar(s, c.v.read, NULL, NULL, 0), 3, 0);
        vg_session_free(s);
        vg_graph_free(g);
    }
}

/* The caller owns what it fetched: writing into a fetched variable value changes
 * nothing in the session (TF hands back a copy). */
static void test_vsem__fetched_value_is_the_callers(void) {
    vg_graph *g = vg_graph_new();
    float init[3] = {1, 2, 3};
    int64_t d = 3;
    vg_variable v = vg_variable_new(g, "v", vg_const_array(g, VG_FLOAT, &d, 1, init, "init"), 0);
    vg_output c = vg_const_array(g, VG_FLOAT, &d, 1, init, "c");
    vg_session *s = threaded_session(g, 1);
    vg_status st;
    CHECK_OK(vg_session_run_targets(s, &v.initializer, 1, &st), &st);
    vg_output f[3] = {v.ref, v.read, c};
    vg_tensor *o[3];
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 3, NULL, 0, NULL, &st), &st);
    for (int i = 0; i < 3; i++) {
        float *p = vg_tensor_data(o[i]);
        p[0] = 100, p[1] = 200;
        vg_tensor_free(o[i]);
    }
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 3, NULL, 0, NULL, &st), &st);
    for (int i = 0; i < 3; i++) {
        const float *p = vg_tensor_data(o[i]);
        CHECK_NEAR(p[0], 1, 0);
        CHECK_NEAR(p[1], 2, 0);
        CHECK_NEAR(p[2], 3, 0);
        vg_tensor_free(o[i]);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

/* TF's Session extends its graph on the next run: ops added after the session was
 * created run, variables among them included. */
static void test_vsem__graph_grows(void) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_const_f32(g, 2, "a");
    vg_session *s = threaded_session(g, 1);
    CHECK_NEAR(run_scalar(s, a, NULL, NULL, 0), 2, 0);
    vg_variable v = vg_variable_new(g, "later", vg_const_f32(g, 3, "three"), 0);
    vg_output prod = vg_mul(g, a, v.read, "prod");
    vg_status st;
    CHECK_OK(vg_session_run_targets(s, &v.initializer, 1, &st), &st);
    CHECK_NEAR(run_scalar(s, prod, NULL, NULL, 0), 6, 0);
    vg_output more = vg_add(g, prod, vg_const_f32(g, 1, "one"), "more");
    CHECK_NEAR(run_scalar(s, more, NULL, NULL, 0), 7, 0);
    vg_session_free(s);
    vg_graph_free(g);
}

/* A fed Placeholder used as a control input: its feed satisfies the edge (TF's
 * subgraph rewrite moves the Placeholder's control edges to the feed); unfed it must be
 * fed, as any Placeholder. */
static void test_vsem__fed_placeholder_control_input(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, NULL, 0, "p");
    vg_graph_push_control_deps(g, &p.op, 1);
    vg_output c = vg_const_f32(g, 4, "c");
    vg_graph_pop_control_deps(g);
    vg_session *s = threaded_session(g, 1);
    vg_tensor *pv = vg_tensor_new_scalar_f32(1, NULL);
    CHECK_NEAR(run_scalar(s, c, &p, &pv, 1), 4, 0);
    vg_tensor *o = NULL;
    vg_status st;
    CHECK_STATUS(vg_session_run(s, NULL, NULL, NULL, 0, &c, &o, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT, "p");
    kt_teardown(g, s, (vg_tensor *[]){pv}, 1, NULL, 0);
}

/* Reading an uninitialized variable fails at the consumer with TF's message. */
static void test_vsem__uninitialized_read_names_variable(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "weights", vg_const_f32(g, 1, "one"), 0);
    vg_output y = vg_mul(g, v.read, vg_const_f32(g, 2, "two"), "y");
    vg_session *s = threaded_session(g, 1);
    vg_tensor *o = NULL;
    vg_status st;
    CHECK_STATUS(vg_session_run(s, NULL, NULL, NULL, 0, &y, &o, 1, NULL, 0, NULL, &st), &st, VG_FAILED_PRECONDITION,
        "Attempting to use uninitialized value weights");
    CHECK_STATUS(vg_session_run(s, NULL, NULL, NULL, 0, &v.read, &o, 1, NULL, 0, NULL, &st), &st, VG_FAILED_PRECONDITION,
        "Attempting to use uninitialized value weights");
    vg_session_free(s);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_vsem__read_after_assign_add_under_control_dep);
    RUN_TEST(test_vsem__unordered_read_sees_old_value);
    RUN_TEST(test_vsem__ema_after_optimizer);
    RUN_TEST(test_vsem__normalizer_updated_and_read_in_one_step);
    RUN_TEST(test_vsem__loop_reads_live_value);
    RUN_TEST(test_vsem__fetched_value_is_the_callers);
    RUN_TEST(test_vsem__graph_grows);
    RUN_TEST(test_vsem__fed_placeholder_control_input);
    RUN_TEST(test_vsem__uninitialized_read_names_variable);
    TEST_MAIN_END();
}
