/*
 * layers.c - tf.layers (TF 1.15: the keras-based classes of tensorflow/python/layers and
 * keras/layers, and tf.contrib.layers.layer_norm) on the public API: variables through
 * tf.get_variable in the layer's variable scope, ops named as TF names them.
 */
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/layers.h"
#include "vigil/losses.h"
#include "vigil/nn_ext.h"
#include "vigil/ops_ext.h"
#include "vigil/train_lib.h"
#include <ctype.h>
#include <stdio.h>

static vg_output none_out(void) {
    vg_output n = {NULL, 0};
    return n;
}

static const char *base_name(vg_layer_kind k) {
    switch (k) {
    case VG_LAYER_DENSE: return "dense";
    case VG_LAYER_CONV1D: return "conv1d";
    case VG_LAYER_CONV2D: return "conv2d";
    case VG_LAYER_CONV2D_TRANSPOSE: return "conv2d_transpose";
    case VG_LAYER_MAX_POOLING1D: return "max_pooling1d";
    case VG_LAYER_MAX_POOLING2D: return "max_pooling2d";
    case VG_LAYER_AVERAGE_POOLING1D: return "average_pooling1d";
    case VG_LAYER_AVERAGE_POOLING2D: return "average_pooling2d";
    case VG_LAYER_FLATTEN: return "flatten";
    case VG_LAYER_DROPOUT: return "dropout";
    case VG_LAYER_BATCH_NORMALIZATION: return "batch_normalization";
    case VG_LAYER_LAYER_NORM: return "LayerNorm";
    case VG_LAYER_SEPARABLE_CONV2D: return "separable_conv2d";
    }
    return "layer";
}

static bool is_pooling(vg_layer_kind k) {
    return k == VG_LAYER_MAX_POOLING1D || k == VG_LAYER_MAX_POOLING2D || k == VG_LAYER_AVERAGE_POOLING1D ||
           k == VG_LAYER_AVERAGE_POOLING2D;
}

/* The one place a config's zeros become TF 1.15's defaults (docs/conventions.md,
 * "Option structs"); idempotent, so a resolved config may be given again. */
static void resolve_layer_config(vg_layer_config *c) {
    for (int i = 0; i < 2; i++) {
        if (c->kernel_size[i] == 0) c->kernel_size[i] = 1;
        if (c->dilation_rate[i] == 0) c->dilation_rate[i] = 1;
        if (c->pool_size[i] == 0) c->pool_size[i] = 2;
        if (c->strides[i] == 0) c->strides[i] = is_pooling(c->kind) ? c->pool_size[i] : 1;
    }
    if (!c->padding) c->padding = "valid";
    if (c->kernel_initializer.kind == VG_INIT_UNSET) c->kernel_initializer = vg_init_default();
    if (c->bias_initializer.kind == VG_INIT_UNSET) c->bias_initializer = vg_init_zeros();
    if (c->rate == 0 && !c->zero_rate) c->rate = 0.5;
    if (c->axis == 0) c->axis = -1;
    if (c->momentum == 0 && !c->zero_momentum) c->momentum = 0.99;
    if (c->epsilon == 0 && !c->zero_epsilon) c->epsilon = c->kind == VG_LAYER_LAYER_NORM ? 1e-12 : 0.001;
    if (c->beta_initializer.kind == VG_INIT_UNSET) c->beta_initializer = vg_init_zeros();
    if (c->gamma_initializer.kind == VG_INIT_UNSET) c->gamma_initializer = vg_init_ones();
    if (c->moving_mean_initializer.kind == VG_INIT_UNSET) c->moving_mean_initializer = vg_init_zeros();
    if (c->moving_variance_initializer.kind == VG_INIT_UNSET) c->moving_variance_initializer = vg_init_ones();
    if (c->begin_norm_axis == 0 && !c->zero_begin_norm_axis) c->begin_norm_axis = 1;
    if (c->begin_params_axis == 0 && !c->zero_begin_params_axis) c->begin_params_axis = -1;
    if (c->depth_multiplier == 0) c->depth_multiplier = 1;
}

vg_layer *vg_layer_new(const vg_layer_config *config) {
    if (!config) return NULL;
    vg_layer *l = vg_calloc(1, sizeof *l);
    if (!l) return NULL;
    l->config = *config;
    resolve_layer_config(&l->config);
    if (config->name) {
        snprintf(l->name_given, sizeof l->name_given, "%s", config->name);
        l->config.name = l->name_given;
    }
    return l;
}

void vg_layer_free(vg_layer *l) { vg_free(l); }

/* ------------------------------------------------------------------------ */
/* helpers */

static const char *lname(const vg_layer *l) { return l->config.name ? l->config.name : base_name(l->config.kind); }

static bool padding_upper(vg_graph *g, const vg_layer *l, char out[8]) {
    const char *p = l->config.padding ? l->config.padding : "valid";
    size_t n = strlen(p);
    if (n > 5) n = 6;
    for (size_t i = 0; i < n; i++) out[i] = (char)toupper((unsigned char)p[i]);
    out[n] = 0;
    if (strcmp(out, "SAME") && strcmp(out, "VALID")) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: padding must be \"valid\" or \"same\", got \"%s\"",
                           lname(l), p);
        return false;
    }
    return true;
}

static bool check_ndim(vg_graph *g, const vg_layer *l, const vg_shape *s, int want, bool at_least) {
    if (s->ndims < 0 || (at_least ? s->ndims < want : s->ndims != want)) {
        char b[128];
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "Input 0 of layer %s is incompatible with the layer: expected %s=%d, found ndim=%d. Full "
                           "shape received: %s",
                           lname(l), at_least ? "min_ndim" : "ndim", want, s->ndims, vg_shape_str(s, b, sizeof b));
        return false;
    }
    return true;
}

/* Layer.add_weight (tensorflow/python/layers/base.py): tf.get_variable in the layer's
 * variable scope (init vg_init_default(): the scope's initializer, else glorot_uniform;
 * the scope's regularizer as get_variable applies it), then the layer's own regularizer
 * on a new variable only (_should_add_regularizer), under "<name>/Regularizer" in the
 * layer's name scope (_handle_weight_regularization), into REGULARIZATION_LOSSES.
 * model: tf.contrib's variables.model_variable (also in "model_variables" when new). */
