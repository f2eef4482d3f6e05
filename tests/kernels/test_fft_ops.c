/* test_fft_ops.c - fft_ops.c's FFT/IFFT/FFT2D/IFFT2D/FFT3D/IFFT3D and RFFT/IRFFT (1-3D),
 * translated from TF 1.15's python/kernel_tests/fft_ops_test.py (FFTOpsTest,
 * RFFTOpsTest: testEmpty, testBasic, testRandom, testRandom1D, testError,
 * testGrad_Simple, testGrad_Random): results against a direct DFT computed here in
 * long double, round trips, shapes, TF's errors and finite-difference gradients. */
#include "test_util.h"
#include "op_test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <complex.h>

typedef long double complex lcx;

static uint64_t rng = 88172645463325252ull;
static double urand(void) { /* xorshift64: [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

static vg_tensor *crand(vg_dtype dt, const int64_t *dims, int nd) {
    vg_tensor *t = vg_tensor_new(dt, dims, nd, NULL);
    int64_t n = vg_tensor_num_elements(t) * (dt == VG_COMPLEX64 || dt == VG_COMPLEX128 ? 2 : 1);
    for (int64_t i = 0; i < n; i++) {
        if (dt == VG_COMPLEX64 || dt == VG_FLOAT) ((float *)vg_tensor_data(t))[i] = (float)urand();
        else ((double *)vg_tensor_data(t))[i] = urand();
    }
    return t;
}
static lcx cel(const vg_tensor *t, int64_t i) {
    switch (vg_tensor_dtype(t)) {
    case VG_COMPLEX64: return ((const float *)vg_tensor_data(t))[2 * i] + I * ((const float *)vg_tensor_data(t))[2 * i + 1];
    case VG_COMPLEX128:
        return ((const double *)vg_tensor_data(t))[2 * i] + I * ((const double *)vg_tensor_data(t))[2 * i + 1];
    case VG_FLOAT: return ((const float *)vg_tensor_data(t))[i];
    default: return ((const double *)vg_tensor_data(t))[i];
    }
}

/* Direct DFT of x over its innermost `rank` dims (sign -1 forward, +1 inverse with
 * 1/N), output dims od: element [.., k1..kr] = sum over n in x's (cropped to fft) of
 * x[n] w^(k.n); x's innermost dims may be longer (cropped to fft[]). Real output
 * (IRFFT) is produced by the caller. */
static lcx dft_at(const vg_tensor *x, int rank, const int64_t *fft, int64_t outer, const int64_t *k, int sign) {
    int nd = vg_tensor_ndims(x);
    const int64_t *xd = vg_tensor_dims(x);
    int64_t inner = 1;
    for (int i = 0; i < rank; i++) inner *= xd[nd - rank + i];
    int64_t cnt = 1;
    for (int i = 0; i < rank; i++) cnt *= fft[i];
    lcx s = 0;
    for (int64_t m = 0; m < cnt; m++) {
        int64_t n[3], r = m, off = 0;
        for (int i = rank - 1; i >= 0; i--) n[i] = r % fft[i], r /= fft[i];
        long double ang = 0;
        for (int i = 0; i < rank; i++) {
            off = off * xd[nd - rank + i] + n[i];
            ang += (long double)k[i] * n[i] / fft[i];
        }
        if (n[rank - 1] >= xd[nd - 1]) continue;
        s += cel(x, outer * inner + off) * cexpl(sign * 2 * M_PI * I * ang);
    }
    return sign > 0 ? s / cnt : s;
}

/* Checks out (complex, dims od, innermost `rank` dims transformed) against the DFT of x. */
static void check_dft(const vg_tensor *x, const vg_tensor *out, int rank, const int64_t *fft, int sign, double tol) {
    CHECK(out != NULL);
    if (!out) return;
    int nd = vg_tensor_ndims(out);
    const int64_t *od = vg_tensor_dims(out);
    int64_t inner = 1, outer = 1;
    for (int i = 0; i < rank; i++) inner *= od[nd - rank + i];
    for (int i = 0; i < nd - rank; i++) outer *= od[i];
    int bad = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t k[3], r = j;
            for (int i = rank - 1; i >= 0; i--) k[i] = r % od[nd - rank + i], r /= od[nd - rank + i];
            lcx want = dft_at(x, rank, fft, o, k, sign), got = cel(out, o * inner + j);
            if (cabsl(got - want) > tol * (1 + cabsl(want))) {
                if (bad++ < 4)
                    fprintf(stderr, "  [%lld,%lld] got %g%+gi want %g%+gi\n", (long long)o, (long long)j,
                            (double)creall(got), (double)cimagl(got), (double)creall(want), (double)cimagl(want));
            }
        }
    CHECK_EQ_INT(bad, 0);
}

