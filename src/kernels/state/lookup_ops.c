/*
 * lookup_ops.c - TF's lookup tables as session resources, and the string ops that
 * vocabulary lookups use:
 *
 *   HashTableV2, MutableHashTableV2           the table ops (output: a resource handle)
 *   LookupTableFindV2(table, keys, default)   values of keys' shape
 *   LookupTableInsertV2(table, keys, values)  mutable tables
 *   LookupTableSizeV2, LookupTableExportV2, LookupTableImportV2
 *   InitializeTableV2(table, keys, values)    static tables, once
 *   InitializeTableFromTextFileV2(table, filename)
 *   StringToHashBucketFast, StringToHashBucketStrong, AsString
 *   Equal / NotEqual on strings (math_cwise_ops.c hands string operands here)
 *
 * A table op creates its table once per session (vg__session_resource, keyed by
 * shared_name or the op's name) and outputs a VG_RESOURCE scalar holding the table
 * pointer. A table is an insertion-ordered entry array with an open-addressing index
 * (export lists entries in insertion order; TF's order is its hash map's). Semantics and
 * messages follow tensorflow/core/kernels/{lookup_table_op,lookup_table_init_op,
 * initializable_lookup_table,lookup_util,string_to_hash_bucket_op,as_string_op}.cc and
 * core/framework/lookup_interface.cc (see vigil/lookup.h).
 *
 * Fingerprint64 is farmhash's farmhashna::Hash64 (TF's tensorflow::Fingerprint64), the
 * strong hash SipHash-2-4 (TF's StrongKeyedHash), both written from their published
 * algorithms.
 */
#include "graph/graph_impl.h"
#include "io/io.h"
#include "kernels/kernel.h"
#include "vigil/lookup.h"
#include "vigil/ops.h"
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define NOGRAD VG__OP_NOT_DIFFERENTIABLE
#define TABLE_FLAGS (VG__OP_STATEFUL | NOGRAD)

/* ------------------------------------------------------------------------ */
/* Fingerprint64 (farmhashna::Hash64) */

static const uint64_t k0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t k1 = 0xb492b66fbe98f273ULL;
static const uint64_t k2 = 0x9ae16a3b2f90404fULL;

static inline uint64_t fetch64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint32_t fetch32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rot64(uint64_t v, int s) { return s == 0 ? v : (v >> s) | (v << (64 - s)); }
static inline uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

