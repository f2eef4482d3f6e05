/*
 * vigil/monitored.h - TF1's monitored training sessions: hooks, Scaffold,
 * SessionManager, session creators, MonitoredSession, SingularMonitoredSession and
 * MonitoredTrainingSession. Behaviour follows TF 1.15 (tensorflow/python/training/
 * monitored_session.py and session_run_hook.py); see docs/tf1-coverage.md.
 *
 * C has no `with` block. The idiom: loop while the session should not stop, keep the
 * loop's status, then end the session with it. vg_monitored_session_end swallows what
 * TF's __exit__ swallows (OUT_OF_RANGE: input exhausted; VG_STOP_ITERATION: a step
 * function asked to stop), calls the hooks' end() in those cases and when the loop
 * ended normally, closes the session and returns anything else:
 *
 *     vg_singular_options o = {0};
 *     o.hooks = hooks; o.nhooks = 2; o.checkpoint_dir = "runs/m";
 *     vg_monitored_session *ms = vg_singular_monitored_session_new(g, &o, &st);
 *     if (!ms) return st.code;
 *     vg_run_args args = {0};
 *     args.targets = &train_op; args.ntargets = 1;
 *     vg_code rc = VG_OK;
 *     while (rc == VG_OK && !vg_monitored_session_should_stop(ms))
 *         rc = vg_monitored_session_run(ms, &args, NULL, NULL, &st);
 *     rc = vg_monitored_session_end(ms, rc, &st);   // VG_OK after a clean end of input
 *     vg_monitored_session_free(ms);
 */
#ifndef VIGIL_MONITORED_H
#define VIGIL_MONITORED_H

#include "coordinator.h"
#include "saver.h"
#include "config.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Run arguments (SessionRunArgs, extended with targets: C has no op-valued fetches). */
typedef struct vg_run_args {
    const vg_output *fetches;
    int nfetches;
    const vg_output *feeds;
    vg_tensor *const *feed_values;
    int nfeeds;
    vg_op *const *targets;
    int ntargets;
    const vg_run_options *options; /* NULL = none */
} vg_run_args;


/* SessionRunContext: one per run() call, shared by every hook's before_run and
 * after_run. */
typedef struct vg_run_context vg_run_context;
/* The caller's args (options not included, as TF). Borrowed for the call. */
VG_API const vg_run_args *vg_run_context_original_args(const vg_run_context *ctx);
/* The raw session: running on it bypasses the hooks. */
VG_API vg_session *vg_run_context_session(const vg_run_context *ctx);
VG_API void vg_run_context_request_stop(vg_run_context *ctx);
VG_API bool vg_run_context_stop_requested(const vg_run_context *ctx);

/* SessionRunValues. results/nresults: the values of the hook's own fetches, in the order
 * it asked (borrowed, valid during after_run); NULL/0 if it asked for none. */
typedef struct vg_run_values {
    vg_tensor *const *results;
    int nresults;
    const vg_run_options *options;       /* the merged options actually used */
    const vg_run_metadata *run_metadata; /* filled by the call (same object for all hooks) */
} vg_run_values;

/* A hook: optional callbacks and a payload. Every callback may be NULL. A callback
 * returns VG_OK or an error code with *st filled; errors propagate as TF's exceptions
 * do (see the semantics document). before_run fills *args (zeroed by the caller) with
 * arrays the hook owns; they must stay valid until its after_run returns. */
typedef struct vg_hook {
    const char *name; /* (optional) for messages */
    vg_code (*begin)(void *payload, vg_graph *g, vg_status *st);
    vg_code (*after_create_session)(void *payload, vg_session *sess, vg_coord *coord, vg_status *st);
    vg_code (*before_run)(void *payload, vg_run_context *ctx, vg_run_args *args, vg_status *st);
    vg_code (*after_run)(void *payload, vg_run_context *ctx, const vg_run_values *values, vg_status *st);
    /* sess is NULL when end() runs on an already closed session (second close). */
    vg_code (*end)(void *payload, vg_session *sess, vg_status *st);
    /* (optional) frees payload; called by vg_monitored_session_free (the monitored
     * session owns the hooks given to it, also when construction fails). */
    void (*destroy)(void *payload);
    void *payload;
} vg_hook;

