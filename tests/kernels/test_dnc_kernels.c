/* test_dnc_kernels.c - the kernels the DNC (examples/tf1/dnc, bench_models --model dnc)
 * leans on, at the model's shapes (batch 16, memory 16, 4 read heads, 1 write head):
 * TopKV2 (the allocation's sort of usage rows [16, 16]: values and indices against a
 * selection computed here, ties keeping the lower index and NaN last as topk_op_test.py's
 * testTopAll / ties cases, long rows through the merge path, int64 values a double cannot
 * tell apart) and its gradient (nn_grad.py's _TopKGrad, ScatterNd: finite differences at
 * [16, 16], and with an unknown batch dimension); Cumprod and Cumsum (scan_ops_test.py's
 * four exclusive/reverse combinations against a scalar scan, along axis 1 of the DNC's
 * [16, 16], [16, 4, 16] and [16, 1, 16, 16], and along the first and last axes) with
 * their gradients by finite differences; BatchMatMulV2 at the DNC's products (content
 * dots [16, H, 16] x [16, 16, 16]^T, norms with k = 1, erase-and-write's address^T values,
 * the 4-D link reads, read words) and odd sizes, in float (its small-matrix kernel)
 * against a double loop here, the same bits at 1 and 2 threads, and its gradients by
 * finite differences. */
#include "gradcheck.h"
#include "op_test_util.h"
#include "kernels_fixture.h"

static unsigned seed_ = 12345;
static double urand(void) {
    seed_ = seed_ * 1103515245u + 12345u;
    return (double)((seed_ >> 8) & 0xffff) / 65536.0;
}

/* Reference top-k of one row: repeatedly the first (lowest index) of the largest
 * remaining values, NaN after every number. */
static void ref_topk_row(const double *x, int64_t n, int64_t k, double *v, int32_t *idx) {
    bool used[512] = {false};
    for (int64_t j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; i++) {
            if (used[i]) continue;
            if (best < 0) { best = i; continue; }
            bool bn = isnan(x[best]), in = isnan(x[i]);
            if (bn && !in) best = i;
            else if (!bn && !in && x[i] > x[best]) best = i;
        }
        used[best] = true;
        v[j] = x[best];
        idx[j] = (int32_t)best;
    }
}

static void check_topk(vg_dtype dt, int64_t rows, int64_t n, int k, const double *x) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {rows, n};
    vg_op *tk = vg_top_k(g, cst(g, dt, d, 2, x), k, true, NULL);
    CHECK(tk != NULL);
    if (!tk) { vg_graph_free(g); return; }
    vg_output f[2] = {vg_out(tk, 0), vg_out(tk, 1)};
    vg_tensor *o[2] = {NULL, NULL};
    vg_status st;
    CHECK_OK(run_threads(g, 1, NULL, NULL, 0, f, o, 2, &st), &st);
    double *wv = malloc(sizeof(double) * (size_t)(rows * k));
    int32_t *wi = malloc(sizeof(int32_t) * (size_t)(rows * k));
    for (int64_t r = 0; r < rows; r++) ref_topk_row(x + r * n, n, k, wv + r * k, wi + r * k);
    int bad = 0;
    for (int64_t i = 0; o[0] && o[1] && i < rows * k; i++) {
        int32_t gi = ((const int32_t *)vg_tensor_data(o[1]))[i];
        if (gi != wi[i]) bad++;
        if (dt == VG_INT64) {
            if (((const int64_t *)vg_tensor_data(o[0]))[i] != (int64_t)x[(i / k) * n + wi[i]]) bad++;
        } else if (isnan(wv[i]) ? !isnan(get(o[0], i)) : get(o[0], i) != (dt == VG_FLOAT ? (double)(float)wv[i] : wv[i])) {
            bad++;
        }
    }
    if (bad) fprintf(stderr, "top_k dtype %d [%lld, %lld] k %d: %d mismatches\n", dt, (long long)rows, (long long)n, k, bad);
    CHECK_EQ_INT(bad, 0);
    kt_teardown(g, NULL, (vg_tensor *[]){o[0], o[1]}, 2, (void *[]){wv, wi}, 2);
}

