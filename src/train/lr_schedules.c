/*
 * lr_schedules.c - tf.train's learning-rate schedules (TF 1.15
 * learning_rate_decay.py -> learning_rate_schedule.py), built from public builders
 * with TF's formulas, scopes ("ExponentialDecay", "PiecewiseConstant",
 * "PolynomialDecay", "InverseTimeDecay", "CosineDecay", "SGDRDecay",
 * "LinearCosineDecay") and op names. Python-float arguments become float32 Consts;
 * TF's Python-level conds on constants are decided here at build time, its graph
 * conds on tensors become Selects.
 */
#include "train_util.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/train_lib.h"
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* name_scope(name or default) as scope; the result op gets the scope's own name. */

static vg_output f32(vg_graph *g, double v, const char *name) { return vg_const_f32(g, (float)v, name); }

/* math_ops.cast(step, float32): the step itself when already float32. */
static vg_output cast_step(vg_graph *g, vg_output step, const char *name) {
    return vg_output_dtype(step) == VG_FLOAT ? step : vg_cast(g, step, VG_FLOAT, name);
}

static bool need_step(vg_graph *g, vg_output step, const char *what) {
    if (step.op) return true;
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "global_step is required for %s.", what);
    return false;
}

/* The start of a decay schedule: TF's name_scope(name, def) opened into *s (the caller
 * pops it), and the schedule's "initial_learning_rate" constant, which it returns. */
static vg_output schedule_open(vg_graph *g, const char *name, const char *def, double learning_rate,
                               vg__train_scope *s) {
    vg__train_scope_open(g, name, def, s);
    return f32(g, learning_rate, "initial_learning_rate");
}

/* The end of a schedule: closes its scope, returns initial_learning_rate * x named as
 * the scope. */
static vg_output schedule_scale(vg_graph *g, const vg__train_scope *s, vg_output ilr, vg_output x) {
    vg_graph_pop_scope(g);
    return vg_mul(g, ilr, x, s->base);
}

/* min(cast(step), decay_steps) ("Cast/x" holds decay_steps, returned in *ds). */
static vg_output clamped_step(vg_graph *g, vg_output step, double decay_steps, const char *cast_name, vg_output *ds) {
    *ds = f32(g, decay_steps, "Cast/x");
    return vg_minimum(g, cast_step(g, step, cast_name), *ds, "Minimum");
}

/* need_step, then schedule_open (the constant in *ilr); false when step is missing. */
static bool schedule_begin(vg_graph *g, vg_output step, const char *what, const char *name, const char *def,
                           double learning_rate, vg__train_scope *s, vg_output *ilr) {
    if (!need_step(g, step, what)) return false;
    *ilr = schedule_open(g, name, def, learning_rate, s);
    return true;
}

/* ExponentialDecay; decay_rate_t {NULL} makes the Const "Cast_1/x" from decay_rate. */
static vg_output exp_decay(vg_graph *g, double lr, vg_output step, double decay_steps, double decay_rate,
                           vg_output decay_rate_t, bool staircase, const char *name) {
    vg__train_scope s;
    vg_output ilr = schedule_open(g, name, "ExponentialDecay", lr, &s);
    vg_output ds = f32(g, decay_steps, "Cast/x");
    if (!decay_rate_t.op) decay_rate_t = f32(g, decay_rate, "Cast_1/x");
    vg_output gs = cast_step(g, step, "Cast_2");
    vg_output p = vg_div(g, gs, ds, "truediv");
    if (staircase) p = vg_floor(g, p, "Floor");
    vg_output pw = vg_pow(g, decay_rate_t, p, "Pow");
    return schedule_scale(g, &s, ilr, pw);
}

vg_output vg_exponential_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                               double decay_rate, bool staircase, const char *name) {
    if (!need_step(g, global_step, "exponential_decay")) return vg_out(NULL, 0);
    return exp_decay(g, learning_rate, global_step, decay_steps, decay_rate, vg_out(NULL, 0), staircase, name);
}

vg_output vg_natural_exp_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                               double decay_rate, bool staircase, const char *name) {
    if (!need_step(g, global_step, "natural_exp_decay")) return vg_out(NULL, 0);
    /* natural_exp_rate = exp(negative(decay_rate)), created before the schedule's scope */
    vg_output rate = vg_exp(g, vg_neg(g, f32(g, decay_rate, "Const"), "Neg"), "Exp");
    return exp_decay(g, learning_rate, global_step, decay_steps, 0, rate, staircase, name);
}

