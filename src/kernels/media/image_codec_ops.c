/*
 * image_codec_ops.c - TF 1.15's image codec ops over Debian's libpng and libjpeg-turbo
 * (tensorflow/core/kernels/decode_image_op.cc, encode_png_op.cc, encode_jpeg_op.cc,
 * decode_compressed_op.cc, summary_image_op.cc):
 *
 *   DecodePng(contents) channels=0, dtype=uint8        -> uint8 [h, w, c]
 *   DecodeJpeg(contents) channels=0, ratio=1, fancy_upscaling=true,
 *       try_recover_truncated=false, acceptable_fraction=1, dct_method=""
 *   DecodeImage(contents) channels=0, dtype=uint8      (TF 2.3's op; tf.image.decode_image)
 *   EncodePng(image) compression=-1                    -> string scalar
 *   EncodeJpeg(image) format="", quality=95, progressive, optimize_size,
 *       chroma_downsampling=true, density_unit="in", x/y_density=300, xmp_metadata=""
 *   DecodeCompressed(bytes) compression_type="" | ZLIB | GZIP
 *   ImageSummary(tag, tensor) max_images=3, bad_color=[255,0,0,255]
 *
 * As TF 1.x's shared DecodeImageOp, the decode ops classify their input by its magic
 * bytes, so DecodePng also decodes a JPEG and DecodeJpeg a PNG; GIF and BMP are
 * recognised but not decoded here (UNIMPLEMENTED). Only uint8 images (no uint16 dtype in
 * vigil). None of these ops has a gradient (TF: NotDifferentiable).
 */
#include "kernels/media/image_codec.h"
#include "io/io.h"
#include "vigil/data.h"
#include "vigil/image_ops.h"
#include <jpeglib.h>
#include <jerror.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

vg__img_format vg__image_format(const uint8_t *d, size_t n) {
    if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff) return VG__IMG_JPEG;
    if (n >= 4 && memcmp(d, "\211PNG", 4) == 0) return VG__IMG_PNG;
    if (n >= 4 && memcmp(d, "GIF8", 4) == 0) return VG__IMG_GIF;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return VG__IMG_BMP;
    return VG__IMG_UNKNOWN;
}

/* ------------------------------------------------------------------------ */
/* Decode limits (vigil/data.h; stored in src/io/fs.c, where the record readers read them) */

_Static_assert(VG_DEFAULT_MAX_IMAGE_PIXELS == VG__DEFAULT_MAX_IMAGE_PIXELS &&
                   VG_DEFAULT_MAX_PNG_CHUNK_BYTES == VG__DEFAULT_MAX_PNG_CHUNK_BYTES &&
                   VG_DEFAULT_MAX_RECORD_BYTES == VG__DEFAULT_MAX_RECORD_BYTES,
               "decode limit defaults: vigil/data.h and io/io.h disagree");

vg_decode_limits vg_decode_limits_default(void) {
    vg_decode_limits l = {VG_DEFAULT_MAX_IMAGE_PIXELS, VG_DEFAULT_MAX_PNG_CHUNK_BYTES, VG_DEFAULT_MAX_RECORD_BYTES};
    return l;
}

vg_decode_limits vg_get_decode_limits(void) {
    vg_decode_limits l = {vg__io_max_image_pixels(), vg__io_max_png_chunk_bytes(), vg__io_max_record_bytes()};
    return l;
}