static vg_variable add_weight_ex(vg_graph *g, vg_layer *l, const char *name, vg_dtype dt, const int64_t *dims, int nd,
                                 vg_initializer init, vg_regularizer reg, bool trainable, bool model) {
    vg_get_variable_opts o = vg__train_var_opts(dt, dims, nd, init);
    o.not_trainable = !trainable;
    const char *vs = vg_variable_scope_name(g);
    char full[VG_LAYER_NAME_MAX * 2];
    snprintf(full, sizeof full, "%s%s%s", vs, *vs ? "/" : "", name);
    bool existed = vg_variable_scope_find(g, full).var != NULL;
    vg_variable v = vg_get_variable_ex(g, name, &o);
    if (v.var && !existed && reg.fn) {
        char rs[VG_LAYER_NAME_MAX];
        snprintf(rs, sizeof rs, "%s/Regularizer", name);
        vg_graph_push_scope(g, rs);
        vg_output loss = reg.fn(g, v.read, reg.scale, reg.arg);
        vg_graph_pop_scope(g);
        if (loss.op) vg_graph_add_to_collection(g, VG_REGULARIZATION_LOSSES, loss);
    }
    if (v.var && !existed && model) vg_graph_add_to_collection(g, VG_MODEL_VARIABLES, v.ref);
    if (v.var) {
        if (trainable && l->num_trainable_weights < 4) l->trainable_weights[l->num_trainable_weights++] = v;
        if (!trainable && l->num_non_trainable_weights < 4) l->non_trainable_weights[l->num_non_trainable_weights++] = v;
    }
    return v;
}

static vg_variable add_weight(vg_graph *g, vg_layer *l, const char *name, vg_dtype dt, const int64_t *dims, int nd,
                              vg_initializer init, vg_regularizer reg, bool trainable) {
    return add_weight_ex(g, l, name, dt, dims, nd, init, reg, trainable, l->config.kind == VG_LAYER_LAYER_NORM);
}

/* the bool value of a Const training tensor (smart_cond's constant_value) */
static int static_bool(vg_output t) {
    if (!t.op) return 0;
    const vg_tensor *v;
    if (strcmp(vg_op_type(t.op), "Const") == 0 && vg_op_attr_tensor(t.op, "value", &v) && vg_tensor_dtype(v) == VG_BOOL &&
        vg_tensor_num_elements(v) == 1)
        return ((const bool *)vg_tensor_data(v))[0] ? 1 : 0;
    return -1;
}

/* nn.moments(x, axes, keep_dims) under "moments/" (or name) */
static void moments_named(vg_graph *g, vg_output x, const int32_t *axes, int n, bool keep_dims, vg_output *mean,
                          vg_output *var, const char *name) {
    vg_graph_push_scope(g, name ? name : "moments");
    vg_output m = vg_reduce_mean(g, x, axes, n, true, "mean");
    vg_output v = vg_reduce_mean(g, vg_squared_difference(g, x, vg_stop_gradient(g, m, "StopGradient"), "SquaredDifference"),
                                 axes, n, true, "variance");
    if (!keep_dims) {
        m = vg_squeeze(g, m, axes, n, "Squeeze");
        v = vg_squeeze(g, v, axes, n, "Squeeze_1");
    }
    vg_graph_pop_scope(g);
    *mean = m;
    *var = v;
}

static void moments(vg_graph *g, vg_output x, const int32_t *axes, int n, bool keep_dims, vg_output *mean,
                    vg_output *var) {
    moments_named(g, x, axes, n, keep_dims, mean, var, NULL);
}

/* nn.batch_normalization(x, mean, variance, offset, scale, eps) under "batchnorm/" (or name) */
static vg_output batch_normalization_named(vg_graph *g, vg_output x, vg_output mean, vg_output var, vg_output offset,
                                           vg_output scale, double eps, const char *name) {
    vg_graph_push_scope(g, name ? name : "batchnorm");
    vg_dtype dt = vg_output_dtype(x);
    vg_output inv = vg_rsqrt(g, vg_add(g, var, vg_const_fill(g, dt, NULL, 0, eps, "add/y"), "add"), "Rsqrt");
    if (scale.op) inv = vg_mul(g, inv, scale, "mul");
    vg_output xs = vg_mul(g, x, inv, "mul_1");
    vg_output mi = vg_mul(g, mean, inv, "mul_2");
    vg_output sh = offset.op ? vg_sub(g, offset, mi, "sub") : vg_neg(g, mi, "Neg");
    vg_output y = vg_add(g, xs, sh, "add_1");
    vg_graph_pop_scope(g);
    return y;
}

static vg_output batch_normalization(vg_graph *g, vg_output x, vg_output mean, vg_output var, vg_output offset,
                                     vg_output scale, double eps) {
    return batch_normalization_named(g, x, mean, var, offset, scale, eps, NULL);
}

vg_code vg_nn_moments(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name,
                      vg_output *mean, vg_output *variance) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (!mean || !variance || (naxes > 0 && !axes) || naxes < 0)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "moments: axes and the mean/variance outputs are required");
    *mean = *variance = none_out();
    if (!x.op) return vg_graph_status(g, NULL);
    vg_shape s = vg_output_shape(x);
    for (int i = 0; i < naxes; i++)
        if (s.ndims >= 0 && (axes[i] < -s.ndims || axes[i] >= s.ndims))
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "moments: axis %d out of range for rank %d", axes[i],
                                      s.ndims);
    moments_named(g, x, axes, naxes, keep_dims, mean, variance, name);
    return vg_graph_status(g, NULL);
}

vg_output vg_nn_batch_normalization(vg_graph *g, vg_output x, vg_output mean, vg_output variance, vg_output offset,
                                    vg_output scale, double variance_epsilon, const char *name) {
    if (!g || !x.op || !mean.op || !variance.op) {
        if (g && vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "batch_normalization: x, mean and variance are required");
        return none_out();
    }
    return batch_normalization_named(g, x, mean, variance, offset, scale, variance_epsilon, name);
}

/* _assign_moving_average: AssignSub(var, (var - value) * (1 - momentum)) "AssignMovingAvg" */
static vg_op *assign_moving_average(vg_graph *g, vg_variable v, vg_output value, vg_output momentum) {
    char full[VG_LAYER_NAME_MAX * 2], scope[VG_LAYER_NAME_MAX * 2 + 2];
    vg_graph_unique_name(g, "AssignMovingAvg", full, sizeof full);
    const char *slash = strrchr(full, '/');
    snprintf(scope, sizeof scope, "%s/", full);
    vg_graph_push_scope(g, "/");
    vg_graph_push_scope(g, scope);
    vg_dtype dt = vg_output_dtype(v.read);
    vg_output decay = vg_sub(g, vg_const_fill(g, dt, NULL, 0, 1.0, "sub/x"), momentum, "decay");
    vg_output delta = vg_mul(g, vg_sub(g, v.read, value, "sub_1"), decay, "mul");
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    vg_output upd = vg_assign_sub(g, v.ref, delta, slash ? slash + 1 : full);
    return upd.op;
}

