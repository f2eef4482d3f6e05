/* test_ema.c - tf.train.ExponentialMovingAverage for variables (vigil/train_lib.h).
 * Mirrors TF 1.15's moving_averages_test.py ExponentialMovingAverageTest:
 * _CheckDecay (shadow names "v0/ExponentialMovingAverage", moving_average_variables,
 * shadows not trainable, initial values, two updates by hand), testAverageVariablesNumUpdates
 * (decay = min(0.25, (1 + n) / (10 + n))), testAverageVariablesNames /
 * variables_to_restore ({v0/foo: v0, v1/foo: v1, v2: v2}), and the dtype error. */
#include "op_test_util.h"

static vg_variable var_of(vg_graph *g, const char *name, double v, unsigned flags) {
    int64_t d[1] = {4};
    double vals[4] = {v, v, v, v};
    return vg_variable_new(g, name, cst(g, VG_FLOAT, d, 1, vals), flags);
}

static bool in_collection(vg_graph *g, const char *key, vg_output v) {
    int n = 0;
    const vg_output *c = vg_graph_collection(g, key, &n);
    for (int i = 0; i < n; i++)
        if (c[i].op == v.op) return true;
    return false;
}

static double val(vg_session *s, vg_output x) {
    vg_status st;
    vg_tensor *t = NULL;
    double r = NAN;
    if (vg_session_run1(s, x, &t, &st) == VG_OK) {
        r = get(t, 0);
        for (int64_t i = 1; i < vg_tensor_num_elements(t); i++) CHECK(get(t, i) == r);
        vg_tensor_free(t);
    } else {
        fprintf(stderr, "run: %s\n", st.msg);
        vg_test_failures++;
    }
    return r;
}

static void run_op(vg_session *s, vg_op *op) {
    vg_status st;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &op, 1, NULL, &st), &st);
}

static void check_decay(double decay, bool with_num_updates, double actual) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = var_of(g, "v0", 10, VG_VAR_TRAINABLE), v1 = var_of(g, "v1", 30, VG_VAR_TRAINABLE);
    vg_variable nu = {0};
    if (with_num_updates) nu = vg_variable_new(g, "num_updates", vg_const_i64(g, 1, NULL), 0);
    vg_ema *ema = vg_ema_new(g, decay, with_num_updates ? nu.ref : vg_out(NULL, 0), false, NULL);
    vg_output vars[2] = {v0.ref, v1.ref};
    vg_op *update = vg_ema_apply(ema, vars, 2);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(update && strcmp(vg_op_name(update), "ExponentialMovingAverage") == 0);
    CHECK(vg_graph_op_by_name(g, "ExponentialMovingAverage/AssignMovingAvg") != NULL);
    CHECK(vg_graph_op_by_name(g, "ExponentialMovingAverage/AssignMovingAvg_1") != NULL);
    vg_output a0 = vg_ema_average(ema, v0.ref), a1 = vg_ema_average(ema, v1.ref);
    CHECK(a0.op && strcmp(vg_op_name(a0.op), "v0/ExponentialMovingAverage") == 0);
    CHECK(a1.op && strcmp(vg_op_name(a1.op), "v1/ExponentialMovingAverage") == 0);
    CHECK(vg_ema_average(ema, vg_out(NULL, 0)).op == NULL);
    CHECK(in_collection(g, VG_MOVING_AVERAGE_VARIABLES, v0.ref) && in_collection(g, VG_MOVING_AVERAGE_VARIABLES, v1.ref));
    CHECK(!in_collection(g, VG_TRAINABLE_VARIABLES, a0));
    CHECK(in_collection(g, VG_GLOBAL_VARIABLES, a0));
    /* v0 := 20 after the first read of the averages */
    int64_t d[1] = {4};
    double twenty[4] = {20, 20, 20, 20};
    vg_output set20 = vg_assign(g, v0.ref, cst(g, VG_FLOAT, d, 1, twenty), true, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    run_op(s, init);
    CHECK_NEAR(val(s, a0), 10, 1e-6);
    CHECK_NEAR(val(s, a1), 30, 1e-6);
    run_op(s, set20.op);
    run_op(s, update);
    double e0 = 10 * actual + 20 * (1 - actual);
    CHECK_NEAR(val(s, a0), e0, 1e-6);
    CHECK_NEAR(val(s, a1), 30, 1e-6);
    run_op(s, update);
    CHECK_NEAR(val(s, a0), e0 * actual + 20 * (1 - actual), 1e-6);
    vg_session_free(s);
    vg_ema_free(ema);
    vg_graph_free(g);
}

static void test_ema_decay(void) {
    check_decay(0.25, false, 0.25);
    check_decay(0.25, true, 2.0 / 11.0); /* testAverageVariablesNumUpdates */
    check_decay(0.1, true, 0.1);         /* min picks the constant decay */
}

