/*
 * losses.c - tf.losses as TF 1.15's losses_impl.py (compute_weighted_loss with its four
 * reductions, _num_present, _safe_mean as div_no_nan named "value") and
 * tf.contrib.layers.l1/l2_regularizer, from public builders. div_no_nan is built as
 * Select(den == 0, 0, num / Select(den == 0, 1, den)) so its gradient stays finite.
 */
#include "train_util.h"
#include "vigil/losses.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const vg_loss_opts DEFAULTS = {0}; /* TF's defaults (SUM_BY_NONZERO_WEIGHTS) */

static vg_output none(void) { return vg_out(NULL, 0); }

static vg_output to_f32(vg_graph *g, vg_output x, const char *name) {
    return vg_output_dtype(x) == VG_FLOAT ? x : vg_cast(g, x, VG_FLOAT, name);
}

/* shape.assert_is_compatible_with */
static bool compatible(vg_graph *g, vg_output a, vg_output b) {
    vg_shape sa = vg_output_shape(a), sb = vg_output_shape(b);
    bool ok = sa.ndims < 0 || sb.ndims < 0 || sa.ndims == sb.ndims;
    for (int i = 0; ok && sa.ndims >= 0 && sb.ndims >= 0 && i < sa.ndims; i++)
        if (sa.dims[i] >= 0 && sb.dims[i] >= 0 && sa.dims[i] != sb.dims[i]) ok = false;
    if (!ok) {
        char x[128], y[128];
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Shapes %s and %s are incompatible", vg_shape_str(&sa, x, sizeof x),
                           vg_shape_str(&sb, y, sizeof y));
    }
    return ok;
}

/* weights_broadcast_ops.assert_broadcastable, statically: scalar, or same rank with each
 * dim 1 or equal. */
static bool broadcastable(vg_graph *g, vg_output w, vg_output v) {
    vg_shape sw = vg_output_shape(w), sv = vg_output_shape(v);
    bool ok = vg__train_weights_broadcastable(sw, sv);
    if (!ok) {
        char x[128], y[128];
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "weights can not be broadcast to values. values.shape=%s. weights.shape=%s.",
                           vg_shape_str(&sv, x, sizeof x), vg_shape_str(&sw, y, sizeof y));
    }
    return ok;
}

static vg_output div_no_nan(vg_graph *g, vg_output x, vg_output y, const char *name) {
    vg_output zero = vg_const_f32(g, 0.0f, "zeros"), is0 = vg_equal(g, y, zero, "Equal");
    vg_output safe = vg_select(g, is0, vg_ones_like(g, y, "ones_like"), y, "Select");
    return vg_select(g, is0, vg_zeros_like(g, x, "zeros_like"), vg_div(g, x, safe, "truediv"), name);
}

static vg_output num_elements(vg_graph *g, vg_output losses) {
    vg__train_scope s;
    vg__train_scope_open(g, NULL, "num_elements", &s);
    vg_graph_pop_scope(g);
    return vg_cast(g, vg_size(g, losses, s.base), VG_FLOAT, "Cast");
}

static vg_output num_present(vg_graph *g, vg_output losses, vg_output weights) {
    if (!weights.op) return num_elements(g, losses);
    vg__train_scope s;
    vg__train_scope_open(g, NULL, "num_present", &s);
    vg_output w = to_f32(g, weights, "Cast");
    vg_output present = vg_select(g, vg_equal(g, w, vg_const_f32(g, 0.0f, "Equal/y"), "Equal"),
                                  vg_zeros_like(g, w, "zeros_like"), vg_ones_like(g, w, "ones_like"), "Select");
    /* broadcast_weights: present * ones_like(losses) */
    present = vg_mul(g, present, vg_ones_like(g, losses, "ones_like_1"), "broadcast_weights");
    vg_graph_pop_scope(g);
    return vg_reduce_sum(g, present, NULL, -1, false, s.base);
}

