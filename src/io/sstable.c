/*
 * sstable.c - the LevelDB table format as tensorflow::table writes it (checkpoint
 * .index files), docs/formats.md §2.2.
 *
 * Builder: TF's exact rules (restart interval 16 in data blocks and 1 in the index
 * block, 256 KiB block size estimate, "flush before an entry >= 2 blocks", shortest
 * separator / short successor index keys, empty metaindex, footer with magic), so that
 * re-encoding a TF-written raw index reproduces it byte for byte.
 * Reader: loads a whole table (index files are small) into a sorted entry array after
 * checking every block trailer CRC and decompressing Snappy blocks.
 */
#include "io/io.h"
#include <errno.h>

#define DATA_RESTART_INTERVAL 16
#define INDEX_RESTART_INTERVAL 1
#define MAX_BLOCK_RAW (1u << 30) /* sanity limit for a decompressed block */

/* ---- block builder ---- */

typedef struct block_builder {
    vg__pb_buf buf;
    vg__pb_buf restarts; /* fixed32 offsets */
    vg__pb_buf last_key;
    int counter, interval, nrestarts;
} block_builder;

/* Empties the block (its buffers keep their memory): no entries, restart point 0. */
static void block_reset(block_builder *bb) {
    vg__pb_reset(&bb->buf);
    vg__pb_reset(&bb->restarts);
    vg__pb_reset(&bb->last_key);
    bb->counter = 0;
    bb->nrestarts = 1;
    vg__pb_put_fixed32(&bb->restarts, 0);
}

static void block_init(block_builder *bb, int interval) {
    vg__pb_init(&bb->buf);
    vg__pb_init(&bb->restarts);
    vg__pb_init(&bb->last_key);
    bb->interval = interval;
    block_reset(bb);
}

static void block_free(block_builder *bb) {
    vg__pb_free(&bb->buf);
    vg__pb_free(&bb->restarts);
    vg__pb_free(&bb->last_key);
}

static bool block_oom(const block_builder *bb) { return bb->buf.oom || bb->restarts.oom || bb->last_key.oom; }

static size_t block_size_estimate(const block_builder *bb) { return bb->buf.len + bb->restarts.len + 4; }

static void block_add(block_builder *bb, const uint8_t *key, size_t klen, const void *val, size_t vlen) {
    size_t shared = 0;
    if (bb->counter < bb->interval) {
        size_t min = bb->last_key.len < klen ? bb->last_key.len : klen;
        while (shared < min && bb->last_key.data[shared] == key[shared]) shared++;
    } else {
        vg__pb_put_fixed32(&bb->restarts, (uint32_t)bb->buf.len);
        bb->nrestarts++;
        bb->counter = 0;
    }
    vg__pb_put_varint(&bb->buf, shared);
    vg__pb_put_varint(&bb->buf, klen - shared);
    vg__pb_put_varint(&bb->buf, vlen);
    vg__pb_put_raw(&bb->buf, key + shared, klen - shared);
    vg__pb_put_raw(&bb->buf, val, vlen);
    vg__pb_reset(&bb->last_key);
    vg__pb_put_raw(&bb->last_key, key, klen);
    bb->counter++;
}

/* Appends the restart array; bb->buf then holds the finished block. */
static void block_finish(block_builder *bb) {
    vg__pb_put_raw(&bb->buf, bb->restarts.data, bb->restarts.len);
    vg__pb_put_fixed32(&bb->buf, (uint32_t)bb->nrestarts);
}

/* ---- table builder ---- */

struct vg__sstable_builder {
    FILE *f;
    bool snappy, finished;
    vg__pb_buf out;       /* memory mode output */
    uint64_t offset;      /* bytes written so far */
    block_builder data, index;
    vg__pb_buf last_key;
    uint64_t num_entries;
    bool pending;         /* an index entry waits for the next key */
    uint64_t pend_off, pend_size;
    vg_status err;        /* sticky */
};

