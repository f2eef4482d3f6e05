/*
 * reader_ops.c - TF's reader ops (tensorflow/core/framework/reader_base.cc and
 * kernels/{tf_record,fixed_length_record,text_line,whole_file}_reader_op.cc) as session
 * resources: TFRecordReaderV2, FixedLengthRecordReaderV2, TextLineReaderV2,
 * WholeFileReaderV2 and the ops on their handles (ReaderReadV2, ReaderReadUpToV2,
 * ReaderNumRecordsProducedV2, ReaderNumWorkUnitsCompletedV2, ReaderResetV2) and
 * MatchingFiles, with the builders of vigil/reader.h.
 *
 * ReaderBase: a reader holds its current work item (a file name taken from a string
 * queue) and produces records from it; at the file's end it counts a finished work
 * unit and takes the next name. The reader's mutex is held for the whole read,
 * including a blocking dequeue (as TF). Session close cancels the queue, so a blocked
 * read returns CANCELLED.
 *
 * State (ReaderSerializeStateV2 / ReaderRestoreStateV2): TF's ReaderBase keeps
 * work_started, work_finished, num_records_produced and work_ (the current or last
 * work item), and only the readers with no state beyond that (WholeFileReader,
 * IdentityReader) serialize it, as a ReaderBaseState proto; the TFRecord,
 * fixed-length and text-line readers keep the base class's UNIMPLEMENTED. A failed
 * restore resets the reader (ReaderBase::RestoreState).
 */
#include "kernels/kernel.h"
#include "io/example_io.h"
#include "io/io.h"
#include "kernels/state/queue_internal.h"
#include "vigil/example.h"
#include "vigil/reader.h"
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define READER_FLAGS (VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE)
#define READ_FLAGS (VG__OP_STATEFUL | VG__OP_BLOCKING | VG__OP_NOT_DIFFERENTIABLE)

enum { R_TFRECORD, R_FIXED, R_TEXT, R_WHOLE, R_IDENTITY };

typedef struct vg__reader {
    pthread_mutex_t mu;
    int kind;
    char *name;
    /* config */
    int compression;
    int64_t header, record, footer, hop, skip_lines;
    /* state */
    char *work;                 /* current file; NULL = none */
    size_t work_len;
    char *last;                 /* TF's work_ once finished (kept until the next one) */
    size_t last_len;
    int64_t produced, completed, started;
    vg__zrecord_reader *zr;     /* TFRecord */
    int fd;                     /* fixed length */
    int64_t pos, limit, recno;
    FILE *text;                 /* text lines */
    int64_t line;
    uint8_t *buf;               /* line / record / whole-file buffer */
    size_t cap;
} vg__reader;

/* A produced record: key and value, both borrowed from the reader until its next call. */
typedef struct rec_out {
    char key[4200];
    const char *kp; /* the key: key, or the work item (whole-file, identity) */
    size_t kl;
    const uint8_t *val;
    size_t len;
} rec_out;

static void close_work(vg__reader *r) {
    vg__zrecord_reader_close(r->zr);
    r->zr = NULL;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    if (r->text) fclose(r->text);
    r->text = NULL;
    vg__free(r->work);
    r->work = NULL;
}

/* Closes the current work item and keeps its name as TF's work_ (r->last). */
static void finish_work(vg__reader *r) {
    char *w = r->work;
    size_t wl = r->work_len;
    r->work = NULL;
    close_work(r);
    vg__free(r->last);
    r->last = w;
    r->last_len = w ? wl : 0;
}

/* ResetLocked: no current work, counters zero. */
static void reset_locked(vg__reader *r) {
    close_work(r);
    vg__free(r->last);
    r->last = NULL;
    r->last_len = 0;
    r->produced = r->completed = r->started = 0;
}

static void reader_destroy(void *p) {
    vg__reader *r = p;
    if (!r) return;
    close_work(r);
    vg__free(r->buf);
    vg__free(r->last);
    vg__free(r->name);
    pthread_mutex_destroy(&r->mu);
    vg__free(r);
}

static const vg__resource_ops reader_resource_ops = {NULL, reader_destroy};

static int kind_of_op(const char *type) {
    if (strcmp(type, "TFRecordReaderV2") == 0) return R_TFRECORD;
    if (strcmp(type, "FixedLengthRecordReaderV2") == 0) return R_FIXED;
    if (strcmp(type, "TextLineReaderV2") == 0) return R_TEXT;
    if (strcmp(type, "IdentityReaderV2") == 0) return R_IDENTITY;
    return R_WHOLE;
}

