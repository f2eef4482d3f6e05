/* test_slim_learning.c - slim's variables helpers (TF 1.15
 * contrib/framework/python/ops/variables_test.py: ModelVariablesTest,
 * GetVariablesToRestoreTest, AssignFromCheckpointFnTest), warm starting a differently
 * headed net as train_image_classifier.py's _get_init_fn does
 * (--checkpoint_exclude_scopes), and slim.learning.train over a monitored session
 * (slim/python/slim/learning_test.py: testTrainWithNoInitAssignCanAchieveZeroLoss,
 * testResumeTrainAchievesRoughlyTheSameLoss). */
#include "test_util.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "vigil/vigil.h"

static bool same_list(const vg_output *got, int n, const char *const *want, int nw) {
    if (n != nw) return false;
    for (int i = 0; i < n; i++)
        if (strcmp(vg_op_name(got[i].op), want[i]) != 0) return false;
    return true;
}

static vg_variable var5(vg_graph *g, const char *name, double init) {
    vg_get_variable_opts o = {.dims = (int64_t[]){5}, .ndims = 1, .has_init = true, .init = vg_init_constant(init)};
    return vg_get_variable_ex(g, name, &o);
}

/* ModelVariablesTest.testNameAndShape / testNotInLocalVariables;
 * GetVariablesToRestoreTest.testNoneIncludeExclude / testIncludeSubsetsOfVars /
 * testExcludeVariables */
static void test_variables(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "A", NULL);
    vg_get_variable_opts o = {.dims = (int64_t[]){5}, .ndims = 1};
    vg_variable a = vg_slim_model_variable(g, "a", &o);
    vg_variable_scope_pop(g);
    CHECK(a.var && strcmp(vg_op_name(a.var), "A/a") == 0);
    vg_output mv[4];
    CHECK_EQ_INT(vg_slim_get_model_variables(g, "A", mv, 4), 1);
    CHECK(mv[0].op == a.var);
    int nl = 0;
    vg_graph_collection(g, VG_LOCAL_VARIABLES, &nl);
    CHECK_EQ_INT(nl, 0);
    /* reuse adds no second entry */
    vg_variable_scope_opts ro = {.reuse = VG_REUSE_TRUE};
    vg_variable_scope_push(g, "A", &ro);
    vg_variable a2 = vg_slim_model_variable(g, "a", &o);
    vg_variable_scope_pop(g);
    CHECK(a2.var == a.var);
    CHECK_EQ_INT(vg_slim_get_model_variables(g, NULL, NULL, 0), 1);

    vg_variable_scope_push(g, "B", NULL);
    vg_variable b = var5(g, "a", 0);
    vg_variable_scope_pop(g);
    CHECK(b.var != NULL);
    vg_output v[8];
    int n = vg_slim_get_variables_to_restore(g, NULL, 0, NULL, 0, v, 8);
    CHECK(same_list(v, n, (const char *[]){"A/a", "B/a"}, 2));
    n = vg_slim_get_variables_to_restore(g, (const char *[]){"A"}, 1, NULL, 0, v, 8);
    CHECK(same_list(v, n, (const char *[]){"A/a"}, 1));
    n = vg_slim_get_variables_to_restore(g, NULL, 0, (const char *[]){"A"}, 1, v, 8);
    CHECK(same_list(v, n, (const char *[]){"B/a"}, 1));
    n = vg_slim_get_variables_to_restore(g, (const char *[]){"B", "A"}, 2, (const char *[]){"C"}, 1, v, 8);
    CHECK(same_list(v, n, (const char *[]){"B/a", "A/a"}, 2));
    /* counting only */
    CHECK_EQ_INT(vg_slim_get_variables_to_restore(g, NULL, 0, NULL, 0, NULL, 0), 2);
    vg_graph_free(g);
}

static float first_value(vg_session *s, vg_graph *g, const char *name) {
    vg_tensor *t = NULL;
    vg_status st;
    float r = NAN;
    if (vg_session_run1(s, vg_variable_snapshot(vg_graph_op_by_name(g, name)), &t, &st) == VG_OK)
        r = ((float *)vg_tensor_data(t))[0];
    vg_tensor_free(t);
    return r;
}

