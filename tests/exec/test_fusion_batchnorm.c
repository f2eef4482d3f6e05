/* test_fusion_batchnorm.c - the CIFAR ResNet's batch norm under plan-time fusion
 * (src/exec/fuse_ew.c, kernel src/kernels/ew_fused.c), issue 30:
 *   - resnet_model.py's _batch_norm in training mode (tf.nn.moments over N,H,W,
 *     tf.nn.batch_normalization with epsilon 1e-3, assign_moving_average of the mean and
 *     variance with decay 0.9 and zero_debias) on a residual sum, followed by the leaky
 *     ReLU (tf.where) or a plain ReLU: the forward values, every gradient (x, beta, gamma)
 *     and the moving averages match the unfused plan within float32 tolerance at 1 and 2
 *     threads, on the model's channel counts (16 / 32 / 64, batch 8) and odd sizes;
 *   - with the (opt-in) moments rewrite on, the variance is computed in the pass that
 *     sums the mean: one fused node fewer, the SquaredDifference node runs NoOp, values
 *     match the unfused plan and the rewrite off;
 *   - the fused variance against a double reference, including data far from zero
 *     (mean 100, spread 1e-2), where E[x^2] - E[x]^2 would lose every digit;
 *   - gradients against central finite differences on a small case. */
#include "test_util.h"
#include "op_test_util.h"
#include "exec/exec.h"
#include "exec/ewfuse.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

typedef struct bn_graph {
    vg_graph *g;
    vg_output x1, x2, w;           /* x = x1 + x2 (a residual sum, as the model's init_bn reads) */
    vg_output act, mean, var, loss;
    vg_output d[3];                /* d loss / d x1, beta, gamma */
    vg_output mm, mv;              /* the moving averages after the update */
    vg_op *init[3];
} bn_graph;

/* resnet_model.c's batch_norm + relu; leaky: tf.where(x < 0, 0.1 x, x), else Relu. */
/* A float variable of shape cd[1] called name in the current scope, starting at value;
 * trainable unless moving (the moving mean and variance). */
static vg_variable bn_var(vg_graph *g, const char *name, int64_t *cd, double value, bool moving) {
    vg_get_variable_opts o = {0};
    o.dt = VG_FLOAT;
    o.dims = cd;
    o.ndims = 1;
    o.has_init = true;
    o.init = vg_init_constant(value);
    o.not_trainable = moving;
    return vg_get_variable_ex(g, name, &o);
}

/* pk, pb, pg: beta[pk] and gamma[pk] moved by pb and pg (finite differences) */
static void build_p(bn_graph *b, const int64_t xd[4], bool leaky, int pk, double pb, double pg) {
    memset(b, 0, sizeof *b);
    vg_graph *g = b->g = vg_graph_new();
    int64_t C = xd[3], cd[1] = {C};
    b->x1 = vg_placeholder(g, VG_FLOAT, xd, 4, "x1");
    b->x2 = vg_placeholder(g, VG_FLOAT, xd, 4, "x2");
    b->w = vg_placeholder(g, VG_FLOAT, xd, 4, "w");
    vg_output x = vg_add(g, b->x1, b->x2, "add");
    vg_variable_scope_push(g, "bn", NULL);
    vg_variable beta = bn_var(g, "beta", cd, 0.0, false), gamma = bn_var(g, "gamma", cd, 1.0, false);
    vg_nn_moments(g, x, (int32_t[]){0, 1, 2}, 3, false, "moments", &b->mean, &b->var);
    vg_variable mm = bn_var(g, "moving_mean", cd, 0.0, true), mv = bn_var(g, "moving_variance", cd, 1.0, true);
    b->mm = vg_assign_moving_average(g, mm.ref, b->mean, 0.9, true, NULL);
    b->mv = vg_assign_moving_average(g, mv.ref, b->var, 0.9, true, NULL);
    vg_output y = vg_nn_batch_normalization(g, x, b->mean, b->var, beta.read, gamma.read, 0.001, NULL);
    vg_variable_scope_pop(g);
    if (leaky) {
        vg_output lt = vg_less(g, y, vg_const_f32(g, 0.0f, "Less/y"), "Less");
        b->act = vg_select(g, lt, vg_mul(g, vg_const_f32(g, 0.1f, "mul/x"), y, "mul"), y, "leaky_relu");
    } else {
        b->act = vg_relu(g, y, "relu");
    }
    b->loss = vg_reduce_sum(g, vg_mul(g, b->act, b->w, NULL), NULL, -1, false, "loss");
    vg_output wrt[3] = {b->x1, vg_variable_snapshot(beta.var), vg_variable_snapshot(gamma.var)};
    vg_status st;
    CHECK_OK(vg_gradients(g, &b->loss, 1, wrt, 3, NULL, b->d, &st), &st);
    /* beta and gamma away from their initial values */
    double bv[1024], gv[1024];
    for (int k = 0; k < C; k++) bv[k] = 0.1 * (k % 7) - 0.3, gv[k] = 1 + 0.05 * (k % 11);
    if (pk >= 0) bv[pk] += pb, gv[pk] += pg;
    b->init[0] = vg_global_variables_initializer(g);
    b->init[1] = vg_assign(g, gamma.ref, cst(g, VG_FLOAT, cd, 1, gv), true, NULL).op;
    b->init[2] = vg_assign(g, beta.ref, cst(g, VG_FLOAT, cd, 1, bv), true, NULL).op;
}

