/* cli_test_util.h - the CLI tests' one main() and their helpers: spawn the `vigil`
 * binary with its stdout/stderr redirected into files under tmpdir, wait with a timeout.
 *
 * A CLI test defines its cases and a suite, and ends with CLI_TEST_MAIN:
 *
 *     static const cli_case cases[] = {CLI_CASE(test_cli_x__one), CLI_CASE(test_cli_x__two)};
 *     static const cli_suite suite = {.tag = "cli_x", .needs_mnist = true, .setup = setup};
 *     CLI_TEST_MAIN(suite, cases)
 *
 * main() skips (exit 0) when build/vigil is missing, or Fashion-MNIST when needs_mnist,
 * or when suite.skip returns a reason; makes tmpdir (/tmp/vg_<tag>_XXXXXX); runs
 * suite.setup (non-zero: a failure, no cases run), the cases, suite.teardown; removes
 * tmpdir when every check passed and keeps it (saying where) otherwise. */
#ifndef VG_CLI_TEST_UTIL_H
#define VG_CLI_TEST_UTIL_H
#include "test_util.h"
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Debian's dataset-fashion-mnist */
#define CLI_MNIST_DIR "/usr/share/datasets/fashion-mnist"

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

typedef struct cli_case {
    void (*fn)(void);
    const char *name;
} cli_case;
#define CLI_CASE(fn) {fn, #fn}

typedef struct cli_suite {
    const char *tag;            /* tmpdir is /tmp/vg_<tag>_XXXXXX */
    bool needs_mnist;           /* SKIP without Fashion-MNIST in CLI_MNIST_DIR */
    const char *(*skip)(void);  /* a reason to skip, or NULL */
    int (*setup)(void);         /* after tmpdir is made; non-zero fails the test */
    void (*teardown)(void);     /* after the cases */
} cli_suite;

static inline int cli_main(const cli_suite *s, const cli_case *cases, size_t n) {
    snprintf(vigil, sizeof vigil, "%s/vigil", VG_BINDIR);
    if (access(vigil, X_OK) != 0) {
        fprintf(stderr, "SKIP: %s not built (configure with -DVIGIL_TOOLS=ON)\n", vigil);
        return 0;
    }
    if (s->needs_mnist && access(CLI_MNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0 &&
        access(CLI_MNIST_DIR "/train-images-idx3-ubyte", R_OK) != 0) {
        fprintf(stderr, "SKIP: Fashion-MNIST not installed in %s (Debian package dataset-fashion-mnist)\n",
                CLI_MNIST_DIR);
        return 0;
    }
    const char *why = s->skip ? s->skip() : NULL;
    if (why) {
        fprintf(stderr, "SKIP: %s\n", why);
        return 0;
    }
    if (!tu_mkdtemp(tmpdir, sizeof tmpdir, s->tag)[0]) {
        perror("mkdtemp");
        return 1;
    }
    if (s->setup && s->setup() != 0) {
        fprintf(stderr, "setup failed\n");
        vg_test_failures++;
    } else {
        for (size_t i = 0; i < n; i++) {
            int before = vg_test_failures;
            cases[i].fn();
            fprintf(stderr, "%s %s\n", vg_test_failures == before ? "ok  " : "FAIL", cases[i].name);
        }
    }
    if (s->teardown) s->teardown();
    if (!vg_test_failures) {
        if (tu_rmrf(tmpdir) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    } else {
        fprintf(stderr, "outputs kept in %s\n", tmpdir);
    }
    TEST_MAIN_END();
}
/* Prints the file `name` (in the test's directory) to stderr. */
static inline void dump(const char *name) { fprintf(stderr, "---- %s:\n%s\n----\n", name, slurp(name)); }

/* global_step of the latest checkpoint in dir, via `vigil ckpt --tensor`; -1 on error. */
static inline long long ckpt_step(const char *dir) {
    const char *args[] = {"ckpt", dir, "--tensor", "global_step", NULL};
    if (run_vigil(args, "ckpt.out", "ckpt.err") != 0) {
        dump("ckpt.err");
        return -1;
    }
    const char *s = slurp("ckpt.out");
    const char *nl = strchr(s, '\n'); /* skip the "# global_step int64 []" line */
    return nl ? atoll(nl + 1) : -1;
}

#define CLI_TEST_MAIN(suite, cases) \
    int main(void) { return cli_main(&(suite), (cases), sizeof(cases) / sizeof((cases)[0])); }
/* tmpdir/name into buf (cap bytes); returns buf. */
static inline char *cli_tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

#endif
