/* test_cli_mpi_timeout.c - the collective timeout (issue 33): the setter and
 * VIGIL_COLLECTIVE_TIMEOUT_MS in a world of one rank, then `mpiexec -np 2` of this
 * program where rank 1 stops participating (it sleeps instead of joining the
 * allreduce): rank 0 must fail with DEADLINE_EXCEEDED naming rank 1 and its host within
 * the timeout (1 s), later collectives must fail at once with UNAVAILABLE, and
 * vg_dist_finalize must return without hanging (MPI left unfinalized); rank 0 then exits
 * non-zero as `vigil train` does and mpiexec ends the job. No network namespaces
 * needed (scripts/multihost-faults.sh does the same across hosts). Skips without MPI
 * or mpiexec. */
#include "test_util.h"
#include "status_fixture.h"
#include "cli_mpi_fixture.h"
#include <vigil/vigil.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One rank of the mpiexec job. Rank 0 prints its findings on stdout. */
static int child(void) {
    vg_status st;
    if (vg_dist_init(&st) != VG_OK) {
        printf("init failed: %s\n", st.msg);
        return 2;
    }
    if (vg_dist_size() != 2) {
        printf("size %d\n", vg_dist_size());
        return 2;
    }
    float x = 1;
    if (vg_dist_allreduce(&x, 1, VG_FLOAT, VG_REDUCE_SUM, &st) != VG_OK || x != 2) { /* both alive: it works */
        printf("first allreduce: %s (x %g)\n", st.msg, (double)x);
        return 2;
    }
    if (vg_dist_rank() == 1) { /* stops participating: never joins the next collective */
        sleep(30);
        return 0;
    }
    char host[256] = "";
    gethostname(host, sizeof host);
    double t0 = now_s();
    vg_code c = vg_dist_allreduce(&x, 1, VG_FLOAT, VG_REDUCE_SUM, &st);
    double dt = now_s() - t0;
    printf("timeout code=%d elapsed=%.3f names_host=%d msg=%s\n", (int)c, dt, strstr(st.msg, host) != NULL, st.msg);
    t0 = now_s();
    c = vg_dist_barrier(&st);
    printf("after code=%d elapsed=%.3f\n", (int)c, now_s() - t0);
    t0 = now_s();
    vg_dist_finalize(&st);
    printf("finalize elapsed=%.3f\n", now_s() - t0);
    fflush(stdout);
    return 1; /* like `vigil train`: a failed rank exits non-zero, unfinalized */
}

static void test_timeout__setter_and_env(void) {
    CHECK_EQ_INT(vg_dist_collective_timeout_ms(), VG_DIST_COLLECTIVE_TIMEOUT_MS_DEFAULT);
    CHECK(VG_DIST_COLLECTIVE_TIMEOUT_MS_DEFAULT >= 60000); /* minutes: a chief may checkpoint meanwhile */
    vg_status st;
    setenv("VIGIL_COLLECTIVE_TIMEOUT_MS", "12x", 1);
    EXPECT_CODE_MSG(vg_dist_init(&st), &st, VG_INVALID_ARGUMENT, "VIGIL_COLLECTIVE_TIMEOUT_MS");
    setenv("VIGIL_COLLECTIVE_TIMEOUT_MS", "-5", 1);
    CHECK_CODE(vg_dist_init(&st), VG_INVALID_ARGUMENT);
    setenv("VIGIL_COLLECTIVE_TIMEOUT_MS", "2500", 1);
    CHECK_OK(vg_dist_init(&st), &st);
    CHECK_EQ_INT(vg_dist_collective_timeout_ms(), 2500);
    CHECK_CODE(vg_dist_set_collective_timeout_ms(-1, &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_dist_collective_timeout_ms(), 2500);
    CHECK_OK(vg_dist_set_collective_timeout_ms(0, &st), &st);
    CHECK_EQ_INT(vg_dist_collective_timeout_ms(), 0);
    float x = 3; /* one rank: the identity, no timeout involved */
    CHECK_OK(vg_dist_allreduce(&x, 1, VG_FLOAT, VG_REDUCE_SUM, &st), &st);
    CHECK(x == 3);
    CHECK_OK(vg_dist_finalize(&st), &st);
    unsetenv("VIGIL_COLLECTIVE_TIMEOUT_MS");
}

static void test_timeout__peer_stops_participating(void) {
    char dir[256];
    if (!tu_mkdtemp(dir, sizeof dir, "mpitmo")[0]) {
        CHECK(0);
        return;
    }
    char self[1024], out[512], err[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    if (n <= 0) return;
    self[n] = 0;
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        mpi_child_setup(out, err);
        setenv("VIGIL_COLLECTIVE_TIMEOUT_MS", "1000", 1);
        setenv("VIGIL_SHM", "0", 1); /* the MPI path, as across hosts */
        setenv("LSAN_OPTIONS", "detect_leaks=0", 1); /* ranks that exit unfinalized keep MPI's memory */
        execlp("mpiexec", "mpiexec", "-np", "2", self, "--child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    bool ended = false;
    while (now_s() - t0 < 120) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            ended = true;
            break;
        }
        usleep(20000);
    }
    double job = now_s() - t0;
    if (!ended) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    CHECK(ended); /* no rank hung: mpiexec ended the job */
    CHECK(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
    char text[4096] = "";
    FILE *f = fopen(out, "r");
    if (f) {
        size_t m = fread(text, 1, sizeof text - 1, f);
        text[m] = 0;
        fclose(f);
    }
    int code = -1, names_host = 0, code2 = -1;
    double el = -1, el2 = -1, elf = -1;
    const char *p = strstr(text, "timeout code=");
    if (p) sscanf(p, "timeout code=%d elapsed=%lf names_host=%d", &code, &el, &names_host);
    p = strstr(text, "after code=");
    if (p) sscanf(p, "after code=%d elapsed=%lf", &code2, &el2);
    p = strstr(text, "finalize elapsed=");
    if (p) sscanf(p, "finalize elapsed=%lf", &elf);
    CHECK_EQ_INT(code, VG_DEADLINE_EXCEEDED);
    CHECK(el >= 0.95 && el < 3.0); /* the 1 s timeout, with a loaded machine's slack */
    CHECK_STR_CONTAINS(text, "waiting on rank 1 (host ");
    CHECK_STR_CONTAINS(text, "collective timeout");
    CHECK_EQ_INT(names_host, 1);
    CHECK_EQ_INT(code2, VG_UNAVAILABLE); /* the world is broken: no second wait */
    CHECK(el2 >= 0 && el2 < 0.5);
    CHECK(elf >= 0 && elf < 0.5); /* finalize does not wait on the dead peer */
    CHECK(job < 60);
    if (vg_test_failures) fprintf(stderr, "rank 0 said:\n%s\n(kept %s)\n", text, dir);
    else tu_rmrf(dir);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--child")) return child();
    RUN_TEST(test_timeout__setter_and_env);
    if (!vg_dist_mpi_built()) {
        fprintf(stderr, "SKIP: vigil built without MPI (VIGIL_MPI): the 2-rank part\n");
        TEST_MAIN_END();
    }
    if (system("command -v mpiexec >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP: no mpiexec on PATH: the 2-rank part\n");
        TEST_MAIN_END();
    }
    RUN_TEST(test_timeout__peer_stops_participating);
    TEST_MAIN_END();
}
