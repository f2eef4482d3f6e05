/*
 * zrecord.c - TFRecord files with TF's compression options: the reader behind
 * TFRecordReader (plain files go through tfrecord.c's reader; ZLIB and GZIP files are
 * one zlib / gzip stream over the whole record sequence, as TF's ZlibOutputBuffer
 * writes them) and the public vg_tfrecord_writer.
 */
#include "io/example_io.h"
#include "vigil/example.h"
#include <errno.h>
#include <sys/stat.h>
#include <zlib.h>

#define ZCHUNK 65536

vg_code vg_compression_parse(const char *s, vg_compression *out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_compression_parse: out is NULL");
    if (!s || !*s) *out = VG_COMPRESSION_NONE;
    else if (strcmp(s, "ZLIB") == 0) *out = VG_COMPRESSION_ZLIB;
    else if (strcmp(s, "GZIP") == 0) *out = VG_COMPRESSION_GZIP;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "Unsupported compression_type: %s", s);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* reader */

struct vg__zrecord_reader {
    vg__tfrecord_reader *plain;
    FILE *f;
    char *path;
    z_stream zs;
    bool zinit, zend;
    uint8_t in[ZCHUNK];
    uint8_t *out;          /* decompressed bytes [pos, len) not yet consumed */
    size_t out_pos, out_len, out_cap;
    uint64_t off;          /* stream offset of the next record */
    uint64_t file_size;    /* compressed bytes in the file (at open) */
    uint64_t file_read;    /* compressed bytes read so far */
    uint8_t *rec;          /* the current record */
    size_t rec_cap;
};

vg__zrecord_reader *vg__zrecord_reader_open(const char *path, int compression, vg_status *st) {
    vg__zrecord_reader *r =
        vg__io_new_with_path(sizeof *r, offsetof(vg__zrecord_reader, path), path, "record reader", st);
    if (!r) return NULL;
    if (compression == VG_COMPRESSION_NONE) {
        if ((r->plain = vg__tfrecord_reader_open(path, st))) return r;
        vg__free(r->path);
        vg__free(r);
        return NULL;
    }
    if (compression != VG_COMPRESSION_ZLIB && compression != VG_COMPRESSION_GZIP) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "unknown compression %d", compression);
        vg__zrecord_reader_close(r);
        return NULL;
    }
    if (!(r->f = vg__io_fopen_regular(path, st))) { /* no FIFO, no /dev/zero */
        vg__zrecord_reader_close(r);
        return NULL;
    }
    struct stat sb;
    r->file_size = fstat(fileno(r->f), &sb) == 0 ? (uint64_t)sb.st_size : 0;
    if (inflateInit2(&r->zs, compression == VG_COMPRESSION_GZIP ? MAX_WBITS + 16 : MAX_WBITS) != Z_OK) {
        VG_OOM(st, "zlib stream");
        vg__zrecord_reader_close(r);
        return NULL;
    }
    r->zinit = true;
    return r;
}

void vg__zrecord_reader_close(vg__zrecord_reader *r) {
    if (!r) return;
    vg__tfrecord_reader_close(r->plain);
    if (r->f) fclose(r->f);
    if (r->zinit) inflateEnd(&r->zs);
    vg__free(r->path);
    vg__free(r->out);
    vg__free(r->rec);
    vg__free(r);
}

/* Decompresses until at least `need` unconsumed bytes are buffered or the stream
 * ends. Memory grows with the bytes actually produced, never with `need` alone. */
