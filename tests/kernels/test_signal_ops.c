/* test_signal_ops.c - tf.signal without complex numbers (src/train/signal.c): frame,
 * overlap_and_add, hann_window, hamming_window, linear_to_mel_weight_matrix.
 * Translated from TF's python/kernel_tests/signal/shape_ops_test.py (FrameTest),
 * reconstruction_ops_test.py (ReconstructionOpsTest), window_ops_test.py
 * (WindowOpsTest) and mel_ops_test.py (LinearToMelTest, whose numpy reference
 * spectrogram_to_mel_matrix is ported below); each test names its TF test. Plus
 * finite-difference gradient checks (gradcheck.h) of frame and overlap_and_add. */
#include "gradcheck.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>

#define D(...) ((const int64_t[]){__VA_ARGS__})

/* Runs y with up to one feed; returns the value (NULL on failure, reported). */
static vg_tensor *eval(vg_graph *g, vg_output y, vg_output feed, vg_tensor *val) {
    vg_status st;
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "build failed: %s\n", st.msg);
        vg_test_failures++;
        return NULL;
    }
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *out = NULL;
    if (!s || vg_session_run(s, NULL, val ? &feed : NULL, val ? &val : NULL, val ? 1 : 0, &y, &out, 1, NULL, 0, NULL,
                             &st) != VG_OK) {
        fprintf(stderr, "run failed: %s\n", st.msg);
        vg_test_failures++;
        out = NULL;
    }
    vg_session_free(s);
    return out;
}

static double get(const vg_tensor *t, int64_t i) {
    switch (vg_tensor_dtype(t)) {
    case VG_INT32: return ((const int32_t *)vg_tensor_data(t))[i];
    case VG_INT64: return (double)((const int64_t *)vg_tensor_data(t))[i];
    case VG_DOUBLE: return ((const double *)vg_tensor_data(t))[i];
    default: return ((const float *)vg_tensor_data(t))[i];
    }
}

/* t has shape dims and values want (exactly, or within tol). */
static void expect(const vg_tensor *t, const int64_t *dims, int nd, const double *want, double tol, const char *what) {
    if (!t) return;
    bool shape_ok = vg_tensor_ndims(t) == nd;
    for (int i = 0; shape_ok && i < nd; i++) shape_ok = vg_tensor_dim(t, i) == dims[i];
    if (!shape_ok) {
        fprintf(stderr, "%s: wrong shape (rank %d, dim0 %lld)\n", what, vg_tensor_ndims(t),
                (long long)(vg_tensor_ndims(t) ? vg_tensor_dim(t, 0) : -1));
        vg_test_failures++;
        return;
    }
    int bad = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++)
        if (fabs(get(t, i) - want[i]) > tol) {
            if (bad++ < 3) fprintf(stderr, "%s: [%lld] = %.9g, want %.9g\n", what, (long long)i, get(t, i), want[i]);
        }
    if (bad) vg_test_failures++;
}

static vg_output iconst(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, int64_t n, int64_t start) {
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = (double)(start + i);
    vg_output o = vg_const_values(g, dt, v, n, NULL, 0, dims, nd, false, NULL);
    free(v);
    return o;
}

/* ---- frame ------------------------------------------------------------------------ */

/* TF: FrameTest.test_mapping_of_indices_without_padding / _with_padding */
static void test_frame_mapping_of_indices(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = iconst(g, VG_INT32, D(1, 9152), 2, 9152, 0);
    vg_output f = vg_signal_frame(g, x, 512, 180, false, 0, -1, NULL);
    vg_tensor *t = eval(g, f, (vg_output){0}, NULL);
    double *want = malloc(53 * 512 * sizeof(double));
    for (int i = 0; i < 49; i++)
        for (int j = 0; j < 512; j++) want[i * 512 + j] = i * 180 + j;
    expect(t, D(1, 49, 512), 3, want, 0, "without padding");
    CHECK(vg_tensor_dtype(t) == VG_INT32);
    vg_tensor_free(t);
    vg_graph_free(g);

    g = vg_graph_new();
    x = iconst(g, VG_INT32, D(1, 10000), 2, 10000, 0);
    f = vg_signal_frame(g, x, 512, 192, true, 0, -1, NULL);
    t = eval(g, f, (vg_output){0}, NULL);
    for (int i = 0; i < 53; i++)
        for (int j = 0; j < 512; j++) want[i * 512 + j] = i * 192 + j >= 10000 ? 0 : i * 192 + j;
    expect(t, D(1, 53, 512), 3, want, 0, "with padding");
    kt_teardown(g, NULL, (vg_tensor *[]){t}, 1, (void *[]){want}, 1);
}

