/* test_io_pb.c - protobuf wire format writer and reader. */
#include "io/io.h"
#include "test_util.h"
#include "status_fixture.h"

static bool bytes_eq(const vg__pb_buf *b, const uint8_t *want, size_t n) {
    return b->len == n && memcmp(b->data, want, n) == 0;
}

static void test_io_pb__varints(void) {
    vg__pb_buf b;
    vg__pb_init(&b);
    vg__pb_put_varint(&b, 0);
    vg__pb_put_varint(&b, 1);
    vg__pb_put_varint(&b, 300);
    vg__pb_put_varint(&b, UINT64_MAX);
    const uint8_t want[] = {0x00, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_eq(&b, want, sizeof want));
    CHECK_EQ_INT(vg__pb_varint_size(300), 2);
    CHECK_EQ_INT(vg__pb_varint_size(UINT64_MAX), 10);
    vg__pb_reset(&b);
    vg__pb_put_int32(&b, 1, -1); /* 10-byte varint */
    CHECK_EQ_INT(b.len, 11);
    vg__pb_reset(&b);
    vg__pb_put_int64(&b, 2, -2);
    const uint8_t want2[] = {0x10, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_eq(&b, want2, sizeof want2));
    CHECK_CODE(vg__pb_buf_status(&b, "x", NULL), VG_OK);
    vg__pb_free(&b);
}

/* The BundleEntryProto of tensor "b" in the TF 1.14 vector, built field by field. */
static void test_io_pb__fields(void) {
    vg__pb_buf b, shape;
    vg__pb_init(&b);
    vg__pb_init(&shape);
    vg__pb_put_uint64(&b, 1, 1);
    vg__pb_put_message(&b, 2, &shape);
    vg__pb_put_uint64(&b, 4, 8);
    vg__pb_put_uint64(&b, 5, 4);
    vg__pb_put_fixed32_field(&b, 6, 0x4f78fd10u);
    const uint8_t want[] = {0x08, 0x01, 0x12, 0x00, 0x20, 0x08, 0x28, 0x04, 0x35, 0x10, 0xfd, 0x78, 0x4f};
    CHECK(bytes_eq(&b, want, sizeof want));
    vg__pb_reset(&b);
    vg__pb_put_double(&b, 1, 1.5);
    vg__pb_put_float(&b, 2, 2.0f);
    vg__pb_put_string(&b, 3, "hi");
    vg__pb_put_bool(&b, 4, true);
    double pd[2] = {1.0, -1.0};
    vg__pb_put_packed_double(&b, 6, pd, 2);
    const uint8_t want2[] = {0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x15, 0, 0, 0, 0x40, 0x1a, 0x02, 'h', 'i',
                             0x20, 0x01, 0x32, 0x10, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0xbf};
    CHECK(bytes_eq(&b, want2, sizeof want2));

    /* read it back */
    vg__pb_reader r;
    vg__pb_field f;
    vg_status st;
    vg__pb_reader_init(&r, b.data, b.len);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_OK);
    CHECK(f.number == 1 && f.wiretype == VG__PB_FIXED64 && vg__pb_as_double(&f) == 1.5);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_OK);
    CHECK(f.number == 2 && f.wiretype == VG__PB_FIXED32 && vg__pb_as_float(&f) == 2.0f);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_OK);
    CHECK(f.number == 3 && f.len == 2 && memcmp(f.data, "hi", 2) == 0);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_OK);
    CHECK(f.number == 4 && f.u == 1);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_OK);
    CHECK(f.number == 6 && f.len == 16);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_OUT_OF_RANGE);
    vg__pb_free(&b);
    vg__pb_free(&shape);
}

static void test_io_pb__malformed(void) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_status st;
    const uint8_t trunc_varint[] = {0x08, 0x80};
    vg__pb_reader_init(&r, trunc_varint, sizeof trunc_varint);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_DATA_LOSS);
    const uint8_t past_end[] = {0x0a, 0x05, 'a', 'b'};
    vg__pb_reader_init(&r, past_end, sizeof past_end);
    EXPECT_CODE_MSG(vg__pb_next(&r, &f, &st), &st, VG_DATA_LOSS, "past the end");
    const uint8_t trunc_fixed[] = {0x0d, 1, 2};
    vg__pb_reader_init(&r, trunc_fixed, sizeof trunc_fixed);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_DATA_LOSS);
    const uint8_t bad_wt[] = {0x0e, 0};
    vg__pb_reader_init(&r, bad_wt, sizeof bad_wt);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_DATA_LOSS);
    const uint8_t field0[] = {0x00, 0x01};
    vg__pb_reader_init(&r, field0, sizeof field0);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_DATA_LOSS);
    const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    vg__pb_reader_init(&r, long_varint, sizeof long_varint);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_DATA_LOSS);
    /* a group (field 5) holding a varint is skipped; field 7 follows */
    const uint8_t group[] = {0x2b, 0x08, 0x01, 0x2c, 0x38, 0x07};
    vg__pb_reader_init(&r, group, sizeof group);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_OK);
    CHECK(f.number == 7 && f.u == 7);
    const uint8_t open_group[] = {0x2b, 0x08, 0x01};
    vg__pb_reader_init(&r, open_group, sizeof open_group);
    CHECK_CODE(vg__pb_next(&r, &f, &st), VG_DATA_LOSS);
}

