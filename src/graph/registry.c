/*
 * registry.c - collects the op tables of the op families and finds defs by type.
 * The family tables are strong references (so the static library links every family's
 * object file); vg__ops_test is weak: a test executable may define it to register test
 * ops (fault injection, blocking ops).
 */
#include "registry.h"
#include <pthread.h>
#include <stdlib.h>

#define FAMILY(name) extern const vg__op_def name[];
FAMILY(vg__ops_array)
FAMILY(vg__ops_math)
FAMILY(vg__ops_nn)
FAMILY(vg__ops_conv)
FAMILY(vg__ops_state)
FAMILY(vg__ops_random)
FAMILY(vg__ops_training)
FAMILY(vg__ops_io)
FAMILY(vg__ops_queue)
FAMILY(vg__ops_summary)
FAMILY(vg__ops_data)
FAMILY(vg__ops_parsing)
FAMILY(vg__ops_reader)
FAMILY(vg__ops_dataset)
extern const vg__op_def vg__ops_test[] __attribute__((weak));

static const vg__op_def **g_defs;
static int g_ndefs;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_def(const void *a, const void *b) {
    return strcmp((*(const vg__op_def *const *)a)->type, (*(const vg__op_def *const *)b)->type);
}

static void init_registry(void) {
    const vg__op_def *tables[] = {vg__ops_array, vg__ops_math, vg__ops_nn, vg__ops_conv,
                                  vg__ops_state, vg__ops_random, vg__ops_training, vg__ops_io,
                                  vg__ops_queue, vg__ops_summary, vg__ops_data, vg__ops_parsing, vg__ops_reader,
                                  vg__ops_dataset, vg__ops_test};
    int n = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const vg__op_def *d = tables[t]; d && d->type; d++) n++;
    /* The registry lives for the whole process: plain malloc, not the hook (the hook
     * may be swapped by tests between graphs). */
    g_defs = malloc(sizeof(*g_defs) * (size_t)(n ? n : 1));
    if (!g_defs) return;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const vg__op_def *d = tables[t]; d && d->type; d++) g_defs[g_ndefs++] = d;
    qsort(g_defs, (size_t)g_ndefs, sizeof *g_defs, cmp_def);
}

const vg__op_def *vg__registry_find(const char *type) {
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
