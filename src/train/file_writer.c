/*
 * file_writer.c - tf.summary.FileWriter (python/summary/writer/writer.py and
 * event_file_writer.py) and its SummaryWriterCache (writer_cache.py).
 *
 * A writer owns one event file (the io layer's synchronous vg__event_writer) and a
 * background thread. add_* calls encode an Event in the caller's thread (wall_time =
 * now, step) and append it to a queue of at most max_queue events; the thread writes
 * the queue to the file and fsyncs it:
 *   - when a flush is requested (vg_file_writer_flush/close);
 *   - when events have waited flush_secs since the last flush (timed condvar wait).
 * An add that fills the queue writes the queue to the file itself, under the lock,
 * once the thread is idle, and does not fsync (TF's EventFileWriter too syncs only
 * every flush_secs): the queue stays bounded and its events are readable in the file
 * when that add returns, at the cost of a write. (It used to wait for the thread to
 * write and fsync: an fsync per max_queue events plus a thread hand-off, most of the
 * monitored session's per-step overhead with the default hooks.)
 * Only the thread touches the open file, except open (new/reopen), the final close and
 * the write of a full queue, which happen while the thread is idle and the lock held.
 * A write error (the thread's or a full queue's) is kept and returned by the next call
 * on the writer (add_*, flush, close, reopen) with the count of events of the failed
 * batch; the io layer's file keeps its first error (a torn
 * record may end it), so every later batch fails the same way until close + reopen.
 *
 * The summary-specific rules of writer.py are kept: a Summary.Value's metadata is
 * written only the first time its tag is seen by this writer, and a tag of
 * add_run_metadata may be used once.
 *
 * Two writers in one directory in the same second would get the same file name
 * (TF1 overwrites the older file); vigil waits for the next second instead, so close +
 * reopen always gives a second file.
 */
#include "train_util.h"
#include "io/io.h"
#include "vigil/graphdef.h"
#include "vigil/summary.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct pending {
    uint8_t *data; /* one serialized Event (vg_malloc) */
    size_t len;
} pending;

/* A set of strings (few: tags with plugin metadata, run-metadata tags). */
typedef struct tagset {
    char **tags;
    int n, cap;
} tagset;

static bool tagset_has(const tagset *t, const char *tag) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->tags[i], tag) == 0) return true;
    return false;
}

/* Adds a copy of tag; false (set unchanged) when out of memory. */
static bool tagset_add(tagset *t, const char *tag) {
    char *c = vg__train_strdup(tag);
    if (!c || !vg__train_grow((void **)&t->tags, &t->cap, t->n + 1, sizeof(char *))) {
        vg_free(c);
        return false;
    }
    t->tags[t->n++] = c;
    return true;
}

static void tagset_free(tagset *t) {
    for (int i = 0; i < t->n; i++) vg_free(t->tags[i]);
    vg_free(t->tags);
    memset(t, 0, sizeof *t);
}

struct vg_file_writer {
    char *logdir;
    char *suffix;
    char *path;              /* current (or last closed) event file */
    int max_queue;
    int64_t flush_ns;
    pthread_mutex_t mu;
    pthread_cond_t work;     /* the thread waits here */
    pthread_cond_t done;     /* callers wait here for flushes */
    pthread_t thread;
    vg__event_writer *file;  /* NULL while closed */
    bool closed, stop, busy, warned_closed;
    bool unsynced;           /* a full queue was written by an add and not fsynced yet */
    pending *q;              /* queued events, oldest first */
    int nq, qcap;
    uint64_t flush_req, flush_done;
    int64_t last_flush_ns;   /* vg__train_now_ns clock */
    vg_status err;           /* first background error not yet reported */
    int64_t dropped;         /* events lost with it */
    tagset seen_tags;        /* Summary.Value tags whose metadata was written */
    tagset run_tags;         /* tags used by add_run_metadata */
};

/* ------------------------------------------------------------------------ */
/* opening event files */

static pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;

/* Whether the file io's vg__event_writer_open would create for `secs` exists already
 * (same name rule as src/io/event_file.c). */
static bool event_file_exists(const char *dir, const char *suffix, long long secs) {
    char host[256], path[4096];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    if (!dir || !*dir) dir = ".";
    snprintf(path, sizeof path, "%s%sevents.out.tfevents.%010lld.%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
             secs, host, suffix ? suffix : "");
    struct stat sb;
    return lstat(path, &sb) == 0; /* a planted symlink takes the name too */
}

