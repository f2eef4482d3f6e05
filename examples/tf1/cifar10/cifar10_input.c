/* cifar10_input.c - port of cifar10_input.py: reading the CIFAR-10 binary records with
 * FixedLengthRecordReader, the training distortions and the batching queues. */
#include "cifar10.h"
#include <stdio.h>
#include <string.h>

/* tf.image (vigil/image.h) comes with the data2 work of issue 11 item 4; until it is
 * merged the distortions are skipped (README: "Before tf.image"). */
#if defined(__has_include)
#if __has_include(<vigil/image.h>)
#include <vigil/image.h>
#define CIFAR10_HAVE_TF_IMAGE 1
#endif
#endif

int NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN = 50000;
int NUM_EXAMPLES_PER_EPOCH_FOR_EVAL = 10000;

typedef struct cifar10_record {
    int height, width, depth;
    vg_output key, label, uint8image;
} cifar10_record;

/* read_cifar10(filename_queue) */
static cifar10_record read_cifar10(vg_graph *g, vg_output filename_queue) {
    cifar10_record result;
    int label_bytes = 1; /* 2 for CIFAR-100 */
    result.height = 32;
    result.width = 32;
    result.depth = 3;
    int image_bytes = result.height * result.width * result.depth;
    int record_bytes = label_bytes + image_bytes;
    vg_output reader = vg_fixed_length_record_reader(g, 0, record_bytes, 0, 0, NULL);
    vg_op *read = vg_reader_read(g, reader, filename_queue, NULL);
    result.key = vg_out(read, 0);
    vg_output value = vg_out(read, 1);
    vg_output bytes = vg_decode_raw(g, value, VG_UINT8, true, NULL);
    int64_t b0 = 0, s0 = label_bytes;
    result.label = vg_cast(g, vg_slice_c(g, bytes, &b0, &s0, 1, NULL), VG_INT32, NULL);
    int64_t b1 = label_bytes, s1 = image_bytes;
    vg_output depth_major = vg_reshape_c(g, vg_slice_c(g, bytes, &b1, &s1, 1, NULL),
                                         (int64_t[]){result.depth, result.height, result.width}, 3, NULL);
    result.uint8image = vg_transpose_c(g, depth_major, (int32_t[]){1, 2, 0}, 3, NULL);
    return result;
}

static void generate_image_and_label_batch(vg_graph *g, vg_output image, vg_output label, int min_queue_examples,
                                           int batch_size, bool shuffle, vg_output *images, vg_output *labels) {
    int num_preprocess_threads = FLAGS.num_preprocess_threads;
    vg_output in[2] = {image, label}, out[2] = {{0}, {0}};
    if (shuffle)
        vg_shuffle_batch(g, in, 2, batch_size, min_queue_examples + 3 * batch_size, min_queue_examples,
                         num_preprocess_threads, 0, false, NULL, out);
    else
        vg_batch(g, in, 2, batch_size, num_preprocess_threads, min_queue_examples + 3 * batch_size, false, NULL, out);
#ifdef CIFAR10_HAVE_TF_IMAGE
    vg_summary_image(g, "images", out[0], 3);
#endif
    *images = out[0];
    *labels = vg_reshape_c(g, out[1], (int64_t[]){batch_size}, 1, NULL);
}

static vg_output filenames_tensor(vg_graph *g, const char *data_dir, bool train) {
    char path[6][1100];
    const char *v[6];
    int n = train ? 5 : 1;
    for (int i = 0; i < n; i++) {
        if (train) snprintf(path[i], sizeof path[i], "%s/data_batch_%d.bin", data_dir, i + 1);
        else snprintf(path[i], sizeof path[i], "%s/test_batch.bin", data_dir);
        v[i] = path[i];
        FILE *f = fopen(path[i], "rb");
        if (!f) {
            vg_graph_set_error(g, VG_NOT_FOUND, "Failed to find file: %s", path[i]);
            return (vg_output){NULL, 0};
        }
        fclose(f);
    }
    vg_status st;
    int64_t dim = n;
    vg_tensor *t = vg_tensor_new(VG_STRING, &dim, 1, &st);
    for (int i = 0; t && i < n; i++) vg_tensor_set_string(t, i, v[i], strlen(v[i]), &st);
    vg_output c = vg_const(g, t, "Const");
    vg_tensor_free(t);
    return c;
}

/* The first steps of both input functions: the files' queue, one record (*rec) and its
 * image as float32. */