static void *reader_create(void *arg, vg_status *st) {
    const vg_op *op = arg;
    vg__reader *r = vg__calloc(1, sizeof *r);
    if (!r || !(r->name = vg__strdup(vg_op_name(op)))) {
        vg__free(r);
        VG_OOM(st, "reader");
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->fd = -1;
    r->kind = kind_of_op(vg_op_type(op));
    const char *ct = "";
    size_t ctl = 0;
    if (vg_op_attr_string(op, "compression_type", &ct, &ctl) && ctl) {
        char buf[16];
        snprintf(buf, sizeof buf, "%.*s", (int)(ctl < 15 ? ctl : 15), ct);
        vg_compression c;
        if (vg_compression_parse(buf, &c, st) != VG_OK) {
            reader_destroy(r);
            return NULL;
        }
        r->compression = (int)c;
    }
    r->header = vg__attr_int_or(op, "header_bytes", 0);
    r->record = vg__attr_int_or(op, "record_bytes", 0);
    r->footer = vg__attr_int_or(op, "footer_bytes", 0);
    r->hop = vg__attr_int_or(op, "hop_bytes", 0);
    r->skip_lines = vg__attr_int_or(op, "skip_header_lines", 0);
    return r;
}

static bool grow(vg__reader *r, size_t need) {
    if (need <= r->cap) return true;
    size_t nc = r->cap ? r->cap : 256;
    while (nc < need) nc = nc > SIZE_MAX / 2 ? need : nc * 2;
    uint8_t *nb = vg__realloc(r->buf, r->cap, nc);
    if (!nb) return false;
    r->buf = nb;
    r->cap = nc;
    return true;
}

/* Reads one line into r->buf (without "\n" / "\r\n"). OUT_OF_RANGE at the end. */
static vg_code read_line(vg__reader *r, size_t *len, vg_status *st) {
    size_t n = 0;
    int c;
    bool any = false;
    while ((c = getc(r->text)) != EOF) {
        any = true;
        if (c == '\n') break;
        if (n >= (uint64_t)vg__io_max_record_bytes())
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                                 "%s: line %lld is longer than the limit of %lld bytes (max_record_bytes, "
                                 "vg_set_decode_limits)",
                                 r->work, (long long)r->line + 1, (long long)vg__io_max_record_bytes());
        if (!grow(r, n + 2)) return VG_OOM(st, "text line");
        r->buf[n++] = (uint8_t)c;
    }
    if (ferror(r->text)) return vg__io_errno_status(st, errno ? errno : EIO, "cannot read", r->work);
    if (!any) return VG_OUT_OF_RANGE;
    if (n > 0 && r->buf[n - 1] == '\r') n--;
    *len = n;
    return VG_OK;
}

/* OnWorkStartedLocked: opens the file. */
static vg_code start_work(vg__reader *r, vg_status *st) {
    switch (r->kind) {
    case R_TFRECORD:
        r->zr = vg__zrecord_reader_open(r->work, r->compression, st);
        return r->zr ? VG_OK : st->code;
    case R_FIXED: {
        r->fd = vg__io_open_regular(r->work, st); /* no FIFO, no /dev/zero */
        if (r->fd < 0) return st->code;
        struct stat sb;
        if (fstat(r->fd, &sb) != 0) return vg__io_errno_status(st, errno, "cannot stat", r->work);
        r->pos = r->header;
        r->limit = (int64_t)sb.st_size - r->footer;
        r->recno = 0;
        return VG_OK;
    }
    case R_TEXT: {
        if (!(r->text = vg__io_fopen_regular(r->work, st))) return st->code;
        r->line = 0;
        for (int64_t i = 0; i < r->skip_lines; i++) {
            size_t len;
            vg_code rc = read_line(r, &len, st);
            if (rc == VG_OUT_OF_RANGE) break;
            if (rc != VG_OK) return rc;
            r->line++;
        }
        return VG_OK;
    }
    default:
        return VG_OK;
    }
}