/* TF: FrameTest.test_basic_mono (ranks 0..4 of leading 1s) and test_basic_stereo */
static void test_frame_basic(void) {
    static const double mono_pad[] = {0, 1, 2, 2, 3, 4, 4, 5, 99}, mono[] = {0, 1, 2, 2, 3, 4};
    static const double st_pad[] = {0, 1, 2, 2, 3, 4, 4, 5, 99, 10, 11, 12, 12, 13, 14, 14, 15, 99};
    static const double st[] = {0, 1, 2, 2, 3, 4, 10, 11, 12, 12, 13, 14};
    for (int rank = 0; rank < 5; rank++) {
        int64_t dims[8], od[8];
        for (int i = 0; i < rank; i++) dims[i] = od[i] = 1;
        dims[rank] = 6;
        vg_graph *g = vg_graph_new();
        vg_output x = iconst(g, VG_INT64, dims, rank + 1, 6, 0);
        vg_tensor *t = eval(g, vg_signal_frame(g, x, 3, 2, true, 99, -1, NULL), (vg_output){0}, NULL);
        od[rank] = 3, od[rank + 1] = 3;
        expect(t, od, rank + 2, mono_pad, 0, "mono pad_end");
        vg_tensor_free(t);
        t = eval(g, vg_signal_frame(g, x, 3, 2, false, 0, -1, NULL), (vg_output){0}, NULL);
        od[rank] = 2;
        expect(t, od, rank + 2, mono, 0, "mono");
        vg_tensor_free(t);
        vg_graph_free(g);

        g = vg_graph_new();
        dims[rank] = 2, dims[rank + 1] = 6;
        double v[12];
        for (int i = 0; i < 6; i++) v[i] = i, v[6 + i] = 10 + i;
        x = vg_const_values(g, VG_FLOAT, v, 12, NULL, 0, dims, rank + 2, false, NULL);
        t = eval(g, vg_signal_frame(g, x, 3, 2, true, 99, -1, NULL), (vg_output){0}, NULL);
        od[rank] = 2, od[rank + 1] = 3, od[rank + 2] = 3;
        expect(t, od, rank + 3, st_pad, 0, "stereo pad_end");
        vg_tensor_free(t);
        t = eval(g, vg_signal_frame(g, x, 3, 2, false, 0, -1, NULL), (vg_output){0}, NULL);
        od[rank + 1] = 2;
        expect(t, od, rank + 3, st, 0, "stereo");
        vg_tensor_free(t);
        vg_graph_free(g);
    }
}

