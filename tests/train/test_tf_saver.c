/* test_tf_saver.c - graph-mode cases of TF 1.15's tensorflow/python/training/saver_test.py
 * translated to C, those not already in tests/train/test_saver*.c. Each test names the TF
 * method it translates; the values are the ones TF's assertions give.
 *
 * Already translated elsewhere: SaverTest.testInvalidPath, testSaveToNonexistingPath
 * (tests/train/test_saver.c: test_saver__value_errors), testSameName
 * (tests/train/test_saver_map.c), MetaGraphTest.testImportIntoNamescope
 * (tests/graph/test_import_meta_graph.c).
 *
 * Not translated (no C form, or vigil has no such feature):
 *   CheckpointedOp parts of every test (saver_test_utils.CheckpointedOp): vigil has no
 *     MutableHashTable / custom SaveableObjects; the variable parts are translated.
 *   SaverTest.testEagerBasic, testEagerGraphCompatibility, KeepCheckpointEveryNHoursTest's
 *     eager half, MaxToKeepTest.testMaxToKeepEager: eager mode.
 *   testGPU, testSharedServerOnGPU, testResourceSaveRestoreCachingDevice,
 *     MetaGraphTest.testClearDevicesOnImport / testClearDevicesOnExport: devices.
 *   testSaveCopyRestoreWithSaveRelativePaths, CheckpointStateTest
 *     .testUpdateCheckpointStateSaveRelativePaths: no save_relative_paths option.
 *   testFilenameTensor: no Saver(filename=...) option.
 *   testSomeErrors, MetaGraphTest.testSliceVariable, SaveRestoreShardedTest
 *     .testPartitionedVariable / testPartitionedResourceVariable: no SaveSliceInfo or
 *     partitioned variables.
 *   testVarListShouldBeEmptyInDeferredBuild, testBuildShouldBeCalledBeforeSaveInCaseOf
 *     DeferBuild, testDeferredBuild: no defer_build.
 *   testReshape's reshape=True half: no reshape option (the default's error is translated).
 *   testSaveWithGlobalStep's tensor global step and testSaveWithGlobalStepWithPadding: the
 *     C API takes the step as an int64 and has no pad_step_number.
 *   testSaveToURI: no filesystem URI schemes ("file://").
 *   SaveRestoreShardedTest (V1) and the two-device halves of SaveRestoreShardedTestV2
 *     .testBasics / MaxToKeepTest.testSharded: vigil has one CPU device; the one-device
 *     forms are translated (TF's sharded V2 save then writes one data shard).
 *   SaveRestoreShardedTest.testSaverDef: vigil's SaverDef always says sharded: false
 *     (vigil/saver.h: sharded is accepted for parity, the graph is the unsharded one).
 *   CheckpointStateTest.testAbsPath, testRelPath, testAllModelCheckpointPaths,
 *     testUpdateCheckpointState: generate_checkpoint_state_proto / update_checkpoint_state
 *     have no public C API (the saver's state files are tests/train/test_saver.c's).
 *   MetaGraphTest.testAddCollectionDef, testAddCollectionDefFails,
 *     testMultiSaverCollection, testClearExtraneousSavers, testStrippedOpListDef,
 *     testStripDefaultValuedAttrs, testImportIntoImplicitNamescope,
 *     testPreserveDatasetAndFunctions: int/float/string,
 *     Any and Saver collections, stripped op lists, default-attr stripping, implicit
 *     import scopes and tf.data functions are not in vigil's MetaGraphDef export/import.
 *   MetaGraphTest.testGraphExtension, testNestedWhileLoopsSerDes,
 *     testNestedControlFlowSerDes, testNestedCondsSerDes: gradients after import need
 *     the WhileContextDef / CondContextDef collections, which vigil's import skips.
 *   MetaGraphTest.testBinaryAndTextFormat's text export: no MetaGraphDef text export; its
 *     wrong-contents check is test_tfsaver__meta_graph_wrong_contents, not run (see there).
 *   MetaGraphTest.testImportIntoNamescopeWithoutVariables' second and third imports:
 *     import_meta_graph's Saver-or-None result is Python-side.
 */
#include "test_util.h"
#include "kernels_fixture.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define TMPDIR_TAG "tfsaver"
#include "tmpdir_util.h"

/* A fresh sub-directory of the temp dir (TF's _get_test_dir). */
static char *test_dir(char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", g_dir, name);
    mkdir(out, 0755);
    return out;
}


static void init_all(vg_graph *g, vg_session *s) { run_target(s, vg_global_variables_initializer(g)); }

static double fetch_scalar(vg_session *s, vg_output o) {
    vg_status st;
    vg_tensor *t = NULL;
    if (vg_session_run1(s, o, &t, &st) != VG_OK) {
        fprintf(stderr, "  fetch %s: %s\n", o.op ? vg_op_name(o.op) : "(null)", st.msg);
        return NAN;
    }
    double v = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return v;
}

static void check_fetch_fails(vg_session *s, vg_output o, vg_code code, const char *msg) {
    vg_status st;
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, o, &t, &st), code);
    vg_tensor_free(t);
    CHECK_STR_CONTAINS(st.msg, msg);
}

/* A ref (resource false) or resource (true) variable of a float initial value; value
 * is what evaluates the variable (self.evaluate(v)), var what a saver takes. */
typedef struct tvar {
    vg_output var, value;
    vg_op *initializer;
} tvar;

static tvar make_var(vg_graph *g, bool resource, const char *name, vg_output initial) {
    tvar t;
    if (resource) {
        vg_resource_variable r = vg_resource_variable_new(g, name, initial, VG_VAR_TRAINABLE);
        t.var = r.handle, t.value = r.value, t.initializer = r.initializer;
    } else {
        vg_variable v = vg_variable_new(g, name, initial, VG_VAR_TRAINABLE);
        t.var = v.ref, t.value = v.ref, t.initializer = v.initializer;
    }
    return t;
}

static tvar make_f32(vg_graph *g, bool resource, const char *name, float x) {
    return make_var(g, resource, name, vg_const_f32(g, x, NULL));
}

/* Saver over vars[0..n) ({names[i]: vars[i]} when names is not NULL). */
static vg_saver *saver_of(vg_graph *g, const tvar *vars, const char *const *names, int n, vg_saver_options *base) {
    vg_output list[8];
    for (int i = 0; i < n; i++) list[i] = vars[i].var;
    vg_saver_options o = base ? *base : (vg_saver_options){0};
    o.var_list = list;
    o.nvars = n;
    o.var_names = names;
    vg_status st;
    vg_saver *s = vg_saver_new(g, &o, &st);
    if (!s) fprintf(stderr, "  saver: %s\n", st.msg);
    CHECK(s != NULL);
    return s;
}

