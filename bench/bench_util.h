/* bench_util.h - the clocks and the median the benchmark programs share (header-only,
 * static inline). */
#ifndef VG_BENCH_UTIL_H
#define VG_BENCH_UTIL_H
#include <stdlib.h>
#include <time.h>

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
#endif
