/*
 * vigil/graph.h - the dataflow graph: ops named as TensorFlow names them, their
 * attrs, inputs and control inputs, name scopes, collections and build-time shape
 * inference.
 *
 * Build a graph with the typed builders of vigil/ops.h (or the generic builder
 * below). Builders never return an error code: the graph keeps its first error
 * (sticky) and every later builder that receives a failed input just returns a
 * failed output. Check once with vg_graph_status(), or let vg_session_new() report it.
 *
 *     vg_graph *g = vg_graph_new();
 *     vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 784}, 2, "x");
 *     vg_variable_scope_push(g, "dense", NULL);  // variable scope + name scope
 *     vg_variable w = vg_get_variable(g, "kernel", VG_FLOAT, (int64_t[]){784, 10}, 2,
 *                                     vg_init_glorot_uniform(0), VG_VAR_TRAINABLE);
 *     vg_variable_scope_pop(g);                  // w is "dense/kernel"
 *     vg_output y = vg_matmul(g, x, w.read, false, false, NULL);
 *     if (vg_graph_status(g, &st) != VG_OK) return st.code;
 *
 * Ops belong to the graph and stay valid until vg_graph_free(). Adding ops never
 * moves existing ones. A graph is not thread-safe while being built; once finalized
 * (vg_graph_finalize) it is immutable and may be shared by any number of sessions
 * and threads.
 */
#ifndef VIGIL_GRAPH_H
#define VIGIL_GRAPH_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_graph vg_graph;
typedef struct vg_op vg_op;

/* One output of an op: the value type passed between builders (like TF_Output).
 * op == NULL marks a failed/absent output. */
typedef struct vg_output {
    vg_op *op;
    int index;
} vg_output;

/* ------------------------------------------------------------------------ */
/* Graph */

/* New empty graph; NULL on allocation failure. Ownership: free with vg_graph_free. */
VG_API vg_graph *vg_graph_new(void);
/* Frees the graph and all its ops. Sessions made from it must be freed first. */
VG_API void vg_graph_free(vg_graph *g);

/* The graph's first build error (sticky). Returns its code, copies it to st. */
VG_API vg_code vg_graph_status(const vg_graph *g, vg_status *st);
/* Records an error as the graph's sticky error if none is recorded yet. Returns code. */
VG_API vg_code vg_graph_set_error(vg_graph *g, vg_code code, const char *fmt, ...) VG_PRINTF(3, 4);

/* Freezes the graph: later attempts to add ops fail with FAILED_PRECONDITION
 * ("Graph is finalized and cannot be modified."). unfinalize reverses it. */
VG_API void vg_graph_finalize(vg_graph *g);
VG_API void vg_graph_unfinalize(vg_graph *g);
VG_API bool vg_graph_finalized(const vg_graph *g);

VG_API int vg_graph_num_ops(const vg_graph *g);
/* Op i in creation order (0 <= i < num_ops); NULL if out of range. Borrowed. */
VG_API vg_op *vg_graph_op(const vg_graph *g, int i);
/* Op by full name ("dense/kernel"); NULL if none. Borrowed. */
VG_API vg_op *vg_graph_op_by_name(const vg_graph *g, const char *name);
/* Output by TensorFlow tensor name "op:index" or "op" (index 0). Fails with
 * NOT_FOUND (no such op) or INVALID_ARGUMENT (bad index); returns {NULL,0} then. */
VG_API vg_output vg_graph_output_by_name(const vg_graph *g, const char *name, vg_status *st);

/* Graph-level random seed (tf.set_random_seed); 0 = unset. */
VG_API void vg_graph_set_seed(vg_graph *g, int64_t seed);
VG_API int64_t vg_graph_seed(const vg_graph *g);
/* TF's get_seed(op_seed): fills the (seed, seed2) pair a random op should use. */
VG_API void vg_graph_get_seed(vg_graph *g, int64_t op_seed, int64_t *seed, int64_t *seed2);

/* ------------------------------------------------------------------------ */
/* Name scopes and control-dependency scopes */

/* Pushes a name scope: later ops are named "<scope>/<name>". A scope name already used
 * at this level is made unique ("dense_1") like tf.name_scope. Returns the full scope
 * (borrowed, valid until pop). A name ending in "/" is used verbatim (re-entering). */
VG_API const char *vg_graph_push_scope(vg_graph *g, const char *name);
VG_API void vg_graph_pop_scope(vg_graph *g);
/* The current scope ("" at top), borrowed. */
VG_API const char *vg_graph_scope(const vg_graph *g);
/* A unique op name for `name` under the current scope, as TF's unique_name: "a",
 * "a_1", ... Written into buf (size len); returns buf. Does not reserve the name. */
