/* test_evaluation.c - vigil/evaluation.h: the eval step, _StopAfterNEvalsHook and
 * evaluate_once as TF 1.15's evaluation_test.py uses them: a model trained and saved,
 * then evaluated from the checkpoint with a streaming metric for a fixed number of
 * evaluations (the metric's final value from the restored weights, eval_step == n),
 * an input that runs out (OUT_OF_RANGE ends the loop cleanly), a missing checkpoint,
 * and argument errors. */
#include "op_test_util.h"
#include "train_fixture.h"
#include "status_fixture.h"

static char dir[256];

/* Saves w = [2, 4] to <dir>/model.ckpt-7; returns the prefix in path. */
static void save_model(char *path, size_t len) {
    vg_graph *g = vg_graph_new();
    double wv[2] = {2, 4};
    int64_t d2 = 2;
    vg_variable w = vg_variable_new(g, "w", cst(g, VG_FLOAT, &d2, 1, wv), VG_VAR_TRAINABLE);
    (void)w;
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output set7 = vg_assign(g, gs, vg_const_i64(g, 7, NULL), true, "set_step");
    vg_op *init = vg_global_variables_initializer(g);
    vg_status st;
    vg_saver *saver = vg_saver_new(g, NULL, &st);
    CHECK(saver != NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &set7.op, 1, &st), &st);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
    CHECK_OK(vg_saver_save(saver, s, prefix, 7, path, len, &st), &st);
    free_session_saver_graph(s, saver, g);
}

/* The eval graph: w (initialized to 100 so that a restore shows), mean(w * x) over a
 * constant batch x = [1, 2] -> (2 + 8) / 2 = 5 from the checkpoint. */
typedef struct eval_graph {
    vg_graph *g;
    vg_metric m;
} eval_graph;

static eval_graph eval_model(void) {
    eval_graph e;
    e.g = vg_graph_new();
    int64_t d2 = 2;
    double xv[2] = {1, 2};
    vg_variable w = vg_variable_new(e.g, "w", vg_const_fill(e.g, VG_FLOAT, &d2, 1, 100, NULL), VG_VAR_TRAINABLE);
    e.m = vg_metrics_mean(e.g, vg_mul(e.g, w.read, cst(e.g, VG_FLOAT, &d2, 1, xv), NULL), NULL);
    return e;
}

/* save_model into ckpt (len bytes), then a new eval_model. */
static eval_graph saved_and_eval_model(char *ckpt, size_t len) {
    save_model(ckpt, len);
    return eval_model();
}

/* Options evaluating e's metric (its update op, once per step) from checkpoint ckpt. */
static vg_evaluate_options eval_options(const char *ckpt, eval_graph *e) {
    vg_evaluate_options o = {0};
    o.checkpoint_path = ckpt;
    o.eval_ops = &e->m.update.op;
    o.neval_ops = 1;
    return o;
}

static void test_evaluate_once(void) {
    char ckpt[512];
    eval_graph e = saved_and_eval_model(ckpt, sizeof ckpt);
    vg_status st;
    vg_hook stop;
    CHECK_OK(vg_stop_after_n_evals_hook(5, true, &stop, &st), &st);
    vg_output eval_step = vg_get_or_create_eval_step(e.g);
    CHECK(eval_step.op && strcmp(vg_op_name(eval_step.op), "eval_step") == 0);
    CHECK(vg_get_or_create_eval_step(e.g).op == eval_step.op); /* the one in the collection */
    vg_output finals[2] = {e.m.value, eval_step};
    vg_evaluate_options o = eval_options(ckpt, &e);
    o.final_ops = finals;
    o.nfinal_ops = 2;
    o.hooks = &stop;
    o.nhooks = 1;
    vg_tensor *vals[2] = {NULL, NULL};
    CHECK_OK(vg_evaluate_once(e.g, &o, vals, &st), &st);
    CHECK(vals[0] && vals[1]);
    if (vals[0]) CHECK_NEAR(get(vals[0], 0), 5.0, 1e-6);
    if (vals[1]) CHECK_EQ_INT(get(vals[1], 0), 5);
    vg_tensor_free(vals[0]);
    vg_tensor_free(vals[1]);
    vg_graph_free(e.g);

    /* no eval ops: only the final ops run, on the restored weights */
    e = eval_model();
    o = (vg_evaluate_options){0};
    o.checkpoint_path = ckpt;
    vg_output wread = vg_graph_output_by_name(e.g, "w/read", &st);
    o.final_ops = &wread;
    o.nfinal_ops = 1;
    vals[0] = NULL;
    CHECK_OK(vg_evaluate_once(e.g, &o, vals, &st), &st);
    double want[2] = {2, 4};
    int64_t d2 = 2;
    check_values(vals[0], VG_FLOAT, &d2, 1, want, 0);
    vg_tensor_free(vals[0]);
    vg_graph_free(e.g);
}

