/*
 * vigil/slim.h - TF-slim in C (TF 1.15 tf.contrib.slim: contrib/framework arg_scope and
 * variables, contrib/layers layers, slim/learning): arg_scope, the slim layers with
 * slim's scope and variable names ("Conv/weights", "Conv/BatchNorm/moving_mean",
 * "SeparableConv2d/depthwise_weights", "fully_connected/biases", ...), model variables,
 * warm starting from a checkpoint, and slim.learning.train over a
 * MonitoredTrainingSession.
 *
 * Every layer takes its keyword arguments as a vg_slim_args, written with designated
 * initialisers; a field left zero means "not given": the innermost arg_scope that lists
 * the function and sets the field supplies it, else slim's default. Booleans are
 * vg_slim_flag (VG_SLIM_UNSET / VG_SLIM_TRUE / VG_SLIM_FALSE) so that a call can
 * override a scope either way.
 *
 *     vg_slim_args bn = {.decay = 0.9997, .epsilon = 0.001};
 *     vg_regularizer l2 = vg_regularizer_l2(4e-5);
 *     vg_slim_args sc = {.normalizer_fn = VG_SLIM_BATCH_NORM, .normalizer_params = &bn,
 *                        .weights_regularizer = l2};
 *     vg_output img = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 8, 8, 3}, 4, "img");
 *     vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D, VG_SLIM_SEPARABLE_CONV2D}, 2, &sc);
 *     vg_output net = vg_slim_conv2d(g, img, 8, 3, 3, "Conv2d_0", &(vg_slim_args){.stride = {2, 2}});
 *     net = vg_slim_separable_conv2d(g, net, 0, 3, 3, "Conv2d_1_depthwise", NULL);  // num_outputs=None
 *     net = vg_slim_conv2d(g, net, 16, 1, 1, "Conv2d_1_pointwise", NULL);
 *     vg_slim_arg_scope_pop(g);
 *     // "Conv2d_0/weights", "Conv2d_0/BatchNorm/beta", ".../moving_mean", ".../moving_variance",
 *     // "Conv2d_1_depthwise/depthwise_weights", "Conv2d_1_pointwise/weights", ...
 *     (void)net;
 *
 * Naming (TF 1.15): conv2d, separable_conv2d, fully_connected and batch_norm open
 * tf.variable_scope(scope, default_name) with default names "Conv", "SeparableConv2d",
 * "fully_connected", "BatchNorm" (made unique: "Conv_1"); their variables are model
 * variables (the "model_variables" and "variables" collections; trainable ones also in
 * "trainable_variables"); a normalizer runs inside the layer's scope ("Conv/BatchNorm/").
 * max_pool2d, avg_pool2d, dropout and flatten open name scopes "MaxPool2D", "AvgPool2D",
 * "Dropout", "Flatten". Regularizers add their losses to REGULARIZATION_LOSSES: the
 * weights of conv2d, fully_connected and separable_conv2d with num_outputs come from a
 * tf.layers layer in TF, so their losses carry its weight names ("Conv/kernel/
 * Regularizer/l2_regularizer", ".../bias/...", ".../depthwise_kernel/...",
 * ".../pointwise_kernel/..."); the others "<variable>/Regularizer/...".
 *
 * Errors: the layers set the graph's sticky error and return {NULL, 0}: INVALID_ARGUMENT
 * for an input of the wrong rank or unknown channel depth, num_outputs / kernel sizes /
 * strides / rates <= 0, a padding other than SAME/VALID, rate > 1 with stride > 1
 * ("strides > 1 not supported in conjunction with rate > 1"), keep_prob outside (0, 1];
 * UNIMPLEMENTED for rate > 1 with unknown spatial dimensions; get_variable's errors (sharing, reuse). Variables are created with tf.get_variable,
 * so reuse follows the variable scopes (vigil/variable_scope.h) and args.reuse.
 */
#ifndef VIGIL_SLIM_H
#define VIGIL_SLIM_H

#include "layers.h"
#include "monitored.h"
#include "optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A boolean argument that may be left unset (slim's default, or the arg_scope's). */
typedef enum vg_slim_flag { VG_SLIM_UNSET = 0, VG_SLIM_TRUE = 1, VG_SLIM_FALSE = 2 } vg_slim_flag;

/* activation_fn=None: no activation (the zero value, VG_ACT_NONE, means "unset": relu
 * for conv2d, separable_conv2d and fully_connected, none for batch_norm). */