static vg_code zfill(vg__zrecord_reader *r, size_t need, vg_status *st) {
    while (r->out_len - r->out_pos < need && !r->zend) {
        if (r->out_pos > 0 && r->out_pos == r->out_len) r->out_pos = r->out_len = 0;
        if (r->out_cap - r->out_len < ZCHUNK) {
            if (r->out_pos > 0) { /* compact first */
                memmove(r->out, r->out + r->out_pos, r->out_len - r->out_pos);
                r->out_len -= r->out_pos;
                r->out_pos = 0;
            }
            if (r->out_cap - r->out_len < ZCHUNK) {
                size_t nc = r->out_cap ? r->out_cap * 2 : 4 * ZCHUNK;
                uint8_t *nb = vg__realloc(r->out, r->out_cap, nc);
                if (!nb) return VG_OOM(st, "decompression buffer");
                r->out = nb;
                r->out_cap = nc;
            }
        }
        if (r->zs.avail_in == 0) {
            size_t k = fread(r->in, 1, sizeof r->in, r->f);
            if (k == 0 && ferror(r->f)) return vg__io_errno_status(st, errno ? errno : EIO, "cannot read", r->path);
            if (k == 0) {
                r->zend = true; /* the stream stops without its trailer */
                if (r->zs.total_in > 0 || r->out_len > r->out_pos)
                    return vg_status_set(st, VG_DATA_LOSS, "truncated compressed stream in %s", r->path);
                break;
            }
            r->zs.next_in = r->in;
            r->zs.avail_in = (uInt)k;
            r->file_read += k;
        }
        r->zs.next_out = r->out + r->out_len;
        r->zs.avail_out = (uInt)(r->out_cap - r->out_len);
        int z = inflate(&r->zs, Z_NO_FLUSH);
        r->out_len = r->out_cap - r->zs.avail_out;
        if (z == Z_STREAM_END) {
            r->zend = true;
        } else if (z != Z_OK && z != Z_BUF_ERROR) {
            r->zend = true;
            return vg_status_set(st, VG_DATA_LOSS, "corrupt compressed stream in %s near stream offset %llu: %s",
                                 r->path, (unsigned long long)r->off, r->zs.msg ? r->zs.msg : "inflate failed");
        }
    }
    return VG_OK;
}

/* The most bytes the reader can still deliver: those buffered plus what the unread
 * compressed bytes inflate to at most (deflate's ratio is 1032:1). */
static uint64_t zbound(const vg__zrecord_reader *r) {
    uint64_t left = r->file_size > r->file_read ? r->file_size - r->file_read : 0;
    return (uint64_t)(r->out_len - r->out_pos) + 1032 * ((uint64_t)r->zs.avail_in + left) + 1024;
}

vg_code vg__zrecord_reader_next(vg__zrecord_reader *r, const uint8_t **data, size_t *len, uint64_t *offset,
                                vg_status *st) {
    if (r->plain) {
        *offset = vg__tfrecord_reader_offset(r->plain);
        return vg__tfrecord_reader_next(r->plain, data, len, st);
    }
    *offset = r->off;
    vg_code rc = zfill(r, 12, st);
    if (rc != VG_OK) return rc;
    size_t avail = r->out_len - r->out_pos;
    if (avail == 0) return vg_status_set(st, VG_OUT_OF_RANGE, "end of file %s", r->path);
    if (avail < 12)
        return vg_status_set(st, VG_DATA_LOSS, "truncated record at offset %llu in %s", (unsigned long long)r->off,
                             r->path);
    const uint8_t *h = r->out + r->out_pos;
    uint64_t n = vg__get_le64(h);
    if (vg__crc32c_mask(vg__crc32c(h, 8)) != vg__get_le32(h + 8))
        return vg_status_set(st, VG_DATA_LOSS, "corrupted record at offset %llu in %s: length checksum mismatch",
                             (unsigned long long)r->off, r->path);
    if (n > SIZE_MAX - 16)
        return vg_status_set(st, VG_DATA_LOSS, "record at offset %llu in %s is too large",
                             (unsigned long long)r->off, r->path);
    /* A hostile length must not make memory grow (a decompression bomb): the caller's
     * limit, and what the rest of the file can inflate to (deflate: at most 1032 bytes
     * out per byte in; a file that grew since the open is measured again). */
    int64_t lim = vg__io_max_record_bytes();
    if (n > (uint64_t)lim)
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                             "record at offset %llu in %s claims %llu bytes, over the record size limit of %lld "
                             "bytes (max_record_bytes, vg_set_decode_limits)",
                             (unsigned long long)r->off, r->path, (unsigned long long)n, (long long)lim);
    if (!r->zend) {
        uint64_t can = zbound(r);
        struct stat sb;
        if (16 + n > can && fstat(fileno(r->f), &sb) == 0 && (uint64_t)sb.st_size > r->file_size) {
            r->file_size = (uint64_t)sb.st_size; /* the file grew since the open */
            can = zbound(r);
        }
        if (16 + n > can)
            return vg_status_set(st, VG_DATA_LOSS,
                                 "truncated record at offset %llu in %s: it claims %llu bytes, more than the rest "
                                 "of the compressed file can hold",
                                 (unsigned long long)r->off, r->path, (unsigned long long)n);
    } else if (16 + n > (uint64_t)(r->out_len - r->out_pos)) {
        return vg_status_set(st, VG_DATA_LOSS, "truncated record at offset %llu in %s", (unsigned long long)r->off,
                             r->path);
    }
    /* Fill step by step so that the buffer only grows with real data. */
    size_t want = 12 + (size_t)n + 4;
    while (r->out_len - r->out_pos < want) {
        size_t have = r->out_len - r->out_pos;
        size_t step = want - have < (size_t)16 << 20 ? want : have + ((size_t)16 << 20);
        if ((rc = zfill(r, step, st)) != VG_OK) return rc;
        if (r->out_len - r->out_pos == have && r->zend) break;
    }
    if (r->out_len - r->out_pos < want)
        return vg_status_set(st, VG_DATA_LOSS, "truncated record at offset %llu in %s", (unsigned long long)r->off,
                             r->path);
    h = r->out + r->out_pos;
    if (vg__crc32c_mask(vg__crc32c(h + 12, (size_t)n)) != vg__get_le32(h + 12 + n))
        return vg_status_set(st, VG_DATA_LOSS, "corrupted record at offset %llu in %s: data checksum mismatch",
                             (unsigned long long)r->off, r->path);
    if (n + 1 > r->rec_cap) {
        uint8_t *nb = vg__malloc((size_t)n + 1);
        if (!nb) return VG_OOM(st, "record");
        vg__free(r->rec);
        r->rec = nb;
        r->rec_cap = (size_t)n + 1;
    }
    memcpy(r->rec, h + 12, (size_t)n);
    r->out_pos += want;
    r->off += want;
    *data = r->rec;
    *len = (size_t)n;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* the public iterator (tf.python_io.tf_record_iterator): the reader above, unchanged */

