/* test_import_meta_graph.c - vg_import_meta_graph (TF's import_meta_graph, mirrors
 * meta_graph_test.py's export -> import -> export round trip and saver_test.py's
 * testImportIntoNamescope / restore after import), and SavedModels written by TF
 * (tensorflow/serving testdata): matrix_half_plus_two (y = 0.5 x + 2), counter
 * (restored variable, four signatures), half_plus_two (ParseExample: rejected with the
 * list of missing op types). */
#include "test_util.h"
#include "kernels_fixture.h"
#include "train_fixture.h"
#include "graph_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <unistd.h>

#define TDL VG_SRCDIR "/tests/data/tf"

/* serving/batching/testdata/matrix_half_plus_two: y = 0.5 * x + 2, x [-1,3,3]. */
static void test_saved_model_matrix_half_plus_two(void) {
    vg_status st;
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(TDL "/serving_matrix_half_plus_two_tf1.2", (const char *[]){"serve"}, 1, NULL, &m,
                                 &st),
             &st);
    if (!m) return;
    CHECK_EQ_INT(vg_graph_num_ops(m->graph), 6);
    CHECK(strcmp(vg_meta_graph_tensorflow_version(m->meta_graph), "1.2.0-rc2") == 0);
    float xv[18];
    for (int i = 0; i < 18; i++) xv[i] = (float)i - 4.5f;
    vg_tensor *x = f32(xv, (int64_t[]){2, 3, 3}, 3), *y = NULL;
    CHECK_OK(vg_saved_model_run(m, "serving_default", (const char *[]){"x"}, &x, 1, (const char *[]){"y"}, &y, 1, &st),
             &st);
    if (y) {
        CHECK_EQ_INT(vg_tensor_num_elements(y), 18);
        for (int i = 0; i < 18; i++) CHECK_NEAR(((const float *)vg_tensor_data(y))[i], 0.5 * xv[i] + 2, 1e-7);
    }
    vg_tensor_free(y);
    /* unknown signature / key */
    CHECK_CODE(vg_saved_model_run(m, "nope", NULL, NULL, 0, NULL, NULL, 0, &st), VG_NOT_FOUND);
    CHECK_CODE(vg_saved_model_run(m, "serving_default", (const char *[]){"z"}, &x, 1, NULL, NULL, 0, &st),
               VG_NOT_FOUND);
    CHECK_STR_CONTAINS(st.msg, "'z'");
    vg_tensor_free(x);
    vg_saved_model_free(m);
    /* wrong tags: NOT_FOUND listing the tag sets present */
    CHECK_CODE(vg_saved_model_load(TDL "/serving_matrix_half_plus_two_tf1.2", (const char *[]){"train"}, 1, NULL, &m,
                                   &st),
               VG_NOT_FOUND);
    CHECK_STR_CONTAINS(st.msg, "[serve]");
}

/* serving testdata saved_model_counter (TF 1.5): counter restored from the bundle
 * (0.0), then the signatures as saved_model_counter.py defines them. */
static void test_saved_model_counter(void) {
    vg_status st;
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(TDL "/serving_counter_tf1.5", (const char *[]){"serve"}, 1, NULL, &m, &st), &st);
    if (!m) return;
    vg_tensor *out = NULL;
    /* readable without running an initializer: the restore set it */
    CHECK_OK(vg_saved_model_run(m, "get_counter", NULL, NULL, 0, (const char *[]){"output"}, &out, 1, &st), &st);
    if (out) CHECK_NEAR(vg_tensor_scalar(out), 0.0, 0);
    vg_tensor_free(out);
    for (int i = 1; i <= 2; i++) {
        CHECK_OK(vg_saved_model_run(m, "incr_counter", NULL, NULL, 0, (const char *[]){"output"}, &out, 1, &st), &st);
        if (out) CHECK_NEAR(vg_tensor_scalar(out), i, 0);
        vg_tensor_free(out);
    }
    vg_tensor *d = f32((float[]){3.5f}, NULL, 0);
    CHECK_OK(vg_saved_model_run(m, "incr_counter_by", (const char *[]){"delta"}, &d, 1, (const char *[]){"output"},
                                &out, 1, &st),
             &st);
    if (out) CHECK_NEAR(vg_tensor_scalar(out), 5.5, 0);
    vg_tensor_free(out);
    vg_tensor_free(d);
    CHECK_OK(vg_saved_model_run(m, "reset_counter", NULL, NULL, 0, (const char *[]){"output"}, &out, 1, &st), &st);
    if (out) CHECK_NEAR(vg_tensor_scalar(out), 0.0, 0);
    vg_tensor_free(out);
    vg_saved_model_free(m);
}