/* TF: FrameTest.test_axis */
static void test_frame_axis(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = iconst(g, VG_INT32, D(2, 4, 2), 3, 16, 0);
    double want[32];
    for (int i = 0; i < 16; i++) want[i] = i;
    vg_tensor *t = eval(g, vg_signal_frame(g, x, 2, 2, true, 0, 1, NULL), (vg_output){0}, NULL);
    expect(t, D(2, 2, 2, 2), 4, want, 0, "axis 1, step 2");
    vg_tensor_free(t);
    static const double w2[] = {0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 0, 0,
                                8, 9, 10, 11, 10, 11, 12, 13, 12, 13, 14, 15, 14, 15, 0, 0};
    t = eval(g, vg_signal_frame(g, x, 2, 1, true, 0, 1, NULL), (vg_output){0}, NULL);
    expect(t, D(2, 4, 2, 2), 4, w2, 0, "axis 1, step 1");
    vg_tensor_free(t);
    static const double w3[] = {0, 1, 2, 3, 4, 5, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 0, 0, 6, 7, 0, 0, 0, 0,
                                8, 9, 10, 11, 12, 13, 10, 11, 12, 13, 14, 15, 12, 13, 14, 15, 0, 0, 14, 15, 0, 0, 0, 0};
    t = eval(g, vg_signal_frame(g, x, 3, 1, true, 0, 1, NULL), (vg_output){0}, NULL);
    expect(t, D(2, 4, 3, 2), 4, w3, 0, "axis 1, length 3");
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* TF: FrameTest.test_window_larger_than_signal, test_length_zero, test_preserves_type */
static void test_frame_short_signals(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_const_values(g, VG_FLOAT, (const double[]){1, 2, 11, 12}, 4, NULL, 0, D(2, 2), 2, false, NULL);
    vg_tensor *t = eval(g, vg_signal_frame(g, x, 4, 1, true, 99, -1, NULL), (vg_output){0}, NULL);
    expect(t, D(2, 2, 4), 3, (const double[]){1, 2, 99, 99, 2, 99, 99, 99, 11, 12, 99, 99, 12, 99, 99, 99}, 0, "larger, pad");
    vg_tensor_free(t);
    t = eval(g, vg_signal_frame(g, x, 4, 1, false, 0, -1, NULL), (vg_output){0}, NULL);
    expect(t, D(2, 0, 4), 3, NULL, 0, "larger");
    vg_tensor_free(t);
    t = eval(g, vg_signal_frame(g, x, 4, 2, true, 99, -1, NULL), (vg_output){0}, NULL);
    expect(t, D(2, 1, 4), 3, (const double[]){1, 2, 99, 99, 11, 12, 99, 99}, 0, "larger, step 2, pad");
    vg_tensor_free(t);
    t = eval(g, vg_signal_frame(g, x, 4, 2, false, 0, -1, NULL), (vg_output){0}, NULL);
    expect(t, D(2, 0, 4), 3, NULL, 0, "larger, step 2");
    vg_tensor_free(t);
    vg_graph_free(g);

    g = vg_graph_new();
    x = vg_const_array(g, VG_FLOAT, D(0), 1, NULL, NULL);
    t = eval(g, vg_signal_frame(g, x, 2, 1, true, 99, -1, NULL), (vg_output){0}, NULL);
    expect(t, D(0, 2), 2, NULL, 0, "length zero, pad");
    vg_tensor_free(t);
    t = eval(g, vg_signal_frame(g, x, 2, 1, false, 0, -1, NULL), (vg_output){0}, NULL);
    expect(t, D(0, 2), 2, NULL, 0, "length zero");
    vg_tensor_free(t);
    x = iconst(g, VG_DOUBLE, D(10), 1, 10, 0);
    vg_output f = vg_signal_frame(g, x, 2, 3, false, 0, -1, NULL);
    CHECK(vg_output_dtype(f) == VG_DOUBLE);
    t = eval(g, f, (vg_output){0}, NULL);
    expect(t, D(3, 2), 2, (const double[]){0, 1, 3, 4, 6, 7}, 0, "float64");
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* TF: FrameTest.test_shape_inference (the build-time known cases) */
static void test_frame_shape_inference(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_INT32, D(1, 1), 2, "x");
    vg_shape s = vg_output_shape(vg_signal_frame(g, x, 2, 1, true, 99, -1, NULL));
    CHECK(s.ndims == 3 && s.dims[0] == 1 && s.dims[1] == 1 && s.dims[2] == 2);
    s = vg_output_shape(vg_signal_frame(g, x, 2, 1, false, 0, -1, NULL));
    CHECK(s.ndims == 3 && s.dims[0] == 1 && s.dims[1] == 0 && s.dims[2] == 2);
    x = vg_placeholder(g, VG_INT32, D(-1, 5, -1, 20, 5, 3), 6, "y");
    s = vg_output_shape(vg_signal_frame(g, x, 4, 3, true, 99, 3, NULL));
    const int64_t w1[7] = {-1, 5, -1, 7, 4, 5, 3}, w2[7] = {-1, 5, -1, 6, 4, 5, 3};
    CHECK(s.ndims == 7 && memcmp(s.dims, w1, sizeof w1) == 0);
    s = vg_output_shape(vg_signal_frame(g, x, 4, 3, false, 0, 3, NULL));
    CHECK(s.ndims == 7 && memcmp(s.dims, w2, sizeof w2) == 0);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_graph_free(g);
    /* small lengths: build-time shape == run-time shape */
    for (int len = 0; len < 2; len++)
        for (int fl = 0; fl < 2; fl++)
            for (int pad = 0; pad < 2; pad++) {
                g = vg_graph_new();
                x = iconst(g, VG_INT32, (const int64_t[]){len}, 1, len, 0);
                vg_output f = vg_signal_frame(g, x, fl, 1, pad, 99, -1, NULL);
                vg_shape bs = vg_output_shape(f);
                vg_tensor *t = eval(g, f, (vg_output){0}, NULL);
                if (t) CHECK(bs.ndims == 2 && bs.dims[0] == vg_tensor_dim(t, 0) && bs.dims[1] == vg_tensor_dim(t, 1));
                vg_tensor_free(t);
                vg_graph_free(g);
            }
}

/* TF: FrameTest.test_dynamic_tensor, plus pad_end with an unknown length */
static void test_frame_dynamic(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, D(-1, -1), 2, "x");
    vg_output f = vg_signal_frame(g, x, 2, 2, false, 0, -1, NULL);
    vg_output fp = vg_signal_frame(g, x, 3, 2, true, 99, -1, NULL);
    CHECK(vg_output_shape(f).ndims == 3 && vg_output_shape(f).dims[2] == 2);
    double v[12];
    for (int i = 0; i < 4; i++) v[i] = i, v[4 + i] = 10 + i, v[8 + i] = 20 + i;
    vg_tensor *in = vg_tensor_new(VG_FLOAT, D(3, 4), 2, NULL);
    for (int i = 0; i < 12; i++) ((float *)vg_tensor_data(in))[i] = (float)v[i];
    vg_tensor *t = eval(g, f, x, in);
    expect(t, D(3, 2, 2), 3, (const double[]){0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}, 0, "dynamic");
    vg_tensor_free(t);
    t = eval(g, fp, x, in);
    expect(t, D(3, 2, 3), 3, (const double[]){0, 1, 2, 2, 3, 99, 10, 11, 12, 12, 13, 99, 20, 21, 22, 22, 23, 99}, 0,
           "dynamic pad_end");
    kt_teardown(g, NULL, (vg_tensor *[]){t, in}, 2, NULL, 0);
}

