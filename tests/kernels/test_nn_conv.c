/* test_nn_conv.c - Conv2D and its two backprop ops against naive reference loops
 * (SAME and VALID, strides 1 and 2, odd sizes, 1x1 filters, kernels larger than the
 * input, chunked/threaded sizes), MaxPool/AvgPool and their gradient ops (including
 * max ties), error paths, build-time shapes of the gradient ops, and finite-difference
 * gradient checks (float64) of every differentiable op. */
#include "test_util.h"
#include "op_test_util.h"
#include "count_alloc_util.h"
#include "gradcheck.h"
#include "kernels/nn/nn_internal.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "conv_ref_fixture.h"
#include <pthread.h>

/* ---- helpers ----------------------------------------------------------- */

/* Compares t with want (n values); prints the first few mismatches. */
static int compare(const char *what, const vg_tensor *t, const double *want, int64_t n, double tol) {
    if (!t) { fprintf(stderr, "%s: no output\n", what); return 1; }
    if (vg_tensor_num_elements(t) != n) {
        fprintf(stderr, "%s: %lld elements, want %lld\n", what, (long long)vg_tensor_num_elements(t), (long long)n);
        return 1;
    }
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(get(t, i) - want[i]) <= tol * (1 + fabs(want[i]))) && bad++ < 4)
            fprintf(stderr, "%s[%lld] = %.7g, want %.7g\n", what, (long long)i, get(t, i), want[i]);
    return bad;
}

typedef conv_cfg cfg;

/* ---- naive references -------------------------------------------------- */

#define X(n, y, x, c) x_[(((n) * c_->h + (y)) * c_->w + (x)) * c_->ci + (c)]
#define F(ky, kx, ci, co) f_[(((ky) * c_->kw + (kx)) * c_->ci + (ci)) * c_->co + (co)]
#define Y(n, y, x, c) y_[(((n) * oh + (y)) * ow + (x)) * c_->co + (c)]

#undef F

/* Pools: kind 0 max, 1 avg; mode 0 forward (y from x), 1 gradient (dx from x, dy). */
static void pool_ref(const cfg *c_, int kind, int mode, const double *x_, double *y_, double *dx) {
    int64_t oh, ow, pt, pl;
    win(c_->h, c_->kh, c_->sh, c_->same, &oh, &pt);
    win(c_->w, c_->kw, c_->sw, c_->same, &ow, &pl);
    if (mode == 1) memset(dx, 0, sizeof(double) * (size_t)(c_->n * c_->h * c_->w * c_->ci));
    for (int64_t n = 0; n < c_->n; n++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t c = 0; c < c_->ci; c++) {
                    double best = -INFINITY, sum = 0;
                    int64_t cnt = 0, by = -1, bx = -1;
                    for (int64_t ky = 0; ky < c_->kh; ky++)
                        for (int64_t kx = 0; kx < c_->kw; kx++) {
                            int64_t iy = oy * c_->sh - pt + ky, ix = ox * c_->sw - pl + kx;
                            if (iy < 0 || iy >= c_->h || ix < 0 || ix >= c_->w) continue;
                            double v = X(n, iy, ix, c);
                            if (by < 0 || v > best) { best = v; by = iy; bx = ix; }
                            sum += v;
                            cnt++;
                        }
                    double *yo = &y_[(((n * oh) + oy) * ow + ox) * c_->ci + c];
                    if (mode == 0) { *yo = kind == 0 ? best : sum / (double)cnt; continue; }
                    if (kind == 0) {
                        dx[((n * c_->h + by) * c_->w + bx) * c_->ci + c] += *yo;
                        continue;
                    }
                    for (int64_t ky = 0; ky < c_->kh; ky++)
                        for (int64_t kx = 0; kx < c_->kw; kx++) {
                            int64_t iy = oy * c_->sh - pt + ky, ix = ox * c_->sw - pl + kx;
                            if (iy < 0 || iy >= c_->h || ix < 0 || ix >= c_->w) continue;
                            dx[((n * c_->h + iy) * c_->w + ix) * c_->ci + c] += *yo / (double)cnt;
                        }
                }
}
#undef X
#undef Y

/* ---- Conv2D forward and backprops vs the reference --------------------- */

static const cfg conv_cfgs[] = {
    {2, 5, 5, 2, 3, 3, 3, 1, 1, true},
    {2, 5, 5, 2, 3, 3, 3, 1, 1, false},
    {1, 7, 6, 3, 3, 2, 4, 2, 2, true},
    {2, 7, 6, 3, 3, 2, 4, 2, 2, false},
    {2, 8, 7, 3, 4, 4, 2, 2, 3, true},   /* even kernel: asymmetric padding */
    {3, 8, 8, 4, 1, 1, 5, 1, 1, true},   /* 1x1: the GEMM-only path */
    {2, 6, 6, 3, 1, 1, 2, 2, 2, false},  /* 1x1 stride 2: still im2col */
    {2, 4, 4, 1, 5, 5, 2, 1, 1, true},   /* kernel larger than the input */
    {1, 3, 3, 2, 3, 3, 2, 1, 1, false},  /* one output pixel */
    {4, 14, 14, 16, 5, 5, 32, 1, 1, true}, /* chunks that straddle images */
    {16, 16, 16, 8, 5, 5, 16, 1, 1, true}, /* several chunks per thread */
    {9, 28, 28, 1, 5, 5, 8, 1, 1, true},   /* the CNN's first layer, small batch */
    {5, 14, 14, 32, 5, 5, 64, 1, 1, true}, /* the CNN's second layer; 5 images: uneven thread slices */
    {3, 11, 9, 16, 3, 3, 16, 2, 2, false}, /* strided VALID, odd sizes (negative right padding) */
    {2, 7, 7, 3, 3, 3, 17, 2, 1, true},    /* odd channel counts */
};

