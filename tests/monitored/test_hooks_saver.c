/* test_hooks_saver.c - CheckpointSaverHook (+ listeners), StepCounterHook,
 * SummarySaverHook and ProfilerHook against the checklist of
 * docs/tf1-semantics.md (items 147-166, 176-181, 189-194) and TF's
 * basic_session_run_hooks_test.py. Checkpoints are read back with vg_latest_checkpoint /
 * vg_checkpoint_reader, event files with the io layer's event reader. Time is a mocked
 * clock (vg_hooks_set_clock). TF's tests that drive a bare _HookedSession (no
 * after_create_session) wrap the hook with ht_without_after_create. */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"

/* ------------------------------------------------------------------------ */
/* CheckpointSaverListener that counts its calls */

typedef struct counts {
    int begin, before_save, after_save, end, destroyed;
    int64_t stop_from_step; /* after_save asks to stop from this step on; -1 never */
    int64_t last_before, last_end;
} counts;

static vg_code l_begin(void *p, vg_status *st) { ((counts *)p)->begin++; return VG_OK; }
static vg_code l_before(void *p, vg_session *s, int64_t step, vg_status *st) {
    counts *c = p;
    c->before_save++;
    c->last_before = step;
    return VG_OK;
}
static vg_code l_after(void *p, vg_session *s, int64_t step, bool *stop, vg_status *st) {
    counts *c = p;
    c->after_save++;
    if (c->stop_from_step >= 0 && step >= c->stop_from_step) *stop = true;
    return VG_OK;
}
static vg_code l_end(void *p, vg_session *s, int64_t step, vg_status *st) {
    counts *c = p;
    c->end++;
    c->last_end = step;
    return VG_OK;
}
static void l_destroy(void *p) { ((counts *)p)->destroyed++; }
static vg_checkpoint_listener listener(counts *c) {
    c->stop_from_step = c->stop_from_step ? c->stop_from_step : -1;
    vg_checkpoint_listener l = {l_begin, l_before, l_after, l_end, l_destroy, c};
    return l;
}
static void expect_counts(const counts *c, int begin, int before, int after, int end) {
    CHECK_EQ_INT(c->begin, begin);
    CHECK_EQ_INT(c->before_save, before);
    CHECK_EQ_INT(c->after_save, after);
    CHECK_EQ_INT(c->end, end);
}

static vg_hook ckpt_hook(const char *dir, double secs, int64_t steps, vg_scaffold *sc, vg_checkpoint_listener *ls,
                         int nls) {
    vg_status st;
    vg_hook h;
    vg_checkpoint_saver_options o = {0};
    o.checkpoint_dir = dir;
    o.save_secs = secs;
    o.save_steps = steps;
    o.scaffold = sc;
    o.listeners = ls;
    o.nlisteners = nls;
    if (vg_checkpoint_saver_hook(&o, &h, &st) != VG_OK) fprintf(stderr, "checkpoint hook: %s\n", st.msg);
    return h;
}

/* item 148 (+ listeners are released when the constructor fails) */
static void test_checkpoint_saver__bad_args(void) {
    vg_status st;
    ht_model m = ht_model_make();
    vg_scaffold *sc = vg_scaffold_new(NULL);
    vg_saver *saver = vg_saver_new(m.g, NULL, &st);
    counts c = {0};
    vg_checkpoint_listener l = listener(&c);
    vg_hook h;
    vg_checkpoint_saver_options o = {0};
    o.checkpoint_dir = "/tmp/vg_unused";
    o.save_steps = 1;
    o.saver = saver;
    o.scaffold = sc;
    o.listeners = &l;
    o.nlisteners = 1;
    EXPECT_CODE_MSG(vg_checkpoint_saver_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT,
                    "You cannot provide both saver and scaffold.");
    CHECK_EQ_INT(c.destroyed, 1);
    o.saver = NULL;
    o.nlisteners = 0;
    o.save_secs = 10;
    EXPECT_CODE_MSG(vg_checkpoint_saver_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT,
                    "Can not provide both every_secs and every_steps.");
    o.save_secs = -1;
    o.save_steps = -1;
    EXPECT_CODE_MSG(vg_checkpoint_saver_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT,
                    "Either every_secs or every_steps should be provided.");
    CHECK(h.payload == NULL);
    vg_saver_free(saver);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
}

/* item 147: neither saver nor scaffold: the saver of the "savers" collection (made by the
 * session's default scaffold); save_steps=1 saves step 1 after the first run */
