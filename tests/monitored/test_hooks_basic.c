/* test_hooks_basic.c - StopAtStepHook, LoggingTensorHook, NanTensorHook,
 * GlobalStepWaiterHook, FinalOpsHook and FeedFnHook against the checklist of
 * docs/tf1-semantics.md (items 143-146, 167-175, 182-188) and TF's
 * basic_session_run_hooks_test.py. The hooks run inside SingularMonitoredSessions, whose
 * raw session stands in for TF's `sess` (to set the global step between runs). */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"
#include <pthread.h>

/* ------------------------------------------------------------------------ */
/* StopAtStepHook */

/* items 143 (and §13: no global step -> "Global step should be created") */
static void test_stop_at_step__bad_args(void) {
    vg_status st;
    vg_hook h;
    EXPECT_CODE_MSG(vg_stop_at_step_hook(10, 10, &h, &st), &st, VG_INVALID_ARGUMENT,
                    "Only one of num_steps or last_step");
    CHECK(h.payload == NULL);
    EXPECT_CODE_MSG(vg_stop_at_step_hook(-1, -1, &h, &st), &st, VG_INVALID_ARGUMENT,
                    "One of num_steps or last_step must be specified.");
    /* begin() on a graph without a global step */
    vg_graph *g = vg_graph_new();
    vg_const_f32(g, 1.0f, "c");
    CHECK_OK(vg_stop_at_step_hook(3, -1, &h, &st), &st);
    vg_monitored_session *ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = &h, .nhooks = 1}, &st);
    CHECK(ms == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "Global step should be created to use StopAtStepHook.");
    vg_graph_free(g);
}

/* item 144: last_step=10; the global step is set on the raw session between runs that
 * do not change it (TF runs a no_op). */
/* A SingularMonitoredSession on m's graph (scaffold sc, may be NULL) with a new
 * StopAtStepHook(num_steps, last_step); NULL (the reason on stderr) on failure. */
static vg_monitored_session *stop_at_session(ht_model *m, vg_scaffold *sc, int64_t num_steps, int64_t last_step) {
    vg_status st;
    vg_hook h;
    CHECK_OK(vg_stop_at_step_hook(num_steps, last_step, &h, &st), &st);
    return ht_singular(m->g, sc, NULL, &h, 1, &st);
}

/* For each steps[i]: sets m's global step to it (in ms's raw session) and runs nothing;
 * ms must ask to stop after the last one only. */
static void expect_stop_at_last(vg_monitored_session *ms, ht_model *m, const int64_t *steps, int n) {
    vg_status st;
    vg_session *raw = vg_monitored_session_raw_session(ms);
    for (int i = 0; i < n; i++) {
        ht_set_gs(raw, m, steps[i]);
        CHECK_OK(ht_run_nothing(ms, &st), &st);
        CHECK(vg_monitored_session_should_stop(ms) == (i == n - 1));
    }
}

static void test_stop_at_step__last_step(void) {
    vg_status st;
    ht_model m = ht_model_make();
    vg_monitored_session *ms = stop_at_session(&m, NULL, -1, 10);
    if (!ms) return;
    expect_stop_at_last(ms, &m, (const int64_t[]){5, 9, 10}, 3);
    CHECK_OK(ht_end_free(ms, &st), &st);
    /* TF resets the hooked session's flag and runs at 11: a new session does the same */
    ms = stop_at_session(&m, NULL, -1, 10);
    if (!ms) return;
    expect_stop_at_last(ms, &m, (const int64_t[]){11}, 1);
    ht_close_session_graph(ms, m.g);
}

/* init_fn of the scaffold: the session starts at global step *(int64_t*)payload */
typedef struct start_at {
    ht_model *m;
    int64_t step;
    int calls;
} start_at;
static vg_code init_gs(void *p, vg_scaffold *sc, vg_session *sess, vg_status *st) {
    start_at *s = p;
    s->calls++;
    return ht_set_gs(sess, s->m, s->step);
}
/* A scaffold whose init_fn is init_gs on sa (which must outlive it). */
static vg_scaffold *scaffold_init_gs(start_at *sa) {
    vg_scaffold_options so = {0};
    so.init_fn = init_gs;
    so.init_fn_payload = sa;
    return vg_scaffold_new(&so);
}

