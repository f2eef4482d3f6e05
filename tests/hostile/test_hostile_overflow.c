/* test_hostile_overflow.c - issue 29 item 7: hostile sizes and attrs.
 *
 * Range's size with operands near the int64 limits (exact or INVALID_ARGUMENT, never
 * signed overflow), products and sums of user dims in Reshape, Tile, Pad, Fill and
 * RandomUniform (INVALID_ARGUMENT or RESOURCE_EXHAUSTED before any allocation),
 * Dataset.range near INT64_MAX, prefetch(-5), and imported nodes whose type attr "T"
 * is missing or not a type. Each op is tried with Const inputs (the shape function at
 * build time) and with fed inputs (the kernel at run time).
 *
 * Expected values are worked out by hand in the comments. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <stdint.h>

/* Runs fetch with up to two int64 feeds; returns the code, *out the result on success. */
static vg_code run_fed(vg_graph *g, vg_output fetch, const vg_output *feeds, vg_tensor *const *vals, int nfeeds,
                       vg_tensor **out, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return st->code;
    *out = NULL;
    vg_code c = vg_session_run(s, NULL, feeds, vals, nfeeds, &fetch, out, 1, NULL, 0, NULL, st);
    vg_session_free(s);
    return c;
}

static vg_tensor *i64_scalar(int64_t v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_INT64, NULL, 0, &st);
    *(int64_t *)vg_tensor_data(t) = v;
    return t;
}

static vg_tensor *i64_vec(const int64_t *v, int n) {
    vg_status st;
    int64_t d[1] = {n};
    vg_tensor *t = vg_tensor_new(VG_INT64, d, 1, &st);
    memcpy(vg_tensor_data(t), v, sizeof(int64_t) * (size_t)n);
    return t;
}

/* Range(start, limit, delta) on int64, once with Const inputs and once fed: both give
 * want[0..nwant) or both fail with INVALID_ARGUMENT (nwant < 0). */
static void check_range_i64(int64_t start, int64_t limit, int64_t delta, const int64_t *want, int nwant) {
    vg_status st;
    /* Const inputs: the shape function computes the size at build time */
    vg_graph *g = vg_graph_new();
    vg_output r = vg_range(g, vg_const_i64(g, start, "s"), vg_const_i64(g, limit, "l"), vg_const_i64(g, delta, "d"),
                           "r");
    if (nwant < 0) {
        CHECK(r.op == NULL);
        CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
            "Requires ((limit - start) / delta) <= 9223372036854775807");
    } else {
        CHECK_OK(vg_graph_status(g, &st), &st);
        vg_shape sh = vg_output_shape(r);
        CHECK(sh.ndims == 1 && sh.dims[0] == nwant);
        vg_tensor *o = NULL;
        CHECK_OK(run_fed(g, r, NULL, NULL, 0, &o, &st), &st);
        if (o) {
            CHECK_EQ_INT(vg_tensor_num_elements(o), nwant);
            for (int i = 0; i < nwant && i < vg_tensor_num_elements(o); i++)
                CHECK_EQ_INT(((int64_t *)vg_tensor_data(o))[i], want[i]);
        }
        vg_tensor_free(o);
    }
    vg_graph_free(g);
    /* fed inputs: the kernel computes it */
    g = vg_graph_new();
    vg_output ph[3] = {vg_placeholder(g, VG_INT64, NULL, 0, "s"), vg_placeholder(g, VG_INT64, NULL, 0, "l"),
                       vg_placeholder(g, VG_INT64, NULL, 0, "d")};
    r = vg_range(g, ph[0], ph[1], ph[2], "r");
    vg_tensor *vals[3] = {i64_scalar(start), i64_scalar(limit), i64_scalar(delta)}, *o = NULL;
    vg_code c = run_fed(g, r, ph, vals, 3, &o, &st);
    if (nwant < 0) {
        CHECK_STATUS(c, &st, VG_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= 9223372036854775807");
    } else {
        CHECK_OK(c, &st);
        if (o) {
            CHECK_EQ_INT(vg_tensor_num_elements(o), nwant);
            for (int i = 0; i < nwant && i < vg_tensor_num_elements(o); i++)
                CHECK_EQ_INT(((int64_t *)vg_tensor_data(o))[i], want[i]);
        }
    }
    vg_tensor_free(o);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
}

