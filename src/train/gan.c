/*
 * gan.c - tf.contrib.gan of TF 1.15 as graph builders from the public API: gan_model
 * (contrib/gan/python/train.py), the GAN losses (losses/python/losses_impl.py, with the
 * tuple-loss defaults of tuple_losses_impl.py), gan_loss and gan_train_ops. The hooks and
 * gan_train are src/monitored/gan_train.c.
 */
#include "train_util.h"
#include "vigil/gan.h"
#include "vigil/ops.h"
#include "vigil/gradients.h"
#include "vigil/summary.h"
#include "vigil/train_lib.h"
#include "vigil/variables.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((vg_output){NULL, 0})

static vg_gan_loss_opts opts_or_default(const vg_gan_loss_opts *o) {
    vg_gan_loss_opts d;
    memset(&d, 0, sizeof d);
    return o ? *o : d;
}

/* with ops.name_scope(scope, default) as scope: pushes it and writes "<full>/" to buf. */
static void open_scope(vg_graph *g, const char *scope, const char *dflt, char *buf, size_t len) {
    const char *full = vg_graph_push_scope(g, scope ? scope : dflt);
    size_t n = full ? strlen(full) : 0;
    snprintf(buf, len, "%s%s", full ? full : "", n && full[n - 1] == '/' ? "" : "/");
}

/* math_ops.to_float: a Cast "ToFloat" unless already float32. */
static vg_output to_float(vg_graph *g, vg_output x) {
    if (!x.op || vg_output_dtype(x) == VG_FLOAT) return x;
    return vg_cast(g, x, VG_FLOAT, "ToFloat");
}

/* shape.assert_is_compatible_with: INVALID_ARGUMENT naming both shapes. */
static bool compatible(vg_graph *g, vg_output a, vg_output b) {
    vg_shape sa = vg_output_shape(a), sb = vg_output_shape(b);
    bool ok = sa.ndims < 0 || sb.ndims < 0 || sa.ndims == sb.ndims;
    for (int i = 0; ok && sa.ndims >= 0 && sb.ndims >= 0 && i < sa.ndims; i++)
        ok = sa.dims[i] < 0 || sb.dims[i] < 0 || sa.dims[i] == sb.dims[i];
    if (!ok) vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Shapes of the real and generated discriminator outputs are "
                                "incompatible (rank %d and %d)", sa.ndims, sb.ndims);
    return ok;
}

static vg_output weighted(vg_graph *g, vg_output losses, vg_output weights, const char *scope, const char *collection,
                          vg_reduction reduction) {
    vg_loss_opts lo = {.weights = weights, .scope = scope, .loss_collection = collection, .reduction = reduction};
    return vg_losses_compute_weighted_loss(g, losses, &lo);
}

static void add_loss(vg_graph *g, vg_output loss, const char *collection) {
    if (loss.op && (!collection || collection[0])) vg_losses_add_loss(g, loss, collection);
}

static void summary(vg_graph *g, bool on, const char *tag, vg_output v) {
    if (on && v.op) vg_summary_scalar(g, tag, v);
}

/* The discriminator's three scalars: "discriminator_gen_<kind>_loss",
 * "discriminator_real_<kind>_loss" and "discriminator_<kind>_loss". */
static void d_summaries(vg_graph *g, bool on, const char *kind, vg_output on_gen, vg_output on_real, vg_output loss) {
    char tag[96];
    snprintf(tag, sizeof tag, "discriminator_gen_%s_loss", kind);
    summary(g, on, tag, on_gen);
    snprintf(tag, sizeof tag, "discriminator_real_%s_loss", kind);
    summary(g, on, tag, on_real);
    snprintf(tag, sizeof tag, "discriminator_%s_loss", kind);
    summary(g, on, tag, loss);
}

/* A loss's start: the options (zeros when po is NULL) and its name scope (open_scope
 * of opts.scope or dflt; "<full>/" in sc). */
