/* test_signal_stft.c - tf.signal.stft / inverse_stft / inverse_stft_window_fn and
 * mfccs_from_log_mel_spectrograms (src/train/signal.c), translated from TF 1.15's
 * python/kernel_tests/signal/spectral_ops_test.py (SpectralOpsTest: test_shapes,
 * test_stft_and_inverse_stft, test_stft_round_trip, test_inverse_stft_window_fn,
 * test_inverse_stft_window_fn_special_case, test_gradients, test_gradients_numerical)
 * and mfcc_ops_test.py (MFCCTest: test_error, test_basic). The NumPy references of the
 * TF test (_np_stft, _np_inverse_stft: a direct DFT here) are computed in long double. */
#include "test_util.h"
#include "op_test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <complex.h>

typedef long double complex lcx;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void) { /* [0, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand() + 1e-300)) * cos(2 * M_PI * urand()); }

static double np_hann_periodic(int64_t n, int64_t len) {
    if (len == 1) return 1;
    int64_t l = len % 2 ? len : len + 1;
    return 0.5 - 0.5 * cos(2.0 * M_PI * (double)n / (double)(l - 1));
}

static vg_tensor *vec(vg_dtype dt, const double *v, int64_t n) { return mk(dt, &n, 1, v); }

static lcx cel(const vg_tensor *t, int64_t i) {
    if (vg_tensor_dtype(t) == VG_COMPLEX64)
        return ((const float *)vg_tensor_data(t))[2 * i] + I * ((const float *)vg_tensor_data(t))[2 * i + 1];
    return ((const double *)vg_tensor_data(t))[2 * i] + I * ((const double *)vg_tensor_data(t))[2 * i + 1];
}

/* TF: SpectralOpsTest.test_shapes */
static void test_shapes(void) {
    static const int64_t cases[4][4] = {{7, 8, 0, 5}, {8, 8, 0, 5}, {8, 8, 16, 9}, {16, 8, 8, 5}};
    for (int c = 0; c < 4; c++) {
        vg_graph *g = vg_graph_new();
        int64_t n = 512;
        vg_tensor *z = vg_tensor_new_zeros(VG_FLOAT, &n, 1, NULL);
        vg_output s = vg_signal_stft(g, vg_const(g, z, "signal"), cases[c][0], cases[c][1], cases[c][2],
                                     vg_signal_hann_window_fn, NULL, true, NULL);
        vg_tensor_free(z);
        vg_shape sh = vg_output_shape(s);
        CHECK(sh.ndims == 2 && sh.dims[0] == 64 && sh.dims[1] == cases[c][3]);
        vg_tensor *t = run(g, s);
        CHECK(t && vg_tensor_dim(t, 0) == 64 && vg_tensor_dim(t, 1) == cases[c][3]);
        vg_tensor_free(t);
        vg_graph_free(g);
    }
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {32, 9};
    vg_tensor *z = vg_tensor_new_zeros(VG_COMPLEX64, d, 2, NULL);
    vg_output inv = vg_signal_inverse_stft(g, vg_const(g, z, "stft"), 8, 8, 16, vg_signal_hann_window_fn, NULL, NULL);
    vg_tensor_free(z);
    vg_shape sh = vg_output_shape(inv);
    CHECK(sh.ndims == 1 && sh.dims[0] == 256);
    vg_tensor *t = run(g, inv);
    CHECK(t && vg_tensor_dim(t, 0) == (32 - 1) * 8 + 8);
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* TF: SpectralOpsTest.test_stft_and_inverse_stft (_compare): stft and inverse_stft
 * against _np_stft / _np_inverse_stft, from a Const and from a placeholder of unknown
 * length. */
static void compare(int64_t len, int64_t fl, int64_t step, int64_t fft, vg_dtype dt, double tol) {
    double *sig = malloc(sizeof(double) * (size_t)len);
    for (int64_t i = 0; i < len; i++) sig[i] = dt == VG_FLOAT ? (double)(float)urand() : urand();
    int64_t frames = 1 + (len - fl) / step, bins = fft / 2 + 1;
    /* expected stft: rfft(frames * window, fft) (the frame cropped to fft when longer) */
    lcx *es = malloc(sizeof(lcx) * (size_t)(frames * bins));
    for (int64_t f = 0; f < frames; f++)
        for (int64_t k = 0; k < bins; k++) {
            lcx s = 0;
            for (int64_t j = 0; j < fl && j < fft; j++)
                s += sig[f * step + j] * np_hann_periodic(j, fl) * cexpl(-2 * M_PI * I * k * j / (long double)fft);
            es[f * bins + k] = s;
        }
    /* expected inverse: irfft(stft, fft)[:fl] padded to fl, times window, overlap-added */
    int64_t olen = fl + (frames - 1) * step;
    long double *ei = calloc((size_t)olen, sizeof(long double));
    for (int64_t f = 0; f < frames; f++)
        for (int64_t j = 0; j < fl && j < fft; j++) {
            lcx s = 0;
            for (int64_t k = 0; k < fft; k++) {
                lcx v = k < bins ? es[f * bins + k] : conjl(es[f * bins + fft - k]);
                s += v * cexpl(2 * M_PI * I * k * j / (long double)fft);
            }
            ei[f * step + j] += creall(s) / fft * np_hann_periodic(j, fl);
        }
    vg_graph *g = vg_graph_new();
    vg_tensor *sv = vec(dt, sig, len);
    vg_output sc = vg_const(g, sv, "signal");
    vg_output ph = vg_placeholder(g, dt, (const int64_t[]){-1}, 1, "ph");
    vg_output st1 = vg_signal_stft(g, sc, fl, step, fft, vg_signal_hann_window_fn, NULL, false, NULL);
    vg_output st2 = vg_signal_stft(g, ph, fl, step, fft, vg_signal_hann_window_fn, NULL, false, NULL);
    vg_output inv = vg_signal_inverse_stft(g, st1, fl, step, fft, vg_signal_hann_window_fn, NULL, NULL);
    vg_output fetch[3] = {st1, st2, inv};
    vg_tensor *out[3] = {0};
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, &ph, &sv, 1, fetch, out, 3, NULL, 0, NULL, &st), &st);
    vg_session_free(s);
    if (out[0] && out[1] && out[2]) {
        CHECK_EQ_INT(vg_tensor_dim(out[0], 0), frames);
        CHECK_EQ_INT(vg_tensor_dim(out[0], 1), bins);
        int bad = 0;
        for (int64_t i = 0; i < frames * bins; i++) {
            lcx a = cel(out[0], i), b = cel(out[1], i);
            if (cabsl(a - es[i]) > tol * (1 + cabsl(es[i])) || cabsl(a - b) > tol) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK_EQ_INT(vg_tensor_dim(out[2], 0), olen);
        bad = 0;
        for (int64_t i = 0; i < olen && i < vg_tensor_dim(out[2], 0); i++)
            if (fabsl(get(out[2], i) - ei[i]) > tol * (1 + fabsl(ei[i]))) bad++;
        CHECK_EQ_INT(bad, 0);
        if (bad) fprintf(stderr, "  compare(%lld, %lld, %lld, %lld, %s)\n", (long long)len, (long long)fl,
                         (long long)step, (long long)fft, vg_dtype_name(dt));
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    kt_teardown(g, NULL, (vg_tensor *[]){sv}, 1, (void *[]){es, ei, sig}, 3);
}

static void test_stft_and_inverse_stft(void) {
    static const int64_t p[][4] = {{512, 64, 32, 64}, {512, 64, 64, 64}, {512, 72, 64, 64},
                                   {512, 64, 25, 64}, {512, 25, 15, 36}, {123, 23, 5, 42}};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        compare(p[i][0], p[i][1], p[i][2], p[i][3], VG_FLOAT, 1e-4);
        compare(p[i][0], p[i][1], p[i][2], p[i][3], VG_DOUBLE, 1e-8);
    }
}

/* TF: SpectralOpsTest.test_stft_round_trip: inverse_stft with inverse_stft_window_fn
 * reconstructs the signal away from the edges (and plain hann up to a scale). */
static void round_trip(int64_t len, int64_t fl, int64_t step, int64_t fft, vg_dtype dt, double threshold,
                       double corrected) {
    double *sig = malloc(sizeof(double) * (size_t)len);
    for (int64_t i = 0; i < len; i++) sig[i] = dt == VG_FLOAT ? (double)(float)nrand() : nrand();
    vg_graph *g = vg_graph_new();
    vg_tensor *sv = vec(dt, sig, len);
    vg_output stft = vg_signal_stft(g, vg_const(g, sv, "signal"), fl, step, fft, vg_signal_hann_window_fn, NULL, false, NULL);
    vg_tensor_free(sv);
    vg_signal_inverse_window iw = {step, NULL, NULL};
    vg_output fetch[2] = {vg_signal_inverse_stft(g, stft, fl, step, fft, vg_signal_hann_window_fn, NULL, NULL),
                          vg_signal_inverse_stft(g, stft, fl, step, fft, vg_signal_inverse_stft_window_fn, &iw, NULL)};
    vg_tensor *out[2] = {0};
    vg_status st;
    CHECK_OK(run_threads(g, 1, NULL, NULL, 0, fetch, out, 2, &st), &st);
    if (out[0] && out[1]) {
        int64_t n = vg_tensor_dim(out[0], 0), m = n - 2 * fl;
        double ma = 0, ms = 0;
        for (int64_t i = fl; i < n - fl; i++) ma += fabs(get(out[0], i)), ms += fabs(sig[i]);
        ma /= (double)m, ms /= (double)m;
        double s1 = 0, s2 = 0, q1 = 0, q2 = 0;
        for (int64_t i = fl; i < n - fl; i++) {
            double d1 = get(out[0], i) / ma - sig[i] / ms, d2 = get(out[1], i) - sig[i];
            s1 += d1, q1 += d1 * d1, s2 += d2, q2 += d2 * d2;
        }
        double sd1 = sqrt(q1 / (double)m - (s1 / (double)m) * (s1 / (double)m));
        double sd2 = sqrt(fmax(0, q2 / (double)m - (s2 / (double)m) * (s2 / (double)m)));
        CHECK(sd1 < threshold);
        CHECK(sd2 < corrected);
        if (!(sd2 < corrected)) fprintf(stderr, "  round trip %lld/%lld: std %g\n", (long long)fl, (long long)step, sd2);
    }
    kt_teardown(g, NULL, (vg_tensor *[]){out[0], out[1]}, 2, (void *[]){sig}, 1);
}

static void test_stft_round_trip(void) {
    round_trip(4096, 256, 32, 256, VG_FLOAT, 1e-5, 1e-6);
    round_trip(4096, 256, 32, 256, VG_DOUBLE, 1e-8, 1e-8);
    round_trip(4096, 256, 64, 256, VG_FLOAT, 1e-5, 1e-6);
    round_trip(4096, 256, 64, 256, VG_DOUBLE, 1e-8, 1e-8);
    round_trip(4096, 128, 25, 128, VG_FLOAT, 1e-3, 1e-6);
    round_trip(4096, 128, 25, 128, VG_DOUBLE, 5e-4, 1e-8);
    round_trip(4096, 127, 32, 128, VG_FLOAT, 1e-3, 1e-6);
    round_trip(4096, 127, 32, 128, VG_DOUBLE, 1e-3, 1e-8);
    round_trip(4096, 128, 64, 128, VG_FLOAT, 0.4, 1e-6);
    round_trip(4096, 128, 64, 128, VG_DOUBLE, 0.4, 1e-8);
}

/* TF: SpectralOpsTest.test_inverse_stft_window_fn (unit gain at every phase) and
 * test_inverse_stft_window_fn_special_case (frame_length = 4 * frame_step: hann / 1.5). */
static void test_inverse_stft_window_fn(void) {
    static const int64_t p[][2] = {{256, 32}, {256, 64}, {128, 25}, {127, 32}, {128, 64}};
    for (int c = 0; c < 5; c++) {
        int64_t fl = p[c][0], step = p[c][1];
        vg_graph *g = vg_graph_new();
        vg_signal_inverse_window iw = {step, NULL, NULL};
        vg_tensor *h = run(g, vg_signal_hann_window_fn(g, fl, VG_FLOAT, NULL));
        vg_tensor *w = run(g, vg_signal_inverse_stft_window_fn(g, fl, VG_FLOAT, &iw));
        CHECK(h && w);
        for (int64_t i = 0; h && w && i < step; i++) {
            double s = 0;
            for (int64_t j = i; j < fl; j += step) s += get(h, j) * get(w, j);
            CHECK_NEAR(s, 1.0, 1e-6);
        }
        if (h && w && fl == 4 * step)
            for (int64_t j = 0; j < fl; j++) CHECK_NEAR(get(w, j) * 1.5, get(h, j), 1e-6);
        kt_teardown(g, NULL, (vg_tensor *[]){h, w}, 2, NULL, 0);
    }
}

/* TF: SpectralOpsTest.test_gradients: d sum|stft| / d signal is all zero for a zero
 * signal (ComplexAbs's div_no_nan) and not all zero for a sinusoid. */
static void test_gradients(void) {
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        int64_t n = 512;
        double *v = malloc(sizeof(double) * 512);
        for (int i = 0; i < 512; i++) v[i] = k ? sin(2 * M_PI * (double)(float)(i / 511.0)) : 0;
        vg_output x = vg_placeholder(g, VG_FLOAT, &n, 1, "x");
        vg_output stft = vg_signal_stft(g, x, 32, 16, 32, vg_signal_hann_window_fn, NULL, false, NULL);
        vg_output loss = vg_reduce_sum(g, vg_complex_abs(g, stft, NULL), NULL, -1, false, NULL);
        vg_output dx;
        vg_status st;
        CHECK_OK(vg_gradients(g, &loss, 1, &x, 1, NULL, &dx, &st), &st);
        vg_tensor *xv = vec(VG_FLOAT, v, 512);
        vg_tensor *gv = run_feeds(g, dx, &x, &xv, 1, &st);
        CHECK(gv != NULL);
        int nonzero = 0;
        for (int i = 0; gv && i < 512; i++) nonzero += get(gv, i) != 0.0;
        if (k) CHECK(nonzero > 0);
        else CHECK_EQ_INT(nonzero, 0);
        vg_tensor_free(gv);
        vg_tensor_free(xv);
        free(v);
        vg_graph_free(g);
    }
}

