/* cli_mpi_fixture.h - the child side of launching mpiexec from a test (tests/cli): shared
 * by test_cli_mpi.c and test_cli_mpi_timeout.c. */
#ifndef VG_CLI_MPI_FIXTURE_H
#define VG_CLI_MPI_FIXTURE_H
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Call in the forked child before exec'ing mpiexec: puts the child in a process group of
 * its own (so that the parent can kill the whole job), sends stdout to the file out and
 * stderr to the file err, and sets the Open MPI variables that let mpiexec run as root,
 * oversubscribe the machine's cores and avoid the single-copy transport. */
static inline void mpi_child_setup(const char *out, const char *err) {
    setpgid(0, 0);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fe, 2);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
}

#endif