/* writes var0 = 10, var1 = 20 (AssignFromCheckpointFnTest's create_checkpoint) */
static void write_checkpoint(const char *prefix) {
    vg_graph *g = vg_graph_new();
    var5(g, "var0", 10);
    var5(g, "var1", 20);
    vg_status st;
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    vg_session *s = initialized_session(g);
    CHECK_OK(vg_saver_save(sv, s, prefix, -1, NULL, 0, &st), &st);
    free_session_saver_graph(s, sv, g);
}

/* AssignFromCheckpointFnTest: testLoadExistingVariables, testNotFound,
 * testMissingVariablesList, testMissingVariablesDict (the dict form: other keys) */
/* A new temporary directory dir (tag) holding write_checkpoint's checkpoint, whose
 * prefix is prefix ("<dir>/model"). */
typedef struct slim_ckpt {
    char dir[256], prefix[512];
} slim_ckpt;
static slim_ckpt checkpoint_in_tmpdir(const char *tag) {
    slim_ckpt c;
    tu_mkdtemp(c.dir, sizeof c.dir, tag);
    snprintf(c.prefix, sizeof c.prefix, "%s/model", c.dir);
    write_checkpoint(c.prefix);
    return c;
}

/* The end of one AssignFromCheckpointFn case: frees s, f and g. */
static void free_session_fn_graph(vg_session *s, vg_slim_init_fn *f, vg_graph *g) {
    vg_session_free(s);
    vg_slim_init_fn_free(f);
    vg_graph_free(g);
}