/* Opens a new event file, waiting (< 1 s) for the next second when this second's name
 * is taken. Serialized process-wide so two writers never race for one name. */
static vg__event_writer *open_event_file(const char *dir, const char *suffix, vg_status *st) {
    pthread_mutex_lock(&g_open_mu);
    for (int tries = 0; tries < 3; tries++) {
        double now = vg__train_wall_secs();
        long long secs = (long long)now;
        if (!event_file_exists(dir, suffix, secs)) break;
        double wait = (double)(secs + 1) - now + 0.002;
        struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    vg__event_writer *f = vg__event_writer_open(dir, suffix, st);
    pthread_mutex_unlock(&g_open_mu);
    return f;
}

/* ------------------------------------------------------------------------ */
/* the background thread */

static void cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns) {
    struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    pthread_cond_timedwait(cv, mu, &ts);
}

static bool has_work(const vg_file_writer *w, int64_t now) {
    return w->flush_req != w->flush_done || ((w->nq > 0 || w->unsynced) && now - w->last_flush_ns >= w->flush_ns);
}

/* Writes and frees a batch, then fsyncs (sync) or only writes out the file's buffer.
 * Events after a failure are dropped. */
static vg_code write_batch(vg__event_writer *f, pending *b, int n, bool sync, int64_t *dropped, vg_status *st) {
    vg_code c = f ? VG_OK : vg_status_set(st, VG_FAILED_PRECONDITION, "event file is closed");
    for (int i = 0; i < n; i++) {
        if (!c) c = vg__event_writer_write(f, b[i].data, b[i].len, st);
        if (c) (*dropped)++;
        vg_free(b[i].data);
    }
    if (!c && (c = sync ? vg__event_writer_flush(f, st) : vg__event_writer_drain(f, st)) != VG_OK)
        *dropped = n; /* none surely on disk */
    return c;
}

static void *writer_main(void *arg) {
    vg_file_writer *w = arg;
    pending *spare = NULL;
    int spare_cap = 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        int64_t now = vg__train_now_ns();
        if (!has_work(w, now)) {
            if (w->stop) break;
            if (w->nq > 0 || w->unsynced) cond_wait_until(&w->work, &w->mu, w->last_flush_ns + w->flush_ns);
            else pthread_cond_wait(&w->work, &w->mu);
            continue;
        }
        /* take the queue; callers continue into the spare array */
        pending *batch = w->q;
        int n = w->nq, cap = w->qcap;
        w->q = spare;
        w->qcap = spare_cap;
        w->nq = 0;
        uint64_t req = w->flush_req;
        vg__event_writer *f = w->file;
        w->busy = true;
        w->unsynced = false; /* this batch's fsync covers what the adds wrote */
        pthread_mutex_unlock(&w->mu);

        vg_status st;
        vg_status_clear(&st);
        int64_t dropped = 0;
        vg_code c = (n || f) ? write_batch(f, batch, n, true, &dropped, &st) : VG_OK;

        pthread_mutex_lock(&w->mu);
        spare = batch;
        spare_cap = cap;
        if (c) {
            if (!w->err.code) vg_status_copy(&w->err, &st);
            w->dropped += dropped;
        }
        w->last_flush_ns = vg__train_now_ns();
        w->flush_done = req;
        w->busy = false;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    vg_free(spare);
    return NULL;
}

/* A full queue: written to the file here (no fsync), once the thread is not writing.
 * Lock held, so the thread cannot take the file meanwhile. Errors are kept as the
 * thread's are. */
static void write_full_queue(vg_file_writer *w) {
    while (w->busy) pthread_cond_wait(&w->done, &w->mu);
    if (w->closed || w->nq < w->max_queue) return;
    vg_status st;
    vg_status_clear(&st);
    int64_t dropped = 0;
    vg_code c = write_batch(w->file, w->q, w->nq, false, &dropped, &st);
    w->nq = 0;
    w->unsynced = true; /* the thread fsyncs it by flush_secs */
    if (c) {
        if (!w->err.code) vg_status_copy(&w->err, &st);
        w->dropped += dropped;
    }
}

/* Asks the thread to write and fsync everything queued now; waits for it. Lock held. */
static void wait_flush(vg_file_writer *w) {
    uint64_t req = ++w->flush_req;
    pthread_cond_signal(&w->work);
    while (w->flush_done < req) pthread_cond_wait(&w->done, &w->mu);
}

