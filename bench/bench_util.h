/* bench_util.h - the clocks, the median and the reading of a peer's output that the
 * benchmark programs share (header-only, static inline). */
#ifndef VG_BENCH_UTIL_H
#define VG_BENCH_UTIL_H
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Seconds / milliseconds on the monotonic clock. */
static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static inline double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* qsort order of doubles, ascending. */
static inline int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[n] (the upper one for even n; v is sorted in place); -1 when n <= 0. */
static inline double median(double *v, int n) {
    if (n <= 0) return -1;
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return v[n / 2];
}

/* Runs the peer command cmd (popen) and returns the last "median_ms" it printed (-1:
 * none, or cmd did not start); *rss_mb, when rss_mb is not NULL, gets the last
 * "peak_rss_mb". */
static inline double peer_median_ms(const char *cmd, double *rss_mb) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    char line[8192];
    double med = -1;
    while (fgets(line, sizeof line, f)) {
        char *m = strstr(line, "\"median_ms\": ");
        if (m) med = atof(m + 13);
        char *r = strstr(line, "\"peak_rss_mb\": ");
        if (r && rss_mb) *rss_mb = atof(r + 15);
    }
    pclose(f);
    return med;
}
/* The Fashion-MNIST training files of dir into img and lab (n bytes each):
 * "<dir>/train-images-idx3-ubyte.gz" and the labels' file. When either is unreadable,
 * prints "<prog>: <img> not found; skipping" on stderr and {"bench":"<bench>","skipped":true}
 * on stdout and returns 0 (the benchmark then exits 0); 1 when both are there. */
static inline int bench_mnist_files(const char *dir, const char *prog, const char *bench, char *img, char *lab,
                                    size_t n) {
    snprintf(img, n, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(lab, n, "%s/train-labels-idx1-ubyte.gz", dir);
    if (access(img, R_OK) == 0 && access(lab, R_OK) == 0) return 1;
    fprintf(stderr, "%s: %s not found; skipping\n", prog, img);
    printf("{\"bench\":\"%s\",\"skipped\":true}\n", bench);
    return 0;
}

/* One command-line option of a benchmark: kind 's' "--name VALUE" into a const char *,
 * 'i' "--name N" into an int (atoi), 't' / 'f' a bare "--name" setting a bool true /
 * false; dst points at the variable. */
typedef struct bench_arg {
    const char *name;
    char kind;
    void *dst;
} bench_arg;

/* Whether argv[*i] is one of args (a value option only when a value follows): then
 * stores it, moves *i past a value and returns 1; else 0. */
static inline int bench_match_arg(int argc, char **argv, int *i, const bench_arg *args, int n) {
    for (int k = 0; k < n; k++) {
        const bench_arg *a = &args[k];
        bool value = a->kind == 's' || a->kind == 'i';
        if (strcmp(argv[*i], a->name) || (value && *i + 1 >= argc)) continue;
        switch (a->kind) {
        case 's': *(const char **)a->dst = argv[++*i]; break;
        case 'i': *(int *)a->dst = atoi(argv[++*i]); break;
        default: *(bool *)a->dst = a->kind == 't'; break;
        }
        return 1;
    }
    return 0;
}

#endif
