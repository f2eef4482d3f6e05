/*
 * gamma_ops.c - the gamma-function family of TF 1.15 (cwise_op_lgamma.cc,
 * cwise_op_digamma.cc, cwise_op_polygamma.cc, random_op.cc's RandomGamma,
 * cwise_op_random_grad.cc's RandomGammaGrad), float32 and float64:
 *   - Lgamma(x) = log|Gamma(x)| (libm's lgamma_r; +inf at 0 and the negative integers);
 *   - Digamma(x) = psi(x): recurrence up to x >= 10, then the asymptotic series;
 *     reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 0; +inf at 0 and the
 *     negative integers (as Eigen's digamma_impl);
 *   - Polygamma(a, x) = (-1)^(a+1) a! zeta(a + 1, x) through the Hurwitz zeta
 *     (Euler-Maclaurin summation), digamma for a = 0; NaN for a non-integer or negative
 *     a, +-inf at x = 0 and the negative integers (Eigen's polygamma_impl / zeta_impl
 *     rules); negative x by reflection for a = 1..3, and NaN for a > 3 below x = -1e6
 *     (where Eigen's summation would run ~|x| terms); a and x broadcast;
 *   - RandomGamma(shape, alpha; seed, seed2): output shape ++ alpha.shape, element
 *     [i, j] a Gamma(alpha[j], 1) draw: alpha == 1 as -log1p(-u); otherwise
 *     Marsaglia-Tsang's transformation-rejection with d = alpha - 1/3, c = 1/(3 sqrt(d)),
 *     the squeeze 1 - 0.0331 x^4 and alpha < 1 boosted (d = alpha + 2/3, the result
 *     times u^(1/alpha)), as random_op.cc. Alpha <= 0 or NaN gives NaN (no endless
 *     rejection loop). The numbers come from this file's own stream (splitmix64 over a
 *     per-(session, op) counter keyed by the seeds, as random_sampling_ops.c): not TF's
 *     bits, but the same seeds repeat them; both seeds 0 = a non-deterministic key;
 *   - RandomGammaGrad(alpha, sample): d sample / d alpha of the implicit
 *     reparameterization, -(d igamma(alpha, sample) / d alpha) / Gamma pdf(sample),
 *     computed by forward-mode differentiation of the incomplete-gamma series
 *     (sample <= 1 or sample <= alpha) or continued fraction, with the pdf divided out
 *     analytically (as Eigen's gamma_sample_der_alpha: 0 at sample 0, NaN for
 *     alpha <= 0 or sample < 0). Broadcasting; no gradient (as TF);
 *   - Betainc(a, b, x): the regularized incomplete beta function I_x(a, b) by its
 *     continued fraction (NaN outside a, b > 0, 0 <= x <= 1, as Eigen's betainc); a, b
 *     and x of one shape, or scalars (TF's BetaincOp).
 * Gradients as TF's math_grad.py / random_grad.py:
 *   Lgamma: dy * digamma(x)      Digamma: dy * polygamma(1, x)
 *   Polygamma: (None, sum_rx(dy * polygamma(a + 1, x)))
 *   Betainc: (None, None, sum_rx(dy * x^(a-1) (1-x)^(b-1) / B(a, b)))
 *   RandomGamma: (None, reduce_sum(dy * RandomGammaGrad(alpha reshaped with leading unit
 *   dims, sample), axes = range(rank of the sample shape))).
 */
#include "kernels/ew_internal.h"
#include "kernels/math/random_internal.h"
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>

/* ---- the special functions (double; float kernels round the result) ------------- */

static double digamma_d(double x) {
    if (isnan(x)) return NAN;
    double refl = 0;
    if (x <= 0) {
        double fl = floor(x);
        if (fl == x) return INFINITY; /* poles, -inf included (Eigen: maxnum) */
        refl = M_PI / tan(M_PI * (x - fl)); /* cot has period 1 */
        x = 1 - x;
    }
    if (x == INFINITY) return INFINITY;
    double r = 0;
    while (x < 10) {
        r -= 1 / x;
        x += 1;
    }
    double z = 1 / (x * x);
    /* sum of B_2k / (2k x^2k), k = 1..7 */
    double y = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
    return r + log(x) - 0.5 / x - y - refl;
}

