/* test_seq2seq_attention_history.c - AttentionWrapper(alignment_history=True): the
 * state's time and history buffer (TF's AttentionWrapperState.time and the TensorArray
 * of alignments), vg_attention_wrapper_alignment_history (TF's
 * alignment_history.stack()) against the alignments each step left in the state, the
 * zeros past the steps taken, the run-time failure past alignment_history_max_steps,
 * the constructor's refusal without a bound, and a greedy dynamic_decode whose
 * history has one row per decoded step (each a distribution over the unmasked
 * memory), as tensorflow/nmt's greedy inference draws its attention images from. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "vigil/vigil.h"
#include <string.h>

#define B 2
#define T 4
#define D 3
#define STEPS 5

static const double MEM[B * T * D] = {0.1, 0.2, 0.3, -0.4, 0.5, 0.1, 0.9, -0.2, 0.0, 0.3, 0.3, -0.3,
                                      0.5, -0.1, 0.2, 0.0, 0.7, -0.6, 0.4, 0.4, 0.1, -0.2, 0.1, 0.8};

typedef struct built {
    vg_graph *g;
    vg_attention_mechanism *m;
    vg_attention_wrapper *w;
    vg_output mem, len;
} built;

static void build(built *b, int64_t max_steps) {
    b->g = vg_graph_new();
    vg_graph *g = b->g;
    b->mem = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){B, T, D}, 3, "memory");
    b->len = vg_const_i32_vec(g, (const int32_t[]){4, 3}, 2, "len");
    vg_initializer init = vg_init_random_uniform(-0.8, 0.8, 3);
    vg_vscope_set_initializer(vg_get_variable_scope(g), &init);
    b->m = vg_luong_attention_new(g, D, b->mem, b->len, false, NULL);
    vg_attention_wrapper_options o = {0};
    o.alignment_history = true;
    o.alignment_history_max_steps = max_steps;
    b->w = vg_attention_wrapper_new(vg_basic_rnn_cell_new(D, VG_ACT_TANH), b->m, &o);
    CHECK(b->w != NULL);
}

static void unbuild(built *b) {
    vg_attention_wrapper_free(b->w);
    vg_attention_mechanism_free(b->m);
    vg_graph_free(b->g);
}

static vg_session *session(built *b, vg_tensor **memv) {
    vg_status st;
    vg_session *s = vg_session_new(b->g, NULL, &st);
    CHECK(s != NULL);
    vg_op *init = vg_global_variables_initializer(b->g);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    *memv = vg_tensor_new_copy(VG_DOUBLE, (const int64_t[]){B, T, D}, 3, MEM, sizeof MEM, &st);
    return s;
}

/* three explicit calls: the stacked history is the alignments of each step */
static void test_history_equals_step_alignments(void) {
    vg_status st;
    built b;
    build(&b, STEPS);
    vg_graph *g = b.g;
    vg_rnn_cell *cell = vg_attention_wrapper_cell(b.w);
    int ns = vg_rnn_cell_state_count(cell);
    CHECK_EQ_INT(ns, 1 + 5); /* BasicRNNCell's state + attention, alignments, attention_state, time, history */
    vg_output state[8], next[8], out, aligns[3];
    CHECK_OK(vg_attention_wrapper_zero_state(b.w, g, B, (vg_output){0}, VG_DOUBLE, NULL, state), &st);
    for (int t = 0; t < 3; t++) {
        vg_output x = vg_const_fill(g, VG_DOUBLE, (const int64_t[]){B, 2}, 2, 0.3 * (t + 1), NULL);
        CHECK_OK(vg_rnn_cell_call(cell, g, x, state, &out, next), &st);
        aligns[t] = next[2];
        memcpy(state, next, sizeof(vg_output) * (size_t)ns);
    }
    vg_output hist = vg_attention_wrapper_alignment_history(b.w, g, state, NULL);
    vg_output want = vg_pack(g, aligns, 3, 0, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *memv;
    vg_session *s = session(&b, &memv);
    vg_output f[4] = {hist, want, state[4], state[5]};
    vg_tensor *o[4] = {0};
    CHECK_OK(vg_session_run(s, NULL, &b.mem, &memv, 1, f, o, 4, NULL, 0, NULL, &st), &st);
    if (o[0] && o[1]) {
        CHECK_EQ_INT(vg_tensor_ndims(o[0]), 3);
        CHECK(vg_tensor_dim(o[0], 0) == 3 && vg_tensor_dim(o[0], 1) == B && vg_tensor_dim(o[0], 2) == T);
        const double *h = vg_tensor_data(o[0]), *a = vg_tensor_data(o[1]);
        for (int i = 0; i < 3 * B * T; i++) CHECK_NEAR(h[i], a[i], 1e-12);
        /* each row a distribution; the second example's masked slot (length 3) is 0 */
        for (int t = 0; t < 3; t++) {
            for (int e = 0; e < B; e++) {
                double sum = 0;
                for (int k = 0; k < T; k++) sum += h[(t * B + e) * T + k];
                CHECK_NEAR(sum, 1.0, 1e-12);
            }
            CHECK_NEAR(h[(t * B + 1) * T + 3], 0.0, 1e-12);
        }
        /* the steps differ (the query changes), so rows are not copies of one another */
        CHECK(h[0] != h[B * T] || h[1] != h[B * T + 1]);
    }
    if (o[2]) { /* time: 3 for both */
        const double *t = vg_tensor_data(o[2]);
        CHECK_NEAR(t[0], 3.0, 0);
        CHECK_NEAR(t[1], 3.0, 0);
    }
    if (o[3]) { /* the raw buffer: rows 3 and 4 not written */
        CHECK(vg_tensor_dim(o[3], 1) == STEPS);
        const double *r = vg_tensor_data(o[3]);
        for (int e = 0; e < B; e++)
            for (int t = 3; t < STEPS; t++)
                for (int k = 0; k < T; k++) CHECK_NEAR(r[(e * STEPS + t) * T + k], 0.0, 0);
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(o[i]);
    vg_tensor_free(memv);
    vg_session_free(s);
    unbuild(&b);
}

/* more steps than the buffer holds: the run fails */
static void test_history_overflow_fails(void) {
    vg_status st;
    built b;
    build(&b, 2);
    vg_graph *g = b.g;
    vg_rnn_cell *cell = vg_attention_wrapper_cell(b.w);
    int ns = vg_rnn_cell_state_count(cell);
    vg_output state[8], next[8], out;
    CHECK_OK(vg_attention_wrapper_zero_state(b.w, g, B, (vg_output){0}, VG_DOUBLE, NULL, state), &st);
    for (int t = 0; t < 3; t++) {
        vg_output x = vg_const_fill(g, VG_DOUBLE, (const int64_t[]){B, 2}, 2, 0.1, NULL);
        CHECK_OK(vg_rnn_cell_call(cell, g, x, state, &out, next), &st);
        memcpy(state, next, sizeof(vg_output) * (size_t)ns);
    }
    vg_tensor *memv;
    vg_session *s = session(&b, &memv);
    vg_tensor *o = NULL;
    vg_code rc = vg_session_run(s, NULL, &b.mem, &memv, 1, &state[5], &o, 1, NULL, 0, NULL, &st);
    CHECK_STATUS(rc, &st, VG_INVALID_ARGUMENT, "more decoding steps than alignment_history_max_steps");
    vg_tensor_free(o);
    vg_tensor_free(memv);
    vg_session_free(s);
    unbuild(&b);
}

static void test_history_needs_a_bound(void) {
    vg_graph *g = vg_graph_new();
    vg_output mem = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, T, D}, 3, "memory");
    vg_attention_mechanism *m = vg_luong_attention_new(g, D, mem, (vg_output){0}, false, NULL);
    vg_attention_wrapper_options o = {0};
    o.alignment_history = true;
    CHECK(vg_attention_wrapper_new(vg_basic_rnn_cell_new(D, VG_ACT_TANH), m, &o) == NULL);
    vg_attention_mechanism_free(m);
    vg_graph_free(g);
}

