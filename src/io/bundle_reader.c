/*
 * bundle_reader.c - reads V2 checkpoints (tensor bundles), docs/formats.md §2.3-2.5.
 *
 * open() loads "<prefix>.index" (an SSTable; Snappy blocks allowed), checks the
 * BundleHeaderProto and decodes every BundleEntryProto into a sorted array. Tensor
 * bytes are read with one pread straight into the caller's buffer from the shard file
 * "<prefix>.data-%05d-of-%05d" (opened lazily), then CRC-checked and, for big-endian
 * bundles, byte-swapped. Partitioned (sliced) tensors are listed but not readable.
 */
#include "io/io.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define READER_VERSION 1 /* kTensorBundleVersion */

struct vg__bundle_reader {
    char *prefix;
    vg__sstable *t;
    vg__bundle_entry *ents;
    size_t n;
    int64_t *dims; /* all entries' dims */
    int num_shards;
    bool big_endian;
    int *fds;      /* per shard, -1 until opened */
    uint64_t *shard_sizes; /* per shard, known once opened */
};

static vg_code corrupt_entry(const char *name, const char *path, const char *what, vg_status *st) {
    return vg_status_set(st, VG_DATA_LOSS, "corrupted entry for tensor %s in %s: %s", name, path, what);
}

/* ---- header ---- */

static vg_code parse_version(const vg__pb_field *vf, const char *path, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field f;
    int64_t producer = 0, min_consumer = 0;
    bool bad = false;
    vg_code c;
    vg__pb_reader_init(&r, vf->data, vf->len);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_VARINT) producer = (int32_t)f.u;
        else if (f.number == 2 && f.wiretype == VG__PB_VARINT) min_consumer = (int32_t)f.u;
        else if (f.number == 3 && f.wiretype == VG__PB_VARINT) bad |= (int32_t)f.u == READER_VERSION;
        else if (f.number == 3 && f.wiretype == VG__PB_LEN) {
            const uint8_t *p = f.data, *end = f.data + f.len;
            uint64_t v;
            while (p < end) {
                if (!vg__pb_get_varint(&p, end, &v)) return vg_status_set(st, VG_DATA_LOSS, "bad version in %s", path);
                bad |= (int32_t)v == READER_VERSION;
            }
        }
    }
    if (c != VG_OUT_OF_RANGE) return vg_status_set(st, VG_DATA_LOSS, "bad bundle header version in %s", path);
    if (producer < 0 || min_consumer > READER_VERSION || bad)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "checkpoint %s has version producer=%lld min_consumer=%lld%s; this reader is version %d",
                             path, (long long)producer, (long long)min_consumer, bad ? " (bad consumer)" : "",
                             READER_VERSION);
    return VG_OK;
}

