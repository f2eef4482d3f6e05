/*
 * array_index_ops.c - TensorFlow's layout and indexing array ops (Transpose,
 * ConcatV2, ConcatOffset, Slice, Pad, Pack, Unpack, GatherV2, UnsortedSegmentSum,
 * OneHot, Tile): shape functions, kernels, gradients (TF's array_grad.py), builders
 * (with the composite tf.boolean_mask) and the family's op table vg__ops_array_index. Helpers shared with
 * array_shape_ops.c are declared in array_internal.h.
 *
 * The data-movement kernels work on raw bytes with the element size. String tensors
 * go through the same code: each input element is replaced by an int64 tag
 * ((input + 1) << 40 | element), the kernel moves tags, and the output strings are
 * copied from the tags afterwards (tag 0 = empty string, e.g. Pad's padding).
 */
#include "kernels/simd.h"
#include "kernels/array/array_internal.h"
#include "vigil/ops_ext.h"
#include <stdio.h>

#define NONE ((vg_output){NULL, 0})
#define TAG_SHIFT 40
#define TAG_MASK ((INT64_C(1) << TAG_SHIFT) - 1)

/* The value of o if it is a Const output (borrowed), else NULL. */
static const vg_tensor *const_of(vg_output o) {
    const vg_tensor *t;
    if (!o.op || !(vg__op_def_of(o.op)->flags & VG__OP_CONST) || !vg_op_attr_tensor(o.op, "value", &t)) return NULL;
    return t;
}

/* Shape merge for ops whose inputs must agree; false on a conflict. */
static bool merge_shape(vg_shape *acc, const vg_shape *s) {
    if (s->ndims < 0) return true;
    if (acc->ndims < 0) { *acc = *s; return true; }
    if (acc->ndims != s->ndims) return false;
    for (int i = 0; i < s->ndims; i++) {
        if (acc->dims[i] < 0) acc->dims[i] = s->dims[i];
        else if (s->dims[i] >= 0 && s->dims[i] != acc->dims[i]) return false;
    }
    return true;
}

static int64_t prod(const int64_t *d, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

/* ------------------------------------------------------------------------ */
/* mover: raw-byte access to inputs and output, with the string-tag indirection */

typedef struct mover {
    bool str;
    size_t esz;
    int nin;
    const void **in;
    void *out;
    vg_tensor *out_t;
    vg_tensor *const *in_t;
    const void *small[4];
} mover;

static void mover_free(mover *m) {
    if (m->str) {
        for (int i = 0; i < m->nin; i++) vg__free((void *)m->in[i]);
        vg__free(m->out);
    }
    if (m->in != m->small) vg__free(m->in);
}

static vg_code mover_begin(mover *m, vg__kctx *ctx, vg_tensor *const *ins, int nin, vg_tensor *out) {
    vg_status *st = vg__kctx_status(ctx);
    memset(m, 0, sizeof *m);
    m->nin = nin;
    m->in_t = ins;
    m->out_t = out;
    m->str = vg_tensor_dtype(out) == VG_STRING;
    m->esz = m->str ? sizeof(int64_t) : vg_dtype_size(vg_tensor_dtype(out));
    m->in = nin <= 4 ? m->small : vg__calloc((size_t)nin, sizeof(void *));
    if (!m->in) return VG_OOM(st, "kernel inputs");
    if (!m->str) {
        for (int i = 0; i < nin; i++) m->in[i] = vg_tensor_data(ins[i]);
        m->out = vg_tensor_data(out);
        return VG_OK;
    }
    for (int i = 0; i < nin; i++) m->in[i] = NULL;
    for (int i = 0; i < nin; i++) {
        int64_t n = vg_tensor_num_elements(ins[i]);
        int64_t *p = vg__malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        if (!p) {
            mover_free(m);
            return VG_OOM(st, "string indices");
        }
        for (int64_t k = 0; k < n; k++) p[k] = ((int64_t)(i + 1) << TAG_SHIFT) | k;
        m->in[i] = p;
    }
    int64_t n = vg_tensor_num_elements(out);
    m->out = vg__calloc((size_t)(n ? n : 1), sizeof(int64_t));
    if (!m->out) {
        mover_free(m);
        return VG_OOM(st, "string indices");
    }
    return VG_OK;
}

/* Finishes a move: for strings, copies the tagged elements. Frees. Returns c or an error. */
static vg_code mover_end(mover *m, vg__kctx *ctx, vg_code c) {
    if (m->str && c == VG_OK) {
        const int64_t *tags = m->out;
        int64_t n = vg_tensor_num_elements(m->out_t);
        for (int64_t k = 0; k < n && c == VG_OK; k++) {
            if (!tags[k]) continue;
            size_t len;
            const char *s = vg_tensor_string(m->in_t[(tags[k] >> TAG_SHIFT) - 1], tags[k] & TAG_MASK, &len);
            c = vg_tensor_set_string(m->out_t, k, s, len, vg__kctx_status(ctx));
        }
    }
    mover_free(m);
    return c;
}

/* Copies n elements of esz bytes from src[si * stride] to dst[0..n). */
static inline void gather_strided(char *dst, const char *src, int64_t stride, int64_t n, size_t esz) {
    switch (esz) {
    case 1: for (int64_t t = 0; t < n; t++) dst[t] = src[t * stride]; break;
    case 4: {
        uint32_t *o = (uint32_t *)(void *)dst;
        const uint32_t *s = (const uint32_t *)(const void *)src;
        for (int64_t t = 0; t < n; t++) o[t] = s[t * stride];
        break;
    }
    case 8: {
        uint64_t *o = (uint64_t *)(void *)dst;
        const uint64_t *s = (const uint64_t *)(const void *)src;
        for (int64_t t = 0; t < n; t++) o[t] = s[t * stride];
        break;
    }
    default:
        for (int64_t t = 0; t < n; t++) memcpy(dst + (size_t)t * esz, src + (size_t)(t * stride) * esz, esz);
    }
}

/* ------------------------------------------------------------------------ */
/* Transpose */

static vg_code shape_transpose(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK || vg__array_index_attr(op, "Tperm", 1, "perm", st) != VG_OK)
        return st->code;
    vg_shape in = vg__op_input_shape(op, 0), ps = vg__op_input_shape(op, 1), out = vg_shape_unknown();
    if (vg__shape_need_rank(&ps, 1, "perm must be a vector, got rank %d", st)) return st->code;
    const vg_tensor *p = vg__op_const_input(op, 1);
    if (p) {
        int64_t n = vg_tensor_num_elements(p);
        if (n > VG_MAX_DIMS || (in.ndims >= 0 && n != in.ndims))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "transpose expects a vector of size %d. But input(1) is a "
                                 "vector of size %lld", in.ndims, (long long)n);
        bool seen[VG_MAX_DIMS] = {false};
        for (int64_t i = 0; i < n; i++) {
            int64_t d = vg__int_at(p, i);
            if (d < 0 || d >= n || seen[d])
                return vg_status_set(st, VG_INVALID_ARGUMENT, "perm is not a permutation: perm[%lld] = %lld",
                                     (long long)i, (long long)d);
            seen[d] = true;
        }
        out = vg_shape_make(NULL, (int)n);
        if (in.ndims >= 0)
            for (int64_t i = 0; i < n; i++) out.dims[i] = in.dims[vg__int_at(p, i)];
    } else if (in.ndims >= 0) {
        out = vg_shape_make(NULL, in.ndims);
    } else if (ps.ndims == 1 && ps.dims[0] >= 0 && ps.dims[0] <= VG_MAX_DIMS) {
        out = vg_shape_make(NULL, (int)ps.dims[0]);
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

/* Drops size-1 dims and merges input dims that stay adjacent under perm. Writes the
 * merged input dims and permutation; returns the merged rank. */
static int transpose_simplify(const int64_t *dims, const int *perm, int r, int64_t *mdims, int *mperm) {
    int map[VG_MAX_DIMS], nr = 0, p2[VG_MAX_DIMS], np = 0;
    int64_t d2[VG_MAX_DIMS];
    for (int d = 0; d < r; d++) {
        map[d] = dims[d] == 1 ? -1 : nr;
        if (dims[d] != 1) d2[nr++] = dims[d];
    }
    for (int i = 0; i < r; i++)
        if (map[perm[i]] >= 0) p2[np++] = map[perm[i]];
    int gstart[VG_MAX_DIMS], glen[VG_MAX_DIMS], ng = 0;
    for (int k = 0; k < np; k++) {
        if (ng && p2[k] == gstart[ng - 1] + glen[ng - 1]) {
            glen[ng - 1]++;
        } else {
            gstart[ng] = p2[k];
            glen[ng++] = 1;
        }
    }
    for (int g = 0; g < ng; g++) {
        int rank = 0;
        for (int h = 0; h < ng; h++) rank += gstart[h] < gstart[g];
        mperm[g] = rank;
        mdims[rank] = prod(d2, gstart[g], gstart[g] + glen[g]);
    }
    return ng;
}

typedef struct tjob {
    const char *in;
    char *out;
    size_t esz;
    int r;                        /* merged rank >= 2 */
    int64_t odims[VG_MAX_DIMS];   /* output dims */
    int64_t istride[VG_MAX_DIMS]; /* input stride (elements) of each output dim */
} tjob;

/* General case: output rows (all dims but the last) [r0, r1), each a strided gather. */
static void transpose_rows(void *arg, int64_t r0, int64_t r1) {
    const tjob *j = arg;
    int r = j->r;
    int64_t idx[VG_MAX_DIMS], rem = r0, n = j->odims[r - 1], s = j->istride[r - 1];
    for (int k = r - 2; k >= 0; k--) {
        idx[k] = rem % j->odims[k];
        rem /= j->odims[k];
    }
    for (int64_t row = r0; row < r1; row++) {
        int64_t base = 0;
        for (int k = 0; k < r - 1; k++) base += idx[k] * j->istride[k];
        char *o = j->out + (size_t)(row * n) * j->esz;
        if (s == 1) memcpy(o, j->in + (size_t)base * j->esz, (size_t)n * j->esz);
        else gather_strided(o, j->in + (size_t)base * j->esz, s, n, j->esz);
        for (int k = r - 2; k >= 0; k--) {
            if (++idx[k] < j->odims[k]) break;
            idx[k] = 0;
        }
    }
}

/* 2-D case: input (R, C) -> output (C, R) in 64x64 tiles of 8x8 register blocks
 * (power-of-two strides make plain tiles thrash the cache); units are tiles of 64
 * output rows. */
#define TILE 64
#define T2D_LOOP(ctype)                                                                          \
    do {                                                                                         \
        const ctype *in = (const ctype *)(const void *)j->in;                                    \
        ctype *out = (ctype *)(void *)j->out;                                                    \
        for (int64_t r0 = 0; r0 < R; r0 += TILE) {                                               \
            int64_t r1 = r0 + TILE < R ? r0 + TILE : R, rb = r0;                                 \
            for (; rb + 8 <= r1; rb += 8) {                                                      \
                int64_t cb = c0;                                                                 \
                for (; cb + 8 <= c1; cb += 8) {                                                  \
                    ctype t[8][8];                                                               \
                    for (int i = 0; i < 8; i++)                                                  \
                        for (int k = 0; k < 8; k++) t[k][i] = in[(rb + i) * C + cb + k];         \
                    for (int k = 0; k < 8; k++)                                                  \
                        for (int i = 0; i < 8; i++) out[(cb + k) * R + rb + i] = t[k][i];        \
                }                                                                                \
                for (int64_t c = cb; c < c1; c++)                                                \
                    for (int64_t r = rb; r < rb + 8; r++) out[c * R + r] = in[r * C + c];        \
            }                                                                                    \
            for (int64_t c = c0; c < c1; c++)                                                    \
                for (int64_t r = rb; r < r1; r++) out[c * R + r] = in[r * C + c];                \
        }                                                                                        \
    } while (0)

static void transpose_2d(void *arg, int64_t b0, int64_t b1) {
    const tjob *j = arg;
    int64_t C = j->odims[0], R = j->odims[1];
    int64_t c0 = b0 * TILE, c1 = b1 * TILE < C ? b1 * TILE : C;
    switch (j->esz) {
    case 1: T2D_LOOP(uint8_t); break;
    case 4: T2D_LOOP(uint32_t); break;
    case 8: T2D_LOOP(uint64_t); break;
    default:
        for (int64_t c = c0; c < c1; c++)
            for (int64_t r = 0; r < R; r++)
                memcpy(j->out + (size_t)(c * R + r) * j->esz, j->in + (size_t)(r * C + c) * j->esz, j->esz);
    }
}

/* Reads and checks perm against rank r (TF's messages). */
static vg_code read_perm(vg__kctx *ctx, const vg_tensor *p, int r, int *perm) {
    vg_status *st = vg__kctx_status(ctx);
    if (vg_tensor_ndims(p) != 1 || vg_tensor_num_elements(p) != r)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "transpose expects a vector of size %d. But input(1) is a vector of size %lld", r,
                             (long long)vg_tensor_num_elements(p));
    bool seen[VG_MAX_DIMS] = {false};
    for (int i = 0; i < r; i++) {
        int64_t d = vg__int_at(p, i);
        perm[i] = (int)d;
        if (d >= 0 && d < r) seen[d] = true;
    }
    for (int d = 0; d < r; d++) {
        if (seen[d]) continue;
        char list[128];
        size_t o = 0;
        for (int i = 0; i < r && o < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%lld", i ? "," : "", (long long)vg__int_at(p, i));
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%d is missing from {%s}.", d, list);
    }
    return VG_OK;
}

static vg_code op_shape_transpose(vg_op *op, vg_status *st) { return shape_transpose(op, st); }

static vg_code op_kernel_transpose(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *out;
    int r = vg_tensor_ndims(x), perm[VG_MAX_DIMS], mperm[VG_MAX_DIMS];
    vg_code c = read_perm(ctx, vg__kctx_input(ctx, 1), r, perm);
    if (c != VG_OK) return c;
    int64_t odims[VG_MAX_DIMS], mdims[VG_MAX_DIMS];
    for (int i = 0; i < r; i++) odims[i] = vg_tensor_dim(x, perm[i]);
    int mr = transpose_simplify(vg_tensor_dims(x), perm, r, mdims, mperm);
    if (mr <= 1 || vg_tensor_num_elements(x) == 0) { /* same layout: share the buffer */
        if (vg_tensor_num_elements(x) == 0) return vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), odims, r, &out);
        if (!(out = vg__tensor_alias(x, odims, r, st))) return st->code;
        vg__kctx_set_output(ctx, 0, out);
        return VG_OK;
    }
    if ((c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), odims, r, &out)) != VG_OK) return c;
    mover m;
    if ((c = mover_begin(&m, ctx, &x, 1, out)) != VG_OK) return c;
    tjob j = {m.in[0], m.out, m.esz, mr, {0}, {0}};
    int64_t istr[VG_MAX_DIMS];
    istr[mr - 1] = 1;
    for (int k = mr - 2; k >= 0; k--) istr[k] = istr[k + 1] * mdims[k + 1];
    for (int k = 0; k < mr; k++) {
        j.odims[k] = mdims[mperm[k]];
        j.istride[k] = istr[mperm[k]];
    }
    int64_t n = vg_tensor_num_elements(x);
    if (mr == 2) {
        int64_t blocks = (j.odims[0] + TILE - 1) / TILE;
        if (m.str) transpose_2d(&j, 0, blocks);
        else vg__kctx_parallel_for(ctx, blocks, n / blocks * 2, transpose_2d, &j);
    } else {
        int64_t rows = n / j.odims[mr - 1];
        if (m.str) transpose_rows(&j, 0, rows);
        else vg__kctx_parallel_for(ctx, rows, j.odims[mr - 1] * 2, transpose_rows, &j);
    }
    return mover_end(&m, ctx, VG_OK);
}

