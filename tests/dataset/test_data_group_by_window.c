/* test_data_group_by_window.c - tf.contrib.data.group_by_window (GroupByWindowDataset),
 * translated from TF 1.15's
 * tensorflow/python/data/experimental/kernel_tests/group_by_window_test.py (each case
 * names its TF test).
 *
 * Adaptations: the string component of testSingleBucket / testEvenOddBuckets
 * (fill([3], as_string(v))) becomes fill([3], v * 10) (int64); testSimple's random
 * components come from a fixed LCG; testReduceFuncError's negative padded shape becomes
 * a reduce function whose padded batch pads to a smaller size than an element (the
 * run-time INVALID_ARGUMENT of padded_batch); testConsumeWindowDatasetMoreThanOnce is
 * not translated (its second padded_shapes is a tensor computed from the key, which
 * vg_dataset_padded_batch takes only as constants). Added: the build-time errors, a
 * captured value in reduce_func, a multi-component window, and iterator checkpoints (save
 * after k elements, restore into a new graph, the rest must follow: TF's
 * GroupByWindowDataset save / restore, with and without captured values). */
#include "test_util.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"
#include "ds_run_util.h"
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* running a pipeline */

/* ds_run_open, then the initializer run (checked) */
static bool run_open(ds_run *r, vg_graph *g, vg_output ds) {
    vg_status st;
    if (!ds_run_open(r, g, ds)) return false;
    CHECK_OK(ds_run_init(r, &st), &st);
    return true;
}

static const int64_t *i64(const vg_tensor *t) { return vg_tensor_data(t); }

/* Checks that the next element's component 0 is the int64 vector v[0..n). */
static void expect_next(ds_run *r, const int64_t *v, int n) {
    vg_status st;
    vg_tensor *t[8] = {0};
    vg_code rc = ds_run_next(r, t, &st);
    CHECK_OK(rc, &st);
    if (rc != VG_OK) return;
    CHECK_EQ_INT(vg_tensor_num_elements(t[0]), n);
    bool same = vg_tensor_num_elements(t[0]) == n && memcmp(i64(t[0]), v, sizeof(int64_t) * (size_t)n) == 0;
    CHECK(same);
    ds_free_all(t, r->nout);
}

/* The next element's component 0 (a new tensor), or NULL at the end or after an error
 * (checked to be OK); for elements of one component. */
static vg_tensor *next_or_end(ds_run *r) {
    vg_status st;
    vg_tensor *t[1] = {0};
    vg_code rc = ds_run_next(r, t, &st);
    if (rc == VG_OUT_OF_RANGE) return NULL;
    CHECK_OK(rc, &st);
    return rc ? NULL : t[0];
}

/* 0 when the int64 values of t are all even (or there are none), 1 when all odd, else -1. */
static int parity_of(const vg_tensor *t) {
    bool even = true, odd = true;
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) even = even && i64(t)[i] % 2 == 0, odd = odd && i64(t)[i] % 2 == 1;
    return even ? 0 : odd ? 1 : -1;
}

static void expect_end(ds_run *r) {
    vg_status st;
    vg_tensor *t[8] = {0};
    CHECK_CODE(ds_run_next(r, t, &st), VG_OUT_OF_RANGE);
}

/* ------------------------------------------------------------------------ */
/* functions */

