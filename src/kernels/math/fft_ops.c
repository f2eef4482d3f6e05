/*
 * fft_ops.c - TF 1.15's spectral ops (core/ops/spectral_ops.cc, kernels/fft_ops.cc):
 * FFT, IFFT, FFT2D, IFFT2D, FFT3D, IFFT3D (complex64 / complex128 over the innermost
 * 1, 2 or 3 dims) and RFFT, IRFFT, RFFT2D, IRFFT2D, RFFT3D, IRFFT3D (real <-> the
 * non-negative half of the innermost dim, with an fft_length input), with their shape
 * functions, kernels, gradients (python/ops/signal/fft_ops.py / spectral_grad.py) and
 * the builders of vigil/ops_ext.h, and the op table vg__ops_fft.
 *
 * The transforms. complex64 uses kissfft (libkissfft-dev, BSD-3-Clause, the float
 * build already linked for AudioSpectrogram: mixed radix, any length). Debian ships no
 * double-precision FFT under a permissive license (libkissfft-dev is float only; FFTW
 * is GPL, which a library cannot impose on its users; clFFT/VkFFT/SpFFT are GPU or MPI
 * libraries), so complex128 runs this file's own transform: iterative radix-2
 * Cooley-Tukey for power-of-two lengths and Bluestein's chirp-z (three radix-2
 * transforms of a power of two >= 2n - 1) for the rest, in double with twiddles from
 * cos/sin of the exact angle. tests/test_fft_ops.c checks both against a direct DFT.
 *
 * An N-d transform is 1-d transforms along each of the innermost dims in turn (lines
 * gathered into a contiguous buffer). The inverse divides by the product of the
 * lengths, as TF. RFFT crops each innermost input dim to fft_length, transforms the
 * real input as complex and keeps the first fft_length[-1] / 2 + 1 bins of the last
 * dim; IRFFT crops to fft_length (the last dim to fft_length[-1] / 2 + 1), inverts the
 * outer dims as complex, then rebuilds the last dim's negative frequencies as
 * conj(X[n - k]) and keeps the real part of its inverse (TF 1.15's Eigen kernel).
 */
#include "kernels/math/math_internal.h"
#include "vigil/ops_ext.h"

#include <kiss_fft.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* complex128 transform (unnormalized: sign -1 forward, +1 inverse) */

typedef struct zplan {
    int64_t n, m;      /* length; m: radix-2 length (n itself, or Bluestein's) */
    double *tw;        /* m/2 twiddles (re, im) of the radix-2 transform, forward sign */
    double *chirp;     /* Bluestein: n chirp values w_k = exp(-i pi k^2 / n) */
    double *bfft;      /* Bluestein: FFT of the conjugate chirp, length m */
    double *work;      /* m complex */
} zplan;

static bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* In-place radix-2 transform of a (m complex), sign -1 (forward) or +1. */
static void radix2(double *a, int64_t m, const double *tw, int sign) {
    for (int64_t i = 1, j = 0; i < m; i++) { /* bit reversal */
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            double t0 = a[2 * i], t1 = a[2 * i + 1];
            a[2 * i] = a[2 * j], a[2 * i + 1] = a[2 * j + 1];
            a[2 * j] = t0, a[2 * j + 1] = t1;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        int64_t half = len >> 1, step = m / len;
        for (int64_t s = 0; s < m; s += len)
            for (int64_t k = 0; k < half; k++) {
                double wr = tw[2 * k * step], wi = -sign * tw[2 * k * step + 1]; /* tw: sign -1 */
                double *u = a + 2 * (s + k), *v = a + 2 * (s + k + half);
                double xr = v[0] * wr - v[1] * wi, xi = v[0] * wi + v[1] * wr;
                v[0] = u[0] - xr, v[1] = u[1] - xi;
                u[0] += xr, u[1] += xi;
            }
    }
}

static void zplan_free(zplan *p) {
    free(p->tw);
    free(p->chirp);
    free(p->bfft);
    free(p->work);
}

