/*
 * metrics.c - tf.metrics as TF 1.15's metrics_impl.py builds them, from public
 * builders: metric_variable (zeros, local, METRIC_VARIABLES), mean (div_no_nan of
 * total and count), _count_condition, precision/recall (where(tp + fp > 0, ...)),
 * _confusion_matrix_at_thresholds (p > threshold, tiled over the thresholds, asserts
 * on [0, 1]), auc (trapezoidal/minoring/majoring over the ROC or PR curve),
 * _streaming_confusion_matrix + mean_iou, and the sparse top-k metrics
 * (_streaming_sparse_{true,false}_{positive,negative}_at_k) for dense label ids.
 *
 * Deviations, none visible in values: _remove_squeezable_dimensions is applied from the
 * static shapes only (a trailing dimension of 1 on the side of higher rank);
 * confusion_matrix accumulates with ScatterNd instead of a SparseTensor add; the
 * thresholds are compared by broadcasting instead of a second Tile. div_no_nan is
 * Select(den == 0, 0, num / Select(den == 0, 1, den)) (no DivNoNan op yet).
 */
#include "vigil/metrics.h"
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/variables.h"
#include <stdio.h>
#include <string.h>

#define NAME_LEN 1024

static vg_output none(void) { return vg_out(NULL, 0); }
static vg_metric fail(void) { return (vg_metric){{NULL, 0}, {NULL, 0}}; }

static const vg_metric_opts DEFAULTS = {0};

/* variable_scope(name, default): pushes the name made unique (and marked used, so the
 * next metric gets "<name>_1"). */
static void scope_open(vg_graph *g, const char *name, const char *def) { vg_graph_push_scope(g, name ? name : def); }

/* A metric's options (opts, or the defaults), its variable scope (o->name, else def)
 * opened by scope_open; the caller pops it. */
static const vg_metric_opts *metric_scope(vg_graph *g, const vg_metric_opts *opts, const char *def) {
    const vg_metric_opts *o = opts ? opts : &DEFAULTS;
    scope_open(g, o->name, def);
    return o;
}

static bool ok(vg_graph *g) { return vg_graph_status(g, NULL) == VG_OK; }

static vg_output cast_to(vg_graph *g, vg_output x, vg_dtype dt, const char *name) {
    if (!x.op || vg_output_dtype(x) == dt) return x;
    return vg_cast(g, x, dt, name ? name : "Cast");
}

/* metric_variable(shape, dtype, name): tf.Variable(lambda: zeros(shape, dtype),
 * trainable=False, collections=[LOCAL_VARIABLES, METRIC_VARIABLES], name=name): named
 * in the current name scope (made unique; the variable scope plays no part), its
 * initial value under "<name>/Initializer/". */
static vg_variable metric_var(vg_graph *g, const char *name, vg_dtype dt, const int64_t *dims, int nd) {
    char full[NAME_LEN];
    vg_graph_unique_name(g, name, full, sizeof full);
    vg_variable v = vg__train_create_variable(g, full, true, dt, dims, nd, vg_init_zeros(), VG_VAR_LOCAL);
    if (v.var) vg_graph_add_to_collection(g, VG_METRIC_VARIABLES, v.ref);
    return v;
}

static bool shapes_compatible(vg_shape a, vg_shape b) {
    if (a.ndims < 0 || b.ndims < 0) return true;
    if (a.ndims != b.ndims) return false;
    for (int i = 0; i < a.ndims; i++)
        if (a.dims[i] >= 0 && b.dims[i] >= 0 && a.dims[i] != b.dims[i]) return false;
    return true;
}

/* assert_is_compatible_with, as a sticky INVALID_ARGUMENT naming both shapes. */
static bool check_compatible(vg_graph *g, const char *what, vg_output a, vg_output b) {
    vg_shape sa = vg_output_shape(a), sb = vg_output_shape(b);
    if (shapes_compatible(sa, sb)) return true;
    char x[128], y[128];
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: Shapes %s and %s are incompatible (labels and predictions)", what,
                       vg_shape_str(&sa, x, sizeof x), vg_shape_str(&sb, y, sizeof y));
    return false;
}

/* confusion_matrix.remove_squeezable_dimensions from the static shapes: squeezes a
 * trailing 1 of the input whose rank is one higher. */
static void remove_squeezable(vg_graph *g, vg_output *labels, vg_output *predictions) {
    vg_shape sl = vg_output_shape(*labels), sp = vg_output_shape(*predictions);
    if (sl.ndims < 0 || sp.ndims < 0) return;
    int32_t ax = -1;
    if (sp.ndims == sl.ndims + 1 && sp.dims[sp.ndims - 1] == 1)
        *predictions = vg_squeeze(g, *predictions, &ax, 1, "Squeeze");
    else if (sl.ndims == sp.ndims + 1 && sl.dims[sl.ndims - 1] == 1)
        *labels = vg_squeeze(g, *labels, &ax, 1, "Squeeze");
}

/* weights_broadcast_ops.assert_broadcastable, statically: scalar, or the values' rank
 * with each dimension 1 or equal. */
static bool check_weights(vg_graph *g, const char *what, vg_output w, vg_output v) {
    vg_shape sw = vg_output_shape(w), sv = vg_output_shape(v);
    bool good = vg__train_weights_broadcastable(sw, sv);
    if (!good) {
        char x[128], y[128];
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "%s: weights can not be broadcast to values. values.shape=%s. weights.shape=%s.", what,
                           vg_shape_str(&sv, x, sizeof x), vg_shape_str(&sw, y, sizeof y));
    }
    return good;
}

/* weights_broadcast_ops.broadcast_weights(cast(weights, float32), values). */
static vg_output broadcast_weights(vg_graph *g, vg_output w, vg_output values) {
    w = cast_to(g, w, VG_FLOAT, NULL);
    return vg_mul(g, w, vg_ones_like(g, values, "ones_like"), "broadcast_weights");
}

static vg_output div_no_nan(vg_graph *g, vg_output x, vg_output y, const char *name) {
    vg_output zero = vg_const_f32(g, 0.0f, "zeros"), is0 = vg_equal(g, y, zero, "Equal");
    vg_output safe = vg_select(g, is0, vg_ones_like(g, y, "ones_like"), y, "Select");
    return vg_select(g, is0, vg_zeros_like(g, x, "zeros_like"), vg_div(g, x, safe, "truediv"), name);
}

/* Adds the results to the requested collections; fail() if the graph is in error. */
static vg_metric finish(vg_graph *g, const vg_metric_opts *o, vg_output value, vg_output update) {
    if (!ok(g) || !value.op || !update.op) {
        if (ok(g)) vg_graph_set_error(g, VG_INTERNAL, "metric: a builder returned no output");
        return fail();
    }
    if (o->metrics_collection) vg_graph_add_to_collection(g, o->metrics_collection, value);
    if (o->updates_collection) vg_graph_add_to_collection(g, o->updates_collection, update);
    return (vg_metric){value, update};
}

