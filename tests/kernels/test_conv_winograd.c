/* test_conv_winograd.c - Winograd F(2x2,5x5) float32 convolutions (src/kernels/nn/conv_winograd.c,
 * dispatched from conv_ops.c): forward (bias / ReLU / max pool fused or not), input
 * gradient and filter gradient with Winograd forced on equal the other paths' results
 * (oneDNN or the direct kernels) and a float64 reference within a tolerance scaled by
 * sqrt(K) * max|a| * max|b| (K: the length of each sum); odd and even sizes (tiles
 * that overhang the edge), batch 1 and 7, 16/32/64 channels, 1 and 2 threads; shapes
 * the path must refuse are left to the others; and a small net's gradients against
 * finite differences with Winograd on. */
#include "test_util.h"
#include "op_test_util.h"
#include "gradcheck.h"
#include "kernels/nn/nn_internal.h"
#include "vigil/vigil.h"

typedef struct wcase {
    int64_t n, h, w, ci, co, k, s;
    bool same, bias, relu, pool;
    int threads;
} wcase;

/* Float64 reference of y = conv(x, f) (+ b) for stride 1. */
static void ref_conv(const wcase *c, const double *x, const double *f, const double *b, double *y, int64_t oh,
                     int64_t ow, int64_t pt, int64_t pl) {
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t o = 0; o < c->co; o++) {
                    double s = b ? b[o] : 0;
                    for (int64_t ky = 0; ky < c->k; ky++)
                        for (int64_t kx = 0; kx < c->k; kx++) {
                            int64_t iy = oy - pt + ky, ix = ox - pl + kx;
                            if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
                            for (int64_t i = 0; i < c->ci; i++)
                                s += x[((n * c->h + iy) * c->w + ix) * c->ci + i] * f[((ky * c->k + kx) * c->ci + i) * c->co + o];
                        }
                    y[((n * oh + oy) * ow + ox) * c->co + o] = s;
                }
}

static double maxabs(const double *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

/* Largest |a - b| (NaN counts as infinite). */
static double maxdiff_t(const vg_tensor *a, const vg_tensor *b) {
    if (!a || !b || vg_tensor_num_elements(a) != vg_tensor_num_elements(b)) return INFINITY;
    double m = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(a); i++) {
        double d = fabs(get(a, i) - get(b, i));
        if (!(d <= m)) m = d;
    }
    return m;
}

/* Runs y = [pool]([relu]([bias_add](conv(x, f), b))) and, with L = sum(y * C), dx, df
 * (and db) with Winograd mode `mode`; out[0..3] (db NULL without a bias). Returns the
 * number of convolutions Winograd ran. */
static long long run_case(const wcase *c, int mode, vg_tensor **out) {
    vg__conv_set_winograd(mode);
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {c->n, c->h, c->w, c->ci}, fd[4] = {c->k, c->k, c->ci, c->co}, bd[1] = {c->co};
    int64_t strides[4] = {1, c->s, c->s, 1}, ks[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x"), f = vg_placeholder(g, VG_FLOAT, fd, 4, "f");
    vg_output b = vg_placeholder(g, VG_FLOAT, bd, 1, "b");
    vg_output y = vg_conv2d(g, x, f, strides, c->same ? "SAME" : "VALID", NULL);
    if (c->bias) y = vg_bias_add(g, y, b, NULL);
    if (c->relu) y = vg_relu(g, y, NULL);
    if (c->pool) y = vg_max_pool(g, y, ks, ks, "VALID", NULL);
    vg_shape ys = vg_output_shape(y);
    int64_t ny = 1;
    for (int i = 0; i < ys.ndims; i++) ny *= ys.dims[i];
    double *cv = randv(ny, 9);
    vg_output C = cst(g, VG_FLOAT, ys.dims, ys.ndims, cv);
    vg_output L = vg_reduce_sum(g, vg_mul(g, y, C, NULL), NULL, -1, false, NULL);
    vg_output in[3] = {x, f, b}, d[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, c->bias ? 3 : 2, NULL, d, &st), &st);
    double *xv = randv(xd[0] * xd[1] * xd[2] * xd[3], 1), *fv = randv(fd[0] * fd[1] * fd[2] * fd[3], 2);
    double *bv = randv(c->co, 3);
    vg_tensor *vals[3] = {mk(VG_FLOAT, xd, 4, xv), mk(VG_FLOAT, fd, 4, fv), mk(VG_FLOAT, bd, 1, bv)};
    vg_output fetch[4] = {y, d[0], d[1], d[2]};
    long long before = vg__conv_winograd_runs();
    for (int i = 0; i < 4; i++) out[i] = NULL;
    CHECK_OK(run_threads(g, c->threads, in, vals, 3, fetch, out, c->bias ? 4 : 3, &st), &st);
    long long runs = vg__conv_winograd_runs() - before;
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(xv), free(fv), free(bv), free(cv);
    vg__conv_set_winograd(1);
    return runs;
}

