/* test_data_window_reduce.c - Dataset.window (WindowDataset: a dataset of nested
 * datasets, read through flat_map) and Dataset.reduce (ReduceDataset), translated from
 * TF 1.15's tensorflow/python/data/kernel_tests/window_test.py and reduce_test.py (each
 * case names its TF test).
 *
 * Adaptations: TF's sparse-tensor cases become their dense analogues (vigil's tf.data has
 * no SparseTensor); from_generator (testWindowShapeError) becomes a map over range that
 * fills vectors of lengths 3, 3, 4; testSkipEagerSquareUsingPlaceholder captures an
 * outer-graph placeholder in the function, which vigil's dataset functions cannot (not
 * translated). */
#include "test_util.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "ds_run_util.h"
#include <math.h>

/* ------------------------------------------------------------------------ */
/* running a pipeline */

/* ------------------------------------------------------------------------ */
/* functions */

static vg_code square3_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)p;
    for (int i = 0; i < nargs; i++) outs[i] = vg_square(fg, args[i], NULL);
    *nouts = nargs;
    return VG_OK;
}

/* (x, y, z) -> zip(x.batch(size), y.batch(size), z.batch(size)) */
static vg_code zip_batch_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    int64_t size = *(const int64_t *)p;
    vg_output b[8];
    for (int i = 0; i < nargs; i++) b[i] = vg_dataset_batch(fg, args[i], size, false, NULL);
    outs[0] = nargs == 1 ? b[0] : vg_dataset_zip(fg, b, nargs, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* x -> x.batch(size) */
static vg_code batch_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    outs[0] = vg_dataset_batch(fg, args[0], *(const int64_t *)p, false, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* x -> x */
DS_FN1(identity_fn, args[0])

/* ------------------------------------------------------------------------ */
/* window_test.py */

/* components = (arange(7), [[1, 2, 3]] * arange(7)[:, None], 37.0 * arange(7)) */
static void components(vg_graph *g, vg_output *c) {
    int64_t a[7], b[21];
    double d[7];
    for (int i = 0; i < 7; i++) {
        a[i] = i, d[i] = 37.0 * i;
        for (int k = 0; k < 3; k++) b[i * 3 + k] = (k + 1) * i;
    }
    c[0] = vg_const_array(g, VG_INT64, (int64_t[]){7}, 1, a, NULL);
    c[1] = vg_const_array(g, VG_INT64, (int64_t[]){7, 3}, 2, b, NULL);
    c[2] = vg_const_array(g, VG_DOUBLE, (int64_t[]){7}, 1, d, NULL);
}

/* Row j of a result batch equals component k's element e squared. */
static bool row_is(vg_tensor *const *res, int j, int e) {
    const int64_t *x = vg_tensor_data(res[0]);
    const int64_t *y = vg_tensor_data(res[1]);
    const double *z = vg_tensor_data(res[2]);
    bool ok = x[j] == (int64_t)e * e && z[j] == (37.0 * e) * (37.0 * e);
    for (int k = 0; k < 3; k++) ok = ok && y[j * 3 + k] == (int64_t)((k + 1) * e) * ((k + 1) * e);
    return ok;
}

static void window_dataset_case(int count, int64_t size, int64_t shift, int64_t stride, bool drop) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c[3];
    components(g, c);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, c, 3, NULL), square3_fn, NULL, NULL);
    ds = vg_dataset_repeat(g, ds, count, NULL);
    ds = vg_dataset_window(g, ds, size, shift, stride, drop, NULL);
    ds = vg_dataset_flat_map(g, ds, zip_batch_fn, &size, NULL);
    /* the shapes: [None] + the components' element shapes */
    vg_dtype t[3];
    vg_shape s[3];
    CHECK_EQ_INT(vg_dataset_components(ds, t, s), 3);
    CHECK(s[0].ndims == 1 && s[0].dims[0] == -1);
    CHECK(s[1].ndims == 2 && s[1].dims[0] == -1 && s[1].dims[1] == 3);
    CHECK(s[2].ndims == 1 && s[2].dims[0] == -1);
    ds_run r;
    if (!ds_run_open(&r, g, ds)) return;
    CHECK_OK(ds_run_init(&r, &st), &st);
    int64_t n = count * 7;
    int64_t full = (n - ((size - 1) * stride + 1)) / shift + 1;
    if (n - ((size - 1) * stride + 1) < 0) full = 0;
    bool ok = true;
    for (int64_t i = 0; i < full && ok; i++) {
        vg_tensor *res[3] = {0};
        ok = ds_run_next(&r, res, &st) == VG_OK;
        CHECK_OK(st.code, &st);
        for (int j = 0; ok && j < size; j++) ok = vg_tensor_dim(res[0], 0) == size && row_is(res, j, (int)((i * shift + j * stride) % 7));
        ds_free_all(res, 3);
    }
    if (!drop) {
        int64_t partial = n / shift + (n % shift > 0) - full;
        for (int64_t i = 0; i < partial && ok; i++) {
            vg_tensor *res[3] = {0};
            ok = ds_run_next(&r, res, &st) == VG_OK;
            CHECK_OK(st.code, &st);
            int64_t remaining = n - (full + i) * shift;
            int64_t num = remaining / stride + (remaining % stride > 0);
            ok = ok && vg_tensor_dim(res[0], 0) == num;
            for (int j = 0; ok && j < num; j++) ok = row_is(res, j, (int)(((full + i) * shift + j * stride) % 7));
            ds_free_all(res, 3);
        }
    }
    if (!ok)
        fprintf(stderr, "testWindowDataset(count=%d, size=%lld, shift=%lld, stride=%lld, drop=%d) differs\n", count,
                (long long)size, (long long)shift, (long long)stride, drop);
    CHECK(ok);
    vg_tensor *res[3] = {0};
    CHECK_CODE(ds_run_next(&r, res, &st), VG_OUT_OF_RANGE);
    CHECK_CODE(ds_run_next(&r, res, &st), VG_OUT_OF_RANGE);
    ds_run_close(&r);
}