static bool have_graph(vg_graph *g, const char *what, vg_output a, vg_output b, bool need_b) {
    if (!g) return false;
    if (!ok(g)) return false;
    if (!a.op || (need_b && !b.op)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: %s is NULL", what, !a.op ? "the first input" : "predictions");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* mean and the metrics built on it */

/* The body of tf.metrics.mean under an open scope. */
static vg_metric mean_body(vg_graph *g, vg_output values, const vg_metric_opts *o) {
    values = cast_to(g, values, VG_FLOAT, NULL);
    vg_variable total = metric_var(g, "total", VG_FLOAT, NULL, 0);
    vg_variable count = metric_var(g, "count", VG_FLOAT, NULL, 0);
    if (!total.var || !count.var) return fail();
    vg_output num;
    if (!o->weights.op) {
        num = vg_cast(g, vg_size(g, values, "Size"), VG_FLOAT, "ToFloat");
    } else {
        if (!check_weights(g, "mean", o->weights, values)) return fail();
        vg_output w = broadcast_weights(g, o->weights, values);
        values = vg_mul(g, values, w, "Mul");
        num = vg_reduce_sum(g, w, NULL, -1, false, "Sum");
    }
    vg_output upd_total = vg_assign_add(g, total.ref, vg_reduce_sum(g, values, NULL, -1, false, "Sum"), "AssignAdd");
    /* TF: with control_dependencies([values]). Not on a Placeholder: vigil's executor
     * runs a control input even when it is fed, so the dependency would demand a feed
     * that was given (ordering only; a placeholder has no effect to wait for). */
    vg_op *dep = values.op;
    bool gate = strncmp(vg_op_type(dep), "Placeholder", 11) != 0;
    if (gate) vg_graph_push_control_deps(g, &dep, 1);
    vg_output upd_count = vg_assign_add(g, count.ref, num, "AssignAdd");
    if (gate) vg_graph_pop_control_deps(g);
    vg_output zero = vg_const_f32(g, 0.0f, "Maximum/y");
    vg_output value = div_no_nan(g, total.read, vg_maximum(g, count.read, zero, "Maximum"), "value");
    vg_output update = div_no_nan(g, upd_total, vg_maximum(g, upd_count, zero, "Maximum"), "update_op");
    return finish(g, o, value, update);
}

static vg_metric scoped_mean(vg_graph *g, vg_output values, const vg_metric_opts *o, const char *def) {
    scope_open(g, o->name, def);
    vg_metric m = mean_body(g, values, o);
    vg_graph_pop_scope(g);
    return m;
}

vg_metric vg_metrics_mean(vg_graph *g, vg_output values, const vg_metric_opts *opts) {
    if (!have_graph(g, "mean", values, values, false)) return fail();
    return scoped_mean(g, values, opts ? opts : &DEFAULTS, "mean");
}

/* Squeeze, shape check and the dtype rule shared by accuracy and the error metrics. */
static bool prepare_pair(vg_graph *g, const char *what, vg_output *labels, vg_output *predictions) {
    remove_squeezable(g, labels, predictions);
    if (!ok(g)) return false;
    return check_compatible(g, what, *predictions, *labels);
}

vg_metric vg_metrics_accuracy(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts) {
    if (!have_graph(g, "accuracy", labels, predictions, true)) return fail();
    const vg_metric_opts *o = metric_scope(g, opts, "accuracy");
    vg_metric m = fail();
    if (prepare_pair(g, "accuracy", &labels, &predictions)) {
        predictions = cast_to(g, predictions, vg_output_dtype(labels), NULL);
        vg_output correct = vg_cast(g, vg_equal(g, predictions, labels, "Equal"), VG_FLOAT, "ToFloat");
        m = mean_body(g, correct, o);
    }
    vg_graph_pop_scope(g);
    return m;
}

static vg_metric error_metric(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts,
                              const char *def, bool squared) {
    if (!have_graph(g, def, labels, predictions, true)) return fail();
    const vg_metric_opts *o = metric_scope(g, opts, def);
    vg_metric m = fail();
    if (prepare_pair(g, def, &labels, &predictions)) {
        predictions = cast_to(g, predictions, VG_FLOAT, NULL);
        labels = cast_to(g, labels, VG_FLOAT, NULL);
        vg_output err = squared ? vg_squared_difference(g, labels, predictions, "SquaredDifference")
                                : vg_abs(g, vg_sub(g, predictions, labels, "sub"), "Abs");
        m = mean_body(g, err, o);
    }
    vg_graph_pop_scope(g);
    return m;
}

vg_metric vg_metrics_mean_squared_error(vg_graph *g, vg_output labels, vg_output predictions,
                                        const vg_metric_opts *opts) {
    return error_metric(g, labels, predictions, opts, "mean_squared_error", true);
}

vg_metric vg_metrics_mean_absolute_error(vg_graph *g, vg_output labels, vg_output predictions,
                                         const vg_metric_opts *opts) {
    return error_metric(g, labels, predictions, opts, "mean_absolute_error", false);
}

/* root_mean_squared_error: mean_squared_error under the name "root_mean_squared_error",
 * then Sqrt of its value and of its update (outside the scope, as TF). */
vg_metric vg_metrics_root_mean_squared_error(vg_graph *g, vg_output labels, vg_output predictions,
                                             const vg_metric_opts *opts) {
    const vg_metric_opts *o = opts ? opts : &DEFAULTS;
    vg_metric_opts inner = {.weights = o->weights, .name = o->name ? o->name : "root_mean_squared_error"};
    vg_metric m = error_metric(g, labels, predictions, &inner, "root_mean_squared_error", true);
    if (!m.value.op) return m;
    vg_output value = vg_sqrt(g, m.value, "Sqrt");
    vg_output update = vg_sqrt(g, m.update, "Sqrt_1");
    return finish(g, o, value, update);
}

/* mean_relative_error: mean(where(normalizer == 0, 0, |labels - predictions| /
 * normalizer)). */
vg_metric vg_metrics_mean_relative_error(vg_graph *g, vg_output labels, vg_output predictions, vg_output normalizer,
                                         const vg_metric_opts *opts) {
    const char *def = "mean_relative_error";
    if (!have_graph(g, def, labels, predictions, true)) return fail();
    if (!normalizer.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: normalizer is NULL", def);
        return fail();
    }
    const vg_metric_opts *o = metric_scope(g, opts, def);
    vg_metric m = fail();
    if (prepare_pair(g, def, &labels, &predictions) && check_compatible(g, def, normalizer, predictions)) {
        predictions = cast_to(g, predictions, VG_FLOAT, NULL);
        labels = cast_to(g, labels, VG_FLOAT, NULL);
        vg_output nz = cast_to(g, normalizer, VG_FLOAT, NULL);
        vg_output is0 = vg_equal(g, nz, vg_const_f32(g, 0.0f, "Equal/y"), "Equal");
        vg_output safe = vg_select(g, is0, vg_ones_like(g, nz, "ones_like"), nz, "Select");
        vg_output rel = vg_select(g, is0, vg_zeros_like(g, labels, "zeros_like"),
                                  vg_div(g, vg_abs(g, vg_sub(g, labels, predictions, "sub"), "Abs"), safe, "truediv"),
                                  "Select_1");
        m = mean_body(g, rel, o);
    }
    vg_graph_pop_scope(g);
    return m;
}

/* mean_cosine_distance: 1 - mean(reduce_sum(predictions * labels, [dim], keepdims)). */
vg_metric vg_metrics_mean_cosine_distance(vg_graph *g, vg_output labels, vg_output predictions, int dim,
                                          const vg_metric_opts *opts) {
    const char *def = "mean_cosine_distance";
    if (!have_graph(g, def, labels, predictions, true)) return fail();
    const vg_metric_opts *o = opts ? opts : &DEFAULTS;
    vg_shape sp = vg_output_shape(predictions);
    if (sp.ndims >= 0 && (dim < 0 || dim >= sp.ndims)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: dim %d out of range for rank %d", def, dim, sp.ndims);
        return fail();
    }
    remove_squeezable(g, &labels, &predictions);
    if (!ok(g) || !check_compatible(g, def, predictions, labels)) return fail();
    vg_output prod = vg_mul(g, cast_to(g, predictions, VG_FLOAT, NULL), cast_to(g, labels, VG_FLOAT, NULL), "Mul");
    int32_t ax = dim;
    vg_output radial = vg_reduce_sum(g, prod, &ax, 1, true, "Sum");
    vg_metric_opts inner = {.weights = o->weights, .name = o->name ? o->name : def};
    vg_metric mm = scoped_mean(g, radial, &inner, def);
    if (!mm.value.op) return fail();
    vg_output one = vg_const_f32(g, 1.0f, "sub/x");
    return finish(g, o, vg_sub(g, one, mm.value, "sub"), vg_sub(g, one, mm.update, "sub_1"));
}

/* percentage_below(values, threshold): mean(values < threshold) in the scope
 * "percentage_below_threshold". */
vg_metric vg_metrics_percentage_below(vg_graph *g, vg_output values, double threshold, const vg_metric_opts *opts) {
    const char *def = "percentage_below_threshold";
    if (!have_graph(g, def, values, values, false)) return fail();
    const vg_metric_opts *o = opts ? opts : &DEFAULTS;
    vg_dtype dt = vg_output_dtype(values);
    vg_output thr = dt == VG_DOUBLE ? vg_const_f64(g, threshold, "Less/y") : vg_const_f32(g, (float)threshold, "Less/y");
    vg_output below = vg_cast(g, vg_less(g, cast_to(g, values, dt == VG_DOUBLE ? VG_DOUBLE : VG_FLOAT, NULL), thr, "Less"),
                              VG_FLOAT, "Cast");
    return scoped_mean(g, below, o, def);
}

/* mean_tensor(values): the element-wise mean over the batches seen, variables
 * "total_tensor" and "count_tensor" of values' (fully defined) shape. */
vg_metric vg_metrics_mean_tensor(vg_graph *g, vg_output values, const vg_metric_opts *opts) {
    const char *def = "mean";
    if (!have_graph(g, "mean_tensor", values, values, false)) return fail();
    const vg_metric_opts *o = opts ? opts : &DEFAULTS;
    vg_shape sv = vg_output_shape(values);
    if (!vg_shape_is_fully_defined(&sv)) {
        char b[128];
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "mean_tensor: values need a fully defined shape, got %s",
                           vg_shape_str(&sv, b, sizeof b));
        return fail();
    }
    scope_open(g, o->name, def);
    vg_metric m = fail();
    vg_output v = cast_to(g, values, VG_FLOAT, NULL);
    vg_variable total = metric_var(g, "total_tensor", VG_FLOAT, sv.dims, sv.ndims);
    vg_variable count = metric_var(g, "count_tensor", VG_FLOAT, sv.dims, sv.ndims);
    if (total.var && count.var) {
        vg_output num = vg_ones_like(g, v, "ones_like");
        if (o->weights.op && check_weights(g, "mean_tensor", o->weights, v)) {
            vg_output w = broadcast_weights(g, o->weights, v);
            v = vg_mul(g, v, w, "Mul");
            num = vg_mul(g, num, w, "Mul_1");
        }
        if (ok(g)) {
            vg_output ut = vg_assign_add(g, total.ref, v, "AssignAdd");
            vg_output uc = vg_assign_add(g, count.ref, num, "AssignAdd_1");
            vg_output zero = vg_const_f32(g, 0.0f, "Maximum/y");
            vg_output value = div_no_nan(g, total.read, vg_maximum(g, count.read, zero, "Maximum"), "value");
            vg_output update = div_no_nan(g, ut, vg_maximum(g, uc, zero, "Maximum_1"), "update_op");
            m = finish(g, o, value, update);
        }
    }
    vg_graph_pop_scope(g);
    return m;
}

/* mean_per_class_accuracy(labels, predictions, num_classes): per class correct / seen
 * ("count" / "total", [num_classes]), averaged. TF's scatter_add into the variables is
 * an AssignAdd of an UnsortedSegmentSum over the labels here. */
vg_metric vg_metrics_mean_per_class_accuracy(vg_graph *g, vg_output labels, vg_output predictions, int num_classes,
                                             const vg_metric_opts *opts) {
    const char *what = "mean_per_class_accuracy";
    if (!have_graph(g, what, labels, predictions, true)) return fail();
    if (num_classes < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: num_classes must be positive, got %d", what, num_classes);
        return fail();
    }
    const vg_metric_opts *o = metric_scope(g, opts, "mean_accuracy");
    vg_metric m = fail();
    int64_t flat = -1, nc = num_classes;
    vg_output l = cast_to(g, labels, VG_INT64, NULL), p = predictions;
    if (vg_output_shape(l).ndims != 1) l = vg_reshape_c(g, l, &flat, 1, "Reshape");
    if (vg_output_shape(p).ndims != 1) p = vg_reshape_c(g, p, &flat, 1, "Reshape_1");
    if (!ok(g) || !check_compatible(g, what, p, l)) goto done;
    vg_variable total = metric_var(g, "total", VG_FLOAT, &nc, 1);
    vg_variable count = metric_var(g, "count", VG_FLOAT, &nc, 1);
    if (!total.var || !count.var) goto done;
    vg_output ones = vg_ones_like(g, cast_to(g, l, VG_FLOAT, "ToFloat"), "ones");
    p = cast_to(g, p, VG_INT64, NULL);
    vg_output correct = vg_cast(g, vg_equal(g, p, l, "Equal"), VG_FLOAT, "ToFloat_1");
    if (o->weights.op) {
        vg_output w = cast_to(g, o->weights, VG_FLOAT, NULL);
        if (vg_output_shape(w).ndims > 1) w = vg_reshape_c(g, w, &flat, 1, "Reshape_2");
        correct = vg_mul(g, correct, w, "mul");
        ones = vg_mul(g, ones, w, "mul_1");
    }
    /* labels outside [0, num_classes) fail as scatter_add does */
    vg_output in_range = vg_logical_and(
        g, vg_reduce_all(g, vg_greater_equal(g, l, vg_const_i64(g, 0, "zero"), "GreaterEqual"), NULL, -1, false, "All"),
        vg_reduce_all(g, vg_less(g, l, vg_const_i64(g, nc, "num_classes"), "Less"), NULL, -1, false, "All_1"),
        "LogicalAnd");
    vg_output msg = vg_const_string(g, "labels must be in [0, num_classes)", "Const");
    vg_op *chk = vg_assert(g, in_range, &msg, 1, 3, "assert_in_range/Assert");
    vg_output segs = vg_const_i64(g, nc, "num_segments");
    vg_graph_push_control_deps(g, &chk, 1);
    vg_output per_total = vg_identity(g, ones, "ones_checked");
    vg_graph_pop_control_deps(g);
    vg_output sums[2];
    vg_output data[2] = {per_total, correct};
    for (int i = 0; i < 2; i++) {
        vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", i ? "ScatterAdd_1" : "ScatterAdd");
        vg_op_builder_add_input(b, data[i]);
        vg_op_builder_add_input(b, l);
        vg_op_builder_add_input(b, segs);
        sums[i] = vg_out(vg_op_builder_finish(b), 0);
    }
    vg_output ut = vg_assign_add(g, total.ref, sums[0], "AssignAdd");
    vg_output uc = vg_assign_add(g, count.ref, sums[1], "AssignAdd_1");
    vg_output zero = vg_const_f32(g, 0.0f, "Maximum/y");
    vg_output per_class = div_no_nan(g, count.read, vg_maximum(g, total.read, zero, "Maximum"), "div_no_nan");
    vg_output value = vg_reduce_mean(g, per_class, NULL, -1, false, "mean_accuracy");
    vg_output update = div_no_nan(g, uc, vg_maximum(g, ut, zero, "Maximum_1"), "update_op");
    m = finish(g, o, value, update);
done:
    vg_graph_pop_scope(g);
    return m;
}

/* ------------------------------------------------------------------------ */
/* true/false positives/negatives, precision, recall */

typedef enum cond_kind { TP, FP, TN, FN } cond_kind;
static const char *const COND_NAME[4] = {"true_positives", "false_positives", "true_negatives", "false_negatives"};

static vg_output to_bool(vg_graph *g, vg_output x) { return cast_to(g, x, VG_BOOL, NULL); }

/* labels/predictions as bool (squeezed, checked) and the condition's mask. */
static vg_output condition(vg_graph *g, cond_kind k, vg_output labels, vg_output predictions) {
    vg_output l = k == TP || k == FN ? labels : vg_logical_not(g, labels, "LogicalNot");
    vg_output p = k == TP || k == FP ? predictions : vg_logical_not(g, predictions, "LogicalNot");
    return vg_logical_and(g, l, p, "LogicalAnd");
}

/* _count_condition under the metric's scope. */
static vg_metric count_condition(vg_graph *g, vg_output mask, const vg_metric_opts *o, const char *what) {
    vg_variable count = metric_var(g, "count", VG_FLOAT, NULL, 0);
    if (!count.var) return fail();
    vg_output values = vg_cast(g, mask, VG_FLOAT, "ToFloat");
    if (o->weights.op) {
        if (!check_weights(g, what, o->weights, values)) return fail();
        values = vg_mul(g, values, cast_to(g, o->weights, VG_FLOAT, NULL), "Mul");
    }
    vg_output value = vg_identity(g, count.read, "Identity");
    vg_output update = vg_assign_add(g, count.ref, vg_reduce_sum(g, values, NULL, -1, false, "Sum"), "AssignAdd");
    return finish(g, o, value, update);
}

static vg_metric count_metric(vg_graph *g, cond_kind k, vg_output labels, vg_output predictions,
                              const vg_metric_opts *opts) {
    const char *what = COND_NAME[k];
    if (!have_graph(g, what, labels, predictions, true)) return fail();
    const vg_metric_opts *o = metric_scope(g, opts, what);
    vg_metric m = fail();
    predictions = to_bool(g, predictions);
    labels = to_bool(g, labels);
    if (prepare_pair(g, what, &labels, &predictions))
        m = count_condition(g, condition(g, k, labels, predictions), o, what);
    vg_graph_pop_scope(g);
    return m;
}

vg_metric vg_metrics_true_positives(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts) {
    return count_metric(g, TP, labels, predictions, opts);
}
vg_metric vg_metrics_false_positives(vg_graph *g, vg_output labels, vg_output predictions,
                                     const vg_metric_opts *opts) {
    return count_metric(g, FP, labels, predictions, opts);
}
vg_metric vg_metrics_true_negatives(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts) {
    return count_metric(g, TN, labels, predictions, opts);
}
vg_metric vg_metrics_false_negatives(vg_graph *g, vg_output labels, vg_output predictions,
                                     const vg_metric_opts *opts) {
    return count_metric(g, FN, labels, predictions, opts);
}

/* where(tp + other > 0, tp / (tp + other), 0, name) */
static vg_output ratio_or_zero(vg_graph *g, vg_output tp, vg_output other, const char *name) {
    vg_output den = vg_add(g, tp, other, "add");
    vg_output pos = vg_greater(g, den, vg_const_f32(g, 0.0f, "Greater/y"), "Greater");
    vg_output r = vg_div(g, tp, vg_add(g, tp, other, "add"), "div");
    return vg_select(g, pos, r, vg_zeros_like(g, r, "zeros_like"), name);
}

static vg_metric pr_metric(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts,
                           const char *def, cond_kind other) {
    if (!have_graph(g, def, labels, predictions, true)) return fail();
    const vg_metric_opts *o = metric_scope(g, opts, def);
    vg_metric m = fail();
    predictions = to_bool(g, predictions);
    labels = to_bool(g, labels);
    if (prepare_pair(g, def, &labels, &predictions)) {
        vg_metric_opts inner = {.weights = o->weights};
        vg_metric tp = count_metric(g, TP, labels, predictions, &inner);
        vg_metric ot = count_metric(g, other, labels, predictions, &inner);
        if (tp.value.op && ot.value.op) {
            vg_output value = ratio_or_zero(g, tp.value, ot.value, "value");
            vg_output update = ratio_or_zero(g, tp.update, ot.update, "update_op");
            m = finish(g, o, value, update);
        }
    }
    vg_graph_pop_scope(g);
    return m;
}

vg_metric vg_metrics_precision(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts) {
    return pr_metric(g, labels, predictions, opts, "precision", FP);
}

vg_metric vg_metrics_recall(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts) {
    return pr_metric(g, labels, predictions, opts, "recall", FN);
}

/* ------------------------------------------------------------------------ */
/* confusion matrix at thresholds, auc */

/* _confusion_matrix_at_thresholds: for each kind whose bit is in `includes`
 * (1 << TP, ...), creates the [nt] variable and its update. Variables are created in
 * TF's order tp, fn, tn, fp. */
static bool confusion_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions, const double *thr, int nt,
                                    vg_output weights, unsigned includes, vg_output values[4], vg_output updates[4]) {
    vg_output p = cast_to(g, predictions, VG_FLOAT, NULL);
    vg_output msg = vg_const_string(g, "predictions must be in [0, 1]", "Const");
    vg_output ge = vg_reduce_all(g, vg_greater_equal(g, p, vg_const_f32(g, 0.0f, "Cast"), "GreaterEqual"), NULL, -1,
                                 false, "All");
    vg_output le = vg_reduce_all(g, vg_less_equal(g, p, vg_const_f32(g, 1.0f, "Cast_1"), "LessEqual"), NULL, -1, false,
                                 "All");
    vg_op *asserts[2] = {vg_assert(g, ge, &msg, 1, 3, "assert_greater_equal/Assert"),
                         vg_assert(g, le, &msg, 1, 3, "assert_less_equal/Assert")};
    if (!ok(g)) return false;
    vg_graph_push_control_deps(g, asserts, 2);
    p = vg_identity(g, p, "Identity");
    vg_output l = to_bool(g, labels);
    vg_graph_pop_control_deps(g);
    remove_squeezable(g, &l, &p);
    if (!ok(g) || !check_compatible(g, "confusion_matrix_at_thresholds", p, l)) return false;
    if (weights.op && !check_weights(g, "confusion_matrix_at_thresholds", weights, p)) return false;

    float *tv = vg_malloc(sizeof(float) * (size_t)nt);
    if (!tv) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory building metric thresholds");
        return false;
    }
    for (int i = 0; i < nt; i++) tv[i] = (float)thr[i];
    int64_t tdims[2] = {nt, 1};
    vg_output thresh = vg_const_array(g, VG_FLOAT, tdims, 2, tv, "Const");
    vg_free(tv);

    int64_t col[2] = {-1, 1}, row[2] = {1, -1};
    vg_output p2 = vg_reshape_c(g, p, col, 2, "Reshape");
    vg_output l2 = vg_reshape_c(g, l, row, 2, "Reshape_1");
    int32_t mult[2] = {nt, 1};
    vg_output multiples = vg_const_i32_vec(g, mult, 2, "Tile/multiples");
    vg_output pred_pos = vg_greater(g, vg_tile(g, vg_transpose_c(g, p2, (int32_t[]){1, 0}, 2, "transpose"), multiples,
                                                "Tile"),
                                    thresh, "Greater");
    vg_output label_pos = vg_tile(g, l2, multiples, "Tile_1");
    vg_output pred_neg = vg_logical_not(g, pred_pos, "LogicalNot");
    vg_output label_neg = vg_logical_not(g, label_pos, "LogicalNot_1");
    vg_output wt = none();
    if (weights.op) {
        vg_output w = broadcast_weights(g, weights, p);
        wt = vg_tile(g, vg_reshape_c(g, w, row, 2, "Reshape_2"), multiples, "Tile_2");
    }
    static const cond_kind order[4] = {TP, FN, TN, FP};
    for (int i = 0; i < 4; i++) {
        cond_kind k = order[i];
        if (!(includes & (1u << k))) continue;
        vg_variable v = metric_var(g, COND_NAME[k], VG_FLOAT, (int64_t[]){nt}, 1);
        if (!v.var) return false;
        vg_output lab = k == TP || k == FN ? label_pos : label_neg;
        vg_output prd = k == TP || k == FP ? pred_pos : pred_neg;
        vg_output is = vg_cast(g, vg_logical_and(g, lab, prd, "LogicalAnd"), VG_FLOAT, "ToFloat");
        if (wt.op) is = vg_mul(g, is, wt, "mul");
        int32_t ax = 1;
        updates[k] = vg_assign_add(g, v.ref, vg_reduce_sum(g, is, &ax, 1, false, "Sum"), "AssignAdd");
        values[k] = v.read;
    }
    return ok(g);
}

