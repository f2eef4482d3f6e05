/*
 * array_ext_ops.c - the long tail of TF1 array ops (issue 31): ReverseSequence,
 * BroadcastTo, UnsortedSegmentMax / Min / Prod (shape functions, kernels, gradients as
 * TF 1.15's array_grad.py / math_grad.py, builders; table vg__ops_array_ext) and the
 * Python compositions built on ops: tf.sequence_mask, tf.norm,
 * tf.math.unsorted_segment_mean / sqrt_n and tf.boolean_mask with an N-D mask and an
 * axis (array_ops.py, linalg_ops.py, math_ops.py).
 */
#include "kernels/array/array_internal.h"
#include "vigil/ops_ext.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NONE ((vg_output){NULL, 0})

static char *dims_str(const int64_t *d, int n, char *buf) {
    vg_shape s = vg_shape_make(d, n);
    return vg_shape_str(&s, buf, 128);
}

/* ------------------------------------------------------------------------ */
/* ReverseSequence(input, seq_lengths; seq_dim, batch_dim) */

static vg_code shape_reverse_sequence(vg_op *op, vg_status *st) {
    int64_t sd, bd = 0;
    if (!vg_op_attr_int(op, "seq_dim", &sd))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ReverseSequence: missing attr 'seq_dim'");
    vg_op_attr_int(op, "batch_dim", &bd);
    vg__op_set_default_attr_int(op, "batch_dim", 0);
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK ||
        vg__array_index_attr(op, "Tlen", 1, "seq_lengths", st) != VG_OK)
        return st->code;
    if (bd < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid batch_dim %lld", (long long)bd);
    if (sd < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid seq_dim %lld", (long long)sd);
    vg_shape in = vg__op_input_shape(op, 0), ls = vg__op_input_shape(op, 1);
    if (vg__shape_need_rank(&ls, 1, "Shape must be rank 1 but is rank %d", st)) return st->code;
    if (in.ndims >= 0) {
        if (bd >= in.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "batch_dim must be < input rank: %lld vs. %d",
                                 (long long)bd, in.ndims);
        if (sd >= in.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "seq_dim must be < input rank: %lld vs. %d",
                                 (long long)sd, in.ndims);
        int64_t a = in.dims[bd], b = ls.ndims == 1 ? ls.dims[0] : -1;
        if (a >= 0 && b >= 0 && a != b)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimensions must be equal, but are %lld and %lld",
                                 (long long)a, (long long)b);
        if (a < 0) in.dims[bd] = b;
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), in);
}

typedef struct rsjob {
    const vg_tensor *x, *len;
    vg_tensor *o;
    int m, bd, sd;
    int64_t dims[VG_MAX_DIMS];
    int64_t inner; /* elements per row (the dims after m) */
    size_t esz;
    vg_code code;
    vg_status *st;
} rsjob;

/* Source row of output row r (dims 0..m). */
static int64_t rs_src_row(const rsjob *j, int64_t r) {
    int64_t idx[VG_MAX_DIMS], rem = r;
    for (int d = j->m; d >= 0; d--) {
        idx[d] = rem % j->dims[d];
        rem /= j->dims[d];
    }
    int64_t L = vg__int_at(j->len, idx[j->bd]);
    if (idx[j->sd] < L) idx[j->sd] = L - 1 - idx[j->sd];
    int64_t s = 0;
    for (int d = 0; d <= j->m; d++) s = s * j->dims[d] + idx[d];
    return s;
}

static void rs_rows(void *arg, int64_t lo, int64_t hi) {
    const rsjob *j = arg;
    const char *src = vg_tensor_data(j->x);
    char *dst = vg_tensor_data(j->o);
    size_t block = (size_t)j->inner * j->esz;
    for (int64_t r = lo; r < hi; r++)
        memcpy(dst + (size_t)r * block, src + (size_t)rs_src_row(j, r) * block, block);
}