static void test_checkpoint_saver__saves_when_saver_and_scaffold_both_missing(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("ckh", false);
    vg_hook h = ht_without_after_create(ckpt_hook(f.dir, -1, 1, NULL, NULL, 0));
    vg_monitored_session *ms = ht_singular(f.m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), -1);
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 1);
    ht_close_session_graph(ms, f.m.g);
    vg_file_writer_cache_clear();
    tu_rmrf(f.dir);
}

/* items 149, 156: save_secs=2 saves in the first step; two runs then end() -> step 2 */
static void test_checkpoint_saver__save_secs_first_step_and_end(void) {
    vg_status st;
    ht_fx f = ht_fx_make("ckh", true);
    vg_hook h = ht_without_after_create(ckpt_hook(f.dir, 2, -1, f.sc, NULL, 0));
    vg_monitored_session *ms = ht_singular(f.m.g, f.sc, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 1); /* 149 */
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 1);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 2); /* 156 */
    vg_monitored_session_free(ms);
    ht_fx_end(&f);
}

/* item 150: run, run, end with save_secs=2 -> begin 1, before_save 2, after_save 2, end 1 */
static void test_checkpoint_saver__save_secs_calls_listeners_at_begin_and_end(void) {
    vg_status st;
    ht_fx f = ht_fx_make("ckh", true);
    counts c = {0};
    vg_checkpoint_listener l = listener(&c);
    vg_hook h = ht_without_after_create(ckpt_hook(f.dir, 2, -1, f.sc, &l, 1));
    vg_monitored_session *ms = ht_singular(f.m.g, f.sc, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st); /* saves */
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st); /* does not: saved at end */
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    expect_counts(&c, 1, 2, 2, 1);
    CHECK_EQ_INT(c.last_before, 2);
    CHECK_EQ_INT(c.last_end, 2);
    vg_monitored_session_free(ms);
    CHECK_EQ_INT(c.destroyed, 1); /* the hook owns its listeners */
    ht_fx_end(&f);
}

/* item 151: in a SingularMonitoredSession (after_create_session saves step 0),
 * save_steps=1, two steps: before_save/after_save 3 times; a later session restores 2.
 * Also with the default saver (neither saver nor scaffold) and two listeners. */
static void test_checkpoint_saver__listener_with_monitored_session(void) {
    vg_status st;
    for (int variant = 0; variant < 2; variant++) {
        ht_fx f = ht_fx_make("ckh", false);
        counts c1 = {0}, c2 = {0};
        vg_checkpoint_listener ls[2] = {listener(&c1), listener(&c2)};
        vg_hook h = ckpt_hook(f.dir, -1, 1, variant ? NULL : f.sc, ls, variant ? 2 : 1);
        vg_monitored_session *ms = ht_singular(f.m.g, f.sc, f.dir, &h, 1, &st);
        if (!ms) return;
        CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
        CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
        CHECK_EQ_INT(ht_get_gs(vg_monitored_session_raw_session(ms), &f.m), 2);
        CHECK_OK(ht_end_free(ms, &st), &st);
        expect_counts(&c1, 1, 3, 3, 1);
        if (variant) expect_counts(&c2, 1, 3, 3, 1);
        CHECK_EQ_INT(ht_ckpt_gs(f.dir), 2);
        /* a new session on the same directory restores 2 */
        ms = ht_singular(f.m.g, f.sc, f.dir, NULL, 0, &st);
        if (!ms) return;
        CHECK_EQ_INT(ht_get_gs(vg_monitored_session_raw_session(ms), &f.m), 2);
        ht_close_session(ms);
        ht_fx_end(&f);
    }
}