static vg_tensor *run1(vg_graph *g, vg_output y) {
    vg_status st;
    vg_tensor *t = run_feeds(g, y, NULL, NULL, 0, &st);
    if (!t) fprintf(stderr, "run failed: %s\n", st.msg);
    return t;
}

/* TF: FFTOpsTest.testBasic / testRandom (complex64, complex128; ranks 1-3; power-of-two
 * and other lengths, including primes) and the round trip ifft(fft(x)) == x. */
static void test_fft_random(void) {
    static const int64_t shapes[][4] = {{1, 8}, {3, 7}, {2, 12}, {1, 1}, {4, 16}, {2, 5, 6}, {3, 4}, {2, 3, 5}, {2, 2, 8}};
    static const int nds[] = {2, 2, 2, 2, 2, 3, 2, 3, 3};
    for (int dt = 0; dt < 2; dt++) {
        vg_dtype ct = dt ? VG_COMPLEX128 : VG_COMPLEX64;
        double tol = dt ? 1e-12 : 2e-5;
        for (int s = 0; s < 9; s++)
            for (int rank = 1; rank <= 3 && rank <= nds[s]; rank++) {
                vg_graph *g = vg_graph_new();
                vg_tensor *x = crand(ct, shapes[s], nds[s]);
                vg_output xc = vg_const(g, x, "x");
                int64_t fft[3];
                for (int i = 0; i < rank; i++) fft[i] = shapes[s][nds[s] - rank + i];
                vg_tensor *f = run1(g, vg_fft(g, xc, rank, NULL));
                int before = vg_test_failures;
                check_dft(x, f, rank, fft, -1, tol);
                if (vg_test_failures != before) fprintf(stderr, "  (fft %s shape %d rank %d)\n", vg_dtype_name(ct), s, rank);
                vg_tensor *fi = run1(g, vg_ifft(g, xc, rank, NULL));
                check_dft(x, fi, rank, fft, +1, tol);
                vg_tensor *rt = run1(g, vg_ifft(g, vg_fft(g, xc, rank, NULL), rank, NULL));
                CHECK(rt != NULL);
                for (int64_t i = 0; rt && i < vg_tensor_num_elements(x); i++)
                    CHECK_NEAR(cabsl(cel(rt, i) - cel(x, i)), 0, tol);
                vg_tensor_free(f);
                vg_tensor_free(fi);
                vg_tensor_free(rt);
                vg_tensor_free(x);
                vg_graph_free(g);
            }
    }
}

/* TF: FFTOpsTest.testLarge-style: a long prime length (Bluestein for complex128, kissfft's
 * generic radix for complex64) keeps its precision. */
static void test_fft_long(void) {
    for (int dt = 0; dt < 2; dt++) {
        vg_dtype ct = dt ? VG_COMPLEX128 : VG_COMPLEX64;
        int64_t d[1] = {1009};
        vg_graph *g = vg_graph_new();
        vg_tensor *x = crand(ct, d, 1);
        vg_tensor *f = run1(g, vg_fft(g, vg_const(g, x, "x"), 1, NULL));
        check_dft(x, f, 1, d, -1, dt ? 1e-11 : 1e-4);
        vg_tensor_free(f);
        vg_tensor_free(x);
        vg_graph_free(g);
    }
}

/* TF: FFTOpsTest.testBasic with the hand-worked DFT of [1, 2, 3, 4]: [10, -2+2i, -2, -2-2i]. */
static void test_fft_basic(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {4};
    vg_tensor *x = vg_tensor_new_zeros(VG_COMPLEX64, d, 1, NULL);
    for (int i = 0; i < 4; i++) ((float *)vg_tensor_data(x))[2 * i] = (float)(i + 1);
    vg_tensor *f = run1(g, vg_fft(g, vg_const(g, x, NULL), 1, NULL));
    CHECK(f != NULL);
    if (f) {
        const float *v = vg_tensor_data(f);
        const float want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
        for (int i = 0; i < 8; i++) CHECK_NEAR(v[i], want[i], 1e-6);
    }
    kt_teardown(g, NULL, (vg_tensor *[]){f, x}, 2, NULL, 0);
}

