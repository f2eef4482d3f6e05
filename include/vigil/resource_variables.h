/*
 * vigil/resource_variables.h - TF 1.15's resource variables in graph mode
 * (resource_variable_ops.ResourceVariable, tf.Variable(..., use_resource=True)) and
 * the ops under them (VarHandleOp, ReadVariableOp, AssignVariableOp, ...).
 *
 *     vg_resource_variable v = vg_resource_variable_new(g, "v", vg_const_f32(g, 1.0f, "one"),
 *                                                       VG_VAR_TRAINABLE);
 *     vg_op *inc = vg_resource_variable_assign_add(g, v.handle, vg_const_f32(g, 2.0f, "two"), NULL);
 *     vg_output after = vg_resource_variable_read_after(g, v.handle, inc); // 3.0 once initialized
 *     vg_op *init = vg_global_variables_initializer(g);                 // runs "v/Assign"
 *
 * A resource variable is the ops TF creates: "<name>" (VarHandleOp, shared_name
 * "<name>"), "<name>/Initializer/..." (an initializer's value), "<name>/IsInitialized/
 * VarIsInitializedOp", "<name>/Assign" (AssignVariableOp: the initializer) and
 * "<name>/Read/ReadVariableOp" (the value). Its handle output ({VarHandleOp, 0}, a
 * scalar VG_RESOURCE) is what goes into the collections ("variables" or
 * "local_variables", "trainable_variables"), so vg_global_variables_initializer,
 * vg_report_uninitialized_variables, vg_saver_new, vg_gradients and the optimizers
 * (vigil/optimizer.h: ResourceApply* ops, slots that are resource variables too)
 * take it where they take a ref variable's ref output.
 *
 * Semantics (TF's, unlike ref variables): each ReadVariableOp reads the value when it
 * runs and its result is a snapshot that later writes do not change (a writer that
 * finds the value shared copies it first); reads and writes are ordered only by the
 * graph's edges, so order them with control dependencies (vg_graph_push_control_deps,
 * vg_resource_variable_read_after). The variable lives in the session (per
 * "<container>/<shared_name>", container "" = TF's "localhost"): it exists from its
 * first AssignVariableOp until a DestroyResourceOp. Errors are TF's: reading one that
 * does not exist is FAILED_PRECONDITION "Error while reading resource variable <name>
 * from Container: localhost. This could mean that the variable was uninitialized. Not
 * found: Resource localhost/<name>/N10tensorflow3VarE does not exist."; other ops on it
 * NOT_FOUND "Resource localhost/<name>/N10tensorflow3VarE does not exist."; a dtype
 * that differs from the variable's INVALID_ARGUMENT "Trying to assign variable with
 * wrong dtype. Expected int32 got float" (at run time; at build time the handle's
 * declared dtype and shape are checked as TF's shape functions do).
 *
 * Builders follow vigil/ops.h: on failure they return {NULL, 0} (or NULL) and record
 * the graph's sticky error; `name` NULL = the op type, made unique in the current scope.
 */
#ifndef VIGIL_RESOURCE_VARIABLES_H
#define VIGIL_RESOURCE_VARIABLES_H

#include "variables.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ResourceVariable ---------------------------------------------------- */

typedef struct vg_resource_variable {
    vg_op *handle_op;         /* VarHandleOp "<name>" (NULL on failure) */
    vg_output handle;         /* {handle_op, 0}: for collections, vg_gradients, optimizers, savers */
    vg_output value;          /* "<name>/Read/ReadVariableOp" (TF's graph element, v.value()) */
    vg_op *initializer;       /* "<name>/Assign" (AssignVariableOp of initial_value) */
    vg_output initial_value;  /* what the initializer assigns (feed it to initialize with another value) */
    vg_output is_initialized; /* "<name>/IsInitialized/VarIsInitializedOp" */
    vg_dtype dtype;
    vg_shape shape;
} vg_resource_variable;