static int64_t num_uninitialized(vg_graph *g, vg_session *s) {
    vg_output rep = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_tensor *t = NULL;
    vg_status st;
    CHECK_OK(vg_session_run1(s, rep, &t, &st), &st);
    int64_t n = t ? vg_tensor_num_elements(t) : -1;
    vg_tensor_free(t);
    return n;
}

/* ------------------------------------------------------------------------ */
/* SaverTest */

/* SaverTest.basicSaveRestore (testBasic: Variable, testResourceBasic: ResourceVariable) */
static void basic_save_restore(bool resource) {
    char save_path[512], val[512];
    tmp_path(save_path, "basic_save_restore");
    const char *names[2] = {"v0", "v1"};
    vg_status st;
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, resource, "v0", 10.0f), make_f32(g, resource, "v1", 20.0f)};
        vg_session *s = new_session(g);
        init_all(g, s);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        vg_saver *save = saver_of(g, v, names, 2, NULL);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, val, sizeof val, &st), &st);
        CHECK(strcmp(val, save_path) == 0);
        vg_saver_free(save);
        free_session_graph(s, g);
    }
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, resource, "v0", -1.0f), make_f32(g, resource, "v1", -1.0f)};
        vg_session *s = new_session(g);
        CHECK_EQ_INT(num_uninitialized(g, s), 2);
        vg_saver *save = saver_of(g, v, names, 2, NULL);
        CHECK_OK(vg_saver_restore(save, s, save_path, &st), &st);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        vg_saver_free(save);
        free_session_graph(s, g);
    }
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, resource, "v0", 1000.0f), make_f32(g, resource, "v1", 2000.0f)};
        vg_session *s = new_session(g);
        init_all(g, s);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 1000.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 2000.0, 0);
        vg_saver *save2 = saver_of(g, v, names, 2, NULL);
        CHECK_OK(vg_saver_restore(save2, s, save_path, &st), &st);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        vg_saver_free(save2);
        free_session_graph(s, g);
    }
}
static void test_tfsaver__basic(void) { basic_save_restore(false); }          /* SaverTest.testBasic */
static void test_tfsaver__resource_basic(void) { basic_save_restore(true); }  /* SaverTest.testResourceBasic */

/* SaverTest.testResourceVariableReadOpsAddedDeterministically: ten graphs of 20 resource
 * variables and a Saver serialize to the same GraphDef. */
static void test_tfsaver__resource_read_ops_deterministic(void) {
    void *first = NULL;
    size_t first_len = 0;
    for (int k = 0; k < 10; k++) {
        vg_graph *g = vg_graph_new();
        for (int i = 0; i < 20; i++) {
            char name[16];
            snprintf(name, sizeof name, "var%d", i);
            vg_resource_variable_new(g, name, vg_const_i32(g, i, NULL), VG_VAR_TRAINABLE);
        }
        vg_status st;
        vg_saver *sv = vg_saver_new(g, NULL, &st);
        CHECK(sv != NULL);
        void *bytes = NULL;
        size_t len = 0;
        CHECK_OK(vg_graph_to_graphdef(g, &bytes, &len, &st), &st);
        if (k == 0) {
            first = bytes, first_len = len;
        } else {
            CHECK(bytes && len == first_len && memcmp(bytes, first, len) == 0);
            vg_free(bytes);
        }
        vg_saver_free(sv);
        vg_graph_free(g);
    }
    vg_free(first);
}

/* SaverTest.testNoAdditionalOpsAddedBySaverForResourceVariablesOutsideSaveScope */
static void test_tfsaver__no_ops_outside_save_scope(void) {
    vg_graph *g = vg_graph_new();
    vg_resource_variable v = vg_resource_variable_new(g, "v", vg_const_f32(g, 1.0f, NULL), VG_VAR_TRAINABLE);
    vg_status st;
    vg_graph_push_scope(g, "saver1");
    vg_saver *s1 = vg_saver_new(g, NULL, &st);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "saver2");
    const char *name = "name";
    vg_saver_options o = {0};
    o.var_list = &v.handle;
    o.var_names = &name;
    o.nvars = 1;
    vg_saver *s2 = vg_saver_new(g, &o, &st);
    vg_graph_pop_scope(g);
    CHECK(s1 && s2);
    int in1 = 0, in2 = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++) {
        const char *n = vg_op_name(vg_graph_op(g, i));
        if (strncmp(n, "saver1/", 7) == 0) {
            in1++;
            if (strncmp(n, "saver1/save/", 12) != 0) fprintf(stderr, "  op outside the save scope: %s\n", n);
            CHECK(strncmp(n, "saver1/save/", 12) == 0);
        }
        if (strncmp(n, "saver2/", 7) == 0) {
            in2++;
            if (strncmp(n, "saver2/save/", 12) != 0) fprintf(stderr, "  op outside the save scope: %s\n", n);
            CHECK(strncmp(n, "saver2/save/", 12) == 0);
        }
    }
    CHECK(in1 > 0 && in2 > 0);
    vg_saver_free(s1);
    vg_saver_free(s2);
    vg_graph_free(g);
}

/* SaverTest.testInt64 */
static void test_tfsaver__int64(void) {
    char save_path[512], val[512];
    tmp_path(save_path, "int64");
    const char *name = "v";
    vg_status st;
    vg_graph *g = vg_graph_new();
    tvar v = make_var(g, false, "v", vg_const_i64(g, 15, NULL));
    vg_saver *save = saver_of(g, &v, &name, 1, NULL);
    vg_session *s = new_session(g);
    init_all(g, s);
    CHECK_OK(vg_saver_save(save, s, save_path, -1, val, sizeof val, &st), &st);
    CHECK(strcmp(val, save_path) == 0);
    vg_graph *g2 = vg_graph_new();
    tvar v2 = make_var(g2, false, "v", vg_const_i64(g2, -1, NULL));
    vg_saver *save2 = saver_of(g2, &v2, &name, 1, NULL);
    vg_session *s2 = new_session(g2);
    check_fetch_fails(s2, v2.value, VG_FAILED_PRECONDITION, "uninitialized value v");
    CHECK_OK(vg_saver_restore(save2, s2, save_path, &st), &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s2, v2.value, &t, &st), &st);
    CHECK(t && vg_tensor_dtype(t) == VG_INT64 && *(int64_t *)vg_tensor_data(t) == 15);
    vg_tensor_free(t);
    free_session_saver_graph(s2, save2, g2);
    free_session_saver_graph(s, save, g);
}

