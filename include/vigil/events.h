/*
 * events.h - reading TensorFlow event files (events.out.tfevents.*), like TF's
 * tf.compat.v1.train.summary_iterator: one vg_event per record, and the values of a
 * Summary event (tag, simple_value, histogram bytes).
 *
 * Records that fail their checksum are reported, not fatal: vg_event_reader_next returns
 * VG_DATA_LOSS with a message naming the file and the byte offset, and
 * vg_event_reader_damage() says what kind of damage it was; the reader can go on.
 * The reader is not thread-safe (one thread at a time per reader).
 *
 * Example (prints every scalar):
 *     #include <vigil/vigil.h>
 *     #include <stdio.h>
 *     int print_scalars(const char *path) {
 *         vg_status st;
 *         vg_event_reader *r = vg_event_reader_open(path, &st);
 *         if (!r) return 1;
 *         vg_event ev;
 *         vg_code rc;
 *         while ((rc = vg_event_reader_next(r, &ev, &st)) != VG_OUT_OF_RANGE) {
 *             if (rc != VG_OK) {
 *                 if (vg_event_reader_damage(r) == VG_EVENT_DAMAGE_CORRUPT &&
 *                     vg_event_reader_skip_corrupt(r, &st) == VG_OK)
 *                     continue;
 *                 if (vg_event_reader_damage(r) == VG_EVENT_DAMAGE_MALFORMED) continue;
 *                 break;
 *             }
 *             if (ev.kind != VG_EVENT_SUMMARY) continue;
 *             vg_summary_iter it;
 *             vg_summary_value v;
 *             vg_summary_iter_init(&it, ev.payload, ev.payload_len);
 *             while (vg_summary_iter_next(&it, &v, &st) == VG_OK)
 *                 if (v.has_scalar)
 *                     printf("%lld %.*s %g\n", (long long)ev.step, (int)v.tag_len, v.tag, v.scalar);
 *         }
 *         vg_event_reader_close(r);
 *         return 0;
 *     }
 */
#ifndef VIGIL_EVENTS_H
#define VIGIL_EVENTS_H

#include "status.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which member of the Event's `what` oneof is set (= its field number in event.proto). */
typedef enum vg_event_kind {
    VG_EVENT_NONE = 0,
    VG_EVENT_FILE_VERSION = 3,         /* payload: the version string ("brain.Event:2") */
    VG_EVENT_GRAPH_DEF = 4,            /* payload: a serialized GraphDef */
    VG_EVENT_SUMMARY = 5,              /* payload: a serialized Summary (vg_summary_iter) */
    VG_EVENT_LOG_MESSAGE = 6,          /* payload: a serialized LogMessage */
    VG_EVENT_SESSION_LOG = 7,          /* session_log_status; payload: the SessionLog */
    VG_EVENT_TAGGED_RUN_METADATA = 8,  /* tag; payload: the TaggedRunMetadata */
    VG_EVENT_META_GRAPH_DEF = 9        /* payload: a serialized MetaGraphDef */
} vg_event_kind;

/* SessionLog.status (event.proto); vg_file_writer_add_session_log writes it. */
typedef enum vg_session_log_status {
    VG_SESSION_LOG_START = 1,
    VG_SESSION_LOG_STOP = 2,
    VG_SESSION_LOG_CHECKPOINT = 3
} vg_session_log_status;

/* One decoded Event. Pointers borrow from the reader and stay valid until the next
 * call on it. An Event written without a step (TF writes graph events so) has step 0,
 * as in TF's summary_iterator. */
typedef struct vg_event {
    double wall_time;          /* seconds since the epoch */
    int64_t step;
    vg_event_kind kind;
    const uint8_t *payload;    /* bytes of the oneof member (see vg_event_kind) */
    size_t payload_len;
    int session_log_status;    /* VG_EVENT_SESSION_LOG: a vg_session_log_status (0 = unspecified) */
    const char *tag;           /* VG_EVENT_TAGGED_RUN_METADATA: the tag (not NUL-terminated) */
    size_t tag_len;
    uint64_t offset;           /* byte offset of the record in the file */
} vg_event;

