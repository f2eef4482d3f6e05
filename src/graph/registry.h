/*
 * registry.h - the op registry and the interfaces an op family implements:
 * a shape function (build time), a CPU kernel (run time) and a gradient function.
 *
 * Each family file (src/kernels/<family>.c) defines one table
 *     const vg__op_def vg__ops_<family>[] = { {...}, ..., {0} };
 * terminated by an entry with type == NULL. registry.c collects the tables (declared
 * weak there, so a family can be added without touching it).
 */
#ifndef VG_REGISTRY_H
#define VG_REGISTRY_H

#include "core/core.h"
#include "vigil/graph.h"
#include "vigil/session.h"

typedef struct vg__kctx vg__kctx;
typedef struct vg__var vg__var;

/* Build time: called once the op's inputs, control inputs and attrs are set. Must call
 * vg__op_set_num_outputs and vg__op_set_output for each output; may add default attrs
 * (vg__op_set_default_attr_type ...). Returns VG_OK or an error (st gets a message;
 * the graph prefixes the op name). */
typedef vg_code (*vg__shape_fn)(vg_op *op, vg_status *st);

/* Run time: compute the outputs from the inputs. Errors go to vg__kctx_status(ctx);
 * the executor appends the op name. */
typedef vg_code (*vg__kernel_fn)(vg__kctx *ctx);

/* Gradient: given dy[i] for every output (never NULL-op: missing output gradients are
 * filled with zeros by the framework), set dx[i] for every input ({NULL,0} = none).
 * Runs with the name scope "gradients/<op>_grad" pushed. Use the public builders.
 * Return VG_OK or the graph's error. */
typedef vg_code (*vg__grad_fn)(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx);

enum {
    VG__OP_STATEFUL = 1u << 0,          /* has side effects / state: never pruned as constant */
    VG__OP_BLOCKING = 1u << 1,          /* may block waiting on another run (queues) */
    VG__OP_NOT_DIFFERENTIABLE = 1u << 2, /* gradients stop here silently (TF NotDifferentiable) */
    VG__OP_VARIABLE = 1u << 3,          /* VariableV2: owns a per-session variable slot */
    VG__OP_CONST = 1u << 4,             /* Const: value in attr "value" */
    VG__OP_PLACEHOLDER = 1u << 5,       /* must be fed (Placeholder) */
    VG__OP_PASS_REF = 1u << 6           /* output 0 forwards the ref input 0 (Assign, Apply*) */
};

typedef struct vg__op_def {
    const char *type;      /* TensorFlow op type, e.g. "MatMul" */
    int min_inputs;        /* inputs (after flattening lists) */
    int max_inputs;        /* -1 = unbounded */
    unsigned flags;        /* VG__OP_* */
    uint32_t ref_inputs;   /* bit i set: input i must come from a variable (ref) */
    vg__shape_fn shape;
    vg__kernel_fn kernel;  /* NULL: the op cannot run (error at run time) */
    vg__grad_fn grad;      /* NULL and not NOT_DIFFERENTIABLE: "No gradient defined" */
} vg__op_def;

/* Finds an op def by type; NULL if unknown. Thread-safe. */
VG_HIDDEN const vg__op_def *vg__registry_find(const char *type);
/* The registered def of an op (never NULL for a built op). */
VG_HIDDEN const vg__op_def *vg__op_def_of(const vg_op *op);

/* ---- build-time helpers for shape functions ----------------------------- */
VG_HIDDEN void vg__op_set_num_outputs(vg_op *op, int n);
VG_HIDDEN void vg__op_set_output(vg_op *op, int i, vg_dtype dt, vg_shape shape);
/* Sets a type attr only if the op does not have it yet (e.g. "T" from input 0). */
VG_HIDDEN void vg__op_set_default_attr_type(vg_op *op, const char *name, vg_dtype dt);
VG_HIDDEN void vg__op_set_default_attr_int(vg_op *op, const char *name, int64_t v);
VG_HIDDEN void vg__op_set_default_attr_bool(vg_op *op, const char *name, bool v);
VG_HIDDEN void vg__op_set_default_attr_string(vg_op *op, const char *name, const char *v);
/* The value of input i if it is produced by a Const op (borrowed), else NULL. */
VG_HIDDEN const vg_tensor *vg__op_const_input(const vg_op *op, int i);
/* Input i's build-time dtype and shape. */
VG_HIDDEN vg_dtype vg__op_input_dtype(const vg_op *op, int i);
VG_HIDDEN vg_shape vg__op_input_shape(const vg_op *op, int i);
/* NumPy broadcasting of two (possibly partially unknown) shapes. INVALID_ARGUMENT
 * "Incompatible shapes: [2,3] vs. [4]" when they cannot broadcast. */
VG_HIDDEN vg_code vg__shape_broadcast(const vg_shape *a, const vg_shape *b, vg_shape *out, vg_status *st);