#define VG_SLIM_LINEAR ((vg_activation)-1)

/* normalizer_fn: unset (slim's None), none (overrides an arg_scope's), batch_norm. */
typedef enum vg_slim_normalizer {
    VG_SLIM_NORMALIZER_UNSET = 0,
    VG_SLIM_NO_NORMALIZER = 1,
    VG_SLIM_BATCH_NORM = 2
} vg_slim_normalizer;

/* The functions arg_scope knows (tf.contrib.slim's names); vg_slim_add_arg_scope adds
 * a caller's own. */
#define VG_SLIM_CONV2D "conv2d"
#define VG_SLIM_SEPARABLE_CONV2D "separable_conv2d"
#define VG_SLIM_FULLY_CONNECTED "fully_connected"
#define VG_SLIM_BATCH_NORM_FN "batch_norm"
#define VG_SLIM_MAX_POOL2D "max_pool2d"
#define VG_SLIM_AVG_POOL2D "avg_pool2d"
#define VG_SLIM_DROPOUT "dropout"
#define VG_SLIM_FLATTEN "flatten"

/* The keyword arguments of the slim layers (each reads the fields it takes and ignores
 * the others). Zero = unset; slim's defaults in brackets. Pointers are borrowed: they
 * must stay valid for the call, or, in an arg_scope, until its pop. */
typedef struct vg_slim_args {
    /* conv2d, separable_conv2d, max_pool2d, avg_pool2d */
    int stride[2];                 /* [1, 1] for convolutions, [2, 2] for pools */
    int rate[2];                   /* [1, 1]: atrous rate (convolutions) */
    const char *padding;           /* "SAME" for convolutions, "VALID" for pools (any case) */
    int depth_multiplier;          /* separable_conv2d: [1] */
    /* conv2d, separable_conv2d, fully_connected, batch_norm */
    vg_activation activation_fn;   /* [relu]; batch_norm [none]; VG_SLIM_LINEAR: None */
    vg_slim_normalizer normalizer_fn;          /* [None] */
    const struct vg_slim_args *normalizer_params; /* the normalizer's own args ([NULL]: none
                                                     given; batch_norm's arg_scope still applies) */
    const vg_initializer *weights_initializer; /* [xavier_initializer(): glorot uniform] */
    vg_regularizer weights_regularizer;        /* [None] */
    const vg_initializer *biases_initializer;  /* [zeros] */
    vg_slim_flag no_biases;                    /* TRUE: biases_initializer=None (no biases); with
                                                  biases_initializer one argument for arg_scope */
    vg_regularizer biases_regularizer;         /* [None] */
    vg_slim_flag trainable;                    /* [TRUE] */
    vg_reuse reuse;                            /* [None] */
    /* batch_norm */
    double decay;                  /* [0.999] (0 = unset) */
    vg_slim_flag center;           /* [TRUE]: beta variable (else offset 0) */
    vg_slim_flag scale;            /* [FALSE]: gamma variable (else 1) */
    double epsilon;                /* [0.001] (0 = unset) */
    vg_slim_flag is_training;      /* batch_norm and dropout: [TRUE] */
    vg_output is_training_tensor;  /* a bool scalar: chooses at run time (overrides is_training;
                                      with it one argument for arg_scope) */
    vg_slim_flag fused;            /* [TRUE where possible: rank 2 or 4] */
    const char *updates_collections; /* [VG_UPDATE_OPS]; "" = None: updates run with the output */
    vg_slim_flag zero_debias_moving_mean; /* [FALSE] */
    /* dropout */
    double keep_prob;              /* [0.5] (0 = unset) */
    int64_t seed;                  /* [0: none] */
    /* a caller's own function (vg_slim_add_arg_scope): whatever it wants */
    const void *user;
} vg_slim_args;

/* ---- arg_scope ------------------------------------------------------------ */

/* add_arg_scope: lets arg_scope list fn_name (a function of the caller that reads its
 * arguments with vg_slim_resolve_args). The built-in names are always known. The
 * registry lives in the graph. Fails (also as the graph's error) with INVALID_ARGUMENT
 * (NULL or empty name), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_slim_add_arg_scope(vg_graph *g, const char *fn_name);
/* True when arg_scope may list fn_name (has_arg_scope). */
VG_API bool vg_slim_has_arg_scope(vg_graph *g, const char *fn_name);