/* SaverTest.testBasicsWithListOfVariables */
static void test_tfsaver__basics_with_list_of_variables(void) {
    char save_path[512], val[512];
    tmp_path(save_path, "basics_with_list");
    vg_status st;
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, false, "v0", 10.0f), make_f32(g, false, "v1", 20.0f)};
        vg_saver *save = saver_of(g, v, NULL, 2, NULL);
        vg_session *s = new_session(g);
        init_all(g, s);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, val, sizeof val, &st), &st);
        CHECK(strcmp(val, save_path) == 0);
        free_session_saver_graph(s, save, g);
    }
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, false, "v0", -1.0f), make_f32(g, false, "v1", -1.0f)};
        vg_saver *save = saver_of(g, v, NULL, 2, NULL);
        vg_session *s = new_session(g);
        check_fetch_fails(s, v[0].value, VG_FAILED_PRECONDITION, "uninitialized value v0");
        check_fetch_fails(s, v[1].value, VG_FAILED_PRECONDITION, "uninitialized value v1");
        CHECK_OK(vg_saver_restore(save, s, save_path, &st), &st);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        free_session_saver_graph(s, save, g);
    }
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, false, "v0", 1000.0f), make_f32(g, false, "v1", 2000.0f)};
        vg_saver *save2 = saver_of(g, v, NULL, 2, NULL);
        vg_session *s = new_session(g);
        init_all(g, s);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 1000.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 2000.0, 0);
        CHECK_OK(vg_saver_restore(save2, s, save_path, &st), &st);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        free_session_saver_graph(s, save2, g);
    }
}

/* SaverTest._SaveAndLoad: a resource variable saved under its name, restored into one
 * with another value. */
static void save_and_load(const char *var_name, float var_value, float other_value, const char *save_path) {
    vg_status st;
    char val[512];
    {
        vg_graph *g = vg_graph_new();
        tvar var = make_f32(g, true, var_name, var_value);
        vg_saver *save = saver_of(g, &var, &var_name, 1, NULL);
        vg_session *s = new_session(g);
        run_target(s, var.initializer);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, val, sizeof val, &st), &st);
        CHECK(strcmp(val, save_path) == 0);
        free_session_saver_graph(s, save, g);
    }
    {
        vg_graph *g = vg_graph_new();
        tvar var = make_f32(g, true, var_name, other_value);
        vg_saver *save = saver_of(g, &var, &var_name, 1, NULL);
        vg_session *s = new_session(g);
        CHECK_OK(vg_saver_restore(save, s, save_path, &st), &st);
        CHECK_NEAR(fetch_scalar(s, var.value), var_value, 1e-6);
        free_session_saver_graph(s, save, g);
    }
}

/* SaverTest.testCacheRereadsFile */
static void test_tfsaver__cache_rereads_file(void) {
    char save_path[512];
    tmp_path(save_path, "cache_rereads");
    save_and_load("var0", 0.0f, 1.0f, save_path);
    save_and_load("var1", 1.1f, 2.2f, save_path);
}

/* SaverTest.testAllowEmpty: save returns None (C: path_out ""), restore does nothing. */
static void test_tfsaver__allow_empty(void) {
    char dir[512], save_path[600], val[600];
    test_dir(dir, sizeof dir, "allow_empty_dir");
    snprintf(save_path, sizeof save_path, "%s/allow_empty", dir);
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_const_i32(g, 1, NULL);
    vg_saver_options o = {0};
    o.allow_empty = true;
    vg_saver *save = vg_saver_new(g, &o, &st);
    CHECK(save != NULL);
    vg_session *s = new_session(g);
    strcpy(val, "x");
    CHECK_OK(vg_saver_save(save, s, save_path, -1, val, sizeof val, &st), &st);
    CHECK(val[0] == 0);
    /* no checkpoint and no state file; the MetaGraphDef is still exported (saver.py's
     * save() writes it whether or not the saver is empty) */
    CHECK(!path_existsf("%s.index", save_path));
    CHECK(!path_existsf("%s/checkpoint", dir));
    CHECK(path_existsf("%s.meta", save_path));
    vg_saver *save2 = vg_saver_new(g, &o, &st);
    CHECK(save2 != NULL);
    CHECK_OK(vg_saver_restore(save2, s, save_path, &st), &st);
    vg_saver_free(save2);
    free_session_saver_graph(s, save, g);
}

/* SaverTest.testVariables: Saver() saves all global variables. */
static void test_tfsaver__variables(void) {
    char save_path[512];
    tmp_path(save_path, "variables");
    vg_status st;
    const int64_t d3 = 3;
    {
        vg_graph *g = vg_graph_new();
        vg_variable_new(g, NULL, vg_const_f32(g, 1.0f, NULL), VG_VAR_TRAINABLE);
        vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, &d3, 1, 2.0, NULL), VG_VAR_TRAINABLE);
        vg_op *init = vg_global_variables_initializer(g);
        vg_saver *save = vg_saver_new(g, NULL, &st);
        vg_session *s = new_session(g);
        run_target(s, init);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, NULL, 0, &st), &st);
        free_session_saver_graph(s, save, g);
    }
    vg_graph *g = vg_graph_new();
    vg_variable one = vg_variable_new(g, NULL, vg_const_f32(g, 0.0f, NULL), VG_VAR_TRAINABLE);
    vg_variable twos = vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, &d3, 1, 0.0, NULL), VG_VAR_TRAINABLE);
    vg_saver *save = vg_saver_new(g, NULL, &st);
    vg_session *s = new_session(g);
    CHECK_OK(vg_saver_restore(save, s, save_path, &st), &st);
    CHECK_NEAR(fetch_scalar(s, one.ref), 1.0, 0);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, twos.ref, &t, &st), &st);
    CHECK(t && vg_tensor_num_elements(t) == 3);
    for (int i = 0; t && i < 3; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], 2.0, 0);
    vg_tensor_free(t);
    free_session_saver_graph(s, save, g);
}

/* SaverTest.testReshape (reshape=False): a [2,3] checkpoint into a [3,2] variable is
 * InvalidArgumentError "Assign requires shapes of both tensors to match.". */
static void test_tfsaver__reshape(void) {
    char save_path[512];
    tmp_path(save_path, "variables_reshape");
    vg_status st;
    {
        vg_graph *g = vg_graph_new();
        vg_variable_new(g, NULL, vg_const_array(g, VG_FLOAT, (int64_t[]){2, 3}, 2, (float[]){1, 2, 3, 4, 5, 6}, NULL),
                        VG_VAR_TRAINABLE);
        vg_op *init = vg_global_variables_initializer(g);
        vg_saver *save = vg_saver_new(g, NULL, &st);
        vg_session *s = new_session(g);
        run_target(s, init);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, NULL, 0, &st), &st);
        free_session_saver_graph(s, save, g);
    }
    vg_graph *g = vg_graph_new();
    vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, (int64_t[]){3, 2}, 2, 0.0, NULL), VG_VAR_TRAINABLE);
    vg_saver *save = vg_saver_new(g, NULL, &st);
    vg_session *s = new_session(g);
    CHECK_STATUS(vg_saver_restore(save, s, save_path, &st), &st, VG_INVALID_ARGUMENT,
                 "Assign requires shapes of both tensors to match.");
    free_session_saver_graph(s, save, g);
}

