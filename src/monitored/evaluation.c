/*
 * evaluation.c - TF 1.15's python/training/evaluation.py on the public API:
 * _get_or_create_eval_step, _StopAfterNEvalsHook and _evaluate_once (a MonitoredSession
 * with a ChiefSessionCreator restoring one checkpoint, the eval ops run until a hook
 * stops it, a FinalOpsHook for the results) and contrib's evaluate_repeatedly (the same
 * over checkpoints_iterator's new checkpoints).
 */
#include "monitored/hooks/hooks_internal.h"
#include "vigil/evaluation.h"
#include "vigil/hooks.h"
#include "vigil/saver.h"
#include "vigil/summary.h"
#include "vigil/variables.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

vg_output vg_get_or_create_eval_step(vg_graph *g) {
    if (!g) return vg_out(NULL, 0);
    if (vg_graph_status(g, NULL) != VG_OK) return vg_out(NULL, 0);
    int n;
    const vg_output *items = vg_graph_collection(g, VG_EVAL_STEP, &n);
    if (n == 1) return items[0];
    if (n > 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Multiple tensors added to tf.GraphKeys.EVAL_STEP");
        return vg_out(NULL, 0);
    }
    /* variable_scope.get_variable('eval_step', [], int64, zeros, trainable=False,
     * collections=[LOCAL_VARIABLES, EVAL_STEP]) at the root scope */
    vg_graph_push_scope(g, "/");
    vg_variable v = vg_get_variable(g, "eval_step", VG_INT64, NULL, 0, vg_init_zeros(), VG_VAR_LOCAL);
    vg_graph_pop_scope(g);
    if (!v.var) return vg_out(NULL, 0);
    vg_graph_add_to_collection(g, VG_EVAL_STEP, v.ref);
    return v.ref;
}

/* ------------------------------------------------------------------------ */
/* _StopAfterNEvalsHook */

typedef struct stop_evals {
    int64_t num_evals; /* -1: None */
    bool log_progress;
    int64_t log_frequency;
    vg_output evals_completed;
} stop_evals;

static vg_code se_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    (void)ctx;
    stop_evals *h = p;
    if (!h->evals_completed.op)
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "_StopAfterNEvalsHook has no eval step: use it with vg_evaluate_once");
    return vg__hk_fetch_one(args, &h->evals_completed);
}

static vg_code se_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    (void)st;
    stop_evals *h = p;
    if (v->nresults < 1 || !v->results[0]) return VG_OK;
    int64_t done = *(const int64_t *)vg_tensor_data(v->results[0]);
    if (h->log_progress) {
        if (h->num_evals < 0) vg_logf(VG_LOG_INFO, "Evaluation [%lld]", (long long)done);
        else if (done % h->log_frequency == 0 || done == h->num_evals)
            vg_logf(VG_LOG_INFO, "Evaluation [%lld/%lld]", (long long)done, (long long)h->num_evals);
    }
    if (h->num_evals >= 0 && done >= h->num_evals) vg_run_context_request_stop(ctx);
    return VG_OK;
}

