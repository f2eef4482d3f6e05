/* test_io_tfrecord.c - TFRecord framing: TF-written vectors, round trips, torn and
 * corrupted records, write errors. */
#include "io/io.h"
#include "io_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <ftw.h>
#include <unistd.h>

static char g_dir[64];

static void make_tmpdir(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "tfrecord")[0]) { perror("mkdtemp"); exit(1); }
}
static void remove_tmpdir(void) { tu_rmrf(g_dir); }
static void tmp_path(char *out, const char *name) { snprintf(out, 256, "%s/%s", g_dir, name); }

static void test_io_tfrecord__read_tf_vector(void) {
    vg_status st;
    vg__tfrecord_reader *r = vg__tfrecord_reader_open(VG_TESTDATA "/tfrecord/rust_expected.tfrecord", &st);
    CHECK(r != NULL);
    if (!r) return;
    const uint8_t *d;
    size_t n;
    CHECK_CODE(vg__tfrecord_reader_next(r, &d, &n, &st), VG_OK);
    CHECK(n == 19 && memcmp(d, "The Quick Brown Fox", 19) == 0);
    CHECK_CODE(vg__tfrecord_reader_next(r, &d, &n, &st), VG_OUT_OF_RANGE);
    CHECK_EQ_INT(vg__tfrecord_reader_offset(r), 35);
    vg__tfrecord_reader_close(r);
}

static void test_io_tfrecord__read_event_files(void) {
    const char *files[] = {VG_TESTDATA "/events/tb_end_to_end_a.tfevents", VG_TESTDATA "/events/tb_end_to_end_b.tfevents",
                           VG_TESTDATA "/events/yehoon_ex/events.out.tfevents.1525783349.santo"};
    int want[] = {25, 25, 3};
    for (int i = 0; i < 3; i++) {
        vg_status st;
        vg__tfrecord_reader *r = io_fx_opened(vg__tfrecord_reader_open(files[i], &st), files[i], &st);
        if (!r) continue;
        const uint8_t *d;
        size_t n;
        int count = 0;
        vg_code c;
        while ((c = vg__tfrecord_reader_next(r, &d, &n, &st)) == VG_OK) count++;
        CHECK_CODE(c, VG_OUT_OF_RANGE);
        CHECK_EQ_INT(count, want[i]);
        vg__tfrecord_reader_close(r);
    }
}

static vg_code write_records(const char *path, bool append, const char *const *recs, const size_t *lens, int n) {
    vg_status st;
    vg__tfrecord_writer *w = vg__tfrecord_writer_open(path, append, &st);
    if (!w) return st.code;
    for (int i = 0; i < n; i++)
        if (vg__tfrecord_writer_write(w, recs[i], lens[i], &st)) break;
    vg__tfrecord_writer_flush(w, true, &st);
    return vg__tfrecord_writer_close(w, &st);
}

static uint8_t *slurp(const char *path, size_t *n) {
    uint8_t *d;
    if (vg__io_read_file(path, &d, n, NULL)) return NULL;
    return d;
}

static void test_io_tfrecord__write_matches_tf(void) {
    char p[256];
    tmp_path(p, "fox.tfrecord");
    const char *recs[] = {"The Quick Brown Fox"};
    size_t lens[] = {19};
    CHECK_CODE(write_records(p, false, recs, lens, 1), VG_OK);
    size_t n1, n2;
    uint8_t *a = slurp(p, &n1), *b = slurp(VG_TESTDATA "/tfrecord/rust_expected.tfrecord", &n2);
    CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0);
    vg__free(a);
    vg__free(b);
}

static void test_io_tfrecord__round_trip(void) {
    char p[256];
    tmp_path(p, "rt.tfrecord");
    size_t big_n = 700 * 1024;
    char *big = malloc(big_n);
    for (size_t i = 0; i < big_n; i++) big[i] = (char)(i * 7);
    const char *recs[] = {"", "a", big, "last"};
    size_t lens[] = {0, 1, big_n, 4};
    CHECK_CODE(write_records(p, false, recs, lens, 4), VG_OK);
    CHECK_CODE(write_records(p, true, recs + 1, lens + 1, 1), VG_OK); /* append */
    vg_status st;
    vg__tfrecord_reader *r = vg__tfrecord_reader_open(p, &st);
    CHECK(r != NULL);
    if (!r) { free(big); return; }
    const uint8_t *d;
    size_t n;
    for (int i = 0; i < 5; i++) {
        int k = i < 4 ? i : 1;
        CHECK_CODE(vg__tfrecord_reader_next(r, &d, &n, &st), VG_OK);
        CHECK(n == lens[k] && (n == 0 || memcmp(d, recs[k], n) == 0));
    }
    CHECK_CODE(vg__tfrecord_reader_next(r, &d, &n, &st), VG_OUT_OF_RANGE);
    vg__tfrecord_reader_close(r);
    free(big);
}

static void write_file(const char *path, const uint8_t *d, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(d, 1, n, f);
    fclose(f);
}

static void append_file(const char *path, const uint8_t *d, size_t n) {
    FILE *f = fopen(path, "ab");
    fwrite(d, 1, n, f);
    fclose(f);
}

/* The records "first", "second", "third record" (16 bytes of framing each) written to
 * the temporary file `name`: returns the file's bytes (*n of them), NULL when it cannot
 * be read (a failed check). scratch (256 bytes) receives the path of the temporary file
 * scratch_name, for the test's altered copies. */
