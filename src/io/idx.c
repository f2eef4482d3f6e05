/*
 * idx.c - IDX files (MNIST, Fashion-MNIST): magic = 00 00 <type> <ndims>, then ndims
 * big-endian uint32 sizes, then the data in big-endian row-major order. Read through
 * zlib's gz* functions, which handle both gzip'd and plain files. A whole-file read
 * and a record stream (records = slices along the first dimension).
 * (zlib allocates its own buffers with malloc; everything else uses the hook.)
 */
#include "io/io.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

struct vg__idx_reader {
    gzFile gz;
    char *path;
    uint8_t type;
    size_t esize;
    int ndims;
    int64_t dims[4];
    int64_t num_records, next;
    size_t record_bytes;
    size_t header_len;
    uint64_t file_size; /* bytes on disk (compressed size for gzip'd files) */
};

/* Deflate cannot expand data more than ~1032:1; a header claiming more data than that
 * lies (checked before anything is sized by the count). */
#define IDX_MAX_GZIP_RATIO 1100u

static size_t type_size(uint8_t t) {
    switch (t) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
    }
}

static vg_code gz_fail(const vg__idx_reader *r, vg_status *st, const char *what) {
    int zerr = 0;
    const char *m = gzerror(r->gz, &zerr);
    if (zerr == Z_MEM_ERROR) return VG_OOM(st, r->path);
    if (zerr == Z_ERRNO) return vg__io_errno_status(st, errno, "cannot read", r->path);
    return vg_status_set(st, VG_DATA_LOSS, "%s: %s%s%s", r->path, what, zerr ? ": " : "", zerr ? m : "");
}

/* Reads exactly n bytes (DATA_LOSS when the data ends first). */
static vg_code gz_read_all(vg__idx_reader *r, void *dst, size_t n, vg_status *st) {
    uint8_t *p = dst;
    while (n) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int k = gzread(r->gz, p, chunk);
        if (k < 0) return gz_fail(r, st, "read error");
        if (k == 0) return gz_fail(r, st, "data is shorter than the header says");
        p += k;
        n -= (size_t)k;
    }
    return VG_OK;
}

static vg_code read_header(vg__idx_reader *r, uint8_t expected_type, vg_status *st) {
    uint8_t m[4], d[16];
    int k = gzread(r->gz, m, 4);
    if (k != 4 || m[0] || m[1] || !type_size(m[2]) || m[3] < 1 || m[3] > 4)
        return k < 0 ? gz_fail(r, st, "read error")
                     : vg_status_set(st, VG_DATA_LOSS, "%s: not an IDX file (bad magic number)", r->path);
    if (expected_type && m[2] != expected_type)
        return vg_status_set(st, VG_DATA_LOSS, "%s: IDX type 0x%02x, expected 0x%02x", r->path, m[2], expected_type);
    r->type = m[2];
    r->esize = type_size(m[2]);
    r->ndims = m[3];
    vg_code c = gz_read_all(r, d, 4 * (size_t)r->ndims, st);
    if (c) return c;
    size_t rec = r->esize;
    for (int i = 0; i < r->ndims; i++) {
        r->dims[i] = (int64_t)(((uint32_t)d[4 * i] << 24) | ((uint32_t)d[4 * i + 1] << 16) |
                               ((uint32_t)d[4 * i + 2] << 8) | d[4 * i + 3]);
        if (i && r->dims[i] && rec > SIZE_MAX / 2 / (size_t)r->dims[i])
            return vg_status_set(st, VG_DATA_LOSS, "%s: IDX dimensions too large", r->path);
        if (i) rec *= (size_t)r->dims[i];
    }
    r->num_records = r->dims[0];
    r->record_bytes = rec;
    r->header_len = 4 + 4 * (size_t)r->ndims;
    r->next = 0;
    /* The counts must fit the file: a plain file holds exactly header + data bytes (at
     * least); a gzip'd one cannot hold more than the deflate ratio allows. */
    uint64_t data = (uint64_t)r->num_records * rec; /* < 2^32 * SIZE_MAX/2: checked below */
    bool overflow = rec && (uint64_t)r->num_records > UINT64_MAX / 2 / rec;
    bool plain = gzdirect(r->gz) != 0;
    uint64_t room = r->file_size > r->header_len ? r->file_size - r->header_len : 0;
    if (!plain) room = r->file_size > UINT64_MAX / IDX_MAX_GZIP_RATIO ? UINT64_MAX : r->file_size * IDX_MAX_GZIP_RATIO;
    /* one record must fit too (readers allocate one) unless it is small: an empty file
     * of 28x28 images is a valid, empty set */
    if (overflow || data > room || (rec > room && rec > ((size_t)1 << 20)))
        return vg_status_set(st, VG_DATA_LOSS,
                             "%s: IDX header at offset 4 claims %lld records of %zu bytes, but the %sfile has room "
                             "for at most %llu data bytes",
                             r->path, (long long)r->num_records, rec, plain ? "" : "gzip'd ", (unsigned long long)room);
    return VG_OK;
}

