/* test_log_limits.c - the hooks' log lines are rate-limited as TF 1.15 limits them,
 * counted through a log callback (vg_log_set):
 * - StepCounterHook's "global step ... has not been increased" warning is
 *   logging.log_first_n(WARN, ..., 5): at most 5 in the whole process, however many
 *   steps, hooks or sessions (300 steps without an increase once gave 299 warnings);
 * - _StopAfterNEvalsHook logs "Evaluation [k/n]" every floor(n / 10) evaluations
 *   (n >= 20), the last one always;
 * - NanTensorHook(fail_on_nan_loss=False) warns once and stops.
 * Its own executable: log_first_n's counter lives as long as the process. */
#include "test_util.h"
#include "train_fixture.h"
#include "hook_test_util.h"

typedef struct log_count {
    int warn_not_increased, evaluation, diverged, warn_total;
} log_count;
static log_count g_count;

static void count_fn(void *p, vg_log_level level, const char *msg) {
    (void)p;
    if (level >= VG_LOG_WARN) g_count.warn_total++;
    if (level == VG_LOG_WARN && strstr(msg, "has not been increased")) g_count.warn_not_increased++;
    if (level == VG_LOG_INFO && strncmp(msg, "Evaluation [", 12) == 0) g_count.evaluation++;
    if (strstr(msg, "Model diverged with loss = NaN.")) g_count.diverged++;
}

static void counting_on(void) {
    memset(&g_count, 0, sizeof g_count);
    vg_log_set(count_fn, NULL, VG_LOG_INFO);
}
static void counting_off(void) { vg_log_set(NULL, NULL, VG_LOG_WARN); }

static vg_hook step_counter_every(int64_t n) {
    vg_hook h;
    vg_status st;
    vg_step_counter_options o = {0};
    o.every_n_steps = n;
    if (vg_step_counter_hook(&o, &h, &st) != VG_OK) fprintf(stderr, "step counter: %s\n", st.msg);
    return h;
}

/* 300 runs that never increase the global step: 5 warnings, not 299; a second session
 * with a new hook adds none (the limit is the process's), and neither does a run whose
 * step goes up between stalls (TF never resets log_first_n's count). */
static void test_log_limits__step_counter_warns_five_times(void) {
    vg_status st;
    ht_model m = ht_model_make();
    counting_on();
    vg_hook h = step_counter_every(100);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &h, 1, &st);
    CHECK(ms != NULL);
    for (int i = 0; ms && i < 300; i++) CHECK_OK(ht_run_nothing(ms, &st), &st);
    CHECK_EQ_INT(g_count.warn_not_increased, 5);
    if (ms) {
        ht_close_session(ms);
    }
    h = step_counter_every(1);
    ms = ht_singular(m.g, NULL, NULL, &h, 1, &st);
    CHECK(ms != NULL);
    for (int i = 0; ms && i < 50; i++) {
        CHECK_OK(ht_run_nothing(ms, &st), &st);
        if (i % 2) CHECK_OK(ht_run_train(ms, &m, &st), &st); /* up, then stalled again */
    }
    CHECK_EQ_INT(g_count.warn_not_increased, 5);
    CHECK_EQ_INT(g_count.warn_total, 5);
    if (ms) {
        ht_close_session(ms);
    }
    counting_off();
    vg_graph_free(m.g);
}

/* _StopAfterNEvalsHook(100, log_progress): "Evaluation [10/100]" ... "[100/100]": 10
 * lines for 100 evaluations; (7, log_progress): every one (n < 20). */
static void check_eval_lines(int64_t n, int want) {
    char dir[64], ckpt[256], prefix[128];
    tu_mkdtemp(dir, sizeof dir, "loglim");
    vg_status st;
    /* a checkpoint to evaluate: w = 2 */
    vg_graph *g = vg_graph_new();
    vg_variable w = vg_variable_new(g, "w", vg_const_f32(g, 2.0f, NULL), VG_VAR_TRAINABLE);
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver *saver = vg_saver_new(g, NULL, &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
    CHECK_OK(vg_saver_save(saver, s, prefix, 1, ckpt, sizeof ckpt, &st), &st);
    free_session_saver_graph(s, saver, g);
    /* the eval graph: a streaming mean of w */
    g = vg_graph_new();
    w = vg_variable_new(g, "w", vg_const_f32(g, 0.0f, NULL), VG_VAR_TRAINABLE);
    vg_metric mean = vg_metrics_mean(g, w.read, NULL);
    vg_hook stop;
    CHECK_OK(vg_stop_after_n_evals_hook(n, true, &stop, &st), &st);
    vg_evaluate_options o = {0};
    o.checkpoint_path = ckpt;
    o.eval_ops = &mean.update.op;
    o.neval_ops = 1;
    o.hooks = &stop;
    o.nhooks = 1;
    counting_on();
    CHECK_OK(vg_evaluate_once(g, &o, NULL, &st), &st);
    counting_off();
    CHECK_EQ_INT(g_count.evaluation, want);
    vg_graph_free(g);
    tu_rmrf(dir);
}

static void test_log_limits__evaluation_progress(void) {
    check_eval_lines(100, 10);
    check_eval_lines(35, 12); /* every 3: 3, 6, ..., 33 (11 lines) and the last, 35 */
    check_eval_lines(7, 7);
}

/* NanTensorHook(loss, fail_on_nan_loss=False): one warning, then the session stops. */
static void test_log_limits__nan_warns_once(void) {
    vg_status st;
    ht_model m = ht_model_make();
    vg_output loss = vg_const_f32(m.g, NAN, "loss");
    vg_hook h;
    CHECK_OK(vg_nan_tensor_hook(loss, false, &h, &st), &st);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &h, 1, &st);
    CHECK(ms != NULL);
    counting_on();
    int runs = 0;
    while (ms && !vg_monitored_session_should_stop(ms) && runs < 10) {
        CHECK_OK(ht_run_nothing(ms, &st), &st);
        runs++;
    }
    counting_off();
    CHECK_EQ_INT(runs, 1);
    CHECK_EQ_INT(g_count.diverged, 1);
    if (ms) {
        ht_close_session(ms);
    }
    vg_graph_free(m.g);
}

int main(void) {
    RUN_TEST(test_log_limits__step_counter_warns_five_times);
    RUN_TEST(test_log_limits__evaluation_progress);
    RUN_TEST(test_log_limits__nan_warns_once);
    TEST_MAIN_END();
}
