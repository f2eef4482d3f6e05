/* test_math_reduce.c - the math family's reductions (Sum, Mean, Max, Min, Prod, All,
 * Any) over various axes, keep_dims, negative / duplicate / out-of-range axes, empty
 * inputs and large inputs, build-time shape inference, the vg_reduce_* helpers, and
 * ArgMax / ArgMin. */
#include "test_util.h"
#include "op_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* ---- helpers ------------------------------------------------------------ */

typedef vg_output (*red_builder)(vg_graph *, vg_output, vg_output, bool, const char *);

/* x: the 2x3x4 tensor 0..23 (of dtype dt); reduces over axes (int32 Const). */
static void check_red(red_builder fn, vg_dtype dt, const int32_t *axes, int naxes, bool keep, const int64_t *dout,
                      int nout, const double *e) {
    double x[24];
    for (int i = 0; i < 24; i++) x[i] = i;
    vg_graph *g = vg_graph_new();
    vg_output y = fn(g, cst(g, dt, (int64_t[]){2, 3, 4}, 3, x), vg_const_i32_vec(g, axes, naxes, NULL), keep, NULL);
    vg_status st;
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "build failed: %s\n", st.msg);
        vg_test_failures++;
    } else {
        vg_shape s = vg_output_shape(y); /* build-time shape from the Const axes */
        CHECK_EQ_INT(s.ndims, nout);
        for (int i = 0; i < nout && i < s.ndims; i++) CHECK_EQ_INT(s.dims[i], dout[i]);
        vg_tensor *t = run(g, y);
        check_values(t, dt, dout, nout, e, 1e-6);
        vg_tensor_free(t);
    }
    vg_graph_free(g);
}

/* ---- tests -------------------------------------------------------------- */

static void test_math__sum_axes(void) {
    int64_t d34[2] = {3, 4}, d24[2] = {2, 4}, d23[2] = {2, 3}, d2[1] = {2}, d4[1] = {4}, d3[1] = {3};
    double s0[12], s1[8], s2[6], s01[4], s12[2], s02[3];
    for (int j = 0; j < 12; j++) s0[j] = j + (12 + j);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) s1[i * 4 + k] = (i * 12 + k) * 3 + 4 + 8;
    for (int i = 0; i < 6; i++) s2[i] = 4 * (4 * i) + 6;
    /* x[i,j,k] = 12i + 4j + k; s01[k] = sum over i,j = 6k + 36 + 24 */
    for (int k = 0; k < 4; k++) s01[k] = 6 * k + 60;
    s12[0] = 66;       /* 0..11 */
    s12[1] = 66 + 144; /* 12..23 */
    for (int j = 0; j < 3; j++) s02[j] = 32 * j + 60; /* sum_i,k 12i + 4j + k = 4*12 + 8*4j + 2*6 */
    for (int k = 0; k < 2; k++) {
        vg_dtype dt = k ? VG_INT32 : VG_FLOAT;
        check_red(vg_sum, dt, (int32_t[]){0}, 1, false, d34, 2, s0);
        check_red(vg_sum, dt, (int32_t[]){1}, 1, false, d24, 2, s1);
        check_red(vg_sum, dt, (int32_t[]){2}, 1, false, d23, 2, s2);
        check_red(vg_sum, dt, (int32_t[]){-1}, 1, false, d23, 2, s2);
        check_red(vg_sum, dt, (int32_t[]){0, 1}, 2, false, d4, 1, s01);
        check_red(vg_sum, dt, (int32_t[]){1, -1}, 2, false, d2, 1, s12);
        check_red(vg_sum, dt, (int32_t[]){0, 2}, 2, false, d3, 1, s02);
        check_red(vg_sum, dt, (int32_t[]){2, 0}, 2, false, d3, 1, s02);
        double all[1] = {276};
        check_red(vg_sum, dt, (int32_t[]){0, 1, 2}, 3, false, NULL, 0, all);
        check_red(vg_sum, dt, (int32_t[]){0, 1, 2}, 3, true, (int64_t[]){1, 1, 1}, 3, all);
        check_red(vg_sum, dt, (int32_t[]){1}, 1, true, (int64_t[]){2, 1, 4}, 3, s1);
    }
    double x[24];
    for (int i = 0; i < 24; i++) x[i] = i;
    check_red(vg_sum, VG_DOUBLE, NULL, 0, false, (int64_t[]){2, 3, 4}, 3, x); /* no axes: identity */
}

