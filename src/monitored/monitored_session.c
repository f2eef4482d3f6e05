/*
 * monitored_session.c - MonitoredSession and SingularMonitoredSession (TF 1.15's
 * monitored_session.py), built on the public API only.
 *
 * TF stacks wrappers: _RecoverableSession > _CoordinatedSession > _HookedSession >
 * raw session. Here one struct holds the state of all layers and the functions are
 * named after them:
 *   hooked_run        before_run / merged session run / after_run (§2)
 *   coordinated_run   error substitution from the coordinator (§3)
 *   recoverable loop  in vg_monitored_session_run / run_step_fn / should_stop (§4)
 * A "coordinated session" is (raw session, coordinator, hooked stop flag); the
 * recoverable layer replaces it after ABORTED/UNAVAILABLE.
 *
 * Per-run scratch arrays (merged fetches, feeds, targets, results) live in the
 * monitored session and grow once, so a steady-state run allocates nothing.
 */
#include "vigil/distributed.h"
#include "vigil/monitored.h"
#include "vigil/queue.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vg_run_context {
    vg_run_args original;
    vg_session *session;
    bool stop_requested;
};

struct vg_step_context {
    vg_monitored_session *ms;
    /* the current raw session. TF hands a retried step_fn the raw session captured when
     * run_step_fn was entered (quirk 27.2), i.e. the closed one; here that session is
     * freed by the recovery, so each attempt gets the session it runs on. */
    vg_session *raw;
};

typedef struct hook_slot {
    vg_run_args args;   /* what before_run returned this step */
    int fetch_off;      /* offset of its fetches in hook_map / hook_results */
} hook_slot;

struct vg_monitored_session {
    vg_graph *g;
    bool graph_was_finalized;
    bool recover;
    vg_session_creator creator;
    vg_hook *hooks;
    int nhooks;
    hook_slot *slots;
    double grace;
    /* current coordinated session */
    vg_session *sess;
    vg_coord *coord;
    bool hooked_stop;
    bool closed;
    /* Singular: should_stop() saw a stored coordinator error (TF raises it there, so the
     * `with` block ends by that exception and the hooks' end() is skipped) */
    bool stop_raised;
    /* scratch */
    vg_output *fetches;
    int fetches_cap;
    vg_tensor **results;
    int results_cap;
    int *hook_map;            /* hooks' fetches -> index in the merged (deduplicated) fetches */
    int hook_map_cap;
    vg_tensor **hook_results; /* per-hook views of the results */
    int hook_results_cap;
    vg_output *feeds;
    vg_tensor **feed_vals;
    int feeds_cap, feed_vals_cap;
    vg_op **targets;
    int targets_cap;
    const char **watches;
    int watches_cap;
    vg_run_metadata *md;
};


/* A hook that fails without filling the status still gets a message naming the hook
 * and the callback (issue 9 #7), so an error is never reported as OK / empty. */
static vg_code hook_rc_slow(vg_code rc, const vg_hook *hk, int index, const char *cb, vg_status *st) {
    if (st && (st->code != rc || !st->msg[0])) {
        if (hk->name) vg_status_set(st, rc, "hook %s failed in %s() with %s and no message", hk->name, cb, vg_code_name(rc));
        else vg_status_set(st, rc, "hook #%d failed in %s() with %s and no message", index, cb, vg_code_name(rc));
    }
    return rc;
}
/* the per-step path: a hook that returned OK costs a compare */
static inline vg_code hook_rc(vg_code rc, const vg_hook *hk, int index, const char *cb, vg_status *st) {
    return rc == VG_OK ? rc : hook_rc_slow(rc, hk, index, cb, st);
}

/* TF's _PREEMPTION_ERRORS (AbortedError, UnavailableError), recovered by recreating the
 * session; except where the MPI world is broken (a peer is gone for good: MPI cannot take
 * it back, every recreation would fail again and the retries would never end). */
