/* test_monitored_extra.c - checklist items of docs/tf1-semantics.md §1-§5 that
 * tests/monitored/test_monitored_session.c does not assert (2-6, 10, 24-26, 28, 30, 31, 35, 38,
 * 39, 44, 52, 70, 72, 76, 77), §5's hook-error table, quirks 27.2/27.8/27.9, and the
 * Coordinator / QueueRunner items no other test asserts (110, 115, 118): the run context,
 * pass-through without hooks, errors and the coordinator, recovery through run_step_fn,
 * the construction order, StopIteration. */
#include "test_util.h"
#include "status_fixture.h"
#include "kernels/kernel.h"
#include "hook_test_util.h"
#include <stdatomic.h>

/* ---- TestCountingEnqueue: an "enqueue op" for queue runners that records how many
 * threads run it at the same time ---- */
static atomic_int enq_active, enq_max, enq_calls;
static vg_code shape_none(vg_op *op, vg_status *st) {
    vg__op_set_num_outputs(op, 0);
    return VG_OK;
}
static vg_code k_counting_enqueue(vg__kctx *ctx) {
    int a = atomic_fetch_add(&enq_active, 1) + 1;
    int m = atomic_load(&enq_max);
    while (a > m && !atomic_compare_exchange_weak(&enq_max, &m, a)) {
    }
    atomic_fetch_add(&enq_calls, 1);
    ht_sleep(0.005);
    atomic_fetch_sub(&enq_active, 1);
    return VG_OK;
}
const vg__op_def vg__ops_test[] = {
    {"TestCountingEnqueue", 0, 0, VG__OP_STATEFUL, 0, shape_none, k_counting_enqueue, NULL},
    {0},
};

/* ---- a creator wrapping the chief creator: counts sessions, fails on one call ---- */
typedef struct ccreator {
    vg_session_creator inner;
    int calls, created;
    int fail_at;       /* 1-based call that fails, 0 never */
    vg_code fail_code;
} ccreator;
static vg_session *cc_create(void *p, vg_status *st) {
    ccreator *c = p;
    c->calls++;
    if (c->fail_at == c->calls) {
        vg_status_set(st, c->fail_code, "creator failed on call %d", c->calls);
        return NULL;
    }
    vg_session *s = c->inner.create_session(c->inner.payload, st);
    if (s) c->created++;
    return s;
}
static void cc_destroy(void *p) {
    ccreator *c = p;
    c->inner.destroy(c->inner.payload);
}
static vg_session_creator counting_creator(ccreator *c, vg_graph *g) {
    c->inner = ht_creator(g, NULL, NULL, NULL, -1, true);
    vg_session_creator out = {cc_create, cc_destroy, c};
    return out;
}

/* ---- a configurable hook ---- */
typedef struct xhook {
    int begin, acs, before, after, end;
    vg_coord *coord;
    vg_session *sess;
    /* behaviour */
    int report_at_after;          /* after_run call (1-based) reporting report_code to the coordinator */
    vg_code report_code;
    bool cancel_if_coord_stopped; /* after_run fails with CANCELLED once the coordinator stopped */
    int fail_before_at;           /* before_run call (1-based) failing with fail_code */
    vg_code fail_code;
    vg_code fail_begin;           /* begin fails with this code (VG_OK: never) */
    int fail_acs_at;              /* after_create_session call (1-based) failing with fail_code */
    bool stop_in_after;           /* request a stop in every after_run */
    vg_output fetch;              /* fetched every run if set */
    int nresults;
    double last;
    /* item 44 probes */
    vg_output probe_var;          /* run in after_create_session */
    vg_op *probe_dequeue;         /* run (with a timeout) in after_create_session */
    bool graph_finalized_at_begin, graph_finalized_at_acs, var_ready_at_acs, queue_fed_at_acs;
} xhook;