static void test_math__mean_max_min_prod(void) {
    int64_t d23[2] = {2, 3}, d4[1] = {4};
    double m2[6], mx2[6], mn2[6], m01[4], mx01[4], mn01[4];
    for (int i = 0; i < 6; i++) {
        m2[i] = 4 * i + 1.5;
        mx2[i] = 4 * i + 3;
        mn2[i] = 4 * i;
    }
    for (int k = 0; k < 4; k++) {
        m01[k] = k + 10;
        mx01[k] = 20 + k;
        mn01[k] = k;
    }
    check_red(vg_mean, VG_FLOAT, (int32_t[]){2}, 1, false, d23, 2, m2);
    check_red(vg_mean, VG_DOUBLE, (int32_t[]){0, 1}, 2, false, d4, 1, m01);
    check_red(vg_max, VG_FLOAT, (int32_t[]){-1}, 1, false, d23, 2, mx2);
    check_red(vg_max, VG_INT64, (int32_t[]){0, 1}, 2, false, d4, 1, mx01);
    check_red(vg_min, VG_DOUBLE, (int32_t[]){2}, 1, false, d23, 2, mn2);
    check_red(vg_min, VG_INT32, (int32_t[]){1, 0}, 2, false, d4, 1, mn01);
    double im2[6]; /* int mean truncates: (4i + 4i+1 + 4i+2 + 4i+3) / 4 = 4i + 1 */
    for (int i = 0; i < 6; i++) im2[i] = 4 * i + 1;
    check_red(vg_mean, VG_INT32, (int32_t[]){2}, 1, false, d23, 2, im2);
    double p[6]; /* product over axis 2 */
    for (int i = 0; i < 6; i++) p[i] = (double)(4 * i) * (4 * i + 1) * (4 * i + 2) * (4 * i + 3);
    check_red(vg_prod, VG_DOUBLE, (int32_t[]){2}, 1, false, d23, 2, p);
    check_red(vg_prod, VG_INT64, (int32_t[]){2}, 1, false, d23, 2, p);
}

static void test_math__all_any(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    double b[6] = {1, 1, 0, 1, 1, 1};
    vg_output x = cst(g, VG_BOOL, d, 2, b);
    vg_tensor *t = run(g, vg_reduce_all(g, x, (int32_t[]){1}, 1, false, NULL));
    check_values(t, VG_BOOL, (int64_t[]){2}, 1, (double[]){0, 1}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_all(g, x, (int32_t[]){0}, 1, true, NULL));
    check_values(t, VG_BOOL, (int64_t[]){1, 3}, 2, (double[]){1, 1, 0}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_any(g, vg_logical_not(g, x, NULL), NULL, -1, false, NULL));
    check_values(t, VG_BOOL, NULL, 0, (double[]){1}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_all(g, x, NULL, -1, false, NULL));
    check_values(t, VG_BOOL, NULL, 0, (double[]){0}, 0);
    vg_tensor_free(t);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_reduce_all(g, vg_const_f32(g, 1, NULL), NULL, -1, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "All");
    vg_graph_free(g);
}

