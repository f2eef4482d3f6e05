/* alloc.c - the allocator hook, logging callback and clocks. */
#define _POSIX_C_SOURCE 200809L
#include "core.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>

/*
 * The default allocator: malloc / posix_memalign, plus a cache of large blocks.
 * Training allocates the same large tensors every step; handing them back to the C
 * library makes it unmap and re-fault them (page faults showed up as ~6% of a CNN
 * step). Every block carries a 16-byte header just before the returned pointer (the
 * base pointer and the size). Blocks of 64 KiB and more with alignment <= 64 are kept
 * on free in an exact-size cache (at most 256 blocks and 1 GiB) and reused by the next
 * allocation of the same size; when a freed block does not fit, the oldest cached
 * blocks are released to make room, so a program whose sizes change keeps what it uses
 * now. A step of the PTB language model frees ~100 large tensors (up to 28 MB) per
 * step: with 64 slots and 256 MiB it re-faulted ~64 MB a step (16k page faults; the
 * ResNet 27 MB), with this size none once warm. Like TF's allocator, the memory a step
 * used stays with the process. VG_ALLOC_CACHE=0 in the environment turns the cache off
 * (for leak checkers).
 */
#define BIG_MIN (64 * 1024)
#define CACHE_SLOTS 256
#define CACHE_MAX_BYTES ((size_t)1024 << 20)

typedef struct blk_hdr {
    void *base;
    size_t size; /* bit 63: cacheable */
} blk_hdr;
#define CACHEABLE ((size_t)1 << 63)

static pthread_mutex_t g_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static void *g_cache_ptr[CACHE_SLOTS];
static size_t g_cache_size[CACHE_SLOTS];
static uint64_t g_cache_stamp[CACHE_SLOTS]; /* insertion order: the oldest goes first */
static uint64_t g_cache_clock;
static size_t g_cache_bytes;
static int g_cache_on = -1;

static bool cache_enabled(void) {
    if (g_cache_on < 0) {
        const char *e = getenv("VG_ALLOC_CACHE");
        g_cache_on = !(e && e[0] == '0');
    }
    return g_cache_on;
}

static void *default_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    bool big = size >= BIG_MIN && align <= 64;
    if (big && cache_enabled()) {
        void *u = NULL;
        pthread_mutex_lock(&g_cache_mu);
        for (int i = 0; i < CACHE_SLOTS; i++) {
            if (g_cache_ptr[i] && g_cache_size[i] == size) {
                u = g_cache_ptr[i];
                g_cache_ptr[i] = NULL;
                g_cache_bytes -= size;
                break;
            }
        }
        pthread_mutex_unlock(&g_cache_mu);
        if (u) return u;
    }
    size_t a = align <= 16 && !big ? 16 : (align < 64 ? 64 : align);
    if (size > SIZE_MAX - 2 * a) return NULL;
    void *base = NULL;
    char *u;
    if (a == 16) {
        if (!(base = malloc(size + 16))) return NULL;
        u = (char *)base + 16;
    } else if (a == 64 && !big) {
        /* small aligned blocks: malloc and align by hand (posix_memalign costs far more
         * than malloc's fast path, and small tensors are allocated on every run) */
        if (!(base = malloc(size + 64 + sizeof(blk_hdr)))) return NULL;
        u = (char *)(((uintptr_t)base + sizeof(blk_hdr) + 63) & ~(uintptr_t)63);
    } else {
        if (posix_memalign(&base, a, size + a) != 0) return NULL;
        u = (char *)base + a;
    }
    blk_hdr *h = (blk_hdr *)(u - sizeof(blk_hdr));
    h->base = base;
    h->size = size | (big ? CACHEABLE : 0);
    return u;
}

