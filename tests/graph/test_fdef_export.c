/* test_fdef_export.c - tf.data functions written into exported GraphDefs / MetaGraphDefs
 * as FunctionDefs of GraphDef.library, and built again on import (docs/import.md
 * "Dataset functions"):
 *  - a pipeline range -> map (captures a constant) -> filter -> flat_map exported as a
 *    MetaGraphDef, imported into a fresh graph: its iterator yields the same elements
 *    (computed by hand), in binary and in text form;
 *  - a flat_map whose function holds a map capturing the flat_map's argument (a
 *    function inside a function, nested FunctionDefs); interleave and reduce; a
 *    parse_single_example map (list outputs named by argument);
 *  - the FunctionDef's fields against what TF 1.15 writes for
 *    Dataset.range(10).map(lambda x: x * x) (signature args_0 / identity, node_def
 *    inputs "node:out_arg:index", ret; MapDataset's f = AttrValue.func);
 *  - a GraphDef written by TF (tensorflow/core/data/standalone_test.cc's map graph)
 *    imported and run: 0, 1, 4, ..., 81;
 *  - UNIMPLEMENTED: a dataset op whose function is not in the graph (a key-only graph
 *    of an older vigil); export never writes a graph that loses the function. (A
 *    window's flat_map, whose arguments are datasets, is written since: test_fdef_window.c.) */
#include "test_util.h"
#include "kernels_fixture.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"

/* Runs init, then reads int64 / int32 scalars of next's output 0 until the end. */
static vg_code drain(vg_session *s, vg_op *init, vg_op *next, double *out, int max, int *n, vg_status *st) {
    *n = 0;
    vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, st);
    if (rc) return rc;
    for (;;) {
        vg_tensor *t = NULL;
        rc = vg_session_run1(s, vg_out(next, 0), &t, st);
        if (rc != VG_OK) return rc;
        if (*n < max) out[*n] = vg_tensor_scalar(t);
        (*n)++;
        vg_tensor_free(t);
    }
}

static void check_seq(const double *got, int n, const double *want, int nw) {
    CHECK_EQ_INT(n, nw);
    for (int i = 0; i < n && i < nw; i++) CHECK_NEAR(got[i], want[i], 1e-9);
}

/* x -> x * captured */
DS_FN1(times_k, vg_mul(fg, args[0], vg_dataset_capture(fg, *(const vg_output *)p, "k"), "mul"))

/* x -> x % 2 == 0 */
DS_FN1(is_even,
       vg_equal(fg, vg_floor_mod(fg, args[0], vg_const_i64(fg, 2, "two"), "mod"), vg_const_i64(fg, 0, "zero"), "eq"))

/* x -> from_tensor_slices([x, x + 1]) */
static vg_code pair(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output v[2] = {args[0], vg_add(fg, args[0], vg_const_i64(fg, 1, "one"), "next")};
    vg_output packed = vg_pack(fg, v, 2, 0, "pack");
    outs[0] = vg_dataset_from_tensor_slices(fg, &packed, 1, "slices");
    *nouts = 1;
    return VG_OK;
}

/* y -> y + captured x (the enclosing flat_map's argument) */
DS_FN1(plus_outer, vg_add(fg, args[0], vg_dataset_capture(fg, *(const vg_output *)p, "x"), "add"))

/* x -> range(0, 2).map(y -> y + x) */
DS_FN1(nested,
       vg_dataset_map(fg, vg_dataset_range(fg, 0, 2, 1, "inner_range"), plus_outer, (void *)&args[0], "inner_map"))

/* g's GraphDef as text (vg_free it; NULL, a failed check, when it cannot be written),
 * its length in *len. */
static char *graphdef_text(vg_graph *g, size_t *len) {
    vg_status st;
    char *txt = NULL;
    CHECK_OK(vg_graph_to_graphdef_text(g, &txt, len, &st), &st);
    return txt;
}

/* g's GraphDef text contains each of want[0..n). */
static void check_graphdef_text_has(vg_graph *g, const char *const *want, int n) {
    size_t len = 0;
    char *txt = graphdef_text(g, &len);
    for (int i = 0; txt && i < n; i++) CHECK_STR_CONTAINS(txt, want[i]);
    vg_free(txt);
}

