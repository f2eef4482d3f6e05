/* test_input_idx.c - the IdxRecord op on small IDX files written here (gzip'd and
 * plain), its errors, CountUpTo, and - when the Fashion-MNIST files are installed - a
 * shuffle_batch over the real training set. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/ops.h"
#include "vigil/queue.h"
#include "vigil/session.h"
#include "vigil/variables.h"
#include "kernels_fixture.h"
#include "pipeline_test_util.h"
#define TMPDIR_TAG "test_idx"
#include "tmpdir_util.h"
#include <stdint.h>
#include <unistd.h>
#include <zlib.h>

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Writes an IDX u8 file: dims then data; gz selects gzip. magic_ok = false corrupts it. */
static void write_idx(const char *path, const uint32_t *dims, int nd, const uint8_t *data, size_t n, bool gz,
                      bool magic_ok) {
    uint8_t hdr[4 + 16] = {0, 0, 0x08, (uint8_t)nd};
    if (!magic_ok) hdr[0] = 0x1f, hdr[1] = 0x2a;
    for (int i = 0; i < nd; i++) put_be32(hdr + 4 + 4 * i, dims[i]);
    size_t hl = 4 + 4 * (size_t)nd;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        CHECK(f != NULL);
        gzwrite(f, hdr, (unsigned)hl);
        if (n) gzwrite(f, data, (unsigned)n);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        fwrite(hdr, 1, hl, f);
        if (n) fwrite(data, 1, n, f);
        fclose(f);
    }
}

/* 5 images of 3x4: pixel (i, r, c) = 100 + 10 i + 4 r + c; labels 7 - i. */
static void make_files(const char *img, const char *lab, bool gz) {
    uint8_t pix[5 * 12], labels[5];
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < 12; k++) pix[12 * i + k] = (uint8_t)(100 + 10 * i + k);
        labels[i] = (uint8_t)(7 - i);
    }
    write_idx(img, (uint32_t[]){5, 3, 4}, 3, pix, sizeof pix, gz, true);
    write_idx(lab, (uint32_t[]){5}, 1, labels, sizeof labels, gz, true);
}

static void path(char *buf, const char *name) { tmp_path(buf, name); }

static void check_record(const char *img, const char *lab, vg_dtype idt) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t i64[4] = {4, 0, 2, 2};
    int32_t i32[4] = {4, 0, 2, 2};
    vg_output idx = vg_const_array(g, idt, (int64_t[]){2, 2}, 2, idt == VG_INT32 ? (void *)i32 : (void *)i64, "idx");
    vg_op *rec = vg_idx_record(g, img, lab, idx, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_shape s = vg_output_shape(vg_out(rec, 0));
    CHECK(s.ndims == 4 && s.dims[0] == 2 && s.dims[1] == 2 && s.dims[2] == 3 && s.dims[3] == 4);
    CHECK(vg_output_dtype(vg_out(rec, 0)) == VG_UINT8 && vg_output_dtype(vg_out(rec, 1)) == VG_INT64);
    vg_session *sess = vg_session_new(g, NULL, &st);
    vg_output f[2] = {vg_out(rec, 0), vg_out(rec, 1)};
    vg_tensor *o[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(sess, NULL, NULL, NULL, 0, f, o, 2, NULL, 0, NULL, &st), &st);
    if (o[0] && o[1]) {
        CHECK_EQ_INT(vg_tensor_ndims(o[0]), 4);
        CHECK_EQ_INT(vg_tensor_ndims(o[1]), 2);
        const uint8_t *p = vg_tensor_data(o[0]);
        const int64_t *l = vg_tensor_data(o[1]);
        for (int k = 0; k < 4; k++) {
            int i = (int)i64[k];
            CHECK_EQ_INT(l[k], 7 - i);
            for (int j = 0; j < 12; j++) CHECK_EQ_INT(p[12 * k + j], 100 + 10 * i + j);
        }
    }
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    /* a second run reuses the loaded files */
    CHECK_OK(vg_session_run(sess, NULL, NULL, NULL, 0, f, o, 2, NULL, 0, NULL, &st), &st);
    kt_teardown(g, sess, (vg_tensor *[]){o[0], o[1]}, 2, NULL, 0);
}

