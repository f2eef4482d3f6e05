/* slim_classifier.h - the port of tensorflow/models research/slim's image classifier
 * (see README.md): nets (mobilenet_v1.py, resnet_v1.py + resnet_utils.py,
 * nets_factory.py), preprocessing (inception_preprocessing.py,
 * preprocessing_factory.py) and the dataset (a dataset_factory-style TFRecord dataset
 * read as slim's DatasetDataProvider with tfexample_decoder's handlers). The training
 * script itself is train_image_classifier_main.c. */
#ifndef SLIM_CLASSIFIER_H
#define SLIM_CLASSIFIER_H

#include "vigil/vigil.h"
#include <stdbool.h>

/* A network's end_points dict (insertion order kept, for the activation summaries). */
#define SC_MAX_END_POINTS 128
typedef struct end_points {
    int n;
    char names[SC_MAX_END_POINTS][128];
    vg_output out[SC_MAX_END_POINTS];
} end_points;
void end_points_add(end_points *ep, const char *name, vg_output x);
/* slim's prediction_fn (tf.contrib.layers.softmax(logits, scope=scope)): <scope>/Softmax,
 * added to ep under the name scope; returns it. */
vg_output end_points_add_softmax(vg_graph *g, end_points *ep, const char *scope, vg_output logits);
/* ep[name] or {NULL, 0} */
vg_output end_points_get(const end_points *ep, const char *name);

/* ---- nets/mobilenet_v1.py ---- */
/* mobilenet_v1_base up to final_endpoint ("Conv2d_13_pointwise"); scope NULL: build in
 * the current variable scope (mobilenet_v1 passes its own scope object, so the base
 * does not open another). Errors as the graph's status (INVALID_ARGUMENT for
 * depth_multiplier <= 0, "Unknown final endpoint ..."). */
vg_output mobilenet_v1_base(vg_graph *g, vg_output inputs, const char *final_endpoint, int min_depth,
                            double depth_multiplier, const char *scope, end_points *ep);
/* mobilenet_v1(inputs, num_classes, dropout_keep_prob, is_training, min_depth,
 * depth_multiplier, prediction_fn=softmax, spatial_squeeze=True, scope='MobilenetV1') */
vg_output mobilenet_v1(vg_graph *g, vg_output inputs, int num_classes, double dropout_keep_prob, bool is_training,
                       int min_depth, double depth_multiplier, end_points *ep);
/* mobilenet_v1_arg_scope(is_training, weight_decay, stddev, regularize_depthwise): pushes
 * the arg scopes (pop them with vg_slim_arg_scope_pop_to). */
void mobilenet_v1_arg_scope(vg_graph *g, bool is_training, double weight_decay, double stddev,
                            bool regularize_depthwise);
#define MOBILENET_V1_DEFAULT_IMAGE_SIZE 224

/* ---- nets/resnet_utils.py ---- */
typedef struct resnet_unit { int depth, depth_bottleneck, stride; } resnet_unit;
typedef struct resnet_block {
    const char *scope;
    int nunits;
    resnet_unit units[40];
} resnet_block;
vg_output resnet_subsample(vg_graph *g, vg_output inputs, int factor, const char *scope);
vg_output resnet_conv2d_same(vg_graph *g, vg_output inputs, int64_t num_outputs, int kernel_size, int stride, int rate,
                             const char *scope);
vg_output resnet_stack_blocks_dense(vg_graph *g, vg_output net, const resnet_block *blocks, int nblocks,
                                    int output_stride, end_points *ep);
/* resnet_arg_scope(weight_decay, batch_norm_decay, batch_norm_epsilon, batch_norm_scale) */
void resnet_arg_scope(vg_graph *g, double weight_decay, double batch_norm_decay, double batch_norm_epsilon,
                      bool batch_norm_scale);