vg_code vg_set_decode_limits(const vg_decode_limits *limits, vg_status *st) {
    if (!limits) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_set_decode_limits: NULL limits");
    if (limits->max_image_pixels < 0 || limits->max_png_chunk_bytes < 0 || limits->max_record_bytes < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "vg_set_decode_limits: limits must be >= 0 (0: the default), got %lld, %lld, %lld",
                             (long long)limits->max_image_pixels, (long long)limits->max_png_chunk_bytes,
                             (long long)limits->max_record_bytes);
    vg__io_set_decode_limits(limits->max_image_pixels, limits->max_png_chunk_bytes, limits->max_record_bytes);
    vg_status_clear(st);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* PNG decoding */

typedef struct png_rd {
    const uint8_t *d;
    size_t n, pos;
    vg_tensor *img;
    png_bytep *rows;
    char err[96]; /* libpng's fatal error message */
} png_rd;

static void png_read_cb(png_structp p, png_bytep out, size_t len) {
    png_rd *r = png_get_io_ptr(p);
    if (len > r->n - r->pos) png_error(p, "read past the end of the data");
    memcpy(out, r->d + r->pos, len);
    r->pos += len;
}
static void png_err_cb(png_structp p, png_const_charp msg) {
    png_rd *r = png_get_error_ptr(p); /* NULL when encoding */
    if (r && msg) snprintf(r->err, sizeof r->err, "%s", msg);
    png_longjmp(p, 1);
}
static void png_warn_cb(png_structp p, png_const_charp msg) { (void)p, (void)msg; }

vg_code vg__png_decode(const uint8_t *d, size_t n, int channels, size_t max_bytes, vg_tensor **out, vg_status *st) {
    *out = NULL;
    if (channels != 0 && channels != 1 && channels != 3 && channels != 4 && channels != 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "channels must be 0, 1, 3, or 4, got %d", channels);
    /* Decompression bombs: libpng allocates (and zeroes) a whole tEXt / zTXt / iTXt /
     * sPLT / eXIf chunk before reading it, however long its header says it is (a
     * 61-byte file claiming 0x7ffffff0 bytes: 2 GB). The chunks before the first IDAT
     * (all that is read: png_read_end is not called) must fit in the data and in the
     * caller's limit. */
    int64_t chunk_max = vg__io_max_png_chunk_bytes();
    for (size_t pos = 8; n >= 8 && pos + 8 <= n;) {
        uint64_t clen = ((uint64_t)d[pos] << 24) | ((uint64_t)d[pos + 1] << 16) | ((uint64_t)d[pos + 2] << 8) | d[pos + 3];
        const uint8_t *type = d + pos + 4;
        if (memcmp(type, "IDAT", 4) == 0 || memcmp(type, "IEND", 4) == 0) break;
        char tn[5];
        for (int i = 0; i < 4; i++) tn[i] = (type[i] >= 'A' && type[i] <= 'z') ? (char)type[i] : '?';
        tn[4] = 0;
        if (clen > (uint64_t)chunk_max)
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                                 "DecodePng: a %s chunk of %llu bytes is over the limit of %lld bytes "
                                 "(max_png_chunk_bytes, vg_set_decode_limits), data size %zu",
                                 tn, (unsigned long long)clen, (long long)chunk_max, n);
        if (clen + 12 > n - pos)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Invalid PNG data, size %zu: a %s chunk at offset %zu claims %llu bytes, past the "
                                 "end of the data", n, tn, pos, (unsigned long long)clen);
        pos += 12 + (size_t)clen;
    }
    png_rd r = {d, n, 0, NULL, NULL, {0}};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, png_err_cb, png_warn_cb);
    if (!png) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodePng: out of memory");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodePng: out of memory");
    }
    /* too-large images are reported from inside the setjmp region through this */
    static const char *const k_reasons[] = {NULL, "is too large", "cannot be held in the data", "over the limit"};
    volatile int why = 0;
    volatile uint32_t vw = 0, vh = 0;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        vg__free(r.rows);
        if (r.img) vg_tensor_free(r.img);
        if (why == 3)
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                                 "DecodePng: a %u x %u image (%llu pixels) is over the limit of %lld pixels "
                                 "(max_image_pixels, vg_set_decode_limits)",
                                 (unsigned)vw, (unsigned)vh, (unsigned long long)vw * vh,
                                 (long long)vg__io_max_image_pixels());
        if (strstr(r.err, "chunk data is too large")) /* png_check_chunk_length: over chunk_malloc_max */
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                                 "DecodePng: %s (a chunk's length is over the limit of %lld bytes: "
                                 "max_png_chunk_bytes, vg_set_decode_limits), data size %zu",
                                 r.err, (long long)vg__io_max_png_chunk_bytes(), n);
        if (why)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid PNG data, size %zu: a %u x %u image %s", n,
                                 (unsigned)vw, (unsigned)vh, k_reasons[why]);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid PNG data, size %zu", n);
    }
    png_set_read_fn(png, &r, png_read_cb);
    /* Decompression bombs: libpng buffers a whole ancillary chunk (and inflates zTXt /
     * iCCP) up to chunk_malloc_max, unlimited by default; IHDR's own limits are
     * 1000000 x 1000000, the pixel limit is checked below. */
    png_set_chunk_malloc_max(png, (png_alloc_size_t)(chunk_max > 0x7fffffff ? 0x7fffffff : chunk_max));
    png_set_chunk_cache_max(png, 1000); /* ancillary chunks kept (sPLT, text, unknown) */
#ifdef VG_FUZZ_NO_CRC
    png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
#endif
    png_read_info(png, info);
    png_uint_32 w, h;
    int bit_depth, color_type, interlace;
    png_get_IHDR(png, info, &w, &h, &bit_depth, &color_type, &interlace, NULL, NULL);
    vw = w, vh = h;
    int in_channels = png_get_channels(png, info);
    bool trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    int base = (color_type & PNG_COLOR_MASK_COLOR) ? 3 : 1;
    bool alpha = (color_type & PNG_COLOR_MASK_ALPHA) || trns;
    int want = channels ? channels : base + (alpha ? 1 : 0);
    /* the deflate stream holds at most ~1032 output bytes per input byte */
    uint64_t rowbytes = ((uint64_t)w * (uint64_t)bit_depth * (uint64_t)in_channels + 7) / 8;
    uint64_t raw = (uint64_t)h * rowbytes;
    uint64_t outb = (uint64_t)h * (uint64_t)w * (uint64_t)want;
    if ((uint64_t)w * h > (uint64_t)vg__io_max_image_pixels()) why = 3, png_longjmp(png, 1);
    if (outb > max_bytes || (uint64_t)w * want > INT32_MAX) why = 1, png_longjmp(png, 1);
    if (raw > 1040 * (uint64_t)n + 4096) why = 2, png_longjmp(png, 1);

    if (bit_depth == 16) png_set_strip_16(png);
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (bit_depth < 8 && color_type != PNG_COLOR_TYPE_PALETTE && color_type != PNG_COLOR_TYPE_GRAY) png_set_packing(png);
    if (trns) png_set_tRNS_to_alpha(png);
    if (want <= 2 && base == 3) png_set_rgb_to_gray_fixed(png, 1, -1, -1);
    if (want >= 3 && base == 1) png_set_gray_to_rgb(png);
    if ((want == 1 || want == 3) && alpha) png_set_strip_alpha(png);
    if ((want == 2 || want == 4) && !alpha) png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_channels(png, info) != want || png_get_rowbytes(png, info) != (size_t)w * (size_t)want)
        png_error(png, "unexpected transformed layout");
    int64_t dims[3] = {h, w, want};
    vg_status ast;
    r.img = vg_tensor_new(VG_UINT8, dims, 3, &ast);
    r.rows = h ? vg__malloc(sizeof(png_bytep) * h) : NULL;
    if (!r.img || (h && !r.rows)) {
        png_destroy_read_struct(&png, &info, NULL);
        vg__free(r.rows);
        if (r.img) vg_tensor_free(r.img);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodePng: out of memory for a %u x %u image", w, h);
    }
    uint8_t *px = vg_tensor_data(r.img);
    for (png_uint_32 y = 0; y < h; y++) r.rows[y] = px + (size_t)y * w * want;
    png_read_image(png, r.rows);
    png_destroy_read_struct(&png, &info, NULL);
    vg__free(r.rows);
    *out = r.img;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* PNG encoding */

typedef struct png_wr {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} png_wr;

