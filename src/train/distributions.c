/*
 * distributions.c - tf.distributions of TF 1.15 (normal.py, bernoulli.py, categorical.py,
 * uniform.py, beta.py, dirichlet.py, kullback_leibler.py) and contrib's
 * MultivariateNormalDiag as graph builders over the public API (vigil/distributions.h).
 *
 * A distribution is a kind's table of functions (dist_vt) plus its parameters; the
 * public methods push the distribution's scope and the method's ("Normal/log_prob/"),
 * call the kind's function, or TF's fallback (prob = exp(log_prob), log_prob =
 * log(prob), stddev = sqrt(variance), variance = square(stddev)), or fail with TF's
 * NotImplementedError text. The formulas are TF's (see each kind).
 */
#include "train_util.h"
#include "vigil/distributions.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include <math.h>
#include <stdio.h>

#define NONE vg_out(NULL, 0)

typedef struct dist_vt dist_vt;

struct vg_distribution {
    vg_graph *g;
    const dist_vt *vt;
    char scope[1024]; /* "Normal_1/" (with any outer scope), re-entered verbatim */
    char name[1024];  /* "Normal_1" */
    vg_dtype dtype;   /* samples */
    vg_dtype pdt;     /* float parameters */
    bool validate;
    vg_output p[3];   /* parameters in vt->params order */
    vg_shape batch, event;
};

struct dist_vt {
    vg_distribution_kind kind;
    const char *type; /* TF's class name */
    const char *params[3];
    bool reparam;
    vg_output (*sample)(vg_distribution *d, int64_t n, int64_t seed);
    vg_output (*log_prob)(vg_distribution *d, vg_output x);
    vg_output (*prob)(vg_distribution *d, vg_output x);
    vg_output (*cdf)(vg_distribution *d, vg_output x);
    vg_output (*entropy)(vg_distribution *d);
    vg_output (*mean)(vg_distribution *d);
    vg_output (*variance)(vg_distribution *d);
    vg_output (*stddev)(vg_distribution *d);
    vg_output (*mode)(vg_distribution *d);
    vg_output (*covariance)(vg_distribution *d);
};

/* ---- small helpers ------------------------------------------------------------------ */

static vg_output scal(vg_graph *g, vg_dtype dt, double v, const char *name) {
    return vg_const_fill(g, dt, NULL, 0, v, name);
}

static vg_output rsum_last(vg_graph *g, vg_output x, bool keep, const char *name) {
    return vg_reduce_sum(g, x, (const int32_t[]){-1}, 1, keep, name);
}

static bool is_float(vg_dtype dt) { return dt == VG_FLOAT || dt == VG_DOUBLE; }

/* NumPy broadcast of two static shapes (unknown where either is). */
static vg_shape bcast(vg_shape a, vg_shape b) {
    if (a.ndims < 0 || b.ndims < 0) return vg_shape_unknown();
    int r = a.ndims > b.ndims ? a.ndims : b.ndims;
    int64_t d[VG_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a.ndims), ib = i - (r - b.ndims);
        int64_t x = ia >= 0 ? a.dims[ia] : 1, y = ib >= 0 ? b.dims[ib] : 1;
        d[i] = x == 1 ? y : y == 1 ? x : (x == y ? x : -1);
    }
    return vg_shape_make(d, r);
}

/* The shape without its last dimension (rank must be >= 1). */
static vg_shape drop_last(vg_shape s) {
    if (s.ndims < 1) return vg_shape_unknown();
    return vg_shape_make(s.dims, s.ndims - 1);
}

/* [n] ++ shape(template) as an int32 vector: a Const when template's shape is fully
 * known, else Concat of [n] and Shape(template). */
static vg_output sample_shape(vg_graph *g, int64_t n, vg_output template_) {
    vg_shape s = vg_output_shape(template_);
    bool known = s.ndims >= 0;
    for (int i = 0; known && i < s.ndims; i++) known = s.dims[i] >= 0;
    if (known) {
        int32_t v[VG_MAX_DIMS + 1];
        v[0] = (int32_t)n;
        for (int i = 0; i < s.ndims; i++) v[i + 1] = (int32_t)s.dims[i];
        return vg_const_i32_vec(g, v, s.ndims + 1, "shape");
    }
    vg_output parts[2] = {vg_const_i32_vec(g, (const int32_t[]){(int32_t)n}, 1, "n"),
                          vg_shape_op(g, template_, VG_INT32, "batch_shape_tensor")};
    return vg_concat_c(g, parts, 2, 0, "concat");
}

/* distribution_util.gen_new_seed(seed, salt): a derived op seed (None stays None). The
 * values are vigil's own (TF hashes with MD5). */
static int64_t new_seed(int64_t seed, uint64_t salt) {
    if (seed == 0) return 0;
    uint64_t x = (uint64_t)seed * 0x9E3779B97F4A7C15ull ^ salt;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    int64_t r = (int64_t)(x & 0x7FFFFFFF);
    return r ? r : 1;
}

static vg_output unimplemented(vg_distribution *d, const char *method) {
    vg_graph_set_error(d->g, VG_UNIMPLEMENTED, "%s is not implemented: %s", method, d->vt->type);
    return NONE;
}

static bool begin(vg_distribution *d, const char *method, const char *name) {
    if (!d || vg_graph_status(d->g, NULL) != VG_OK) return false;
    vg_graph_push_scope(d->g, d->scope);
    vg_graph_push_scope(d->g, name ? name : method);
    return true;
}

static void end(vg_distribution *d) {
    vg_graph_pop_scope(d->g);
    vg_graph_pop_scope(d->g);
}

/* x converted to the parameters' dtype where it is another numeric dtype (TF converts
 * Python values; a tensor of another dtype is cast here for convenience). */
static vg_output as_pdt(vg_distribution *d, vg_output x) {
    if (x.op && vg_output_dtype(x) != d->pdt) return vg_cast(d->g, x, d->pdt, "Cast");
    return x;
}

/* ---- construction -------------------------------------------------------------------- */

static vg_distribution *dist_open(vg_graph *g, const dist_vt *vt, const char *name, bool validate) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return NULL;
    vg_distribution *d = vg_calloc(1, sizeof *d);
    if (!d) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory allocating a %s distribution", vt->type);
        return NULL;
    }
    d->g = g;
    d->vt = vt;
    d->validate = validate;
    const char *full = vg_graph_push_scope(g, name ? name : vt->type);
    snprintf(d->name, sizeof d->name, "%s", full);
    snprintf(d->scope, sizeof d->scope, "%s/", full);
    return d;
}

/* Pops the constructor scope; on a graph error frees d and returns NULL. */
static vg_distribution *dist_close(vg_distribution *d) {
    vg_graph_pop_scope(d->g);
    if (vg_graph_status(d->g, NULL) != VG_OK) {
        vg_free(d);
        return NULL;
    }
    return d;
}

static vg_distribution *dist_fail(vg_distribution *d, vg_code code, const char *msg) {
    vg_graph_set_error(d->g, code, "%s: %s", d->vt->type, msg);
    return dist_close(d);
}

/* Identity "<param>" ops of the given outputs under the control of the checks. */
static void set_params(vg_distribution *d, const vg_output *v, int n, vg_op *const *checks, int nchecks) {
    if (nchecks) vg_graph_push_control_deps(d->g, checks, nchecks);
    for (int i = 0; i < n; i++) d->p[i] = vg_identity(d->g, v[i], d->vt->params[i]);
    if (nchecks) vg_graph_pop_control_deps(d->g);
}

