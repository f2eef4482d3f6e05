/*
 * vigil/distributions.h - tf.distributions / tf.contrib.distributions of TF 1.15 as graph
 * builders (src/train/distributions.c): Normal, Bernoulli, Categorical, Uniform,
 * MultivariateNormalDiag, Beta and Dirichlet, with sample, log_prob, prob, cdf, entropy,
 * mean, stddev, variance, mode and kl_divergence for the pairs TF registers.
 *
 * A vg_distribution is a small host object (kind, parameters, name scope) created by a
 * constructor and freed by vg_distribution_free; it borrows the graph, which must outlive
 * it. Its parameter tensors are Identity ops "<Name>/<param>" (e.g. "Normal/loc") under
 * the constructor's name scope (TF's default name, made unique: "Normal", "Normal_1"),
 * with the validate_args assertions as their control inputs; each method builds its ops
 * under "<Name>/<method>/" as TF ("Normal/log_prob/..."). Every output returned belongs
 * to the graph.
 *
 * Shapes: a sample of n has shape [n] + batch_shape + event_shape; log_prob/prob/cdf of
 * x (broadcast against batch_shape + event_shape) have x's batch shape; entropy, and the
 * moments of scalar distributions, have batch_shape (moments of MVNDiag / Dirichlet add
 * the event dimension). Categorical, MultivariateNormalDiag and Dirichlet need a
 * parameter of known rank (at least 1).
 *
 * Errors (through the graph's sticky status, vg_graph_status; functions returning an
 * output return {NULL, 0}, constructors NULL): VG_INVALID_ARGUMENT for parameters of
 * differing or non-float dtypes, a missing parameter, both or neither of logits/probs
 * ("Must pass probs or logits, but not both."), unknown ranks, or a negative n;
 * VG_UNIMPLEMENTED "cdf is not implemented: Bernoulli" for a method the kind lacks (as TF's
 * NotImplementedError) and for kl_divergence of an unregistered pair ("No
 * KL(distribution_a || distribution_b) registered for distribution_a type Normal and
 * distribution_b type Uniform"); VG_RESOURCE_EXHAUSTED when out of memory. With
 * validate_args a run fails with INVALID_ARGUMENT from the assertion (e.g. "assertion
 * failed: ... Condition x > 0 did not hold element-wise" for a non-positive scale).
 *
 * Example (compiles; a test builds it):
 *
 *     vg_output loc = vg_const_f32(g, 0.f, "loc"), scale = vg_const_f32(g, 2.f, "scale");
 *     vg_distribution *n = vg_normal(g, loc, scale, true, NULL);           // "Normal"
 *     vg_output smp = vg_distribution_sample(n, 16, 42, NULL);             // [16]
 *     vg_output lp = vg_distribution_log_prob(n, smp, NULL);               // Normal/log_prob/...
 *     vg_distribution *m = vg_normal(g, vg_const_f32(g, 1.f, NULL), scale, false, NULL);
 *     vg_output kl = vg_kl_divergence(n, m, NULL);                         // KullbackLeibler/...
 *     (void)lp, (void)kl;
 *     vg_distribution_free(n);
 *     vg_distribution_free(m);
 */
#ifndef VIGIL_DISTRIBUTIONS_H
#define VIGIL_DISTRIBUTIONS_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_distribution vg_distribution;

typedef enum vg_distribution_kind {
    VG_DIST_NORMAL,
    VG_DIST_BERNOULLI,
    VG_DIST_CATEGORICAL,
    VG_DIST_UNIFORM,
    VG_DIST_MVN_DIAG,
    VG_DIST_BETA,
    VG_DIST_DIRICHLET
} vg_distribution_kind;

/* ---- constructors (name NULL = TF's default: "Normal", "Bernoulli", ...) ---------- */
/* tf.distributions.Normal(loc, scale): float/double of one dtype, broadcast batch shape.
 * validate_args: assert_positive(scale). Reparameterized sample loc + scale * N(0, 1). */
