/* dataset.c - research/slim/datasets/dataset_factory.py + flowers.py (the Dataset:
 * file pattern, split sizes, classes, the TFExampleDecoder's keys_to_features and
 * items_to_handlers) and slim's DatasetDataProvider (tf.contrib.slim
 * dataset_data_provider.py over parallel_reader.parallel_read). */
#include "slim_classifier.h"
#include <glob.h>
#include <stdio.h>
#include <string.h>

vg_code dataset_factory_get_dataset(const char *name, const char *split_name, const char *dataset_dir,
                                    int64_t custom_num_samples, int custom_num_classes, slim_dataset *out,
                                    vg_status *st) {
    if (!dataset_dir || !*dataset_dir)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "You must supply the dataset directory with --dataset_dir");
    if (strcmp(name, "flowers") == 0) {
        /* flowers.py: _FILE_PATTERN 'flowers_%s_*.tfrecord', SPLITS_TO_SIZES, _NUM_CLASSES 5 */
        int64_t n;
        if (strcmp(split_name, "train") == 0) n = 3320;
        else if (strcmp(split_name, "validation") == 0) n = 350;
        else return vg_status_set(st, VG_INVALID_ARGUMENT, "split name %s was not recognized.", split_name);
        snprintf(out->file_pattern, sizeof out->file_pattern, "%s/flowers_%s_*.tfrecord", dataset_dir, split_name);
        out->num_samples = n, out->num_classes = 5;
        return VG_OK;
    }
    if (strcmp(name, "custom") == 0) {
        /* not in slim's dataset_map: a dataset in flowers' record layout whose size and
         * classes come from --dataset_num_samples / --dataset_num_classes */
        if (custom_num_samples <= 0 || custom_num_classes <= 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "dataset 'custom' needs --dataset_num_samples and --dataset_num_classes > 0");
        snprintf(out->file_pattern, sizeof out->file_pattern, "%s/custom_%s_*.tfrecord", dataset_dir, split_name);
        out->num_samples = custom_num_samples, out->num_classes = custom_num_classes;
        return VG_OK;
    }
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Name of dataset unknown %s (this port carries flowers and custom)",
                         name);
}

vg_code dataset_data_provider_get(vg_graph *g, const slim_dataset *ds, int num_readers, int common_queue_capacity,
                                  int common_queue_min, vg_output *image, vg_output *label, vg_status *st) {
    /* parallel_reader.get_data_files: the glob, at graph construction */
    glob_t gl;
    if (glob(ds->file_pattern, 0, NULL, &gl) != 0 || gl.gl_pathc == 0) {
        globfree(&gl);
        return vg_status_set(st, VG_NOT_FOUND, "No data files found in %s", ds->file_pattern);
    }
    int64_t n = (int64_t)gl.gl_pathc;
    vg_tensor *files = vg_tensor_new(VG_STRING, &n, 1, st);
    for (int64_t i = 0; files && i < n; i++) vg_tensor_set_string(files, i, gl.gl_pathv[i], strlen(gl.gl_pathv[i]), st);
    globfree(&gl);
    if (!files) return st->code;
    /* parallel_read(data_sources, reader_class=TFRecordReader, num_epochs=None, num_readers,
     * shuffle=True, common_queue_capacity, common_queue_min) */
    vg_graph_push_scope(g, "parallel_read/");
    vg_output data_files = vg_const(g, files, "Const");
    vg_tensor_free(files);
    vg_output filename_queue = vg_string_input_producer(g, data_files, 0, true, 0, 32, "filenames");
    vg_dtype dts[2] = {VG_STRING, VG_STRING};
    vg_output common_queue = vg_random_shuffle_queue(g, dts, NULL, 2, common_queue_capacity, common_queue_min, 0, 0,
                                                     "common_queue");
    char tag[64];
    snprintf(tag, sizeof tag, "fraction_of_%d_full", common_queue_capacity);
    vg_summary_scalar(g, tag,
                      vg_mul(g, vg_cast(g, vg_queue_size(g, common_queue, NULL), VG_FLOAT, "ToFloat"),
                             vg_const_f32(g, 1.f / (float)common_queue_capacity, "mul/y"), "mul"));
    /* ParallelReader.read: num_readers TFRecordReaders feeding the common queue */
    vg_op *enq[64];
    int nr = num_readers < 1 ? 1 : num_readers > 64 ? 64 : num_readers;
    for (int r = 0; r < nr; r++) {
        vg_output reader = vg_tfrecord_reader(g, "", NULL);
        vg_op *rd = vg_reader_read(g, reader, filename_queue, NULL);
        vg_output kv[2] = {vg_out(rd, 0), vg_out(rd, 1)};
        enq[r] = vg_queue_enqueue(g, common_queue, kv, 2, NULL);
    }
    vg_add_queue_runner(g, common_queue, enq, nr);
    vg_op *deq = vg_queue_dequeue(g, common_queue, "dequeue");
    vg_graph_pop_scope(g);
    /* TFExampleDecoder(keys_to_features, items_to_handlers).decode(data, ['image', 'label']) */
    vg_feature_spec specs[3] = {
        {.key = "image/encoded", .dtype = VG_STRING, .shape = vg_shape_make(NULL, 0),
         .default_value = vg_const_string(g, "", "default_encoded")},
        {.key = "image/format", .dtype = VG_STRING, .shape = vg_shape_make(NULL, 0),
         .default_value = vg_const_string(g, "png", "default_format")},
        {.key = "image/class/label", .dtype = VG_INT64, .shape = vg_shape_make(NULL, 0),
         .default_value = vg_const_i64(g, 0, "default_label")},
    };
    vg_output dense[3] = {{0}};
    vg_parse_single_example(g, vg_out(deq, 1), specs, 3, dense, NULL, "ParseSingleExample");
    /* slim.tfexample_decoder.Image(): png / jpeg by format (tf.case over image/format;
     * decode_image handles both), 3 channels; 'raw' is not handled (decode_image fails
     * with "Unknown image file format") */
    vg_output img = vg_decode_image(g, dense[0], 3, "decode_image");
    /* image.set_shape([None, None, 3]) */
    (void)dense[1];
    *image = img;
    *label = dense[2];
    vg_status gs;
    if (vg_graph_status(g, &gs) != VG_OK) return vg_status_set(st, gs.code, "%s", gs.msg);
    return VG_OK;
}