/* ReadLocked: *produced or *at_end. */
static vg_code read_locked(vg__reader *r, rec_out *o, bool *produced, bool *at_end, vg_status *st) {
    *produced = *at_end = false;
    vg_code rc;
    switch (r->kind) {
    case R_TFRECORD: {
        uint64_t off;
        vg_status e;
        vg_status_clear(&e);
        rc = vg__zrecord_reader_next(r->zr, &o->val, &o->len, &off, &e);
        if (rc == VG_OUT_OF_RANGE) {
            *at_end = true;
            return VG_OK;
        }
        if (rc != VG_OK) {
            vg_status_copy(st, &e);
            return rc;
        }
        snprintf(o->key, sizeof o->key, "%s:%llu", r->work, (unsigned long long)off);
        o->kp = o->key, o->kl = strlen(o->key);
        *produced = true;
        return VG_OK;
    }
    case R_FIXED: {
        if (r->pos + r->record > r->limit) {
            *at_end = true;
            return VG_OK;
        }
        if (!grow(r, (size_t)r->record)) return VG_OOM(st, "fixed-length record");
        size_t got = 0;
        while (got < (size_t)r->record) {
            ssize_t k = pread(r->fd, r->buf + got, (size_t)r->record - got, (off_t)(r->pos + (int64_t)got));
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) return vg__io_errno_status(st, errno, "cannot read", r->work);
            if (k == 0)
                return vg_status_set(st, VG_DATA_LOSS, "%s: file shrank while reading record %lld at offset %lld",
                                     r->work, (long long)r->recno, (long long)r->pos);
            got += (size_t)k;
        }
        snprintf(o->key, sizeof o->key, "%s:%lld", r->work, (long long)r->recno);
        o->kp = o->key, o->kl = strlen(o->key);
        o->val = r->buf;
        o->len = (size_t)r->record;
        r->recno++;
        r->pos += r->hop > 0 ? r->hop : r->record;
        *produced = true;
        return VG_OK;
    }
    case R_TEXT: {
        size_t len = 0;
        rc = read_line(r, &len, st);
        r->line++;
        if (rc == VG_OUT_OF_RANGE) {
            *at_end = true;
            return VG_OK;
        }
        if (rc != VG_OK) return rc;
        snprintf(o->key, sizeof o->key, "%s:%lld", r->work, (long long)r->line);
        o->kp = o->key, o->kl = strlen(o->key);
        o->val = r->buf ? r->buf : (const uint8_t *)"";
        o->len = len;
        *produced = true;
        return VG_OK;
    }
    case R_IDENTITY: /* key and value: the work item itself */
        o->kp = r->work, o->kl = r->work_len;
        o->val = (const uint8_t *)r->work;
        o->len = r->work_len;
        *produced = true;
        *at_end = true;
        return VG_OK;
    default: {
        uint8_t *data;
        size_t len;
        if ((rc = vg__io_read_file(r->work, &data, &len, st)) != VG_OK) return rc;
        vg__free(r->buf);
        r->buf = data;
        r->cap = len;
        o->kp = r->work, o->kl = r->work_len;
        o->val = data;
        o->len = len;
        *produced = true;
        *at_end = true; /* one record per file: finished after this one */
        return VG_OK;
    }
    }
}

/* Produces the next record, taking new work from the queue as needed. *ended tells
 * whether a work unit finished during the call. With stop_at_work_end (ReadUpTo once
 * it has records) a work unit that ends without a record ends the call: VG_OK with
 * *got false. Otherwise VG_OK means a record in *o (*got true). */
static vg_code next_record(vg__reader *r, const vg_tensor *queue, int64_t deadline, rec_out *o, bool stop_at_work_end,
                           bool *got, bool *ended, vg_status *st) {
    *got = *ended = false;
    for (;;) {
        if (!r->work) {
            vg_tensor *w = NULL;
            vg_code rc = vg__queue_dequeue_string(queue, deadline, &w, st);
            if (rc != VG_OK) return rc;
            size_t len = 0;
            const char *s = vg_tensor_string(w, 0, &len);
            r->work = vg__malloc(len + 1);
            if (r->work) {
                if (len) memcpy(r->work, s, len);
                r->work[len] = 0;
                r->work_len = len;
            }
            vg_tensor_free(w);
            if (!r->work) return VG_OOM(st, "reader work item");
            vg__free(r->last);
            r->last = NULL;
            r->last_len = 0;
            if ((rc = start_work(r, st)) != VG_OK) {
                finish_work(r); /* TF: the work item is consumed; the error reaches the caller */
                return rc;
            }
            r->started++;
        }
        bool produced, at_end;
        vg_code rc = read_locked(r, o, &produced, &at_end, st);
        if (rc != VG_OK) return rc;
        if (produced) r->produced++;
        *got = produced;
        if (at_end) {
            r->completed = r->started; /* TF: work_finished_ = work_started_ */
            /* whole-file / identity: key and value live in r->last and r->buf, which
             * finish_work keeps */
            finish_work(r);
            *ended = true;
            if (produced || stop_at_work_end) return VG_OK;
            continue;
        }
        if (produced) return VG_OK;
    }
}

/* ------------------------------------------------------------------------ */
/* kernels */

static vg_code kernel_reader(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const char *shared;
    size_t slen;
    void *r;
    vg_code rc = vg__kctx_op_resource(ctx, "reader:", 1000, &reader_resource_ops, reader_create, &r, &shared, &slen);
    if (rc != VG_OK) return rc;
    if (((vg__reader *)r)->kind != kind_of_op(vg_op_type(op)))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shared reader '%.*s' is of another type than %s", (int)slen,
                             shared, vg_op_type(op));
    return vg__kctx_output_handle(ctx, r);
}