static vg_output pipeline(vg_graph *g) {
    vg_output k = vg_const_i64(g, 3, "k");
    vg_output ds = vg_dataset_range(g, 0, 10, 1, "range");
    ds = vg_dataset_map(g, ds, times_k, &k, "map");
    ds = vg_dataset_filter(g, ds, is_even, NULL, "filter");
    return vg_dataset_flat_map(g, ds, pair, NULL, "flat_map");
}

/* Imports bytes into a new graph, makes an initializable iterator over dataset op
 * `ds_name` and drains it. */
static void import_and_run(const void *bytes, size_t len, bool meta, const char *ds_name, const double *want, int nw) {
    vg_status st;
    vg_graph *g2 = vg_graph_new();
    if (meta) CHECK_OK(vg_import_meta_graph(g2, bytes, len, NULL, NULL, &st), &st);
    else CHECK_OK(vg_graph_import_graph_def(g2, bytes, len, NULL, &st), &st);
    vg_op *ds = vg_graph_op_by_name(g2, ds_name);
    CHECK(ds != NULL);
    if (!ds) {
        vg_graph_free(g2);
        return;
    }
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g2, vg_out(ds, 0), &init, "it2");
    vg_op *next = vg_iterator_get_next(g2, it, "next2");
    CHECK_OK(vg_graph_status(g2, &st), &st);
    vg_session *s = vg_session_new(g2, NULL, &st);
    double got[64];
    int n = 0;
    CHECK_CODE(drain(s, init, next, got, 64, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, want, nw);
    vg_session_free(s);
    vg_graph_free(g2);
}

static void test_roundtrip(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = pipeline(g);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, "it");
    vg_op *next = vg_iterator_get_next(g, it, "next");
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* 3x for x in 0..9, even ones: 0 6 12 18 24, each v then v + 1 */
    const double want[] = {0, 1, 6, 7, 12, 13, 18, 19, 24, 25};
    vg_session *s = vg_session_new(g, NULL, &st);
    double got[64];
    int n = 0;
    CHECK_CODE(drain(s, init, next, got, 64, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, want, 10);
    vg_session_free(s);

    void *meta = NULL, *gd = NULL;
    size_t ml = 0, gl = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &meta, &ml, &st), &st);
    CHECK_OK(vg_graph_to_graphdef(g, &gd, &gl, &st), &st);
    size_t tl = 0;
    char *txt = graphdef_text(g, &tl);
    if (meta) import_and_run(meta, ml, true, "flat_map", want, 10);
    if (gd) import_and_run(gd, gl, false, "flat_map", want, 10);
    if (txt) {
        /* three functions, the filter's by its predicate attr */
        CHECK_STR_CONTAINS(txt, "name: \"__inference_Dataset_map_map_");
        CHECK_STR_CONTAINS(txt, "name: \"__inference_Dataset_filter_filter_");
        CHECK_STR_CONTAINS(txt, "name: \"__inference_Dataset_flat_map_flat_map_");
        CHECK_STR_CONTAINS(txt, "key: \"predicate\"\n    value {\n      func {");
        /* the capture is the map function's second input argument, named as its placeholder */
        CHECK_STR_CONTAINS(txt, "input_arg {\n        name: \"k\"\n        type: DT_INT64\n      }");
        CHECK_STR_CONTAINS(txt, "input: \"mod:z:0\"");
        /* the flat_map returns a dataset: DT_VARIANT, as TF */
        CHECK_STR_CONTAINS(txt, "output_arg {\n        name: \"identity\"\n        type: DT_VARIANT\n      }");
        import_and_run(txt, tl, false, "flat_map", want, 10);
    }
    /* and once more: the imported graph exports its functions again */
    if (meta) {
        vg_graph *g2 = vg_graph_new();
        CHECK_OK(vg_import_meta_graph(g2, meta, ml, NULL, NULL, &st), &st);
        void *again = NULL;
        size_t al = 0;
        CHECK_OK(vg_graph_to_graphdef(g2, &again, &al, &st), &st);
        if (again) import_and_run(again, al, false, "flat_map", want, 10);
        vg_free(again);
        vg_graph_free(g2);
    }
    vg_free(meta);
    vg_free(gd);
    vg_free(txt);
    vg_graph_free(g);
}

