/* fuzz_image.c - the PNG and JPEG decoders of src/kernels/media/image_codec.h (libpng /
 * libjpeg-turbo behind DecodePng, DecodeJpeg, DecodeImage). Byte 0 picks the decoder
 * and its options (channels, JPEG ratio, truncation recovery); the rest is the file.
 * The decoders are called with a 16 MiB image limit (libjpeg's own memory: twice that), and refuse headers that claim
 * more pixels than the data can hold before allocating. The process-wide decode limits
 * (vg_set_decode_limits: 2^28 pixels, 8 MiB PNG chunks) stay at their defaults. Seeds
 * include issue 29's bombs (a progressive JPEG claiming 20000 x 20000 in 306 bytes, a
 * 61-byte PNG whose zTXt chunk claims 0x7ffffff0 bytes), which exceed scripts/fuzz.sh's
 * -malloc_limit_mb=64 when the checks are missing. */
#include "fuzz_util.h"
#include "kernels/media/image_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    vg_status st;
    vg_tensor *img = NULL;
    static const int k_png_ch[4] = {0, 1, 3, 4}, k_jpeg_ch[3] = {0, 1, 3}, k_ratio[4] = {1, 2, 4, 8};
    if ((sel & 1) == 0) {
        vg__png_decode(d, n, k_png_ch[(sel >> 1) & 3], (size_t)16 << 20, &img, &st);
    } else {
        vg__jpeg_opts o = {k_jpeg_ch[((sel >> 1) & 3) % 3], k_ratio[(sel >> 3) & 3], (sel >> 5) & 1, (sel >> 6) & 1,
                           (sel >> 7) ? 0.5f : 1.0f, (sel >> 5) & 1 ? "INTEGER_ACCURATE" : ""};
        vg__jpeg_decode(d, n, &o, (size_t)16 << 20, &img, &st);
    }
    if (img) vg_tensor_free(img);
    return 0;
}
