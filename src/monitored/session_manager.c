/*
 * session_manager.c - tf.train.SessionManager (TF 1.15 session_manager.py) and the
 * session creators (ChiefSessionCreator, WorkerSessionCreator).
 *
 * prepare_session: new session -> restore from checkpoint_filename_with_path or the
 * newest checkpoint of checkpoint_dir, else init_op + init_fn -> local_init_op (when
 * the model is ready for it) -> ready check.
 */
#include "monitored/hooks/hooks_internal.h"
#include "monitored_internal.h"
#include "vigil/hooks.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

struct vg_session_manager {
    vg_graph *g;
    vg_session_manager_options o;
};

/* TF's defaults for the zero fields. */
static vg_session_manager_options resolve_session_manager_options(vg_session_manager_options o) {
    if (o.recovery_wait_secs <= 0) o.recovery_wait_secs = 30;
    return o;
}

static vg_prepare_options resolve_prepare_options(const vg_prepare_options *in) {
    vg_prepare_options o = {0};
    if (in) o = *in;
    if (o.max_wait_secs <= 0) o.max_wait_secs = 7200;
    return o;
}

vg_session_manager *vg_session_manager_new(vg_graph *g, const vg_session_manager_options *opts, vg_status *st) {
    vg_session_manager_options def = {0};
    if (!g) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "SessionManager: graph is NULL");
        return NULL;
    }
    if (opts && opts->ready_for_local_init_op.op && !opts->local_init_op) {
        /* TF's ValueError */
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                      "ready_for_local_init_op [%s:%d]",
                      vg_op_name(opts->ready_for_local_init_op.op), opts->ready_for_local_init_op.index);
        return NULL;
    }
    vg_session_manager *sm = vg__mon_calloc(sizeof *sm, st, "out of memory creating the session manager");
    if (!sm) return NULL;
    vg_status_clear(st);
    sm->g = g;
    sm->o = resolve_session_manager_options(opts ? *opts : def);
    return sm;
}

void vg_session_manager_free(vg_session_manager *sm) { vg_free(sm); }

static void sleep_secs(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* _ready: runs a report_uninitialized_variables-style op; ready when it is empty.
 * Otherwise *msg gets "Variables not initialized: a, b". A FAILED_PRECONDITION whose
 * message mentions "uninitialized" means "not ready" (TF), any other error is returned. */
static vg_code model_ready(vg_session *sess, vg_output op, bool *ready, char *msg, size_t len, vg_status *st) {
    *ready = true;
    msg[0] = 0;
    if (!op.op) return VG_OK;
    vg_tensor *t = NULL;
    vg_status run_st = {VG_OK, ""};
    vg_code rc = vg_session_run1(sess, op, &t, &run_st);
    if (rc == VG_FAILED_PRECONDITION && strstr(run_st.msg, "uninitialized")) {
        *ready = false;
        snprintf(msg, len, "%s", run_st.msg);
        return VG_OK;
    }
    if (rc != VG_OK) {
        vg_logf(VG_LOG_WARN, "Model not ready raised: %s", run_st.msg);
        vg_status_copy(st, &run_st);
        return rc;
    }
    int64_t n = vg_tensor_num_elements(t);
    if (n > 0) {
        *ready = false;
        size_t o = (size_t)snprintf(msg, len, "Variables not initialized: ");
        for (int64_t i = 0; i < n && o < len; i++) {
            size_t sl;
            const char *s = vg_tensor_string(t, i, &sl);
            o += (size_t)snprintf(msg + o, len - o, "%s%.*s", i ? ", " : "", (int)sl, s ? s : "");
        }
    }
    vg_tensor_free(t);
    return VG_OK;
}

/* _restore_checkpoint: a new session, restored when a checkpoint is available. */
static vg_session *restore_checkpoint(vg_session_manager *sm, const vg_prepare_options *o, bool *restored,
                                      vg_status *st) {
    *restored = false;
    vg_session *sess = vg_session_new_with_config(sm->g, sm->o.config, st);
    if (!sess) return NULL;
    if (o->checkpoint_dir && o->checkpoint_filename_with_path) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
        goto fail;
    }
    if (o->checkpoint_filename_with_path && o->saver) {
        if (vg_saver_restore(o->saver, sess, o->checkpoint_filename_with_path, st) != VG_OK) goto fail;
        *restored = true;
        return sess;
    }
    if (!o->saver || !o->checkpoint_dir) return sess;
    vg_checkpoint_state *cs = NULL;
    double waited = 0;
    char path[4096];
    for (;;) {
        /* vigil: an unusable state file is an error, never a silent start from scratch;
         * a missing one falls back to the newest complete checkpoint on disk */
        vg_code fc = vg_checkpoint_find_latest(o->checkpoint_dir, path, sizeof path, st);
        if (fc == VG_OK) break;
        if (fc != VG_NOT_FOUND) goto fail;
        vg_status_clear(st);
        if (!o->wait_for_checkpoint || waited >= o->max_wait_secs) return sess;
        vg_logf(VG_LOG_INFO, "Waiting for checkpoint to be available.");
        sleep_secs(sm->o.recovery_wait_secs);
        waited += sm->o.recovery_wait_secs;
    }
    vg_code rc = vg_saver_restore(o->saver, sess, path, st);
    if (rc == VG_OK) {
        vg_status tmp;
        /* without a state file (restored by listing) nothing is adopted or pruned: every
         * checkpoint on disk would look orphaned */
        if (vg_get_checkpoint_state(o->checkpoint_dir, &cs, &tmp) == VG_OK)
            vg_saver_recover_last_checkpoints_in(o->saver, o->checkpoint_dir,
                                                 (const char *const *)cs->all_model_checkpoint_paths, cs->n_all);
        *restored = true;
    }
    vg_checkpoint_state_free(cs);
    if (rc != VG_OK) goto fail;
    return sess;
fail:
    vg_session_free(sess);
    return NULL;
}

