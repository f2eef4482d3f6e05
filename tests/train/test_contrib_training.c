/* test_contrib_training.c - the tf.contrib calls the magenta events_rnn port needs:
 * create_train_op (slim's clip_gradient_norm: each gradient clip_by_norm'ed on its own;
 * CheckNumerics on the loss; UPDATE_OPS first; the loss as the train tensor),
 * tf.contrib.training.train, evaluate_repeatedly (checkpoints_iterator's timeout and
 * max_number_of_evaluations, the same hooks across evaluations),
 * tf.contrib.layers.fully_connected and aggregate_metric_map; values computed by hand. */
#include "op_test_util.h"
#include "kernels_fixture.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[256];

/* loss = sum(a * x) + sum(b * y) for a, b of 2 elements: d loss / d a = x, d loss / d b
 * = y. x = [3, 4] (norm 5), y = [0.3, 0.4] (norm 0.5). */
typedef struct model {
    vg_graph *g;
    vg_variable a, b;
    vg_output loss;
} model;

static model make_model(double scale) {
    model m;
    m.g = vg_graph_new();
    int64_t d2 = 2;
    double av[2] = {1, 2}, bv[2] = {-1, 1}, xv[2] = {3 * scale, 4 * scale}, yv[2] = {0.3, 0.4};
    m.a = vg_variable_new(m.g, "a", cst(m.g, VG_FLOAT, &d2, 1, av), VG_VAR_TRAINABLE);
    m.b = vg_variable_new(m.g, "b", cst(m.g, VG_FLOAT, &d2, 1, bv), VG_VAR_TRAINABLE);
    vg_output la = vg_reduce_sum(m.g, vg_mul(m.g, m.a.read, cst(m.g, VG_FLOAT, &d2, 1, xv), NULL), NULL, -1, false, NULL);
    vg_output lb = vg_reduce_sum(m.g, vg_mul(m.g, m.b.read, cst(m.g, VG_FLOAT, &d2, 1, yv), NULL), NULL, -1, false, NULL);
    m.loss = vg_add(m.g, la, lb, "loss");
    return m;
}