static vg_code parse_header(vg__bundle_reader *r, const char *path, vg_status *st) {
    const uint8_t *val;
    size_t vlen;
    if (vg__sstable_get(r->t, "", 0, &val, &vlen, NULL))
        return vg_status_set(st, VG_DATA_LOSS, "checkpoint index %s has no bundle header", path);
    vg__pb_reader pr;
    vg__pb_field f;
    vg_code c;
    uint64_t endian = 0, shards = 0;
    vg__pb_reader_init(&pr, val, vlen);
    while ((c = vg__pb_next(&pr, &f, st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_VARINT) shards = f.u;
        else if (f.number == 2 && f.wiretype == VG__PB_VARINT) endian = f.u;
        else if (f.number == 3 && f.wiretype == VG__PB_LEN && (c = parse_version(&f, path, st))) return c;
    }
    if (c != VG_OUT_OF_RANGE) return vg_status_set(st, VG_DATA_LOSS, "bad bundle header in %s", path);
    if (shards < 1 || shards > 99999 || endian > 1)
        return vg_status_set(st, VG_DATA_LOSS, "bad bundle header in %s (num_shards %llu, endianness %llu)", path,
                             (unsigned long long)shards, (unsigned long long)endian);
    r->num_shards = (int)shards;
    r->big_endian = endian == 1;
    return VG_OK;
}

/* ---- entries ---- */

typedef struct dims_buf {
    int64_t *v;
    size_t n, cap;
} dims_buf;

static bool dims_push(dims_buf *d, int64_t x) {
    if (!vg__io_grow((void **)&d->v, &d->cap, d->n + 1, 64, sizeof *d->v)) return false;
    d->v[d->n++] = x;
    return true;
}

/* TensorShapeProto: dim = 2 {size = 1}. Appends sizes; *ndims = their count. */
static vg_code parse_shape(const vg__pb_field *sf, dims_buf *d, int *ndims, const char *name, const char *path,
                           vg_status *st) {
    vg__pb_reader r, dr;
    vg__pb_field f, g;
    vg_code c;
    *ndims = 0;
    vg__pb_reader_init(&r, sf->data, sf->len);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number == 3 && f.wiretype == VG__PB_VARINT && f.u) return corrupt_entry(name, path, "unknown rank", st);
        if (f.number != 2 || f.wiretype != VG__PB_LEN) continue;
        int64_t size = 0;
        vg__pb_reader_init(&dr, f.data, f.len);
        while ((c = vg__pb_next(&dr, &g, st)) == VG_OK)
            if (g.number == 1 && g.wiretype == VG__PB_VARINT) size = (int64_t)g.u;
        if (c != VG_OUT_OF_RANGE) return corrupt_entry(name, path, "bad shape", st);
        if (size < 0) return corrupt_entry(name, path, "negative dimension", st);
        if (!dims_push(d, size)) return VG_OOM(st, "checkpoint shapes");
        (*ndims)++;
    }
    if (c != VG_OUT_OF_RANGE) return corrupt_entry(name, path, "bad shape", st);
    return VG_OK;
}

static vg_code parse_entry(vg__bundle_entry *e, size_t *dims_off, dims_buf *d, const uint8_t *val, size_t vlen,
                           const char *path, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code c;
    *dims_off = d->n;
    vg__pb_reader_init(&r, val, vlen);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK) {
        bool vi = f.wiretype == VG__PB_VARINT;
        switch (f.number) {
        case 1: if (vi) e->dtype = (int)f.u; break;
        case 2:
            if (f.wiretype == VG__PB_LEN) {
                d->n = *dims_off; /* a repeated shape field: the last one wins */
                if ((c = parse_shape(&f, d, &e->ndims, e->name, path, st))) return c;
            }
            break;
        case 3: if (vi) e->shard_id = (int)(int32_t)f.u; break;
        case 4: if (vi) e->offset = f.u; break;
        case 5: if (vi) e->nbytes = f.u; break;
        case 6: if (f.wiretype == VG__PB_FIXED32) e->masked_crc = (uint32_t)f.u; break;
        case 7: e->sliced = true; break;
        default: break;
        }
    }
    if (c != VG_OUT_OF_RANGE) return corrupt_entry(e->name, path, "malformed BundleEntryProto", st);
    return VG_OK;
}

/* The entry's counts must agree with each other before anything is sized by them:
 * rank <= VG__IO_MAX_DIMS, the element count fits 64 bits, a numeric tensor stores
 * exactly numel * dtype size bytes, a string tensor at least one length byte per
 * element plus the 4-byte length checksum, and offset + size does not wrap. */
