/*
 * vigil/evaluation.h - TF 1.15's evaluation loop (tf.contrib.training.evaluate_once,
 * python/training/evaluation.py): the local "eval_step" counter, _StopAfterNEvalsHook,
 * contrib's SummaryAtEndHook and _evaluate_once, which restores a checkpoint through a ChiefSessionCreator, runs
 * the eval ops (typically metric update ops) until a hook asks to stop, and returns the
 * final ops' values (typically the metric values) from a FinalOpsHook; contrib's
 * evaluate_repeatedly and train (vg_training_train, src/monitored/training.c).
 *
 *     vg_metric acc = vg_metrics_accuracy(g, y, vg_argmax(g, x, 1, VG_INT64, NULL), NULL);
 *     vg_hook stop;
 *     vg_stop_after_n_evals_hook(10, true, &stop, &st);
 *     vg_evaluate_options o = {0};
 *     o.checkpoint_path = "runs/model.ckpt-1000";
 *     o.eval_ops = &acc.update.op;
 *     o.neval_ops = 1;
 *     o.final_ops = &acc.value;
 *     o.nfinal_ops = 1;
 *     o.hooks = &stop;
 *     o.nhooks = 1;
 *     vg_tensor *value = NULL;
 *     if (vg_evaluate_once(g, &o, &value, &st) == VG_OK) vg_tensor_free(value);
 */
#ifndef VIGIL_EVALUATION_H
#define VIGIL_EVALUATION_H

#include "monitored.h"
#include "summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tf.GraphKeys.EVAL_STEP */
#define VG_EVAL_STEP "eval_step"

/* _get_or_create_eval_step: the int64 scalar local variable "eval_step" (zeros, not
 * trainable, in "local_variables" and "eval_step"), or the one already in the
 * collection. Returns its ref output; {NULL, 0} with the graph's error recorded on
 * failure: INVALID_ARGUMENT "Multiple tensors added to tf.GraphKeys.EVAL_STEP" (or g
 * NULL). */
VG_API vg_output vg_get_or_create_eval_step(vg_graph *g);

/* _StopAfterNEvalsHook(num_evals, log_progress): requests a stop once the eval step
 * reaches num_evals (-1: never, TF's None), logging "Evaluation [k/n]" at INFO every
 * max(1, floor(n / 10)) evaluations when n >= 20, else every one. vg_evaluate_once
 * gives it the counter; used without it the hook fails in before_run with
 * FAILED_PRECONDITION. Fails with INVALID_ARGUMENT (out NULL, num_evals < -1). */
VG_API vg_code vg_stop_after_n_evals_hook(int64_t num_evals, bool log_progress, vg_hook *out, vg_status *st);

/* tf.contrib.training.SummaryAtEndHook(log_dir, summary_writer, summary_op): at the
 * end of the session runs summary_op ({NULL, 0}: merge_all() at begin) and writes it at
 * the global step (created by begin if missing) to summary_writer (borrowed) or the
 * cached writer of log_dir, then flushes. Fails with INVALID_ARGUMENT (out NULL, "One
 * of log_dir or summary_writer should be used."); at end with the run's or writer's
 * error. */
VG_API vg_code vg_summary_at_end_hook(const char *log_dir, vg_file_writer *summary_writer, vg_output summary_op,
                                      vg_hook *out, vg_status *st);

typedef struct vg_evaluate_options {
    const char *checkpoint_path;        /* required: the checkpoint prefix to restore */
    vg_scaffold *scaffold;              /* NULL: a default one; a given one stays the caller's */
    const vg_config_proto *config;      /* tf.ConfigProto; NULL: defaults */
    vg_op *const *eval_ops;             /* run each step with the eval-step increment; */
    int neval_ops;                      /* none: no loop, only the final ops */
    const vg_output *feeds;             /* feed_dict of every eval run */
    vg_tensor *const *feed_values;
    int nfeeds;
    const vg_output *final_ops;         /* run once at the end (FinalOpsHook) */
    int nfinal_ops;
    const vg_output *final_feeds;       /* final_ops_feed_dict */
    vg_tensor *const *final_feed_values;
    int nfinal_feeds;
    const vg_hook *hooks;               /* owned by the evaluation (also on failure) */
    int nhooks;
} vg_evaluate_options;