/* TF: RFFTOpsTest.testBasic / testRandom: ranks 1-3, even and odd fft lengths, input
 * longer than fft_length (cropped); IRFFT against the DFT of the Hermitian-completed
 * spectrum; round trip irfft(rfft(x)) == x. */
static void test_rfft_random(void) {
    static const int64_t shapes[][3] = {{2, 8}, {3, 7}, {1, 10}, {4, 6}, {2, 3, 5}, {2, 4, 6}};
    static const int nds[] = {2, 2, 2, 2, 3, 3};
    for (int dt = 0; dt < 2; dt++) {
        vg_dtype rt = dt ? VG_DOUBLE : VG_FLOAT, ct = dt ? VG_COMPLEX128 : VG_COMPLEX64;
        double tol = dt ? 1e-12 : 3e-5;
        for (int s = 0; s < 6; s++)
            for (int rank = 1; rank <= nds[s]; rank++)
                for (int crop = 0; crop < 2; crop++) {
                    vg_graph *g = vg_graph_new();
                    vg_tensor *x = crand(rt, shapes[s], nds[s]);
                    vg_output xc = vg_const(g, x, "x");
                    int64_t fft[3];
                    int32_t fl[3];
                    for (int i = 0; i < rank; i++) {
                        fft[i] = shapes[s][nds[s] - rank + i] - (crop && i == rank - 1 ? 1 : 0);
                        fl[i] = (int32_t)fft[i];
                    }
                    vg_output len = vg_const_i32_vec(g, fl, rank, "fft_length");
                    vg_output y = vg_rfft(g, xc, len, rank, NULL);
                    vg_shape ys = vg_output_shape(y);
                    CHECK_EQ_INT(ys.dims[ys.ndims - 1], fft[rank - 1] / 2 + 1);
                    CHECK_EQ_INT(vg_output_dtype(y), ct);
                    vg_tensor *f = run1(g, y);
                    check_dft(x, f, rank, fft, -1, tol);
                    if (f) CHECK_EQ_INT(vg_tensor_dim(f, nds[s] - 1), fft[rank - 1] / 2 + 1);
                    /* the round trip recovers the cropped input */
                    vg_tensor *back = run1(g, vg_irfft(g, y, len, rank, NULL));
                    CHECK(back && vg_tensor_dtype(back) == rt);
                    if (back) {
                        int bad = 0;
                        const int64_t *bd = vg_tensor_dims(back), *xd = vg_tensor_dims(x);
                        for (int64_t i = 0; i < vg_tensor_num_elements(back); i++) {
                            int64_t r = i, xo = 0, mul = 1;
                            for (int k = nds[s] - 1; k >= 0; k--) {
                                xo += (r % bd[k]) * mul;
                                mul *= xd[k];
                                r /= bd[k];
                            }
                            if (fabsl(creall(cel(back, i)) - creall(cel(x, xo))) > tol * 10) bad++;
                        }
                        CHECK_EQ_INT(bad, 0);
                    }
                    vg_tensor_free(back);
                    vg_tensor_free(f);
                    vg_tensor_free(x);
                    vg_graph_free(g);
                }
    }
}

/* IRFFT of a given half spectrum: x = real(IDFT(full)), full[k] = X[k] for k <= n/2,
 * conj(X[n - k]) above (TF's kernel: only the real part of the inverse is kept). */
static void test_irfft_hermitian(void) {
    int64_t d[1] = {4};
    const int32_t n = 6;
    vg_graph *g = vg_graph_new();
    vg_tensor *x = crand(VG_COMPLEX128, d, 1);
    vg_tensor *y = run1(g, vg_irfft(g, vg_const(g, x, NULL), vg_const_i32_vec(g, &n, 1, NULL), 1, NULL));
    CHECK(y && vg_tensor_num_elements(y) == 6);
    for (int t = 0; y && t < 6; t++) {
        lcx s = 0;
        for (int k = 0; k < 6; k++) {
            lcx v = k <= 3 ? cel(x, k) : conjl(cel(x, 6 - k));
            s += v * cexpl(2 * M_PI * I * k * t / 6.0L);
        }
        CHECK_NEAR(((double *)vg_tensor_data(y))[t], (double)creall(s) / 6, 1e-12);
    }
    kt_teardown(g, NULL, (vg_tensor *[]){y, x}, 2, NULL, 0);
}

