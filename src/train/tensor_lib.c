/*
 * tensor_lib.c - TF 1.15's Python-level tensor constructors that programs call with
 * run-time shapes or ranges, as composites of public builders:
 *   tf.random_uniform(shape, minval, maxval)  -> RandomUniform * (max - min) + min
 *                                                (RandomUniformInt for int32/int64)
 *   tf.random_normal(shape, mean, stddev)     -> RandomStandardNormal * stddev + mean
 *   tf.truncated_normal(shape, mean, stddev)  -> TruncatedNormal * stddev + mean
 *   tf.zeros / tf.ones(shape tensor, dtype)   -> Fill(shape, 0 / 1)
 * with TF's scopes ("random_uniform/min", "random_uniform/max", result
 * "random_uniform") and seeds from vg_graph_get_seed (tf.set_random_seed rules).
 */
#include "train_util.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/train_lib.h"
#include <stdio.h>
#include <string.h>


static bool check_float(vg_graph *g, vg_dtype dt, const char *what) {
    if (dt == VG_FLOAT || dt == VG_DOUBLE) return true;
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: dtype %s is not supported (float, double, int32 or int64 for random_uniform)",
                       what, vg_dtype_name(dt));
    return false;
}

vg_output vg_random_uniform_range(vg_graph *g, vg_output shape, double minval, double maxval, vg_dtype dt, int64_t seed,
                                  const char *name) {
    if (!shape.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_uniform: shape is required");
        return vg_out(NULL, 0);
    }
    bool is_int = dt == VG_INT32 || dt == VG_INT64;
    if (!is_int && !check_float(g, dt, "random_uniform")) return vg_out(NULL, 0);
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg__train_scope s;
    vg__train_scope_open(g, name, "random_uniform", &s);
    if (is_int) { /* gen_random_ops.random_uniform_int(shape, min, max, name=name) */
        vg_output mn = vg_const_fill(g, dt, NULL, 0, minval, "min"), mx = vg_const_fill(g, dt, NULL, 0, maxval, "max");
        vg_graph_pop_scope(g);
        return vg_random_uniform_int(g, shape, mn, mx, s1, s2, s.base);
    }
    vg_output mn = vg_const_fill(g, dt, NULL, 0, minval, "min");
    vg_output mx = vg_const_fill(g, dt, NULL, 0, maxval, "max");
    vg_output rnd = vg_random_uniform(g, shape, dt, s1, s2, "RandomUniform");
    vg_output r = vg_mul(g, rnd, vg_sub(g, mx, mn, "sub"), "mul");
    vg_graph_pop_scope(g);
    return vg_add(g, r, mn, s.base);
}

static vg_output normal_like(vg_graph *g, bool truncated, vg_output shape, double mean, double stddev, vg_dtype dt,
                             int64_t seed, const char *name) {
    const char *what = truncated ? "truncated_normal" : "random_normal";
    if (!shape.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: shape is required", what);
        return vg_out(NULL, 0);
    }
    if (!check_float(g, dt, what)) return vg_out(NULL, 0);
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg__train_scope s;
    vg__train_scope_open(g, name, what, &s);
    vg_output m = vg_const_fill(g, dt, NULL, 0, mean, "mean");
    vg_output sd = vg_const_fill(g, dt, NULL, 0, stddev, "stddev");
    vg_output rnd = truncated ? vg_truncated_normal(g, shape, dt, s1, s2, "TruncatedNormal")
                              : vg_random_standard_normal(g, shape, dt, s1, s2, "RandomStandardNormal");
    vg_output mul = vg_mul(g, rnd, sd, "mul");
    vg_graph_pop_scope(g);
    return vg_add(g, mul, m, s.base);
}

vg_output vg_random_normal_dist(vg_graph *g, vg_output shape, double mean, double stddev, vg_dtype dt, int64_t seed,
                                const char *name) {
    return normal_like(g, false, shape, mean, stddev, dt, seed, name);
}

vg_output vg_truncated_normal_dist(vg_graph *g, vg_output shape, double mean, double stddev, vg_dtype dt, int64_t seed,
                                   const char *name) {
    return normal_like(g, true, shape, mean, stddev, dt, seed, name);
}

static vg_output filled(vg_graph *g, vg_output shape, vg_dtype dt, double v, const char *def, const char *name) {
    if (!shape.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: shape is required", def);
        return vg_out(NULL, 0);
    }
    vg__train_scope s;
    vg__train_scope_open(g, name, def, &s);
    vg_output c = vg_const_fill(g, dt, NULL, 0, v, "Const");
    vg_graph_pop_scope(g);
    return vg_fill(g, shape, c, s.base);
}

vg_output vg_zeros(vg_graph *g, vg_output shape, vg_dtype dt, const char *name) { return filled(g, shape, dt, 0, "zeros", name); }
vg_output vg_ones(vg_graph *g, vg_output shape, vg_dtype dt, const char *name) { return filled(g, shape, dt, 1, "ones", name); }

/* tf.nn.xw_plus_b: with name_scope(name, "xw_plus_b") as name: bias_add(matmul(x, w),
 * b, name=name). */
vg_output vg_xw_plus_b(vg_graph *g, vg_output x, vg_output weights, vg_output biases, const char *name) {
    vg_output none = {NULL, 0};
    if (!g) return none;
    char full[1024], scope[1030];
    vg_graph_unique_name(g, name ? name : "xw_plus_b", full, sizeof full);
    snprintf(scope, sizeof scope, "%s/", full);
    const char *slash = strrchr(full, '/');
    vg_graph_push_scope(g, "/");
    vg_graph_push_scope(g, scope);
    vg_output mm = vg_matmul(g, x, weights, false, false, "MatMul");
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    return vg_bias_add(g, mm, biases, slash ? slash + 1 : full);
}
