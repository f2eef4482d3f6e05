/*
 * vigil/layers.h - tf.layers in C: dense, conv2d, max_pooling2d, flatten, with TF's
 * variable and op names ("dense/kernel", "dense/bias", "dense/MatMul",
 * "dense/BiasAdd", "dense/Relu"; a second layer is "dense_1/..."), kernels initialised
 * with glorot_uniform and biases with zeros, as tf.layers does.
 *
 *     vg_output h = vg_layers_dense(g, x, 256, VG_ACT_RELU, NULL);     // "dense"
 *     vg_output logits = vg_layers_dense(g, h, 10, VG_ACT_NONE, NULL);  // "dense_1"
 *
 * On failure the graph's sticky error is set and {NULL, 0} is returned.
 */
#ifndef VIGIL_LAYERS_H
#define VIGIL_LAYERS_H

#include "variables.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vg_activation {
    VG_ACT_NONE = 0,
    VG_ACT_RELU,
    VG_ACT_SIGMOID,
    VG_ACT_TANH
} vg_activation;

/* tf.layers.dense(x, units, activation, name): x is [batch, in] with `in` known. */
VG_API vg_output vg_layers_dense(vg_graph *g, vg_output x, int64_t units, vg_activation act, const char *name);
/* tf.layers.conv2d(x, filters, kernel_size, strides, padding, activation): NHWC. */
VG_API vg_output vg_layers_conv2d(vg_graph *g, vg_output x, int64_t filters, int kh, int kw, int stride,
                                  const char *padding, vg_activation act, const char *name);
/* tf.layers.max_pooling2d(x, pool_size, strides, padding). */
VG_API vg_output vg_layers_max_pooling2d(vg_graph *g, vg_output x, int pool, int stride, const char *padding,
                                         const char *name);
/* tf.layers.flatten(x): [batch, ...] -> [batch, prod(...)] (the trailing dims must be known). */
VG_API vg_output vg_layers_flatten(vg_graph *g, vg_output x, const char *name);

#ifdef __cplusplus
}
#endif
#endif
