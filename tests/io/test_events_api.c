/* test_events_api.c - the public event-file reader (vigil/events.h, TF's
 * summary_iterator) on TF-written files from tests/data/tf (values from its README),
 * on files vigil's FileWriter writes, and on damaged copies (a flipped payload byte,
 * a torn tail, a record that is not an Event); and the public IDX loader (vigil/idx.h)
 * on a hand-written file. Black-box: public API only. */
#include "io_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <stdint.h>

static char tmpdir[256];

static void make_tmpdir(void) {
    if (!tu_mkdtemp(tmpdir, sizeof tmpdir, "events_api")[0]) {
        perror("mkdtemp");
        exit(1);
    }
}

static void spit(const char *path, const uint8_t *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(buf, 1, n, f);
    fclose(f);
}

/* TensorBoard's end_to_end.tfevents (TF1): file_version + 24 scalar events, value 0.0,
 * no step; first tag train_begin. */
/* An event reader on the file path (checked to open; the reason on stderr when not). */
static vg_event_reader *open_events(const char *path) {
    vg_status st;
    return io_fx_opened(vg_event_reader_open(path, &st), path, &st);
}

static void test_tf_written_scalars(void) {
    const char *path = VG_TESTDATA "/events/tb_end_to_end_a.tfevents";
    vg_status st;
    vg_event_reader *r = open_events(path);
    if (!r) return;
    vg_event ev;
    int n = 0, nsummary = 0;
    char first_tag[64] = "";
    while (vg_event_reader_next(r, &ev, &st) == VG_OK) {
        if (n == 0) {
            CHECK(ev.kind == VG_EVENT_FILE_VERSION);
            CHECK(ev.payload_len == 13 && memcmp(ev.payload, "brain.Event:2", 13) == 0);
            CHECK_NEAR(ev.wall_time, 1551753597.0, 1e-12);
            CHECK_EQ_INT(ev.offset, 0);
        } else {
            CHECK(ev.kind == VG_EVENT_SUMMARY);
            CHECK_EQ_INT(ev.step, 0);
            vg_summary_iter it;
            vg_summary_value v;
            vg_summary_iter_init(&it, ev.payload, ev.payload_len);
            int nv = 0;
            while (vg_summary_iter_next(&it, &v, &st) == VG_OK) {
                nv++;
                CHECK(v.kind == VG_SUMMARY_VALUE_SIMPLE && v.has_scalar && v.scalar == 0.0);
                if (nsummary == 0) snprintf(first_tag, sizeof first_tag, "%.*s", (int)v.tag_len, v.tag);
            }
            CHECK_EQ_INT(nv, 1);
            nsummary++;
        }
        n++;
    }
    CHECK_EQ_INT(st.code, VG_OUT_OF_RANGE);
    CHECK_EQ_INT(n, 25);
    CHECK_EQ_INT(nsummary, 24);
    CHECK(strcmp(first_tag, "train_begin") == 0);
    CHECK_EQ_INT(vg_event_reader_offset(r), 1242); /* the file's size: all read */
    vg_event_reader_close(r);
}

/* TF 1.3 FileWriter(dir, graph): file_version, graph_def, meta_graph_def. */
static void test_tf_written_graph(void) {
    vg_status st;
    vg_event_reader *r = open_events(VG_TESTDATA "/events/yehoon_ex/events.out.tfevents.1525783349.santo");
    if (!r) return;
    vg_event ev;
    vg_event_kind kinds[3] = {VG_EVENT_NONE, VG_EVENT_NONE, VG_EVENT_NONE};
    int n = 0;
    while (vg_event_reader_next(r, &ev, &st) == VG_OK && n < 3) kinds[n++] = ev.kind;
    CHECK_EQ_INT(n, 3);
    CHECK(kinds[0] == VG_EVENT_FILE_VERSION && kinds[1] == VG_EVENT_GRAPH_DEF && kinds[2] == VG_EVENT_META_GRAPH_DEF);
    vg_event_reader_close(r);
}

/* What vigil's FileWriter writes comes back: steps, tags, values, session log. */
static vg_code write_run(const char *dir, char *path, size_t cap) {
    vg_status st;
    vg_file_writer *w = vg_file_writer_new(dir, NULL, &st);
    if (!w) return st.code;
    vg_code rc = VG_OK;
    for (int64_t s = 1; s <= 3 && rc == VG_OK; s++)
        rc = vg_file_writer_add_scalar(w, "loss", 1.5 * (double)s, s, &st);
    if (rc == VG_OK) rc = vg_file_writer_add_session_log(w, VG_SESSION_LOG_START, NULL, NULL, 7, &st);
    snprintf(path, cap, "%s", vg_file_writer_path(w));
    vg_code rc2 = vg_file_writer_close(w, &st);
    vg_file_writer_free(w);
    return rc ? rc : rc2;
}

