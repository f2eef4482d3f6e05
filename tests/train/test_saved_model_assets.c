/* test_saved_model_assets.c - SavedModel assets (builder_impl._maybe_save_assets and
 * loader_impl.get_asset_tensors of TF 1.15):
 *  - vigil writes the graph's asset_filepaths collection as asset_file_def entries and
 *    copies the files into assets/ (a second source with the same basename becomes
 *    "vocab_1.txt"); its loader feeds each asset tensor "<export_dir>/assets/<name>"
 *    when it runs the main op (checked through variables the main op assigns);
 *  - assets.extra files are copied and ignored by the loader;
 *  - TF-written SavedModels: tensorflow/serving's half_plus_two (TF 1.14) lists its
 *    asset "foo.txt" in asset_file_def; TF 1.0's half_plus_three in the older
 *    "saved_model_assets" collection (AnyList of AssetFileDefs). */
#include "io/io.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "vigil/vigil.h"
#include <sys/stat.h>
#include <unistd.h>

#define TDL VG_SRCDIR "/tests/data/tf"

static bool fetch_string_is(vg_saved_model *m, const char *name, const char *want) {
    vg_status st;
    vg_output o = vg_graph_output_by_name(m->graph, name, &st);
    vg_tensor *t = NULL;
    if (!o.op || vg_session_run1(m->session, o, &t, &st)) return false;
    size_t n = 0;
    const char *s = vg_tensor_string(t, 0, &n);
    bool ok = s && n == strlen(want) && memcmp(s, want, n) == 0;
    if (!ok) fprintf(stderr, "%s = '%.*s', want '%s'\n", name, (int)n, s ? s : "", want);
    vg_tensor_free(t);
    return ok;
}

/* saved_model.pb decoded with the wire-format reader against saved_model.proto /
 * meta_graph.proto field numbers: SavedModel.meta_graphs = 2, MetaGraphDef.asset_file_def
 * = 6, AssetFileDef {tensor_info = 1 {name = 1}, filename = 2}. Fills names[i] =
 * "filename=tensor"; returns the count, -1 when malformed. */
static int decode_asset_file_defs(const char *pb_path, char names[][128], int max) {
    uint8_t *data = NULL;
    size_t len = 0;
    vg_status st;
    if (vg__io_read_file(pb_path, &data, &len, &st)) return -1;
    int n = 0;
    bool bad = false;
    vg__pb_reader r, mr, ar, tr;
    vg__pb_field f, mf, af, tf;
    vg__pb_reader_init(&r, data, len);
    while (!bad && vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number != 2 || f.wiretype != VG__PB_LEN) continue;
        vg__pb_reader_init(&mr, f.data, f.len);
        while (!bad && vg__pb_next(&mr, &mf, NULL) == VG_OK) {
            if (mf.number != 6) continue;
            if (mf.wiretype != VG__PB_LEN || n == max) {
                bad = true;
                break;
            }
            char fn[64] = "", tn[64] = "";
            vg__pb_reader_init(&ar, mf.data, mf.len);
            while (vg__pb_next(&ar, &af, NULL) == VG_OK) {
                if (af.number == 2 && af.wiretype == VG__PB_LEN) snprintf(fn, sizeof fn, "%.*s", (int)af.len, af.data);
                if (af.number == 1 && af.wiretype == VG__PB_LEN) {
                    vg__pb_reader_init(&tr, af.data, af.len);
                    while (vg__pb_next(&tr, &tf, NULL) == VG_OK)
                        if (tf.number == 1 && tf.wiretype == VG__PB_LEN)
                            snprintf(tn, sizeof tn, "%.*s", (int)tf.len, tf.data);
                }
            }
            snprintf(names[n++], 128, "%s=%s", fn, tn);
        }
    }
    vg__free(data);
    return bad ? -1 : n;
}