static vg_output invert_permutation(vg_graph *g, vg_output p) {
    return vg__build_simple(g, "InvertPermutation", "InvertPermutation", NULL, (vg_output[]){p}, 1);
}

/* TF: transpose(dy, invert_permutation(perm)); the inverse is computed here when perm is a Const. */
static vg_code op_grad_transpose(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output p = vg_op_input(op, 1);
    const vg_tensor *pc = const_of(p);
    dx[1] = NONE;
    if (pc && vg_tensor_num_elements(pc) <= VG_MAX_DIMS) {
        int32_t inv[VG_MAX_DIMS];
        int n = (int)vg_tensor_num_elements(pc);
        for (int i = 0; i < n; i++) inv[vg__int_at(pc, i)] = i;
        dx[0] = vg_transpose_c(g, dy[0], inv, n, NULL);
    } else {
        dx[0] = vg_transpose(g, dy[0], invert_permutation(g, p), NULL);
    }
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* ConcatV2, Pack: outer rows, each the concatenation of one chunk per input */

typedef struct cjob {
    char *out;
    const void *const *in;
    const int64_t *chunk; /* bytes per outer row, per input */
    int n;
    int64_t row;          /* output bytes per outer row */
} cjob;

static void concat_rows(void *arg, int64_t o0, int64_t o1) {
    const cjob *j = arg;
    for (int64_t o = o0; o < o1; o++) {
        char *dst = j->out + o * j->row;
        for (int i = 0; i < j->n; i++) {
            int64_t b = j->chunk[i];
            if (b) memcpy(dst, (const char *)j->in[i] + o * b, (size_t)b);
            dst += b;
        }
    }
}

/* Output = per outer row, the chunks of the n inputs (chunk[i] elements each). */
static vg_code concat_copy(vg__kctx *ctx, vg_tensor *const *ins, int n, vg_tensor *out, int64_t outer,
                           const int64_t *chunk_elems) {
    vg_status *st = vg__kctx_status(ctx);
    if (vg_tensor_num_elements(out) == 0) return VG_OK;
    mover m;
    vg_code c = mover_begin(&m, ctx, ins, n, out);
    if (c != VG_OK) return c;
    int64_t *chunk = vg__malloc(sizeof(int64_t) * (size_t)n), row = 0;
    if (!chunk) return mover_end(&m, ctx, VG_OOM(st, "concat"));
    for (int i = 0; i < n; i++) row += (chunk[i] = chunk_elems[i] * (int64_t)m.esz);
    cjob j = {m.out, m.in, chunk, n, row};
    if (m.str || outer == 1) concat_rows(&j, 0, outer);
    else vg__kctx_parallel_for(ctx, outer, row / (int64_t)m.esz + 16, concat_rows, &j);
    vg__free(chunk);
    return mover_end(&m, ctx, VG_OK);
}

static vg_code shape_concat(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op) - 1;
    int64_t nattr = n;
    vg__op_set_default_attr_int(op, "N", n);
    vg_op_attr_int(op, "N", &nattr);
    if (nattr != n) return vg_status_set(st, VG_INVALID_ARGUMENT, "attr N = %lld but %d values given", (long long)nattr, n);
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK || vg__array_index_attr(op, "Tidx", n, "axis", st) != VG_OK)
        return st->code;
    vg_dtype dt = vg__op_input_dtype(op, 0);
    int rank = -1;
    for (int i = 0; i < n; i++) {
        vg_shape s = vg__op_input_shape(op, i);
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "values[%d] is %s but values[0] is %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
        if (s.ndims >= 0 && rank >= 0 && s.ndims != rank)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank %d but is rank %d for values[%d]", rank,
                                 s.ndims, i);
        if (s.ndims >= 0) rank = s.ndims;
    }
    vg_shape out = vg_shape_make(NULL, rank);
    const vg_tensor *ax = vg__op_const_input(op, n);
    if (ax && rank >= 0) {
        int64_t a = vg__int_at(ax, 0);
        if (vg_tensor_num_elements(ax) != 1 || a < -rank || a >= rank)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %lld",
                                 -rank, rank, (long long)a);
        if (a < 0) a += rank;
        vg_shape acc = vg_shape_unknown();
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            vg_shape s = vg__op_input_shape(op, i);
            if (s.ndims < 0) { sum = -1; continue; }
            if (sum >= 0) sum = s.dims[a] < 0 ? -1 : sum + s.dims[a];
            vg_shape other = s, prev = acc;
            other.dims[a] = -1;
            if (!merge_shape(&acc, &other)) {
                char b1[128], b2[128];
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "ConcatOp : Dimensions of inputs should match: shape[0] = %s vs. shape[%d] = %s",
                                     vg_shape_str(&prev, b1, 128), i, vg_shape_str(&s, b2, 128));
            }
        }
        out = acc.ndims >= 0 ? acc : vg_shape_make(NULL, rank);
        out.dims[a] = sum;
    }
    return vg__op_set_single_output(op, dt, out);
}

static vg_code op_shape_concat(vg_op *op, vg_status *st) { return shape_concat(op, st); }

static vg_code op_kernel_concat(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx) - 1;
    vg_tensor *ax = vg__kctx_input(ctx, n), *x0 = vg__kctx_input(ctx, 0), *out;
    char b1[128], b2[128];
    if (vg_tensor_num_elements(ax) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Concat dim tensor should be a scalar integer, but got shape %s",
                             vg__tshape_str(ax, b1, sizeof b1));
    int r = vg_tensor_ndims(x0);
    int64_t a = vg__int_at(ax, 0);
    if (a < -r || a >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "ConcatOp : Expected concatenating dimensions in the range [%d, %d), but got %lld", -r, r,
                             (long long)a);
    if (a < 0) a += r;
    int64_t dims[VG_MAX_DIMS];
    memcpy(dims, vg_tensor_dims(x0), sizeof(int64_t) * (size_t)r);
    dims[a] = 0;
    int64_t *chunk = vg__malloc(sizeof(int64_t) * (size_t)n);
    if (!chunk) return VG_OOM(st, "concat");
    int64_t outer = prod(vg_tensor_dims(x0), 0, (int)a);
    vg_tensor *small[8];
    vg_tensor **arr = n <= 8 ? small : vg__malloc(sizeof(vg_tensor *) * (size_t)n);
    if (!arr) { vg__free(chunk); return VG_OOM(st, "concat"); }
    vg_code c = VG_OK;
    for (int i = 0; i < n && c == VG_OK; i++) {
        vg_tensor *x = arr[i] = vg__kctx_input(ctx, i);
        if (vg_tensor_ndims(x) != r) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT,
                              "ConcatOp : Ranks of all input tensors should match: shape[0] = %s vs. shape[%d] = %s",
                              vg__tshape_str(x0, b1, sizeof b1), i, vg__tshape_str(x, b2, sizeof b2));
            break;
        }
        for (int d = 0; d < r; d++)
            if (d != a && vg_tensor_dim(x, d) != vg_tensor_dim(x0, d)) {
                c = vg_status_set(st, VG_INVALID_ARGUMENT,
                                  "ConcatOp : Dimensions of inputs should match: shape[0] = %s vs. shape[%d] = %s",
                                  vg__tshape_str(x0, b1, sizeof b1), i, vg__tshape_str(x, b2, sizeof b2));
                break;
            }
        if (vg_tensor_dtype(x) != vg_tensor_dtype(x0))
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "values[%d] is %s but values[0] is %s", i,
                              vg_dtype_name(vg_tensor_dtype(x)), vg_dtype_name(vg_tensor_dtype(x0)));
        dims[a] += vg_tensor_dim(x, (int)a);
        chunk[i] = prod(vg_tensor_dims(x), (int)a, r);
    }
    if (c == VG_OK) c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x0), dims, r, &out);
    if (c == VG_OK) c = concat_copy(ctx, arr, n, out, outer, chunk);
    vg__free(chunk);
    if (arr != small) vg__free(arr);
    return c;
}

