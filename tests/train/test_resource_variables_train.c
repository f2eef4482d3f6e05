/* test_resource_variables_train.c - resource variables under the optimizers, the
 * saver and a MonitoredTrainingSession: minimize over resource variables uses
 * ResourceApply* / ResourceSparseApply* and trains to the same numbers as over ref
 * variables (the kernels are shared), slots are resource variables, and checkpoints
 * round-trip (also into ref variables of the same names, as TF's are interchangeable). */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

static vg_code run_op(vg_session *s, vg_op *op, vg_status *st) { return vg_session_run_targets(s, &op, 1, st); }

static int count_type(vg_graph *g, const char *type) {
    int n = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++) n += strcmp(vg_op_type(vg_graph_op(g, i)), type) == 0;
    return n;
}

typedef enum opt_id {
    O_SGD,
    O_MOMENTUM,
    O_NESTEROV,
    O_ADAM,
    O_RMSPROP,
    O_RMSPROP_MOM,
    O_ADAGRAD,
    O_ADADELTA,
    O_FTRL,
    O_FTRL_SHRINK,
    O_PROXIMAL,
    O_COUNT
} opt_id;

static vg_optimizer *make_opt(opt_id id) {
    switch (id) {
    case O_SGD: return vg_optimizer_new_sgd(0.05);
    case O_MOMENTUM: return vg_optimizer_new_momentum(0.05, 0.9, false);
    case O_NESTEROV: return vg_optimizer_new_momentum(0.05, 0.9, true);
    case O_ADAM: return vg_optimizer_new_adam(0.05, 0.9, 0.999, 1e-8);
    case O_RMSPROP: return vg_optimizer_new_rmsprop(0.01, 0.9, 0.0, 1e-10);
    case O_RMSPROP_MOM: return vg_optimizer_new_rmsprop(0.01, 0.9, 0.5, 1e-10);
    case O_ADAGRAD: return vg_optimizer_new_adagrad(0.1, 0.1);
    case O_ADADELTA: return vg_optimizer_new_adadelta(1.0, 0.95, 1e-6);
    case O_FTRL: return vg_optimizer_new_ftrl(0.1, -0.5, 0.1, 0.01, 0.01, 0.0);
    case O_FTRL_SHRINK: return vg_optimizer_new_ftrl(0.1, -0.5, 0.1, 0.0, 0.0, 0.1);
    case O_PROXIMAL: return vg_optimizer_new_proximal_gd(0.05, 0.01, 0.01);
    case O_COUNT: break;
    }
    return NULL;
}

/* The ResourceApply* op each optimizer's dense update uses. */
static const char *const dense_op[O_COUNT] = {
    "ResourceApplyGradientDescent", "ResourceApplyMomentum", "ResourceApplyMomentum", "ResourceApplyAdam",
    "ResourceApplyRMSProp",         "ResourceApplyRMSProp",  "ResourceApplyAdagrad",  "ResourceApplyAdadelta",
    "ResourceApplyFtrl",            "ResourceApplyFtrlV2",   "ResourceApplyProximalGradientDescent"};

/* The loss "loss" = mean (regression, with a global step) or sum (no step) of
 * (pred - target)^2; *train minimizes it with optimizer id, *init initializes the
 * variables. */
static vg_output minimize_squared_error(vg_graph *g, vg_output pred, vg_output target, bool regression, opt_id id,
                                        vg_op **train, vg_op **init) {
    vg_output d = vg_sub(g, pred, target, NULL);
    vg_output sq = vg_mul(g, d, d, NULL);
    vg_output loss = regression ? vg_reduce_mean(g, sq, NULL, -1, false, "loss")
                                : vg_reduce_sum(g, sq, NULL, -1, false, "loss");
    vg_optimizer *opt = make_opt(id);
    vg_output step = regression ? vg_get_or_create_global_step(g) : (vg_output){NULL, 0};
    *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, step, NULL);
    vg_optimizer_free(opt);
    *init = vg_global_variables_initializer(g);
    return loss;
}

/* A model trained on a squared error in its own graph: the variables' values (w and b
 * of the regression, e of the embedding), the loss, the train op and the initializer. */
typedef struct sq_model {
    vg_graph *g;
    vg_output w_val, b_val, e_val, loss;
    vg_op *train, *init;
} sq_model;

