/* test_fusion_elementwise.c - plan-time fusion of element-wise chains
 * (src/exec/fuse_ew.c, kernel _VigilFusedElementwise in src/kernels/ew_fused.c):
 *   - the CIFAR ResNet's hand-written batch norm (tf.nn.moments +
 *     tf.nn.batch_normalization) and leaky ReLU (tf.where), forward and gradients, match
 *     the unfused plan, and the trace shows fused nodes;
 *   - element-wise values are the separate kernels' bit for bit (NaN included), with
 *     scalar, per-channel and bool inputs, AddN, ZerosLike / OnesLike, Tile broadcasts,
 *     Relu / ReluGrad;
 *   - per-channel reductions fused into a chain match a double reference and are the
 *     same bits at 1 and 2 threads;
 *   - layer norm (tf.contrib.layers.layer_norm: row moments, per-row inputs, row sums in
 *     its gradients) matches the unfused plan, forward and gradients; row inputs and
 *     last-axis Sum / Mean (keep_dims either way) match a double reference, the same bits
 *     at 1 and 2 threads; a cluster whose last dimension is 1 takes [R, 1] as full;
 *   - a member value fetched or read outside stays available; a chain whose value
 *     leaves and comes back (a + transpose(a)) runs without a cycle; fed values and nodes
 *     with control edges are left alone. */
#include "test_util.h"
#include "op_test_util.h"
#include "exec/exec.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static int nfused_in(vg_run_metadata *md) {
    int n = 0;
    for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
        n += !strcmp(vg_run_metadata_node(md, i)->op_type, "_VigilFusedElementwise");
    return n;
}

/* Runs the ninit init targets, then fetches, on a fresh session with threads intra / inter
 * op threads and fusion on or off; returns the number of fused nodes that ran, -1 on error. */
static int run_ln(vg_graph *g, vg_op *const *init, int ninit, const vg_output *feeds, vg_tensor **vals, int nfeeds,
                  const vg_output *fetch, int nfetch, vg_tensor **outs, int threads, bool fused) {
    bool old = vg__plan_set_fusion(fused);
    vg_status st;
    vg_session_options so = {0};
    so.intra_op_threads = threads;
    so.inter_op_threads = threads;
    vg_session *s = vg_session_new(g, &so, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int n = -1;
    for (int i = 0; i < nfetch; i++) outs[i] = NULL;
    if (s && md) {
        for (int i = 0; i < ninit; i++) CHECK_OK(vg_session_run_targets(s, &init[i], 1, &st), &st);
        CHECK_OK(vg_session_run(s, &ro, feeds, vals, nfeeds, fetch, outs, nfetch, NULL, 0, md, &st), &st);
        if (st.code == VG_OK) n = nfused_in(md);
    }
    vg_run_metadata_free(md);
    vg_session_free(s);
    vg__plan_set_fusion(old);
    return n;
}

/* run_ln without init targets */
static int run_g(vg_graph *g, const vg_output *feeds, vg_tensor **vals, int nfeeds, const vg_output *fetch, int nfetch,
                 vg_tensor **outs, int threads, bool fused) {
    return run_ln(g, NULL, 0, feeds, vals, nfeeds, fetch, nfetch, outs, threads, fused);
}

static bool same_bits(const vg_tensor *a, const vg_tensor *b) {
    return a && b && vg_tensor_dtype(a) == vg_tensor_dtype(b) && vg_tensor_nbytes(a) == vg_tensor_nbytes(b) &&
           !memcmp(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_nbytes(a));
}

static double rel_diff(const vg_tensor *a, const vg_tensor *b) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(a); i++) {
        double d = fabs(get(a, i) - get(b, i));
        if (d > m) m = d;
        if (fabs(get(b, i)) > s) s = fabs(get(b, i));
    }
    return m / (1.0 + s);
}

/* Runs fetch (at most 8) fused with 1 thread (a), unfused (b) and fused with 2 threads (c):
 * at least min_fused fused nodes ran, as many with 2 threads, none unfused; a within 2e-4
 * of b; c the same bits as a when bitwise, else within 2e-4 of b. */