vg__sstable_builder *vg__sstable_builder_new(FILE *f, bool snappy, vg_status *st) {
    vg__sstable_builder *b = vg__calloc(1, sizeof *b);
    if (!b) { VG_OOM(st, "sstable builder"); return NULL; }
    b->f = f;
    b->snappy = snappy;
    vg__pb_init(&b->out);
    vg__pb_init(&b->last_key);
    block_init(&b->data, DATA_RESTART_INTERVAL);
    block_init(&b->index, INDEX_RESTART_INTERVAL);
    if (block_oom(&b->data) || block_oom(&b->index)) {
        vg__sstable_builder_free(b);
        VG_OOM(st, "sstable builder");
        return NULL;
    }
    vg_status_clear(&b->err);
    return b;
}

void vg__sstable_builder_free(vg__sstable_builder *b) {
    if (!b) return;
    vg__pb_free(&b->out);
    vg__pb_free(&b->last_key);
    block_free(&b->data);
    block_free(&b->index);
    vg__free(b);
}

const uint8_t *vg__sstable_builder_data(const vg__sstable_builder *b, size_t *len) {
    *len = b->out.len;
    return b->out.data;
}

static vg_code fail(vg__sstable_builder *b, vg_status *st) {
    vg_status_copy(st, &b->err);
    return b->err.code;
}

static vg_code emit(vg__sstable_builder *b, const void *p, size_t n) {
    if (b->f) {
        if (n && fwrite(p, 1, n, b->f) != n)
            return vg__io_errno_status(&b->err, errno ? errno : EIO, "cannot write", "sstable");
    } else {
        vg__pb_put_raw(&b->out, p, n);
        if (b->out.oom) return VG_OOM(&b->err, "sstable output");
    }
    b->offset += n;
    return VG_OK;
}

/* Writes block contents + trailer (type, masked crc over contents and type). */
static vg_code write_raw_block(vg__sstable_builder *b, const uint8_t *p, size_t n, uint8_t type,
                               uint64_t *off, uint64_t *size) {
    uint8_t trailer[5];
    trailer[0] = type;
    uint32_t crc = vg__crc32c_extend(vg__crc32c(p, n), trailer, 1);
    vg__put_le32(trailer + 1, vg__crc32c_mask(crc));
    *off = b->offset;
    *size = n;
    if (emit(b, p, n) || emit(b, trailer, 5)) return b->err.code;
    return VG_OK;
}

static vg_code write_block(vg__sstable_builder *b, block_builder *bb, uint64_t *off, uint64_t *size) {
    block_finish(bb);
    if (block_oom(bb)) return VG_OOM(&b->err, "sstable block");
    const uint8_t *raw = bb->buf.data;
    size_t n = bb->buf.len;
    vg_code c;
    if (b->snappy) {
        uint8_t *z = NULL;
        size_t zn = 0;
        if (vg__snappy_compress(raw, n, &z, &zn, &b->err)) return b->err.code;
        if (zn < n - n / 8) c = write_raw_block(b, z, zn, 1, off, size);
        else c = write_raw_block(b, raw, n, 0, off, size);
        vg__free(z);
    } else {
        c = write_raw_block(b, raw, n, 0, off, size);
    }
    block_reset(bb);
    return c;
}

static void add_index_entry(vg__sstable_builder *b, const uint8_t *key, size_t klen) {
    uint8_t h[20];
    int hn = vg__pb_encode_varint(h, b->pend_off);
    hn += vg__pb_encode_varint(h + hn, b->pend_size);
    block_add(&b->index, key, klen, h, (size_t)hn);
    b->pending = false;
}

static vg_code flush_data(vg__sstable_builder *b) {
    if (b->data.buf.len == 0) return VG_OK;
    if (write_block(b, &b->data, &b->pend_off, &b->pend_size)) return b->err.code;
    b->pending = true;
    if (b->f && fflush(b->f) != 0) return vg__io_errno_status(&b->err, errno, "cannot write", "sstable");
    return VG_OK;
}

/* LevelDB's BytewiseComparator::FindShortestSeparator, in place on *start. */
static void shortest_separator(vg__pb_buf *start, const uint8_t *limit, size_t llen) {
    size_t min = start->len < llen ? start->len : llen, i = 0;
    while (i < min && start->data[i] == limit[i]) i++;
    if (i >= min) return; /* one is a prefix of the other */
    uint8_t d = start->data[i];
    if (d < 0xff && d + 1 < limit[i]) {
        start->data[i]++;
        start->len = i + 1;
    }
}