VG_API char *vg_graph_unique_name(vg_graph *g, const char *name, char *buf, size_t len);

/* Pushes control dependencies: ops created until the matching pop get control inputs
 * on these ops (tf.control_dependencies). Nested pushes accumulate. */
VG_API void vg_graph_push_control_deps(vg_graph *g, vg_op *const *ops, int n);
/* Pops the innermost vg_graph_push_control_deps; a no-op when none is open (or when the
 * innermost entry is an init scope: see below). */
VG_API void vg_graph_pop_control_deps(vg_graph *g);

/* TF's init_scope (control_dependencies(None)): ops created until the matching
 * vg_graph_pop_init_scope get no control inputs from the control dependencies pushed
 * before; pushes made inside apply as usual. Used where variables, their initializers
 * and optimizer slots are created, so they do not depend on the surrounding train
 * step. As in TF, the ops are also outside any control-flow context: a variable first
 * created inside a while_loop or cond body (vigil/control_flow.h) lives and is
 * initialized outside it. Nests. Out of memory sets the graph's error (RESOURCE_EXHAUSTED); the matching
 * pop is still required. The pop drops the control dependencies pushed inside the
 * scope and not popped; a pop with no init scope open is a no-op. */
VG_API void vg_graph_push_init_scope(vg_graph *g);
VG_API void vg_graph_pop_init_scope(vg_graph *g);

/* tf.device(device): ops created until the matching pop, whose builder sets no device,
 * get this device string (vg_op_device); NULL or "" is tf.device(None) (no device). The
 * innermost scope wins. vigil runs everything on the CPU: a session made with
 * vg_session_new_with_config (vigil/config.h) checks the strings as TF's placer does.
 * Fails (sticky) with RESOURCE_EXHAUSTED; every successful push needs a pop. */
VG_API vg_code vg_graph_push_device(vg_graph *g, const char *device);
VG_API void vg_graph_pop_device(vg_graph *g);
/* The current device scope ("" when none). Borrowed. */
VG_API const char *vg_graph_device(const vg_graph *g);

/* ------------------------------------------------------------------------ */
/* Collections (tf.GraphKeys). Items are outputs; an op-valued item (train_op,
 * init ops) is stored as {op, 0}. */
#define VG_GLOBAL_VARIABLES "variables"
#define VG_TRAINABLE_VARIABLES "trainable_variables"
#define VG_LOCAL_VARIABLES "local_variables"
#define VG_MODEL_VARIABLES "model_variables"
#define VG_SUMMARIES "summaries"
#define VG_QUEUE_RUNNERS "queue_runners"
#define VG_TRAIN_OP "train_op"
#define VG_GLOBAL_STEP "global_step"
#define VG_INIT_OP "init_op"
#define VG_LOCAL_INIT_OP "local_init_op"
#define VG_READY_OP "ready_op"
#define VG_READY_FOR_LOCAL_INIT_OP "ready_for_local_init_op"
#define VG_SUMMARY_OP "summary_op"
#define VG_SAVERS "savers"
#define VG_UPDATE_OPS "update_ops"
#define VG_LOSSES "losses"

/* Appends an item. Fails (sticky) with RESOURCE_EXHAUSTED or FAILED_PRECONDITION
 * when finalized. Returns the code. */
VG_API vg_code vg_graph_add_to_collection(vg_graph *g, const char *key, vg_output item);
/* Items of a collection, borrowed (valid until the collection changes); *n gets the
 * count (0 and NULL if none). */
VG_API const vg_output *vg_graph_collection(const vg_graph *g, const char *key, int *n);
/* Whether an output of op is an item of collection key (false for NULL arguments). */
VG_API bool vg_graph_collection_has_op(const vg_graph *g, const char *key, const vg_op *op);
/* Removes all items of a collection. */
VG_API void vg_graph_clear_collection(vg_graph *g, const char *key);
VG_API int vg_graph_num_collections(const vg_graph *g);
VG_API const char *vg_graph_collection_name(const vg_graph *g, int i);

/* Queue runners (the "queue_runners" collection holds TF QueueRunnerDefs). A def names
 * the queue op, the enqueue ops (one thread each), the close op run when the input is
 * exhausted and the cancel op run on stop (close with cancel_pending_enqueues). */
typedef struct vg_queue_runner_def {
    vg_op *queue;
    vg_op *const *enqueue_ops;
    int n_enqueue;
    vg_op *close_op;
    vg_op *cancel_op;
} vg_queue_runner_def;