static uint8_t *three_records(const char *name, char *scratch, const char *scratch_name, size_t *n) {
    tmp_path(scratch, scratch_name);
    char full[256];
    tmp_path(full, name);
    const char *recs[] = {"first", "second", "third record"};
    size_t lens[] = {5, 6, 12};
    CHECK_CODE(write_records(full, false, recs, lens, 3), VG_OK);
    uint8_t *all = slurp(full, n);
    CHECK(all && *n == 3 * 16 + 23);
    return all;
}

/* Writes n bytes of d to path and returns a reader on it (checked to open). */
static vg__tfrecord_reader *write_and_open(const char *path, const uint8_t *d, size_t n) {
    vg_status st;
    write_file(path, d, n);
    return io_fx_opened(vg__tfrecord_reader_open(path, &st), path, &st);
}

/* The next record is "third record", and the last. */
static void expect_third_record_last(vg__tfrecord_reader *r) {
    vg_status st;
    const uint8_t *d;
    size_t len;
    CHECK_CODE(vg__tfrecord_reader_next(r, &d, &len, &st), VG_OK);
    CHECK(len == 12 && memcmp(d, "third record", 12) == 0);
    CHECK_CODE(vg__tfrecord_reader_next(r, &d, &len, &st), VG_OUT_OF_RANGE);
}

/* A torn last record reports "truncated", keeps its place and succeeds once the rest
 * of the record has been written. */
static void test_io_tfrecord__torn_last_record(void) {
    char p[256];
    size_t n;
    uint8_t *all = three_records("full.tfrecord", p, "torn.tfrecord", &n);
    if (!all) return;
    size_t third = 2 * 16 + 11;
    size_t cuts[] = {third + 5, third + 12 + 3, n - 1};
    for (int k = 0; k < 3; k++) {
        vg__tfrecord_reader *r = write_and_open(p, all, cuts[k]);
        vg_status st;
        const uint8_t *d;
        size_t len;
        CHECK_CODE(vg__tfrecord_reader_next(r, &d, &len, &st), VG_OK);
        CHECK_CODE(vg__tfrecord_reader_next(r, &d, &len, &st), VG_OK);
        EXPECT_CODE_MSG(vg__tfrecord_reader_next(r, &d, &len, &st), &st, VG_DATA_LOSS, "truncated");
        CHECK_EQ_INT(vg__tfrecord_reader_offset(r), third);
        CHECK_CODE(vg__tfrecord_reader_next(r, &d, &len, &st), VG_DATA_LOSS); /* still torn */
        append_file(p, all + cuts[k], n - cuts[k]);                          /* the file grows */
        expect_third_record_last(r);
        vg__tfrecord_reader_close(r);
    }
    vg__free(all);
}

static void test_io_tfrecord__corrupt_middle(void) {
    char p[256];
    size_t n;
    uint8_t *all = three_records("c_full.tfrecord", p, "c.tfrecord", &n);
    if (!all) return;
    for (int which = 0; which < 2; which++) {
        uint8_t *bad = malloc(n);
        memcpy(bad, all, n);
        bad[21 + (which == 0 ? 12 + 2 : 3)] ^= 0x40; /* record 2: a data byte, or a length byte */
        vg__tfrecord_reader *r = write_and_open(p, bad, n);
        vg_status st;
        const uint8_t *d;
        size_t len;
        CHECK_CODE(vg__tfrecord_reader_next(r, &d, &len, &st), VG_OK);
        EXPECT_CODE_MSG(vg__tfrecord_reader_next(r, &d, &len, &st), &st, VG_DATA_LOSS, "corrupted record at offset 21");
        CHECK_CODE(vg__tfrecord_reader_skip_corrupt(r, &st), VG_OK);
        expect_third_record_last(r);
        CHECK_CODE(vg__tfrecord_reader_skip_corrupt(r, &st), VG_FAILED_PRECONDITION);
        vg__tfrecord_reader_close(r);
        free(bad);
    }
    vg__free(all);
}

static void test_io_tfrecord__errors(void) {
    vg_status st;
    CHECK(vg__tfrecord_reader_open("/nonexistent/x.tfrecord", &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_NOT_FOUND, "/nonexistent/x.tfrecord");
    CHECK(vg__tfrecord_writer_open("/nonexistent/dir/x.tfrecord", false, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_NOT_FOUND);
    /* /dev/full: writes fail with ENOSPC when the buffer is flushed */
    vg__tfrecord_writer *w = vg__tfrecord_writer_open("/dev/full", true, &st);
    if (w) {
        CHECK_CODE(vg__tfrecord_writer_write(w, "abc", 3, &st), VG_OK);
        EXPECT_CODE_MSG(vg__tfrecord_writer_flush(w, false, &st), &st, VG_RESOURCE_EXHAUSTED, "/dev/full");
        CHECK_CODE(vg__tfrecord_writer_write(w, "abc", 3, &st), VG_RESOURCE_EXHAUSTED); /* sticky */
        CHECK_CODE(vg__tfrecord_writer_close(w, &st), VG_RESOURCE_EXHAUSTED);
    }
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_io_tfrecord__read_tf_vector);
    RUN_TEST(test_io_tfrecord__read_event_files);
    RUN_TEST(test_io_tfrecord__write_matches_tf);
    RUN_TEST(test_io_tfrecord__round_trip);
    RUN_TEST(test_io_tfrecord__torn_last_record);
    RUN_TEST(test_io_tfrecord__corrupt_middle);
    RUN_TEST(test_io_tfrecord__errors);
    remove_tmpdir();
    TEST_MAIN_END();
}
