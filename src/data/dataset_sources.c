/*
 * dataset_sources.c - the dataset kinds that read no other dataset (TF's
 * tensor_slice / range / tensor / tf_record / text_line / fixed_length_record dataset
 * ops): their iterators, their positions in saved states, the checks of their
 * parameters in a decoded state, and their vg__ds_kind tables (dataset.h).
 */
#include "data/dataset.h"
#include "io/io.h"
#include "vigil/example.h"
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------------------ */
/* Dataset.from_tensor_slices, Dataset.range */

typedef struct slices_it {
    vg__ds_iter base;
    int64_t i, n;
} slices_it;

static vg_code slices_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    slices_it *s = (slices_it *)it;
    const vg__dataset *d = it->ds;
    if (s->i >= s->n) {
        *end = true;
        return VG_OK;
    }
    for (int c = 0; c < d->ncomp; c++) {
        if (!(out[c] = vg__ds_slice_row(d->comps[c], s->i, st))) {
            vg__ds_free_elem(out, c);
            return st->code;
        }
    }
    s->i++;
    return VG_OK;
}

typedef struct range_it {
    vg__ds_iter base;
    int64_t cur;
} range_it;

static vg_code range_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    range_it *r = (range_it *)it;
    const vg__dataset *d = it->ds;
    if ((d->c > 0 && r->cur >= d->b) || (d->c < 0 && r->cur <= d->b)) {
        *end = true;
        return VG_OK;
    }
    if (!(out[0] = vg_tensor_new_scalar_i64(r->cur, st))) return st->code;
    if (__builtin_add_overflow(r->cur, d->c, &r->cur)) r->cur = d->b; /* past the int64 range: the end */
    return VG_OK;
}

typedef struct tfrecord_it {
    vg__ds_iter base;
    int64_t file;
    vg__zrecord_reader *r;
    int64_t nrec;       /* records read from the open file (its position, for saving) */
} tfrecord_it;

/* Opens the next file when none is open; *none when there is none left. A file that
 * cannot be opened is skipped after its error is returned, as TF does. */
static vg_code tfrecord_open_next(tfrecord_it *t, bool *none, vg_status *st) {
    const vg__dataset *d = t->base.ds;
    if (t->r) return VG_OK;
    if (t->file >= vg_tensor_num_elements(d->files)) {
        *none = true;
        return VG_OK;
    }
    size_t l;
    const char *s = vg_tensor_string(d->files, t->file, &l);
    char *path = vg__strndup(s, l);
    if (!path) return VG_OOM(st, "file name");
    t->r = vg__zrecord_reader_open(path, d->compression, st);
    vg__free(path);
    t->nrec = 0;
    if (!t->r) {
        t->file++;
        return st->code;
    }
    return VG_OK;
}

static vg_code tfrecord_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    tfrecord_it *t = (tfrecord_it *)it;
    for (;;) {
        bool none = false;
        vg_code oc = tfrecord_open_next(t, &none, st);
        if (oc != VG_OK) return oc;
        if (none) {
            *end = true;
            return VG_OK;
        }
        const uint8_t *data;
        size_t len;
        uint64_t off;
        vg_status e;
        vg_status_clear(&e);
        vg_code rc = vg__zrecord_reader_next(t->r, &data, &len, &off, &e);
        if (rc == VG_OUT_OF_RANGE) {
            vg__zrecord_reader_close(t->r);
            t->r = NULL;
            t->file++;
            continue;
        }
        if (rc != VG_OK) {
            /* as TF: after an error (DATA_LOSS...) move on to the next file, so that
             * ignore_errors does not see the same error forever */
            vg__zrecord_reader_close(t->r);
            t->r = NULL;
            t->file++;
            vg_status_copy(st, &e);
            return rc;
        }
        t->nrec++;
        if (!(out[0] = vg_tensor_new_string_scalar((const char *)data, len, st))) return st->code;
        return VG_OK;
    }
}