/* An input that runs out ends the evaluation without error (num_evals None). */
static void test_evaluate_until_out_of_range(void) {
    char ckpt[512];
    eval_graph e = saved_and_eval_model(ckpt, sizeof ckpt);
    vg_status st;
    /* a FIFOQueue that the local init fills with 3 elements and closes: the 4th
     * dequeue is OUT_OF_RANGE */
    vg_dtype dts[1] = {VG_FLOAT};
    vg_output q = vg_fifo_queue(e.g, dts, NULL, 1, 10, "q");
    vg_output one = vg_const_f32(e.g, 1.0f, NULL);
    vg_op *deq = vg_queue_dequeue(e.g, q, NULL);
    CHECK(deq != NULL);
    vg_metric cnt = vg_metrics_mean(e.g, vg_out(deq, 0), &(vg_metric_opts){.name = "count_mean"});
    vg_hook stop;
    CHECK_OK(vg_stop_after_n_evals_hook(-1, false, &stop, &st), &st);
    vg_op *evals[2] = {e.m.update.op, cnt.update.op};
    vg_output eval_step = vg_get_or_create_eval_step(e.g);
    vg_evaluate_options o = {0};
    o.checkpoint_path = ckpt;
    o.eval_ops = evals;
    o.neval_ops = 2;
    (void)eval_step;
    vg_output count = vg_graph_output_by_name(e.g, "count_mean/count/read", &st);
    CHECK(count.op != NULL);
    o.final_ops = &count;
    o.nfinal_ops = 1;
    o.hooks = &stop;
    o.nhooks = 1;
    vg_op *enq1 = vg_queue_enqueue(e.g, q, &one, 1, "enq1");
    vg_graph_push_control_deps(e.g, &enq1, 1);
    vg_op *enq2 = vg_queue_enqueue(e.g, q, &one, 1, "enq2");
    vg_graph_pop_control_deps(e.g);
    vg_graph_push_control_deps(e.g, &enq2, 1);
    vg_op *enq3 = vg_queue_enqueue(e.g, q, &one, 1, "enq3");
    vg_graph_pop_control_deps(e.g);
    vg_graph_push_control_deps(e.g, &enq3, 1);
    vg_op *closed = vg_queue_close(e.g, q, false, "close_after");
    vg_graph_pop_control_deps(e.g);
    vg_op *local_init = vg_local_variables_initializer(e.g);
    vg_op *both[2] = {local_init, closed};
    vg_scaffold_options so = {0};
    so.local_init_op = vg_group(e.g, both, 2, "local_init");
    vg_scaffold *sc = vg_scaffold_new(&so);
    o.scaffold = sc;
    vg_tensor *val = NULL;
    CHECK_OK(vg_evaluate_once(e.g, &o, &val, &st), &st);
    CHECK(val != NULL);
    if (val) CHECK_EQ_INT(get(val, 0), 3); /* three batches, then the input ran out */
    vg_tensor_free(val);
    vg_scaffold_free(sc);
    vg_graph_free(e.g);
}

/* SummaryAtEndHook: the metric's summary written once at the end, at the restored
 * global step (7), to the log_dir's cached writer */
