/* mnist_nets.h - the two MNIST classifiers that `vigil train --model mlp|cnn` trains
 * and the benchmarks (bench/bench_train.c, bench/bench_allreduce.c) time, built with
 * the layers API (logits [?, 10]). Header-only, public API only. */
#ifndef VIGIL_TOOLS_MNIST_NETS_H
#define VIGIL_TOOLS_MNIST_NETS_H

#include "vigil/vigil.h"

/* x [?, 784] -> dense 256 ReLU -> dense 256 ReLU -> dense 10. */
static inline vg_output mnist_mlp(vg_graph *g, vg_output x) {
    vg_output h = vg_layers_dense(g, x, 256, VG_ACT_RELU, NULL);
    h = vg_layers_dense(g, h, 256, VG_ACT_RELU, NULL);
    return vg_layers_dense(g, h, 10, VG_ACT_NONE, NULL);
}

/* x [?, 28, 28, 1] -> conv 5x5x32 SAME ReLU -> max pool 2x2 / 2 (pool_padding) -> conv
 * 5x5x64 -> max pool -> flatten -> dense 128 ReLU -> dense 10. */
static inline vg_output mnist_cnn(vg_graph *g, vg_output x, const char *pool_padding) {
    vg_output h = vg_layers_conv2d(g, x, 32, 5, 5, 1, "SAME", VG_ACT_RELU, NULL);
    h = vg_layers_max_pooling2d(g, h, 2, 2, pool_padding, NULL);
    h = vg_layers_conv2d(g, h, 64, 5, 5, 1, "SAME", VG_ACT_RELU, NULL);
    h = vg_layers_max_pooling2d(g, h, 2, 2, pool_padding, NULL);
    h = vg_layers_flatten(g, h, NULL);
    h = vg_layers_dense(g, h, 128, VG_ACT_RELU, NULL);
    return vg_layers_dense(g, h, 10, VG_ACT_NONE, NULL);
}

#endif
