/*
 * vigil/nn_ext.h - builders of the tf.layers op families (issue 11 §2): batch
 * normalization (src/kernels/nn/nn_norm_ops.c), depthwise convolution. Each op has its CPU kernel and TF's
 * gradient; on failure a builder returns NULL / {NULL, 0} and records the graph's
 * sticky error (vg_graph_status): INVALID_ARGUMENT for bad dtypes or shapes,
 * UNIMPLEMENTED for data formats other than NHWC.
 *
 *     vg_output img = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 8, 8, 3}, 4, "img");
 *     vg_output gamma = vg_const_fill(g, VG_FLOAT, (int64_t[]){3}, 1, 1, "gamma");
 *     vg_output beta = vg_const_fill(g, VG_FLOAT, (int64_t[]){3}, 1, 0, "beta");
 *     vg_output empty = vg_const_fill(g, VG_FLOAT, (int64_t[]){0}, 1, 0, "Const");
 *     vg_op *bn = vg_fused_batch_norm_v3(g, img, gamma, beta, empty, empty, 0.001f, true, NULL);
 *     vg_output y = vg_out(bn, 0), batch_mean = vg_out(bn, 1);
 *     (void)y; (void)batch_mean;
 */
#ifndef VIGIL_NN_EXT_H
#define VIGIL_NN_EXT_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FusedBatchNormV3(x, scale, offset, mean, variance) with epsilon, is_training,
 * data_format "NHWC"; x [N,H,W,C] float or double, the others [C] of the same dtype
 * (mean and variance may be empty [0] when training). Outputs: 0 y, 1 batch_mean,
 * 2 batch_variance (Bessel-corrected when training), 3-5 reserve spaces. */
VG_API vg_op *vg_fused_batch_norm_v3(vg_graph *g, vg_output x, vg_output scale, vg_output offset, vg_output mean,
                                     vg_output variance, float epsilon, bool is_training, const char *name);

/* tf.nn.depthwise_conv2d_native(x, filter, strides, padding) (src/kernels/
 * nn_depthwise_ops.c): x [N,H,W,C], filter [KH,KW,C,M] -> [N,OH,OW,C*M]; strides
 * [1,sh,sw,1], padding "SAME" or "VALID", dilations 1. Gradient: the
 * DepthwiseConv2dNativeBackpropInput / BackpropFilter ops. */
VG_API vg_output vg_depthwise_conv2d_native(vg_graph *g, vg_output x, vg_output filter, const int64_t strides[4],
                                            const char *padding, const char *name);

/* tf.space_to_batch_nd / tf.batch_to_space_nd (src/kernels/array/space_batch_ops.c): block_shape
 * [M] and paddings / crops [M, 2] int32 or int64 (Consts give static shapes). Errors
 * (INVALID_ARGUMENT): a padded size not divisible by its block, a batch not divisible
 * by the product of the blocks, crops larger than the output. Gradient: each other. */
VG_API vg_output vg_space_to_batch_nd(vg_graph *g, vg_output x, vg_output block_shape, vg_output paddings,
                                      const char *name);
VG_API vg_output vg_batch_to_space_nd(vg_graph *g, vg_output x, vg_output block_shape, vg_output crops,
                                      const char *name);

#ifdef __cplusplus
}
#endif
#endif