static vg_code x_begin(void *p, vg_graph *g, vg_status *st) {
    xhook *h = p;
    h->begin++;
    h->graph_finalized_at_begin = vg_graph_finalized(g);
    if (h->fail_begin) return vg_status_set(st, h->fail_begin, "hook failed in begin");
    return VG_OK;
}
static vg_code x_acs(void *p, vg_session *s, vg_coord *c, vg_status *st) {
    xhook *h = p;
    h->acs++;
    h->coord = c;
    h->sess = s;
    h->graph_finalized_at_acs = vg_graph_finalized(vg_session_graph(s));
    if (h->fail_acs_at == h->acs) return vg_status_set(st, h->fail_code, "hook failed in after_create_session");
    vg_status tmp;
    if (h->probe_var.op) {
        vg_tensor *t = NULL;
        h->var_ready_at_acs = vg_session_run1(s, h->probe_var, &t, &tmp) == VG_OK;
        vg_tensor_free(t);
    }
    if (h->probe_dequeue) {
        vg_run_options o = {0};
        o.timeout_in_ms = 5000;
        vg_output out0 = vg_out(h->probe_dequeue, 0);
        vg_tensor *t = NULL;
        h->queue_fed_at_acs = vg_session_run(s, &o, NULL, NULL, 0, &out0, &t, 1, NULL, 0, NULL, &tmp) == VG_OK;
        vg_tensor_free(t);
    }
    return VG_OK;
}
static vg_code x_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    xhook *h = p;
    h->before++;
    if (h->fail_before_at == h->before) return vg_status_set(st, h->fail_code, "hook failed in before_run");
    if (h->fetch.op) {
        a->fetches = &h->fetch;
        a->nfetches = 1;
    }
    return VG_OK;
}
static vg_code x_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    xhook *h = p;
    h->after++;
    h->nresults = v->nresults;
    if (v->nresults) h->last = vg_tensor_scalar(v->results[0]);
    if (h->report_at_after == h->after) {
        vg_status err;
        vg_status_set(&err, h->report_code, "reported to the coordinator");
        vg_coord_request_stop(h->coord, &err);
    }
    if (h->cancel_if_coord_stopped && h->coord && vg_coord_should_stop(h->coord))
        return vg_status_set(st, VG_CANCELLED, "session stuck: cancelled");
    if (h->stop_in_after) vg_run_context_request_stop(ctx);
    return VG_OK;
}
static vg_code x_end(void *p, vg_session *s, vg_status *st) {
    ((xhook *)p)->end++;
    return VG_OK;
}
static vg_hook xh(xhook *h) {
    vg_hook k = {"x", x_begin, x_acs, x_before, x_after, x_end, NULL, h};
    return k;
}

/* a graph: c = 0 (float const), v (float variable, 0), placeholder x, y = x + 1 */
typedef struct gm {
    vg_graph *g;
    vg_output c, v, x, y, t5;
} gm;
static gm gm_make(void) {
    gm m;
    m.g = vg_graph_new();
    m.c = vg_const_f32(m.g, 0.0f, "c");
    m.v = vg_get_variable(m.g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0).ref;
    m.x = vg_placeholder(m.g, VG_FLOAT, NULL, 0, "x");
    m.y = vg_add(m.g, m.x, vg_const_f32(m.g, 1.0f, NULL), "y");
    m.t5 = vg_const_f32(m.g, 5.0f, "t5");
    return m;
}

/* ------------------------------------------------------------------------ */
/* §1: SessionRunArgs / SessionRunContext / SessionRunValues */

typedef struct ctx_hook {
    const vg_run_args *user;      /* the caller's args of the current run */
    const vg_run_context *first_ctx;
    bool request, requested_seen_by_other, sticky_after;
    bool args_zeroed, orig_ok;
    vg_session *ctx_session;
    vg_output t5;
    int before, after, other_after, nresults_other;
    bool other_results_null;
    double side_value;
} ctx_hook;

static bool zeroed(const vg_run_args *a) {
    return !a->fetches && !a->nfetches && !a->feeds && !a->feed_values && !a->nfeeds && !a->targets &&
           !a->ntargets && !a->options;
}
static vg_code ca_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    ctx_hook *h = p;
    h->before++;
    h->args_zeroed = zeroed(a);
    const vg_run_args *o = vg_run_context_original_args(ctx);
    h->orig_ok = o->fetches == h->user->fetches && o->nfetches == h->user->nfetches && o->feeds == h->user->feeds &&
                 o->feed_values == h->user->feed_values && o->nfeeds == h->user->nfeeds && o->options == NULL;
    h->ctx_session = vg_run_context_session(ctx);
    h->first_ctx = ctx;
    if (h->request) {
        CHECK(!vg_run_context_stop_requested(ctx));
        vg_run_context_request_stop(ctx);
        CHECK(vg_run_context_stop_requested(ctx));
    } else {
        a->fetches = &h->t5; /* fetch on this run only */
        a->nfetches = 1;
    }
    return VG_OK;
}
static vg_code ca_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    ctx_hook *h = p;
    h->after++;
    CHECK(ctx == h->first_ctx); /* one context per run, shared by before and after */
    if (h->request) h->sticky_after = vg_run_context_stop_requested(ctx);
    /* running on the context's session bypasses the hooks */
    vg_tensor *t = NULL;
    vg_status tmp;
    if (vg_session_run1(vg_run_context_session(ctx), h->t5, &t, &tmp) == VG_OK) h->side_value = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return VG_OK;
}
static vg_code cb_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    ctx_hook *h = p;
    h->requested_seen_by_other = vg_run_context_stop_requested(ctx);
    return VG_OK;
}
static vg_code cb_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    ctx_hook *h = p;
    h->other_after++;
    h->other_results_null = v->results == NULL && v->nresults == 0 && v->options != NULL && v->run_metadata != NULL;
    return VG_OK;
}

