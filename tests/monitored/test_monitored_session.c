/* test_monitored_session.c - MonitoredSession / SingularMonitoredSession against the
 * checklist of docs/tf1-semantics.md. Each case names the items it covers.
 * Fault injection: the TestRaise op fails with the code in `raise_code` on chosen runs. */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"
#include "kernels/kernel.h"
#include "vigil/hooks.h"
#include "vigil/vigil.h"
#include "vigil/monitored.h"
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

/* ---- fault-injection op ---- */
static atomic_int raise_at_run = -1; /* run index (counted from 0) that fails */
static atomic_int raise_runs;
static vg_code raise_code = VG_ABORTED;

static vg_code shape_f(vg_op *op, vg_status *st) {
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_FLOAT, vg_shape_make(NULL, 0));
    return VG_OK;
}
static vg_code k_raise(vg__kctx *ctx) {
    int n = atomic_fetch_add(&raise_runs, 1);
    if (n == atomic_load(&raise_at_run)) return vg_status_set(vg__kctx_status(ctx), raise_code, "injected failure");
    vg_tensor *t;
    if (vg__kctx_alloc_output(ctx, 0, VG_FLOAT, NULL, 0, &t)) return vg__kctx_status(ctx)->code;
    *(float *)vg_tensor_data(t) = 1.0f;
    return VG_OK;
}
const vg__op_def vg__ops_test[] = {
    {"TestRaise", 0, -1, VG__OP_STATEFUL, 0, shape_f, k_raise, NULL},
    {0},
};

/* ---- a recording hook ---- */
typedef struct rec_hook {
    char log[4096];
    int begin, after_create, before, after, end;
    vg_coord *coord;
    vg_session *last_sess;
    /* behaviour */
    vg_output fetch;                 /* fetched every run if set */
    double last_value;
    vg_output feed;
    vg_tensor *feed_val;
    bool stop_in_after, stop_in_before;
    int fail_before_at, fail_after_at; /* call number (1-based) that fails, 0 never */
    vg_code fail_code;
    const vg_run_options *opts;
    const vg_run_options *seen_opts;
    const vg_run_metadata *seen_md;
    bool add_op_in_begin;
    bool graph_finalized_in_create;
    int nresults_seen;
    const char *tag;
    char *shared_log; /* optional global order log */
} rec_hook;

static char order_log[4096];
static void logc(rec_hook *h, const char *what) {
    strncat(h->log, what, sizeof h->log - strlen(h->log) - 1);
    char b[64];
    snprintf(b, sizeof b, "%s.%s ", h->tag ? h->tag : "h", what);
    strncat(order_log, b, sizeof order_log - strlen(order_log) - 1);
}

static vg_code rh_begin(void *p, vg_graph *g, vg_status *st) {
    rec_hook *h = p;
    h->begin++;
    logc(h, "B");
    if (h->add_op_in_begin && !vg_const_f32(g, 1.0f, "added_in_begin").op)
        return vg_status_set(st, VG_INTERNAL, "could not add op in begin");
    return VG_OK;
}
static vg_code rh_create(void *p, vg_session *s, vg_coord *c, vg_status *st) {
    rec_hook *h = p;
    h->after_create++;
    h->coord = c;
    h->last_sess = s;
    h->graph_finalized_in_create = vg_graph_finalized(vg_session_graph(s));
    logc(h, "C");
    return VG_OK;
}
static vg_code rh_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    rec_hook *h = p;
    h->before++;
    logc(h, "b");
    if (h->fail_before_at && h->before == h->fail_before_at)
        return vg_status_set(st, h->fail_code, "hook %s failed in before_run", h->tag ? h->tag : "h");
    if (h->stop_in_before) vg_run_context_request_stop(ctx);
    if (h->fetch.op) { a->fetches = &h->fetch; a->nfetches = 1; }
    if (h->feed.op) { a->feeds = &h->feed; a->feed_values = &h->feed_val; a->nfeeds = 1; }
    a->options = h->opts;
    CHECK(vg_run_context_session(ctx) != NULL);
    return VG_OK;
}
static vg_code rh_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    rec_hook *h = p;
    h->after++;
    logc(h, "a");
    h->nresults_seen = v->nresults;
    h->seen_opts = v->options;
    h->seen_md = v->run_metadata;
    if (v->nresults) h->last_value = vg_tensor_scalar(v->results[0]);
    if (h->fail_after_at && h->after == h->fail_after_at)
        return vg_status_set(st, h->fail_code, "hook failed in after_run");
    if (h->stop_in_after) vg_run_context_request_stop(ctx);
    return VG_OK;
}
static vg_code rh_end(void *p, vg_session *s, vg_status *st) {
    rec_hook *h = p;
    h->end++;
    h->last_sess = s;
    logc(h, "E");
    return VG_OK;
}
static vg_hook hook_of(rec_hook *h) {
    vg_hook k = {"rec", rh_begin, rh_create, rh_before, rh_after, rh_end, NULL, h};
    return k;
}
/* A MonitoredSession on g with the one hook *hk (default creator). */
static vg_monitored_session *monitored_with_hook(vg_graph *g, vg_hook *hk, vg_status *st) {
    return vg_monitored_session_new(g, &(vg_monitored_options){.hooks = hk, .nhooks = 1}, st);
}
/* hook_of(h) after h->fail_before_at = at, h->fail_code = code: before_run fails with
 * code in the at-th run. */
