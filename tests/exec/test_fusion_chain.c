/* test_fusion_chain.c - the fused element-wise kernel's chain paths (issue 30,
 * src/kernels/ew_fused.c): instructions of broadcast operands only computed once per
 * run, and the specialised loops that run a common cluster's whole chain per element
 * (batch norm + leaky ReLU forward, its gradient's reduction pass, batch-norm dx,
 * layer norm's normalization and its gradient's sums). Each must give the same bits as the
 * instruction-at-a-time path (vg__ew_set_chain(false)), at 1 and 2 threads, on the CIFAR ResNet's channel
 * counts, the graph network's width and odd sizes (tiles of odd length, vector tails);
 * the chains must actually run (vg__ew_chain_runs), and values match the unfused plan.
 * The suite also runs under capped ISAs (scripts/isa-test.sh: the x86-64-v3 and
 * baseline clones of the loops).
 *
 * `test_fusion_chain --bench [reps] [chain|ln|moments]` times one batch norm step
 * (forward and gradient, batch 128, the ResNet's three shapes) or a layer norm step (the
 * graph network's shapes), 1 thread, two settings alternating (the chains on / off; the
 * defaults / VG_EW_MOMENTS=1), process CPU time (median). */
#include "test_util.h"
#include "op_test_util.h"
#include "count_alloc_util.h"
#include "exec/exec.h"
#include "exec/ewfuse.h"
#include "vigil/vigil.h"
#include <time.h>

static double *randv_range(int64_t n, unsigned seed, double lo, double hi) {
    double *v = malloc(sizeof(double) * (size_t)n);
    srand(seed);
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * rand() / (double)RAND_MAX;
    return v;
}

static bool same_bits(const vg_tensor *a, const vg_tensor *b) {
    return a && b && vg_tensor_dtype(a) == vg_tensor_dtype(b) && vg_tensor_nbytes(a) == vg_tensor_nbytes(b) &&
           !memcmp(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_nbytes(a));
}

/* A graph, its initializers, feeds and fetches. */
typedef struct tg {
    vg_graph *g;
    vg_op *init[3];
    int ninit;
    vg_output feeds[4];
    int nfeeds;
    vg_output fetch[8];
    int nfetch;
} tg;

/* Runs the fetches on a fresh session (fusion on or off); false on error. */
static bool run_tg(const tg *t, vg_tensor **vals, vg_tensor **outs, int threads, bool fused) {
    bool old = vg__plan_set_fusion(fused), ok = false;
    vg_status st;
    vg_session_options so = {.intra_op_threads = threads, .inter_op_threads = threads};
    vg_session *s = vg_session_new(t->g, &so, &st);
    for (int i = 0; i < t->nfetch; i++) outs[i] = NULL;
    if (s) {
        for (int i = 0; i < t->ninit; i++) CHECK_OK(vg_session_run_targets(s, &t->init[i], 1, &st), &st);
        CHECK_OK(vg_session_run(s, NULL, t->feeds, vals, t->nfeeds, t->fetch, outs, t->nfetch, NULL, 0, NULL, &st),
                 &st);
        ok = st.code == VG_OK;
    }
    vg_session_free(s);
    vg__plan_set_fusion(old);
    return ok;
}

/* chain on (1 and 2 threads) against chain off, bit for bit, and against the unfused
 * plan within tol; kinds: the chain loops that must have run (0: none required). */