/* items 2, 3, 4, 5, 10 (and 7: one before/after per run) */
static void test_monitored__run_context(void) {
    vg_status st;
    vg_run_args init = {0}; /* 2: SessionRunArgs(x): no feeds, no options */
    CHECK(zeroed(&init));
    gm m = gm_make();
    ctx_hook h = {0};
    h.t5 = m.t5;
    vg_hook hooks[2] = {{"a", NULL, NULL, ca_before, ca_after, NULL, NULL, &h},
                        {"b", NULL, NULL, cb_before, cb_after, NULL, NULL, &h}};
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, hooks, 2, &st);
    if (!ms) return;
    vg_tensor *one = vg_tensor_new_scalar_f32(1.0f, NULL), *out[1] = {NULL};
    vg_run_options opts = {0};
    vg_run_args a = {0};
    a.fetches = &m.y;
    a.nfetches = 1;
    a.feeds = &m.x;
    a.feed_values = &one;
    a.nfeeds = 1;
    a.options = &opts;
    h.user = &a;
    CHECK_OK(vg_monitored_session_run(ms, &a, out, NULL, &st), &st);
    CHECK(out[0] && vg_tensor_scalar(out[0]) == 2.0);
    vg_tensor_free(out[0]);
    CHECK(h.args_zeroed);
    CHECK(h.orig_ok);                                            /* 4 */
    CHECK(h.ctx_session == vg_monitored_session_raw_session(ms)); /* 10 */
    CHECK_NEAR(h.side_value, 5.0, 0);
    CHECK_EQ_INT(h.before, 1);                                   /* the side run called no hook */
    CHECK(h.other_results_null);                                 /* 5 */
    CHECK(!vg_monitored_session_should_stop(ms));
    /* second run: args are zeroed again; a stop request is shared and sticky (3) */
    h.request = true;
    a.options = NULL;
    CHECK_OK(vg_monitored_session_run(ms, &a, out, NULL, &st), &st);
    vg_tensor_free(out[0]);
    CHECK(h.args_zeroed);
    CHECK(h.orig_ok);
    CHECK(h.requested_seen_by_other);
    CHECK(h.sticky_after);
    CHECK_EQ_INT(h.before, 2);
    CHECK_EQ_INT(h.after, 2);
    CHECK_EQ_INT(h.other_after, 2);
    CHECK(vg_monitored_session_should_stop(ms));
    ht_close_session(ms);
    vg_tensor_free(one);
    vg_graph_free(m.g);
}

/* items 6, 24, 25, 26: no hooks: the caller's feeds, options and run metadata reach the
 * session (a full trace fills the caller's metadata); graph; should_stop around close */
static void test_monitored__no_hooks_pass_through(void) {
    vg_status st;
    gm m = gm_make();
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){0}, &st);
    if (!ms) return;
    CHECK(vg_monitored_session_graph(ms) == m.g); /* 24 */
    CHECK(!vg_monitored_session_should_stop(ms));  /* 26 */
    vg_tensor *three = vg_tensor_new_scalar_f32(3.0f, NULL), *out[1] = {NULL};
    vg_run_options o = {0};
    o.trace_level = VG_TRACE_FULL;
    o.output_partition_graphs = true;
    vg_run_metadata *md = vg_run_metadata_new();
    vg_run_args a = {0};
    a.fetches = &m.y;
    a.nfetches = 1;
    a.feeds = &m.x;
    a.feed_values = &three;
    a.nfeeds = 1;
    a.options = &o;
    CHECK_OK(vg_monitored_session_run(ms, &a, out, md, &st), &st);
    CHECK(out[0] && vg_tensor_scalar(out[0]) == 4.0); /* 25 */
    CHECK(vg_run_metadata_num_nodes(md) > 0);          /* 6 */
    CHECK_EQ_INT(vg_run_metadata_num_partition_graphs(md), 1);
    CHECK_EQ_INT(o.trace_level, VG_TRACE_FULL); /* const options: never modified (20) */
    vg_tensor_free(out[0]);
    CHECK_OK(vg_monitored_session_close(ms, &st), &st);
    CHECK(vg_monitored_session_should_stop(ms)); /* 26 */
    vg_monitored_session_free(ms);
    vg_run_metadata_free(md);
    vg_tensor_free(three);
    vg_graph_free(m.g);
}

/* items 28, 30: an error of the run itself propagates with the session's code and
 * message (naming the node); the coordinator is not stopped and should_stop stays False */
