/* test_hostile_bombs.c - regression tests for issue 29 items 2 and 3, from files the
 * tests write:
 *   item 2 (decompression bombs): a progressive JPEG of a few hundred bytes whose header
 *     claims 20000 x 20000 (and 16000 x 16000, under the pixel limit), a 61-byte PNG
 *     with a chunk length of 0x7ffffff0, a GZIP TFRecord whose record claims 2^40 bytes
 *     (and 900 MB, under the record limit but more than the file can inflate to);
 *     each fails with its code and a message naming the limit or the file, and the
 *     process's peak memory (ru_maxrss) grows by less than 100 MB. vg_set_decode_limits
 *     lowers and restores the limits.
 *   item 3 (special files): a FIFO (mkfifo) and /dev/zero given to TextLineDataset,
 *     TFRecordDataset (GZIP), FixedLengthRecordDataset, the queue readers
 *     (TextLineReader, TFRecordReader, WholeFileReader, FixedLengthRecordReader) and
 *     vg_read_file fail at once with FAILED_PRECONDITION "... is not a regular file",
 *     and `vigil graph` / `vigil run` on a FIFO or on a SavedModel directory whose
 *     saved_model.pb is a FIFO, and `vigil train --input tfdata|queue` on a FIFO or
 *     /dev/zero, exit with status 1 without blocking. */
#include "io/example_io.h"
#include "io/io.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <ftw.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif

static char g_dir[64];


static long maxrss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static vg_output str_const(vg_graph *g, const void *p, size_t n, const char *name) {
    vg_tensor *t = vg_tensor_new(VG_STRING, NULL, 0, NULL);
    vg_tensor_set_string(t, 0, p, n, NULL);
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

/* Runs y once in a new session: the code, with st set; the value in *out (may be NULL). */
static vg_code run1(vg_graph *g, vg_output y, vg_tensor **out, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return st->code;
    vg_tensor *v = NULL;
    vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, &y, &v, 1, NULL, 0, NULL, st);
    vg_status cst;
    vg_session_close(s, &cst);
    vg_session_free(s);
    if (out) *out = v;
    else if (v) vg_tensor_free(v);
    return rc;
}

/* ---- item 2: JPEG ---- */

/* A 16 x 16 gray progressive JPEG from EncodeJpeg(progressive=true), its SOF2 then
 * patched to claim h x w. *n: its size. */
static uint8_t *progressive_jpeg_claiming(int h, int w, size_t *n) {
    vg_graph *g = vg_graph_new();
    int64_t d[3] = {16, 16, 1};
    vg_tensor *img = vg_tensor_new(VG_UINT8, d, 3, NULL);
    uint8_t *px = vg_tensor_data(img);
    for (int i = 0; i < 256; i++) px[i] = (uint8_t)(i * 7);
    vg_output c = vg_const(g, img, "img");
    vg_tensor_free(img);
    vg_op_builder *b = vg_op_builder_new(g, "EncodeJpeg", "enc");
    vg_op_builder_add_input(b, c);
    vg_op_builder_set_attr_bool(b, "progressive", true);
    vg_op *enc = vg_op_builder_finish(b);
    CHECK(enc != NULL);
    vg_status st;
    vg_tensor *out = NULL;
    CHECK_OK(run1(g, vg_out(enc, 0), &out, &st), &st);
    uint8_t *copy = NULL;
    *n = 0;
    if (out) {
        size_t len;
        const uint8_t *p = (const uint8_t *)vg_tensor_string(out, 0, &len);
        copy = malloc(len);
        memcpy(copy, p, len);
        *n = len;
        vg_tensor_free(out);
    }
    vg_graph_free(g);
    bool patched = false;
    for (size_t i = 0; copy && i + 9 < *n; i++)
        if (copy[i] == 0xFF && copy[i + 1] == 0xC2) { /* SOF2: len(2) precision(1) height(2) width(2) */
            copy[i + 5] = (uint8_t)(h >> 8), copy[i + 6] = (uint8_t)h;
            copy[i + 7] = (uint8_t)(w >> 8), copy[i + 8] = (uint8_t)w;
            patched = true;
            break;
        }
    CHECK(patched);
    return copy;
}

static vg_code decode(const uint8_t *p, size_t n, const char *op, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output c = str_const(g, p, n, "contents");
    vg_output y = strcmp(op, "DecodeJpeg") == 0 ? vg_decode_jpeg(g, c, NULL, "dec")
                  : strcmp(op, "DecodePng") == 0 ? vg_decode_png(g, c, 0, "dec")
                                                 : vg_decode_image(g, c, 0, "dec");
    vg_code rc = run1(g, y, NULL, st);
    vg_graph_free(g);
    return rc;
}

