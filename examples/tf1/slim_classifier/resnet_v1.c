/* resnet_v1.c - research/slim/nets/resnet_v1.py: bottleneck, resnet_v1,
 * resnet_v1_block, resnet_v1_50 / 101 / 152 / 200. */
#include "slim_classifier.h"
#include <stdio.h>

vg_output resnet_v1_bottleneck(vg_graph *g, vg_output inputs, int depth, int depth_bottleneck, int stride, int rate,
                               end_points *ep) {
    /* with tf.variable_scope(scope, 'bottleneck_v1', [inputs]) as sc */
    const char *sc = vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = "bottleneck_v1"});
    char sc_name[512];
    snprintf(sc_name, sizeof sc_name, "%s", sc ? sc : "bottleneck_v1");
    vg_shape s = vg_output_shape(inputs);
    if (s.ndims < 4 || s.dims[s.ndims - 1] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "bottleneck: the input needs rank >= 4 and a known depth");
        vg_variable_scope_pop(g);
        return (vg_output){NULL, 0};
    }
    int64_t depth_in = s.dims[s.ndims - 1];
    vg_output shortcut;
    if (depth == depth_in) {
        shortcut = resnet_subsample(g, inputs, stride, "shortcut");
    } else {
        shortcut = vg_slim_conv2d(g, inputs, depth, 1, 1, "shortcut",
                                  &(vg_slim_args){.stride = {stride, stride}, .activation_fn = VG_SLIM_LINEAR});
    }
    vg_output residual = vg_slim_conv2d(g, inputs, depth_bottleneck, 1, 1, "conv1", &(vg_slim_args){.stride = {1, 1}});
    residual = resnet_conv2d_same(g, residual, depth_bottleneck, 3, stride, rate, "conv2");
    residual = vg_slim_conv2d(g, residual, depth, 1, 1, "conv3",
                              &(vg_slim_args){.stride = {1, 1}, .activation_fn = VG_SLIM_LINEAR});
    vg_output output = vg_relu(g, vg_add(g, shortcut, residual, "add"), "Relu");
    end_points_add(ep, sc_name, output);
    vg_variable_scope_pop(g);
    return output;
}

vg_output resnet_v1(vg_graph *g, vg_output inputs, const resnet_block *blocks, int nblocks, int num_classes,
                    bool is_training, bool global_pool, int output_stride, bool include_root_block, const char *scope,
                    end_points *ep) {
    const char *sc = vg_variable_scope_push(g, scope, &(vg_variable_scope_opts){.default_name = "resnet_v1"});
    char sc_name[256], name[320];
    snprintf(sc_name, sizeof sc_name, "%s", sc ? sc : "resnet_v1");
    int depth0 = vg_slim_arg_scope_depth(g);
    static vg_slim_args tr;
    tr = (vg_slim_args){.is_training = is_training ? VG_SLIM_TRUE : VG_SLIM_FALSE};
    vg_slim_arg_scope_push(g, (const char *[]){VG_SLIM_BATCH_NORM_FN}, 1, &tr);
    vg_output net = inputs;
    if (include_root_block) {
        if (output_stride > 0) {
            if (output_stride % 4 != 0) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "The output_stride needs to be a multiple of 4.");
                net = (vg_output){NULL, 0};
            }
            output_stride /= 4;
        }
        net = resnet_conv2d_same(g, net, 64, 7, 2, 1, "conv1");
        snprintf(name, sizeof name, "%s/conv1", sc_name);
        end_points_add(ep, name, net);
        net = vg_slim_max_pool2d(g, net, 3, 3, "pool1", &(vg_slim_args){.stride = {2, 2}});
    }
    net = resnet_stack_blocks_dense(g, net, blocks, nblocks, output_stride, ep);
    if (global_pool) {
        net = vg_reduce_mean(g, net, (const int32_t[]){1, 2}, 2, true, "pool5");
        end_points_add(ep, "global_pool", net);
    }
    if (num_classes > 0) {
        net = vg_slim_conv2d(g, net, num_classes, 1, 1, "logits",
                             &(vg_slim_args){.activation_fn = VG_SLIM_LINEAR, .normalizer_fn = VG_SLIM_NO_NORMALIZER});
        snprintf(name, sizeof name, "%s/logits", sc_name);
        end_points_add(ep, name, net);
        net = vg_squeeze(g, net, (const int32_t[]){1, 2}, 2, "SpatialSqueeze");
        snprintf(name, sizeof name, "%s/spatial_squeeze", sc_name);
        end_points_add(ep, name, net);
        end_points_add_softmax(g, ep, "predictions", net);
    }
    vg_slim_arg_scope_pop_to(g, depth0);
    vg_variable_scope_pop(g);
    return net;
}

/* resnet_v1_block(scope, base_depth, num_units, stride): num_units - 1 units of stride 1,
 * then one of the block's stride; depth base_depth * 4, bottleneck base_depth. */
static resnet_block block(const char *scope, int base_depth, int num_units, int stride) {
    resnet_block b = {.scope = scope, .nunits = num_units};
    for (int i = 0; i < num_units; i++)
        b.units[i] = (resnet_unit){base_depth * 4, base_depth, i == num_units - 1 ? stride : 1};
    return b;
}

vg_output resnet_v1_n(vg_graph *g, int layers, vg_output inputs, int num_classes, bool is_training, end_points *ep) {
    int units[4];
    switch (layers) {
    case 50: units[0] = 3, units[1] = 4, units[2] = 6, units[3] = 3; break;
    case 101: units[0] = 3, units[1] = 4, units[2] = 23, units[3] = 3; break;
    case 152: units[0] = 3, units[1] = 8, units[2] = 36, units[3] = 3; break;
    case 200: units[0] = 3, units[1] = 24, units[2] = 36, units[3] = 3; break;
    default:
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "resnet_v1_%d is not a slim network", layers);
        return (vg_output){NULL, 0};
    }
    static resnet_block blocks[4];
    blocks[0] = block("block1", 64, units[0], 2);
    blocks[1] = block("block2", 128, units[1], 2);
    blocks[2] = block("block3", 256, units[2], 2);
    blocks[3] = block("block4", 512, units[3], 1);
    char scope[32];
    snprintf(scope, sizeof scope, "resnet_v1_%d", layers);
    return resnet_v1(g, inputs, blocks, 4, num_classes, is_training, true, 0, true, scope, ep);
}