static vg_code check_entry_sizes(const vg__bundle_entry *e, const int64_t *dims, const char *path, vg_status *st) {
    char what[200];
    if (e->ndims > VG__IO_MAX_DIMS) {
        snprintf(what, sizeof what, "rank %d (more than %d dimensions)", e->ndims, VG__IO_MAX_DIMS);
        return corrupt_entry(e->name, path, what, st);
    }
    uint64_t numel = 1;
    for (int i = 0; i < e->ndims; i++) {
        uint64_t dd = (uint64_t)dims[i];
        if (dd && numel > UINT64_MAX / dd) return corrupt_entry(e->name, path, "element count overflows", st);
        numel *= dd;
    }
    if (e->nbytes > INT64_MAX || e->offset > INT64_MAX - e->nbytes) {
        snprintf(what, sizeof what, "offset %llu + size %llu out of range", (unsigned long long)e->offset,
                 (unsigned long long)e->nbytes);
        return corrupt_entry(e->name, path, what, st);
    }
    if (e->sliced) return VG_OK; /* slices are listed, never read */
    size_t esize = vg__io_dtype_size(e->dtype);
    bool bad = false;
    if (e->dtype == VG__DT_STRING) bad = numel && (numel > e->nbytes || e->nbytes - numel < 4);
    else if (esize) bad = numel > UINT64_MAX / esize || numel * esize != e->nbytes;
    if (bad) {
        snprintf(what, sizeof what, "stored size %llu does not match %llu elements of dtype %d",
                 (unsigned long long)e->nbytes, (unsigned long long)numel, e->dtype);
        return corrupt_entry(e->name, path, what, st);
    }
    return VG_OK;
}

static vg_code load_entries(vg__bundle_reader *r, const char *path, vg_status *st) {
    size_t total = vg__sstable_count(r->t);
    r->ents = vg__calloc(total ? total : 1, sizeof *r->ents);
    size_t *offs = vg__calloc(total ? total : 1, sizeof *offs);
    dims_buf d = {0};
    vg_code c = VG_OK;
    if (!r->ents || !offs) c = VG_OOM(st, "checkpoint entries");
    for (size_t i = 0; !c && i < total; i++) {
        const uint8_t *key, *val;
        size_t klen, vlen;
        vg__sstable_entry(r->t, i, &key, &klen, &val, &vlen);
        if (klen == 0 || key[0] == 0) continue; /* the header, and slice keys (OrderedCode) */
        vg__bundle_entry *e = &r->ents[r->n];
        e->name = (const char *)key;
        /* names are looked up as C strings: a NUL inside a key would make two keys one
         * name ("a\0x" and "a\0y"), and a lookup could return another entry's dtype */
        if (memchr(key, 0, klen)) {
            c = corrupt_entry(e->name, path, "tensor name contains a NUL byte", st);
            break;
        }
        c = parse_entry(e, &offs[r->n], &d, val, vlen, path, st);
        if (!c && e->shard_id < 0) c = corrupt_entry(e->name, path, "bad shard id", st);
        if (!c) c = check_entry_sizes(e, d.v ? d.v + offs[r->n] : NULL, path, st);
        r->n++;
    }
    if (!c) {
        r->dims = d.v;
        for (size_t i = 0; i < r->n; i++) r->ents[i].dims = d.v ? d.v + offs[i] : NULL;
    } else {
        vg__free(d.v);
    }
    vg__free(offs);
    return c;
}

/* ---- open / free ---- */

void vg__bundle_reader_free(vg__bundle_reader *r) {
    if (!r) return;
    if (r->fds)
        for (int i = 0; i < r->num_shards; i++)
            if (r->fds[i] >= 0) close(r->fds[i]);
    vg__free(r->fds);
    vg__free(r->shard_sizes);
    vg__free(r->ents);
    vg__free(r->dims);
    vg__sstable_free(r->t);
    vg__free(r->prefix);
    vg__free(r);
}

vg__bundle_reader *vg__bundle_reader_open(const char *prefix, vg_status *st) {
    vg__bundle_reader *r = vg__calloc(1, sizeof *r);
    char *path = vg__malloc(strlen(prefix) + 7);
    if (!r || !path || !(r->prefix = vg__strdup(prefix))) {
        VG_OOM(st, "checkpoint reader");
        goto fail;
    }
    sprintf(path, "%s.index", prefix);
    vg_code c;
    if (!(r->t = vg__sstable_open(path, st))) goto fail;
    if ((c = parse_header(r, path, st)) || (c = load_entries(r, path, st))) goto fail;
    r->fds = vg__malloc((size_t)r->num_shards * sizeof *r->fds);
    r->shard_sizes = vg__calloc((size_t)r->num_shards, sizeof *r->shard_sizes);
    if (!r->fds || !r->shard_sizes) {
        VG_OOM(st, "checkpoint reader");
        goto fail;
    }
    for (int i = 0; i < r->num_shards; i++) r->fds[i] = -1;
    vg__free(path);
    return r;
fail:
    vg__free(path);
    vg__bundle_reader_free(r);
    return NULL;
}

