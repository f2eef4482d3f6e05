/*
 * random_sampling_ops.c - sampling ops beyond random_ops.c, on this file's own stream
 * (splitmix64 over a per-(session, op) counter keyed by the seeds; both seeds 0 = a
 * non-deterministic key), so values are not TF's but the same seeds repeat them:
 *   - Multinomial(logits [batch, classes], num_samples; seed, seed2, output_dtype) as
 *     TF 1.15's multinomial_op.cc: per row, the CDF of exp(logit - max finite logit)
 *     over the finite logits, and for each sample the upper bound of u * total in it;
 *   - RandomUniformInt(shape, minval, maxval; seed, seed2, Tout, T): integers uniform
 *     in [minval, maxval) (INVALID_ARGUMENT "Need minval < maxval: 5 >= 5" as TF).
 * Neither is differentiable (TF: NotDifferentiable).
 */
#include "kernels/ew_internal.h"
#include "kernels/math/random_internal.h"
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>

vg__seed_stream *vg__seed_stream_new(const vg_op *op, uint64_t salt, const char *what, vg_status *st) {
    int64_t seed = 0, seed2 = 0;
    vg_op_attr_int(op, "seed", &seed);
    vg_op_attr_int(op, "seed2", &seed2);
    vg__seed_stream *s = vg__malloc(sizeof *s);
    if (!s) {
        VG_OOM(st, what);
        return NULL;
    }
    if (seed == 0 && seed2 == 0) {
        uint64_t v = 0;
        if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)s;
        }
        s->key = vg__splitmix64(v);
    } else {
        s->key = vg__splitmix64((uint64_t)seed ^ vg__splitmix64((uint64_t)seed2 + salt));
    }
    atomic_init(&s->counter, 0);
    return s;
}

static void *mn_create(const vg_op *op, vg_status *st) {
    return vg__seed_stream_new(op, 0x2545F4914F6CDD1Dull, "Multinomial state", st);
}

static void mn_destroy(void *p) { vg__free(p); }