static vg_code kernel_reverse_sequence(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *len = vg__kctx_input(ctx, 1), *o;
    int64_t sd = 0, bd = 0;
    vg_op_attr_int(vg__kctx_op(ctx), "seq_dim", &sd);
    vg_op_attr_int(vg__kctx_op(ctx), "batch_dim", &bd);
    int r = vg_tensor_ndims(x);
    if (vg_tensor_ndims(len) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "seq_lengths must be 1-dim, not %d", vg_tensor_ndims(len));
    if (bd == sd) return vg_status_set(st, VG_INVALID_ARGUMENT, "batch_dim == seq_dim == %lld", (long long)sd);
    if (sd >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "seq_dim must be < input rank ( %lld vs. %d)", (long long)sd, r);
    if (bd >= r)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "batch_dim must be < input rank ( %lld vs. %d)", (long long)bd,
                             r);
    if (vg_tensor_num_elements(len) != vg_tensor_dim(x, (int)bd))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Length of seq_lengths != input.dims(%lld), (%lld vs. %lld)",
                             (long long)bd, (long long)vg_tensor_num_elements(len),
                             (long long)vg_tensor_dim(x, (int)bd));
    for (int64_t d = 0; d < vg_tensor_num_elements(len); d++) {
        if (vg__int_at(len, d) < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "seq_lens(%lld) < 0", (long long)d);
        if (vg__int_at(len, d) > vg_tensor_dim(x, (int)sd))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "seq_lens(%lld) > input.dims(%lld)", (long long)d,
                                 (long long)sd);
    }
    vg_dtype dt = vg_tensor_dtype(x);
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x), r, &o);
    if (c != VG_OK || vg_tensor_num_elements(o) == 0) return c;
    rsjob j = {x, len, o, (int)(bd > sd ? bd : sd), (int)bd, (int)sd, {0}, 1, 0, VG_OK, st};
    int64_t rows = 1;
    for (int d = 0; d < r; d++) {
        if (d <= j.m) {
            j.dims[d] = vg_tensor_dim(x, d);
            rows *= j.dims[d];
        } else {
            j.inner *= vg_tensor_dim(x, d);
        }
    }
    if (dt == VG_STRING) {
        for (int64_t row = 0; row < rows && c == VG_OK; row++) {
            int64_t s = rs_src_row(&j, row);
            for (int64_t t = 0; t < j.inner && c == VG_OK; t++) {
                size_t n;
                const char *p = vg_tensor_string(x, s * j.inner + t, &n);
                c = vg_tensor_set_string(o, row * j.inner + t, p, n, st);
            }
        }
        return c;
    }
    j.esz = vg_dtype_size(dt);
    if (j.esz == 0) return vg_status_set(st, VG_UNIMPLEMENTED, "ReverseSequence of dtype %s", vg_dtype_name(dt));
    vg__kctx_parallel_for(ctx, rows, j.inner * 2 + 16, rs_rows, &j);
    return VG_OK;
}

/* array_grad.py _ReverseSequenceGrad: the same reversal of dy. */
static vg_code grad_reverse_sequence(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    int64_t sd = 0, bd = 0;
    vg_op_attr_int(op, "seq_dim", &sd);
    vg_op_attr_int(op, "batch_dim", &bd);
    dx[0] = vg_reverse_sequence(g, dy[0], vg_op_input(op, 1), (int)sd, (int)bd, NULL);
    dx[1] = NONE;
    return vg_graph_status(g, NULL);
}

vg_output vg_reverse_sequence(vg_graph *g, vg_output input, vg_output seq_lengths, int seq_axis, int batch_axis,
                              const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "ReverseSequence", name, "ReverseSequence", (vg_output[]){input, seq_lengths}, 2);
    vg_op_builder_set_attr_int(b, "seq_dim", seq_axis);
    vg_op_builder_set_attr_int(b, "batch_dim", batch_axis);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ------------------------------------------------------------------------ */
/* BroadcastTo(input, shape) */

static vg_code shape_broadcast_to(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK || vg__array_index_attr(op, "Tidx", 1, "shape", st) != VG_OK)
        return st->code;
    vg_shape ss = vg__op_input_shape(op, 1), in = vg__op_input_shape(op, 0);
    if (vg__shape_need_rank(&ss, 1, "Shape must be rank 1 but is rank %d", st)) return st->code;
    vg_shape out = vg__array_shape_value(op, 1);
    if (out.ndims >= 0 && in.ndims >= 0) {
        if (in.ndims > out.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be at most rank %d but is rank %d", out.ndims,
                                 in.ndims);
        for (int i = 0; i < in.ndims; i++) {
            int64_t a = in.dims[in.ndims - 1 - i], *b = &out.dims[out.ndims - 1 - i];
            if (a > 1) {
                if (*b >= 0 && *b != a)
                    return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimensions must be equal, but are %lld and %lld",
                                         (long long)a, (long long)*b);
                *b = a;
            }
        }
    }
    return vg__op_set_single_output(op, vg__op_input_dtype(op, 0), out);
}

typedef struct btjob {
    const char *src;
    char *dst;
    int last;
    int64_t odims[VG_MAX_DIMS], istr[VG_MAX_DIMS];
    size_t block;
} btjob;

static void bt_rows(void *arg, int64_t lo, int64_t hi) {
    const btjob *j = arg;
    for (int64_t r = lo; r < hi; r++) {
        int64_t rem = r, off = 0;
        for (int d = j->last; d >= 0; d--) {
            off += (rem % j->odims[d]) * j->istr[d];
            rem /= j->odims[d];
        }
        memcpy(j->dst + (size_t)r * j->block, j->src + (size_t)off * j->block, j->block);
    }
}

