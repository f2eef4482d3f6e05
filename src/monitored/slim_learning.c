/*
 * slim_learning.c - slim.learning.train (TF 1.15 contrib/slim/python/slim/learning.py)
 * mapped onto tf.contrib.training.train (a MonitoredTrainingSession), from the public API.
 */
#include "vigil/evaluation.h"
#include "vigil/hooks.h"
#include "vigil/slim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- learning ------------------------------------------------------------- */

/* slim's train_step logging: "global step N: loss = L (S sec/step)" every n steps */
typedef struct log_hook {
    vg_output fetches[2];
    int64_t every;
    double last;
} log_hook;

static vg_code log_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    (void)ctx;
    (void)st;
    log_hook *h = p;
    h->last = vg_hooks_now();
    args->fetches = h->fetches;
    args->nfetches = 2;
    return VG_OK;
}

static double scalar_of(const vg_tensor *t) {
    if (!t || vg_tensor_num_elements(t) < 1) return NAN;
    const void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: return ((const float *)d)[0];
    case VG_DOUBLE: return ((const double *)d)[0];
    case VG_INT64: return (double)((const int64_t *)d)[0];
    case VG_INT32: return ((const int32_t *)d)[0];
    default: return NAN;
    }
}

static vg_code log_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    (void)ctx;
    (void)st;
    log_hook *h = p;
    double dt = vg_hooks_now() - h->last;
    /* slim's should_log: global_step % log_every_n_steps == 0 after the step (the
     * fetched read is the value before this step's increment) */
    if (h->every > 0 && v->nresults >= 2) {
        double loss = scalar_of(v->results[0]);
        long long step = (long long)scalar_of(v->results[1]) + 1;
        if (step % h->every == 0)
            vg_logf(VG_LOG_INFO, "global step %lld: loss = %.4f (%.3f sec/step)", step, loss, dt);
    }
    return VG_OK;
}

vg_code vg_slim_learning_train(vg_graph *g, vg_output train_op, const char *logdir, const vg_slim_train_opts *opts,
                               double *loss, vg_status *st) {
    vg_slim_train_opts o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    int nh = o.nhooks + 2, k = 0;
    vg_hook *hooks = calloc((size_t)nh, sizeof *hooks);
    vg_scaffold *own = NULL;
    vg_code rc = VG_OK;
    if (!hooks) {
        for (int i = 0; i < o.nhooks; i++)
            if (o.hooks[i].destroy) o.hooks[i].destroy(o.hooks[i].payload);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "slim.learning.train: out of memory");
    }
    for (int i = 0; i < o.nhooks; i++) hooks[k++] = o.hooks[i];
    if (!g || !train_op.op) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "slim.learning.train: a graph and train_op are required");
        goto fail;
    }
    /* slim's None is a flag, not a negative number (docs/conventions.md) */
    if (o.log_every_n_steps < 0 || o.save_summaries_secs < 0 || o.save_interval_secs < 0) {
        rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                           "slim.learning.train: log_every_n_steps %lld, save_summaries_secs %g, save_interval_secs "
                           "%g: an interval is >= 0 (0: slim's default; None: no_logging, no_summaries, "
                           "no_checkpoints)",
                           (long long)o.log_every_n_steps, o.save_summaries_secs, o.save_interval_secs);
        goto fail;
    }
    if (o.number_of_steps > 0) {
        if (vg_stop_at_step_hook(-1, o.number_of_steps, &hooks[k], st) != VG_OK) {
            rc = st ? st->code : VG_INTERNAL;
            goto fail;
        }
        k++;
    }
    int64_t every = o.no_logging ? 0 : o.log_every_n_steps ? o.log_every_n_steps : 1;
    if (every > 0) {
        log_hook *lh = calloc(1, sizeof *lh);
        if (!lh) {
            rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "slim.learning.train: out of memory");
            goto fail;
        }
        lh->fetches[0] = train_op;
        lh->fetches[1] = vg_get_or_create_global_step(g);
        if (!lh->fetches[1].op) {
            free(lh);
            vg_graph_status(g, st);
            rc = st ? st->code : VG_FAILED_PRECONDITION;
            goto fail;
        }
        lh->every = every;
        vg_hook h = {"slim_train_step_log", NULL, NULL, log_before, log_after, NULL, free, lh};
        hooks[k++] = h;
    }
    vg_scaffold *scaffold = o.scaffold;
    if (!scaffold && o.init_fn) {
        vg_scaffold_options so = {0};
        so.init_fn = o.init_fn;
        so.init_fn_payload = o.init_fn_payload;
        own = scaffold = vg_scaffold_new(&so);
        if (!own) {
            rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "slim.learning.train: out of memory");
            goto fail;
        }
    }
    vg_mts_options m = {0};
    m.checkpoint_dir = logdir;
    m.scaffold = scaffold;
    m.hooks = hooks;
    m.nhooks = k;
    m.config = o.session_config;
    m.no_checkpoint_dir_lock = o.no_checkpoint_dir_lock;
    /* slim's intervals: 0 its default 600 s; None: the no_* flags */
    m.no_checkpoints = o.no_checkpoints;
    m.save_checkpoint_secs = o.save_interval_secs > 0 ? o.save_interval_secs : 600;
    m.no_summaries = o.no_summaries;
    m.save_summaries_secs = o.save_summaries_secs > 0 ? o.save_summaries_secs : 600;
    if (!logdir) {
        /* slim: logdir=None trains without saving anything */
        m.no_step_counter = true;
        m.no_checkpoints = true;
        m.no_summaries = true;
    }
    rc = vg_training_train(g, train_op, &m, loss, st);
    free(hooks);
    vg_scaffold_free(own);
    return rc;
fail:
    for (int i = 0; i < k; i++)
        if (hooks[i].destroy) hooks[i].destroy(hooks[i].payload);
    free(hooks);
    vg_scaffold_free(own);
    return rc;
}
