/* test_data_interleave_parallel.c - interleave with num_parallel_calls
 * (ParallelInterleaveDatasetV2, sloppy = false): the same elements in the same order as
 * the sequential interleave (TF's deterministic mode) over TFRecord files of different
 * lengths, for several cycle and block lengths; AUTOTUNE accepted; num_parallel_calls
 * 0 refused. Each cycle element is read ahead by its own thread. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <unistd.h>

static char g_dir[64];
static const char *g_files[3];
static char g_paths[3][128];

static vg_code open_file(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_dataset_tfrecord(fg, args[0], "", NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* Reads the whole pipeline: records as "<file><index>" codes into out. */
static int drain(int cycle, int block, int par, int *out, int max, vg_code *end) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output names = vg_const_array(g, VG_STRING, (const int64_t[]){3}, 1, g_files, "files");
    vg_output src = vg_dataset_from_tensor_slices(g, &names, 1, NULL);
    vg_output ds = par ? vg_dataset_interleave_parallel(g, src, open_file, NULL, cycle, block, par, NULL)
                       : vg_dataset_interleave(g, src, open_file, NULL, cycle, block, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    vg_session *s = vg_graph_status(g, &st) == VG_OK ? vg_session_new(g, NULL, &st) : NULL;
    int n = 0;
    *end = s ? VG_OK : st.code;
    while (s && n < max) {
        vg_tensor *t = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &t, &st);
        if (rc != VG_OK) {
            *end = rc;
            break;
        }
        size_t l;
        out[n++] = atoi(vg_tensor_string(t, 0, &l));
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_graph_free(g);
    return n;
}

static void test_parallel_equals_sequential(void) {
    static const struct { int cycle, block, par; } cases[] = {{2, 1, 2}, {3, 2, 3}, {1, 4, 2}, {3, 1, -1}, {2, 3, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int a[400], b[400];
        vg_code ea, eb;
        int na = drain(cases[c].cycle, cases[c].block, 0, a, 400, &ea);
        int nb = drain(cases[c].cycle, cases[c].block, cases[c].par, b, 400, &eb);
        CHECK_EQ_INT(na, 10 + 40 + 90);
        CHECK_EQ_INT(nb, na);
        CHECK_CODE(ea, VG_OUT_OF_RANGE);
        CHECK_CODE(eb, VG_OUT_OF_RANGE);
        for (int i = 0; i < na && i < nb; i++) CHECK_EQ_INT(b[i], a[i]);
    }
    int v[4];
    vg_code e;
    CHECK_EQ_INT(drain(2, 1, 0, v, 1, &e), 1);
    CHECK_EQ_INT(v[0], 1000); /* file 1, record 0 */
}

static void test_bad_parallelism(void) {
    int v[4];
    vg_code e;
    vg_graph *g = vg_graph_new();
    vg_output names = vg_const_array(g, VG_STRING, (const int64_t[]){3}, 1, g_files, "files");
    vg_output src = vg_dataset_from_tensor_slices(g, &names, 1, NULL);
    vg_output ds = vg_dataset_interleave_parallel(g, src, open_file, NULL, 2, 1, 0, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    expect_run1_error(g, vg_out(next, 0), VG_INVALID_ARGUMENT, "num_parallel_calls must be greater than zero.");
    vg_graph_free(g);
    (void)v, (void)e;
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "pinterleave")[0]) return 1;
    vg_status st;
    for (int f = 0; f < 3; f++) { /* file f: 10 * (f+1)^2 records "<f+1><index, 3 digits>" */
        snprintf(g_paths[f], sizeof g_paths[f], "%s/part-%d", g_dir, f);
        g_files[f] = g_paths[f];
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(g_paths[f], VG_COMPRESSION_NONE, &st);
        for (int i = 0; w && i < 10 * (f + 1) * (f + 1); i++) {
            char rec[16];
            int n = snprintf(rec, sizeof rec, "%d%03d", f + 1, i);
            vg_tfrecord_writer_write(w, rec, (size_t)n, &st);
        }
        if (w) vg_tfrecord_writer_close(w, &st);
    }
    RUN_TEST(test_parallel_equals_sequential);
    RUN_TEST(test_bad_parallelism);
    if (tu_rmrf(g_dir) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    TEST_MAIN_END();
}
