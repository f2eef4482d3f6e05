/* test_mts.c - MonitoredTrainingSession against the checklist of
 * docs/tf1-semantics.md (items 131-138, 97) and TF's
 * MonitoredTrainingSessionTest: restarts restore the global step, checkpoint and summary
 * frequencies (a mocked clock stands in for sleeps), chief-only hooks, non-chief workers,
 * conflicting frequencies. */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"

/* A hook counting its calls and its destruction. */
typedef struct counter {
    int begin, after_create, before, after, end, destroyed;
} counter;
static vg_code c_begin(void *p, vg_graph *g, vg_status *st) { ((counter *)p)->begin++; return VG_OK; }
static vg_code c_create(void *p, vg_session *s, vg_coord *c, vg_status *st) {
    ((counter *)p)->after_create++;
    return VG_OK;
}
static vg_code c_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    ((counter *)p)->before++;
    return VG_OK;
}
static vg_code c_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    ((counter *)p)->after++;
    return VG_OK;
}
static vg_code c_end(void *p, vg_session *s, vg_status *st) { ((counter *)p)->end++; return VG_OK; }
static void c_destroy(void *p) { ((counter *)p)->destroyed++; }
static vg_hook counting(counter *c) {
    vg_hook h = {"counter", c_begin, c_create, c_before, c_after, c_end, c_destroy, c};
    return h;
}

/* One step of the train op (global_step += 1). */
static vg_code train(vg_monitored_session *ms, const ht_model *m, vg_status *st) { return ht_run_train(ms, m, st); }

/* The global step seen by a new session of the same graph (restart). */
static int64_t gs_of(vg_monitored_session *ms, const ht_model *m) {
    vg_status st;
    vg_run_args a = {0};
    vg_tensor *out[1] = {NULL};
    a.fetches = &m->gs;
    a.nfetches = 1;
    if (vg_monitored_session_run(ms, &a, out, NULL, &st) != VG_OK) {
        fprintf(stderr, "gs_of: %s\n", st.msg);
        return -1;
    }
    int64_t v = *(const int64_t *)vg_tensor_data(out[0]);
    vg_tensor_free(out[0]);
    return v;
}

static vg_monitored_session *mts(vg_graph *g, const vg_mts_options *o) {
    vg_status st;
    vg_monitored_session *ms = vg_monitored_training_session_new(g, o, &st);
    if (!ms) fprintf(stderr, "MonitoredTrainingSession: %s\n", st.msg);
    return ms;
}

/* MonitoredTrainingSession options with checkpoint_dir f's directory, the rest zero. */
static vg_mts_options mts_options_in(const ht_fx *f) {
    vg_mts_options o = {0};
    o.checkpoint_dir = f->dir;
    return o;
}

/* Restarts on dir (defaults) and returns the global step it reads. */
static int64_t restart_gs(ht_model *m, const char *dir) {
    vg_mts_options o = {0};
    o.checkpoint_dir = dir;
    vg_monitored_session *ms = mts(m->g, &o);
    if (!ms) return -1;
    int64_t v = gs_of(ms, m);
    ht_close_session(ms);
    return v;
}

/* The end of a checkpointing test: ends and frees ms (end() checked), checks that a
 * restart on f's directory reads global step want, and frees f. */
static void end_restart_free(vg_monitored_session *ms, ht_fx *f, int64_t want) {
    vg_status st;
    CHECK_OK(ht_end_free(ms, &st), &st);
    CHECK_EQ_INT(restart_gs(&f->m, f->dir), want);
    ht_fx_end(f);
}

/* item 131: save and restore through the checkpoint dir (default 600 s: the session
 * saves at creation and the hook's end() saves the last step) */
static void test_mts__saving_restoring_checkpoint(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("mts", false);
    vg_mts_options o = mts_options_in(&f);
    vg_monitored_session *ms = mts(f.m.g, &o);
    if (!ms) return;
    CHECK_EQ_INT(gs_of(ms, &f.m), 0);
    CHECK_OK(train(ms, &f.m, &st), &st);
    CHECK_OK(train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(gs_of(ms, &f.m), 2);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 0); /* saved at creation only, so far */
    end_restart_free(ms, &f, 2);
}

