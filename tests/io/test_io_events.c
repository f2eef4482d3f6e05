/* test_io_events.c - Event/Summary/HistogramProto encoding and decoding against
 * TF-written event files, the event file writer, and histogram bucketing. */
#include "io/io.h"
#include "io_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <float.h>
#include <ftw.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

static char g_dir[64];

static bool tag_is(const vg__summary_value *v, const char *s) {
    return v->tag_len == strlen(s) && memcmp(v->tag, s, v->tag_len) == 0;
}

/* Reads a TF end-to-end file; re-encodes each Summary event and compares the bytes. */
static void check_end_to_end(const char *path, double first_wall, const char *prefix) {
    const char *tags[] = {"train_begin", "model_fn_begin", "setup_infeed_begin", "setup_infeed_end", "model_fn_end",
                          "init_system_begin", "init_system_end", "train_end", "eval_begin"};
    vg_status st;
    vg__tfrecord_reader *r = vg__tfrecord_reader_open(path, &st);
    CHECK(r != NULL);
    if (!r) return;
    const uint8_t *d;
    size_t n;
    int count = 0, reencoded = 0;
    char last_tag[64] = "";
    while (vg__tfrecord_reader_next(r, &d, &n, &st) == VG_OK) {
        vg__event_info ev;
        CHECK_OK(vg__event_decode(d, n, &ev, &st), &st);
        if (count == 0) {
            CHECK(ev.kind == VG__EVENT_FILE_VERSION && ev.wall_time == first_wall && ev.step == 0);
            CHECK(ev.payload_len == 13 && memcmp(ev.payload, "brain.Event:2", 13) == 0);
        } else {
            CHECK(ev.kind == VG__EVENT_SUMMARY && ev.step == 0);
            vg__summary_iter it;
            vg__summary_value v;
            vg__summary_iter_init(&it, ev.payload, ev.payload_len);
            CHECK_OK(vg__summary_next(&it, &v, &st), &st);
            CHECK(v.kind == VG__VALUE_SIMPLE && v.has_scalar && v.scalar == 0.0);
            char want[64];
            if (count <= 9) {
                snprintf(want, sizeof want, "%s%s", prefix, tags[count - 1]);
                CHECK(tag_is(&v, want));
            }
            snprintf(last_tag, sizeof last_tag, "%.*s", (int)v.tag_len, v.tag);
            CHECK_CODE(vg__summary_next(&it, &v, &st), VG_OUT_OF_RANGE);
            /* our encoder gives TF's bytes */
            vg__pb_buf sum, evb;
            vg__pb_init(&sum);
            vg__pb_init(&evb);
            vg__summary_add_scalar(&sum, last_tag, 0.0f);
            vg__event e = {.wall_time = ev.wall_time, .kind = VG__EVENT_SUMMARY, .data = sum.data, .len = sum.len};
            vg__event_encode(&evb, &e);
            reencoded += evb.len == n && memcmp(evb.data, d, n) == 0;
            vg__pb_free(&sum);
            vg__pb_free(&evb);
        }
        count++;
    }
    CHECK_EQ_INT(count, 25);
    CHECK_EQ_INT(reencoded, 24);
    char want[64];
    snprintf(want, sizeof want, "%spredict_end", prefix);
    CHECK(strcmp(last_tag, want) == 0);
    /* the first record re-encodes too */
    vg__pb_buf evb;
    vg__pb_init(&evb);
    vg__event e0 = {.wall_time = first_wall, .kind = VG__EVENT_FILE_VERSION, .data = "brain.Event:2", .len = 13};
    vg__event_encode(&evb, &e0);
    uint8_t *raw;
    size_t rn;
    vg__io_read_file(path, &raw, &rn, NULL);
    CHECK(evb.len == 24 && rn > 36 && memcmp(raw + 12, evb.data, 24) == 0);
    vg__free(raw);
    vg__pb_free(&evb);
    vg__tfrecord_reader_close(r);
}

static void test_io_events__tf_end_to_end(void) {
    check_end_to_end(VG_TESTDATA "/events/tb_end_to_end_a.tfevents", 1551753597.0, "");
    check_end_to_end(VG_TESTDATA "/events/tb_end_to_end_b.tfevents", 1553644433.0, "profile/");
}

/* Number of NodeDefs (field 1) in a GraphDef. */
static int count_nodes(const uint8_t *p, size_t n) {
    vg__pb_reader r;
    vg__pb_field f;
    int k = 0;
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) k += f.number == 1;
    return k;
}

