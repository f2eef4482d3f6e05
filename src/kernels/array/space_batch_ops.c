/*
 * space_batch_ops.c - SpaceToBatchND and BatchToSpaceND (TF 1.15
 * spacetobatch_op.cc / batchtospace_op.cc), any dtype, M spatial dimensions after the
 * batch: input [B, S1..SM, R...], block_shape [M], paddings / crops [M, 2].
 *   SpaceToBatchND: pad each Si by paddings[i] (zeros), then
 *     out[(k * B) + n, y1..yM, r] = padded[n, y1*b1 + k1, ..., yM*bM + kM, r]
 *     with k the row-major block offset (k1..kM); shape [B*prod(b), (Si+p)/bi, R...].
 *   BatchToSpaceND: the inverse, then crops removed.
 * Gradients (array_grad.py): each is the other with the same block shape and the
 * paddings / crops; none for block_shape, paddings, crops. The layers use them for
 * dilated convolutions, as TF 1.15's nn_ops.Convolution does.
 */
#include "kernels/ew_internal.h"
#include "vigil/nn_ext.h"

#define SB_MAX 6

/* Reads block_shape (input 1) and paddings/crops (input 2) from tensors. */
static vg_code read_spec(vg_status *st, const vg_tensor *bt, const vg_tensor *pt, int *m, int64_t b[SB_MAX],
                         int64_t p[SB_MAX][2]) {
    if (!bt || !pt) return vg_status_set(st, VG_INVALID_ARGUMENT, "block_shape and paddings are required");
    if (vg_tensor_ndims(bt) != 1 || (vg_tensor_dtype(bt) != VG_INT32 && vg_tensor_dtype(bt) != VG_INT64))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "block_shape must be a 1-D int32/int64 tensor");
    *m = (int)vg_tensor_dim(bt, 0);
    if (*m < 1 || *m > SB_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "block_shape must have 1 to %d elements", SB_MAX);
    if (vg_tensor_ndims(pt) != 2 || vg_tensor_dim(pt, 0) != *m || vg_tensor_dim(pt, 1) != 2 ||
        (vg_tensor_dtype(pt) != VG_INT32 && vg_tensor_dtype(pt) != VG_INT64))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "paddings/crops must be an int32/int64 tensor of shape [%d, 2]", *m);
    for (int i = 0; i < *m; i++) {
        b[i] = vg_tensor_dtype(bt) == VG_INT32 ? ((const int32_t *)vg_tensor_data(bt))[i] : ((const int64_t *)vg_tensor_data(bt))[i];
        for (int j = 0; j < 2; j++)
            p[i][j] = vg_tensor_dtype(pt) == VG_INT32 ? ((const int32_t *)vg_tensor_data(pt))[i * 2 + j]
                                                      : ((const int64_t *)vg_tensor_data(pt))[i * 2 + j];
        if (b[i] < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "block_shape must be positive, got %lld", (long long)b[i]);
        if (p[i][0] < 0 || p[i][1] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "paddings/crops must be non-negative");
    }
    return VG_OK;
}

/* Output dims from input dims; to_batch selects the direction. */
static vg_code out_dims(vg_status *st, bool to_batch, const int64_t *in, int nd, int m, const int64_t *b,
                        int64_t p[][2], int64_t *out) {
    if (nd < m + 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "input rank %d must be at least %d", nd, m + 1);
    int64_t prod = 1;
    for (int i = 0; i < m; i++)
        if (__builtin_mul_overflow(prod, b[i], &prod))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "the product of block_shape overflows int64");
    for (int i = 0; i < nd; i++) out[i] = in[i];
    if (in[0] < 0) out[0] = -1;
    else if (to_batch) {
        if (__builtin_mul_overflow(in[0], prod, &out[0]))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "batch %lld times the block size %lld overflows int64",
                                 (long long)in[0], (long long)prod);
    }
    else {
        if (in[0] % prod) return vg_status_set(st, VG_INVALID_ARGUMENT, "Input batch dimension (%lld) is not divisible by product of block sizes (%lld)", (long long)in[0], (long long)prod);
        out[0] = in[0] / prod;
    }
    for (int i = 0; i < m; i++) {
        int64_t s = in[1 + i];
        if (s < 0) { out[1 + i] = -1; continue; }
        if (to_batch) {
            int64_t padded;
            if (__builtin_add_overflow(s, p[i][0], &padded) || __builtin_add_overflow(padded, p[i][1], &padded))
                return vg_status_set(st, VG_INVALID_ARGUMENT, "padded_shape[%d] overflows int64", i);
            if (padded % b[i])
                return vg_status_set(st, VG_INVALID_ARGUMENT, "padded_shape[%d]=%lld is not divisible by block_shape[%d]=%lld", i, (long long)padded, i, (long long)b[i]);
            out[1 + i] = padded / b[i];
        } else {
            int64_t full;
            if (__builtin_mul_overflow(s, b[i], &full))
                return vg_status_set(st, VG_INVALID_ARGUMENT, "input dimension %d times block_shape overflows int64", 1 + i);
            if (__builtin_sub_overflow(full, p[i][0], &full) || __builtin_sub_overflow(full, p[i][1], &full) ||
                full < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "crops are larger than the output dimension %d", i);
            out[1 + i] = full;
        }
    }
    return VG_OK;
}