/* Adds a copy of def to the graph's queue runners (and {queue, 0} to the "queue_runners"
 * collection). Fails (sticky) with RESOURCE_EXHAUSTED, FAILED_PRECONDITION (finalized),
 * INVALID_ARGUMENT (NULL ops). */
VG_API vg_code vg_graph_add_queue_runner(vg_graph *g, const vg_queue_runner_def *def);
VG_API int vg_graph_num_queue_runners(const vg_graph *g);
/* Def i, borrowed for the graph's lifetime. */
VG_API const vg_queue_runner_def *vg_graph_queue_runner(const vg_graph *g, int i);

/* User data attached to the graph under a key (e.g. the Saver object behind the
 * "savers" collection). The graph calls destroy(ptr) (if not NULL) when it is freed or
 * the key is set again. Fails with RESOURCE_EXHAUSTED. */
VG_API vg_code vg_graph_set_user_data(vg_graph *g, const char *key, void *ptr, void (*destroy)(void *));
/* The pointer stored under key, or NULL. */
VG_API void *vg_graph_user_data(const vg_graph *g, const char *key);

/* ------------------------------------------------------------------------ */
/* Ops */

VG_API const char *vg_op_name(const vg_op *op);
VG_API const char *vg_op_type(const vg_op *op);
VG_API vg_graph *vg_op_graph(const vg_op *op);
VG_API int vg_op_id(const vg_op *op);
VG_API int vg_op_num_inputs(const vg_op *op);
VG_API vg_output vg_op_input(const vg_op *op, int i);
VG_API int vg_op_num_control_inputs(const vg_op *op);
VG_API vg_op *vg_op_control_input(const vg_op *op, int i);
VG_API int vg_op_num_outputs(const vg_op *op);
VG_API vg_dtype vg_output_dtype(vg_output o);
/* Build-time shape (may be partially unknown). */
VG_API vg_shape vg_output_shape(vg_output o);
/* Adds a control input to an op after creation (only while not finalized). */
VG_API vg_code vg_op_add_control_input(vg_op *op, vg_op *dep);
/* Device string (informational; vigil is CPU-only). */
VG_API const char *vg_op_device(const vg_op *op);

/* Attr access. Each returns false if the attr is absent or of another type. */
typedef enum vg_attr_type {
    VG_ATTR_NONE = 0,
    VG_ATTR_INT,
    VG_ATTR_FLOAT,
    VG_ATTR_BOOL,
    VG_ATTR_TYPE,
    VG_ATTR_SHAPE,
    VG_ATTR_STRING,
    VG_ATTR_TENSOR,
    VG_ATTR_INT_LIST,
    VG_ATTR_FLOAT_LIST,
    VG_ATTR_TYPE_LIST,
    VG_ATTR_SHAPE_LIST,
    VG_ATTR_STRING_LIST
} vg_attr_type;

VG_API int vg_op_num_attrs(const vg_op *op);
VG_API const char *vg_op_attr_name(const vg_op *op, int i);
VG_API vg_attr_type vg_op_attr_type(const vg_op *op, const char *name);
VG_API bool vg_op_attr_int(const vg_op *op, const char *name, int64_t *v);
VG_API bool vg_op_attr_float(const vg_op *op, const char *name, float *v);
VG_API bool vg_op_attr_bool(const vg_op *op, const char *name, bool *v);
VG_API bool vg_op_attr_type_(const vg_op *op, const char *name, vg_dtype *v);
VG_API bool vg_op_attr_shape(const vg_op *op, const char *name, vg_shape *v);
/* String attr: borrowed bytes and length. */
VG_API bool vg_op_attr_string(const vg_op *op, const char *name, const char **v, size_t *len);
/* Tensor attr (Const's value): borrowed, lives as long as the graph. */
VG_API bool vg_op_attr_tensor(const vg_op *op, const char *name, const vg_tensor **v);
/* List attrs: borrowed arrays and counts. */
VG_API bool vg_op_attr_int_list(const vg_op *op, const char *name, const int64_t **v, int *n);
VG_API bool vg_op_attr_float_list(const vg_op *op, const char *name, const float **v, int *n);
VG_API bool vg_op_attr_type_list(const vg_op *op, const char *name, const vg_dtype **v, int *n);
VG_API bool vg_op_attr_shape_list(const vg_op *op, const char *name, const vg_shape **v, int *n);
VG_API bool vg_op_attr_string_list(const vg_op *op, const char *name, const char *const **v,
                                   int *n);