static void test_idx__records(void) {
    char img[512], lab[512];
    path(img, "img.gz");
    path(lab, "lab.gz");
    make_files(img, lab, true);
    check_record(img, lab, VG_INT32);
    check_record(img, lab, VG_INT64);
    path(img, "img.raw");
    path(lab, "lab.raw");
    make_files(img, lab, false);
    check_record(img, lab, VG_INT32);
}

/* Runs IdxRecord on index `index`; returns the code (message in st). */
static vg_code run_one(const char *img, const char *lab, int32_t index, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output idx = vg_const_i32(g, index, "idx");
    vg_op *rec = vg_idx_record(g, img, lab, idx, "rec");
    vg_session *s = vg_session_new(g, NULL, st);
    vg_code rc = s ? vg_session_run1(s, vg_out(rec, 1), NULL, st) : st->code;
    vg_session_free(s);
    vg_graph_free(g);
    return rc;
}

static void test_idx__errors(void) {
    vg_status st;
    char img[512], lab[512], bad[512], missing[512], short_lab[512];
    path(img, "img.gz");
    path(lab, "lab.gz");
    make_files(img, lab, true);
    CHECK_OK(run_one(img, lab, 4, &st), &st);
    /* index out of range */
    CHECK_STATUS(run_one(img, lab, 5, &st), &st, VG_INVALID_ARGUMENT, "index 5 is out of range [0, 5)");
    CHECK_CODE(run_one(img, lab, -1, &st), VG_INVALID_ARGUMENT);
    /* missing file: NOT_FOUND naming it */
    path(missing, "nope-images.gz");
    CHECK_STATUS(run_one(missing, lab, 0, &st), &st, VG_NOT_FOUND, missing);
    CHECK_CODE(run_one(img, missing, 0, &st), VG_NOT_FOUND);
    /* bad magic */
    path(bad, "bad.gz");
    write_idx(bad, (uint32_t[]){5, 3, 4}, 3, (uint8_t[60]){0}, 60, true, false);
    CHECK_STATUS(run_one(bad, lab, 0, &st), &st, VG_DATA_LOSS, "bad magic");
    /* truncated data */
    write_idx(bad, (uint32_t[]){5, 3, 4}, 3, (uint8_t[30]){0}, 30, true, true);
    CHECK_CODE(run_one(bad, lab, 0, &st), VG_DATA_LOSS);
    /* count mismatch */
    path(short_lab, "short_lab.gz");
    write_idx(short_lab, (uint32_t[]){4}, 1, (uint8_t[4]){0}, 4, true, true);
    CHECK_STATUS(run_one(img, short_lab, 0, &st), &st, VG_DATA_LOSS, "5 images but");
    /* wrong index dtype at build time */
    vg_graph *g = vg_graph_new();
    vg_idx_record(g, img, lab, vg_const_f32(g, 1, "f"), NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    unlink(bad);
    unlink(short_lab);
}

/* A CountUpTo op called name with limit 3 over ref (NULL when ref is not a variable). */
static vg_op *count_up_to_3(vg_graph *g, vg_output ref, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "CountUpTo", name);
    vg_op_builder_add_input(b, ref);
    vg_op_builder_set_attr_int(b, "limit", 3);
    return vg_op_builder_finish(b);
}