static void add_update(vg_graph *g, vg_layer *l, vg_op *op) {
    if (!op) return;
    vg_graph_add_to_collection(g, VG_UPDATE_OPS, vg_out(op, 0));
    if (l->num_updates < 2) l->updates[l->num_updates++] = op;
}

/* ------------------------------------------------------------------------ */
/* build (variables) and call (ops) per kind */

static bool build(vg_graph *g, vg_layer *l, vg_output x) {
    const vg_layer_config *c = &l->config;
    const bool trainable = !c->not_trainable;
    vg_shape s = vg_output_shape(x);
    vg_dtype dt = vg_output_dtype(x);
    int64_t in = s.ndims > 0 ? s.dims[s.ndims - 1] : -1;
    switch (c->kind) {
    case VG_LAYER_DENSE: {
        int64_t kd[2] = {in, c->units}, bd[1] = {c->units};
        l->kernel = add_weight(g, l, "kernel", dt, kd, 2, c->kernel_initializer, c->kernel_regularizer, trainable);
        if (!c->no_bias) l->bias = add_weight(g, l, "bias", dt, bd, 1, c->bias_initializer, c->bias_regularizer, trainable);
        break;
    }
    case VG_LAYER_CONV1D:
    case VG_LAYER_CONV2D:
    case VG_LAYER_CONV2D_TRANSPOSE: {
        int64_t kd[4], bd[1] = {c->units};
        int nd;
        if (c->kind == VG_LAYER_CONV1D) {
            kd[0] = c->kernel_size[0], kd[1] = in, kd[2] = c->units, nd = 3;
        } else if (c->kind == VG_LAYER_CONV2D) {
            kd[0] = c->kernel_size[0], kd[1] = c->kernel_size[1], kd[2] = in, kd[3] = c->units, nd = 4;
        } else {
            kd[0] = c->kernel_size[0], kd[1] = c->kernel_size[1], kd[2] = c->units, kd[3] = in, nd = 4;
        }
        l->kernel = add_weight(g, l, "kernel", dt, kd, nd, c->kernel_initializer, c->kernel_regularizer, trainable);
        if (!c->no_bias) l->bias = add_weight(g, l, "bias", dt, bd, 1, c->bias_initializer, c->bias_regularizer, trainable);
        break;
    }
    case VG_LAYER_SEPARABLE_CONV2D: {
        int64_t dd[4] = {c->kernel_size[0], c->kernel_size[1], in, c->depth_multiplier},
                pd[4] = {1, 1, in * c->depth_multiplier, c->units}, bd[1] = {c->units};
        l->depthwise_kernel =
            add_weight(g, l, "depthwise_kernel", dt, dd, 4, c->kernel_initializer, c->kernel_regularizer, trainable);
        l->pointwise_kernel =
            add_weight(g, l, "pointwise_kernel", dt, pd, 4, c->kernel_initializer, c->kernel_regularizer, trainable);
        l->kernel = l->depthwise_kernel;
        if (!c->no_bias) l->bias = add_weight(g, l, "bias", dt, bd, 1, c->bias_initializer, c->bias_regularizer, trainable);
        break;
    }
    case VG_LAYER_BATCH_NORMALIZATION: {
        int64_t pd[1] = {in};
        if (!c->no_scale) l->gamma = add_weight(g, l, "gamma", dt, pd, 1, c->gamma_initializer, c->gamma_regularizer, trainable);
        if (!c->no_center) l->beta = add_weight(g, l, "beta", dt, pd, 1, c->beta_initializer, c->beta_regularizer, trainable);
        vg_regularizer none = {0};
        l->moving_mean = add_weight(g, l, "moving_mean", dt, pd, 1, c->moving_mean_initializer, none, false);
        l->moving_variance = add_weight(g, l, "moving_variance", dt, pd, 1, c->moving_variance_initializer, none, false);
        break;
    }
    case VG_LAYER_LAYER_NORM: {
        int bpa = c->begin_params_axis < 0 ? s.ndims + c->begin_params_axis : c->begin_params_axis;
        int64_t pd[VG_MAX_DIMS];
        int np = 0;
        for (int i = bpa; i < s.ndims; i++) {
            if (s.dims[i] < 0) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: Inputs %s has undefined dimensions", lname(l),
                                   vg_op_name(x.op));
                return false;
            }
            pd[np++] = s.dims[i];
        }
        if (!c->no_center) l->beta = add_weight(g, l, "beta", dt, pd, np, c->beta_initializer, c->beta_regularizer, trainable);
        if (!c->no_scale) l->gamma = add_weight(g, l, "gamma", dt, pd, np, c->gamma_initializer, c->gamma_regularizer, trainable);
        break;
    }
    default: break;
    }
    return vg_graph_status(g, NULL) == VG_OK;
}

static vg_output bias_act(vg_graph *g, const vg_layer *l, vg_output y) {
    if (!l->config.no_bias && l->bias.var) y = vg_bias_add(g, y, l->bias.read, "BiasAdd");
    return vg__train_activate(g, y, l->config.activation);
}

static vg_output call_dense(vg_graph *g, vg_layer *l, vg_output x) {
    vg_shape s = vg_output_shape(x);
    if (s.ndims == 2) return bias_act(g, l, vg_matmul(g, x, l->kernel.read, false, false, "MatMul"));
    /* tensordot over the last axis: reshape to [-1, in], MatMul, reshape back */
    vg_graph_push_scope(g, "Tensordot");
    int64_t in = s.dims[s.ndims - 1];
    int64_t flat[2] = {-1, in};
    vg_output x2 = vg_reshape_c(g, x, flat, 2, "Reshape");
    vg_output m = vg_matmul(g, x2, l->kernel.read, false, false, "MatMul");
    vg_output sh = vg_shape_op(g, x, VG_INT32, "Shape");
    int64_t b0 = 0, n0 = s.ndims - 1;
    vg_output lead = vg_slice_c(g, sh, &b0, &n0, 1, "Slice");
    int32_t u = (int32_t)l->config.units;
    vg_output parts[2] = {lead, vg_const_i32_vec(g, &u, 1, "Const")};
    vg_output shape = vg_concat_c(g, parts, 2, 0, "concat");
    vg_graph_pop_scope(g);
    vg_output y = vg_reshape(g, m, shape, "Tensordot");
    return bias_act(g, l, y);
}

/* Pushes "<current scope>/<op>/" verbatim: the scope TF opens inside an op's name for
 * its constant inputs, without reserving a name. */
static void push_inside(vg_graph *g, const char *op) {
    char buf[VG_LAYER_NAME_MAX * 2];
    const char *cur = vg_graph_scope(g);
    snprintf(buf, sizeof buf, "%s%s%s/", cur, *cur ? "/" : "", op);
    vg_graph_push_scope(g, buf);
}