/* ResourceVariable(initial_value, name, trainable): takes initial_value's dtype and
 * (fully defined) shape. name (NULL = "Variable") is relative to the current name
 * scope and made unique, like vg_variable_new; the ops get no control dependencies
 * from vg_graph_push_control_deps scopes (TF's init_scope). Reads of ref variables
 * inside initial_value are guarded as vg_variable_new guards them. flags:
 * VG_VAR_TRAINABLE, VG_VAR_LOCAL (vigil/variables.h). Fails (handle_op == NULL, graph
 * error recorded) with INVALID_ARGUMENT (initial value missing or of unknown shape),
 * RESOURCE_EXHAUSTED. */
VG_API vg_resource_variable vg_resource_variable_new(vg_graph *g, const char *name, vg_output initial_value,
                                                     unsigned flags);
/* ResourceVariable(initial_value=lambda: init(shape, dtype), ...) - tf.get_variable's
 * use_resource=True layout: the initial value is built under "<name>/Initializer/"
 * (vg_initializer_build). Same naming and errors as vg_resource_variable_new. */
VG_API vg_resource_variable vg_resource_variable_new_init(vg_graph *g, const char *name, vg_dtype dt,
                                                          const int64_t *dims, int ndims, vg_initializer init,
                                                          unsigned flags);
/* The parts of the resource variable whose VarHandleOp is handle.op: those the graph
 * keeps (vg_variable_initializer / vg_variable_snapshot, set by the constructors and by
 * a MetaGraphDef's VariableDef), else TF's op names ("<name>/Read/ReadVariableOp",
 * "<name>/Assign", ...); missing parts are NULL.
 * handle_op is NULL when handle is not a VarHandleOp's output. Builds nothing. */
VG_API vg_resource_variable vg_resource_variable_from_handle(vg_output handle);
/* True when v is the output of a VarHandleOp (a resource variable's handle). */
VG_API bool vg_is_resource_variable(vg_output v);
/* The dtype / shape the VarHandleOp behind handle declares (followed through Identity
 * ops); VG_DTYPE_INVALID / unknown shape when handle is not such a handle. */
VG_API vg_dtype vg_resource_variable_dtype(vg_output handle);
VG_API vg_shape vg_resource_variable_shape(vg_output handle);

/* v.read_value(): "Read/ReadVariableOp" then an "Identity" in the current scope. */
VG_API vg_output vg_resource_variable_read_value(vg_graph *g, vg_output handle);
/* The value once `after` has run: a ReadVariableOp "ReadVariableOp" with a control
 * input on after (what TF's assign*(..., read_value=True) gives when used). */
VG_API vg_output vg_resource_variable_read_after(vg_graph *g, vg_output handle, vg_op *after);
/* v.assign / assign_add / assign_sub(value, read_value=False): AssignVariableOp /
 * AssignAddVariableOp / AssignSubVariableOp (the op type when name is NULL). */
VG_API vg_op *vg_resource_variable_assign(vg_graph *g, vg_output handle, vg_output value, const char *name);
VG_API vg_op *vg_resource_variable_assign_add(vg_graph *g, vg_output handle, vg_output value, const char *name);
VG_API vg_op *vg_resource_variable_assign_sub(vg_graph *g, vg_output handle, vg_output value, const char *name);
/* v.sparse_read(indices, name): ResourceGather "<name>" (NULL: "Gather") then an
 * "Identity". Its gradient with respect to the handle is vigil's
 * sparse form UnsortedSegmentSum(values, indices, rows) (see vigil/optimizer.h). */
VG_API vg_output vg_resource_variable_sparse_read(vg_graph *g, vg_output handle, vg_output indices,
                                                  const char *name);

/* ---- the ops (gen_resource_variable_ops) ----------------------------------- */