static void test_range_int64_limits(void) {
    /* |(-10) - 0| = 10, |INT64_MIN| = 2^63: ceil(10 / 2^63) = 1 element, [0] (the issue
     * saw an empty tensor: -INT64_MIN overflowed) */
    check_range_i64(0, -10, INT64_MIN, (const int64_t[]){0}, 1);
    /* span 2^64 - 1 over delta 2^63 - 1: 2 rem 1, so 3 elements; INT64_MIN + (2^63 - 1) = -1,
     * -1 + (2^63 - 1) = INT64_MAX - 1; the step after the last would overflow */
    check_range_i64(INT64_MIN, INT64_MAX, INT64_MAX, (const int64_t[]){INT64_MIN, -1, INT64_MAX - 1}, 3);
    /* and downwards: span 2^64 - 1 over |INT64_MIN| = 2^63: 1 rem 2^63 - 1, so 2 elements */
    check_range_i64(INT64_MAX, INT64_MIN, INT64_MIN, (const int64_t[]){INT64_MAX, -1}, 2);
    /* near the top: [INT64_MAX - 2, INT64_MAX) by 5 is one element */
    check_range_i64(INT64_MAX - 2, INT64_MAX, 5, (const int64_t[]){INT64_MAX - 2}, 1);
    /* 2^64 - 1 elements do not fit an int64 size: INVALID_ARGUMENT, not an empty tensor */
    check_range_i64(INT64_MIN, INT64_MAX, 1, NULL, -1);
    check_range_i64(INT64_MAX, INT64_MIN, -1, NULL, -1);
    /* the existing argument checks still hold */
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output r = vg_range(g, vg_const_i64(g, 0, "s"), vg_const_i64(g, -10, "l"), vg_const_i64(g, 1, "d"), "r");
    CHECK(r.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: 0/-10");
    vg_graph_free(g);
}

static void test_range_int32_and_float_limits(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    /* int32: span 2^32 - 1 over 2^31 - 1 = 2 rem 1: [INT32_MIN, -1, INT32_MAX - 1] */
    vg_output r = vg_range(g, vg_const_i32(g, INT32_MIN, "s"), vg_const_i32(g, INT32_MAX, "l"),
                           vg_const_i32(g, INT32_MAX, "d"), "r");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *o = NULL;
    CHECK_OK(run_fed(g, r, NULL, NULL, 0, &o, &st), &st);
    if (o) {
        const int32_t *v = vg_tensor_data(o);
        CHECK_EQ_INT(vg_tensor_num_elements(o), 3);
        CHECK(v[0] == INT32_MIN && v[1] == -1 && v[2] == INT32_MAX - 1);
    }
    vg_tensor_free(o);
    /* float: ceil(1e30 / 1e-10) = 1e40 elements exceed int64 */
    vg_output f = vg_range(g, vg_const_f32(g, 0.0f, "fs"), vg_const_f32(g, 1e30f, "fl"), vg_const_f32(g, 1e-10f, "fd"),
                           "f");
    CHECK(f.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "Requires ((limit - start) / delta) <= 9223372036854775807");
    vg_graph_free(g);
}

/* Reshape whose requested dims multiply past INT64_MAX. */
static void test_reshape_product_overflow(void) {
    vg_status st;
    float x[4] = {1, 2, 3, 4};
    /* Const shape: 2^62 * 8 = 2^65 at build time */
    vg_graph *g = vg_graph_new();
    vg_output xs = vg_const_array(g, VG_FLOAT, (int64_t[]){4}, 1, x, "x");
    vg_output r = vg_reshape(g, xs, vg_const_array(g, VG_INT64, (int64_t[]){2}, 1, (int64_t[]){INT64_C(1) << 62, 8}, "sh"),
                             "r");
    CHECK(r.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "more than 2**63 - 1 elements");
    vg_graph_free(g);
    /* fed shapes: [2^62, 8], [2^62, 4, -1] and [INT64_MAX, 2] fail; [2, -1] still works */
    const int64_t bad[3][3] = {{INT64_C(1) << 62, 8, 0}, {INT64_C(1) << 62, 4, -1}, {INT64_MAX, 2, 0}};
    const int nbad[3] = {2, 3, 2};
    for (int k = 0; k < 4; k++) {
        g = vg_graph_new();
        xs = vg_const_array(g, VG_FLOAT, (int64_t[]){4}, 1, x, "x");
        vg_output ph = vg_placeholder(g, VG_INT64, (int64_t[]){-1}, 1, "shape");
        r = vg_reshape(g, xs, ph, "r");
        vg_tensor *sv = k < 3 ? i64_vec(bad[k], nbad[k]) : i64_vec((const int64_t[]){2, -1}, 2), *o = NULL;
        vg_code c = run_fed(g, r, &ph, &sv, 1, &o, &st);
        if (k < 3) {
            CHECK_STATUS(c, &st, VG_INVALID_ARGUMENT, "2**63 - 1");
        } else {
            CHECK_OK(c, &st);
            CHECK(o && vg_tensor_ndims(o) == 2 && vg_tensor_dim(o, 0) == 2 && vg_tensor_dim(o, 1) == 2);
        }
        vg_tensor_free(o);
        vg_tensor_free(sv);
        vg_graph_free(g);
    }
    /* an empty tensor whose non-zero dims multiply past INT64_MAX cannot be made (the
     * kernels' strides and Reshape's inferred dim multiply them) */
    CHECK(vg_tensor_new(VG_FLOAT, (int64_t[]){0, INT64_C(1) << 62, 4}, 3, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "tensor too large");
    /* one whose do fit reshapes as TF infers: [0, 2^31, 2^31] to [0, -1] is [0, 2^62]
     * (the -1 takes the product of the input's non-zero dims) */
    g = vg_graph_new();
    vg_output e = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1, -1}, 3, "e");
    vg_output ph = vg_placeholder(g, VG_INT64, (int64_t[]){-1}, 1, "shape");
    r = vg_reshape(g, e, ph, "r");
    vg_tensor *ev = vg_tensor_new(VG_FLOAT, (int64_t[]){0, INT64_C(1) << 31, INT64_C(1) << 31}, 3, &st);
    CHECK(ev != NULL);
    vg_tensor *sv = i64_vec((const int64_t[]){0, -1}, 2), *o = NULL;
    vg_output feeds[2] = {e, ph};
    vg_tensor *vals[2] = {ev, sv};
    CHECK_OK(run_fed(g, r, feeds, vals, 2, &o, &st), &st);
    CHECK(o && vg_tensor_ndims(o) == 2 && vg_tensor_dim(o, 0) == 0 && vg_tensor_dim(o, 1) == INT64_C(1) << 62);
    kt_teardown(g, NULL, (vg_tensor *[]){o, ev, sv}, 3, NULL, 0);
}