static void run_conv_cfg(const cfg *c, vg_dtype dt, int threads) {
    int64_t oh, ow, pad;
    win(c->h, c->kh, c->sh, c->same, &oh, &pad);
    win(c->w, c->kw, c->sw, c->same, &ow, &pad);
    int64_t xd[4] = {c->n, c->h, c->w, c->ci}, fd[4] = {c->kh, c->kw, c->ci, c->co}, yd[4] = {c->n, oh, ow, c->co};
    int64_t nx = c->n * c->h * c->w * c->ci, nf = c->kh * c->kw * c->ci * c->co, ny = c->n * oh * ow * c->co;
    double *x = randv(nx, 1), *f = randv(nf, 2), *dy = randv(ny, 3);
    double *y_ref = malloc(sizeof(double) * (size_t)ny), *dx_ref = malloc(sizeof(double) * (size_t)nx);
    double *df_ref = malloc(sizeof(double) * (size_t)nf);
    conv_ref_ex(c, 0, x, f, y_ref, NULL, false);
    conv_ref_ex(c, 1, dx_ref, f, dy, NULL, false);
    conv_ref_ex(c, 2, x, df_ref, dy, NULL, false);

    vg_graph *g = vg_graph_new();
    static const char *pads[2] = {"VALID", "SAME"};
    int64_t strides[4] = {1, c->sh, c->sw, 1};
    vg_output xp = vg_placeholder(g, dt, xd, 4, "x"), fp = vg_placeholder(g, dt, fd, 4, "f");
    vg_output dyp = vg_placeholder(g, dt, yd, 4, "dy");
    int32_t xs32[4] = {(int32_t)xd[0], (int32_t)xd[1], (int32_t)xd[2], (int32_t)xd[3]};
    int32_t fs32[4] = {(int32_t)fd[0], (int32_t)fd[1], (int32_t)fd[2], (int32_t)fd[3]};
    vg_output fetch[3] = {
        vg_conv2d(g, xp, fp, strides, pads[c->same], NULL),
        vg_conv2d_backprop_input(g, vg_const_i32_vec(g, xs32, 4, NULL), fp, dyp, strides, pads[c->same], NULL),
        vg_conv2d_backprop_filter(g, xp, vg_const_i32_vec(g, fs32, 4, NULL), dyp, strides, pads[c->same], NULL)};
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* build-time shapes */
    const int64_t *want_dims[3] = {yd, xd, fd};
    for (int k = 0; k < 3; k++) {
        vg_shape s = vg_output_shape(fetch[k]);
        CHECK_EQ_INT(s.ndims, 4);
        for (int i = 0; i < 4 && s.ndims == 4; i++) CHECK_EQ_INT(s.dims[i], want_dims[k][i]);
    }
    vg_tensor *vals[3] = {mk(dt, xd, 4, x), mk(dt, fd, 4, f), mk(dt, yd, 4, dy)}, *out[3] = {0};
    vg_output feeds[3] = {xp, fp, dyp};
    CHECK_OK(run_threads(g, threads, feeds, vals, 3, fetch, out, 3, &st), &st);
    double tol = dt == VG_FLOAT ? 1e-4 : 1e-10;
    char what[160];
    snprintf(what, sizeof what, "conv n%lld %lldx%lldx%lld k%lldx%lld co%lld s%lld,%lld %s %s t%d", (long long)c->n,
             (long long)c->h, (long long)c->w, (long long)c->ci, (long long)c->kh, (long long)c->kw, (long long)c->co,
             (long long)c->sh, (long long)c->sw, pads[c->same], vg_dtype_name(dt), threads);
    CHECK_EQ_INT(compare(what, out[0], y_ref, ny, tol), 0);
    CHECK_EQ_INT(compare(what, out[1], dx_ref, nx, tol), 0);
    CHECK_EQ_INT(compare(what, out[2], df_ref, nf, tol), 0);
    for (int k = 0; k < 3; k++) {
        vg_tensor_free(out[k]);
        vg_tensor_free(vals[k]);
    }
    vg_graph_free(g);
    free(x); free(f); free(dy); free(y_ref); free(dx_ref); free(df_ref);
}

/* Every config through each kernel level the CPU has (AVX-512, AVX2 direct kernels)
 * and through im2col + GEMM. */