static void test_top_k_values(void) {
    /* the DNC's allocation: rows of 16 usages, all 16 sorted; some ties (values on a
     * coarse grid), and one NaN row entry */
    double x[16 * 16];
    for (int i = 0; i < 256; i++) x[i] = floor(urand() * 8) / 8;
    x[37] = NAN;
    check_topk(VG_FLOAT, 16, 16, 16, x);
    check_topk(VG_DOUBLE, 16, 16, 5, x);
    /* long rows: the merge path (ties, NaN, k < n and k = n) */
    double y[3 * 100];
    for (int i = 0; i < 300; i++) y[i] = floor(urand() * 20) - 10;
    y[5] = NAN, y[150] = NAN, y[151] = NAN;
    check_topk(VG_DOUBLE, 3, 100, 100, y);
    check_topk(VG_FLOAT, 3, 100, 7, y);
    double yi[3 * 100];
    for (int i = 0; i < 300; i++) yi[i] = floor(urand() * 50) - 25;
    check_topk(VG_INT32, 3, 100, 10, yi);
    check_topk(VG_INT32, 10, 30, 30, yi);
    /* int64 values 2^53 and 2^53 + 1 are the same double: the larger must come first */
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {3};
    vg_tensor *t = vg_tensor_new(VG_INT64, d, 1, NULL);
    int64_t *p = vg_tensor_data(t);
    p[0] = (int64_t)1 << 53, p[1] = ((int64_t)1 << 53) + 1, p[2] = 7;
    vg_op *tk = vg_top_k(g, vg_const(g, t, "x"), 3, true, NULL);
    vg_tensor_free(t);
    double wi[3] = {1, 0, 2};
    expect_tol(run(g, vg_out(tk, 1)), VG_INT32, d, 1, wi, 0);
    vg_graph_free(g);
}

/* _TopKGrad at the allocation's shape: d(sum(values * C))/dx by finite differences. */
static void test_top_k_grad(void) {
    double x[16 * 16];
    for (int i = 0; i < 256; i++) x[i] = urand() + i * 1e-4; /* distinct */
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {16, 16};
    vg_tensor *tx;
    vg_output px = ph(g, VG_DOUBLE, d, 2, x, &tx);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_out(vg_top_k(g, px, 16, true, NULL), 0), 1e-6, 1e-8), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
    /* k < n, rank 3, float: values 0.05 apart (a step of eps must not reorder them) */
    g = vg_graph_new();
    int64_t d3[3] = {2, 3, 16};
    double xs[96];
    for (int i = 0; i < 96; i++) xs[i] = (double)((i * 37) % 96) * 0.05;
    px = ph(g, VG_FLOAT, d3, 3, xs, &tx);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, vg_out(vg_top_k(g, px, 4, true, NULL), 0), 1e-2, 1e-3), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
    /* unknown batch: the Python's dynamic graph */
    g = vg_graph_new();
    int64_t du[2] = {-1, 16};
    vg_output pu = vg_placeholder(g, VG_DOUBLE, du, 2, "x");
    tx = mk(VG_DOUBLE, d, 2, x);
    vg_output v = vg_out(vg_top_k(g, pu, 3, true, NULL), 0);
    CHECK_EQ_INT(vg_gradcheck(g, &pu, &tx, 1, v, 1e-6, 1e-8), 0);
    /* and the gradient's value: C scattered back to the chosen positions */
    vg_output gx;
    vg_status st;
    vg_output ones = vg_ones_like(g, v, NULL);
    CHECK_OK(vg_gradients(g, &v, 1, &pu, 1, &ones, &gx, &st), &st);
    vg_tensor *gv = run_feeds(g, gx, &pu, &tx, 1, &st);
    CHECK(gv != NULL);
    if (gv) {
        double want[16 * 16];
        double rv[3];
        int32_t ri[3];
        for (int i = 0; i < 256; i++) want[i] = 0;
        for (int r = 0; r < 16; r++) {
            ref_topk_row(x + r * 16, 16, 3, rv, ri);
            for (int j = 0; j < 3; j++) want[r * 16 + ri[j]] = 1;
        }
        expect_tol(gv, VG_DOUBLE, d, 2, want, 0);
    }
    vg_tensor_free(tx);
    vg_graph_free(g);
}