static vg_hook failing_hook_of(rec_hook *h, int at, vg_code code) {
    h->fail_before_at = at;
    h->fail_code = code;
    return hook_of(h);
}

/* ---- a model: global step, v (0), train op gs += 1 ---- */
typedef struct model {
    vg_graph *g;
    vg_output gs, v, inc, x, y;
    vg_op *train;
} model;

static model make_model(void) {
    model m;
    m.g = vg_graph_new();
    m.gs = vg_get_or_create_global_step(m.g);
    vg_variable v = vg_get_variable(m.g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), VG_VAR_TRAINABLE);
    m.v = v.ref;
    m.inc = vg_assign_add(m.g, m.gs, vg_const_i64(m.g, 1, NULL), "train");
    m.train = m.inc.op;
    m.x = vg_placeholder(m.g, VG_FLOAT, NULL, 0, "x");
    m.y = vg_add(m.g, m.x, vg_const_f32(m.g, 1.0f, NULL), "y");
    return m;
}

static int64_t run_train(vg_monitored_session *ms, vg_status *st, vg_code *rc) {
    vg_run_args a = {0};
    vg_output f[1];
    f[0] = vg_get_global_step(vg_monitored_session_graph(ms));
    vg_tensor *out[1];
    a.fetches = f;
    a.nfetches = 1;
    vg_op *t = vg_graph_op_by_name(vg_monitored_session_graph(ms), "train");
    a.targets = &t;
    a.ntargets = 1;
    *rc = vg_monitored_session_run(ms, &a, out, NULL, st);
    int64_t v = *rc == VG_OK ? (int64_t)vg_tensor_scalar(out[0]) : -1;
    vg_tensor_free(out[0]);
    return v;
}

static double run_fetch(vg_monitored_session *ms, vg_output f, vg_status *st, vg_code *rc) {
    vg_run_args a = {0};
    vg_tensor *out[1];
    a.fetches = &f;
    a.nfetches = 1;
    *rc = vg_monitored_session_run(ms, &a, out, NULL, st);
    double v = *rc == VG_OK ? vg_tensor_scalar(out[0]) : -1;
    vg_tensor_free(out[0]);
    return v;
}

/* items 41, 76, 44, 45, 46, 48, 49, 60, 7, 1 */
static void test_monitored__defaults_and_order(void) {
    vg_status st;
    model m = make_model();
    rec_hook h = {0};
    h.add_op_in_begin = true;
    h.tag = "h";
    vg_hook hk = hook_of(&h);
    vg_hook empty = {0};
    vg_hook hooks[2] = {hk, empty};
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = hooks, .nhooks = 2}, &st);
    CHECK(ms != NULL);
    if (!ms) { fprintf(stderr, "%s\n", st.msg); return; }
    CHECK(strcmp(h.log, "BC") == 0);
    CHECK(h.graph_finalized_in_create);   /* 44: begin before finalize, after_create after */
    CHECK(vg_graph_finalized(m.g));       /* 45 */
    CHECK(vg_const_f32(m.g, 1, "late").op == NULL);
    CHECK(vg_monitored_session_graph(ms) == m.g); /* 48 */
    vg_code rc;
    CHECK_NEAR(run_fetch(ms, m.v, &st, &rc), 0.0, 0); /* 41 */
    CHECK_EQ_INT(rc, VG_OK);
    CHECK_EQ_INT(h.before, 1);
    CHECK_EQ_INT(h.after, 1);
    CHECK_EQ_INT(h.begin, 1);
    CHECK_EQ_INT(h.after_create, 1);
    CHECK(!vg_monitored_session_should_stop(ms));
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    CHECK_EQ_INT(h.end, 1);
    CHECK(vg_monitored_session_should_stop(ms));      /* 49 */
    CHECK(vg_monitored_session_graph(ms) == NULL);    /* 60 */
    vg_monitored_session_free(ms);
    CHECK(!vg_graph_finalized(m.g));                  /* 46 */
    vg_graph_free(m.g);
}

