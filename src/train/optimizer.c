/*
 * optimizer.c - tf.train optimizers (GradientDescent, Momentum, Adam, RMSProp, Adagrad,
 * Adadelta, Ftrl, ProximalGradientDescent) with
 * TF 1.15's graph layout, so that checkpoints and graphs line up with TensorFlow's:
 *
 *   slots       "<var>/Momentum"; "<var>/Adam", "<var>/Adam_1"; "<var>/RMSProp" (ones),
 *               "<var>/RMSProp_1"; Adam's "beta1_power"/"beta2_power" (float32);
 *               "<var>/Adagrad" and "<var>/Ftrl" (initial_accumulator_value),
 *               "<var>/Ftrl_1"; "<var>/Adadelta", "<var>/Adadelta_1" 
 *   constants   "<opt>/learning_rate", "<opt>/momentum", "<opt>/beta1", ...
 *   updates     "<opt>/update_<var>/ApplyAdam" (with "<opt>/update_<var>/Cast" for
 *               float64 variables)
 *   finish      Adam: "<opt>/mul", "<opt>/Assign", "<opt>/mul_1", "<opt>/Assign_1"
 *               after the updates
 *   train op    without a global step: NoOp "<opt>" grouping the updates; with one:
 *               NoOp "<opt>/update" and AssignAdd "<opt>" (global_step += "<opt>/value")
 *               depending on it.
 *
 * Slots are created as under TF's init_scope (no control dependencies of the caller).
 *
 * Resource variables (vigil/resource_variables.h: the VarHandleOp's output in var_list)
 * take TF's resource path: their slots (and Adam's beta powers when the first variable
 * is one) are resource variables, the updates ResourceApply* / ResourceSparseApply* on
 * the handles ("<opt>/update_<var>/ResourceApplyAdam"); GradientDescent's sparse update
 * is ResourceScatterAdd(var, indices, -grad * lr) as TF's
 * _resource_apply_sparse_duplicate_indices.
 */
#include "vigil/optimizer.h"
#include "dist_internal.h"
#include "optimizer_wrap.h"
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/gradients.h"
#include "vigil/ops_ext.h"
#include "vigil/resource_variables.h"
#include "vigil/variable_scope.h"
#include <stdio.h>

#define NAME_MAX_LEN 1024

typedef enum opt_kind {
    OPT_SGD,
    OPT_MOMENTUM,
    OPT_ADAM,
    OPT_RMSPROP,
    OPT_ADAGRAD,
    OPT_ADADELTA,
    OPT_FTRL,
    OPT_PROXIMAL_GD
} opt_kind;

typedef struct slot_entry {
    const vg_op *var;
    int which;       /* 0: first slot (m, accum, ms), 1: second (v, mom) */
    vg_op *slot;
} slot_entry;

/* The hyperparameters one constructor sets (the others stay 0). */
typedef struct {
    double momentum, beta1, beta2, epsilon, decay;
    double rho, initial_accumulator, lr_power, l1, l2, l2_shrinkage;
    bool nesterov;
} opt_hyper;

struct vg_optimizer {
    opt_kind kind;
    const char *name;
    double lr;
    opt_hyper hp;            /* the hyperparameters its constructor set */
    int gate;                /* vg_gate_gradients */
    char arg_error[256];     /* a constructor argument TF rejects; reported by apply */
    vg_output lr_tensor;     /* replaces the "learning_rate" Const when set */
    slot_entry *slots;
    int nslots, slots_cap;
    vg_graph *beta_graph;    /* Adam's non-slot variables live in one graph */
    vg_op *beta1_power, *beta2_power;
    /* a wrapper (optimizer_wrap.h): compute/apply go to wrap, the rest to inner */
    const vg__optimizer_wrap_ops *wrap;
    void *wrap_ctx;
    vg_optimizer *inner;
};

vg_optimizer *vg__optimizer_wrap(vg_optimizer *inner, const vg__optimizer_wrap_ops *ops, void *ctx) {
    if (!inner || !ops) return NULL;
    vg_optimizer *o = vg_calloc(1, sizeof *o);
    if (!o) return NULL;
    o->kind = inner->kind;
    o->name = inner->name;
    o->gate = inner->gate;
    o->wrap = ops;
    o->wrap_ctx = ctx;
    o->inner = inner;
    return o;
}

const vg__optimizer_wrap_ops *vg__optimizer_wrap_of(const vg_optimizer *opt, void **ctx, vg_optimizer **inner) {
    if (!opt || !opt->wrap) return NULL;
    if (ctx) *ctx = opt->wrap_ctx;
    if (inner) *inner = opt->inner;
    return opt->wrap;
}

/* ------------------------------------------------------------------------ */
/* construction */

static vg_optimizer *opt_new(opt_kind kind, const char *name, double lr, opt_hyper h) {
    vg_optimizer *o = vg_calloc(1, sizeof *o);
    if (!o) return NULL;
    o->kind = kind;
    o->name = name;
    o->lr = lr;
    o->gate = 1; /* GATE_OP, TF's default */
    o->hp = h;
    return o;
}

vg_optimizer *vg_optimizer_new_sgd(double learning_rate) {
    return opt_new(OPT_SGD, "GradientDescent", learning_rate, (opt_hyper){0});
}

vg_optimizer *vg_optimizer_new_momentum(double learning_rate, double momentum, bool use_nesterov) {
    return opt_new(OPT_MOMENTUM, "Momentum", learning_rate,
                   (opt_hyper){.momentum = momentum, .nesterov = use_nesterov});
}

vg_optimizer *vg_optimizer_new_adam(double learning_rate, double beta1, double beta2, double epsilon) {
    return opt_new(OPT_ADAM, "Adam", learning_rate, (opt_hyper){.beta1 = beta1, .beta2 = beta2, .epsilon = epsilon});
}

vg_optimizer *vg_optimizer_new_rmsprop(double learning_rate, double decay, double momentum, double epsilon) {
    return opt_new(OPT_RMSPROP, "RMSProp", learning_rate,
                   (opt_hyper){.decay = decay, .momentum = momentum, .epsilon = epsilon});
}

