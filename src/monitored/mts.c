/*
 * mts.c - tf.train.MonitoredTrainingSession (TF 1.15): a MonitoredSession with the
 * chief's default hooks resolved from the options exactly as TF does (USE_DEFAULT =
 * a zero option value; None for both frequencies of a hook = its no_* flag).
 */
#include "monitored_internal.h"
#include "vigil/hooks.h"
#include <string.h>

static void free_hooks(const vg_hook *h, int n) {
    for (int i = 0; i < n; i++)
        if (h[i].destroy) h[i].destroy(h[i].payload);
}

void vg__resolve_mts_options(const vg_mts_options *o, vg__mts_resolved *r) {
    /* USE_DEFAULT resolution (monitored_session.py MonitoredTrainingSession): zero (or a
     * negative value) is USE_DEFAULT; in r, 0 is None */
    int64_t sum_steps = o->save_summaries_steps > 0 ? o->save_summaries_steps : 0;
    double sum_secs = o->save_summaries_secs > 0 ? o->save_summaries_secs : 0;
    if (o->no_summaries) sum_steps = 0, sum_secs = 0;
    else if (!sum_steps && !sum_secs) sum_steps = 100;
    int64_t ck_steps = o->save_checkpoint_steps > 0 ? o->save_checkpoint_steps : 0;
    double ck_secs = o->save_checkpoint_secs > 0 ? o->save_checkpoint_secs : 0;
    if (o->no_checkpoints) ck_steps = 0, ck_secs = 0;
    else if (!ck_steps && !ck_secs) ck_secs = 600;
    r->save_summaries_steps = sum_steps;
    r->save_summaries_secs = sum_secs;
    r->save_checkpoint_steps = ck_steps;
    r->save_checkpoint_secs = ck_secs;
    r->log_step_count_steps = o->no_step_counter ? 0 : o->log_step_count_steps > 0 ? o->log_step_count_steps : 100;
    r->stop_grace_period_secs = o->stop_grace_period_secs > 0 ? o->stop_grace_period_secs : 120;
    r->max_wait_secs = o->max_wait_secs > 0 ? o->max_wait_secs : 7200;
    r->is_chief = !o->not_chief;
}

vg_monitored_session *vg_monitored_training_session_new(vg_graph *g, const vg_mts_options *opts, vg_status *st) {
    vg_mts_options def = {0};
    vg_mts_options o = opts ? *opts : def;
    if (!g) {
        free_hooks(o.hooks, o.nhooks);
        free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
        vg_status_set(st, VG_INVALID_ARGUMENT, "MonitoredTrainingSession: graph is NULL");
        return NULL;
    }
    vg__mts_resolved r;
    vg__resolve_mts_options(&o, &r);
    int64_t sum_steps = r.save_summaries_steps, ck_steps = r.save_checkpoint_steps;
    double sum_secs = r.save_summaries_secs, ck_secs = r.save_checkpoint_secs;

    vg_scaffold *scaffold = o.scaffold;
    bool own = false;
    if (!scaffold) {
        if (!(scaffold = vg_scaffold_new(NULL))) goto oom_early;
        own = true;
    }
    /* the chief's creator locks checkpoint_dir first, before any hook touches it */
    vg_session_creator creator;
    if (own) {
        creator = vg__session_creator_owning(g, scaffold, o.config, r.is_chief, o.checkpoint_dir, r.max_wait_secs,
                                             !o.no_checkpoint_dir_lock, st);
    } else {
        vg_session_creator_options co = {0};
        co.scaffold = scaffold;
        co.config = o.config;
        co.checkpoint_dir = o.checkpoint_dir;
        co.max_wait_secs = r.max_wait_secs;
        co.no_checkpoint_dir_lock = o.no_checkpoint_dir_lock;
        if (r.is_chief) vg_chief_session_creator(g, &co, &creator, st);
        else vg_worker_session_creator(g, &co, &creator, st);
    }
    if (!creator.create_session) {
        if (own) vg_scaffold_free(scaffold);
        free_hooks(o.hooks, o.nhooks);
        free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
        return NULL;
    }
    if (!r.is_chief) {
        free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
        vg_monitored_options mo = {.creator = creator, .hooks = o.hooks, .nhooks = o.nhooks,
                                   .stop_grace_period_secs = r.stop_grace_period_secs};
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
        if (r.log_step_count_steps > 0) {
            vg_step_counter_options sco = {0};
            sco.every_n_steps = r.log_step_count_steps;
            sco.output_dir = summary_dir;
            rc = vg_step_counter_hook(&sco, &all[n++], st);
        }
        if (rc == VG_OK && (sum_steps > 0 || sum_secs > 0)) {
            vg_summary_saver_options so = {0};
            so.scaffold = scaffold;
            so.save_steps = sum_steps;
            so.save_secs = sum_secs;
            so.output_dir = summary_dir;
            rc = vg_summary_saver_hook(&so, &all[n], st);
            if (rc == VG_OK) n++;
        }
    }
    if (rc == VG_OK && o.checkpoint_dir && (ck_secs > 0 || ck_steps > 0)) {
        vg_checkpoint_saver_options co = {0};
        co.checkpoint_dir = o.checkpoint_dir;
        co.save_steps = ck_steps;
        co.save_secs = ck_secs;
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
    vg_monitored_options mo = {.creator = creator, .hooks = all, .nhooks = n,
                               .stop_grace_period_secs = r.stop_grace_period_secs};
    vg_monitored_session *ms = vg_monitored_session_new(g, &mo, st);
    vg_free(all);
    return ms;
oom_early:
    free_hooks(o.hooks, o.nhooks);
    free_hooks(o.chief_only_hooks, o.nchief_only_hooks);
    vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory creating the monitored training session");
    return NULL;
}
