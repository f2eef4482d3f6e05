/* test_monitored_tfedge.c - TF 1.15 edge cases of monitored sessions (issue 8 part 4),
 * each mirroring a test of tensorflow/python/training/monitored_session_test.py (or
 * basic_session_run_hooks_test.py / coordinator_test.py) and the code path of
 * monitored_session.py it exercises:
 *   - RuntimeError → FAILED_PRECONDITION (feed conflicts, NanLossDuringTrainingError,
 *     Coordinator.join stragglers);
 *   - SingularMonitoredSession whose loop never asked should_stop(): end() and then
 *     close() re-raises the coordinator's error;
 *   - second close with a failing end(None): "Session is already closed.";
 *   - close with a failing end() and a thread error: join's error wins;
 *   - preemption in run() while the coordinator holds another error: no recovery. */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"

/* a hook counting its callbacks; end() fails with end_code when set */
typedef struct ehook {
    int acs, end, end_null;
    vg_coord *coord;
    vg_code end_code;
    vg_code before_code; /* before_run fails with it when set (once) */
} ehook;

static vg_code e_acs(void *p, vg_session *s, vg_coord *c, vg_status *st) {
    (void)s;
    (void)st;
    ehook *h = p;
    h->acs++;
    h->coord = c;
    return VG_OK;
}
static vg_code e_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    (void)ctx;
    (void)a;
    ehook *h = p;
    if (h->before_code) {
        vg_code c = h->before_code;
        h->before_code = VG_OK;
        return vg_status_set(st, c, "hook preempted in before_run");
    }
    return VG_OK;
}
static vg_code e_end(void *p, vg_session *s, vg_status *st) {
    ehook *h = p;
    h->end++;
    if (!s) h->end_null++;
    if (h->end_code) return vg_status_set(st, h->end_code, "hook failed in end");
    return VG_OK;
}
static vg_hook eh(ehook *h) {
    vg_hook k = {"e", NULL, e_acs, e_before, NULL, e_end, NULL, h};
    return k;
}
/* A new graph (*g, the caller frees it) with a global step, and a MonitoredSession on it
 * whose one hook is eh(h) (the session copies the hook). */
static vg_monitored_session *eh_session(vg_graph **g, ehook *h, vg_status *st) {
    *g = vg_graph_new();
    vg_get_or_create_global_step(*g);
    vg_hook k = eh(h);
    return vg_monitored_session_new(*g, &(vg_monitored_options){.hooks = &k, .nhooks = 1}, st);
}

/* eh_session's graph g and session ms (NULL on failure) as one value. */
typedef struct eh_run {
    vg_graph *g;
    vg_monitored_session *ms;
} eh_run;
static eh_run eh_open(ehook *h, vg_status *st) {
    eh_run r;
    r.ms = eh_session(&r.g, h, st);
    return r;
}

static void report(vg_coord *c, vg_code code, const char *msg) {
    vg_status err;
    vg_status_set(&err, code, "%s", msg);
    vg_coord_request_stop(c, &err);
}

/* SingularMonitoredSessionTest.test_regular_exception_reported_to_coord_pass_through_run:
 * an error reported to the coordinator; runs still work; the block body never calls
 * should_stop(), so __exit__(None) calls every hook's end() and close() re-raises the
 * error from join. The contrast: a loop that asked should_stop() (TF raised there)
 * skips end(). */
static void test_tfedge__singular_coord_error_without_should_stop(void) {
    vg_status st;
    vg_code rc;
    for (int ask = 0; ask < 2; ask++) {
        vg_graph *g = vg_graph_new();
        vg_output gs = vg_get_or_create_global_step(g);
        ehook h1 = {0}, h2 = {0};
        vg_hook hooks[2] = {eh(&h1), eh(&h2)};
        vg_monitored_session *ms = ht_singular(g, NULL, NULL, hooks, 2, &st);
        if (!ms) return;
        CHECK_NEAR(ht_fetch_scalar(ms, gs, &rc, &st), 0, 0);
        report(h1.coord, VG_FAILED_PRECONDITION, "a thread wants to stop");
        CHECK_NEAR(ht_fetch_scalar(ms, gs, &rc, &st), 0, 0); /* runs normally */
        CHECK_OK(rc, &st);
        if (ask) CHECK(vg_monitored_session_should_stop(ms));
        EXPECT_CODE_MSG(vg_monitored_session_end(ms, VG_OK, &st), &st, VG_FAILED_PRECONDITION,
                        "a thread wants to stop");
        CHECK_EQ_INT(h1.end, ask ? 0 : 1);
        CHECK_EQ_INT(h2.end, ask ? 0 : 1);
        CHECK(vg_monitored_session_graph(ms) == NULL); /* closed */
        ht_free_session_graph(ms, g);
    }
}

/* MonitoredSessionTest.test_with_statement_and_close / _close_internal: a second close
 * calls end(None) on each hook and then raises RuntimeError "Session is already
 * closed." from the `finally`, replacing the hook's own error. */
