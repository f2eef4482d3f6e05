/* test_checkpoint.c - checkpoint management and the checkpoint reader: TF-written
 * bundles (raw, Snappy, string tensors), get_checkpoint_state on TF-written state files
 * and relative paths, latest_checkpoint / checkpoint_exists, unsupported dtypes. */
#include "io/io.h"
#include "io_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include "vigil/saver.h"
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#define TD VG_TESTDATA

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define TMPDIR_TAG "ckpt"
#include "tmpdir_util.h"

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void copy_file(const char *src, const char *dst) {
    uint8_t *d;
    size_t n;
    if (vg__io_read_file(src, &d, &n, NULL)) return;
    FILE *f = fopen(dst, "wb");
    if (f) {
        fwrite(d, 1, n, f);
        fclose(f);
    }
    vg__free(d);
}

/* A checkpoint reader on prefix (checked to open; the reason on stderr when not). */
static vg_checkpoint_reader *open_ckpt(const char *prefix) {
    vg_status st;
    return io_fx_opened(vg_checkpoint_reader_new(prefix, &st), prefix, &st);
}

static void test_checkpoint__reader_tf_bundle(void) {
    vg_status st;
    vg_checkpoint_reader *r = open_ckpt(TD "/rust_regression_model_tf1.2/variables/variables");
    if (!r) return;
    CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 2);
    vg_dtype dt;
    vg_shape s;
    CHECK(strcmp(vg_checkpoint_reader_tensor(r, 0, &dt, &s), "b") == 0);
    CHECK(dt == VG_FLOAT && s.ndims == 1 && s.dims[0] == 1);
    CHECK(strcmp(vg_checkpoint_reader_tensor(r, 1, &dt, &s), "w") == 0);
    CHECK(vg_checkpoint_reader_tensor(r, 2, &dt, &s) == NULL);
    vg_tensor *w = vg_checkpoint_reader_read(r, "w", &st);
    CHECK(w && vg_tensor_dtype(w) == VG_FLOAT && vg_tensor_num_elements(w) == 1);
    if (w) CHECK(*(float *)vg_tensor_data(w) == (float)-0.8578622341156006);
    vg_tensor_free(w);
    CHECK(vg_checkpoint_reader_read(r, "nope", &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_NOT_FOUND, "Key nope not found in checkpoint");
    vg_checkpoint_reader_free(r);
}

/* TF 2.14: Snappy index, a 613-byte string tensor. */
static void test_checkpoint__reader_strings_snappy(void) {
    vg_status st;
    vg_checkpoint_reader *r = open_ckpt(TD "/serving_half_plus_two_tf2_cpu/variables/variables");
    if (!r) return;
    CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 4);
    vg_tensor *t = vg_checkpoint_reader_read(r, "_CHECKPOINTABLE_OBJECT_GRAPH", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_STRING && vg_tensor_ndims(t) == 0);
    size_t n = 0;
    if (t) vg_tensor_string(t, 0, &n);
    CHECK_EQ_INT(n, 613);
    vg_tensor_free(t);
    t = vg_checkpoint_reader_read(r, "b/.ATTRIBUTES/VARIABLE_VALUE", &st);
    CHECK(t && vg_tensor_scalar(t) == 2.0);
    vg_tensor_free(t);
    vg_checkpoint_reader_free(r);
}

