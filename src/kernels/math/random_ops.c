/*
 * random_ops.c - TensorFlow's stateful random ops: RandomUniform, RandomStandardNormal,
 * TruncatedNormal and RandomShuffle, with their builders.
 *
 * Numbers come from Philox4x32-10 (a counter-based generator, as TF uses; the exact
 * stream is not TF's). The key is derived from the (seed, seed2) attrs, or from a
 * nondeterministic source when both are 0 (as TF). Each (session, op) pair keeps an
 * atomic 64-bit block counter in its kernel state; every run reserves the blocks it
 * needs with one fetch-add, so concurrent runs never share numbers and a new session
 * replays the same stream (TF: same seeds -> same sequence per session).
 *
 * Element i of a run maps to fixed counter blocks, so results do not depend on how
 * the work is split over threads. None of these ops is differentiable.
 */
#include "kernels/kernel.h"
#include "vigil/ops.h"
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/random.h>

/* ------------------------------------------------------------------------ */
/* Philox4x32-10 */

typedef struct philox_out {
    uint32_t v[4];
} philox_out;

/* One Philox4x32-10 block for the 128-bit counter (lo64, c2, c3) under key. */
static inline philox_out philox(const uint32_t key[2], uint64_t lo, uint32_t c2, uint32_t c3) {
    uint32_t c[4] = {(uint32_t)lo, (uint32_t)(lo >> 32), c2, c3};
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = (uint32_t)p1;
        c[2] = n2;
        c[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    philox_out o = {{c[0], c[1], c[2], c[3]}};
    return o;
}

/* PB consecutive blocks (counters lo0 .. lo0 + PB - 1) at once, written to o[word][i];
 * the independent lanes let the compiler vectorize the multiplies. Same values as
 * philox() block by block. */
#define PB 8
static inline void philox_batch(const uint32_t key[2], uint64_t lo0, uint32_t o[4][PB]) {
    uint32_t c0[PB], c1[PB], c2[PB], c3[PB];
    for (int i = 0; i < PB; i++) {
        uint64_t lo = lo0 + (uint64_t)i;
        c0[i] = (uint32_t)lo;
        c1[i] = (uint32_t)(lo >> 32);
        c2[i] = 0;
        c3[i] = 0;
    }
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        for (int i = 0; i < PB; i++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * c0[i];
            uint64_t p1 = (uint64_t)0xCD9E8D57u * c2[i];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[i] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[i] ^ k1;
            c1[i] = (uint32_t)p1;
            c3[i] = (uint32_t)p0;
            c0[i] = n0;
            c2[i] = n2;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    memcpy(o[0], c0, sizeof c0);
    memcpy(o[1], c1, sizeof c1);
    memcpy(o[2], c2, sizeof c2);
    memcpy(o[3], c3, sizeof c3);
}

static uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* [0, 1) floats from the mantissa bits, as TF's Uint32ToFloat / Uint64ToDouble. */
static inline float u32_to_float(uint32_t x) {
    uint32_t v = (x & 0x7fffffu) | 0x3f800000u;
    float f;
    memcpy(&f, &v, sizeof f);
    return f - 1.0f;
}
static inline double u64_to_double(uint32_t hi, uint32_t lo) {
    uint64_t v = ((((uint64_t)hi << 32) | lo) & 0xfffffffffffffull) | 0x3ff0000000000000ull;
    double d;
    memcpy(&d, &v, sizeof d);
    return d - 1.0;
}

/* Box-Muller: two normals from two uniforms (TF clamps u1 to 1e-7). */
static inline void box_muller_f(uint32_t x0, uint32_t x1, float *f0, float *f1) {
    float u1 = u32_to_float(x0);
    if (u1 < 1e-7f) u1 = 1e-7f;
    float v1 = 6.283185307179586f * u32_to_float(x1);
    float r = sqrtf(-2.0f * logf(u1));
    *f0 = sinf(v1) * r;
    *f1 = cosf(v1) * r;
}
static inline void box_muller_d(double u1, double u2, double *d0, double *d1) {
    if (u1 < 1e-7) u1 = 1e-7;
    double v1 = 6.283185307179586 * u2;
    double r = sqrt(-2.0 * log(u1));
    *d0 = sin(v1) * r;
    *d1 = cos(v1) * r;
}

/* ------------------------------------------------------------------------ */
/* per-(session, op) state */

typedef struct rng_state {
    uint32_t key[2];
    _Atomic uint64_t counter; /* next free Philox block */
} rng_state;

static uint64_t nondeterministic_seed(const void *salt) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v)
        v = (uint64_t)vg__now_ns() ^ ((uint64_t)(uintptr_t)salt << 16);
    return v;
}