static void compare(const tg *t, vg_tensor **vals, const int *kinds, int nkinds, double tol) {
    vg_tensor *on[8], *on2[8], *off[8], *un[8];
    int64_t before[6];
    for (int k = 0; k < 6; k++) before[k] = vg__ew_chain_runs(k);
    bool was = vg__ew_set_chain(true);
    CHECK(run_tg(t, vals, on, 1, true));
    for (int k = 0; k < nkinds; k++) {
        bool ran = vg__ew_chain_runs(kinds[k]) > before[kinds[k]];
        if (!ran) fprintf(stderr, "  chain %d did not run\n", kinds[k]);
        CHECK(ran);
    }
    CHECK(run_tg(t, vals, on2, 2, true));
    vg__ew_set_chain(false);
    int64_t mid = vg__ew_chain_runs(0);
    CHECK(run_tg(t, vals, off, 1, true));
    CHECK(vg__ew_chain_runs(0) == mid); /* off: none ran */
    CHECK(run_tg(t, vals, un, 1, false));
    vg__ew_set_chain(was);
    for (int i = 0; i < t->nfetch; i++) {
        CHECK(on[i] && on2[i] && off[i] && un[i]);
        if (!on[i] || !on2[i] || !off[i] || !un[i]) continue;
        bool b1 = same_bits(on[i], off[i]), b2 = same_bits(on2[i], off[i]);
        double d = tu_rel_diff(on[i], un[i]);
        if (!b1 || !b2 || (!isinf(tol) && !(d < tol))) fprintf(stderr, "  fetch %d: bits %d %d, against unfused %g\n", i, b1, b2, d);
        CHECK(b1);
        CHECK(b2);
        CHECK(isinf(tol) || d < tol);
        vg_tensor_free(on[i]), vg_tensor_free(on2[i]), vg_tensor_free(off[i]), vg_tensor_free(un[i]);
    }
}

/* resnet_model.py's batch norm (training: tf.nn.moments, tf.nn.batch_normalization,
 * epsilon 1e-3) on a residual sum x1 + x2, the leaky ReLU (tf.where(x < 0, 0.1 x, x))
 * or a plain ReLU, a weighted sum as loss; fetches the activation, the moments and the
 * gradients of x1, beta and gamma. */
static void build_bn_v(tg *t, const int64_t xd[4], bool leaky, int variant);
static void build_bn(tg *t, const int64_t xd[4], bool leaky) { build_bn_v(t, xd, leaky, 0); }

/* variant 1: the same batch norm and leaky ReLU written another way: y = b + a * x
 * (batch_normalization's operands swapped, a and b computed by hand), the mask as
 * Greater(0, y), the slope y * 0.2 (another constant, operands swapped) and an Identity
 * of y in the select; variant 2: as 1, with a per-channel slope (a [C] constant) and the
 * copy a Tile by ones. */
static void build_bn_v(tg *t, const int64_t xd[4], bool leaky, int variant) {
    memset(t, 0, sizeof *t);
    vg_graph *g = t->g = vg_graph_new();
    int64_t C = xd[3], cd[1] = {C};
    vg_output x1 = vg_placeholder(g, VG_FLOAT, xd, 4, "x1"), x2 = vg_placeholder(g, VG_FLOAT, xd, 4, "x2");
    vg_output w = vg_placeholder(g, VG_FLOAT, xd, 4, "w");
    vg_output x = vg_add(g, x1, x2, "add");
    vg_variable_scope_push(g, "bn", NULL);
    vg_get_variable_opts o = {0};
    o.dt = VG_FLOAT;
    o.dims = cd;
    o.ndims = 1;
    o.has_init = true;
    o.init = vg_init_constant(0.0);
    vg_variable beta = vg_get_variable_ex(g, "beta", &o);
    o.init = vg_init_constant(1.0);
    vg_variable gamma = vg_get_variable_ex(g, "gamma", &o);
    vg_output mean, var;
    vg_nn_moments(g, x, (int32_t[]){0, 1, 2}, 3, false, "moments", &mean, &var);
    vg_output y;
    if (variant) {
        vg_output a = vg_mul(g, gamma.read, vg_rsqrt(g, vg_add(g, var, vg_const_f32(g, 0.001f, NULL), NULL), NULL), NULL);
        vg_output b = vg_sub(g, beta.read, vg_mul(g, mean, a, NULL), NULL);
        y = vg_add(g, b, vg_mul(g, a, x, NULL), "bn_y");
    } else {
        y = vg_nn_batch_normalization(g, x, mean, var, beta.read, gamma.read, 0.001, NULL);
    }
    vg_variable_scope_pop(g);
    vg_output act;
    if (leaky && variant) {
        vg_output gt = vg_greater(g, vg_const_f32(g, 0.0f, "Greater/x"), y, "Greater");
        vg_output slope = vg_const_f32(g, 0.2f, "mul/y");
        if (variant == 2) {
            double sv[1024];
            for (int k = 0; k < C && k < 1024; k++) sv[k] = 0.05 + 0.01 * (k % 5);
            slope = cst(g, VG_FLOAT, cd, 1, sv);
        }
        /* a copy of y inside the cluster: an Identity (a plan-level alias the cluster
         * takes in as a copy), or Tile by ones */
        vg_output y_copy = variant == 1 ? vg_identity(g, y, "y_copy")
                                        : vg_tile(g, y, vg_const_i32_vec(g, (int32_t[]){1, 1, 1, 1}, 4, NULL), "y_copy");
        act = vg_select(g, gt, vg_mul(g, y, slope, "mul"), y_copy, "leaky_relu");
    } else if (leaky) {
        vg_output lt = vg_less(g, y, vg_const_f32(g, 0.0f, "Less/y"), "Less");
        act = vg_select(g, lt, vg_mul(g, vg_const_f32(g, 0.1f, "mul/x"), y, "mul"), y, "leaky_relu");
    } else {
        act = vg_relu(g, y, "relu");
    }
    /* the model's activation goes on to a convolution: a reshape here keeps the loss's
     * multiply out of the activation's cluster, as there */
    vg_output loss = vg_reduce_sum(g, vg_mul(g, vg_reshape_c(g, act, xd, 4, NULL), w, NULL), NULL, -1, false, "loss");
    vg_output wrt[3] = {x1, vg_variable_snapshot(beta.var), vg_variable_snapshot(gamma.var)}, d[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &loss, 1, wrt, 3, NULL, d, &st), &st);
    double bv[1024], gv[1024];
    for (int k = 0; k < C && k < 1024; k++) bv[k] = 0.1 * (k % 7) - 0.3, gv[k] = 1 + 0.05 * (k % 11);
    t->init[0] = vg_global_variables_initializer(g);
    t->init[1] = vg_assign(g, gamma.ref, cst(g, VG_FLOAT, cd, 1, gv), true, NULL).op;
    t->init[2] = vg_assign(g, beta.ref, cst(g, VG_FLOAT, cd, 1, bv), true, NULL).op;
    t->ninit = 3;
    t->feeds[0] = x1, t->feeds[1] = x2, t->feeds[2] = w;
    t->nfeeds = 3;
    vg_output f[6] = {act, mean, var, d[0], d[1], d[2]};
    memcpy(t->fetch, f, sizeof f);
    t->nfetch = 6;
}

