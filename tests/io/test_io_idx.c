/* test_io_idx.c - IDX reader on small plain and gzip'd files written here, and on
 * the Debian Fashion-MNIST test set when installed. */
#include "io/io.h"
#include "test_util.h"
#include "status_fixture.h"
#include <ftw.h>
#include <unistd.h>
#include <zlib.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

static char g_dir[64];
static char *tmp_path(char *out, const char *name) {
    snprintf(out, 256, "%s/%s", g_dir, name);
    return out;
}

static void write_plain(const char *path, const uint8_t *d, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(d, 1, n, f);
    fclose(f);
}

static void write_gz(const char *path, const uint8_t *d, size_t n) {
    gzFile g = gzopen(path, "wb");
    gzwrite(g, d, (unsigned)n);
    gzclose(g);
}

/* images: 3 x 2 x 2 u8, labels: 3 u8 */
static const uint8_t k_images[] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2,
                                   1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const uint8_t k_labels[] = {0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 255};

static void test_io_idx__read_plain_and_gz(void) {
    char p[256];
    for (int gz = 0; gz < 2; gz++) {
        vg_status st;
        tmp_path(p, gz ? "img.gz" : "img");
        (gz ? write_gz : write_plain)(p, k_images, sizeof k_images);
        int64_t dims[4];
        int nd = 0;
        void *data = NULL;
        size_t n = 0;
        CHECK_OK(vg__idx_read(p, VG__IDX_U8, dims, &nd, &data, &n, &st), &st);
        CHECK(nd == 3 && dims[0] == 3 && dims[1] == 2 && dims[2] == 2 && dims[3] == 0);
        CHECK(n == 12 && data && memcmp(data, k_images + 16, 12) == 0);
        vg__free(data);
        tmp_path(p, gz ? "lab.gz" : "lab");
        (gz ? write_gz : write_plain)(p, k_labels, sizeof k_labels);
        CHECK_OK(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), &st);
        CHECK(nd == 1 && dims[0] == 3 && n == 3 && memcmp(data, k_labels + 8, 3) == 0);
        vg__free(data);
    }
}

static void test_io_idx__stream(void) {
    vg_status st;
    char p[256];
    tmp_path(p, "img_stream.gz");
    write_gz(p, k_images, sizeof k_images);
    vg__idx_reader *r = vg__idx_reader_open(p, VG__IDX_U8, &st);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(vg__idx_reader_num_records(r), 3);
    CHECK_EQ_INT(vg__idx_reader_record_bytes(r), 4);
    int nd;
    const int64_t *dims = vg__idx_reader_dims(r, &nd);
    CHECK(nd == 3 && dims[1] == 2);
    for (int pass = 0; pass < 2; pass++) {
        uint8_t rec[4];
        for (int i = 0; i < 3; i++) {
            CHECK_OK(vg__idx_reader_next_record(r, rec, &st), &st);
            CHECK(memcmp(rec, k_images + 16 + 4 * i, 4) == 0);
        }
        CHECK_CODE(vg__idx_reader_next_record(r, rec, &st), VG_OUT_OF_RANGE);
        CHECK_OK(vg__idx_reader_reset(r, &st), &st);
    }
    vg__idx_reader_close(r);
}

static void test_io_idx__other_types(void) {
    vg_status st;
    char p[256];
    /* int16 [2] = {0x0102, -2}, float32 [1] = 1.5 (big-endian in the file) */
    const uint8_t i16[] = {0, 0, 0x0b, 1, 0, 0, 0, 2, 0x01, 0x02, 0xff, 0xfe};
    const uint8_t f32[] = {0, 0, 0x0d, 1, 0, 0, 0, 1, 0x3f, 0xc0, 0, 0};
    int64_t dims[4];
    int nd;
    void *data;
    size_t n;
    write_plain(tmp_path(p, "i16"), i16, sizeof i16);
    CHECK_OK(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), &st);
    CHECK(n == 4 && ((int16_t *)data)[0] == 0x0102 && ((int16_t *)data)[1] == -2);
    vg__free(data);
    CHECK_CODE(vg__idx_read(p, VG__IDX_U8, dims, &nd, &data, &n, &st), VG_DATA_LOSS); /* type mismatch */
    write_plain(tmp_path(p, "f32"), f32, sizeof f32);
    CHECK_OK(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), &st);
    CHECK(n == 4 && ((float *)data)[0] == 1.5f);
    vg__free(data);
}

