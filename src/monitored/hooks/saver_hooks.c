/* saver_hooks.c - CheckpointSaverHook (with CheckpointSaverListener), SummarySaverHook
 * and ProfilerHook (TF 1.15 basic_session_run_hooks.py). */
#include "hooks_internal.h"
#include "vigil/graphdef.h"

#include <dirent.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* CheckpointSaverHook */
typedef struct ckpt_hook {
    vg_checkpoint_saver_options o;
    char *dir;
    char *save_path;
    vg_checkpoint_listener *listeners;
    int nlisteners;
    vg_timer timer;
    vg_file_writer *writer;
    vg_graph *g;
    vg_output read;
    int64_t steps_per_run;
} ckpt_hook;

static void ck_destroy(void *p) {
    ckpt_hook *h = p;
    if (!h) return;
    for (int i = 0; i < h->nlisteners; i++)
        if (h->listeners[i].destroy) h->listeners[i].destroy(h->listeners[i].payload);
    vg_free(h->listeners);
    vg_free(h->dir);
    vg_free(h->save_path);
    vg_free(h);
}

/* _get_saver: explicit saver, the scaffold's, or the single one of the "savers" collection. */
static vg_saver *get_saver(ckpt_hook *h, vg_status *st) {
    if (h->o.saver) return h->o.saver;
    if (h->o.scaffold) {
        vg_saver *s = vg_scaffold_saver(h->o.scaffold);
        if (!s)
            vg_status_set(st, VG_FAILED_PRECONDITION, "CheckpointSaverHook: the scaffold has no saver (it was not "
                                                      "finalized, or the graph has no variables)");
        return s;
    }
    int n;
    const vg_output *items = vg_graph_collection(h->g, VG_SAVERS, &n);
    if (n == 0) {
        vg_status_set(st, VG_FAILED_PRECONDITION, "No items in collection savers. Please add a saver to the "
                                                   "collection or provide a saver or scaffold.");
        return NULL;
    }
    if (n > 1) {
        vg_status_set(st, VG_FAILED_PRECONDITION, "More than one item in collection savers. Please indicate which "
                                                   "one to use by passing it to the constructor.");
        return NULL;
    }
    char key[1100];
    snprintf(key, sizeof key, "vigil.saver:%s", vg_op_name(items[0].op));
    vg_saver *s = vg_graph_user_data(h->g, key);
    if (!s) vg_status_set(st, VG_FAILED_PRECONDITION, "the savers collection holds an unknown saver");
    return s;
}

static vg_code ck_begin(void *p, vg_graph *g, vg_status *st) {
    ckpt_hook *h = p;
    h->g = g;
    if (!(h->writer = vg_file_writer_cache_get(h->dir, st))) return st ? st->code : VG_UNKNOWN;
    vg_code rc = vg__global_step_read(g, "CheckpointSaverHook", &h->read, st);
    for (int i = 0; rc == VG_OK && i < h->nlisteners; i++)
        if (h->listeners[i].begin) rc = h->listeners[i].begin(h->listeners[i].payload, st);
    return rc;
}

/* _save: listeners' before_save, saver.save, a CHECKPOINT session log, after_save. */
static vg_code ck_save(ckpt_hook *h, vg_session *sess, int64_t step, bool *stop, vg_status *st) {
    *stop = false;
    vg_code rc = VG_OK;
    vg_saver *saver = get_saver(h, st);
    if (!saver) return st ? st->code : VG_FAILED_PRECONDITION;
    if (h->nlisteners) vg_logf(VG_LOG_INFO, "Calling checkpoint listeners before saving checkpoint %lld...", (long long)step);
    for (int i = 0; rc == VG_OK && i < h->nlisteners; i++)
        if (h->listeners[i].before_save) rc = h->listeners[i].before_save(h->listeners[i].payload, sess, step, st);
    if (rc != VG_OK) return rc;
    vg_logf(VG_LOG_INFO, "Saving checkpoints for %lld into %s.", (long long)step, h->save_path);
    rc = vg_saver_save(saver, sess, h->save_path, step, NULL, 0, st);
    if (rc != VG_OK) return rc;
    rc = vg_file_writer_add_session_log(h->writer, VG_SESSION_LOG_CHECKPOINT, h->save_path, NULL, step, st);
    if (rc != VG_OK) return rc;
    if (h->nlisteners) vg_logf(VG_LOG_INFO, "Calling checkpoint listeners after saving checkpoint %lld...", (long long)step);
    for (int i = 0; rc == VG_OK && i < h->nlisteners; i++) {
        bool s = false;
        if (h->listeners[i].after_save) rc = h->listeners[i].after_save(h->listeners[i].payload, sess, step, &s, st);
        if (s) *stop = true;
    }
    return rc;
}