static void *rng_create(const vg_op *op, vg_status *st) {
    int64_t seed = 0, seed2 = 0;
    vg_op_attr_int(op, "seed", &seed);
    vg_op_attr_int(op, "seed2", &seed2);
    rng_state *s = vg__malloc(sizeof *s);
    if (!s) { VG_OOM(st, "random op state"); return NULL; }
    uint64_t k;
    if (seed == 0 && seed2 == 0) k = splitmix64(nondeterministic_seed(s) ^ splitmix64(nondeterministic_seed(op)));
    else k = splitmix64((uint64_t)seed ^ splitmix64((uint64_t)seed2 + 0x5851F42D4C957F2Dull));
    s->key[0] = (uint32_t)k;
    s->key[1] = (uint32_t)(k >> 32);
    atomic_init(&s->counter, 0);
    return s;
}

static void rng_destroy(void *p) { vg__free(p); }

/* The op's stream and `blocks` reserved counter blocks starting at *base. */
static vg_code rng_reserve(vg__kctx *ctx, uint64_t blocks, rng_state **out, uint64_t *base) {
    void *p = NULL;
    vg_code c = vg__kctx_state(ctx, rng_create, rng_destroy, &p);
    if (c != VG_OK) return c;
    *out = p;
    *base = atomic_fetch_add_explicit(&(*out)->counter, blocks, memory_order_relaxed);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* shape input helpers */

/* Output dims from the 1-D int32/int64 shape tensor t. */
static vg_code dims_from_shape_tensor(vg__kctx *ctx, const vg_tensor *t, int64_t *dims, int *ndims) {
    vg_status *st = vg__kctx_status(ctx);
    if (vg_tensor_ndims(t) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape must be a vector of {int32,int64}, got a tensor of rank %d",
                             vg_tensor_ndims(t));
    int64_t n = vg_tensor_dim(t, 0);
    if (n > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape has %lld dimensions; at most %d are supported",
                             (long long)n, VG_MAX_DIMS);
    for (int64_t i = 0; i < n; i++) {
        int64_t d = vg_tensor_dtype(t) == VG_INT64 ? ((const int64_t *)vg_tensor_data(t))[i]
                                                  : ((const int32_t *)vg_tensor_data(t))[i];
        if (d < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)d);
        dims[i] = d;
    }
    *ndims = (int)n;
    return VG_OK;
}

/* Build-time shape from the shape input: Const values, else [?, ...] of the right rank. */
static vg_shape shape_from_input(const vg_op *op, int i) {
    const vg_tensor *c = vg__op_const_input(op, i);
    if (c && vg_tensor_ndims(c) == 1 && vg_tensor_dim(c, 0) <= VG_MAX_DIMS) {
        vg_shape s;
        s.ndims = (int)vg_tensor_dim(c, 0);
        for (int k = 0; k < s.ndims; k++) {
            int64_t d = vg_tensor_dtype(c) == VG_INT64 ? ((const int64_t *)vg_tensor_data(c))[k]
                                                      : ((const int32_t *)vg_tensor_data(c))[k];
            s.dims[k] = d < 0 ? -1 : d;
        }
        return s;
    }
    vg_shape in = vg__op_input_shape(op, i);
    if (in.ndims == 1 && in.dims[0] >= 0 && in.dims[0] <= VG_MAX_DIMS) return vg_shape_make(NULL, (int)in.dims[0]);
    return vg_shape_unknown();
}