/* WindowTest.testWindowDataset */
static void test_window_dataset(void) {
    static const int64_t sizes[3] = {10, 14, 17}, shifts[2] = {7, 14}, strides[3] = {1, 2, 6};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++)
                for (int d = 0; d < 2; d++) window_dataset_case(20, sizes[a], shifts[b], strides[c], d);
    for (int count = 0; count <= 1; count++)
        for (int d = 0; d < 2; d++) window_dataset_case(count, 10, 4, 1, d);
}

/* WindowTest.testWindowDatasetInvalid: size 0, shift 0, stride 0 fail with
 * INVALID_ARGUMENT when the dataset is made */
static void test_window_dataset_invalid(void) {
    static const int64_t cases[3][3] = {{0, 3, 1}, {3, 0, 1}, {3, 3, 0}};
    static const char *const msgs[3] = {"Window size must be greater than zero.",
                                        "Window shift must be greater than zero.",
                                        "Window stride must be greater than zero."};
    for (int i = 0; i < 3; i++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        int64_t size = cases[i][0];
        vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 10, 1, NULL), identity_fn, NULL, NULL);
        ds = vg_dataset_repeat(g, ds, 20, NULL);
        ds = vg_dataset_window(g, ds, size, cases[i][1], cases[i][2], false, NULL);
        ds = vg_dataset_flat_map(g, ds, batch_fn, &size, NULL);
        ds_run r;
        if (!ds_run_open(&r, g, ds)) continue;
        CHECK_STATUS(ds_run_init(&r, &st), &st, VG_INVALID_ARGUMENT, msgs[i]);
        ds_run_close(&r);
    }
}

/* WindowTest.testWindowDifferentNestedStructures: from_tensor_slices(([1, 2], [3, 4]))
 * .window(2) gives one element of two datasets (read here through flat_map + zip) */