static bool zplan_init(zplan *p, int64_t n) {
    memset(p, 0, sizeof *p);
    p->n = n;
    p->m = n;
    if (!pow2(n)) {
        p->m = 1;
        while (p->m < 2 * n - 1) p->m <<= 1;
    }
    int64_t m = p->m;
    p->tw = malloc(sizeof(double) * (size_t)(m > 1 ? m : 2));
    p->work = malloc(sizeof(double) * 2 * (size_t)m);
    if (!p->tw || !p->work) return false;
    for (int64_t k = 0; k < m / 2; k++) {
        double ang = -2.0 * M_PI * (double)k / (double)m;
        p->tw[2 * k] = cos(ang), p->tw[2 * k + 1] = sin(ang);
    }
    if (m == n) return true;
    p->chirp = malloc(sizeof(double) * 2 * (size_t)n);
    p->bfft = calloc(2 * (size_t)m, sizeof(double));
    if (!p->chirp || !p->bfft) return false;
    for (int64_t k = 0; k < n; k++) {
        /* k^2 mod 2n keeps the angle small (exact in int64 for n < 2^31) */
        int64_t k2 = (k * k) % (2 * n);
        double ang = -M_PI * (double)k2 / (double)n;
        p->chirp[2 * k] = cos(ang), p->chirp[2 * k + 1] = sin(ang);
    }
    /* b_k = conj(w_k) for |k| < n, circularly */
    for (int64_t k = 0; k < n; k++) {
        p->bfft[2 * k] = p->chirp[2 * k], p->bfft[2 * k + 1] = -p->chirp[2 * k + 1];
        if (k) p->bfft[2 * (m - k)] = p->chirp[2 * k], p->bfft[2 * (m - k) + 1] = -p->chirp[2 * k + 1];
    }
    radix2(p->bfft, m, p->tw, -1);
    return true;
}

/* In-place transform of x (n complex). */
static void zplan_run(zplan *p, double *x, int sign) {
    int64_t n = p->n, m = p->m;
    if (m == n) {
        radix2(x, n, p->tw, sign);
        return;
    }
    /* Bluestein: X_k = c_k sum_j (x_j c_j) conj(c_{k-j}), c = chirp of the sign */
    double *a = p->work;
    memset(a, 0, sizeof(double) * 2 * (size_t)m);
    for (int64_t j = 0; j < n; j++) {
        double cr = p->chirp[2 * j], ci = -sign * p->chirp[2 * j + 1]; /* conj(c) for sign +1 */
        a[2 * j] = x[2 * j] * cr - x[2 * j + 1] * ci;
        a[2 * j + 1] = x[2 * j] * ci + x[2 * j + 1] * cr;
    }
    radix2(a, m, p->tw, -1);
    for (int64_t k = 0; k < m; k++) { /* times FFT(conj chirp) (its conjugate for sign +1) */
        double br = p->bfft[2 * k], bi = p->bfft[2 * k + 1];
        if (sign > 0) { /* FFT of conj(b) at k is conj(FFT(b) at -k) */
            int64_t r = k ? m - k : 0;
            br = p->bfft[2 * r], bi = -p->bfft[2 * r + 1];
        }
        double ar = a[2 * k], ai = a[2 * k + 1];
        a[2 * k] = ar * br - ai * bi, a[2 * k + 1] = ar * bi + ai * br;
    }
    radix2(a, m, p->tw, +1);
    for (int64_t k = 0; k < n; k++) {
        double cr = p->chirp[2 * k], ci = -sign * p->chirp[2 * k + 1];
        double ar = a[2 * k] / (double)m, ai = a[2 * k + 1] / (double)m;
        x[2 * k] = ar * cr - ai * ci, x[2 * k + 1] = ar * ci + ai * cr;
    }
}

/* ------------------------------------------------------------------------ */
/* Transforms along axes of a complex buffer */