/* What the last VG_DATA_LOSS from vg_event_reader_next was. */
typedef enum vg_event_damage {
    VG_EVENT_DAMAGE_NONE = 0,
    VG_EVENT_DAMAGE_TORN,      /* the file ends inside a record (writer killed or still
                                  writing); the position stays, a later call retries */
    VG_EVENT_DAMAGE_CORRUPT,   /* a checksum mismatch; vg_event_reader_skip_corrupt moves on */
    VG_EVENT_DAMAGE_MALFORMED  /* the record verified but is not an Event; already skipped */
} vg_event_damage;

typedef struct vg_event_reader vg_event_reader;

/* Opens an event file (any TFRecord file). The path is copied. Returns NULL on failure:
 * NOT_FOUND or another errno code naming the path, INVALID_ARGUMENT (NULL path),
 * RESOURCE_EXHAUSTED. Free with vg_event_reader_close. */
VG_API vg_event_reader *vg_event_reader_open(const char *path, vg_status *st);

/* Reads the next event into *ev (which must not be NULL).
 *   VG_OK            an event;
 *   VG_OUT_OF_RANGE  clean end of the file ("end of <path>");
 *   VG_DATA_LOSS     a damaged record, message "<kind> record at offset N in <path>...";
 *                    vg_event_reader_damage() tells which kind;
 *   INVALID_ARGUMENT r or ev NULL; other errno codes on read errors. */
VG_API vg_code vg_event_reader_next(vg_event_reader *r, vg_event *ev, vg_status *st);

/* The kind of the last VG_DATA_LOSS (VG_EVENT_DAMAGE_NONE after a good record). */
VG_API vg_event_damage vg_event_reader_damage(const vg_event_reader *r);

/* After VG_EVENT_DAMAGE_CORRUPT: moves to the next record that verifies. VG_OK, or
 * OUT_OF_RANGE when none follows, FAILED_PRECONDITION when there was no corrupt record. */
VG_API vg_code vg_event_reader_skip_corrupt(vg_event_reader *r, vg_status *st);

/* Byte offset of the next record to read. 0 for NULL. */
VG_API uint64_t vg_event_reader_offset(const vg_event_reader *r);

/* Closes and frees the reader. NULL is a no-op. */
VG_API void vg_event_reader_close(vg_event_reader *r);

/* ---- Summary values ------------------------------------------------------- */

typedef enum vg_summary_value_kind {
    VG_SUMMARY_VALUE_OTHER = 0,
    VG_SUMMARY_VALUE_SIMPLE,   /* simple_value (TF1 scalars) */
    VG_SUMMARY_VALUE_HISTO,    /* histo: a HistogramProto */
    VG_SUMMARY_VALUE_TENSOR,   /* tensor (TF2 summaries) */
    VG_SUMMARY_VALUE_IMAGE,
    VG_SUMMARY_VALUE_AUDIO
} vg_summary_value_kind;

/* One Summary.Value; pointers borrow from the Summary bytes. */
typedef struct vg_summary_value {
    const char *tag;           /* not NUL-terminated */
    size_t tag_len;
    vg_summary_value_kind kind;
    bool has_scalar;           /* simple_value, or a one-element numeric tensor (TF2) */
    double scalar;
    const uint8_t *histo;      /* HistogramProto bytes when kind == VG_SUMMARY_VALUE_HISTO */
    size_t histo_len;
} vg_summary_value;

/* Iterator over the values of a serialized Summary (the bytes are borrowed and must
 * outlive it). Plain data: no cleanup needed. */
typedef struct vg_summary_iter {
    const uint8_t *pos, *end;
} vg_summary_iter;

/* Starts iterating summary[0..len). Cannot fail (bad bytes fail in _next). */
VG_API void vg_summary_iter_init(vg_summary_iter *it, const void *summary, size_t len);

/* Next value: VG_OK, VG_OUT_OF_RANGE after the last one, VG_DATA_LOSS when the
 * Summary is malformed, INVALID_ARGUMENT when it or v is NULL. */
VG_API vg_code vg_summary_iter_next(vg_summary_iter *it, vg_summary_value *v, vg_status *st);

#ifdef __cplusplus
}
#endif

#endif
