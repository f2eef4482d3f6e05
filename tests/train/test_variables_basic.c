/* test_variables_basic.c - tf.Variable / tf.get_variable layout and collections,
 * initializers (values, TF's op names, glorot limits, determinism with a graph seed),
 * the global step, the init ops and report_uninitialized_variables. */
#include "test_util.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

static void test_variables__variable_new_layout(void) {
    vg_graph *g = vg_graph_new();
    float v0[2] = {3, 4};
    vg_output c = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, v0, "v/initial_value");
    vg_variable v = vg_variable_new(g, "v", c, VG_VAR_TRAINABLE);
    CHECK(v.var != NULL);
    if (!v.var) { vg_graph_free(g); return; }
    CHECK(strcmp(vg_op_name(v.var), "v") == 0);
    CHECK(has_op(g, "v", "VariableV2"));
    CHECK(has_op(g, "v/Assign", "Assign"));
    CHECK(has_op(g, "v/read", "Identity"));
    CHECK(v.initializer == vg_graph_op_by_name(g, "v/Assign"));
    CHECK(v.read.op == vg_graph_op_by_name(g, "v/read"));
    CHECK(v.ref.op == v.var && v.ref.index == 0);
    CHECK(vg_variable_initializer(v.var) == v.initializer);
    CHECK(vg_variable_snapshot(v.var).op == v.read.op);
    CHECK_EQ_INT(vg_output_dtype(v.read), VG_FLOAT);
    CHECK_EQ_INT(vg_output_shape(v.ref).dims[0], 2);
    CHECK(in_collection(g, VG_GLOBAL_VARIABLES, v.var));
    CHECK(in_collection(g, VG_TRAINABLE_VARIABLES, v.var));
    CHECK(!in_collection(g, VG_LOCAL_VARIABLES, v.var));
    /* the same name again is made unique, as tf.Variable does */
    vg_variable v2 = vg_variable_new(g, "v", vg_const_f32(g, 1, "c2"), 0);
    CHECK(v2.var && strcmp(vg_op_name(v2.var), "v_1") == 0);
    CHECK(has_op(g, "v_1/Assign", "Assign"));
    CHECK(!in_collection(g, VG_TRAINABLE_VARIABLES, v2.var));
    /* inside a name scope */
    vg_graph_push_scope(g, "layer");
    vg_variable v3 = vg_variable_new(g, "b", vg_const_f32(g, 1, "c3"), 0);
    vg_graph_pop_scope(g);
    CHECK(v3.var && strcmp(vg_op_name(v3.var), "layer/b") == 0);
    CHECK(has_op(g, "layer/b/read", "Identity"));
    vg_tensor *t = init_and_fetch(g, v.read);
    CHECK(t && ((float *)vg_tensor_data(t))[1] == 4.0f);
    vg_tensor_free(t);
    vg_graph_free(g);
}

static void test_variables__variable_new_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "p");
    vg_variable v = vg_variable_new(g, "v", p, 0);
    CHECK(v.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "initial_value must have a shape specified");
    vg_graph_free(g);
}

