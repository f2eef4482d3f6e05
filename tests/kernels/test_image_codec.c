/* test_image_codec.c - DecodePng / EncodePng / DecodeJpeg / EncodeJpeg / DecodeImage /
 * DecodeCompressed / ImageSummary (src/kernels/media/image_codec_ops.c) and
 * vg_summary_image: round trips through libpng and libjpeg, channel conversions as TF
 * (gray -> RGB replicates, RGB -> RGBA adds opaque alpha), JPEG ratio and truncation
 * recovery, TF's error messages for data that does not decode, no allocation for a
 * header that claims more pixels than the data can hold, and the Summary.Image proto
 * (tags "<name>/image/<i>", height, width, colorspace, the PNG of TF's float
 * normalisation) read back by hand. */
#include "op_test_util.h"
#include "kernels_fixture.h"
#include <string.h>

static vg_output str_const(vg_graph *g, const void *p, size_t n) {
    vg_tensor *t = vg_tensor_new(VG_STRING, NULL, 0, NULL);
    vg_tensor_set_string(t, 0, p, n, NULL);
    vg_output o = vg_const(g, t, NULL);
    vg_tensor_free(t);
    return o;
}

/* An h x w x c uint8 image with a smooth pattern. */
static vg_tensor *pattern(int64_t h, int64_t w, int64_t c) {
    int64_t d[3] = {h, w, c};
    vg_tensor *t = vg_tensor_new(VG_UINT8, d, 3, NULL);
    uint8_t *p = vg_tensor_data(t);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            for (int64_t k = 0; k < c; k++) p[(y * w + x) * c + k] = (uint8_t)((y * 16 + x * 8 + k * 40) & 0xff);
    return t;
}

/* Encodes img as PNG (or JPEG) by running the op; returns the bytes (caller frees). */
static vg_tensor *encode(vg_tensor *img, bool jpeg, int quality) {
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const(g, img, NULL);
    vg_output e = jpeg ? vg_encode_jpeg(g, c, "", quality, NULL) : vg_encode_png(g, c, -1, NULL);
    vg_tensor *out = run(g, e);
    vg_graph_free(g);
    return out;
}

static vg_tensor *decode_bytes(const void *p, size_t n, int channels, int which, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output s = str_const(g, p, n);
    vg_decode_jpeg_options o = {.channels = channels};
    vg_output d = which == 0   ? vg_decode_png(g, s, channels, NULL)
                  : which == 1 ? vg_decode_image(g, s, channels, NULL)
                               : vg_decode_jpeg(g, s, &o, NULL);
    vg_tensor *out = run_st(g, d, st);
    vg_graph_free(g);
    return out;
}

static void test_png_round_trip(void) {
    for (int c = 1; c <= 4; c++) {
        vg_tensor *img = pattern(7, 5, c);
        vg_tensor *png = encode(img, false, 0);
        CHECK(png != NULL);
        if (!png) continue;
        size_t n;
        const char *b = vg_tensor_string(png, 0, &n);
        CHECK(n > 8 && memcmp(b, "\211PNG\r\n\032\n", 8) == 0);
        vg_status st;
        vg_tensor *back = decode_bytes(b, n, 0, 0, &st);
        CHECK(back != NULL);
        if (back) {
            CHECK_EQ_INT(vg_tensor_dim(back, 0), 7);
            CHECK_EQ_INT(vg_tensor_dim(back, 1), 5);
            CHECK_EQ_INT(vg_tensor_dim(back, 2), c);
            CHECK(memcmp(vg_tensor_data(back), vg_tensor_data(img), (size_t)(7 * 5 * c)) == 0);
        }
        vg_tensor_free(back);
        if (c == 1) { /* gray -> RGB replicates; gray -> RGBA adds alpha 255 */
            vg_tensor *rgb = decode_bytes(b, n, 3, 1, &st), *rgba = decode_bytes(b, n, 4, 0, &st);
            CHECK(rgb && rgba);
            if (rgb && rgba) {
                const uint8_t *s = vg_tensor_data(img), *p3 = vg_tensor_data(rgb), *p4 = vg_tensor_data(rgba);
                for (int i = 0; i < 35; i++) {
                    CHECK(p3[3 * i] == s[i] && p3[3 * i + 1] == s[i] && p3[3 * i + 2] == s[i]);
                    CHECK(p4[4 * i] == s[i] && p4[4 * i + 3] == 255);
                }
            }
            vg_tensor_free(rgb), vg_tensor_free(rgba);
        }
        if (c == 4) { /* RGBA -> RGB drops alpha */
            vg_tensor *rgb = decode_bytes(b, n, 3, 0, &st);
            CHECK(rgb != NULL);
            if (rgb) {
                const uint8_t *s = vg_tensor_data(img), *p3 = vg_tensor_data(rgb);
                for (int i = 0; i < 35; i++) CHECK(p3[3 * i] == s[4 * i] && p3[3 * i + 2] == s[4 * i + 2]);
            }
            vg_tensor_free(rgb);
        }
        vg_tensor_free(png), vg_tensor_free(img);
    }
}

