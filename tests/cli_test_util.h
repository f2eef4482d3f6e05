/* cli_test_util.h - running the `vigil` binary from the CLI tests: spawn it with its
 * stdout/stderr redirected into files under tmpdir, wait with a timeout. */
#ifndef VG_CLI_TEST_UTIL_H
#define VG_CLI_TEST_UTIL_H
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static char vigil[1024], tmpdir[256];

/* Starts vigil with args (NULL-terminated); returns the child's pid (-1 on failure). */
/* Reads tmpdir/name into buf (at most cap - 1 bytes, NUL-terminated; "" when missing). */
static inline const char *read_into(const char *name, char *buf, size_t cap) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}
/* tmpdir/name in a static 1 MiB buffer (valid until the next call). */
static inline const char *slurp(const char *name) {
    static char buf[1 << 20];
    return read_into(name, buf, sizeof buf);
}

static pid_t spawn_vigil(const char *const *args, const char *out_name, const char *err_name) {
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/%s", tmpdir, out_name);
    snprintf(err, sizeof err, "%s/%s", tmpdir, err_name);
    const char *argv[64];
    int n = 0;
    argv[n++] = vigil;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(vigil, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Waits up to timeout_s; returns the exit status, 128+signal when killed, -1 on
 * timeout (the child is then killed). */
static int wait_vigil(pid_t pid, double timeout_s) {
    int status;
    for (double t = 0; t < timeout_s; t += 0.02) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Runs vigil to completion (at most 300 s); returns its exit status as wait_vigil. */
static int run_vigil(const char *const *args, const char *out_name, const char *err_name) {
    pid_t pid = spawn_vigil(args, out_name, err_name);
    return pid < 0 ? -1 : wait_vigil(pid, 300);
}
#endif
