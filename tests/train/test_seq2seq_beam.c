/* test_seq2seq_beam.c - BeamSearchDecoder and tile_batch (vigil/seq2seq.h): a beam
 * search of width 2 over a fixed bigram table (the cell's output is log P(next | prev)
 * for a one-hot embedding of the previous token), whose beams, scores, parents,
 * lengths and GatherTree'd predicted ids are worked out by hand, with and without a
 * length penalty (which reorders the beams), and the same ids from the graph exported
 * to a GraphDef and imported again; tile_batch's order. */
#include "test_util.h"
#include "vigil/vigil.h"

enum { V = 4, K = 2, EOS = 3 };

static const double P[V][V] = {
    {0.01, 0.5, 0.39, 0.1},   /* after the start token 0 */
    {0.01, 0.1, 0.09, 0.8},   /* after 1: mostly the end */
    {0.01, 0.9, 0.05, 0.04},  /* after 2: mostly 1 */
    {0.25, 0.25, 0.25, 0.25}, /* after the end (masked) */
};

/* out = one_hot(prev) log P; state' = state + 1 */
static vg_code table_call(vg_graph *g, vg_output x, const vg_output *s, vg_output *out, vg_output *ns, void *user) {
    (void)user;
    double lp[V * V];
    for (int i = 0; i < V; i++)
        for (int j = 0; j < V; j++) lp[i * V + j] = log(P[i][j]);
    vg_output t = vg_const_values(g, VG_FLOAT, lp, V * V, NULL, 0, (const int64_t[]){V, V}, 2, false, "table");
    *out = vg_matmul(g, x, t, false, false, NULL);
    ns[0] = vg_add(g, s[0], vg_const_f32(g, 1.0f, NULL), NULL);
    return vg_graph_status(g, NULL);
}

typedef struct beam_result {
    int T;
    int32_t ids[2][4][K], raw[2][4][K], parents[2][4][K];
    float scores[2][4][K], log_probs[2][K], steps[2][K];
    int64_t lengths[2][K];
    bool finished[2][K];
} beam_result;

static void run_beam(int B, const int32_t *start, double lp_weight, beam_result *r) {
    memset(r, 0, sizeof *r);
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_shape sh = vg_shape_make((const int64_t[]){1}, 1);
    vg_rnn_cell_def def = {"table", 1, &sh, V, NULL, table_call, NULL};
    vg_rnn_cell *cell = vg_custom_rnn_cell_new(&def);
    double eye[V * V] = {0};
    for (int i = 0; i < V; i++) eye[i * V + i] = 1;
    vg_output emb = vg_const_values(g, VG_FLOAT, eye, V * V, NULL, 0, (const int64_t[]){V, V}, 2, false, "embedding");
    vg_output starts = vg_const_array(g, VG_INT32, (const int64_t[]){B}, 1, start, "start_tokens");
    vg_output init = vg_tile_batch(g, vg_const_fill(g, VG_FLOAT, (const int64_t[]){B, 1}, 2, 0, "s0"), K, NULL);
    CHECK_EQ_INT(vg_output_shape(init).dims[0], B * K);
    vg_decoder *d = vg_beam_search_decoder_new(g, cell, emb, starts, EOS, &init, K, NULL, lp_weight);
    CHECK(d != NULL);
    vg_dynamic_decode_options o = {0};
    o.maximum_iterations = vg_const_i32(g, 4, "max_it");
    vg_output outs[4], fin[4], len;
    CHECK_OK(vg_dynamic_decode(g, d, &o, outs, fin, &len, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v[8] = {NULL};
    vg_output f[8] = {outs[0], outs[1], outs[2], outs[3], fin[0], fin[1], fin[2], fin[3]};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, v, 8, NULL, 0, NULL, &st), &st);
    if (v[0] && v[7]) {
        CHECK_EQ_INT(vg_tensor_ndims(v[0]), 3);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 0), B);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 2), K);
        int T = (int)vg_tensor_dim(v[0], 1);
        r->T = T;
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < T && t < 4; t++)
                for (int k = 0; k < K; k++) {
                    int at = (b * T + t) * K + k;
                    r->ids[b][t][k] = ((const int32_t *)vg_tensor_data(v[0]))[at];
                    r->scores[b][t][k] = ((const float *)vg_tensor_data(v[1]))[at];
                    r->raw[b][t][k] = ((const int32_t *)vg_tensor_data(v[2]))[at];
                    r->parents[b][t][k] = ((const int32_t *)vg_tensor_data(v[3]))[at];
                }
            for (int k = 0; k < K; k++) {
                r->steps[b][k] = ((const float *)vg_tensor_data(v[4]))[b * K + k];
                r->log_probs[b][k] = ((const float *)vg_tensor_data(v[5]))[b * K + k];
                r->finished[b][k] = ((const bool *)vg_tensor_data(v[6]))[b * K + k];
                r->lengths[b][k] = ((const int64_t *)vg_tensor_data(v[7]))[b * K + k];
            }
        }
    }
    /* the graph round-trips through a GraphDef (while loop, conds, GatherTree): the
     * imported predicted_ids are the same */
    void *bytes = NULL;
    size_t nbytes = 0;
    CHECK_OK(vg_graph_to_graphdef(g, &bytes, &nbytes, &st), &st);
    vg_graph *g2 = vg_graph_new();
    char ret[300];
    snprintf(ret, sizeof ret, "%s:%d", vg_op_name(outs[0].op), outs[0].index);
    const char *rets[1] = {ret};
    vg_output imported = vg_out(NULL, 0);
    vg_import_options io;
    memset(&io, 0, sizeof io);
    io.n_return_tensors = 1;
    io.return_tensors = rets;
    io.return_tensors_out = &imported;
    CHECK_OK(vg_graph_import_graph_def(g2, bytes, nbytes, &io, &st), &st);
    vg_free(bytes);
    vg_session *s2 = imported.op ? vg_session_new(g2, NULL, &st) : NULL;
    vg_tensor *iv = NULL;
    if (s2) CHECK_OK(vg_session_run1(s2, imported, &iv, &st), &st);
    CHECK(iv != NULL && v[0] != NULL);
    if (iv && v[0]) {
        CHECK_EQ_INT(vg_tensor_num_elements(iv), vg_tensor_num_elements(v[0]));
        CHECK(memcmp(vg_tensor_data(iv), vg_tensor_data(v[0]), sizeof(int32_t) * (size_t)vg_tensor_num_elements(iv)) ==
              0);
    }
    vg_tensor_free(iv);
    vg_session_free(s2);
    vg_graph_free(g2);
    for (int i = 0; i < 8; i++) vg_tensor_free(v[i]);
    vg_session_free(s);
    vg_decoder_free(d);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