static vg_output call_conv(vg_graph *g, vg_layer *l, vg_output x) {
    const vg_layer_config *c = &l->config;
    char pad[8];
    if (!padding_upper(g, l, pad)) return none_out();
    int nsp = c->kind == VG_LAYER_CONV1D ? 1 : 2;
    bool dilated = c->dilation_rate[0] != 1 || (nsp == 2 && c->dilation_rate[1] != 1);
    if (dilated && c->kind != VG_LAYER_CONV2D_TRANSPOSE) {
        /* nn_ops' _WithSpaceToBatch (Convolution, and separable_conv2d's
         * with_space_to_batch): SpaceToBatchND with the paddings of
         * required_space_to_batch_paddings, the op VALID, BatchToSpaceND with crops */
        vg_shape s = vg_output_shape(x);
        int32_t block[2], pads[4], crops[4];
        bool same = strcmp(pad, "SAME") == 0;
        int64_t ks[2] = {c->kernel_size[0], c->kernel_size[1]}, rs[2] = {c->dilation_rate[0], c->dilation_rate[1]};
        vg__train_atrous_paddings(nsp, s.dims + 1, ks, rs, same, block, pads, crops);
        int64_t d2[2] = {nsp, 2};
        const char *sep_full = NULL;
        char sep_name[VG_LAYER_NAME_MAX * 2];
        if (c->kind == VG_LAYER_SEPARABLE_CONV2D) {
            sep_full = vg_graph_push_scope(g, "separable_conv2d");
            snprintf(sep_name, sizeof sep_name, "%s", sep_full ? sep_full : "separable_conv2d");
        }
        push_inside(g, "SpaceToBatchND");
        vg_output bs = vg_const_i32_vec(g, block, nsp, "block_shape");
        vg_output ps = vg_const_array(g, VG_INT32, d2, 2, pads, "paddings");
        vg_graph_pop_scope(g);
        vg_output sb = vg_space_to_batch_nd(g, x, bs, ps, "SpaceToBatchND");
        int64_t one[4] = {1, 1, 1, 1};
        vg_output y;
        if (c->kind == VG_LAYER_CONV1D) {
            vg_graph_push_scope(g, "conv1d");
            vg_output xe = vg_expand_dims(g, sb, 1, "ExpandDims");
            vg_output ke = vg_expand_dims(g, l->kernel.read, 0, "ExpandDims_1");
            y = vg_conv2d(g, xe, ke, one, "VALID", "Conv2D");
            int32_t ax = 1;
            y = vg_squeeze(g, y, &ax, 1, "Squeeze");
            vg_graph_pop_scope(g);
        } else if (c->kind == VG_LAYER_SEPARABLE_CONV2D) {
            y = vg_depthwise_conv2d_native(g, sb, l->depthwise_kernel.read, one, "VALID", "depthwise");
        } else {
            y = vg_conv2d(g, sb, l->kernel.read, one, "VALID", "Conv2D");
        }
        push_inside(g, "BatchToSpaceND");
        vg_output cs = vg_const_array(g, VG_INT32, d2, 2, crops, "crops");
        vg_graph_pop_scope(g);
        y = vg_batch_to_space_nd(g, y, bs, cs, "BatchToSpaceND");
        if (c->kind == VG_LAYER_SEPARABLE_CONV2D) {
            vg_graph_pop_scope(g);
            vg_graph_push_scope(g, "/");
            y = vg_conv2d(g, y, l->pointwise_kernel.read, one, "VALID", sep_name);
            vg_graph_pop_scope(g);
        }
        return bias_act(g, l, y);
    }
    if (c->kind == VG_LAYER_CONV1D) {
        vg_graph_push_scope(g, "conv1d");
        vg_output xe = vg_expand_dims(g, x, 1, "ExpandDims");
        vg_output ke = vg_expand_dims(g, l->kernel.read, 0, "ExpandDims_1");
        int64_t st[4] = {1, 1, c->strides[0], 1};
        vg_output y = vg_conv2d(g, xe, ke, st, pad, "Conv2D");
        int32_t ax = 1;
        y = vg_squeeze(g, y, &ax, 1, "Squeeze");
        vg_graph_pop_scope(g);
        return bias_act(g, l, y);
    }
    if (c->kind == VG_LAYER_CONV2D) {
        int64_t st[4] = {1, c->strides[0], c->strides[1], 1};
        return bias_act(g, l, vg_conv2d(g, x, l->kernel.read, st, pad, "Conv2D"));
    }
    if (c->kind == VG_LAYER_SEPARABLE_CONV2D) {
        /* nn.separable_conv2d: "separable_conv2d/depthwise", then a 1x1 VALID Conv2D
         * named after the name scope */
        int64_t st[4] = {1, c->strides[0], c->strides[1], 1}, one[4] = {1, 1, 1, 1};
        const char *full = vg_graph_push_scope(g, "separable_conv2d");
        char opname[VG_LAYER_NAME_MAX * 2];
        snprintf(opname, sizeof opname, "%s", full ? full : "separable_conv2d");
        vg_output d = vg_depthwise_conv2d_native(g, x, l->depthwise_kernel.read, st, pad, "depthwise");
        vg_graph_pop_scope(g);
        vg_graph_push_scope(g, "/");
        vg_output y = vg_conv2d(g, d, l->pointwise_kernel.read, one, "VALID", opname);
        vg_graph_pop_scope(g);
        return bias_act(g, l, y);
    }
    /* conv2d_transpose: Conv2DBackpropInput with output size deconv_output_length */
    vg_shape s = vg_output_shape(x);
    int64_t oh = -1, ow = -1;
    bool same = strcmp(pad, "SAME") == 0;
    for (int k = 0; k < 2; k++) {
        int64_t d = s.dims[1 + k], kk = c->kernel_size[k], st = c->strides[k];
        if (d < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: the spatial dimensions of the input must be known",
                               lname(l));
            return none_out();
        }
        int64_t o = same ? d * st : d * st + (kk - st > 0 ? kk - st : 0);
        if (k == 0) oh = o;
        else ow = o;
    }
    int64_t st[4] = {1, c->strides[0], c->strides[1], 1};
    vg_output sizes;
    if (s.dims[0] >= 0) {
        int32_t v[4] = {(int32_t)s.dims[0], (int32_t)oh, (int32_t)ow, (int32_t)c->units};
        sizes = vg_const_i32_vec(g, v, 4, "stack");
    } else {
        vg_output sh = vg_shape_op(g, x, VG_INT32, "Shape");
        int32_t b0 = 0, e0 = 1;
        vg_strided_slice_masks m;
        memset(&m, 0, sizeof m);
        m.shrink_axis_mask = 1;
        vg_output batch = vg_strided_slice_c(g, sh, &b0, &e0, NULL, 1, &m, "strided_slice");
        vg_output parts[4] = {batch, vg_const_i32(g, (int32_t)oh, "stack/1"), vg_const_i32(g, (int32_t)ow, "stack/2"),
                              vg_const_i32(g, (int32_t)c->units, "stack/3")};
        sizes = vg_pack(g, parts, 4, 0, "stack");
    }
    vg_output y = vg_conv2d_backprop_input(g, sizes, l->kernel.read, x, st, pad, "conv2d_transpose");
    if (s.dims[0] < 0) { /* TF's set_shape: the static shape [?, oh, ow, filters] */
        int64_t d[4] = {-1, oh, ow, c->units};
        y = vg_reshape_c(g, y, d, 4, "Reshape");
    }
    return bias_act(g, l, y);
}