/* with slim.arg_scope([fns...], **args): until the matching pop, the fields args sets
 * are the defaults of the listed functions (nested scopes merge: the innermost scope
 * that sets a field wins, as TF's copied-and-updated arg dicts). args is copied (its
 * pointers are borrowed). Fails (also as the graph's error) with INVALID_ARGUMENT "<fn> is
 * not decorated with @add_arg_scope" for an unknown name, NULL fns with nfns > 0, or
 * NULL args; RESOURCE_EXHAUSTED. Nothing is pushed on failure. */
VG_API vg_code vg_slim_arg_scope_push(vg_graph *g, const char *const *fns, int nfns, const vg_slim_args *args);
/* Leaves the innermost arg_scope (no-op when none is open). */
VG_API void vg_slim_arg_scope_pop(vg_graph *g);
/* Depth of the arg_scope stack (0 at the top). */
VG_API int vg_slim_arg_scope_depth(const vg_graph *g);

/* Leaves arg_scopes until the depth is depth (a function like mobilenet_v1_arg_scope
 * that pushes several: note the depth before, pop back to it). */
VG_API void vg_slim_arg_scope_pop_to(vg_graph *g, int depth);

/* A captured arg scope: slim.current_arg_scope(), what `with slim.arg_scope(...) as sc`
 * and nets' *_arg_scope() functions return, to enter later with arg_scope(sc). The
 * vg_slim_args pointers in it stay borrowed (give a function that builds one static
 * storage for them). */
typedef struct vg_slim_arg_scope vg_slim_arg_scope;
/* current_arg_scope(): a copy of the open scopes. Ownership: free with
 * vg_slim_arg_scope_free. NULL when out of memory (graph error RESOURCE_EXHAUSTED). */
VG_API vg_slim_arg_scope *vg_slim_current_arg_scope(vg_graph *g);
VG_API void vg_slim_arg_scope_free(vg_slim_arg_scope *sc);
/* with slim.arg_scope(sc): until the matching vg_slim_arg_scope_pop the captured scope
 * replaces the open ones (as TF, which swaps the current dict; scopes pushed inside
 * merge over it). sc is copied. Fails with INVALID_ARGUMENT (NULL sc), RESOURCE_EXHAUSTED.
 *
 *     static vg_slim_args conv_defaults = {.padding = "VALID", .activation_fn = VG_ACT_RELU6};
 *     int d0 = vg_slim_arg_scope_depth(g);
 *     vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D}, 1, &conv_defaults);
 *     vg_slim_arg_scope *sc = vg_slim_current_arg_scope(g);  // def my_arg_scope(): ... return sc
 *     vg_slim_arg_scope_pop_to(g, d0);
 *     vg_slim_arg_scope_enter(g, sc);                         // with slim.arg_scope(sc):
 *     vg_slim_args got = vg_slim_resolve_args(g, VG_SLIM_CONV2D, NULL); // .padding "VALID"
 *     vg_slim_arg_scope_pop(g);
 *     vg_slim_arg_scope_free(sc);
 *     (void)got;
 */
VG_API vg_code vg_slim_arg_scope_enter(vg_graph *g, const vg_slim_arg_scope *sc);

/* The arguments fn_name sees for a call with args call (NULL: none): each field the
 * call sets, else the innermost open arg_scope's that lists fn_name and sets it, else
 * left zero (the function applies its default). */
VG_API vg_slim_args vg_slim_resolve_args(const vg_graph *g, const char *fn_name, const vg_slim_args *call);

/* ---- layers --------------------------------------------------------------- */

/* slim.conv2d (convolution2d): x NHWC with known depth; variables "<scope>/weights"
 * [kh, kw, in, num_outputs] and, without a normalizer, "<scope>/biases"; ops
 * "<scope>/Conv2D" (or SpaceToBatchND / Conv2D / BatchToSpaceND with rate > 1),
 * "<scope>/BiasAdd", the normalizer under "<scope>/BatchNorm/", "<scope>/Relu". scope
 * NULL: "Conv" made unique. */
VG_API vg_output vg_slim_conv2d(vg_graph *g, vg_output x, int64_t num_outputs, int kh, int kw, const char *scope,
                                const vg_slim_args *args);
/* slim.separable_conv2d: num_outputs > 0: "<scope>/depthwise_weights" [kh, kw, in,
 * depth_multiplier] and "<scope>/pointwise_weights" [1, 1, in * depth_multiplier,
 * num_outputs], ops "<scope>/separable_conv2d/depthwise" and "<scope>/separable_conv2d";
 * num_outputs <= 0 (slim's None): the depthwise convolution only ("<scope>/depthwise",
 * out depth in * depth_multiplier). Then biases (no normalizer), normalizer, activation
 * as conv2d. scope NULL: "SeparableConv2d" made unique. */
