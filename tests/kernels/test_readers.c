/* test_readers.c - string_input_producer and the reader ops (TFRecordReader with and
 * without compression, FixedLengthRecordReader, TextLineReader, WholeFileReader):
 * keys and values as TF produces them, read_up_to, counters, reset, errors, and a
 * TFRecord -> parse_single_example -> batch pipeline under a MonitoredSession that
 * ends cleanly at the end of its epochs. Mirrors cases of TF's
 * python/kernel_tests/reader_ops_test.py (TFRecordReaderTest.testOneEpoch,
 * testReadUpTo, testReadZlibFiles/testReadGzipFiles, FixedLengthRecordReaderTest with
 * hop bytes, TextLineReaderTest.testSkipHeaderLines, WholeFileReaderTest). */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "dataset_fixture.h"
#include "mts_fixture.h"
#include <ftw.h>
#include <unistd.h>

static char g_dir[64];
static void path_of(char *out, const char *name) { snprintf(out, 256, "%s/%s", g_dir, name); }

static vg_output files_const(vg_graph *g, char (*files)[256], int n) {
    return ds_string_rows(g, files[0], sizeof files[0], n, "files");
}

/* string_input_producer(files[0..n), num_epochs 1, no shuffle, capacity 32). */
static vg_output one_epoch_queue(vg_graph *g, char (*files)[256], int n) {
    return vg_string_input_producer(g, files_const(g, files, n), 1, false, 0, 32, NULL);
}

/* Writes text (a C string) into the file at path (checked to open). */
static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) fputs(text, f), fclose(f);
}

/* Writes n records "Record <f> of <i>" (TF's test content) into path. */
static void write_records(const char *path, int f, int n, vg_compression c) {
    ds_write_text_records_c(path, c, n, "Record %d of file %d", f);
}

/* A plain session with local variables initialized and queue runners started. */
typedef struct pipe {
    vg_session *s;
    vg_coord *coord;
} pipe_t;

static void pipe_start(pipe_t *p, vg_graph *g, vg_status *st) {
    vg_op *li = vg_local_variables_initializer(g);
    p->s = vg_session_new(g, NULL, st);
    CHECK_OK(vg_session_run_targets(p->s, &li, 1, st), st);
    p->coord = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(p->s, p->coord, st), st);
}
static void pipe_stop(pipe_t *p) {
    vg_status st;
    vg_coord_request_stop(p->coord, NULL);
    vg_session_close(p->s, &st);
    vg_coord_join(p->coord, 10, false, &st);
    vg_coord_free(p->coord);
    vg_session_free(p->s);
}

static void test_tfrecord_one_epoch(void) {
    for (int c = 0; c < 3; c++) {
        vg_status st;
        char files[2][256];
        for (int f = 0; f < 2; f++) {
            char nm[32];
            snprintf(nm, sizeof nm, "tf%d_%d.tfrecord", c, f);
            path_of(files[f], nm);
            write_records(files[f], f, 7, (vg_compression)c);
        }
        vg_graph *g = vg_graph_new();
        vg_output q = one_epoch_queue(g, files, 2);
        vg_output rd = vg_tfrecord_reader(g, c == 0 ? "" : c == 1 ? "ZLIB" : "GZIP", NULL);
        vg_op *read = vg_reader_read(g, rd, q, NULL);
        vg_output nrec = vg_reader_num_records_produced(g, rd, NULL);
        vg_output nwork = vg_reader_num_work_units_completed(g, rd, NULL);
        CHECK_OK(vg_graph_status(g, &st), &st);
        CHECK_STR_CONTAINS(vg_op_name(q.op), "input_producer");
        pipe_t p;
        pipe_start(&p, g, &st);
        for (int f = 0; f < 2; f++) {
            uint64_t off = 0;
            for (int i = 0; i < 7; i++) {
                vg_tensor *out[2] = {0};
                CHECK_OK(vg_session_run(p.s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(read, 0), vg_out(read, 1)}, out,
                                        2, NULL, 0, NULL, &st),
                         &st);
                if (!out[0]) return;
                char want[600];
                size_t l;
                const char *k = vg_tensor_string(out[0], 0, &l);
                snprintf(want, sizeof want, "%s:%llu", files[f], (unsigned long long)off);
                CHECK(l == strlen(want) && memcmp(k, want, l) == 0);
                const char *v = vg_tensor_string(out[1], 0, &l);
                char rec[64];
                snprintf(rec, sizeof rec, "Record %d of file %d", i, f);
                CHECK(l == strlen(rec) && memcmp(v, rec, l) == 0);
                off += 16 + strlen(rec);
                vg_tensor_free(out[0]);
                vg_tensor_free(out[1]);
            }
        }
        vg_tensor *o = NULL;
        CHECK_STATUS(vg_session_run1(p.s, vg_out(read, 0), &o, &st), &st, VG_OUT_OF_RANGE,
            "is closed and has insufficient elements");
        vg_tensor *cnt[2] = {0};
        CHECK_OK(vg_session_run(p.s, NULL, NULL, NULL, 0, (vg_output[]){nrec, nwork}, cnt, 2, NULL, 0, NULL, &st), &st);
        if (cnt[0]) CHECK(vg_tensor_scalar(cnt[0]) == 14 && vg_tensor_scalar(cnt[1]) == 2);
        vg_tensor_free(cnt[0]);
        vg_tensor_free(cnt[1]);
        pipe_stop(&p);
        vg_graph_free(g);
    }
}

