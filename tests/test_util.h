/* test_util.h - tiny assertion helpers for vigil's tests. A failing check prints
 * file:line and the test exits non-zero at the end (TEST_MAIN_END). */
#ifndef VG_TEST_UTIL_H
#define VG_TEST_UTIL_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int vg_test_failures = 0;

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    vg_test_failures++; } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    if (_a != _b) { fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
    __FILE__, __LINE__, #a, _a, #b, _b); vg_test_failures++; } } while (0)
#define CHECK_NEAR(a, b, tol) do { double _a = (double)(a), _b = (double)(b); \
    if (!(fabs(_a - _b) <= (tol) * (1.0 + fabs(_b)))) { \
    fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g (tol %g)\n", __FILE__, __LINE__, \
    #a, _a, _b, (double)(tol)); vg_test_failures++; } } while (0)
#define CHECK_OK(expr, st) do { int _c = (int)(expr); if (_c != 0) { \
    fprintf(stderr, "%s:%d: %s failed: code %d: %s\n", __FILE__, __LINE__, #expr, _c, \
    (st)->msg); vg_test_failures++; } } while (0)
#define CHECK_CODE(expr, code) do { int _c = (int)(expr); if (_c != (int)(code)) { \
    fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #expr, \
    _c, (int)(code)); vg_test_failures++; } } while (0)
#define CHECK_STR_CONTAINS(hay, needle) do { if (!strstr((hay), (needle))) { \
    fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, \
    (hay), (needle)); vg_test_failures++; } } while (0)

#define RUN_TEST(fn) do { int _before = vg_test_failures; fn(); \
    fprintf(stderr, "%s %s\n", vg_test_failures == _before ? "ok  " : "FAIL", #fn); } while (0)
#define TEST_MAIN_END() do { if (vg_test_failures) { \
    fprintf(stderr, "%d check(s) failed\n", vg_test_failures); return 1; } return 0; } while (0)

/* Temporary directories: tu_mkdtemp makes /tmp/vg_<tag>_XXXXXX in buf (buf[0] == 0 on
 * failure) and returns buf; tu_rmrf removes such a directory with everything in it
 * (refusing any path outside /tmp/vg_) and returns 0, or -1 if something stayed.
 * Every test that needs a directory uses these two (no mkdtemp, no rm -rf). */
/* Seconds on the monotonic clock. */
static inline double tu_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* True under scripts/isa-test.sh, which runs suites in QEMU as older CPUs and sets
 * VIGIL_TEST_EMULATED=1: there every vector instruction is emulated (an FMA costs
 * hundreds of host instructions), so suites may drop repeats that exercise no
 * ISA-specific code (the same kernel again at 2 threads) to keep CI's time. */
static inline int tu_emulated(void) {
    const char *e = getenv("VIGIL_TEST_EMULATED");
    return e && *e && strcmp(e, "0") != 0;
}

static inline int tu_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}
static inline char *tu_mkdtemp(char *buf, size_t len, const char *tag) {
    snprintf(buf, len, "/tmp/vg_%s_XXXXXX", tag);
    if (!mkdtemp(buf)) buf[0] = 0;
    return buf;
}
static inline int tu_rmrf(const char *dir) {
    if (!dir || strncmp(dir, "/tmp/vg_", 8) != 0) return -1;
    return nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}


/* Writes text to path, replacing the file (a failed check when it cannot be opened). */
static inline void tu_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* Whether path is a file holding exactly text (files up to 255 bytes). */
static inline int tu_file_holds(const char *path, const char *text) {
    char buf[256] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

#endif