/* SaverTest.testSaveWithGlobalStep (an int global step): "<save_path>-5". */
static void test_tfsaver__save_with_global_step(void) {
    char save_path[512], val[512], want[600];
    tmp_path(save_path, "ckpt_with_global_step");
    save_and_load("var0", 0.0f, 1.0f, save_path);
    vg_graph *g = vg_graph_new();
    tvar var = make_f32(g, true, "var0", 1.0f);
    const char *name = "var0";
    vg_saver *save = saver_of(g, &var, &name, 1, NULL);
    vg_session *s = new_session(g);
    run_target(s, var.initializer);
    vg_status st;
    CHECK_OK(vg_saver_save(save, s, save_path, 5, val, sizeof val, &st), &st);
    snprintf(want, sizeof want, "%s-5", save_path);
    CHECK(strcmp(val, want) == 0);
    free_session_saver_graph(s, save, g);
}

/* SaverTest.testSaveRestoreAndValidateVariableDtype: a float checkpoint into an int32
 * variable is InvalidArgumentError "... original dtype ...". */
static void test_tfsaver__validate_variable_dtype(void) {
    char save_path[512];
    tmp_path(save_path, "basic_save_restore_dtype");
    const char *name = "v0";
    for (int resource = 0; resource <= 1; resource++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        tvar v0 = make_f32(g, resource, "v0", 10.0f);
        vg_session *s = new_session(g);
        init_all(g, s);
        vg_saver *save = saver_of(g, &v0, &name, 1, NULL);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, NULL, 0, &st), &st);
        free_session_saver_graph(s, save, g);
        g = vg_graph_new();
        tvar wrong = make_var(g, resource, "v0", vg_const_i32(g, 1, NULL));
        save = saver_of(g, &wrong, &name, 1, NULL);
        s = new_session(g);
        CHECK_STATUS(vg_saver_restore(save, s, save_path, &st), &st, VG_INVALID_ARGUMENT, "original dtype");
        free_session_saver_graph(s, save, g);
    }
}

/* ------------------------------------------------------------------------ */
/* SaveRestoreShardedTestV2.testBasics (one device: int variables, CheckpointedOps
 * dropped): the sharded saver's path is the prefix, its .meta "<prefix>.meta", and
 * latest_checkpoint names it. */
static void test_tfsaver__sharded_basics(void) {
    char save_path[512], val[512], buf[600];
    tmp_path(save_path, "sharded_basics");
    const char *names[2] = {"v0", "v1"};
    vg_saver_options o = {0};
    o.sharded = true;
    vg_status st;
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_var(g, false, "v0", vg_const_i32(g, 10, NULL)),
                     make_var(g, false, "v1", vg_const_i32(g, 20, NULL))};
        vg_saver *save = saver_of(g, v, names, 2, &o);
        vg_session *s = new_session(g);
        init_all(g, s);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, val, sizeof val, &st), &st);
        CHECK(strcmp(val, save_path) == 0);
        CHECK(path_existsf("%s.meta", save_path));
        free_session_saver_graph(s, save, g);
    }
    vg_graph *g = vg_graph_new();
    tvar v[2] = {make_var(g, false, "v0", vg_const_i32(g, 111, NULL)),
                 make_var(g, false, "v1", vg_const_i32(g, 222, NULL))};
    vg_saver *save = saver_of(g, v, names, 2, &o);
    vg_session *s = new_session(g);
    init_all(g, s);
    CHECK_NEAR(fetch_scalar(s, v[0].value), 111, 0);
    CHECK_NEAR(fetch_scalar(s, v[1].value), 222, 0);
    CHECK_OK(vg_saver_restore(save, s, save_path, &st), &st);
    CHECK_NEAR(fetch_scalar(s, v[0].value), 10, 0);
    CHECK_NEAR(fetch_scalar(s, v[1].value), 20, 0);
    const char *latest = vg_latest_checkpoint(g_dir, buf, sizeof buf);
    CHECK(latest && strcmp(latest, save_path) == 0);
    free_session_saver_graph(s, save, g);
}

/* ------------------------------------------------------------------------ */
/* MaxToKeepTest */

/* MaxToKeepTest.assertCheckpointState */
static void check_state(const char *save_dir, const char *model, const char *const *all, int n) {
    vg_checkpoint_state *cs = NULL;
    vg_status st;
    CHECK_OK(vg_get_checkpoint_state(save_dir, &cs, &st), &st);
    if (!cs) return;
    CHECK(strcmp(cs->model_checkpoint_path, model) == 0);
    CHECK_EQ_INT(cs->n_all, n);
    for (int i = 0; i < n && i < cs->n_all; i++) CHECK(strcmp(cs->all_model_checkpoint_paths[i], all[i]) == 0);
    vg_checkpoint_state_free(cs);
}

static void check_last(const vg_saver *s, const char *const *want, int n) {
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(s), n);
    for (int i = 0; i < n && i < vg_saver_num_last_checkpoints(s); i++)
        CHECK(strcmp(vg_saver_last_checkpoint(s, i), want[i]) == 0);
}

/* checkpoint_exists(p) and checkpoint_exists(_MetaGraphFilename(p)) */
static bool ckpt_and_meta_exist(const char *p, bool *meta) {
    char m[600];
    snprintf(m, sizeof m, "%s.meta", p);
    *meta = vg_checkpoint_exists(m);
    return vg_checkpoint_exists(p);
}

static void check_exists(const char *p, bool want) {
    bool meta;
    bool ck = ckpt_and_meta_exist(p, &meta);
    if (ck != want || meta != want) fprintf(stderr, "  %s: checkpoint %d meta %d, expected %d\n", p, ck, meta, want);
    CHECK(ck == want);
    CHECK(meta == want);
}

static void save_as(vg_saver *sv, vg_session *s, const char *save_dir, const char *name, char *out) {
    char prefix[600];
    vg_status st;
    snprintf(prefix, sizeof prefix, "%s/%s", save_dir, name);
    CHECK_OK(vg_saver_save(sv, s, prefix, -1, out, 600, &st), &st);
}

/* MaxToKeepTest.testNonSharded. save2 (TF: Saver(saver_def=save.as_saver_def()) and
 * set_last_checkpoints) is a second saver with the same options that recovers save's
 * list; save3 knows no previous checkpoints. */