/* The end of every constructor: the n parameters as identities under the nchecks
 * validation checks, the batch and event shapes from full (the parameters' broadcast
 * shape; event_rank 1: its last dim is the event), then the scope closed. */
static vg_distribution *dist_finish(vg_distribution *d, const vg_output *v, int n, vg_op *const *checks, int nchecks,
                                    vg_shape full, int event_rank) {
    set_params(d, v, n, checks, nchecks);
    d->batch = event_rank ? drop_last(full) : full;
    d->event = event_rank ? vg_shape_make(&full.dims[full.ndims - 1], 1) : vg_shape_make(NULL, 0);
    return dist_close(d);
}

static bool same_float(vg_distribution *d, vg_output a, vg_output b) {
    vg_dtype da = vg_output_dtype(a), db = b.op ? vg_output_dtype(b) : da;
    if (!is_float(da) || da != db) {
        vg_graph_set_error(d->g, VG_INVALID_ARGUMENT, "%s: parameters must be float32 or float64 of one dtype, got %s and %s",
                           d->vt->type, vg_dtype_name(da), vg_dtype_name(db));
        return false;
    }
    d->pdt = da;
    d->dtype = da;
    return true;
}

/* ---- Normal (normal.py) ------------------------------------------------------------ */

static vg_output normal_sample(vg_distribution *d, int64_t n, int64_t seed) {
    vg_graph *g = d->g;
    vg_output shape = sample_shape(g, n, vg_add(g, d->p[0], d->p[1], "batch"));
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg_output z = vg_random_standard_normal(g, shape, d->pdt, s1, s2, "random_normal");
    return vg_add(g, vg_mul(g, z, d->p[1], "mul"), d->p[0], "add");
}

static vg_output normal_z(vg_distribution *d, vg_output x) {
    return vg_div(d->g, vg_sub(d->g, x, d->p[0], "sub"), d->p[1], "truediv");
}

static vg_output normal_log_prob(vg_distribution *d, vg_output x) {
    vg_graph *g = d->g;
    vg_output z = normal_z(d, as_pdt(d, x));
    vg_output lu = vg_mul(g, scal(g, d->pdt, -0.5, "mul/x"), vg_square(g, z, "Square"), "mul");
    vg_output ln = vg_add(g, scal(g, d->pdt, 0.5 * log(2 * M_PI), "add/x"), vg_log(g, d->p[1], "Log"), "add");
    return vg_sub(g, lu, ln, "sub_1");
}

static vg_output normal_cdf(vg_distribution *d, vg_output x) {
    /* special_math.ndtr(z) = 0.5 (1 + erf(z / sqrt 2)) */
    vg_graph *g = d->g;
    vg_output z = normal_z(d, as_pdt(d, x));
    vg_output e = vg_erf(g, vg_mul(g, z, scal(g, d->pdt, M_SQRT1_2, "half_sqrt_2"), "mul"), "Erf");
    return vg_mul(g, scal(g, d->pdt, 0.5, "mul_1/x"), vg_add(g, scal(g, d->pdt, 1, "add/x"), e, "add"), "mul_1");
}

static vg_output normal_entropy(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output scale = vg_mul(g, d->p[1], vg_ones_like(g, d->p[0], "ones_like"), "mul");
    return vg_add(g, scal(g, d->pdt, 0.5 * log(2 * M_PI * M_E), "add/x"), vg_log(g, scale, "Log"), "add");
}

static vg_output normal_mean(vg_distribution *d) {
    return vg_mul(d->g, d->p[0], vg_ones_like(d->g, d->p[1], "ones_like"), "mul");
}

static vg_output normal_stddev(vg_distribution *d) {
    return vg_mul(d->g, d->p[1], vg_ones_like(d->g, d->p[0], "ones_like"), "mul");
}

static const dist_vt normal_vt = {VG_DIST_NORMAL, "Normal", {"loc", "scale"}, true, normal_sample, normal_log_prob,
                                  NULL, normal_cdf, normal_entropy, normal_mean, NULL, normal_stddev, normal_mean,
                                  NULL};

vg_distribution *vg_normal(vg_graph *g, vg_output loc, vg_output scale, bool validate_args, const char *name) {
    vg_distribution *d = dist_open(g, &normal_vt, name, validate_args);
    if (!d) return NULL;
    if (!loc.op || !scale.op) return dist_fail(d, VG_INVALID_ARGUMENT, "loc and scale are required");
    if (!same_float(d, loc, scale)) return dist_close(d);
    vg_op *chk = validate_args ? vg_assert_positive(g, scale, NULL, 3, NULL) : NULL;
    return dist_finish(d, (vg_output[]){loc, scale}, 2, &chk, validate_args, bcast(vg_output_shape(loc), vg_output_shape(scale)),
                       0);
}

/* ---- Bernoulli (bernoulli.py) ------------------------------------------------------- */

static vg_output bern_sample(vg_distribution *d, int64_t n, int64_t seed) {
    vg_graph *g = d->g;
    vg_output shape = sample_shape(g, n, d->p[1]);
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg_output u = vg_random_uniform(g, shape, d->pdt, s1, s2, "random_uniform");
    return vg_cast(g, vg_less(g, u, d->p[1], "Less"), d->dtype, "Cast");
}

static vg_output bern_log_prob(vg_distribution *d, vg_output event) {
    vg_graph *g = d->g;
    vg_output e = vg_cast(g, event, d->pdt, "Cast");
    vg_output logits = vg_mul(g, vg_ones_like(g, e, "ones_like"), d->p[0], "mul");
    e = vg_mul(g, vg_ones_like(g, d->p[0], "ones_like_1"), e, "mul_1");
    return vg_neg(g, vg_sigmoid_cross_entropy_with_logits(g, e, logits, NULL), "Neg");
}

static vg_output bern_entropy(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output l = d->p[0];
    vg_output a = vg_mul(g, vg_neg(g, l, "Neg"), vg_sub(g, vg_sigmoid(g, l, "Sigmoid"), scal(g, d->pdt, 1, "sub/y"), "sub"),
                         "mul");
    return vg_add(g, a, vg_softplus(g, vg_neg(g, l, "Neg_1"), "Softplus"), "add");
}

static vg_output bern_mean(vg_distribution *d) { return vg_identity(d->g, d->p[1], "Identity"); }

static vg_output bern_variance(vg_distribution *d) {
    vg_graph *g = d->g;
    return vg_mul(g, d->p[1], vg_sub(g, scal(g, d->pdt, 1, "sub/x"), d->p[1], "sub"), "mul");
}

static vg_output bern_mode(vg_distribution *d) {
    vg_graph *g = d->g;
    return vg_cast(g, vg_greater(g, d->p[1], scal(g, d->pdt, 0.5, "Greater/y"), "Greater"), d->dtype, "Cast");
}

static const dist_vt bern_vt = {VG_DIST_BERNOULLI, "Bernoulli", {"logits", "probs"}, false, bern_sample, bern_log_prob,
                                NULL, NULL, bern_entropy, bern_mean, bern_variance, NULL, bern_mode, NULL};