static sq_model sq_model_new(void) {
    sq_model m;
    memset(&m, 0, sizeof m);
    m.g = vg_graph_new();
    return m;
}

/* The linear regression y = x w + b on 4 fixed samples, w [3, 1], b [1]; the
 * variables are ref or resource ones with the same names and initial values. */
static sq_model build_regression(opt_id id, bool resource) {
    sq_model r = sq_model_new();
    vg_graph *g = r.g;
    static const float xs[12] = {1, 2, 0.5f, -1, 0, 2, 0.3f, -0.7f, 1, 2, 1, -1};
    static const float ys[4] = {3, 1, 0.5f, 2.5f};
    static const float w0[3] = {0.1f, -0.2f, 0.3f}, b0[1] = {0.05f};
    vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){4, 3}, 2, xs, "x");
    vg_output y = vg_const_array(g, VG_FLOAT, (int64_t[]){4, 1}, 2, ys, "y");
    vg_output wi = vg_const_array(g, VG_FLOAT, (int64_t[]){3, 1}, 2, w0, "w_init");
    vg_output bi = vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, b0, "b_init");
    if (resource) {
        vg_resource_variable w = vg_resource_variable_new(g, "w", wi, VG_VAR_TRAINABLE);
        vg_resource_variable b = vg_resource_variable_new(g, "b", bi, VG_VAR_TRAINABLE);
        r.w_val = w.value;
        r.b_val = b.value;
    } else {
        r.w_val = vg_variable_new(g, "w", wi, VG_VAR_TRAINABLE).read;
        r.b_val = vg_variable_new(g, "b", bi, VG_VAR_TRAINABLE).read;
    }
    vg_output pred = vg_add(g, vg_matmul(g, x, r.w_val, false, false, NULL), r.b_val, NULL);
    r.loss = minimize_squared_error(g, pred, y, true, id, &r.train, &r.init);
    return r;
}

