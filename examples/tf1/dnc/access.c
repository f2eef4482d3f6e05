/* access.c - dnc/access.py: MemoryAccess (the DNC's memory: erase-and-write,
 * interface vectors from snt.Linear layers, write weights from content and allocation,
 * read weights from content and the temporal links), plus snt.Linear itself. */
#include "dnc.h"
#include <math.h>
#include <stdio.h>

/* snt.Linear(output_size, name): variables <scope>/<name>/w [in, out]
 * (truncated_normal, stddev 1/sqrt(in): Sonnet's create_linear_initializer) and
 * <scope>/<name>/b [out] (zeros). */
vg_code dnc_linear_build(vg_graph *g, dnc_linear *l, const char *name, int64_t input_size, int64_t output_size) {
    vg_variable_scope_push(g, name, NULL);
    vg_variable w = vg_get_variable(g, "w", VG_FLOAT, (const int64_t[]){input_size, output_size}, 2,
                                    vg_init_truncated_normal(0.0, 1.0 / sqrt((double)input_size), 0), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "b", VG_FLOAT, &output_size, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_variable_scope_pop(g);
    l->w = w.read;
    l->b = b.read;
    return vg_graph_status(g, NULL);
}

/* Linear._build: outputs = matmul(inputs, w) + b */
vg_output dnc_linear_call(vg_graph *g, const dnc_linear *l, vg_output inputs, const char *name) {
    vg_graph_push_scope(g, name);
    vg_output out = vg_add(g, vg_matmul(g, inputs, l->w, false, false, "MatMul"), l->b, "add");
    vg_graph_pop_scope(g);
    return out;
}

/* _erase_and_write(memory [B, N, W], address [B, H, N], reset_weights [B, H, W],
 * values [B, H, W]) */
vg_output dnc_erase_and_write(vg_graph *g, vg_output memory, vg_output address, vg_output reset_weights,
                              vg_output values) {
    vg_graph_push_scope(g, "erase_memory");
    vg_output expand_address = vg_expand_dims(g, address, 3, "ExpandDims");
    reset_weights = vg_expand_dims(g, reset_weights, 2, "ExpandDims_1");
    vg_output weighted_resets = vg_mul(g, expand_address, reset_weights, "mul");
    vg_output reset_gate = dnc_reduce_prod(g, vg_sub(g, vg_const_f32(g, 1.0f, "sub/x"), weighted_resets, "sub"), 1, NULL);
    memory = vg_mul(g, memory, reset_gate, "mul_1");
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "additive_write");
    vg_output add_matrix = vg_batch_matmul(g, address, values, true, false, "MatMul");
    memory = vg_add(g, memory, add_matrix, "add");
    vg_graph_pop_scope(g);
    return memory;
}

void dnc_memory_access_init(dnc_memory_access *m, int64_t memory_size, int64_t word_size, int64_t num_reads,
                            int64_t num_writes) {
    m->memory_size = memory_size;
    m->word_size = word_size;
    m->num_reads = num_reads;
    m->num_writes = num_writes;
    m->linkage = (dnc_temporal_linkage){memory_size, num_writes};
    m->freeness = (dnc_freeness){memory_size};
}

/* state_size: AccessState(memory [N, W], read_weights [R, N], write_weights [H, N],
 * linkage (link [H, N, N], precedence_weights [H, N]), usage [N]) */
void dnc_memory_access_state_shapes(const dnc_memory_access *m, vg_shape *s) {
    int64_t N = m->memory_size, W = m->word_size, R = m->num_reads, H = m->num_writes;
    s[ACC_MEMORY] = vg_shape_make((const int64_t[]){N, W}, 2);
    s[ACC_READ_WEIGHTS] = vg_shape_make((const int64_t[]){R, N}, 2);
    s[ACC_WRITE_WEIGHTS] = vg_shape_make((const int64_t[]){H, N}, 2);
    s[ACC_LINK] = vg_shape_make((const int64_t[]){H, N, N}, 3);
    s[ACC_PRECEDENCE_WEIGHTS] = vg_shape_make((const int64_t[]){H, N}, 2);
    s[ACC_USAGE] = vg_shape_make(&N, 1);
}

