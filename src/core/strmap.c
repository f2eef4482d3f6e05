/* strmap.c - string -> pointer hash map (linear probing, FNV-1a-style hashing). */
#include "strmap.h"

uint64_t vg__hash_bytes(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    h ^= 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ULL; }
    h ^= h >> 29;
    return h;
}

void vg__strmap_init(vg__strmap *m) { memset(m, 0, sizeof *m); }

void vg__strmap_free(vg__strmap *m) {
    for (int i = 0; i < m->cap; i++) vg__free(m->keys[i]);
    vg__free(m->keys);
    vg__free(m->vals);
    memset(m, 0, sizeof *m);
}

static int find_slot(char **keys, int cap, const char *key) {
    uint64_t h = vg__hash_bytes(key, strlen(key), 0);
    int i = (int)(h & (uint64_t)(cap - 1));
    while (keys[i] && strcmp(keys[i], key) != 0) i = (i + 1) & (cap - 1);
    return i;
}

void *vg__strmap_get(const vg__strmap *m, const char *key, bool *found) {
    if (found) *found = false;
    if (!m->cap) return NULL;
    int i = find_slot(m->keys, m->cap, key);
    if (!m->keys[i]) return NULL;
    if (found) *found = true;
    return m->vals[i];
}

static bool rehash(vg__strmap *m, int ncap) {
    char **nk = vg__calloc((size_t)ncap, sizeof(char *));
    void **nv = vg__calloc((size_t)ncap, sizeof(void *));
    if (!nk || !nv) { vg__free(nk); vg__free(nv); return false; }
    for (int i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        int j = find_slot(nk, ncap, m->keys[i]);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    vg__free(m->keys);
    vg__free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return true;
}

bool vg__strmap_put(vg__strmap *m, const char *key, void *val) {
    if ((m->n + 1) * 2 > m->cap && !rehash(m, m->cap ? m->cap * 2 : 16)) return false;
    int i = find_slot(m->keys, m->cap, key);
    if (!m->keys[i]) {
        char *k = vg__strdup(key);
        if (!k) return false;
        m->keys[i] = k;
        m->n++;
    }
    m->vals[i] = val;
    return true;
}