VG_API vg_distribution *vg_normal(vg_graph *g, vg_output loc, vg_output scale, bool validate_args, const char *name);
/* tf.distributions.Bernoulli(logits=, probs=): exactly one of logits / probs ({NULL, 0} =
 * not given); the other is derived (sigmoid(logits), or log(p) - log1p(-p)). Samples
 * have dtype dtype (VG_DTYPE_INVALID = TF's int32). validate_args with probs: probs in
 * [0, 1] (assert_non_negative, assert_less_equal "probs has components greater than 1."). */
VG_API vg_distribution *vg_bernoulli(vg_graph *g, vg_output logits, vg_output probs, vg_dtype dtype,
                                     bool validate_args, const char *name);
/* tf.distributions.Categorical(logits=, probs=): [..., K] (event shape [], batch
 * shape the leading dims); logits derived as log(probs), probs as softmax(logits).
 * Samples of dtype dtype (VG_DTYPE_INVALID = int32) drawn through Multinomial. */
VG_API vg_distribution *vg_categorical(vg_graph *g, vg_output logits, vg_output probs, vg_dtype dtype,
                                       bool validate_args, const char *name);
/* tf.distributions.Uniform(low, high) ({NULL, 0}: TF's defaults 0 and 1, float32 unless
 * the other is given). validate_args: assert_less(low, high, "uniform not defined when
 * low >= high."). Reparameterized sample low + (high - low) * U[0, 1). */
VG_API vg_distribution *vg_uniform(vg_graph *g, vg_output low, vg_output high, bool validate_args, const char *name);
/* tf.contrib.distributions.MultivariateNormalDiag(loc, scale_diag): [..., k] each (loc
 * {NULL, 0}: zeros); event shape [k]. Reparameterized sample loc + scale_diag * N(0, 1).
 * validate_args: assert_none_equal(scale_diag, 0) ("Singular operator: Diagonal contained
 * zero values."). */
VG_API vg_distribution *vg_mvn_diag(vg_graph *g, vg_output loc, vg_output scale_diag, bool validate_args,
                                    const char *name);
/* tf.distributions.Beta(concentration1, concentration0); validate_args: both positive.
 * Sample g1 / (g1 + g2) of two RandomGamma draws, reparameterized through RandomGamma's
 * gradient. */
VG_API vg_distribution *vg_beta(vg_graph *g, vg_output concentration1, vg_output concentration0,
                                bool validate_args, const char *name);
/* tf.distributions.Dirichlet(concentration [..., k]); event shape [k]; validate_args:
 * positive. Sample gamma / reduce_sum(gamma, -1), reparameterized as Beta. */
VG_API vg_distribution *vg_dirichlet(vg_graph *g, vg_output concentration, bool validate_args, const char *name);

/* Frees d (the graph and its ops stay). NULL is a no-op. */
VG_API void vg_distribution_free(vg_distribution *d);

/* ---- properties (d NULL: "", VG_DTYPE_INVALID, false, unknown shapes; the kind needs a d) */
VG_API vg_distribution_kind vg_distribution_get_kind(const vg_distribution *d);
/* The name scope ("Normal_1"), borrowed from d. */
VG_API const char *vg_distribution_name(const vg_distribution *d);
/* The dtype of samples (the parameters' float dtype, or Bernoulli/Categorical's dtype). */
VG_API vg_dtype vg_distribution_dtype(const vg_distribution *d);
/* TF's reparameterization_type == FULLY_REPARAMETERIZED. */
VG_API bool vg_distribution_is_reparameterized(const vg_distribution *d);
/* A parameter by TF's name: "loc", "scale", "logits", "probs", "low", "high",
 * "scale_diag", "concentration1", "concentration0", "concentration"; {NULL, 0} for
 * another name (no graph error). */