/* items 47 */
static void test_monitored__finalized_graph_stays_finalized(void) {
    vg_status st;
    model m = make_model();
    vg_scaffold *sc = vg_scaffold_new(NULL);
    CHECK_OK(vg_scaffold_finalize(sc, m.g, &st), &st);
    vg_singular_options o = {0};
    o.scaffold = sc;
    vg_monitored_session *ms = vg_singular_monitored_session_new(m.g, &o, &st);
    CHECK(ms != NULL);
    ht_close_session(ms);
    CHECK(vg_graph_finalized(m.g));
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
}

/* items 8, 9, 11, 12, 13, 14, 15, 68 (fetch in the same step) */
static void test_monitored__hooks_fetch_and_feed(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_FLOAT, NULL, 0, "a");
    vg_output b = vg_placeholder(g, VG_FLOAT, NULL, 0, "b");
    vg_output c = vg_placeholder(g, VG_FLOAT, NULL, 0, "c");
    vg_output ab = vg_add(g, a, b, "ab");
    vg_output abc = vg_add(g, ab, c, "abc");
    vg_output t5 = vg_const_f32(g, 5.0f, "t5");
    rec_hook h1 = {0}, h2 = {0}, h3 = {0};
    h1.tag = "1"; h2.tag = "2"; h3.tag = "3";
    h1.feed = a; h1.feed_val = vg_tensor_new_scalar_f32(5, NULL);
    h2.feed = b; h2.feed_val = vg_tensor_new_scalar_f32(10, NULL);
    h3.fetch = t5;
    vg_hook hooks[3] = {hook_of(&h1), hook_of(&h2), hook_of(&h3)};
    order_log[0] = 0;
    vg_monitored_session *ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = hooks, .nhooks = 3}, &st);
    CHECK(ms != NULL);
    order_log[0] = 0;
    vg_code rc;
    CHECK_NEAR(run_fetch(ms, ab, &st, &rc), 15.0, 0); /* 12 */
    CHECK(strcmp(order_log, "1.b 2.b 3.b 1.a 2.a 3.a ") == 0); /* 8 */
    CHECK_EQ_INT(h3.nresults_seen, 1);                   /* 11 */
    CHECK_NEAR(h3.last_value, 5.0, 0);
    CHECK_EQ_INT(h1.nresults_seen, 0);                   /* 9 */
    CHECK(h1.seen_md != NULL && h1.seen_opts != NULL);
    /* user feeds c, hooks feed a and b: 5 + 10 + 20 = 35 (13) */
    vg_tensor *cv = vg_tensor_new_scalar_f32(20, NULL);
    vg_run_args ra = {0};
    vg_tensor *out[1];
    ra.fetches = &abc; ra.nfetches = 1; ra.feeds = &c; ra.feed_values = &cv; ra.nfeeds = 1;
    CHECK_OK(vg_monitored_session_run(ms, &ra, out, NULL, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(out[0]), 35.0, 0);
    vg_tensor_free(out[0]);
    CHECK_EQ_INT(ra.nfeeds, 1);
    /* user feeds a too: conflict (15) */
    vg_output fa[1] = {a};
    ra.feeds = fa;
    int before = h1.before;
    CHECK_CODE(vg_monitored_session_run(ms, &ra, out, NULL, &st), VG_FAILED_PRECONDITION); /* TF: RuntimeError */
    CHECK_STR_CONTAINS(st.msg, "Same tensor is fed by a SessionRunHook and user.");
    CHECK_EQ_INT(h1.after, before); /* conflicts are found before running */
    /* two hooks feeding the same tensor (14) */
    h2.feed = a;
    EXPECT_CODE_MSG(run_fetch(ms, ab, &st, &rc) < 0 ? rc : VG_OK, &st, VG_FAILED_PRECONDITION,
                    "Same tensor is fed by two hooks.");
    ht_close_session(ms);
    vg_tensor_free(cv);
    vg_tensor_free(h1.feed_val);
    vg_tensor_free(h2.feed_val);
    vg_graph_free(g);
}

