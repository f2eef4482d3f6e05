/*
 * event_file.c - event files: the synchronous writer (TF's EventsWriter: file name
 * events.out.tfevents.<10-digit secs>.<hostname><suffix>, first record
 * {wall_time, file_version: "brain.Event:2"}) and a reader that decodes each TFRecord
 * as an Event. Neither is thread-safe; a queueing/flushing thread belongs on top.
 */
#include "io/io.h"
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_VERSION "brain.Event:2"
#define MAX_NAME_TRIES 1000

struct vg__event_writer {
    vg__tfrecord_writer *w;
    char *path;
    vg__pb_buf scratch;
};

static char *event_file_name(const char *dir, const char *suffix, long long secs) {
    char host[256];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    if (!suffix) suffix = "";
    if (!dir || !*dir) dir = ".";
    size_t n = strlen(dir) + strlen(host) + strlen(suffix) + 64;
    char *p = vg__malloc(n);
    if (p) snprintf(p, n, "%s%sevents.out.tfevents.%010lld.%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", secs,
                    host, suffix);
    return p;
}

vg__event_writer *vg__event_writer_open(const char *dir, const char *filename_suffix, vg_status *st) {
    if (vg__io_mkdirs(dir, st)) return NULL;
    vg__event_writer *w = vg__calloc(1, sizeof *w);
    long long secs = (long long)vg__wall_secs();
    if (!w) {
        VG_OOM(st, "event writer");
        return NULL;
    }
    vg__pb_init(&w->scratch);
    /* A new file only (O_EXCL | O_NOFOLLOW): an existing event file (a run killed in this
     * same second) is never truncated and a symlink planted at the name is never
     * followed; the next second's name is tried instead, as TF's writers pick a new name. */
    for (int k = 0; k < MAX_NAME_TRIES && !w->w; k++) {
        vg__free(w->path);
        if (!(w->path = event_file_name(dir, filename_suffix, secs + k))) {
            VG_OOM(st, "event writer");
            goto fail;
        }
        vg_status cst;
        w->w = vg__tfrecord_writer_create(w->path, &cst);
        if (!w->w && cst.code != VG_ALREADY_EXISTS) {
            vg_status_copy(st, &cst);
            goto fail;
        }
    }
    if (!w->w) {
        vg_status_set(st, VG_ALREADY_EXISTS, "cannot create a new event file in %s: %d names taken", dir,
                      MAX_NAME_TRIES);
        goto fail;
    }

    vg__event ev = {.wall_time = (double)secs, .kind = VG__EVENT_FILE_VERSION, .data = FILE_VERSION,
                    .len = sizeof FILE_VERSION - 1};
    if (vg__event_writer_write_event(w, &ev, st) || vg__event_writer_flush(w, st)) goto fail;
    return w;
fail:
    /* a file this call created (O_EXCL: nobody else's) goes again, so failed opens do not
     * use up the names */
    if (w->w && w->path) unlink(w->path);
    vg__event_writer_close(w, NULL);
    return NULL;
}

vg_code vg__event_writer_write(vg__event_writer *w, const void *event, size_t len, vg_status *st) {
    return vg__tfrecord_writer_write(w->w, event, len, st);
}

vg_code vg__event_writer_write_event(vg__event_writer *w, const vg__event *ev, vg_status *st) {
    vg__pb_reset(&w->scratch);
    vg__event_encode(&w->scratch, ev);
    vg_code c = vg__pb_buf_status(&w->scratch, "event", st);
    if (c) {
        vg__pb_free(&w->scratch); /* clears the sticky flag for the next event */
        return c;
    }
    return vg__tfrecord_writer_write(w->w, w->scratch.data, w->scratch.len, st);
}

vg_code vg__event_writer_flush(vg__event_writer *w, vg_status *st) {
    return vg__tfrecord_writer_flush(w->w, true, st);
}

vg_code vg__event_writer_drain(vg__event_writer *w, vg_status *st) {
    return vg__tfrecord_writer_flush(w->w, false, st);
}

vg_code vg__event_writer_close(vg__event_writer *w, vg_status *st) {
    if (!w) return VG_OK;
    vg_code c = VG_OK;
    if (w->w) {
        c = vg__tfrecord_writer_flush(w->w, true, st);
        vg_code c2 = vg__tfrecord_writer_close(w->w, c ? NULL : st);
        if (!c) c = c2;
    }
    vg__pb_free(&w->scratch);
    vg__free(w->path);
    vg__free(w);
    return c;
}

const char *vg__event_writer_path(const vg__event_writer *w) { return w->path; }

/* ---- reader ---- */

struct vg__event_reader {
    vg__tfrecord_reader *r;
};

vg__event_reader *vg__event_reader_open(const char *path, vg_status *st) {
    vg__event_reader *r = vg__calloc(1, sizeof *r);
    if (!r) {
        VG_OOM(st, "event reader");
        return NULL;
    }
    if (!(r->r = vg__tfrecord_reader_open(path, st))) {
        vg__free(r);
        return NULL;
    }
    return r;
}

vg_code vg__event_reader_next(vg__event_reader *r, vg__event_info *ev, vg_status *st) {
    const uint8_t *data;
    size_t len;
    vg_code c = vg__tfrecord_reader_next(r->r, &data, &len, st);
    if (c) return c;
    return vg__event_decode(data, len, ev, st);
}

void vg__event_reader_close(vg__event_reader *r) {
    if (!r) return;
    vg__tfrecord_reader_close(r->r);
    vg__free(r);
}
