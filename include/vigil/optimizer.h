/*
 * vigil/optimizer.h - tf.train optimizers: GradientDescent, Momentum (Nesterov), Adam,
 * RMSProp, Adagrad, Adadelta, Ftrl, ProximalGradientDescent.
 *
 *     vg_optimizer *opt = vg_optimizer_new_adam(1e-3, 0.9, 0.999, 1e-8);
 *     vg_output gs = vg_get_or_create_global_step(g);
 *     vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
 *     vg_optimizer_free(opt);           // the ops stay in the graph
 *
 * Slot variables are named as TensorFlow names them, so checkpoints line up:
 * "<var>/Momentum", "<var>/Adam", "<var>/Adam_1", "beta1_power", "beta2_power",
 * "<var>/RMSProp", "<var>/RMSProp_1", "<var>/Adagrad", "<var>/Adadelta" (accum),
 * "<var>/Adadelta_1" (accum_update), "<var>/Ftrl" (accum), "<var>/Ftrl_1" (linear). The
 * apply ops are ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyRMSProp,
 * ApplyAdagrad, ApplyAdadelta, ApplyFtrl (ApplyFtrlV2 with l2_shrinkage > 0),
 * ApplyProximalGradientDescent; the train op is named after the optimizer
 * ("GradientDescent", "Adam", ...) and, with a global step, increments it after the
 * updates.
 *
 * Sparse updates: vigil's gradients are dense tensors, but Gather's gradient (axis 0)
 * is UnsortedSegmentSum(values, indices, rows) - TF's IndexedSlices in graph form. When
 * that is a variable's whole gradient (the variable feeds only the Gather, through
 * its read), Momentum, RMSProp, Adagrad, Adadelta, Ftrl and ProximalGradientDescent
 * update only the gathered rows as TF's _apply_sparse_duplicate_indices does
 * ("update_<var>/Unique", "UnsortedSegmentSum" of the repeated rows, then
 * SparseApplyMomentum / ...RMSProp / ...Adagrad / ...Adadelta / ...Ftrl[V2] /
 * ...ProximalGradientDescent). Dense fallback, documented: GradientDescent and Adam
 * (their sparse update equals the dense one: TF's Adam decays every row of m and v
 * too), a gradient summed from several uses of the variable, and gradients passed
 * through GATE_GRAPH's tuple.
 *
 * Resource variables (vigil/resource_variables.h; pass their handles): TF's resource
 * path - the slots are resource variables, the updates ResourceApply* /
 * ResourceSparseApply* ("<opt>/update_<var>/ResourceApplyAdam"), GradientDescent's
 * sparse update ResourceScatterAdd(var, indices, -grad * lr). Same numbers as over ref
 * variables (the kernels are shared).
 *
 *     vg_optimizer *adam = vg_optimizer_new_adam_default();   // tf.train.AdamOptimizer()
 *     vg_optimizer *ftrl = vg_optimizer_new_ftrl_default(0.1); // tf.train.FtrlOptimizer(0.1)
 *     vg_optimizer_free(adam);
 *     vg_optimizer_free(ftrl);
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
/* TF's defaults in one call: AdamOptimizer() = (0.001, 0.9, 0.999, 1e-8);
 * RMSPropOptimizer(lr) = (lr, decay 0.9, momentum 0, epsilon 1e-10). */
VG_API vg_optimizer *vg_optimizer_new_adam_default(void);
VG_API vg_optimizer *vg_optimizer_new_rmsprop_default(double learning_rate);
/* AdagradOptimizer(learning_rate, initial_accumulator_value=0.1): accum += g^2;
 * var -= lr * g / sqrt(accum). initial_accumulator_value must be positive. */
VG_API vg_optimizer *vg_optimizer_new_adagrad(double learning_rate, double initial_accumulator_value);
VG_API vg_optimizer *vg_optimizer_new_adagrad_default(double learning_rate);
/* AdadeltaOptimizer(learning_rate=0.001, rho=0.95, epsilon=1e-8). */
VG_API vg_optimizer *vg_optimizer_new_adadelta(double learning_rate, double rho, double epsilon);
VG_API vg_optimizer *vg_optimizer_new_adadelta_default(void);
/* FtrlOptimizer(learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
 * l1_regularization_strength=0, l2_regularization_strength=0,
 * l2_shrinkage_regularization_strength=0); l2_shrinkage > 0 uses ApplyFtrlV2. TF's
 * argument checks (initial_accumulator_value, l1, l2, l2_shrinkage >= 0,
 * learning_rate_power <= 0) are reported by apply_gradients/minimize as
 * INVALID_ARGUMENT naming the argument. */
VG_API vg_optimizer *vg_optimizer_new_ftrl(double learning_rate, double learning_rate_power,
                                           double initial_accumulator_value, double l1, double l2,
                                           double l2_shrinkage);
VG_API vg_optimizer *vg_optimizer_new_ftrl_default(double learning_rate);
/* ProximalGradientDescentOptimizer(learning_rate, l1_regularization_strength=0,
 * l2_regularization_strength=0). */
VG_API vg_optimizer *vg_optimizer_new_proximal_gd(double learning_rate, double l1, double l2);
VG_API void vg_optimizer_free(vg_optimizer *opt);
/* Optimizer.GATE_NONE / GATE_OP / GATE_GRAPH for compute_gradients (minimize uses it
 * too). GATE_OP (TF's default) and GATE_NONE give the same values here (vigil's
 * executor computes each gradient op's outputs together); GATE_GRAPH passes the
 * gradients through control_flow_ops.tuple ("tuple/group_deps",
 * "tuple/control_dependency[_n]") so that no variable is updated before every
 * gradient is computed. colocate_gradients_with_ops has no meaning on one CPU. */
typedef enum vg_gate_gradients { VG_GATE_NONE = 0, VG_GATE_OP = 1, VG_GATE_GRAPH = 2 } vg_gate_gradients;
VG_API void vg_optimizer_set_gate_gradients(vg_optimizer *opt, vg_gate_gradients gate);
/* Uses a tensor (e.g. a decayed schedule) as the learning rate instead of the constant. */
VG_API void vg_optimizer_set_learning_rate_tensor(vg_optimizer *opt, vg_output lr);
/* "GradientDescent", "Momentum", "Adam", "RMSProp", "Adagrad", "Adadelta", "Ftrl",
 * "ProximalGradientDescent". */
VG_API const char *vg_optimizer_name(const vg_optimizer *opt);

/* compute_gradients: grads_out[i] = d loss / d var_list[i] (ref outputs of VariableV2
 * ops, or resource variables' handles), {NULL, 0} where the loss does not depend on
 * the variable. var_list NULL = all trainable variables, in the order of
 * vg_graph_collection(g, VG_TRAINABLE_VARIABLES) (nvars is then ignored and grads_out
 * must hold that many). In a world of more than one MPI rank (vg_dist_init,
 * vigil/distributed.h) the gradients are averaged over the ranks, as
 * vg_dist_compute_gradients does, so minimize keeps the replicas equal.
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
 * error recorded: INVALID_ARGUMENT (a constructor argument TF rejects, "Ftrl:
 * learning_rate_power 0.5 needs to be negative or zero"; a var that is neither a
 * VariableV2 ref output nor a VarHandleOp's handle, "No gradients provided for any
 * variable"), RESOURCE_EXHAUSTED. */
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