/* TF: FrameTest.test_invalid_inputs (rank 0) */
static void test_frame_invalid(void) {
    vg_graph *g = vg_graph_new();
    CHECK(vg_signal_frame(g, vg_const_f32(g, 1, NULL), 1, 1, false, 0, -1, NULL).op == NULL);
    vg_status st;
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_signal_frame(g, vg_placeholder(g, VG_FLOAT, D(4), 1, "x"), 2, 0, false, 0, -1, NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* TF: FrameTest.test_gradient_numerical ((2, 128), 33, 9), in float64, and the same
 * with pad_end (the Pad and pad_value add) on the middle axis of a rank-3 signal. */
static void test_frame_gradient(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, D(2, 128), 2, "x");
    vg_output f = vg_signal_frame(g, x, 33, 9, false, 0, -1, NULL);
    vg_tensor *xv = kt_wave_f64(D(2, 128), 2, false, 0.1);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, f, 1e-6, 1e-6), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);

    g = vg_graph_new();
    x = vg_placeholder(g, VG_DOUBLE, D(2, 7, 3), 3, "x");
    f = vg_signal_frame(g, x, 3, 2, true, 0.5, 1, NULL);
    xv = kt_wave_f64(D(2, 7, 3), 3, true, 0.3);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, f, 1e-6, 1e-6), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

/* ---- overlap_and_add -------------------------------------------------------------- */