static vg_code tfrecord_next_records(vg__ds_iter *it, vg__ds_rec_sink sink, void *arg, int64_t at, int64_t max,
                                     int64_t *got, bool *end, vg_status *st) {
    tfrecord_it *r = (tfrecord_it *)it;
    *got = 0;
    while (*got < max) {
        bool none = false;
        vg_code oc = tfrecord_open_next(r, &none, st);
        if (oc != VG_OK) return oc;
        if (none) {
            *end = true;
            return VG_OK;
        }
        const uint8_t *data;
        size_t len;
        uint64_t off;
        vg_status e;
        vg_status_clear(&e);
        vg_code rc = vg__zrecord_reader_next(r->r, &data, &len, &off, &e);
        if (rc != VG_OK) { /* the end of this file, or an error: as tfrecord_next */
            vg__zrecord_reader_close(r->r);
            r->r = NULL;
            r->file++;
            if (rc == VG_OUT_OF_RANGE) continue;
            vg_status_copy(st, &e);
            return rc;
        }
        r->nrec++;
        if ((rc = sink(arg, at + *got, data, len, st)) != VG_OK) return rc;
        (*got)++;
    }
    return VG_OK;
}

static void tfrecord_free(vg__ds_iter *it) { vg__zrecord_reader_close(((tfrecord_it *)it)->r); }


/* Text lines of files, as TF's TextLineDataset: compression_type "" reads the bytes
 * as they are (a gzip file is not decompressed), "ZLIB" / "GZIP" inflate a zlib / gzip
 * stream (gzip members may follow each other) and a stream that does not inflate or
 * ends early is DATA_LOSS naming the file, after which the next file is read. Lines
 * end at "\n" (a "\r" before it removed), a last line without newline is kept, and a
 * line may hold NUL bytes. */
#define TL_CHUNK 65536
typedef struct textline_it {
    vg__ds_iter base;
    int64_t file;
    FILE *f;
    bool zinit, zend;   /* inflate initialised; the stream ended (Z_STREAM_END) */
    z_stream zs;
    uint8_t *in, *buf;  /* compressed input / bytes to split into lines */
    size_t pos, len;    /* unread bytes of buf: [pos, len) */
    char *line;
    size_t cap;
    uint64_t boff;      /* offset of buf[0] in the file's (inflated) stream */
} textline_it;

static void textline_close(textline_it *t) {
    if (t->f) fclose(t->f);
    t->f = NULL;
    if (t->zinit) inflateEnd(&t->zs);
    t->zinit = t->zend = false;
    t->pos = t->len = 0;
    t->boff = 0;
}

/* Refills t->buf; *got = false at the end of the file's data. */
static vg_code textline_fill(textline_it *t, int compression, const char *path, size_t plen, bool *got,
                             vg_status *st) {
    *got = false;
    t->boff += t->len;
    t->pos = t->len = 0;
    if (compression == VG_COMPRESSION_NONE) {
        size_t k = fread(t->buf, 1, TL_CHUNK, t->f);
        if (k == 0 && ferror(t->f)) return vg__io_errno_status(st, errno ? errno : EIO, "cannot read", path);
        t->len = k;
        *got = k > 0;
        return VG_OK;
    }
    while (t->len == 0) {
        if (t->zs.avail_in == 0) {
            size_t k = fread(t->in, 1, TL_CHUNK, t->f);
            if (k == 0 && ferror(t->f)) return vg__io_errno_status(st, errno ? errno : EIO, "cannot read", path);
            if (k == 0) {
                if (t->zend) return VG_OK; /* the whole stream was read */
                return vg_status_set(st, VG_DATA_LOSS, "%.*s: truncated %s stream", (int)plen, path,
                                     compression == VG_COMPRESSION_GZIP ? "GZIP" : "ZLIB");
            }
            t->zs.next_in = t->in;
            t->zs.avail_in = (uInt)k;
        }
        if (t->zend) {
            if (compression != VG_COMPRESSION_GZIP) { /* trailing bytes after a zlib stream: ignored */
                t->zs.avail_in = 0;
                continue;
            }
            inflateReset(&t->zs); /* another gzip member */
            t->zend = false;
        }
        t->zs.next_out = t->buf;
        t->zs.avail_out = TL_CHUNK;
        int z = inflate(&t->zs, Z_NO_FLUSH);
        if (z == Z_STREAM_END) t->zend = true;
        else if (z != Z_OK && !(z == Z_BUF_ERROR && t->zs.avail_in == 0))
            return vg_status_set(st, VG_DATA_LOSS, "%.*s: %s data does not inflate (%s)", (int)plen, path,
                                 compression == VG_COMPRESSION_GZIP ? "GZIP" : "ZLIB",
                                 t->zs.msg ? t->zs.msg : "zlib error");
        t->len = TL_CHUNK - t->zs.avail_out;
    }
    *got = true;
    return VG_OK;
}