/* _try_run_local_init_op */
static vg_code run_local_init(vg_session_manager *sm, vg_session *sess, bool *ok, char *msg, size_t len,
                              vg_status *st) {
    *ok = true;
    msg[0] = 0;
    if (!sm->o.local_init_op) return VG_OK;
    bool ready;
    vg_code rc = model_ready(sess, sm->o.ready_for_local_init_op, &ready, msg, len, st);
    if (rc != VG_OK) return rc;
    if (!ready) {
        *ok = false;
        return VG_OK;
    }
    vg_logf(VG_LOG_INFO, "Running local_init_op.");
    rc = vg_session_run_targets(sess, &sm->o.local_init_op, 1, st);
    if (rc == VG_OK) vg_logf(VG_LOG_INFO, "Done running local_init_op.");
    return rc;
}

/* The options of a prepare / wait call, resolved into *resolved (returned); NULL, with
 * INVALID_ARGUMENT, when sm is NULL. */
static const vg_prepare_options *checked_options(vg_session_manager *sm, const vg_prepare_options *o,
                                                 vg_prepare_options *resolved, vg_status *st) {
    if (!sm) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "session manager is NULL");
        return NULL;
    }
    *resolved = resolve_prepare_options(o);
    return resolved;
}

vg_session *vg_session_manager_prepare_session(vg_session_manager *sm, const vg_prepare_options *o, vg_status *st) {
    vg_prepare_options resolved;
    if (!(o = checked_options(sm, o, &resolved, st))) return NULL;
    bool restored;
    char msg[900];
    vg_session *sess = restore_checkpoint(sm, o, &restored, st);
    if (!sess) return NULL;
    if (!restored) {
        if (!o->init_op && !o->init_fn && !sm->o.local_init_op) {
            vg_status_set(st, VG_FAILED_PRECONDITION,
                          "Model is not initialized and no init_op or init_fn or local_init_op was given");
            goto fail;
        }
        if (o->init_op && vg_session_run(sess, NULL, o->init_feeds, o->init_feed_values, o->ninit_feeds, NULL, NULL, 0,
                                         (vg_op *const *)&o->init_op, 1, NULL, st) != VG_OK)
            goto fail;
        if (o->init_fn && o->init_fn(o->init_fn_payload, o->scaffold, sess, st) != VG_OK) goto fail;
    }
    bool ok;
    if (run_local_init(sm, sess, &ok, msg, sizeof msg, st) != VG_OK) goto fail;
    if (!ok) {
        vg_status_set(st, VG_FAILED_PRECONDITION,
                      "Init operations did not make model ready for local_init.  Init op: %s, init fn: %s, error: %s",
                      o->init_op ? vg_op_name(o->init_op) : "None", o->init_fn ? "given" : "None", msg);
        goto fail;
    }
    bool ready;
    if (model_ready(sess, sm->o.ready_op, &ready, msg, sizeof msg, st) != VG_OK) goto fail;
    if (!ready) {
        vg_status_set(st, VG_FAILED_PRECONDITION,
                      "Init operations did not make model ready.  Init op: %s, init fn: %s, local_init_op: %s, "
                      "error: %s",
                      o->init_op ? vg_op_name(o->init_op) : "None", o->init_fn ? "given" : "None",
                      sm->o.local_init_op ? vg_op_name(sm->o.local_init_op) : "None", msg);
        goto fail;
    }
    vg_status_clear(st);
    return sess;
fail:
    vg_session_free(sess);
    return NULL;
}

