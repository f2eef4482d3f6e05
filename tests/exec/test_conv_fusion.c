/* test_conv_fusion.c - the executor's plan-time fusion of Conv2D -> BiasAdd [-> Relu]
 * [-> MaxPool] and MaxPoolGrad -> ReluGrad [+ BiasAddGrad] [-> Conv2DBackpropFilter]
 * (src/exec/fuse.c, kernels _VigilFused* in
 * src/kernels/nn/conv_ops.c):
 * forward values and gradients equal the unfused plan's on several shapes (oneDNN,
 * direct-kernel and im2col paths, float64), the trace shows which nodes were fused,
 * and chains whose intermediate values are needed elsewhere are left alone. */
#include "test_util.h"
#include "op_test_util.h"
#include "exec/exec.h"
#include "kernels/nn/nn_internal.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* Max relative difference of two tensors of equal size (1e30 when they differ in size). */
/* The largest difference between a and b relative to b's scale (1 + max |b|): the
 * paths compared sum the same terms in other orders (oneDNN's kernels differ by ISA),
 * and a gradient element that is the small difference of large terms carries the
 * rounding of those terms (seen with oneDNN's AVX2 kernels: 1e-3 absolute on elements
 * near 0 of a gradient reaching 1500, 2e-4 relative to the element itself). */
static double maxdiff(const vg_tensor *a, const vg_tensor *b) {
    if (!a || !b || vg_tensor_num_elements(a) != vg_tensor_num_elements(b)) return 1e30;
    double scale = 0, m = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(b); i++)
        if (!(fabs(get(b, i)) <= scale)) scale = fabs(get(b, i));
    for (int64_t i = 0; i < vg_tensor_num_elements(a); i++) {
        double d = fabs(get(a, i) - get(b, i)) / (1 + scale);
        if (!(d <= m)) m = d; /* NaN counts */
    }
    return m;
}

typedef struct fcase {
    int64_t n, h, w, ci, k, co, s;
    bool same, relu;
    vg_dtype dt;
    int threads;
} fcase;

/* Runs y = [relu](bias_add(conv2d(x, f), b)) and the gradients of sum(y * y) w.r.t.
 * x, f, b with fusion on (fused = true) or off; out[0..3]; returns how many traced
 * nodes ran a fused kernel of type want (NULL: any _VigilFused*). */
static int run_case(const fcase *c, bool fused, bool fetch_conv, vg_tensor **out, const char *want) {
    vg__plan_set_fusion(fused);
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {c->n, c->h, c->w, c->ci}, fd[4] = {c->k, c->k, c->ci, c->co}, bd[1] = {c->co};
    int64_t strides[4] = {1, c->s, c->s, 1};
    vg_output x = vg_placeholder(g, c->dt, xd, 4, "x"), f = vg_placeholder(g, c->dt, fd, 4, "f");
    vg_output b = vg_placeholder(g, c->dt, bd, 1, "b");
    vg_output conv = vg_conv2d(g, x, f, strides, c->same ? "SAME" : "VALID", NULL);
    vg_output y = vg_bias_add(g, conv, b, NULL);
    if (c->relu) y = vg_relu(g, y, NULL);
    vg_output L = vg_reduce_sum(g, vg_mul(g, y, y, NULL), NULL, -1, false, NULL);
    vg_output in[3] = {x, f, b}, d[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 3, NULL, d, &st), &st);
    int64_t nx = xd[0] * xd[1] * xd[2] * xd[3], nf = fd[0] * fd[1] * fd[2] * fd[3];
    double *xv = randv(nx, 1), *fv = randv(nf, 2), *bv = randv(c->co, 3);
    vg_tensor *vals[3] = {mk(c->dt, xd, 4, xv), mk(c->dt, fd, 4, fv), mk(c->dt, bd, 1, bv)};
    vg_output fetch[5] = {y, d[0], d[1], d[2], conv};
    vg_session_options o = {0};
    o.intra_op_threads = c->threads;
    o.inter_op_threads = 1;
    vg_session *s = vg_session_new(g, &o, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int nfused = -1;
    vg_tensor *conv_out = NULL, *outs[5] = {NULL};
    CHECK(s != NULL);
    if (s && md) {
        CHECK_OK(vg_session_run(s, &ro, in, vals, 3, fetch, outs, fetch_conv ? 5 : 4, NULL, 0, md, &st), &st);
        nfused = 0;
        for (int i = 0; i < vg_run_metadata_num_nodes(md); i++) {
            const char *t = vg_run_metadata_node(md, i)->op_type;
            /* the convolution / pooling kernels of fuse.c (the element-wise chains of the loss
             * and its gradient are fused too, with forwarding nodes of their own: not counted) */
            if (want ? !strcmp(t, want) : !strncmp(t, "_VigilFusedConv", 15) || !strncmp(t, "_VigilFusedMaxPool", 18))
                nfused++;
        }
    }
    for (int i = 0; i < 4; i++) out[i] = outs[i];
    conv_out = outs[4];
    vg_tensor_free(conv_out);
    vg_run_metadata_free(md);
    vg_session_free(s);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(xv), free(fv), free(bv);
    vg__plan_set_fusion(true);
    return nfused;
}