/* A run killed while writing graph.pbtxt leaves "graph.pbtxt.tempstate<hex>" behind
 * (also before its first checkpoint, when the saver has nothing to clean up after). Once
 * this run's graph.pbtxt is in place, any such file left in the directory is stale (only
 * the chief writes it) and is removed here. */
static void remove_stale_graph_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4400];
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "graph.pbtxt.tempstate", 21) != 0) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) == 0) vg_logf(VG_LOG_INFO, "Removed a stale temporary file: %s", p);
    }
    closedir(d);
}

static vg_code write_graph_files(ckpt_hook *h, vg_status *st) {
    char path[4200];
    char *text = NULL;
    size_t len = 0;
    vg_code rc = vg_graph_to_graphdef_text(h->g, &text, &len, st);
    if (rc != VG_OK) return rc;
    snprintf(path, sizeof path, "%s/graph.pbtxt", h->dir);
    rc = vg_write_file_atomic(path, text, len, st);
    vg_free(text);
    if (rc != VG_OK) return rc;
    remove_stale_graph_temps(h->dir);
    rc = vg_file_writer_add_graph(h->writer, h->g, 0, st); /* TF: no step */
    if (rc != VG_OK) return rc;
    vg_saver *saver = get_saver(h, st);
    if (!saver) return st ? st->code : VG_FAILED_PRECONDITION;
    char fname[1100], sname[1100];
    vg_output ft = vg_saver_filename_tensor(saver), stn = vg_saver_save_tensor(saver);
    snprintf(fname, sizeof fname, "%s:%d", vg_op_name(ft.op), ft.index);
    snprintf(sname, sizeof sname, "%s:%d", vg_op_name(stn.op), stn.index);
    vg_saver_def sd = {fname, sname, vg_op_name(vg_saver_restore_op(saver)), 5, true, 10000.0f};
    void *meta = NULL;
    rc = vg_graph_to_meta_graph(h->g, &sd, &meta, &len, st);
    if (rc != VG_OK) return rc;
    rc = vg_file_writer_add_meta_graph(h->writer, meta, len, 0, st);
    vg_free(meta);
    return rc;
}

static vg_code ck_after_create(void *p, vg_session *sess, vg_coord *coord, vg_status *st) {
    ckpt_hook *h = p;
    int64_t step;
    vg_code rc = vg__global_step_value(sess, h->g, &step, st);
    if (rc == VG_OK && !h->o.no_save_graph_def) rc = write_graph_files(h, st);
    bool stop;
    if (rc == VG_OK) rc = ck_save(h, sess, step, &stop, st);
    if (rc == VG_OK) vg_timer_update_last_triggered_step(&h->timer, step, NULL, NULL);
    return rc;
}
static vg_code ck_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    ckpt_hook *h = p;
    return vg__hk_fetch_one(args, &h->read);
}
static vg_code ck_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    ckpt_hook *h = p;
    int64_t step;
    bool fire;
    vg_code rc = vg__hk_step_trigger(&h->timer, vg__tensor_i64(v->results[0]), h->steps_per_run, ctx, h->g, &step,
                                     &fire, st);
    if (rc != VG_OK || !fire) return rc;
    vg_timer_update_last_triggered_step(&h->timer, step, NULL, NULL);
    bool stop;
    rc = ck_save(h, vg_run_context_session(ctx), step, &stop, st);
    if (rc == VG_OK && stop) vg_run_context_request_stop(ctx);
    return rc;
}
static vg_code ck_end(void *p, vg_session *sess, vg_status *st) {
    ckpt_hook *h = p;
    if (!sess) return VG_OK;
    int64_t step;
    vg_code rc = vg__global_step_value(sess, h->g, &step, st);
    bool stop;
    if (rc == VG_OK && step != vg_timer_last_triggered_step(&h->timer)) rc = ck_save(h, sess, step, &stop, st);
    for (int i = 0; rc == VG_OK && i < h->nlisteners; i++)
        if (h->listeners[i].end) rc = h->listeners[i].end(h->listeners[i].payload, sess, step, st);
    return rc;
}