static void test_nn__conv2d_vs_reference(void) {
    vg__conv_set_dnnl(0);
    vg__conv_set_winograd(0); /* these paths; Winograd: test_conv_winograd.c */
    for (int level = 2; level >= 0; level--) {
        if (vg__conv_set_direct(level) != level) continue; /* not on this CPU */
        for (size_t i = 0; i < sizeof conv_cfgs / sizeof conv_cfgs[0]; i++) {
            run_conv_cfg(&conv_cfgs[i], VG_FLOAT, 1);
            run_conv_cfg(&conv_cfgs[i], VG_FLOAT, 3);
            if (level == 0 && conv_cfgs[i].n * conv_cfgs[i].h * conv_cfgs[i].ci < 1000)
                run_conv_cfg(&conv_cfgs[i], VG_DOUBLE, 2);
        }
    }
    vg__conv_set_direct(2);
    vg__conv_set_dnnl(1);
    vg__conv_set_winograd(1);
}

/* Every float32 config through oneDNN's convolution primitives (forced for every shape),
 * 1 and 3 threads; each of the three ops must have run on oneDNN. */
static void test_nn__conv2d_dnnl_vs_reference(void) {
    vg_status st;
    vg_backend old = vg_backend_get();
    if (!vg__conv_set_dnnl(2) || vg_backend_set(VG_BACKEND_DNNL, &st) != VG_OK) {
        vg__conv_set_dnnl(1);
        return; /* built without oneDNN */
    }
    vg__conv_set_winograd(0); /* oneDNN under test; Winograd: test_conv_winograd.c */
    for (size_t i = 0; i < sizeof conv_cfgs / sizeof conv_cfgs[0]; i++) {
        for (int threads = 1; threads <= (tu_emulated() ? 1 : 3); threads += 2) { /* test_util.h */
            long long before = vg__conv_dnnl_runs();
            run_conv_cfg(&conv_cfgs[i], VG_FLOAT, threads);
            if (vg__conv_dnnl_runs() - before != 3)
                fprintf(stderr, "config %zu, %d threads: %lld of 3 convolutions ran on oneDNN\n", i, threads,
                        vg__conv_dnnl_runs() - before);
            CHECK_EQ_INT(vg__conv_dnnl_runs() - before, 3);
        }
    }
    vg__conv_set_dnnl(1);
    vg__conv_set_winograd(1);
    CHECK_OK(vg_backend_set(old, &st), &st);
}

/* A hand-checked case: 3x3 input of 1..9, 2x2 filter of ones, VALID and SAME. */
static void test_nn__conv2d_by_hand(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {1, 3, 3, 1}, fd[4] = {2, 2, 1, 1}, s1[4] = {1, 1, 1, 1}, s2[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x");
    vg_output f = vg_const_fill(g, VG_FLOAT, fd, 4, 1.0, "f");
    vg_output fetch[3] = {vg_conv2d(g, x, f, s1, "VALID", NULL), vg_conv2d(g, x, f, s1, "SAME", NULL),
                          vg_conv2d(g, x, f, s2, "SAME", NULL)};
    vg_tensor *xv = mk(VG_FLOAT, xd, 4, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}), *out[3] = {0};
    vg_status st;
    CHECK_OK(run_threads(g, 1, &x, &xv, 1, fetch, out, 3, &st), &st);
    /* SAME with k=2: pad_total 1, all of it after (pad_before = 0) */
    CHECK_EQ_INT(compare("valid", out[0], (double[]){12, 16, 24, 28}, 4, 1e-6), 0);
    CHECK_EQ_INT(compare("same", out[1], (double[]){12, 16, 9, 24, 28, 15, 15, 17, 9}, 9, 1e-6), 0);
    CHECK_EQ_INT(compare("same s2", out[2], (double[]){12, 9, 15, 9}, 4, 1e-6), 0);
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    vg_tensor_free(xv);
    /* attrs as TF writes them */
    const char *s;
    size_t len;
    bool cudnn = false;
    const int64_t *dil;
    int nd;
    CHECK(vg_op_attr_string(fetch[0].op, "data_format", &s, &len) && len == 4 && !memcmp(s, "NHWC", 4));
    CHECK(vg_op_attr_bool(fetch[0].op, "use_cudnn_on_gpu", &cudnn) && cudnn);
    CHECK(vg_op_attr_int_list(fetch[0].op, "dilations", &dil, &nd) && nd == 4 && dil[1] == 1);
    vg_graph_free(g);
}

/* ---- pools ------------------------------------------------------------- */

static const cfg pool_cfgs[] = {
    {2, 4, 4, 3, 2, 2, 0, 2, 2, false},
    {2, 5, 5, 3, 2, 2, 0, 2, 2, true},
    {1, 5, 7, 2, 3, 3, 0, 2, 2, true},
    {1, 6, 6, 2, 3, 3, 0, 1, 1, false},
    {2, 5, 5, 2, 3, 2, 0, 1, 2, true},
    {3, 28, 28, 32, 2, 2, 0, 2, 2, true}, /* the CNN's pool, threaded */
    {2, 7, 9, 16, 2, 2, 0, 2, 2, true},   /* tiled with clipped border windows, 16 channels */
    {2, 6, 6, 48, 3, 3, 0, 3, 3, false},  /* tiled 3x3 windows */
};