/* x % m (int64), m in *(int64_t *)p */
static vg_code mod_key(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    outs[0] = vg_floor_mod(fg, args[0], vg_const_i64(fg, *(const int64_t *)p, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* (key, xs) -> xs.batch(4) */
DS_FN1(batch4_reduce, vg_dataset_batch(fg, args[1], 4, false, NULL))
/* (key, xs) -> xs.batch(20) */
DS_FN1(batch20_reduce, vg_dataset_batch(fg, args[1], 20, false, NULL))
/* (key, window) -> window.batch(1) */
DS_FN1(batch1_reduce, vg_dataset_batch(fg, args[1], 1, false, NULL))
/* (key, xs) -> xs */
DS_FN1(identity_reduce, args[1])
/* x -> x */
DS_FN1(identity_key, args[0])
/* _ -> 0 */
DS_FN1(zero_key, vg_const_i64(fg, 0, NULL))
/* x -> x // 10 */
DS_FN1(div10_key, vg_floor_div(fg, args[0], vg_const_i64(fg, 10, NULL), NULL))
/* (key, window) -> from_tensors(key) */
DS_FN1(key_reduce, vg_dataset_from_tensors(fg, &args[0], 1, NULL))
/* key -> [5, 10][key] */
DS_FN1(window_size_5_10, vg_gather(fg, vg_const_array(fg, VG_INT64, (int64_t[]){2}, 1, (int64_t[]){5, 10}, NULL), args[0],
                                   0, NULL))

/* ------------------------------------------------------------------------ */
/* _dynamicPad cases: elements (v, fill([v], v), fill([3], 10 v)) */

static vg_code map3(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output v = args[0];
    outs[0] = v;
    outs[1] = vg_fill(fg, vg_expand_dims(fg, vg_cast(fg, v, VG_INT32, NULL), 0, NULL), v, NULL);
    outs[2] = vg_fill(fg, vg_const_array(fg, VG_INT32, (int64_t[]){1}, 1, (int32_t[]){3}, NULL),
                      vg_mul(fg, v, vg_const_i64(fg, 10, NULL), NULL), NULL);
    *nouts = 3;
    return vg_graph_status(fg, NULL);
}

/* (x, y, z) -> x % 2 */
static vg_code even_odd_key(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_floor_mod(fg, args[0], vg_const_i64(fg, 2, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* zip(from_tensors(bucket), window.padded_batch(32, ([], [None], [3]))) */
static vg_code dynamic_pad(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_shape ps[3] = {vg_shape_make(NULL, 0), vg_shape_make((int64_t[]){-1}, 1), vg_shape_make((int64_t[]){3}, 1)};
    vg_output z[2] = {vg_dataset_from_tensors(fg, &args[0], 1, NULL),
                      vg_dataset_padded_batch(fg, args[1], 32, ps, NULL, false, NULL)};
    outs[0] = vg_dataset_zip(fg, z, 2, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

static vg_output map3_range(vg_graph *g, int64_t n) {
    return vg_dataset_map(g, vg_dataset_range(g, 0, n, 1, NULL), map3, NULL, NULL);
}

/* Checks a padded bucket: x = first, first + step, ... (32 of them), y[i] = x[i] repeated
 * x[i] times then zeros, z[i] = 10 x[i] three times. */
static void check_bucket(vg_tensor *const *t, int64_t bucket, int64_t first, int64_t step) {
    CHECK_EQ_INT(i64(t[0])[0], bucket);
    CHECK_EQ_INT(vg_tensor_num_elements(t[1]), 32);
    int64_t width = first + 31 * step;
    CHECK_EQ_INT(vg_tensor_shape(t[2]).dims[1], width);
    bool ok = vg_tensor_num_elements(t[2]) == 32 * width && vg_tensor_num_elements(t[3]) == 32 * 3;
    for (int64_t i = 0; ok && i < 32; i++) {
        int64_t x = first + i * step;
        ok = i64(t[1])[i] == x;
        for (int64_t j = 0; ok && j < width; j++) ok = i64(t[2])[i * width + j] == (j < x ? x : 0);
        for (int j = 0; ok && j < 3; j++) ok = i64(t[3])[i * 3 + j] == 10 * x;
    }
    CHECK(ok);
}

/* testSingleBucket */
static void test_single_bucket(void) {
    vg_graph *g = vg_graph_new();
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, map3_range(g, 32), zero_key, dynamic_pad, 32, NULL, NULL, NULL)))
        return;
    vg_status st;
    vg_tensor *t[4] = {0};
    CHECK_EQ_INT(r.nout, 4);
    CHECK_OK(ds_run_next(&r, t, &st), &st);
    if (t[0]) check_bucket(t, 0, 0, 1);
    ds_free_all(t, 4);
    expect_end(&r);
    ds_run_close(&r);
}

/* testEvenOddBuckets */
static void test_even_odd_buckets(void) {
    vg_graph *g = vg_graph_new();
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, map3_range(g, 64), even_odd_key, dynamic_pad, 32, NULL, NULL,
                                                    NULL)))
        return;
    vg_status st;
    vg_tensor *t[4] = {0};
    CHECK_OK(ds_run_next(&r, t, &st), &st);
    if (t[0]) check_bucket(t, 0, 0, 2);
    ds_free_all(t, 4);
    memset(t, 0, sizeof t);
    CHECK_OK(ds_run_next(&r, t, &st), &st);
    if (t[0]) check_bucket(t, 1, 1, 2);
    ds_free_all(t, 4);
    expect_end(&r);
    ds_run_close(&r);
}

/* testEvenOddBucketsFilterOutAllOdd (the dict elements as a tuple) */
DS_FN1(is_even3, vg_equal(fg, vg_floor_mod(fg, args[0], vg_const_i64(fg, 2, NULL), NULL), vg_const_i64(fg, 0, NULL), NULL))
static void test_even_odd_buckets_filter_out_all_odd(void) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_filter(g, map3_range(g, 128), is_even3, NULL, NULL);
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, ds, even_odd_key, dynamic_pad, 32, NULL, NULL, NULL))) return;
    vg_status st;
    for (int b = 0; b < 2; b++) {
        vg_tensor *t[4] = {0};
        CHECK_OK(ds_run_next(&r, t, &st), &st);
        if (t[0]) check_bucket(t, 0, 64 * b, 2);
        ds_free_all(t, 4);
    }
    expect_end(&r);
    ds_run_close(&r);
}