vg_optimizer *vg_optimizer_new_adam_default(void) { return vg_optimizer_new_adam(0.001, 0.9, 0.999, 1e-8); }

vg_optimizer *vg_optimizer_new_rmsprop_default(double learning_rate) {
    return vg_optimizer_new_rmsprop(learning_rate, 0.9, 0.0, 1e-10);
}

vg_optimizer *vg_optimizer_new_adagrad(double learning_rate, double initial_accumulator_value) {
    vg_optimizer *o =
        opt_new(OPT_ADAGRAD, "Adagrad", learning_rate, (opt_hyper){.initial_accumulator = initial_accumulator_value});
    if (o && !(initial_accumulator_value > 0))
        snprintf(o->arg_error, sizeof o->arg_error, "initial_accumulator_value must be positive: %g",
                 initial_accumulator_value);
    return o;
}

vg_optimizer *vg_optimizer_new_adagrad_default(double learning_rate) {
    return vg_optimizer_new_adagrad(learning_rate, 0.1);
}

vg_optimizer *vg_optimizer_new_adadelta(double learning_rate, double rho, double epsilon) {
    return opt_new(OPT_ADADELTA, "Adadelta", learning_rate, (opt_hyper){.rho = rho, .epsilon = epsilon});
}

vg_optimizer *vg_optimizer_new_adadelta_default(void) { return vg_optimizer_new_adadelta(0.001, 0.95, 1e-8); }

vg_optimizer *vg_optimizer_new_ftrl(double learning_rate, double learning_rate_power, double initial_accumulator_value,
                                    double l1, double l2, double l2_shrinkage) {
    vg_optimizer *o = opt_new(OPT_FTRL, "Ftrl", learning_rate,
                              (opt_hyper){.lr_power = learning_rate_power,
                                          .initial_accumulator = initial_accumulator_value,
                                          .l1 = l1,
                                          .l2 = l2,
                                          .l2_shrinkage = l2_shrinkage});
    if (!o) return NULL;
    /* ftrl.py's ValueErrors, in its order */
    if (initial_accumulator_value < 0)
        snprintf(o->arg_error, sizeof o->arg_error, "initial_accumulator_value %g needs to be positive or zero",
                 initial_accumulator_value);
    else if (learning_rate_power > 0)
        snprintf(o->arg_error, sizeof o->arg_error, "learning_rate_power %g needs to be negative or zero",
                 learning_rate_power);
    else if (l1 < 0)
        snprintf(o->arg_error, sizeof o->arg_error, "l1_regularization_strength %g needs to be positive or zero", l1);
    else if (l2 < 0)
        snprintf(o->arg_error, sizeof o->arg_error, "l2_regularization_strength %g needs to be positive or zero", l2);
    else if (l2_shrinkage < 0)
        snprintf(o->arg_error, sizeof o->arg_error,
                 "l2_shrinkage_regularization_strength %g needs to be positive or zero", l2_shrinkage);
    return o;
}

vg_optimizer *vg_optimizer_new_ftrl_default(double learning_rate) {
    return vg_optimizer_new_ftrl(learning_rate, -0.5, 0.1, 0.0, 0.0, 0.0);
}

vg_optimizer *vg_optimizer_new_proximal_gd(double learning_rate, double l1, double l2) {
    return opt_new(OPT_PROXIMAL_GD, "ProximalGradientDescent", learning_rate, (opt_hyper){.l1 = l1, .l2 = l2});
}

void vg_optimizer_set_gate_gradients(vg_optimizer *opt, vg_gate_gradients gate) {
    if (opt) opt->gate = (int)gate;
    if (opt && opt->inner) vg_optimizer_set_gate_gradients(opt->inner, gate);
}

void vg_optimizer_free(vg_optimizer *opt) {
    if (!opt) return;
    if (opt->wrap) {
        if (opt->wrap->free_ctx) opt->wrap->free_ctx(opt->wrap_ctx);
        vg_optimizer_free(opt->inner);
    }
    vg_free(opt->slots);
    vg_free(opt);
}

void vg_optimizer_set_learning_rate_tensor(vg_optimizer *opt, vg_output lr) {
    if (opt) opt->lr_tensor = lr;
    if (opt && opt->inner) vg_optimizer_set_learning_rate_tensor(opt->inner, lr);
}

const char *vg_optimizer_name(const vg_optimizer *opt) {
    if (opt && opt->inner) return vg_optimizer_name(opt->inner);
    return opt ? opt->name : "";
}

/* ------------------------------------------------------------------------ */
/* resource variables: dtype and shape from the handle's VarHandleOp */

static bool is_res(const vg_op *var) { return vg__train_is_resource(var); }
static vg_dtype var_dtype(const vg_op *var) { return vg__train_var_dtype(var); }
static vg_shape var_shape(const vg_op *var) { return vg__train_var_shape(var); }
/* A (non-slot) variable's value for the update: its snapshot, or a ReadVariableOp. */
static vg_output var_value(vg_graph *g, vg_op *var) {
    if (!is_res(var)) return vg_variable_snapshot(var);
    return vg_read_variable_op(g, vg_out(var, 0), var_dtype(var), NULL);
}

/* ------------------------------------------------------------------------ */
/* slots */

static vg_op *find_slot(const vg_optimizer *o, const vg_op *var, int which) {
    for (int i = 0; i < o->nslots; i++)
        if (o->slots[i].var == var && o->slots[i].which == which) return o->slots[i].slot;
    return NULL;
}

/* slot_creator.create_slot_with_initializer: with tf.variable_scope(None,
 * default_name="<var op name>/<opt name>"): tf.get_variable("", initializer,
 * trainable=False, dtype and shape of the variable). The slot is thus named in the
 * current variable scope ("w/Momentum", a second optimizer's "w/Momentum_1"; inside
 * variable_scope("model") "model/<var>/Momentum"), and a reusing scope fails as TF
 * does ("Variable w/Momentum/ does not exist ..."). The scope opens no name scope here
 * (TF's would only reserve "<name scope>/w/Momentum"). */
