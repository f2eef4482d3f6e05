/* test_dist_wire.c - Horovod's means of hiding the network (issue 33): fp16 compression
 * of the ring (Compression.fp16) and the hierarchical allreduce
 * (HOROVOD_HIERARCHICAL_ALLREDUCE), through vg_dist_allreduce_gradients' options.
 * CTest runs it alone (1 rank: compression changes nothing), under mpirun -np 2 (one
 * node: the shared window, which ignores compression), -np 2 with VIGIL_SHM=0 (the
 * ring: half on the wire) and -np 4 with VIGIL_TEST_NODE_SIZE=2 (two fake nodes of two
 * ranks: reduce in the node, ring across the two leaders, broadcast in the node).
 * Expected values are computed by hand from half's 11 significant bits. */
#include "dist_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int R, N;
static bool shm_off, hier_on; /* the paths this run takes (see the header) */

enum { E = 40000 }; /* 160 KB: above the 64 KB under which a fusion is one MPI_Allreduce */

static vg_output const_of(vg_graph *g, const float *p, const char *name) {
    return vg_const_array(g, VG_FLOAT, (int64_t[]){E}, 1, p, name);
}

/* x[i] on rank r: multiples of 0.25 below 2^11, exact in float and in their sums */
static float xval(int64_t i, int r) { return (float)((i * 37) % 1000) * 0.25f + (float)(r + 1); }
/* varied values that half cannot hold exactly */
static float yval(int64_t i, int r) { return (float)(i % 1000) * 0.37f + (float)r * 1.3f + 0.001f; }

/* Runs the reduction of xs[0..n) under o; outs[k] (E floats each) gets output k. */
static void reduce_run(const vg_dist_options *o, float *const *ins, int n, float **outs) {
    vg_graph *g = vg_graph_new();
    vg_output xs[4], ys[4];
    for (int k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", k);
        xs[k] = const_of(g, ins[k], name);
    }
    vg_status st;
    CHECK_OK(vg_dist_allreduce_gradients(g, xs, n, o, ys, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_tensor *out[4] = {0};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, ys, out, n, NULL, 0, NULL, &st), &st);
    for (int k = 0; k < n; k++) {
        CHECK_EQ_INT(vg_tensor_num_elements(out[k]), E);
        memcpy(outs[k], vg_tensor_data(out[k]), E * sizeof(float));
        vg_tensor_free(out[k]);
    }
    free_session_graph(s, g);
}

/* Every rank holds the same bytes (max and min of each element agree). */
static void check_same_on_all_ranks(const float *v) {
    if (N == 1) return;
    float *mx = malloc(E * sizeof *mx), *mn = malloc(E * sizeof *mn);
    memcpy(mx, v, E * sizeof *mx);
    memcpy(mn, v, E * sizeof *mn);
    vg_status st;
    CHECK_OK(vg_dist_allreduce(mx, E, VG_FLOAT, VG_REDUCE_MAX, &st), &st);
    CHECK_OK(vg_dist_allreduce(mn, E, VG_FLOAT, VG_REDUCE_MIN, &st), &st);
    int64_t bad = 0;
    for (int64_t i = 0; i < E; i++) bad += mx[i] != mn[i];
    CHECK_EQ_INT(bad, 0);
    free(mx);
    free(mn);
}

/* The mean of v = 1 + 2^-12 on every rank: float32 gives v back; with half on the wire
 * every message is rounded to half (ulp 2^-10 at 1): on the flat ring of N ranks the
 * partial sums are j + 2^-12 after j hops, each sent as j, and the owner's last add
 * gives (N + 2^-12) / N, which rounds to 1 as half; on two nodes of two the leaders
 * exchange half(2v) = 2, 2 + 2v = 4 + 2^-11 rounds to 4, 4 / 4 = 1. So 1.0 exactly
 * wherever the ring compresses, v where it does not. A second tensor of varied values
 * stays within half's precision of the float32 mean: each of at most N roundings errs
 * by 2^-11 of a partial sum (at most the sum of |y|), the final rounding by 2^-11 of
 * the mean. */
