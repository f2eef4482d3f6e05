/* test_data_match_filenames.c - tf.train.match_filenames_once: a local variable
 * "matching_filenames" of no fixed shape initialised with MatchingFiles, fed to
 * string_input_producer -> TFRecordReader (every record of the matched files read once,
 * then OUT_OF_RANGE); a pattern that matches nothing gives an empty list and the
 * producer's Assert fails the queue runner with TF's message; reading the variable
 * before the local initializer is FAILED_PRECONDITION. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "dataset_fixture.h"
#include <unistd.h>

static char g_dir[64];

static void write_records(const char *path, int f, int n) { ds_write_text_records(path, n, "Record %d of file %d", f); }

static void test_match_then_read(void) {
    char files[3][128], other[128], pattern[160];
    for (int f = 0; f < 3; f++) snprintf(files[f], sizeof files[f], "%s/part-%d.tfrecord", g_dir, f);
    for (int f = 2; f >= 0; f--) write_records(files[f], f, 3); /* created out of order: MatchingFiles sorts */
    snprintf(other, sizeof other, "%s/notes.txt", g_dir);
    FILE *fp = fopen(other, "wb");
    fputs("not a record file", fp);
    fclose(fp);
    snprintf(pattern, sizeof pattern, "%s/part-*.tfrecord", g_dir);

    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output names = vg_match_filenames_once(g, vg_const_string(g, pattern, "pattern"), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(names.op != NULL);
    if (!names.op) return;
    vg_op *var = vg_op_input(names.op, 0).op;
    CHECK(strcmp(vg_op_name(var), "matching_filenames") == 0 && strcmp(vg_op_type(var), "VariableV2") == 0);
    CHECK(strcmp(vg_op_name(names.op), "matching_filenames/read") == 0);
    CHECK(vg_graph_op_by_name(g, "matching_filenames/MatchingFiles") != NULL);
    vg_shape vs = vg_output_shape(vg_out(var, 0));
    CHECK_EQ_INT(vs.ndims, -1); /* validate_shape=False: no fixed shape */
    int n;
    const vg_output *locals = vg_graph_collection(g, VG_LOCAL_VARIABLES, &n);
    bool in_locals = false;
    for (int i = 0; i < n; i++) in_locals = in_locals || locals[i].op == var;
    CHECK(in_locals);
    const vg_output *globals = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    for (int i = 0; i < n; i++) CHECK(globals[i].op != var);

    vg_output q = vg_string_input_producer(g, names, 1, false, 0, 32, NULL);
    vg_output rd = vg_tfrecord_reader(g, NULL, NULL);
    vg_op *read = vg_reader_read(g, rd, q, NULL);
    vg_op *li = vg_local_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);

    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, names, &t, &st), VG_FAILED_PRECONDITION); /* not yet initialized */
    CHECK_OK(vg_session_run_targets(s, &li, 1, &st), &st);
    CHECK_OK(vg_session_run1(s, names, &t, &st), &st);
    if (t) {
        CHECK_EQ_INT(vg_tensor_num_elements(t), 3);
        for (int i = 0; i < 3 && i < vg_tensor_num_elements(t); i++) {
            size_t l;
            const char *p = vg_tensor_string(t, i, &l);
            CHECK(l == strlen(files[i]) && memcmp(p, files[i], l) == 0);
        }
    }
    vg_tensor_free(t);
    vg_coord *coord = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, coord, &st), &st);
    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < 3; i++) {
            vg_tensor *v = NULL;
            CHECK_OK(vg_session_run1(s, vg_out(read, 1), &v, &st), &st);
            char want[64];
            snprintf(want, sizeof want, "Record %d of file %d", i, f);
            size_t l = 0;
            const char *p = v ? vg_tensor_string(v, 0, &l) : "";
            CHECK(l == strlen(want) && memcmp(p, want, l) == 0);
            vg_tensor_free(v);
        }
    }
    CHECK_CODE(vg_session_run1(s, vg_out(read, 1), &t, &st), VG_OUT_OF_RANGE);
    vg_coord_request_stop(coord, NULL);
    vg_session_close(s, &st);
    CHECK_OK(vg_coord_join(coord, 10, false, &st), &st);
    vg_coord_free(coord);
    vg_session_free(s);
    vg_graph_free(g);
    for (int f = 0; f < 3; f++) remove(files[f]);
    remove(other);
}

static void test_nothing_matches(void) {
    char pattern[160];
    snprintf(pattern, sizeof pattern, "%s/absent-*.tfrecord", g_dir);
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output names = vg_match_filenames_once(g, vg_const_string(g, pattern, NULL), "files");
    vg_output q = vg_string_input_producer(g, names, 0, true, 7, 32, NULL);
    vg_output rd = vg_tfrecord_reader(g, NULL, NULL);
    vg_op *read = vg_reader_read(g, rd, q, NULL);
    vg_op *li = vg_local_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(vg_op_input(names.op, 0).op), "files") == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &li, 1, &st), &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, names, &t, &st), &st); /* an empty list, not an error */
    if (t) CHECK(vg_tensor_ndims(t) == 1 && vg_tensor_num_elements(t) == 0);
    vg_tensor_free(t);
    vg_coord *coord = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, coord, &st), &st);
    /* the producer's queue runner fails on TF's Assert and stops the coordinator */
    CHECK(vg_coord_wait_for_stop(coord, 20));
    vg_status e;
    CHECK_STATUS(vg_coord_raise_requested_exception(coord, &e), &e, VG_INVALID_ARGUMENT,
        "string_input_producer requires a non-null input tensor");
    vg_run_options ro = {0};
    ro.timeout_in_ms = 200;
    vg_code rc = vg_session_run(s, &ro, NULL, NULL, 0, (vg_output[]){vg_out(read, 1)}, &t, 1, NULL, 0, NULL, &st);
    CHECK(rc != VG_OK);
    vg_session_close(s, &st);
    CHECK_CODE(vg_coord_join(coord, 10, false, &st), VG_INVALID_ARGUMENT);
    vg_coord_free(coord);
    vg_session_free(s);
    /* a non-string pattern: build-time INVALID_ARGUMENT */
    vg_match_filenames_once(g, vg_const_i32(g, 1, NULL), NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "match")[0]) return 1;
    RUN_TEST(test_match_then_read);
    RUN_TEST(test_nothing_matches);
    rmdir(g_dir);
    TEST_MAIN_END();
}
