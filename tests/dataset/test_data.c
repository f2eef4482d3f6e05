/* test_data.c - tf.data: sources, transformations and iterators, element by element
 * against hand-computed sequences (cases after TF's python/data/kernel_tests/
 * {range_test, from_tensor_slices_test, batch_test, map_test, shuffle_test,
 * repeat_test, take_test, skip_test, prefetch_test, tf_record_dataset_test}.py), and a
 * TFRecord -> map(parse) -> shuffle -> batch -> prefetch pipeline under a
 * MonitoredSession that ends cleanly at the end of the data. */
#include "test_util.h"
#include "cf_callbacks.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "train_fixture.h"
#include "dataset_fixture.h"
#include "mts_fixture.h"
#include <ftw.h>
#include <unistd.h>

static char g_dir[64];

/* Drains component 0 (int64 scalars) of a one-shot iterator over ds into v. Returns
 * the count; *end_rc gets the code that ended it. */
static int drain_i64(vg_graph *g, vg_output ds, int64_t *v, int max, vg_code *end_rc) {
    vg_status st;
    vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    int n = 0;
    *end_rc = VG_OK;
    if (!s || !next) {
        *end_rc = st.code ? st.code : VG_INVALID_ARGUMENT;
        vg_session_free(s);
        return 0;
    }
    for (;;) {
        vg_tensor *o = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &o, &st);
        if (rc != VG_OK) {
            *end_rc = rc;
            break;
        }
        if (n < max) v[n] = *(int64_t *)vg_tensor_data(o);
        n++;
        vg_tensor_free(o);
        if (n > 10000) break;
    }
    /* at the end, get_next keeps failing with OUT_OF_RANGE */
    vg_tensor *o = NULL;
    if (*end_rc == VG_OUT_OF_RANGE) CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &o, &st), VG_OUT_OF_RANGE);
    vg_session_free(s);
    return n;
}

static void test_range_take_skip_repeat(void) {
    vg_graph *g = vg_graph_new();
    int64_t v[64];
    vg_code end;
    int n = drain_i64(g, vg_dataset_range(g, 0, 10, 3, NULL), v, 64, &end);
    CHECK(n == 4 && v[0] == 0 && v[1] == 3 && v[2] == 6 && v[3] == 9);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    n = drain_i64(g, vg_dataset_range(g, 5, 1, -2, NULL), v, 64, &end);
    CHECK(n == 2 && v[0] == 5 && v[1] == 3);
    /* range(4).repeat(3).skip(2).take(7) = 2 3 0 1 2 3 0 */
    vg_output ds = vg_dataset_repeat(g, vg_dataset_range(g, 0, 4, 1, NULL), 3, NULL);
    ds = vg_dataset_take(g, vg_dataset_skip(g, ds, 2, NULL), 7, NULL);
    n = drain_i64(g, ds, v, 64, &end);
    const int64_t want[7] = {2, 3, 0, 1, 2, 3, 0};
    CHECK_EQ_INT(n, 7);
    for (int i = 0; i < 7 && i < n; i++) CHECK_EQ_INT(v[i], want[i]);
    /* repeat(-1) of an empty dataset ends; take(-1) takes all */
    n = drain_i64(g, vg_dataset_repeat(g, vg_dataset_range(g, 0, 0, 1, NULL), -1, NULL), v, 64, &end);
    CHECK(n == 0 && end == VG_OUT_OF_RANGE);
    n = drain_i64(g, vg_dataset_take(g, vg_dataset_range(g, 0, 5, 1, NULL), -1, NULL), v, 64, &end);
    CHECK_EQ_INT(n, 5);
    /* step 0 fails at run time */
    n = drain_i64(g, vg_dataset_range(g, 0, 5, 0, NULL), v, 64, &end);
    CHECK(n == 0 && end == VG_INVALID_ARGUMENT);
    /* a range near the int64 limits ends where the next value would overflow (UBSan
     * found the overflow through fuzz_iterator_state) */
    n = drain_i64(g, vg_dataset_range(g, INT64_MAX - 5, INT64_MAX, 4, NULL), v, 64, &end);
    CHECK(n == 2 && v[0] == INT64_MAX - 5 && v[1] == INT64_MAX - 1 && end == VG_OUT_OF_RANGE);
    n = drain_i64(g, vg_dataset_range(g, INT64_MIN + 3, INT64_MIN, -2, NULL), v, 64, &end);
    CHECK(n == 2 && v[0] == INT64_MIN + 3 && v[1] == INT64_MIN + 1 && end == VG_OUT_OF_RANGE);
    vg_graph_free(g);
}

