/*
 * bundle_merge.c - merges V2 checkpoints (tensor bundles) into one, as TF 1.15's
 * MergeBundles (core/util/tensor_bundle/tensor_bundle.cc) does for the
 * MergeV2Checkpoints op of a sharded Saver:
 *
 *   - every input bundle's data files are renamed, in input order, to
 *     "<merged>.data-<k>-of-<total>" (k counts over all inputs' shards);
 *   - the merged index holds the header {num_shards: total, version {producer: 1}}
 *     and every input entry with its shard_id moved by the shards before it; a key
 *     present in two inputs is INVALID_ARGUMENT;
 *   - the inputs' .index files are deleted afterwards (best effort).
 *
 * The entry protos are copied field by field with only shard_id (field 3) rewritten, so
 * dtype, shape, offset, size, crc32c and slices survive unchanged. The merged index is
 * written to a temp file and renamed into place after the data renames. TF builds it
 * with table::Options() (Snappy when it pays 12.5%); so does this.
 */
#include "io/io.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct mentry {
    uint8_t *key; /* NUL-terminated copy */
    size_t klen;
    uint8_t *val; /* re-encoded BundleEntryProto */
    size_t vlen;
} mentry;

typedef struct mstate {
    mentry *e;
    size_t n, cap;
    int num_shards;
    int endianness; /* -1 until the first input */
    char **from, **to; /* data file renames */
    int nren;
} mstate;

static char *str_printf(const char *fmt, const char *a, int x, int y) {
    int n = snprintf(NULL, 0, fmt, a, x, y);
    if (n < 0) return NULL;
    char *p = vg__malloc((size_t)n + 1);
    if (p) snprintf(p, (size_t)n + 1, fmt, a, x, y);
    return p;
}

/* Header fields of one input: num_shards, endianness; version as the reader checks it
 * (producer >= 0, min_consumer <= 1). */
static vg_code read_header(const vg__sstable *t, const char *path, int *shards, int *endian, vg_status *st) {
    const uint8_t *val;
    size_t vlen;
    if (vg__sstable_get(t, "", 0, &val, &vlen, NULL))
        return vg_status_set(st, VG_DATA_LOSS, "checkpoint index %s has no bundle header", path);
    vg__pb_reader r;
    vg__pb_field f;
    vg_code c;
    uint64_t ns = 0, en = 0, min_consumer = 0;
    vg__pb_reader_init(&r, val, vlen);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_VARINT) ns = f.u;
        else if (f.number == 2 && f.wiretype == VG__PB_VARINT) en = f.u;
        else if (f.number == 3 && f.wiretype == VG__PB_LEN) {
            vg__pb_reader v;
            vg__pb_field g;
            vg__pb_reader_init(&v, f.data, f.len);
            while ((c = vg__pb_next(&v, &g, st)) == VG_OK)
                if (g.number == 2 && g.wiretype == VG__PB_VARINT) min_consumer = g.u;
            if (c != VG_OUT_OF_RANGE) break;
        }
    }
    if (c != VG_OUT_OF_RANGE) return vg_status_set(st, VG_DATA_LOSS, "bad bundle header in %s", path);
    if (ns < 1 || ns > 99999 || en > 1)
        return vg_status_set(st, VG_DATA_LOSS, "bad bundle header in %s (num_shards %llu, endianness %llu)", path,
                             (unsigned long long)ns, (unsigned long long)en);
    if (min_consumer > 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint %s needs a reader of version %llu or newer", path,
                             (unsigned long long)min_consumer);
    *shards = (int)ns;
    *endian = (int)en;
    return VG_OK;
}

/* Copies entry proto `val` with shard_id (field 3) moved by `base`, fields in order
 * (proto3: a zero shard_id is omitted). `nshards` is the input's shard count. */