static void bn_vals(const int64_t xd[4], vg_tensor **vals) {
    int64_t n = xd[0] * xd[1] * xd[2] * xd[3];
    double *v[3] = {randv_range(n, 21, -1, 2), randv_range(n, 22, -0.25, 0.25), randv_range(n, 23, -0.5, 0.5)};
    for (int i = 0; i < 3; i++) vals[i] = mk(VG_FLOAT, xd, 4, v[i]), free(v[i]);
}

static void bn_case_v(const int64_t xd[4], bool leaky, int variant, const int *kinds, int nkinds) {
    bool env_m = vg__ew_set_moments(false); /* the default */
    tg t;
    build_bn_v(&t, xd, leaky, variant);
    vg_tensor *vals[3];
    bn_vals(xd, vals);
    int64_t n = xd[0] * xd[1] * xd[2] * xd[3];
    compare(&t, vals, kinds, nkinds, 2e-4 * sqrt((double)n / xd[3]));
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(t.g);
    vg__ew_set_moments(env_m);
}

static void bn_case(const int64_t xd[4], bool leaky) {
    /* leaky: the forward and its gradient's reductions; both: dx */
    int kinds_leaky[3] = {1, 2, 3}, kinds_relu[1] = {3};
    bn_case_v(xd, leaky, 0, leaky ? kinds_leaky : kinds_relu, leaky ? 3 : 1);
}

static void test_chain__resnet_batch_norm(void) {
    bn_case((int64_t[]){4, 32, 32, 16}, true); /* the ResNet's three stages, batch 4 */
    bn_case((int64_t[]){4, 16, 16, 32}, true);
    bn_case((int64_t[]){4, 8, 8, 64}, true);
    bn_case((int64_t[]){4, 16, 16, 32}, false);
}

/* The chains are matched on the program's structure, not its text: the batch norm and
 * leaky ReLU written another way (build_bn_v: operands swapped, Greater for Less, other
 * constants, an extra Identity or Tile) take the same loops, with the same bits as op by op. */
