/* test_hooks_tfedge.c - TF 1.15 edge cases of the standard hooks (issue 8 part 4),
 * each mirroring a test of tensorflow/python/training/basic_session_run_hooks_test.py:
 *   - an int32 global step (get_variable('foo', initializer=0) added to GLOBAL_STEP, as
 *     StepCounterHookTest.test_global_step_name does) works with every global-step hook;
 *   - CheckpointSaverHook writes its graph_def and meta_graph_def events without a step
 *     (CheckpointSaverHookTest.test_summary_writer_defs: add_graph(graph) and
 *     add_meta_graph(meta_graph_def) are called with global_step=None). */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"
#include "io/io.h" /* raw records: is the step field present? */

/* steps of the graph_def / meta_graph_def events of the event files in dir, read from
 * the raw records (-1: field absent; the decoder leaves an absent step at 0, so the
 * encoded bytes are checked: TF's Event has step as field 2, varint, tag byte 0x10) */
typedef struct graph_ev {
    int ngraph, nmeta;
    bool graph_has_step, meta_has_step;
} graph_ev;

static bool has_step_field(const uint8_t *rec, size_t len) {
    /* Event: field 1 wall_time (tag 0x09, 8 bytes), then field 2 step (tag 0x10) if set */
    size_t i = 0;
    if (i < len && rec[i] == 0x09) i += 9;
    return i < len && rec[i] == 0x10;
}

static void read_graph_events(const char *dir, graph_ev *out) {
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "events.out.tfevents", 19)) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        vg_status st;
        vg__tfrecord_reader *r = vg__tfrecord_reader_open(path, &st);
        if (!r) continue;
        const uint8_t *rec;
        size_t len;
        while (vg__tfrecord_reader_next(r, &rec, &len, &st) == VG_OK) {
            vg__event_info ev;
            if (vg__event_decode(rec, len, &ev, &st) != VG_OK) continue;
            if (ev.kind == VG__EVENT_GRAPH_DEF) {
                out->ngraph++;
                out->graph_has_step |= has_step_field(rec, len);
            } else if (ev.kind == VG__EVENT_META_GRAPH_DEF) {
                out->nmeta++;
                out->meta_has_step |= has_step_field(rec, len);
            }
        }
        vg__tfrecord_reader_close(r);
    }
    closedir(d);
}

/* CheckpointSaverHookTest.test_summary_writer_defs: one graph and one meta graph event,
 * written without a step. */
