/* test_saver_map.c - tf.train.Saver with a {name: variable} map (keys, sort order,
 * restore into differently named variables, TF's errors), restoring EMA shadows through
 * ExponentialMovingAverage.variables_to_restore (the cifar10_eval.py pattern), and
 * tf.train.init_from_checkpoint (name and scope assignment maps, errors). */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "train_fixture.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static void tu_mkdir_p(const char *p) { mkdir(p, 0755); }

static char g_dir[512];

static vg_variable var_const(vg_graph *g, const char *name, const float *v, int64_t n) {
    vg_output c = vg_const_array(g, VG_FLOAT, &n, 1, v, NULL);
    return vg_variable_new(g, name, c, VG_VAR_TRAINABLE);
}

static float fetch0(vg_session *s, vg_output x, int i) {
    vg_status st;
    vg_tensor *t = NULL;
    float v = -12345;
    if (vg_session_run1(s, x, &t, &st) == VG_OK) v = ((const float *)vg_tensor_data(t))[i];
    else fprintf(stderr, "  fetch: %s\n", st.msg);
    vg_tensor_free(t);
    return v;
}

/* A test's checkpoint: the directory g_dir/<sub>, its prefix dir/model.ckpt, and the
 * path a save returned (out). */
typedef struct ckpt_paths {
    char dir[600], prefix[700], out[900];
} ckpt_paths;

/* Makes the directory g_dir/sub; its paths. */
static ckpt_paths ckpt_in(const char *sub) {
    ckpt_paths p;
    memset(&p, 0, sizeof p);
    snprintf(p.dir, sizeof p.dir, "%s/%s", g_dir, sub);
    tu_mkdir_p(p.dir);
    snprintf(p.prefix, sizeof p.prefix, "%s/model.ckpt", p.dir);
    return p;
}

static void test_map_save_restore(void) {
    vg_status st;
    ckpt_paths p = ckpt_in("map");
    vg_graph *g = vg_graph_new();
    float wv[3] = {1, 2, 3}, bv[2] = {-1, -2};
    vg_variable w = var_const(g, "a/w", wv, 3), b = var_const(g, "b", bv, 2);
    vg_output list[2] = {w.ref, b.ref};
    const char *names[2] = {"zz/renamed_w", "bias"};
    vg_saver_options o = {0};
    o.var_list = list;
    o.var_names = names;
    o.nvars = 2;
    vg_saver *sv = vg_saver_new(g, &o, &st);
    CHECK(sv != NULL);
    vg_session *s = initialized_session(g);
    if (sv && s) CHECK_OK(vg_saver_save(sv, s, p.prefix, 1, p.out, sizeof p.out, &st), &st);
    free_session_saver_graph(s, sv, g);
    /* the checkpoint holds the map's keys */
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(p.out, &st);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 2);
        vg_dtype dt;
        vg_shape sh;
        CHECK(strcmp(vg_checkpoint_reader_tensor(r, 0, &dt, &sh), "bias") == 0);
        CHECK(strcmp(vg_checkpoint_reader_tensor(r, 1, &dt, &sh), "zz/renamed_w") == 0);
        vg_checkpoint_reader_free(r);
    }
    /* restore into other names through a map */
    g = vg_graph_new();
    float z3[3] = {0}, z2[2] = {0};
    vg_variable x = var_const(g, "x", z3, 3), y = var_const(g, "y", z2, 2);
    vg_output l2[2] = {y.ref, x.ref};
    const char *n2[2] = {"bias", "zz/renamed_w"};
    o.var_list = l2;
    o.var_names = n2;
    sv = vg_saver_new(g, &o, &st);
    s = initialized_session(g);
    if (sv && s) {
        CHECK_OK(vg_saver_restore(sv, s, p.out, &st), &st);
        CHECK_NEAR(fetch0(s, x.read, 2), 3, 0);
        CHECK_NEAR(fetch0(s, y.read, 1), -2, 0);
    }
    vg_session_free(s);
    vg_saver_free(sv);
    /* a key missing from the checkpoint */
    const char *n3[2] = {"bias", "nope"};
    o.var_names = n3;
    sv = vg_saver_new(g, &o, &st);
    s = initialized_session(g);
    if (sv && s) {
        CHECK_STATUS(vg_saver_restore(sv, s, p.out, &st), &st, VG_NOT_FOUND, "Key nope not found in checkpoint");
    }
    vg_session_free(s);
    vg_saver_free(sv);
    /* errors: two variables under one name, one variable under two names */
    const char *dup[2] = {"k", "k"};
    o.var_names = dup;
    CHECK(vg_saver_new(g, &o, &st) == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "At least two variables have the same name: k");
    vg_output same[2] = {x.ref, x.ref};
    const char *two[2] = {"k1", "k2"};
    o.var_list = same;
    o.var_names = two;
    CHECK(vg_saver_new(g, &o, &st) == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "The same saveable will be restored with two names");
    vg_graph_free(g);
}