static void test_tfedge__second_close_hook_end_fails(void) {
    vg_status st;
    ehook h = {0};
    eh_run r = eh_open(&h, &st);
    if (!r.ms) return;
    CHECK_OK(vg_monitored_session_close(r.ms, &st), &st);
    CHECK_EQ_INT(h.end, 1);
    h.end_code = VG_INTERNAL;
    EXPECT_CODE_MSG(vg_monitored_session_close(r.ms, &st), &st, VG_FAILED_PRECONDITION, "Session is already closed.");
    CHECK_EQ_INT(h.end, 2);
    CHECK_EQ_INT(h.end_null, 1);
    ht_free_session_graph(r.ms, r.g);
}

/* MonitoredSessionTest.test_regular_exception_reported_to_coord_pass_through_return
 * with a failing end(): _close_internal calls end() (raises), then in `finally`
 * _CoordinatedSession.close joins, and join re-raises the thread's error, which
 * replaces the hook's error. Both session kinds. */
static void test_tfedge__close_join_error_replaces_end_error(void) {
    vg_status st;
    for (int singular = 0; singular < 2; singular++) {
        vg_graph *g = vg_graph_new();
        vg_get_or_create_global_step(g);
        ehook h = {0};
        h.end_code = VG_INTERNAL;
        vg_hook k = eh(&h);
        vg_monitored_session *ms =
            singular ? ht_singular(g, NULL, NULL, &k, 1, &st)
                     : vg_monitored_session_new(g, &(vg_monitored_options){.hooks = &k, .nhooks = 1}, &st);
        if (!ms) return;
        report(h.coord, VG_UNKNOWN, "a thread wants to stop");
        EXPECT_CODE_MSG(vg_monitored_session_close(ms, &st), &st, VG_UNKNOWN, "a thread wants to stop");
        CHECK_EQ_INT(h.end, 1);
        /* no thread error: the hook's error comes out */
        ht_free_session_graph(ms, g);
    }
    ehook h = {.end_code = VG_INTERNAL};
    eh_run r = eh_open(&h, &st);
    if (!r.ms) return;
    EXPECT_CODE_MSG(vg_monitored_session_close(r.ms, &st), &st, VG_INTERNAL, "hook failed in end");
    ht_free_session_graph(r.ms, r.g);
}

/* RecoverableSessionTest.test_recovery_from_non_preemption_in_coordinator, with the run
 * itself preempted: _RecoverableSession.run catches the AbortedError and calls
 * self.close(); _CoordinatedSession.close's join re-raises the thread's UnknownError,
 * which _WrappedSession.close does not swallow: it escapes run() and no new session
 * is created. */
static void test_tfedge__preemption_with_stored_error_not_recovered(void) {
    vg_status st;
    vg_code rc;
    ehook h = {0};
    eh_run r = eh_open(&h, &st);
    vg_output gs = vg_get_global_step(r.g);
    if (!r.ms) return;
    CHECK_NEAR(ht_fetch_scalar(r.ms, gs, &rc, &st), 0, 0);
    report(h.coord, VG_UNKNOWN, "a thread failed");
    h.before_code = VG_ABORTED;
    ht_fetch_scalar(r.ms, gs, &rc, &st);
    CHECK_EQ_INT(rc, VG_UNKNOWN);
    CHECK_STR_CONTAINS(st.msg, "a thread failed");
    CHECK_EQ_INT(h.acs, 1); /* not recovered */
    CHECK(vg_monitored_session_should_stop(r.ms));
    /* the `with` exit of the failing block: no end(), close does not raise again */
    CHECK_CODE(vg_monitored_session_end(r.ms, rc, &st), VG_UNKNOWN);
    CHECK_EQ_INT(h.end, 0);
    ht_free_session_graph(r.ms, r.g);
    /* a plain preemption (nothing stored) still recovers */
    r.g = vg_graph_new();
    gs = vg_get_or_create_global_step(r.g);
    ehook h2 = {0};
    vg_hook k2 = eh(&h2);
    r.ms = vg_monitored_session_new(r.g, &(vg_monitored_options){.hooks = &k2, .nhooks = 1}, &st);
    if (!r.ms) return;
    h2.before_code = VG_ABORTED;
    CHECK_NEAR(ht_fetch_scalar(r.ms, gs, &rc, &st), 0, 0);
    CHECK_OK(rc, &st);
    CHECK_EQ_INT(h2.acs, 2);
    CHECK_OK(vg_monitored_session_end(r.ms, VG_OK, &st), &st);
    ht_free_session_graph(r.ms, r.g);
}

/* the same through run_step_fn (RecoverableSessionTest's step_fn variants:
 * _RecoverableSession.run_step_fn closes before retrying, and that close raises) */
