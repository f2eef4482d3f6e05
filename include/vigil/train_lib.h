/*
 * vigil/train_lib.h - the Python-level helpers real TF1 programs call around the
 * optimizer (issue 11 §7): learning-rate schedules over the global step, gradient
 * clipping, ExponentialMovingAverage, and the tensor constructors tf.random_uniform /
 * random_normal / truncated_normal / zeros / ones (composites of ops_ext.h's ops). Each builds TF 1.15's graph (same formulas, name scopes and op names, e.g.
 * "ExponentialDecay/Pow", result "ExponentialDecay") with the public builders.
 *
 * Conventions: float arguments that TF takes as Python numbers are doubles here and
 * become float32 Consts (as TF's convert_to_tensor of a Python float); the step may be
 * any numeric tensor (the int64 global step usually) and is cast to float32. On failure
 * a builder returns {NULL, 0} (or VG_INVALID_ARGUMENT from the list builders) and
 * records the graph's sticky error (vg_graph_status): VG_INVALID_ARGUMENT for a
 * missing global step ("global_step is required for exponential_decay."), a bad list
 * length, or mismatched shapes. Nothing returned is owned by the caller beyond the
 * graph.
 */
#ifndef VIGIL_TRAIN_LIB_H
#define VIGIL_TRAIN_LIB_H

#include "graph.h"
#include "ops_ext.h"
#include "optimizer.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- learning-rate schedules (src/train/lr_schedules.c) ------------------- */
/* lr * decay_rate ^ (step / decay_steps), the exponent floored when staircase. */
VG_API vg_output vg_exponential_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                      double decay_rate, bool staircase, const char *name);
/* values[0] while x <= boundaries[0], values[i] for boundaries[i-1] < x <= boundaries[i],
 * values[n-1] after; n_values = n_boundaries + 1 (else INVALID_ARGUMENT "The length of
 * boundaries should be 1 less than the length of values"). Boundaries take x's dtype.
 * TF builds a tf.case; vigil builds the same choice as a chain of Selects. */
VG_API vg_output vg_piecewise_constant(vg_graph *g, vg_output x, const double *boundaries, const double *values,
                                       int n_values, const char *name);
/* (lr - end_lr) * (1 - step / decay_steps) ^ power + end_lr; step capped at decay_steps,
 * or with cycle decay_steps scaled by ceil(step / decay_steps) (1 at step 0). */
VG_API vg_output vg_polynomial_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                     double end_learning_rate, double power, bool cycle, const char *name);
/* lr / (1 + decay_rate * step / decay_steps) (floored ratio when staircase). */
VG_API vg_output vg_inverse_time_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                       double decay_rate, bool staircase, const char *name);
/* lr * exp(-decay_rate * step / decay_steps) (TF: exponential_decay with exp(-decay_rate)). */
VG_API vg_output vg_natural_exp_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                      double decay_rate, bool staircase, const char *name);
/* lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha). */
VG_API vg_output vg_cosine_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                 double alpha, const char *name);
/* SGDR: cosine decay restarting every first_decay_steps * t_mul^i steps, the amplitude
 * scaled by m_mul^i (TF's defaults t_mul 2.0, m_mul 1.0, alpha 0.0). */
VG_API vg_output vg_cosine_decay_restarts(vg_graph *g, double learning_rate, vg_output global_step,
                                          double first_decay_steps, double t_mul, double m_mul, double alpha,
                                          const char *name);
/* lr * ((alpha + linear) * cosine + beta) with linear = (decay_steps - s) / decay_steps,
 * cosine = 0.5 * (1 + cos(pi * 2 * num_periods * s / decay_steps)), s = min(step,
 * decay_steps) (TF's defaults num_periods 0.5, alpha 0.0, beta 0.001). */
VG_API vg_output vg_linear_cosine_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                        double num_periods, double alpha, double beta, const char *name);
/* linear_cosine_decay with Gaussian noise on the linear part: stddev
 * sqrt(initial_variance / (1 + s) ^ variance_decay), a fresh draw per run (TF's defaults
 * initial_variance 1.0, variance_decay 0.55, num_periods 0.5, alpha 0.0, beta 0.001;
 * seed: the op seed, 0 = none). */