/* FindShortSuccessor: bump the first byte that is not 0xff and cut after it. */
static void short_successor(vg__pb_buf *key) {
    for (size_t i = 0; i < key->len; i++) {
        if (key->data[i] != 0xff) {
            key->data[i]++;
            key->len = i + 1;
            return;
        }
    }
}

static int key_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t min = an < bn ? an : bn;
    int c = min ? memcmp(a, b, min) : 0;
    if (c) return c;
    return an < bn ? -1 : an > bn;
}

vg_code vg__sstable_builder_add(vg__sstable_builder *b, const void *key, size_t klen, const void *val,
                                size_t vlen, vg_status *st) {
    if (b->err.code) return fail(b, st);
    if (b->finished) return vg_status_set(st, VG_FAILED_PRECONDITION, "sstable already finished");
    if (b->num_entries > 0) {
        if (key_cmp(key, klen, b->last_key.data, b->last_key.len) <= 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "sstable keys must be strictly increasing");
        if (klen + vlen >= 2 * (size_t)VG__SSTABLE_BLOCK_SIZE && flush_data(b)) return fail(b, st);
    }
    if (b->pending) {
        shortest_separator(&b->last_key, key, klen);
        add_index_entry(b, b->last_key.data, b->last_key.len);
    }
    vg__pb_reset(&b->last_key);
    vg__pb_put_raw(&b->last_key, key, klen);
    b->num_entries++;
    block_add(&b->data, key, klen, val, vlen);
    if (b->last_key.oom || block_oom(&b->data) || block_oom(&b->index)) {
        VG_OOM(&b->err, "sstable entry");
        return fail(b, st);
    }
    if (block_size_estimate(&b->data) >= VG__SSTABLE_BLOCK_SIZE && flush_data(b)) return fail(b, st);
    return VG_OK;
}

vg_code vg__sstable_builder_finish(vg__sstable_builder *b, vg_status *st) {
    if (b->err.code) return fail(b, st);
    if (b->finished) return vg_status_set(st, VG_FAILED_PRECONDITION, "sstable already finished");
    uint64_t meta_off, meta_size, idx_off, idx_size;
    if (flush_data(b)) return fail(b, st);
    block_builder meta;
    block_init(&meta, DATA_RESTART_INTERVAL);
    vg_code c = write_block(b, &meta, &meta_off, &meta_size);
    block_free(&meta);
    if (c) return fail(b, st);
    if (b->pending) {
        short_successor(&b->last_key);
        add_index_entry(b, b->last_key.data, b->last_key.len);
    }
    if (write_block(b, &b->index, &idx_off, &idx_size)) return fail(b, st);
    uint8_t footer[VG__SSTABLE_FOOTER_LEN] = {0};
    int n = vg__pb_encode_varint(footer, meta_off);
    n += vg__pb_encode_varint(footer + n, meta_size);
    n += vg__pb_encode_varint(footer + n, idx_off);
    vg__pb_encode_varint(footer + n, idx_size);
    vg__put_le32(footer + 40, (uint32_t)VG__SSTABLE_MAGIC);
    vg__put_le32(footer + 44, (uint32_t)(VG__SSTABLE_MAGIC >> 32));
    if (emit(b, footer, sizeof footer)) return fail(b, st);
    if (b->f && fflush(b->f) != 0) {
        vg__io_errno_status(&b->err, errno, "cannot write", "sstable");
        return fail(b, st);
    }
    b->finished = true;
    return VG_OK;
}

/* ---- reader ---- */

typedef struct entry {
    size_t key_off, klen; /* key in t->keys */
    const uint8_t *val;
    size_t vlen;
} entry;

struct vg__sstable {
    uint8_t *file;
    size_t file_len;
    char *name;
    uint8_t **blocks; /* decompressed blocks we own */
    size_t nblocks, cap_blocks;
    entry *ents;
    size_t n, cap;
    vg__pb_buf keys;  /* all keys, each NUL-terminated */
};

void vg__sstable_free(vg__sstable *t) {
    if (!t) return;
    for (size_t i = 0; i < t->nblocks; i++) vg__free(t->blocks[i]);
    vg__free(t->blocks);
    vg__free(t->ents);
    vg__pb_free(&t->keys);
    vg__free(t->file);
    vg__free(t->name);
    vg__free(t);
}