static vg__reader *reader_of(vg__kctx *ctx) {
    return vg__kctx_handle_input(ctx, 0, "reader");
}

static vg_code kernel_read(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__reader *r = reader_of(ctx);
    if (!r) return st->code;
    vg_tensor *k, *v;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &k);
    if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, 1, VG_STRING, NULL, 0, &v);
    if (rc != VG_OK) return rc;
    rec_out *o = vg__malloc(sizeof *o);
    if (!o) return VG_OOM(st, "reader record");
    pthread_mutex_lock(&r->mu);
    bool got, ended;
    rc = next_record(r, vg__kctx_input(ctx, 1), vg__kctx_deadline_ns(ctx), o, false, &got, &ended, st);
    if (rc == VG_OK) rc = vg_tensor_set_string(k, 0, o->kp, o->kl, st);
    if (rc == VG_OK) rc = vg_tensor_set_string(v, 0, (const char *)o->val, o->len, st);
    pthread_mutex_unlock(&r->mu);
    vg__free(o);
    return rc;
}

/* Copies the first n strings of keys and vals into ko and vo. */
static vg_code copy_records(vg_tensor *ko, vg_tensor *vo, const vg_tensor *keys, const vg_tensor *vals, int64_t n,
                            vg_status *st) {
    vg_code rc = VG_OK;
    for (int64_t i = 0; i < n && rc == VG_OK; i++) {
        size_t l;
        const char *s = vg_tensor_string(keys, i, &l);
        rc = vg_tensor_set_string(ko, i, s, l, st);
        s = vg_tensor_string(vals, i, &l);
        if (rc == VG_OK) rc = vg_tensor_set_string(vo, i, s, l, st);
    }
    return rc;
}

static vg_code kernel_read_up_to(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__reader *r = reader_of(ctx);
    if (!r) return st->code;
    int64_t n = (int64_t)vg_tensor_scalar(vg__kctx_input(ctx, 2));
    if (n <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "num_records (%lld) must be > 0", (long long)n);
    if (n > (1 << 24)) n = 1 << 24; /* bounded; a caller asking more gets several calls' worth */
    rec_out *o = vg__malloc(sizeof *o);
    vg_tensor *keys = NULL, *vals = NULL;
    vg_code rc = o ? VG_OK : VG_OOM(st, "reader record");
    int64_t got = 0, cap = n < 64 ? n : 64;
    if (rc == VG_OK && (!(keys = vg_tensor_new(VG_STRING, &cap, 1, st)) || !(vals = vg_tensor_new(VG_STRING, &cap, 1, st))))
        rc = st->code;
    bool locked = rc == VG_OK;
    if (locked) pthread_mutex_lock(&r->mu);
    while (rc == VG_OK && got < n) {
        vg_status e;
        vg_status_clear(&e);
        bool have, ended;
        vg_code r2 = next_record(r, vg__kctx_input(ctx, 1), vg__kctx_deadline_ns(ctx), o, got > 0, &have, &ended, &e);
        if (r2 != VG_OK) {
            if (got == 0 || r2 != VG_OUT_OF_RANGE) {
                vg_status_copy(st, &e);
                rc = r2;
            }
            break;
        }
        if (!have) break; /* TF's ReadUpTo: a finished work unit ends a call that has records */
        if (got == cap) { /* grow both string vectors */
            int64_t nc = cap * 2 < n ? cap * 2 : n;
            vg_tensor *nk = vg_tensor_new(VG_STRING, &nc, 1, st), *nv = nk ? vg_tensor_new(VG_STRING, &nc, 1, st) : NULL;
            if (!nk || !nv) {
                vg_tensor_free(nk);
                rc = st->code;
                break;
            }
            rc = copy_records(nk, nv, keys, vals, got, st);
            vg_tensor_free(keys);
            vg_tensor_free(vals);
            keys = nk;
            vals = nv;
            cap = nc;
        }
        if (rc == VG_OK) rc = vg_tensor_set_string(keys, got, o->kp, o->kl, st);
        if (rc == VG_OK) rc = vg_tensor_set_string(vals, got, (const char *)o->val, o->len, st);
        got++;
        if (ended) break; /* the record ended its work unit (whole-file, identity) */
    }
    if (locked) pthread_mutex_unlock(&r->mu);
    vg_tensor *ko, *vo;
    if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, 0, VG_STRING, &got, 1, &ko);
    if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, 1, VG_STRING, &got, 1, &vo);
    if (rc == VG_OK) rc = copy_records(ko, vo, keys, vals, got, st);
    vg_tensor_free(keys);
    vg_tensor_free(vals);
    vg__free(o);
    return rc;
}

