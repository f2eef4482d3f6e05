/* alloc.c - the allocator hook, logging callback and clocks. */
#define _POSIX_C_SOURCE 200809L
#include "core.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *default_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    void *p = NULL;
    if (align <= 16) return malloc(size ? size : 1);
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    return p;
}
static void default_free(void *payload, void *p) { (void)payload; free(p); }

static vg_allocator g_alloc = {default_alloc, default_free, NULL};

void vg_allocator_set(const vg_allocator *a) {
    if (a && a->alloc && a->free) g_alloc = *a;
    else { g_alloc.alloc = default_alloc; g_alloc.free = default_free; g_alloc.payload = NULL; }
}

void *vg__aligned_alloc(size_t size, size_t align) {
    if (align < sizeof(void *)) align = sizeof(void *);
    return g_alloc.alloc(g_alloc.payload, size, align);
}
void *vg__malloc(size_t size) { return g_alloc.alloc(g_alloc.payload, size, 16); }
void *vg__calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = vg__malloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}
void vg__free(void *p) { if (p) g_alloc.free(g_alloc.payload, p); }

void *vg__realloc(void *p, size_t old_size, size_t new_size) {
    void *q = vg__malloc(new_size);
    if (!q) return NULL;
    if (p) {
        memcpy(q, p, old_size < new_size ? old_size : new_size);
        vg__free(p);
    }
    return q;
}

char *vg__strndup(const char *s, size_t n) {
    char *d = vg__malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}
char *vg__strdup(const char *s) { return vg__strndup(s, strlen(s)); }

bool vg__grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap : 4;
    while (nc < need) nc *= 2;
    void *n = vg__realloc(*arr, (size_t)*cap * elem, (size_t)nc * elem);
    if (!n) return false;
    memset((char *)n + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = n;
    *cap = nc;
    return true;
}

/* ---- logging ---- */
static vg_log_fn g_log_fn;
static void *g_log_payload;
static vg_log_level g_log_min = VG_LOG_INFO;

void vg_log_set(vg_log_fn fn, void *payload, vg_log_level min_level) {
    g_log_fn = fn;
    g_log_payload = payload;
    g_log_min = min_level;
}

void vg_logf(vg_log_level level, const char *fmt, ...) {
    if (!g_log_fn || level < g_log_min) return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_log_fn(g_log_payload, level, buf);
}

int64_t vg__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
double vg__wall_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void *vg_malloc(size_t size) { return vg__malloc(size); }
void *vg_calloc(size_t n, size_t size) { return vg__calloc(n, size); }
void *vg_realloc(void *p, size_t old_size, size_t new_size) { return vg__realloc(p, old_size, new_size); }
void vg_free(void *p) { vg__free(p); }
