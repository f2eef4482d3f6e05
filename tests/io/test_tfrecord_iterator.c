/* test_tfrecord_iterator.c - tf.python_io.tf_record_iterator (vg_tfrecord_iterator):
 * a file TF wrote, round trips through vg_tfrecord_writer with each compression, and the
 * errors of TF's tf_record_test.py (TFRecordIteratorTest: testIterator,
 * testWriteZlibRead/testWriteGzipRead, testReadTruncatedFile, testReadReplacedFile...). */
#include "test_util.h"
#include "status_fixture.h"
#include "vigil/vigil.h"
#include <stdio.h>

/* The one record of tensorflow/rust's expected.tfrecord, written by
 * tf.python_io.TFRecordWriter (tests/data/tf/README.md). */
static void test_tf_written_file(void) {
    vg_status st;
    vg_tfrecord_iterator *it = vg_tfrecord_iterator_open(VG_TESTDATA "/tfrecord/rust_expected.tfrecord",
                                                         VG_COMPRESSION_NONE, &st);
    CHECK(it != NULL);
    if (!it) return;
    const void *rec = NULL;
    size_t n = 0;
    CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_OK);
    CHECK_EQ_INT(n, 19);
    CHECK(rec && memcmp(rec, "The Quick Brown Fox", 19) == 0);
    CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_OUT_OF_RANGE);
    CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_OUT_OF_RANGE); /* stays at the end */
    vg_tfrecord_iterator_close(it);
}

static const char *const k_records[] = {"Record 0", "", "a somewhat longer record number 2"};

static void write_file(const char *path, vg_compression c) {
    vg_status st;
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, c, &st);
    CHECK(w != NULL);
    if (!w) return;
    for (int i = 0; i < 3; i++) CHECK_OK(vg_tfrecord_writer_write(w, k_records[i], strlen(k_records[i]), &st), &st);
    CHECK_OK(vg_tfrecord_writer_close(w, &st), &st);
}

/* testIterator / testWriteZlibRead / testWriteGzipRead: what was written comes back in
 * order, for each compression. */
static void test_round_trips(void) {
    char dir[256], path[320];
    tu_mkdtemp(dir, sizeof dir, "tfrit");
    const vg_compression cs[] = {VG_COMPRESSION_NONE, VG_COMPRESSION_ZLIB, VG_COMPRESSION_GZIP};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/r%d.tfrecord", dir, k);
        write_file(path, cs[k]);
        vg_status st;
        vg_tfrecord_iterator *it = vg_tfrecord_iterator_open(path, cs[k], &st);
        CHECK(it != NULL);
        if (!it) continue;
        const void *rec;
        size_t n;
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_OK);
            CHECK_EQ_INT(n, strlen(k_records[i]));
            CHECK(n == 0 || memcmp(rec, k_records[i], n) == 0);
        }
        CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_OUT_OF_RANGE);
        vg_tfrecord_iterator_close(it);
    }
    /* a GZIP file read as ZLIB is a corrupt stream, not records */
    snprintf(path, sizeof path, "%s/r2.tfrecord", dir);
    vg_status st;
    vg_tfrecord_iterator *it = vg_tfrecord_iterator_open(path, VG_COMPRESSION_ZLIB, &st);
    CHECK(it != NULL);
    if (it) {
        const void *rec;
        size_t n;
        CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_DATA_LOSS);
        vg_tfrecord_iterator_close(it);
    }
    tu_rmrf(dir);
}

static void copy_prefix(const char *from, const char *to, long keep, long flip_at) {
    FILE *f = fopen(from, "rb");
    CHECK(f != NULL);
    if (!f) return;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (keep >= 0 && (size_t)keep < n) n = (size_t)keep;
    if (flip_at >= 0 && (size_t)flip_at < n) buf[flip_at] ^= 0x20;
    FILE *g = fopen(to, "wb");
    CHECK(g != NULL);
    if (!g) return;
    CHECK_EQ_INT(fwrite(buf, 1, n, g), n);
    fclose(g);
}

/* testReadTruncatedFile: a file cut inside its last record gives the records before it,
 * then DataLossError; a flipped data byte is a checksum mismatch naming the offset. */
static void test_truncated_and_corrupt(void) {
    char dir[256], path[320], bad[320];
    tu_mkdtemp(dir, sizeof dir, "tfrit");
    snprintf(path, sizeof path, "%s/ok.tfrecord", dir);
    write_file(path, VG_COMPRESSION_NONE);
    long size = (long)(3 * 16 + strlen(k_records[0]) + strlen(k_records[1]) + strlen(k_records[2]));
    snprintf(bad, sizeof bad, "%s/cut.tfrecord", dir);
    copy_prefix(path, bad, size - 1, -1);
    vg_status st;
    const void *rec;
    size_t n;
    vg_tfrecord_iterator *it = vg_tfrecord_iterator_open(bad, VG_COMPRESSION_NONE, &st);
    CHECK(it != NULL);
    if (it) {
        CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_OK);
        CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_OK);
        CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_DATA_LOSS);
        CHECK_STR_CONTAINS(st.msg, "truncated record at offset 40");
        CHECK(rec == NULL && n == 0);
        vg_tfrecord_iterator_close(it);
    }
    /* the first record's payload starts at byte 12 */
    snprintf(bad, sizeof bad, "%s/flip.tfrecord", dir);
    copy_prefix(path, bad, -1, 14);
    it = vg_tfrecord_iterator_open(bad, VG_COMPRESSION_NONE, &st);
    CHECK(it != NULL);
    if (it) {
        CHECK_EQ_INT(vg_tfrecord_iterator_next(it, &rec, &n, &st), VG_DATA_LOSS);
        CHECK_STR_CONTAINS(st.msg, "corrupted record at offset 0");
        vg_tfrecord_iterator_close(it);
    }
    snprintf(bad, sizeof bad, "%s/missing.tfrecord", dir);
    CHECK(vg_tfrecord_iterator_open(bad, VG_COMPRESSION_NONE, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_NOT_FOUND, "missing.tfrecord");
    CHECK(vg_tfrecord_iterator_open(path, (vg_compression)7, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    CHECK(vg_tfrecord_iterator_open(NULL, VG_COMPRESSION_NONE, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_tfrecord_iterator_next(NULL, &rec, &n, &st), VG_INVALID_ARGUMENT);
    vg_tfrecord_iterator_close(NULL);
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_tf_written_file);
    RUN_TEST(test_round_trips);
    RUN_TEST(test_truncated_and_corrupt);
    TEST_MAIN_END();
}