/* Transforms every line along axis `ax` of the complex array data (dims[0..nd)), in
 * place. inverse: sign +1 (no scaling here). */
static vg_code transform_axis(void *data, bool dbl, const int64_t *dims, int nd, int ax, bool inverse,
                              vg_status *st) {
    int64_t n = dims[ax], outer = 1, inner = 1;
    if (n <= 1) return VG_OK;
    for (int i = 0; i < ax; i++) outer *= dims[i];
    for (int i = ax + 1; i < nd; i++) inner *= dims[i];
    size_t esz = dbl ? 16 : 8;
    char *line = malloc(esz * (size_t)n * 2);
    if (!line) return VG_OOM(st, "FFT line");
    zplan zp;
    kiss_fft_cfg kc = NULL;
    bool ok = dbl ? zplan_init(&zp, n) : (kc = kiss_fft_alloc((int)n, inverse, NULL, NULL)) != NULL;
    if (!ok) {
        if (dbl) zplan_free(&zp);
        free(line);
        return VG_OOM(st, "FFT plan");
    }
    char *base = data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            char *p = base + ((size_t)(o * n * inner + i)) * esz;
            for (int64_t k = 0; k < n; k++) memcpy(line + (size_t)k * esz, p + (size_t)(k * inner) * esz, esz);
            if (dbl) {
                zplan_run(&zp, (double *)(void *)line, inverse ? 1 : -1);
            } else {
                kiss_fft(kc, (const kiss_fft_cpx *)(void *)line, (kiss_fft_cpx *)(void *)(line + esz * (size_t)n));
                memcpy(line, line + esz * (size_t)n, esz * (size_t)n);
            }
            for (int64_t k = 0; k < n; k++) memcpy(p + (size_t)(k * inner) * esz, line + (size_t)k * esz, esz);
        }
    if (dbl) zplan_free(&zp);
    else kiss_fft_free(kc);
    free(line);
    return VG_OK;
}

static void scale_buf(void *data, bool dbl, int64_t n, double s) {
    if (dbl) for (int64_t i = 0; i < 2 * n; i++) ((double *)data)[i] *= s;
    else for (int64_t i = 0; i < 2 * n; i++) ((float *)data)[i] = (float)(((float *)data)[i] * s);
}

/* ------------------------------------------------------------------------ */
/* Ops. Each type: rank, forward, real. */

typedef struct fft_kind { const char *type; int rank; bool forward, real; } fft_kind;
static const fft_kind kinds[] = {
    {"FFT", 1, true, false},    {"IFFT", 1, false, false},  {"FFT2D", 2, true, false},
    {"IFFT2D", 2, false, false}, {"FFT3D", 3, true, false},  {"IFFT3D", 3, false, false},
    {"RFFT", 1, true, true},    {"IRFFT", 1, false, true},  {"RFFT2D", 2, true, true},
    {"IRFFT2D", 2, false, true}, {"RFFT3D", 3, true, true},  {"IRFFT3D", 3, false, true},
};

static const fft_kind *kind_of(const char *type) {
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].type, type)) return &kinds[i];
    return &kinds[0];
}

