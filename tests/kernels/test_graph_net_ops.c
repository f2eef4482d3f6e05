/* test_graph_net_ops.c - the kernels bench_models' graph_net model leans on, at the
 * model's shapes (2048 nodes, 12288 edges, latent 128): UnsortedSegmentSum (the edges
 * summed onto their receivers; its kernel adds the rows in row order, one range of
 * segments per thread) and Tile (the layer norm's Mean gradient tiles [12288, 1] to
 * [12288, 128]; its kernel fills a repeated element directly and runs the blocks of a
 * step in parallel). Values against a naive loop (bit-exact, as the summation order is
 * the serial one), the same bits at 1 and 4 intra-op threads, and gradients against
 * central differences (float64, a sample of elements) through vg_gradients. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

#define NODES 2048
#define EDGES 12288
#define LATENT 128

static uint32_t rng = 12345;
static uint32_t next(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}
static double urand(void) { return (double)next() / (double)(1u << 24) * 2 - 1; }

static vg_tensor *rand_tensor(vg_dtype dt, const int64_t *dims, int nd) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(dt, dims, nd, &st);
    for (int64_t i = 0, n = vg_tensor_num_elements(t); i < n; i++) {
        if (dt == VG_DOUBLE) ((double *)vg_tensor_data(t))[i] = urand();
        else ((float *)vg_tensor_data(t))[i] = (float)urand();
    }
    return t;
}

/* Runs y with feeds at the given intra-op thread count; the result or NULL. */
static vg_tensor *run_at(vg_graph *g, int threads, const vg_output *feeds, vg_tensor *const *fv, int nf, vg_output y) {
    vg_status st;
    vg_session_options so = {0};
    so.intra_op_threads = threads;
    so.inter_op_threads = 1;
    vg_session *s = vg_session_new(g, &so, &st);
    vg_tensor *out = NULL;
    if (!s || vg_session_run(s, NULL, feeds, fv, nf, &y, &out, 1, NULL, 0, NULL, &st)) {
        fprintf(stderr, "run: %s\n", st.msg);
        out = NULL;
    }
    vg_session_free(s);
    return out;
}

static bool same_bits(const vg_tensor *a, const vg_tensor *b) {
    return a && b && vg_tensor_nbytes(a) == vg_tensor_nbytes(b) &&
           memcmp(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_nbytes(a)) == 0;
}

/* Central differences of L = sum(y * C) for nsample elements of x (float64) against
 * the analytic gradient of L from vg_gradients; returns the mismatches. */
static int fd_check(vg_graph *g, vg_output x, vg_tensor *xv, vg_output y, int nsample, double eps, double tol) {
    vg_status st;
    vg_tensor *yv = run_at(g, 1, &x, &xv, 1, y);
    if (!yv) return 1;
    vg_tensor *c = rand_tensor(VG_DOUBLE, vg_tensor_dims(yv), vg_tensor_ndims(yv));
    vg_tensor_free(yv);
    vg_output L = vg_reduce_sum(g, vg_mul(g, y, vg_const(g, c, "fd_c"), NULL), NULL, -1, false, "fd_L");
    vg_tensor_free(c);
    vg_output dx;
    if (vg_gradients(g, &L, 1, &x, 1, NULL, &dx, &st) != VG_OK) {
        fprintf(stderr, "gradients: %s\n", st.msg);
        return 1;
    }
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *an = NULL;
    if (!s || vg_session_run(s, NULL, &x, &xv, 1, &dx, &an, 1, NULL, 0, NULL, &st)) return 1;
    int bad = 0;
    double *p = vg_tensor_data(xv);
    int64_t n = vg_tensor_num_elements(xv);
    for (int k = 0; k < nsample; k++) {
        int64_t i = (int64_t)(next() % (uint32_t)n);
        double x0 = p[i], lp, lm;
        vg_tensor *o = NULL;
        p[i] = x0 + eps;
        vg_session_run(s, NULL, &x, &xv, 1, &L, &o, 1, NULL, 0, NULL, &st);
        lp = *(double *)vg_tensor_data(o);
        vg_tensor_free(o);
        p[i] = x0 - eps;
        vg_session_run(s, NULL, &x, &xv, 1, &L, &o, 1, NULL, 0, NULL, &st);
        lm = *(double *)vg_tensor_data(o);
        vg_tensor_free(o);
        p[i] = x0;
        double num = (lp - lm) / (2 * eps), a = ((double *)vg_tensor_data(an))[i];
        if (!(fabs(num - a) <= tol * (1 + fabs(num)))) {
            if (bad < 5) fprintf(stderr, "x[%lld]: analytic %.9g numeric %.9g\n", (long long)i, a, num);
            bad++;
        }
    }
    vg_tensor_free(an);
    vg_session_free(s);
    return bad;
}