/* scalar scan along axis of x [outer, len, inner] */
static void ref_scan(const double *x, double *o, int64_t outer, int64_t len, int64_t inner, bool prod, bool excl, bool rev) {
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            double acc = prod ? 1 : 0;
            for (int64_t s = 0; s < len; s++) {
                int64_t j = rev ? len - 1 - s : s;
                int64_t p = (a * len + j) * inner + b;
                if (excl) o[p] = acc, acc = prod ? acc * x[p] : acc + x[p];
                else acc = prod ? acc * x[p] : acc + x[p], o[p] = acc;
            }
        }
}

static void check_scan(const int64_t *dims, int nd, int axis, vg_dtype dt) {
    int64_t n = 1, outer = 1, inner = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    for (int i = 0; i < axis; i++) outer *= dims[i];
    for (int i = axis + 1; i < nd; i++) inner *= dims[i];
    double *x = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    /* values in [0.5, 1.5) (as 1 - weights in the DNC), integers for int64 */
    for (int64_t i = 0; i < n; i++) x[i] = dt == VG_INT64 ? floor(urand() * 7) - 3 : 0.5 + urand();
    for (int prod = 0; prod < 2; prod++)
        for (int excl = 0; excl < 2; excl++)
            for (int rev = 0; rev < 2; rev++) {
                vg_graph *g = vg_graph_new();
                vg_output c = cst(g, dt, dims, nd, x);
                vg_output y = prod ? vg_cumprod(g, c, axis, excl, rev, NULL) : vg_cumsum(g, c, axis, excl, rev, NULL);
                ref_scan(x, want, outer, dims[axis], inner, prod, excl, rev);
                if (dt == VG_FLOAT) /* the kernel scans in float */
                    for (int64_t i = 0; i < n; i++) want[i] = (float)want[i];
                expect_tol(run(g, y), dt, dims, nd, want, dt == VG_FLOAT ? 1e-6 : dt == VG_DOUBLE ? 1e-14 : 0);
                if (dt == VG_DOUBLE && n <= 1024) { /* gradients by finite differences */
                    vg_tensor *tx;
                    vg_output px = ph(g, dt, dims, nd, x, &tx);
                    vg_output yp = prod ? vg_cumprod(g, px, axis, excl, rev, NULL) : vg_cumsum(g, px, axis, excl, rev, NULL);
                    int bad = vg_gradcheck(g, &px, &tx, 1, yp, 1e-6, 1e-7);
                    if (bad) fprintf(stderr, "scan grad prod %d excl %d rev %d axis %d: %d bad\n", prod, excl, rev, axis, bad);
                    CHECK_EQ_INT(bad, 0);
                    vg_tensor_free(tx);
                }
                vg_graph_free(g);
            }
    free(x);
    free(want);
}

static void test_scans(void) {
    /* util.reduce_prod in usage_after_read ([16, 4, 16] along the 4 read heads), the
     * allocation's exclusive cumprod of sorted usage [16, 16], erase_and_write
     * ([16, 1, 16, 16] along the single write head), usage_after_write [16, 1, 16] */
    check_scan((const int64_t[]){16, 16}, 2, 1, VG_FLOAT);
    check_scan((const int64_t[]){16, 16}, 2, 1, VG_DOUBLE);
    check_scan((const int64_t[]){16, 4, 16}, 3, 1, VG_FLOAT);
    check_scan((const int64_t[]){16, 4, 16}, 3, 1, VG_DOUBLE);
    check_scan((const int64_t[]){16, 1, 16, 16}, 4, 1, VG_FLOAT);
    check_scan((const int64_t[]){16, 1, 16}, 3, 1, VG_DOUBLE);
    /* first and last axes, and int64 (wrapping products stay exact at these sizes) */
    check_scan((const int64_t[]){5, 3, 7}, 3, 0, VG_DOUBLE);
    check_scan((const int64_t[]){5, 3, 7}, 3, 2, VG_DOUBLE);
    check_scan((const int64_t[]){4, 6}, 2, 1, VG_INT64);
    check_scan((const int64_t[]){4, 6}, 2, 0, VG_INT64);
}