static void check_fp16(bool hierarchical) {
    vg_dist_options o = {.compression = VG_DIST_COMPRESSION_FP16, .hierarchical = hierarchical,
                         .no_fusion = true}; /* one allreduce per tensor */
    float *v = malloc(E * sizeof *v), *y = malloc(E * sizeof *y);
    float *ov = malloc(E * sizeof *ov), *oy = malloc(E * sizeof *oy);
    const float one_plus = 1.0f + 0x1p-12f;
    for (int64_t i = 0; i < E; i++) {
        v[i] = one_plus;
        y[i] = yval(i, R);
    }
    float *ins[2] = {v, y}, *outs[2] = {ov, oy};
    reduce_run(&o, ins, 2, outs);
    bool compressed = N > 1 && (shm_off || (hierarchical && hier_on));
    float want_v = compressed ? 1.0f : one_plus;
    int64_t bad = 0, differ = 0;
    for (int64_t i = 0; i < E; i++) bad += ov[i] != want_v;
    if (bad) fprintf(stderr, "fp16 (hierarchical %d): v -> %.9g, want %.9g\n", hierarchical, ov[0], want_v);
    CHECK_EQ_INT(bad, 0);
    bad = 0;
    for (int64_t i = 0; i < E; i++) {
        double sum = 0, sabs = 0;
        for (int r = 0; r < N; r++) {
            sum += yval(i, r);
            sabs += fabs(yval(i, r));
        }
        double mean = (float)sum / N, tol = compressed ? 0x1p-11 * (sabs + fabs(mean)) * 1.01 : 1e-6 * sabs;
        if (fabs(oy[i] - mean) > tol) {
            if (!bad) fprintf(stderr, "fp16: y[%lld] -> %.9g, want %.9g +- %g\n", (long long)i, oy[i], mean, tol);
            bad++;
        }
        differ += oy[i] != (float)mean;
    }
    CHECK_EQ_INT(bad, 0);
    if (compressed) CHECK(differ > 0); /* the wire really carried half */
    check_same_on_all_ranks(oy);
    free(v), free(y), free(ov), free(oy);
}

static void test_fp16__flat(void) { check_fp16(false); }
static void test_fp16__hierarchical(void) { check_fp16(true); }

/* Sums and means of exact values: the hierarchical reduction equals the flat one and
 * the hand-computed sum sum_r x(i, r) = N x(i, 0) + N (N - 1) / 2; two tensors in one
 * bucket (their slices at different offsets of one fusion buffer). */
static void check_hier(bool average) {
    float *a = malloc(E * sizeof *a), *b = malloc(E * sizeof *b);
    float *ha = malloc(E * sizeof *ha), *hb = malloc(E * sizeof *hb), *fa = malloc(E * sizeof *fa),
          *fb = malloc(E * sizeof *fb);
    for (int64_t i = 0; i < E; i++) {
        a[i] = xval(i, R);
        b[i] = xval(i + 5, R) * 2;
    }
    vg_dist_options o = {.sum = !average, .hierarchical = true};
    float *ins[2] = {a, b}, *hier[2] = {ha, hb}, *flat[2] = {fa, fb};
    reduce_run(&o, ins, 2, hier);
    o.hierarchical = false;
    reduce_run(&o, ins, 2, flat);
    int64_t bad = 0;
    for (int64_t i = 0; i < E; i++) {
        double sa = N * (double)xval(i, 0) + N * (N - 1) / 2.0, sb = 2 * (N * (double)xval(i + 5, 0) + N * (N - 1) / 2.0);
        if (average) sa /= N, sb /= N;
        bad += ha[i] != (float)sa || hb[i] != (float)sb || fa[i] != ha[i] || fb[i] != hb[i];
        if (bad == 1 && (ha[i] != (float)sa || hb[i] != (float)sb || fa[i] != ha[i] || fb[i] != hb[i]))
            fprintf(stderr, "hier [%lld]: %g %g flat %g %g want %g %g\n", (long long)i, ha[i], hb[i], fa[i], fb[i], sa,
                    sb);
    }
    CHECK_EQ_INT(bad, 0);
    free(a), free(b), free(ha), free(hb), free(fa), free(fb);
}