static vg_code kernel_broadcast_to(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *sh = vg__kctx_input(ctx, 1), *o;
    char b1[128], b2[128];
    if (vg_tensor_ndims(sh) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape must be a vector, got rank %d", vg_tensor_ndims(sh));
    int n = (int)vg_tensor_num_elements(sh), r = vg_tensor_ndims(x);
    if (n > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "BroadcastTo: shape of rank %d exceeds %d", n, VG_MAX_DIMS);
    int64_t od[VG_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        od[i] = vg__int_at(sh, i);
        if (od[i] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Dimension %lld must be >= 0", (long long)od[i]);
    }
    if (r > n)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Rank of input (%d) must be no greater than rank of output shape (%d).", r, n);
    /* aligned input dims (1 for the missing leading ones) and broadcast checks */
    int64_t id[VG_MAX_DIMS];
    for (int i = 0; i < n; i++) id[i] = i < n - r ? 1 : vg_tensor_dim(x, i - (n - r));
    for (int i = 0; i < n; i++) {
        if (id[i] == od[i] || id[i] == 1) continue;
        if (od[i] == 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Unable to broadcast tensor of shape %s to tensor of shape %s",
                                 vg__tshape_str(x, b1, sizeof b1), dims_str(od, n, b2));
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                             vg__tshape_str(x, b1, sizeof b1), dims_str(od, n, b2));
    }
    vg_dtype dt = vg_tensor_dtype(x);
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, od, n, &o);
    if (c != VG_OK || vg_tensor_num_elements(o) == 0) return c;
    btjob j = {vg_tensor_data(x), vg_tensor_data(o), -1, {0}, {0}, 0};
    for (int i = 0; i < n; i++)
        if (id[i] != od[i]) j.last = i;
    int64_t inner = 1, acc = 1;
    for (int i = j.last + 1; i < n; i++) inner *= od[i];
    for (int i = n - 1; i >= 0; i--) {
        if (i <= j.last) j.istr[i] = id[i] == 1 ? 0 : acc;
        if (i <= j.last) j.odims[i] = od[i];
        acc *= i > j.last ? 1 : id[i];
    }
    int64_t rows = 1;
    for (int i = 0; i <= j.last; i++) rows *= od[i];
    if (dt == VG_STRING) {
        for (int64_t row = 0; row < rows && c == VG_OK; row++) {
            int64_t rem = row, off = 0;
            for (int d = j.last; d >= 0; d--) {
                off += (rem % j.odims[d]) * j.istr[d];
                rem /= j.odims[d];
            }
            for (int64_t t = 0; t < inner && c == VG_OK; t++) {
                size_t len;
                const char *p = vg_tensor_string(x, off * inner + t, &len);
                c = vg_tensor_set_string(o, row * inner + t, p, len, st);
            }
        }
        return c;
    }
    size_t esz = vg_dtype_size(dt);
    if (esz == 0) return vg_status_set(st, VG_UNIMPLEMENTED, "BroadcastTo of dtype %s", vg_dtype_name(dt));
    j.block = (size_t)inner * esz;
    vg__kctx_parallel_for(ctx, rows, inner + 16, bt_rows, &j);
    return VG_OK;
}

/* array_grad.py _BroadcastToGrad: sum dy over the axes BroadcastGradientArgs(shape,
 * shape(input)) names (keepdims), reshaped to the input's shape. */
static vg_code grad_broadcast_to(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), shp = vg_op_input(op, 1);
    vg_output xs = vg_shape_op(g, x, vg_output_dtype(shp), NULL);
    vg_op *bga = vg_broadcast_gradient_args(g, shp, xs, NULL);
    dx[1] = NONE;
    if (!bga) return vg_graph_status(g, NULL);
    vg_output s = vg_sum(g, dy[0], vg_out(bga, 1), true, NULL);
    dx[0] = vg_reshape(g, s, xs, NULL);
    return vg_graph_status(g, NULL);
}

vg_output vg_broadcast_to(vg_graph *g, vg_output input, vg_output shape, const char *name) {
    return vg__build_simple(g, "BroadcastTo", name, "BroadcastTo", (vg_output[]){input, shape}, 2);
}

vg_output vg_broadcast_to_c(vg_graph *g, vg_output input, const int64_t *dims, int ndims, const char *name) {
    if (ndims < 0 || ndims > VG_MAX_DIMS || (ndims > 0 && !dims)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "broadcast_to: bad shape (rank %d)", ndims);
        return NONE;
    }
    char rel[1024];
    vg__array_name_push(g, name ? name : "BroadcastTo", rel, sizeof rel);
    vg_output s = vg__array_const_ints(g, VG_INT32, dims, ndims, false, "shape");
    vg_graph_pop_scope(g);
    return vg_broadcast_to(g, input, s, rel);
}

/* ------------------------------------------------------------------------ */
/* Bitcast(input; T, type): the same bytes read as another dtype (bitcast_op.cc, the
 * shape function of array_ops.cc). Equal sizes keep the shape; a smaller output type
 * appends a dimension of in/out; a larger one needs a last dimension of out/in, which it
 * removes. No gradient (TF registers none). The bytes are copied (TF aliases them). */

