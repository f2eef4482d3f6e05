/*
 * vigil/keras_datasets.h - tf.keras.datasets.mnist.load_data,
 * tf.keras.datasets.fashion_mnist.load_data and tf.keras.datasets.cifar10.load_data, reading the files Keras downloads, from the
 * place Keras keeps them. vigil never downloads: a missing file is NOT_FOUND with the
 * path looked at and the address Keras fetches it from.
 *
 * Where the files are (as Keras's get_file): a relative path (and NULL, the default
 * name) is under $HOME/.keras/datasets/; an absolute path is used as it is.
 *   mnist:         "mnist.npz", a NumPy archive of x_train [60000, 28, 28] uint8,
 *                  y_train [60000] uint8, x_test [10000, 28, 28], y_test [10000]
 *                  (https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz)
 *   fashion_mnist: the directory "fashion-mnist" with train-labels-idx1-ubyte.gz,
 *                  train-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz,
 *                  t10k-images-idx3-ubyte.gz (IDX files, gzip'd; Debian's
 *                  dataset-fashion-mnist package puts the same four files in
 *                  /usr/share/datasets/fashion-mnist)
 *   cifar10:       the directory "cifar-10-batches-py" (cifar-10-python.tar.gz
 *                  unpacked) with the pickled batches data_batch_1..5 and test_batch
 *                  (read by vg_pickle_dict_read, vigil/npy.h)
 * The arrays come back as Keras returns them: MNIST's uint8 images [n, 28, 28] and uint8
 * labels [n]; CIFAR-10's uint8 images [n, 32, 32, 3] (channels last, Keras's default
 * image_data_format) and uint8 labels [n, 1]. Keras assumes 10000 rows per CIFAR batch;
 * vigil takes each batch's count from the file.
 *
 *     vg_keras_data d;
 *     vg_status st;
 *     if (vg_keras_fashion_mnist_load_data("/usr/share/datasets/fashion-mnist", &d, &st) == VG_OK) {
 *         int64_t n = vg_tensor_dim(d.x_train, 0);   // 60000
 *         (void)n;
 *         vg_keras_data_free(&d);
 *     }
 */
#ifndef VIGIL_KERAS_DATASETS_H
#define VIGIL_KERAS_DATASETS_H

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* (x_train, y_train), (x_test, y_test): four new tensors, owned by the caller
 * (vg_keras_data_free). */
typedef struct vg_keras_data {
    vg_tensor *x_train, *y_train, *x_test, *y_test;
} vg_keras_data;

/* mnist.load_data(path="mnist.npz"). On failure every field of *out is NULL. Fails with
 * NOT_FOUND (the file, naming it and Keras's download address; HOME unset for a relative
 * path), DATA_LOSS (not an .npz, a missing array, arrays that are not uint8 images
 * [n, 28, 28] and labels [n] of the same n; naming the file and array),
 * INVALID_ARGUMENT (out NULL), RESOURCE_EXHAUSTED. */
VG_API vg_code vg_keras_mnist_load_data(const char *path, vg_keras_data *out, vg_status *st);
/* fashion_mnist.load_data(): dir NULL = $HOME/.keras/datasets/fashion-mnist. Fails as
 * vg_keras_mnist_load_data, naming the IDX file at fault. */
VG_API vg_code vg_keras_fashion_mnist_load_data(const char *dir, vg_keras_data *out, vg_status *st);
/* cifar10.load_data(): dir NULL = $HOME/.keras/datasets/cifar-10-batches-py. Fails as
 * vg_keras_mnist_load_data (DATA_LOSS: a batch without uint8 data [n, 3072] and n
 * labels), plus UNIMPLEMENTED from the pickle reader for a file it cannot read. */
VG_API vg_code vg_keras_cifar10_load_data(const char *dir, vg_keras_data *out, vg_status *st);
/* Frees the four tensors and sets them NULL (d NULL: no-op). */
VG_API void vg_keras_data_free(vg_keras_data *d);

#ifdef __cplusplus
}
#endif
#endif