/* cifar10_eval.py: restore the moving averages into the model's variables. */
static void test_ema_variables_to_restore(void) {
    vg_status st;
    ckpt_paths p = ckpt_in("ema");
    vg_graph *g = vg_graph_new();
    float v0[2] = {10, 20};
    vg_variable v = var_const(g, "v", v0, 2);
    vg_ema *e = vg_ema_new(g, 0.5, (vg_output){0}, false, NULL);
    vg_op *upd = vg_ema_apply(e, &v.ref, 1);
    float nv[2] = {0, 0};
    vg_output assign = vg_assign(g, v.ref, vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, nv, NULL), true, "set");
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    vg_session *s = initialized_session(g);
    if (sv && s) {
        /* v = 0, then shadow = 0.5 * 10 + 0.5 * 0 = 5 */
        CHECK_OK(vg_session_run_targets(s, &assign.op, 1, &st), &st);
        CHECK_OK(vg_session_run_targets(s, &upd, 1, &st), &st);
        CHECK_OK(vg_saver_save(sv, s, p.prefix, -1, p.out, sizeof p.out, &st), &st);
    }
    vg_session_free(s);
    vg_saver_free(sv);
    vg_ema_free(e);
    vg_graph_free(g);

    g = vg_graph_new();
    float z[2] = {0, 0};
    v = var_const(g, "v", z, 2);
    e = vg_ema_new(g, 0.5, (vg_output){0}, false, NULL);
    vg_name_map m = {0};
    CHECK_OK(vg_ema_variables_to_restore(e, NULL, 0, &m, &st), &st);
    CHECK_EQ_INT(m.n, 1);
    if (m.n == 1) CHECK(strcmp(m.names[0], "v/ExponentialMovingAverage") == 0);
    vg_saver_options o = {0};
    o.var_list = m.vars;
    o.var_names = (const char *const *)m.names;
    o.nvars = m.n;
    sv = vg_saver_new(g, &o, &st);
    s = initialized_session(g);
    if (sv && s) {
        CHECK_OK(vg_saver_restore(sv, s, p.out, &st), &st);
        CHECK_NEAR(fetch0(s, v.read, 0), 5, 1e-6);
        CHECK_NEAR(fetch0(s, v.read, 1), 10, 1e-6);
    }
    vg_session_free(s);
    vg_saver_free(sv);
    vg_name_map_free(&m);
    vg_ema_free(e);
    vg_graph_free(g);
}

static void test_init_from_checkpoint(void) {
    vg_status st;
    ckpt_paths p = ckpt_in("warm");
    vg_graph *g = vg_graph_new();
    float a[3] = {1, 2, 3}, b[2] = {4, 5}, c[1] = {6};
    var_const(g, "old/layer/w", a, 3);
    var_const(g, "old/layer/b", b, 2);
    var_const(g, "other", c, 1);
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    vg_session *s = initialized_session(g);
    if (sv && s) CHECK_OK(vg_saver_save(sv, s, p.prefix, 3, p.out, sizeof p.out, &st), &st);
    free_session_saver_graph(s, sv, g);

    g = vg_graph_new();
    float z3[3] = {0}, z2[2] = {0}, z1[1] = {0};
    vg_variable w = var_const(g, "new/layer/w", z3, 3), bb = var_const(g, "new/layer/b", z2, 2);
    vg_variable o = var_const(g, "mine", z1, 1), keep = var_const(g, "untouched", z1, 1);
    const char *ck[2] = {"old/", "other"}, *cur[2] = {"new/", "mine"};
    CHECK_OK(vg_init_from_checkpoint(g, p.dir, ck, cur, 2, &st), &st); /* a directory: its latest */
    CHECK(vg_graph_op_by_name(g, "checkpoint_initializer") != NULL);
    CHECK(strcmp(vg_op_type(vg_variable_initializer(w.var)), "Assign") == 0);
    s = initialized_session(g);
    if (s) {
        CHECK_NEAR(fetch0(s, w.read, 2), 3, 0);
        CHECK_NEAR(fetch0(s, bb.read, 1), 5, 0);
        CHECK_NEAR(fetch0(s, o.read, 0), 6, 0);
        CHECK_NEAR(fetch0(s, keep.read, 0), 0, 0);
    }
    vg_session_free(s);
    /* errors: a missing tensor, a shape mismatch, a scope mapped to a name, no checkpoint */
    const char *ck1[1] = {"nope"}, *cur1[1] = {"mine"};
    CHECK_STATUS(vg_init_from_checkpoint(g, p.out, ck1, cur1, 1, &st), &st, VG_INVALID_ARGUMENT,
                 "Tensor nope is not found in");
    const char *ck2[1] = {"old/layer/w"};
    CHECK_STATUS(vg_init_from_checkpoint(g, p.out, ck2, cur1, 1, &st), &st, VG_INVALID_ARGUMENT,
                 "Shape of variable mine ([1]) doesn't match with shape of tensor old/layer/w ([3])");
    const char *ck3[1] = {"old/layer/w"}, *cur3[1] = {"new/"};
    CHECK_STATUS(vg_init_from_checkpoint(g, p.out, ck3, cur3, 1, &st), &st, VG_INVALID_ARGUMENT,
                 "Should be 'scope/': 'other_scope/'");
    const char *ck4[1] = {"zzz/"}, *cur4[1] = {"new/"};
    CHECK_STATUS(vg_init_from_checkpoint(g, p.out, ck4, cur4, 1, &st), &st, VG_INVALID_ARGUMENT,
                 "Tensor zzz/layer/b (layer/b in zzz/) is not found");
    char missing[700];
    snprintf(missing, sizeof missing, "%s/none", g_dir);
    CHECK_EQ_INT(vg_init_from_checkpoint(g, missing, ck1, cur1, 1, &st), VG_NOT_FOUND);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "saver_map")[0]) return 1;
    RUN_TEST(test_map_save_restore);
    RUN_TEST(test_ema_variables_to_restore);
    RUN_TEST(test_init_from_checkpoint);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
