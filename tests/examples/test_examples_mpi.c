/* test_examples_mpi.c - the distributed TF1 ports (issue 15) under `mpiexec -np 2`:
 * horovod/horovod examples/tensorflow_mnist.py (horovod_mnist: DistributedOptimizer,
 * BroadcastGlobalVariablesHook, checkpoints on rank 0 only) and tensorflow/ecosystem
 * docker/mnist.py's ps/worker form (ecosystem_mnist: ClusterSpec, Server, two
 * worker ranks, the ps task a no-op). Skips when MPI, mpiexec or the examples are
 * missing. */
#include "test_util.h"
#include <vigil/vigil.h>
#include <sys/wait.h>

static char tmpdir[256];

/* Runs cmd (a shell line) with Open MPI's root/oversubscribe switches; returns the
 * exit status, the number of "final loss" lines and the last value. */
static int run(const char *cmd, int *nloss, double *loss) {
    char full[2048];
    snprintf(full, sizeof full,
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
             "OMPI_MCA_btl_vader_single_copy_mechanism=none %s 2>&1",
             cmd);
    *nloss = 0;
    *loss = NAN;
    FILE *f = popen(full, "r");
    if (!f) return -1;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "INFO:", 5) != 0) fputs(line, stderr);
        double v;
        if (sscanf(line, "final loss %lf", &v) == 1) {
            *loss = v;
            (*nloss)++;
        }
    }
    int status = pclose(f);
    return status == -1 || !WIFEXITED(status) ? -1 : WEXITSTATUS(status);
}

static bool have(const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", VG_BINDIR, name);
    if (access(p, X_OK) == 0) return true;
    fprintf(stderr, "SKIP: %s not built (VIGIL_EXAMPLES)\n", p);
    return false;
}

static void test_examples_mpi__ecosystem_ps_worker(void) {
    if (!have("ecosystem_mnist")) return;
    int n;
    double loss;
    int rc = run("mpiexec -np 2 " VG_BINDIR "/ecosystem_mnist --job_name worker --ps_hosts localhost:2222 "
                 "--worker_hosts localhost:2223,localhost:2224",
                 &n, &loss);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(n, 1); /* the chief reports */
    CHECK(loss < 0.5);
    /* the ps task: Server.join() returns at once */
    rc = run(VG_BINDIR "/ecosystem_mnist --job_name ps --task_index 0 --ps_hosts localhost:2222 "
             "--worker_hosts localhost:2223",
             &n, &loss);
    CHECK_EQ_INT(rc, 0);
    /* a cluster of 3 workers on 2 ranks is refused on every rank, naming the mismatch */
    rc = run("mpiexec -np 2 " VG_BINDIR "/ecosystem_mnist --job_name worker --ps_hosts localhost:2222 "
             "--worker_hosts a:1,b:1,c:1 2>&1 | grep -c 'the MPI world has 2 rank' | grep -qx 2",
             &n, &loss);
    CHECK_EQ_INT(rc, 0);
}

static void test_examples_mpi__horovod_mnist(void) {
    if (!have("horovod_mnist")) return;
    char cmd[1024], ck[300];
    snprintf(ck, sizeof ck, "%s/hvd", tmpdir);
    snprintf(cmd, sizeof cmd, "mpiexec -np 2 %s/horovod_mnist --synthetic --steps 16 --checkpoint-dir %s", VG_BINDIR,
             ck);
    int n;
    double loss;
    int rc = run(cmd, &n, &loss);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(n, 1);
    CHECK(loss > 0 && loss < 2.6);
    /* StopAtStepHook(last_step = 16 // size): the chief's final checkpoint is step 8 */
    char p[400];
    snprintf(p, sizeof p, "%s/model.ckpt-8.index", ck);
    CHECK(access(p, R_OK) == 0);
}

int main(void) {
    if (!vg_dist_mpi_built() || system("command -v mpiexec >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP: vigil built without MPI, or no mpiexec\n");
        return 0;
    }
    if (!tu_mkdtemp(tmpdir, sizeof tmpdir, "exmpi")[0]) return 1;
    RUN_TEST(test_examples_mpi__ecosystem_ps_worker);
    RUN_TEST(test_examples_mpi__horovod_mnist);
    if (!vg_test_failures) tu_rmrf(tmpdir);
    TEST_MAIN_END();
}