static vg_code shape_multinomial(vg_op *op, vg_status *st) {
    vg_dtype lt = vg__op_input_dtype(op, 0);
    if (lt != VG_FLOAT && lt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Multinomial: logits have dtype %s (float or double)", vg_dtype_name(lt));
    if (vg__op_input_dtype(op, 1) != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Multinomial: num_samples must be int32");
    vg_dtype ot = VG_INT64;
    if (vg_op_attr_type_(op, "output_dtype", &ot) && ot != VG_INT32 && ot != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Multinomial: output_dtype must be int32 or int64");
    vg__op_set_default_attr_type(op, "T", lt);
    vg__op_set_default_attr_type(op, "output_dtype", ot);
    vg__op_default_seeds(op);
    vg_shape l = vg__op_input_shape(op, 0);
    if (vg__shape_need_rank(&l, 2, "logits should be a matrix, got shape rank %d", st)) return st->code;
    int64_t dims[2] = {l.ndims == 2 ? l.dims[0] : -1, -1};
    const vg_tensor *ns = vg__op_const_input(op, 1);
    if (ns && vg_tensor_ndims(ns) == 0) {
        int32_t n = *(const int32_t *)vg_tensor_data(ns);
        if (n < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_samples should be nonnegative, got %d", n);
        dims[1] = n;
    }
    return vg__op_set_single_output(op, ot, vg_shape_make(dims, 2));
}

static vg_code kernel_multinomial(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *lg = vg__kctx_input(ctx, 0), *ns = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(lg) != 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "logits should be a matrix, got rank %d", vg_tensor_ndims(lg));
    if (vg_tensor_ndims(ns) != 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_samples should be a scalar");
    int32_t n = *(const int32_t *)vg_tensor_data(ns);
    if (n < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_samples should be nonnegative, got %d", n);
    int64_t b = vg_tensor_dim(lg, 0), k = vg_tensor_dim(lg, 1);
    if (k <= 0 && b > 0 && n > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "num_classes should be positive, got %lld", (long long)k);
    vg_dtype ot = VG_INT64;
    vg_op_attr_type_(vg__kctx_op(ctx), "output_dtype", &ot);
    int64_t dims[2] = {b, n};
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, ot, dims, 2, &o);
    if (c != VG_OK || b * n == 0) return c;
    void *p = NULL;
    if ((c = vg__kctx_state(ctx, mn_create, mn_destroy, &p)) != VG_OK) return c;
    vg__seed_stream *s = p;
    uint64_t base = atomic_fetch_add_explicit(&s->counter, (uint64_t)(b * n), memory_order_relaxed);
    double *cdf = vg__malloc(sizeof(double) * (size_t)k);
    if (!cdf) return VG_OOM(st, "Multinomial CDF");
    bool f32 = vg_tensor_dtype(lg) == VG_FLOAT;
    for (int64_t r = 0; r < b; r++) {
        double mx = -INFINITY, total = 0;
        for (int64_t j = 0; j < k; j++) {
            double v = f32 ? ((const float *)vg_tensor_data(lg))[r * k + j] : ((const double *)vg_tensor_data(lg))[r * k + j];
            if (isfinite(v) && v > mx) mx = v;
        }
        for (int64_t j = 0; j < k; j++) {
            double v = f32 ? ((const float *)vg_tensor_data(lg))[r * k + j] : ((const double *)vg_tensor_data(lg))[r * k + j];
            if (isfinite(v)) total += exp(v - mx);
            cdf[j] = total;
        }
        for (int64_t j = 0; j < n; j++) {
            uint64_t bits = vg__splitmix64(s->key ^ vg__splitmix64(base + (uint64_t)(r * n + j)));
            double u = (double)(bits >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
            double to_find = u * total;
            int64_t lo = 0, hi = k; /* upper_bound: first cdf > to_find */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > to_find) hi = mid;
                else lo = mid + 1;
            }
            if (ot == VG_INT64) ((int64_t *)vg_tensor_data(o))[r * n + j] = lo;
            else ((int32_t *)vg_tensor_data(o))[r * n + j] = (int32_t)lo;
        }
    }
    vg__free(cdf);
    return VG_OK;
}

vg_output vg_multinomial(vg_graph *g, vg_output logits, int num_samples, int64_t seed, vg_dtype output_dtype,
                         const char *name) {
    int64_t s1, s2;
    vg_graph_get_seed(g, seed, &s1, &s2);
    char full[1024], sc[1100];
    vg_graph_unique_name(g, name ? name : "multinomial", full, sizeof full);
    snprintf(sc, sizeof sc, "%s/", full);
    vg_graph_push_scope(g, sc);
    vg_output ns = vg_const_i32(g, num_samples, "num_samples");
    vg_op_builder *b = vg__builder_with_inputs(g, "Multinomial", "Multinomial", NULL, (vg_output[]){logits, ns}, 2);
    vg__builder_set_seeds(b, s1, s2); /* NULL-safe, as finish is: r is then NULL */
    vg_op_builder_set_attr_type(b, "output_dtype", output_dtype);
    vg_output r = vg_out(vg_op_builder_finish(b), 0);
    vg_graph_pop_scope(g);
    return r;
}

/* ---- RandomUniformInt -------------------------------------------------------------- */

static vg_code shape_uniform_int(vg_op *op, vg_status *st) {
    vg_dtype st_ = vg__op_input_dtype(op, 0), t = vg__op_input_dtype(op, 1);
    if (st_ != VG_INT32 && st_ != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RandomUniformInt: shape must be int32 or int64");
    if ((t != VG_INT32 && t != VG_INT64) || vg__op_input_dtype(op, 2) != t)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RandomUniformInt: minval and maxval must be int32 or int64 of one dtype");
    vg_shape a = vg__op_input_shape(op, 1), b = vg__op_input_shape(op, 2);
    if (a.ndims > 0 || b.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "minval and maxval must be scalars");
    vg__op_set_default_attr_type(op, "Tout", t);
    vg__op_set_default_attr_type(op, "T", st_);
    vg__op_default_seeds(op);
    vg_shape out = vg_shape_unknown();
    const vg_tensor *s = vg__op_const_input(op, 0);
    if (s) vg__read_shape_vec(s, out.dims, &out.ndims);
    return vg__op_set_single_output(op, t, out);
}

static vg_code kernel_uniform_int(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *s = vg__kctx_input(ctx, 0), *lo = vg__kctx_input(ctx, 1), *hi = vg__kctx_input(ctx, 2);
    if (vg_tensor_ndims(s) != 1 || vg_tensor_dim(s, 0) > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape must be a vector of at most %d dims", VG_MAX_DIMS);
    if (vg_tensor_ndims(lo) != 0 || vg_tensor_ndims(hi) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "minval and maxval must be scalars");
    vg_dtype t = vg_tensor_dtype(lo);
    int64_t mn = vg__int_at(lo, 0), mx = vg__int_at(hi, 0);
    if (mn >= mx)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Need minval < maxval: %lld >= %lld", (long long)mn, (long long)mx);
    int64_t dims[VG_MAX_DIMS];
    int r = (int)vg_tensor_dim(s, 0);
    for (int i = 0; i < r; i++) {
        dims[i] = vg__int_at(s, i);
        if (dims[i] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "shape has a negative dim %lld", (long long)dims[i]);
    }
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, t, dims, r, &o);
    int64_t n = c == VG_OK ? vg_tensor_num_elements(o) : 0;
    if (c != VG_OK || n == 0) return c;
    void *p = NULL;
    if ((c = vg__kctx_state(ctx, mn_create, mn_destroy, &p)) != VG_OK) return c;
    vg__seed_stream *rs = p;
    uint64_t base = atomic_fetch_add_explicit(&rs->counter, (uint64_t)n, memory_order_relaxed);
    uint64_t range = (uint64_t)mx - (uint64_t)mn; /* > 0 */
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits = vg__splitmix64(rs->key ^ vg__splitmix64(base + (uint64_t)i));
        uint64_t v = (uint64_t)mn + bits % range; /* modulo bias below 2^-32 for ranges < 2^32 */
        if (t == VG_INT32) ((int32_t *)vg_tensor_data(o))[i] = (int32_t)(int64_t)v;
        else ((int64_t *)vg_tensor_data(o))[i] = (int64_t)v;
    }
    return VG_OK;
}

vg_output vg_random_uniform_int(vg_graph *g, vg_output shape, vg_output minval, vg_output maxval, int64_t s1, int64_t s2,
                                const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "RandomUniformInt", name, NULL, (vg_output[]){shape, minval, maxval}, 3);
    if (!b) return vg_out(NULL, 0);
    vg__builder_set_seeds(b, s1, s2);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_random_sampling[] = {
    {"RandomUniformInt", 3, 3, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_uniform_int, kernel_uniform_int, NULL},
    {"Multinomial", 2, 2, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_multinomial, kernel_multinomial, NULL},
    {0},
};