/* TF: FFTOpsTest.testEmpty / RFFTOpsTest.testEmpty: zero-sized inputs pass through. */
static void test_empty(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {0, 4};
    vg_tensor *x = vg_tensor_new(VG_COMPLEX64, d, 2, NULL);
    vg_tensor *f = run1(g, vg_fft(g, vg_const(g, x, NULL), 1, NULL));
    CHECK(f && vg_tensor_num_elements(f) == 0 && vg_tensor_dim(f, 1) == 4);
    vg_tensor_free(f);
    vg_tensor_free(x);
    vg_tensor *r = vg_tensor_new(VG_FLOAT, d, 2, NULL);
    const int32_t n = 4;
    f = run1(g, vg_rfft(g, vg_const(g, r, NULL), vg_const_i32_vec(g, &n, 1, NULL), 1, NULL));
    CHECK(f && vg_tensor_num_elements(f) == 0 && vg_tensor_dim(f, 1) == 3 && vg_tensor_dtype(f) == VG_COMPLEX64);
    kt_teardown(g, NULL, (vg_tensor *[]){f, r}, 2, NULL, 0);
}

/* TF: FFTOpsTest.testError / RFFTOpsTest.testError. */
static void test_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_output s = vg_const_fill(g, VG_COMPLEX64, NULL, 0, 1, NULL);
    CHECK(vg_fft(g, s, 1, NULL).op == NULL); /* "Shape must be at least rank 1 but is rank 0" */
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    g = vg_graph_new();
    int64_t d2[2] = {2, 2};
    CHECK(vg_fft(g, vg_const_fill(g, VG_COMPLEX64, d2, 2, 1, NULL), 3, NULL).op == NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_fft(g, vg_const_fill(g, VG_FLOAT, d2, 2, 1, NULL), 1, NULL).op == NULL); /* complex only */
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_fft(g, vg_const_fill(g, VG_COMPLEX64, d2, 2, 1, NULL), 4, NULL).op == NULL); /* rank 1..3 */
    vg_graph_free(g);
    /* the input must be at least fft_length long (the kernel's check, run time) */
    g = vg_graph_new();
    int64_t d[1] = {5};
    vg_output p = vg_placeholder(g, VG_FLOAT, NULL, -1, "p");
    vg_output lp = vg_placeholder(g, VG_INT32, NULL, -1, "len");
    vg_output y = vg_rfft(g, p, lp, 1, NULL);
    vg_tensor *xv = vg_tensor_new_zeros(VG_FLOAT, d, 1, NULL);
    int64_t one = 1;
    vg_tensor *lv = vg_tensor_new(VG_INT32, &one, 1, NULL);
    *(int32_t *)vg_tensor_data(lv) = 8;
    vg_output feeds[2] = {p, lp};
    vg_tensor *vals[2] = {xv, lv};
    expect_run_error(g, y, feeds, vals, 2, VG_INVALID_ARGUMENT, "Input dimension 0 must have length of at least 8 but got: 5");
    *(int32_t *)vg_tensor_data(lv) = -1;
    expect_run_error(g, y, feeds, vals, 2, VG_INVALID_ARGUMENT, "fft_length[0] must >= 0, but got: -1");
    vg_tensor_free(lv);
    int64_t two = 2;
    lv = vg_tensor_new_zeros(VG_INT32, &two, 1, NULL);
    vals[1] = lv;
    expect_run_error(g, y, feeds, vals, 2, VG_INVALID_ARGUMENT, "fft_length must have shape [1]");
    vg_tensor_free(lv);
    vg_tensor_free(xv);
    vg_graph_free(g);
    /* IRFFT: the innermost input dim needs fft_length / 2 + 1 */
    g = vg_graph_new();
    int64_t d3[1] = {3};
    const int32_t n = 6;
    y = vg_irfft(g, vg_const_fill(g, VG_COMPLEX64, d3, 1, 1, NULL), vg_const_i32_vec(g, &n, 1, NULL), 1, NULL);
    expect_run_error(g, y, NULL, NULL, 0, VG_INVALID_ARGUMENT, "must have length of at least 4 but got: 3");
    vg_graph_free(g);
}

/* TF: FFTOpsTest.testGrad_Simple / testGrad_Random (FFT, IFFT, FFT2D, IFFT3D), by
 * finite differences on real placeholders entering through Complex. */