static vg_code corrupt(const vg__sstable *t, vg_status *st, const char *what) {
    return vg_status_set(st, VG_DATA_LOSS, "corrupted table %s: %s", t->name, what);
}

/* Reads the block at (off, size): checks the trailer, decompresses type 1. */
static vg_code read_block(vg__sstable *t, uint64_t off, uint64_t size, const uint8_t **p, size_t *n,
                          vg_status *st) {
    size_t limit = t->file_len - VG__SSTABLE_FOOTER_LEN;
    if (off > limit || size > limit - off || 5 > limit - off - size) return corrupt(t, st, "block handle past the end");
    const uint8_t *blk = t->file + off;
    uint8_t type = blk[size];
    uint32_t crc = vg__crc32c_extend(vg__crc32c(blk, (size_t)size), &type, 1);
    if (VG__CRC_MISMATCH(vg__crc32c_unmask(vg__get_le32(blk + size + 1)), crc)) return corrupt(t, st, "block checksum mismatch");
    if (type == 0) {
        *p = blk;
        *n = (size_t)size;
        return VG_OK;
    }
    if (type != 1) return corrupt(t, st, "unknown block compression type");
    if (!vg__io_grow((void **)&t->blocks, &t->cap_blocks, t->nblocks + 1, 16, sizeof *t->blocks)) return VG_OOM(st, "table");
    uint8_t *raw;
    size_t rn;
    vg_code c = vg__snappy_uncompress(blk, (size_t)size, MAX_BLOCK_RAW, &raw, &rn, st);
    if (c == VG_DATA_LOSS) return corrupt(t, st, "bad snappy block");
    if (c) return c;
    t->blocks[t->nblocks++] = raw;
    *p = raw;
    *n = rn;
    return VG_OK;
}

typedef vg_code (*entry_fn)(vg__sstable *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                            vg_status *st);

/* Walks the entries of a block, rebuilding prefix-compressed keys in *scratch. */
static vg_code parse_block(vg__sstable *t, const uint8_t *p, size_t n, vg__pb_buf *scratch, entry_fn fn,
                           vg_status *st) {
    if (n < 4) return corrupt(t, st, "block too short");
    uint32_t nrest = vg__get_le32(p + n - 4);
    if (nrest > (n - 4) / 4) return corrupt(t, st, "bad restart count");
    const uint8_t *q = p, *end = p + n - 4 - 4 * (size_t)nrest;
    vg__pb_reset(scratch);
    while (q < end) {
        uint64_t shared, non_shared, vlen;
        if (!vg__pb_get_varint(&q, end, &shared) || !vg__pb_get_varint(&q, end, &non_shared) ||
            !vg__pb_get_varint(&q, end, &vlen))
            return corrupt(t, st, "bad entry header");
        if (shared > scratch->len || non_shared > (uint64_t)(end - q) || vlen > (uint64_t)(end - q) - non_shared)
            return corrupt(t, st, "bad entry lengths");
        scratch->len = (size_t)shared;
        vg__pb_put_raw(scratch, q, (size_t)non_shared);
        if (scratch->oom) return VG_OOM(st, "table key");
        q += non_shared;
        vg_code c = fn(t, scratch->data, scratch->len, q, (size_t)vlen, st);
        if (c) return c;
        q += vlen;
    }
    return VG_OK;
}

/* parse_block with its own scratch buffer. */
static vg_code parse_block_alone(vg__sstable *t, const uint8_t *p, size_t n, entry_fn fn, vg_status *st) {
    vg__pb_buf scratch;
    vg__pb_init(&scratch);
    vg_code c = parse_block(t, p, n, &scratch, fn, st);
    vg__pb_free(&scratch);
    return c;
}