static void test_math__int64_axes_and_helpers(void) {
    vg_graph *g = vg_graph_new();
    double x[6] = {1, 2, 3, 4, 5, 6};
    vg_output c = cst(g, VG_FLOAT, (int64_t[]){2, 3}, 2, x);
    vg_tensor *t = run(g, vg_sum(g, c, vg_const_i64(g, -2, NULL), false, NULL));
    check_values(t, VG_FLOAT, (int64_t[]){3}, 1, (double[]){5, 7, 9}, 1e-6);
    vg_tensor_free(t);
    vg_output m = vg_reduce_mean(g, c, NULL, -1, false, NULL);
    vg_tensor *tm = run(g, m);
    check_values(tm, VG_FLOAT, NULL, 0, (double[]){3.5}, 1e-6);
    vg_tensor_free(tm);
    CHECK(!strcmp(vg_op_type(m.op), "Mean"));
    bool keep = true;
    CHECK(vg_op_attr_bool(m.op, "keep_dims", &keep) && !keep);
    vg_dtype tidx;
    CHECK(vg_op_attr_type_(m.op, "Tidx", &tidx) && tidx == VG_INT32);
    t = run(g, vg_reduce_max(g, c, (int32_t[]){1}, 1, true, NULL));
    check_values(t, VG_FLOAT, (int64_t[]){2, 1}, 2, (double[]){3, 6}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_min(g, c, (int32_t[]){0}, 1, false, NULL));
    check_values(t, VG_FLOAT, (int64_t[]){3}, 1, (double[]){1, 2, 3}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_sum(g, c, NULL, 0, false, NULL)); /* empty axes list */
    check_values(t, VG_FLOAT, (int64_t[]){2, 3}, 2, x, 0);
    vg_tensor_free(t);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_graph_free(g);
}

/* Unknown rank: vg_reduce_* uses Range(0, Rank(x)); axes fed at run time. */
static void test_math__dynamic(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, NULL, -1, "x");
    vg_output ax = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "axes");
    vg_output all = vg_reduce_sum(g, p, NULL, -1, false, NULL);
    vg_output some = vg_sum(g, p, ax, false, NULL);
    vg_output some_keep = vg_max(g, p, ax, true, NULL);
    CHECK_EQ_INT(vg_output_shape(some).ndims, -1);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    double x[6] = {1, 2, 3, 4, 5, 6};
    vg_tensor *tx = mk(VG_FLOAT, (int64_t[]){2, 3}, 2, x);
    vg_tensor *ta = mk(VG_INT32, (int64_t[]){1}, 1, (double[]){1});
    vg_output f[2] = {p, ax};
    vg_tensor *fv[2] = {tx, ta};
    vg_tensor *t = run_feeds(g, all, f, fv, 1, &st);
    check_values(t, VG_FLOAT, NULL, 0, (double[]){21}, 1e-6);
    vg_tensor_free(t);
    t = run_feeds(g, some, f, fv, 2, &st);
    check_values(t, VG_FLOAT, (int64_t[]){2}, 1, (double[]){6, 15}, 1e-6);
    vg_tensor_free(t);
    t = run_feeds(g, some_keep, f, fv, 2, &st);
    check_values(t, VG_FLOAT, (int64_t[]){2, 1}, 2, (double[]){3, 6}, 1e-6);
    vg_tensor_free(t);
    /* bad axes at run time */
    vg_tensor *bad = mk(VG_INT32, (int64_t[]){1}, 1, (double[]){2});
    fv[1] = bad;
    CHECK(run_feeds(g, some, f, fv, 2, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Invalid reduction dimension 2 for input with 2 dimensions");
    vg_tensor_free(bad);
    bad = mk(VG_INT32, (int64_t[]){2}, 1, (double[]){1, -1});
    fv[1] = bad;
    CHECK(run_feeds(g, some, f, fv, 2, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "duplicate dimension: 1");
    kt_teardown(g, NULL, (vg_tensor *[]){bad, tx, ta}, 3, NULL, 0);
}

static void test_math__build_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 3}, 2, 1.0, NULL);
    CHECK(vg_reduce_sum(g, c, (int32_t[]){2}, 1, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Sum");
    CHECK_STR_CONTAINS(st.msg, "Invalid reduction dimension 2");
    vg_graph_free(g);
    g = vg_graph_new();
    c = vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 3}, 2, 1.0, NULL);
    CHECK(vg_sum(g, c, vg_const_f32(g, 0, NULL), false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "reduction_indices");
    vg_graph_free(g);
}

