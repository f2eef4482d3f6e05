/* test_optimizer_apply_ops.c - ApplyGradientDescent, ApplyMomentum (+Nesterov),
 * ApplyAdam (+Nesterov), ApplyRMSProp: two steps against the formulas evaluated in
 * double here, float32 and float64, a large tensor (split over threads), the AVX-512
 * float32 Adam loop against the SSE/scalar one (the same bits), and the error paths (uninitialized slot, shape and dtype mismatches, non-scalar lr). */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "kernels/nn/nn_internal.h"
#include "vigil/vigil.h"

#define N 6 /* float32 Adam/RMSProp: 4 lanes of SSE + a scalar tail */

/* A Const of dtype dt from doubles (shape [n], or scalar when n < 0). */
static vg_output cval(vg_graph *g, vg_dtype dt, const double *v, int n, const char *name) {
    float f[16];
    int64_t dim = n;
    if (dt == VG_DOUBLE) return n < 0 ? vg_const_f64(g, v[0], name) : vg_const_array(g, dt, &dim, 1, v, name);
    for (int i = 0; i < (n < 0 ? 1 : n); i++) f[i] = (float)v[i];
    return n < 0 ? vg_const_f32(g, f[0], name) : vg_const_array(g, dt, &dim, 1, f, name);
}
static vg_output scal(vg_graph *g, vg_dtype dt, double v, const char *name) { return cval(g, dt, &v, -1, name); }

typedef struct var_t {
    vg_output ref;
    vg_op *init;
} var_t;

static var_t make_var(vg_graph *g, vg_dtype dt, const double *v, const char *name) {
    var_t r;
    char buf[64];
    r.ref = vg_variable_op(g, dt, (int64_t[]){N}, 1, name);
    snprintf(buf, sizeof buf, "%s_init", name);
    r.init = vg_assign(g, r.ref, cval(g, dt, v, N, "c"), true, buf).op;
    return r;
}

static double getd(const vg_tensor *t, int i) {
    return vg_tensor_dtype(t) == VG_DOUBLE ? ((const double *)vg_tensor_data(t))[i]
                                           : ((const float *)vg_tensor_data(t))[i];
}

/* Runs init ops, then `step` twice; compares the fetched vars with want[k][i]. */
static void run_and_check(vg_graph *g, vg_op **inits, int ninit, vg_output step, const vg_output *reads,
                          double want[][N], int nreads, double tol) {
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) return;
    CHECK_OK(vg_session_run_targets(s, inits, ninit, &st), &st);
    for (int k = 0; k < 2; k++) {
        vg_tensor *out = NULL;
        CHECK_OK(vg_session_run1(s, step, &out, &st), &st);
        vg_tensor_free(out);
    }
    for (int r = 0; r < nreads; r++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, reads[r], &t, &st), &st);
        if (!t) continue;
        for (int i = 0; i < N; i++) CHECK_NEAR(getd(t, i), want[r][i], tol);
        vg_tensor_free(t);
    }
    vg_session_free(s);
}

/* run_and_check over the variables vars[n] (at most 3): their initializers, and each
 * read through an Identity named read_names[k]. */
static void run_and_check_vars(vg_graph *g, const var_t *vars, const char *const *read_names, int n, vg_output step,
                               double want[][N], double tol) {
    vg_op *inits[3];
    vg_output reads[3];
    for (int k = 0; k < n && k < 3; k++) {
        inits[k] = vars[k].init;
        reads[k] = vg_identity(g, vars[k].ref, read_names[k]);
    }
    run_and_check(g, inits, n, step, reads, want, n, tol);
}

static const double W0[N] = {1.0, -2.0, 0.5, 0.0, 3.0, -0.25};
static const double G[N] = {0.1, -0.3, 0.7, 0.0, -1.5, 0.05};

static void check_gd(vg_dtype dt) {
    vg_graph *g = vg_graph_new();
    var_t w = make_var(g, dt, W0, "w");
    vg_output step = vg_apply_gradient_descent(g, w.ref, scal(g, dt, 0.5, "lr"), cval(g, dt, G, N, "g"), false, NULL);
    CHECK(strcmp(vg_op_name(step.op), "ApplyGradientDescent") == 0);
    vg_dtype t;
    CHECK(vg_op_attr_type_(step.op, "T", &t) && t == dt);
    double want[1][N];
    for (int i = 0; i < N; i++) want[0][i] = W0[i] - 2 * 0.5 * G[i];
    vg_output reads[1] = {vg_identity(g, w.ref, "r")};
    run_and_check(g, &w.init, 1, step, reads, want, 1, dt == VG_FLOAT ? 1e-6 : 1e-12);
    vg_graph_free(g);
}