static vg_code reencode(const uint8_t *val, size_t vlen, int base, int nshards, const char *key, const char *path,
                        vg__pb_buf *out, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code c;
    uint64_t shard = 0;
    vg__pb_reader_init(&r, val, vlen);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK)
        if (f.number == 3 && f.wiretype == VG__PB_VARINT) shard = f.u;
    if (c != VG_OUT_OF_RANGE)
        return vg_status_set(st, VG_DATA_LOSS, "corrupt entry %s in checkpoint index %s", key, path);
    if (shard >= (uint64_t)nshards)
        return vg_status_set(st, VG_DATA_LOSS, "entry %s in checkpoint index %s: shard %llu of %d", key, path,
                             (unsigned long long)shard, nshards);
    uint64_t ns = shard + (uint64_t)base;
    bool put = false;
    vg__pb_reader_init(&r, val, vlen);
    for (;;) {
        const uint8_t *start = r.p;
        c = vg__pb_next(&r, &f, st);
        if (c != VG_OK) break;
        if (!put && f.number > 3) {
            if (ns) vg__pb_put_uint64(out, 3, ns);
            put = true;
        }
        if (f.number == 3) continue;
        vg__pb_put_raw(out, start, (size_t)(r.p - start));
    }
    if (!put && ns) vg__pb_put_uint64(out, 3, ns);
    return vg__pb_buf_status(out, "merged checkpoint index", st);
}

static int cmp_mentry(const void *a, const void *b) {
    const mentry *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int d = memcmp(x->key, y->key, n);
    return d ? d : (x->klen < y->klen ? -1 : x->klen > y->klen);
}

static void mstate_free(mstate *m) {
    for (size_t i = 0; i < m->n; i++) {
        vg__free(m->e[i].key);
        vg__free(m->e[i].val);
    }
    vg__free(m->e);
    for (int i = 0; i < m->nren; i++) {
        vg__free(m->from[i]);
        vg__free(m->to[i]);
    }
    vg__free(m->from);
    vg__free(m->to);
}

/* Reads one input index: its entries (shard ids moved by m->num_shards) and its data
 * file names; checks the data files exist. */
static vg_code merge_one(mstate *m, const char *prefix, vg_status *st) {
    char *ipath = str_printf("%s.index", prefix, 0, 0);
    if (!ipath) return VG_OOM(st, "merge path");
    vg__sstable *t = vg__sstable_open(ipath, st);
    vg_code c = t ? VG_OK : (st->code ? st->code : VG_DATA_LOSS);
    int ns = 0, en = 0;
    if (!c) c = read_header(t, ipath, &ns, &en, st);
    if (!c && m->endianness >= 0 && en != m->endianness)
        c = vg_status_set(st, VG_UNIMPLEMENTED, "Merging checkpoints with different endianness is unsupported (%s)",
                          ipath);
    if (!c && (int64_t)m->num_shards + ns > 99999)
        c = vg_status_set(st, VG_INVALID_ARGUMENT, "too many shards merging %s", ipath);
    size_t cnt = t ? vg__sstable_count(t) : 0;
    if (!c && m->n + cnt > m->cap) {
        size_t nc = m->n + cnt + 16;
        mentry *ne = vg__realloc(m->e, m->cap * sizeof *ne, nc * sizeof *ne);
        if (!ne) c = VG_OOM(st, "merged index");
        else {
            m->e = ne;
            m->cap = nc;
        }
    }
    vg__pb_buf out;
    vg__pb_init(&out);
    for (size_t i = 0; !c && i < cnt; i++) {
        const uint8_t *k, *v;
        size_t kl, vl;
        vg__sstable_entry(t, i, &k, &kl, &v, &vl);
        if (kl == 0) continue; /* the header */
        vg__pb_reset(&out);
        c = reencode(v, vl, m->num_shards, ns, (const char *)k, ipath, &out, st);
        if (c) break;
        mentry *e = &m->e[m->n];
        e->key = vg__malloc(kl + 1);
        e->val = vg__malloc(out.len ? out.len : 1);
        if (!e->key || !e->val) {
            vg__free(e->key);
            vg__free(e->val);
            c = VG_OOM(st, "merged index");
            break;
        }
        memcpy(e->key, k, kl);
        e->key[kl] = 0;
        e->klen = kl;
        memcpy(e->val, out.data, out.len);
        e->vlen = out.len;
        m->n++;
    }
    vg__pb_free(&out);
    if (!c) {
        char **nf = vg__realloc(m->from, (size_t)m->nren * sizeof *nf, (size_t)(m->nren + ns) * sizeof *nf);
        if (nf) m->from = nf;
        char **nt = vg__realloc(m->to, (size_t)m->nren * sizeof *nt, (size_t)(m->nren + ns) * sizeof *nt);
        if (nt) m->to = nt;
        if (!nf || !nt) c = VG_OOM(st, "merge renames");
    }
    for (int s = 0; !c && s < ns; s++) {
        char *from = str_printf("%s.data-%05d-of-%05d", prefix, s, ns);
        if (!from) {
            c = VG_OOM(st, "merge path");
            break;
        }
        m->from[m->nren] = from;
        m->to[m->nren] = NULL;
        m->nren++;
        if (access(from, F_OK) != 0) c = vg__io_errno_status(st, errno, "cannot find checkpoint data file", from);
    }
    if (!c) {
        m->num_shards += ns;
        m->endianness = en;
    }
    vg__sstable_free(t);
    vg__free(ipath);
    return c;
}