typedef vg_metric (*thresholds_finish_fn)(vg_graph *g, const vg_metric_opts *o, const vg_output values[4],
                                          const vg_output updates[4], int arg);

/* The *_at_thresholds metrics: the checks (errors named "<what><suffix>"), the scope
 * o->name or what, the confusion counts in includes, then fin(..., arg) makes the
 * metric of them. */
static vg_metric thresholds_metric(vg_graph *g, const char *what, const char *suffix, vg_output labels,
                                   vg_output predictions, const double *thresholds, int nt,
                                   const vg_metric_opts *opts, unsigned includes, thresholds_finish_fn fin, int arg) {
    if (!have_graph(g, what, labels, predictions, true)) return fail();
    if (!thresholds || nt < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s%s: needs at least one threshold, got %d", what, suffix, nt);
        return fail();
    }
    const vg_metric_opts *o = metric_scope(g, opts, what);
    vg_output values[4] = {{0}}, updates[4] = {{0}};
    vg_metric m = fail();
    if (confusion_at_thresholds(g, labels, predictions, thresholds, nt, o->weights, includes, values, updates))
        m = fin(g, o, values, updates, arg);
    vg_graph_pop_scope(g);
    return m;
}

/* true_positives_at_thresholds and the like: the count of kind k. */
static vg_metric count_finish(vg_graph *g, const vg_metric_opts *o, const vg_output values[4],
                              const vg_output updates[4], int k) {
    return finish(g, o, vg_identity(g, values[k], "Identity"), updates[k]);
}

