/* resnet_model.h - the port of tensorflow/models research/resnet: resnet_model.py's
 * HParams and ResNet class, and cifar_input.py's build_input. See README.md. */
#ifndef RESNET_MODEL_H
#define RESNET_MODEL_H

#include <vigil/vigil.h>

/* HParams = namedtuple('HParams', 'batch_size, num_classes, min_lrn_rate, lrn_rate,
 * num_residual_units, use_bottleneck, weight_decay_rate, relu_leakiness, optimizer') */
typedef struct resnet_hparams {
    int batch_size;
    int num_classes;
    double min_lrn_rate;
    double lrn_rate;
    int num_residual_units;
    bool use_bottleneck;
    double weight_decay_rate;
    double relu_leakiness;
    const char *optimizer; /* "sgd" or "mom" */
} resnet_hparams;

/* class ResNet(object) */
typedef struct resnet_model {
    resnet_hparams hps;
    vg_output _images;
    vg_output labels;
    const char *mode; /* "train" or "eval" */
    vg_op **_extra_train_ops;
    int n_extra_train_ops, cap_extra_train_ops;
    /* set by build_graph */
    vg_output global_step;
    vg_output predictions;
    vg_output cost;
    vg_output lrn_rate;  /* train mode only */
    vg_op *train_op;     /* train mode only */
    vg_output summaries;
} resnet_model;

/* ResNet.__init__(hps, images, labels, mode) */
void resnet_model_init(resnet_model *m, resnet_hparams hps, vg_output images, vg_output labels, const char *mode);
/* ResNet.build_graph(): returns the graph's status. */
vg_code resnet_model_build_graph(resnet_model *m, vg_graph *g);
void resnet_model_free(resnet_model *m);

/* cifar_input.build_input(dataset, data_path, batch_size, mode): images [batch,
 * image_size, image_size, 3] and one-hot labels [batch, num_classes]. data_path is a
 * file pattern (tf.gfile.Glob). image_size: 32 in cifar_input.py (see README). */
vg_code cifar_input_build_input(vg_graph *g, const char *dataset, const char *data_path, int batch_size,
                                const char *mode, int image_size, vg_output *images, vg_output *labels);
/* Not in the Python (no download here): writes data_batch_1..5.bin and test_batch.bin
 * in CIFAR-10's binary layout into dir from Fashion-MNIST's IDX files in fmnist_dir,
 * image_size x image_size (the 28x28 image scaled to 7/8 of the side, centred), at most
 * limit training and limit/5 test records (0: all). Returns 0 or 1 (message printed). */
int cifar_input_write_from_fashion_mnist(const char *fmnist_dir, const char *dir, int image_size, int limit);

#endif