VG_API vg_output vg_slim_separable_conv2d(vg_graph *g, vg_output x, int64_t num_outputs, int kh, int kw,
                                          const char *scope, const vg_slim_args *args);
/* slim.fully_connected: x [batch, in] (higher ranks: reshaped over the last dimension);
 * "<scope>/weights" [in, num_outputs], "<scope>/biases", ops "<scope>/MatMul",
 * "<scope>/BiasAdd", "<scope>/Relu". scope NULL: "fully_connected" made unique. */
VG_API vg_output vg_slim_fully_connected(vg_graph *g, vg_output x, int64_t num_outputs, const char *scope,
                                         const vg_slim_args *args);
/* slim.batch_norm over the last axis (NHWC): "<scope>/beta" (center), "<scope>/gamma"
 * (scale), "<scope>/moving_mean", "<scope>/moving_variance" (not trainable), all model
 * variables. Fused (rank 2 or 4; rank 2 is reshaped to [N, 1, 1, C]):
 * "<scope>/FusedBatchNormV3"; otherwise tf.nn.moments / batch_normalization. Training:
 * batch statistics, and assign_moving_average updates "<scope>/AssignMovingAvg" and
 * "AssignMovingAvg_1" added to updates_collections (or, with "", run before the output
 * is returned through an Identity); inference: the moving statistics, no updates. With
 * is_training_tensor both are built and Select picks the output at run time, and the
 * updates use decay 1 (no change) when it is false (TF uses tf.cond). scope NULL:
 * "BatchNorm" made unique. */
VG_API vg_output vg_slim_batch_norm(vg_graph *g, vg_output x, const char *scope, const vg_slim_args *args);
/* slim.max_pool2d / avg_pool2d(x, [kh, kw], stride [2], padding ["VALID"]): ops
 * "<scope>/MaxPool" / "<scope>/AvgPool" under the name scope scope (NULL: "MaxPool2D" /
 * "AvgPool2D", made unique). */
VG_API vg_output vg_slim_max_pool2d(vg_graph *g, vg_output x, int kh, int kw, const char *scope,
                                    const vg_slim_args *args);
VG_API vg_output vg_slim_avg_pool2d(vg_graph *g, vg_output x, int kh, int kw, const char *scope,
                                    const vg_slim_args *args);
/* slim.dropout(x, keep_prob [0.5], is_training [TRUE], seed): tf.layers' dropout with
 * rate 1 - keep_prob named scope (NULL: "Dropout"; the name scope made unique): ops
 * "<scope>/dropout/..." ending in "<scope>/dropout/mul_1"; not training: the Identity
 * "<scope>/Identity" of the input. (vigil passes a static is_training as a bool Const
 * "is_training" made in the current scope.) */
VG_API vg_output vg_slim_dropout(vg_graph *g, vg_output x, const char *scope, const vg_slim_args *args);
/* slim.flatten: [batch, ...] -> [batch, prod(...)] under the name scope scope (NULL:
 * "Flatten"), op "<scope>/flatten/Reshape". */
VG_API vg_output vg_slim_flatten(vg_graph *g, vg_output x, const char *scope);

/* A layer for repeat and stack: applies one layer to x with the given scope; arg is the
 * caller's (repeat: the same each time; stack: stack_args[i]). */
typedef vg_output (*vg_slim_layer_fn)(vg_graph *g, vg_output x, const char *scope, void *arg);

/* slim.repeat(x, repetitions, layer, scope): inside tf.variable_scope(scope, "Repeat"),
 * layer i (1-based) gets the scope "<scope>_<i>", where a NULL scope is layer_name (the
 * Python function's __name__: "convolution2d" for slim.conv2d, "fully_connected", ...;
 * NULL: "repeat"). So repeat(x, 3, conv2d, scope "conv1") makes "conv1/conv1_1/weights"
 * .. "conv1/conv1_3/weights"; without a scope "Repeat/convolution2d_3/Relu". Returns the
 * last output; {NULL, 0} with the graph's error (INVALID_ARGUMENT for repetitions < 0 or
 * a NULL layer, the layer's errors). */
