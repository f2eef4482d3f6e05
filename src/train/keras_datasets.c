/*
 * keras_datasets.c - tf.keras.datasets.{mnist,fashion_mnist,cifar10}.load_data
 * (vigil/keras_datasets.h), after TF 1.15's tensorflow/python/keras/datasets/mnist.py,
 * fashion_mnist.py, cifar10.py and cifar.py (load_batch): the same files, names and
 * places as Keras's get_file, without the download (a missing file is NOT_FOUND naming
 * where Keras fetches it).
 */
#include "vigil/idx.h"
#include "vigil/keras_datasets.h"
#include "vigil/npy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERAS_ORIGIN "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"

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

/* The start of a loader: INVALID_ARGUMENT "<what>: out is NULL", else *out zeroed and
 * the dataset's path (keras_path of arg, or of dflt when arg is NULL) in buf. */
static vg_code load_begin(vg_keras_data *out, const char *what, const char *arg, const char *dflt, char *buf,
                          size_t len, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: out is NULL", what);
    memset(out, 0, sizeof *out);
    return keras_path(arg ? arg : dflt, buf, len, st);
}

/* Whether file can be opened for reading (the loaders' NOT_FOUND check). */
static bool file_exists(const char *file) {
    FILE *f = fopen(file, "rb");
    if (!f) return false;
    fclose(f);
    return true;
}

/* The end of a load: when rc is VG_OK, checks the train and the test pair (names for
 * the messages); on any failure frees what *out holds. Returns the first failure. */
static vg_code check_loaded(vg_keras_data *out, vg_code rc, const char *where, const char *xtr, const char *ytr,
                            const char *xte, const char *yte, vg_status *st) {
    if (rc == VG_OK) rc = check_pair(out->x_train, out->y_train, where, xtr, ytr, st);
    if (rc == VG_OK) rc = check_pair(out->x_test, out->y_test, where, xte, yte, st);
    if (rc != VG_OK) vg_keras_data_free(out);
    return rc;
}

vg_code vg_keras_mnist_load_data(const char *path, vg_keras_data *out, vg_status *st) {
    char file[4096];
    vg_code begun = load_begin(out, "mnist.load_data", path, "mnist.npz", file, sizeof file, st);
    if (begun != VG_OK) return begun;
    if (!file_exists(file))
        return vg_status_set(
            st, VG_NOT_FOUND,
            "mnist.load_data: %s not found (vigil does not download: fetch " KERAS_ORIGIN "mnist.npz there)", file);
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
    return check_loaded(out, rc, file, "x_train", "y_train", "x_test", "y_test", st);
}

/* One gzip'd IDX file of the fashion-mnist directory as a uint8 tensor. */
static vg_tensor *read_idx(const char *dir, const char *name, vg_status *st) {
    char file[4200];
    snprintf(file, sizeof file, "%s/%s", dir, name);
    if (!file_exists(file)) {
        vg_status_set(st, VG_NOT_FOUND,
                      "fashion_mnist.load_data: %s not found (vigil does not download: fetch " KERAS_ORIGIN
                      "%s there, or install Debian's dataset-fashion-mnist and pass /usr/share/datasets/fashion-mnist)",
                      file, name);
        return NULL;
    }
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
    char d[4096];
    vg_code begun = load_begin(out, "fashion_mnist.load_data", dir, "fashion-mnist", d, sizeof d, st);
    if (begun != VG_OK) return begun;
    /* fashion_mnist.py's order: labels, then images, train, then test */
    static const char *const files[4] = {"train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                                         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"};
    vg_tensor **slots[4] = {&out->y_train, &out->x_train, &out->y_test, &out->x_test};
    vg_code rc = VG_OK;
    for (int i = 0; i < 4 && rc == VG_OK; i++)
        if (!(*slots[i] = read_idx(d, files[i], st))) rc = st->code;
    return check_loaded(out, rc, d, files[1], files[0], files[3], files[2], st);
}

/* ------------------------------------------------------------------------ */
/* cifar10 */

