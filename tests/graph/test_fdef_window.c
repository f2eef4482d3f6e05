/* test_fdef_window.c - tf.data functions whose arguments are datasets, written into
 * exported GraphDefs / MetaGraphDefs as FunctionDefs and built again on import
 * (docs/import.md "Dataset functions"):
 *  - Dataset.window(...).flat_map(lambda w: w.batch(n)): the function's argument is a
 *    DT_VARIANT (TF 1.15's encoding of a dataset-valued argument), the body's
 *    BatchDatasetV2 reads it; exported as a MetaGraphDef (binary), a GraphDef and its
 *    text form, imported into fresh graphs whose iterators yield the same batches
 *    (computed by hand); a two-component window zipped back; the export again from the
 *    imported graph;
 *  - a Saver's .meta of a graph with such a pipeline (it used to fail with UNIMPLEMENTED);
 *  - group_by_window's three functions (key_func over the elements, reduce_func over
 *    (key, DT_VARIANT window) with a captured value, window_size_func over the key), a
 *    constant and a computed window size;
 *  - a GraphDef written as TF 1.15 writes range(7).window(3, 2).flat_map(lambda w:
 *    w.batch(3)) (args_0: DT_VARIANT, Identity of DT_VARIANT, ret "Identity:output:0")
 *    imported and run. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "ds_run_util.h"

static void check_seq(const int64_t *got, int n, const int64_t *want, int nw) {
    CHECK_EQ_INT(n, nw);
    bool same = n == nw;
    for (int i = 0; same && i < n; i++) same = got[i] == want[i];
    if (!same) {
        fprintf(stderr, "got:");
        for (int i = 0; i < n; i++) fprintf(stderr, " %lld", (long long)got[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same);
}

/* Drains dataset op `ds_name` of g through a new initializable iterator: its values, each
 * element followed by -1 (ds_take_i64), must be want[0..nw). */
static void run_ds(vg_graph *g, const char *ds_name, const int64_t *want, int nw) {
    vg_status st;
    vg_op *ds = vg_graph_op_by_name(g, ds_name);
    CHECK(ds != NULL);
    ds_run r;
    if (!ds || !ds_run_open(&r, g, vg_out(ds, 0))) return;
    int64_t got[DS_CKPT_MAX];
    int n = 0;
    CHECK_OK(ds_run_init(&r, &st), &st);
    for (int k; (k = ds_take_i64(r.s, r.next, got, n, &st)) > n;) n = k;
    CHECK_CODE(st.code, VG_OUT_OF_RANGE);
    if (st.code != VG_OUT_OF_RANGE) fprintf(stderr, "%s\n", st.msg);
    check_seq(got, n, want, nw);
    vg_session_free(r.s); /* g stays the caller's */
}

/* Imports bytes (a MetaGraphDef when meta) into a new graph and drains `ds_name`. */
static void import_and_run(const void *bytes, size_t len, bool meta, const char *ds_name, const int64_t *want,
                           int nw) {
    vg_status st;
    vg_graph *g2 = vg_graph_new();
    vg_code rc = meta ? vg_import_meta_graph(g2, bytes, len, NULL, NULL, &st)
                      : vg_graph_import_graph_def(g2, bytes, len, NULL, &st);
    CHECK_OK(rc, &st);
    if (rc == VG_OK) run_ds(g2, ds_name, want, nw);
    vg_graph_free(g2);
}

/* Exports g (MetaGraphDef, GraphDef, text), imports each into a new graph and drains
 * ds_name; then exports the imported graph again and runs that too. *txt_out: the text
 * form (vg_free), or NULL. */
static void roundtrip(vg_graph *g, const char *ds_name, const int64_t *want, int nw, char **txt_out) {
    vg_status st;
    void *meta = NULL, *gd = NULL;
    size_t ml = 0, gl = 0, tl = 0;
    char *txt = NULL;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &meta, &ml, &st), &st);
    CHECK_OK(vg_graph_to_graphdef(g, &gd, &gl, &st), &st);
    CHECK_OK(vg_graph_to_graphdef_text(g, &txt, &tl, &st), &st);
    if (meta) import_and_run(meta, ml, true, ds_name, want, nw);
    if (gd) import_and_run(gd, gl, false, ds_name, want, nw);
    if (txt) import_and_run(txt, tl, false, ds_name, want, nw);
    if (meta) { /* the imported graph exports its functions again */
        vg_graph *g2 = vg_graph_new();
        CHECK_OK(vg_import_meta_graph(g2, meta, ml, NULL, NULL, &st), &st);
        void *again = NULL;
        size_t al = 0;
        CHECK_OK(vg_graph_to_graphdef(g2, &again, &al, &st), &st);
        if (again) import_and_run(again, al, false, ds_name, want, nw);
        vg_free(again);
        vg_graph_free(g2);
    }
    vg_free(meta);
    vg_free(gd);
    if (txt_out) *txt_out = txt;
    else vg_free(txt);
}

