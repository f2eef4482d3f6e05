/*
 * bundle_writer.c - writes V2 checkpoints (tensor bundles), docs/formats.md §2.3-2.4.
 *
 * Tensor bytes stream to "<prefix>.data-00000-of-00001.tempstate<hex>" as they are
 * added (small tensors through a 4 MiB buffer, big ones written straight from the
 * caller's memory), so a 1 GB save never holds a second copy. finish() sorts the
 * entries by name, builds the .index SSTable in memory, writes it to its own temp
 * file, fsyncs both, renames data then index over the final names and fsyncs the
 * directory. Until both renames succeed, existing files are untouched.
 */
#include "io/io.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define WBUF_SIZE ((size_t)4 << 20)
#define PIECE ((size_t)4 << 20)
#define WRITE_BEHIND ((uint64_t)32 << 20)

/* BundleHeaderProto {num_shards: 1, endianness: LITTLE, version {producer: 1}}. */
static const uint8_t k_header[6] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};

typedef struct wentry {
    char *name;
    int dtype, ndims;
    int64_t *dims;
    uint64_t offset, size;
    uint32_t masked_crc;
} wentry;

struct vg__bundle_writer {
    char *prefix, *data_path, *index_path, *data_tmp;
    int fd;
    uint8_t *buf;
    size_t buf_len;
    uint64_t offset;           /* bytes added (buffered included) */
    uint64_t written, synced;  /* bytes handed to write(); write-behind requested up to */
    wentry *ents;
    size_t n, cap;
    uint32_t *slots;  /* name hash set: entry index + 1, 0 = empty */
    size_t nslots;
    vg_status err;    /* sticky write error */
    bool finished;
};

static char *path_cat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *p = vg__malloc(na + nb + 1);
    if (!p) return NULL;
    memcpy(p, a, na);
    memcpy(p + na, b, nb + 1);
    return p;
}

static vg_code make_parent_dir(const char *prefix, vg_status *st) {
    const char *slash = strrchr(prefix, '/');
    if (!slash || slash == prefix) return VG_OK;
    char *dir = vg__strndup(prefix, (size_t)(slash - prefix));
    if (!dir) return VG_OOM(st, "path");
    vg_code c = vg__io_mkdirs(dir, st);
    vg__free(dir);
    return c;
}

vg__bundle_writer *vg__bundle_writer_new(const char *prefix, vg_status *st) {
    if (!prefix || !*prefix) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "empty checkpoint prefix");
        return NULL;
    }
    vg__bundle_writer *w = vg__calloc(1, sizeof *w);
    if (!w) { VG_OOM(st, "bundle writer"); return NULL; }
    w->fd = -1;
    w->prefix = vg__strdup(prefix);
    w->data_path = path_cat(prefix, ".data-00000-of-00001");
    w->index_path = path_cat(prefix, ".index");
    w->buf = vg__malloc(WBUF_SIZE);
    if (!w->prefix || !w->data_path || !w->index_path || !w->buf) {
        VG_OOM(st, "bundle writer");
        goto fail;
    }
    if (make_parent_dir(prefix, st) || vg__io_temp_create(w->data_path, &w->data_tmp, &w->fd, st)) goto fail;
    vg_status_clear(&w->err);
    return w;
fail:
    vg__bundle_writer_free(w);
    return NULL;
}

void vg__bundle_writer_free(vg__bundle_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    if (w->data_tmp && !w->finished) unlink(w->data_tmp);
    for (size_t i = 0; i < w->n; i++) {
        vg__free(w->ents[i].name);
        vg__free(w->ents[i].dims);
    }
    vg__free(w->ents);
    vg__free(w->slots);
    vg__free(w->buf);
    vg__free(w->data_tmp);
    vg__free(w->index_path);
    vg__free(w->data_path);
    vg__free(w->prefix);
    vg__free(w);
}

/* ---- streaming the data file ---- */

/* Reports the sticky error. The writer is dead from here on, so its temp data file is
 * removed now (frees the space at once, which matters after ENOSPC). */
static vg_code sticky(vg__bundle_writer *w, vg_status *st) {
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    if (w->data_tmp && !w->finished) {
        unlink(w->data_tmp);
        vg__free(w->data_tmp);
        w->data_tmp = NULL;
    }
    vg_status_copy(st, &w->err);
    return w->err.code;
}