static void test_monitored__run_error_does_not_stop(void) {
    vg_status st;
    gm m = gm_make();
    xhook h = {0};
    vg_hook k = xh(&h);
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = &k, .nhooks = 1}, &st);
    if (!ms) return;
    vg_code rc;
    ht_fetch_scalar(ms, m.y, &rc, &st); /* x not fed */
    CHECK_EQ_INT(rc, VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "x");
    CHECK_EQ_INT(h.after, 0);
    CHECK(!vg_coord_should_stop(h.coord));
    CHECK(!vg_monitored_session_should_stop(ms));
    CHECK_NEAR(ht_fetch_scalar(ms, m.t5, &rc, &st), 5.0, 0);
    CHECK_EQ_INT(rc, VG_OK);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    ht_free_session_graph(ms, m.g);
}

/* item 31: the coordinator holds ABORTED and the run fails with something else: the
 * ABORTED is raised (Singular) and recovered from (Monitored) */
static void test_monitored__coordinator_preemption_substituted(void) {
    vg_status st;
    vg_code rc;
    gm m = gm_make();
    xhook h = {0};
    h.report_at_after = 1;
    h.report_code = VG_ABORTED;
    h.fail_before_at = 2;
    h.fail_code = VG_INTERNAL;
    vg_hook k = xh(&h);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &k, 1, &st);
    if (!ms) return;
    CHECK_NEAR(ht_fetch_scalar(ms, m.t5, &rc, &st), 5.0, 0);
    ht_fetch_scalar(ms, m.t5, &rc, &st);
    CHECK_EQ_INT(rc, VG_ABORTED);
    CHECK_STR_CONTAINS(st.msg, "reported to the coordinator");
    vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    /* MonitoredSession: recovers, the call is re-run on a new session */
    xhook h2 = {0};
    h2.report_at_after = 1;
    h2.report_code = VG_ABORTED;
    h2.fail_before_at = 2;
    h2.fail_code = VG_INTERNAL;
    k = xh(&h2);
    ccreator cc = {0};
    ms = vg_monitored_session_new(
        m.g, &(vg_monitored_options){.creator = counting_creator(&cc, m.g), .hooks = &k, .nhooks = 1}, &st);
    if (!ms) return;
    CHECK_NEAR(ht_fetch_scalar(ms, m.t5, &rc, &st), 5.0, 0);
    CHECK_NEAR(ht_fetch_scalar(ms, m.t5, &rc, &st), 5.0, 0);
    CHECK_EQ_INT(rc, VG_OK);
    CHECK_EQ_INT(cc.created, 2);
    CHECK_EQ_INT(h2.acs, 2);
    CHECK(!vg_monitored_session_should_stop(ms));
    ht_close_session_graph(ms, m.g);
}

/* item 35: a non-preemption error of the creator (when recreating) propagates from run */
static void test_monitored__creator_error_propagates(void) {
    vg_status st;
    vg_code rc;
    gm m = gm_make();
    xhook h = {0};
    h.fail_before_at = 2;
    h.fail_code = VG_ABORTED;
    vg_hook k = xh(&h);
    ccreator cc = {0};
    cc.fail_at = 2;
    cc.fail_code = VG_INTERNAL;
    vg_monitored_session *ms = vg_monitored_session_new(
        m.g, &(vg_monitored_options){.creator = counting_creator(&cc, m.g), .hooks = &k, .nhooks = 1}, &st);
    if (!ms) return;
    CHECK_NEAR(ht_fetch_scalar(ms, m.t5, &rc, &st), 5.0, 0);
    ht_fetch_scalar(ms, m.t5, &rc, &st);
    CHECK_EQ_INT(rc, VG_INTERNAL);
    CHECK_STR_CONTAINS(st.msg, "creator failed on call 2");
    CHECK_EQ_INT(cc.calls, 2);
    vg_monitored_session_end(ms, rc, &st);
    ht_free_session_graph(ms, m.g);
}

/* item 38: the coordinator stores ABORTED and a hook then fails with CANCELLED in
 * after_run (a stuck session): the call is re-run on a new session */
static void test_monitored__recovery_from_session_getting_stuck(void) {
    vg_status st;
    vg_code rc;
    gm m = gm_make();
    xhook h1 = {0}, h2 = {0};
    h1.report_at_after = 1;
    h1.report_code = VG_ABORTED;
    h2.cancel_if_coord_stopped = true;
    vg_hook ks[2] = {xh(&h1), xh(&h2)};
    ccreator cc = {0};
    vg_monitored_session *ms = vg_monitored_session_new(
        m.g, &(vg_monitored_options){.creator = counting_creator(&cc, m.g), .hooks = ks, .nhooks = 2}, &st);
    if (!ms) return;
    CHECK_NEAR(ht_fetch_scalar(ms, m.t5, &rc, &st), 5.0, 0);
    CHECK_EQ_INT(rc, VG_OK);
    CHECK(!vg_monitored_session_should_stop(ms));
    CHECK_EQ_INT(cc.created, 2);
    CHECK_EQ_INT(h1.before, 2); /* the whole call ran twice */
    ht_close_session_graph(ms, m.g);
}