static void describe(const wcase *c, char *buf, size_t len) {
    snprintf(buf, len, "n%lld %lldx%lld ci%lld co%lld k%lld s%lld %s%s%s%s t%d", (long long)c->n, (long long)c->h,
             (long long)c->w, (long long)c->ci, (long long)c->co, (long long)c->k, (long long)c->s,
             c->same ? "SAME" : "VALID", c->bias ? " bias" : "", c->relu ? " relu" : "", c->pool ? " pool" : "",
             c->threads);
}

/* Winograd forced on vs off, and the forward against the float64 reference (before
 * the pool; with the pool the on/off comparison covers it). */
static void check_case(const wcase *c) {
    char what[128];
    describe(c, what, sizeof what);
    vg_tensor *on[4], *off[4];
    long long won = run_case(c, 2, on), woff = run_case(c, 0, off);
    CHECK_EQ_INT(won, 3);
    CHECK_EQ_INT(woff, 0);
    int64_t oh, ow, pt, pl;
    win(c->h, c->k, 1, c->same, &oh, &pt);
    win(c->w, c->k, 1, c->same, &ow, &pl);
    /* bounds: |error| <= tol * sqrt(K) * max|a| * max|b| with inputs in [-1, 1] and
     * the loss weights C in [-1, 1] (max|dy| <= 1: pool windows do not overlap).
     * Measured: up to 4.5e-6 (forward, input gradient) and 9e-6 (filter gradient,
     * whose inverse transform has coefficients up to 16); float32 round-off is 6e-8. */
    const double tol = 2e-5, one = 1.0;
    double kf = (double)(c->k * c->k * c->ci), kx = (double)(c->k * c->k * c->co), kw = (double)(c->n * oh * ow);
    double bound[4] = {tol * sqrt(kf) * one * one + 1e-6, tol * sqrt(kx) + 1e-6, tol * sqrt(kw) + 1e-6, tol * sqrt(kw) + 1e-6};
    const char *names[4] = {"y", "dx", "df", "db"};
    for (int i = 0; i < (c->bias ? 4 : 3); i++) {
        double m = maxdiff_t(on[i], off[i]);
        if (!(m <= bound[i])) fprintf(stderr, "%s: %s on/off differ by %g (bound %g)\n", what, names[i], m, bound[i]);
        CHECK(m <= bound[i]);
    }
    if (!c->pool && on[0]) {
        int64_t nx = c->n * c->h * c->w * c->ci, nf = c->k * c->k * c->ci * c->co, ny = c->n * oh * ow * c->co;
        double *xv = randv(nx, 1), *fv = randv(nf, 2), *bv = randv(c->co, 3), *y = malloc(sizeof(double) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++) xv[i] = (float)xv[i];
        for (int64_t i = 0; i < nf; i++) fv[i] = (float)fv[i];
        for (int64_t i = 0; i < c->co; i++) bv[i] = (float)bv[i];
        ref_conv(c, xv, fv, c->bias ? bv : NULL, y, oh, ow, pt, pl);
        double m = 0;
        for (int64_t i = 0; i < ny; i++) {
            double r = c->relu && y[i] < 0 ? 0 : y[i], d = fabs(get(on[0], i) - r);
            if (!(d <= m)) m = d;
        }
        double b = tol * sqrt(kf) * maxabs(xv, nx) * maxabs(fv, nf) + 1e-6;
        if (!(m <= b)) fprintf(stderr, "%s: y vs float64 reference differs by %g (bound %g)\n", what, m, b);
        CHECK(m <= b);
        free(xv), free(fv), free(bv), free(y);
    }
    for (int i = 0; i < 4; i++) {
        vg_tensor_free(on[i]);
        vg_tensor_free(off[i]);
    }
}