/* get_logits_and_probs: the given one (validated) and the derived one. */
static bool logits_probs(vg_distribution *d, vg_output logits, vg_output probs, bool multidim, vg_output *out) {
    vg_graph *g = d->g;
    if ((logits.op != NULL) == (probs.op != NULL)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Must pass probs or logits, but not both.");
        return false;
    }
    vg_output given = logits.op ? logits : probs;
    if (!same_float(d, given, NONE)) return false;
    if (multidim && vg_output_shape(given).ndims < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: logits/probs must have a known rank of at least 1", d->vt->type);
        return false;
    }
    vg_op *chk[2];
    int nc = 0;
    if (logits.op) {
        out[0] = vg_identity(g, logits, "logits");
        out[1] = multidim ? vg_softmax(g, out[0], "probs") : vg_sigmoid(g, out[0], "probs");
        return true;
    }
    if (d->validate) {
        chk[nc++] = vg_assert_non_negative(g, probs, NULL, 3, NULL);
        if (!multidim)
            chk[nc++] = vg_assert_less_equal(g, probs, scal(g, d->pdt, 1, "one"), "probs has components greater than 1.", 3,
                                             NULL);
    }
    if (nc) vg_graph_push_control_deps(g, chk, nc);
    out[1] = vg_identity(g, probs, "probs");
    if (nc) vg_graph_pop_control_deps(g);
    vg_graph_push_scope(g, "logits");
    if (multidim) out[0] = vg_log(g, out[1], "Log");
    else out[0] = vg_sub(g, vg_log(g, out[1], "Log"), vg_log1p(g, vg_neg(g, out[1], "Neg"), "Log1p"), "sub");
    vg_graph_pop_scope(g);
    return true;
}

vg_distribution *vg_bernoulli(vg_graph *g, vg_output logits, vg_output probs, vg_dtype dtype, bool validate_args,
                              const char *name) {
    vg_distribution *d = dist_open(g, &bern_vt, name, validate_args);
    if (!d) return NULL;
    if (!logits_probs(d, logits, probs, false, d->p)) return dist_close(d);
    d->dtype = dtype == VG_DTYPE_INVALID ? VG_INT32 : dtype;
    d->batch = vg_output_shape(d->p[0]);
    d->event = vg_shape_make(NULL, 0);
    return dist_close(d);
}

/* ---- Categorical (categorical.py) ------------------------------------------------- */

static int64_t cat_k(vg_distribution *d) {
    vg_shape s = vg_output_shape(d->p[0]);
    return s.ndims >= 1 ? s.dims[s.ndims - 1] : -1;
}

static vg_output cat_sample(vg_distribution *d, int64_t n, int64_t seed) {
    vg_graph *g = d->g;
    int64_t k = cat_k(d);
    vg_output l2 = vg_reshape_c(g, d->p[0], (const int64_t[]){-1, k}, 2, "logits_2d");
    vg_dtype sdt = vg_dtype_size(d->dtype) > 4 ? VG_INT64 : VG_INT32;
    vg_output draws = vg_multinomial(g, l2, (int)n, seed, sdt, "multinomial");
    draws = vg_transpose_c(g, draws, (const int32_t[]){1, 0}, 2, "transpose");
    /* [n] ++ batch: the shape of logits without its last dim */
    vg_output bs;
    vg_shape b = d->batch;
    bool known = b.ndims >= 0;
    for (int i = 0; known && i < b.ndims; i++) known = b.dims[i] >= 0;
    if (known) {
        int32_t v[VG_MAX_DIMS + 1];
        v[0] = (int32_t)n;
        for (int i = 0; i < b.ndims; i++) v[i + 1] = (int32_t)b.dims[i];
        bs = vg_const_i32_vec(g, v, b.ndims + 1, "shape");
    } else {
        vg_output sh = vg_shape_op(g, d->p[0], VG_INT32, "Shape");
        vg_output parts[2] = {vg_const_i32_vec(g, (const int32_t[]){(int32_t)n}, 1, "n"),
                              vg_slice_c(g, sh, (const int64_t[]){0}, (const int64_t[]){b.ndims}, 1, "batch_shape")};
        bs = vg_concat_c(g, parts, 2, 0, "concat");
    }
    draws = vg_reshape(g, draws, bs, "Reshape");
    return vg_output_dtype(draws) == d->dtype ? draws : vg_cast(g, draws, d->dtype, "Cast");
}

static vg_output cat_log_prob(vg_distribution *d, vg_output k) {
    vg_graph *g = d->g;
    vg_dtype kd = vg_output_dtype(k);
    if (kd != VG_INT32 && kd != VG_INT64) k = vg_cast(g, k, VG_INT32, "Cast");
    vg_output oh = vg_one_hot(g, k, (int)cat_k(d), 1.f, 0.f, "one_hot");
    if (d->pdt != VG_FLOAT) oh = vg_cast(g, oh, d->pdt, "Cast_1");
    return rsum_last(g, vg_mul(g, oh, vg_log_softmax(g, d->p[0], "LogSoftmax"), "mul"), false, "Sum");
}

static vg_output cat_cdf(vg_distribution *d, vg_output k) {
    /* TF 1.15's categorical.py _cdf: the sum of probs[j] for j < k (sequence_mask(k, K)),
     * so k <= 0 gives 0 and k >= K gives 1 */
    vg_graph *g = d->g;
    vg_dtype kd = vg_output_dtype(k);
    if (kd != VG_INT32 && kd != VG_INT64) k = vg_cast(g, k, VG_INT32, "Cast");
    vg_output mask = vg_sequence_mask(g, k, vg_const_i32(g, (int32_t)cat_k(d), "event_size"), d->pdt, "SequenceMask");
    return rsum_last(g, vg_mul(g, mask, d->p[1], "mul"), false, "Sum");
}

static vg_output cat_entropy(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output t = vg_mul(g, vg_log_softmax(g, d->p[0], "LogSoftmax"), d->p[1], "mul");
    return vg_neg(g, rsum_last(g, t, false, "Sum"), "Neg");
}

static vg_output cat_mode(vg_distribution *d) {
    vg_shape s = vg_output_shape(d->p[0]);
    vg_output r = vg_argmax(d->g, d->p[0], s.ndims - 1, VG_INT64, "ArgMax");
    return vg_cast(d->g, r, d->dtype, "Cast");
}

static const dist_vt cat_vt = {VG_DIST_CATEGORICAL, "Categorical", {"logits", "probs"}, false, cat_sample, cat_log_prob,
                               NULL, cat_cdf, cat_entropy, NULL, NULL, NULL, cat_mode, NULL};

vg_distribution *vg_categorical(vg_graph *g, vg_output logits, vg_output probs, vg_dtype dtype, bool validate_args,
                                const char *name) {
    vg_distribution *d = dist_open(g, &cat_vt, name, validate_args);
    if (!d) return NULL;
    if (!logits_probs(d, logits, probs, true, d->p)) return dist_close(d);
    if (cat_k(d) < 0) return dist_fail(d, VG_INVALID_ARGUMENT, "the number of classes (last dim) must be known");
    d->dtype = dtype == VG_DTYPE_INVALID ? VG_INT32 : dtype;
    d->batch = drop_last(vg_output_shape(d->p[0]));
    d->event = vg_shape_make(NULL, 0);
    return dist_close(d);
}

/* ---- Uniform (uniform.py) ------------------------------------------------------------ */

static vg_output uni_range(vg_distribution *d) { return vg_sub(d->g, d->p[1], d->p[0], "range"); }

static vg_output uni_sample(vg_distribution *d, int64_t n, int64_t seed) {
    vg_graph *g = d->g;
    vg_output shape = sample_shape(g, n, vg_add(g, d->p[0], d->p[1], "batch"));
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg_output u = vg_random_uniform(g, shape, d->pdt, s1, s2, "random_uniform");
    return vg_add(g, d->p[0], vg_mul(g, uni_range(d), u, "mul"), "add");
}

