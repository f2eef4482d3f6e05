/* test_import_functions.c - GraphDef function libraries (FunctionDefLibrary), inlined
 * at import as TF's function inliner does it (docs/import.md "Functions"):
 *  - a polymorphic function (attr placeholder T) with two outputs, called from another
 *    function that also reads a multi-output op (Unique) by its output argument names;
 *  - a StatefulPartitionedCall naming the function in its `f` attr;
 *  - gradients through an inlined call (by hand: d(x*x + x)/dx = 2x + 1);
 *  - a call with no outputs still runs its whole body (an Assert);
 *  - refusals: list arguments, recursion, arity, a bad body reference, an op whose
 *    output argument names vigil does not know; missing ops inside a body are listed
 *    with the inlined node names.
 * TF's own file, grappler's simple_function.pbtxt, is in test_import_tf_graphs. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "vigil/vigil.h"

static const char *k_lib =
    "library {\n"
    "  function {\n"
    "    signature { name: 'AddMul' input_arg { name: 'a' type_attr: 'T' } input_arg { name: 'b' type_attr: 'T' }\n"
    "                output_arg { name: 'sum' type_attr: 'T' } output_arg { name: 'prod' type_attr: 'T' }\n"
    "                attr { name: 'T' type: 'type' } }\n"
    "    node_def { name: 's' op: 'Add' input: 'a' input: 'b' attr { key: 'T' value { placeholder: 'T' } } }\n"
    "    node_def { name: 'p' op: 'Mul' input: 'a' input: 'b' attr { key: 'T' value { placeholder: 'T' } } }\n"
    "    ret { key: 'sum' value: 's:z:0' } ret { key: 'prod' value: 'p:z:0' }\n"
    "  }\n"
    "  function {\n"
    "    signature { name: 'Outer' input_arg { name: 'x' type: DT_FLOAT }\n"
    "                output_arg { name: 'y' type: DT_FLOAT } output_arg { name: 'n' type: DT_INT32 }\n"
    "                output_arg { name: 'i' type: DT_INT32 } }\n"
    "    node_def { name: 'am' op: 'AddMul' input: 'x' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "    node_def { name: 'u' op: 'Unique' input: 'am:prod:0' attr { key: 'T' value { type: DT_FLOAT } }\n"
    "               attr { key: 'out_idx' value { type: DT_INT32 } } }\n"
    "    node_def { name: 'sz' op: 'Size' input: 'u:y:0' attr { key: 'T' value { type: DT_FLOAT } }\n"
    "               attr { key: 'out_type' value { type: DT_INT32 } } }\n"
    "    ret { key: 'y' value: 'am:sum:0' } ret { key: 'n' value: 'sz:output:0' } ret { key: 'i' value: 'u:idx:0' }\n"
    "  }\n"
    "  function {\n"
    "    signature { name: 'Poly' input_arg { name: 'x' type: DT_FLOAT } output_arg { name: 'y' type: DT_FLOAT } }\n"
    "    node_def { name: 'sq' op: 'Mul' input: 'x' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "    node_def { name: 'y' op: 'Add' input: 'sq:z:0' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "    ret { key: 'y' value: 'y:z:0' }\n"
    "  }\n"
    "  function {\n"
    "    signature { name: 'Check' input_arg { name: 'x' type: DT_FLOAT } }\n"
    "    node_def { name: 'ten' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "               attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 10 } } } }\n"
    "    node_def { name: 'lt' op: 'Less' input: 'x' input: 'ten:output:0' attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "    node_def { name: 'all' op: 'All' input: 'lt:z:0' input: 'axes:output:0' }\n"
    "    node_def { name: 'axes' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }\n"
    "               attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } } } }\n"
    "    node_def { name: 'assert' op: 'Assert' input: 'all:output:0' input: 'x'\n"
    "               attr { key: 'T' value { list { type: DT_FLOAT } } } }\n"
    "  }\n"
    "}\n"
    "node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n";

static vg_graph *import_text(const char *nodes, vg_code want, vg_status *st) {
    size_t n = strlen(k_lib) + strlen(nodes) + 1;
    char *txt = malloc(n);
    snprintf(txt, n, "%s%s", k_lib, nodes);
    vg_graph *g = vg_graph_new();
    vg_import_options o = {0};
    o.format = VG_IMPORT_TEXT;
    vg_code c = vg_graph_import_graph_def(g, txt, strlen(txt), &o, st);
    if (want == VG_OK) CHECK_OK(c, st);
    else CHECK_CODE(c, want);
    free(txt);
    return g;
}

static vg_tensor *feed_x(const float *v, int64_t n) {
    vg_tensor *t = vg_tensor_new(VG_FLOAT, (int64_t[]){n}, 1, NULL);
    memcpy(vg_tensor_data(t), v, (size_t)n * sizeof(float));
    return t;
}

static void test_nested_polymorphic_multi_output(void) {
    vg_status st;
    vg_graph *g = import_text("node { name: 'call' op: 'Outer' input: 'x' }\n", VG_OK, &st);
    /* the inlined nodes carry the call's name */
    CHECK(vg_graph_op_by_name(g, "call/am/s") != NULL);
    CHECK(vg_graph_op_by_name(g, "call/u") != NULL);
    CHECK(strcmp(vg_op_type(vg_graph_op_by_name(g, "call")), "IdentityN") == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *x = feed_x((const float[]){1, 2, 2, 3}, 4);
    vg_output xin = vg_graph_output_by_name(g, "x", &st);
    vg_output f[3] = {vg_graph_output_by_name(g, "call:0", &st), vg_graph_output_by_name(g, "call:1", &st),
                      vg_graph_output_by_name(g, "call:2", &st)};
    vg_tensor *o[3] = {NULL, NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, &xin, &x, 1, f, o, 3, NULL, 0, NULL, &st), &st);
    const float want_y[4] = {2, 4, 4, 6};   /* x + x */
    const int32_t want_i[4] = {0, 1, 1, 2}; /* Unique(x * x = 1, 4, 4, 9).idx */
    for (int i = 0; o[0] && i < 4; i++) CHECK_NEAR(((const float *)vg_tensor_data(o[0]))[i], want_y[i], 0);
    CHECK(o[1] && vg_tensor_dtype(o[1]) == VG_INT32 && *(const int32_t *)vg_tensor_data(o[1]) == 3);
    for (int i = 0; o[2] && i < 4; i++) CHECK_EQ_INT(((const int32_t *)vg_tensor_data(o[2]))[i], want_i[i]);
    for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
    vg_tensor_free(x);
    free_session_graph(s, g);
}

