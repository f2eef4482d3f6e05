/* tmpdir_util.h - one temporary directory per test program, g_dir: define TMPDIR_TAG
 * (a string, part of the directory's name) before including; make_tmpdir creates it
 * (the program exits if it cannot), remove_tmpdir removes it with its contents, and
 * tmp_path joins a name to it (out holds 512 bytes). Include after test_util.h. */
#ifndef VG_TMPDIR_UTIL_H
#define VG_TMPDIR_UTIL_H
#include "test_util.h"

static char g_dir[64];

static inline void make_tmpdir(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, TMPDIR_TAG)[0]) {
        perror("mkdtemp");
        exit(1);
    }
}
static inline void remove_tmpdir(void) { tu_rmrf(g_dir); }
static inline char *tmp_path(char *out, const char *name) {
    snprintf(out, 512, "%s/%s", g_dir, name);
    return out;
}
#endif