static vg_code counter(vg__kctx *ctx, bool produced) {
    vg_status *st = vg__kctx_status(ctx);
    vg__reader *r = reader_of(ctx);
    if (!r) return st->code;
    pthread_mutex_lock(&r->mu);
    int64_t n = produced ? r->produced : r->completed;
    pthread_mutex_unlock(&r->mu);
    return vg__kctx_output_int_scalar(ctx, VG_INT64, n);
}
static vg_code kernel_num_records(vg__kctx *ctx) { return counter(ctx, true); }
static vg_code kernel_num_work_units(vg__kctx *ctx) { return counter(ctx, false); }

static vg_code kernel_reset(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__reader *r = reader_of(ctx);
    if (!r) return st->code;
    pthread_mutex_lock(&r->mu);
    reset_locked(r);
    pthread_mutex_unlock(&r->mu);
    return VG_OK;
}

/* ReaderSerializeStateV2 / ReaderRestoreStateV2. TF 1.15's ReaderBase defers to the
 * reader's SerializeStateLocked / RestoreStateLocked; WholeFileReader and
 * IdentityReader save their ReaderBase state as a ReaderBaseState proto
 * (work_started = 1, work_finished = 2, num_records_produced = 3, current_work = 4;
 * proto3: zeros and "" are omitted), the TFRecord, fixed-length and text-line readers
 * keep the base class's UNIMPLEMENTED. */
static bool kind_serializes(int kind) { return kind == R_WHOLE || kind == R_IDENTITY; }

/* TF's name() of a reader: "<Type> '<node name>'". */
static void tf_reader_name(const vg__reader *r, char *out, size_t n) {
    snprintf(out, n, "%s '%s'", r->kind == R_IDENTITY ? "IdentityReader" : "WholeFileReader", r->name);
}

/* absl::CEscape (at most n - 1 bytes; the message is bounded anyway). */
static void c_escape(const uint8_t *p, size_t len, char *out, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < n; i++) {
        uint8_t c = p[i];
        const char *e = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '"' ? "\\\"" : c == '\'' ? "\\'"
                      : c == '\\' ? "\\\\" : NULL;
        if (e) o += (size_t)snprintf(out + o, n - o, "%s", e);
        else if (c < 0x20 || c >= 0x7f) o += (size_t)snprintf(out + o, n - o, "\\%03o", c);
        else out[o++] = (char)c;
    }
    out[o] = 0;
}

static vg_code kernel_serialize_state(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__reader *r = reader_of(ctx);
    if (!r) return st->code;
    if (!kind_serializes(r->kind)) return vg_status_set(st, VG_UNIMPLEMENTED, "Reader SerializeState");
    vg_tensor *out;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out);
    if (rc != VG_OK) return rc;
    vg__pb_buf b;
    vg__pb_init(&b);
    pthread_mutex_lock(&r->mu);
    /* SaveBaseState: work_ is the current item, or the last one once finished */
    const char *work = r->work ? r->work : r->last;
    size_t wl = r->work ? r->work_len : r->last_len;
    if (r->started) vg__pb_put_int64(&b, 1, r->started);
    if (r->completed) vg__pb_put_int64(&b, 2, r->completed);
    if (r->produced) vg__pb_put_int64(&b, 3, r->produced);
    if (work && wl) vg__pb_put_bytes(&b, 4, work, wl);
    pthread_mutex_unlock(&r->mu);
    rc = vg__pb_buf_status(&b, "reader state", st);
    if (rc == VG_OK) rc = vg_tensor_set_string(out, 0, b.len ? (const char *)b.data : "", b.len, st);
    vg__pb_free(&b);
    return rc;
}

/* RestoreStateLocked of WholeFileReader / IdentityReader: ParseProtoUnlimited, then
 * ReaderBase::RestoreBaseState's checks. */
