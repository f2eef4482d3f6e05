/*
 * vigil/variables.h - TF1 variables (tf.Variable / tf.get_variable), initializers,
 * the global step and the init ops.
 *
 *     vg_variable w = vg_get_variable(g, "dense/kernel", VG_FLOAT, (int64_t[]){784, 256}, 2,
 *                                     vg_init_glorot_uniform(0), VG_VAR_TRAINABLE);
 *     vg_output h = vg_matmul(g, x, w.read, false, false, NULL);
 *     vg_op *init = vg_global_variables_initializer(g);
 *
 * A variable is the ops TF creates: "<name>" (VariableV2), "<name>/Assign" (its
 * initializer, assigning the initial value), "<name>/read" (Identity snapshot).
 * Global variables are added to the "variables" collection (local ones to
 * "local_variables"), trainable ones also to "trainable_variables".
 */
#ifndef VIGIL_VARIABLES_H
#define VIGIL_VARIABLES_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    VG_VAR_TRAINABLE = 1, /* add to trainable_variables */
    VG_VAR_LOCAL = 2      /* local_variables instead of (global) variables */
};

typedef struct vg_variable {
    vg_op *var;          /* VariableV2 op "<name>" (NULL on failure) */
    vg_output ref;       /* {var, 0}: pass to Assign/Apply ops, to vg_gradients, to savers */
    vg_output read;      /* "<name>/read" Identity: use it to compute with the value */
    vg_op *initializer;  /* "<name>/Assign" */
} vg_variable;

/* tf.Variable(initial_value, name): the variable takes initial_value's dtype and shape
 * (which must be fully defined). name is relative to the current name scope and made
 * unique ("v", "v_1", ...; NULL = "Variable"). Like TF's init_scope, the variable's ops
 * get no control dependencies from vg_graph_push_control_deps scopes. Reads of other
 * variables inside initial_value are guarded as TF's
 * _try_guard_against_uninitialized_dependencies does: while such a variable is
 * uninitialized its initial value is used (op "<name>/InitializedValueOr"; the ops in
 * between are copied as "<op>_<name>"), so the initializers may run in any order.
 * Fails (var == NULL, graph error recorded) with INVALID_ARGUMENT, RESOURCE_EXHAUSTED. */
VG_API vg_variable vg_variable_new(vg_graph *g, const char *name, vg_output initial_value, unsigned flags);

typedef enum vg_init_kind {
    /* 0, a zero-initialised vg_initializer: none given, the taker's own default (a
     * vg_layer_config field: TF's default for that field, e.g. zeros for a bias; anywhere
     * else, tf.get_variable / vg_initializer_build included: as VG_INIT_DEFAULT, TF's
     * initializer=None). In-memory only: no kind is ever serialized. */
    VG_INIT_UNSET = 0,
    VG_INIT_ZEROS,
    VG_INIT_ONES,
    VG_INIT_CONSTANT,          /* value */
    VG_INIT_RANDOM_UNIFORM,    /* minval, maxval, seed */
    VG_INIT_RANDOM_NORMAL,     /* mean, stddev, seed */
    VG_INIT_TRUNCATED_NORMAL,  /* mean, stddev, seed */
    VG_INIT_GLOROT_UNIFORM,    /* seed; limit sqrt(6/(fan_in+fan_out)) as TF computes fans */
    VG_INIT_UNIFORM_UNIT_SCALING, /* value = factor, seed; see vg_init_uniform_unit_scaling */
    VG_INIT_CONSTANT_ARRAY,       /* array; see vg_init_constant_array */
    VG_INIT_DEFAULT,              /* TF's initializer=None: see vg_init_default */
    VG_INIT_VARIANCE_SCALING      /* value = factor, minval = mode, maxval = uniform, seed;
                                     see vg_init_variance_scaling */
} vg_init_kind;

/* The value of tf.constant_initializer(list / array): values[0..n) row-major, of shape
 * value_dims (NULL: a flat list [n]), and Constant's verify_shape. */
typedef struct vg_constant_array {
    const double *values;
    int64_t n;
    const int64_t *value_dims;
    int value_ndims;
    bool verify_shape;
} vg_constant_array;

typedef struct vg_initializer {
    vg_init_kind kind;
    double value, minval, maxval, mean, stddev;
    int64_t seed; /* op seed; 0 = none (the graph seed still makes it deterministic) */
    const vg_constant_array *array; /* VG_INIT_CONSTANT_ARRAY (borrowed) */
} vg_initializer;

VG_API vg_initializer vg_init_zeros(void);
VG_API vg_initializer vg_init_ones(void);
VG_API vg_initializer vg_init_constant(double value);
VG_API vg_initializer vg_init_random_uniform(double minval, double maxval, int64_t seed);
VG_API vg_initializer vg_init_random_normal(double mean, double stddev, int64_t seed);
VG_API vg_initializer vg_init_truncated_normal(double mean, double stddev, int64_t seed);
VG_API vg_initializer vg_init_glorot_uniform(int64_t seed);
/* tf.uniform_unit_scaling_initializer(factor, seed) (TF 1.15 init_ops.UniformUnitScaling):
 * uniform in [-m, m] with m = sqrt(3 / input_size) * factor, input_size the product of
 * every dimension but the last (at least 1.0); built as "random_uniform" like
 * vg_init_random_uniform. TF's default factor is 1.0. */