/* run_ds and roundtrip; then the exported text must contain each of the nh strings has[]. */
static void run_and_roundtrip(vg_graph *g, const char *ds_name, const int64_t *want, int nw, const char *const *has,
                              int nh) {
    run_ds(g, ds_name, want, nw);
    char *txt = NULL;
    roundtrip(g, ds_name, want, nw, nh ? &txt : NULL);
    for (int i = 0; txt && i < nh; i++) CHECK_STR_CONTAINS(txt, has[i]);
    vg_free(txt);
}

/* ------------------------------------------------------------------------ */
/* window + flat_map */

/* w -> w.batch(3) */
static vg_code batch3(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_dataset_batch(fg, args[0], 3, false, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* range(7).window(3, 2): [0 1 2] [2 3 4] [4 5 6] [6] */
static const int64_t k_windows[] = {0, 1, 2, -1, 2, 3, 4, -1, 4, 5, 6, -1, 6, -1};

static void test_window_flat_map(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output w = vg_dataset_window(g, vg_dataset_range(g, 0, 7, 1, "range"), 3, 2, 1, false, "window");
    vg_dataset_flat_map(g, w, batch3, NULL, "flat_map");
    CHECK_OK(vg_graph_status(g, &st), &st);
    static const char *const has[] = {
        /* the argument is a dataset: DT_VARIANT, as TF 1.15 */
        "input_arg {\n        name: \"args_0\"\n        type: DT_VARIANT\n      }",
        "output_arg {\n        name: \"identity\"\n        type: DT_VARIANT\n      }",
        "op: \"BatchDatasetV2\"\n      input: \"args_0\"",
        "name: \"__inference_Dataset_flat_map_flat_map_",
        /* the window's elements are datasets: DT_VARIANT in its output_types, as TF 1.15 */
        "op: \"WindowDataset\"",
        "key: \"output_types\"\n    value {\n      list {\n        type: DT_VARIANT\n      }",
    };
    run_and_roundtrip(g, "flat_map", k_windows, 14, has, 6);
    vg_graph_free(g);
}

/* (a, b) -> zip(a.batch(2), b.batch(2)) */
static vg_code zip_batch2(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)p;
    vg_output b[2];
    for (int i = 0; i < nargs && i < 2; i++) b[i] = vg_dataset_batch(fg, args[i], 2, false, NULL);
    outs[0] = vg_dataset_zip(fg, b, 2, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
/* (x, 10 x) */
static vg_code x_10x(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = args[0];
    outs[1] = vg_mul(fg, args[0], vg_const_i64(fg, 10, NULL), NULL);
    *nouts = 2;
    return vg_graph_status(fg, NULL);
}
/* component 1 of the elements of a two-component dataset, through a map */
static vg_code second(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_add(fg, args[0], args[1], NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

static void test_window_two_components(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 5, 1, NULL), x_10x, NULL, "pairs");
    ds = vg_dataset_window(g, ds, 2, -1, 1, false, "window");
    ds = vg_dataset_flat_map(g, ds, zip_batch2, NULL, "flat_map");
    vg_dataset_map(g, ds, second, NULL, "sum");
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* windows (0,1) (2,3) (4): x + 10x = 11x */
    static const int64_t want[] = {0, 11, -1, 22, 33, -1, 44, -1};
    run_and_roundtrip(g, "sum", want, 8, NULL, 0);
    vg_graph_free(g);
}

/* a Saver's .meta of a graph with a window's flat_map */
static void test_saver_meta(void) {
    vg_status st;
    char dir[256];
    if (!tu_mkdtemp(dir, sizeof dir, "fdef_window")[0]) {
        CHECK(false);
        return;
    }
    vg_graph *g = vg_graph_new();
    vg_output w = vg_dataset_window(g, vg_dataset_range(g, 0, 7, 1, "range"), 3, 2, 1, false, "window");
    vg_dataset_flat_map(g, w, batch3, NULL, "flat_map");
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 1, NULL), 0);
    vg_op *init = v.initializer;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    CHECK(sv != NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (sv && s) {
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        char prefix[300], path[400];
        snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
        CHECK_OK(vg_saver_save(sv, s, prefix, 1, path, sizeof path, &st), &st);
        char meta[420];
        snprintf(meta, sizeof meta, "%s.meta", path);
        FILE *f = fopen(meta, "rb");
        CHECK(f != NULL);
        if (f) {
            static char buf[1 << 20];
            size_t n = fread(buf, 1, sizeof buf, f);
            fclose(f);
            import_and_run(buf, n, true, "flat_map", k_windows, 14);
        }
    }
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);
    CHECK_EQ_INT(tu_rmrf(dir), 0);
}

/* ------------------------------------------------------------------------ */
/* group_by_window */

static vg_code mod2(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_floor_mod(fg, args[0], vg_const_i64(fg, 2, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
/* x + offset * key (offset captured) */
static vg_code add_offset(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    const vg_output *env = p; /* key, offset: in the enclosing reduce function */
    vg_output k = vg_dataset_capture(fg, env[0], "key");
    vg_output off = vg_dataset_capture(fg, env[1], "offset");
    outs[0] = vg_add(fg, args[0], vg_mul(fg, k, off, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
/* (key, window) -> window.batch(3).map(x + offset * key), offset captured from g */
static vg_code reduce_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output env[2] = {args[0], vg_dataset_capture(fg, *(const vg_output *)p, "offset")};
    outs[0] = vg_dataset_map(fg, vg_dataset_batch(fg, args[1], 3, false, NULL), add_offset, env, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
/* key -> 2 + key (even: 2, odd: 3) */
static vg_code size_by_key(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_add(fg, args[0], vg_const_i64(fg, 2, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

static void test_group_by_window(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output off = vg_const_i64(g, 100, "offset");
    vg_dataset_group_by_window(g, vg_dataset_range(g, 0, 10, 1, "range"), mod2, reduce_fn, 3, NULL, &off, "gbw");
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* evens 0 2 4 at 4, odds 1 3 5 (+100) at 5; then the end: 6 8, 7 9 (+100) */
    static const int64_t want[] = {0, 2, 4, -1, 101, 103, 105, -1, 6, 8, -1, 107, 109, -1};
    static const char *const has[] = {
        "name: \"__inference_Dataset_group_by_window_gbw_",
        "key: \"key_func\"\n    value {\n      func {",
        "key: \"reduce_func\"\n    value {\n      func {",
        "key: \"window_size_func\"\n    value {\n      func {",
        "key: \"Treduce_func_other_arguments\"\n    value {\n      list {\n        type: DT_INT64",
        /* reduce_func(key, window): an int64 and a DT_VARIANT */
        "input_arg {\n        name: \"args_0\"\n        type: DT_INT64\n      }\n      input_arg {\n"
        "        name: \"args_1\"\n        type: DT_VARIANT\n      }",
    };
    run_and_roundtrip(g, "gbw", want, 14, has, 6);
    vg_graph_free(g);

    /* a window size computed from the key */
    g = vg_graph_new();
    off = vg_const_i64(g, 100, "offset");
    vg_dataset_group_by_window(g, vg_dataset_range(g, 0, 10, 1, "range"), mod2, reduce_fn, -1, size_by_key, &off, "gbw");
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* evens in twos: 0 2 | 4 6 | 8; odds in threes: 1 3 5 | 7 9 */
    static const int64_t want2[] = {0, 2, -1, 101, 103, 105, -1, 4, 6, -1, 8, -1, 107, 109, -1};
    run_and_roundtrip(g, "gbw", want2, 15, NULL, 0);
    vg_graph_free(g);
}

/* ------------------------------------------------------------------------ */
/* a GraphDef as TF 1.15 writes range(7).window(3, 2).flat_map(lambda w: w.batch(3)) */

#define I64_CONST(name, v)                                                                                      \
    "node { name: '" name "' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"                     \
    "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: " v " } } } }\n"
static const char *k_tf_window_graph =
    I64_CONST("start", "0") I64_CONST("stop", "7") I64_CONST("step", "1") I64_CONST("size", "3")
    I64_CONST("shift", "2") I64_CONST("stride", "1")
    "node { name: 'drop_remainder' op: 'Const' attr { key: 'dtype' value { type: DT_BOOL } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_BOOL tensor_shape {} bool_val: false } } } }\n"
    "node { name: 'RangeDataset' op: 'RangeDataset' input: 'start' input: 'stop' input: 'step'\n"
    "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
    "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n"
    "node { name: 'WindowDataset' op: 'WindowDataset' input: 'RangeDataset' input: 'size' input: 'shift'\n"
    "  input: 'stride' input: 'drop_remainder'\n"
    "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
    "  attr { key: 'output_types' value { list { type: DT_VARIANT } } } }\n"
    "node { name: 'FlatMapDataset' op: 'FlatMapDataset' input: 'WindowDataset'\n"
    "  attr { key: 'Targuments' value { list {} } }\n"
    "  attr { key: 'f' value { func { name: '__inference_Dataset_flat_map_lambda_41' } } }\n"
    "  attr { key: 'output_shapes' value { list { shape { dim { size: -1 } } } } }\n"
    "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n"
    "library {\n"
    "  function {\n"
    "    signature { name: '__inference_Dataset_flat_map_lambda_41'\n"
    "      input_arg { name: 'args_0' type: DT_VARIANT } output_arg { name: 'identity' type: DT_VARIANT }\n"
    "      is_stateful: true }\n"
    "    node_def { name: 'batch_size' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
    "      attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: 3 } } } }\n"
    "    node_def { name: 'drop_remainder' op: 'Const' attr { key: 'dtype' value { type: DT_BOOL } }\n"
    "      attr { key: 'value' value { tensor { dtype: DT_BOOL tensor_shape {} bool_val: false } } } }\n"
    "    node_def { name: 'BatchDatasetV2' op: 'BatchDatasetV2' input: 'args_0' input: 'batch_size:output:0'\n"
    "      input: 'drop_remainder:output:0'\n"
    "      attr { key: 'output_shapes' value { list { shape { dim { size: -1 } } } } }\n"
    "      attr { key: 'output_types' value { list { type: DT_INT64 } } }\n"
    "      attr { key: 'parallel_copy' value { b: false } } }\n"
    "    node_def { name: 'Identity' op: 'Identity' input: 'BatchDatasetV2:handle:0'\n"
    "      attr { key: 'T' value { type: DT_VARIANT } } }\n"
    "    ret { key: 'identity' value: 'Identity:output:0' }\n"
    "  }\n"
    "}\n"
    "versions { producer: 134 min_consumer: 12 }\n";

static void test_tf_written(void) {
    import_and_run(k_tf_window_graph, strlen(k_tf_window_graph), false, "FlatMapDataset", k_windows, 14);
    /* exported again by vigil and read back */
    vg_status st;
    vg_graph *g = vg_graph_new();
    CHECK_OK(vg_graph_import_graph_def(g, k_tf_window_graph, strlen(k_tf_window_graph), NULL, &st), &st);
    roundtrip(g, "FlatMapDataset", k_windows, 14, NULL);
    vg_graph_free(g);
}

/* a DT_VARIANT argument whose element types vigil cannot tell (a flat_map over a
 * dataset of datasets that is not a window's): UNIMPLEMENTED naming the argument */
static void test_variant_without_spec(void) {
    static const char *bad =
        I64_CONST("start", "0") I64_CONST("stop", "7") I64_CONST("step", "1")
        "node { name: 'RangeDataset' op: 'RangeDataset' input: 'start' input: 'stop' input: 'step'\n"
        "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
        "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n"
        "node { name: 'FlatMapDataset' op: 'FlatMapDataset' input: 'RangeDataset'\n"
        "  attr { key: 'Targuments' value { list {} } }\n"
        "  attr { key: 'f' value { func { name: 'f' } } }\n"
        "  attr { key: 'output_shapes' value { list { shape { dim { size: -1 } } } } }\n"
        "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n"
        "library { function { signature { name: 'f' input_arg { name: 'args_0' type: DT_VARIANT }\n"
        "  output_arg { name: 'identity' type: DT_VARIANT } }\n"
        "  node_def { name: 'Identity' op: 'Identity' input: 'args_0' attr { key: 'T' value { type: DT_VARIANT } } }\n"
        "  ret { key: 'identity' value: 'Identity:output:0' } } }\n";
    vg_status st;
    vg_graph *g = vg_graph_new();
    CHECK_CODE(vg_graph_import_graph_def(g, bad, strlen(bad), NULL, &st), VG_UNIMPLEMENTED);
    CHECK_STR_CONTAINS(st.msg, "'args_0' is a DT_VARIANT");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_window_flat_map);
    RUN_TEST(test_window_two_components);
    RUN_TEST(test_saver_meta);
    RUN_TEST(test_group_by_window);
    RUN_TEST(test_tf_written);
    RUN_TEST(test_variant_without_spec);
    TEST_MAIN_END();
}