/* ------------------------------------------------------------------------ */
/* Scaffold */
typedef struct vg_scaffold vg_scaffold;

typedef vg_code (*vg_init_fn)(void *payload, vg_scaffold *scaffold, vg_session *sess, vg_status *st);

typedef struct vg_scaffold_options {
    vg_op *init_op;                  /* NULL: global_variables_initializer() */
    const vg_output *init_feeds;     /* init_feed_dict */
    vg_tensor *const *init_feed_values;
    int ninit_feeds;
    vg_init_fn init_fn;              /* (optional) called after init_op */
    void *init_fn_payload;
    vg_output ready_op;              /* {NULL}: report_uninitialized_variables() */
    vg_output ready_for_local_init_op; /* {NULL}: report_uninitialized_variables(globals) */
    vg_op *local_init_op;            /* NULL: group(local_variables_initializer, tables) */
    vg_output summary_op;            /* {NULL}: merge_all() */
    vg_saver *saver;                 /* NULL: the one saver in the "savers" collection, or a new one */
    const vg_scaffold *copy_from_scaffold; /* unset fields are copied from it */
} vg_scaffold_options;


/* New scaffold (nothing created until finalize). NULL on allocation failure. */
VG_API vg_scaffold *vg_scaffold_new(const vg_scaffold_options *opts);
/* Frees the scaffold (and a saver it created itself). */
VG_API void vg_scaffold_free(vg_scaffold *s);
/* Creates the default ops TF creates (cached in the graph's collections so that two
 * scaffolds share them) and finalizes the graph. Fails with the graph's error,
 * FAILED_PRECONDITION ("More than one item in the collection savers"). */
VG_API vg_code vg_scaffold_finalize(vg_scaffold *s, vg_graph *g, vg_status *st);
VG_API bool vg_scaffold_finalized(const vg_scaffold *s);
VG_API vg_op *vg_scaffold_init_op(const vg_scaffold *s);
VG_API vg_output vg_scaffold_ready_op(const vg_scaffold *s);
VG_API vg_output vg_scaffold_ready_for_local_init_op(const vg_scaffold *s);
VG_API vg_op *vg_scaffold_local_init_op(const vg_scaffold *s);
VG_API vg_output vg_scaffold_summary_op(const vg_scaffold *s);
VG_API vg_saver *vg_scaffold_saver(const vg_scaffold *s);

/* ------------------------------------------------------------------------ */
/* SessionManager */
typedef struct vg_session_manager vg_session_manager;

typedef struct vg_session_manager_options {
    vg_op *local_init_op;
    vg_output ready_op;
    vg_output ready_for_local_init_op;
    double recovery_wait_secs;       /* 0: TF's 30 */
    const vg_config_proto *config;   /* tf.ConfigProto (vigil/config.h); NULL: defaults. Every session
                                        is made by vg_session_new_with_config: its placement check
                                        (a "/gpu:0" op fails without allow_soft_placement, as TF) and
                                        its thread counts */
} vg_session_manager_options;


/* New session manager (free with vg_session_manager_free); opts NULL: defaults. Fails
 * (NULL, *st set) with INVALID_ARGUMENT for a NULL graph or a ready_for_local_init_op
 * without a local_init_op (TF's ValueError), RESOURCE_EXHAUSTED. */
VG_API vg_session_manager *vg_session_manager_new(vg_graph *g, const vg_session_manager_options *opts,
                                                  vg_status *st);
VG_API void vg_session_manager_free(vg_session_manager *sm);