static vg_metric at_thresholds(vg_graph *g, cond_kind k, vg_output labels, vg_output predictions,
                               const double *thresholds, int nt, const vg_metric_opts *opts) {
    return thresholds_metric(g, COND_NAME[k], "_at_thresholds", labels, predictions, thresholds, nt, opts, 1u << k,
                             count_finish, (int)k);
}

vg_metric vg_metrics_true_positives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                  const double *thresholds, int nthresholds,
                                                  const vg_metric_opts *opts) {
    return at_thresholds(g, TP, labels, predictions, thresholds, nthresholds, opts);
}
vg_metric vg_metrics_false_positives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                   const double *thresholds, int nthresholds,
                                                   const vg_metric_opts *opts) {
    return at_thresholds(g, FP, labels, predictions, thresholds, nthresholds, opts);
}
vg_metric vg_metrics_true_negatives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                  const double *thresholds, int nthresholds,
                                                  const vg_metric_opts *opts) {
    return at_thresholds(g, TN, labels, predictions, thresholds, nthresholds, opts);
}
vg_metric vg_metrics_false_negatives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                   const double *thresholds, int nthresholds,
                                                   const vg_metric_opts *opts) {
    return at_thresholds(g, FN, labels, predictions, thresholds, nthresholds, opts);
}