/* Hurwitz zeta(s, q) = sum_k (k + q)^-s for s > 1. */
static double hurwitz_zeta(double s, double q) {
    if (isnan(s) || isnan(q)) return NAN;
    if (s == 1) return INFINITY;
    if (s < 1) return NAN;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (s != floor(s)) return NAN; /* a non-integer power of a negative base */
    }
    if (q == INFINITY) return 0;
    double sum = 0, a = q;
    int n = 0;
    while (n < 10 || a < 10) {
        double t = pow(a, -s);
        sum += t;
        a += 1;
        n++;
        if (n >= 10 && a >= 10 && fabs(t) < 1e-17 * fabs(sum)) return sum;
    }
    /* Euler-Maclaurin tail from a: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)..(s+2j-2) a^(-s-2j+1) */
    static const double b2j_fact[] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                                      -691.0 / 1307674368000.0, 1.0 / 74724249600.0};
    double tail = pow(a, 1 - s) / (s - 1) + 0.5 * pow(a, -s);
    double fac = s * pow(a, -s - 1);
    for (int j = 0; j < (int)(sizeof b2j_fact / sizeof b2j_fact[0]); j++) {
        double t = b2j_fact[j] * fac;
        tail += t;
        if (fabs(t) < 1e-17 * fabs(sum + tail)) break;
        fac *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
    }
    return sum + tail;
}

static double polygamma_d(double n, double x) {
    if (isnan(n) || isnan(x)) return NAN;
    if (floor(n) != n) return NAN;
    if (n == 0) return digamma_d(x);
    if (x < 0 && floor(x) != x && n >= 1 && n <= 3) {
        /* reflection psi_n(x) = -pi d^n/dx^n cot(pi x) + (-1)^n psi_n(1 - x), so negative
         * x costs no summation up to 0 */
        double c = 1 / tan(M_PI * (x - floor(x))), c2 = 1 + c * c, p2 = M_PI * M_PI;
        double r = polygamma_d(n, 1 - x);
        if (n == 1) return p2 * c2 - r;
        if (n == 2) return -2 * p2 * M_PI * c * c2 + r;
        return 2 * p2 * p2 * c2 * (1 + 3 * c * c) - r;
    }
    if (x < -1e6 && floor(x) != x) return NAN; /* would sum ~|x| terms (Eigen loops there) */
    double np1 = n + 1;
    double z = hurwitz_zeta(np1, x); /* NaN for n < 0 */
    if (isnan(z)) return NAN;
    int sg;
    double fact = exp(lgamma_r(np1, &sg));
    double sign = fmod(np1, 2) == 0 ? 1 : -1;
    return sign * fact * z;
}