static void test_io_events__tf_graph_events(void) {
    const char *files[] = {VG_TESTDATA "/events/yehoon_ex/events.out.tfevents.1525783349.santo",
                           VG_TESTDATA "/events/yehoon_multiple/events.out.tfevents.1525783241.santo",
                           VG_TESTDATA "/events/yehoon_power/events.out.tfevents.1525783170.santo"};
    int nodes[] = {10, 6, 10};
    double walls[] = {1525783349.0, 1525783241.0, 1525783170.0};
    for (int i = 0; i < 3; i++) {
        vg_status st;
        vg__event_reader *r = io_fx_opened(vg__event_reader_open(files[i], &st), files[i], &st);
        if (!r) continue;
        vg__event_info ev;
        CHECK_OK(vg__event_reader_next(r, &ev, &st), &st);
        CHECK(ev.kind == VG__EVENT_FILE_VERSION && ev.wall_time == walls[i]);
        CHECK_OK(vg__event_reader_next(r, &ev, &st), &st);
        CHECK(ev.kind == VG__EVENT_GRAPH_DEF);
        CHECK_EQ_INT(count_nodes(ev.payload, ev.payload_len), nodes[i]);
        CHECK_OK(vg__event_reader_next(r, &ev, &st), &st);
        CHECK(ev.kind == VG__EVENT_META_GRAPH_DEF && ev.payload_len > 100);
        CHECK_CODE(vg__event_reader_next(r, &ev, &st), VG_OUT_OF_RANGE);
        vg__event_reader_close(r);
    }
}

static void test_io_events__scalar_bytes(void) {
    vg__pb_buf sum, evb;
    vg__pb_init(&sum);
    vg__pb_init(&evb);
    vg__summary_add_scalar(&sum, "loss", 0.25f);
    vg__event e = {.wall_time = 1.5, .step = 7, .kind = VG__EVENT_SUMMARY, .data = sum.data, .len = sum.len};
    vg__event_encode(&evb, &e);
    const uint8_t want[] = {0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 0x07, 0x2a, 0x0d, 0x0a, 0x0b, 0x0a, 0x04,
                            'l',  'o', 's', 's', 0x15, 0, 0, 0x80, 0x3e};
    CHECK(evb.len == sizeof want && memcmp(evb.data, want, sizeof want) == 0);
    /* session log START with a path; step omitted when 0 */
    vg__pb_reset(&evb);
    vg__event s = {.wall_time = 2.0, .kind = VG__EVENT_SESSION_LOG, .status = VG__SESSION_LOG_CHECKPOINT, .path = "/c-1"};
    vg__event_encode(&evb, &s);
    const uint8_t want2[] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x3a, 0x08, 0x08, 0x03, 0x12, 0x04, '/', 'c', '-', '1'};
    CHECK(evb.len == sizeof want2 && memcmp(evb.data, want2, sizeof want2) == 0);
    vg__event_info ev;
    vg_status st;
    CHECK_OK(vg__event_decode(evb.data, evb.len, &ev, &st), &st);
    CHECK(ev.kind == VG__EVENT_SESSION_LOG && ev.session_status == VG__SESSION_LOG_CHECKPOINT && ev.wall_time == 2.0);
    /* tagged run metadata and a negative step */
    vg__pb_reset(&evb);
    vg__event t = {.step = -1, .kind = VG__EVENT_TAGGED_RUN_METADATA, .tag = "t", .data = "\x01", .len = 1};
    vg__event_encode(&evb, &t);
    const uint8_t want3[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                             0x42, 0x06, 0x0a, 0x01, 't', 0x12, 0x01, 0x01};
    CHECK(evb.len == sizeof want3 && memcmp(evb.data, want3, sizeof want3) == 0);
    CHECK_OK(vg__event_decode(evb.data, evb.len, &ev, &st), &st);
    CHECK(ev.step == -1 && ev.kind == VG__EVENT_TAGGED_RUN_METADATA);
    CHECK_CODE(vg__event_decode("\x0a\x05", 2, &ev, &st), VG_DATA_LOSS);
    vg__pb_free(&sum);
    vg__pb_free(&evb);
}

typedef struct hdec {
    double min, max, num, sum, sq;
    double lim[1600], cnt[1600];
    int nl, nc;
} hdec;

static void decode_histo(const uint8_t *p, size_t n, hdec *h) {
    memset(h, 0, sizeof *h);
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number <= 5 && f.wiretype == VG__PB_FIXED64) {
            double *slot[] = {NULL, &h->min, &h->max, &h->num, &h->sum, &h->sq};
            *slot[f.number] = vg__pb_as_double(&f);
        } else if ((f.number == 6 || f.number == 7) && f.wiretype == VG__PB_LEN) {
            for (size_t i = 0; i < f.len / 8; i++) {
                uint64_t u = vg__get_le64(f.data + 8 * i);
                double d;
                memcpy(&d, &u, 8);
                if (f.number == 6) h->lim[h->nl++] = d;
                else h->cnt[h->nc++] = d;
            }
        }
    }
}

