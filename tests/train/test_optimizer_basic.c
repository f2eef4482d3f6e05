/* test_optimizer_basic.c - the tf.train optimizers end to end: two steps of each on a
 * tiny problem against the update formulas evaluated in double here, TF's slot and
 * op names, the global step, the train_op collection, float64 variables, and the
 * error paths. Problem: loss = sum(w * w * c) with c = [1, 2, 3], so dloss/dw = 2cw. */
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "exec/exec.h"
#include <pthread.h>
#include "vigil/vigil.h"

#define N 3
static const double W0[N] = {1.0, -0.5, 0.25};
static const double C[N] = {1.0, 2.0, 3.0};

typedef struct problem {
    vg_graph *g;
    vg_variable w;
    vg_output loss;
    vg_output gs;
} problem;

static problem make_problem(vg_dtype dt, bool global_step) {
    problem p;
    p.g = vg_graph_new();
    int64_t n = N;
    vg_output init, c;
    if (dt == VG_DOUBLE) {
        init = vg_const_array(p.g, dt, &n, 1, W0, "w0");
        c = vg_const_array(p.g, dt, &n, 1, C, "c");
    } else {
        float w0f[N], cf[N];
        for (int i = 0; i < N; i++) w0f[i] = (float)W0[i], cf[i] = (float)C[i];
        init = vg_const_array(p.g, dt, &n, 1, w0f, "w0");
        c = vg_const_array(p.g, dt, &n, 1, cf, "c");
    }
    p.w = vg_variable_new(p.g, "w", init, VG_VAR_TRAINABLE);
    p.loss = vg_reduce_sum(p.g, vg_mul(p.g, vg_mul(p.g, p.w.read, p.w.read, NULL), c, NULL), NULL, -1, false, "loss");
    p.gs = global_step ? vg_get_or_create_global_step(p.g) : (vg_output){NULL, 0};
    return p;
}

static double getd(const vg_tensor *t, int i) {
    switch (vg_tensor_dtype(t)) {
    case VG_DOUBLE: return ((const double *)vg_tensor_data(t))[i];
    case VG_INT64: return (double)((const int64_t *)vg_tensor_data(t))[i];
    default: return ((const float *)vg_tensor_data(t))[i];
    }
}

/* Initializes, runs train twice, checks fetches[k] against want[k]. */
static void run_two_steps(problem *p, vg_op *train, const vg_output *fetches, double want[][N], const int *sizes,
                          int nf, double tol) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(p->g);
    CHECK_OK(vg_graph_status(p->g, &st), &st);
    vg_session *s = vg_session_new(p->g, NULL, &st);
    if (!s) return;
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    for (int k = 0; k < 2; k++) CHECK_OK(vg_session_run_targets(s, &train, 1, &st), &st);
    for (int f = 0; f < nf; f++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, fetches[f], &t, &st), &st);
        if (!t) continue;
        for (int i = 0; i < sizes[f]; i++) CHECK_NEAR(getd(t, i), want[f][i], tol);
        vg_tensor_free(t);
    }
    vg_session_free(s);
}

/* opt.minimize(p's loss, global_step=p's step); frees opt. */
static vg_op *minimize_problem(problem *p, vg_optimizer *opt) {
    vg_op *train = vg_optimizer_minimize(opt, p->g, p->loss, NULL, 0, p->gs, NULL);
    vg_optimizer_free(opt);
    return train;
}

static void test_optimizer__sgd(void) {
    problem p = make_problem(VG_FLOAT, false);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    CHECK(strcmp(vg_optimizer_name(opt), "GradientDescent") == 0);
    vg_op *train = minimize_problem(&p, opt);
    CHECK(train && strcmp(vg_op_name(train), "GradientDescent") == 0 && strcmp(vg_op_type(train), "NoOp") == 0);
    CHECK(has_op(p.g, "GradientDescent/learning_rate", "Const"));
    CHECK(has_op(p.g, "GradientDescent/update_w/ApplyGradientDescent", "ApplyGradientDescent"));
    CHECK(in_collection(p.g, VG_TRAIN_OP, train));
    double want[1][N];
    for (int i = 0; i < N; i++) {
        double w = W0[i];
        for (int k = 0; k < 2; k++) w -= 0.1 * 2 * C[i] * w;
        want[0][i] = w;
    }
    run_two_steps(&p, train, &p.w.read, want, (int[]){N}, 1, 1e-6);
    vg_graph_free(p.g);
}