/* TF: ReconstructionOpsTest.test_all_ones */
static void test_oa_all_ones(void) {
    vg_graph *g = vg_graph_new();
    double ones[15];
    for (int i = 0; i < 15; i++) ones[i] = 1;
    vg_output x = vg_const_values(g, VG_INT64, ones, 15, NULL, 0, D(3, 5), 2, false, NULL);
    vg_tensor *t = eval(g, vg_signal_overlap_and_add(g, x, 2, NULL), (vg_output){0}, NULL);
    expect(t, D(9), 1, (const double[]){1, 1, 2, 2, 3, 2, 2, 1, 1}, 0, "all ones");
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* TF: ReconstructionOpsTest.test_simple (every hop for frame lengths 2, 3, 4) */
static void test_oa_simple(void) {
    static const struct {
        int fl, hop, n;
        double want[12];
    } k[] = {
        {2, 1, 4, {1, 5, 9, 6}},
        {2, 2, 6, {1, 2, 3, 4, 5, 6}},
        {3, 1, 5, {1, 6, 15, 14, 9}},
        {3, 2, 7, {1, 2, 7, 5, 13, 8, 9}},
        {3, 3, 9, {1, 2, 3, 4, 5, 6, 7, 8, 9}},
        {4, 1, 6, {1, 7, 18, 21, 19, 12}},
        {4, 2, 8, {1, 2, 8, 10, 16, 18, 11, 12}},
        {4, 3, 10, {1, 2, 3, 9, 6, 7, 17, 10, 11, 12}},
        {4, 4, 12, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        vg_graph *g = vg_graph_new();
        vg_output x = iconst(g, VG_INT64, (const int64_t[]){3, k[i].fl}, 2, 3 * k[i].fl, 1);
        vg_tensor *t = eval(g, vg_signal_overlap_and_add(g, x, k[i].hop, NULL), (vg_output){0}, NULL);
        expect(t, (const int64_t[]){k[i].n}, 1, k[i].want, 0, "simple");
        vg_tensor_free(t);
        vg_graph_free(g);
    }
}

/* The "powers" fixture of ReconstructionOpsTest: base^0..base^14 as [3, 5] frames,
 * hop 2; the expected sums written in that base. */
static const char *const k_expected_string[9] = {"1", "10", "100100", "1001000", "10010010000", "100100000000",
                                                 "1001000000000", "10000000000000", "100000000000000"};

static void powers(int base, double *out) {
    double p = 1;
    for (int i = 0; i < 15; i++, p *= base) out[i] = p;
}

/* TF: ReconstructionOpsTest.test_powers, test_batch, test_one_element_batch */
static void test_oa_powers(void) {
    double want[3][9], v[45];
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < 9; i++) want[b][i] = (double)strtoll(k_expected_string[i], NULL, b + 2);
        powers(b + 2, v + 15 * b);
    }
    vg_graph *g = vg_graph_new();
    vg_output x = vg_const_values(g, VG_INT64, v, 15, NULL, 0, D(3, 5), 2, false, NULL);
    vg_tensor *t = eval(g, vg_signal_overlap_and_add(g, x, 2, NULL), (vg_output){0}, NULL);
    expect(t, D(9), 1, want[0], 0, "powers");
    vg_tensor_free(t);
    x = vg_const_values(g, VG_INT64, v, 45, NULL, 0, D(3, 3, 5), 3, false, NULL);
    t = eval(g, vg_signal_overlap_and_add(g, x, 2, NULL), (vg_output){0}, NULL);
    expect(t, D(3, 9), 2, &want[0][0], 0, "batch");
    vg_tensor_free(t);
    x = vg_const_values(g, VG_FLOAT, v, 15, NULL, 0, D(1, 3, 5), 3, false, NULL);
    t = eval(g, vg_signal_overlap_and_add(g, x, 2, NULL), (vg_output){0}, NULL);
    expect(t, D(1, 9), 2, want[0], 0, "one element batch");
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* TF: ReconstructionOpsTest.test_gradient: d sum(overlap_and_add(x)) / dx == 1. */
static void test_oa_gradient_ones(void) {
    static const struct {
        int nd;
        int64_t dims[5];
        int hop;
    } k[] = {{2, {1, 128}, 1},       {2, {5, 35}, 17},          {2, {10, 128}, 128},
             {3, {2, 10, 128}, 127}, {4, {2, 2, 10, 128}, 126}, {5, {2, 2, 2, 10, 128}, 125}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        vg_graph *g = vg_graph_new();
        vg_output x = vg_const_fill(g, VG_FLOAT, k[i].dims, k[i].nd, 0.0, "zeros");
        vg_output r = vg_signal_overlap_and_add(g, x, k[i].hop, NULL);
        vg_output loss = vg_reduce_sum(g, r, NULL, -1, false, NULL);
        vg_output dx = {0};
        vg_status st;
        CHECK_OK(vg_gradients(g, &loss, 1, &x, 1, NULL, &dx, &st), &st);
        vg_tensor *t = eval(g, dx, (vg_output){0}, NULL);
        if (t) {
            int bad = 0;
            for (int64_t j = 0; j < vg_tensor_num_elements(t); j++) bad += ((float *)vg_tensor_data(t))[j] != 1.0f;
            CHECK_EQ_INT(bad, 0);
            CHECK_EQ_INT(vg_tensor_ndims(t), k[i].nd);
        }
        vg_tensor_free(t);
        vg_graph_free(g);
    }
}

/* TF: ReconstructionOpsTest.test_gradient_batch */
static void test_oa_gradient_batch(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_const_fill(g, VG_FLOAT, D(2, 10, 10), 3, 0.0, "zeros");
    vg_output r = vg_signal_overlap_and_add(g, x, 10, NULL);
    double m[200];
    for (int i = 0; i < 100; i++) m[i] = 0, m[100 + i] = i;
    r = vg_mul(g, r, vg_const_values(g, VG_FLOAT, m, 200, NULL, 0, D(2, 100), 2, false, NULL), NULL);
    vg_output loss = vg_reduce_sum(g, r, NULL, -1, false, NULL), dx = {0};
    vg_status st;
    CHECK_OK(vg_gradients(g, &loss, 1, &x, 1, NULL, &dx, &st), &st);
    vg_tensor *t = eval(g, dx, (vg_output){0}, NULL);
    expect(t, D(2, 10, 10), 3, m, 0, "gradient batch");
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* TF: ReconstructionOpsTest.test_gradient_numerical ((2, 10, 10), hop 10) and, with
 * overlap, (2, 4, 5) hop 2 and (3, 7) hop 3, by finite differences in float64. */
static void test_oa_gradient_numerical(void) {
    static const struct {
        int nd;
        int64_t dims[3];
        int hop;
    } k[] = {{3, {2, 10, 10}, 10}, {3, {2, 4, 5}, 2}, {2, {3, 7}, 3}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_DOUBLE, k[i].dims, k[i].nd, "x");
        vg_output r = vg_signal_overlap_and_add(g, x, k[i].hop, NULL);
        vg_tensor *xv = kt_wave_f64(k[i].dims, k[i].nd, false, 0.7);
        CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, r, 1e-6, 1e-6), 0);
        vg_tensor_free(xv);
        vg_graph_free(g);
    }
}

