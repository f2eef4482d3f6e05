/*
 * keras_datasets.c - tf.keras.datasets.{mnist,fashion_mnist}.load_data
 * (vigil/keras_datasets.h), after TF 1.15's tensorflow/python/keras/datasets/mnist.py
 * and fashion_mnist.py: the same files, names and places as Keras's get_file, without
 * the download (a missing file is NOT_FOUND naming where Keras fetches it).
 */
#include "vigil/idx.h"
#include "vigil/keras_datasets.h"
#include "vigil/npy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERAS_ORIGIN "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
#define FASHION_ORIGIN "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"

void vg_keras_data_free(vg_keras_data *d) {
    if (!d) return;
    vg_tensor_free(d->x_train);
    vg_tensor_free(d->y_train);
    vg_tensor_free(d->x_test);
    vg_tensor_free(d->y_test);
    memset(d, 0, sizeof *d);
}

/* get_file's place: an absolute name as it is, else $HOME/.keras/datasets/<name>. */
static vg_code keras_path(const char *name, char *buf, size_t len, vg_status *st) {
    if (name[0] == '/') {
        if ((size_t)snprintf(buf, len, "%s", name) >= len)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "load_data: path too long: %s", name);
        return VG_OK;
    }
    const char *home = getenv("HOME");
    if (!home || !*home)
        return vg_status_set(st, VG_NOT_FOUND, "load_data: HOME is not set, so ~/.keras/datasets/%s has no place",
                             name);
    if ((size_t)snprintf(buf, len, "%s/.keras/datasets/%s", home, name) >= len)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "load_data: path too long under %s", home);
    return VG_OK;
}

static bool is_u8(const vg_tensor *t, int ndims) {
    return vg_tensor_dtype(t) == VG_UINT8 && vg_tensor_ndims(t) == ndims;
}

/* x uint8 [n, 28, 28], y uint8 [n]. */
static vg_code check_pair(const vg_tensor *x, const vg_tensor *y, const char *file, const char *xn, const char *yn,
                          vg_status *st) {
    if (!is_u8(x, 3) || vg_tensor_dim(x, 1) != 28 || vg_tensor_dim(x, 2) != 28)
        return vg_status_set(st, VG_DATA_LOSS, "%s: %s is not uint8 images [n, 28, 28] (dtype %s, rank %d)", file, xn,
                             vg_dtype_name(vg_tensor_dtype(x)), vg_tensor_ndims(x));
    if (!is_u8(y, 1) || vg_tensor_dim(y, 0) != vg_tensor_dim(x, 0))
        return vg_status_set(st, VG_DATA_LOSS, "%s: %s is not uint8 labels [%lld] for %s (dtype %s, rank %d)", file,
                             yn, (long long)vg_tensor_dim(x, 0), xn, vg_dtype_name(vg_tensor_dtype(y)),
                             vg_tensor_ndims(y));
    return VG_OK;
}

vg_code vg_keras_mnist_load_data(const char *path, vg_keras_data *out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "mnist.load_data: out is NULL");
    memset(out, 0, sizeof *out);
    char file[4096];
    if (keras_path(path ? path : "mnist.npz", file, sizeof file, st) != VG_OK) return st->code;
    FILE *f = fopen(file, "rb");
    if (!f)
        return vg_status_set(st, VG_NOT_FOUND,
                             "mnist.load_data: %s not found (vigil does not download: fetch " KERAS_ORIGIN
                             "mnist.npz there)",
                             file);
    fclose(f);
    vg_npz *z = vg_npz_open(file, st);
    if (!z) return st->code;
    static const char *const keys[4] = {"x_train", "y_train", "x_test", "y_test"};
    vg_tensor **slots[4] = {&out->x_train, &out->y_train, &out->x_test, &out->y_test};
    vg_code rc = VG_OK;
    for (int i = 0; i < 4 && rc == VG_OK; i++) {
        if (!(*slots[i] = vg_npz_get(z, keys[i], st))) {
            rc = st->code == VG_NOT_FOUND ? vg_status_set(st, VG_DATA_LOSS, "%s: no array %s (not Keras's mnist.npz)",
                                                          file, keys[i])
                                          : st->code;
        }
    }
    vg_npz_close(z);
    if (rc == VG_OK) rc = check_pair(out->x_train, out->y_train, file, "x_train", "y_train", st);
    if (rc == VG_OK) rc = check_pair(out->x_test, out->y_test, file, "x_test", "y_test", st);
    if (rc != VG_OK) vg_keras_data_free(out);
    return rc;
}

/* One gzip'd IDX file of the fashion-mnist directory as a uint8 tensor. */
static vg_tensor *read_idx(const char *dir, const char *name, vg_status *st) {
    char file[4200];
    snprintf(file, sizeof file, "%s/%s", dir, name);
    FILE *f = fopen(file, "rb");
    if (!f) {
        vg_status_set(st, VG_NOT_FOUND,
                      "fashion_mnist.load_data: %s not found (vigil does not download: fetch " FASHION_ORIGIN
                      "%s there, or install Debian's dataset-fashion-mnist and pass /usr/share/datasets/fashion-mnist)",
                      file, name);
        return NULL;
    }
    fclose(f);
    int64_t dims[4];
    int nd = 0;
    void *data = NULL;
    size_t nbytes = 0;
    if (vg_idx_read(file, VG_IDX_U8, dims, &nd, &data, &nbytes, st) != VG_OK) return NULL;
    vg_tensor *t = vg_tensor_new_copy(VG_UINT8, dims, nd, data, nbytes, st);
    vg_free(data);
    return t;
}

vg_code vg_keras_fashion_mnist_load_data(const char *dir, vg_keras_data *out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "fashion_mnist.load_data: out is NULL");
    memset(out, 0, sizeof *out);
    char d[4096];
    if (keras_path(dir ? dir : "fashion-mnist", d, sizeof d, st) != VG_OK) return st->code;
    /* fashion_mnist.py's order: labels, then images, train, then test */
    static const char *const files[4] = {"train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                                         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"};
    vg_tensor **slots[4] = {&out->y_train, &out->x_train, &out->y_test, &out->x_test};
    vg_code rc = VG_OK;
    for (int i = 0; i < 4 && rc == VG_OK; i++)
        if (!(*slots[i] = read_idx(d, files[i], st))) rc = st->code;
    if (rc == VG_OK) rc = check_pair(out->x_train, out->y_train, d, files[1], files[0], st);
    if (rc == VG_OK) rc = check_pair(out->x_test, out->y_test, d, files[3], files[2], st);
    if (rc != VG_OK) vg_keras_data_free(out);
    return rc;
}