/* Every config with the AVX-512 max-pool gradient (where the CPU has it) and without. */
static void test_nn__pools_vs_reference(void) {
    static const char *pads[2] = {"VALID", "SAME"};
    for (int simd = 1; simd >= 0; simd--) {
    vg__pool_set_simd(simd);
    for (size_t i = 0; i < sizeof pool_cfgs / sizeof pool_cfgs[0]; i++)
        for (int d = 0; d < 2; d++) {
            const cfg *c = &pool_cfgs[i];
            vg_dtype dt = d ? VG_DOUBLE : VG_FLOAT;
            int64_t oh, ow, pad;
            win(c->h, c->kh, c->sh, c->same, &oh, &pad);
            win(c->w, c->kw, c->sw, c->same, &ow, &pad);
            int64_t xd[4] = {c->n, c->h, c->w, c->ci}, yd[4] = {c->n, oh, ow, c->ci};
            int64_t nx = c->n * c->h * c->w * c->ci, ny = c->n * oh * ow * c->ci;
            int64_t ksize[4] = {1, c->kh, c->kw, 1}, strides[4] = {1, c->sh, c->sw, 1};
            double *x = randv(nx, 5 + (unsigned)i), *dy = randv(ny, 9);
            /* quantize so that windows contain ties (first maximum wins) */
            for (int64_t k = 0; k < nx; k++) x[k] = floor(x[k] * 3) / 3;
            double *ymax = malloc(sizeof(double) * (size_t)ny), *yavg = malloc(sizeof(double) * (size_t)ny);
            double *dxmax = malloc(sizeof(double) * (size_t)nx), *dxavg = malloc(sizeof(double) * (size_t)nx);
            pool_ref(c, 0, 0, x, ymax, NULL);
            pool_ref(c, 1, 0, x, yavg, NULL);
            pool_ref(c, 0, 1, x, dy, dxmax);
            pool_ref(c, 1, 1, x, dy, dxavg);
            vg_graph *g = vg_graph_new();
            vg_output xp = vg_placeholder(g, dt, xd, 4, "x"), dyp = vg_placeholder(g, dt, yd, 4, "dy");
            vg_output mp = vg_max_pool(g, xp, ksize, strides, pads[c->same], NULL);
            int32_t xs32[4] = {(int32_t)xd[0], (int32_t)xd[1], (int32_t)xd[2], (int32_t)xd[3]};
            vg_output fetch[4] = {mp, vg_avg_pool(g, xp, ksize, strides, pads[c->same], NULL),
                                  vg_max_pool_grad(g, xp, mp, dyp, ksize, strides, pads[c->same], NULL),
                                  vg_avg_pool_grad(g, vg_const_i32_vec(g, xs32, 4, NULL), dyp, ksize, strides,
                                                   pads[c->same], NULL)};
            vg_status st;
            CHECK_OK(vg_graph_status(g, &st), &st);
            vg_shape s = vg_output_shape(mp);
            CHECK(s.ndims == 4 && s.dims[1] == oh && s.dims[2] == ow);
            s = vg_output_shape(fetch[3]);
            CHECK(s.ndims == 4 && s.dims[1] == c->h && s.dims[3] == c->ci);
            vg_tensor *vals[2] = {mk(dt, xd, 4, x), mk(dt, yd, 4, dy)}, *out[4] = {0};
            vg_output feeds[2] = {xp, dyp};
            CHECK_OK(run_threads(g, 2, feeds, vals, 2, fetch, out, 4, &st), &st);
            CHECK_EQ_INT(compare("max_pool", out[0], ymax, ny, 1e-6), 0);
            CHECK_EQ_INT(compare("avg_pool", out[1], yavg, ny, 1e-6), 0);
            CHECK_EQ_INT(compare("max_pool_grad", out[2], dxmax, nx, 1e-6), 0);
            CHECK_EQ_INT(compare("avg_pool_grad", out[3], dxavg, nx, 1e-6), 0);
            for (int k = 0; k < 4; k++) vg_tensor_free(out[k]);
            vg_tensor_free(vals[0]);
            vg_tensor_free(vals[1]);
            vg_graph_free(g);
            free(x); free(dy); free(ymax); free(yavg); free(dxmax); free(dxavg);
        }
    }
    vg__pool_set_simd(1);
}

/* Max ties: all-equal window sends the whole gradient to its first element. */
static void test_nn__max_pool_grad_ties(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {1, 2, 2, 1}, k[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x");
    vg_output y = vg_max_pool(g, x, k, k, "VALID", NULL);
    vg_output d = vg_max_pool_grad(g, x, y, vg_const_fill(g, VG_FLOAT, (int64_t[]){1, 1, 1, 1}, 4, 5.0, NULL), k, k,
                                   "VALID", NULL);
    vg_tensor *xv = mk(VG_FLOAT, xd, 4, (double[]){3, 3, 3, 3}), *out = NULL;
    vg_status st;
    CHECK_OK(run_threads(g, 1, &x, &xv, 1, &d, &out, 1, &st), &st);
    CHECK_EQ_INT(compare("ties", out, (double[]){5, 0, 0, 0}, 4, 0), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){out, xv}, 2, NULL, 0);
}