static inline uint64_t hash_len16(uint64_t u, uint64_t v, uint64_t mul) {
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t hash_len0to16(const uint8_t *s, size_t len) {
    if (len >= 8) {
        uint64_t mul = k2 + len * 2;
        uint64_t a = fetch64(s) + k2;
        uint64_t b = fetch64(s + len - 8);
        uint64_t c = rot64(b, 37) * mul + a;
        uint64_t d = (rot64(a, 25) + b) * mul;
        return hash_len16(c, d, mul);
    }
    if (len >= 4) {
        uint64_t mul = k2 + len * 2;
        uint64_t a = fetch32(s);
        return hash_len16(len + (a << 3), fetch32(s + len - 4), mul);
    }
    if (len > 0) {
        uint8_t a = s[0], b = s[len >> 1], c = s[len - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8);
        uint32_t z = (uint32_t)len + ((uint32_t)c << 2);
        return shift_mix((uint64_t)y * k2 ^ (uint64_t)z * k0) * k2;
    }
    return k2;
}

static uint64_t hash_len17to32(const uint8_t *s, size_t len) {
    uint64_t mul = k2 + len * 2;
    uint64_t a = fetch64(s) * k1;
    uint64_t b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul;
    uint64_t d = fetch64(s + len - 16) * k2;
    return hash_len16(rot64(a + b, 43) + rot64(c, 30) + d, a + rot64(b + k2, 18) + c, mul);
}

static uint64_t hash_len33to64(const uint8_t *s, size_t len) {
    uint64_t mul = k2 + len * 2;
    uint64_t a = fetch64(s) * k2;
    uint64_t b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul;
    uint64_t d = fetch64(s + len - 16) * k2;
    uint64_t y = rot64(a + b, 43) + rot64(c, 30) + d;
    uint64_t z = hash_len16(y, a + rot64(b + k2, 18) + c, mul);
    uint64_t e = fetch64(s + 16) * mul;
    uint64_t f = fetch64(s + 24);
    uint64_t g = (y + fetch64(s + len - 32)) * mul;
    uint64_t h = (z + fetch64(s + len - 24)) * mul;
    return hash_len16(rot64(e + f, 43) + rot64(g, 30) + h, e + rot64(f + a, 18) + g, mul);
}

typedef struct u128 {
    uint64_t first, second;
} u128;

static inline u128 weak_hash32(const uint8_t *s, uint64_t a, uint64_t b) {
    uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
    a += w;
    b = rot64(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rot64(a, 44);
    return (u128){a + z, b + c};
}

uint64_t vg_fingerprint64(const void *data, size_t len) {
    const uint8_t *s = data;
    const uint64_t seed = 81;
    if (len <= 16) return hash_len0to16(s, len);
    if (len <= 32) return hash_len17to32(s, len);
    if (len <= 64) return hash_len33to64(s, len);
    uint64_t x = seed, y = seed * k1 + 113, z = shift_mix(y * k2 + 113) * k2;
    u128 v = {0, 0}, w = {0, 0};
    x = x * k2 + fetch64(s);
    const uint8_t *end = s + ((len - 1) / 64) * 64;
    const uint8_t *last64 = end + ((len - 1) & 63) - 63;
    do {
        x = rot64(x + y + v.first + fetch64(s + 8), 37) * k1;
        y = rot64(y + v.second + fetch64(s + 48), 42) * k1;
        x ^= w.second;
        y += v.first + fetch64(s + 40);
        z = rot64(z + w.first, 33) * k1;
        v = weak_hash32(s, v.second * k1, x + w.first);
        w = weak_hash32(s + 32, z + w.second, y + fetch64(s + 16));
        uint64_t t = z;
        z = x;
        x = t;
        s += 64;
    } while (s != end);
    uint64_t mul = k1 + ((z & 0xff) << 1);
    s = last64;
    w.first += ((len - 1) & 63);
    v.first += w.first;
    w.first += v.first;
    x = rot64(x + y + v.first + fetch64(s + 8), 37) * mul;
    y = rot64(y + v.second + fetch64(s + 48), 42) * mul;
    x ^= w.second * 9;
    y += v.first * 9 + fetch64(s + 40);
    z = rot64(z + w.first, 33) * mul;
    v = weak_hash32(s, v.second * mul, x + w.first);
    w = weak_hash32(s + 32, z + w.second, y + fetch64(s + 16));
    uint64_t t = z;
    z = x;
    x = t;
    return hash_len16(hash_len16(v.first, w.first, mul) + shift_mix(y) * k0 + z,
                      hash_len16(v.second, w.second, mul) + x, mul);
}

/* SipHash-2-4 with the 128-bit key (key0, key1), as TF's StrongKeyedHash. */
static uint64_t siphash24(uint64_t key0, uint64_t key1, const uint8_t *m, size_t len) {
    uint64_t v0 = 0x736f6d6570736575ULL ^ key0, v1 = 0x646f72616e646f6dULL ^ key1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ key0, v3 = 0x7465646279746573ULL ^ key1;
#define SIPROUND                                                                                              \
    do {                                                                                                      \
        v0 += v1; v1 = rot64(v1, 51); v1 ^= v0; v0 = rot64(v0, 32);                                           \
        v2 += v3; v3 = rot64(v3, 48); v3 ^= v2;                                                               \
        v0 += v3; v3 = rot64(v3, 43); v3 ^= v0;                                                               \
        v2 += v1; v1 = rot64(v1, 47); v1 ^= v2; v2 = rot64(v2, 32);                                           \
    } while (0)
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t mi = fetch64(m + i);
        v3 ^= mi;
        SIPROUND;
        SIPROUND;
        v0 ^= mi;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++) b |= (uint64_t)m[full + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
#undef SIPROUND
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ------------------------------------------------------------------------ */
/* the table */

typedef struct tentry {
    uint64_t h;
    int64_t ki;           /* integer keys */
    char *ks;             /* string keys (owned) */
    size_t kn;
    int64_t vi;           /* int32 / int64 / bool values */
    double vd;            /* float / double values */
    char *vs;             /* string values (owned) */
    size_t vn;
} tentry;

typedef struct vg__table {
    pthread_rwlock_t mu;
    char *name;           /* TF's resource name, for messages */
    const char *op_type;  /* HashTableV2 / MutableHashTableV2 */
    bool is_mutable, initialized;
    vg_dtype kdt, vdt;
    tentry *e;
    int64_t n, cap;
    int64_t *idx;         /* open addressing: entry index or -1 */
    int64_t nidx;         /* power of two */
} vg__table;

static bool is_int_key(vg_dtype dt) { return dt == VG_INT32 || dt == VG_INT64; }

static bool key_dtype_ok(vg_dtype dt) { return dt == VG_STRING || is_int_key(dt); }
static bool value_dtype_ok(vg_dtype dt) {
    return dt == VG_STRING || dt == VG_INT32 || dt == VG_INT64 || dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_BOOL;
}

static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A key read from a tensor element. */
typedef struct tkey {
    int64_t i;
    const char *s;
    size_t n;
    uint64_t h;
} tkey;

static tkey key_at(const vg_tensor *t, int64_t i) {
    tkey k = {0, NULL, 0, 0};
    switch (vg_tensor_dtype(t)) {
    case VG_INT32: k.i = ((const int32_t *)vg_tensor_data(t))[i]; break;
    case VG_INT64: k.i = ((const int64_t *)vg_tensor_data(t))[i]; break;
    case VG_STRING:
        k.s = vg_tensor_string(t, i, &k.n);
        if (!k.s) k.s = "";
        break;
    default: break;
    }
    k.h = k.s ? vg_fingerprint64(k.s, k.n) : mix64((uint64_t)k.i);
    return k;
}

static bool key_eq(const vg__table *t, const tentry *e, const tkey *k) {
    if (e->h != k->h) return false;
    if (t->kdt == VG_STRING) return e->kn == k->n && (k->n == 0 || memcmp(e->ks, k->s, k->n) == 0);
    return e->ki == k->i;
}

/* The slot of k in the index: its entry (>= 0) or the empty slot to use (-(slot+1)). */
static int64_t probe(const vg__table *t, const tkey *k) {
    if (!t->nidx) return -1;
    int64_t mask = t->nidx - 1;
    for (int64_t p = (int64_t)(k->h & (uint64_t)mask);; p = (p + 1) & mask) {
        int64_t i = t->idx[p];
        if (i < 0) return -(p + 1);
        if (key_eq(t, &t->e[i], k)) return i;
    }
}

static const tentry *table_get(const vg__table *t, const tkey *k) {
    int64_t p = probe(t, k);
    return p >= 0 ? &t->e[p] : NULL;
}

static bool rehash(vg__table *t, int64_t nidx) {
    int64_t *idx = vg__malloc(sizeof(int64_t) * (size_t)nidx);
    if (!idx) return false;
    for (int64_t i = 0; i < nidx; i++) idx[i] = -1;
    for (int64_t i = 0; i < t->n; i++) {
        int64_t p = (int64_t)(t->e[i].h & (uint64_t)(nidx - 1));
        while (idx[p] >= 0) p = (p + 1) & (nidx - 1);
        idx[p] = i;
    }
    vg__free(t->idx);
    t->idx = idx;
    t->nidx = nidx;
    return true;
}

static void entry_free(tentry *e) {
    vg__free(e->ks);
    vg__free(e->vs);
}

static void table_clear(vg__table *t) {
    for (int64_t i = 0; i < t->n; i++) entry_free(&t->e[i]);
    t->n = 0;
    for (int64_t i = 0; i < t->nidx; i++) t->idx[i] = -1;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = vg__malloc(n + 1);
    if (d) {
        if (n) memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* Value element i of v into e (vdt's field). */
static bool value_set(tentry *e, vg_dtype vdt, const vg_tensor *v, int64_t i) {
    const void *d = vg_tensor_data(v);
    switch (vdt) {
    case VG_INT32: e->vi = ((const int32_t *)d)[i]; break;
    case VG_INT64: e->vi = ((const int64_t *)d)[i]; break;
    case VG_BOOL: e->vi = ((const bool *)d)[i]; break;
    case VG_FLOAT: e->vd = ((const float *)d)[i]; break;
    case VG_DOUBLE: e->vd = ((const double *)d)[i]; break;
    case VG_STRING: {
        size_t n = 0;
        const char *s = vg_tensor_string(v, i, &n);
        char *c = dup_bytes(s ? s : "", n);
        if (!c) return false;
        vg__free(e->vs);
        e->vs = c;
        e->vn = n;
        break;
    }
    default: break;
    }
    return true;
}

static bool value_same(const tentry *a, const tentry *b, vg_dtype vdt) {
    switch (vdt) {
    case VG_FLOAT:
    case VG_DOUBLE: return a->vd == b->vd;
    case VG_STRING: return a->vn == b->vn && (a->vn == 0 || memcmp(a->vs, b->vs, a->vn) == 0);
    default: return a->vi == b->vi;
    }
}

static void fmt_value(const tentry *e, vg_dtype vdt, char *buf, size_t len) {
    switch (vdt) {
    case VG_FLOAT:
    case VG_DOUBLE: snprintf(buf, len, "%g", e->vd); break;
    case VG_STRING: snprintf(buf, len, "%.*s", (int)(e->vn > 200 ? 200 : e->vn), e->vs); break;
    default: snprintf(buf, len, "%lld", (long long)e->vi); break;
    }
}

static void fmt_key(const tkey *k, char *buf, size_t len) {
    if (k->s) snprintf(buf, len, "%.*s", (int)(k->n > 200 ? 200 : k->n), k->s);
    else snprintf(buf, len, "%lld", (long long)k->i);
}

/* Inserts key k with the value in *val (its vs taken over). replace: a mutable table's
 * insert; else TF's HashTable::DoInsert (a different value is FAILED_PRECONDITION). */
static vg_code table_put(vg__table *t, const tkey *k, tentry *val, bool replace, vg_status *st) {
    if (t->n + 1 > t->nidx / 2 && !rehash(t, t->nidx ? t->nidx * 2 : 16)) goto oom;
    int64_t p = probe(t, k);
    if (p >= 0) {
        tentry *e = &t->e[p];
        if (replace) {
            vg__free(e->vs);
            e->vi = val->vi;
            e->vd = val->vd;
            e->vs = val->vs;
            e->vn = val->vn;
            val->vs = NULL;
            return VG_OK;
        }
        if (!value_same(e, val, t->vdt)) {
            char kb[256], a[256], b[256];
            fmt_key(k, kb, sizeof kb);
            fmt_value(e, t->vdt, a, sizeof a);
            fmt_value(val, t->vdt, b, sizeof b);
            return vg_status_set(st, VG_FAILED_PRECONDITION,
                                 "HashTable has different value for same key. Key %s has %s and trying to add value %s",
                                 kb, a, b);
        }
        return VG_OK;
    }
    if (t->n == t->cap) {
        int64_t nc = t->cap ? t->cap * 2 : 16;
        tentry *ne = vg__realloc(t->e, sizeof(tentry) * (size_t)t->cap, sizeof(tentry) * (size_t)nc);
        if (!ne) goto oom;
        t->e = ne;
        t->cap = nc;
    }
    tentry *e = &t->e[t->n];
    *e = *val;
    val->vs = NULL;
    e->h = k->h;
    e->ki = k->i;
    e->ks = NULL;
    e->kn = k->n;
    if (k->s && !(e->ks = dup_bytes(k->s, k->n))) {
        val->vs = e->vs; /* back to the caller, who frees it */
        goto oom;
    }
    t->idx[-(p + 1)] = t->n++;
    return VG_OK;
oom:
    return VG_OOM(st, "lookup table");
}

static void table_destroy(void *r) {
    vg__table *t = r;
    if (!t) return;
    for (int64_t i = 0; i < t->n; i++) entry_free(&t->e[i]);
    vg__free(t->e);
    vg__free(t->idx);
    vg__free(t->name);
    pthread_rwlock_destroy(&t->mu);
    vg__free(t);
}

static const vg__resource_ops table_resource_ops = {NULL, table_destroy};

static bool attr_type(const vg_op *op, const char *name, vg_dtype *dt) { return vg_op_attr_type_(op, name, dt); }

/* The resource name: shared_name, else the op's name. */
static void table_resource_name(const vg_op *op, char *buf, size_t len) {
    const char *shared;
    size_t slen;
    vg__op_resource_key(op, "", INT_MAX, buf, len, &shared, &slen);
}

static void *table_create(void *arg, vg_status *st) {
    const vg_op *op = arg;
    vg__table *t = vg__calloc_or_oom(sizeof *t, "lookup table", st);
    char nm[1100];
    if (!t) return NULL;
    pthread_rwlock_init(&t->mu, NULL);
    table_resource_name(op, nm, sizeof nm);
    t->name = vg__strdup(nm);
    t->is_mutable = strcmp(vg_op_type(op), "MutableHashTableV2") == 0;
    t->op_type = t->is_mutable ? "MutableHashTableV2" : "HashTableV2"; /* outlives the graph's strings */
    attr_type(op, "key_dtype", &t->kdt);
    attr_type(op, "value_dtype", &t->vdt);
    if (!t->name || !rehash(t, 16)) {
        VG_OOM(st, "lookup table");
        table_destroy(t);
        return NULL;
    }
    return t;
}

/* ------------------------------------------------------------------------ */
/* table kernels */

static vg_code kernel_table(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    char nm[1100], key[1200];
    table_resource_name(op, nm, sizeof nm);
    snprintf(key, sizeof key, "table:%s", nm);
    void *r = NULL;
    vg_code rc = vg__session_resource(vg__kctx_session(ctx), key, &table_resource_ops, table_create, (void *)op, &r, st);
    if (rc != VG_OK) return rc;
    vg__table *t = r;
    vg_dtype kd = VG_DTYPE_INVALID, vd = VG_DTYPE_INVALID;
    attr_type(op, "key_dtype", &kd);
    attr_type(op, "value_dtype", &vd);
    if (strcmp(t->op_type, vg_op_type(op)) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Table %s is a %s, not a %s (node '%s')", t->name, t->op_type,
                             vg_op_type(op), vg_op_name(op));
    if (kd != t->kdt || vd != t->vdt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Conflicting key/value dtypes %s->%s with %s-%s for table %s",
                             vg_dtype_name(kd), vg_dtype_name(vd), vg_dtype_name(t->kdt), vg_dtype_name(t->vdt),
                             t->name);
    return vg__kctx_output_handle(ctx, t);
}

static vg__table *table_of(vg__kctx *ctx) {
    return vg__kctx_handle_input(ctx, 0, "lookup table");
}

/* LookupInterface::CheckKeyAndValueTypes */
static vg_code check_types(const vg__table *t, const vg_tensor *keys, const vg_tensor *values, vg_status *st) {
    if (vg_tensor_dtype(keys) != t->kdt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Key must be type %s but got %s", vg_dtype_name(t->kdt),
                             vg_dtype_name(vg_tensor_dtype(keys)));
    if (vg_tensor_dtype(values) != t->vdt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Value must be type %s but got %s", vg_dtype_name(t->vdt),
                             vg_dtype_name(vg_tensor_dtype(values)));
    return VG_OK;
}

static vg_code write_value(vg_tensor *o, int64_t i, vg_dtype vdt, const tentry *e, const vg_tensor *def,
                           vg_status *st) {
    void *d = vg_tensor_data(o);
    const void *dd = vg_tensor_data(def);
    switch (vdt) {
    case VG_INT32: ((int32_t *)d)[i] = e ? (int32_t)e->vi : *(const int32_t *)dd; break;
    case VG_INT64: ((int64_t *)d)[i] = e ? e->vi : *(const int64_t *)dd; break;
    case VG_BOOL: ((bool *)d)[i] = e ? e->vi != 0 : *(const bool *)dd; break;
    case VG_FLOAT: ((float *)d)[i] = e ? (float)e->vd : *(const float *)dd; break;
    case VG_DOUBLE: ((double *)d)[i] = e ? e->vd : *(const double *)dd; break;
    case VG_STRING: {
        if (e) return vg_tensor_set_string(o, i, e->vn ? e->vs : "", e->vn, st);
        size_t n = 0;
        const char *s = vg_tensor_string(def, 0, &n);
        return vg_tensor_set_string(o, i, s ? s : "", n, st);
    }
    default: break;
    }
    return VG_OK;
}

static vg_code kernel_find(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__table *t = table_of(ctx);
    if (!t) return st->code;
    const vg_tensor *keys = vg__kctx_input(ctx, 1), *def = vg__kctx_input(ctx, 2);
    char a[160];
    vg_code rc = check_types(t, keys, def, st);
    if (rc) return rc;
    if (vg_tensor_ndims(def) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected shape [] for default value, got %s",
                             vg__tshape_str(def, a, sizeof a));
    vg_tensor *o;
    if ((rc = vg__kctx_alloc_output(ctx, 0, t->vdt, vg_tensor_dims(keys), vg_tensor_ndims(keys), &o))) return rc;
    pthread_rwlock_rdlock(&t->mu);
    if (!t->is_mutable && !t->initialized) {
        pthread_rwlock_unlock(&t->mu);
        return vg_status_set(st, VG_FAILED_PRECONDITION, "Table not initialized.");
    }
    int64_t n = vg_tensor_num_elements(keys);
    for (int64_t i = 0; !rc && i < n; i++) {
        tkey k = key_at(keys, i);
        rc = write_value(o, i, t->vdt, table_get(t, &k), def, st);
    }
    pthread_rwlock_unlock(&t->mu);
    return rc;
}

static bool same_shape(const vg_tensor *a, const vg_tensor *b) {
    return vg_tensor_ndims(a) == vg_tensor_ndims(b) &&
           memcmp(vg_tensor_dims(a), vg_tensor_dims(b), sizeof(int64_t) * (size_t)vg_tensor_ndims(a)) == 0;
}

/* Inserts keys/values (same element count) under the write lock. */
static vg_code insert_all(vg__table *t, const vg_tensor *keys, const vg_tensor *values, bool replace, vg_status *st) {
    int64_t n = vg_tensor_num_elements(keys);
    vg_code rc = VG_OK;
    for (int64_t i = 0; !rc && i < n; i++) {
        tkey k = key_at(keys, i);
        tentry v = {0};
        if (!value_set(&v, t->vdt, values, i)) return VG_OOM(st, "lookup table");
        rc = table_put(t, &k, &v, replace, st);
        vg__free(v.vs);
    }
    return rc;
}

static vg_code kernel_insert(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__table *t = table_of(ctx);
    if (!t) return st->code;
    const vg_tensor *keys = vg__kctx_input(ctx, 1), *values = vg__kctx_input(ctx, 2);
    char a[160], b[160];
    if (!t->is_mutable)
        return vg_status_set(st, VG_UNIMPLEMENTED, "Insert not supported by InitializableLookupTable implementations");
    vg_code rc = check_types(t, keys, values, st);
    if (rc) return rc;
    if (!same_shape(keys, values))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected shape %s for value, got %s",
                             vg__tshape_str(keys, a, sizeof a), vg__tshape_str(values, b, sizeof b));
    pthread_rwlock_wrlock(&t->mu);
    rc = insert_all(t, keys, values, true, st);
    pthread_rwlock_unlock(&t->mu);
    return rc;
}

static vg_code kernel_size(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__table *t = table_of(ctx);
    if (!t) return st->code;
    pthread_rwlock_rdlock(&t->mu);
    int64_t n = t->n;
    pthread_rwlock_unlock(&t->mu);
    return vg__kctx_output_int_scalar(ctx, VG_INT64, n);
}

static vg_code kernel_export(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__table *t = table_of(ctx);
    if (!t) return st->code;
    pthread_rwlock_rdlock(&t->mu);
    int64_t n = t->n;
    vg_tensor *ok, *ov;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, t->kdt, &n, 1, &ok);
    if (!rc) rc = vg__kctx_alloc_output(ctx, 1, t->vdt, &n, 1, &ov);
    for (int64_t i = 0; !rc && i < n; i++) {
        const tentry *e = &t->e[i];
        if (t->kdt == VG_STRING) rc = vg_tensor_set_string(ok, i, e->kn ? e->ks : "", e->kn, st);
        else if (t->kdt == VG_INT32) ((int32_t *)vg_tensor_data(ok))[i] = (int32_t)e->ki;
        else ((int64_t *)vg_tensor_data(ok))[i] = e->ki;
        if (!rc) rc = write_value(ov, i, t->vdt, e, NULL, st);
    }
    pthread_rwlock_unlock(&t->mu);
    return rc;
}

static vg_code not_initializable(vg__kctx *ctx, const vg__table *t) {
    return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "Table %s is not initializable", t->name);
}

static vg_code kernel_init(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__table *t = table_of(ctx);
    if (!t) return st->code;
    if (t->is_mutable) return not_initializable(ctx, t);
    const vg_tensor *keys = vg__kctx_input(ctx, 1), *values = vg__kctx_input(ctx, 2);
    char a[160], b[160];
    vg_code rc = check_types(t, keys, values, st);
    if (rc) return rc;
    if (vg_tensor_ndims(keys) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Keys must be a vector, but received shape%s",
                             vg__tshape_str(keys, a, sizeof a));
    if (!same_shape(keys, values))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Keys and values must have the same size %s vs %s",
                             vg__tshape_str(keys, a, sizeof a), vg__tshape_str(values, b, sizeof b));
    pthread_rwlock_wrlock(&t->mu);
    if (t->initialized) {
        bool same = vg_tensor_num_elements(keys) == t->n;
        pthread_rwlock_unlock(&t->mu);
        return same ? VG_OK
                    : vg_status_set(st, VG_FAILED_PRECONDITION, "Table was already initialized with different data.");
    }
    rc = insert_all(t, keys, values, false, st);
    if (rc) table_clear(t);
    else t->initialized = true;
    pthread_rwlock_unlock(&t->mu);
    return rc;
}

/* LookupTableImportV2: a mutable table's contents are replaced (MutableHashTable::
 * ImportValues); a static table is initialised as by InitializeTableV2. */
static vg_code kernel_import(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__table *t = table_of(ctx);
    if (!t) return st->code;
    if (!t->is_mutable) return kernel_init(ctx);
    const vg_tensor *keys = vg__kctx_input(ctx, 1), *values = vg__kctx_input(ctx, 2);
    char a[160], b[160];
    vg_code rc = check_types(t, keys, values, st);
    if (rc) return rc;
    if (!same_shape(keys, values))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected shape %s for value, got %s",
                             vg__tshape_str(keys, a, sizeof a), vg__tshape_str(values, b, sizeof b));
    pthread_rwlock_wrlock(&t->mu);
    table_clear(t);
    rc = insert_all(t, keys, values, true, st);
    pthread_rwlock_unlock(&t->mu);
    return rc;
}

/* ---- InitializeTableFromTextFileV2 (lookup_util.cc's TextFileLineIterator) ---- */

static bool all_space(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
    return *p == 0;
}

/* Parses token (NUL-terminated) into e for dtype dt; false: not a valid dt. */
static bool parse_field(const char *tok, vg_dtype dt, tentry *e) {
    char *end;
    if (!*tok || all_space(tok)) return false;
    errno = 0;
    switch (dt) {
    case VG_INT32:
    case VG_INT64: {
        long long v = strtoll(tok, &end, 10);
        if (errno || !all_space(end)) return false;
        if (dt == VG_INT32 && (v < INT32_MIN || v > INT32_MAX)) return false;
        e->vi = v;
        return true;
    }
    case VG_FLOAT:
    case VG_DOUBLE: {
        double v = dt == VG_FLOAT ? (double)strtof(tok, &end) : strtod(tok, &end);
        if (!all_space(end)) return false;
        e->vd = v;
        return true;
    }
    default: return false;
    }
}

typedef struct text_cfg {
    const char *file;
    int64_t key_index, value_index, vocab_size;
    char delim;
} text_cfg;

/* Sets *out (vi, vd or vs by dt) from the line number, the whole line or a token. */
static vg_code text_field(vg_dtype dt, int64_t index, const char *line, size_t linelen, char **tok, size_t *tlen,
                          int64_t lineno, tentry *out, vg_status *st) {
    if (index == VG_TEXT_FILE_LINE_NUMBER) {
        out->vi = lineno;
        return VG_OK;
    }
    const char *s = index == VG_TEXT_FILE_WHOLE_LINE ? line : tok[index];
    size_t n = index == VG_TEXT_FILE_WHOLE_LINE ? linelen : tlen[index];
    if (dt == VG_STRING) {
        vg__free(out->vs);
        out->vs = dup_bytes(s, n);
        out->vn = n;
        return out->vs ? VG_OK : VG_OOM(st, "lookup table");
    }
    char buf[128];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf - 1 ? n : sizeof buf - 1), s);
    if (n >= sizeof buf || !parse_field(buf, dt, out))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Field %.*s in line %lld is not a valid %s.",
                             (int)(n > 200 ? 200 : n), s, (long long)lineno, vg_dtype_name(dt));
    return VG_OK;
}

