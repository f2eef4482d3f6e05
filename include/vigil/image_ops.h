/* vigil/image_ops.h - image codec and image op builders (kernel layer:
 * src/kernels/media/image_codec_ops.c, src/kernels/media/image_ops.c). TF 1.15's op types, attrs
 * and defaults; the tf.image composites built on them are in vigil/image.h.
 *
 * Builders record errors on the graph (vg_graph_status) and return {NULL, 0}; an input
 * of {NULL, 0} (a failed earlier builder) gives {NULL, 0} without a new error.
 * Run-time errors: a PNG or JPEG that does not decode is INVALID_ARGUMENT "Invalid PNG
 * data, size N" / "Invalid JPEG data or crop window, data size N"; bytes of no known
 * image format INVALID_ARGUMENT "Unknown image file format..."; GIF and BMP
 * UNIMPLEMENTED. A decoded image is at most 2^31-1 bytes, and is checked against what
 * the input can hold before any allocation.
 *
 *     vg_output png = vg_encode_png(g, x, -1, NULL);    // x: uint8 [h, w, c] -> string
 *     y = vg_decode_png(g, png, 0, NULL);                // string -> uint8 [h, w, c]
 */
#ifndef VIGIL_IMAGE_OPS_H
#define VIGIL_IMAGE_OPS_H

#include "vigil/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- codecs (tf.io / tf.image decode_* and encode_*) ------------------------ */
/* DecodePng(contents) -> uint8 [h, w, channels]; channels 0 (as stored), 1, 3, 4.
 * Palette, 1/2/4-bit and 16-bit PNGs are expanded / reduced to 8 bits as TF does. */
VG_API vg_output vg_decode_png(vg_graph *g, vg_output contents, int channels, const char *name);
/* DecodeImage (tf.image.decode_image for PNG and JPEG): channels 0, 1, 3, 4. */
VG_API vg_output vg_decode_image(vg_graph *g, vg_output contents, int channels, const char *name);

/* {0}: TF's defaults. */
typedef struct vg_decode_jpeg_options {
    int channels;              /* 0, 1, 3 (default 0) */
    int ratio;                 /* downscaling: 1, 2, 4, 8 (0: TF's 1) */
    bool no_fancy_upscaling;   /* false (TF's fancy_upscaling=True) */
    bool try_recover_truncated;/* default false */
    float acceptable_fraction; /* of rows needed from a truncated file (0: TF's 1; a fraction
                                  of 0: zero_acceptable_fraction) */
    const char *dct_method;    /* NULL or "" (INTEGER_FAST), "INTEGER_FAST", "INTEGER_ACCURATE" */
    bool zero_acceptable_fraction; /* true: acceptable_fraction 0 (any number of rows) */
} vg_decode_jpeg_options;
/* DecodeJpeg(contents) -> uint8 [h/ratio, w/ratio, channels]; opts NULL = defaults. */
VG_API vg_output vg_decode_jpeg(vg_graph *g, vg_output contents, const vg_decode_jpeg_options *opts, const char *name);
/* EncodePng(image uint8 [h, w, c], c in 1..4) -> string scalar; compression -1..9. */
VG_API vg_output vg_encode_png(vg_graph *g, vg_output image, int compression, const char *name);
/* EncodeJpeg(image uint8 [h, w, c], c 1 or 3) -> string; format "", "grayscale", "rgb";
 * quality 0..100 (TF default 95); other attrs at TF's defaults. */
VG_API vg_output vg_encode_jpeg(vg_graph *g, vg_output image, const char *format, int quality, const char *name);
/* DecodeCompressed(bytes) (tf.io.decode_compressed): each string of `bytes` inflated;
 * compression_type "" (copy), "ZLIB" or "GZIP"; bad data fails with DATA_LOSS. */
VG_API vg_output vg_decode_compressed(vg_graph *g, vg_output bytes, const char *compression_type, const char *name);

/* ---- resize and colour ops --------------------------------------------------- */
/* ResizeBilinear(images [b, h, w, c] (uint8/int32/int64/float/double), size int32 [2])
 * -> float [b, size[0], size[1], c]; gradient through ResizeBilinearGrad (float and
 * double images). */
VG_API vg_output vg_resize_bilinear(vg_graph *g, vg_output images, vg_output size, bool align_corners,
                                    bool half_pixel_centers, const char *name);
/* ResizeNearestNeighbor -> images' dtype; gradient through ResizeNearestNeighborGrad. */
VG_API vg_output vg_resize_nearest_neighbor(vg_graph *g, vg_output images, vg_output size, bool align_corners,
                                            bool half_pixel_centers, const char *name);
/* AdjustContrastv2(images float [..., h, w, c], factor float scalar):
 * (x - mean over h, w) * factor + mean. */