vg_session *vg_session_manager_recover_session(vg_session_manager *sm, const vg_prepare_options *o, bool *initialized,
                                               vg_status *st) {
    vg_prepare_options resolved = resolve_prepare_options(o);
    o = &resolved;
    bool restored, ok, ready, init_tmp;
    char msg[900];
    if (!initialized) initialized = &init_tmp; /* optional */
    *initialized = false;
    if (!sm) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "session manager is NULL");
        return NULL;
    }
    vg_session *sess = restore_checkpoint(sm, o, &restored, st);
    if (!sess) return NULL;
    /* TF always tries local_init_op, also when nothing was restored */
    if (run_local_init(sm, sess, &ok, msg, sizeof msg, st) != VG_OK) goto fail;
    if (!restored || !ok) {
        vg_status_clear(st);
        return sess;
    }
    if (model_ready(sess, sm->o.ready_op, &ready, msg, sizeof msg, st) != VG_OK) goto fail;
    *initialized = ready;
    return sess;
fail:
    vg_session_free(sess);
    return NULL;
}

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* TF's loop: after a failed attempt, give up (DEADLINE_EXCEEDED) when the time left
 * minus recovery_wait_secs is negative, else sleep recovery_wait_secs and try again. */
vg_session *vg_session_manager_wait_for_session(vg_session_manager *sm, const vg_prepare_options *o, vg_status *st) {
    vg_prepare_options resolved;
    if (!(o = checked_options(sm, o, &resolved, st))) return NULL;
    double start = mono_now();
    for (;;) {
        vg_session *sess = vg_session_new_with_config(sm->g, sm->o.config, st);
        if (!sess) return NULL;
        bool ok, ready;
        char msg[900];
        if (run_local_init(sm, sess, &ok, msg, sizeof msg, st) != VG_OK) {
            vg_session_free(sess);
            return NULL;
        }
        if (ok) {
            if (model_ready(sess, sm->o.ready_op, &ready, msg, sizeof msg, st) != VG_OK) {
                vg_session_free(sess);
                return NULL;
            }
            if (ready) return sess;
        }
        vg_session_free(sess);
        double remaining = o->max_wait_secs - (mono_now() - start);
        if (remaining - sm->o.recovery_wait_secs < 0) {
            vg_status_set(st, VG_DEADLINE_EXCEEDED, "Session was not ready after waiting %g secs.", o->max_wait_secs);
            return NULL;
        }
        vg_logf(VG_LOG_INFO, "Waiting for model to be ready.  Ready_for_local_init_op/ready_op: %s", msg);
        sleep_secs(sm->o.recovery_wait_secs);
    }
}

/* ------------------------------------------------------------------------ */
/* session creators */

typedef struct creator {
    vg_graph *g;
    vg_scaffold *scaffold;
    bool own_scaffold;
    bool chief;
    vg_config_proto config;
    bool has_config;
    char *checkpoint_dir;
    char *checkpoint_filename_with_path;
    double max_wait_secs;
    vg_dir_lock *lock; /* the chief's lock on checkpoint_dir (dir_lock.c) */
} creator;

static void creator_destroy(void *p) {
    creator *c = p;
    if (!c) return;
    if (c->own_scaffold) vg_scaffold_free(c->scaffold);
    vg_checkpoint_dir_lock_release(c->lock);
    vg_free(c->checkpoint_dir);
    vg_free(c->checkpoint_filename_with_path);
    vg_free(c);
}