/* item 145: num_steps=10 created (after_create_session) at global step 5 -> last 15 */
static void test_stop_at_step__num_steps(void) {
    ht_model m = ht_model_make();
    start_at sa = {&m, 5, 0};
    vg_scaffold *sc = scaffold_init_gs(&sa);
    vg_monitored_session *ms = stop_at_session(&m, sc, 10, -1);
    if (!ms) return;
    CHECK_EQ_INT(sa.calls, 1);
    expect_stop_at_last(ms, &m, (const int64_t[]){13, 14, 15}, 3);
    ht_close_session(ms);
    /* 16: stops as well (a fresh hook, created at 5 again) */
    ms = stop_at_session(&m, sc, 10, -1);
    if (!ms) return;
    expect_stop_at_last(ms, &m, (const int64_t[]){16}, 1);
    ht_close_session(ms);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
}

/* item 81 (second half): a session whose init_fn restores global step 3 (TF's test
 * restores a saver there) with last_step=5 reads 3 and stops after step 5 */
static void test_stop_at_step__last_step_after_restore(void) {
    vg_status st;
    ht_model m = ht_model_make();
    start_at sa = {&m, 3, 0};
    vg_scaffold *sc = scaffold_init_gs(&sa);
    vg_monitored_session *ms = stop_at_session(&m, sc, -1, 5);
    if (!ms) return;
    CHECK_EQ_INT(ht_get_gs(vg_monitored_session_raw_session(ms), &m), 3);
    CHECK_OK(ht_run_train(ms, &m, &st), &st);
    CHECK(!vg_monitored_session_should_stop(ms));
    CHECK_OK(ht_run_train(ms, &m, &st), &st);
    CHECK(vg_monitored_session_should_stop(ms));
    CHECK_EQ_INT(ht_get_gs(vg_monitored_session_raw_session(ms), &m), 5);
    ht_close_session(ms);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
}

/* item 146: num_steps=10 created at 5, the step jumps to 15 (multi-step runs) */
static void test_stop_at_step__multiple_steps(void) {
    vg_status st;
    ht_model m = ht_model_make();
    start_at sa = {&m, 5, 0};
    vg_scaffold *sc = scaffold_init_gs(&sa);
    vg_monitored_session *ms = stop_at_session(&m, sc, 10, -1);
    if (!ms) return;
    expect_stop_at_last(ms, &m, (const int64_t[]){15}, 1);
    ht_close_session(ms);
    /* the train op: 5 -> 15 in ten runs, the tenth stops */
    ms = stop_at_session(&m, sc, 10, -1);
    if (!ms) return;
    int runs = 0;
    vg_code rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms) && runs < 50) {
        rc = ht_run_train(ms, &m, &st);
        runs++;
    }
    CHECK_EQ_INT(runs, 10);
    CHECK_EQ_INT(ht_get_gs(vg_monitored_session_raw_session(ms), &m), 15);
    vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
}

/* ------------------------------------------------------------------------ */
/* LoggingTensorHook: lines captured through the options' sink */

typedef struct sink {
    int n;
    char last[2048];
    char all[16384];
} sink;
static void sink_fn(void *p, const char *line) {
    sink *s = p;
    s->n++;
    snprintf(s->last, sizeof s->last, "%s", line);
    strncat(s->all, line, sizeof s->all - strlen(s->all) - 2);
    strncat(s->all, "\n", sizeof s->all - strlen(s->all) - 1);
}

/* LoggingTensorHook options logging the n tensors ts (named names; NULL: the tensors'
 * names), the rest zero. */
static vg_logging_tensor_options logging_options(const vg_output *ts, const char *const *names, int n) {
    vg_logging_tensor_options o = {0};
    o.tensors = ts;
    o.names = names;
    o.ntensors = n;
    return o;
}