/* Tile's dim * multiple and Pad's dim + before + after past INT64_MAX. */
static void test_tile_pad_overflow(void) {
    vg_status st;
    float x[2] = {1, 2};
    /* Tile: 2 * 2^62 = 2^63 */
    vg_graph *g = vg_graph_new();
    vg_output xs = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, x, "x");
    vg_output t = vg_tile(g, xs, vg_const_array(g, VG_INT64, (int64_t[]){1}, 1, (int64_t[]){INT64_C(1) << 62}, "m"), "t");
    CHECK(t.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "overflows int64");
    vg_graph_free(g);
    g = vg_graph_new();
    xs = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, x, "x");
    vg_output m = vg_placeholder(g, VG_INT64, (int64_t[]){1}, 1, "m");
    t = vg_tile(g, xs, m, "t");
    vg_tensor *mv = i64_vec((const int64_t[]){INT64_C(1) << 62}, 1), *o = NULL;
    CHECK_STATUS(run_fed(g, t, &m, &mv, 1, &o, &st), &st, VG_INVALID_ARGUMENT, "overflows int64");
    vg_tensor_free(mv);
    vg_tensor_free(o);
    vg_graph_free(g);
    /* Pad: 2 + INT64_MAX + 1 */
    g = vg_graph_new();
    xs = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, x, "x");
    vg_output p = vg_pad(g, xs, vg_const_array(g, VG_INT64, (int64_t[]){1, 2}, 2, (int64_t[]){INT64_MAX, 1}, "p"), "pad");
    CHECK(p.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "overflows int64");
    vg_graph_free(g);
    g = vg_graph_new();
    xs = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, x, "x");
    vg_output pp = vg_placeholder(g, VG_INT64, (int64_t[]){1, 2}, 2, "p");
    p = vg_pad(g, xs, pp, "pad");
    vg_tensor *pv = vg_tensor_new(VG_INT64, (int64_t[]){1, 2}, 2, &st);
    ((int64_t *)vg_tensor_data(pv))[0] = 1;
    ((int64_t *)vg_tensor_data(pv))[1] = INT64_MAX;
    CHECK_STATUS(run_fed(g, p, &pp, &pv, 1, &o, &st), &st, VG_INVALID_ARGUMENT, "overflows int64");
    kt_teardown(g, NULL, (vg_tensor *[]){pv, o}, 2, NULL, 0);
}