static vg_code shape_fft(vg_op *op, vg_status *st) {
    const fft_kind *k = kind_of(vg_op_type(op));
    vg_dtype dt = vg__op_input_dtype(op, 0), odt;
    vg_code c;
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims >= 0 && s.ndims < k->rank) {
        char b[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be at least rank %d but is rank %d (input %s)",
                             k->rank, s.ndims, vg_shape_str(&s, b, sizeof b));
    }
    if (!k->real) {
        if ((c = vg__math_check_dtype("input", dt, VG__M_COMPLEX, st)) != VG_OK) return c;
        vg_dtype t;
        if (vg_op_attr_type_(op, "Tcomplex", &t) && t != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "attr 'Tcomplex' is %s but the input has dtype %s",
                                 vg_dtype_name(t), vg_dtype_name(dt));
        vg__op_set_default_attr_type(op, "Tcomplex", dt);
        odt = dt;
    } else {
        /* RFFT: Treal {float, double} -> Tcomplex {complex64, complex128} (matching); IRFFT the reverse */
        vg_dtype rt = k->forward ? dt : dt == VG_COMPLEX128 ? VG_DOUBLE : VG_FLOAT;
        vg_dtype ct = k->forward ? (dt == VG_DOUBLE ? VG_COMPLEX128 : VG_COMPLEX64) : dt;
        if ((c = vg__math_check_dtype("input", dt, k->forward ? VG__M_FLOAT : VG__M_COMPLEX, st)) != VG_OK) return c;
        vg_dtype t;
        if (vg_op_attr_type_(op, "Treal", &t) && t != rt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Wrong types for %s real FFT: Treal is %s, %s needed",
                                 k->forward ? "forward" : "backward", vg_dtype_name(t), vg_dtype_name(rt));
        if (vg_op_attr_type_(op, "Tcomplex", &t) && t != ct)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Wrong types for %s real FFT: Tcomplex is %s, %s needed",
                                 k->forward ? "forward" : "backward", vg_dtype_name(t), vg_dtype_name(ct));
        vg__op_set_default_attr_type(op, "Treal", rt);
        vg__op_set_default_attr_type(op, "Tcomplex", ct);
        odt = k->forward ? ct : rt;
        if ((c = vg__math_check_dtype("fft_length", vg__op_input_dtype(op, 1), VG__M(VG_INT32), st)) != VG_OK)
            return c;
        vg_shape ls = vg__op_input_shape(op, 1);
        if (ls.ndims >= 0 && (ls.ndims != 1 || (ls.dims[0] >= 0 && ls.dims[0] != k->rank)))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "fft_length must have shape [%d]", k->rank);
        if (s.ndims >= 0) {
            const vg_tensor *fl = vg__op_const_input(op, 1);
            for (int i = 0; i < k->rank; i++) {
                int64_t d = -1;
                if (fl && vg_tensor_num_elements(fl) == k->rank) {
                    d = ((const int32_t *)vg_tensor_data(fl))[i];
                    if (k->forward && i == k->rank - 1 && d != 0) d = d / 2 + 1;
                }
                s.dims[s.ndims - k->rank + i] = d;
            }
        }
    }
    return vg__op_set_single_output(op, odt, s);
}

/* Copies the leading block of a (dims ad, element esz) into b (dims bd; b's extra
 * region zero unless pre-zeroed: b must be zeroed by the caller), both rank nd:
 * b[i] = a[i] for every index inside both shapes. to_complex: a is real (esz/2 bytes),
 * b complex with imaginary parts left as they are (zero). */
static void copy_block(const char *a, const int64_t *ad, char *b, const int64_t *bd, int nd, size_t aesz,
                       size_t besz) {
    int64_t cd[VG_MAX_DIMS], n = 1;
    for (int i = 0; i < nd; i++) {
        cd[i] = ad[i] < bd[i] ? ad[i] : bd[i];
        n *= cd[i];
    }
    if (n == 0) return;
    int64_t idx[VG_MAX_DIMS] = {0};
    int64_t rows = n / (nd ? cd[nd - 1] : 1), len = nd ? cd[nd - 1] : 1;
    for (int64_t r = 0; r < rows; r++) {
        int64_t ao = 0, bo = 0;
        for (int i = 0; i < nd - 1; i++) {
            ao = ao * ad[i] + idx[i];
            bo = bo * bd[i] + idx[i];
        }
        if (nd) {
            ao *= ad[nd - 1];
            bo *= bd[nd - 1];
        }
        for (int64_t k = 0; k < len; k++) memcpy(b + (size_t)(bo + k) * besz, a + (size_t)(ao + k) * aesz, aesz);
        for (int i = nd - 2; i >= 0; i--) {
            if (++idx[i] < cd[i]) break;
            idx[i] = 0;
        }
    }
}