/* Trains `steps` steps; w (3), b (1) and the first and last loss come back in out. */
static bool train_regression(sq_model *r, int steps, float *out) {
    vg_status st;
    vg_session *s = new_session(r->g);
    if (!s) return false;
    bool ok = run_op(s, r->init, &st) == VG_OK;
    for (int i = 0; ok && i < steps; i++) {
        vg_tensor *l = fetch_st(s, r->loss, &st);
        ok = l != NULL;
        if (l && i == 0) out[4] = *(const float *)vg_tensor_data(l);
        vg_tensor_free(l);
        ok = ok && run_op(s, r->train, &st) == VG_OK;
    }
    vg_output f[3] = {r->w_val, r->b_val, r->loss};
    vg_tensor *t[3] = {NULL, NULL, NULL};
    ok = ok && vg_session_run(s, NULL, NULL, NULL, 0, f, t, 3, NULL, 0, NULL, &st) == VG_OK;
    if (!ok) fprintf(stderr, "train: %s\n", st.msg);
    if (ok) {
        memcpy(out, vg_tensor_data(t[0]), 3 * sizeof(float));
        out[3] = *(const float *)vg_tensor_data(t[1]);
        out[5] = *(const float *)vg_tensor_data(t[2]);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(t[i]);
    vg_session_free(s);
    return ok;
}

/* minimize over resource variables: ResourceApply* ops, resource slots, and the same
 * numbers as over ref variables, for every optimizer. */
static void test_rvt__minimize_matches_ref(void) {
    for (int id = 0; id < O_COUNT; id++) {
        sq_model ref = build_regression((opt_id)id, false), res = build_regression((opt_id)id, true);
        CHECK(ref.train != NULL && res.train != NULL);
        if (!ref.train || !res.train) {
            vg_status st;
            vg_graph_status(res.g, &st);
            fprintf(stderr, "optimizer %d: %s\n", id, st.msg);
            vg_graph_free(ref.g);
            vg_graph_free(res.g);
            continue;
        }
        vg_optimizer *o = make_opt((opt_id)id);
        char name[256];
        snprintf(name, sizeof name, "%s/update_w/%s", vg_optimizer_name(o), dense_op[id]);
        CHECK(has_op(res.g, name, dense_op[id]));
        if (id == O_MOMENTUM) {
            CHECK(has_op(res.g, "w/Momentum", "VarHandleOp"));
            CHECK(has_op(res.g, "w/Momentum/Assign", "AssignVariableOp"));
            CHECK(has_op(res.g, "w/Momentum/Initializer/zeros", "Const"));
            CHECK(has_op(ref.g, "w/Momentum", "VariableV2"));
        }
        if (id == O_ADAM) {
            CHECK(has_op(res.g, "w/Adam", "VarHandleOp"));
            CHECK(has_op(res.g, "w/Adam_1", "VarHandleOp"));
            CHECK(has_op(res.g, "beta1_power", "VarHandleOp"));
            CHECK(has_op(res.g, "beta2_power", "VarHandleOp"));
        }
        CHECK_EQ_INT(count_type(res.g, "VariableV2"), 1); /* only the global step */
        float a[6] = {0}, b[6] = {0};
        CHECK(train_regression(&ref, 25, a));
        CHECK(train_regression(&res, 25, b));
        for (int k = 0; k < 6; k++)
            if (a[k] != b[k]) {
                fprintf(stderr, "optimizer %s value %d: ref %.9g resource %.9g\n", vg_optimizer_name(o), k, a[k], b[k]);
                vg_test_failures++;
            }
        CHECK(b[5] < b[4]); /* it trains */
        vg_optimizer_free(o);
        vg_graph_free(ref.g);
        vg_graph_free(res.g);
    }
}

/* Adam's beta powers follow the first variable: resource ones, multiplied per step. */
static void test_rvt__adam_beta_powers(void) {
    vg_status st;
    sq_model r = build_regression(O_ADAM, true);
    vg_op *bp = vg_graph_op_by_name(r.g, "beta1_power");
    CHECK(bp && vg_is_resource_variable(vg_out(bp, 0)));
    if (!bp) {
        vg_graph_free(r.g);
        return;
    }
    vg_resource_variable b1 = vg_resource_variable_from_handle(vg_out(bp, 0));
    CHECK(b1.value.op != NULL);
    vg_session *s = new_session(r.g);
    CHECK_OK(run_op(s, r.init, &st), &st);
    for (int i = 0; i < 3; i++) CHECK_OK(run_op(s, r.train, &st), &st);
    vg_tensor *t = fetch_st(s, b1.value, &st);
    CHECK(t != NULL);
    if (t) CHECK_NEAR(*(const float *)vg_tensor_data(t), 0.9f * 0.9f * 0.9f * 0.9f, 1e-6);
    vg_tensor_free(t);
    t = fetch_st(s, vg_get_global_step(r.g), &st);
    CHECK(t && *(const int64_t *)vg_tensor_data(t) == 3);
    vg_tensor_free(t);
    free_session_graph(s, r.g);
}

/* An embedding read with sparse_read (resource) or Gather (ref) under each optimizer:
 * the sparse updates (ResourceSparseApply*, ResourceScatterAdd for GradientDescent)
 * give the ref path's numbers and leave unread rows alone. */
static sq_model build_embedding(opt_id id, bool resource) {
    sq_model m = sq_model_new();
    vg_graph *g = m.g;
    float e0[10];
    for (int i = 0; i < 10; i++) e0[i] = 0.1f * (float)(i + 1) - 0.45f;
    vg_output ei = vg_const_array(g, VG_FLOAT, (int64_t[]){5, 2}, 2, e0, "e_init");
    vg_output ix = vg_const_i32_vec(g, (int32_t[]){1, 3, 1}, 3, "ix");
    vg_output rows;
    if (resource) {
        vg_resource_variable e = vg_resource_variable_new(g, "e", ei, VG_VAR_TRAINABLE);
        m.e_val = e.value;
        rows = vg_resource_variable_sparse_read(g, e.handle, ix, NULL);
    } else {
        vg_variable e = vg_variable_new(g, "e", ei, VG_VAR_TRAINABLE);
        m.e_val = e.read;
        rows = vg_gather(g, e.read, ix, 0, NULL);
    }
    vg_output tgt = vg_const_array(g, VG_FLOAT, (int64_t[]){3, 2}, 2, (float[]){1, -1, 0.5f, 2, 1, -1}, "tgt");
    m.loss = minimize_squared_error(g, rows, tgt, false, id, &m.train, &m.init);
    return m;
}

static bool train_embedding(sq_model *m, int steps, float *e_out, float *loss_out) {
    vg_status st;
    vg_session *s = new_session(m->g);
    if (!s) return false;
    bool ok = run_op(s, m->init, &st) == VG_OK;
    for (int i = 0; ok && i < steps; i++) ok = run_op(s, m->train, &st) == VG_OK;
    vg_output f[2] = {m->e_val, m->loss};
    vg_tensor *t[2] = {NULL, NULL};
    ok = ok && vg_session_run(s, NULL, NULL, NULL, 0, f, t, 2, NULL, 0, NULL, &st) == VG_OK;
    if (!ok) fprintf(stderr, "train: %s\n", st.msg);
    if (ok) {
        memcpy(e_out, vg_tensor_data(t[0]), 10 * sizeof(float));
        *loss_out = *(const float *)vg_tensor_data(t[1]);
    }
    vg_tensor_free(t[0]);
    vg_tensor_free(t[1]);
    vg_session_free(s);
    return ok;
}

static void test_rvt__sparse_matches_ref(void) {
    static const char *const sparse_op[O_COUNT] = {
        "ResourceScatterAdd",         "ResourceSparseApplyMomentum", "ResourceSparseApplyMomentum",
        "ResourceApplyAdam",          "ResourceSparseApplyRMSProp",  "ResourceSparseApplyRMSProp",
        "ResourceSparseApplyAdagrad", "ResourceSparseApplyAdadelta", "ResourceSparseApplyFtrl",
        "ResourceSparseApplyFtrlV2",  "ResourceSparseApplyProximalGradientDescent"};
    for (int id = 0; id < O_COUNT; id++) {
        sq_model ref = build_embedding((opt_id)id, false), res = build_embedding((opt_id)id, true);
        CHECK(ref.train != NULL && res.train != NULL);
        if (!ref.train || !res.train) {
            vg_graph_free(ref.g);
            vg_graph_free(res.g);
            continue;
        }
        CHECK_EQ_INT(count_type(res.g, sparse_op[id]), 1);
        if (id != O_ADAM && id != O_SGD) CHECK_EQ_INT(count_type(res.g, "Unique"), 1);
        float a[10], b[10], la = 0, lb = 0;
        CHECK(train_embedding(&ref, 6, a, &la));
        CHECK(train_embedding(&res, 6, b, &lb));
        for (int k = 0; k < 10; k++) {
            if (fabsf(a[k] - b[k]) > 1e-6f) {
                fprintf(stderr, "optimizer %d e[%d]: ref %.9g resource %.9g\n", id, k, a[k], b[k]);
                vg_test_failures++;
            }
        }
        /* rows 0, 2 and 4 are never read: only Adam (dense) may move them... and does not either, their
         * gradient being zero from the start */
        for (int r = 0; r < 5; r += 2)
            for (int c = 0; c < 2; c++) CHECK_NEAR(b[r * 2 + c], 0.1f * (float)(r * 2 + c + 1) - 0.45f, 1e-7);
        CHECK_NEAR(la, lb, 1e-5);
        vg_graph_free(ref.g);
        vg_graph_free(res.g);
    }
}

/* One minimize over a ref and a resource variable together. */
static void test_rvt__mixed_variables(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable a = vg_variable_new(g, "a", vg_const_f32(g, 1.0f, "ai"), VG_VAR_TRAINABLE);
    vg_resource_variable b = vg_resource_variable_new(g, "b", vg_const_f32(g, 2.0f, "bi"), VG_VAR_TRAINABLE);
    vg_output loss = vg_add(g, vg_mul(g, a.read, a.read, NULL), vg_mul(g, b.value, b.value, NULL), "loss");
    vg_optimizer *opt = vg_optimizer_new_momentum(0.1, 0.5, false);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, (vg_output){NULL, 0}, NULL);
    vg_optimizer_free(opt);
    CHECK(train != NULL);
    CHECK(has_op(g, "Momentum/update_a/ApplyMomentum", "ApplyMomentum"));
    CHECK(has_op(g, "Momentum/update_b/ResourceApplyMomentum", "ResourceApplyMomentum"));
    CHECK(has_op(g, "a/Momentum", "VariableV2"));
    CHECK(has_op(g, "b/Momentum", "VarHandleOp"));
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, init, &st), &st);
    CHECK_OK(run_op(s, train, &st), &st);
    CHECK_OK(run_op(s, train, &st), &st);
    /* momentum 0.5, lr 0.1, grad 2x: step 1 acc=2x0, x1=0.8x0; step 2 acc=0.5*2x0+1.6x0=2.6x0, x2=0.8x0-0.26x0 */
    vg_output f[2] = {a.read, b.value};
    vg_tensor *t[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, t, 2, NULL, 0, NULL, &st), &st);
    if (t[0] && t[1]) {
        CHECK_NEAR(*(const float *)vg_tensor_data(t[0]), 0.54f, 1e-6);
        CHECK_NEAR(*(const float *)vg_tensor_data(t[1]), 1.08f, 1e-6);
    }
    vg_tensor_free(t[0]);
    vg_tensor_free(t[1]);
    free_session_graph(s, g);
}