VG_API vg_output vg_slim_repeat(vg_graph *g, vg_output x, int repetitions, vg_slim_layer_fn layer, void *arg,
                                const char *layer_name, const char *scope);
/* slim.stack(x, layer, stack_args, scope): as repeat with variable scope default "Stack"
 * (NULL layer_name: "stack"), layer i getting stack_args[i]. */
VG_API vg_output vg_slim_stack(vg_graph *g, vg_output x, vg_slim_layer_fn layer, void *const *stack_args, int n,
                               const char *layer_name, const char *scope);

/* ---- variables (contrib/framework/python/ops/variables.py) ---------------- */

/* slim.model_variable(name, shape, dtype, initializer, regularizer, trainable): a
 * tf.get_variable in the current variable scope, added to "model_variables" (once) as
 * well as to "variables". Fails as vg_get_variable_ex (var NULL, graph error). */
VG_API vg_variable vg_slim_model_variable(vg_graph *g, const char *name, const vg_get_variable_opts *opts);
/* slim.get_model_variables(scope) / get_variables(scope): the items of "model_variables"
 * / "variables" whose name starts with scope (NULL or "": all), in collection order.
 * Writes the first max to out (NULL with max 0: only counts) and returns how many match.
 * TF matches scope as a regular expression (re.match); vigil compares it literally. */
VG_API int vg_slim_get_model_variables(const vg_graph *g, const char *scope, vg_output *out, int max);
VG_API int vg_slim_get_variables(const vg_graph *g, const char *scope, vg_output *out, int max);
/* slim.get_variables_to_restore(include, exclude): the global variables under any of the
 * include scopes (NULL: all), in collection order per scope, without those under any
 * exclude scope (prefixes as get_variables). out/max/return as above. For
 * train_image_classifier.py's --checkpoint_exclude_scopes pass the split list. */
VG_API int vg_slim_get_variables_to_restore(const vg_graph *g, const char *const *include, int ninclude,
                                            const char *const *exclude, int nexclude, vg_output *out, int max);

/* slim.assign_from_checkpoint(model_path, var_list, ignore_missing_vars): reads the
 * checkpoint now and builds, per variable, a Placeholder "placeholder/<var name>" and an
 * Assign from it, grouped in the returned NoOp ("group_deps"); *feed_dict gets the
 * placeholders and the checkpoint values to feed when running it (TF's (assign_op,
 * feed_dict) pair). ckpt_names as below (NULL: the op names). Ownership: the caller
 * frees feed_dict with vg_slim_feed_dict_free. Fails (NULL, *st, feed_dict empty) with
 * INVALID_ARGUMENT "Checkpoint is missing variable [<name>]" (without
 * ignore_missing_vars; with it the variable is skipped with a WARNING), "Total size of
 * new array must be unchanged for <name> lh_shape: [..], rh_shape: [..]" (shapes
 * differ), a dtype mismatch, "var_list cannot be empty"; NOT_FOUND / DATA_LOSS reading
 * the checkpoint; the graph's errors. */
typedef struct vg_slim_feed_dict {
    vg_output *feeds;
    vg_tensor **values;
    int n;
} vg_slim_feed_dict;
VG_API vg_op *vg_slim_assign_from_checkpoint(vg_graph *g, const char *model_path, const vg_output *vars, int n,
                                             const char *const *ckpt_names, bool ignore_missing_vars,
                                             vg_slim_feed_dict *feed_dict, vg_status *st);
VG_API void vg_slim_feed_dict_free(vg_slim_feed_dict *feed_dict);

/* slim.assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars): builds,
 * now, a Saver (name scope "save", made unique) restoring var_list (ref outputs of
 * VariableV2 ops) from model_path, and returns a callback to run later - typically as
 * a Scaffold's init_fn (vg_scaffold_options.init_fn = r->fn, init_fn_payload = r, as
 * train_image_classifier.py's _get_init_fn). ckpt_names (NULL: each variable's op name)
 * gives the checkpoint key of each variable (TF's dict form). model_path is a checkpoint
 * prefix (vigil also takes a directory: its latest checkpoint, as the script does). With
 * ignore_missing_vars, variables whose key the checkpoint lacks are dropped with a
 * WARNING "Variable <name> missing in checkpoint <path>"; when none remain, returns NULL
 * with st OK (TF returns None, "No Variables to restore"). Without it, the callback
 * fails with NOT_FOUND "Key <name> not found in checkpoint" for a missing key.
 * Ownership: free with vg_slim_init_fn_free after the session that calls it (the ops
 * stay in the graph). Fails (NULL, *st) with INVALID_ARGUMENT ("var_list cannot be
 * empty", NULL path), NOT_FOUND / DATA_LOSS reading the checkpoint (ignore_missing_vars,
 * or a directory without a checkpoint), the saver's errors. */