vg_output vg_piecewise_constant(vg_graph *g, vg_output x, const double *boundaries, const double *values, int n_values,
                                const char *name) {
    if (!x.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "piecewise_constant: x is required");
        return vg_out(NULL, 0);
    }
    if (n_values < 2 || !boundaries || !values) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "The length of boundaries should be 1 less than the length of values (got %d values)",
                           n_values);
        return vg_out(NULL, 0);
    }
    int nb = n_values - 1;
    vg_dtype xt = vg_output_dtype(x);
    vg__train_scope s;
    vg__train_scope_open(g, name, "PiecewiseConstant", &s);
    vg_output *b = calloc((size_t)nb, sizeof(vg_output)), *v = calloc((size_t)n_values, sizeof(vg_output));
    if (!b || !v) {
        free(b), free(v);
        vg_graph_pop_scope(g);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in piecewise_constant");
        return vg_out(NULL, 0);
    }
    char nm[64];
    for (int i = 0; i < nb; i++) {
        snprintf(nm, sizeof nm, i ? "Const_%d" : "Const", i);
        b[i] = vg_const_fill(g, xt, NULL, 0, boundaries[i], nm);
    }
    for (int i = 0; i < n_values; i++) {
        snprintf(nm, sizeof nm, "Const_%d", nb + i);
        v[i] = f32(g, values[i], nm);
    }
    /* case((x <= b0, v0), (x > b_last, v_last), ((b_i < x <= b_i+1), v_i+1)...), default v0:
     * the predicates are exclusive, so a Select chain gives the same value. */
    vg_output r = v[0];
    for (int i = 0; i + 1 < nb; i++) {
        vg_output pred = vg_logical_and(g, vg_greater(g, x, b[i], "Greater"), vg_less_equal(g, x, b[i + 1], "LessEqual"),
                                        "and");
        r = vg_select(g, pred, v[i + 1], r, "Select");
    }
    r = vg_select(g, vg_greater(g, x, b[nb - 1], "Greater"), v[nb], r, "Select");
    r = vg_select(g, vg_less_equal(g, x, b[0], "LessEqual"), v[0], r, "Select");
    vg_graph_pop_scope(g);
    free(b), free(v);
    return vg_identity(g, r, s.base);
}

vg_output vg_polynomial_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                              double end_learning_rate, double power, bool cycle, const char *name) {
    vg__train_scope s;
    vg_output ilr;
    if (!schedule_begin(g, global_step, "polynomial_decay", name, "PolynomialDecay", learning_rate, &s, &ilr))
        return vg_out(NULL, 0);
    vg_output end = f32(g, end_learning_rate, "Cast/x");
    vg_output pw = f32(g, power, "Cast_1/x");
    vg_output gs = cast_step(g, global_step, "Cast_2");
    vg_output ds = f32(g, decay_steps, "Cast_3/x");
    if (cycle) {
        /* multiplier = 1 at step 0, else ceil(step / decay_steps) */
        vg_output m = vg_select(g, vg_equal(g, gs, f32(g, 0, "Equal/y"), "Equal"), f32(g, 1, "ones"),
                                vg_ceil(g, vg_div(g, gs, f32(g, decay_steps, "truediv/y"), "truediv"), "Ceil"), "cond");
        ds = vg_mul(g, ds, m, "Mul");
    } else {
        gs = vg_minimum(g, gs, f32(g, decay_steps, "Minimum/y"), "Minimum");
    }
    vg_output p = vg_div(g, gs, ds, "truediv_1");
    vg_output t = vg_mul(g, vg_sub(g, ilr, end, "sub"), vg_pow(g, vg_sub(g, f32(g, 1, "sub_1/x"), p, "sub_1"), pw, "Pow"),
                         "Mul_1");
    vg_graph_pop_scope(g);
    return vg_add(g, t, end, s.base);
}

vg_output vg_inverse_time_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                double decay_rate, bool staircase, const char *name) {
    vg__train_scope s;
    vg_output ilr;
    if (!schedule_begin(g, global_step, "inverse_time_decay", name, "InverseTimeDecay", learning_rate, &s, &ilr))
        return vg_out(NULL, 0);
    vg_output ds = f32(g, decay_steps, "Cast/x"), dr = f32(g, decay_rate, "Cast_1/x");
    vg_output gs = cast_step(g, global_step, "Cast_2");
    vg_output p = vg_div(g, gs, ds, "truediv");
    if (staircase) p = vg_floor(g, p, "Floor");
    vg_output denom = vg_add(g, f32(g, 1, "Const"), vg_mul(g, dr, p, "Mul"), "Add");
    vg_graph_pop_scope(g);
    return vg_div(g, ilr, denom, s.base);
}

