/* dataset_fixture.h - input files shared by the tests in tests/dataset: two TFRecord
 * files of tf.Example rows with every kind of bad row the parsing paths must survive.
 * Include after test_util.h; every helper is static inline. */
#ifndef VG_DATASET_FIXTURE_H
#define VG_DATASET_FIXTURE_H
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <stdbool.h>
#include <stdint.h>

/* XORs the byte back bytes before the end of the file at path with mask (checking the
 * file opens): a record there fails its CRC. */
static inline void ds_flip_byte(const char *path, long back, int mask) {
    FILE *fp = fopen(path, "r+b");
    CHECK(fp != NULL);
    if (fp) {
        fseek(fp, -back, SEEK_END);
        int c = fgetc(fp);
        fseek(fp, -back, SEEK_END);
        fputc(c ^ mask, fp);
        fclose(fp);
    }
}

/* Writes nrec Example records into files[0] (rows 0 .. nrec/2 - 1) and files[1] (the
 * rest), both "<dir>/part<f>.tfrecord". Row i, from an LCG started at seed: image,
 * 16 bytes; label int64 (missing when r % 9 == 1), w float[3] (missing when r % 4 == 0).
 * Rows i >= bad_from are sometimes bad: label a float (r % 41 == 7), not an Example at
 * all (r % 43 == 11), and with long_images a 20-byte image (r % 37 == 3). Then one byte
 * corrupt_back bytes before the end of files[1] is flipped (a record failing its CRC). */
static inline void ds_write_example_files(char files[2][512], const char *dir, int nrec, uint64_t seed,
                                          int bad_from, bool long_images, long corrupt_back) {
    vg_status st;
    vg_example *ex = vg_example_new();
    uint64_t x = seed;
    for (int f = 0; f < 2; f++) {
        snprintf(files[f], 512, "%s/part%d.tfrecord", dir, f);
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(files[f], VG_COMPRESSION_NONE, &st);
        CHECK(w != NULL);
        for (int i = f * nrec / 2; w && i < (f + 1) * nrec / 2; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            unsigned r = (unsigned)(x >> 33);
            vg_example_clear(ex);
            char img[20];
            for (int k = 0; k < 20; k++) img[k] = (char)((r >> (k % 24)) + (unsigned)(k * 13 + i));
            bool bad = i >= bad_from;
            size_t ilen = long_images && bad && r % 37 == 3 ? 20 : 16;
            vg_example_add_bytes(ex, "image", (const char *[]){img}, &ilen, 1, &st);
            int64_t label = (int64_t)(r % 10) - 3;
            float flabel = (float)label;
            if (bad && r % 41 == 7) vg_example_add_float(ex, "label", &flabel, 1, &st); /* a type error */
            else if (r % 9 != 1) vg_example_add_int64(ex, "label", &label, 1, &st);
            float wv[3] = {(float)(r % 5) * 0.37f, 0.5f, -(float)i / 3.0f};
            if (r % 4) vg_example_add_float(ex, "w", wv, 3, &st);
            size_t len;
            const void *b = vg_example_serialize(ex, &len, &st);
            if (bad && r % 43 == 11) CHECK_OK(vg_tfrecord_writer_write(w, "\xff\xfe no Example", 13, &st), &st);
            else CHECK_OK(vg_tfrecord_writer_write(w, b, len, &st), &st);
        }
        if (w) CHECK_OK(vg_tfrecord_writer_close(w, &st), &st);
    }
    vg_example_free(ex);
    ds_flip_byte(files[1], corrupt_back, 0x21);
}

/* The three features of ds_write_example_files' rows, as parse specs: image (a string),
 * label (int64), w (float[3]); none has a default. */
static inline void ds_example_specs(vg_feature_spec specs[3]) {
    specs[0] = (vg_feature_spec){"image", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}};
    specs[1] = (vg_feature_spec){"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}};
    specs[2] = (vg_feature_spec){"w", VG_FLOAT, false, vg_shape_make((int64_t[]){3}, 1), {NULL, 0}};
}