/* serving testdata half_plus_two (TF 1.14) / half_plus_three (TF 1.0): y = 0.5 x + 2
 * (or + 3) through serving_default. */
static void test_saved_model_half_plus_two(void) {
    const char *dirs[] = {TDL "/serving_half_plus_two_cpu_tf1.14", TDL "/serving_half_plus_three_tf1.0"};
    for (int i = 0; i < 2; i++) {
        vg_status st;
        vg_saved_model *m = NULL;
        CHECK_OK(vg_saved_model_load(dirs[i], (const char *[]){"serve"}, 1, NULL, &m, &st), &st);
        if (!m) continue;
        float xv[] = {1, 2, 5}; /* x is [?, 1] */
        vg_tensor *x = f32(xv, (int64_t[]){3, 1}, 2), *y = NULL;
        CHECK_OK(vg_saved_model_run(m, "serving_default", (const char *[]){"x"}, &x, 1, (const char *[]){"y"}, &y, 1,
                                    &st),
                 &st);
        for (int j = 0; y && j < 3; j++)
            CHECK_NEAR(((const float *)vg_tensor_data(y))[j], 0.5 * xv[j] + (i ? 3 : 2), 1e-6);
        vg_tensor_free(x);
        vg_tensor_free(y);
        vg_saved_model_free(m);
    }
}

/* TF 2.14's saved_model_half_plus_two (tensorflow/serving testdata): tf.functions in
 * the GraphDef's library (StatefulPartitionedCall, inlined at import), resource
 * variables, no collections (its own saver function restores a = 0.5, b = 2, c = 3),
 * the "__saved_model_init_op" signature, and ParseExampleV2 in the Example signatures:
 * serving_default y = a x + b; regress_x_to_y reads tf.Examples {x: [float]}: a x + b;
 * regress_x_to_y2: a x + c. */
static void test_saved_model_tf2(void) {
    vg_status st;
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(TDL "/serving_half_plus_two_tf2_cpu", (const char *[]){"serve"}, 1, NULL, &m, &st),
             &st);
    if (!m) return;
    float xv[] = {3};
    vg_tensor *x = f32(xv, (int64_t[]){1}, 1), *y = NULL;
    CHECK_OK(vg_saved_model_run(m, "serving_default", (const char *[]){"x"}, &x, 1, (const char *[]){"y"}, &y, 1, &st),
             &st);
    CHECK(y && vg_tensor_num_elements(y) == 1 && ((const float *)vg_tensor_data(y))[0] == 3.5f);
    vg_tensor_free(x);
    vg_tensor_free(y);
    const char *sigs[] = {"regress_x_to_y", "regress_x_to_y2"};
    const float add[] = {2, 3};
    for (int i = 0; i < 2; i++) {
        vg_tensor *ex = vg_tensor_new(VG_STRING, (int64_t[]){2}, 1, &st);
        for (int j = 0; j < 2; j++) {
            vg_example *e = vg_example_new();
            float v = 1.0f + 4.0f * (float)j;
            vg_example_add_float(e, "x", &v, 1, &st);
            size_t len;
            const void *b = vg_example_serialize(e, &len, &st);
            vg_tensor_set_string(ex, j, b, len, &st);
            vg_example_free(e);
        }
        vg_tensor *out = NULL;
        CHECK_OK(vg_saved_model_run(m, sigs[i], (const char *[]){"inputs"}, &ex, 1, (const char *[]){"outputs"}, &out,
                                    1, &st),
                 &st);
        CHECK(out && vg_tensor_num_elements(out) == 2);
        for (int j = 0; out && j < 2; j++)
            CHECK_NEAR(((const float *)vg_tensor_data(out))[j], 0.5 * (1.0 + 4.0 * j) + add[i], 1e-6);
        vg_tensor_free(ex);
        vg_tensor_free(out);
    }
    vg_saved_model_free(m);
}