vg_code vg_stop_after_n_evals_hook(int64_t num_evals, bool log_progress, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (num_evals < -1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "_StopAfterNEvalsHook: num_evals must be >= 0 or -1 (None), got %lld",
                             (long long)num_evals);
    stop_evals *h = vg__hk_new(out, "_StopAfterNEvalsHook", sizeof *h, vg_free, st);
    if (!h) return VG_RESOURCE_EXHAUSTED;
    h->num_evals = num_evals;
    h->log_progress = log_progress;
    /* Reduce logging frequency if there are 20 or more evaluations. */
    h->log_frequency = num_evals < 20 ? 1 : (int64_t)floor((double)num_evals / 10.0);
    vg__hk_callbacks(out, NULL, NULL, se_before, se_after, NULL);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* SummaryAtEndHook */

typedef struct summary_at_end {
    char *log_dir;
    vg_file_writer *writer; /* borrowed (the caller's or the cache's) */
    vg_output summary_op;
    bool replace_summary_op;
    vg_output global_step;
} summary_at_end;

static void sae_destroy(void *p) {
    summary_at_end *h = p;
    vg__hk_free_with(h, h ? h->log_dir : NULL);
}

static vg_code sae_begin(void *p, vg_graph *g, vg_status *st) {
    summary_at_end *h = p;
    if (h->replace_summary_op) h->summary_op = vg_summary_merge_all(g);
    h->global_step = vg_get_or_create_global_step(g);
    if (!h->global_step.op) return vg_graph_status(g, st) ? st->code : VG_INTERNAL;
    return VG_OK;
}

static vg_code sae_after_create(void *p, vg_session *sess, vg_coord *coord, vg_status *st) {
    (void)sess;
    (void)coord;
    summary_at_end *h = p;
    if (!h->writer && h->log_dir) {
        h->writer = vg_file_writer_cache_get(h->log_dir, st);
        if (!h->writer) return st ? st->code : VG_INTERNAL;
    }
    return VG_OK;
}

static vg_code sae_end(void *p, vg_session *sess, vg_status *st) {
    summary_at_end *h = p;
    if (!sess) return VG_OK;
    if (h->summary_op.op) {
        vg_output fetch[2] = {h->global_step, h->summary_op};
        vg_tensor *out[2] = {NULL, NULL};
        vg_code rc = vg_session_run(sess, NULL, NULL, NULL, 0, fetch, out, 2, NULL, 0, NULL, st);
        if (rc == VG_OK && h->writer) {
            size_t len = 0;
            const char *bytes = vg_tensor_string(out[1], 0, &len);
            int64_t step = *(const int64_t *)vg_tensor_data(out[0]);
            rc = vg_file_writer_add_summary(h->writer, bytes, len, step, st);
        }
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        if (rc != VG_OK) return rc;
    }
    return h->writer ? vg_file_writer_flush(h->writer, st) : VG_OK;
}

vg_code vg_summary_at_end_hook(const char *log_dir, vg_file_writer *writer, vg_output summary_op, vg_hook *out,
                               vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!log_dir && !writer)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "One of log_dir or summary_writer should be used.");
    summary_at_end *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    if (log_dir) {
        size_t n = strlen(log_dir);
        h->log_dir = vg_malloc(n + 1);
        if (!h->log_dir) {
            vg_free(h);
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
        }
        memcpy(h->log_dir, log_dir, n + 1);
    }
    h->writer = writer;
    h->summary_op = summary_op;
    h->replace_summary_op = summary_op.op == NULL;
    out->name = "SummaryAtEndHook";
    out->destroy = sae_destroy;
    vg__hk_callbacks(out, sae_begin, sae_after_create, NULL, NULL, sae_end);
    out->payload = h;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* _evaluate_once */

static void free_hooks(const vg_hook *hooks, int n) {
    for (int i = 0; i < n; i++) {
        vg_hook h = hooks[i];
        vg_hook_free(&h);
    }
}

static void log_time(const char *what) {
    char buf[64];
    time_t now = time(NULL);
    struct tm tmv;
    localtime_r(&now, &tmv);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    vg_logf(VG_LOG_INFO, "%s evaluation at %s", what, buf);
}

/* The checks shared by evaluate_once and evaluate_repeatedly; NULL when o is fine. */
static const char *bad_options(vg_graph *g, const vg_evaluate_options *o, vg_tensor **final_values, bool need_path) {
    if (!g) return "g is NULL";
    if (need_path && !o->checkpoint_path) return "checkpoint_path is NULL";
    if (o->nhooks > 0 && !o->hooks) return "hooks is NULL with nhooks > 0";
    if (o->neval_ops < 0 || (o->neval_ops > 0 && !o->eval_ops)) return "eval_ops is NULL with neval_ops > 0";
    if (o->nfeeds < 0 || (o->nfeeds > 0 && (!o->feeds || !o->feed_values))) return "feeds or feed_values is NULL";
    if (o->nfinal_ops < 0 || (o->nfinal_ops > 0 && (!o->final_ops || !final_values)))
        return "final_ops or final_values is NULL with nfinal_ops > 0";
    if (o->nfinal_feeds < 0 || (o->nfinal_feeds > 0 && (!o->final_feeds || !o->final_feed_values)))
        return "final_feeds or final_feed_values is NULL";
    return NULL;
}

/* eval_ops + [update_eval_step] (the AssignAdd of "eval_step"), handing the
 * _StopAfterNEvalsHook hooks the counter read after the eval ops. *targets is
 * allocated (NULL without eval ops). */