static vg_code kernel_fft(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const fft_kind *k = kind_of(vg_op_type(vg__kctx_op(ctx)));
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    int nd = vg_tensor_ndims(in), rank = k->rank;
    vg_dtype dt = vg_tensor_dtype(in);
    if (nd < rank) {
        vg_shape s = vg_tensor_shape(in);
        char b[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input must have rank of at least %d but got: %s", rank,
                             vg_shape_str(&s, b, sizeof b));
    }
    int64_t id[VG_MAX_DIMS], od[VG_MAX_DIMS], fft[3];
    memcpy(id, vg_tensor_dims(in), sizeof(int64_t) * (size_t)nd);
    memcpy(od, id, sizeof od);
    for (int i = 0; i < rank; i++) fft[i] = id[nd - rank + i];
    if (k->real) {
        const vg_tensor *fl = vg__kctx_input(ctx, 1);
        if (vg_tensor_dtype(fl) != VG_INT32 || vg_tensor_ndims(fl) != 1 || vg_tensor_dim(fl, 0) != rank)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "fft_length must have shape [%d]", rank);
        for (int i = 0; i < rank; i++) {
            int64_t f = ((const int32_t *)vg_tensor_data(fl))[i];
            if (f < 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "fft_length[%d] must >= 0, but got: %lld", i,
                                     (long long)f);
            fft[i] = f;
            bool inner = i == rank - 1;
            int64_t need = !k->forward && inner ? f / 2 + 1 : f, ix = nd - rank + i;
            if (id[ix] != 0 && id[ix] < need)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Input dimension %lld must have length of at least %lld but got: %lld",
                                     (long long)ix, (long long)need, (long long)id[ix]);
            od[ix] = k->forward && inner && f != 0 ? f / 2 + 1 : f;
        }
    }
    bool dbl = dt == VG_DOUBLE || dt == VG_COMPLEX128;
    vg_dtype cdt = dbl ? VG_COMPLEX128 : VG_COMPLEX64;
    vg_dtype odt = k->real && !k->forward ? (dbl ? VG_DOUBLE : VG_FLOAT) : cdt;
    if (k->real ? (k->forward ? (dt != VG_FLOAT && dt != VG_DOUBLE) : (dt != VG_COMPLEX64 && dt != VG_COMPLEX128))
                : (dt != VG_COMPLEX64 && dt != VG_COMPLEX128))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Wrong types for %sFFT: in=%s", k->real ? "real " : "",
                             vg_dtype_name(dt));
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, odt, od, nd, &o);
    if (c != VG_OK) return c;
    int64_t nout = vg_tensor_num_elements(o);
    if (vg_tensor_num_elements(in) == 0 || nout == 0) {
        if (nout) memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
        return VG_OK;
    }
    size_t ce = dbl ? 16 : 8;
    double total = 1;
    for (int i = 0; i < rank; i++) total *= (double)fft[i];
    if (!k->real) {
        memcpy(vg_tensor_data(o), vg_tensor_data(in), vg_tensor_nbytes(in));
        for (int i = 0; i < rank && c == VG_OK; i++)
            c = transform_axis(vg_tensor_data(o), dbl, od, nd, nd - rank + i, !k->forward, st);
        if (c == VG_OK && !k->forward) scale_buf(vg_tensor_data(o), dbl, nout, 1.0 / total);
        return c;
    }
    /* the work buffer: complex, the outer dims and fft_length */
    int64_t wd[VG_MAX_DIMS], wn = 1;
    memcpy(wd, id, sizeof wd);
    for (int i = 0; i < rank; i++) wd[nd - rank + i] = fft[i];
    for (int i = 0; i < nd; i++) wn *= wd[i];
    char *w = calloc((size_t)wn, ce);
    if (!w) return VG_OOM(st, "FFT buffer");
    if (k->forward) {
        copy_block(vg_tensor_data(in), id, w, wd, nd, ce / 2, ce); /* real into the real parts */
        for (int i = 0; i < rank && c == VG_OK; i++) c = transform_axis(w, dbl, wd, nd, nd - rank + i, false, st);
        if (c == VG_OK) copy_block(w, wd, vg_tensor_data(o), od, nd, ce, ce);
    } else {
        int64_t last = fft[rank - 1], half = last / 2 + 1;
        int64_t hd[VG_MAX_DIMS];
        memcpy(hd, wd, sizeof hd);
        hd[nd - 1] = half;
        copy_block(vg_tensor_data(in), id, w, wd, nd, ce, ce); /* bins [0, half) of the last dim */
        for (int64_t r = 0; r < wn / (last ? last : 1); r++) /* crop: the last dim holds only half bins */
            memset(w + (size_t)(r * last + half) * ce, 0, (size_t)(last > half ? last - half : 0) * ce);
        for (int i = 0; i < rank - 1 && c == VG_OK; i++) c = transform_axis(w, dbl, wd, nd, nd - rank + i, true, st);
        for (int64_t r = 0; c == VG_OK && r < wn / (last ? last : 1); r++) {
            char *row = w + (size_t)(r * last) * ce;
            for (int64_t j = half; j < last; j++) { /* X[j] = conj(X[last - j]) */
                memcpy(row + (size_t)j * ce, row + (size_t)(last - j) * ce, ce);
                if (dbl) ((double *)(void *)(row + (size_t)j * ce))[1] *= -1;
                else ((float *)(void *)(row + (size_t)j * ce))[1] *= -1;
            }
        }
        if (c == VG_OK) c = transform_axis(w, dbl, wd, nd, nd - 1, true, st);
        if (c == VG_OK) {
            for (int64_t i = 0; i < wn; i++) {
                if (dbl) ((double *)vg_tensor_data(o))[i] = ((double *)(void *)w)[2 * i] / total;
                else ((float *)vg_tensor_data(o))[i] = (float)(((float *)(void *)w)[2 * i] / total);
            }
        }
    }
    free(w);
    return c;
}