static void test_create_train_op_clips_each_gradient(void) {
    model m = make_model(1.0);
    vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
    /* an UPDATE_OPS op (a counter) must run with every step */
    vg_variable cnt = vg_variable_new(m.g, "cnt", vg_const_f32(m.g, 0, NULL), 0);
    vg_output inc = vg_assign_add(m.g, cnt.ref, vg_const_f32(m.g, 1, NULL), "inc");
    vg_graph_add_to_collection(m.g, VG_UPDATE_OPS, inc);
    vg_create_train_op_opts o = {0};
    o.clip_gradient_norm = 1.0;
    vg_output train = vg_create_train_op(m.g, m.loss, opt, &o);
    vg_status st;
    CHECK_OK(vg_graph_status(m.g, &st), &st);
    CHECK(train.op != NULL);
    if (!train.op) goto out;
    CHECK(strcmp(vg_op_name(train.op), "train_op/control_dependency") == 0);
    CHECK(vg_graph_op_by_name(m.g, "train_op/CheckNumerics") != NULL);
    CHECK(vg_graph_op_by_name(m.g, "update_barrier") != NULL);
    int n = 0;
    const vg_output *c = vg_graph_collection(m.g, "train_op", &n);
    CHECK(n >= 1 && c[n - 1].op == train.op);
    vg_output gs = vg_get_or_create_global_step(m.g);
    vg_op *init = vg_global_variables_initializer(m.g);
    vg_session *s = vg_session_new(m.g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_tensor *loss = NULL;
    CHECK_OK(vg_session_run1(s, train, &loss, &st), &st);
    /* the loss before the update: 1*3 + 2*4 - 0.3 + 0.4 = 11.1 */
    if (loss) CHECK_NEAR(get(loss, 0), 11.1, 1e-5);
    vg_tensor_free(loss);
    /* a's gradient [3, 4] (norm 5) becomes [0.6, 0.8]; b's [0.3, 0.4] (norm 0.5) stays:
     * clip_by_norm per gradient, not by the global norm */
    double want_a[2] = {1 - 0.6, 2 - 0.8}, want_b[2] = {-1 - 0.3, 1 - 0.4};
    vg_output reads[4] = {m.a.read, m.b.read, gs, cnt.read};
    vg_tensor *v[4] = {NULL, NULL, NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, reads, v, 4, NULL, 0, NULL, &st), &st);
    int64_t d2 = 2;
    check_values(v[0], VG_FLOAT, &d2, 1, want_a, 1e-6);
    check_values(v[1], VG_FLOAT, &d2, 1, want_b, 1e-6);
    if (v[2]) CHECK_EQ_INT(get(v[2], 0), 1);
    if (v[3]) CHECK_NEAR(get(v[3], 0), 1, 0);
    for (int i = 0; i < 4; i++) vg_tensor_free(v[i]);
    vg_session_free(s);
out:
    vg_optimizer_free(opt);
    vg_graph_free(m.g);

    /* a NaN loss: CheckNumerics fails the step with TF's message */
    m = make_model(NAN);
    opt = vg_optimizer_new_sgd(1.0);
    train = vg_create_train_op(m.g, m.loss, opt, NULL);
    CHECK(train.op != NULL);
    vg_op *init2 = vg_global_variables_initializer(m.g);
    s = vg_session_new(m.g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init2, 1, &st), &st);
    loss = NULL;
    CHECK_STATUS(vg_session_run1(s, train, &loss, &st), &st, VG_INVALID_ARGUMENT, "LossTensor is inf or nan");
    vg_tensor_free(loss);
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(m.g);

    /* bad arguments: a sticky INVALID_ARGUMENT */
    m = make_model(1.0);
    opt = vg_optimizer_new_sgd(1.0);
    o = (vg_create_train_op_opts){0};
    o.clip_gradient_norm = -1;
    CHECK(vg_create_train_op(m.g, m.loss, opt, &o).op == NULL);
    CHECK_STATUS(vg_graph_status(m.g, &st), &st, VG_INVALID_ARGUMENT, "clip_gradient_norm");
    vg_optimizer_free(opt);
    vg_graph_free(m.g);
    m = make_model(1.0);
    CHECK(vg_create_train_op(m.g, m.loss, NULL, NULL).op == NULL);
    CHECK_CODE(vg_graph_status(m.g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(m.g);
}

/* tf.contrib.training.train: MonitoredTrainingSession until StopAtStepHook; the loss
 * returned is the last step's; the chief's checkpoint holds the global step. */
static void test_training_train(void) {
    model m = make_model(1.0);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.01);
    vg_output train = vg_create_train_op(m.g, m.loss, opt, NULL);
    vg_status st;
    vg_hook stop;
    CHECK_OK(vg_stop_at_step_hook(-1, 5, &stop, &st), &st);
    char logdir[300];
    snprintf(logdir, sizeof logdir, "%s/train", dir);
    vg_mts_options o = {0};
    o.checkpoint_dir = logdir;
    o.hooks = &stop;
    o.nhooks = 1;
    o.no_step_counter = true;
    double loss = 0;
    CHECK_OK(vg_training_train(m.g, train, &o, &loss, &st), &st);
    /* SGD 0.01 on a linear loss: each step lowers it by 0.01 * |grad|^2 = 0.01 * 25.25;
     * the fifth step's value is the loss after four updates */
    CHECK_NEAR(loss, 11.1 - 4 * 0.2525, 1e-4);
    char path[600];
    snprintf(path, sizeof path, "%s/model.ckpt-5.index", logdir);
    CHECK(access(path, F_OK) == 0);
    vg_optimizer_free(opt);
    vg_file_writer_cache_clear();
    vg_graph_free(m.g);

    /* logdir None with summaries on: TF's ValueError */
    m = make_model(1.0);
    opt = vg_optimizer_new_sgd(0.01);
    train = vg_create_train_op(m.g, m.loss, opt, NULL);
    CHECK_OK(vg_stop_at_step_hook(-1, 5, &stop, &st), &st);
    o = (vg_mts_options){0};
    o.hooks = &stop;
    o.nhooks = 1;
    CHECK_STATUS(vg_training_train(m.g, train, &o, &loss, &st), &st, VG_INVALID_ARGUMENT, "logdir cannot be None");
    CHECK(isnan(loss));
    CHECK_CODE(vg_training_train(m.g, vg_out(NULL, 0), NULL, NULL, &st), VG_INVALID_ARGUMENT);
    vg_optimizer_free(opt);
    vg_graph_free(m.g);
}

