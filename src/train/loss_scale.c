/*
 * loss_scale.c - TF 1.15's loss scaling for float16 mixed precision on the public API:
 * FixedLossScale, DynamicLossScale (training/experimental/loss_scale.py) and
 * MixedPrecisionLossScaleOptimizer (loss_scale_optimizer.py), and
 * enable_mixed_precision_graph_rewrite(opt, loss_scale) (mixed_precision.py).
 *
 * DynamicLossScale's two variables are resource variables (TF's _add_weight:
 * use_resource=True, trainable=False): "current_loss_scale" (float32) and
 * "good_steps" (int64). update() builds TF's nested tf.conds; the optimizer wraps the
 * inner apply_gradients in a tf.cond on the all-finite check (optimizer_wrap.h is the
 * hook in optimizer.c).
 */
#include "optimizer_wrap.h"
#include "train_util.h"
#include "vigil/control_flow.h"
#include "vigil/loss_scale.h"
#include "vigil/mixed_precision.h"
#include "vigil/resource_variables.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>

struct vg_loss_scale {
    bool dynamic;
    double initial, multiplier;
    int64_t period;
    vg_graph *g;         /* the dynamic scale's variables' graph */
    vg_output scale_var; /* "current_loss_scale" handle */
    vg_output steps_var; /* "good_steps" handle */
};

vg_loss_scale *vg_fixed_loss_scale_new(double loss_scale_value, vg_status *st) {
    if (!(loss_scale_value >= 1)) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "loss_scale_value must be at least 1.");
        return NULL;
    }
    vg_loss_scale *ls = vg__train_calloc(sizeof *ls, st, "a loss scale");
    if (!ls) return NULL;
    ls->initial = loss_scale_value;
    ls->multiplier = 1;
    return ls;
}

/* _add_weight(name, initial_value, dtype): ResourceVariable(initial_value, name,
 * trainable=False) - "<name>/Initializer/initial_value" holds the start value. */
static vg_output add_weight(vg_graph *g, const char *name, vg_dtype dt, double initial) {
    char full[1024];
    vg_graph_unique_name(g, name, full, sizeof full);
    char verbatim[1040];
    snprintf(verbatim, sizeof verbatim, "%s/", full);
    vg_graph_push_scope(g, verbatim);
    vg_graph_push_scope(g, "Initializer");
    vg_output c = vg_const_fill(g, dt, NULL, 0, initial, "initial_value");
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    vg_output fail = {NULL, 0};
    if (!c.op) return fail;
    vg_resource_variable v = vg_resource_variable_new(g, name, c, 0);
    return v.handle_op ? v.handle : fail;
}

vg_loss_scale *vg_dynamic_loss_scale_new(vg_graph *g, double initial_loss_scale, int64_t increment_period,
                                         double multiplier, vg_status *st) {
    if (!g) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "DynamicLossScale: NULL graph");
        return NULL;
    }
    if (!(isfinite(initial_loss_scale) && initial_loss_scale > 0) || !(isfinite(multiplier) && multiplier > 0) ||
        increment_period < 1) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "DynamicLossScale: initial_loss_scale %g and multiplier %g must be finite and positive, "
                      "increment_period %lld at least 1",
                      initial_loss_scale, multiplier, (long long)increment_period);
        return NULL;
    }
    if (vg_graph_status(g, st) != VG_OK) return NULL;
    vg_loss_scale *ls = vg__train_calloc(sizeof *ls, st, "a loss scale");
    if (!ls) return NULL;
    ls->dynamic = true;
    ls->initial = initial_loss_scale;
    ls->period = increment_period;
    ls->multiplier = multiplier;
    ls->g = g;
    vg_graph_push_init_scope(g);
    ls->scale_var = add_weight(g, "current_loss_scale", VG_FLOAT, initial_loss_scale);
    if (ls->scale_var.op) ls->steps_var = add_weight(g, "good_steps", VG_INT64, 0);
    vg_graph_pop_init_scope(g);
    if (!ls->scale_var.op || !ls->steps_var.op) {
        if (vg_graph_status(g, st) == VG_OK) vg_status_set(st, VG_INTERNAL, "DynamicLossScale: variables not built");
        vg_free(ls);
        return NULL;
    }
    return ls;
}