static vg_session *creator_create(void *p, vg_status *st) {
    creator *c = p;
    if (vg_scaffold_finalize(c->scaffold, c->g, st) != VG_OK) return NULL;
    vg_session_manager_options smo = {0};
    smo.local_init_op = vg_scaffold_local_init_op(c->scaffold);
    smo.ready_op = vg_scaffold_ready_op(c->scaffold);
    smo.ready_for_local_init_op = vg_scaffold_ready_for_local_init_op(c->scaffold);
    smo.config = c->has_config ? &c->config : NULL;
    vg_session_manager sm = {c->g, resolve_session_manager_options(smo)};
    vg_prepare_options po = {0};
    vg__scaffold_prepare_options(c->scaffold, &po);
    if (!c->chief) {
        po.max_wait_secs = c->max_wait_secs;
        return vg_session_manager_wait_for_session(&sm, &po, st);
    }
    po.checkpoint_dir = c->checkpoint_dir;
    po.checkpoint_filename_with_path = c->checkpoint_filename_with_path;
    return vg_session_manager_prepare_session(&sm, &po, st);
}

/* On failure (*st set) the returned creator is empty and a given scaffold is not freed. */
static vg_session_creator make_creator(vg_graph *g, vg_scaffold *scaffold, const vg_config_proto *config,
                                       bool chief, const char *dir, const char *path, double max_wait, bool lock,
                                       vg_status *st) {
    vg_session_creator out = {NULL, NULL, NULL};
    creator *c = vg__mon_calloc(sizeof *c, st, "out of memory creating the session creator");
    if (!c) return out;
    c->g = g;
    c->chief = chief;
    c->scaffold = scaffold;
    if (!scaffold) {
        c->scaffold = vg_scaffold_new(NULL);
        c->own_scaffold = true;
    }
    if (config) { c->config = *config; c->has_config = true; }
    c->checkpoint_dir = vg__hk_strdup(dir);
    c->checkpoint_filename_with_path = vg__hk_strdup(path);
    c->max_wait_secs = max_wait;
    if (!c->scaffold || (dir && !c->checkpoint_dir) || (path && !c->checkpoint_filename_with_path)) {
        creator_destroy(c);
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory creating the session creator");
        return out;
    }
    /* vigil: one trainer per checkpoint directory (the chief's; workers only read) */
    if (chief && dir && *dir && lock && !(c->lock = vg_checkpoint_dir_lock_acquire(dir, st))) {
        creator_destroy(c);
        return out;
    }
    out.create_session = creator_create;
    out.destroy = creator_destroy;
    out.payload = c;
    return out;
}

vg_session_creator vg__session_creator_owning(vg_graph *g, vg_scaffold *scaffold, const vg_config_proto *config,
                                              bool chief, const char *checkpoint_dir, double max_wait_secs,
                                              bool lock_dir, vg_status *st) {
    vg_session_creator c = make_creator(g, scaffold, config, chief, checkpoint_dir, NULL, max_wait_secs, lock_dir, st);
    if (c.payload) ((creator *)c.payload)->own_scaffold = true;
    return c;
}

static vg_code public_creator(vg_graph *g, const vg_session_creator_options *o, bool chief, vg_session_creator *out,
                              vg_status *st) {
    vg_session_creator_options def = {0};
    if (!o) o = &def;
    if (out) memset(out, 0, sizeof *out);
    if (!g || !out)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s session creator: %s is NULL", chief ? "chief" : "worker",
                             g ? "out" : "graph");
    *out = make_creator(g, o->scaffold, o->config, chief, chief ? o->checkpoint_dir : NULL,
                        chief ? o->checkpoint_filename_with_path : NULL,
                        o->max_wait_secs > 0 ? o->max_wait_secs : 1800 /* TF's 30 * 60 */, !o->no_checkpoint_dir_lock,
                        st);
    if (!out->create_session) return st ? st->code : VG_RESOURCE_EXHAUSTED;
    vg_status_clear(st);
    return VG_OK;
}

vg_code vg_chief_session_creator(vg_graph *g, const vg_session_creator_options *o, vg_session_creator *out,
                                 vg_status *st) {
    return public_creator(g, o, true, out, st);
}

vg_code vg_worker_session_creator(vg_graph *g, const vg_session_creator_options *o, vg_session_creator *out,
                                  vg_status *st) {
    return public_creator(g, o, false, out, st);
}