static void *fail_alloc(void *payload, size_t size, size_t align) { return NULL; }
static void fail_free(void *payload, void *p) {}

static void test_io_pb__sticky_oom(void) {
    vg__pb_buf b;
    vg__pb_init(&b);
    vg_allocator a = {fail_alloc, fail_free, NULL};
    vg_allocator_set(&a);
    vg__pb_put_string(&b, 1, "hello");
    vg__pb_put_varint(&b, 5);
    vg_allocator_set(NULL);
    vg_status st;
    CHECK(b.oom);
    CHECK_EQ_INT(b.len, 0);
    CHECK_CODE(vg__pb_buf_status(&b, "thing", &st), VG_RESOURCE_EXHAUSTED);
    vg__pb_put_varint(&b, 5); /* still sticky */
    CHECK_EQ_INT(b.len, 0);
    vg__pb_free(&b);
    CHECK(!b.oom);
}

/* Protocol-buffer text escapes (vg__io_pbtxt_unescape): every named escape, octal,
 * hex with one and two digits, \X only when asked, and each error. */
static void test_io_pb__pbtxt_unescape(void) {
    static const struct {
        const char *in; /* what follows the backslash */
        bool upper_x;
        const char *bytes; /* appended (NULL: refused) */
        size_t nbytes, used;
        const char *err;
    } cases[] = {
        {"n", false, "\n", 1, 1, NULL},        {"r", false, "\r", 1, 1, NULL},
        {"t", false, "\t", 1, 1, NULL},        {"a", false, "\a", 1, 1, NULL},
        {"b", false, "\b", 1, 1, NULL},        {"f", false, "\f", 1, 1, NULL},
        {"v", false, "\v", 1, 1, NULL},        {"\\", false, "\\", 1, 1, NULL},
        {"'", false, "'", 1, 1, NULL},          {"\"", false, "\"", 1, 1, NULL},
        {"?", false, "?", 1, 1, NULL},          {"101x", false, "A", 1, 3, NULL},
        {"0", false, "\0", 1, 1, NULL},        {"77", false, "?", 1, 2, NULL},
        {"377", false, "\377", 1, 3, NULL},    {"400", false, NULL, 0, 0, "octal escape out of range"},
        {"x41", false, "A", 1, 3, NULL},        {"x4g", false, "\4", 1, 2, NULL},
        {"x414", false, "A", 1, 3, NULL},       {"xg", false, NULL, 0, 0, "bad \\x escape"},
        {"X41", false, NULL, 0, 0, "unknown escape"}, {"X41", true, "A", 1, 3, NULL},
        {"q", false, NULL, 0, 0, "unknown escape"},   {"", false, NULL, 0, 0, "unterminated escape"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vg__pb_buf b;
        vg__pb_init(&b);
        const char *p = cases[i].in, *end = p + strlen(p);
        const char *err = vg__io_pbtxt_unescape(&p, end, cases[i].upper_x, &b);
        if (cases[i].err) {
            if (!err || strcmp(err, cases[i].err) != 0) {
                fprintf(stderr, "case \\%s: error '%s', expected '%s'\n", cases[i].in, err ? err : "(none)", cases[i].err);
                vg_test_failures++;
            }
            CHECK_EQ_INT((int)b.len, 0);
            CHECK(p == cases[i].in);
        } else {
            if (err) {
                fprintf(stderr, "case \\%s: refused: %s\n", cases[i].in, err);
                vg_test_failures++;
            }
            CHECK_EQ_INT((int)b.len, (int)cases[i].nbytes);
            if (b.len == cases[i].nbytes && memcmp(b.data, cases[i].bytes, b.len) != 0) {
                fprintf(stderr, "case \\%s: wrong byte %d\n", cases[i].in, b.data[0]);
                vg_test_failures++;
            }
            CHECK_EQ_INT((int)(p - cases[i].in), (int)cases[i].used);
        }
        vg__pb_free(&b);
    }
}

int main(void) {
    RUN_TEST(test_io_pb__varints);
    RUN_TEST(test_io_pb__fields);
    RUN_TEST(test_io_pb__malformed);
    RUN_TEST(test_io_pb__sticky_oom);
    RUN_TEST(test_io_pb__pbtxt_unescape);
    TEST_MAIN_END();
}