static void fused_vs_unfused(vg_graph *g, vg_op *const *init, int ninit, const vg_output *feeds, vg_tensor **vals,
                             int nfeeds, const vg_output *fetch, int nfetch, int min_fused, bool bitwise) {
    vg_tensor *a[8], *b[8], *c[8];
    int nf = run_ln(g, init, ninit, feeds, vals, nfeeds, fetch, nfetch, a, 1, true);
    int nu = run_ln(g, init, ninit, feeds, vals, nfeeds, fetch, nfetch, b, 1, false);
    int n2 = run_ln(g, init, ninit, feeds, vals, nfeeds, fetch, nfetch, c, 2, true);
    CHECK(nf >= min_fused);
    CHECK_EQ_INT(nu, 0);
    CHECK_EQ_INT(n2, nf);
    for (int i = 0; i < nfetch; i++) {
        CHECK(a[i] && b[i] && c[i]);
        if (!a[i] || !b[i] || !c[i]) continue;
        CHECK_EQ_INT(vg_tensor_num_elements(a[i]), vg_tensor_num_elements(b[i]));
        CHECK(rel_diff(a[i], b[i]) < 2e-4);
        if (bitwise) CHECK(same_bits(a[i], c[i]));
        else CHECK(rel_diff(c[i], b[i]) < 2e-4);
    }
    for (int i = 0; i < nfetch; i++) vg_tensor_free(a[i]), vg_tensor_free(b[i]), vg_tensor_free(c[i]);
}

/* resnet_model.py's _batch_norm (training) and _relu(x, 0.1), a weighted sum as loss. */
static void bn_case(const int64_t xd[4]) {
    vg_graph *g = vg_graph_new();
    int64_t C = xd[3], cd[1] = {C}, n = xd[0] * xd[1] * xd[2] * xd[3];
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x"), w = vg_placeholder(g, VG_FLOAT, xd, 4, "w");
    vg_output beta = vg_placeholder(g, VG_FLOAT, cd, 1, "beta"), gamma = vg_placeholder(g, VG_FLOAT, cd, 1, "gamma");
    vg_output mean, var;
    vg_nn_moments(g, x, (int32_t[]){0, 1, 2}, 3, false, "moments", &mean, &var);
    vg_output y = vg_nn_batch_normalization(g, x, mean, var, beta, gamma, 0.001, NULL);
    vg_output lt = vg_less(g, y, vg_const_f32(g, 0.0f, NULL), NULL);
    vg_output r = vg_select(g, lt, vg_mul(g, vg_const_f32(g, 0.1f, NULL), y, NULL), y, "leaky_relu");
    vg_output L = vg_reduce_sum(g, vg_mul(g, r, w, NULL), NULL, -1, false, "loss");
    vg_output wrt[3] = {x, beta, gamma}, d[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, wrt, 3, NULL, d, &st), &st);
    double *xv = kt_randv_range(n, 5, -1, 2), *wv = kt_randv_range(n, 6, -0.5, 0.5), bv[64], gv[64];
    for (int k = 0; k < C; k++) bv[k] = 0.1 * k - 0.3, gv[k] = 1 + 0.05 * k;
    vg_tensor *vals[4] = {mk(VG_FLOAT, xd, 4, xv), mk(VG_FLOAT, xd, 4, wv), mk(VG_FLOAT, cd, 1, bv),
                          mk(VG_FLOAT, cd, 1, gv)};
    vg_output feeds[4] = {x, w, beta, gamma}, fetch[6] = {r, d[0], d[1], d[2], var, lt};
    fused_vs_unfused(g, NULL, 0, feeds, vals, 4, fetch, 6, 3 /* forward chain, variance, gradient chains */, false);
    for (int i = 0; i < 4; i++) vg_tensor_free(vals[i]);
    free(xv), free(wv);
    vg_graph_free(g);
}

static void test_ew__resnet_batch_norm(void) {
    bn_case((int64_t[]){4, 5, 6, 8});     /* one partial tile */
    bn_case((int64_t[]){16, 16, 16, 16}); /* many tiles and reduction pieces */
    bn_case((int64_t[]){3, 3, 3, 64});    /* a channel count that fills a tile */
}