static vg_code bitcast_types(const vg_op *op, vg_dtype in, vg_dtype *out, size_t *isz, size_t *osz, vg_status *st) {
    if (!vg_op_attr_type_(op, "type", out)) return vg_status_set(st, VG_INVALID_ARGUMENT, "Bitcast: attr 'type' is required");
    vg_dtype ts[2] = {in, *out};
    const char *an[2] = {"T", "type"};
    for (int k = 0; k < 2; k++)
        if (ts[k] == VG_BOOL)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Value for attr '%s' of bool is not in the list of allowed values (Bitcast %s)", an[k],
                                 vg_op_name(op));
    *isz = vg_dtype_size(in);
    *osz = vg_dtype_size(*out);
    if (*isz == 0 || *osz == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Cannot bitcast types %s to %s because one of the type sizes is zero.", vg_dtype_name(in),
                             vg_dtype_name(*out));
    return VG_OK;
}

static vg_code shape_bitcast(vg_op *op, vg_status *st) {
    if (vg__array_type_attr(op, "T", 0, st) != VG_OK) return st->code;
    vg_dtype in = vg__op_input_dtype(op, 0), out;
    size_t isz, osz;
    if (bitcast_types(op, in, &out, &isz, &osz, st) != VG_OK) return st->code;
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims >= 0) {
        if (isz > osz) {
            if (s.ndims >= VG_MAX_DIMS)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Bitcast: the output would have more than %d dimensions",
                                     VG_MAX_DIMS);
            s.dims[s.ndims++] = (int64_t)(isz / osz);
        } else if (isz < osz) {
            if (s.ndims < 1)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be at least rank 1 but is rank 0");
            int64_t last = s.dims[s.ndims - 1];
            if (last >= 0 && last != (int64_t)(osz / isz))
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Cannot bitcast due to shape. %lld does not match %lld",
                                     (long long)last, (long long)(osz / isz));
            s.ndims--;
        }
    }
    return vg__op_set_single_output(op, out, s);
}

static vg_code kernel_bitcast(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0), *o;
    vg_dtype out;
    size_t isz, osz;
    if (bitcast_types(vg__kctx_op(ctx), vg_tensor_dtype(x), &out, &isz, &osz, st) != VG_OK) return st->code;
    int nd = vg_tensor_ndims(x);
    int64_t dims[VG_MAX_DIMS + 1];
    for (int i = 0; i < nd; i++) dims[i] = vg_tensor_dim(x, i);
    if (isz > osz) {
        if (nd >= VG_MAX_DIMS)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Bitcast: the output would have more than %d dimensions",
                                 VG_MAX_DIMS);
        dims[nd++] = (int64_t)(isz / osz);
    } else if (isz < osz) {
        if (nd < 1 || dims[nd - 1] != (int64_t)(osz / isz)) {
            char b[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Cannot bitcast from %s to %s: shape %s",
                                 vg_dtype_name(vg_tensor_dtype(x)), vg_dtype_name(out), vg__tshape_str(x, b, sizeof b));
        }
        nd--;
    }
    vg_code c = vg__kctx_alloc_output(ctx, 0, out, dims, nd, &o);
    if (c != VG_OK) return c;
    size_t n = (size_t)vg_tensor_num_elements(x) * isz;
    if (n) memcpy(vg_tensor_data(o), vg_tensor_data(x), n);
    return VG_OK;
}