/* Opens file t->file (its buffers made first); a file that cannot be opened is
 * skipped after its error is returned. */
static vg_code textline_open(textline_it *t, vg_status *st) {
    const vg__dataset *d = t->base.ds;
    if (!t->buf && !(t->buf = vg__malloc(TL_CHUNK))) return VG_OOM(st, "text line buffer");
    if (d->compression != VG_COMPRESSION_NONE && !t->in && !(t->in = vg__malloc(TL_CHUNK)))
        return VG_OOM(st, "text line buffer");
    size_t plen;
    const char *ps = vg_tensor_string(d->files, t->file, &plen);
    char *path = vg__strndup(ps, plen);
    if (!path) return VG_OOM(st, "file name");
    t->f = vg__io_fopen_regular(path, st); /* no FIFO, no /dev/zero */
    if (!t->f) {
        vg_code rc = st->code;
        vg__free(path);
        t->file++;
        return rc;
    }
    vg__free(path);
    t->boff = 0;
    t->pos = t->len = 0;
    if (d->compression != VG_COMPRESSION_NONE) {
        memset(&t->zs, 0, sizeof t->zs);
        int wbits = d->compression == VG_COMPRESSION_GZIP ? 16 + MAX_WBITS : MAX_WBITS;
        if (inflateInit2(&t->zs, wbits) != Z_OK) {
            textline_close(t);
            return VG_OOM(st, "inflate");
        }
        t->zinit = true;
    }
    return VG_OK;
}

static vg_code textline_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    textline_it *t = (textline_it *)it;
    const vg__dataset *d = it->ds;
    for (;;) {
        if (t->file >= vg_tensor_num_elements(d->files)) {
            *end = true;
            return VG_OK;
        }
        size_t plen;
        const char *ps = vg_tensor_string(d->files, t->file, &plen);
        if (!t->f) {
            vg_code orc = textline_open(t, st);
            if (orc != VG_OK) return orc;
        }
        size_t n = 0;
        bool any = false, nl = false;
        vg_code rc = VG_OK;
        for (;;) {
            if (t->pos == t->len) {
                bool got;
                if ((rc = textline_fill(t, d->compression, ps, plen, &got, st)) != VG_OK || !got) break;
            }
            any = true;
            const uint8_t *p = t->buf + t->pos;
            size_t avail = t->len - t->pos;
            const uint8_t *q = memchr(p, '\n', avail);
            size_t take = q ? (size_t)(q - p) : avail;
            if (n + take > (uint64_t)vg__io_max_record_bytes()) { /* a line without end (a bomb) */
                rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                                   "%.*s: a line at offset %llu is longer than the limit of %lld bytes "
                                   "(max_record_bytes, vg_set_decode_limits)",
                                   (int)plen, ps, (unsigned long long)(t->boff + t->pos - n),
                                   (long long)vg__io_max_record_bytes());
                break;
            }
            if (n + take + 1 > t->cap) {
                size_t nc = t->cap ? t->cap : 8192;
                while (nc < n + take + 1) nc *= 2;
                char *nb = vg__realloc(t->line, t->cap, nc);
                if (!nb) return VG_OOM(st, "text line");
                t->line = nb;
                t->cap = nc;
            }
            memcpy(t->line + n, p, take);
            n += take;
            t->pos += take + (q ? 1 : 0);
            if (q) {
                nl = true;
                break;
            }
        }
        if (rc != VG_OK) { /* TF: the file is left after its read error */
            textline_close(t);
            t->file++;
            return rc;
        }
        if (!any || (!nl && n == 0)) {
            textline_close(t);
            t->file++;
            continue;
        }
        if (n > 0 && t->line[n - 1] == '\r' && nl) n--;
        if (!(out[0] = vg_tensor_new_string_scalar(t->line ? t->line : "", n, st))) return st->code;
        return VG_OK;
    }
}

