/* test_control_flow_grad.c - gradients through tf.cond and tf.while_loop (TF's scheme:
 * Switch/Merge gradients for cond, a backward while loop with stacks for while),
 * checked against central finite differences (gradcheck.h) and hand values. */
#include "test_util.h"
#include "cf_callbacks.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "mts_fixture.h"

static vg_tensor *vec(const double *v, int n) {
    vg_status st;
    int64_t d = n;
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, &d, 1, &st);
    memcpy(vg_tensor_data(t), v, sizeof(double) * (size_t)n);
    return t;
}
static vg_tensor *boolt(bool b) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_BOOL, NULL, 0, &st);
    *(bool *)vg_tensor_data(t) = b;
    return t;
}

/* ---- cond: p ? x*x*y : sin(x) + y ------------------------------------------------ */
typedef struct xy {
    vg_output x, y;
} xy;
static vg_code br_t(vg_graph *g, void *u, vg_output *o) {
    xy *v = u;
    o[0] = vg_mul(g, vg_mul(g, v->x, v->x, NULL), v->y, NULL);
    return VG_OK;
}
static vg_code br_f(vg_graph *g, void *u, vg_output *o) {
    xy *v = u;
    o[0] = vg_add(g, vg_sin(g, v->x, NULL), v->y, NULL);
    return VG_OK;
}

static void test_cond_grad(void) {
    for (int side = 0; side < 2; side++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        int64_t d = 3;
        vg_output p = vg_placeholder(g, VG_BOOL, NULL, 0, "p");
        xy v = {vg_placeholder(g, VG_DOUBLE, &d, 1, "x"), vg_placeholder(g, VG_DOUBLE, &d, 1, "y")};
        vg_output o;
        CHECK_OK(vg_cond(g, p, br_t, br_f, &v, 1, &o, NULL, &st), &st);
        vg_tensor *xv[2] = {vec((double[]){0.5, -1.2, 2.0}, 3), vec((double[]){1.5, 0.3, -0.7}, 3)};
        vg_tensor *pv = boolt(side == 1);
        vg_output xs[2] = {v.x, v.y};
        CHECK_EQ_INT(vg_gradcheck_ex(g, xs, xv, 2, &p, &pv, 1, o, 1e-6, 1e-6), 0);
        vg_tensor_free(xv[0]);
        vg_tensor_free(xv[1]);
        vg_tensor_free(pv);
        vg_graph_free(g);
    }
}

/* ---- while: y = x^n, (i, y) loop ------------------------------------------------ */
typedef struct powc {
    vg_output x;
    int n;
} powc;
CF_COND(pow_cond, vg_less(g, v[0], vg_const_i32(g, ((powc *)u)->n, NULL), NULL))
CF_COUNTED_BODY(pow_body, vg_mul(g, v[1], ((powc *)u)->x, NULL))