static void test_io_idx__errors(void) {
    vg_status st;
    char p[256];
    int64_t dims[4];
    int nd;
    void *data = (void *)1;
    size_t n;
    EXPECT_CODE_MSG(vg__idx_read("/nonexistent/t10k-images-idx3-ubyte.gz", 0, dims, &nd, &data, &n, &st), &st,
                    VG_NOT_FOUND, "/nonexistent/t10k-images-idx3-ubyte.gz");
    CHECK(data == NULL);
    uint8_t bad[sizeof k_images];
    memcpy(bad, k_images, sizeof bad);
    bad[0] = 0x1f;
    write_plain(tmp_path(p, "badmagic"), bad, sizeof bad);
    EXPECT_CODE_MSG(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), &st, VG_DATA_LOSS, "badmagic");
    bad[0] = 0;
    bad[3] = 9; /* 9 dimensions */
    write_plain(p, bad, sizeof bad);
    CHECK_CODE(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), VG_DATA_LOSS);
    for (int gz = 0; gz < 2; gz++) {
        tmp_path(p, gz ? "short.gz" : "short");
        (gz ? write_gz : write_plain)(p, k_images, sizeof k_images - 1); /* one byte short */
        CHECK_CODE(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), VG_DATA_LOSS);
        CHECK_STR_CONTAINS(st.msg, gz ? "short.gz" : "short");
        vg__idx_reader *r = vg__idx_reader_open(p, 0, &st);
        if (!gz) {
            /* a plain file's length is known: the header's count is checked against it
             * when the reader opens (issue 9 #2), naming the file and the offset */
            CHECK(r == NULL);
            EXPECT_CODE_MSG(st.code, &st, VG_DATA_LOSS, "short: IDX header at offset 4 claims 3 records");
        } else {
            CHECK(r != NULL);
            uint8_t rec[4];
            if (r) {
                CHECK_OK(vg__idx_reader_next_record(r, rec, &st), &st);
                CHECK_OK(vg__idx_reader_next_record(r, rec, &st), &st);
                CHECK_CODE(vg__idx_reader_next_record(r, rec, &st), VG_DATA_LOSS);
            }
        }
        vg__idx_reader_close(r);
        (gz ? write_gz : write_plain)(p, k_images, 10); /* short header */
        CHECK_CODE(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), VG_DATA_LOSS);
    }
    /* a gzip file cut in the middle of the stream */
    tmp_path(p, "cut.gz");
    write_gz(p, k_images, sizeof k_images);
    uint8_t *raw;
    size_t rn;
    vg__io_read_file(p, &raw, &rn, NULL);
    write_plain(p, raw, rn - 12);
    vg__free(raw);
    CHECK_CODE(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), VG_DATA_LOSS);
    /* a header claiming a huge size with little data: DATA_LOSS, not a huge allocation */
    const uint8_t huge[] = {0, 0, 8, 3, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0x10, 0, 0, 0, 0x10, 0, 1, 2, 3};
    write_plain(tmp_path(p, "huge"), huge, sizeof huge);
    vg_code c = vg__idx_read(p, 0, dims, &nd, &data, &n, &st);
    CHECK(c == VG_DATA_LOSS || c == VG_RESOURCE_EXHAUSTED);
}

static void test_io_idx__fashion_mnist(void) {
    const char *imgs = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    const char *labs = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
    if (access(imgs, R_OK) != 0 || access(labs, R_OK) != 0) return; /* not installed: skip */
    vg_status st;
    int64_t dims[4];
    int nd;
    void *data;
    size_t n;
    CHECK_OK(vg__idx_read(labs, VG__IDX_U8, dims, &nd, &data, &n, &st), &st);
    CHECK(nd == 1 && dims[0] == 10000 && n == 10000);
    if (n == 10000) {
        int counts[10] = {0}, bad = 0;
        const uint8_t *l = data;
        for (int i = 0; i < 10000; i++) l[i] < 10 ? counts[l[i]]++ : bad++;
        CHECK(bad == 0 && l[0] == 9 && l[1] == 2 && l[2] == 1);
        for (int k = 0; k < 10; k++) CHECK_EQ_INT(counts[k], 1000);
    }
    vg__free(data);
    CHECK_OK(vg__idx_read(imgs, VG__IDX_U8, dims, &nd, &data, &n, &st), &st);
    CHECK(nd == 3 && dims[0] == 10000 && dims[1] == 28 && dims[2] == 28 && n == 7840000);
    long sum0 = 0;
    for (int i = 0; i < 784 && data; i++) sum0 += ((uint8_t *)data)[i];
    CHECK_EQ_INT(sum0, 33456);
    vg__free(data);
    vg__idx_reader *r = vg__idx_reader_open(imgs, VG__IDX_U8, &st);
    CHECK(r && vg__idx_reader_record_bytes(r) == 784 && vg__idx_reader_num_records(r) == 10000);
    uint8_t rec[784];
    int64_t k = 0;
    while (r && vg__idx_reader_next_record(r, rec, &st) == VG_OK) k++;
    CHECK_EQ_INT(k, 10000);
    vg__idx_reader_close(r);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "idx")[0]) return 1;
    RUN_TEST(test_io_idx__read_plain_and_gz);
    RUN_TEST(test_io_idx__stream);
    RUN_TEST(test_io_idx__other_types);
    RUN_TEST(test_io_idx__errors);
    RUN_TEST(test_io_idx__fashion_mnist);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