static void textline_free(vg__ds_iter *it) {
    textline_it *t = (textline_it *)it;
    textline_close(t);
    vg__free(t->in);
    vg__free(t->buf);
    vg__free(t->line);
}


typedef struct once_it {
    vg__ds_iter base;
    bool done;
} once_it;

static vg_code from_tensors_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    (void)st;
    once_it *o = (once_it *)it;
    if (o->done) {
        *end = true;
        return VG_OK;
    }
    for (int c = 0; c < it->ds->ncomp; c++) out[c] = vg_tensor_ref(it->ds->comps[c]);
    o->done = true;
    return VG_OK;
}

/* FixedLengthRecordDataset: after header_bytes, records of record_bytes up to the last
 * footer_bytes; the body must be a whole number of records (TF's InvalidArgument). */
typedef struct fixedlen_it {
    vg__ds_iter base;
    int64_t file, pos, limit;
    int fd;
} fixedlen_it;

/* Opens file f->file (name s, l bytes), checking its length; a file that cannot be
 * opened or has a partial record is skipped after its error is returned. */
static vg_code fixedlen_open(fixedlen_it *f, const char *s, size_t l, vg_status *st) {
    const vg__dataset *d = f->base.ds;
    char *path = vg__strndup(s, l);
    if (!path) return VG_OOM(st, "file name");
    f->fd = vg__io_open_regular(path, st); /* no FIFO, no /dev/zero */
    struct stat sb;
    vg_code rc = VG_OK;
    if (f->fd < 0) {
        rc = st->code;
    } else if (fstat(f->fd, &sb) != 0) {
        rc = vg__io_errno_status(st, errno, "cannot stat", path);
    } else if (sb.st_size < d->a + d->c || (sb.st_size - d->a - d->c) % d->b != 0) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                           "Excluding the header (%lld bytes) and footer (%lld bytes), input file \"%s\" has "
                           "body length %lld, which is not an exact multiple of the record length (%lld bytes).",
                           (long long)d->a, (long long)d->c, path, (long long)(sb.st_size - d->a - d->c),
                           (long long)d->b);
    }
    vg__free(path);
    if (rc != VG_OK) {
        if (f->fd >= 0) close(f->fd);
        f->fd = -1;
        f->file++;
        return rc;
    }
    f->pos = d->a;
    f->limit = (int64_t)sb.st_size - d->c;
    return VG_OK;
}