struct vg_tfrecord_iterator {
    vg__zrecord_reader *r;
};

vg_tfrecord_iterator *vg_tfrecord_iterator_open(const char *path, vg_compression compression, vg_status *st) {
    if (!path) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "tf_record_iterator: path is NULL");
        return NULL;
    }
    vg_tfrecord_iterator *it = vg__calloc(1, sizeof *it);
    if (!it) {
        VG_OOM(st, "tf_record_iterator");
        return NULL;
    }
    if (!(it->r = vg__zrecord_reader_open(path, (int)compression, st))) {
        vg__free(it);
        return NULL;
    }
    return it;
}

vg_code vg_tfrecord_iterator_next(vg_tfrecord_iterator *it, const void **data, size_t *len, vg_status *st) {
    if (!it || !data || !len)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tf_record_iterator: %s is NULL",
                             !it ? "the iterator" : !data ? "data" : "len");
    const uint8_t *d = NULL;
    uint64_t off;
    vg_code rc = vg__zrecord_reader_next(it->r, &d, len, &off, st);
    *data = rc == VG_OK ? d : NULL;
    if (rc != VG_OK) *len = 0;
    return rc;
}

void vg_tfrecord_iterator_close(vg_tfrecord_iterator *it) {
    if (!it) return;
    vg__zrecord_reader_close(it->r);
    vg__free(it);
}

/* ------------------------------------------------------------------------ */
/* writer */

struct vg_tfrecord_writer {
    vg__tfrecord_writer *plain;
    FILE *f;
    char *path;
    z_stream zs;
    bool zinit;
    vg_status err; /* sticky */
    uint8_t out[ZCHUNK];
};