static vg_output call_pool(vg_graph *g, vg_layer *l, vg_output x) {
    const vg_layer_config *c = &l->config;
    char pad[8];
    if (!padding_upper(g, l, pad)) return none_out();
    bool maxp = c->kind == VG_LAYER_MAX_POOLING1D || c->kind == VG_LAYER_MAX_POOLING2D;
    if (c->kind == VG_LAYER_MAX_POOLING1D || c->kind == VG_LAYER_AVERAGE_POOLING1D) {
        vg_output xe = vg_expand_dims(g, x, 2, "ExpandDims");
        int64_t k[4] = {1, c->pool_size[0], 1, 1}, st[4] = {1, c->strides[0], 1, 1};
        vg_output y = maxp ? vg_max_pool(g, xe, k, st, pad, "MaxPool") : vg_avg_pool(g, xe, k, st, pad, "AvgPool");
        int32_t ax = 2;
        return vg_squeeze(g, y, &ax, 1, "Squeeze");
    }
    int64_t k[4] = {1, c->pool_size[0], c->pool_size[1], 1}, st[4] = {1, c->strides[0], c->strides[1], 1};
    return maxp ? vg_max_pool(g, x, k, st, pad, "MaxPool") : vg_avg_pool(g, x, k, st, pad, "AvgPool");
}

static vg_output call_flatten(vg_graph *g, vg_layer *l, vg_output x) {
    vg_shape s = vg_output_shape(x);
    int64_t n = 1;
    for (int i = 1; i < s.ndims; i++) {
        if (s.dims[i] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: trailing dimensions must be known", lname(l));
            return none_out();
        }
        n *= s.dims[i];
    }
    int64_t dims[2] = {-1, n};
    return vg_reshape_c(g, x, dims, 2, "Reshape");
}

/* nn.dropout(x, rate, noise_shape, seed) under "dropout/" */
static vg_output dropout_op(vg_graph *g, vg_layer *l, vg_output x) {
    const vg_layer_config *c = &l->config;
    vg_dtype dt = vg_output_dtype(x);
    vg_graph_push_scope(g, "dropout");
    vg_output shape;
    if (!c->noise_shape) {
        shape = vg_shape_op(g, x, VG_INT32, "Shape");
    } else {
        vg_shape s = vg_output_shape(x);
        bool dyn = false;
        int32_t v[VG_MAX_DIMS];
        for (int i = 0; i < c->noise_ndims && i < VG_MAX_DIMS; i++) {
            int64_t d = c->noise_shape[i] >= 0 ? c->noise_shape[i] : (i < s.ndims ? s.dims[i] : -1);
            if (d < 0) dyn = true;
            v[i] = (int32_t)d;
        }
        if (!dyn) {
            shape = vg_const_i32_vec(g, v, c->noise_ndims, "noise_shape");
        } else {
            vg_output sh = vg_shape_op(g, x, VG_INT32, "Shape");
            vg_output parts[VG_MAX_DIMS];
            for (int i = 0; i < c->noise_ndims && i < VG_MAX_DIMS; i++)
                parts[i] = v[i] >= 0 ? vg_const_i32(g, v[i], "Const")
                                     : vg_gather(g, sh, vg_const_i32(g, i, "Const"), 0, "GatherV2");
            shape = vg_pack(g, parts, c->noise_ndims, 0, "stack");
        }
    }
    vg_output rnd = vg_random_uniform_range(g, shape, 0.0, 1.0, dt, c->seed, "random_uniform");
    vg_output rate = vg_const_fill(g, dt, NULL, 0, c->rate, "rate");
    vg_output keep = vg_greater_equal(g, rnd, rate, "GreaterEqual");
    vg_output scale = vg_const_fill(g, dt, NULL, 0, 1.0 / (1.0 - c->rate), "truediv");
    vg_output y = vg_mul(g, vg_mul(g, x, scale, "mul"), vg_cast(g, keep, dt, "Cast"), "mul_1");
    vg_graph_pop_scope(g);
    return y;
}

static vg_output call_dropout(vg_graph *g, vg_layer *l, vg_output x, vg_output training) {
    int sb = static_bool(training);
    if (sb == 0 || l->config.rate == 0) return vg_identity(g, x, "Identity");
    vg_output d = dropout_op(g, l, x);
    if (sb == 1) return d;
    return vg_select(g, training, d, vg_identity(g, x, "Identity"), "cond/Merge");
}

