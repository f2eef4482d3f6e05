/*
 * vigil/hooks.h - the standard session-run hooks (tf.train.*Hook) and the
 * SecondOrStepTimer behind them. They are built on the public hook API of
 * vigil/monitored.h only, with TF 1.15's names, defaults and argument checks.
 *
 *     vg_hook hooks[2];
 *     vg_stop_at_step_hook(-1, 1000, &hooks[0], &st);          // last_step = 1000
 *     vg_nan_tensor_hook(loss, true, &hooks[1], &st);
 *     ... pass hooks to a monitored session, which then owns them.
 *
 * Each constructor fills *out and returns VG_OK, or returns INVALID_ARGUMENT (TF's
 * ValueError) with a message and leaves *out empty. A hook that was never given to a
 * monitored session is released with vg_hook_free.
 */
#ifndef VIGIL_HOOKS_H
#define VIGIL_HOOKS_H

#include "monitored.h"
#include "summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Destroys a hook's payload (if it has a destroy callback) and clears *h. */
VG_API void vg_hook_free(vg_hook *h);

/* The clock the hooks and timers use (seconds). Tests can replace it; NULL restores the
 * default (CLOCK_MONOTONIC). Not thread-safe against running hooks. */
VG_API void vg_hooks_set_clock(double (*now)(void));
VG_API double vg_hooks_now(void);

/* ------------------------------------------------------------------------ */
/* SecondOrStepTimer: triggers every every_secs seconds or every every_steps steps
 * (exactly one of them > 0, else INVALID_ARGUMENT "Either every_secs or every_steps
 * should be provided."). */
typedef struct vg_timer {
    double every_secs;       /* <= 0: unset */
    int64_t every_steps;     /* <= 0: unset */
    double last_triggered_time;
    int64_t last_triggered_step; /* -1: never */
} vg_timer;

VG_API vg_code vg_timer_init(vg_timer *t, double every_secs, int64_t every_steps, vg_status *st);
VG_API void vg_timer_reset(vg_timer *t);
VG_API bool vg_timer_should_trigger_for_step(const vg_timer *t, int64_t step);
/* Marks step as triggered; elapsed time and steps since the previous trigger (0, 0 on
 * the first) are returned through the optional pointers. */
VG_API void vg_timer_update_last_triggered_step(vg_timer *t, int64_t step, double *elapsed_secs,
                                                int64_t *elapsed_steps);
VG_API int64_t vg_timer_last_triggered_step(const vg_timer *t);

/* ------------------------------------------------------------------------ */
/* StopAtStepHook(num_steps | last_step): pass -1 for the unset one. */
VG_API vg_code vg_stop_at_step_hook(int64_t num_steps, int64_t last_step, vg_hook *out, vg_status *st);

/* CheckpointSaverListener: callbacks around saves (all optional). after_save may set
 * *request_stop to stop training. */
typedef struct vg_checkpoint_listener {
    vg_code (*begin)(void *payload, vg_status *st);
    vg_code (*before_save)(void *payload, vg_session *sess, int64_t global_step, vg_status *st);
    vg_code (*after_save)(void *payload, vg_session *sess, int64_t global_step, bool *request_stop, vg_status *st);
    vg_code (*end)(void *payload, vg_session *sess, int64_t global_step, vg_status *st);
    void (*destroy)(void *payload);
    void *payload;
} vg_checkpoint_listener;

typedef struct vg_checkpoint_saver_options {
    const char *checkpoint_dir;
    double save_secs;                 /* exactly one of save_secs / save_steps > 0 (TF has no
                                         default: 0 is TF's None) */
    int64_t save_steps;
    vg_saver *saver;                  /* saver or scaffold, not both (INVALID_ARGUMENT) */
    vg_scaffold *scaffold;            /* neither: the graph's "savers" collection / a new Saver */
    const char *checkpoint_basename;  /* NULL: "model.ckpt" */
    const vg_checkpoint_listener *listeners; /* owned by the hook */
    int nlisteners;
    bool no_save_graph_def;           /* false (TF's save_graph_def=True): graph.pbtxt and the
                                         graph/meta events are written; true: not */
} vg_checkpoint_saver_options;

VG_API vg_code vg_checkpoint_saver_hook(const vg_checkpoint_saver_options *o, vg_hook *out, vg_status *st);

/* StepCounterHook(every_n_steps = 100, every_n_secs, output_dir, summary_writer):
 * writes "global_step/sec" summaries (and logs steps/sec). */
typedef struct vg_step_counter_options {
    int64_t every_n_steps;            /* 0: TF's 100 when every_n_secs is 0 too, else unset
                                         (TF's None); < 0: None even then (INVALID_ARGUMENT
                                         without every_n_secs, as TF) */
    double every_n_secs;              /* 0 (or < 0): unset (TF's None) */
    const char *output_dir;           /* NULL: no summaries unless summary_writer */
    vg_file_writer *summary_writer;   /* borrowed */
} vg_step_counter_options;

/* o NULL or {0}: TF's defaults (every 100 steps). INVALID_ARGUMENT when both
 * frequencies are set (TF: "exactly one of every_n_steps and every_n_secs should be
 * provided."). */
