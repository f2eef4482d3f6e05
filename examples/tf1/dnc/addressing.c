/* addressing.c - dnc/addressing.py: content weights (CosineWeights, weighted_softmax),
 * TemporalLinkage (link, precedence_weights, directional_read_weights) and Freeness
 * (usage after write / read, allocation by sorting usage). No variables. */
#include "dnc.h"

static vg_output fconst(vg_graph *g, double v, const char *name) { return vg_const_f32(g, (float)v, name); }

/* _vector_norms(m): sqrt(sum(m * m, axis=2, keepdims=True) + eps) */
static vg_output vector_norms(vg_graph *g, vg_output m) {
    vg_output sq = vg_reduce_sum(g, vg_mul(g, m, m, "mul"), (const int32_t[]){2}, 1, true, "Sum");
    return vg_sqrt(g, vg_add(g, sq, fconst(g, DNC_EPSILON, "add/y"), "add"), "Sqrt");
}

/* snt.BatchApply(tf.nn.softmax)(x): merge the two leading dims, softmax, split them. */
static vg_output batch_apply_softmax(vg_graph *g, vg_output x) {
    vg_shape s = vg_output_shape(x);
    vg_graph_push_scope(g, "batch_apply");
    vg_output flat = vg_reshape_c(g, x, (const int64_t[]){-1, s.dims[2]}, 2, "Reshape");
    vg_output y = vg_softmax(g, flat, "Softmax");
    y = vg_reshape_c(g, y, (const int64_t[]){-1, s.dims[1], s.dims[2]}, 3, "Reshape_1");
    vg_graph_pop_scope(g);
    return y;
}

/* weighted_softmax(activations [B, H, N], strengths [B, H], strengths_op=softplus) */
vg_output dnc_weighted_softmax(vg_graph *g, vg_output activations, vg_output strengths) {
    vg_output transformed = vg_expand_dims(g, vg_softplus(g, strengths, "Softplus"), -1, "ExpandDims");
    vg_output sharp = vg_mul(g, activations, transformed, "mul");
    return batch_apply_softmax(g, sharp);
}

/* CosineWeights._build(memory [B, N, W], keys [B, H, W], strengths [B, H]) -> [B, H, N] */
vg_output dnc_cosine_weights(vg_graph *g, vg_output memory, vg_output keys, vg_output strengths, const char *name) {
    vg_graph_push_scope(g, name ? name : "cosine_weights");
    vg_output dot = vg_batch_matmul(g, keys, memory, false, true, "MatMul");
    vg_output memory_norms = vector_norms(g, memory);
    vg_output key_norms = vector_norms(g, keys);
    vg_output norm = vg_batch_matmul(g, key_norms, memory_norms, false, true, "MatMul_1");
    vg_output similarity = vg_div(g, dot, vg_add(g, norm, fconst(g, DNC_EPSILON, "add/y"), "add"), "truediv");
    vg_output w = dnc_weighted_softmax(g, similarity, strengths);
    vg_graph_pop_scope(g);
    return w;
}

/* TemporalLinkage._link */
static vg_output link_update(vg_graph *g, const dnc_temporal_linkage *m, vg_output prev_link,
                             vg_output prev_precedence_weights, vg_output write_weights) {
    vg_graph_push_scope(g, "link");
    vg_strided_slice_masks sh = {0, 0, 0, 0, 1};
    vg_output batch_size = vg_strided_slice_c(g, vg_shape_op(g, prev_link, VG_INT32, "Shape"), (const int32_t[]){0},
                                              (const int32_t[]){1}, NULL, 1, &sh, "strided_slice");
    vg_output write_weights_i = vg_expand_dims(g, write_weights, 3, "ExpandDims");
    vg_output write_weights_j = vg_expand_dims(g, write_weights, 2, "ExpandDims_1");
    vg_output prev_precedence_weights_j = vg_expand_dims(g, prev_precedence_weights, 2, "ExpandDims_2");
    vg_output prev_link_scale =
        vg_sub(g, vg_sub(g, fconst(g, 1.0, "sub/x"), write_weights_i, "sub"), write_weights_j, "sub_1");
    vg_output new_link = vg_mul(g, write_weights_i, prev_precedence_weights_j, "mul");
    vg_output link = vg_add(g, vg_mul(g, prev_link_scale, prev_link, "mul_1"), new_link, "add");
    /* the link with the diagonal set to zero, to remove self-looping edges */
    vg_output zshape = vg_pack(g,
                               (const vg_output[]){batch_size, vg_const_i32(g, (int32_t)m->num_writes, "zeros/shape/1"),
                                                   vg_const_i32(g, (int32_t)m->memory_size, "zeros/shape/2")},
                               3, 0, "zeros/shape");
    vg_output out = vg_matrix_set_diag(g, link, vg_zeros(g, zshape, VG_FLOAT, "zeros"), "MatrixSetDiag");
    vg_graph_pop_scope(g);
    return out;
}