/* VarHandleOp(dtype, shape, container, shared_name): a scalar resource naming the
 * session's variable "<container>/<shared_name>". container NULL = ""; shared_name
 * NULL = the op's own (unique) name, as TF's Python passes it. */
VG_API vg_output vg_var_handle_op(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const char *container,
                                  const char *shared_name, const char *name);
/* ReadVariableOp(resource; dtype): the value when the op runs. Build time:
 * INVALID_ARGUMENT "Trying to read variable with wrong dtype. Expected <handle's> got
 * <dt>". Gradient: the incoming gradient flows to the handle unchanged. */
VG_API vg_output vg_read_variable_op(vg_graph *g, vg_output handle, vg_dtype dt, const char *name);
/* AssignVariableOp / AssignAddVariableOp / AssignSubVariableOp(resource, value; dtype =
 * value's): no outputs. Build time: the handle's dtype must be value's and its
 * declared shape must merge with value's ("Shapes must be equal rank, ..."). Run time:
 * AssignVariableOp creates the variable (any shape, as TF's kernel); the updates need
 * it to exist (NOT_FOUND), equal shapes (INVALID_ARGUMENT "Cannot update variable with
 * shape [2] using a Tensor with shape [3], shapes must be equal.") and a float, double,
 * int32 or int64 dtype. */
VG_API vg_op *vg_assign_variable_op(vg_graph *g, vg_output handle, vg_output value, const char *name);
VG_API vg_op *vg_assign_add_variable_op(vg_graph *g, vg_output handle, vg_output value, const char *name);
VG_API vg_op *vg_assign_sub_variable_op(vg_graph *g, vg_output handle, vg_output value, const char *name);
/* VarIsInitializedOp(resource): bool scalar, true while the variable exists. */
VG_API vg_output vg_var_is_initialized_op(vg_graph *g, vg_output handle, const char *name);
/* DestroyResourceOp(resource; ignore_lookup_error): the variable stops existing (later
 * reads fail; an AssignVariableOp creates it again). Without ignore_lookup_error a
 * variable that does not exist is NOT_FOUND. */
VG_API vg_op *vg_destroy_resource_op(vg_graph *g, vg_output handle, bool ignore_lookup_error, const char *name);
/* VariableShape(input; out_type VG_INT32 or VG_INT64): the variable's shape. */
VG_API vg_output vg_variable_shape(vg_graph *g, vg_output handle, vg_dtype out_type, const char *name);
/* ResourceGather(resource, indices; dtype, batch_dims=0, validate_indices=true):
 * rows of the variable, shape indices.shape + var.shape[1:]. Run time INVALID_ARGUMENT
 * "indices[1] = 7 is not in [0, 4)". */
VG_API vg_output vg_resource_gather(vg_graph *g, vg_output handle, vg_output indices, vg_dtype dt,
                                    const char *name);
/* ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update}(resource, indices, updates):
 * var[indices[i], ...] op= updates[i, ...] (updates may be a scalar, applied to every
 * indexed row); repeated indices apply in order. Update takes any dtype (strings
 * too), the others float, double, int32, int64 (Min/Max the same). Every index is
 * checked before anything is written. */
VG_API vg_op *vg_resource_scatter_add(vg_graph *g, vg_output handle, vg_output indices, vg_output updates,
                                      const char *name);
VG_API vg_op *vg_resource_scatter_sub(vg_graph *g, vg_output handle, vg_output indices, vg_output updates,
                                      const char *name);
VG_API vg_op *vg_resource_scatter_mul(vg_graph *g, vg_output handle, vg_output indices, vg_output updates,
                                      const char *name);
VG_API vg_op *vg_resource_scatter_div(vg_graph *g, vg_output handle, vg_output indices, vg_output updates,
                                      const char *name);
VG_API vg_op *vg_resource_scatter_min(vg_graph *g, vg_output handle, vg_output indices, vg_output updates,
                                      const char *name);