static void grad_c(int rank, bool inverse) {
    vg_graph *g = vg_graph_new();
    int64_t d[3] = {2, 3, 4};
    vg_output re = vg_placeholder(g, VG_DOUBLE, d, 3, "re"), im = vg_placeholder(g, VG_DOUBLE, d, 3, "im");
    vg_output z = vg_complex(g, re, im, NULL);
    vg_output f = inverse ? vg_ifft(g, z, rank, NULL) : vg_fft(g, z, rank, NULL);
    vg_output y = vg_add(g, vg_real(g, f, NULL), vg_mul(g, vg_imag(g, f, NULL), cst(g, VG_DOUBLE, NULL, 0, (const double[]){-0.6}), NULL), NULL);
    vg_tensor *v[2] = {crand(VG_DOUBLE, d, 3), crand(VG_DOUBLE, d, 3)};
    vg_output xs[2] = {re, im};
    CHECK_EQ_INT(vg_gradcheck(g, xs, v, 2, y, 1e-6, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){v[0], v[1]}, 2, NULL, 0);
}

/* TF: RFFTOpsTest.testGrad_Simple / testGrad_Random (RFFT, IRFFT, 1-3D; even and odd
 * lengths; an input longer than fft_length). */
static void grad_r(int rank, bool inverse, int32_t last, int64_t in_last) {
    vg_graph *g = vg_graph_new();
    int64_t d[3] = {3, 4, in_last};
    int32_t fl[3];
    for (int i = 0; i < rank; i++) fl[i] = (int32_t)d[3 - rank + i];
    fl[rank - 1] = last;
    vg_output len = vg_const_i32_vec(g, fl, rank, "fft_length");
    vg_output y;
    vg_tensor *v[2];
    vg_output xs[2];
    int nx;
    if (!inverse) {
        vg_output x = vg_placeholder(g, VG_DOUBLE, d, 3, "x");
        vg_output f = vg_rfft(g, x, len, rank, NULL);
        y = vg_add(g, vg_real(g, f, NULL), vg_mul(g, vg_imag(g, f, NULL), cst(g, VG_DOUBLE, NULL, 0, (const double[]){0.8}), NULL), NULL);
        v[0] = crand(VG_DOUBLE, d, 3);
        xs[0] = x;
        nx = 1;
    } else {
        vg_output re = vg_placeholder(g, VG_DOUBLE, d, 3, "re"), im = vg_placeholder(g, VG_DOUBLE, d, 3, "im");
        y = vg_irfft(g, vg_complex(g, re, im, NULL), len, rank, NULL);
        v[0] = crand(VG_DOUBLE, d, 3);
        v[1] = crand(VG_DOUBLE, d, 3);
        xs[0] = re, xs[1] = im;
        nx = 2;
    }
    int bad = vg_gradcheck(g, xs, v, nx, y, 1e-6, 1e-6);
    if (bad) fprintf(stderr, "  grad_r(rank %d, inverse %d, last %d, in_last %lld)\n", rank, inverse, last, (long long)in_last);
    CHECK_EQ_INT(bad, 0);
    for (int i = 0; i < nx; i++) vg_tensor_free(v[i]);
    vg_graph_free(g);
}

static void test_gradients(void) {
    grad_c(1, false);
    grad_c(1, true);
    grad_c(2, false);
    grad_c(2, true);
    grad_c(3, false);
    grad_c(3, true);
    grad_r(1, false, 6, 6);
    grad_r(1, false, 5, 5);
    grad_r(1, false, 4, 6); /* cropped input: zero gradient beyond fft_length */
    grad_r(2, false, 6, 6);
    grad_r(3, false, 5, 5);
    grad_r(1, true, 6, 4);  /* 6 / 2 + 1 = 4 bins */
    grad_r(1, true, 7, 4);
    grad_r(1, true, 4, 5);  /* a longer input: the extra bins get zero */
    grad_r(2, true, 6, 4);
    grad_r(3, true, 5, 3);
}

int main(void) {
    RUN_TEST(test_fft_basic);
    RUN_TEST(test_fft_random);
    RUN_TEST(test_fft_long);
    RUN_TEST(test_rfft_random);
    RUN_TEST(test_irfft_hermitian);
    RUN_TEST(test_empty);
    RUN_TEST(test_errors);
    RUN_TEST(test_gradients);
    TEST_MAIN_END();
}