static void test_own_file_and_damage(void) {
    char path[1024];
    vg_status st;
    CHECK_OK(write_run(tmpdir, path, sizeof path), &st);
    vg_event_reader *r = open_events(path);
    if (!r) return;
    vg_event ev;
    double got[4] = {0};
    int nscalar = 0, nstart = 0;
    while (vg_event_reader_next(r, &ev, &st) == VG_OK) {
        if (ev.kind == VG_EVENT_SUMMARY) {
            vg_summary_iter it;
            vg_summary_value v;
            vg_summary_iter_init(&it, ev.payload, ev.payload_len);
            while (vg_summary_iter_next(&it, &v, &st) == VG_OK) {
                CHECK(v.tag_len == 4 && memcmp(v.tag, "loss", 4) == 0);
                if (ev.step >= 1 && ev.step <= 3) got[ev.step] = v.scalar;
                nscalar++;
            }
        }
        if (ev.kind == VG_EVENT_SESSION_LOG) {
            CHECK_EQ_INT(ev.session_log_status, VG_SESSION_LOG_START);
            CHECK_EQ_INT(ev.step, 7);
            nstart++;
        }
    }
    vg_event_reader_close(r);
    CHECK_EQ_INT(nscalar, 3);
    CHECK_EQ_INT(nstart, 1);
    CHECK_NEAR(got[1], 1.5, 1e-7);
    CHECK_NEAR(got[3], 4.5, 1e-7);

    size_t n;
    uint8_t *buf = slurp(path, &n); /* session_test_util.h: the first 64 KiB */
    CHECK(buf && n > 100);
    if (!buf) return;
    /* Offsets of the records: the 2nd record starts after the first (12 + len + 4). */
    uint64_t len0 = 0;
    for (int i = 7; i >= 0; i--) len0 = (len0 << 8) | buf[i];
    size_t rec1 = (size_t)(12 + len0 + 4);
    char bad[1200];

    /* 1. a flipped payload byte in record 1: DATA_LOSS naming file and offset, CORRUPT,
     *    then skip_corrupt goes on to the remaining records. */
    snprintf(bad, sizeof bad, "%s/corrupt.tfevents", tmpdir);
    buf[rec1 + 12 + 1] ^= 0x40;
    spit(bad, buf, n);
    buf[rec1 + 12 + 1] ^= 0x40;
    r = open_events(bad);
    if (r) {
        CHECK_CODE(vg_event_reader_next(r, &ev, &st), VG_OK);
        CHECK_CODE(vg_event_reader_next(r, &ev, &st), VG_DATA_LOSS);
        CHECK(vg_event_reader_damage(r) == VG_EVENT_DAMAGE_CORRUPT);
        CHECK_STR_CONTAINS(st.msg, "corrupt.tfevents");
        char off[32];
        snprintf(off, sizeof off, "offset %zu", rec1);
        CHECK_STR_CONTAINS(st.msg, off);
        CHECK_CODE(vg_event_reader_skip_corrupt(r, &st), VG_OK);
        int rest = 0;
        while (vg_event_reader_next(r, &ev, &st) == VG_OK) rest++;
        CHECK_EQ_INT(rest, 3); /* the two other scalars and the session log */
        vg_event_reader_close(r);
    }

    /* 2. a torn tail: TORN, and the position stays at the torn record. */
    snprintf(bad, sizeof bad, "%s/torn.tfevents", tmpdir);
    spit(bad, buf, n - 3);
    r = open_events(bad);
    if (r) {
        vg_code c;
        int good = 0;
        while ((c = vg_event_reader_next(r, &ev, &st)) == VG_OK) good++;
        CHECK_CODE(c, VG_DATA_LOSS);
        CHECK(vg_event_reader_damage(r) == VG_EVENT_DAMAGE_TORN);
        CHECK_EQ_INT(good, 4); /* file_version and the 3 scalars; the session log is torn */
        uint64_t at = vg_event_reader_offset(r);
        CHECK_CODE(vg_event_reader_next(r, &ev, &st), VG_DATA_LOSS);
        CHECK_EQ_INT(vg_event_reader_offset(r), at);
        vg_event_reader_close(r);
    }
    /* 3. a valid TFRecord that is not an Event (rust_expected.tfrecord holds text). */
    r = open_events(VG_TESTDATA "/tfrecord/rust_expected.tfrecord");
    if (r) {
        CHECK_CODE(vg_event_reader_next(r, &ev, &st), VG_DATA_LOSS);
        CHECK(vg_event_reader_damage(r) == VG_EVENT_DAMAGE_MALFORMED);
        CHECK_STR_CONTAINS(st.msg, "rust_expected.tfrecord");
        CHECK_CODE(vg_event_reader_next(r, &ev, &st), VG_OUT_OF_RANGE);
        vg_event_reader_close(r);
    }
    free(buf);
}

