/* basic_hooks.c - StopAtStepHook, NanTensorHook, FeedFnHook, FinalOpsHook,
 * GlobalStepWaiterHook (TF 1.15 basic_session_run_hooks.py). */
#include "hooks_internal.h"
#include <math.h>
#include <time.h>

/* ------------------------------------------------------------------------ */
/* StopAtStepHook */
typedef struct stop_at_step {
    int64_t num_steps, last_step; /* -1 unset */
    vg_graph *g;
    vg_output read;
} stop_at_step;

static vg_code sas_begin(void *p, vg_graph *g, vg_status *st) {
    stop_at_step *h = p;
    h->g = g;
    return vg__global_step_read(g, "StopAtStepHook", &h->read, st);
}
static vg_code sas_after_create(void *p, vg_session *sess, vg_coord *coord, vg_status *st) {
    stop_at_step *h = p;
    if (h->last_step >= 0) return VG_OK; /* computed on the first session only */
    int64_t step;
    vg_code rc = vg__global_step_value(sess, h->g, &step, st);
    if (rc == VG_OK) h->last_step = step + h->num_steps;
    return rc;
}
static vg_code sas_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    stop_at_step *h = p;
    return vg__hk_fetch_one(args, &h->read);
}
static vg_code sas_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    stop_at_step *h = p;
    int64_t stale = vg__tensor_i64(v->results[0]);
    if (stale + 1 >= h->last_step) {
        int64_t step;
        vg_code rc = vg__global_step_value(vg_run_context_session(ctx), h->g, &step, st);
        if (rc != VG_OK) return rc;
        if (step >= h->last_step) vg_run_context_request_stop(ctx);
    }
    return VG_OK;
}

vg_code vg_stop_at_step_hook(int64_t num_steps, int64_t last_step, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (num_steps < 0 && last_step < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "One of num_steps or last_step must be specified.");
    if (num_steps >= 0 && last_step >= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Only one of num_steps or last_step can be specified.");
    stop_at_step *h = vg__hk_new(out, "StopAtStepHook", sizeof *h, vg_free, st);
    if (!h) return VG_RESOURCE_EXHAUSTED;
    h->num_steps = num_steps;
    h->last_step = last_step;
    vg__hk_callbacks(out, sas_begin, sas_after_create, sas_before, sas_after, NULL);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* NanTensorHook */
typedef struct nan_hook {
    vg_output loss;
    bool fail;
} nan_hook;

static vg_code nan_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    nan_hook *h = p;
    return vg__hk_fetch_one(args, &h->loss);
}
static vg_code nan_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    nan_hook *h = p;
    if (!isnan(vg_tensor_scalar(v->results[0]))) return VG_OK;
    if (h->fail) {
        vg_logf(VG_LOG_ERROR, "Model diverged with loss = NaN.");
        return vg_status_set(st, VG_FAILED_PRECONDITION, "NaN loss during training.");
    }
    vg_logf(VG_LOG_WARN, "Model diverged with loss = NaN.");
    vg_run_context_request_stop(ctx);
    return VG_OK;
}

vg_code vg_nan_tensor_hook(vg_output loss, bool fail_on_nan_loss, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!loss.op) return vg_status_set(st, VG_INVALID_ARGUMENT, "NanTensorHook needs a loss tensor");
    nan_hook *h = vg__hk_new(out, "NanTensorHook", sizeof *h, vg_free, st);
    if (!h) return VG_RESOURCE_EXHAUSTED;
    h->loss = loss;
    h->fail = fail_on_nan_loss;
    vg__hk_callbacks(out, NULL, NULL, nan_before, nan_after, NULL);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* FeedFnHook */
typedef struct feed_fn_hook {
    vg_feed_fn fn;
    void *payload;
} feed_fn_hook;

static vg_code ff_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    feed_fn_hook *h = p;
    return h->fn(h->payload, &args->feeds, &args->feed_values, &args->nfeeds, st);
}

vg_code vg_feed_fn_hook(vg_feed_fn fn, void *payload, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!fn) return vg_status_set(st, VG_INVALID_ARGUMENT, "FeedFnHook needs a feed function");
    feed_fn_hook *h = vg__hk_new(out, "FeedFnHook", sizeof *h, vg_free, st);
    if (!h) return VG_RESOURCE_EXHAUSTED;
    h->fn = fn;
    h->payload = payload;
    out->before_run = ff_before;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* FinalOpsHook */
typedef struct final_ops {
    vg_output *ops;
    int n;
    vg_output *feeds;
    vg_tensor **feed_vals;
    int nfeeds;
    vg_tensor **values; /* NULL until end() */
} final_ops;

static void fo_destroy(void *p) {
    final_ops *h = p;
    if (!h) return;
    if (h->values)
        for (int i = 0; i < h->n; i++) vg_tensor_free(h->values[i]);
    for (int i = 0; i < h->nfeeds; i++) vg_tensor_free(h->feed_vals[i]);
    vg_free(h->values);
    vg_free(h->ops);
    vg_free(h->feeds);
    vg_free(h->feed_vals);
    vg_free(h);
}