/* compute_gradients over a resource variable checks its dtype (an int32 one is not
 * trainable); the ResourceApply ops check the handle's dtype at build time. */
static void test_rvt__errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "iv", vg_const_i32(g, 1, "c"), VG_VAR_TRAINABLE);
    vg_output loss = vg_cast(g, v.value, VG_FLOAT, NULL);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    vg_output grad;
    CHECK_STATUS(vg_optimizer_compute_gradients(opt, g, loss, &v.handle, 1, &grad, &st), &st, VG_INVALID_ARGUMENT,
                 "Invalid type int32 for iv");
    vg_optimizer_free(opt);
    vg_graph_free(g);

    g = vg_graph_new();
    vg_resource_variable d = vg_resource_variable_new(g, "d", vg_const_f64(g, 1, "c"), 0);
    CHECK(vg_resource_apply_gradient_descent(g, d.handle, vg_const_f32(g, 1, "lr"), vg_const_f32(g, 1, "g"), false,
                                             NULL) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "is a variable of type double that does not match type float");
    vg_graph_free(g);

    /* an update of a variable that does not exist: NOT_FOUND */
    g = vg_graph_new();
    vg_output h = vg_var_handle_op(g, VG_FLOAT, (int64_t[]){2}, 1, NULL, NULL, "nv");
    vg_op *up = vg_resource_apply_gradient_descent(g, h, vg_const_f32(g, 1, "lr"),
                                                   vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1,
                                                                  (float[]){1, 2}, "g"),
                                                   false, NULL);
    CHECK(up != NULL && vg_op_num_outputs(up) == 0);
    vg_session *s = new_session(g);
    CHECK_STATUS(run_op(s, up, &st), &st, VG_NOT_FOUND, "Resource localhost/nv/N10tensorflow3VarE does not exist.");
    free_session_graph(s, g);
}

