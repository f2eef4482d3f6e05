/*
 * tfrecord.c - TFRecord framing (event files, .tfrecord data files):
 *     fixed64 len | fixed32 mask(crc32c(len bytes)) | data | fixed32 mask(crc32c(data))
 * A buffered writer over a file descriptor and a pread-based reader that never caches
 * end-of-file, so a reader stopped at a torn last record can retry once the file grows
 * (TensorBoard-style tailing of a live event file).
 */
#include "io/io.h"
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#define WBUF_SIZE (256 * 1024)
#define RBUF_MIN (256 * 1024)

struct vg__tfrecord_writer {
    int fd;
    char *path;
    uint8_t *buf;
    size_t len;
    vg_status err; /* sticky first write error */
};

void vg__tfrecord_header(uint8_t hdr[12], uint64_t len) {
    vg__put_le64(hdr, len);
    vg__put_le32(hdr + 8, vg__crc32c_mask(vg__crc32c(hdr, 8)));
}

static vg__tfrecord_writer *writer_open(const char *path, int flags, vg_status *st) {
    vg__tfrecord_writer *w = vg__calloc(1, sizeof *w);
    if (!w) { VG_OOM(st, "tfrecord writer"); return NULL; }
    w->fd = -1;
    w->path = vg__strdup(path);
    w->buf = vg__malloc(WBUF_SIZE);
    if (!w->path || !w->buf) {
        VG_OOM(st, "tfrecord writer");
        goto fail;
    }
    w->fd = open(path, flags, 0644);
    if (w->fd < 0) {
        vg__io_errno_status(st, errno, "cannot open", path);
        goto fail;
    }
    vg_status_clear(&w->err);
    return w;
fail:
    vg__free(w->path);
    vg__free(w->buf);
    vg__free(w);
    return NULL;
}

vg__tfrecord_writer *vg__tfrecord_writer_open(const char *path, bool append, vg_status *st) {
    return writer_open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), st);
}

vg__tfrecord_writer *vg__tfrecord_writer_create(const char *path, vg_status *st) {
    return writer_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st);
}

static vg_code wfail(vg__tfrecord_writer *w, vg_status *st) {
    vg_status_copy(st, &w->err);
    return w->err.code;
}

static vg_code drain(vg__tfrecord_writer *w, vg_status *st) {
    if (w->err.code) return wfail(w, st);
    if (w->len && vg__io_write_all(w->fd, w->buf, w->len, w->path, &w->err)) return wfail(w, st);
    w->len = 0;
    return VG_OK;
}