static void test_apply__gradient_descent(void) {
    check_gd(VG_FLOAT);
    check_gd(VG_DOUBLE);
}

static void check_momentum(vg_dtype dt, bool nesterov) {
    vg_graph *g = vg_graph_new();
    const double A0[N] = {0.2, 0.0, -0.1, 0.3, 0.0, 1.0}, lr = 0.1, mom = 0.9;
    var_t w = make_var(g, dt, W0, "w"), a = make_var(g, dt, A0, "a");
    vg_output step = vg_apply_momentum(g, w.ref, a.ref, scal(g, dt, lr, "lr"), cval(g, dt, G, N, "g"),
                                       scal(g, dt, mom, "m"), false, nesterov, NULL);
    bool b = !nesterov;
    CHECK(vg_op_attr_bool(step.op, "use_nesterov", &b) && b == nesterov);
    double want[2][N];
    for (int i = 0; i < N; i++) {
        double wv = W0[i], av = A0[i];
        for (int k = 0; k < 2; k++) {
            av = av * mom + G[i];
            wv -= nesterov ? G[i] * lr + av * mom * lr : lr * av;
        }
        want[0][i] = wv;
        want[1][i] = av;
    }
    run_and_check_vars(g, (var_t[]){w, a}, (const char *[]){"rw", "ra"}, 2, step, want, dt == VG_FLOAT ? 1e-6 : 1e-12);
    vg_graph_free(g);
}

static void test_apply__momentum(void) {
    check_momentum(VG_FLOAT, false);
    check_momentum(VG_DOUBLE, false);
    check_momentum(VG_FLOAT, true);
    check_momentum(VG_DOUBLE, true);
}

static void check_adam(vg_dtype dt, bool nesterov) {
    vg_graph *g = vg_graph_new();
    const double M0[N] = {0.0, 0.1, -0.2, 0.0, 0.5, -0.1}, V0[N] = {0.0, 0.01, 0.04, 0.0, 0.2, 0.3};
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 0.01, b1p = 0.9 * 0.9, b2p = 0.999 * 0.999;
    var_t w = make_var(g, dt, W0, "w"), m = make_var(g, dt, M0, "m"), v = make_var(g, dt, V0, "v");
    /* beta powers are inputs here: the same values on both steps */
    vg_output step = vg_apply_adam(g, w.ref, m.ref, v.ref, scal(g, dt, b1p, "b1p"), scal(g, dt, b2p, "b2p"),
                                   scal(g, dt, lr, "lr"), scal(g, dt, b1, "b1"), scal(g, dt, b2, "b2"),
                                   scal(g, dt, eps, "eps"), cval(g, dt, G, N, "g"), false, nesterov, NULL);
    double want[3][N];
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
    for (int i = 0; i < N; i++) {
        double wv = W0[i], mv = M0[i], vv = V0[i];
        for (int k = 0; k < 2; k++) {
            mv += (G[i] - mv) * (1 - b1);
            vv += (G[i] * G[i] - vv) * (1 - b2);
            if (nesterov) wv -= lr_t * (G[i] * (1 - b1) + b1 * mv) / (sqrt(vv) + eps);
            else wv -= lr_t * mv / (sqrt(vv) + eps);
        }
        want[0][i] = wv;
        want[1][i] = mv;
        want[2][i] = vv;
    }
    run_and_check_vars(g, (var_t[]){w, m, v}, (const char *[]){"rw", "rm", "rv"}, 3, step, want,
                       dt == VG_FLOAT ? 2e-6 : 1e-12);
    vg_graph_free(g);
}

static void test_apply__adam(void) {
    check_adam(VG_FLOAT, false);
    check_adam(VG_DOUBLE, false);
    check_adam(VG_FLOAT, true);
    check_adam(VG_DOUBLE, true);
}