static void test_math__empty(void) {
    vg_graph *g = vg_graph_new();
    vg_output z = vg_const_fill(g, VG_FLOAT, (int64_t[]){0, 3}, 2, 0.0, NULL);
    vg_tensor *t = run(g, vg_reduce_sum(g, z, (int32_t[]){0}, 1, false, NULL));
    check_values(t, VG_FLOAT, (int64_t[]){3}, 1, (double[]){0, 0, 0}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_max(g, z, (int32_t[]){0}, 1, false, NULL));
    check_values(t, VG_FLOAT, (int64_t[]){3}, 1, (double[]){-INFINITY, -INFINITY, -INFINITY}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_mean(g, z, NULL, -1, false, NULL));
    check_values(t, VG_FLOAT, NULL, 0, (double[]){NAN}, 0);
    vg_tensor_free(t);
    t = run(g, vg_reduce_sum(g, z, (int32_t[]){1}, 1, false, NULL));
    check_values(t, VG_FLOAT, (int64_t[]){0}, 1, NULL, 0);
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* Large inputs exercise the parallel paths (reduce-all partials, outer split,
 * column split, the general path) against double-precision references. */
static void test_math__large(void) {
    enum { A = 64, B = 50, C = 30 }; /* 96000 elements */
    vg_status st;
    vg_tensor *x = vg_tensor_new(VG_FLOAT, (int64_t[]){A, B, C}, 3, &st);
    float *px = vg_tensor_data(x);
    for (int i = 0; i < A * B * C; i++) px[i] = (float)((i * 7919) % 1000) * 0.001f - 0.4f;
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){A, B, C}, 3, "x");
    vg_output ys[6] = {
        vg_reduce_sum(g, p, NULL, -1, false, NULL),
        vg_reduce_sum(g, p, (int32_t[]){2}, 1, false, NULL),
        vg_reduce_sum(g, p, (int32_t[]){0}, 1, false, NULL),
        vg_reduce_sum(g, p, (int32_t[]){1}, 1, false, NULL),
        vg_reduce_max(g, p, (int32_t[]){0, 2}, 2, false, NULL),
        vg_argmax(g, p, 1, VG_INT64, NULL),
    };
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *out[6] = {0};
    CHECK_OK(vg_session_run(s, NULL, &p, &x, 1, ys, out, 6, NULL, 0, NULL, &st), &st);
    if (out[5]) {
        double all = 0;
        for (int i = 0; i < A * B * C; i++) all += px[i];
        CHECK_NEAR(get(out[0], 0), all, 1e-5);
        int bad = 0;
        for (int a = 0; a < A; a++)
            for (int b = 0; b < B; b++) {
                double r = 0;
                for (int c = 0; c < C; c++) r += px[(a * B + b) * C + c];
                if (fabs(get(out[1], a * B + b) - r) > 1e-4) bad++;
            }
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++) {
                double r = 0;
                for (int a = 0; a < A; a++) r += px[(a * B + b) * C + c];
                if (fabs(get(out[2], b * C + c) - r) > 1e-4) bad++;
            }
        for (int a = 0; a < A; a++)
            for (int c = 0; c < C; c++) {
                double r = 0;
                int64_t am = 0;
                float best = -INFINITY;
                for (int b = 0; b < B; b++) {
                    float v = px[(a * B + b) * C + c];
                    r += v;
                    if (v > best) { best = v; am = b; }
                }
                if (fabs(get(out[3], a * C + c) - r) > 1e-4) bad++;
                if (get(out[5], a * C + c) != (double)am) bad++;
            }
        for (int b = 0; b < B; b++) {
            float m = -INFINITY;
            for (int a = 0; a < A; a++)
                for (int c = 0; c < C; c++) m = fmaxf(m, px[(a * B + b) * C + c]);
            if (get(out[4], b) != m) bad++;
        }
        CHECK_EQ_INT(bad, 0);
    }
    for (int i = 0; i < 6; i++) vg_tensor_free(out[i]);
    kt_teardown(g, s, (vg_tensor *[]){x}, 1, NULL, 0);
}