/* Hands bytes to the kernel. Every WRITE_BEHIND bytes, asks it to start writing them
 * back (a hint, no durability promise) so the device works while we keep producing
 * and the final fsync has little left to do. */
static vg_code file_write(vg__bundle_writer *w, const void *p, size_t n) {
    if (vg__io_write_all(w->fd, p, n, w->data_tmp, &w->err)) return w->err.code;
    w->written += n;
#if defined(SYNC_FILE_RANGE_WRITE) && !defined(VG_NO_WRITE_BEHIND)
    if (w->written - w->synced >= WRITE_BEHIND) {
        sync_file_range(w->fd, (off_t)w->synced, (off_t)(w->written - w->synced), SYNC_FILE_RANGE_WRITE);
        w->synced = w->written;
    }
#endif
    return VG_OK;
}

static vg_code drain(vg__bundle_writer *w) {
    if (w->buf_len && file_write(w, w->buf, w->buf_len)) return w->err.code;
    w->buf_len = 0;
    return VG_OK;
}

/* Appends bytes to the data file, updating *crc. Small pieces are buffered; big ones
 * are checksummed and written straight from the caller's memory in PIECE-sized steps
 * (each piece is still in cache when write() copies it). */
static vg_code put(vg__bundle_writer *w, const void *p, size_t n, uint32_t *crc) {
    if (w->err.code) return w->err.code;
    w->offset += n;
    if (n > WBUF_SIZE - w->buf_len) {
        if (drain(w)) return w->err.code;
        if (n >= WBUF_SIZE / 2) {
            const uint8_t *q = p;
            for (size_t done = 0; done < n;) {
                size_t k = n - done < PIECE ? n - done : PIECE;
                if (crc) *crc = vg__crc32c_extend(*crc, q + done, k);
                if (file_write(w, q + done, k)) return w->err.code;
                done += k;
            }
            return VG_OK;
        }
    }
    if (crc) *crc = vg__crc32c_extend(*crc, p, n);
    if (n) memcpy(w->buf + w->buf_len, p, n);
    w->buf_len += n;
    return VG_OK;
}

/* ---- entries ---- */

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    while (*s) h = (h ^ (uint8_t)*s++) * 16777619u;
    return h;
}

/* Index of the slot holding name, or of the empty slot where it would go. */
static size_t slot_of(const vg__bundle_writer *w, const char *name) {
    size_t mask = w->nslots - 1, i = name_hash(name) & mask;
    while (w->slots[i] && strcmp(w->ents[w->slots[i] - 1].name, name) != 0) i = (i + 1) & mask;
    return i;
}

static bool rehash(vg__bundle_writer *w) {
    size_t ns = w->nslots ? w->nslots * 2 : 64;
    uint32_t *s = vg__calloc(ns, sizeof *s);
    if (!s) return false;
    vg__free(w->slots);
    w->slots = s;
    w->nslots = ns;
    for (size_t k = 0; k < w->n; k++) w->slots[slot_of(w, w->ents[k].name)] = (uint32_t)(k + 1);
    return true;
}

static vg_code check_name(vg__bundle_writer *w, const char *name, vg_status *st) {
    if (!name || !*name) return vg_status_set(st, VG_INVALID_ARGUMENT, "empty tensor name in checkpoint %s", w->prefix);
    if (w->finished) return vg_status_set(st, VG_FAILED_PRECONDITION, "checkpoint %s already finished", w->prefix);
    if (w->err.code) return sticky(w, st);
    if (w->nslots && w->slots[slot_of(w, name)])
        return vg_status_set(st, VG_ALREADY_EXISTS, "tensor %s added twice to checkpoint %s", name, w->prefix);
    return VG_OK;
}

/* Element count of dims; -1 when invalid or overflowing. */
static int64_t numel_of(const int64_t *dims, int ndims) {
    if (ndims < 0 || ndims > VG__IO_MAX_DIMS || (ndims && !dims)) return -1;
    int64_t n = 1;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] && n > INT64_MAX / dims[i]) return -1;
        n *= dims[i];
    }
    return n;
}