/* ---- errors ------------------------------------------------------------ */

static void expect_build_error(vg_graph *g, vg_output o, const char *a, const char *b) {
    vg_status st;
    CHECK(o.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, a);
    if (b) CHECK_STR_CONTAINS(st.msg, b);
    vg_graph_free(g);
}

static void test_nn__conv_errors(void) {
    int64_t s1[4] = {1, 1, 1, 1}, k2[4] = {1, 2, 2, 1};
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 5, 5, 3}, 4, "x");
    vg_output f = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 3, 2, 4}, 4, "f");
    expect_build_error(g, vg_conv2d(g, x, f, s1, "SAME", NULL), "Conv2D", "same depth: 3 vs 2");

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 5, 5, 2}, 4, "x");
    f = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 3, 2, 4}, 4, "f");
    expect_build_error(g, vg_conv2d(g, x, f, s1, "FULL", NULL), "Conv2D", "padding");

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 2, 2, 2}, 4, "x");
    f = vg_placeholder(g, VG_FLOAT, (int64_t[]){5, 5, 2, 4}, 4, "f");
    expect_build_error(g, vg_conv2d(g, x, f, s1, "VALID", NULL), "Conv2D", "Computed output size would be negative");

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 5, 5, 2}, 4, "x");
    f = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 3, 2, 4}, 4, "f");
    expect_build_error(g, vg_conv2d(g, x, f, (int64_t[]){2, 1, 1, 1}, "SAME", NULL), "Conv2D", "strides in the batch");

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){5, 5, 2}, 3, "x");
    f = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 3, 2, 4}, 4, "f");
    expect_build_error(g, vg_conv2d(g, x, f, s1, "SAME", NULL), "Conv2D", "4-dimensional");

    g = vg_graph_new();
    x = vg_placeholder(g, VG_INT32, (int64_t[]){1, 5, 5, 2}, 4, "x");
    expect_build_error(g, vg_max_pool(g, x, k2, k2, "SAME", NULL), "MaxPool", "int32");

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 5, 5, 2}, 4, "x");
    expect_build_error(g, vg_avg_pool(g, x, (int64_t[]){2, 2, 2, 1}, k2, "SAME", NULL), "AvgPool", "batch dimension");

    /* run time: unknown shapes, depth mismatch and input_sizes disagreeing with dy */
    g = vg_graph_new();
    int64_t u4[4] = {-1, -1, -1, -1};
    x = vg_placeholder(g, VG_FLOAT, u4, 4, "x");
    f = vg_placeholder(g, VG_FLOAT, u4, 4, "f");
    vg_output y = vg_conv2d(g, x, f, s1, "SAME", "conv");
    vg_output sz = vg_placeholder(g, VG_INT32, (int64_t[]){4}, 1, "sz");
    vg_output bi = vg_conv2d_backprop_input(g, sz, f, x, s1, "SAME", "bpi");
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    double z[64] = {0};
    vg_tensor *xv = mk(VG_FLOAT, (int64_t[]){1, 2, 2, 3}, 4, z), *fv = mk(VG_FLOAT, (int64_t[]){1, 1, 2, 3}, 4, z);
    vg_tensor *sv = mk(VG_INT32, (int64_t[]){4}, 1, (double[]){1, 3, 3, 2});
    vg_output feeds[3] = {x, f, sz};
    vg_tensor *vals[3] = {xv, fv, sv}, *out = NULL;
    CHECK_STATUS(run_threads(g, 1, feeds, vals, 2, &y, &out, 1, &st), &st, VG_INVALID_ARGUMENT, "same depth: 3 vs 2");
    CHECK_STR_CONTAINS(st.msg, "conv");
    CHECK_STATUS(run_threads(g, 1, feeds, vals, 3, &bi, &out, 1, &st), &st, VG_INVALID_ARGUMENT, "out_backprop");
    CHECK(out == NULL);
    kt_teardown(g, NULL, (vg_tensor *[]){xv, fv, sv}, 3, NULL, 0);
}

/* ---- gradients --------------------------------------------------------- */

#define GC_EPS 1e-6
#define GC_TOL 1e-5

static int gc_conv(const cfg *c) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {c->n, c->h, c->w, c->ci}, fd[4] = {c->kh, c->kw, c->ci, c->co};
    int64_t strides[4] = {1, c->sh, c->sw, 1};
    vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, xd, 4, "x"), vg_placeholder(g, VG_DOUBLE, fd, 4, "f")};
    double *x = randv(c->n * c->h * c->w * c->ci, 51), *f = randv(c->kh * c->kw * c->ci * c->co, 52);
    vg_tensor *vals[2] = {mk(VG_DOUBLE, xd, 4, x), mk(VG_DOUBLE, fd, 4, f)};
    vg_output y = vg_conv2d(g, xs[0], xs[1], strides, c->same ? "SAME" : "VALID", NULL);
    int bad = vg_gradcheck(g, xs, vals, 2, y, GC_EPS, GC_TOL);
    /* the gradient ops' static shapes come through Shape ops */
    vg_output dx[2];
    vg_status st;
    vg_output L = vg_reduce_sum(g, y, NULL, -1, false, NULL);
    if (vg_gradients(g, &L, 1, xs, 2, NULL, dx, &st) == VG_OK) {
        for (int k = 0; k < 2; k++) {
            vg_shape s = vg_output_shape(dx[k]);
            const int64_t *want = k ? fd : xd;
            CHECK_EQ_INT(s.ndims, 4);
            for (int i = 0; i < 4 && s.ndims == 4; i++) CHECK_EQ_INT(s.dims[i], want[i]);
        }
    } else {
        bad++;
    }
    vg_tensor_free(vals[0]);
    vg_tensor_free(vals[1]);
    free(x);
    free(f);
    vg_graph_free(g);
    return bad;
}