static void check_momentum(bool nesterov) {
    problem p = make_problem(VG_FLOAT, false);
    vg_optimizer *opt = vg_optimizer_new_momentum(0.05, 0.9, nesterov);
    vg_op *train = minimize_problem(&p, opt);
    CHECK(train && strcmp(vg_op_name(train), "Momentum") == 0);
    static const char *const momentum_ops[][2] = {
        {"w/Momentum", "VariableV2"}, {"w/Momentum/Initializer/zeros", "Const"},
        {"Momentum/learning_rate", "Const"}, {"Momentum/momentum", "Const"},
        {"Momentum/update_w/ApplyMomentum", "ApplyMomentum"},
    };
    expect_ops(p.g, momentum_ops, 5);
    vg_op *slot = vg_graph_op_by_name(p.g, "w/Momentum");
    CHECK(slot && in_collection(p.g, VG_GLOBAL_VARIABLES, slot) && !in_collection(p.g, VG_TRAINABLE_VARIABLES, slot));
    double want[2][N];
    for (int i = 0; i < N; i++) {
        double w = W0[i], a = 0;
        for (int k = 0; k < 2; k++) {
            double gr = 2 * C[i] * w;
            a = a * 0.9 + gr;
            w -= nesterov ? gr * 0.05 + a * 0.9 * 0.05 : 0.05 * a;
        }
        want[0][i] = w;
        want[1][i] = a;
    }
    vg_output fetches[2] = {p.w.read, vg_variable_snapshot(slot)};
    run_two_steps(&p, train, fetches, want, (int[]){N, N}, 2, 1e-6);
    vg_graph_free(p.g);
}

static void test_optimizer__momentum(void) {
    check_momentum(false);
    check_momentum(true);
}

