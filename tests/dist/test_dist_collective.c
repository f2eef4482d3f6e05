/* test_dist_collective.c - collective graph ops (issue 15): CollectiveReduce
 * (merge_op/final_op; float32, float64, int32, int64), CollectiveBcastSend/Recv,
 * CollectiveGather, HorovodBroadcast (shape mismatch across ranks), the fused
 * allreduce, and CANCELLED on close. CTest runs it alone (1 rank) and under
 * mpirun -np 2; expected values are computed from the world's size. */
#include "dist_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static int R, N; /* rank, size */

static vg_tensor *run1(vg_graph *g, vg_output o, vg_code want) {
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_tensor *t = NULL;
    vg_code rc = vg_session_run1(s, o, &t, &st);
    if (rc != want) fprintf(stderr, "run: code %d (%s), want %d\n", rc, st.msg, want);
    CHECK_CODE(rc, want);
    vg_session_free(s);
    return t;
}

static void test_reduce__add_div_f32(void) {
    vg_graph *g = vg_graph_new();
    float v[3] = {1.0f + (float)R, 2.0f * (float)R, -1.0f};
    vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, v, "x");
    vg_output sum = vg_collective_reduce(g, x, N, 1, 1, "Add", "Id", "sum");
    vg_output mean = vg_collective_reduce(g, x, 0, 1, 2, "Add", "Div", "mean");
    vg_op_add_control_input(mean.op, sum.op); /* same order on every rank */
    vg_tensor *t = run1(g, sum, VG_OK);
    double s0 = N + N * (N - 1) / 2.0, s1 = (double)N * (N - 1);
    if (t) {
        const float *f = vg_tensor_data(t);
        CHECK_NEAR(f[0], s0, 1e-6);
        CHECK_NEAR(f[1], s1, 1e-6);
        CHECK_NEAR(f[2], -N, 1e-6);
        vg_tensor_free(t);
    }
    t = run1(g, mean, VG_OK);
    if (t) {
        const float *f = vg_tensor_data(t);
        CHECK_NEAR(f[0], s0 / N, 1e-6);
        CHECK_NEAR(f[1], s1 / N, 1e-6);
        CHECK_NEAR(f[2], -1.0, 1e-6);
        vg_tensor_free(t);
    }
    vg_graph_free(g);
}

static void test_reduce__other_types(void) {
    vg_graph *g = vg_graph_new();
    double d = 0.5 + R;
    int32_t i = R + 2;
    int64_t l = 7 - R;
    vg_output xd = vg_const_array(g, VG_DOUBLE, (int64_t[]){1}, 1, &d, "d");
    vg_output xi = vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &i, "i");
    vg_output xl = vg_const_array(g, VG_INT64, (int64_t[]){1}, 1, &l, "l");
    vg_output mx = vg_collective_reduce(g, xd, N, 1, 3, "Max", NULL, "max");
    vg_output pr = vg_collective_reduce(g, xi, N, 1, 4, "Mul", NULL, "prod");
    vg_output mn = vg_collective_reduce(g, xl, N, 1, 5, "Min", NULL, "min");
    vg_tensor *t = run1(g, mx, VG_OK);
    if (t) {
        CHECK_NEAR(((double *)vg_tensor_data(t))[0], 0.5 + (N - 1), 0);
        vg_tensor_free(t);
    }
    t = run1(g, pr, VG_OK);
    int32_t want = 1;
    for (int r = 0; r < N; r++) want *= r + 2;
    if (t) {
        CHECK_EQ_INT(((int32_t *)vg_tensor_data(t))[0], want);
        vg_tensor_free(t);
    }
    t = run1(g, mn, VG_OK);
    if (t) {
        CHECK_EQ_INT(((int64_t *)vg_tensor_data(t))[0], 7 - (N - 1));
        vg_tensor_free(t);
    }
    vg_graph_free(g);
}

static void test_reduce__bad_attrs(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output s = vg_const_string(g, "a", "s");
    vg_output r = vg_collective_reduce(g, s, N, 1, 1, "Add", "Id", "bad_dtype");
    CHECK(r.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "not supported");
    vg_graph_free(g);
    g = vg_graph_new();
    r = vg_collective_reduce(g, vg_const_f32(g, 1, "x"), N, 1, 1, "Sub", "Id", "bad_merge");
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "merge_op");
    vg_graph_free(g);
    /* a group size that is not the world's: every rank fails the same way, no hang */
    g = vg_graph_new();
    r = vg_collective_reduce(g, vg_const_f32(g, 1, "x"), N + 1, 1, 1, "Add", "Id", "bad_group");
    vg_session *sess = vg_session_new(g, NULL, &st);
    EXPECT_CODE_MSG(vg_session_run1(sess, r, NULL, &st), &st, VG_INVALID_ARGUMENT, "group_size");
    free_session_graph(sess, g);
}