static void png_write_cb(png_structp p, png_bytep data, size_t len) {
    png_wr *w = png_get_io_ptr(p);
    if (w->oom) return;
    if (w->len + len > w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 4096;
        while (nc < w->len + len) nc *= 2;
        uint8_t *q = vg__realloc(w->p, w->cap, nc);
        if (!q) {
            w->oom = true;
            return;
        }
        w->p = q, w->cap = nc;
    }
    memcpy(w->p + w->len, data, len);
    w->len += len;
}
static void png_flush_cb(png_structp p) { (void)p; }

vg_code vg__png_encode(const uint8_t *px, int64_t h, int64_t w, int c, int level, uint8_t **out, size_t *len,
                       vg_status *st) {
    *out = NULL, *len = 0;
    if (c < 1 || c > 4) return vg_status_set(st, VG_INVALID_ARGUMENT, "image must have 1, 2, 3, or 4 channels, got %d", c);
    if (h < 0 || w < 0 || h > INT32_MAX || w * c > INT32_MAX)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "image too large to encode: %lld x %lld x %d", (long long)h,
                             (long long)w, c);
    if (level < -1 || level > 9)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "compression should be in [-1,9], got %d", level);
    png_wr wr = {0};
    png_bytep *rows = h ? vg__malloc(sizeof(png_bytep) * (size_t)h) : NULL;
    if (h && !rows) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "EncodePng: out of memory");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_err_cb, png_warn_cb);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        if (png) png_destroy_write_struct(&png, NULL);
        vg__free(rows);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "EncodePng: out of memory");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        vg__free(rows);
        vg__free(wr.p);
        return vg_status_set(st, VG_INTERNAL, "PNG encoding failed");
    }
    static const int k_types[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                  PNG_COLOR_TYPE_RGB_ALPHA};
    png_set_write_fn(png, &wr, png_write_cb, png_flush_cb);
    if (level != -1) png_set_compression_level(png, level);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, k_types[c], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int64_t y = 0; y < h; y++) rows[y] = (png_bytep)(uintptr_t)(px + (size_t)y * (size_t)w * (size_t)c);
    if (h) png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    vg__free(rows);
    if (wr.oom) {
        vg__free(wr.p);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "EncodePng: out of memory");
    }
    *out = wr.p, *len = wr.len;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* JPEG decoding */

typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
} jerr;

static void jerr_exit(j_common_ptr c) { longjmp(((jerr *)c->err)->jb, 1); }
static void jerr_emit(j_common_ptr c, int level) { (void)c, (void)level; }
static void jerr_output(j_common_ptr c) { (void)c; }

/* Sets e up as a codec's error manager: errors longjmp to e->jb, messages are dropped. */
static struct jpeg_error_mgr *jerr_init(jerr *e) {
    struct jpeg_error_mgr *m = jpeg_std_error(&e->pub);
    m->error_exit = jerr_exit;
    m->emit_message = jerr_emit;
    m->output_message = jerr_output;
    return m;
}

typedef struct jsrc {
    struct jpeg_source_mgr pub;
    const uint8_t *d;
    size_t n;
    bool recover, truncated;
    JDIMENSION truncated_at; /* rows complete when the data ran out */
} jsrc;

static const JOCTET k_fake_eoi[2] = {0xFF, JPEG_EOI};
static void jsrc_init(j_decompress_ptr c) { (void)c; }
static boolean jsrc_fill(j_decompress_ptr c) {
    jsrc *s = (jsrc *)c->src;
    if (!s->recover) ERREXIT(c, JERR_INPUT_EMPTY);
    if (!s->truncated) s->truncated = true, s->truncated_at = c->output_scanline;
    s->pub.next_input_byte = k_fake_eoi;
    s->pub.bytes_in_buffer = 2;
    return TRUE;
}
static void jsrc_skip(j_decompress_ptr c, long num) {
    jsrc *s = (jsrc *)c->src;
    if (num <= 0) return;
    if ((size_t)num > s->pub.bytes_in_buffer) {
        s->pub.next_input_byte += s->pub.bytes_in_buffer;
        s->pub.bytes_in_buffer = 0;
        jsrc_fill(c);
        return;
    }
    s->pub.next_input_byte += num;
    s->pub.bytes_in_buffer -= (size_t)num;
}
static void jsrc_term(j_decompress_ptr c) { (void)c; }

typedef struct jdec {
    struct jpeg_decompress_struct cinfo;
    jerr err;
    jsrc src;
    vg_tensor *img;
} jdec;

/* The fewest 8x8 blocks of any component (after jpeg_read_header). */
static uint64_t prog_min_blocks(const struct jpeg_decompress_struct *c) {
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < c->num_components; i++) {
        uint64_t b = (uint64_t)c->comp_info[i].width_in_blocks * c->comp_info[i].height_in_blocks;
        if (b < m) m = b;
    }
    return c->num_components > 0 ? m : 0;
}