/* Fill and RandomUniform with shape inputs whose product overflows: an error before
 * any allocation (an allocation of that size would abort under ASan). */
static void test_fill_random_shape_overflow(void) {
    vg_status st;
    const int64_t dims[2][2] = {{INT64_C(1) << 40, INT64_C(1) << 40}, /* 2^80 elements */
                                {INT64_C(1) << 31, INT64_C(1) << 31}}; /* 2^62 elements, 2^64 bytes */
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_output d = vg_placeholder(g, VG_INT64, (int64_t[]){2}, 1, "d");
        vg_output f = vg_fill(g, d, vg_const_f32(g, 1.0f, "v"), "fill");
        vg_output u = vg_random_uniform(g, d, VG_FLOAT, 1, 2, "u");
        vg_tensor *dv = i64_vec(dims[k], 2), *o = NULL;
        vg_code c = run_fed(g, f, &d, &dv, 1, &o, &st);
        CHECK(c == VG_INVALID_ARGUMENT || c == VG_RESOURCE_EXHAUSTED);
        CHECK_STR_CONTAINS(st.msg, "too large");
        vg_tensor_free(o);
        o = NULL;
        c = run_fed(g, u, &d, &dv, 1, &o, &st);
        CHECK(c == VG_INVALID_ARGUMENT || c == VG_RESOURCE_EXHAUSTED);
        CHECK_STR_CONTAINS(st.msg, "too large");
        vg_tensor_free(o);
        vg_tensor_free(dv);
        vg_graph_free(g);
    }
}

/* ScatterNd and SparseToDense take their output shape from a tensor; SpaceToBatchND
 * multiplies the batch by the block sizes and adds the paddings. A zero dim must not hide
 * non-zero dims that overflow ([0, 2^62, 8]). */
static void test_scatter_sparse_space_batch_overflow(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output shp = vg_placeholder(g, VG_INT64, (int64_t[]){3}, 1, "shape");
    /* no index tuples of 3 entries: the updates are [0]; the strides are 1, 8, 2^65 */
    vg_output idx = vg_const_array(g, VG_INT64, (int64_t[]){0, 3}, 2, (int64_t[]){0}, "idx");
    vg_output upd = vg_const_array(g, VG_FLOAT, (int64_t[]){0}, 1, (float[]){0}, "upd");
    vg_output sc = vg_scatter_nd(g, idx, upd, shp, "scatter");
    vg_output sidx = vg_const_array(g, VG_INT64, (int64_t[]){0, 3}, 2, (int64_t[]){0}, "sidx");
    vg_output sd = vg_sparse_to_dense(g, sidx, shp, vg_const_array(g, VG_FLOAT, (int64_t[]){0}, 1, (float[]){0}, "sv"),
                                      vg_const_f32(g, 0.0f, "dv"), true, "s2d");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *big = i64_vec((const int64_t[]){0, INT64_C(1) << 62, 8}, 3), *o = NULL;
    CHECK_STATUS(run_fed(g, sc, &shp, &big, 1, &o, &st), &st, VG_INVALID_ARGUMENT, "too many elements");
    vg_tensor_free(o);
    o = NULL;
    CHECK_STATUS(run_fed(g, sd, &shp, &big, 1, &o, &st), &st, VG_INVALID_ARGUMENT, "2**63 - 1");
    vg_tensor_free(o);
    vg_tensor_free(big);
    vg_graph_free(g);
    /* SpaceToBatchND: batch 2 times block 2^62 = 2^63; paddings INT64_MAX + 1 */
    g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1, -1}, 3, "x");
    vg_output bs = vg_placeholder(g, VG_INT64, (int64_t[]){1}, 1, "bs");
    vg_output pd = vg_placeholder(g, VG_INT64, (int64_t[]){1, 2}, 2, "pd");
    vg_output s2b = vg_space_to_batch_nd(g, x, bs, pd, "s2b");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *xv = vg_tensor_new_zeros(VG_FLOAT, (int64_t[]){2, 2, 1}, 3, &st);
    vg_tensor *pv = vg_tensor_new_zeros(VG_INT64, (int64_t[]){1, 2}, 2, &st);
    for (int k = 0; k < 2; k++) {
        vg_tensor *bv = i64_vec((const int64_t[]){k == 0 ? INT64_C(1) << 62 : 2}, 1);
        if (k == 1) ((int64_t *)vg_tensor_data(pv))[1] = INT64_MAX;
        vg_output feeds[3] = {x, bs, pd};
        vg_tensor *vals[3] = {xv, bv, pv};
        o = NULL;
        CHECK_STATUS(run_fed(g, s2b, feeds, vals, 3, &o, &st), &st, VG_INVALID_ARGUMENT, "overflows int64");
        vg_tensor_free(o);
        vg_tensor_free(bv);
    }
    kt_teardown(g, NULL, (vg_tensor *[]){xv, pv}, 2, NULL, 0);
}