#define L(a, b) log(P[a][b])

/* No length penalty. Batch 0 from token 0:
 *  t0: only beam 0 is live: 1 (log .5), 2 (log .39)
 *  t1: (beam 0, end) log .5 + log .8 beats (beam 1, 1) log .39 + log .9
 *  t2: beam 0 is finished (only end, same score); beam 1 ends: log .39 + log .9 + log .8
 * Batch 1 from token 2: t0 1 (log .9), 2 (log .05); t1 (0, end) and (0, 1);
 * t2 (0, end) and (1, end). */
static void test_beam_search_by_hand(void) {
    beam_result r;
    run_beam(2, (const int32_t[]){0, 2}, 0.0, &r);
    CHECK_EQ_INT(r.T, 3);
    const int32_t raw[2][3][K] = {{{1, 2}, {3, 1}, {3, 3}}, {{1, 2}, {3, 1}, {3, 3}}};
    const int32_t par[2][3][K] = {{{0, 0}, {0, 1}, {0, 1}}, {{0, 0}, {0, 0}, {0, 1}}};
    const int32_t ids[2][3][K] = {{{1, 2}, {3, 1}, {3, 3}}, {{1, 1}, {3, 1}, {3, 3}}};
    const double sc[2][3][K] = {
        {{L(0, 1), L(0, 2)}, {L(0, 1) + L(1, 3), L(0, 2) + L(2, 1)}, {L(0, 1) + L(1, 3), L(0, 2) + L(2, 1) + L(1, 3)}},
        {{L(2, 1), L(2, 2)}, {L(2, 1) + L(1, 3), L(2, 1) + L(1, 1)}, {L(2, 1) + L(1, 3), L(2, 1) + L(1, 1) + L(1, 3)}}};
    for (int b = 0; b < 2; b++) {
        for (int t = 0; t < 3; t++)
            for (int k = 0; k < K; k++) {
                CHECK_EQ_INT(r.raw[b][t][k], raw[b][t][k]);
                CHECK_EQ_INT(r.parents[b][t][k], par[b][t][k]);
                CHECK_EQ_INT(r.ids[b][t][k], ids[b][t][k]);
                CHECK_NEAR(r.scores[b][t][k], sc[b][t][k], 1e-5);
            }
        for (int k = 0; k < K; k++) {
            CHECK_NEAR(r.log_probs[b][k], sc[b][2][k], 1e-5);
            CHECK(r.finished[b][k]);
            CHECK_EQ_INT(r.lengths[b][k], k == 0 ? 2 : 3); /* the end token counts once */
            CHECK_NEAR(r.steps[b][k], 3, 0); /* the cell ran 3 times for every beam */
        }
    }
}