/* precision_at_thresholds / recall_at_thresholds: tp / (1e-7 + tp + other), named
 * "precision_value" / "precision_update_op" (recall_...). */
static vg_metric pr_finish(vg_graph *g, const vg_metric_opts *o, const vg_output values[4],
                           const vg_output updates[4], int recall) {
    cond_kind other = recall ? FN : FP;
    const char *pre = recall ? "recall" : "precision";
    char vn[64], un[64];
    snprintf(vn, sizeof vn, "%s_value", pre);
    snprintf(un, sizeof un, "%s_update_op", pre);
    vg_output eps = vg_const_f32(g, 1e-7f, "add/x");
    vg_output value = vg_div(g, values[TP], vg_add(g, vg_add(g, eps, values[TP], "add"), values[other], "add_1"), vn);
    vg_output update =
        vg_div(g, updates[TP], vg_add(g, vg_add(g, eps, updates[TP], "add_2"), updates[other], "add_3"), un);
    return finish(g, o, value, update);
}

static vg_metric pr_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions, const double *thresholds,
                                  int nt, const vg_metric_opts *opts, bool recall) {
    const char *what = recall ? "recall_at_thresholds" : "precision_at_thresholds";
    return thresholds_metric(g, what, "", labels, predictions, thresholds, nt, opts,
                             (1u << TP) | (1u << (recall ? FN : FP)), pr_finish, recall);
}

vg_metric vg_metrics_precision_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                             const double *thresholds, int nthresholds, const vg_metric_opts *opts) {
    return pr_at_thresholds(g, labels, predictions, thresholds, nthresholds, opts, false);
}

vg_metric vg_metrics_recall_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                          const double *thresholds, int nthresholds, const vg_metric_opts *opts) {
    return pr_at_thresholds(g, labels, predictions, thresholds, nthresholds, opts, true);
}

enum { SUM_TRAPEZOIDAL, SUM_MINORING, SUM_MAJORING };

