/*
 * variables.c - TF1 variables laid out as TensorFlow lays them out: tf.Variable and
 * tf.get_variable ("<name>" VariableV2, "<name>/Initializer/..." initial value,
 * "<name>/Assign", "<name>/read"), the initializers of init_ops.py, the global step,
 * the init ops and report_uninitialized_variables.
 *
 * Naming: TF names the VariableV2 op after its name scope ("w/" -> op "w") and puts
 * the other ops inside it. Here the full name is reserved by creating the VariableV2
 * with it, and the ops inside are built under the verbatim scope "<name>/" (which
 * reserves nothing), so the unique-name bookkeeping matches TF's.
 *
 * Variables are created as under TF's init_scope: outside any control-dependency
 * scope of the caller (an optimizer built under control_dependencies(update_ops)
 * must not make its slot initializers depend on those ops).
 */
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/resource_variables.h"
#include "vigil/variable_scope.h"
#include "vigil/variables.h"
#include <math.h>
#include <stdio.h>

#define NAME_MAX_LEN 1024

/* ------------------------------------------------------------------------ */
/* initializers */

vg_initializer vg_init_zeros(void) {
    vg_initializer i = {VG_INIT_ZEROS, 0, 0, 0, 0, 0, 0, NULL};
    return i;
}
vg_initializer vg_init_ones(void) {
    vg_initializer i = {VG_INIT_ONES, 1, 0, 0, 0, 0, 0, NULL};
    return i;
}
vg_initializer vg_init_constant(double value) {
    vg_initializer i = {VG_INIT_CONSTANT, value, 0, 0, 0, 0, 0, NULL};
    return i;
}
vg_initializer vg_init_random_uniform(double minval, double maxval, int64_t seed) {
    vg_initializer i = {VG_INIT_RANDOM_UNIFORM, 0, minval, maxval, 0, 0, seed, NULL};
    return i;
}
vg_initializer vg_init_random_normal(double mean, double stddev, int64_t seed) {
    vg_initializer i = {VG_INIT_RANDOM_NORMAL, 0, 0, 0, mean, stddev, seed, NULL};
    return i;
}
vg_initializer vg_init_truncated_normal(double mean, double stddev, int64_t seed) {
    vg_initializer i = {VG_INIT_TRUNCATED_NORMAL, 0, 0, 0, mean, stddev, seed, NULL};
    return i;
}
vg_initializer vg_init_glorot_uniform(int64_t seed) {
    vg_initializer i = {VG_INIT_GLOROT_UNIFORM, 0, 0, 0, 0, 0, seed, NULL};
    return i;
}

vg_initializer vg_init_uniform_unit_scaling(double factor, int64_t seed) {
    vg_initializer i = {VG_INIT_UNIFORM_UNIT_SCALING, factor, 0, 0, 0, 0, seed, NULL};
    return i;
}

vg_initializer vg_init_variance_scaling(double factor, vg_fan_mode mode, bool uniform, int64_t seed) {
    vg_initializer i = {VG_INIT_VARIANCE_SCALING, factor, (double)mode, uniform ? 1.0 : 0.0, 0, 0, seed, NULL};
    return i;
}

vg_initializer vg_init_constant_array(const vg_constant_array *a) {
    vg_initializer i = {VG_INIT_CONSTANT_ARRAY, 0, 0, 0, 0, 0, 0, a};
    return i;
}

vg_initializer vg_init_default(void) {
    vg_initializer i = {VG_INIT_DEFAULT, 0, 0, 0, 0, 0, 0, NULL};
    return i;
}

/* init_ops._compute_fans: rank 0 -> 1,1; rank 1 -> n,n; rank 2 -> in,out; conv
 * kernels [..., in, out] multiply by the receptive field size. */
static void compute_fans(const int64_t *dims, int ndims, double *fan_in, double *fan_out) {
    if (ndims < 1) {
        *fan_in = *fan_out = 1;
    } else if (ndims == 1) {
        *fan_in = *fan_out = (double)dims[0];
    } else if (ndims == 2) {
        *fan_in = (double)dims[0];
        *fan_out = (double)dims[1];
    } else {
        double rf = 1;
        for (int i = 0; i < ndims - 2; i++) rf *= (double)dims[i];
        *fan_in = (double)dims[ndims - 2] * rf;
        *fan_out = (double)dims[ndims - 1] * rf;
    }
}

