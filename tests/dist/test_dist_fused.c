/* test_dist_fused.c - the fused allreduce's paths (issue 15): the ring for sums and
 * means of float32/float64 (straight from the inputs, tensors split across the ring's
 * chunks, empty and odd-sized ones, the mean folded into the last add), the packed /
 * out-of-place path of the other types, and MPI called from the waiting thread with
 * the hand-over to the communication thread: a collective that times out or is
 * cancelled still completes there, in order, so the ranks stay in step and the next
 * collectives give the right sums. Each runs in a single-threaded session (the run's
 * thread makes the MPI calls) and in one with an inter-op helper (the communication
 * thread makes them). CTest runs it alone (1 rank) and under
 * mpirun -np 2; it passes under -np 3 and 4 as well. Every value is computed from the
 * rank and the world's size (sums of multiples of 0.25: exact in float). */
#include "dist_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int R, N; /* rank, size */

/* {intra, inter}: a single-threaded session and one with a helper thread */
static const vg_session_options configs[2] = {{.intra_op_threads = 1, .inter_op_threads = 1},
                                              {.intra_op_threads = 1, .inter_op_threads = 2}};

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* element i of tensor k on rank r */
static double val(int k, int64_t i, int r) { return (double)((k * 7 + i) % 101) * 0.25 + r; }

/* sum over ranks of val(k, i, r), or the mean */
static double want(int k, int64_t i, bool mean) {
    double s = N * ((double)((k * 7 + i) % 101) * 0.25) + N * (N - 1) / 2.0;
    return mean ? s / N : s;
}

/* Tensors of these element counts: empty, one, odd, a cache line, more than 64 KB, and
 * one of 1 MB whose elements the ring's chunks split. */
static const int64_t sizes[] = {1, 0, 13, 16, 17, 100, 16387, 250001};
enum { NT = sizeof sizes / sizeof sizes[0] };

static vg_output make_const(vg_graph *g, vg_dtype dt, int k, int64_t n) {
    void *p = dist_fx_fill(dt, n, val, k, R, 4);
    char name[32];
    snprintf(name, sizeof name, "x%d", k);
    vg_output o = vg_const_array(g, dt, (int64_t[]){n}, 1, p, name);
    free(p);
    return o;
}

static double elem(const vg_tensor *t, int64_t i) {
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: return ((const float *)vg_tensor_data(t))[i];
    case VG_DOUBLE: return ((const double *)vg_tensor_data(t))[i];
    case VG_INT32: return ((const int32_t *)vg_tensor_data(t))[i];
    default: return (double)((const int64_t *)vg_tensor_data(t))[i];
    }
}

/* All sizes through one VigilFusedAllreduce, sum and mean, each run twice (the fusion
 * buffer comes back from the pool), every element checked. */
static void check_fused_in(vg_dtype dt, const vg_session_options *so) {
    vg_graph *g = vg_graph_new();
    vg_output xs[NT];
    for (int k = 0; k < NT; k++) xs[k] = make_const(g, dt, k, sizes[k]);
    vg_op *sum = vg_dist_fused_allreduce(g, xs, NT, false, "sum");
    vg_op *mean = vg_dist_fused_allreduce(g, xs, NT, true, "mean");
    vg_op_add_control_input(mean, sum); /* the same order on every rank */
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, so, &st);
    vg_output f[2 * NT];
    for (int k = 0; k < NT; k++) {
        f[k] = vg_out(sum, k);
        f[NT + k] = vg_out(mean, k);
    }
    bool integer = dt == VG_INT32 || dt == VG_INT64;
    for (int rep = 0; rep < 2; rep++) {
        vg_tensor *out[2 * NT] = {0};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, out, 2 * NT, NULL, 0, NULL, &st), &st);
        for (int m = 0; m < 2 && out[0]; m++)
            for (int k = 0; k < NT; k++) {
                const vg_tensor *t = out[m * NT + k];
                CHECK_EQ_INT(vg_tensor_dtype(t), dt);
                CHECK_EQ_INT(vg_tensor_num_elements(t), sizes[k]);
                int64_t bad = 0, first = -1;
                for (int64_t i = 0; i < sizes[k]; i++) {
                    double w = integer ? want(k, i, false) * 4 : want(k, i, m == 1);
                    if (integer && m == 1) w = (double)((int64_t)w / N); /* integer mean: truncated */
                    if (elem(t, i) != w && first < 0) first = i;
                    bad += elem(t, i) != w;
                }
                if (bad)
                    fprintf(stderr, "%s %s tensor %d: %lld wrong, first [%lld] = %g, want %g\n", vg_dtype_name(dt),
                            m ? "mean" : "sum", k, (long long)bad, (long long)first, elem(t, first),
                            integer ? want(k, first, false) * 4 : want(k, first, m == 1));
                CHECK_EQ_INT(bad, 0);
            }
        for (int i = 0; i < 2 * NT; i++) vg_tensor_free(out[i]);
    }
    free_session_graph(s, g);
}