static void test_hierarchical__sum(void) { check_hier(false); }
static void test_hierarchical__mean(void) { check_hier(true); }

/* An unknown compression is refused at build time; the op's attr too. */
static void test_compression__invalid(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_const_fill(g, VG_FLOAT, (int64_t[]){3}, 1, 1.0, "x"), y;
    vg_dist_options o = {.compression = (vg_dist_compression)7};
    vg_status st;
    CHECK_EQ_INT(vg_dist_allreduce_gradients(g, &x, 1, &o, &y, &st), VG_INVALID_ARGUMENT);
    vg_op_builder *b = vg_op_builder_new(g, "VigilFusedAllreduce", "bad");
    vg_op_builder_add_inputs(b, &x, 1);
    vg_op_builder_set_attr_int(b, "N", 1);
    vg_op_builder_set_attr_string(b, "compression", "fp8", 3);
    CHECK(vg_op_builder_finish(b) == NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK(strstr(st.msg, "fp8") != NULL);
    vg_graph_free(g);
}

/* The number of fused allreduces that {0} options build for three float gradients of
 * 48 bytes each (buckets are contiguous in reverse order: count the changes). */
static int zero_options_buckets(void) {
    vg_graph *g = vg_graph_new();
    vg_output xs[3], ys[3];
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "g%d", k);
        xs[k] = vg_placeholder(g, VG_FLOAT, (int64_t[]){12}, 1, name);
    }
    vg_status st;
    CHECK_OK(vg_dist_allreduce_gradients(g, xs, 3, &(vg_dist_options){0}, ys, &st), &st);
    int n = 1 + (ys[2].op != ys[1].op) + (ys[1].op != ys[0].op);
    vg_graph_free(g);
    return n;
}

/* HOROVOD_FUSION_THRESHOLD (bytes) sets the default threshold, as in Horovod: 0 there
 * turns fusion off; a value that is not a byte count is ignored (64 MB stays). */
static void test_fusion_threshold__env(void) {
    unsetenv("HOROVOD_FUSION_THRESHOLD");
    CHECK_EQ_INT(zero_options_buckets(), 1); /* 144 bytes under 64 MB */
    setenv("HOROVOD_FUSION_THRESHOLD", "100", 1);
    CHECK_EQ_INT(zero_options_buckets(), 2); /* [g2 g1] 96 bytes, [g0] */
    setenv("HOROVOD_FUSION_THRESHOLD", "0", 1);
    CHECK_EQ_INT(zero_options_buckets(), 3);
    setenv("HOROVOD_FUSION_THRESHOLD", "12MB", 1); /* not a byte count: the default stays */
    CHECK_EQ_INT(zero_options_buckets(), 1);
    unsetenv("HOROVOD_FUSION_THRESHOLD");
    vg_dist_options z = {0}; /* zero-initialised options: no compression, flat */
    CHECK_EQ_INT(z.compression, VG_DIST_COMPRESSION_NONE);
    CHECK(!z.hierarchical);
}

int main(void) {
    dist_fx_init(&R, &N);
    const char *e = getenv("VIGIL_SHM"), *k = getenv("VIGIL_TEST_NODE_SIZE");
    shm_off = e && strcmp(e, "0") == 0;
    int node = k ? atoi(k) : 0;
    hier_on = N > 1 && node > 1 && N > node;
    RUN_TEST(test_fp16__flat);
    RUN_TEST(test_fp16__hierarchical);
    RUN_TEST(test_hierarchical__sum);
    RUN_TEST(test_hierarchical__mean);
    RUN_TEST(test_compression__invalid);
    RUN_TEST(test_fusion_threshold__env);
    return dist_fx_end();
}
