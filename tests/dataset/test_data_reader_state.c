/* test_data_reader_state.c - ReaderSerializeStateV2 / ReaderRestoreStateV2 as TF 1.15
 * implements them. IdentityReader and WholeFileReader save a ReaderBaseState proto
 * (TF's reader_ops_test.py IdentityReaderTest.testSerializeRestore translated, plus
 * the same sequence on a WholeFileReader, and the exact bytes checked against a
 * hand-encoded proto); TFRecord, fixed-length and text-line readers fail with
 * UNIMPLEMENTED (ReaderBase's default) and a failed restore resets the reader; bad
 * states give TF's errors. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "session_test_util.h"
#include "dataset_fixture.h"
#include "fed_bytes_fixture.h"
#include <unistd.h>

/* A FIFO queue of scalar strings (capacity 99) on g: the work queue the readers read from. */
static vg_output string_queue(vg_graph *g) {
    vg_dtype dt = VG_STRING;
    vg_shape sc = vg_shape_make(NULL, 0);
    return vg_fifo_queue(g, &dt, &sc, 1, 99, NULL);
}

/* The graph of the testSerializeRestore sequences around the reader rd: its counters,
 * a string queue that enq1 fills with the 3 strings first (a Const called first_name),
 * enq2 with the 2 strings second, close closes, read reads from; ser serializes the
 * reader's state and restore restores it from the scalar string placeholder fed. */
typedef struct rs_graph {
    vg_output produced, nwork, ser, fed;
    vg_op *enq1, *enq2, *close, *read, *restore;
} rs_graph;
static rs_graph rs_build(vg_graph *g, vg_output rd, const char *const first[3], const char *first_name,
                         const char *const second[2], const char *second_name) {
    rs_graph r;
    r.produced = vg_reader_num_records_produced(g, rd, NULL);
    r.nwork = vg_reader_num_work_units_completed(g, rd, NULL);
    vg_output q = string_queue(g), a = strings(g, first, 3, first_name), b = strings(g, second, 2, second_name);
    r.enq1 = vg_queue_enqueue_many(g, q, &a, 1, NULL);
    r.enq2 = vg_queue_enqueue_many(g, q, &b, 1, NULL);
    r.close = vg_queue_close(g, q, false, NULL);
    r.read = vg_reader_read(g, rd, q, NULL);
    r.ser = vg_reader_serialize_state(g, rd, NULL);
    r.fed = vg_placeholder(g, VG_STRING, NULL, 0, "state");
    r.restore = vg_reader_restore_state(g, rd, r.fed, NULL);
    return r;
}

static int64_t run_i64(vg_session *s, vg_output o) {
    vg_status st;
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, o, &t, &st), &st);
    int64_t v = t ? (int64_t)vg_tensor_scalar(t) : -1;
    vg_tensor_free(t);
    return v;
}

/* Runs key and value; both must equal want (or the key want_key when given). */
static void expect_read(vg_session *s, vg_op *read, const char *want_key, const char *want_value) {
    vg_status st;
    vg_tensor *out[2] = {0};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(read, 0), vg_out(read, 1)}, out, 2, NULL, 0,
                            NULL, &st),
             &st);
    if (!out[0]) return;
    size_t l;
    const char *k = vg_tensor_string(out[0], 0, &l);
    CHECK(l == strlen(want_key) && memcmp(k, want_key, l) == 0);
    const char *v = vg_tensor_string(out[1], 0, &l);
    CHECK(l == strlen(want_value) && memcmp(v, want_value, l) == 0);
    vg_tensor_free(out[0]);
    vg_tensor_free(out[1]);
}

static void expect_closed(vg_session *s, vg_op *read) {
    vg_status st;
    vg_tensor *out[2] = {0};
    CHECK_CODE(vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(read, 0), vg_out(read, 1)}, out, 2, NULL, 0,
                              NULL, &st),
               VG_OUT_OF_RANGE);
    CHECK_STR_CONTAINS(st.msg, "is closed and has insufficient elements (requested 1, current size 0)");
}