static void test_variables__get_variable_layout(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    vg_variable k = vg_get_variable(g, "dense/kernel", VG_FLOAT, (int64_t[]){4, 3}, 2, vg_init_glorot_uniform(0),
                                    VG_VAR_TRAINABLE);
    CHECK(k.var && strcmp(vg_op_name(k.var), "dense/kernel") == 0);
    CHECK(has_op(g, "dense/kernel", "VariableV2"));
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform/shape", "Const"));
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform/min", "Const"));
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform/max", "Const"));
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform/RandomUniform", "RandomUniform"));
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform/sub", "Sub"));
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform/mul", "Mul"));
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform", "Add"));
    CHECK(has_op(g, "dense/kernel/Assign", "Assign"));
    CHECK(has_op(g, "dense/kernel/read", "Identity"));
    vg_op *assign = vg_graph_op_by_name(g, "dense/kernel/Assign");
    CHECK(assign && vg_op_input(assign, 1).op == vg_graph_op_by_name(g, "dense/kernel/Initializer/random_uniform"));
    /* get_variable under a variable scope is prefixed by it; zeros for a bias */
    vg_variable_scope_push(g, "dense_1", NULL);
    vg_variable b = vg_get_variable(g, "bias", VG_FLOAT, (int64_t[]){3}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_variable_scope_pop(g);
    CHECK(b.var && strcmp(vg_op_name(b.var), "dense_1/bias") == 0);
    CHECK(has_op(g, "dense_1/bias/Initializer/zeros", "Const"));
    /* a clash is an error (no reuse) */
    vg_variable again = vg_get_variable(g, "dense/kernel", VG_FLOAT, (int64_t[]){4, 3}, 2, vg_init_zeros(), 0);
    CHECK(again.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable dense/kernel already exists");
    vg_graph_free(g);
}

static double max_abs(const vg_tensor *t) {
    double m = 0;
    const float *d = vg_tensor_data(t);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) m = fmax(m, fabs(d[i]));
    return m;
}

static void test_variables__glorot_limits(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 7);
    /* 2-D: fan_in 20, fan_out 30 -> limit sqrt(6/50) */
    vg_variable a = vg_get_variable(g, "a", VG_FLOAT, (int64_t[]){20, 30}, 2, vg_init_glorot_uniform(0), 0);
    /* conv kernel [3,3,4,8]: fan_in 36, fan_out 72 -> limit sqrt(6/108) */
    vg_variable c = vg_get_variable(g, "c", VG_FLOAT, (int64_t[]){3, 3, 4, 8}, 4, vg_init_glorot_uniform(0), 0);
    const vg_tensor *lim;
    vg_op *maxop = vg_graph_op_by_name(g, "a/Initializer/random_uniform/max");
    CHECK(maxop && vg_op_attr_tensor(maxop, "value", &lim));
    if (maxop && vg_op_attr_tensor(maxop, "value", &lim)) CHECK_NEAR(vg_tensor_scalar(lim), sqrt(6.0 / 50), 1e-6);
    maxop = vg_graph_op_by_name(g, "c/Initializer/random_uniform/max");
    if (maxop && vg_op_attr_tensor(maxop, "value", &lim)) CHECK_NEAR(vg_tensor_scalar(lim), sqrt(6.0 / 108), 1e-6);
    vg_op *minop = vg_graph_op_by_name(g, "c/Initializer/random_uniform/min");
    if (minop && vg_op_attr_tensor(minop, "value", &lim)) CHECK_NEAR(vg_tensor_scalar(lim), -sqrt(6.0 / 108), 1e-6);
    vg_status st;
    vg_session *s = initialized_session(g);
    vg_tensor *ta = NULL, *tc = NULL;
    CHECK_OK(vg_session_run1(s, a.read, &ta, &st), &st);
    CHECK_OK(vg_session_run1(s, c.read, &tc, &st), &st);
    if (ta) {
        double m = max_abs(ta), lima = sqrt(6.0 / 50);
        CHECK(m <= lima + 1e-6);
        CHECK(m > 0.9 * lima); /* 600 uniform samples reach close to the bound */
    }
    if (tc) {
        double m = max_abs(tc), limc = sqrt(6.0 / 108);
        CHECK(m <= limc + 1e-6);
        CHECK(m > 0.9 * limc);
    }
    vg_tensor_free(ta);
    vg_tensor_free(tc);
    free_session_graph(s, g);
}

/* Two graphs built the same way with the same graph seed give the same values; a
 * different seed gives different ones. */
static vg_tensor *seeded_value(int64_t graph_seed, vg_initializer init) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, graph_seed);
    vg_variable v = vg_get_variable(g, "w", VG_FLOAT, (int64_t[]){5, 7}, 2, init, 0);
    vg_tensor *t = init_and_fetch(g, v.read);
    vg_graph_free(g);
    return t;
}

static void test_variables__seed_determinism(void) {
    vg_initializer inits[4] = {vg_init_glorot_uniform(0), vg_init_random_normal(0, 1, 0),
                               vg_init_truncated_normal(0, 1, 0), vg_init_random_uniform(-1, 1, 3)};
    for (int k = 0; k < 4; k++) {
        vg_tensor *a = seeded_value(42, inits[k]), *b = seeded_value(42, inits[k]), *c = seeded_value(43, inits[k]);
        CHECK(a && b && c);
        if (a && b && c) {
            CHECK(memcmp(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_nbytes(a)) == 0);
            CHECK(memcmp(vg_tensor_data(a), vg_tensor_data(c), vg_tensor_nbytes(a)) != 0);
        }
        vg_tensor_free(a);
        vg_tensor_free(b);
        vg_tensor_free(c);
    }
}

