/* test_ema.c - tf.train.ExponentialMovingAverage for variables (vigil/train_lib.h).
 * Mirrors TF 1.15's moving_averages_test.py ExponentialMovingAverageTest:
 * _CheckDecay (shadow names "v0/ExponentialMovingAverage", moving_average_variables,
 * shadows not trainable, initial values, two updates by hand), testAverageVariablesNumUpdates
 * (decay = min(0.25, (1 + n) / (10 + n))), testAverageVariablesNames /
 * variables_to_restore ({v0/foo: v0, v1/foo: v1, v2: v2}), and the dtype error. */
#include "op_test_util.h"
#include "train_fixture.h"
#include "status_fixture.h"

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
    vg_session *s = initialized_session(g);
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
    CHECK(vg_ema_apply(ema, &iv.ref, 1) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "The variables must be half, float, or double: steps");
    vg_ema_free(ema);
    vg_graph_free(g);
    g = vg_graph_new();
    ema = vg_ema_new(g, 0.9, vg_out(NULL, 0), false, NULL);
    int64_t unk[1] = {-1};
    vg_output t = vg_placeholder(g, VG_FLOAT, unk, 1, "p");
    CHECK(vg_ema_apply(ema, &t, 1) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "must be fully defined");
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
    vg_session *s = initialized_session(g);
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

/* The shadows are checkpointed under TF's names (what cifar10_eval.py restores through
 * variables_to_restore): "v0/ExponentialMovingAverage" holds the average. */
static void test_ema_checkpoint_names(void) {
    char dir[256], prefix[300];
    if (!tu_mkdtemp(dir, sizeof dir, "ema")[0]) { vg_test_failures++; return; }
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
    vg_graph *g = vg_graph_new();
    vg_variable v0 = var_of(g, "v0", 10, VG_VAR_TRAINABLE);
    vg_ema *ema = vg_ema_new(g, 0.5, vg_out(NULL, 0), false, NULL);
    vg_op *update = vg_ema_apply(ema, &v0.ref, 1);
    int64_t d[1] = {4};
    double twenty[4] = {20, 20, 20, 20};
    vg_output set20 = vg_assign(g, v0.ref, cst(g, VG_FLOAT, d, 1, twenty), true, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver_options so = {0};
    so.no_meta_graph = true;
    vg_status st;
    vg_saver *saver = vg_saver_new(g, &so, &st);
    CHECK(saver != NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    run_op(s, init);
    run_op(s, set20.op);
    run_op(s, update); /* 10 * 0.5 + 20 * 0.5 = 15 */
    char path[512];
    CHECK_OK(vg_saver_save(saver, s, prefix, -1, path, sizeof path, &st), &st);
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, &st);
    CHECK(r != NULL);
    if (r) {
        vg_tensor *a = vg_checkpoint_reader_read(r, "v0/ExponentialMovingAverage", &st);
        vg_tensor *v = vg_checkpoint_reader_read(r, "v0", &st);
        CHECK(a && v);
        if (a) CHECK_NEAR(get(a, 3), 15.0, 1e-6);
        if (v) CHECK_NEAR(get(v, 0), 20.0, 1e-6);
        vg_tensor_free(a), vg_tensor_free(v);
        vg_checkpoint_reader_free(r);
    }
    vg_session_free(s);
    vg_saver_free(saver);
    vg_ema_free(ema);
    vg_graph_free(g);
    tu_rmrf(dir);
}


/* Keys of a name map, checked as a set against want[0..n). */
static void check_keys(const vg_name_map *m, const char *const *want, int n) {
    CHECK_EQ_INT(m->n, n);
    for (int k = 0; k < n; k++) {
        int hits = 0;
        for (int i = 0; i < m->n; i++) hits += strcmp(m->names[i], want[k]) == 0;
        if (hits != 1) fprintf(stderr, "key %s: %d hits\n", want[k], hits);
        CHECK_EQ_INT(hits, 1);
    }
}

static vg_variable scalar_var(vg_graph *g, const char *name, double v, unsigned flags) {
    return vg_variable_new(g, name, vg_const_f32(g, (float)v, NULL), flags);
}

/* ExponentialMovingAverage(0.25, zero_debias, name="foo") on g; the average names of
 * x[0..3) must be want[0..3). */
static vg_ema *ema_foo_checking_names(vg_graph *g, bool zero_debias, const vg_output x[3], const char *const want[3]) {
    vg_ema *ema = vg_ema_new(g, 0.25, vg_out(NULL, 0), zero_debias, "foo");
    for (int i = 0; i < 3; i++) {
        char b[256];
        const char *got = vg_ema_average_name(ema, x[i], b, sizeof b);
        if (strcmp(got, want[i]) != 0) fprintf(stderr, "average name %s, expected %s\n", got, want[i]);
        CHECK(strcmp(got, want[i]) == 0);
    }
    return ema;
}

/* variables_to_restore() of the names tests: the shadows of v0, v1 and add, the
 * unaveraged v2 (want[3], mapped to the variable v2) and, with zero_debias, add's
 * biased and local_step variables (want[4], want[5]). */
static void check_restore_map(vg_ema *ema, const char *const want[6], bool zero_debias, vg_op *v2) {
    vg_status st;
    vg_name_map m;
    CHECK_OK(vg_ema_variables_to_restore(ema, NULL, 0, &m, &st), &st);
    check_keys(&m, want, zero_debias ? 6 : 4);
    for (int i = 0; i < m.n; i++)
        if (!strcmp(m.names[i], want[3])) CHECK(m.vars[i].op == v2);
    vg_name_map_free(&m);
}

/* moving_averages_test.py averageVariablesNamesHelper (testAverageVariablesNames,
 * testAverageVariablesNamesNoDebias): ema "foo" over v0, v1 and tensor2 = v0 + v1. */
static void check_names(bool zero_debias) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = scalar_var(g, "v0", 10, VG_VAR_TRAINABLE), v1 = scalar_var(g, "v1", 30, VG_VAR_TRAINABLE);
    vg_variable v2 = scalar_var(g, "v2", 20, 0);
    vg_output t2 = vg_add(g, v0.read, v1.read, "add");
    vg_output vars[3] = {v0.ref, v1.ref, t2};
    vg_ema *ema = ema_foo_checking_names(g, zero_debias, vars, (const char *const[3]){"v0/foo", "v1/foo", "add/foo"});
    char b0[256], b1[256], b2[256];
    CHECK(vg_ema_apply(ema, vars, 3) != NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    static const char *const want[6] = {"v0/foo", "v1/foo", "add/foo", "v2", "add/foo/biased", "add/foo/local_step"};
    check_restore_map(ema, want, zero_debias, v2.var);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, v0.ref).op), vg_ema_average_name(ema, v0.ref, b0, sizeof b0)) == 0);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, v1.ref).op), vg_ema_average_name(ema, v1.ref, b1, sizeof b1)) == 0);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, t2).op), vg_ema_average_name(ema, t2, b2, sizeof b2)) == 0);
    CHECK(strcmp(b2, "add/foo") == 0);
    vg_ema_free(ema);
    vg_graph_free(g);
}