static void test_chain__structural_match(void) {
    int kinds[2] = {1, 2};
    bn_case_v((int64_t[]){4, 16, 16, 32}, true, 1, kinds, 2);
    bn_case_v((int64_t[]){3, 5, 7, 16}, true, 2, kinds, 2);
    bn_case_v((int64_t[]){2, 3, 3, 5}, true, 1, kinds, 2);
}

static void test_chain__odd_sizes(void) {
    bn_case((int64_t[]){3, 5, 7, 16}, true);  /* the last tile partial */
    bn_case((int64_t[]){1, 3, 5, 33}, true);  /* tiles of 495: odd vector tails */
    bn_case((int64_t[]){2, 3, 3, 5}, true);   /* one short tile */
    bn_case((int64_t[]){5, 7, 3, 600}, true); /* a row longer than a tile */
    bn_case((int64_t[]){2, 1, 1, 3}, false);
}

/* tf.contrib.layers.layer_norm of x [R, C] (the graph network's), loss sum(h * w):
 * h and the gradients of x, beta and gamma. */
static void ln_case(int64_t R, int64_t C) {
    tg t;
    memset(&t, 0, sizeof t);
    vg_graph *g = t.g = vg_graph_new();
    int64_t xd[2] = {R, C}, n = R * C;
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), w = vg_placeholder(g, VG_FLOAT, xd, 2, "w");
    vg_output h = vg_layer_norm(g, vg_relu(g, x, NULL), NULL);
    vg_output L = vg_reduce_sum(g, vg_mul(g, vg_reshape_c(g, h, xd, 2, NULL), w, NULL), NULL, -1, false, "loss");
    double *gb[2] = {randv_range(C, 11, -0.5, 0.5), randv_range(C, 12, 0.5, 1.5)};
    vg_output d[3];
    if (!two_var_grads_init(g, L, x, gb, C, d, t.init)) {
        free(gb[0]), free(gb[1]);
        vg_graph_free(g);
        return;
    }
    t.ninit = 3;
    double *xv = randv_range(n, 9, -2, 3), *wv = randv_range(n, 10, -1, 1);
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, 2, xv), mk(VG_FLOAT, xd, 2, wv)};
    t.feeds[0] = x, t.feeds[1] = w, t.nfeeds = 2;
    t.fetch[0] = h, t.fetch[1] = d[0], t.fetch[2] = d[1], t.fetch[3] = d[2], t.nfetch = 4;
    compare(&t, vals, (int[]){4, 5}, 2, 2e-4 * sqrt((double)R));
    for (int i = 0; i < 2; i++) vg_tensor_free(vals[i]), free(gb[i]);
    free(xv), free(wv);
    vg_graph_free(g);
}

static void test_chain__layer_norm(void) {
    ln_case(64, 128); /* the graph network's latent width */
    ln_case(13, 37);  /* odd rows and width */
    ln_case(3, 700);  /* a row longer than a tile */
}

/* A chain with instructions of broadcast operands only (a tiled channel vector over a
 * scalar, as the batch-norm gradients make): computed once per run, the same bits as
 * per tile and as the unfused kernels. */