static void check_rmsprop(vg_dtype dt) {
    vg_graph *g = vg_graph_new();
    const double MS0[N] = {1.0, 1.0, 0.5, 1.0, 2.0, 0.1}, MO0[N] = {0.0, 0.2, -0.1, 0.0, 0.3, 0.0};
    const double lr = 0.01, rho = 0.9, momentum = 0.5, eps = 0.1; /* big enough to matter */
    var_t w = make_var(g, dt, W0, "w"), ms = make_var(g, dt, MS0, "ms"), mo = make_var(g, dt, MO0, "mom");
    vg_output step = vg_apply_rms_prop(g, w.ref, ms.ref, mo.ref, scal(g, dt, lr, "lr"), scal(g, dt, rho, "rho"),
                                       scal(g, dt, momentum, "momentum"), scal(g, dt, eps, "eps"),
                                       cval(g, dt, G, N, "g"), false, NULL);
    CHECK(strcmp(vg_op_type(step.op), "ApplyRMSProp") == 0);
    double want[3][N];
    for (int i = 0; i < N; i++) {
        double wv = W0[i], msv = MS0[i], mov = MO0[i];
        for (int k = 0; k < 2; k++) {
            msv = rho * msv + (1 - rho) * G[i] * G[i];
            mov = momentum * mov + lr * G[i] / sqrt(msv + eps);
            wv -= mov;
        }
        want[0][i] = wv;
        want[1][i] = msv;
        want[2][i] = mov;
    }
    run_and_check_vars(g, (var_t[]){w, ms, mo}, (const char *[]){"rw", "rms", "rmo"}, 3, step, want,
                       dt == VG_FLOAT ? 1e-6 : 1e-12);
    vg_graph_free(g);
}

static void test_apply__rmsprop(void) {
    check_rmsprop(VG_FLOAT);
    check_rmsprop(VG_DOUBLE);
}

/* 784x256 weights: the update is split over the intra-op threads. */
static void test_apply__large_adam(void) {
    vg_graph *g = vg_graph_new();
    int64_t dims[2] = {784, 256}, n = 784 * 256;
    vg_status st;
    vg_tensor *gt = vg_tensor_new(VG_FLOAT, dims, 2, &st);
    float *gd = vg_tensor_data(gt);
    for (int64_t i = 0; i < n; i++) gd[i] = (float)((i % 97) - 48) / 48.0f;
    vg_output w = vg_variable_op(g, VG_FLOAT, dims, 2, "w");
    vg_output m = vg_variable_op(g, VG_FLOAT, dims, 2, "m");
    vg_output v = vg_variable_op(g, VG_FLOAT, dims, 2, "v");
    vg_op *inits[3] = {vg_assign(g, w, vg_const_fill(g, VG_FLOAT, dims, 2, 1.0, "one"), true, NULL).op,
                       vg_assign(g, m, vg_const_fill(g, VG_FLOAT, dims, 2, 0.0, "z1"), true, NULL).op,
                       vg_assign(g, v, vg_const_fill(g, VG_FLOAT, dims, 2, 0.0, "z2"), true, NULL).op};
    vg_output step = vg_apply_adam(g, w, m, v, vg_const_f32(g, 0.9f, "b1p"), vg_const_f32(g, 0.999f, "b2p"),
                                   vg_const_f32(g, 0.001f, "lr"), vg_const_f32(g, 0.9f, "b1"),
                                   vg_const_f32(g, 0.999f, "b2"), vg_const_f32(g, 1e-8f, "eps"), vg_const(g, gt, "g"),
                                   false, false, NULL);
    vg_tensor_free(gt);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, inits, 3, &st), &st);
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run1(s, step, &out, &st), &st);
    if (out) {
        const float *o = vg_tensor_data(out);
        double lr_t = 0.001 * sqrt(1 - (double)0.999f) / (1 - (double)0.9f);
        int bad = 0;
        for (int64_t i = 0; i < n; i += 997) {
            double gi = (double)((i % 97) - 48) / 48.0;
            double mi = 0.1 * gi, vi = 0.001 * gi * gi;
            double want = 1.0 - lr_t * mi / (sqrt(vi) + 1e-8);
            if (fabs(o[i] - want) > 1e-5) bad++;
        }
        CHECK_EQ_INT(bad, 0);
    }
    vg_tensor_free(out);
    free_session_graph(s, g);
}