static void test_io_events__histogram(void) {
    int nl;
    const double *lim = vg__histogram_default_limits(&nl);
    CHECK_EQ_INT(nl, 1551);
    CHECK(lim[0] == -DBL_MAX && lim[775] == 0.0 && lim[776] == 1.0e-12 && lim[1550] == DBL_MAX);
    CHECK(lim[774] == -1.0e-12 && lim[1549] < 1e20 && lim[1549] * 1.1 >= 1e20);
    int mono = 1;
    for (int i = 1; i < nl; i++) mono &= lim[i] > lim[i - 1];
    CHECK(mono);

    vg_status st;
    vg__pb_buf b;
    vg__pb_init(&b);
    static hdec h;
    /* one value: [collapsed empties][its bucket][collapsed empties up to DBL_MAX] */
    double one = 1.0;
    CHECK_OK(vg__histogram_encode_doubles(&b, &one, 1, "h", &st), &st);
    decode_histo(b.data, b.len, &h);
    CHECK(h.nl == 3 && h.nc == 3);
    CHECK(h.cnt[0] == 0 && h.cnt[1] == 1 && h.cnt[2] == 0 && h.lim[2] == DBL_MAX);
    CHECK(h.lim[0] <= 1.0 && h.lim[1] > 1.0 && fabs(h.lim[1] / h.lim[0] - 1.1) < 1e-9);
    CHECK(h.min == 1 && h.max == 1 && h.num == 1 && h.sum == 1 && h.sq == 1);

    /* 0.0 falls in the bucket whose limit is 1e-12 */
    double vals[] = {0.0, -3.0, 2.5, 2.5, 1e30};
    vg__pb_reset(&b);
    CHECK_OK(vg__histogram_encode_doubles(&b, vals, 5, "h", &st), &st);
    decode_histo(b.data, b.len, &h);
    double total = 0;
    for (int i = 0; i < h.nc; i++) total += h.cnt[i];
    CHECK(total == 5 && h.num == 5 && h.min == -3.0 && h.max == 1e30);
    volatile double big = 1e30;
    CHECK(h.sum == 0.0 + -3.0 + 2.5 + 2.5 + big && h.sq == 9.0 + 6.25 + 6.25 + big * big);
    /* no two adjacent empty entries, last limit DBL_MAX, limits increasing */
    int ok = h.lim[h.nl - 1] == DBL_MAX;
    for (int i = 1; i < h.nc; i++) ok &= !(h.cnt[i] == 0 && h.cnt[i - 1] == 0) && h.lim[i] > h.lim[i - 1];
    CHECK(ok);
    int zero_at = -1;
    for (int i = 0; i < h.nl; i++)
        if (h.lim[i] == 1.0e-12) zero_at = i;
    CHECK(zero_at > 0 && h.cnt[zero_at] == 1 && h.lim[zero_at - 1] == 0.0);
    CHECK(h.cnt[h.nc - 1] == 1 && h.lim[h.nc - 1] == DBL_MAX); /* 1e30 >= the last finite limit */

    /* empty: min DBL_MAX, max -DBL_MAX, one (DBL_MAX, 0) bucket; exact bytes */
    vg__pb_reset(&b);
    CHECK_OK(vg__histogram_encode_doubles(&b, NULL, 0, "h", &st), &st);
    uint8_t want[9 + 9 + 10 + 10];
    uint64_t u;
    double dm = DBL_MAX, ndm = -DBL_MAX;
    want[0] = 0x09;
    memcpy(&u, &dm, 8);
    vg__put_le64(want + 1, u);
    want[9] = 0x11;
    memcpy(&u, &ndm, 8);
    vg__put_le64(want + 10, u);
    want[18] = 0x32;
    want[19] = 0x08;
    memcpy(&u, &dm, 8);
    vg__put_le64(want + 20, u);
    want[28] = 0x3a;
    want[29] = 0x08;
    memset(want + 30, 0, 8);
    CHECK(b.len == sizeof want && memcmp(b.data, want, sizeof want) == 0);

    /* floats == doubles */
    float fv[] = {0.5f, -0.25f, 3.0f};
    double dv[] = {0.5, -0.25, 3.0};
    vg__pb_buf b2;
    vg__pb_init(&b2);
    vg__pb_reset(&b);
    CHECK_OK(vg__histogram_encode_floats(&b, fv, 3, "h", &st), &st);
    CHECK_OK(vg__histogram_encode_doubles(&b2, dv, 3, "h", &st), &st);
    CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);

    double bad[] = {1.0, NAN};
    EXPECT_CODE_MSG(vg__histogram_encode_doubles(&b2, bad, 2, "weights", &st), &st, VG_INVALID_ARGUMENT,
                    "Nan in summary histogram for: weights");
    bad[1] = INFINITY;
    CHECK_CODE(vg__histogram_encode_doubles(&b2, bad, 2, "w", &st), VG_INVALID_ARGUMENT);

    /* summary with a histo value decodes */
    vg__pb_buf sum;
    vg__pb_init(&sum);
    vg__summary_add_histo(&sum, "weights", &b);
    vg__summary_add_scalar(&sum, "", 2.0f);
    vg__summary_iter it;
    vg__summary_value v;
    vg__summary_iter_init(&it, sum.data, sum.len);
    CHECK_OK(vg__summary_next(&it, &v, &st), &st);
    CHECK(v.kind == VG__VALUE_HISTO && tag_is(&v, "weights") && !v.has_scalar);
    vg__histo_stats hs;
    CHECK_OK(vg__histo_decode_stats(v.histo, v.histo_len, &hs, &st), &st);
    CHECK(hs.num == 3 && hs.min == -0.25 && hs.max == 3.0 && hs.nbuckets == hs.nlimits && hs.nbuckets > 3);
    CHECK_OK(vg__summary_next(&it, &v, &st), &st);
    CHECK(v.kind == VG__VALUE_SIMPLE && v.tag_len == 0 && v.scalar == 2.0);
    CHECK_CODE(vg__summary_next(&it, &v, &st), VG_OUT_OF_RANGE);
    vg__pb_free(&sum);
    vg__pb_free(&b);
    vg__pb_free(&b2);
}