static vg_output call_batch_norm(vg_graph *g, vg_layer *l, vg_output x, vg_output training) {
    const vg_layer_config *c = &l->config;
    vg_shape s = vg_output_shape(x);
    vg_dtype dt = vg_output_dtype(x);
    int64_t ch = s.dims[s.ndims - 1];
    int sb = static_bool(training);
    vg_output gamma = l->gamma.var ? l->gamma.read : vg_const_fill(g, dt, &ch, 1, 1.0, "Const");
    vg_output beta = l->beta.var ? l->beta.read : vg_const_fill(g, dt, &ch, 1, 0.0, "Const_1");
    vg_output y, mean, var;
    if (s.ndims == 4) {
        double eps = c->epsilon < 1.001e-5 ? 1.001e-5 : c->epsilon; /* nn.fused_batch_norm's min_epsilon */
        vg_output yt = none_out(), yi = none_out();
        if (sb != 0) {
            int64_t zero = 0;
            vg_output e1 = vg_const_fill(g, dt, &zero, 1, 0, "Const_2"), e2 = vg_const_fill(g, dt, &zero, 1, 0, "Const_3");
            vg_op *t = vg_fused_batch_norm_v3(g, x, gamma, beta, e1, e2, (float)eps, true, "FusedBatchNormV3");
            if (!t) return none_out();
            yt = vg_out(t, 0);
            mean = vg_out(t, 1);
            var = vg_out(t, 2);
        }
        if (sb != 1) {
            vg_op *i = vg_fused_batch_norm_v3(g, x, gamma, beta, l->moving_mean.read, l->moving_variance.read, (float)eps,
                                              false, sb == 0 ? "FusedBatchNormV3" : "FusedBatchNormV3_1");
            if (!i) return none_out();
            yi = vg_out(i, 0);
        }
        y = sb == 1 ? yt : sb == 0 ? yi : vg_select(g, training, yt, yi, "cond/Merge");
    } else {
        int32_t axes[VG_MAX_DIMS];
        int n = 0;
        for (int i = 0; i < s.ndims - 1; i++) axes[n++] = i;
        vg_output bm, bv;
        if (sb != 0) moments(g, x, axes, n, false, &bm, &bv);
        mean = sb == 1 ? bm : sb == 0 ? l->moving_mean.read : vg_select(g, training, bm, l->moving_mean.read, "cond/Merge");
        var = sb == 1 ? bv : sb == 0 ? l->moving_variance.read
                                     : vg_select(g, training, bv, l->moving_variance.read, "cond_1/Merge");
        y = batch_normalization(g, x, mean, var, l->beta.var ? l->beta.read : none_out(),
                                l->gamma.var ? l->gamma.read : none_out(), c->epsilon);
    }
    if (sb != 0) {
        vg_output mom = vg_const_fill(g, dt, NULL, 0, c->momentum, "Const_4");
        if (sb < 0)
            mom = vg_select(g, training, mom, vg_const_fill(g, dt, NULL, 0, 1.0, "Const_5"), "cond_2/Merge");
        add_update(g, l, assign_moving_average(g, l->moving_mean, mean, mom));
        add_update(g, l, assign_moving_average(g, l->moving_variance, var, mom));
    }
    return y;
}

static vg_output call_layer_norm(vg_graph *g, vg_layer *l, vg_output x) {
    const vg_layer_config *c = &l->config;
    vg_shape s = vg_output_shape(x);
    int bna = c->begin_norm_axis < 0 ? s.ndims + c->begin_norm_axis : c->begin_norm_axis;
    int32_t axes[VG_MAX_DIMS];
    int n = 0;
    for (int i = bna; i < s.ndims; i++) axes[n++] = i;
    vg_output mean, var;
    moments(g, x, axes, n, true, &mean, &var);
    /* variance_epsilon: TF's contrib layer_norm fixes 1e-12 (the config's default); a
     * config asking for another value gets it */
    return batch_normalization(g, x, mean, var, l->beta.var ? l->beta.read : none_out(),
                               l->gamma.var ? l->gamma.read : none_out(), c->epsilon);
}

/* ------------------------------------------------------------------------ */

static bool check_input(vg_graph *g, vg_layer *l, vg_output x) {
    const vg_layer_config *c = &l->config;
    vg_shape s = vg_output_shape(x);
    bool conv = c->kind == VG_LAYER_CONV1D || c->kind == VG_LAYER_CONV2D || c->kind == VG_LAYER_CONV2D_TRANSPOSE ||
                c->kind == VG_LAYER_SEPARABLE_CONV2D;
    switch (c->kind) {
    case VG_LAYER_DENSE:
        if (!check_ndim(g, l, &s, 2, true)) return false;
        if (s.dims[s.ndims - 1] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "layer %s: The last dimension of the inputs to `Dense` should be defined. Found `None`.",
                               lname(l));
            return false;
        }
        break;
    case VG_LAYER_CONV1D:
    case VG_LAYER_MAX_POOLING1D:
    case VG_LAYER_AVERAGE_POOLING1D:
        if (!check_ndim(g, l, &s, 3, false)) return false;
        break;
    case VG_LAYER_CONV2D:
    case VG_LAYER_CONV2D_TRANSPOSE:
    case VG_LAYER_SEPARABLE_CONV2D:
    case VG_LAYER_MAX_POOLING2D:
    case VG_LAYER_AVERAGE_POOLING2D:
        if (!check_ndim(g, l, &s, 4, false)) return false;
        break;
    case VG_LAYER_FLATTEN:
        if (!check_ndim(g, l, &s, 1, true)) return false;
        break;
    case VG_LAYER_BATCH_NORMALIZATION:
        if (!check_ndim(g, l, &s, 2, true)) return false;
        if (c->axis != -1 && c->axis != s.ndims - 1) {
            vg_graph_set_error(g, VG_UNIMPLEMENTED, "layer %s: only axis=-1 (channels last) is supported, got %d",
                               lname(l), c->axis);
            return false;
        }
        if (s.dims[s.ndims - 1] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "layer %s: Input has undefined `axis` dimension. Input shape: [..., ?]", lname(l));
            return false;
        }
        break;
    case VG_LAYER_LAYER_NORM:
        if (!check_ndim(g, l, &s, 1, true)) return false;
        if (c->begin_norm_axis >= s.ndims || c->begin_norm_axis < -s.ndims || c->begin_params_axis >= s.ndims ||
            c->begin_params_axis < -s.ndims) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "layer %s: begin_norm_axis (%d) and begin_params_axis (%d) must be < rank(inputs) (%d)",
                               lname(l), c->begin_norm_axis, c->begin_params_axis, s.ndims);
            return false;
        }
        break;
    case VG_LAYER_DROPOUT:
        if (c->rate < 0 || c->rate >= 1) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: rate must be a scalar tensor or a float in the "
                                                       "range [0, 1), got %g", lname(l), c->rate);
            return false;
        }
        break;
    }
    if (conv) {
        if (s.dims[s.ndims - 1] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "layer %s: The channel dimension of the inputs should be defined. Found `None`.", lname(l));
            return false;
        }
        int nk = c->kind == VG_LAYER_CONV1D ? 1 : 2;
        for (int i = 0; i < nk; i++) {
            if (c->kernel_size[i] <= 0 || c->strides[i] <= 0 || c->dilation_rate[i] <= 0) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: kernel_size, strides and dilation_rate must be "
                                                           "positive", lname(l));
                return false;
            }
            if (c->dilation_rate[i] != 1 && c->kind == VG_LAYER_CONV2D_TRANSPOSE) {
                /* tf.layers.Conv2DTranspose of TF 1.15 takes no dilation_rate */
                vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                   "layer %s: conv2d_transpose takes no dilation_rate (tf.layers.Conv2DTranspose has "
                                   "none)", lname(l));
                return false;
            }
            if (c->dilation_rate[i] != 1 && (c->strides[0] != 1 || c->strides[1] != 1)) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                   "layer %s: strides > 1 not supported in conjunction with dilation_rate > 1", lname(l));
                return false;
            }
            if (c->dilation_rate[i] != 1 && s.dims[1 + i] < 0) {
                vg_graph_set_error(g, VG_UNIMPLEMENTED,
                                   "layer %s: dilation_rate > 1 needs the input's spatial dimensions known", lname(l));
                return false;
            }
        }
    }
    if (c->kind == VG_LAYER_SEPARABLE_CONV2D && c->depth_multiplier <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: depth_multiplier must be positive, got %d", lname(l),
                           c->depth_multiplier);
        return false;
    }
    if ((c->kind == VG_LAYER_DENSE || conv) && c->units <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: units/filters must be positive, got %lld", lname(l),
                           (long long)c->units);
        return false;
    }
    if (c->kind >= VG_LAYER_MAX_POOLING1D && c->kind <= VG_LAYER_AVERAGE_POOLING2D) {
        int np = (c->kind == VG_LAYER_MAX_POOLING1D || c->kind == VG_LAYER_AVERAGE_POOLING1D) ? 1 : 2;
        for (int i = 0; i < np; i++)
            if (c->pool_size[i] <= 0 || c->strides[i] <= 0) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: pool_size and strides must be positive", lname(l));
                return false;
            }
    }
    if (l->built && s.ndims > 0 && l->built_ndims > 0 &&
        s.dims[s.ndims - 1] != l->built_dims[l->built_ndims - 1] && s.dims[s.ndims - 1] >= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "Input 0 of layer %s is incompatible with the layer: expected axis -1 of input shape to "
                           "have value %lld but received input with shape [..., %lld]",
                           lname(l), (long long)l->built_dims[l->built_ndims - 1], (long long)s.dims[s.ndims - 1]);
        return false;
    }
    return true;
}