/* ------------------------------------------------------------------------ */
/* Builders */

static const char *const cnames[2][3] = {{"FFT", "FFT2D", "FFT3D"}, {"IFFT", "IFFT2D", "IFFT3D"}};
static const char *const rnames[2][3] = {{"RFFT", "RFFT2D", "RFFT3D"}, {"IRFFT", "IRFFT2D", "IRFFT3D"}};

static vg_output build_c(vg_graph *g, vg_output x, int rank, bool inverse, const char *name) {
    if (rank < 1 || rank > 3) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "FFT rank must be 1, 2 or 3, got %d", rank);
        return vg_out(NULL, 0);
    }
    return vg__build_simple(g, cnames[inverse][rank - 1], name, NULL, (vg_output[]){x}, 1);
}

static vg_output build_r(vg_graph *g, vg_output x, vg_output len, int rank, bool inverse, const char *name) {
    if (rank < 1 || rank > 3) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "FFT rank must be 1, 2 or 3, got %d", rank);
        return vg_out(NULL, 0);
    }
    return vg__build_simple(g, rnames[inverse][rank - 1], name, NULL, (vg_output[]){x, len}, 2);
}

vg_output vg_fft(vg_graph *g, vg_output x, int rank, const char *name) { return build_c(g, x, rank, false, name); }
vg_output vg_ifft(vg_graph *g, vg_output x, int rank, const char *name) { return build_c(g, x, rank, true, name); }
vg_output vg_rfft(vg_graph *g, vg_output x, vg_output fft_length, int rank, const char *name) {
    return build_r(g, x, fft_length, rank, false, name);
}
vg_output vg_irfft(vg_graph *g, vg_output x, vg_output fft_length, int rank, const char *name) {
    return build_r(g, x, fft_length, rank, true, name);
}

/* ------------------------------------------------------------------------ */
/* Gradients (spectral_grad.py) */