static void test_bcast__send_recv(void) {
    vg_graph *g = vg_graph_new();
    int root = N - 1;
    vg_output o;
    if (R == root) {
        int64_t v[4] = {10, 20, 30, 40 + R};
        o = vg_collective_bcast_send(g, vg_const_array(g, VG_INT64, (int64_t[]){2, 2}, 2, v, "v"), N, 1, 6, "b");
    } else {
        vg_shape s = {2, {2, 2}};
        o = vg_collective_bcast_recv(g, VG_INT64, s, N, 1, 6, "b");
    }
    vg_tensor *t = run1(g, o, VG_OK);
    if (t) {
        const int64_t *p = vg_tensor_data(t);
        CHECK_EQ_INT(vg_tensor_dim(t, 0), 2);
        CHECK_EQ_INT(p[0], 10);
        CHECK_EQ_INT(p[3], 40 + root);
        vg_tensor_free(t);
    }
    vg_graph_free(g);
}

static void test_hvd_broadcast__values_and_mismatch(void) {
    vg_graph *g = vg_graph_new();
    float v[2] = {(float)R, (float)(R * 3)};
    vg_output b = vg_dist_broadcast_tensor(g, vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, v, "v"), 0, "w", "bc");
    vg_tensor *t = run1(g, b, VG_OK);
    if (t) {
        CHECK_NEAR(((float *)vg_tensor_data(t))[0], 0, 0);
        CHECK_NEAR(((float *)vg_tensor_data(t))[1], 0, 0);
        vg_tensor_free(t);
    }
    vg_graph_free(g);
    if (N < 2) return;
    /* rank 1 builds a different shape: every rank gets INVALID_ARGUMENT naming the tensor */
    g = vg_graph_new();
    int64_t dims[1] = {R == 1 ? 3 : 2};
    float w[3] = {1, 2, 3};
    b = vg_dist_broadcast_tensor(g, vg_const_array(g, VG_FLOAT, dims, 1, w, "v"), 0, "dense/kernel", "bc");
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    EXPECT_CODE_MSG(vg_session_run1(s, b, NULL, &st), &st, VG_INVALID_ARGUMENT, "dense/kernel");
    CHECK_STR_CONTAINS(st.msg, "Mismatched shapes");
    free_session_graph(s, g);
}

static void test_gather__ragged(void) {
    vg_graph *g = vg_graph_new();
    int rows = R + 1;
    int32_t v[16];
    for (int i = 0; i < rows * 2; i++) v[i] = 100 * R + i;
    vg_output x = vg_const_array(g, VG_INT32, (int64_t[]){rows, 2}, 2, v, "x");
    vg_output o = vg_collective_gather(g, x, N, 1, 7, "gather");
    vg_tensor *t = run1(g, o, VG_OK);
    if (t) {
        CHECK_EQ_INT(vg_tensor_dim(t, 0), N * (N + 1) / 2);
        CHECK_EQ_INT(vg_tensor_dim(t, 1), 2);
        const int32_t *p = vg_tensor_data(t);
        int k = 0, bad = 0;
        for (int r = 0; r < N; r++)
            for (int i = 0; i < (r + 1) * 2; i++) bad += p[k++] != 100 * r + i;
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(t);
    }
    vg_graph_free(g);
}

static void test_fused__many_tensors(void) {
    vg_graph *g = vg_graph_new();
    vg_output xs[3];
    xs[0] = vg_const_fill(g, VG_FLOAT, (int64_t[]){4, 5}, 2, 1.0 + R, "a");
    xs[1] = vg_const_fill(g, VG_FLOAT, NULL, 0, 2.0 * R, "b");
    xs[2] = vg_const_fill(g, VG_FLOAT, (int64_t[]){7}, 1, -3.0, "c");
    vg_op *op = vg_dist_fused_allreduce(g, xs, 3, true, "fused");
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output f[3] = {vg_out(op, 0), vg_out(op, 1), vg_out(op, 2)};
    vg_tensor *out[3] = {0};
    for (int rep = 0; rep < 3; rep++) { /* the fusion buffer is reused */
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, out, 3, NULL, 0, NULL, &st), &st);
        if (!out[0]) break;
        CHECK_EQ_INT(vg_tensor_num_elements(out[0]), 20);
        CHECK_NEAR(((float *)vg_tensor_data(out[0]))[19], 1.0 + (N - 1) / 2.0, 1e-6);
        CHECK_NEAR(((float *)vg_tensor_data(out[1]))[0], (N - 1), 1e-6);
        CHECK_NEAR(((float *)vg_tensor_data(out[2]))[6], -3.0, 1e-6);
        for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    }
    free_session_graph(s, g);
}

/* The packed fusion buffer: a large tensor (80 KB) beside odd-sized small ones, each
 * element its own value; outputs are views of the buffer, so a run's outputs held by
 * the caller must survive the next run (which takes another buffer from the pool). */