/* Element-wise values bit for bit against the separate kernels. */
static void test_ew__values_bitwise(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[3] = {3, 7, 5}, cd[1] = {5}, c3[3] = {1, 1, 5}, n = 105;
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 3, "x"), y = vg_placeholder(g, VG_FLOAT, xd, 3, "y");
    vg_output ch = vg_placeholder(g, VG_FLOAT, cd, 1, "ch"), cond = vg_placeholder(g, VG_BOOL, xd, 3, "cond");
    vg_output ch3 = vg_placeholder(g, VG_FLOAT, c3, 3, "ch3");
    vg_output two = vg_const_f32(g, 2.0f, NULL);
    vg_output a = vg_mul(g, x, ch, NULL);                                        /* channel broadcast */
    vg_output b = vg_sub(g, vg_div(g, a, two, NULL), vg_square(g, y, NULL), NULL); /* scalar */
    vg_output m1 = vg_maximum(g, vg_relu(g, b, NULL), y, NULL), m2 = vg_minimum(g, y, b, NULL); /* NaN rules */
    vg_output rg = vg_relu_grad(g, b, vg_sub(g, x, y, NULL), NULL);              /* features x - y */
    vg_output t = vg_tile(g, ch3, vg_const_i32_vec(g, (int32_t[]){3, 7, 1}, 3, NULL), NULL);
    vg_output s = vg_select(g, cond, vg_neg(g, m1, NULL), vg_add(g, m2, t, NULL), NULL);
    vg_output sum3[3] = {s, vg_squared_difference(g, x, t, NULL), vg_add(g, vg_zeros_like(g, b, NULL), rg, NULL)};
    vg_output an = vg_add_n(g, sum3, 3, NULL);
    vg_output ge = vg_greater_equal(g, an, vg_ones_like(g, an, NULL), NULL);
    vg_output le = vg_less_equal(g, an, x, NULL);
    vg_output gt = vg_greater(g, an, y, NULL);
    vg_output z = vg_select(g, ge, an, vg_identity(g, x, NULL), "z");
    double *xv = kt_randv_range(n, 1, -3, 3), *yv = kt_randv_range(n, 2, -3, 3), cv[5] = {0.5, -1, 2, 0, 3}, bv[105];
    xv[4] = NAN, yv[9] = NAN, yv[17] = INFINITY;
    for (int i = 0; i < n; i++) bv[i] = (i * 7) % 3 == 0;
    vg_tensor *vals[5] = {mk(VG_FLOAT, xd, 3, xv), mk(VG_FLOAT, xd, 3, yv), mk(VG_FLOAT, cd, 1, cv),
                          mk(VG_BOOL, xd, 3, bv), mk(VG_FLOAT, c3, 3, cv)};
    vg_output feeds[5] = {x, y, ch, cond, ch3}, fetch[6] = {z, b, ge, le, gt, an};
    vg_tensor *f[6], *u[6];
    int nf = run_g(g, feeds, vals, 5, fetch, 6, f, 1, true);
    CHECK_EQ_INT(run_g(g, feeds, vals, 5, fetch, 6, u, 1, false), 0);
    CHECK_EQ_INT(nf, 1); /* one cluster: every node above has the shape of x */
    for (int i = 0; i < 6; i++) {
        CHECK(same_bits(f[i], u[i]));
        vg_tensor_free(f[i]), vg_tensor_free(u[i]);
    }
    for (int i = 0; i < 5; i++) vg_tensor_free(vals[i]);
    free(xv), free(yv);
    vg_graph_free(g);
}

/* Per-channel reductions inside a chain: a double reference, and the same bits at 1
 * and 2 threads (fixed pieces, added in order). */