/* compute_weighted_loss inside the loss's (already open) scope. */
static vg_output weighted(vg_graph *g, vg_output losses, const vg_loss_opts *o) {
    if (!losses.op) return none();
    if (o->weights.op && !broadcastable(g, o->weights, losses)) return none();
    vg_dtype in_dt = vg_output_dtype(losses);
    vg_output l = to_f32(g, losses, "Cast");
    vg_output w = o->weights.op ? to_f32(g, o->weights, "Cast_1") : vg_const_f32(g, 1.0f, "Cast_1/x");
    vg_output wl = vg_mul(g, l, w, "Mul");
    vg_output loss;
    if (o->reduction == VG_REDUCTION_NONE) {
        loss = wl;
    } else {
        loss = vg_reduce_sum(g, wl, NULL, -1, false, "Sum");
        if (o->reduction == VG_REDUCTION_MEAN) {
            vg_output den = vg_reduce_sum(g, vg_mul(g, vg_ones_like(g, l, "ones_like"), w, "Mul_1"), NULL, -1, false, "Sum_1");
            loss = div_no_nan(g, vg_reduce_sum(g, loss, NULL, -1, false, "Sum_2"), den, "value");
        } else if (o->reduction == VG_REDUCTION_SUM_BY_NONZERO_WEIGHTS) {
            loss = div_no_nan(g, vg_reduce_sum(g, loss, NULL, -1, false, "Sum_1"), num_present(g, l, o->weights), "value");
        } else if (o->reduction == VG_REDUCTION_SUM_OVER_BATCH_SIZE) {
            loss = div_no_nan(g, vg_reduce_sum(g, loss, NULL, -1, false, "Sum_1"), num_elements(g, l), "value");
        } else if (o->reduction != VG_REDUCTION_SUM) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Invalid Reduction Key %d.", (int)o->reduction);
            return none();
        }
    }
    if (in_dt != VG_FLOAT) loss = vg_cast(g, loss, in_dt, "Cast_2");
    if (loss.op && (!o->loss_collection || o->loss_collection[0]))
        vg_graph_add_to_collection(g, o->loss_collection ? o->loss_collection : VG_LOSSES, loss);
    return loss;
}

vg_output vg_losses_compute_weighted_loss(vg_graph *g, vg_output losses, const vg_loss_opts *opts) {
    const vg_loss_opts *o = opts ? opts : &DEFAULTS;
    if (!losses.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "compute_weighted_loss: losses is required");
        return none();
    }
    vg__train_scope s;
    vg__train_scope_open(g, o->scope, "weighted_loss", &s);
    vg_output r = weighted(g, losses, o);
    vg_graph_pop_scope(g);
    return r;
}

/* The common frame: a scope, a shape check, casts to float32, then weighted(). */
/* The start of a loss: both inputs (a: the labels, b: the predictions or logits) given,
 * else INVALID_ARGUMENT "<what>: <args> are required"; with check_shapes, b's shape
 * compatible with a's; then the name scope (o->scope or dflt) opened into *s. False,
 * with nothing opened, on failure. */
static bool loss_begin(vg_graph *g, const vg_loss_opts *o, vg_output a, vg_output b, bool check_shapes,
                       const char *what, const char *args, const char *dflt, vg__train_scope *s) {
    if (!a.op || !b.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: %s are required", what, args);
        return false;
    }
    if (check_shapes && !compatible(g, b, a)) return false;
    vg__train_scope_open(g, o->scope, dflt, s);
    return true;
}

typedef enum { L_ABS, L_MSE, L_HUBER, L_HINGE, L_LOG } pair_kind;

static vg_output pair_loss(vg_graph *g, pair_kind k, vg_output labels, vg_output pred, double param,
                           const vg_loss_opts *opts) {
    static const char *names[] = {"absolute_difference", "mean_squared_error", "huber_loss", "hinge_loss", "log_loss"};
    const vg_loss_opts *o = opts ? opts : &DEFAULTS;
    vg__train_scope s;
    if (!loss_begin(g, o, labels, pred, true, names[k], "labels and predictions", names[k], &s)) return none();
    vg_output p = to_f32(g, pred, "ToFloat"), l = to_f32(g, labels, "ToFloat_1"), losses;
    switch (k) {
    case L_ABS: losses = vg_abs(g, vg_sub(g, p, l, "Sub"), "Abs"); break;
    case L_MSE: losses = vg_squared_difference(g, p, l, "SquaredDifference"); break;
    case L_HUBER: {
        vg_output ae = vg_abs(g, vg_sub(g, p, l, "Sub"), "Abs");
        vg_output delta = vg_const_f32(g, (float)param, "Minimum/y");
        vg_output quad = vg_minimum(g, ae, delta, "Minimum");
        vg_output lin = vg_sub(g, ae, quad, "Sub_1");
        losses = vg_add(g, vg_mul(g, vg_const_f32(g, 0.5f, "Const"), vg_mul(g, quad, quad, "Mul"), "Mul_1"),
                        vg_mul(g, vg_const_f32(g, (float)param, "Mul_2/x"), lin, "Mul_2"), "Add");
        break;
    }
    case L_HINGE: { /* labels: logits here is `pred` */
        vg_output ones = vg_ones_like(g, l, "ones_like");
        vg_output lab = vg_sub(g, vg_mul(g, vg_const_f32(g, 2.0f, "mul/x"), l, "mul"), ones, "Sub");
        losses = vg_relu(g, vg_sub(g, ones, vg_mul(g, lab, p, "Mul"), "Sub_1"), "Relu");
        break;
    }
    default: { /* L_LOG */
        vg_output eps = vg_const_f32(g, (float)param, "add/y");
        vg_output one = vg_const_f32(g, 1.0f, "sub/x");
        vg_output a = vg_neg(g, vg_mul(g, l, vg_log(g, vg_add(g, p, eps, "add"), "Log"), "Mul"), "Neg");
        vg_output b = vg_mul(g, vg_sub(g, one, l, "sub"),
                             vg_log(g, vg_add(g, vg_sub(g, vg_const_f32(g, 1.0f, "sub_1/x"), p, "sub_1"), eps, "add_1"),
                                    "Log_1"),
                             "Mul_1");
        losses = vg_sub(g, a, b, "sub_2");
        break;
    }
    }
    vg_output r = weighted(g, losses, o);
    vg_graph_pop_scope(g);
    return r;
}

