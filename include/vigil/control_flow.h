/*
 * control_flow.h - TF1's dataflow control flow: tf.cond, tf.case, tf.while_loop and the
 * primitive ops they are built from (Switch, Merge, Enter, Exit, NextIteration,
 * LoopCond, ControlTrigger), with TF 1.15's op types, attrs and op names, so graphs
 * round-trip through GraphDef export/import. Gradients through them: vg_gradients.
 *
 * Callback form (stable API; dynamic_rnn and the RNN cells build on it):
 *  - A cond branch is   vg_code fn(vg_graph *g, void *user, vg_output *outs)
 *    and fills outs[0..nouts) (nouts as given to vg_cond). An output may be an op
 *    instead of a tensor: vg_out(op, 0) of an op without outputs (a NoOp, a group);
 *    as in TF the cond then returns the branch's boolean pivot for it, which is live
 *    once the taken branch's op has run.
 *  - A while condition is vg_code fn(vg_graph *g, const vg_output *vars, int n,
 *    void *user, vg_output *pred) and sets *pred to a scalar bool.
 *  - A while body is    vg_code fn(vg_graph *g, const vg_output *vars, int n,
 *    void *user, vg_output *outs) and fills outs[0..n) with the next loop values.
 *  vars are the loop variables inside the loop frame (borrowed for the call). A
 *  callback builds ops with the ordinary builders; it may use any tensor built outside
 *  (TF's automatic capture: the builder routes it through an Enter with is_constant,
 *  or through a Switch for a cond branch), and may return one as a body output. As in
 *  TF's ControlFlowContext.AddOp: ops without inputs it creates (Consts), and loop ops
 *  whose inputs are all loop invariants, get a control input from the branch or body
 *  pivot (so they do not run in the iteration whose condition is false); a loop op's
 *  control inputs from outside the loop are pulled in as Identity ops of the loop (a
 *  cond's inside a loop are dropped, as TF does); variables and their initializers
 *  created in a callback (vg_get_variable, layers, RNN cells: TF's init_scope) are
 *  placed outside every loop and cond. A callback returns VG_OK or an error code; an
 *  error (or the graph's error) fails the builder.
 *
 * Example (sum of 0..9):
 *     #include <vigil/vigil.h>
 *     static vg_code c(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {
 *         (void)n; (void)u;
 *         *p = vg_less(g, v[0], vg_const_i32(g, 10, NULL), NULL);
 *         return VG_OK;
 *     }
 *     static vg_code b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
 *         (void)n; (void)u;
 *         o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
 *         o[1] = vg_add(g, v[1], v[0], NULL);
 *         return VG_OK;
 *     }
 *     vg_code sum_0_to_9(vg_graph *g, vg_output out[2], vg_status *st) {
 *         vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_i32(g, 0, "s")};
 *         return vg_while_loop(g, c, b, NULL, v, 2, NULL, 10, vg_out(NULL, 0), "while", out, st);
 *     }
 *
 * Iterations run concurrently up to parallel_iterations, as in TF (exec/executor.c).
 */
#ifndef VIGIL_CONTROL_FLOW_H
#define VIGIL_CONTROL_FLOW_H

#include "vigil/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef vg_code (*vg_cond_branch_fn)(vg_graph *g, void *user, vg_output *outs);
typedef vg_code (*vg_while_cond_fn)(vg_graph *g, const vg_output *vars, int n, void *user, vg_output *pred);
typedef vg_code (*vg_while_body_fn)(vg_graph *g, const vg_output *vars, int n, void *user, vg_output *outs);

/* tf.cond(pred, true_fn, false_fn): pred a scalar bool. Builds name scope `name`
 * ("cond" if NULL): cond/Switch, cond/switch_t, cond/switch_f, cond/pred_id, the
 * branches, and one cond/Merge per output (inputs: false branch, true branch); outs[i]
 * is Merge i's output 0. Both branches must give nouts outputs of equal dtypes.
 * Fails with INVALID_ARGUMENT (pred not a scalar bool, NULL fns, nouts < 1, dtype
 * mismatch: the message names the output; a branch op using a value of a while loop
 * the cond is not in: "Cannot use 'while/Const_1' as input to 'cond/Add' because
 * 'while/Const_1' is in a while loop...", also recorded as the graph's error), the
 * callback's code, or the graph's error; outs are then {NULL, 0}. */
