/* test_cli_convert.c - `vigil convert`: small IDX files written here are converted to a
 * TFRecord of tf.train.Examples (plain and GZIP) and to fixed-length records; the
 * outputs are read back with the TFRecord reader and the Example decoder (and the
 * fixed records byte by byte); bad inputs give exit 1 or 2 with a message. Skips
 * (passes) when the vigil binary was not built. */
#include "io/example_io.h"
#include "io_fixture.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include <sys/stat.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif

#include "cli_test_util.h"

#define N 5
#define ROWS 3
#define COLS 2

static void write_idx(const char *path, int ndims, const uint32_t *dims, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    uint8_t hdr[4] = {0, 0, 0x08, (uint8_t)ndims};
    fwrite(hdr, 1, 4, f);
    for (int i = 0; i < ndims; i++) {
        uint8_t be[4] = {(uint8_t)(dims[i] >> 24), (uint8_t)(dims[i] >> 16), (uint8_t)(dims[i] >> 8), (uint8_t)dims[i]};
        fwrite(be, 1, 4, f);
    }
    fwrite(data, 1, n, f);
    fclose(f);
}

static uint8_t g_pix[N * ROWS * COLS], g_lab[N];
static char g_img[300], g_lbl[300];

static int64_t feature_int(const vg__features *fs, const char *key) {
    const vg__feature *f = vg__features_find(fs, key, strlen(key));
    int64_t v = -1, got;
    vg_status st;
    if (f) vg__feature_int64s(f, &v, 1, &got, &st);
    return v;
}

static void check_tfrecord(const char *path, int compression, int64_t want_n) {
    vg_status st;
    vg__zrecord_reader *r = io_fx_opened(vg__zrecord_reader_open(path, compression, &st), path, &st);
    if (!r) return;
    const uint8_t *d;
    size_t len;
    uint64_t off;
    int64_t n = 0;
    vg__features fs = {0};
    while (vg__zrecord_reader_next(r, &d, &len, &off, &st) == VG_OK) {
        CHECK_OK(vg__example_decode(d, len, &fs, &st), &st);
        CHECK_EQ_INT(feature_int(&fs, "label"), g_lab[n]);
        CHECK_EQ_INT(feature_int(&fs, "height"), ROWS);
        CHECK_EQ_INT(feature_int(&fs, "width"), COLS);
        CHECK_EQ_INT(feature_int(&fs, "depth"), 1);
        const vg__feature *img = vg__features_find(&fs, "image_raw", 9);
        CHECK(img && img->kind == VG__FEAT_BYTES);
        if (img) {
            vg__pb_reader pr;
            const uint8_t *p;
            size_t pl;
            vg__pb_reader_init(&pr, img->list, img->list_len);
            CHECK_OK(vg__feature_bytes_next(&pr, &p, &pl, &st), &st);
            CHECK(pl == ROWS * COLS && memcmp(p, g_pix + n * ROWS * COLS, pl) == 0);
        }
        n++;
    }
    CHECK_EQ_INT(n, want_n);
    vg__features_free(&fs);
    vg__zrecord_reader_close(r);
}

static void test_convert_tfrecord_and_fixed(void) {
    char out[300];
    cli_tmp_path(out, sizeof out, "train.tfrecords");
    const char *a1[] = {"convert", "--images", g_img, "--labels", g_lbl, "-o", out, NULL};
    CHECK_EQ_INT(run_vigil(a1, "out", "err"), 0);
    check_tfrecord(out, VG_COMPRESSION_NONE, N);
    cli_tmp_path(out, sizeof out, "train.tfrecords.gz");
    const char *a2[] = {"convert", "--images", g_img, "--labels", g_lbl, "-o", out, "--compression", "GZIP",
                        "--limit", "3", NULL};
    CHECK_EQ_INT(run_vigil(a2, "out", "err"), 0);
    check_tfrecord(out, VG_COMPRESSION_GZIP, 3);
    cli_tmp_path(out, sizeof out, "train.bin");
    const char *a3[] = {"convert", "--images", g_img, "--labels", g_lbl, "-o", out, "--format", "fixed", NULL};
    CHECK_EQ_INT(run_vigil(a3, "out", "err"), 0);
    FILE *f = fopen(out, "rb");
    uint8_t buf[N * (1 + ROWS * COLS) + 1];
    size_t k = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK_EQ_INT(k, N * (1 + ROWS * COLS));
    for (int i = 0; i < N && k == N * (1 + ROWS * COLS); i++) {
        CHECK_EQ_INT(buf[i * (1 + ROWS * COLS)], g_lab[i]);
        CHECK(memcmp(buf + i * (1 + ROWS * COLS) + 1, g_pix + i * ROWS * COLS, ROWS * COLS) == 0);
    }
}

static void test_convert_errors(void) {
    char out[300], bad[300];
    cli_tmp_path(out, sizeof out, "x.tfrecords");
    const char *a1[] = {"convert", "--images", g_img, "-o", out, NULL};
    CHECK_EQ_INT(run_vigil(a1, "out", "err"), 2);
    const char *a2[] = {"convert", "--images", g_img, "--labels", g_lbl, "-o", out, "--format", "png", NULL};
    CHECK_EQ_INT(run_vigil(a2, "out", "err"), 2);
    /* label file with another record count */
    cli_tmp_path(bad, sizeof bad, "short-labels");
    write_idx(bad, 1, (uint32_t[]){N - 1}, g_lab, N - 1);
    const char *a3[] = {"convert", "--images", g_img, "--labels", bad, "-o", out, NULL};
    CHECK_EQ_INT(run_vigil(a3, "out", "err"), 1);
    cli_tmp_path(bad, sizeof bad, "missing");
    const char *a4[] = {"convert", "--images", bad, "--labels", g_lbl, "-o", out, NULL};
    CHECK_EQ_INT(run_vigil(a4, "out", "err"), 1);
}

static int setup(void) {
    for (int i = 0; i < N * ROWS * COLS; i++) g_pix[i] = (uint8_t)(i * 7 + 3);
    for (int i = 0; i < N; i++) g_lab[i] = (uint8_t)(9 - i);
    cli_tmp_path(g_img, sizeof g_img, "images-idx3-ubyte");
    cli_tmp_path(g_lbl, sizeof g_lbl, "labels-idx1-ubyte");
    write_idx(g_img, 3, (uint32_t[]){N, ROWS, COLS}, g_pix, sizeof g_pix);
    write_idx(g_lbl, 1, (uint32_t[]){N}, g_lab, N);
    return 0;
}

static const cli_case cases[] = {
    CLI_CASE(test_convert_tfrecord_and_fixed),
    CLI_CASE(test_convert_errors),
};
static const cli_suite suite = {.tag = "convert", .setup = setup};
CLI_TEST_MAIN(suite, cases)