static vg_code prepare_eval(vg_graph *g, const vg_evaluate_options *o, const vg_hook *hooks, int nhooks,
                            vg_op ***targets_out, int *ntargets_out, vg_status *st) {
    vg_op **targets = NULL;
    int ntargets = 0;
    vg_output eval_step = vg_get_or_create_eval_step(g);
    if (eval_step.op && o->neval_ops > 0) {
        targets = vg_calloc((size_t)o->neval_ops + 1, sizeof(vg_op *));
        if (!targets) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in evaluation");
        for (int i = 0; i < o->neval_ops; i++) targets[ntargets++] = o->eval_ops[i];
        /* update_eval_step = state_ops.assign_add(eval_step, 1, use_locking=True) */
        vg_op_builder *b = vg_op_builder_new(g, "AssignAdd", "AssignAdd");
        vg_op_builder_add_input(b, eval_step);
        vg_op_builder_add_input(b, vg_const_i64(g, 1, "AssignAdd/value"));
        vg_op_builder_set_attr_bool(b, "use_locking", true);
        vg_op *update = vg_op_builder_finish(b);
        if (update) targets[ntargets++] = update;
        /* _get_latest_eval_step_value: identity(eval_step.read_value()) after the eval
         * ops. Read through the AssignAdd's output: vigil's executor hands a reader the
         * variable's value as of when the VariableV2 op ran, not after a later in-place
         * update in the same run, so a plain read could be one behind. */
        vg_graph_push_control_deps(g, targets, ntargets);
        vg_output value = vg_identity(g, update ? vg_out(update, 0) : eval_step, "Identity");
        vg_graph_pop_control_deps(g);
        for (int i = 0; i < nhooks; i++)
            if (hooks[i].before_run == se_before && hooks[i].payload)
                ((stop_evals *)hooks[i].payload)->evals_completed = value;
    }
    *targets_out = targets;
    *ntargets_out = ntargets;
    if (vg_graph_status(g, st) != VG_OK) {
        vg_free(targets);
        *targets_out = NULL;
        return st ? st->code : vg_graph_status(g, NULL);
    }
    return VG_OK;
}

/* One evaluation of checkpoint_path: a MonitoredSession (ChiefSessionCreator) with the
 * user's hooks, borrowed (the monitored session gets copies without destroy, so that
 * evaluate_repeatedly can hand them to the next session as TF hands the same hook
 * objects), and a FinalOpsHook of its own; the eval ops until should_stop. */
static vg_code run_eval(vg_graph *g, const vg_evaluate_options *o, const char *checkpoint_path, const vg_hook *user,
                        int nuser, vg_op **targets, int ntargets, vg_tensor **final_values, vg_status *st) {
    for (int i = 0; i < o->nfinal_ops; i++) final_values[i] = NULL;
    vg_hook *hooks = vg_calloc((size_t)nuser + 1, sizeof(vg_hook));
    if (!hooks) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in evaluation");
    for (int i = 0; i < nuser; i++) {
        hooks[i] = user[i];
        hooks[i].destroy = NULL; /* borrowed */
    }
    int nhooks = nuser;
    log_time("Starting");
    vg_session_creator_options co = {0};
    co.scaffold = o->scaffold;
    co.config = o->config;
    co.checkpoint_filename_with_path = checkpoint_path;
    vg_monitored_options mo = {0};
    vg_code rc = vg_chief_session_creator(g, &co, &mo.creator, st);
    if (rc != VG_OK) {
        vg_free(hooks);
        return rc;
    }
    vg_final_ops_options fo = {0};
    fo.final_ops = o->final_ops;
    fo.nfinal_ops = o->nfinal_ops;
    fo.feeds = o->final_feeds;
    fo.feed_values = o->final_feed_values;
    fo.nfeeds = o->nfinal_feeds;
    rc = vg_final_ops_hook(&fo, &hooks[nhooks], st);
    if (rc != VG_OK) {
        if (mo.creator.destroy) mo.creator.destroy(mo.creator.payload);
        vg_free(hooks);
        return rc;
    }
    vg_hook final_hook = hooks[nhooks++];
    mo.hooks = hooks;
    mo.nhooks = nhooks;
    vg_monitored_session *ms = vg_monitored_session_new(g, &mo, st); /* owns the final hook now */
    vg_free(hooks);
    if (!ms) return st ? st->code : VG_INTERNAL;
    vg_code loop = VG_OK;
    if (ntargets > 0) {
        vg_run_args a = {0};
        a.targets = targets;
        a.ntargets = ntargets;
        a.feeds = o->feeds;
        a.feed_values = o->feed_values;
        a.nfeeds = o->nfeeds;
        while (!vg_monitored_session_should_stop(ms)) {
            loop = vg_monitored_session_run(ms, &a, NULL, NULL, st);
            if (loop != VG_OK) break;
        }
    }
    rc = vg_monitored_session_end(ms, loop, st);
    if (rc == VG_OK) {
        int n = 0;
        vg_tensor *const *vals = vg_final_ops_hook_values(&final_hook, &n);
        for (int i = 0; i < o->nfinal_ops && i < n; i++) final_values[i] = vals[i] ? vg_tensor_ref(vals[i]) : NULL;
        log_time("Finished");
    }
    vg_monitored_session_free(ms);
    return rc;
}