/* x broadcast against the batch shape, and the select masks of the same shape */
static vg_output uni_bx(vg_distribution *d, vg_output x) {
    vg_graph *g = d->g;
    vg_output ones = vg_ones_like(g, vg_add(g, d->p[0], d->p[1], "batch"), "ones");
    return vg_mul(g, as_pdt(d, x), ones, "mul");
}

static vg_output uni_prob(vg_distribution *d, vg_output x) {
    vg_graph *g = d->g;
    vg_output bx = uni_bx(d, x);
    vg_output lo = vg_mul(g, d->p[0], vg_ones_like(g, bx, "ones_like"), "low_b");
    vg_output hi = vg_mul(g, d->p[1], vg_ones_like(g, bx, "ones_like_1"), "high_b");
    vg_output out = vg_logical_or(g, vg_less(g, bx, lo, "Less"), vg_greater_equal(g, bx, hi, "GreaterEqual"), "LogicalOr");
    vg_output inside = vg_div(g, vg_ones_like(g, bx, "ones_like_2"), vg_sub(g, hi, lo, "range"), "truediv");
    vg_output r = vg_select(g, out, vg_zeros_like(g, bx, "zeros_like"), inside, "Select");
    return vg_select(g, vg_equal(g, bx, bx, "IsNotNan"), r, bx, "Select_1"); /* NaN x gives NaN */
}

static vg_output uni_cdf(vg_distribution *d, vg_output x) {
    vg_graph *g = d->g;
    vg_output bx = uni_bx(d, x);
    vg_output lo = vg_mul(g, d->p[0], vg_ones_like(g, bx, "ones_like"), "low_b");
    vg_output hi = vg_mul(g, d->p[1], vg_ones_like(g, bx, "ones_like_1"), "high_b");
    vg_output mid = vg_div(g, vg_sub(g, bx, lo, "sub"), vg_sub(g, hi, lo, "range"), "truediv");
    vg_output r = vg_select(g, vg_less(g, bx, lo, "Less"), vg_zeros_like(g, bx, "zeros_like"), mid, "Select");
    return vg_select(g, vg_greater_equal(g, bx, hi, "GreaterEqual"), vg_ones_like(g, bx, "ones_like_2"), r, "Select_1");
}

static vg_output uni_entropy(vg_distribution *d) { return vg_log(d->g, uni_range(d), "Log"); }

static vg_output uni_mean(vg_distribution *d) {
    vg_graph *g = d->g;
    return vg_div(g, vg_add(g, d->p[0], d->p[1], "add"), scal(g, d->pdt, 2, "truediv/y"), "truediv");
}

static vg_output uni_variance(vg_distribution *d) {
    vg_graph *g = d->g;
    return vg_div(g, vg_square(g, uni_range(d), "Square"), scal(g, d->pdt, 12, "truediv/y"), "truediv");
}

static vg_output uni_stddev(vg_distribution *d) {
    vg_graph *g = d->g;
    return vg_div(g, uni_range(d), scal(g, d->pdt, sqrt(12.0), "truediv/y"), "truediv");
}

static const dist_vt uni_vt = {VG_DIST_UNIFORM, "Uniform", {"low", "high"}, true, uni_sample, NULL, uni_prob, uni_cdf,
                               uni_entropy, uni_mean, uni_variance, uni_stddev, NULL, NULL};

vg_distribution *vg_uniform(vg_graph *g, vg_output low, vg_output high, bool validate_args, const char *name) {
    vg_distribution *d = dist_open(g, &uni_vt, name, validate_args);
    if (!d) return NULL;
    vg_dtype dt = low.op ? vg_output_dtype(low) : high.op ? vg_output_dtype(high) : VG_FLOAT;
    if (!low.op) low = scal(g, dt, 0, "low/value");
    if (!high.op) high = scal(g, dt, 1, "high/value");
    if (!same_float(d, low, high)) return dist_close(d);
    vg_op *chk = validate_args ? vg_assert_less(g, low, high, "uniform not defined when low >= high.", 3, NULL) : NULL;
    return dist_finish(d, (vg_output[]){low, high}, 2, &chk, validate_args, bcast(vg_output_shape(low), vg_output_shape(high)),
                       0);
}

/* ---- MultivariateNormalDiag (mvn_diag.py) ------------------------------------------ */

static vg_output mvn_sample(vg_distribution *d, int64_t n, int64_t seed) {
    vg_graph *g = d->g;
    vg_output shape = sample_shape(g, n, vg_add(g, d->p[0], d->p[1], "batch"));
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    vg_output z = vg_random_standard_normal(g, shape, d->pdt, s1, s2, "random_normal");
    return vg_add(g, vg_mul(g, d->p[1], z, "mul"), d->p[0], "add");
}

static vg_output mvn_log_prob(vg_distribution *d, vg_output x) {
    vg_graph *g = d->g;
    double k = (double)d->event.dims[0];
    vg_output z = vg_div(g, vg_sub(g, as_pdt(d, x), d->p[0], "sub"), d->p[1], "truediv");
    vg_output q = rsum_last(g, vg_square(g, z, "Square"), false, "Sum");
    vg_output ld = rsum_last(g, vg_log(g, vg_abs(g, d->p[1], "Abs"), "Log"), false, "log_abs_determinant");
    vg_output c = scal(g, d->pdt, 0.5 * k * log(2 * M_PI), "log_normalization");
    return vg_sub(g, vg_sub(g, vg_mul(g, scal(g, d->pdt, -0.5, "mul/x"), q, "mul"), c, "sub_1"), ld, "sub_2");
}

static vg_output mvn_entropy(vg_distribution *d) {
    vg_graph *g = d->g;
    double k = (double)d->event.dims[0];
    vg_output ld = rsum_last(g, vg_log(g, vg_abs(g, d->p[1], "Abs"), "Log"), false, "log_abs_determinant");
    /* broadcast to the batch shape of loc too */
    vg_output z = rsum_last(g, vg_zeros_like(g, vg_add(g, d->p[0], d->p[1], "batch"), "zeros_like"), false, "Sum");
    return vg_add(g, vg_add(g, scal(g, d->pdt, 0.5 * k * (1 + log(2 * M_PI)), "add/x"), ld, "add"), z, "add_1");
}

static vg_output mvn_mean(vg_distribution *d) {
    return vg_add(d->g, d->p[0], vg_zeros_like(d->g, d->p[1], "zeros_like"), "mean");
}

static vg_output mvn_stddev(vg_distribution *d) {
    vg_graph *g = d->g;
    return vg_add(g, vg_abs(g, d->p[1], "Abs"), vg_zeros_like(g, d->p[0], "zeros_like"), "stddev");
}

/* x[..., :, None] * x[..., None, :] */
static vg_output outer_last(vg_graph *g, vg_output x) {
    vg_shape s = vg_output_shape(x);
    return vg_mul(g, vg_expand_dims(g, x, s.ndims, "ExpandDims"), vg_expand_dims(g, x, s.ndims - 1, "ExpandDims_1"), "outer");
}

static vg_output mvn_covariance(vg_distribution *d) {
    /* scale scale^T of the diagonal scale: diag(scale_diag^2), batch-broadcast */
    vg_graph *g = d->g;
    vg_output var = vg_square(g, mvn_stddev(d), "Square");
    return vg_matrix_set_diag(g, vg_zeros_like(g, outer_last(g, var), "zeros_like"), var, "MatrixSetDiag");
}

