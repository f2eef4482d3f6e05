/* test_saved_model_save.c - vg_saved_model_save (SavedModelBuilder): half_plus_two as
 * tensorflow/serving's saved_model_half_plus_two.py builds it (variables a = 0.5,
 * b = 2.0, y = a x + b), written, loaded back by vg_saved_model_load, and checked
 * structurally against saved_model.proto / meta_graph.proto field numbers with the
 * wire-format reader. */
#include "io/io.h"
#include "test_util.h"
#include "train_fixture.h"
#include "vigil/vigil.h"
#include <unistd.h>

static void test_save_load_half_plus_two(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "x");
    vg_variable a = vg_variable_new(g, "a", vg_const_f32(g, 0.5f, NULL), VG_VAR_TRAINABLE);
    vg_variable b = vg_variable_new(g, "b", vg_const_f32(g, 2.0f, NULL), VG_VAR_TRAINABLE);
    vg_output y = vg_add(g, vg_mul(g, a.read, x, NULL), b.read, "y");
    vg_op *init = vg_global_variables_initializer(g);
    vg_op *main_op = vg_no_op(g, "main_op");
    vg_saver *saver = vg_saver_new(g, NULL, &st); /* before the session */
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    char dir[64];
    CHECK(tu_mkdtemp(dir, sizeof dir, "sm_save")[0] != 0);
    char exp[300];
    snprintf(exp, sizeof exp, "%s/00000123", dir);
    vg_signature_tensor in = {"x", x}, out = {"y", y};
    vg_signature_def sig = {"serving_default", NULL, &in, 1, &out, 1};
    CHECK_OK(vg_saved_model_save(g, s, saver, exp, (const char *[]){"serve"}, 1, &sig, 1, main_op, &st), &st);
    CHECK_CODE(vg_saved_model_save(g, s, saver, exp, (const char *[]){"serve"}, 1, &sig, 1, NULL, &st), VG_ALREADY_EXISTS);
    free_session_saver_graph(s, saver, g);

    /* load it back and run the signature */
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(exp, (const char *[]){"serve"}, 1, NULL, &m, &st), &st);
    if (m) {
        float xv[] = {1, 2, 5};
        int64_t d = 3;
        vg_tensor *xt = vg_tensor_new_copy(VG_FLOAT, &d, 1, xv, 12, &st), *yt = NULL;
        CHECK_OK(vg_saved_model_run(m, "serving_default", (const char *[]){"x"}, &xt, 1, (const char *[]){"y"}, &yt, 1,
                                    &st),
                 &st);
        for (int i = 0; yt && i < 3; i++) CHECK_NEAR(((const float *)vg_tensor_data(yt))[i], 0.5 * xv[i] + 2, 0);
        vg_tensor_free(xt);
        vg_tensor_free(yt);
        vg_saved_model_free(m);
    }

    /* structure: SavedModel {1: 1, 2: MetaGraphDef {1: {4: "serve"}, 2: graph, 3: saver,
     * 4: collections incl. saved_model_main_op, 5: {1: "serving_default", 2: SignatureDef
     * {1: {1: "x", 2: {1: "x:0", 2: DT_FLOAT}}, 2: {1: "y", ...}, 3: method}}}} */
    char path[400];
    snprintf(path, sizeof path, "%s/saved_model.pb", exp);
    uint8_t *data = NULL;
    size_t len = 0;
    CHECK_OK(vg__io_read_file(path, &data, &len, &st), &st);
    vg__pb_reader r, mr, er, sr, ir, tr;
    vg__pb_field f, mf, ef, sf, inf, tf;
    int schema = 0, nmeta = 0, ntags = 0, nsig = 0, have_saver = 0, have_main = 0, have_graph = 0;
    vg__pb_reader_init(&r, data, len);
    while (vg__pb_next(&r, &f, &st) == VG_OK) {
        if (f.number == 1) schema = (int)f.u;
        if (f.number != 2) continue;
        nmeta++;
        vg__pb_reader_init(&mr, f.data, f.len);
        while (vg__pb_next(&mr, &mf, &st) == VG_OK) {
            if (mf.number == 1) {
                vg__pb_reader_init(&er, mf.data, mf.len);
                while (vg__pb_next(&er, &ef, &st) == VG_OK)
                    if (ef.number == 4 && ef.len == 5 && memcmp(ef.data, "serve", 5) == 0) ntags++;
            } else if (mf.number == 2) {
                have_graph = mf.len > 100;
            } else if (mf.number == 3) {
                have_saver = 1;
            } else if (mf.number == 4) {
                vg__pb_reader_init(&er, mf.data, mf.len);
                while (vg__pb_next(&er, &ef, &st) == VG_OK)
                    if (ef.number == 1 && ef.len == 19 && memcmp(ef.data, "saved_model_main_op", 19) == 0) have_main = 1;
            } else if (mf.number == 5) {
                vg__pb_reader_init(&er, mf.data, mf.len);
                while (vg__pb_next(&er, &ef, &st) == VG_OK) {
                    if (ef.number == 1) CHECK(ef.len == 15 && memcmp(ef.data, "serving_default", 15) == 0);
                    if (ef.number != 2) continue;
                    nsig++;
                    vg__pb_reader_init(&sr, ef.data, ef.len);
                    while (vg__pb_next(&sr, &sf, &st) == VG_OK) {
                        if (sf.number == 3)
                            CHECK(sf.len == 26 && memcmp(sf.data, "tensorflow/serving/predict", 26) == 0);
                        if (sf.number != 1) continue;
                        vg__pb_reader_init(&ir, sf.data, sf.len);
                        while (vg__pb_next(&ir, &inf, &st) == VG_OK) {
                            if (inf.number == 1) CHECK(inf.len == 1 && inf.data[0] == 'x');
                            if (inf.number != 2) continue;
                            vg__pb_reader_init(&tr, inf.data, inf.len);
                            while (vg__pb_next(&tr, &tf, &st) == VG_OK) {
                                if (tf.number == 1) CHECK(tf.len == 3 && memcmp(tf.data, "x:0", 3) == 0);
                                if (tf.number == 2) CHECK_EQ_INT(tf.u, 1); /* DT_FLOAT */
                            }
                        }
                    }
                }
            }
        }
    }
    CHECK_EQ_INT(schema, 1);
    CHECK_EQ_INT(nmeta, 1);
    CHECK_EQ_INT(ntags, 1);
    CHECK_EQ_INT(nsig, 1);
    CHECK(have_saver && have_main && have_graph);
    vg_free(data);
    snprintf(path, sizeof path, "%s/variables/variables.index", exp);
    CHECK(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/variables/variables.data-00000-of-00001", exp);
    CHECK(access(path, F_OK) == 0);
    CHECK(tu_rmrf(dir) == 0);
}

int main(void) {
    RUN_TEST(test_save_load_half_plus_two);
    TEST_MAIN_END();
}