vg_code vg__jpeg_decode(const uint8_t *d, size_t n, const vg__jpeg_opts *o, size_t max_bytes, vg_tensor **out,
                        vg_status *st) {
    *out = NULL;
    if (o->channels != 0 && o->channels != 1 && o->channels != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "channels must be 0, 1, or 3, got %d", o->channels);
    if (o->ratio != 1 && o->ratio != 2 && o->ratio != 4 && o->ratio != 8)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ratio must be 1, 2, 4, or 8, got %d", o->ratio);
    J_DCT_METHOD dct = JDCT_IFAST;
    if (o->dct_method && o->dct_method[0]) {
        if (strcmp(o->dct_method, "INTEGER_ACCURATE") == 0) dct = JDCT_ISLOW;
        else if (strcmp(o->dct_method, "INTEGER_FAST") != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "The value of dct_method must be one of INTEGER_FAST, INTEGER_ACCURATE, \"\"; got '%s'",
                                 o->dct_method);
    }
    jdec *j = vg__malloc(sizeof *j); /* jmp_buf and the libjpeg structs: off the stack, so longjmp keeps them */
    if (!j) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodeJpeg: out of memory");
    memset(j, 0, sizeof *j);
    j->cinfo.err = jerr_init(&j->err);
    const char *why = NULL;
    if (setjmp(j->err.jb)) {
        jpeg_destroy_decompress(&j->cinfo);
        if (j->img) vg_tensor_free(j->img);
        vg__free(j);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid JPEG data or crop window, data size %zu", n);
    }
    jpeg_create_decompress(&j->cinfo);
    j->cinfo.mem->max_memory_to_use = (long)(max_bytes > LONG_MAX / 4 ? LONG_MAX / 2 : max_bytes * 2 + (1 << 20));
    j->src.pub.init_source = jsrc_init;
    j->src.pub.fill_input_buffer = jsrc_fill;
    j->src.pub.skip_input_data = jsrc_skip;
    j->src.pub.resync_to_restart = jpeg_resync_to_restart;
    j->src.pub.term_source = jsrc_term;
    j->src.pub.next_input_byte = d;
    j->src.pub.bytes_in_buffer = n;
    j->src.d = d, j->src.n = n, j->src.recover = o->try_recover_truncated;
    j->cinfo.src = &j->src.pub;
    jpeg_read_header(&j->cinfo, TRUE);
    j->cinfo.scale_num = 1;
    j->cinfo.scale_denom = (unsigned)o->ratio;
    j->cinfo.dct_method = dct;
    j->cinfo.do_fancy_upsampling = o->fancy_upscaling;
    int comps = o->channels ? o->channels : (j->cinfo.num_components == 1 ? 1 : 3);
    j->cinfo.out_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_calc_output_dimensions(&j->cinfo);
    uint64_t ow = j->cinfo.output_width, oh = j->cinfo.output_height;
    uint64_t pixels = (uint64_t)j->cinfo.image_width * j->cinfo.image_height;
    if (pixels > (uint64_t)vg__io_max_image_pixels()) {
        /* full size: libjpeg buffers a progressive file's coefficients at full size whatever the ratio */
        jpeg_destroy_decompress(&j->cinfo);
        vg_code c = vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                                  "DecodeJpeg: a %u x %u image (%llu pixels) is over the limit of %lld pixels "
                                  "(max_image_pixels, vg_set_decode_limits)",
                                  j->cinfo.image_width, j->cinfo.image_height, (unsigned long long)pixels,
                                  (long long)vg__io_max_image_pixels());
        vg__free(j);
        return c;
    }
    if (ow * oh * (uint64_t)comps > max_bytes || ow * comps > INT32_MAX) why = "is too large";
    /* a sequential JPEG spends at least 2 bits (DC code + EOB) on each 8x8 block */
    else if (!j->cinfo.progressive_mode && pixels > 2048 * (uint64_t)n + (1u << 20)) why = "cannot be held in the data";
    /* a progressive Huffman JPEG: its DC scans spend at least 1 bit (a Huffman code)
     * on each 8x8 block of every component; 8x slack. A file without them is not a
     * real image, yet libjpeg would buffer all its coefficients (the 282-byte
     * 20000 x 20000 bomb). Arithmetic coding can go below a bit per block: there the
     * pixel limit is the bound. */
    else if (j->cinfo.progressive_mode && !j->cinfo.arith_code && prog_min_blocks(&j->cinfo) > 64 * (uint64_t)n + 16384)
        why = "cannot be held in the data";
    if (why) {
        jpeg_destroy_decompress(&j->cinfo);
        vg_code c = vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid JPEG data or crop window, data size %zu: a %u x %u image %s",
                                  n, j->cinfo.image_width, j->cinfo.image_height, why);
        vg__free(j);
        return c;
    }
    jpeg_start_decompress(&j->cinfo);
    if ((int)j->cinfo.output_components != comps) ERREXIT(&j->cinfo, JERR_BAD_IN_COLORSPACE);
    int64_t dims[3] = {(int64_t)j->cinfo.output_height, (int64_t)j->cinfo.output_width, comps};
    vg_status ast;
    j->img = vg_tensor_new(VG_UINT8, dims, 3, &ast);
    if (!j->img) {
        jpeg_destroy_decompress(&j->cinfo);
        vg__free(j);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodeJpeg: out of memory");
    }
    uint8_t *px = vg_tensor_data(j->img);
    size_t stride = (size_t)dims[1] * (size_t)comps;
    while (j->cinfo.output_scanline < j->cinfo.output_height) {
        JSAMPROW row = px + (size_t)j->cinfo.output_scanline * stride;
        if (jpeg_read_scanlines(&j->cinfo, &row, 1) != 1) break;
    }
    JDIMENSION done = j->cinfo.output_scanline;
    if (j->src.truncated) {
        done = j->src.truncated_at;
        jpeg_abort_decompress(&j->cinfo);
    } else {
        jpeg_finish_decompress(&j->cinfo);
    }
    jpeg_destroy_decompress(&j->cinfo);
    if (done < (JDIMENSION)dims[0]) {
        if (!o->try_recover_truncated || (double)done < o->acceptable_fraction * (double)dims[0]) {
            vg_tensor_free(j->img);
            vg__free(j);
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid JPEG data or crop window, data size %zu", n);
        }
        memset(px + (size_t)done * stride, 0, (size_t)(dims[0] - done) * stride); /* TF zeroes the rest */
    }
    *out = j->img;
    vg__free(j);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* JPEG encoding */

typedef struct jenc {
    struct jpeg_compress_struct cinfo;
    jerr err;
    unsigned char *buf;
    unsigned long len;
} jenc;

typedef struct jpeg_enc_opts {
    const char *format, *density_unit, *xmp;
    int64_t quality, x_density, y_density;
    bool progressive, optimize_size, chroma_downsampling;
} jpeg_enc_opts;