static void check_case(const fcase *c) {
    vg_tensor *a[4], *b[4];
    const char *want = c->relu ? "_VigilFusedConv2DBiasRelu" : "_VigilFusedConv2DBias";
    int nf = run_case(c, true, false, a, want);
    int nu = run_case(c, false, false, b, NULL);
    /* the conv node runs the fused kernel; BiasAdd (and Relu) forward its output */
    CHECK_EQ_INT(nf, 1);
    CHECK_EQ_INT(nu, 0);
    double tol = c->dt == VG_DOUBLE ? 1e-12 : 2e-5;
    for (int i = 0; i < 4; i++) {
        double m = maxdiff(a[i], b[i]);
        if (!(m <= tol))
            fprintf(stderr, "fusion n%lld %lldx%lldx%lld k%lld co%lld s%lld %s relu=%d %s t%d: output %d differs by %g\n",
                    (long long)c->n, (long long)c->h, (long long)c->w, (long long)c->ci, (long long)c->k,
                    (long long)c->co, (long long)c->s, c->same ? "SAME" : "VALID", c->relu, vg_dtype_name(c->dt),
                    c->threads, i, m);
        CHECK(m <= tol);
        vg_tensor_free(a[i]);
        vg_tensor_free(b[i]);
    }
}

static const fcase cases[] = {
    {4, 14, 14, 32, 5, 64, 1, true, true, VG_FLOAT, 1},  /* the CNN's conv2: oneDNN with bias+ReLU post-op */
    {5, 14, 14, 32, 5, 64, 1, true, true, VG_FLOAT, 2},  /* uneven batch slices over 2 threads */
    {3, 28, 28, 1, 5, 32, 1, true, true, VG_FLOAT, 1},   /* conv1 (Cin 1): direct kernel + epilogue */
    {3, 28, 28, 1, 5, 32, 1, true, true, VG_FLOAT, 2},
    {2, 9, 11, 16, 3, 16, 2, false, false, VG_FLOAT, 1}, /* strided VALID, bias only */
    {2, 7, 7, 3, 3, 5, 1, true, true, VG_FLOAT, 2},      /* odd channels: im2col + epilogue */
    {2, 7, 6, 3, 3, 4, 2, true, true, VG_DOUBLE, 1},     /* float64 */
    {2, 6, 6, 2, 3, 3, 1, false, false, VG_DOUBLE, 2},
};

static void test_fusion__matches_unfused(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!(tu_emulated() && cases[i].threads > 1)) check_case(&cases[i]); /* test_util.h */
}

/* The same on each backend and with oneDNN's convolutions forced off (direct kernels
 * then run the fused op, with the epilogue). */
static void test_fusion__backends(void) {
    vg_status st;
    vg_backend old = vg_backend_get();
    vg_backend be[2] = {VG_BACKEND_OPENBLAS, VG_BACKEND_DNNL};
    for (int k = 0; k < 2; k++) {
        if (vg_backend_set(be[k], &st) != VG_OK) continue;
        for (int dn = 0; dn <= 2; dn += 2) {
            vg__conv_set_dnnl(dn);
            check_case(&cases[0]);
            check_case(&cases[4]);
        }
    }
    vg__conv_set_dnnl(1);
    CHECK_OK(vg_backend_set(old, &st), &st);
}

/* Fetching the convolution's own output keeps the chain unfused (its value must exist). */
static void test_fusion__needed_intermediate_not_fused(void) {
    vg_tensor *a[4];
    fcase c = {2, 8, 8, 16, 3, 16, 1, true, true, VG_FLOAT, 1};
    CHECK_EQ_INT(run_case(&c, true, true, a, NULL), 0);
    for (int i = 0; i < 4; i++) vg_tensor_free(a[i]);
}

/* relu -> max_pool and the gradient of sum(exp(pool + sin(pool))): MaxPoolGrad -> ReluGrad fused
 * (returns the number of fused nodes traced; *dx the gradient). Inputs are quantized
 * so that windows have ties, and half of them are <= 0 (all-zero windows after relu). */