/* Reads one line without its '\n' into (*buf, *cap; NUL-terminated), *len its length,
 * *used the bytes consumed. 1: a line; 0: end of file; -1: longer than max_record_bytes;
 * -2: out of memory. */
static int read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t *used) {
    size_t n = 0, limit = (size_t)vg__io_max_record_bytes();
    int ch = EOF;
    *used = 0;
    while ((ch = getc_unlocked(f)) != EOF) {
        (*used)++;
        if (ch == '\n') break;
        if (n >= limit) return -1;
        if (n + 1 >= *cap) {
            size_t nc = *cap ? *cap * 2 : 256;
            char *nb = vg__realloc(*buf, *cap, nc);
            if (!nb) return -2;
            *buf = nb;
            *cap = nc;
        }
        (*buf)[n++] = (char)ch;
    }
    if (ch == EOF && *used == 0) return 0;
    if (!*buf && !(*buf = vg__malloc(*cap = 16))) return -2;
    (*buf)[n] = 0;
    *len = n;
    return 1;
}

/* Reads the file into t (write lock held; t not initialized). */
static vg_code read_text_file(vg__table *t, const text_cfg *c, FILE *f, vg_status *st) {
    char *line = NULL, **tok = NULL;
    size_t cap = 0, *tlen = NULL;
    int64_t ntok_cap = 0, lineno = 0, pos = 0;
    int64_t need = (c->key_index > c->value_index ? c->key_index : c->value_index) + 1;
    bool split = need > 0;
    vg_code rc = VG_OK;
    int got;
    size_t n = 0, used = 0;
    while ((got = read_line(f, &line, &cap, &n, &used)) > 0) {
        pos += (int64_t)used;
        if (n && line[n - 1] == '\r') n--;
        line[n] = 0;
        if (c->vocab_size != -1 && lineno >= c->vocab_size) break; /* truncated at vocab_size */
        if (n == 0) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid content in %s: empty line found at position %lld.",
                               c->file, (long long)pos);
            break;
        }
        int64_t ntok = 0;
        if (split) { /* str_util::Split: every delimiter splits, empty tokens kept */
            const char *p = line, *end = line + n;
            for (;;) {
                const char *q = memchr(p, c->delim, (size_t)(end - p));
                if (ntok == ntok_cap) {
                    int64_t nc = ntok_cap ? ntok_cap * 2 : 8;
                    char **nt = vg__realloc(tok, sizeof(char *) * (size_t)ntok_cap, sizeof(char *) * (size_t)nc);
                    size_t *nl = nt ? vg__realloc(tlen, sizeof(size_t) * (size_t)ntok_cap, sizeof(size_t) * (size_t)nc)
                                    : NULL;
                    if (nt) tok = nt;
                    if (nl) tlen = nl;
                    if (!nt || !nl) {
                        rc = VG_OOM(st, "lookup table");
                        break;
                    }
                    ntok_cap = nc;
                }
                tok[ntok] = (char *)p;
                tlen[ntok++] = (size_t)((q ? q : end) - p);
                if (!q) break;
                p = q + 1;
            }
            if (rc) break;
            if (ntok < need) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "Invalid number of columns in %s line %lld (%s) : expected at least %lld got %lld",
                                   c->file, (long long)lineno, line, (long long)need, (long long)ntok);
                break;
            }
        }
        tentry ke = {0}, ve = {0};
        rc = text_field(t->kdt, c->key_index, line, n, tok, tlen, lineno, &ke, st);
        if (!rc) rc = text_field(t->vdt, c->value_index, line, n, tok, tlen, lineno, &ve, st);
        if (!rc) {
            tkey k = {ke.vi, ke.vs ? ke.vs : NULL, ke.vn, 0};
            if (t->kdt == VG_STRING && !k.s) k.s = "";
            k.h = t->kdt == VG_STRING ? vg_fingerprint64(k.s, k.n) : mix64((uint64_t)k.i);
            rc = table_put(t, &k, &ve, false, st);
        }
        vg__free(ke.vs);
        vg__free(ve.vs);
        if (rc) break;
        lineno++;
    }
    if (!rc && got == -1)
        rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                           "%s: line %lld is longer than the limit of %lld bytes (max_record_bytes, "
                           "vg_set_decode_limits)", c->file, (long long)lineno, (long long)vg__io_max_record_bytes());
    if (!rc && got == -2) rc = VG_OOM(st, "vocabulary line");
    if (!rc && ferror(f)) rc = vg_status_set(st, VG_DATA_LOSS, "%s: read error", c->file);
    if (!rc && got == 0 && c->vocab_size != -1 && lineno != c->vocab_size)
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid vocab_size in %s: expected %lld but got %lld", c->file,
                           (long long)c->vocab_size, (long long)lineno);
    vg__free(line);
    vg__free(tok);
    vg__free(tlen);
    return rc;
}