static void test_slices_batch(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t y[4] = {10, 11, 12, 13};
    vg_output comps[2] = {vg_const_array(g, VG_FLOAT, (int64_t[]){4, 2}, 2, x, "x"),
                          vg_const_array(g, VG_INT64, (int64_t[]){4}, 1, y, "y")};
    vg_output ds = vg_dataset_from_tensor_slices(g, comps, 2, NULL);
    vg_output b = vg_dataset_batch(g, ds, 3, false, NULL);
    vg_output bd = vg_dataset_batch(g, ds, 3, true, NULL);
    vg_shape s[2];
    CHECK_EQ_INT(vg_dataset_components(bd, NULL, s), 2);
    CHECK(s[0].ndims == 2 && s[0].dims[0] == 3 && s[0].dims[1] == 2);
    vg_output it = vg_make_one_shot_iterator(g, b, NULL), itd = vg_make_one_shot_iterator(g, bd, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL), *nextd = vg_iterator_get_next(g, itd, NULL);
    vg_shape ns = vg_output_shape(vg_out(next, 0));
    CHECK(ns.ndims == 2 && ns.dims[0] == -1 && ns.dims[1] == 2);
    vg_session *sess = vg_session_new(g, NULL, &st);
    vg_tensor *o[2] = {0};
    CHECK_OK(vg_session_run(sess, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, o, 2, NULL, 0,
                            NULL, &st),
             &st);
    if (o[0]) {
        CHECK(vg_tensor_dim(o[0], 0) == 3 && vg_tensor_dim(o[0], 1) == 2);
        const float *a = vg_tensor_data(o[0]);
        const int64_t *l = vg_tensor_data(o[1]);
        CHECK(a[0] == 0 && a[5] == 5 && l[0] == 10 && l[2] == 12);
    }
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    CHECK_OK(vg_session_run(sess, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, o, 2, NULL, 0,
                            NULL, &st),
             &st);
    if (o[0]) CHECK(vg_tensor_dim(o[0], 0) == 1 && ((float *)vg_tensor_data(o[0]))[1] == 7);
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    vg_tensor *t = NULL;
    CHECK_STATUS(vg_session_run1(sess, vg_out(next, 0), &t, &st), &st, VG_OUT_OF_RANGE, "End of sequence");
    CHECK_OK(vg_session_run1(sess, vg_out(nextd, 1), &t, &st), &st);
    vg_tensor_free(t);
    CHECK_CODE(vg_session_run1(sess, vg_out(nextd, 1), &t, &st), VG_OUT_OF_RANGE); /* remainder dropped */
    vg_session_free(sess);
    vg_graph_free(g);
}

static vg_code times_two_plus_one(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                  void *payload) {
    (void)nargs;
    int *calls = payload;
    (*calls)++;
    outs[0] = vg_add(fg, vg_mul(fg, args[0], vg_const_i64(fg, 2, "two"), NULL), vg_const_i64(fg, 1, "one"), NULL);
    outs[1] = vg_cast(fg, args[0], VG_FLOAT, NULL);
    *nouts = 2;
    return VG_OK;
}

static void test_map(void) {
    vg_graph *g = vg_graph_new();
    int calls = 0;
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 5, 1, NULL), times_two_plus_one, &calls, NULL);
    CHECK_EQ_INT(calls, 1);
    vg_dtype t[2];
    CHECK(vg_dataset_components(ds, t, NULL) == 2 && t[0] == VG_INT64 && t[1] == VG_FLOAT);
    int64_t v[8];
    vg_code end;
    int n = drain_i64(g, ds, v, 8, &end);
    CHECK(n == 5 && v[0] == 1 && v[4] == 9);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    vg_graph_free(g);
}

/* Drains a shuffled range(20) twice per session (repeat 2). */
static void shuffled(int64_t seed, bool reshuffle, int64_t out[40]) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_repeat(g, vg_dataset_shuffle(g, vg_dataset_range(g, 0, 20, 1, NULL), 7, seed, reshuffle,
                                                           NULL),
                                     2, NULL);
    vg_code end;
    int n = drain_i64(g, ds, out, 40, &end);
    CHECK_EQ_INT(n, 40);
    vg_graph_free(g);
}

static bool is_perm(const int64_t *v, int n) {
    int seen[64] = {0};
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n || seen[v[i]]) return false;
        seen[v[i]] = 1;
    }
    return true;
}