/* reference op(X) op(Y) in double, batch dims broadcast (rank 3 or 4, y may be rank 2) */
static void ref_bmm(const float *x, const int64_t *xd, int xr, const float *y, const int64_t *yd, int yr, bool ax,
                    bool ay, double *o, int64_t *nout) {
    int64_t xm = xd[xr - 2], xk = xd[xr - 1], ym = yd[yr - 2], yk = yd[yr - 1];
    int64_t m = ax ? xk : xm, k = ax ? xm : xk, n = ay ? ym : yk;
    int64_t nbx = 1, nby = 1;
    for (int i = 0; i < xr - 2; i++) nbx *= xd[i];
    for (int i = 0; i < yr - 2; i++) nby *= yd[i];
    int64_t nb = nbx > nby ? nbx : nby;
    for (int64_t b = 0; b < nb; b++) {
        const float *xa = x + (nbx == 1 ? 0 : b) * xm * xk, *ya = y + (nby == 1 ? 0 : b) * ym * yk;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t p = 0; p < k; p++)
                    acc += (double)(ax ? xa[p * xk + i] : xa[i * xk + p]) * (double)(ay ? ya[j * yk + p] : ya[p * yk + j]);
                o[(b * m + i) * n + j] = acc;
            }
    }
    *nout = nb * m * n;
}

static void check_bmm(const int64_t *xd, int xr, const int64_t *yd, int yr, bool ax, bool ay) {
    int64_t nx = 1, ny = 1;
    for (int i = 0; i < xr; i++) nx *= xd[i];
    for (int i = 0; i < yr; i++) ny *= yd[i];
    vg_tensor *tx = vg_tensor_new(VG_FLOAT, xd, xr, NULL), *ty = vg_tensor_new(VG_FLOAT, yd, yr, NULL);
    float *xv = vg_tensor_data(tx), *yv = vg_tensor_data(ty);
    for (int64_t i = 0; i < nx; i++) xv[i] = (float)(urand() * 2 - 1);
    for (int64_t i = 0; i < ny; i++) yv[i] = (float)(urand() * 2 - 1);
    vg_graph *g = vg_graph_new();
    vg_output px = vg_placeholder(g, VG_FLOAT, xd, xr, "x"), py = vg_placeholder(g, VG_FLOAT, yd, yr, "y");
    vg_output z = vg_batch_matmul(g, px, py, ax, ay, NULL);
    vg_output f[2] = {px, py};
    vg_tensor *fv[2] = {tx, ty}, *o1 = NULL, *o2 = NULL;
    vg_status st;
    CHECK_OK(run_threads(g, 1, f, fv, 2, &z, &o1, 1, &st), &st);
    CHECK_OK(run_threads(g, 2, f, fv, 2, &z, &o2, 1, &st), &st);
    double *want = malloc(sizeof(double) * 70000);
    int64_t n = 0;
    ref_bmm(xv, xd, xr, yv, yd, yr, ax, ay, want, &n);
    int bad = 0;
    if (o1 && o2) {
        CHECK_EQ_INT(vg_tensor_num_elements(o1), n);
        for (int64_t i = 0; i < n && i < vg_tensor_num_elements(o1); i++)
            if (!(fabs(get(o1, i) - want[i]) <= 1e-5 * (1 + fabs(want[i])))) bad++;
        CHECK(memcmp(vg_tensor_data(o1), vg_tensor_data(o2), vg_tensor_nbytes(o1)) == 0); /* same bits */
    }
    if (bad) fprintf(stderr, "bmm x rank %d [.., %lld, %lld] ax %d ay %d: %d wrong\n", xr, (long long)xd[xr - 2],
                     (long long)xd[xr - 1], ax, ay, bad);
    CHECK_EQ_INT(bad, 0);
    kt_teardown(g, NULL, (vg_tensor *[]){o1, o2, tx, ty}, 4, (void *[]){want}, 1);
}