void vg__idx_reader_close(vg__idx_reader *r) {
    if (!r) return;
    if (r->gz) gzclose(r->gz);
    vg__free(r->path);
    vg__free(r);
}

vg__idx_reader *vg__idx_reader_open(const char *path, uint8_t expected_type, vg_status *st) {
    vg__idx_reader *r = vg__io_new_with_path(sizeof *r, offsetof(vg__idx_reader, path), path, "idx reader", st);
    if (!r) return NULL;
    int fd = vg__io_open_regular(path, st);
    if (fd < 0) goto fail;
    struct stat sb;
    r->file_size = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    if (!(r->gz = gzdopen(fd, "rb"))) {
        close(fd);
        VG_OOM(st, path);
        goto fail;
    }
    gzbuffer(r->gz, 256 * 1024);
    if (read_header(r, expected_type, st)) goto fail;
    return r;
fail:
    vg__idx_reader_close(r);
    return NULL;
}

int64_t vg__idx_reader_num_records(const vg__idx_reader *r) { return r->num_records; }
size_t vg__idx_reader_record_bytes(const vg__idx_reader *r) { return r->record_bytes; }

const int64_t *vg__idx_reader_dims(const vg__idx_reader *r, int *ndims) {
    if (ndims) *ndims = r->ndims;
    return r->dims;
}

/* Big-endian file data -> host order. */
static void to_host(void *data, size_t nbytes, size_t esize) { vg__io_swap_units(data, nbytes, esize); }

vg_code vg__idx_reader_next_record(vg__idx_reader *r, void *dst, vg_status *st) {
    if (r->next >= r->num_records) return VG_OUT_OF_RANGE;
    vg_code c = gz_read_all(r, dst, r->record_bytes, st);
    if (c) return c;
    to_host(dst, r->record_bytes, r->esize);
    r->next++;
    return VG_OK;
}

vg_code vg__idx_reader_reset(vg__idx_reader *r, vg_status *st) {
    if (gzseek(r->gz, (z_off_t)r->header_len, SEEK_SET) < 0) return gz_fail(r, st, "cannot rewind");
    r->next = 0;
    return VG_OK;
}

/* Reads all records, growing the buffer as data arrives so that a lying header cannot
 * make us allocate more than the file holds (plus one doubling). */
static vg_code read_body(vg__idx_reader *r, uint8_t **out, size_t *nbytes, vg_status *st) {
    if (r->record_bytes && (uint64_t)r->num_records > SIZE_MAX / r->record_bytes)
        return vg_status_set(st, VG_DATA_LOSS, "%s: IDX dimensions too large", r->path);
    size_t total = (size_t)r->num_records * r->record_bytes, cap = total < (64u << 20) ? total : (64u << 20), got = 0;
    uint8_t *buf = vg__malloc(cap ? cap : 1);
    if (!buf) return VG_OOM(st, r->path);
    while (got < total) {
        if (got == cap) {
            size_t nc = cap > total / 2 ? total : cap * 2;
            uint8_t *nb = vg__realloc(buf, got, nc);
            if (!nb) {
                vg__free(buf);
                return VG_OOM(st, r->path);
            }
            buf = nb;
            cap = nc;
        }
        vg_code c = gz_read_all(r, buf + got, cap - got, st);
        if (c) {
            vg__free(buf);
            return c;
        }
        got = cap;
    }
    to_host(buf, total, r->esize);
    *out = buf;
    *nbytes = total;
    return VG_OK;
}

vg_code vg__idx_read(const char *path, uint8_t expected_type, int64_t dims[4], int *ndims, void **data,
                     size_t *nbytes, vg_status *st) {
    vg_status local;
    if (!st) st = &local;
    *data = NULL;
    *nbytes = 0;
    vg__idx_reader *r = vg__idx_reader_open(path, expected_type, st);
    if (!r) return st->code;
    uint8_t *buf = NULL;
    vg_code c = read_body(r, &buf, nbytes, st);
    if (!c) {
        for (int i = 0; i < 4; i++) dims[i] = i < r->ndims ? r->dims[i] : 0;
        *ndims = r->ndims;
        *data = buf;
        r->next = r->num_records;
    }
    vg__idx_reader_close(r);
    return c;
}

uint8_t vg__idx_reader_type(const vg__idx_reader *r) { return r->type; }