/* ---- step functions ---- */
typedef struct step {
    gm *m;
    int calls;
    int abort_first;      /* return ABORTED (before any run) on the first n calls */
    bool raw;             /* run on the raw session instead of run_with_hooks */
    double result;
} step;
static vg_code step_fn(vg_step_context *sc, void *p, vg_status *st) {
    step *s = p;
    s->calls++;
    if (s->abort_first > 0) {
        s->abort_first--;
        return vg_status_set(st, VG_ABORTED, "step_fn aborted");
    }
    vg_tensor *out = NULL;
    vg_code rc;
    if (s->raw) {
        rc = vg_session_run1(vg_step_context_session(sc), s->m->t5, &out, st);
    } else {
        vg_run_args a = {0};
        a.fetches = &s->m->t5;
        a.nfetches = 1;
        rc = vg_step_context_run_with_hooks(sc, &a, &out, NULL, st);
    }
    if (rc == VG_OK) s->result = vg_tensor_scalar(out);
    vg_tensor_free(out);
    return rc;
}

/* item 39 (36, 37, 38 through run_step_fn, with run_with_hooks and with the raw
 * session), 70 (ABORTED from step_fn before any run), 72 (ABORTED from a hook's before_run
 * inside run_with_hooks: step_fn re-run, the hook's next after_run sees its fetch) */
static void test_monitored__step_fn_recovery(void) {
    vg_status st;
    gm m = gm_make();
    for (int raw = 0; raw < 2; raw++) {
        /* 36: ABORTED reported to the coordinator -> new session, continue */
        xhook h = {0};
        vg_hook k = xh(&h);
        ccreator cc = {0};
        vg_monitored_session *ms = vg_monitored_session_new(
            m.g, &(vg_monitored_options){.creator = counting_creator(&cc, m.g), .hooks = &k, .nhooks = 1}, &st);
        if (!ms) return;
        step s = {&m, 0, 0, raw, 0};
        CHECK_OK(vg_monitored_session_run_step_fn(ms, step_fn, &s, &st), &st);
        vg_status err;
        vg_status_set(&err, VG_ABORTED, "side thread aborted");
        vg_coord_request_stop(h.coord, &err);
        CHECK_OK(vg_monitored_session_run_step_fn(ms, step_fn, &s, &st), &st);
        CHECK_NEAR(s.result, 5.0, 0);
        CHECK(!vg_monitored_session_should_stop(ms));
        CHECK_EQ_INT(cc.created, 2);
        CHECK_EQ_INT(h.before, raw ? 0 : 2);
        ht_close_session(ms);
        /* 37: UNKNOWN reported -> should_stop, no new session, end returns it */
        xhook h2 = {0};
        k = xh(&h2);
        ccreator cc2 = {0};
        ms = vg_monitored_session_new(
            m.g, &(vg_monitored_options){.creator = counting_creator(&cc2, m.g), .hooks = &k, .nhooks = 1}, &st);
        if (!ms) return;
        vg_status_set(&err, VG_UNKNOWN, "side thread failed");
        vg_coord_request_stop(h2.coord, &err);
        CHECK_OK(vg_monitored_session_run_step_fn(ms, step_fn, &s, &st), &st);
        CHECK(vg_monitored_session_should_stop(ms));
        CHECK_EQ_INT(cc2.created, 1);
        CHECK_CODE(vg_monitored_session_end(ms, VG_OK, &st), VG_UNKNOWN);
        vg_monitored_session_free(ms);
    }
    /* 38 through run_with_hooks: ABORTED stored + CANCELLED from a hook -> step_fn re-run */
    xhook h1 = {0}, h2 = {0};
    h1.report_at_after = 1;
    h1.report_code = VG_ABORTED;
    h2.cancel_if_coord_stopped = true;
    vg_hook ks[2] = {xh(&h1), xh(&h2)};
    ccreator cc = {0};
    vg_monitored_session *ms = vg_monitored_session_new(
        m.g, &(vg_monitored_options){.creator = counting_creator(&cc, m.g), .hooks = ks, .nhooks = 2}, &st);
    if (!ms) return;
    step s = {&m, 0, 0, false, 0};
    CHECK_OK(vg_monitored_session_run_step_fn(ms, step_fn, &s, &st), &st);
    CHECK_EQ_INT(s.calls, 2);
    CHECK_EQ_INT(cc.created, 2);
    CHECK(!vg_monitored_session_should_stop(ms));
    /* 70: ABORTED before any run -> re-executed, the final value returned */
    s.calls = 0;
    s.abort_first = 1;
    s.result = 0;
    CHECK_OK(vg_monitored_session_run_step_fn(ms, step_fn, &s, &st), &st);
    CHECK_EQ_INT(s.calls, 2);
    CHECK_NEAR(s.result, 5.0, 0);
    CHECK_EQ_INT(cc.created, 3);
    /* the same with a step_fn running on the raw session: the retried step_fn gets the
     * new session's raw session (TF hands it the old, closed one: quirk 27.2, not kept) */
    s.calls = 0;
    s.abort_first = 1;
    s.raw = true;
    s.result = 0;
    CHECK_OK(vg_monitored_session_run_step_fn(ms, step_fn, &s, &st), &st);
    CHECK_EQ_INT(s.calls, 2);
    CHECK_NEAR(s.result, 5.0, 0);
    CHECK_EQ_INT(cc.created, 4);
    ht_close_session(ms);
    /* 72: a hook's before_run raises ABORTED inside run_with_hooks */
    xhook h3 = {0};
    h3.fail_before_at = 1;
    h3.fail_code = VG_ABORTED;
    h3.fetch = m.t5;
    vg_hook k3 = xh(&h3);
    ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = &k3, .nhooks = 1}, &st);
    if (!ms) return;
    step s3 = {&m, 0, 0, false, 0};
    CHECK_OK(vg_monitored_session_run_step_fn(ms, step_fn, &s3, &st), &st);
    CHECK_EQ_INT(s3.calls, 2);
    CHECK_EQ_INT(h3.before, 2);
    CHECK_EQ_INT(h3.after, 1);
    CHECK_EQ_INT(h3.nresults, 1);
    CHECK_NEAR(h3.last, 5.0, 0);
    CHECK_EQ_INT(h3.acs, 2);
    ht_close_session_graph(ms, m.g);
}

