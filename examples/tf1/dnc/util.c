/* util.c - dnc/util.py: batch_invert_permutation, batch_gather, reduce_prod (the
 * cumprod + gather_nd form the Python uses instead of tf.reduce_prod). */
#include "dnc.h"

/* x[i] of a 1-D tensor (Python indexing: StridedSlice with shrink_axis_mask 1) */
static vg_output index1(vg_graph *g, vg_output x, int32_t i, const char *name) {
    vg_strided_slice_masks m = {0, 0, 0, 0, 1};
    return vg_strided_slice_c(g, x, (const int32_t[]){i}, (const int32_t[]){i == -1 ? 0 : i + 1}, NULL, 1, &m, name);
}

/* Returns batched tf.invert_permutation for every row in permutations [B, N]. */
vg_output dnc_batch_invert_permutation(vg_graph *g, vg_output permutations) {
    vg_graph_push_scope(g, "batch_invert_permutation");
    vg_output perm = vg_cast(g, permutations, VG_FLOAT, "Cast");
    int64_t dim = vg_output_shape(perm).dims[vg_output_shape(perm).ndims - 1];
    vg_output size = vg_cast(g, index1(g, vg_shape_op(g, perm, VG_INT32, "Shape"), 0, "strided_slice"), VG_FLOAT, "Cast_1");
    vg_output delta = vg_cast(g, index1(g, vg_shape_op(g, perm, VG_INT32, "Shape_1"), -1, "strided_slice_1"), VG_FLOAT,
                              "Cast_2");
    vg_output rg = vg_range(g, vg_const_f32(g, 0.0f, "range/start"), vg_mul(g, size, delta, "mul"), delta, "range");
    rg = vg_expand_dims(g, rg, 1, "ExpandDims");
    rg = vg_tile(g, rg, vg_const_i32_vec(g, (const int32_t[]){1, (int32_t)dim}, 2, "Tile/multiples"), "Tile");
    perm = vg_add(g, perm, rg, "Add");
    vg_output flat = vg_reshape_c(g, perm, (const int64_t[]){-1}, 1, "Reshape");
    perm = vg_invert_permutation(g, vg_cast(g, flat, VG_INT32, "Cast_3"), "InvertPermutation");
    perm = vg_reshape_c(g, perm, (const int64_t[]){-1, dim}, 2, "Reshape_1");
    vg_output out = vg_sub(g, perm, vg_cast(g, rg, VG_INT32, "Cast_4"), "Sub");
    vg_graph_pop_scope(g);
    return out;
}

/* Returns batched tf.gather for every row in the input: out[b, i] = values[b, indices[b, i]]. */
vg_output dnc_batch_gather(vg_graph *g, vg_output values, vg_output indices) {
    vg_graph_push_scope(g, "batch_gather");
    vg_output idx = vg_expand_dims(g, indices, -1, "ExpandDims");
    vg_output size = index1(g, vg_shape_op(g, indices, VG_INT32, "Shape"), 0, "strided_slice");
    vg_output rg = vg_range(g, vg_const_i32(g, 0, "range/start"), size, vg_const_i32(g, 1, "range/delta"), "range");
    rg = vg_expand_dims(g, rg, -1, "ExpandDims_1");
    int64_t n = vg_output_shape(indices).dims[vg_output_shape(indices).ndims - 1];
    rg = vg_tile(g, rg, vg_const_i32_vec(g, (const int32_t[]){1, (int32_t)n}, 2, "Tile/multiples"), "Tile");
    rg = vg_expand_dims(g, rg, -1, "ExpandDims_2");
    vg_output gidx = vg_concat_c(g, (const vg_output[]){rg, idx}, 2, -1, "concat");
    vg_output out = vg_gather_nd(g, values, gidx, "GatherNd");
    vg_graph_pop_scope(g);
    return out;
}

/* Efficient reduce product over axis (the Python's workaround for the cost of
 * tf.reduce_prod's gradient on CPU): cumprod(x, axis, reverse=True), then
 * gather_nd(cp, stack([range(size), zeros(size)], 1)) - i.e. cp[i, 0], the product over
 * axis 1 (the only axis the DNC reduces). */
vg_output dnc_reduce_prod(vg_graph *g, vg_output x, int axis, const char *name) {
    vg_graph_push_scope(g, name ? name : "util_reduce_prod");
    vg_output cp = vg_cumprod(g, x, axis, false, true, "Cumprod");
    vg_output size = index1(g, vg_shape_op(g, cp, VG_INT32, "Shape"), 0, "strided_slice");
    vg_output idx1 = vg_range(g, vg_const_f32(g, 0.0f, "range/start"), vg_cast(g, size, VG_FLOAT, "Cast"),
                              vg_const_f32(g, 1.0f, "range/delta"), "range");
    vg_output idx2 = vg_zeros(g, vg_pack(g, &size, 1, 0, "zeros/shape"), VG_FLOAT, "zeros");
    vg_output indices = vg_pack(g, (const vg_output[]){idx1, idx2}, 2, 1, "stack");
    vg_output out = vg_gather_nd(g, cp, vg_cast(g, indices, VG_INT32, "Cast_1"), "GatherNd");
    vg_graph_pop_scope(g);
    return out;
}