static void test_vigil_assets_roundtrip(void) {
    vg_status st;
    char dir[256], src1[400], src2[500], sub[300], extra[400], exp[400], p[600];
    tu_mkdtemp(dir, sizeof dir, "assets");
    CHECK(dir[0] != 0);
    snprintf(sub, sizeof sub, "%s/other", dir);
    CHECK(mkdir(sub, 0755) == 0);
    snprintf(src1, sizeof src1, "%s/vocab.txt", dir);
    snprintf(src2, sizeof src2, "%s/vocab.txt", sub);
    snprintf(extra, sizeof extra, "%s/tf_serving_warmup_requests", dir);
    tu_write_text(src1, "a\nb\n");
    tu_write_text(src2, "c\n");
    tu_write_text(extra, "warmup");
    snprintf(exp, sizeof exp, "%s/export/1", dir);
    snprintf(p, sizeof p, "%s/export", dir);
    CHECK(mkdir(p, 0755) == 0);

    vg_graph *g = vg_graph_new();
    vg_output a1 = vg_const_string(g, src1, "asset1");
    vg_output a2 = vg_const_string(g, src2, "asset2");
    vg_output a3 = vg_const_string(g, src1, "asset3"); /* the same source again */
    CHECK_OK(vg_graph_add_to_collection(g, "asset_filepaths", a1), &st);
    CHECK_OK(vg_graph_add_to_collection(g, "asset_filepaths", a2), &st);
    CHECK_OK(vg_graph_add_to_collection(g, "asset_filepaths", a3), &st);
    vg_variable v1 = vg_variable_new(g, "path1", vg_const_string(g, "unset", NULL), 0);
    vg_variable v2 = vg_variable_new(g, "path2", vg_const_string(g, "unset", NULL), 0);
    vg_output as1 = vg_assign(g, v1.ref, a1, true, "assign1");
    vg_output as2 = vg_assign(g, v2.ref, a2, true, "assign2");
    vg_op_builder *b = vg_op_builder_new(g, "NoOp", "main_op");
    vg_op_builder_add_control_input(b, as1.op);
    vg_op_builder_add_control_input(b, as2.op);
    vg_op *main_op = vg_op_builder_finish(b);
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver *saver = vg_saver_new(g, NULL, &st);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_OK(vg_saved_model_save(g, s, saver, exp, (const char *[]){"serve"}, 1, NULL, 0, main_op, &st), &st);
    free_session_saver_graph(s, saver, g);
    CHECK_OK(vg_saved_model_add_assets_extra(exp, (const char *[]){extra}, 1, &st), &st);
    CHECK_CODE(vg_saved_model_add_assets_extra(exp, (const char *[]){"/nonexistent/x"}, 1, &st), VG_NOT_FOUND);

    /* files in place */
    snprintf(p, sizeof p, "%s/assets/vocab.txt", exp);
    CHECK(tu_file_holds(p, "a\nb\n"));
    snprintf(p, sizeof p, "%s/assets/vocab_1.txt", exp);
    CHECK(tu_file_holds(p, "c\n"));
    snprintf(p, sizeof p, "%s/assets.extra/tf_serving_warmup_requests", exp);
    CHECK(tu_file_holds(p, "warmup"));

    /* the proto itself, decoded independently of vigil's importer */
    char afd[8][128];
    snprintf(p, sizeof p, "%s/saved_model.pb", exp);
    CHECK_EQ_INT(decode_asset_file_defs(p, afd, 8), 3);
    CHECK(!strcmp(afd[0], "vocab.txt=asset1:0"));
    CHECK(!strcmp(afd[1], "vocab_1.txt=asset2:0"));
    CHECK(!strcmp(afd[2], "vocab.txt=asset3:0"));

    /* load: the main op saw the fed asset paths */
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(exp, (const char *[]){"serve"}, 1, NULL, &m, &st), &st);
    if (m) {
        CHECK_EQ_INT(vg_meta_graph_num_assets(m->meta_graph), 3);
        CHECK(!strcmp(vg_meta_graph_asset_filename(m->meta_graph, 0), "vocab.txt"));
        CHECK(!strcmp(vg_meta_graph_asset_filename(m->meta_graph, 1), "vocab_1.txt"));
        CHECK(!strcmp(vg_meta_graph_asset_filename(m->meta_graph, 2), "vocab.txt"));
        CHECK(!strcmp(vg_op_name(vg_meta_graph_asset_tensor(m->meta_graph, 1).op), "asset2"));
        CHECK(vg_meta_graph_asset_filename(m->meta_graph, 3) == NULL);
        snprintf(p, sizeof p, "%s/assets/vocab.txt", exp);
        CHECK(fetch_string_is(m, "path1:0", p));
        snprintf(p, sizeof p, "%s/assets/vocab_1.txt", exp);
        CHECK(fetch_string_is(m, "path2:0", p));
        vg_saved_model_free(m);
    }

    /* an asset item that is not a string Const */
    g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_STRING, NULL, 0, "x");
    CHECK_OK(vg_graph_add_to_collection(g, "asset_filepaths", x), &st);
    s = vg_session_new(g, NULL, &st);
    snprintf(p, sizeof p, "%s/export/2", dir);
    CHECK_STATUS(vg_saved_model_save(g, s, NULL, p, (const char *[]){"serve"}, 1, NULL, 0, NULL, &st), &st,
                 VG_INVALID_ARGUMENT, "x");
    free_session_graph(s, g);
    tu_rmrf(dir);
}