/* Reports (once) a background error. Lock held. */
static vg_code take_error(vg_file_writer *w, vg_status *st) {
    vg_code c = w->err.code;
    if (!c) return VG_OK;
    if (w->dropped)
        vg_status_set(st, c, "%s (%lld event(s) not written)", w->err.msg, (long long)w->dropped);
    else
        vg_status_copy(st, &w->err);
    vg_status_clear(&w->err);
    w->dropped = 0;
    return c;
}

/* take_error, then unlocks w->mu (held by the caller). */
static vg_code take_error_unlock(vg_file_writer *w, vg_status *st) {
    vg_code c = take_error(w, st);
    pthread_mutex_unlock(&w->mu);
    return c;
}

/* Queues one encoded event (takes ev's memory). See the file comment for the rules. */
static vg_code enqueue(vg_file_writer *w, vg__pb_buf *ev, vg_status *st) {
    vg_code c = vg__pb_buf_status(ev, "event", st);
    if (c) {
        vg__pb_free(ev);
        return c;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->closed && w->nq >= w->max_queue) write_full_queue(w);
    if (w->closed) {
        bool warn = !w->warned_closed;
        w->warned_closed = true;
        c = take_error(w, st);
        pthread_mutex_unlock(&w->mu);
        vg__pb_free(ev);
        if (warn)
            vg_logf(VG_LOG_WARN, "Attempting to use a closed FileWriter (%s). The operation will be a noop unless "
                                 "the FileWriter is explicitly reopened.", w->logdir);
        return c;
    }
    if (w->nq == w->qcap && !vg__train_grow((void **)&w->q, &w->qcap, w->nq + 1, sizeof *w->q)) {
        pthread_mutex_unlock(&w->mu);
        vg__pb_free(ev);
        return VG_OOM(st, "event queue");
    }
    w->q[w->nq++] = (pending){ev->data, ev->len};
    vg__pb_init(ev); /* the queue owns the bytes now */
    if (w->nq == 1) pthread_cond_signal(&w->work); /* start the flush_secs timer */
    if (w->nq >= w->max_queue) write_full_queue(w);
    return take_error_unlock(w, st);
}

/* Encodes ev (wall_time = now) and queues it. */
static vg_code add_event(vg_file_writer *w, vg__event *ev, vg_status *st) {
    vg__pb_buf b;
    vg__pb_init(&b);
    ev->wall_time = vg__train_wall_secs();
    vg__event_encode(&b, ev);
    return enqueue(w, &b, st);
}

static vg_code null_writer(vg_status *st, const char *fn) {
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: writer is NULL", fn);
}

/* ------------------------------------------------------------------------ */
/* lifetime */

static void writer_destroy(vg_file_writer *w) {
    for (int i = 0; i < w->nq; i++) vg_free(w->q[i].data);
    vg_free(w->q);
    tagset_free(&w->seen_tags);
    tagset_free(&w->run_tags);
    vg_free(w->logdir);
    vg_free(w->suffix);
    vg_free(w->path);
    vg_free(w);
}

static bool init_sync(vg_file_writer *w) {
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) return false;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* vg__train_now_ns's clock */
    bool ok = pthread_mutex_init(&w->mu, NULL) == 0;
    if (ok && pthread_cond_init(&w->work, &ca) != 0) ok = false, pthread_mutex_destroy(&w->mu);
    if (ok && pthread_cond_init(&w->done, NULL) != 0)
        ok = false, pthread_cond_destroy(&w->work), pthread_mutex_destroy(&w->mu);
    pthread_condattr_destroy(&ca);
    return ok;
}

static void destroy_sync(vg_file_writer *w) {
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->mu);
}

/* TF's defaults for the zero fields (max_queue 10, flush_secs 120). */
static vg_file_writer_options resolve_file_writer_options(const vg_file_writer_options *in) {
    vg_file_writer_options o = {0};
    if (in) o = *in;
    if (o.max_queue == 0) o.max_queue = 10;
    if (o.flush_every_add) o.flush_secs = 0;
    else if (o.flush_secs == 0) o.flush_secs = 120;
    if (!o.filename_suffix) o.filename_suffix = "";
    return o;
}