static vg_code fixedlen_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    fixedlen_it *f = (fixedlen_it *)it;
    const vg__dataset *d = it->ds;
    for (;;) {
        size_t l;
        const char *s = f->file < vg_tensor_num_elements(d->files) ? vg_tensor_string(d->files, f->file, &l) : NULL;
        if (f->fd < 0) {
            if (!s) {
                *end = true;
                return VG_OK;
            }
            vg_code orc = fixedlen_open(f, s, l, st);
            if (orc != VG_OK) return orc;
        }
        if (f->pos + d->b > f->limit) {
            close(f->fd);
            f->fd = -1;
            f->file++;
            continue;
        }
        vg_tensor *t = vg_tensor_new(VG_STRING, NULL, 0, st);
        char *buf = t ? vg__malloc((size_t)d->b) : NULL;
        if (!buf) {
            vg_tensor_free(t);
            return t ? VG_OOM(st, "record") : st->code;
        }
        size_t got = 0;
        while (got < (size_t)d->b) {
            ssize_t k = pread(f->fd, buf + got, (size_t)d->b - got, (off_t)(f->pos + (int64_t)got));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            got += (size_t)k;
        }
        vg_code rc = got == (size_t)d->b ? vg_tensor_set_string(t, 0, buf, got, st)
                                         : vg_status_set(st, VG_DATA_LOSS, "%.*s: short read at offset %lld", (int)l, s,
                                                         (long long)f->pos);
        vg__free(buf);
        if (rc != VG_OK) {
            vg_tensor_free(t);
            return rc;
        }
        f->pos += d->b;
        out[0] = t;
        return VG_OK;
    }
}

static void fixedlen_free(vg__ds_iter *it) {
    fixedlen_it *f = (fixedlen_it *)it;
    if (f->fd >= 0) close(f->fd);
}


/* Reopens TFRecord file t->file and reads nrec records again. */
static vg_code tfrecord_seek(tfrecord_it *t, int64_t nrec, vg_status *st) {
    bool none = false;
    vg_code rc = tfrecord_open_next(t, &none, st);
    if (rc != VG_OK || none) return rc;
    for (int64_t k = 0; k < nrec; k++) {
        const uint8_t *data;
        size_t len;
        uint64_t off;
        rc = vg__zrecord_reader_next(t->r, &data, &len, &off, st);
        if (rc == VG_OUT_OF_RANGE) {
            size_t l;
            const char *s = vg_tensor_string(t->base.ds->files, t->file, &l);
            return vg_status_set(st, VG_DATA_LOSS, "%.*s has %lld records, fewer than the saved position %lld", (int)l,
                                 s, (long long)k, (long long)nrec);
        }
        if (rc != VG_OK) return rc;
    }
    t->nrec = nrec;
    return VG_OK;
}

/* Reopens text file t->file at offset `off` of its (inflated) stream. */
static vg_code textline_seek(textline_it *t, uint64_t off, vg_status *st) {
    const vg__dataset *d = t->base.ds;
    vg_code rc = textline_open(t, st);
    if (rc != VG_OK) return rc;
    size_t plen;
    const char *ps = vg_tensor_string(d->files, t->file, &plen);
    if (d->compression == VG_COMPRESSION_NONE) {
        struct stat sb;
        if (fstat(fileno(t->f), &sb) != 0 || (uint64_t)sb.st_size < off || fseeko(t->f, (off_t)off, SEEK_SET) != 0)
            return vg_status_set(st, VG_DATA_LOSS, "%.*s is shorter than the saved position %llu", (int)plen, ps,
                                 (unsigned long long)off);
        t->boff = off;
        return VG_OK;
    }
    for (;;) {
        if (off >= t->boff && off <= t->boff + t->len) {
            t->pos = (size_t)(off - t->boff);
            return VG_OK;
        }
        bool got;
        if ((rc = textline_fill(t, d->compression, ps, plen, &got, st)) != VG_OK) return rc;
        if (!got && t->boff != off)
            return vg_status_set(st, VG_DATA_LOSS, "%.*s is shorter than the saved position %llu", (int)plen, ps,
                                 (unsigned long long)off);
    }
}


/* ------------------------------------------------------------------------ */
/* the kinds' parameters from their ops */

static vg_code from_tensors_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    vg_code rc = VG_OK;
    for (int i = 0; i < a->nin && rc == VG_OK; i++) {
        vg_tensor *t = a->in[i];
        if (vg_tensor_dtype(t) != d->types[i])
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "component %d has dtype %s, expected %s", i,
                               vg_dtype_name(vg_tensor_dtype(t)), vg_dtype_name(d->types[i]));
        d->comps[i] = vg_tensor_ref(t);
    }
    return rc;
}