static void test_nn__grad_conv2d(void) {
    static const cfg cs[] = {
        {1, 4, 4, 2, 3, 3, 2, 1, 1, true},
        {2, 5, 5, 2, 2, 2, 3, 2, 2, false},
        {1, 5, 4, 1, 3, 2, 2, 2, 2, true},
        {1, 3, 3, 3, 1, 1, 2, 1, 1, true},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) CHECK_EQ_INT(gc_conv(&cs[i]), 0);
}

/* Second order: Conv2DBackpropInput w.r.t. filter and dy; Conv2DBackpropFilter w.r.t.
 * x and dy. Geometry: x (1,4,5,2), f (3,3,2,3), SAME stride 2 -> dy (1,2,3,3). */
static void test_nn__grad_conv2d_backprops(void) {
    int64_t xd[4] = {1, 4, 5, 2}, fd[4] = {3, 3, 2, 3}, yd[4] = {1, 2, 3, 3}, s[4] = {1, 2, 2, 1};
    double *x = randv(40, 61), *f = randv(54, 62), *dy = randv(18, 63);
    int32_t xs32[4] = {1, 4, 5, 2}, fs32[4] = {3, 3, 2, 3};
    vg_graph *g = vg_graph_new();
    vg_output in[2] = {vg_placeholder(g, VG_DOUBLE, fd, 4, "f"), vg_placeholder(g, VG_DOUBLE, yd, 4, "dy")};
    vg_tensor *vals[2] = {mk(VG_DOUBLE, fd, 4, f), mk(VG_DOUBLE, yd, 4, dy)};
    vg_output y = vg_conv2d_backprop_input(g, vg_const_i32_vec(g, xs32, 4, NULL), in[0], in[1], s, "SAME", NULL);
    CHECK_EQ_INT(vg_gradcheck(g, in, vals, 2, y, GC_EPS, GC_TOL), 0);
    vg_tensor_free(vals[0]);
    vg_tensor_free(vals[1]);
    vg_graph_free(g);

    g = vg_graph_new();
    in[0] = vg_placeholder(g, VG_DOUBLE, xd, 4, "x");
    in[1] = vg_placeholder(g, VG_DOUBLE, yd, 4, "dy");
    vals[0] = mk(VG_DOUBLE, xd, 4, x);
    vals[1] = mk(VG_DOUBLE, yd, 4, dy);
    y = vg_conv2d_backprop_filter(g, in[0], vg_const_i32_vec(g, fs32, 4, NULL), in[1], s, "SAME", NULL);
    CHECK_EQ_INT(vg_gradcheck(g, in, vals, 2, y, GC_EPS, GC_TOL), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){vals[0], vals[1]}, 2, (void *[]){x, f, dy}, 3);
}

static void test_nn__grad_pools(void) {
    static const cfg cs[] = {
        {1, 5, 5, 2, 3, 3, 0, 2, 2, true},
        {2, 4, 4, 2, 2, 2, 0, 2, 2, false},
        {1, 4, 5, 1, 3, 2, 0, 1, 2, true},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int kind = 0; kind < 3; kind++) {
            const cfg *c = &cs[i];
            int64_t xd[4] = {c->n, c->h, c->w, c->ci}, k[4] = {1, c->kh, c->kw, 1}, s[4] = {1, c->sh, c->sw, 1};
            int64_t nx = c->n * c->h * c->w * c->ci;
            double *x = randv(nx, 71 + (unsigned)i);
            /* distinct values spaced >> eps: no ties for the max */
            for (int64_t j = 0; j < nx; j++) x[j] = x[j] + 0.01 * (double)j;
            vg_graph *g = vg_graph_new();
            vg_output xp = vg_placeholder(g, VG_DOUBLE, xd, 4, "x");
            const char *pad = c->same ? "SAME" : "VALID";
            vg_output y;
            if (kind == 0) y = vg_max_pool(g, xp, k, s, pad, NULL);
            else if (kind == 1) y = vg_avg_pool(g, xp, k, s, pad, NULL);
            else { /* AvgPoolGrad w.r.t. its gradient input: x plays dy (shape of the pooled output) */
                int64_t oh, ow, pd;
                win(c->h, c->kh, c->sh, c->same, &oh, &pd);
                win(c->w, c->kw, c->sw, c->same, &ow, &pd);
                vg_graph_free(g);
                g = vg_graph_new();
                int64_t yd[4] = {c->n, oh, ow, c->ci};
                int32_t xs32[4] = {(int32_t)xd[0], (int32_t)xd[1], (int32_t)xd[2], (int32_t)xd[3]};
                xp = vg_placeholder(g, VG_DOUBLE, yd, 4, "dy");
                free(x);
                x = randv(c->n * oh * ow * c->ci, 81);
                memcpy(xd, yd, sizeof xd);
                y = vg_avg_pool_grad(g, vg_const_i32_vec(g, xs32, 4, NULL), xp, k, s, pad, NULL);
            }
            vg_tensor *xv = mk(VG_DOUBLE, xd, 4, x);
            int bad = vg_gradcheck(g, &xp, &xv, 1, y, GC_EPS, GC_TOL);
            if (bad) fprintf(stderr, "pool grad cfg %zu kind %d\n", i, kind);
            CHECK_EQ_INT(bad, 0);
            vg_tensor_free(xv);
            free(x);
            vg_graph_free(g);
        }
}

