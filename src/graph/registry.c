/*
 * registry.c - the op registry: holds the op tables the kernel layer hands it
 * (src/kernels/op_families.c) sorted by type, and finds defs by type.
 */
#include "registry.h"
#include <pthread.h>
#include <stdlib.h>

static const vg__op_def **g_defs;
static int g_ndefs, g_cap;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_def(const void *a, const void *b) {
    return strcmp((*(const vg__op_def *const *)a)->type, (*(const vg__op_def *const *)b)->type);
}

void vg__registry_add_family(const vg__op_def *table) {
    int n = 0;
    for (const vg__op_def *d = table; d && d->type; d++) n++;
    if (n == 0) return;
    /* The registry lives for the whole process: plain malloc, not the hook (the hook
     * may be swapped by tests between graphs). */
    if (g_ndefs + n > g_cap) {
        int cap = g_cap ? g_cap : 256;
        while (cap < g_ndefs + n) cap *= 2;
        const vg__op_def **p = realloc(g_defs, sizeof(*g_defs) * (size_t)cap);
        if (!p) return;
        g_defs = p;
        g_cap = cap;
    }
    for (const vg__op_def *d = table; d->type; d++) g_defs[g_ndefs++] = d;
}

static void init_registry(void) {
    vg__op_families_register();
    if (g_ndefs > 0) qsort(g_defs, (size_t)g_ndefs, sizeof *g_defs, cmp_def);
}

/* Ops registered at run time from user code (vigil/custom_op.h): a list searched after
 * the static tables, under a lock; defs live for the process. */
static const vg__op_def **g_custom;
static int g_ncustom, g_custom_cap;
static pthread_mutex_t g_custom_mu = PTHREAD_MUTEX_INITIALIZER;

static const vg__op_def *find_static(const char *type);

vg_code vg__registry_add_custom(const vg__op_def *def) {
    pthread_once(&g_once, init_registry);
    if (!def || !def->type) return VG_INVALID_ARGUMENT;
    if (find_static(def->type)) return VG_ALREADY_EXISTS;
    pthread_mutex_lock(&g_custom_mu);
    vg_code c = VG_OK;
    for (int i = 0; i < g_ncustom; i++)
        if (strcmp(g_custom[i]->type, def->type) == 0) c = VG_ALREADY_EXISTS;
    if (!c && g_ncustom == g_custom_cap) {
        int cap = g_custom_cap ? g_custom_cap * 2 : 8;
        const vg__op_def **p = realloc(g_custom, sizeof(*g_custom) * (size_t)cap);
        if (!p) c = VG_RESOURCE_EXHAUSTED;
        else {
            g_custom = p;
            g_custom_cap = cap;
        }
    }
    if (!c) g_custom[g_ncustom++] = def;
    pthread_mutex_unlock(&g_custom_mu);
    return c;
}

const vg__op_def *vg__registry_find(const char *type) {
    const vg__op_def *d = find_static(type);
    if (d || !type) return d;
    pthread_mutex_lock(&g_custom_mu);
    for (int i = 0; i < g_ncustom && !d; i++)
        if (strcmp(g_custom[i]->type, type) == 0) d = g_custom[i];
    pthread_mutex_unlock(&g_custom_mu);
    return d;
}

static const vg__op_def *find_static(const char *type) {
    pthread_once(&g_once, init_registry);
    int lo = 0, hi = g_ndefs - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(g_defs[mid]->type, type);
        if (c == 0) return g_defs[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* TF's InferenceContext::Merge: two shapes that must describe the same tensor. */
vg_code vg__shape_merge(const vg_shape *a, const vg_shape *b, vg_shape *out, vg_status *st) {
    char sa[160], sb[160];
    if (a->ndims < 0) { *out = *b; return VG_OK; }
    if (b->ndims < 0) { *out = *a; return VG_OK; }
    if (a->ndims != b->ndims)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shapes must be equal rank, but are %d and %d", a->ndims,
                             b->ndims);
    *out = *a;
    for (int i = 0; i < a->ndims; i++) {
        int64_t x = a->dims[i], y = b->dims[i];
        if (x >= 0 && y >= 0 && x != y)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Dimension %d in both shapes must be equal, but are %lld and %lld. Shapes are %s "
                                 "and %s.",
                                 i, (long long)x, (long long)y, vg_shape_str(a, sa, sizeof sa),
                                 vg_shape_str(b, sb, sizeof sb));
        out->dims[i] = x >= 0 ? x : y;
    }
    return VG_OK;
}