static void build(bn_graph *b, const int64_t xd[4], bool leaky) { build_p(b, xd, leaky, -1, 0, 0); }

enum { NFETCH = 8 };

/* Runs the fetches {act, mean, var, d x1, d beta, d gamma, moving mean, moving variance}
 * on a fresh session; returns the trace's node stats count of fused nodes, -1 on error.
 * *sqd_noop: the moments' SquaredDifference ran as NoOp. */
static int run_bn(const bn_graph *b, vg_tensor **vals, vg_tensor **outs, int threads, bool fused, bool *sqd_noop) {
    bool old = vg__plan_set_fusion(fused);
    vg_status st;
    vg_session_options so = {.intra_op_threads = threads, .inter_op_threads = threads};
    vg_session *s = vg_session_new(b->g, &so, &st);
    vg_run_options ro = {.trace_level = VG_TRACE_FULL};
    vg_run_metadata *md = vg_run_metadata_new();
    vg_output feeds[3] = {b->x1, b->x2, b->w};
    vg_output fetch[NFETCH] = {b->act, b->mean, b->var, b->d[0], b->d[1], b->d[2], b->mm, b->mv};
    int n = -1;
    for (int i = 0; i < NFETCH; i++) outs[i] = NULL;
    if (sqd_noop) *sqd_noop = false;
    if (s && md) {
        for (int i = 0; i < 3; i++) CHECK_OK(vg_session_run_targets(s, &b->init[i], 1, &st), &st);
        CHECK_OK(vg_session_run(s, &ro, feeds, vals, 3, fetch, outs, NFETCH, NULL, 0, md, &st), &st);
        if (st.code == VG_OK) {
            n = 0;
            for (int i = 0; i < vg_run_metadata_num_nodes(md); i++) {
                const vg_node_stats *ns = vg_run_metadata_node(md, i);
                n += !strcmp(ns->op_type, "_VigilFusedElementwise");
                if (sqd_noop && !strcmp(ns->node_name, "bn/moments/SquaredDifference"))
                    *sqd_noop = !strcmp(ns->op_type, "NoOp");
            }
        }
    }
    vg_run_metadata_free(md);
    vg_session_free(s);
    vg__plan_set_fusion(old);
    return n;
}

static int64_t numel(const int64_t xd[4]) { return xd[0] * xd[1] * xd[2] * xd[3]; }