vg_code vg_checkpoint_saver_hook(const vg_checkpoint_saver_options *o, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!o) return vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint saver options are NULL");
    vg_code rc = VG_OK;
    if (o->saver && o->scaffold) rc = vg_status_set(st, VG_INVALID_ARGUMENT, "You cannot provide both saver and scaffold.");
    vg_timer t;
    if (rc == VG_OK) rc = vg_timer_init(&t, o->save_secs, o->save_steps, st);
    if (rc == VG_OK && !o->checkpoint_dir) rc = vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint_dir is required");
    ckpt_hook *h = rc == VG_OK ? vg_calloc(1, sizeof *h) : NULL;
    if (rc == VG_OK && !h) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    if (rc != VG_OK) {
        for (int i = 0; i < o->nlisteners; i++)
            if (o->listeners[i].destroy) o->listeners[i].destroy(o->listeners[i].payload);
        return rc;
    }
    h->o = *o;
    h->timer = t;
    h->steps_per_run = 1;
    h->nlisteners = o->nlisteners;
    const char *base = o->checkpoint_basename ? o->checkpoint_basename : "model.ckpt";
    size_t n = strlen(o->checkpoint_dir) + strlen(base) + 2;
    h->dir = vg__hk_strdup(o->checkpoint_dir);
    h->save_path = vg_malloc(n);
    h->listeners = vg_calloc((size_t)o->nlisteners + 1, sizeof(vg_checkpoint_listener));
    if (h->listeners)
        for (int i = 0; i < o->nlisteners; i++) h->listeners[i] = o->listeners[i];
    else h->nlisteners = 0;
    h->o.listeners = NULL;
    if (!h->dir || !h->save_path || !h->listeners) {
        ck_destroy(h);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    snprintf(h->save_path, n, "%s/%s", o->checkpoint_dir, base);
    *out = vg__hk_make("CheckpointSaverHook", h, ck_destroy);
    vg__hk_callbacks(out, ck_begin, ck_after_create, ck_before, ck_after, ck_end);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* SummarySaverHook */
typedef struct summary_hook {
    vg_summary_saver_options o;
    char *dir;
    vg_file_writer *writer;
    vg_timer timer;
    vg_graph *g;
    vg_output read;
    int64_t next_step; /* -1: unknown (first run) */
    bool request;
    vg_output fetches[2];
} summary_hook;

static void sh_destroy(void *p) {
    summary_hook *h = p;
    vg__hk_free_with(h, h ? h->dir : NULL);
}

static vg_output summary_op(summary_hook *h) {
    if (h->o.summary_op.op) return h->o.summary_op;
    if (h->o.scaffold) return vg_scaffold_summary_op(h->o.scaffold);
    return (vg_output){NULL, 0};
}

static vg_code sh_begin(void *p, vg_graph *g, vg_status *st) {
    summary_hook *h = p;
    h->g = g;
    h->next_step = -1;
    if (!h->writer && h->dir && !(h->writer = vg_file_writer_cache_get(h->dir, st))) return st ? st->code : VG_UNKNOWN;
    return vg__global_step_read(g, "SummarySaverHook", &h->read, st);
}
static vg_code sh_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    summary_hook *h = p;
    h->request = h->next_step < 0 || vg_timer_should_trigger_for_step(&h->timer, h->next_step);
    h->fetches[0] = h->read;
    args->fetches = h->fetches;
    args->nfetches = 1;
    vg_output so = summary_op(h);
    if (h->request && so.op) {
        h->fetches[1] = so;
        args->nfetches = 2;
    }
    return VG_OK;
}
static vg_code sh_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    summary_hook *h = p;
    if (!h->writer) return VG_OK;
    int64_t step = vg__tensor_i64(v->results[0]) + 1;
    vg_code rc = VG_OK;
    if (h->next_step < 0 || h->request) {
        rc = vg__global_step_value(vg_run_context_session(ctx), h->g, &step, st);
        if (rc != VG_OK) return rc;
    }
    if (h->next_step < 0) rc = vg_file_writer_add_session_log(h->writer, VG_SESSION_LOG_START, NULL, NULL, step, st);
    if (rc == VG_OK && h->request) {
        vg_timer_update_last_triggered_step(&h->timer, step, NULL, NULL);
        if (v->nresults > 1) {
            size_t len;
            const char *s = vg_tensor_string(v->results[1], 0, &len);
            if (s) rc = vg_file_writer_add_summary(h->writer, s, len, step, st);
        }
    }
    h->next_step = step + 1;
    return rc;
}
static vg_code sh_end(void *p, vg_session *sess, vg_status *st) {
    summary_hook *h = p;
    return h->writer ? vg_file_writer_flush(h->writer, st) : VG_OK;
}

