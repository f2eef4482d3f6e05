/* fuzz_util.h - shared helpers of the libFuzzer harnesses: the input written to a
 * per-process scratch file (the readers under test take paths), quiet logging. */
#ifndef VG_FUZZ_UTIL_H
#define VG_FUZZ_UTIL_H
#include "io/io.h"
#include "vigil/vigil.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A scratch directory for this process (under $TMPDIR or /dev/shm), made once. */
static inline const char *fz_dir(void) {
    static char dir[256];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        struct stat sb;
        if (!base || !*base) base = stat("/dev/shm", &sb) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/vigil_fuzz_%ld", base, (long)getpid());
        mkdir(dir, 0700);
        vg_log_set(NULL, NULL, VG_LOG_ERROR); /* errors only (the library never prints itself) */
    }
    return dir;
}

/* Writes data to <dir>/<name>; returns the path in a static buffer. */
static inline const char *fz_write(const char *name, const uint8_t *data, size_t n) {
    static char path[4][512];
    static int k;
    char *p = path[k++ & 3];
    snprintf(p, 512, "%s/%s", fz_dir(), name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, data + off, n - off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
    close(fd);
    return p;
}

/* Splits the input at the first 4 bytes (little-endian length of part one). */
static inline void fz_split(const uint8_t *d, size_t n, const uint8_t **a, size_t *na, const uint8_t **b, size_t *nb) {
    uint32_t k = n >= 4 ? (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24 : 0;
    d += n >= 4 ? 4 : n;
    n -= n >= 4 ? 4 : n;
    if (k > n) k = (uint32_t)n;
    *a = d, *na = k, *b = d + k, *nb = n - k;
}

/* Reads every entry of a container c of n named arrays (an .npz, a pickled dict): key(c, i)
 * must name entry i (a NULL key traps), and get(c, key)'s tensor is freed. */
typedef const char *(*fz_key_fn)(void *c, int i);
typedef vg_tensor *(*fz_get_fn)(void *c, const char *key, vg_status *st);
static inline void fz_read_entries(void *c, int n, fz_key_fn key, fz_get_fn get) {
    vg_status st;
    for (int i = 0; i < n; i++) {
        const char *k = key(c, i);
        if (!k) __builtin_trap();
        vg_tensor_free(get(c, k, &st));
    }
}
#endif