/* item 152: a listener asking to stop from after_save */
static void test_checkpoint_saver__listener_stops_training_in_after_save(void) {
    vg_status st;
    ht_fx f = ht_fx_make("ckh", false);
    counts c = {0};
    c.stop_from_step = 2;
    vg_checkpoint_listener l = listener(&c);
    vg_hook h = ckpt_hook(f.dir, -1, 1, f.sc, &l, 1);
    vg_monitored_session *ms = ht_singular(f.m.g, f.sc, f.dir, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK(!vg_monitored_session_should_stop(ms));
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK(vg_monitored_session_should_stop(ms));
    ht_close_session(ms);
    ht_fx_end(&f);
}

/* item 153: mocked clock, save_secs=2 */
static void test_checkpoint_saver__save_secs_saves_periodically(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "ckh");
    double t = 1484695987.209386;
    ht_clock_mock(t);
    ht_model m = ht_model_make();
    vg_scaffold *sc = vg_scaffold_new(NULL);
    vg_hook h = ht_without_after_create(ckpt_hook(dir, 2, -1, sc, NULL, 0));
    vg_monitored_session *ms = ht_singular(m.g, sc, NULL, &h, 1, &st);
    if (!ms) return;
    ht_now_value = t;
    CHECK_OK(ht_run_train(ms, &m, &st), &st); /* saved */
    ht_now_value = t + 0.5;
    CHECK_OK(ht_run_train(ms, &m, &st), &st); /* not saved */
    CHECK_EQ_INT(ht_ckpt_gs(dir), 1);
    ht_now_value = t + 2.5;
    CHECK_OK(ht_run_train(ms, &m, &st), &st); /* saved */
    ht_now_value = t + 2.6;
    CHECK_OK(ht_run_train(ms, &m, &st), &st);
    ht_now_value = t + 2.7;
    CHECK_OK(ht_run_train(ms, &m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(dir), 3);
    ht_now_value = t + 10;
    CHECK_OK(ht_run_train(ms, &m, &st), &st); /* saved */
    CHECK_EQ_INT(ht_ckpt_gs(dir), 6);
    ht_close_session(ms);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
    vg_file_writer_cache_clear();
    ht_end_dir(dir);
}

/* item 154: the listener schedule with a mocked clock */
static void test_checkpoint_saver__save_secs_calls_listeners_periodically(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "ckh");
    double t = 1484695987.209386;
    ht_clock_mock(t);
    ht_model m = ht_model_make();
    vg_scaffold *sc = vg_scaffold_new(NULL);
    counts c = {0};
    vg_checkpoint_listener l = listener(&c);
    vg_hook h = ht_without_after_create(ckpt_hook(dir, 2, -1, sc, &l, 1));
    vg_monitored_session *ms = ht_singular(m.g, sc, NULL, &h, 1, &st);
    if (!ms) return;
    const double at[7] = {0.5, 0.5, 3.0, 3.5, 4.0, 6.5, 7.0};
    const int saves_after[7] = {1, 1, 2, 2, 2, 3, 3};
    for (int i = 0; i < 7; i++) {
        ht_now_value = t + at[i];
        CHECK_OK(ht_run_train(ms, &m, &st), &st);
        CHECK_EQ_INT(c.before_save, saves_after[i]);
    }
    ht_now_value = t + 7.5;
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st); /* saves at end */
    expect_counts(&c, 1, 4, 4, 1);
    vg_monitored_session_free(ms);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
    vg_file_writer_cache_clear();
    ht_end_dir(dir);
}

/* item 155: save_steps=2 without after_create_session: saves at 1, 3, 5 */
static void test_checkpoint_saver__save_steps_saves_periodically(void) {
    vg_status st;
    ht_fx f = ht_fx_make("ckh", false);
    vg_hook h = ht_without_after_create(ckpt_hook(f.dir, -1, 2, f.sc, NULL, 0));
    vg_monitored_session *ms = ht_singular(f.m.g, f.sc, NULL, &h, 1, &st);
    if (!ms) return;
    const int expect[5] = {1, 1, 3, 3, 5};
    for (int i = 0; i < 5; i++) {
        CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
        CHECK_EQ_INT(ht_ckpt_gs(f.dir), expect[i]);
    }
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 5); /* end: 5 is the last triggered step, no new save */
    vg_monitored_session_free(ms);
    vg_file_writer_cache_clear(); /* flushes the hook's (cached) writer */
    /* the CHECKPOINT session logs of the summary writer name the saves' steps */
    ht_events *e = ht_events_of(f.dir);
    CHECK_EQ_INT(e->nckpt, 3);
    if (e->nckpt == 3) {
        CHECK_EQ_INT(e->ckpt_steps[0], 1);
        CHECK_EQ_INT(e->ckpt_steps[1], 3);
        CHECK_EQ_INT(e->ckpt_steps[2], 5);
    }
    free(e);
    ht_fx_end(&f);
}

/* item 157: the summary writer gets exactly one graph and one meta graph (holding the
 * saver's definition) when the session is created */
static void test_checkpoint_saver__summary_writer_defs(void) {
    vg_status st;
    ht_fx f = ht_fx_make("ckh", false);
    vg_hook h = ckpt_hook(f.dir, -1, 100, f.sc, NULL, 0);
    vg_monitored_session *ms = ht_singular(f.m.g, f.sc, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    ht_flush_dir(f.dir);
    ht_events *e = ht_events_of(f.dir);
    CHECK_EQ_INT(e->ngraph, 1);
    CHECK_EQ_INT(e->nmeta, 1);
    CHECK(e->meta_has_saver);
    free(e);
    ht_close_session(ms);
    ht_fx_end(&f);
}

/* item 158: after_create_session saves step 0 before training */
static void test_checkpoint_saver__save_checkpoint_before_first_train_step(void) {
    vg_status st;
    ht_fx f = ht_fx_make("ckh", false);
    vg_hook h = ckpt_hook(f.dir, -1, 2, f.sc, NULL, 0);
    vg_monitored_session *ms = ht_singular(f.m.g, f.sc, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 0);
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 0);
    CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 2);
    ht_close_session(ms);
    ht_fx_end(&f);
}