vg_code vg_summary_saver_hook(const vg_summary_saver_options *o, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!o) return vg_status_set(st, VG_INVALID_ARGUMENT, "summary saver options are NULL");
    if ((o->scaffold == NULL) == (o->summary_op.op == NULL))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Exactly one of scaffold or summary_op must be provided.");
    vg_timer t;
    vg_code rc = vg_timer_init(&t, o->save_secs, o->save_steps, st);
    if (rc != VG_OK) return rc;
    summary_hook *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    h->o = *o;
    h->timer = t;
    h->writer = o->summary_writer;
    if (o->output_dir && !(h->dir = vg__hk_strdup(o->output_dir))) {
        sh_destroy(h);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    *out = vg__hk_make("SummarySaverHook", h, sh_destroy);
    vg__hk_callbacks(out, sh_begin, NULL, sh_before, sh_after, sh_end);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* ProfilerHook */
typedef struct profiler_hook {
    vg_timer timer;
    char *dir;
    bool show_dataflow, show_memory;
    vg_file_writer *writer;
    vg_graph *g;
    vg_output read;
    int64_t next_step;
    bool request;
    vg_run_options opts;
} profiler_hook;

static void ph_destroy(void *p) {
    profiler_hook *h = p;
    vg__hk_free_with(h, h ? h->dir : NULL);
}
static vg_code ph_begin(void *p, vg_graph *g, vg_status *st) {
    profiler_hook *h = p;
    h->g = g;
    h->next_step = -1;
    return vg__global_step_read(g, "ProfilerHook", &h->read, st);
}
static vg_code ph_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    profiler_hook *h = p;
    h->request = h->next_step >= 0 && vg_timer_should_trigger_for_step(&h->timer, h->next_step);
    args->fetches = &h->read;
    args->nfetches = 1;
    if (h->request) {
        vg_run_options o = {0};
        o.trace_level = VG_TRACE_FULL;
        h->opts = o;
        args->options = &h->opts;
    }
    return VG_OK;
}
static vg_code ph_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    profiler_hook *h = p;
    int64_t stale = vg__tensor_i64(v->results[0]);
    if (h->next_step < 0) vg_timer_update_last_triggered_step(&h->timer, stale, NULL, NULL);
    int64_t step = stale + 1;
    vg_code rc = VG_OK;
    if (h->request) {
        rc = vg__global_step_value(vg_run_context_session(ctx), h->g, &step, st);
        if (rc != VG_OK) return rc;
        vg_timer_update_last_triggered_step(&h->timer, step, NULL, NULL);
        char *json = NULL;
        size_t len = 0;
        rc = vg_run_metadata_to_chrome_trace(v->run_metadata, h->show_memory, &json, &len, st);
        if (rc == VG_OK) {
            char path[4200];
            snprintf(path, sizeof path, "%s/timeline-%lld.json", h->dir, (long long)step);
            rc = vg_write_file_atomic(path, json, len, st);
            vg_free(json);
        }
        if (rc == VG_OK) {
            char tag[64];
            snprintf(tag, sizeof tag, "step_%lld", (long long)step);
            rc = vg_file_writer_add_run_metadata(h->writer, v->run_metadata, tag, step, st);
        }
    }
    h->next_step = step + 1;
    return rc;
}

vg_code vg_profiler_hook(const vg_profiler_options *o, vg_hook *out, vg_status *st) {
    if (vg__hk_out_begin(out, st) != VG_OK) return VG_INVALID_ARGUMENT;
    if (!o) return vg_status_set(st, VG_INVALID_ARGUMENT, "profiler options are NULL");
    int64_t save_steps = o->save_steps;
    double save_secs = o->save_secs;
    const char *output_dir = o->output_dir && *o->output_dir ? o->output_dir : NULL;
    bool show_dataflow = !o->no_show_dataflow, show_memory = o->show_memory;
    vg_timer t;
    vg_code rc = vg_timer_init(&t, save_secs, save_steps, st);
    if (rc != VG_OK) return rc;
    profiler_hook *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    h->timer = t;
    h->show_dataflow = show_dataflow;
    h->show_memory = show_memory;
    h->dir = vg__hk_strdup(output_dir ? output_dir : ".");
    if (!h->dir || !(h->writer = vg_file_writer_cache_get(h->dir, st))) {
        ph_destroy(h);
        return st && st->code ? st->code : vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    *out = vg__hk_make("ProfilerHook", h, ph_destroy);
    vg__hk_callbacks(out, ph_begin, NULL, ph_before, ph_after, NULL);
    return VG_OK;
}