/* Records an entry whose bytes were just streamed (starting at `offset`). */
static vg_code push_entry(vg__bundle_writer *w, const char *name, int dtype, const int64_t *dims, int ndims,
                          uint64_t offset, uint32_t crc, vg_status *st) {
    if ((w->n + 1) * 2 > w->nslots && !rehash(w)) goto oom;
    if (!vg__io_grow((void **)&w->ents, &w->cap, w->n + 1, 16, sizeof *w->ents)) goto oom;
    wentry *e = &w->ents[w->n];
    memset(e, 0, sizeof *e);
    e->name = vg__strdup(name);
    e->dims = vg__malloc(ndims ? (size_t)ndims * sizeof *dims : 1);
    if (!e->name || !e->dims) {
        vg__free(e->name);
        vg__free(e->dims);
        goto oom;
    }
    if (ndims) memcpy(e->dims, dims, (size_t)ndims * sizeof *dims);
    e->dtype = dtype;
    e->ndims = ndims;
    e->offset = offset;
    e->size = w->offset - offset;
    e->masked_crc = vg__crc32c_mask(crc);
    w->slots[slot_of(w, name)] = (uint32_t)(w->n + 1);
    w->n++;
    return VG_OK;
oom:
    /* The bytes are in the file but unindexed: the writer cannot continue. */
    VG_OOM(&w->err, "checkpoint entry");
    return sticky(w, st);
}

vg_code vg__bundle_writer_add(vg__bundle_writer *w, const char *name, int dtype, const int64_t *dims, int ndims,
                              const void *data, size_t nbytes, vg_status *st) {
    vg_code c = check_name(w, name, st);
    if (c) return c;
    size_t esize = vg__io_dtype_size(dtype);
    if (!esize)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tensor %s: dtype %d cannot be saved as raw bytes", name, dtype);
    int64_t numel = numel_of(dims, ndims);
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / esize || (size_t)numel * esize != nbytes || (nbytes && !data))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tensor %s: bad shape or size (%zu bytes)", name, nbytes);
    uint64_t offset = w->offset;
    uint32_t crc = 0;
    if (put(w, data, nbytes, &crc)) return sticky(w, st);
    return push_entry(w, name, dtype, dims, ndims, offset, crc, st);
}

/* TF's string layout: varint64 lengths | masked crc of the lengths (as uint32 LE, or
 * uint64 LE above 4 GiB) | the bytes. The entry crc covers those uint32 lengths, the 4
 * checksum bytes and the string bytes. */
vg_code vg__bundle_writer_add_strings(vg__bundle_writer *w, const char *name, const int64_t *dims, int ndims,
                                      const char *const *strs, const size_t *lens, int64_t n, vg_status *st) {
    vg_code c = check_name(w, name, st);
    if (c) return c;
    int64_t numel = numel_of(dims, ndims);
    if (numel < 0 || numel != n || (n && !strs))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tensor %s: %lld strings for its shape", name, (long long)n);
    uint64_t offset = w->offset;
    uint32_t crc = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t len = lens ? lens[i] : strlen(strs[i]);
        uint8_t v[10], le[8];
        if (put(w, v, (size_t)vg__pb_encode_varint(v, len), NULL)) return sticky(w, st);
        vg__put_le64(le, len);
        crc = vg__crc32c_extend(crc, le, len > UINT32_MAX ? 8 : 4);
    }
    uint8_t chk[4];
    vg__put_le32(chk, vg__crc32c_mask(crc));
    if (put(w, chk, 4, &crc)) return sticky(w, st);
    for (int64_t i = 0; i < n; i++)
        if (put(w, strs[i], lens ? lens[i] : strlen(strs[i]), &crc)) return sticky(w, st);
    return push_entry(w, name, VG__DT_STRING, dims, ndims, offset, crc, st);
}

/* ---- finish ---- */

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const wentry *)a)->name, ((const wentry *)b)->name);
}