static void test_read_up_to_and_reset(void) {
    vg_status st;
    char files[2][256];
    path_of(files[0], "upto0.tfrecord");
    path_of(files[1], "upto1.tfrecord");
    write_records(files[0], 0, 5, VG_COMPRESSION_NONE);
    write_records(files[1], 1, 5, VG_COMPRESSION_NONE);
    vg_graph *g = vg_graph_new();
    vg_output q = one_epoch_queue(g, files, 2);
    vg_output rd = vg_tfrecord_reader(g, NULL, NULL);
    vg_op *up = vg_reader_read_up_to(g, rd, q, vg_const_i64(g, 4, "n"), NULL);
    vg_op *reset = vg_reader_reset(g, rd, NULL);
    vg_output nrec = vg_reader_num_records_produced(g, rd, NULL);
    pipe_t p;
    pipe_start(&p, g, &st);
    /* 10 records in calls of up to 4: 4, 1, 4, 1 (TF's ReaderBase::ReadUpTo returns
     * when a file ends and the call has records) */
    int64_t sizes[4];
    for (int i = 0; i < 4; i++) {
        vg_tensor *out[2] = {0};
        CHECK_OK(vg_session_run(p.s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(up, 0), vg_out(up, 1)}, out, 2, NULL,
                                0, NULL, &st),
                 &st);
        sizes[i] = out[0] ? vg_tensor_dim(out[0], 0) : -1;
        if (i == 2 && out[1]) {
            size_t l;
            const char *v = vg_tensor_string(out[1], 0, &l);
            CHECK(l == 18 && memcmp(v, "Record 0 of file 1", 18) == 0);
        }
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
    }
    CHECK(sizes[0] == 4 && sizes[1] == 1 && sizes[2] == 4 && sizes[3] == 1);
    vg_tensor *o = NULL;
    CHECK_CODE(vg_session_run1(p.s, vg_out(up, 0), &o, &st), VG_OUT_OF_RANGE);
    CHECK_OK(vg_session_run1(p.s, nrec, &o, &st), &st);
    if (o) CHECK(vg_tensor_scalar(o) == 10);
    vg_tensor_free(o);
    CHECK_OK(vg_session_run_targets(p.s, &reset, 1, &st), &st);
    CHECK_OK(vg_session_run1(p.s, nrec, &o, &st), &st);
    if (o) CHECK(vg_tensor_scalar(o) == 0);
    vg_tensor_free(o);
    pipe_stop(&p);
    vg_graph_free(g);
}

/* Reads `n` values with read (key/value) from a fresh session. */
static int read_all(vg_graph *g, vg_op *read, char keys[][300], char vals[][300], int max, vg_code *end,
                    vg_status *st) {
    pipe_t p;
    pipe_start(&p, g, st);
    int n = 0;
    for (; n < max; n++) {
        vg_tensor *out[2] = {0};
        vg_code rc = vg_session_run(p.s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(read, 0), vg_out(read, 1)}, out, 2,
                                    NULL, 0, NULL, st);
        if (rc != VG_OK) {
            *end = rc;
            break;
        }
        size_t l;
        const char *k = vg_tensor_string(out[0], 0, &l);
        snprintf(keys[n], 300, "%.*s", (int)l, k);
        const char *v = vg_tensor_string(out[1], 0, &l);
        snprintf(vals[n], 300, "%.*s", (int)l, v);
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
    }
    pipe_stop(&p);
    return n;
}