vg_tfrecord_writer *vg_tfrecord_writer_open(const char *path, vg_compression compression, vg_status *st) {
    if (!path || !*path) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "TFRecordWriter needs a path");
        return NULL;
    }
    if (compression != VG_COMPRESSION_NONE && compression != VG_COMPRESSION_ZLIB &&
        compression != VG_COMPRESSION_GZIP) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "unknown compression %d", (int)compression);
        return NULL;
    }
    vg_tfrecord_writer *w =
        vg__io_new_with_path(sizeof *w, offsetof(vg_tfrecord_writer, path), path, "TFRecordWriter", st);
    if (!w) return NULL;
    if (compression == VG_COMPRESSION_NONE) {
        if ((w->plain = vg__tfrecord_writer_open(path, false, st))) return w;
        vg__free(w->path);
        vg__free(w);
        return NULL;
    }
    if (!(w->f = fopen(path, "wb"))) {
        vg__io_errno_status(st, errno, "cannot open", path);
        vg__free(w->path);
        vg__free(w);
        return NULL;
    }
    if (deflateInit2(&w->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                     compression == VG_COMPRESSION_GZIP ? MAX_WBITS + 16 : MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
        VG_OOM(st, "zlib stream");
        fclose(w->f);
        vg__free(w->path);
        vg__free(w);
        return NULL;
    }
    w->zinit = true;
    return w;
}

static vg_code zwrite(vg_tfrecord_writer *w, const void *p, size_t n, int flush, vg_status *st) {
    if (w->err.code != VG_OK) {
        vg_status_copy(st, &w->err);
        return w->err.code;
    }
    const uint8_t *src = p;
    do {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        w->zs.next_in = (Bytef *)(uintptr_t)src;
        w->zs.avail_in = (uInt)chunk;
        int last = chunk == n ? flush : Z_NO_FLUSH;
        do {
            w->zs.next_out = w->out;
            w->zs.avail_out = sizeof w->out;
            int z = deflate(&w->zs, last);
            if (z == Z_STREAM_ERROR) {
                vg_status_set(&w->err, VG_INTERNAL, "deflate failed writing %s", w->path);
                break;
            }
            size_t k = sizeof w->out - w->zs.avail_out;
            if (k && fwrite(w->out, 1, k, w->f) != k) {
                vg__io_errno_status(&w->err, errno ? errno : EIO, "cannot write", w->path);
                break;
            }
        } while (w->zs.avail_out == 0);
        src += chunk;
        n -= chunk;
    } while (n > 0 && w->err.code == VG_OK);
    if (w->err.code != VG_OK) {
        vg_status_copy(st, &w->err);
        return w->err.code;
    }
    return VG_OK;
}

vg_code vg_tfrecord_writer_write(vg_tfrecord_writer *w, const void *data, size_t len, vg_status *st) {
    if (!w || (!data && len)) return vg_status_set(st, VG_INVALID_ARGUMENT, "NULL writer or data");
    if (w->plain) return vg__tfrecord_writer_write(w->plain, data, len, st);
    uint8_t hdr[12], foot[4];
    vg__tfrecord_header(hdr, len);
    vg__put_le32(foot, vg__crc32c_mask(vg__crc32c(data, len)));
    vg_code rc = zwrite(w, hdr, 12, Z_NO_FLUSH, st);
    if (rc == VG_OK && len) rc = zwrite(w, data, len, Z_NO_FLUSH, st);
    if (rc == VG_OK) rc = zwrite(w, foot, 4, Z_NO_FLUSH, st);
    return rc;
}

vg_code vg_tfrecord_writer_flush(vg_tfrecord_writer *w, vg_status *st) {
    if (!w) return vg_status_set(st, VG_INVALID_ARGUMENT, "NULL writer");
    if (w->plain) return vg__tfrecord_writer_flush(w->plain, false, st);
    vg_code rc = zwrite(w, NULL, 0, Z_FULL_FLUSH, st);
    if (rc == VG_OK && fflush(w->f) != 0) rc = vg__io_errno_status(st, errno, "cannot write", w->path);
    return rc;
}

vg_code vg_tfrecord_writer_close(vg_tfrecord_writer *w, vg_status *st) {
    if (!w) return VG_OK;
    vg_code rc = VG_OK;
    if (w->plain) {
        rc = vg__tfrecord_writer_close(w->plain, st);
    } else {
        rc = zwrite(w, NULL, 0, Z_FINISH, st);
        deflateEnd(&w->zs);
        if (fclose(w->f) != 0 && rc == VG_OK) rc = vg__io_errno_status(st, errno, "cannot close", w->path);
    }
    vg__free(w->path);
    vg__free(w);
    return rc;
}
