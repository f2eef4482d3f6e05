/*
 * moving_averages.c - moving_averages.assign_moving_average(variable, value, decay,
 * zero_debias=True, name) of TF 1.15 (tensorflow/python/training/moving_averages.py),
 * the update that batch-norm code written by hand (research/resnet's _batch_norm) calls:
 *     variable -= (variable - value) * (1 - decay)
 * or, with zero_debias, TF's _zero_debias: two more variables created with get_variable
 * under the variable scope named after the variable (so their names repeat the scope:
 * "s/v" gets "s/s/v/biased" and "s/s/v/local_step", "_1", "_2" ... when taken), and
 *     biased -= (biased - value) * (1 - decay); local_step += 1;
 *     variable = biased / (1 - decay ^ local_step).
 * Ops are named as TF names them under the "AssignMovingAvg" name scope.
 */
#include "variable_internal.h"
#include "vigil/ops.h"
#include "vigil/train_lib.h"
#include "vigil/variable_scope.h"
#include "vigil/variables.h"
#include <stdio.h>
#include <string.h>

#define MA_NAME_MAX 1024

static vg_output none_out(void) {
    vg_output o = {NULL, 0};
    return o;
}

static bool is_ref_variable(vg_output v) {
    if (!v.op) return false;
    const char *t = vg_op_type(v.op);
    return !strcmp(t, "VariableV2") || !strcmp(t, "Variable");
}

/* _maybe_get_unique(name): name, or name_1, name_2 ... when "<scope>/<name>" exists. */
static void maybe_get_unique(vg_graph *g, const char *name, char *out, size_t len) {
    snprintf(out, len, "%s", name);
    if (vg_variable_scope_reuse(g) == VG_REUSE_TRUE) return;
    const char *vs = vg_variable_scope_name(g);
    char full[MA_NAME_MAX * 2];
    snprintf(full, sizeof full, "%s%s%s", vs, *vs ? "/" : "", name);
    if (!vg_variable_scope_find(g, full).var) return;
    for (int idx = 1;; idx++) {
        snprintf(full, sizeof full, "%s%s%s_%d", vs, *vs ? "/" : "", name, idx);
        if (!vg_variable_scope_find(g, full).var) {
            snprintf(out, len, "%s_%d", name, idx);
            return;
        }
    }
}

static vg_output assign_moving_average(vg_graph *g, vg_output variable, vg_output value, vg_output decay_in,
                                       double decay_c, bool zero_debias, const char *name) {
    if (!g) return none_out();
    if (vg_graph_status(g, NULL) != VG_OK) return none_out();
    if (!is_ref_variable(variable)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "assign_moving_average: %s is not a variable",
                           variable.op ? vg_op_name(variable.op) : "(null)");
        return none_out();
    }
    vg_dtype dt = vg_output_dtype(variable);
    if (dt != VG_FLOAT && dt != VG_DOUBLE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "assign_moving_average: variable %s must be float or double, not %s",
                           vg_op_name(variable.op), vg_dtype_name(dt));
        return none_out();
    }
    if (!value.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "assign_moving_average: no value for %s", vg_op_name(variable.op));
        return none_out();
    }
    vg_shape vs0 = vg_output_shape(variable), xs0 = vg_output_shape(value);
    bool shape_ok = vs0.ndims < 0 || xs0.ndims < 0 || vs0.ndims == xs0.ndims;
    for (int i = 0; shape_ok && vs0.ndims >= 0 && i < vs0.ndims && i < xs0.ndims; i++)
        if (vs0.dims[i] >= 0 && xs0.dims[i] >= 0 && vs0.dims[i] != xs0.dims[i]) shape_ok = false;
    if (!shape_ok) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "assign_moving_average: the value's shape (rank %d) does not match variable %s (rank %d)",
                           xs0.ndims, vg_op_name(variable.op), vs0.ndims);
        return none_out();
    }
    /* with ops.name_scope(name, "AssignMovingAvg") as scope */
    char full[MA_NAME_MAX], scope[MA_NAME_MAX + 2];
    vg_graph_unique_name(g, name ? name : "AssignMovingAvg", full, sizeof full);
    snprintf(scope, sizeof scope, "%s/", full);
    const char *slash = strrchr(full, '/');
    const char *base = slash ? slash + 1 : full;
    vg_graph_push_scope(g, "/");
    vg_graph_push_scope(g, scope);
    /* decay = convert_to_tensor(1.0 - decay, name="decay"), cast to the variable's dtype */
    vg_output decay = decay_in.op ? vg_sub(g, vg_const_f32(g, 1.0f, "sub/x"), decay_in, "sub")
                                  : vg_const_f32(g, (float)(1.0 - decay_c), "decay");
    if (vg_output_dtype(decay) != dt) decay = vg_cast(g, decay, dt, "Cast");
    vg_output upd;
    if (!zero_debias) {
        vg_output delta = vg_mul(g, vg_sub(g, variable, value, decay_in.op ? "sub_1" : "sub"), decay, "mul");
        vg_graph_pop_scope(g);
        vg_graph_pop_scope(g);
        return vg_assign_sub(g, variable, delta, base);
    }
    /* _zero_debias: with variable_scope(unbiased_var.name[:-2]) */
    const char *vname = vg_op_name(variable.op);
    if (!vg_variable_scope_push(g, vname, NULL)) {
        vg_graph_pop_scope(g);
        vg_graph_pop_scope(g);
        return none_out();
    }
    char bname[MA_NAME_MAX], sname[MA_NAME_MAX];
    maybe_get_unique(g, "biased", bname, sizeof bname);
    maybe_get_unique(g, "local_step", sname, sizeof sname);
    vg_shape vsh = vg_output_shape(variable);
    vg_get_variable_opts bo = {0};
    bo.dt = dt;
    bo.dims = vsh.dims;
    bo.ndims = vsh.ndims;
    bo.has_init = true;
    bo.init = vg_init_zeros();
    bo.not_trainable = true;
    vg_variable biased = vg_get_variable_ex(g, bname, &bo);
    vg_get_variable_opts so = bo;
    so.dims = NULL;
    so.ndims = 0;
    vg_variable local_step = vg_get_variable_ex(g, sname, &so);
    vg_variable_scope_pop(g);
    if (!biased.var || !local_step.var) {
        vg_graph_pop_scope(g);
        vg_graph_pop_scope(g);
        return none_out();
    }
    /* update_fn(v, value, biased_var, local_step), in the AssignMovingAvg scope */
    vg_output update_biased = vg_assign_sub(
        g, biased.ref, vg_mul(g, vg_sub(g, biased.ref, value, decay_in.op ? "sub_1" : "sub"), decay, "mul"), "AssignSub");
    vg_output update_local_step =
        vg_assign_add(g, local_step.ref, vg_const_fill(g, dt, NULL, 0, 1.0, "AssignAdd/value"), "AssignAdd");
    const char *s1 = decay_in.op ? "sub_2" : "sub_1", *s2 = decay_in.op ? "sub_3" : "sub_2";
    char s1x[32], s2x[32];
    snprintf(s1x, sizeof s1x, "%s/x", s1);
    snprintf(s2x, sizeof s2x, "%s/x", s2);
    vg_output one_minus = vg_sub(g, vg_const_fill(g, dt, NULL, 0, 1.0, s1x), decay, s1);
    vg_output bias_factor =
        vg_sub(g, vg_const_fill(g, dt, NULL, 0, 1.0, s2x), vg_pow(g, one_minus, update_local_step, "Pow"), s2);
    vg_output q = vg_div(g, update_biased, bias_factor, "truediv");
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    upd = vg_assign(g, variable, q, true, base);
    return upd;
}