static vg_code add_entry(vg__sstable *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                         vg_status *st) {
    if (t->n) {
        const entry *prev = &t->ents[t->n - 1];
        if (key_cmp(t->keys.data + prev->key_off, prev->klen, key, klen) >= 0)
            return corrupt(t, st, "keys out of order");
    }
    if (!vg__io_grow((void **)&t->ents, &t->cap, t->n + 1, 16, sizeof *t->ents)) return VG_OOM(st, "table entries");
    entry *e = &t->ents[t->n];
    e->key_off = t->keys.len;
    e->klen = klen;
    e->val = val;
    e->vlen = vlen;
    vg__pb_put_raw(&t->keys, key, klen);
    vg__pb_put_raw(&t->keys, "", 1);
    if (t->keys.oom) return VG_OOM(st, "table keys");
    t->n++;
    return VG_OK;
}

static vg_code add_data_block(vg__sstable *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                              vg_status *st) {
    (void)key;
    (void)klen;
    const uint8_t *q = val;
    uint64_t off, size;
    if (!vg__pb_get_varint(&q, val + vlen, &off) || !vg__pb_get_varint(&q, val + vlen, &size))
        return corrupt(t, st, "bad block handle");
    const uint8_t *p;
    size_t n;
    vg_code c = read_block(t, off, size, &p, &n, st);
    if (c) return c;
    return parse_block_alone(t, p, n, add_entry, st);
}

static vg_code parse_table(vg__sstable *t, vg_status *st) {
    if (t->file_len < VG__SSTABLE_FOOTER_LEN) return corrupt(t, st, "file too short");
    const uint8_t *f = t->file + t->file_len - VG__SSTABLE_FOOTER_LEN;
    uint64_t magic = (uint64_t)vg__get_le32(f + 40) | (uint64_t)vg__get_le32(f + 44) << 32;
    if (magic != VG__SSTABLE_MAGIC) return corrupt(t, st, "bad magic number");
    uint64_t h[4];
    const uint8_t *q = f;
    for (int i = 0; i < 4; i++)
        if (!vg__pb_get_varint(&q, f + 40, &h[i])) return corrupt(t, st, "bad footer");
    const uint8_t *p;
    size_t n;
    vg_code c = read_block(t, h[0], h[1], &p, &n, st); /* metaindex: checked, ignored */
    if (!c) c = read_block(t, h[2], h[3], &p, &n, st);
    if (c) return c;
    return parse_block_alone(t, p, n, add_data_block, st);
}

vg__sstable *vg__sstable_open_buffer(uint8_t *data, size_t len, const char *name, vg_status *st) {
    vg__sstable *t = vg__calloc(1, sizeof *t);
    if (!t) {
        vg__free(data);
        VG_OOM(st, "table");
        return NULL;
    }
    t->file = data;
    t->file_len = len;
    vg__pb_init(&t->keys);
    t->name = vg__strdup(name ? name : "(memory)");
    if (!t->name) {
        VG_OOM(st, "table");
        vg__sstable_free(t);
        return NULL;
    }
    if (parse_table(t, st)) {
        vg__sstable_free(t);
        return NULL;
    }
    return t;
}

vg__sstable *vg__sstable_open(const char *path, vg_status *st) {
    uint8_t *data;
    size_t len;
    if (vg__io_read_file(path, &data, &len, st)) return NULL;
    return vg__sstable_open_buffer(data, len, path, st);
}

size_t vg__sstable_count(const vg__sstable *t) { return t->n; }

void vg__sstable_entry(const vg__sstable *t, size_t i, const uint8_t **key, size_t *klen, const uint8_t **val,
                       size_t *vlen) {
    const entry *e = &t->ents[i];
    *key = t->keys.data + e->key_off;
    *klen = e->klen;
    *val = e->val;
    *vlen = e->vlen;
}

int64_t vg__sstable_find(const vg__sstable *t, const void *key, size_t klen) {
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const entry *e = &t->ents[mid];
        int c = key_cmp(t->keys.data + e->key_off, e->klen, key, klen);
        if (c == 0) return (int64_t)mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

vg_code vg__sstable_get(const vg__sstable *t, const void *key, size_t klen, const uint8_t **val, size_t *vlen,
                        vg_status *st) {
    int64_t i = vg__sstable_find(t, key, klen);
    if (i < 0) return vg_status_set(st, VG_NOT_FOUND, "key not found in %s", t->name);
    *val = t->ents[i].val;
    *vlen = t->ents[i].vlen;
    return VG_OK;
}