static void test_ew__reductions(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {32, 17, 16, 24}, n = 32 * 17 * 16 * 24, C = 24;
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x"), y = vg_placeholder(g, VG_FLOAT, xd, 4, "y");
    vg_output p = vg_add(g, vg_mul(g, x, y, NULL), x, NULL);
    vg_output s = vg_reduce_sum(g, p, (int32_t[]){0, 1, 2}, 3, false, "s");
    vg_output m = vg_reduce_mean(g, vg_square(g, p, NULL), (int32_t[]){-4, 2, 1}, 3, true, "m");
    double *xv = kt_randv_range(n, 3, -1, 1), *yv = kt_randv_range(n, 4, 0, 2);
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, 4, xv), mk(VG_FLOAT, xd, 4, yv)};
    vg_output feeds[2] = {x, y}, fetch[2] = {s, m};
    vg_tensor *o1[2], *o2[2];
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 2, o1, 1, true), 1);
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 2, o2, 2, true), 1);
    CHECK(same_bits(o1[0], o2[0]));
    CHECK(same_bits(o1[1], o2[1]));
    CHECK_EQ_INT(vg_tensor_ndims(o1[1]), 4);
    double rs[24] = {0}, rm[24] = {0};
    for (int64_t i = 0; i < n; i++) {
        float pv = (float)((float)xv[i] * (float)yv[i]) + (float)xv[i];
        rs[i % C] += pv, rm[i % C] += (double)(pv * pv);
    }
    for (int k = 0; k < C; k++) {
        CHECK_NEAR(get(o1[0], k), rs[k], 1e-5);
        CHECK_NEAR(get(o1[1], k), rm[k] / (double)(n / C), 1e-5);
    }
    for (int i = 0; i < 2; i++) vg_tensor_free(o1[i]), vg_tensor_free(o2[i]), vg_tensor_free(vals[i]);
    free(xv), free(yv);
    vg_graph_free(g);
}

/* vg_layer_norm (tf.contrib.layers.layer_norm) of x [R, C], a weighted sum as loss,
 * gradients wrt x, gamma and beta (through their reads), with gamma and beta assigned
 * values other than their ones / zeros initializers. Fused against unfused, 1 and 2
 * threads. */
static void ln_case(int64_t R, int64_t C) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {R, C}, n = R * C;
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), w = vg_placeholder(g, VG_FLOAT, xd, 2, "w");
    vg_output h = vg_layer_norm(g, x, NULL);
    vg_output L = vg_reduce_sum(g, vg_mul(g, h, w, NULL), NULL, -1, false, "loss");
    double *gb[2] = {kt_randv_range(C, 11, -0.5, 0.5), kt_randv_range(C, 12, 0.5, 1.5)};
    vg_output d[3];
    vg_op *init[3];
    if (!two_var_grads_init(g, L, x, gb, C, d, init)) {
        free(gb[0]), free(gb[1]);
        vg_graph_free(g);
        return;
    }
    double *xv = kt_randv_range(n, 9, -2, 3), *wv = kt_randv_range(n, 10, -1, 1);
    for (int64_t c = 0; c < C; c++) xv[C + c] = 0.25; /* a constant row: variance 0 */
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, 2, xv), mk(VG_FLOAT, xd, 2, wv)};
    vg_output feeds[2] = {x, w}, fetch[4] = {h, d[0], d[1], d[2]};
    /* the variance's chain, the normalization, the gradients' row sums; no thread-count dependence */
    fused_vs_unfused(g, init, 3, feeds, vals, 2, fetch, 4, 2, true);
    for (int i = 0; i < 2; i++) vg_tensor_free(vals[i]), free(gb[i]);
    free(xv), free(wv);
    vg_graph_free(g);
}

static void test_ew__layer_norm(void) {
    ln_case(37, 128);  /* a partial last tile */
    ln_case(300, 128); /* graph_net's [12288, 128] rows, fewer */
    ln_case(9, 700);   /* rows longer than a tile */
}

/* Per-row inputs ([..., 1]) and last-axis Sum / Mean, keep_dims true and false, inside
 * one chain: a double reference; the same bits at 1 and 2 threads. */