VG_API vg_initializer vg_init_uniform_unit_scaling(double factor, int64_t seed);
/* tf.contrib.layers.variance_scaling_initializer(factor, mode, uniform, seed) (slim's
 * variance_scaling_initializer; TF 1.15 contrib/layers/python/layers/initializers.py):
 * n = fan_in (mode VG_FAN_IN), fan_out (VG_FAN_OUT) or their mean (VG_FAN_AVG), the fans
 * of the variable's shape as TF computes them (a conv kernel [..., in, out] times its
 * receptive field); uniform: U[-sqrt(3 factor / n), +sqrt(3 factor / n)], else a
 * truncated normal of stddev sqrt(1.3 factor / n). TF's defaults: factor 2.0, VG_FAN_IN,
 * uniform false (He initialisation). Random: float and double variables only. */
typedef enum vg_fan_mode { VG_FAN_IN = 0, VG_FAN_OUT = 1, VG_FAN_AVG = 2 } vg_fan_mode;
VG_API vg_initializer vg_init_variance_scaling(double factor, vg_fan_mode mode, bool uniform, int64_t seed);
/* tf.constant_initializer(value) for a list or array value (TF 1.15 init_ops.Constant):
 * builds vg_const_values(dtype, values, shape, verify_shape) as a "Const" (vigil/ops.h):
 * fewer values than the variable's elements: the last value fills the rest; more:
 * INVALID_ARGUMENT "Too many elements provided. Needed at most S, but received n"
 * (TF's ValueError); verify_shape and another shape: INVALID_ARGUMENT "Expected Tensor's
 * shape: (2, 3), got (6,)." (TF's TypeError); errors go to the graph's status when the
 * variable is built. Any numeric dtype (TF's Constant takes ints too). a and its arrays
 * are borrowed: keep them alive as long as the initializer may be built (variables are
 * built by vg_get_variable* / layers when called, not later).
 *
 *     static const double v[6] = {0, 1, 2, 3, 4, 5};
 *     vg_constant_array a = {v, 6, NULL, 0, false};
 *     vg_variable x = vg_get_variable(g, "x", VG_INT32, (int64_t[]){2, 4}, 2,
 *                                     vg_init_constant_array(&a), 0);
 *     // x = [[0, 1, 2, 3], [4, 5, 5, 5]]
 */
VG_API vg_initializer vg_init_constant_array(const vg_constant_array *a);
/* TF's initializer=None: tf.get_variable (and the layers and RNN cells, whose default
 * kernel initializers are None in TF) then uses the variable scope's initializer, else
 * glorot_uniform for floating dtypes and zeros for integers and bool. Built directly
 * (vg_initializer_build), it is that fallback. */
VG_API vg_initializer vg_init_default(void);

/* Builds the initial-value ops of an initializer for a given shape under the current
 * scope, named as init_ops.py builds them (TF puts them under "<var>/Initializer/"):
 * "zeros"/"ones" (a Const, or Fill of "shape_as_tensor" and "Const" from 1000
 * elements on), "Const", "random_uniform" (Add of "random_uniform/{shape,min,max,
 * RandomUniform,sub,mul}"), "random_normal", "truncated_normal". Random ops get their
 * seeds from vg_graph_get_seed(init.seed). Random initializers need float/double.
 * Fails (graph error) with INVALID_ARGUMENT (shape not fully defined, dtype). */
VG_API vg_output vg_initializer_build(vg_graph *g, vg_initializer init, vg_dtype dt, const int64_t *dims, int ndims);

/* tf.get_variable(name, shape, dtype, initializer): the full name is the current
 * variable scope (vigil/variable_scope.h) + "/" + name; name scopes play no part, as in
 * TF. init vg_init_default() takes the variable scope's initializer (TF's None).
 * Initial value ops are created under "<name>/Initializer/". Sharing
 * follows the variable scope's reuse: without reuse a name already made by
 * get_variable fails (sticky) with INVALID_ARGUMENT ("Variable <name> already exists,
 * disallowed. ..."); see vg_get_variable_ex for the other rules and errors. No control
 * dependencies are inherited (init_scope). */
VG_API vg_variable vg_get_variable(vg_graph *g, const char *name, vg_dtype dt, const int64_t *dims, int ndims, vg_initializer init, unsigned flags);

/* vg_variable_initializer, vg_variable_snapshot and vg_variable_set_parts (a VariableV2
 * op's initializer and snapshot) are declared in vigil/graph.h: the graph keeps them. */

/* tf.train.get_or_create_global_step: the existing global step (collection, else a
 * VariableV2 named "global_step"), or tf.get_variable("global_step", [], int64, zeros,
 * trainable=False) in the current variable scope (as TF: "global_step" at the top,
 * "<scope>/global_step" inside a variable scope), in the variables and global_step
 * collections. Returns its ref output; {NULL, 0} on failure (graph error: get_variable's). */
VG_API vg_output vg_get_or_create_global_step(vg_graph *g);
/* The global step's ref output, or {NULL,0} if the graph has none. */
VG_API vg_output vg_get_global_step(const vg_graph *g);

/* tf.global_variables_initializer(): NoOp "init" grouping every global variable's
 * initializer. */
VG_API vg_op *vg_global_variables_initializer(vg_graph *g);
/* tf.local_variables_initializer(): NoOp named "init" made unique ("init_1" after the
 * global one) grouping the local initializers. */
VG_API vg_op *vg_local_variables_initializer(vg_graph *g);
/* tf.variables_initializer(var_list). */
VG_API vg_op *vg_variables_initializer(vg_graph *g, const vg_output *vars, int n, const char *name);
/* tf.report_uninitialized_variables(var_list): 1-D string tensor of the names of the
 * uninitialized variables (all global + local ones when vars == NULL), built as TF does
 * under "report_uninitialized_variables/": IsVariableInitialized per variable, Pack
 * "stack", "LogicalNot", Const of the names, "boolean_mask". */
VG_API vg_output vg_report_uninitialized_variables(vg_graph *g, const vg_output *vars, int n, const char *name);

#ifdef __cplusplus
}
#endif
#endif