/* Unknown dimensions: shapes computed in the graph give the same sums. */
static void test_oa_dynamic(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, D(-1, -1, -1), 3, "x");
    vg_output r = vg_signal_overlap_and_add(g, x, 2, NULL);
    vg_tensor *in = vg_tensor_new(VG_FLOAT, D(2, 3, 4), 3, NULL);
    for (int i = 0; i < 24; i++) ((float *)vg_tensor_data(in))[i] = (float)(1 + i % 12);
    vg_tensor *t = eval(g, r, x, in);
    expect(t, D(2, 8), 2, (const double[]){1, 2, 8, 10, 16, 18, 11, 12, 1, 2, 8, 10, 16, 18, 11, 12}, 0, "dynamic");
    vg_tensor_free(t);
    vg_tensor_free(in);
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_signal_overlap_and_add(g, vg_placeholder(g, VG_FLOAT, D(4), 1, "x"), 2, NULL).op == NULL);
    vg_status st;
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* frame then overlap_and_add with a periodic Hann window at 50% overlap sums to a
 * constant away from the ends (the constant-overlap-add property stft relies on). */
static void test_frame_window_overlap_add(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_const_fill(g, VG_FLOAT, D(64), 1, 1.0, "ones");
    vg_output fr = vg_signal_frame(g, x, 16, 8, false, 0, -1, NULL);
    vg_output w = vg_signal_hann_window(g, 16, true, VG_FLOAT, NULL);
    vg_output y = vg_signal_overlap_and_add(g, vg_mul(g, fr, w, NULL), 8, NULL);
    vg_tensor *t = eval(g, y, (vg_output){0}, NULL);
    if (t) {
        CHECK_EQ_INT(vg_tensor_dim(t, 0), 64);
        for (int i = 8; i < 56; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], 1.0, 1e-6);
    }
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* ---- windows ---------------------------------------------------------------------- */

