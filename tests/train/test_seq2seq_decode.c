/* test_seq2seq_decode.c - tf.contrib.seq2seq.dynamic_decode with BasicDecoder and the
 * helpers (vigil/seq2seq.h), against hand computations: greedy decoding with an
 * identity cell over a shifting embedding (finished handling, impute_finished,
 * maximum_iterations, output_time_major), TrainingHelper with a BasicRNNCell and a
 * dense output layer (values, variable names, sequence lengths, batch- and time-major
 * inputs), SampleEmbeddingHelper (argmax-like and two-way draws),
 * ScheduledEmbeddingTrainingHelper (probability 0 and 1), a user-defined
 * decoder, and argument errors. */
#include "test_util.h"
#include "vigil/vigil.h"

/* The end of a decoding test: frees the session, the decoder, its helper, the cell and
 * the graph (any may be NULL), in that order. */
static void free_decode_run(vg_session *s, vg_decoder *d, vg_decoder_helper *h, vg_rnn_cell *cell, vg_graph *g) {
    vg_session_free(s);
    vg_decoder_free(d);
    vg_decoder_helper_free(h);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

/* out = input; state' = state + input */
static vg_code id_call(vg_graph *g, vg_output x, const vg_output *s, vg_output *out, vg_output *ns, void *user) {
    (void)user;
    *out = vg_identity(g, x, NULL);
    ns[0] = vg_add(g, s[0], x, NULL);
    return vg_graph_status(g, NULL);
}

static vg_rnn_cell *id_cell(void) {
    vg_shape sh = vg_shape_make((const int64_t[]){4}, 1);
    vg_rnn_cell_def def = {"id_cell", 1, &sh, 4, NULL, id_call, NULL};
    return vg_custom_rnn_cell_new(&def);
}

typedef struct greedy_result {
    int32_t ids[2][4];
    float out[2][4][4];
    float state[2][4];
    int32_t len[2];
    int T;
} greedy_result;

/* embedding row i is one_hot((i + 1) % 4): decoding from token s emits s+1, s+2, ... */
static void run_greedy(bool impute, int max_it, bool time_major, greedy_result *r) {
    memset(r, 0, sizeof *r);
    vg_graph *g = vg_graph_new();
    vg_status st;
    float emb[16] = {0};
    for (int i = 0; i < 4; i++) emb[i * 4 + (i + 1) % 4] = 1;
    vg_output e = vg_const_array(g, VG_FLOAT, (const int64_t[]){4, 4}, 2, emb, "embedding");
    vg_output start = vg_const_array(g, VG_INT32, (const int64_t[]){2}, 1, (const int32_t[]){0, 2}, "start_tokens");
    vg_decoder_helper *h = vg_greedy_embedding_helper_new(g, e, start, 3);
    CHECK(h != NULL);
    vg_rnn_cell *cell = id_cell();
    vg_output init;
    CHECK_EQ_INT(vg_rnn_cell_zero_state(cell, g, 2, vg_out(NULL, 0), VG_FLOAT, &init), VG_OK);
    vg_decoder *d = vg_basic_decoder_new(cell, h, &init, NULL);
    CHECK(d != NULL);
    vg_dynamic_decode_options o = {0};
    o.impute_finished = impute;
    o.output_time_major = time_major;
    if (max_it >= 0) o.maximum_iterations = vg_const_i32(g, max_it, "max_it");
    vg_output outs[2], fin, len;
    CHECK_OK(vg_dynamic_decode(g, d, &o, outs, &fin, &len, &st), &st);
    CHECK_EQ_INT(vg_output_dtype(outs[1]), VG_INT32);
    CHECK_EQ_INT(vg_output_dtype(len), VG_INT32);
    /* ops under the decoder's scope */
    CHECK(strncmp(vg_op_name(fin.op), "decoder/while/", 14) == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v[4] = {NULL, NULL, NULL, NULL};
    vg_output f[4] = {outs[0], outs[1], fin, len};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, v, 4, NULL, 0, NULL, &st), &st);
    if (v[0] && v[1] && v[2] && v[3]) {
        CHECK_EQ_INT(vg_tensor_ndims(v[1]), 2);
        int T = (int)vg_tensor_dim(v[1], time_major ? 0 : 1);
        CHECK_EQ_INT(vg_tensor_dim(v[1], time_major ? 1 : 0), 2);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 2), 4);
        r->T = T;
        for (int b = 0; b < 2; b++) {
            for (int t = 0; t < T && t < 4; t++) {
                int at = time_major ? t * 2 + b : b * T + t;
                r->ids[b][t] = ((const int32_t *)vg_tensor_data(v[1]))[at];
                for (int k = 0; k < 4; k++) r->out[b][t][k] = ((const float *)vg_tensor_data(v[0]))[at * 4 + k];
            }
            for (int k = 0; k < 4; k++) r->state[b][k] = ((const float *)vg_tensor_data(v[2]))[b * 4 + k];
            r->len[b] = ((const int32_t *)vg_tensor_data(v[3]))[b];
        }
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(v[i]);
    free_decode_run(s, d, h, cell, g);
}