static void test_tfsaver__max_to_keep_non_sharded(void) {
    char save_dir[512];
    test_dir(save_dir, sizeof save_dir, "max_to_keep_non_sharded");
    vg_graph *g = vg_graph_new();
    tvar v = make_f32(g, false, "v", 10.0f);
    const char *name = "v";
    vg_saver_options o = {0};
    o.max_to_keep = 2;
    vg_saver *save = saver_of(g, &v, &name, 1, &o);
    vg_saver *save2 = saver_of(g, &v, &name, 1, &o), *save3 = saver_of(g, &v, &name, 1, &o);
    vg_session *s = new_session(g);
    init_all(g, s);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(save), 0);
    char s1[600], s2[600], s3[600];
    save_as(save, s, save_dir, "s1", s1);
    check_last(save, (const char *[]){s1}, 1);
    check_exists(s1, true);
    check_state(save_dir, s1, (const char *[]){s1}, 1);
    save_as(save, s, save_dir, "s2", s2);
    check_last(save, (const char *[]){s1, s2}, 2);
    check_exists(s1, true);
    check_exists(s2, true);
    check_state(save_dir, s2, (const char *[]){s1, s2}, 2);
    save_as(save, s, save_dir, "s3", s3);
    check_last(save, (const char *[]){s2, s3}, 2);
    check_exists(s1, false);
    check_exists(s2, true);
    check_exists(s3, true);
    check_state(save_dir, s3, (const char *[]){s2, s3}, 2);
    /* the second helper takes the first one's list */
    const char *last[2] = {vg_saver_last_checkpoint(save, 0), vg_saver_last_checkpoint(save, 1)};
    char l0[600], l1[600];
    snprintf(l0, sizeof l0, "%s", last[0]);
    snprintf(l1, sizeof l1, "%s", last[1]);
    vg_saver_recover_last_checkpoints(save2, (const char *[]){l0, l1}, 2);
    /* the first helper: s2 again (old s2 removed first, new s2 appended) */
    save_as(save, s, save_dir, "s2", s2);
    check_last(save, (const char *[]){s3, s2}, 2);
    check_exists(s1, false);
    check_exists(s3, true);
    check_exists(s2, true);
    check_state(save_dir, s2, (const char *[]){s3, s2}, 2);
    /* s1: s3 deleted as the oldest */
    save_as(save, s, save_dir, "s1", s1);
    check_last(save, (const char *[]){s2, s1}, 2);
    check_exists(s3, false);
    check_exists(s2, true);
    check_exists(s1, true);
    check_state(save_dir, s1, (const char *[]){s2, s1}, 2);
    /* the second helper: s2 again */
    save_as(save2, s, save_dir, "s2", s2);
    check_last(save2, (const char *[]){s3, s2}, 2);
    check_exists(s1, true);  /* created by the first helper */
    check_exists(s3, false); /* deleted by the first helper */
    check_exists(s2, true);
    check_state(save_dir, s2, (const char *[]){s3, s2}, 2);
    save_as(save2, s, save_dir, "s1", s1);
    check_last(save2, (const char *[]){s2, s1}, 2);
    check_exists(s3, false);
    check_exists(s2, true);
    check_exists(s1, true);
    check_state(save_dir, s1, (const char *[]){s2, s1}, 2);
    /* the third helper, unaware of the previous checkpoints */
    save_as(save3, s, save_dir, "s2", s2);
    check_last(save3, (const char *[]){s2}, 1);
    check_exists(s1, true);
    check_exists(s3, false);
    check_exists(s2, true);
    check_state(save_dir, s2, (const char *[]){s2}, 1);
    save_as(save3, s, save_dir, "s1", s1);
    check_last(save3, (const char *[]){s2, s1}, 2);
    check_exists(s3, false);
    check_exists(s2, true);
    check_exists(s1, true);
    check_state(save_dir, s1, (const char *[]){s2, s1}, 2);
    vg_session_free(s);
    vg_saver_free(save);
    vg_saver_free(save2);
    vg_saver_free(save3);
    vg_graph_free(g);
}

/* The number of files in dir whose name starts with base (gfile.Glob(base + "*")). */
static int count_files(const char *path_prefix) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", path_prefix);
    char *slash = strrchr(dir, '/');
    if (!slash) return -1;
    *slash = 0;
    const char *base = slash + 1;
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, base, strlen(base)) == 0) n++;
    if (d) closedir(d);
    return n;
}

/* MaxToKeepTest.testSharded on one device: each sharded V2 checkpoint is an index, one
 * data shard and a .meta (TF: 4 files with two devices' shards). */
static void test_tfsaver__max_to_keep_sharded(void) {
    char save_dir[512];
    test_dir(save_dir, sizeof save_dir, "max_to_keep_sharded");
    vg_graph *g = vg_graph_new();
    tvar v[2] = {make_var(g, false, "v0", vg_const_i32(g, 111, NULL)),
                 make_var(g, false, "v1", vg_const_i32(g, 222, NULL))};
    const char *names[2] = {"v0", "v1"};
    vg_saver_options o = {0};
    o.sharded = true;
    o.max_to_keep = 2;
    vg_saver *save = saver_of(g, v, names, 2, &o);
    vg_session *s = new_session(g);
    init_all(g, s);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(save), 0);
    char s1[600], s2[600], s3[600];
    save_as(save, s, save_dir, "s1", s1);
    check_last(save, (const char *[]){s1}, 1);
    CHECK_EQ_INT(count_files(s1), 3);
    CHECK(path_existsf("%s.meta", s1));
    save_as(save, s, save_dir, "s2", s2);
    check_last(save, (const char *[]){s1, s2}, 2);
    CHECK_EQ_INT(count_files(s1), 3);
    CHECK_EQ_INT(count_files(s2), 3);
    save_as(save, s, save_dir, "s3", s3);
    check_last(save, (const char *[]){s2, s3}, 2);
    CHECK_EQ_INT(count_files(s1), 0);
    CHECK(!path_existsf("%s.meta", s1));
    CHECK_EQ_INT(count_files(s2), 3);
    CHECK_EQ_INT(count_files(s3), 3);
    free_session_saver_graph(s, save, g);
}

/* MaxToKeepTest.testNoMaxToKeep (None and 0 are the same in C: max_to_keep 0) */
static void test_tfsaver__no_max_to_keep(void) {
    char dirs[2][512];
    test_dir(dirs[0], sizeof dirs[0], "no_max_to_keep");
    test_dir(dirs[1], sizeof dirs[1], "max_to_keep_0");
    vg_graph *g = vg_graph_new();
    tvar v = make_f32(g, false, "v", 10.0f);
    const char *name = "v";
    vg_session *s = new_session(g);
    init_all(g, s);
    vg_saver_options o = {0};
    o.keep_all_checkpoints = true;
    for (int k = 0; k < 2; k++) {
        vg_saver *save = saver_of(g, &v, &name, 1, &o);
        CHECK_EQ_INT(vg_saver_num_last_checkpoints(save), 0);
        char s1[600], s2[600];
        save_as(save, s, dirs[k], "s1", s1);
        CHECK_EQ_INT(vg_saver_num_last_checkpoints(save), 0);
        CHECK(vg_checkpoint_exists(s1));
        save_as(save, s, dirs[k], "s2", s2);
        CHECK_EQ_INT(vg_saver_num_last_checkpoints(save), 0);
        CHECK(vg_checkpoint_exists(s1));
        CHECK(vg_checkpoint_exists(s2));
        vg_saver_free(save);
    }
    free_session_graph(s, g);
}