vg_file_writer *vg_file_writer_new(const char *dir, const vg_file_writer_options *in, vg_status *st) {
    vg_file_writer_options resolved = resolve_file_writer_options(in);
    const vg_file_writer_options *opts = &resolved;
    if (!dir || !*dir) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "FileWriter: logdir must be a non-empty path");
        return NULL;
    }
    if (opts->max_queue <= 0 || !(opts->flush_secs >= 0)) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "FileWriter: max_queue must be > 0 and flush_secs >= 0 (got %d, %g)",
                      opts->max_queue, opts->flush_secs);
        return NULL;
    }
    vg_file_writer *w = vg__train_calloc(sizeof *w, st, "FileWriter");
    if (!w) return NULL;
    w->logdir = vg__train_strdup(dir);
    w->suffix = vg__train_strdup(opts->filename_suffix ? opts->filename_suffix : "");
    w->max_queue = opts->max_queue;
    /* clamp "never" (huge flush_secs) to ~30 years so deadlines do not overflow */
    w->flush_ns = opts->flush_secs > 1e9 ? (int64_t)1e18 : (int64_t)(opts->flush_secs * 1e9);
    if (!w->logdir || !w->suffix) {
        VG_OOM(st, "FileWriter");
        writer_destroy(w);
        return NULL;
    }
    if (!init_sync(w)) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "FileWriter: cannot create a mutex or condition variable");
        writer_destroy(w);
        return NULL;
    }
    w->file = open_event_file(w->logdir, w->suffix, st);
    if (w->file && !(w->path = vg__train_strdup(vg__event_writer_path(w->file)))) VG_OOM(st, "FileWriter");
    if (!w->path) goto fail;
    w->last_flush_ns = vg__train_now_ns();
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "FileWriter: cannot start the writer thread");
        goto fail;
    }
    return w;
fail:
    vg__event_writer_close(w->file, NULL);
    destroy_sync(w);
    writer_destroy(w);
    return NULL;
}

void vg_file_writer_free(vg_file_writer *w) {
    if (!w) return;
    vg_status st;
    if (vg_file_writer_close(w, &st) != VG_OK)
        vg_logf(VG_LOG_ERROR, "FileWriter %s: error while closing: %s", w->logdir, st.msg);
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    destroy_sync(w);
    writer_destroy(w);
}

vg_code vg_file_writer_flush(vg_file_writer *w, vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_flush");
    pthread_mutex_lock(&w->mu);
    if (!w->closed) wait_flush(w);
    return take_error_unlock(w, st);
}

vg_code vg_file_writer_close(vg_file_writer *w, vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_close");
    pthread_mutex_lock(&w->mu);
    if (w->closed) return take_error_unlock(w, st);
    w->closed = true; /* later adds are no-ops; everything queued before is flushed */
    wait_flush(w);
    while (w->busy) pthread_cond_wait(&w->done, &w->mu);
    vg__event_writer *f = w->file;
    w->file = NULL;
    pthread_mutex_unlock(&w->mu);

    vg_status cst;
    vg_status_clear(&cst);
    vg_code cc = vg__event_writer_close(f, &cst);

    pthread_mutex_lock(&w->mu);
    if (cc && !w->err.code) vg_status_copy(&w->err, &cst);
    return take_error_unlock(w, st);
}

vg_code vg_file_writer_reopen(vg_file_writer *w, vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_reopen");
    pthread_mutex_lock(&w->mu);
    vg_code c = take_error(w, st);
    if (c || !w->closed) { /* TF: does nothing if the writer was not closed */
        pthread_mutex_unlock(&w->mu);
        return c;
    }
    vg_status ost;
    vg_status_clear(&ost);
    vg__event_writer *f = open_event_file(w->logdir, w->suffix, &ost);
    char *path = f ? vg__train_strdup(vg__event_writer_path(f)) : NULL;
    if (f && !path) {
        vg__event_writer_close(f, NULL);
        f = NULL;
        VG_OOM(&ost, "FileWriter");
    }
    if (f) {
        vg_free(w->path);
        w->path = path;
        w->file = f;
        w->closed = false;
        w->warned_closed = false;
        w->last_flush_ns = vg__train_now_ns();
    } else {
        vg_status_copy(st, &ost);
        c = ost.code ? ost.code : VG_UNKNOWN;
    }
    pthread_mutex_unlock(&w->mu);
    return c;
}

const char *vg_file_writer_path(const vg_file_writer *w) { return w ? w->path : NULL; }
const char *vg_file_writer_logdir(const vg_file_writer *w) { return w ? w->logdir : NULL; }

/* ------------------------------------------------------------------------ */
/* events */

/* Copies raw bytes [from, to) of the input summary. */
static void copy_span(vg__pb_buf *out, const uint8_t *from, const uint8_t *to) {
    vg__pb_put_raw(out, from, (size_t)(to - from));
}