static void test_bad_arguments(void) {
    vg_status st;
    CHECK(vg_event_reader_open(NULL, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    CHECK(vg_event_reader_open("/nonexistent/events.out.tfevents.1", &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_NOT_FOUND, "/nonexistent/events.out.tfevents.1");
    CHECK_CODE(vg_event_reader_next(NULL, NULL, &st), VG_INVALID_ARGUMENT);
    vg_summary_iter it;
    vg_summary_value v;
    vg_summary_iter_init(&it, NULL, 0);
    CHECK_CODE(vg_summary_iter_next(&it, &v, &st), VG_OUT_OF_RANGE);
    const uint8_t junk[] = {0x0a, 0x7f, 0x01}; /* value field claiming 127 bytes */
    vg_summary_iter_init(&it, junk, sizeof junk);
    CHECK_CODE(vg_summary_iter_next(&it, &v, &st), VG_DATA_LOSS);
    vg_event_reader_close(NULL);
}

/* IDX: hand-written 2x3 ubyte and 2-element int32 (big-endian) files. */
static void test_idx(void) {
    char p[1200];
    vg_status st;
    int64_t dims[4];
    int nd = -1, type = -1;
    void *data = NULL;
    size_t nb = 0;
    snprintf(p, sizeof p, "%s/u8.idx", tmpdir);
    const uint8_t u8[] = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 250};
    spit(p, u8, sizeof u8);
    CHECK_OK(vg_idx_read(p, VG_IDX_U8, dims, &nd, &data, &nb, &st), &st);
    CHECK_EQ_INT(nd, 2);
    CHECK_EQ_INT(dims[0], 2);
    CHECK_EQ_INT(dims[1], 3);
    CHECK_EQ_INT(nb, 6);
    if (data) CHECK(((uint8_t *)data)[5] == 250 && ((uint8_t *)data)[0] == 1);
    vg_free(data);
    CHECK_OK(vg_idx_header(p, &type, dims, &nd, &st), &st);
    CHECK_EQ_INT(type, VG_IDX_U8);
    CHECK_EQ_INT(dims[0], 2);
    /* wrong expected type */
    CHECK_CODE(vg_idx_read(p, VG_IDX_F32, dims, &nd, &data, &nb, &st), VG_DATA_LOSS);
    CHECK(data == NULL);
    CHECK_STR_CONTAINS(st.msg, "u8.idx");

    snprintf(p, sizeof p, "%s/i32.idx", tmpdir);
    const uint8_t i32[] = {0, 0, 0x0C, 1, 0, 0, 0, 2, 0x00, 0x00, 0x01, 0x02, 0xFF, 0xFF, 0xFF, 0xFE};
    spit(p, i32, sizeof i32);
    CHECK_OK(vg_idx_read(p, VG_IDX_ANY, dims, &nd, &data, &nb, &st), &st);
    CHECK_EQ_INT(nb, 8);
    if (data) {
        int32_t v[2];
        memcpy(v, data, sizeof v);
        CHECK_EQ_INT(v[0], 258);
        CHECK_EQ_INT(v[1], -2);
    }
    vg_free(data);

    /* short data and bad magic */
    snprintf(p, sizeof p, "%s/short.idx", tmpdir);
    spit(p, u8, sizeof u8 - 2);
    CHECK_CODE(vg_idx_read(p, VG_IDX_U8, dims, &nd, &data, &nb, &st), VG_DATA_LOSS);
    snprintf(p, sizeof p, "%s/magic.idx", tmpdir);
    const uint8_t bad[] = {1, 2, 0x08, 1, 0, 0, 0, 1, 7};
    spit(p, bad, sizeof bad);
    CHECK_CODE(vg_idx_read(p, VG_IDX_U8, dims, &nd, &data, &nb, &st), VG_DATA_LOSS);
    CHECK_CODE(vg_idx_read(NULL, VG_IDX_U8, dims, &nd, &data, &nb, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_idx_read("/nonexistent.idx", VG_IDX_U8, dims, &nd, &data, &nb, &st), VG_NOT_FOUND);
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_tf_written_scalars);
    RUN_TEST(test_tf_written_graph);
    RUN_TEST(test_own_file_and_damage);
    RUN_TEST(test_bad_arguments);
    RUN_TEST(test_idx);
    tu_rmrf(tmpdir);
    TEST_MAIN_END();
}