/* A training graph with variables, global step, train_op, summaries, losses, a queue
 * runner and a saver: export -> import -> export gives identical MetaGraphDef bytes. */
static vg_graph *build_model(vg_saver **saver_out) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    linreg_model lr = linreg_model_build(g, 3);
    vg_graph_add_to_collection(g, VG_LOSSES, lr.loss);
    vg_summary_scalar(g, "loss", lr.loss);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    vg_op *train = vg_optimizer_minimize(opt, g, lr.loss, NULL, 0, lr.gs, "train"); /* into train_op */
    vg_optimizer_free(opt);
    CHECK(train != NULL);
    vg_output q = vg_fifo_queue(g, (vg_dtype[]){VG_FLOAT}, NULL, 1, 10, "fifo");
    vg_op *enq = vg_queue_enqueue(g, q, &lr.loss, 1, "enq");
    vg_add_queue_runner(g, q, &enq, 1);
    *saver_out = vg_saver_new(g, NULL, &st);
    CHECK_OK(vg_graph_status(g, &st), &st);
    return g;
}

static void tensor_name(vg_output o, char *buf, size_t n) { snprintf(buf, n, "%s:%d", vg_op_name(o.op), o.index); }

static void test_meta_graph_round_trip(void) {
    vg_saver *saver = NULL;
    vg_graph *g = build_model(&saver);
    vg_status st;
    char fn[256], sv[256];
    tensor_name(vg_saver_filename_tensor(saver), fn, sizeof fn);
    tensor_name(vg_saver_save_tensor(saver), sv, sizeof sv);
    vg_saver_def sd = {fn, sv, vg_op_name(vg_saver_restore_op(saver)), 5, false, 10000.0f};
    void *m1 = NULL, *m2 = NULL;
    size_t n1 = 0, n2 = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, &sd, &m1, &n1, &st), &st);

    vg_graph *h = vg_graph_new();
    vg_meta_graph *mg = NULL;
    CHECK_OK(vg_import_meta_graph(h, m1, n1, NULL, &mg, &st), &st);
    const vg_saver_def *isd = vg_meta_graph_saver_def(mg);
    CHECK(isd != NULL);
    if (isd) {
        CHECK(strcmp(isd->filename_tensor_name, fn) == 0);
        CHECK(strcmp(isd->restore_op_name, "save/restore_all") == 0);
        CHECK_EQ_INT(isd->max_to_keep, 5);
    }
    CHECK_EQ_INT(vg_graph_num_ops(h), vg_graph_num_ops(g));
    CHECK_EQ_INT(vg_graph_num_queue_runners(h), 1);
    int nv = 0, nt = 0, ntr = 0;
    vg_graph_collection(h, VG_GLOBAL_VARIABLES, &nv);
    vg_graph_collection(h, VG_TRAINABLE_VARIABLES, &nt);
    const vg_output *tr = vg_graph_collection(h, VG_TRAIN_OP, &ntr);
    CHECK_EQ_INT(nv, 3);
    CHECK_EQ_INT(nt, 2);
    CHECK_EQ_INT(ntr, 1);
    CHECK(vg_get_global_step(h).op != NULL);
    CHECK_OK(vg_graph_to_meta_graph(h, isd, &m2, &n2, &st), &st);
    CHECK_EQ_INT(n2, n1);
    CHECK(m2 && n1 == n2 && memcmp(m1, m2, n1) == 0);

    /* the imported graph trains, and a checkpoint of the original restores into it */
    char dir[64];
    CHECK(tu_mkdtemp(dir, sizeof dir, "import_mg")[0] != 0);
    char prefix[300], saved[400];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
    vg_session *s = initialized_session(g);
    CHECK_OK(vg_saver_save(saver, s, prefix, 7, saved, sizeof saved, &st), &st);
    vg_tensor *w0 = NULL, *w1 = NULL;
    CHECK_OK(vg_session_run1(s, vg_graph_output_by_name(g, "w:0", &st), &w0, &st), &st);

    vg_saver *hs = vg_saver_new(
        h,
        &(vg_saver_options){
            .max_to_keep = 5, .keep_checkpoint_every_n_hours = 10000.0, .no_meta_graph = true, .name = "restore"},
        &st);
    vg_session *s2 = vg_session_new(h, NULL, &st);
    CHECK(hs != NULL);
    CHECK_OK(vg_saver_restore(hs, s2, saved, &st), &st);
    CHECK_OK(vg_session_run1(s2, vg_graph_output_by_name(h, "w:0", &st), &w1, &st), &st);
    if (w0 && w1) CHECK_NEAR(vg_tensor_scalar(w1), vg_tensor_scalar(w0), 0);
    vg_tensor *gstep = NULL;
    CHECK_OK(vg_session_run1(s2, vg_get_global_step(h), &gstep, &st), &st);
    if (gstep) CHECK_EQ_INT(*(const int64_t *)vg_tensor_data(gstep), 0);
    vg_tensor_free(gstep);
    /* one training step through the imported train_op bumps the global step */
    vg_output feeds[2] = {vg_graph_output_by_name(h, "x:0", &st), vg_graph_output_by_name(h, "y:0", &st)};
    vg_tensor *fv[2] = {f32((float[]){1, 2}, (int64_t[]){2, 1}, 2), f32((float[]){3, 5}, (int64_t[]){2, 1}, 2)};
    vg_op *top = tr ? tr[0].op : NULL;
    CHECK_OK(vg_session_run(s2, NULL, feeds, fv, 2, NULL, NULL, 0, &top, 1, NULL, &st), &st);
    gstep = NULL;
    CHECK_OK(vg_session_run1(s2, vg_get_global_step(h), &gstep, &st), &st);
    if (gstep) CHECK_EQ_INT(*(const int64_t *)vg_tensor_data(gstep), 1);
    vg_tensor_free(gstep);
    vg_tensor_free(fv[0]);
    vg_tensor_free(fv[1]);
    vg_tensor_free(w0);
    vg_tensor_free(w1);
    vg_saver_free(hs);
    vg_session_free(s2);
    vg_session_free(s);
    CHECK(tu_rmrf(dir) == 0);

    /* import_scope and clear_devices */
    vg_graph *k = vg_graph_new();
    vg_meta_graph *mg2 = NULL;
    vg_meta_import_options o = {0};
    o.import_scope = "imported";
    CHECK_OK(vg_import_meta_graph(k, m1, n1, &o, &mg2, &st), &st);
    CHECK(vg_graph_op_by_name(k, "imported/w") != NULL);
    CHECK(vg_meta_graph_saver_def(mg2) &&
          strcmp(vg_meta_graph_saver_def(mg2)->restore_op_name, "imported/save/restore_all") == 0);
    vg_graph_collection(k, VG_GLOBAL_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 3);
    /* truncated MetaGraphDef: DATA_LOSS naming the source */
    vg_graph *t = vg_graph_new();
    o.import_scope = NULL;
    o.source = "model.meta";
    CHECK_STATUS(vg_import_meta_graph(t, m1, n1 - 3, &o, NULL, &st), &st, VG_DATA_LOSS, "model.meta");
    vg_graph_free(t);
    vg_meta_graph_free(mg2);
    vg_graph_free(k);

    vg_free(m1);
    vg_free(m2);
    vg_meta_graph_free(mg);
    vg_graph_free(h);
    vg_saver_free(saver);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_saved_model_matrix_half_plus_two);
    RUN_TEST(test_saved_model_counter);
    RUN_TEST(test_saved_model_half_plus_two);
    RUN_TEST(test_saved_model_tf2);
    RUN_TEST(test_meta_graph_round_trip);
    TEST_MAIN_END();
}