/* tensor_util.shape_tensor: the int32 Const "shape". */
static vg_output shape_const(vg_graph *g, const int64_t *dims, int ndims) {
    int32_t v[VG_MAX_DIMS];
    int64_t n = ndims;
    for (int i = 0; i < ndims && i < VG_MAX_DIMS; i++) v[i] = (int32_t)dims[i];
    return vg_const_array(g, VG_INT32, &n, 1, v, "shape");
}

/* array_ops.zeros / ones: a Const below 1000 elements, else Fill(shape_as_tensor, Const). */
static vg_output fill_value(vg_graph *g, const char *base, double value, vg_dtype dt, const int64_t *dims,
                            int ndims) {
    int64_t n = 1;
    for (int i = 0; i < ndims; i++) n *= dims[i];
    bool empty_strings = dt == VG_STRING && value == 0; /* array_ops.zeros: "" for strings */
    if (n < 1000 && empty_strings) {
        vg_status st;
        vg_tensor *t = vg_tensor_new_zeros(VG_STRING, dims, ndims, &st);
        if (!t) {
            vg_graph_set_error(g, st.code, "%s", st.msg);
            return vg_out(NULL, 0);
        }
        vg_output c = vg_const(g, t, base);
        vg_tensor_free(t);
        return c;
    }
    if (n < 1000) return vg_const_fill(g, dt, dims, ndims, value, base);
    char full[NAME_MAX_LEN];
    vg_graph_unique_name(g, base, full, sizeof full);
    vg__train_push_verbatim(g, full);
    int32_t v[VG_MAX_DIMS];
    int64_t nd = ndims;
    for (int i = 0; i < ndims && i < VG_MAX_DIMS; i++) v[i] = (int32_t)dims[i];
    vg_output shape = vg_const_array(g, VG_INT32, &nd, 1, v, "shape_as_tensor");
    vg_output c = empty_strings ? vg_const_string(g, "", "Const") : vg_const_fill(g, dt, NULL, 0, value, "Const");
    vg_graph_pop_scope(g);
    return vg_fill(g, shape, c, base);
}

typedef enum rnd_kind { RND_UNIFORM, RND_NORMAL, RND_TRUNCATED } rnd_kind;

/* random_ops.random_uniform / random_normal / truncated_normal as TF builds them:
 * "<base>/shape", "<base>/min|mean", "<base>/max|stddev", the raw op, "<base>/sub",
 * "<base>/mul" and the final Add named "<base>". a, b: (min, max) or (mean, stddev). */
static vg_output random_value(vg_graph *g, rnd_kind kind, double a, double b, int64_t op_seed, vg_dtype dt,
                              const int64_t *dims, int ndims) {
    static const char *bases[] = {"random_uniform", "random_normal", "truncated_normal"};
    static const char *raw[] = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"};
    const char *base = bases[kind];
    char full[NAME_MAX_LEN];
    int64_t seed, seed2;
    vg_graph_unique_name(g, base, full, sizeof full);
    vg__train_push_verbatim(g, full);
    vg_output shape = shape_const(g, dims, ndims);
    vg_output ca = vg_const_fill(g, dt, NULL, 0, a, kind == RND_UNIFORM ? "min" : "mean");
    vg_output cb = vg_const_fill(g, dt, NULL, 0, b, kind == RND_UNIFORM ? "max" : "stddev");
    vg_graph_get_seed(g, op_seed, &seed, &seed2);
    vg_output r, mul;
    if (kind == RND_UNIFORM) {
        r = vg_random_uniform(g, shape, dt, seed, seed2, raw[kind]);
        vg_output range = vg_sub(g, cb, ca, "sub");
        mul = vg_mul(g, r, range, "mul");
    } else {
        r = kind == RND_NORMAL ? vg_random_standard_normal(g, shape, dt, seed, seed2, raw[kind])
                               : vg_truncated_normal(g, shape, dt, seed, seed2, raw[kind]);
        mul = vg_mul(g, r, cb, "mul");
    }
    vg_graph_pop_scope(g);
    return vg_add_legacy(g, mul, ca, base);
}