typedef struct vg_prepare_options {
    vg_op *init_op;
    vg_saver *saver;
    const char *checkpoint_dir;
    const char *checkpoint_filename_with_path;
    bool wait_for_checkpoint;
    double max_wait_secs;            /* 0: TF's 7200 */
    const vg_output *init_feeds;
    vg_tensor *const *init_feed_values;
    int ninit_feeds;
    vg_init_fn init_fn;
    void *init_fn_payload;
    vg_scaffold *scaffold;           /* passed to init_fn */
} vg_prepare_options;


/* prepare_session: restore from the checkpoint (or run init_op / init_fn), then
 * local_init_op, then the ready check. Returns a new session (caller frees). Fails with
 * FAILED_PRECONDITION "Init operations did not make model ready. ... Uninitialized
 * variables: w, b", restore errors, RESOURCE_EXHAUSTED. */
VG_API vg_session *vg_session_manager_prepare_session(vg_session_manager *sm, const vg_prepare_options *o,
                                                      vg_status *st);
/* recover_session: a session restored from the latest checkpoint if there is one;
 * *initialized tells whether it is ready. Never runs init_op. */
VG_API vg_session *vg_session_manager_recover_session(vg_session_manager *sm, const vg_prepare_options *o,
                                                      bool *initialized, vg_status *st);
/* wait_for_session: for non-chief workers: a new session every recovery_wait_secs,
 * running local_init_op when the model is ready for it, until ready_op reports the model
 * ready (another process initialised the shared state; this never initialises or
 * restores). Gives up with DEADLINE_EXCEEDED "Session was not ready after waiting N
 * secs." as soon as the time left is shorter than recovery_wait_secs. */
VG_API vg_session *vg_session_manager_wait_for_session(vg_session_manager *sm, const vg_prepare_options *o,
                                                       vg_status *st);

/* ------------------------------------------------------------------------ */
/* Session creators */
typedef struct vg_session_creator {
    vg_session *(*create_session)(void *payload, vg_status *st);
    void (*destroy)(void *payload); /* (optional) */
    void *payload;
} vg_session_creator;

/* ---- One trainer per checkpoint directory (a vigil guard; TF has none) ---------
 * A chief session creator given a checkpoint_dir (so MonitoredTrainingSession on the
 * chief and SingularMonitoredSession) takes this lock when it is made and releases it
 * when it is destroyed (vg_monitored_session_free), so two trainers never interleave
 * checkpoints in one directory; a second one fails at once with FAILED_PRECONDITION
 * (TF's RuntimeError mapping), whether it runs in another process or in this one.
 * Workers (not_chief) never lock. A program that must share a directory (or holds
 * the lock itself with vg_checkpoint_dir_lock_acquire, as `vigil train` does for its
 * whole run) sets the options' no_checkpoint_dir_lock. */
typedef struct vg_dir_lock vg_dir_lock;

/* Creates dir (and missing parents, mode 0755) and takes an exclusive, non-blocking
 * advisory lock (flock) on it; the caller's pid goes to "<dir>/.vigil-train.pid" (read
 * only to name the holder in the error). The lock lasts until
 * vg_checkpoint_dir_lock_release (which removes the pid file) or until the process dies
 * (the kernel drops it: a killed trainer leaves no stale lock). The descriptor is
 * close-on-exec; a child forked without exec shares the lock. Returns the lock (the
 * caller releases it), or NULL with FAILED_PRECONDITION "checkpoint directory <dir> is
 * locked by another vigil trainer (pid N)" (", this process" added when it is the
 * caller's own pid), or for a path that is not a directory; PERMISSION_DENIED /
 * NOT_FOUND (cannot create or open it); UNAVAILABLE (the filesystem refuses flock);
 * INVALID_ARGUMENT (NULL or empty dir); RESOURCE_EXHAUSTED.
 *
 *     vg_status st;
 *     vg_dir_lock *lk = vg_checkpoint_dir_lock_acquire("runs/m", &st);
 *     if (!lk) return st.code;               // another trainer owns runs/m
 *     vg_checkpoint_dir_lock_release(lk);
 */
VG_API vg_dir_lock *vg_checkpoint_dir_lock_acquire(const char *dir, vg_status *st);
/* Releases the lock (NULL: no-op). */
VG_API void vg_checkpoint_dir_lock_release(vg_dir_lock *lock);