static vg_output concat_offset(vg_graph *g, vg_output axis, const vg_output *shapes, int n, vg_op **op) {
    vg_op_builder *b = vg__builder_with_inputs(g, "ConcatOffset", "ConcatOffset", NULL, (vg_output[]){axis}, 1);
    vg_op_builder_add_inputs(b, shapes, n);
    *op = vg_op_builder_finish(b);
    return vg_out(*op, 0);
}

/* TF's _ConcatGradHelper: dx[i] = Slice(dy, offset[i], shape(x[i])). With a Const axis
 * and fully known input shapes the offsets are Consts; otherwise ConcatOffset. */
static vg_code op_grad_concat(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int n = vg_op_num_inputs(op) - 1;
    vg_output axis = vg_op_input(op, n);
    const vg_tensor *ac = const_of(axis);
    bool known = ac != NULL;
    for (int i = 0; i < n && known; i++) {
        vg_shape s = vg_output_shape(vg_op_input(op, i));
        known = vg_shape_is_fully_defined(&s);
    }
    dx[n] = NONE;
    if (known) {
        vg_shape s0 = vg_output_shape(vg_op_input(op, 0));
        int r = s0.ndims;
        int64_t a = vg__int_at(ac, 0), off = 0, begin[VG_MAX_DIMS] = {0};
        if (a < 0) a += r;
        for (int i = 0; i < n; i++) {
            vg_shape s = vg_output_shape(vg_op_input(op, i));
            begin[a] = off;
            dx[i] = vg_slice_c(g, dy[0], begin, s.dims, r, NULL);
            off += s.dims[a];
        }
        return vg_graph_status(g, NULL);
    }
    vg_output *shapes = vg__malloc(sizeof(vg_output) * (size_t)n);
    if (!shapes) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in ConcatV2 gradient");
    for (int i = 0; i < n; i++) shapes[i] = vg__array_shape_of(g, vg_op_input(op, i), VG_INT32, NULL);
    vg_op *co = NULL;
    concat_offset(g, axis, shapes, n, &co);
    for (int i = 0; i < n; i++) dx[i] = vg_slice(g, dy[0], vg_out(co, i), shapes[i], NULL);
    vg__free(shapes);
    return vg_graph_status(g, NULL);
}

/* ConcatOffset(concat_dim, shape_0..shape_{N-1}) -> N offset vectors. */
static vg_code op_shape_concat_offset(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op) - 1;
    vg__op_set_default_attr_int(op, "N", n);
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "concat_dim must be int32, got %s", vg_dtype_name(dt));
    vg_shape acc = vg_shape_unknown();
    for (int i = 0; i < n; i++) {
        vg_shape s = vg__op_input_shape(op, i + 1);
        if (vg__op_input_dtype(op, i + 1) != VG_INT32)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "shape %d must be int32, got %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, i + 1)));
        if (!merge_shape(&acc, &s)) return vg_status_set(st, VG_INVALID_ARGUMENT, "shapes must all have the same length");
    }
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) vg__op_set_output(op, i, VG_INT32, acc.ndims < 0 ? vg_shape_make(NULL, 1) : acc);
    return VG_OK;
}

static vg_code op_kernel_concat_offset(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx) - 1;
    vg_tensor *cd = vg__kctx_input(ctx, 0), *s0 = vg__kctx_input(ctx, 1);
    if (vg_tensor_num_elements(cd) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Concat dim tensor should be a scalar integer");
    if (vg_tensor_ndims(s0) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "input 0 should be a vector");
    int64_t r = vg_tensor_dim(s0, 0), a = vg__int_at(cd, 0);
    if (a < -r || a >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Concat dim is out of range: %lld vs. %lld", (long long)a,
                             (long long)r);
    if (a < 0) a += r;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        vg_tensor *s = vg__kctx_input(ctx, i + 1), *o;
        if (vg_tensor_ndims(s) != 1 || vg_tensor_dim(s, 0) != r)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "input %d should contain %lld elements, but got %lld", i,
                                 (long long)r, (long long)vg_tensor_num_elements(s));
        for (int64_t d = 0; d < r; d++)
            if (d != a && vg__int_at(s, d) != vg__int_at(s0, d))
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "All dimensions except %lld must match. Input %d has dimension %lld of size %lld "
                                     "but input 0 has %lld",
                                     (long long)a, i, (long long)d, (long long)vg__int_at(s, d),
                                     (long long)vg__int_at(s0, d));
        vg_code c = vg__kctx_alloc_output(ctx, i, VG_INT32, &r, 1, &o);
        if (c != VG_OK) return c;
        int32_t *p = vg_tensor_data(o);
        for (int64_t d = 0; d < r; d++) p[d] = d == a ? (int32_t)off : 0;
        off += vg__int_at(s, a);
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Slice */

static vg_code op_shape_slice(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK || vg__array_index_attr(op, "Index", 1, "begin", st) != VG_OK)
        return st->code;
    if (vg__op_input_dtype(op, 2) != vg__op_input_dtype(op, 1))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "begin and size must have the same type, got %s and %s",
                             vg_dtype_name(vg__op_input_dtype(op, 1)), vg_dtype_name(vg__op_input_dtype(op, 2)));
    vg_shape in = vg__op_input_shape(op, 0), bs = vg__op_input_shape(op, 1), ss = vg__op_input_shape(op, 2);
    if ((bs.ndims >= 0 && bs.ndims != 1) || (ss.ndims >= 0 && ss.ndims != 1))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "begin and size must be vectors");
    int rank = in.ndims;
    if (rank < 0 && bs.ndims == 1 && bs.dims[0] >= 0) rank = (int)bs.dims[0];
    if (rank < 0 && ss.ndims == 1 && ss.dims[0] >= 0) rank = (int)ss.dims[0];
    if (rank > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "rank %d is too large", rank);
    const vg_tensor *b = vg__op_const_input(op, 1), *s = vg__op_const_input(op, 2);
    vg_shape out = vg_shape_make(NULL, rank);
    if (rank >= 0 && ((b && vg_tensor_num_elements(b) != rank) || (s && vg_tensor_num_elements(s) != rank)))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected begin and size arguments to be 1-D tensors of size %d",
                             rank);
    for (int i = 0; s && i < rank; i++) {
        int64_t sz = vg__int_at(s, i), bg = b ? vg__int_at(b, i) : -1, dim = in.ndims >= 0 ? in.dims[i] : -1;
        if (bg >= 0 && dim >= 0 && bg > dim)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected begin[%d] in [0, %lld], but got %lld", i,
                                 (long long)dim, (long long)bg);
        if (sz >= 0) {
            if (bg >= 0 && dim >= 0 && bg + sz > dim)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected size[%d] in [0, %lld], but got %lld", i,
                                     (long long)(dim - bg), (long long)sz);
            out.dims[i] = sz;
        } else if (sz == -1 && bg >= 0 && dim >= 0) {
            out.dims[i] = dim - bg;
        }
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

/* A strided block copy: `rows` runs of `run` elements; run k starts in the source at
 * base + sum idx[d] * sstride[d] and in the destination at dbase + sum idx[d] * dstride[d],
 * where idx walks the dims[0..r) odometer. Used by Slice (dense dst) and Pad (dense src). */
typedef struct bjob {
    const char *src;
    char *dst;
    size_t esz;
    int r;
    int64_t dims[VG_MAX_DIMS];
    int64_t sstride[VG_MAX_DIMS], dstride[VG_MAX_DIMS];
    int64_t sbase, dbase, run;
} bjob;

static void block_rows(void *arg, int64_t r0, int64_t r1) {
    const bjob *j = arg;
    int64_t idx[VG_MAX_DIMS], rem = r0;
    for (int k = j->r - 1; k >= 0; k--) {
        idx[k] = rem % j->dims[k];
        rem /= j->dims[k];
    }
    size_t nb = (size_t)j->run * j->esz;
    for (int64_t row = r0; row < r1; row++) {
        int64_t so = j->sbase, doff = j->dbase;
        for (int k = 0; k < j->r; k++) {
            so += idx[k] * j->sstride[k];
            doff += idx[k] * j->dstride[k];
        }
        memcpy(j->dst + (size_t)doff * j->esz, j->src + (size_t)so * j->esz, nb);
        for (int k = j->r - 1; k >= 0; k--) {
            if (++idx[k] < j->dims[k]) break;
            idx[k] = 0;
        }
    }
}

static void run_block(vg__kctx *ctx, bjob *j, bool str) {
    int64_t rows = prod(j->dims, 0, j->r);
    if (rows == 0 || j->run == 0) return;
    if (str || rows == 1) block_rows(j, 0, rows);
    else vg__kctx_parallel_for(ctx, rows, j->run + 16, block_rows, j);
}

static vg_code op_kernel_slice(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1), *s = vg__kctx_input(ctx, 2), *out;
    int r = vg_tensor_ndims(x);
    char b1[128], b2[128];
    if (vg_tensor_ndims(b) != 1 || vg_tensor_ndims(s) != 1 || vg_tensor_dim(b, 0) != r || vg_tensor_dim(s, 0) != r)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Expected begin and size arguments to be 1-D tensors of size %d, but got shapes %s and %s "
                             "instead.",
                             r, vg__tshape_str(b, b1, sizeof b1), vg__tshape_str(s, b2, sizeof b2));
    int64_t begin[VG_MAX_DIMS], size[VG_MAX_DIMS];
    bool whole = true;
    for (int i = 0; i < r; i++) {
        int64_t dim = vg_tensor_dim(x, i);
        begin[i] = vg__int_at(b, i);
        size[i] = vg__int_at(s, i);
        if (size[i] == -1) size[i] = dim - begin[i];
        if (begin[i] < 0 || begin[i] > dim)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected begin[%d] in [0, %lld], but got %lld", i,
                                 (long long)dim, (long long)begin[i]);
        if (size[i] < 0 || begin[i] + size[i] > dim)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected size[%d] in [0, %lld], but got %lld", i,
                                 (long long)(dim - begin[i]), (long long)size[i]);
        whole = whole && size[i] == dim;
    }
    if (whole) { /* TF forwards the input when the slice is everything */
        vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
        return VG_OK;
    }
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), size, r, &out);
    if (c != VG_OK || vg_tensor_num_elements(out) == 0) return c;
    /* Split at the innermost dim d that is not taken whole: runs of size[d] * inner. */
    int d = r - 1;
    while (d > 0 && size[d] == vg_tensor_dim(x, d)) d--;
    int64_t istr[VG_MAX_DIMS];
    istr[r - 1] = 1;
    for (int k = r - 2; k >= 0; k--) istr[k] = istr[k + 1] * vg_tensor_dim(x, k + 1);
    mover m;
    if ((c = mover_begin(&m, ctx, &x, 1, out)) != VG_OK) return c;
    bjob j = {m.in[0], m.out, m.esz, d, {0}, {0}, {0}, 0, 0, size[d] * istr[d]};
    for (int k = 0; k <= d; k++) j.sbase += begin[k] * istr[k];
    for (int k = 0; k < d; k++) {
        j.dims[k] = size[k];
        j.sstride[k] = istr[k];
    }
    for (int k = d - 1; k >= 0; k--) j.dstride[k] = k == d - 1 ? j.run : j.dstride[k + 1] * size[k + 1];
    run_block(ctx, &j, m.str);
    return mover_end(&m, ctx, VG_OK);
}