static vg_code restore_locked(vg__reader *r, const uint8_t *p, size_t len, vg_status *st) {
    char nm[1200];
    if (!kind_serializes(r->kind)) return vg_status_set(st, VG_UNIMPLEMENTED, "Reader RestoreState");
    tf_reader_name(r, nm, sizeof nm);
    int64_t v[4] = {0, 0, 0, 0};
    const uint8_t *work = NULL;
    size_t wl = 0;
    vg__pb_reader pr;
    vg__pb_field f;
    vg_status e;
    vg_status_clear(&e);
    vg__pb_reader_init(&pr, p, len);
    vg_code rc;
    while ((rc = vg__pb_next(&pr, &f, &e)) == VG_OK) {
        /* a known field with another wire type is an unknown field to protobuf */
        if (f.number >= 1 && f.number <= 3 && f.wiretype == 0) v[f.number] = (int64_t)f.u;
        else if (f.number == 4 && f.wiretype == 2) work = f.data, wl = f.len;
    }
    if (rc != VG_OUT_OF_RANGE) {
        char esc[512];
        c_escape(p, len, esc, sizeof esc);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Could not parse state for %s: %s", nm, esc);
    }
    char dbg[600];
    int o = 0;
    static const char *const names[4] = {NULL, "work_started", "work_finished", "num_records_produced"};
    for (int i = 1; i <= 3; i++)
        if (v[i]) o += snprintf(dbg + o, sizeof dbg - (size_t)o, "%s: %lld\n", names[i], (long long)v[i]);
    if (wl) {
        char esc[400];
        c_escape(work, wl, esc, sizeof esc);
        snprintf(dbg + o, sizeof dbg - (size_t)o, "current_work: \"%s\"\n", esc);
    }
    if (v[1] < 0 || v[2] < 0 || v[3] < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Unexpected negative value when restoring in %s: %s", nm, dbg);
    if (v[1] > v[2])
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Inconsistent work started vs. finished when restoring in %s: %s", nm, dbg);
    char *w = vg__malloc(wl + 1);
    if (!w) return VG_OOM(st, "reader state");
    if (wl) memcpy(w, work, wl);
    w[wl] = 0;
    close_work(r);
    vg__free(r->last);
    r->last = w;
    r->last_len = wl;
    r->started = v[1];
    r->completed = v[2];
    r->produced = v[3];
    return VG_OK;
}

static vg_code kernel_restore_state(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__reader *r = reader_of(ctx);
    if (!r) return st->code;
    const vg_tensor *t = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(t) != 0) {
        char buf[128];
        vg_shape s = vg_shape_make(vg_tensor_dims(t), vg_tensor_ndims(t));
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Reader state must be scalar, but had shape: %s",
                             vg_shape_str(&s, buf, sizeof buf));
    }
    size_t len = 0;
    const char *p = vg_tensor_string(t, 0, &len);
    pthread_mutex_lock(&r->mu);
    vg_code rc = restore_locked(r, (const uint8_t *)(p ? p : ""), p ? len : 0, st);
    if (rc != VG_OK) reset_locked(r); /* ReaderBase::RestoreState: a failed restore resets */
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* shape functions */

static vg_code shape_reader(vg_op *op, vg_status *st) {
    const char *type = vg_op_type(op);
    int kind = kind_of_op(type);
    if (kind == R_FIXED) {
        int64_t rb = vg__attr_int_or(op, "record_bytes", 0), hb = vg__attr_int_or(op, "header_bytes", 0),
                fb = vg__attr_int_or(op, "footer_bytes", 0), hop = vg__attr_int_or(op, "hop_bytes", 0);
        if (rb <= 0 || rb > (int64_t)1 << 31 || hb < 0 || fb < 0 || hop < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "FixedLengthRecordReader: record_bytes must be in (0, 2^31], header_bytes, "
                                 "footer_bytes and hop_bytes >= 0 (got %lld, %lld, %lld, %lld)",
                                 (long long)rb, (long long)hb, (long long)fb, (long long)hop);
        const char *enc;
        size_t el = 0;
        if (vg_op_attr_string(op, "encoding", &enc, &el) && el)
            return vg_status_set(st, VG_UNIMPLEMENTED, "FixedLengthRecordReader: encoding '%.*s' is not supported",
                                 (int)el, enc);
    }
    if (kind == R_TEXT && vg__attr_int_or(op, "skip_header_lines", 0) < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "skip_header_lines must be >= 0");
    if (kind == R_TFRECORD) {
        const char *ct;
        size_t cl = 0;
        if (vg_op_attr_string(op, "compression_type", &ct, &cl) && cl) {
            char buf[32];
            snprintf(buf, sizeof buf, "%.*s", (int)(cl < 31 ? cl : 31), ct);
            vg_compression c;
            vg_code rc = vg_compression_parse(buf, &c, st);
            if (rc != VG_OK) return rc;
        }
    }
    return vg__op_set_single_output(op, VG_RESOURCE, vg_shape_make(NULL, 0));
}

static bool is_reader_op(const vg_op *op) {
    const char *t = op ? vg_op_type(op) : "";
    return strcmp(t, "TFRecordReaderV2") == 0 || strcmp(t, "FixedLengthRecordReaderV2") == 0 ||
           strcmp(t, "TextLineReaderV2") == 0 || strcmp(t, "WholeFileReaderV2") == 0 ||
           strcmp(t, "IdentityReaderV2") == 0;
}

static vg_code check_reader_input(vg_op *op, vg_status *st) {
    vg_output in = vg_op_input(op, 0);
    if (vg_output_dtype(in) != VG_RESOURCE || !is_reader_op(in.op))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input 0 must be a reader handle", vg_op_type(op));
    return VG_OK;
}