static vg_code fixedlen_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->files = vg_tensor_ref(a->in[0]);
    d->a = vg__ds_scalar_i64(a->in[1]), d->b = vg__ds_scalar_i64(a->in[2]), d->c = vg__ds_scalar_i64(a->in[3]);
    if (vg_tensor_ndims(d->files) > 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "`filenames` must be a scalar or a vector.");
    if (d->a < 0 || d->c < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "header_bytes and footer_bytes must be >= 0");
    if (d->a > INT64_MAX - d->c) /* the reader adds them */
        return vg_status_set(st, VG_INVALID_ARGUMENT, "header_bytes + footer_bytes overflows int64");
    if (d->b <= 0 || d->b > ((int64_t)1 << 31))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "record_bytes must be in (0, 2^31]");
    return VG_OK;
}

static vg_code slices_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    vg_code rc = VG_OK;
    int64_t n0 = -1;
    for (int i = 0; i < a->nin && rc == VG_OK; i++) {
        vg_tensor *t = a->in[i];
        if (vg_tensor_ndims(t) < 1)
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "component %d of from_tensor_slices is a scalar", i);
        else if (n0 >= 0 && vg_tensor_dim(t, 0) != n0)
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "Dimensions of components must agree: component 0 has %lld, component %d has %lld",
                               (long long)n0, i, (long long)vg_tensor_dim(t, 0));
        else if (vg_tensor_dtype(t) != d->types[i])
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "component %d has dtype %s, expected %s", i,
                               vg_dtype_name(vg_tensor_dtype(t)), vg_dtype_name(d->types[i]));
        n0 = vg_tensor_dim(t, 0);
        d->comps[i] = vg_tensor_ref(t);
    }
    return rc;
}

static vg_code range_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->a = vg__ds_scalar_i64(a->in[0]), d->b = vg__ds_scalar_i64(a->in[1]), d->c = vg__ds_scalar_i64(a->in[2]);
    if (d->c == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "step must be a non-zero integer.");
    return VG_OK;
}

/* TFRecordDataset, TextLineDataset: filenames, compression_type */
static vg_code compressed_files_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->files = vg_tensor_ref(a->in[0]);
    if (vg_tensor_ndims(d->files) > 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "`filenames` must be a scalar or a vector.");
    size_t l;
    const char *ct = vg_tensor_string(a->in[1], 0, &l);
    char buf[16];
    snprintf(buf, sizeof buf, "%.*s", (int)(l < 15 ? l : 15), ct ? ct : "");
    vg_compression c = VG_COMPRESSION_NONE;
    vg_code rc = vg_compression_parse(buf, &c, st);
    d->compression = (int)c;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* the kinds: iterator set-up, positions, parameters */

static bool files_ok(const vg__dataset *d) { return d->files && vg_tensor_dtype(d->files) == VG_STRING; }

static vg_code slices_init(vg__ds_iter *it, vg_status *st) {
    (void)st;
    const vg__dataset *d = it->ds;
    it->next = slices_next;
    ((slices_it *)it)->n = d->ncomp ? vg_tensor_dim(d->comps[0], 0) : 0;
    return VG_OK;
}
static vg_code slices_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    (void)st;
    vg__ds_put_i64(w, ((slices_it *)it)->i);
    return VG_OK;
}
static vg_code slices_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    (void)st;
    slices_it *s = (slices_it *)it;
    s->i = vg__ds_get_range(r, 0, s->n);
    return VG_OK;
}
/* the components (references) of the element(s): one per type, slices all of one length */
static bool comps_ok(const vg__dataset *d, bool slices) {
    int64_t n0 = -1;
    for (int c = 0; c < d->ncomp; c++) {
        const vg_tensor *t = d->comps[c];
        if (!t || vg_tensor_dtype(t) != d->types[c]) return false;
        if (slices) {
            if (vg_tensor_ndims(t) < 1 || (n0 >= 0 && vg_tensor_dim(t, 0) != n0)) return false;
            n0 = vg_tensor_dim(t, 0);
        }
    }
    return true;
}
static bool slices_valid(const vg__dataset *d) { return comps_ok(d, true); }
const vg__ds_kind vg__ds_kind_slices = {
    .name = "TensorSliceDataset",
    .ops = {"TensorSliceDataset"},
    .iter_size = sizeof(slices_it),
    .params = slices_params,
    .iter_init = slices_init,
    .save = slices_save,
    .restore = slices_restore,
    .valid = slices_valid,
};