static vg_gan_loss_opts open_loss(vg_graph *g, const vg_gan_loss_opts *po, const char *dflt, char *sc, size_t len) {
    vg_gan_loss_opts o = opts_or_default(po);
    open_scope(g, o.scope, dflt, sc, len);
    return o;
}

static vg_output finish(vg_graph *g, vg_output loss) {
    vg_graph_pop_scope(g);
    return vg_graph_status(g, NULL) == VG_OK ? loss : NONE;
}

/* ---- Wasserstein --------------------------------------------------------------- */

vg_output vg_gan_wasserstein_generator_loss(vg_graph *g, vg_output gen, const vg_gan_loss_opts *po) {
    if (!g) return NONE;
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, "generator_wasserstein_loss", sc, sizeof sc);
    vg_output loss = vg_neg(g, to_float(g, gen), "Neg");
    loss = weighted(g, loss, o.weights, sc, o.loss_collection, o.reduction);
    summary(g, o.add_summaries, "generator_wass_loss", loss);
    return finish(g, loss);
}

vg_output vg_gan_wasserstein_discriminator_loss(vg_graph *g, vg_output real, vg_output gen,
                                                const vg_gan_loss_opts *po) {
    if (!g) return NONE;
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, "discriminator_wasserstein_loss", sc, sizeof sc);
    real = to_float(g, real);
    gen = to_float(g, gen);
    vg_output loss = NONE;
    if (compatible(g, real, gen)) {
        vg_output on_gen = weighted(g, gen, o.generated_weights, sc, "", o.reduction);
        vg_output on_real = weighted(g, real, o.real_weights, sc, "", o.reduction);
        loss = vg_sub(g, on_gen, on_real, "sub");
        add_loss(g, loss, o.loss_collection);
        summary(g, o.add_summaries, "discriminator_gen_wass_loss", on_gen);
        summary(g, o.add_summaries, "discriminator_real_wass_loss", on_real);
        summary(g, o.add_summaries, "discriminator_wass_loss", loss);
    }
    return finish(g, loss);
}

/* ---- minimax / modified ------------------------------------------------------------ */

static vg_output minimax_d(vg_graph *g, vg_output real, vg_output gen, double label_smoothing,
                           const vg_gan_loss_opts *po, const char *dflt) {
    if (!g) return NONE;
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, dflt, sc, sizeof sc);
    vg_loss_opts lr = {.weights = o.real_weights, .scope = sc, .loss_collection = "", .reduction = o.reduction};
    vg_loss_opts lg = {.weights = o.generated_weights, .scope = sc, .loss_collection = "", .reduction = o.reduction};
    vg_output on_real =
        vg_losses_sigmoid_cross_entropy(g, vg_ones_like(g, real, "ones_like"), real, label_smoothing, &lr);
    vg_output on_gen = vg_losses_sigmoid_cross_entropy(g, vg_zeros_like(g, gen, "zeros_like"), gen, 0.0, &lg);
    vg_output loss = vg_add(g, on_real, on_gen, "add");
    add_loss(g, loss, o.loss_collection);
    d_summaries(g, o.add_summaries, "minimax", on_gen, on_real, loss);
    return finish(g, loss);
}

vg_output vg_gan_minimax_discriminator_loss(vg_graph *g, vg_output real, vg_output gen, double label_smoothing,
                                            const vg_gan_loss_opts *o) {
    return minimax_d(g, real, gen, label_smoothing, o, "discriminator_minimax_loss");
}

vg_output vg_gan_modified_discriminator_loss(vg_graph *g, vg_output real, vg_output gen, double label_smoothing,
                                             const vg_gan_loss_opts *o) {
    return minimax_d(g, real, gen, label_smoothing, o, "discriminator_modified_loss");
}

vg_output vg_gan_minimax_generator_loss(vg_graph *g, vg_output gen, double label_smoothing,
                                        const vg_gan_loss_opts *po) {
    if (!g) return NONE;
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, "generator_minimax_loss", sc, sizeof sc);
    vg_gan_loss_opts inner = o;
    inner.real_weights = o.weights;
    inner.generated_weights = o.weights;
    inner.scope = sc;
    inner.add_summaries = false;
    vg_output d = minimax_d(g, vg_ones_like(g, gen, "ones_like"), gen, label_smoothing, &inner, sc);
    vg_output loss = vg_neg(g, d, "Neg");
    loss = finish(g, loss);
    summary(g, o.add_summaries, "generator_minimax_loss", loss);
    return loss;
}