/* A LoggingTensorHook of options o (completed with sink_fn writing into s). */
static vg_hook logging_hook(vg_logging_tensor_options *o, sink *s) {
    vg_status st;
    vg_hook h;
    o->sink = sink_fn;
    o->sink_payload = s;
    CHECK_OK(vg_logging_tensor_hook(o, &h, &st), &st);
    return h;
}

typedef struct log_graph {
    vg_graph *g;
    vg_output foo, bar, train;
} log_graph;
static log_graph log_graph_make(void) {
    log_graph l;
    l.g = vg_graph_new();
    l.foo = vg_const_f32(l.g, 42.0f, "foo");
    l.bar = vg_const_f32(l.g, 43.0f, "bar");
    l.train = vg_const_i32(l.g, 3, "train");
    return l;
}
static vg_code run_fetch(vg_monitored_session *ms, vg_output f, vg_status *st) {
    vg_run_args a = {0};
    vg_tensor *out[1] = {NULL};
    a.fetches = &f;
    a.nfetches = 1;
    vg_code rc = vg_monitored_session_run(ms, &a, out, NULL, st);
    vg_tensor_free(out[0]);
    return rc;
}

/* item 167 */
static void test_logging_tensor__bad_args(void) {
    vg_status st;
    log_graph l = log_graph_make();
    vg_hook h;
    vg_logging_tensor_options o = logging_options(&l.foo, NULL, 1);
    o.every_n_iter = 0; /* TF's every_n_iter=0 fails as invalid; in vigil 0 is None: no frequency */
    EXPECT_CODE_MSG(vg_logging_tensor_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT, "xactly one of");
    o.every_n_iter = -10;
    EXPECT_CODE_MSG(vg_logging_tensor_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT, "nvalid every_n_iter");
    o.every_n_iter = 10;
    o.every_n_secs = 1.0;
    EXPECT_CODE_MSG(vg_logging_tensor_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT, "xactly one of");
    o.every_n_iter = 0;
    o.every_n_secs = 0;
    EXPECT_CODE_MSG(vg_logging_tensor_hook(&o, &h, &st), &st, VG_INVALID_ARGUMENT, "xactly one of");
    CHECK(h.payload == NULL);
    o.at_end = true; /* at_end alone is valid */
    CHECK_OK(vg_logging_tensor_hook(&o, &h, &st), &st);
    vg_hook_free(&h);
    vg_graph_free(l.g);
}