static void check_adam(vg_dtype dt) {
    problem p = make_problem(dt, true);
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    vg_optimizer *opt = vg_optimizer_new_adam(lr, b1, b2, eps);
    vg_op *train = minimize_problem(&p, opt);
    vg_status st;
    CHECK_OK(vg_graph_status(p.g, &st), &st);
    /* with a global step the train op is AssignAdd "Adam" after NoOp "Adam/update" */
    CHECK(train && strcmp(vg_op_name(train), "Adam") == 0 && strcmp(vg_op_type(train), "AssignAdd") == 0);
    CHECK(has_op(p.g, "Adam/update", "NoOp"));
    CHECK(has_op(p.g, "Adam/value", "Const"));
    if (train) {
        CHECK(vg_op_input(train, 0).op == p.gs.op);
        CHECK(vg_op_num_control_inputs(train) == 1 && vg_op_control_input(train, 0) == vg_graph_op_by_name(p.g, "Adam/update"));
    }
    static const char *const adam_ops[][2] = {
        {"w/Adam", "VariableV2"}, {"w/Adam_1", "VariableV2"},
        {"beta1_power", "VariableV2"}, {"beta2_power", "VariableV2"},
        {"beta1_power/initial_value", "Const"}, {"Adam/learning_rate", "Const"},
        {"Adam/beta1", "Const"}, {"Adam/beta2", "Const"},
        {"Adam/epsilon", "Const"}, {"Adam/update_w/ApplyAdam", "ApplyAdam"},
        {"Adam/mul", "Mul"}, {"Adam/Assign", "Assign"},
        {"Adam/mul_1", "Mul"}, {"Adam/Assign_1", "Assign"},
    };
    expect_ops(p.g, adam_ops, 14);
    if (dt == VG_DOUBLE) CHECK(has_op(p.g, "Adam/update_w/Cast", "Cast"));
    else CHECK(vg_graph_op_by_name(p.g, "Adam/update_w/Cast") == NULL);
    vg_op *b1p = vg_graph_op_by_name(p.g, "beta1_power");
    CHECK(b1p && vg_output_dtype(vg_out(b1p, 0)) == VG_FLOAT);
    CHECK(b1p && in_collection(p.g, VG_GLOBAL_VARIABLES, b1p) && !in_collection(p.g, VG_TRAINABLE_VARIABLES, b1p));
    double want[5][N];
    double m[N] = {0}, v[N] = {0}, w[N];
    memcpy(w, W0, sizeof w);
    for (int k = 1; k <= 2; k++) {
        double lr_t = lr * sqrt(1 - pow(b2, k)) / (1 - pow(b1, k));
        for (int i = 0; i < N; i++) {
            double gr = 2 * C[i] * w[i];
            m[i] = b1 * m[i] + (1 - b1) * gr;
            v[i] = b2 * v[i] + (1 - b2) * gr * gr;
            w[i] -= lr_t * m[i] / (sqrt(v[i]) + eps);
        }
    }
    for (int i = 0; i < N; i++) want[0][i] = w[i], want[1][i] = m[i], want[2][i] = v[i];
    want[3][0] = b1 * b1 * b1;
    want[4][0] = 2;
    vg_output fetches[5] = {p.w.read, vg_variable_snapshot(vg_graph_op_by_name(p.g, "w/Adam")),
                            vg_variable_snapshot(vg_graph_op_by_name(p.g, "w/Adam_1")), vg_variable_snapshot(b1p),
                            vg_variable_snapshot(p.gs.op)};
    run_two_steps(&p, train, fetches, want, (int[]){N, N, N, 1, 1}, 5, dt == VG_FLOAT ? 2e-5 : 1e-6);
    vg_graph_free(p.g);
}

static void test_optimizer__adam(void) {
    check_adam(VG_FLOAT);
    check_adam(VG_DOUBLE);
}

static void test_optimizer__rmsprop(void) {
    problem p = make_problem(VG_FLOAT, false);
    const double lr = 0.01, decay = 0.9, mom = 0.5, eps = 1e-10;
    vg_optimizer *opt = vg_optimizer_new_rmsprop(lr, decay, mom, eps);
    vg_op *train = minimize_problem(&p, opt);
    CHECK(train && strcmp(vg_op_name(train), "RMSProp") == 0);
    static const char *const rmsprop_ops[][2] = {
        {"w/RMSProp", "VariableV2"}, {"w/RMSProp/Initializer/ones", "Const"},
        {"w/RMSProp_1", "VariableV2"}, {"w/RMSProp_1/Initializer/zeros", "Const"},
        {"RMSProp/decay", "Const"}, {"RMSProp/momentum", "Const"},
        {"RMSProp/epsilon", "Const"}, {"RMSProp/update_w/ApplyRMSProp", "ApplyRMSProp"},
    };
    expect_ops(p.g, rmsprop_ops, 8);
    double want[3][N];
    for (int i = 0; i < N; i++) {
        double w = W0[i], ms = 1.0, mo = 0; /* TF starts the mean square at ones */
        for (int k = 0; k < 2; k++) {
            double gr = 2 * C[i] * w;
            ms = decay * ms + (1 - decay) * gr * gr;
            mo = mom * mo + lr * gr / sqrt(ms + eps);
            w -= mo;
        }
        want[0][i] = w;
        want[1][i] = ms;
        want[2][i] = mo;
    }
    vg_output fetches[3] = {p.w.read, vg_variable_snapshot(vg_graph_op_by_name(p.g, "w/RMSProp")),
                            vg_variable_snapshot(vg_graph_op_by_name(p.g, "w/RMSProp_1"))};
    run_two_steps(&p, train, fetches, want, (int[]){N, N, N}, 3, 1e-5);
    vg_graph_free(p.g);
}