vg_output vg_gan_modified_generator_loss(vg_graph *g, vg_output gen, double label_smoothing,
                                         const vg_gan_loss_opts *po) {
    if (!g) return NONE;
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, "generator_modified_loss", sc, sizeof sc);
    vg_loss_opts lo = {.weights = o.weights, .scope = sc, .loss_collection = o.loss_collection,
                       .reduction = o.reduction};
    vg_output loss = vg_losses_sigmoid_cross_entropy(g, vg_ones_like(g, gen, "ones_like"), gen, label_smoothing, &lo);
    summary(g, o.add_summaries, "generator_modified_loss", loss);
    return finish(g, loss);
}

/* ---- least squares ---------------------------------------------------------------- */

static vg_output half_sq(vg_graph *g, vg_output x, double label) {
    vg_output l = vg_const_fill(g, VG_FLOAT, NULL, 0, label, "y");
    vg_output d = vg_squared_difference(g, x, l, "SquaredDifference");
    return vg_div(g, d, vg_const_fill(g, VG_FLOAT, NULL, 0, 2.0, "truediv/y"), "truediv");
}

vg_output vg_gan_least_squares_generator_loss(vg_graph *g, vg_output gen, double real_label,
                                              const vg_gan_loss_opts *po) {
    if (!g) return NONE;
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, "lsq_generator_loss", sc, sizeof sc);
    vg_output loss = weighted(g, half_sq(g, to_float(g, gen), real_label), o.weights, sc, o.loss_collection,
                              o.reduction);
    loss = finish(g, loss);
    summary(g, o.add_summaries, "generator_lsq_loss", loss);
    return loss;
}

vg_output vg_gan_least_squares_discriminator_loss(vg_graph *g, vg_output real, vg_output gen, double real_label,
                                                  double fake_label, const vg_gan_loss_opts *po) {
    if (!g) return NONE;
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, "lsq_discriminator_loss", sc, sizeof sc);
    real = to_float(g, real);
    gen = to_float(g, gen);
    vg_output loss = NONE, on_real = NONE, on_gen = NONE;
    if (compatible(g, real, gen)) {
        vg_output real_losses = half_sq(g, real, real_label);
        vg_output fake_losses = half_sq(g, gen, fake_label);
        on_real = weighted(g, real_losses, o.real_weights, sc, "", o.reduction);
        on_gen = weighted(g, fake_losses, o.generated_weights, sc, "", o.reduction);
        loss = vg_add(g, on_real, on_gen, "add");
        add_loss(g, loss, o.loss_collection);
    }
    loss = finish(g, loss);
    d_summaries(g, o.add_summaries, "lsq", on_gen, on_real, loss);
    return loss;
}

/* ---- gradient penalty ---------------------------------------------------------------- */