static vg_code kernel_init_text(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    vg__table *t = table_of(ctx);
    if (!t) return st->code;
    if (t->is_mutable) return not_initializable(ctx, t);
    const vg_tensor *fn = vg__kctx_input(ctx, 1);
    char a[160];
    if (vg_tensor_dtype(fn) != VG_STRING || vg_tensor_ndims(fn) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "filename should be a single string, but got %s",
                             vg__tshape_str(fn, a, sizeof a));
    size_t fl = 0;
    const char *fs = vg_tensor_string(fn, 0, &fl);
    if (!fs || fl == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "filename cannot be empty.");
    text_cfg c = {NULL, VG_TEXT_FILE_WHOLE_LINE, VG_TEXT_FILE_LINE_NUMBER, -1, '\t'};
    vg_op_attr_int(op, "key_index", &c.key_index);
    vg_op_attr_int(op, "value_index", &c.value_index);
    vg_op_attr_int(op, "vocab_size", &c.vocab_size);
    const char *d;
    size_t dl = 0;
    if (vg_op_attr_string(op, "delimiter", &d, &dl)) {
        if (dl != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "delimiter should be only 1 char");
        c.delim = d[0];
    }
    if (c.key_index == VG_TEXT_FILE_LINE_NUMBER && t->kdt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Key index for line number requires table key dtype of int64, got %s",
                             vg_dtype_name(t->kdt));
    if (c.value_index == VG_TEXT_FILE_LINE_NUMBER && t->vdt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Value index for line number requires table value dtype of int64, got %s",
                             vg_dtype_name(t->vdt));
    if (c.value_index == VG_TEXT_FILE_WHOLE_LINE && t->vdt != VG_STRING && !is_int_key(t->vdt))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Value index for whole line requires table value dtype of integer or string, got %s",
                             vg_dtype_name(t->vdt));
    if (c.key_index < -2 || c.value_index < -2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid key_index %lld / value_index %lld",
                             (long long)c.key_index, (long long)c.value_index);
    char *path = dup_bytes(fs, fl);
    if (!path) return VG_OOM(st, "file name");
    c.file = path;
    FILE *f = vg__io_fopen_regular(path, st); /* NOT_FOUND; a FIFO or device: FAILED_PRECONDITION */
    vg_code rc = f ? VG_OK : st->code;
    if (f) {
        pthread_rwlock_wrlock(&t->mu);
        if (!t->initialized) { /* an initialized table: TF ignores the repeat */
            rc = read_text_file(t, &c, f, st);
            if (rc) table_clear(t);
            else t->initialized = true;
        }
        pthread_rwlock_unlock(&t->mu);
        fclose(f);
    }
    vg__free(path);
    return rc;
}