/* Conv and pools whose shapes are unknown at build time: the gradient ops take their
 * sizes from Shape ops at run time. */
static void test_nn__grad_unknown_shapes(void) {
    vg_graph *g = vg_graph_new();
    vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, NULL, -1, "x"), vg_placeholder(g, VG_DOUBLE, NULL, -1, "f")};
    int64_t xd[4] = {2, 4, 4, 2}, fd[4] = {3, 3, 2, 2}, s2[4] = {1, 2, 2, 1}, k2[4] = {1, 2, 2, 1};
    double *x = randv(64, 121), *f = randv(36, 122);
    vg_tensor *vals[2] = {mk(VG_DOUBLE, xd, 4, x), mk(VG_DOUBLE, fd, 4, f)};
    vg_output c = vg_conv2d(g, xs[0], xs[1], s2, "SAME", NULL);
    c = vg_add(g, vg_max_pool(g, c, k2, k2, "SAME", NULL), vg_avg_pool(g, c, k2, k2, "SAME", NULL), NULL);
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, c, GC_EPS, GC_TOL), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){vals[0], vals[1]}, 2, (void *[]){x, f}, 2);
}

/* The CNN of the benchmark, small: conv-relu-pool twice, dense, xent; gradients run
 * with 2 threads and have the variables' shapes. */
static void test_nn__cnn_gradients_run(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {4, 12, 12, 1}, f1d[4] = {5, 5, 1, 4}, f2d[4] = {5, 5, 4, 8}, wd[2] = {3 * 3 * 8, 10};
    int64_t s1[4] = {1, 1, 1, 1}, k2[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x");
    vg_output ws[4] = {vg_placeholder(g, VG_FLOAT, f1d, 4, "f1"), vg_placeholder(g, VG_FLOAT, (int64_t[]){4}, 1, "b1"),
                       vg_placeholder(g, VG_FLOAT, f2d, 4, "f2"), vg_placeholder(g, VG_FLOAT, wd, 2, "w")};
    vg_output l = vg_placeholder(g, VG_INT32, (int64_t[]){4}, 1, "l");
    vg_output h = vg_relu(g, vg_bias_add(g, vg_conv2d(g, x, ws[0], s1, "SAME", NULL), ws[1], NULL), NULL);
    h = vg_max_pool(g, h, k2, k2, "SAME", NULL);
    h = vg_max_pool(g, vg_relu(g, vg_conv2d(g, h, ws[2], s1, "SAME", NULL), NULL), k2, k2, "SAME", NULL);
    h = vg_reshape_c(g, h, (int64_t[]){4, 72}, 2, NULL);
    vg_op *xe = vg_sparse_softmax_xent(g, vg_matmul(g, h, ws[3], false, false, NULL), l, NULL);
    vg_output loss = vg_reduce_mean(g, vg_out(xe, 0), NULL, -1, false, NULL), dws[4];
    vg_status st;
    CHECK_OK(vg_gradients(g, &loss, 1, ws, 4, NULL, dws, &st), &st);
    double *xv = randv(4 * 144, 91), *f1 = randv(100, 92), *f2 = randv(800, 93), *w = randv(720, 94), *b = randv(4, 95);
    vg_tensor *vals[6] = {mk(VG_FLOAT, xd, 4, xv), mk(VG_FLOAT, f1d, 4, f1), mk(VG_FLOAT, (int64_t[]){4}, 1, b),
                          mk(VG_FLOAT, f2d, 4, f2), mk(VG_FLOAT, wd, 2, w),
                          mk(VG_INT32, (int64_t[]){4}, 1, (double[]){1, 2, 3, 9})};
    vg_output feeds[6] = {x, ws[0], ws[1], ws[2], ws[3], l};
    check_grad_shapes(g, feeds, vals, 6, ws, dws, 4);
    for (int i = 0; i < 6; i++) vg_tensor_free(vals[i]);
    free(xv); free(f1); free(f2); free(w); free(b);
    vg_graph_free(g);
}

/* ---- concurrent runs of one session (the ops' cached scratch is shared) ---- */

typedef struct conc_arg {
    vg_session *s;
    vg_output feeds[2], fetch[2];
    vg_tensor *vals[2];
    const vg_tensor *want[2];
    int bad;
} conc_arg;

static void *conc_worker(void *p) {
    conc_arg *a = p;
    vg_status st;
    for (int it = 0; it < 15; it++) {
        vg_tensor *out[2] = {NULL, NULL};
        if (vg_session_run(a->s, NULL, a->feeds, a->vals, 2, a->fetch, out, 2, NULL, 0, NULL, &st) != VG_OK) {
            a->bad++;
            continue;
        }
        for (int k = 0; k < 2; k++) {
            int64_t n = vg_tensor_num_elements(out[k]);
            if (n != vg_tensor_num_elements(a->want[k]) ||
                memcmp(vg_tensor_data(out[k]), vg_tensor_data(a->want[k]), (size_t)n * sizeof(float)))
                a->bad++;
            vg_tensor_free(out[k]);
        }
    }
    return NULL;
}

static void test_nn__conv_concurrent_runs(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {4, 9, 9, 3}, fd[4] = {3, 3, 3, 8}, s1[4] = {1, 1, 1, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x"), f = vg_placeholder(g, VG_FLOAT, fd, 4, "f");
    vg_output y = vg_conv2d(g, x, f, s1, "SAME", NULL);
    vg_output d[2];
    vg_output L = vg_reduce_sum(g, vg_mul(g, y, y, NULL), NULL, -1, false, NULL);
    vg_output in[2] = {x, f};
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 2, NULL, d, &st), &st);
    double *xv = randv(4 * 81 * 3, 111), *fv = randv(216, 112);
    conc_arg a[3];
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, 4, xv), mk(VG_FLOAT, fd, 4, fv)}, *want[2] = {NULL, NULL};
    CHECK_OK(run_threads(g, 2, in, vals, 2, d, want, 2, &st), &st); /* same split as below: same sums */
    vg_session_options o = {0};
    o.intra_op_threads = 2;
    vg_session *s = vg_session_new(g, &o, &st);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (conc_arg){s, {x, f}, {d[0], d[1]}, {vals[0], vals[1]}, {want[0], want[1]}, 0};
        pthread_create(&th[i], NULL, conc_worker, &a[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(a[i].bad, 0);
    }
    vg_session_free(s);
    for (int k = 0; k < 2; k++) {
        vg_tensor_free(vals[k]);
        vg_tensor_free(want[k]);
    }
    kt_teardown(g, NULL, NULL, 0, (void *[]){xv, fv}, 2);
}