static void test_tf_assets(void) {
    vg_status st;
    /* asset_file_def (TF 1.14) */
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(TDL "/serving_half_plus_two_cpu_tf1.14", (const char *[]){"serve"}, 1, NULL, &m, &st),
             &st);
    if (m) {
        CHECK_EQ_INT(vg_meta_graph_num_assets(m->meta_graph), 1);
        CHECK(!strcmp(vg_meta_graph_asset_filename(m->meta_graph, 0), "foo.txt"));
        vg_output t = vg_meta_graph_asset_tensor(m->meta_graph, 0);
        CHECK(t.op && vg_output_dtype(t) == VG_STRING);
        /* its legacy_init_op assigned the file name (the generator's
         * filename_tensor.assign("foo.txt")) */
        CHECK(fetch_string_is(m, "filename_tensor:0", "foo.txt"));
        vg_saved_model_free(m);
    }
    /* the "saved_model_assets" collection (TF 1.0) */
    vg_graph *g = vg_graph_new();
    vg_meta_graph *mg = NULL;
    vg_meta_import_options o = {0};
    o.omit_saver = true;
    CHECK_OK(vg_import_saved_model_graph(g, TDL "/serving_half_plus_three_tf1.0/saved_model.pb", NULL, 0, &o, &mg, &st),
             &st);
    if (mg && vg_meta_graph_num_assets(mg) > 0) {
        CHECK(!strcmp(vg_meta_graph_asset_filename(mg, 0), "foo.txt"));
        CHECK(vg_meta_graph_asset_tensor(mg, 0).op != NULL);
    } else {
        fprintf(stderr, "note: half_plus_three_tf1.0 lists no assets\n");
    }
    vg_meta_graph_free(mg);
    vg_graph_free(g);
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    CHECK(a && b);
    char buf[4096];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0) CHECK(fwrite(buf, 1, n, b) == n);
    if (a) fclose(a);
    if (b) fclose(b);
}

/* TF 0.12's half_plus_two written as text (tensorflow/tensorflow
 * cc/saved_model/testdata/half_plus_two_pbtxt, variables not in the repo): its
 * sharded saver writes the variables from their initial values, then the export
 * directory loads as a SavedModel (saved_model.pbtxt, legacy Variable ops, the
 * text any_list "saved_model_assets" collection) and serves y = 0.5 x + 2. */
static void test_tf_pbtxt_saved_model(void) {
    vg_status st;
    char dir[256], p[600], pre[600];
    tu_mkdtemp(dir, sizeof dir, "pbtxtsm");
    snprintf(p, sizeof p, "%s/assets", dir);
    CHECK(mkdir(p, 0755) == 0);
    copy_file(TDL "/half_plus_two_pbtxt_tf0.12/saved_model.pbtxt", (snprintf(p, sizeof p, "%s/saved_model.pbtxt", dir), p));
    copy_file(TDL "/half_plus_two_pbtxt_tf0.12/assets/foo.txt", (snprintf(p, sizeof p, "%s/assets/foo.txt", dir), p));
    /* variables/variables through the graph's own save ops */
    vg_graph *g = vg_graph_new();
    vg_meta_graph *mg = NULL;
    snprintf(p, sizeof p, "%s/saved_model.pbtxt", dir);
    CHECK_OK(vg_import_saved_model_graph(g, p, (const char *[]){"serve"}, 1, NULL, &mg, &st), &st);
    CHECK_EQ_INT(vg_meta_graph_num_assets(mg), 1);
    CHECK(vg_meta_graph_asset_filename(mg, 0) && !strcmp(vg_meta_graph_asset_filename(mg, 0), "foo.txt"));
    CHECK(!strcmp(vg_meta_graph_tensorflow_version(mg), "0.12.head"));
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_op *init = vg_graph_op_by_name(g, "init");
    CHECK(s && init);
    if (s && init) CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    snprintf(pre, sizeof pre, "%s/variables/variables", dir);
    vg_output fname = vg_graph_output_by_name(g, "save/Const:0", &st), save = vg_graph_output_by_name(g, "save/Identity:0", &st);
    vg_tensor *fv = vg_tensor_new_string_scalar(pre, strlen(pre), &st), *ret = NULL;
    CHECK_OK(vg_session_run(s, NULL, &fname, &fv, 1, &save, &ret, 1, NULL, 0, NULL, &st), &st);
    vg_tensor_free(fv);
    vg_tensor_free(ret);
    vg_session_free(s);
    vg_meta_graph_free(mg);
    vg_graph_free(g);
    snprintf(p, sizeof p, "%s/variables/variables.index", dir);
    CHECK(access(p, F_OK) == 0);
    /* load it as TF Serving would */
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(dir, (const char *[]){"serve"}, 1, NULL, &m, &st), &st);
    if (m) {
        float xv[2] = {1, 6};
        vg_tensor *xt = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){2, 1}, 2, xv, sizeof xv, &st), *yt = NULL;
        CHECK_OK(vg_saved_model_run(m, "serving_default", (const char *[]){"x"}, &xt, 1, (const char *[]){"y"}, &yt, 1,
                                    &st),
                 &st);
        CHECK(yt && vg_tensor_num_elements(yt) == 2);
        if (yt) {
            CHECK_NEAR(((const float *)vg_tensor_data(yt))[0], 2.5, 0);
            CHECK_NEAR(((const float *)vg_tensor_data(yt))[1], 5.0, 0);
        }
        CHECK(fetch_string_is(m, "filename_tensor:0", "foo.txt")); /* legacy_init_op ran */
        vg_tensor_free(xt);
        vg_tensor_free(yt);
        vg_saved_model_free(m);
    }
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_vigil_assets_roundtrip);
    RUN_TEST(test_tf_assets);
    RUN_TEST(test_tf_pbtxt_saved_model);
    TEST_MAIN_END();
}