static void test_optimizer__global_step_increments(void) {
    problem p = make_problem(VG_FLOAT, true);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.01);
    vg_op *train = minimize_problem(&p, opt);
    CHECK(train && strcmp(vg_op_name(train), "GradientDescent") == 0 && strcmp(vg_op_type(train), "AssignAdd") == 0);
    CHECK(has_op(p.g, "GradientDescent/update", "NoOp"));
    vg_status st;
    vg_op *init = vg_global_variables_initializer(p.g);
    vg_session *s = vg_session_new(p.g, NULL, &st);
    if (!s) { vg_graph_free(p.g); return; }
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    for (int k = 1; k <= 3; k++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(train, 0), &t, &st), &st);
        CHECK(t && *(int64_t *)vg_tensor_data(t) == k);
        vg_tensor_free(t);
    }
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, vg_variable_snapshot(p.gs.op), &t, &st), &st);
    CHECK(t && *(int64_t *)vg_tensor_data(t) == 3);
    vg_tensor_free(t);
    free_session_graph(s, p.g);
}

/* compute_gradients + apply_gradients with an explicit name, a learning-rate tensor,
 * two minimize calls and slot reuse. */
static void test_optimizer__apply_gradients_names(void) {
    problem p = make_problem(VG_FLOAT, false);
    vg_optimizer *opt = vg_optimizer_new_adam(0.1, 0.9, 0.999, 1e-8);
    vg_output grads[1];
    vg_status st;
    CHECK_OK(vg_optimizer_compute_gradients(opt, p.g, p.loss, &p.w.ref, 1, grads, &st), &st);
    CHECK(grads[0].op != NULL);
    vg_op *t1 = vg_optimizer_apply_gradients(opt, p.g, grads, &p.w.ref, 1, (vg_output){NULL, 0}, "train");
    CHECK(t1 && strcmp(vg_op_name(t1), "train") == 0 && strcmp(vg_op_type(t1), "NoOp") == 0);
    CHECK(has_op(p.g, "train/update_w/ApplyAdam", "ApplyAdam"));
    CHECK(has_op(p.g, "train/learning_rate", "Const"));
    /* the same optimizer again: slots and beta powers are reused, names made unique */
    vg_op *t2 = vg_optimizer_apply_gradients(opt, p.g, grads, &p.w.ref, 1, (vg_output){NULL, 0}, "train");
    CHECK(t2 && strcmp(vg_op_name(t2), "train_1") == 0);
    CHECK(vg_graph_op_by_name(p.g, "w/Adam_2") == NULL);
    CHECK(vg_graph_op_by_name(p.g, "beta1_power_1") == NULL);
    CHECK(in_collection(p.g, VG_TRAIN_OP, t1) && in_collection(p.g, VG_TRAIN_OP, t2));
    vg_optimizer_free(opt);
    /* a second Adam gets its own slots */
    opt = vg_optimizer_new_adam(0.1, 0.9, 0.999, 1e-8);
    vg_op *t3 = vg_optimizer_minimize(opt, p.g, p.loss, NULL, 0, (vg_output){NULL, 0}, NULL);
    vg_optimizer_free(opt);
    CHECK(t3 && strcmp(vg_op_name(t3), "Adam") == 0);
    CHECK(has_op(p.g, "w/Adam_2", "VariableV2"));
    CHECK(has_op(p.g, "w/Adam_3", "VariableV2"));
    CHECK(has_op(p.g, "beta1_power_1", "VariableV2"));
    /* learning rate from a tensor: no learning_rate Const */
    opt = vg_optimizer_new_sgd(1.0);
    vg_output lr = vg_placeholder_with_default(p.g, vg_const_f32(p.g, 0.5f, "lr_default"), NULL, 0, "lr");
    vg_optimizer_set_learning_rate_tensor(opt, lr);
    vg_op *t4 = vg_optimizer_minimize(opt, p.g, p.loss, NULL, 0, (vg_output){NULL, 0}, NULL);
    vg_optimizer_free(opt);
    CHECK(t4 && vg_graph_op_by_name(p.g, "GradientDescent/learning_rate") == NULL);
    vg_op *apply = vg_graph_op_by_name(p.g, "GradientDescent/update_w/ApplyGradientDescent");
    CHECK(apply && vg_op_input(apply, 1).op == lr.op);
    CHECK_OK(vg_graph_status(p.g, &st), &st);
    /* run the SGD op once with the default lr 0.5 */
    vg_op *init = vg_global_variables_initializer(p.g);
    vg_session *s = vg_session_new(p.g, NULL, &st);
    if (s) {
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        CHECK_OK(vg_session_run_targets(s, &t4, 1, &st), &st);
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, p.w.read, &t, &st), &st);
        if (t) CHECK_NEAR(getd(t, 0), W0[0] - 0.5 * 2 * C[0] * W0[0], 1e-6);
        vg_tensor_free(t);
        vg_session_free(s);
    }
    vg_graph_free(p.g);
}

