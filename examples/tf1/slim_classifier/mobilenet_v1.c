/* mobilenet_v1.c - research/slim/nets/mobilenet_v1.py: _CONV_DEFS, mobilenet_v1_base,
 * mobilenet_v1, _reduced_kernel_size_for_small_input, mobilenet_v1_arg_scope. */
#include "slim_classifier.h"
#include <stdio.h>
#include <string.h>

void end_points_add(end_points *ep, const char *name, vg_output x) {
    if (!ep || ep->n >= SC_MAX_END_POINTS || !x.op) return;
    size_t len = strlen(name);
    if (len >= sizeof ep->names[0]) len = sizeof ep->names[0] - 1;
    memcpy(ep->names[ep->n], name, len);
    ep->names[ep->n][len] = 0;
    ep->out[ep->n++] = x;
}

vg_output end_points_add_softmax(vg_graph *g, end_points *ep, const char *scope, vg_output logits) {
    vg_graph_push_scope(g, scope);
    vg_output p = vg_softmax(g, logits, "Softmax");
    end_points_add(ep, scope, p);
    vg_graph_pop_scope(g);
    return p;
}

vg_output end_points_get(const end_points *ep, const char *name) {
    for (int i = 0; ep && i < ep->n; i++)
        if (strcmp(ep->names[i], name) == 0) return ep->out[i];
    return (vg_output){NULL, 0};
}

/* Conv / DepthSepConv(kernel, stride, depth) */
typedef struct conv_def { bool sep; int kernel, stride, depth; } conv_def;
static const conv_def CONV_DEFS[14] = {
    {false, 3, 2, 32},  {true, 3, 1, 64},  {true, 3, 2, 128}, {true, 3, 1, 128}, {true, 3, 2, 256},
    {true, 3, 1, 256},  {true, 3, 2, 512}, {true, 3, 1, 512}, {true, 3, 1, 512}, {true, 3, 1, 512},
    {true, 3, 1, 512},  {true, 3, 1, 512}, {true, 3, 2, 1024}, {true, 3, 1, 1024}};

static int64_t depth_of(int d, double dm, int min_depth) {
    int v = (int)(d * dm);
    return v > min_depth ? v : min_depth;
}

vg_output mobilenet_v1_base(vg_graph *g, vg_output inputs, const char *final_endpoint, int min_depth,
                            double depth_multiplier, const char *scope, end_points *ep) {
    if (depth_multiplier <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "depth_multiplier is not greater than zero.");
        return (vg_output){NULL, 0};
    }
    if (!final_endpoint) final_endpoint = "Conv2d_13_pointwise";
    /* with tf.variable_scope(scope, 'MobilenetV1', [inputs]) */
    bool pushed = false;
    if (scope) {
        vg_variable_scope_push(g, scope, NULL);
        pushed = true;
    }
    int depth0 = vg_slim_arg_scope_depth(g);
    vg_slim_args pad = {.padding = "SAME"};
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D, VG_SLIM_SEPARABLE_CONV2D}, 2, &pad);
    vg_output net = inputs, result = {NULL, 0};
    bool found = false;
    for (int i = 0; i < 14 && !found; i++) {
        const conv_def *d = &CONV_DEFS[i];
        char end_point[64];
        vg_slim_args a = {.stride = {d->stride, d->stride}, .normalizer_fn = VG_SLIM_BATCH_NORM};
        if (!d->sep) {
            snprintf(end_point, sizeof end_point, "Conv2d_%d", i);
            net = vg_slim_conv2d(g, net, depth_of(d->depth, depth_multiplier, min_depth), d->kernel, d->kernel,
                                 end_point, &a);
            end_points_add(ep, end_point, net);
            if (strcmp(end_point, final_endpoint) == 0) found = true, result = net;
        } else {
            /* num_outputs None: the depthwise convolution only */
            snprintf(end_point, sizeof end_point, "Conv2d_%d_depthwise", i);
            a.depth_multiplier = 1;
            net = vg_slim_separable_conv2d(g, net, 0, d->kernel, d->kernel, end_point, &a);
            end_points_add(ep, end_point, net);
            if (strcmp(end_point, final_endpoint) == 0) {
                found = true, result = net;
                break;
            }
            snprintf(end_point, sizeof end_point, "Conv2d_%d_pointwise", i);
            vg_slim_args p = {.stride = {1, 1}, .normalizer_fn = VG_SLIM_BATCH_NORM};
            net = vg_slim_conv2d(g, net, depth_of(d->depth, depth_multiplier, min_depth), 1, 1, end_point, &p);
            end_points_add(ep, end_point, net);
            if (strcmp(end_point, final_endpoint) == 0) found = true, result = net;
        }
    }
    vg_slim_arg_scope_pop_to(g, depth0);
    if (pushed) vg_variable_scope_pop(g);
    if (!found) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Unknown final endpoint %s", final_endpoint);
        return (vg_output){NULL, 0};
    }
    return result;
}