static void test_variables__initializer_values(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 3);
    vg_variable z = vg_get_variable(g, "z", VG_DOUBLE, (int64_t[]){2, 2}, 2, vg_init_zeros(), 0);
    vg_variable o = vg_get_variable(g, "o", VG_FLOAT, (int64_t[]){3}, 1, vg_init_ones(), 0);
    vg_variable c = vg_get_variable(g, "c", VG_FLOAT, (int64_t[]){2}, 1, vg_init_constant(2.5), 0);
    vg_variable big = vg_get_variable(g, "big", VG_FLOAT, (int64_t[]){40, 30}, 2, vg_init_zeros(), 0);
    vg_variable bigo = vg_get_variable(g, "bigo", VG_FLOAT, (int64_t[]){1000}, 1, vg_init_ones(), 0);
    vg_variable n = vg_get_variable(g, "n", VG_FLOAT, (int64_t[]){100, 100}, 2, vg_init_random_normal(1.0, 2.0, 0), 0);
    vg_variable tn =
        vg_get_variable(g, "tn", VG_FLOAT, (int64_t[]){100, 100}, 2, vg_init_truncated_normal(0.0, 0.5, 0), 0);
    vg_variable u = vg_get_variable(g, "u", VG_FLOAT, (int64_t[]){100, 100}, 2, vg_init_random_uniform(2, 3, 0), 0);
    vg_variable i = vg_get_variable(g, "i", VG_INT32, (int64_t[]){2}, 1, vg_init_constant(7), 0);
    CHECK(has_op(g, "c/Initializer/Const", "Const"));
    CHECK(has_op(g, "o/Initializer/ones", "Const"));
    /* >= 1000 elements: Fill(shape_as_tensor, Const) as array_ops.zeros builds it */
    CHECK(has_op(g, "big/Initializer/zeros", "Fill"));
    CHECK(has_op(g, "big/Initializer/zeros/shape_as_tensor", "Const"));
    CHECK(has_op(g, "big/Initializer/zeros/Const", "Const"));
    CHECK(has_op(g, "bigo/Initializer/ones", "Fill"));
    CHECK(has_op(g, "n/Initializer/random_normal/RandomStandardNormal", "RandomStandardNormal"));
    CHECK(has_op(g, "n/Initializer/random_normal/mean", "Const"));
    CHECK(has_op(g, "n/Initializer/random_normal/stddev", "Const"));
    CHECK(has_op(g, "n/Initializer/random_normal", "Add"));
    CHECK(has_op(g, "tn/Initializer/truncated_normal/TruncatedNormal", "TruncatedNormal"));
    CHECK(has_op(g, "tn/Initializer/truncated_normal", "Add"));
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) { vg_graph_free(g); return; }
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_output fetches[9] = {z.read, o.read, c.read, big.read, bigo.read, n.read, tn.read, u.read, i.read};
    vg_tensor *t[9] = {0};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fetches, t, 9, NULL, 0, NULL, &st), &st);
    if (t[0]) {
        CHECK_EQ_INT(vg_tensor_dtype(t[0]), VG_DOUBLE);
        for (int k = 0; k < 4; k++) CHECK(((double *)vg_tensor_data(t[0]))[k] == 0.0);
    }
    if (t[1]) for (int k = 0; k < 3; k++) CHECK(((float *)vg_tensor_data(t[1]))[k] == 1.0f);
    if (t[2]) for (int k = 0; k < 2; k++) CHECK(((float *)vg_tensor_data(t[2]))[k] == 2.5f);
    if (t[3]) {
        CHECK_EQ_INT(vg_tensor_num_elements(t[3]), 1200);
        CHECK(max_abs(t[3]) == 0.0);
    }
    if (t[4]) CHECK(((float *)vg_tensor_data(t[4]))[999] == 1.0f);
    if (t[5]) {
        const float *d = vg_tensor_data(t[5]);
        double m = 0, v = 0;
        for (int k = 0; k < 10000; k++) m += d[k];
        m /= 10000;
        for (int k = 0; k < 10000; k++) v += (d[k] - m) * (d[k] - m);
        v /= 10000;
        CHECK_NEAR(m, 1.0, 0.1);
        CHECK_NEAR(sqrt(v), 2.0, 0.05);
    }
    if (t[6]) CHECK(max_abs(t[6]) <= 1.0 + 1e-6); /* within 2 stddev */
    if (t[7]) {
        const float *d = vg_tensor_data(t[7]);
        bool ok = true;
        for (int k = 0; k < 10000; k++) ok &= d[k] >= 2.0f && d[k] < 3.0f;
        CHECK(ok);
    }
    if (t[8]) CHECK(((int32_t *)vg_tensor_data(t[8]))[1] == 7);
    for (int k = 0; k < 9; k++) vg_tensor_free(t[k]);
    free_session_graph(s, g);
}