static void default_free(void *payload, void *p) {
    (void)payload;
    blk_hdr *h = (blk_hdr *)((char *)p - sizeof(blk_hdr));
    size_t size = h->size & ~CACHEABLE;
    if ((h->size & CACHEABLE) && cache_enabled() && size <= CACHE_MAX_BYTES / 4) {
        void *evicted[CACHE_SLOTS];
        int nev = 0, slot = -1;
        pthread_mutex_lock(&g_cache_mu);
        for (;;) { /* room for it: a free slot and the byte budget, evicting the oldest */
            int oldest = -1;
            slot = -1;
            for (int i = 0; i < CACHE_SLOTS; i++) {
                if (!g_cache_ptr[i]) {
                    if (slot < 0) slot = i;
                } else if (oldest < 0 || g_cache_stamp[i] < g_cache_stamp[oldest]) {
                    oldest = i;
                }
            }
            if (slot >= 0 && g_cache_bytes + size <= CACHE_MAX_BYTES) break;
            if (oldest < 0) break; /* cannot happen: size <= the budget */
            evicted[nev++] = g_cache_ptr[oldest];
            g_cache_bytes -= g_cache_size[oldest];
            g_cache_ptr[oldest] = NULL;
        }
        if (slot >= 0 && g_cache_bytes + size <= CACHE_MAX_BYTES) {
            g_cache_ptr[slot] = p;
            g_cache_size[slot] = size;
            g_cache_stamp[slot] = ++g_cache_clock;
            g_cache_bytes += size;
            p = NULL;
        }
        pthread_mutex_unlock(&g_cache_mu);
        for (int i = 0; i < nev; i++) free(((blk_hdr *)((char *)evicted[i] - sizeof(blk_hdr)))->base);
        if (!p) return;
    }
    free(h->base);
}

void vg__alloc_cache_stats(int *blocks, size_t *bytes) {
    int n = 0;
    pthread_mutex_lock(&g_cache_mu);
    for (int i = 0; i < CACHE_SLOTS; i++) n += g_cache_ptr[i] != NULL;
    if (bytes) *bytes = g_cache_bytes;
    pthread_mutex_unlock(&g_cache_mu);
    if (blocks) *blocks = n;
}

static vg_allocator g_alloc = {default_alloc, default_free, NULL};

/*
 * Small tensor blocks. Every run allocates and frees small tensors (the global step
 * read a monitored session fetches, scalars, shapes, reshape aliases): through malloc
 * and free that is ~300 instructions a tensor, as much as a whole small kernel. Blocks
 * of VG__SMALL_BLOCK bytes (a tensor header and up to 128 bytes of data) are kept on a
 * per-thread list of at most SMALL_CAP, so a steady-state step takes them from there
 * without a lock. Only while the default allocator is installed (a hook sees every
 * allocation), not with VG_ALLOC_CACHE=0, and not under AddressSanitizer (reused
 * blocks would hide a use after free). A thread's list is freed when the thread ends.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SMALL_LISTS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SMALL_LISTS 0
#endif
#endif
#ifndef SMALL_LISTS
#define SMALL_LISTS 1
#endif
#define SMALL_CAP 32

typedef struct small_node {
    struct small_node *next;
} small_node;
static _Thread_local small_node *tl_small;
static _Thread_local int tl_nsmall;
static _Thread_local bool tl_small_key_set; /* this thread's drain at exit is registered */
static pthread_key_t g_small_key;
static pthread_once_t g_small_once = PTHREAD_ONCE_INIT;
static bool g_small_key_ok;

static void small_drain(void *unused) {
    (void)unused;
    while (tl_small) {
        small_node *b = tl_small;
        tl_small = b->next;
        default_free(NULL, b);
    }
    tl_nsmall = 0;
    tl_small_key_set = false; /* a later destructor that frees a block registers again */
}
static void small_key_init(void) { g_small_key_ok = pthread_key_create(&g_small_key, small_drain) == 0; }

void *vg__small_block_get(void) {
    if (!SMALL_LISTS || g_alloc.alloc != default_alloc || !cache_enabled()) return NULL;
    small_node *b = tl_small;
    if (b) {
        tl_small = b->next;
        tl_nsmall--;
        return b;
    }
    return default_alloc(NULL, VG__SMALL_BLOCK, VG_TENSOR_ALIGN);
}

void vg__small_block_put(void *p) {
    if (tl_nsmall >= SMALL_CAP) {
        default_free(NULL, p);
        return;
    }
    if (!tl_small_key_set) { /* once per thread: make sure the list is freed at thread exit */
        pthread_once(&g_small_once, small_key_init);
        if (!g_small_key_ok || pthread_setspecific(g_small_key, (void *)1) != 0) {
            default_free(NULL, p);
            return;
        }
        tl_small_key_set = true;
    }
    small_node *b = p;
    b->next = tl_small;
    tl_small = b;
    tl_nsmall++;
}

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

/* The default sink (as TF's Python logging: INFO and up to stderr, one line each, in
 * the "LEVEL:logger:message" form of Python's default handler). */
void vg_log_stderr(void *payload, vg_log_level level, const char *msg) {
    (void)payload;
    static const char *const names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
    const char *name = (unsigned)level < 4 ? names[level] : "INFO";
    fprintf(stderr, "%s:vigil:%s\n", name, msg);
}

static vg_log_fn g_log_fn = vg_log_stderr;
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