static void test_ema_average_variables_names(void) {
    check_names(true);  /* testAverageVariablesNames */
    check_names(false); /* testAverageVariablesNamesNoDebias */
}

/* averageVariablesNamesRespectScopeHelper (testAverageVariablesNamesRespectScope,
 * ...NoDebias, TF #2740): variables made in variable scope "scope1", the EMA applied in
 * "scope2": shadows "scope2/scope1/v0/foo", debias variables under the doubled scope. */
static void check_names_scope(bool zero_debias) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "scope1", NULL);
    vg_variable v0 = scalar_var(g, "v0", 10, VG_VAR_TRAINABLE), v1 = scalar_var(g, "v1", 30, VG_VAR_TRAINABLE);
    vg_variable v2 = scalar_var(g, "v2", 20, 0);
    vg_output t2 = vg_add(g, v0.read, v1.read, "add");
    vg_variable_scope_pop(g);
    CHECK(strcmp(vg_op_name(v0.var), "scope1/v0") == 0 && strcmp(vg_op_name(t2.op), "scope1/add") == 0);
    vg_variable_scope_push(g, "scope2", NULL);
    vg_output vars[3] = {v0.ref, v1.ref, t2};
    static const char *const avg[3] = {"scope2/scope1/v0/foo", "scope2/scope1/v1/foo", "scope2/scope1/add/foo"};
    vg_ema *ema = ema_foo_checking_names(g, zero_debias, vars, avg);
    char b2[256];
    vg_op *up = vg_ema_apply(ema, vars, 3);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(up && strcmp(vg_op_name(up), "scope2/foo") == 0);
    static const char *const want[6] = {"scope2/scope1/v0/foo", "scope2/scope1/v1/foo", "scope2/scope1/add/foo",
                                        "scope1/v2", "scope2/scope2/scope1/add/foo/biased",
                                        "scope2/scope2/scope1/add/foo/local_step"};
    check_restore_map(ema, want, zero_debias, v2.var);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, v0.ref).op), "scope2/scope1/v0/foo") == 0);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, v1.ref).op), "scope2/scope1/v1/foo") == 0);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, t2).op), "scope2/scope1/add/foo") == 0);
    CHECK(strcmp(vg_ema_average_name(ema, t2, b2, sizeof b2), "scope2/scope1/add/foo") == 0);
    vg_variable_scope_pop(g);
    /* the averages still work under the scoped names */
    vg_session *s = initialized_session(g);
    run_op(s, up);
    CHECK_NEAR(val(s, vg_ema_average(ema, v0.ref)), 10.0, 1e-6);
    CHECK_NEAR(val(s, vg_ema_average(ema, t2)), zero_debias ? 40.0 : 40.0 * 0.75, 1e-6);
    vg_session_free(s);
    vg_ema_free(ema);
    vg_graph_free(g);
}

