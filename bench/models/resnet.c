/* resnet.c - bench_models' CIFAR ResNet of examples/tf1/resnet (resnet_model.c linked
 * in: ResNet-32, 5 residual units per stage, 16/32/64 filters, its own batch norm from
 * moments with moving averages as extra train ops, leaky ReLU 0.1, weight decay 2e-4,
 * momentum 0.9), 32x32x3, batch 128 (resnet_main's train mode), one-hot labels. */
#include "models.h"
#include "../../examples/tf1/resnet/resnet_model.h"
#include <stdlib.h>
#include <string.h>

static void cleanup(void *rm) {
    resnet_model_free(rm);
    free(rm);
}

static int build(vg_graph *g, int batch, int size, bm_built *b, vg_status *st) {
    const int classes = 10;
    int64_t xd[4] = {batch, size, size, 3}, yd[2] = {batch, classes};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "input");
    vg_output y = vg_placeholder(g, VG_FLOAT, yd, 2, "labels");
    resnet_model *rm = calloc(1, sizeof *rm);
    if (!rm) return 1;
    resnet_hparams hps = {batch, classes, 0.0001, 0.1, 5, false, 0.0002, 0.1, "mom"};
    resnet_model_init(rm, hps, x, y, "train");
    b->cleanup = cleanup, b->state = rm;
    if (resnet_model_build_graph(rm, g) != VG_OK) return 1;
    b->train = rm->cost;
    b->train_op = rm->train_op;
    b->feeds[0] = x, b->feeds[1] = y, b->nfeeds = 2;
    b->fv[0] = vg_tensor_new(VG_FLOAT, xd, 4, st);
    b->fv[1] = vg_tensor_new(VG_FLOAT, yd, 2, st);
    if (!b->fv[0] || !b->fv[1]) return 1;
    bm_fill_uniform(b->fv[0]);
    memset(vg_tensor_data(b->fv[1]), 0, vg_tensor_nbytes(b->fv[1]));
    for (int i = 0; i < batch; i++) ((float *)vg_tensor_data(b->fv[1]))[i * classes + rand() % classes] = 1.0f;
    return 0;
}

const bm_model bm_resnet = {"resnet", 128, 32, build};
