/* resnet_utils.c - research/slim/nets/resnet_utils.py: subsample, conv2d_same,
 * stack_blocks_dense, resnet_arg_scope. */
#include "slim_classifier.h"
#include <stdio.h>

vg_output resnet_subsample(vg_graph *g, vg_output inputs, int factor, const char *scope) {
    if (factor == 1) return inputs;
    return vg_slim_max_pool2d(g, inputs, 1, 1, scope, &(vg_slim_args){.stride = {factor, factor}});
}

vg_output resnet_conv2d_same(vg_graph *g, vg_output inputs, int64_t num_outputs, int kernel_size, int stride, int rate,
                             const char *scope) {
    if (stride == 1)
        return vg_slim_conv2d(g, inputs, num_outputs, kernel_size, kernel_size, scope,
                              &(vg_slim_args){.stride = {1, 1}, .rate = {rate, rate}, .padding = "SAME"});
    int kernel_size_effective = kernel_size + (kernel_size - 1) * (rate - 1);
    int pad_total = kernel_size_effective - 1, pad_beg = pad_total / 2, pad_end = pad_total - pad_beg;
    double p[8] = {0, 0, pad_beg, pad_end, pad_beg, pad_end, 0, 0};
    vg_output paddings = vg_const_values(g, VG_INT32, p, 8, (const int64_t[]){4, 2}, 2, (const int64_t[]){4, 2}, 2,
                                         false, "Pad/paddings");
    inputs = vg_pad(g, inputs, paddings, "Pad");
    return vg_slim_conv2d(g, inputs, num_outputs, kernel_size, kernel_size, scope,
                          &(vg_slim_args){.stride = {stride, stride}, .rate = {rate, rate}, .padding = "VALID"});
}

vg_output resnet_stack_blocks_dense(vg_graph *g, vg_output net, const resnet_block *blocks, int nblocks,
                                    int output_stride, end_points *ep) {
    int current_stride = 1, rate = 1;
    for (int b = 0; b < nblocks && net.op; b++) {
        const char *sc = vg_variable_scope_push(g, blocks[b].scope, NULL);
        char block_name[256];
        snprintf(block_name, sizeof block_name, "%s", sc ? sc : blocks[b].scope);
        for (int i = 0; i < blocks[b].nunits; i++) {
            const resnet_unit *u = &blocks[b].units[i];
            if (output_stride > 0 && current_stride > output_stride) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "The target output_stride cannot be reached.");
                break;
            }
            char unit[32];
            snprintf(unit, sizeof unit, "unit_%d", i + 1);
            vg_variable_scope_push(g, unit, NULL);
            if (output_stride > 0 && current_stride == output_stride) {
                net = resnet_v1_bottleneck(g, net, u->depth, u->depth_bottleneck, 1, rate, ep);
                rate *= u->stride;
            } else {
                net = resnet_v1_bottleneck(g, net, u->depth, u->depth_bottleneck, u->stride, 1, ep);
                current_stride *= u->stride;
            }
            vg_variable_scope_pop(g);
        }
        end_points_add(ep, block_name, net);
        vg_variable_scope_pop(g);
    }
    if (output_stride > 0 && current_stride != output_stride) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "The target output_stride cannot be reached.");
        return (vg_output){NULL, 0};
    }
    return net;
}

void resnet_arg_scope(vg_graph *g, double weight_decay, double batch_norm_decay, double batch_norm_epsilon,
                      bool batch_norm_scale) {
    static vg_slim_args bn, conv, pool;
    static vg_initializer weights_init;
    weights_init = vg_init_variance_scaling(2.0, VG_FAN_IN, false, 0); /* slim.variance_scaling_initializer() */
    /* updates_collections UPDATE_OPS (the default), fused None (fused where possible) */
    bn = (vg_slim_args){.decay = batch_norm_decay,
                        .epsilon = batch_norm_epsilon,
                        .scale = batch_norm_scale ? VG_SLIM_TRUE : VG_SLIM_FALSE};
    conv = (vg_slim_args){.weights_regularizer = vg_regularizer_l2(weight_decay),
                          .weights_initializer = &weights_init,
                          .activation_fn = VG_ACT_RELU,
                          .normalizer_fn = VG_SLIM_BATCH_NORM,
                          .normalizer_params = &bn};
    pool = (vg_slim_args){.padding = "SAME"};
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_CONV2D}, 1, &conv);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_BATCH_NORM_FN}, 1, &bn);
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_MAX_POOL2D}, 1, &pool);
}
