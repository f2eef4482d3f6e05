/* fail_nth_alloc.h - an allocator hook for allocation-failure tests that count from 0:
 * install {fail_alloc, fail_free} with vg_allocator_set before creating anything, set
 * g_count = 0 and g_fail_at = n to make allocation n (0-based) fail, g_fail_at = -1 to
 * fail none. (oom_util.h counts from 1 with arm(n).) */
#ifndef VG_FAIL_NTH_ALLOC_H
#define VG_FAIL_NTH_ALLOC_H
#include <stdlib.h>

static int g_fail_at = -1, g_count;

static inline void *fail_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    if (g_fail_at >= 0 && g_count++ == g_fail_at) return NULL;
    void *p = NULL;
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}

static inline void fail_free(void *payload, void *p) {
    (void)payload;
    free(p);
}
#endif