/* compute_auc(tp, fn, tn, fp, name) */
static vg_output compute_auc(vg_graph *g, const vg_output v[4], int n, bool roc, int summation, const char *name) {
    vg_output eps = vg_const_f32(g, 1e-6f, "add/y");
    vg_output rec = vg_div(g, vg_add(g, v[TP], eps, "add"),
                           vg_add(g, vg_add(g, v[TP], v[FN], "add_1"), eps, "add_2"), "div");
    vg_output x, y;
    if (roc) {
        x = vg_div(g, v[FP], vg_add(g, vg_add(g, v[FP], v[TN], "add_3"), eps, "add_4"), "div_1");
        y = rec;
    } else {
        x = rec;
        y = vg_div(g, vg_add(g, v[TP], eps, "add_3"), vg_add(g, vg_add(g, v[TP], v[FP], "add_4"), eps, "add_5"),
                   "div_1");
    }
    int64_t b0 = 0, b1 = 1, sz = n - 1;
    vg_output x0 = vg_slice_c(g, x, &b0, &sz, 1, "strided_slice"), x1 = vg_slice_c(g, x, &b1, &sz, 1, "strided_slice_1");
    vg_output y0 = vg_slice_c(g, y, &b0, &sz, 1, "strided_slice_2"), y1 = vg_slice_c(g, y, &b1, &sz, 1, "strided_slice_3");
    vg_output h;
    if (summation == SUM_TRAPEZOIDAL)
        h = vg_div(g, vg_add(g, y0, y1, "add_6"), vg_const_f32(g, 2.0f, "truediv/y"), "truediv");
    else if (summation == SUM_MINORING)
        h = vg_minimum(g, y0, y1, "Minimum");
    else
        h = vg_maximum(g, y0, y1, "Maximum");
    return vg_reduce_sum(g, vg_mul(g, vg_sub(g, x0, x1, "sub"), h, "Mul"), NULL, -1, false, name);
}

vg_metric vg_metrics_auc(vg_graph *g, vg_output labels, vg_output predictions, int num_thresholds,
                         const char *curve, const char *summation_method, const vg_metric_opts *opts) {
    if (!have_graph(g, "auc", labels, predictions, true)) return fail();
    bool roc;
    if (!curve || strcmp(curve, "ROC") == 0) roc = true;
    else if (strcmp(curve, "PR") == 0) roc = false;
    else {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "auc: curve must be either ROC or PR, %s unknown", curve);
        return fail();
    }
    int summation;
    if (!summation_method || strcmp(summation_method, "trapezoidal") == 0) summation = SUM_TRAPEZOIDAL;
    else if (strcmp(summation_method, "minoring") == 0) summation = SUM_MINORING;
    else if (strcmp(summation_method, "majoring") == 0) summation = SUM_MAJORING;
    else if (strcmp(summation_method, "careful_interpolation") == 0) {
        vg_graph_set_error(g, VG_UNIMPLEMENTED, "auc: summation_method careful_interpolation is not implemented");
        return fail();
    } else {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "auc: Invalid summation_method: %s", summation_method);
        return fail();
    }
    if (num_thresholds < 2 || num_thresholds > (1 << 24)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "auc: num_thresholds must be in [2, 2^24], got %d", num_thresholds);
        return fail();
    }
    double *thr = vg_malloc(sizeof(double) * (size_t)num_thresholds);
    if (!thr) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory building auc thresholds");
        return fail();
    }
    const double kepsilon = 1e-7;
    thr[0] = 0.0 - kepsilon;
    for (int i = 0; i < num_thresholds - 2; i++) thr[i + 1] = (i + 1) * 1.0 / (num_thresholds - 1);
    thr[num_thresholds - 1] = 1.0 + kepsilon;
    const vg_metric_opts *o = metric_scope(g, opts, "auc");
    vg_output values[4] = {{0}}, updates[4] = {{0}};
    vg_metric m = fail();
    if (confusion_at_thresholds(g, labels, predictions, thr, num_thresholds, o->weights, 0xFu, values, updates)) {
        vg_output value = compute_auc(g, values, num_thresholds, roc, summation, "value");
        vg_output update = compute_auc(g, updates, num_thresholds, roc, summation, "update_op");
        m = finish(g, o, value, update);
    }
    vg_free(thr);
    vg_graph_pop_scope(g);
    return m;
}

/* sensitivity_at_specificity / specificity_at_sensitivity: the thresholds of auc; the
 * threshold whose specificity (sensitivity) is nearest the target - the first one for
 * sensitivity_at_specificity (argmin), the last one among ties for
 * specificity_at_sensitivity (TF's cumsum/argmax trick) - gives the other rate. */
static vg_output rate_at(vg_graph *g, const vg_output v[4], double target, bool sens_at_spec, const char *name) {
    vg_output keps = vg_const_f32(g, 1e-7f, "add/y");
    vg_output tgt = vg_const_f32(g, (float)target, "sub/y");
    vg_output idx;
    if (sens_at_spec) {
        vg_output spec = vg_div(g, v[TN], vg_add(g, vg_add(g, v[TN], v[FP], "add"), keps, "add_1"), "div");
        idx = vg_cast(g, vg_argmin(g, vg_abs(g, vg_sub(g, spec, tgt, "sub"), "Abs"), 0, VG_INT64, "ArgMin"), VG_INT32,
                      "Cast");
    } else {
        vg_output sens = vg_div(g, v[TP], vg_add(g, vg_add(g, v[TP], v[FN], "add"), keps, "add_1"), "div");
        vg_output dist = vg_abs(g, vg_sub(g, sens, tgt, "sub"), "Abs");
        vg_output minv = vg_reduce_min(g, dist, NULL, -1, false, "Min");
        vg_output at = vg_cast(g, vg_equal(g, dist, minv, "Equal"), VG_INT64, "Cast");
        idx = vg_cast(g, vg_argmax(g, vg_cumsum(g, at, 0, false, false, "Cumsum"), 0, VG_INT64, "ArgMax"), VG_INT32,
                      "Cast_1");
    }
    vg_output a = sens_at_spec ? v[TP] : v[TN], b = sens_at_spec ? v[FN] : v[FP];
    vg_output ai = vg_gather(g, a, idx, 0, "GatherV2"), bi = vg_gather(g, b, idx, 0, "GatherV2_1");
    return vg_div(g, ai, vg_add(g, vg_add(g, ai, bi, "add_2"), keps, "add_3"), name);
}

static vg_metric rate_metric(vg_graph *g, vg_output labels, vg_output predictions, double target, int num_thresholds,
                             const vg_metric_opts *opts, bool sens_at_spec) {
    const char *what = sens_at_spec ? "sensitivity_at_specificity" : "specificity_at_sensitivity";
    if (!have_graph(g, what, labels, predictions, true)) return fail();
    if (!(target >= 0 && target <= 1)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "`%s` must be in the range [0, 1].",
                           sens_at_spec ? "specificity" : "sensitivity");
        return fail();
    }
    if (num_thresholds < 2 || num_thresholds > (1 << 24)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: num_thresholds must be in [2, 2^24], got %d", what,
                           num_thresholds);
        return fail();
    }
    double *thr = vg_malloc(sizeof(double) * (size_t)num_thresholds);
    if (!thr) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory building %s thresholds", what);
        return fail();
    }
    const double kepsilon = 1e-7;
    thr[0] = 0.0 - kepsilon;
    for (int i = 0; i < num_thresholds - 2; i++) thr[i + 1] = (i + 1) * 1.0 / (num_thresholds - 1);
    thr[num_thresholds - 1] = 1.0 + kepsilon;
    const vg_metric_opts *o = metric_scope(g, opts, what);
    vg_output values[4] = {{0}}, updates[4] = {{0}};
    vg_metric m = fail();
    if (confusion_at_thresholds(g, labels, predictions, thr, num_thresholds, o->weights, 0xFu, values, updates)) {
        vg_output value = rate_at(g, values, target, sens_at_spec, "value");
        vg_output update = rate_at(g, updates, target, sens_at_spec, "update_op");
        m = finish(g, o, value, update);
    }
    vg_free(thr);
    vg_graph_pop_scope(g);
    return m;
}

