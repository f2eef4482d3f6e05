/* test_import_tf_training.c - TF1 training graphs written by TensorFlow (tensorflow/rust
 * examples), imported and trained by vigil:
 *  - examples/regression/model.pb (regression.py: legacy Variable, Div; w ~ U[-1,1],
 *    b = 0; GradientDescent(0.5) "train"; "init"): regression.rs feeds 100 points of
 *    y = 0.1 x + 0.3 and checks |w - 0.1| < 1e-3 and |b - 0.3| < 1e-3 after 201 steps;
 *  - examples/regression_checkpoint/model.pb (same model, VariableV2 and a TF Saver):
 *    trained, saved through its own save/ ops, restored through save/restore_all.
 * Until vigil has every op type these graphs use, the import must fail with
 * UNIMPLEMENTED naming each missing type (the "runs or lists all missing"). */
#include "test_util.h"
#include "graph_fixture.h"
#include "vigil/vigil.h"
#include <unistd.h>

#define TDL VG_SRCDIR "/tests/data/tf"

static uint32_t lcg = 12345u;
static double urand(void) {
    lcg = lcg * 1664525u + 1013904223u;
    return (lcg >> 8) / 16777216.0;
}

/* Imports path; returns false (after checking the UNIMPLEMENTED contract) when vigil
 * lacks op types it uses. */
static bool import_or_missing(vg_graph *g, const char *path) {
    vg_status st;
    vg_code c = vg_graph_import_graph_def_file(g, path, NULL, &st);
    if (c == VG_UNIMPLEMENTED) {
        FILE *f = fopen(path, "rb");
        static uint8_t buf[1 << 15];
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        check_missing_op_contract(buf, n, VG_IMPORT_BINARY, path);
        return false;
    }
    CHECK_OK(c, &st);
    return c == VG_OK;
}

static void fill_data(vg_tensor **x, vg_tensor **y) {
    vg_status st;
    int64_t n = 100;
    *x = vg_tensor_new(VG_FLOAT, &n, 1, &st);
    *y = vg_tensor_new(VG_FLOAT, &n, 1, &st);
    float *xv = vg_tensor_data(*x), *yv = vg_tensor_data(*y);
    for (int i = 0; i < 100; i++) {
        xv[i] = (float)(2.0 * urand() - 1.0);
        yv[i] = 0.1f * xv[i] + 0.3f;
    }
}

static double fetch_scalar(vg_session *s, vg_graph *g, const char *name) {
    vg_status st;
    vg_tensor *t = NULL;
    vg_output o = vg_graph_output_by_name(g, name, &st);
    CHECK_OK(vg_session_run1(s, o, &t, &st), &st);
    double v = t ? vg_tensor_scalar(t) : NAN;
    vg_tensor_free(t);
    return v;
}

/* Runs init and 201 train steps as regression.rs does; checks the coefficients. */
static vg_session *train(vg_graph *g) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (!s) return NULL;
    vg_tensor *x, *y;
    fill_data(&x, &y);
    vg_output feeds[2] = {vg_graph_output_by_name(g, "x", &st), vg_graph_output_by_name(g, "y", &st)};
    vg_tensor *fv[2] = {x, y};
    vg_op *init = vg_graph_op_by_name(g, "init"), *tr = vg_graph_op_by_name(g, "train");
    CHECK(init && tr);
    CHECK_OK(vg_session_run(s, NULL, feeds, fv, 2, NULL, NULL, 0, &init, 1, NULL, &st), &st);
    double w0 = fetch_scalar(s, g, "w");
    CHECK(w0 >= -1.0 && w0 < 1.0);
    CHECK_NEAR(fetch_scalar(s, g, "b"), 0.0, 0);
    for (int i = 0; i < 201; i++)
        if (vg_session_run(s, NULL, feeds, fv, 2, NULL, NULL, 0, &tr, 1, NULL, &st) != VG_OK) {
            CHECK_OK(st.code, &st);
            break;
        }
    CHECK(fabs(fetch_scalar(s, g, "w") - 0.1) < 1e-3);
    CHECK(fabs(fetch_scalar(s, g, "b") - 0.3) < 1e-3);
    vg_tensor_free(x);
    vg_tensor_free(y);
    return s;
}

static void test_rust_regression_trains(void) {
    vg_graph *g = vg_graph_new();
    if (import_or_missing(g, TDL "/graphs/rust_regression_tf1.pb")) {
        CHECK(strcmp(vg_op_type(vg_graph_op_by_name(g, "w")), "VariableV2") == 0); /* legacy Variable */
        vg_session_free(train(g));
    }
    vg_graph_free(g);
}

/* The TF Saver's own ops: save through save/control_dependency with save/Const fed,
 * restore through save/restore_all in a fresh session. */