vg_loss_scale *vg_dynamic_loss_scale_new_default(vg_graph *g, vg_status *st) {
    return vg_dynamic_loss_scale_new(g, 32768.0, 2000, 2.0, st);
}

vg_loss_scale *vg_loss_scale_get(vg_graph *g, const char *identifier, vg_status *st) {
    if (identifier && strcmp(identifier, "dynamic") == 0) return vg_dynamic_loss_scale_new_default(g, st);
    if (identifier && *identifier) {
        char *end = NULL;
        errno = 0;
        double v = strtod(identifier, &end);
        if (end && *end == 0 && errno == 0) return vg_fixed_loss_scale_new(v, st);
    }
    vg_status_set(st, VG_INVALID_ARGUMENT, "Could not interpret loss scale identifier: %s",
                  identifier ? identifier : "None");
    return NULL;
}

void vg_loss_scale_free(vg_loss_scale *ls) { vg_free(ls); }

bool vg_loss_scale_is_dynamic(const vg_loss_scale *ls) { return ls && ls->dynamic; }
double vg_loss_scale_initial(const vg_loss_scale *ls) { return ls ? ls->initial : 0; }
int64_t vg_loss_scale_increment_period(const vg_loss_scale *ls) { return ls ? ls->period : 0; }
double vg_loss_scale_multiplier(const vg_loss_scale *ls) { return ls ? ls->multiplier : 0; }
vg_output vg_loss_scale_current_loss_scale(const vg_loss_scale *ls) {
    vg_output none = {NULL, 0};
    return ls && ls->dynamic ? ls->scale_var : none;
}
vg_output vg_loss_scale_good_steps(const vg_loss_scale *ls) {
    vg_output none = {NULL, 0};
    return ls && ls->dynamic ? ls->steps_var : none;
}

static bool check_graph(vg_loss_scale *ls, vg_graph *g) {
    if (!g) return false;
    if (vg_graph_status(g, NULL) != VG_OK) return false;
    if (!ls) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "loss scale is NULL");
        return false;
    }
    if (ls->dynamic && ls->g != g) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "DynamicLossScale: its variables current_loss_scale and good_steps live in another graph");
        return false;
    }
    return true;
}

vg_output vg_loss_scale_value(vg_loss_scale *ls, vg_graph *g) {
    vg_output fail = {NULL, 0};
    if (!check_graph(ls, g)) return fail;
    if (!ls->dynamic) return vg_const_f32(g, (float)ls->initial, "Const");
    return vg_read_variable_op(g, ls->scale_var, VG_FLOAT, NULL);
}

/* ---- DynamicLossScale.update ------------------------------------------------------ */

typedef struct upd_ctx {
    vg_loss_scale *ls;
    vg_output new_scale; /* incr_loss_scale's scale * multiplier */
} upd_ctx;

static vg_code op_out(vg_graph *g, vg_op *op, vg_output *outs) {
    outs[0] = vg_out(op, 0);
    return op ? VG_OK : (vg_graph_status(g, NULL) != VG_OK ? vg_graph_status(g, NULL) : VG_INTERNAL);
}

static vg_code br_no_op(vg_graph *g, void *user, vg_output *outs) {
    (void)user;
    return op_out(g, vg_no_op(g, NULL), outs);
}

/* _assign_if_finite's true branch: var.assign(value) */
static vg_code br_assign_scale(vg_graph *g, void *user, vg_output *outs) {
    upd_ctx *c = user;
    return op_out(g, vg_resource_variable_assign(g, c->ls->scale_var, c->new_scale, NULL), outs);
}

/* incr_loss_scale: group(_assign_if_finite(scale, scale * multiplier), good_steps.assign(0)) */
static vg_code br_incr(vg_graph *g, void *user, vg_output *outs) {
    upd_ctx *c = user;
    vg_output cur = vg_read_variable_op(g, c->ls->scale_var, VG_FLOAT, NULL);
    c->new_scale = vg_mul(g, cur, vg_const_f32(g, (float)c->ls->multiplier, "mul/y"), "mul");
    vg_output fin = vg_is_finite(g, c->new_scale, NULL);
    vg_output m = {NULL, 0};
    vg_status st;
    if (vg_cond(g, fin, br_assign_scale, br_no_op, c, 1, &m, "cond", &st) != VG_OK) return st.code;
    vg_op *zero = vg_resource_variable_assign(g, c->ls->steps_var, vg_const_i64(g, 0, "Const"), NULL);
    if (!zero) return op_out(g, NULL, outs);
    vg_op *parts[2] = {m.op, zero};
    return op_out(g, vg_group(g, parts, 2, "group_deps"), outs);
}