static vg_code sb_shape(vg_op *op, bool to_batch, vg_status *st) {
    vg_shape in = vg__op_input_shape(op, 0);
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_num_outputs(op, 1);
    const vg_tensor *bt = vg__op_const_input(op, 1), *pt = vg__op_const_input(op, 2);
    if (!bt || !pt || in.ndims < 0) { /* rank known at most */
        vg_shape s = in;
        for (int i = 0; i < s.ndims; i++) s.dims[i] = -1;
        vg__op_set_output(op, 0, dt, s);
        return VG_OK;
    }
    int m;
    int64_t b[SB_MAX], p[SB_MAX][2], out[VG_MAX_DIMS];
    if (read_spec(st, bt, pt, &m, b, p)) return st->code;
    if (out_dims(st, to_batch, in.dims, in.ndims, m, b, p, out)) return st->code;
    vg__op_set_output(op, 0, dt, vg_shape_make(out, in.ndims));
    return VG_OK;
}
static vg_code shape_s2b(vg_op *op, vg_status *st) { return sb_shape(op, true, st); }
static vg_code shape_b2s(vg_op *op, vg_status *st) { return sb_shape(op, false, st); }

/* Copies between the space-shaped tensor sp (dims sd) and the batch-shaped tensor bt
 * (dims bd). to_batch: sp -> bt (zeros where padded); else bt -> sp (cropped part
 * dropped). p: the paddings (to_batch) or crops. */
static void move(bool to_batch, int m, const int64_t *b, int64_t p[][2], const int64_t *sd, const int64_t *bd, int nd,
                 size_t es, char *spd, char *btd) {
    int64_t inner = 1, cells = 1;
    for (int i = 1 + m; i < nd; i++) inner *= sd[i];
    for (int i = 0; i < m; i++) cells *= bd[1 + i];
    size_t chunk = (size_t)inner * es;
    int64_t B = sd[0];
    for (int64_t ob = 0; ob < bd[0]; ob++) {
        int64_t n = ob % B, k = ob / B, off[SB_MAX], coord[SB_MAX];
        for (int i = m - 1; i >= 0; i--) {
            off[i] = k % b[i];
            k /= b[i];
        }
        for (int64_t cell = 0; cell < cells; cell++) {
            int64_t rem = cell, sp_flat = n, bt_flat = ob;
            bool inside = true;
            for (int i = m - 1; i >= 0; i--) {
                coord[i] = rem % bd[1 + i];
                rem /= bd[1 + i];
            }
            for (int i = 0; i < m; i++) {
                int64_t sy = coord[i] * b[i] + off[i] - p[i][0];
                if (sy < 0 || sy >= sd[1 + i]) inside = false;
                sp_flat = sp_flat * sd[1 + i] + (inside ? sy : 0);
                bt_flat = bt_flat * bd[1 + i] + coord[i];
            }
            char *bp = btd + (size_t)bt_flat * chunk;
            if (to_batch) {
                if (inside) memcpy(bp, spd + (size_t)sp_flat * chunk, chunk);
                else memset(bp, 0, chunk);
            } else if (inside) {
                memcpy(spd + (size_t)sp_flat * chunk, bp, chunk);
            }
        }
    }
}

static vg_code sb_run(vg__kctx *ctx, bool to_batch) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int m;
    int64_t b[SB_MAX], p[SB_MAX][2], od[VG_MAX_DIMS];
    if (read_spec(st, vg__kctx_input(ctx, 1), vg__kctx_input(ctx, 2), &m, b, p)) return st->code;
    int nd = vg_tensor_ndims(x);
    if (out_dims(st, to_batch, vg_tensor_dims(x), nd, m, b, p, od)) return st->code;
    vg_dtype dt = vg_tensor_dtype(x);
    size_t es = vg_dtype_size(dt);
    if (es == 0) return vg_status_set(st, VG_UNIMPLEMENTED, "dtype %s is not supported", vg_dtype_name(dt));
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, od, nd, &o);
    if (c) return c;
    if (to_batch) move(true, m, b, p, vg_tensor_dims(x), od, nd, es, (char *)vg_tensor_data(x), (char *)vg_tensor_data(o));
    else move(false, m, b, p, od, vg_tensor_dims(x), nd, es, (char *)vg_tensor_data(o), (char *)vg_tensor_data(x));
    return VG_OK;
}
static vg_code kernel_s2b(vg__kctx *ctx) { return sb_run(ctx, true); }
static vg_code kernel_b2s(vg__kctx *ctx) { return sb_run(ctx, false); }

static vg_output build(vg_graph *g, const char *type, vg_output x, vg_output block, vg_output pads, const char *name) {
    return vg__build_simple(g, type, name, type, (vg_output[]){x, block, pads}, 3);
}

static vg_code grad_s2b(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = build(g, "BatchToSpaceND", dy[0], vg_op_input(op, 1), vg_op_input(op, 2), NULL);
    dx[1] = dx[2] = (vg_output){NULL, 0};
    return vg_graph_status(g, NULL);
}
static vg_code grad_b2s(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = build(g, "SpaceToBatchND", dy[0], vg_op_input(op, 1), vg_op_input(op, 2), NULL);
    dx[1] = dx[2] = (vg_output){NULL, 0};
    return vg_graph_status(g, NULL);
}

vg_output vg_space_to_batch_nd(vg_graph *g, vg_output x, vg_output block_shape, vg_output paddings, const char *name) {
    return build(g, "SpaceToBatchND", x, block_shape, paddings, name);
}
vg_output vg_batch_to_space_nd(vg_graph *g, vg_output x, vg_output block_shape, vg_output crops, const char *name) {
    return build(g, "BatchToSpaceND", x, block_shape, crops, name);
}

const vg__op_def vg__ops_space_batch[] = {
    {"SpaceToBatchND", 3, 3, 0, 0, shape_s2b, kernel_s2b, grad_s2b},
    {"BatchToSpaceND", 3, 3, 0, 0, shape_b2s, kernel_b2s, grad_b2s},
    {0},
};