static void test_chain__hoisted_broadcasts(void) {
    int64_t shapes[3][3] = {{3, 7, 5}, {4, 33, 16}, {2, 9, 131}};
    for (int s = 0; s < 3; s++) {
        tg t;
        memset(&t, 0, sizeof t);
        vg_graph *g = t.g = vg_graph_new();
        int64_t *xd = shapes[s], C = xd[2], cd[1] = {C}, c3[3] = {1, 1, C}, n = xd[0] * xd[1] * xd[2];
        vg_output x = vg_placeholder(g, VG_FLOAT, xd, 3, "x"), ch = vg_placeholder(g, VG_FLOAT, c3, 3, "ch");
        vg_output cv = vg_placeholder(g, VG_FLOAT, cd, 1, "cv"), sc = vg_placeholder(g, VG_FLOAT, NULL, 0, "sc");
        vg_output mult = vg_const_i32_vec(g, (int32_t[]){(int32_t)xd[0], (int32_t)xd[1], 1}, 3, NULL);
        vg_output tl = vg_tile(g, ch, mult, NULL);           /* copy of a channel vector */
        vg_output q = vg_div(g, tl, sc, NULL);               /* channel / scalar */
        vg_output k = vg_mul(g, vg_sub(g, q, cv, NULL), sc, NULL); /* (q - cv) * scalar */
        vg_output ones = vg_ones_like(g, x, NULL);
        vg_output y = vg_add(g, vg_mul(g, x, k, NULL), vg_add(g, q, ones, NULL), "y");
        t.feeds[0] = x, t.feeds[1] = ch, t.feeds[2] = cv, t.feeds[3] = sc, t.nfeeds = 4;
        t.fetch[0] = y, t.fetch[1] = vg_square(g, y, "sq"), t.nfetch = 2;
        double *xv = randv_range(n, 31, -2, 2), *chv = randv_range(C, 32, -1, 1), *cvv = randv_range(C, 33, -1, 1);
        double scv = 0.37;
        xv[1] = NAN, chv[0] = 0;
        vg_tensor *vals[4] = {mk(VG_FLOAT, xd, 3, xv), mk(VG_FLOAT, c3, 3, chv), mk(VG_FLOAT, cd, 1, cvv),
                              mk(VG_FLOAT, NULL, 0, &scv)};
        compare(&t, vals, NULL, 0, INFINITY); /* NaN in x: the bit checks are the test */
        vg_tensor *on[2], *un[2];
        bool was = vg__ew_set_chain(true);
        CHECK(run_tg(&t, vals, on, 1, true));
        CHECK(run_tg(&t, vals, un, 1, false));
        vg__ew_set_chain(was);
        for (int i = 0; i < 2; i++) {
            CHECK(same_bits(on[i], un[i])); /* element-wise only: the separate kernels' bits */
            vg_tensor_free(on[i]), vg_tensor_free(un[i]);
        }
        for (int i = 0; i < 4; i++) vg_tensor_free(vals[i]);
        free(xv), free(chv), free(cvv);
        vg_graph_free(g);
    }
}

/* The kernel's per-run arrays come from a block kept on the program: after the first
 * run of a session, further runs allocate none (vg__ew_work_allocs), at 1 and 2
 * threads, and give the same bits; an allocation failure anywhere in a run fails it
 * with RESOURCE_EXHAUSTED (count_alloc_util.h), and the next run is good again. */
