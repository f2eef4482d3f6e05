/*
 * vigil/loss_scale.h - loss scaling for float16 mixed precision, as TF 1.15's
 * tf.train.experimental.FixedLossScale, DynamicLossScale and
 * MixedPrecisionLossScaleOptimizer (training/experimental/loss_scale.py,
 * loss_scale_optimizer.py). docs/mixed_precision.md.
 *
 *     vg_status st;
 *     vg_graph *g = vg_graph_new();
 *     vg_loss_scale *ls = vg_loss_scale_get(g, "dynamic", &st);  // DynamicLossScale()
 *     vg_optimizer *opt = vg_mixed_precision_loss_scale_optimizer_new(vg_optimizer_new_sgd(0.1), ls, &st);
 *     // vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL): loss * scale, the
 *     // gradients / scale, applied only when all are finite; the scale adapts.
 *     vg_optimizer_free(opt);  // frees the inner optimizer and the loss scale too
 *     vg_graph_free(g);
 *
 * A DynamicLossScale owns two non-trainable resource variables named as TF names them,
 * so checkpoints line up: "current_loss_scale" (float32, initial_loss_scale) and
 * "good_steps" (int64, 0), created in the graph's current name scope (TF creates them
 * in the constructor, where the loss scale is built), in the "variables" collection.
 */
#ifndef VIGIL_LOSS_SCALE_H
#define VIGIL_LOSS_SCALE_H

#include "optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_loss_scale vg_loss_scale;

/* FixedLossScale(loss_scale_value): a constant scale. Fails (NULL, st set) with
 * INVALID_ARGUMENT "loss_scale_value must be at least 1." (value < 1 or NaN), and
 * RESOURCE_EXHAUSTED. Free with vg_loss_scale_free (or hand it to an optimizer). */
VG_API vg_loss_scale *vg_fixed_loss_scale_new(double loss_scale_value, vg_status *st);
/* DynamicLossScale(initial_loss_scale=2**15, increment_period=2000, multiplier=2.):
 * creates the variables "current_loss_scale" and "good_steps" in g (as under TF's
 * init_scope: no control dependencies of the caller). Fails (NULL, st set) with
 * INVALID_ARGUMENT (g NULL, increment_period < 1, initial_loss_scale or multiplier not
 * finite and positive: vigil's checks, TF does not check), the graph's error (the
 * variables' names taken already, ...), RESOURCE_EXHAUSTED. */
VG_API vg_loss_scale *vg_dynamic_loss_scale_new(vg_graph *g, double initial_loss_scale, int64_t increment_period,
                                                double multiplier, vg_status *st);
/* DynamicLossScale() with TF's defaults (32768, 2000, 2). Same failures. */
VG_API vg_loss_scale *vg_dynamic_loss_scale_new_default(vg_graph *g, vg_status *st);
/* loss_scale.get(identifier): "dynamic" gives DynamicLossScale() (its variables in g),
 * a number ("128", "1e3") FixedLossScale(number). Fails (NULL, st set) with
 * INVALID_ARGUMENT "Could not interpret loss scale identifier: <id>" (NULL or anything
 * else), and the constructors' failures. */
VG_API vg_loss_scale *vg_loss_scale_get(vg_graph *g, const char *identifier, vg_status *st);
/* Frees the object (not its variables, which stay in the graph). NULL is a no-op. */
VG_API void vg_loss_scale_free(vg_loss_scale *ls);

/* isinstance(ls, DynamicLossScale). */
VG_API bool vg_loss_scale_is_dynamic(const vg_loss_scale *ls);
/* The constructor's numbers: initial_loss_scale (a fixed scale's value),
 * increment_period (0 for a fixed scale), multiplier (1 for a fixed scale). */
VG_API double vg_loss_scale_initial(const vg_loss_scale *ls);
VG_API int64_t vg_loss_scale_increment_period(const vg_loss_scale *ls);
VG_API double vg_loss_scale_multiplier(const vg_loss_scale *ls);
/* A DynamicLossScale's variables' handles (VarHandleOp outputs, for savers and reads):
 * "current_loss_scale" and "good_steps"; {NULL, 0} for a fixed scale. */
VG_API vg_output vg_loss_scale_current_loss_scale(const vg_loss_scale *ls);
VG_API vg_output vg_loss_scale_good_steps(const vg_loss_scale *ls);

/* loss_scale(): the scale as a scalar float32 tensor: a Const "Const" for a fixed
 * scale, a ReadVariableOp "ReadVariableOp" of current_loss_scale for a dynamic one.
 * {NULL, 0} on failure with the graph's error recorded: INVALID_ARGUMENT (NULL ls, or
 * a dynamic scale whose variables live in another graph). */
