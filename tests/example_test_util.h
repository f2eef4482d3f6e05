/* example_test_util.h - running the example programs (examples/, examples/tf1/) from the
 * CTest tests: a shell command's output captured into a buffer, its exit status, the
 * number printed after a key, the skip when an example was not built, and the check of a
 * checkpoint's keys. Include after test_util.h. */
#ifndef VG_EXAMPLE_TEST_UTIL_H
#define VG_EXAMPLE_TEST_UTIL_H
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_util.h"
#include "vigil/vigil.h"

enum {
    EX_STDERR = 1, /* capture stderr too (the command runs with 2>&1) */
    EX_ECHO = 2    /* copy each captured line to stderr, for ctest --output-on-failure */
};

/* Runs cmd through the shell and captures its output into out (at most cap - 1 bytes,
 * NUL-terminated; the rest is read and dropped). With EX_ECHO, lines containing
 * echo_skip (NULL: none) are not copied to stderr. Returns the command's exit status,
 * or -1 when it could not start or was killed by a signal. */
static inline int ex_run(const char *cmd, char *out, size_t cap, int flags, const char *echo_skip) {
    char full[8192];
    snprintf(full, sizeof full, "%s%s", cmd, (flags & EX_STDERR) ? " 2>&1" : "");
    out[0] = 0;
    FILE *f = popen(full, "r");
    if (!f) return -1;
    size_t n = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if ((flags & EX_ECHO) && !(echo_skip && strstr(line, echo_skip))) fputs(line, stderr);
        size_t l = strlen(line);
        if (n + l < cap) {
            memcpy(out + n, line, l + 1);
            n += l;
        }
    }
    int status = pclose(f);
    return status == -1 || !WIFEXITED(status) ? -1 : WEXITSTATUS(status);
}

/* The number printed right after key in out; NAN when key is missing. */
static inline double ex_value_after(const char *out, const char *key) {
    const char *s = strstr(out, key);
    return s ? atof(s + strlen(key)) : NAN;
}

/* True when the example program prog exists and is executable; otherwise prints SKIP. */
static inline bool ex_built(const char *prog) {
    if (access(prog, X_OK) == 0) return true;
    fprintf(stderr, "SKIP: %s not built (configure with -DVIGIL_EXAMPLES=ON)\n", prog);
    return false;
}
/* Checks that the checkpoint r holds exactly the ne tensors expected, in order (each
 * mismatch printed). */
static inline void ex_check_ckpt_keys(vg_checkpoint_reader *r, const char *const *expected, int ne) {
    CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), ne);
    for (int i = 0; i < ne && i < vg_checkpoint_reader_num_tensors(r); i++) {
        vg_dtype dt;
        vg_shape sh;
        const char *name = vg_checkpoint_reader_tensor(r, i, &dt, &sh);
        if (strcmp(name, expected[i]) != 0) fprintf(stderr, "  key %d: %s, expected %s\n", i, name, expected[i]);
        CHECK(strcmp(name, expected[i]) == 0);
    }
}
/* Opens the checkpoint dir/rel (a prefix such as "train/model.ckpt-59") for reading,
 * checking it opens; NULL (a failed check, the reason in *st) when it does not. */
static inline vg_checkpoint_reader *ex_open_ckpt(const char *dir, const char *rel, vg_status *st) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, st);
    if (!r) fprintf(stderr, "  checkpoint %s: %s\n", path, st->msg);
    CHECK(r != NULL);
    return r;
}

/* Where the example programs are built (CMake passes VG_BINDIR; "." otherwise). */
#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif

/* The examples' synthetic data: one xorshift64 step of *state (never 0), its next
 * value; ex_urand: the next double uniform in [0, 1) (53 bits). */
static inline uint64_t ex_xorshift(uint64_t *state) {
    uint64_t s = *state;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return *state = s;
}
static inline double ex_urand(uint64_t *state) { return (double)(ex_xorshift(state) >> 11) / 9007199254740992.0; }

/* True when a file in dir has a name containing pattern (`ls dir | grep -q pattern`). */
static inline bool ex_dir_has(const char *dir, const char *pattern) {
    char cmd[1024], out[256];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '%s'", dir, pattern);
    return ex_run(cmd, out, sizeof out, 0, NULL) == 0;
}

/* The scalar tensor name of checkpoint r as a double (vg_tensor_scalar); NAN, printed,
 * when it cannot be read. */
static inline double ex_ckpt_scalar(vg_checkpoint_reader *r, const char *name) {
    vg_status st;
    vg_tensor *t = vg_checkpoint_reader_read(r, name, &st);
    if (!t) {
        fprintf(stderr, "  checkpoint tensor %s: %s\n", name, st.msg);
        return NAN;
    }
    double v = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return v;
}
#endif
