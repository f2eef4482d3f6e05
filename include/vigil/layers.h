/*
 * vigil/layers.h - tf.layers in C: dense, conv2d, max_pooling2d, flatten, with TF's
 * variable and op names ("dense/kernel", "dense/bias", "dense/MatMul",
 * "dense/BiasAdd", "dense/Relu"; a second layer is "dense_1/..."), kernels initialised
 * with glorot_uniform and biases with zeros, as tf.layers does.
 *
 *     vg_output h = vg_layers_dense(g, x, 256, VG_ACT_RELU, NULL);     // "dense"
 *     vg_output logits = vg_layers_dense(g, h, 10, VG_ACT_NONE, NULL);  // "dense_1"
 *
 * On failure the graph's sticky error is set and {NULL, 0} is returned. These four
 * shorthands are the functional form below (vg_layers_apply) with TF's defaults.
 */
#ifndef VIGIL_LAYERS_H
#define VIGIL_LAYERS_H

#include "variable_scope.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vg_activation {
    VG_ACT_NONE = 0,
    VG_ACT_RELU,
    VG_ACT_SIGMOID,
    VG_ACT_TANH,
    VG_ACT_RELU6,
    VG_ACT_ELU,
    VG_ACT_SELU,
    VG_ACT_SOFTPLUS,
    VG_ACT_SOFTSIGN,
    VG_ACT_LEAKY_RELU /* alpha 0.2, as tf.nn.leaky_relu */
} vg_activation;

/* tf.layers.dense(x, units, activation, name): x is [batch, in] with `in` known. */
VG_API vg_output vg_layers_dense(vg_graph *g, vg_output x, int64_t units, vg_activation act, const char *name);
/* tf.contrib.layers.fully_connected(inputs, num_outputs, activation_fn, scope) with the
 * default initializers (tf.contrib.layers.linear is act VG_ACT_NONE): variables
 * "<scope>/weights" [in, num_outputs] (glorot_uniform) and "<scope>/biases" (zeros),
 * also in the "model_variables" collection when new, under the variable scope scope
 * (NULL: "fully_connected", made unique); ops "<scope>/MatMul", "<scope>/BiasAdd" (inputs of
 * rank > 2 are reshaped to [-1, in] and back). Returns {NULL, 0} with the graph's error
 * INVALID_ARGUMENT for inputs of rank < 2 or of unknown depth, num_outputs <= 0. */
VG_API vg_output vg_fully_connected(vg_graph *g, vg_output x, int64_t num_outputs, vg_activation act,
                                    const char *scope);
/* tf.layers.conv2d(x, filters, kernel_size, strides, padding, activation): NHWC. */
VG_API vg_output vg_layers_conv2d(vg_graph *g, vg_output x, int64_t filters, int kh, int kw, int stride,
                                  const char *padding, vg_activation act, const char *name);
/* tf.layers.max_pooling2d(x, pool_size, strides, padding). */
VG_API vg_output vg_layers_max_pooling2d(vg_graph *g, vg_output x, int pool, int stride, const char *padding,
                                         const char *name);
/* tf.layers.flatten(x): [batch, ...] -> [batch, prod(...)] (the trailing dims must be known). */
VG_API vg_output vg_layers_flatten(vg_graph *g, vg_output x, const char *name);

/* ------------------------------------------------------------------------ */
/* The general form: one config for every tf.layers class (TF 1.15 keras-based tf.layers
 * semantics, names and defaults), a functional call (vg_layers_apply, as tf.layers.dense
 * ...) and the object form (vg_layer_new / vg_layer_apply, as tf.layers.Dense ...) whose
 * variables are exposed after the first call.
 *
 *     vg_layer_config c = {.kind = VG_LAYER_BATCH_NORMALIZATION};
 *     vg_output img = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 8, 8, 3}, 4, "img");
 *     vg_output is_training = vg_placeholder(g, VG_BOOL, NULL, 0, "is_training");
 *     vg_layer *bn = vg_layer_new(&c);
 *     vg_output h = vg_layer_apply(bn, g, img, is_training); // "batch_normalization/..."
 *     // bn->gamma, bn->beta (trainable), bn->moving_mean, bn->moving_variance (not);
 *     // the moving-average updates are in the UPDATE_OPS collection.
 *     vg_layer_free(bn);
 *     (void)h;
 *
 * Naming as tf.layers (docs/naming.md): a layer's variables live in a variable scope
 * named after the layer, nested in the current variable scope (an object without a
 * name, or the functional form without a name, gets the class's base name made unique:
 * "dense", "dense_1"; the functional form with a name, or any layer with reuse set,
 * uses the name (or the base name) as is, so a second call with the same name fails
 * unless reuse is set, and then shares the variables while its ops go to the name scope
 * "<name>_1"). An object called again reuses its variables and puts its ops in its
 * first name scope. Kernels default to the variable scope's initializer (TF's None),
 * else glorot_uniform; a kernel/bias/beta/gamma regularizer adds its loss under
 * "<layer>/<weight>/Regularizer/" when the variable is new, besides the scope's own
 * regularizer, which tf.get_variable applies. layer_norm's beta and gamma are also in
 * "model_variables", as tf.contrib's model variables.
 *
 * Errors (the graph's sticky error, {NULL, 0} returned): INVALID_ARGUMENT "Input 0 of
 * layer <name> is incompatible with the layer: expected ndim=4, found ndim=3. Full
 * shape received: [..]" for a wrong input rank; "The last dimension of the inputs to
 * `Dense` should be defined. Found `None`." (and the channel dimension for
 * convolutions); bad configs (units <= 0, rate outside [0, 1), unknown padding) name
 * the layer too, as does dilation_rate > 1 with strides > 1 ("strides > 1 not supported
 * in conjunction with dilation_rate > 1"); dilation_rate > 1 works for conv1d, conv2d and
 * separable_conv2d (TF's SpaceToBatchND / VALID op / BatchToSpaceND) and is
 * INVALID_ARGUMENT on conv2d_transpose (tf.layers.Conv2DTranspose has no such argument);
 * UNIMPLEMENTED with unknown spatial dimensions. */