static void test_shuffle(void) {
    int64_t a[40], b[40], c[40];
    shuffled(42, true, a);
    shuffled(42, true, b);
    shuffled(42, false, c);
    CHECK(memcmp(a, b, sizeof a) == 0);                 /* same seed, same order */
    CHECK(is_perm(a, 20) && is_perm(a + 20, 20));       /* each epoch one pass */
    CHECK(memcmp(a, a + 20, 20 * sizeof(int64_t)) != 0); /* reshuffled per epoch */
    CHECK(memcmp(c, c + 20, 20 * sizeof(int64_t)) == 0); /* not reshuffled */
    int64_t id[20];
    for (int i = 0; i < 20; i++) id[i] = i;
    CHECK(memcmp(a, id, sizeof id) != 0);
    /* buffer 7 bounds displacement: element 19 cannot come out first */
    CHECK(a[0] < 7);
}

static void test_initializable_iterator(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_range(g, 0, 3, 1, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_STATUS(vg_session_run1(s, vg_out(next, 0), &t, &st), &st, VG_FAILED_PRECONDITION,
        "iterator has not been initialized");
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
    vg_tensor_free(t);
    CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
    if (t) CHECK(*(int64_t *)vg_tensor_data(t) == 1);
    vg_tensor_free(t);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st); /* restart */
    CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
    if (t) CHECK(*(int64_t *)vg_tensor_data(t) == 0);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

DS_FN1(decode_fn, vg_decode_raw(fg, args[0], VG_UINT8, true, NULL))

static void test_errors(void) {
    vg_status st;
    /* batching elements of different shapes: records "ab" and "abc" decoded as uint8 */
    char path[256];
    snprintf(path, sizeof path, "%s/ragged.tfrecord", g_dir);
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
    vg_tfrecord_writer_write(w, "ab", 2, &st);
    vg_tfrecord_writer_write(w, "abc", 3, &st);
    vg_tfrecord_writer_close(w, &st);
    vg_graph *g = vg_graph_new();
    vg_output rds = vg_dataset_batch(g, vg_dataset_map(g, vg_dataset_tfrecord(g, vg_const_string(g, path, "p"), "", NULL),
                                                       decode_fn, NULL, NULL),
                                     2, false, NULL);
    vg_op *rnext = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, rds, NULL), NULL);
    expect_run1_error(g, vg_out(rnext, 0), VG_INVALID_ARGUMENT,
                      "Cannot batch tensors with different shapes in component 0");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output files = vg_const_string(g, "/nonexistent/dir/f.tfrecord", "f");
    vg_output ds = vg_dataset_tfrecord(g, files, "", NULL);
    vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    expect_run1_error(g, vg_out(next, 0), VG_NOT_FOUND, "/nonexistent/dir/f.tfrecord");
    /* not a dataset */
    vg_dataset_batch(g, files, 2, false, NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static vg_code parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *payload) {
    (void)nargs, (void)payload;
    vg_feature_spec specs[2] = {{"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}},
                                {"x", VG_FLOAT, false, vg_shape_make((int64_t[]){2}, 1), {NULL, 0}}};
    vg_output dense[2];
    if (!vg_parse_single_example(fg, args[0], specs, 2, dense, NULL, NULL)) return VG_INVALID_ARGUMENT;
    outs[0] = dense[0];
    outs[1] = dense[1];
    *nouts = 2;
    return VG_OK;
}

/* One batch of (label, [label, -label]) rows: sums[0] += the labels, sums[1] += the rows. */
static void label_feature_step(vg_tensor *const *out, void *u) {
    int64_t *sums = u;
    const int64_t *l = vg_tensor_data(out[0]);
    const float *x = vg_tensor_data(out[1]);
    for (int64_t i = 0; i < vg_tensor_dim(out[0], 0); i++) {
        sums[0] += l[i];
        CHECK(x[2 * i] == (float)l[i] && x[2 * i + 1] == -(float)l[i]);
        sums[1]++;
    }
}

/* The float feature "x" = [label, -label]. */
static void add_x_feature(vg_example *ex, int64_t label, int i, void *u) {
    (void)i, (void)u;
    vg_status st;
    vg_example_add_float(ex, "x", (float[]){(float)label, -(float)label}, 2, &st);
}

static void test_tfrecord_pipeline_monitored(void) {
    vg_status st;
    char files[2][256];
    int64_t want_sum = 0;
    for (int f = 0; f < 2; f++) {
        snprintf(files[f], sizeof files[f], "%s/d%d.tfrecord", g_dir, f);
        want_sum += ds_write_labelled_examples(files[f], VG_COMPRESSION_ZLIB, 10, f * 10, add_x_feature, NULL);
    }
    vg_graph *g = vg_graph_new();
    int64_t two = 2;
    vg_tensor *ft = vg_tensor_new(VG_STRING, &two, 1, &st);
    for (int i = 0; i < 2; i++) vg_tensor_set_string(ft, i, files[i], strlen(files[i]), &st);
    vg_output fo = vg_const(g, ft, "filenames");
    vg_tensor_free(ft);
    vg_output ds = vg_dataset_tfrecord(g, fo, "ZLIB", NULL);
    ds = vg_dataset_map(g, ds, parse_fn, NULL, NULL);
    ds = vg_dataset_shuffle(g, ds, 8, 3, true, NULL);
    ds = vg_dataset_batch(g, ds, 4, false, NULL);
    ds = vg_dataset_repeat(g, ds, 2, NULL);
    ds = vg_dataset_prefetch(g, ds, 2, NULL);
    vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    int64_t sums[2] = {0, 0}; /* labels, rows */
    vg_output f[2] = {vg_out(next, 0), vg_out(next, 1)};
    int steps = mts_singular_until_end(g, f, 2, label_feature_step, sums);
    if (steps < 0) return;
    CHECK_EQ_INT(sums[1], 40);
    CHECK_EQ_INT(steps, 10); /* 20 records: batches 4,4,4,4,4 per epoch */
    CHECK_EQ_INT(sums[0], 2 * want_sum);
}

/* Closing the session while get_next waits in a prefetch does not hang. */
static void test_prefetch_order_and_close(void) {
    vg_graph *g = vg_graph_new();
    int64_t v[300];
    vg_code end;
    int n = drain_i64(g, vg_dataset_prefetch(g, vg_dataset_range(g, 0, 300, 1, NULL), 3, NULL), v, 300, &end);
    CHECK_EQ_INT(n, 300);
    bool inorder = true;
    for (int i = 0; i < n && i < 300; i++) inorder = inorder && v[i] == i;
    CHECK(inorder);
    /* a session freed with a live prefetch thread (elements still buffered) */
    vg_status st;
    vg_output it = vg_make_one_shot_iterator(g, vg_dataset_prefetch(g, vg_dataset_range(g, 0, 1000, 1, NULL), 4, NULL),
                                             NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}


/* fn(x) = from_tensor_slices(fill([6], x)): x six times (TF's from_tensors(x).repeat(6)) */
static vg_code six_times(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output six = vg_fill(fg, vg_const_i32_vec(fg, (int32_t[]){6}, 1, NULL), args[0], NULL);
    outs[0] = vg_dataset_from_tensor_slices(fg, &six, 1, NULL);
    *nouts = 1;
    return VG_OK;
}

/* interleave_test / the Dataset.interleave docstring: range(1, 6), cycle_length 2,
 * block_length 4. */
static void test_interleave_shard(void) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_interleave(g, vg_dataset_range(g, 1, 6, 1, NULL), six_times, NULL, 2, 4, NULL);
    int64_t v[64];
    vg_code end;
    int n = drain_i64(g, ds, v, 64, &end);
    static const int64_t want[30] = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                     3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
    CHECK_EQ_INT(n, 30);
    CHECK(n == 30 && memcmp(v, want, sizeof want) == 0);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    /* shard(3, 1) of range(10) = 1 4 7 */
    n = drain_i64(g, vg_dataset_shard(g, vg_dataset_range(g, 0, 10, 1, NULL), 3, 1, NULL), v, 64, &end);
    CHECK(n == 3 && v[0] == 1 && v[1] == 4 && v[2] == 7);
    n = drain_i64(g, vg_dataset_shard(g, vg_dataset_range(g, 0, 10, 1, NULL), 3, 3, NULL), v, 64, &end);
    CHECK(n == 0 && end == VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

DS_FN1(text_lines_of, vg_dataset_text_line(fg, args[0], NULL, NULL))

/* list_files -> interleave(TextLineDataset, cycle 2, block 1): lines of two files
 * alternate (TensorFlowOnSpark's mnist_dist input shape). */
static void test_list_files_text_lines(void) {
    vg_status st;
    for (int f = 0; f < 2; f++) {
        char path[256];
        snprintf(path, sizeof path, "%s/part-%05d", g_dir, f);
        FILE *fp = fopen(path, "wb");
        fprintf(fp, "f%d-a\r\nf%d-b\nf%d-c", f, f, f); /* CRLF, LF, no final newline */
        fclose(fp);
    }
    char pattern[256];
    snprintf(pattern, sizeof pattern, "%s/part-*", g_dir);
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_list_files(g, pattern, false, 0, NULL);
    ds = vg_dataset_interleave(g, ds, text_lines_of, NULL, 2, 1, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    snprintf(pattern, sizeof pattern, "%s/nothing-*", g_dir);
    vg_op *none = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, vg_dataset_list_files(g, pattern, true, 0, NULL),
                                                                     NULL),
                                       NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    const char *want[6] = {"f0-a", "f1-a", "f0-b", "f1-b", "f0-c", "f1-c"};
    for (int i = 0; i < 6; i++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (!t) break;
        size_t l;
        const char *x = vg_tensor_string(t, 0, &l);
        CHECK(l == strlen(want[i]) && memcmp(x, want[i], l) == 0);
        vg_tensor_free(t);
    }
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE);
    CHECK_STATUS(vg_session_run1(s, vg_out(none, 0), &t, &st), &st, VG_INVALID_ARGUMENT, "No files matched pattern");
    vg_session_free(s);
    vg_graph_free(g);
    /* shuffled list_files: a permutation of both names */
    g = vg_graph_new();
    snprintf(pattern, sizeof pattern, "%s/part-*", g_dir);
    vg_op *nx = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, vg_dataset_list_files(g, pattern, true, 5, NULL), NULL),
                                     NULL);
    s = vg_session_new(g, NULL, &st);
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        CHECK_OK(vg_session_run1(s, vg_out(nx, 0), &t, &st), &st);
        if (!t) break;
        size_t l;
        const char *x = vg_tensor_string(t, 0, &l);
        seen |= l > 0 && x[l - 1] == '0' ? 1 : 2;
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(seen, 3);
    CHECK_CODE(vg_session_run1(s, vg_out(nx, 0), &t, &st), VG_OUT_OF_RANGE);
    vg_session_free(s);
    vg_graph_free(g);
}