VG_API vg_output vg_distribution_param(const vg_distribution *d, const char *param);
/* Static batch / event shapes (dims -1 where unknown; ndims -1 when the rank is). */
VG_API vg_shape vg_distribution_batch_shape(const vg_distribution *d);
VG_API vg_shape vg_distribution_event_shape(const vg_distribution *d);

/* ---- methods (name NULL = the method's name: "sample", "log_prob", ...) ------------- */
/* n draws, shape [n] + batch + event; seed as TF's op seed (0 = none). */
VG_API vg_output vg_distribution_sample(vg_distribution *d, int64_t n, int64_t seed, const char *name);
/* sample(sample_shape, seed): shape sample_shape[0..rank) + batch + event (rank 0: one
 * draw, TF's sample()); drawn as n = prod(sample_shape) and reshaped as TF's
 * _call_sample_n. INVALID_ARGUMENT for a negative dim, a rank above VG_MAX_DIMS or more
 * than 2^31 - 1 draws. */
VG_API vg_output vg_distribution_sample_shape(vg_distribution *d, const int64_t *sample_shape, int rank, int64_t seed,
                                              const char *name);
VG_API vg_output vg_distribution_log_prob(vg_distribution *d, vg_output x, const char *name);
VG_API vg_output vg_distribution_prob(vg_distribution *d, vg_output x, const char *name);
/* Normal, Uniform, Beta (Betainc) and Categorical (TF 1.15's: P(X < k), the sum of
 * probs[j] for j < k) only, as TF 1.15: VG_UNIMPLEMENTED otherwise. */
VG_API vg_output vg_distribution_cdf(vg_distribution *d, vg_output x, const char *name);
/* TF's fallbacks through cdf: log(cdf), 1 - cdf, log1p(-cdf) (the kinds with a cdf;
 * VG_UNIMPLEMENTED "log_cdf is not implemented: Dirichlet" otherwise). */
VG_API vg_output vg_distribution_log_cdf(vg_distribution *d, vg_output x, const char *name);
VG_API vg_output vg_distribution_survival_function(vg_distribution *d, vg_output x, const char *name);
VG_API vg_output vg_distribution_log_survival_function(vg_distribution *d, vg_output x, const char *name);
VG_API vg_output vg_distribution_entropy(vg_distribution *d, const char *name);
/* mean / variance / stddev: all kinds but Categorical (as TF 1.15). mode: all but Uniform;
 * Beta and Dirichlet modes are NaN where a concentration is <= 1 (allow_nan_stats). */
VG_API vg_output vg_distribution_mean(vg_distribution *d, const char *name);
VG_API vg_output vg_distribution_variance(vg_distribution *d, const char *name);
VG_API vg_output vg_distribution_stddev(vg_distribution *d, const char *name);
VG_API vg_output vg_distribution_mode(vg_distribution *d, const char *name);
/* covariance [..., k, k]: MultivariateNormalDiag (diag(scale_diag^2)) and Dirichlet
 * ((diag(m) - m m^T) / (1 + total)); VG_UNIMPLEMENTED "covariance is not implemented:
 * Normal" for the others (as TF). */
VG_API vg_output vg_distribution_covariance(vg_distribution *d, const char *name);

/* tf.distributions.kl_divergence(a, b) under "KullbackLeibler" (name NULL) and TF's
 * kl function scope ("kl_normal_normal", ...): Normal-Normal, Bernoulli-Bernoulli,
 * Categorical-Categorical, Beta-Beta, Dirichlet-Dirichlet, MVNDiag-MVNDiag (closed form,
 * equal to TF's _kl_brute_force for diagonal scales). Shape: the broadcast batch shape.
 * VG_UNIMPLEMENTED with TF's message for any other pair; INVALID_ARGUMENT when a and b
 * live in different graphs. */
VG_API vg_output vg_kl_divergence(vg_distribution *a, vg_distribution *b, const char *name);

#ifdef __cplusplus
}
#endif
#endif