static void test_rust_regression_checkpoint_save_restore(void) {
    vg_graph *g = vg_graph_new();
    if (!import_or_missing(g, TDL "/graphs/rust_regression_checkpoint_tf1.pb")) {
        vg_graph_free(g);
        return;
    }
    vg_status st;
    vg_session *s = train(g);
    char dir[64];
    CHECK(tu_mkdtemp(dir, sizeof dir, "import_ckpt")[0] != 0);
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    vg_tensor *fname = vg_tensor_new_string_scalar(prefix, strlen(prefix), &st);
    vg_output fn = vg_graph_output_by_name(g, "save/Const", &st);
    vg_output save = vg_graph_output_by_name(g, "save/control_dependency", &st);
    vg_tensor *saved = NULL;
    CHECK_OK(vg_session_run(s, NULL, &fn, &fname, 1, &save, &saved, 1, NULL, 0, NULL, &st), &st);
    vg_tensor_free(saved);
    double w = s ? fetch_scalar(s, g, "w") : 0, b = s ? fetch_scalar(s, g, "b") : 0;
    vg_session *s2 = vg_session_new(g, NULL, &st);
    vg_op *restore = vg_graph_op_by_name(g, "save/restore_all");
    CHECK_OK(vg_session_run(s2, NULL, &fn, &fname, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
    CHECK_NEAR(fetch_scalar(s2, g, "w"), w, 0);
    CHECK_NEAR(fetch_scalar(s2, g, "b"), b, 0);
    /* and vigil's checkpoint reader sees TF's names */
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, &st);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 2);
        vg_tensor *wt = vg_checkpoint_reader_read(r, "w", &st);
        CHECK(wt && fabs(vg_tensor_scalar(wt) - w) == 0);
        vg_tensor_free(wt);
        vg_checkpoint_reader_free(r);
    }
    vg_tensor_free(fname);
    vg_session_free(s2);
    vg_session_free(s);
    CHECK(tu_rmrf(dir) == 0);
    vg_graph_free(g);
}

/* test_resources/regression-model (TF 1.2.1 SavedModel, tags [train, serve]): the
 * variables restore to the bundle's values (b = 0, w = -0.8578622341156006), the
 * regress signature computes out = w x + b, and train_op trains it to y = 0.1 x + 0.3. */
static void test_rust_regression_saved_model(void) {
    vg_status st;
    vg_saved_model *m = NULL;
    const char *dir = TDL "/rust_regression_model_tf1.2";
    vg_code c = vg_saved_model_load(dir, (const char *[]){"serve", "train"}, 2, NULL, &m, &st);
    if (c == VG_UNIMPLEMENTED) {
        fprintf(stderr, "note: %s not runnable yet: %s\n", dir, st.msg);
        CHECK_STR_CONTAINS(st.msg, "op type(s) vigil cannot run");
        return;
    }
    CHECK_OK(c, &st);
    if (!m) return;
    CHECK_NEAR(fetch_scalar(m->session, m->graph, "w"), -0.8578622341156006, 0);
    CHECK_NEAR(fetch_scalar(m->session, m->graph, "b"), 0.0, 0);
    int sig = vg_meta_graph_find_signature(m->meta_graph, "tensorflow/serving/regress");
    CHECK(sig >= 0);
    vg_tensor *x, *y, *out = NULL;
    fill_data(&x, &y);
    CHECK_OK(vg_saved_model_run(m, "tensorflow/serving/regress", (const char *[]){"x"}, &x, 1,
                                (const char *[]){"out"}, &out, 1, &st),
             &st);
    if (out)
        for (int i = 0; i < 100; i++)
            CHECK_NEAR(((const float *)vg_tensor_data(out))[i], -0.8578622341156006 * ((const float *)vg_tensor_data(x))[i],
                       1e-6);
    vg_tensor_free(out);
    int ntr = 0;
    const vg_output *tr = vg_graph_collection(m->graph, VG_TRAIN_OP, &ntr);
    CHECK_EQ_INT(ntr, 1);
    vg_output feeds[2] = {vg_graph_output_by_name(m->graph, "x", &st), vg_graph_output_by_name(m->graph, "y", &st)};
    vg_tensor *fv[2] = {x, y};
    vg_op *top = ntr ? tr[0].op : NULL;
    for (int i = 0; top && i < 201; i++)
        if (vg_session_run(m->session, NULL, feeds, fv, 2, NULL, NULL, 0, &top, 1, NULL, &st) != VG_OK) {
            CHECK_OK(st.code, &st);
            break;
        }
    CHECK(fabs(fetch_scalar(m->session, m->graph, "w") - 0.1) < 1e-3);
    CHECK(fabs(fetch_scalar(m->session, m->graph, "b") - 0.3) < 1e-3);
    vg_tensor_free(x);
    vg_tensor_free(y);
    vg_saved_model_free(m);
}

int main(void) {
    RUN_TEST(test_rust_regression_saved_model);
    RUN_TEST(test_rust_regression_trains);
    RUN_TEST(test_rust_regression_checkpoint_save_restore);
    TEST_MAIN_END();
}