/* items 16, 17, 18, 22, 23 */
static void test_monitored__stop_requests_and_hook_errors(void) {
    vg_status st;
    model m = make_model();
    rec_hook h1 = {0}, h2 = {0};
    h1.tag = "1"; h2.tag = "2";
    h1.stop_in_after = true;
    vg_hook hooks[2] = {hook_of(&h1), hook_of(&h2)};
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = hooks, .nhooks = 2}, &st);
    vg_code rc;
    int64_t step = run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_OK); /* 16: the call still returns its result */
    CHECK_EQ_INT(step, 0);
    CHECK(vg_monitored_session_should_stop(ms));
    int b1 = h1.before;
    run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_FAILED_PRECONDITION); /* 18 */
    CHECK_STR_CONTAINS(st.msg, "Run called even after should_stop requested.");
    CHECK_EQ_INT(h1.before, b1);
    ht_close_session_graph(ms, m.g);

    /* 17: a stop requested in before_run takes effect after the step */
    m = make_model();
    rec_hook h3 = {0};
    h3.stop_in_before = true;
    vg_hook hk = hook_of(&h3);
    ms = monitored_with_hook(m.g, &hk, &st);
    CHECK(!vg_monitored_session_should_stop(ms));
    run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_OK);
    CHECK(vg_monitored_session_should_stop(ms));
    ht_close_session_graph(ms, m.g);

    /* 22: before_run error stops later hooks and the run; 23: after_run error discards
     * the stop request of that step */
    m = make_model();
    rec_hook e1 = {0}, e2 = {0};
    e1.fail_before_at = 2; e1.fail_code = VG_INTERNAL;
    e2.stop_in_after = false;
    vg_hook hooks2[2] = {hook_of(&e1), hook_of(&e2)};
    ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = hooks2, .nhooks = 2}, &st);
    run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_OK);
    int64_t s2 = run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_INTERNAL);
    CHECK_EQ_INT(s2, -1);
    CHECK_EQ_INT(e2.before, 1); /* not called for the failing step */
    CHECK_EQ_INT(e1.after, 1);
    CHECK_EQ_INT(e2.after, 1);
    CHECK(!vg_monitored_session_should_stop(ms)); /* an error does not stop */
    CHECK_EQ_INT(run_train(ms, &st, &rc), 1); /* the failed step did not run */
    /* 23 */
    e1.stop_in_after = true;
    e2.fail_after_at = e2.after + 1;
    e2.fail_code = VG_INTERNAL;
    run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_INTERNAL);
    CHECK(!vg_monitored_session_should_stop(ms));
    ht_close_session_graph(ms, m.g);
}

/* items 19, 21, 83, 84 */
static void test_monitored__merge_run_options(void) {
    vg_status st;
    model m = make_model();
    const char *w1[1] = {"a:0"}, *w2[1] = {"b:0"}, *wc[1] = {"c:0"};
    vg_run_options o1 = {0}, o2 = {0}, oc = {0};
    o1.trace_level = VG_TRACE_FULL; o1.timeout_in_ms = 60000; o1.ndebug_watches = 1; o1.debug_watches = w1;
    o2.trace_level = VG_TRACE_SOFTWARE; o2.timeout_in_ms = 30000; o2.output_partition_graphs = true;
    o2.report_tensor_allocations_upon_oom = true; o2.ndebug_watches = 1; o2.debug_watches = w2;
    rec_hook h1 = {0}, h2 = {0};
    h1.opts = &o1;
    h2.opts = &o2;
    vg_hook hooks[2] = {hook_of(&h1), hook_of(&h2)};
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = hooks, .nhooks = 2}, &st);
    oc.trace_level = VG_TRACE_HARDWARE; oc.timeout_in_ms = 10; oc.ndebug_watches = 1; oc.debug_watches = wc;
    vg_run_args a = {0};
    a.targets = &m.train; a.ntargets = 1; a.options = &oc;
    vg_run_metadata *md = vg_run_metadata_new();
    CHECK_OK(vg_monitored_session_run(ms, &a, NULL, md, &st), &st);
    const vg_run_options *seen = h1.seen_opts;
    CHECK(seen == h2.seen_opts && h1.seen_md == h2.seen_md && h1.seen_md == md); /* 21 */
    CHECK_EQ_INT(seen->trace_level, VG_TRACE_FULL);
    CHECK_EQ_INT(seen->timeout_in_ms, 60000);
    CHECK(seen->output_partition_graphs && seen->report_tensor_allocations_upon_oom);
    CHECK_EQ_INT(seen->ndebug_watches, 3);
    CHECK(!strcmp(seen->debug_watches[0], "c:0") && !strcmp(seen->debug_watches[1], "a:0") &&
          !strcmp(seen->debug_watches[2], "b:0"));
    CHECK_EQ_INT(vg_run_metadata_num_partition_graphs(md), 1); /* 83 */
    CHECK(vg_run_metadata_num_nodes(md) > 0);                  /* full trace recorded */
    vg_run_metadata_free(md);
    ht_close_session_graph(ms, m.g);
}