/* RandomUniform / RandomStandardNormal / TruncatedNormal: (shape; dtype, seed, seed2, T). */
static vg_code shape_random(vg_op *op, vg_status *st) {
    vg_dtype sdt = vg__op_input_dtype(op, 0);
    if (sdt != VG_INT32 && sdt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape must be int32 or int64, got %s", vg_dtype_name(sdt));
    vg_shape ss = vg__op_input_shape(op, 0);
    if (vg__shape_need_rank(&ss, 1, "Shape must be rank 1 but is rank %d", st)) return st->code;
    vg_dtype dt = VG_DTYPE_INVALID;
    if (!vg_op_attr_type_(op, "dtype", &dt) || (dt != VG_FLOAT && dt != VG_DOUBLE))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "dtype must be float or double, got %s", vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, "T", sdt);
    vg__op_default_seeds(op);
    return vg__op_set_single_output(op, dt, shape_from_input(op, 0));
}

/* ------------------------------------------------------------------------ */
/* kernels */

enum { DIST_UNIFORM, DIST_NORMAL, DIST_TRUNCATED };

typedef struct fill_job {
    const uint32_t *key;
    uint64_t base;
    void *out;
    int64_t n;
    int per_block; /* elements per counter block: 4 float, 2 double */
    bool dbl;
    int dist;
} fill_job;

/* The 4 words of block b - b0 of a batch (see philox_batch). */
static inline philox_out batch_block(uint32_t o[4][PB], int i) {
    philox_out r = {{o[0][i], o[1][i], o[2][i], o[3][i]}};
    return r;
}

/* Uniform: block b fills elements [b*per, b*per+per). float: 4 per block, double: 2. */
static inline void uniform_block(const fill_job *j, philox_out r, int64_t e) {
    if (!j->dbl) {
        float *out = (float *)j->out + e;
        if (e + 4 <= j->n)
            for (int k = 0; k < 4; k++) out[k] = u32_to_float(r.v[k]);
        else
            for (int k = 0; e + k < j->n; k++) out[k] = u32_to_float(r.v[k]);
    } else {
        double *out = (double *)j->out + e;
        out[0] = u64_to_double(r.v[0], r.v[1]);
        if (e + 1 < j->n) out[1] = u64_to_double(r.v[2], r.v[3]);
    }
}

/* Normal: Box-Muller; float 4 per block (two pairs), double 2 per block. */
static inline void normal_block(const fill_job *j, philox_out r, int64_t e) {
    if (!j->dbl) {
        float z[4];
        box_muller_f(r.v[0], r.v[1], &z[0], &z[1]);
        box_muller_f(r.v[2], r.v[3], &z[2], &z[3]);
        float *out = (float *)j->out + e;
        for (int k = 0; k < 4 && e + k < j->n; k++) out[k] = z[k];
    } else {
        double z0, z1;
        box_muller_d(u64_to_double(r.v[0], r.v[1]), u64_to_double(r.v[2], r.v[3]), &z0, &z1);
        double *out = (double *)j->out + e;
        out[0] = z0;
        if (e + 1 < j->n) out[1] = z1;
    }
}

/* Counter blocks [b0, b1) in batches of PB: put(j, words of block b, first element of
 * block b). Always inlined with a constant put, so each caller's loop stays direct. */
static inline __attribute__((always_inline)) void fill_blocks(const fill_job *j, int64_t b0, int64_t b1,
                                                              void (*put)(const fill_job *, philox_out, int64_t)) {
    uint32_t o[4][PB];
    for (int64_t bb = b0; bb < b1; bb += PB) {
        philox_batch(j->key, j->base + (uint64_t)bb, o);
        for (int i = 0; i < PB && bb + i < b1; i++) put(j, batch_block(o, i), (bb + i) * j->per_block);
    }
}

static void fill_uniform(void *arg, int64_t b0, int64_t b1) { fill_blocks(arg, b0, b1, uniform_block); }
static void fill_normal(void *arg, int64_t b0, int64_t b1) { fill_blocks(arg, b0, b1, normal_block); }