/* ignore_errors over TFRecordDataset (tf_record_dataset_test / ignore_errors_test):
 * good (3) + corrupt at record 1 (1 good before) + missing + good (2) = 6 records. */
static void test_ignore_errors(void) {
    vg_status st;
    char paths[4][256];
    const int counts[4] = {3, 3, 0, 2};
    for (int f = 0; f < 4; f++) {
        snprintf(paths[f], sizeof paths[f], "%s/ie%d.tfrecord", g_dir, f);
        if (f == 2) continue; /* missing */
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(paths[f], VG_COMPRESSION_NONE, &st);
        for (int i = 0; i < counts[f]; i++) vg_tfrecord_writer_write(w, "rec", 3, &st);
        vg_tfrecord_writer_close(w, &st);
    }
    FILE *fp = fopen(paths[1], "r+b");
    fseek(fp, 19 + 12 + 1, SEEK_SET); /* record 1's data */
    fputc('X', fp);
    fclose(fp);
    int64_t four = 4;
    for (int ignore = 0; ignore < 2; ignore++) {
        vg_graph *g = vg_graph_new();
        vg_tensor *ft = vg_tensor_new(VG_STRING, &four, 1, &st);
        for (int i = 0; i < 4; i++) vg_tensor_set_string(ft, i, paths[i], strlen(paths[i]), &st);
        vg_output files = vg_const(g, ft, "files");
        vg_tensor_free(ft);
        vg_output ds = vg_dataset_tfrecord(g, files, "", NULL);
        if (ignore) ds = vg_dataset_ignore_errors(g, ds, NULL);
        vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
        vg_session *s = vg_session_new(g, NULL, &st);
        int n = 0;
        vg_code rc;
        vg_tensor *t = NULL;
        while ((rc = vg_session_run1(s, vg_out(next, 0), &t, &st)) == VG_OK && n < 100) {
            vg_tensor_free(t);
            n++;
        }
        if (ignore) {
            CHECK_EQ_INT(n, 6);
            CHECK_CODE(rc, VG_OUT_OF_RANGE);
        } else {
            CHECK_EQ_INT(n, 4);
            CHECK_STATUS(rc, &st, VG_DATA_LOSS, "offset 19");
            CHECK_STR_CONTAINS(st.msg, paths[1]);
            /* TF moves on to the next file: the missing one fails with NOT_FOUND */
            CHECK_STATUS(vg_session_run1(s, vg_out(next, 0), &t, &st), &st, VG_NOT_FOUND, paths[2]);
            CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
            vg_tensor_free(t);
        }
        vg_session_free(s);
        vg_graph_free(g);
    }
}