/* Forward-mode pairs (value, d/dalpha). */
typedef struct dual {
    double v, d;
} dual;
static dual dmul(dual a, dual b) { return (dual){a.v * b.v, a.d * b.v + a.v * b.d}; }
static dual ddiv(dual a, dual b) { return (dual){a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
static dual dadd(dual a, dual b) { return (dual){a.v + b.v, a.d + b.d}; }

/* d sample / d alpha for sample ~ Gamma(alpha, 1) (implicit reparameterization). */
static double gamma_sample_der_alpha(double a, double x) {
    if (x == 0) return 0;
    if (isnan(a) || isnan(x) || x < 0 || a <= 0) return NAN;
    if (x == INFINITY) return NAN;
    const double eps = 1e-16;
    if (x > 1 && x > a) {
        /* Q(a, x) = x^a e^-x / Gamma(a) * F, F the continued fraction
         * 1/(x+1-a-) 1(1-a)/(x+3-a-) 2(2-a)/(x+5-a-) ... (modified Lentz, in duals).
         * dP/da = -dQ/da = -(x^a e^-x / Gamma(a)) (F (log x - psi(a)) + F'), and the pdf is
         * x^(a-1) e^-x / Gamma(a), so the result is x (F (log x - psi(a)) + F'). */
        const double tiny = 1e-300;
        dual b = {x + 1 - a, -1};
        dual c = {1 / tiny, 0};
        dual d = ddiv((dual){1, 0}, b);
        dual h = d;
        for (int i = 1; i < 2000; i++) {
            dual an = {-i * (i - a), (double)i};
            b = dadd(b, (dual){2, 0});
            d = dadd(dmul(an, d), b);
            if (fabs(d.v) < tiny) d.v = tiny;
            c = dadd(b, ddiv(an, c));
            if (fabs(c.v) < tiny) c.v = tiny;
            d = ddiv((dual){1, 0}, d);
            dual del = dmul(d, c);
            h = dmul(h, del);
            if (fabs(del.v - 1) < eps && fabs(del.d) < eps * (1 + fabs(h.d / (h.v != 0 ? h.v : 1)))) break;
        }
        return x * (h.v * (log(x) - digamma_d(a)) + h.d);
    }
    /* P(a, x) = x^a e^-x / Gamma(a + 1) * S, S = sum_n x^n / ((a+1)...(a+n)).
     * dP/da = (x^a e^-x / Gamma(a+1)) (S (log x - psi(a+1)) + S'); that prefactor is the
     * pdf times x / a, so the result is -(x / a) (S (log x - psi(a+1)) + S'). */
    dual term = {1, 0}, sum = {1, 0};
    for (int n = 1; n < 2000; n++) {
        term = dmul(term, ddiv((dual){x, 0}, (dual){a + n, 1}));
        sum = dadd(sum, term);
        if (fabs(term.v) <= eps * fabs(sum.v) && fabs(term.d) <= eps * fabs(sum.d)) break;
    }
    return -(x / a) * (sum.v * (log(x) - digamma_d(a + 1)) + sum.d);
}

/* Regularized incomplete beta I_x(a, b) (Eigen's betainc rules: NaN for a <= 0, b <= 0,
 * x outside [0, 1] or NaN; 0 at x = 0, 1 at x = 1): the continued fraction (modified
 * Lentz) of I_x(a, b), or of 1 - I_(1-x)(b, a) when x > (a + 1) / (a + b + 2). */
static double betacf(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-16;
    double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 3000; m++) {
        int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < eps) break;
    }
    return h;
}

static double betainc_d(double a, double b, double x) {
    if (isnan(a) || isnan(b) || isnan(x) || a <= 0 || b <= 0 || x < 0 || x > 1) return NAN;
    if (x == 0) return 0;
    if (x == 1) return 1;
    int sg;
    double lbt = lgamma_r(a + b, &sg) - lgamma_r(a, &sg) - lgamma_r(b, &sg) + a * log(x) + b * log1p(-x);
    if (x < (a + 1) / (a + b + 2)) return exp(lbt) * betacf(a, b, x) / a;
    return 1 - exp(lbt) * betacf(b, a, 1 - x) / b;
}

/* ---- Lgamma, Digamma ------------------------------------------------------------- */

static float lgamma_f(float x) {
    int sg;
    return lgammaf_r(x, &sg);
}
static double lgamma_d(double x) {
    int sg;
    return lgamma_r(x, &sg);
}

VG__EW_UN_F(lgamma_op, lgamma_f(x), lgamma_d(x))
VG__EW_UN_F(digamma_op, (float)digamma_d(x), digamma_d(x))

static const vg__ew_un_tbl t_lgamma = {lgamma_op_f32, lgamma_op_f64, NULL, NULL};
static const vg__ew_un_tbl t_digamma = {digamma_op_f32, digamma_op_f64, NULL, NULL};
static vg_code shape_lgamma(vg_op *op, vg_status *st) { return vg__ew_unary_shape(op, &t_lgamma, st); }
static vg_code kernel_lgamma(vg__kctx *ctx) { return vg__ew_unary_kernel(ctx, &t_lgamma, NULL, 0); }
static vg_code shape_digamma(vg_op *op, vg_status *st) { return vg__ew_unary_shape(op, &t_digamma, st); }
static vg_code kernel_digamma(vg__kctx *ctx) { return vg__ew_unary_kernel(ctx, &t_digamma, NULL, 0); }

/* ---- Polygamma, RandomGammaGrad (broadcasting) ----------------------------------- */

VG__EW_ELEM(polygamma_f32, float, (float)polygamma_d(x, y))
VG__EW_ELEM(polygamma_f64, double, polygamma_d(x, y))
VG__EW_ELEM(rgg_f32, float, (float)gamma_sample_der_alpha(x, y))
VG__EW_ELEM(rgg_f64, double, gamma_sample_der_alpha(x, y))