/* items 50, 51, 53, 54, 55, 58, 59 */
static void test_monitored__end_semantics(void) {
    vg_status st;
    vg_code rc;
    /* OUT_OF_RANGE from before_run: swallowed by end, hooks' end called (51, 53) */
    model m = make_model();
    rec_hook h = {0};
    vg_hook hk = failing_hook_of(&h, 2, VG_OUT_OF_RANGE);
    vg_monitored_session *ms = monitored_with_hook(m.g, &hk, &st);
    rc = VG_OK;
    int steps = 0;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        run_train(ms, &st, &rc);
        steps++;
    }
    CHECK_EQ_INT(steps, 2);
    CHECK_EQ_INT(h.after, 1);
    CHECK_CODE(vg_monitored_session_end(ms, rc, &st), VG_OK);
    CHECK_EQ_INT(h.end, 1);
    CHECK(vg_monitored_session_should_stop(ms));
    /* 59: a second close calls end(NULL) and fails */
    EXPECT_CODE_MSG(vg_monitored_session_close(ms, &st), &st, VG_FAILED_PRECONDITION, "Session is already closed.");
    CHECK_EQ_INT(h.end, 2);
    CHECK(h.last_sess == NULL);
    CHECK_CODE(vg_monitored_session_run(ms, NULL, NULL, NULL, &st), VG_FAILED_PRECONDITION);
    ht_free_session_graph(ms, m.g);

    /* other error (54, 55, 50): end() not called, error returned, closed */
    m = make_model();
    rec_hook h2 = {0};
    hk = failing_hook_of(&h2, 4, VG_INTERNAL);
    ms = monitored_with_hook(m.g, &hk, &st);
    rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) run_train(ms, &st, &rc);
    EXPECT_CODE_MSG(vg_monitored_session_end(ms, rc, &st), &st, VG_INTERNAL, "failed in before_run");
    CHECK_EQ_INT(h2.end, 0);
    CHECK(vg_monitored_session_should_stop(ms));
    ht_free_session_graph(ms, m.g);

    /* 58: close inside the block, then the block's end fails */
    m = make_model();
    ms = vg_monitored_session_new(m.g, &(vg_monitored_options){0}, &st);
    CHECK_OK(vg_monitored_session_close(ms, &st), &st);
    EXPECT_CODE_MSG(vg_monitored_session_end(ms, VG_OK, &st), &st, VG_FAILED_PRECONDITION, "Session is already closed");
    ht_free_session_graph(ms, m.g);
}

/* A creator wrapping the chief creator that fails with ABORTED the first `fail` times. */
typedef struct flaky {
    vg_session_creator inner;
    int fail, calls;
} flaky;
static vg_session *flaky_create(void *p, vg_status *st) {
    flaky *f = p;
    f->calls++;
    if (f->calls <= f->fail) {
        vg_status_set(st, VG_ABORTED, "creator aborted");
        return NULL;
    }
    return f->inner.create_session(f->inner.payload, st);
}
static void flaky_destroy(void *p) {
    flaky *f = p;
    f->inner.destroy(f->inner.payload);
}

/* items 33, 34, 42, 43, 78, 77 */
static void test_monitored__recovery(void) {
    vg_status st;
    vg_code rc;
    model m = make_model();
    flaky f = {ht_creator(m.g, NULL, NULL, NULL, -1, true), 2, 0};
    vg_session_creator c = {flaky_create, flaky_destroy, &f};
    rec_hook h = {0};
    vg_hook hk = failing_hook_of(&h, 4, VG_ABORTED);
    vg_monitored_session *ms =
        vg_monitored_session_new(m.g, &(vg_monitored_options){.creator = c, .hooks = &hk, .nhooks = 1}, &st);
    CHECK(ms != NULL);                 /* 33: creation retried */
    CHECK_EQ_INT(f.calls, 3);
    CHECK_EQ_INT(h.after_create, 1);
    /* 78: steps return 0,1,2; the 4th before_run aborts: a fresh session (no checkpoint) */
    CHECK_EQ_INT(run_train(ms, &st, &rc), 0);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 1);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 2);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 0); /* re-initialised (quirk 27.11) */
    CHECK_EQ_INT(rc, VG_OK);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 1);
    CHECK_EQ_INT(h.begin, 1);          /* 42 */
    CHECK_EQ_INT(h.after_create, 2);   /* 43 */
    CHECK_EQ_INT(f.calls, 4);
    /* 34: sessions aborting in the run itself (TestRaise) */
    ht_close_session_graph(ms, m.g);

    m = make_model();
    vg_output r = vg_const_f32(m.g, 0, NULL);
    {
        vg_op_builder *b = vg_op_builder_new(m.g, "TestRaise", "raise");
        r = vg_out(vg_op_builder_finish(b), 0);
    }
    atomic_store(&raise_runs, 0);
    atomic_store(&raise_at_run, 1);
    raise_code = VG_UNAVAILABLE;
    ms = vg_monitored_session_new(m.g, &(vg_monitored_options){0}, &st);
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(run_fetch(ms, r, &st, &rc), 1.0, 0);
        CHECK_EQ_INT(rc, VG_OK);
    }
    CHECK_EQ_INT(atomic_load(&raise_runs), 4); /* one retried run */
    atomic_store(&raise_at_run, -1);
    ht_close_session_graph(ms, m.g);
}