/* Decoding the n bytes p with op, and with DecodeImage, fails with RESOURCE_EXHAUSTED; op's
 * message names op and contains the three strings want (the size, the limit, the option). */
static void expect_exhausted(const uint8_t *p, size_t n, const char *op, const char *const *want) {
    vg_status st;
    CHECK_STATUS(decode(p, n, op, &st), &st, VG_RESOURCE_EXHAUSTED, op);
    for (int i = 0; i < 3; i++) CHECK_STR_CONTAINS(st.msg, want[i]);
    CHECK_CODE(decode(p, n, "DecodeImage", &st), VG_RESOURCE_EXHAUSTED);
}

static void test_bombs__progressive_jpeg(void) {
    long rss0 = maxrss_kb();
    size_t n = 0;
    uint8_t *bomb = progressive_jpeg_claiming(20000, 20000, &n);
    CHECK(n > 0 && n < 1000);
    vg_status st;
    /* over the default pixel limit (2^28): RESOURCE_EXHAUSTED naming the op and the limit */
    expect_exhausted(bomb, n, "DecodeJpeg", (const char *[]){"20000 x 20000", "268435456 pixels", "max_image_pixels"});
    free(bomb);
    /* under the limit, but a progressive file cannot hold 16000 x 16000 in n bytes */
    bomb = progressive_jpeg_claiming(16000, 16000, &n);
    CHECK_STATUS(decode(bomb, n, "DecodeJpeg", &st), &st, VG_INVALID_ARGUMENT, "cannot be held in the data");
    free(bomb);
    /* the real 16 x 16 image decodes; with the limit lowered to 255 pixels it does not */
    uint8_t *ok = progressive_jpeg_claiming(16, 16, &n);
    CHECK_OK(decode(ok, n, "DecodeJpeg", &st), &st);
    vg_decode_limits l = vg_get_decode_limits();
    CHECK_EQ_INT(l.max_image_pixels, (int64_t)1 << 28);
    l.max_image_pixels = 255;
    CHECK_OK(vg_set_decode_limits(&l, &st), &st);
    CHECK_STATUS(decode(ok, n, "DecodeJpeg", &st), &st, VG_RESOURCE_EXHAUSTED, "limit of 255 pixels");
    l.max_image_pixels = 256;
    CHECK_OK(vg_set_decode_limits(&l, &st), &st);
    CHECK_OK(decode(ok, n, "DecodeJpeg", &st), &st);
    l = vg_decode_limits_default();
    CHECK_OK(vg_set_decode_limits(&l, &st), &st);
    free(ok);
    CHECK(maxrss_kb() - rss0 < 100 * 1024);
}

/* ---- item 2: PNG ---- */

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* signature, IHDR (1 x 1 gray), then a zTXt chunk claiming 0x7ffffff0 bytes with 20
 * bytes present: 61 bytes. */
static size_t png_chunk_bomb(uint8_t out[61]) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t k = 0;
    memcpy(out, sig, 8), k = 8;
    put_be32(out + k, 13), memcpy(out + k + 4, "IHDR", 4);
    uint8_t *ih = out + k + 8;
    put_be32(ih, 1), put_be32(ih + 4, 1);
    ih[8] = 8, ih[9] = 0, ih[10] = 0, ih[11] = 0, ih[12] = 0;
    put_be32(out + k + 21, (uint32_t)crc32(0, out + k + 4, 17));
    k += 25;
    put_be32(out + k, 0x7ffffff0u), memcpy(out + k + 4, "zTXt", 4);
    k += 8;
    memset(out + k, 'A', 61 - k);
    return 61;
}

static void test_bombs__png_chunk_length(void) {
    long rss0 = maxrss_kb();
    uint8_t bomb[61];
    size_t n = png_chunk_bomb(bomb);
    vg_status st;
    expect_exhausted(bomb, n, "DecodePng",
                     (const char *[]){"zTXt chunk of 2147483632 bytes", "limit of 8388608 bytes", "max_png_chunk_bytes"});
    /* a chunk length within the limit that the data does not hold: TF's corrupt-data error */
    put_be32(bomb + 33, 1000);
    CHECK_STATUS(decode(bomb, n, "DecodePng", &st), &st, VG_INVALID_ARGUMENT,
        "Invalid PNG data, size 61: a zTXt chunk at offset 33 claims 1000 bytes");
    CHECK(maxrss_kb() - rss0 < 100 * 1024);
}

/* ---- item 2: GZIP TFRecord ---- */