static vg_output pad_op(vg_graph *g, vg_output x, vg_output paddings, const char *name) {
    return vg__build_simple(g, "Pad", name, NULL, (vg_output[]){x, paddings}, 2);
}

vg_output vg_pad(vg_graph *g, vg_output x, vg_output paddings, const char *name) {
    return pad_op(g, x, paddings, name);
}

/* TF's stack([x, 1]) for a scalar int32 x, with its Const named "stack/1". */
static vg_output stack_with_one(vg_graph *g, vg_output x) {
    char rel[1024];
    vg__array_name_push(g, "stack", rel, sizeof rel);
    vg_output v[2] = {x, vg_const_i32(g, 1, "1")};
    vg_graph_pop_scope(g);
    return vg_pack(g, v, 2, 0, rel);
}

/* TF's _SliceGrad: Pad(dy, [[begin], [shape(x) - shape(y) - begin]]) (Consts when known). */
static vg_code op_grad_slice(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), begin = vg_op_input(op, 1), y = vg_out(op, 0);
    vg_shape xs = vg_output_shape(x), ys = vg_output_shape(y);
    const vg_tensor *bc = const_of(begin);
    dx[1] = dx[2] = NONE;
    if (bc && vg_shape_is_fully_defined(&xs) && vg_shape_is_fully_defined(&ys)) {
        int64_t pads[2 * VG_MAX_DIMS], dims[2] = {xs.ndims, 2};
        for (int i = 0; i < xs.ndims; i++) {
            pads[2 * i] = vg__int_at(bc, i);
            pads[2 * i + 1] = xs.dims[i] - ys.dims[i] - vg__int_at(bc, i);
        }
        vg_status st;
        vg_tensor *t = vg_tensor_new(VG_INT32, dims, 2, &st);
        if (!t) return vg_graph_set_error(g, st.code, "%s", st.msg);
        for (int i = 0; i < 2 * xs.ndims; i++) ((int32_t *)vg_tensor_data(t))[i] = (int32_t)pads[i];
        char rel[1024];
        vg__array_name_push(g, "Pad", rel, sizeof rel);
        vg_output p = vg_const(g, t, "paddings");
        vg_graph_pop_scope(g);
        vg_tensor_free(t);
        dx[0] = pad_op(g, dy[0], p, rel);
        return vg_graph_status(g, NULL);
    }
    vg_dtype it = vg_output_dtype(begin);
    vg_output shape = stack_with_one(g, vg_rank(g, x, NULL));
    vg_output before = vg_reshape(g, begin, shape, NULL);
    vg_output slice_size = vg_shape_op(g, y, it, NULL);
    vg_output after = vg_sub(g, vg_sub(g, vg_shape_op(g, x, it, NULL), slice_size, NULL), begin, NULL);
    after = vg_reshape(g, after, shape, NULL);
    vg_output parts[2] = {before, after};
    vg_output paddings = vg_concat_c(g, parts, 2, 1, NULL);
    dx[0] = pad_op(g, dy[0], paddings, "Pad");
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Pad (zeros) */

static vg_code op_shape_pad(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK ||
        vg__array_index_attr(op, "Tpaddings", 1, "paddings", st) != VG_OK)
        return st->code;
    vg_shape in = vg__op_input_shape(op, 0), ps = vg__op_input_shape(op, 1);
    if (ps.ndims >= 0 && (ps.ndims != 2 || (ps.dims[1] >= 0 && ps.dims[1] != 2)))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "paddings must be a matrix with 2 columns");
    int rank = in.ndims;
    if (rank < 0 && ps.ndims == 2 && ps.dims[0] >= 0 && ps.dims[0] <= VG_MAX_DIMS) rank = (int)ps.dims[0];
    if (rank >= 0 && ps.ndims == 2 && ps.dims[0] >= 0 && ps.dims[0] != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "The first dimension of paddings must be the rank of inputs %d, got %lld",
                             rank, (long long)ps.dims[0]);
    vg_shape out = vg_shape_make(NULL, rank);
    const vg_tensor *p = vg__op_const_input(op, 1);
    if (p && in.ndims >= 0)
        for (int i = 0; i < rank; i++) {
            int64_t lo = vg__int_at(p, 2 * i), hi = vg__int_at(p, 2 * i + 1);
            if (lo < 0 || hi < 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld", (long long)lo,
                                     (long long)hi);
            if (in.dims[i] < 0) out.dims[i] = -1;
            else if (__builtin_add_overflow(in.dims[i], lo, &out.dims[i]) ||
                     __builtin_add_overflow(out.dims[i], hi, &out.dims[i]))
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Pad: dimension %d + paddings %lld, %lld overflows int64",
                                     i, (long long)lo, (long long)hi);
        }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

static vg_code op_kernel_pad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *p = vg__kctx_input(ctx, 1), *out;
    int r = vg_tensor_ndims(x);
    char b1[128];
    if (vg_tensor_ndims(p) != 2 || vg_tensor_dim(p, 1) != 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "paddings must be a matrix with 2 columns: %s",
                             vg__tshape_str(p, b1, sizeof b1));
    if (vg_tensor_dim(p, 0) != r)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "The first dimension of paddings must be the rank of inputs[%d,2], %s", r,
                             vg__tshape_str(p, b1, sizeof b1));
    int64_t dims[VG_MAX_DIMS], lo[VG_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int64_t a = vg__int_at(p, 2 * i), b = vg__int_at(p, 2 * i + 1);
        if (a < 0 || b < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld", (long long)a,
                                 (long long)b);
        lo[i] = a;
        if (__builtin_add_overflow(vg_tensor_dim(x, i), a, &dims[i]) || __builtin_add_overflow(dims[i], b, &dims[i]))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Pad: dimension %d + paddings %lld, %lld overflows int64", i,
                                 (long long)a, (long long)b);
    }
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), dims, r, &out);
    if (c != VG_OK || vg_tensor_num_elements(out) == 0) return c;
    mover m;
    if ((c = mover_begin(&m, ctx, &x, 1, out)) != VG_OK) return c;
    if (!m.str) memset(m.out, 0, vg_tensor_nbytes(out)); /* string tags start at 0 = "" */
    if (r == 0) {
        memcpy(m.out, m.in[0], m.esz);
    } else {
        int64_t ostr[VG_MAX_DIMS], istr[VG_MAX_DIMS];
        ostr[r - 1] = istr[r - 1] = 1;
        for (int k = r - 2; k >= 0; k--) {
            ostr[k] = ostr[k + 1] * dims[k + 1];
            istr[k] = istr[k + 1] * vg_tensor_dim(x, k + 1);
        }
        bjob j = {m.in[0], m.out, m.esz, r - 1, {0}, {0}, {0}, 0, 0, vg_tensor_dim(x, r - 1)};
        for (int k = 0; k < r; k++) j.dbase += lo[k] * ostr[k];
        for (int k = 0; k < r - 1; k++) {
            j.dims[k] = vg_tensor_dim(x, k);
            j.sstride[k] = istr[k];
            j.dstride[k] = ostr[k];
        }
        if (vg_tensor_num_elements(x)) run_block(ctx, &j, m.str);
    }
    return mover_end(&m, ctx, VG_OK);
}

/* For the gradients of Pad and Tile (x, an int argument): dx[1] = none, *xs = x's
 * static shape, and the argument's Const value when it has one and *xs is fully
 * defined (the static path), else NULL. */
static const vg_tensor *grad_static_arg(vg_op *op, vg_output *dx, vg_shape *xs) {
    *xs = vg_output_shape(vg_op_input(op, 0));
    const vg_tensor *c = const_of(vg_op_input(op, 1));
    dx[1] = NONE;
    return c && vg_shape_is_fully_defined(xs) ? c : NULL;
}

/* TF's _PadGrad: Slice(dy, paddings[:, 0], shape(x)). */
static vg_code op_grad_pad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), p = vg_op_input(op, 1);
    vg_shape xs;
    const vg_tensor *pc = grad_static_arg(op, dx, &xs);
    if (pc) {
        int64_t begin[VG_MAX_DIMS];
        for (int i = 0; i < xs.ndims; i++) begin[i] = vg__int_at(pc, 2 * i);
        dx[0] = vg_slice_c(g, dy[0], begin, xs.dims, xs.ndims, NULL);
        return vg_graph_status(g, NULL);
    }
    int64_t zero2[2] = {0, 0}, minus1 = -1;
    vg_dtype it = vg_output_dtype(p);
    vg_output size = stack_with_one(g, vg_rank(g, x, NULL));
    if (it != VG_INT32) size = vg_cast(g, size, it, NULL);
    vg_output before = vg_slice(g, p, vg__array_const_ints(g, it, zero2, 2, false, "Slice/begin"), size, NULL);
    vg_output begin = vg_reshape_c(g, before, &minus1, 1, NULL);
    dx[0] = vg_slice(g, dy[0], begin, vg_shape_op(g, x, it, NULL), NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* Pack, Unpack */

static vg_code op_shape_pack(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op);
    int64_t nattr = n, axis = 0;
    vg__op_set_default_attr_int(op, "N", n);
    vg__op_set_default_attr_int(op, "axis", 0);
    vg_op_attr_int(op, "N", &nattr);
    vg_op_attr_int(op, "axis", &axis);
    if (nattr != n) return vg_status_set(st, VG_INVALID_ARGUMENT, "attr N = %lld but %d values given", (long long)nattr, n);
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    vg_shape acc = vg_shape_unknown();
    for (int i = 0; i < n; i++) {
        vg_shape s = vg__op_input_shape(op, i), prev = acc;
        char b1[128], b2[128];
        if (vg__op_input_dtype(op, i) != vg__op_input_dtype(op, 0))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "values[%d] is %s but values[0] is %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(vg__op_input_dtype(op, 0)));
        if (!merge_shape(&acc, &s))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shapes of all inputs must match: values[0].shape = %s != "
                                 "values[%d].shape = %s", vg_shape_str(&prev, b1, 128), i, vg_shape_str(&s, b2, 128));
    }
    vg_shape out = vg_shape_unknown();
    if (acc.ndims >= 0) {
        int r = acc.ndims;
        if (axis < -(r + 1) || axis > r)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Argument axis = %lld not in range [%d, %d)", (long long)axis,
                                 -(r + 1), r + 1);
        if (r + 1 > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "Pack result has too many dimensions");
        if (axis < 0) axis += r + 1;
        out.ndims = r + 1;
        for (int i = 0, k = 0; i <= r; i++) out.dims[i] = i == axis ? n : acc.dims[k++];
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