/* minimize under control_dependencies: slot initializers must not inherit them. */
static void test_optimizer__under_control_deps(void) {
    problem p = make_problem(VG_FLOAT, true);
    vg_op *dep = vg_no_op(p.g, "update_ops_dep");
    vg_graph_push_control_deps(p.g, &dep, 1);
    vg_optimizer *opt = vg_optimizer_new_adam(0.1, 0.9, 0.999, 1e-8);
    vg_op *train = minimize_problem(&p, opt);
    vg_graph_pop_control_deps(p.g);
    CHECK(train != NULL);
    vg_op *a = vg_graph_op_by_name(p.g, "w/Adam/Assign");
    CHECK(a && vg_op_num_control_inputs(a) == 0);
    a = vg_graph_op_by_name(p.g, "beta1_power/Assign");
    CHECK(a && vg_op_num_control_inputs(a) == 0);
    a = vg_graph_op_by_name(p.g, "beta1_power/initial_value");
    CHECK(a && vg_op_num_control_inputs(a) == 0);
    vg_graph_free(p.g);
}

static void test_optimizer__errors(void) {
    vg_status st;
    /* no trainable variables */
    vg_graph *g = vg_graph_new();
    vg_output loss = vg_const_f32(g, 1, "loss");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, (vg_output){NULL, 0}, NULL);
    CHECK(train == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "No variables to optimize.");
    vg_graph_free(g);

    /* a variable the loss does not depend on */
    g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 1, "c"), VG_VAR_TRAINABLE);
    loss = vg_const_f32(g, 1, "loss");
    train = vg_optimizer_minimize(opt, g, loss, NULL, 0, (vg_output){NULL, 0}, NULL);
    CHECK(train == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "No gradients provided for any variable");
    vg_graph_free(g);

    /* apply_gradients: not a variable; no gradients at all */
    g = vg_graph_new();
    v = vg_variable_new(g, "v", vg_const_f32(g, 1, "c"), VG_VAR_TRAINABLE);
    vg_output grad = vg_const_f32(g, 1, "grad");
    train = vg_optimizer_apply_gradients(opt, g, &grad, &v.read, 1, (vg_output){NULL, 0}, NULL);
    CHECK(train == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "is not a variable");
    vg_graph_free(g);
    g = vg_graph_new();
    v = vg_variable_new(g, "v", vg_const_f32(g, 1, "c"), VG_VAR_TRAINABLE);
    vg_output none = {NULL, 0};
    train = vg_optimizer_apply_gradients(opt, g, &none, &v.ref, 1, none, NULL);
    CHECK(train == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "No gradients provided for any variable: [v]");
    vg_graph_free(g);

    /* integer loss */
    g = vg_graph_new();
    v = vg_variable_new(g, "v", vg_const_f32(g, 1, "c"), VG_VAR_TRAINABLE);
    vg_output grads[1];
    CHECK_CODE(vg_optimizer_compute_gradients(opt, g, vg_const_i32(g, 1, "iloss"), NULL, 0, grads, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Invalid type int32 for loss");
    vg_graph_free(g);
    vg_optimizer_free(opt);
}

/* In steady state the apply ops update the weights and slots in place: the executor
 * runs every reader of w before ApplyAdam, so no copy-on-write happens. Checked
 * through the data pointers of the variables' own buffers. */
static const void *data_of(vg_session *s, vg_output o) {
    /* the variable's own buffer (a fetch hands back a copy): o is "<var>/read" */
    const vg_op *var = vg_op_input(o.op, 0).op;
    vg__var *v = s->vars[var->id];
    return v && v->value ? vg_tensor_data(v->value) : NULL;
}

static void test_optimizer__updates_in_place(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 5);
    vg_output x = vg_random_uniform(g, vg_const_i32_vec(g, (int32_t[]){8, 64}, 2, "xs"), VG_FLOAT, 1, 2, "x");
    vg_variable w = vg_get_variable(g, "w", VG_FLOAT, (int64_t[]){64, 32}, 2, vg_init_glorot_uniform(0),
                                    VG_VAR_TRAINABLE);
    vg_output y = vg_matmul(g, x, w.read, false, false, NULL);
    vg_output loss = vg_reduce_sum(g, vg_mul(g, y, y, NULL), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_adam(0.01, 0.9, 0.999, 1e-8);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_get_or_create_global_step(g), NULL);
    vg_optimizer_free(opt);
    vg_op *init = vg_global_variables_initializer(g);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) { vg_graph_free(g); return; }
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    /* the first step may copy (the initial value is shared with the initializer) */
    CHECK_OK(vg_session_run_targets(s, &train, 1, &st), &st);
    vg_output m = vg_variable_snapshot(vg_graph_op_by_name(g, "w/Adam"));
    const void *pw = data_of(s, w.read), *pm = data_of(s, m);
    for (int k = 0; k < 3; k++) {
        CHECK_OK(vg_session_run_targets(s, &train, 1, &st), &st);
        CHECK(data_of(s, w.read) == pw);
        CHECK(data_of(s, m) == pm);
    }
    free_session_graph(s, g);
}