/* TemporalLinkage._precedence_weights */
static vg_output precedence_update(vg_graph *g, vg_output prev_precedence_weights, vg_output write_weights) {
    vg_graph_push_scope(g, "precedence_weights");
    vg_output write_sum = vg_reduce_sum(g, write_weights, (const int32_t[]){2}, 1, true, "Sum");
    vg_output out = vg_add(g,
                           vg_mul(g, vg_sub(g, fconst(g, 1.0, "sub/x"), write_sum, "sub"), prev_precedence_weights, "mul"),
                           write_weights, "add");
    vg_graph_pop_scope(g);
    return out;
}

void dnc_temporal_linkage_call(vg_graph *g, const dnc_temporal_linkage *m, vg_output write_weights, vg_output prev_link,
                               vg_output prev_precedence_weights, vg_output *link, vg_output *precedence_weights) {
    vg_graph_push_scope(g, "temporal_linkage");
    *link = link_update(g, m, prev_link, prev_precedence_weights, write_weights);
    *precedence_weights = precedence_update(g, prev_precedence_weights, write_weights);
    vg_graph_pop_scope(g);
}

/* directional_read_weights(link [B, W, N, N], prev_read_weights [B, R, N], forward)
 * -> [B, R, W, N] */
vg_output dnc_directional_read_weights(vg_graph *g, const dnc_temporal_linkage *m, vg_output link,
                                       vg_output prev_read_weights, bool forward) {
    vg_graph_push_scope(g, "directional_read_weights");
    vg_output copies[16];
    int n = m->num_writes < 16 ? (int)m->num_writes : 16;
    for (int i = 0; i < n; i++) copies[i] = prev_read_weights;
    vg_output expanded_read_weights = vg_pack(g, copies, n, 1, "stack");
    vg_output result = vg_batch_matmul(g, expanded_read_weights, link, false, forward, "MatMul");
    /* swap dimensions 1, 2 so order is [batch, reads, writes, memory] */
    vg_output out = vg_transpose_c(g, result, (const int32_t[]){0, 2, 1, 3}, 4, "transpose");
    vg_graph_pop_scope(g);
    return out;
}

/* Freeness._usage_after_write */
static vg_output usage_after_write(vg_graph *g, vg_output prev_usage, vg_output write_weights) {
    vg_graph_push_scope(g, "usage_after_write");
    vg_output one = fconst(g, 1.0, "sub/x");
    vg_output ww = vg_sub(g, one, dnc_reduce_prod(g, vg_sub(g, one, write_weights, "sub"), 1, NULL), "sub_1");
    vg_output out = vg_add(g, prev_usage, vg_mul(g, vg_sub(g, one, prev_usage, "sub_2"), ww, "mul"), "add");
    vg_graph_pop_scope(g);
    return out;
}

/* Freeness._usage_after_read */
static vg_output usage_after_read(vg_graph *g, vg_output prev_usage, vg_output free_gate, vg_output read_weights) {
    vg_graph_push_scope(g, "usage_after_read");
    free_gate = vg_expand_dims(g, free_gate, -1, "ExpandDims");
    vg_output free_read_weights = vg_mul(g, free_gate, read_weights, "mul");
    vg_output phi = dnc_reduce_prod(g, vg_sub(g, fconst(g, 1.0, "sub/x"), free_read_weights, "sub"), 1, "phi");
    vg_output out = vg_mul(g, prev_usage, phi, "mul_1");
    vg_graph_pop_scope(g);
    return out;
}