/* items 73, 75: Singular does not recover */
static void test_monitored__singular_no_recovery(void) {
    vg_status st;
    vg_code rc;
    model m = make_model();
    rec_hook h = {0};
    vg_hook hk = failing_hook_of(&h, 2, VG_ABORTED);
    vg_singular_options o = {0};
    o.hooks = &hk; o.nhooks = 1;
    vg_monitored_session *ms = vg_singular_monitored_session_new(m.g, &o, &st);
    CHECK(vg_monitored_session_raw_session(ms) != NULL); /* 74 */
    run_train(ms, &st, &rc);
    run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_ABORTED);
    CHECK_EQ_INT(h.after_create, 1);
    CHECK_CODE(vg_monitored_session_end(ms, rc, &st), VG_ABORTED);
    CHECK(vg_monitored_session_raw_session(ms) == NULL); /* 74 */
    ht_free_session_graph(ms, m.g);
}

/* coordinator items 27, 29, 32, 36, 37, 40, 56, 57 */
static void thread_fn(vg_coord *c, void *p) {
    atomic_int *alive = p;
    atomic_store(alive, 1);
    while (!vg_coord_should_stop(c)) usleep(1000);
    atomic_store(alive, 0);
}
static void test_monitored__coordinator(void) {
    vg_status st, err;
    vg_code rc;
    /* 36: Aborted reported to the coordinator: run fine, should_stop False, one more session */
    model m = make_model();
    rec_hook h = {0};
    vg_hook hk = hook_of(&h);
    vg_monitored_session *ms = monitored_with_hook(m.g, &hk, &st);
    atomic_int alive = 0;
    vg_coord_start_thread(h.coord, "worker", thread_fn, &alive, &st);
    while (!atomic_load(&alive)) usleep(1000);
    vg_status_set(&err, VG_ABORTED, "side thread aborted");
    vg_coord_request_stop(h.coord, &err);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 0);
    CHECK(!vg_monitored_session_should_stop(ms));
    CHECK_EQ_INT(h.after_create, 2);
    CHECK_EQ_INT(atomic_load(&alive), 0); /* 29: the old coordinator's thread was joined */
    /* 37 / 57: a non-preemption error: should_stop True, end returns it */
    vg_status_set(&err, VG_UNKNOWN, "side thread failed");
    vg_coord_request_stop(h.coord, &err);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 0); /* 56: runs still work */
    CHECK(vg_monitored_session_should_stop(ms));
    CHECK_EQ_INT(h.after_create, 2);
    EXPECT_CODE_MSG(vg_monitored_session_end(ms, VG_OK, &st), &st, VG_UNKNOWN, "side thread failed");
    ht_free_session_graph(ms, m.g);

    /* 40: close with a stored Aborted does not fail (MonitoredSession) */
    m = make_model();
    rec_hook h2 = {0};
    hk = hook_of(&h2);
    ms = monitored_with_hook(m.g, &hk, &st);
    vg_status_set(&err, VG_ABORTED, "x");
    vg_coord_request_stop(h2.coord, &err);
    CHECK_OK(vg_monitored_session_close(ms, &st), &st);
    ht_free_session_graph(ms, m.g);

    /* Singular: a stored error surfaces at end, hooks' end not called (27.8) */
    m = make_model();
    rec_hook h3 = {0};
    hk = hook_of(&h3);
    vg_singular_options o = {0};
    o.hooks = &hk; o.nhooks = 1;
    ms = vg_singular_monitored_session_new(m.g, &o, &st);
    vg_coord_request_stop(h3.coord, NULL);
    CHECK(vg_monitored_session_should_stop(ms)); /* 27 */
    run_train(ms, &st, &rc);
    CHECK_EQ_INT(rc, VG_OK); /* 27.7: a plain coordinator stop does not block run */
    ht_close_session_graph(ms, m.g);
}

/* ---- run_step_fn: items 61, 62, 63, 64, 65, 68, 69, 70, 71, 8(b) of the issue ---- */
typedef struct step_arg {
    vg_output c, v, w;
    double result;
    int calls;
    rec_hook *hook;
    int hook_before_at_request;
} step_arg;

/* The seed's example: v = c + 4 run raw with c = 0.5; since <= 4.5, request stop and
 * return run_with_hooks(w = c + 0.5, c = 0.1). */