VG_API vg_code vg_cond(vg_graph *g, vg_output pred, vg_cond_branch_fn true_fn, vg_cond_branch_fn false_fn,
                       void *user, int nouts, vg_output *outs, const char *name, vg_status *st);

/* tf.case(pred_fn_pairs, default, exclusive=False): the branch of the first true
 * preds[i] runs (fns[i] with users[i]; users may be NULL), else default_fn with
 * default_user. Built as nested conds under scope `name` ("case"). n >= 1.
 * Same failures as vg_cond. */
VG_API vg_code vg_case(vg_graph *g, const vg_output *preds, const vg_cond_branch_fn *fns, void *const *users,
                       int n, vg_cond_branch_fn default_fn, void *default_user, int nouts, vg_output *outs,
                       const char *name, vg_status *st);

/* tf.case(..., exclusive=True): as vg_case, after TF's check that at most one pred is
 * true (case/preds_c, case/num_true_conds, case/Assert): a run where two or more are
 * true fails with INVALID_ARGUMENT "assertion failed: ...". Same build failures. */
VG_API vg_code vg_case_exclusive(vg_graph *g, const vg_output *preds, const vg_cond_branch_fn *fns,
                                 void *const *users, int n, vg_cond_branch_fn default_fn, void *default_user,
                                 int nouts, vg_output *outs, const char *name, vg_status *st);

/* tf.while_loop(cond, body, loop_vars, shape_invariants, parallel_iterations,
 * maximum_iterations, name). Builds, under scope `name` ("while"), for each loop
 * variable while/Enter, while/Merge, while/Switch, while/Identity, while/NextIteration
 * and while/Exit (frame "<scope>/while_context"), and while/LoopCond; outs[i] (n of
 * them) are the Exits. shape_invariants: NULL (each variable keeps its entry shape) or
 * n shapes; a body output whose shape is not compatible with its invariant fails with
 * INVALID_ARGUMENT naming the loop variable ("Input tensor 'x' enters the loop with
 * shape [], but has shape [2] after one iteration..."). parallel_iterations <= 0 means
 * 10. maximum_iterations: {NULL, 0} for none, else an int32/int64 scalar: as TF, an
 * iteration counter is added as loop variable 0 (internally) and the condition becomes
 * counter < maximum_iterations && cond(...). Other failures: INVALID_ARGUMENT (n < 1,
 * NULL fns or vars, a body output dtype that differs from its variable's, a condition
 * that is not a scalar bool; an op of the body or condition using a value of another
 * while loop: "Cannot use 'while/Const_1' as input to 'while_1/Add' because they are
 * in different while loops...", also recorded as the graph's error), the callback's
 * code, the graph's error. Nests (a while or cond inside a body or branch). */
VG_API vg_code vg_while_loop(vg_graph *g, vg_while_cond_fn cond_fn, vg_while_body_fn body_fn, void *user,
                             const vg_output *loop_vars, int n, const vg_shape *shape_invariants,
                             int parallel_iterations, vg_output maximum_iterations, const char *name,
                             vg_output *outs, vg_status *st);

/* ---- the primitive ops (TF's control_flow_ops / gen_control_flow_ops) ---------
 * Each returns the op's output, or {NULL, 0} with the graph's error set. */
/* Switch(data, pred): outputs (output_false, output_true); only the taken one is live. */
VG_API vg_op *vg_switch(vg_graph *g, vg_output data, vg_output pred, const char *name);
/* Merge(inputs): outputs (output, value_index); fires on its first live input. */
VG_API vg_op *vg_merge(vg_graph *g, const vg_output *inputs, int n, const char *name);
/* Enter(data) into frame frame_name. As TF's shape function, the output's static shape
 * is data's for is_constant, else unknown (vg_while_loop sets its loop variables'). */
VG_API vg_output vg_enter(vg_graph *g, vg_output data, const char *frame_name, bool is_constant,
                          int parallel_iterations, const char *name);
VG_API vg_output vg_exit(vg_graph *g, vg_output data, const char *name);
VG_API vg_output vg_next_iteration(vg_graph *g, vg_output data, const char *name);
/* LoopCond(input): a scalar bool. */
VG_API vg_output vg_loop_cond(vg_graph *g, vg_output input, const char *name);
VG_API vg_op *vg_control_trigger(vg_graph *g, const char *name);