static void check_fused(vg_dtype dt) {
    for (int c = 0; c < 2; c++) check_fused_in(dt, &configs[c]);
}

static void test_fused__ring_f32(void) { check_fused(VG_FLOAT); }
static void test_fused__ring_f64(void) { check_fused(VG_DOUBLE); }
static void test_fused__packed_int32(void) { check_fused(VG_INT32); }
static void test_fused__packed_int64(void) { check_fused(VG_INT64); }

/* A single tensor through CollectiveReduce with Max (not the ring: MPI_Allreduce out of
 * place from the input). */
static void test_reduce__max_direct(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = make_const(g, VG_FLOAT, 3, 30000);
    vg_output o = vg_collective_reduce(g, x, 0, 1, 1, "Max", "Id", "max");
    vg_status st;
    vg_session *s = vg_session_new(g, &configs[0], &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, o, &t, &st), &st);
    if (t) {
        int bad = 0;
        for (int64_t i = 0; i < 30000; i++) bad += elem(t, i) != val(3, i, N - 1);
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(t);
    }
    free_session_graph(s, g);
}

/* A fused allreduce (a mean when mean, else a sum) of two tensors of make_const: k[t]
 * with n[t] elements. */
typedef struct {
    int k[2];
    int64_t n[2];
    bool mean;
} fused2_case;

/* A session s (options so) on a new graph g holding c's fused allreduce, whose two
 * outputs are f; out for their values. fused2_close frees it all. */
typedef struct {
    vg_graph *g;
    vg_session *s;
    vg_output f[2];
    vg_tensor *out[2];
} fused2_run;
static fused2_run fused2_open(const fused2_case *c, const vg_session_options *so) {
    fused2_run r = {vg_graph_new(), NULL, {{0}}, {NULL, NULL}};
    vg_output xs[2] = {make_const(r.g, VG_FLOAT, c->k[0], c->n[0]), make_const(r.g, VG_FLOAT, c->k[1], c->n[1])};
    vg_op *op = vg_dist_fused_allreduce(r.g, xs, 2, c->mean, c->mean ? "mean" : "sum");
    vg_status st;
    r.s = vg_session_new(r.g, so, &st);
    r.f[0] = vg_out(op, 0);
    r.f[1] = vg_out(op, 1);
    return r;
}
static void fused2_close(fused2_run *r) {
    for (int i = 0; i < 2; i++) vg_tensor_free(r->out[i]);
    vg_session_free(r->s);
    vg_graph_free(r->g);
}

/* A late rank's run of c, after sleeping ms milliseconds: the right sums (means rounded
 * to float). */
static void fused2_late_run(const fused2_case *c, fused2_run *r, int ms) {
    vg_status st;
    vg_tensor **out = r->out;
    usleep(ms * 1000);
    CHECK_OK(vg_session_run(r->s, NULL, NULL, NULL, 0, r->f, out, 2, NULL, 0, NULL, &st), &st);
    if (!out[0] || !out[1]) return;
    int bad = 0;
    for (int t = 0; t < 2; t++)
        for (int64_t i = 0; i < c->n[t]; i++)
            bad += c->mean ? elem(out[t], i) != (float)want(c->k[t], i, true) : elem(out[t], i) != want(c->k[t], i, false);
    CHECK_EQ_INT(bad, 0);
}

/* Rank 0 gives up on a fused allreduce (run timeout 100 ms) that the other ranks join
 * 1000 ms later (the margin lets a loaded CI machine schedule rank 0 late): DEADLINE_EXCEEDED, and the request finishes on the communication
 * thread. Rank 0's next collective (a host allreduce) queues behind it: both ranks then
 * get the right sums, and the late ranks' fused results are right (rank 0's inputs
 * outlived its run). */