static void test_window_different_nested_structures(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c[2] = {vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 2}, NULL),
                      vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){3, 4}, NULL)};
    vg_output w = vg_dataset_window(g, vg_dataset_from_tensor_slices(g, c, 2, NULL), 2, -1, 1, false, NULL);
    vg_dtype t[2];
    CHECK_EQ_INT(vg_dataset_components(w, t, NULL), 2);
    CHECK(t[0] == VG_RESOURCE && t[1] == VG_RESOURCE);
    int64_t size = 2;
    ds_run r;
    if (!ds_run_open(&r, g, vg_dataset_flat_map(g, w, zip_batch_fn, &size, NULL))) return;
    CHECK_OK(ds_run_init(&r, &st), &st);
    vg_tensor *res[2] = {0};
    CHECK_OK(ds_run_next(&r, res, &st), &st);
    if (res[0] && res[1]) {
        const int32_t *a = vg_tensor_data(res[0]), *b = vg_tensor_data(res[1]);
        CHECK(a[0] == 1 && a[1] == 2 && b[0] == 3 && b[1] == 4);
    }
    ds_free_all(res, 2);
    CHECK_CODE(ds_run_next(&r, res, &st), VG_OUT_OF_RANGE);
    ds_run_close(&r);
}

/* i -> fill([3 + i / 2], i): vectors of lengths 3, 3, 4 */
static vg_code lengths_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output n = vg_add(fg, vg_floor_div(fg, args[0], vg_const_i64(fg, 2, NULL), NULL), vg_const_i64(fg, 3, NULL), NULL);
    outs[0] = vg_fill(fg, vg_reshape_c(fg, vg_cast(fg, n, VG_INT32, NULL), (const int64_t[]){1}, 1, NULL),
                      vg_cast(fg, args[0], VG_FLOAT, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* WindowTest.testWindowShapeError: a window of elements of shapes [3], [3], [4] cannot
 * be batched (TF's message) */
static void test_window_shape_error(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 3, 1, NULL), lengths_fn, NULL, NULL);
    ds = vg_dataset_window(g, ds, 3, 1, 1, false, NULL);
    int64_t size = 3;
    ds_run r;
    if (!ds_run_open(&r, g, vg_dataset_flat_map(g, ds, batch_fn, &size, NULL))) return;
    CHECK_OK(ds_run_init(&r, &st), &st);
    vg_tensor *res[1] = {0};
    CHECK_CODE(ds_run_next(&r, res, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Cannot batch tensors with different shapes in component 0. First element had shape "
                               "[3] and element 2 had shape [4].");
    ds_run_close(&r);
}

DS_FN1(check_fn, vg_check_numerics(fg, args[0], "message", NULL))

/* Runs the pipeline ds on g from its initializer to its end, handing each element's
 * components to each(t, nout, u) (freed after it; each returning false stops the drain,
 * that element not counted); every run must succeed. The count of elements handed
 * over, -1 when the pipeline cannot be opened. */
typedef bool (*drain_fn)(vg_tensor *const *t, int nout, void *u);
static int drain(vg_graph *g, vg_output ds, drain_fn each, void *u) {
    vg_status st;
    ds_run r;
    if (!ds_run_open(&r, g, ds)) return -1;
    CHECK_OK(ds_run_init(&r, &st), &st);
    int n = 0;
    for (;;) {
        vg_tensor *t[8] = {0};
        vg_code rc = ds_run_next(&r, t, &st);
        if (rc == VG_OUT_OF_RANGE) break;
        CHECK_OK(rc, &st);
        bool more = rc == VG_OK && each(t, r.nout, u);
        ds_free_all(t, r.nout);
        if (!more) break;
        n++;
    }
    ds_run_close(&r);
    return n;
}

/* Where drain_f32 / drain_i64 put the values: v[k++], element lengths len[n++] (f32),
 * the first element's shape (i64, when first_shape is set). */
typedef struct sink {
    void *v;
    int64_t *len, *first_shape;
    int max, n, k, *rank;
} sink;

static bool each_f32(vg_tensor *const *t, int nout, void *u) {
    (void)nout;
    sink *a = u;
    if (a->n == a->max) return false;
    a->len[a->n++] = vg_tensor_num_elements(t[0]);
    for (int64_t i = 0; i < vg_tensor_num_elements(t[0]); i++)
        ((float *)a->v)[a->k++] = ((const float *)vg_tensor_data(t[0]))[i];
    return true;
}

/* Drains a pipeline of one float vector per element into v (row after row); the count
 * of elements, their lengths in len. */
static int drain_f32(vg_graph *g, vg_output ds, float *v, int64_t *len, int max) {
    sink a = {.v = v, .len = len, .max = max};
    return drain(g, ds, each_f32, &a);
}

/* WindowTest.testWindowIgnoreErrors: from_tensor_slices([1, nan, 2, nan, 3])
 * .map(check_numerics).window(2, 2, 2, drop_remainder).flat_map(batch(2)) ->
 * [1, 2], [2, 3]: the failing elements sit where the stride skips them */
static void test_window_ignore_errors(void) {
    vg_graph *g = vg_graph_new();
    float in[5] = {1, NAN, 2, NAN, 3};
    vg_output c = vg_const_array(g, VG_FLOAT, (int64_t[]){5}, 1, in, NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), check_fn, NULL, NULL);
    ds = vg_dataset_window(g, ds, 2, 2, 2, true, NULL);
    int64_t size = 2;
    float v[16];
    int64_t len[8];
    int n = drain_f32(g, vg_dataset_flat_map(g, ds, batch_fn, &size, NULL), v, len, 8);
    CHECK_EQ_INT(n, 2);
    if (n == 2) CHECK(len[0] == 2 && len[1] == 2 && v[0] == 1 && v[1] == 2 && v[2] == 2 && v[3] == 3);
}

/* A window whose own element fails: the window fails with that error (the first
 * element of window 1, position 2 of [1, 2, nan, 4]) and the next window follows. */
static void test_window_error_in_window(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    float in[4] = {1, 2, NAN, 4};
    vg_output c = vg_const_array(g, VG_FLOAT, (int64_t[]){4}, 1, in, NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), check_fn, NULL, NULL);
    int64_t size = 2;
    ds = vg_dataset_flat_map(g, vg_dataset_window(g, ds, 2, 1, 1, true, NULL), batch_fn, &size, NULL);
    ds_run r;
    if (!ds_run_open(&r, g, ds)) return;
    CHECK_OK(ds_run_init(&r, &st), &st);
    vg_tensor *t[1] = {0};
    CHECK_OK(ds_run_next(&r, t, &st), &st); /* [1, 2] */
    if (t[0]) CHECK(((const float *)vg_tensor_data(t[0]))[1] == 2);
    vg_tensor_free(t[0]);
    CHECK_STATUS(ds_run_next(&r, t, &st), &st, VG_INVALID_ARGUMENT, "message"); /* [2, nan] */
    CHECK_CODE(ds_run_next(&r, t, &st), VG_INVALID_ARGUMENT); /* [nan, 4] */
    CHECK_CODE(ds_run_next(&r, t, &st), VG_OUT_OF_RANGE);
    ds_run_close(&r);
}

