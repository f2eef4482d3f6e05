/* test_import_tf_graphs.c - more TF1-written GraphDefs (text form, from
 * tensorflow/tensorflow's grappler testdata, tests/data/tf/README.md section 3): each
 * either runs with the values its construction implies or fails the import with
 * UNIMPLEMENTED naming every op type vigil lacks (the same list vg_graph_def_missing_ops
 * gives), and nothing is added to the graph.
 *  - merge_without_loops: tf.cond(7 < 5, concat(ones[1,1,1] x2, axis 0),
 *    concat(.., axis 1)), then concat(merge, merge, axis 2): the false branch runs,
 *    giving ones of shape [1, 2, 2];
 *  - while_loop: i = 0, x = ones[2,2]; while i < 10: i += 1, x = concat(x, x, 0):
 *    Exit = 10, Exit_1 = ones of shape [2048, 2];
 *  - simple_function: two calls of the library function MyAdd_55e046a8 (x + y) on
 *    2.0s, inlined at import: MyAdd_55e046a8_1 = 2 + (2 + 2), from the text and the
 *    binary GraphDef alike. */
#include "test_util.h"
#include "graph_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

#define TDG VG_SRCDIR "/tests/data/tf/graphs"

/* Imports path; false after checking the missing-op contract when vigil lacks op
 * types (all of them named, graph untouched). */
static bool import_or_missing(vg_graph *g, const char *path) {
    vg_status st;
    vg_code c = vg_graph_import_graph_def_file(g, path, NULL, &st);
    if (c != VG_UNIMPLEMENTED) {
        CHECK_OK(c, &st);
        return c == VG_OK;
    }
    size_t n;
    uint8_t *buf = slurp(path, &n);
    check_missing_op_contract(buf, n, VG_IMPORT_TEXT, path);
    free(buf);
    return false;
}

static void check_ones(const vg_tensor *t, const int64_t *dims, int nd) {
    CHECK(t && vg_tensor_dtype(t) == VG_FLOAT && vg_tensor_ndims(t) == nd);
    for (int d = 0; t && d < nd && d < vg_tensor_ndims(t); d++) CHECK_EQ_INT(vg_tensor_dim(t, d), dims[d]);
    int64_t bad = 0;
    for (int64_t i = 0; t && i < vg_tensor_num_elements(t); i++) bad += ((const float *)vg_tensor_data(t))[i] != 1.0f;
    CHECK_EQ_INT(bad, 0);
}

static void test_merge_without_loops(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    if (import_or_missing(g, TDG "/grappler_merge_without_loops.pbtxt")) {
        vg_session *s = vg_session_new(g, NULL, &st);
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, vg_graph_output_by_name(g, "concat", &st), &t, &st), &st);
        check_ones(t, (int64_t[]){1, 2, 2}, 3);
        vg_tensor_free(t);
        vg_session_free(s);
    }
    vg_graph_free(g);
}

static void test_while_loop(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    if (import_or_missing(g, TDG "/grappler_while_loop.pbtxt")) {
        vg_session *s = vg_session_new(g, NULL, &st);
        vg_output f[2] = {vg_graph_output_by_name(g, "while/Exit", &st), vg_graph_output_by_name(g, "while/Exit_1", &st)};
        vg_tensor *o[2] = {NULL, NULL};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 2, NULL, 0, NULL, &st), &st);
        CHECK(o[0] && *(const int32_t *)vg_tensor_data(o[0]) == 10);
        check_ones(o[1], (int64_t[]){2048, 2}, 2);
        vg_tensor_free(o[0]);
        vg_tensor_free(o[1]);
        vg_session_free(s);
    }
    vg_graph_free(g);
}

static void run_simple_function(vg_graph *g) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, vg_graph_output_by_name(g, "MyAdd_55e046a8_1", &st), &t, &st), &st);
    CHECK(t && vg_tensor_num_elements(t) == 2);
    for (int i = 0; t && i < 2; i++) CHECK_NEAR(((const float *)vg_tensor_data(t))[i], 6.0, 0); /* 2 + (2 + 2) */
    vg_tensor_free(t);
    vg_session_free(s);
}

static void test_simple_function(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    CHECK(import_or_missing(g, TDG "/grappler_simple_function.pbtxt"));
    CHECK(vg_graph_op_by_name(g, "MyAdd_55e046a8_1/Add") != NULL);
    run_simple_function(g);
    vg_graph_free(g);
    /* the same through the binary form */
    size_t n;
    uint8_t *txt = slurp(TDG "/grappler_simple_function.pbtxt", &n);
    void *bin = NULL;
    size_t blen = 0;
    CHECK_OK(vg_proto_text_to_binary(txt, n, "GraphDef", &bin, &blen, &st), &st);
    g = vg_graph_new();
    CHECK_OK(vg_graph_import_graph_def(g, bin, blen, NULL, &st), &st);
    run_simple_function(g);
    vg_graph_free(g);
    vg_free(bin);
    free(txt);
}

int main(void) {
    RUN_TEST(test_merge_without_loops);
    RUN_TEST(test_while_loop);
    RUN_TEST(test_simple_function);
    TEST_MAIN_END();
}