static int drain_i64(vg_graph *g, vg_output ds, int64_t *v, int max, vg_code *end, vg_status *st) {
    vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_session *s = next ? vg_session_new(g, NULL, st) : NULL;
    int n = 0;
    *end = VG_INTERNAL;
    if (!s) return 0;
    for (;;) {
        vg_tensor *o = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &o, st);
        if (rc != VG_OK || n >= 100) {
            *end = rc;
            break;
        }
        if (n < max) v[n] = *(int64_t *)vg_tensor_data(o);
        n++;
        vg_tensor_free(o);
    }
    vg_session_free(s);
    return n;
}

/* Dataset.range(INT64_MAX - 2, INT64_MAX, 5) = [INT64_MAX - 2] (was empty); prefetch
 * accepts -1 (AUTOTUNE) and 0 and rejects -5 as TF's PrefetchDatasetOp does. */
static void test_dataset_range_and_prefetch(void) {
    vg_status st;
    int64_t v[8];
    vg_code end;
    vg_graph *g = vg_graph_new();
    int n = drain_i64(g, vg_dataset_range(g, INT64_MAX - 2, INT64_MAX, 5, NULL), v, 8, &end, &st);
    CHECK_EQ_INT(n, 1);
    CHECK(n >= 1 && v[0] == INT64_MAX - 2);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    vg_graph_free(g);
    const int64_t sizes[3] = {-1, 0, -5};
    for (int k = 0; k < 3; k++) {
        g = vg_graph_new();
        n = drain_i64(g, vg_dataset_prefetch(g, vg_dataset_range(g, 0, 3, 1, NULL), sizes[k], NULL), v, 8, &end, &st);
        if (sizes[k] >= -1) {
            CHECK_EQ_INT(n, 3);
            CHECK(v[0] == 0 && v[1] == 1 && v[2] == 2);
            CHECK_CODE(end, VG_OUT_OF_RANGE);
        } else {
            CHECK_EQ_INT(n, 0);
            CHECK_STATUS(end, &st, VG_INVALID_ARGUMENT, "buffer_size must be >= 0");
        }
        vg_graph_free(g);
    }
}

/* FixedLengthRecordDataset's reader adds header_bytes and footer_bytes: a sum past
 * INT64_MAX is refused when the iterator is made, before any file is opened. */
static void test_fixed_length_header_footer_overflow(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output files = vg_const_string(g, "/nonexistent_vg_file", "f");
    vg_output ds = vg_dataset_fixed_length_record(g, files, INT64_MAX, 4, 1, NULL);
    vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    expect_run1_error(g, vg_out(next, 0), VG_INVALID_ARGUMENT, "header_bytes + footer_bytes overflows int64");
    vg_graph_free(g);
}

/* An imported AddV2 must carry its type attr T as a type (TF's ValidateNodeDef:
 * "NodeDef missing attr 'T'", "AttrValue had value with type 'int' when 'type'
 * expected"); a T that disagrees with the inputs fails too. */