static void test_ema_names_respect_scope(void) {
    check_names_scope(true);  /* testAverageVariablesNamesRespectScope */
    check_names_scope(false); /* testAverageVariablesNamesRespectScopeNoDebias */
}

/* testSubsetAverageVariablesNames: variables_to_restore([v0, tensor2]) before apply. */
static void test_ema_subset_names(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = scalar_var(g, "v0", 10, VG_VAR_TRAINABLE), v1 = scalar_var(g, "v1", 30, VG_VAR_TRAINABLE);
    vg_variable v2 = scalar_var(g, "v2", 20, 0);
    vg_output t2 = vg_add(g, v0.read, v1.read, "add");
    vg_ema *ema = vg_ema_new(g, 0.25, vg_out(NULL, 0), false, "foo_avg");
    char b[256];
    CHECK(strcmp(vg_ema_average_name(ema, v0.ref, b, sizeof b), "v0/foo_avg") == 0);
    CHECK(strcmp(vg_ema_average_name(ema, v1.ref, b, sizeof b), "v1/foo_avg") == 0);
    CHECK(strcmp(vg_ema_average_name(ema, t2, b, sizeof b), "add/foo_avg") == 0);
    vg_output subset[2] = {v0.ref, t2};
    vg_name_map m;
    vg_status st;
    CHECK_OK(vg_ema_variables_to_restore(ema, subset, 2, &m, &st), &st);
    const char *want[4] = {"v0/foo_avg", "add/foo_avg", "v1", "v2"};
    check_keys(&m, want, 4);
    for (int i = 0; i < m.n; i++)
        if (!strcmp(m.names[i], "v2")) CHECK(m.vars[i].op == v2.var);
    vg_name_map_free(&m);
    vg_output vars[3] = {v0.ref, v1.ref, t2};
    CHECK(vg_ema_apply(ema, vars, 3) != NULL);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, v0.ref).op), "v0/foo_avg") == 0);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, v1.ref).op), "v1/foo_avg") == 0);
    CHECK(strcmp(vg_op_name(vg_ema_average(ema, t2).op), "add/foo_avg") == 0);
    vg_ema_free(ema);
    vg_graph_free(g);
}

/* testAverageVariablesWithControlDeps: apply() under control_dependencies([add_to_v0]):
 * the shadow's initializer and read have no control inputs (it can be initialised before
 * v0), running the update also runs add_to_v0, 10 -> 20 averages to 17.5. */
static void test_ema_with_control_deps(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = vg_variable_new(g, "v0", vg_const_i32(g, 0, NULL), 0);
    vg_output add_to_v0 = vg_assign_add(g, v0.ref, vg_const_i32(g, 1, NULL), NULL);
    int64_t d1[1] = {1};
    vg_variable v1 = vg_variable_new(g, "v1", cst(g, VG_FLOAT, d1, 1, (double[]){10}), VG_VAR_TRAINABLE);
    vg_output assign_to_v1 = vg_assign(g, v1.ref, cst(g, VG_FLOAT, d1, 1, (double[]){20}), true, NULL);
    vg_ema *ema = vg_ema_new(g, 0.25, vg_out(NULL, 0), false, NULL);
    vg_graph_push_control_deps(g, &add_to_v0.op, 1);
    vg_op *ema_op = vg_ema_apply(ema, &v1.ref, 1);
    vg_graph_pop_control_deps(g);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_output avg = vg_ema_average(ema, v1.ref);
    vg_op *avg_init = vg_variable_initializer(avg.op);
    CHECK(avg_init && vg_op_num_control_inputs(avg_init) == 0);
    CHECK_EQ_INT(vg_op_num_control_inputs(vg_variable_snapshot(avg.op).op), 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    run_op(s, avg_init); /* before v0's initializer */
    run_op(s, vg_variable_initializer(v0.var));
    CHECK_NEAR(val(s, avg), 10.0, 0);
    run_op(s, assign_to_v1.op);
    run_op(s, ema_op);
    CHECK_NEAR(val(s, v0.ref), 1.0, 0);
    CHECK_NEAR(val(s, avg), 17.5, 1e-6);
    vg_session_free(s);
    vg_ema_free(ema);
    vg_graph_free(g);
}

/* testBasicEager in graph mode: apply() twice over the same variables reuses the shadows
 * (a second group "ExponentialMovingAverage_1"); 1 -> 2 and 2 -> 4 average to 1.75, 3.5. */
static void test_ema_apply_twice(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = scalar_var(g, "Variable", 1, VG_VAR_TRAINABLE), v1 = scalar_var(g, "Variable", 2, VG_VAR_TRAINABLE);
    vg_ema *ema = vg_ema_new(g, 0.25, vg_out(NULL, 0), false, NULL);
    vg_output vars[2] = {v0.ref, v1.ref};
    vg_op *op = vg_ema_apply(ema, vars, 2);
    vg_output a0 = vg_ema_average(ema, v0.ref), a1 = vg_ema_average(ema, v1.ref);
    vg_output s0 = vg_assign(g, v0.ref, vg_const_f32(g, 2.0f, NULL), true, NULL);
    vg_output s1 = vg_assign(g, v1.ref, vg_const_f32(g, 4.0f, NULL), true, NULL);
    vg_op *op2 = vg_ema_apply(ema, vars, 2);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_ema_average(ema, v0.ref).op == a0.op && vg_ema_average(ema, v1.ref).op == a1.op);
    CHECK(op && op2 && strcmp(vg_op_name(op2), "ExponentialMovingAverage_1") == 0);
    CHECK(strcmp(vg_op_name(a0.op), "Variable/ExponentialMovingAverage") == 0);
    CHECK(strcmp(vg_op_name(a1.op), "Variable_1/ExponentialMovingAverage") == 0);
    int nma = 0;
    vg_graph_collection(g, VG_MOVING_AVERAGE_VARIABLES, &nma);
    CHECK_EQ_INT(nma, 2);
    vg_session *s = initialized_session(g);
    run_op(s, op);
    run_op(s, s0.op);
    run_op(s, s1.op);
    run_op(s, op2);
    CHECK_NEAR(val(s, a0), 1.75, 0);
    CHECK_NEAR(val(s, a1), 3.5, 0);
    vg_session_free(s);
    vg_ema_free(ema);
    vg_graph_free(g);
}