/* Three greedy steps over the batch (maximum_iterations unset): the ids, the one-hot
 * outputs (zero where impute_finished masks a finished batch entry), the lengths 3 and
 * 1 and the final state. */
typedef struct greedy_case {
    bool impute;
    int32_t ids[2][3];
    float state[2][4];
} greedy_case;

static void check_greedy_three_steps(const greedy_case *c) {
    greedy_result r;
    run_greedy(c->impute, -1, false, &r);
    CHECK_EQ_INT(r.T, 3);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 3; t++) {
            CHECK_EQ_INT(r.ids[b][t], c->ids[b][t]);
            bool zero = c->impute && b == 1 && t > 0;
            for (int k = 0; k < 4; k++) CHECK_NEAR(r.out[b][t][k], !zero && k == c->ids[b][t] ? 1.0 : 0.0, 0);
        }
    CHECK_EQ_INT(r.len[0], 3);
    CHECK_EQ_INT(r.len[1], 1);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++) CHECK_NEAR(r.state[b][k], c->state[b][k], 0);
}

/* batch 0 from token 0: 1, 2, 3 (end at step 2); batch 1 from 2: 3 (end at step 0), then
 * the loop goes on for batch 0 and batch 1 keeps decoding: 0, 1; the state sums every
 * step's input, finished or not. */
static void test_greedy_decode_no_impute(void) {
    check_greedy_three_steps(&(greedy_case){false, {{1, 2, 3}, {3, 0, 1}}, {{0, 1, 1, 1}, {1, 1, 0, 1}}});
}

/* impute_finished: batch 1's ids and outputs are zeros after its first step, its state
 * is copied through. */
static void test_greedy_decode_impute_finished(void) {
    check_greedy_three_steps(&(greedy_case){true, {{1, 2, 3}, {3, 0, 0}}, {{0, 1, 1, 1}, {0, 0, 0, 1}}});
}

static void test_greedy_decode_maximum_iterations(void) {
    greedy_result r;
    run_greedy(false, 2, true, &r); /* time-major outputs [time, batch] */
    CHECK_EQ_INT(r.T, 2);
    const int32_t want[2][2] = {{1, 2}, {3, 0}};
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 2; t++) CHECK_EQ_INT(r.ids[b][t], want[b][t]);
    CHECK_EQ_INT(r.len[0], 2);
    CHECK_EQ_INT(r.len[1], 1);
    CHECK_NEAR(r.state[0][1], 1, 0);
    CHECK_NEAR(r.state[0][2], 1, 0);
    CHECK_NEAR(r.state[0][3], 0, 0);
    /* maximum_iterations 0: finished from the start, no step */
    run_greedy(false, 0, true, &r);
    CHECK_EQ_INT(r.T, 0);
}

/* TrainingHelper + BasicRNNCell (weights 0.1 from the root scope's initializer, bias 0)
 * + a dense output layer without bias, lengths {3, 2}, impute_finished. */