DS_FN1(less_than_5, vg_less(fg, args[0], vg_const_i64(fg, 5, NULL), NULL))

/* from_tensors + unbatch, filter, concatenate, zip, FixedLengthRecordDataset */
static void test_more_transformations(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t v[64];
    vg_code end;
    vg_output vec = vg_const_array(g, VG_INT64, (int64_t[]){3}, 1, (int64_t[]){7, 8, 9}, "vec");
    int n = drain_i64(g, vg_dataset_unbatch(g, vg_dataset_from_tensors(g, &vec, 1, NULL), NULL), v, 64, &end);
    CHECK(n == 3 && v[0] == 7 && v[2] == 9);
    n = drain_i64(g, vg_dataset_filter(g, vg_dataset_range(g, 0, 10, 1, NULL), less_than_5, NULL, NULL), v, 64, &end);
    CHECK(n == 5 && v[4] == 4);
    n = drain_i64(g, vg_dataset_concatenate(g, vg_dataset_range(g, 0, 3, 1, NULL), vg_dataset_range(g, 10, 12, 1, NULL), NULL),
                  v, 64, &end);
    CHECK(n == 5 && v[2] == 2 && v[3] == 10 && v[4] == 11);
    vg_output zipped = vg_dataset_zip(g, (vg_output[]){vg_dataset_range(g, 0, 5, 1, NULL), vg_dataset_range(g, 100, 103, 1, NULL)},
                                      2, NULL);
    CHECK_EQ_INT(vg_dataset_components(zipped, NULL, NULL), 2);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, zipped, NULL), NULL);
    /* fixed-length records: header "HHH", 3 records of 4 bytes, footer "FF" */
    char path[256], bad[256];
    snprintf(path, sizeof path, "%s/fixed.bin", g_dir);
    snprintf(bad, sizeof bad, "%s/fixed_bad.bin", g_dir);
    FILE *f = fopen(path, "wb");
    fputs("HHHaaaabbbbccccFF", f);
    fclose(f);
    f = fopen(bad, "wb");
    fputs("HHHaaaabbFF", f);
    fclose(f);
    vg_op *fnext = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_fixed_length_record(g, vg_const_string(g, path, NULL), 3, 4, 2, NULL), NULL),
        NULL);
    vg_op *bnext = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_fixed_length_record(g, vg_const_string(g, bad, NULL), 3, 4, 2, NULL), NULL),
        NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    for (int i = 0; i < 3; i++) {
        vg_tensor *o[2] = {0};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, o, 2, NULL, 0,
                                NULL, &st),
                 &st);
        if (o[0]) CHECK(*(int64_t *)vg_tensor_data(o[0]) == i && *(int64_t *)vg_tensor_data(o[1]) == 100 + i);
        vg_tensor_free(o[0]);
        vg_tensor_free(o[1]);
    }
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE); /* the shorter one ended */
    const char *want[3] = {"aaaa", "bbbb", "cccc"};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(vg_session_run1(s, vg_out(fnext, 0), &t, &st), &st);
        if (!t) break;
        size_t l;
        const char *x = vg_tensor_string(t, 0, &l);
        CHECK(l == 4 && memcmp(x, want[i], 4) == 0);
        vg_tensor_free(t);
    }
    ds_check_end_free(s, g, fnext, bnext, "not an exact multiple of the record length (4 bytes)");
}