/* [R, K] with a narrow K (row-chunk partials) and a wide K (column split). */
static void test_math__large_first_axis(void) {
    int64_t shapes[2][2] = {{20000, 5}, {70, 1000}};
    for (int s = 0; s < 2; s++) {
        int64_t R = shapes[s][0], K = shapes[s][1];
        vg_status st;
        vg_tensor *x = vg_tensor_new(VG_DOUBLE, shapes[s], 2, &st);
        double *px = vg_tensor_data(x);
        for (int64_t i = 0; i < R * K; i++) px[i] = (double)((i * 7919) % 1000) - 500.0;
        vg_graph *g = vg_graph_new();
        vg_output p = vg_placeholder(g, VG_DOUBLE, shapes[s], 2, "x");
        vg_output ys[2] = {vg_reduce_sum(g, p, (int32_t[]){0}, 1, false, NULL),
                           vg_reduce_min(g, p, (int32_t[]){0}, 1, true, NULL)};
        vg_session *sess = vg_session_new(g, NULL, &st);
        vg_tensor *out[2] = {NULL, NULL};
        CHECK_OK(vg_session_run(sess, NULL, &p, &x, 1, ys, out, 2, NULL, 0, NULL, &st), &st);
        if (out[0] && out[1]) {
            int bad = 0;
            for (int64_t k = 0; k < K; k++) {
                double sum = 0, mn = INFINITY;
                for (int64_t r = 0; r < R; r++) {
                    sum += px[r * K + k];
                    mn = fmin(mn, px[r * K + k]);
                }
                if (get(out[0], k) != sum || get(out[1], k) != mn) bad++;
            }
            CHECK_EQ_INT(bad, 0);
            CHECK_EQ_INT(vg_tensor_ndims(out[1]), 2);
        }
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        vg_session_free(sess);
        vg_graph_free(g);
        vg_tensor_free(x);
    }
}