vg_code vg__bundle_merge(const char *const *prefixes, int n, const char *merged, vg_status *st) {
    if (n < 1 || !merged || !*merged)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MergeV2Checkpoints needs input prefixes and a destination");
    mstate m = {0};
    m.endianness = -1;
    vg_code c = VG_OK;
    for (int i = 0; !c && i < n; i++) c = merge_one(&m, prefixes[i], st);
    if (!c && m.n > 1) {
        qsort(m.e, m.n, sizeof *m.e, cmp_mentry);
        for (size_t i = 1; !c && i < m.n; i++)
            if (cmp_mentry(&m.e[i - 1], &m.e[i]) == 0)
                c = vg_status_set(st, VG_INVALID_ARGUMENT, "Duplicate tensor keyed by %s encountered, when merging "
                                  "prefix: %s", (const char *)m.e[i].key, merged);
    }
    /* the merged index, built in memory */
    vg__sstable_builder *sb = NULL;
    if (!c && !(sb = vg__sstable_builder_new(NULL, true, st))) c = st->code ? st->code : VG_RESOURCE_EXHAUSTED;
    if (!c) {
        vg__pb_buf h, v;
        vg__pb_init(&h);
        vg__pb_init(&v);
        vg__pb_put_int32(&h, 1, m.num_shards);
        if (m.endianness) vg__pb_put_int32(&h, 2, m.endianness);
        vg__pb_put_int32(&v, 1, 1); /* producer: kTensorBundleVersion */
        vg__pb_put_message(&h, 3, &v);
        c = vg__pb_buf_status(&h, "bundle header", st);
        if (!c) c = vg__sstable_builder_add(sb, "", 0, h.data, h.len, st);
        vg__pb_free(&h);
        vg__pb_free(&v);
    }
    for (size_t i = 0; !c && i < m.n; i++) c = vg__sstable_builder_add(sb, m.e[i].key, m.e[i].klen, m.e[i].val, m.e[i].vlen, st);
    if (!c) c = vg__sstable_builder_finish(sb, st);
    /* destination directory, data renames, then the index */
    char *ipath = c ? NULL : str_printf("%s.index", merged, 0, 0);
    if (!c && !ipath) c = VG_OOM(st, "merge path");
    if (!c) {
        const char *slash = strrchr(merged, '/');
        if (slash && slash != merged) {
            char *dir = vg__strndup(merged, (size_t)(slash - merged));
            if (!dir) c = VG_OOM(st, "merge path");
            else c = vg__io_mkdirs(dir, st);
            vg__free(dir);
        }
    }
    for (int i = 0; !c && i < m.nren; i++) {
        if (!(m.to[i] = str_printf("%s.data-%05d-of-%05d", merged, i, m.num_shards))) c = VG_OOM(st, "merge path");
        else if (strcmp(m.from[i], m.to[i]) != 0) c = vg__io_rename(m.from[i], m.to[i], st);
    }
    if (!c) {
        char *tmp = NULL;
        int fd = -1;
        c = vg__io_temp_create(ipath, &tmp, &fd, st);
        if (!c) {
            size_t len;
            const uint8_t *p = vg__sstable_builder_data(sb, &len);
            c = vg__io_write_all(fd, p, len, tmp, st);
            if (c) close(fd);
            else c = vg__io_fsync_close(fd, tmp, st);
            if (!c) c = vg__io_rename(tmp, ipath, st);
            if (c) unlink(tmp);
            vg__free(tmp);
        }
        if (!c) vg__io_fsync_parent_dir(ipath, NULL);
    }
    /* best effort: the inputs' index files (not the merged one) */
    for (int i = 0; !c && i < n; i++) {
        char *p = str_printf("%s.index", prefixes[i], 0, 0);
        if (p && strcmp(p, ipath) != 0) unlink(p);
        vg__free(p);
    }
    vg__free(ipath);
    vg__sstable_builder_free(sb);
    mstate_free(&m);
    if (!c) vg_status_clear(st);
    return c;
}