/* TF: SpectralOpsTest.test_gradients_numerical (float64 cases): stft's and
 * inverse_stft's gradients against finite differences. */
static void grad_numerical(int64_t len, int64_t fl, int64_t step, int64_t fft) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, &len, 1, "x");
    vg_output s = vg_signal_stft(g, x, fl, step, fft, vg_signal_hann_window_fn, NULL, false, NULL);
    vg_output y = vg_add(g, vg_real(g, s, NULL),
                         vg_mul(g, vg_imag(g, s, NULL), cst(g, VG_DOUBLE, NULL, 0, (const double[]){0.6}), NULL), NULL);
    double *v = malloc(sizeof(double) * (size_t)len);
    for (int64_t i = 0; i < len; i++) v[i] = urand() * 2 - 1;
    vg_tensor *xv = vec(VG_DOUBLE, v, len);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-6), 0);
    vg_tensor_free(xv);
    free(v);
    vg_graph_free(g);
    /* backward: inverse_stft of a complex input built from real placeholders */
    g = vg_graph_new();
    int64_t frames = 1 + (len - fl) / step, d[2] = {frames, fft / 2 + 1};
    vg_output re = vg_placeholder(g, VG_DOUBLE, d, 2, "re"), im = vg_placeholder(g, VG_DOUBLE, d, 2, "im");
    y = vg_signal_inverse_stft(g, vg_complex(g, re, im, NULL), fl, step, fft, vg_signal_hann_window_fn, NULL, NULL);
    vg_tensor *vals[2] = {mk(VG_DOUBLE, d, 2, NULL), mk(VG_DOUBLE, d, 2, NULL)};
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < d[0] * d[1]; i++) ((double *)vg_tensor_data(vals[k]))[i] = urand() * 2 - 1;
    vg_output xs[2] = {re, im};
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, y, 1e-6, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){vals[0], vals[1]}, 2, NULL, 0);
}