/* ------------------------------------------------------------------------ */
/* Generic op builder (like TF_NewOperation). The typed builders in vigil/ops.h are
 * built on it. Usage: new, add inputs/attrs, finish. finish consumes the builder.
 * name may be NULL (the op type is used) and is made unique under the current scope.
 * An unknown op type, wrong input count or dtype, or a failing shape function makes
 * finish return NULL and record the graph's sticky error. */
typedef struct vg_op_builder vg_op_builder;

VG_API vg_op_builder *vg_op_builder_new(vg_graph *g, const char *type, const char *name);
VG_API void vg_op_builder_add_input(vg_op_builder *b, vg_output in);
VG_API void vg_op_builder_add_inputs(vg_op_builder *b, const vg_output *ins, int n);
VG_API void vg_op_builder_add_control_input(vg_op_builder *b, vg_op *op);
VG_API void vg_op_builder_set_attr_int(vg_op_builder *b, const char *name, int64_t v);
VG_API void vg_op_builder_set_attr_float(vg_op_builder *b, const char *name, float v);
VG_API void vg_op_builder_set_attr_bool(vg_op_builder *b, const char *name, bool v);
VG_API void vg_op_builder_set_attr_type(vg_op_builder *b, const char *name, vg_dtype v);
VG_API void vg_op_builder_set_attr_shape(vg_op_builder *b, const char *name, vg_shape v);
VG_API void vg_op_builder_set_attr_string(vg_op_builder *b, const char *name, const char *v,
                                          size_t len);
/* Tensor attr: the builder takes a new reference (the caller keeps its own). */
VG_API void vg_op_builder_set_attr_tensor(vg_op_builder *b, const char *name, vg_tensor *v);
VG_API void vg_op_builder_set_attr_int_list(vg_op_builder *b, const char *name,
                                            const int64_t *v, int n);
VG_API void vg_op_builder_set_attr_float_list(vg_op_builder *b, const char *name,
                                              const float *v, int n);
VG_API void vg_op_builder_set_attr_type_list(vg_op_builder *b, const char *name,
                                             const vg_dtype *v, int n);
VG_API void vg_op_builder_set_attr_shape_list(vg_op_builder *b, const char *name,
                                              const vg_shape *v, int n);
VG_API void vg_op_builder_set_attr_string_list(vg_op_builder *b, const char *name,
                                               const char *const *v, int n);
VG_API void vg_op_builder_set_device(vg_op_builder *b, const char *device);
/* Sets every attr of op on b, as the set_attr calls above would (tensor attrs: a new
 * reference; lists and strings copied), e.g. to rebuild an op under another name or
 * with other inputs. Attrs b already has under the same names are replaced. Does
 * nothing when b or op is NULL. */
VG_API void vg_op_builder_copy_attrs(vg_op_builder *b, const vg_op *op);
/* Creates the op. Returns NULL on failure (graph error recorded). */
VG_API vg_op *vg_op_builder_finish(vg_op_builder *b);
/* Discards an unfinished builder. */
VG_API void vg_op_builder_free(vg_op_builder *b);

/* Output i of op (op may be NULL: returns a failed output). */
VG_API vg_output vg_out(vg_op *op, int i);

/* ------------------------------------------------------------------------ */
/* A variable's parts: what a tf.Variable holds besides its VariableV2 op (written to
 * a MetaGraphDef's VariableDef). vg_variable_new and vg_get_variable (vigil/variables.h)
 * record them. */

/* For a VariableV2 op whose parts were recorded: its initializer and snapshot; for
 * other VariableV2 ops (e.g. from an imported graph): the ops named "<name>/Assign"
 * and "<name>/read", NULL/{NULL,0} if absent. Borrowed (owned by the graph). */
VG_API vg_op *vg_variable_initializer(const vg_op *var);
VG_API vg_output vg_variable_snapshot(const vg_op *var);
/* Records the initializer op and snapshot output of VariableV2 op `var` (or of a
 * resource variable's VarHandleOp), for graphs built or imported by other means than
 * vigil/variables.h. The ops stay owned by the graph; initializer may be NULL and
 * snapshot {NULL, 0} (= none: the lookups above then use the names). Fails with
 * INVALID_ARGUMENT (status set, may be NULL; the graph's error is untouched) when var
 * is NULL or neither a VariableV2 nor a VarHandleOp op, or the
 * initializer or snapshot is from another graph or does not exist. */
VG_API vg_code vg_variable_set_parts(vg_op *var, vg_op *initializer, vg_output snapshot, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