static vg_op *make_slot(vg_optimizer *o, vg_graph *g, vg_op *var, int which, vg_initializer init) {
    vg_op *s = find_slot(o, var, which);
    if (s) return s;
    vg_shape shape = var_shape(var);
    if (!vg_shape_is_fully_defined(&shape)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: slot for variable %s needs a fully defined shape", o->name,
                           vg_op_name(var));
        return NULL;
    }
    char base[NAME_MAX_LEN];
    snprintf(base, sizeof base, "%s/%s", vg_op_name(var), o->name);
    vg_variable_scope_opts so;
    memset(&so, 0, sizeof so);
    so.default_name = base;
    so.no_name_scope = true;
    const char *scope = vg_variable_scope_push(g, NULL, &so);
    if (!scope) return NULL;
    vg_op *slot; /* slot_creator: a resource variable's slots are resource variables */
    if (is_res(var)) {
        char full[NAME_MAX_LEN];
        snprintf(full, sizeof full, "%s", scope);
        vg_graph_push_scope(g, "/");
        slot = vg_resource_variable_new_init(g, full, var_dtype(var), shape.dims, shape.ndims, init, 0).handle_op;
        vg_graph_pop_scope(g);
    } else {
        vg_get_variable_opts go = vg__train_var_opts(var_dtype(var), shape.dims, shape.ndims, init);
        go.not_trainable = true;
        slot = vg_get_variable_ex(g, "", &go).var;
    }
    vg_variable_scope_pop(g);
    if (!slot) return NULL;
    if (!vg__train_grow((void **)&o->slots, &o->slots_cap, o->nslots + 1, sizeof(slot_entry))) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory recording optimizer slots");
        return NULL;
    }
    o->slots[o->nslots++] = (slot_entry){var, which, slot};
    return slot;
}

/* _create_non_slot_variable: tf.Variable(initial, name) relative to the current
 * name scope, float32, not trainable ("beta1_power/initial_value" holds the start); a
 * resource variable ("beta1_power/Initializer/initial_value") when the first variable
 * is one. */
static vg_op *make_power(vg_graph *g, const char *name, double initial, bool resource) {
    char full[NAME_MAX_LEN];
    vg_graph_unique_name(g, name, full, sizeof full);
    vg__train_push_verbatim(g, full);
    if (resource) vg_graph_push_scope(g, "Initializer");
    vg_output c = vg_const_f32(g, (float)initial, "initial_value");
    if (resource) vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    if (resource) return vg_resource_variable_new(g, name, c, 0).handle_op;
    vg_variable v = vg_variable_new(g, name, c, 0);
    return v.var;
}

/* Slot 0 (init0) and, when nslots is 2, slot 1 (init1) of each variable, in TF's order
 * (both slots of a variable before the next variable). */
static bool make_slots(vg_optimizer *o, vg_graph *g, vg_op *const *vars, int n, int nslots, vg_initializer init0,
                       vg_initializer init1) {
    for (int i = 0; i < n; i++)
        if (!make_slot(o, g, vars[i], 0, init0) || (nslots > 1 && !make_slot(o, g, vars[i], 1, init1))) return false;
    return true;
}

static bool create_slots(vg_optimizer *o, vg_graph *g, vg_op *const *vars, int n) {
    switch (o->kind) {
    case OPT_SGD: return true;
    case OPT_MOMENTUM: return make_slots(o, g, vars, n, 1, vg_init_zeros(), vg_init_zeros());
    case OPT_ADAM:
        if (o->beta_graph != g || !o->beta1_power) {
            o->beta1_power = make_power(g, "beta1_power", o->hp.beta1, is_res(vars[0]));
            o->beta2_power = make_power(g, "beta2_power", o->hp.beta2, is_res(vars[0]));
            if (!o->beta1_power || !o->beta2_power) return false;
            o->beta_graph = g;
        }
        return make_slots(o, g, vars, n, 2, vg_init_zeros(), vg_init_zeros());
    case OPT_RMSPROP:
        /* TF initializes the mean square "rms" slot with ones */
        return make_slots(o, g, vars, n, 2, vg_init_ones(), vg_init_zeros());
    case OPT_ADAGRAD:
        /* "accumulator": constant initial_accumulator_value */
        return make_slots(o, g, vars, n, 1, vg_init_constant(o->hp.initial_accumulator), vg_init_zeros());
    case OPT_ADADELTA:
        /* "accum", "accum_update": zeros */
        return make_slots(o, g, vars, n, 2, vg_init_zeros(), vg_init_zeros());
    case OPT_FTRL:
        /* "accum": constant initial_accumulator_value; "linear": zeros */
        return make_slots(o, g, vars, n, 2, vg_init_constant(o->hp.initial_accumulator), vg_init_zeros());
    case OPT_PROXIMAL_GD: return true;
    }
    return false;
}

/* ------------------------------------------------------------------------ */
/* apply */

/* The hyper-parameter tensors of _prepare, in TF's creation order. */
typedef struct hyper {
    vg_output lr, momentum, beta1, beta2, epsilon, decay;
    vg_output rho, l1, l2, l2_shrinkage, lr_power;
} hyper;