static vg_code seed_step(vg_step_context *sc, void *p, vg_status *st) {
    step_arg *a = p;
    a->calls++;
    vg_tensor *half = vg_tensor_new_scalar_f32(0.5f, NULL), *tenth = vg_tensor_new_scalar_f32(0.1f, NULL), *out;
    vg_code rc = vg_session_run(vg_step_context_session(sc), NULL, &a->c, &half, 1, &a->v, &out, 1, NULL, 0, NULL, st);
    if (rc == VG_OK) {
        a->hook_before_at_request = a->hook->before;
        double v = vg_tensor_scalar(out);
        vg_tensor_free(out);
        if (v <= 4.5) {
            vg_run_args ra = {0};
            ra.fetches = &a->w; ra.nfetches = 1; ra.feeds = &a->c; ra.feed_values = &tenth; ra.nfeeds = 1;
            rc = vg_step_context_run_with_hooks(sc, &ra, &out, NULL, st);
            if (rc == VG_OK) {
                a->result = vg_tensor_scalar(out);
                vg_tensor_free(out);
                rc = vg_step_context_request_stop(sc, st);
            }
        }
    }
    vg_tensor_free(half);
    vg_tensor_free(tenth);
    return rc;
}

static vg_code stop_first(vg_step_context *sc, void *p, vg_status *st) {
    step_arg *a = p;
    a->calls++;
    return vg_step_context_request_stop(sc, st);
}

static int abort_left;
static vg_code abort_then_run(vg_step_context *sc, void *p, vg_status *st) {
    step_arg *a = p;
    a->calls++;
    vg_tensor *tenth = vg_tensor_new_scalar_f32(0.1f, NULL), *out = NULL;
    vg_run_args ra = {0};
    ra.fetches = &a->w; ra.nfetches = 1; ra.feeds = &a->c; ra.feed_values = &tenth; ra.nfeeds = 1;
    vg_code rc = vg_step_context_run_with_hooks(sc, &ra, &out, NULL, st);
    if (rc == VG_OK) a->result = vg_tensor_scalar(out);
    vg_tensor_free(out);
    vg_tensor_free(tenth);
    if (rc == VG_OK && abort_left > 0) {
        abort_left--;
        return vg_status_set(st, VG_ABORTED, "step_fn aborted");
    }
    return rc;
}

static void test_monitored__run_step_fn(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    step_arg a = {0};
    a.c = vg_placeholder(g, VG_FLOAT, NULL, 0, "c");
    a.v = vg_add(g, a.c, vg_const_f32(g, 4.0f, NULL), "v");
    a.w = vg_add(g, a.c, vg_const_f32(g, 0.5f, NULL), "w");
    rec_hook h = {0};
    a.hook = &h;
    vg_hook hk = hook_of(&h);
    vg_singular_options o = {0};
    o.hooks = &hk; o.nhooks = 1;
    vg_monitored_session *ms = vg_singular_monitored_session_new(g, &o, &st);
    vg_code rc = VG_OK;
    int iters = 0;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        rc = vg_monitored_session_run_step_fn(ms, seed_step, &a, &st);
        iters++;
    }
    CHECK_EQ_INT(rc, VG_STOP_ITERATION);               /* 63 */
    CHECK_STR_CONTAINS(st.msg, "step_fn has requested the iterations to stop.");
    CHECK_EQ_INT(iters, 1);                           /* 65 */
    CHECK_NEAR(a.result, 0.6, 1e-6);                  /* 61, issue 4 item 8(b) */
    CHECK_EQ_INT(a.hook_before_at_request, 0);        /* 68: raw run invisible to hooks */
    CHECK_EQ_INT(h.before, 1);                        /* hooks saw run_with_hooks */
    CHECK_EQ_INT(h.after, 1);
    CHECK(!vg_monitored_session_should_stop(ms));     /* 64 */
    CHECK_OK(vg_monitored_session_end(ms, rc, &st), &st); /* 65: swallowed */
    CHECK_EQ_INT(h.end, 1);
    vg_monitored_session_free(ms);
    /* 69: stop requested before run_with_hooks: no hook call */
    rec_hook h2 = {0};
    hk = hook_of(&h2);
    o.hooks = &hk;
    ms = vg_singular_monitored_session_new(g, &o, &st);
    rc = vg_monitored_session_run_step_fn(ms, stop_first, &a, &st);
    CHECK_EQ_INT(rc, VG_STOP_ITERATION);
    CHECK_EQ_INT(h2.before + h2.after, 0);
    vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    /* 71 / 73: an Aborted step function is re-run on MonitoredSession, propagates on Singular */
    rec_hook h3 = {0};
    hk = hook_of(&h3);
    a.calls = 0;
    abort_left = 1;
    ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = &hk, .nhooks = 1}, &st);
    rc = vg_monitored_session_run_step_fn(ms, abort_then_run, &a, &st);
    CHECK_EQ_INT(rc, VG_OK);
    CHECK_EQ_INT(a.calls, 2);
    CHECK_EQ_INT(h3.before, 2);
    CHECK_EQ_INT(h3.after_create, 2);
    CHECK_NEAR(a.result, 0.6, 1e-6);
    vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    a.calls = 0;
    abort_left = 1;
    o.hooks = NULL; o.nhooks = 0;
    ms = vg_singular_monitored_session_new(g, &o, &st);
    rc = vg_monitored_session_run_step_fn(ms, abort_then_run, &a, &st);
    CHECK_EQ_INT(rc, VG_ABORTED);
    CHECK_EQ_INT(a.calls, 1);
    vg_monitored_session_end(ms, rc, &st);
    ht_free_session_graph(ms, g);
}