/* Appends Value {tag (1), tensor (8), metadata (9, when meta_len > 0)} to sum; leaves
 * tensor and val empty for the next value. */
static void add_tensor_value(vg__pb_buf *sum, vg__pb_buf *val, vg__pb_buf *tensor, const char *tag, const void *meta,
                             size_t meta_len) {
    vg__pb_put_string(val, 1, tag);
    vg__pb_put_message(val, 8, tensor);
    if (meta_len) vg__pb_put_bytes(val, 9, meta, meta_len);
    vg__pb_put_message(sum, 1, val);
    vg__pb_reset(tensor);
    vg__pb_reset(val);
}

/* TF2 scalars: Value {tag, tensor {dtype, tensor_shape {}, tensor_content | float_val}, metadata}. */
static void test_io_events__tf2_tensor_scalars(void) {
    vg_status st;
    float x = 0.75f;
    vg__pb_buf tensor, val, sum;
    vg__pb_init(&tensor);
    vg__pb_init(&val);
    vg__pb_init(&sum);
    vg__pb_put_uint64(&tensor, 1, VG__DT_FLOAT);
    vg__pb_put_bytes(&tensor, 2, "", 0);
    vg__pb_put_bytes(&tensor, 4, &x, 4);
    add_tensor_value(&sum, &val, &tensor, "acc", "\x0a\x09\x0a\x07scalars", 11);
    /* float_val packed, and a double_val unpacked */
    vg__pb_put_uint64(&tensor, 1, VG__DT_FLOAT);
    vg__pb_put_bytes(&tensor, 5, "\x00\x00\x20\x40", 4); /* 2.5f */
    add_tensor_value(&sum, &val, &tensor, "fv", NULL, 0);
    vg__pb_put_uint64(&tensor, 1, VG__DT_DOUBLE);
    vg__pb_put_double(&tensor, 6, -4.0);
    add_tensor_value(&sum, &val, &tensor, "dv", NULL, 0);
    /* a 2-element tensor is not a scalar */
    vg__pb_put_uint64(&tensor, 1, VG__DT_FLOAT);
    vg__pb_put_bytes(&tensor, 4, "\0\0\0\0\0\0\0\0", 8);
    add_tensor_value(&sum, &val, &tensor, "vec", NULL, 0);

    vg__summary_iter it;
    vg__summary_value v;
    vg__summary_iter_init(&it, sum.data, sum.len);
    CHECK_OK(vg__summary_next(&it, &v, &st), &st);
    CHECK(tag_is(&v, "acc") && v.kind == VG__VALUE_TENSOR && v.has_scalar && v.scalar == 0.75);
    CHECK_OK(vg__summary_next(&it, &v, &st), &st);
    CHECK(tag_is(&v, "fv") && v.has_scalar && v.scalar == 2.5);
    CHECK_OK(vg__summary_next(&it, &v, &st), &st);
    CHECK(tag_is(&v, "dv") && v.has_scalar && v.scalar == -4.0);
    CHECK_OK(vg__summary_next(&it, &v, &st), &st);
    CHECK(tag_is(&v, "vec") && v.kind == VG__VALUE_TENSOR && !v.has_scalar);
    CHECK_CODE(vg__summary_next(&it, &v, &st), VG_OUT_OF_RANGE);
    vg__pb_free(&tensor);
    vg__pb_free(&val);
    vg__pb_free(&sum);
}