static int run_pool_case(const int64_t xd[4], int k, int s, bool same, vg_dtype dt, int threads, bool fused,
                         vg_tensor **dx) {
    vg__plan_set_fusion(fused);
    vg_graph *g = vg_graph_new();
    int64_t ks[4] = {1, k, k, 1}, ss[4] = {1, s, s, 1};
    vg_output x = vg_placeholder(g, dt, xd, 4, "x");
    vg_output r = vg_relu(g, x, NULL);
    vg_output pool = vg_max_pool(g, r, ks, ss, same ? "SAME" : "VALID", NULL);
    /* exp: a gradient that is not 0 where pool is 0 (all-zero windows after the relu) */
    vg_output L = vg_reduce_sum(g, vg_exp(g, vg_add(g, pool, vg_sin(g, pool, NULL), NULL), NULL), NULL, -1, false,
                                NULL);
    vg_output d;
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, &x, 1, NULL, &d, &st), &st);
    int64_t nx = xd[0] * xd[1] * xd[2] * xd[3];
    double *xv = randv(nx, 7);
    for (int64_t i = 0; i < nx; i++) xv[i] = floor(xv[i] * 4) / 4;
    vg_tensor *val = mk(dt, xd, 4, xv);
    vg_session_options o = {0};
    o.intra_op_threads = threads;
    o.inter_op_threads = 1;
    vg_session *sess = vg_session_new(g, &o, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int n = -1;
    *dx = NULL;
    if (sess && md) {
        CHECK_OK(vg_session_run(sess, &ro, &x, &val, 1, &d, dx, 1, NULL, 0, md, &st), &st);
        n = 0;
        for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
            n += !strcmp(vg_run_metadata_node(md, i)->op_type, "_VigilFusedMaxPoolGradReluGrad");
    }
    vg_run_metadata_free(md);
    vg_session_free(sess);
    vg_tensor_free(val);
    vg_graph_free(g);
    free(xv);
    vg__plan_set_fusion(true);
    return n;
}

static void test_fusion__max_pool_grad_relu_grad(void) {
    static const struct {
        int64_t xd[4];
        int k, s;
        bool same;
        vg_dtype dt;
        int threads;
    } pc[] = {
        {{3, 28, 28, 32}, 2, 2, false, VG_FLOAT, 1}, /* the CNN's pools: AVX-512 tiled kernel */
        {{3, 14, 14, 64}, 2, 2, false, VG_FLOAT, 2},
        {{2, 7, 9, 16}, 2, 2, true, VG_FLOAT, 1},    /* clipped border windows */
        {{2, 6, 6, 3}, 2, 2, false, VG_FLOAT, 2},    /* generic tiled path */
        {{2, 7, 7, 5}, 3, 2, true, VG_FLOAT, 1},     /* overlapping windows: scatter-add */
        {{2, 6, 5, 4}, 2, 2, true, VG_DOUBLE, 2},
    };
    for (int simd = 1; simd >= 0; simd--) {
        vg__pool_set_simd(simd);
        for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
            vg_tensor *a, *b;
            CHECK_EQ_INT(run_pool_case(pc[i].xd, pc[i].k, pc[i].s, pc[i].same, pc[i].dt, pc[i].threads, true, &a), 1);
            CHECK_EQ_INT(run_pool_case(pc[i].xd, pc[i].k, pc[i].s, pc[i].same, pc[i].dt, pc[i].threads, false, &b), 0);
            double m = maxdiff(a, b);
            if (m != 0) fprintf(stderr, "pool case %zu simd %d: fused gradient differs by %g\n", i, simd, m);
            CHECK(m == 0); /* the same arithmetic: exactly equal */
            vg_tensor_free(a);
            vg_tensor_free(b);
        }
    }
    vg__pool_set_simd(1);
}

/* bias_add -> relu -> max_pool and the gradients of sum(exp(pool + sin(pool))) w.r.t.
 * the input and the bias: MaxPoolGrad -> ReluGrad fused, with the bias gradient summed
 * by the same kernel (_VigilFusedMaxPoolGradReluGradBiasAddGrad); out: pool, dx, db.
 * Returns how many traced nodes ran that kernel. */