/* A 1-D string Const called name of the n NUL-terminated strings stored row_len bytes
 * apart from rows (a char[n][row_len] array of paths). */
static inline vg_output ds_string_rows(vg_graph *g, const char *rows, size_t row_len, int n, const char *name) {
    vg_tensor *f = vg_tensor_new(VG_STRING, (int64_t[]){n}, 1, NULL);
    for (int i = 0; i < n; i++) {
        const char *row = rows + (size_t)i * row_len;
        vg_tensor_set_string(f, i, row, strlen(row), NULL);
    }
    vg_output c = vg_const(g, f, name);
    vg_tensor_free(f);
    return c;
}

/* A [2] string Const "files" holding the two paths files[0], files[1]. */
static inline vg_output ds_files_const(vg_graph *g, char files[2][512]) {
    return ds_string_rows(g, files[0], sizeof files[0], 2, "files");
}

/* Writes a TFRecord file at path with compression c of n records, record r the text fmt
 * formats from (r, f) (f: the file's number); each write checked. */
static inline void ds_write_text_records_c(const char *path, vg_compression c, int n, const char *fmt, int f) {
    vg_status st;
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, c, &st);
    CHECK(w != NULL);
    for (int r = 0; w && r < n; r++) {
        char rec[64];
        int len = snprintf(rec, sizeof rec, fmt, r, f);
        CHECK_OK(vg_tfrecord_writer_write(w, rec, (size_t)len, &st), &st);
    }
    if (w) CHECK_OK(vg_tfrecord_writer_close(w, &st), &st);
}

/* The same, uncompressed. */
static inline void ds_write_text_records(const char *path, int n, const char *fmt, int f) {
    ds_write_text_records_c(path, VG_COMPRESSION_NONE, n, fmt, f);
}

/* Opens a session on g into *s once g has built cleanly; with sv, first a saver into *sv
 * (empty allowed, no meta graph, max_to_keep checkpoints: 0 the default). Says why not on
 * stderr (what names the case) and returns whether the session opened (checked). */
static inline bool ds_open(vg_graph *g, vg_saver **sv, int max_to_keep, vg_session **s, const char *what) {
    vg_status st;
    bool ok = vg_graph_status(g, &st) == VG_OK;
    if (ok && sv) {
        vg_saver_options so = {.allow_empty = true, .no_meta_graph = true, .max_to_keep = max_to_keep};
        ok = (*sv = vg_saver_new(g, &so, &st)) != NULL;
    }
    *s = ok ? vg_session_new(g, NULL, &st) : NULL;
    if (!*s) fprintf(stderr, "%s: building the graph: %s\n", what, st.msg);
    CHECK(*s != NULL);
    return *s != NULL;
}

/* Ends a test over s and g: fetching next's first output is at its end (OUT_OF_RANGE)
 * and, with bad, fetching bad's fails with INVALID_ARGUMENT and a message containing msg;
 * frees s and g. */
static inline void ds_check_end_free(vg_session *s, vg_graph *g, vg_op *next, vg_op *bad, const char *msg) {
    vg_status st;
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE);
    if (bad) {
        CHECK_CODE(vg_session_run1(s, vg_out(bad, 0), &t, &st), VG_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(st.msg, msg);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

/* Writes a TFRecord file at path (compression c) of n tf.Examples, example i holding
 * the int64 feature "label" = first + i and what more(ex, label, i, u) adds; returns the
 * sum of the labels. */
typedef void (*ds_example_fn)(vg_example *ex, int64_t label, int i, void *u);
static inline int64_t ds_write_labelled_examples(const char *path, vg_compression c, int n, int64_t first,
                                                 ds_example_fn more, void *u) {
    vg_status st;
    int64_t sum = 0;
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, c, &st);
    for (int i = 0; i < n; i++) {
        vg_example *ex = vg_example_new();
        int64_t label = first + i;
        sum += label;
        vg_example_add_int64(ex, "label", &label, 1, &st);
        more(ex, label, i, u);
        write_example(w, ex);
        vg_example_free(ex);
    }
    vg_tfrecord_writer_close(w, &st);
    return sum;
}

#endif