/* The update ops copy a value somebody still holds before changing it: a read fetched
 * before a step keeps the old numbers. */
static void test_rvt__apply_copy_on_write(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(
        g, "v", vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, (float[]){1, 2}, "c"), 0);
    vg_op *up = vg_resource_apply_gradient_descent(
        g, v.handle, vg_const_f32(g, 0.5f, "lr"), vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, (float[]){2, 2}, "g"),
        false, NULL);
    vg_session *s = new_session(g);
    CHECK_OK(run_op(s, v.initializer, &st), &st);
    vg_tensor *held = fetch_st(s, v.value, &st);
    CHECK_OK(run_op(s, up, &st), &st);
    vg_tensor *now = fetch_st(s, v.value, &st);
    CHECK(held && now);
    if (held && now) {
        CHECK_NEAR(((float *)vg_tensor_data(held))[0], 1, 0);
        CHECK_NEAR(((float *)vg_tensor_data(held))[1], 2, 0);
        CHECK_NEAR(((float *)vg_tensor_data(now))[0], 0, 0);
        CHECK_NEAR(((float *)vg_tensor_data(now))[1], 1, 0);
    }
    vg_tensor_free(held);
    vg_tensor_free(now);
    free_session_graph(s, g);
}

/* A graph with resource variable "w" [2, 2] and ref variable "b" [2]. */
typedef struct saved_model {
    vg_graph *g;
    vg_output w_var, w_val, b_val;
    vg_op *set_w, *set_b, *init;
    vg_saver *saver;
} saved_model;