static void test_assign_from_checkpoint_fn(void) {
    slim_ckpt ck = checkpoint_in_tmpdir("slim_ckpt");
    vg_status st;

    /* testLoadExistingVariables */
    vg_graph *g = vg_graph_new();
    vg_variable v0 = var5(g, "var0", 1), v1 = var5(g, "var1", 2);
    vg_slim_init_fn *f =
        vg_slim_assign_from_checkpoint_fn(g, ck.prefix, (vg_output[]){v0.ref, v1.ref}, 2, NULL, false, &st);
    CHECK(f != NULL);
    vg_session *s = initialized_session(g);
    CHECK_NEAR(first_value(s, g, "var0"), 1, 0);
    CHECK_OK(vg_slim_init_fn_run(f, s, &st), &st);
    CHECK_NEAR(first_value(s, g, "var0"), 10, 0);
    CHECK_NEAR(first_value(s, g, "var1"), 20, 0);
    free_session_fn_graph(s, f, g);

    /* testNotFound: var2 is not in the checkpoint: NotFoundError naming it */
    g = vg_graph_new();
    v0 = var5(g, "var0", 1);
    vg_variable v2 = var5(g, "var2", 3);
    f = vg_slim_assign_from_checkpoint_fn(g, ck.prefix, (vg_output[]){v0.ref, v2.ref}, 2, NULL, false, &st);
    CHECK(f != NULL);
    s = initialized_session(g);
    CHECK_EQ_INT(vg_slim_init_fn_run(f, s, &st), VG_NOT_FOUND);
    CHECK_STR_CONTAINS(st.msg, "var2");
    free_session_fn_graph(s, f, g);

    /* testMissingVariablesList: ignore_missing_vars: var0 restored, var2 kept */
    g = vg_graph_new();
    v0 = var5(g, "var0", 1);
    v2 = var5(g, "var2", 3);
    f = vg_slim_assign_from_checkpoint_fn(g, ck.prefix, (vg_output[]){v0.ref, v2.ref}, 2, NULL, true, &st);
    CHECK(f != NULL);
    s = initialized_session(g);
    CHECK_OK(vg_slim_init_fn_run(f, s, &st), &st);
    CHECK_NEAR(first_value(s, g, "var0"), 10, 0);
    CHECK_NEAR(first_value(s, g, "var2"), 3, 0);
    vg_session_free(s);
    vg_slim_init_fn_free(f);
    /* nothing left to restore: None, no error */
    f = vg_slim_assign_from_checkpoint_fn(g, ck.prefix, &v2.ref, 1, NULL, true, &st);
    CHECK(f == NULL);
    CHECK_EQ_INT(st.code, VG_OK);
    /* var_list cannot be empty */
    CHECK(vg_slim_assign_from_checkpoint_fn(g, ck.prefix, NULL, 0, NULL, false, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT, "var_list cannot be empty");
    vg_graph_free(g);

    /* testMissingVariablesDict: {'var0': v_new0, 'var1': v_new1, 'v2': ...} */
    g = vg_graph_new();
    vg_variable n0 = var5(g, "new0", 1), n1 = var5(g, "new1", 2);
    f = vg_slim_assign_from_checkpoint_fn(g, ck.dir, (vg_output[]){n0.ref, n1.ref}, 2,
                                          (const char *[]){"var1", "var0"}, true, &st);
    CHECK(f != NULL); /* a directory: its latest checkpoint */
    s = initialized_session(g);
    CHECK_OK(vg_slim_init_fn_run(f, s, &st), &st);
    CHECK_NEAR(first_value(s, g, "new0"), 20, 0);
    CHECK_NEAR(first_value(s, g, "new1"), 10, 0);
    free_session_fn_graph(s, f, g);
    tu_rmrf(ck.dir);
}

/* AssignFromCheckpointTest: testLoadExistingVariables, testRaisesValueErrorIfAVariableIsntFound,
 * testLoadExistingVariablesDifferentShapes-like (a shape mismatch), ignore_missing_vars */
static void test_assign_from_checkpoint(void) {
    slim_ckpt ck = checkpoint_in_tmpdir("slim_afc");
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v0 = var5(g, "var0", 1), v1 = var5(g, "var1", 2), v2 = var5(g, "var2", 3);
    vg_slim_feed_dict fd;
    vg_op *op = vg_slim_assign_from_checkpoint(g, ck.prefix, (vg_output[]){v0.ref, v1.ref}, 2, NULL, false, &fd, &st);
    CHECK(op != NULL);
    CHECK_EQ_INT(fd.n, 2);
    CHECK(op && strcmp(vg_op_name(op), "group_deps") == 0);
    CHECK(vg_graph_op_by_name(g, "placeholder/var0") != NULL);
    vg_session *s = initialized_session(g);
    if (op)
        CHECK_OK(vg_session_run(s, NULL, fd.feeds, fd.values, fd.n, NULL, NULL, 0, &op, 1, NULL, &st), &st);
    CHECK_NEAR(first_value(s, g, "var0"), 10, 0);
    CHECK_NEAR(first_value(s, g, "var1"), 20, 0);
    vg_slim_feed_dict_free(&fd);
    /* a variable the checkpoint lacks: ValueError, or skipped with ignore_missing_vars */
    CHECK(vg_slim_assign_from_checkpoint(g, ck.prefix, (vg_output[]){v0.ref, v2.ref}, 2, NULL, false, &fd, &st) ==
          NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT, "Checkpoint is missing variable [var2]");
    CHECK_EQ_INT(fd.n, 0);
    op = vg_slim_assign_from_checkpoint(g, ck.prefix, (vg_output[]){v0.ref, v2.ref}, 2, NULL, true, &fd, &st);
    CHECK(op != NULL);
    CHECK_EQ_INT(fd.n, 1);
    vg_slim_feed_dict_free(&fd);
    /* another shape under the key */
    vg_get_variable_opts o3 = {.dims = (int64_t[]){3}, .ndims = 1};
    vg_variable w3 = vg_get_variable_ex(g, "w3", &o3);
    CHECK(vg_slim_assign_from_checkpoint(g, ck.prefix, &w3.ref, 1, (const char *[]){"var0"}, false, &fd, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "Total size of new array must be unchanged for var0");
    free_session_graph(s, g);
    tu_rmrf(ck.dir);
}

/* ---- a tiny slim net and its training ----------------------------------------- */

/* conv2d + batch_norm -> avg_pool -> conv2d logits [num_classes], softmax cross
 * entropy on fixed images and labels, under "Net" */
static vg_output build_net(vg_graph *g, int num_classes, vg_optimizer *opt) {
    vg_graph_set_seed(g, 7);
    float x[4 * 4 * 4 * 2];
    for (int i = 0; i < 4 * 4 * 4 * 2; i++) x[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    float y[4 * 7] = {0};
    for (int i = 0; i < 4; i++) y[i * num_classes + i % num_classes] = 1;
    vg_output img = vg_const_array(g, VG_FLOAT, (int64_t[]){4, 4, 4, 2}, 4, x, "images");
    vg_output labels = vg_const_array(g, VG_FLOAT, (int64_t[]){4, num_classes}, 2, y, "labels");
    vg_slim_args bn = {.decay = 0.9, .scale = VG_SLIM_TRUE};
    vg_slim_args sc = {.normalizer_fn = VG_SLIM_BATCH_NORM, .normalizer_params = &bn};
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D}, 1, &sc);
    vg_variable_scope_push(g, "Net", NULL);
    vg_output net = vg_slim_conv2d(g, img, 8, 3, 3, "Conv2d_0", NULL);
    net = vg_slim_avg_pool2d(g, net, 4, 4, "AvgPool", NULL);
    net = vg_slim_conv2d(g, net, num_classes, 1, 1, "Logits",
                         &(vg_slim_args){.activation_fn = VG_SLIM_LINEAR, .normalizer_fn = VG_SLIM_NO_NORMALIZER});
    net = vg_squeeze(g, net, (int32_t[]){1, 2}, 2, "SpatialSqueeze");
    vg_variable_scope_pop(g);
    vg_slim_arg_scope_pop(g);
    vg_losses_softmax_cross_entropy(g, labels, net, 0.0, NULL);
    vg_output total = vg_losses_get_total_loss(g, true, NULL);
    return vg_create_train_op(g, total, opt, NULL);
}

typedef struct counted_init {
    vg_slim_init_fn *f;
    int calls;
} counted_init;

static vg_code counted_init_fn(void *payload, vg_scaffold *sc, vg_session *sess, vg_status *st) {
    counted_init *c = payload;
    c->calls++;
    return c->f->fn(c->f, sc, sess, st);
}

typedef struct step_count {
    int steps;
} step_count;

static vg_code count_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    (void)ctx;
    (void)v;
    (void)st;
    ((step_count *)p)->steps++;
    return VG_OK;
}