static const vg__ew_elem_tbl t_polygamma = {polygamma_f32, polygamma_f64, NULL, NULL, NULL};
static const vg__ew_elem_tbl t_rgg = {rgg_f32, rgg_f64, NULL, NULL, NULL};
static vg_code shape_polygamma(vg_op *op, vg_status *st) { return vg__ew_bcast_shape(op, &t_polygamma, st); }
static vg_code kernel_polygamma(vg__kctx *ctx) { return vg__ew_bcast_kernel(ctx, &t_polygamma, false); }
static vg_code shape_rgg(vg_op *op, vg_status *st) { return vg__ew_bcast_shape(op, &t_rgg, st); }
static vg_code kernel_rgg(vg__kctx *ctx) { return vg__ew_bcast_kernel(ctx, &t_rgg, false); }

/* ---- Betainc(a, b, x): same shapes, or scalars broadcast (as TF's BetaincOp) ------ */

static vg_code shape_betainc(vg_op *op, vg_status *st) {
    vg_dtype t = vg__op_input_dtype(op, 0);
    if (t != VG_FLOAT && t != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Betainc: a has dtype %s (float or double)", vg_dtype_name(t));
    for (int i = 1; i < 3; i++)
        if (vg__op_input_dtype(op, i) != t)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Betainc: a, b and x must have one dtype, got %s and %s",
                                 vg_dtype_name(t), vg_dtype_name(vg__op_input_dtype(op, i)));
    vg__op_set_default_attr_type(op, "T", t);
    vg_shape out = vg_shape_make(NULL, 0);
    bool unknown = false;
    for (int i = 0; i < 3; i++) {
        vg_shape s = vg__op_input_shape(op, i);
        if (s.ndims < 0) {
            unknown = true;
            continue;
        }
        if (s.ndims == 0) continue;
        if (out.ndims == 0) {
            out = s;
            continue;
        }
        bool ok = out.ndims == s.ndims;
        for (int k = 0; ok && k < s.ndims; k++)
            if (out.dims[k] >= 0 && s.dims[k] >= 0 && out.dims[k] != s.dims[k]) ok = false;
        if (!ok) {
            char b1[128], b2[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shapes of a, b, and x must be consistent: %s vs. %s",
                                 vg_shape_str(&out, b1, sizeof b1), vg_shape_str(&s, b2, sizeof b2));
        }
    }
    return vg__op_set_single_output(op, t, unknown && out.ndims == 0 ? vg_shape_unknown() : out);
}

static vg_code kernel_betainc(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *in[3] = {vg__kctx_input(ctx, 0), vg__kctx_input(ctx, 1), vg__kctx_input(ctx, 2)};
    const vg_tensor *big = NULL;
    for (int i = 0; i < 3; i++) {
        if (vg_tensor_ndims(in[i]) == 0) continue;
        if (!big) {
            big = in[i];
            continue;
        }
        bool same = vg_tensor_ndims(big) == vg_tensor_ndims(in[i]);
        for (int k = 0; same && k < vg_tensor_ndims(big); k++) same = vg_tensor_dim(big, k) == vg_tensor_dim(in[i], k);
        if (!same) {
            vg_shape s1 = vg_tensor_shape(in[0]), s2 = vg_tensor_shape(in[1]), s3 = vg_tensor_shape(in[2]);
            char b1[128], b2[128], b3[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shapes of a, b, and x are inconsistent: %s vs. %s vs. %s",
                                 vg_shape_str(&s1, b1, sizeof b1), vg_shape_str(&s2, b2, sizeof b2),
                                 vg_shape_str(&s3, b3, sizeof b3));
        }
    }
    vg_dtype t = vg_tensor_dtype(in[0]);
    int64_t dims[VG_MAX_DIMS];
    int nd = big ? vg_tensor_ndims(big) : 0;
    for (int k = 0; k < nd; k++) dims[k] = vg_tensor_dim(big, k);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, t, dims, nd, &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(o);
    for (int64_t i = 0; i < n; i++) {
        double v[3];
        for (int k = 0; k < 3; k++) {
            int64_t j = vg_tensor_ndims(in[k]) == 0 ? 0 : i;
            v[k] = t == VG_FLOAT ? ((const float *)vg_tensor_data(in[k]))[j] : ((const double *)vg_tensor_data(in[k]))[j];
        }
        double r = betainc_d(v[0], v[1], v[2]);
        if (t == VG_FLOAT) ((float *)vg_tensor_data(o))[i] = (float)r;
        else ((double *)vg_tensor_data(o))[i] = r;
    }
    return VG_OK;
}