/* item 44: begin (graph not finalized) -> finalize -> create -> init -> queue runners ->
 * after_create_session */
static void test_monitored__construction_order(void) {
    vg_status st;
    gm m = gm_make();
    vg_dtype dt = VG_FLOAT;
    vg_output q = vg_fifo_queue(m.g, &dt, NULL, 1, 2, "q");
    vg_op *enq = vg_queue_enqueue(m.g, q, &m.t5, 1, "enqueue");
    CHECK_OK(vg_add_queue_runner(m.g, q, &enq, 1), &st);
    xhook h = {0};
    h.probe_var = m.v;
    h.probe_dequeue = vg_queue_dequeue(m.g, q, "dequeue");
    vg_hook k = xh(&h);
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = &k, .nhooks = 1}, &st);
    if (!ms) return;
    CHECK(!h.graph_finalized_at_begin);
    CHECK(h.graph_finalized_at_acs);
    CHECK(h.var_ready_at_acs);
    CHECK(h.queue_fed_at_acs);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    ht_free_session_graph(ms, m.g);
}

/* item 52: StopIteration (VG_STOP_ITERATION) from a hook inside the block: suppressed,
 * hooks' end() called, after_run not called for the failing step */
static void test_monitored__stop_iteration_in_block(void) {
    vg_status st;
    gm m = gm_make();
    xhook h = {0};
    h.fail_before_at = 3;
    h.fail_code = VG_STOP_ITERATION;
    vg_hook k = xh(&h);
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = &k, .nhooks = 1}, &st);
    if (!ms) return;
    vg_code rc = VG_OK;
    int iters = 0;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        ht_fetch_scalar(ms, m.t5, &rc, &st);
        iters++;
    }
    CHECK_EQ_INT(iters, 3);
    CHECK_EQ_INT(rc, VG_STOP_ITERATION);
    CHECK_EQ_INT(h.after, 2);
    CHECK_OK(vg_monitored_session_end(ms, rc, &st), &st);
    CHECK_EQ_INT(h.end, 1);
    CHECK(vg_monitored_session_should_stop(ms));
    ht_free_session_graph(ms, m.g);
}

/* item 76: SingularMonitoredSession initializes the variables */
static void test_monitored__singular_initializes(void) {
    vg_status st;
    vg_code rc;
    gm m = gm_make();
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, NULL, 0, &st);
    if (!ms) return;
    CHECK_NEAR(ht_fetch_scalar(ms, m.v, &rc, &st), 0.0, 0);
    CHECK_EQ_INT(rc, VG_OK);
    ht_close_session_graph(ms, m.g);
}

static int init_fn_calls, init_fn_aborts;
static vg_code aborting_init_fn(void *p, vg_scaffold *sc, vg_session *sess, vg_status *st) {
    init_fn_calls++;
    if (init_fn_aborts > 0) {
        init_fn_aborts--;
        return vg_status_set(st, VG_ABORTED, "init_fn aborted");
    }
    return VG_OK;
}

/* item 77: an init_fn raising ABORTED once: MonitoredSession retries the creation
 * silently (Singular: the error escapes the constructor) */