static vg_code jpeg_encode(const uint8_t *px, int64_t h, int64_t w, int c, const jpeg_enc_opts *o, vg_tensor *out,
                           vg_status *st) {
    if (strcmp(o->format, "grayscale") == 0 ? c != 1 : strcmp(o->format, "rgb") == 0 ? c != 3 : (c != 1 && c != 3))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "image must have 1 or 3 channels (format '%s'), got %d", o->format, c);
    if (o->quality < 0 || o->quality > 100)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "quality must be in [0,100], got %lld", (long long)o->quality);
    if (h <= 0 || w <= 0 || h > 65500 || w > 65500)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "image of %lld x %lld cannot be encoded as JPEG", (long long)h,
                             (long long)w);
    int unit = strcmp(o->density_unit, "cm") == 0 ? 2 : 1;
    jenc *j = vg__malloc(sizeof *j);
    if (!j) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "EncodeJpeg: out of memory");
    memset(j, 0, sizeof *j);
    j->cinfo.err = jerr_init(&j->err);
    if (setjmp(j->err.jb)) {
        jpeg_destroy_compress(&j->cinfo);
        free(j->buf); /* from libjpeg's jpeg_mem_dest (malloc) */
        vg__free(j);
        return vg_status_set(st, VG_INTERNAL, "JPEG encoding failed");
    }
    jpeg_create_compress(&j->cinfo);
    jpeg_mem_dest(&j->cinfo, &j->buf, &j->len);
    j->cinfo.image_width = (JDIMENSION)w;
    j->cinfo.image_height = (JDIMENSION)h;
    j->cinfo.input_components = c;
    j->cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&j->cinfo);
    jpeg_set_quality(&j->cinfo, (int)o->quality, TRUE);
    if (o->progressive) jpeg_simple_progression(&j->cinfo);
    j->cinfo.optimize_coding = o->optimize_size;
    j->cinfo.density_unit = (UINT8)unit;
    j->cinfo.X_density = (UINT16)o->x_density;
    j->cinfo.Y_density = (UINT16)o->y_density;
    j->cinfo.write_JFIF_header = TRUE;
    if (!o->chroma_downsampling && c == 3)
        for (int i = 0; i < j->cinfo.num_components; i++)
            j->cinfo.comp_info[i].h_samp_factor = j->cinfo.comp_info[i].v_samp_factor = 1;
    jpeg_start_compress(&j->cinfo, TRUE);
    if (o->xmp && o->xmp[0]) {
        static const char k_xmp_ns[] = "http://ns.adobe.com/xap/1.0/";
        size_t xl = strlen(o->xmp), tot = sizeof k_xmp_ns + xl;
        if (tot < 65000) {
            JOCTET *m = vg__malloc(tot);
            if (m) {
                memcpy(m, k_xmp_ns, sizeof k_xmp_ns);
                memcpy(m + sizeof k_xmp_ns, o->xmp, xl);
                jpeg_write_marker(&j->cinfo, JPEG_APP0 + 1, m, (unsigned)tot);
                vg__free(m);
            }
        }
    }
    while (j->cinfo.next_scanline < j->cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(uintptr_t)(px + (size_t)j->cinfo.next_scanline * (size_t)w * (size_t)c);
        jpeg_write_scanlines(&j->cinfo, &row, 1);
    }
    jpeg_finish_compress(&j->cinfo);
    jpeg_destroy_compress(&j->cinfo);
    vg_code rc = vg_tensor_set_string(out, 0, (const char *)j->buf, j->len, st);
    free(j->buf);
    vg__free(j);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* shape functions and kernels */

static vg_code check_string(vg_op *op, int i, vg_status *st) {
    if (vg__op_input_dtype(op, i) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d must be a string tensor, got %s", vg_op_type(op), i,
                             vg_dtype_name(vg__op_input_dtype(op, i)));
    return VG_OK;
}

static const char *attr_s(const vg_op *op, const char *name, const char *def) {
    const char *v;
    size_t len;
    return vg_op_attr_string(op, name, &v, &len) ? v : def;
}

static vg_code shape_decode(vg_op *op, vg_status *st) {
    if (check_string(op, 0, st)) return st->code;
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: contents must be a scalar, got rank %d", vg_op_type(op), s.ndims);
    int64_t ch = vg__attr_int_or(op, "channels", 0);
    bool jpeg = strcmp(vg_op_type(op), "DecodeJpeg") == 0;
    if (jpeg ? (ch != 0 && ch != 1 && ch != 3) : (ch != 0 && ch != 1 && ch != 3 && ch != 4))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: channels must be 0, 1, 3%s, got %lld", vg_op_type(op),
                             jpeg ? "" : ", or 4", (long long)ch);
    vg_dtype dt;
    if (vg_op_attr_type_(op, "dtype", &dt) && dt != VG_UINT8)
        return vg_status_set(st, VG_UNIMPLEMENTED, "%s: dtype %s is not supported (uint8 only)", vg_op_type(op),
                             vg_dtype_name(dt));
    vg__op_set_default_attr_int(op, "channels", 0);
    if (!jpeg) vg__op_set_default_attr_type(op, "dtype", VG_UINT8);
    int64_t dims[3] = {-1, -1, ch ? ch : -1};
    return vg__op_set_single_output(op, VG_UINT8, vg_shape_make(dims, 3));
}

static vg_code kernel_decode(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    if (vg_tensor_num_elements(in) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "contents must be scalar, got shape with %lld elements",
                             (long long)vg_tensor_num_elements(in));
    size_t n;
    const uint8_t *d = (const uint8_t *)vg_tensor_string(in, 0, &n);
    int ch = (int)vg__attr_int_or(op, "channels", 0);
    vg_tensor *img = NULL;
    vg_code c;
    switch (vg__image_format(d, n)) {
    case VG__IMG_PNG: c = vg__png_decode(d, n, ch, VG__IMAGE_MAX_BYTES, &img, st); break;
    case VG__IMG_JPEG: {
        if (ch == 4) return vg_status_set(st, VG_INVALID_ARGUMENT, "channels must be 0, 1, or 3 for a JPEG, got 4");
        float af = 1.0f;
        vg_op_attr_float(op, "acceptable_fraction", &af);
        vg__jpeg_opts o = {ch,
                           (int)vg__attr_int_or(op, "ratio", 1),
                           vg__attr_bool_or(op, "fancy_upscaling", true),
                           vg__attr_bool_or(op, "try_recover_truncated", false),
                           af,
                           attr_s(op, "dct_method", "")};
        c = vg__jpeg_decode(d, n, &o, VG__IMAGE_MAX_BYTES, &img, st);
        break;
    }
    case VG__IMG_GIF:
    case VG__IMG_BMP:
        return vg_status_set(st, VG_UNIMPLEMENTED, "%s: GIF and BMP images are not supported by vigil (PNG and JPEG are)",
                             vg_op_type(op));
    default:
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
    }
    if (c != VG_OK) return c;
    vg__kctx_set_output(ctx, 0, img);
    return VG_OK;
}

