/* test_device_config.c - tf.device scopes (ops get the innermost device; tf.device(None)
 * clears), the placer's checks of ConfigProto (CPU spellings accepted, a GPU without
 * allow_soft_placement fails as TF, soft placement runs on the CPU, malformed strings),
 * log_device_placement and the ignored gpu_options, thread counts. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "mts_fixture.h"

static int nlogs;
static char last_log[512];
static void capture(void *payload, vg_log_level level, const char *msg) {
    (void)payload;
    (void)level;
    nlogs++;
    snprintf(last_log, sizeof last_log, "%s", msg);
}

static void test_device_scopes(void) {
    vg_graph *g = vg_graph_new();
    CHECK_EQ_INT(vg_graph_push_device(g, "/cpu:0"), VG_OK);
    vg_output a = vg_const_f32(g, 1, "a");
    vg_graph_push_device(g, "/device:GPU:0");
    vg_output b = vg_const_f32(g, 2, "b");
    CHECK(strcmp(vg_graph_device(g), "/device:GPU:0") == 0);
    vg_graph_push_device(g, NULL);
    vg_output c = vg_const_f32(g, 3, "c");
    vg_graph_pop_device(g);
    vg_graph_pop_device(g);
    vg_output d = vg_add(g, a, b, "d");
    vg_graph_pop_device(g);
    vg_graph_pop_device(g); /* extra pop: no-op */
    vg_output e = vg_add(g, d, c, "e");
    CHECK(strcmp(vg_op_device(a.op), "/cpu:0") == 0);
    CHECK(strcmp(vg_op_device(b.op), "/device:GPU:0") == 0);
    CHECK(strcmp(vg_op_device(c.op), "") == 0);
    CHECK(strcmp(vg_op_device(d.op), "/cpu:0") == 0);
    CHECK(strcmp(vg_op_device(e.op), "") == 0);
    CHECK(strcmp(vg_graph_device(g), "") == 0);

    vg_status st;
    vg_config_proto cfg = {0};
    CHECK(vg_session_new_with_config(g, &cfg, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Cannot assign a device for operation b: b was explicitly assigned to /device:GPU:0 "
                               "but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0 ]");
    cfg.allow_soft_placement = true;
    cfg.log_device_placement = true;
    cfg.intra_op_parallelism_threads = 1;
    cfg.inter_op_parallelism_threads = 1;
    cfg.gpu_allow_growth = true;
    nlogs = 0;
    vg_log_set(capture, NULL, VG_LOG_INFO);
    vg_session *s = vg_session_new_with_config(g, &cfg, &st);
    vg_log_set(vg_log_stderr, NULL, VG_LOG_INFO);
    CHECK(s != NULL);
    CHECK(nlogs >= vg_graph_num_ops(g) + 1);
    CHECK_STR_CONTAINS(last_log, "e: (");
    CHECK_STR_CONTAINS(last_log, "/job:localhost/replica:0/task:0/device:CPU:0");
    vg_tensor *out = NULL;
    if (s) {
        CHECK_OK(vg_session_run1(s, e, &out, &st), &st);
        CHECK(out && ((const float *)vg_tensor_data(out))[0] == 6);
        vg_tensor_free(out);
        vg_session_free(s);
    }
    vg_graph_free(g);
}

static void expect_placement(const char *device, vg_code want) {
    vg_graph *g = vg_graph_new();
    vg_graph_push_device(g, device);
    vg_const_f32(g, 1, "x");
    vg_graph_pop_device(g);
    vg_status st;
    vg_code c = vg_config_check_placement(g, NULL, &st);
    if (c != want) fprintf(stderr, "  device '%s': got %s (%s)\n", device, vg_code_name(c), st.msg);
    CHECK_EQ_INT(c, want);
    vg_graph_free(g);
}