/* MaxToKeepTest.testNoMetaGraph (write_meta_graph=False: a saver option in C) */
static void test_tfsaver__no_meta_graph(void) {
    char save_dir[512], s1[600];
    test_dir(save_dir, sizeof save_dir, "no_meta_graph");
    vg_graph *g = vg_graph_new();
    tvar v = make_f32(g, false, "v", 10.0f);
    const char *name = "v";
    vg_saver_options o = {0};
    o.no_meta_graph = true;
    vg_saver *save = saver_of(g, &v, &name, 1, &o);
    vg_session *s = new_session(g);
    init_all(g, s);
    save_as(save, s, save_dir, "s1", s1);
    CHECK(vg_checkpoint_exists(s1));
    CHECK(!path_existsf("%s.meta", s1));
    free_session_saver_graph(s, save, g);
}

/* ------------------------------------------------------------------------ */
/* KeepCheckpointEveryNHoursTest.testNonSharded (graph mode, real time instead of a
 * mocked clock: keep one every 1.0 s, the first save 1.2 s after the saver was made). */
static void test_tfsaver__keep_checkpoint_every_n_hours(void) {
    char save_dir[512];
    test_dir(save_dir, sizeof save_dir, "keep_checkpoint_every_n_hours");
    vg_graph *g = vg_graph_new();
    tvar v = make_var(g, false, "v", vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, (float[]){10}, NULL));
    const char *name = "v";
    vg_session *s = new_session(g);
    init_all(g, s);
    vg_saver_options o = {0};
    o.max_to_keep = 2;
    o.keep_checkpoint_every_n_hours = 1.0 / 3600;
    vg_saver *save = saver_of(g, &v, &name, 1, &o);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(save), 0);
    usleep(1200 * 1000); /* s1 will be old enough to keep */
    char s1[600], s2[600], s3[600], s4[600];
    save_as(save, s, save_dir, "s1", s1);
    check_last(save, (const char *[]){s1}, 1);
    save_as(save, s, save_dir, "s2", s2);
    check_last(save, (const char *[]){s1, s2}, 2);
    /* s1 leaves the list but is past the deadline: kept */
    save_as(save, s, save_dir, "s3", s3);
    check_last(save, (const char *[]){s2, s3}, 2);
    /* s2 is close in time to the kept s1: deleted */
    save_as(save, s, save_dir, "s4", s4);
    check_last(save, (const char *[]){s3, s4}, 2);
    CHECK(vg_checkpoint_exists(s1));
    CHECK(!vg_checkpoint_exists(s2));
    CHECK(vg_checkpoint_exists(s3));
    CHECK(vg_checkpoint_exists(s4));
    free_session_saver_graph(s, save, g);
}

/* ------------------------------------------------------------------------ */
/* SaveRestoreWithVariableNameMap._testNonReshape (testNonReshapeVariable,
 * testNonReshapeResourceVariable) */
static void non_reshape(bool resource) {
    char save_path[512], val[512];
    tmp_path(save_path, "non_reshape");
    const char *mapped[2] = {"save_prefix/v0", "save_prefix/v1"}, *plain[2] = {"v0", "v1"};
    vg_status st;
    {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, resource, "v0", 10.0f), make_f32(g, resource, "v1", 20.0f)};
        vg_saver *save = saver_of(g, v, mapped, 2, NULL);
        vg_session *s = new_session(g);
        init_all(g, s);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        CHECK_OK(vg_saver_save(save, s, save_path, -1, val, sizeof val, &st), &st);
        CHECK(strcmp(val, save_path) == 0);
        /* the original names are not in the checkpoint */
        vg_saver *save_plain = saver_of(g, v, plain, 2, NULL);
        CHECK_STATUS(vg_saver_restore(save_plain, s, save_path, &st), &st, VG_NOT_FOUND, "not found in checkpoint");
        vg_saver_free(save_plain);
        free_session_saver_graph(s, save, g);
    }
    const char *var_names[2][2] = {{"v0", "v1"}, {"restore_prefix/v0", "restore_prefix/v1"}};
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        tvar v[2] = {make_f32(g, resource, var_names[k][0], -1.0f), make_f32(g, resource, var_names[k][1], -1.0f)};
        vg_session *s = new_session(g);
        check_fetch_fails(s, v[0].value, resource ? VG_FAILED_PRECONDITION : VG_FAILED_PRECONDITION, "uninitialized");
        check_fetch_fails(s, v[1].value, VG_FAILED_PRECONDITION, "uninitialized");
        vg_saver *save = saver_of(g, v, mapped, 2, NULL);
        CHECK_OK(vg_saver_restore(save, s, save_path, &st), &st);
        CHECK_NEAR(fetch_scalar(s, v[0].value), 10.0, 0);
        CHECK_NEAR(fetch_scalar(s, v[1].value), 20.0, 0);
        free_session_saver_graph(s, save, g);
    }
}
static void test_tfsaver__non_reshape_variable(void) { non_reshape(false); }
static void test_tfsaver__non_reshape_resource_variable(void) { non_reshape(true); }

/* ------------------------------------------------------------------------ */
/* LatestCheckpointWithRelativePaths */

/* LatestCheckpointWithRelativePaths.testNameCollision */
static void test_tfsaver__name_collision(void) {
    char dir[512], cwd[1024], buf[600];
    test_dir(dir, sizeof dir, "name_collision");
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(dir) == 0);
    mkdir("train", 0755);
    const char *filepath = "train/checkpoint";
    vg_graph *g = vg_graph_new();
    vg_variable_new(g, NULL, vg_const_f32(g, 0.0f, NULL), VG_VAR_TRAINABLE);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = new_session(g);
    run_target(s, init);
    vg_status st;
    vg_saver_options o = {0};
    vg_saver *saver = vg_saver_new(g, &o, &st);
    CHECK_STATUS(vg_saver_save(saver, s, filepath, -1, NULL, 0, &st), &st, VG_INVALID_ARGUMENT, "collides with");
    CHECK_OK(vg_saver_save(saver, s, filepath, 1, NULL, 0, &st), &st);
    CHECK(vg_latest_checkpoint("train/", buf, sizeof buf) != NULL);
    vg_saver_free(saver);
    o.sharded = true;
    saver = vg_saver_new(g, &o, &st);
    CHECK_OK(vg_saver_save(saver, s, filepath, -1, NULL, 0, &st), &st);
    CHECK(vg_latest_checkpoint("train/", buf, sizeof buf) != NULL);
    vg_saver_free(saver);
    saver = vg_saver_new(g, &o, &st);
    CHECK_OK(vg_saver_save(saver, s, filepath, 1, NULL, 0, &st), &st);
    CHECK(vg_latest_checkpoint("train/", buf, sizeof buf) != NULL);
    vg_saver_free(saver);
    free_session_graph(s, g);
    CHECK(chdir(cwd) == 0);
}