/* _evaluate_once: adds "eval_step" and its AssignAdd (use_locking) to the eval ops,
 * hands _StopAfterNEvalsHook hooks the incremented counter, creates a MonitoredSession
 * (ChiefSessionCreator restoring checkpoint_path; the user's hooks + a FinalOpsHook),
 * runs the eval ops until should_stop (an OUT_OF_RANGE input ends the loop cleanly, as
 * TF's `with` block), and stores the final ops' values in final_values[0 ..
 * nfinal_ops-1] (new tensors the caller frees; may be NULL when nfinal_ops is 0).
 * Logs "Starting evaluation at ..." / "Finished evaluation at ..." at INFO.
 * Fails with: INVALID_ARGUMENT (g, o or checkpoint_path NULL, a NULL array with a
 * count, final_values NULL with final ops), the session creator's errors
 * (INVALID_ARGUMENT "The passed save_path is not a valid checkpoint" for a missing
 * checkpoint, TF's ValueError), any eval run's or hook's error. final_values are left NULL on
 * failure. */
VG_API vg_code vg_evaluate_once(vg_graph *g, const vg_evaluate_options *o, vg_tensor **final_values,
                                vg_status *st);

/* tf.contrib.training.evaluate_repeatedly(checkpoint_dir, scaffold, eval_ops,
 * feed_dict, final_ops, final_ops_feed_dict, eval_interval_secs, hooks, config,
 * max_number_of_evaluations, timeout): the eval-step ops are built once, then for each
 * new checkpoint of checkpoint_dir (checkpoints_iterator: polls every second for a
 * checkpoint other than the last one evaluated, gives up after timeout seconds (< 0:
 * waits for ever), and starts the next evaluation no sooner than eval_interval_secs
 * after the start of the previous one) one evaluation as vg_evaluate_once (o's
 * checkpoint_path is ignored), with the same hooks each time (begin() runs again per
 * session, as TF reuses the hook objects). Stops after max_number_of_evaluations (<= 0:
 * no limit, TF's None) or at the timeout, which is not an error. final_values gets the
 * final ops' values of the last evaluation (NULL where none ran), *num_evaluations
 * (may be NULL) the count. Hooks are owned by the call (also on failure). Fails with
 * INVALID_ARGUMENT (as vg_evaluate_once, checkpoint_dir NULL) and with an evaluation's
 * error, which ends the loop (final_values are then left NULL). */
VG_API vg_code vg_evaluate_repeatedly(vg_graph *g, const char *checkpoint_dir, const vg_evaluate_options *o,
                                      double eval_interval_secs, int64_t max_number_of_evaluations, double timeout,
                                      vg_tensor **final_values, int64_t *num_evaluations, vg_status *st);

/* tf.contrib.training.train(train_op, logdir, master, is_chief, scaffold, hooks,
 * chief_only_hooks, save_checkpoint_secs, save_summaries_steps, config, max_wait_secs):
 * a MonitoredTrainingSession with o's options (o->checkpoint_dir is logdir; o NULL:
 * MonitoredTrainingSession's defaults, which are train()'s: checkpoints every 600 s,
 * summaries every 100 steps) running train_op (e.g. vg_create_train_op's tensor) until
 * should_stop, then the `with` exit (an OUT_OF_RANGE input ends it cleanly). *loss (may
 * be NULL) gets train_op's last value as a double (NaN when no step ran or train_op is
 * not a numeric scalar), TF's return value. The hooks in o are owned by the call.
 * Fails with INVALID_ARGUMENT (g NULL, train_op missing; as TF, "logdir cannot be None
 * when save_summaries_steps is not None" / "... save_checkpoint_secs ..." for a chief
 * without checkpoint_dir whose frequencies are not 0), the session's and the runs'
 * errors. */
VG_API vg_code vg_training_train(vg_graph *g, vg_output train_op, const vg_mts_options *o, double *loss,
                                 vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