vg_output vg_bitcast(vg_graph *g, vg_output input, vg_dtype type, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Bitcast", name, "Bitcast", (vg_output[]){input}, 1);
    vg_op_builder_set_attr_type(b, "type", type);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ------------------------------------------------------------------------ */
/* UnsortedSegmentMax / Min / Prod */

typedef enum { SEG_MAX, SEG_MIN, SEG_PROD } segmode;

static vg_code shape_segment_reduce(vg_op *op, vg_status *st) { return vg__array_segment_shape(op, true, st); }

typedef struct segrjob {
    const vg_tensor *ids;
    const char *x;
    char *o;
    int64_t nids, num, inner, units;
    vg_dtype dt;
    segmode mode;
} segrjob;

/* Each of `units` owns a range of segments: initialises its rows (lowest / highest /
 * 1), then folds in the rows of data whose id falls in the range, in row order. */
#define SEGR_ROWS(ctype, lowest, highest)                                                 \
    do {                                                                                  \
        const ctype *x = (const ctype *)(const void *)j->x;                               \
        ctype *o = (ctype *)(void *)j->o;                                                 \
        ctype init = j->mode == SEG_MAX ? (lowest) : j->mode == SEG_MIN ? (highest) : 1;  \
        for (int64_t t = lo * inner; t < hi * inner; t++) o[t] = init;                    \
        for (int64_t k = 0; k < j->nids; k++) {                                           \
            int64_t id = i64 ? ((const int64_t *)ip)[k] : ((const int32_t *)ip)[k];       \
            if (id < lo || id >= hi) continue;                                            \
            ctype *dst = o + id * inner;                                                  \
            const ctype *src = x + k * inner;                                             \
            if (j->mode == SEG_MAX)                                                       \
                for (int64_t t = 0; t < inner; t++) dst[t] = src[t] > dst[t] ? src[t] : dst[t]; \
            else if (j->mode == SEG_MIN)                                                  \
                for (int64_t t = 0; t < inner; t++) dst[t] = src[t] < dst[t] ? src[t] : dst[t]; \
            else                                                                          \
                for (int64_t t = 0; t < inner; t++) dst[t] *= src[t];                     \
        }                                                                                 \
    } while (0)

static void segr_units(void *arg, int64_t u0, int64_t u1) {
    const segrjob *j = arg;
    int64_t inner = j->inner, lo = j->num * u0 / j->units, hi = j->num * u1 / j->units;
    const void *ip = vg_tensor_data(j->ids);
    bool i64 = vg_tensor_dtype(j->ids) == VG_INT64;
    switch (j->dt) {
    case VG_FLOAT: SEGR_ROWS(float, -FLT_MAX, FLT_MAX); break;
    case VG_DOUBLE: SEGR_ROWS(double, -DBL_MAX, DBL_MAX); break;
    case VG_INT32: SEGR_ROWS(int32_t, INT32_MIN, INT32_MAX); break;
    default: SEGR_ROWS(int64_t, INT64_MIN, INT64_MAX); break;
    }
}

static vg_code segment_reduce(vg__kctx *ctx, segmode mode) {
    vg__array_segment sg;
    vg_code c = vg__array_segment_prepare(ctx, true, &sg);
    if (c != VG_OK || sg.units == 0) return c;
    segrjob j = {sg.ids,
                 vg_tensor_data(sg.data),
                 vg_tensor_data(sg.out),
                 sg.nids,
                 sg.num,
                 sg.inner,
                 sg.units,
                 vg_tensor_dtype(sg.data),
                 mode};
    if (sg.units == 1)
        segr_units(&j, 0, 1);
    else
        vg__kctx_parallel_for(ctx, sg.units, INT64_C(1) << 20, segr_units, &j);
    return VG_OK;
}

static vg_code kernel_segment_max(vg__kctx *ctx) { return segment_reduce(ctx, SEG_MAX); }
static vg_code kernel_segment_min(vg__kctx *ctx) { return segment_reduce(ctx, SEG_MIN); }
static vg_code kernel_segment_prod(vg__kctx *ctx) { return segment_reduce(ctx, SEG_PROD); }

static vg_output segment_op(vg_graph *g, const char *type, vg_output data, vg_output ids, vg_output num,
                            const char *name) {
    return vg__build_simple(g, type, name, type, (vg_output[]){data, ids, num}, 3);
}

vg_output vg_unsorted_segment_max(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                  const char *name) {
    return segment_op(g, "UnsortedSegmentMax", data, segment_ids, num_segments, name);
}
vg_output vg_unsorted_segment_min(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                  const char *name) {
    return segment_op(g, "UnsortedSegmentMin", data, segment_ids, num_segments, name);
}
vg_output vg_unsorted_segment_prod(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                   const char *name) {
    return segment_op(g, "UnsortedSegmentProd", data, segment_ids, num_segments, name);
}

/* math_grad.py _GatherDropNegatives: gather params at max(ids, 0) and zero the slices
 * of negative ids. *zci / *is_pos are computed when their op is NULL (and returned). */
static vg_output gather_drop_negatives(vg_graph *g, vg_output params, vg_output ids, vg_output *zci,
                                       vg_output *is_pos) {
    if (!zci->op) *zci = vg_maximum(g, ids, vg_zeros_like(g, ids, NULL), NULL);
    vg_output gathered = vg_gather(g, params, *zci, 0, NULL);
    if (!is_pos->op) {
        vg_output p = vg_greater_equal(g, ids, vg_zeros_like(g, ids, NULL), NULL);
        vg_output ps = vg_shape_op(g, p, VG_INT32, NULL);
        vg_output extra = vg_sub(g, vg_rank(g, gathered, NULL), vg_rank(g, p, NULL), NULL);
        vg_output ones = vg_fill(g, vg_pack(g, &extra, 1, 0, NULL), vg_const_i32(g, 1, NULL), NULL);
        vg_output parts[2] = {ps, ones};
        p = vg_reshape(g, p, vg_concat_c(g, parts, 2, 0, NULL), NULL);
        *is_pos = vg_logical_and(g, p, vg_ones_like_dtype(g, gathered, VG_BOOL, NULL), NULL);
    }
    return vg_select(g, *is_pos, gathered, vg_zeros_like(g, gathered, NULL), NULL);
}

/* math_grad.py _UnsortedSegmentMinOrMaxGrad: dy split evenly among the elements equal
 * to their segment's result. */
static vg_code grad_segment_min_max(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output data = vg_op_input(op, 0), ids = vg_op_input(op, 1), num = vg_op_input(op, 2);
    vg_output zci = NONE, is_pos = NONE;
    vg_output gathered = gather_drop_negatives(g, vg_out(op, 0), ids, &zci, &is_pos);
    vg_output sel = vg_logical_and(g, vg_equal(g, data, gathered, NULL), is_pos, NULL);
    vg_output nsel = vg_unsorted_segment_sum(g, vg_cast(g, sel, vg_output_dtype(dy[0]), NULL), ids, num, NULL);
    vg_output w = vg_div(g, dy[0], nsel, NULL);
    vg_output gg = gather_drop_negatives(g, w, NONE, &zci, &is_pos);
    dx[0] = vg_select(g, sel, gg, vg_zeros_like(g, gg, NULL), NULL);
    dx[1] = dx[2] = NONE;
    return vg_graph_status(g, NULL);
}

/* math_grad.py _UnsortedSegmentProdGrad: prod / x, or the product of the other
 * elements where x is the segment's only zero; 0 for segments with two zeros. */
static vg_code grad_segment_prod(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output data = vg_op_input(op, 0), ids = vg_op_input(op, 1), num = vg_op_input(op, 2);
    vg_output is_zero = vg_equal(g, data, vg_zeros_like(g, data, NULL), NULL);
    vg_output nz = vg_unsorted_segment_sum(g, vg_cast(g, is_zero, VG_INT32, NULL), ids, num, NULL);
    vg_output grad = vg_select(g, vg_greater(g, nz, vg_const_i32(g, 1, NULL), NULL), vg_zeros_like(g, dy[0], NULL),
                               dy[0], NULL);
    vg_output non_zero = vg_select(g, is_zero, vg_ones_like(g, data, NULL), data, NULL);
    vg_output nzp = vg_unsorted_segment_prod(g, non_zero, ids, num, NULL);
    vg_output zci = vg_maximum(g, ids, vg_zeros_like(g, ids, NULL), NULL);
    vg_output gp = vg_gather(g, vg_out(op, 0), zci, 0, NULL);
    vg_output gnzp = vg_gather(g, nzp, zci, 0, NULL);
    vg_output by_el = vg_div(g, gp, data, NULL);
    vg_output partial = vg_select(g, is_zero, gnzp, by_el, NULL);
    vg_output is_pos = NONE;
    vg_output gg = gather_drop_negatives(g, grad, ids, &zci, &is_pos);
    dx[0] = vg_mul(g, gg, partial, NULL);
    dx[1] = dx[2] = NONE;
    return vg_graph_status(g, NULL);
}

/* math_ops.py _unsorted_segment_N: the segment sizes (at least 1), shaped to broadcast
 * over the segment results. */
static vg_output segment_n(vg_graph *g, vg_output data, vg_output ids, vg_output num) {
    vg_shape ds = vg_output_shape(data), is = vg_output_shape(ids);
    if (ds.ndims < 0 || is.ndims < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "unsorted_segment_mean/sqrt_n: data and segment_ids need a known rank");
        return NONE;
    }
    vg_dtype dt = vg_output_dtype(data);
    vg_output ones = vg_fill(g, vg_shape_op(g, ids, VG_INT32, NULL), vg_const_fill(g, dt, NULL, 0, 1, NULL), "ones");
    vg_output n = vg_unsorted_segment_sum(g, ones, ids, num, NULL);
    int64_t extra = ds.ndims - is.ndims, onesv[VG_MAX_DIMS], one = 1;
    for (int i = 0; i < extra; i++) onesv[i] = 1;
    vg_output nv = vg_reshape_c(g, num, &one, 1, NULL);
    if (vg_output_dtype(num) != VG_INT32) nv = vg_cast(g, nv, VG_INT32, NULL);
    vg_output parts[2] = {nv, vg__array_const_ints(g, VG_INT32, onesv, (int)extra, false, "ones_1")};
    n = vg_reshape(g, n, vg_concat_c(g, parts, 2, 0, NULL), NULL);
    return vg_maximum(g, n, vg_const_fill(g, dt, NULL, 0, 1, NULL), NULL);
}