/* ---- shape functions ---------------------------------------------------- */

static vg_code want_handle(vg_op *op, vg_status *st) { return vg__op_need_handle(op, "lookup table", st); }

/* The table op behind a handle (NULL when it comes from elsewhere). */
static const vg_op *table_producer(const vg_op *op) {
    vg_output h = vg_op_input(op, 0);
    if (!h.op) return NULL;
    const char *t = vg_op_type(h.op);
    return strcmp(t, "HashTableV2") == 0 || strcmp(t, "MutableHashTableV2") == 0 ? h.op : NULL;
}

/* Graph-time dtype check of keys (input ki) and values (input vi) against the table. */
static vg_code check_graph_types(vg_op *op, int ki, int vi, vg_status *st) {
    vg_code rc = want_handle(op, st);
    if (rc) return rc;
    const vg_op *p = table_producer(op);
    if (!p) return VG_OK;
    vg_dtype kd = VG_DTYPE_INVALID, vd = VG_DTYPE_INVALID;
    attr_type(p, "key_dtype", &kd);
    attr_type(p, "value_dtype", &vd);
    if (ki >= 0 && vg__op_input_dtype(op, ki) != kd)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Key must be type %s but got %s", vg_dtype_name(kd),
                             vg_dtype_name(vg__op_input_dtype(op, ki)));
    if (vi >= 0 && vg__op_input_dtype(op, vi) != vd)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Value must be type %s but got %s", vg_dtype_name(vd),
                             vg_dtype_name(vg__op_input_dtype(op, vi)));
    return VG_OK;
}

static vg_code shape_table(vg_op *op, vg_status *st) {
    vg_dtype kd = VG_DTYPE_INVALID, vd = VG_DTYPE_INVALID;
    if (!attr_type(op, "key_dtype", &kd) || !key_dtype_ok(kd))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s '%s': key_dtype %s is not supported (string, int32, int64)",
                             vg_op_type(op), vg_op_name(op), vg_dtype_name(kd));
    if (!attr_type(op, "value_dtype", &vd) || !value_dtype_ok(vd))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "%s '%s': value_dtype %s is not supported (string, int32, int64, float, double, bool)",
                             vg_op_type(op), vg_op_name(op), vg_dtype_name(vd));
    vg__op_set_default_attr_string(op, "container", "");
    vg__op_set_default_attr_string(op, "shared_name", "");
    vg__op_set_default_attr_bool(op, "use_node_name_sharing", false);
    return vg__op_set_single_output(op, VG_RESOURCE, vg_shape_make(NULL, 0));
}

/* Checks the key / value inputs 1 and 2 against the table's types and sets the type
 * attributes kattr / vattr to their dtypes (defaults). */
static vg_code table_kv_types(vg_op *op, const char *kattr, const char *vattr, vg_status *st) {
    vg_code rc = check_graph_types(op, 1, 2, st);
    if (rc) return rc;
    vg__op_set_default_attr_type(op, kattr, vg__op_input_dtype(op, 1));
    vg__op_set_default_attr_type(op, vattr, vg__op_input_dtype(op, 2));
    return VG_OK;
}

static vg_code shape_find(vg_op *op, vg_status *st) {
    vg_code rc = table_kv_types(op, "Tin", "Tout", st);
    if (rc) return rc;
    vg_shape d = vg__op_input_shape(op, 2);
    if (d.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "default_value must be a scalar (tables hold scalar values)");
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 2), vg__op_input_shape(op, 1));
}

static vg_code shape_insert(vg_op *op, vg_status *st) {
    return vg__shape_none_after(op, table_kv_types(op, "Tin", "Tout", st));
}

static vg_code shape_init(vg_op *op, vg_status *st) {
    return vg__shape_none_after(op, table_kv_types(op, "Tkey", "Tval", st));
}

static vg_code shape_init_text(vg_op *op, vg_status *st) {
    vg_code rc = want_handle(op, st);
    if (rc) return rc;
    if (vg__op_input_dtype(op, 1) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "filename must be a string, got %s",
                             vg_dtype_name(vg__op_input_dtype(op, 1)));
    vg_shape s = vg__op_input_shape(op, 1);
    if (s.ndims > 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "filename should be a single string");
    vg__op_set_default_attr_int(op, "vocab_size", -1);
    vg__op_set_default_attr_string(op, "delimiter", "\t");
    return vg__op_set_no_outputs(op);
}

static vg_code shape_size(vg_op *op, vg_status *st) { return vg__shape_handle_scalar(op, "lookup table", VG_INT64, st); }

static vg_code shape_export(vg_op *op, vg_status *st) {
    vg_code rc = want_handle(op, st);
    if (rc) return rc;
    vg_dtype kd = VG_DTYPE_INVALID, vd = VG_DTYPE_INVALID;
    const vg_op *p = table_producer(op);
    if (!attr_type(op, "Tkeys", &kd) && p) attr_type(p, "key_dtype", &kd);
    if (!attr_type(op, "Tvalues", &vd) && p) attr_type(p, "value_dtype", &vd);
    if (!key_dtype_ok(kd) || !value_dtype_ok(vd))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "LookupTableExportV2: set Tkeys and Tvalues");
    vg__op_set_default_attr_type(op, "Tkeys", kd);
    vg__op_set_default_attr_type(op, "Tvalues", vd);
    vg__op_set_num_outputs(op, 2);
    int64_t unk = -1;
    vg__op_set_output(op, 0, kd, vg_shape_make(&unk, 1));
    vg__op_set_output(op, 1, vd, vg_shape_make(&unk, 1));
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* string ops */

static vg_code want_string(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input 'input' of '%s' Op (%s) has type %s that does not match "
                             "expected type of string.", vg_op_type(op), vg_op_name(op),
                             vg_dtype_name(vg__op_input_dtype(op, 0)));
    return VG_OK;
}

static vg_code check_buckets(const vg_op *op, int64_t *nb, vg_status *st) {
    if (!vg_op_attr_int(op, "num_buckets", nb) || *nb < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s '%s': num_buckets must be >= 1", vg_op_type(op),
                             vg_op_name(op));
    return VG_OK;
}

static vg_code check_strong_key(const vg_op *op, uint64_t key[2], vg_status *st) {
    const int64_t *k;
    int n = 0;
    if (!vg_op_attr_int_list(op, "key", &k, &n) || n != 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Key must have 2 elements");
    key[0] = (uint64_t)k[0];
    key[1] = (uint64_t)k[1];
    return VG_OK;
}

static vg_code shape_hash_bucket(vg_op *op, vg_status *st) {
    int64_t nb;
    uint64_t key[2];
    vg_code rc = want_string(op, st);
    if (!rc) rc = check_buckets(op, &nb, st);
    if (!rc && strcmp(vg_op_type(op), "StringToHashBucketStrong") == 0) rc = check_strong_key(op, key, st);
    if (rc) return rc;
    return vg__op_set_single_output(op, VG_INT64, vg__op_input_shape(op, 0));
}

static vg_code kernel_hash_bucket(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    int64_t nb;
    uint64_t key[2] = {0, 0};
    bool strong = strcmp(vg_op_type(op), "StringToHashBucketStrong") == 0;
    vg_code rc = check_buckets(op, &nb, st);
    if (!rc && strong) rc = check_strong_key(op, key, st);
    if (rc) return rc;
    vg_tensor *o;
    if ((rc = vg__kctx_alloc_output(ctx, 0, VG_INT64, vg_tensor_dims(in), vg_tensor_ndims(in), &o))) return rc;
    int64_t n = vg_tensor_num_elements(in), *out = vg_tensor_data(o);
    for (int64_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *s = vg_tensor_string(in, i, &len);
        if (!s) s = "";
        uint64_t h = strong ? siphash24(key[0], key[1], (const uint8_t *)s, len) : vg_fingerprint64(s, len);
        out[i] = (int64_t)(h % (uint64_t)nb);
    }
    return VG_OK;
}

/* AsString's printf format (as_string_op.cc) into fmt; INVALID_ARGUMENT for attrs TF refuses. */
static vg_code as_string_format(const vg_op *op, vg_dtype dt, char *fmt, size_t len, vg_status *st) {
    int64_t precision = -1, width = -1;
    bool scientific = false, shortest = false;
    const char *fill = "";
    size_t fill_len = 0;
    vg_op_attr_int(op, "precision", &precision);
    vg_op_attr_int(op, "width", &width);
    vg_op_attr_bool(op, "scientific", &scientific);
    vg_op_attr_bool(op, "shortest", &shortest);
    if (!vg_op_attr_string(op, "fill", &fill, &fill_len)) fill_len = 0;
    if (scientific && shortest)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Cannot select both scientific and shortest notation");
    if (fill_len > 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "Fill string must be one or fewer characters");
    if (fill_len == 1 && !strchr("-+ #0", fill[0]))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Fill character '%c' is not supported (one of \"-+ #0\")", fill[0]);
    bool is_float = dt == VG_FLOAT || dt == VG_DOUBLE;
    if (!is_float && dt != VG_INT32 && dt != VG_INT64 && dt != VG_BOOL)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Type not supported: %s", vg_dtype_name(dt));
    if (!is_float && (precision > -1 || scientific || shortest))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Cannot select precision, scientific or shortest for %s",
                             vg_dtype_name(dt));
    if (dt == VG_BOOL && (width > -1 || fill_len))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Cannot select width or fill for bool");
    int n = snprintf(fmt, len, "%%");
    if (width > -1) n += snprintf(fmt + n, len - (size_t)n, "%.*s%lld", (int)fill_len, fill, (long long)width);
    if (precision > -1) n += snprintf(fmt + n, len - (size_t)n, ".%lld", (long long)precision);
    snprintf(fmt + n, len - (size_t)n, "%s",
             dt == VG_INT32 ? "d" : dt == VG_INT64 ? "lld" : shortest ? "g" : scientific ? "e" : "f");
    return VG_OK;
}