static void test_nested(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_flat_map(g, vg_dataset_range(g, 0, 3, 1, "range"), nested, NULL, "outer");
    CHECK_OK(vg_graph_status(g, &st), &st);
    void *meta = NULL;
    size_t ml = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &meta, &ml, &st), &st);
    /* x = 0: 0 1, x = 1: 1 2, x = 2: 2 3 */
    const double want[] = {0, 1, 1, 2, 2, 3};
    if (meta) import_and_run(meta, ml, true, vg_op_name(ds.op), want, 6);
    /* the inner map's FunctionDef captures the outer function's argument: its
     * MapDataset node_def reads args_0 as its other_argument */
    static const char *const want_text[2] = {
        "name: \"__inference_Dataset_map_inner_map_",
        "op: \"MapDataset\"\n      input: \"inner_range:handle:0\"\n      input: \"args_0\"",
    };
    check_graphdef_text_has(g, want_text, 2);
    vg_free(meta);
    vg_graph_free(g);
}

/* x -> x * x, as TF's Dataset.range(10).map(lambda x: x * x) */
DS_FN1(square, vg_mul(fg, args[0], args[0], "mul"))

/* The FunctionDef TF 1.15 writes for it (tensorflow/core/data/standalone_test.cc's
 * kMapGraphProto) differs only by TF's Identity node on the output: signature
 * {input_arg {args_0 DT_INT64} output_arg {identity DT_INT64}}, node_def mul = Mul(args_0,
 * args_0), ret {identity: the product as "node:z:0"}. */
static void test_golden_fields(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_dataset_map(g, vg_dataset_range(g, 0, 10, 1, "RangeDataset"), square, NULL, "MapDataset");
    CHECK_OK(vg_graph_status(g, &st), &st);
    size_t tl = 0;
    char *txt = graphdef_text(g, &tl);
    const char *want_attr = "  attr {\n    key: \"f\"\n    value {\n      func {\n"
                            "        name: \"__inference_Dataset_map_MapDataset_0\"\n      }\n    }\n  }\n";
    const char *want_lib =
        "library {\n"
        "  function {\n"
        "    signature {\n"
        "      name: \"__inference_Dataset_map_MapDataset_0\"\n"
        "      input_arg {\n        name: \"args_0\"\n        type: DT_INT64\n      }\n"
        "      output_arg {\n        name: \"identity\"\n        type: DT_INT64\n      }\n"
        "    }\n"
        "    node_def {\n"
        "      name: \"mul\"\n      op: \"Mul\"\n      input: \"args_0\"\n      input: \"args_0\"\n"
        "      attr {\n        key: \"T\"\n        value {\n          type: DT_INT64\n        }\n      }\n"
        "    }\n"
        "    ret {\n      key: \"identity\"\n      value: \"mul:z:0\"\n    }\n"
        "  }\n"
        "}\n"
        "versions {\n";
    if (txt) {
        CHECK_STR_CONTAINS(txt, want_attr);
        CHECK_STR_CONTAINS(txt, want_lib);
        /* the function is written once, and the old key form is gone */
        CHECK(strstr(txt, "vigil.dataset_fn") == NULL);
    }
    /* binary: the same library, re-read by the text-to-binary converter and imported */
    void *gd = NULL;
    size_t gl = 0;
    CHECK_OK(vg_graph_to_graphdef(g, &gd, &gl, &st), &st);
    const double want[] = {0, 1, 4, 9, 16, 25, 36, 49, 64, 81};
    if (gd) import_and_run(gd, gl, false, "MapDataset", want, 10);
    vg_free(gd);
    vg_free(txt);
    vg_graph_free(g);
}

/* TF's own GraphDef (tensorflow/core/data/standalone_test.cc kMapGraphProto, written
 * by TF 2's tf.data with the same FunctionDef form as TF 1.15's; its _Retval node, a
 * function-body-only op, left out). */