/* x -> fill([x], x): elements [], [1], [2, 2], [3, 3, 3] */
static vg_code fill_x(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output d = vg_reshape_c(fg, vg_cast(fg, args[0], VG_INT32, NULL), (int64_t[]){1}, 1, NULL);
    outs[0] = vg_fill(fg, d, args[0], NULL);
    *nouts = 1;
    return VG_OK;
}

/* padded_batch_test.testPaddedBatchDataset-like: pad to the longest with -1 */
static void test_padded_batch(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 4, 1, NULL), fill_x, NULL, NULL);
    vg_shape longest = vg_shape_make((int64_t[]){-1}, 1), two = vg_shape_make((int64_t[]){2}, 1);
    vg_output pad = vg_const_i64(g, -1, "pad");
    vg_op *next = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_padded_batch(g, ds, 2, &longest, &pad, false, NULL), NULL), NULL);
    vg_op *bad = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_padded_batch(g, ds, 4, &two, NULL, false, NULL), NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
    if (t) {
        const int64_t *v = vg_tensor_data(t);
        CHECK(vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 1 && v[0] == -1 && v[1] == 1);
    }
    vg_tensor_free(t);
    CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
    if (t) {
        const int64_t *v = vg_tensor_data(t);
        CHECK(vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 3);
        CHECK(v[0] == 2 && v[1] == 2 && v[2] == -1 && v[3] == 3 && v[4] == 3 && v[5] == 3);
    }
    vg_tensor_free(t);
    ds_check_end_free(s, g, next, bad, "Attempted to pad to a smaller size than the input element");
}

DS_FN1(to_number, vg_string_to_number(fg, args[0], VG_INT64, NULL))

/* map_test.testParallelMap-like: num_parallel_calls 4 keeps the input order; an
 * element whose function fails gives its error at its position, and the next elements
 * follow. */