static void test_gradients_numerical(void) {
    grad_numerical(64, 16, 8, 16);
    grad_numerical(64, 16, 16, 16);
    grad_numerical(64, 16, 7, 16);
    grad_numerical(64, 7, 4, 9);
    grad_numerical(29, 5, 1, 10);
}

/* TF: MFCCTest.test_error: an empty mel dimension is refused. */
static void test_mfcc_error(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 0};
    vg_tensor *z = vg_tensor_new(VG_FLOAT, d, 2, NULL);
    vg_output m = vg_signal_mfccs_from_log_mel_spectrograms(g, vg_const(g, z, NULL), NULL);
    vg_tensor_free(z);
    CHECK(m.op == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "num_mel_bins must be positive");
    vg_graph_free(g);
}

/* TF: MFCCTest.test_basic, checked against the DCT-II definition (dct_ops_test.py's
 * scipy.fftpack.dct(type=2): 2 sum x[n] cos(pi k (2n + 1) / 2N)) / sqrt(2N). */
static void test_mfcc_basic(void) {
    for (int k = 0; k < 2; k++) {
        vg_dtype dt = k ? VG_DOUBLE : VG_FLOAT;
        int64_t d[2] = {3, 13};
        double v[39];
        for (int i = 0; i < 39; i++) v[i] = urand() * 4 - 2;
        vg_graph *g = vg_graph_new();
        vg_output m = vg_signal_mfccs_from_log_mel_spectrograms(g, cst(g, dt, d, 2, v), NULL);
        CHECK_EQ_INT(vg_output_dtype(m), dt);
        vg_tensor *t = run(g, m);
        double want[39];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 13; q++) {
                long double s = 0;
                for (int n = 0; n < 13; n++) s += 2 * (dt == VG_FLOAT ? (double)(float)v[r * 13 + n] : v[r * 13 + n]) *
                                                  cosl(M_PI * q * (2 * n + 1) / 26.0L);
                want[r * 13 + q] = (double)(s / sqrtl(26));
            }
        check_values(t, dt, d, 2, want, k ? 1e-12 : 2e-5);
        vg_tensor_free(t);
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_shapes);
    RUN_TEST(test_stft_and_inverse_stft);
    RUN_TEST(test_stft_round_trip);
    RUN_TEST(test_inverse_stft_window_fn);
    RUN_TEST(test_gradients);
    RUN_TEST(test_gradients_numerical);
    RUN_TEST(test_mfcc_error);
    RUN_TEST(test_mfcc_basic);
    TEST_MAIN_END();
}