/* item 159 [version]: save_graph_def=true writes graph.pbtxt and the .meta of each
 * checkpoint. save_graph_def=false: no graph.pbtxt and no graph / meta graph events;
 * vigil's saver still writes the .meta files (vg_saver_save has no write_meta_graph
 * argument; vg_saver_options.write_meta_graph controls them), see docs/tf1-coverage.md. */
static void test_checkpoint_saver__save_graph_def(void) {
    vg_status st;
    for (int sgd = 1; sgd >= 0; sgd--) {
        ht_fx f = ht_fx_make("ckh", false);
        vg_checkpoint_saver_options o = {0};
        o.checkpoint_dir = f.dir;
        o.save_steps = 1;
        o.scaffold = f.sc;
        o.no_save_graph_def = !sgd;
        vg_hook h;
        CHECK_OK(vg_checkpoint_saver_hook(&o, &h, &st), &st);
        vg_monitored_session *ms = ht_singular(f.m.g, f.sc, NULL, &h, 1, &st);
        if (!ms) return;
        CHECK(ht_exists(f.dir, "graph.pbtxt") == (bool)sgd);
        if (sgd) CHECK_EQ_INT(ht_count_files(f.dir, "model.ckpt-", ".meta"), 1);
        CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
        if (sgd) CHECK_EQ_INT(ht_count_files(f.dir, "model.ckpt-", ".meta"), 2);
        CHECK(ht_exists(f.dir, "graph.pbtxt") == (bool)sgd);
        ht_flush_dir(f.dir);
        ht_events *e = ht_events_of(f.dir);
        CHECK_EQ_INT(e->ngraph, sgd);
        CHECK_EQ_INT(e->nmeta, sgd);
        CHECK_EQ_INT(e->nckpt, 2); /* steps 0 and 1 */
        free(e);
        ht_close_session(ms);
        ht_fx_end(&f);
    }
}

/* §16 saver resolution: a scaffold without a saver (never finalized: the session uses
 * another one) is an error, not a silent skip of the saves */
static void test_checkpoint_saver__scaffold_without_saver(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("ckh", false);
    vg_scaffold *unused = vg_scaffold_new(NULL);
    vg_hook h = ckpt_hook(f.dir, -1, 1, unused, NULL, 0);
    vg_monitored_session *ms = ht_singular(f.m.g, NULL, NULL, &h, 1, &st);
    CHECK(ms == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "the scaffold has no saver");
    CHECK(!ht_exists(f.dir, "checkpoint"));
    ht_cleanup(unused, f.m.g, f.dir);
}

/* §13: CheckpointSaverHook needs a global step */
static void test_checkpoint_saver__needs_global_step(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "ckh");
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_hook h = ckpt_hook(dir, -1, 1, NULL, NULL, 0);
    vg_monitored_session *ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = &h, .nhooks = 1}, &st);
    CHECK(ms == NULL);
    CHECK_STR_CONTAINS(st.msg, "Global step should be created to use CheckpointSaverHook.");
    ht_cleanup(NULL, g, dir);
}

/* ------------------------------------------------------------------------ */
/* StepCounterHook */

static vg_hook step_counter(int64_t steps, double secs, vg_file_writer *w) {
    vg_status st;
    vg_hook h;
    if (vg_step_counter_hook(
            &(vg_step_counter_options){.every_n_steps = steps, .every_n_secs = secs, .summary_writer = w}, &h, &st) !=
        VG_OK)
        fprintf(stderr, "step counter: %s\n", st.msg);
    return h;
}