static vg_code shape_read(vg_op *op, vg_status *st) {
    vg_code rc = check_reader_input(op, st);
    if (rc != VG_OK) return rc;
    vg_output q = vg_op_input(op, 1);
    if (vg_output_dtype(q) != VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input 1 must be a queue handle", vg_op_type(op));
    bool up_to = strcmp(vg_op_type(op), "ReaderReadUpToV2") == 0;
    if (up_to) {
        vg_dtype dt = vg__op_input_dtype(op, 2);
        if (dt != VG_INT64 && dt != VG_INT32)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "ReaderReadUpToV2: num_records must be int64");
    }
    vg__op_set_num_outputs(op, 2);
    vg_shape s = up_to ? vg_shape_make((int64_t[]){-1}, 1) : vg_shape_make(NULL, 0);
    vg__op_set_output(op, 0, VG_STRING, s);
    vg__op_set_output(op, 1, VG_STRING, s);
    return VG_OK;
}

static vg_code shape_counter(vg_op *op, vg_status *st) {
    return vg__shape_scalar_after(op, check_reader_input(op, st), VG_INT64);
}

static vg_code shape_serialize_state(vg_op *op, vg_status *st) {
    return vg__shape_scalar_after(op, check_reader_input(op, st), VG_STRING);
}

static vg_code shape_restore_state(vg_op *op, vg_status *st) {
    vg_code rc = check_reader_input(op, st);
    if (rc != VG_OK) return rc;
    if (vg__op_input_dtype(op, 1) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReaderRestoreStateV2: state must be a string, got %s",
                             vg_dtype_name(vg__op_input_dtype(op, 1)));
    vg_shape s = vg__op_input_shape(op, 1);
    if (s.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReaderRestoreStateV2: Shape must be rank 0 but is rank %d",
                             s.ndims);
    return vg__op_set_no_outputs(op);
}

static vg_code shape_reset(vg_op *op, vg_status *st) {
    return vg__shape_none_after(op, check_reader_input(op, st));
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_op_builder *reader_builder(vg_graph *g, const char *type, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : type);
    vg_op_builder_set_attr_string(b, "container", "", 0);
    vg_op_builder_set_attr_string(b, "shared_name", "", 0);
    return b;
}

vg_output vg_tfrecord_reader(vg_graph *g, const char *compression_type, const char *name) {
    vg_op_builder *b = reader_builder(g, "TFRecordReaderV2", name);
    const char *ct = compression_type ? compression_type : "";
    vg_op_builder_set_attr_string(b, "compression_type", ct, strlen(ct));
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_fixed_length_record_reader(vg_graph *g, int64_t header_bytes, int64_t record_bytes, int64_t footer_bytes,
                                        int64_t hop_bytes, const char *name) {
    vg_op_builder *b = reader_builder(g, "FixedLengthRecordReaderV2", name);
    vg_op_builder_set_attr_int(b, "header_bytes", header_bytes);
    vg_op_builder_set_attr_int(b, "record_bytes", record_bytes);
    vg_op_builder_set_attr_int(b, "footer_bytes", footer_bytes);
    vg_op_builder_set_attr_int(b, "hop_bytes", hop_bytes);
    vg_op_builder_set_attr_string(b, "encoding", "", 0);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_text_line_reader(vg_graph *g, int64_t skip_header_lines, const char *name) {
    vg_op_builder *b = reader_builder(g, "TextLineReaderV2", name);
    vg_op_builder_set_attr_int(b, "skip_header_lines", skip_header_lines);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_whole_file_reader(vg_graph *g, const char *name) {
    return vg_out(vg_op_builder_finish(reader_builder(g, "WholeFileReaderV2", name)), 0);
}

vg_output vg_identity_reader(vg_graph *g, const char *name) {
    return vg_out(vg_op_builder_finish(reader_builder(g, "IdentityReaderV2", name)), 0);
}

bool vg_reader_supports_serialize(vg_output reader) {
    const char *t = reader.op ? vg_op_type(reader.op) : "";
    return strcmp(t, "WholeFileReaderV2") == 0 || strcmp(t, "IdentityReaderV2") == 0;
}

vg_op *vg_reader_read(vg_graph *g, vg_output reader, vg_output queue, const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "ReaderReadV2", name, "ReaderReadV2", (vg_output[]){reader, queue}, 2);
    return vg_op_builder_finish(b);
}

vg_op *vg_reader_read_up_to(vg_graph *g, vg_output reader, vg_output queue, vg_output num_records, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "ReaderReadUpToV2", name, "ReaderReadUpToV2",
                                               (vg_output[]){reader, queue, num_records}, 3);
    return vg_op_builder_finish(b);
}

static vg_op *unary(vg_graph *g, const char *type, vg_output reader, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, type, (vg_output[]){reader}, 1);
    return vg_op_builder_finish(b);
}

