/* resnet_model.c - port of research/resnet/resnet_model.py (ResNet for CIFAR: residual
 * or bottleneck units, hand-written batch norm with moving averages kept by
 * moving_averages.assign_moving_average, leaky relu, L2 weight decay on the DW
 * variables, Momentum or SGD). Variable and scope names are the Python's. */
#include "resnet_model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void resnet_model_init(resnet_model *m, resnet_hparams hps, vg_output images, vg_output labels, const char *mode) {
    memset(m, 0, sizeof *m);
    m->hps = hps;
    m->_images = images;
    m->labels = labels;
    m->mode = mode;
}

void resnet_model_free(resnet_model *m) {
    free(m->_extra_train_ops);
    m->_extra_train_ops = NULL;
    m->n_extra_train_ops = m->cap_extra_train_ops = 0;
}

static bool train_mode(const resnet_model *m) { return strcmp(m->mode, "train") == 0; }

/* self._extra_train_ops.append(op) */
static void extra_train_ops_append(vg_graph *g, resnet_model *m, vg_output t) {
    if (!t.op) return;
    if (m->n_extra_train_ops == m->cap_extra_train_ops) {
        int cap = m->cap_extra_train_ops ? 2 * m->cap_extra_train_ops : 16;
        vg_op **p = realloc(m->_extra_train_ops, sizeof(vg_op *) * (size_t)cap);
        if (!p) {
            vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory");
            return;
        }
        m->_extra_train_ops = p;
        m->cap_extra_train_ops = cap;
    }
    m->_extra_train_ops[m->n_extra_train_ops++] = t.op;
}

/* _stride_arr(stride) */
static void stride_arr(int stride, int64_t out[4]) {
    out[0] = 1;
    out[1] = stride;
    out[2] = stride;
    out[3] = 1;
}

static vg_variable get_variable(vg_graph *g, const char *name, const int64_t *shape, int nd, vg_initializer init,
                                bool trainable) {
    vg_get_variable_opts o = {0};
    o.dt = VG_FLOAT;
    o.dims = shape;
    o.ndims = nd;
    o.has_init = true;
    o.init = init;
    o.not_trainable = !trainable;
    return vg_get_variable_ex(g, name, &o);
}

/* _batch_norm(name, x) */
static vg_output batch_norm(vg_graph *g, resnet_model *m, const char *name, vg_output x) {
    vg_variable_scope_push(g, name, NULL);
    vg_shape xs = vg_output_shape(x);
    int64_t params_shape[1] = {xs.ndims > 0 ? xs.dims[xs.ndims - 1] : -1};
    vg_variable beta = get_variable(g, "beta", params_shape, 1, vg_init_constant(0.0), true);
    vg_variable gamma = get_variable(g, "gamma", params_shape, 1, vg_init_constant(1.0), true);
    vg_output mean, variance;
    if (train_mode(m)) {
        vg_nn_moments(g, x, (int32_t[]){0, 1, 2}, 3, false, "moments", &mean, &variance);
        vg_variable moving_mean = get_variable(g, "moving_mean", params_shape, 1, vg_init_constant(0.0), false);
        vg_variable moving_variance = get_variable(g, "moving_variance", params_shape, 1, vg_init_constant(1.0), false);
        /* moving_averages.assign_moving_average(v, value, 0.9): TF's zero_debias=True */
        extra_train_ops_append(g, m, vg_assign_moving_average(g, moving_mean.ref, mean, 0.9, true, NULL));
        extra_train_ops_append(g, m, vg_assign_moving_average(g, moving_variance.ref, variance, 0.9, true, NULL));
    } else {
        vg_variable mv = get_variable(g, "moving_mean", params_shape, 1, vg_init_constant(0.0), false);
        vg_variable vv = get_variable(g, "moving_variance", params_shape, 1, vg_init_constant(1.0), false);
        mean = mv.read;
        variance = vv.read;
        if (mv.var) vg_summary_histogram(g, vg_op_name(mv.var), mean);
        if (vv.var) vg_summary_histogram(g, vg_op_name(vv.var), variance);
    }
    /* epsilon used to be 1e-5. Maybe 0.001 solves NaN problem in deeper net. */
    vg_output y = vg_nn_batch_normalization(g, x, mean, variance, beta.read, gamma.read, 0.001, NULL);
    vg_variable_scope_pop(g);
    return y;
}