static vg_code op_kernel_pack(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx);
    vg_tensor *x0 = vg__kctx_input(ctx, 0), *out;
    int r = vg_tensor_ndims(x0);
    int64_t axis = 0;
    vg_op_attr_int(vg__kctx_op(ctx), "axis", &axis);
    if (axis < -(r + 1) || axis > r || r + 1 > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)axis, -(r + 1), r + 1);
    if (axis < 0) axis += r + 1;
    vg_tensor *small[8], **arr = n <= 8 ? small : vg__malloc(sizeof(vg_tensor *) * (size_t)n);
    int64_t csmall[8], *chunk = n <= 8 ? csmall : vg__malloc(sizeof(int64_t) * (size_t)n);
    vg_code c = VG_OK;
    if (!arr || !chunk) c = VG_OOM(st, "pack");
    for (int i = 0; i < n && c == VG_OK; i++) {
        arr[i] = vg__kctx_input(ctx, i);
        vg_shape a = vg_tensor_shape(x0), b = vg_tensor_shape(arr[i]);
        bool same = a.ndims == b.ndims && vg_tensor_dtype(arr[i]) == vg_tensor_dtype(x0);
        for (int d = 0; same && d < a.ndims; d++) same = a.dims[d] == b.dims[d];
        if (!same) {
            char b1[128], b2[128];
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "Shapes of all inputs must match: values[0].shape = %s != "
                              "values[%d].shape = %s", vg_shape_str(&a, b1, 128), i, vg_shape_str(&b, b2, 128));
        }
        chunk[i] = prod(vg_tensor_dims(x0), (int)axis, r);
    }
    int64_t dims[VG_MAX_DIMS];
    for (int i = 0, k = 0; i <= r; i++) dims[i] = i == axis ? n : vg_tensor_dim(x0, k++);
    if (c == VG_OK) c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x0), dims, r + 1, &out);
    if (c == VG_OK) c = concat_copy(ctx, arr, n, out, prod(vg_tensor_dims(x0), 0, (int)axis), chunk);
    if (arr != small) vg__free(arr);
    if (chunk != csmall) vg__free(chunk);
    return c;
}

static vg_op *unpack_op(vg_graph *g, vg_output x, int num, int64_t axis) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Unpack", "unstack", NULL, (vg_output[]){x}, 1);
    vg_op_builder_set_attr_int(b, "num", num);
    vg_op_builder_set_attr_int(b, "axis", axis);
    return vg_op_builder_finish(b);
}

/* TF's _PackGrad: unstack(dy, num=N, axis). */
static vg_code op_grad_pack(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int n = vg_op_num_inputs(op);
    int64_t axis = 0;
    vg_op_attr_int(op, "axis", &axis);
    vg_op *u = unpack_op(g, dy[0], n, axis);
    for (int i = 0; i < n; i++) dx[i] = vg_out(u, i);
    return vg_graph_status(g, NULL);
}

static vg_code op_shape_unpack(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    vg__op_set_default_attr_int(op, "axis", 0);
    int64_t axis = 0, num = -1;
    vg_op_attr_int(op, "axis", &axis);
    vg_shape in = vg__op_input_shape(op, 0), out = vg_shape_unknown();
    if (in.ndims >= 0) {
        int r = in.ndims;
        if (axis < -r || axis >= r)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)axis, -r, r);
        if (axis < 0) axis += r;
        if (in.dims[axis] >= 0) vg__op_set_default_attr_int(op, "num", in.dims[axis]);
        out.ndims = r - 1;
        for (int i = 0, k = 0; i < r; i++)
            if (i != axis) out.dims[k++] = in.dims[i];
    }
    if (!vg_op_attr_int(op, "num", &num))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Cannot infer num from shape; set attr num");
    if (num < 0 || (in.ndims >= 0 && in.dims[axis] >= 0 && in.dims[axis] != num))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "attr num = %lld does not match dimension %lld of the input",
                             (long long)num, (long long)axis);
    vg__op_set_num_outputs(op, (int)num);
    for (int i = 0; i < num; i++) vg__op_set_output(op, i, vg__op_input_dtype(op, 0), out);
    return VG_OK;
}

static vg_code op_kernel_unpack(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t axis = 0, num = 0;
    vg_op_attr_int(vg__kctx_op(ctx), "axis", &axis);
    vg_op_attr_int(vg__kctx_op(ctx), "num", &num);
    int r = vg_tensor_ndims(x);
    char b1[128];
    if (axis < -r || axis >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "axis = %lld not in [%d, %d)", (long long)axis, -r, r);
    if (axis < 0) axis += r;
    if (vg_tensor_dim(x, (int)axis) != num)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input shape axis %lld must equal %lld, got shape %s",
                             (long long)axis, (long long)num, vg__tshape_str(x, b1, sizeof b1));
    int64_t dims[VG_MAX_DIMS], outer = prod(vg_tensor_dims(x), 0, (int)axis);
    int64_t inner = prod(vg_tensor_dims(x), (int)axis + 1, r);
    for (int i = 0, k = 0; i < r; i++)
        if (i != axis) dims[k++] = vg_tensor_dim(x, i);
    for (int i = 0; i < num; i++) {
        vg_tensor *out;
        vg_code c = vg__kctx_alloc_output(ctx, i, vg_tensor_dtype(x), dims, r - 1, &out);
        if (c != VG_OK) return c;
        if (vg_tensor_num_elements(out) == 0) continue;
        mover m;
        if ((c = mover_begin(&m, ctx, &x, 1, out)) != VG_OK) return c;
        size_t nb = (size_t)inner * m.esz;
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)m.out + (size_t)o * nb, (const char *)m.in[0] + (size_t)(o * num + i) * nb, nb);
        if ((c = mover_end(&m, ctx, VG_OK)) != VG_OK) return c;
    }
    return VG_OK;
}