vg_metric vg_metrics_sensitivity_at_specificity(vg_graph *g, vg_output labels, vg_output predictions,
                                                double specificity, int num_thresholds, const vg_metric_opts *opts) {
    return rate_metric(g, labels, predictions, specificity, num_thresholds, opts, true);
}

vg_metric vg_metrics_specificity_at_sensitivity(vg_graph *g, vg_output labels, vg_output predictions,
                                                double sensitivity, int num_thresholds, const vg_metric_opts *opts) {
    return rate_metric(g, labels, predictions, sensitivity, num_thresholds, opts, false);
}

/* ------------------------------------------------------------------------ */
/* mean_iou */

vg_metric vg_metrics_mean_iou(vg_graph *g, vg_output labels, vg_output predictions, int num_classes,
                              const vg_metric_opts *opts) {
    if (!have_graph(g, "mean_iou", labels, predictions, true)) return fail();
    if (num_classes < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "mean_iou: num_classes must be positive, got %d", num_classes);
        return fail();
    }
    const vg_metric_opts *o = metric_scope(g, opts, "mean_iou");
    vg_metric m = fail();
    if (!check_compatible(g, "mean_iou", predictions, labels)) goto done;
    int64_t nc = num_classes, dims[2] = {nc, nc};
    vg_variable cm = metric_var(g, "total_confusion_matrix", VG_DOUBLE, dims, 2);
    if (!cm.var) goto done;
    int64_t flat = -1;
    vg_output p = cast_to(g, predictions, VG_INT64, NULL), l = cast_to(g, labels, VG_INT64, NULL);
    if (vg_output_shape(p).ndims != 1) p = vg_reshape_c(g, p, &flat, 1, "Reshape");
    if (vg_output_shape(l).ndims != 1) l = vg_reshape_c(g, l, &flat, 1, "Reshape_1");
    vg_output w = o->weights.op ? cast_to(g, o->weights, VG_DOUBLE, NULL) : none();
    if (w.op && vg_output_shape(w).ndims > 1) w = vg_reshape_c(g, w, &flat, 1, "Reshape_2");

    /* confusion_matrix(labels, predictions, num_classes, weights, float64) */
    vg_graph_push_scope(g, "confusion_matrix");
    vg_output lf = vg_cast(g, l, VG_DOUBLE, "Cast");
    vg_output vals = vg_ones_like(g, lf, "ones_like");
    if (w.op) vals = vg_mul(g, vals, w, "mul");
    vg_output lo = vg_const_i64(g, 0, "Const");
    vg_output hi = vg_const_i64(g, nc, "num_classes");
    vg_output in_range = vg_logical_and(
        g,
        vg_logical_and(g, vg_reduce_all(g, vg_greater_equal(g, l, lo, "GreaterEqual"), NULL, -1, false, "All"),
                       vg_reduce_all(g, vg_less(g, l, hi, "Less"), NULL, -1, false, "All_1"), "LogicalAnd"),
        vg_logical_and(g, vg_reduce_all(g, vg_greater_equal(g, p, lo, "GreaterEqual_1"), NULL, -1, false, "All_2"),
                       vg_reduce_all(g, vg_less(g, p, hi, "Less_1"), NULL, -1, false, "All_3"), "LogicalAnd_1"),
        "LogicalAnd_2");
    vg_output msg = vg_const_string(g, "labels and predictions must be in [0, num_classes)", "Const_1");
    vg_op *chk = vg_assert(g, in_range, &msg, 1, 3, "assert_in_range/Assert");
    vg_op *deps[1] = {chk};
    vg_graph_push_control_deps(g, deps, 1);
    vg_output both[2] = {l, p};
    vg_output idx = vg_pack(g, both, 2, 1, "stack");
    vg_graph_pop_control_deps(g);
    vg_output shape = vg_const_array(g, VG_INT64, (int64_t[]){2}, 1, dims, "shape");
    vg_output cur = vg_scatter_nd(g, idx, vals, shape, "ScatterNd");
    vg_graph_pop_scope(g);
    vg_output update = vg_assign_add(g, cm.ref, cur, "AssignAdd");

    /* compute_mean_iou(total_cm) */
    int32_t a0 = 0, a1 = 1;
    vg_output row = vg_cast(g, vg_reduce_sum(g, cm.read, &a0, 1, false, "Sum"), VG_FLOAT, "ToFloat");
    vg_output col = vg_cast(g, vg_reduce_sum(g, cm.read, &a1, 1, false, "Sum_1"), VG_FLOAT, "ToFloat_1");
    vg_output diag = vg_cast(g, vg_diag_part(g, cm.read, "DiagPart"), VG_FLOAT, "ToFloat_2");
    vg_output den = vg_sub(g, vg_add(g, row, col, "add"), diag, "sub");
    vg_output zero = vg_const_f32(g, 0.0f, "NotEqual/y");
    vg_output nvalid = vg_reduce_sum(g, vg_cast(g, vg_not_equal(g, den, zero, "NotEqual"), VG_FLOAT, "Cast"), NULL, -1,
                                     false, "Sum_2");
    den = vg_select(g, vg_greater(g, den, zero, "Greater"), den, vg_ones_like(g, den, "ones_like"), "Select");
    vg_output iou = vg_div(g, diag, den, "div");
    vg_output pos = vg_greater(g, nvalid, zero, "Greater_1");
    vg_output safe_n = vg_select(g, pos, nvalid, vg_ones_like(g, nvalid, "ones_like_1"), "Select_1");
    vg_output mean = vg_div(g, vg_reduce_sum(g, iou, NULL, -1, false, "mean_iou"), safe_n, "truediv");
    vg_output value = vg_select(g, pos, mean, vg_zeros_like(g, mean, "zeros_like"), "Select_2");
    m = finish(g, o, value, update);
done:
    vg_graph_pop_scope(g);
    return m;
}

/* ------------------------------------------------------------------------ */
/* sparse top-k metrics */

/* _at_k_name */
static void at_k_name(char *buf, size_t len, const char *base, int k, int class_id) {
    if (class_id >= 0) snprintf(buf, len, "%s_at_%d_class%d", base, k, class_id);
    else snprintf(buf, len, "%s_at_%d", base, k);
}

/* Per-row counts (float64 [batch]) of one kind: TP, FN or FP. labels int64 [b, L],
 * idx int64 [b, k]. */
