/* test_dist_shm.c - the fused allreduce on the shared-memory window (issue 15): ranks
 * of one node reduce through an MPI-3 shared segment instead of the ring. The slot is
 * set to 256 KB here (VIGIL_SHM_SLOT_BYTES before vg_dist_init), so one process checks
 * both paths: fusions that fit go through shared memory, larger ones through the ring,
 * and each result must equal MPI_Allreduce's (vg_dist_allreduce) of the same data,
 * float32 and float64, sum and mean, with empty and odd-sized tensors, several runs in
 * a row (the slot sets alternate); int32 falls back to MPI; fusions whose sizes differ
 * across ranks fail with INVALID_ARGUMENT on every rank and the ranks stay in step.
 * The plain (1-rank) run also starts mpiexec -np 2 on itself with --die: rank 1 kills
 * itself while rank 0 waits for it on the window, and the job must end within 10 s
 * with a non-zero status (rank 0's wait notices the dead pid and returns UNAVAILABLE
 * unless mpirun kills it first). (CANCELLED on close and DEADLINE_EXCEEDED with the
 * hand-over to the communication thread: test_dist_fused, whose fusions also take
 * this path.) Under mpirun -np 2 by
 * CTest; it passes under -np 3 and 4 as well. */
#include "mpi_self_util.h"
#include "dist_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int R, N;

static double val(int k, int64_t i, int r) { return sin(0.37 * (double)i + 1.3 * k + 0.71 * r) * (1.0 + k); }

/* float, double, or int32 (times 1000) */
static void *fill(vg_dtype dt, int k, int64_t n, int r) { return dist_fx_fill(dt, n, val, k, r, 1000); }

static double at(const void *p, vg_dtype dt, int64_t i) {
    if (dt == VG_FLOAT) return ((const float *)p)[i];
    if (dt == VG_DOUBLE) return ((const double *)p)[i];
    return ((const int32_t *)p)[i];
}

/* Tensors of sizes[0..n) fused (sum, then mean) three runs in a row vs
 * vg_dist_allreduce of each tensor's data (then / N for the mean). */
static void check_against_mpi(vg_dtype dt, const int64_t *sizes, int n) {
    vg_graph *g = vg_graph_new();
    vg_output xs[8];
    for (int k = 0; k < n; k++) {
        void *p = fill(dt, k, sizes[k], R);
        char name[16];
        snprintf(name, sizeof name, "x%d", k);
        xs[k] = vg_const_array(g, dt, (int64_t[]){sizes[k]}, 1, p, name);
        free(p);
    }
    vg_op *sum = vg_dist_fused_allreduce(g, xs, n, false, "sum");
    vg_op *mean = vg_dist_fused_allreduce(g, xs, n, true, "mean");
    vg_op_add_control_input(mean, sum);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, &(vg_session_options){.intra_op_threads = 1, .inter_op_threads = 1}, &st);
    vg_output f[16];
    for (int k = 0; k < n; k++) {
        f[k] = vg_out(sum, k);
        f[n + k] = vg_out(mean, k);
    }
    /* the reference: MPI_Allreduce of the same values */
    void *ref[8];
    for (int k = 0; k < n; k++) {
        ref[k] = fill(dt, k, sizes[k], R);
        CHECK_OK(vg_dist_allreduce(ref[k], sizes[k], dt, VG_REDUCE_SUM, &st), &st);
    }
    double tol = dt == VG_FLOAT ? 1e-6 : 1e-14; /* N > 2 may add in another order */
    for (int rep = 0; rep < 3; rep++) {
        vg_tensor *out[16] = {0};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, out, 2 * n, NULL, 0, NULL, &st), &st);
        for (int m = 0; m < 2 && out[0]; m++)
            for (int k = 0; k < n; k++) {
                const vg_tensor *t = out[m * n + k];
                CHECK_EQ_INT(vg_tensor_num_elements(t), sizes[k]);
                int64_t bad = 0, first = -1;
                for (int64_t i = 0; i < sizes[k]; i++) {
                    double w = at(ref[k], dt, i), got = at(vg_tensor_data(t), dt, i);
                    if (m == 1) w = dt == VG_INT32 ? (double)((int32_t)w / N) : w / N;
                    bool ok = dt == VG_INT32 ? got == w : fabs(got - w) <= tol * (1 + fabs(w)) * (N > 2 ? 4 : 1);
                    if (N <= 2 && dt != VG_INT32) ok = m == 0 ? got == w : fabs(got - w) <= tol * fabs(w);
                    if (!ok && first < 0) first = i;
                    bad += !ok;
                }
                if (bad)
                    fprintf(stderr, "%s %s tensor %d of %lld: %lld wrong, first [%lld] = %.9g, want %.9g\n",
                            vg_dtype_name(dt), m ? "mean" : "sum", k, (long long)sizes[k], (long long)bad,
                            (long long)first, at(vg_tensor_data(t), dt, first),
                            m ? at(ref[k], dt, first) / N : at(ref[k], dt, first));
                CHECK_EQ_INT(bad, 0);
            }
        for (int i = 0; i < 2 * n; i++) vg_tensor_free(out[i]);
    }
    for (int k = 0; k < n; k++) free(ref[k]);
    free_session_graph(s, g);
}