static void test_partitioned_call(void) {
    vg_status st;
    vg_graph *g = import_text(
        "node { name: 'pc' op: 'StatefulPartitionedCall' input: 'x' input: 'x'\n"
        "       attr { key: 'f' value { func { name: 'AddMul' attr { key: 'T' value { type: DT_FLOAT } } } } }\n"
        "       attr { key: 'Tin' value { list { type: DT_FLOAT type: DT_FLOAT } } }\n"
        "       attr { key: 'Tout' value { list { type: DT_FLOAT type: DT_FLOAT } } } }\n",
        VG_OK, &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *x = feed_x((const float[]){3, -1}, 2);
    vg_output xin = vg_graph_output_by_name(g, "x", &st);
    vg_output f[2] = {vg_graph_output_by_name(g, "pc:0", &st), vg_graph_output_by_name(g, "pc:1", &st)};
    vg_tensor *o[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, &xin, &x, 1, f, o, 2, NULL, 0, NULL, &st), &st);
    CHECK(o[0] && o[1]);
    if (o[0] && o[1]) {
        const float *a = vg_tensor_data(o[0]), *b = vg_tensor_data(o[1]);
        CHECK_NEAR(a[0], 6, 0);
        CHECK_NEAR(a[1], -2, 0);
        CHECK_NEAR(b[0], 9, 0);
        CHECK_NEAR(b[1], 1, 0);
    }
    kt_teardown(g, s, (vg_tensor *[]){o[0], o[1], x}, 3, NULL, 0);
}