VG_API vg_output vg_noisy_linear_cosine_decay(vg_graph *g, double learning_rate, vg_output global_step,
                                              double decay_steps, double initial_variance, double variance_decay,
                                              double num_periods, double alpha, double beta, int64_t seed,
                                              const char *name);

/* ---- gradient clipping (src/train/clip.c; tf.clip_by_value is in ops_ext.h) ---- */
/* tf.clip_by_norm: t * clip_norm / max(l2norm(t over axes), clip_norm); naxes < 0 means
 * all axes. The result is an Identity named "clip_by_norm". */
VG_API vg_output vg_clip_by_norm(vg_graph *g, vg_output t, vg_output clip_norm, const int32_t *axes, int naxes,
                                 const char *name);
/* tf.global_norm: sqrt(2 * sum_i L2Loss(t_i)) named "global_norm/global_norm"; entries
 * of t with op == NULL are skipped (TF's None). At least one entry must be set. */
VG_API vg_output vg_global_norm(vg_graph *g, const vg_output *t, int n, const char *name);
/* tf.clip_by_global_norm: out[i] = t[i] * clip_norm / max(global_norm, clip_norm)
 * ("clip_by_global_norm/clip_by_global_norm/_i"); all NaN when the norm is not finite.
 * use_norm {NULL} computes global_norm(t). *norm_out (may be NULL) gets the norm used.
 * Entries with op == NULL stay {NULL}. Returns VG_OK or the graph's error. */
VG_API vg_code vg_clip_by_global_norm(vg_graph *g, const vg_output *t, int n, vg_output clip_norm, vg_output use_norm,
                                      vg_output *out, vg_output *norm_out, const char *name);

/* ---- tf.contrib.training.create_train_op (src/train/train_op.c) ----------- */
/* Options of vg_create_train_op; {0} (or NULL) gives TF's defaults. */
typedef struct vg_create_train_op_opts {
    vg_output global_step;               /* {NULL, 0}: get_or_create_global_step() */
    const vg_output *variables_to_train; /* NULL: tf.trainable_variables() */
    int nvars;
    double clip_gradient_norm;           /* > 0: slim's clip_gradient_norms, each gradient
                                            clip_by_norm'ed under "clip_grads"; 0: none */
    bool no_check_numerics;              /* false: CheckNumerics "LossTensor is inf or nan" */
} vg_create_train_op_opts;

/* tf.contrib.training.create_train_op(total_loss, optimizer, global_step, update_ops
 * = UPDATE_OPS collection, variables_to_train, transform_grads_fn, check_numerics) as
 * tf.contrib.slim.learning.create_train_op(..., clip_gradient_norm) calls it: the
 * update ops run first (NoOp "update_barrier"), compute_gradients, optional clipping,
 * apply_gradients(global_step) (which increments it), then under "train_op" the loss
 * through CheckNumerics and an Identity "control_dependency" that runs after the
 * updates. Returns that tensor (running it trains one step and yields the loss), also
 * added to the "train_op" collection; {NULL, 0} on failure with the graph's error:
 * INVALID_ARGUMENT (total_loss or opt missing, clip_gradient_norm < 0, no variables to
 * train), compute_gradients' and apply_gradients' errors. opt stays the caller's. */
VG_API vg_output vg_create_train_op(vg_graph *g, vg_output total_loss, vg_optimizer *opt,
                                    const vg_create_train_op_opts *o);

/* ---- Python-level constructors (src/train/tensor_lib.c) -------------------- */
/* tf.random_uniform(shape, minval, maxval, dtype, seed): float/double, or int32/int64
 * through RandomUniformInt (values in [minval, maxval)). shape: a 1-D int32/int64 tensor, possibly
 * computed at run time. seed: the op seed (0 = none), combined with the graph seed as
 * TF's get_seed. */