/* _relu(x, leakiness): tf.where(tf.less(x, 0.0), leakiness * x, x, name='leaky_relu') */
static vg_output relu(vg_graph *g, vg_output x, double leakiness) {
    vg_output lt = vg_less(g, x, vg_const_f32(g, 0.0f, "Less/y"), "Less");
    vg_output lx = vg_mul(g, vg_const_f32(g, (float)leakiness, "mul/x"), x, "mul");
    return vg_select(g, lt, lx, x, "leaky_relu");
}

/* _conv(name, x, filter_size, in_filters, out_filters, strides) */
static vg_output conv(vg_graph *g, const char *name, vg_output x, int filter_size, int in_filters, int out_filters,
                      const int64_t strides[4]) {
    vg_variable_scope_push(g, name, NULL);
    double n = (double)filter_size * filter_size * out_filters;
    vg_variable kernel = get_variable(g, "DW", (int64_t[]){filter_size, filter_size, in_filters, out_filters}, 4,
                                      vg_init_random_normal(0.0, sqrt(2.0 / n), 0), true);
    vg_output y = vg_conv2d(g, x, kernel.read, strides, "SAME", NULL);
    vg_variable_scope_pop(g);
    return y;
}

/* The start both residual units share: batch norm "init_bn" and ReLU, under the variable
 * scope scope_before when activate_before_residual (the shortcut *orig_x is then the
 * activated x), else under scope_residual (the shortcut is x itself). */
static vg_output pre_activation(vg_graph *g, resnet_model *m, vg_output x, bool activate_before_residual,
                                const char *scope_before, const char *scope_residual, vg_output *orig_x) {
    vg_variable_scope_push(g, activate_before_residual ? scope_before : scope_residual, NULL);
    if (!activate_before_residual) *orig_x = x;
    x = batch_norm(g, m, "init_bn", x);
    x = relu(g, x, m->hps.relu_leakiness);
    if (activate_before_residual) *orig_x = x;
    vg_variable_scope_pop(g);
    return x;
}

/* A unit's inner step under the variable scope sub: batch norm bn, ReLU, then the
 * convolution conv (filter_size, in -> out filters, strides). */
static vg_output bn_relu_conv(vg_graph *g, resnet_model *m, const char *sub, const char *bn, const char *conv_name,
                              vg_output x, int filter_size, int in_filters, int out_filters, const int64_t strides[4]) {
    vg_variable_scope_push(g, sub, NULL);
    x = batch_norm(g, m, bn, x);
    x = relu(g, x, m->hps.relu_leakiness);
    x = conv(g, conv_name, x, filter_size, in_filters, out_filters, strides);
    vg_variable_scope_pop(g);
    return x;
}

/* _residual(x, in_filter, out_filter, stride, activate_before_residual) */
static vg_output residual(vg_graph *g, resnet_model *m, vg_output x, int in_filter, int out_filter,
                          const int64_t stride[4], bool activate_before_residual) {
    vg_output orig_x;
    x = pre_activation(g, m, x, activate_before_residual, "shared_activation", "residual_only_activation", &orig_x);
    vg_variable_scope_push(g, "sub1", NULL);
    x = conv(g, "conv1", x, 3, in_filter, out_filter, stride);
    vg_variable_scope_pop(g);

    int64_t s1[4];
    stride_arr(1, s1);
    x = bn_relu_conv(g, m, "sub2", "bn2", "conv2", x, 3, out_filter, out_filter, s1);

    vg_variable_scope_push(g, "sub_add", NULL);
    if (in_filter != out_filter) {
        orig_x = vg_avg_pool(g, orig_x, stride, stride, "VALID", NULL);
        int32_t p = (out_filter - in_filter) / 2;
        int32_t pads[8] = {0, 0, 0, 0, 0, 0, p, p};
        orig_x = vg_pad(g, orig_x, vg_const_array(g, VG_INT32, (int64_t[]){4, 2}, 2, pads, "Pad/paddings"), "Pad");
    }
    x = vg_add(g, x, orig_x, "add");
    vg_variable_scope_pop(g);
    return x;
}