static void timeout_in(const vg_session_options *so) {
    static const fused2_case c = {{0, 1}, {250001, 17}, false};
    fused2_run x = fused2_open(&c, so);
    vg_status st;
    if (R == 0) {
        vg_run_options ro = {0};
        ro.timeout_in_ms = 100;
        int64_t t0 = now_us();
        CHECK_CODE(vg_session_run(x.s, &ro, NULL, NULL, 0, x.f, x.out, 2, NULL, 0, NULL, &st), VG_DEADLINE_EXCEEDED);
        CHECK(now_us() - t0 < 900000); /* gave up before the others came */
    } else {
        fused2_late_run(&c, &x, 1000);
    }
    fused2_close(&x);
    double v[3] = {1, R, 0.5};
    CHECK_OK(vg_dist_allreduce(v, 3, VG_DOUBLE, VG_REDUCE_SUM, &st), &st);
    CHECK_NEAR(v[0], N, 0);
    CHECK_NEAR(v[1], N * (N - 1) / 2.0, 0);
    CHECK_NEAR(v[2], 0.5 * N, 0);
}

static void test_timeout__hand_over_keeps_order(void) {
    if (N < 2) return;
    for (int c = 0; c < 2; c++) timeout_in(&configs[c]);
}

/* A fused allreduce blocked on a late peer returns CANCELLED when its session closes,
 * on the run's own thread (single-threaded session: the Ibarrier wait sees the close)
 * and through the communication thread; the late rank's sums are still right. */
static void close_in(const vg_session_options *so) {
    static const fused2_case c = {{4, 5}, {100000, 3}, true};
    fused2_run x = fused2_open(&c, so);
    vg_status st;
    if (R == 0) {
        dist_fx_bg r;
        dist_fx_bg_start(&r, x.s, x.f, x.out, 2);
        usleep(200 * 1000); /* the others have not joined */
        int64_t t0 = now_us();
        vg_session_close(x.s, &st);
        CHECK_CODE(dist_fx_bg_join(&r), VG_CANCELLED);
        CHECK(now_us() - t0 < 150000); /* at once, not when the others come */
    } else {
        fused2_late_run(&c, &x, 500);
    }
    fused2_close(&x);
    CHECK_OK(vg_dist_barrier(&st), &st); /* still in step */
}

static void test_cancel__close_while_waiting(void) {
    if (N < 2) return;
    for (int c = 0; c < 2; c++) close_in(&configs[c]);
}

/* Host collectives (no session: MPI on the caller, no barrier first) in a row,
 * mixed with a graph collective; then from two threads in turn, handing over the
 * world from one thread to the other. */
typedef struct {
    double v;
    vg_code rc;
} host_arg;
static void *host_thread(void *p) {
    host_arg *a = p;
    vg_status st;
    a->rc = vg_dist_allreduce(&a->v, 1, VG_DOUBLE, VG_REDUCE_SUM, &st);
    return NULL;
}

static void test_host__caller_thread(void) {
    vg_status st;
    for (int i = 0; i < 50; i++) {
        int64_t x = R + i;
        CHECK_OK(vg_dist_allreduce(&x, 1, VG_INT64, VG_REDUCE_SUM, &st), &st);
        CHECK_EQ_INT(x, N * (N - 1) / 2 + N * i);
        float b[4] = {(float)R, (float)R, (float)R, (float)i};
        CHECK_OK(vg_dist_broadcast(b, sizeof b, i % N, &st), &st);
        CHECK_EQ_INT((int)b[0], i % N);
        CHECK_EQ_INT((int)b[3], i);
    }
    CHECK_OK(vg_dist_barrier(&st), &st);
    host_arg a = {1.0 + R, VG_INTERNAL};
    pthread_t th;
    pthread_create(&th, NULL, host_thread, &a);
    pthread_join(th, NULL);
    CHECK_CODE(a.rc, VG_OK);
    CHECK_NEAR(a.v, N + N * (N - 1) / 2.0, 0);
}

int main(void) {
    dist_fx_init(&R, &N);
    RUN_TEST(test_fused__ring_f32);
    RUN_TEST(test_fused__ring_f64);
    RUN_TEST(test_fused__packed_int32);
    RUN_TEST(test_fused__packed_int64);
    RUN_TEST(test_reduce__max_direct);
    RUN_TEST(test_timeout__hand_over_keeps_order);
    RUN_TEST(test_cancel__close_while_waiting);
    RUN_TEST(test_host__caller_thread);
    return dist_fx_end();
}