VG_API vg_output vg_random_uniform_range(vg_graph *g, vg_output shape, double minval, double maxval, vg_dtype dt,
                                         int64_t seed, const char *name);
/* tf.random_normal(shape, mean, stddev, dtype, seed) and tf.truncated_normal. */
VG_API vg_output vg_random_normal_dist(vg_graph *g, vg_output shape, double mean, double stddev, vg_dtype dt,
                                       int64_t seed, const char *name);
VG_API vg_output vg_truncated_normal_dist(vg_graph *g, vg_output shape, double mean, double stddev, vg_dtype dt,
                                          int64_t seed, const char *name);
/* tf.zeros / tf.ones with a shape tensor: Fill(shape, 0 / 1) named "zeros" / "ones". */
VG_API vg_output vg_zeros(vg_graph *g, vg_output shape, vg_dtype dt, const char *name);
VG_API vg_output vg_ones(vg_graph *g, vg_output shape, vg_dtype dt, const char *name);

/* tf.nn.xw_plus_b(x, weights, biases): BiasAdd(MatMul(x, weights), biases) under the
 * name scope "xw_plus_b" (name NULL), the BiasAdd named after the scope. Errors as
 * vg_matmul and vg_bias_add (graph error INVALID_ARGUMENT). */
VG_API vg_output vg_xw_plus_b(vg_graph *g, vg_output x, vg_output weights, vg_output biases, const char *name);

/* ---- tf.einsum (src/train/einsum.c) ------------------------------------------ */
/* tf.einsum(equation, *inputs) lowered to Sum / Transpose / Reshape / MatMul /
 * BatchMatMulV2 as TF 1.15's Python einsum: "ij,jk->ik", "bij,bjk->bik", "ij->ji",
 * "i,i->", "bi,bi->b", "ijk,kl->ijl", "i,j->ij", implicit outputs ("ij,jk": the labels
 * seen once, sorted), one operand (sums and transposes), several (pairwise from the
 * left) and ellipses ("...ij,...jk->...ik"; the operands' ranks must be known and the
 * ellipsis dims equal: no size-1 broadcasting). Gradients follow from those ops. Dims
 * may be unknown at build time. The result is an Identity named "einsum" (name NULL)
 * with the ops under its scope. Fails ({NULL}, graph error) with INVALID_ARGUMENT
 * "einsum '<eq>': ..." (operand count, rank, a label's dimensions differing, an output
 * label in no input, non-letter labels, two ellipses in one operand) and UNIMPLEMENTED
 * for a label repeated within one operand (diagonals) and an ellipsis over an input of
 * unknown rank. */
VG_API vg_output vg_einsum(vg_graph *g, const char *equation, const vg_output *inputs, int n, const char *name);

/* ---- moving_averages.assign_moving_average (src/train/moving_averages.c) ------ */
/* moving_averages.assign_moving_average(variable, value, decay, zero_debias, name) of
 * TF 1.15 (its zero_debias default is true): variable -= (variable - value) * (1 -
 * decay), ops under the name scope "AssignMovingAvg" (name NULL) and the update named
 * after the scope. zero_debias: TF's _zero_debias: "biased" (zeros like variable) and
 * "local_step" (a zeros scalar) are made with get_variable (not trainable) in the
 * variable scope named after the variable inside the current one, so "s/v" gets
 * "s/s/v/biased" and "s/s/v/local_step" (taken names get "_1", "_2" ... as TF's
 * _maybe_get_unique); each run: biased -= (biased - value) * (1 - decay), local_step +=
 * 1, variable = biased / (1 - decay ^ local_step). Returns the update's output (the new
 * value). variable: the ref of a float/double VariableV2. Fails ({NULL}, graph error)
 * with INVALID_ARGUMENT naming the variable (not a variable, wrong dtype, incompatible
 * value shape) or get_variable's errors. _t: decay as a tensor (TF's "1.0 - decay" Sub). */
VG_API vg_output vg_assign_moving_average(vg_graph *g, vg_output variable, vg_output value, double decay,
                                          bool zero_debias, const char *name);