static bool each_i64(vg_tensor *const *t, int nout, void *u) {
    sink *a = u;
    if (a->n++ == 0 && a->first_shape) {
        *a->rank = vg_tensor_ndims(t[0]);
        for (int d = 0; d < *a->rank; d++) a->first_shape[d] = vg_tensor_dim(t[0], d);
    }
    for (int c = 0; c < nout; c++)
        for (int64_t i = 0; i < vg_tensor_num_elements(t[c]) && a->k < a->max; i++)
            ((int64_t *)a->v)[a->k++] = ((const int64_t *)vg_tensor_data(t[c]))[i];
    return true;
}

/* Drains int64 elements (each flattened) into v; returns the count of values. */
static int drain_i64(vg_graph *g, vg_output ds, int64_t *v, int max, int64_t *first_shape, int *rank) {
    sink a = {.v = v, .first_shape = first_shape, .rank = rank, .max = max};
    return drain(g, ds, each_i64, &a) < 0 ? -1 : a.k;
}

/* WindowTest.testDropRemainderOutput: range(100).window(30, drop_remainder)
 * .flat_map(batch(30)).batch(4) -> one element [[y + 30 x for y < 30] for x < 3] */
static void test_window_drop_remainder_output(void) {
    vg_graph *g = vg_graph_new();
    int64_t size = 30;
    vg_output ds = vg_dataset_window(g, vg_dataset_range(g, 0, 100, 1, NULL), 30, -1, 1, true, NULL);
    ds = vg_dataset_batch(g, vg_dataset_flat_map(g, ds, batch_fn, &size, NULL), 4, false, NULL);
    int64_t v[200], shape[4];
    int rank = 0;
    int n = drain_i64(g, ds, v, 200, shape, &rank);
    CHECK_EQ_INT(n, 90);
    CHECK(rank == 2 && shape[0] == 3 && shape[1] == 30);
    bool ok = true;
    for (int i = 0; i < n && i < 90; i++) ok = ok && v[i] == i;
    CHECK(ok);
}