/* 124 KB in all: fits the 256 KB slot (shared memory) */
static void test_shm__f32_matches_mpi(void) {
    check_against_mpi(VG_FLOAT, (const int64_t[]){0, 1, 13, 17, 1000, 30001}, 6);
}
/* 160 KB of doubles: shared memory */
static void test_shm__f64_matches_mpi(void) { check_against_mpi(VG_DOUBLE, (const int64_t[]){0, 5, 20001}, 3); }
/* 280 KB: larger than the slot, the ring */
static void test_ring__f32_matches_mpi(void) { check_against_mpi(VG_FLOAT, (const int64_t[]){70001, 3}, 2); }
/* int32: MPI_Allreduce (no shared-memory path for integers) */
static void test_int32__falls_back(void) { check_against_mpi(VG_INT32, (const int64_t[]){5, 40001}, 2); }
/* one after the other, alternating paths (shared memory, ring, shared memory) */
static void test_mixed__in_order(void) {
    for (int i = 0; i < 2; i++) {
        check_against_mpi(VG_FLOAT, (const int64_t[]){30001}, 1);
        check_against_mpi(VG_FLOAT, (const int64_t[]){90001}, 1);
    }
}

/* Different fusion sizes across ranks (both fit the slot): INVALID_ARGUMENT everywhere,
 * then the ranks are still in step. */
static void test_shm__mismatched_sizes(void) {
    if (N < 2) return;
    vg_graph *g = vg_graph_new();
    int64_t n = 20000 + 10000 * (R % 2);
    void *p = fill(VG_FLOAT, 0, n, R);
    vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){n}, 1, p, "x");
    free(p);
    vg_op *op = vg_dist_fused_allreduce(g, &x, 1, false, "sum");
    vg_status st;
    vg_session *s = vg_session_new(g, &(vg_session_options){.intra_op_threads = 1, .inter_op_threads = 1}, &st);
    vg_tensor *out = NULL;
    vg_output f = vg_out(op, 0);
    EXPECT_CODE_MSG(vg_session_run(s, NULL, NULL, NULL, 0, &f, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
                    "graphs built the same");
    vg_tensor_free(out);
    free_session_graph(s, g);
    int64_t v = 1;
    CHECK_OK(vg_dist_allreduce(&v, 1, VG_INT64, VG_REDUCE_SUM, &st), &st);
    CHECK_EQ_INT(v, N);
    check_against_mpi(VG_FLOAT, (const int64_t[]){30001}, 1);
}

/* --die (under mpirun -np 2): rank 1 SIGKILLs itself while rank 0 waits for it in a
 * shared-memory allreduce; rank 0 prints what its wait returned (the pid check:
 * UNAVAILABLE), unless mpirun killed it first. */
static int die_child(void) {
    vg_status st;
    if (vg_dist_init(&st) != VG_OK || vg_dist_size() != 2) return 2;
    R = vg_dist_rank();
    N = 2;
    vg_graph *g = vg_graph_new();
    void *p = fill(VG_FLOAT, 0, 30001, R);
    vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){30001}, 1, p, "x");
    free(p);
    vg_op *op = vg_dist_fused_allreduce(g, &x, 1, false, "sum");
    vg_session *s = vg_session_new(g, &(vg_session_options){.intra_op_threads = 1, .inter_op_threads = 1}, &st);
    vg_output f = vg_out(op, 0);
    vg_tensor *out = NULL;
    if (vg_session_run(s, NULL, NULL, NULL, 0, &f, &out, 1, NULL, 0, NULL, &st) != VG_OK) return 4; /* both alive */
    vg_tensor_free(out);
    out = NULL;
    if (R == 1) {
        usleep(200 * 1000);
        raise(SIGKILL);
    }
    vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, &f, &out, 1, NULL, 0, NULL, &st);
    printf("dead-peer: code %d: %s\n", (int)rc, st.msg);
    fflush(stdout);
    _exit(3);
}

/* A rank that dies while its peer waits on the shared window: the job ends within 10 s
 * with a non-zero status (the plain, 1-rank run starts mpiexec -np 2 on itself). */
static void test_dead_peer__job_ends(void) {
    char buf[512];
    if (!dist_fx_dying_job("dead peer", 30, 10.0, buf, sizeof buf)) return;
    if (strstr(buf, "dead-peer: code")) CHECK_STR_CONTAINS(buf, "a peer rank is gone");
}

int main(int argc, char **argv) {
    setenv("VIGIL_SHM_SLOT_BYTES", "262144", 1);
    if (argc > 1 && strcmp(argv[1], "--die") == 0) return die_child();
    dist_fx_init(&R, &N);
    RUN_TEST(test_shm__f32_matches_mpi);
    RUN_TEST(test_shm__f64_matches_mpi);
    RUN_TEST(test_ring__f32_matches_mpi);
    RUN_TEST(test_int32__falls_back);
    RUN_TEST(test_mixed__in_order);
    RUN_TEST(test_shm__mismatched_sizes);
    RUN_TEST(test_dead_peer__job_ends);
    return dist_fx_end();
}