/* A GZIP TFRecord file: one header claiming `claim` bytes (its length CRC valid), then
 * `zeros` zero bytes (a few hundred KB compressed). */
static void write_gzip_claiming(const char *path, uint64_t claim, size_t zeros) {
    gzFile z = gzopen(path, "wb9");
    CHECK(z != NULL);
    if (!z) return;
    uint8_t hdr[12];
    vg__tfrecord_header(hdr, claim);
    gzwrite(z, hdr, 12);
    static uint8_t zero[1 << 20];
    for (size_t done = 0; done < zeros; done += sizeof zero) gzwrite(z, zero, sizeof zero);
    gzclose(z);
}

/* All the records of a TFRecordDataset over one file: the first error's code (st set),
 * VG_OUT_OF_RANGE at the end, counting records in *nrec. */
static vg_code iterate_dataset(vg_output (*make)(vg_graph *, vg_output, const char *), const char *path,
                               const char *comp, int *nrec, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output files = str_const(g, path, strlen(path), "files");
    vg_output ds = make(g, files, comp);
    vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_session *s = vg_session_new(g, NULL, st);
    vg_code rc = s ? VG_OK : st->code;
    *nrec = 0;
    while (rc == VG_OK) {
        vg_output y = vg_out(next, 0);
        vg_tensor *v = NULL;
        rc = vg_session_run(s, NULL, NULL, NULL, 0, &y, &v, 1, NULL, 0, NULL, st);
        if (v) vg_tensor_free(v);
        if (rc == VG_OK) ++*nrec;
    }
    vg_status cst;
    if (s) {
        vg_session_close(s, &cst);
        vg_session_free(s);
    }
    vg_graph_free(g);
    return rc;
}

static vg_output mk_tfrecord(vg_graph *g, vg_output files, const char *comp) {
    return vg_dataset_tfrecord(g, files, comp, NULL);
}
static vg_output mk_text_line(vg_graph *g, vg_output files, const char *comp) {
    return vg_dataset_text_line(g, files, comp, NULL);
}
static vg_output mk_fixed(vg_graph *g, vg_output files, const char *comp) {
    (void)comp;
    return vg_dataset_fixed_length_record(g, files, 0, 4, 0, NULL);
}