/* items 79, 80, 81, 82, 95, 131 (restore across sessions through a checkpoint dir) */
static void test_monitored__restore_and_stop_at_step(void) {
    vg_status st;
    vg_code rc;
    char dir[64];
    CHECK(tu_mkdtemp(dir, sizeof dir, "ms")[0] != 0);
    /* 81: last_step = 3 */
    model m = make_model();
    vg_hook hooks[2];
    CHECK_OK(vg_stop_at_step_hook(-1, 3, &hooks[0], &st), &st);
    vg_checkpoint_saver_options co = {0};
    co.checkpoint_dir = dir;
    co.save_steps = 1;
    CHECK_OK(vg_checkpoint_saver_hook(&co, &hooks[1], &st), &st);
    vg_monitored_session *ms = vg_monitored_session_new(
        m.g,
        &(vg_monitored_options){.creator = ht_creator(m.g, NULL, dir, NULL, -1, true), .hooks = hooks, .nhooks = 2},
        &st);
    CHECK(ms != NULL);
    if (!ms) { fprintf(stderr, "%s\n", st.msg); return; }
    int n = 0;
    rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        run_train(ms, &st, &rc);
        n++;
    }
    CHECK_EQ_INT(rc, VG_OK);
    CHECK_EQ_INT(n, 3);
    CHECK_OK(vg_monitored_session_end(ms, rc, &st), &st);
    vg_monitored_session_free(ms);
    /* 82 / 131: a new session restores 3; num_steps = 4 runs 3 -> 7 */
    CHECK_OK(vg_stop_at_step_hook(4, -1, &hooks[0], &st), &st);
    ms = vg_monitored_session_new(
        m.g,
        &(vg_monitored_options){.creator = ht_creator(m.g, NULL, dir, NULL, -1, true), .hooks = hooks, .nhooks = 1},
        &st);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 3);
    n = 1;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        run_train(ms, &st, &rc);
        n++;
    }
    CHECK_EQ_INT(n, 4);
    vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    /* 80: checkpoint_filename_with_path restores too */
    char last[4096];
    CHECK(vg_latest_checkpoint(dir, last, sizeof last) != NULL);
    vg_singular_options o = {0};
    o.checkpoint_filename_with_path = last;
    ms = vg_singular_monitored_session_new(m.g, &o, &st);
    CHECK(ms != NULL);
    CHECK_EQ_INT(run_train(ms, &st, &rc), 3);
    vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    /* 79: Aborted on the 4th run with a per-step checkpoint hook: restore and re-run */
    rec_hook h = {0};
    CHECK_OK(vg_checkpoint_saver_hook(&co, &hooks[0], &st), &st);
    hooks[1] = failing_hook_of(&h, 4, VG_ABORTED);
    ms = vg_monitored_session_new(
        m.g,
        &(vg_monitored_options){.creator = ht_creator(m.g, NULL, dir, NULL, -1, true), .hooks = hooks, .nhooks = 2},
        &st);
    int64_t s0 = run_train(ms, &st, &rc);
    CHECK_EQ_INT(run_train(ms, &st, &rc), s0 + 1);
    CHECK_EQ_INT(run_train(ms, &st, &rc), s0 + 2);
    CHECK_EQ_INT(run_train(ms, &st, &rc), s0 + 3); /* restored s0+3 from the latest checkpoint */
    CHECK_EQ_INT(rc, VG_OK);
    CHECK_EQ_INT(h.after_create, 2);
    vg_monitored_session_end(ms, rc, &st);
    ht_free_session_graph(ms, m.g);
    CHECK(tu_rmrf(dir) == 0);
    vg_file_writer_cache_clear();
}

int main(void) {
    RUN_TEST(test_monitored__defaults_and_order);
    RUN_TEST(test_monitored__finalized_graph_stays_finalized);
    RUN_TEST(test_monitored__hooks_fetch_and_feed);
    RUN_TEST(test_monitored__stop_requests_and_hook_errors);
    RUN_TEST(test_monitored__merge_run_options);
    RUN_TEST(test_monitored__end_semantics);
    RUN_TEST(test_monitored__recovery);
    RUN_TEST(test_monitored__singular_no_recovery);
    RUN_TEST(test_monitored__coordinator);
    RUN_TEST(test_monitored__run_step_fn);
    RUN_TEST(test_monitored__restore_and_stop_at_step);
    TEST_MAIN_END();
}