static vg_output segment_mean_or_sqrt(vg_graph *g, vg_output data, vg_output ids, vg_output num, bool sqrt_n,
                                      const char *name, const char *scope) {
    vg_dtype dt = vg_output_dtype(data);
    if (data.op && dt != VG_FLOAT && dt != VG_DOUBLE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: data must be float or double, got %s", scope,
                           vg_dtype_name(dt));
        return NONE;
    }
    vg_graph_push_scope(g, name ? name : scope);
    vg_output n = segment_n(g, data, ids, num);
    vg_output summed = vg_unsorted_segment_sum(g, data, ids, num, NULL);
    vg_output out = n.op ? vg_div(g, summed, sqrt_n ? vg_sqrt(g, n, NULL) : n, "truediv") : NONE;
    vg_graph_pop_scope(g);
    return out;
}

vg_output vg_unsorted_segment_mean(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                   const char *name) {
    return segment_mean_or_sqrt(g, data, segment_ids, num_segments, false, name, "UnsortedSegmentMean");
}
vg_output vg_unsorted_segment_sqrt_n(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                     const char *name) {
    return segment_mean_or_sqrt(g, data, segment_ids, num_segments, true, name, "UnsortedSegmentSqrtN");
}

/* ------------------------------------------------------------------------ */
/* tf.sequence_mask (array_ops.py): Range(0, maxlen, 1) < Cast(ExpandDims(lengths, -1)) */