static int run_pool_bias_case(const int64_t xd[4], int k, int s, bool same, vg_dtype dt, int threads, bool fused,
                              vg_tensor **out) {
    vg__plan_set_fusion(fused);
    vg_graph *g = vg_graph_new();
    int64_t ks[4] = {1, k, k, 1}, ss[4] = {1, s, s, 1}, bd[1] = {xd[3]};
    vg_output x = vg_placeholder(g, dt, xd, 4, "x"), b = vg_placeholder(g, dt, bd, 1, "b");
    vg_output r = vg_relu(g, vg_bias_add(g, x, b, NULL), NULL);
    vg_output pool = vg_max_pool(g, r, ks, ss, same ? "SAME" : "VALID", NULL);
    vg_output L = vg_reduce_sum(g, vg_exp(g, vg_add(g, pool, vg_sin(g, pool, NULL), NULL), NULL), NULL, -1, false,
                                NULL);
    vg_output in[2] = {x, b}, d[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 2, NULL, d + 1, &st), &st);
    d[0] = pool;
    int64_t nx = xd[0] * xd[1] * xd[2] * xd[3];
    double *xv = randv(nx, 7), *bv = randv(xd[3], 8);
    for (int64_t i = 0; i < nx; i++) xv[i] = floor(xv[i] * 4) / 4;
    for (int64_t i = 0; i < xd[3]; i++) bv[i] = floor(bv[i] * 4) / 4;
    vg_tensor *vals[2] = {mk(dt, xd, 4, xv), mk(dt, bd, 1, bv)};
    vg_session_options o = {0};
    o.intra_op_threads = threads;
    o.inter_op_threads = 1;
    vg_session *sess = vg_session_new(g, &o, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int n = -1;
    for (int i = 0; i < 3; i++) out[i] = NULL;
    if (sess && md) {
        CHECK_OK(vg_session_run(sess, &ro, in, vals, 2, d, out, 3, NULL, 0, md, &st), &st);
        n = 0;
        for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
            n += !strcmp(vg_run_metadata_node(md, i)->op_type, "_VigilFusedMaxPoolGradReluGradBiasAddGrad");
    }
    vg_run_metadata_free(md);
    vg_session_free(sess);
    for (int i = 0; i < 2; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(xv);
    free(bv);
    vg__plan_set_fusion(true);
    return n;
}

/* The bias gradient from the pool-gradient kernel equals BiasAddGrad's (within float
 * summation order), dx is exactly the unfused one, on the AVX-512 and the generic
 * paths; the AVX-512 max pool's forward values equal the generic loop's exactly. */
static void test_fusion__max_pool_grad_bias_grad(void) {
    static const struct {
        int64_t xd[4];
        int k, s;
        bool same;
        vg_dtype dt;
        int threads;
    } pc[] = {
        {{3, 28, 28, 32}, 2, 2, false, VG_FLOAT, 1}, /* the CNN's pools: AVX-512 tiled kernels */
        {{5, 14, 14, 64}, 2, 2, false, VG_FLOAT, 2}, /* partial sums of 2 units */
        {{2, 7, 9, 16}, 2, 2, true, VG_FLOAT, 1},    /* clipped border windows */
        {{2, 6, 6, 3}, 2, 2, false, VG_FLOAT, 2},    /* generic tiled path */
        {{2, 7, 7, 5}, 3, 2, true, VG_FLOAT, 1},     /* overlapping windows: scatter-add */
        {{3, 6, 5, 4}, 2, 2, true, VG_DOUBLE, 2},
    };
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
        vg_tensor *ref[3] = {NULL, NULL, NULL};
        for (int simd = 1; simd >= 0; simd--) {
            vg__pool_set_simd(simd);
            vg_tensor *a[3], *b[3];
            CHECK_EQ_INT(run_pool_bias_case(pc[i].xd, pc[i].k, pc[i].s, pc[i].same, pc[i].dt, pc[i].threads, true, a),
                         1);
            CHECK_EQ_INT(run_pool_bias_case(pc[i].xd, pc[i].k, pc[i].s, pc[i].same, pc[i].dt, pc[i].threads, false, b),
                         0);
            double tol = pc[i].dt == VG_DOUBLE ? 1e-12 : 1e-5;
            double mp = maxdiff(a[0], b[0]), mx = maxdiff(a[1], b[1]), mb = maxdiff(a[2], b[2]);
            if (mp != 0 || mx != 0 || !(mb <= tol))
                fprintf(stderr, "pool+bias case %zu simd %d: pool %g dx %g db %g\n", i, simd, mp, mx, mb);
            CHECK(mp == 0);
            CHECK(mx == 0);
            CHECK(mb <= tol);
            CHECK(vg_tensor_num_elements(a[2]) == pc[i].xd[3]);
            if (simd) {
                for (int q = 0; q < 3; q++) ref[q] = a[q];
            } else {
                /* generic vs AVX-512: pool and dx exact, db within float sums */
                CHECK(maxdiff(a[0], ref[0]) == 0);
                CHECK(maxdiff(a[1], ref[1]) == 0);
                CHECK(maxdiff(a[2], ref[2]) <= tol);
                for (int q = 0; q < 3; q++) vg_tensor_free(a[q]);
            }
            for (int q = 0; q < 3; q++) vg_tensor_free(b[q]);
        }
        for (int q = 0; q < 3; q++) vg_tensor_free(ref[q]);
    }
    vg__pool_set_simd(1);
}

/* conv -> bias_add -> relu -> max_pool 2x2/2 VALID and the gradients of
 * sum(pool * pool) w.r.t. x, f, b: the conv node pools too
 * (_VigilFusedConv2DBiasReluMaxPool). out: pool, dx, df, db; returns the number of
 * nodes traced with that kernel. */
