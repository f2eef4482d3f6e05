/* event_file_reader.c - the public event-file reader (include/vigil/events.h) and IDX
 * loader (include/vigil/idx.h), thin layers over the TFRecord, Event and IDX code of
 * this directory (formats: docs/formats.md §3). */
#include "core/core.h"
#include "io/io.h"
#include "vigil/events.h"
#include "vigil/idx.h"
#include <stddef.h>
#include <string.h>

struct vg_event_reader {
    vg__tfrecord_reader *rec;
    vg_event_damage damage;
    char *path;
};

VG_API vg_event_reader *vg_event_reader_open(const char *path, vg_status *st) {
    if (!path) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "vg_event_reader_open: path is NULL");
        return NULL;
    }
    vg_event_reader *r = vg__io_new_with_path(sizeof *r, offsetof(vg_event_reader, path), path, "event reader", st);
    if (!r) return NULL;
    if (!(r->rec = vg__tfrecord_reader_open(path, st))) {
        vg__free(r->path);
        vg__free(r);
        return NULL;
    }
    return r;
}

/* Field 1 (tag) of a TaggedRunMetadata. */
static void tagged_tag(const uint8_t *p, size_t n, vg_event *ev) {
    vg__pb_reader pr;
    vg__pb_field f;
    vg__pb_reader_init(&pr, p, n);
    while (vg__pb_next(&pr, &f, NULL) == VG_OK)
        if (f.number == 1 && f.wiretype == VG__PB_LEN) {
            ev->tag = (const char *)f.data;
            ev->tag_len = f.len;
        }
}

VG_API vg_code vg_event_reader_next(vg_event_reader *r, vg_event *ev, vg_status *st) {
    if (!r || !ev) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_event_reader_next: %s is NULL", r ? "ev" : "r");
    memset(ev, 0, sizeof *ev);
    vg_status local;
    if (!st) st = &local;
    r->damage = VG_EVENT_DAMAGE_NONE;
    const uint8_t *data;
    size_t len;
    uint64_t off = vg__tfrecord_reader_offset(r->rec);
    vg_code c = vg__tfrecord_reader_next(r->rec, &data, &len, st);
    if (c == VG_DATA_LOSS) {
        r->damage = strstr(st->msg, "truncated") ? VG_EVENT_DAMAGE_TORN : VG_EVENT_DAMAGE_CORRUPT;
        return c;
    }
    if (c == VG_OUT_OF_RANGE) return vg_status_set(st, VG_OUT_OF_RANGE, "end of %s", r->path);
    if (c != VG_OK) return c;
    vg__event_info info;
    if (vg__event_decode(data, len, &info, st) != VG_OK) {
        char why[200];
        snprintf(why, sizeof why, "%.190s", st->msg);
        r->damage = VG_EVENT_DAMAGE_MALFORMED;
        return vg_status_set(st, VG_DATA_LOSS, "malformed record at offset %llu in %s: not an Event (%s)",
                             (unsigned long long)off, r->path, why);
    }
    ev->wall_time = info.wall_time;
    ev->step = info.step;
    ev->kind = (vg_event_kind)info.kind;
    ev->payload = info.payload;
    ev->payload_len = info.payload_len;
    ev->session_log_status = info.session_status;
    ev->offset = off;
    if (ev->kind == VG_EVENT_TAGGED_RUN_METADATA) tagged_tag(info.payload, info.payload_len, ev);
    return VG_OK;
}

VG_API vg_event_damage vg_event_reader_damage(const vg_event_reader *r) { return r ? r->damage : VG_EVENT_DAMAGE_NONE; }

VG_API vg_code vg_event_reader_skip_corrupt(vg_event_reader *r, vg_status *st) {
    if (!r) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_event_reader_skip_corrupt: r is NULL");
    vg_code c = vg__tfrecord_reader_skip_corrupt(r->rec, st);
    if (c == VG_OK) r->damage = VG_EVENT_DAMAGE_NONE;
    return c;
}

VG_API uint64_t vg_event_reader_offset(const vg_event_reader *r) { return r ? vg__tfrecord_reader_offset(r->rec) : 0; }

VG_API void vg_event_reader_close(vg_event_reader *r) {
    if (!r) return;
    vg__tfrecord_reader_close(r->rec);
    vg__free(r->path);
    vg__free(r);
}

/* The public iterator keeps the same two pointers as vg__summary_iter's reader. */
VG_API void vg_summary_iter_init(vg_summary_iter *it, const void *summary, size_t len) {
    if (!it) return;
    it->pos = summary;
    it->end = summary ? (const uint8_t *)summary + len : NULL;
}

VG_API vg_code vg_summary_iter_next(vg_summary_iter *it, vg_summary_value *v, vg_status *st) {
    if (!it || !v) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_summary_iter_next: %s is NULL", it ? "v" : "it");
    memset(v, 0, sizeof *v);
    if (!it->pos || it->pos >= it->end) return VG_OUT_OF_RANGE;
    vg__summary_iter in;
    vg__summary_iter_init(&in, it->pos, (size_t)(it->end - it->pos));
    vg__summary_value iv;
    vg_code c = vg__summary_next(&in, &iv, st);
    if (c != VG_OK) return c;
    it->pos = in.r.p;
    v->tag = iv.tag;
    v->tag_len = iv.tag_len;
    v->kind = (vg_summary_value_kind)iv.kind;
    v->has_scalar = iv.has_scalar;
    v->scalar = iv.scalar;
    v->histo = iv.histo;
    v->histo_len = iv.histo_len;
    return VG_OK;
}

/* ---- IDX ---------------------------------------------------------------------- */

VG_API vg_code vg_idx_read(const char *path, int expected_type, int64_t dims[4], int *ndims, void **data,
                           size_t *nbytes, vg_status *st) {
    if (data) *data = NULL;
    if (!path || !dims || !ndims || !data || !nbytes)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_idx_read: %s is NULL",
                             !path ? "path" : !dims ? "dims" : !ndims ? "ndims" : !data ? "data" : "nbytes");
    if (expected_type < 0 || expected_type > 0xFF)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_idx_read: expected_type %d is not an IDX type", expected_type);
    return vg__idx_read(path, (uint8_t)expected_type, dims, ndims, data, nbytes, st);
}

VG_API vg_code vg_idx_header(const char *path, int *type, int64_t dims[4], int *ndims, vg_status *st) {
    if (!path || !dims || !ndims)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_idx_header: %s is NULL",
                             !path ? "path" : !dims ? "dims" : "ndims");
    vg_status local;
    if (!st) st = &local;
    vg__idx_reader *r = vg__idx_reader_open(path, 0, st);
    if (!r) return st->code;
    int n = 0;
    const int64_t *d = vg__idx_reader_dims(r, &n);
    for (int i = 0; i < n && i < 4; i++) dims[i] = d[i];
    *ndims = n;
    if (type) *type = vg__idx_reader_type(r);
    vg__idx_reader_close(r);
    return VG_OK;
}