/* Two EMAs of one name over the same variable: slot_creator's variable_scope(None,
 * default_name) makes the second shadow "v0/ExponentialMovingAverage_1". */
static void test_ema_second_shadow_unique(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v0 = scalar_var(g, "v0", 1, VG_VAR_TRAINABLE);
    vg_ema *e1 = vg_ema_new(g, 0.5, vg_out(NULL, 0), false, NULL), *e2 = vg_ema_new(g, 0.9, vg_out(NULL, 0), false, NULL);
    CHECK(vg_ema_apply(e1, &v0.ref, 1) && vg_ema_apply(e2, &v0.ref, 1));
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(vg_ema_average(e1, v0.ref).op), "v0/ExponentialMovingAverage") == 0);
    CHECK(strcmp(vg_op_name(vg_ema_average(e2, v0.ref).op), "v0/ExponentialMovingAverage_1") == 0);
    vg_ema_free(e1);
    vg_ema_free(e2);
    vg_graph_free(g);
}

/* testImportedGraphVariablesToRestore: a graph exported as a MetaGraphDef and imported
 * again holds one variable "v"; variables_to_restore has exactly {"v/foo_avg": v}. */
static void test_ema_imported_graph_restore(void) {
    vg_graph *g = vg_graph_new();
    scalar_var(g, "v", 10, VG_VAR_TRAINABLE);
    void *bytes = NULL;
    size_t len = 0;
    vg_status st;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &bytes, &len, &st), &st);
    vg_graph_free(g);
    vg_graph *g2 = vg_graph_new();
    CHECK_OK(vg_import_meta_graph(g2, bytes, len, NULL, NULL, &st), &st);
    vg_free(bytes);
    vg_ema *ema = vg_ema_new(g2, 0.25, vg_out(NULL, 0), false, "foo_avg");
    vg_name_map m;
    CHECK_OK(vg_ema_variables_to_restore(ema, NULL, 0, &m, &st), &st);
    const char *want[1] = {"v/foo_avg"};
    check_keys(&m, want, 1);
    if (m.n == 1) CHECK(strcmp(vg_op_name(m.vars[0].op), "v") == 0);
    vg_name_map_free(&m);
    vg_ema_free(ema);
    vg_graph_free(g2);
}

int main(void) {
    RUN_TEST(test_ema_checkpoint_names);
    RUN_TEST(test_ema_tensors);
    RUN_TEST(test_ema_decay);
    RUN_TEST(test_ema_names_and_restore);
    RUN_TEST(test_ema_errors);
    RUN_TEST(test_ema_average_variables_names);
    RUN_TEST(test_ema_names_respect_scope);
    RUN_TEST(test_ema_subset_names);
    RUN_TEST(test_ema_with_control_deps);
    RUN_TEST(test_ema_apply_twice);
    RUN_TEST(test_ema_second_shadow_unique);
    RUN_TEST(test_ema_imported_graph_restore);
    TEST_MAIN_END();
}