size_t vg__bundle_reader_num_entries(const vg__bundle_reader *r) { return r->n; }

const vg__bundle_entry *vg__bundle_reader_entry(const vg__bundle_reader *r, size_t i) {
    return i < r->n ? &r->ents[i] : NULL;
}

const vg__bundle_entry *vg__bundle_reader_find(const vg__bundle_reader *r, const char *name) {
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->ents[mid].name, name);
        if (c == 0) return &r->ents[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static const vg__bundle_entry *need(const vg__bundle_reader *r, const char *name, vg_status *st) {
    const vg__bundle_entry *e = vg__bundle_reader_find(r, name);
    if (!e) vg_status_set(st, VG_NOT_FOUND, "Key %s not found in checkpoint %s", name, r->prefix);
    return e;
}

vg_code vg__bundle_reader_lookup(const vg__bundle_reader *r, const char *name, int *dtype, int64_t *dims,
                                 int *ndims, vg_status *st) {
    const vg__bundle_entry *e = need(r, name, st);
    if (!e) return VG_NOT_FOUND;
    if (e->ndims > VG__IO_MAX_DIMS)
        return vg_status_set(st, VG_UNIMPLEMENTED, "tensor %s has rank %d (> %d)", name, e->ndims, VG__IO_MAX_DIMS);
    if (dtype) *dtype = e->dtype;
    if (dims && e->ndims) memcpy(dims, e->dims, (size_t)e->ndims * sizeof *dims);
    if (ndims) *ndims = e->ndims;
    return VG_OK;
}

/* ---- reading tensor bytes ---- */

static vg_code shard_path(const vg__bundle_reader *r, int shard, char *buf, size_t n, vg_status *st) {
    int k = snprintf(buf, n, "%s.data-%05d-of-%05d", r->prefix, shard, r->num_shards);
    if (k < 0 || (size_t)k >= n) return vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint prefix too long");
    return VG_OK;
}

/* Opens the entry's shard (once) and checks that [offset, offset + nbytes) lies in it:
 * NOT_FOUND / FAILED_PRECONDITION for a missing or special file, DATA_LOSS naming the
 * tensor, the data file and the offset when the index claims more than the file holds. */
static vg_code check_in_shard(vg__bundle_reader *r, const vg__bundle_entry *e, char *path, size_t pn,
                              vg_status *st) {
    if (e->shard_id >= r->num_shards)
        return vg_status_set(st, VG_DATA_LOSS, "tensor %s: shard %d of %d in checkpoint %s", e->name, e->shard_id,
                             r->num_shards, r->prefix);
    vg_code c = shard_path(r, e->shard_id, path, pn, st);
    if (c) return c;
    int *fd = &r->fds[e->shard_id];
    if (*fd < 0) {
        vg_status tmp;
        vg_status *s2 = st ? st : &tmp;
        if ((*fd = vg__io_open_regular(path, s2)) < 0) {
            vg_status_prefix(s2, "checkpoint data file: ");
            return s2->code;
        }
        struct stat sb;
        r->shard_sizes[e->shard_id] = fstat(*fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    }
    uint64_t size = r->shard_sizes[e->shard_id];
    if (e->offset > size || e->nbytes > size - e->offset)
        return vg_status_set(st, VG_DATA_LOSS,
                             "tensor %s: %s is truncated or the index lies: it claims %llu bytes at offset %llu, "
                             "the file has %llu bytes",
                             e->name, path, (unsigned long long)e->nbytes, (unsigned long long)e->offset,
                             (unsigned long long)size);
    return VG_OK;
}

vg_code vg__bundle_reader_check_data(vg__bundle_reader *r, const char *name, vg_status *st) {
    const vg__bundle_entry *e = need(r, name, st);
    if (!e) return VG_NOT_FOUND;
    char path[4096];
    return check_in_shard(r, e, path, sizeof path, st);
}

/* Reads the entry's stored bytes into dst (size e->nbytes) and checks the size. */
static vg_code read_bytes(vg__bundle_reader *r, const vg__bundle_entry *e, void *dst, char *path, size_t pn,
                          vg_status *st) {
    vg_code c = check_in_shard(r, e, path, pn, st); /* the shard's path into path, its bounds */
    if (c) return c;
    int *fd = &r->fds[e->shard_id];
    uint8_t *p = dst;
    uint64_t got = 0;
    while (got < e->nbytes) {
        size_t chunk = e->nbytes - got > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)(e->nbytes - got);
        ssize_t k = pread(*fd, p + got, chunk, (off_t)(e->offset + got));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return vg__io_errno_status(st, errno, "cannot read", path);
        if (k == 0)
            return vg_status_set(st, VG_DATA_LOSS, "tensor %s: %s is truncated (read %llu of %llu bytes at offset %llu)",
                                 e->name, path, (unsigned long long)got, (unsigned long long)e->nbytes,
                                 (unsigned long long)e->offset);
        got += (uint64_t)k;
    }
    return VG_OK;
}

static vg_code crc_mismatch(const vg__bundle_entry *e, const char *path, uint32_t got, vg_status *st) {
    return vg_status_set(st, VG_DATA_LOSS,
                         "Checksum does not match for tensor %s in %s: stored %08x vs. calculated on the restored "
                         "bytes %08x",
                         e->name, path, e->masked_crc, vg__crc32c_mask(got));
}

static void byte_swap(void *data, size_t nbytes, int dtype) {
    size_t unit = vg__io_dtype_size(dtype);
    if (dtype == VG__DT_COMPLEX64 || dtype == VG__DT_COMPLEX128) unit /= 2;
    vg__io_swap_units(data, nbytes, unit);
}

/* Element count of an entry's shape (saturating at UINT64_MAX). */
static uint64_t entry_numel(const vg__bundle_entry *e) {
    uint64_t n = 1;
    for (int i = 0; i < e->ndims; i++) {
        uint64_t d = (uint64_t)e->dims[i];
        if (d && n > UINT64_MAX / d) return UINT64_MAX;
        n *= d;
    }
    return n;
}

static vg_code check_readable(const vg__bundle_reader *r, const vg__bundle_entry *e, vg_status *st) {
    if (e->sliced)
        return vg_status_set(st, VG_UNIMPLEMENTED, "tensor %s in checkpoint %s is partitioned (sliced); not supported",
                             e->name, r->prefix);
    return VG_OK;
}

vg_code vg__bundle_reader_read(vg__bundle_reader *r, const char *name, void *dst, size_t dst_nbytes, vg_status *st) {
    const vg__bundle_entry *e = need(r, name, st);
    if (!e) return VG_NOT_FOUND;
    vg_code c = check_readable(r, e, st);
    if (c) return c;
    size_t esize = vg__io_dtype_size(e->dtype);
    if (!esize)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tensor %s has dtype %d, not a numeric type", name, e->dtype);
    uint64_t numel = entry_numel(e);
    if (numel > UINT64_MAX / esize || numel * esize != e->nbytes)
        return vg_status_set(st, VG_DATA_LOSS, "tensor %s in checkpoint %s: stored size %llu does not match its shape",
                             name, r->prefix, (unsigned long long)e->nbytes);
    if (dst_nbytes != e->nbytes)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tensor %s has %llu bytes, buffer has %zu", name,
                             (unsigned long long)e->nbytes, dst_nbytes);
    char path[4096];
    if ((c = read_bytes(r, e, dst, path, sizeof path, st))) return c;
    uint32_t crc = vg__crc32c(dst, dst_nbytes);
    if (VG__CRC_MISMATCH(vg__crc32c_mask(crc), e->masked_crc)) return crc_mismatch(e, path, crc, st);
    if (r->big_endian) byte_swap(dst, dst_nbytes, e->dtype);
    return VG_OK;
}