/* WindowTest.testNestedOutput: zip(range(100), range(100)).window(10): window i's two
 * datasets each produce range(i * 10, (i + 1) * 10) (read through flat_map + zip) */
static void test_window_nested_output(void) {
    vg_graph *g = vg_graph_new();
    vg_output r2[2] = {vg_dataset_range(g, 0, 100, 1, NULL), vg_dataset_range(g, 0, 100, 1, NULL)};
    int64_t size = 10;
    vg_output ds = vg_dataset_window(g, vg_dataset_zip(g, r2, 2, NULL), 10, -1, 1, false, NULL);
    ds = vg_dataset_flat_map(g, ds, zip_batch_fn, &size, NULL);
    int64_t v[256];
    int n = drain_i64(g, ds, v, 256, NULL, NULL);
    CHECK_EQ_INT(n, 200);
    bool ok = true;
    for (int i = 0; i < 10 && n == 200; i++)
        for (int j = 0; j < 10; j++) ok = ok && v[i * 20 + j] == i * 10 + j && v[i * 20 + 10 + j] == i * 10 + j;
    CHECK(ok);
}

/* WindowTest.testName: from_tensors(42).window(1).flat_map(lambda x: x) -> [42] */
static void test_window_identity_flat_map(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_i64(g, 42, NULL);
    vg_output ds = vg_dataset_window(g, vg_dataset_from_tensors(g, &c, 1, NULL), 1, -1, 1, false, "window");
    int64_t v[4];
    int n = drain_i64(g, vg_dataset_flat_map(g, ds, identity_fn, NULL, NULL), v, 4, NULL, NULL);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK(v[0] == 42);
}

/* WindowTest.testNestedWindowSparse, dense: range(10).window(4, 2, drop).flat_map(
 * batch(4)).window(3, 1, drop).flat_map(batch(3)) -> [[0..3], [2..5], [4..7]],
 * [[2..5], [4..7], [6..9]] */