static vg_output call(vg_graph *g, vg_layer *l, vg_output x, vg_output training) {
    switch (l->config.kind) {
    case VG_LAYER_DENSE: return call_dense(g, l, x);
    case VG_LAYER_CONV1D:
    case VG_LAYER_CONV2D:
    case VG_LAYER_CONV2D_TRANSPOSE:
    case VG_LAYER_SEPARABLE_CONV2D: return call_conv(g, l, x);
    case VG_LAYER_MAX_POOLING1D:
    case VG_LAYER_MAX_POOLING2D:
    case VG_LAYER_AVERAGE_POOLING1D:
    case VG_LAYER_AVERAGE_POOLING2D: return call_pool(g, l, x);
    case VG_LAYER_FLATTEN: return call_flatten(g, l, x);
    case VG_LAYER_DROPOUT: return call_dropout(g, l, x, training);
    case VG_LAYER_BATCH_NORMALIZATION: return call_batch_norm(g, l, x, training);
    case VG_LAYER_LAYER_NORM: return call_layer_norm(g, l, x);
    }
    return none_out();
}

/* The layer's variable scope, captured once per graph as tf.layers captures it: the
 * functional form with a name opens tf.variable_scope(name) when the layer is made
 * (the _scope argument); otherwise the first call's _set_scope opens
 * tf.variable_scope(name or base name) when reuse is set, else tf.variable_scope(None,
 * default_name=name or base name), made unique ("dense", "dense_1"). layer_norm is
 * tf.contrib.layers.layer_norm's tf.variable_scope(scope, "LayerNorm", reuse=reuse). */
static bool capture_scope(vg_graph *g, vg_layer *l) {
    uint64_t serial = vg__train_scope_store_serial(g);
    if (l->scope && l->scope_graph == g && l->scope_serial == serial) return true;
    if (l->scope_graph != g || l->scope_serial != serial) l->built = false; /* a new graph: build there */
    const vg_layer_config *c = &l->config;
    const char *base = base_name(c->kind);
    vg_variable_scope_opts o;
    memset(&o, 0, sizeof o);
    const char *got;
    if (c->kind == VG_LAYER_LAYER_NORM) {
        o.default_name = base;
        o.reuse = c->reuse;
        got = vg_variable_scope_push(g, c->name, &o);
    } else if ((l->functional && c->name) || c->reuse != VG_REUSE_INHERIT) {
        got = vg_variable_scope_push(g, c->name ? c->name : base, &o);
    } else {
        o.default_name = c->name ? c->name : base;
        got = vg_variable_scope_push(g, NULL, &o);
    }
    if (!got) return false;
    l->scope = vg_get_variable_scope(g);
    l->scope_graph = g;
    l->scope_serial = serial;
    snprintf(l->name, sizeof l->name, "%s", got);
    snprintf(l->name_scope, sizeof l->name_scope, "%s", vg_variable_scope_original_name_scope(g));
    vg_variable_scope_pop(g);
    return l->scope != NULL;
}

vg_output vg_layer_apply(vg_layer *l, vg_graph *g, vg_output x, vg_output training) {
    if (!g) return none_out();
    if (!l) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer is NULL");
        return none_out();
    }
    if (!x.op || vg_graph_status(g, NULL) != VG_OK) return none_out();
    if (training.op && (vg_output_dtype(training) != VG_BOOL || vg_output_shape(training).ndims > 0)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer %s: training must be a bool scalar", lname(l));
        return none_out();
    }
    if (!check_input(g, l, x)) return none_out();
    l->num_updates = 0;
    if (!capture_scope(g, l)) return none_out();
    /* Layer.__call__: the captured scope re-entered (reuse=True once built) without a
     * new name scope, the ops in the name scope it first opened */
    const vg_layer_config *c = &l->config;
    vg_variable_scope_opts o;
    memset(&o, 0, sizeof o);
    o.no_name_scope = true;
    o.reuse = l->built ? VG_REUSE_TRUE : c->reuse;
    if (!vg_variable_scope_enter(g, l->scope, &o)) return none_out();
    vg_graph_push_scope(g, l->name_scope[0] ? l->name_scope : "/");
    vg_output y = none_out();
    bool ok = true;
    if (!l->built) {
        vg_shape s = vg_output_shape(x);
        l->built_ndims = s.ndims;
        for (int i = 0; i < s.ndims; i++) l->built_dims[i] = s.dims[i];
        ok = build(g, l, x);
        l->built = ok;
    }
    if (ok) y = call(g, l, x, training);
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    return vg_graph_status(g, NULL) == VG_OK ? y : none_out();
}

vg_output vg_layers_apply(vg_graph *g, const vg_layer_config *config, vg_output x, vg_output training) {
    if (!g) return none_out();
    if (!config) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "layer config is NULL");
        return none_out();
    }
    vg_layer *l = vg_layer_new(config);
    if (!l) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory creating layer");
        return none_out();
    }
    l->functional = true;
    vg_output y = vg_layer_apply(l, g, x, training);
    vg_layer_free(l);
    return y;
}