/* _bottleneck_residual(x, in_filter, out_filter, stride, activate_before_residual) */
static vg_output bottleneck_residual(vg_graph *g, resnet_model *m, vg_output x, int in_filter, int out_filter,
                                     const int64_t stride[4], bool activate_before_residual) {
    vg_output orig_x;
    x = pre_activation(g, m, x, activate_before_residual, "common_bn_relu", "residual_bn_relu", &orig_x);
    int64_t s1[4];
    stride_arr(1, s1);
    vg_variable_scope_push(g, "sub1", NULL);
    x = conv(g, "conv1", x, 1, in_filter, out_filter / 4, stride);
    vg_variable_scope_pop(g);

    x = bn_relu_conv(g, m, "sub2", "bn2", "conv2", x, 3, out_filter / 4, out_filter / 4, s1);
    x = bn_relu_conv(g, m, "sub3", "bn3", "conv3", x, 1, out_filter / 4, out_filter, s1);

    vg_variable_scope_push(g, "sub_add", NULL);
    if (in_filter != out_filter) orig_x = conv(g, "project", orig_x, 1, in_filter, out_filter, stride);
    x = vg_add(g, x, orig_x, "add");
    vg_variable_scope_pop(g);
    return x;
}

/* _decay(): L2 weight decay loss over the trainable variables whose name contains DW */
static vg_output decay(vg_graph *g, resnet_model *m) {
    int n = 0;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    vg_output *costs = calloc((size_t)(n ? n : 1), sizeof(vg_output));
    int nc = 0;
    for (int i = 0; costs && i < n; i++) {
        const char *name = vg_op_name(tv[i].op);
        const char *f = strstr(name, "DW");
        if (f && f > name) costs[nc++] = vg_l2_loss(g, tv[i], NULL);
    }
    vg_output r = {NULL, 0};
    if (!costs) vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory");
    else r = vg_mul(g, vg_const_f32(g, (float)m->hps.weight_decay_rate, "Mul/x"), vg_add_n(g, costs, nc, NULL), "Mul");
    free(costs);
    return r;
}

/* _fully_connected(x, out_dim) */
static vg_output fully_connected(vg_graph *g, resnet_model *m, vg_output x, int out_dim) {
    x = vg_reshape_c(g, x, (int64_t[]){m->hps.batch_size, -1}, 2, NULL);
    vg_shape xs = vg_output_shape(x);
    vg_variable w = get_variable(g, "DW", (int64_t[]){xs.ndims == 2 ? xs.dims[1] : -1, out_dim}, 2,
                                 vg_init_uniform_unit_scaling(1.0, 0), true);
    vg_variable b = get_variable(g, "biases", (int64_t[]){out_dim}, 1, vg_init_constant(0.0), true);
    return vg_xw_plus_b(g, x, w.read, b.read, NULL);
}

/* _global_avg_pool(x) */
static vg_output global_avg_pool(vg_graph *g, vg_output x) {
    return vg_reduce_mean(g, x, (int32_t[]){1, 2}, 2, false, NULL);
}