static void test_tfedge__graph_events_without_step(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("tfe", false);
    vg_checkpoint_saver_options o = {0};
    o.checkpoint_dir = f.dir;
    o.save_steps = 100;
    vg_hook h;
    CHECK_OK(vg_checkpoint_saver_hook(&o, &h, &st), &st);
    vg_monitored_session *ms = ht_singular(f.m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK_OK(ht_end_free(ms, &st), &st);
    vg_file_writer_cache_clear();
    graph_ev e;
    read_graph_events(f.dir, &e);
    CHECK_EQ_INT(e.ngraph, 1);
    CHECK_EQ_INT(e.nmeta, 1);
    CHECK(!e.graph_has_step);
    CHECK(!e.meta_has_step);
    vg_graph_free(f.m.g);
    tu_rmrf(f.dir);
}

/* StepCounterHookTest.test_global_step_name's int32 global step "bar/foo"
 * (get_variable('foo', initializer=0) in GLOBAL_STEP), driven through a
 * SingularMonitoredSession with every hook that reads the global step:
 * StopAtStepHook, StepCounterHook, CheckpointSaverHook, SummarySaverHook,
 * GlobalStepWaiterHook, ProfilerHook. */
static void test_tfedge__int32_global_step(void) {
    vg_status st;
    char dir[64];
    vg_variable gs;
    vg_graph *g = ht_begin_bar_foo(dir, sizeof dir, "tfe", VG_INT32, &gs);
    CHECK(vg_get_global_step(g).op == gs.var);
    vg_op *train = vg_assign_add(g, gs.ref, vg_const_i32(g, 1, "one"), "train").op;
    vg_output loss = vg_const_f32(g, 0.5f, "loss_value");
    vg_summary_scalar(g, "loss", loss);

    vg_hook hooks[6];
    CHECK_OK(vg_stop_at_step_hook(-1, 3, &hooks[0], &st), &st);
    CHECK_OK(vg_step_counter_hook(&(vg_step_counter_options){.every_n_steps = 1, .every_n_secs = -1, .output_dir = dir},
                                  &hooks[1], &st),
             &st);
    vg_checkpoint_saver_options co = {0};
    co.checkpoint_dir = dir;
    co.save_steps = 1;
    CHECK_OK(vg_checkpoint_saver_hook(&co, &hooks[2], &st), &st);
    vg_summary_saver_options so = {0};
    so.save_steps = 1;
    so.output_dir = dir;
    so.summary_op = vg_summary_merge_all(g);
    CHECK_OK(vg_summary_saver_hook(&so, &hooks[3], &st), &st);
    CHECK_OK(vg_global_step_waiter_hook(0, &hooks[4], &st), &st);
    CHECK_OK(vg_profiler_hook(
                 &(vg_profiler_options){.save_steps = 2, .save_secs = -1, .output_dir = dir, .no_show_dataflow = true},
                 &hooks[5], &st),
             &st);
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, hooks, 6, &st);
    CHECK(ms != NULL);
    if (!ms) return;
    vg_run_args a = {0};
    a.targets = &train;
    a.ntargets = 1;
    int steps = 0;
    vg_code rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms) && steps < 10) {
        ht_now_value += 0.5;
        rc = vg_monitored_session_run(ms, &a, NULL, NULL, &st);
        steps++;
    }
    CHECK_OK(rc, &st);
    CHECK_EQ_INT(steps, 3); /* StopAtStepHook(last_step=3) */
    CHECK_OK(vg_monitored_session_end(ms, rc, &st), &st);
    vg_monitored_session_free(ms);
    vg_file_writer_cache_clear();
    /* the checkpoint of step 3 holds the int32 step */
    char path[4096];
    CHECK(vg_latest_checkpoint(dir, path, sizeof path));
    CHECK_STR_CONTAINS(path, "model.ckpt-3");
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    CHECK(r != NULL);
    if (r) {
        vg_tensor *t = vg_checkpoint_reader_read(r, "bar/foo", &st);
        CHECK(t && vg_tensor_dtype(t) == VG_INT32);
        if (t) CHECK_EQ_INT(*(const int32_t *)vg_tensor_data(t), 3);
        vg_tensor_free(t);
        vg_checkpoint_reader_free(r);
    }
    ht_events *e = ht_events_of(dir);
    int64_t st_steps[8];
    CHECK(ht_steps_of(e, "bar/foo/sec", st_steps, NULL, 8) >= 1);
    CHECK_EQ_INT(ht_steps_of(e, "loss", st_steps, NULL, 8), 3);
    CHECK_EQ_INT(st_steps[0], 1);
    CHECK_EQ_INT(st_steps[2], 3);
    free(e);
    CHECK(ht_count_files(dir, "timeline-", ".json") >= 1);
    vg_graph_free(g);
    ht_end_dir(dir);
}

/* TF's assert_global_step: a float "global step" is refused by the hooks (TypeError in
 * TF; INVALID_ARGUMENT here) instead of failing inside the graph. */
static void test_tfedge__float_global_step_refused(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable gs = vg_get_variable(g, "gs", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_graph_add_to_collection(g, VG_GLOBAL_STEP, gs.ref);
    vg_hook h;
    CHECK_OK(vg_stop_at_step_hook(-1, 3, &h, &st), &st);
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, &h, 1, &st);
    CHECK(ms == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT, "does not have integer type: float");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_tfedge__graph_events_without_step);
    RUN_TEST(test_tfedge__int32_global_step);
    RUN_TEST(test_tfedge__float_global_step_refused);
    TEST_MAIN_END();
}