vg_output vg_reader_num_records_produced(vg_graph *g, vg_output reader, const char *name) {
    return vg_out(unary(g, "ReaderNumRecordsProducedV2", reader, name), 0);
}
vg_output vg_reader_num_work_units_completed(vg_graph *g, vg_output reader, const char *name) {
    return vg_out(unary(g, "ReaderNumWorkUnitsCompletedV2", reader, name), 0);
}
vg_op *vg_reader_reset(vg_graph *g, vg_output reader, const char *name) {
    return unary(g, "ReaderResetV2", reader, name);
}
vg_output vg_reader_serialize_state(vg_graph *g, vg_output reader, const char *name) {
    return vg_out(unary(g, "ReaderSerializeStateV2", reader, name), 0);
}
vg_op *vg_reader_restore_state(vg_graph *g, vg_output reader, vg_output state, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "ReaderRestoreStateV2", name, "ReaderRestoreStateV2",
                                               (vg_output[]){reader, state}, 2);
    return vg_op_builder_finish(b);
}

/* ------------------------------------------------------------------------ */
/* MatchingFiles (io_ops): the sorted paths matching one or more glob patterns. */

static vg_code shape_matching_files(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MatchingFiles: pattern must be a string tensor");
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims > 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "MatchingFiles: pattern must be a scalar or vector");
    return vg__op_set_single_output(op, VG_STRING, vg_shape_make((int64_t[]){-1}, 1));
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static vg_code kernel_matching_files(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *pat = vg__kctx_input(ctx, 0);
    glob_t gl;
    memset(&gl, 0, sizeof gl);
    vg_code rc = VG_OK;
    for (int64_t i = 0; i < vg_tensor_num_elements(pat) && rc == VG_OK; i++) {
        size_t l;
        const char *p = vg_tensor_string(pat, i, &l);
        char *z = vg__strndup(p, l);
        if (!z) {
            rc = VG_OOM(st, "pattern");
            break;
        }
        int g = glob(z, i ? GLOB_APPEND : 0, NULL, &gl);
        vg__free(z);
        if (g == GLOB_NOSPACE) rc = VG_OOM(st, "glob");
        else if (g != 0 && g != GLOB_NOMATCH) rc = vg_status_set(st, VG_UNKNOWN, "cannot read a directory of pattern %.*s", (int)l, p);
    }
    int64_t n = rc == VG_OK ? (int64_t)gl.gl_pathc : 0;
    if (n > 1) qsort(gl.gl_pathv, (size_t)n, sizeof(char *), cmp_str);
    vg_tensor *out;
    if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, 0, VG_STRING, &n, 1, &out);
    for (int64_t i = 0; i < n && rc == VG_OK; i++) rc = vg_tensor_set_string(out, i, gl.gl_pathv[i], strlen(gl.gl_pathv[i]), st);
    globfree(&gl);
    return rc;
}

vg_output vg_matching_files(vg_graph *g, vg_output pattern, const char *name) {
    return vg__build_simple(g, "MatchingFiles", name, "MatchingFiles", (vg_output[]){pattern}, 1);
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_reader[] = {
    {"TFRecordReaderV2", 0, 0, READER_FLAGS, 0, shape_reader, kernel_reader, NULL},
    {"FixedLengthRecordReaderV2", 0, 0, READER_FLAGS, 0, shape_reader, kernel_reader, NULL},
    {"TextLineReaderV2", 0, 0, READER_FLAGS, 0, shape_reader, kernel_reader, NULL},
    {"WholeFileReaderV2", 0, 0, READER_FLAGS, 0, shape_reader, kernel_reader, NULL},
    {"IdentityReaderV2", 0, 0, READER_FLAGS, 0, shape_reader, kernel_reader, NULL},
    {"ReaderReadV2", 2, 2, READ_FLAGS, 0, shape_read, kernel_read, NULL},
    {"ReaderReadUpToV2", 3, 3, READ_FLAGS, 0, shape_read, kernel_read_up_to, NULL},
    {"ReaderNumRecordsProducedV2", 1, 1, READ_FLAGS, 0, shape_counter, kernel_num_records, NULL},
    {"ReaderNumWorkUnitsCompletedV2", 1, 1, READ_FLAGS, 0, shape_counter, kernel_num_work_units, NULL},
    {"ReaderResetV2", 1, 1, READ_FLAGS, 0, shape_reset, kernel_reset, NULL},
    {"ReaderSerializeStateV2", 1, 1, READ_FLAGS, 0, shape_serialize_state, kernel_serialize_state, NULL},
    {"ReaderRestoreStateV2", 2, 2, READ_FLAGS, 0, shape_restore_state, kernel_restore_state, NULL},
    {"MatchingFiles", 1, 1, READER_FLAGS, 0, shape_matching_files, kernel_matching_files, NULL},
    {0},
};