vg_output vg_assign_moving_average(vg_graph *g, vg_output variable, vg_output value, double decay, bool zero_debias,
                                   const char *name) {
    return assign_moving_average(g, variable, value, none_out(), decay, zero_debias, name);
}

vg_output vg_assign_moving_average_t(vg_graph *g, vg_output variable, vg_output value, vg_output decay,
                                     bool zero_debias, const char *name) {
    if (g && !decay.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "assign_moving_average: decay tensor is required");
        return none_out();
    }
    return assign_moving_average(g, variable, value, decay, 0.0, zero_debias, name);
}

/* weighted_moving_average: variable_scope(name, "WeightedMovingAvg") with two zeros
 * get_variables, two assign_moving_average(zero_debias=False), truediv named after the
 * scope. */
vg_output vg_weighted_moving_average(vg_graph *g, vg_output value, double decay, vg_output weight, const char *name) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return none_out();
    if (!value.op || !weight.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "weighted_moving_average: value and weight are required");
        return none_out();
    }
    vg_variable_scope_opts so;
    memset(&so, 0, sizeof so);
    so.default_name = "WeightedMovingAvg";
    const char *scope = vg_variable_scope_push(g, name, &so);
    if (!scope) return none_out();
    char sname[MA_NAME_MAX];
    snprintf(sname, sizeof sname, "%s", scope);
    vg_shape vsh = vg_output_shape(value), wsh = vg_output_shape(weight);
    vg_get_variable_opts o = vg__train_var_opts(vg_output_dtype(value), vsh.dims, vsh.ndims, vg_init_zeros());
    o.not_trainable = true;
    vg_variable vxw = vg_get_variable_ex(g, "value_x_weight", &o);
    o.dt = vg_output_dtype(weight);
    o.dims = wsh.dims;
    o.ndims = wsh.ndims;
    vg_variable wv = vxw.var ? vg_get_variable_ex(g, "weight", &o) : vxw;
    vg_output r = none_out();
    if (wv.var) {
        vg_output num = vg_assign_moving_average(g, vxw.ref, vg_mul(g, value, weight, "mul"), decay, false, NULL);
        vg_output den = vg_assign_moving_average(g, wv.ref, weight, decay, false, NULL);
        /* truediv(name=scope.name): the full variable-scope name under the name scope */
        if (num.op && den.op) r = vg_div(g, num, den, sname);
    }
    vg_variable_scope_pop(g);
    return vg_graph_status(g, NULL) == VG_OK ? r : none_out();
}
