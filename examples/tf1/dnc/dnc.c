/* dnc.c - dnc/dnc.py: the DNC core (controller snt.LSTM + MemoryAccess +
 * "output_linear"), run by vg_dynamic_rnn as a custom RNN cell (vg_custom_rnn_cell_new)
 * with DNCState's flat state. Variables (Sonnet 1 names, the module created under
 * DNC's _enter_variable_scope): dnc/lstm/{w_gates,b_gates},
 * dnc/memory_access/<linear>/{w,b}, dnc/output_linear/{w,b}. */
#include "dnc.h"
#include <math.h>
#include <stdlib.h>

/* _clip_if_enabled(x) */
static vg_output clip_if_enabled(vg_graph *g, const dnc_core *c, vg_output x) {
    if (!(c->clip_value > 0)) return x;
    return vg_clip_by_value(g, x, vg_const_f32(g, (float)-c->clip_value, "clip_by_value/Minimum/y"),
                            vg_const_f32(g, (float)c->clip_value, "clip_by_value/y"), "clip_by_value");
}

/* snt.BatchFlatten */
static vg_output batch_flatten(vg_graph *g, vg_output x) {
    vg_shape s = vg_output_shape(x);
    if (s.ndims == 2) return x;
    int64_t n = 1;
    for (int i = 1; i < s.ndims; i++) n *= s.dims[i];
    return vg_reshape_c(g, x, (const int64_t[]){-1, n}, 2, "batch_flatten/Reshape");
}

/* Creates the variables in the order the Python's first _build creates them. */
static vg_code dnc_build(vg_graph *g, int64_t input_depth, vg_dtype dt, void *user) {
    (void)dt;
    dnc_core *c = user;
    dnc_memory_access *a = &c->access;
    int64_t access_output_size = a->num_reads * a->word_size;
    /* Sonnet's _enter_variable_scope: the module's captured scope, re-entered wherever the
     * build runs (dynamic_rnn's "rnn" scope here), so the names stay "dnc/..." */
    if (!c->scope) return vg_graph_set_error(g, VG_FAILED_PRECONDITION, "dnc: dnc_initial_state was not called");
    vg_variable_scope_enter(g, c->scope, &(vg_variable_scope_opts){.no_name_scope = true});
    /* snt.LSTM(hidden_size): w_gates [input + hidden, 4 hidden], b_gates [4 hidden], both
     * truncated_normal with stddev 1/sqrt(input + hidden) (create_linear_initializer) */
    int64_t equiv_input_size = input_depth + access_output_size + c->hidden_size, four_h = 4 * c->hidden_size;
    vg_initializer init = vg_init_truncated_normal(0.0, 1.0 / sqrt((double)equiv_input_size), 0);
    vg_variable_scope_push(g, "lstm", NULL);
    c->w_gates = vg_get_variable(g, "w_gates", VG_FLOAT, (const int64_t[]){equiv_input_size, four_h}, 2, init,
                                 VG_VAR_TRAINABLE).read;
    c->b_gates = vg_get_variable(g, "b_gates", VG_FLOAT, &four_h, 1, init, VG_VAR_TRAINABLE).read;
    vg_variable_scope_pop(g);
    dnc_memory_access_build(g, a, c->hidden_size);
    dnc_linear_build(g, &c->output_linear, "output_linear", c->hidden_size + access_output_size, c->output_size);
    vg_variable_scope_pop(g);
    return vg_graph_status(g, NULL);
}