static void row_case(const int64_t *xd, int nd) {
    vg_graph *g = vg_graph_new();
    int64_t rd[8], n = 1, C = xd[nd - 1];
    for (int i = 0; i < nd; i++) rd[i] = xd[i], n *= xd[i];
    rd[nd - 1] = 1;
    int64_t R = n / C;
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, nd, "x"), r = vg_placeholder(g, VG_FLOAT, rd, nd, "r");
    vg_output a = vg_add(g, vg_mul(g, x, r, NULL), x, NULL);               /* row broadcast */
    vg_output t = vg_tile(g, r, vg_const_i32_vec(g, (int32_t[]){1, 1, 1, (int32_t)C}, nd, NULL), NULL);
    vg_output b = vg_sub(g, vg_squared_difference(g, a, r, NULL), t, NULL); /* (a - r)^2 - r */
    vg_output s1 = vg_reduce_sum(g, a, (int32_t[]){-1}, 1, true, "s1");
    vg_output s2 = vg_reduce_sum(g, b, (int32_t[]){nd - 1}, 1, false, "s2");
    vg_output m1 = vg_reduce_mean(g, b, (int32_t[]){nd - 1}, 1, true, "m1");
    vg_output m2 = vg_reduce_mean(g, vg_square(g, a, NULL), (int32_t[]){-1}, 1, false, "m2");
    vg_output e = vg_maximum(g, vg_div(g, r, vg_add(g, x, vg_const_f32(g, 3.0f, NULL), NULL), NULL), a, "e"); /* row first */
    double *xv = kt_randv_range(n, 13, -1, 2), *rv = kt_randv_range(R, 14, -1, 1);
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, nd, xv), mk(VG_FLOAT, rd, nd, rv)};
    vg_output feeds[2] = {x, r}, fetch[6] = {s1, s2, m1, m2, b, e};
    vg_tensor *o1[6], *o2[6], *u[6];
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 6, o1, 1, true), 1);
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 6, o2, 2, true), 1);
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 6, u, 1, false), 0);
    for (int i = 0; i < 6; i++) CHECK(same_bits(o1[i], o2[i]));
    CHECK(same_bits(o1[4], u[4])); /* element-wise values: the separate kernels' */
    CHECK(same_bits(o1[5], u[5]));
    CHECK_EQ_INT(vg_tensor_ndims(o1[0]), nd);
    CHECK_EQ_INT(vg_tensor_ndims(o1[1]), nd - 1);
    CHECK_EQ_INT(vg_tensor_ndims(o1[2]), nd);
    CHECK_EQ_INT(vg_tensor_ndims(o1[3]), nd - 1);
    CHECK_EQ_INT(vg_tensor_num_elements(o1[3]), R);
    for (int64_t q = 0; q < R; q++) {
        double sa = 0, sb = 0, sq = 0;
        for (int64_t c = 0; c < C; c++) {
            float xi = (float)xv[q * C + c], ri = (float)rv[q];
            float av = xi * ri + xi, dv = av - ri, bv = dv * dv - ri;
            sa += av, sb += bv, sq += (double)(av * av);
        }
        double tol = 1e-5 * (1 + C / 64);
        CHECK_NEAR(get(o1[0], q), sa, tol * (1 + fabs(sa)));
        CHECK_NEAR(get(o1[1], q), sb, tol * (1 + fabs(sb)));
        CHECK_NEAR(get(o1[2], q), sb / (double)C, tol * (1 + fabs(sb / (double)C)));
        CHECK_NEAR(get(o1[3], q), sq / (double)C, tol * (1 + sq / (double)C));
    }
    for (int i = 0; i < 6; i++) vg_tensor_free(o1[i]), vg_tensor_free(o2[i]), vg_tensor_free(u[i]);
    for (int i = 0; i < 2; i++) vg_tensor_free(vals[i]);
    free(xv), free(rv);
    vg_graph_free(g);
}

static void test_ew__row_inputs_and_sums(void) {
    row_case((int64_t[]){300, 37}, 2);   /* a 16-lane remainder */
    row_case((int64_t[]){4, 75, 48}, 3); /* rank 3 */
    row_case((int64_t[]){6, 600}, 2);    /* one row per tile */
}