static void test_fixed_length_hop_bytes(void) {
    vg_status st;
    char files[1][256];
    path_of(files[0], "fixed.bin");
    /* header "HHH", records of 4 bytes every 2 bytes, footer "FF":
     * body "abcdefghij" -> "abcd", "cdef", "efgh", "ghij" */
    write_text(files[0], "HHHabcdefghijFF");
    vg_graph *g = vg_graph_new();
    vg_output q = one_epoch_queue(g, files, 1);
    vg_output rd = vg_fixed_length_record_reader(g, 3, 4, 2, 2, NULL);
    vg_op *read = vg_reader_read(g, rd, q, NULL);
    char keys[8][300], vals[8][300];
    vg_code end = VG_OK;
    int n = read_all(g, read, keys, vals, 8, &end, &st);
    CHECK_EQ_INT(n, 4);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    const char *want[4] = {"abcd", "cdef", "efgh", "ghij"};
    for (int i = 0; i < 4 && i < n; i++) {
        char k[600];
        snprintf(k, sizeof k, "%s:%d", files[0], i);
        CHECK(strcmp(keys[i], k) == 0 && strcmp(vals[i], want[i]) == 0);
    }
    vg_graph_free(g);
    /* hop 0: records back to back; a trailing partial record is not produced */
    g = vg_graph_new();
    q = one_epoch_queue(g, files, 1);
    rd = vg_fixed_length_record_reader(g, 3, 4, 2, 0, NULL);
    read = vg_reader_read(g, rd, q, NULL);
    n = read_all(g, read, keys, vals, 8, &end, &st);
    CHECK(n == 2 && strcmp(vals[0], "abcd") == 0 && strcmp(vals[1], "efgh") == 0);
    vg_graph_free(g);
    /* bad attrs: graph error */
    g = vg_graph_new();
    vg_fixed_length_record_reader(g, 0, 0, 0, 0, NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static void test_text_line_skip_header(void) {
    vg_status st;
    char files[2][256];
    path_of(files[0], "a.csv");
    path_of(files[1], "b.csv");
    write_text(files[0], "header\n1,a\r\n2,b\n\n3,c"); /* CRLF, an empty line, no final newline */
    write_text(files[1], "only header\n");
    vg_graph *g = vg_graph_new();
    vg_output q = one_epoch_queue(g, files, 2);
    vg_output rd = vg_text_line_reader(g, 1, NULL);
    vg_op *read = vg_reader_read(g, rd, q, NULL);
    char keys[8][300], vals[8][300];
    vg_code end = VG_OK;
    int n = read_all(g, read, keys, vals, 8, &end, &st);
    CHECK_EQ_INT(n, 4);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    const char *want[4] = {"1,a", "2,b", "", "3,c"};
    for (int i = 0; i < 4 && i < n; i++) {
        char k[600];
        snprintf(k, sizeof k, "%s:%d", files[0], i + 2);
        CHECK(strcmp(keys[i], k) == 0);
        CHECK(strcmp(vals[i], want[i]) == 0);
    }
    vg_graph_free(g);
}

static void test_whole_file_and_errors(void) {
    vg_status st;
    char files[3][256];
    path_of(files[0], "w0.txt");
    path_of(files[1], "missing.txt");
    path_of(files[2], "w2.txt");
    write_text(files[0], "contents\nof w0");
    vg_graph *g = vg_graph_new();
    vg_output q = one_epoch_queue(g, files, 2);
    vg_output rd = vg_whole_file_reader(g, NULL);
    vg_op *read = vg_reader_read(g, rd, q, NULL);
    char keys[4][300], vals[4][300];
    vg_code end = VG_OK;
    int n = read_all(g, read, keys, vals, 4, &end, &st);
    CHECK_EQ_INT(n, 1);
    CHECK(n >= 1 && strcmp(keys[0], files[0]) == 0 && strcmp(vals[0], "contents\nof w0") == 0);
    CHECK_STATUS(end, &st, VG_NOT_FOUND, files[1]);
    vg_graph_free(g);
    /* corrupt TFRecord: DATA_LOSS naming the file and the record's offset */
    write_records(files[2], 0, 3, VG_COMPRESSION_NONE);
    FILE *f = fopen(files[2], "r+b");
    fseek(f, 34 + 12 + 3, SEEK_SET); /* record 1's data */
    fputc('#', f);
    fclose(f);
    g = vg_graph_new();
    q = one_epoch_queue(g, files + 2, 1);
    rd = vg_tfrecord_reader(g, NULL, NULL);
    read = vg_reader_read(g, rd, q, NULL);
    n = read_all(g, read, keys, vals, 4, &end, &st);
    CHECK_EQ_INT(n, 1);
    CHECK_STATUS(end, &st, VG_DATA_LOSS, "offset 34");
    CHECK_STR_CONTAINS(st.msg, files[2]);
    vg_graph_free(g);
    /* bad compression type: graph error */
    g = vg_graph_new();
    vg_tfrecord_reader(g, "LZ4", NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* One batch of 4 (label, image) rows: *u += the labels; each image's first byte is
 * its label % 100, its last 3. */
static void label_image_step(vg_tensor *const *out, void *u) {
    const int64_t *l = vg_tensor_data(out[0]);
    const uint8_t *px = vg_tensor_data(out[1]);
    for (int i = 0; i < 4; i++) {
        *(int64_t *)u += l[i];
        CHECK(px[4 * i] == (uint8_t)(l[i] % 100) && px[4 * i + 3] == 3);
    }
}

/* The bytes feature "image_raw" = {i, 1, 2, 3}. */
static void add_image_feature(vg_example *ex, int64_t label, int i, void *u) {
    (void)label, (void)u;
    uint8_t img[4] = {(uint8_t)i, 1, 2, 3};
    vg_status st;
    vg_example_add_bytes(ex, "image_raw", (const char *[]){(const char *)img}, (size_t[]){4}, 1, &st);
}

/* TFRecords of Examples -> string_input_producer(num_epochs 3, shuffle) ->
 * TFRecordReader -> parse_single_example -> batch, run under a SingularMonitoredSession:
 * the loop ends with OUT_OF_RANGE after exactly 3 epochs and the session ends cleanly. */
static void test_monitored_session_ends_at_data_end(void) {
    vg_status st;
    char files[2][256];
    int64_t want_sum = 0;
    for (int f = 0; f < 2; f++) {
        char nm[32];
        snprintf(nm, sizeof nm, "ex%d.tfrecord", f);
        path_of(files[f], nm);
        want_sum += ds_write_labelled_examples(files[f], VG_COMPRESSION_GZIP, 6, f * 100, add_image_feature, NULL);
    }
    vg_graph *g = vg_graph_new();
    vg_output q = vg_string_input_producer(g, files_const(g, files, 2), 3, true, 7, 32, NULL);
    vg_output rd = vg_tfrecord_reader(g, "GZIP", NULL);
    vg_op *read = vg_reader_read(g, rd, q, NULL);
    vg_feature_spec specs[2] = {{"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}},
                                {"image_raw", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}}};
    vg_output dense[2];
    vg_parse_single_example(g, vg_out(read, 1), specs, 2, dense, NULL, NULL);
    vg_output img = vg_decode_raw(g, dense[1], VG_UINT8, true, NULL);
    img = vg_reshape_c(g, img, (int64_t[]){4}, 1, NULL);
    vg_output batch[2];
    CHECK_OK(vg_batch(g, (vg_output[]){dense[0], img}, 2, 4, 1, 32, false, NULL, batch), &st);
    CHECK_OK(vg_graph_status(g, &st), &st);
    int64_t sum = 0;
    int steps = mts_singular_until_end(g, batch, 2, label_image_step, &sum);
    if (steps < 0) return;
    CHECK_EQ_INT(steps, 9); /* 3 epochs x 12 records / 4 */
    CHECK_EQ_INT(sum, 3 * want_sum);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "readers")[0]) return 1;
    RUN_TEST(test_tfrecord_one_epoch);
    RUN_TEST(test_read_up_to_and_reset);
    RUN_TEST(test_fixed_length_hop_bytes);
    RUN_TEST(test_text_line_skip_header);
    RUN_TEST(test_whole_file_and_errors);
    RUN_TEST(test_monitored_session_ends_at_data_end);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