static vg_code shape_as_string(vg_op *op, vg_status *st) {
    char fmt[64];
    vg_code rc = as_string_format(op, vg__op_input_dtype(op, 0), fmt, sizeof fmt, st);
    if (rc) return rc;
    vg__op_set_default_attr_type(op, "T", vg__op_input_dtype(op, 0));
    return vg__op_set_single_output(op, VG_STRING, vg__op_input_shape(op, 0));
}

static vg_code kernel_as_string(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    vg_dtype dt = vg_tensor_dtype(in);
    char fmt[64], buf[512];
    vg_code rc = as_string_format(vg__kctx_op(ctx), dt, fmt, sizeof fmt, st);
    if (rc) return rc;
    vg_tensor *o;
    if ((rc = vg__kctx_alloc_output(ctx, 0, VG_STRING, vg_tensor_dims(in), vg_tensor_ndims(in), &o))) return rc;
    int64_t n = vg_tensor_num_elements(in);
    const void *d = vg_tensor_data(in);
    for (int64_t i = 0; !rc && i < n; i++) {
        int len;
        switch (dt) {
        case VG_INT32: len = snprintf(buf, sizeof buf, fmt, ((const int32_t *)d)[i]); break;
        case VG_INT64: len = snprintf(buf, sizeof buf, fmt, (long long)((const int64_t *)d)[i]); break;
        case VG_FLOAT: len = snprintf(buf, sizeof buf, fmt, (double)((const float *)d)[i]); break;
        case VG_DOUBLE: len = snprintf(buf, sizeof buf, fmt, ((const double *)d)[i]); break;
        default: len = snprintf(buf, sizeof buf, "%s", ((const bool *)d)[i] ? "true" : "false"); break;
        }
        if (len < 0) len = 0;
        if ((size_t)len >= sizeof buf) len = (int)sizeof buf - 1;
        rc = vg_tensor_set_string(o, i, buf, (size_t)len, st);
    }
    return rc;
}

/* ---- Equal / NotEqual on strings (called from math_cwise_ops.c) ---------- */

VG_HIDDEN vg_code vg__string_cmp_shape(vg_op *op, vg_status *st);
VG_HIDDEN vg_code vg__string_cmp_kernel(vg__kctx *ctx, bool not_equal);

vg_code vg__string_cmp_shape(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 1) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'y' of '%s' Op has type %s that does not match type string of argument 'x'.",
                             vg_op_type(op), vg_dtype_name(vg__op_input_dtype(op, 1)));
    vg_shape sa = vg__op_input_shape(op, 0), sb = vg__op_input_shape(op, 1), so;
    vg_code rc = vg__shape_broadcast(&sa, &sb, &so, st);
    if (rc) return rc;
    vg__op_set_default_attr_type(op, "T", VG_STRING);
    return vg__op_set_single_output(op, VG_BOOL, so);
}

vg_code vg__string_cmp_kernel(vg__kctx *ctx, bool not_equal) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *a = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1);
    if (vg_tensor_dtype(b) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "inputs have different dtypes: string vs. %s",
                             vg_dtype_name(vg_tensor_dtype(b)));
    int na = vg_tensor_ndims(a), nb = vg_tensor_ndims(b), nd = na > nb ? na : nb;
    int64_t od[VG_MAX_DIMS], sa[VG_MAX_DIMS], sb[VG_MAX_DIMS];
    int64_t stra = 1, strb = 1;
    for (int d = nd - 1; d >= 0; d--) { /* numpy broadcasting, right-aligned */
        int ia = d - (nd - na), ib = d - (nd - nb);
        int64_t da = ia >= 0 ? vg_tensor_dim(a, ia) : 1, db = ib >= 0 ? vg_tensor_dim(b, ib) : 1;
        if (da != db && da != 1 && db != 1) {
            char x[160], y[160];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                                 vg__tshape_str(a, x, sizeof x), vg__tshape_str(b, y, sizeof y));
        }
        od[d] = da == 1 ? db : da;
        sa[d] = da == 1 ? 0 : stra;
        sb[d] = db == 1 ? 0 : strb;
        stra *= da;
        strb *= db;
    }
    vg_tensor *o;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, VG_BOOL, od, nd, &o);
    if (rc) return rc;
    int64_t n = vg_tensor_num_elements(o);
    bool *out = vg_tensor_data(o);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, ia = 0, ib = 0;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t x = r % od[d];
            r /= od[d];
            ia += x * sa[d];
            ib += x * sb[d];
        }
        size_t la = 0, lb = 0;
        const char *pa = vg_tensor_string(a, ia, &la), *pb = vg_tensor_string(b, ib, &lb);
        bool eq = la == lb && (la == 0 || memcmp(pa, pb, la) == 0);
        out[i] = eq != not_equal;
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* builders (lookup_ops.py) */

static vg_output no_output(void) { return (vg_output){NULL, 0}; }

static vg_lookup_table bad_table(vg_graph *g, const char *fmt, const char *arg) {
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, fmt, arg);
    vg_lookup_table t;
    memset(&t, 0, sizeof t);
    return t;
}

/* What both kinds of initializer hold: the table's key / value dtypes, the vocabulary
 * size (-1: all) and the op's name; the rest zero. */
static vg_table_initializer initializer_base(vg_dtype key_dtype, vg_dtype value_dtype, int64_t vocab_size,
                                             const char *name) {
    return (vg_table_initializer){.key_dtype = key_dtype, .value_dtype = value_dtype, .vocab_size = vocab_size,
                                  .name = name};
}

vg_table_initializer vg_key_value_tensor_initializer(vg_output keys, vg_output values, const char *name) {
    vg_table_initializer i = initializer_base(keys.op ? vg_output_dtype(keys) : VG_DTYPE_INVALID,
                                              values.op ? vg_output_dtype(values) : VG_DTYPE_INVALID, -1, name);
    i.keys = keys;
    i.values = values;
    return i;
}

vg_table_initializer vg_text_file_initializer(const char *filename, vg_dtype key_dtype, int64_t key_index,
                                              vg_dtype value_dtype, int64_t value_index, int64_t vocab_size,
                                              char delimiter, const char *name) {
    vg_table_initializer i = initializer_base(key_dtype, value_dtype, vocab_size > 0 ? vocab_size : -1, name);
    i.text_file = true;
    i.filename = filename;
    i.key_index = key_index;
    i.value_index = value_index;
    i.delimiter = delimiter ? delimiter : '\t';
    return i;
}

/* The last component of an op name. */
static const char *base_name(const char *name) {
    const char *s = strrchr(name, '/');
    return s ? s + 1 : name;
}

/* Builds the initializer's op for the table (TF's initializer.initialize(table)): an op
 * named as its own scope ("key_value_init", "text_file_init"), added to
 * "table_initializer". */
static vg_op *build_init_op(vg_graph *g, const vg_table_initializer *init, vg_output handle) {
    char full[1100], scoped[1104];
    const char *base = init->name ? init->name : init->text_file ? "text_file_init" : "key_value_init";
    vg_graph_unique_name(g, base, full, sizeof full);
    vg_op_builder *b;
    if (init->text_file) {
        snprintf(scoped, sizeof scoped, "%s/", full);
        vg_graph_push_scope(g, scoped);
        vg_output fn = vg_const_string(g, init->filename, "asset_filepath");
        vg_graph_pop_scope(g);
        if (fn.op) vg_graph_add_to_collection(g, "asset_filepaths", fn);
        b = vg_op_builder_new(g, "InitializeTableFromTextFileV2", base_name(full));
        vg_op_builder_add_input(b, handle);
        vg_op_builder_add_input(b, fn);
        vg_op_builder_set_attr_int(b, "key_index", init->key_index);
        vg_op_builder_set_attr_int(b, "value_index", init->value_index);
        vg_op_builder_set_attr_int(b, "vocab_size", init->vocab_size > 0 ? init->vocab_size : -1);
        char d = init->delimiter ? init->delimiter : '\t';
        vg_op_builder_set_attr_string(b, "delimiter", &d, 1);
    } else {
        b = vg_op_builder_new(g, "InitializeTableV2", base_name(full));
        vg_op_builder_add_input(b, handle);
        vg_op_builder_add_input(b, init->keys);
        vg_op_builder_add_input(b, init->values);
    }
    vg_op *op = vg_op_builder_finish(b);
    if (op) vg_graph_add_to_collection(g, VG_TABLE_INITIALIZERS, vg_out(op, 0));
    return op;
}