static vg_output ids_const(vg_graph *g, int32_t *ids, int64_t n) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_INT32, &n, 1, &st);
    memcpy(vg_tensor_data(t), ids, sizeof(int32_t) * (size_t)n);
    vg_output c = vg_const(g, t, "ids");
    vg_tensor_free(t);
    return c;
}

/* graph_net's aggregation: unsorted_segment_sum(new_edges [12288, 128], receivers,
 * 2048); some ids negative (dropped, TF's UnsortedSegmentTest.testDropNegatives), some
 * segments empty (zero rows). */
static void test_segment_sum_values(void) {
    vg_graph *g = vg_graph_new();
    int32_t *ids = malloc(sizeof(int32_t) * EDGES);
    for (int k = 0; k < EDGES; k++) ids[k] = (int32_t)(next() % (NODES - 16)) - (k % 97 == 0 ? NODES : 0);
    int64_t ed[2] = {EDGES, LATENT};
    vg_output x = vg_placeholder(g, VG_FLOAT, ed, 2, "x");
    vg_output y = vg_unsorted_segment_sum(g, x, ids_const(g, ids, EDGES), vg_const_i32(g, NODES, "n"), "segsum");
    vg_shape s = vg_output_shape(y);
    CHECK(s.ndims == 2 && s.dims[0] == NODES && s.dims[1] == LATENT);
    vg_tensor *xv = rand_tensor(VG_FLOAT, ed, 2);
    vg_tensor *y1 = run_at(g, 1, &x, &xv, 1, y), *y4 = run_at(g, 4, &x, &xv, 1, y);
    CHECK(y1 && y4);
    if (y1 && y4) {
        /* the naive loop in row order: the same float additions in the same order */
        float *ref = calloc((size_t)NODES * LATENT, sizeof(float));
        const float *xp = vg_tensor_data(xv);
        for (int k = 0; k < EDGES; k++)
            if (ids[k] >= 0)
                for (int t = 0; t < LATENT; t++) ref[(size_t)ids[k] * LATENT + t] += xp[(size_t)k * LATENT + t];
        CHECK(memcmp(ref, vg_tensor_data(y1), sizeof(float) * NODES * LATENT) == 0);
        CHECK(same_bits(y1, y4));
        /* the empty tail segments are zeros */
        CHECK(((float *)vg_tensor_data(y1))[(size_t)(NODES - 1) * LATENT + 5] == 0.0f);
        free(ref);
    }
    vg_tensor_free(y1), vg_tensor_free(y4), vg_tensor_free(xv);
    free(ids);
    vg_graph_free(g);
}

/* TF's UnsortedSegmentTest.testValues in small: data [4, 2], ids [2, 0, 2, -1], 3
 * segments -> [[3, 4], [0, 0], [1+5, 2+6]] (by hand), int64 and double too. */
static void test_segment_sum_small(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t dd[2] = {4, 2}, idd[1] = {4};
    vg_tensor *d = vg_tensor_new(VG_DOUBLE, dd, 2, &st), *ids = vg_tensor_new(VG_INT64, idd, 1, &st);
    for (int i = 0; i < 8; i++) ((double *)vg_tensor_data(d))[i] = i + 1;
    int64_t iv[4] = {2, 0, 2, -1};
    memcpy(vg_tensor_data(ids), iv, sizeof iv);
    vg_output y = vg_unsorted_segment_sum(g, vg_const(g, d, "d"), vg_const(g, ids, "i"), vg_const_i64(g, 3, "n"), NULL);
    CHECK(strcmp(vg_op_name(y.op), "UnsortedSegmentSum") == 0);
    vg_tensor *o = run_at(g, 2, NULL, NULL, 0, y);
    double want[6] = {3, 4, 0, 0, 6, 8};
    CHECK(o && vg_tensor_num_elements(o) == 6 && memcmp(vg_tensor_data(o), want, sizeof want) == 0);
    vg_tensor_free(o), vg_tensor_free(d), vg_tensor_free(ids);
    vg_graph_free(g);
}

/* TF's UnsortedSegmentTest.testGradientsTFGradients at graph_net's shapes: d/dx of
 * sum(C * unsorted_segment_sum(x, ids, 2048)) = C[ids] (zero rows for negative ids). */
