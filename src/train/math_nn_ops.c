/*
 * math_nn_ops.c - tf.nn.dropout (TF 1.15 nn_ops.py: the v1 keep_prob form that calls
 * dropout_v2 with rate = 1 - keep_prob) and tf.math.confusion_matrix (confusion_matrix.py),
 * from public builders. See vigil/math_nn_ops.h.
 */
#include "vigil/math_nn_ops.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"

static bool is_float(vg_dtype dt) { return dt == VG_FLOAT || dt == VG_DOUBLE; }

static vg_output scalar_of(vg_graph *g, vg_dtype dt, double v, const char *name) {
    return dt == VG_DOUBLE ? vg_cast(g, vg_const_f32(g, (float)v, NULL), VG_DOUBLE, name)
                           : vg_const_f32(g, (float)v, name);
}

vg_output vg_nn_dropout(vg_graph *g, vg_output x, vg_output keep_prob, int64_t seed, const char *name) {
    vg_output none = {NULL, 0};
    if (!g || !x.op || !keep_prob.op) return none;
    vg_dtype dt = vg_output_dtype(x);
    if (!is_float(dt)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dropout: x has to be a floating point tensor");
        return none;
    }
    vg_shape ks = vg_output_shape(keep_prob);
    if (vg_output_dtype(keep_prob) != dt || (ks.ndims > 0)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dropout: keep_prob must be a scalar of x's dtype");
        return none;
    }
    /* nn_ops.dropout (v1): keep = 1. - keep_prob, in the caller's scope */
    vg_output rate = vg_sub(g, scalar_of(g, dt, 1.0, "sub/x"), keep_prob, "sub");
    vg_graph_push_scope(g, name ? name : "dropout");
    /* dropout_v2 */
    vg_output noise_shape = vg_shape_op(g, x, VG_INT32, "Shape");
    vg_output keep = vg_sub(g, scalar_of(g, dt, 1.0, "sub/x"), rate, "sub");
    vg_output scale = vg_div(g, scalar_of(g, dt, 1.0, "truediv/x"), keep, "truediv");
    int64_t s1 = 0, s2 = 0;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg_output random_tensor = vg_random_uniform(g, noise_shape, dt, s1, s2, "random_uniform");
    vg_output keep_mask = vg_greater_equal(g, random_tensor, rate, "GreaterEqual");
    vg_output ret = vg_mul(g, vg_mul(g, x, scale, "mul"), vg_cast(g, keep_mask, dt, "Cast"), "mul_1");
    /* ret.set_shape(x.get_shape()) */
    vg_shape xs = vg_output_shape(x);
    vg_status st;
    if (ret.op && xs.ndims >= 0) vg_set_shape(ret, xs.dims, xs.ndims, &st);
    vg_graph_pop_scope(g);
    return ret;
}

vg_output vg_confusion_matrix(vg_graph *g, vg_output labels, vg_output predictions, int64_t num_classes, vg_dtype dtype,
                              const char *name) {
    vg_output none = {NULL, 0};
    if (!g || !labels.op || !predictions.op) return none;
    if (num_classes <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "confusion_matrix: num_classes must be positive, got %lld",
                           (long long)num_classes);
        return none;
    }
    if (dtype != VG_INT32 && dtype != VG_INT64 && dtype != VG_FLOAT && dtype != VG_DOUBLE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "confusion_matrix: unsupported dtype");
        return none;
    }
    vg_dtype lt = vg_output_dtype(labels), pt = vg_output_dtype(predictions);
    if ((lt != VG_INT32 && lt != VG_INT64) || (pt != VG_INT32 && pt != VG_INT64)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "confusion_matrix: labels and predictions must be int32 or int64");
        return none;
    }
    vg_shape ls = vg_output_shape(labels), ps = vg_output_shape(predictions);
    if ((ls.ndims >= 0 && ls.ndims != 1) || (ps.ndims >= 0 && ps.ndims != 1)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "confusion_matrix: labels and predictions must be vectors");
        return none;
    }
    vg_graph_push_scope(g, name ? name : "confusion_matrix");
    vg_output p = vg_cast(g, predictions, VG_INT64, "Cast");
    vg_output l = vg_cast(g, labels, VG_INT64, "Cast_1");
    vg_output n = vg_const_i64(g, num_classes, "num_classes");
    vg_output shape_parts[2] = {n, n};
    vg_output shape = vg_pack(g, shape_parts, 2, 0, "stack");
    vg_output idx_parts[2] = {l, p};
    vg_output indices = vg_pack(g, idx_parts, 2, 1, "stack_1");
    vg_output values = vg_cast(g, vg_ones_like(g, p, "ones_like"), dtype, "Cast_2");
    vg_output cm = vg_scatter_nd(g, indices, values, shape, "ScatterNd");
    vg_graph_pop_scope(g);
    return cm;
}