vg_lookup_table vg_static_hash_table(vg_graph *g, const vg_table_initializer *init, vg_output default_value,
                                     const char *name) {
    if (!init) return bad_table(g, "%s: no initializer", "HashTable");
    if (!init->text_file && (!init->keys.op || !init->values.op))
        return bad_table(g, "%s: the key-value initializer has no keys or values", "HashTable");
    if (init->text_file && (!init->filename || !*init->filename))
        return bad_table(g, "%s: the text-file initializer needs a file name", "HashTable");
    if (!default_value.op) return bad_table(g, "%s: no default_value", "HashTable");
    if (vg_output_dtype(default_value) != init->value_dtype) {
        char m[200];
        snprintf(m, sizeof m, "HashTable: default_value is %s, the initializer's values %s",
                 vg_dtype_name(vg_output_dtype(default_value)), vg_dtype_name(init->value_dtype));
        return bad_table(g, "%s", m);
    }
    vg_op_builder *b = vg_op_builder_new(g, "HashTableV2", name ? name : "hash_table");
    vg_op_builder_set_attr_type(b, "key_dtype", init->key_dtype);
    vg_op_builder_set_attr_type(b, "value_dtype", init->value_dtype);
    if (init->text_file) { /* TextFileInitializer._shared_name */
        char sn[1200];
        if (init->vocab_size > 0)
            snprintf(sn, sizeof sn, "hash_table_%s_%lld_%lld_%lld", init->filename, (long long)init->vocab_size,
                     (long long)init->key_index, (long long)init->value_index);
        else
            snprintf(sn, sizeof sn, "hash_table_%s_%lld_%lld", init->filename, (long long)init->key_index,
                     (long long)init->value_index);
        vg_op_builder_set_attr_string(b, "shared_name", sn, strlen(sn));
    }
    vg_op *top = vg_op_builder_finish(b);
    vg_lookup_table t;
    memset(&t, 0, sizeof t);
    if (!top) return t;
    t.handle = vg_out(top, 0);
    t.default_value = default_value;
    t.key_dtype = init->key_dtype;
    t.value_dtype = init->value_dtype;
    t.name = vg_op_name(top);
    t.initializer = build_init_op(g, init, t.handle);
    return t;
}

vg_lookup_table vg_hash_table(vg_graph *g, const vg_table_initializer *init, vg_output default_value,
                              const char *name) {
    return vg_static_hash_table(g, init, default_value, name);
}

vg_lookup_table vg_mutable_hash_table(vg_graph *g, vg_dtype key_dtype, vg_dtype value_dtype, vg_output default_value,
                                      const char *name) {
    if (!default_value.op || vg_output_dtype(default_value) != value_dtype)
        return bad_table(g, "%s: default_value must be a tensor of the value dtype", "MutableHashTable");
    vg_op_builder *b = vg_op_builder_new(g, "MutableHashTableV2", name ? name : "MutableHashTable");
    vg_op_builder_set_attr_type(b, "key_dtype", key_dtype);
    vg_op_builder_set_attr_type(b, "value_dtype", value_dtype);
    vg_op_builder_set_attr_bool(b, "use_node_name_sharing", true);
    vg_op *top = vg_op_builder_finish(b);
    vg_lookup_table t;
    memset(&t, 0, sizeof t);
    if (!top) return t;
    t.handle = vg_out(top, 0);
    t.default_value = default_value;
    t.key_dtype = key_dtype;
    t.value_dtype = value_dtype;
    t.name = vg_op_name(top);
    return t;
}

static vg_dtype table_key_dtype(vg_dtype kd) { return kd == VG_DTYPE_INVALID ? VG_STRING : is_int_key(kd) ? VG_INT64 : kd; }

vg_lookup_table vg_index_table_from_file(vg_graph *g, const char *vocabulary_file, const vg_index_table_options *opts,
                                         const char *name) {
    vg_index_table_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if (!vocabulary_file || !*vocabulary_file)
        return bad_table(g, "%s: vocabulary_file must be specified and must not be empty.", "index_table_from_file");
    if (o.num_oov_buckets < 0)
        return bad_table(g, "%s: num_oov_buckets must be greater or equal than 0.", "index_table_from_file");
    if (o.vocab_size < 0)
        return bad_table(g, "vocab_size must be greater than 0, for vocabulary_file: %s.", vocabulary_file);
    vg_dtype kd = o.key_dtype ? o.key_dtype : VG_STRING;
    if (kd != VG_STRING && !is_int_key(kd))
        return bad_table(g, "%s: Dtype for `keys` should be either integer or string.", "index_table_from_file");
    vg_graph_push_scope(g, name ? name : "string_to_index");
    vg_graph_push_scope(g, "hash_table");
    vg_table_initializer init = vg_text_file_initializer(
        vocabulary_file, table_key_dtype(kd), o.has_columns ? o.key_column_index : VG_TEXT_FILE_WHOLE_LINE, VG_INT64,
        o.has_columns ? o.value_column_index : VG_TEXT_FILE_LINE_NUMBER, o.vocab_size, o.delimiter, "table_init");
    vg_output def = vg_const_i64(g, o.has_default_value ? o.default_value : -1, "Const");
    vg_lookup_table t = vg_static_hash_table(g, &init, def, NULL);
    vg_graph_pop_scope(g);
    t.num_oov_buckets = o.num_oov_buckets;
    t.key_dtype = kd;
    vg_graph_pop_scope(g);
    return t;
}

vg_lookup_table vg_index_table_from_tensor(vg_graph *g, vg_output vocabulary_list, const vg_index_table_options *opts,
                                           const char *name) {
    vg_index_table_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if (!vocabulary_list.op) return bad_table(g, "%s: vocabulary_list must be specified.", "index_table_from_tensor");
    if (o.num_oov_buckets < 0)
        return bad_table(g, "%s: num_oov_buckets must be greater or equal than 0.", "index_table_from_tensor");
    vg_dtype kd = vg_output_dtype(vocabulary_list);
    if (kd != VG_STRING && !is_int_key(kd))
        return bad_table(g, "%s: Only integer and string keys are supported.", "index_table_from_tensor");
    vg_graph_push_scope(g, name ? name : "string_to_index");
    vg_output keys = vocabulary_list;
    vg_output num = vg_size(g, keys, "Size");
    vg_output values = vg_cast(g, vg_range(g, vg_const_i32(g, 0, "range/start"), num, vg_const_i32(g, 1, "range/delta"),
                                           "range"),
                               VG_INT64, "ToInt64");
    vg_graph_push_scope(g, "hash_table");
    if (is_int_key(kd) && kd != VG_INT64) keys = vg_cast(g, keys, VG_INT64, "ToInt64");
    vg_table_initializer init = vg_key_value_tensor_initializer(keys, values, "table_init");
    vg_output def = vg_const_i64(g, o.has_default_value ? o.default_value : -1, "Const");
    vg_lookup_table t = vg_static_hash_table(g, &init, def, NULL);
    vg_graph_pop_scope(g);
    t.num_oov_buckets = o.num_oov_buckets;
    t.key_dtype = kd;
    vg_graph_pop_scope(g);
    return t;
}

vg_lookup_table vg_index_to_string_table_from_file(vg_graph *g, const char *vocabulary_file,
                                                   const vg_index_to_string_options *opts, const char *name) {
    vg_index_to_string_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if (!vocabulary_file || !*vocabulary_file)
        return bad_table(g, "%s: vocabulary_file must be specified and must not be empty.",
                         "index_to_string_table_from_file");
    if (o.vocab_size < 0)
        return bad_table(g, "vocab_size must be greater than 0, for vocabulary_file: %s.", vocabulary_file);
    vg_graph_push_scope(g, name ? name : "index_to_string");
    vg_table_initializer init = vg_text_file_initializer(
        vocabulary_file, VG_INT64, o.has_columns ? o.key_column_index : VG_TEXT_FILE_LINE_NUMBER, VG_STRING,
        o.has_columns ? o.value_column_index : VG_TEXT_FILE_WHOLE_LINE, o.vocab_size, o.delimiter, "table_init");
    vg_output def = vg_const_string(g, o.default_value ? o.default_value : "UNK", "Const");
    vg_lookup_table t = vg_static_hash_table(g, &init, def, NULL);
    vg_graph_pop_scope(g);
    return t;
}

vg_lookup_table vg_index_to_string_table_from_tensor(vg_graph *g, vg_output vocabulary_list, const char *default_value,
                                                     const char *name) {
    if (!vocabulary_list.op)
        return bad_table(g, "%s: vocabulary_list must be specified.", "index_to_string_table_from_tensor");
    vg_graph_push_scope(g, name ? name : "index_to_string");
    vg_output num = vg_size(g, vocabulary_list, "Size");
    vg_output keys = vg_cast(g, vg_range(g, vg_const_i32(g, 0, "range/start"), num, vg_const_i32(g, 1, "range/delta"),
                                         "range"),
                             VG_INT64, "ToInt64");
    vg_table_initializer init = vg_key_value_tensor_initializer(keys, vocabulary_list, "table_init");
    vg_output def = vg_const_string(g, default_value ? default_value : "UNK", "Const");
    vg_lookup_table t = vg_static_hash_table(g, &init, def, NULL);
    vg_graph_pop_scope(g);
    return t;
}

