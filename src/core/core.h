/*
 * core.h - internal helpers shared by every module: allocation through the hook,
 * logging, small utilities. Not installed.
 *
 * Naming: internal cross-file functions are vg__module_verb and hidden from export.
 */
#ifndef VG_CORE_H
#define VG_CORE_H

#include "core/visibility.h"
#include "vigil/status.h"
#include <stdbool.h>
#include <string.h>

#if defined(__GNUC__)
#define VG_LIKELY(x) __builtin_expect(!!(x), 1)
#define VG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define VG_LIKELY(x) (x)
#define VG_UNLIKELY(x) (x)
#endif

#define VG_TENSOR_ALIGN 64

/* Allocation through the hook. All return NULL on failure (callers must check and
 * report VG_RESOURCE_EXHAUSTED). vg__free(NULL) is a no-op. */
VG_HIDDEN void *vg__malloc(size_t size);
VG_HIDDEN void *vg__calloc(size_t n, size_t size);
VG_HIDDEN void *vg__aligned_alloc(size_t size, size_t align);
/* Grows/shrinks a block from vg__malloc; old_size bytes are preserved. On failure the
 * old block is untouched and NULL is returned. */
VG_HIDDEN void *vg__realloc(void *p, size_t old_size, size_t new_size);
/* The default allocator's cache of large freed blocks (alloc.c): how many blocks and
 * bytes it holds now (tests). */
VG_HIDDEN void vg__alloc_cache_stats(int *blocks, size_t *bytes);
VG_HIDDEN void vg__free(void *p);
/* Small tensor blocks (alloc.c): vg__small_block_get returns a VG__SMALL_BLOCK-byte
 * block aligned to VG_TENSOR_ALIGN from the calling thread's list, or NULL when the
 * lists are off (a user allocator, VG_ALLOC_CACHE=0, AddressSanitizer) or memory ran
 * out; such a block goes back only through vg__small_block_put (never vg__free). */
#define VG__SMALL_BLOCK 256
VG_HIDDEN void *vg__small_block_get(void);
VG_HIDDEN void vg__small_block_put(void *p);
VG_HIDDEN char *vg__strdup(const char *s);
VG_HIDDEN char *vg__strndup(const char *s, size_t n);

/* Grows a dynamic array *arr of *cap elements of elem bytes to hold at least need.
 * Returns false (array untouched) on allocation failure. */
VG_HIDDEN bool vg__grow(void **arr, int *cap, int need, size_t elem);

/* "Out of memory" status helper. */
#define VG_OOM(st, what) vg_status_set((st), VG_RESOURCE_EXHAUSTED, "out of memory allocating %s", (what))

/* Monotonic clock in nanoseconds and wall clock in seconds. */
VG_HIDDEN int64_t vg__now_ns(void);
VG_HIDDEN double vg__wall_secs(void);

#endif