static saved_model build_saved(bool w_resource) {
    saved_model m;
    memset(&m, 0, sizeof m);
    vg_status st;
    m.g = vg_graph_new();
    vg_graph *g = m.g;
    vg_output wi = vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 2}, 2, 0.0, "wi");
    vg_output bi = vg_const_fill(g, VG_FLOAT, (int64_t[]){2}, 1, 0.0, "bi");
    vg_output w2 = vg_const_array(g, VG_FLOAT, (int64_t[]){2, 2}, 2, (float[]){1, 2, 3, 4}, "w2");
    vg_output b2 = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, (float[]){5, 6}, "b2");
    if (w_resource) {
        vg_resource_variable w = vg_resource_variable_new(g, "w", wi, VG_VAR_TRAINABLE);
        m.w_var = w.handle;
        m.w_val = w.value;
        m.set_w = vg_resource_variable_assign(g, w.handle, w2, NULL);
    } else {
        vg_variable w = vg_variable_new(g, "w", wi, VG_VAR_TRAINABLE);
        m.w_var = w.ref;
        m.w_val = w.read;
        m.set_w = vg_assign(g, w.ref, w2, true, NULL).op;
    }
    vg_variable b = vg_variable_new(g, "b", bi, VG_VAR_TRAINABLE);
    m.b_val = b.read;
    m.set_b = vg_assign(g, b.ref, b2, true, NULL).op;
    m.init = vg_global_variables_initializer(g);
    vg_saver_options o = {0};
    m.saver = vg_saver_new(g, &o, &st);
    if (!m.saver) fprintf(stderr, "saver: %s\n", st.msg);
    return m;
}

static void check_saved_values(vg_session *s, saved_model *m, const float *w, const float *b) {
    vg_status st;
    vg_tensor *t = fetch_st(s, m->w_val, &st);
    CHECK(t && vg_tensor_num_elements(t) == 4);
    for (int i = 0; t && i < 4; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], w[i], 0);
    vg_tensor_free(t);
    t = fetch_st(s, m->b_val, &st);
    CHECK(t && vg_tensor_num_elements(t) == 2);
    for (int i = 0; t && i < 2; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], b[i], 0);
    vg_tensor_free(t);
}

/* Save and restore: a resource variable is saved under its name from a read and
 * restored by an AssignVariableOp; the checkpoint restores into a ref variable of the
 * same name and back. */