VG_API vg_code vg_step_counter_hook(const vg_step_counter_options *o, vg_hook *out, vg_status *st);

/* LoggingTensorHook(tensors, every_n_iter | every_n_secs, at_end, formatter). */
typedef void (*vg_tensor_formatter)(void *payload, const char *const *names, vg_tensor *const *values, int n,
                                    char *buf, size_t len);
typedef struct vg_logging_tensor_options {
    const vg_output *tensors;
    const char *const *names;         /* display names (NULL: tensor names "loss:0") */
    int ntensors;
    int64_t every_n_iter;             /* 0: unset (TF's None); < 0: INVALID_ARGUMENT */
    double every_n_secs;              /* <= 0: unset (TF's None) */
    bool at_end;
    vg_tensor_formatter formatter;    /* NULL: "loss = 0.25, step = 10 (0.3 sec)" */
    void *formatter_payload;
    /* (optional) where lines go; NULL: vg_logf(VG_LOG_INFO, ...). */
    void (*sink)(void *payload, const char *line);
    void *sink_payload;
} vg_logging_tensor_options;


VG_API vg_code vg_logging_tensor_hook(const vg_logging_tensor_options *o, vg_hook *out, vg_status *st);

/* NanTensorHook(loss, fail_on_nan_loss = true): a NaN loss fails the run with
 * FAILED_PRECONDITION "NaN loss during training." (TF's NanLossDuringTrainingError), or
 * only requests a stop. */
VG_API vg_code vg_nan_tensor_hook(vg_output loss, bool fail_on_nan_loss, vg_hook *out, vg_status *st);

/* SummarySaverHook(save_steps | save_secs, output_dir | summary_writer,
 * scaffold | summary_op). */
typedef struct vg_summary_saver_options {
    int64_t save_steps;               /* exactly one of save_steps / save_secs > 0 (TF has no */
    double save_secs;                 /* default: 0 is TF's None) */
    const char *output_dir;
    vg_file_writer *summary_writer;   /* borrowed */
    vg_scaffold *scaffold;
    vg_output summary_op;
} vg_summary_saver_options;

VG_API vg_code vg_summary_saver_hook(const vg_summary_saver_options *o, vg_hook *out, vg_status *st);

/* GlobalStepWaiterHook(wait_until_step): before_run blocks until the global step
 * reaches wait_until_step (polling every 0.5 s; a stop request ends the wait). */
VG_API vg_code vg_global_step_waiter_hook(int64_t wait_until_step, vg_hook *out, vg_status *st);

/* FinalOpsHook(final_ops, final_ops_feed_dict): runs the ops in end(); their values are
 * then available through vg_final_ops_hook_values (borrowed from the hook). The arrays
 * are copied and the hook takes its own reference to each feed tensor. */
typedef struct vg_final_ops_options {
    const vg_output *final_ops;
    int nfinal_ops;
    const vg_output *feeds;
    vg_tensor *const *feed_values;
    int nfeeds;
} vg_final_ops_options;


/* Fails with INVALID_ARGUMENT (o or out NULL, a NULL array with a count > 0). */
VG_API vg_code vg_final_ops_hook(const vg_final_ops_options *o, vg_hook *out, vg_status *st);
/* Values computed at end(), NULL before; *n gets their count. h must be the hook built
 * by vg_final_ops_hook (its payload stays valid while the monitored session lives). */
VG_API vg_tensor *const *vg_final_ops_hook_values(const vg_hook *h, int *n);

/* FeedFnHook(feed_fn): before every run, feed_fn fills the feeds (arrays it owns, valid
 * until the run ends). */
typedef vg_code (*vg_feed_fn)(void *payload, const vg_output **feeds, vg_tensor *const **values, int *n,
                              vg_status *st);
VG_API vg_code vg_feed_fn_hook(vg_feed_fn fn, void *payload, vg_hook *out, vg_status *st);

/* ProfilerHook(save_steps | save_secs, output_dir, show_dataflow, show_memory): writes
 * Chrome trace files "timeline-<step>.json" from full traces, and the run metadata to
 * the output dir's event file with tag "step_<step>". */
typedef struct vg_profiler_options {
    int64_t save_steps;               /* exactly one of save_steps / save_secs > 0 (0: TF's None) */
    double save_secs;
    const char *output_dir;           /* NULL or "" (TF's ""): the current directory */
    bool no_show_dataflow;            /* false (TF's show_dataflow=True); true: hidden */
    bool show_memory;                 /* false */
} vg_profiler_options;

VG_API vg_code vg_profiler_hook(const vg_profiler_options *o, vg_hook *out, vg_status *st);


/* The global-step read tensor the step hooks share (TF's
 * training_util._get_or_create_global_step_read): "<global_step>/add" = global step + 0,
 * made once per graph and cached in the "global_step_read_op_cache" collection. A train
 * op made with a control dependency on it increments after the read, as TF's
 * _increment_global_step does, so a hook fetching it sees the step before the increment.
 * *out gets the (graph-owned) output. Fails with INVALID_ARGUMENT (NULL argument),
 * FAILED_PRECONDITION when the graph has no global step, the graph's sticky error. */
VG_API vg_code vg_global_step_read(vg_graph *g, vg_output *out, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
