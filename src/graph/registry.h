/*
 * registry.h - the graph-level half of the op registry: op definitions (arity, flags,
 * shape function, gradient-function slot) and the build-time helpers shape functions
 * use. The run-time half (the kernel context, variable slots, session resources) is
 * the kernel layer's: src/kernels/kernel.h. To the graph layer a kernel is an opaque
 * function pointer it stores and never calls.
 *
 * Each op family (src/kernels/<family>.c) defines one table
 *     const vg__op_def vg__ops_<family>[] = { {...}, ..., {0} };
 * terminated by an entry with type == NULL; src/kernels/op_families.c lists the
 * tables (the one place to add a family) and hands them to vg__registry_add_family.
 */
#ifndef VG_REGISTRY_H
#define VG_REGISTRY_H

#include "core/core.h"
#include "vigil/graph.h"

/* The run-time kernel context; defined by the executor, used through kernels/kernel.h. */
typedef struct vg__kctx vg__kctx;

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
 * Return VG_OK or the graph's error; an error code with no graph error recorded means
 * "no gradient for this op" (vg_gradients reports TF's "No gradient defined"). */
typedef vg_code (*vg__grad_fn)(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx);

enum {
    VG__OP_STATEFUL = 1u << 0,          /* has side effects / state: never pruned as constant */
    VG__OP_BLOCKING = 1u << 1,          /* may block waiting on another run (queues) */
    VG__OP_NOT_DIFFERENTIABLE = 1u << 2, /* gradients stop here silently (TF NotDifferentiable) */
    VG__OP_VARIABLE = 1u << 3,          /* VariableV2: owns a per-session variable slot */
    VG__OP_CONST = 1u << 4,             /* Const: value in attr "value" */
    VG__OP_PLACEHOLDER = 1u << 5,       /* must be fed (Placeholder) */
    VG__OP_PASS_REF = 1u << 6,          /* output 0 forwards the ref input 0 (Assign, Apply*) */
    VG__OP_COLLECTIVE = 1u << 7         /* a collective over ranks (also BLOCKING): started as
                                           soon as it is ready, its producers run first */
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

/* Finds an op def by type; NULL if unknown. Thread-safe. The first call loads the op
 * families (vg__op_families_register). */
VG_HIDDEN const vg__op_def *vg__registry_find(const char *type);
/* Called once, by the first vg__registry_find, to fill the registry: defined by the
 * kernel layer (src/kernels/op_families.c), which calls vg__registry_add_family for
 * each family table. This declaration is the registry's only reference to the layer
 * above it: a link-time entry point, like Lua's luaL_openlibs in linit.c. */
VG_HIDDEN void vg__op_families_register(void);
/* Adds one op def at run time (user-registered ops); def must live for the process.
 * VG_ALREADY_EXISTS when the type is known, VG_RESOURCE_EXHAUSTED. Thread-safe. */
VG_HIDDEN vg_code vg__registry_add_custom(const vg__op_def *def);
/* Adds a family table (terminated by an entry with type == NULL; may be NULL = none;
 * borrowed: must live for the whole process). Only from vg__op_families_register.
 * On allocation failure the family is left out (its ops are then "unknown"). */
VG_HIDDEN void vg__registry_add_family(const vg__op_def *table);
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
/* TF's shape-inference Merge of two shapes that must describe the same tensor: unknown
 * rank or dimensions take the other's. INVALID_ARGUMENT "Shapes must be equal rank, but
 * are 2 and 3" / "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are
 * [2,4] and [3,4]." otherwise. */
VG_HIDDEN vg_code vg__shape_merge(const vg_shape *a, const vg_shape *b, vg_shape *out, vg_status *st);

#endif