/* lambda: good_steps.assign_add(1) */
static vg_code br_incr_steps(vg_graph *g, void *user, vg_output *outs) {
    upd_ctx *c = user;
    return op_out(g, vg_resource_variable_assign_add(g, c->ls->steps_var, vg_const_i64(g, 1, "Const"), NULL), outs);
}

/* update_if_finite_grads */
static vg_code br_finite(vg_graph *g, void *user, vg_output *outs) {
    upd_ctx *c = user;
    vg_output steps = vg_read_variable_op(g, c->ls->steps_var, VG_INT64, NULL);
    vg_output next = vg_add(g, steps, vg_const_i64(g, 1, "add/y"), "add");
    vg_output pred = vg_greater_equal(g, next, vg_const_i64(g, c->ls->period, "GreaterEqual/y"), "GreaterEqual");
    vg_output m = {NULL, 0};
    vg_status st;
    if (vg_cond(g, pred, br_incr, br_incr_steps, c, 1, &m, "cond", &st) != VG_OK) return st.code;
    outs[0] = m;
    return VG_OK;
}

/* update_if_not_finite_grads: group(good_steps.assign(0), scale.assign(max(scale / multiplier, 1))) */
static vg_code br_not_finite(vg_graph *g, void *user, vg_output *outs) {
    upd_ctx *c = user;
    vg_output cur = vg_read_variable_op(g, c->ls->scale_var, VG_FLOAT, NULL);
    vg_output q = vg_div(g, cur, vg_const_f32(g, (float)c->ls->multiplier, "truediv/y"), "truediv");
    vg_output nv = vg_maximum(g, q, vg_const_f32(g, 1.0f, "Maximum/y"), "Maximum");
    vg_op *zero = vg_resource_variable_assign(g, c->ls->steps_var, vg_const_i64(g, 0, "Const"), NULL);
    vg_op *set = zero ? vg_resource_variable_assign(g, c->ls->scale_var, nv, NULL) : NULL;
    if (!set) return op_out(g, NULL, outs);
    vg_op *parts[2] = {zero, set};
    return op_out(g, vg_group(g, parts, 2, "group_deps"), outs);
}

/* _is_all_finite: reduce_all([reduce_all(is_finite(g)) for g in grads if g is not None]) */
static vg_output all_finite(vg_graph *g, const vg_output *grads, int n) {
    vg_output fail = {NULL, 0};
    int m = 0;
    for (int i = 0; i < n; i++) m += grads[i].op != NULL;
    vg_output *each = vg_malloc((size_t)(m > 0 ? m : 1) * sizeof *each);
    if (!each) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in loss scale update");
        return fail;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!grads[i].op) continue;
        vg_output f = vg_is_finite(g, grads[i], NULL);
        vg_shape s = vg_output_shape(f);
        if (s.ndims == 0) {
            each[k++] = f;
            continue;
        }
        /* reduce over every axis (Range of the rank when the rank is unknown) */
        vg_output axes;
        if (s.ndims > 0) {
            int32_t ax[64];
            for (int d = 0; d < s.ndims && d < 64; d++) ax[d] = d;
            axes = vg_const_i32_vec(g, ax, s.ndims, "Const");
        } else {
            axes = vg_range(g, vg_const_i32(g, 0, "range/start"), vg_rank(g, f, "Rank"),
                            vg_const_i32(g, 1, "range/delta"), "range");
        }
        each[k++] = vg_all(g, f, axes, false, "All");
    }
    vg_output packed = m == 0 ? vg_const_bool(g, true, "Const") : vg_pack(g, each, m, 0, "packed");
    vg_free(each);
    if (m == 0) return packed;
    return vg_all(g, packed, vg_const_i32_vec(g, (const int32_t[]){0}, 1, "Const"), false, "All");
}

