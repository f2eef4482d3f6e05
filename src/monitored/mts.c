/*
 * mts.c - tf.train.MonitoredTrainingSession (TF 1.15): a MonitoredSession with the
 * chief's default hooks resolved from the options exactly as TF does (USE_DEFAULT =
 * a negative option value; 0 = None, i.e. off).
 */
#include "monitored_internal.h"
#include "vigil/hooks.h"
#include <string.h>

static void free_hooks(const vg_hook *h, int n) {
    for (int i = 0; i < n; i++)
        if (h[i].destroy) h[i].destroy(h[i].payload);
}

vg_mts_options vg_mts_options_default(void) {
    vg_mts_options o = VG_MTS_OPTIONS_INIT;
    return o;
}

vg_monitored_session *vg_monitored_training_session_new(vg_graph *g, const vg_mts_options *opts, vg_status *st) {
    vg_mts_options def = VG_MTS_OPTIONS_INIT;
    vg_mts_options o = opts ? *opts : def;
    if (!g) {
        free_hooks(o.hooks, o.nhooks);
        free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
        vg_status_set(st, VG_INVALID_ARGUMENT, "MonitoredTrainingSession: graph is NULL");
        return NULL;
    }
    /* USE_DEFAULT resolution (monitored_session.py MonitoredTrainingSession) */
    int64_t sum_steps = o.save_summaries_steps;
    double sum_secs = o.save_summaries_secs;
    if (sum_steps < 0 && sum_secs < 0) { sum_steps = 100; sum_secs = 0; }
    else if (sum_secs < 0) sum_secs = 0;
    else if (sum_steps < 0) sum_steps = 0;
    int64_t ck_steps = o.save_checkpoint_steps;
    double ck_secs = o.save_checkpoint_secs;
    if (ck_steps < 0 && ck_secs < 0) { ck_steps = 0; ck_secs = 600; }
    else if (ck_secs < 0) ck_secs = 0;
    else if (ck_steps < 0) ck_steps = 0;

    vg_scaffold *scaffold = o.scaffold;
    bool own = false;
    if (!scaffold) {
        if (!(scaffold = vg_scaffold_new(NULL))) goto oom_early;
        own = true;
    }
    /* the chief's creator locks checkpoint_dir first, before any hook touches it */
    vg_session_creator creator;
    if (own) {
        creator = vg__session_creator_owning(g, scaffold, o.config, o.is_chief, o.checkpoint_dir, o.max_wait_secs,
                                             !o.no_checkpoint_dir_lock, st);
    } else {
        vg_session_creator_options co = VG_SESSION_CREATOR_OPTIONS_INIT;
        co.scaffold = scaffold;
        co.config = o.config;
        co.checkpoint_dir = o.checkpoint_dir;
        co.max_wait_secs = o.max_wait_secs;
        co.no_checkpoint_dir_lock = o.no_checkpoint_dir_lock;
        if (o.is_chief) vg_chief_session_creator(g, &co, &creator, st);
        else vg_worker_session_creator(g, &co, &creator, st);
    }
    if (!creator.create_session) {
        if (own) vg_scaffold_free(scaffold);
        free_hooks(o.hooks, o.nhooks);
        free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
        return NULL;
    }
    if (!o.is_chief) {
        free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
        vg_monitored_options mo = {creator, o.hooks, o.nhooks, o.stop_grace_period_secs};
        return vg_monitored_session_new(g, &mo, st);
    }
    int cap = o.nchief_only_hooks + o.nhooks + 3, n = 0;
    vg_hook *all = vg_calloc((size_t)cap, sizeof(vg_hook));
    if (!all) {
        creator.destroy(creator.payload);
        goto oom_early;
    }
    for (int i = 0; i < o.nchief_only_hooks; i++) all[n++] = o.chief_only_hooks[i];
    const char *summary_dir = o.summary_dir ? o.summary_dir : o.checkpoint_dir;
    vg_code rc = VG_OK;
    if (summary_dir) {
        if (o.log_step_count_steps > 0) {
            vg_step_counter_options sco = VG_STEP_COUNTER_OPTIONS_INIT;
            sco.every_n_steps = o.log_step_count_steps;
            sco.output_dir = summary_dir;
            rc = vg_step_counter_hook(&sco, &all[n++], st);
        }
        if (rc == VG_OK && (sum_steps > 0 || sum_secs > 0)) {
            vg_summary_saver_options so = VG_SUMMARY_SAVER_OPTIONS_INIT;
            so.scaffold = scaffold;
            so.save_steps = sum_steps > 0 ? sum_steps : -1;
            so.save_secs = sum_secs > 0 ? sum_secs : -1;
            so.output_dir = summary_dir;
            rc = vg_summary_saver_hook(&so, &all[n], st);
            if (rc == VG_OK) n++;
        }
    }
    if (rc == VG_OK && o.checkpoint_dir && (ck_secs > 0 || ck_steps > 0)) {
        vg_checkpoint_saver_options co = VG_CHECKPOINT_SAVER_OPTIONS_INIT;
        co.checkpoint_dir = o.checkpoint_dir;
        co.save_steps = ck_steps > 0 ? ck_steps : -1;
        co.save_secs = ck_secs > 0 ? ck_secs : -1;
        co.scaffold = scaffold;
        rc = vg_checkpoint_saver_hook(&co, &all[n], st);
        if (rc == VG_OK) n++;
    }
    if (rc != VG_OK) {
        /* argument errors (TF's ValueError): nothing was started */
        free_hooks(all, n);
        free_hooks(o.hooks, o.nhooks);
        vg_free(all);
        creator.destroy(creator.payload);
        return NULL;
    }
    for (int i = 0; i < o.nhooks; i++) all[n++] = o.hooks[i];
    vg_monitored_options mo = {creator, all, n, o.stop_grace_period_secs};
    vg_monitored_session *ms = vg_monitored_session_new(g, &mo, st);
    vg_free(all);
    return ms;
oom_early:
    free_hooks(o.hooks, o.nhooks);
    free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
    vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory creating the monitored training session");
    return NULL;
}