/* TF's _UnpackGrad: stack(dys, axis). */
static vg_code op_grad_unpack(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t axis = 0;
    vg_op_attr_int(op, "axis", &axis);
    dx[0] = vg_pack(g, dy, vg_op_num_outputs(op), (int)axis, NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* GatherV2 */

static vg_code op_shape_gather(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "Tparams", 0, st) != VG_OK ||
        vg__array_index_attr(op, "Tindices", 1, "indices", st) != VG_OK ||
        vg__array_index_attr(op, "Taxis", 2, "axis", st) != VG_OK)
        return st->code;
    vg__op_set_default_attr_int(op, "batch_dims", 0);
    int64_t bd = 0;
    vg_op_attr_int(op, "batch_dims", &bd);
    if (bd != 0) return vg_status_set(st, VG_UNIMPLEMENTED, "GatherV2 with batch_dims != 0 is not supported");
    vg_shape ps = vg__op_input_shape(op, 0), is = vg__op_input_shape(op, 1), out = vg_shape_unknown();
    const vg_tensor *ax = vg__op_const_input(op, 2);
    if (ax && ps.ndims >= 0) {
        int64_t a = vg__int_at(ax, 0);
        if (ps.ndims < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "params must be at least 1 dimensional");
        if (a < -ps.ndims || a >= ps.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld", -ps.ndims,
                                 ps.ndims, (long long)a);
        if (a < 0) a += ps.ndims;
        if (is.ndims >= 0) {
            if (ps.ndims - 1 + is.ndims > VG_MAX_DIMS)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherV2 result has too many dimensions");
            out.ndims = 0;
            for (int i = 0; i < a; i++) out.dims[out.ndims++] = ps.dims[i];
            for (int i = 0; i < is.ndims; i++) out.dims[out.ndims++] = is.dims[i];
            for (int i = (int)a + 1; i < ps.ndims; i++) out.dims[out.ndims++] = ps.dims[i];
        }
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

typedef struct gjob {
    const char *src;
    char *dst;
    const void *idx;
    bool i64;
    int64_t nidx, gdim;
    size_t nb; /* bytes per gathered slice */
} gjob;

/* Units u = (outer o, index j): dst[u] = src[o, idx[j]]. */
static void gather_units(void *arg, int64_t u0, int64_t u1) {
    const gjob *j = arg;
    for (int64_t u = u0; u < u1; u++) {
        int64_t o = u / j->nidx, k = u - o * j->nidx;
        int64_t id = j->i64 ? ((const int64_t *)j->idx)[k] : ((const int32_t *)j->idx)[k];
        const char *s = j->src + (size_t)(o * j->gdim + id) * j->nb;
        char *d = j->dst + (size_t)u * j->nb;
        switch (j->nb) {
        case 4: memcpy(d, s, 4); break;
        case 8: memcpy(d, s, 8); break;
        default: memcpy(d, s, j->nb);
        }
    }
}

char *vg__array_index_coords(const vg_tensor *ind, int64_t k, char *buf, size_t len) {
    size_t o = 0;
    int r = vg_tensor_ndims(ind);
    int64_t c[VG_MAX_DIMS], rem = k;
    for (int d = r - 1; d >= 0; d--) {
        c[d] = rem % vg_tensor_dim(ind, d);
        rem /= vg_tensor_dim(ind, d);
    }
    for (int d = 0; d < r && o < len; d++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? "," : "", (long long)c[d]);
    if (r == 0) buf[0] = 0;
    return buf;
}

/* TF's message names the bad index by its coordinates: "indices[1,0] = 7 is not in [0, 3)". */
static vg_code bad_index(vg_status *st, const vg_tensor *ind, int64_t k, int64_t v, int64_t limit) {
    char pos[160];
    return vg_status_set(st, VG_INVALID_ARGUMENT, "indices[%s] = %lld is not in [0, %lld)",
                         vg__array_index_coords(ind, k, pos, sizeof pos), (long long)v, (long long)limit);
}

static vg_code op_kernel_gather(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *p = vg__kctx_input(ctx, 0), *ind = vg__kctx_input(ctx, 1), *ax = vg__kctx_input(ctx, 2), *out;
    int pr = vg_tensor_ndims(p), ir = vg_tensor_ndims(ind);
    if (vg_tensor_num_elements(ax) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "axis must be scalar");
    if (pr < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "params must be at least 1 dimensional");
    int64_t a = vg__int_at(ax, 0);
    if (a < -pr || a >= pr)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld", -pr, pr,
                             (long long)a);
    if (a < 0) a += pr;
    if (pr - 1 + ir > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherV2 result has too many dimensions");
    int64_t gdim = vg_tensor_dim(p, (int)a), nidx = vg_tensor_num_elements(ind);
    bool i64 = vg_tensor_dtype(ind) == VG_INT64;
    for (int64_t k = 0; k < nidx; k++) {
        int64_t v = i64 ? ((const int64_t *)vg_tensor_data(ind))[k] : ((const int32_t *)vg_tensor_data(ind))[k];
        if (v < 0 || v >= gdim) return bad_index(st, ind, k, v, gdim);
    }
    int64_t dims[VG_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a; i++) dims[nd++] = vg_tensor_dim(p, i);
    for (int i = 0; i < ir; i++) dims[nd++] = vg_tensor_dim(ind, i);
    for (int i = (int)a + 1; i < pr; i++) dims[nd++] = vg_tensor_dim(p, i);
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(p), dims, nd, &out);
    if (c != VG_OK || vg_tensor_num_elements(out) == 0) return c;
    mover m;
    if ((c = mover_begin(&m, ctx, &p, 1, out)) != VG_OK) return c;
    int64_t outer = prod(vg_tensor_dims(p), 0, (int)a), inner = prod(vg_tensor_dims(p), (int)a + 1, pr);
    gjob j = {m.in[0], m.out, vg_tensor_data(ind), i64, nidx, gdim, (size_t)inner * m.esz};
    if (m.str) gather_units(&j, 0, outer * nidx);
    else vg__kctx_parallel_for(ctx, outer * nidx, inner + 8, gather_units, &j);
    return mover_end(&m, ctx, VG_OK);
}

static vg_output segment_sum(vg_graph *g, vg_output data, vg_output ids, vg_output num) {
    return vg__build_simple(g, "UnsortedSegmentSum", "UnsortedSegmentSum", NULL, (vg_output[]){data, ids, num}, 3);
}

/* Slice [begin, begin+size) of a 1-D int32 shape vector (size -1 = rest); computed
 * here when the vector is a Const. */
static vg_output shape_part(vg_graph *g, vg_output shape, int64_t begin, int64_t size, bool scalar) {
    const vg_tensor *c = const_of(shape);
    int64_t minus1 = -1;
    if (c) {
        int64_t n = vg_tensor_num_elements(c), v[VG_MAX_DIMS];
        if (size < 0) size = n - begin;
        for (int64_t i = 0; i < size; i++) v[i] = vg__int_at(c, begin + i);
        return vg__array_const_ints(g, vg_tensor_dtype(c), v, (int)size, scalar, "strided_slice");
    }
    vg_output s = vg_slice_c(g, shape, &begin, &size, 1, NULL);
    return scalar ? vg_reshape_c(g, s, &minus1, 0, NULL) : s;
}

/* ConcatV2 of 1-D int32 shape parts along 0, folded into a Const when all are Consts. */
static vg_output concat_ints(vg_graph *g, const vg_output *parts, int n) {
    int64_t v[VG_MAX_DIMS];
    int k = 0;
    bool all = true;
    for (int i = 0; i < n && all; i++) {
        const vg_tensor *c = const_of(parts[i]);
        all = c && vg_tensor_dtype(c) == VG_INT32 && k + vg_tensor_num_elements(c) <= VG_MAX_DIMS;
        for (int64_t j = 0; all && j < vg_tensor_num_elements(c); j++) v[k++] = vg__int_at(c, j);
    }
    if (all) return vg__array_const_ints(g, VG_INT32, v, k, false, "concat");
    return vg_concat_c(g, parts, n, 0, NULL);
}

/* TF's _GatherV2Grad with a dense result: the slices of dy are summed into the
 * gathered rows with UnsortedSegmentSum (axis 0), or around a transpose that brings
 * the gather axis to the front (other constant axes; needs params' rank). */
static vg_code op_grad_gather(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output params = vg_op_input(op, 0), indices = vg_op_input(op, 1);
    const vg_tensor *ac = const_of(vg_op_input(op, 2));
    vg_shape ps = vg_output_shape(params), is = vg_output_shape(indices);
    dx[1] = dx[2] = NONE;
    if (!ac || ps.ndims < 0)
        return vg_graph_set_error(g, VG_UNIMPLEMENTED,
                                  "GatherV2 gradient needs a constant axis and params of known rank (op '%s')",
                                  vg_op_name(op));
    int r = ps.ndims;
    int64_t a = vg__int_at(ac, 0);
    if (a < 0) a += r;
    vg_output params_shape = vg__array_shape_of(g, params, VG_INT32, NULL);
    vg_output indices_size;
    int64_t nind = vg_shape_num_elements(&is);
    if (nind >= 0) indices_size = vg__array_const_ints(g, VG_INT32, &nind, 1, false, "ExpandDims");
    else indices_size = vg_expand_dims(g, vg_size(g, indices, NULL), 0, NULL);
    vg_output flat_idx = vg_reshape(g, indices, indices_size, NULL);
    vg_output num = shape_part(g, params_shape, a, 1, true);
    vg_output outer = a > 0 ? shape_part(g, params_shape, 0, a, false) : NONE;
    vg_output inner = shape_part(g, params_shape, a + 1, -1, false);
    vg_output parts[3];
    int np = 0;
    if (a > 0) parts[np++] = outer;
    parts[np++] = indices_size;
    parts[np++] = inner;
    vg_output values = vg_reshape(g, dy[0], concat_ints(g, parts, np), NULL);
    if (a == 0) {
        dx[0] = segment_sum(g, values, flat_idx, num);
        return vg_graph_status(g, NULL);
    }
    int32_t perm[VG_MAX_DIMS], inv[VG_MAX_DIMS];
    perm[0] = (int32_t)a;
    for (int i = 0; i < a; i++) perm[i + 1] = i;
    for (int i = (int)a + 1; i < r; i++) perm[i] = i;
    for (int i = 0; i < r; i++) inv[perm[i]] = i;
    vg_output vt = vg_transpose_c(g, values, perm, r, NULL);
    vg_output summed = segment_sum(g, vt, flat_idx, num);
    dx[0] = vg_transpose_c(g, summed, inv, r, NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* UnsortedSegmentSum */

vg_code vg__array_segment_shape(vg_op *op, bool strict, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK ||
        vg__array_index_attr(op, "Tindices", 1, "segment_ids", st) != VG_OK ||
        vg__array_index_attr(op, "Tnumsegments", 2, "num_segments", st) != VG_OK)
        return st->code;
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE && dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s%sT must be float, double, int32 or int64, got %s",
                             strict ? vg_op_type(op) : "", strict ? ": " : "", vg_dtype_name(dt));
    vg_shape ds = vg__op_input_shape(op, 0), is = vg__op_input_shape(op, 1), ns = vg__op_input_shape(op, 2),
             out = vg_shape_unknown();
    if (strict && ns.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d", ns.ndims);
    if (ds.ndims >= 0 && is.ndims >= 0) {
        if (is.ndims > ds.ndims && !strict)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "segment_ids has more dimensions than data");
        if (is.ndims > ds.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be at least rank %d but is rank %d", is.ndims,
                                 ds.ndims);
        for (int i = 0; strict && i < is.ndims; i++)
            if (is.dims[i] >= 0 && ds.dims[i] >= 0 && is.dims[i] != ds.dims[i])
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimensions must be equal, but are %lld and %lld",
                                     (long long)ds.dims[i], (long long)is.dims[i]);
        out.ndims = ds.ndims - is.ndims + 1;
        const vg_tensor *n = vg__op_const_input(op, 2);
        out.dims[0] = n ? vg__int_at(n, 0) : -1;
        for (int i = is.ndims; i < ds.ndims; i++) out.dims[i - is.ndims + 1] = ds.dims[i];
    }
    return vg__op_set_single_output(op, dt, out);
}

static vg_code op_shape_segment_sum(vg_op *op, vg_status *st) { return vg__array_segment_shape(op, false, st); }

/* The rows of data added to their segments' output rows in row order (reads stream
 * through data; the output, num * inner, is the smaller side). In parallel, each of
 * `units` threads owns a range of segments and scans all the ids for its own: every
 * output element is still summed in row order, so the result does not depend on the
 * thread count. float rows go through segsum_add_f32 (vectorized per ISA); the
 * other dtypes through the loop below. */
typedef struct segjob {
    const vg_tensor *ids;
    const char *x;
    char *o;
    int64_t nids, num, inner, units;
    vg_dtype dt;
} segjob;

/* dst += src over n floats: a vectorized clone per ISA (the macro's loop below stayed
 * scalar at -O2, movss/addss: graph_net's [12288, 128] sum took 1.1 ms) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic") /* -O2's model left it scalar */
#endif
VG_SIMD_CLONES static void segsum_add_f32(float *restrict dst, const float *restrict src, int64_t n) {
    for (int64_t t = 0; t < n; t++) dst[t] += src[t];
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#define SEGSUM_ROWS(ctype)                                                                \
    do {                                                                                  \
        const ctype *x = (const ctype *)j->x;                                             \
        ctype *o = (ctype *)j->o;                                                         \
        for (int64_t t = lo * inner; t < hi * inner; t++) o[t] = 0;                       \
        for (int64_t k = 0; k < j->nids; k++) {                                           \
            int64_t id = i64 ? ((const int64_t *)ip)[k] : ((const int32_t *)ip)[k];       \
            if (id < lo || id >= hi) continue;                                            \
            ctype *restrict dst = o + id * inner;                                         \
            const ctype *restrict src = x + k * inner;                                    \
            if (sizeof(ctype) == 4 && (ctype)0.5 != 0) { /* float */                      \
                segsum_add_f32((float *)dst, (const float *)src, inner);                  \
                continue;                                                                 \
            }                                                                             \
            int64_t t = 0;                                                                \
            for (; t + 16 <= inner; t += 16)                                              \
                for (int u = 0; u < 16; u++) dst[t + u] += src[t + u];                    \
            for (; t < inner; t++) dst[t] += src[t];                                      \
        }                                                                                 \
    } while (0)

static void segsum_units(void *arg, int64_t u0, int64_t u1) {
    const segjob *j = arg;
    int64_t inner = j->inner, lo = j->num * u0 / j->units, hi = j->num * u1 / j->units;
    const void *ip = vg_tensor_data(j->ids);
    bool i64 = vg_tensor_dtype(j->ids) == VG_INT64;
    switch (j->dt) {
    case VG_FLOAT: SEGSUM_ROWS(float); break;
    case VG_DOUBLE: SEGSUM_ROWS(double); break;
    case VG_INT32: SEGSUM_ROWS(int32_t); break;
    default: SEGSUM_ROWS(int64_t); break;
    }
}

vg_code vg__array_segment_prepare(vg__kctx *ctx, bool strict, vg__array_segment *sg) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *data = vg__kctx_input(ctx, 0), *ids = vg__kctx_input(ctx, 1), *ns = vg__kctx_input(ctx, 2);
    char b1[128], b2[128], at[VG_MAX_DIMS * 24 + 4];
    if (strict && vg_tensor_ndims(ns) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "num_segments should be a scalar, not shape %s",
                             vg__tshape_str(ns, b1, sizeof b1));
    if (vg_tensor_num_elements(ns) != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_segments should be a scalar");
    int64_t num = vg__int_at(ns, 0), nids = vg_tensor_num_elements(ids);
    int dr = vg_tensor_ndims(data), ir = vg_tensor_ndims(ids);
    bool prefix = ir <= dr;
    for (int i = 0; prefix && i < ir; i++) prefix = vg_tensor_dim(ids, i) == vg_tensor_dim(data, i);
    if (!prefix)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "data.shape = %s does not start with segment_ids.shape = %s",
                             vg__tshape_str(data, b1, sizeof b1), vg__tshape_str(ids, b2, sizeof b2));
    if (num < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "num_segments must be non-negative, got %lld", (long long)num);
    for (int64_t k = 0; k < nids; k++)
        if (vg__int_at(ids, k) >= num) {
            if (!strict) return bad_index(st, ids, k, vg__int_at(ids, k), num);
            /* TF's SliceDebugString: the id's coordinates */
            return vg_status_set(st, VG_INVALID_ARGUMENT, "segment_ids[%s] = %lld is out of range [0, %lld)",
                                 vg__array_index_coords(ids, k, at, sizeof at), (long long)vg__int_at(ids, k),
                                 (long long)num);
        }
    int64_t dims[VG_MAX_DIMS], inner = prod(vg_tensor_dims(data), ir, dr);
    dims[0] = num;
    for (int i = ir; i < dr; i++) dims[i - ir + 1] = vg_tensor_dim(data, i);
    *sg = (vg__array_segment){data, ids, NULL, num, nids, inner, 0};
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(data), dims, dr - ir + 1, &sg->out);
    if (c != VG_OK || vg_tensor_num_elements(sg->out) == 0) return c;
    /* one unit per thread, each worth at least 64k element updates */
    int64_t units = vg__kctx_num_threads(ctx), work = nids * inner;
    if (units > work / 65536) units = work / 65536;
    if (units > num) units = num;
    if (units < 1) units = 1;
    sg->units = units;
    return VG_OK;
}