/* testDynamicWindowSize: range(100), even/odd keys, window sizes 5 / 10, batch(20) */
static void test_dynamic_window_size(void) {
    vg_graph *g = vg_graph_new();
    static int64_t two = 2;
    vg_output ds = vg_dataset_group_by_window(g, vg_dataset_range(g, 0, 100, 1, NULL), mod_key, batch20_reduce, -1,
                                              window_size_5_10, &two, NULL);
    ds_run r;
    if (!run_open(&r, g, ds)) return;
    int batches = 0;
    for (vg_tensor *t; (t = next_or_end(&r)) != NULL; batches++) {
        int64_t n = vg_tensor_num_elements(t);
        int parity = parity_of(t);
        CHECK(parity >= 0);
        CHECK_EQ_INT(n, parity == 0 ? 5 : 10);
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(batches, 15);
    ds_run_close(&r);
}

/* testSimple: 200 values in [0, 100) squared, grouped by parity in windows of 4 */
static vg_code square_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_mul(fg, args[0], args[0], NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
static void test_simple(void) {
    int64_t comp[200];
    uint64_t x = 12345;
    for (int i = 0; i < 200; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        comp[i] = (int64_t)((x >> 33) % 100);
    }
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_array(g, VG_INT64, (int64_t[]){200}, 1, comp, NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), square_fn, NULL, NULL);
    static int64_t two = 2;
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, ds, mod_key, batch4_reduce, 4, NULL, &two, NULL))) return;
    int counts[256], nc = 0;
    int64_t total = 0;
    for (vg_tensor *t; (t = next_or_end(&r)) != NULL;) {
        int64_t n = vg_tensor_num_elements(t);
        CHECK(parity_of(t) >= 0);
        if (nc < 256) counts[nc++] = (int)n;
        total += n;
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(total, 200);
    int full = 0;
    for (int i = 0; i < nc; i++) full += counts[i] == 4;
    CHECK(full >= 24);
    for (int i = 0; i < full; i++) CHECK_EQ_INT(counts[i], 4);
    ds_run_close(&r);
}

/* testImmediateOutput: an infinite input; the buckets come out as they fill */
static void test_immediate_output(void) {
    static const int64_t comp[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 0, 2, 2, 0, 0};
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_array(g, VG_INT64, (int64_t[]){16}, 1, comp, NULL);
    vg_output ds = vg_dataset_repeat(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), -1, NULL);
    static int64_t three = 3;
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, ds, mod_key, batch4_reduce, 4, NULL, &three, NULL))) return;
    for (int k = 0; k < 3; k++) {
        expect_next(&r, (int64_t[]){0, 0, 0, 0}, 4);
        expect_next(&r, (int64_t[]){1, 1, 1, 1}, 4);
        expect_next(&r, (int64_t[]){2, 2, 2, 2}, 4);
        expect_next(&r, (int64_t[]){0, 0, 0, 0}, 4);
    }
    ds_run_close(&r);
}

/* testSmallGroups: the partial groups at the end come out in key order */
static void test_small_groups(void) {
    static const int64_t comp[12] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0};
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_array(g, VG_INT64, (int64_t[]){12}, 1, comp, NULL);
    static int64_t two = 2;
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), mod_key,
                                                    batch4_reduce, 4, NULL, &two, NULL)))
        return;
    expect_next(&r, (int64_t[]){0, 0, 0, 0}, 4);
    expect_next(&r, (int64_t[]){1, 1, 1, 1}, 4);
    expect_next(&r, (int64_t[]){0, 0, 0}, 3);
    expect_next(&r, (int64_t[]){1}, 1);
    expect_end(&r);
    ds_run_close(&r);
}