static vg_code fo_end(void *p, vg_session *sess, vg_status *st) {
    final_ops *h = p;
    if (!sess || h->n == 0) return VG_OK;
    vg_tensor **vals = vg_calloc((size_t)h->n, sizeof(vg_tensor *));
    if (!vals) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    vg_code rc = vg_session_run(sess, NULL, h->feeds, h->feed_vals, h->nfeeds, h->ops, vals, h->n, NULL, 0, NULL, st);
    if (rc != VG_OK) {
        vg_free(vals);
        if (rc == VG_OUT_OF_RANGE)
            vg_logf(VG_LOG_WARN, "An OutOfRangeError or StopIteration exception is raised by the code in "
                                 "FinalOpsHook. This typically means the Ops running by the FinalOpsHook have a "
                                 "dependency back to some input source, which should not happen.");
        return rc;
    }
    if (h->values)
        for (int i = 0; i < h->n; i++) vg_tensor_free(h->values[i]);
    vg_free(h->values);
    h->values = vals;
    return VG_OK;
}

vg_code vg_final_ops_hook(const vg_final_ops_options *o, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!o) return vg_status_set(st, VG_INVALID_ARGUMENT, "final ops options are NULL");
    const vg_output *ops = o->final_ops, *feeds = o->feeds;
    vg_tensor *const *feed_values = o->feed_values;
    int n = o->nfinal_ops, nfeeds = o->nfeeds;
    if (n < 0 || nfeeds < 0 || (n > 0 && !ops) || (nfeeds > 0 && (!feeds || !feed_values)))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "FinalOpsHook: a NULL array with a count > 0 (or a negative count)");
    final_ops *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    h->n = n;
    h->nfeeds = nfeeds;
    h->ops = vg_calloc((size_t)(n + 1), sizeof(vg_output));
    h->feeds = vg_calloc((size_t)(nfeeds + 1), sizeof(vg_output));
    h->feed_vals = vg_calloc((size_t)(nfeeds + 1), sizeof(vg_tensor *));
    if (!h->ops || !h->feeds || !h->feed_vals) {
        h->nfeeds = 0;
        fo_destroy(h);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    for (int i = 0; i < n; i++) h->ops[i] = ops[i];
    for (int i = 0; i < nfeeds; i++) {
        h->feeds[i] = feeds[i];
        h->feed_vals[i] = vg_tensor_ref(feed_values[i]);
    }
    *out = vg__hk_make("FinalOpsHook", h, vg_free);
    out->destroy = fo_destroy;
    out->end = fo_end;
    return VG_OK;
}

vg_tensor *const *vg_final_ops_hook_values(const vg_hook *hk, int *n) {
    int tmp;
    if (!n) n = &tmp; /* optional */
    *n = 0;
    if (!hk || !hk->payload) return NULL;
    final_ops *h = hk->payload;
    *n = h->values ? h->n : 0;
    return h->values;
}

/* ------------------------------------------------------------------------ */
/* GlobalStepWaiterHook */
typedef struct waiter {
    int64_t wait_until;
    bool started;
    vg_graph *g;
    vg_output read;
} waiter;

static vg_code gw_begin(void *p, vg_graph *g, vg_status *st) {
    waiter *h = p;
    h->started = false;
    h->g = g;
    return vg__global_step_read(g, "GlobalStepWaiterHook", &h->read, st);
}
static vg_code gw_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    waiter *h = p;
    if (h->started) return VG_OK;
    if (h->wait_until <= 0) {
        h->started = true;
        return VG_OK;
    }
    vg_logf(VG_LOG_INFO, "Waiting for global step %lld before starting training.", (long long)h->wait_until);
    int64_t last_logged = 0;
    for (;;) {
        int64_t step;
        vg_code rc = vg__global_step_value(vg_run_context_session(ctx), h->g, &step, st);
        if (rc != VG_OK) return rc;
        if (step >= h->wait_until) break;
        if (step - last_logged > 1000) {
            vg_logf(VG_LOG_INFO, "Waiting for global step %lld before starting training. Current step is %lld.",
                    (long long)h->wait_until, (long long)step);
            last_logged = step;
        }
        if (vg_run_context_stop_requested(ctx)) return VG_OK;
        struct timespec ts = {0, 500000000L};
        nanosleep(&ts, NULL);
    }
    h->started = true;
    return VG_OK;
}

vg_code vg_global_step_waiter_hook(int64_t wait_until_step, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    waiter *h = vg__hk_new(out, "GlobalStepWaiterHook", sizeof *h, vg_free, st);
    if (!h) return VG_RESOURCE_EXHAUSTED;
    h->wait_until = wait_until_step;
    vg__hk_callbacks(out, gw_begin, NULL, gw_before, NULL, NULL);
    return VG_OK;
}