static void training_helper_basic_rnn(bool time_major) {
    enum { B = 2, T = 3, D = 2, U = 2, V = 3 };
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_initializer c01 = vg_init_constant(0.1);
    vg_vscope_set_initializer(vg_get_variable_scope(g), &c01);
    float xs[B * T * D];
    for (int i = 0; i < B * T * D; i++) xs[i] = 0.3f * (float)((i * 7) % 5) - 0.5f;
    vg_output x = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, T, D}, 3, xs, "x");
    if (time_major) x = vg_transpose_c(g, x, (const int32_t[]){1, 0, 2}, 3, "x_tm");
    vg_output len = vg_const_array(g, VG_INT64, (const int64_t[]){B}, 1, (const int64_t[]){3, 2}, "len");
    vg_decoder_helper *h = vg_training_helper_new(g, x, len, time_major, NULL);
    CHECK(h != NULL);
    vg_rnn_cell *cell = vg_basic_rnn_cell_new(U, VG_ACT_NONE);
    vg_output init;
    vg_rnn_cell_zero_state(cell, g, B, vg_out(NULL, 0), VG_FLOAT, &init);
    static const double kv[U * V] = {1, -1, 0.5, -0.5, 2, 0};
    vg_constant_array ka = {kv, U * V, NULL, 0, false};
    vg_layer_config lc = {.kind = VG_LAYER_DENSE};
    lc.units = V;
    lc.no_bias = true;
    lc.kernel_initializer = vg_init_constant_array(&ka);
    vg_layer *proj = vg_layer_new(&lc);
    vg_decoder *d = vg_basic_decoder_new(cell, h, &init, proj);
    vg_dynamic_decode_options o = {0};
    o.impute_finished = true;
    vg_output outs[2], fin, flen;
    CHECK_OK(vg_dynamic_decode(g, d, &o, outs, &fin, &flen, &st), &st);
    /* the variables: TF 1.15's names for a BasicDecoder in dynamic_decode */
    int nv = 0;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 3);
    const char *names[3] = {"decoder/basic_rnn_cell/kernel", "decoder/basic_rnn_cell/bias", "decoder/dense/kernel"};
    for (int i = 0; i < nv && i < 3; i++) CHECK(strcmp(vg_op_name(vars[i].op), names[i]) == 0);
    vg_op *initop = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &initop, 1, &st), &st);
    vg_tensor *v[4] = {NULL, NULL, NULL, NULL};
    vg_output f[4] = {outs[0], outs[1], fin, flen};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, v, 4, NULL, 0, NULL, &st), &st);
    if (v[0] && v[1] && v[2] && v[3]) {
        CHECK_EQ_INT(vg_tensor_dim(v[0], 0), B);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 1), T);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 2), V);
        const int lens[B] = {3, 2};
        for (int b = 0; b < B; b++) {
            double hcur[U] = {0, 0};
            for (int t = 0; t < T; t++) {
                double logits[V] = {0, 0, 0};
                if (t < lens[b]) {
                    double pre = 0;
                    for (int k = 0; k < D; k++) pre += 0.1 * xs[(b * T + t) * D + k];
                    for (int k = 0; k < U; k++) pre += 0.1 * hcur[k];
                    for (int u = 0; u < U; u++) hcur[u] = tanh(pre);
                    for (int j = 0; j < V; j++)
                        for (int u = 0; u < U; u++) logits[j] += hcur[u] * kv[u * V + j];
                }
                int best = 0;
                for (int j = 1; j < V; j++)
                    if (logits[j] > logits[best]) best = j;
                for (int j = 0; j < V; j++)
                    CHECK_NEAR(((const float *)vg_tensor_data(v[0]))[(b * T + t) * V + j], logits[j], 1e-5);
                CHECK_EQ_INT(((const int32_t *)vg_tensor_data(v[1]))[b * T + t], best);
            }
            for (int u = 0; u < U; u++) CHECK_NEAR(((const float *)vg_tensor_data(v[2]))[b * U + u], hcur[u], 1e-5);
            CHECK_EQ_INT(((const int32_t *)vg_tensor_data(v[3]))[b], lens[b]);
        }
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(v[i]);
    vg_session_free(s);
    vg_decoder_free(d);
    vg_layer_free(proj);
    vg_decoder_helper_free(h);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

static void test_training_helper_basic_rnn(void) {
    training_helper_basic_rnn(false);
    training_helper_basic_rnn(true); /* time-major inputs, the same results */
}

/* A user-defined decoder: counts down from its state, finished at 0; outputs the
 * counter as float [batch, 1]. */
static vg_code cd_init(vg_graph *g, void *user, vg_output *finished, vg_output *inputs, vg_output *state) {
    (void)user;
    state[0] = vg_const_array(g, VG_INT32, (const int64_t[]){3}, 1, (const int32_t[]){2, 4, 1}, "start");
    *finished = vg_equal(g, state[0], vg_const_i32(g, 0, NULL), NULL);
    *inputs = vg_const_fill(g, VG_FLOAT, (const int64_t[]){3}, 1, 0, "in");
    return vg_graph_status(g, NULL);
}

static vg_code cd_step(vg_graph *g, void *user, vg_output time, vg_output inputs, const vg_output *state,
                       vg_output *outputs, vg_output *next_state, vg_output *next_inputs, vg_output *finished) {
    (void)user, (void)time;
    next_state[0] = vg_sub(g, state[0], vg_const_i32(g, 1, NULL), NULL);
    outputs[0] = vg_reshape_c(g, vg_cast(g, state[0], VG_FLOAT, NULL), (const int64_t[]){-1, 1}, 2, NULL);
    *next_inputs = inputs;
    *finished = vg_less_equal(g, next_state[0], vg_const_i32(g, 0, NULL), NULL);
    return vg_graph_status(g, NULL);
}