/* Several threads run the train op on one session: the variable locks keep every
 * update (the global step counts each run exactly once). */
static void test_optimizer__concurrent_steps(void) {
    problem p = make_problem(VG_FLOAT, true);
    vg_optimizer *opt = vg_optimizer_new_momentum(0.001, 0.9, false);
    vg_op *train = minimize_problem(&p, opt);
    vg_op *init = vg_global_variables_initializer(p.g);
    vg_status st;
    vg_session *s = vg_session_new(p.g, NULL, &st);
    if (!s) { vg_graph_free(p.g); return; }
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_EQ_INT(run_target_concurrently(s, train, 4, 50), 0);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, vg_variable_snapshot(p.gs.op), &t, &st), &st);
    CHECK(t && *(int64_t *)vg_tensor_data(t) == 200);
    vg_tensor_free(t);
    t = NULL;
    CHECK_OK(vg_session_run1(s, p.w.read, &t, &st), &st);
    if (t) for (int i = 0; i < N; i++) CHECK(fabs(getd(t, i)) < fabs(W0[i])); /* it still descends */
    vg_tensor_free(t);
    free_session_graph(s, p.g);
}

int main(void) {
    RUN_TEST(test_optimizer__sgd);
    RUN_TEST(test_optimizer__momentum);
    RUN_TEST(test_optimizer__adam);
    RUN_TEST(test_optimizer__rmsprop);
    RUN_TEST(test_optimizer__global_step_increments);
    RUN_TEST(test_optimizer__apply_gradients_names);
    RUN_TEST(test_optimizer__under_control_deps);
    RUN_TEST(test_optimizer__errors);
    RUN_TEST(test_optimizer__updates_in_place);
    RUN_TEST(test_optimizer__concurrent_steps);
    TEST_MAIN_END();
}