static int run_conv_pool_case(const fcase *c, bool fused, vg_tensor **out) {
    vg__plan_set_fusion(fused);
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {c->n, c->h, c->w, c->ci}, fd[4] = {c->k, c->k, c->ci, c->co}, bd[1] = {c->co};
    int64_t strides[4] = {1, c->s, c->s, 1}, two[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, c->dt, xd, 4, "x"), f = vg_placeholder(g, c->dt, fd, 4, "f");
    vg_output b = vg_placeholder(g, c->dt, bd, 1, "b");
    vg_output y = vg_relu(g, vg_bias_add(g, vg_conv2d(g, x, f, strides, c->same ? "SAME" : "VALID", NULL), b, NULL),
                          NULL);
    vg_output pool = vg_max_pool(g, y, two, two, "VALID", NULL);
    vg_output L = vg_reduce_sum(g, vg_mul(g, pool, pool, NULL), NULL, -1, false, NULL);
    vg_output in[3] = {x, f, b}, d[4];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 3, NULL, d + 1, &st), &st);
    d[0] = pool;
    int64_t nx = xd[0] * xd[1] * xd[2] * xd[3], nf = fd[0] * fd[1] * fd[2] * fd[3];
    double *xv = randv(nx, 4), *fv = randv(nf, 5), *bv = randv(c->co, 6);
    vg_tensor *vals[3] = {mk(c->dt, xd, 4, xv), mk(c->dt, fd, 4, fv), mk(c->dt, bd, 1, bv)};
    vg_session_options o = {0};
    o.intra_op_threads = c->threads;
    o.inter_op_threads = 1;
    vg_session *s = vg_session_new(g, &o, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int n = -1;
    for (int i = 0; i < 4; i++) out[i] = NULL;
    if (s && md) {
        CHECK_OK(vg_session_run(s, &ro, in, vals, 3, d, out, 4, NULL, 0, md, &st), &st);
        n = 0;
        for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
            n += !strcmp(vg_run_metadata_node(md, i)->op_type, "_VigilFusedConv2DBiasReluMaxPool");
    }
    vg_run_metadata_free(md);
    vg_session_free(s);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(xv), free(fv), free(bv);
    vg__plan_set_fusion(true);
    return n;
}

/* The fused conv + max pool gives the unfused plan's pool and gradients: direct kernel
 * (Cin 1, pooled per image; AVX-512 and AVX2), oneDNN (pooled after), im2col, float64,
 * odd sizes (VALID drops the last row / column), 1 and 2 threads, AVX-512 and generic
 * pool loops. */
static void test_fusion__conv_max_pool(void) {
    static const fcase pc[] = {
        {3, 28, 28, 1, 5, 32, 1, true, true, VG_FLOAT, 1},  /* the CNN's conv1 + pool1 */
        {3, 28, 28, 1, 5, 32, 1, true, true, VG_FLOAT, 2},
        {3, 14, 14, 32, 5, 64, 1, true, true, VG_FLOAT, 2}, /* conv2 + pool2 */
        {2, 9, 11, 1, 3, 16, 1, true, true, VG_FLOAT, 1},   /* odd sizes */
        {2, 7, 7, 3, 3, 5, 1, true, true, VG_FLOAT, 2},     /* im2col, odd channels */
        {2, 7, 6, 3, 3, 4, 1, true, true, VG_DOUBLE, 1},
    };
    for (int simd = 1; simd >= -1; simd--) {
        /* simd -1: the AVX2 direct convolution kernels (bias and ReLU in their registers) */
        vg__pool_set_simd(simd != 0);
        vg__conv_set_direct(simd < 0 ? 1 : 2);
        for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
            vg_tensor *a[4], *b[4];
            CHECK_EQ_INT(run_conv_pool_case(&pc[i], true, a), 1);
            CHECK_EQ_INT(run_conv_pool_case(&pc[i], false, b), 0);
            double tol = pc[i].dt == VG_DOUBLE ? 1e-12 : 2e-5;
            for (int q = 0; q < 4; q++) {
                double m = maxdiff(a[q], b[q]);
                if (!(m <= tol)) fprintf(stderr, "conv+pool case %zu simd %d: output %d differs by %g\n", i, simd, q, m);
                CHECK(m <= tol);
                vg_tensor_free(a[q]);
                vg_tensor_free(b[q]);
            }
        }
    }
    vg__pool_set_simd(1);
    vg__conv_set_direct(2);
}

/* conv -> bias_add -> relu -> max_pool 2x2/2 VALID with the gradients of
 * sum(pool * pool + sin(pool)) w.r.t. the filter and the bias only (the input
 * gradient not asked for, as in a CNN's first layer): the filter-gradient node takes
 * the pool gradient's inputs (_VigilFusedMaxPoolGradConv2DBackpropFilter) where the
 * dtype is float32. out: df, db; returns the number of nodes traced with that kernel. */