static void test_rvt__save_restore(void) {
    vg_status st;
    char dir[256], prefix[300], path[512];
    tu_mkdtemp(dir, sizeof dir, "rvsave");
    CHECK(dir[0] != 0);
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    saved_model m = build_saved(true);
    CHECK(m.saver != NULL);
    if (!m.saver) {
        vg_graph_free(m.g);
        tu_rmrf(dir);
        return;
    }
    CHECK(count_type(m.g, "AssignVariableOp") == 3); /* w/Assign, the assign above, save's restore */
    /* TF's ResourceVariableSaveable: read_value() then an Identity (the CPU copy) */
    vg_op *save = vg_graph_op_by_name(m.g, "save/SaveV2");
    CHECK(save && vg_op_num_inputs(save) == 5);
    if (save && vg_op_num_inputs(save) == 5) {
        vg_op *w_in = vg_op_input(save, 4).op; /* keys sorted: b, w */
        CHECK(strcmp(vg_op_name(w_in), "save/Identity_1") == 0);
        vg_op *id = vg_op_input(w_in, 0).op;
        CHECK(strcmp(vg_op_name(id), "save/Identity") == 0);
        CHECK(has_op(m.g, vg_op_name(vg_op_input(id, 0).op), "ReadVariableOp"));
        CHECK(strcmp(vg_op_name(vg_op_input(id, 0).op), "save/Read/ReadVariableOp") == 0);
        CHECK(strcmp(vg_op_type(vg_op_input(save, 3).op), "VariableV2") == 0);
    }
    vg_session *s = new_session(m.g);
    CHECK_OK(run_op(s, m.init, &st), &st);
    CHECK_OK(run_op(s, m.set_w, &st), &st);
    CHECK_OK(run_op(s, m.set_b, &st), &st);
    CHECK_OK(vg_saver_save(m.saver, s, prefix, 7, path, sizeof path, &st), &st);
    CHECK_OK(run_op(s, m.init, &st), &st);
    check_saved_values(s, &m, (float[]){0, 0, 0, 0}, (float[]){0, 0});
    CHECK_OK(vg_saver_restore(m.saver, s, path, &st), &st);
    check_saved_values(s, &m, (float[]){1, 2, 3, 4}, (float[]){5, 6});
    vg_session_free(s);
    /* restoring into a fresh session: the variables need not exist first */
    s = new_session(m.g);
    CHECK_OK(vg_saver_restore(m.saver, s, path, &st), &st);
    check_saved_values(s, &m, (float[]){1, 2, 3, 4}, (float[]){5, 6});
    vg_session_free(s);
    vg_saver_free(m.saver);
    vg_graph_free(m.g);

    /* the .meta: a VariableDef with is_resource; imported, the collections and parts
     * come back and a saver over them restores the checkpoint */
    char meta[600];
    snprintf(meta, sizeof meta, "%s.meta", path);
    vg_graph *ig = vg_graph_new();
    vg_meta_import_options mo = {0};
    mo.omit_saver = true;
    CHECK_OK(vg_import_meta_graph_file(ig, meta, &mo, NULL, &st), &st);
    int n = 0;
    const vg_output *gv = vg_graph_collection(ig, VG_GLOBAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 2);
    vg_op *iw = vg_graph_op_by_name(ig, "w");
    CHECK(iw && vg_is_resource_variable(vg_out(iw, 0)));
    bool listed = false;
    for (int i = 0; i < n; i++) listed |= gv[i].op == iw;
    CHECK(listed);
    if (iw) {
        vg_resource_variable rw = vg_resource_variable_from_handle(vg_out(iw, 0));
        CHECK(rw.value.op && strcmp(vg_op_name(rw.value.op), "w/Read/ReadVariableOp") == 0);
        CHECK(rw.initializer && strcmp(vg_op_name(rw.initializer), "w/Assign") == 0);
        vg_saver_options io = {0};
        vg_saver *isv = vg_saver_new(ig, &io, &st);
        CHECK(isv != NULL);
        vg_session *is = isv ? new_session(ig) : NULL;
        if (is) {
            CHECK_OK(vg_saver_restore(isv, is, path, &st), &st);
            vg_tensor *t = fetch_st(is, rw.value, &st);
            CHECK(t && vg_tensor_num_elements(t) == 4 && ((float *)vg_tensor_data(t))[3] == 4.0f);
            vg_tensor_free(t);
            vg_session_free(is);
        }
        vg_saver_free(isv);
    }
    vg_graph_free(ig);

    /* the checkpoint's entries: TF's names, dtypes and shapes */
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    CHECK(r != NULL);
    bool found = false;
    for (int i = 0; r && i < vg_checkpoint_reader_num_tensors(r); i++) {
        vg_dtype dt;
        vg_shape sh;
        const char *name = vg_checkpoint_reader_tensor(r, i, &dt, &sh);
        if (strcmp(name, "w") == 0) {
            found = true;
            CHECK(dt == VG_FLOAT && sh.ndims == 2 && sh.dims[0] == 2 && sh.dims[1] == 2);
        }
    }
    CHECK(found);
    vg_checkpoint_reader_free(r);

    /* into a graph where w is a ref variable, and a save from it back into resource */
    saved_model refm = build_saved(false);
    s = new_session(refm.g);
    CHECK_OK(vg_saver_restore(refm.saver, s, path, &st), &st);
    check_saved_values(s, &refm, (float[]){1, 2, 3, 4}, (float[]){5, 6});
    char path2[512], prefix2[300];
    snprintf(prefix2, sizeof prefix2, "%s/refmodel", dir);
    CHECK_OK(vg_saver_save(refm.saver, s, prefix2, -1, path2, sizeof path2, &st), &st);
    vg_session_free(s);
    vg_saver_free(refm.saver);
    vg_graph_free(refm.g);
    saved_model back = build_saved(true);
    vg_saver_options wo = {0};
    wo.var_list = &back.w_var;
    wo.nvars = 1;
    wo.name = "save_w";
    vg_saver *wsaver = vg_saver_new(back.g, &wo, &st);
    CHECK(wsaver != NULL);
    s = new_session(back.g);
    CHECK_OK(vg_saver_restore(back.saver, s, path2, &st), &st);
    check_saved_values(s, &back, (float[]){1, 2, 3, 4}, (float[]){5, 6});
    /* saving an uninitialized resource variable fails as reading it does */
    vg_session *s2 = new_session(back.g);
    CHECK_STATUS(vg_saver_save(wsaver, s2, prefix2, 3, NULL, 0, &st), &st, VG_FAILED_PRECONDITION,
                 "Error while reading resource variable w from Container: localhost.");
    vg_session_free(s2);
    vg_saver_free(wsaver);
    vg_session_free(s);
    vg_saver_free(back.saver);
    vg_graph_free(back.g);
    tu_rmrf(dir);
}