/* The arguments of ChiefSessionCreator(scaffold, master, config, checkpoint_dir,
 * checkpoint_filename_with_path) and WorkerSessionCreator(scaffold, master, config,
 * max_wait_secs). Strings are copied. */
typedef struct vg_session_creator_options {
    vg_scaffold *scaffold;                     /* NULL: a default one, owned by the creator;
                                                  a given scaffold stays the caller's */
    const vg_config_proto *config;             /* tf.ConfigProto, copied; NULL: defaults (as
                                                  vg_session_manager_options.config) */
    const char *checkpoint_dir;                /* chief only */
    const char *checkpoint_filename_with_path; /* chief only */
    double max_wait_secs;                      /* worker only: 0 = TF's 1800 (30 * 60) */
    bool no_checkpoint_dir_lock;               /* chief: true = do not lock checkpoint_dir (above) */
} vg_session_creator_options;


/* ChiefSessionCreator / WorkerSessionCreator: fill *out (its destroy releases it; a
 * monitored session given it takes it over). o NULL: defaults. A chief creator with a
 * checkpoint_dir takes the directory's lock (vg_checkpoint_dir_lock_acquire) unless
 * no_checkpoint_dir_lock, and releases it in destroy. Fail with INVALID_ARGUMENT (g or
 * out NULL), RESOURCE_EXHAUSTED, and the lock's errors (FAILED_PRECONDITION when
 * another trainer holds the directory); *out is then empty. */
VG_API vg_code vg_chief_session_creator(vg_graph *g, const vg_session_creator_options *o, vg_session_creator *out,
                                        vg_status *st);
VG_API vg_code vg_worker_session_creator(vg_graph *g, const vg_session_creator_options *o, vg_session_creator *out,
                                         vg_status *st);

/* ------------------------------------------------------------------------ */
/* Monitored sessions */
typedef struct vg_monitored_session vg_monitored_session;

/* MonitoredSession(session_creator, hooks, stop_grace_period_secs). */
typedef struct vg_monitored_options {
    vg_session_creator creator;      /* {NULL}: ChiefSessionCreator with a default scaffold */
    const vg_hook *hooks;            /* owned by the session (also when creation fails) */
    int nhooks;
    double stop_grace_period_secs;   /* 0: TF's 120 */
} vg_monitored_options;

/* MonitoredSession: recovers from ABORTED/UNAVAILABLE by creating a new session. The
 * graph is finalized by the creator's scaffold; it is un-finalized again at close if it
 * was not finalized before. o NULL: defaults. Takes ownership of the creator and the
 * hooks. Returns NULL with *st set when a hook's begin/after_create_session or the
 * creator fails (non-preemption), INVALID_ARGUMENT (g NULL, hooks NULL with nhooks > 0),
 * RESOURCE_EXHAUSTED. */
VG_API vg_monitored_session *vg_monitored_session_new(vg_graph *g, const vg_monitored_options *o, vg_status *st);

typedef struct vg_singular_options {
    const vg_hook *hooks;
    int nhooks;
    vg_scaffold *scaffold;                 /* NULL: default scaffold */
    const vg_config_proto *config;         /* tf.ConfigProto; NULL: defaults (see vg_session_manager_options) */
    const char *checkpoint_dir;
    double stop_grace_period_secs;         /* 0: TF's 120 */
    const char *checkpoint_filename_with_path;
    bool no_checkpoint_dir_lock;           /* true: do not lock checkpoint_dir (vg_checkpoint_dir_lock_acquire) */
} vg_singular_options;

/* SingularMonitoredSession: no recovery; raw_session() available. Takes ownership of
 * the hooks. With a checkpoint_dir it locks the directory until freed (see
 * vg_checkpoint_dir_lock_acquire; FAILED_PRECONDITION when another trainer holds it)
 * and restores its newest checkpoint; a "<dir>/checkpoint" state file that exists but
 * cannot be read or parsed fails creation with DATA_LOSS naming it (vigil: never a
 * silent start from scratch; vg_checkpoint_find_latest). */