/* ---- stacks (StackV2, StackPushV2, StackPopV2, StackCloseV2) -------------------
 * What the gradient of a while loop saves forward values on. vg_stack: a new stack
 * per run of the op (max_size -1: unbounded), a VG_RESOURCE handle; push returns its
 * element; pop of an empty stack fails at run time with OUT_OF_RANGE; close empties
 * it (later use fails); stacks live until the run ends. Build failures: the graph's
 * error, {NULL, 0} / NULL returned. */
VG_API vg_output vg_stack(vg_graph *g, vg_dtype elem_type, const char *stack_name, const char *name);
VG_API vg_output vg_stack_push(vg_graph *g, vg_output handle, vg_output elem, const char *name);
VG_API vg_output vg_stack_pop(vg_graph *g, vg_output handle, vg_dtype elem_type, const char *name);
VG_API vg_op *vg_stack_close(vg_graph *g, vg_output handle, const char *name);

/* ---- TensorArray (tf.TensorArray over TensorArrayV3 and its ops) -----------------
 * A TensorArray is its handle (VG_RESOURCE) and its flow (a float scalar that orders
 * the ops); the ops that change it return a new vg_tensor_array with a new flow, as
 * TF's Python object does. Inside a while loop carry ta.flow as a loop variable and
 * rebuild {handle, flow var, dtype} in the body (the handle is captured).
 * Run-time failures (INVALID_ARGUMENT, as TF's messages): an index out of range of a
 * fixed-size array, writing an index twice, reading an unwritten index or (with
 * clear_after_read) reading twice, a value whose dtype or shape does not fit,
 * unequal element shapes in gather/stack, lengths that do not add up in split.
 * Arrays live until the end of the run. Build failures: the graph's error; the result
 * then has {NULL, 0} outputs. Gradients: vg_gradients through reads, writes, gather,
 * scatter, concat and split (tensor_array_grad.py; gradient arrays from
 * TensorArrayGradV3 with source "gradients"). */
typedef struct vg_tensor_array {
    vg_output handle;
    vg_output flow;
    vg_dtype dtype;
} vg_tensor_array;

/* tf.TensorArray(dtype, size, dynamic_size, clear_after_read, element_shape): size an
 * int32 scalar; element_shape NULL = unknown (may be partial). */
VG_API vg_tensor_array vg_tensor_array_new(vg_graph *g, vg_dtype dtype, vg_output size, bool dynamic_size,
                                           bool clear_after_read, const vg_shape *element_shape, const char *name);
VG_API vg_tensor_array vg_tensor_array_write(vg_graph *g, vg_tensor_array ta, vg_output index, vg_output value,
                                             const char *name);
VG_API vg_output vg_tensor_array_read(vg_graph *g, vg_tensor_array ta, vg_output index, const char *name);
VG_API vg_output vg_tensor_array_gather(vg_graph *g, vg_tensor_array ta, vg_output indices, const char *name);
VG_API vg_tensor_array vg_tensor_array_scatter(vg_graph *g, vg_tensor_array ta, vg_output indices,
                                               vg_output value, const char *name);
/* Gather of range(size) / scatter of range(value.shape[0]) (ta.stack(), ta.unstack()). */
VG_API vg_output vg_tensor_array_stack(vg_graph *g, vg_tensor_array ta, const char *name);
VG_API vg_tensor_array vg_tensor_array_unstack(vg_graph *g, vg_tensor_array ta, vg_output value, const char *name);
/* Concat of all elements along dim 0; *lengths (may be NULL) gets their int64 lengths. */
VG_API vg_output vg_tensor_array_concat(vg_graph *g, vg_tensor_array ta, vg_output *lengths, const char *name);
VG_API vg_tensor_array vg_tensor_array_split(vg_graph *g, vg_tensor_array ta, vg_output value, vg_output lengths,
                                             const char *name);
VG_API vg_output vg_tensor_array_size(vg_graph *g, vg_tensor_array ta, const char *name);
VG_API vg_op *vg_tensor_array_close(vg_graph *g, vg_tensor_array ta, const char *name);
/* TensorArrayGradV3: the gradient array for `source` (made once per source and run). */
VG_API vg_tensor_array vg_tensor_array_grad(vg_graph *g, vg_tensor_array ta, const char *source, const char *name);

#ifdef __cplusplus
}
#endif

#endif