/* ---- strings ---- */

void vg__bundle_strings_free(char **strs, size_t *lens, int64_t n) {
    if (strs)
        for (int64_t i = 0; i < n; i++) vg__free(strs[i]);
    vg__free(strs);
    vg__free(lens);
}

/* Parses the string layout in buf (see bundle_writer.c), filling lens and checking
 * both checksums. */
static vg_code parse_string_lens(const vg__bundle_entry *e, const char *path, const uint8_t *buf, uint64_t n,
                                 size_t *lens, const uint8_t **bytes, vg_status *st) {
    const uint8_t *p = buf, *end = buf + e->nbytes;
    uint32_t crc = 0;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len;
        uint8_t le[8];
        if (!vg__pb_get_varint(&p, end, &len) || len > (uint64_t)(end - buf))
            return vg_status_set(st, VG_DATA_LOSS, "tensor %s in %s: bad string length", e->name, path);
        lens[i] = (size_t)len;
        total += len;
        vg__put_le64(le, len);
        crc = vg__crc32c_extend(crc, le, len > UINT32_MAX ? 8 : 4);
    }
    if (end - p < 4 || total != (uint64_t)(end - p - 4))
        return vg_status_set(st, VG_DATA_LOSS, "tensor %s in %s: string sizes do not add up", e->name, path);
    if (VG__CRC_MISMATCH(vg__crc32c_unmask(vg__get_le32(p)), crc))
        return vg_status_set(st, VG_DATA_LOSS, "tensor %s in %s: string length checksum mismatch", e->name, path);
    crc = vg__crc32c_extend(crc, p, 4);
    crc = vg__crc32c_extend(crc, p + 4, (size_t)total);
    if (VG__CRC_MISMATCH(vg__crc32c_mask(crc), e->masked_crc)) return crc_mismatch(e, path, crc, st);
    *bytes = p + 4;
    return VG_OK;
}