vg_op *vg_loss_scale_update(vg_loss_scale *ls, vg_graph *g, const vg_output *grads, int n,
                            vg_output *should_apply_gradients) {
    if (!check_graph(ls, g)) return NULL;
    if (n > 0 && !grads) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "loss scale update: NULL gradients");
        return NULL;
    }
    if (!ls->dynamic) {
        vg_op *noop = vg_no_op(g, NULL);
        if (should_apply_gradients) *should_apply_gradients = vg_const_bool(g, true, "Const");
        return noop;
    }
    vg_output fin = all_finite(g, grads, n);
    if (!fin.op) return NULL;
    upd_ctx c = {ls, {NULL, 0}};
    vg_output m = {NULL, 0};
    vg_status st;
    if (vg_cond(g, fin, br_finite, br_not_finite, &c, 1, &m, "cond", &st) != VG_OK) {
        if (vg_graph_status(g, NULL) == VG_OK) vg_graph_set_error(g, st.code, "%s", st.msg);
        return NULL;
    }
    if (should_apply_gradients) *should_apply_gradients = fin;
    return m.op;
}

/* ---- MixedPrecisionLossScaleOptimizer -------------------------------------------- */

typedef struct lso {
    vg_loss_scale *ls;
} lso;

static void lso_free(void *ctx) {
    lso *w = ctx;
    if (!w) return;
    vg_loss_scale_free(w->ls);
    vg_free(w);
}

/* _scale_grad: grad * (1 / loss_scale); an IndexedSlices (UnsortedSegmentSum) keeps its
 * form with its values scaled. */
static vg_output scale_grad(vg_graph *g, vg_output grad, vg_output recip) {
    if (grad.index == 0 && strcmp(vg_op_type(grad.op), "UnsortedSegmentSum") == 0) {
        vg_output v = vg_op_input(grad.op, 0);
        vg_dtype vt = vg_output_dtype(v);
        if (vt == VG_FLOAT) {
            vg_output sv = vg_mul(g, v, recip, "mul");
            vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", "UnsortedSegmentSum");
            vg_op_builder_add_input(b, sv);
            vg_op_builder_add_input(b, vg_op_input(grad.op, 1));
            vg_op_builder_add_input(b, vg_op_input(grad.op, 2));
            return vg_out(vg_op_builder_finish(b), 0);
        }
    }
    return vg_mul(g, grad, recip, "mul");
}

static vg_code lso_compute(void *ctx, vg_optimizer *inner, vg_graph *g, vg_output loss, const vg_output *var_list,
                           int nvars, vg_output *grads_out, vg_status *st) {
    lso *w = ctx;
    if (!loss.op || vg_output_dtype(loss) != VG_FLOAT)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "MixedPrecisionLossScaleOptimizer: loss must be float32 (got %s): it is multiplied by "
                             "the float32 loss scale",
                             loss.op ? vg_dtype_name(vg_output_dtype(loss)) : "none");
    vg_output scale = vg_loss_scale_value(w->ls, g);
    vg_output scaled = scale.op ? vg_mul(g, loss, scale, "mul") : scale;
    if (!scaled.op) return vg_graph_status(g, st);
    int n = nvars;
    if (!var_list) vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    vg_code rc = vg_optimizer_compute_gradients(inner, g, scaled, var_list, nvars, grads_out, st);
    if (rc != VG_OK) return rc;
    for (int i = 0; i < n; i++)
        if (grads_out[i].op && vg_output_dtype(grads_out[i]) != VG_FLOAT)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "MixedPrecisionLossScaleOptimizer: gradient %d is %s, not float32 (unscaled by a "
                                 "float32 loss scale)",
                                 i, vg_dtype_name(vg_output_dtype(grads_out[i])));
    vg_output s2 = vg_loss_scale_value(w->ls, g);
    vg_output recip = s2.op ? vg_div(g, vg_const_f32(g, 1.0f, "truediv/x"), s2, "truediv") : s2;
    if (!recip.op) return vg_graph_status(g, st);
    for (int i = 0; i < n; i++)
        if (grads_out[i].op) grads_out[i] = scale_grad(g, grads_out[i], recip);
    return vg_graph_status(g, st);
}