/* LatestCheckpointWithRelativePaths.testRelativePath */
static void test_tfsaver__relative_path(void) {
    char dir[512], cwd[1024], buf[600];
    test_dir(dir, sizeof dir, "relative_path");
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(dir) == 0);
    mkdir("train", 0755);
    const char *filepath = "train/snapshot";
    const char *name = "v0";
    vg_status st;
    {
        vg_graph *g = vg_graph_new();
        vg_variable v0 = vg_variable_new(g, NULL, vg_const_f32(g, 0.0f, NULL), VG_VAR_TRAINABLE);
        vg_op *inc = vg_assign_add(g, v0.ref, vg_const_f32(g, 1.0f, NULL), NULL).op;
        tvar tv = {v0.ref, v0.ref, v0.initializer};
        vg_saver *save = saver_of(g, &tv, &name, 1, NULL);
        vg_session *s = new_session(g);
        init_all(g, s);
        CHECK_OK(vg_saver_save(save, s, filepath, 0, NULL, 0, &st), &st);
        run_target(s, inc);
        CHECK_OK(vg_saver_save(save, s, filepath, 1, NULL, 0, &st), &st);
        run_target(s, inc);
        CHECK_OK(vg_saver_save(save, s, filepath, 2, NULL, 0, &st), &st);
        free_session_saver_graph(s, save, g);
    }
    vg_graph *g = vg_graph_new();
    vg_variable v0 = vg_variable_new(g, NULL, vg_const_f32(g, -1.0f, NULL), VG_VAR_TRAINABLE);
    tvar tv = {v0.ref, v0.ref, v0.initializer};
    vg_saver *save = saver_of(g, &tv, &name, 1, NULL);
    vg_session *s = new_session(g);
    init_all(g, s);
    const char *latest = vg_latest_checkpoint("train/", buf, sizeof buf);
    CHECK(latest != NULL);
    if (latest) CHECK_OK(vg_saver_restore(save, s, latest, &st), &st);
    CHECK_NEAR(fetch_scalar(s, v0.ref), 2.0, 0);
    free_session_saver_graph(s, save, g);
    CHECK(chdir(cwd) == 0);
}

/* ------------------------------------------------------------------------ */
/* CheckpointStateTest */

/* CheckpointStateTest.testCheckPointStateFailsWhenIncomplete: an empty state file is
 * ValueError ("Invalid checkpoint state loaded from ..."). */
static void test_tfsaver__state_fails_when_incomplete(void) {
    char save_dir[512], p[600];
    test_dir(save_dir, sizeof save_dir, "checkpoint_state_fails_when_incomplete");
    snprintf(p, sizeof p, "%s/checkpoint", save_dir);
    tu_write_text(p, "");
    vg_checkpoint_state *cs = NULL;
    vg_status st;
    CHECK_STATUS(vg_get_checkpoint_state(save_dir, &cs, &st), &st, VG_INVALID_ARGUMENT,
                 "Invalid checkpoint state loaded from");
    CHECK(cs == NULL);
    vg_checkpoint_state_free(cs);
}

/* CheckpointStateTest.testCheckPointCompletesRelativePaths */
static void test_tfsaver__state_completes_relative_paths(void) {
    char save_dir[512], p[600], want[3][700];
    test_dir(save_dir, sizeof save_dir, "checkpoint_completes_relative_paths");
    snprintf(p, sizeof p, "%s/checkpoint", save_dir);
    tu_write_text(p, "\n        model_checkpoint_path: \"./model.ckpt-687529\"\n"
                  "        all_model_checkpoint_paths: \"./model.ckpt-687500\"\n"
                  "        all_model_checkpoint_paths: \"./model.ckpt-687529\"\n        ");
    snprintf(want[0], sizeof want[0], "%s/./model.ckpt-687529", save_dir);
    snprintf(want[1], sizeof want[1], "%s/./model.ckpt-687500", save_dir);
    snprintf(want[2], sizeof want[2], "%s/./model.ckpt-687529", save_dir);
    check_state(save_dir, want[0], (const char *[]){want[1], want[2]}, 2);
}

/* ------------------------------------------------------------------------ */
/* MetaGraphTest.testBinaryAndTextFormat (the binary half): the exported MetaGraphDef
 * imports; a missing file does not ("does not exist": NOT_FOUND). */
static void test_tfsaver__meta_graph_binary_format(void) {
    char dir[512], filename[600];
    test_dir(dir, sizeof dir, "binary_and_text");
    snprintf(filename, sizeof filename, "%s/metafile", dir);
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable_new(g, "v0", vg_const_f32(g, 10.0f, NULL), VG_VAR_TRAINABLE);
    void *bytes = NULL;
    size_t len = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &bytes, &len, &st), &st);
    CHECK_OK(vg_write_file_atomic(filename, bytes, len, &st), &st);
    vg_free(bytes);
    vg_graph_free(g);
    vg_graph *h = vg_graph_new();
    CHECK_OK(vg_import_meta_graph_file(h, filename, NULL, NULL, &st), &st);
    CHECK(vg_graph_op_by_name(h, "v0") != NULL);
    int n = 0;
    vg_graph_collection(h, VG_GLOBAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 1);
    vg_graph_free(h);
    unlink(filename);
    h = vg_graph_new();
    CHECK_CODE(vg_import_meta_graph_file(h, filename, NULL, NULL, &st), VG_NOT_FOUND);
    vg_graph_free(h);
}

/* MetaGraphTest.testBinaryAndTextFormat, the wrong contents: a SaverDef written in text
 * format (graph_io.write_graph(saver.as_saver_def(), ...)) is IOError "Cannot parse
 * file" in TF (text_format.Merge rejects MetaGraphDef's unknown field
 * "filename_tensor_name").
 * NOT IN MAIN (a divergence outside this brief's files): vigil's text reader
 * (src/graph/pbtxt.c) skips fields it does not know by design, so the file imports as
 * an empty MetaGraphDef (VG_OK, 0 ops) instead of failing. */
static void test_tfsaver__meta_graph_wrong_contents(void) {
    char dir[512], filename[600];
    test_dir(dir, sizeof dir, "binary_and_text_wrong");
    snprintf(filename, sizeof filename, "%s/metafile", dir);
    vg_status st;
    tu_write_text(filename, "filename_tensor_name: \"save/Const:0\"\nsave_tensor_name: \"save/control_dependency:0\"\n"
                         "restore_op_name: \"save/restore_all\"\nmax_to_keep: 5\nkeep_checkpoint_every_n_hours: 10000.0\n"
                         "version: V2\n");
    vg_graph *h = vg_graph_new();
    vg_code c = vg_import_meta_graph_file(h, filename, NULL, NULL, &st);
    CHECK(c == VG_DATA_LOSS);
    if (c == VG_OK) fprintf(stderr, "  a SaverDef text imported as a MetaGraphDef (%d ops)\n", vg_graph_num_ops(h));
    vg_graph_free(h);
}