static void test_chain__work_memory_reused(void) {
    vg_allocator al = {count_alloc, count_free, NULL};
    vg_allocator_set(&al);
    tg t;
    int64_t xd[4] = {4, 16, 16, 32};
    build_bn(&t, xd, true);
    vg_tensor *vals[3];
    bn_vals(xd, vals);
    for (int threads = 1; threads <= 2; threads++) {
        vg_status st;
        vg_session_options so = {.intra_op_threads = threads, .inter_op_threads = threads};
        vg_session *s = vg_session_new(t.g, &so, &st);
        CHECK(s != NULL);
        if (!s) continue;
        for (int i = 0; i < t.ninit; i++) CHECK_OK(vg_session_run_targets(s, &t.init[i], 1, &st), &st);
        vg_tensor *first[8], *again[8];
        CHECK_OK(vg_session_run(s, NULL, t.feeds, vals, t.nfeeds, t.fetch, first, t.nfetch, NULL, 0, NULL, &st), &st);
        int64_t before = vg__ew_work_allocs();
        for (int r = 0; r < 3; r++) {
            CHECK_OK(vg_session_run(s, NULL, t.feeds, vals, t.nfeeds, t.fetch, again, t.nfetch, NULL, 0, NULL, &st),
                     &st);
            for (int i = 0; i < t.nfetch; i++) {
                CHECK(same_bits(first[i], again[i]));
                vg_tensor_free(again[i]);
            }
        }
        CHECK_EQ_INT((int)(vg__ew_work_allocs() - before), 0);
        if (threads == 1) /* every allocation of a run failed in turn */
            fail_each_alloc_of_run(s, t.feeds, vals, t.nfeeds, t.fetch, t.nfetch);
        CHECK_OK(vg_session_run(s, NULL, t.feeds, vals, t.nfeeds, t.fetch, again, t.nfetch, NULL, 0, NULL, &st), &st);
        for (int i = 0; i < t.nfetch; i++) {
            CHECK(same_bits(first[i], again[i]));
            vg_tensor_free(first[i]), vg_tensor_free(again[i]);
        }
        vg_session_free(s);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(t.g);
    vg_allocator_set(NULL);
}

/* A hand-made program: inputs of kinds ik (VG__EWIN_*, bool where ib), instructions
 * (op, nargs, args), outputs (reg, kind: 's' stored, 'b' bool, 'c' channel sum). */
typedef struct hp_ins { int op, nargs, args[4]; } hp_ins;
static int match_prog(int nin, const int *ik, const bool *ib, int nins, const hp_ins *ins, int nout, const int *oreg,
                      const char *okind, int *chain_out) {
    vg__ew_prog p;
    memset(&p, 0, sizeof p);
    vg__ew_ins pi[16];
    vg__ew_out po[4];
    memset(po, 0, sizeof po);
    int args[16][4];
    p.ninputs = nin, p.in_kind = (int *)ik, p.in_bool = (bool *)ib, p.nins = nins, p.ins = pi, p.nouts = nout, p.outs = po;
    p.ndims = 2, p.dims[0] = 8, p.dims[1] = 16, p.n = 128, p.C = 16;
    for (int k = 0; k < nins; k++) {
        memcpy(args[k], ins[k].args, sizeof args[k]);
        pi[k].op = ins[k].op, pi[k].nargs = ins[k].nargs, pi[k].args = args[k];
    }
    for (int k = 0; k < nout; k++) {
        po[k].reg = oreg[k], po[k].scale = 1;
        po[k].is_bool = okind[k] == 'b';
        po[k].reduce = okind[k] == 'c';
    }
    vg__ew_prog_match_chain(&p);
    if (chain_out) memcpy(chain_out, p.chain_out, sizeof p.chain_out);
    return p.chain;
}

/* The matcher on programs written by hand: the batch norm + leaky ReLU forward as the
 * planner writes it for TF's graph, then with its inputs and outputs in another order,
 * Add / Mul operands swapped and Greater for Less; programs that differ in a way that
 * changes values (LessEqual for Less, the comparison's operands swapped, the select's
 * branches swapped, a row input, another AddN order) match nothing. */
static void test_chain__matcher(void) {
    enum { F = VG__EWIN_FULL, CH = VG__EWIN_CHANNEL, SC = VG__EWIN_SCALAR };
    const bool nb[8] = {false};
    /* x, a, b, 0, 0.1: y = x * a + b; mask = y < 0; out = mask ? 0.1 * y : y */
    int ik0[5] = {F, CH, CH, SC, SC};
    hp_ins p0[5] = {{VG__EWI_MUL, 2, {0, 1}}, {VG__EWI_ADD, 2, {5, 2}}, {VG__EWI_LESS, 2, {6, 3}},
                    {VG__EWI_MUL, 2, {4, 6}}, {VG__EWI_SELECT, 3, {7, 8, 6}}};
    int out[4];
    CHECK_EQ_INT(match_prog(5, ik0, nb, 5, p0, 2, (int[]){7, 9}, "bs", out), VG__EW_CHAIN_BN_LEAKY);
    CHECK_EQ_INT(out[0], 0); /* the mask */
    CHECK_EQ_INT(out[1], 1);
    /* inputs 0.1, b, 0, a, x; y = b + a * x; mask = 0 > y; out = mask ? y * 0.1 : y; a copy of
     * y; outputs out, mask */
    int ik1[5] = {SC, CH, SC, CH, F};
    hp_ins p1[6] = {{VG__EWI_MUL, 2, {3, 4}}, {VG__EWI_ADD, 2, {1, 5}}, {VG__EWI_COPY, 1, {6}},
                    {VG__EWI_GREATER, 2, {2, 6}}, {VG__EWI_MUL, 2, {7, 0}}, {VG__EWI_SELECT, 3, {8, 9, 7}}};
    CHECK_EQ_INT(match_prog(5, ik1, nb, 6, p1, 2, (int[]){10, 8}, "sb", out), VG__EW_CHAIN_BN_LEAKY);
    CHECK_EQ_INT(out[0], 1); /* the pattern's mask is the program's output 1 */
    CHECK_EQ_INT(out[1], 0);
    /* changes of value: no match */
    hp_ins p2[5];
    memcpy(p2, p0, sizeof p2);
    p2[2].op = VG__EWI_LESS_EQUAL;
    CHECK_EQ_INT(match_prog(5, ik0, nb, 5, p2, 2, (int[]){7, 9}, "bs", NULL), VG__EW_CHAIN_NONE);
    memcpy(p2, p0, sizeof p2);
    p2[2].args[0] = 3, p2[2].args[1] = 6; /* 0 < y */
    CHECK_EQ_INT(match_prog(5, ik0, nb, 5, p2, 2, (int[]){7, 9}, "bs", NULL), VG__EW_CHAIN_NONE);
    memcpy(p2, p0, sizeof p2);
    p2[4].args[1] = 6, p2[4].args[2] = 8; /* mask ? y : 0.1 y */
    CHECK_EQ_INT(match_prog(5, ik0, nb, 5, p2, 2, (int[]){7, 9}, "bs", NULL), VG__EW_CHAIN_NONE);
    int ik3[5] = {F, CH, CH, SC, F}; /* the slope a full tensor: still the chain (read in place) */
    CHECK_EQ_INT(match_prog(5, ik3, nb, 5, p0, 2, (int[]){7, 9}, "bs", NULL), VG__EW_CHAIN_BN_LEAKY);
    int ik4[5] = {F, CH, CH, SC, VG__EWIN_ROW}; /* a row input where a float is read per element */
    CHECK_EQ_INT(match_prog(5, ik4, nb, 5, p0, 2, (int[]){7, 9}, "bs", NULL), VG__EW_CHAIN_NONE);
    /* dx = (r + k * (x - mu)) + q, k and q computed from broadcast inputs (c / s, c * s) */
    int ik5[6] = {F, CH, CH, SC, F, CH};
    hp_ins p5[5] = {{VG__EWI_SUB, 2, {0, 1}}, {VG__EWI_DIV, 2, {2, 3}}, {VG__EWI_MUL, 2, {6, 7}},
                    {VG__EWI_MUL, 2, {5, 3}}, {VG__EWI_ADDN, 3, {8, 4, 9}}};
    CHECK_EQ_INT(match_prog(6, ik5, nb, 5, p5, 1, (int[]){10}, "s", NULL), VG__EW_CHAIN_BN_DX);
    p5[4].args[0] = 9, p5[4].args[2] = 8; /* (q + r) + t: another rounding */
    CHECK_EQ_INT(match_prog(6, ik5, nb, 5, p5, 1, (int[]){10}, "s", NULL), VG__EW_CHAIN_NONE);
    p5[4].args[0] = 8, p5[4].args[2] = 9;
    p5[0].args[0] = 1, p5[0].args[1] = 0; /* mu - x: the pattern's x and mu bind the other way */
    CHECK_EQ_INT(match_prog(6, ik5, nb, 5, p5, 1, (int[]){10}, "s", NULL), VG__EW_CHAIN_BN_DX);
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One step of t per rep, two settings alternating (set(0) / set(1)), 1 thread; the
 * medians of process CPU time in ms. */
static void time_pair(const tg *t, vg_tensor **vals, void (*set)(int), int reps, double med[2]) {
    vg_status st;
    vg_session_options so = {.intra_op_threads = 1, .inter_op_threads = 1};
    double ms[2][64];
    vg_session *ss[2];
    for (int m = 0; m < 2; m++) { /* a session per setting: the plan-time rewrites differ */
        set(m);
        ss[m] = vg_session_new(t->g, &so, &st);
        for (int i = 0; i < t->ninit; i++) vg_session_run_targets(ss[m], &t->init[i], 1, &st);
    }
    int nr = reps < 64 ? reps : 64;
    for (int r = 0; r < nr + 2; r++)
        for (int m = 0; m < 2; m++) {
            vg_tensor *outs[8];
            set(m);
            double t0 = cpu_ms();
            vg_session_run(ss[m], NULL, t->feeds, vals, t->nfeeds, t->fetch, outs, t->nfetch, NULL, 0, NULL, &st);
            double el = cpu_ms() - t0;
            for (int i = 0; i < t->nfetch; i++) vg_tensor_free(outs[i]);
            if (r >= 2) ms[m][r - 2] = el; /* two warm-up steps */
        }
    for (int m = 0; m < 2; m++) {
        qsort(ms[m], (size_t)nr, sizeof(double), cmp_d);
        med[m] = ms[m][nr / 2];
        vg_session_free(ss[m]);
    }
}

static void set_chain(int m) { vg__ew_set_chain(m == 0); }                            /* 0: on */
static void set_moments(int m) { vg__ew_set_chain(true), vg__ew_set_moments(m == 1); } /* 1: on */
static void set_on(int m) { (void)m, vg__ew_set_chain(true); } /* one setting (callgrind) */
static void set_off(int m) { (void)m, vg__ew_set_chain(false); }

/* --bench [reps] [chain|moments|ln|on|off] (on / off: the chains only on or off,
 * for an instruction count under callgrind): a batch-norm step per ResNet shape (batch
 * 128), or a layer norm step at the graph network's shapes; 1 thread. */
static void bench(int reps, const char *what) {
    bool env_m = vg__ew_set_moments(false);
    bool ln = !strcmp(what, "ln");
    void (*set)(int) = !strcmp(what, "moments") ? set_moments
                       : !strcmp(what, "on")    ? set_on
                       : !strcmp(what, "off")   ? set_off
                                                : set_chain;
    const char *lab[2] = {"chain on", "chain off"};
    if (set == set_moments) lab[0] = "default", lab[1] = "VG_EW_MOMENTS=1";
    for (int s = 0; s < (ln ? 2 : 3); s++) {
        int64_t shapes[3][4] = {{128, 32, 32, 16}, {128, 16, 16, 32}, {128, 8, 8, 64}};
        int64_t rows[2] = {12288, 2048};
        tg t;
        vg_tensor *vals[3];
        int nv = 3;
        if (ln) {
            memset(&t, 0, sizeof t);
            vg_graph *g = t.g = vg_graph_new();
            int64_t xd[2] = {rows[s], 128}, n = rows[s] * 128;
            vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), w = vg_placeholder(g, VG_FLOAT, xd, 2, "w");
            vg_output h = vg_layer_norm(g, vg_relu(g, x, NULL), NULL);
            vg_output L = vg_reduce_sum(g, vg_mul(g, vg_reshape_c(g, h, xd, 2, NULL), w, NULL), NULL, -1, false, NULL);
            int nvar = 0;
            const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nvar);
            vg_output wrt[3] = {x, vg_variable_snapshot(vars[0].op), vg_variable_snapshot(vars[1].op)}, d[3];
            vg_status st;
            vg_gradients(g, &L, 1, wrt, 3, NULL, d, &st);
            t.init[0] = vg_global_variables_initializer(g), t.ninit = 1;
            t.feeds[0] = x, t.feeds[1] = w, t.nfeeds = 2;
            t.fetch[0] = h, t.fetch[1] = d[0], t.fetch[2] = d[1], t.fetch[3] = d[2], t.nfetch = 4;
            double *xv = randv_range(n, 9, -2, 3), *wv = randv_range(n, 10, -1, 1);
            vals[0] = mk(VG_FLOAT, xd, 2, xv), vals[1] = mk(VG_FLOAT, xd, 2, wv), nv = 2;
            free(xv), free(wv);
        } else {
            build_bn(&t, shapes[s], true);
            bn_vals(shapes[s], vals);
        }
        double med[2];
        time_pair(&t, vals, set, reps, med);
        if (ln) printf("layer norm step [%lld,128]", (long long)rows[s]);
        else printf("bn step [%lld,%lld,%lld,%lld]", (long long)shapes[s][0], (long long)shapes[s][1],
                    (long long)shapes[s][2], (long long)shapes[s][3]);
        printf(": %s %.2f ms, %s %.2f ms (process CPU, median of %d)\n", lab[0], med[0], lab[1], med[1], reps);
        for (int i = 0; i < nv; i++) vg_tensor_free(vals[i]);
        vg_graph_free(t.g);
    }
    vg__ew_set_chain(true);
    vg__ew_set_moments(env_m);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--bench")) {
        bench(argc > 2 ? atoi(argv[2]) : 9, argc > 3 ? argv[3] : "chain");
        return 0;
    }
    RUN_TEST(test_chain__resnet_batch_norm);
    RUN_TEST(test_chain__matcher);
    RUN_TEST(test_chain__structural_match);
    RUN_TEST(test_chain__odd_sizes);
    RUN_TEST(test_chain__layer_norm);
    RUN_TEST(test_chain__hoisted_broadcasts);
    RUN_TEST(test_chain__work_memory_reused);
    TEST_MAIN_END();
}