static const double PI = 3.14159265358979323846;

/* TF's name of the i-th op of a kind in a scope: "add", "add_1", ... */
static const char *nth_name(char *buf, size_t len, const char *kind, int i, const char *suffix) {
    if (i == 0)
        snprintf(buf, len, "%s%s", kind, suffix);
    else
        snprintf(buf, len, "%s_%d%s", kind, i, suffix);
    return buf;
}

/* cosine decay's half * (1 + cos(pi * frac)): "Const", pi_mul, "Cos", the add_i-th "add"
 * (and its "/x"), out */
static vg_output half_cos(vg_graph *g, vg_output half, vg_output frac, const char *pi_mul, int add_i, const char *out) {
    char ax[32], an[32];
    vg_output c = vg_cos(g, vg_mul(g, f32(g, PI, "Const"), frac, pi_mul), "Cos");
    vg_output one = f32(g, 1, nth_name(ax, sizeof ax, "add", add_i, "/x"));
    return vg_mul(g, half, vg_add(g, one, c, nth_name(an, sizeof an, "add", add_i, "")), out);
}

/* linear_cosine_decay's tail (also the noisy one's): frac = gs / ds (`truediv`),
 * 0.5 * (1 + cos(pi * 2 * num_periods * frac)) and (alpha + lin) * that + beta, with the
 * casts Cast_<cast_i>..+2 and the adds add_<add_i>..+2 */
static vg_output linear_cos_tail(vg_graph *g, vg_output ds, vg_output gs, vg_output lin, double num_periods,
                                 double alpha, double beta, const char *truediv, int cast_i, int add_i) {
    char c0[32], c1[32], c2[32], a1[32], a2[32];
    vg_output frac = vg_div(g, gs, ds, truediv);
    vg_output np = f32(g, num_periods, nth_name(c0, sizeof c0, "Cast", cast_i, "/x"));
    vg_output fraction = vg_mul(g, vg_mul(g, f32(g, 2.0, "mul/x"), np, "mul"), frac, "mul_1");
    vg_output cosd = half_cos(g, f32(g, 0.5, "mul_2/x"), fraction, "mul_3", add_i, "mul_2");
    vg_output a = vg_add(g, f32(g, alpha, nth_name(c1, sizeof c1, "Cast", cast_i + 1, "/x")), lin,
                         nth_name(a1, sizeof a1, "add", add_i + 1, ""));
    return vg_add(g, vg_mul(g, a, cosd, "mul_4"), f32(g, beta, nth_name(c2, sizeof c2, "Cast", cast_i + 2, "/x")),
                  nth_name(a2, sizeof a2, "add", add_i + 2, ""));
}

/* (1 - alpha) * cosd + alpha: "<mul>/x", mul, "add_1/y", "add_1" */
static vg_output alpha_mix(vg_graph *g, double alpha, vg_output cosd, const char *mul) {
    char x[32];
    snprintf(x, sizeof x, "%s/x", mul);
    return vg_add(g, vg_mul(g, f32(g, 1 - alpha, x), cosd, mul), f32(g, alpha, "add_1/y"), "add_1");
}

vg_output vg_cosine_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps, double alpha,
                          const char *name) {
    vg__train_scope s;
    vg_output ilr;
    if (!schedule_begin(g, global_step, "cosine_decay", name, "CosineDecay", learning_rate, &s, &ilr))
        return vg_out(NULL, 0);
    vg_output ds;
    vg_output gs = clamped_step(g, global_step, decay_steps, "Cast_1", &ds);
    vg_output frac = vg_div(g, gs, ds, "truediv");
    vg_output cosd = half_cos(g, f32(g, 0.5, "mul/x"), frac, "mul_1", 0, "mul");
    vg_output decayed = alpha_mix(g, alpha, cosd, "mul_2");
    return schedule_scale(g, &s, ilr, decayed);
}