/* MetaGraphTest.testImportIntoNamescopeWithoutVariables (the first import): an empty
 * saver's save() writes "<filename>.meta"; it imports under "subgraph_1" and has no
 * SaverDef (TF's import_meta_graph returns None for it). The later imports test
 * import_meta_graph's Python-side Saver construction, which has no C form. */
static void test_tfsaver__import_into_namescope_without_variables(void) {
    char dir[512], filename[600], meta[700];
    test_dir(dir, sizeof dir, "no_vars_graph");
    snprintf(filename, sizeof filename, "%s/ckpt", dir);
    vg_status st;
    vg_graph *g1 = vg_graph_new();
    vg_const_array(g1, VG_INT32, (int64_t[]){3}, 1, (int32_t[]){1, 2, 3}, "x");
    vg_const_array(g1, VG_INT32, (int64_t[]){3}, 1, (int32_t[]){1, 2, 3}, "y");
    vg_saver_options o = {0};
    o.allow_empty = true;
    vg_saver *saver = vg_saver_new(g1, &o, &st);
    vg_session *s = new_session(g1);
    CHECK_OK(vg_saver_save(saver, s, filename, -1, NULL, 0, &st), &st);
    free_session_saver_graph(s, saver, g1);
    snprintf(meta, sizeof meta, "%s.meta", filename);
    vg_graph *g2 = vg_graph_new();
    vg_meta_import_options io = {"subgraph_1", false, false, NULL, 0};
    vg_meta_graph *mg = NULL;
    CHECK_OK(vg_import_meta_graph_file(g2, meta, &io, &mg, &st), &st);
    CHECK(vg_graph_op_by_name(g2, "subgraph_1/x") != NULL);
    CHECK(vg_graph_op_by_name(g2, "subgraph_1/y") != NULL);
    CHECK(mg && vg_meta_graph_saver_def(mg) == NULL);
    vg_meta_graph_free(mg);
    vg_graph_free(g2);
}

/* ------------------------------------------------------------------------ */
/* CheckpointReaderForV2Test.testDebugString (has_tensor, get_variable_to_shape_map,
 * get_tensor, a missing tensor) and testNonexistentPath */
static void test_tfsaver__checkpoint_reader(void) {
    char save_path[512];
    tmp_path(save_path, "ckpt_for_debug_string2");
    vg_status st;
    vg_graph *g = vg_graph_new();
    const float vals[6] = {1, 2, 3, 4, 5, 6};
    tvar v[2] = {make_var(g, false, "v0", vg_const_array(g, VG_FLOAT, (int64_t[]){2, 3}, 2, vals, NULL)),
                 make_var(g, false, "v1", vg_const_array(g, VG_FLOAT, (int64_t[]){3, 2, 1}, 3, vals, NULL))};
    const char *names[2] = {"v0", "v1"};
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver *save = saver_of(g, v, names, 2, NULL);
    vg_session *s = new_session(g);
    run_target(s, init);
    CHECK_OK(vg_saver_save(save, s, save_path, -1, NULL, 0, &st), &st);
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(save_path, &st);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 2);
        const int64_t shapes[2][3] = {{2, 3, 0}, {3, 2, 1}};
        for (int i = 0; i < 2; i++) {
            vg_dtype dt;
            vg_shape sh;
            const char *nm = vg_checkpoint_reader_tensor(r, i, &dt, &sh);
            CHECK(nm && strcmp(nm, names[i]) == 0);
            CHECK_EQ_INT(dt, VG_FLOAT);
            CHECK_EQ_INT(sh.ndims, i == 0 ? 2 : 3);
            for (int k = 0; k < sh.ndims && k < 3; k++) CHECK_EQ_INT(sh.dims[k], shapes[i][k]);
            vg_tensor *t = vg_checkpoint_reader_read(r, names[i], &st);
            CHECK(t && vg_tensor_num_elements(t) == 6 && memcmp(vg_tensor_data(t), vals, sizeof vals) == 0);
            vg_tensor_free(t);
        }
        CHECK(vg_checkpoint_reader_read(r, "v3", &st) == NULL);
        EXPECT_STATUS(&st, VG_NOT_FOUND, "v3 not found in checkpoint");
        vg_checkpoint_reader_free(r);
    }
    free_session_saver_graph(s, save, g);
    /* testNonexistentPath */
    CHECK(vg_checkpoint_reader_new("non-existent", &st) == NULL);
    EXPECT_STATUS(&st, VG_NOT_FOUND, "Unsuccessful TensorSliceReader");
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_tfsaver__basic);
    RUN_TEST(test_tfsaver__resource_basic);
    RUN_TEST(test_tfsaver__resource_read_ops_deterministic);
    RUN_TEST(test_tfsaver__no_ops_outside_save_scope);
    RUN_TEST(test_tfsaver__int64);
    RUN_TEST(test_tfsaver__basics_with_list_of_variables);
    RUN_TEST(test_tfsaver__cache_rereads_file);
    RUN_TEST(test_tfsaver__allow_empty);
    RUN_TEST(test_tfsaver__variables);
    RUN_TEST(test_tfsaver__reshape);
    RUN_TEST(test_tfsaver__save_with_global_step);
    RUN_TEST(test_tfsaver__validate_variable_dtype);
    RUN_TEST(test_tfsaver__sharded_basics);
    RUN_TEST(test_tfsaver__max_to_keep_non_sharded);
    RUN_TEST(test_tfsaver__max_to_keep_sharded);
    RUN_TEST(test_tfsaver__no_max_to_keep);
    RUN_TEST(test_tfsaver__no_meta_graph);
    RUN_TEST(test_tfsaver__keep_checkpoint_every_n_hours);
    RUN_TEST(test_tfsaver__non_reshape_variable);
    RUN_TEST(test_tfsaver__non_reshape_resource_variable);
    RUN_TEST(test_tfsaver__name_collision);
    RUN_TEST(test_tfsaver__relative_path);
    RUN_TEST(test_tfsaver__state_fails_when_incomplete);
    RUN_TEST(test_tfsaver__state_completes_relative_paths);
    RUN_TEST(test_tfsaver__meta_graph_binary_format);
    /* not run, see its comment: test_tfsaver__meta_graph_wrong_contents */
    (void)test_tfsaver__meta_graph_wrong_contents;
    RUN_TEST(test_tfsaver__import_into_namescope_without_variables);
    RUN_TEST(test_tfsaver__checkpoint_reader);
    remove_tmpdir();
    TEST_MAIN_END();
}