/* Truncated normal: chunk u (per_block elements: 4 float / 2 double) owns counter
 * block base + u; attempt a uses counter word 2 = a and yields 4 (float) or 2 (double)
 * Box-Muller candidates, which fill the chunk's slots in order when |z| < 2. */
static void fill_truncated(void *arg, int64_t u0, int64_t u1) {
    const fill_job *j = arg;
    for (int64_t u = u0; u < u1; u++) {
        int64_t e = u * j->per_block, end = e + j->per_block < j->n ? e + j->per_block : j->n;
        for (uint32_t a = 0; e < end && a < 1000; a++) {
            philox_out r = philox(j->key, j->base + (uint64_t)u, a, 1);
            double z[4] = {0, 0, 0, 0};
            int nz;
            if (!j->dbl) {
                float f[4];
                box_muller_f(r.v[0], r.v[1], &f[0], &f[1]);
                box_muller_f(r.v[2], r.v[3], &f[2], &f[3]);
                for (int k = 0; k < 4; k++) z[k] = f[k];
                nz = 4;
            } else {
                box_muller_d(u64_to_double(r.v[0], r.v[1]), u64_to_double(r.v[2], r.v[3]), &z[0], &z[1]);
                nz = 2;
            }
            for (int k = 0; k < nz && e < end; k++) {
                if (!(fabs(z[k]) < 2.0)) continue;
                if (j->dbl) ((double *)j->out)[e++] = z[k];
                else ((float *)j->out)[e++] = (float)z[k];
            }
        }
        for (; e < end; e++) { /* 1000 rejections in a row: never happens in practice */
            if (j->dbl) ((double *)j->out)[e] = 0;
            else ((float *)j->out)[e] = 0;
        }
    }
}

static vg_code kernel_random(vg__kctx *ctx, int dist) {
    const vg_op *op = vg__kctx_op(ctx);
    vg_dtype dt = VG_FLOAT;
    vg_op_attr_type_(op, "dtype", &dt);
    int64_t dims[VG_MAX_DIMS];
    int nd = 0;
    vg_code c = dims_from_shape_tensor(ctx, vg__kctx_input(ctx, 0), dims, &nd);
    if (c != VG_OK) return c;
    vg_tensor *out;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, dims, nd, &out)) != VG_OK) return c;
    fill_job j = {NULL, 0, vg_tensor_data(out), vg_tensor_num_elements(out), dt == VG_DOUBLE ? 2 : 4,
                  dt == VG_DOUBLE, dist};
    int64_t units = (j.n + j.per_block - 1) / j.per_block;
    rng_state *s;
    if ((c = rng_reserve(ctx, (uint64_t)units, &s, &j.base)) != VG_OK) return c;
    j.key = s->key;
    if (units == 0) return VG_OK;
    vg__range_fn fn = dist == DIST_UNIFORM ? fill_uniform : dist == DIST_NORMAL ? fill_normal : fill_truncated;
    vg__kctx_parallel_for(ctx, units, dist == DIST_UNIFORM ? 40 : 200, fn, &j);
    return VG_OK;
}

static vg_code kernel_random_uniform(vg__kctx *ctx) { return kernel_random(ctx, DIST_UNIFORM); }
static vg_code kernel_random_normal(vg__kctx *ctx) { return kernel_random(ctx, DIST_NORMAL); }
static vg_code kernel_truncated_normal(vg__kctx *ctx) { return kernel_random(ctx, DIST_TRUNCATED); }

/* RandomShuffle(value; seed, seed2, T): permutes value along dimension 0. */
static vg_code shape_random_shuffle(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt == VG_RESOURCE || dt == VG_DTYPE_INVALID)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "cannot shuffle a %s tensor", vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_default_seeds(op);
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, 0));
}

/* Sequential uniform integers in [0, m) from reserved Philox blocks. */
typedef struct int_stream {
    const uint32_t *key;
    uint64_t next;
    philox_out buf;
    int avail;
} int_stream;

static inline uint32_t stream_u32(int_stream *s) {
    if (s->avail == 0) {
        s->buf = philox(s->key, s->next++, 0, 2);
        s->avail = 4;
    }
    return s->buf.v[4 - s->avail--];
}