static void test_batch_matmul(void) {
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            bool ax = a, ay = b;
            /* the read head products: [16, 4, 16] with the memory [16, 16, 16] */
            check_bmm((const int64_t[]){16, ax ? 16 : 4, ax ? 4 : 16}, 3, (const int64_t[]){16, 16, 16}, 3, ax, ay);
            /* the write head (m or n = 1) */
            check_bmm((const int64_t[]){16, ax ? 16 : 1, ax ? 1 : 16}, 3, (const int64_t[]){16, 16, 16}, 3, ax, ay);
            /* odd sizes: row and column tails, k not a multiple of 8 */
            check_bmm((const int64_t[]){3, ax ? 7 : 5, ax ? 5 : 7}, 3, (const int64_t[]){3, ay ? 13 : 7, ay ? 7 : 13}, 3,
                      ax, ay);
            /* larger products */
            check_bmm((const int64_t[]){2, 64, 8}, 3, (const int64_t[]){2, ay ? 64 : 8, ay ? 8 : 64}, 3, false, ay);
            check_bmm((const int64_t[]){2, 65, 8}, 3, (const int64_t[]){2, ay ? 64 : 8, ay ? 8 : 64}, 3, false, ay);
        }
    /* odd sizes of the direct kernels: k = 1 with row and column tails; A Y^T with column
     * tails and k below, at and past the 8 lanes */
    check_bmm((const int64_t[]){3, 5, 1}, 3, (const int64_t[]){3, 1, 13}, 3, false, false);
    check_bmm((const int64_t[]){3, 1, 6}, 3, (const int64_t[]){3, 11, 1}, 3, true, true);
    check_bmm((const int64_t[]){3, 3, 7}, 3, (const int64_t[]){3, 13, 7}, 3, false, true);
    check_bmm((const int64_t[]){3, 3, 8}, 3, (const int64_t[]){3, 13, 8}, 3, false, true);
    check_bmm((const int64_t[]){3, 2, 19}, 3, (const int64_t[]){3, 6, 19}, 3, false, true);
    /* cosine weights' norms: [16, 4, 1] x [16, 16, 1]^T (k = 1) */
    check_bmm((const int64_t[]){16, 4, 1}, 3, (const int64_t[]){16, 16, 1}, 3, false, true);
    /* erase-and-write: address [16, 1, 16]^T x values [16, 1, 16] (k = 1) */
    check_bmm((const int64_t[]){16, 1, 16}, 3, (const int64_t[]){16, 1, 16}, 3, true, false);
    /* directional read weights: [16, 1, 4, 16] x link [16, 1, 16, 16], both directions */
    check_bmm((const int64_t[]){16, 1, 4, 16}, 4, (const int64_t[]){16, 1, 16, 16}, 4, false, true);
    check_bmm((const int64_t[]){16, 1, 4, 16}, 4, (const int64_t[]){16, 1, 16, 16}, 4, false, false);
    /* a rank-2 y broadcast over the batch */
    check_bmm((const int64_t[]){16, 4, 16}, 3, (const int64_t[]){16, 12}, 2, false, false);
    /* gradients (float: the small kernel) by finite differences, at the read heads' shape */
    for (int b = 0; b < 2; b++) {
        double xv[16 * 4 * 16], yv[16 * 16 * 16];
        for (int i = 0; i < 16 * 4 * 16; i++) xv[i] = urand() * 2 - 1;
        for (int i = 0; i < 16 * 16 * 16; i++) yv[i] = urand() * 2 - 1;
        vg_graph *g = vg_graph_new();
        vg_tensor *t[2];
        vg_output p[2] = {ph(g, VG_FLOAT, (const int64_t[]){16, 4, 16}, 3, xv, &t[0]),
                          ph(g, VG_FLOAT, (const int64_t[]){16, 16, 16}, 3, yv, &t[1])};
        vg_output z = vg_batch_matmul(g, p[0], p[1], false, b, NULL);
        CHECK_EQ_INT(vg_gradcheck(g, p, t, 2, z, 1e-2, 2e-3), 0);
        vg_tensor_free(t[0]);
        vg_tensor_free(t[1]);
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_top_k_values);
    RUN_TEST(test_top_k_grad);
    RUN_TEST(test_scans);
    RUN_TEST(test_batch_matmul);
    TEST_MAIN_END();
}