static void test_while_pow_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t d = 3;
    powc pc = {vg_placeholder(g, VG_DOUBLE, &d, 1, "x"), 4};
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_ones_like(g, pc.x, "y0")}, o[2];
    CHECK_OK(vg_while_loop(g, pow_cond, pow_body, &pc, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    /* hand value: d(sum x^4)/dx = 4x^3 */
    vg_output dx;
    vg_output L = vg_reduce_sum(g, o[1], NULL, -1, false, "L");
    CHECK_OK(vg_gradients(g, &L, 1, &pc.x, 1, NULL, &dx, &st), &st);
    vg_tensor *xv = vec((double[]){0.5, -1.5, 2.0}, 3);
    vg_session *s = vg_session_new(g, NULL, &st);
    for (int rep = 0; rep < 3; rep++) { /* repeated runs reuse the stacks */
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run(s, NULL, &pc.x, &xv, 1, &dx, &t, 1, NULL, 0, NULL, &st), &st);
        if (t) {
            const double *a = vg_tensor_data(t);
            CHECK_NEAR(a[0], 4 * 0.125, 1e-12);
            CHECK_NEAR(a[1], 4 * -3.375, 1e-12);
            CHECK_NEAR(a[2], 4 * 8.0, 1e-12);
        }
        vg_tensor_free(t);
    }
    vg_session_free(s);
    CHECK_EQ_INT(vg_gradcheck(g, &pc.x, &xv, 1, o[1], 1e-6, 1e-6), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

/* the loop variable itself differentiated: y_{k+1} = sin(y_k) * x, 3 iterations */
CF_COUNTED_BODY(sin_body, vg_mul(g, vg_sin(g, v[1], NULL), ((powc *)u)->x, NULL))

static void test_while_loop_var_grad(void) {
    vg_graph *g = vg_graph_new();
    int64_t d = 2;
    vg_status st;
    vg_output y0 = vg_placeholder(g, VG_DOUBLE, &d, 1, "y0");
    powc pc = {vg_placeholder(g, VG_DOUBLE, &d, 1, "x"), 3};
    vg_output v[2] = {vg_const_i32(g, 0, "i"), y0}, o[2];
    CHECK_OK(vg_while_loop(g, pow_cond, sin_body, &pc, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_tensor *xv[2] = {vec((double[]){0.7, -1.1}, 2), vec((double[]){1.3, 0.4}, 2)};
    vg_output xs[2] = {y0, pc.x};
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 2, o[1], 1e-6, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xv[0], xv[1]}, 2, NULL, 0);
}

/* ---- nested loops: 3 outer iterations of (2 inner iterations of y *= x), then y += x */
CF_COND(lt_k, vg_less(g, v[0], vg_const_i32(g, (int32_t)(intptr_t)u, NULL), NULL))
typedef struct nest {
    vg_output x;
} nest;
static nest g_nest;
CF_COUNTED_BODY(inner_b, vg_mul(g, v[1], g_nest.x, NULL))
static vg_code outer_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output iv[2] = {vg_const_i32(g, 0, "j"), v[1]}, io[2];
    vg_code rc = vg_while_loop(g, lt_k, inner_b, (void *)(intptr_t)2, iv, 2, NULL, 10, vg_out(NULL, 0), "inner", io, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
    o[1] = vg_add(g, io[1], g_nest.x, NULL);
    return VG_OK;
}

static void test_nested_while_grad(void) {
    vg_graph *g = vg_graph_new();
    int64_t d = 2;
    vg_status st;
    g_nest.x = vg_placeholder(g, VG_DOUBLE, &d, 1, "x");
    vg_output y0 = vg_placeholder(g, VG_DOUBLE, &d, 1, "y0");
    vg_output v[2] = {vg_const_i32(g, 0, "i"), y0}, o[2];
    CHECK_OK(vg_while_loop(g, lt_k, outer_b, (void *)(intptr_t)3, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_tensor *xv[2] = {vec((double[]){0.9, -1.2}, 2), vec((double[]){0.5, 1.1}, 2)};
    vg_output xs[2] = {g_nest.x, y0};
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 2, o[1], 1e-6, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xv[0], xv[1]}, 2, NULL, 0);
}

/* a loop imported from a GraphDef has no while context: a clear error, not a silent
 * missing gradient */
static void test_imported_loop_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    powc pc = {vg_placeholder(g, VG_DOUBLE, NULL, 0, "x"), 3};
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_ones_like(g, pc.x, "y0")}, o[2];
    CHECK_OK(vg_while_loop(g, pow_cond, pow_body, &pc, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_graph *h = kt_reimported(g, NULL);
    vg_output y = vg_graph_output_by_name(h, vg_op_name(o[1].op), &st), x = vg_graph_output_by_name(h, "x", &st), dx;
    CHECK_STATUS(vg_gradients(h, &y, 1, &x, 1, NULL, &dx, &st), &st, VG_UNIMPLEMENTED, "vg_while_loop");
    vg_graph_free(h);
    vg_graph_free(g);
}

/* a trainable variable read inside the loop body, trained by SGD: w -= lr * d(w^3)/dw */
static void test_variable_in_loop_sgd(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable w = vg_variable_new(g, "w", vg_const_f32(g, 1.5f, NULL), VG_VAR_TRAINABLE);
    powc pc = {w.read, 3};
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_f32(g, 1.0f, "y0")}, o[2];
    CHECK_OK(vg_while_loop(g, pow_cond, pow_body, &pc, v, 2, NULL, 32, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    /* built under an outside control dependency (as update ops often are) */
    vg_op *noop = vg_no_op(g, "before");
    vg_graph_push_control_deps(g, &noop, 1);
    vg_op *train = vg_optimizer_minimize(opt, g, o[1], NULL, 0, vg_out(NULL, 0), NULL);
    vg_graph_pop_control_deps(g);
    CHECK(train != NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    double wv = 1.5;
    for (int step = 0; step < 3; step++) {
        CHECK_OK(vg_session_run_targets(s, &train, 1, &st), &st);
        wv -= 0.1 * 3 * wv * wv;
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, w.read, &t, &st), &st);
        if (t) CHECK_NEAR(*(float *)vg_tensor_data(t), wv, 1e-5);
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* a cond inside a while body: y = i < 1 ? y * y * w : sin(y) * w, 3 iterations */
static vg_output g_w;
CF_BRANCH1(sq_br, vg_mul(g, vg_mul(g, *(vg_output *)u, *(vg_output *)u, NULL), g_w, NULL))
CF_BRANCH1(sin_br, vg_mul(g, vg_sin(g, *(vg_output *)u, NULL), g_w, NULL))
static vg_code cond_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output y = v[1], c;
    vg_code rc = vg_cond(g, vg_less(g, v[0], vg_const_i32(g, 1, NULL), NULL), sq_br, sin_br, &y, 1, &c, NULL, &st);
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
    o[1] = c;
    return rc;
}

static void test_cond_in_while_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t d = 2;
    powc pc = {vg_placeholder(g, VG_DOUBLE, &d, 1, "x"), 3};
    g_w = vg_placeholder(g, VG_DOUBLE, &d, 1, "w");
    vg_output v[2] = {vg_const_i32(g, 0, "i"), pc.x}, o[2];
    CHECK_OK(vg_while_loop(g, pow_cond, cond_body, &pc, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_tensor *xv[2] = {NULL, NULL};
    double a[2] = {0.7, -1.2}, b[2] = {1.1, 0.6};
    for (int k = 0; k < 2; k++) {
        xv[k] = vg_tensor_new(VG_DOUBLE, &d, 1, &st);
        memcpy(vg_tensor_data(xv[k]), k ? b : a, sizeof a);
    }
    vg_output xs[2] = {pc.x, g_w};
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 2, o[1], 1e-6, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xv[0], xv[1]}, 2, NULL, 0);
}

/* the same model under MonitoredTrainingSession: StopAtStepHook ends it, the
 * checkpoint restores w and the global step in a new session */
static vg_graph *mts_model(vg_op **train, vg_variable *w) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output gs = vg_get_or_create_global_step(g);
    *w = vg_variable_new(g, "w", vg_const_f32(g, 0.5f, NULL), VG_VAR_TRAINABLE);
    static powc pc;
    pc = (powc){w->read, 3};
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_f32(g, 1.0f, "y0")}, o[2];
    vg_while_loop(g, pow_cond, pow_body, &pc, v, 2, NULL, 32, vg_out(NULL, 0), NULL, o, &st);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    *train = vg_optimizer_minimize(opt, g, o[1], NULL, 0, gs, NULL);
    vg_optimizer_free(opt);
    return g;
}