/* item 168: at_end only */
static void test_logging_tensor__print_at_end_only(void) {
    vg_status st;
    log_graph l = log_graph_make();
    sink s = {0};
    vg_logging_tensor_options o = logging_options(&l.foo, NULL, 1);
    o.at_end = true;
    vg_hook h = logging_hook(&o, &s);
    vg_monitored_session *ms = ht_singular(l.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    for (int i = 0; i < 3; i++) CHECK_OK(run_fetch(ms, l.train, &st), &st);
    CHECK_EQ_INT(s.n, 0);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    CHECK_EQ_INT(s.n, 1);
    CHECK_STR_CONTAINS(s.last, "foo:0 = 42");
    CHECK(strstr(s.last, "sec") == NULL);
    ht_free_session_graph(ms, l.g);
}

/* Runs TF's _validate_print_every_n_steps on a session holding hook h. */
static void validate_every_n_steps(vg_monitored_session *ms, log_graph *l, sink *s, bool at_end) {
    vg_status st;
    s->n = 0;
    CHECK_OK(run_fetch(ms, l->train, &st), &st);
    CHECK_EQ_INT(s->n, 1);
    CHECK_STR_CONTAINS(s->last, "foo:0");
    for (int k = 0; k < 3; k++) {
        s->n = 0;
        for (int i = 0; i < 9; i++) CHECK_OK(run_fetch(ms, l->train, &st), &st);
        CHECK_EQ_INT(s->n, 0);
        CHECK_OK(run_fetch(ms, l->train, &st), &st);
        CHECK_EQ_INT(s->n, 1);
        CHECK_STR_CONTAINS(s->last, "foo:0 = 42");
    }
    s->n = 0;
    CHECK_OK(run_fetch(ms, l->train, &st), &st);
    CHECK_EQ_INT(s->n, 0);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    CHECK_EQ_INT(s->n, at_end ? 1 : 0);
    if (at_end) CHECK_STR_CONTAINS(s->last, "foo:0 = 42");
}

/* item 169: every_n_iter=10 logs at runs 1, 11, 21, 31; end() logs only with at_end; a
 * second session re-using the hook starts counting again (begin() resets). */
static void test_logging_tensor__print_every_n_steps(void) {
    vg_status st;
    for (int at_end = 0; at_end < 2; at_end++) {
        log_graph l = log_graph_make();
        sink s = {0};
        vg_logging_tensor_options o = logging_options(&l.foo, NULL, 1);
        o.every_n_iter = 10;
        o.at_end = at_end;
        vg_hook h = logging_hook(&o, &s);
        vg_hook borrowed = h;
        borrowed.destroy = NULL; /* the first session only borrows it */
        vg_monitored_session *ms = ht_singular(l.g, NULL, NULL, &borrowed, 1, &st);
        if (!ms) return;
        validate_every_n_steps(ms, &l, &s, at_end);
        vg_monitored_session_free(ms);
        ms = ht_singular(l.g, NULL, NULL, &h, 1, &st);
        if (!ms) return;
        validate_every_n_steps(ms, &l, &s, at_end); /* proper reset */
        ht_free_session_graph(ms, l.g);
    }
}

/* item 170: every_n_iter=1: the first line has no elapsed-time part, the second has */
static void test_logging_tensor__print_first_step(void) {
    vg_status st;
    log_graph l = log_graph_make();
    sink s = {0};
    vg_output ts[2] = {l.foo, l.bar};
    const char *names[2] = {"foo", "bar"};
    vg_logging_tensor_options o = logging_options(ts, names, 2);
    o.every_n_iter = 1;
    vg_hook h = logging_hook(&o, &s);
    vg_monitored_session *ms = ht_singular(l.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(run_fetch(ms, l.train, &st), &st);
    CHECK_EQ_INT(s.n, 1);
    CHECK_STR_CONTAINS(s.last, "foo = 42");
    CHECK_STR_CONTAINS(s.last, "bar = 43");
    CHECK(strstr(s.last, "sec") == NULL);
    CHECK_OK(run_fetch(ms, l.train, &st), &st);
    CHECK_EQ_INT(s.n, 2);
    CHECK_STR_CONTAINS(s.last, " sec)");
    ht_close_session_graph(ms, l.g);
}

/* item 171: every_n_secs=1.0 with a mocked clock (with and without at_end) */
static void test_logging_tensor__print_every_n_secs(void) {
    vg_status st;
    for (int at_end = 0; at_end < 2; at_end++) {
        ht_clock_mock(1484695987.209386);
        log_graph l = log_graph_make();
        sink s = {0};
        vg_logging_tensor_options o = logging_options(&l.foo, NULL, 1);
        o.every_n_secs = 1.0;
        o.at_end = at_end;
        vg_hook h = logging_hook(&o, &s);
        vg_monitored_session *ms = ht_singular(l.g, NULL, NULL, &h, 1, &st);
        if (!ms) return;
        CHECK_OK(run_fetch(ms, l.train, &st), &st);
        CHECK_EQ_INT(s.n, 1);
        CHECK_STR_CONTAINS(s.last, "foo:0");
        CHECK_OK(run_fetch(ms, l.train, &st), &st);
        CHECK_EQ_INT(s.n, 1);
        ht_now_value += 1.0;
        CHECK_OK(run_fetch(ms, l.train, &st), &st);
        CHECK_EQ_INT(s.n, 2);
        CHECK_STR_CONTAINS(s.last, "foo:0 = 42 (1.000 sec)");
        CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
        CHECK_EQ_INT(s.n, at_end ? 3 : 2);
        if (at_end) CHECK_STR_CONTAINS(s.last, "foo:0 = 42 (0.000 sec)"); /* the timer is updated */
        ht_free_session_graph(ms, l.g);
        ht_clock_restore();
    }
}

static void qqq_formatter(void *p, const char *const *names, vg_tensor *const *values, int n, char *buf,
                          size_t len) {
    (void)p;
    CHECK_EQ_INT(n, 1);
    CHECK(!strcmp(names[0], "foo"));
    snprintf(buf, len, "qqq=%.1f", vg_tensor_scalar(values[0]));
}

/* item 172: the formatter's output is the whole line */
static void test_logging_tensor__print_formatter(void) {
    vg_status st;
    log_graph l = log_graph_make();
    sink s = {0};
    const char *names[1] = {"foo"};
    vg_logging_tensor_options o = logging_options(&l.foo, names, 1);
    o.every_n_iter = 10;
    o.formatter = qqq_formatter;
    vg_hook h = logging_hook(&o, &s);
    vg_monitored_session *ms = ht_singular(l.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(run_fetch(ms, l.train, &st), &st);
    CHECK_EQ_INT(s.n, 1);
    CHECK(!strcmp(s.last, "qqq=42.0"));
    ht_close_session_graph(ms, l.g);
}

/* ------------------------------------------------------------------------ */
/* NanTensorHook */

typedef struct end_counter {
    int end;
} end_counter;
static vg_code ec_end(void *p, vg_session *s, vg_status *st) {
    ((end_counter *)p)->end++;
    return VG_OK;
}

static vg_code run_loss(vg_monitored_session *ms, vg_output loss, float value, vg_status *st) {
    vg_tensor *v = vg_tensor_new_scalar_f32(value, NULL), *out[1] = {NULL};
    vg_run_args a = {0};
    vg_output y = vg_graph_output_by_name(vg_monitored_session_graph(ms), "y", st);
    a.fetches = &y;
    a.nfetches = 1;
    a.feeds = &loss;
    a.feed_values = &v;
    a.nfeeds = 1;
    vg_code rc = vg_monitored_session_run(ms, &a, out, NULL, st);
    vg_tensor_free(out[0]);
    vg_tensor_free(v);
    return rc;
}

/* items 173, 174, 175 */
static void test_nan_tensor__fail_and_stop(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output loss = vg_placeholder(g, VG_FLOAT, NULL, 0, "loss");
    vg_add(g, loss, vg_const_f32(g, 1.0f, NULL), "y");
    /* fail_on_nan_loss = true */
    end_counter ec = {0};
    vg_hook hooks[2];
    CHECK_OK(vg_nan_tensor_hook(loss, true, &hooks[0], &st), &st);
    vg_hook e = {"end", NULL, NULL, NULL, NULL, ec_end, NULL, &ec};
    hooks[1] = e;
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, hooks, 2, &st);
    if (!ms) return;
    ht_log_capture();
    CHECK_OK(run_loss(ms, loss, 1.5f, &st), &st); /* 173 */
    CHECK(!vg_monitored_session_should_stop(ms));
    CHECK_EQ_INT(ht_log_warnings, 0);
    vg_code rc = run_loss(ms, loss, NAN, &st);  /* 174 */
    CHECK_EQ_INT(rc, VG_FAILED_PRECONDITION); /* NanLossDuringTrainingError is a RuntimeError */
    CHECK(!strcmp(st.msg, "NaN loss during training."));
    CHECK_STR_CONTAINS(ht_log_buf, "Model diverged with loss = NaN.");
    ht_log_release();
    /* the `with` block propagates it and does not call the hooks' end() */
    CHECK_CODE(vg_monitored_session_end(ms, rc, &st), VG_FAILED_PRECONDITION);
    CHECK(!strcmp(st.msg, "NaN loss during training."));
    CHECK_EQ_INT(ec.end, 0);
    CHECK(vg_monitored_session_should_stop(ms));
    vg_monitored_session_free(ms);
    /* 175: fail_on_nan_loss = false: the run succeeds and a stop is requested */
    CHECK_OK(vg_nan_tensor_hook(loss, false, &hooks[0], &st), &st);
    hooks[1] = e;
    ms = ht_singular(g, NULL, NULL, hooks, 2, &st);
    if (!ms) return;
    CHECK_OK(run_loss(ms, loss, 2.0f, &st), &st);
    CHECK(!vg_monitored_session_should_stop(ms));
    ht_log_capture();
    CHECK_OK(run_loss(ms, loss, NAN, &st), &st);
    CHECK(vg_monitored_session_should_stop(ms));
    CHECK_EQ_INT(ht_log_warnings, 1);
    ht_log_release();
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    CHECK_EQ_INT(ec.end, 1);
    vg_monitored_session_free(ms);
    /* a loss tensor is required */
    vg_output none = {NULL, 0};
    CHECK_CODE(vg_nan_tensor_hook(none, true, &hooks[0], &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* ------------------------------------------------------------------------ */
/* GlobalStepWaiterHook */

/* item 182: wait_until_step=0 never waits (also not for a step that stays 0) */
static void test_global_step_waiter__not_wait_for_step_zero(void) {
    vg_status st;
    ht_model m = ht_model_make();
    vg_hook h;
    CHECK_OK(vg_global_step_waiter_hook(0, &h, &st), &st);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    double t0 = ht_wall();
    CHECK_OK(ht_run_nothing(ms, &st), &st);
    CHECK(ht_wall() - t0 < 0.4); /* no 0.5 s poll */
    ht_close_session(ms);
    /* no global step -> begin() fails */
    vg_graph *g = vg_graph_new();
    vg_const_f32(g, 1.0f, "c");
    CHECK_OK(vg_global_step_waiter_hook(10, &h, &st), &st);
    ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = &h, .nhooks = 1}, &st);
    CHECK(ms == NULL);
    CHECK_STR_CONTAINS(st.msg, "Global step should be created to use GlobalStepWaiterHook.");
    vg_graph_free(g);
    vg_graph_free(m.g);
}

typedef struct stepper {
    ht_model *m;
    vg_session *raw;
    double t_500, t_1100;
} stepper;
static void *stepper_main(void *p) {
    stepper *s = p;
    ht_sleep(0.2);
    ht_set_gs(s->raw, s->m, 500);
    s->t_500 = ht_wall();
    ht_sleep(0.6);
    ht_set_gs(s->raw, s->m, 1100);
    s->t_1100 = ht_wall();
    return NULL;
}

/* item 183: wait_until_step=1000 blocks before_run while the step is 0 and 500 and lets
 * the run through once another thread has set it to 1100 */
static void test_global_step_waiter__wait_for_step(void) {
    vg_status st;
    ht_model m = ht_model_make();
    vg_hook h;
    CHECK_OK(vg_global_step_waiter_hook(1000, &h, &st), &st);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    stepper s = {&m, vg_monitored_session_raw_session(ms), 0, 0};
    pthread_t th;
    double start = ht_wall();
    CHECK(pthread_create(&th, NULL, stepper_main, &s) == 0);
    vg_run_args a = {0};
    vg_tensor *out[1] = {NULL};
    a.fetches = &m.gs;
    a.nfetches = 1;
    CHECK_OK(vg_monitored_session_run(ms, &a, out, NULL, &st), &st);
    double done = ht_wall();
    pthread_join(th, NULL);
    CHECK(out[0] && *(const int64_t *)vg_tensor_data(out[0]) == 1100); /* ran after 1100 only */
    CHECK(done - start >= 0.75); /* blocked through 0 (0.2 s) and 500 (0.6 s) */
    CHECK(s.t_500 > 0 && s.t_1100 > 0);
    vg_tensor_free(out[0]);
    /* started: the next run does not wait */
    double t0 = ht_wall();
    CHECK_OK(ht_run_nothing(ms, &st), &st);
    CHECK(ht_wall() - t0 < 0.4);
    ht_close_session_graph(ms, m.g);
}

/* ------------------------------------------------------------------------ */
/* FinalOpsHook */

/* items 184, 185 */
static void test_final_ops__scalar_and_tensor(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output four = vg_const_i32(g, 4, "four");
    float vals[6] = {1, 2, 3, 4, 5, 6};
    int64_t dims[2] = {2, 3};
    vg_output vec = vg_const_array(g, VG_FLOAT, dims, 2, vals, "vec");
    vg_output ops[2] = {four, vec};
    vg_hook h;
    CHECK_OK(vg_final_ops_hook(&(vg_final_ops_options){.final_ops = ops, .nfinal_ops = 2}, &h, &st), &st);
    vg_hook keep = h; /* the payload stays valid until the session is freed */
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    int n = -1;
    CHECK(vg_final_ops_hook_values(&keep, &n) == NULL); /* None until end() */
    CHECK_EQ_INT(n, 0);
    CHECK_OK(run_fetch(ms, four, &st), &st);
    CHECK(vg_final_ops_hook_values(&keep, &n) == NULL);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    vg_tensor *const *v = vg_final_ops_hook_values(&keep, &n);
    CHECK_EQ_INT(n, 2);
    if (v && n == 2) {
        CHECK_EQ_INT(vg_tensor_dtype(v[0]), VG_INT32);
        CHECK_EQ_INT(*(const int32_t *)vg_tensor_data(v[0]), 4); /* 184 */
        CHECK_EQ_INT(vg_tensor_ndims(v[1]), 2);                    /* 185 */
        CHECK_EQ_INT(vg_tensor_dim(v[1], 0), 2);
        CHECK_EQ_INT(vg_tensor_dim(v[1], 1), 3);
        CHECK(!memcmp(vg_tensor_data(v[1]), vals, sizeof vals));
    }
    ht_free_session_graph(ms, g);
}

/* item 186: final ops with a feed dict */
static void test_final_ops__with_feed_dict(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = vg_const_i32(g, 3, "a");
    vg_output b = vg_placeholder(g, VG_INT32, NULL, 0, "b");
    vg_output c = vg_add(g, a, b, "c");
    vg_output ops[3] = {a, b, c};
    vg_tensor *four = vg_tensor_new_scalar_i32(4, NULL);
    vg_hook h;
    CHECK_OK(
        vg_final_ops_hook(
            &(vg_final_ops_options){.final_ops = ops, .nfinal_ops = 3, .feeds = &b, .feed_values = &four, .nfeeds = 1},
            &h, &st),
        &st);
    vg_tensor_free(four); /* the hook keeps its own reference */
    vg_hook keep = h;
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    int n;
    vg_tensor *const *v = vg_final_ops_hook_values(&keep, &n);
    CHECK_EQ_INT(n, 3);
    if (v && n == 3) {
        CHECK_EQ_INT(*(const int32_t *)vg_tensor_data(v[0]), 3);
        CHECK_EQ_INT(*(const int32_t *)vg_tensor_data(v[1]), 4);
        CHECK_EQ_INT(*(const int32_t *)vg_tensor_data(v[2]), 7);
    }
    ht_free_session_graph(ms, g);
}

/* item 187: a final op reading an exhausted input: end() fails with OUT_OF_RANGE and
 * logs a warning about the dependency on an input source */
static void test_final_ops__triggers_out_of_range(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_dtype dt = VG_FLOAT;
    vg_output q = vg_fifo_queue(g, &dt, NULL, 1, 4, "fifo");
    vg_op *close = vg_queue_close(g, q, false, "close");
    vg_op *deq = vg_queue_dequeue(g, q, "dequeue");
    vg_output ops[1] = {vg_out(deq, 0)};
    end_counter ec = {0};
    vg_hook hooks[2];
    CHECK_OK(vg_final_ops_hook(&(vg_final_ops_options){.final_ops = ops, .nfinal_ops = 1}, &hooks[0], &st), &st);
    vg_hook e = {"end", NULL, NULL, NULL, NULL, ec_end, NULL, &ec};
    hooks[1] = e;
    vg_hook keep = hooks[0];
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, hooks, 2, &st);
    if (!ms) return;
    CHECK_OK(vg_session_run_targets(vg_monitored_session_raw_session(ms), &close, 1, &st), &st);
    ht_log_capture();
    CHECK_CODE(vg_monitored_session_end(ms, VG_OK, &st), VG_OUT_OF_RANGE);
    fprintf(stderr, "  (final op error: %s)\n", st.msg);
    CHECK_STR_CONTAINS(ht_log_buf, "dependency back to some input source");
    ht_log_release();
    CHECK_EQ_INT(ec.end, 0); /* later hooks' end() are skipped */
    CHECK(vg_monitored_session_should_stop(ms)); /* but the session is closed */
    int n;
    CHECK(vg_final_ops_hook_values(&keep, &n) == NULL);
    ht_free_session_graph(ms, g);
}

/* ------------------------------------------------------------------------ */
/* FeedFnHook */

typedef struct feeder {
    vg_output x;
    vg_tensor *one;
    int calls;
} feeder;
static vg_code feed_x(void *p, const vg_output **feeds, vg_tensor *const **values, int *n, vg_status *st) {
    feeder *f = p;
    f->calls++;
    *feeds = &f->x;
    *values = &f->one;
    *n = 1;
    return VG_OK;
}

/* item 188 */
static void test_feed_fn__feeding_placeholder(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    feeder f = {vg_placeholder(g, VG_FLOAT, NULL, 0, "x"), vg_tensor_new_scalar_f32(1.0f, NULL), 0};
    vg_output y = vg_add(g, f.x, vg_const_f32(g, 1.0f, NULL), "y");
    vg_hook h;
    CHECK_CODE(vg_feed_fn_hook(NULL, NULL, &h, &st), VG_INVALID_ARGUMENT);
    CHECK_OK(vg_feed_fn_hook(feed_x, &f, &h, &st), &st);
    vg_monitored_session *ms = ht_singular(g, NULL, NULL, &h, 1, &st);
    if (!ms) return;
    for (int i = 0; i < 2; i++) {
        vg_run_args a = {0};
        vg_tensor *out[1] = {NULL};
        a.fetches = &y;
        a.nfetches = 1;
        CHECK_OK(vg_monitored_session_run(ms, &a, out, NULL, &st), &st);
        CHECK(out[0] && vg_tensor_scalar(out[0]) == 2.0);
        vg_tensor_free(out[0]);
    }
    CHECK_EQ_INT(f.calls, 2); /* feed_fn is called every step */
    ht_close_session(ms);
    vg_tensor_free(f.one);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_stop_at_step__bad_args);
    RUN_TEST(test_stop_at_step__last_step);
    RUN_TEST(test_stop_at_step__num_steps);
    RUN_TEST(test_stop_at_step__last_step_after_restore);
    RUN_TEST(test_stop_at_step__multiple_steps);
    RUN_TEST(test_logging_tensor__bad_args);
    RUN_TEST(test_logging_tensor__print_at_end_only);
    RUN_TEST(test_logging_tensor__print_every_n_steps);
    RUN_TEST(test_logging_tensor__print_first_step);
    RUN_TEST(test_logging_tensor__print_every_n_secs);
    RUN_TEST(test_logging_tensor__print_formatter);
    RUN_TEST(test_nan_tensor__fail_and_stop);
    RUN_TEST(test_global_step_waiter__not_wait_for_step_zero);
    RUN_TEST(test_global_step_waiter__wait_for_step);
    RUN_TEST(test_final_ops__scalar_and_tensor);
    RUN_TEST(test_final_ops__with_feed_dict);
    RUN_TEST(test_final_ops__triggers_out_of_range);
    RUN_TEST(test_feed_fn__feeding_placeholder);
    TEST_MAIN_END();
}
