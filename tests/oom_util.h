/* oom_util.h - the fail-allocation-N hook for allocation-failure tests (SQLite-style):
 * install {failing_alloc, plain_free} with vg_allocator_set before creating anything,
 * arm(n) makes the n-th allocation from now fail, arm(0) disarms. */
#ifndef VG_OOM_UTIL_H
#define VG_OOM_UTIL_H
#include <stdbool.h>
#include <stdlib.h>
#include "vigil/status.h"

static long g_count, g_fail_at;

static void *failing_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    if (g_fail_at > 0 && ++g_count == g_fail_at) return NULL;
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    return p;
}
static void plain_free(void *payload, void *p) {
    (void)payload;
    free(p);
}
/* Installs {failing_alloc, plain_free} (disarmed until arm(n)). */
static inline void oom_install(void) {
    vg_allocator a = {failing_alloc, plain_free, NULL};
    vg_allocator_set(&a);
}
static void arm(long n) {
    g_count = 0;
    g_fail_at = n;
}
/* True if the armed failure was reached (allocation n happened). */
static inline bool injected(long n) { return g_count >= n; }
#endif