static vg_code step_aborted(vg_step_context *sc, void *payload, vg_status *st) {
    (void)sc;
    int *calls = payload;
    (*calls)++;
    return vg_status_set(st, VG_ABORTED, "step preempted");
}
static void test_tfedge__step_fn_preemption_with_stored_error(void) {
    vg_status st;
    ehook h = {0};
    eh_run r = eh_open(&h, &st);
    if (!r.ms) return;
    report(h.coord, VG_UNKNOWN, "a thread failed");
    int calls = 0;
    EXPECT_CODE_MSG(vg_monitored_session_run_step_fn(r.ms, step_aborted, &calls, &st), &st, VG_UNKNOWN,
                    "a thread failed");
    CHECK_EQ_INT(calls, 1);
    CHECK_EQ_INT(h.acs, 1);
    ht_free_session_graph(r.ms, r.g);
}

/* HookedSessionTest.testHooksFeedConflicts / testHooksAndUserFeedConflicts: RuntimeError
 * (FAILED_PRECONDITION) "Same tensor is fed". */
typedef struct fhook {
    vg_output feed;
    vg_tensor *val;
} fhook;
static vg_code f_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    (void)ctx;
    (void)st;
    fhook *h = p;
    a->feeds = &h->feed;
    a->feed_values = &h->val;
    a->nfeeds = 1;
    return VG_OK;
}
static void test_tfedge__feed_conflicts_are_runtime_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_output y = vg_add(g, x, vg_const_f32(g, 1.0f, NULL), "y");
    fhook a = {x, vg_tensor_new_scalar_f32(1, NULL)}, b = {x, vg_tensor_new_scalar_f32(2, NULL)};
    vg_hook hooks[2] = {{"a", NULL, NULL, f_before, NULL, NULL, NULL, &a}, {"b", NULL, NULL, f_before, NULL, NULL, NULL, &b}};
    vg_monitored_session *ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = hooks, .nhooks = 2}, &st);
    if (!ms) return;
    vg_code rc;
    ht_fetch_scalar(ms, y, &rc, &st);
    CHECK_EQ_INT(rc, VG_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(st.msg, "Same tensor is fed by two hooks.");
    vg_monitored_session_free(ms);
    ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = hooks, .nhooks = 1}, &st);
    if (!ms) return;
    vg_run_args ra = {0};
    vg_tensor *out[1] = {NULL};
    ra.fetches = &y;
    ra.nfetches = 1;
    ra.feeds = &x;
    ra.feed_values = &b.val;
    ra.nfeeds = 1;
    EXPECT_CODE_MSG(vg_monitored_session_run(ms, &ra, out, NULL, &st), &st, VG_FAILED_PRECONDITION,
                    "Same tensor is fed by a SessionRunHook and user.");
    vg_monitored_session_free(ms);
    vg_tensor_free(a.val);
    vg_tensor_free(b.val);
    vg_graph_free(g);
}

/* session_manager.py SessionManager.__init__ (SessionManagerTest's ValueError case):
 * a ready_for_local_init_op without a local_init_op is a ValueError (INVALID_ARGUMENT). */
static void test_tfedge__ready_for_local_init_op_needs_local_init_op(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_session_manager_options o = {0};
    o.ready_for_local_init_op = vg_report_uninitialized_variables(g, &v.ref, 1, "ready_local");
    CHECK(vg_session_manager_new(g, &o, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT,
                    "If you pass a ready_for_local_init_op you must also pass a local_init_op");
    o.local_init_op = vg_no_op(g, "local_init");
    vg_session_manager *sm = vg_session_manager_new(g, &o, &st);
    CHECK(sm != NULL);
    CHECK_EQ_INT(st.code, VG_OK);
    vg_session_manager_free(sm);
    vg_graph_free(g);
}

/* coordinator_test.py testRequestStopRaisesIfJoined: request_stop(ex) after join raises
 * ex; after clear_stop errors are stored again. */
static void test_tfedge__request_stop_raises_if_joined(void) {
    vg_status st, err;
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_coord_join(c, 1, false, &st), &st);
    vg_status_set(&err, VG_FAILED_PRECONDITION, "Too late");
    CHECK_CODE(vg_coord_request_stop(c, &err), VG_FAILED_PRECONDITION);
    CHECK_CODE(vg_coord_raise_requested_exception(c, &st), VG_OK);
    vg_coord_clear_stop(c);
    CHECK_CODE(vg_coord_request_stop(c, &err), VG_OK); /* handled normally again */
    EXPECT_CODE_MSG(vg_coord_join(c, 1, false, &st), &st, VG_FAILED_PRECONDITION, "Too late");
    vg_coord_free(c);
}

int main(void) {
    RUN_TEST(test_tfedge__ready_for_local_init_op_needs_local_init_op);
    RUN_TEST(test_tfedge__request_stop_raises_if_joined);
    RUN_TEST(test_tfedge__singular_coord_error_without_should_stop);
    RUN_TEST(test_tfedge__second_close_hook_end_fails);
    RUN_TEST(test_tfedge__close_join_error_replaces_end_error);
    RUN_TEST(test_tfedge__preemption_with_stored_error_not_recovered);
    RUN_TEST(test_tfedge__step_fn_preemption_with_stored_error);
    RUN_TEST(test_tfedge__feed_conflicts_are_runtime_errors);
    TEST_MAIN_END();
}