/* the end-of-input flush in key order when the keys arrive in decreasing order */
static void test_flush_in_key_order(void) {
    static const int64_t comp[6] = {5, 3, 9, 3, 5, 7};
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_array(g, VG_INT64, (int64_t[]){6}, 1, comp, NULL);
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), identity_key,
                                                    batch4_reduce, 4, NULL, NULL, NULL)))
        return;
    expect_next(&r, (int64_t[]){3, 3}, 2);
    expect_next(&r, (int64_t[]){5, 5}, 2);
    expect_next(&r, (int64_t[]){7}, 1);
    expect_next(&r, (int64_t[]){9}, 1);
    expect_end(&r);
    ds_run_close(&r);
}

/* testEmpty: window size 0 */
static void test_empty(void) {
    vg_graph *g = vg_graph_new();
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, vg_dataset_range(g, 0, 4, 1, NULL), zero_key, identity_reduce, 0,
                                                    NULL, NULL, NULL)))
        return;
    vg_status st;
    vg_tensor *t[1] = {0};
    CHECK_CODE(ds_run_next(&r, t, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Window size must be greater than zero, but got 0.");
    ds_run_close(&r);
}

/* testReduceFuncError (adapted): the reduce function's padded_batch fails at run time */
static vg_code pad_too_small(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_shape ps[2] = {vg_shape_make(NULL, 0), vg_shape_make((int64_t[]){1}, 1)};
    outs[0] = vg_dataset_padded_batch(fg, args[1], 4, ps, NULL, false, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
static vg_code x_and_fill(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = args[0];
    outs[1] = vg_fill(fg, vg_expand_dims(fg, vg_cast(fg, args[0], VG_INT32, NULL), 0, NULL), args[0],
                      NULL);
    *nouts = 2;
    return vg_graph_status(fg, NULL);
}
static void test_reduce_func_error(void) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 10, 1, NULL), x_and_fill, NULL, NULL);
    static int64_t two = 2;
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, ds, mod_key, pad_too_small, 32, NULL, &two, NULL))) return;
    vg_status st;
    vg_tensor *t[2] = {0};
    CHECK_CODE(ds_run_next(&r, t, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Attempted to pad to a smaller size than the input element");
    ds_run_close(&r);
}

/* testShortCircuit: window size 1 */
static void test_short_circuit(void) {
    vg_graph *g = vg_graph_new();
    ds_run r;
    if (!run_open(&r, g, vg_dataset_group_by_window(g, vg_dataset_range(g, 0, 10, 1, NULL), identity_key, batch1_reduce,
                                                    1, NULL, NULL, NULL)))
        return;
    for (int64_t i = 0; i < 10; i++) expect_next(&r, &i, 1);
    expect_end(&r);
    ds_run_close(&r);
}

/* testGroupByWindowWithAutotune: from_tensors(key), then a parallel map */
DS_FN1(plus1, vg_add(fg, args[0], vg_const_i64(fg, 1, NULL), NULL))
static void test_with_autotune(void) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_group_by_window(g, vg_dataset_range(g, 0, 1000, 1, NULL), div10_key, key_reduce, 4, NULL,
                                              NULL, NULL);
    ds = vg_dataset_map_parallel(g, ds, plus1, NULL, -1, NULL);
    ds_run r;
    if (!run_open(&r, g, ds)) return;
    /* keys 0..99, 10 elements each: windows of 4 flush twice per key as it is read,
     * the groups of the 2 left flush at the end */
    for (int64_t k = 0; k < 100; k++) {
        int64_t v = k + 1;
        expect_next(&r, &v, 1);
        expect_next(&r, &v, 1);
    }
    for (int64_t k = 0; k < 100; k++) { /* the partial groups of 2, in key order */
        int64_t v = k + 1;
        expect_next(&r, &v, 1);
    }
    expect_end(&r);
    ds_run_close(&r);
}

/* ------------------------------------------------------------------------ */
/* vigil's additions */

