/*
 * vigil/variable_scope.h - tf.variable_scope and tf.get_variable sharing (TF 1.15's
 * variable_scope.py): reuse (True, AUTO_REUSE), scope-level initializer, regularizer,
 * dtype and custom_getter, the REGULARIZATION_LOSSES collection, scope objects
 * (tf.get_variable_scope(), re-entering a captured scope) and TF's naming rules when
 * the name scope and the variable scope differ.
 *
 *     vg_get_variable_opts w_opts = {.dims = (int64_t[]){5, 5, 3, 64}, .ndims = 4};
 *     vg_variable_scope_push(g, "conv1", NULL);        // variable scope and name scope "conv1"
 *     vg_vscope *conv1 = vg_get_variable_scope(g);     // captured (owned by the graph)
 *     vg_variable wt = vg_get_variable_ex(g, "weights", &w_opts); // "conv1/weights", glorot_uniform
 *     vg_variable_scope_pop(g);
 *     vg_variable_scope_opts o = {.reuse = VG_REUSE_TRUE};
 *     vg_variable_scope_enter(g, conv1, &o);           // ops now go to name scope "conv1_1"
 *     vg_variable same = vg_get_variable_ex(g, "weights", &w_opts);
 *     vg_variable_scope_pop(g);
 *     if (same.var != wt.var) return 1;                 // shared: "conv1/weights"
 *
 * Naming (docs/naming.md): a variable scope's name is its parent variable scope's name
 * + "/" + name, never made unique (default_name scopes are: "dense", "dense_1", ...);
 * entering one also opens a name scope of that name, made unique as tf.name_scope does,
 * so ops of a re-entered scope go to "conv1_1/..." while its variables stay
 * "conv1/...". tf.get_variable's names follow the variable scope only: a name scope
 * (vg_graph_push_scope) never changes them, also when no variable scope is open
 * (get_variable("w") inside name_scope("tower") is "w").
 *
 * The scope stack lives in the graph (user data "vigil.variable_scope"); like the rest
 * of graph building it is not thread-safe. Failures set the graph's sticky error.
 */
#ifndef VIGIL_VARIABLE_SCOPE_H
#define VIGIL_VARIABLE_SCOPE_H

#include "variables.h"

