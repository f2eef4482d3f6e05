/* fuzz_events.c - TFRecord framing and event files as `vigil events` / `vigil plot`
 * read them: records (skipping corrupt ones), Event protos, Summary values, histogram
 * statistics. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fz_write("events.out.tfevents.1.fuzz", data, size);
    vg_status st;
    vg__tfrecord_reader *r = vg__tfrecord_reader_open(p, &st);
    if (!r) return 0;
    for (int guard = 0; guard < 100000; guard++) {
        const uint8_t *rec;
        size_t n;
        vg_code c = vg__tfrecord_reader_next(r, &rec, &n, &st);
        if (c == VG_OUT_OF_RANGE) break;
        if (c == VG_DATA_LOSS) {
            if (strstr(st.msg, "truncated")) break;
            if (vg__tfrecord_reader_skip_corrupt(r, &st) != VG_OK) break;
            continue;
        }
        if (c != VG_OK) break;
        vg__event_info ev;
        if (vg__event_decode(rec, n, &ev, &st) != VG_OK || ev.kind != VG__EVENT_SUMMARY) continue;
        vg__summary_iter it;
        vg__summary_iter_init(&it, ev.payload, ev.payload_len);
        vg__summary_value v;
        while (vg__summary_next(&it, &v, &st) == VG_OK) {
            vg__histo_stats hs;
            if (v.kind == VG__VALUE_HISTO) vg__histo_decode_stats(v.histo, v.histo_len, &hs, &st);
        }
    }
    vg__tfrecord_reader_close(r);
    return 0;
}