/* ---- nets/resnet_v1.py ---- */
vg_output resnet_v1_bottleneck(vg_graph *g, vg_output inputs, int depth, int depth_bottleneck, int stride, int rate,
                               end_points *ep);
/* resnet_v1(inputs, blocks, num_classes, is_training, global_pool=True, output_stride,
 * include_root_block=True, spatial_squeeze=True, scope) */
vg_output resnet_v1(vg_graph *g, vg_output inputs, const resnet_block *blocks, int nblocks, int num_classes,
                    bool is_training, bool global_pool, int output_stride, bool include_root_block, const char *scope,
                    end_points *ep);
/* resnet_v1_50 / 101 / 152 / 200 (layers = 50, 101, 152, 200), scope "resnet_v1_<layers>" */
vg_output resnet_v1_n(vg_graph *g, int layers, vg_output inputs, int num_classes, bool is_training, end_points *ep);
#define RESNET_V1_DEFAULT_IMAGE_SIZE 224

/* ---- nets/nets_factory.py ---- */
typedef struct network_fn {
    const char *name;
    int default_image_size;
    int num_classes;
    double weight_decay;
    bool is_training;
} network_fn;
/* get_network_fn(name, num_classes, weight_decay, is_training): INVALID_ARGUMENT "Name of
 * network unknown <name>" for a name the port lacks. */
vg_code nets_factory_get_network_fn(const char *name, int num_classes, double weight_decay, bool is_training,
                                    network_fn *out, vg_status *st);
/* network_fn(images): the net under its arg_scope; logits (graph status on failure). */
vg_output network_fn_apply(vg_graph *g, const network_fn *fn, vg_output images, end_points *ep);

/* ---- preprocessing/inception_preprocessing.py + preprocessing_factory.py ---- */
vg_output inception_distort_color(vg_graph *g, vg_output image, int color_ordering, bool fast_mode, const char *scope);
vg_output inception_preprocess_for_train(vg_graph *g, vg_output image, int height, int width, vg_output bbox,
                                         bool fast_mode, const char *scope);
vg_output inception_preprocess_for_eval(vg_graph *g, vg_output image, int height, int width, double central_fraction,
                                        const char *scope);
vg_output inception_preprocess_image(vg_graph *g, vg_output image, int height, int width, bool is_training,
                                     vg_output bbox, bool fast_mode);
typedef vg_output (*preprocessing_fn)(vg_graph *g, vg_output image, int height, int width, bool is_training);
/* get_preprocessing(name, is_training): INVALID_ARGUMENT "Preprocessing name [<name>] was
 * not recognized"; UNIMPLEMENTED for the preprocessings the port does not carry
 * (cifarnet, lenet, vgg). */
vg_code preprocessing_factory_get(const char *name, preprocessing_fn *out, vg_status *st);

/* ---- datasets (dataset_factory.py, flowers.py) + DatasetDataProvider ---- */
typedef struct slim_dataset {
    char file_pattern[1024];
    int64_t num_samples;
    int num_classes;
} slim_dataset;
/* get_dataset(name, split_name, dataset_dir): "flowers" (flowers_<split>_*.tfrecord,
 * train 3320 / validation 350, 5 classes) or "custom" (<split>-*.tfrecord; num_samples
 * and num_classes given). INVALID_ARGUMENT for an unknown name or split. */
vg_code dataset_factory_get_dataset(const char *name, const char *split_name, const char *dataset_dir,
                                    int64_t custom_num_samples, int custom_num_classes, slim_dataset *out,
                                    vg_status *st);
/* DatasetDataProvider(dataset, num_readers, common_queue_capacity, common_queue_min,
 * shuffle=True).get(['image', 'label']): image uint8 [h, w, 3], label int64 scalar. */
vg_code dataset_data_provider_get(vg_graph *g, const slim_dataset *ds, int num_readers, int common_queue_capacity,
                                  int common_queue_min, vg_output *image, vg_output *label, vg_status *st);

#endif