static void test_parallel_map(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t v[300];
    vg_code end;
    int calls = 0;
    int n = drain_i64(g, vg_dataset_map_parallel(g, vg_dataset_range(g, 0, 257, 1, NULL), times_two_plus_one, &calls, 4, NULL),
                      v, 300, &end);
    CHECK_EQ_INT(n, 257);
    bool inorder = true;
    for (int i = 0; i < n && i < 300; i++) inorder = inorder && v[i] == 2 * i + 1;
    CHECK(inorder);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    const char *strs[12] = {"0", "1", "2", "3", "4", "x5", "6", "7", "8", "9", "10", "11"};
    int64_t d12 = 12;
    vg_tensor *t = vg_tensor_new(VG_STRING, &d12, 1, &st);
    for (int i = 0; i < 12; i++) vg_tensor_set_string(t, i, strs[i], strlen(strs[i]), &st);
    vg_output sv = vg_const(g, t, "strs");
    vg_tensor_free(t);
    vg_op *next = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_map_parallel(g, vg_dataset_from_tensor_slices(g, &sv, 1, NULL), to_number,
                                                                NULL, 3, NULL),
                                     NULL),
        NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    for (int i = 0; i < 12; i++) {
        vg_tensor *o = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &o, &st);
        if (i == 5) {
            CHECK_STATUS(rc, &st, VG_INVALID_ARGUMENT, "x5");
        } else {
            CHECK_OK(rc, &st);
            if (o) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(o), i);
        }
        vg_tensor_free(o);
    }
    ds_check_end_free(s, g, next, NULL, NULL);
}

/* Feedable iterator (iterator_ops_test / reinitializable_iterator docs): one get_next fed
 * the string handle of a train or an eval iterator; each keeps its own position. */
static void test_feedable_iterator(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output train = vg_make_one_shot_iterator(g, vg_dataset_range(g, 0, 100, 1, NULL), "train_it");
    vg_output eval = vg_make_one_shot_iterator(g, vg_dataset_range(g, 1000, 1002, 1, NULL), "eval_it");
    vg_output th = vg_iterator_string_handle(g, train, NULL), eh = vg_iterator_string_handle(g, eval, NULL);
    vg_output handle = vg_placeholder(g, VG_STRING, NULL, 0, "handle");
    vg_output feedable = vg_iterator_from_string_handle(g, handle, train, NULL);
    vg_op *next = vg_iterator_get_next(g, feedable, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *hs[2] = {0};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){th, eh}, hs, 2, NULL, 0, NULL, &st), &st);
    const int order[5] = {0, 0, 1, 0, 1}; /* train, train, eval, train, eval */
    const int64_t want[5] = {0, 1, 1000, 2, 1001};
    for (int i = 0; i < 5 && hs[0]; i++) {
        vg_tensor *o = NULL;
        CHECK_OK(vg_session_run(s, NULL, &handle, &hs[order[i]], 1, (vg_output[]){vg_out(next, 0)}, &o, 1, NULL, 0, NULL,
                                &st),
                 &st);
        if (o) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(o), want[i]);
        vg_tensor_free(o);
    }
    vg_tensor *o = NULL;
    if (hs[1])
        CHECK_CODE(vg_session_run(s, NULL, &handle, &hs[1], 1, (vg_output[]){vg_out(next, 0)}, &o, 1, NULL, 0, NULL, &st),
                   VG_OUT_OF_RANGE);
    vg_tensor *bogus = vg_tensor_new_string_scalar("iterator:nope", 13, &st);
    CHECK_CODE(vg_session_run(s, NULL, &handle, &bogus, 1, (vg_output[]){vg_out(next, 0)}, &o, 1, NULL, 0, NULL, &st),
               VG_NOT_FOUND);
    kt_teardown(g, s, (vg_tensor *[]){bogus, hs[0], hs[1]}, 3, NULL, 0);
}

/* cache_test (memory cache): the second epoch of cache().repeat(2) replays the first
 * one: it works after the file was deleted, while without cache it fails. */
static void test_cache(void) {
    vg_status st;
    char path[256];
    snprintf(path, sizeof path, "%s/cached.tfrecord", g_dir);
    for (int cached = 1; cached >= 0; cached--) {
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
        for (int i = 0; i < 3; i++) {
            char r[8];
            snprintf(r, sizeof r, "r%d", i);
            vg_tfrecord_writer_write(w, r, 2, &st);
        }
        vg_tfrecord_writer_close(w, &st);
        vg_graph *g = vg_graph_new();
        vg_output ds = vg_dataset_tfrecord(g, vg_const_string(g, path, NULL), "", NULL);
        if (cached) ds = vg_dataset_cache(g, ds, NULL, NULL);
        ds = vg_dataset_repeat(g, ds, 2, NULL);
        vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
        vg_session *s = vg_session_new(g, NULL, &st);
        vg_tensor *t = NULL;
        for (int i = 0; i < 3; i++) {
            CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
            vg_tensor_free(t);
        }
        unlink(path);
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &t, &st); /* reaches the end of epoch 1 first */
        if (cached) {
            CHECK_OK(rc, &st);
            if (t) {
                size_t l;
                const char *x = vg_tensor_string(t, 0, &l);
                CHECK(l == 2 && memcmp(x, "r0", 2) == 0);
            }
            vg_tensor_free(t);
            for (int i = 1; i < 3; i++) {
                CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
                vg_tensor_free(t);
            }
            CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE);
        } else {
            CHECK_CODE(rc, VG_NOT_FOUND);
        }
        vg_session_free(s);
        vg_graph_free(g);
    }
}

