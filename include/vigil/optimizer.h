/*
 * vigil/optimizer.h - tf.train optimizers: GradientDescent, Momentum (Nesterov), Adam,
 * RMSProp.
 *
 *     vg_optimizer *opt = vg_optimizer_new_adam(1e-3, 0.9, 0.999, 1e-8);
 *     vg_output gs = vg_get_or_create_global_step(g);
 *     vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
 *     vg_optimizer_free(opt);           // the ops stay in the graph
 *
 * Slot variables are named as TensorFlow names them, so checkpoints line up:
 * "<var>/Momentum", "<var>/Adam", "<var>/Adam_1", "beta1_power", "beta2_power",
 * "<var>/RMSProp", "<var>/RMSProp_1". The apply ops are ApplyGradientDescent,
 * ApplyMomentum, ApplyAdam, ApplyRMSProp; the train op is named after the optimizer
 * ("GradientDescent", "Adam", ...) and, with a global step, increments it after the
 * updates.
 */
#ifndef VIGIL_OPTIMIZER_H
#define VIGIL_OPTIMIZER_H

#include "variables.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_optimizer vg_optimizer;

/* Constructors; NULL on allocation failure. Free with vg_optimizer_free. */
VG_API vg_optimizer *vg_optimizer_new_sgd(double learning_rate);
VG_API vg_optimizer *vg_optimizer_new_momentum(double learning_rate, double momentum, bool use_nesterov);
VG_API vg_optimizer *vg_optimizer_new_adam(double learning_rate, double beta1, double beta2, double epsilon);
/* TF defaults: decay 0.9, momentum 0.0, epsilon 1e-10. */
VG_API vg_optimizer *vg_optimizer_new_rmsprop(double learning_rate, double decay, double momentum, double epsilon);
VG_API void vg_optimizer_free(vg_optimizer *opt);
/* Uses a tensor (e.g. a decayed schedule) as the learning rate instead of the constant. */
VG_API void vg_optimizer_set_learning_rate_tensor(vg_optimizer *opt, vg_output lr);
/* "GradientDescent", "Momentum", "Adam", "RMSProp". */
VG_API const char *vg_optimizer_name(const vg_optimizer *opt);

/* compute_gradients: grads[i] for vars[i] (ref outputs); var_list NULL = all trainable
 * variables (then *nvars_out gets their count and vars_out/grads_out must hold it;
 * pass NULL arrays first to query the count). */
VG_API vg_code vg_optimizer_compute_gradients(vg_optimizer *opt, vg_graph *g, vg_output loss,
                                              const vg_output *var_list, int nvars,
                                              vg_output *grads_out, vg_status *st);
/* apply_gradients: creates slots and apply ops; with global_step.op != NULL the returned
 * op also increments it (AssignAdd after the updates). Pairs with grads[i].op == NULL are
 * skipped. Returns the train op, NULL on failure (graph error recorded). */
VG_API vg_op *vg_optimizer_apply_gradients(vg_optimizer *opt, vg_graph *g, const vg_output *grads,
                                           const vg_output *vars, int n, vg_output global_step,
                                           const char *name);
/* minimize = compute_gradients + apply_gradients; var_list NULL = trainable variables.
 * Adds the train op to the "train_op" collection. */
VG_API vg_op *vg_optimizer_minimize(vg_optimizer *opt, vg_graph *g, vg_output loss,
                                    const vg_output *var_list, int nvars, vg_output global_step,
                                    const char *name);

#ifdef __cplusplus
}
#endif
#endif