VG_API vg_output vg_loss_scale_value(vg_loss_scale *ls, vg_graph *g);

/* loss_scale.update(grads): grads[0..n) are the unscaled gradients ({NULL, 0} entries
 * are skipped). Returns the update op and sets *should_apply_gradients to a scalar
 * bool tensor.
 *  - fixed scale: a NoOp "NoOp" and a Const true;
 *  - dynamic scale (TF 1.15's graph): is_finite = all of IsFinite over every gradient;
 *    tf.cond(is_finite,
 *      finite:     tf.cond(good_steps + 1 >= increment_period,
 *                    group(current_loss_scale = scale * multiplier if that is finite,
 *                          good_steps = 0),
 *                    good_steps += 1),
 *      non-finite: group(good_steps = 0,
 *                        current_loss_scale = max(scale / multiplier, 1)))
 *    and should_apply_gradients = is_finite.
 * NULL on failure with the graph's error recorded (INVALID_ARGUMENT: NULL ls, n > 0
 * with NULL grads, another graph's loss scale; cond's errors). */
VG_API vg_op *vg_loss_scale_update(vg_loss_scale *ls, vg_graph *g, const vg_output *grads, int n,
                                   vg_output *should_apply_gradients);

/* tf.train.experimental.MixedPrecisionLossScaleOptimizer(opt, loss_scale): a
 * vg_optimizer wrapping opt; use it with vg_optimizer_compute_gradients /
 * apply_gradients / minimize (and the vg_dist_* calls) as any optimizer.
 *  - compute_gradients: loss * loss_scale() ("mul"), the inner optimizer's gradients,
 *    each multiplied by 1 / loss_scale() ("truediv", "mul_<i>"); a Gather's gradient
 *    (vigil's IndexedSlices, UnsortedSegmentSum) has its values scaled and stays
 *    sparse, as TF scales IndexedSlices.values. The loss and the gradients must be
 *    float32 (TF multiplies them by a float32 scale; float16 parts of the model sit
 *    between Casts, the variables are float32 master weights).
 *  - apply_gradients: fixed scale: the inner optimizer's apply_gradients. Dynamic
 *    scale: update = loss_scale.update(grads); tf.cond(should_apply, inner
 *    apply_gradients named "<name>-wrapped", no_op); the train op is a NoOp named
 *    <name> (the inner optimizer's name when NULL) grouping the cond and the update.
 *    As in TF 1.15, a step with non-finite gradients applies nothing and does not
 *    increment global_step (the increment is part of the inner apply).
 * vg_optimizer_name gives the inner optimizer's name (TF: opt.get_name());
 * vg_optimizer_set_gate_gradients / set_learning_rate_tensor reach the inner one.
 * Takes ownership of opt and loss_scale on success (vg_optimizer_free of the wrapper
 * frees them); on failure both stay the caller's. Fails (NULL, st set) with
 * INVALID_ARGUMENT (NULL opt or loss_scale; opt already a loss-scale optimizer) and
 * RESOURCE_EXHAUSTED. */
VG_API vg_optimizer *vg_mixed_precision_loss_scale_optimizer_new(vg_optimizer *opt, vg_loss_scale *loss_scale,
                                                                 vg_status *st);
/* The loss scale of a MixedPrecisionLossScaleOptimizer (borrowed), NULL otherwise. */
VG_API vg_loss_scale *vg_optimizer_loss_scale(const vg_optimizer *opt);
/* The optimizer a MixedPrecisionLossScaleOptimizer wraps (borrowed), NULL otherwise. */
VG_API vg_optimizer *vg_optimizer_wrapped(const vg_optimizer *opt);

/* tf.train.experimental.enable_mixed_precision_graph_rewrite(opt, loss_scale): turns
 * on the graph rewrite as vg_enable_mixed_precision_graph_rewrite (vigil's rewrite is
 * bfloat16's, vigil/mixed_precision.h) and returns opt wrapped in a
 * MixedPrecisionLossScaleOptimizer with loss_scale, as TF does (TF's default
 * loss_scale is "dynamic": pass vg_loss_scale_get(g, "dynamic", &st)). bfloat16 needs
 * no scaling, so vg_enable_mixed_precision_graph_rewrite(opt) alone keeps opt as it
 * is; this form is for programs written against TF's float16 recipe. Ownership and
 * failures as vg_mixed_precision_loss_scale_optimizer_new ('"opt" must not already be
 * an instance of a MixedPrecisionLossScaleOptimizer.'); on failure the rewrite is not
 * switched on. */
VG_API vg_optimizer *vg_enable_mixed_precision_graph_rewrite_with_loss_scale(vg_optimizer *opt,
                                                                             vg_loss_scale *loss_scale,
                                                                             vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