/* writer.py add_summary: a Value with metadata keeps it only the first time its tag is
 * seen. Returns OK with out->len == 0 when the summary can be used as is, else the
 * rewritten Summary in out. INVALID_ARGUMENT when the bytes are not a Summary. */
static vg_code strip_seen_metadata(vg_file_writer *w, const uint8_t *s, size_t len, vg__pb_buf *out, vg_status *st) {
    vg__pb_reader r, vr;
    vg__pb_field f, g;
    vg_code c = VG_OK, vc;
    const uint8_t *copied = s;
    bool rewrote = false;
    vg__pb_reader_init(&r, s, len);
    pthread_mutex_lock(&w->mu);
    while (c == VG_OK) {
        const uint8_t *fstart = r.p;
        if ((c = vg__pb_next(&r, &f, NULL)) != VG_OK) break;
        if (f.number != 1 || f.wiretype != VG__PB_LEN) continue;
        const uint8_t *tag = NULL;
        size_t tl = 0, meta_bytes = 0;
        vg__pb_reader_init(&vr, f.data, f.len);
        for (const uint8_t *p0 = vr.p; (vc = vg__pb_next(&vr, &g, NULL)) == VG_OK; p0 = vr.p) {
            if (g.number == 1 && g.wiretype == VG__PB_LEN) tag = g.data, tl = g.len;
            if (g.number == 9) meta_bytes += (size_t)(vr.p - p0);
        }
        if (vc != VG_OUT_OF_RANGE) {
            c = VG_DATA_LOSS;
            break;
        }
        if (!meta_bytes) continue;
        char *key = vg__train_strndup((const char *)(tag ? tag : (const uint8_t *)""), tl);
        if (!key) {
            c = VG_RESOURCE_EXHAUSTED;
            break;
        }
        if (!tagset_has(&w->seen_tags, key)) {
            if (!tagset_add(&w->seen_tags, key)) c = VG_RESOURCE_EXHAUSTED;
            vg_free(key);
            continue;
        }
        vg_free(key);
        /* re-emit this Value without its metadata fields */
        copy_span(out, copied, fstart);
        vg__pb_put_tag(out, 1, VG__PB_LEN);
        vg__pb_put_varint(out, f.len - meta_bytes);
        vg__pb_reader_init(&vr, f.data, f.len);
        for (const uint8_t *p0 = vr.p; vg__pb_next(&vr, &g, NULL) == VG_OK; p0 = vr.p)
            if (g.number != 9) copy_span(out, p0, vr.p);
        copied = r.p;
        rewrote = true;
    }
    pthread_mutex_unlock(&w->mu);
    if (c == VG_RESOURCE_EXHAUSTED) return VG_OOM(st, "summary tags");
    if (c != VG_OUT_OF_RANGE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "add_summary: the bytes are not a serialized Summary proto");
    if (rewrote) {
        copy_span(out, copied, s + len);
        if (!out->len) vg__pb_reserve(out, 1);
    }
    return vg__pb_buf_status(out, "summary", st);
}

vg_code vg_file_writer_add_summary(vg_file_writer *w, const void *summary, size_t len, int64_t step, vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_add_summary");
    if (!summary && len) return vg_status_set(st, VG_INVALID_ARGUMENT, "add_summary: summary is NULL");
    vg__pb_buf stripped;
    vg__pb_init(&stripped);
    vg_code c = strip_seen_metadata(w, summary, len, &stripped, st);
    if (c) {
        vg__pb_free(&stripped);
        return c;
    }
    vg__event ev = {.step = step, .kind = VG__EVENT_SUMMARY, .data = summary, .len = len};
    if (stripped.data) ev.data = stripped.data, ev.len = stripped.len;
    c = add_event(w, &ev, st);
    vg__pb_free(&stripped);
    return c;
}

vg_code vg_file_writer_add_scalar(vg_file_writer *w, const char *tag, double value, int64_t step, vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_add_scalar");
    vg__pb_buf s;
    vg__pb_init(&s);
    vg__summary_add_scalar(&s, tag ? tag : "", (float)value);
    vg_code c = vg__pb_buf_status(&s, "summary", st);
    if (!c) {
        vg__event ev = {.step = step, .kind = VG__EVENT_SUMMARY, .data = s.data, .len = s.len};
        c = add_event(w, &ev, st);
    }
    vg__pb_free(&s);
    return c;
}

