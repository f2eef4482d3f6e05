/* cifar10.c - bench_models' CIFAR-10 tutorial: examples/tf1/cifar10's own
 * cifar10_inference, cifar10_loss and cifar10_train, linked in (conv 5x5x64, max pool
 * 3x3/2, LRN, conv 5x5x64, LRN, pool, dense 384, 192, 10, weight decay, SGD with
 * exponential decay and the variables' moving averages), 24x24x3, batch 128
 * (FLAGS.batch_size), random data fed in place of its queue pipeline. */
#include "models.h"
#include "../../examples/tf1/cifar10/cifar10.h"
#include <stdlib.h>

void cifar10_free_averages(void); /* examples/tf1/cifar10/cifar10.c */

static void cleanup(void *unused) {
    (void)unused;
    cifar10_free_averages();
}

static int build(vg_graph *g, int batch, int size, bm_built *b, vg_status *st) {
    int64_t xd[4] = {batch, size, size, 3}, yd[1] = {batch};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "input");
    vg_output y = vg_placeholder(g, VG_INT32, yd, 1, "labels");
    FLAGS.batch_size = batch;
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output logits = cifar10_inference(g, x);
    b->train = cifar10_loss(g, logits, y);
    b->train_op = cifar10_train(g, b->train, gs);
    b->cleanup = cleanup;
    b->feeds[0] = x, b->feeds[1] = y, b->nfeeds = 2;
    b->fv[0] = vg_tensor_new(VG_FLOAT, xd, 4, st);
    b->fv[1] = vg_tensor_new(VG_INT32, yd, 1, st);
    if (!b->fv[0] || !b->fv[1]) return 1;
    bm_fill_uniform(b->fv[0]);
    for (int i = 0; i < batch; i++) ((int32_t *)vg_tensor_data(b->fv[1]))[i] = rand() % 10;
    return 0;
}

const bm_model bm_cifar10 = {"cifar10", 128, IMAGE_SIZE, build};