#ifdef __cplusplus
extern "C" {
#endif

/* reuse: VG_REUSE_INHERIT (TF's None/False: take the parent's; at the top, no reuse),
 * VG_REUSE_TRUE (variables must exist), VG_REUSE_AUTO (tf.AUTO_REUSE: create or reuse).
 * As in TF, reuse once set is inherited by every nested scope. */
typedef enum vg_reuse { VG_REUSE_INHERIT = 0, VG_REUSE_TRUE = 1, VG_REUSE_AUTO = 2 } vg_reuse;

/* A regularizer: fn(g, weights, scale, arg) builds the loss tensor of a new variable
 * (its "<name>/read" value) under the name scope "<var name>/Regularizer/", or returns
 * {NULL, 0} for none. A non-NULL result is added to REGULARIZATION_LOSSES. */
typedef vg_output (*vg_regularizer_fn)(vg_graph *g, vg_output weights, double scale, void *arg);
typedef struct vg_regularizer {
    vg_regularizer_fn fn; /* NULL: none (in a scope: inherit the parent's) */
    double scale;
    void *arg;
} vg_regularizer;

/* tf.contrib.layers.l2_regularizer(scale) / l1_regularizer(scale) as regularizers
 * (vg_l2_regularizer / vg_l1_regularizer of vigil/losses.h). */
VG_API vg_regularizer vg_regularizer_l2(double scale);
VG_API vg_regularizer vg_regularizer_l1(double scale);
/* tf.no_regularizer: adds no loss. Given to get_variable, or set on a scope, it switches
 * the scope's regularizer off (a regularizer with fn NULL inherits it instead). */
VG_API vg_regularizer vg_regularizer_none(void);

/* Arguments of tf.get_variable. Zero-initialise and set what you need:
 * dt 0 (VG_DTYPE_INVALID) = the scope's dtype (float32 by default); has_init false =
 * the scope's initializer, else glorot_uniform for floating dtypes and zeros for the
 * others (TF's default); regularizer.fn NULL = the scope's. dims may be NULL when
 * reusing (the existing shape is taken). */
typedef struct vg_get_variable_opts {
    vg_dtype dt;
    const int64_t *dims;
    int ndims;
    bool has_init;
    vg_initializer init;
    vg_regularizer regularizer;
    bool not_trainable;   /* false (default): trainable, as TF's trainable=True */
    bool local;           /* true: LOCAL_VARIABLES collection instead of GLOBAL_VARIABLES */
    vg_reuse reuse;       /* per call override (TF's get_variable(reuse=)); INHERIT = scope's */
} vg_get_variable_opts;

/* The fully resolved arguments a getter receives (name is the full variable name). */
typedef struct vg_getter_args {
    const char *name;
    vg_dtype dt;
    const int64_t *dims;
    int ndims;
    vg_initializer init;
    vg_regularizer regularizer;
    unsigned flags;   /* VG_VAR_TRAINABLE / VG_VAR_LOCAL */
    vg_reuse reuse;
} vg_getter_args;

/* The next getter in the chain; call it as getter(g, args, getter_ctx). */
typedef vg_variable (*vg_getter_fn)(vg_graph *g, const vg_getter_args *args, void *getter_ctx);
/* A custom_getter: may change args (copy them), call getter, or return another
 * variable. user is the pointer given with the scope. */
typedef vg_variable (*vg_custom_getter_fn)(vg_graph *g, vg_getter_fn getter, void *getter_ctx,
                                           const vg_getter_args *args, void *user);

/* Options of tf.variable_scope; zero-initialise (or pass NULL) for TF's defaults. */
typedef struct vg_variable_scope_opts {
    vg_reuse reuse;                      /* INHERIT: the parent's (a re-entered object's own) */
    const vg_initializer *initializer;   /* NULL (or vg_init_default()): inherit */
    vg_regularizer regularizer;          /* fn NULL: inherit */
    vg_dtype dtype;                      /* 0: inherit (float32 at the top) */
    vg_custom_getter_fn custom_getter;   /* NULL: inherit the parent's; else it wraps the
                                            inherited one: called first, its `getter` is
                                            the inherited getter (TF's _maybe_wrap_custom_getter) */
    void *custom_getter_arg;
    const char *default_name;            /* used (made unique) when name is NULL */
    bool no_name_scope;                  /* TF's auxiliary_name_scope=False: no name scope is
                                            opened; the current one is kept */
} vg_variable_scope_opts;

/* Enters tf.variable_scope(name, default_name=opts->default_name, ...). Returns the
 * full variable-scope name (borrowed, valid until the pop), NULL on failure with the
 * graph's error: INVALID_ARGUMENT (no name and no default_name; a reuse other than
 * INHERIT without a name: "reuse=True cannot be used without a name_or_scope"; a name
 * the name scope would not take, as TF's Graph.name_scope checks it: "'_' is not a
 * valid scope name" - at the top it must start with a letter, digit or '.', and only
 * letters, digits and "_.-/" may follow; not checked with no_name_scope),
 * RESOURCE_EXHAUSTED. Every successful push needs a vg_variable_scope_pop. The counts
 * that make default names unique below this scope restart when it is left (TF's
 * close_variable_subscopes). */
VG_API const char *vg_variable_scope_push(vg_graph *g, const char *name, const vg_variable_scope_opts *opts);
/* Leaves the innermost variable scope (and its name scope); a no-op when none is open. */
VG_API void vg_variable_scope_pop(vg_graph *g);
/* tf.get_variable_scope().name: "" at the top. Borrowed. */
VG_API const char *vg_variable_scope_name(const vg_graph *g);
/* The name scope the innermost variable scope opened (TF's original_name_scope,
 * "conv1/"; for a re-entered scope object the one it first opened), "" at the top.
 * Borrowed. */
VG_API const char *vg_variable_scope_original_name_scope(const vg_graph *g);
/* The effective reuse of the current scope. */
VG_API vg_reuse vg_variable_scope_reuse(const vg_graph *g);
/* tf.get_variable_scope().reuse_variables(): the current scope reuses from now on. */
VG_API void vg_variable_scope_reuse_variables(vg_graph *g);

/* ------------------------------------------------------------------------ */
/* Scope objects (TF's VariableScope): what tf.get_variable_scope() returns and
 * `with tf.variable_scope(...) as scope` captures. Every vigil scope entry makes one;
 * the graph owns them all (valid until vg_graph_free; never freed by the caller). */
typedef struct vg_vscope vg_vscope;

/* tf.get_variable_scope(): the current scope object (the root scope, named "", when
 * none is open). Changing it with the setters below changes the current scope in place
 * (TF: tf.get_variable_scope().set_initializer(...), .reuse_variables(), ...): the
 * scope is modified, not nested, and the change ends with it. NULL only when out of
 * memory (graph error RESOURCE_EXHAUSTED). */
VG_API vg_vscope *vg_get_variable_scope(vg_graph *g);

/* tf.variable_scope(scope, ...) with a captured scope object: the variable scope gets
 * the object's name (not nested under the current one) and a copy of its attributes
 * (reuse unless opts->reuse sets it: a reusing object stays reusing; initializer,
 * regularizer, dtype unless opts set them; custom getter, wrapped by
 * opts->custom_getter), keeps the object's original_name_scope, and opens a name scope
 * named after the last component of the object's name, made unique ("tower_1"; none
 * for the root scope; none with opts->no_name_scope). Default-name counts changed
 * inside are restored on leaving it (TF: "No matter the jump in the middle, unique
 * numbering continues"). opts->default_name is ignored. Returns the scope's name
 * (borrowed, valid until the pop), NULL on failure with the graph's error:
 * INVALID_ARGUMENT (NULL scope), RESOURCE_EXHAUSTED. Leave it with
 * vg_variable_scope_pop.
 *
 *     vg_variable_scope_push(g, "tower", NULL);
 *     vg_vscope *tower = vg_get_variable_scope(g);
 *     vg_variable_scope_pop(g);
 *     vg_graph_push_scope(g, "other");
 *     vg_variable_scope_enter(g, tower, NULL);       // name scope "other/tower"
 *     const char *ns = vg_variable_scope_original_name_scope(g); // "tower/"
 *     vg_variable_scope_pop(g);
 *     vg_graph_pop_scope(g);
 *     (void)ns;
 */
VG_API const char *vg_variable_scope_enter(vg_graph *g, vg_vscope *scope, const vg_variable_scope_opts *opts);

/* A scope object's name ("" for the root or NULL), original_name_scope, reuse, dtype
 * (float32 unless set) and initializer (false when it has none; else *init, if
 * non-NULL, gets it). Borrowed strings, valid as long as the graph. */
VG_API const char *vg_vscope_name(const vg_vscope *scope);
VG_API const char *vg_vscope_original_name_scope(const vg_vscope *scope);
VG_API vg_reuse vg_vscope_reuse(const vg_vscope *scope);
VG_API vg_dtype vg_vscope_dtype(const vg_vscope *scope);
VG_API bool vg_vscope_initializer(const vg_vscope *scope, vg_initializer *init);

/* VariableScope.reuse_variables(), set_initializer (NULL or vg_init_default(): none),
 * set_regularizer (fn NULL: none), set_dtype (0: float32), set_custom_getter (replaces
 * the scope's getter chain with fn, or clears it when fn is NULL; RESOURCE_EXHAUSTED
 * when out of memory, INVALID_ARGUMENT for a NULL scope). NULL scopes are ignored. */
VG_API void vg_vscope_reuse_variables(vg_vscope *scope);
VG_API void vg_vscope_set_initializer(vg_vscope *scope, const vg_initializer *init);
VG_API void vg_vscope_set_regularizer(vg_vscope *scope, vg_regularizer reg);
VG_API void vg_vscope_set_dtype(vg_vscope *scope, vg_dtype dt);
VG_API vg_code vg_vscope_set_custom_getter(vg_vscope *scope, vg_custom_getter_fn fn, void *arg);

/* VariableScope.get_collection(key) (and its trainable_variables(), global_variables(),
 * local_variables() with VG_TRAINABLE_VARIABLES, VG_GLOBAL_VARIABLES,
 * VG_LOCAL_VARIABLES): the items of graph collection key whose op name starts with the
 * scope's name + "/" (every item for the root scope), in collection order. Writes the
 * first max of them to out (NULL with max 0 only counts) and returns how many match;
 * 0 for a NULL graph, scope or key and for an empty or unknown collection. TF matches
 * the prefix as a regular expression (re.match); vigil compares it literally, so a "."
 * in a scope name matches only ".". */
VG_API int vg_vscope_get_collection(const vg_graph *g, const vg_vscope *scope, const char *key, vg_output *out,
                                    int max);

/* tf.get_variable(name, shape, dtype, initializer, regularizer, trainable, reuse) under
 * the current variable scope: the full name is the variable scope's name + "/" + name
 * (name scopes play no part). name "" is allowed inside a variable scope: the variable
 * is then named after the scope itself (TF's slot_creator does this; the store knows it
 * as "<scope>/"). An initializer of kind VG_INIT_DEFAULT (or VG_INIT_UNSET) counts as none. TF's sharing
 * rules:
 * - the variable exists (made by get_variable) and reuse is off: INVALID_ARGUMENT "Variable
 *   <name> already exists, disallowed. Did you mean to set reuse=True or
 *   reuse=tf.AUTO_REUSE in VarScope?";
 * - it exists and reuse is on: the shape must be compatible and the dtype equal, else
 *   INVALID_ARGUMENT "Trying to share variable <name>, but specified shape [..] and found
 *   shape [..]." (or dtype); returns the existing variable;
 * - it does not exist and reuse is True: INVALID_ARGUMENT "Variable <name> does not
 *   exist, or was not created with tf.get_variable(). Did you mean to set
 *   reuse=tf.AUTO_REUSE in VarScope?";
 * - else a new variable: initial value ops under "<name>/Initializer/", a regularizer's
 *   loss under "<name>/Regularizer/" added to REGULARIZATION_LOSSES.
 * The current scope's custom getter chain is called around the default getter
 * (the innermost scope's getter first), as in TF at the top name scope (TF's
 * `with ops.name_scope(None)`): ops a getter builds are named from the top
 * ("custom_getter/add"), whatever name scope get_variable was called in. Returns a variable with var == NULL on failure
 * (graph error set). opts may be NULL only for reuse. Failures also: INVALID_ARGUMENT
 * for a NULL name, or "" outside any variable scope. */
VG_API vg_variable vg_get_variable_ex(vg_graph *g, const char *name, const vg_get_variable_opts *opts);

/* TF 1.15 mixed precision's float32_variable_storage_getter, as a custom_getter: a
 * trainable variable requested as VG_HALF (or any non-float32 dtype) is created and
 * stored as float32 (the master copy that savers and optimizers see: var and ref), and
 * the returned read is a "Cast" of it to the requested dtype; other requests pass
 * through unchanged. user is unused. Fails as the next getter does.
 *
 *     vg_variable_scope_opts mp = {.custom_getter = vg_float32_variable_storage_getter};
 *     int64_t dims[2] = {3, 4};
 *     vg_variable_scope_push(g, "fp16", &mp);
 *     vg_variable v = vg_get_variable(g, "w", VG_HALF, dims, 2, vg_init_ones(), VG_VAR_TRAINABLE);
 *     vg_variable_scope_pop(g);            // v.ref: float32 "fp16/w"; v.read: float16 "Cast"
 */
VG_API vg_variable vg_float32_variable_storage_getter(vg_graph *g, vg_getter_fn getter, void *getter_ctx,
                                                      const vg_getter_args *args, void *user);

/* Finds a variable made by get_variable by its full name ({NULL} var if none). */
VG_API vg_variable vg_variable_scope_find(const vg_graph *g, const char *full_name);

#ifdef __cplusplus
}
#endif
#endif