/* cifar.load_batch: the pickled dict's b'data' (uint8 [n, 3072]) and b'labels' (n ints). */
static vg_code load_batch(const char *file, vg_tensor **data, vg_tensor **labels, vg_status *st) {
    *data = *labels = NULL;
    if (!file_exists(file))
        return vg_status_set(st, VG_NOT_FOUND,
                             "cifar10.load_data: %s not found (vigil does not download: unpack "
                             "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz there)",
                             file);
    vg_pickle_dict *d = vg_pickle_dict_read(file, st);
    if (!d) return st->code;
    *data = vg_pickle_dict_get(d, "data", st);
    if (*data) *labels = vg_pickle_dict_get(d, "labels", st);
    vg_pickle_dict_free(d);
    if (!*data || !*labels) {
        vg_tensor_free(*data);
        *data = NULL;
        if (st->code != VG_NOT_FOUND) return st->code;
        char why[256];
        memcpy(why, st->msg, sizeof why - 1);
        why[sizeof why - 1] = 0;
        return vg_status_set(st, VG_DATA_LOSS, "%s: not a CIFAR-10 batch (%s)", file, why);
    }
    if (!is_u8(*data, 2) || vg_tensor_dim(*data, 1) != 3072 || vg_tensor_dtype(*labels) != VG_INT64 ||
        vg_tensor_dim(*labels, 0) != vg_tensor_dim(*data, 0)) {
        vg_status_set(st, VG_DATA_LOSS, "%s: data is not uint8 [n, 3072] with n labels", file);
        vg_tensor_free(*data);
        vg_tensor_free(*labels);
        *data = *labels = NULL;
        return VG_DATA_LOSS;
    }
    return VG_OK;
}

/* Concatenates batches: x uint8 [n, 32, 32, 3] (channels last: Keras's default
 * image_data_format, x.transpose(0, 2, 3, 1) of the [n, 3, 32, 32] rows), y uint8 [n, 1]. */
static vg_code cifar_split(const char *dir, const char *const *names, int nb, vg_tensor **x, vg_tensor **y,
                           vg_status *st) {
    vg_tensor *data[6] = {0}, *labels[6] = {0};
    int64_t n = 0;
    vg_code rc = VG_OK;
    char file[4200];
    for (int b = 0; b < nb && rc == VG_OK; b++) {
        snprintf(file, sizeof file, "%s/%s", dir, names[b]);
        if ((rc = load_batch(file, &data[b], &labels[b], st)) == VG_OK) n += vg_tensor_dim(data[b], 0);
    }
    if (rc == VG_OK) {
        int64_t xd[4] = {n, 32, 32, 3}, yd[2] = {n, 1};
        *x = vg_tensor_new(VG_UINT8, xd, 4, st);
        *y = *x ? vg_tensor_new(VG_UINT8, yd, 2, st) : NULL;
        if (!*x || !*y) rc = st->code;
    }
    for (int b = 0, row = 0; b < nb && rc == VG_OK; b++) {
        const uint8_t *src = vg_tensor_data(data[b]);
        const int64_t *lab = vg_tensor_data(labels[b]);
        uint8_t *xo = vg_tensor_data(*x), *yo = vg_tensor_data(*y);
        for (int64_t r = 0; r < vg_tensor_dim(data[b], 0); r++, row++) {
            if (lab[r] < 0 || lab[r] > 255) {
                rc = vg_status_set(st, VG_DATA_LOSS, "%s/%s: label %lld of row %lld does not fit uint8", dir, names[b],
                                   (long long)lab[r], (long long)r);
                break;
            }
            yo[row] = (uint8_t)lab[r];
            const uint8_t *img = src + r * 3072;
            uint8_t *o = xo + (int64_t)row * 3072;
            for (int c = 0; c < 3; c++)
                for (int p = 0; p < 1024; p++) o[p * 3 + c] = img[c * 1024 + p];
        }
    }
    for (int b = 0; b < nb; b++) {
        vg_tensor_free(data[b]);
        vg_tensor_free(labels[b]);
    }
    return rc;
}

vg_code vg_keras_cifar10_load_data(const char *dir, vg_keras_data *out, vg_status *st) {
    char d[4096];
    vg_code begun = load_begin(out, "cifar10.load_data", dir, "cifar-10-batches-py", d, sizeof d, st);
    if (begun != VG_OK) return begun;
    static const char *const train[5] = {"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
                                         "data_batch_5"};
    static const char *const test[1] = {"test_batch"};
    vg_code rc = cifar_split(d, train, 5, &out->x_train, &out->y_train, st);
    if (rc == VG_OK) rc = cifar_split(d, test, 1, &out->x_test, &out->y_test, st);
    if (rc != VG_OK) vg_keras_data_free(out);
    return rc;
}