static void test_io_events__writer(void) {
    vg_status st;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/logs/train", g_dir);
    double t0 = (double)(long long)vg__wall_secs();
    vg__event_writer *w = vg__event_writer_open(dir, ".sfx", &st);
    CHECK(w != NULL);
    if (!w) { fprintf(stderr, "%s\n", st.msg); return; }
    char host[256] = "";
    gethostname(host, sizeof host);
    const char *path = vg__event_writer_path(w);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s/events.out.tfevents.", dir);
    CHECK(strncmp(path, prefix, strlen(prefix)) == 0);
    const char *secs = path + strlen(prefix);
    CHECK(strlen(secs) >= 10 && secs[10] == '.');
    long long file_secs = atoll(secs);
    CHECK(file_secs >= (long long)t0 && file_secs <= (long long)t0 + 2);
    char tail[300];
    snprintf(tail, sizeof tail, ".%s.sfx", host);
    CHECK(strlen(path) > strlen(tail) && strcmp(path + strlen(path) - strlen(tail), tail) == 0);

    vg__pb_buf sum;
    vg__pb_init(&sum);
    vg__summary_add_scalar(&sum, "loss", 1.25f);
    vg__event e = {.wall_time = 100.5, .step = 42, .kind = VG__EVENT_SUMMARY, .data = sum.data, .len = sum.len};
    CHECK_OK(vg__event_writer_write_event(w, &e, &st), &st);
    vg__event s = {.wall_time = 101.0, .step = 42, .kind = VG__EVENT_SESSION_LOG, .status = VG__SESSION_LOG_START};
    CHECK_OK(vg__event_writer_write_event(w, &s, &st), &st);
    CHECK_OK(vg__event_writer_flush(w, &st), &st);

    /* a reader sees the flushed events while the writer is open */
    vg__event_reader *r = vg__event_reader_open(path, &st);
    CHECK(r != NULL);
    vg__event_info ev;
    int n = 0;
    while (r && vg__event_reader_next(r, &ev, &st) == VG_OK) {
        if (n == 0) {
            CHECK(ev.kind == VG__EVENT_FILE_VERSION && ev.wall_time == (double)file_secs);
            CHECK(ev.payload_len == 13 && memcmp(ev.payload, "brain.Event:2", 13) == 0);
        } else if (n == 1) {
            CHECK(ev.kind == VG__EVENT_SUMMARY && ev.step == 42 && ev.wall_time == 100.5);
            vg__summary_iter it;
            vg__summary_value v;
            vg__summary_iter_init(&it, ev.payload, ev.payload_len);
            CHECK_OK(vg__summary_next(&it, &v, &st), &st);
            CHECK(tag_is(&v, "loss") && v.scalar == 1.25);
        } else {
            CHECK(ev.kind == VG__EVENT_SESSION_LOG && ev.session_status == VG__SESSION_LOG_START);
        }
        n++;
    }
    CHECK_EQ_INT(n, 3);
    /* raw bytes written after the open are visible later */
    CHECK_OK(vg__event_writer_write(w, sum.data, 0, &st), &st); /* an empty Event */
    CHECK_OK(vg__event_writer_close(w, &st), &st);
    CHECK(r && vg__event_reader_next(r, &ev, &st) == VG_OK && ev.kind == VG__EVENT_NONE);
    CHECK(r && vg__event_reader_next(r, &ev, &st) == VG_OUT_OF_RANGE);
    vg__event_reader_close(r);
    vg__pb_free(&sum);

    CHECK(vg__event_writer_open("/proc/forbidden/dir", NULL, &st) == NULL);
    CHECK(st.code != VG_OK);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "events")[0]) return 1;
    RUN_TEST(test_io_events__tf_end_to_end);
    RUN_TEST(test_io_events__tf_graph_events);
    RUN_TEST(test_io_events__scalar_bytes);
    RUN_TEST(test_io_events__histogram);
    RUN_TEST(test_io_events__tf2_tensor_scalars);
    RUN_TEST(test_io_events__writer);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