vg_output vg_sequence_mask(vg_graph *g, vg_output lengths, vg_output maxlen, vg_dtype dtype, const char *name) {
    if (maxlen.op) {
        vg_shape ms = vg_output_shape(maxlen);
        if (ms.ndims > 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "maxlen must be scalar for sequence_mask");
            return NONE;
        }
    }
    vg_graph_push_scope(g, name ? name : "SequenceMask");
    if (!maxlen.op) {
        vg_output m = vg_reduce_max(g, lengths, NULL, -1, false, "Max");
        maxlen = vg_maximum(g, vg_const_fill(g, vg_output_dtype(m), NULL, 0, 0, "Const_1"), m, "Maximum");
    }
    vg_dtype mt = vg_output_dtype(maxlen);
    vg_output row = vg_range(g, vg_const_fill(g, mt, NULL, 0, 0, "Const"), maxlen,
                             vg_const_fill(g, mt, NULL, 0, 1, "Const_2"), "Range");
    vg_output matrix = vg_expand_dims(g, lengths, -1, "ExpandDims");
    if (vg_output_dtype(lengths) != mt) matrix = vg_cast(g, matrix, mt, "Cast");
    vg_output out = vg_less(g, row, matrix, "Less");
    if (dtype != VG_DTYPE_INVALID && dtype != VG_BOOL) out = vg_cast(g, out, dtype, "Cast_1");
    vg_graph_pop_scope(g);
    return out;
}

/* ------------------------------------------------------------------------ */
/* tf.norm (linalg_ops.py) */

vg_output vg_norm(vg_graph *g, vg_output x, double ord, const int32_t *axes, int naxes, bool keepdims,
                  const char *name) {
    bool matrix = naxes == 2;
    if (naxes < 0 || naxes > 2 || (naxes > 0 && !axes) || (matrix && axes[0] == axes[1])) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "'axis' must be None, an integer, or a tuple of 2 unique integers");
        return NONE;
    }
    if (matrix && !(ord == VG_NORM_EUCLIDEAN || ord == 1 || ord == 2 || (isinf(ord) && ord > 0))) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, 2, inf], got %g", ord);
        return NONE;
    }
    if (!matrix && !(ord == VG_NORM_EUCLIDEAN || ord > 0)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "'ord' must be a supported vector norm, got %g", ord);
        return NONE;
    }
    if (matrix && ord == 2) {
        vg_graph_set_error(g, VG_UNIMPLEMENTED, "norm: the matrix 2-norm (ord=2 over two axes: an SVD) is not "
                           "supported; ord VG_NORM_EUCLIDEAN gives the Frobenius norm");
        return NONE;
    }
    vg_graph_push_scope(g, name ? name : "norm");
    vg_output r;
    if (ord == VG_NORM_EUCLIDEAN || ord == 2) {
        r = vg_sqrt(g, vg_reduce_sum(g, vg_mul(g, x, x, "mul"), axes, naxes ? naxes : -1, true, "Sum"), "Sqrt");
    } else {
        r = vg_abs(g, x, "Abs");
        if (ord == 1) {
            r = vg_reduce_sum(g, r, axes, naxes ? 1 : -1, true, "Sum");
            if (matrix) r = vg_reduce_max(g, r, &axes[1], 1, true, "Max");
        } else if (isinf(ord)) {
            if (matrix) r = vg_reduce_sum(g, r, &axes[1], 1, true, "Sum");
            r = vg_reduce_max(g, r, axes, naxes ? 1 : -1, true, "Max");
        } else {
            vg_dtype dt = vg_output_dtype(x);
            r = vg_pow(g, vg_reduce_sum(g, vg_pow(g, r, vg_const_fill(g, dt, NULL, 0, ord, "Pow/y"), "Pow"), axes,
                                        naxes ? naxes : -1, true, "Sum"),
                       vg_const_fill(g, dt, NULL, 0, 1.0 / ord, "Pow_1/y"), "Pow_1");
        }
    }
    if (!keepdims) r = vg_squeeze(g, r, axes, naxes, "Squeeze");
    vg_graph_pop_scope(g);
    return r;
}

/* ------------------------------------------------------------------------ */
/* tf.boolean_mask(tensor, mask, axis) with an N-D mask (array_ops.py) */

