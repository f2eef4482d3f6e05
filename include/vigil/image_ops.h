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

#ifdef __cplusplus
}
#endif

#endif