vg_output vg_initializer_build(vg_graph *g, vg_initializer init, vg_dtype dt, const int64_t *dims, int ndims) {
    vg_output none = {NULL, 0};
    if (!g) return none;
    if (ndims < 0 || ndims > VG_MAX_DIMS) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "initializer needs a fully defined shape (rank %d)", ndims);
        return none;
    }
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "initializer needs a fully defined shape (dim %d is %lld)",
                               i, (long long)dims[i]);
            return none;
        }
    }
    if (dt == VG_HALF || dt == VG_BFLOAT16) /* the float32 initial value, then a Cast (vigil computes in float32) */
        return vg_cast(g, vg_initializer_build(g, init, VG_FLOAT, dims, ndims), dt, "Cast");
    bool is_float = dt == VG_FLOAT || dt == VG_DOUBLE;
    if (vg__init_is_none(init)) init = is_float ? vg_init_glorot_uniform(0) : vg_init_zeros();
    if (!is_float && init.kind != VG_INIT_ZEROS && init.kind != VG_INIT_ONES && init.kind != VG_INIT_CONSTANT &&
        init.kind != VG_INIT_CONSTANT_ARRAY) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random initializers need a floating point dtype, not %s",
                           vg_dtype_name(dt));
        return none;
    }
    switch (init.kind) {
    case VG_INIT_ZEROS: return fill_value(g, "zeros", 0, dt, dims, ndims);
    case VG_INIT_ONES: return fill_value(g, "ones", 1, dt, dims, ndims);
    case VG_INIT_CONSTANT: return vg_const_fill(g, dt, dims, ndims, init.value, "Const");
    case VG_INIT_CONSTANT_ARRAY:
        if (!init.array) break;
        return vg_const_values(g, dt, init.array->values, init.array->n, init.array->value_dims,
                               init.array->value_ndims, dims, ndims, init.array->verify_shape, "Const");
    case VG_INIT_RANDOM_UNIFORM:
        return random_value(g, RND_UNIFORM, init.minval, init.maxval, init.seed, dt, dims, ndims);
    case VG_INIT_RANDOM_NORMAL:
        return random_value(g, RND_NORMAL, init.mean, init.stddev, init.seed, dt, dims, ndims);
    case VG_INIT_TRUNCATED_NORMAL:
        return random_value(g, RND_TRUNCATED, init.mean, init.stddev, init.seed, dt, dims, ndims);
    case VG_INIT_GLOROT_UNIFORM: {
        /* VarianceScaling(scale=1, mode="fan_avg", distribution="uniform") */
        double fan_in, fan_out;
        compute_fans(dims, ndims, &fan_in, &fan_out);
        double scale = 1.0 / fmax(1.0, (fan_in + fan_out) / 2.0);
        double limit = sqrt(3.0 * scale);
        return random_value(g, RND_UNIFORM, -limit, limit, init.seed, dt, dims, ndims);
    }
    case VG_INIT_UNSET:
    case VG_INIT_DEFAULT: break; /* resolved above */
    case VG_INIT_VARIANCE_SCALING: {
        /* contrib initializers.variance_scaling_initializer's _initializer */
        double fan_in, fan_out;
        compute_fans(dims, ndims, &fan_in, &fan_out);
        double n = init.minval == (double)VG_FAN_OUT ? fan_out
                   : init.minval == (double)VG_FAN_AVG ? (fan_in + fan_out) / 2.0
                                                        : fan_in;
        if (init.maxval != 0) {
            double limit = sqrt(3.0 * init.value / n);
            return random_value(g, RND_UNIFORM, -limit, limit, init.seed, dt, dims, ndims);
        }
        return random_value(g, RND_TRUNCATED, 0.0, sqrt(1.3 * init.value / n), init.seed, dt, dims, ndims);
    }
    case VG_INIT_UNIFORM_UNIT_SCALING: {
        /* UniformUnitScaling.__call__: input_size = prod(shape[:-1]), at least 1.0 */
        double input_size = 1.0;
        for (int i = 0; i + 1 < ndims; i++) input_size *= (double)dims[i];
        input_size = fmax(input_size, 1.0);
        double max_val = sqrt(3.0 / input_size) * init.value;
        return random_value(g, RND_UNIFORM, -max_val, max_val, init.seed, dt, dims, ndims);
    }
    }
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "unknown initializer kind %d", (int)init.kind);
    return none;
}