vg_output vg_gan_wasserstein_gradient_penalty(vg_graph *g, const vg_gan_model *m, double epsilon, double target,
                                              bool one_sided, const vg_gan_loss_opts *po) {
    if (!g) return NONE;
    if (!m || !m->real_data.op || !m->generated_data.op || !m->discriminator_fn) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "wasserstein_gradient_penalty: a built GAN model is required");
        return NONE;
    }
    char sc[512];
    vg_gan_loss_opts o = open_loss(g, po, "wasserstein_gradient_penalty", sc, sizeof sc);
    vg_output real = m->real_data, gen = m->generated_data;
    vg_shape rs = vg_output_shape(real), gs = vg_output_shape(gen);
    if (rs.ndims < 0 || gs.ndims < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, rs.ndims < 0 ? "`real_data` can't have unknown rank."
                                                                : "`generated_data` can't have unknown rank.");
        return finish(g, NONE);
    }
    vg_output diff = vg_sub(g, gen, real, "sub");
    vg_shape ds = vg_output_shape(diff);
    int nd = ds.ndims > 0 ? ds.ndims : gs.ndims;
    vg_output alpha_shape;
    if (nd > 0 && ds.dims[0] >= 0) {
        int64_t n1 = nd;
        vg_tensor *t = vg_tensor_new(VG_INT32, &n1, 1, NULL);
        int32_t *p = t ? vg_tensor_data(t) : NULL;
        for (int i = 0; p && i < nd; i++) p[i] = i == 0 ? (int32_t)ds.dims[0] : 1;
        alpha_shape = t ? vg_const(g, t, "shape") : NONE;
        vg_tensor_free(t);
    } else {
        vg_output sh = vg_shape_op(g, diff, VG_INT32, "Shape");
        int64_t b = 0, s = 1;
        vg_output parts[2] = {vg_slice_c(g, sh, &b, &s, 1, "strided_slice"), NONE};
        int64_t rest = nd > 0 ? nd - 1 : 0;
        parts[1] = vg_const_fill(g, VG_INT32, &rest, 1, 1.0, "ones");
        alpha_shape = vg_concat_c(g, parts, 2, 0, "concat");
    }
    vg_output alpha = vg_random_uniform(g, alpha_shape, VG_FLOAT, 0, 0, "random_uniform");
    vg_output interp = vg_add(g, real, vg_mul(g, alpha, diff, "mul"), "add");
    /* the discriminator again on the interpolates, reusing its variables */
    vg_variable_scope_opts vo;
    memset(&vo, 0, sizeof vo);
    vo.reuse = VG_REUSE_AUTO;
    vg_output disc = NONE;
    if (m->discriminator_scope && vg_variable_scope_enter(g, m->discriminator_scope, &vo)) {
        disc = m->discriminator_fn(g, interp, m->generator_inputs, m->ngenerator_inputs, m->discriminator_payload);
        vg_variable_scope_pop(g);
    }
    vg_output grad = NONE;
    vg_status st;
    if (disc.op && vg_gradients(g, &disc, 1, &interp, 1, NULL, &grad, &st) != VG_OK)
        vg_graph_set_error(g, st.code, "%s", st.msg);
    vg_output penalty = NONE;
    if (grad.op) {
        vg_output sq = vg_square(g, grad, "Square");
        if (nd > 1) {
            int32_t axes[VG_MAX_DIMS];
            for (int i = 1; i < nd; i++) axes[i - 1] = i;
            sq = vg_reduce_sum(g, sq, axes, nd - 1, false, "Sum");
        }
        vg_output slopes = vg_sqrt(g, vg_add(g, sq, vg_const_fill(g, VG_FLOAT, NULL, 0, epsilon, "add_1/y"), "add_1"),
                                   "Sqrt");
        vg_output pen = vg_sub(g, vg_div(g, slopes, vg_const_fill(g, VG_FLOAT, NULL, 0, target, "truediv/y"), "truediv"),
                               vg_const_fill(g, VG_FLOAT, NULL, 0, 1.0, "sub_1/y"), "sub_1");
        if (one_sided) pen = vg_maximum(g, vg_const_fill(g, VG_FLOAT, NULL, 0, 0.0, "Maximum/x"), pen, "Maximum");
        penalty = weighted(g, vg_square(g, pen, "Square_1"), o.weights, sc, o.loss_collection, o.reduction);
    } else if (vg_graph_status(g, NULL) == VG_OK) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "wasserstein_gradient_penalty: the discriminator output does not "
                           "depend on its input");
    }
    penalty = finish(g, penalty);
    summary(g, o.add_summaries, "gradient_penalty_loss", penalty);
    return penalty;
}

/* ---- gan_model ----------------------------------------------------------------------- */

void vg_gan_model_free(vg_gan_model *m) {
    if (!m) return;
    free(m->generator_inputs);
    free(m->generator_variables);
    free(m->discriminator_variables);
    memset(m, 0, sizeof *m);
}

