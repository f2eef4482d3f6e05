/*
 * vigil/custom_op.h - extending vigil from C (issue 11 §9): registering an op type from
 * user code (shape function, CPU kernel, optional gradient), and tf.py_func's C
 * counterpart, an op that calls a C callback with its input tensors.
 *
 *     #include <vigil/vigil.h>
 *     static vg_code twice_shape(vg_op *op, vg_status *st, void *user) {
 *         (void)st; (void)user;
 *         vg_output in = vg_op_input(op, 0);
 *         vg_custom_shape_set_output(op, 0, vg_output_dtype(in), vg_output_shape(in));
 *         return VG_OK;
 *     }
 *     static vg_code twice_kernel(vg_custom_kernel_ctx *ctx, void *user) {
 *         (void)user;
 *         const vg_tensor *x = vg_custom_input(ctx, 0);
 *         vg_tensor *y = vg_custom_alloc_output(ctx, 0, VG_FLOAT, vg_tensor_dims(x), vg_tensor_ndims(x));
 *         if (!y) return VG_RESOURCE_EXHAUSTED;
 *         for (int64_t i = 0; i < vg_tensor_num_elements(x); i++)
 *             ((float *)vg_tensor_data(y))[i] = 2 * ((const float *)vg_tensor_data(x))[i];
 *         return VG_OK;
 *     }
 *     int register_twice(void);
 *     int register_twice(void) {
 *         vg_custom_op_def d = {"Twice", 1, 1, false, twice_shape, twice_kernel, NULL, NULL};
 *         vg_status st;
 *         return vg_register_op(&d, &st) == VG_OK ? 0 : 1;
 *     }
 *
 * Build registered ops with the generic builder (vg_op_builder_new(g, "Twice", name)).
 */
#ifndef VIGIL_CUSTOM_OP_H
#define VIGIL_CUSTOM_OP_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The run-time context a custom kernel gets (valid during the call). */
typedef struct vg_custom_kernel_ctx vg_custom_kernel_ctx;

VG_API const vg_op *vg_custom_kernel_op(const vg_custom_kernel_ctx *ctx);
VG_API int vg_custom_num_inputs(const vg_custom_kernel_ctx *ctx);
/* Input i, borrowed for the call (NULL if out of range). */
VG_API const vg_tensor *vg_custom_input(const vg_custom_kernel_ctx *ctx, int i);
/* Allocates output i (uninitialised data); borrowed. NULL (status RESOURCE_EXHAUSTED or
 * INVALID_ARGUMENT for a bad index) on failure. */
VG_API vg_tensor *vg_custom_alloc_output(vg_custom_kernel_ctx *ctx, int i, vg_dtype dt, const int64_t *dims, int ndims);
/* Sets output i to t, taking over one reference (INVALID_ARGUMENT for a bad index; t is
 * then released). */
VG_API vg_code vg_custom_set_output(vg_custom_kernel_ctx *ctx, int i, vg_tensor *t);
/* The status a failing kernel fills (its message gets the op name appended). */
VG_API vg_status *vg_custom_status(vg_custom_kernel_ctx *ctx);

/* Build time, inside a shape function: the op's output count and output i's dtype and
 * (possibly partial) shape. Outputs default to 1. */
VG_API void vg_custom_shape_set_num_outputs(vg_op *op, int n);
VG_API void vg_custom_shape_set_output(vg_op *op, int i, vg_dtype dt, vg_shape shape);

typedef vg_code (*vg_custom_shape_fn)(vg_op *op, vg_status *st, void *user);
typedef vg_code (*vg_custom_kernel_fn)(vg_custom_kernel_ctx *ctx, void *user);
/* Gradient: dy[i] for each output (zeros where unused), set dx[i] per input ({NULL, 0}
 * = none) with the public builders; return VG_OK or the graph's error. */
typedef vg_code (*vg_custom_grad_fn)(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx, void *user);

typedef struct vg_custom_op_def {
    const char *type;           /* op type, e.g. "Twice" (copied) */
    int min_inputs, max_inputs; /* max -1 = unbounded */
    bool stateful;              /* never folded away or deduplicated */
    vg_custom_shape_fn shape;   /* NULL: one output, input 0's dtype and shape (or float, unknown) */
    vg_custom_kernel_fn kernel; /* required */
    vg_custom_grad_fn grad;     /* NULL: "No gradient defined" as for any op without one */
    void *user;                 /* passed to the three functions */
} vg_custom_op_def;

/* Registers an op type for the process (there is no unregistering). Thread-safe.
 * Fails with INVALID_ARGUMENT (NULL def, type or kernel; bad input counts),
 * ALREADY_EXISTS (a built-in or registered type of that name), RESOURCE_EXHAUSTED. A
 * kernel returning an error fails that run with its status (the session stays
 * usable); a kernel returning an error code without a message gets a generic one. */
VG_API vg_code vg_register_op(const vg_custom_op_def *def, vg_status *st);

/* tf.py_func(func, inp, Tout, stateful) with a C callback: fn(inputs, nin, outputs,
 * nout, user, st) must fill outputs[0..nout) with new tensors (ownership passes to
 * vigil) of the dtypes in Tout; any shape. Ops "PyFunc" (stateful) or
 * "PyFuncStateless", attrs token, Tin, Tout, as TF. Returns the op (outputs 0..nout-1);
 * NULL with the graph's error on bad arguments. At run time a callback error fails the
 * run with its status; a missing output or one of another dtype fails with
 * INVALID_ARGUMENT naming the op ("... returned a int32 tensor for output 0, expected
 * float"). grad may be NULL (then, as TF, no gradient); grad_user is passed to it. The
 * callback may run on any session thread, concurrently when the op is stateless. */
typedef vg_code (*vg_py_func_fn)(const vg_tensor *const *inputs, int nin, vg_tensor **outputs, int nout, void *user,
                                 vg_status *st);
VG_API vg_op *vg_py_func(vg_graph *g, vg_py_func_fn fn, void *user, const vg_output *inputs, int nin,
                         const vg_dtype *Tout, int nout, bool stateful, vg_custom_grad_fn grad, void *grad_user,
                         const char *name);

#ifdef __cplusplus
}
#endif
#endif