/* The snt.Linear modules _read_inputs creates, in its order, under "memory_access". */
vg_code dnc_memory_access_build(vg_graph *g, dnc_memory_access *m, int64_t in) {
    int64_t W = m->word_size, R = m->num_reads, H = m->num_writes, num_read_modes = 1 + 2 * H;
    vg_variable_scope_push(g, "memory_access", NULL);
    dnc_linear_build(g, &m->write_vectors, "write_vectors", in, H * W);
    dnc_linear_build(g, &m->erase_vectors, "erase_vectors", in, H * W);
    dnc_linear_build(g, &m->free_gate, "free_gate", in, R);
    dnc_linear_build(g, &m->allocation_gate, "allocation_gate", in, H);
    dnc_linear_build(g, &m->write_gate, "write_gate", in, H);
    dnc_linear_build(g, &m->read_mode, "read_mode", in, R * num_read_modes);
    dnc_linear_build(g, &m->write_keys, "write_keys", in, H * W);
    dnc_linear_build(g, &m->write_strengths, "write_strengths", in, H);
    dnc_linear_build(g, &m->read_keys, "read_keys", in, R * W);
    dnc_linear_build(g, &m->read_strengths, "read_strengths", in, R);
    vg_variable_scope_pop(g);
    return vg_graph_status(g, NULL);
}

typedef struct access_inputs {
    vg_output read_content_keys, read_content_strengths, write_content_keys, write_content_strengths, write_vectors,
        erase_vectors, free_gate, allocation_gate, write_gate, read_mode;
} access_inputs;

/* _read_inputs._linear: a linear transformation of inputs, followed by a reshape */
static vg_output linear_reshape(vg_graph *g, const dnc_linear *l, vg_output inputs, int64_t first_dim,
                                int64_t second_dim, const char *name, bool sigmoid) {
    vg_output linear = dnc_linear_call(g, l, inputs, name);
    if (sigmoid) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s_activation", name);
        linear = vg_sigmoid(g, linear, nm);
    }
    return vg_reshape_c(g, linear, (const int64_t[]){-1, first_dim, second_dim}, 3, "Reshape");
}

static access_inputs read_inputs(vg_graph *g, const dnc_memory_access *m, vg_output inputs) {
    int64_t W = m->word_size, R = m->num_reads, H = m->num_writes, num_read_modes = 1 + 2 * H;
    access_inputs r;
    /* v_t^i - the vectors to write to memory, for each write head i */
    r.write_vectors = linear_reshape(g, &m->write_vectors, inputs, H, W, "write_vectors", false);
    /* e_t^i - amount to erase the memory by before writing, for each write head */
    r.erase_vectors = linear_reshape(g, &m->erase_vectors, inputs, H, W, "erase_vectors", true);
    /* f_t^j - how much the locations read at the previous step can be freed, per read head */
    r.free_gate = vg_sigmoid(g, dnc_linear_call(g, &m->free_gate, inputs, "free_gate"), "Sigmoid");
    /* g_t^{a, i} - interpolation between allocation and content-based writing */
    r.allocation_gate = vg_sigmoid(g, dnc_linear_call(g, &m->allocation_gate, inputs, "allocation_gate"), "Sigmoid_1");
    /* g_t^{w, i} - overall gating of the write amount for each write head */
    r.write_gate = vg_sigmoid(g, dnc_linear_call(g, &m->write_gate, inputs, "write_gate"), "Sigmoid_2");
    /* pi_t^j - mixing between backwards, forwards and content reads, per read head */
    vg_output rm = linear_reshape(g, &m->read_mode, inputs, R, num_read_modes, "read_mode", false);
    vg_graph_push_scope(g, "batch_apply");
    vg_output flat = vg_reshape_c(g, rm, (const int64_t[]){-1, num_read_modes}, 2, "Reshape");
    r.read_mode = vg_reshape_c(g, vg_softmax(g, flat, "Softmax"), (const int64_t[]){-1, R, num_read_modes}, 3, "Reshape_1");
    vg_graph_pop_scope(g);
    /* parameters for the (read / write) content-matching modules */
    r.write_content_keys = linear_reshape(g, &m->write_keys, inputs, H, W, "write_keys", false);
    r.write_content_strengths = dnc_linear_call(g, &m->write_strengths, inputs, "write_strengths");
    r.read_content_keys = linear_reshape(g, &m->read_keys, inputs, R, W, "read_keys", false);
    r.read_content_strengths = dnc_linear_call(g, &m->read_strengths, inputs, "read_strengths");
    return r;
}

/* _write_weights(inputs, memory, usage) -> [B, H, N] */
static vg_output write_weights(vg_graph *g, const dnc_memory_access *m, const access_inputs *in, vg_output memory,
                               vg_output usage) {
    vg_graph_push_scope(g, "write_weights");
    /* c_t^{w, i} - the content-based weights for each write head */
    vg_output write_content_weights =
        dnc_cosine_weights(g, memory, in->write_content_keys, in->write_content_strengths, "write_content_weights");
    /* a_t^i - the allocation weights for each write head */
    vg_output write_allocation_weights = dnc_write_allocation_weights(
        g, &m->freeness, usage, vg_mul(g, in->allocation_gate, in->write_gate, "mul"), m->num_writes);
    /* expands gates over memory locations */
    vg_output allocation_gate = vg_expand_dims(g, in->allocation_gate, -1, "ExpandDims");
    vg_output write_gate = vg_expand_dims(g, in->write_gate, -1, "ExpandDims_1");
    /* w_t^{w, i} - the write weightings for each write head */
    vg_output mix = vg_add(g, vg_mul(g, allocation_gate, write_allocation_weights, "mul_1"),
                           vg_mul(g, vg_sub(g, vg_const_f32(g, 1.0f, "sub/x"), allocation_gate, "sub"),
                                  write_content_weights, "mul_2"),
                           "add");
    vg_output out = vg_mul(g, write_gate, mix, "mul_3");
    vg_graph_pop_scope(g);
    return out;
}