VG_API vg_monitored_session *vg_singular_monitored_session_new(vg_graph *g, const vg_singular_options *o,
                                                               vg_status *st);

/* run(): hooks' before_run, one session run with the caller's and the hooks' fetches,
 * feeds and options merged, hooks' after_run; out[i] (args->nfetches slots) get new
 * references to the caller's fetches only. run_metadata may be NULL. MonitoredSession:
 * when the session it closes to recover holds a non-preemption error a thread reported
 * (join re-raises it), that error is returned and nothing is recovered (as TF).
 * Fails with: any run or hook error; FAILED_PRECONDITION (TF's RuntimeError) "Same
 * tensor is fed by two hooks." / "Same tensor is fed by a SessionRunHook and user.",
 * "Run called even after should_stop requested." (hooks asked to stop) or "Session is
 * already closed."; MonitoredSession retries ABORTED/UNAVAILABLE on a new session. */
VG_API vg_code vg_monitored_session_run(vg_monitored_session *ms, const vg_run_args *args, vg_tensor **out,
                                        vg_run_metadata *run_metadata, vg_status *st);

/* run_step_fn: calls step_fn with a StepContext. The step function returns VG_OK, an
 * error, or (via vg_step_context_request_stop) VG_STOP_ITERATION, which
 * vg_monitored_session_end swallows. MonitoredSession re-runs the whole step_fn on a
 * new session after ABORTED/UNAVAILABLE. */
typedef struct vg_step_context vg_step_context;
typedef vg_code (*vg_step_fn)(vg_step_context *sc, void *payload, vg_status *st);
VG_API vg_code vg_monitored_session_run_step_fn(vg_monitored_session *ms, vg_step_fn fn, void *payload,
                                                vg_status *st);
/* The raw session: runs bypass the hooks. */
VG_API vg_session *vg_step_context_session(const vg_step_context *sc);
/* Same semantics as vg_monitored_session_run, at the coordinated layer. */
VG_API vg_code vg_step_context_run_with_hooks(vg_step_context *sc, const vg_run_args *args, vg_tensor **out,
                                              vg_run_metadata *run_metadata, vg_status *st);
/* Returns VG_STOP_ITERATION ("step_fn has requested the iterations to stop.") for the
 * step function to return. Sets no flag. */
VG_API vg_code vg_step_context_request_stop(vg_step_context *sc, vg_status *st);

/* True when closed, when a hook requested a stop in a completed run, or when the
 * coordinator was asked to stop (MonitoredSession recovers instead for a preemption
 * error reported to the coordinator). */
VG_API bool vg_monitored_session_should_stop(vg_monitored_session *ms);

/* close(): hooks' end(raw session) (when called on an open session without an error),
 * then stop the queue runners (request_stop + join within stop_grace_period_secs), then
 * close the raw session. A second close calls every hook's end(NULL) and fails with
 * FAILED_PRECONDITION "Session is already closed." (also when a hook's end(NULL)
 * fails, as TF's `finally` replaces it). Returns the error a thread reported to the
 * coordinator (join's error, which replaces a hook's end() error, as in TF), else a
 * hook's end() error, else VG_OK. MonitoredSession swallows a stored ABORTED/UNAVAILABLE. */
VG_API vg_code vg_monitored_session_close(vg_monitored_session *ms, vg_status *st);

/* The `with` exit: loop_rc VG_OK, VG_OUT_OF_RANGE or VG_STOP_ITERATION → hooks' end()
 * and close, and the result is close's; any other loop_rc → close without end() and
 * loop_rc is returned (st keeps the loop's message if close succeeds). Singular: when
 * vg_monitored_session_should_stop saw an error stored in the coordinator (TF raises it
 * from should_stop()), loop_rc VG_OK counts as that error (no end()); a loop that never
 * asked should_stop() gets end() and then close()'s re-raised error, as in TF. */