static void test_segment_sum_grad(void) {
    vg_graph *g = vg_graph_new();
    int32_t *ids = malloc(sizeof(int32_t) * EDGES);
    for (int k = 0; k < EDGES; k++) ids[k] = (int32_t)(next() % NODES) - (k % 50 == 0 ? NODES : 0);
    int64_t ed[2] = {EDGES, LATENT};
    vg_output x = vg_placeholder(g, VG_DOUBLE, ed, 2, "x");
    vg_output y = vg_unsorted_segment_sum(g, x, ids_const(g, ids, EDGES), vg_const_i32(g, NODES, "n"), NULL);
    vg_tensor *xv = rand_tensor(VG_DOUBLE, ed, 2);
    CHECK_EQ_INT(fd_check(g, x, xv, y, 48, 1e-3, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xv}, 1, (void *[]){ids}, 1);
}

/* The layer norm's Tile at graph_net's shape: *x a placeholder "x" of dt and shape
 * [EDGES, 1], tiled by the int32 multiples [1, LATENT]. */
static vg_output tile_latent(vg_graph *g, vg_dtype dt, vg_output *x) {
    int64_t xd[2] = {EDGES, 1}, md[1] = {2};
    *x = vg_placeholder(g, dt, xd, 2, "x");
    vg_tensor *mt = vg_tensor_new(VG_INT32, md, 1, NULL);
    ((int32_t *)vg_tensor_data(mt))[0] = 1, ((int32_t *)vg_tensor_data(mt))[1] = LATENT;
    vg_output y = vg_tile(g, *x, vg_const(g, mt, "m"), NULL);
    vg_tensor_free(mt);
    return y;
}

/* Tile as the layer norm's Mean gradient builds it: [12288, 1] x [1, 128]; a
 * multi-dimensional tile with repeats on several axes ([3, 1, 5] x [2, 7, 3], every
 * element checked against its source index); 1 and 4 threads give the same bits. */
static void test_tile_values(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {EDGES, 1};
    vg_status st;
    vg_output x, y = tile_latent(g, VG_FLOAT, &x);
    vg_tensor *xv = rand_tensor(VG_FLOAT, xd, 2);
    vg_tensor *y1 = run_at(g, 1, &x, &xv, 1, y), *y4 = run_at(g, 4, &x, &xv, 1, y);
    CHECK(y1 && y4 && vg_tensor_num_elements(y1) == (int64_t)EDGES * LATENT);
    if (y1) {
        const float *o = vg_tensor_data(y1), *xp = vg_tensor_data(xv);
        int bad = 0;
        for (int64_t i = 0; i < (int64_t)EDGES * LATENT; i++) bad += o[i] != xp[i / LATENT];
        CHECK_EQ_INT(bad, 0);
    }
    CHECK(same_bits(y1, y4));
    vg_tensor_free(y1), vg_tensor_free(y4), vg_tensor_free(xv);

    int64_t d3[3] = {3, 1, 5}, m3d[1] = {3};
    vg_output x3 = vg_placeholder(g, VG_DOUBLE, d3, 3, "x3");
    vg_tensor *m3 = vg_tensor_new(VG_INT64, m3d, 1, &st);
    int64_t mv[3] = {2, 7, 3};
    memcpy(vg_tensor_data(m3), mv, sizeof mv);
    vg_output y3 = vg_tile(g, x3, vg_const(g, m3, "m3"), NULL);
    vg_tensor_free(m3);
    vg_tensor *x3v = rand_tensor(VG_DOUBLE, d3, 3);
    vg_tensor *o3 = run_at(g, 4, &x3, &x3v, 1, y3);
    CHECK(o3 && vg_tensor_ndims(o3) == 3 && vg_tensor_dim(o3, 0) == 6 && vg_tensor_dim(o3, 1) == 7 &&
          vg_tensor_dim(o3, 2) == 15);
    if (o3) {
        const double *o = vg_tensor_data(o3), *xp = vg_tensor_data(x3v);
        int bad = 0;
        for (int a = 0; a < 6; a++)
            for (int b = 0; b < 7; b++)
                for (int c = 0; c < 15; c++) bad += o[(a * 7 + b) * 15 + c] != xp[(a % 3) * 5 + c % 5];
        CHECK_EQ_INT(bad, 0);
    }
    vg_tensor_free(o3), vg_tensor_free(x3v);
    vg_graph_free(g);
}

/* TF's TileTest.testGradientSimpleReduction at graph_net's shape: d/dx of
 * sum(C * tile(x, [1, 128])) for x [12288, 1] is the row sums of C. */
static void test_tile_grad(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {EDGES, 1};
    vg_output x, y = tile_latent(g, VG_DOUBLE, &x);
    vg_tensor *xv = rand_tensor(VG_DOUBLE, xd, 2);
    CHECK_EQ_INT(fd_check(g, x, xv, y, 48, 1e-3, 1e-6), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_segment_sum_values);
    RUN_TEST(test_segment_sum_small);
    RUN_TEST(test_segment_sum_grad);
    RUN_TEST(test_tile_values);
    RUN_TEST(test_tile_grad);
    TEST_MAIN_END();
}