/* ------------------------------------------------------------------------ */
/* shorthands */

vg_output vg_layers_dense(vg_graph *g, vg_output x, int64_t units, vg_activation act, const char *name) {
    vg_layer_config c = {.kind = VG_LAYER_DENSE};
    c.units = units;
    c.activation = act;
    c.name = name;
    return vg_layers_apply(g, &c, x, none_out());
}

vg_output vg_layers_conv2d(vg_graph *g, vg_output x, int64_t filters, int kh, int kw, int stride,
                           const char *padding, vg_activation act, const char *name) {
    vg_layer_config c = {.kind = VG_LAYER_CONV2D};
    c.units = filters;
    c.kernel_size[0] = kh;
    c.kernel_size[1] = kw;
    c.strides[0] = c.strides[1] = stride;
    c.padding = padding;
    c.activation = act;
    c.name = name;
    return vg_layers_apply(g, &c, x, none_out());
}

/* A square 2-D pooling layer of the given kind (max or average). */
static vg_output pooling2d(vg_graph *g, vg_layer_kind kind, vg_output x, int pool, int stride, const char *padding,
                           const char *name) {
    vg_layer_config c = {.kind = kind};
    c.pool_size[0] = c.pool_size[1] = pool;
    c.strides[0] = c.strides[1] = stride;
    c.padding = padding;
    c.name = name;
    return vg_layers_apply(g, &c, x, none_out());
}

vg_output vg_layers_max_pooling2d(vg_graph *g, vg_output x, int pool, int stride, const char *padding,
                                  const char *name) {
    return pooling2d(g, VG_LAYER_MAX_POOLING2D, x, pool, stride, padding, name);
}

vg_output vg_layers_average_pooling2d(vg_graph *g, vg_output x, int pool, int stride, const char *padding,
                                      const char *name) {
    return pooling2d(g, VG_LAYER_AVERAGE_POOLING2D, x, pool, stride, padding, name);
}

vg_output vg_layers_flatten(vg_graph *g, vg_output x, const char *name) {
    vg_layer_config c = {.kind = VG_LAYER_FLATTEN};
    c.name = name;
    return vg_layers_apply(g, &c, x, none_out());
}

vg_output vg_layers_dropout(vg_graph *g, vg_output x, double rate, vg_output training, int64_t seed, const char *name) {
    vg_layer_config c = {.kind = VG_LAYER_DROPOUT};
    c.rate = rate;
    c.zero_rate = rate == 0;
    c.seed = seed;
    c.name = name;
    return vg_layers_apply(g, &c, x, training);
}

vg_output vg_layers_batch_normalization(vg_graph *g, vg_output x, vg_output training, double momentum, double epsilon,
                                        const char *name) {
    vg_layer_config c = {.kind = VG_LAYER_BATCH_NORMALIZATION};
    c.momentum = momentum;
    c.zero_momentum = momentum == 0;
    c.epsilon = epsilon;
    c.zero_epsilon = epsilon == 0;
    c.name = name;
    return vg_layers_apply(g, &c, x, training);
}

vg_output vg_layer_norm(vg_graph *g, vg_output x, const char *scope) {
    vg_layer_config c = {.kind = VG_LAYER_LAYER_NORM};
    c.name = scope;
    return vg_layers_apply(g, &c, x, none_out());
}

vg_output vg_zero_fraction(vg_graph *g, vg_output value, const char *name) {
    if (!g || !value.op) return none_out();
    vg_graph_push_scope(g, name ? name : "zero_fraction");
    vg_output zero = vg_const_fill(g, vg_output_dtype(value), NULL, 0, 0.0, "zero");
    vg_output eq = vg_cast(g, vg_equal(g, value, zero, "Equal"), VG_FLOAT, "Cast");
    vg_output m = vg_reduce_mean(g, eq, NULL, -1, false, "Mean");
    vg_graph_pop_scope(g);
    return m;
}

/* tf.contrib.layers.fully_connected(inputs, num_outputs, activation_fn, scope): the
 * variable scope "fully_connected" (made unique) holding "weights" (xavier_initializer:
 * glorot_uniform) and "biases" (zeros), MatMul + BiasAdd inside it, then the activation. */
vg_output vg_fully_connected(vg_graph *g, vg_output x, int64_t num_outputs, vg_activation act, const char *scope) {
    if (!g) return none_out();
    if (vg_graph_status(g, NULL) != VG_OK) return none_out();
    vg_shape s = vg_output_shape(x);
    if (!x.op || num_outputs <= 0 || s.ndims < 2 || s.dims[s.ndims - 1] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "fully_connected: inputs must be a tensor of rank >= 2 with a known last dimension and "
                           "num_outputs > 0 (got rank %d, num_outputs %lld)",
                           x.op ? s.ndims : -1, (long long)num_outputs);
        return none_out();
    }
    vg_variable_scope_opts so;
    memset(&so, 0, sizeof so);
    so.default_name = "fully_connected";
    if (!vg_variable_scope_push(g, scope, &so)) return none_out();
    vg_dtype dt = vg_output_dtype(x);
    int64_t in = s.dims[s.ndims - 1];
    int64_t wd[2] = {in, num_outputs}, bd[1] = {num_outputs};
    /* the Dense layer's kernel and bias, renamed "weights" and "biases" and made by
     * variables.model_variable (_build_variable_getter): "model_variables" too when new;
     * weights_initializer xavier_initializer() (glorot_uniform), biases zeros */
    vg_layer dummy;
    memset(&dummy, 0, sizeof dummy);
    vg_regularizer none_reg = {0};
    vg_variable w = add_weight_ex(g, &dummy, "weights", dt, wd, 2, vg_init_glorot_uniform(0), none_reg, true, true);
    vg_variable b = add_weight_ex(g, &dummy, "biases", dt, bd, 1, vg_init_zeros(), none_reg, true, true);
    vg_output y = none_out();
    if (w.var && b.var) {
        vg_output x2 = x;
        if (s.ndims > 2) x2 = vg_reshape_c(g, x, (const int64_t[]){-1, in}, 2, "Reshape");
        y = vg_bias_add(g, vg_matmul(g, x2, w.read, false, false, "MatMul"), b.read, "BiasAdd");
        if (s.ndims > 2)
            y = vg__train_unflatten_dense(g, y, s, num_outputs,
                                          "fully_connected: more than one unknown leading dimension");
        if (y.op) y = vg__train_activate(g, y, act);
    }
    vg_variable_scope_pop(g);
    return vg_graph_status(g, NULL) == VG_OK ? y : none_out();
}