/* ------------------------------------------------------------------------ */
/* variables */

typedef vg__train_var_spec var_spec; /* variable_internal.h */

static void add_collections(vg_graph *g, vg_op *var, unsigned flags) {
    vg_output item = {var, 0};
    vg_graph_add_to_collection(g, (flags & VG_VAR_LOCAL) ? VG_LOCAL_VARIABLES : VG_GLOBAL_VARIABLES, item);
    if (flags & VG_VAR_TRAINABLE) vg_graph_add_to_collection(g, VG_TRAINABLE_VARIABLES, item);
}

/* TF's _try_guard_against_uninitialized_dependencies (variables.py): every read of
 * another variable v inside an initial value becomes "v's value if v is initialized,
 * else v's initial value" (TF: v.initialized_value(), a cond; vigil: one
 * InitializedValueOr op), so initializers run in any order and in a session where v is
 * not initialized yet (ready_op then reports v instead of the initializer failing).
 * The ops between the reads and the initial value are copied with the guarded inputs
 * ("<op>_<variable name>", as TF's _safe_initial_value_from_op); ops that write or test
 * variables are left alone, as are their consumers. Built on the public graph API. */

#define GUARD_MAX_OPS 4096

typedef struct guard_ctx {
    vg_graph *g;
    const char *var_name;
    vg_op **from, **to; /* op_cache */
    int n, cap;
    bool failed;
} guard_ctx;

static vg_op *guard_cached(guard_ctx *c, vg_op *op) {
    for (int i = 0; i < c->n; i++)
        if (c->from[i] == op) return c->to[i];
    return NULL;
}

static vg_op *guard_remember(guard_ctx *c, vg_op *op, vg_op *to) {
    int cap_from = c->cap, cap_to = c->cap;
    if (!vg__train_grow((void **)&c->from, &cap_from, c->n + 1, sizeof(vg_op *)) ||
        !vg__train_grow((void **)&c->to, &cap_to, c->n + 1, sizeof(vg_op *))) {
        c->failed = true;
        return to;
    }
    c->cap = cap_from < cap_to ? cap_from : cap_to;
    c->from[c->n] = op;
    c->to[c->n++] = to;
    return to;
}

/* Ops that take a variable as a ref input (write or test it): never copied. */
static bool takes_ref(const char *type) {
    return !strcmp(type, "Assign") || !strcmp(type, "AssignAdd") || !strcmp(type, "AssignSub") ||
           !strcmp(type, "IsVariableInitialized") || !strcmp(type, "InitializedValueOr") ||
           !strncmp(type, "Apply", 5) || !strncmp(type, "Scatter", 7) || !strncmp(type, "ResourceApply", 13);
}


static vg_op *guard_op(guard_ctx *c, vg_op *op, int depth) {
    vg_op *hit = guard_cached(c, op);
    if (hit || c->failed) return hit ? hit : op;
    if (depth > GUARD_MAX_OPS || c->n >= GUARD_MAX_OPS) return op; /* best effort, as TF */
    const char *type = vg_op_type(op);
    if (!strcmp(type, "VariableV2") || !strcmp(type, "Variable")) { /* v.initialized_value() */
        vg_op *init = vg_variable_initializer(op);
        if (!init || vg_op_num_inputs(init) < 2) return guard_remember(c, op, op);
        char name[NAME_MAX_LEN + 32];
        snprintf(name, sizeof name, "%s/InitializedValueOr", c->var_name);
        vg_op_builder *b = vg_op_builder_new(c->g, "InitializedValueOr", name);
        vg_op_builder_add_input(b, vg_out(op, 0));
        vg_op_builder_add_input(b, vg_op_input(init, 1));
        vg_op *r = vg_op_builder_finish(b);
        return guard_remember(c, op, r ? r : op);
    }
    int nin = vg_op_num_inputs(op);
    if (takes_ref(type) || nin > 64) return guard_remember(c, op, op);
    bool modified = false;
    vg_output ins[64];
    for (int i = 0; i < nin; i++) {
        vg_output in = vg_op_input(op, i);
        vg_op *r = in.op ? guard_op(c, in.op, depth + 1) : NULL;
        ins[i] = r ? vg_out(r, in.index) : in;
        modified = modified || (r && r != in.op);
    }
    if (!modified) return guard_remember(c, op, op);
    char name[2 * NAME_MAX_LEN + 2];
    snprintf(name, sizeof name, "%s_%s", vg_op_name(op), c->var_name);
    vg_op_builder *b = vg_op_builder_new(c->g, type, name);
    vg_op_builder_add_inputs(b, ins, nin);
    vg_op_builder_copy_attrs(b, op);
    vg_op *r = vg_op_builder_finish(b);
    return guard_remember(c, op, r ? r : op);
}