static void test_variables__global_step(void) {
    vg_graph *g = vg_graph_new();
    CHECK(vg_get_global_step(g).op == NULL);
    vg_output gs = vg_get_or_create_global_step(g);
    CHECK(gs.op && strcmp(vg_op_name(gs.op), "global_step") == 0);
    CHECK_EQ_INT(vg_output_dtype(gs), VG_INT64);
    CHECK_EQ_INT(vg_output_shape(gs).ndims, 0);
    CHECK(has_op(g, "global_step/Initializer/zeros", "Const"));
    CHECK(has_op(g, "global_step/Assign", "Assign"));
    CHECK(has_op(g, "global_step/read", "Identity"));
    CHECK(in_collection(g, VG_GLOBAL_VARIABLES, gs.op));
    CHECK(in_collection(g, VG_GLOBAL_STEP, gs.op));
    CHECK(!in_collection(g, VG_TRAINABLE_VARIABLES, gs.op));
    CHECK(vg_get_or_create_global_step(g).op == gs.op);
    CHECK(vg_get_global_step(g).op == gs.op);
    /* created at the root even inside a scope */
    vg_graph *g2 = vg_graph_new();
    vg_graph_push_scope(g2, "train");
    vg_output gs2 = vg_get_or_create_global_step(g2);
    vg_graph_pop_scope(g2);
    CHECK(gs2.op && strcmp(vg_op_name(gs2.op), "global_step") == 0);
    vg_graph_free(g2);
    vg_output inc = vg_assign_add(g, gs, vg_const_i64(g, 1, "one"), "inc");
    vg_status st;
    vg_session *s = initialized_session(g);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, vg_variable_snapshot(gs.op), &t, &st), &st);
    CHECK(t && *(int64_t *)vg_tensor_data(t) == 0);
    vg_tensor_free(t);
    t = NULL;
    CHECK_OK(vg_session_run1(s, inc, &t, &st), &st);
    CHECK(t && *(int64_t *)vg_tensor_data(t) == 1);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

static void test_variables__init_ops(void) {
    vg_graph *g = vg_graph_new();
    vg_variable a = vg_get_variable(g, "a", VG_FLOAT, (int64_t[]){2}, 1, vg_init_ones(), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "b", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), 0);
    vg_variable l = vg_get_variable(g, "l", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_LOCAL);
    CHECK(in_collection(g, VG_LOCAL_VARIABLES, l.var));
    CHECK(!in_collection(g, VG_GLOBAL_VARIABLES, l.var));
    vg_op *init = vg_global_variables_initializer(g);
    vg_op *linit = vg_local_variables_initializer(g);
    CHECK(init && strcmp(vg_op_name(init), "init") == 0 && strcmp(vg_op_type(init), "NoOp") == 0);
    CHECK(linit && strcmp(vg_op_name(linit), "init_1") == 0);
    CHECK_EQ_INT(vg_op_num_control_inputs(init), 2);
    CHECK_EQ_INT(vg_op_num_control_inputs(linit), 1);
    if (init && vg_op_num_control_inputs(init) == 2) {
        CHECK(vg_op_control_input(init, 0) == a.initializer);
        CHECK(vg_op_control_input(init, 1) == b.initializer);
    }
    vg_op *some = vg_variables_initializer(g, &b.ref, 1, "init_b");
    CHECK(some && strcmp(vg_op_name(some), "init_b") == 0 && vg_op_num_control_inputs(some) == 1);
    vg_op *none = vg_variables_initializer(g, NULL, 0, NULL);
    CHECK(none && strcmp(vg_op_type(none), "NoOp") == 0 && vg_op_num_control_inputs(none) == 0);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &linit, 1, &st), &st);
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, a.read, &t, &st), VG_FAILED_PRECONDITION);
    CHECK_OK(vg_session_run1(s, l.read, &t, &st), &st);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

