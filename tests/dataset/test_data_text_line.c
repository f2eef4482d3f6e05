/* test_data_text_line.c - TextLineDataset's compression types as TF 1.15's
 * (TextLineDatasetTest.testTextLineDataset{NoCompression,ZlibCompression,Gzip}): the
 * same lines from a plain, a ZLIB and a GZIP file (CRLF, a last line without newline,
 * a NUL byte inside a line, an empty line, gzip members one after another); "" does
 * not decompress a gzip file; a plain file read as GZIP and a truncated stream are
 * DATA_LOSS naming the file, the next file is read after it, and ignore_errors drops
 * the error. */
#include "test_util.h"
#include "zlib_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <unistd.h>
#include <zlib.h>

static char g_dir[128];
static const char k_text[] = "0: 0\r\n0: 1\n\nzero\0byte\n0: 4"; /* 5 lines, the last without newline */
#define K_LEN (sizeof k_text - 1)
static const char *const k_lines[] = {"0: 0", "0: 1", "", "zero\0byte", "0: 4"};
static const size_t k_lens[] = {4, 4, 0, 9, 4};

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* Reads every element of TextLineDataset(files, ct) (ignore_errors when asked): the
 * values into vals/lens (up to max), the first error into *err (VG_OK when none); the
 * iteration goes on after an error, as TF's iterator does. */
static int read_lines(char files[][256], int nfiles, const char *ct, bool ignore, char vals[][128], size_t *lens,
                      int max, vg_code *err, vg_status *est) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t d = nfiles;
    vg_tensor *t = vg_tensor_new(VG_STRING, &d, 1, &st);
    for (int i = 0; i < nfiles; i++) vg_tensor_set_string(t, i, files[i], strlen(files[i]), &st);
    vg_output ds = vg_dataset_text_line(g, vg_const(g, t, "files"), ct, NULL);
    vg_tensor_free(t);
    if (ignore) ds = vg_dataset_ignore_errors(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    int n = 0;
    *err = VG_OK;
    for (int guard = 0; s && guard < 100; guard++) {
        vg_tensor *o = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &o, &st);
        if (rc == VG_OUT_OF_RANGE) break;
        if (rc != VG_OK) {
            if (*err == VG_OK) {
                *err = rc;
                *est = st;
            }
            continue;
        }
        size_t l;
        const char *v = vg_tensor_string(o, 0, &l);
        if (n < max && l < 128) {
            memcpy(vals[n], v, l);
            lens[n] = l;
        }
        n++;
        vg_tensor_free(o);
    }
    vg_session_free(s);
    vg_graph_free(g);
    return n;
}

static void check_k_lines(char vals[][128], const size_t *lens, int from) {
    for (int i = 0; i < 5; i++) CHECK(lens[from + i] == k_lens[i] && memcmp(vals[from + i], k_lines[i], k_lens[i]) == 0);
}

static void test_compression_types(void) {
    char files[3][256];
    uint8_t z[512], gz[1024];
    size_t zn = deflate_to(z, sizeof z, k_text, K_LEN, false);
    /* two gzip members: the text split in two, as `cat a.gz b.gz` makes */
    size_t g1 = deflate_to(gz, sizeof gz, k_text, 12, true);
    size_t g2 = deflate_to(gz + g1, sizeof gz - g1, k_text + 12, K_LEN - 12, true);
    snprintf(files[0], 256, "%s/plain.txt", g_dir);
    snprintf(files[1], 256, "%s/z.txt.z", g_dir);
    snprintf(files[2], 256, "%s/g.txt.gz", g_dir);
    write_file(files[0], k_text, K_LEN);
    write_file(files[1], z, zn);
    write_file(files[2], gz, g1 + g2);
    const char *types[3] = {"", "ZLIB", "GZIP"};
    for (int c = 0; c < 3; c++) {
        char vals[16][128];
        size_t lens[16];
        vg_code err;
        vg_status est;
        int n = read_lines(files + c, 1, types[c], false, vals, lens, 16, &err, &est);
        CHECK_EQ_INT(n, 5);
        CHECK_CODE(err, VG_OK);
        if (n == 5) check_k_lines(vals, lens, 0);
    }
    /* "" reads a gzip file's bytes as they are: not the text's lines */
    {
        char vals[16][128];
        size_t lens[16];
        vg_code err;
        vg_status est;
        int n = read_lines(files + 2, 1, "", false, vals, lens, 16, &err, &est);
        CHECK_CODE(err, VG_OK);
        CHECK(n >= 1 && (uint8_t)vals[0][0] == 0x1f && (uint8_t)vals[0][1] == 0x8b);
    }
}

static void test_bad_streams(void) {
    char files[3][256];
    uint8_t gz[512];
    size_t gn = deflate_to(gz, sizeof gz, k_text, K_LEN, true);
    snprintf(files[0], 256, "%s/plain2.txt", g_dir);
    snprintf(files[1], 256, "%s/trunc.gz", g_dir);
    snprintf(files[2], 256, "%s/good.gz", g_dir);
    write_file(files[0], k_text, K_LEN);
    write_file(files[1], gz, gn / 2);
    write_file(files[2], gz, gn);
    char vals[16][128];
    size_t lens[16];
    vg_code err;
    vg_status est;
    /* a plain file read as GZIP: DATA_LOSS naming it, then the next file */
    char two[2][256];
    memcpy(two[0], files[0], 256);
    memcpy(two[1], files[2], 256);
    int n = read_lines(two, 2, "GZIP", false, vals, lens, 16, &err, &est);
    CHECK_STATUS(err, &est, VG_DATA_LOSS, files[0]);
    CHECK_EQ_INT(n, 5);
    if (n == 5) check_k_lines(vals, lens, 0);
    /* a truncated gzip file: DATA_LOSS after the lines it holds, then the next file */
    memcpy(two[0], files[1], 256);
    n = read_lines(two, 2, "GZIP", false, vals, lens, 16, &err, &est);
    CHECK_STATUS(err, &est, VG_DATA_LOSS, files[1]);
    CHECK_STR_CONTAINS(est.msg, "truncated");
    CHECK(n >= 5);
    if (n >= 5) check_k_lines(vals, lens, n - 5);
    /* ignore_errors: no error reaches get_next */
    n = read_lines(two, 2, "GZIP", true, vals, lens, 16, &err, &est);
    CHECK_CODE(err, VG_OK);
    CHECK(n >= 5);
    /* a missing file: NOT_FOUND naming it */
    char missing[1][256];
    snprintf(missing[0], 256, "%s/none.txt", g_dir);
    n = read_lines(missing, 1, "ZLIB", false, vals, lens, 16, &err, &est);
    CHECK_EQ_INT(n, 0);
    CHECK_STATUS(err, &est, VG_NOT_FOUND, "none.txt");
    /* an unknown compression type is refused */
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_text_line(g, vg_const_string(g, files[0], NULL), "LZ4", NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    vg_session *s = vg_graph_status(g, &st) == VG_OK ? vg_session_new(g, NULL, &st) : NULL;
    if (s) {
        vg_tensor *o = NULL;
        CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &o, &st), VG_INVALID_ARGUMENT);
        vg_tensor_free(o);
    }
    vg_session_free(s);
    vg_graph_free(g);
    for (int i = 0; i < 3; i++) remove(files[i]);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "textline")[0]) return 1;
    RUN_TEST(test_compression_types);
    RUN_TEST(test_bad_streams);
    char p[300];
    const char *names[] = {"plain.txt", "z.txt.z", "g.txt.gz"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
        remove(p);
    }
    rmdir(g_dir);
    TEST_MAIN_END();
}