/* _reduced_kernel_size_for_small_input */
static void reduced_kernel_size(vg_output x, int k[2]) {
    vg_shape s = vg_output_shape(x);
    if (s.ndims == 4 && s.dims[1] >= 0 && s.dims[2] >= 0) {
        if (s.dims[1] < k[0]) k[0] = (int)s.dims[1];
        if (s.dims[2] < k[1]) k[1] = (int)s.dims[2];
    }
}

vg_output mobilenet_v1(vg_graph *g, vg_output inputs, int num_classes, double dropout_keep_prob, bool is_training,
                       int min_depth, double depth_multiplier, end_points *ep) {
    vg_shape in = vg_output_shape(inputs);
    if (in.ndims != 4) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Invalid input tensor rank, expected 4, was: %d", in.ndims);
        return (vg_output){NULL, 0};
    }
    vg_variable_scope_push(g, "MobilenetV1", NULL);
    int depth0 = vg_slim_arg_scope_depth(g);
    vg_slim_args tr = {.is_training = is_training ? VG_SLIM_TRUE : VG_SLIM_FALSE};
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_BATCH_NORM_FN, VG_SLIM_DROPOUT}, 2, &tr);
    /* the base re-enters this scope object: no new scope */
    vg_output net = mobilenet_v1_base(g, inputs, NULL, min_depth, depth_multiplier, NULL, ep);
    vg_variable_scope_push(g, "Logits", NULL);
    int k[2] = {7, 7};
    reduced_kernel_size(net, k);
    net = vg_slim_avg_pool2d(g, net, k[0], k[1], "AvgPool_1a", &(vg_slim_args){.padding = "VALID"});
    end_points_add(ep, "AvgPool_1a", net);
    net = vg_slim_dropout(g, net, "Dropout_1b", &(vg_slim_args){.keep_prob = dropout_keep_prob});
    vg_output logits = vg_slim_conv2d(g, net, num_classes, 1, 1, "Conv2d_1c_1x1",
                                      &(vg_slim_args){.activation_fn = VG_SLIM_LINEAR,
                                                      .normalizer_fn = VG_SLIM_NO_NORMALIZER});
    logits = vg_squeeze(g, logits, (const int32_t[]){1, 2}, 2, "SpatialSqueeze");
    vg_variable_scope_pop(g);
    end_points_add(ep, "Logits", logits);
    /* prediction_fn=tf.contrib.layers.softmax(logits, scope='Predictions') */
    end_points_add_softmax(g, ep, "Predictions", logits);
    vg_slim_arg_scope_pop_to(g, depth0);
    vg_variable_scope_pop(g);
    return logits;
}

void mobilenet_v1_arg_scope(vg_graph *g, bool is_training, double weight_decay, double stddev,
                            bool regularize_depthwise) {
    /* arg_scope keeps pointers until its pop: the arguments live here */
    static vg_initializer weights_init;
    static vg_slim_args conv_args, bn_args, conv_reg, sep_reg;
    weights_init = vg_init_truncated_normal(0, stddev, 0);
    bn_args = (vg_slim_args){.is_training = is_training ? VG_SLIM_TRUE : VG_SLIM_FALSE,
                             .center = VG_SLIM_TRUE,
                             .scale = VG_SLIM_TRUE,
                             .decay = 0.9997,
                             .epsilon = 0.001};
    conv_args = (vg_slim_args){.weights_initializer = &weights_init,
                               .activation_fn = VG_ACT_RELU6,
                               .normalizer_fn = VG_SLIM_BATCH_NORM};
    vg_regularizer regularizer = vg_regularizer_l2(weight_decay);
    conv_reg = (vg_slim_args){.weights_regularizer = regularizer};
    sep_reg = (vg_slim_args){0};
    if (regularize_depthwise) sep_reg.weights_regularizer = regularizer;
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D, VG_SLIM_SEPARABLE_CONV2D}, 2, &conv_args);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_BATCH_NORM_FN}, 1, &bn_args);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D}, 1, &conv_reg);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_SEPARABLE_CONV2D}, 1, &sep_reg);
}