/* Fused (1 and 2 threads) against unfused; the variance against a double reference. */
static void bn_case(const int64_t xd[4], bool leaky, double lo, double hi) {
    bool env_m = vg__ew_set_moments(true); /* whatever the environment */
    bn_graph b;
    build(&b, xd, leaky);
    int64_t n = numel(xd), C = xd[3];
    double *x1 = kt_randv_range(n, 21, lo, hi), *x2 = kt_randv_range(n, 22, -0.25, 0.25), *wv = kt_randv_range(n, 23, -0.5, 0.5);
    vg_tensor *vals[3] = {mk(VG_FLOAT, xd, 4, x1), mk(VG_FLOAT, xd, 4, x2), mk(VG_FLOAT, xd, 4, wv)};
    vg_tensor *a[NFETCH], *u[NFETCH], *c[NFETCH];
    bool noop = false, noop_u = true;
    int nf = run_bn(&b, vals, a, 1, true, &noop);
    int nu = run_bn(&b, vals, u, 1, false, &noop_u);
    int n2 = run_bn(&b, vals, c, 2, true, NULL);
    bool old = vg__ew_set_moments(false);
    vg_tensor *t[NFETCH];
    int nt = run_bn(&b, vals, t, 1, true, NULL); /* fused, the variance in its own pass */
    vg__ew_set_moments(old);
    CHECK(nf >= 3); /* moments, normalization + activation, gradient chains */
    CHECK_EQ_INT(nu, 0);
    CHECK_EQ_INT(n2, nf);
    CHECK(noop);
    CHECK(!noop_u);
    CHECK_EQ_INT(nt, nf + 1); /* the variance read x in the mean's pass: one fused node fewer */
    for (int i = 0; i < NFETCH; i++) {
        CHECK(a[i] && u[i] && c[i]);
        if (!a[i] || !u[i] || !c[i]) continue;
        CHECK_EQ_INT(vg_tensor_num_elements(a[i]), vg_tensor_num_elements(u[i]));
        double tol = i == 4 || i == 5 ? 2e-4 * sqrt((double)n / C) : 2e-4; /* sums over N*H*W */
        double d1 = tu_rel_diff(a[i], u[i]), d2 = tu_rel_diff(c[i], u[i]);
        CHECK(t[i] && tu_rel_diff(t[i], u[i]) < tol);
        if (!(d1 < tol) || !(d2 < tol)) fprintf(stderr, "  fetch %d: fused %g, 2 threads %g (tol %g)\n", i, d1, d2, tol);
        CHECK(d1 < tol);
        CHECK(d2 < tol);
    }
    /* the biased variance in double */
    for (int64_t k = 0; a[2] && k < C; k++) {
        double s = 0, q = 0;
        int64_t m = n / C;
        for (int64_t i = k; i < n; i += C) s += (double)((float)x1[i] + (float)x2[i]);
        s /= (double)m;
        for (int64_t i = k; i < n; i += C) {
            double d = (double)((float)x1[i] + (float)x2[i]) - s;
            q += d * d;
        }
        q /= (double)m;
        CHECK_NEAR(get(a[2], k), q, 2e-5 * q + 1e-9);
    }
    for (int i = 0; i < NFETCH; i++) vg_tensor_free(a[i]), vg_tensor_free(u[i]), vg_tensor_free(c[i]), vg_tensor_free(t[i]);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    free(x1), free(x2), free(wv);
    vg_graph_free(b.g);
    vg__ew_set_moments(env_m);
}

static void test_bn__resnet_shapes(void) {
    bn_case((int64_t[]){8, 32, 32, 16}, true, -1, 2); /* stage 1 */
    bn_case((int64_t[]){8, 16, 16, 32}, true, -1, 2); /* stage 2 */
    bn_case((int64_t[]){8, 8, 8, 64}, true, -1, 2);   /* stage 3 */
    bn_case((int64_t[]){8, 8, 8, 64}, false, -1, 2);  /* plain ReLU */
    bn_case((int64_t[]){8, 16, 16, 32}, false, -1, 2);
}

static void test_bn__odd_sizes(void) {
    bn_case((int64_t[]){3, 5, 7, 13}, true, -1, 2);   /* partial tiles, odd channels */
    bn_case((int64_t[]){1, 1, 3, 5}, true, -1, 2);    /* fewer values than a tile */
    bn_case((int64_t[]){5, 9, 11, 3}, false, -1, 2);  /* many short rows */
    bn_case((int64_t[]){2, 3, 3, 600}, true, -1, 2);  /* rows longer than a tile */
    bn_case((int64_t[]){7, 13, 17, 16}, true, -1, 2); /* a partial last piece */
}