static vg_code put(vg__tfrecord_writer *w, const void *p, size_t n, vg_status *st) {
    if (n > WBUF_SIZE - w->len) {
        if (drain(w, st)) return w->err.code;
        if (n >= WBUF_SIZE) { /* big payloads go straight to the file */
            if (vg__io_write_all(w->fd, p, n, w->path, &w->err)) return wfail(w, st);
            return VG_OK;
        }
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
    return VG_OK;
}

vg_code vg__tfrecord_writer_write(vg__tfrecord_writer *w, const void *data, size_t len, vg_status *st) {
    if (w->err.code) return wfail(w, st);
    uint8_t hdr[12], foot[4];
    vg__tfrecord_header(hdr, len);
    vg__put_le32(foot, vg__crc32c_mask(vg__crc32c(data, len)));
    if (put(w, hdr, 12, st) || put(w, data, len, st) || put(w, foot, 4, st)) return w->err.code;
    return VG_OK;
}

vg_code vg__tfrecord_writer_flush(vg__tfrecord_writer *w, bool fsync_too, vg_status *st) {
    if (drain(w, st)) return w->err.code;
    if (fsync_too && fsync(w->fd) != 0 && errno != EINVAL) {
        vg__io_errno_status(&w->err, errno, "cannot fsync", w->path);
        return wfail(w, st);
    }
    return VG_OK;
}

vg_code vg__tfrecord_writer_close(vg__tfrecord_writer *w, vg_status *st) {
    if (!w) return VG_OK;
    vg_code c = drain(w, st);
    if (close(w->fd) != 0 && c == VG_OK) c = vg__io_errno_status(st, errno, "cannot close", w->path);
    vg__free(w->path);
    vg__free(w->buf);
    vg__free(w);
    return c;
}

/* ---- reader ---- */

enum { BAD_NONE, BAD_LENGTH, BAD_DATA, BAD_TOO_LARGE };

struct vg__tfrecord_reader {
    int fd;
    char *path;
    uint64_t off;      /* next record */
    uint8_t *buf;      /* file bytes [buf_off, buf_off + buf_len) */
    size_t buf_len, buf_cap;
    uint64_t buf_off;
    int bad;           /* what the last "corrupted" error was */
    uint64_t bad_skip; /* record size when the length was intact */
};

vg__tfrecord_reader *vg__tfrecord_reader_open(const char *path, vg_status *st) {
    vg__tfrecord_reader *r =
        vg__io_new_with_path(sizeof *r, offsetof(vg__tfrecord_reader, path), path, "tfrecord reader", st);
    if (!r) return NULL;
    r->fd = vg__io_open_regular(path, st);
    if (r->fd < 0) {
        vg__free(r->path);
        vg__free(r);
        return NULL;
    }
    return r;
}

void vg__tfrecord_reader_close(vg__tfrecord_reader *r) {
    if (!r) return;
    close(r->fd);
    vg__free(r->path);
    vg__free(r->buf);
    vg__free(r);
}

uint64_t vg__tfrecord_reader_offset(const vg__tfrecord_reader *r) { return r->off; }

/* Makes file bytes [off, off + n) available at *p; *avail < n when the file is
 * shorter now. Never remembers EOF: a short buffer is re-read on the next miss. */
static vg_code fill(vg__tfrecord_reader *r, uint64_t off, size_t n, const uint8_t **p, size_t *avail,
                    vg_status *st) {
    if (off >= r->buf_off && off - r->buf_off <= r->buf_len && n <= r->buf_len - (off - r->buf_off)) {
        *p = r->buf + (off - r->buf_off);
        *avail = n;
        return VG_OK;
    }
    size_t want = n < RBUF_MIN ? RBUF_MIN : n;
    if (want > r->buf_cap) {
        uint8_t *nb = vg__malloc(want);
        if (!nb) return VG_OOM(st, "tfrecord read buffer");
        vg__free(r->buf);
        r->buf = nb;
        r->buf_cap = want;
    }
    size_t got = 0;
    while (got < r->buf_cap) {
        ssize_t k = pread(r->fd, r->buf + got, r->buf_cap - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            r->buf_len = 0;
            return vg__io_errno_status(st, errno, "cannot read", r->path);
        }
        if (k == 0) break;
        got += (size_t)k;
    }
    r->buf_off = off;
    r->buf_len = got;
    *p = r->buf;
    *avail = got < n ? got : n;
    return VG_OK;
}

static vg_code truncated(vg__tfrecord_reader *r, vg_status *st) {
    return vg_status_set(st, VG_DATA_LOSS, "truncated record at offset %llu in %s",
                         (unsigned long long)r->off, r->path);
}

static uint64_t file_size(vg__tfrecord_reader *r) {
    struct stat sb;
    return fstat(r->fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Checks the record at off. *kind: BAD_NONE (good), BAD_LENGTH, BAD_DATA, or -1 when
 * truncated / clean end (*avail0 = header bytes present). */
static vg_code check_at(vg__tfrecord_reader *r, uint64_t off, int *kind, uint64_t *len, size_t *hdr_avail,
                        vg_status *st) {
    const uint8_t *p = NULL;
    size_t avail = 0;
    vg_code c = fill(r, off, 12, &p, &avail, st);
    if (c) return c;
    *hdr_avail = avail;
    *kind = -1;
    if (avail < 12) return VG_OK;
    *len = vg__get_le64(p);
    if (VG__CRC_MISMATCH(vg__crc32c_unmask(vg__get_le32(p + 8)), vg__crc32c(p, 8))) {
        *kind = BAD_LENGTH;
        return VG_OK;
    }
    if (*len > (uint64_t)vg__io_max_record_bytes() && off + 16 + *len <= file_size(r)) {
        *kind = BAD_TOO_LARGE; /* present in full, but over the caller's limit */
        return VG_OK;
    }
    if (*len > UINT64_MAX - off - 16 || (16 + *len > r->buf_cap && off + 16 + *len > file_size(r)))
        return VG_OK; /* ends past the end of the file */
    c = fill(r, off, (size_t)(16 + *len), &p, &avail, st);
    if (c || avail < 16 + *len) return c;
    uint32_t want = vg__crc32c_unmask(vg__get_le32(p + 12 + *len));
    *kind = VG__CRC_MISMATCH(vg__crc32c(p + 12, (size_t)*len), want) ? BAD_DATA : BAD_NONE;
    return VG_OK;
}

vg_code vg__tfrecord_reader_next(vg__tfrecord_reader *r, const uint8_t **data, size_t *len, vg_status *st) {
    int kind;
    uint64_t n = 0;
    size_t hdr_avail;
    vg_code c = check_at(r, r->off, &kind, &n, &hdr_avail, st);
    if (c) return c;
    if (kind == -1) {
        if (hdr_avail == 0) return VG_OUT_OF_RANGE;
        return truncated(r, st);
    }
    if (kind == BAD_TOO_LARGE) { /* skippable as a record with a bad checksum */
        r->bad = BAD_DATA;
        r->bad_skip = 16 + n;
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                             "record at offset %llu in %s is %llu bytes, over the record size limit of %lld bytes "
                             "(max_record_bytes, vg_set_decode_limits)",
                             (unsigned long long)r->off, r->path, (unsigned long long)n,
                             (long long)vg__io_max_record_bytes());
    }
    if (kind != BAD_NONE) {
        r->bad = kind;
        r->bad_skip = 16 + n;
        return vg_status_set(st, VG_DATA_LOSS, "corrupted record at offset %llu in %s: %s checksum mismatch",
                             (unsigned long long)r->off, r->path, kind == BAD_LENGTH ? "length" : "data");
    }
    *data = r->buf + (r->off - r->buf_off) + 12;
    *len = (size_t)n;
    r->off += 16 + n;
    r->bad = BAD_NONE;
    return VG_OK;
}

vg_code vg__tfrecord_reader_skip_corrupt(vg__tfrecord_reader *r, vg_status *st) {
    if (r->bad == BAD_NONE)
        return vg_status_set(st, VG_FAILED_PRECONDITION, "no corrupted record to skip in %s", r->path);
    if (r->bad == BAD_DATA) {
        r->off += r->bad_skip;
        r->bad = BAD_NONE;
        return VG_OK;
    }
    /* The length is unreliable: look for the next offset holding a record that verifies. */
    for (uint64_t pos = r->off + 1;; pos++) {
        int kind;
        uint64_t n;
        size_t hdr_avail;
        vg_code c = check_at(r, pos, &kind, &n, &hdr_avail, st);
        if (c) return c;
        if (kind == BAD_NONE || (kind == -1 && hdr_avail < 12)) {
            r->off = pos;
            r->bad = BAD_NONE;
            if (kind == BAD_NONE) return VG_OK;
            return vg_status_set(st, VG_OUT_OF_RANGE, "no valid record after the corruption in %s", r->path);
        }
    }
}