/* evaluate_repeatedly over <dir>/train (model.ckpt-5 from test_training_train): a
 * streaming mean of a * [1, 1] over 3 batches = mean of the restored a. */
typedef struct counting {
    int begins;
} counting;
static vg_code count_begin(void *p, vg_graph *g, vg_status *st) {
    (void)g, (void)st;
    ((counting *)p)->begins++;
    return VG_OK;
}

static void test_evaluate_repeatedly(void) {
    char logdir[300];
    snprintf(logdir, sizeof logdir, "%s/train", dir);
    for (int round = 0; round < 2; round++) {
        model m = make_model(1.0);
        int64_t d2 = 2;
        double ones[2] = {1, 1};
        vg_metric mean = vg_metrics_mean(m.g, vg_mul(m.g, m.a.read, cst(m.g, VG_FLOAT, &d2, 1, ones), NULL), NULL);
        vg_get_or_create_global_step(m.g);
        vg_status st;
        vg_hook hooks[2];
        CHECK_OK(vg_stop_after_n_evals_hook(3, false, &hooks[0], &st), &st);
        counting cnt = {0};
        memset(&hooks[1], 0, sizeof hooks[1]);
        hooks[1].begin = count_begin;
        hooks[1].payload = &cnt;
        vg_evaluate_options o = {0};
        o.eval_ops = &mean.update.op;
        o.neval_ops = 1;
        o.final_ops = &mean.value;
        o.nfinal_ops = 1;
        o.hooks = hooks;
        o.nhooks = 2;
        vg_tensor *val = NULL;
        int64_t nevals = -1;
        double t0 = (double)time(NULL);
        /* round 0: max_number_of_evaluations 1 ends after the first; round 1: no limit,
         * the timeout (1 s without a new checkpoint) ends it */
        CHECK_OK(vg_evaluate_repeatedly(m.g, logdir, &o, 0, round == 0 ? 1 : 0, round == 0 ? -1 : 1.0, &val, &nevals,
                                        &st),
                 &st);
        CHECK_EQ_INT(nevals, 1);
        CHECK_EQ_INT(cnt.begins, 1);
        CHECK((double)time(NULL) - t0 < 10);
        /* a after 5 SGD steps of 0.01 * [3, 4]: [0.85, 1.8], mean 1.325 */
        CHECK(val != NULL);
        if (val) CHECK_NEAR(get(val, 0), 1.325, 1e-5);
        vg_tensor_free(val);
        vg_graph_free(m.g);
    }

    /* no checkpoint in the directory: the timeout ends the loop without an evaluation */
    model m = make_model(1.0);
    vg_status st;
    vg_evaluate_options o = {0};
    int64_t nevals = -1;
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    CHECK(mkdir(empty, 0700) == 0);
    CHECK_OK(vg_evaluate_repeatedly(m.g, empty, &o, 0, 0, 0, NULL, &nevals, &st), &st);
    CHECK_EQ_INT(nevals, 0);
    CHECK_CODE(vg_evaluate_repeatedly(m.g, NULL, &o, 0, 0, 0, NULL, &nevals, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(m.g);
}

static void test_fully_connected(void) {
    vg_graph *g = vg_graph_new();
    int64_t dx[2] = {2, 3};
    double xv[6] = {1, 2, 3, -1, 0, 2};
    vg_output x = cst(g, VG_FLOAT, dx, 2, xv);
    vg_output y = vg_fully_connected(g, x, 4, VG_ACT_NONE, NULL);
    vg_output y2 = vg_fully_connected(g, x, 4, VG_ACT_RELU, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_shape s = vg_output_shape(y);
    CHECK_EQ_INT(s.ndims, 2);
    CHECK_EQ_INT(s.dims[1], 4);
    CHECK(strcmp(vg_op_name(y.op), "fully_connected/BiasAdd") == 0);
    CHECK(strcmp(vg_op_name(y2.op), "fully_connected_1/Relu") == 0);
    CHECK(vg_graph_op_by_name(g, "fully_connected/weights") != NULL);
    CHECK(vg_graph_op_by_name(g, "fully_connected/biases") != NULL);
    CHECK(vg_graph_op_by_name(g, "fully_connected_1/weights") != NULL);
    int n = 0;
    vg_graph_collection(g, "model_variables", &n);
    CHECK_EQ_INT(n, 4);
    vg_output w = vg_graph_output_by_name(g, "fully_connected/weights/read", &st);
    vg_session *sess = initialized_session(g);
    vg_output f[2] = {y, w};
    vg_tensor *v[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(sess, NULL, NULL, NULL, 0, f, v, 2, NULL, 0, NULL, &st), &st);
    if (v[0] && v[1]) {
        /* biases are zeros: y = x W */
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                double want = 0;
                for (int k = 0; k < 3; k++) want += xv[i * 3 + k] * get(v[1], k * 4 + j);
                CHECK_NEAR(get(v[0], i * 4 + j), want, 1e-5);
            }
        /* glorot_uniform: |w| <= sqrt(6 / (3 + 4)) */
        for (int k = 0; k < 12; k++) CHECK(fabs(get(v[1], k)) <= sqrt(6.0 / 7.0) + 1e-6);
    }
    vg_tensor_free(v[0]);
    vg_tensor_free(v[1]);
    vg_session_free(sess);
    /* rank 1: INVALID_ARGUMENT */
    CHECK(vg_fully_connected(g, vg_const_f32(g, 1, NULL), 2, VG_ACT_NONE, "bad").op == NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    int64_t d1 = 3;
    CHECK(vg_fully_connected(g, cst(g, VG_FLOAT, &d1, 1, xv), 2, VG_ACT_NONE, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "fully_connected");
    vg_graph_free(g);
}

static void test_aggregate_metric_map(void) {
    vg_graph *g = vg_graph_new();
    int64_t d2 = 2;
    double v[2] = {1, 3}, l[2] = {1, 0};
    vg_metric m[2] = {vg_metrics_mean(g, cst(g, VG_FLOAT, &d2, 1, v), NULL),
                      vg_metrics_accuracy(g, cst(g, VG_FLOAT, &d2, 1, l), cst(g, VG_FLOAT, &d2, 1, l), NULL)};
    vg_output values[2], updates[2];
    CHECK_CODE(vg_aggregate_metric_map(m, 2, values, updates), VG_OK);
    for (int i = 0; i < 2; i++) {
        CHECK(values[i].op == m[i].value.op && values[i].index == m[i].value.index);
        CHECK(updates[i].op == m[i].update.op);
    }
    CHECK_CODE(vg_aggregate_metric_map(m, -1, values, updates), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_aggregate_metric_map(NULL, 1, values, updates), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_aggregate_metric_map(NULL, 0, NULL, NULL), VG_OK);
    vg_graph_free(g);
}

int main(void) {
    if (!tu_mkdtemp(dir, sizeof dir, "contrib_training")[0]) return 1;
    RUN_TEST(test_create_train_op_clips_each_gradient);
    RUN_TEST(test_training_train);
    RUN_TEST(test_evaluate_repeatedly);
    RUN_TEST(test_fully_connected);
    RUN_TEST(test_aggregate_metric_map);
    if (tu_rmrf(dir) != 0) fprintf(stderr, "could not remove %s\n", dir);
    TEST_MAIN_END();
}