static void test_monitored__retry_initialization_on_aborted_error(void) {
    vg_status st;
    vg_code rc;
    ht_model m = ht_model_make();
    vg_scaffold_options so = {0};
    so.init_fn = aborting_init_fn;
    vg_scaffold *sc = vg_scaffold_new(&so);
    init_fn_calls = 0;
    init_fn_aborts = 1;
    vg_monitored_session *ms = vg_monitored_session_new(
        m.g, &(vg_monitored_options){.creator = ht_creator(m.g, sc, NULL, NULL, -1, true)}, &st);
    CHECK(ms != NULL);
    if (!ms) return;
    CHECK_EQ_INT(init_fn_calls, 2);
    CHECK(!vg_monitored_session_should_stop(ms));
    vg_run_args a = {0};
    vg_tensor *out[1] = {NULL};
    a.fetches = &m.gs;
    a.nfetches = 1;
    rc = vg_monitored_session_run(ms, &a, out, NULL, &st);
    CHECK_EQ_INT(rc, VG_OK);
    CHECK(out[0] && *(const int64_t *)vg_tensor_data(out[0]) == 0);
    vg_tensor_free(out[0]);
    ht_close_session(ms);
    init_fn_aborts = 1;
    ms = ht_singular(m.g, sc, NULL, NULL, 0, &st);
    CHECK(ms == NULL);
    CHECK_EQ_INT(st.code, VG_ABORTED);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
}

/* §5 "exceptions raised inside hooks": begin (any) escapes the constructor, later hooks
 * are not begun, no session is made; after_create_session ABORTED: creation retried
 * (Monitored) / escapes (Singular); after_create_session other error: escapes */
static void test_monitored__hook_errors_at_construction(void) {
    vg_status st;
    gm m = gm_make();
    xhook a = {0}, b = {0};
    a.fail_begin = VG_INTERNAL;
    vg_hook ks[2] = {xh(&a), xh(&b)};
    ccreator cc = {0};
    vg_monitored_session *ms = vg_monitored_session_new(
        m.g, &(vg_monitored_options){.creator = counting_creator(&cc, m.g), .hooks = ks, .nhooks = 2}, &st);
    CHECK(ms == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INTERNAL, "hook failed in begin");
    CHECK_EQ_INT(b.begin, 0);
    CHECK_EQ_INT(cc.calls, 0);
    CHECK(!vg_graph_finalized(m.g));
    /* after_create_session ABORTED once: a new session, every hook's acs again */
    xhook c = {0}, d = {0};
    c.fail_acs_at = 1;
    c.fail_code = VG_ABORTED;
    vg_hook ks2[2] = {xh(&c), xh(&d)};
    ccreator cc2 = {0};
    ms = vg_monitored_session_new(
        m.g, &(vg_monitored_options){.creator = counting_creator(&cc2, m.g), .hooks = ks2, .nhooks = 2}, &st);
    CHECK(ms != NULL);
    CHECK_EQ_INT(cc2.created, 2);
    CHECK_EQ_INT(c.acs, 2);
    CHECK_EQ_INT(d.acs, 1); /* the first attempt stopped at c */
    CHECK_EQ_INT(c.begin, 1);
    if (ms) {
        vg_code rc;
        CHECK_NEAR(ht_fetch_scalar(ms, m.t5, &rc, &st), 5.0, 0);
        ht_close_session(ms);
    }
    /* Singular: the ABORTED escapes; another error escapes MonitoredSession too */
    xhook e = {0};
    e.fail_acs_at = 1;
    e.fail_code = VG_ABORTED;
    vg_hook ke = xh(&e);
    vg_graph_unfinalize(m.g);
    ms = ht_singular(m.g, NULL, NULL, &ke, 1, &st);
    CHECK(ms == NULL);
    CHECK_EQ_INT(st.code, VG_ABORTED);
    xhook f = {0};
    f.fail_acs_at = 1;
    f.fail_code = VG_INTERNAL;
    vg_hook kf = xh(&f);
    vg_graph_unfinalize(m.g);
    ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = &kf, .nhooks = 1}, &st);
    CHECK(ms == NULL);
    CHECK_EQ_INT(st.code, VG_INTERNAL);
    CHECK_EQ_INT(f.acs, 1);
    vg_graph_free(m.g);
}

/* quirk 27.8 / §5 table: SingularMonitoredSession with a preemption error stored in the
 * coordinator: should_stop() is True (TF raises it there) and the block's end returns it
 * without calling the hooks' end(); MonitoredSession's close swallows it (item 40). */
static void test_monitored__singular_stored_preemption(void) {
    vg_status st;
    gm m = gm_make();
    xhook h = {0};
    vg_hook k = xh(&h);
    vg_monitored_session *ms = ht_singular(m.g, NULL, NULL, &k, 1, &st);
    if (!ms) return;
    vg_status err;
    vg_status_set(&err, VG_ABORTED, "side thread aborted");
    vg_coord_request_stop(h.coord, &err);
    CHECK(vg_monitored_session_should_stop(ms));
    EXPECT_CODE_MSG(vg_monitored_session_end(ms, VG_OK, &st), &st, VG_ABORTED, "side thread aborted");
    CHECK_EQ_INT(h.end, 0);
    ht_free_session_graph(ms, m.g);
}

