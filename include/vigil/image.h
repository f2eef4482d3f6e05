/* vigil/image.h - tf.image (TF 1.15's image_ops_impl.py and random_ops.random_crop),
 * Python-level composites over the ops of vigil/image_ops.h and vigil/ops.h
 * (src/train/image.c).
 *
 * Images are 3-D [height, width, channels] or, where TF allows it, 4-D
 * [batch, height, width, channels]; functions that need the height and width at graph
 * build time (the bounding-box family, central_crop, per_image_standardization) fail
 * with INVALID_ARGUMENT when they are unknown. Each function opens TF's name scope
 * (name NULL = TF's default, "flip_left_right", "random_crop", ...). Errors are
 * recorded on the graph (vg_graph_status) with TF's messages ("width must be >= target
 * + offset.", "upper must be > lower.") and {NULL, 0} is returned.
 *
 *     vg_output img = vg_cast(g, x, VG_FLOAT, NULL);                  // [h, w, 3]
 *     img = vg_image_random_flip_left_right(g, img, 0, NULL);
 *     img = vg_image_random_brightness(g, img, 63, 0, NULL);
 *     img = vg_image_random_contrast(g, img, 0.2f, 1.8f, 0, NULL);
 *     y = vg_image_per_image_standardization(g, img, NULL);
 */
#ifndef VIGIL_IMAGE_H
#define VIGIL_IMAGE_H

#include "vigil/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* flip_left_right / flip_up_down: ReverseV2 over the width / height axis. */
VG_API vg_output vg_image_flip_left_right(vg_graph *g, vg_output image, const char *name);
VG_API vg_output vg_image_flip_up_down(vg_graph *g, vg_output image, const char *name);
/* random_flip_left_right / random_flip_up_down: each image flipped with probability
 * 1/2 (a 4-D batch draws per image). seed: op seed (0 = none) as tf.set_random_seed. */
VG_API vg_output vg_image_random_flip_left_right(vg_graph *g, vg_output image, int64_t seed, const char *name);
VG_API vg_output vg_image_random_flip_up_down(vg_graph *g, vg_output image, int64_t seed, const char *name);
/* tf.random_crop(value, size, seed): a uniformly placed slice of `size` (one entry per
 * dimension of value); run-time INVALID_ARGUMENT when size exceeds value's shape. */
VG_API vg_output vg_image_random_crop(vg_graph *g, vg_output value, const int64_t *size, int n, int64_t seed,
                                      const char *name);
/* crop_to_bounding_box / pad_to_bounding_box(image, offset_height, offset_width,
 * target_height, target_width). */
VG_API vg_output vg_image_crop_to_bounding_box(vg_graph *g, vg_output image, int64_t offset_height, int64_t offset_width,
                                               int64_t target_height, int64_t target_width, const char *name);
VG_API vg_output vg_image_pad_to_bounding_box(vg_graph *g, vg_output image, int64_t offset_height, int64_t offset_width,
                                              int64_t target_height, int64_t target_width, const char *name);
/* resize_image_with_crop_or_pad: centre crop and / or zero pad to the target size. */
VG_API vg_output vg_image_resize_with_crop_or_pad(vg_graph *g, vg_output image, int64_t target_height,
                                                  int64_t target_width, const char *name);
/* central_crop(image, central_fraction in (0, 1]). */
VG_API vg_output vg_image_central_crop(vg_graph *g, vg_output image, double central_fraction, const char *name);

typedef enum vg_resize_method { VG_RESIZE_BILINEAR = 0, VG_RESIZE_NEAREST_NEIGHBOR = 1 } vg_resize_method;
/* tf.image.resize_images (v1): a 3-D image is resized as a batch of one; bilinear
 * output is float, nearest keeps the dtype. */
VG_API vg_output vg_image_resize_images(vg_graph *g, vg_output images, int64_t height, int64_t width,
                                        vg_resize_method method, bool align_corners, const char *name);

/* adjust_brightness (image + delta, in float for integer images) and random_brightness
 * (delta ~ U[-max_delta, max_delta]; max_delta < 0 is an error). */
VG_API vg_output vg_image_adjust_brightness(vg_graph *g, vg_output image, vg_output delta, const char *name);
VG_API vg_output vg_image_random_brightness(vg_graph *g, vg_output image, float max_delta, int64_t seed, const char *name);
/* adjust_contrast (AdjustContrastv2) and random_contrast (factor ~ U[lower, upper]). */
VG_API vg_output vg_image_adjust_contrast(vg_graph *g, vg_output images, vg_output contrast_factor, const char *name);
VG_API vg_output vg_image_random_contrast(vg_graph *g, vg_output image, float lower, float upper, int64_t seed,
                                          const char *name);
/* adjust_saturation / adjust_hue (through HSV; integer images converted to float and
 * back as TF does). */
VG_API vg_output vg_image_adjust_saturation(vg_graph *g, vg_output image, vg_output saturation_factor, const char *name);
VG_API vg_output vg_image_adjust_hue(vg_graph *g, vg_output image, vg_output delta, const char *name);
/* random_saturation (factor ~ U[lower, upper]; upper > lower >= 0) and random_hue
 * (delta ~ U[-max_delta, max_delta], max_delta in [0, 0.5]). */
VG_API vg_output vg_image_random_saturation(vg_graph *g, vg_output image, float lower, float upper, int64_t seed,
                                            const char *name);
VG_API vg_output vg_image_random_hue(vg_graph *g, vg_output image, float max_delta, int64_t seed, const char *name);
/* per_image_standardization: (x - mean) / max(stddev, 1/sqrt(num_pixels)), float32. */
VG_API vg_output vg_image_per_image_standardization(vg_graph *g, vg_output image, const char *name);
/* convert_image_dtype(image, dtype, saturate): integer <-> float scaling by the integer
 * type's max (uint8, int32), float <-> float a cast. */
VG_API vg_output vg_image_convert_image_dtype(vg_graph *g, vg_output image, vg_dtype dtype, bool saturate,
                                              const char *name);

#ifdef __cplusplus
}
#endif

#endif