static void test_loop_under_mts(void) {
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "cflow_mts");
    double wv = 0.5;
    for (int round = 0; round < 2; round++) {
        vg_status st;
        vg_op *train = NULL;
        vg_variable w;
        vg_graph *g = mts_model(&train, &w);
        CHECK(train != NULL);
        vg_monitored_session *ms = mts_no_counter(g, dir, 4 * (round + 1), &st);
        vg_code rc = VG_OK;
        int steps = 0;
        while (ms && rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
            rc = mts_run1(ms, NULL, train, NULL, &st);
            steps++;
            wv -= 0.1 * 3 * wv * wv;
        }
        CHECK_EQ_INT(steps, 4);
        if (ms) {
            rc = vg_monitored_session_end(ms, rc, &st);
            CHECK_OK(rc, &st);
            vg_monitored_session_free(ms);
        }
        vg_graph_free(g);
    }
    /* a third session restores w after 8 steps */
    vg_status st;
    vg_op *train = NULL;
    vg_variable w;
    vg_graph *g = mts_model(&train, &w);
    vg_monitored_session *ms = mts_no_counter(g, dir, -1, &st);
    if (ms) {
        vg_tensor *t = NULL;
        CHECK_OK(mts_run1(ms, &w.read, NULL, &t, &st), &st);
        if (t) CHECK_NEAR(*(float *)vg_tensor_data(t), wv, 1e-4);
        vg_tensor_free(t);
        vg_monitored_session_end(ms, VG_OK, &st);
        vg_monitored_session_free(ms);
    }
    vg_graph_free(g);
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_loop_under_mts);
    RUN_TEST(test_cond_in_while_grad);
    RUN_TEST(test_variable_in_loop_sgd);
    RUN_TEST(test_imported_loop_grad);
    RUN_TEST(test_cond_grad);
    RUN_TEST(test_while_pow_grad);
    RUN_TEST(test_while_loop_var_grad);
    RUN_TEST(test_nested_while_grad);
    TEST_MAIN_END();
}