static void test_png_bad_input(void) {
    vg_status st;
    vg_tensor *img = pattern(16, 16, 3), *png = encode(img, false, 0);
    size_t n;
    const char *b = vg_tensor_string(png, 0, &n);
    /* truncated: INVALID_ARGUMENT naming the size */
    CHECK(decode_bytes(b, n / 2, 0, 0, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "Invalid PNG data, size %zu", n / 2);
    CHECK_STR_CONTAINS(st.msg, want);
    /* corrupt IDAT */
    char *bad = malloc(n);
    memcpy(bad, b, n);
    for (size_t i = 40; i < n - 20; i++) bad[i] ^= 0x5a;
    CHECK(decode_bytes(bad, n, 0, 0, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Invalid PNG data");
    free(bad);
    /* a header claiming 60000 x 60000 RGBA in a few bytes: refused before allocating */
    uint8_t hdr[33];
    memcpy(hdr, b, 33);
    hdr[16] = 0, hdr[17] = 0, hdr[18] = 0xea, hdr[19] = 0x60; /* width 60000 */
    hdr[20] = 0, hdr[21] = 0, hdr[22] = 0xea, hdr[23] = 0x60; /* height */
    CHECK(decode_bytes(hdr, sizeof hdr, 0, 0, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Invalid PNG data");
    /* not an image at all; GIF is recognised but not supported */
    CHECK(decode_bytes("hello world", 11, 0, 0, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
    CHECK(decode_bytes("GIF89a....", 10, 0, 0, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_UNIMPLEMENTED);
    CHECK(decode_bytes("", 0, 0, 0, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    /* graph-time checks: channels, rank */
    vg_graph *g = vg_graph_new();
    vg_decode_png(g, str_const(g, b, n), 2, NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "channels must be 0, 1, 3, or 4");
    vg_graph_free(g);
    g = vg_graph_new();
    int64_t d2[2] = {2, 2};
    vg_encode_png(g, cst(g, VG_UINT8, d2, 2, NULL), -1, NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "image must be 3-dimensional");
    vg_graph_free(g);
    vg_tensor_free(png), vg_tensor_free(img);
}

static void test_jpeg(void) {
    vg_status st;
    /* a smooth RGB image survives quality 100 within a few levels */
    vg_tensor *img = pattern(32, 24, 3);
    uint8_t *ip = vg_tensor_data(img);
    for (int y = 0; y < 32; y++) /* smooth: a gentle ramp per channel */
        for (int x = 0; x < 24; x++)
            for (int k = 0; k < 3; k++) ip[(y * 24 + x) * 3 + k] = (uint8_t)(40 + y * 3 + x * 2 + k * 30);
    vg_tensor *jpg = encode(img, true, 100);
    CHECK(jpg != NULL);
    size_t n;
    const char *b = vg_tensor_string(jpg, 0, &n);
    CHECK(n > 3 && (uint8_t)b[0] == 0xff && (uint8_t)b[1] == 0xd8);
    vg_tensor *back = decode_bytes(b, n, 0, 2, &st);
    CHECK(back != NULL);
    if (back) {
        CHECK_EQ_INT(vg_tensor_dim(back, 0), 32);
        CHECK_EQ_INT(vg_tensor_dim(back, 1), 24);
        CHECK_EQ_INT(vg_tensor_dim(back, 2), 3);
        const uint8_t *p = vg_tensor_data(back), *q = vg_tensor_data(img);
        double err = 0;
        for (int i = 0; i < 32 * 24 * 3; i++) err += fabs((double)p[i] - q[i]);
        CHECK(err / (32 * 24 * 3) < 3.0);
    }
    vg_tensor_free(back);
    /* grayscale output, and DecodePng of a JPEG decodes it (TF 1.x's shared kernel) */
    back = decode_bytes(b, n, 1, 0, &st);
    CHECK(back && vg_tensor_dim(back, 2) == 1);
    vg_tensor_free(back);
    /* ratio 2 halves each side */
    vg_graph *g = vg_graph_new();
    vg_decode_jpeg_options o = {.ratio = 2};
    vg_tensor *half = run(g, vg_decode_jpeg(g, str_const(g, b, n), &o, NULL));
    CHECK(half && vg_tensor_dim(half, 0) == 16 && vg_tensor_dim(half, 1) == 12);
    vg_tensor_free(half);
    vg_graph_free(g);
    /* truncated: INVALID_ARGUMENT as TF; with try_recover_truncated and fraction 0 the
     * rows that were read come back, the rest zero */
    size_t cut = n - 60; /* inside the scan data (the tables take the first ~600 bytes) */
    CHECK(decode_bytes(b, cut, 0, 2, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    char want[80];
    snprintf(want, sizeof want, "Invalid JPEG data or crop window, data size %zu", cut);
    CHECK_STR_CONTAINS(st.msg, want);
    g = vg_graph_new();
    o = (vg_decode_jpeg_options){.try_recover_truncated = true, .zero_acceptable_fraction = true};
    vg_tensor *rec = run(g, vg_decode_jpeg(g, str_const(g, b, cut), &o, NULL));
    CHECK(rec && vg_tensor_dim(rec, 0) == 32);
    vg_tensor_free(rec);
    vg_graph_free(g);
    /* garbage after the SOI marker */
    char junk[64] = {(char)0xff, (char)0xd8, (char)0xff};
    for (int i = 3; i < 64; i++) junk[i] = (char)(i * 37);
    CHECK(decode_bytes(junk, sizeof junk, 0, 2, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    /* EncodeJpeg: 4 channels refused */
    vg_tensor *rgba = pattern(4, 4, 4);
    g = vg_graph_new();
    expect_run_error(g, vg_encode_jpeg(g, vg_const(g, rgba, NULL), "", 95, NULL), NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "image must have 1 or 3 channels");
    vg_graph_free(g);
    vg_tensor_free(rgba), vg_tensor_free(jpg), vg_tensor_free(img);
}

static uint32_t adler32(const uint8_t *p, size_t n) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) a = (a + p[i]) % 65521, b = (b + a) % 65521;
    return (b << 16) | a;
}

static void test_decode_compressed(void) {
    /* a zlib stream with one stored block, built by hand (RFC 1950/1951) */
    const char *msg = "vigil decode_compressed";
    size_t ml = strlen(msg);
    uint8_t z[64];
    size_t k = 0;
    z[k++] = 0x78, z[k++] = 0x01, z[k++] = 0x01;
    z[k++] = (uint8_t)ml, z[k++] = 0, z[k++] = (uint8_t)~ml, z[k++] = 0xff;
    memcpy(z + k, msg, ml), k += ml;
    uint32_t ad = adler32((const uint8_t *)msg, ml);
    z[k++] = (uint8_t)(ad >> 24), z[k++] = (uint8_t)(ad >> 16), z[k++] = (uint8_t)(ad >> 8), z[k++] = (uint8_t)ad;
    vg_graph *g = vg_graph_new();
    vg_tensor *t = run(g, vg_decode_compressed(g, str_const(g, z, k), "ZLIB", NULL));
    size_t n = 0;
    const char *s = t ? vg_tensor_string(t, 0, &n) : "";
    CHECK(n == ml && memcmp(s, msg, ml) == 0);
    vg_tensor_free(t);
    t = run(g, vg_decode_compressed(g, str_const(g, "raw", 3), "", NULL));
    s = t ? vg_tensor_string(t, 0, &n) : "";
    CHECK(n == 3 && memcmp(s, "raw", 3) == 0);
    vg_tensor_free(t);
    z[5] ^= 0xff; /* LEN/NLEN mismatch */
    expect_run_error(g, vg_decode_compressed(g, str_const(g, z, k), "ZLIB", NULL), NULL, NULL, 0, VG_DATA_LOSS,
                     "DecodeCompressed");
    vg_decode_compressed(g, str_const(g, z, k), "LZ4", NULL);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* Reads Summary.value[i]: tag, and image fields. Returns false when absent. */
typedef struct img_val {
    char tag[128];
    int64_t h, w, cs;
    const uint8_t *png;
    size_t png_len;
} img_val;

static bool rd_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int s = 0; *p < end && s < 64; s += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return false;
}

static int parse_summary(const uint8_t *p, size_t n, img_val *out, int max) {
    const uint8_t *end = p + n;
    int cnt = 0;
    while (p < end && cnt < max) {
        uint64_t key, len;
        if (!rd_varint(&p, end, &key) || (key & 7) != 2 || !rd_varint(&p, end, &len)) return -1;
        const uint8_t *ve = p + len;
        img_val *iv = &out[cnt++];
        memset(iv, 0, sizeof *iv);
        while (p < ve) {
            uint64_t k2, l2;
            rd_varint(&p, ve, &k2);
            rd_varint(&p, ve, &l2);
            if ((k2 >> 3) == 1) snprintf(iv->tag, sizeof iv->tag, "%.*s", (int)l2, (const char *)p);
            if ((k2 >> 3) == 4) {
                const uint8_t *q = p, *qe = p + l2;
                while (q < qe) {
                    uint64_t k3, v3;
                    rd_varint(&q, qe, &k3);
                    rd_varint(&q, qe, &v3);
                    if ((k3 & 7) == 2) {
                        iv->png = q, iv->png_len = v3;
                        q += v3;
                    } else if ((k3 >> 3) == 1) iv->h = (int64_t)v3;
                    else if ((k3 >> 3) == 2) iv->w = (int64_t)v3;
                    else if ((k3 >> 3) == 3) iv->cs = (int64_t)v3;
                }
            }
            p += l2;
        }
    }
    return cnt;
}

static void test_image_summary(void) {
    vg_graph *g = vg_graph_new();
    /* 2 float images 2x2x1: one all >= 0 (scaled by 255/max), one with negatives
     * (127/max|v| around 128), one with a NaN pixel (bad_color red -> first channel 255) */
    int64_t d[4] = {3, 2, 2, 1};
    double v[12] = {0, 1, 2, 4, -2, 0, 1, 2, 1, NAN, 0.5, 0};
    vg_output s = vg_summary_image(g, "imgs", cst(g, VG_FLOAT, d, 4, v), 3);
    vg_output one = vg_summary_image(g, "one", cst(g, VG_FLOAT, d, 4, v), 1);
    int n;
    vg_graph_collection(g, VG_SUMMARIES, &n);
    CHECK_EQ_INT(n, 2);
    CHECK(s.op && strcmp(vg_op_name(s.op), "imgs") == 0 && strcmp(vg_op_type(s.op), "ImageSummary") == 0);
    vg_tensor *t = run(g, s);
    size_t len = 0;
    const uint8_t *b = t ? (const uint8_t *)vg_tensor_string(t, 0, &len) : NULL;
    img_val iv[4];
    CHECK_EQ_INT(b ? parse_summary(b, len, iv, 4) : -1, 3);
    double want[3][4] = {{0, 63, 127, 255}, {1, 128, 191, 255}, {255, 255, 255, 0}};
    for (int i = 0; i < 3 && b; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "imgs/image/%d", i);
        CHECK(strcmp(iv[i].tag, tag) == 0);
        CHECK_EQ_INT(iv[i].h, 2);
        CHECK_EQ_INT(iv[i].w, 2);
        CHECK_EQ_INT(iv[i].cs, 1);
        vg_status st;
        vg_tensor *px = decode_bytes(iv[i].png, iv[i].png_len, 0, 0, &st);
        CHECK(px != NULL);
        if (px && i < 2) for (int k = 0; k < 4; k++) CHECK_NEAR(get(px, k), want[i][k], 1.01);
        if (px && i == 2) CHECK_NEAR(get(px, 1), 255, 0); /* the NaN pixel, bad_color[0] */
        if (px && i == 2) CHECK_NEAR(get(px, 0), 255, 0); /* 1 / max 1 -> 255 */
        vg_tensor_free(px);
    }
    vg_tensor_free(t);
    t = run(g, one);
    b = t ? (const uint8_t *)vg_tensor_string(t, 0, &len) : NULL;
    CHECK_EQ_INT(b ? parse_summary(b, len, iv, 4) : -1, 1);
    if (b) CHECK(strcmp(iv[0].tag, "one/image") == 0);
    vg_tensor_free(t);
    /* bad rank and channel count */
    int64_t d3[3] = {2, 2, 2};
    vg_summary_image(g, "bad", cst(g, VG_FLOAT, d3, 3, NULL), 3);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Tensor must be 4-D with last dim 1, 3, or 4");
    vg_graph_free(g);
    /* uint8 images are written unchanged */
    g = vg_graph_new();
    vg_tensor *img = pattern(3, 4, 3);
    vg_output u8 = vg_reshape_c(g, vg_const(g, img, NULL), (const int64_t[]){1, 3, 4, 3}, 4, NULL);
    t = run(g, vg_summary_image(g, "u8", u8, 3));
    b = t ? (const uint8_t *)vg_tensor_string(t, 0, &len) : NULL;
    CHECK_EQ_INT(b ? parse_summary(b, len, iv, 4) : -1, 1);
    if (b) {
        vg_tensor *px = decode_bytes(iv[0].png, iv[0].png_len, 0, 0, &st);
        CHECK(px && memcmp(vg_tensor_data(px), vg_tensor_data(img), 36) == 0);
        vg_tensor_free(px);
    }
    vg_tensor_free(t), vg_tensor_free(img);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_png_round_trip);
    RUN_TEST(test_png_bad_input);
    RUN_TEST(test_jpeg);
    RUN_TEST(test_decode_compressed);
    RUN_TEST(test_image_summary);
    TEST_MAIN_END();
}