static void test_window_nested(void) {
    vg_graph *g = vg_graph_new();
    int64_t four = 4, three = 3;
    vg_output ds = vg_dataset_window(g, vg_dataset_range(g, 0, 10, 1, NULL), 4, 2, 1, true, NULL);
    ds = vg_dataset_flat_map(g, ds, batch_fn, &four, NULL);
    ds = vg_dataset_window(g, ds, 3, 1, 1, true, NULL);
    ds = vg_dataset_flat_map(g, ds, batch_fn, &three, NULL);
    int64_t v[64], shape[4];
    int rank = 0;
    int n = drain_i64(g, ds, v, 64, shape, &rank);
    CHECK_EQ_INT(n, 24);
    CHECK(rank == 2 && shape[0] == 3 && shape[1] == 4);
    static const int64_t exp[24] = {0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9};
    CHECK(n == 24 && memcmp(v, exp, sizeof exp) == 0);
}

/* checkpoints: the pipeline's iterator saved after k elements (SerializeIterator) and
 * restored into a new graph and session (DeserializeIterator, no initializer) yields
 * the rest of the uninterrupted run's elements (ds_checkpoint_breaks, ds_run_util.h) */

/* WindowCheckpointTest: range(42).window(6).interleave(lambda x: x, cycle_length=2,
 * num_parallel_calls=2), 42 outputs */
static vg_output ds_window_interleave(vg_graph *g) {
    vg_output w = vg_dataset_window(g, vg_dataset_range(g, 0, 42, 1, NULL), 6, -1, 1, false, NULL);
    return vg_dataset_interleave_parallel(g, w, identity_fn, NULL, 2, 1, 2, NULL);
}
/* the same, sequential interleave */
static vg_output ds_window_interleave_seq(vg_graph *g) {
    vg_output w = vg_dataset_window(g, vg_dataset_range(g, 0, 42, 1, NULL), 6, -1, 1, false, NULL);
    return vg_dataset_interleave(g, w, identity_fn, NULL, 2, 1, NULL);
}
/* windows that overlap and skip (the buffer holds elements between windows, and the
 * saved buffer an error): range(20) with element 7 failing, .window(5, 2, 2)
 * .flat_map(batch(5)): the windows start at even elements and take every second, so
 * 7 is in none of them (10 windows, the last four partial) */
static vg_code fail7_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output f = vg_cast(fg, args[0], VG_FLOAT, NULL);
    vg_output bad = vg_div(fg, vg_const_f32(fg, 1, NULL), vg_sub(fg, f, vg_const_f32(fg, 7, NULL), NULL), NULL);
    outs[0] = vg_add(fg, args[0], vg_cast(fg, vg_mul(fg, vg_check_numerics(fg, bad, "seven", NULL),
                                                        vg_const_f32(fg, 0, NULL), NULL), VG_INT64, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
static vg_output ds_window_buffered(vg_graph *g) {
    static int64_t five = 5;
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 20, 1, NULL), fail7_fn, NULL, NULL);
    ds = vg_dataset_window(g, ds, 5, 2, 2, false, NULL);
    return vg_dataset_flat_map(g, ds, batch_fn, &five, NULL);
}

static void test_window_checkpoint(void) {
    static const int br[] = {0, 1, 5, 13, 21, 41, 42};
    ds_checkpoint_breaks("WindowCheckpointTest (parallel interleave)", ds_window_interleave, br, 7, NULL);
    ds_checkpoint_breaks("WindowCheckpointTest (interleave)", ds_window_interleave_seq, br, 7, NULL);
    static const int br2[] = {0, 1, 2, 3, 4, 7, 9, 10};
    ds_checkpoint_breaks("window with a buffer", ds_window_buffered, br2, 8, NULL);
}

/* ------------------------------------------------------------------------ */
/* reduce_test.py */

static vg_code add_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)p;
    outs[0] = args[0];
    for (int i = 1; i < nargs; i++) outs[0] = vg_add(fg, outs[0], args[i], NULL);
    *nouts = 1;
    return VG_OK;
}

/* Runs the reduce's outputs (n of them) into v. */
static vg_code run_reduce(vg_graph *g, const vg_output *outs, int n, int64_t *v, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return st->code;
    vg_tensor *t[4] = {0};
    vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, outs, t, n, NULL, 0, NULL, st);
    for (int i = 0; rc == VG_OK && i < n; i++) v[i] = *(const int64_t *)vg_tensor_data(t[i]);
    ds_free_all(t, n);
    vg_session_free(s);
    return rc;
}