typedef enum vg_layer_kind {
    VG_LAYER_DENSE,
    VG_LAYER_CONV1D,
    VG_LAYER_CONV2D,
    VG_LAYER_CONV2D_TRANSPOSE,
    VG_LAYER_MAX_POOLING1D,
    VG_LAYER_MAX_POOLING2D,
    VG_LAYER_AVERAGE_POOLING1D,
    VG_LAYER_AVERAGE_POOLING2D,
    VG_LAYER_FLATTEN,
    VG_LAYER_DROPOUT,
    VG_LAYER_BATCH_NORMALIZATION,
    VG_LAYER_LAYER_NORM, /* tf.contrib.layers.layer_norm (scope "LayerNorm") */
    VG_LAYER_SEPARABLE_CONV2D
} vg_layer_kind;

/* A zero-initialised config is TF 1.15's defaults for its kind (docs/conventions.md,
 * "Option structs"): set kind, units / kernel_size / ... with designated initialisers,
 *     vg_layer_config c = {.kind = VG_LAYER_CONV2D, .units = 32, .kernel_size = {3, 3}};
 * Each field's zero value is in brackets; TF's True defaults are no_* / not_* flags and
 * an explicit zero where zero stands for another default is a zero_* flag. The library
 * fills the defaults in once (vg_layer_new; the object's config copy holds them). */
typedef struct vg_layer_config {
    vg_layer_kind kind;          /* [DENSE] */
    const char *name;            /* [NULL: the base name made unique (see above)] */
    int64_t units;               /* dense units, convolution filters (required, > 0) */
    int kernel_size[2];          /* convolutions: [h, w] (conv1d: [w, -]) [0: 1] */
    int strides[2];              /* [0: 1 for convolutions; pooling: pool_size (Keras's
                                    strides=None)] */
    int dilation_rate[2];        /* [0: 1] */
    int pool_size[2];            /* pooling (pool1d: [w, -]) [0: 2] */
    const char *padding;         /* [NULL: "valid"] or "same", any case */
    vg_activation activation;    /* [none] */
    bool no_bias;                /* TF's use_bias=False [false: use_bias=True] */
    vg_initializer kernel_initializer; /* [{0}: TF's None, the variable scope's initializer,
                                          else glorot_uniform] (vg_init_default() too) */
    vg_initializer bias_initializer;   /* [{0}: zeros]; vg_init_default(): TF's None */
    vg_regularizer kernel_regularizer; /* [none] */
    vg_regularizer bias_regularizer;   /* [none] */
    bool not_trainable;          /* TF's trainable=False [false: trainable] */
    vg_reuse reuse;              /* functional form: tf.layers.dense(..., reuse=) [INHERIT] */
    /* dropout */
    double rate;                 /* [0: 0.5]; a rate of 0 (the identity): zero_rate */
    bool zero_rate;
    const int64_t *noise_shape;  /* [NULL: the input's shape]; -1 entries: the input's dim */
    int noise_ndims;
    int64_t seed;                /* op seed [0: none] */
    /* batch_normalization, layer_norm */
    int axis;                    /* [0: -1] (only the last axis is supported) */
    double momentum;             /* [0: 0.99]; a momentum of 0: zero_momentum */
    bool zero_momentum;
    double epsilon;              /* [0: 0.001; layer_norm: 1e-12, the variance_epsilon TF's
                                    contrib layer_norm fixes; another value is used as
                                    given]; an epsilon of 0: zero_epsilon */
    bool zero_epsilon;
    bool no_center, no_scale;    /* TF's center=False / scale=False [false: True] */
    vg_initializer beta_initializer, gamma_initializer;                    /* [{0}: zeros, ones] */
    vg_initializer moving_mean_initializer, moving_variance_initializer;  /* [{0}: zeros, ones] */
    vg_regularizer beta_regularizer, gamma_regularizer;
    int begin_norm_axis, begin_params_axis; /* layer_norm [0: 1, -1]; an axis of 0:
                                               zero_begin_norm_axis / zero_begin_params_axis */
    bool zero_begin_norm_axis, zero_begin_params_axis;
    int depth_multiplier;        /* separable_conv2d [0: 1] (its depthwise and pointwise
                                    kernels use kernel_initializer / kernel_regularizer) */
} vg_layer_config;