static hyper prepare(vg_optimizer *o, vg_graph *g) {
    hyper h;
    memset(&h, 0, sizeof h);
    /* Adadelta names its learning-rate tensor "lr" */
    h.lr = o->lr_tensor.op ? o->lr_tensor
                           : vg_const_f32(g, (float)o->lr, o->kind == OPT_ADADELTA ? "lr" : "learning_rate");
    switch (o->kind) {
    case OPT_SGD: break;
    case OPT_MOMENTUM: h.momentum = vg_const_f32(g, (float)o->hp.momentum, "momentum"); break;
    case OPT_ADAM:
        h.beta1 = vg_const_f32(g, (float)o->hp.beta1, "beta1");
        h.beta2 = vg_const_f32(g, (float)o->hp.beta2, "beta2");
        h.epsilon = vg_const_f32(g, (float)o->hp.epsilon, "epsilon");
        break;
    case OPT_RMSPROP:
        h.decay = vg_const_f32(g, (float)o->hp.decay, "decay");
        h.momentum = vg_const_f32(g, (float)o->hp.momentum, "momentum");
        h.epsilon = vg_const_f32(g, (float)o->hp.epsilon, "epsilon");
        break;
    case OPT_ADAGRAD: break;
    case OPT_ADADELTA:
        h.rho = vg_const_f32(g, (float)o->hp.rho, "rho");
        h.epsilon = vg_const_f32(g, (float)o->hp.epsilon, "epsilon");
        break;
    case OPT_FTRL:
        h.l1 = vg_const_f32(g, (float)o->hp.l1, "l1_regularization_strength");
        h.l2 = vg_const_f32(g, (float)o->hp.l2, "l2_regularization_strength");
        if (o->hp.l2_shrinkage > 0)
            h.l2_shrinkage = vg_const_f32(g, (float)o->hp.l2_shrinkage, "l2_shrinkage_regularization_strength");
        h.lr_power = vg_const_f32(g, (float)o->hp.lr_power, "learning_rate_power");
        break;
    case OPT_PROXIMAL_GD:
        h.l1 = vg_const_f32(g, (float)o->hp.l1, "l1_regularization_strength");
        h.l2 = vg_const_f32(g, (float)o->hp.l2, "l2_regularization_strength");
        break;
    }
    return h;
}

/* math_ops.cast(x, dt): x itself when it already has dt, else Cast "Cast". */
static vg_output cast_to(vg_graph *g, vg_output x, vg_dtype dt) {
    if (!x.op || vg_output_dtype(x) == dt) return x;
    return vg_cast(g, x, dt, "Cast");
}

/* _apply_dense of each optimizer, under "<opt>/update_<var>/". */
static vg_op *apply_dense(vg_optimizer *o, vg_graph *g, const hyper *h, vg_op *var, vg_output grad) {
    vg_output ref = {var, 0};
    vg_dtype dt = vg_output_dtype(ref);
    vg_output r = {NULL, 0};
    switch (o->kind) {
    case OPT_SGD: r = vg_apply_gradient_descent(g, ref, cast_to(g, h->lr, dt), grad, false, NULL); break;
    case OPT_MOMENTUM: {
        vg_output acc = {find_slot(o, var, 0), 0};
        vg_output lr = cast_to(g, h->lr, dt);
        vg_output mom = cast_to(g, h->momentum, dt);
        r = vg_apply_momentum(g, ref, acc, lr, grad, mom, false, o->hp.nesterov, NULL);
        break;
    }
    case OPT_ADAM: {
        vg_output m = {find_slot(o, var, 0), 0}, v = {find_slot(o, var, 1), 0};
        vg_output b1p = cast_to(g, var_value(g, o->beta1_power), dt);
        vg_output b2p = cast_to(g, var_value(g, o->beta2_power), dt);
        vg_output lr = cast_to(g, h->lr, dt);
        vg_output b1 = cast_to(g, h->beta1, dt);
        vg_output b2 = cast_to(g, h->beta2, dt);
        vg_output eps = cast_to(g, h->epsilon, dt);
        r = vg_apply_adam(g, ref, m, v, b1p, b2p, lr, b1, b2, eps, grad, false, false, NULL);
        break;
    }
    case OPT_RMSPROP: {
        vg_output ms = {find_slot(o, var, 0), 0}, mom = {find_slot(o, var, 1), 0};
        vg_output lr = cast_to(g, h->lr, dt);
        vg_output rho = cast_to(g, h->decay, dt);
        vg_output momentum = cast_to(g, h->momentum, dt);
        vg_output eps = cast_to(g, h->epsilon, dt);
        r = vg_apply_rms_prop(g, ref, ms, mom, lr, rho, momentum, eps, grad, false, NULL);
        break;
    }
    case OPT_ADAGRAD: {
        vg_output acc = {find_slot(o, var, 0), 0};
        r = vg_apply_adagrad(g, ref, acc, cast_to(g, h->lr, dt), grad, false, true, NULL);
        break;
    }
    case OPT_ADADELTA: {
        vg_output acc = {find_slot(o, var, 0), 0}, accu = {find_slot(o, var, 1), 0};
        vg_output lr = cast_to(g, h->lr, dt);
        vg_output rho = cast_to(g, h->rho, dt);
        vg_output eps = cast_to(g, h->epsilon, dt);
        r = vg_apply_adadelta(g, ref, acc, accu, lr, rho, eps, grad, false, NULL);
        break;
    }
    case OPT_FTRL: {
        vg_output acc = {find_slot(o, var, 0), 0}, lin = {find_slot(o, var, 1), 0};
        vg_output lr = cast_to(g, h->lr, dt);
        vg_output l1 = cast_to(g, h->l1, dt);
        vg_output l2 = cast_to(g, h->l2, dt);
        if (h->l2_shrinkage.op) {
            vg_output shr = cast_to(g, h->l2_shrinkage, dt);
            r = vg_apply_ftrl_v2(g, ref, acc, lin, grad, lr, l1, l2, shr, cast_to(g, h->lr_power, dt), false, NULL);
        } else {
            r = vg_apply_ftrl(g, ref, acc, lin, grad, lr, l1, l2, cast_to(g, h->lr_power, dt), false, NULL);
        }
        break;
    }
    case OPT_PROXIMAL_GD: {
        vg_output lr = cast_to(g, h->lr, dt);
        vg_output l1 = cast_to(g, h->l1, dt);
        vg_output l2 = cast_to(g, h->l2, dt);
        r = vg_apply_proximal_gradient_descent(g, ref, lr, l1, l2, grad, false, NULL);
        break;
    }
    }
    return r.op;
}

/* Gather's gradient with respect to its params (axis 0) is
 * UnsortedSegmentSum(values, indices, rows): where TF has IndexedSlices(values,
 * indices). Recognised when it is the whole gradient of the variable (not summed
 * with other uses) and values is [N] + var.shape[1:]. */