VG_API vg_output vg_assign_moving_average_t(vg_graph *g, vg_output variable, vg_output value, vg_output decay,
                                            bool zero_debias, const char *name);
/* moving_averages.weighted_moving_average(value, decay, weight, name) of TF 1.15:
 * in variable scope name (NULL: "WeightedMovingAvg", made unique) two get_variable
 * zeros variables, "value_x_weight" (value's shape) and "weight" (weight's shape), not
 * trainable, in GLOBAL_VARIABLES; returns moving_average(value * weight) /
 * moving_average(weight) (two assign_moving_average updates without zero_debias) as the
 * RealDiv named "<its name scope>/<full variable scope name>" ("WeightedMovingAvg/
 * WeightedMovingAvg" at the top). value and weight: float or double of one dtype and of
 * fully defined shapes (TF's truediv argument makes no difference for them). Fails
 * ({NULL}, graph error) as get_variable and vg_assign_moving_average do. */
VG_API vg_output vg_weighted_moving_average(vg_graph *g, vg_output value, double decay, vg_output weight,
                                            const char *name);

/* ---- ExponentialMovingAverage (src/train/ema.c) ----------------------------- */
/* TF's GraphKeys.MOVING_AVERAGE_VARIABLES. */
#define VG_MOVING_AVERAGE_VARIABLES "moving_average_variables"

typedef struct vg_ema vg_ema;

/* tf.train.ExponentialMovingAverage(decay, num_updates, zero_debias, name). num_updates
 * {NULL} for none (usually the global step); name NULL = "ExponentialMovingAverage".
 * zero_debias applies to averaged tensors (not variables), as in TF. Ownership: the caller frees the object with vg_ema_free (the ops
 * and variables stay in g). NULL (graph error RESOURCE_EXHAUSTED) when out of memory. */
VG_API vg_ema *vg_ema_new(vg_graph *g, double decay, vg_output num_updates, bool zero_debias, const char *name);
VG_API void vg_ema_free(vg_ema *e);
/* ema.apply(var_list): variable refs or tensors of fully defined shape (vars NULL =
 * trainable_variables). Creates the shadows on first use (a variable's from its initial
 * value, a tensor's zeros), named as TF's slot_creator names them:
 * "<current variable scope>/<var op name>/<name>" ("_1", "_2" ... when that name was
 * used as a scope before), and returns the NoOp "<name>" grouping the updates
 * "<name>/AssignMovingAvg", "_1", ... With zero_debias a tensor's shadow S gets
 * "<variable scope>/S/biased" and ".../local_step" (vg_assign_moving_average).
 * NULL on failure with the graph error:
 * INVALID_ARGUMENT "The variables must be half, float, or double: <var>", or a tensor
 * whose shape is not fully defined. */
VG_API vg_op *vg_ema_apply(vg_ema *e, const vg_output *vars, int n);
/* ema.average(var): the shadow's ref, {NULL} when var was never applied. */
VG_API vg_output vg_ema_average(const vg_ema *e, vg_output var);
/* ema.average_name(var): the shadow's op name once var was applied, else the name
 * apply() would give it: graph.unique_name("<var op name>/<name>") under the current
 * name scope (not reserved). Written to buf (returned); NULL for a NULL argument. */
VG_API char *vg_ema_average_name(const vg_ema *e, vg_output var, char *buf, size_t len);

/* A name -> variable map (checkpoint names to restore into). Free with vg_name_map_free. */
typedef struct vg_name_map {
    int n;
    char **names;
    vg_output *vars;
} vg_name_map;
VG_API void vg_name_map_free(vg_name_map *m);
/* ema.variables_to_restore(moving_avg_variables): average_name(v) -> v for each
 * averaged variable (NULL list = trainable + moving_average_variables), plus
 * name -> v for every other global variable whose name is not already a key. Fills
 * *out (owned by the caller). Fails with INVALID_ARGUMENT, RESOURCE_EXHAUSTED. */
VG_API vg_code vg_ema_variables_to_restore(const vg_ema *e, const vg_output *moving_avg_vars, int n, vg_name_map *out,
                                           vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