/* The product of the innermost `rank` dims of x as a scalar of dtype dt: a Const when
 * they are known, else Prod(Slice(Shape(x))) cast (_FFTSizeForGrad). */
static vg_output fft_size(vg_graph *g, vg_output x, int rank, vg_dtype dt) {
    vg_shape s = vg_output_shape(x);
    if (s.ndims >= rank) {
        double n = 1;
        bool known = true;
        for (int i = s.ndims - rank; i < s.ndims; i++) {
            if (s.dims[i] < 0) known = false;
            n *= (double)s.dims[i];
        }
        if (known) return vg_const_fill(g, dt, NULL, 0, n, "Const");
    }
    vg_output sh = vg_shape_op(g, x, VG_INT32, "Shape");
    vg_output sz = vg_size(g, sh, "Size");
    vg_output begin = vg_reshape_c(g, vg_sub(g, sz, vg_const_i32(g, rank, "Const"), "sub"), (const int64_t[]){1}, 1,
                                   "Reshape");
    int32_t r = rank;
    vg_output part = vg_slice(g, sh, begin, vg_const_i32_vec(g, &r, 1, "Const_1"), "Slice");
    vg_output prod = vg_prod(g, part, vg_const_i32(g, 0, "Const_2"), false, "Prod");
    return vg_cast(g, prod, dt, "Cast");
}

/* FFT: IFFT(grad) * N; IFFT: FFT(grad) / N. */
static vg_code grad_cfft(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    const fft_kind *k = kind_of(vg_op_type(op));
    vg_output n = fft_size(g, dy[0], k->rank, vg_output_dtype(dy[0]));
    if (k->forward) dx[0] = vg_mul(g, build_c(g, dy[0], k->rank, true, NULL), n, "mul");
    else dx[0] = vg_div(g, build_c(g, dy[0], k->rank, false, NULL), n, "truediv");
    return vg_graph_status(g, NULL);
}

/* Zero padding of the innermost `rank` dims of x (static shape) up to the static input
 * shape `to` (no-op where equal). */
static vg_output pad_inner(vg_graph *g, vg_output x, const int64_t *cur, const vg_shape *to, int rank) {
    int nd = to->ndims;
    int32_t pads[2 * VG_MAX_DIMS] = {0};
    bool any = false;
    for (int i = 0; i < rank; i++) {
        int ix = nd - rank + i;
        if (to->dims[ix] > cur[i]) {
            pads[2 * ix + 1] = (int32_t)(to->dims[ix] - cur[i]);
            any = true;
        }
    }
    if (!any) return x;
    vg_tensor *pt = vg_tensor_new(VG_INT32, (const int64_t[]){nd, 2}, 2, NULL);
    if (!pt) return vg_out(NULL, 0);
    memcpy(vg_tensor_data(pt), pads, sizeof(int32_t) * 2 * (size_t)nd);
    vg_output p = vg_const(g, pt, "paddings");
    vg_tensor_free(pt);
    return vg_pad(g, x, p, "Pad");
}

/* The adjoint of RFFT (TF's _RFFTGradHelper, same values): the incoming half spectrum
 * zero-padded to fft_length[-1] on the last dim, times N * IFFT over all fft dims, real
 * part; zero-padded to the input's shape where the kernel cropped it. IRFFT's (TF's
 * _IRFFTGradHelper): RFFT(grad) * mask / N, mask = [1, 2, ..., 2, 1 (even length)]. Both
 * need fft_length as a Const (tf.signal passes one). */