static inline uint64_t stream_below(int_stream *s, uint64_t m) {
    if (m <= 0xffffffffull) return ((uint64_t)stream_u32(s) * m) >> 32;
    uint64_t hi = stream_u32(s);
    return ((hi << 32) | stream_u32(s)) % m;
}

static vg_code kernel_random_shuffle(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t n = vg_tensor_ndims(x) == 0 ? 1 : vg_tensor_dim(x, 0);
    if (n <= 1) {
        vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
        return VG_OK;
    }
    bool big = (uint64_t)n > 0xffffffffull;
    uint64_t words = (uint64_t)(n - 1) * (big ? 2 : 1);
    rng_state *s;
    int_stream rs = {NULL, 0, {{0}}, 0};
    vg_code c = rng_reserve(ctx, (words + 3) / 4, &s, &rs.next);
    if (c != VG_OK) return c;
    rs.key = s->key;
    int64_t *perm = vg__malloc(sizeof(int64_t) * (size_t)n);
    if (!perm) return VG_OOM(st, "shuffle permutation");
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates, as TF */
        int64_t k = (int64_t)stream_below(&rs, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
    vg_tensor *out;
    if ((c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), vg_tensor_ndims(x), &out)) != VG_OK) {
        vg__free(perm);
        return c;
    }
    int64_t row = vg_tensor_num_elements(x) / n; /* elements per slice along dim 0 */
    if (vg_tensor_dtype(x) == VG_STRING) {
        for (int64_t i = 0; i < n && c == VG_OK; i++)
            for (int64_t k = 0; k < row && c == VG_OK; k++) {
                size_t len;
                const char *p = vg_tensor_string(x, perm[i] * row + k, &len);
                c = vg_tensor_set_string(out, i * row + k, p, len, st);
            }
    } else {
        size_t rb = (size_t)row * vg_dtype_size(vg_tensor_dtype(x));
        const char *src = vg_tensor_data(x);
        char *dst = vg_tensor_data(out);
        if (rb)
            for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * rb, src + (size_t)perm[i] * rb, rb);
    }
    vg__free(perm);
    return c;
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_output build_random(vg_graph *g, const char *type, vg_output shape, vg_dtype dt, int64_t seed,
                              int64_t seed2, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, type, (vg_output[]){shape}, 1);
    vg_op_builder_set_attr_type(b, "dtype", dt);
    vg__builder_set_seeds(b, seed, seed2);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_random_uniform(vg_graph *g, vg_output shape, vg_dtype dt, int64_t seed, int64_t seed2,
                            const char *name) {
    return build_random(g, "RandomUniform", shape, dt, seed, seed2, name);
}

vg_output vg_random_standard_normal(vg_graph *g, vg_output shape, vg_dtype dt, int64_t seed, int64_t seed2,
                                    const char *name) {
    return build_random(g, "RandomStandardNormal", shape, dt, seed, seed2, name);
}

vg_output vg_truncated_normal(vg_graph *g, vg_output shape, vg_dtype dt, int64_t seed, int64_t seed2,
                              const char *name) {
    return build_random(g, "TruncatedNormal", shape, dt, seed, seed2, name);
}

vg_output vg_random_shuffle(vg_graph *g, vg_output x, int64_t seed, int64_t seed2, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "RandomShuffle", name, "RandomShuffle", (vg_output[]){x}, 1);
    vg__builder_set_seeds(b, seed, seed2);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ------------------------------------------------------------------------ */

#define RANDOM_FLAGS (VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE)

const vg__op_def vg__ops_random[] = {
    {"RandomUniform", 1, 1, RANDOM_FLAGS, 0, shape_random, kernel_random_uniform, NULL},
    {"RandomStandardNormal", 1, 1, RANDOM_FLAGS, 0, shape_random, kernel_random_normal, NULL},
    {"TruncatedNormal", 1, 1, RANDOM_FLAGS, 0, shape_random, kernel_truncated_normal, NULL},
    {"RandomShuffle", 1, 1, RANDOM_FLAGS, 0, shape_random_shuffle, kernel_random_shuffle, NULL},
    {0},
};