static bool sparse_grad(vg_op *var, vg_output grad, vg_output *values, vg_output *indices) {
    if (!grad.op || grad.index != 0 || strcmp(vg_op_type(grad.op), "UnsortedSegmentSum") != 0) return false;
    vg_output v = vg_op_input(grad.op, 0), ix = vg_op_input(grad.op, 1);
    vg_shape vs = vg_output_shape(v), is = vg_output_shape(ix), ws = var_shape(var);
    vg_dtype it = vg_output_dtype(ix);
    if (is.ndims != 1 || ws.ndims < 1 || vs.ndims != ws.ndims || (it != VG_INT32 && it != VG_INT64)) return false;
    if (vg_output_dtype(v) != var_dtype(var)) return false;
    for (int k = 1; k < ws.ndims; k++)
        if (ws.dims[k] < 0 || vs.dims[k] != ws.dims[k]) return false;
    /* the dense gradient must have var's shape (else the dense path reports it) */
    vg_shape gs = vg_output_shape(grad);
    if (gs.ndims != ws.ndims || (gs.dims[0] >= 0 && ws.dims[0] >= 0 && gs.dims[0] != ws.dims[0])) return false;
    *values = v;
    *indices = ix;
    return true;
}

/* _apply_sparse_duplicate_indices: the rows of a repeated index summed first
 * (_deduplicate_indexed_slices: Unique, UnsortedSegmentSum over the new positions),
 * then the optimizer's SparseApply* op. NULL (no graph error) for optimizers whose
 * sparse update equals the dense one (GradientDescent, Adam): they take the dense
 * path. */
/* _deduplicate_indexed_slices: the unique indices and the rows summed per index. */
static bool dedup(vg_graph *g, vg_output values, vg_output indices, vg_output *grad, vg_output *uniq) {
    vg_op *u = vg_unique(g, indices, vg_output_dtype(indices), "Unique");
    if (!u) return false;
    vg_output pos = vg_out(u, 1);
    *uniq = vg_out(u, 0);
    int32_t b0 = 0, e1 = 1;
    vg_strided_slice_masks shrink = {0, 0, 0, 0, 1};
    vg_output count = vg_strided_slice_c(g, vg_shape_op(g, *uniq, VG_INT32, "Shape"), &b0, &e1, NULL, 1, &shrink,
                                         "strided_slice");
    vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", "UnsortedSegmentSum");
    vg_op_builder_add_input(b, values);
    vg_op_builder_add_input(b, pos);
    vg_op_builder_add_input(b, count);
    *grad = vg_out(vg_op_builder_finish(b), 0);
    return grad->op != NULL;
}

static vg_op *apply_sparse(vg_optimizer *o, vg_graph *g, const hyper *h, vg_op *var, vg_output values,
                           vg_output indices) {
    if (o->kind == OPT_SGD || o->kind == OPT_ADAM) return NULL;
    vg_output ref = {var, 0};
    vg_dtype dt = vg_output_dtype(ref);
    vg_output grad, uniq;
    if (!dedup(g, values, indices, &grad, &uniq)) return NULL;
    vg_output r = {NULL, 0};
    switch (o->kind) {
    case OPT_SGD:
    case OPT_ADAM: break;
    case OPT_MOMENTUM:
        r = vg_sparse_apply_momentum(g, ref, vg_out(find_slot(o, var, 0), 0), cast_to(g, h->lr, dt), grad, uniq,
                                     cast_to(g, h->momentum, dt), false, o->hp.nesterov, NULL);
        break;
    case OPT_RMSPROP:
        r = vg_sparse_apply_rms_prop(g, ref, vg_out(find_slot(o, var, 0), 0), vg_out(find_slot(o, var, 1), 0),
                                     cast_to(g, h->lr, dt), cast_to(g, h->decay, dt), cast_to(g, h->momentum, dt),
                                     cast_to(g, h->epsilon, dt), grad, uniq, false, NULL);
        break;
    case OPT_ADAGRAD:
        r = vg_sparse_apply_adagrad(g, ref, vg_out(find_slot(o, var, 0), 0), cast_to(g, h->lr, dt), grad, uniq, false,
                                    true, NULL);
        break;
    case OPT_ADADELTA:
        r = vg_sparse_apply_adadelta(g, ref, vg_out(find_slot(o, var, 0), 0), vg_out(find_slot(o, var, 1), 0),
                                     cast_to(g, h->lr, dt), cast_to(g, h->rho, dt), cast_to(g, h->epsilon, dt), grad,
                                     uniq, false, NULL);
        break;
    case OPT_FTRL: {
        vg_output acc = vg_out(find_slot(o, var, 0), 0), lin = vg_out(find_slot(o, var, 1), 0);
        vg_output lr = cast_to(g, h->lr, dt), l1 = cast_to(g, h->l1, dt), l2 = cast_to(g, h->l2, dt);
        if (h->l2_shrinkage.op)
            r = vg_sparse_apply_ftrl_v2(g, ref, acc, lin, grad, uniq, lr, l1, l2, cast_to(g, h->l2_shrinkage, dt),
                                        cast_to(g, h->lr_power, dt), false, NULL);
        else
            r = vg_sparse_apply_ftrl(g, ref, acc, lin, grad, uniq, lr, l1, l2, cast_to(g, h->lr_power, dt), false,
                                     NULL);
        break;
    }
    case OPT_PROXIMAL_GD:
        r = vg_sparse_apply_proximal_gradient_descent(g, ref, cast_to(g, h->lr, dt), cast_to(g, h->l1, dt),
                                                      cast_to(g, h->l2, dt), grad, uniq, false, NULL);
        break;
    }
    return r.op;
}

/* _resource_apply_sparse_duplicate_indices: GradientDescent scatters -grad * lr into
 * the rows; the others deduplicate, then ResourceSparseApply*. Adam takes the dense
 * path (see apply_sparse). */