/* Resumable input: range(20).shuffle(8, seed).repeat(2) read 13 elements, checkpointed
 * with a Saver, restored into a fresh session: it continues with element 13 of the
 * uninterrupted sequence, and the two sessions together consume each value exactly
 * twice (no element lost, none repeated). */
static vg_graph *resumable_graph(vg_op **next, vg_output *pos) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_shuffle(g, vg_dataset_range(g, 0, 20, 1, NULL), 8, 3, true, NULL);
    ds = vg_dataset_prefetch(g, vg_dataset_repeat(g, ds, 2, NULL), 2, NULL);
    *next = vg_iterator_get_next_resumable(g, vg_make_one_shot_iterator(g, ds, NULL), pos, NULL);
    return g;
}

static void test_resumable_iterator(void) {
    vg_status st;
    int64_t full[40], got[40];
    int nfull = 0, ngot = 0;
    vg_op *next;
    vg_output pos;
    /* the uninterrupted sequence */
    vg_graph *g = resumable_graph(&next, &pos);
    vg_session *s = initialized_session(g);
    vg_tensor *t = NULL;
    while (nfull < 40 && vg_session_run1(s, vg_out(next, 0), &t, &st) == VG_OK) {
        full[nfull++] = *(int64_t *)vg_tensor_data(t);
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(nfull, 40);
    CHECK_OK(vg_session_run1(s, pos, &t, &st), &st);
    if (t) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(t), 40);
    vg_tensor_free(t);
    vg_session_free(s);
    vg_graph_free(g);
    /* 13 elements, save */
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s/input.ckpt", g_dir);
    g = resumable_graph(&next, &pos);
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver_options so = {0};
    so.no_meta_graph = true;
    vg_saver *sv = vg_saver_new(g, &so, &st);
    CHECK(sv != NULL);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    for (int i = 0; i < 13; i++) {
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (t) got[ngot++] = *(int64_t *)vg_tensor_data(t);
        vg_tensor_free(t);
    }
    char path[300];
    CHECK_OK(vg_saver_save(sv, s, prefix, -1, path, sizeof path, &st), &st);
    /* elements consumed after the checkpoint are lost with the crash: read 3 more */
    for (int i = 0; i < 3; i++) {
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);
    /* a new process-like start: restore, continue */
    g = resumable_graph(&next, &pos);
    sv = vg_saver_new(g, &so, &st);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_saver_restore(sv, s, prefix, &st), &st);
    vg_code rc;
    while (ngot < 40 && (rc = vg_session_run1(s, vg_out(next, 0), &t, &st)) == VG_OK) {
        got[ngot++] = *(int64_t *)vg_tensor_data(t);
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(ngot, 40);
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE);
    CHECK(memcmp(got, full, sizeof full) == 0); /* the same sequence, resumed at element 13 */
    int count[20] = {0};
    for (int i = 0; i < ngot; i++)
        if (got[i] >= 0 && got[i] < 20) count[got[i]]++;
    bool twice = true;
    for (int i = 0; i < 20; i++) twice = twice && count[i] == 2;
    CHECK(twice);
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "data")[0]) return 1;
    RUN_TEST(test_range_take_skip_repeat);
    RUN_TEST(test_slices_batch);
    RUN_TEST(test_map);
    RUN_TEST(test_shuffle);
    RUN_TEST(test_initializable_iterator);
    RUN_TEST(test_errors);
    RUN_TEST(test_tfrecord_pipeline_monitored);
    RUN_TEST(test_prefetch_order_and_close);
    RUN_TEST(test_interleave_shard);
    RUN_TEST(test_list_files_text_lines);
    RUN_TEST(test_ignore_errors);
    RUN_TEST(test_more_transformations);
    RUN_TEST(test_padded_batch);
    RUN_TEST(test_parallel_map);
    RUN_TEST(test_feedable_iterator);
    RUN_TEST(test_cache);
    RUN_TEST(test_resumable_iterator);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