#define VG_LAYER_NAME_MAX 512

/* A layer object. Its variables are set by the first vg_layer_apply. Fields other
 * than those documented are private. */
typedef struct vg_layer {
    vg_layer_config config;      /* copy with TF's defaults filled in (strides, rate,
                                    initializers, ...); config.name points to name_given */
    char name_given[VG_LAYER_NAME_MAX];
    char name[VG_LAYER_NAME_MAX];        /* variable scope ("dense_1"), once built */
    char name_scope[VG_LAYER_NAME_MAX];  /* first name scope ("dense_1/"), once built */
    bool built;
    bool functional;
    vg_variable kernel, bias;            /* dense, convolutions (separable: kernel = depthwise_kernel) */
    vg_variable depthwise_kernel, pointwise_kernel; /* separable_conv2d */
    vg_variable gamma, beta, moving_mean, moving_variance; /* normalization */
    vg_variable trainable_weights[4];   /* in creation order */
    int num_trainable_weights;
    vg_variable non_trainable_weights[4];
    int num_non_trainable_weights;
    vg_op *updates[2];                   /* the last call's UPDATE_OPS entries */
    int num_updates;
    int64_t built_dims[VG_MAX_DIMS];     /* input shape at build */
    int built_ndims;
    vg_vscope *scope;                    /* the captured variable scope (owned by the graph) */
    vg_graph *scope_graph;               /* the graph it was captured in */
    uint64_t scope_serial;               /* and that graph's scope store */
} vg_layer;

/* A new layer object from a config (copied). Ownership: the caller frees it with
 * vg_layer_free (the graph keeps the ops and variables). NULL when out of memory. */
VG_API vg_layer *vg_layer_new(const vg_layer_config *config);
VG_API void vg_layer_free(vg_layer *l);
/* layer(x, training=...): builds the variables on the first call, then the ops.
 * training: {NULL, 0} = False; a bool scalar tensor (a Const is read at build time, as
 * TF's smart_cond does; otherwise both branches are built and Select picks one). Used
 * by dropout and batch_normalization, ignored by the others. A second call with an
 * input whose last dimension differs from the first is INVALID_ARGUMENT. */
VG_API vg_output vg_layer_apply(vg_layer *l, vg_graph *g, vg_output x, vg_output training);
/* The functional form (tf.layers.dense(...), tf.layers.dropout(...), ...). */
VG_API vg_output vg_layers_apply(vg_graph *g, const vg_layer_config *config, vg_output x, vg_output training);

/* Shorthands of the functional form with TF's defaults for the rest. */
VG_API vg_output vg_layers_dropout(vg_graph *g, vg_output x, double rate, vg_output training, int64_t seed,
                                   const char *name);
VG_API vg_output vg_layers_batch_normalization(vg_graph *g, vg_output x, vg_output training, double momentum,
                                               double epsilon, const char *name);
VG_API vg_output vg_layers_average_pooling2d(vg_graph *g, vg_output x, int pool, int stride, const char *padding,
                                             const char *name);
VG_API vg_output vg_layer_norm(vg_graph *g, vg_output x, const char *scope);

/* tf.nn.moments(x, axes, keep_dims, name): mean and (biased) variance over axes, as TF
 * builds them under "moments/" ("mean", "StopGradient", "SquaredDifference",
 * "variance", and "Squeeze"/"Squeeze_1" without keep_dims). Returns the graph's status;
 * INVALID_ARGUMENT for an axis out of range. */
VG_API vg_code vg_nn_moments(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name,
                             vg_output *mean, vg_output *variance);
/* tf.nn.batch_normalization(x, mean, variance, offset, scale, variance_epsilon): x *
 * inv + (offset - mean * inv) with inv = rsqrt(variance + eps) * scale, under
 * "batchnorm/"; offset and scale may be {NULL, 0} (TF's None). */
VG_API vg_output vg_nn_batch_normalization(vg_graph *g, vg_output x, vg_output mean, vg_output variance,
                                           vg_output offset, vg_output scale, double variance_epsilon, const char *name);

/* tf.nn.zero_fraction(value): the fraction of zeros, float32 scalar, built as TF does:
 * name scope "zero_fraction" (NULL name), Const "zero", Equal, Cast, Mean. */
VG_API vg_output vg_zero_fraction(vg_graph *g, vg_output value, const char *name);

#ifdef __cplusplus
}
#endif
#endif