static const wcase cases[] = {
    {7, 14, 14, 32, 64, 5, 1, true, true, true, true, 1},    /* the CNN's conv2, fused with its pool */
    {7, 14, 14, 32, 64, 5, 1, true, true, true, true, 2},
    {1, 9, 7, 16, 32, 5, 1, true, false, false, false, 1},   /* odd sizes: tiles overhang the edge */
    {1, 9, 7, 16, 32, 5, 1, true, false, false, false, 2},
    {7, 10, 13, 64, 16, 5, 1, false, true, false, false, 2}, /* VALID, bias only */
    {2, 6, 6, 16, 16, 5, 1, true, true, true, false, 1},     /* bias + ReLU, no pool */
    {3, 12, 11, 32, 32, 5, 1, true, true, true, true, 1},    /* pooled, odd width */
    {7, 5, 5, 16, 48, 5, 1, false, false, false, false, 2},  /* one output pixel per image */
    {2, 3, 4, 16, 16, 5, 1, true, true, false, false, 1},    /* image smaller than the window */
    {2, 9, 10, 128, 80, 5, 1, true, true, true, false, 2},   /* channels beyond the specialised 16/32/64 */
};

static void test_winograd__matches_other_paths(void) {
    if (!vg__conv_set_winograd(1)) {
        fprintf(stderr, "(no AVX-512: Winograd does not run here)\n");
        return;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

/* The same with oneDNN off: then the direct kernels (or im2col) are the "off" path. */
static void test_winograd__matches_direct(void) {
    if (!vg__conv_set_winograd(1)) return;
    vg__conv_set_dnnl(0);
    check_case(&cases[1]);
    check_case(&cases[4]);
    vg__conv_set_dnnl(1);
}

/* Shapes the kernels do not take: other channel counts, window sizes, strides; and
 * the shapes mode 1 leaves to the other paths. */
static void test_winograd__refuses(void) {
    if (!vg__conv_set_winograd(1)) return;
    const wcase refused[] = {
        {2, 8, 8, 3, 16, 5, 1, true, true, true, false, 1},  /* 3 input channels */
        {2, 8, 8, 16, 24, 5, 1, true, true, true, false, 1}, /* 24 output channels */
        {2, 8, 8, 16, 16, 3, 1, true, true, true, false, 1}, /* 3x3 window */
        {2, 9, 9, 16, 16, 5, 2, true, true, true, false, 1}, /* stride 2 */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        vg_tensor *out[4];
        CHECK_EQ_INT(run_case(&refused[i], 2, out), 0);
        for (int k = 0; k < 4; k++) vg_tensor_free(out[k]);
    }
    /* mode 0: never */
    vg_tensor *out[4];
    CHECK_EQ_INT(run_case(&cases[5], 0, out), 0);
    for (int k = 0; k < 4; k++) vg_tensor_free(out[k]);
    /* mode 1 (the default): the CNN's conv2 shape, not a 7x7 image (tiles overhang) nor
     * 2 tiles per 128x128 filter */
    const wcase mode1[] = {
        {7, 14, 14, 32, 64, 5, 1, true, true, true, true, 1},
        {4, 7, 7, 16, 16, 5, 1, true, true, true, false, 1},
        {1, 4, 4, 128, 128, 5, 1, true, false, false, false, 1},
    };
    long long want[3] = {3, 0, 0};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(run_case(&mode1[i], 1, out), want[i]);
        for (int k = 0; k < 4; k++) vg_tensor_free(out[k]);
    }
}

/* A small net (conv 5x5 16->16 SAME + bias, then conv 5x5 16->16 VALID) with Winograd
 * forced on: gradients of x, f1, b, f2 against central differences. float32: the net
 * is linear in each single input, so a large eps (0.25) has no truncation error and
 * keeps the rounding of the loss (~1e-5 relative with Winograd) small in the quotient. */
static void test_winograd__gradcheck(void) {
    if (!vg__conv_set_winograd(2)) return;
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {1, 7, 6, 16}, fd[4] = {5, 5, 16, 16}, bd[1] = {16}, s1[4] = {1, 1, 1, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x"), f1 = vg_placeholder(g, VG_FLOAT, fd, 4, "f1");
    vg_output b = vg_placeholder(g, VG_FLOAT, bd, 1, "b"), f2 = vg_placeholder(g, VG_FLOAT, fd, 4, "f2");
    vg_output h = vg_bias_add(g, vg_conv2d(g, x, f1, s1, "SAME", NULL), b, NULL);
    vg_output y = vg_conv2d(g, h, f2, s1, "VALID", NULL);
    double *xv = randv(7 * 6 * 16, 11), *f1v = randv(400 * 16, 12), *bv = randv(16, 13), *f2v = randv(400 * 16, 14);
    for (int i = 0; i < 400 * 16; i++) f1v[i] *= 0.25, f2v[i] *= 0.25;
    vg_tensor *vals[4] = {mk(VG_FLOAT, xd, 4, xv), mk(VG_FLOAT, fd, 4, f1v), mk(VG_FLOAT, bd, 1, bv),
                          mk(VG_FLOAT, fd, 4, f2v)};
    vg_output xs[4] = {x, f1, b, f2};
    long long before = vg__conv_winograd_runs();
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 4, y, 0.25, 2e-3), 0);
    CHECK(vg__conv_winograd_runs() - before > 1000);
    for (int i = 0; i < 4; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(xv), free(f1v), free(bv), free(f2v);
    vg__conv_set_winograd(1);
}

/* Scratch that is not zero: every allocation filled with NaN bytes (an allocator hook)
 * while every case runs again, on both sides of the comparison. A partial sum that no
 * piece wrote (the filter gradient at 1 thread used to fill only the first of two,
 * adding whatever the second held: zeros from a fresh mmap, anything from a reused
 * heap block) shows up as NaN. */
static void *nan_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1)) return NULL;
    memset(p, 0xff, size);
    return p;
}
static void nan_free(void *payload, void *p) { (void)payload; free(p); }

static void test_winograd__dirty_scratch(void) {
    if (!vg__conv_set_winograd(1)) return;
    vg_allocator a = {nan_alloc, nan_free, NULL};
    vg_allocator_set(&a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
    vg__conv_set_dnnl(0); /* the direct kernels as the other path */
    check_case(&cases[1]);
    check_case(&cases[4]);
    vg__conv_set_dnnl(1);
    vg_allocator_set(NULL);
}

int main(void) {
    RUN_TEST(test_winograd__matches_other_paths);
    RUN_TEST(test_winograd__matches_direct);
    RUN_TEST(test_winograd__refuses);
    RUN_TEST(test_winograd__gradcheck);
    RUN_TEST(test_winograd__dirty_scratch);
    TEST_MAIN_END();
}