static vg_code grad_rfft(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    const fft_kind *k = kind_of(vg_op_type(op));
    const vg_tensor *fl = vg__op_const_input(op, 1);
    vg_output x = vg_op_input(op, 0);
    vg_shape sx = vg_output_shape(x);
    int rank = k->rank;
    if (!fl || vg_tensor_num_elements(fl) != rank || sx.ndims < rank)
        return vg_graph_set_error(g, VG_UNIMPLEMENTED, "%s gradient: fft_length must be a Const and the input rank known",
                                  k->type);
    int64_t f[3] = {0};
    for (int i = 0; i < rank; i++) f[i] = ((const int32_t *)vg_tensor_data(fl))[i];
    int64_t last = f[rank - 1], half = last / 2 + 1;
    double total = 1;
    for (int i = 0; i < rank; i++) total *= (double)f[i];
    vg_dtype gdt = vg_output_dtype(dy[0]);
    if (k->forward) {
        vg_dtype cdt = gdt;
        vg_output z = dy[0];
        vg_shape gs = vg_output_shape(dy[0]);
        int nd = gs.ndims >= 0 ? gs.ndims : sx.ndims;
        if (last > half) { /* pad the last dim from half to last */
            vg_tensor *pt = vg_tensor_new_zeros(VG_INT32, (const int64_t[]){nd, 2}, 2, NULL);
            if (!pt) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "RFFT gradient");
            ((int32_t *)vg_tensor_data(pt))[2 * (nd - 1) + 1] = (int32_t)(last - half);
            vg_output p = vg_const(g, pt, "paddings");
            vg_tensor_free(pt);
            z = vg_pad(g, z, p, "Pad");
        }
        vg_output inv = vg_mul(g, build_c(g, z, rank, true, NULL), vg_const_fill(g, cdt, NULL, 0, total, "Const"),
                               "mul");
        dx[0] = pad_inner(g, vg_real(g, inv, "Real"), f, &sx, rank);
    } else {
        vg_tensor *m = vg_tensor_new(gdt == VG_DOUBLE ? VG_COMPLEX128 : VG_COMPLEX64, &half, 1, NULL);
        if (!m) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "IRFFT gradient");
        for (int64_t j = 0; j < half; j++) {
            double v = (j == 0 || (last % 2 == 0 && j == half - 1) ? 1.0 : 2.0) / total;
            if (gdt == VG_DOUBLE) ((double *)vg_tensor_data(m))[2 * j] = v, ((double *)vg_tensor_data(m))[2 * j + 1] = 0;
            else ((float *)vg_tensor_data(m))[2 * j] = (float)v, ((float *)vg_tensor_data(m))[2 * j + 1] = 0;
        }
        vg_output mask = vg_const(g, m, "mask");
        vg_tensor_free(m);
        vg_output r = vg_mul(g, build_r(g, dy[0], vg_op_input(op, 1), rank, false, NULL), mask, "mul");
        int64_t cur[3];
        for (int i = 0; i < rank; i++) cur[i] = i == rank - 1 ? half : f[i];
        dx[0] = pad_inner(g, r, cur, &sx, rank);
    }
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* The table */

const vg__op_def vg__ops_fft[] = {
    {"FFT", 1, 1, 0, 0, shape_fft, kernel_fft, grad_cfft},
    {"IFFT", 1, 1, 0, 0, shape_fft, kernel_fft, grad_cfft},
    {"FFT2D", 1, 1, 0, 0, shape_fft, kernel_fft, grad_cfft},
    {"IFFT2D", 1, 1, 0, 0, shape_fft, kernel_fft, grad_cfft},
    {"FFT3D", 1, 1, 0, 0, shape_fft, kernel_fft, grad_cfft},
    {"IFFT3D", 1, 1, 0, 0, shape_fft, kernel_fft, grad_cfft},
    {"RFFT", 2, 2, 0, 0, shape_fft, kernel_fft, grad_rfft},
    {"IRFFT", 2, 2, 0, 0, shape_fft, kernel_fft, grad_rfft},
    {"RFFT2D", 2, 2, 0, 0, shape_fft, kernel_fft, grad_rfft},
    {"IRFFT2D", 2, 2, 0, 0, shape_fft, kernel_fft, grad_rfft},
    {"RFFT3D", 2, 2, 0, 0, shape_fft, kernel_fft, grad_rfft},
    {"IRFFT3D", 2, 2, 0, 0, shape_fft, kernel_fft, grad_rfft},
    {0},
};