/* a two-component window zipped back, and a value captured by reduce_func */
static vg_code pair(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = args[0];
    outs[1] = vg_mul(fg, args[0], vg_const_i64(fg, 100, NULL), NULL);
    *nouts = 2;
    return vg_graph_status(fg, NULL);
}
static vg_code pair_key(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_floor_mod(fg, args[1], vg_const_i64(fg, 3, NULL), NULL); /* the second component */
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
/* (key, window) -> window.batch(3).map(lambda x, y: x + y + key * captured) */
static vg_code add_key_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output k = vg_dataset_capture(fg, *(const vg_output *)p, "key_in");
    vg_output cap = vg_dataset_capture(fg, ((const vg_output *)p)[1], "scale");
    outs[0] = vg_add(fg, vg_add(fg, args[0], args[1], NULL), vg_mul(fg, k, cap, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
static vg_code pair_reduce(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output *outer = p; /* outer[0]: the scale, in g */
    vg_output env[2] = {args[0], vg_dataset_capture(fg, outer[0], "scale")};
    outs[0] = vg_dataset_map(fg, vg_dataset_batch(fg, args[1], 3, false, NULL), add_key_fn, env, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
static void test_two_components_and_capture(void) {
    vg_graph *g = vg_graph_new();
    vg_output scale = vg_placeholder(g, VG_INT64, NULL, 0, "scale");
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 7, 1, NULL), pair, NULL, NULL);
    vg_output outer[1] = {scale};
    ds = vg_dataset_group_by_window(g, ds, pair_key, pair_reduce, 2, NULL, outer, NULL);
    vg_status st;
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    if (vg_graph_status(g, NULL) != VG_OK) {
        vg_graph_free(g);
        return;
    }
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *sv = vg_tensor_new(VG_INT64, NULL, 0, &st);
    *(int64_t *)vg_tensor_data(sv) = 1000;
    CHECK_OK(vg_session_run(s, NULL, &scale, &sv, 1, NULL, NULL, 0, &init, 1, NULL, &st), &st);
    vg_tensor_free(sv);
    /* x = 0..6, y = 100 x, key = y % 3 = x % 3: 0,1,2,0,1,2,0. Groups of 2: {0,3} (key 0)
     * at x = 3, {1,4} (key 1) at x = 4, {2,5} (key 2) at x = 5; then the end: {6} (key 0).
     * Each: x + 100 x + 1000 key. */
    static const int64_t want[4][2] = {{0, 303}, {101 + 1000, 404 + 1000}, {202 + 2000, 505 + 2000}, {606, -1}};
    for (int b = 0; b < 4; b++) {
        vg_output o = vg_out(next, 0);
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &o, &t, 1, NULL, 0, NULL, &st), &st);
        if (!t) break;
        int n = b == 3 ? 1 : 2;
        CHECK_EQ_INT(vg_tensor_num_elements(t), n);
        for (int i = 0; i < n && i < vg_tensor_num_elements(t); i++) CHECK_EQ_INT(i64(t)[i], want[b][i]);
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

/* the builders' errors, with TF's messages */
DS_FN1(vector_key, vg_expand_dims(fg, args[0], 0, NULL))
DS_FN1(not_a_dataset_reduce, args[0])
DS_FN1(float_window_size, vg_const_f32(fg, 4, NULL))
static void expect_build_error(vg_dataset_map_fn key, vg_dataset_map_fn reduce, int64_t ws, vg_dataset_map_fn wsf,
                               const char *msg) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_group_by_window(g, vg_dataset_range(g, 0, 4, 1, NULL), key, reduce, ws, wsf, NULL, NULL);
    vg_status st;
    CHECK(ds.op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, msg);
    vg_graph_free(g);
}
static void test_build_errors(void) {
    expect_build_error(vector_key, batch4_reduce, 4, NULL, "`key_func` must return a single tf.int64 tensor.");
    expect_build_error(identity_key, not_a_dataset_reduce, 4, NULL, "`reduce_func` must return a `Dataset` object.");
    expect_build_error(identity_key, batch4_reduce, -1, float_window_size,
                       "`window_size_func` must return a single tf.int64 scalar tensor.");
    expect_build_error(identity_key, batch4_reduce, 4, window_size_5_10,
                       "Either the `window_size` argument or the `window_size_func` argument must be specified.");
}

/* a key whose length depends on the element */
static vg_code unknown_shape_key(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    /* fill([x % 2 + 1], x): one element for even x, two for odd (shape unknown at build time) */
    vg_output n = vg_add(fg, vg_floor_mod(fg, args[0], vg_const_i64(fg, 2, NULL), NULL), vg_const_i64(fg, 1, NULL), NULL);
    vg_output v = vg_fill(fg, vg_expand_dims(fg, vg_cast(fg, n, VG_INT32, NULL), 0, NULL), args[0],
                          NULL);
    outs[0] = vg_reshape(fg, v, vg_const_array(fg, VG_INT32, (int64_t[]){1}, 1, (int32_t[]){-1}, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
static void test_key_not_scalar(void) {
    /* the key's shape is [?]: not compatible with a scalar, refused at build time as
     * TF's Python does */
    expect_build_error(unknown_shape_key, batch4_reduce, 4, NULL, "`key_func` must return a single tf.int64 tensor.");
}

/* ------------------------------------------------------------------------ */
/* iterator checkpoints (TF's GroupByWindowDataset SaveInternal / RestoreInternal) */

/* (key, window) -> window.batch(2).map(x + 1000 key + offset), offset captured from g */
static vg_code add_key_offset(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    const vg_output *env = p;
    vg_output k = vg_dataset_capture(fg, env[0], "key");
    vg_output off = vg_dataset_capture(fg, env[1], "offset");
    outs[0] = vg_add(fg, vg_add(fg, args[0], vg_mul(fg, k, vg_const_i64(fg, 1000, NULL), NULL), NULL), off, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
static vg_code ckpt_reduce(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output env[2] = {args[0], vg_dataset_capture(fg, *(const vg_output *)p, "offset")};
    outs[0] = vg_dataset_map(fg, vg_dataset_batch(fg, args[1], 2, false, NULL), add_key_offset, env, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}
/* key -> 3 + key */
DS_FN1(three_plus_key, vg_add(fg, args[0], vg_const_i64(fg, 3, NULL), NULL))
/* x -> x % 3 */
static vg_code mod3(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_floor_mod(fg, args[0], vg_const_i64(fg, 3, NULL), NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* range(40) grouped by x % 3 in windows of 3 + key, each reduced to batches of 2 (with
 * the key and a captured offset added); a shuffle under it keeps a buffer in the state */
static vg_output ckpt_pipeline(vg_graph *g, bool captured) {
    vg_output ds = vg_dataset_shuffle(g, vg_dataset_range(g, 0, 40, 1, NULL), 5, 7, false, NULL);
    static vg_output off;
    off = captured ? vg_const_i64(g, 100000, "offset") : vg_const_i64(g, 0, "offset");
    return vg_dataset_group_by_window(g, ds, mod3, ckpt_reduce, -1, three_plus_key, &off, NULL);
}

static vg_output ckpt_plain(vg_graph *g) { return ckpt_pipeline(g, false); }
static vg_output ckpt_captured(vg_graph *g) { return ckpt_pipeline(g, true); }

static void checkpoint_case(bool captured, const int *breaks, int nb) {
    int64_t all[DS_CKPT_MAX];
    int nall = ds_checkpoint_breaks(captured ? "captured offset" : "constant offset", captured ? ckpt_captured : ckpt_plain,
                                    breaks, nb, all);
    /* 40 values, each once, in batches of at most 2 of one key */
    int nv = 0;
    for (int i = 0; i < nall; i++) nv += all[i] >= 0;
    CHECK_EQ_INT(nv, 40);
}

static void test_checkpoint(void) {
    /* 0: before anything; 1..: inside a window's batches, between windows, at the end */
    static const int br[] = {0, 1, 2, 3, 5, 8, 13, 19, 20, 21, 22};
    checkpoint_case(false, br, 11);
    checkpoint_case(true, br, 11);
}

int main(void) {
    RUN_TEST(test_single_bucket);
    RUN_TEST(test_even_odd_buckets);
    RUN_TEST(test_even_odd_buckets_filter_out_all_odd);
    RUN_TEST(test_dynamic_window_size);
    RUN_TEST(test_simple);
    RUN_TEST(test_immediate_output);
    RUN_TEST(test_small_groups);
    RUN_TEST(test_flush_in_key_order);
    RUN_TEST(test_empty);
    RUN_TEST(test_reduce_func_error);
    RUN_TEST(test_short_circuit);
    RUN_TEST(test_with_autotune);
    RUN_TEST(test_two_components_and_capture);
    RUN_TEST(test_build_errors);
    RUN_TEST(test_key_not_scalar);
    RUN_TEST(test_checkpoint);
    TEST_MAIN_END();
}