/* learning_test.py testTrainWithNoInitAssignCanAchieveZeroLoss (the loss falls),
 * testResumeTrainAchievesRoughlyTheSameLoss (a rerun resumes from logdir's checkpoint),
 * with a warm start from another net's checkpoint excluding its head
 * (train_image_classifier.py: --checkpoint_exclude_scopes=Net/Logits) */
static void test_train_warm_start_resume(void) {
    char pre[256], logdir[256];
    tu_mkdtemp(pre, sizeof pre, "slim_pre");
    tu_mkdtemp(logdir, sizeof logdir, "slim_train");
    vg_status st;

    /* the "published" checkpoint: a 5-class net trained a few steps */
    vg_graph *g = vg_graph_new();
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    vg_output train_op = build_net(g, 5, opt);
    double loss0 = NAN;
    vg_slim_train_opts o = {.number_of_steps = 5, .no_summaries = true, .no_logging = true};
    CHECK_OK(vg_slim_learning_train(g, train_op, pre, &o, &loss0, &st), &st);
    char latest[600];
    CHECK(vg_latest_checkpoint(pre, latest, sizeof latest) != NULL);
    CHECK_STR_CONTAINS(latest, "model.ckpt-5");
    vg_optimizer_free(opt);
    vg_graph_free(g);

    /* the init_fn as a Scaffold's init_fn: after init_op the restored variables hold the
     * checkpoint's values, the new head keeps its initial value (and its 7 classes) */
    {
        char pre_latest[600];
        vg_latest_checkpoint(pre, pre_latest, sizeof pre_latest);
        vg_checkpoint_reader *r0 = vg_checkpoint_reader_new(pre_latest, &st);
        vg_graph *g2 = vg_graph_new();
        vg_optimizer *o2 = vg_optimizer_new_sgd(0.5);
        build_net(g2, 7, o2);
        vg_output rv[32];
        int nr = vg_slim_get_variables_to_restore(g2, NULL, 0, (const char *[]){"Net/Logits", "global_step"}, 2, rv,
                                                  32);
        vg_slim_init_fn *f2 = vg_slim_assign_from_checkpoint_fn(g2, pre_latest, rv, nr, NULL, false, &st);
        vg_scaffold_options so = {0};
        so.init_fn = f2 ? f2->fn : NULL;
        so.init_fn_payload = f2;
        vg_scaffold *scf = vg_scaffold_new(&so);
        vg_singular_options smo = {0};
        smo.scaffold = scf;
        vg_monitored_session *ms = vg_singular_monitored_session_new(g2, &smo, &st);
        CHECK(ms && r0);
        if (ms && r0) {
            vg_session *raw = vg_monitored_session_raw_session(ms);
            vg_tensor *want = vg_checkpoint_reader_read(r0, "Net/Conv2d_0/BatchNorm/gamma", &st);
            vg_tensor *got = NULL;
            CHECK_OK(vg_session_run1(raw, vg_variable_snapshot(vg_graph_op_by_name(g2, "Net/Conv2d_0/BatchNorm/gamma")),
                                     &got, &st), &st);
            if (want && got) {
                const float *w = vg_tensor_data(want), *v = vg_tensor_data(got);
                CHECK(w[0] != 1.0f); /* trained: not the ones initializer */
                for (int i = 0; i < 8; i++) CHECK_NEAR(v[i], w[i], 0);
            }
            vg_tensor_free(want);
            vg_tensor_free(got);
            vg_tensor *lw = NULL;
            CHECK_OK(vg_session_run1(raw, vg_variable_snapshot(vg_graph_op_by_name(g2, "Net/Logits/weights")), &lw, &st),
                     &st);
            if (lw) CHECK_EQ_INT(vg_tensor_shape(lw).dims[3], 7);
            vg_tensor_free(lw);
        }
        if (ms) {
            vg_monitored_session_close(ms, &st);
            vg_monitored_session_free(ms);
        }
        vg_scaffold_free(scf);
        vg_slim_init_fn_free(f2);
        vg_checkpoint_reader_free(r0);
        vg_optimizer_free(o2);
        vg_graph_free(g2);
    }

    /* a 7-class net: restore everything but Net/Logits (and the optimizer's state) */
    g = vg_graph_new();
    opt = vg_optimizer_new_sgd(0.5);
    train_op = build_net(g, 7, opt);
    vg_output vars[32];
    int n = vg_slim_get_variables_to_restore(g, NULL, 0, (const char *[]){"Net/Logits", "global_step"}, 2, vars, 32);
    CHECK_EQ_INT(n, 5); /* Conv2d_0: weights, gamma, beta, moving_mean, moving_variance */
    counted_init ci = {vg_slim_assign_from_checkpoint_fn(g, pre, vars, n, NULL, true, &st), 0};
    CHECK(ci.f != NULL);
    step_count sc1 = {0};
    vg_hook counter = {"count", NULL, NULL, NULL, count_after, NULL, NULL, &sc1};
    o = (vg_slim_train_opts){.number_of_steps = 1, .no_summaries = true, .init_fn = counted_init_fn,
                             .init_fn_payload = &ci, .hooks = &counter, .nhooks = 1};
    double loss1 = NAN;
    CHECK_OK(vg_slim_learning_train(g, train_op, logdir, &o, &loss1, &st), &st);
    CHECK_EQ_INT(ci.calls, 1);
    CHECK_EQ_INT(sc1.steps, 1);
    CHECK(vg_latest_checkpoint(logdir, latest, sizeof latest) != NULL);
    CHECK_STR_CONTAINS(latest, "model.ckpt-1");
    vg_slim_init_fn_free(ci.f);
    vg_optimizer_free(opt);
    vg_graph_free(g);

    /* the rerun: resumes at step 1 (init_fn not called), trains to 40; the loss falls */
    g = vg_graph_new();
    opt = vg_optimizer_new_sgd(0.5);
    train_op = build_net(g, 7, opt);
    n = vg_slim_get_variables_to_restore(g, NULL, 0, (const char *[]){"Net/Logits", "global_step"}, 2, vars, 32);
    ci = (counted_init){vg_slim_assign_from_checkpoint_fn(g, pre, vars, n, NULL, true, &st), 0};
    step_count sc2 = {0};
    vg_hook counter2 = {"count", NULL, NULL, NULL, count_after, NULL, NULL, &sc2};
    o = (vg_slim_train_opts){.number_of_steps = 40, .no_summaries = true, .log_every_n_steps = 10,
                             .init_fn = counted_init_fn, .init_fn_payload = &ci, .hooks = &counter2, .nhooks = 1};
    double loss2 = NAN;
    CHECK_OK(vg_slim_learning_train(g, train_op, logdir, &o, &loss2, &st), &st);
    CHECK_EQ_INT(ci.calls, 0);
    CHECK_EQ_INT(sc2.steps, 39);
    CHECK(loss2 < loss1 * 0.5);
    CHECK(vg_latest_checkpoint(logdir, latest, sizeof latest) != NULL);
    CHECK_STR_CONTAINS(latest, "model.ckpt-40");
    vg_slim_init_fn_free(ci.f);
    vg_optimizer_free(opt);
    vg_graph_free(g);
    (void)loss0;
    tu_rmrf(pre);
    tu_rmrf(logdir);
}