/* ReduceTest.testSum: range(1, i + 1).reduce(0, x + y) = (i + 1) i / 2 */
static void test_reduce_sum(void) {
    for (int i = 0; i < 10; i++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output init = vg_const_i64(g, 0, NULL), out;
        CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_range(g, 1, i + 1, 1, NULL), &init, 1, add_fn, NULL, &out, NULL), 1);
        int64_t v = -1;
        CHECK_OK(run_reduce(g, &out, 1, &v, &st), &st);
        CHECK(v == (int64_t)(i + 1) * i / 2);
        vg_graph_free(g);
    }
}

/* ReduceTest.testSumTuple: zip(ds, ds).reduce(0, state + v1 + v2) = (i + 1) i */
static void test_reduce_sum_tuple(void) {
    for (int i = 0; i < 10; i++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output r2[2] = {vg_dataset_range(g, 1, i + 1, 1, NULL), vg_dataset_range(g, 1, i + 1, 1, NULL)};
        vg_output init = vg_const_i64(g, 0, NULL), out;
        CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_zip(g, r2, 2, NULL), &init, 1, add_fn, NULL, &out, NULL), 1);
        int64_t v = -1;
        CHECK_OK(run_reduce(g, &out, 1, &v, &st), &st);
        CHECK(v == (int64_t)(i + 1) * i);
        vg_graph_free(g);
    }
}

static vg_code sum_count_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_add(fg, args[0], args[2], NULL);
    outs[1] = vg_add(fg, args[1], vg_const_i64(fg, 1, NULL), NULL);
    *nouts = 2;
    return VG_OK;
}

/* ReduceTest.testSumAndCount: state (s, c) -> (s + value, c + 1) */
static void test_reduce_sum_and_count(void) {
    for (int i = 0; i < 10; i++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output init[2] = {vg_const_i64(g, 0, NULL), vg_const_i64(g, 0, NULL)}, out[2];
        CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_range(g, 1, i + 1, 1, NULL), init, 2, sum_count_fn, NULL, out, NULL),
                     2);
        int64_t v[2] = {-1, -1};
        CHECK_OK(run_reduce(g, out, 2, v, &st), &st);
        CHECK(v[0] == (int64_t)(i + 1) * i / 2 && v[1] == i);
        vg_graph_free(g);
    }
}

DS_FN1(last_fn, args[1])

/* ReduceTest.testSparse, dense: from_tensors(i + 1).reduce(0, lambda _, value: value) */
static void test_reduce_last_value(void) {
    for (int i = 0; i < 10; i++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output c = vg_const_i64(g, i + 1, NULL);
        vg_output init = vg_const_i64(g, 0, NULL), out;
        CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_from_tensors(g, &c, 1, NULL), &init, 1, last_fn, NULL, &out, NULL),
                     1);
        int64_t v = -1;
        CHECK_OK(run_reduce(g, &out, 1, &v, &st), &st);
        CHECK(v == i + 1);
        vg_graph_free(g);
    }
}

DS_FN1(to_float_fn, vg_cast(fg, vg_add(fg, args[0], args[1], NULL), VG_FLOAT, NULL))

/* ReduceTest.testIncorrectStateType (TF 1.15: a TypeError while tracing): a new state
 * of another dtype is a build error */
static void test_reduce_incorrect_state_type(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output init = vg_const_i64(g, 0, NULL), out = {0};
    CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_range(g, 0, 3, 1, NULL), &init, 1, to_float_fn, NULL, &out, NULL), 0);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "The element types for the new state must match the initial state.");
    vg_graph_free(g);
}

static vg_code append_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output v[2] = {args[0], vg_reshape_c(fg, args[1], (const int64_t[]){1}, 1, NULL)};
    outs[0] = vg_concat_c(fg, v, 2, 0, NULL);
    *nouts = 1;
    return VG_OK;
}