/* greedy decoding (nmt's infer graph): one history row per decoded step */
static void test_history_greedy_decode(void) {
    vg_status st;
    built b;
    build(&b, 8);
    vg_graph *g = b.g;
    vg_get_variable_opts eo = {0};
    eo.dims = (const int64_t[]){5, 2};
    eo.ndims = 2;
    eo.dt = VG_DOUBLE;
    vg_output emb = vg_get_variable_ex(g, "embedding", &eo).ref;
    vg_decoder_helper *h =
        vg_greedy_embedding_helper_new(g, emb, vg_const_i32_vec(g, (const int32_t[]){1, 1}, 2, NULL), 2);
    vg_layer_config pc = {.kind = VG_LAYER_DENSE};
    pc.units = 5;
    pc.no_bias = true;
    vg_layer *proj = vg_layer_new(&pc);
    vg_output init[8], outs[VG_DECODER_MAX_OUTPUTS], fin[8], lens;
    CHECK_OK(vg_attention_wrapper_zero_state(b.w, g, B, (vg_output){0}, VG_DOUBLE, NULL, init), &st);
    vg_decoder *d = vg_basic_decoder_new(vg_attention_wrapper_cell(b.w), h, init, proj);
    vg_dynamic_decode_options o = {0};
    o.output_time_major = true;
    o.maximum_iterations = vg_const_i32(g, 6, NULL);
    CHECK_OK(vg_dynamic_decode(g, d, &o, outs, fin, &lens, &st), &st);
    vg_output hist = vg_attention_wrapper_alignment_history(b.w, g, fin, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *memv;
    vg_session *s = session(&b, &memv);
    vg_output f[2] = {hist, outs[1]};
    vg_tensor *r[2] = {0};
    CHECK_OK(vg_session_run(s, NULL, &b.mem, &memv, 1, f, r, 2, NULL, 0, NULL, &st), &st);
    if (r[0] && r[1]) {
        int64_t steps = vg_tensor_dim(r[1], 0); /* sample ids [time, batch] */
        CHECK(steps >= 1 && steps <= 6);
        CHECK_EQ_INT(vg_tensor_dim(r[0], 0), steps);
        const double *hv = vg_tensor_data(r[0]);
        for (int64_t t = 0; t < steps; t++)
            for (int e = 0; e < B; e++) {
                double sum = 0;
                for (int k = 0; k < T; k++) sum += hv[(t * B + e) * T + k];
                CHECK_NEAR(sum, 1.0, 1e-12);
            }
    }
    vg_tensor_free(r[0]), vg_tensor_free(r[1]), vg_tensor_free(memv);
    vg_session_free(s);
    vg_decoder_free(d);
    vg_decoder_helper_free(h);
    vg_layer_free(proj);
    unbuild(&b);
}

int main(void) {
    RUN_TEST(test_history_equals_step_alignments);
    RUN_TEST(test_history_overflow_fails);
    RUN_TEST(test_history_needs_a_bound);
    RUN_TEST(test_history_greedy_decode);
    TEST_MAIN_END();
}