/* ---- RandomGamma ----------------------------------------------------------------- */

static void *rg_create(const vg_op *op, vg_status *st) {
    return vg__seed_stream_new(op, 0x6A09E667F3BCC909ull, "RandomGamma state", st);
}

static void rg_destroy(void *p) { vg__free(p); }

/* One element's private stream: uniforms in [0, 1) and standard normals (Box-Muller,
 * both values of a pair used). */
typedef struct elem_rng {
    uint64_t key, i;
    double spare;
    bool has_spare;
} elem_rng;

static double er_uniform(elem_rng *r) {
    uint64_t bits = vg__splitmix64(r->key + 0x9E3779B97F4A7C15ull * ++r->i);
    return (double)(bits >> 11) * (1.0 / 9007199254740992.0);
}

static double er_normal(elem_rng *r) {
    if (r->has_spare) {
        r->has_spare = false;
        return r->spare;
    }
    double u1 = 1 - er_uniform(r); /* (0, 1] */
    double u2 = er_uniform(r);
    double m = sqrt(-2 * log(u1));
    r->spare = m * sin(2 * M_PI * u2);
    r->has_spare = true;
    return m * cos(2 * M_PI * u2);
}

static double gamma_draw(elem_rng *r, double alpha) {
    if (!(alpha > 0)) return NAN;
    if (alpha == 1) return -log1p(-er_uniform(r));
    const bool boost = alpha < 1;
    const double d = alpha + (boost ? 2.0 / 3 : -1.0 / 3);
    const double c = 1.0 / 3 / sqrt(d);
    for (;;) {
        double x = er_normal(r);
        double v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = er_uniform(r);
        if (u < 1 - 0.0331 * (x * x) * (x * x) || log(u) < 0.5 * x * x + d * (1 - v + log(v))) {
            double res = d * v;
            if (boost) res *= pow(er_uniform(r), 1 / alpha);
            return res;
        }
    }
}

static vg_code shape_random_gamma(vg_op *op, vg_status *st) {
    vg_dtype sdt = vg__op_input_dtype(op, 0), t = vg__op_input_dtype(op, 1);
    if (sdt != VG_INT32 && sdt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RandomGamma: shape must be int32 or int64, got %s",
                             vg_dtype_name(sdt));
    if (t != VG_FLOAT && t != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RandomGamma: alpha has dtype %s (float or double)",
                             vg_dtype_name(t));
    vg_shape sv = vg__op_input_shape(op, 0), as = vg__op_input_shape(op, 1);
    if (vg__shape_need_rank(&sv, 1, "Shape must be rank 1 but is rank %d", st)) return st->code;
    vg__op_set_default_attr_type(op, "S", sdt);
    vg__op_set_default_attr_type(op, "T", t);
    vg__op_default_seeds(op);
    vg_shape out = vg_shape_unknown();
    const vg_tensor *s = vg__op_const_input(op, 0);
    int64_t dims[VG_MAX_DIMS];
    int nd = 0;
    if (s && vg__read_shape_vec(s, dims, &nd) && as.ndims >= 0 && nd + as.ndims <= VG_MAX_DIMS) {
        for (int i = 0; i < as.ndims; i++) dims[nd + i] = as.dims[i];
        out = vg_shape_make(dims, nd + as.ndims);
    }
    return vg__op_set_single_output(op, t, out);
}