typedef struct apply_ctx {
    vg_optimizer *inner;
    const vg_output *grads, *vars;
    int n;
    vg_output global_step;
    const char *name;
} apply_ctx;

/* apply_fn: the inner apply_gradients, named "<name>-wrapped"; an op as the branch's
 * output (a NoOp after it when the train op is global_step's AssignAdd). */
static vg_code br_apply(vg_graph *g, void *user, vg_output *outs) {
    apply_ctx *a = user;
    vg_op *train = vg_optimizer_apply_gradients(a->inner, g, a->grads, a->vars, a->n, a->global_step, a->name);
    if (train && vg_op_num_outputs(train) > 0) train = vg_group(g, &train, 1, "group_deps");
    return op_out(g, train, outs);
}

static vg_op *lso_apply(void *ctx, vg_optimizer *inner, vg_graph *g, const vg_output *grads, const vg_output *vars,
                        int n, vg_output global_step, const char *name) {
    lso *w = ctx;
    if (!w->ls->dynamic) return vg_optimizer_apply_gradients(inner, g, grads, vars, n, global_step, name);
    if (n > 0 && (!grads || !vars)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "apply_gradients: NULL gradients or variables");
        return NULL;
    }
    const char *base = name ? name : vg_optimizer_name(inner);
    char wrapped[1024];
    snprintf(wrapped, sizeof wrapped, "%s-wrapped", base);
    vg_output should = {NULL, 0};
    vg_op *update = vg_loss_scale_update(w->ls, g, grads, n, &should);
    if (!update) return NULL;
    apply_ctx a = {inner, grads, vars, n, global_step, wrapped};
    vg_output m = {NULL, 0};
    vg_status st;
    if (vg_cond(g, should, br_apply, br_no_op, &a, 1, &m, "cond", &st) != VG_OK) {
        if (vg_graph_status(g, NULL) == VG_OK) vg_graph_set_error(g, st.code, "%s", st.msg);
        return NULL;
    }
    vg_op *parts[2] = {m.op, update};
    return vg_group(g, parts, 2, base);
}

static const vg__optimizer_wrap_ops lso_ops = {lso_compute, lso_apply, lso_free};

vg_optimizer *vg_mixed_precision_loss_scale_optimizer_new(vg_optimizer *opt, vg_loss_scale *loss_scale,
                                                          vg_status *st) {
    if (!opt || !loss_scale) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "MixedPrecisionLossScaleOptimizer: NULL %s",
                      !opt ? "optimizer" : "loss_scale");
        return NULL;
    }
    void *ctx = NULL;
    if (vg__optimizer_wrap_of(opt, &ctx, NULL) == &lso_ops) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "\"opt\" must not already be an instance of a MixedPrecisionLossScaleOptimizer. "
                      "`enable_mixed_precision_graph_rewrite` will automatically wrap the optimizer with a "
                      "MixedPrecisionLossScaleOptimizer.");
        return NULL;
    }
    lso *w = vg_calloc(1, sizeof *w);
    vg_optimizer *o = w ? vg__optimizer_wrap(opt, &lso_ops, w) : NULL;
    if (!o) {
        vg_free(w);
        VG_OOM(st, "a MixedPrecisionLossScaleOptimizer");
        return NULL;
    }
    w->ls = loss_scale;
    return o;
}

vg_loss_scale *vg_optimizer_loss_scale(const vg_optimizer *opt) {
    void *ctx = NULL;
    if (vg__optimizer_wrap_of(opt, &ctx, NULL) != &lso_ops) return NULL;
    return ((lso *)ctx)->ls;
}

vg_optimizer *vg_optimizer_wrapped(const vg_optimizer *opt) {
    vg_optimizer *inner = NULL;
    if (vg__optimizer_wrap_of(opt, NULL, &inner) != &lso_ops) return NULL;
    return inner;
}

vg_optimizer *vg_enable_mixed_precision_graph_rewrite_with_loss_scale(vg_optimizer *opt, vg_loss_scale *loss_scale,
                                                                      vg_status *st) {
    vg_optimizer *w = vg_mixed_precision_loss_scale_optimizer_new(opt, loss_scale, st);
    if (!w) return NULL;
    vg_enable_mixed_precision_graph_rewrite(w);
    return w;
}