static vg_output row_counts(vg_graph *g, cond_kind kind, vg_output labels, vg_output idx, int class_id) {
    if (class_id < 0) {
        vg_output eq = vg_equal(g, vg_expand_dims(g, idx, 2, "ExpandDims"), vg_expand_dims(g, labels, 1, "ExpandDims_1"),
                                "Equal");
        int32_t ax[2] = {1, 2};
        vg_output tp = vg_reduce_sum(g, vg_cast(g, eq, VG_DOUBLE, "ToDouble"), ax, 2, false, "Sum");
        if (kind == TP) return tp;
        int32_t a1 = 1;
        vg_output all = kind == FN ? labels : idx;
        vg_output n = vg_reduce_sum(g, vg_cast(g, vg_ones_like(g, all, "ones_like"), VG_DOUBLE, "ToDouble_1"), &a1, 1,
                                    false, "Sum_1");
        return vg_sub(g, n, tp, "sub");
    }
    int32_t a1 = 1;
    vg_output c = vg_const_i64(g, class_id, "class_id");
    vg_output lab_has = vg_reduce_any(g, vg_equal(g, labels, c, "Equal"), &a1, 1, false, "Any");
    vg_output top_has = vg_reduce_any(g, vg_equal(g, idx, c, "Equal_1"), &a1, 1, false, "Any_1");
    vg_output cond = kind == TP   ? vg_logical_and(g, lab_has, top_has, "LogicalAnd")
                     : kind == FN ? vg_logical_and(g, lab_has, vg_logical_not(g, top_has, "LogicalNot"), "LogicalAnd")
                                  : vg_logical_and(g, vg_logical_not(g, lab_has, "LogicalNot"), top_has, "LogicalAnd");
    return vg_cast(g, cond, VG_DOUBLE, "ToDouble");
}

/* _streaming_sparse_{true_positive,false_negative,false_positive}_at_k under the
 * metric's scope: variable "<kind>_at_<k>" (float64) and its AssignAdd ".../update". */
static bool streaming_at_k(vg_graph *g, cond_kind kind, vg_output labels, vg_output idx, int k, int class_id,
                           vg_output weights, vg_output *value, vg_output *update) {
    const char *base = kind == TP ? "true_positive" : kind == FN ? "false_negative" : "false_positive";
    char name[128];
    at_k_name(name, sizeof name, base, k, class_id);
    vg_variable v = metric_var(g, name, VG_DOUBLE, NULL, 0);
    if (!v.var) return false;
    char sc[NAME_LEN + 2];
    snprintf(sc, sizeof sc, "%s/", vg_op_name(v.var));
    vg_graph_push_scope(g, sc);
    vg_output cnt = row_counts(g, kind, labels, idx, class_id);
    if (weights.op) {
        vg_output w = cast_to(g, weights, VG_DOUBLE, NULL);
        if (vg_output_shape(w).ndims > 1) {
            int64_t flat = -1;
            w = vg_reshape_c(g, w, &flat, 1, "Reshape");
        }
        cnt = vg_mul(g, cnt, w, "mul");
    }
    *update = vg_assign_add(g, v.ref, vg_reduce_sum(g, cnt, NULL, -1, false, "Sum_2"), "update");
    vg_graph_pop_scope(g);
    *value = v.read;
    return ok(g);
}

static vg_metric top_k_metric(vg_graph *g, vg_output labels, vg_output predictions, bool from_scores, int k,
                              int class_id, const vg_metric_opts *opts, bool recall) {
    const char *what = recall ? "recall_at_k" : "precision_at_k";
    if (!have_graph(g, what, labels, predictions, true)) return fail();
    if (k < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: k must be positive, got %d", what, k);
        return fail();
    }
    vg_shape sp = vg_output_shape(predictions), sl = vg_output_shape(labels);
    vg_dtype ldt = vg_output_dtype(labels);
    if (ldt != VG_INT32 && ldt != VG_INT64) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: labels must be int32 or int64 class ids, not %s", what,
                           vg_dtype_name(ldt));
        return fail();
    }
    if (sp.ndims != 2 || (sl.ndims != 1 && sl.ndims != 2) ||
        (sp.dims[0] >= 0 && sl.dims[0] >= 0 && sp.dims[0] != sl.dims[0]) ||
        (!from_scores && sp.dims[1] >= 0 && sp.dims[1] != k)) {
        char x[128], y[128];
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "%s: labels %s and predictions %s do not match: want labels [batch] or [batch, "
                           "num_labels] and predictions [batch, %s]",
                           what, vg_shape_str(&sl, x, sizeof x), vg_shape_str(&sp, y, sizeof y),
                           from_scores ? "num_classes" : "k");
        return fail();
    }
    const vg_metric_opts *o = opts ? opts : &DEFAULTS;
    char def[128], full[NAME_LEN];
    at_k_name(def, sizeof def, recall ? "recall" : "precision", k, class_id);
    /* name_scope(name, default) as scope; the value op takes the scope's own name */
    vg_graph_unique_name(g, o->name ? o->name : def, full, sizeof full);
    char sc[NAME_LEN + 2];
    snprintf(sc, sizeof sc, "%s/", full);
    vg_graph_push_scope(g, sc);
    vg_metric m = fail();
    vg_output idx = predictions;
    if (from_scores) {
        vg_op *tk = vg_top_k(g, predictions, k, true, "TopKV2");
        if (!tk) goto done;
        idx = vg_out(tk, 1);
    }
    idx = cast_to(g, idx, VG_INT64, NULL);
    vg_output l = cast_to(g, labels, VG_INT64, NULL);
    if (sl.ndims == 1) l = vg_expand_dims(g, l, -1, "ExpandDims");
    vg_output tpv, tpu, ov, ou;
    if (!streaming_at_k(g, TP, l, idx, k, class_id, o->weights, &tpv, &tpu) ||
        !streaming_at_k(g, recall ? FN : FP, l, idx, k, class_id, o->weights, &ov, &ou))
        goto done;
    vg_output update = vg_div(g, tpu, vg_add(g, tpu, ou, "add_1"), "update");
    vg_output den = vg_add(g, tpv, ov, "add");
    vg_graph_pop_scope(g);
    /* TF names the value after the scope itself */
    const char *slash = strrchr(full, '/');
    vg_output value = vg_div(g, tpv, den, slash ? slash + 1 : full);
    m = finish(g, o, value, update);
    return m;
done:
    vg_graph_pop_scope(g);
    return m;
}

vg_metric vg_metrics_recall_at_k(vg_graph *g, vg_output labels, vg_output predictions, int k, int class_id,
                                 const vg_metric_opts *opts) {
    return top_k_metric(g, labels, predictions, true, k, class_id, opts, true);
}
vg_metric vg_metrics_recall_at_top_k(vg_graph *g, vg_output labels, vg_output predictions_idx, int k, int class_id,
                                     const vg_metric_opts *opts) {
    return top_k_metric(g, labels, predictions_idx, false, k, class_id, opts, true);
}
vg_metric vg_metrics_precision_at_k(vg_graph *g, vg_output labels, vg_output predictions, int k, int class_id,
                                    const vg_metric_opts *opts) {
    return top_k_metric(g, labels, predictions, true, k, class_id, opts, false);
}
vg_metric vg_metrics_precision_at_top_k(vg_graph *g, vg_output labels, vg_output predictions_idx, int k,
                                        int class_id, const vg_metric_opts *opts) {
    return top_k_metric(g, labels, predictions_idx, false, k, class_id, opts, false);
}

/* tf.contrib.metrics.aggregate_metric_map: the dicts of values and of update ops */
vg_code vg_aggregate_metric_map(const vg_metric *metrics, int n, vg_output *values, vg_output *updates) {
    if (n < 0 || (n > 0 && (!metrics || !values || !updates))) return VG_INVALID_ARGUMENT;
    for (int i = 0; i < n; i++) {
        values[i] = metrics[i].value;
        updates[i] = metrics[i].update;
    }
    return VG_OK;
}