VG_API vg_output vg_adjust_contrastv2(vg_graph *g, vg_output images, vg_output contrast_factor, const char *name);
/* AdjustSaturation / AdjustHue (float RGB images, last dim 3; scale / delta float scalars). */
VG_API vg_output vg_adjust_saturation_op(vg_graph *g, vg_output images, vg_output scale, const char *name);
VG_API vg_output vg_adjust_hue_op(vg_graph *g, vg_output images, vg_output delta, const char *name);
/* RGBToHSV / HSVToRGB (tf.image.rgb_to_hsv / hsv_to_rgb): float, last dim 3, h in [0, 1). */
VG_API vg_output vg_rgb_to_hsv(vg_graph *g, vg_output images, const char *name);
VG_API vg_output vg_hsv_to_rgb(vg_graph *g, vg_output images, const char *name);

/* ---- bounding boxes ---------------------------------------------------------- */
/* Options of tf.image.sample_distorted_bounding_box; zero-initialised: TF's defaults
 * (the values in brackets). */
typedef struct vg_sample_distorted_bbox_options {
    int64_t seed;                        /* op seed; 0: the graph's seed rules (vg_graph_get_seed) */
    float min_object_covered;            /* [0.1] when the builder gets no tensor for it; 0 reads as
                                          * 0.1: set zero_min_object_covered for 0 */
    bool zero_min_object_covered;        /* min_object_covered is 0 */
    float aspect_ratio_range[2];         /* [0.75, 1.33] (both 0: the default): width / height of the crop */
    float area_range[2];                 /* [0.05, 1.0] (both 0: the default): crop area / image area, in (0, 1] */
    int64_t max_attempts;                /* [100] (0: the default); < 0 is an error */
    bool use_image_if_no_bounding_boxes; /* [false] */
} vg_sample_distorted_bbox_options;
/* SampleDistortedBoundingBoxV2(image_size [3] (uint8/int32/int64: height, width,
 * depth), bounding_boxes float [batch, N, 4] (ymin, xmin, ymax, xmax in [0, 1]),
 * min_object_covered float scalar) -> begin [3], size [3] (image_size's dtype: begin
 * {y, x, 0}, size {h, w, -1}, for tf.slice) and bboxes float [1, 1, 4] (the crop,
 * normalised, for draw_bounding_boxes): outputs 0, 1, 2 of the returned op. A stateful
 * random op as TF 1.15's sample_distorted_bounding_box_op.cc: up to max_attempts times,
 * an aspect ratio uniform in aspect_ratio_range, a height uniform over the heights whose
 * crop area lies in area_range * image area, a uniform position; the first crop that
 * covers at least min_object_covered of some box (of >= 1 pixel) wins, else the whole
 * image. min_object_covered {NULL, 0}: a Const of opts->min_object_covered. opts NULL:
 * defaults. Draws come from vigil's seeded stream (random_internal.h): same seeds, same
 * boxes per session (each run draws anew); the values differ from TF's Philox draws.
 * Build-time errors (graph status, NULL): INVALID_ARGUMENT for dtypes, ranks,
 * "Aspect ratio range must be non-negative: [a, b]", "Area range must be non-negative:
 * [...]", "Area range must be less then or equal to 1.0: [...]", "Max attempts must be
 * non-negative: N". Run-time: INVALID_ARGUMENT "Min object covered must be
 * non-negative: x", "image_size must contain 3 elements", "All bounding box coordinates
 * must be in [0.0, 1.0]: v", "No bounding boxes provided as input. One must enable
 * use_image_if_no_bounding_boxes ...", "image height cannot be >= int32 max". */
VG_API vg_op *vg_sample_distorted_bounding_box_v2(vg_graph *g, vg_output image_size, vg_output bounding_boxes,
                                                  vg_output min_object_covered,
                                                  const vg_sample_distorted_bbox_options *opts, const char *name);

/* DrawBoundingBoxes(images float [batch, h, w, depth] (depth 1, 3 or 4), boxes float
 * [batch, n, 4] (ymin, xmin, ymax, xmax, relative)) -> images with each box's one-pixel
 * outline at rows / columns floor(coord * (size - 1)), clipped to the image, in colour
 * k % 10 of TF 1.15's table (yellow, blue, red, lime, purple, olive, maroon, navy,
 * aqua, fuchsia; grey images: white). Inverted boxes and boxes outside the image are
 * skipped with a WARNING log, as TF. Not differentiable. Build-time INVALID_ARGUMENT for
 * non-float inputs, ranks other than 4 / 3 and a depth other than 1, 3, 4; run-time
 * INVALID_ARGUMENT "The batch sizes should be the same". */
VG_API vg_output vg_draw_bounding_boxes(vg_graph *g, vg_output images, vg_output boxes, const char *name);

#ifdef __cplusplus
}
#endif

#endif