typedef struct vg_slim_init_fn {
    vg_init_fn fn;      /* pass this and the struct itself as the payload */
    void *priv;
} vg_slim_init_fn;
VG_API vg_slim_init_fn *vg_slim_assign_from_checkpoint_fn(vg_graph *g, const char *model_path, const vg_output *vars,
                                                          int n, const char *const *ckpt_names,
                                                          bool ignore_missing_vars, vg_status *st);
/* Restores now: calls the callback on sess (what the scaffold does after its init_op). */
VG_API vg_code vg_slim_init_fn_run(vg_slim_init_fn *f, vg_session *sess, vg_status *st);
VG_API void vg_slim_init_fn_free(vg_slim_init_fn *f);

/* ---- learning (slim/python/slim/learning.py) ------------------------------ */

/* slim.learning.create_train_op(total_loss, optimizer, global_step, update_ops,
 * variables_to_train, clip_gradient_norm, check_numerics) is vg_create_train_op
 * (vigil/train_lib.h) with its vg_create_train_op_opts. */

/* Options of slim.learning.train; a zero-initialised struct (or NULL) is slim's defaults
 * (in brackets; docs/conventions.md, "Option structs"). slim's None for an interval is
 * its no_* flag; a negative interval is INVALID_ARGUMENT. */
typedef struct vg_slim_train_opts {
    int64_t number_of_steps;       /* [0: None, until a hook or the input stops] */
    int64_t log_every_n_steps;     /* [0: slim's 1]; no logging: no_logging */
    double save_summaries_secs;    /* [0: slim's 600]; none: no_summaries */
    double save_interval_secs;     /* [0: slim's 600] checkpoints; none: no_checkpoints */
    vg_init_fn init_fn;            /* [None]: after the init op, when nothing is restored */
    void *init_fn_payload;
    vg_scaffold *scaffold;         /* [NULL: a default one] borrowed; init_fn is ignored when set */
    const vg_hook *hooks;          /* extra hooks, owned by the call (also on failure) */
    int nhooks;
    const vg_config_proto *session_config; /* tf.ConfigProto (vigil/config.h); NULL: defaults */
    bool no_checkpoint_dir_lock;
    bool no_logging;               /* true: no loss log lines (slim: log_every_n_steps=None) */
    bool no_summaries;             /* true: no SummarySaverHook (save_summaries_secs=None) */
    bool no_checkpoints;           /* true: no checkpoints (save_interval_secs=None) */
} vg_slim_train_opts;

/* slim.learning.train(train_op, logdir, log_every_n_steps, number_of_steps, init_fn,
 * save_summaries_secs, save_interval_secs, session_config): TF builds a Supervisor;
 * vigil maps it onto tf.contrib.training.train (vg_training_train: a
 * MonitoredTrainingSession on logdir) as follows: number_of_steps -> StopAtStepHook(
 * last_step=number_of_steps) (slim's train_step stops once global_step >=
 * number_of_steps: the same step count); log_every_n_steps -> an INFO log "global step
 * N: loss = L (S sec/step)" after each step that leaves global_step a multiple of it, as
 * slim's train_step writes it; save_interval_secs ->
 * save_checkpoint_secs (the CheckpointSaverHook also saves at the end, as slim saves
 * "Finished training! Saving model to disk."); save_summaries_secs ->
 * save_summaries_secs; init_fn -> the Scaffold's init_fn, called only when no checkpoint
 * of logdir is restored (as the Supervisor). A rerun on the same logdir resumes from its
 * latest checkpoint. Differences: no Supervisor threads (the hooks run in the training
 * thread), no sync_optimizer / trace_every_n_steps / startup_delay_steps / train_step_fn.
 * logdir NULL trains without checkpoints or summaries, as slim. *loss (may be NULL) gets the
 * last loss (TF's return value). Fails as vg_training_train (INVALID_ARGUMENT for a
 * NULL graph or train_op or a negative interval, the runs' and the session's errors). */
VG_API vg_code vg_slim_learning_train(vg_graph *g, vg_output train_op, const char *logdir,
                                      const vg_slim_train_opts *opts, double *loss, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