static vg_code kernel_random_gamma(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *s = vg__kctx_input(ctx, 0), *al = vg__kctx_input(ctx, 1);
    int64_t dims[VG_MAX_DIMS];
    int nd = 0;
    if (!vg__read_shape_vec(s, dims, &nd))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape must be a vector of {int32,int64}, got shape %s",
                             vg_tensor_ndims(s) == 1 ? "of too many dims" : "of another rank");
    int64_t nsamples = 1;
    for (int i = 0; i < nd; i++) {
        if (dims[i] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "shape has a negative dim %lld", (long long)dims[i]);
        nsamples *= dims[i];
    }
    int na = vg_tensor_ndims(al);
    if (nd + na > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RandomGamma: output rank %d exceeds %d", nd + na, VG_MAX_DIMS);
    for (int i = 0; i < na; i++) dims[nd + i] = vg_tensor_dim(al, i);
    int64_t nalpha = vg_tensor_num_elements(al);
    vg_dtype t = vg_tensor_dtype(al);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, t, dims, nd + na, &o);
    int64_t n = nsamples * nalpha;
    if (c != VG_OK || n == 0) return c;
    void *p = NULL;
    if ((c = vg__kctx_state(ctx, rg_create, rg_destroy, &p)) != VG_OK) return c;
    vg__seed_stream *rs = p;
    uint64_t base = atomic_fetch_add_explicit(&rs->counter, (uint64_t)n, memory_order_relaxed);
    for (int64_t k = 0; k < n; k++) {
        int64_t j = k % nalpha; /* samples[sample * num_alphas + alpha] as random_op.cc */
        double a = t == VG_FLOAT ? ((const float *)vg_tensor_data(al))[j] : ((const double *)vg_tensor_data(al))[j];
        elem_rng r = {vg__splitmix64(rs->key ^ vg__splitmix64(base + (uint64_t)k)), 0, 0, false};
        double v = gamma_draw(&r, a);
        if (t == VG_FLOAT) ((float *)vg_tensor_data(o))[k] = (float)v;
        else ((double *)vg_tensor_data(o))[k] = v;
    }
    return VG_OK;
}

/* ---- gradients -------------------------------------------------------------------- */