static void test_user_decoder(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_decoder d;
    memset(&d, 0, sizeof d);
    d.output_count = 1;
    d.output_dtypes[0] = VG_FLOAT;
    d.output_shapes[0] = vg_shape_make((const int64_t[]){1}, 1);
    d.state_count = 1;
    d.batch_dims = 1;
    d.initialize = cd_init;
    d.step = cd_step;
    vg_dynamic_decode_options o = {0};
    o.impute_finished = true;
    o.scope = "countdown";
    vg_output out, fin, len;
    CHECK_OK(vg_dynamic_decode(g, &d, &o, &out, &fin, &len, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v[3] = {NULL, NULL, NULL};
    vg_output f[3] = {out, fin, len};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, v, 3, NULL, 0, NULL, &st), &st);
    if (v[0] && v[1] && v[2]) {
        /* [3, 4, 1]: counters 2 1 0 0 / 4 3 2 1 / 1 0 0 0 (zeros imputed after finishing) */
        CHECK_EQ_INT(vg_tensor_dim(v[0], 1), 4);
        const float want[3][4] = {{2, 1, 0, 0}, {4, 3, 2, 1}, {1, 0, 0, 0}};
        for (int b = 0; b < 3; b++)
            for (int t = 0; t < 4; t++) CHECK_NEAR(((const float *)vg_tensor_data(v[0]))[b * 4 + t], want[b][t], 0);
        /* states copied through once finished: all stop at 0 */
        for (int b = 0; b < 3; b++) CHECK_EQ_INT(((const int32_t *)vg_tensor_data(v[1]))[b], 0);
        const int32_t wl[3] = {2, 4, 1};
        for (int b = 0; b < 3; b++) CHECK_EQ_INT(((const int32_t *)vg_tensor_data(v[2]))[b], wl[b]);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(v[i]);
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_decode_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output out, fin;
    vg_decoder d;
    memset(&d, 0, sizeof d);
    CHECK_CODE(vg_dynamic_decode(g, &d, NULL, &out, &fin, NULL, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output x2 = vg_const_fill(g, VG_FLOAT, (const int64_t[]){2, 3}, 2, 0, "x");
    CHECK(vg_training_helper_new(g, x2, vg_const_fill(g, VG_INT32, (const int64_t[]){2}, 1, 1, NULL), false, NULL) ==
          NULL);
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    CHECK(vg_basic_decoder_new(NULL, NULL, NULL, NULL) == NULL);
}

/* SampleEmbeddingHelper: with logits 30 apart (divided by softmax_temperature 0.5) the
 * draws are the argmax, as greedy; with two equal logits and the others -30 every draw
 * is one of the two, both appear in 40 draws, and the end token never comes (the loop
 * runs to maximum_iterations). */
static vg_tensor *run_sample(const float *emb, double temperature, int max_it) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_graph_set_seed(g, 42);
    vg_output e = vg_const_array(g, VG_FLOAT, (const int64_t[]){4, 4}, 2, emb, "embedding");
    vg_output start = vg_const_array(g, VG_INT32, (const int64_t[]){2}, 1, (const int32_t[]){0, 2}, "start_tokens");
    vg_decoder_helper *h = vg_sample_embedding_helper_new(g, e, start, 3, temperature, 7);
    vg_rnn_cell *cell = id_cell();
    vg_output init;
    vg_rnn_cell_zero_state(cell, g, 2, vg_out(NULL, 0), VG_FLOAT, &init);
    vg_decoder *d = vg_basic_decoder_new(cell, h, &init, NULL);
    vg_dynamic_decode_options o = {0};
    o.maximum_iterations = vg_const_i32(g, max_it, "max_it");
    vg_output outs[2], fin, len;
    CHECK_OK(vg_dynamic_decode(g, d, &o, outs, &fin, &len, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *ids = NULL;
    CHECK_OK(vg_session_run1(s, outs[1], &ids, &st), &st);
    free_decode_run(s, d, h, cell, g);
    return ids;
}

static void test_sample_embedding_helper(void) {
    float emb[16] = {0};
    for (int i = 0; i < 4; i++) emb[i * 4 + (i + 1) % 4] = 30;
    vg_tensor *ids = run_sample(emb, 0.5, 10);
    if (ids) {
        CHECK_EQ_INT(vg_tensor_dim(ids, 1), 3);
        const int32_t want[6] = {1, 2, 3, 3, 0, 1};
        for (int i = 0; i < 6; i++) CHECK_EQ_INT(((const int32_t *)vg_tensor_data(ids))[i], want[i]);
    }
    vg_tensor_free(ids);
    float two[16];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) two[i * 4 + k] = k < 2 ? 0.0f : -30.0f;
    ids = run_sample(two, 0.0, 20);
    if (ids) {
        CHECK_EQ_INT(vg_tensor_dim(ids, 1), 20);
        int count[4] = {0, 0, 0, 0};
        for (int i = 0; i < 40; i++) {
            int32_t v = ((const int32_t *)vg_tensor_data(ids))[i];
            CHECK(v >= 0 && v < 4);
            if (v >= 0 && v < 4) count[v]++;
        }
        CHECK(count[0] > 0 && count[1] > 0);
        CHECK_EQ_INT(count[2] + count[3], 0);
    }
    vg_tensor_free(ids);
}

/* ScheduledEmbeddingTrainingHelper with the identity cell, inputs 30 * one_hot(k) and
 * embedding row i = 30 * one_hot((i + 1) % 4): probability 0 never samples (ids -1,
 * the outputs are the given inputs); probability 1 always does: the first output is
 * the first input, every later input the embedding of the previous draw (k, k+1, ...). */
static void run_scheduled(double prob, int32_t ids[2][3], float out[2][3][4]) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_graph_set_seed(g, 3);
    const int k[2][3] = {{2, 0, 1}, {1, 1, 3}};
    float xs[2 * 3 * 4] = {0}, emb[16] = {0};
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 3; t++) xs[(b * 3 + t) * 4 + k[b][t]] = 30;
    for (int i = 0; i < 4; i++) emb[i * 4 + (i + 1) % 4] = 30;
    vg_output x = vg_const_array(g, VG_FLOAT, (const int64_t[]){2, 3, 4}, 3, xs, "x");
    vg_output e = vg_const_array(g, VG_FLOAT, (const int64_t[]){4, 4}, 2, emb, "embedding");
    vg_output len = vg_const_array(g, VG_INT32, (const int64_t[]){2}, 1, (const int32_t[]){3, 3}, "len");
    vg_decoder_helper *h = vg_scheduled_embedding_training_helper_new(g, x, len, e, vg_const_f32(g, (float)prob, "p"),
                                                                      false, 5, 6, NULL);
    CHECK(h != NULL);
    vg_rnn_cell *cell = id_cell();
    vg_output init;
    vg_rnn_cell_zero_state(cell, g, 2, vg_out(NULL, 0), VG_FLOAT, &init);
    vg_decoder *d = vg_basic_decoder_new(cell, h, &init, NULL);
    vg_output outs[2], fin;
    CHECK_OK(vg_dynamic_decode(g, d, NULL, outs, &fin, NULL, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, outs, v, 2, NULL, 0, NULL, &st), &st);
    if (v[0] && v[1]) {
        memcpy(out, vg_tensor_data(v[0]), sizeof(float) * 24);
        memcpy(ids, vg_tensor_data(v[1]), sizeof(int32_t) * 6);
    }
    vg_tensor_free(v[0]);
    vg_tensor_free(v[1]);
    free_decode_run(s, d, h, cell, g);
}

static void test_scheduled_embedding_training_helper(void) {
    int32_t ids[2][3];
    float out[2][3][4];
    const int k[2][3] = {{2, 0, 1}, {1, 1, 3}};
    memset(ids, 0, sizeof ids);
    memset(out, 0, sizeof out);
    run_scheduled(0.0, ids, out);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 3; t++) {
            CHECK_EQ_INT(ids[b][t], -1);
            for (int c = 0; c < 4; c++) CHECK_NEAR(out[b][t][c], c == k[b][t] ? 30 : 0, 0);
        }
    memset(ids, 0, sizeof ids);
    run_scheduled(1.0, ids, out);
    for (int b = 0; b < 2; b++) {
        int cur = k[b][0];
        for (int t = 0; t < 3; t++) {
            CHECK_EQ_INT(ids[b][t], cur);
            for (int c = 0; c < 4; c++) CHECK_NEAR(out[b][t][c], c == cur ? 30 : 0, 0);
            cur = (cur + 1) % 4;
        }
    }
}

int main(void) {
    RUN_TEST(test_greedy_decode_no_impute);
    RUN_TEST(test_greedy_decode_impute_finished);
    RUN_TEST(test_greedy_decode_maximum_iterations);
    RUN_TEST(test_training_helper_basic_rnn);
    RUN_TEST(test_user_decoder);
    RUN_TEST(test_sample_embedding_helper);
    RUN_TEST(test_scheduled_embedding_training_helper);
    RUN_TEST(test_decode_errors);
    TEST_MAIN_END();
}
