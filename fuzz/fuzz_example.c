/* fuzz_example.c - tf.train.Example / SequenceExample decoding (every value read back)
 * and TFRecord streams with compression (byte 0 picks none / ZLIB / GZIP; the rest is
 * the file). No allocation may exceed what the input can hold (-malloc_limit_mb). */
#include "fuzz_util.h"
#include "io/example_io.h"

static void read_feature(const vg__feature *f) {
    vg_status st;
    int64_t n, got;
    if (vg__feature_count(f, &n, &st) != VG_OK || n > 65536) return;
    if (f->kind == VG__FEAT_INT64 || f->kind == VG__FEAT_FLOAT) {
        void *buf = vg__malloc((size_t)(n ? n : 1) * 8);
        if (!buf) return;
        if (f->kind == VG__FEAT_INT64) vg__feature_int64s(f, buf, n, &got, &st);
        else vg__feature_floats(f, buf, n, &got, &st);
        vg__free(buf);
    } else if (f->kind == VG__FEAT_BYTES) {
        vg__pb_reader r;
        const uint8_t *p;
        size_t len;
        vg__pb_reader_init(&r, f->list, f->list_len);
        while (vg__feature_bytes_next(&r, &p, &len, &st) == VG_OK) {}
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vg_status st;
    vg__features fs = {0};
    if (vg__example_decode(data, size, &fs, &st) == VG_OK)
        for (size_t i = 0; i < fs.n; i++) read_feature(&fs.v[i]);
    vg__features_free(&fs);
    vg__seq_example se = {0};
    if (vg__seq_example_decode(data, size, &se, &st) == VG_OK) {
        for (size_t i = 0; i < se.context.n; i++) read_feature(&se.context.v[i]);
        for (size_t i = 0; i < se.nlists; i++) {
            vg__pb_reader r;
            vg__feature f;
            vg__pb_reader_init(&r, se.lists[i].data, se.lists[i].len);
            while (vg__feature_list_next(&r, &f, &st) == VG_OK) read_feature(&f);
        }
    }
    vg__seq_example_free(&se);
    if (size > 0) {
        const char *p = fz_write("records.tfrecord", data + 1, size - 1);
        vg__zrecord_reader *zr = vg__zrecord_reader_open(p, data[0] % 3, &st);
        const uint8_t *d;
        size_t len;
        uint64_t off;
        for (int i = 0; zr && i < 4096 && vg__zrecord_reader_next(zr, &d, &len, &off, &st) == VG_OK; i++) {}
        vg__zrecord_reader_close(zr);
    }
    return 0;
}