static void test_bombs__gzip_tfrecord_claimed_length(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/bomb.tfrecord.gz", g_dir);
    long rss0 = maxrss_kb();
    /* 2^40 bytes: over the record limit (1 GiB) */
    write_gzip_claiming(path, (uint64_t)1 << 40, (size_t)160 << 20);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size < (1 << 20));
    vg_status st;
    int nrec = 0;
    CHECK_STATUS(iterate_dataset(mk_tfrecord, path, "GZIP", &nrec, &st), &st, VG_RESOURCE_EXHAUSTED, path);
    CHECK_STR_CONTAINS(st.msg, "1099511627776 bytes");
    CHECK_STR_CONTAINS(st.msg, "limit of 1073741824 bytes");
    CHECK_STR_CONTAINS(st.msg, "max_record_bytes");
    CHECK_EQ_INT(nrec, 0);
    /* 900 MB: under the limit, but 160 MB of zeros (a few hundred KB gzip'd) cannot
     * inflate to it: DATA_LOSS before anything grows */
    write_gzip_claiming(path, (uint64_t)900 << 20, (size_t)160 << 20);
    CHECK_STATUS(iterate_dataset(mk_tfrecord, path, "GZIP", &nrec, &st), &st, VG_DATA_LOSS, path);
    CHECK_STR_CONTAINS(st.msg, "more than the rest of the compressed file can hold");
    /* the queue reader (same reader underneath) */
    vg__zrecord_reader *r = vg__zrecord_reader_open(path, VG_COMPRESSION_GZIP, &st);
    CHECK(r != NULL);
    const uint8_t *d;
    size_t len;
    uint64_t off;
    if (r) CHECK_CODE(vg__zrecord_reader_next(r, &d, &len, &off, &st), VG_DATA_LOSS);
    vg__zrecord_reader_close(r);
    CHECK(maxrss_kb() - rss0 < 100 * 1024);
    /* a GZIP text file of one 160 MB line, with the line limit lowered to 1 MB */
    vg_decode_limits l = vg_decode_limits_default();
    l.max_record_bytes = 1 << 20;
    CHECK_OK(vg_set_decode_limits(&l, &st), &st);
    CHECK_STATUS(iterate_dataset(mk_text_line, path, "GZIP", &nrec, &st), &st, VG_RESOURCE_EXHAUSTED,
        "limit of 1048576 bytes");
    CHECK_STR_CONTAINS(st.msg, path);
    /* plain and GZIP TFRecords with a 2000-byte record under a 1000-byte limit */
    char plain[300];
    snprintf(plain, sizeof plain, "%s/big.tfrecord", g_dir);
    static const vg_compression comps[2] = {VG_COMPRESSION_NONE, VG_COMPRESSION_GZIP};
    for (int i = 0; i < 2; i++) {
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(plain, comps[i], &st);
        CHECK(w != NULL);
        static uint8_t rec[2000];
        CHECK_OK(vg_tfrecord_writer_write(w, "small", 5, &st), &st);
        CHECK_OK(vg_tfrecord_writer_write(w, rec, sizeof rec, &st), &st);
        CHECK_OK(vg_tfrecord_writer_close(w, &st), &st);
        l.max_record_bytes = 1000;
        CHECK_OK(vg_set_decode_limits(&l, &st), &st);
        CHECK_CODE(iterate_dataset(mk_tfrecord, plain, i ? "GZIP" : "", &nrec, &st), VG_RESOURCE_EXHAUSTED);
        CHECK_EQ_INT(nrec, 1);
        CHECK_STR_CONTAINS(st.msg, "limit of 1000 bytes");
        CHECK_STR_CONTAINS(st.msg, plain);
        l.max_record_bytes = 0; /* the default */
        CHECK_OK(vg_set_decode_limits(&l, &st), &st);
        CHECK_CODE(iterate_dataset(mk_tfrecord, plain, i ? "GZIP" : "", &nrec, &st), VG_OUT_OF_RANGE);
        CHECK_EQ_INT(nrec, 2);
    }
    CHECK_EQ_INT(vg_get_decode_limits().max_record_bytes, (int64_t)1 << 30);
    /* bad settings change nothing */
    l.max_record_bytes = -1;
    CHECK_CODE(vg_set_decode_limits(&l, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_set_decode_limits(NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_get_decode_limits().max_record_bytes, (int64_t)1 << 30);
    unlink(path);
}

/* ---- item 3: special files ---- */

static void check_not_regular(vg_code rc, const vg_status *st, const char *path) {
    CHECK_STATUS(rc, st, VG_FAILED_PRECONDITION, path);
    CHECK_STR_CONTAINS(st->msg, "not a regular file");
}

static vg_code read_with(vg_output (*mk_reader)(vg_graph *), const char *path, vg_status *st) {
    int64_t one = 1;
    vg_tensor *t = vg_tensor_new(VG_STRING, &one, 1, NULL);
    vg_tensor_set_string(t, 0, path, strlen(path), NULL);
    vg_graph *g = vg_graph_new();
    vg_output fv = vg_const(g, t, "files");
    vg_tensor_free(t);
    vg_output q = vg_string_input_producer(g, fv, 1, false, 0, 32, NULL);
    vg_op *read = vg_reader_read(g, mk_reader(g), q, NULL);
    vg_op *li = vg_local_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, st);
    vg_code rc = vg_session_run_targets(s, &li, 1, st);
    vg_coord *coord = vg_coord_new(NULL, 0);
    if (rc == VG_OK) rc = vg_start_queue_runners(s, coord, st);
    if (rc == VG_OK) {
        vg_output y = vg_out(read, 1);
        vg_tensor *v = NULL;
        rc = vg_session_run(s, NULL, NULL, NULL, 0, &y, &v, 1, NULL, 0, NULL, st);
        if (v) vg_tensor_free(v);
    }
    vg_status cst;
    vg_coord_request_stop(coord, NULL);
    vg_session_close(s, &cst);
    vg_coord_join(coord, 10, false, &cst);
    vg_coord_free(coord);
    vg_session_free(s);
    vg_graph_free(g);
    return rc;
}

static vg_output rd_text(vg_graph *g) { return vg_text_line_reader(g, 0, NULL); }
static vg_output rd_tfrecord(vg_graph *g) { return vg_tfrecord_reader(g, NULL, NULL); }
static vg_output rd_tfrecord_gzip(vg_graph *g) { return vg_tfrecord_reader(g, "GZIP", NULL); }
static vg_output rd_whole(vg_graph *g) { return vg_whole_file_reader(g, NULL); }
static vg_output rd_fixed(vg_graph *g) { return vg_fixed_length_record_reader(g, 0, 4, 0, 0, NULL); }