static vg_code fail(vg_graph *g, vg_status *st, vg_gan_model *out) {
    vg_gan_model_free(out);
    vg_code c = vg_graph_status(g, st);
    if (c == VG_OK) c = vg_status_set(st, VG_INTERNAL, "gan_model: a model function returned no output");
    return c;
}

/* The trainable variables under scope (variables_lib.get_trainable_variables(scope)). */
static int scope_vars(vg_graph *g, const vg_vscope *scope, vg_output **out) {
    int n = vg_vscope_get_collection(g, scope, VG_TRAINABLE_VARIABLES, NULL, 0);
    *out = n > 0 ? calloc((size_t)n, sizeof **out) : NULL;
    if (n > 0 && !*out) return -1;
    if (n > 0) vg_vscope_get_collection(g, scope, VG_TRAINABLE_VARIABLES, *out, n);
    return n;
}

static void shape_str(vg_shape s, char *buf, size_t len) {
    if (s.ndims < 0) {
        snprintf(buf, len, "<unknown>");
        return;
    }
    size_t k = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < s.ndims && k < len; i++) {
        if (s.dims[i] < 0) k += (size_t)snprintf(buf + k, len - k, "?");
        else k += (size_t)snprintf(buf + k, len - k, "%lld", (long long)s.dims[i]);
        if ((i + 1 < s.ndims || s.ndims == 1) && k < len) k += (size_t)snprintf(buf + k, len - k, ",%s", i + 1 < s.ndims ? " " : "");
    }
    if (k < len) snprintf(buf + k, len - k, ")");
}

vg_code vg_gan_model_build(vg_graph *g, vg_gan_generator_fn generator_fn, void *generator_payload,
                           vg_gan_discriminator_fn discriminator_fn, void *discriminator_payload, vg_output real_data,
                           const vg_output *generator_inputs, int ninputs, const vg_gan_model_opts *opts,
                           vg_gan_model *out, vg_status *st) {
    if (out) memset(out, 0, sizeof *out);
    if (!g || !generator_fn || !discriminator_fn || !real_data.op || !out || ninputs < 0 ||
        (ninputs > 0 && !generator_inputs))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "gan_model: graph, generator_fn, discriminator_fn, real_data "
                             "and the output struct are required");
    if (vg_graph_status(g, st) != VG_OK) return st->code;
    vg_gan_model_opts d = {0};
    if (!opts) opts = &d;
    out->generator_fn = generator_fn;
    out->generator_payload = generator_payload;
    out->discriminator_fn = discriminator_fn;
    out->discriminator_payload = discriminator_payload;
    out->real_data = real_data;
    out->ngenerator_inputs = ninputs;
    if (ninputs > 0) {
        out->generator_inputs = malloc((size_t)ninputs * sizeof *out->generator_inputs);
        if (!out->generator_inputs) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "gan_model: out of memory");
        memcpy(out->generator_inputs, generator_inputs, (size_t)ninputs * sizeof *generator_inputs);
    }
    /* with variable_scope(generator_scope) as gen_scope */
    if (!vg_variable_scope_push(g, opts->generator_scope ? opts->generator_scope : "Generator", NULL))
        return fail(g, st, out);
    out->generator_scope = vg_get_variable_scope(g);
    out->generated_data = generator_fn(g, out->generator_inputs, ninputs, generator_payload);
    vg_variable_scope_pop(g);
    if (!out->generated_data.op) return fail(g, st, out);
    /* with variable_scope(discriminator_scope) as dis_scope */
    if (!vg_variable_scope_push(g, opts->discriminator_scope ? opts->discriminator_scope : "Discriminator", NULL))
        return fail(g, st, out);
    out->discriminator_scope = vg_get_variable_scope(g);
    out->discriminator_gen_outputs =
        discriminator_fn(g, out->generated_data, out->generator_inputs, ninputs, discriminator_payload);
    vg_variable_scope_pop(g);
    if (!out->discriminator_gen_outputs.op) return fail(g, st, out);
    /* with variable_scope(dis_scope, reuse=True) */
    vg_variable_scope_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.reuse = VG_REUSE_TRUE;
    if (!vg_variable_scope_enter(g, out->discriminator_scope, &ro)) return fail(g, st, out);
    out->discriminator_real_outputs =
        discriminator_fn(g, real_data, out->generator_inputs, ninputs, discriminator_payload);
    vg_variable_scope_pop(g);
    if (!out->discriminator_real_outputs.op) return fail(g, st, out);
    if (!opts->no_check_shapes) {
        vg_shape a = vg_output_shape(out->generated_data), b = vg_output_shape(real_data);
        bool ok = a.ndims < 0 || b.ndims < 0 || a.ndims == b.ndims;
        for (int i = 0; ok && a.ndims >= 0 && b.ndims >= 0 && i < a.ndims; i++)
            ok = a.dims[i] < 0 || b.dims[i] < 0 || a.dims[i] == b.dims[i];
        if (!ok) {
            char sa[128], sb[128];
            shape_str(a, sa, sizeof sa);
            shape_str(b, sb, sizeof sb);
            vg_gan_model_free(out);
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Generator output shape (%s) must be the same shape as real data (%s).", sa, sb);
        }
    }
    int ng = scope_vars(g, out->generator_scope, &out->generator_variables);
    int nd = scope_vars(g, out->discriminator_scope, &out->discriminator_variables);
    if (ng < 0 || nd < 0) {
        vg_gan_model_free(out);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "gan_model: out of memory");
    }
    out->ngenerator_variables = ng;
    out->ndiscriminator_variables = nd;
    return VG_OK;
}