static void test_idx__count_up_to(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "counter", vg_const_i64(g, 0, "zero"), VG_VAR_LOCAL);
    vg_op *cnt = count_up_to_3(g, v.ref, "count");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_CODE(vg_session_run1(s, vg_out(cnt, 0), NULL, &st), VG_FAILED_PRECONDITION);
    CHECK_OK(vg_session_run_targets(s, &v.initializer, 1, &st), &st);
    for (int i = 0; i < 3; i++) {
        vg_tensor *o = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(cnt, 0), &o, &st), &st);
        if (o) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(o), i);
        vg_tensor_free(o);
    }
    CHECK_STATUS(vg_session_run1(s, vg_out(cnt, 0), NULL, &st), &st, VG_OUT_OF_RANGE, "Reached limit of 3");
    vg_tensor *o = NULL;
    CHECK_OK(vg_session_run1(s, v.read, &o, &st), &st);
    if (o) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(o), 3);
    vg_tensor_free(o);
    vg_session_free(s);
    /* not a variable */
    CHECK(count_up_to_3(g, vg_const_i64(g, 0, "c"), "bad") == NULL);
    vg_graph_free(g);
}

#define FMNIST "/usr/share/datasets/fashion-mnist/"

/* The main job's pipeline on the real data: [64,28,28] uint8 batches, labels 0..9. */
static void test_idx__fashion_mnist_shuffle_batch(void) {
    const char *img = FMNIST "train-images-idx3-ubyte.gz", *lab = FMNIST "train-labels-idx1-ubyte.gz";
    if (access(img, R_OK) != 0 || access(lab, R_OK) != 0) {
        fprintf(stderr, "skip: %s not found\n", img);
        return;
    }
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output q = vg_range_input_producer(g, 60000, 0, true, 1, 1024, NULL);
    vg_op *ids = vg_queue_dequeue_many(g, q, vg_const_i32(g, 128, "read_n"), "read_ids");
    vg_op *rec = vg_idx_record(g, img, lab, vg_out(ids, 0), "read");
    vg_output ins[2] = {vg_out(rec, 0), vg_out(rec, 1)}, outs[2];
    CHECK_OK(vg_shuffle_batch(g, ins, 2, 64, 4000, 1000, 2, 7, true, NULL, outs), &st);
    vg_shape s = vg_output_shape(outs[0]);
    CHECK(s.ndims == 3 && s.dims[0] == 64 && s.dims[1] == 28 && s.dims[2] == 28);
    pipe_t p = {.g = g};
    pipe_start(&p);
    vg_session *sess = p.s;
    int label_hist[10] = {0};
    for (int b = 0; b < 20; b++) {
        vg_tensor *v[2] = {NULL, NULL};
        CHECK_OK(fetch_timeout(sess, outs, v, 2, &st), &st);
        if (!v[0]) break;
        CHECK(vg_tensor_dtype(v[0]) == VG_UINT8 && vg_tensor_ndims(v[0]) == 3);
        CHECK(vg_tensor_dim(v[0], 0) == 64 && vg_tensor_dim(v[0], 1) == 28 && vg_tensor_dim(v[0], 2) == 28);
        CHECK(vg_tensor_dtype(v[1]) == VG_INT64 && vg_tensor_dim(v[1], 0) == 64);
        const int64_t *l = vg_tensor_data(v[1]);
        for (int i = 0; i < 64; i++) {
            CHECK(l[i] >= 0 && l[i] <= 9);
            if (l[i] >= 0 && l[i] <= 9) label_hist[l[i]]++;
        }
        /* images are not blank */
        const uint8_t *p = vg_tensor_data(v[0]);
        long sum = 0;
        for (int i = 0; i < 784; i++) sum += p[i];
        CHECK(sum > 0);
        vg_tensor_free(v[0]);
        vg_tensor_free(v[1]);
    }
    int classes = 0;
    for (int i = 0; i < 10; i++) classes += label_hist[i] > 0;
    CHECK(classes == 10);
    pipe_stop(&p);
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_idx__records);
    RUN_TEST(test_idx__errors);
    RUN_TEST(test_idx__count_up_to);
    RUN_TEST(test_idx__fashion_mnist_shuffle_batch);
    remove_tmpdir(); /* img.gz, lab.gz, img.raw, lab.raw */
    TEST_MAIN_END();
}