/* Variables made under control_dependencies do not inherit them (init_scope). */
static void test_variables__no_control_deps(void) {
    vg_graph *g = vg_graph_new();
    vg_op *dep = vg_no_op(g, "dep");
    vg_graph_push_control_deps(g, &dep, 1);
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), 0);
    vg_output after = vg_identity(g, v.read, "after");
    vg_graph_pop_control_deps(g);
    CHECK(v.var != NULL);
    CHECK_EQ_INT(vg_op_num_control_inputs(v.initializer), 0);
    CHECK_EQ_INT(vg_op_num_control_inputs(v.var), 0);
    CHECK_EQ_INT(vg_op_num_control_inputs(vg_graph_op_by_name(g, "v/Initializer/zeros")), 0);
    CHECK_EQ_INT(vg_op_num_control_inputs(after.op), 1); /* the caller's scope is back */
    vg_graph_free(g);
}

static void test_variables__report_uninitialized(void) {
    vg_graph *g = vg_graph_new();
    vg_variable a = vg_get_variable(g, "a", VG_FLOAT, (int64_t[]){2}, 1, vg_init_ones(), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "scope/b", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), 0);
    vg_variable l = vg_get_variable(g, "l", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_LOCAL);
    vg_output rep = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(has_op(g, "report_uninitialized_variables/IsVariableInitialized", "IsVariableInitialized"));
    CHECK(has_op(g, "report_uninitialized_variables/IsVariableInitialized_2", "IsVariableInitialized"));
    CHECK(has_op(g, "report_uninitialized_variables/stack", "Pack"));
    CHECK(has_op(g, "report_uninitialized_variables/LogicalNot", "LogicalNot"));
    CHECK(has_op(g, "report_uninitialized_variables/Const", "Const"));
    CHECK_EQ_INT(vg_output_dtype(rep), VG_STRING);
    vg_output only_b = vg_report_uninitialized_variables(g, &b.ref, 1, "rep_b");
    vg_output empty = vg_report_uninitialized_variables(g, a.ref.op ? &a.ref : NULL, 0, "rep_none");
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) { vg_graph_free(g); return; }
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, rep, &t, &st), &st);
    if (t) {
        CHECK_EQ_INT(vg_tensor_num_elements(t), 3);
        size_t len;
        const char *s0 = vg_tensor_string(t, 0, &len);
        CHECK(s0 && len == 1 && memcmp(s0, "a", 1) == 0);
        const char *s1 = vg_tensor_string(t, 1, &len);
        CHECK(s1 && len == 7 && memcmp(s1, "scope/b", 7) == 0);
        const char *s2 = vg_tensor_string(t, 2, &len);
        CHECK(s2 && len == 1 && memcmp(s2, "l", 1) == 0);
    }
    vg_tensor_free(t);
    CHECK_OK(vg_session_run_targets(s, &a.initializer, 1, &st), &st);
    vg_op *inits[2] = {b.initializer, l.initializer};
    CHECK_EQ_INT(fetch_num_elements(s, rep), 2);
    CHECK_EQ_INT(fetch_num_elements(s, only_b), 1);
    CHECK_OK(vg_session_run_targets(s, inits, 2, &st), &st);
    CHECK_EQ_INT(fetch_num_elements(s, rep), 0);
    CHECK_EQ_INT(fetch_num_elements(s, empty), 0);
    free_session_graph(s, g);
}

static void test_variables__bad_initializer(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_get_variable(g, "v", VG_INT32, (int64_t[]){2}, 1, vg_init_random_normal(0, 1, 0), 0);
    CHECK(v.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    v = vg_get_variable(g, "v", VG_FLOAT, (int64_t[]){-1, 2}, 2, vg_init_zeros(), 0);
    CHECK(v.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "fully defined");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_variables__variable_new_layout);
    RUN_TEST(test_variables__variable_new_errors);
    RUN_TEST(test_variables__get_variable_layout);
    RUN_TEST(test_variables__glorot_limits);
    RUN_TEST(test_variables__seed_determinism);
    RUN_TEST(test_variables__initializer_values);
    RUN_TEST(test_variables__global_step);
    RUN_TEST(test_variables__init_ops);
    RUN_TEST(test_variables__no_control_deps);
    RUN_TEST(test_variables__report_uninitialized);
    RUN_TEST(test_variables__bad_initializer);
    TEST_MAIN_END();
}