static void test_device_strings(void) {
    expect_placement("/cpu:0", VG_OK);
    expect_placement("/CPU:0", VG_OK);
    expect_placement("/device:CPU:0", VG_OK);
    expect_placement("CPU", VG_OK);
    expect_placement("cpu:0", VG_OK);
    expect_placement("/job:localhost/replica:0/task:0/device:CPU:0", VG_OK);
    expect_placement("/job:localhost/device:CPU:*", VG_OK);
    expect_placement("/gpu:0", VG_INVALID_ARGUMENT);
    expect_placement("/device:GPU:1", VG_INVALID_ARGUMENT);
    expect_placement("/device:TPU:0", VG_INVALID_ARGUMENT);
    expect_placement("/cpu:1", VG_INVALID_ARGUMENT);
    expect_placement("/job:ps/task:0/device:CPU:0", VG_INVALID_ARGUMENT);
    expect_placement("GPU", VG_INVALID_ARGUMENT);
    vg_graph *g = vg_graph_new();
    vg_graph_push_device(g, "/bogus");
    vg_const_f32(g, 1, "x");
    vg_graph_pop_device(g);
    vg_status st;
    CHECK_STATUS(vg_config_check_placement(g, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "Malformed device specification '/bogus' in node x");
    vg_config_proto soft = {0};
    soft.allow_soft_placement = true;
    CHECK_EQ_INT(vg_config_check_placement(g, &soft, &st), VG_INVALID_ARGUMENT); /* malformed stays an error */
    vg_graph_free(g);
}

/* tf.train.MonitoredTrainingSession(config=...), SingularMonitoredSession(config=...) and
 * ChiefSessionCreator(config=...) make their sessions as tf.Session(config=...): an op on
 * "/gpu:0" fails to place without allow_soft_placement (also with config=None, TF's
 * default ConfigProto) and runs on the CPU with it. */
static void test_monitored_sessions_take_config(void) {
    char dir[256];
    tu_mkdtemp(dir, sizeof dir, "devcfg");
    vg_graph *g = vg_graph_new();
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output one = vg_const_i64(g, 1, NULL);
    vg_graph_push_device(g, "/gpu:0");
    vg_op *train = vg_assign_add(g, gs, one, "train").op;
    vg_graph_pop_device(g);
    vg_status st;
    vg_mts_options mo = {0};
    mo.checkpoint_dir = dir;
    mo.no_step_counter = true;
    mo.no_summaries = true;
    CHECK(vg_monitored_training_session_new(g, &mo, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT,
        "Cannot assign a device for operation train: train was explicitly assigned to /gpu:0");
    vg_config_proto cfg = {0};
    cfg.allow_soft_placement = true;
    cfg.intra_op_parallelism_threads = cfg.inter_op_parallelism_threads = 1;
    mo.config = &cfg;
    vg_monitored_session *ms = vg_monitored_training_session_new(g, &mo, &st);
    CHECK(ms != NULL);
    if (ms) {
        CHECK_EQ_INT(mts_run1(ms, NULL, train, NULL, &st), VG_OK);
        vg_monitored_session_free(ms);
    }

    vg_singular_options so = {0};
    CHECK(vg_singular_monitored_session_new(g, &so, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    so.config = &cfg;
    ms = vg_singular_monitored_session_new(g, &so, &st);
    CHECK(ms != NULL);
    if (ms) vg_monitored_session_free(ms);

    vg_session_creator_options co = {0};
    vg_session_creator cr;
    CHECK_EQ_INT(vg_chief_session_creator(g, &co, &cr, &st), VG_OK);
    CHECK(cr.create_session(cr.payload, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    cr.destroy(cr.payload);
    co.config = &cfg;
    CHECK_EQ_INT(vg_chief_session_creator(g, &co, &cr, &st), VG_OK);
    vg_session *s = cr.create_session(cr.payload, &st);
    CHECK(s != NULL);
    if (s) vg_session_free(s);
    cr.destroy(cr.payload);
    vg_graph_free(g);
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_device_scopes);
    RUN_TEST(test_device_strings);
    RUN_TEST(test_monitored_sessions_take_config);
    TEST_MAIN_END();
}