/* ---- gan_loss -------------------------------------------------------------------------- */

/* losses.get_regularization_loss(scope): AddN of the REGULARIZATION_LOSSES under scope, or
 * a Const 0.0, named "total_regularization_loss". */
static vg_output scope_regularization(vg_graph *g, const vg_vscope *scope) {
    int n = scope ? vg_vscope_get_collection(g, scope, VG_REGULARIZATION_LOSSES, NULL, 0) : 0;
    if (n <= 0) return vg_const_fill(g, VG_FLOAT, NULL, 0, 0.0, "total_regularization_loss");
    vg_output *r = calloc((size_t)n, sizeof *r);
    if (!r) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "gan_loss: out of memory");
        return NONE;
    }
    vg_vscope_get_collection(g, scope, VG_REGULARIZATION_LOSSES, r, n);
    vg_output s = vg_add_n(g, r, n, "total_regularization_loss");
    free(r);
    return s;
}

static vg_output side_loss(vg_graph *g, const vg_gan_model *m, vg_gan_loss_kind k, bool generator, bool summaries) {
    vg_gan_loss_opts o;
    memset(&o, 0, sizeof o);
    o.add_summaries = summaries;
    vg_output r = m->discriminator_real_outputs, f = m->discriminator_gen_outputs;
    switch (k) {
    case VG_GAN_LOSS_WASSERSTEIN:
        return generator ? vg_gan_wasserstein_generator_loss(g, f, &o) : vg_gan_wasserstein_discriminator_loss(g, r, f, &o);
    case VG_GAN_LOSS_MINIMAX:
        return generator ? vg_gan_minimax_generator_loss(g, f, 0.0, &o)
                         : vg_gan_minimax_discriminator_loss(g, r, f, 0.25, &o);
    case VG_GAN_LOSS_MODIFIED:
        return generator ? vg_gan_modified_generator_loss(g, f, 0.0, &o)
                         : vg_gan_modified_discriminator_loss(g, r, f, 0.25, &o);
    case VG_GAN_LOSS_LEAST_SQUARES:
        return generator ? vg_gan_least_squares_generator_loss(g, f, 1.0, &o)
                         : vg_gan_least_squares_discriminator_loss(g, r, f, 1.0, 0.0, &o);
    }
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "gan_loss: unknown loss kind %d", (int)k);
    return NONE;
}