/* item 132: save_checkpoint_steps=100 over 100 steps -> 100 (saved by the step trigger) */
static void test_mts__save_checkpoint_steps(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("mts", false);
    vg_mts_options o = mts_options_in(&f);
    o.save_checkpoint_steps = 100;
    vg_monitored_session *ms = mts(f.m.g, &o);
    if (!ms) return;
    for (int i = 0; i < 100; i++) CHECK_OK(train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 100);
    end_restart_free(ms, &f, 100);
}

/* item 133: save_checkpoint_secs=0.1, one step, a 0.2 s pause (mocked), ten steps */
static void test_mts__save_checkpoint_secs(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("mts", true);
    vg_mts_options o = mts_options_in(&f);
    o.save_checkpoint_secs = 0.1;
    o.log_step_count_steps = 10;
    vg_monitored_session *ms = mts(f.m.g, &o);
    if (!ms) return;
    CHECK_OK(train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 0);
    ht_now_value += 0.2;
    for (int i = 0; i < 10; i++) CHECK_OK(train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(ht_ckpt_gs(f.dir), 2); /* the first step after the pause saved */
    end_restart_free(ms, &f, 11);
}

/* items 134 (summary defaults: every 100 steps) and 135 (save_summaries_steps None +
 * save_summaries_secs=0.1): the event files hold the user's tag and "global_step/sec" */
static void test_mts__summaries(void) {
    vg_status st;
    for (int secs = 0; secs < 2; secs++) {
        ht_fx f = ht_fx_make_bare("mts", true);
        ht_user_summary(&f.m);
        vg_mts_options o = mts_options_in(&f);
        o.log_step_count_steps = 10;
        if (secs) {
            o.save_summaries_secs = 0.1; /* save_summaries_steps USE_DEFAULT: None */
        }
        vg_monitored_session *ms = mts(f.m.g, &o);
        if (!ms) return;
        CHECK_OK(train(ms, &f.m, &st), &st);
        ht_now_value += 0.2;
        for (int i = 0; i < 101; i++) {
            CHECK_OK(train(ms, &f.m, &st), &st);
            ht_now_value += 0.01;
        }
        ht_events *e = ht_end_events_of(ms, f.dir);
        CHECK(ht_has_tag(e, "my_summary_tag"));
        CHECK(ht_has_tag(e, "global_step/sec"));
        int64_t steps[64];
        double vals[64];
        int n = ht_steps_of(e, "my_summary_tag", steps, vals, 64);
        if (!secs) {
            CHECK_EQ_INT(n, 2); /* steps 1 and 101 */
            if (n == 2) {
                CHECK_EQ_INT(steps[0], 1);
                CHECK_NEAR(vals[0], 2.0, 0);
                CHECK_EQ_INT(steps[1], 101);
                CHECK_NEAR(vals[1], 202.0, 0);
            }
        } else {
            CHECK(n >= 10); /* every 0.1 mocked seconds: about every 10 steps */
            CHECK(n > 0 && steps[0] == 1 && steps[1] == 2);
        }
        n = ht_steps_of(e, "global_step/sec", steps, NULL, 64);
        CHECK_EQ_INT(n, 10); /* every 10 steps from 11 to 101 */
        CHECK_EQ_INT(e->nstart, 1);
        free(e);
        ht_fx_end(&f);
    }
}

/* item 136: save_checkpoint_secs=0 (no_checkpoints) disables the checkpoint hook; the chief-only hook is
 * begun once */
static void test_mts__custom_saving(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("mts", false);
    counter c = {0};
    vg_hook h = counting(&c);
    vg_mts_options o = mts_options_in(&f);
    o.chief_only_hooks = &h;
    o.nchief_only_hooks = 1;
    o.no_checkpoints = true; /* TF: save_checkpoint_secs=0 */
    vg_monitored_session *ms = mts(f.m.g, &o);
    if (!ms) return;
    CHECK_OK(train(ms, &f.m, &st), &st);
    CHECK_OK(ht_end_free(ms, &st), &st);
    CHECK_EQ_INT(c.begin, 1);
    CHECK_EQ_INT(c.after_create, 1);
    CHECK_EQ_INT(c.before, 1);
    CHECK_EQ_INT(c.end, 1);
    CHECK_EQ_INT(c.destroyed, 1);
    CHECK(!ht_exists(f.dir, "checkpoint"));
    CHECK_EQ_INT(ht_count_files(f.dir, "model.ckpt", ""), 0);
    CHECK_EQ_INT(restart_gs(&f.m, f.dir), 0); /* nothing to restore */
    ht_fx_end(&f);
}

/* item 137 (+97): a non-chief worker: only the user's hooks (chief-only hooks are
 * released at once and never called), no summaries, no checkpoints; its creator waits for
 * a ready model (here its local init op initializes everything) and never restores. */
static void test_mts__non_chief(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("mts", false);
    ht_user_summary(&f.m);
    int64_t zero = 0;
    vg_tensor *empty = vg_tensor_new(VG_STRING, &zero, 1, &st);
    vg_scaffold_options so = {0};
    so.local_init_op = vg_global_variables_initializer(f.m.g);
    so.ready_for_local_init_op = vg_const(f.m.g, empty, "nothing_to_wait_for");
    vg_tensor_free(empty);
    vg_scaffold *sc = vg_scaffold_new(&so);
    counter chief = {0}, user = {0};
    vg_hook ch = counting(&chief), uh = counting(&user);
    vg_mts_options o = {0};
    o.not_chief = true;
    o.checkpoint_dir = f.dir;
    o.scaffold = sc;
    o.hooks = &uh;
    o.nhooks = 1;
    o.chief_only_hooks = &ch;
    o.nchief_only_hooks = 1;
    o.save_checkpoint_steps = 1;
    o.save_summaries_steps = 1;
    o.log_step_count_steps = 1;
    vg_monitored_session *ms = mts(f.m.g, &o);
    CHECK_EQ_INT(chief.destroyed, 1);
    if (!ms) return;
    for (int i = 0; i < 3; i++) CHECK_OK(train(ms, &f.m, &st), &st);
    CHECK_EQ_INT(gs_of(ms, &f.m), 3);
    CHECK_OK(ht_end_free(ms, &st), &st);
    CHECK_EQ_INT(chief.begin + chief.after_create + chief.before + chief.end, 0);
    CHECK_EQ_INT(user.begin, 1);
    CHECK_EQ_INT(user.before, 4);
    CHECK_EQ_INT(user.destroyed, 1);
    CHECK_EQ_INT(ht_count_files(f.dir, "", ""), 2); /* "." and ".." only */
    /* a worker on a model nobody initializes gives up after max_wait_secs (passed on) */
    vg_scaffold *plain = vg_scaffold_new(NULL);
    vg_graph_unfinalize(f.m.g);
    counter user2 = {0};
    uh = counting(&user2);
    vg_mts_options o2 = {0};
    o2.not_chief = true;
    o2.scaffold = plain;
    o2.hooks = &uh;
    o2.nhooks = 1;
    o2.max_wait_secs = 0.5;
    double t0 = ht_wall();
    ms = vg_monitored_training_session_new(f.m.g, &o2, &st);
    CHECK(ms == NULL);
    CHECK_EQ_INT(st.code, VG_DEADLINE_EXCEEDED);
    CHECK(ht_wall() - t0 < 5.0);
    CHECK_EQ_INT(user2.destroyed, 1);
    vg_scaffold_free(plain);
    ht_cleanup(sc, f.m.g, f.dir);
}

/* item 138: both checkpoint (or both summary) frequencies -> INVALID_ARGUMENT at
 * construction; the hooks given are released and nothing is written */
static void test_mts__both_frequencies(void) {
    vg_status st;
    ht_fx f = ht_fx_make_bare("mts", false);
    for (int which = 0; which < 2; which++) {
        counter u = {0}, c = {0};
        vg_hook uh = counting(&u), ch = counting(&c);
        vg_mts_options o = mts_options_in(&f);
        o.hooks = &uh;
        o.nhooks = 1;
        o.chief_only_hooks = &ch;
        o.nchief_only_hooks = 1;
        if (which == 0) {
            o.save_checkpoint_secs = 10;
            o.save_checkpoint_steps = 10;
        } else {
            o.save_summaries_secs = 10;
            o.save_summaries_steps = 10;
        }
        vg_monitored_session *ms = vg_monitored_training_session_new(f.m.g, &o, &st);
        CHECK(ms == NULL);
        EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT, "Can not provide both every_secs and every_steps.");
        CHECK_EQ_INT(u.destroyed, 1);
        CHECK_EQ_INT(c.destroyed, 1);
        CHECK_EQ_INT(u.begin + c.begin, 0);
        vg_monitored_session_free(ms);
    }
    CHECK(!vg_graph_finalized(f.m.g));
    CHECK(!ht_exists(f.dir, "checkpoint"));
    /* one of them unset (USE_DEFAULT, then None) with the other positive is fine */
    vg_mts_options o = mts_options_in(&f);
    o.save_checkpoint_steps = 5;
    vg_monitored_session *ms = mts(f.m.g, &o);
    CHECK(ms != NULL);
    if (ms) {
        for (int i = 0; i < 5; i++) CHECK_OK(train(ms, &f.m, &st), &st);
        CHECK_EQ_INT(ht_ckpt_gs(f.dir), 5);
        ht_close_session(ms);
    }
    ht_fx_end(&f);
}