/* bad args (§17) */
static void test_step_counter__bad_args(void) {
    vg_status st;
    vg_hook h;
    CHECK_CODE(vg_step_counter_hook(&(vg_step_counter_options){.every_n_steps = 10, .every_n_secs = 1.0}, &h, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "exactly one of every_n_steps and every_n_secs should be provided.");
    CHECK_CODE(vg_step_counter_hook(&(vg_step_counter_options){.every_n_steps = -1, .every_n_secs = -1}, &h, &st),
               VG_INVALID_ARGUMENT);
    CHECK(h.payload == NULL);
}

/* item 162: every_n_steps=10 over 30 steps: "global_step/sec" at 11 and 21, no warning */
static void test_step_counter__every_n_steps(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("sch", true);
    vg_file_writer *w = vg_file_writer_new(f.dir, NULL, &st);
    vg_hook h = step_counter(10, -1, w);
    vg_monitored_session *ms = ht_singular(f.m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    ht_log_capture();
    for (int i = 0; i < 30; i++) {
        ht_now_value += 0.01;
        CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
    }
    CHECK_EQ_INT(ht_log_warnings, 0);
    ht_log_release();
    ht_close_session(ms);
    vg_file_writer_free(w);
    ht_events *e = ht_events_of(f.dir);
    int64_t steps[8];
    double vals[8];
    CHECK_EQ_INT(ht_steps_of(e, "global_step/sec", steps, vals, 8), 2);
    CHECK_EQ_INT(e->nv, 2);
    CHECK_EQ_INT(steps[0], 11);
    CHECK_EQ_INT(steps[1], 21);
    CHECK(vals[0] > 0 && vals[1] > 0);
    CHECK_NEAR(vals[0], 100.0, 1e-3); /* 10 steps in 0.1 mocked seconds */
    free(e);
    ht_fx_end(&f);
}

/* item 163: every_n_secs=0.1 with 0.2 s between three steps: summaries at 2 and 3 */
static void test_step_counter__every_n_secs(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("sch", true);
    vg_file_writer *w = vg_file_writer_new(f.dir, NULL, &st);
    vg_hook h = step_counter(-1, 0.1, w);
    vg_monitored_session *ms = ht_singular(f.m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    for (int i = 0; i < 3; i++) {
        CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
        ht_now_value += 0.2;
    }
    ht_close_session(ms);
    vg_file_writer_free(w);
    ht_events *e = ht_events_of(f.dir);
    int64_t steps[8];
    double vals[8];
    CHECK_EQ_INT(ht_steps_of(e, "global_step/sec", steps, vals, 8), 2);
    CHECK_EQ_INT(steps[0], 2);
    CHECK_EQ_INT(steps[1], 3);
    CHECK_NEAR(vals[0], 5.0, 1e-6);
    free(e);
    ht_fx_end(&f);
}

/* item 164: a global step named "bar/foo" -> tag "bar/foo/sec"; every step: step 2 only */
static void test_step_counter__global_step_name(void) {
    vg_status st;
    char dir[64];
    vg_variable gs;
    vg_graph *g = ht_begin_bar_foo(dir, sizeof dir, "sch", VG_INT64, &gs);
    CHECK(gs.var && !strcmp(vg_op_name(gs.var), "bar/foo"));
    ht_model m = ht_model_make_on(g);
    CHECK(m.gs.op == gs.var);
    vg_file_writer *w = vg_file_writer_new(dir, NULL, &st);
    vg_hook h = step_counter(1, -1, w);
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    for (int i = 0; i < 2; i++) {
        ht_now_value += 0.5;
        CHECK_OK(ht_run_train(ms, &m, &st), &st);
    }
    ht_close_session(ms);
    vg_file_writer_free(w);
    ht_events *e = ht_events_of(dir);
    int64_t steps[8];
    CHECK_EQ_INT(e->nv, 1);
    CHECK_EQ_INT(ht_steps_of(e, "bar/foo/sec", steps, NULL, 8), 1);
    CHECK_EQ_INT(steps[0], 2);
    free(e);
    vg_graph_free(g);
    ht_end_dir(dir);
}

/* item 165: a global step that never increases is warned about (the first 5 times) */
static void test_step_counter__log_warning_if_global_step_not_increased(void) {
    vg_status st;
    ht_model m = ht_model_make();
    vg_hook h = step_counter(1, -1, NULL);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(ht_run_nothing(ms, &st), &st); /* records the step */
    ht_log_capture();
    for (int i = 0; i < 30; i++) CHECK_OK(ht_run_nothing(ms, &st), &st);
    CHECK_STR_CONTAINS(ht_log_buf, "global step");
    CHECK_STR_CONTAINS(ht_log_buf, "has not been increased");
    CHECK_EQ_INT(ht_log_warnings, 5);
    ht_log_release();
    ht_close_session_graph(ms, m.g);
}

/* ------------------------------------------------------------------------ */
/* SummarySaverHook */

typedef struct sum_model {
    ht_model m;
    vg_output s1, s2; /* my_summary = var += 1, my_summary2 = 2 * that */
} sum_model;
static sum_model sum_model_make(void) {
    sum_model s;
    s.m = ht_model_make();
    vg_variable var = vg_get_variable(s.m.g, "var", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_output t = vg_assign_add(s.m.g, var.ref, vg_const_f32(s.m.g, 1.0f, NULL), "t");
    vg_output t2 = vg_mul(s.m.g, t, vg_const_f32(s.m.g, 2.0f, NULL), "t2");
    s.s1 = vg_summary_scalar(s.m.g, "my_summary", t);
    s.s2 = vg_summary_scalar(s.m.g, "my_summary2", t2);
    return s;
}

static vg_hook summary_hook(int64_t steps, double secs, vg_file_writer *w, vg_output op) {
    vg_status st;
    vg_hook h;
    vg_summary_saver_options o = {0};
    o.save_steps = steps;
    o.save_secs = secs;
    o.summary_writer = w;
    o.summary_op = op;
    if (vg_summary_saver_hook(&o, &h, &st) != VG_OK) fprintf(stderr, "summary hook: %s\n", st.msg);
    return h;
}

/* Runs `runs` train steps (clock += dt after each) with hook h writing to a new writer in
 * a new directory; returns the events (caller frees). */
static ht_events *run_summary_hook(sum_model *s, int64_t steps, double secs, vg_output op, int runs, double dt) {
    vg_status st;
    char dir[64];
    ht_begin_dir(dir, sizeof dir, "ssh");
    vg_file_writer *w = vg_file_writer_new(dir, NULL, &st);
    vg_hook h = summary_hook(steps, secs, w, op);
    ht_events *e = calloc(1, sizeof *e);
    vg_monitored_session *ms = ht_singular(s->m.g, NULL, NULL, &h, 1, &st);
    if (ms) {
        for (int i = 0; i < runs; i++) {
            CHECK_OK(ht_run_train(ms, &s->m, &st), &st);
            ht_now_value += dt;
        }
        CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st); /* end() flushes */
        ht_read_events(dir, e);
        vg_monitored_session_free(ms);
    }
    vg_file_writer_free(w);
    ht_end_dir(dir);
    return e;
}

static void expect_summaries(const ht_events *e, const char *tag, const int64_t *steps, const double *vals, int n) {
    int64_t got_steps[64];
    double got_vals[64];
    int k = ht_steps_of(e, tag, got_steps, got_vals, 64);
    CHECK_EQ_INT(k, n);
    for (int i = 0; i < n && i < k; i++) {
        CHECK_EQ_INT(got_steps[i], steps[i]);
        CHECK_NEAR(got_vals[i], vals[i], 0);
    }
}

/* item 176 */
static void test_summary_saver__bad_args(void) {
    vg_status st;
    sum_model s = sum_model_make();
    vg_scaffold *sc = vg_scaffold_new(NULL);
    vg_hook h;
    vg_summary_saver_options o = {0};
    o.save_steps = 10;
    CHECK_CODE(vg_summary_saver_hook(&o, &h, &st), VG_INVALID_ARGUMENT); /* neither */
    CHECK_STR_CONTAINS(st.msg, "Exactly one of scaffold or summary_op must be provided.");
    o.scaffold = sc;
    o.summary_op = s.s1;
    CHECK_CODE(vg_summary_saver_hook(&o, &h, &st), VG_INVALID_ARGUMENT); /* both */
    CHECK_STR_CONTAINS(st.msg, "Exactly one of scaffold or summary_op must be provided.");
    o.scaffold = NULL;
    o.save_secs = 10;
    EXPECT_CODE_MSG(vg_summary_saver_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT,
                    "Can not provide both every_secs and every_steps.");
    o.save_secs = -1;
    o.save_steps = -1;
    EXPECT_CODE_MSG(vg_summary_saver_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT,
                    "Either every_secs or every_steps should be provided.");
    CHECK(h.payload == NULL);
    vg_scaffold_free(sc);
    vg_graph_free(s.m.g);
}

/* item 177: save_steps=8 over 30 steps: 1, 9, 17, 25 with values 1..4 (the summary op,
 * which increments var, runs only when fetched); a START session log at step 1 */
static void test_summary_saver__save_steps(void) {
    sum_model s = sum_model_make();
    ht_events *e = run_summary_hook(&s, 8, -1, s.s1, 30, 0.0);
    const int64_t steps[4] = {1, 9, 17, 25};
    const double vals[4] = {1, 2, 3, 4};
    expect_summaries(e, "my_summary", steps, vals, 4);
    CHECK_EQ_INT(e->nv, 4);
    CHECK_EQ_INT(e->nstart, 1);
    CHECK_EQ_INT(e->start_steps[0], 1);
    free(e);
    vg_graph_free(s.m.g);
}

/* item 178: two summary ops. vigil's hook takes one summary op; TF's list of ops is
 * passed merged (vg_summary_merge): both values at steps 1 and 9. */
static void test_summary_saver__multiple_summaries(void) {
    sum_model s = sum_model_make();
    vg_output both[2] = {s.s1, s.s2};
    vg_output merged = vg_summary_merge(s.m.g, both, 2, "merged");
    ht_events *e = run_summary_hook(&s, 8, -1, merged, 10, 0.0);
    const int64_t steps[2] = {1, 9};
    const double v1[2] = {1, 2}, v2[2] = {2, 4};
    expect_summaries(e, "my_summary", steps, v1, 2);
    expect_summaries(e, "my_summary2", steps, v2, 2);
    free(e);
    vg_graph_free(s.m.g);
}

/* item 179: save_secs=0.5, 0.5 s per step, 4 steps: every step */
static void test_summary_saver__save_secs_saving_once_every_step(void) {
    sum_model s = sum_model_make();
    ht_events *e = run_summary_hook(&s, -1, 0.5, s.s1, 4, 0.5);
    const int64_t steps[4] = {1, 2, 3, 4};
    const double vals[4] = {1, 2, 3, 4};
    expect_summaries(e, "my_summary", steps, vals, 4);
    free(e);
    vg_graph_free(s.m.g);
}

/* item 180: save_secs=9, 3.1 s per step, 8 steps: 1, 4, 7 */
static void test_summary_saver__save_secs_saving_once_every_three_steps(void) {
    sum_model s = sum_model_make();
    ht_events *e = run_summary_hook(&s, -1, 9.0, s.s1, 8, 3.1);
    const int64_t steps[3] = {1, 4, 7};
    const double vals[3] = {1, 2, 3};
    expect_summaries(e, "my_summary", steps, vals, 3);
    free(e);
    vg_graph_free(s.m.g);
}

/* §20: the scaffold's summary op (merge_all) is used when no op is given; a hook without
 * a writer (no output_dir) writes nothing but fetches the op every run */
static void test_summary_saver__scaffold_summary_op_and_no_writer(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "ssh");
    sum_model s = sum_model_make();
    vg_scaffold *sc = vg_scaffold_new(NULL);
    vg_hook hooks[2];
    vg_summary_saver_options o = {0};
    o.save_steps = 2;
    o.scaffold = sc;
    o.output_dir = dir;
    CHECK_OK(vg_summary_saver_hook(&o, &hooks[0], &st), &st);
    o.output_dir = NULL; /* no writer */
    CHECK_OK(vg_summary_saver_hook(&o, &hooks[1], &st), &st);
    vg_monitored_session *ms = ht_singular(s.m.g, sc, NULL, hooks, 2, &st);
    if (!ms) return;
    for (int i = 0; i < 3; i++) CHECK_OK(ht_run_train(ms, &s.m, &st), &st);
    CHECK_OK(ht_end_free(ms, &st), &st);
    ht_events *e = ht_events_of(dir);
    /* The writer-less hook returns from after_run before recording its next step (TF
     * does the same), so it asks for the summary op in every run: the op (var += 1) runs
     * in every step, the other hook records it at steps 1 and 3 -> values 1 and 3. */
    const int64_t steps[2] = {1, 3};
    const double v1[2] = {1, 3}, v2[2] = {2, 6};
    expect_summaries(e, "my_summary", steps, v1, 2);
    expect_summaries(e, "my_summary2", steps, v2, 2);
    free(e);
    ht_cleanup(sc, s.m.g, dir);
}

/* ------------------------------------------------------------------------ */
/* ProfilerHook */

/* item 189 */
static void test_profiler__bad_args(void) {
    vg_status st;
    vg_hook h;
    CHECK_CODE(vg_profiler_hook(
                   &(vg_profiler_options){.save_steps = 10, .save_secs = 10, .output_dir = "/tmp/vg_unused"}, &h, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Can not provide both every_secs and every_steps.");
    CHECK_CODE(vg_profiler_hook(
                   &(vg_profiler_options){.save_steps = -1, .save_secs = -1, .output_dir = "/tmp/vg_unused"}, &h, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Either every_secs or every_steps should be provided.");
    CHECK(h.payload == NULL);
}

/* Runs the train op with a ProfilerHook; after run i, counts[i] = timeline files. */
static void run_profiler(int64_t steps, double secs, const double *at, int runs, int *counts, ht_events *ev) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "prh");
    double t = 1484695987.209386;
    ht_clock_mock(t);
    ht_model m = ht_model_make();
    vg_hook h;
    CHECK_OK(
        vg_profiler_hook(&(vg_profiler_options){.save_steps = steps, .save_secs = secs, .output_dir = dir}, &h, &st),
        &st);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    for (int i = 0; i < runs; i++) {
        ht_now_value = t + (at ? at[i] : 0);
        CHECK_OK(ht_run_train(ms, &m, &st), &st);
        counts[i] = ht_count_files(dir, "timeline-", ".json");
    }
    if (ev) {
        ht_flush_dir(dir);
        ht_read_events(dir, ev);
        char p[200];
        snprintf(p, sizeof p, "%s/timeline-2.json", dir);
        FILE *f = fopen(p, "r");
        char buf[256] = {0};
        CHECK(f != NULL);
        if (f) {
            CHECK(fread(buf, 1, sizeof buf - 1, f) > 0);
            CHECK_STR_CONTAINS(buf, "traceEvents");
            fclose(f);
        }
    }
    ht_close_session_graph(ms, m.g);
    vg_file_writer_cache_clear();
    ht_end_dir(dir);
}

/* items 190, 191: save_secs=2, mocked clock: nothing after the first step; files after
 * runs at T, +2.5, +2.6, +4.4, +4.5: 0, 1, 1, 1, 2 */
static void test_profiler__save_secs(void) {
    const double at[5] = {0, 2.5, 2.6, 4.4, 4.5};
    int counts[5] = {-1, -1, -1, -1, -1};
    run_profiler(-1, 2, at, 5, counts, NULL);
    const int expect[5] = {0, 1, 1, 1, 2};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(counts[i], expect[i]);
}

/* items 192, 193: save_steps=1 -> none after the first step; save_steps=2 -> 0,1,1,2,2 */
static void test_profiler__save_steps(void) {
    int counts[5] = {-1, -1, -1, -1, -1};
    run_profiler(1, -1, NULL, 1, counts, NULL);
    CHECK_EQ_INT(counts[0], 0);
    run_profiler(2, -1, NULL, 5, counts, NULL);
    const int expect[5] = {0, 1, 1, 2, 2};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(counts[i], expect[i]);
}

/* item 194: save_steps=1, two runs: run metadata only under "step_2" */
static void test_profiler__run_metadata_saves(void) {
    int counts[2];
    ht_events *e = calloc(1, sizeof *e);
    run_profiler(1, -1, NULL, 2, counts, e);
    CHECK_EQ_INT(counts[1], 1);
    CHECK_EQ_INT(e->nrm, 1);
    if (e->nrm == 1) {
        CHECK(!strcmp(e->rm_tags[0], "step_2"));
        CHECK_EQ_INT(e->rm_steps[0], 2);
    }
    free(e);
}

int main(void) {
    RUN_TEST(test_checkpoint_saver__bad_args);
    RUN_TEST(test_checkpoint_saver__saves_when_saver_and_scaffold_both_missing);
    RUN_TEST(test_checkpoint_saver__save_secs_first_step_and_end);
    RUN_TEST(test_checkpoint_saver__save_secs_calls_listeners_at_begin_and_end);
    RUN_TEST(test_checkpoint_saver__listener_with_monitored_session);
    RUN_TEST(test_checkpoint_saver__listener_stops_training_in_after_save);
    RUN_TEST(test_checkpoint_saver__save_secs_saves_periodically);
    RUN_TEST(test_checkpoint_saver__save_secs_calls_listeners_periodically);
    RUN_TEST(test_checkpoint_saver__save_steps_saves_periodically);
    RUN_TEST(test_checkpoint_saver__summary_writer_defs);
    RUN_TEST(test_checkpoint_saver__save_checkpoint_before_first_train_step);
    RUN_TEST(test_checkpoint_saver__save_graph_def);
    RUN_TEST(test_checkpoint_saver__scaffold_without_saver);
    RUN_TEST(test_checkpoint_saver__needs_global_step);
    RUN_TEST(test_step_counter__bad_args);
    RUN_TEST(test_step_counter__every_n_steps);
    RUN_TEST(test_step_counter__every_n_secs);
    RUN_TEST(test_step_counter__global_step_name);
    RUN_TEST(test_step_counter__log_warning_if_global_step_not_increased);
    RUN_TEST(test_summary_saver__bad_args);
    RUN_TEST(test_summary_saver__save_steps);
    RUN_TEST(test_summary_saver__multiple_summaries);
    RUN_TEST(test_summary_saver__save_secs_saving_once_every_step);
    RUN_TEST(test_summary_saver__save_secs_saving_once_every_three_steps);
    RUN_TEST(test_summary_saver__scaffold_summary_op_and_no_writer);
    RUN_TEST(test_profiler__bad_args);
    RUN_TEST(test_profiler__save_secs);
    RUN_TEST(test_profiler__save_steps);
    RUN_TEST(test_profiler__run_metadata_saves);
    TEST_MAIN_END();
}