vg_output vg_cosine_decay_restarts(vg_graph *g, double learning_rate, vg_output global_step, double first_decay_steps,
                                   double t_mul, double m_mul, double alpha, const char *name) {
    vg__train_scope s;
    vg_output ilr;
    if (!schedule_begin(g, global_step, "cosine_decay_restarts", name, "SGDRDecay", learning_rate, &s, &ilr))
        return vg_out(NULL, 0);
    vg_output fds = f32(g, first_decay_steps, "Cast/x");
    vg_output gs = cast_step(g, global_step, "Cast_3");
    vg_output frac = vg_div(g, gs, fds, "truediv");
    vg_output i_restart;
    if (t_mul == 1.0) { /* TF's cond(equal(t_mul, 1.0)) on a constant */
        i_restart = vg_floor(g, frac, "Floor");
        frac = vg_sub(g, frac, i_restart, "sub");
    } else {
        vg_output tm = f32(g, t_mul, "Cast_1/x");
        vg_output lg = vg_log(g, vg_sub(g, f32(g, 1, "sub/x"), vg_mul(g, frac, f32(g, 1 - t_mul, "sub_1"), "mul"), "sub"),
                              "Log");
        i_restart = vg_floor(g, vg_div(g, lg, vg_log(g, tm, "Log_1"), "truediv_1"), "Floor");
        vg_output tpow = vg_pow(g, tm, i_restart, "Pow");
        vg_output sum_r = vg_div(g, vg_sub(g, f32(g, 1, "sub_2/x"), tpow, "sub_2"), f32(g, 1 - t_mul, "sub_3"),
                                 "truediv_2");
        frac = vg_div(g, vg_sub(g, frac, sum_r, "sub_4"), tpow, "truediv_3");
    }
    vg_output m_fac = vg_pow(g, f32(g, m_mul, "Cast_2/x"), i_restart, "Pow_1");
    vg_output cosd = half_cos(g, vg_mul(g, f32(g, 0.5, "mul_1/x"), m_fac, "mul_1"), frac, "mul_2", 0, "mul_3");
    vg_output decayed = alpha_mix(g, alpha, cosd, "mul_4");
    return schedule_scale(g, &s, ilr, decayed);
}

vg_output vg_linear_cosine_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                 double num_periods, double alpha, double beta, const char *name) {
    vg__train_scope s;
    vg_output ilr;
    if (!schedule_begin(g, global_step, "linear_cosine_decay", name, "LinearCosineDecay", learning_rate, &s, &ilr))
        return vg_out(NULL, 0);
    vg_output ds;
    vg_output gs = clamped_step(g, global_step, decay_steps, "Cast_4", &ds);
    vg_output linear = vg_div(g, vg_sub(g, ds, gs, "sub"), ds, "truediv");
    vg_output lcd = linear_cos_tail(g, ds, gs, linear, num_periods, alpha, beta, "truediv_1", 1, 0);
    return schedule_scale(g, &s, ilr, lcd);
}

vg_output vg_noisy_linear_cosine_decay(vg_graph *g, double learning_rate, vg_output global_step, double decay_steps,
                                       double initial_variance, double variance_decay, double num_periods, double alpha,
                                       double beta, int64_t seed, const char *name) {
    if (!need_step(g, global_step, "noisy_linear_cosine_decay")) return vg_out(NULL, 0);
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg__train_scope s;
    vg_output ilr = schedule_open(g, name, "NoisyLinearCosineDecay", learning_rate, &s);
    vg_output ds;
    vg_output gs = clamped_step(g, global_step, decay_steps, "Cast_6", &ds);
    vg_output linear = vg_div(g, vg_sub(g, ds, gs, "sub"), ds, "truediv");
    vg_output variance = vg_div(g, f32(g, initial_variance, "Cast_1/x"),
                                vg_pow(g, vg_add(g, f32(g, 1.0, "add/x"), gs, "add"), f32(g, variance_decay, "Cast_2/x"),
                                       "Pow"),
                                "truediv_1");
    vg_output sd = vg_sqrt(g, variance, "Sqrt");
    /* random_ops.random_normal(linear_decayed.shape (a scalar), stddev=std) */
    vg_graph_push_scope(g, "random_normal");
    vg_output noise = vg_add(g, vg_mul(g, vg_random_standard_normal(g, vg_const_i32_vec(g, NULL, 0, "shape"), VG_FLOAT, s1, s2,
                                                                    "RandomStandardNormal"),
                                       sd, "mul"),
                             f32(g, 0.0, "mean"), "add");
    vg_graph_pop_scope(g);
    vg_output noisy = vg_add(g, linear, noise, "add_1");
    vg_output r = linear_cos_tail(g, ds, gs, noisy, num_periods, alpha, beta, "truediv_2", 3, 2);
    return schedule_scale(g, &s, ilr, r);
}