/* The checks evaluate_once and evaluate_repeatedly (what; once for the first) begin
 * with: INVALID_ARGUMENT for NULL options, or bad ones (the user's hooks then freed;
 * no_dir: repeatedly's NULL checkpoint_dir). Otherwise the user's hooks in *user_hooks,
 * *nuser, and final_values cleared. */
static vg_code eval_begin(vg_graph *g, const char *what, const vg_evaluate_options *o, bool once, bool no_dir,
                          vg_tensor **final_values, const vg_hook **user_hooks, int *nuser, vg_status *st) {
    if (!o) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: options are NULL", what);
    *user_hooks = o->nhooks > 0 ? o->hooks : NULL;
    *nuser = *user_hooks ? o->nhooks : 0;
    const char *bad = bad_options(g, o, final_values, once);
    if (!bad && no_dir) bad = "checkpoint_dir is NULL";
    if (bad) {
        free_hooks(*user_hooks, *nuser);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s", what, bad);
    }
    for (int i = 0; i < o->nfinal_ops; i++) final_values[i] = NULL;
    return VG_OK;
}

vg_code vg_evaluate_once(vg_graph *g, const vg_evaluate_options *o, vg_tensor **final_values, vg_status *st) {
    const vg_hook *user_hooks;
    int nuser;
    vg_code rc = eval_begin(g, "evaluate_once", o, true, false, final_values, &user_hooks, &nuser, st);
    if (rc != VG_OK) return rc;
    vg_op **targets = NULL;
    int ntargets = 0;
    rc = prepare_eval(g, o, user_hooks, nuser, &targets, &ntargets, st);
    if (rc == VG_OK) rc = run_eval(g, o, o->checkpoint_path, user_hooks, nuser, targets, ntargets, final_values, st);
    free_hooks(user_hooks, nuser);
    vg_free(targets);
    return rc;
}

static double now_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_secs(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* checkpoints_iterator's wait_for_new_checkpoint: polls every second until the newest
 * checkpoint of dir differs from last; false when timeout (< 0: none) passes first. */
static bool wait_for_new_checkpoint(const char *dir, const char *last, double timeout, char *buf, size_t len) {
    double stop = timeout >= 0 ? now_secs() + timeout : -1;
    vg_logf(VG_LOG_INFO, "Waiting for new checkpoint at %s", dir);
    for (;;) {
        const char *p = vg_latest_checkpoint(dir, buf, len);
        if (p && (!last || strcmp(p, last) != 0)) {
            vg_logf(VG_LOG_INFO, "Found new checkpoint at %s", p);
            return true;
        }
        if (stop >= 0 && now_secs() + 1.0 > stop) return false;
        sleep_secs(1.0);
    }
}

vg_code vg_evaluate_repeatedly(vg_graph *g, const char *checkpoint_dir, const vg_evaluate_options *o,
                               double eval_interval_secs, int64_t max_number_of_evaluations, double timeout,
                               vg_tensor **final_values, int64_t *num_evaluations, vg_status *st) {
    if (num_evaluations) *num_evaluations = 0;
    const vg_hook *user_hooks;
    int nuser;
    vg_code rc = eval_begin(g, "evaluate_repeatedly", o, false, !checkpoint_dir, final_values, &user_hooks, &nuser,
                            st);
    if (rc != VG_OK) return rc;
    vg_op **targets = NULL;
    int ntargets = 0;
    rc = prepare_eval(g, o, user_hooks, nuser, &targets, &ntargets, st);
    char last[4096] = "", path[4096];
    int64_t n = 0;
    while (rc == VG_OK) {
        if (!wait_for_new_checkpoint(checkpoint_dir, last[0] ? last : NULL, timeout, path, sizeof path)) {
            vg_logf(VG_LOG_INFO, "Timed-out waiting for a checkpoint.");
            break;
        }
        double start = now_secs();
        snprintf(last, sizeof last, "%s", path);
        for (int i = 0; i < o->nfinal_ops; i++) {
            vg_tensor_free(final_values[i]);
            final_values[i] = NULL;
        }
        rc = run_eval(g, o, path, user_hooks, nuser, targets, ntargets, final_values, st);
        if (rc != VG_OK) break;
        n++;
        if (max_number_of_evaluations > 0 && n >= max_number_of_evaluations) break;
        double wait = start + eval_interval_secs - now_secs();
        if (wait > 0) sleep_secs(wait);
    }
    if (num_evaluations) *num_evaluations = n;
    if (rc != VG_OK)
        for (int i = 0; i < o->nfinal_ops; i++) {
            vg_tensor_free(final_values[i]);
            final_values[i] = NULL;
        }
    free_hooks(user_hooks, nuser);
    vg_free(targets);
    return rc;
}