static vg_op *apply_resource_sparse(vg_optimizer *o, vg_graph *g, const hyper *h, vg_op *var, vg_output values,
                                    vg_output indices) {
    vg_output v = vg_out(var, 0);
    vg_dtype dt = var_dtype(var);
    if (o->kind == OPT_SGD)
        return vg_resource_scatter_add(g, v, indices, vg_mul(g, vg_neg(g, values, NULL), cast_to(g, h->lr, dt), NULL),
                                       NULL);
    vg_output grad, uniq;
    if (!dedup(g, values, indices, &grad, &uniq)) return NULL;
    vg_output s0 = vg_out(find_slot(o, var, 0), 0), s1 = vg_out(find_slot(o, var, 1), 0);
    vg_output lr = cast_to(g, h->lr, dt);
    switch (o->kind) {
    case OPT_MOMENTUM:
        return vg_resource_sparse_apply_momentum(g, v, s0, lr, grad, uniq, cast_to(g, h->momentum, dt), false,
                                                 o->hp.nesterov, NULL);
    case OPT_RMSPROP:
        return vg_resource_sparse_apply_rms_prop(g, v, s0, s1, lr, cast_to(g, h->decay, dt),
                                                 cast_to(g, h->momentum, dt), cast_to(g, h->epsilon, dt), grad, uniq,
                                                 false, NULL);
    case OPT_ADAGRAD: return vg_resource_sparse_apply_adagrad(g, v, s0, lr, grad, uniq, false, true, NULL);
    case OPT_ADADELTA:
        return vg_resource_sparse_apply_adadelta(g, v, s0, s1, lr, cast_to(g, h->rho, dt), cast_to(g, h->epsilon, dt),
                                                 grad, uniq, false, NULL);
    case OPT_FTRL: {
        vg_output l1 = cast_to(g, h->l1, dt), l2 = cast_to(g, h->l2, dt), lp = cast_to(g, h->lr_power, dt);
        if (h->l2_shrinkage.op)
            return vg_resource_sparse_apply_ftrl_v2(g, v, s0, s1, grad, uniq, lr, l1, l2,
                                                    cast_to(g, h->l2_shrinkage, dt), lp, false, NULL);
        return vg_resource_sparse_apply_ftrl(g, v, s0, s1, grad, uniq, lr, l1, l2, lp, false, NULL);
    }
    case OPT_PROXIMAL_GD:
        return vg_resource_sparse_apply_proximal_gradient_descent(g, v, lr, cast_to(g, h->l1, dt),
                                                                  cast_to(g, h->l2, dt), grad, uniq, false, NULL);
    case OPT_SGD:
    case OPT_ADAM: break;
    }
    return NULL;
}

/* _resource_apply_dense: the ResourceApply* op on the handles of the variable and its
 * slots, with apply_dense's hyper-parameters. */
static vg_op *apply_resource(vg_optimizer *o, vg_graph *g, const hyper *h, vg_op *var, vg_output grad) {
    vg_output values, indices;
    if (o->kind != OPT_ADAM && sparse_grad(var, grad, &values, &indices))
        return apply_resource_sparse(o, g, h, var, values, indices);
    vg_output v = vg_out(var, 0);
    vg_dtype dt = var_dtype(var);
    vg_output s0 = vg_out(find_slot(o, var, 0), 0), s1 = vg_out(find_slot(o, var, 1), 0);
    vg_output lr = cast_to(g, h->lr, dt);
    switch (o->kind) {
    case OPT_SGD: return vg_resource_apply_gradient_descent(g, v, lr, grad, false, NULL);
    case OPT_MOMENTUM:
        return vg_resource_apply_momentum(g, v, s0, lr, grad, cast_to(g, h->momentum, dt), false, o->hp.nesterov, NULL);
    case OPT_ADAM: {
        vg_output b1p = cast_to(g, var_value(g, o->beta1_power), dt);
        vg_output b2p = cast_to(g, var_value(g, o->beta2_power), dt);
        return vg_resource_apply_adam(g, v, s0, s1, b1p, b2p, lr, cast_to(g, h->beta1, dt), cast_to(g, h->beta2, dt),
                                      cast_to(g, h->epsilon, dt), grad, false, false, NULL);
    }
    case OPT_RMSPROP:
        return vg_resource_apply_rms_prop(g, v, s0, s1, lr, cast_to(g, h->decay, dt), cast_to(g, h->momentum, dt),
                                          cast_to(g, h->epsilon, dt), grad, false, NULL);
    case OPT_ADAGRAD: return vg_resource_apply_adagrad(g, v, s0, lr, grad, false, true, NULL);
    case OPT_ADADELTA:
        return vg_resource_apply_adadelta(g, v, s0, s1, lr, cast_to(g, h->rho, dt), cast_to(g, h->epsilon, dt), grad,
                                          false, NULL);
    case OPT_FTRL: {
        vg_output l1 = cast_to(g, h->l1, dt), l2 = cast_to(g, h->l2, dt), lp = cast_to(g, h->lr_power, dt);
        if (h->l2_shrinkage.op)
            return vg_resource_apply_ftrl_v2(g, v, s0, s1, grad, lr, l1, l2, cast_to(g, h->l2_shrinkage, dt), lp,
                                             false, NULL);
        return vg_resource_apply_ftrl(g, v, s0, s1, grad, lr, l1, l2, lp, false, NULL);
    }
    case OPT_PROXIMAL_GD:
        return vg_resource_apply_proximal_gradient_descent(g, v, lr, cast_to(g, h->l1, dt), cast_to(g, h->l2, dt),
                                                           grad, false, NULL);
    }
    return NULL;
}

static vg_op *apply_one(vg_optimizer *o, vg_graph *g, const hyper *h, vg_op *var, vg_output grad) {
    if (is_res(var)) return apply_resource(o, g, h, var, grad);
    vg_output values, indices;
    if (o->kind != OPT_SGD && o->kind != OPT_ADAM && sparse_grad(var, grad, &values, &indices))
        return apply_sparse(o, g, h, var, values, indices);
    return apply_dense(o, g, h, var, grad);
}

