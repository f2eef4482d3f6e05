/* logging_hooks.c - LoggingTensorHook and StepCounterHook (TF 1.15). */
#include "hooks_internal.h"
#include <stdatomic.h>

/* StepCounterHook's "has not been increased" warnings logged by this process */
static atomic_int g_not_increased_warnings;

/* ------------------------------------------------------------------------ */
/* LoggingTensorHook */
typedef struct log_hook {
    vg_logging_tensor_options o;
    vg_output *tensors;
    char **names;
    vg_timer timer;
    bool use_timer;
    int64_t iter;
    bool should_trigger;
} log_hook;

static void lh_destroy(void *p) {
    log_hook *h = p;
    if (!h) return;
    for (int i = 0; h->names && i < h->o.ntensors; i++) vg_free(h->names[i]);
    vg_free(h->names);
    vg_free(h->tensors);
    vg_free(h);
}

static void format_value(const vg_tensor *t, char *buf, size_t len) {
    size_t o = 0;
    int64_t n = vg_tensor_num_elements(t);
    bool vec = vg_tensor_ndims(t) > 0;
    if (vec) o += (size_t)snprintf(buf + o, len - o, "[");
    for (int64_t i = 0; i < n && o < len && i < 16; i++) {
        const char *sep = i ? " " : "";
        switch (vg_tensor_dtype(t)) {
        case VG_FLOAT: o += (size_t)snprintf(buf + o, len - o, "%s%.8g", sep, ((const float *)vg_tensor_data(t))[i]); break;
        case VG_DOUBLE: o += (size_t)snprintf(buf + o, len - o, "%s%.17g", sep, ((const double *)vg_tensor_data(t))[i]); break;
        case VG_INT32: o += (size_t)snprintf(buf + o, len - o, "%s%d", sep, ((const int32_t *)vg_tensor_data(t))[i]); break;
        case VG_INT64: o += (size_t)snprintf(buf + o, len - o, "%s%lld", sep, (long long)((const int64_t *)vg_tensor_data(t))[i]); break;
        case VG_BOOL: o += (size_t)snprintf(buf + o, len - o, "%s%s", sep, ((const bool *)vg_tensor_data(t))[i] ? "True" : "False"); break;
        case VG_UINT8: o += (size_t)snprintf(buf + o, len - o, "%s%u", sep, ((const uint8_t *)vg_tensor_data(t))[i]); break;
        case VG_STRING: {
            size_t sl;
            const char *s = vg_tensor_string(t, i, &sl);
            o += (size_t)snprintf(buf + o, len - o, "%s%.*s", sep, (int)sl, s);
            break;
        }
        default: break;
        }
    }
    if (n > 16 && o < len) o += (size_t)snprintf(buf + o, len - o, " ...");
    if (vec && o < len) snprintf(buf + o, len - o, "]");
}

static void emit(log_hook *h, const char *line) {
    if (h->o.sink) h->o.sink(h->o.sink_payload, line);
    else vg_logf(VG_LOG_INFO, "%s", line);
}

static void log_values(log_hook *h, vg_tensor *const *vals, bool timed) {
    char line[2048];
    size_t o = 0;
    line[0] = 0;
    double elapsed = 0;
    bool known = false;
    if (timed) {
        known = vg_timer_last_triggered_step(&h->timer) >= 0;
        vg_timer_update_last_triggered_step(&h->timer, h->iter, &elapsed, NULL);
    }
    if (h->o.formatter) {
        h->o.formatter(h->o.formatter_payload, (const char *const *)h->names, vals, h->o.ntensors, line, sizeof line);
    } else {
        for (int i = 0; i < h->o.ntensors && o < sizeof line; i++) {
            char v[512];
            format_value(vals[i], v, sizeof v);
            o += (size_t)snprintf(line + o, sizeof line - o, "%s%s = %s", i ? ", " : "", h->names[i], v);
        }
        if (known && o < sizeof line) snprintf(line + o, sizeof line - o, " (%.3f sec)", elapsed);
    }
    emit(h, line);
}

static vg_code lh_begin(void *p, vg_graph *g, vg_status *st) {
    log_hook *h = p;
    vg_timer_reset(&h->timer);
    h->iter = 0;
    return VG_OK;
}
static vg_code lh_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    log_hook *h = p;
    h->should_trigger = h->use_timer && vg_timer_should_trigger_for_step(&h->timer, h->iter);
    if (h->should_trigger) {
        args->fetches = h->tensors;
        args->nfetches = h->o.ntensors;
    }
    return VG_OK;
}
static vg_code lh_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    log_hook *h = p;
    if (h->should_trigger) log_values(h, v->results, true);
    h->iter++;
    return VG_OK;
}
static vg_code lh_end(void *p, vg_session *sess, vg_status *st) {
    log_hook *h = p;
    if (!h->o.at_end || !sess) return VG_OK;
    vg_tensor **vals = vg_calloc((size_t)h->o.ntensors + 1, sizeof(vg_tensor *));
    if (!vals) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    vg_code rc = vg_session_run(sess, NULL, NULL, NULL, 0, h->tensors, vals, h->o.ntensors, NULL, 0, NULL, st);
    /* TF's _log_tensors updates the timer here too: with every_n_* the end line shows
     * the time since the last periodic line (at_end alone: NeverTriggerTimer, none). */
    if (rc == VG_OK) log_values(h, vals, h->use_timer);
    for (int i = 0; i < h->o.ntensors; i++) vg_tensor_free(vals[i]);
    vg_free(vals);
    return rc;
}