/* ---- allocation failures ---------------------------------------------- */

/* Fails allocation N = 0, 1, 2, ... of a run of every conv/pool op until the run
 * succeeds: each failure is RESOURCE_EXHAUSTED (ASan checks for leaks). */
static void conv_alloc_failures(int level) {
    vg__conv_set_direct(level);
    vg_allocator al = {count_alloc, count_free, NULL};
    vg_allocator_set(&al);
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {3, 6, 6, 16}, fd[4] = {3, 3, 16, 16}, s1[4] = {1, 1, 1, 1}, k2[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x"), f = vg_placeholder(g, VG_FLOAT, fd, 4, "f");
    vg_output y = vg_conv2d(g, x, f, s1, "SAME", NULL);
    vg_output mp = vg_max_pool(g, y, k2, k2, "SAME", NULL);
    vg_output L = vg_reduce_sum(g, vg_add(g, mp, vg_avg_pool(g, y, k2, k2, "VALID", NULL), NULL), NULL, -1, false, NULL);
    vg_output in[2] = {x, f}, d[2];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 2, NULL, d, &st), &st);
    double *xv = randv(3 * 36 * 16, 101), *fv = randv(9 * 256, 102);
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, 4, xv), mk(VG_FLOAT, fd, 4, fv)};
    CHECK(fail_each_alloc_threaded(g, in, vals, 2, d, 2) > 5);
    kt_teardown(g, NULL, vals, 2, (void *[]){xv, fv}, 2);
    vg_allocator_set(NULL);
    vg__conv_set_direct(2);
}

static void test_nn__conv_alloc_failures(void) {
    conv_alloc_failures(2);
    conv_alloc_failures(0);
}

int main(void) {
    RUN_TEST(test_nn__conv2d_by_hand);
    RUN_TEST(test_nn__conv2d_vs_reference);
    RUN_TEST(test_nn__conv2d_dnnl_vs_reference);
    RUN_TEST(test_nn__pools_vs_reference);
    RUN_TEST(test_nn__max_pool_grad_ties);
    RUN_TEST(test_nn__conv_errors);
    RUN_TEST(test_nn__grad_conv2d);
    RUN_TEST(test_nn__grad_conv2d_backprops);
    RUN_TEST(test_nn__grad_pools);
    RUN_TEST(test_nn__grad_unknown_shapes);
    RUN_TEST(test_nn__cnn_gradients_run);
    RUN_TEST(test_nn__conv_concurrent_runs);
    RUN_TEST(test_nn__conv_alloc_failures);
    TEST_MAIN_END();
}