static const dist_vt mvn_vt = {VG_DIST_MVN_DIAG, "MultivariateNormalDiag", {"loc", "scale_diag"}, true, mvn_sample,
                               mvn_log_prob, NULL, NULL, mvn_entropy, mvn_mean, NULL, mvn_stddev, mvn_mean,
                               mvn_covariance};

vg_distribution *vg_mvn_diag(vg_graph *g, vg_output loc, vg_output scale_diag, bool validate_args, const char *name) {
    vg_distribution *d = dist_open(g, &mvn_vt, name, validate_args);
    if (!d) return NULL;
    if (!scale_diag.op) return dist_fail(d, VG_INVALID_ARGUMENT, "scale_diag is required");
    if (!loc.op) loc = vg_zeros_like(g, scale_diag, "zeros_like");
    if (!same_float(d, loc, scale_diag)) return dist_close(d);
    vg_shape sl = vg_output_shape(loc), ss = vg_output_shape(scale_diag);
    if (sl.ndims < 1 || ss.ndims < 1) return dist_fail(d, VG_INVALID_ARGUMENT, "loc and scale_diag need a known rank >= 1");
    vg_shape full = bcast(sl, ss);
    if (full.ndims < 1 || full.dims[full.ndims - 1] < 0)
        return dist_fail(d, VG_INVALID_ARGUMENT, "the event size (last dim) must be known and agree");
    vg_op *chk = validate_args ? vg_assert_none_equal(g, scale_diag, scal(g, d->pdt, 0, "zero"),
                                                      "Singular operator: Diagonal contained zero values.", 3, NULL)
                               : NULL;
    return dist_finish(d, (vg_output[]){loc, scale_diag}, 2, &chk, validate_args, full, 1);
}

/* ---- Beta (beta.py) ----------------------------------------------------------------- */

static vg_output beta_total(vg_distribution *d) { return vg_add(d->g, d->p[0], d->p[1], "total_concentration"); }

static vg_output beta_log_norm(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output a = vg_add(g, vg_lgamma(g, d->p[0], "Lgamma"), vg_lgamma(g, d->p[1], "Lgamma_1"), "add");
    return vg_sub(g, a, vg_lgamma(g, beta_total(d), "Lgamma_2"), "log_normalization");
}

static vg_output beta_sample(vg_distribution *d, int64_t n, int64_t seed) {
    vg_graph *g = d->g;
    vg_output ones = vg_ones_like(g, beta_total(d), "ones_like");
    vg_output c1 = vg_mul(g, ones, d->p[0], "mul"), c0 = vg_mul(g, ones, d->p[1], "mul_1");
    vg_output shape = vg_const_i32_vec(g, (const int32_t[]){(int32_t)n}, 1, "shape");
    vg_output g1 = vg_random_gamma(g, shape, c1, NONE, seed, "random_gamma");
    vg_output g2 = vg_random_gamma(g, shape, c0, NONE, new_seed(seed, 0x62657461 /* "beta" */), "random_gamma_1");
    return vg_div(g, g1, vg_add(g, g1, g2, "add"), "truediv");
}

static vg_output beta_log_prob(vg_distribution *d, vg_output x) {
    vg_graph *g = d->g;
    x = as_pdt(d, x);
    vg_output one = scal(g, d->pdt, 1, "one");
    vg_output a = vg_mul(g, vg_sub(g, d->p[0], one, "sub"), vg_log(g, x, "Log"), "mul");
    vg_output b = vg_mul(g, vg_sub(g, d->p[1], one, "sub_1"), vg_log1p(g, vg_neg(g, x, "Neg"), "Log1p"), "mul_1");
    return vg_sub(g, vg_add(g, a, b, "add"), beta_log_norm(d), "sub_2");
}

static vg_output beta_cdf(vg_distribution *d, vg_output x) {
    /* math_ops.betainc(concentration1, concentration0, x), the three broadcast to one shape */
    vg_graph *g = d->g;
    x = as_pdt(d, x);
    vg_output ones = vg_ones_like(g, vg_add(g, beta_total(d), x, "add"), "ones_like");
    return vg_betainc(g, vg_mul(g, d->p[0], ones, "mul"), vg_mul(g, d->p[1], ones, "mul_1"), vg_mul(g, x, ones, "mul_2"),
                      "Betainc");
}

static vg_output beta_entropy(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output one = scal(g, d->pdt, 1, "one"), two = scal(g, d->pdt, 2, "two");
    vg_output tot = beta_total(d);
    vg_output r = beta_log_norm(d);
    r = vg_sub(g, r, vg_mul(g, vg_sub(g, d->p[0], one, "sub"), vg_digamma(g, d->p[0], "Digamma"), "mul"), "sub_1");
    r = vg_sub(g, r, vg_mul(g, vg_sub(g, d->p[1], one, "sub_2"), vg_digamma(g, d->p[1], "Digamma_1"), "mul_1"), "sub_3");
    return vg_add(g, r, vg_mul(g, vg_sub(g, tot, two, "sub_4"), vg_digamma(g, tot, "Digamma_2"), "mul_2"), "add");
}

static vg_output beta_mean(vg_distribution *d) { return vg_div(d->g, d->p[0], beta_total(d), "truediv"); }

static vg_output beta_variance(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output m = beta_mean(d);
    vg_output one = scal(g, d->pdt, 1, "one");
    return vg_div(g, vg_mul(g, m, vg_sub(g, one, m, "sub"), "mul"), vg_add(g, one, beta_total(d), "add"), "truediv_1");
}

static vg_output beta_mode(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output one = scal(g, d->pdt, 1, "one");
    vg_output mode = vg_div(g, vg_sub(g, d->p[0], one, "sub"), vg_sub(g, beta_total(d), scal(g, d->pdt, 2, "two"), "sub_1"),
                            "truediv");
    vg_output ones = vg_ones_like(g, mode, "ones_like");
    vg_output ok = vg_logical_and(g, vg_greater(g, vg_mul(g, d->p[0], ones, "c1"), ones, "Greater"),
                                  vg_greater(g, vg_mul(g, d->p[1], ones, "c0"), ones, "Greater_1"), "LogicalAnd");
    vg_output nan = vg_mul(g, ones, scal(g, d->pdt, NAN, "nan"), "nan_b");
    return vg_select(g, ok, mode, nan, "Select");
}

static const dist_vt beta_vt = {VG_DIST_BETA, "Beta", {"concentration1", "concentration0"}, true, beta_sample,
                                beta_log_prob, NULL, beta_cdf, beta_entropy, beta_mean, beta_variance, NULL, beta_mode,
                                NULL};

vg_distribution *vg_beta(vg_graph *g, vg_output concentration1, vg_output concentration0, bool validate_args,
                         const char *name) {
    vg_distribution *d = dist_open(g, &beta_vt, name, validate_args);
    if (!d) return NULL;
    if (!concentration1.op || !concentration0.op)
        return dist_fail(d, VG_INVALID_ARGUMENT, "concentration1 and concentration0 are required");
    if (!same_float(d, concentration1, concentration0)) return dist_close(d);
    vg_op *chk[2];
    int nc = 0;
    if (validate_args) {
        chk[nc++] = vg_assert_positive(g, concentration1, "Concentration parameter must be positive.", 3, NULL);
        chk[nc++] = vg_assert_positive(g, concentration0, "Concentration parameter must be positive.", 3, NULL);
    }
    return dist_finish(d, (vg_output[]){concentration1, concentration0}, 2, chk, nc,
                       bcast(vg_output_shape(concentration1), vg_output_shape(concentration0)), 0);
}

