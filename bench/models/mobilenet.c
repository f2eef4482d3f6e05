/* mobilenet.c - bench_models' MobileNet v1 as slim's nets/mobilenet_v1.py lays it out
 * (depth multiplier 1): Conv2d_0 3x3/2 x32, then 13 depthwise separable blocks (depthwise
 * 3x3, batch norm, ReLU6, pointwise 1x1, batch norm, ReLU6; strides and depths of
 * MOBILENETV1_CONV_DEFS), global average pool, Logits 1x1 conv to 1000 classes, sparse
 * softmax cross-entropy, RMSProp (decay 0.9, momentum 0.9, epsilon 1.0:
 * train_image_classifier.py's defaults) at learning rate 0.01; slim's batch norm (fused,
 * center, no scale, decay 0.9997, epsilon 0.001), convolutions without biases; 128x128x3
 * inputs, batch 32 (train_image_classifier.py's default), random data. */
#include "models.h"
#include <stdio.h>
#include <stdlib.h>

static vg_output bn_relu6(vg_graph *g, vg_output x, vg_output training) {
    vg_layer_config c = {.kind = VG_LAYER_BATCH_NORMALIZATION};
    c.name = "BatchNorm";
    c.momentum = 0.9997;
    c.epsilon = 0.001;
    c.no_scale = true;
    return vg_relu6(g, vg_layers_apply(g, &c, x, training), NULL);
}

static vg_output conv(vg_graph *g, vg_output x, int64_t filters, int k, int stride) {
    vg_layer_config c = {.kind = VG_LAYER_CONV2D};
    c.name = "Conv2d";
    c.units = filters;
    c.kernel_size[0] = c.kernel_size[1] = k;
    c.strides[0] = c.strides[1] = stride;
    c.padding = "same";
    c.no_bias = true;
    c.kernel_initializer = vg_init_truncated_normal(0, 0.09, 0);
    return vg_layers_apply(g, &c, x, (vg_output){NULL, 0});
}

static vg_output depthwise(vg_graph *g, vg_output x, int64_t ch, int stride) {
    vg_get_variable_opts o = {.dt = VG_FLOAT, .dims = (int64_t[]){3, 3, ch, 1}, .ndims = 4, .has_init = true,
                              .init = vg_init_truncated_normal(0, 0.09, 0)};
    vg_variable w = vg_get_variable_ex(g, "depthwise_weights", &o);
    int64_t st[4] = {1, stride, stride, 1};
    return vg_depthwise_conv2d_native(g, x, w.read, st, "SAME", "depthwise");
}

static vg_output mobilenet_v1(vg_graph *g, vg_output x, vg_output training, int classes) {
    static const struct { int stride; int64_t depth; } defs[13] = {
        {1, 64}, {2, 128}, {1, 128}, {2, 256}, {1, 256}, {2, 512}, {1, 512},
        {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024}};
    vg_variable_scope_push(g, "MobilenetV1", NULL);
    vg_variable_scope_push(g, "Conv2d_0", NULL);
    vg_output h = bn_relu6(g, conv(g, x, 32, 3, 2), training);
    vg_variable_scope_pop(g);
    int64_t ch = 32;
    for (int i = 0; i < 13; i++) {
        char name[64];
        snprintf(name, sizeof name, "Conv2d_%d_depthwise", i + 1);
        vg_variable_scope_push(g, name, NULL);
        h = bn_relu6(g, depthwise(g, h, ch, defs[i].stride), training);
        vg_variable_scope_pop(g);
        snprintf(name, sizeof name, "Conv2d_%d_pointwise", i + 1);
        vg_variable_scope_push(g, name, NULL);
        h = bn_relu6(g, conv(g, h, defs[i].depth, 1, 1), training);
        vg_variable_scope_pop(g);
        ch = defs[i].depth;
    }
    vg_variable_scope_push(g, "Logits", NULL);
    h = vg_reduce_mean(g, h, (int32_t[]){1, 2}, 2, true, "AvgPool_1a");
    vg_layer_config c = {.kind = VG_LAYER_CONV2D};
    c.name = "Conv2d_1c_1x1";
    c.units = classes;
    c.kernel_size[0] = c.kernel_size[1] = 1;
    c.kernel_initializer = vg_init_truncated_normal(0, 0.09, 0);
    h = vg_layers_apply(g, &c, h, (vg_output){NULL, 0});
    h = vg_squeeze(g, h, (int32_t[]){1, 2}, 2, "SpatialSqueeze");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    return h;
}

static void free_opt(void *o) { vg_optimizer_free(o); }

static int build(vg_graph *g, int batch, int size, bm_built *b, vg_status *st) {
    (void)st;
    const int classes = 1000;
    int64_t xd[4] = {batch, size, size, 3}, yd[1] = {batch};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "input");
    vg_output y = vg_placeholder(g, VG_INT64, yd, 1, "labels");
    vg_output logits = mobilenet_v1(g, x, vg_const_bool(g, true, "is_training"), classes);
    vg_output loss = vg_reduce_mean(g, vg_out(vg_sparse_softmax_xent(g, logits, y, NULL), 0), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_rmsprop(0.01, 0.9, 0.9, 1.0);
    vg_get_or_create_global_step(g);
    /* slim.learning.create_train_op: the batch-norm moving averages (UPDATE_OPS) first,
     * then the gradients and the update; running its tensor trains one step */
    vg_create_train_op_opts to = {0};
    b->train = vg_create_train_op(g, loss, opt, &to);
    b->cleanup = free_opt, b->state = opt;
    b->feeds[0] = x, b->feeds[1] = y, b->nfeeds = 2;
    b->fv[0] = vg_tensor_new(VG_FLOAT, xd, 4, st);
    b->fv[1] = vg_tensor_new(VG_INT64, yd, 1, st);
    if (!b->fv[0] || !b->fv[1]) return 1;
    bm_fill_uniform(b->fv[0]);
    for (int i = 0; i < batch; i++) ((int64_t *)vg_tensor_data(b->fv[1]))[i] = rand() % classes;
    return 0;
}

const bm_model bm_mobilenet = {"mobilenet", 32, 128, build};