/* §12: hook order (chief-only, step counter, summary saver, checkpoint saver, user),
 * summary_dir separate from checkpoint_dir, log_step_count_steps=0 drops the counter */
static void test_mts__summary_dir_and_no_step_counter(void) {
    vg_status st;
    char dir[64], sdir[64];
    tu_mkdtemp(dir, sizeof dir, "mts");
    ht_begin_dir(sdir, sizeof sdir, "mts");
    ht_model m = ht_model_make();
    ht_user_summary(&m);
    vg_mts_options o = {0};
    o.checkpoint_dir = dir;
    o.summary_dir = sdir;
    o.no_step_counter = true;
    o.save_summaries_steps = 2;
    vg_monitored_session *ms = mts(m.g, &o);
    if (!ms) return;
    for (int i = 0; i < 4; i++) {
        CHECK_OK(train(ms, &m, &st), &st);
        ht_now_value += 0.5;
    }
    ht_events *e = ht_end_events_of(ms, sdir);
    int64_t steps[8];
    CHECK_EQ_INT(ht_steps_of(e, "my_summary_tag", steps, NULL, 8), 2);
    CHECK(!ht_has_tag(e, "global_step/sec"));
    ht_read_events(dir, e); /* the checkpoint hook's writer: no summaries there */
    CHECK_EQ_INT(e->nv, 0);
    CHECK(e->nckpt >= 1);
    free(e);
    CHECK_EQ_INT(ht_ckpt_gs(dir), 4);
    vg_graph_free(m.g);
    ht_end_dir(dir);
    tu_rmrf(sdir);
}

int main(void) {
    RUN_TEST(test_mts__saving_restoring_checkpoint);
    RUN_TEST(test_mts__save_checkpoint_steps);
    RUN_TEST(test_mts__save_checkpoint_secs);
    RUN_TEST(test_mts__summaries);
    RUN_TEST(test_mts__custom_saving);
    RUN_TEST(test_mts__non_chief);
    RUN_TEST(test_mts__both_frequencies);
    RUN_TEST(test_mts__summary_dir_and_no_step_counter);
    TEST_MAIN_END();
}