static void test_summary_at_end(void) {
    char ckpt[512];
    eval_graph e = saved_and_eval_model(ckpt, sizeof ckpt);
    vg_status st;
    vg_output summ = vg_summary_scalar(e.g, "eval/mean", e.m.value);
    CHECK(summ.op != NULL);
    char logdir[300];
    snprintf(logdir, sizeof logdir, "%s/eval", dir);
    mkdir(logdir, 0755);
    vg_hook hooks[2];
    CHECK_OK(vg_stop_after_n_evals_hook(3, false, &hooks[0], &st), &st);
    CHECK_OK(vg_summary_at_end_hook(logdir, NULL, vg_out(NULL, 0), &hooks[1], &st), &st);
    vg_evaluate_options o = eval_options(ckpt, &e);
    o.hooks = hooks;
    o.nhooks = 2;
    CHECK_OK(vg_evaluate_once(e.g, &o, NULL, &st), &st);
    vg_file_writer *w = vg_file_writer_cache_get(logdir, &st);
    CHECK(w != NULL);
    int found = 0;
    if (w) {
        vg_event_reader *r = vg_event_reader_open(vg_file_writer_path(w), &st);
        CHECK(r != NULL);
        vg_event ev;
        while (r && vg_event_reader_next(r, &ev, &st) == VG_OK) {
            if (ev.kind != VG_EVENT_SUMMARY) continue;
            vg_summary_iter it;
            vg_summary_iter_init(&it, ev.payload, ev.payload_len);
            vg_summary_value v;
            while (vg_summary_iter_next(&it, &v, &st) == VG_OK)
                if (v.tag_len == 9 && memcmp(v.tag, "eval/mean", 9) == 0) {
                    found++;
                    CHECK_EQ_INT(ev.step, 7);
                    CHECK_NEAR(v.scalar, 5.0, 1e-6);
                }
        }
        vg_event_reader_close(r);
    }
    CHECK_EQ_INT(found, 1);
    vg_file_writer_cache_clear();
    vg_graph_free(e.g);
    vg_hook h;
    EXPECT_CODE_MSG(vg_summary_at_end_hook(NULL, NULL, vg_out(NULL, 0), &h, &st), &st, VG_INVALID_ARGUMENT,
                    "One of log_dir or summary_writer should be used.");
}

static void test_errors(void) {
    vg_status st;
    vg_hook h;
    CHECK_CODE(vg_stop_after_n_evals_hook(-2, true, &h, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_stop_after_n_evals_hook(1, true, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_evaluate_once(NULL, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    /* a missing checkpoint: NOT_FOUND; the hooks are released */
    eval_graph e = eval_model();
    CHECK_OK(vg_stop_after_n_evals_hook(1, true, &h, &st), &st);
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nothing-here", dir);
    vg_evaluate_options o = eval_options(missing, &e);
    o.hooks = &h;
    o.nhooks = 1;
    vg_code rc = vg_evaluate_once(e.g, &o, NULL, &st);
    CHECK(rc != VG_OK);
    CHECK_STR_CONTAINS(st.msg, "nothing-here");
    /* final ops without somewhere to put them */
    o.checkpoint_path = missing;
    o.hooks = NULL;
    o.nhooks = 0;
    o.final_ops = &e.m.value;
    o.nfinal_ops = 1;
    EXPECT_CODE_MSG(vg_evaluate_once(e.g, &o, NULL, &st), &st, VG_INVALID_ARGUMENT, "final_values");
    vg_graph_free(e.g);
    /* two eval steps in the collection */
    vg_graph *g = vg_graph_new();
    vg_graph_add_to_collection(g, VG_EVAL_STEP, vg_const_i64(g, 0, NULL));
    vg_graph_add_to_collection(g, VG_EVAL_STEP, vg_const_i64(g, 0, NULL));
    CHECK(vg_get_or_create_eval_step(g).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Multiple tensors added to tf.GraphKeys.EVAL_STEP");
    vg_graph_free(g);
}

int main(void) {
    if (!tu_mkdtemp(dir, sizeof dir, "evaluation")) return 1;
    RUN_TEST(test_evaluate_once);
    RUN_TEST(test_evaluate_until_out_of_range);
    RUN_TEST(test_summary_at_end);
    RUN_TEST(test_errors);
    tu_rmrf(dir);
    TEST_MAIN_END();
}