/* dtypes vigil has no tensor type for are listed but not readable. */
static void test_checkpoint__reader_unsupported_dtype(void) {
    char prefix[512];
    vg_status st;
    tmp_path(prefix, "half");
    vg__bundle_writer *w = vg__bundle_writer_new(prefix, &st);
    CHECK(w != NULL);
    int64_t two = 2;
    uint16_t h[2] = {0x3c00, 0x4000};
    CHECK_OK(vg__bundle_writer_add(w, "h", VG__DT_BFLOAT16, &two, 1, h, sizeof h, &st), &st);
    CHECK_OK(vg__bundle_writer_add(w, "h16", VG__DT_HALF, &two, 1, h, sizeof h, &st), &st);
    CHECK_OK(vg__bundle_writer_add(w, "u", VG__DT_UINT16, &two, 1, h, sizeof h, &st), &st);
    float f = 1.5f;
    CHECK_OK(vg__bundle_writer_add(w, "f", VG__DT_FLOAT, NULL, 0, &f, 4, &st), &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
    vg_checkpoint_reader *r = open_ckpt(prefix);
    vg_dtype dt;
    CHECK(r && strcmp(vg_checkpoint_reader_tensor(r, 1, &dt, NULL), "h") == 0 && (int)dt == VG__DT_BFLOAT16);
    vg_tensor *tb = vg_checkpoint_reader_read(r, "h", &st); /* DT_BFLOAT16 is VG_BFLOAT16 now */
    CHECK(tb && vg_tensor_dtype(tb) == VG_BFLOAT16 && memcmp(vg_tensor_data(tb), h, sizeof h) == 0);
    vg_tensor_free(tb);
    /* a dtype vigil has no tensor type for (uint16) is listed but not readable */
    CHECK(vg_checkpoint_reader_read(r, "u", &st) == NULL);
    CHECK_EQ_INT(st.code, VG_UNIMPLEMENTED);
    vg_tensor *th = vg_checkpoint_reader_read(r, "h16", &st); /* DT_HALF is VG_HALF now */
    CHECK(th && vg_tensor_dtype(th) == VG_HALF && memcmp(vg_tensor_data(th), h, sizeof h) == 0);
    vg_tensor_free(th);
    vg_tensor *t = vg_checkpoint_reader_read(r, "f", &st);
    CHECK(t && vg_tensor_scalar(t) == 1.5);
    vg_tensor_free(t);
    vg_checkpoint_reader_free(r);
    CHECK(vg_checkpoint_exists(prefix));
}

static void test_checkpoint__reader_missing(void) {
    vg_status st;
    char p[512];
    CHECK(vg_checkpoint_reader_new(tmp_path(p, "absent"), &st) == NULL);
    CHECK_EQ_INT(st.code, VG_NOT_FOUND);
    CHECK(vg_checkpoint_reader_new("", &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
}

/* TF-written `checkpoint` files (absolute paths). */
static void test_checkpoint__state_tf_files(void) {
    char dir[512], p[600];
    vg_status st;
    tmp_path(dir, "tfstate");
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    copy_file(TD "/checkpoint_state/serving_bad_half_plus_two.checkpoint", p);
    vg_checkpoint_state *cs = NULL;
    CHECK_OK(vg_get_checkpoint_state(dir, &cs, &st), &st);
    CHECK(cs && strcmp(cs->model_checkpoint_path, "/tmp/bad_half_plus_two/00000123/export") == 0);
    CHECK(cs && cs->n_all == 1 && strcmp(cs->all_model_checkpoint_paths[0], cs->model_checkpoint_path) == 0);
    vg_checkpoint_state_free(cs);
    /* the named files do not exist: latest_checkpoint is NULL */
    char buf[600];
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) == NULL);
    copy_file(TD "/checkpoint_state/tf_half_plus_two_sharded.checkpoint", p);
    CHECK_OK(vg_get_checkpoint_state(dir, &cs, &st), &st);
    CHECK(cs && strcmp(cs->model_checkpoint_path,
                       "/tmp/saved_model/half_plus_two/variables/saved_model_variables-\?\?\?\?\?-of-00001") == 0);
    vg_checkpoint_state_free(cs);
}

/* Relative entries are joined with the directory; latest_checkpoint needs the index. */
static void test_checkpoint__state_relative(void) {
    char dir[512], p[600], buf[600], want[600];
    vg_status st;
    tmp_path(dir, "rel");
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    write_text(p, "model_checkpoint_path: \"model.ckpt-200\"\n"
                  "all_model_checkpoint_paths: \"model.ckpt-100\"\n"
                  "all_model_checkpoint_paths: \"/abs/model.ckpt-200\"\n");
    vg_checkpoint_state *cs = NULL;
    CHECK_OK(vg_get_checkpoint_state(dir, &cs, &st), &st);
    snprintf(want, sizeof want, "%s/model.ckpt-200", dir);
    CHECK(cs && strcmp(cs->model_checkpoint_path, want) == 0);
    snprintf(want, sizeof want, "%s/model.ckpt-100", dir);
    CHECK(cs && cs->n_all == 2 && strcmp(cs->all_model_checkpoint_paths[0], want) == 0);
    CHECK(cs && strcmp(cs->all_model_checkpoint_paths[1], "/abs/model.ckpt-200") == 0);
    vg_checkpoint_state_free(cs);
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) == NULL);
    snprintf(p, sizeof p, "%s/model.ckpt-200.index", dir);
    write_text(p, "x");
    snprintf(want, sizeof want, "%s/model.ckpt-200", dir);
    const char *l = vg_latest_checkpoint(dir, buf, sizeof buf);
    CHECK(l && strcmp(l, want) == 0);
    CHECK(vg_checkpoint_exists(want));
    char tiny[8];
    CHECK(vg_latest_checkpoint(dir, tiny, sizeof tiny) == NULL);
    /* a V1 checkpoint is a single file named by the prefix */
    snprintf(p, sizeof p, "%s/v1ckpt", dir);
    write_text(p, "x");
    CHECK(vg_checkpoint_exists(p));
    snprintf(p, sizeof p, "%s/nothing", dir);
    CHECK(!vg_checkpoint_exists(p));
    CHECK(!vg_checkpoint_exists(dir)); /* a directory is not a checkpoint */
}

static void test_checkpoint__state_errors(void) {
    char dir[512], p[600], buf[600];
    vg_status st;
    vg_checkpoint_state *cs = NULL;
    tmp_path(dir, "errs");
    mkdir(dir, 0755);
    CHECK_CODE(vg_get_checkpoint_state(dir, &cs, &st), VG_NOT_FOUND);
    CHECK(cs == NULL);
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) == NULL);
    CHECK(vg_latest_checkpoint("/nonexistent_vg_dir", buf, sizeof buf) == NULL);
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    write_text(p, "model_checkpoint_path: \"unterminated\n");
    CHECK_CODE(vg_get_checkpoint_state(dir, &cs, &st), VG_DATA_LOSS);
    /* parsed, but no model_checkpoint_path: TF's ValueError */
    write_text(p, "all_model_checkpoint_paths: \"a\"\n");
    CHECK_CODE(vg_get_checkpoint_state(dir, &cs, &st), VG_INVALID_ARGUMENT);
    write_text(p, "model_checkpoint_path: \"\"\n");
    CHECK_CODE(vg_get_checkpoint_state(dir, &cs, &st), VG_INVALID_ARGUMENT);
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) == NULL);
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_checkpoint__reader_tf_bundle);
    RUN_TEST(test_checkpoint__reader_strings_snappy);
    RUN_TEST(test_checkpoint__reader_unsupported_dtype);
    RUN_TEST(test_checkpoint__reader_missing);
    RUN_TEST(test_checkpoint__state_tf_files);
    RUN_TEST(test_checkpoint__state_relative);
    RUN_TEST(test_checkpoint__state_errors);
    remove_tmpdir();
    TEST_MAIN_END();
}
