/* test_examples_horovod.c - examples/tf1/horovod_mnist (horovod/horovod
 * examples/tensorflow_mnist.py) as a single process (issue 11: "single process here";
 * issue 15: a world of one rank without mpirun), in every build, with or without MPI:
 * StopAtStepHook(last_step = steps // 1), the LoggingTensorHook's step/loss lines, the
 * chief's checkpoint, a falling loss. Without MPI built, a start under mpirun (its
 * environment variable) fails with a message naming the VIGIL_MPI build option. */
#include "test_util.h"
#include "example_test_util.h"
#include <vigil/vigil.h>
#include <stdbool.h>
#include <stdlib.h>
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 16];

static int run(const char *cmd) { return ex_run(cmd, out, sizeof out, 0, NULL); }


static void test_examples_horovod__single_process(void) {
    if (!ex_built(VG_BINDIR "/horovod_mnist")) return;
    char dir[64], cmd[1024];
    CHECK(tu_mkdtemp(dir, sizeof dir, "hvd_test")[0] != 0);
    /* no mpirun: the launcher's variables are cleared in case ctest itself runs under one */
    snprintf(cmd, sizeof cmd,
             "env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_SIZE -u PMI_RANK -u MPI_LOCALNRANKS " VG_BINDIR
             "/horovod_mnist --synthetic --steps 30 --checkpoint-dir %s/ck 2>&1",
             dir);
    CHECK_EQ_INT(run(cmd), 0);
    fputs(out, stderr);
    /* LoggingTensorHook({'step', 'loss'}, every_n_iter=10): steps 0, 10, 20 */
    int nlog = 0;
    double first = NAN;
    for (const char *s = out; (s = strstr(s, "loss = ")) != NULL; s += 7) {
        if (nlog++ == 0) first = atof(s + 7);
    }
    CHECK(nlog >= 3);
    CHECK(strstr(out, "step = 20") != NULL);
    const char *f = strstr(out, "final loss ");
    CHECK(f != NULL);
    double last = f ? atof(f + 11) : NAN;
    CHECK(isfinite(first) && isfinite(last));
    CHECK(last < first); /* RMSProp(0.001) on the synthetic bands learns in 30 steps */
    /* StopAtStepHook(last_step = 30 // size) with size 1: the final checkpoint is step 30 */
    snprintf(cmd, sizeof cmd, "test -f %s/ck/model.ckpt-30.index", dir);
    CHECK_EQ_INT(run(cmd), 0);
    if (!vg_dist_mpi_built()) {
        /* started "by mpirun" in a build without MPI: a clear error, no training */
        snprintf(cmd, sizeof cmd,
                 "OMPI_COMM_WORLD_SIZE=2 " VG_BINDIR "/horovod_mnist --synthetic --steps 4 --checkpoint-dir %s/ck2 2>&1",
                 dir);
        CHECK_EQ_INT(run(cmd), 1);
        CHECK_STR_CONTAINS(out, "VIGIL_MPI");
    }
    CHECK(tu_rmrf(dir) == 0);
}

int main(void) {
    RUN_TEST(test_examples_horovod__single_process);
    TEST_MAIN_END();
}
