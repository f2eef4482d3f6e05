/*
 * evaluation.c - TF 1.15's python/training/evaluation.py on the public API:
 * _get_or_create_eval_step, _StopAfterNEvalsHook and _evaluate_once (a MonitoredSession
 * with a ChiefSessionCreator restoring one checkpoint, the eval ops run until a hook
 * stops it, a FinalOpsHook for the results).
 */
#include "vigil/evaluation.h"
#include "vigil/hooks.h"
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
    args->fetches = &h->evals_completed;
    args->nfetches = 1;
    return VG_OK;
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
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "out (the hook to fill) is NULL");
    memset(out, 0, sizeof *out);
    if (num_evals < -1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "_StopAfterNEvalsHook: num_evals must be >= 0 or -1 (None), got %lld",
                             (long long)num_evals);
    stop_evals *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    h->num_evals = num_evals;
    h->log_progress = log_progress;
    /* Reduce logging frequency if there are 20 or more evaluations. */
    h->log_frequency = num_evals < 20 ? 1 : (int64_t)floor((double)num_evals / 10.0);
    out->name = "_StopAfterNEvalsHook";
    out->before_run = se_before;
    out->after_run = se_after;
    out->destroy = vg_free;
    out->payload = h;
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
    if (!h) return;
    vg_free(h->log_dir);
    vg_free(h);
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
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "out (the hook to fill) is NULL");
    memset(out, 0, sizeof *out);
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
    out->begin = sae_begin;
    out->after_create_session = sae_after_create;
    out->end = sae_end;
    out->destroy = sae_destroy;
    out->payload = h;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* _evaluate_once */

vg_evaluate_options vg_evaluate_options_default(void) {
    vg_evaluate_options o = VG_EVALUATE_OPTIONS_INIT;
    return o;
}

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

vg_code vg_evaluate_once(vg_graph *g, const vg_evaluate_options *o, vg_tensor **final_values, vg_status *st) {
    if (!o) return vg_status_set(st, VG_INVALID_ARGUMENT, "evaluate_once: options are NULL");
    const vg_hook *user_hooks = o->nhooks > 0 ? o->hooks : NULL;
    int nuser = user_hooks ? o->nhooks : 0;
    const char *bad = NULL;
    if (!g) bad = "g is NULL";
    else if (!o->checkpoint_path) bad = "checkpoint_path is NULL";
    else if (o->nhooks > 0 && !o->hooks) bad = "hooks is NULL with nhooks > 0";
    else if (o->neval_ops < 0 || (o->neval_ops > 0 && !o->eval_ops)) bad = "eval_ops is NULL with neval_ops > 0";
    else if (o->nfeeds < 0 || (o->nfeeds > 0 && (!o->feeds || !o->feed_values))) bad = "feeds or feed_values is NULL";
    else if (o->nfinal_ops < 0 || (o->nfinal_ops > 0 && (!o->final_ops || !final_values)))
        bad = "final_ops or final_values is NULL with nfinal_ops > 0";
    else if (o->nfinal_feeds < 0 || (o->nfinal_feeds > 0 && (!o->final_feeds || !o->final_feed_values)))
        bad = "final_feeds or final_feed_values is NULL";
    if (bad) {
        free_hooks(user_hooks, nuser);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "evaluate_once: %s", bad);
    }
    for (int i = 0; i < o->nfinal_ops; i++) final_values[i] = NULL;

    vg_code rc = VG_OK;
    vg_op **targets = NULL;
    vg_hook *hooks = vg_calloc((size_t)nuser + 1, sizeof(vg_hook));
    if (!hooks) {
        free_hooks(user_hooks, nuser);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in evaluate_once");
    }
    if (nuser) memcpy(hooks, user_hooks, sizeof(vg_hook) * (size_t)nuser);
    int nhooks = nuser;

    vg_output eval_step = vg_get_or_create_eval_step(g);
    int ntargets = 0;
    if (eval_step.op && o->neval_ops > 0) {
        targets = vg_calloc((size_t)o->neval_ops + 1, sizeof(vg_op *));
        if (!targets) {
            rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in evaluate_once");
            goto fail_hooks;
        }
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
    if (vg_graph_status(g, st) != VG_OK) {
        rc = st ? st->code : vg_graph_status(g, NULL);
        goto fail_hooks;
    }
    log_time("Starting");

    vg_session_creator_options co = vg_session_creator_options_default();
    co.scaffold = o->scaffold;
    co.config = o->config;
    co.checkpoint_filename_with_path = o->checkpoint_path;
    vg_monitored_options mo = vg_monitored_options_default();
    rc = vg_chief_session_creator(g, &co, &mo.creator, st);
    if (rc != VG_OK) goto fail_hooks;
    vg_final_ops_options fo = vg_final_ops_options_default();
    fo.final_ops = o->final_ops;
    fo.nfinal_ops = o->nfinal_ops;
    fo.feeds = o->final_feeds;
    fo.feed_values = o->final_feed_values;
    fo.nfeeds = o->nfinal_feeds;
    rc = vg_final_ops_hook(&fo, &hooks[nhooks], st);
    if (rc != VG_OK) {
        if (mo.creator.destroy) mo.creator.destroy(mo.creator.payload);
        goto fail_hooks;
    }
    vg_hook final_hook = hooks[nhooks++];
    mo.hooks = hooks;
    mo.nhooks = nhooks;
    vg_monitored_session *ms = vg_monitored_session_new(g, &mo, st); /* owns the hooks now */
    vg_free(hooks);
    hooks = NULL;
    if (!ms) {
        rc = st ? st->code : VG_INTERNAL;
        goto done;
    }
    vg_code loop = VG_OK;
    if (ntargets > 0) {
        vg_run_args a = vg_run_args_default();
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
    goto done;
fail_hooks:
    free_hooks(hooks, nhooks);
    vg_free(hooks);
done:
    vg_free(targets);
    return rc;
}