static void test_apply__errors(void) {
    vg_status st;
    /* uninitialized slot: FAILED_PRECONDITION naming it */
    vg_graph *g = vg_graph_new();
    var_t w = make_var(g, VG_FLOAT, W0, "w");
    vg_output acc = vg_variable_op(g, VG_FLOAT, (int64_t[]){N}, 1, "w/Momentum");
    vg_output step = vg_apply_momentum(g, w.ref, acc, vg_const_f32(g, 0.1f, "lr"), cval(g, VG_FLOAT, G, N, "g"),
                                       vg_const_f32(g, 0.9f, "m"), false, false, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &w.init, 1, &st), &st);
    vg_tensor *out = NULL;
    CHECK_STATUS(vg_session_run1(s, step, &out, &st), &st, VG_FAILED_PRECONDITION,
                 "Attempting to use uninitialized value w/Momentum");
    free_session_graph(s, g);

    /* build time: dtype, shape and scalar checks */
    g = vg_graph_new();
    w = make_var(g, VG_FLOAT, W0, "w");
    step = vg_apply_gradient_descent(g, w.ref, vg_const_f64(g, 0.1, "lr"), cval(g, VG_FLOAT, G, N, "g"), false, NULL);
    CHECK(step.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Input 'alpha' of 'ApplyGradientDescent' Op has type double");
    vg_graph_free(g);

    g = vg_graph_new();
    w = make_var(g, VG_FLOAT, W0, "w");
    step = vg_apply_gradient_descent(g, w.ref, cval(g, VG_FLOAT, G, N, "lr"), cval(g, VG_FLOAT, G, N, "g"), false,
                                     NULL);
    CHECK(step.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "rank 0");
    vg_graph_free(g);

    g = vg_graph_new();
    w = make_var(g, VG_FLOAT, W0, "w");
    float two[2] = {1, 2};
    step = vg_apply_gradient_descent(g, w.ref, vg_const_f32(g, 0.1f, "lr"),
                                     vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, two, "g"), false, NULL);
    CHECK(step.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "ApplyGradientDescent");
    vg_graph_free(g);

    /* int variables are rejected */
    g = vg_graph_new();
    vg_output iv = vg_variable_op(g, VG_INT32, (int64_t[]){1}, 1, "iv");
    int32_t one = 1;
    step = vg_apply_gradient_descent(g, iv, vg_const_i32(g, 1, "lr"),
                                     vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &one, "g"), false, NULL);
    CHECK(step.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);

    /* run time: grad of another shape (unknown at build time), lr not a scalar */
    g = vg_graph_new();
    w = make_var(g, VG_FLOAT, W0, "w");
    vg_output pg = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "pg");
    vg_output plr = vg_placeholder(g, VG_FLOAT, NULL, -1, "plr");
    step = vg_apply_gradient_descent(g, w.ref, plr, pg, false, NULL);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &w.init, 1, &st), &st);
    vg_tensor *gbad = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){2}, 1, two, 8, &st);
    vg_tensor *gok = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){N}, 1, (float[]){1, 2, 3, 4, 5, 6}, sizeof(float) * N, &st);
    vg_tensor *lr = vg_tensor_new_scalar_f32(0.1f, &st);
    vg_tensor *lrbad = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){2}, 1, two, 8, &st);
    vg_output feeds[2] = {pg, plr};
    vg_tensor *v1[2] = {gbad, lr}, *v2[2] = {gok, lrbad}, *v3[2] = {gok, lr};
    CHECK_STATUS(vg_session_run(s, NULL, feeds, v1, 2, &step, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "var and delta do not have the same shape");
    CHECK_STATUS(vg_session_run(s, NULL, feeds, v2, 2, &step, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "alpha is not a scalar: [2]");
    CHECK_OK(vg_session_run(s, NULL, feeds, v3, 2, &step, &out, 1, NULL, 0, NULL, &st), &st);
    if (out) CHECK_NEAR(((float *)vg_tensor_data(out))[1], -2.0 - 0.2, 1e-6);
    vg_tensor_free(out);
    vg_tensor_free(gbad);
    vg_tensor_free(gok);
    vg_tensor_free(lr);
    vg_tensor_free(lrbad);
    free_session_graph(s, g);
}

/* The same variable as var and slot: distinct-slot locking must not deadlock. */
static void test_apply__aliased_slots(void) {
    vg_graph *g = vg_graph_new();
    var_t w = make_var(g, VG_FLOAT, W0, "w");
    vg_output step = vg_apply_momentum(g, w.ref, w.ref, vg_const_f32(g, 0.0f, "lr"), cval(g, VG_FLOAT, G, N, "g"),
                                       vg_const_f32(g, 1.0f, "m"), false, false, NULL);
    double want[1][N];
    for (int i = 0; i < N; i++) want[0][i] = W0[i] + 2 * G[i];
    vg_output reads[1] = {vg_identity(g, w.ref, "r")};
    run_and_check(g, &w.init, 1, step, reads, want, 1, 1e-6);
    vg_graph_free(g);
}

/* Two float32 Adam steps (plain and Nesterov) on 1000 + 13 elements (AVX-512 groups
 * of 16, SSE groups of 4 and a scalar tail) with the AVX-512 loop on and off: the
 * variables and both slots come out bit for bit the same, and the update moved them. */
static void adam_run(bool nesterov, float *out, int64_t n) {
    vg_graph *g = vg_graph_new();
    int64_t dims[1] = {n};
    vg_status st;
    vg_tensor *gt = vg_tensor_new(VG_FLOAT, dims, 1, &st), *w0 = vg_tensor_new(VG_FLOAT, dims, 1, &st);
    float *gd = vg_tensor_data(gt), *wd = vg_tensor_data(w0);
    unsigned r = 12345;
    for (int64_t i = 0; i < n; i++) {
        r = r * 1103515245u + 12345u;
        gd[i] = (float)((r >> 9) % 20001) / 10000.0f - 1.0f;
        wd[i] = (float)(i % 13) / 7.0f - 0.9f;
    }
    vg_output w = vg_variable_op(g, VG_FLOAT, dims, 1, "w");
    vg_output m = vg_variable_op(g, VG_FLOAT, dims, 1, "m");
    vg_output v = vg_variable_op(g, VG_FLOAT, dims, 1, "v");
    vg_op *inits[3] = {vg_assign(g, w, vg_const(g, w0, "w0"), true, NULL).op,
                       vg_assign(g, m, vg_const_fill(g, VG_FLOAT, dims, 1, 0.0, "z1"), true, NULL).op,
                       vg_assign(g, v, vg_const_fill(g, VG_FLOAT, dims, 1, 0.0, "z2"), true, NULL).op};
    vg_output step = vg_apply_adam(g, w, m, v, vg_const_f32(g, 0.9f, "b1p"), vg_const_f32(g, 0.999f, "b2p"),
                                   vg_const_f32(g, 0.01f, "lr"), vg_const_f32(g, 0.9f, "b1"),
                                   vg_const_f32(g, 0.999f, "b2"), vg_const_f32(g, 1e-8f, "eps"), vg_const(g, gt, "g"),
                                   false, nesterov, NULL);
    vg_tensor_free(gt);
    vg_tensor_free(w0);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, inits, 3, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &step.op, 1, &st), &st);
    vg_output fetch[3] = {step, m, v};
    vg_tensor *outs[3] = {NULL, NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fetch, outs, 3, NULL, 0, NULL, &st), &st);
    for (int k = 0; k < 3; k++)
        if (outs[k]) memcpy(out + k * n, vg_tensor_data(outs[k]), sizeof(float) * (size_t)n);
    for (int k = 0; k < 3; k++) vg_tensor_free(outs[k]);
    free_session_graph(s, g);
}