static int run_pool_filter_case(const fcase *c, bool fused, vg_tensor **out) {
    vg__plan_set_fusion(fused);
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {c->n, c->h, c->w, c->ci}, fd[4] = {c->k, c->k, c->ci, c->co}, bd[1] = {c->co};
    int64_t strides[4] = {1, c->s, c->s, 1}, two[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, c->dt, xd, 4, "x"), f = vg_placeholder(g, c->dt, fd, 4, "f");
    vg_output b = vg_placeholder(g, c->dt, bd, 1, "b");
    vg_output y = vg_relu(g, vg_bias_add(g, vg_conv2d(g, x, f, strides, c->same ? "SAME" : "VALID", NULL), b, NULL),
                          NULL);
    vg_output pool = vg_max_pool(g, y, two, two, "VALID", NULL);
    vg_output L = vg_reduce_sum(g, vg_add(g, vg_mul(g, pool, pool, NULL), vg_sin(g, pool, NULL), NULL), NULL, -1,
                                false, NULL);
    vg_output in[2] = {f, b}, d[2];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 2, NULL, d, &st), &st);
    int64_t nx = xd[0] * xd[1] * xd[2] * xd[3], nf = fd[0] * fd[1] * fd[2] * fd[3];
    double *xv = randv(nx, 9), *fv = randv(nf, 10), *bv = randv(c->co, 11);
    /* quarters: exact conv sums, so windows often hold equal maxima (first one wins) */
    for (int64_t i = 0; i < nx; i++) xv[i] = floor(xv[i] * 4) / 4;
    for (int64_t i = 0; i < nf; i++) fv[i] = floor(fv[i] * 4) / 4;
    for (int64_t i = 0; i < c->co; i++) bv[i] = floor(bv[i] * 4) / 4;
    vg_output feeds[3] = {x, f, b};
    vg_tensor *vals[3] = {mk(c->dt, xd, 4, xv), mk(c->dt, fd, 4, fv), mk(c->dt, bd, 1, bv)};
    vg_session_options o = {0};
    o.intra_op_threads = c->threads;
    o.inter_op_threads = 1;
    vg_session *s = vg_session_new(g, &o, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int n = -1;
    out[0] = out[1] = NULL;
    if (s && md) {
        /* twice: the second run reuses the cached plan */
        for (int r = 0; r < 2; r++) {
            vg_tensor_free(out[0]);
            vg_tensor_free(out[1]);
            vg_run_metadata_clear(md);
            CHECK_OK(vg_session_run(s, &ro, feeds, vals, 3, d, out, 2, NULL, 0, md, &st), &st);
        }
        n = 0;
        for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
            n += !strcmp(vg_run_metadata_node(md, i)->op_type, "_VigilFusedMaxPoolGradConv2DBackpropFilter");
    }
    vg_run_metadata_free(md);
    vg_session_free(s);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(xv), free(fv), free(bv);
    vg__plan_set_fusion(true);
    return n;
}

/* The filter and bias gradients straight from the pool gradient, and the unfused
 * plan's (MaxPoolGrad + ReluGrad + BiasAddGrad, then Conv2DBackpropFilter), each equal
 * the unfused plan's in float64 within float sums: the AVX-512 path (Cin 1, 5x5, stride 1: the CNN's conv1), the generic loops
 * (other filters, Cin > 1, strides, the AVX-512 pools off), odd sizes whose last row /
 * column no pool window covers, VALID, 1 and 2 threads; float64 is not fused. */
static void test_fusion__pool_grad_conv_filter(void) {
    static const fcase pc[] = {
        {4, 28, 28, 1, 5, 32, 1, true, true, VG_FLOAT, 1},  /* the CNN's conv1 */
        {5, 28, 28, 1, 5, 32, 1, true, true, VG_FLOAT, 2},  /* two units */
        {2, 13, 11, 1, 5, 16, 1, true, true, VG_FLOAT, 1},  /* odd: uncovered row and column */
        {2, 12, 10, 1, 5, 16, 1, false, true, VG_FLOAT, 2}, /* VALID: 8x6 output */
        {2, 9, 8, 1, 3, 16, 1, true, true, VG_FLOAT, 1},    /* 3x3: generic */
        {2, 9, 9, 3, 5, 8, 1, true, true, VG_FLOAT, 2},     /* Cin 3, Cout 8: generic */
        {2, 15, 14, 1, 5, 16, 2, true, true, VG_FLOAT, 1},  /* stride 2: generic */
        {2, 8, 8, 1, 5, 16, 1, true, true, VG_DOUBLE, 1},   /* float64: not fused */
    };
    for (int simd = 1; simd >= 0; simd--) {
        vg__pool_set_simd(simd);
        for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
            /* a: fused, b: unfused, r: the unfused plan in float64 (the reference) */
            vg_tensor *a[2], *b[2], *r[2];
            fcase dc = pc[i];
            dc.dt = VG_DOUBLE;
            CHECK_EQ_INT(run_pool_filter_case(&pc[i], true, a), pc[i].dt == VG_FLOAT ? 1 : 0);
            CHECK_EQ_INT(run_pool_filter_case(&pc[i], false, b), 0);
            CHECK_EQ_INT(run_pool_filter_case(&dc, false, r), 0);
            for (int q = 0; q < 2; q++) {
                /* float: each within 2e-5 of float64 (seen: up to 1.4e-5 over 5x28x28 terms,
                 * the two float sums erring in opposite directions by up to 2.1e-5 together
                 * with oneDNN's SSE4.1 kernels) */
                double tol = pc[i].dt == VG_DOUBLE ? 1e-12 : 2e-5;
                double m = maxdiff(a[q], r[q]), mu = maxdiff(b[q], r[q]);
                if (!(m <= tol) || !(mu <= tol))
                    fprintf(stderr, "pool+filter case %zu simd %d: output %d off float64 by %g fused, %g unfused\n", i,
                            simd, q, m, mu);
                CHECK(m <= tol);
                CHECK(mu <= tol);
                CHECK(vg_tensor_num_elements(a[q]) == (q ? pc[i].co : pc[i].k * pc[i].k * pc[i].ci * pc[i].co));
                vg_tensor_free(a[q]);
                vg_tensor_free(b[q]);
                vg_tensor_free(r[q]);
            }
        }
    }
    vg__pool_set_simd(1);
}