static void test_ema_names_and_restore(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = var_of(g, "v0", 10, VG_VAR_TRAINABLE), v1 = var_of(g, "v1", 30, VG_VAR_TRAINABLE);
    vg_variable v2 = var_of(g, "v2", 20, 0);
    vg_ema *ema = vg_ema_new(g, 0.25, vg_out(NULL, 0), false, "foo");
    char buf[256];
    CHECK(strcmp(vg_ema_average_name(ema, v0.ref, buf, sizeof buf), "v0/foo") == 0);
    vg_op *up = vg_ema_apply(ema, NULL, 0); /* trainable_variables: v0, v1 */
    CHECK(up && strcmp(vg_op_name(up), "foo") == 0);
    CHECK(vg_ema_average(ema, v2.ref).op == NULL);
    vg_name_map m;
    vg_status st;
    CHECK_OK(vg_ema_variables_to_restore(ema, NULL, 0, &m, &st), &st);
    CHECK_EQ_INT(m.n, 3);
    const char *want[3] = {"v0/foo", "v1/foo", "v2"};
    vg_op *wv[3] = {v0.var, v1.var, v2.var};
    for (int k = 0; k < 3; k++) {
        int hit = -1;
        for (int i = 0; i < m.n; i++)
            if (strcmp(m.names[i], want[k]) == 0) hit = i;
        CHECK(hit >= 0);
        if (hit >= 0) CHECK(m.vars[hit].op == wv[k]);
    }
    vg_name_map_free(&m);
    /* an explicit list: only v1 averaged, every other global variable by its own name */
    vg_output only = v1.ref;
    CHECK_OK(vg_ema_variables_to_restore(ema, &only, 1, &m, &st), &st);
    /* v1/foo -> v1, then v0, v2, v0/foo by their own names; the shadow v1/foo is already a key */
    CHECK_EQ_INT(m.n, 4);
    int found = 0;
    for (int i = 0; i < m.n; i++) {
        if (strcmp(m.names[i], "v1/foo") == 0) found += m.vars[i].op == v1.var;
        if (strcmp(m.names[i], "v0") == 0) found += m.vars[i].op == v0.var;
        if (strcmp(m.names[i], "v0/foo") == 0) found += m.vars[i].op == vg_ema_average(ema, v0.ref).op;
    }
    CHECK_EQ_INT(found, 3);
    vg_name_map_free(&m);
    vg_ema_free(ema);
    vg_graph_free(g);
}

static void test_ema_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_variable iv = vg_variable_new(g, "steps", vg_const_i32(g, 0, NULL), 0);
    vg_ema *ema = vg_ema_new(g, 0.9, vg_out(NULL, 0), false, NULL);
    vg_status st;
    CHECK(vg_ema_apply(ema, &iv.ref, 1) == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "The variables must be half, float, or double: steps");
    vg_ema_free(ema);
    vg_graph_free(g);
    g = vg_graph_new();
    ema = vg_ema_new(g, 0.9, vg_out(NULL, 0), false, NULL);
    int64_t unk[1] = {-1};
    vg_output t = vg_placeholder(g, VG_FLOAT, unk, 1, "p");
    CHECK(vg_ema_apply(ema, &t, 1) == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "must be fully defined");
    vg_ema_free(ema);
    vg_graph_free(g);
}

/* _CheckDecay's tensor2 = v0 + v1: a zeros shadow "add/ExponentialMovingAverage", and with
 * zero_debias the update divided by 1 - decay^steps (testAverageVariablesNoNumUpdates_
 * Vector / ..._DebiasedVector). */
static void check_tensor(bool zero_debias) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = var_of(g, "v0", 10, VG_VAR_TRAINABLE), v1 = var_of(g, "v1", 30, VG_VAR_TRAINABLE);
    vg_output t2 = vg_add(g, v0.read, v1.read, "add");
    vg_ema *ema = vg_ema_new(g, 0.25, vg_out(NULL, 0), zero_debias, NULL);
    vg_output vars[3] = {v0.ref, v1.ref, t2};
    vg_op *update = vg_ema_apply(ema, vars, 3);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_output a2 = vg_ema_average(ema, t2);
    CHECK(a2.op && strcmp(vg_op_name(a2.op), "add/ExponentialMovingAverage") == 0);
    CHECK(!in_collection(g, VG_MOVING_AVERAGE_VARIABLES, t2));
    if (zero_debias) {
        CHECK(vg_graph_op_by_name(g, "add/ExponentialMovingAverage/biased") != NULL);
        CHECK(vg_graph_op_by_name(g, "add/ExponentialMovingAverage/local_step") != NULL);
    }
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    run_op(s, init);
    CHECK_NEAR(val(s, a2), 0.0, 0);
    double dk = 0.25;
    run_op(s, update);
    double e1 = 0.0 * dk + 40.0 * (1 - dk);
    CHECK_NEAR(val(s, a2), zero_debias ? e1 / (1 - dk) : e1, 1e-6);
    run_op(s, update);
    double e2 = e1 * dk + 40.0 * (1 - dk);
    CHECK_NEAR(val(s, a2), zero_debias ? e2 / (1 - dk * dk) : e2, 1e-6);
    CHECK_NEAR(val(s, vg_ema_average(ema, v0.ref)), 10.0, 1e-6);
    vg_session_free(s);
    vg_ema_free(ema);
    vg_graph_free(g);
}

static void test_ema_tensors(void) {
    check_tensor(false);
    check_tensor(true);
}

int main(void) {
    RUN_TEST(test_ema_tensors);
    RUN_TEST(test_ema_decay);
    RUN_TEST(test_ema_names_and_restore);
    RUN_TEST(test_ema_errors);
    TEST_MAIN_END();
}
