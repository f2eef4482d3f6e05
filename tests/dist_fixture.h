/* dist_fixture.h - what the tests of tests/dist share: joining and leaving the world in
 * main, and the plain (1-rank) run that starts `mpiexec -np 2` on itself with a rank that
 * dies on purpose. */
#ifndef VG_DIST_FIXTURE_H
#define VG_DIST_FIXTURE_H
#include "mpi_self_util.h"
#include "test_util.h"
#include <vigil/vigil.h>
#include <stdbool.h>
#include <stdlib.h>

/* Joins the world (vg_dist_init; a failure is a failed check) and sets *rank and *size. */
static inline void dist_fx_init(int *rank, int *size) {
    vg_status st;
    CHECK_OK(vg_dist_init(&st), &st);
    *rank = vg_dist_rank();
    *size = vg_dist_size();
}

/* Leaves the world (vg_dist_finalize; a failure is a failed check) and returns main's
 * exit status: 1 when a check failed, else 0. */
static inline int dist_fx_end(void) {
    vg_status st;
    CHECK_OK(vg_dist_finalize(&st), &st);
    TEST_MAIN_END();
}

/* The plain (1-rank) run of a test whose job has a rank that dies: runs `mpiexec -np 2`
 * on this executable with --die (killed past timeout_s), reports it as `what`, and checks
 * that the job ended with a non-zero status within within_s seconds. Rank output lands in
 * out. Returns false (nothing run, nothing checked) under mpiexec already, in a build
 * without MPI, or with no mpiexec on the PATH. */
static bool dist_fx_dying_job(const char *what, double timeout_s, double within_s, char *out, size_t outlen) {
    out[0] = 0;
    if (vg_dist_size() != 1 || !vg_dist_mpi_built() || getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE"))
        return false;
    double took = 0;
    int rc = tu_mpiexec_self(2, "--die", timeout_s, out, outlen, &took);
    if (rc == 127) return false; /* no mpiexec on the PATH */
    fprintf(stderr, "%s: mpiexec status %d after %.2f s; %s\n", what, rc, took,
            out[0] ? out : "(killed by mpirun first)\n");
    CHECK(rc > 0);
    CHECK(took < within_s);
    return true;
}
#endif
