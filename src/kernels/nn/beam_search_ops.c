/*
 * beam_search_ops.c - GatherTree (tf.contrib.seq2seq.gather_tree, TF 1.15's
 * contrib/seq2seq/kernels/beam_search_ops.cc): follows the parent pointers of a beam
 * search back from each beam's last step. Inputs step_ids and parent_ids
 * [max_time, batch, beam] (int32 or int64), max_sequence_lengths int32 [batch],
 * end_token a scalar of T; output beams [max_time, batch, beam]. For each (batch,
 * beam) with L = min(max_time, max_sequence_lengths[batch]): beams[L-1] = step_ids[L-1],
 * then for t = L-2 down to 0 beams[t] = step_ids[t][parent], parent = parent_ids[t][parent]
 * starting from parent_ids[L-1][beam]; past the first end_token of a beam, and past L,
 * every entry is end_token. A parent outside [0, beam) is INVALID_ARGUMENT "Saw invalid
 * parent id <p> at (batch, time, beam) == (b, t, k)" (TF checks p > beam_width, which
 * lets p == beam_width read past the row; vigil refuses it). Not differentiable (TF
 * registers no gradient).
 */
#include "kernels/kernel.h"
#include "vigil/seq2seq.h"
#include <stdlib.h>

static vg_code shape_gather_tree(vg_op *op, vg_status *st) {
    vg_dtype t = vg__op_input_dtype(op, 0);
    if (t != VG_INT32 && t != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherTree: T must be int32 or int64, not %s",
                             vg_dtype_name(t));
    if (vg__op_input_dtype(op, 1) != t || vg__op_input_dtype(op, 3) != t)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherTree: parent_ids and end_token must be %s",
                             vg_dtype_name(t));
    if (vg__op_input_dtype(op, 2) != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherTree: max_sequence_lengths must be int32");
    vg_shape s = vg__op_input_shape(op, 0), p = vg__op_input_shape(op, 1), l = vg__op_input_shape(op, 2),
             e = vg__op_input_shape(op, 3);
    if ((s.ndims >= 0 && s.ndims != 3) || (p.ndims >= 0 && p.ndims != 3))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherTree: step_ids and parent_ids must be rank 3 (op '%s')",
                             vg_op_name(op));
    if (l.ndims >= 0 && l.ndims != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherTree: max_sequence_lengths must be rank 1 (op '%s')",
                             vg_op_name(op));
    if (e.ndims >= 0 && e.ndims != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherTree: end_token must be a scalar (op '%s')",
                             vg_op_name(op));
    /* merge step_ids with parent_ids, and the batch dim with max_sequence_lengths' */
    vg_shape out = s.ndims == 3 ? s : p;
    if (s.ndims == 3 && p.ndims == 3)
        for (int i = 0; i < 3; i++) {
            if (s.dims[i] >= 0 && p.dims[i] >= 0 && s.dims[i] != p.dims[i])
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "GatherTree: step_ids and parent_ids shapes differ in dimension %d (op '%s')", i,
                                     vg_op_name(op));
            if (out.dims[i] < 0) out.dims[i] = p.dims[i];
        }
    if (out.ndims == 3 && l.ndims == 1) {
        if (out.dims[1] >= 0 && l.dims[0] >= 0 && out.dims[1] != l.dims[0])
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "GatherTree: batch size %lld of step_ids and %lld of max_sequence_lengths differ",
                                 (long long)out.dims[1], (long long)l.dims[0]);
        if (out.dims[1] < 0) out.dims[1] = l.dims[0];
    }
    return vg__op_set_t_output(op, t, out.ndims == 3 ? out : vg_shape_unknown());
}

static int64_t get(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_INT32 ? (int64_t)((const int32_t *)vg_tensor_data(t))[i]
                                          : ((const int64_t *)vg_tensor_data(t))[i];
}

static void put(vg_tensor *t, int64_t i, int64_t v) {
    if (vg_tensor_dtype(t) == VG_INT32) ((int32_t *)vg_tensor_data(t))[i] = (int32_t)v;
    else ((int64_t *)vg_tensor_data(t))[i] = v;
}

static vg_code kernel_gather_tree(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *step = vg__kctx_input(ctx, 0), *par = vg__kctx_input(ctx, 1), *len = vg__kctx_input(ctx, 2),
                    *end = vg__kctx_input(ctx, 3);
    if (vg_tensor_ndims(step) != 3)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "step_ids must be a 3-tensor, saw rank %d", vg_tensor_ndims(step));
    if (vg_tensor_ndims(len) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "max_sequence_lengths must be a vector, saw rank %d",
                             vg_tensor_ndims(len));
    if (vg_tensor_ndims(end) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "end_token must be a scalar, saw rank %d", vg_tensor_ndims(end));
    bool same = vg_tensor_ndims(par) == 3;
    for (int i = 0; same && i < 3; i++) same = vg_tensor_dim(par, i) == vg_tensor_dim(step, i);
    if (!same) return vg_status_set(st, VG_INVALID_ARGUMENT, "step_ids.shape must match parent_ids.shape");
    int64_t T = vg_tensor_dim(step, 0), B = vg_tensor_dim(step, 1), K = vg_tensor_dim(step, 2);
    if (vg_tensor_dim(len, 0) != B)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "batch size dimensions step_ids.shape[1] and max_sequence_lengths.shape[0] must match: "
                             "%lld and %lld",
                             (long long)B, (long long)vg_tensor_dim(len, 0));
    vg_tensor *out = NULL;
    if (vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(step), vg_tensor_dims(step), 3, &out)) return st->code;
    int64_t eos = get(end, 0);
    const int32_t *lens = vg_tensor_data(len);
    for (int64_t i = 0; i < T * B * K; i++) put(out, i, eos);
#define AT(t, b, k) (((t) * B + (b)) * K + (k))
    for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < K; k++) {
            int64_t L = lens[b] < T ? lens[b] : T;
            if (L <= 0) continue;
            put(out, AT(L - 1, b, k), get(step, AT(L - 1, b, k)));
            int64_t parent = get(par, AT(L - 1, b, k));
            for (int64_t t = L - 2; t >= 0; t--) {
                if (parent < 0 || parent >= K)
                    return vg_status_set(st, VG_INVALID_ARGUMENT,
                                         "Saw invalid parent id %lld at (batch, time, beam) == (%lld, %lld, %lld)",
                                         (long long)parent, (long long)b, (long long)t, (long long)k);
                put(out, AT(t, b, k), get(step, AT(t, b, parent)));
                parent = get(par, AT(t, b, parent));
            }
            bool finished = false;
            for (int64_t t = 0; t < L; t++) {
                if (finished) put(out, AT(t, b, k), eos);
                else if (get(out, AT(t, b, k)) == eos) finished = true;
            }
        }
#undef AT
    return VG_OK;
}

vg_output vg_gather_tree(vg_graph *g, vg_output step_ids, vg_output parent_ids, vg_output max_sequence_lengths,
                         vg_output end_token, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "GatherTree", name, NULL,
                                               (vg_output[]){step_ids, parent_ids, max_sequence_lengths, end_token}, 4);
    if (step_ids.op) vg_op_builder_set_attr_type(b, "T", vg_output_dtype(step_ids));
    vg_op *op = vg_op_builder_finish(b);
    return (vg_output){op, 0};
}

const vg__op_def vg__ops_beam_search[] = {
    {"GatherTree", 4, 4, VG__OP_NOT_DIFFERENTIABLE, 0, shape_gather_tree, kernel_gather_tree, NULL},
    {0},
};