/* Restoring `bytes` must fail with INVALID_ARGUMENT containing msg. */
static void expect_restore_fails(vg_session *s, vg_op *restore, vg_output fed, const void *bytes, size_t n,
                                 const char *msg) {
    vg_status st;
    CHECK_STATUS(run_fed_bytes(s, restore, fed, bytes, n, &st), &st, VG_INVALID_ARGUMENT, msg);
}

/* reader_ops_test.py IdentityReaderTest.testSerializeRestore. */
static void test_identity_serialize_restore(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output rd = vg_identity_reader(g, "test_reader");
    rs_graph r = rs_build(g, rd, (const char *const[]){"X", "Y", "Z"}, "xyz", (const char *const[]){"Y", "Z"}, "yz");
    vg_output produced = r.produced, ser = r.ser, fed = r.fed, nwork = r.nwork;
    vg_op *enq1 = r.enq1, *enq2 = r.enq2, *close = r.close, *read = r.read, *restore = r.restore;
    vg_output any = vg_placeholder(g, VG_STRING, NULL, -1, "any_state"); /* rank unknown until run time */
    vg_op *restore_any = vg_reader_restore_state(g, rd, any, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_reader_supports_serialize(rd));
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &enq1, 1, &st), &st);
    expect_read(s, read, "X", "X");
    CHECK_EQ_INT(run_i64(s, produced), 1);
    vg_tensor *state = NULL;
    CHECK_OK(vg_session_run1(s, ser, &state, &st), &st);
    if (!state) return;
    /* ReaderBaseState{work_started 1, work_finished 1, num_records_produced 1,
     * current_work "X"}: tags 0x08, 0x10, 0x18 (varints), 0x22 (length-delimited) */
    static const uint8_t want[] = {0x08, 1, 0x10, 1, 0x18, 1, 0x22, 1, 'X'};
    size_t sl;
    const char *sb = vg_tensor_string(state, 0, &sl);
    CHECK(sl == sizeof want && memcmp(sb, want, sl) == 0);

    expect_read(s, read, "Y", "Y");
    expect_read(s, read, "Z", "Z");
    CHECK_EQ_INT(run_i64(s, produced), 3);
    CHECK_OK(vg_session_run_targets(s, &enq2, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &close, 1, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, &fed, &state, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
    CHECK_EQ_INT(run_i64(s, produced), 1);
    expect_read(s, read, "Y", "Y");
    expect_read(s, read, "Z", "Z");
    expect_closed(s, read);
    CHECK_EQ_INT(run_i64(s, produced), 3);

    /* restore_state([]) / ([state, state]): ValueError in TF (state must be a scalar) */
    vg_graph *g2 = vg_graph_new();
    vg_output rd2 = vg_identity_reader(g2, "r");
    vg_reader_restore_state(g2, rd2, strings(g2, (const char *const[]){"a", "b"}, 2, NULL), NULL);
    CHECK_STATUS(vg_graph_status(g2, &st), &st, VG_INVALID_ARGUMENT, "rank 0");
    vg_graph_free(g2);
    /* fed with a vector: the kernel's check */
    {
        int64_t two = 2;
        vg_tensor *v = vg_tensor_new(VG_STRING, &two, 1, &st);
        CHECK_STATUS(vg_session_run(s, NULL, &any, &v, 1, NULL, NULL, 0, &restore_any, 1, NULL, &st), &st, VG_INVALID_ARGUMENT,
            "Reader state must be scalar, but had shape: [2]");
        vg_tensor_free(v);
    }

    /* corrupted states: "Could not parse state for IdentityReader 'test_reader'" */
    uint8_t buf[64];
    const char *parse = "Could not parse state for IdentityReader 'test_reader'";
    expect_restore_fails(s, restore, fed, sb + 1, sl - 1, parse);            /* state[1:] */
    expect_restore_fails(s, restore, fed, sb, sl - 1, parse);                /* state[:-1] */
    memcpy(buf, sb, sl);
    memcpy(buf + sl, "ExtraJunk", 9);
    expect_restore_fails(s, restore, fed, buf, sl + 9, parse);               /* state + "ExtraJunk" */
    memcpy(buf, "PREFIX", 6);
    memcpy(buf + 6, sb, sl);
    expect_restore_fails(s, restore, fed, buf, sl + 6, parse);               /* "PREFIX" + state */
    memcpy(buf, "BOGUS", 5);
    memcpy(buf + 5, sb + 5, sl - 5);
    expect_restore_fails(s, restore, fed, buf, sl, parse);                   /* "BOGUS" + state[5:] */
    /* the message escapes the bytes as absl::CEscape: state[1:] starts "\001\020" */
    expect_restore_fails(s, restore, fed, sb + 1, sl - 1, ": \\001\\020\\001\\030\\001\\\"\\001X");
    /* RestoreBaseState's checks */
    static const uint8_t inconsistent[] = {0x08, 5, 0x10, 3};
    expect_restore_fails(s, restore, fed, inconsistent, sizeof inconsistent,
                         "Inconsistent work started vs. finished when restoring in IdentityReader 'test_reader'");
    static const uint8_t negative[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    expect_restore_fails(s, restore, fed, negative, sizeof negative,
                         "Unexpected negative value when restoring in IdentityReader 'test_reader'");
    /* a failed restore resets the reader (ReaderBase::RestoreState) */
    CHECK_EQ_INT(run_i64(s, produced), 0);
    /* unknown fields are skipped (protobuf), an empty state is all zeros */
    static const uint8_t unknown[] = {0x08, 2, 0x10, 2, 0x18, 7, 0x28, 9, 0x22, 2, 'Q', 'R'};
    CHECK_OK(run_fed_bytes(s, restore, fed, unknown, sizeof unknown, &st), &st);
    CHECK_EQ_INT(run_i64(s, produced), 7);
    CHECK_EQ_INT(run_i64(s, nwork), 2);
    vg_tensor *back = NULL;
    CHECK_OK(vg_session_run1(s, ser, &back, &st), &st);
    static const uint8_t back_want[] = {0x08, 2, 0x10, 2, 0x18, 7, 0x22, 2, 'Q', 'R'};
    if (back) {
        const char *bb = vg_tensor_string(back, 0, &sl);
        CHECK(sl == sizeof back_want && memcmp(bb, back_want, sl) == 0);
    }
    vg_tensor_free(back);
    CHECK_OK(run_fed_bytes(s, restore, fed, "", 0, &st), &st);
    CHECK_EQ_INT(run_i64(s, produced), 0);
    CHECK_EQ_INT(run_i64(s, nwork), 0);
    kt_teardown(g, s, (vg_tensor *[]){state}, 1, NULL, 0);
}

/* reader_ops_test.py IdentityReaderTest.testReset. */
static void test_identity_reset(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output rd = vg_identity_reader(g, "test_reader");
    vg_output work = vg_reader_num_work_units_completed(g, rd, NULL);
    vg_output produced = vg_reader_num_records_produced(g, rd, NULL);
    vg_output q = string_queue(g);
    vg_output qlen = vg_queue_size(g, q, NULL);
    vg_output xyz = strings(g, (const char *const[]){"X", "Y", "Z"}, 3, "xyz");
    vg_output kl = strings(g, (const char *const[]){"K", "L"}, 2, "kl");
    vg_op *enq1 = vg_queue_enqueue_many(g, q, &xyz, 1, NULL), *enq2 = vg_queue_enqueue_many(g, q, &kl, 1, NULL);
    vg_op *read = vg_reader_read(g, rd, q, NULL);
    vg_op *reset = vg_reader_reset(g, rd, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &enq1, 1, &st), &st);
    expect_read(s, read, "X", "X");
    CHECK(run_i64(s, qlen) > 0);
    CHECK_EQ_INT(run_i64(s, produced), 1);
    expect_read(s, read, "Y", "Y");
    CHECK(run_i64(s, work) > 0);
    CHECK_EQ_INT(run_i64(s, produced), 2);
    CHECK_OK(vg_session_run_targets(s, &reset, 1, &st), &st);
    CHECK_EQ_INT(run_i64(s, work), 0);
    CHECK_EQ_INT(run_i64(s, produced), 0);
    CHECK_EQ_INT(run_i64(s, qlen), 1);
    expect_read(s, read, "Z", "Z");
    CHECK_OK(vg_session_run_targets(s, &enq2, 1, &st), &st);
    expect_read(s, read, "K", "K");
    vg_session_free(s);
    vg_graph_free(g);
}

/* ReaderBase::ReadUpTo: a call stops at the end of a work unit once it has records,
 * so an IdentityReader gives one record per call. */
static void test_identity_read_up_to(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output rd = vg_identity_reader(g, NULL);
    vg_output q = string_queue(g);
    vg_output abc = strings(g, (const char *const[]){"A", "B", "C"}, 3, "abc");
    vg_op *enq = vg_queue_enqueue_many(g, q, &abc, 1, NULL), *close = vg_queue_close(g, q, false, NULL);
    vg_op *up = vg_reader_read_up_to(g, rd, q, vg_const_i64(g, 5, "n"), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &enq, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &close, 1, &st), &st);
    const char *want = "ABC";
    for (int i = 0; i < 3; i++) {
        vg_tensor *k = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(up, 0), &k, &st), &st);
        size_t l = 0;
        const char *v = k && vg_tensor_num_elements(k) == 1 ? vg_tensor_string(k, 0, &l) : "";
        CHECK(l == 1 && v[0] == want[i]);
        vg_tensor_free(k);
    }
    ds_check_end_free(s, g, up, NULL, NULL);
}