static void test_special__fifo_and_dev_zero_refused(void) {
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    const char *paths[2] = {fifo, "/dev/zero"};
    long rss0 = maxrss_kb();
    double t0 = tu_now_s();
    for (int i = 0; i < 2; i++) {
        const char *p = paths[i];
        vg_status st;
        int nrec;
        check_not_regular(iterate_dataset(mk_text_line, p, "", &nrec, &st), &st, p);
        check_not_regular(iterate_dataset(mk_text_line, p, "GZIP", &nrec, &st), &st, p);
        check_not_regular(iterate_dataset(mk_tfrecord, p, "GZIP", &nrec, &st), &st, p);
        check_not_regular(iterate_dataset(mk_tfrecord, p, "ZLIB", &nrec, &st), &st, p);
        check_not_regular(iterate_dataset(mk_tfrecord, p, "", &nrec, &st), &st, p);
        check_not_regular(iterate_dataset(mk_fixed, p, "", &nrec, &st), &st, p);
        check_not_regular(read_with(rd_text, p, &st), &st, p);
        check_not_regular(read_with(rd_tfrecord, p, &st), &st, p);
        check_not_regular(read_with(rd_tfrecord_gzip, p, &st), &st, p);
        check_not_regular(read_with(rd_whole, p, &st), &st, p);
        check_not_regular(read_with(rd_fixed, p, &st), &st, p);
        void *data = NULL;
        size_t n = 0;
        check_not_regular(vg_read_file(p, &data, &n, &st), &st, p);
        CHECK(data == NULL);
        int type, nd;
        int64_t dims[4];
        check_not_regular(vg_idx_header(p, &type, dims, &nd, &st), &st, p);
    }
    CHECK(tu_now_s() - t0 < 20); /* nothing blocked */
    CHECK(maxrss_kb() - rss0 < 100 * 1024);
}

/* `vigil graph` on a FIFO, on /dev/zero and on a SavedModel directory whose
 * saved_model.pb is a FIFO: exit status 1 with "not a regular file", at once. */
static void test_special__cli_graph(void) {
    char vigil[300], fifo[300], sm[300], pb[400], cmd[2048], log[300];
    snprintf(vigil, sizeof vigil, "%s/vigil", VG_BINDIR);
    if (access(vigil, X_OK) != 0) {
        printf("  (no %s: CLI part skipped)\n", vigil);
        return;
    }
    snprintf(fifo, sizeof fifo, "%s/cli_fifo", g_dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    snprintf(sm, sizeof sm, "%s/sm", g_dir);
    mkdir(sm, 0755);
    snprintf(pb, sizeof pb, "%s/saved_model.pb", sm);
    CHECK(mkfifo(pb, 0644) == 0);
    snprintf(log, sizeof log, "%s/cli.log", g_dir);
    char args[8][600];
    int nargs = 0;
    snprintf(args[nargs++], sizeof args[0], "graph %s", fifo);
    snprintf(args[nargs++], sizeof args[0], "graph /dev/zero");
    snprintf(args[nargs++], sizeof args[0], "graph %s", sm);
    snprintf(args[nargs++], sizeof args[0], "run %s", sm);
    if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) == 0) {
        /* the data files of --input (the IDX test set must exist to get that far) */
        snprintf(args[nargs++], sizeof args[0], "train --input tfdata %s --checkpoint-dir %s/ck1 --quiet", fifo, g_dir);
        snprintf(args[nargs++], sizeof args[0], "train --input queue %s --checkpoint-dir %s/ck2 --quiet", fifo, g_dir);
        snprintf(args[nargs++], sizeof args[0], "train --input tfdata /dev/zero --checkpoint-dir %s/ck3 --quiet", g_dir);
    } else {
        printf("  (Fashion-MNIST not installed: vigil train part skipped)\n");
    }
    double t0 = tu_now_s();
    for (int i = 0; i < nargs; i++) {
        snprintf(cmd, sizeof cmd, "timeout 60 %.300s %.600s >%.300s 2>&1", vigil, args[i], log);
        int rc = system(cmd);
        CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
        char buf[2048] = {0};
        FILE *f = fopen(log, "rb");
        if (f) {
            size_t k = fread(buf, 1, sizeof buf - 1, f);
            buf[k] = 0;
            fclose(f);
        }
        CHECK_STR_CONTAINS(buf, "not a regular file");
    }
    CHECK(tu_now_s() - t0 < 60);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "bombs")[0]) return 1;
    RUN_TEST(test_bombs__progressive_jpeg);
    RUN_TEST(test_bombs__png_chunk_length);
    RUN_TEST(test_bombs__gzip_tfrecord_claimed_length);
    RUN_TEST(test_special__fifo_and_dev_zero_refused);
    RUN_TEST(test_special__cli_graph);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