/* A MonitoredTrainingSession over resource variables: initialized by the scaffold
 * (its ready op asks VarIsInitializedOp), checkpointed at the end, restored by the
 * next session. */
static vg_graph *build_mts_graph(vg_output *w_val, vg_op **train) {
    vg_graph *g = vg_graph_new();
    vg_resource_variable w = vg_resource_variable_new_init(g, "w", VG_FLOAT, (int64_t[]){2}, 1, vg_init_ones(),
                                                           VG_VAR_TRAINABLE);
    vg_output loss = vg_reduce_sum(g, vg_mul(g, w.value, w.value, NULL), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_adam(0.1, 0.9, 0.999, 1e-8);
    *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_get_or_create_global_step(g), NULL);
    vg_optimizer_free(opt);
    *w_val = w.value;
    return g;
}

static void test_rvt__monitored_training_session(void) {
    vg_status st;
    char dir[256];
    tu_mkdtemp(dir, sizeof dir, "rvmts");
    float after[2] = {0, 0};
    for (int round = 0; round < 2; round++) {
        vg_output w_val;
        vg_op *train;
        vg_graph *g = build_mts_graph(&w_val, &train);
        CHECK(train != NULL);
        vg_mts_options o = {0};
        o.checkpoint_dir = dir;
        o.no_step_counter = true;
        o.no_summaries = true;
        vg_monitored_session *ms = vg_monitored_training_session_new(g, &o, &st);
        CHECK(ms != NULL);
        if (!ms) {
            fprintf(stderr, "mts: %s\n", st.msg);
            vg_graph_free(g);
            break;
        }
        vg_run_args a = {0};
        vg_output gs = vg_get_global_step(g);
        vg_output f[2] = {w_val, gs};
        a.fetches = f;
        a.nfetches = 2;
        vg_tensor *out[2] = {NULL, NULL};
        CHECK_OK(vg_monitored_session_run(ms, &a, out, NULL, &st), &st);
        if (out[0] && out[1]) {
            if (round == 0) {
                CHECK_NEAR(((float *)vg_tensor_data(out[0]))[0], 1, 0); /* ones, as initialized */
                CHECK_EQ_INT(*(int64_t *)vg_tensor_data(out[1]), 0);
            } else { /* restored: the values after round 0's four steps */
                CHECK_NEAR(((float *)vg_tensor_data(out[0]))[0], after[0], 0);
                CHECK_NEAR(((float *)vg_tensor_data(out[0]))[1], after[1], 0);
                CHECK_EQ_INT(*(int64_t *)vg_tensor_data(out[1]), 4);
            }
        }
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        if (round == 0) {
            vg_run_args t = {0};
            t.targets = &train;
            t.ntargets = 1;
            for (int i = 0; i < 4; i++) CHECK_OK(vg_monitored_session_run(ms, &t, NULL, NULL, &st), &st);
            a.nfetches = 1;
            CHECK_OK(vg_monitored_session_run(ms, &a, out, NULL, &st), &st);
            if (out[0]) memcpy(after, vg_tensor_data(out[0]), sizeof after);
            vg_tensor_free(out[0]);
            CHECK(after[0] < 1.0f && after[0] > 0.5f); /* Adam moved it by about 4 * lr */
        }
        CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
        vg_monitored_session_free(ms);
        vg_graph_free(g);
    }
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_rvt__minimize_matches_ref);
    RUN_TEST(test_rvt__adam_beta_powers);
    RUN_TEST(test_rvt__sparse_matches_ref);
    RUN_TEST(test_rvt__mixed_variables);
    RUN_TEST(test_rvt__errors);
    RUN_TEST(test_rvt__apply_copy_on_write);
    RUN_TEST(test_rvt__save_restore);
    RUN_TEST(test_rvt__monitored_training_session);
    TEST_MAIN_END();
}