/* ---- run-time kernel context (implemented by the executor) -------------- */
VG_HIDDEN const vg_op *vg__kctx_op(const vg__kctx *ctx);
VG_HIDDEN int vg__kctx_num_inputs(const vg__kctx *ctx);
/* Input i's value, borrowed for the kernel call. For a ref input this is the
 * variable's current value (NULL if uninitialized). */
VG_HIDDEN vg_tensor *vg__kctx_input(const vg__kctx *ctx, int i);
/* Allocates output i (64-byte aligned, uninitialised data) and sets it; *out is
 * borrowed. Fails with RESOURCE_EXHAUSTED (status set). */
VG_HIDDEN vg_code vg__kctx_alloc_output(vg__kctx *ctx, int i, vg_dtype dt, const int64_t *dims,
                                         int ndims, vg_tensor **out);
/* Sets output i to t, taking over one reference (e.g. Identity: vg_tensor_ref(in)). */
VG_HIDDEN void vg__kctx_set_output(vg__kctx *ctx, int i, vg_tensor *t);
/* The variable slot behind ref input i (NULL if input i is not a ref input). */
VG_HIDDEN vg__var *vg__kctx_var(const vg__kctx *ctx, int i);
VG_HIDDEN vg_status *vg__kctx_status(vg__kctx *ctx);
VG_HIDDEN vg_session *vg__kctx_session(const vg__kctx *ctx);
VG_HIDDEN const vg_run_options *vg__kctx_run_options(const vg__kctx *ctx);
/* Absolute deadline (vg__now_ns clock) from run_options.timeout_in_ms, 0 = none. */
VG_HIDDEN int64_t vg__kctx_deadline_ns(const vg__kctx *ctx);
/* Number of intra-op threads available to this kernel (>= 1). */
VG_HIDDEN int vg__kctx_num_threads(const vg__kctx *ctx);
/* Runs fn(arg, begin, end) over [0, n) split into chunks on the intra-op pool; the
 * caller's thread takes part; returns when all are done. cost_per_unit is a rough
 * count of flops per unit used to decide whether splitting pays (< ~10k total units
 * of work run inline). */
typedef void (*vg__range_fn)(void *arg, int64_t begin, int64_t end);
VG_HIDDEN void vg__kctx_parallel_for(vg__kctx *ctx, int64_t n, int64_t cost_per_unit,
                                     vg__range_fn fn, void *arg);
/* Per-(session, op) kernel state, created once on first use with create (thread-safe;
 * later calls return the same pointer); destroy is called when the session is freed.
 * Used by random ops (their stream position) and resource ops. */
VG_HIDDEN vg_code vg__kctx_state(vg__kctx *ctx, void *(*create)(const vg_op *op, vg_status *st),
                                  void (*destroy)(void *state), void **out);

/* ---- variables ---------------------------------------------------------- */
/* A session's variable slot. Locking: vg__var_lock around any access to value. */
VG_HIDDEN void vg__var_lock(vg__var *v);
VG_HIDDEN void vg__var_unlock(vg__var *v);
/* Current value (borrowed; NULL = uninitialized). Call with the lock held. */
VG_HIDDEN vg_tensor *vg__var_value(vg__var *v);
/* Replaces the value (takes over one reference of t; the old one is released). Lock held. */
VG_HIDDEN void vg__var_set(vg__var *v, vg_tensor *t);
/* The value, made safe to modify in place (copy-on-write if anyone else holds a
 * reference). Lock held. FAILED_PRECONDITION "Attempting to use uninitialized value
 * <name>" when uninitialized; RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_tensor *vg__var_mutable(vg__var *v, vg_status *st);
VG_HIDDEN const char *vg__var_name(const vg__var *v);

/* Session resources (queues and the like), created once per session by name.
 * cancel(r) is called when the session closes (wake blocked waiters with CANCELLED);
 * destroy(r) when the session is freed. */
typedef struct vg__resource_ops {
    void (*cancel)(void *r);   /* (optional) */
    void (*destroy)(void *r);
} vg__resource_ops;
VG_HIDDEN vg_code vg__session_resource(vg_session *s, const char *name, const vg__resource_ops *ops,
                                        void *(*create)(void *arg, vg_status *st), void *arg,
                                        void **out, vg_status *st);
/* True once vg_session_close started. */
VG_HIDDEN bool vg__session_closing(const vg_session *s);

/* ---- tensor internals ---------------------------------------------------- */
/* Reference count (for copy-on-write decisions). */
VG_HIDDEN int vg__tensor_refcount(const vg_tensor *t);
/* A new tensor (one reference) viewing t's data with another shape of the same element
 * count, without copying (Reshape, ExpandDims, Squeeze). Fails with INVALID_ARGUMENT,
 * RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_tensor *vg__tensor_alias(vg_tensor *t, const int64_t *dims, int ndims, vg_status *st);

#endif