static vg_code op_kernel_segment_sum(vg__kctx *ctx) {
    vg__array_segment sg;
    vg_code c = vg__array_segment_prepare(ctx, false, &sg);
    if (c != VG_OK || sg.units == 0) return c;
    segjob j = {sg.ids,   vg_tensor_data(sg.data), vg_tensor_data(sg.out), sg.nids, sg.num, sg.inner,
                sg.units, vg_tensor_dtype(sg.data)};
    if (sg.units == 1)
        segsum_units(&j, 0, 1);
    else
        vg__kctx_parallel_for(ctx, sg.units, INT64_C(1) << 20, segsum_units, &j);
    return VG_OK;
}

/* TF's _UnsortedSegmentSumGrad (_GatherDropNegatives): gather dy at max(ids, 0) and
 * zero the rows of negative ids (when ids is a vector; otherwise ids are assumed >= 0). */
static vg_code op_grad_segment_sum(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output ids = vg_op_input(op, 1);
    vg_shape is = vg_output_shape(ids);
    dx[1] = dx[2] = NONE;
    vg_output clipped = vg_maximum(g, ids, vg_zeros_like(g, ids, NULL), NULL);
    vg_output gathered = vg_gather(g, dy[0], clipped, 0, NULL);
    if (is.ndims == 1) {
        vg_output pos = vg_greater_equal(g, ids, vg_zeros_like(g, ids, NULL), NULL);
        gathered = vg_select(g, pos, gathered, vg_zeros_like(g, gathered, NULL), NULL);
    }
    dx[0] = gathered;
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* OneHot */

static vg_code op_shape_one_hot(vg_op *op, vg_status *st) {
    vg_dtype ti = vg__op_input_dtype(op, 0), t = vg__op_input_dtype(op, 2);
    if (ti != VG_UINT8 && ti != VG_INT32 && ti != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "indices must be uint8, int32 or int64, got %s", vg_dtype_name(ti));
    if (vg__op_input_dtype(op, 1) != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "depth must be int32, got %s",
                             vg_dtype_name(vg__op_input_dtype(op, 1)));
    if (vg__op_input_dtype(op, 3) != t)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "on_value is %s but off_value is %s", vg_dtype_name(t),
                             vg_dtype_name(vg__op_input_dtype(op, 3)));
    if (t == VG_STRING || t == VG_RESOURCE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "on_value must be numeric or bool, got %s", vg_dtype_name(t));
    if (vg__array_type_attr(op, "TI", 0, st) != VG_OK || vg__array_type_attr(op, "T", 2, st) != VG_OK) return st->code;
    vg__op_set_default_attr_int(op, "axis", -1);
    int64_t axis = -1;
    vg_op_attr_int(op, "axis", &axis);
    vg_shape in = vg__op_input_shape(op, 0), out = vg_shape_unknown();
    if (in.ndims >= 0) {
        if (axis < -1 || axis > in.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d).  But received: %lld",
                                 in.ndims + 1, (long long)axis);
        if (in.ndims + 1 > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "OneHot result has too many dimensions");
        if (axis < 0) axis = in.ndims;
        const vg_tensor *d = vg__op_const_input(op, 1);
        out.ndims = in.ndims + 1;
        for (int i = 0, k = 0; i < out.ndims; i++) out.dims[i] = i == axis ? (d ? vg__int_at(d, 0) : -1) : in.dims[k++];
    }
    return vg__op_set_single_output(op, t, out);
}

static vg_code op_kernel_one_hot(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *ind = vg__kctx_input(ctx, 0), *dt = vg__kctx_input(ctx, 1), *on = vg__kctx_input(ctx, 2),
              *off = vg__kctx_input(ctx, 3), *out;
    if (vg_tensor_ndims(dt) != 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "depth must be a scalar");
    if (vg_tensor_ndims(on) != 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "on_value must be a scalar");
    if (vg_tensor_ndims(off) != 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "off_value must be a scalar");
    int64_t depth = vg__int_at(dt, 0), axis = -1;
    if (depth < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "depth must be non-negative, got: %lld", (long long)depth);
    vg_op_attr_int(vg__kctx_op(ctx), "axis", &axis);
    int r = vg_tensor_ndims(ind);
    if (axis < -1 || axis > r || r + 1 > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d).  But received: %lld",
                             r + 1, (long long)axis);
    if (axis < 0) axis = r;
    int64_t dims[VG_MAX_DIMS];
    for (int i = 0, k = 0; i <= r; i++) dims[i] = i == axis ? depth : vg_tensor_dim(ind, k++);
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(on), dims, r + 1, &out);
    if (c != VG_OK || vg_tensor_num_elements(out) == 0) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(on));
    int64_t pre = prod(vg_tensor_dims(ind), 0, (int)axis), suf = prod(vg_tensor_dims(ind), (int)axis, r);
    char *o = vg_tensor_data(out);
    const char *onv = vg_tensor_data(on), *offv = vg_tensor_data(off);
    int64_t n = vg_tensor_num_elements(out);
    for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)i * esz, offv, esz);
    const void *ip = vg_tensor_data(ind);
    vg_dtype it = vg_tensor_dtype(ind);
    for (int64_t p = 0; p < pre; p++)
        for (int64_t s = 0; s < suf; s++) {
            int64_t k = p * suf + s;
            int64_t v = it == VG_INT64 ? ((const int64_t *)ip)[k] : it == VG_INT32 ? ((const int32_t *)ip)[k]
                                                                                     : ((const uint8_t *)ip)[k];
            if (v >= 0 && v < depth) memcpy(o + (size_t)((p * depth + v) * suf + s) * esz, onv, esz);
        }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Tile */

static vg_code op_shape_tile(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK ||
        vg__array_index_attr(op, "Tmultiples", 1, "multiples", st) != VG_OK)
        return st->code;
    vg_shape in = vg__op_input_shape(op, 0), ms = vg__op_input_shape(op, 1);
    if (vg__shape_need_rank(&ms, 1, "multiples must be a vector, got rank %d", st)) return st->code;
    int rank = in.ndims;
    if (rank < 0 && ms.ndims == 1 && ms.dims[0] >= 0 && ms.dims[0] <= VG_MAX_DIMS) rank = (int)ms.dims[0];
    if (rank >= 0 && ms.ndims == 1 && ms.dims[0] >= 0 && ms.dims[0] != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Expected multiples argument to be a vector of length %d but got length %lld", rank,
                             (long long)ms.dims[0]);
    vg_shape out = vg_shape_make(NULL, rank), mv = vg__array_shape_value(op, 1);
    if (in.ndims >= 0 && mv.ndims == rank)
        for (int i = 0; i < rank; i++) {
            if (mv.dims[i] == 0) out.dims[i] = 0;
            else if (in.dims[i] < 0 || mv.dims[i] < 0) out.dims[i] = -1;
            else if (__builtin_mul_overflow(in.dims[i], mv.dims[i], &out.dims[i]))
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Tile: dimension %d (%lld) times multiples[%d] (%lld) overflows int64", i,
                                     (long long)in.dims[i], i, (long long)mv.dims[i]);
        }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

/* dst[blk .. m * blk) = m - 1 copies of dst[0 .. blk): one 4-byte element repeated is
 * a fill loop; otherwise the copied prefix doubles (log2(m) memcpy calls, not m - 1). */
static void repeat_block(char *dst, size_t blk, int64_t m, size_t esz) {
    size_t total = blk * (size_t)m, have = blk;
    if (blk == 4 && esz == 4 && m > 1) {
        uint32_t v;
        memcpy(&v, dst, 4);
        uint32_t *restrict d = (uint32_t *)(void *)dst;
        for (int64_t t = 1; t < m; t++) d[t] = v;
        return;
    }
    while (have < total) {
        size_t n = have < total - have ? have : total - have;
        memcpy(dst + have, dst, n);
        have += n;
    }
}

/* Tiling in place, innermost dim first: with dims d and output dims o = d * m, after
 * step k every first-tile prefix (i_0 < d_0, ..., i_k < d_k) holds its full sub-block;
 * step k copies the block [i_0..i_{k-1}, 0:d_k, ...] to the m_k - 1 following slots.
 * The blocks of one step are independent: tile_blocks runs a range of them. */
typedef struct tilejob {
    char *out;
    const char *in;
    const int64_t *d, *m, *ostr, *istr;
    int k, r;
    size_t esz;
} tilejob;

static void tile_blocks(void *arg, int64_t b0, int64_t b1) {
    const tilejob *j = arg;
    int k = j->k;
    size_t blk = (size_t)(j->d[k] * j->ostr[k]) * j->esz;
    for (int64_t b = b0; b < b1; b++) {
        int64_t base = 0, ibase = 0, rem = b;
        for (int q = k - 1; q >= 0; q--) { /* b's coordinates over dims 0..k-1 */
            int64_t i = rem % j->d[q];
            rem /= j->d[q];
            base += i * j->ostr[q];
            ibase += i * j->istr[q];
        }
        char *dst = j->out + (size_t)base * j->esz;
        if (k == j->r - 1) memcpy(dst, j->in + (size_t)ibase * j->esz, blk); /* the input row */
        repeat_block(dst, blk, j->m[k], j->esz);
    }
}

static void tile_fill(vg__kctx *ctx, char *out, const char *in, const int64_t *d, const int64_t *m, int r, size_t esz,
                      bool par) {
    int64_t ostr[VG_MAX_DIMS], istr[VG_MAX_DIMS];
    ostr[r - 1] = istr[r - 1] = 1;
    for (int k = r - 2; k >= 0; k--) {
        ostr[k] = ostr[k + 1] * d[k + 1] * m[k + 1];
        istr[k] = istr[k + 1] * d[k + 1];
    }
    for (int k = r - 1; k >= 0; k--) {
        tilejob j = {out, in, d, m, ostr, istr, k, r, esz};
        int64_t blocks = prod(d, 0, k);
        if (par) vg__kctx_parallel_for(ctx, blocks, d[k] * ostr[k] * m[k] + 8, tile_blocks, &j);
        else tile_blocks(&j, 0, blocks);
    }
}