vg_op *vg_tables_initializer(vg_graph *g, const char *name) {
    int n = 0;
    const vg_output *items = vg_graph_collection(g, VG_TABLE_INITIALIZERS, &n);
    if (n == 0) return vg_no_op(g, name ? name : "init_all_tables");
    vg_op **ops = vg__malloc(sizeof(vg_op *) * (size_t)n);
    if (!ops) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "tables_initializer: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) ops[i] = items[i].op;
    vg_op *op = vg_group(g, ops, n, name ? name : "init_all_tables");
    vg__free(ops);
    return op;
}

static bool table_ok(vg_graph *g, const vg_lookup_table *t, const char *what) {
    if (!t || !t->handle.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: not a table (its construction failed?)", what);
        return false;
    }
    return true;
}

static vg_output find_op(vg_graph *g, const vg_lookup_table *t, vg_output keys) {
    return vg__build_simple(g, "LookupTableFindV2", "LookupTableFindV2", NULL,
                            (vg_output[]){t->handle, keys, t->default_value}, 3);
}

static vg_output size_op(vg_graph *g, const vg_lookup_table *t) {
    return vg__build_simple(g, "LookupTableSizeV2", "LookupTableSizeV2", NULL, (vg_output[]){t->handle}, 1);
}

vg_output vg_lookup_table_lookup(vg_graph *g, const vg_lookup_table *t, vg_output keys, const char *name) {
    if (!table_ok(g, t, "lookup")) return no_output();
    if (!keys.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "lookup: no keys");
        return no_output();
    }
    vg_dtype kd = vg_output_dtype(keys);
    if (kd != t->key_dtype) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Dtype of argument `keys` must be %s, received: %s",
                           vg_dtype_name(t->key_dtype), vg_dtype_name(kd));
        return no_output();
    }
    char sc[1100];
    snprintf(sc, sizeof sc, "%s_Lookup", base_name(t->name));
    vg_graph_push_scope(g, name ? name : sc);
    vg_output values = keys;
    vg_dtype tkd = kd;
    vg_op_attr_type_(t->handle.op, "key_dtype", &tkd);
    if (is_int_key(kd) && kd != tkd) values = vg_cast(g, keys, tkd, "ToInt64"); /* int32 keys, int64 table */
    vg_output ids;
    if (t->num_oov_buckets <= 0) {
        ids = find_op(g, t, values);
    } else { /* IdTableWithHashBuckets.lookup */
        vg_output str = values;
        if (vg_output_dtype(values) != VG_STRING) str = vg_as_string(g, values, NULL, "AsString");
        vg_output buckets = vg_string_to_hash_bucket_fast(g, str, t->num_oov_buckets, "hash_bucket");
        snprintf(sc, sizeof sc, "%s_Lookup", base_name(t->name));
        vg_graph_push_scope(g, sc);
        ids = find_op(g, t, values);
        vg_graph_pop_scope(g);
        snprintf(sc, sizeof sc, "%s_Size", base_name(t->name));
        vg_graph_push_scope(g, sc);
        vg_output size = size_op(g, t);
        vg_graph_pop_scope(g);
        buckets = vg_add(g, buckets, size, "Add");
        vg_output non_default = vg_not_equal(g, ids, t->default_value, "NotEqual");
        ids = vg_select(g, non_default, ids, buckets, "SelectV2");
    }
    vg_graph_pop_scope(g);
    return ids;
}

vg_output vg_lookup_table_size(vg_graph *g, const vg_lookup_table *t, const char *name) {
    if (!table_ok(g, t, "size")) return no_output();
    char sc[1100];
    snprintf(sc, sizeof sc, "%s_Size", base_name(t->name));
    vg_graph_push_scope(g, name ? name : sc);
    vg_output s = size_op(g, t);
    if (t->num_oov_buckets > 0) s = vg_add(g, s, vg_const_i64(g, t->num_oov_buckets, "Const"), "add");
    vg_graph_pop_scope(g);
    return s;
}

vg_op *vg_lookup_table_insert(vg_graph *g, const vg_lookup_table *t, vg_output keys, vg_output values,
                              const char *name) {
    if (!table_ok(g, t, "insert")) return NULL;
    char sc[1100];
    snprintf(sc, sizeof sc, "%s_lookup_table_insert", base_name(t->name));
    vg_graph_push_scope(g, name ? name : sc);
    vg_op_builder *b = vg__builder_with_inputs(g, "LookupTableInsertV2", "LookupTableInsertV2", NULL,
                                               (vg_output[]){t->handle, keys, values}, 3);
    vg_op *op = vg_op_builder_finish(b);
    vg_graph_pop_scope(g);
    return op;
}

vg_op *vg_lookup_table_export(vg_graph *g, const vg_lookup_table *t, vg_output out[2], const char *name) {
    if (!table_ok(g, t, "export")) return NULL;
    char sc[1100];
    snprintf(sc, sizeof sc, "%s_lookup_table_export_values", base_name(t->name));
    vg_graph_push_scope(g, name ? name : sc);
    vg_op_builder *b =
        vg__builder_with_inputs(g, "LookupTableExportV2", "LookupTableExportV2", NULL, (vg_output[]){t->handle}, 1);
    vg_dtype kd = t->key_dtype, vd = t->value_dtype;
    if (t->handle.op) { /* the table's own dtypes (an index table may look up int32 keys) */
        vg_op_attr_type_(t->handle.op, "key_dtype", &kd);
        vg_op_attr_type_(t->handle.op, "value_dtype", &vd);
    }
    vg_op_builder_set_attr_type(b, "Tkeys", kd);
    vg_op_builder_set_attr_type(b, "Tvalues", vd);
    vg_op *op = vg_op_builder_finish(b);
    vg_graph_pop_scope(g);
    if (out) {
        out[0] = vg_out(op, 0);
        out[1] = vg_out(op, 1);
    }
    return op;
}

vg_output vg_string_to_hash_bucket_fast(vg_graph *g, vg_output input, int64_t num_buckets, const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "StringToHashBucketFast", name, "StringToHashBucketFast", (vg_output[]){input}, 1);
    vg_op_builder_set_attr_int(b, "num_buckets", num_buckets);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_string_to_hash_bucket_strong(vg_graph *g, vg_output input, int64_t num_buckets, const uint64_t key[2],
                                          const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "StringToHashBucketStrong", name, "StringToHashBucketStrong",
                                               (vg_output[]){input}, 1);
    vg_op_builder_set_attr_int(b, "num_buckets", num_buckets);
    int64_t k[2] = {key ? (int64_t)key[0] : 0, key ? (int64_t)key[1] : 0};
    vg_op_builder_set_attr_int_list(b, "key", k, key ? 2 : 0);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_as_string(vg_graph *g, vg_output input, const vg_as_string_options *opts, const char *name) {
    vg_as_string_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    vg_op_builder *b = vg__builder_with_inputs(g, "AsString", name, "AsString", (vg_output[]){input}, 1);
    vg_op_builder_set_attr_int(b, "precision", o.has_precision ? o.precision : -1);
    vg_op_builder_set_attr_bool(b, "scientific", o.scientific);
    vg_op_builder_set_attr_bool(b, "shortest", o.shortest);
    vg_op_builder_set_attr_int(b, "width", o.has_width ? o.width : -1);
    vg_op_builder_set_attr_string(b, "fill", &o.fill, o.fill ? 1 : 0);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_lookup[] = {
    {"HashTableV2", 0, 0, TABLE_FLAGS, 0, shape_table, kernel_table, NULL},
    {"MutableHashTableV2", 0, 0, TABLE_FLAGS, 0, shape_table, kernel_table, NULL},
    {"LookupTableFindV2", 3, 3, TABLE_FLAGS, 0, shape_find, kernel_find, NULL},
    {"LookupTableInsertV2", 3, 3, TABLE_FLAGS, 0, shape_insert, kernel_insert, NULL},
    {"LookupTableSizeV2", 1, 1, TABLE_FLAGS, 0, shape_size, kernel_size, NULL},
    {"LookupTableExportV2", 1, 1, TABLE_FLAGS, 0, shape_export, kernel_export, NULL},
    {"InitializeTableV2", 3, 3, TABLE_FLAGS, 0, shape_init, kernel_init, NULL},
    {"LookupTableImportV2", 3, 3, TABLE_FLAGS, 0, shape_insert, kernel_import, NULL},
    {"InitializeTableFromTextFileV2", 2, 2, TABLE_FLAGS, 0, shape_init_text, kernel_init_text, NULL},
    {"StringToHashBucketFast", 1, 1, NOGRAD, 0, shape_hash_bucket, kernel_hash_bucket, NULL},
    {"StringToHashBucketStrong", 1, 1, NOGRAD, 0, shape_hash_bucket, kernel_hash_bucket, NULL},
    {"AsString", 1, 1, NOGRAD, 0, shape_as_string, kernel_as_string, NULL},
    {0},
};