vg_output vg__train_guard_initial_value(vg_graph *g, const char *var_name, vg_output initial) {
    if (!initial.op) return initial;
    guard_ctx c = {g, var_name, NULL, NULL, 0, 0, false};
    vg_op *r = guard_op(&c, initial.op, 0);
    vg_free(c.from);
    vg_free(c.to);
    return r ? vg_out(r, initial.index) : initial;
}

vg_output vg__train_initializer_value(vg_graph *g, const char *full, vg_initializer init, vg_dtype dt,
                                      const int64_t *dims, int ndims) {
    vg__train_push_verbatim(g, full);
    vg_graph_push_scope(g, "Initializer");
    vg_output initial = vg_initializer_build(g, init, dt, dims, ndims);
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    return initial;
}

bool vg__train_check_initial_value(vg_graph *g, const char *what, const char *name, vg_output initial,
                                   vg_shape *s) {
    if (!g) return false;
    if (!initial.op) {
        if (vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s %s: invalid initial value", what, name ? name : "");
        return false;
    }
    *s = vg_output_shape(initial);
    if (!vg_shape_is_fully_defined(s)) {
        char buf[128];
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "initial_value must have a shape specified: %s (variable %s)",
                           vg_shape_str(s, buf, sizeof buf), name ? name : "Variable");
        return false;
    }
    return true;
}

/* Builds the variable named `full` (absolute). Call with the root scope pushed and
 * the control dependencies set aside. */
static vg_variable build_variable(vg_graph *g, const char *full, const var_spec *sp) {
    vg_variable v;
    memset(&v, 0, sizeof v);
    vg_output initial = vg__train_spec_initial(g, full, sp);
    if (sp->use_init && !initial.op) return v;
    vg_output var = vg_variable_op(g, sp->dt, sp->dims, sp->ndims, full);
    if (!var.op) return v;
    if (strcmp(vg_op_name(var.op), full) != 0) {
        vg_graph_set_error(g, VG_INTERNAL, "variable %s got the op name %s", full, vg_op_name(var.op));
        return v;
    }
    if (!sp->use_init) initial = vg__train_guard_initial_value(g, full, initial); /* absolute names (root scope) */
    vg__train_push_verbatim(g, full);
    vg_output assign = vg_assign(g, var, initial, true, "Assign");
    vg_output read = vg_identity(g, var, "read");
    vg_graph_pop_scope(g);
    if (!assign.op || !read.op) return v;
    vg_variable_set_parts(var.op, assign.op, read, NULL);
    add_collections(g, var.op, sp->flags);
    if (vg_graph_status(g, NULL) != VG_OK) return v;
    v.var = var.op;
    v.ref = var;
    v.read = read;
    v.initializer = assign.op;
    return v;
}

/* Creates a variable with an absolute name, TF's init_scope style. */
static vg_variable make_variable(vg_graph *g, const char *full, const var_spec *sp) {
    vg__train_enter_root(g);
    vg_variable v = build_variable(g, full, sp);
    vg__train_leave_root(g);
    return v;
}

vg_variable vg_variable_new(vg_graph *g, const char *name, vg_output initial_value, unsigned flags) {
    vg_variable none;
    memset(&none, 0, sizeof none);
    vg_shape s;
    if (!vg__train_check_initial_value(g, "tf.Variable", name, initial_value, &s)) return none;
    /* tf.Variable: name_scope(name, "Variable") relative to the current scope. */
    char full[NAME_MAX_LEN];
    vg_graph_unique_name(g, name && *name ? name : "Variable", full, sizeof full);
    var_spec sp = {vg_output_dtype(initial_value), s.dims, s.ndims, initial_value, false, vg_init_zeros(), flags};
    return make_variable(g, full, &sp);
}