/* ---- Dirichlet (dirichlet.py) -------------------------------------------------------- */

static vg_output lbeta(vg_graph *g, vg_output x) {
    /* special_math_ops.lbeta over the last axis */
    vg_graph_push_scope(g, "lbeta");
    vg_output a = rsum_last(g, vg_lgamma(g, x, "Lgamma"), false, "log_prod_gamma_x");
    vg_output b = vg_lgamma(g, rsum_last(g, x, false, "sum_x"), "log_gamma_sum_x");
    vg_output r = vg_sub(g, a, b, "sub");
    vg_graph_pop_scope(g);
    return r;
}

static vg_output dir_total(vg_distribution *d) { return rsum_last(d->g, d->p[0], false, "total_concentration"); }

static vg_output dir_sample(vg_distribution *d, int64_t n, int64_t seed) {
    vg_graph *g = d->g;
    vg_output shape = vg_const_i32_vec(g, (const int32_t[]){(int32_t)n}, 1, "shape");
    vg_output gs = vg_random_gamma(g, shape, d->p[0], NONE, seed, "random_gamma");
    return vg_div(g, gs, rsum_last(g, gs, true, "Sum"), "truediv");
}

static vg_output dir_log_prob(vg_distribution *d, vg_output x) {
    vg_graph *g = d->g;
    x = as_pdt(d, x);
    vg_output c1 = vg_sub(g, d->p[0], scal(g, d->pdt, 1, "one"), "sub");
    vg_output lu = rsum_last(g, vg_mul(g, c1, vg_log(g, x, "Log"), "mul"), false, "Sum");
    return vg_sub(g, lu, lbeta(g, d->p[0]), "sub_1");
}

static vg_output dir_entropy(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output tot = dir_total(d);
    vg_output k = scal(g, d->pdt, (double)d->event.dims[0], "k");
    vg_output r = vg_add(g, lbeta(g, d->p[0]), vg_mul(g, vg_sub(g, tot, k, "sub"), vg_digamma(g, tot, "Digamma"), "mul"),
                         "add");
    vg_output c1 = vg_sub(g, d->p[0], scal(g, d->pdt, 1, "one"), "sub_1");
    return vg_sub(g, r, rsum_last(g, vg_mul(g, c1, vg_digamma(g, d->p[0], "Digamma_1"), "mul_1"), false, "Sum"), "sub_2");
}

static vg_output dir_mean(vg_distribution *d) {
    return vg_div(d->g, d->p[0], rsum_last(d->g, d->p[0], true, "total_concentration"), "truediv");
}

static vg_output dir_variance(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output m = dir_mean(d);
    vg_output one = scal(g, d->pdt, 1, "one");
    vg_output tot = rsum_last(g, d->p[0], true, "total_concentration_1");
    return vg_div(g, vg_mul(g, m, vg_sub(g, one, m, "sub"), "mul"), vg_add(g, one, tot, "add"), "truediv_1");
}

static vg_output dir_mode(vg_distribution *d) {
    vg_graph *g = d->g;
    vg_output one = scal(g, d->pdt, 1, "one");
    vg_output k = scal(g, d->pdt, (double)d->event.dims[0], "k");
    vg_output tot = rsum_last(g, d->p[0], true, "total_concentration");
    vg_output mode = vg_div(g, vg_sub(g, d->p[0], one, "sub"), vg_sub(g, tot, k, "sub_1"), "truediv");
    vg_output ones = vg_ones_like(g, mode, "ones_like");
    vg_output mn = vg_mul(g, vg_reduce_min(g, d->p[0], (const int32_t[]){-1}, 1, true, "Min"), ones, "min_b");
    vg_output nan = vg_mul(g, ones, scal(g, d->pdt, NAN, "nan"), "nan_b");
    return vg_select(g, vg_greater(g, mn, ones, "Greater"), mode, nan, "Select");
}

static vg_output dir_covariance(vg_distribution *d) {
    /* (diag(m) - m m^T) / (1 + total), m the mean (dirichlet.py _covariance) */
    vg_graph *g = d->g;
    vg_output m = dir_mean(d);
    vg_output one = scal(g, d->pdt, 1, "one");
    vg_output c = vg_matrix_set_diag(g, vg_neg(g, outer_last(g, m), "Neg"), vg_mul(g, m, vg_sub(g, one, m, "sub"), "mul"),
                                     "MatrixSetDiag");
    vg_output tot = vg_expand_dims(g, rsum_last(g, d->p[0], true, "total_concentration_1"), -1, "ExpandDims_2");
    return vg_div(g, c, vg_add(g, one, tot, "add"), "truediv_1");
}

static const dist_vt dir_vt = {VG_DIST_DIRICHLET, "Dirichlet", {"concentration"}, true, dir_sample, dir_log_prob,
                               NULL, NULL, dir_entropy, dir_mean, dir_variance, NULL, dir_mode, dir_covariance};

vg_distribution *vg_dirichlet(vg_graph *g, vg_output concentration, bool validate_args, const char *name) {
    vg_distribution *d = dist_open(g, &dir_vt, name, validate_args);
    if (!d) return NULL;
    if (!concentration.op) return dist_fail(d, VG_INVALID_ARGUMENT, "concentration is required");
    if (!same_float(d, concentration, NONE)) return dist_close(d);
    vg_shape s = vg_output_shape(concentration);
    if (s.ndims < 1 || s.dims[s.ndims - 1] < 0)
        return dist_fail(d, VG_INVALID_ARGUMENT, "concentration needs a known rank >= 1 and a known last dim");
    vg_op *chk =
        validate_args ? vg_assert_positive(g, concentration, "Concentration parameter must be positive.", 3, NULL) : NULL;
    return dist_finish(d, &concentration, 1, &chk, validate_args, s, 1);
}

/* ---- common methods -------------------------------------------------------------------- */

void vg_distribution_free(vg_distribution *d) { vg_free(d); }
vg_distribution_kind vg_distribution_get_kind(const vg_distribution *d) { return d->vt->kind; }
const char *vg_distribution_name(const vg_distribution *d) { return d ? d->name : ""; }
vg_dtype vg_distribution_dtype(const vg_distribution *d) { return d ? d->dtype : VG_DTYPE_INVALID; }
bool vg_distribution_is_reparameterized(const vg_distribution *d) { return d && d->vt->reparam; }
vg_shape vg_distribution_batch_shape(const vg_distribution *d) { return d ? d->batch : vg_shape_unknown(); }
vg_shape vg_distribution_event_shape(const vg_distribution *d) { return d ? d->event : vg_shape_unknown(); }

vg_output vg_distribution_param(const vg_distribution *d, const char *param) {
    if (!d || !param) return NONE;
    for (int i = 0; i < 3 && d->vt->params[i]; i++)
        if (strcmp(d->vt->params[i], param) == 0) return d->p[i];
    return NONE;
}

vg_output vg_distribution_sample(vg_distribution *d, int64_t n, int64_t seed, const char *name) {
    if (!d) return NONE;
    if (n < 0 || n > INT32_MAX) {
        vg_graph_set_error(d->g, VG_INVALID_ARGUMENT, "%s.sample: n must be in [0, 2^31), got %lld", d->vt->type,
                           (long long)n);
        return NONE;
    }
    if (!begin(d, "sample", name)) return NONE;
    vg_output r = d->vt->sample(d, n, seed);
    end(d);
    return r;
}