/* _read_weights(inputs, memory, prev_read_weights, link) -> [B, R, N] */
static vg_output read_weights(vg_graph *g, const dnc_memory_access *m, const access_inputs *in, vg_output memory,
                              vg_output prev_read_weights, vg_output link) {
    int32_t H = (int32_t)m->num_writes;
    vg_graph_push_scope(g, "read_weights");
    /* c_t^{r, i} - the content weightings for each read head */
    vg_output content_weights =
        dnc_cosine_weights(g, memory, in->read_content_keys, in->read_content_strengths, "read_content_weights");
    /* f_t^i and b_t^i */
    vg_output forward_weights = dnc_directional_read_weights(g, &m->linkage, link, prev_read_weights, true);
    vg_output backward_weights = dnc_directional_read_weights(g, &m->linkage, link, prev_read_weights, false);
    /* read_mode[:, :, :H], read_mode[:, :, H:2H], read_mode[:, :, 2H] */
    vg_strided_slice_masks all2 = {3, 3, 0, 0, 0}, pick = {3, 3, 0, 0, 4};
    vg_output backward_mode = vg_strided_slice_c(g, in->read_mode, (const int32_t[]){0, 0, 0},
                                                 (const int32_t[]){0, 0, H}, NULL, 3, &all2, "strided_slice");
    vg_output forward_mode = vg_strided_slice_c(g, in->read_mode, (const int32_t[]){0, 0, H},
                                                (const int32_t[]){0, 0, 2 * H}, NULL, 3, &all2, "strided_slice_1");
    vg_output content_mode = vg_strided_slice_c(g, in->read_mode, (const int32_t[]){0, 0, 2 * H},
                                                (const int32_t[]){0, 0, 2 * H + 1}, NULL, 3, &pick, "strided_slice_2");
    vg_output a = vg_mul(g, vg_expand_dims(g, content_mode, 2, "ExpandDims"), content_weights, "mul");
    vg_output b = vg_reduce_sum(g, vg_mul(g, vg_expand_dims(g, forward_mode, 3, "ExpandDims_1"), forward_weights, "mul_1"),
                                (const int32_t[]){2}, 1, false, "Sum");
    vg_output c = vg_reduce_sum(g, vg_mul(g, vg_expand_dims(g, backward_mode, 3, "ExpandDims_2"), backward_weights, "mul_2"),
                                (const int32_t[]){2}, 1, false, "Sum_1");
    vg_output out = vg_add(g, vg_add(g, a, b, "add"), c, "add_1");
    vg_graph_pop_scope(g);
    return out;
}

/* MemoryAccess._build(inputs, prev_state) */
vg_output dnc_memory_access_call(vg_graph *g, dnc_memory_access *m, vg_output inputs, const vg_output *prev,
                                 vg_output *next) {
    vg_graph_push_scope(g, "memory_access");
    access_inputs in = read_inputs(g, m, inputs);
    /* update usage using free_gate and the previous read & write weights */
    vg_output usage = dnc_freeness_call(g, &m->freeness, prev[ACC_WRITE_WEIGHTS], in.free_gate, prev[ACC_READ_WEIGHTS],
                                        prev[ACC_USAGE]);
    /* write to memory */
    vg_output ww = write_weights(g, m, &in, prev[ACC_MEMORY], usage);
    vg_output memory = dnc_erase_and_write(g, prev[ACC_MEMORY], ww, in.erase_vectors, in.write_vectors);
    vg_output link, precedence;
    dnc_temporal_linkage_call(g, &m->linkage, ww, prev[ACC_LINK], prev[ACC_PRECEDENCE_WEIGHTS], &link, &precedence);
    /* read from memory */
    vg_output rw = read_weights(g, m, &in, memory, prev[ACC_READ_WEIGHTS], link);
    vg_output read_words = vg_batch_matmul(g, rw, memory, false, false, "MatMul");
    next[ACC_MEMORY] = memory;
    next[ACC_READ_WEIGHTS] = rw;
    next[ACC_WRITE_WEIGHTS] = ww;
    next[ACC_LINK] = link;
    next[ACC_PRECEDENCE_WEIGHTS] = precedence;
    next[ACC_USAGE] = usage;
    vg_graph_pop_scope(g);
    return read_words;
}