vg_variable vg__train_create_variable(vg_graph *g, const char *full, bool verbatim, vg_dtype dt, const int64_t *dims,
                                      int ndims, vg_initializer init, unsigned flags) {
    /* A name already in use: TF's name_scope(name) would make the op name unique (a
     * name given as a scope, "<name>/", is taken as is). */
    char uniq[NAME_MAX_LEN];
    if (verbatim) {
        snprintf(uniq, sizeof uniq, "%s", full);
    } else {
        vg_graph_push_scope(g, "/");
        vg_graph_unique_name(g, full, uniq, sizeof uniq);
        vg_graph_pop_scope(g);
    }
    var_spec sp = {dt, dims, ndims, {NULL, 0}, true, init, flags};
    return make_variable(g, uniq, &sp);
}

vg_variable vg_get_variable(vg_graph *g, const char *name, vg_dtype dt, const int64_t *dims, int ndims,
                            vg_initializer init, unsigned flags) {
    vg_get_variable_opts o = vg__train_var_opts(dt, dims, ndims, init);
    o.not_trainable = !(flags & VG_VAR_TRAINABLE);
    o.local = (flags & VG_VAR_LOCAL) != 0;
    return vg_get_variable_ex(g, name, &o);
}

/* ------------------------------------------------------------------------ */
/* global step */

vg_output vg_get_global_step(const vg_graph *g) {
    vg_output none = {NULL, 0};
    if (!g) return none;
    int n;
    const vg_output *items = vg_graph_collection(g, VG_GLOBAL_STEP, &n);
    if (n > 0) return items[0];
    vg_op *op = vg_graph_op_by_name(g, "global_step");
    if (op && strcmp(vg_op_type(op), "VariableV2") == 0) return vg_out(op, 0);
    return none;
}

vg_output vg_get_or_create_global_step(vg_graph *g) {
    vg_output none = {NULL, 0};
    if (!g) return none;
    vg_output gs = vg_get_global_step(g);
    if (gs.op) return gs;
    /* training_util.create_global_step: get_variable("global_step", [], int64, zeros,
     * trainable=False) in the current variable scope (name scopes play no part);
     * collections: variables + global_step. */
    vg_get_variable_opts o;
    memset(&o, 0, sizeof o);
    o.dt = VG_INT64;
    o.has_init = true;
    o.init = vg_init_zeros();
    o.not_trainable = true;
    vg_variable v = vg_get_variable_ex(g, "global_step", &o);
    if (!v.var) return none;
    if (vg_graph_add_to_collection(g, VG_GLOBAL_STEP, v.ref) != VG_OK) return none;
    return v.ref;
}

/* ------------------------------------------------------------------------ */
/* init ops */

vg_op *vg_variables_initializer(vg_graph *g, const vg_output *vars, int n, const char *name) {
    if (!g) return NULL;
    if (!name) name = "init";
    if (n > 0 && !vars) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "variables_initializer: vars is NULL with %d variables", n);
        return NULL;
    }
    if (n == 0) return vg_no_op(g, name);
    vg_op **inits = vg_calloc((size_t)n, sizeof(vg_op *));
    if (!inits) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in variables_initializer");
        return NULL;
    }
    vg_op *res = NULL;
    for (int i = 0; i < n; i++) {
        inits[i] = vg_variable_initializer(vars[i].op);
        if (!inits[i]) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s is not a variable with an initializer",
                               vars[i].op ? vg_op_name(vars[i].op) : "(null)");
            goto done;
        }
    }
    res = vg_group(g, inits, n, name);
done:
    vg_free(inits);
    return res;
}

/* The items of a collection copied (the collection may grow while we build ops). */
static vg_output *collection_copy(vg_graph *g, const char *key, int *n) {
    const vg_output *items = vg_graph_collection(g, key, n);
    vg_output *c = vg_malloc(sizeof(vg_output) * (size_t)(*n ? *n : 1));
    if (!c) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory copying collection %s", key);
        return NULL;
    }
    if (*n) memcpy(c, items, sizeof(vg_output) * (size_t)*n);
    return c;
}