vg_output vg_distribution_sample_shape(vg_distribution *d, const int64_t *sample_shape, int rank, int64_t seed,
                                       const char *name) {
    if (!d) return NONE;
    int64_t n = 1;
    bool ok = rank >= 0 && rank <= VG_MAX_DIMS && (rank == 0 || sample_shape);
    for (int i = 0; ok && i < rank; i++) {
        ok = sample_shape[i] >= 0 && sample_shape[i] <= INT32_MAX;
        n *= ok ? sample_shape[i] : 1;
        ok = ok && n <= INT32_MAX;
    }
    if (!ok) {
        vg_graph_set_error(d->g, VG_INVALID_ARGUMENT, "%s.sample: sample_shape must have rank 0..%d and dims whose product "
                           "is in [0, 2^31)", d->vt->type, VG_MAX_DIMS);
        return NONE;
    }
    if (!begin(d, "sample", name)) return NONE;
    vg_graph *g = d->g;
    vg_output r = d->vt->sample(d, n, seed);
    /* TF's _call_sample_n: reshape to concat([sample_shape, shape(samples)[1:]]); a Const
     * target when batch + event are static (TF's _set_sample_static_shape) */
    vg_shape rs = vg_output_shape(r);
    bool known = rs.ndims >= 1 && rank + rs.ndims - 1 <= VG_MAX_DIMS;
    for (int i = 1; known && i < rs.ndims; i++) known = rs.dims[i] >= 0;
    int32_t ss[2 * VG_MAX_DIMS + 1];
    for (int i = 0; i < rank; i++) ss[i] = (int32_t)sample_shape[i];
    vg_output target;
    if (known) {
        for (int i = 1; i < rs.ndims; i++) ss[rank + i - 1] = (int32_t)rs.dims[i];
        target = vg_const_i32_vec(g, ss, rank + rs.ndims - 1, "final_shape");
    } else {
        vg_output head = rank ? vg_const_i32_vec(g, ss, rank, "sample_shape")
                              : vg_const_fill(g, VG_INT32, (const int64_t[]){0}, 1, 0, "sample_shape");
        vg_output tail = vg_slice_c(g, vg_shape_op(g, r, VG_INT32, "Shape"), (const int64_t[]){1}, (const int64_t[]){-1}, 1,
                                    "batch_event_shape");
        vg_output parts[2] = {head, tail};
        target = vg_concat_c(g, parts, 2, 0, "concat");
    }
    r = vg_reshape(g, r, target, "Reshape");
    end(d);
    return r;
}

/* A one-argument method: fn(x), or the fallback exp / log (exp_other) of other(x);
 * unimplemented when the distribution has neither. */
static vg_output method1(vg_distribution *d, vg_output x, const char *method, const char *name,
                         vg_output (*fn)(vg_distribution *, vg_output),
                         vg_output (*other)(vg_distribution *, vg_output), bool exp_other) {
    if (!d) return NONE;
    if (!fn && !other) return unimplemented(d, method);
    if (!begin(d, method, name)) return NONE;
    vg_output r;
    if (fn)
        r = fn(d, x);
    else if (exp_other)
        r = vg_exp(d->g, other(d, x), "Exp");
    else
        r = vg_log(d->g, other(d, x), "Log");
    end(d);
    return r;
}

vg_output vg_distribution_log_prob(vg_distribution *d, vg_output x, const char *name) {
    return method1(d, x, "log_prob", name, d ? d->vt->log_prob : NULL, d ? d->vt->prob : NULL, false);
}

vg_output vg_distribution_prob(vg_distribution *d, vg_output x, const char *name) {
    return method1(d, x, "prob", name, d ? d->vt->prob : NULL, d ? d->vt->log_prob : NULL, true);
}

vg_output vg_distribution_cdf(vg_distribution *d, vg_output x, const char *name) {
    return method1(d, x, "cdf", name, d ? d->vt->cdf : NULL, NULL, false);
}

/* TF's Distribution fallbacks through cdf: log_cdf = log(cdf), survival_function =
 * 1 - cdf, log_survival_function = log1p(-cdf). */
static vg_output via_cdf(vg_distribution *d, vg_output x, const char *method, const char *name, int which) {
    if (!d) return NONE;
    if (!d->vt->cdf) return unimplemented(d, method);
    if (!begin(d, method, name)) return NONE;
    vg_graph *g = d->g;
    vg_output c = d->vt->cdf(d, x), r;
    if (which == 0) r = vg_log(g, c, "Log");
    else if (which == 1) r = vg_sub(g, vg_const_fill(g, vg_output_dtype(c), NULL, 0, 1, "sub/x"), c, "sub");
    else r = vg_log1p(g, vg_neg(g, c, "Neg"), "Log1p");
    end(d);
    return r;
}

vg_output vg_distribution_log_cdf(vg_distribution *d, vg_output x, const char *name) {
    return via_cdf(d, x, "log_cdf", name, 0);
}
vg_output vg_distribution_survival_function(vg_distribution *d, vg_output x, const char *name) {
    return via_cdf(d, x, "survival_function", name, 1);
}
vg_output vg_distribution_log_survival_function(vg_distribution *d, vg_output x, const char *name) {
    return via_cdf(d, x, "log_survival_function", name, 2);
}

/* A no-argument method: fn, or the fallback through `other` (sqrt / square). */
static vg_output method0(vg_distribution *d, const char *method, const char *name,
                         vg_output (*fn)(vg_distribution *), vg_output (*other)(vg_distribution *), bool sqrt_other) {
    if (!d) return NONE;
    if (!fn && !other) return unimplemented(d, method);
    if (!begin(d, method, name)) return NONE;
    vg_output r;
    if (fn) r = fn(d);
    else if (sqrt_other) r = vg_sqrt(d->g, other(d), "Sqrt");
    else r = vg_square(d->g, other(d), "Square");
    end(d);
    return r;
}

vg_output vg_distribution_entropy(vg_distribution *d, const char *name) {
    return method0(d, "entropy", name, d ? d->vt->entropy : NULL, NULL, false);
}
vg_output vg_distribution_mean(vg_distribution *d, const char *name) {
    return method0(d, "mean", name, d ? d->vt->mean : NULL, NULL, false);
}
vg_output vg_distribution_mode(vg_distribution *d, const char *name) {
    return method0(d, "mode", name, d ? d->vt->mode : NULL, NULL, false);
}
vg_output vg_distribution_covariance(vg_distribution *d, const char *name) {
    return method0(d, "covariance", name, d ? d->vt->covariance : NULL, NULL, false);
}
vg_output vg_distribution_variance(vg_distribution *d, const char *name) {
    return method0(d, "variance", name, d ? d->vt->variance : NULL, d ? d->vt->stddev : NULL, false);
}
vg_output vg_distribution_stddev(vg_distribution *d, const char *name) {
    return method0(d, "stddev", name, d ? d->vt->stddev : NULL, d ? d->vt->variance : NULL, true);
}

/* ---- kl_divergence (kullback_leibler.py and each kind's registered function) ----------- */