/* S = [R, 1]: [R, 1] inputs are full (not rows), and a last-axis Sum / Mean is a copy. */
static void test_ew__last_dim_one(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {50, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), y = vg_placeholder(g, VG_FLOAT, xd, 2, "y");
    vg_output a = vg_add(g, vg_mul(g, x, y, NULL), y, NULL);
    vg_output s = vg_reduce_sum(g, a, (int32_t[]){-1}, 1, true, "s");
    vg_output m = vg_reduce_mean(g, a, (int32_t[]){1}, 1, false, "m");
    vg_output c = vg_reduce_sum(g, a, (int32_t[]){0}, 1, false, "c"); /* per channel: one value */
    double *xv = kt_randv_range(50, 15, -1, 1), *yv = kt_randv_range(50, 16, -1, 1);
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, 2, xv), mk(VG_FLOAT, xd, 2, yv)};
    vg_output feeds[2] = {x, y}, fetch[3] = {s, m, c};
    vg_tensor *o[3];
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 3, o, 2, true), 1);
    CHECK_EQ_INT(vg_tensor_ndims(o[0]), 2);
    CHECK_EQ_INT(vg_tensor_ndims(o[1]), 1);
    CHECK_EQ_INT(vg_tensor_num_elements(o[2]), 1);
    double tot = 0;
    for (int i = 0; i < 50; i++) {
        float av = (float)xv[i] * (float)yv[i] + (float)yv[i];
        tot += av;
        CHECK_NEAR(get(o[0], i), av, 0);
        CHECK_NEAR(get(o[1], i), av, 0);
    }
    CHECK_NEAR(get(o[2], 0), tot, 1e-5);
    for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
    for (int i = 0; i < 2; i++) vg_tensor_free(vals[i]);
    free(xv), free(yv);
    vg_graph_free(g);
}

/* Members reading a variable (through its read Identity) join a cluster that no writer
 * of a variable reaches, and the fused node reads before an unordered write, as the
 * member would: a = x * v + x fuses and sees v's old value while v += 10 runs in the
 * same step; in c = x * v + x * (v += 10) the Add depends on the write, so the product
 * reading v stays out of its cluster and still reads the old value. */
static void test_ew__variable_reads(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {16, 8}, cd[1] = {8};
    double v0[8] = {1, 2, 3, 4, -1, -2, 0.5, 7}, ten[8] = {10, 10, 10, 10, 10, 10, 10, 10};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x");
    vg_variable v = vg_variable_new(g, "v", cst(g, VG_FLOAT, cd, 1, v0), 0);
    vg_output a = vg_add(g, vg_mul(g, x, v.read, NULL), x, "a");
    vg_output upd = vg_assign_add(g, v.ref, cst(g, VG_FLOAT, cd, 1, ten), "upd");
    vg_output c = vg_add(g, vg_mul(g, x, v.read, "c0"), vg_mul(g, x, upd, "c1"), "c");
    double *xv = kt_randv_range(16 * 8, 17, -2, 2);
    vg_tensor *vals[1] = {mk(VG_FLOAT, xd, 2, xv)};
    vg_output feeds[1] = {x}, fetch[2] = {a, c};
    vg_op *init = vg_global_variables_initializer(g);
    for (int fused = 1; fused >= 0; fused--) {
        vg_tensor *o[2];
        int nf = run_ln(g, &init, 1, feeds, vals, 1, fetch, 2, o, 1, fused);
        CHECK(fused ? nf >= 1 : nf == 0);
        for (int i = 0; o[0] && o[1] && i < 16 * 8; i++) {
            float xi = (float)xv[i], vi = (float)v0[i % 8];
            CHECK_NEAR(get(o[0], i), xi * vi + xi, 1e-6);
            CHECK_NEAR(get(o[1], i), xi * vi + xi * (vi + 10.0f), 1e-5);
        }
        vg_tensor_free(o[0]), vg_tensor_free(o[1]);
    }
    kt_teardown(g, NULL, (vg_tensor *[]){vals[0]}, 1, (void *[]){xv}, 1);
}

/* a = x * y is read by b = a + z and fetched; c = a + transpose(a) (the value leaves the
 * chain and comes back: a and c must not share a fused node); d = a * 2 with a control
 * input stays alone; feeding a replaces it. */