vg_output vg_boolean_mask_nd(vg_graph *g, vg_output tensor, vg_output mask, int axis, const char *name) {
    vg_shape ms = vg_output_shape(mask), ts = vg_output_shape(tensor);
    if (!tensor.op || !mask.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "boolean_mask: NULL tensor or mask");
        return NONE;
    }
    if (ms.ndims == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "mask cannot be scalar.");
        return NONE;
    }
    if (ms.ndims < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "Number of mask dimensions must be specified, even if some dimensions are None.  E.g. "
                           "shape=[None] is ok, but shape=None is not.");
        return NONE;
    }
    if (vg_output_dtype(mask) != VG_BOOL) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "boolean_mask: the mask must be bool, got %s",
                           vg_dtype_name(vg_output_dtype(mask)));
        return NONE;
    }
    if (axis < 0 || (ts.ndims >= 0 && axis + ms.ndims > ts.ndims)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "boolean_mask: axis %d with a mask of rank %d does not fit a tensor of rank %d", axis,
                           ms.ndims, ts.ndims);
        return NONE;
    }
    if (ts.ndims >= 0) {
        bool ok = true;
        for (int i = 0; i < ms.ndims; i++) {
            int64_t a = ts.dims[axis + i], b = ms.dims[i];
            if (a >= 0 && b >= 0 && a != b) ok = false;
        }
        if (!ok) {
            char b1[128], b2[128];
            vg_shape part = vg_shape_make(ts.dims + axis, ms.ndims);
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Shapes %s and %s are incompatible",
                               vg__py_shape_str(&part, b1, sizeof b1), vg__py_shape_str(&ms, b2, sizeof b2));
            return NONE;
        }
    }
    int n = ms.ndims;
    vg_graph_push_scope(g, name ? name : "boolean_mask");
    vg_output shp = vg_shape_op(g, tensor, VG_INT32, "Shape");
    int32_t b0 = axis, e0 = axis + n;
    vg_strided_slice_masks head_m = {1, 0, 0, 0, 0}, tail_m = {0, 1, 0, 0, 0}; /* [:axis], [axis+n:] */
    vg_output mid = vg_strided_slice_c(g, shp, &b0, &e0, NULL, 1, NULL, "strided_slice");
    int32_t zero = 0;
    vg_output lead = vg_prod(g, mid, vg_const_i32_vec(g, &zero, 1, "Prod/reduction_indices"), false, "Prod");
    vg_output shp1 = vg_shape_op(g, tensor, VG_INT32, "Shape_1");
    vg_output head = vg_strided_slice_c(g, shp1, &zero, &b0, NULL, 1, &head_m, "strided_slice_1");
    vg_output shp2 = vg_shape_op(g, tensor, VG_INT32, "Shape_2");
    vg_output tail = vg_strided_slice_c(g, shp2, &e0, &zero, NULL, 1, &tail_m, "strided_slice_2");
    vg_output parts[3] = {head, vg_pack(g, &lead, 1, 0, NULL), tail};
    vg_output t = vg_reshape(g, tensor, vg_concat_c(g, parts, 3, 0, "concat"), "Reshape");
    if (ts.ndims >= 0) {
        int64_t d[VG_MAX_DIMS], first = 1;
        int k = 0;
        for (int i = 0; i < axis; i++) d[k++] = ts.dims[i];
        for (int i = 0; i < n; i++) first = (first < 0 || ts.dims[axis + i] < 0) ? -1 : first * ts.dims[axis + i];
        d[k++] = first;
        for (int i = axis + n; i < ts.ndims; i++) d[k++] = ts.dims[i];
        vg_status sst;
        if (t.op && vg_set_shape(t, d, k, &sst) != VG_OK) vg_graph_set_error(g, sst.code, "%s", sst.msg);
    }
    int64_t minus1 = -1;
    vg_output m = vg_reshape_c(g, mask, &minus1, 1, "Reshape_1");
    vg_output w = vg_where(g, m, "Where");
    int32_t one = 1;
    vg_output idx = vg_squeeze(g, w, &one, 1, "Squeeze");
    vg_output out = vg_gather(g, t, idx, axis, "GatherV2");
    vg_graph_pop_scope(g);
    return out;
}

/* ------------------------------------------------------------------------ */
/* op table */

const vg__op_def vg__ops_array_ext[] = {
    {"ReverseSequence", 2, 2, 0, 0, shape_reverse_sequence, kernel_reverse_sequence, grad_reverse_sequence},
    {"BroadcastTo", 2, 2, 0, 0, shape_broadcast_to, kernel_broadcast_to, grad_broadcast_to},
    {"UnsortedSegmentMax", 3, 3, 0, 0, shape_segment_reduce, kernel_segment_max, grad_segment_min_max},
    {"UnsortedSegmentMin", 3, 3, 0, 0, shape_segment_reduce, kernel_segment_min, grad_segment_min_max},
    {"UnsortedSegmentProd", 3, 3, 0, 0, shape_segment_reduce, kernel_segment_prod, grad_segment_prod},
    {"Bitcast", 1, 1, 0, 0, shape_bitcast, kernel_bitcast, NULL},
    {0},
};