/* window_ops_test.py's _scipy_raised_cosine */
static void scipy_raised_cosine(int64_t length, bool symmetric, double a, double b, double *out) {
    if (length == 1) {
        out[0] = 1;
        return;
    }
    bool odd = length % 2;
    int64_t n = length;
    if (!symmetric && !odd) n += 1;
    for (int64_t i = 0; i < length; i++) out[i] = a - b * cos(2.0 * M_PI * (double)i / (double)(n - 1));
}

/* TF: WindowOpsTest.test_hann_window and test_hamming_window (lengths 1, 2, 3, 4, 5,
 * 31, 64, 128; periodic and not; float32 tolerance 1e-6, float64 1e-9). */
static void test_windows(void) {
    static const int64_t lengths[] = {1, 2, 3, 4, 5, 31, 64, 128};
    for (int hamming = 0; hamming < 2; hamming++)
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            for (int periodic = 0; periodic < 2; periodic++)
                for (int dbl = 0; dbl < 2; dbl++) {
                    int64_t n = lengths[li];
                    double want[128];
                    scipy_raised_cosine(n, !periodic, hamming ? 0.54 : 0.5, hamming ? 0.46 : 0.5, want);
                    vg_graph *g = vg_graph_new();
                    vg_dtype dt = dbl ? VG_DOUBLE : VG_FLOAT;
                    vg_output w = hamming ? vg_signal_hamming_window(g, n, periodic, dt, NULL)
                                          : vg_signal_hann_window(g, n, periodic, dt, NULL);
                    CHECK(vg_output_dtype(w) == dt);
                    vg_tensor *t = eval(g, w, (vg_output){0}, NULL);
                    expect(t, &n, 1, want, dbl ? 1e-9 : 1e-6, hamming ? "hamming" : "hann");
                    vg_tensor_free(t);
                    vg_graph_free(g);
                }
    vg_graph *g = vg_graph_new();
    CHECK(vg_signal_hann_window(g, 4, true, VG_INT32, NULL).op == NULL);
    vg_status st;
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* ---- linear_to_mel_weight_matrix -------------------------------------------------- */

/* mel_ops_test.py's spectrogram_to_mel_matrix (from tensorflow/models' audioset
 * mel_features.py), in double. */
static double ref_hertz_to_mel(double f) { return 1127.0 * log(1.0 + f / 700.0); }

static void spectrogram_to_mel_matrix(int nm, int nb, double rate, double lo, double hi, double *out) {
    double nyq = rate / 2.0;
    double *bins_mel = malloc((size_t)nb * sizeof(double)), *edges = malloc((size_t)(nm + 2) * sizeof(double));
    for (int i = 0; i < nb; i++) bins_mel[i] = ref_hertz_to_mel(nb == 1 ? 0 : nyq * i / (nb - 1));
    double ml = ref_hertz_to_mel(lo), mh = ref_hertz_to_mel(hi);
    for (int i = 0; i < nm + 2; i++) edges[i] = ml + (mh - ml) * i / (nm + 1);
    for (int i = 0; i < nm; i++)
        for (int k = 0; k < nb; k++) {
            double l = (bins_mel[k] - edges[i]) / (edges[i + 1] - edges[i]);
            double u = (edges[i + 2] - bins_mel[k]) / (edges[i + 2] - edges[i + 1]);
            double m = fmin(l, u);
            out[k * nm + i] = m > 0 ? m : 0;
        }
    for (int i = 0; i < nm; i++) out[i] = 0; /* the DC bin */
    free(bins_mel);
    free(edges);
}

/* TF: LinearToMelTest.test_matches_reference_implementation (its settings: the
 * defaults and Tacotron's; float64, atol 3e-6), plus a 16 kHz speech setting, and the
 * same in float32 (a looser tolerance: float32 mel values near 2800 carry about 2e-4
 * of rounding, divided by band widths of ~50 mel) */
static void test_mel_matches_reference(void) {
    static const struct {
        int nm, nb;
        double rate, lo, hi;
    } k[] = {{20, 129, 8000, 125, 3800}, {80, 1025, 24000, 80, 12000}, {40, 257, 16000, 20, 4000}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        for (int dbl = 0; dbl < 2; dbl++) {
            double *want = malloc((size_t)k[i].nm * k[i].nb * sizeof(double));
            spectrogram_to_mel_matrix(k[i].nm, k[i].nb, k[i].rate, k[i].lo, k[i].hi, want);
            vg_graph *g = vg_graph_new();
            vg_output m = vg_signal_linear_to_mel_weight_matrix(g, k[i].nm, k[i].nb, k[i].rate, k[i].lo, k[i].hi,
                                                                dbl ? VG_DOUBLE : VG_FLOAT, NULL);
            vg_shape s = vg_output_shape(m);
            CHECK(s.ndims == 2 && s.dims[0] == k[i].nb && s.dims[1] == k[i].nm);
            vg_tensor *t = eval(g, m, (vg_output){0}, NULL);
            expect(t, (const int64_t[]){k[i].nb, k[i].nm}, 2, want, dbl ? 3e-6 : 1e-4, dbl ? "mel f64" : "mel f32");
            if (t) {
                double sum = 0;
                for (int64_t j = 0; j < vg_tensor_num_elements(t); j++) sum += get(t, j);
                CHECK(sum > k[i].nm * 0.5); /* not an all-zero matrix */
            }
            vg_tensor_free(t);
            vg_graph_free(g);
            free(want);
        }
}

static void expect_mel_error(int nm, int nb, double rate, double lo, double hi, vg_dtype dt, const char *msg) {
    vg_graph *g = vg_graph_new();
    CHECK(vg_signal_linear_to_mel_weight_matrix(g, nm, nb, rate, lo, hi, dt, NULL).op == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, msg);
    vg_graph_free(g);
}

/* TF: LinearToMelTest.test_error */
static void test_mel_errors(void) {
    expect_mel_error(0, 129, 8000, 125, 3800, VG_FLOAT, "num_mel_bins must be positive. Got: 0");
    expect_mel_error(20, 0, 8000, 125, 3800, VG_FLOAT, "Requires num > 0");
    expect_mel_error(20, 129, 0, 125, 3800, VG_FLOAT, "sample_rate must be positive");
    expect_mel_error(20, 129, 8000, -1, 3800, VG_FLOAT, "lower_edge_hertz must be non-negative");
    expect_mel_error(20, 129, 8000, 100, 10, VG_FLOAT, "lower_edge_hertz 100.0 >= upper_edge_hertz 10.0");
    expect_mel_error(20, 129, 800, 125, 1000, VG_FLOAT, "upper_edge_hertz must not be larger than the Nyquist frequency");
    expect_mel_error(20, 129, 8000, 125, 3800, VG_INT32, "dtype must be a floating point type");
}

int main(void) {
    RUN_TEST(test_frame_mapping_of_indices);
    RUN_TEST(test_frame_basic);
    RUN_TEST(test_frame_axis);
    RUN_TEST(test_frame_short_signals);
    RUN_TEST(test_frame_shape_inference);
    RUN_TEST(test_frame_dynamic);
    RUN_TEST(test_frame_invalid);
    RUN_TEST(test_frame_gradient);
    RUN_TEST(test_oa_all_ones);
    RUN_TEST(test_oa_simple);
    RUN_TEST(test_oa_powers);
    RUN_TEST(test_oa_gradient_ones);
    RUN_TEST(test_oa_gradient_batch);
    RUN_TEST(test_oa_gradient_numerical);
    RUN_TEST(test_oa_dynamic);
    RUN_TEST(test_frame_window_overlap_add);
    RUN_TEST(test_windows);
    RUN_TEST(test_mel_matches_reference);
    RUN_TEST(test_mel_errors);
    TEST_MAIN_END();
}