/* quirk 27.9: a recovery makes a new hooked layer whose stop flag is False again */
static void test_monitored__recovery_resets_hook_stop(void) {
    vg_status st;
    vg_code rc;
    gm m = gm_make();
    xhook h = {0};
    h.stop_in_after = true;
    vg_hook k = xh(&h);
    vg_monitored_session *ms = vg_monitored_session_new(m.g, &(vg_monitored_options){.hooks = &k, .nhooks = 1}, &st);
    if (!ms) return;
    ht_fetch_scalar(ms, m.t5, &rc, &st);
    CHECK(vg_monitored_session_should_stop(ms));
    vg_status err;
    vg_status_set(&err, VG_UNAVAILABLE, "ps went away");
    vg_coord_request_stop(h.coord, &err);
    CHECK(!vg_monitored_session_should_stop(ms)); /* recovered: the old stop request is gone */
    CHECK_EQ_INT(h.acs, 2);
    ht_close_session_graph(ms, m.g);
}

/* items 115, 118 (QueueRunner.create_threads): one thread per enqueue op; starting the
 * runners again on the same session while they run starts no new threads */
static void test_monitored__queue_runner_threads(void) {
    vg_status st;
    for (int nops = 1; nops <= 2; nops++) {
        vg_graph *g = vg_graph_new();
        vg_dtype dt = VG_FLOAT;
        vg_output q = vg_fifo_queue(g, &dt, NULL, 1, 2, "q");
        vg_op *ops[2];
        for (int i = 0; i < nops; i++) {
            vg_op_builder *b = vg_op_builder_new(g, "TestCountingEnqueue", NULL);
            ops[i] = vg_op_builder_finish(b);
        }
        CHECK_OK(vg_add_queue_runner(g, q, ops, nops), &st);
        vg_session *s = vg_session_new(g, NULL, &st);
        vg_coord *c = vg_coord_new(NULL, 0);
        atomic_store(&enq_active, 0);
        atomic_store(&enq_max, 0);
        atomic_store(&enq_calls, 0);
        CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
        CHECK_OK(vg_start_queue_runners(s, c, &st), &st); /* still running: nothing new */
        ht_sleep(0.15);
        vg_coord_request_stop(c, NULL);
        CHECK_CODE(vg_coord_join(c, 5, false, &st), VG_OK);
        CHECK(atomic_load(&enq_calls) > 2);
        CHECK_EQ_INT(atomic_load(&enq_max), nops);
        vg_coord_free(c);
        free_session_graph(s, g);
    }
}

/* item 110 (coordinator_test.py testRequestStopRaisesIfJoined): an error reported
 * after join is raised by request_stop (its code returned, nothing stored); a clean-stop
 * code (OUT_OF_RANGE by default) and a plain stop are not errors. */
static void test_monitored__coordinator_error_after_join(void) {
    vg_status st;
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_CODE(vg_coord_request_stop(c, NULL), VG_OK);
    CHECK_OK(vg_coord_join(c, 1, false, &st), &st);
    vg_status err;
    vg_status_set(&err, VG_INTERNAL, "late failure");
    CHECK_CODE(vg_coord_request_stop(c, &err), VG_INTERNAL);
    vg_status_set(&err, VG_OUT_OF_RANGE, "clean");
    CHECK_CODE(vg_coord_request_stop(c, &err), VG_OK);
    CHECK_CODE(vg_coord_request_stop(c, NULL), VG_OK);
    CHECK_CODE(vg_coord_raise_requested_exception(c, &st), VG_OK);
    vg_coord_free(c);
}

int main(void) {
    RUN_TEST(test_monitored__run_context);
    RUN_TEST(test_monitored__no_hooks_pass_through);
    RUN_TEST(test_monitored__run_error_does_not_stop);
    RUN_TEST(test_monitored__coordinator_preemption_substituted);
    RUN_TEST(test_monitored__creator_error_propagates);
    RUN_TEST(test_monitored__recovery_from_session_getting_stuck);
    RUN_TEST(test_monitored__step_fn_recovery);
    RUN_TEST(test_monitored__construction_order);
    RUN_TEST(test_monitored__stop_iteration_in_block);
    RUN_TEST(test_monitored__singular_initializes);
    RUN_TEST(test_monitored__retry_initialization_on_aborted_error);
    RUN_TEST(test_monitored__hook_errors_at_construction);
    RUN_TEST(test_monitored__singular_stored_preemption);
    RUN_TEST(test_monitored__recovery_resets_hook_stop);
    RUN_TEST(test_monitored__queue_runner_threads);
    RUN_TEST(test_monitored__coordinator_error_after_join);
    TEST_MAIN_END();
}