/* A state whose shape changes (TF retraces the function with the shape relaxed):
 * range(1, 6).reduce([], concat(state, [x])) = [1, 2, 3, 4, 5]; an empty dataset gives
 * the initial state. */
static void test_reduce_growing_state(void) {
    for (int stop = 1; stop <= 6; stop += 5) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output init = vg_const_array(g, VG_INT64, (int64_t[]){0}, 1, NULL, NULL), out;
        CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_range(g, 1, stop, 1, NULL), &init, 1, append_fn, NULL, &out, NULL),
                     1);
        CHECK(vg_output_shape(out).ndims == -1);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK(s != NULL);
        vg_tensor *t = NULL;
        if (s) CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &out, &t, 1, NULL, 0, NULL, &st), &st);
        if (t) {
            CHECK_EQ_INT((int)vg_tensor_num_elements(t), stop - 1);
            for (int i = 0; i < stop - 1 && i < vg_tensor_num_elements(t); i++)
                CHECK(((const int64_t *)vg_tensor_data(t))[i] == i + 1);
        }
        vg_tensor_free(t);
        vg_session_free(s);
        vg_graph_free(g);
    }
}

/* An element's error fails the reduce's run with that error. */
static void test_reduce_error(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    float in[3] = {1, NAN, 2};
    vg_output c = vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, in, NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), check_fn, NULL, NULL);
    vg_output init = vg_const_f32(g, 0, NULL), out;
    CHECK_EQ_INT(vg_dataset_reduce(g, ds, &init, 1, add_fn, NULL, &out, NULL), 1);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_tensor *t = NULL;
    if (s) CHECK_CODE(vg_session_run(s, NULL, NULL, NULL, 0, &out, &t, 1, NULL, 0, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "message");
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

/* window + reduce together (TF's idiom for a sliding sum): range(6).window(3, 1,
 * drop).flat_map(batch(3)) then the sum of every window's values: 0+1+2 + 1+2+3 + 2+3+4
 * + 3+4+5 = 30 */
DS_FN1(sum_vec_fn, vg_add(fg, args[0], vg_reduce_sum(fg, args[1], NULL, -1, false, NULL), NULL))

static void test_window_then_reduce(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t size = 3;
    vg_output ds = vg_dataset_window(g, vg_dataset_range(g, 0, 6, 1, NULL), 3, 1, 1, true, NULL);
    ds = vg_dataset_flat_map(g, ds, batch_fn, &size, NULL);
    vg_output init = vg_const_i64(g, 0, NULL), out;
    CHECK_EQ_INT(vg_dataset_reduce(g, ds, &init, 1, sum_vec_fn, NULL, &out, NULL), 1);
    int64_t v = -1;
    CHECK_OK(run_reduce(g, &out, 1, &v, &st), &st);
    CHECK(v == 30);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_window_dataset);
    RUN_TEST(test_window_dataset_invalid);
    RUN_TEST(test_window_different_nested_structures);
    RUN_TEST(test_window_shape_error);
    RUN_TEST(test_window_ignore_errors);
    RUN_TEST(test_window_error_in_window);
    RUN_TEST(test_window_drop_remainder_output);
    RUN_TEST(test_window_nested_output);
    RUN_TEST(test_window_identity_flat_map);
    RUN_TEST(test_window_nested);
    RUN_TEST(test_window_checkpoint);
    RUN_TEST(test_reduce_sum);
    RUN_TEST(test_reduce_sum_tuple);
    RUN_TEST(test_reduce_sum_and_count);
    RUN_TEST(test_reduce_last_value);
    RUN_TEST(test_reduce_incorrect_state_type);
    RUN_TEST(test_reduce_growing_state);
    RUN_TEST(test_reduce_error);
    RUN_TEST(test_window_then_reduce);
    TEST_MAIN_END();
}