vg_code vg_file_writer_add_graph(vg_file_writer *w, const vg_graph *g, int64_t step, vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_add_graph");
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "add_graph: graph is NULL");
    void *bytes = NULL;
    size_t len = 0;
    vg_code c = vg_graph_to_graphdef(g, &bytes, &len, st);
    if (c) return c;
    vg__event ev = {.step = step, .kind = VG__EVENT_GRAPH_DEF, .data = bytes, .len = len};
    c = add_event(w, &ev, st);
    vg_free(bytes);
    return c;
}

vg_code vg_file_writer_add_meta_graph(vg_file_writer *w, const void *meta_graph_def, size_t len, int64_t step,
                                      vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_add_meta_graph");
    if (!meta_graph_def && len) return vg_status_set(st, VG_INVALID_ARGUMENT, "add_meta_graph: bytes are NULL");
    vg__event ev = {.step = step, .kind = VG__EVENT_META_GRAPH_DEF, .data = meta_graph_def, .len = len};
    return add_event(w, &ev, st);
}

vg_code vg_file_writer_add_session_log(vg_file_writer *w, vg_session_log_status status, const char *checkpoint_path,
                                       const char *msg, int64_t step, vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_add_session_log");
    if ((int)status < 0 || (int)status > VG_SESSION_LOG_CHECKPOINT)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "add_session_log: unknown status %d", (int)status);
    vg__event ev = {.step = step, .kind = VG__EVENT_SESSION_LOG, .status = (int)status, .path = checkpoint_path,
                    .msg = msg};
    return add_event(w, &ev, st);
}

vg_code vg_file_writer_add_run_metadata(vg_file_writer *w, const vg_run_metadata *md, const char *tag, int64_t step,
                                        vg_status *st) {
    if (!w) return null_writer(st, "vg_file_writer_add_run_metadata");
    if (!md || !tag) return vg_status_set(st, VG_INVALID_ARGUMENT, "add_run_metadata: run metadata and tag are required");
    void *bytes = NULL;
    size_t len = 0;
    vg_code c = vg_run_metadata_serialize(md, &bytes, &len, st);
    if (c) return c;
    pthread_mutex_lock(&w->mu);
    if (tagset_has(&w->run_tags, tag)) c = vg_status_set(st, VG_INVALID_ARGUMENT, "add_run_metadata: the provided tag (%s) was already used "
                                                         "for this event type", tag);
    else if (!tagset_add(&w->run_tags, tag)) c = VG_OOM(st, "run metadata tags");
    pthread_mutex_unlock(&w->mu);
    if (!c) {
        vg__event ev = {.step = step, .kind = VG__EVENT_TAGGED_RUN_METADATA, .tag = tag, .data = bytes, .len = len};
        c = add_event(w, &ev, st);
    }
    vg_free(bytes);
    return c;
}

/* ------------------------------------------------------------------------ */
/* SummaryWriterCache */

typedef struct cache_entry {
    char *dir;
    vg_file_writer *w;
} cache_entry;

static pthread_mutex_t g_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *g_cache;
static int g_ncache, g_cache_cap;

vg_file_writer *vg_file_writer_cache_get(const char *dir, vg_status *st) {
    if (!dir || !*dir) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "SummaryWriterCache: logdir must be a non-empty path");
        return NULL;
    }
    pthread_mutex_lock(&g_cache_mu);
    vg_file_writer *w = NULL;
    for (int i = 0; i < g_ncache && !w; i++)
        if (strcmp(g_cache[i].dir, dir) == 0) w = g_cache[i].w;
    if (!w) {
        char *key = vg__train_strdup(dir);
        if (!key || !vg__train_grow((void **)&g_cache, &g_cache_cap, g_ncache + 1, sizeof *g_cache)) {
            VG_OOM(st, "SummaryWriterCache");
        } else if ((w = vg_file_writer_new(dir, NULL, st)) != NULL) {
            g_cache[g_ncache++] = (cache_entry){key, w};
            key = NULL;
        }
        vg_free(key);
    }
    pthread_mutex_unlock(&g_cache_mu);
    return w;
}

void vg_file_writer_cache_clear(void) {
    pthread_mutex_lock(&g_cache_mu);
    cache_entry *entries = g_cache;
    int n = g_ncache;
    g_cache = NULL;
    g_ncache = g_cache_cap = 0;
    pthread_mutex_unlock(&g_cache_mu);
    for (int i = 0; i < n; i++) {
        vg_file_writer_free(entries[i].w);
        vg_free(entries[i].dir);
    }
    vg_free(entries);
}