/* Freeness._build(write_weights, free_gate, read_weights, prev_usage) -> usage [B, N] */
vg_output dnc_freeness_call(vg_graph *g, const dnc_freeness *m, vg_output write_weights, vg_output free_gate,
                            vg_output read_weights, vg_output prev_usage) {
    (void)m;
    vg_graph_push_scope(g, "freeness");
    /* calculation of usage is not differentiable with respect to write weights */
    write_weights = vg_stop_gradient(g, write_weights, "StopGradient");
    vg_output usage = usage_after_write(g, prev_usage, write_weights);
    usage = usage_after_read(g, usage, free_gate, read_weights);
    vg_graph_pop_scope(g);
    return usage;
}

/* Freeness._allocation(usage [B, N]) -> [B, N] */
vg_output dnc_allocation(vg_graph *g, const dnc_freeness *m, vg_output usage) {
    vg_graph_push_scope(g, "allocation");
    /* ensure values are not too small prior to cumprod */
    usage = vg_add(g, fconst(g, DNC_EPSILON, "add/x"), vg_mul(g, fconst(g, 1.0 - DNC_EPSILON, "mul/x"), usage, "mul"),
                   "add");
    vg_output one = fconst(g, 1.0, "sub/x");
    vg_output nonusage = vg_sub(g, one, usage, "sub");
    vg_op *sort = vg_top_k(g, nonusage, (int)m->memory_size, true, "sort");
    vg_output sorted_nonusage = vg_out(sort, 0), indices = vg_out(sort, 1);
    vg_output sorted_usage = vg_sub(g, one, sorted_nonusage, "sub_1");
    vg_output prod_sorted_usage = vg_cumprod(g, sorted_usage, 1, true, false, "Cumprod");
    vg_output sorted_allocation = vg_mul(g, sorted_nonusage, prod_sorted_usage, "mul_1");
    vg_output inverse_indices = dnc_batch_invert_permutation(g, indices);
    /* "unsorts" sorted_allocation, so that the indexing corresponds to the original
     * indexing of usage */
    vg_output out = dnc_batch_gather(g, sorted_allocation, inverse_indices);
    vg_graph_pop_scope(g);
    return out;
}

/* Freeness.write_allocation_weights(usage [B, N], write_gates [B, W], num_writes) -> [B, W, N] */
vg_output dnc_write_allocation_weights(vg_graph *g, const dnc_freeness *m, vg_output usage, vg_output write_gates,
                                       int64_t num_writes) {
    vg_graph_push_scope(g, "write_allocation_weights");
    /* expand gatings over memory locations */
    write_gates = vg_expand_dims(g, write_gates, -1, "ExpandDims");
    vg_output allocation_weights[16];
    int n = num_writes < 16 ? (int)num_writes : 16;
    for (int i = 0; i < n; i++) {
        allocation_weights[i] = dnc_allocation(g, m, usage);
        /* update usage to take into account writing to this new allocation:
         * usage += (1 - usage) * write_gates[:, i, :] * allocation_weights[i] */
        vg_strided_slice_masks sm = {5, 5, 0, 0, 2};
        vg_output gate_i = vg_strided_slice_c(g, write_gates, (const int32_t[]){0, i, 0},
                                              (const int32_t[]){0, i + 1, 0}, NULL, 3, &sm, "strided_slice");
        vg_output upd = vg_mul(g, vg_mul(g, vg_sub(g, fconst(g, 1.0, "sub/x"), usage, "sub"), gate_i, "mul"),
                               allocation_weights[i], "mul_1");
        usage = vg_add(g, usage, upd, "add");
    }
    /* pack the allocation weights for the write heads into one tensor */
    vg_output out = vg_pack(g, allocation_weights, n, 1, "stack");
    vg_graph_pop_scope(g);
    return out;
}
