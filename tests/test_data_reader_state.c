/* test_data_reader_state.c - ReaderSerializeStateV2 / ReaderRestoreStateV2 on each of
 * TF's four record readers fail with UNIMPLEMENTED as in TF 1.15 (ReaderBase's default
 * SerializeStateLocked / RestoreStateLocked), after the reader was used; a non-string
 * state is a build-time INVALID_ARGUMENT. */
#include "test_util.h"
#include "vigil/vigil.h"

static void test_reader_state_unimplemented(void) {
    vg_graph *g = vg_graph_new();
    vg_output readers[4] = {vg_tfrecord_reader(g, "", NULL), vg_fixed_length_record_reader(g, 0, 4, 0, 0, NULL),
                            vg_text_line_reader(g, 0, NULL), vg_whole_file_reader(g, NULL)};
    vg_output ser[4];
    vg_op *res[4];
    for (int i = 0; i < 4; i++) {
        ser[i] = vg_reader_serialize_state(g, readers[i], NULL);
        res[i] = vg_reader_restore_state(g, readers[i], vg_const_string(g, "state", NULL), NULL);
    }
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(ser[0].op && vg_output_dtype(ser[0]) == VG_STRING);
    vg_session *s = vg_session_new(g, NULL, &st);
    for (int i = 0; s && i < 4; i++) {
        vg_tensor *t = NULL;
        CHECK_CODE(vg_session_run1(s, ser[i], &t, &st), VG_UNIMPLEMENTED);
        CHECK_STR_CONTAINS(st.msg, "Reader SerializeState");
        CHECK_CODE(vg_session_run_targets(s, &res[i], 1, &st), VG_UNIMPLEMENTED);
        CHECK_STR_CONTAINS(st.msg, "Reader RestoreState");
    }
    vg_session_free(s);
    vg_reader_restore_state(g, readers[0], vg_const_i32(g, 1, NULL), NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "state must be a string");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_reader_state_unimplemented);
    TEST_MAIN_END();
}