/* snt.LSTM._build(inputs, (prev_hidden, prev_cell)) */
static void lstm_call(vg_graph *g, const dnc_core *c, vg_output inputs, vg_output prev_hidden, vg_output prev_cell,
                      vg_output *next_hidden, vg_output *next_cell) {
    vg_graph_push_scope(g, "lstm");
    vg_output inputs_and_hidden = vg_concat_c(g, (const vg_output[]){inputs, prev_hidden}, 2, 1, "concat");
    vg_output gates = vg_matmul(g, inputs_and_hidden, c->w_gates, false, false, "MatMul");
    gates = vg_add(g, gates, c->b_gates, "add");
    /* i = input_gate, j = next_input, f = forget_gate, o = output_gate */
    vg_op *sp = vg_split(g, gates, 4, 1, "split");
    vg_output i = vg_out(sp, 0), j = vg_out(sp, 1), f = vg_out(sp, 2), o = vg_out(sp, 3);
    vg_output forget_mask = vg_sigmoid(g, vg_add(g, f, vg_const_f32(g, 1.0f, "add_1/y"), "add_1"), "Sigmoid");
    *next_cell = vg_add(g, vg_mul(g, forget_mask, prev_cell, "mul"),
                        vg_mul(g, vg_sigmoid(g, i, "Sigmoid_1"), vg_tanh(g, j, "Tanh"), "mul_1"), "add_2");
    *next_hidden = vg_mul(g, vg_tanh(g, *next_cell, "Tanh_1"), vg_sigmoid(g, o, "Sigmoid_2"), "mul_2");
    vg_graph_pop_scope(g);
}

/* DNC._build(inputs, prev_state) -> output, next_state */
static vg_code dnc_call(vg_graph *g, vg_output inputs, const vg_output *prev, vg_output *output, vg_output *next,
                        void *user) {
    dnc_core *c = user;
    vg_output controller_input =
        vg_concat_c(g, (const vg_output[]){batch_flatten(g, inputs), batch_flatten(g, prev[DNC_ACCESS_OUTPUT])}, 2, 1,
                    "concat");
    vg_output hidden, cell;
    lstm_call(g, c, controller_input, prev[DNC_HIDDEN], prev[DNC_CELL], &hidden, &cell);
    vg_output controller_output = clip_if_enabled(g, c, hidden);
    /* nest.map_structure(_clip_if_enabled, controller_state) */
    next[DNC_HIDDEN] = clip_if_enabled(g, c, hidden);
    next[DNC_CELL] = clip_if_enabled(g, c, cell);
    vg_output access_output =
        dnc_memory_access_call(g, &c->access, controller_output, prev + DNC_ACCESS_STATE, next + DNC_ACCESS_STATE);
    vg_output out =
        vg_concat_c(g, (const vg_output[]){controller_output, batch_flatten(g, access_output)}, 2, 1, "concat_1");
    out = dnc_linear_call(g, &c->output_linear, out, "output_linear");
    *output = clip_if_enabled(g, c, out);
    next[DNC_ACCESS_OUTPUT] = access_output;
    return vg_graph_status(g, NULL);
}

dnc_core *dnc_new(int64_t memory_size, int64_t word_size, int64_t num_reads, int64_t num_writes, int64_t hidden_size,
                  int64_t output_size, double clip_value) {
    dnc_core *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    dnc_memory_access_init(&c->access, memory_size, word_size, num_reads, num_writes);
    c->hidden_size = hidden_size;
    c->output_size = output_size;
    c->clip_value = clip_value;
    /* state_size: DNCState(access_output [R, W], access_state, controller_state (hidden, cell)) */
    c->state_shapes[DNC_ACCESS_OUTPUT] = vg_shape_make((const int64_t[]){num_reads, word_size}, 2);
    dnc_memory_access_state_shapes(&c->access, c->state_shapes + DNC_ACCESS_STATE);
    c->state_shapes[DNC_HIDDEN] = vg_shape_make(&hidden_size, 1);
    c->state_shapes[DNC_CELL] = vg_shape_make(&hidden_size, 1);
    vg_rnn_cell_def def = {"dnc", DNC_STATE_COUNT, c->state_shapes, output_size, dnc_build, dnc_call, c};
    c->cell = vg_custom_rnn_cell_new(&def);
    if (!c->cell) {
        free(c);
        return NULL;
    }
    return c;
}

void dnc_free(dnc_core *c) {
    if (!c) return;
    vg_rnn_cell_free(c->cell);
    free(c);
}

/* initial_state(batch_size): the controller's zero state (snt.LSTM), the access
 * module's zeros and zeros [batch, num_reads, word_size] for access_output. */
void dnc_initial_state(vg_graph *g, dnc_core *c, int64_t batch_size, vg_output *state) {
    if (!c->scope && vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = "dnc"})) {
        c->scope = vg_get_variable_scope(g);
        vg_variable_scope_pop(g);
    }
    vg_rnn_cell_zero_state(c->cell, g, batch_size, vg_out(NULL, 0), VG_FLOAT, state);
}