/* learning_test.py CreateTrainOpTest.testUseUpdateOps: BatchNormClassifier
 * (batch_norm(decay=0.1, fused=False) -> fully_connected(1, sigmoid)), log_loss,
 * create_train_op with SGD 1.0; after 10 steps the moving mean and variance are the
 * inputs' mean and (biased) variance */
static void test_create_train_op_update_ops(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 0);
    float in[16 * 4], lab[16];
    for (int i = 0; i < 64; i++) in[i] = (float)((i * 29 + 7) % 17) / 17.0f;
    for (int i = 0; i < 16; i++) lab[i] = (float)(i % 2);
    vg_output x = vg_const_array(g, VG_FLOAT, (int64_t[]){16, 4}, 2, in, "inputs");
    vg_output y = vg_const_array(g, VG_FLOAT, (int64_t[]){16, 1}, 2, lab, "labels");
    vg_output net = vg_slim_batch_norm(g, x, NULL, &(vg_slim_args){.decay = 0.1, .fused = VG_SLIM_FALSE});
    net = vg_slim_fully_connected(g, net, 1, NULL, &(vg_slim_args){.activation_fn = VG_ACT_SIGMOID});
    vg_losses_log_loss(g, y, net, 1e-7, NULL);
    vg_output total = vg_losses_get_total_loss(g, true, NULL);
    vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
    vg_output train_op = vg_create_train_op(g, total, opt, NULL);
    CHECK(train_op.op != NULL);
    vg_status st;
    vg_session *s = initialized_session(g);
    CHECK_NEAR(first_value(s, g, "BatchNorm/moving_mean"), 0, 0);
    CHECK_NEAR(first_value(s, g, "BatchNorm/moving_variance"), 1, 0);
    for (int i = 0; i < 10; i++) {
        vg_tensor *l = NULL;
        CHECK_OK(vg_session_run1(s, train_op, &l, &st), &st);
        vg_tensor_free(l);
    }
    vg_tensor *mm = NULL, *mv = NULL;
    vg_session_run1(s, vg_variable_snapshot(vg_graph_op_by_name(g, "BatchNorm/moving_mean")), &mm, &st);
    vg_session_run1(s, vg_variable_snapshot(vg_graph_op_by_name(g, "BatchNorm/moving_variance")), &mv, &st);
    CHECK(mm && mv);
    for (int c = 0; c < 4 && mm && mv; c++) {
        double mean = 0, var = 0;
        for (int r = 0; r < 16; r++) mean += in[r * 4 + c] / 16.0;
        for (int r = 0; r < 16; r++) var += (in[r * 4 + c] - mean) * (in[r * 4 + c] - mean) / 16.0;
        CHECK_NEAR(((float *)vg_tensor_data(mm))[c], mean, 1e-5);
        CHECK_NEAR(((float *)vg_tensor_data(mv))[c], var, 1e-5);
    }
    vg_tensor_free(mm);
    vg_tensor_free(mv);
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* slim.learning.train's argument errors; logdir=None trains without saving */
static void test_train_errors(void) {
    vg_status st;
    vg_graph *g0 = vg_graph_new();
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    vg_output train_op = build_net(g0, 5, opt);
    double loss = NAN;
    CHECK_OK(vg_slim_learning_train(g0, train_op, NULL, &(vg_slim_train_opts){.number_of_steps = 3}, &loss, &st), &st);
    CHECK(isfinite(loss) && loss > 0);
    vg_optimizer_free(opt);
    vg_graph_free(g0);
    CHECK_EQ_INT(vg_slim_learning_train(NULL, (vg_output){NULL, 0}, NULL, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    vg_graph *g = vg_graph_new();
    CHECK_EQ_INT(vg_slim_learning_train(g, (vg_output){NULL, 0}, "/tmp", NULL, NULL, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_variables);
    RUN_TEST(test_assign_from_checkpoint_fn);
    RUN_TEST(test_assign_from_checkpoint);
    RUN_TEST(test_create_train_op_update_ops);
    RUN_TEST(test_train_warm_start_resume);
    RUN_TEST(test_train_errors);
    TEST_MAIN_END();
}
