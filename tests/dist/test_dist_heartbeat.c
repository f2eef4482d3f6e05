/* test_dist_heartbeat.c - heartbeats between the ranks (issue 33; vigil/distributed.h,
 * src/dist/heartbeat.c). CTest runs it alone (a 1-rank world: no heartbeats; the
 * setter's errors), under mpiexec -np 2 (the default case) and under mpiexec -np 2 with
 * VIGIL_TEST_HB_CASE=silent.
 *
 * default: a collective timeout of 1 s and a heartbeat timeout of 1.5 s. After an
 *   allreduce, rank 0 works alone for 3 s (a chief writing its last checkpoint or
 *   evaluating) before it finalizes. Rank 1 waits in vg_dist_finalize's final barrier
 *   all that time, well past the collective timeout, and must finish OK: rank 0 still
 *   beats. (Before heartbeats the final barrier failed with DEADLINE_EXCEEDED after
 *   the collective timeout and a healthy job ended with an error.)
 * silent: rank 1 stops itself (SIGSTOP: alive, holding its sockets, silent, as a host
 *   whose link is cut looks from the other side) after the allreduce. Rank 0's next
 *   allreduce must fail with UNAVAILABLE naming rank 1 within a few seconds (heartbeat
 *   timeout 1.5 s; the collective timeout is 60 s, so only the heartbeats can end it).
 *   Rank 0 then kills rank 1 and exits non-zero (MPI was not finalized): CTest checks
 *   the line it prints. */
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double wall_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(void) {
    vg_status st;
    const char *c = getenv("VIGIL_TEST_HB_CASE");
    bool silent = c && strcmp(c, "silent") == 0;
    CHECK_CODE(vg_dist_set_heartbeat_timeout_ms(-1, &st), VG_INVALID_ARGUMENT);
    CHECK_OK(vg_dist_set_heartbeat_timeout_ms(1500, &st), &st);
    CHECK_OK(vg_dist_set_collective_timeout_ms(silent ? 60000 : 1000, &st), &st);
    CHECK_OK(vg_dist_init(&st), &st);
    CHECK_CODE(vg_dist_set_heartbeat_timeout_ms(1000, &st), VG_FAILED_PRECONDITION);
    int rank = vg_dist_rank(), size = vg_dist_size();
    CHECK(vg_dist_heartbeats_on() == (size > 1));
    int64_t pids[2] = {getpid(), 0};
    if (size > 1) {
        /* every rank's pid (all on one host here), for rank 0 to end a stopped rank 1 */
        int64_t all[64] = {0};
        all[rank] = getpid();
        CHECK_OK(vg_dist_allreduce(all, size < 64 ? size : 64, VG_INT64, VG_REDUCE_SUM, &st), &st);
        pids[0] = all[0], pids[1] = all[1];
    }
    float x[4] = {1, 2, 3, (float)rank};
    CHECK_OK(vg_dist_allreduce(x, 4, VG_FLOAT, VG_REDUCE_SUM, &st), &st);
    CHECK_NEAR(x[0], size, 0);
    if (size > 1 && silent) {
        if (rank == 1) {
            raise(SIGSTOP); /* rank 0 kills it from here */
            sleep_ms(60000);
            return 1;
        }
        sleep_ms(200); /* rank 1 is stopped by now */
        double t0 = wall_secs();
        vg_code rc = vg_dist_allreduce(x, 4, VG_FLOAT, VG_REDUCE_SUM, &st);
        double took = wall_secs() - t0;
        fprintf(stderr, "rank 0: allreduce with a silent rank 1 ended after %.2f s: %s: %s\n", took, vg_code_name(rc),
                st.msg);
        EXPECT_CODE_MSG(rc, &st, VG_UNAVAILABLE, "no heartbeat from rank 1");
        CHECK(took >= 1.0 && took < 10.0);
        /* the world is broken: later collectives fail at once, finalize leaves MPI */
        CHECK_CODE(vg_dist_allreduce(x, 4, VG_FLOAT, VG_REDUCE_SUM, &st), VG_UNAVAILABLE);
        kill((pid_t)pids[1], SIGKILL);
        if (vg_test_failures == 0) printf("HEARTBEAT_SILENT_NAMED after %.2f s\n", took);
        fflush(stdout);
        _exit(vg_test_failures ? 1 : 3); /* MPI was not finalized: not 0, and mpiexec reports it */
    }
    if (size > 1 && rank == 0) sleep_ms(3000); /* the chief's last work, > the collective timeout */
    double t0 = wall_secs();
    vg_code rc = vg_dist_finalize(&st);
    double took = wall_secs() - t0;
    fprintf(stderr, "rank %d of %d: vg_dist_finalize after %.2f s: %s %s\n", rank, size, took, vg_code_name(rc),
            rc ? st.msg : "");
    CHECK_OK(rc, &st);
    if (size > 1 && rank == 1) CHECK(took >= 2.0); /* it waited for rank 0 */
    TEST_MAIN_END();
}
