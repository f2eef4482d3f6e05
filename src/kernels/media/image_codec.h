/* image_codec.h - the PNG and JPEG codecs behind DecodePng / DecodeJpeg / DecodeImage /
 * EncodePng / EncodeJpeg and ImageSummary (image_codec_ops.c, over Debian's libpng and
 * libjpeg-turbo). Exposed to the fuzz harness (fuzz/fuzz_image.c), which calls them
 * with a small output limit.
 *
 * Decoders never allocate more than max_bytes for the image, and check the decoded
 * size against what the input can hold before allocating: a PNG's pixel rows come out
 * of one deflate stream (at most ~1032 bytes per input byte), a baseline JPEG spends at
 * least 2 bits on every 8x8 block. Corrupt data: INVALID_ARGUMENT "Invalid PNG data,
 * size N" / "Invalid JPEG data or crop window, data size N" as TF; RESOURCE_EXHAUSTED
 * when the image is over max_bytes. */
#ifndef VG_IMAGE_CODEC_H
#define VG_IMAGE_CODEC_H

#include "kernels/kernel.h"
#include <stddef.h>
#include <stdint.h>

/* The largest decoded image the ops accept (bytes): TF's int32 bound. */
#define VG__IMAGE_MAX_BYTES ((size_t)INT32_MAX)

typedef struct vg__jpeg_opts {
    int channels;              /* 0 (as stored), 1, 3 */
    int ratio;                 /* 1, 2, 4, 8 */
    bool fancy_upscaling;      /* TF default true */
    bool try_recover_truncated;
    float acceptable_fraction; /* TF default 1 */
    const char *dct_method;    /* "", "INTEGER_FAST", "INTEGER_ACCURATE" */
} vg__jpeg_opts;

typedef enum { VG__IMG_UNKNOWN, VG__IMG_PNG, VG__IMG_JPEG, VG__IMG_GIF, VG__IMG_BMP } vg__img_format;
VG_HIDDEN vg__img_format vg__image_format(const uint8_t *d, size_t n);

/* Decode into a new uint8 tensor [h, w, c] (*out; caller unrefs). */
VG_HIDDEN vg_code vg__png_decode(const uint8_t *d, size_t n, int channels, size_t max_bytes, vg_tensor **out,
                                 vg_status *st);
VG_HIDDEN vg_code vg__jpeg_decode(const uint8_t *d, size_t n, const vg__jpeg_opts *o, size_t max_bytes,
                                  vg_tensor **out, vg_status *st);
/* Encodes h x w x c uint8 pixels (c 1..4, rows packed); *out from vg__malloc (caller
 * vg__free's). level -1 (zlib default) .. 9. */
VG_HIDDEN vg_code vg__png_encode(const uint8_t *px, int64_t h, int64_t w, int c, int level, uint8_t **out,
                                 size_t *len, vg_status *st);

#endif