static vg_code split_strings(const size_t *lens, const uint8_t *bytes, char **strs, int64_t n, vg_status *st) {
    for (int64_t i = 0; i < n; i++) {
        if (!(strs[i] = vg__malloc(lens[i] + 1))) return VG_OOM(st, "checkpoint string");
        if (lens[i]) memcpy(strs[i], bytes, lens[i]);
        strs[i][lens[i]] = 0;
        bytes += lens[i];
    }
    return VG_OK;
}

vg_code vg__bundle_reader_read_strings(vg__bundle_reader *r, const char *name, char ***strs, size_t **lens,
                                       int64_t *n, vg_status *st) {
    *strs = NULL;
    *lens = NULL;
    *n = 0;
    const vg__bundle_entry *e = need(r, name, st);
    if (!e) return VG_NOT_FOUND;
    vg_code c = check_readable(r, e, st);
    if (c) return c;
    if (e->dtype != VG__DT_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tensor %s has dtype %d, not DT_STRING", name, e->dtype);
    uint64_t numel = entry_numel(e);
    if (numel > e->nbytes || e->nbytes > SIZE_MAX - 1) /* each element needs >= 1 length byte */
        return vg_status_set(st, VG_DATA_LOSS, "tensor %s in checkpoint %s: size does not match its shape", name,
                             r->prefix);
    char path[4096];
    if ((c = check_in_shard(r, e, path, sizeof path, st))) return c;
    uint8_t *buf = vg__malloc((size_t)e->nbytes + 1);
    char **s = vg__calloc(numel ? (size_t)numel : 1, sizeof *s);
    size_t *l = vg__calloc(numel ? (size_t)numel : 1, sizeof *l);
    const uint8_t *bytes = NULL;
    if (!buf || !s || !l) c = VG_OOM(st, "checkpoint strings");
    if (!c) c = read_bytes(r, e, buf, path, sizeof path, st);
    if (!c) c = parse_string_lens(e, path, buf, numel, l, &bytes, st);
    if (!c) c = split_strings(l, bytes, s, (int64_t)numel, st);
    vg__free(buf);
    if (c) {
        vg__bundle_strings_free(s, l, (int64_t)numel);
        return c;
    }
    *strs = s;
    *lens = l;
    *n = (int64_t)numel;
    return VG_OK;
}
