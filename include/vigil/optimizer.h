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

/* Constructors; NULL on allocation failure. Free with vg_optimizer_free (the ops it
 * built stay in the graph). An optimizer remembers its slots, so apply_gradients twice
 * on the same variables reuses them (use one optimizer per graph). */
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

/* compute_gradients: grads_out[i] = d loss / d var_list[i] (ref outputs of VariableV2
 * ops), {NULL, 0} where the loss does not depend on the variable. var_list NULL = all
 * trainable variables, in the order of vg_graph_collection(g, VG_TRAINABLE_VARIABLES)
 * (nvars is then ignored and grads_out must hold that many).
 * Fails with: INVALID_ARGUMENT (loss or variable not float32/float64, "No variables to
 * optimize."), the errors of vg_gradients. Does not record a graph error itself. */
VG_API vg_code vg_optimizer_compute_gradients(vg_optimizer *opt, vg_graph *g, vg_output loss,
                                              const vg_output *var_list, int nvars,
                                              vg_output *grads_out, vg_status *st);
/* apply_gradients: creates the slots (once per variable and optimizer) and the apply ops
 * "<name>/update_<var>/Apply*" under the name scope `name` (NULL: the optimizer's name,
 * made unique). Without a global step the train op is a NoOp named <name> grouping the
 * updates; with global_step.op != NULL it is AssignAdd(global_step, 1) named <name>,
 * run after NoOp "<name>/update". Pairs with grads[i].op == NULL are skipped. The train
 * op is added to the "train_op" collection, as TF does.
 * Returns the train op (borrowed, owned by the graph), NULL on failure with the graph's
 * error recorded: INVALID_ARGUMENT (a var that is not a VariableV2 ref output, "No
 * gradients provided for any variable"), RESOURCE_EXHAUSTED. */
VG_API vg_op *vg_optimizer_apply_gradients(vg_optimizer *opt, vg_graph *g, const vg_output *grads,
                                           const vg_output *vars, int n, vg_output global_step,
                                           const char *name);
/* minimize = compute_gradients + apply_gradients; var_list NULL = trainable variables.
 * The train op ends up in the "train_op" collection. NULL on failure (graph error
 * recorded, including compute_gradients' errors). */
VG_API vg_op *vg_optimizer_minimize(vg_optimizer *opt, vg_graph *g, vg_output loss,
                                    const vg_output *var_list, int nvars, vg_output global_step,
                                    const char *name);

#ifdef __cplusplus
}
#endif
#endif