static vg_code op_kernel_tile(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *mt = vg__kctx_input(ctx, 1), *out;
    int r = vg_tensor_ndims(x);
    if (vg_tensor_ndims(mt) != 1 || vg_tensor_dim(mt, 0) != r)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Expected multiples argument to be a vector of length %d but got length %lld", r,
                             (long long)vg_tensor_num_elements(mt));
    int64_t m[VG_MAX_DIMS], dims[VG_MAX_DIMS];
    bool ones = true;
    for (int i = 0; i < r; i++) {
        m[i] = vg__int_at(mt, i);
        if (m[i] < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld", i, (long long)m[i]);
        if (__builtin_mul_overflow(vg_tensor_dim(x, i), m[i], &dims[i]))
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Tile: dimension %d (%lld) times multiples[%d] (%lld) overflows int64", i,
                                 (long long)vg_tensor_dim(x, i), i, (long long)m[i]);
        ones = ones && m[i] == 1;
    }
    if (ones) {
        vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
        return VG_OK;
    }
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), dims, r, &out);
    if (c != VG_OK || vg_tensor_num_elements(out) == 0) return c;
    mover mv;
    if ((c = mover_begin(&mv, ctx, &x, 1, out)) != VG_OK) return c;
    tile_fill(ctx, mv.out, mv.in[0], vg_tensor_dims(x), m, r, mv.esz, !mv.str);
    return mover_end(&mv, ctx, VG_OK);
}

/* TF's _TileGrad: reduce_sum(reshape(dy, [m0, d0, m1, d1, ...]), [0, 2, ...]). With
 * known shapes and Const multiples the split shape is a Const that leaves out the
 * untiled dims (keeping the rank small); otherwise TF's dynamic formula. */
static vg_code op_grad_tile(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), mult = vg_op_input(op, 1);
    vg_shape xs;
    const vg_tensor *mc = grad_static_arg(op, dx, &xs);
    if (mc) {
        int64_t split[2 * VG_MAX_DIMS];
        int32_t axes[VG_MAX_DIMS];
        int ns = 0, na = 0;
        bool prev_data = false;
        for (int i = 0; i < xs.ndims; i++) {
            int64_t mi = vg__int_at(mc, i);
            if (mi == 1) {
                if (prev_data) split[ns - 1] *= xs.dims[i]; /* merge untiled neighbours */
                else split[ns++] = xs.dims[i];
                prev_data = true;
                continue;
            }
            axes[na++] = ns;
            split[ns++] = mi;
            split[ns++] = xs.dims[i];
            prev_data = true;
        }
        if (na == 0) {
            dx[0] = dy[0];
            return vg_graph_status(g, NULL);
        }
        if (ns > VG_MAX_DIMS)
            return vg_graph_set_error(g, VG_UNIMPLEMENTED, "Tile gradient: split shape of rank %d exceeds %d", ns,
                                      VG_MAX_DIMS);
        vg_output r = vg_reshape_c(g, dy[0], split, ns, NULL);
        vg_output s = vg_reduce_sum(g, r, axes, na, false, NULL);
        dx[0] = vg_reshape_c(g, s, xs.dims, xs.ndims, NULL);
        return vg_graph_status(g, NULL);
    }
    vg_dtype mt = vg_output_dtype(mult);
    vg_output pair[2] = {mult, vg_shape_op(g, x, mt, NULL)};
    int32_t t10[2] = {1, 0};
    int64_t minus1 = -1;
    vg_output split = vg_reshape_c(g, vg_transpose_c(g, vg_pack(g, pair, 2, 0, NULL), t10, 2, NULL), &minus1, 1, NULL);
    vg_output size = vg_size(g, split, NULL);
    char rel[1024];
    vg__array_name_push(g, "range", rel, sizeof rel);
    vg_output start = vg_const_i32(g, 0, "start"), delta = vg_const_i32(g, 2, "delta");
    vg_graph_pop_scope(g);
    vg_output axes = vg_range(g, start, size, delta, rel);
    dx[0] = vg_sum(g, vg_reshape(g, dy[0], split, NULL), axes, false, NULL);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* builders */

vg_output vg_transpose(vg_graph *g, vg_output x, vg_output perm, const char *name) {
    return vg__build_simple(g, "Transpose", name, "transpose", (vg_output[]){x, perm}, 2);
}

vg_output vg_transpose_c(vg_graph *g, vg_output x, const int32_t *perm, int n, const char *name) {
    char rel[1024];
    int64_t p[VG_MAX_DIMS];
    if (n < 0 || n > VG_MAX_DIMS) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Transpose: perm of %d entries, at most %d", n, VG_MAX_DIMS);
        return NONE;
    }
    for (int i = 0; i < n; i++) p[i] = perm[i];
    vg__array_name_push(g, name ? name : "transpose", rel, sizeof rel);
    vg_output pc = vg__array_const_ints(g, VG_INT32, p, n, false, "perm");
    vg_graph_pop_scope(g);
    return vg_transpose(g, x, pc, rel);
}

vg_output vg_concat(vg_graph *g, const vg_output *values, int n, vg_output axis, const char *name) {
    if (n == 1) return vg_identity(g, values[0], name ? name : "concat"); /* as tf.concat */
    vg_op_builder *b = vg_op_builder_new(g, "ConcatV2", name ? name : "concat");
    vg_op_builder_add_inputs(b, values, n);
    vg_op_builder_add_input(b, axis);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_concat_c(vg_graph *g, const vg_output *values, int n, int axis, const char *name) {
    if (n == 1) return vg_identity(g, values[0], name ? name : "concat");
    char rel[1024];
    int64_t a = axis;
    vg__array_name_push(g, name ? name : "concat", rel, sizeof rel);
    vg_output ac = vg__array_const_ints(g, VG_INT32, &a, 1, true, "axis");
    vg_graph_pop_scope(g);
    return vg_concat(g, values, n, ac, rel);
}

vg_output vg_slice(vg_graph *g, vg_output x, vg_output begin, vg_output size, const char *name) {
    return vg__build_simple(g, "Slice", name, "Slice", (vg_output[]){x, begin, size}, 3);
}

vg_output vg_slice_c(vg_graph *g, vg_output x, const int64_t *begin, const int64_t *size, int n, const char *name) {
    char rel[1024];
    bool fits = true;
    for (int i = 0; i < n; i++) fits = fits && begin[i] <= INT32_MAX && size[i] <= INT32_MAX;
    vg__array_name_push(g, name ? name : "Slice", rel, sizeof rel);
    vg_output b = vg__array_const_ints(g, fits ? VG_INT32 : VG_INT64, begin, n, false, "begin");
    vg_output s = vg__array_const_ints(g, fits ? VG_INT32 : VG_INT64, size, n, false, "size");
    vg_graph_pop_scope(g);
    return vg_slice(g, x, b, s, rel);
}

vg_output vg_pack(vg_graph *g, const vg_output *values, int n, int axis, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "Pack", name ? name : "stack");
    vg_op_builder_add_inputs(b, values, n);
    vg_op_builder_set_attr_int(b, "axis", axis);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_gather(vg_graph *g, vg_output params, vg_output indices, int axis, const char *name) {
    char rel[1024];
    int64_t a = axis;
    vg__array_name_push(g, name ? name : "GatherV2", rel, sizeof rel);
    vg_output ac = vg__array_const_ints(g, VG_INT32, &a, 1, true, "axis");
    vg_graph_pop_scope(g);
    return vg__build_simple(g, "GatherV2", rel, NULL, (vg_output[]){params, indices, ac}, 3);
}

vg_output vg_unsorted_segment_sum(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                  const char *name) {
    return vg__build_simple(g, "UnsortedSegmentSum", name, "UnsortedSegmentSum",
                            (vg_output[]){data, segment_ids, num_segments}, 3);
}

vg_output vg_one_hot(vg_graph *g, vg_output indices, int depth, float on, float off, const char *name) {
    char rel[1024];
    vg__array_name_push(g, name ? name : "one_hot", rel, sizeof rel);
    vg_output d = vg_const_i32(g, depth, "depth");
    vg_output onv = vg_const_f32(g, on, "on_value");
    vg_output offv = vg_const_f32(g, off, "off_value");
    vg_graph_pop_scope(g);
    vg_op_builder *b = vg__builder_with_inputs(g, "OneHot", rel, NULL, (vg_output[]){indices, d, onv, offv}, 4);
    vg_op_builder_set_attr_int(b, "axis", -1);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_tile(vg_graph *g, vg_output x, vg_output multiples, const char *name) {
    return vg__build_simple(g, "Tile", name, "Tile", (vg_output[]){x, multiples}, 2);
}

/* ------------------------------------------------------------------------ */
/* composite builders */

/* tf.boolean_mask(x, mask) for a 1-D mask, laid out as TF does under "boolean_mask/":
 * Reshape (x to [n, rest...]), Reshape_1 (mask to [-1]), Where, Squeeze, GatherV2. */
vg_output vg_boolean_mask(vg_graph *g, vg_output x, vg_output mask, const char *name) {
    vg_shape ms = vg_output_shape(mask);
    if (mask.op && ms.ndims != 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "boolean_mask: the mask must be 1-D, got rank %d", ms.ndims);
        return (vg_output){NULL, 0};
    }
    if (mask.op && vg_output_dtype(mask) != VG_BOOL) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "boolean_mask: the mask must be bool, got %s",
                           vg_dtype_name(vg_output_dtype(mask)));
        return (vg_output){NULL, 0};
    }
    vg_graph_push_scope(g, name ? name : "boolean_mask");
    vg_output t = vg_reshape(g, x, vg__array_shape_of(g, x, VG_INT32, "Shape"), "Reshape");
    int64_t minus1 = -1;
    vg_output m = vg_reshape_c(g, mask, &minus1, 1, "Reshape_1");
    vg_output w = vg_where(g, m, "Where");
    int32_t one = 1;
    vg_output idx = vg_squeeze(g, w, &one, 1, "Squeeze");
    vg_output out = vg_gather(g, t, idx, 0, "GatherV2");
    vg_graph_pop_scope(g);
    return out;
}

/* ------------------------------------------------------------------------ */
/* op table */

#define ND VG__OP_NOT_DIFFERENTIABLE
#define A2(n) op_shape_##n, op_kernel_##n

const vg__op_def vg__ops_array_index[] = {
    {"Transpose", 2, 2, 0, 0, A2(transpose), op_grad_transpose},
    {"ConcatV2", 3, -1, 0, 0, A2(concat), op_grad_concat},
    {"ConcatOffset", 3, -1, ND, 0, A2(concat_offset), NULL},
    {"Slice", 3, 3, 0, 0, A2(slice), op_grad_slice},
    {"Pad", 2, 2, 0, 0, A2(pad), op_grad_pad},
    {"Pack", 1, -1, 0, 0, A2(pack), op_grad_pack},
    {"Unpack", 1, 1, 0, 0, A2(unpack), op_grad_unpack},
    {"GatherV2", 3, 3, 0, 0, A2(gather), op_grad_gather},
    {"UnsortedSegmentSum", 3, 3, 0, 0, A2(segment_sum), op_grad_segment_sum},
    {"OneHot", 4, 4, ND, 0, A2(one_hot), NULL},
    {"Tile", 2, 2, 0, 0, A2(tile), op_grad_tile},
    {0},
};