/* A by-hand value: 1x2x2x1 input of 1..4, 1x1 filter 2, bias -5: relu(2x - 5) = 0,0,1,3. */
static void test_fusion__by_hand(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {1, 2, 2, 1}, fd[4] = {1, 1, 1, 1}, bd[1] = {1}, s1[4] = {1, 1, 1, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x");
    vg_output y = vg_relu(g, vg_bias_add(g, vg_conv2d(g, x, vg_const_fill(g, VG_FLOAT, fd, 4, 2.0, NULL), s1, "SAME",
                                                      NULL),
                                         vg_const_fill(g, VG_FLOAT, bd, 1, -5.0, NULL), NULL),
                          NULL);
    vg_tensor *xv = mk(VG_FLOAT, xd, 4, (double[]){1, 2, 3, 4}), *out = NULL;
    vg_status st;
    CHECK_OK(run_threads(g, 1, &x, &xv, 1, &y, &out, 1, &st), &st);
    for (int i = 0; i < 4 && out; i++) CHECK_NEAR(get(out, i), ((double[]){0, 0, 1, 3})[i], 1e-6);
    kt_teardown(g, NULL, (vg_tensor *[]){out, xv}, 2, NULL, 0);
}

/* FusedBatchNormV3 -> Relu / Relu6 and FusedBatchNormGradV3 <- ReluGrad / Relu6Grad
 * (fuse_bn_act): y and the gradients of sum(exp(sin(act(bn(x))))) w.r.t. x, scale and
 * offset equal the unfused plan's, training and inference, float32 and float64; scale 4
 * and offset 2 put outputs on both sides of 0 and 6. Fetching bn's y leaves the forward
 * pair alone. Returns the fused nodes traced (want: the forward or gradient kernel). */
static int64_t g_bn_read; /* bytes_read of the last traced `want` node */
static bool g_bn_feed_y;  /* feed bn's y (its activation then reads a fed value) */
static int run_bn_case(bool relu6, bool training, vg_dtype dt, bool fused, bool fetch_y, vg_tensor **out,
                       const char *want) {
    vg__plan_set_fusion(fused);
    enum { N = 2, H = 5, W = 7, C = 6 };
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {N, H, W, C}, cd[1] = {C};
    vg_output x = vg_placeholder(g, dt, xd, 4, "x"), sc = vg_placeholder(g, dt, cd, 1, "scale"),
              of = vg_placeholder(g, dt, cd, 1, "offset");
    double mv[C], vv[C];
    for (int k = 0; k < C; k++) mv[k] = 0.1 * k - 0.2, vv[k] = 0.5 + 0.2 * k;
    vg_output mean = training ? vg_const_fill(g, dt, (int64_t[]){0}, 1, 0, "m") : vg_cast(g, vg_const_array(g, VG_DOUBLE, cd, 1, mv, "m"), dt, NULL);
    vg_output var = training ? vg_const_fill(g, dt, (int64_t[]){0}, 1, 0, "v") : vg_cast(g, vg_const_array(g, VG_DOUBLE, cd, 1, vv, "v"), dt, NULL);
    vg_op *bn = vg_fused_batch_norm_v3(g, x, sc, of, mean, var, 0.001f, training, NULL);
    vg_output y = relu6 ? vg_relu6(g, vg_out(bn, 0), NULL) : vg_relu(g, vg_out(bn, 0), NULL);
    vg_output L = vg_reduce_sum(g, vg_exp(g, vg_sin(g, y, NULL), NULL), NULL, -1, false, NULL);
    vg_output in[3] = {x, sc, of}, d[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 3, NULL, d, &st), &st);
    double *xv = randv(N * H * W * C, 11), scv[C], ofv[C];
    for (int k = 0; k < C; k++) scv[k] = 4 - 0.3 * k, ofv[k] = 2 + 0.1 * k;
    double *yv = randv(N * H * W * C, 12);
    for (int i = 0; i < N * H * W * C; i++) yv[i] = 8 * yv[i] - 1; /* across 0 and 6 */
    vg_tensor *vals[4] = {mk(dt, xd, 4, xv), mk(dt, cd, 1, scv), mk(dt, cd, 1, ofv), mk(dt, xd, 4, yv)};
    vg_output feeds[4] = {x, sc, of, vg_out(bn, 0)};
    vg_output fetch[5] = {y, d[0], d[1], d[2], vg_out(bn, 0)};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    vg_tensor *outs[5] = {NULL};
    int n = -1;
    if (s && md) {
        CHECK_OK(vg_session_run(s, &ro, feeds, vals, g_bn_feed_y ? 4 : 3, fetch, outs, fetch_y ? 5 : 4, NULL, 0, md,
                                &st),
                 &st);
        n = 0;
        for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
            if (!strcmp(vg_run_metadata_node(md, i)->op_type, want)) {
                n++;
                g_bn_read = vg_run_metadata_node(md, i)->bytes_read;
            }
    }
    for (int i = 0; i < 4; i++) out[i] = outs[i];
    vg_tensor_free(outs[4]);
    vg_run_metadata_free(md);
    vg_session_free(s);
    for (int i = 0; i < 4; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(xv);
    free(yv);
    vg__plan_set_fusion(true);
    return n;
}

static void test_fusion__batch_norm_activation(void) {
    for (int r6 = 0; r6 < 2; r6++)
        for (int tr = 0; tr < 2; tr++)
            for (int d = 0; d < 2; d++) {
                vg_dtype dt = d ? VG_DOUBLE : VG_FLOAT;
                const char *fw = r6 ? "_VigilFusedBatchNormRelu6" : "_VigilFusedBatchNormRelu";
                const char *gw = r6 ? "_VigilFusedBatchNormGradRelu6Grad" : "_VigilFusedBatchNormGradReluGrad";
                vg_tensor *a[4], *b[4], *c[4];
                CHECK_EQ_INT(run_bn_case(r6, tr, dt, true, false, a, fw), 1);
                CHECK_EQ_INT(run_bn_case(r6, tr, dt, true, false, c, gw), 1);
                /* the gradient recomputes the forward's y for its mask: it reads dy, x and
                 * per-channel vectors, not the activation's output */
                int64_t xbytes = 2 * 5 * 7 * 6 * (int64_t)vg_dtype_size(dt);
                CHECK(g_bn_read < 2 * xbytes + 64 * (int64_t)vg_dtype_size(dt));
                CHECK_EQ_INT(run_bn_case(r6, tr, dt, false, false, b, fw), 0);
                /* the same float operations in the same order: the same bits */
                for (int i = 0; i < 4; i++) {
                    double e = maxdiff(a[i], b[i]);
                    if (!(e == 0)) fprintf(stderr, "relu6 %d training %d %s output %d: %g\n", r6, tr, vg_dtype_name(dt), i, e);
                    CHECK(e == 0);
                }
                /* y fed: the activation reads a value the forward did not compute, so the
                 * fused gradient reads it for the mask, and still matches the unfused plan */
                g_bn_feed_y = true;
                vg_tensor *e1[4], *e2[4];
                CHECK_EQ_INT(run_bn_case(r6, tr, dt, true, false, e1, gw), 1);
                CHECK(g_bn_read >= 3 * xbytes);
                run_bn_case(r6, tr, dt, false, false, e2, gw);
                for (int i = 0; i < 4; i++) {
                    CHECK(maxdiff(e1[i], e2[i]) == 0);
                    vg_tensor_free(e1[i]), vg_tensor_free(e2[i]);
                }
                g_bn_feed_y = false;
                /* the activation's mask really matters: some outputs are clamped */
                int clamped = 0;
                for (int64_t i = 0; a[0] && i < vg_tensor_num_elements(a[0]); i++)
                    clamped += get(a[0], i) == 0 || get(a[0], i) == 6;
                CHECK(clamped > 0);
                for (int i = 0; i < 4; i++) vg_tensor_free(a[i]), vg_tensor_free(b[i]), vg_tensor_free(c[i]);
                /* y fetched: the forward pair stays unfused */
                CHECK_EQ_INT(run_bn_case(r6, tr, dt, true, true, a, fw), 0);
                for (int i = 0; i < 4; i++) vg_tensor_free(a[i]);
            }
}

int main(void) {
    RUN_TEST(test_fusion__by_hand);
    RUN_TEST(test_fusion__matches_unfused);
    RUN_TEST(test_fusion__backends);
    RUN_TEST(test_fusion__needed_intermediate_not_fused);
    RUN_TEST(test_fusion__max_pool_grad_relu_grad);
    RUN_TEST(test_fusion__max_pool_grad_bias_grad);
    RUN_TEST(test_fusion__conv_max_pool);
    RUN_TEST(test_fusion__pool_grad_conv_filter);
    RUN_TEST(test_fusion__batch_norm_activation);
    TEST_MAIN_END();
}