static void test_ew__outputs_cycles_feeds_control(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {6, 6};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), y = vg_placeholder(g, VG_FLOAT, xd, 2, "y");
    vg_output a = vg_mul(g, x, y, "a");
    vg_output b = vg_add(g, vg_sub(g, a, y, NULL), x, "b");
    vg_output c = vg_add(g, vg_neg(g, a, NULL), vg_transpose_c(g, a, (int32_t[]){1, 0}, 2, NULL), "c");
    vg_op *dep = vg_sub(g, x, y, "dep").op;
    vg_graph_push_control_deps(g, &dep, 1);
    vg_output d = vg_mul(g, a, vg_const_f32(g, 2.0f, NULL), "d");
    vg_graph_pop_control_deps(g);
    vg_output e = vg_add(g, d, b, "e");
    double *xv = kt_randv_range(36, 7, -2, 2), *yv = kt_randv_range(36, 8, -2, 2);
    vg_tensor *vals[3] = {mk(VG_FLOAT, xd, 2, xv), mk(VG_FLOAT, xd, 2, yv), mk(VG_FLOAT, xd, 2, NULL)};
    vg_output feeds[3] = {x, y, a}, fetch[4] = {a, b, c, e};
    vg_tensor *f[4], *u[4];
    CHECK(run_g(g, feeds, vals, 2, fetch, 4, f, 1, true) >= 1);
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 4, u, 1, false), 0);
    for (int i = 0; i < 4; i++) CHECK(same_bits(f[i], u[i]));
    for (int i = 0; i < 36; i++) {
        int r = i / 6, q = i % 6;
        float av = (float)xv[i] * (float)yv[i], at = (float)xv[q * 6 + r] * (float)yv[q * 6 + r];
        CHECK_NEAR(get(f[0], i), av, 1e-6);
        CHECK_NEAR(get(f[2], i), -av + at, 1e-6);
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(f[i]), vg_tensor_free(u[i]);
    /* a fed: b = a - y + x with the fed a (0, 1, 2, ...) */
    CHECK(run_g(g, feeds, vals, 3, fetch + 1, 1, f, 1, true) >= 0);
    for (int i = 0; i < 36; i++) CHECK_NEAR(get(f[0], i), (float)((float)i - (float)yv[i]) + (float)xv[i], 1e-6);
    vg_tensor_free(f[0]);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    free(xv), free(yv);
    vg_graph_free(g);
}

/* Integer chains and a float64 chain are not fused (float32 only), and still right. */
static void test_ew__other_dtypes_alone(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[1] = {9};
    vg_output x = vg_placeholder(g, VG_INT32, xd, 1, "x"), y = vg_placeholder(g, VG_DOUBLE, xd, 1, "y");
    vg_output a = vg_add(g, vg_mul(g, x, x, NULL), x, NULL);
    vg_output b = vg_sub(g, vg_mul(g, y, y, NULL), y, NULL);
    double v[9] = {1, -2, 3, 4, 5, 6, 7, 8, 9};
    vg_tensor *vals[2] = {mk(VG_INT32, xd, 1, v), mk(VG_DOUBLE, xd, 1, v)};
    vg_output feeds[2] = {x, y}, fetch[2] = {a, b};
    vg_tensor *o[2];
    CHECK_EQ_INT(run_g(g, feeds, vals, 2, fetch, 2, o, 1, true), 0);
    for (int i = 0; i < 9; i++) {
        CHECK_NEAR(get(o[0], i), v[i] * v[i] + v[i], 0);
        CHECK_NEAR(get(o[1], i), v[i] * v[i] - v[i], 0);
    }
    for (int i = 0; i < 2; i++) vg_tensor_free(o[i]), vg_tensor_free(vals[i]);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_ew__resnet_batch_norm);
    RUN_TEST(test_ew__values_bitwise);
    RUN_TEST(test_ew__reductions);
    RUN_TEST(test_ew__layer_norm);
    RUN_TEST(test_ew__row_inputs_and_sums);
    RUN_TEST(test_ew__last_dim_one);
    RUN_TEST(test_ew__variable_reads);
    RUN_TEST(test_ew__outputs_cycles_feeds_control);
    RUN_TEST(test_ew__other_dtypes_alone);
    TEST_MAIN_END();
}