vg_gan_loss vg_gan_loss_build(vg_graph *g, const vg_gan_model *m, vg_gan_loss_kind generator_loss,
                              vg_gan_loss_kind discriminator_loss, const vg_gan_loss_build_opts *o) {
    vg_gan_loss res = {NONE, NONE};
    if (!g) return res;
    if (!m || !m->discriminator_gen_outputs.op || !m->discriminator_real_outputs.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "gan_loss: a built GAN model is required");
        return res;
    }
    vg_gan_loss_build_opts d = {0};
    if (!o) o = &d;
    if (o->gradient_penalty_weight < 0 || isnan(o->gradient_penalty_weight)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "`gradient_penalty_weight` must be greater than 0. Instead, was %g",
                           o->gradient_penalty_weight);
        return res;
    }
    bool summaries = !o->no_summaries;
    vg_output gen = side_loss(g, m, generator_loss, true, summaries);
    vg_output dis = side_loss(g, m, discriminator_loss, false, summaries);
    if (o->gradient_penalty_weight > 0) {
        vg_gan_loss_opts po;
        memset(&po, 0, sizeof po);
        po.add_summaries = summaries;
        double eps = o->gradient_penalty_epsilon > 0 ? o->gradient_penalty_epsilon : 1e-10;
        vg_output gp = vg_gan_wasserstein_gradient_penalty(g, m, eps, 1.0, false, &po);
        vg_output w = vg_const_fill(g, VG_FLOAT, NULL, 0, o->gradient_penalty_weight, "mul/x");
        dis = vg_add(g, dis, vg_mul(g, w, gp, "mul"), "add");
    }
    gen = vg_add(g, gen, scope_regularization(g, m->generator_scope), "add");
    dis = vg_add(g, dis, scope_regularization(g, m->discriminator_scope), "add");
    if (vg_graph_status(g, NULL) != VG_OK) return res;
    res.generator_loss = gen;
    res.discriminator_loss = dis;
    return res;
}

/* ---- gan_train_ops ------------------------------------------------------------------------ */

static bool under(const char *scope_name, const vg_output *o) {
    size_t n = strlen(scope_name);
    const char *name = vg_op_name(o->op);
    return n > 0 && strncmp(name, scope_name, n) == 0 && name[n] == '/';
}

/* contrib.training.create_train_op(loss, opt, variables_to_train, global_step=None,
 * update_ops) under the current name scope. */
static vg_output create_train_op(vg_graph *g, vg_output loss, vg_optimizer *opt, const vg_output *vars, int nvars,
                                 vg_op *const *upd, int nupd, const vg_gan_train_ops_opts *o, vg_status *st) {
    if (nupd > 0) {
        vg_graph_push_control_deps(g, upd, nupd);
        vg_op *barrier = vg_no_op(g, "update_barrier");
        vg_graph_pop_control_deps(g);
        vg_graph_push_control_deps(g, &barrier, 1);
        loss = vg_identity(g, loss, "control_dependency");
        vg_graph_pop_control_deps(g);
    }
    if (nvars <= 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "gan_train_ops: no variables to train under %s", vg_graph_scope(g));
        return NONE;
    }
    vg_output *grads = calloc((size_t)nvars, sizeof *grads);
    if (!grads) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "gan_train_ops: out of memory");
        return NONE;
    }
    if (vg_optimizer_compute_gradients(opt, g, loss, vars, nvars, grads, st) != VG_OK) {
        free(grads);
        return NONE;
    }
    if (o->clip_gradient_norm > 0) vg__train_clip_gradients(g, grads, nvars, o->clip_gradient_norm);
    vg_op *apply = vg_optimizer_apply_gradients(opt, g, grads, vars, nvars, NONE, NULL);
    free(grads);
    if (!apply) {
        vg_graph_status(g, st);
        return NONE;
    }
    vg_graph_push_scope(g, "train_op");
    if (!o->no_check_numerics) loss = vg_check_numerics(g, loss, "LossTensor is inf or nan", "CheckNumerics");
    vg_graph_push_control_deps(g, &apply, 1);
    vg_output t = vg_identity(g, loss, "control_dependency");
    vg_graph_pop_control_deps(g);
    vg_graph_pop_scope(g);
    if (vg_graph_status(g, st) != VG_OK) return NONE;
    vg_graph_add_to_collection(g, "train_op", t);
    return t;
}

