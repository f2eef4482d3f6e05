/* cifar_input.c - port of research/resnet/cifar_input.py: CIFAR-10/100 binary records
 * read with FixedLengthRecordReader from a file pattern, the training distortions
 * (resize_image_with_crop_or_pad + random_crop + random_flip_left_right +
 * per_image_standardization), a RandomShuffleQueue (train, 16 enqueue threads) or
 * FIFOQueue (eval, 1 thread) fed by a QueueRunner, dequeue_many and one-hot labels by
 * sparse_to_dense. Plus the Fashion-MNIST writer that stands in for the download. */
#include "resnet_model.h"
#include "../tf1_util.h"
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* tf.gfile.Glob(data_path) as a 1-D string Const */
static vg_output glob_files(vg_graph *g, const char *pattern) {
    glob_t gl;
    memset(&gl, 0, sizeof gl);
    int r = glob(pattern, 0, NULL, &gl);
    if (r != 0 || gl.gl_pathc == 0) {
        if (r == 0) globfree(&gl);
        vg_graph_set_error(g, VG_NOT_FOUND, "no files match %s", pattern);
        return vg_out(NULL, 0);
    }
    vg_status st;
    int64_t n = (int64_t)gl.gl_pathc;
    vg_tensor *t = vg_tensor_new(VG_STRING, &n, 1, &st);
    for (int64_t i = 0; t && i < n; i++) vg_tensor_set_string(t, i, gl.gl_pathv[i], strlen(gl.gl_pathv[i]), &st);
    globfree(&gl);
    if (!t) {
        vg_graph_set_error(g, st.code, "%s", st.msg);
        return vg_out(NULL, 0);
    }
    vg_output c = vg_const(g, t, "Const");
    vg_tensor_free(t);
    return c;
}

vg_code cifar_input_build_input(vg_graph *g, const char *dataset, const char *data_path, int batch_size,
                                const char *mode, int image_size, vg_output *images, vg_output *labels) {
    int label_bytes, label_offset, num_classes;
    *images = *labels = vg_out(NULL, 0);
    if (strcmp(dataset, "cifar10") == 0) {
        label_bytes = 1;
        label_offset = 0;
        num_classes = 10;
    } else if (strcmp(dataset, "cifar100") == 0) {
        label_bytes = 1;
        label_offset = 1;
        num_classes = 100;
    } else {
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Not supported dataset %s", dataset);
    }
    int depth = 3;
    int image_bytes = image_size * image_size * depth;
    int record_bytes = label_bytes + label_offset + image_bytes;

    vg_output data_files = glob_files(g, data_path);
    if (!data_files.op) return vg_graph_status(g, NULL);
    vg_output file_queue = vg_string_input_producer(g, data_files, 0, true, 0, 32, NULL);
    /* Read examples from files in the filename queue. */
    vg_output reader = vg_fixed_length_record_reader(g, 0, record_bytes, 0, 0, NULL);
    vg_output value = vg_out(vg_reader_read(g, reader, file_queue, NULL), 1);

    /* Convert these examples to dense labels and processed images. */
    vg_output record =
        vg_reshape_c(g, vg_decode_raw(g, value, VG_UINT8, true, NULL), (int64_t[]){record_bytes}, 1, NULL);
    vg_output label = vg_cast(g, vg_slice_c(g, record, (int64_t[]){label_offset}, (int64_t[]){label_bytes}, 1, NULL),
                              VG_INT32, NULL);
    /* Convert from string to [depth * height * width] to [depth, height, width]. */
    vg_output depth_major =
        vg_reshape_c(g, vg_slice_c(g, record, (int64_t[]){label_offset + label_bytes}, (int64_t[]){image_bytes}, 1, NULL),
                     (int64_t[]){depth, image_size, image_size}, 3, NULL);
    /* Convert from [depth, height, width] to [height, width, depth]. */
    vg_output image = vg_cast(g, vg_transpose_c(g, depth_major, (int32_t[]){1, 2, 0}, 3, NULL), VG_FLOAT, NULL);

    vg_dtype dtypes[2] = {VG_FLOAT, VG_INT32};
    vg_shape shapes[2] = {{.ndims = 3, .dims = {image_size, image_size, depth}}, {.ndims = 1, .dims = {1}}};
    vg_output example_queue;
    int num_threads;
    if (strcmp(mode, "train") == 0) {
        image = vg_image_resize_with_crop_or_pad(g, image, image_size + 4, image_size + 4, NULL);
        image = vg_image_random_crop(g, image, (int64_t[]){image_size, image_size, 3}, 3, 0, NULL);
        image = vg_image_random_flip_left_right(g, image, 0, NULL);
        /* Brightness/saturation/constrast provides small gains .2%~.5% on cifar. (commented out there) */
        image = vg_image_per_image_standardization(g, image, NULL);
        example_queue = vg_random_shuffle_queue(g, dtypes, shapes, 2, 16 * batch_size, 8 * batch_size, 0, 0, NULL);
        num_threads = 16;
    } else {
        image = vg_image_resize_with_crop_or_pad(g, image, image_size, image_size, NULL);
        image = vg_image_per_image_standardization(g, image, NULL);
        example_queue = vg_fifo_queue(g, dtypes, shapes, 2, 3 * batch_size, NULL);
        num_threads = 1;
    }
    vg_output comps[2] = {image, label};
    vg_op *example_enqueue_op = vg_queue_enqueue(g, example_queue, comps, 2, NULL);
    vg_op *enqueue_ops[16];
    for (int i = 0; i < num_threads; i++) enqueue_ops[i] = example_enqueue_op;
    if (example_enqueue_op) vg_add_queue_runner(g, example_queue, enqueue_ops, num_threads);

    /* Read 'batch' labels + images from the example queue. */
    vg_op *deq = vg_queue_dequeue_many(g, example_queue, vg_const_i32(g, batch_size, NULL), NULL);
    *images = vg_out(deq, 0);
    vg_output lab = vg_reshape_c(g, vg_out(deq, 1), (int64_t[]){batch_size, 1}, 2, NULL);
    vg_output indices = vg_reshape_c(
        g, vg_range(g, vg_const_i32(g, 0, "range/start"), vg_const_i32(g, batch_size, "range/limit"),
                    vg_const_i32(g, 1, "range/delta"), "range"),
        (int64_t[]){batch_size, 1}, 2, NULL);
    vg_output parts[2] = {indices, lab};
    *labels = vg_sparse_to_dense(g, vg_concat_c(g, parts, 2, 1, "concat"),
                                 vg_const_i32_vec(g, (int32_t[]){batch_size, num_classes}, 2, "SparseToDense/output_shape"),
                                 vg_const_f32(g, 1.0f, "SparseToDense/sparse_values"),
                                 vg_const_f32(g, 0.0f, "SparseToDense/default_value"), true, NULL);
    /* the Python's asserts on the static shapes */
    vg_shape is = vg_output_shape(*images), ls = vg_output_shape(*labels);
    if (vg_graph_status(g, NULL) == VG_OK &&
        (is.ndims != 4 || is.dims[0] != batch_size || is.dims[3] != 3 || ls.ndims != 2 || ls.dims[0] != batch_size ||
         ls.dims[1] != num_classes))
        return vg_graph_set_error(g, VG_INTERNAL, "build_input: unexpected static shapes");
    /* Display the training images in the visualizer. */
    vg_summary_image(g, "images", *images, 3);
    return vg_graph_status(g, NULL);
}