static vg_code range_init(vg__ds_iter *it, vg_status *st) {
    (void)st;
    it->next = range_next;
    ((range_it *)it)->cur = it->ds->a;
    return VG_OK;
}
static vg_code range_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    (void)st;
    vg__ds_put_i64(w, ((range_it *)it)->cur);
    return VG_OK;
}
static vg_code range_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    (void)st;
    ((range_it *)it)->cur = vg__ds_get_i64(r);
    return VG_OK;
}
static bool range_valid(const vg__dataset *d) { return d->c != 0; }
const vg__ds_kind vg__ds_kind_range = {
    .name = "RangeDataset",
    .ops = {"RangeDataset"},
    .iter_size = sizeof(range_it),
    .params = range_params,
    .iter_init = range_init,
    .save = range_save,
    .restore = range_restore,
    .valid = range_valid,
};

static vg_code from_tensors_init(vg__ds_iter *it, vg_status *st) {
    (void)st;
    it->next = from_tensors_next;
    return VG_OK;
}
static vg_code from_tensors_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    (void)st;
    vg__ds_put_i64(w, ((once_it *)it)->done);
    return VG_OK;
}
static vg_code from_tensors_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    (void)st;
    ((once_it *)it)->done = vg__ds_get_range(r, 0, 1) != 0;
    return VG_OK;
}
static bool from_tensors_valid(const vg__dataset *d) { return comps_ok(d, false); }
const vg__ds_kind vg__ds_kind_from_tensors = {
    .name = "TensorDataset",
    .ops = {"TensorDataset"},
    .iter_size = sizeof(once_it),
    .params = from_tensors_params,
    .iter_init = from_tensors_init,
    .save = from_tensors_save,
    .restore = from_tensors_restore,
    .valid = from_tensors_valid,
};

static vg_code tfrecord_init(vg__ds_iter *it, vg_status *st) {
    (void)st;
    it->next = tfrecord_next;
    it->next_records = tfrecord_next_records;
    it->free = tfrecord_free;
    return VG_OK;
}
static vg_code tfrecord_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    (void)st;
    tfrecord_it *t = (tfrecord_it *)it;
    vg__ds_put_i64(w, t->file);
    vg__ds_put_i64(w, t->r != NULL);
    vg__ds_put_i64(w, t->nrec);
    return VG_OK;
}
static vg_code tfrecord_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    const vg__dataset *d = it->ds;
    tfrecord_it *t = (tfrecord_it *)it;
    t->file = vg__ds_get_range(r, 0, vg_tensor_num_elements(d->files));
    bool open = vg__ds_get_range(r, 0, 1) != 0;
    int64_t nrec = vg__ds_get_range(r, 0, INT64_MAX);
    if (open && t->file == vg_tensor_num_elements(d->files)) r->bad = true;
    return !r->bad && open ? tfrecord_seek(t, nrec, st) : VG_OK;
}
static bool compressed_files_ok(const vg__dataset *d) {
    return files_ok(d) && d->compression >= 0 && d->compression <= 2;
}
static bool offers_records(const vg__dataset *d) {
    (void)d;
    return true;
}
const vg__ds_kind vg__ds_kind_tfrecord = {
    .name = "TFRecordDataset",
    .ops = {"TFRecordDataset"},
    .iter_size = sizeof(tfrecord_it),
    .params = compressed_files_params,
    .iter_init = tfrecord_init,
    .save = tfrecord_save,
    .restore = tfrecord_restore,
    .valid = compressed_files_ok,
    .offers_records = offers_records,
};