static void test_apply__adam_avx512_same_bits(void) {
    const int64_t n = 1013;
    float *a = calloc(3 * (size_t)n, sizeof(float)), *b = calloc(3 * (size_t)n, sizeof(float));
    for (int nest = 0; nest < 2; nest++) {
        int on = vg__adam_set_simd(1);
        adam_run(nest, a, n);
        vg__adam_set_simd(0);
        adam_run(nest, b, n);
        vg__adam_set_simd(1);
        if (!on) fprintf(stderr, "note: no AVX-512 here, both runs took the SSE loop\n");
        CHECK(memcmp(a, b, sizeof(float) * 3 * (size_t)n) == 0);
        int moved = 0;
        for (int64_t i = 0; i < n; i++) moved += a[i] != (float)(i % 13) / 7.0f - 0.9f;
        CHECK(moved > n / 2);
    }
    free(a);
    free(b);
}

int main(void) {
    RUN_TEST(test_apply__gradient_descent);
    RUN_TEST(test_apply__momentum);
    RUN_TEST(test_apply__adam);
    RUN_TEST(test_apply__rmsprop);
    RUN_TEST(test_apply__large_adam);
    RUN_TEST(test_apply__adam_avx512_same_bits);
    RUN_TEST(test_apply__errors);
    RUN_TEST(test_apply__aliased_slots);
    TEST_MAIN_END();
}
