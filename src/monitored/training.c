/*
 * training.c - tf.contrib.training.train (TF 1.15,
 * contrib/training/python/training/training.py) on the public API: a
 * MonitoredTrainingSession running the train op until it should stop.
 */
#include "vigil/evaluation.h"
#include "vigil/hooks.h"
#include "vigil/monitored.h"
#include <math.h>
#include <stdio.h>

vg_code vg_training_train(vg_graph *g, vg_output train_op, const vg_mts_options *o, double *loss, vg_status *st) {
    if (loss) *loss = NAN;
    vg_mts_options d = {0};
    if (!o) o = &d;
    const char *bad = NULL;
    if (!g) bad = "g is NULL";
    else if (!train_op.op) bad = "train_op cannot be None.";
    else if (!o->checkpoint_dir && !o->not_chief && !o->no_summaries)
        bad = "logdir cannot be None when save_summaries_steps is not None";
    else if (!o->checkpoint_dir && !o->not_chief && !o->no_checkpoints)
        bad = "logdir cannot be None when save_checkpoint_secs is not None";
    if (bad) {
        for (int i = 0; o->hooks && i < o->nhooks; i++) {
            vg_hook h = o->hooks[i];
            vg_hook_free(&h);
        }
        for (int i = 0; o->chief_only_hooks && i < o->nchief_only_hooks; i++) {
            vg_hook h = o->chief_only_hooks[i];
            vg_hook_free(&h);
        }
        return vg_status_set(st, VG_INVALID_ARGUMENT, "train: %s", bad);
    }
    vg_monitored_session *ms = vg_monitored_training_session_new(g, o, st); /* owns the hooks */
    if (!ms) return st ? st->code : VG_INTERNAL;
    vg_run_args a = {0};
    a.fetches = &train_op;
    a.nfetches = 1;
    vg_code rc = VG_OK;
    while (!vg_monitored_session_should_stop(ms)) {
        vg_tensor *out = NULL;
        rc = vg_monitored_session_run(ms, &a, &out, NULL, st);
        if (rc == VG_OK && out && loss)
            *loss = vg_tensor_num_elements(out) == 1 ? vg_tensor_scalar(out) : NAN;
        vg_tensor_free(out);
        if (rc != VG_OK) break;
    }
    rc = vg_monitored_session_end(ms, rc, st);
    vg_monitored_session_free(ms);
    return rc;
}