static vg_code check_image3(vg_op *op, vg_status *st) {
    if (vg__op_input_dtype(op, 0) != VG_UINT8)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: image must be uint8, got %s", vg_op_type(op),
                             vg_dtype_name(vg__op_input_dtype(op, 0)));
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims >= 0 && s.ndims != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: image must be 3-dimensional, got rank %d", vg_op_type(op), s.ndims);
    return vg__op_set_single_output(op, VG_STRING, vg_shape_make(NULL, 0));
}

static vg_code shape_encode_png(vg_op *op, vg_status *st) {
    int64_t lvl = vg__attr_int_or(op, "compression", -1);
    if (lvl < -1 || lvl > 9)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "EncodePng: compression should be in [-1,9], got %lld", (long long)lvl);
    vg__op_set_default_attr_int(op, "compression", -1);
    vg__op_set_default_attr_type(op, "T", VG_UINT8);
    return check_image3(op, st);
}

static vg_code check_image_tensor(const vg_tensor *img, vg_status *st) {
    if (vg_tensor_ndims(img) != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "image must be 3-dimensional, got rank %d", vg_tensor_ndims(img));
    return VG_OK;
}

static vg_code kernel_encode_png(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *img = vg__kctx_input(ctx, 0);
    if (check_image_tensor(img, st)) return st->code;
    uint8_t *buf;
    size_t len;
    vg_code c =
        vg__png_encode(vg_tensor_data(img), vg_tensor_dim(img, 0), vg_tensor_dim(img, 1), (int)vg_tensor_dim(img, 2),
                       (int)vg__attr_int_or(vg__kctx_op(ctx), "compression", -1), &buf, &len, st);
    if (c != VG_OK) return c;
    vg_tensor *out;
    if ((c = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out)) == VG_OK)
        c = vg_tensor_set_string(out, 0, len ? (const char *)buf : "", len, st);
    vg__free(buf);
    return c;
}

static vg_code shape_encode_jpeg(vg_op *op, vg_status *st) {
    const char *f = attr_s(op, "format", "");
    if (strcmp(f, "") && strcmp(f, "grayscale") && strcmp(f, "rgb"))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "EncodeJpeg: format must be '', 'grayscale' or 'rgb', got '%s'", f);
    const char *u = attr_s(op, "density_unit", "in");
    if (strcmp(u, "in") && strcmp(u, "cm"))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "EncodeJpeg: density_unit must be 'in' or 'cm', got '%s'", u);
    return check_image3(op, st);
}

static vg_code kernel_encode_jpeg(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *img = vg__kctx_input(ctx, 0);
    if (check_image_tensor(img, st)) return st->code;
    jpeg_enc_opts o = {attr_s(op, "format", ""),
                       attr_s(op, "density_unit", "in"),
                       attr_s(op, "xmp_metadata", ""),
                       vg__attr_int_or(op, "quality", 95),
                       vg__attr_int_or(op, "x_density", 300),
                       vg__attr_int_or(op, "y_density", 300),
                       vg__attr_bool_or(op, "progressive", false),
                       vg__attr_bool_or(op, "optimize_size", false),
                       vg__attr_bool_or(op, "chroma_downsampling", true)};
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out);
    if (c != VG_OK) return c;
    return jpeg_encode(vg_tensor_data(img), vg_tensor_dim(img, 0), vg_tensor_dim(img, 1), (int)vg_tensor_dim(img, 2), &o,
                       out, st);
}

/* DecodeCompressed: each string inflated (zlib or gzip framing) or passed through. */
static vg_code shape_decode_compressed(vg_op *op, vg_status *st) {
    if (check_string(op, 0, st)) return st->code;
    const char *t = attr_s(op, "compression_type", "");
    if (strcmp(t, "") && strcmp(t, "ZLIB") && strcmp(t, "GZIP"))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Only ZLIB, GZIP or NONE are supported compressions, got '%s'", t);
    return vg__op_set_single_output(op, VG_STRING, vg__op_input_shape(op, 0));
}

static vg_code inflate_one(const uint8_t *d, size_t n, bool gzip, vg_tensor *out, int64_t i, vg_status *st) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK)
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodeCompressed: inflateInit failed");
    size_t cap = n * 4 + 256, len = 0;
    uint8_t *buf = vg__malloc(cap);
    vg_code rc = VG_OK;
    if (!buf) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodeCompressed: out of memory");
    z.next_in = (Bytef *)(uintptr_t)d;
    z.avail_in = (uInt)n;
    while (rc == VG_OK) {
        if (len == cap) {
            if (cap > (size_t)INT32_MAX) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "DecodeCompressed: element %lld inflates past 2 GiB", (long long)i);
                break;
            }
            uint8_t *q = vg__realloc(buf, cap, cap * 2);
            if (!q) {
                rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodeCompressed: out of memory");
                break;
            }
            buf = q, cap *= 2;
        }
        z.next_out = buf + len;
        z.avail_out = (uInt)(cap - len > UINT32_MAX ? UINT32_MAX : cap - len);
        uInt before = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        len += before - z.avail_out;
        if (zr == Z_STREAM_END) break;
        if (zr != Z_OK && !(zr == Z_BUF_ERROR && z.avail_out == 0)) {
            rc = vg_status_set(st, VG_DATA_LOSS, "DecodeCompressed: element %lld is not valid %s data (%s)", (long long)i,
                               gzip ? "GZIP" : "ZLIB", z.msg ? z.msg : "truncated");
            break;
        }
    }
    inflateEnd(&z);
    if (rc == VG_OK) rc = vg_tensor_set_string(out, i, len ? (const char *)buf : "", len, st);
    vg__free(buf);
    return rc;
}