/* The testSerializeRestore sequence on a WholeFileReader (TF 1.15 implements its
 * state the same way): the state after file 0 restores the counters and the file. */
static void test_whole_file_serialize_restore(void) {
    char dir[64];
    if (!tu_mkdtemp(dir, sizeof dir, "rstate")[0]) return;
    char files[3][128];
    const char *content[3] = {"One\na\nb\n", "Two\nC\nD", "Three x, y, z"};
    for (int i = 0; i < 3; i++) {
        snprintf(files[i], sizeof files[i], "%s/whole_file.%d.txt", dir, i);
        FILE *f = fopen(files[i], "wb");
        fputs(content[i], f);
        fclose(f);
    }
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output rd = vg_whole_file_reader(g, "test_reader");
    rs_graph r = rs_build(g, rd, (const char *const[]){files[0], files[1], files[2]}, "all",
                          (const char *const[]){files[1], files[2]}, "rest");
    vg_output produced = r.produced, ser = r.ser, fed = r.fed, nwork = r.nwork;
    vg_op *enq1 = r.enq1, *enq2 = r.enq2, *close = r.close, *read = r.read, *restore = r.restore;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_reader_supports_serialize(rd));
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *state = NULL;
    CHECK_OK(vg_session_run1(s, ser, &state, &st), &st); /* a fresh reader: all zero, empty proto */
    size_t sl = 99;
    if (state) vg_tensor_string(state, 0, &sl);
    CHECK_EQ_INT(sl, 0);
    vg_tensor_free(state);
    CHECK_OK(vg_session_run_targets(s, &enq1, 1, &st), &st);
    expect_read(s, read, files[0], content[0]);
    CHECK_OK(vg_session_run1(s, ser, &state, &st), &st);
    if (!state) return;
    const char *sb = vg_tensor_string(state, 0, &sl);
    CHECK(sl == 8 + strlen(files[0]) && sb[6] == 0x22 && (size_t)sb[7] == strlen(files[0]) &&
          memcmp(sb + 8, files[0], strlen(files[0])) == 0);
    expect_read(s, read, files[1], content[1]);
    expect_read(s, read, files[2], content[2]);
    CHECK_EQ_INT(run_i64(s, produced), 3);
    CHECK_EQ_INT(run_i64(s, nwork), 3);
    CHECK_OK(vg_session_run_targets(s, &enq2, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &close, 1, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, &fed, &state, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
    CHECK_EQ_INT(run_i64(s, produced), 1);
    CHECK_EQ_INT(run_i64(s, nwork), 1);
    expect_read(s, read, files[1], content[1]);
    expect_read(s, read, files[2], content[2]);
    expect_closed(s, read);
    CHECK_EQ_INT(run_i64(s, produced), 3);
    CHECK_STATUS(run_fed_bytes(s, restore, fed, "\x01", 1, &st), &st, VG_INVALID_ARGUMENT,
        "Could not parse state for WholeFileReader 'test_reader': \\001");
    CHECK_EQ_INT(run_i64(s, produced), 0);
    vg_tensor_free(state);
    vg_session_free(s);
    vg_graph_free(g);
    for (int i = 0; i < 3; i++) remove(files[i]);
    rmdir(dir);
}

/* TFRecord, fixed-length and text-line readers: UNIMPLEMENTED, as ReaderBase's
 * default; restoring fails the same way and resets the reader. */
static void test_reader_state_unimplemented(void) {
    char dir[64];
    if (!tu_mkdtemp(dir, sizeof dir, "rstate")[0]) return;
    char path[128];
    snprintf(path, sizeof path, "%s/lines.txt", dir);
    FILE *f = fopen(path, "wb");
    fputs("a\nb\nc\n", f);
    fclose(f);
    vg_graph *g = vg_graph_new();
    vg_output readers[3] = {vg_tfrecord_reader(g, "", NULL), vg_fixed_length_record_reader(g, 0, 4, 0, 0, NULL),
                            vg_text_line_reader(g, 0, NULL)};
    vg_output ser[3];
    vg_op *res[3];
    for (int i = 0; i < 3; i++) {
        CHECK(!vg_reader_supports_serialize(readers[i]));
        ser[i] = vg_reader_serialize_state(g, readers[i], NULL);
        res[i] = vg_reader_restore_state(g, readers[i], vg_const_string(g, "state", NULL), NULL);
    }
    vg_output q = string_queue(g);
    vg_output one = strings(g, (const char *const[]){path}, 1, "one");
    vg_op *enq = vg_queue_enqueue_many(g, q, &one, 1, NULL);
    vg_op *read = vg_reader_read(g, readers[2], q, NULL);
    vg_output produced = vg_reader_num_records_produced(g, readers[2], NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(ser[0].op && vg_output_dtype(ser[0]) == VG_STRING);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &enq, 1, &st), &st);
    char key[200];
    snprintf(key, sizeof key, "%s:1", path);
    expect_read(s, read, key, "a");
    CHECK_EQ_INT(run_i64(s, produced), 1);
    for (int i = 0; s && i < 3; i++) {
        vg_tensor *t = NULL;
        CHECK_CODE(vg_session_run1(s, ser[i], &t, &st), VG_UNIMPLEMENTED);
        CHECK(strncmp(st.msg, "Reader SerializeState\n", 22) == 0); /* TF's message + the node */
        CHECK_CODE(vg_session_run_targets(s, &res[i], 1, &st), VG_UNIMPLEMENTED);
        CHECK(strncmp(st.msg, "Reader RestoreState\n", 20) == 0);
    }
    /* the failed restore reset the text reader: counters zero, no current file */
    CHECK_EQ_INT(run_i64(s, produced), 0);
    CHECK_OK(vg_session_run_targets(s, &enq, 1, &st), &st);
    expect_read(s, read, key, "a");
    vg_session_free(s);
    vg_reader_restore_state(g, readers[0], vg_const_i32(g, 1, NULL), NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "state must be a string");
    vg_graph_free(g);
    remove(path);
    rmdir(dir);
}

int main(void) {
    RUN_TEST(test_identity_serialize_restore);
    RUN_TEST(test_identity_reset);
    RUN_TEST(test_identity_read_up_to);
    RUN_TEST(test_whole_file_serialize_restore);
    RUN_TEST(test_reader_state_unimplemented);
    TEST_MAIN_END();
}