/* BundleEntryProto, fields in order, proto3 zero values omitted, shape always. */
static void encode_entry(vg__pb_buf *b, const wentry *e) {
    vg__pb_put_uint64(b, 1, (uint64_t)e->dtype);
    size_t shape_len = 0;
    for (int i = 0; i < e->ndims; i++)
        shape_len += 2 + (e->dims[i] ? 1 + (size_t)vg__pb_varint_size((uint64_t)e->dims[i]) : 0);
    vg__pb_put_tag(b, 2, VG__PB_LEN);
    vg__pb_put_varint(b, shape_len);
    for (int i = 0; i < e->ndims; i++) {
        uint64_t d = (uint64_t)e->dims[i];
        vg__pb_put_tag(b, 2, VG__PB_LEN);
        vg__pb_put_varint(b, d ? 1 + (uint64_t)vg__pb_varint_size(d) : 0);
        if (d) vg__pb_put_uint64(b, 1, d);
    }
    if (e->offset) vg__pb_put_uint64(b, 4, e->offset);
    if (e->size) vg__pb_put_uint64(b, 5, e->size);
    if (e->masked_crc) vg__pb_put_fixed32_field(b, 6, e->masked_crc);
}

static vg_code build_index(vg__bundle_writer *w, vg__sstable_builder **out, vg_status *st) {
    vg__sstable_builder *sb = vg__sstable_builder_new(NULL, false, st);
    if (!sb) return st ? st->code : VG_RESOURCE_EXHAUSTED;
    vg_code c = vg__sstable_builder_add(sb, "", 0, k_header, sizeof k_header, st);
    vg__pb_buf val;
    vg__pb_init(&val);
    for (size_t i = 0; !c && i < w->n; i++) {
        vg__pb_reset(&val);
        encode_entry(&val, &w->ents[i]);
        c = vg__pb_buf_status(&val, "checkpoint index", st);
        if (!c) c = vg__sstable_builder_add(sb, w->ents[i].name, strlen(w->ents[i].name), val.data, val.len, st);
    }
    vg__pb_free(&val);
    if (!c) c = vg__sstable_builder_finish(sb, st);
    if (c) {
        vg__sstable_builder_free(sb);
        return c;
    }
    *out = sb;
    return VG_OK;
}

static vg_code write_index_tmp(vg__bundle_writer *w, char **index_tmp, vg_status *st) {
    vg__sstable_builder *sb = NULL;
    vg_code c = build_index(w, &sb, st);
    if (c) return c;
    int fd;
    c = vg__io_temp_create(w->index_path, index_tmp, &fd, st);
    if (!c) {
        size_t len;
        const uint8_t *p = vg__sstable_builder_data(sb, &len);
        c = vg__io_write_all(fd, p, len, *index_tmp, st);
        if (c) close(fd);
        else c = vg__io_fsync_close(fd, *index_tmp, st);
        if (c) {
            unlink(*index_tmp);
            vg__free(*index_tmp);
            *index_tmp = NULL;
        }
    }
    vg__sstable_builder_free(sb);
    return c;
}

/* Every failure is sticky: the writer can only be freed afterwards (which removes
 * whatever temp file is left). */
static vg_code finish(vg__bundle_writer *w, vg_status *st) {
    if (drain(w)) return w->err.code;
    int fd = w->fd;
    w->fd = -1;
    vg_code c = vg__io_fsync_close(fd, w->data_tmp, st);
    if (c) return c;
    if (w->n > 1) qsort(w->ents, w->n, sizeof *w->ents, cmp_entry);
    char *index_tmp = NULL;
    c = write_index_tmp(w, &index_tmp, st);
    if (c) return c;
    c = vg__io_rename(w->data_tmp, w->data_path, st);
    if (!c) {
        c = vg__io_rename(index_tmp, w->index_path, st);
        if (c) unlink(w->data_path); /* never leave new data under an old index */
    }
    if (c) unlink(index_tmp);
    vg__free(index_tmp);
    if (c) return c;
    w->finished = true; /* the temp names are gone: nothing to clean up any more */
    return vg__io_fsync_parent_dir(w->index_path, st);
}

vg_code vg__bundle_writer_finish(vg__bundle_writer *w, vg_status *st) {
    if (w->finished) return vg_status_set(st, VG_FAILED_PRECONDITION, "checkpoint %s already finished", w->prefix);
    if (w->err.code) return sticky(w, st);
    if (finish(w, &w->err) && !w->finished) return sticky(w, st);
    vg_status_copy(st, &w->err); /* OK, or a failed directory fsync after the renames */
    return w->err.code;
}