/* Far from zero: mean ~100, spread 1e-2; the one-pass variance keeps its digits. */
static void test_bn__offset_data(void) {
    bn_case((int64_t[]){8, 8, 8, 16}, true, 100.0, 100.01);
}

/* Central differences of the loss (fused plan) wrt x1, beta and gamma. */
static double loss_at(const int64_t xd[4], bool leaky, int pk, double pb, double pg, vg_tensor **vals) {
    bn_graph b;
    build_p(&b, xd, leaky, pk, pb, pg);
    vg_status st;
    vg_session *s = vg_session_new(b.g, NULL, &st);
    double l = NAN;
    vg_output feeds[3] = {b.x1, b.x2, b.w};
    vg_tensor *o = NULL;
    if (s) {
        for (int i = 0; i < 3; i++) CHECK_OK(vg_session_run_targets(s, &b.init[i], 1, &st), &st);
        CHECK_OK(vg_session_run(s, NULL, feeds, vals, 3, &b.loss, &o, 1, NULL, 0, NULL, &st), &st);
        if (o) l = get(o, 0);
    }
    vg_tensor_free(o);
    vg_session_free(s);
    vg_graph_free(b.g);
    return l;
}

static void fd_case(bool leaky) {
    const int64_t xd[4] = {2, 3, 3, 4};
    int64_t n = numel(xd);
    bn_graph b;
    build(&b, xd, leaky);
    double *x1 = kt_randv_range(n, 31, -1, 2), *x2 = kt_randv_range(n, 32, -0.25, 0.25), *wv = kt_randv_range(n, 33, -1, 1);
    vg_tensor *vals[3] = {mk(VG_FLOAT, xd, 4, x1), mk(VG_FLOAT, xd, 4, x2), mk(VG_FLOAT, xd, 4, wv)};
    vg_tensor *a[NFETCH];
    bool noop = false;
    CHECK(run_bn(&b, vals, a, 1, true, &noop) >= 3);
    CHECK(noop);
    const double h = 3e-3;
    for (int64_t i = 0; a[3] && i < n; i += 5) { /* d loss / d x1 */
        float *xp = vg_tensor_data(vals[0]);
        float keep = xp[i];
        xp[i] = keep + (float)h;
        double lp = loss_at(xd, leaky, -1, 0, 0, vals);
        xp[i] = keep - (float)h;
        double lm = loss_at(xd, leaky, -1, 0, 0, vals);
        xp[i] = keep;
        CHECK_NEAR(get(a[3], i), (lp - lm) / (2 * h), 3e-3 + 3e-3 * fabs(get(a[3], i)));
    }
    for (int k = 0; a[4] && a[5] && k < xd[3]; k++) { /* beta, gamma */
        double gb = (loss_at(xd, leaky, k, h, 0, vals) - loss_at(xd, leaky, k, -h, 0, vals)) / (2 * h);
        double gg = (loss_at(xd, leaky, k, 0, h, vals) - loss_at(xd, leaky, k, 0, -h, vals)) / (2 * h);
        CHECK_NEAR(get(a[4], k), gb, 3e-3 + 3e-3 * fabs(gb));
        CHECK_NEAR(get(a[5], k), gg, 3e-3 + 3e-3 * fabs(gg));
    }
    for (int i = 0; i < NFETCH; i++) vg_tensor_free(a[i]);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    free(x1), free(x2), free(wv);
    vg_graph_free(b.g);
}

static void test_bn__finite_differences(void) {
    fd_case(true);
    fd_case(false);
}

int main(void) {
    RUN_TEST(test_bn__resnet_shapes);
    RUN_TEST(test_bn__odd_sizes);
    RUN_TEST(test_bn__offset_data);
    RUN_TEST(test_bn__finite_differences);
    TEST_MAIN_END();
}
