/* strmap.h - a small open-addressing hash map from strings to pointers (keys copied). */
#ifndef VG_STRMAP_H
#define VG_STRMAP_H
#include "core.h"

typedef struct vg__strmap {
    char **keys;
    void **vals;
    int cap; /* power of two or 0 */
    int n;
} vg__strmap;

VG_HIDDEN void vg__strmap_init(vg__strmap *m);
VG_HIDDEN void vg__strmap_free(vg__strmap *m);
/* Value for key or NULL; *found (optional) tells absent from a NULL value. */
VG_HIDDEN void *vg__strmap_get(const vg__strmap *m, const char *key, bool *found);
/* Inserts or replaces. Returns false on allocation failure (map unchanged). */
VG_HIDDEN bool vg__strmap_put(vg__strmap *m, const char *key, void *val);
VG_HIDDEN uint64_t vg__hash_bytes(const void *p, size_t n, uint64_t seed);
#endif