/* ---- not in the Python: the data, written from Fashion-MNIST ------------------- */

/* One record: the label byte, then image_size^2 bytes per channel (R, G, B planes): the
 * grey image (nearest-neighbour scaled to 7/8 of the side) centred, in all channels. */
static int write_batch(const char *path, const uint8_t *images, const uint8_t *labels, int64_t from, int64_t to,
                       int size) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    int inner = size * 7 / 8, border = (size - inner) / 2;
    size_t rb = 1 + (size_t)3 * size * size;
    uint8_t *rec = malloc(rb);
    if (!rec) {
        fclose(f);
        return 1;
    }
    int rc = 0;
    for (int64_t i = from; i < to && !rc; i++) {
        rec[0] = labels[i];
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < size; y++)
                for (int x = 0; x < size; x++) {
                    int sy = y - border, sx = x - border;
                    uint8_t v = 0;
                    if (sy >= 0 && sy < inner && sx >= 0 && sx < inner)
                        v = images[i * 784 + (sy * 28 / inner) * 28 + (sx * 28 / inner)];
                    rec[1 + (size_t)c * size * size + (size_t)y * size + x] = v;
                }
        if (fwrite(rec, rb, 1, f) != 1) {
            fprintf(stderr, "write error on %s\n", path);
            rc = 1;
        }
    }
    free(rec);
    if (fclose(f) != 0) rc = 1;
    return rc;
}

int cifar_input_write_from_fashion_mnist(const char *fmnist_dir, const char *dir, int image_size, int limit) {
    char path[1200];
    mkdir(dir, 0755);
    uint8_t *ti = NULL, *tl = NULL, *ei = NULL, *el = NULL;
    int64_t nti, ntl, nei, nel;
    int rc = tf1_load_idx(fmnist_dir, "train-images-idx3-ubyte.gz", &ti, &nti) ||
             tf1_load_idx(fmnist_dir, "train-labels-idx1-ubyte.gz", &tl, &ntl) ||
             tf1_load_idx(fmnist_dir, "t10k-images-idx3-ubyte.gz", &ei, &nei) ||
             tf1_load_idx(fmnist_dir, "t10k-labels-idx1-ubyte.gz", &el, &nel);
    if (!rc) {
        int64_t n = nti < ntl ? nti : ntl, ne = nei < nel ? nei : nel;
        if (limit > 0 && limit < n) n = limit;
        if (limit > 0 && limit / 5 < ne) ne = limit / 5 > 0 ? limit / 5 : 1;
        printf("Writing %lld training and %lld test examples (%dx%d) in CIFAR-10's binary format to %s\n",
               (long long)n, (long long)ne, image_size, image_size, dir);
        for (int i = 0; i < 5 && !rc; i++) {
            snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, i + 1);
            rc = write_batch(path, ti, tl, n * i / 5, n * (i + 1) / 5, image_size);
        }
        snprintf(path, sizeof path, "%s/test_batch.bin", dir);
        if (!rc) rc = write_batch(path, ei, el, 0, ne, image_size);
    }
    vg_free(ti);
    vg_free(tl);
    vg_free(ei);
    vg_free(el);
    return rc;
}