/* NoOp `name` (under the current scope) with control inputs on ops: tf.group. */
static vg_op *group(vg_graph *g, vg_op *const *ops, int n, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "NoOp", name);
    for (int i = 0; i < n; i++) vg_op_builder_add_control_input(b, ops[i]);
    return vg_op_builder_finish(b);
}

/* Variable.assign(value, use_locking=False); AssignVariableOp for a resource variable
 * (its op in .op). */
static vg_output assign_unlocked(vg_graph *g, vg_op *var, vg_output value) {
    if (is_res(var)) return vg_out(vg_assign_variable_op(g, vg_out(var, 0), value, NULL), 0);
    vg_op_builder *b = vg_op_builder_new(g, "Assign", "Assign");
    vg_op_builder_add_input(b, vg_out(var, 0));
    vg_op_builder_add_input(b, value);
    vg_op_builder_set_attr_bool(b, "validate_shape", true);
    vg_op_builder_set_attr_bool(b, "use_locking", false);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* Adam's _finish: beta powers *= beta after the updates (ops appended to upd). */
static bool adam_finish(vg_optimizer *o, vg_graph *g, const hyper *h, vg_op **upd, int *nupd) {
    vg_graph_push_control_deps(g, upd, *nupd);
    vg_output a1 = assign_unlocked(g, o->beta1_power, vg_mul(g, var_value(g, o->beta1_power), h->beta1, "mul"));
    vg_output a2 = assign_unlocked(g, o->beta2_power, vg_mul(g, var_value(g, o->beta2_power), h->beta2, "mul"));
    vg_graph_pop_control_deps(g);
    if (!a1.op || !a2.op) return false;
    upd[(*nupd)++] = a1.op;
    upd[(*nupd)++] = a2.op;
    return true;
}

/* The variable op behind a ref output. */
static vg_op *var_of(vg_graph *g, vg_output v) {
    if (v.op && (strcmp(vg_op_type(v.op), "VariableV2") == 0 || vg_is_resource_variable(v))) return v.op;
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "apply_gradients: '%s' is not a variable (pass its ref output)",
                       v.op ? vg_op_name(v.op) : "(null)");
    return NULL;
}

static void add_train_op(vg_graph *g, vg_op *op) {
    int n;
    const vg_output *items = vg_graph_collection(g, VG_TRAIN_OP, &n);
    for (int i = 0; i < n; i++)
        if (items[i].op == op) return;
    vg_graph_add_to_collection(g, VG_TRAIN_OP, vg_out(op, 0));
}

/* The body of apply_gradients once the (grad, var) pairs are filtered. */
static vg_op *apply_pairs(vg_optimizer *o, vg_graph *g, const vg_output *grads, vg_op *const *vars, int n,
                          vg_output global_step, const char *name, vg_op **upd) {
    vg_graph_push_init_scope(g);
    bool ok = create_slots(o, g, vars, n);
    vg_graph_pop_init_scope(g);
    if (!ok) return NULL;

    const char *base = name ? name : o->name;
    char full[NAME_MAX_LEN];
    vg_graph_unique_name(g, base, full, sizeof full);
    vg__train_push_verbatim(g, full);
    hyper h = prepare(o, g);
    int nupd = 0;
    for (int i = 0; i < n; i++) {
        char scope[NAME_MAX_LEN];
        snprintf(scope, sizeof scope, "update_%s", vg_op_name(vars[i]));
        vg_graph_push_scope(g, scope);
        vg_op *u = apply_one(o, g, &h, vars[i], grads[i]);
        vg_graph_pop_scope(g);
        if (!u) {
            vg_graph_pop_scope(g);
            return NULL;
        }
        upd[nupd++] = u;
    }
    if (o->kind == OPT_ADAM && !adam_finish(o, g, &h, upd, &nupd)) {
        vg_graph_pop_scope(g);
        return NULL;
    }
    vg_op *train;
    if (!global_step.op) {
        vg_graph_pop_scope(g);
        train = group(g, upd, nupd, base); /* named `full` */
    } else {
        vg_op *finish = group(g, upd, nupd, "update");
        if (!finish) {
            vg_graph_pop_scope(g);
            return NULL;
        }
        vg_graph_push_control_deps(g, &finish, 1);
        vg_output one = vg_const_fill(g, vg_output_dtype(global_step), NULL, 0, 1, "value");
        vg_graph_pop_scope(g);
        vg_op_builder *b = vg_op_builder_new(g, "AssignAdd", base);
        vg_op_builder_add_input(b, global_step);
        vg_op_builder_add_input(b, one);
        vg_op_builder_set_attr_bool(b, "use_locking", false);
        train = vg_op_builder_finish(b);
        vg_graph_pop_control_deps(g);
    }
    if (train && strcmp(vg_op_name(train), full) != 0) {
        vg_graph_set_error(g, VG_INTERNAL, "train op named %s, expected %s", vg_op_name(train), full);
        return NULL;
    }
    if (train) add_train_op(g, train);
    return train;
}

vg_op *vg_optimizer_apply_gradients(vg_optimizer *opt, vg_graph *g, const vg_output *grads, const vg_output *vars,
                                    int n, vg_output global_step, const char *name) {
    if (!g) return NULL;
    if (!opt) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "apply_gradients: optimizer is NULL");
        return NULL;
    }
    if (vg_graph_status(g, NULL) != VG_OK) return NULL;
    if (opt->wrap) return opt->wrap->apply_gradients(opt->wrap_ctx, opt->inner, g, grads, vars, n, global_step, name);
    if (opt->arg_error[0]) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: %s", opt->name, opt->arg_error);
        return NULL;
    }
    if (n <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "No variables provided.");
        return NULL;
    }
    vg_output *gs = vg_malloc(sizeof(vg_output) * (size_t)n);
    vg_op **vs = vg_malloc(sizeof(vg_op *) * (size_t)n);
    vg_op **upd = vg_malloc(sizeof(vg_op *) * (size_t)(n + 2));
    vg_op *train = NULL;
    if (!gs || !vs || !upd) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in apply_gradients");
        goto done;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        vg_op *v = var_of(g, vars[i]);
        if (!v) goto done;
        if (!grads || !grads[i].op) continue;
        gs[m] = grads[i];
        vs[m++] = v;
    }
    if (m == 0) {
        char buf[512];
        size_t pos = 0;
        buf[0] = 0;
        for (int i = 0; i < n && pos + 1 < sizeof buf; i++) {
            int k = snprintf(buf + pos, sizeof buf - pos, "%s%s", i ? ", " : "", vg_op_name(vars[i].op));
            if (k > 0) pos += (size_t)k;
        }
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "No gradients provided for any variable: [%s].", buf);
        goto done;
    }
    train = apply_pairs(opt, g, gs, vs, m, global_step, name, upd);