static vg_code kernel_decode_compressed(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    const char *t = attr_s(vg__kctx_op(ctx), "compression_type", "");
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_STRING, vg_tensor_dims(in), vg_tensor_ndims(in), &out);
    int64_t n = vg_tensor_num_elements(in);
    for (int64_t i = 0; c == VG_OK && i < n; i++) {
        size_t len;
        const char *s = vg_tensor_string(in, i, &len);
        if (!t[0]) c = vg_tensor_set_string(out, i, s, len, st);
        else c = inflate_one((const uint8_t *)s, len, strcmp(t, "GZIP") == 0, out, i, st);
    }
    return c;
}

/* ------------------------------------------------------------------------ */
/* ImageSummary */

static vg_code shape_image_summary(vg_op *op, vg_status *st) {
    if (check_string(op, 0, st)) return st->code;
    vg_dtype dt = vg__op_input_dtype(op, 1);
    if (dt != VG_UINT8 && dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input 'tensor' of 'ImageSummary' Op has type %s, expected one of uint8, float, double.",
                             vg_dtype_name(dt));
    vg_shape s = vg__op_input_shape(op, 1);
    if (s.ndims >= 0 && (s.ndims != 4 || (s.dims[3] >= 0 && s.dims[3] != 1 && s.dims[3] != 3 && s.dims[3] != 4))) {
        char b[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Tensor must be 4-D with last dim 1, 3, or 4, not %s",
                             vg_shape_str(&s, b, sizeof b));
    }
    int64_t m = vg__attr_int_or(op, "max_images", 3);
    if (m < 1 || m >= (1LL << 31))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ImageSummary: max_images must be in [1, 2^31), got %lld", (long long)m);
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_int(op, "max_images", 3);
    return vg__op_set_single_output(op, VG_STRING, vg_shape_make(NULL, 0));
}

/* TF's NormalizeFloatImage: finite pixels scaled into [0, 255] (all >= 0: by 255/max;
 * else by 127/max|v| around 128), pixels with a non-finite channel get bad_color. */
static void normalize_image(const vg_tensor *t, int64_t base, int64_t hw, int depth, const uint8_t *bad, uint8_t *img) {
    bool f32 = vg_tensor_dtype(t) == VG_FLOAT;
    const float *fd = vg_tensor_data(t);
    const double *dd = vg_tensor_data(t);
#define V(k) (f32 ? (double)fd[base + (k)] : dd[base + (k)])
    float mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < hw; i++) {
        bool fin = true;
        for (int j = 0; j < depth; j++) fin = fin && isfinite(V(i * depth + j));
        if (!fin) continue;
        for (int j = 0; j < depth; j++) {
            float v = (float)V(i * depth + j);
            mn = v < mn ? v : mn, mx = v > mx ? v : mx;
        }
    }
    double scale, offset;
    if (mn < 0) {
        float m = fabsf(mn) > fabsf(mx) ? fabsf(mn) : fabsf(mx);
        scale = m < 1e-6f ? 0.0 : (f32 ? (double)(127.0f / m) : 127.0 / m), offset = 128;
    } else {
        scale = mx < 1e-6f ? 0.0 : (f32 ? (double)(255.0f / mx) : 255.0 / mx), offset = 0;
    }
    for (int64_t i = 0; i < hw; i++) {
        bool fin = true;
        for (int j = 0; j < depth; j++) fin = fin && isfinite(V(i * depth + j));
        for (int j = 0; j < depth; j++) {
            if (!fin) {
                img[i * depth + j] = bad[j];
                continue;
            }
            double v = f32 ? (double)((float)V(i * depth + j) * (float)scale + (float)offset) : V(i * depth + j) * scale + offset;
            img[i * depth + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
#undef V
}

static vg_code kernel_image_summary(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *tags = vg__kctx_input(ctx, 0), *t = vg__kctx_input(ctx, 1);
    if (vg_tensor_num_elements(tags) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "Tags must be a scalar");
    int nd = vg_tensor_ndims(t);
    if (nd != 4 || (vg_tensor_dim(t, 3) != 1 && vg_tensor_dim(t, 3) != 3 && vg_tensor_dim(t, 3) != 4)) {
        vg_shape s = vg_tensor_shape(t);
        char b[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Tensor must be 4-D with last dim 1, 3, or 4, not %s",
                             vg_shape_str(&s, b, sizeof b));
    }
    int64_t bs = vg_tensor_dim(t, 0), h = vg_tensor_dim(t, 1), w = vg_tensor_dim(t, 2);
    int depth = (int)vg_tensor_dim(t, 3);
    if (bs >= (1LL << 31) || h >= (1LL << 31) || w >= (1LL << 31) || h * w >= (1LL << 29)) {
        vg_shape s = vg_tensor_shape(t);
        char b[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Tensor too large for summary %s", vg_shape_str(&s, b, sizeof b));
    }
    int64_t max_images = vg__attr_int_or(op, "max_images", 3);
    uint8_t bad[4] = {255, 0, 0, 255};
    const vg_tensor *bc;
    if (vg_op_attr_tensor(op, "bad_color", &bc)) {
        if (vg_tensor_dtype(bc) != VG_UINT8 || vg_tensor_ndims(bc) != 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "bad_color must be a uint8 vector");
        if (vg_tensor_dim(bc, 0) < depth)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "expected depth <= bad_color.size, got depth = %d, bad_color.size = %lld",
                                 depth, (long long)vg_tensor_dim(bc, 0));
        memcpy(bad, vg_tensor_data(bc), (size_t)depth);
    }
    size_t tl;
    const char *tag = vg_tensor_string(tags, 0, &tl);
    int64_t hw = h * w, nimg = bs < max_images ? bs : max_images;
    uint8_t *tmp = NULL;
    if (vg_tensor_dtype(t) != VG_UINT8 && hw * depth > 0 && !(tmp = vg__malloc((size_t)(hw * depth))))
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "ImageSummary: out of memory");
    vg__pb_buf b, img, val;
    vg__pb_init(&b), vg__pb_init(&img), vg__pb_init(&val);
    vg_code c = VG_OK;
    for (int64_t i = 0; i < nimg && c == VG_OK; i++) {
        const uint8_t *px;
        if (vg_tensor_dtype(t) == VG_UINT8) px = (const uint8_t *)vg_tensor_data(t) + i * hw * depth;
        else {
            if (tmp) normalize_image(t, i * hw * depth, hw, depth, bad, tmp);
            px = tmp;
        }
        uint8_t *png;
        size_t plen;
        if ((c = vg__png_encode(px ? px : (const uint8_t *)"", h, w, depth, -1, &png, &plen, st)) != VG_OK) break;
        char full[1100];
        if (max_images > 1) snprintf(full, sizeof full, "%.*s/image/%lld", (int)(tl > 1024 ? 1024 : tl), tag, (long long)i);
        else snprintf(full, sizeof full, "%.*s/image", (int)(tl > 1024 ? 1024 : tl), tag);
        vg__pb_reset(&img), vg__pb_reset(&val);
        if (h) vg__pb_put_int32(&img, 1, (int32_t)h);
        if (w) vg__pb_put_int32(&img, 2, (int32_t)w);
        vg__pb_put_int32(&img, 3, depth);
        vg__pb_put_bytes(&img, 4, png, plen);
        vg__free(png);
        vg__pb_put_string(&val, 1, full);
        vg__pb_put_message(&val, 4, &img); /* Summary.Value.image = 4 */
        vg__pb_put_message(&b, 1, &val);   /* Summary.value = 1 */
    }
    vg__free(tmp);
    if (c == VG_OK && !vg__pb_buf_status(&b, "summary", st) && !vg__pb_buf_status(&img, "summary", st) &&
        !vg__pb_buf_status(&val, "summary", st)) {
        vg_tensor *out;
        if ((c = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out)) == VG_OK)
            c = vg_tensor_set_string(out, 0, b.len ? (const char *)b.data : "", b.len, st);
    } else if (c == VG_OK) {
        c = st->code;
    }
    vg__pb_free(&b), vg__pb_free(&img), vg__pb_free(&val);
    return c;
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_op_builder *b1(vg_graph *g, const char *type, vg_output x, const char *name) {
    if (!g) return NULL;
    if (!x.op) return NULL; /* an earlier builder failed; its error is recorded */
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : type);
    if (b) vg_op_builder_add_input(b, x);
    return b;
}
static vg_output fin(vg_op_builder *b) { return b ? vg_out(vg_op_builder_finish(b), 0) : vg_out(NULL, 0); }