/* variables_initializer(the variables of collection key, name "init"). */
static vg_op *collection_initializer(vg_graph *g, const char *key) {
    if (!g) return NULL;
    int n;
    vg_output *vars = collection_copy(g, key, &n);
    if (!vars) return NULL;
    vg_op *op = vg_variables_initializer(g, vars, n, "init");
    vg_free(vars);
    return op;
}

vg_op *vg_global_variables_initializer(vg_graph *g) { return collection_initializer(g, VG_GLOBAL_VARIABLES); }

vg_op *vg_local_variables_initializer(vg_graph *g) { return collection_initializer(g, VG_LOCAL_VARIABLES); }

/* ------------------------------------------------------------------------ */
/* report_uninitialized_variables */

static vg_output report_build(vg_graph *g, const vg_output *vars, int n) {
    vg_output none = {NULL, 0};
    if (n == 0) {
        int64_t zero = 0;
        vg_status st;
        vg_tensor *t = vg_tensor_new(VG_STRING, &zero, 1, &st);
        if (!t) {
            vg_graph_set_error(g, st.code, "%s", st.msg);
            return none;
        }
        vg_output c = vg_const(g, t, "Const");
        vg_tensor_free(t);
        return c;
    }
    vg_output *inited = vg_malloc(sizeof(vg_output) * (size_t)n);
    if (!inited) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in report_uninitialized_variables");
        return none;
    }
    for (int i = 0; i < n; i++) /* state_ops.is_variable_initialized: a resource variable's is_initialized() */
        inited[i] = vg_is_resource_variable(vars[i]) ? vg_var_is_initialized_op(g, vars[i], "VarIsInitializedOp")
                                                     : vg_is_variable_initialized(g, vars[i], "IsVariableInitialized");
    vg_output mask = vg_logical_not(g, vg_pack(g, inited, n, 0, "stack"), "LogicalNot");
    vg_free(inited);
    vg_status st;
    int64_t dim = n;
    vg_tensor *names = vg_tensor_new(VG_STRING, &dim, 1, &st);
    if (!names) {
        vg_graph_set_error(g, st.code, "%s", st.msg);
        return none;
    }
    for (int i = 0; i < n; i++) {
        const char *nm = vars[i].op ? vg_op_name(vars[i].op) : "";
        if (vg_tensor_set_string(names, i, nm, strlen(nm), &st) != VG_OK) {
            vg_tensor_free(names);
            vg_graph_set_error(g, st.code, "%s", st.msg);
            return none;
        }
    }
    vg_output c = vg_const(g, names, "Const");
    vg_tensor_free(names);
    return vg_boolean_mask(g, c, mask, "boolean_mask");
}

vg_output vg_report_uninitialized_variables(vg_graph *g, const vg_output *vars, int n, const char *name) {
    vg_output none = {NULL, 0};
    if (!g) return none;
    vg_output *all = NULL;
    if (!vars) {
        /* global + local variables (or, in an old-style graph, every VariableV2) */
        int ng, nl;
        vg_graph_collection(g, VG_GLOBAL_VARIABLES, &ng);
        vg_graph_collection(g, VG_LOCAL_VARIABLES, &nl);
        int nops = vg_graph_num_ops(g);
        all = vg_malloc(sizeof(vg_output) * (size_t)(ng + nl + nops + 1));
        if (!all) {
            vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in report_uninitialized_variables");
            return none;
        }
        n = 0;
        const vg_output *it = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &ng);
        for (int i = 0; i < ng; i++) all[n++] = it[i];
        it = vg_graph_collection(g, VG_LOCAL_VARIABLES, &nl);
        for (int i = 0; i < nl; i++) all[n++] = it[i];
        if (n == 0)
            for (int i = 0; i < nops; i++)
                if (strcmp(vg_op_type(vg_graph_op(g, i)), "VariableV2") == 0) all[n++] = vg_out(vg_graph_op(g, i), 0);
        vars = all;
    }
    vg_graph_push_scope(g, name ? name : "report_uninitialized_variables");
    vg_output r = report_build(g, vars, n);
    vg_graph_pop_scope(g);
    vg_free(all);
    return r;
}