static const char *k_tf_map_graph =
    "node { name: 'Const/_0' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: 0 } } } }\n"
    "node { name: 'Const/_1' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: 10 } } } }\n"
    "node { name: 'Const/_2' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: 1 } } } }\n"
    "node { name: 'RangeDataset/_3' op: 'RangeDataset' input: 'Const/_0' input: 'Const/_1' input: 'Const/_2'\n"
    "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
    "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n"
    "node { name: 'MapDataset/_4' op: 'MapDataset' input: 'RangeDataset/_3'\n"
    "  attr { key: 'Targuments' value { list {} } }\n"
    "  attr { key: 'f' value { func { name: '__inference_Dataset_map_<lambda>_67' } } }\n"
    "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
    "  attr { key: 'output_types' value { list { type: DT_INT64 } } }\n"
    "  attr { key: 'preserve_cardinality' value { b: false } }\n"
    "  attr { key: 'use_inter_op_parallelism' value { b: true } } }\n"
    "library {\n"
    "  function {\n"
    "    signature { name: '__inference_Dataset_map_<lambda>_67'\n"
    "      input_arg { name: 'args_0' type: DT_INT64 } output_arg { name: 'identity' type: DT_INT64 } }\n"
    "    node_def { name: 'mul' op: 'Mul' input: 'args_0' input: 'args_0' attr { key: 'T' value { type: DT_INT64 } } }\n"
    "    node_def { name: 'Identity' op: 'Identity' input: 'mul:z:0' attr { key: 'T' value { type: DT_INT64 } } }\n"
    "    ret { key: 'identity' value: 'Identity:output:0' }\n"
    "  }\n"
    "}\n"
    "versions { producer: 27 min_consumer: 12 }\n";

static void test_tf_written(void) {
    const double want[] = {0, 1, 4, 9, 16, 25, 36, 49, 64, 81};
    import_and_run(k_tf_map_graph, strlen(k_tf_map_graph), false, "MapDataset/_4", want, 10);
}

static void test_unimplemented(void) {
    vg_status st;
    vg_graph *g;
    /* a MapDataset naming its function by a key the graph does not hold */
    static const char *old =
        "node { name: 'r' op: 'RangeDataset' input: 's' input: 's' input: 's'\n"
        "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
        "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n"
        "node { name: 's' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
        "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: 1 } } } }\n"
        "node { name: 'm' op: 'MapDataset' input: 'r'\n"
        "  attr { key: 'Targuments' value { list {} } }\n"
        "  attr { key: 'f' value { s: 'vigil.dataset_fn:m' } }\n"
        "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
        "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n";
    g = vg_graph_new();
    CHECK_OK(vg_graph_import_graph_def(g, old, strlen(old), NULL, &st), &st);
    void *b = NULL;
    size_t l = 0;
    CHECK_STATUS(vg_graph_to_graphdef(g, &b, &l, &st), &st, VG_UNIMPLEMENTED, "node 'm' (MapDataset)");
    CHECK_STR_CONTAINS(st.msg, "vigil.dataset_fn:m");
    CHECK(b == NULL);
    vg_graph_free(g);

    /* a func attr naming a function the library lacks */
    static const char *missing =
        "node { name: 's' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
        "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: 1 } } } }\n"
        "node { name: 'r' op: 'RangeDataset' input: 's' input: 's' input: 's'\n"
        "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
        "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n"
        "node { name: 'm' op: 'MapDataset' input: 'r'\n"
        "  attr { key: 'f' value { func { name: 'nowhere' } } }\n"
        "  attr { key: 'output_shapes' value { list { shape {} } } }\n"
        "  attr { key: 'output_types' value { list { type: DT_INT64 } } } }\n";
    g = vg_graph_new();
    CHECK_STATUS(vg_graph_import_graph_def(g, missing, strlen(missing), NULL, &st), &st, VG_UNIMPLEMENTED, "nowhere");
    vg_graph_free(g);
}

/* x -> from_tensor_slices([10x, 10x + 1]) */
static vg_code tens(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output t = vg_mul(fg, args[0], vg_const_i64(fg, 10, "ten"), "t");
    vg_output v[2] = {t, vg_add(fg, t, vg_const_i64(fg, 1, "one"), "t1")};
    vg_output packed = vg_pack(fg, v, 2, 0, "pack");
    outs[0] = vg_dataset_from_tensor_slices(fg, &packed, 1, "slices");
    *nouts = 1;
    return VG_OK;
}

/* (state, x) -> state + x */
DS_FN1(sum_fn, vg_add(fg, args[0], args[1], "acc"))