vg_output vg_losses_absolute_difference(vg_graph *g, vg_output labels, vg_output predictions, const vg_loss_opts *opts) {
    return pair_loss(g, L_ABS, labels, predictions, 0, opts);
}
vg_output vg_losses_mean_squared_error(vg_graph *g, vg_output labels, vg_output predictions, const vg_loss_opts *opts) {
    return pair_loss(g, L_MSE, labels, predictions, 0, opts);
}
vg_output vg_losses_huber_loss(vg_graph *g, vg_output labels, vg_output predictions, double delta,
                               const vg_loss_opts *opts) {
    return pair_loss(g, L_HUBER, labels, predictions, delta, opts);
}
vg_output vg_losses_hinge_loss(vg_graph *g, vg_output labels, vg_output logits, const vg_loss_opts *opts) {
    return pair_loss(g, L_HINGE, labels, logits, 0, opts);
}
vg_output vg_losses_log_loss(vg_graph *g, vg_output labels, vg_output predictions, double epsilon,
                             const vg_loss_opts *opts) {
    return pair_loss(g, L_LOG, labels, predictions, epsilon, opts);
}

vg_output vg_losses_sigmoid_cross_entropy(vg_graph *g, vg_output labels, vg_output logits, double label_smoothing,
                                          const vg_loss_opts *opts) {
    const vg_loss_opts *o = opts ? opts : &DEFAULTS;
    vg__train_scope s;
    if (!loss_begin(g, o, labels, logits, true, "sigmoid_cross_entropy", "multi_class_labels and logits",
                    "sigmoid_cross_entropy_loss", &s))
        return none();
    vg_output lab = vg_output_dtype(labels) == vg_output_dtype(logits) ? labels
                                                                       : vg_cast(g, labels, vg_output_dtype(logits), "Cast");
    if (label_smoothing > 0) {
        lab = vg_add(g, vg_mul(g, lab, vg_const_fill(g, vg_output_dtype(logits), NULL, 0, 1 - label_smoothing, "mul/y"), "mul"),
                     vg_const_fill(g, vg_output_dtype(logits), NULL, 0, 0.5 * label_smoothing, "add/y"), "add");
    }
    vg_output losses = vg_sigmoid_cross_entropy_with_logits(g, lab, logits, "xentropy");
    vg_output r = weighted(g, losses, o);
    vg_graph_pop_scope(g);
    return r;
}

vg_output vg_losses_softmax_cross_entropy(vg_graph *g, vg_output onehot_labels, vg_output logits,
                                          double label_smoothing, const vg_loss_opts *opts) {
    const vg_loss_opts *o = opts ? opts : &DEFAULTS;
    vg__train_scope s;
    if (!loss_begin(g, o, onehot_labels, logits, true, "softmax_cross_entropy", "onehot_labels and logits",
                    "softmax_cross_entropy_loss", &s))
        return none();
    vg_dtype dt = vg_output_dtype(logits);
    vg_output lab = vg_output_dtype(onehot_labels) == dt ? onehot_labels : vg_cast(g, onehot_labels, dt, "Cast");
    if (label_smoothing > 0) {
        vg_output shp = vg_shape_op(g, lab, VG_INT32, "Shape");
        int32_t b = -1, e = 0, st1 = 1;
        vg_strided_slice_masks m = {0, 1, 0, 0, 1};
        vg_output nc = vg_cast(g, vg_strided_slice_c(g, shp, &b, &e, &st1, 1, &m, "strided_slice"), dt, "Cast_1");
        vg_output neg = vg_div(g, vg_const_fill(g, dt, NULL, 0, label_smoothing, "truediv/x"), nc, "truediv");
        lab = vg_add(g, vg_mul(g, lab, vg_const_fill(g, dt, NULL, 0, 1 - label_smoothing, "mul/y"), "mul"), neg, "add");
    }
    lab = vg_stop_gradient(g, lab, "labels_stop_gradient");
    vg_op *x = vg_softmax_xent(g, logits, lab, "xentropy");
    vg_output r = x ? weighted(g, vg_out(x, 0), o) : none();
    vg_graph_pop_scope(g);
    return r;
}