static vg_code textline_init(vg__ds_iter *it, vg_status *st) {
    (void)st;
    it->next = textline_next;
    it->free = textline_free;
    return VG_OK;
}
static vg_code textline_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    (void)st;
    textline_it *t = (textline_it *)it;
    vg__ds_put_i64(w, t->file);
    vg__ds_put_i64(w, t->f != NULL);
    vg__ds_put_i64(w, (int64_t)(t->boff + t->pos));
    return VG_OK;
}
static vg_code textline_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    const vg__dataset *d = it->ds;
    textline_it *t = (textline_it *)it;
    t->file = vg__ds_get_range(r, 0, vg_tensor_num_elements(d->files));
    bool open = vg__ds_get_range(r, 0, 1) != 0;
    int64_t off = vg__ds_get_range(r, 0, INT64_MAX);
    if (open && t->file == vg_tensor_num_elements(d->files)) r->bad = true;
    return !r->bad && open ? textline_seek(t, (uint64_t)off, st) : VG_OK;
}
const vg__ds_kind vg__ds_kind_textline = {
    .name = "TextLineDataset",
    .ops = {"TextLineDataset"},
    .iter_size = sizeof(textline_it),
    .params = compressed_files_params,
    .iter_init = textline_init,
    .save = textline_save,
    .restore = textline_restore,
    .valid = compressed_files_ok,
};

static vg_code fixedlen_init(vg__ds_iter *it, vg_status *st) {
    (void)st;
    it->next = fixedlen_next;
    it->free = fixedlen_free;
    ((fixedlen_it *)it)->fd = -1;
    return VG_OK;
}
static vg_code fixedlen_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    (void)st;
    fixedlen_it *f = (fixedlen_it *)it;
    vg__ds_put_i64(w, f->file);
    vg__ds_put_i64(w, f->fd >= 0);
    vg__ds_put_i64(w, f->pos);
    return VG_OK;
}
static vg_code fixedlen_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    const vg__dataset *d = it->ds;
    fixedlen_it *f = (fixedlen_it *)it;
    vg_code rc = VG_OK;
    f->file = vg__ds_get_range(r, 0, vg_tensor_num_elements(d->files));
    bool open = vg__ds_get_range(r, 0, 1) != 0;
    int64_t pos = vg__ds_get_range(r, 0, INT64_MAX);
    if (open && f->file == vg_tensor_num_elements(d->files)) r->bad = true;
    if (!r->bad && open) {
        size_t l;
        const char *s = vg_tensor_string(d->files, f->file, &l);
        if ((rc = fixedlen_open(f, s, l, st)) == VG_OK) {
            if (pos < d->a || pos > f->limit || (pos - d->a) % d->b != 0)
                rc = vg_status_set(st, VG_DATA_LOSS, "%.*s: the saved position %lld is not a record boundary of "
                                   "the file", (int)l, s, (long long)pos);
            f->pos = pos;
        }
    }
    return rc;
}
static bool fixedlen_valid(const vg__dataset *d) {
    return files_ok(d) && d->a >= 0 && d->c >= 0 && d->b > 0 && d->b <= ((int64_t)1 << 31);
}
const vg__ds_kind vg__ds_kind_fixedlen = {
    .name = "FixedLengthRecordDatasetV2",
    .ops = {"FixedLengthRecordDatasetV2"},
    .iter_size = sizeof(fixedlen_it),
    .params = fixedlen_params,
    .iter_init = fixedlen_init,
    .save = fixedlen_save,
    .restore = fixedlen_restore,
    .valid = fixedlen_valid,
};