/* _build_model() */
static void build_model(vg_graph *g, resnet_model *m) {
    int64_t s[4];
    vg_variable_scope_push(g, "init", NULL);
    vg_output x = m->_images;
    stride_arr(1, s);
    x = conv(g, "init_conv", x, 3, 3, 16, s);
    vg_variable_scope_pop(g);

    int strides[3] = {1, 2, 2};
    bool activate_before_residual[3] = {true, false, false};
    int filters[4];
    vg_output (*res_func)(vg_graph *, resnet_model *, vg_output, int, int, const int64_t *, bool);
    if (m->hps.use_bottleneck) {
        res_func = bottleneck_residual;
        int f[4] = {16, 64, 128, 256};
        memcpy(filters, f, sizeof f);
    } else {
        res_func = residual;
        int f[4] = {16, 16, 32, 64};
        memcpy(filters, f, sizeof f);
    }
    char scope[32];
    for (int stage = 1; stage <= 3; stage++) {
        snprintf(scope, sizeof scope, "unit_%d_0", stage);
        vg_variable_scope_push(g, scope, NULL);
        stride_arr(strides[stage - 1], s);
        x = res_func(g, m, x, filters[stage - 1], filters[stage], s, activate_before_residual[stage - 1]);
        vg_variable_scope_pop(g);
        for (int i = 1; i < m->hps.num_residual_units; i++) {
            snprintf(scope, sizeof scope, "unit_%d_%d", stage, i);
            vg_variable_scope_push(g, scope, NULL);
            stride_arr(1, s);
            x = res_func(g, m, x, filters[stage], filters[stage], s, false);
            vg_variable_scope_pop(g);
        }
    }

    vg_variable_scope_push(g, "unit_last", NULL);
    x = batch_norm(g, m, "final_bn", x);
    x = relu(g, x, m->hps.relu_leakiness);
    x = global_avg_pool(g, x);
    vg_variable_scope_pop(g);

    vg_variable_scope_push(g, "logit", NULL);
    vg_output logits = fully_connected(g, m, x, m->hps.num_classes);
    m->predictions = vg_softmax(g, logits, NULL);
    vg_variable_scope_pop(g);

    vg_variable_scope_push(g, "costs", NULL);
    vg_op *xent = vg_softmax_xent(g, logits, m->labels, "softmax_cross_entropy_with_logits");
    m->cost = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "xent");
    m->cost = vg_add(g, m->cost, decay(g, m), "add");
    vg_summary_scalar(g, "cost", m->cost);
    vg_variable_scope_pop(g);
}

/* _build_train_op() */
static void build_train_op(vg_graph *g, resnet_model *m) {
    m->lrn_rate = vg_const_f32(g, (float)m->hps.lrn_rate, "Const");
    vg_summary_scalar(g, "learning_rate", m->lrn_rate);

    int n = 0;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    vg_output *trainable_variables = malloc(sizeof(vg_output) * (size_t)(n ? n : 1));
    vg_output *grads = calloc((size_t)(n ? n : 1), sizeof(vg_output));
    if (!trainable_variables || !grads) {
        free(trainable_variables);
        free(grads);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    memcpy(trainable_variables, tv, sizeof(vg_output) * (size_t)n);
    vg_status st;
    if (vg_gradients(g, &m->cost, 1, trainable_variables, n, NULL, grads, &st) != VG_OK) {
        if (vg_graph_status(g, NULL) == VG_OK) vg_graph_set_error(g, st.code, "%s", st.msg);
        free(trainable_variables);
        free(grads);
        return;
    }
    vg_optimizer *optimizer = strcmp(m->hps.optimizer, "sgd") == 0 ? vg_optimizer_new_sgd(m->hps.lrn_rate)
                                                                    : vg_optimizer_new_momentum(m->hps.lrn_rate, 0.9, false);
    vg_optimizer_set_learning_rate_tensor(optimizer, m->lrn_rate);
    vg_op *apply_op =
        vg_optimizer_apply_gradients(optimizer, g, grads, trainable_variables, n, m->global_step, "train_step");
    vg_optimizer_free(optimizer);
    free(trainable_variables);
    free(grads);
    if (!apply_op) return;
    /* train_ops = [apply_op] + self._extra_train_ops; self.train_op = tf.group(*train_ops) */
    int nt = 1 + m->n_extra_train_ops;
    vg_op **train_ops = malloc(sizeof(vg_op *) * (size_t)nt);
    if (!train_ops) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    train_ops[0] = apply_op;
    if (m->n_extra_train_ops) memcpy(train_ops + 1, m->_extra_train_ops, sizeof(vg_op *) * (size_t)m->n_extra_train_ops);
    m->train_op = vg_group(g, train_ops, nt, NULL);
    free(train_ops);
}

vg_code resnet_model_build_graph(resnet_model *m, vg_graph *g) {
    m->global_step = vg_get_or_create_global_step(g);
    build_model(g, m);
    if (train_mode(m) && vg_graph_status(g, NULL) == VG_OK) build_train_op(g, m);
    m->summaries = vg_summary_merge_all(g);
    return vg_graph_status(g, NULL);
}