vg_output vg_decode_png(vg_graph *g, vg_output contents, int channels, const char *name) {
    vg_op_builder *b = b1(g, "DecodePng", contents, name);
    if (b) vg_op_builder_set_attr_int(b, "channels", channels);
    return fin(b);
}

vg_output vg_decode_image(vg_graph *g, vg_output contents, int channels, const char *name) {
    vg_op_builder *b = b1(g, "DecodeImage", contents, name);
    if (b) vg_op_builder_set_attr_int(b, "channels", channels);
    return fin(b);
}

vg_output vg_decode_jpeg(vg_graph *g, vg_output contents, const vg_decode_jpeg_options *opts, const char *name) {
    vg_decode_jpeg_options o = {0};
    if (opts) o = *opts;
    /* TF's defaults for the zero fields */
    if (o.ratio == 0) o.ratio = 1;
    if (o.zero_acceptable_fraction) o.acceptable_fraction = 0.0f;
    else if (o.acceptable_fraction == 0.0f) o.acceptable_fraction = 1.0f;
    vg_op_builder *b = b1(g, "DecodeJpeg", contents, name);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_int(b, "channels", o.channels);
    vg_op_builder_set_attr_int(b, "ratio", o.ratio);
    vg_op_builder_set_attr_bool(b, "fancy_upscaling", !o.no_fancy_upscaling);
    vg_op_builder_set_attr_bool(b, "try_recover_truncated", o.try_recover_truncated);
    vg_op_builder_set_attr_float(b, "acceptable_fraction", o.acceptable_fraction);
    const char *dm = o.dct_method ? o.dct_method : "";
    vg_op_builder_set_attr_string(b, "dct_method", dm, strlen(dm));
    return fin(b);
}

vg_output vg_encode_png(vg_graph *g, vg_output image, int compression, const char *name) {
    vg_op_builder *b = b1(g, "EncodePng", image, name);
    if (b) vg_op_builder_set_attr_int(b, "compression", compression);
    return fin(b);
}

vg_output vg_encode_jpeg(vg_graph *g, vg_output image, const char *format, int quality, const char *name) {
    vg_op_builder *b = b1(g, "EncodeJpeg", image, name);
    if (!b) return vg_out(NULL, 0);
    const char *f = format ? format : "";
    vg_op_builder_set_attr_string(b, "format", f, strlen(f));
    vg_op_builder_set_attr_int(b, "quality", quality);
    return fin(b);
}

vg_output vg_decode_compressed(vg_graph *g, vg_output bytes, const char *compression_type, const char *name) {
    vg_op_builder *b = b1(g, "DecodeCompressed", bytes, name);
    if (!b) return vg_out(NULL, 0);
    const char *t = compression_type ? compression_type : "";
    vg_op_builder_set_attr_string(b, "compression_type", t, strlen(t));
    return fin(b);
}

const vg__op_def vg__ops_image_codec[] = {
    {"DecodePng", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_decode, kernel_decode, NULL},
    {"DecodeJpeg", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_decode, kernel_decode, NULL},
    {"DecodeImage", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_decode, kernel_decode, NULL},
    {"EncodePng", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_encode_png, kernel_encode_png, NULL},
    {"EncodeJpeg", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_encode_jpeg, kernel_encode_jpeg, NULL},
    {"DecodeCompressed", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_decode_compressed, kernel_decode_compressed, NULL},
    {"ImageSummary", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_image_summary, kernel_image_summary, NULL},
    {0},
};