static void test_fused__packed_views(void) {
    vg_graph *g = vg_graph_new();
    enum { BIG = 20000, ODD = 13 };
    float *big = malloc(BIG * sizeof(float)), odd[ODD];
    for (int i = 0; i < BIG; i++) big[i] = (float)(i % 1000) + (float)R;
    for (int i = 0; i < ODD; i++) odd[i] = (float)i * (float)(R + 1);
    vg_output xs[3] = {vg_const_array(g, VG_FLOAT, (int64_t[]){ODD}, 1, odd, "odd"),
                       vg_const_array(g, VG_FLOAT, (int64_t[]){200, 100}, 2, big, "big"),
                       vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, odd + 1, "one")};
    vg_op *op = vg_dist_fused_allreduce(g, xs, 3, true, "fused");
    int32_t iv[5] = {10 * R, 1, 2, 3, 7};
    vg_output xi = vg_const_array(g, VG_INT32, (int64_t[]){5}, 1, iv, "ints");
    vg_op *opi = vg_dist_fused_allreduce(g, &xi, 1, true, "fused_int"); /* integer mean: divided after */
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output f[4] = {vg_out(op, 0), vg_out(op, 1), vg_out(op, 2), vg_out(opi, 0)};
    vg_tensor *first[4] = {0}, *second[4] = {0};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, first, 4, NULL, 0, NULL, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, second, 4, NULL, 0, NULL, &st), &st);
    double rmean = (N - 1) / 2.0, kmean = (N + 1) / 2.0; /* mean of r, mean of r + 1 */
    vg_tensor **runs[2] = {first, second};
    for (int k = 0; k < 2; k++) {
        vg_tensor **o = runs[k];
        if (!o[0] || !o[1] || !o[2] || !o[3]) break;
        CHECK_EQ_INT(vg_tensor_num_elements(o[0]), ODD);
        CHECK_EQ_INT(vg_tensor_num_elements(o[1]), BIG);
        for (int i = 0; i < ODD; i++) CHECK_NEAR(((float *)vg_tensor_data(o[0]))[i], i * kmean, 1e-5);
        int bad = 0;
        for (int i = 0; i < BIG; i++) bad += fabs(((float *)vg_tensor_data(o[1]))[i] - ((i % 1000) + rmean)) > 1e-4;
        CHECK_EQ_INT(bad, 0);
        CHECK_NEAR(((float *)vg_tensor_data(o[2]))[0], kmean, 1e-6);
        CHECK_EQ_INT(((int32_t *)vg_tensor_data(o[3]))[0], (int32_t)(10 * N * (N - 1) / 2 / N));
        CHECK_EQ_INT(((int32_t *)vg_tensor_data(o[3]))[4], 7);
    }
    for (int i = 0; i < 4; i++) {
        vg_tensor_free(first[i]);
        vg_tensor_free(second[i]);
    }
    free(big);
    free_session_graph(s, g);
}

/* A collective blocked on a peer returns CANCELLED when its session closes. */
static void test_cancel__on_close(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output o = vg_collective_reduce(g, vg_const_f32(g, 1, "x"), N, 1, 9, "Add", "Id", "r");
    vg_session *s = vg_session_new(g, NULL, &st);
    if (N >= 2 && R == 0) {
        dist_fx_bg r;
        vg_tensor *t = NULL;
        dist_fx_bg_start(&r, s, &o, &t, 1);
        usleep(300 * 1000); /* rank 1 has not joined: the collective waits */
        vg_session_close(s, &st);
        CHECK_CODE(dist_fx_bg_join(&r), VG_CANCELLED);
        vg_tensor_free(t);
    } else {
        vg_session_close(s, &st);
    }
    /* after close: CANCELLED (closed session) at once, on every rank */
    vg_code rc = vg_session_run1(s, o, NULL, &st);
    CHECK(rc == VG_CANCELLED || rc == VG_FAILED_PRECONDITION);
    vg_session_free(s);
    /* rank 1 now joins the abandoned allreduce so that the world stays in step */
    if (N >= 2) {
        vg_graph *g2 = vg_graph_new();
        vg_output o2 = vg_collective_reduce(g2, vg_const_f32(g2, 1, "x"), N, 1, 9, "Add", "Id", "r");
        if (R != 0) {
            usleep(700 * 1000); /* after rank 0 gave up (300 ms) */
            vg_tensor *t = run1(g2, o2, VG_OK);
            vg_tensor_free(t);
        }
        vg_graph_free(g2);
        CHECK_OK(vg_dist_barrier(&st), &st);
    }
    vg_graph_free(g);
}

int main(void) {
    dist_fx_init(&R, &N);
    RUN_TEST(test_reduce__add_div_f32);
    RUN_TEST(test_reduce__other_types);
    RUN_TEST(test_reduce__bad_attrs);
    RUN_TEST(test_bcast__send_recv);
    RUN_TEST(test_hvd_broadcast__values_and_mismatch);
    RUN_TEST(test_gather__ragged);
    RUN_TEST(test_fused__many_tensors);
    RUN_TEST(test_fused__packed_views);
    RUN_TEST(test_cancel__on_close);
    return dist_fx_end();
}