static void test_interleave_reduce(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_dataset_interleave(g, vg_dataset_range(g, 0, 3, 1, NULL), tens, NULL, 2, 1, "interleave");
    vg_output init = vg_const_i64(g, 0, "init");
    vg_output total;
    CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_range(g, 0, 5, 1, NULL), &init, 1, sum_fn, NULL, &total, "reduce"), 1);
    CHECK_OK(vg_graph_status(g, &st), &st);
    void *meta = NULL;
    size_t ml = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &meta, &ml, &st), &st);
    /* cycle 2, block 1: x = 0 and 1 alternate (0 10 1 11), then x = 2 (20 21) */
    const double want[] = {0, 10, 1, 11, 20, 21};
    if (meta) import_and_run(meta, ml, true, "interleave", want, 6);
    if (meta) {
        vg_graph *g2 = vg_graph_new();
        CHECK_OK(vg_import_meta_graph(g2, meta, ml, NULL, NULL, &st), &st);
        vg_op *r = vg_graph_op_by_name(g2, vg_op_name(total.op));
        CHECK(r != NULL);
        if (r) {
            vg_session *s = vg_session_new(g2, NULL, &st);
            vg_tensor *t = NULL;
            CHECK_OK(vg_session_run1(s, vg_out(r, total.index), &t, &st), &st);
            if (t) CHECK_NEAR(vg_tensor_scalar(t), 10.0, 0); /* 0 + 1 + 2 + 3 + 4 */
            vg_tensor_free(t);
            vg_session_free(s);
        }
        vg_graph_free(g2);
    }
    vg_free(meta);
    vg_graph_free(g);
}

/* record -> x + sum(v), x a FixedLenFeature, v a VarLenFeature (ParseSingleExample's
 * sparse and dense outputs named by argument: sparse_values, dense_values) */
static vg_code parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_feature_spec specs[2] = {{"v", VG_INT64, true, vg_shape_make(NULL, 0), {NULL, 0}},
                                {"x", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}}};
    vg_output dense[2] = {{0}};
    vg_sparse_output sparse[2];
    memset(sparse, 0, sizeof sparse);
    vg_parse_single_example(fg, args[0], specs, 2, dense, sparse, "parse");
    outs[0] = vg_add(fg, dense[1], vg_reduce_sum(fg, sparse[0].values, (const int32_t[]){0}, 1, false, "vsum"), "total");
    *nouts = 1;
    return VG_OK;
}

static vg_output example_ds(vg_graph *g, int64_t x, int64_t v0, int64_t v1, vg_status *st) {
    vg_example *ex = vg_example_new();
    int64_t vs[2] = {v0, v1};
    vg_example_add_int64(ex, "x", &x, 1, st);
    vg_example_add_int64(ex, "v", vs, 2, st);
    size_t len = 0;
    const void *bytes = vg_example_serialize(ex, &len, st);
    vg_tensor *t = vg_tensor_new_string_scalar(bytes, len, st);
    vg_output c = vg_const(g, t, NULL);
    vg_tensor_free(t);
    vg_example_free(ex);
    return vg_dataset_from_tensors(g, &c, 1, NULL);
}

static void test_parse_example(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_concatenate(g, example_ds(g, 1, 10, 20, &st), example_ds(g, 2, 5, 6, &st), NULL);
    vg_dataset_map(g, ds, parse_fn, NULL, "parsed");
    CHECK_OK(vg_graph_status(g, &st), &st);
    static const char *const want_text[2] = {
        "input: \"parse:dense_values:0\"",
        "input: \"parse:sparse_values:0\"",
    };
    check_graphdef_text_has(g, want_text, 2);
    void *meta = NULL;
    size_t ml = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &meta, &ml, &st), &st);
    const double want[] = {31, 13}; /* 1 + 10 + 20, 2 + 5 + 6 */
    if (meta) import_and_run(meta, ml, true, "parsed", want, 2);
    vg_free(meta);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_roundtrip);
    RUN_TEST(test_nested);
    RUN_TEST(test_interleave_reduce);
    RUN_TEST(test_parse_example);
    RUN_TEST(test_golden_fields);
    RUN_TEST(test_tf_written);
    RUN_TEST(test_unimplemented);
    TEST_MAIN_END();
}