static void test_import_type_attr(void) {
    static const char *head =
        "node { name: 'a' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
        "       attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }\n";
    static const char *tails[4] = {
        "node { name: 'y' op: 'AddV2' input: 'a' input: 'a' }\n",
        "node { name: 'y' op: 'AddV2' input: 'a' input: 'a' attr { key: 'T' value { i: 1 } } }\n",
        "node { name: 'y' op: 'AddV2' input: 'a' input: 'a' attr { key: 'T' value { type: DT_INT32 } } }\n",
        "node { name: 'y' op: 'AddV2' input: 'a' input: 'a' attr { key: 'T' value { type: DT_FLOAT } } }\n",
    };
    static const char *msgs[3] = {"NodeDef missing attr 'T' from Op<name=AddV2>",
                                  "AttrValue had value with type 'int' when 'type' expected for attr 'T'",
                                  "attr 'T' is int32"};
    for (int k = 0; k < 4; k++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", head, tails[k]);
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_import_options o = {0};
        o.format = VG_IMPORT_TEXT;
        vg_code c = vg_graph_import_graph_def(g, text, strlen(text), &o, &st);
        if (k < 3) {
            CHECK_STATUS(c, &st, VG_INVALID_ARGUMENT, msgs[k]);
            CHECK_STR_CONTAINS(st.msg, "'y'");
        } else {
            CHECK_OK(c, &st);
            vg_op *y = vg_graph_op_by_name(g, "y");
            vg_tensor *out = NULL;
            CHECK(y != NULL);
            if (y) {
                CHECK_OK(run_fed(g, vg_out(y, 0), NULL, NULL, 0, &out, &st), &st);
                CHECK(out && vg_tensor_scalar(out) == 2.0);
            }
            vg_tensor_free(out);
        }
        vg_graph_free(g);
    }
}

/* The GraphDef path (`vigil graph` imports and so runs the shape functions on Const
 * inputs): Range(INT64_MIN, INT64_MAX, INT64_MAX) has 3 elements, Range(INT64_MIN,
 * INT64_MAX, 1) is refused at import. */
static void test_import_range_consts(void) {
    static const char *fmt =
        "node { name: 's' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
        "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: -9223372036854775808 } } } }\n"
        "node { name: 'l' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
        "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 9223372036854775807 } } } }\n"
        "node { name: 'd' op: 'Const' attr { key: 'dtype' value { type: DT_INT64 } }\n"
        "  attr { key: 'value' value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: %s } } } }\n"
        "node { name: 'r' op: 'Range' input: 's' input: 'l' input: 'd' attr { key: 'Tidx' value { type: DT_INT64 } } }\n";
    for (int k = 0; k < 2; k++) {
        char text[2048];
        snprintf(text, sizeof text, fmt, k == 0 ? "9223372036854775807" : "1");
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_import_options o = {0};
        o.format = VG_IMPORT_TEXT;
        vg_code c = vg_graph_import_graph_def(g, text, strlen(text), &o, &st);
        if (k == 0) {
            CHECK_OK(c, &st);
            vg_op *r = vg_graph_op_by_name(g, "r");
            CHECK(r != NULL);
            if (r) {
                vg_shape sh = vg_output_shape(vg_out(r, 0));
                CHECK(sh.ndims == 1 && sh.dims[0] == 3);
            }
        } else {
            CHECK_STATUS(c, &st, VG_INVALID_ARGUMENT, "Requires ((limit - start) / delta) <= 9223372036854775807");
            CHECK_STR_CONTAINS(st.msg, "'r'");
        }
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_import_range_consts);
    RUN_TEST(test_range_int64_limits);
    RUN_TEST(test_range_int32_and_float_limits);
    RUN_TEST(test_reshape_product_overflow);
    RUN_TEST(test_tile_pad_overflow);
    RUN_TEST(test_fill_random_shape_overflow);
    RUN_TEST(test_scatter_sparse_space_batch_overflow);
    RUN_TEST(test_dataset_range_and_prefetch);
    RUN_TEST(test_fixed_length_header_footer_overflow);
    RUN_TEST(test_import_type_attr);
    TEST_MAIN_END();
}