static void test_math__argmax(void) {
    vg_graph *g = vg_graph_new();
    double x[6] = {1, 5, 5, 7, 0, 2};
    vg_output c = cst(g, VG_FLOAT, (int64_t[]){2, 3}, 2, x);
    vg_output a1 = vg_argmax(g, c, 1, VG_INT64, NULL);
    vg_shape s = vg_output_shape(a1);
    CHECK_EQ_INT(s.ndims, 1);
    CHECK_EQ_INT(s.dims[0], 2);
    vg_tensor *t = run(g, a1);
    check_values(t, VG_INT64, (int64_t[]){2}, 1, (double[]){1, 0}, 0); /* first of the ties */
    vg_tensor_free(t);
    t = run(g, vg_argmax(g, c, 0, VG_INT32, NULL));
    check_values(t, VG_INT32, (int64_t[]){3}, 1, (double[]){1, 0, 0}, 0);
    vg_tensor_free(t);
    t = run(g, vg_argmin(g, c, -1, VG_INT64, NULL));
    check_values(t, VG_INT64, (int64_t[]){2}, 1, (double[]){0, 1}, 0);
    vg_tensor_free(t);
    t = run(g, vg_argmin(g, cst(g, VG_INT32, (int64_t[]){2, 3}, 2, x), 0, VG_INT32, NULL));
    check_values(t, VG_INT32, (int64_t[]){3}, 1, (double[]){0, 1, 1}, 0);
    vg_tensor_free(t);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_argmax(g, c, 2, VG_INT64, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "ArgMax");
    vg_graph_free(g);
    /* empty reduction axis at run time */
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    vg_output y = vg_argmax(g, p, 0, VG_INT64, NULL);
    vg_tensor *e = vg_tensor_new(VG_FLOAT, (int64_t[]){0, 2}, 2, &st);
    CHECK(run_feeds(g, y, &p, &e, 1, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Reduction axis 0 is empty");
    vg_tensor_free(e);
    vg_graph_free(g);
}

/* Per-channel folds of NHWC-like data ([R, K] over axis 0): the rows are added in row
 * order per column, at widths with a register-resident path (16, 32, 64) and without
 * (17, 8), for Sum, Max and Mean: at one intra-op thread, the same bits as a
 * sequential float loop. */
static void test_math__first_axis_fold_order(void) {
    const int64_t widths[] = {16, 32, 64, 17, 8};
    for (int w = 0; w < 5; w++) {
        int64_t R = 3001, K = widths[w], d[2] = {R, K};
        float *x = malloc(sizeof(float) * (size_t)(R * K));
        uint32_t sd = 12345u + (uint32_t)K;
        for (int64_t i = 0; i < R * K; i++) {
            sd = sd * 1664525u + 1013904223u;
            x[i] = (float)((sd >> 8) & 0xffff) / 65536.0f - 0.3f;
        }
        vg_graph *g = vg_graph_new();
        vg_tensor *xt = vg_tensor_new(VG_FLOAT, d, 2, NULL);
        memcpy(vg_tensor_data(xt), x, sizeof(float) * (size_t)(R * K));
        vg_output xc = vg_const(g, xt, "x");
        vg_output ax = vg_const_i32_vec(g, (int32_t[]){0}, 1, NULL);
        vg_output ys[3] = {vg_sum(g, xc, ax, false, NULL), vg_max(g, xc, ax, false, NULL), vg_mean(g, xc, ax, false, NULL)};
        vg_session_options so = {0};
        so.intra_op_threads = 1; /* one thread: the rows in order */
        so.inter_op_threads = 1;
        vg_status st;
        vg_session *sess = vg_session_new(g, &so, &st);
        CHECK(sess != NULL);
        for (int k = 0; k < 3 && sess; k++) {
            vg_tensor *t = NULL;
            CHECK_OK(vg_session_run1(sess, ys[k], &t, &st), &st);
            CHECK(t != NULL);
            for (int64_t c = 0; t && c < K; c++) {
                float a = k == 1 ? -INFINITY : 0.0f;
                for (int64_t r = 0; r < R; r++) {
                    float v = x[r * K + c];
                    a = k == 1 ? (a < v ? v : a) : a + v;
                }
                if (k == 2) a /= (float)R;
                if (((float *)vg_tensor_data(t))[c] != a) {
                    fprintf(stderr, "width %lld op %d column %lld: %.9g vs %.9g\n", (long long)K, k, (long long)c,
                            ((float *)vg_tensor_data(t))[c], a);
                    vg_test_failures++;
                    break;
                }
            }
            vg_tensor_free(t);
        }
        vg_session_free(sess);
        vg_tensor_free(xt);
        vg_graph_free(g);
        free(x);
    }
}

int main(void) {
    RUN_TEST(test_math__sum_axes);
    RUN_TEST(test_math__first_axis_fold_order);
    RUN_TEST(test_math__mean_max_min_prod);
    RUN_TEST(test_math__all_any);
    RUN_TEST(test_math__int64_axes_and_helpers);
    RUN_TEST(test_math__dynamic);
    RUN_TEST(test_math__build_errors);
    RUN_TEST(test_math__empty);
    RUN_TEST(test_math__large);
    RUN_TEST(test_math__large_first_axis);
    RUN_TEST(test_math__argmax);
    TEST_MAIN_END();
}