static vg_output read_float_image(vg_graph *g, const char *data_dir, bool train, cifar10_record *rec) {
    vg_output filenames = filenames_tensor(g, data_dir, train);
    vg_output filename_queue = vg_string_input_producer(g, filenames, 0, true, 0, 32, NULL);
    *rec = read_cifar10(g, filename_queue);
    return vg_cast(g, rec->uint8image, VG_FLOAT, NULL);
}

/* Ensure that the random shuffling has good mixing properties: the queue holds
 * min_fraction_of_examples_in_queue (0.4) of an epoch's examples. */
static int min_queue_examples_of(int num_examples_per_epoch) {
    float min_fraction_of_examples_in_queue = 0.4f;
    return (int)(num_examples_per_epoch * min_fraction_of_examples_in_queue);
}

#ifndef CIFAR10_HAVE_TF_IMAGE
/* The centre height x width crop of a 32x32x3 image, whitened as
 * tf.image.per_image_standardization does: (x - mean) / max(stddev, 1/sqrt(N)). */
static vg_output centre_crop_standardized(vg_graph *g, vg_output image, int height, int width) {
    vg_output cropped = vg_slice_c(g, image, (int64_t[]){4, 4, 0}, (int64_t[]){height, width, 3}, 3, NULL);
    vg_output mean = vg_reduce_mean(g, cropped, NULL, -1, false, NULL);
    vg_output centered = vg_sub(g, cropped, mean, NULL);
    vg_output sd = vg_sqrt(g, vg_reduce_mean(g, vg_square(g, centered, NULL), NULL, -1, false, NULL), NULL);
    vg_output adj = vg_maximum(g, sd, vg_const_f32(g, 1.0f / 41.569219f, NULL), NULL);
    return vg_div(g, centered, adj, NULL);
}
#endif

void cifar10_input_distorted_inputs(vg_graph *g, const char *data_dir, int batch_size, vg_output *images,
                                    vg_output *labels) {
    cifar10_record read_input;
    vg_output reshaped_image = read_float_image(g, data_dir, true, &read_input);
    int height = IMAGE_SIZE, width = IMAGE_SIZE;
    vg_output float_image;
#ifdef CIFAR10_HAVE_TF_IMAGE
    vg_output distorted_image = vg_image_random_crop(g, reshaped_image, (int64_t[]){height, width, 3}, 3, 0, NULL);
    distorted_image = vg_image_random_flip_left_right(g, distorted_image, 0, NULL);
    distorted_image = vg_image_random_brightness(g, distorted_image, 63, 0, NULL);
    distorted_image = vg_image_random_contrast(g, distorted_image, 0.2f, 1.8f, 0, NULL);
    float_image = vg_image_per_image_standardization(g, distorted_image, NULL);
#else
    /* Before tf.image: the centre crop of inputs() and the same whitening formula
     * (mean 0, stddev max(std, 1/sqrt(N))) -- see README. */
    float_image = centre_crop_standardized(g, reshaped_image, height, width);
#endif
    int min_queue_examples = min_queue_examples_of(NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN);
    printf("Filling queue with %d CIFAR images before starting to train. This will take a few minutes.\n",
           min_queue_examples);
    generate_image_and_label_batch(g, float_image, read_input.label, min_queue_examples, batch_size, true, images,
                                   labels);
}

void cifar10_input_inputs(vg_graph *g, bool eval_data, const char *data_dir, int batch_size, vg_output *images,
                          vg_output *labels) {
    int num_examples_per_epoch = eval_data ? NUM_EXAMPLES_PER_EPOCH_FOR_EVAL : NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN;
    cifar10_record read_input;
    vg_output reshaped_image = read_float_image(g, data_dir, !eval_data, &read_input);
    int height = IMAGE_SIZE, width = IMAGE_SIZE;
    vg_output float_image;
#ifdef CIFAR10_HAVE_TF_IMAGE
    vg_output resized_image = vg_image_resize_with_crop_or_pad(g, reshaped_image, width, height, NULL);
    float_image = vg_image_per_image_standardization(g, resized_image, NULL);
#else
    float_image = centre_crop_standardized(g, reshaped_image, height, width);
#endif
    int min_queue_examples = min_queue_examples_of(num_examples_per_epoch);
    generate_image_and_label_batch(g, float_image, read_input.label, min_queue_examples, batch_size, false, images,
                                   labels);
}