done:
    vg_free(gs);
    vg_free(vs);
    vg_free(upd);
    return train;
}

/* ------------------------------------------------------------------------ */
/* compute_gradients / minimize */

/* GATE_GRAPH: control_flow_ops.tuple(grads) - "tuple/group_deps" waits for every
 * gradient, each gradient is passed on as "tuple/control_dependency[_i]" (an Identity
 * after the group), so no gradient is used before all are computed. */
static vg_code gate_graph(vg_graph *g, vg_output *grads, int n, vg_status *st) {
    vg_op **ops = vg_malloc(sizeof(vg_op *) * (size_t)(n > 0 ? n : 1));
    if (!ops) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in compute_gradients");
    int m = 0;
    for (int i = 0; i < n; i++)
        if (grads[i].op) ops[m++] = grads[i].op;
    if (m == 0) {
        vg_free(ops);
        return VG_OK;
    }
    vg_graph_push_scope(g, "tuple");
    vg_op *deps = group(g, ops, m, "group_deps");
    vg_free(ops);
    if (deps) {
        vg_graph_push_control_deps(g, &deps, 1);
        for (int i = 0; i < n; i++)
            if (grads[i].op) grads[i] = vg_identity(g, grads[i], "control_dependency");
        vg_graph_pop_control_deps(g);
    }
    vg_graph_pop_scope(g);
    return vg_graph_status(g, st);
}

vg_code vg_optimizer_compute_gradients(vg_optimizer *opt, vg_graph *g, vg_output loss, const vg_output *var_list,
                                       int nvars, vg_output *grads_out, vg_status *st) {
    if (!opt || !g) return vg_status_set(st, VG_INVALID_ARGUMENT, "compute_gradients: NULL optimizer or graph");
    if (vg_graph_status(g, st) != VG_OK) return st ? st->code : vg_graph_status(g, NULL);
    if (opt->wrap) return opt->wrap->compute_gradients(opt->wrap_ctx, opt->inner, g, loss, var_list, nvars, grads_out, st);
    vg_dtype ldt = vg_output_dtype(loss);
    if (!loss.op || (ldt != VG_FLOAT && ldt != VG_DOUBLE))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Invalid type %s for loss, expected: [float16, bfloat16, float32, float64].",
                             vg_dtype_name(ldt));
    if (!var_list) var_list = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nvars);
    if (nvars <= 0 || !var_list) return vg_status_set(st, VG_INVALID_ARGUMENT, "No variables to optimize.");
    for (int i = 0; i < nvars; i++) {
        vg_dtype dt = vg_is_resource_variable(var_list[i]) ? vg_resource_variable_dtype(var_list[i])
                                                           : vg_output_dtype(var_list[i]);
        if (dt != VG_FLOAT && dt != VG_DOUBLE)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Invalid type %s for %s, expected: [float16, bfloat16, float32, float64].",
                                 vg_dtype_name(dt), var_list[i].op ? vg_op_name(var_list[i].op) : "(null)");
    }
    vg_code rc = vg_gradients(g, &loss, 1, var_list, nvars, NULL, grads_out, st);
    if (rc == VG_OK) rc = vg__dist_auto_average(g, grads_out, nvars, st); /* more than one rank: the mean */
    if (rc != VG_OK || opt->gate != VG_GATE_GRAPH) return rc;
    return gate_graph(g, grads_out, nvars, st);
}

vg_op *vg_optimizer_minimize(vg_optimizer *opt, vg_graph *g, vg_output loss, const vg_output *var_list, int nvars,
                             vg_output global_step, const char *name) {
    if (!g) return NULL;
    if (vg_graph_status(g, NULL) != VG_OK) return NULL;
    vg_output *vars = NULL, *grads = NULL;
    vg_op *train = NULL;
    vg_status st;
    vg_status_clear(&st);
    if (!var_list) {
        /* copy: the trainable collection does not change while we build, but be safe */
        const vg_output *items = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nvars);
        vars = vg_malloc(sizeof(vg_output) * (size_t)(nvars > 0 ? nvars : 1));
        if (!vars) goto oom;
        if (nvars > 0) memcpy(vars, items, sizeof(vg_output) * (size_t)nvars);
        var_list = vars;
    }
    grads = vg_calloc((size_t)(nvars > 0 ? nvars : 1), sizeof(vg_output));
    if (!grads) goto oom;
    vg_code rc = vg_optimizer_compute_gradients(opt, g, loss, var_list, nvars, grads, &st);
    if (rc != VG_OK) {
        vg_graph_set_error(g, rc, "%s", st.code != VG_OK && st.msg[0] ? st.msg : "compute_gradients failed");
        goto done;
    }
    bool any = false;
    for (int i = 0; i < nvars; i++) any |= grads[i].op != NULL;
    if (!any) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "No gradients provided for any variable, check your graph for ops that do not support "
                           "gradients, between variables and loss %s.",
                           vg_op_name(loss.op));
        goto done;
    }
    train = vg_optimizer_apply_gradients(opt, g, grads, var_list, nvars, global_step, name);
    goto done;
oom:
    vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in minimize");
done:
    vg_free(vars);
    vg_free(grads);
    return train;
}