vg_code vg_gan_train_ops_build(vg_graph *g, const vg_gan_model *m, const vg_gan_loss *loss,
                               vg_optimizer *generator_optimizer, vg_optimizer *discriminator_optimizer,
                               const vg_gan_train_ops_opts *o, vg_gan_train_ops *out, vg_status *st) {
    if (out) memset(out, 0, sizeof *out);
    if (!g || !m || !loss || !loss->generator_loss.op || !loss->discriminator_loss.op || !generator_optimizer ||
        !discriminator_optimizer || !out)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "gan_train_ops: model, loss, both optimizers and the output "
                             "struct are required");
    if (generator_optimizer == discriminator_optimizer)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "gan_train_ops: the generator and the discriminator need "
                             "optimizers of their own");
    if (vg_graph_status(g, st) != VG_OK) return st->code;
    vg_gan_train_ops_opts d = {0};
    if (!o) o = &d;
    if (o->clip_gradient_norm < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "gan_train_ops: clip_gradient_norm %g is negative",
                             o->clip_gradient_norm);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output inc = gs.op ? vg_assign_add(g, gs, vg_const_fill(g, VG_INT64, NULL, 0, 1.0, "AssignAdd/value"),
                                          "AssignAdd")
                          : NONE;
    if (!inc.op) return vg_graph_status(g, st) ? st->code : vg_status_set(st, VG_INTERNAL, "gan_train_ops: global step");
    /* _get_update_ops: the UPDATE_OPS of each scope; the rest unused */
    int nall = 0;
    const vg_output *all = vg_graph_collection(g, VG_UPDATE_OPS, &nall);
    vg_op **gupd = nall > 0 ? calloc((size_t)nall, sizeof *gupd) : NULL;
    vg_op **dupd = nall > 0 ? calloc((size_t)nall, sizeof *dupd) : NULL;
    if (nall > 0 && (!gupd || !dupd)) {
        free(gupd), free(dupd);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "gan_train_ops: out of memory");
    }
    const char *gname = vg_vscope_name(m->generator_scope), *dname = vg_vscope_name(m->discriminator_scope);
    int ng = 0, nd = 0;
    char unused[512] = "";
    size_t ul = 0;
    for (int i = 0; i < nall; i++) {
        bool in_g = under(gname, &all[i]), in_d = under(dname, &all[i]);
        if (in_g) gupd[ng++] = all[i].op;
        if (in_d) dupd[nd++] = all[i].op;
        if (!in_g && !in_d && ul + 4 < sizeof unused)
            ul += (size_t)snprintf(unused + ul, sizeof unused - ul, "%s%s", ul ? ", " : "", vg_op_name(all[i].op));
    }
    if (ul && !o->no_check_for_unused_update_ops) {
        free(gupd), free(dupd);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "There are unused update ops: {%s}", unused);
    }
    vg_graph_push_scope(g, "generator_train");
    vg_output gt = create_train_op(g, loss->generator_loss, generator_optimizer, m->generator_variables,
                                   m->ngenerator_variables, gupd, ng, o, st);
    vg_graph_pop_scope(g);
    vg_output dt = NONE;
    if (gt.op) {
        vg_graph_push_scope(g, "discriminator_train");
        dt = create_train_op(g, loss->discriminator_loss, discriminator_optimizer, m->discriminator_variables,
                             m->ndiscriminator_variables, dupd, nd, o, st);
        vg_graph_pop_scope(g);
    }
    free(gupd), free(dupd);
    if (!gt.op || !dt.op) return st->code ? st->code : vg_status_set(st, VG_INTERNAL, "gan_train_ops failed");
    out->generator_train_op = gt;
    out->discriminator_train_op = dt;
    out->global_step_inc_op = inc;
    return VG_OK;
}