/* length_penalty_weight 1: scores are log P / ((5 + len) / 6), len without the end
 * token. At t1 (beam 1, token 1) (len 2) scores (log .39 + log .9) / (7/6) = -0.897 and
 * beats (beam 0, end) (len 1) at log .5 + log .8 = -0.916: the beams swap. */
static void test_beam_search_length_penalty(void) {
    beam_result r;
    run_beam(1, (const int32_t[]){0}, 1.0, &r);
    CHECK_EQ_INT(r.T, 3);
    const int32_t raw[3][K] = {{1, 2}, {1, 3}, {3, 3}};
    const int32_t par[3][K] = {{0, 0}, {1, 0}, {1, 0}};
    const int32_t ids[3][K] = {{1, 2}, {3, 1}, {3, 3}};
    const double p6 = 6.0 / 6.0, p7 = 7.0 / 6.0;
    const double sc[3][K] = {{L(0, 1) / p6, L(0, 2) / p6},
                             {(L(0, 2) + L(2, 1)) / p7, (L(0, 1) + L(1, 3)) / p6},
                             {(L(0, 1) + L(1, 3)) / p7, (L(0, 2) + L(2, 1) + L(1, 3)) / p7}};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < K; k++) {
            CHECK_EQ_INT(r.raw[0][t][k], raw[t][k]);
            CHECK_EQ_INT(r.parents[0][t][k], par[t][k]);
            CHECK_EQ_INT(r.ids[0][t][k], ids[t][k]);
            CHECK_NEAR(r.scores[0][t][k], sc[t][k], 1e-5);
        }
    CHECK_NEAR(r.log_probs[0][0], L(0, 1) + L(1, 3), 1e-5);
    CHECK_EQ_INT(r.lengths[0][0], 2);
    CHECK_EQ_INT(r.lengths[0][1], 3);
}

/* tile_batch repeats each entry in a row; a rank-0 input is refused. */
static void test_tile_batch(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output t = vg_const_array(g, VG_INT32, (const int64_t[]){2, 3}, 2, (const int32_t[]){1, 2, 3, 4, 5, 6}, "t");
    vg_output tt = vg_tile_batch(g, t, 3, NULL);
    CHECK_EQ_INT(vg_output_shape(tt).dims[0], 6);
    CHECK_EQ_INT(vg_output_shape(tt).dims[1], 3);
    vg_output p = vg_placeholder(g, VG_INT32, (const int64_t[]){-1, 2}, 2, "p");
    vg_output pt = vg_tile_batch(g, p, 2, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *o = NULL;
    CHECK_OK(vg_session_run1(s, tt, &o, &st), &st);
    if (o) {
        const int32_t want[18] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 4, 5, 6};
        for (int i = 0; i < 18; i++) CHECK_EQ_INT(((const int32_t *)vg_tensor_data(o))[i], want[i]);
    }
    vg_tensor_free(o);
    vg_tensor *pv = vg_tensor_new(VG_INT32, (const int64_t[]){1, 2}, 2, &st), *po = NULL;
    ((int32_t *)vg_tensor_data(pv))[0] = 7;
    ((int32_t *)vg_tensor_data(pv))[1] = 8;
    CHECK_OK(vg_session_run(s, NULL, &p, &pv, 1, &pt, &po, 1, NULL, 0, NULL, &st), &st);
    if (po) {
        CHECK_EQ_INT(vg_tensor_dim(po, 0), 2);
        CHECK_EQ_INT(((const int32_t *)vg_tensor_data(po))[2], 7);
        CHECK_EQ_INT(((const int32_t *)vg_tensor_data(po))[3], 8);
    }
    vg_tensor_free(po);
    vg_tensor_free(pv);
    vg_session_free(s);
    CHECK(vg_tile_batch(g, vg_const_i32(g, 1, NULL), 2, NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_beam_search_by_hand);
    RUN_TEST(test_beam_search_length_penalty);
    RUN_TEST(test_tile_batch);
    TEST_MAIN_END();
}