static vg_output kl_normal(vg_graph *g, vg_distribution *a, vg_distribution *b) {
    vg_output sa2 = vg_square(g, a->p[1], "Square"), sb2 = vg_square(g, b->p[1], "Square_1");
    vg_output ratio = vg_div(g, sa2, sb2, "truediv");
    vg_output t1 = vg_div(g, vg_squared_difference(g, a->p[0], b->p[0], "SquaredDifference"),
                          vg_mul(g, scal(g, a->pdt, 2, "mul/x"), sb2, "mul"), "truediv_1");
    vg_output t2 = vg_sub(g, vg_sub(g, ratio, scal(g, a->pdt, 1, "sub/y"), "sub"), vg_log(g, ratio, "Log"), "sub_1");
    return vg_add(g, t1, vg_mul(g, scal(g, a->pdt, 0.5, "mul_1/x"), t2, "mul_1"), "add");
}

static vg_output kl_bernoulli(vg_graph *g, vg_distribution *a, vg_distribution *b) {
    vg_output la = a->p[0], lb = b->p[0];
    vg_output d0 = vg_sub(g, vg_softplus(g, vg_neg(g, lb, "Neg"), "Softplus"), vg_softplus(g, vg_neg(g, la, "Neg_1"), "Softplus_1"),
                          "sub");
    vg_output d1 = vg_sub(g, vg_softplus(g, lb, "Softplus_2"), vg_softplus(g, la, "Softplus_3"), "sub_1");
    return vg_add(g, vg_mul(g, vg_sigmoid(g, la, "Sigmoid"), d0, "mul"),
                  vg_mul(g, vg_sigmoid(g, vg_neg(g, la, "Neg_2"), "Sigmoid_1"), d1, "mul_1"), "add");
}

static vg_output kl_categorical(vg_graph *g, vg_distribution *a, vg_distribution *b) {
    vg_output dl = vg_sub(g, vg_log_softmax(g, a->p[0], "LogSoftmax"), vg_log_softmax(g, b->p[0], "LogSoftmax_1"), "sub");
    return rsum_last(g, vg_mul(g, vg_softmax(g, a->p[0], "Softmax"), dl, "mul"), false, "Sum");
}

static vg_output kl_beta(vg_graph *g, vg_distribution *a, vg_distribution *b) {
    vg_output ta = beta_total(a), tb = beta_total(b);
    vg_output r = vg_sub(g, beta_log_norm(b), beta_log_norm(a), "sub");
    r = vg_sub(g, r, vg_mul(g, vg_digamma(g, a->p[0], "Digamma"), vg_sub(g, b->p[0], a->p[0], "sub_1"), "mul"), "sub_2");
    r = vg_sub(g, r, vg_mul(g, vg_digamma(g, a->p[1], "Digamma_1"), vg_sub(g, b->p[1], a->p[1], "sub_3"), "mul_1"), "sub_4");
    return vg_add(g, r, vg_mul(g, vg_digamma(g, ta, "Digamma_2"), vg_sub(g, tb, ta, "sub_5"), "mul_2"), "add");
}

static vg_output kl_dirichlet(vg_graph *g, vg_distribution *a, vg_distribution *b) {
    vg_output ca = a->p[0], cb = b->p[0];
    vg_output dsum = vg_digamma(g, rsum_last(g, ca, true, "Sum"), "Digamma");
    vg_output ddiff = vg_sub(g, vg_digamma(g, ca, "Digamma_1"), dsum, "sub");
    vg_output cdiff = vg_sub(g, ca, cb, "sub_1");
    vg_output r = rsum_last(g, vg_mul(g, cdiff, ddiff, "mul"), false, "Sum_1");
    return vg_add(g, vg_sub(g, r, lbeta(g, ca), "sub_2"), lbeta(g, cb), "add");
}

static vg_output kl_mvn(vg_graph *g, vg_distribution *a, vg_distribution *b) {
    /* _kl_brute_force for diagonal scales: log|det Sb| - log|det Sa|
     * + (-k + ||Sb^-1 Sa||_F^2 + ||Sb^-1 (mb - ma)||^2) / 2 */
    vg_output la = rsum_last(g, vg_log(g, vg_abs(g, a->p[1], "Abs"), "Log"), false, "log_abs_det_a");
    vg_output lb = rsum_last(g, vg_log(g, vg_abs(g, b->p[1], "Abs_1"), "Log_1"), false, "log_abs_det_b");
    vg_output fr = rsum_last(g, vg_square(g, vg_div(g, a->p[1], b->p[1], "b_inv_a"), "Square"), false, "Sum");
    vg_output dm = vg_div(g, vg_sub(g, b->p[0], a->p[0], "sub"), b->p[1], "truediv");
    vg_output mh = rsum_last(g, vg_square(g, dm, "Square_1"), false, "Sum_1");
    vg_output k = scal(g, a->pdt, (double)a->event.dims[0], "k");
    vg_output inner = vg_add(g, vg_add(g, vg_neg(g, k, "Neg"), fr, "add"), mh, "add_1");
    return vg_add(g, vg_sub(g, lb, la, "sub_1"), vg_mul(g, scal(g, a->pdt, 0.5, "mul/x"), inner, "mul"), "add_2");
}

typedef struct kl_entry {
    vg_distribution_kind a, b;
    const char *scope;
    vg_output (*fn)(vg_graph *g, vg_distribution *a, vg_distribution *b);
} kl_entry;

static const kl_entry kl_table[] = {
    {VG_DIST_NORMAL, VG_DIST_NORMAL, "kl_normal_normal", kl_normal},
    {VG_DIST_BERNOULLI, VG_DIST_BERNOULLI, "kl_bernoulli_bernoulli", kl_bernoulli},
    {VG_DIST_CATEGORICAL, VG_DIST_CATEGORICAL, "kl_categorical_categorical", kl_categorical},
    {VG_DIST_BETA, VG_DIST_BETA, "kl_beta_beta", kl_beta},
    {VG_DIST_DIRICHLET, VG_DIST_DIRICHLET, "kl_dirichlet_dirichlet", kl_dirichlet},
    {VG_DIST_MVN_DIAG, VG_DIST_MVN_DIAG, "kl_mvn", kl_mvn},
};

vg_output vg_kl_divergence(vg_distribution *a, vg_distribution *b, const char *name) {
    if (!a || !b) return NONE;
    vg_graph *g = a->g;
    if (vg_graph_status(g, NULL) != VG_OK) return NONE;
    if (b->g != g) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "kl_divergence: the distributions belong to different graphs");
        return NONE;
    }
    const kl_entry *e = NULL;
    for (size_t i = 0; i < sizeof kl_table / sizeof kl_table[0]; i++)
        if (kl_table[i].a == a->vt->kind && kl_table[i].b == b->vt->kind) e = &kl_table[i];
    if (!e) {
        vg_graph_set_error(g, VG_UNIMPLEMENTED,
                           "No KL(distribution_a || distribution_b) registered for distribution_a type %s and "
                           "distribution_b type %s",
                           a->vt->type, b->vt->type);
        return NONE;
    }
    if (a->pdt != b->pdt) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "kl_divergence: dtypes differ (%s vs %s)", vg_dtype_name(a->pdt),
                           vg_dtype_name(b->pdt));
        return NONE;
    }
    if (e->a == VG_DIST_MVN_DIAG && a->event.dims[0] != b->event.dims[0]) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "kl_divergence: event sizes differ (%lld vs %lld)",
                           (long long)a->event.dims[0], (long long)b->event.dims[0]);
        return NONE;
    }
    vg_graph_push_scope(g, name ? name : "KullbackLeibler");
    vg_graph_push_scope(g, e->scope);
    vg_output r = e->fn(g, a, b);
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    return r;
}