VG_API vg_code vg_monitored_session_end(vg_monitored_session *ms, vg_code loop_rc, vg_status *st);

/* SingularMonitoredSession only: the raw session (NULL once closed, and for a
 * recovering MonitoredSession). */
VG_API vg_session *vg_monitored_session_raw_session(const vg_monitored_session *ms);
/* The graph; NULL once closed. */
VG_API vg_graph *vg_monitored_session_graph(const vg_monitored_session *ms);
/* Closes if needed (without hooks' end) and frees, destroying the hooks. */
VG_API void vg_monitored_session_free(vg_monitored_session *ms);

/* ------------------------------------------------------------------------ */
/* MonitoredTrainingSession */
/* {0} is MonitoredTrainingSession() with no arguments: every field's zero stands for TF
 * 1.15's default. The four frequencies: 0 = TF's USE_DEFAULT (resolved as TF: with
 * both checkpoint frequencies unset, every 600 s; with both summary frequencies unset,
 * every 100 steps; setting one leaves the other None). "None for both" (no hook) is
 * spelled with the no_* flags. */
typedef struct vg_mts_options {
    bool not_chief;                      /* false: the chief (TF's is_chief=True); true: a worker */
    const char *checkpoint_dir;          /* NULL: no checkpoints, no summaries unless summary_dir */
    vg_scaffold *scaffold;
    const vg_hook *hooks;                /* owned by the session */
    int nhooks;
    const vg_hook *chief_only_hooks;     /* owned; destroyed at once on a non-chief */
    int nchief_only_hooks;
    double save_checkpoint_secs;         /* 0 (or < 0): USE_DEFAULT (600 when save_checkpoint_steps is unset too) */
    int64_t save_summaries_steps;        /* 0 (or < 0): USE_DEFAULT (100 when save_summaries_secs is unset too) */
    double save_summaries_secs;          /* 0 (or < 0): USE_DEFAULT */
    const vg_config_proto *config;       /* tf.ConfigProto; NULL: defaults (see vg_session_manager_options) */
    double stop_grace_period_secs;       /* 0: TF's 120 */
    int64_t log_step_count_steps;        /* 0: TF's 100 */
    double max_wait_secs;                /* 0: TF's 7200 */
    int64_t save_checkpoint_steps;       /* 0 (or < 0): USE_DEFAULT */
    const char *summary_dir;             /* NULL: checkpoint_dir */
    bool no_checkpoint_dir_lock;         /* chief: true = do not lock checkpoint_dir (vg_checkpoint_dir_lock_acquire) */
    bool no_checkpoints;                 /* true: no CheckpointSaverHook (TF: save_checkpoint_secs=None
                                            and save_checkpoint_steps=None) */
    bool no_summaries;                   /* true: no SummarySaverHook (TF: save_summaries_steps=None
                                            and save_summaries_secs=None) */
    bool no_step_counter;                /* true: no StepCounterHook (TF: log_step_count_steps=None or 0) */
} vg_mts_options;

/* tf.train.MonitoredTrainingSession: a MonitoredSession with TF's default hooks for the
 * chief (StepCounterHook, SummarySaverHook, CheckpointSaverHook) resolved from the
 * options exactly as TF 1.15 does. On the chief, checkpoint_dir is locked until the
 * session is freed (vg_checkpoint_dir_lock_acquire: a second trainer on it fails at once
 * with FAILED_PRECONDITION naming the directory and the holder's pid; off with
 * no_checkpoint_dir_lock), and an unreadable or unparsable "<dir>/checkpoint" state
 * file fails creation with DATA_LOSS naming it instead of initializing from scratch.
 * Fails with INVALID_ARGUMENT when both save_checkpoint_steps and save_checkpoint_secs
 * (or both summary frequencies) are set, and with everything vg_monitored_session_new
 * fails with. */
VG_API vg_monitored_session *vg_monitored_training_session_new(vg_graph *g, const vg_mts_options *o,
                                                               vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