static vg_code grad_lgamma(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, dy[0], vg_digamma(g, vg_op_input(op, 0), "Digamma"), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_digamma(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0);
    vg_output one = vg__ew_scalar_like(g, x, 1.0);
    dx[0] = vg_mul(g, dy[0], vg_polygamma(g, one, x, "Polygamma"), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_polygamma(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output n = vg_op_input(op, 0), x = vg_op_input(op, 1);
    vg_output np1 = vg_add(g, n, vg__ew_scalar_like(g, n, 1.0), "add");
    vg_output gx = vg_mul(g, vg_polygamma(g, np1, x, "Polygamma"), dy[0], "mul");
    vg__ew_bcast_reduce(g, op, vg_out(NULL, 0), gx, dx);
    dx[0] = vg_out(NULL, 0);
    return vg_graph_status(g, NULL);
}

static vg_code grad_random_gamma(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output shape = vg_op_input(op, 0), alpha = vg_op_input(op, 1), sample = vg_out(op, 0);
    vg_output nsd_vec = vg_shape_op(g, shape, VG_INT32, "Shape"); /* [rank of the sample shape] */
    vg_output nsd = vg_reshape_c(g, nsd_vec, NULL, 0, "strided_slice");
    /* add_leading_unit_dimensions(alpha, nsd) */
    vg_output ones = vg_fill(g, nsd_vec, vg_const_i32(g, 1, "ones/Const"), "ones");
    vg_output parts[2] = {ones, vg_shape_op(g, alpha, VG_INT32, "Shape_1")};
    vg_output ab = vg_reshape(g, alpha, vg_concat_c(g, parts, 2, 0, "concat"), "Reshape");
    vg_output pa = vg_random_gamma_grad(g, ab, sample, "RandomGammaGrad");
    vg_output axes = vg_range(g, vg_const_i32(g, 0, "range/start"), nsd, vg_const_i32(g, 1, "range/delta"), "range");
    dx[0] = vg_out(NULL, 0);
    dx[1] = vg_sum(g, vg_mul(g, dy[0], pa, "mul"), axes, false, "Sum");
    return vg_graph_status(g, NULL);
}

static vg_code grad_betainc(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    /* math_grad.py _BetaincGrad: w.r.t. x only, exp((b-1) log(1-x) + (a-1) log(x) - lbeta) */
    vg_output a = vg_op_input(op, 0), b = vg_op_input(op, 1), x = vg_op_input(op, 2);
    vg_output sa = vg_shape_op(g, a, VG_INT32, "Shape"), sx = vg_shape_op(g, x, VG_INT32, "Shape_1");
    vg_op *bga = vg_broadcast_gradient_args(g, sa, sx, "BroadcastGradientArgs");
    if (!bga) return vg_graph_status(g, NULL);
    vg_output one = vg__ew_scalar_like(g, x, 1.0);
    vg_output lb = vg_sub(g, vg_add(g, vg_lgamma(g, a, "Lgamma"), vg_lgamma(g, b, "Lgamma_1"), "add"),
                          vg_lgamma(g, vg_add(g, a, b, "add_1"), "Lgamma_2"), "sub");
    vg_output t1 = vg_mul(g, vg_sub(g, b, one, "sub_1"), vg_log(g, vg_sub(g, one, x, "sub_2"), "Log"), "mul");
    vg_output t2 = vg_mul(g, vg_sub(g, a, one, "sub_3"), vg_log(g, x, "Log_1"), "mul_1");
    vg_output px = vg_exp(g, vg_sub(g, vg_add(g, t1, t2, "add_2"), lb, "sub_4"), "Exp");
    dx[0] = vg_out(NULL, 0);
    dx[1] = vg_out(NULL, 0);
    dx[2] = vg_reshape(g, vg_sum(g, vg_mul(g, px, dy[0], "mul_2"), vg_out(bga, 1), false, "Sum"), sx, "Reshape");
    return vg_graph_status(g, NULL);
}

/* ---- builders ------------------------------------------------------------------- */

vg_output vg_lgamma(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Lgamma", x, name); }
vg_output vg_digamma(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Digamma", x, name); }
vg_output vg_polygamma(vg_graph *g, vg_output a, vg_output x, const char *name) {
    return vg__ew_build2(g, "Polygamma", a, x, name);
}
vg_output vg_betainc(vg_graph *g, vg_output a, vg_output b, vg_output x, const char *name) {
    return vg__build_simple(g, "Betainc", name, "Betainc", (vg_output[]){a, b, x}, 3);
}
vg_output vg_random_gamma_grad(vg_graph *g, vg_output alpha, vg_output sample, const char *name) {
    return vg__ew_build2(g, "RandomGammaGrad", alpha, sample, name);
}

vg_output vg_random_gamma(vg_graph *g, vg_output shape, vg_output alpha, vg_output beta, int64_t seed,
                          const char *name) {
    if (!alpha.op) return vg_out(NULL, 0);
    vg_dtype dt = vg_output_dtype(alpha);
    if (dt != VG_FLOAT && dt != VG_DOUBLE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "random_gamma: alpha has dtype %s (float or double)",
                           vg_dtype_name(dt));
        return vg_out(NULL, 0);
    }
    vg_graph_push_scope(g, name ? name : "random_gamma");
    if (!beta.op) beta = vg_const_fill(g, dt, NULL, 0, 1.0, "beta");
    vg_output ab = vg_add(g, alpha, vg_zeros_like(g, beta, "zeros_like"), "add");
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg_op_builder *b = vg__builder_with_inputs(g, "RandomGamma", "RandomGamma", NULL, (vg_output[]){shape, ab}, 2);
    vg__builder_set_seeds(b, s1, s2); /* NULL-safe, as finish is: r is then NULL */
    vg_output r = vg_out(vg_op_builder_finish(b), 0);
    if (r.op) {
        vg_output tiny = vg_const_fill(g, dt, NULL, 0, dt == VG_FLOAT ? (double)FLT_MIN : DBL_MIN, "Maximum/x");
        r = vg_maximum(g, tiny, vg_div(g, r, beta, "truediv"), "Maximum");
    }
    vg_graph_pop_scope(g);
    return r;
}

const vg__op_def vg__ops_gamma[] = {
    {"Lgamma", 1, 1, 0, 0, shape_lgamma, kernel_lgamma, grad_lgamma},
    {"Digamma", 1, 1, 0, 0, shape_digamma, kernel_digamma, grad_digamma},
    {"Polygamma", 2, 2, 0, 0, shape_polygamma, kernel_polygamma, grad_polygamma},
    {"RandomGamma", 2, 2, VG__OP_STATEFUL, 0, shape_random_gamma, kernel_random_gamma, grad_random_gamma},
    {"RandomGammaGrad", 2, 2, 0, 0, shape_rgg, kernel_rgg, NULL},
    {"Betainc", 3, 3, 0, 0, shape_betainc, kernel_betainc, grad_betainc},
    {0},
};