vg_output vg_losses_sparse_softmax_cross_entropy(vg_graph *g, vg_output labels, vg_output logits,
                                                 const vg_loss_opts *opts) {
    const vg_loss_opts *o = opts ? opts : &DEFAULTS;
    vg__train_scope s;
    if (!loss_begin(g, o, labels, logits, false, "sparse_softmax_cross_entropy", "labels and logits",
                    "sparse_softmax_cross_entropy_loss", &s))
        return none();
    vg_op *x = vg_sparse_softmax_xent(g, logits, labels, "xentropy");
    vg_output r = x ? weighted(g, vg_out(x, 0), o) : none();
    vg_graph_pop_scope(g);
    return r;
}

vg_output vg_losses_cosine_distance(vg_graph *g, vg_output labels, vg_output predictions, int axis,
                                    const vg_loss_opts *opts) {
    const vg_loss_opts *o = opts ? opts : &DEFAULTS;
    vg__train_scope s;
    if (!loss_begin(g, o, labels, predictions, true, "cosine_distance", "labels and predictions",
                    "cosine_distance_loss", &s))
        return none();
    vg_output p = to_f32(g, predictions, "ToFloat"), l = to_f32(g, labels, "ToFloat_1");
    int32_t ax = axis;
    vg_output sum = vg_reduce_sum(g, vg_mul(g, p, l, "Mul"), &ax, 1, true, "Sum");
    vg_output losses = vg_sub(g, vg_const_f32(g, 1.0f, "sub/x"), sum, "sub");
    vg_output r = weighted(g, losses, o);
    vg_graph_pop_scope(g);
    return r;
}

vg_code vg_losses_add_loss(vg_graph *g, vg_output loss, const char *collection) {
    if (!loss.op) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "add_loss: loss is required");
    return vg_graph_add_to_collection(g, collection ? collection : VG_LOSSES, loss);
}

vg_output vg_losses_get_regularization_loss(vg_graph *g, const char *name) {
    int n = 0;
    const vg_output *r = vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    if (n == 0) return vg_const_f32(g, 0.0f, "Const");
    return vg_add_n(g, r, n, name ? name : "total_regularization_loss");
}

vg_output vg_losses_get_total_loss(vg_graph *g, bool add_regularization_losses, const char *name) {
    int nl = 0, nr = 0;
    const vg_output *l = vg_graph_collection(g, VG_LOSSES, &nl);
    const vg_output *r = add_regularization_losses ? vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &nr) : NULL;
    if (nl + nr == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "No losses found");
        return none();
    }
    vg_output *all = malloc(sizeof(vg_output) * (size_t)(nl + nr));
    if (!all) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in get_total_loss");
        return none();
    }
    if (nl) memcpy(all, l, sizeof(vg_output) * (size_t)nl);
    if (nr) memcpy(all + nl, r, sizeof(vg_output) * (size_t)nr);
    /* tf.add_n names a single input's Identity too: always name the result */
    vg_output t = nl + nr == 1 ? vg_identity(g, all[0], name ? name : "total_loss")
                               : vg_add_n(g, all, nl + nr, name ? name : "total_loss");
    free(all);
    return t;
}

static vg_output regularizer(vg_graph *g, double scale, vg_output w, bool l2) {
    const char *what = l2 ? "l2_regularizer" : "l1_regularizer";
    if (scale < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Setting a scale less than 0 on a regularizer: %g", scale);
        return none();
    }
    if (scale == 0) return none();
    if (!w.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: weights are required", what);
        return none();
    }
    vg__train_scope s;
    vg__train_scope_open(g, NULL, what, &s);
    vg_output sc = vg_const_fill(g, vg_output_dtype(w), NULL, 0, scale, "scale");
    vg_output v = l2 ? vg_l2_loss(g, w, "L2Loss") : vg_reduce_sum(g, vg_abs(g, w, "Abs"), NULL, -1, false, "Sum");
    vg_graph_pop_scope(g);
    return vg_mul(g, sc, v, s.base);
}

vg_output vg_l2_regularizer(vg_graph *g, double scale, vg_output weights) { return regularizer(g, scale, weights, true); }
vg_output vg_l1_regularizer(vg_graph *g, double scale, vg_output weights) { return regularizer(g, scale, weights, false); }