static void test_gradient_through_call(void) {
    vg_status st;
    vg_graph *g = import_text("node { name: 'call' op: 'Poly' input: 'x' }\n", VG_OK, &st);
    vg_output y = vg_graph_output_by_name(g, "call", &st), xin = vg_graph_output_by_name(g, "x", &st), dx;
    CHECK_OK(vg_gradients(g, &y, 1, &xin, 1, NULL, &dx, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *x = feed_x((const float[]){1, 2, -3}, 3);
    vg_output f[2] = {y, dx};
    vg_tensor *o[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, &xin, &x, 1, f, o, 2, NULL, 0, NULL, &st), &st);
    const float want_y[3] = {2, 6, 6}, want_d[3] = {3, 5, -5}; /* x*x + x, 2x + 1 */
    for (int i = 0; o[0] && o[1] && i < 3; i++) {
        CHECK_NEAR(((const float *)vg_tensor_data(o[0]))[i], want_y[i], 0);
        CHECK_NEAR(((const float *)vg_tensor_data(o[1]))[i], want_d[i], 0);
    }
    kt_teardown(g, s, (vg_tensor *[]){o[0], o[1], x}, 3, NULL, 0);
}

static void test_call_without_outputs_runs_body(void) {
    vg_status st;
    vg_graph *g = import_text("node { name: 'check' op: 'Check' input: 'x' }\n", VG_OK, &st);
    vg_op *call = vg_graph_op_by_name(g, "check");
    CHECK(call && strcmp(vg_op_type(call), "NoOp") == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output xin = vg_graph_output_by_name(g, "x", &st);
    vg_tensor *ok = feed_x((const float[]){1, 9}, 2), *bad = feed_x((const float[]){1, 12}, 2);
    CHECK_OK(vg_session_run(s, NULL, &xin, &ok, 1, NULL, NULL, 0, &call, 1, NULL, &st), &st);
    CHECK_STATUS(vg_session_run(s, NULL, &xin, &bad, 1, NULL, NULL, 0, &call, 1, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "assertion failed");
    vg_tensor_free(ok);
    vg_tensor_free(bad);
    free_session_graph(s, g);
}

static void check_refused(const char *extra_lib, const char *nodes, vg_code want, const char *msg) {
    /* extra functions go before the shared library's closing brace: build the text */
    size_t n = strlen(k_lib) + strlen(extra_lib) + strlen(nodes) + 16;
    char *txt = malloc(n);
    const char *close = strstr(k_lib, "}\nnode {"); /* end of library { ... } */
    snprintf(txt, n, "%.*s%s%s", (int)(close - k_lib), k_lib, extra_lib, close);
    strncat(txt, nodes, n - strlen(txt) - 1);
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_import_options o = {0};
    o.format = VG_IMPORT_TEXT;
    CHECK_CODE(vg_graph_import_graph_def(g, txt, strlen(txt), &o, &st), want);
    CHECK_STR_CONTAINS(st.msg, msg);
    vg_graph_free(g);
    free(txt);
}

static void test_refusals(void) {
    check_refused("  function { signature { name: 'L' input_arg { name: 'xs' type: DT_FLOAT number_attr: 'N' }\n"
                  "    output_arg { name: 'y' type: DT_FLOAT } attr { name: 'N' type: 'int' } }\n"
                  "    ret { key: 'y' value: 'xs' } }\n",
                  "node { name: 'c' op: 'L' input: 'x' attr { key: 'N' value { i: 1 } } }\n", VG_UNIMPLEMENTED,
                  "list argument 'xs'");
    check_refused("  function { signature { name: 'R' input_arg { name: 'x' type: DT_FLOAT }\n"
                  "    output_arg { name: 'y' type: DT_FLOAT } }\n"
                  "    node_def { name: 'r' op: 'R' input: 'x' } ret { key: 'y' value: 'r:y:0' } }\n",
                  "node { name: 'c' op: 'R' input: 'x' }\n", VG_INVALID_ARGUMENT, "more than 32 deep");
    check_refused("", "node { name: 'c' op: 'Poly' input: 'x' input: 'x' }\n", VG_INVALID_ARGUMENT,
                  "with 2 input(s), it takes 1");
    check_refused("  function { signature { name: 'B' input_arg { name: 'x' type: DT_FLOAT }\n"
                  "    output_arg { name: 'y' type: DT_FLOAT } }\n"
                  "    ret { key: 'y' value: 'nosuch:z:0' } }\n",
                  "node { name: 'c' op: 'B' input: 'x' }\n", VG_INVALID_ARGUMENT, "bad reference 'nosuch:z:0'");
    /* a two-output op whose argument names vigil does not know: refused, not guessed */
    check_refused("  function { signature { name: 'I' input_arg { name: 'p' type: DT_INT64 }\n"
                  "    output_arg { name: 'y' type: DT_UINT8 } }\n"
                  "    node_def { name: 'r' op: 'IdxRecord' input: 'p' attr { key: 'images_path' value { s: 'i' } }\n"
                  "               attr { key: 'labels_path' value { s: 'l' } } }\n"
                  "    ret { key: 'y' value: 'r:label:0' } }\n",
                  "node { name: 's' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT64 } } }\n"
                  "node { name: 'c' op: 'I' input: 's' }\n",
                  VG_UNIMPLEMENTED, "does not know the output argument names of IdxRecord");
    /* calls nested in calls multiply: 2^14 Adds from a few hundred bytes are refused */
    char lib[8192] = "";
    for (int i = 0; i < 14; i++) {
        char f[512];
        snprintf(f, sizeof f,
                 "  function { signature { name: 'E%d' input_arg { name: 'x' type: DT_FLOAT }\n"
                 "    output_arg { name: 'y' type: DT_FLOAT } }\n"
                 "    node_def { name: 'a' op: 'E%d' input: 'x' } node_def { name: 'b' op: 'E%d' input: 'x' }\n"
                 "    node_def { name: 's' op: 'Add' input: 'a:y:0' input: 'b:y:0' attr { key: 'T' value { type: DT_FLOAT } } }\n"
                 "    ret { key: 'y' value: 's:z:0' } }\n", i, i + 1, i + 1);
        strncat(lib, f, sizeof lib - strlen(lib) - 1);
    }
    strncat(lib, "  function { signature { name: 'E14' input_arg { name: 'x' type: DT_FLOAT }\n"
                 "    output_arg { name: 'y' type: DT_FLOAT } } ret { key: 'y' value: 'x' } }\n",
            sizeof lib - strlen(lib) - 1);
    check_refused(lib, "node { name: 'c' op: 'E0' input: 'x' }\n", VG_RESOURCE_EXHAUSTED, "max_inlined_nodes");
    /* op types missing inside a body are listed with the inlined names */
    check_refused("  function { signature { name: 'M' input_arg { name: 'x' type: DT_FLOAT }\n"
                  "    output_arg { name: 'y' type: DT_FLOAT } }\n"
                  "    node_def { name: 'n' op: 'NoSuchOpAnywhere' input: 'x' } ret { key: 'y' value: 'n:y:0' } }\n",
                  "node { name: 'c' op: 'M' input: 'x' }\n", VG_UNIMPLEMENTED, "NoSuchOpAnywhere (node 'c/n')");
}

/* tf.identity_n: values forwarded, dtypes kept, gradients passed through. */
static void test_identity_n(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, -1, "x");
    vg_output i = vg_const_i32(g, 7, "i");
    vg_op *n = vg_identity_n(g, (vg_output[]){x, i}, 2, NULL);
    CHECK(n && vg_op_num_outputs(n) == 2 && strcmp(vg_op_name(n), "IdentityN") == 0);
    vg_output y = vg_mul(g, vg_out(n, 0), vg_out(n, 0), "y"), dx;
    CHECK_OK(vg_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *xv = feed_x((const float[]){1.5f, -2}, 2);
    vg_output f[2] = {vg_out(n, 1), dx};
    vg_tensor *o[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, f, o, 2, NULL, 0, NULL, &st), &st);
    CHECK(o[0] && vg_tensor_dtype(o[0]) == VG_INT32 && *(const int32_t *)vg_tensor_data(o[0]) == 7);
    CHECK(o[1] && ((const float *)vg_tensor_data(o[1]))[0] == 3.0f && ((const float *)vg_tensor_data(o[1]))[1] == -4.0f);
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    vg_tensor_free(xv);
    vg_session_free(s);
    CHECK(vg_identity_n(g, NULL, 0, "none") == NULL);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_identity_n);
    RUN_TEST(test_nested_polymorphic_multi_output);
    RUN_TEST(test_partitioned_call);
    RUN_TEST(test_gradient_through_call);
    RUN_TEST(test_call_without_outputs_runs_body);
    RUN_TEST(test_refusals);
    TEST_MAIN_END();
}