static bool is_preemption(vg_code c) {
    return (c == VG_ABORTED || c == VG_UNAVAILABLE) && !vg_dist_world_broken();
}

/* ------------------------------------------------------------------------ */
/* run context */

const vg_run_args *vg_run_context_original_args(const vg_run_context *ctx) { return ctx ? &ctx->original : NULL; }
vg_session *vg_run_context_session(const vg_run_context *ctx) { return ctx ? ctx->session : NULL; }
void vg_run_context_request_stop(vg_run_context *ctx) {
    if (ctx) ctx->stop_requested = true;
}
bool vg_run_context_stop_requested(const vg_run_context *ctx) { return ctx && ctx->stop_requested; }

/* ------------------------------------------------------------------------ */
/* scratch growth (kept for the monitored session's lifetime) */

static __attribute__((noinline)) bool grow_slow(void **p, int *cap, int need, size_t elem) {
    int nc = *cap ? *cap : 16;
    while (nc < need) nc *= 2;
    void *q = vg_realloc(*p, (size_t)*cap * elem, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}
/* the per-step path: room that is already there costs a compare */
static inline bool grow(void **p, int *cap, int need, size_t elem) {
    return need <= *cap || grow_slow(p, cap, need, elem);
}

/* ------------------------------------------------------------------------ */
/* coordinated session lifecycle */

static void close_coordinated(vg_monitored_session *ms, vg_status *join_st) {
    if (!ms->sess) return;
    vg_status tmp;
    if (ms->coord) {
        vg_coord_request_stop(ms->coord, NULL);
        vg_coord_join(ms->coord, ms->grace, true, join_st ? join_st : &tmp);
    }
    vg_session_close(ms->sess, &tmp);
    vg_session_free(ms->sess);
    vg_coord_free(ms->coord);
    ms->sess = NULL;
    ms->coord = NULL;
}

/* The factory's create_session (§5 step 5): creator, coordinator with no clean-stop
 * codes, queue runners, after_create_session on every hook. */
static vg_code create_coordinated(vg_monitored_session *ms, vg_status *st) {
    static const vg_code no_clean_codes[1] = {VG_OK};
    vg_session *sess = ms->creator.create_session(ms->creator.payload, st);
    if (!sess) return st && st->code ? st->code : VG_UNKNOWN;
    vg_coord *coord = vg_coord_new(no_clean_codes, 0);
    if (!coord) {
        vg_session_free(sess);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory creating the coordinator");
    }
    ms->sess = sess;
    ms->coord = coord;
    ms->hooked_stop = false;
    vg_code rc = VG_OK;
    if (vg_graph_num_queue_runners(ms->g) > 0) rc = vg_start_queue_runners(sess, coord, st);
    for (int i = 0; rc == VG_OK && i < ms->nhooks; i++)
        if (ms->hooks[i].after_create_session)
            rc = hook_rc(ms->hooks[i].after_create_session(ms->hooks[i].payload, sess, coord, st), &ms->hooks[i], i,
                         "after_create_session", st);
    if (rc != VG_OK) {
        vg_status saved = {VG_OK, ""};
        vg_status_copy(&saved, st);
        close_coordinated(ms, NULL);
        vg_status_copy(st, &saved);
    }
    return rc;
}

/* _RecoverableSession's close before a recreation (_WrappedSession.close): request_stop
 * and join the current coordinated session; a non-preemption error join re-raises (a
 * thread reported it) escapes, a preemption error is swallowed. The session is dropped
 * either way. */
static vg_code recovery_close(vg_monitored_session *ms, vg_status *st) {
    vg_status join_st = {VG_OK, ""};
    close_coordinated(ms, &join_st);
    if (join_st.code != VG_OK && !is_preemption(join_st.code)) {
        vg_status_copy(st, &join_st);
        return join_st.code;
    }
    return VG_OK;
}

/* _RecoverableSession._create_session: retried forever on preemption errors. */
static vg_code ensure_session(vg_monitored_session *ms, vg_status *st) {
    while (!ms->sess) {
        vg_code rc = create_coordinated(ms, st);
        if (rc == VG_OK) break;
        if (!(ms->recover && is_preemption(rc))) return rc;
        vg_logf(VG_LOG_INFO, "An error was raised while a session was being created. This may be due to a "
                             "preemption of a connected worker or parameter server. A new session will be "
                             "created. Error: %s", st ? st->msg : "");
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* hooked layer */

static vg_code feed_conflict(const vg_output *a, int na, const vg_output *b, int nb, const char *what, vg_status *st) {
    char list[512];
    size_t len = 0;
    bool any = false;
    list[0] = 0;
    for (int i = 0; i < na; i++)
        for (int k = 0; k < nb; k++)
            if (a[i].op == b[k].op && a[i].index == b[k].index) {
                any = true;
                if (len < sizeof list - 2)
                    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s:%d", len ? ", " : "",
                                            vg_op_name(a[i].op), a[i].index);
            }
    if (!any) return VG_OK;
    return vg_status_set(st, VG_FAILED_PRECONDITION, "%s Conflict(s): [%s]", what, list);
}

static void merge_options(vg_monitored_session *ms, vg_run_options *o, const vg_run_options *h, int *nwatch) {
    if (h->trace_level > o->trace_level) o->trace_level = h->trace_level;
    if (h->timeout_in_ms > o->timeout_in_ms) o->timeout_in_ms = h->timeout_in_ms;
    if (h->inter_op_thread_pool > o->inter_op_thread_pool) o->inter_op_thread_pool = h->inter_op_thread_pool;
    o->output_partition_graphs = o->output_partition_graphs || h->output_partition_graphs;
    o->report_tensor_allocations_upon_oom = o->report_tensor_allocations_upon_oom || h->report_tensor_allocations_upon_oom;
    if (h->ndebug_watches > 0 &&
        grow((void **)&ms->watches, &ms->watches_cap, *nwatch + h->ndebug_watches, sizeof(char *))) {
        for (int i = 0; i < h->ndebug_watches; i++) ms->watches[(*nwatch)++] = h->debug_watches[i];
    }
}

static vg_code hooked_run(vg_monitored_session *ms, const vg_run_args *a, vg_tensor **out, vg_run_metadata *md,
                          vg_status *st) {
    if (ms->hooked_stop)
        return vg_status_set(st, VG_FAILED_PRECONDITION, "Run called even after should_stop requested.");
    vg_run_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.original = *a;
    ctx.original.options = NULL;
    ctx.session = ms->sess;
    vg_run_options opts = {0};
    int nwatch = 0;
    if (a->options) {
        opts = *a->options;
        if (opts.ndebug_watches > 0 &&
            grow((void **)&ms->watches, &ms->watches_cap, opts.ndebug_watches, sizeof(char *))) {
            for (int i = 0; i < opts.ndebug_watches; i++) ms->watches[nwatch++] = opts.debug_watches[i];
        }
    }
    int nfetch = a->nfetches, nfeed = 0, ntarget = a->ntargets, nmap = 0;
    if (!grow((void **)&ms->fetches, &ms->fetches_cap, nfetch + 1, sizeof(vg_output)) ||
        !grow((void **)&ms->targets, &ms->targets_cap, ntarget + 1, sizeof(vg_op *)))
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory merging run arguments");
    for (int i = 0; i < a->nfetches; i++) ms->fetches[i] = a->fetches[i];
    for (int i = 0; i < a->ntargets; i++) ms->targets[i] = a->targets[i];
    /* before_run, in list order; an error stops everything (no session run). */
    for (int h = 0; h < ms->nhooks; h++) {
        hook_slot *sl = &ms->slots[h];
        vg_run_args *r = &sl->args;
        *r = (vg_run_args){0};
        sl->fetch_off = -1;
        vg_hook *hk = &ms->hooks[h];
        if (!hk->before_run) continue;
        vg_code rc = hook_rc(hk->before_run(hk->payload, &ctx, r, st), hk, h, "before_run", st);
        if (rc != VG_OK) return rc;
        if (r->nfetches > 0 || r->ntargets > 0) {
            if (!grow((void **)&ms->fetches, &ms->fetches_cap, nfetch + r->nfetches + 1, sizeof(vg_output)) ||
                !grow((void **)&ms->targets, &ms->targets_cap, ntarget + r->ntargets + 1, sizeof(vg_op *)) ||
                !grow((void **)&ms->hook_map, &ms->hook_map_cap, nmap + r->nfetches + 1, sizeof(int)))
                return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory merging run arguments");
            sl->fetch_off = nmap;
            /* several hooks fetch the same tensor (the global step): fetch it once */
            vg_output *f = ms->fetches;
            int *map = ms->hook_map;
            for (int i = 0; i < r->nfetches; i++) {
                vg_output want = r->fetches[i];
                int k = 0;
                while (k < nfetch && !(f[k].op == want.op && f[k].index == want.index)) k++;
                if (k == nfetch) f[nfetch++] = want;
                map[nmap++] = k;
            }
            for (int i = 0; i < r->ntargets; i++) ms->targets[ntarget++] = r->targets[i];
        }
        if (r->nfeeds > 0) {
            rc = feed_conflict(r->feeds, r->nfeeds, ms->feeds, nfeed, "Same tensor is fed by two hooks.", st);
            if (rc != VG_OK) return rc;
            if (!grow((void **)&ms->feeds, &ms->feeds_cap, nfeed + r->nfeeds + a->nfeeds + 1, sizeof(vg_output)) ||
                !grow((void **)&ms->feed_vals, &ms->feed_vals_cap, nfeed + r->nfeeds + a->nfeeds + 1,
                      sizeof(vg_tensor *)))
                return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory merging feeds");
            for (int i = 0; i < r->nfeeds; i++) {
                ms->feeds[nfeed] = r->feeds[i];
                ms->feed_vals[nfeed++] = r->feed_values[i];
            }
        }
        if (r->options) merge_options(ms, &opts, r->options, &nwatch);
    }
    /* feeds: the user's pass through unchanged when no hook feeds */
    const vg_output *feeds = a->feeds;
    vg_tensor *const *feed_vals = a->feed_values;
    int total_feeds = a->nfeeds;
    if (nfeed > 0) {
        vg_code rc = feed_conflict(ms->feeds, nfeed, a->feeds, a->nfeeds,
                                   "Same tensor is fed by a SessionRunHook and user.", st);
        if (rc != VG_OK) return rc;
        /* hook feeds then user feeds (the feeds_cap growth above reserved room) */
        for (int i = 0; i < a->nfeeds; i++) {
            ms->feeds[nfeed + i] = a->feeds[i];
            ms->feed_vals[nfeed + i] = a->feed_values[i];
        }
        feeds = ms->feeds;
        feed_vals = ms->feed_vals;
        total_feeds = nfeed + a->nfeeds;
    }
    opts.ndebug_watches = nwatch;
    opts.debug_watches = nwatch ? ms->watches : NULL;
    if (!md) {
        if (!ms->md && !(ms->md = vg_run_metadata_new()))
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory (run metadata)");
        vg_run_metadata_clear(ms->md);
        md = ms->md;
    }
    if (!grow((void **)&ms->results, &ms->results_cap, nfetch + 1, sizeof(vg_tensor *)) ||
        !grow((void **)&ms->hook_results, &ms->hook_results_cap, nmap + 1, sizeof(vg_tensor *)))
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory (results)");
    vg_code rc = vg_session_run(ms->sess, &opts, feeds, feed_vals, total_feeds, ms->fetches, ms->results, nfetch,
                                ms->targets, ntarget, md, st);
    if (rc != VG_OK) return rc;
    vg_tensor **res = ms->results, **hres = ms->hook_results;
    for (int h = 0; h < ms->nhooks && rc == VG_OK; h++) {
        vg_hook *hk = &ms->hooks[h];
        if (!hk->after_run) continue;
        const hook_slot *sl = &ms->slots[h];
        vg_run_values v = {NULL, 0, &opts, md};
        int n = sl->args.nfetches;
        if (sl->fetch_off >= 0 && n > 0) {
            const int *map = ms->hook_map + sl->fetch_off;
            vg_tensor **view = hres + sl->fetch_off;
            for (int i = 0; i < n; i++) view[i] = res[map[i]];
            v.results = view;
            v.nresults = n;
        }
        rc = hook_rc(hk->after_run(hk->payload, &ctx, &v, st), hk, h, "after_run", st);
    }
    if (rc == VG_OK) {
        ms->hooked_stop = ms->hooked_stop || ctx.stop_requested;
        for (int i = 0; i < a->nfetches; i++) {
            out[i] = ms->results[i];
            ms->results[i] = NULL;
        }
    }
    for (int i = 0; i < nfetch; i++) {
        vg_tensor_free(ms->results[i]);
        ms->results[i] = NULL;
    }
    return rc;
}

/* _CoordinatedSession.run: a non-preemption error is replaced by a preemption error the
 * coordinator holds (the root cause), enabling recovery. */
static vg_code coordinated_run(vg_monitored_session *ms, const vg_run_args *a, vg_tensor **out, vg_run_metadata *md,
                               vg_status *st) {
    vg_code rc = hooked_run(ms, a, out, md, st);
    if (rc == VG_OK || is_preemption(rc)) return rc;
    vg_status stored;
    vg_code c = vg_coord_raise_requested_exception(ms->coord, &stored);
    if (is_preemption(c)) {
        vg_status_copy(st, &stored);
        return c;
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* public API */

static vg_monitored_session *ms_new(vg_graph *g, vg_session_creator creator, const vg_hook *hooks, int nhooks,
                                    double grace, bool recover, vg_status *st) {
    if (!g || nhooks < 0 || (nhooks > 0 && !hooks)) {
        for (int i = 0; hooks && i < nhooks; i++)
            if (hooks[i].destroy) hooks[i].destroy(hooks[i].payload);
        if (creator.destroy) creator.destroy(creator.payload);
        vg_status_set(st, VG_INVALID_ARGUMENT, "%s", !g ? "graph is NULL" : "hooks is NULL with nhooks > 0 (or nhooks < 0)");
        return NULL;
    }
    vg_monitored_session *ms = vg_calloc(1, sizeof *ms);
    if (!ms || (nhooks > 0 && (!(ms->hooks = vg_calloc((size_t)nhooks, sizeof(vg_hook))) ||
                               !(ms->slots = vg_calloc((size_t)nhooks, sizeof(hook_slot)))))) {
        for (int i = 0; i < nhooks; i++)
            if (hooks[i].destroy) hooks[i].destroy(hooks[i].payload);
        if (creator.destroy) creator.destroy(creator.payload);
        if (ms) { vg_free(ms->hooks); vg_free(ms); }
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory creating the monitored session");
        return NULL;
    }
    ms->g = g;
    ms->graph_was_finalized = vg_graph_finalized(g);
    ms->recover = recover;
    ms->creator = creator;
    ms->nhooks = nhooks;
    if (nhooks) memcpy(ms->hooks, hooks, sizeof(vg_hook) * (size_t)nhooks);
    ms->grace = grace;
    return ms;
}

static vg_monitored_session *ms_start(vg_monitored_session *ms, vg_status *st) {
    vg_code rc = VG_OK;
    for (int i = 0; i < ms->nhooks && rc == VG_OK; i++)
        if (ms->hooks[i].begin) rc = hook_rc(ms->hooks[i].begin(ms->hooks[i].payload, ms->g, st), &ms->hooks[i], i, "begin", st);
    if (rc == VG_OK) rc = ensure_session(ms, st);
    if (rc != VG_OK) {
        vg_status saved;
        vg_status_copy(&saved, st);
        ms->closed = true;
        vg_monitored_session_free(ms);
        vg_status_copy(st, &saved);
        return NULL;
    }
    vg_status_clear(st);
    return ms;
}

/* stop_grace_period_secs of vg_monitored_options / vg_singular_options: 0 = TF's 120. */
static double resolve_stop_grace(double secs) { return secs > 0 ? secs : 120.0; }

vg_monitored_session *vg_monitored_session_new(vg_graph *g, const vg_monitored_options *o, vg_status *st) {
    vg_monitored_options def = {0};
    if (!o) o = &def;
    vg_session_creator creator = o->creator;
    if (!creator.create_session && g) {
        if (vg_chief_session_creator(g, NULL, &creator, st) != VG_OK) {
            for (int i = 0; o->hooks && i < o->nhooks; i++)
                if (o->hooks[i].destroy) o->hooks[i].destroy(o->hooks[i].payload);
            return NULL;
        }
    }
    vg_monitored_session *ms = ms_new(g, creator, o->hooks, o->nhooks, resolve_stop_grace(o->stop_grace_period_secs),
                                      true, st);
    return ms ? ms_start(ms, st) : NULL;
}

vg_monitored_session *vg_singular_monitored_session_new(vg_graph *g, const vg_singular_options *o, vg_status *st) {
    vg_singular_options def = {0};
    if (!o) o = &def;
    vg_session_creator c = {NULL, NULL, NULL};
    if (g) {
        vg_session_creator_options co = {0};
        co.scaffold = o->scaffold;
        co.config = o->config;
        co.checkpoint_dir = o->checkpoint_dir;
        co.checkpoint_filename_with_path = o->checkpoint_filename_with_path;
        co.no_checkpoint_dir_lock = o->no_checkpoint_dir_lock;
        if (vg_chief_session_creator(g, &co, &c, st) != VG_OK) {
            for (int i = 0; o->hooks && i < o->nhooks; i++)
                if (o->hooks[i].destroy) o->hooks[i].destroy(o->hooks[i].payload);
            return NULL;
        }
    }
    vg_monitored_session *ms = ms_new(g, c, o->hooks, o->nhooks, resolve_stop_grace(o->stop_grace_period_secs), false,
                                      st);
    return ms ? ms_start(ms, st) : NULL;
}

/* The caller's arrays: a count > 0 needs its array (INVALID_ARGUMENT names it); out
 * slots are cleared. NULL *args becomes empty run args (nothing to run). */
static vg_code check_run_args(const vg_run_args **args, vg_tensor **out, vg_status *st) {
    static const vg_run_args none = {0};
    if (!*args) *args = &none;
    const vg_run_args *a = *args;
    if (a->nfetches < 0 || a->nfeeds < 0 || a->ntargets < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "negative count in run args");
    if (a->nfetches > 0 && !out) return vg_status_set(st, VG_INVALID_ARGUMENT, "out is NULL with %d fetches", a->nfetches);
    for (int i = 0; i < a->nfetches; i++) out[i] = NULL;
    if (a->nfetches > 0 && !a->fetches)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "args->fetches is NULL with %d fetches", a->nfetches);
    if (a->nfeeds > 0 && (!a->feeds || !a->feed_values))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "args->%s is NULL with %d feeds",
                             a->feeds ? "feed_values" : "feeds", a->nfeeds);
    if (a->ntargets > 0 && !a->targets)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "args->targets is NULL with %d targets", a->ntargets);
    return VG_OK;
}

vg_code vg_monitored_session_run(vg_monitored_session *ms, const vg_run_args *args, vg_tensor **out,
                                 vg_run_metadata *md, vg_status *st) {
    vg_code rc = check_run_args(&args, out, st);
    if (rc != VG_OK) return rc;
    if (!ms) return vg_status_set(st, VG_INVALID_ARGUMENT, "monitored session is NULL");
    if (ms->closed) return vg_status_set(st, VG_FAILED_PRECONDITION, "Session is already closed.");
    for (;;) {
        rc = ensure_session(ms, st);
        if (rc != VG_OK) return rc;
        rc = coordinated_run(ms, args, out, md, st);
        if (!(ms->recover && is_preemption(rc))) return rc;
        vg_logf(VG_LOG_INFO, "An error was raised. This may be due to a preemption in a connected worker or "
                             "parameter server. The current session will be closed and a new session will be "
                             "created. Error: %s", st ? st->msg : "");
        rc = recovery_close(ms, st);
        if (rc != VG_OK) return rc;
    }
}

vg_session *vg_step_context_session(const vg_step_context *sc) { return sc ? sc->raw : NULL; }

vg_code vg_step_context_run_with_hooks(vg_step_context *sc, const vg_run_args *args, vg_tensor **out,
                                       vg_run_metadata *md, vg_status *st) {
    vg_code rc = check_run_args(&args, out, st);
    if (rc != VG_OK) return rc;
    if (!sc) return vg_status_set(st, VG_INVALID_ARGUMENT, "step context is NULL");
    vg_monitored_session *ms = sc->ms;
    if (ms->closed || !ms->sess) return vg_status_set(st, VG_FAILED_PRECONDITION, "Session is already closed.");
    return coordinated_run(ms, args, out, md, st);
}

vg_code vg_step_context_request_stop(vg_step_context *sc, vg_status *st) {
    (void)sc;
    return vg_status_set(st, VG_STOP_ITERATION, "step_fn has requested the iterations to stop.");
}

vg_code vg_monitored_session_run_step_fn(vg_monitored_session *ms, vg_step_fn fn, void *payload, vg_status *st) {
    if (!ms || !fn) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s is NULL", ms ? "step_fn" : "monitored session");
    if (ms->closed) return vg_status_set(st, VG_FAILED_PRECONDITION, "Session is already closed.");
    vg_step_context sc = {ms, NULL};
    for (;;) {
        vg_code rc = ensure_session(ms, st);
        if (rc != VG_OK) return rc;
        sc.raw = ms->sess;
        rc = fn(&sc, payload, st);
        if (!(ms->recover && is_preemption(rc))) return rc;
        vg_logf(VG_LOG_INFO, "An error was raised in the step function; a new session will be created. Error: %s",
                st ? st->msg : "");
        rc = recovery_close(ms, st);
        if (rc != VG_OK) return rc;
    }
}

bool vg_monitored_session_should_stop(vg_monitored_session *ms) {
    if (!ms || ms->closed) return true;
    if (!ms->sess) return true;
    vg_status stored;
    vg_code c = vg_coord_raise_requested_exception(ms->coord, &stored);
    if (c != VG_OK) {
        if (ms->recover && is_preemption(c)) {
            vg_logf(VG_LOG_INFO, "A preemption error was reported to the coordinator; a new session will be "
                                 "created. Error: %s", stored.msg);
            close_coordinated(ms, NULL);
            vg_status st;
            if (ensure_session(ms, &st) != VG_OK) return true;
            return false;
        }
        if (!ms->recover) ms->stop_raised = true;
        return true;
    }
    if (vg_coord_should_stop(ms->coord)) return true;
    return ms->hooked_stop;
}

/* _close_internal: end() on the hooks when closing without an exception, then close
 * the coordinated session (request_stop, join, close raw). */
static vg_code close_internal(vg_monitored_session *ms, bool call_end, vg_status *st) {
    vg_code rc = VG_OK;
    vg_status tmp;
    if (!st) st = &tmp;
    if (call_end) {
        for (int i = 0; i < ms->nhooks && rc == VG_OK; i++)
            if (ms->hooks[i].end)
                rc = hook_rc(ms->hooks[i].end(ms->hooks[i].payload, ms->closed ? NULL : ms->sess, st), &ms->hooks[i], i,
                             "end", st);
    }
    /* TF raises from a `finally`: its exception replaces a hook's end() error */
    if (ms->closed) return vg_status_set(st, VG_FAILED_PRECONDITION, "Session is already closed.");
    vg_status join_st = {VG_OK, ""};
    close_coordinated(ms, &join_st);
    ms->closed = true;
    if (!ms->graph_was_finalized) vg_graph_unfinalize(ms->g);
    /* the error join re-raises (a thread reported it) also replaces a hook's error */
    if (join_st.code != VG_OK && !(ms->recover && is_preemption(join_st.code))) {
        vg_status_copy(st, &join_st);
        return join_st.code;
    }
    if (rc != VG_OK) return rc;
    vg_status_clear(st);
    return VG_OK;
}

vg_code vg_monitored_session_close(vg_monitored_session *ms, vg_status *st) {
    if (!ms) return vg_status_set(st, VG_INVALID_ARGUMENT, "monitored session is NULL");
    return close_internal(ms, true, st);
}

vg_code vg_monitored_session_end(vg_monitored_session *ms, vg_code loop_rc, vg_status *st) {
    if (!ms) return vg_status_set(st, VG_INVALID_ARGUMENT, "monitored session is NULL");
    bool clean = loop_rc == VG_OK || loop_rc == VG_OUT_OF_RANGE || loop_rc == VG_STOP_ITERATION;
    /* SingularMonitoredSession: a should_stop() that saw the coordinator's stored error
     * raised it in TF, so a loop that ended "normally" after it ended by an exception.
     * A loop that never asked should_stop() ends cleanly: end() runs and close()
     * re-raises the error. */
    if (clean && loop_rc == VG_OK && ms->stop_raised && !ms->closed && ms->coord) {
        vg_status stored;
        if (vg_coord_raise_requested_exception(ms->coord, &stored) != VG_OK) clean = false;
    }
    if (clean) return close_internal(ms, true, st);
    vg_status loop_st;
    vg_status_copy(&loop_st, st);
    vg_status tmp;
    vg_code rc = close_internal(ms, false, &tmp);
    if (rc != VG_OK && rc != loop_rc) {
        vg_status_copy(st, &tmp);
        return rc;
    }
    vg_status_copy(st, &loop_st);
    return loop_rc;
}

vg_session *vg_monitored_session_raw_session(const vg_monitored_session *ms) {
    return (!ms || ms->closed || ms->recover) ? NULL : ms->sess;
}

vg_graph *vg_monitored_session_graph(const vg_monitored_session *ms) { return !ms || ms->closed ? NULL : ms->g; }

void vg_monitored_session_free(vg_monitored_session *ms) {
    if (!ms) return;
    if (!ms->closed) close_internal(ms, false, NULL);
    close_coordinated(ms, NULL);
    for (int i = 0; i < ms->nhooks; i++)
        if (ms->hooks[i].destroy) ms->hooks[i].destroy(ms->hooks[i].payload);
    if (ms->creator.destroy) ms->creator.destroy(ms->creator.payload);
    vg_run_metadata_free(ms->md);
    vg_free(ms->hooks);
    vg_free(ms->slots);
    vg_free(ms->fetches);
    vg_free(ms->results);
    vg_free(ms->hook_map);
    vg_free(ms->hook_results);
    vg_free(ms->feeds);
    vg_free(ms->feed_vals);
    vg_free(ms->targets);
    vg_free(ms->watches);
    vg_free(ms);
}