vg_code vg_logging_tensor_hook(const vg_logging_tensor_options *o, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!o) return vg_status_set(st, VG_INVALID_ARGUMENT, "logging tensor options are NULL");
    /* every_n_iter 0 / every_n_secs <= 0: TF's None */
    bool iter = o->every_n_iter != 0, secs = o->every_n_secs > 0;
    bool only_end = o->every_n_iter == 0 && o->every_n_secs <= 0 && o->at_end;
    if (!only_end && (iter == secs))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.");
    if (o->every_n_iter < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "invalid every_n_iter=%lld.", (long long)o->every_n_iter);
    if (o->ntensors <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "LoggingTensorHook needs tensors");
    log_hook *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    h->o = *o;
    h->tensors = vg_calloc((size_t)o->ntensors, sizeof(vg_output));
    h->names = vg_calloc((size_t)o->ntensors, sizeof(char *));
    if (!h->tensors || !h->names) goto oom;
    for (int i = 0; i < o->ntensors; i++) {
        h->tensors[i] = o->tensors[i];
        char nm[1100];
        if (o->names && o->names[i]) snprintf(nm, sizeof nm, "%s", o->names[i]);
        else snprintf(nm, sizeof nm, "%s:%d", vg_op_name(o->tensors[i].op), o->tensors[i].index);
        if (!(h->names[i] = vg__hk_strdup(nm))) goto oom;
    }
    h->o.tensors = NULL;
    h->o.names = NULL;
    h->use_timer = !only_end;
    if (h->use_timer) vg_timer_init(&h->timer, secs ? o->every_n_secs : -1, secs ? -1 : o->every_n_iter, NULL);
    else vg_timer_reset(&h->timer);
    *out = vg__hk_make("LoggingTensorHook", h, lh_destroy);
    vg__hk_callbacks(out, lh_begin, NULL, lh_before, lh_after, lh_end);
    return VG_OK;
oom:
    lh_destroy(h);
    return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
}

/* ------------------------------------------------------------------------ */
/* StepCounterHook */
typedef struct step_counter {
    vg_timer timer;
    char *output_dir;
    vg_file_writer *writer;
    vg_graph *g;
    vg_output read;
    char tag[1100];
    int64_t steps_per_run;
    int64_t last_stale;
    bool have_last;
} step_counter;

static void sc_destroy(void *p) {
    step_counter *h = p;
    vg__hk_free_with(h, h ? h->output_dir : NULL);
}

static vg_code sc_begin(void *p, vg_graph *g, vg_status *st) {
    step_counter *h = p;
    h->g = g;
    if (!h->writer && h->output_dir && !(h->writer = vg_file_writer_cache_get(h->output_dir, st)))
        return st ? st->code : VG_UNKNOWN;
    vg_code rc = vg__global_step_read(g, "StepCounterHook", &h->read, st);
    if (rc != VG_OK) return rc;
    snprintf(h->tag, sizeof h->tag, "%s/sec", vg_op_name(vg_get_global_step(g).op));
    return VG_OK;
}
static vg_code sc_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    step_counter *h = p;
    return vg__hk_fetch_one(args, &h->read);
}
static vg_code sc_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    step_counter *h = p;
    int64_t stale = vg__tensor_i64(v->results[0]), step;
    bool fire;
    vg_code rc = vg__hk_step_trigger(&h->timer, stale, h->steps_per_run, ctx, h->g, &step, &fire, st);
    if (rc != VG_OK) return rc;
    if (fire) {
        bool first = vg_timer_last_triggered_step(&h->timer) < 0;
        double secs;
        int64_t steps;
        vg_timer_update_last_triggered_step(&h->timer, step, &secs, &steps);
        if (!first && secs > 0) {
            double rate = (double)steps / secs;
            if (h->writer) {
                rc = vg_file_writer_add_scalar(h->writer, h->tag, rate, step, st);
                if (rc != VG_OK) return rc;
            }
            vg_logf(VG_LOG_INFO, "%s: %g", h->tag, rate);
        }
    }
    /* logging.log_first_n(logging.WARN, ..., 5): the first 5 times in the process (a
     * counter per call site, never reset), whatever the hook or session */
    if (h->have_last && stale == h->last_stale && atomic_load(&g_not_increased_warnings) < 5 &&
        atomic_fetch_add(&g_not_increased_warnings, 1) < 5)
        vg_logf(VG_LOG_WARN, "It seems that global step (tf.train.get_global_step) has not been increased. "
                             "Current value (could be stable): %lld vs previous value: %lld. You could increase "
                             "the global step by passing tf.train.get_global_step() to Optimizer.apply_gradients "
                             "or Optimizer.minimize.", (long long)stale, (long long)h->last_stale);
    h->last_stale = stale;
    h->have_last = true;
    return VG_OK;
}

vg_code vg_step_counter_hook(const vg_step_counter_options *o, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    vg_step_counter_options def = {0};
    if (!o) o = &def;
    /* TF's every_n_steps=100 stands when every_n_steps is 0 and no every_n_secs is
     * given; a negative every_n_steps is an explicit None */
    int64_t every_n_steps = o->every_n_steps;
    double every_n_secs = o->every_n_secs;
    if (every_n_steps == 0 && every_n_secs <= 0) every_n_steps = 100;
    const char *output_dir = o->output_dir;
    vg_file_writer *summary_writer = o->summary_writer;
    if ((every_n_steps > 0) == (every_n_secs > 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "exactly one of every_n_steps and every_n_secs should be provided.");
    step_counter *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    vg_timer_init(&h->timer, every_n_secs, every_n_steps, NULL);
    h->writer = summary_writer;
    h->steps_per_run = 1;
    if (output_dir && !(h->output_dir = vg__hk_strdup(output_dir))) {
        sc_destroy(h);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    *out = vg__hk_make("StepCounterHook", h, sc_destroy);
    vg__hk_callbacks(out, sc_begin, NULL, sc_before, sc_after, NULL);
    return VG_OK;
}
