/* mpi_self_util.h - a test that starts `mpiexec -np N` on its own executable (a rank
 * that dies or stalls on purpose, whose job must still end): runs it with `arg`, bounds
 * it by timeout_s (the whole process group is killed past it), and returns mpiexec's
 * exit status (128 + signal if killed; -1 past the timeout; 127: no mpiexec on the PATH
 * or no /proc/self/exe), rank output (stdout) in out and the wall time in *took. */
#ifndef VG_MPI_SELF_UTIL_H
#define VG_MPI_SELF_UTIL_H
#include "test_util.h"
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int tu_mpiexec_self(int np, const char *arg, double timeout_s, char *out, size_t outlen, double *took) {
    char self[4096], npbuf[16];
    out[0] = 0;
    *took = 0;
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return 127;
    self[len] = 0;
    snprintf(npbuf, sizeof npbuf, "%d", np);
    char path[] = "/tmp/vg_mpiexec_self_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 127;
    double t0 = tu_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fd, 1);
        int fe = open("/dev/null", O_WRONLY);
        dup2(fe, 2);
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
        setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
        execlp("mpiexec", "mpiexec", "-np", npbuf, self, arg, (char *)NULL);
        _exit(127);
    }
    close(fd);
    int status = 0, rc = -1;
    while (tu_now_s() - t0 < timeout_s) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        usleep(10000);
    }
    *took = tu_now_s() - t0;
    if (rc < 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(out, 1, outlen - 1, f);
        out[n] = 0;
        fclose(f);
    }
    unlink(path);
    return rc;
}
#endif