VG_API vg_op *vg_resource_scatter_max(vg_graph *g, vg_output handle, vg_output indices, vg_output updates,
                                      const char *name);
VG_API vg_op *vg_resource_scatter_update(vg_graph *g, vg_output handle, vg_output indices, vg_output updates,
                                         const char *name);

/* ---- optimizer updates on resource variables (training_ops) ---------------- */
/* ResourceApply* / ResourceSparseApply*: the Apply* / SparseApply* ops of vigil/ops.h
 * with the variable and its slots given as handles; same inputs, same math, no
 * outputs (attr T is the gradient's dtype). */
VG_API vg_op *vg_resource_apply_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output delta,
                                                 bool use_locking, const char *name);
VG_API vg_op *vg_resource_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                                         vg_output momentum, bool use_locking, bool use_nesterov, const char *name);
VG_API vg_op *vg_resource_apply_adam(vg_graph *g, vg_output var, vg_output m, vg_output v, vg_output beta1_power,
                                     vg_output beta2_power, vg_output lr, vg_output beta1, vg_output beta2,
                                     vg_output epsilon, vg_output grad, bool use_locking, bool use_nesterov,
                                     const char *name);
VG_API vg_op *vg_resource_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom, vg_output lr,
                                         vg_output rho, vg_output momentum, vg_output epsilon, vg_output grad,
                                         bool use_locking, const char *name);
VG_API vg_op *vg_resource_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                                        bool use_locking, bool update_slots, const char *name);
VG_API vg_op *vg_resource_apply_adadelta(vg_graph *g, vg_output var, vg_output accum, vg_output accum_update,
                                         vg_output lr, vg_output rho, vg_output epsilon, vg_output grad,
                                         bool use_locking, const char *name);
VG_API vg_op *vg_resource_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad,
                                     vg_output lr, vg_output l1, vg_output l2, vg_output lr_power, bool use_locking,
                                     const char *name);
VG_API vg_op *vg_resource_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear,
                                        vg_output grad, vg_output lr, vg_output l1, vg_output l2,
                                        vg_output l2_shrinkage, vg_output lr_power, bool use_locking,
                                        const char *name);
VG_API vg_op *vg_resource_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output l1,
                                                          vg_output l2, vg_output delta, bool use_locking,
                                                          const char *name);
VG_API vg_op *vg_resource_sparse_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr,
                                               vg_output grad, vg_output indices, bool use_locking,
                                               bool update_slots, const char *name);
VG_API vg_op *vg_resource_sparse_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr,
                                                vg_output grad, vg_output indices, vg_output momentum,
                                                bool use_locking, bool use_nesterov, const char *name);
VG_API vg_op *vg_resource_sparse_apply_adadelta(vg_graph *g, vg_output var, vg_output accum,
                                                vg_output accum_update, vg_output lr, vg_output rho,
                                                vg_output epsilon, vg_output grad, vg_output indices,
                                                bool use_locking, const char *name);
VG_API vg_op *vg_resource_sparse_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear,
                                            vg_output grad, vg_output indices, vg_output lr, vg_output l1,
                                            vg_output l2, vg_output lr_power, bool use_locking, const char *name);
VG_API vg_op *vg_resource_sparse_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear,
                                               vg_output grad, vg_output indices, vg_output lr, vg_output l1,
                                               vg_output l2, vg_output l2_shrinkage, vg_output lr_power,
                                               bool use_locking, const char *name);
VG_API vg_op *vg_resource_sparse_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha,
                                                                 vg_output l1, vg_output l2, vg_output grad,
                                                                 vg_output indices, bool use_locking,
                                                                 const char *name);
VG_API vg_op *vg_resource_sparse_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom,
                                                vg_output lr, vg_output rho, vg_output momentum, vg_output epsilon,
                                                vg_output grad, vg_output indices, bool use_locking,
                                                const char *name);

#ifdef __cplusplus
}
#endif
#endif
