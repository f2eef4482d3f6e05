/* test_rnn_ops.c - the fused LSTM ops (vigil/rnn_ops.h): LSTMBlockCell against
 * BasicLSTMCell / LSTMCell (peepholes, clipping) built from plain ops, BlockLSTM against
 * LSTMBlockCell stepped by hand (and its seq_len_max zeroing), LSTMBlockFusedCell
 * (vg_fused_rnn) with sequence lengths against static_rnn, gradients of both ops by
 * finite differences, bad input. */
#include "test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>
#include <string.h>

enum { B = 3, I = 4, U = 5, T = 4 };

static float at(const vg_tensor *t, int64_t i) { return ((const float *)vg_tensor_data(t))[i]; }

static int max_diff_count(const vg_tensor *a, const vg_tensor *b, double tol) {
    if (!a || !b || vg_tensor_num_elements(a) != vg_tensor_num_elements(b)) return 1000000;
    int bad = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(a); i++)
        if (fabs(at(a, i) - at(b, i)) > tol) bad++;
    return bad;
}

/* LSTMBlockCell == BasicLSTMCell (no peephole/clip) and == LSTMCell (peepholes, clip). */
static void test_block_cell_matches_cells(void) {
    for (int variant = 0; variant < 2; variant++) {
        bool peep = variant == 1;
        float clip = peep ? 0.5f : -1.0f;
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, I}, 2, "x");
        vg_output c0 = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, U}, 2, "c0");
        vg_output h0 = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, U}, 2, "h0");
        vg_rnn_cell *blk = vg_lstm_block_cell_new(U, 0.75f, clip, peep);
        vg_rnn_cell *ref;
        if (peep) {
            vg_lstm_cell_options o = {0};
            o.use_peepholes = true;
            o.cell_clip = clip;
            o.forget_bias = 0.75f;
            ref = vg_lstm_cell_new(U, &o);
            vg_rnn_cell_set_name(ref, "ref");
        } else {
            ref = vg_basic_lstm_cell_new(U, 0.75f, true);
        }
        vg_output s0[2] = {c0, h0}, o1, n1[2], o2, n2[2];
        vg_status st;
        CHECK_OK(vg_rnn_cell_call(blk, g, x, s0, &o1, n1), &st);
        CHECK_OK(vg_rnn_cell_call(ref, g, x, s0, &o2, n2), &st);
        CHECK(vg_graph_op_by_name(g, "lstm_cell/kernel") != NULL);
        CHECK(!peep || vg_graph_op_by_name(g, "lstm_cell/w_i_diag") != NULL);
        vg_op *blk_op = vg_graph_op_by_name(g, "lstm_cell/LSTMBlockCell");
        CHECK(blk_op && strcmp(vg_op_type(blk_op), "LSTMBlockCell") == 0);
        const char *rn = peep ? "ref" : "basic_lstm_cell";
        char kn[64], bn[64];
        snprintf(kn, sizeof kn, "%s/kernel/read", rn);
        snprintf(bn, sizeof bn, "%s/bias/read", rn);
        vg_tensor *xv = kt_rand_f32((int64_t[]){B, I}, 2, 1, 2), *cv = kt_rand_f32((int64_t[]){B, U}, 2, 2, 3),
                  *hv = kt_rand_f32((int64_t[]){B, U}, 2, 3, 2), *kv = kt_rand_f32((int64_t[]){I + U, 4 * U}, 2, 4, 1.5),
                  *bv = kt_rand_f32((int64_t[]){4 * U}, 1, 5, 1), *pv[3];
        vg_output feeds[13] = {x, c0, h0, vg_graph_output_by_name(g, "lstm_cell/kernel/read", &st),
                               vg_graph_output_by_name(g, "lstm_cell/bias/read", &st),
                               vg_graph_output_by_name(g, kn, &st), vg_graph_output_by_name(g, bn, &st)};
        vg_tensor *vals[13] = {xv, cv, hv, kv, bv, kv, bv};
        int nf = 7;
        if (peep) {
            const char *pb[3] = {"lstm_cell/w_i_diag/read", "lstm_cell/w_f_diag/read", "lstm_cell/w_o_diag/read"};
            const char *pr[3] = {"ref/w_i_diag/read", "ref/w_f_diag/read", "ref/w_o_diag/read"};
            for (int k = 0; k < 3; k++) {
                pv[k] = kt_rand_f32((int64_t[]){U}, 1, 10u + (unsigned)k, 2);
                feeds[nf] = vg_graph_output_by_name(g, pb[k], &st);
                vals[nf++] = pv[k];
                feeds[nf] = vg_graph_output_by_name(g, pr[k], &st);
                vals[nf++] = pv[k];
            }
        }
        vg_output fetch[4] = {n1[0], n1[1], n2[0], n2[1]};
        vg_tensor *r[4] = {0};
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run(s, NULL, feeds, vals, nf, fetch, r, 4, NULL, 0, NULL, &st), &st);
        CHECK_EQ_INT(max_diff_count(r[0], r[2], 1e-5), 0);
        CHECK_EQ_INT(max_diff_count(r[1], r[3], 1e-5), 0);
        if (peep && r[0]) {
            int clipped = 0;
            for (int i = 0; i < B * U; i++) clipped += fabsf(at(r[0], i)) == 0.5f;
            CHECK(clipped > 0); /* the clip was exercised */
        }
        for (int i = 0; i < 4; i++) vg_tensor_free(r[i]);
        vg_tensor_free(xv); vg_tensor_free(cv); vg_tensor_free(hv); vg_tensor_free(kv); vg_tensor_free(bv);
        if (peep) for (int k = 0; k < 3; k++) vg_tensor_free(pv[k]);
        vg_session_free(s);
        vg_rnn_cell_free(blk);
        vg_rnn_cell_free(ref);
        vg_graph_free(g);
    }
}

typedef struct ins {
    vg_output p[9];     /* seq_len_max (BlockLSTM only), x, cs, h, w, wci, wcf, wco, b */
    vg_tensor *v[9];
} ins;

static void make_ins(vg_graph *g, ins *in, bool block, int64_t seq) {
    const char *names[9] = {"seq", "x", "cs", "h", "w", "wci", "wcf", "wco", "b"};
    int64_t xd[3] = {T, B, I}, d[2] = {B, U}, wd[2] = {I + U, 4 * U}, hd[1] = {U}, bd[1] = {4 * U};
    for (int k = 1; k < 9; k++) {
        const int64_t *dims = k == 1 ? (block ? xd : xd + 1) : k <= 3 ? d : k == 4 ? wd : k <= 7 ? hd : bd;
        int nd = k == 1 ? (block ? 3 : 2) : k <= 4 ? 2 : 1;
        in->p[k] = vg_placeholder(g, VG_FLOAT, dims, nd, names[k]);
        in->v[k] = kt_rand_f32(dims, nd, 20u + (unsigned)k, k == 4 ? 1.2 : 2.0);
    }
    in->p[0] = vg_const_i64(g, seq, "seq");
    in->v[0] = NULL;
}

static void free_ins(ins *in) {
    for (int k = 1; k < 9; k++) vg_tensor_free(in->v[k]);
}

/* BlockLSTM == LSTMBlockCell stepped T times; seq_len_max zeroes the tail. */
static void test_block_lstm_forward(void) {
    for (int variant = 0; variant < 2; variant++) {
        int64_t L = variant ? 2 : T;
        vg_graph *g = vg_graph_new();
        ins in;
        make_ins(g, &in, true, L);
        vg_op *blk = vg_block_lstm(g, in.p[0], in.p[1], in.p[2], in.p[3], in.p[4], in.p[5], in.p[6], in.p[7], in.p[8],
                                   1.0f, 2.0f, true, NULL);
        CHECK(blk && vg_op_num_outputs(blk) == 7);
        vg_op *steps = vg_unpack(g, in.p[1], T, 0, NULL);
        vg_output c = in.p[2], h = in.p[3], hs[T], cs[T];
        for (int t = 0; t < T; t++) {
            vg_op *cell = vg_lstm_block_cell(g, vg_out(steps, t), c, h, in.p[4], in.p[5], in.p[6], in.p[7], in.p[8], 1.0f,
                                             2.0f, true, NULL);
            c = cs[t] = vg_out(cell, 1);
            h = hs[t] = vg_out(cell, 6);
        }
        vg_output fetch[3] = {vg_out(blk, 1), vg_out(blk, 6), vg_pack(g, hs, T, 0, NULL)};
        vg_output fetch2 = vg_pack(g, cs, T, 0, NULL);
        vg_tensor *r[3] = {0}, *rc = NULL;
        vg_status st;
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run(s, NULL, in.p + 1, in.v + 1, 8, fetch, r, 3, NULL, 0, NULL, &st), &st);
        CHECK_OK(vg_session_run(s, NULL, in.p + 1, in.v + 1, 8, &fetch2, &rc, 1, NULL, 0, NULL, &st), &st);
        int bad = 0;
        for (int64_t i = 0; r[0] && rc && i < T * B * U; i++) {
            bool tail = i >= L * B * U;
            if (fabs(at(r[1], i) - (tail ? 0.0f : at(r[2], i))) > 1e-5) bad++;
            if (fabs(at(r[0], i) - (tail ? 0.0f : at(rc, i))) > 1e-5) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < 3; i++) vg_tensor_free(r[i]);
        vg_tensor_free(rc);
        vg_session_free(s);
        free_ins(&in);
        vg_graph_free(g);
    }
}

static void test_block_gradients(void) {
    for (int variant = 0; variant < 4; variant++) {
        bool block = variant >= 2, peep = variant & 1;
        vg_graph *g = vg_graph_new();
        ins in;
        make_ins(g, &in, block, block && !peep ? 3 : T);
        vg_op *op = block ? vg_block_lstm(g, in.p[0], in.p[1], in.p[2], in.p[3], in.p[4], in.p[5], in.p[6], in.p[7],
                                          in.p[8], 1.0f, -1.0f, peep, NULL)
                          : vg_lstm_block_cell(g, in.p[1], in.p[2], in.p[3], in.p[4], in.p[5], in.p[6], in.p[7],
                                               in.p[8], 1.0f, -1.0f, peep, NULL);
        /* y = [cs, h]: the outputs TF's gradient reads */
        vg_output y = vg_concat_c(g, (vg_output[]){vg_out(op, 1), vg_out(op, 6)}, 2, block ? 2 : 1, "y");
        int n = peep ? 8 : 5; /* without peepholes wci/wcf/wco are unused: skip them */
        vg_output xs[8];
        vg_tensor *xv[8];
        int k2 = 0;
        for (int k = 1; k < 9; k++) {
            if (!peep && k >= 5 && k <= 7) continue;
            xs[k2] = in.p[k];
            xv[k2++] = in.v[k];
        }
        vg_output extra[3];
        vg_tensor *ev[3];
        int ne = 0;
        if (!peep)
            for (int k = 5; k <= 7; k++) { extra[ne] = in.p[k]; ev[ne++] = in.v[k]; }
        int bad = ne ? vg_gradcheck_ex(g, xs, xv, n, extra, ev, ne, y, 2e-3, 1e-2) : vg_gradcheck(g, xs, xv, n, y, 2e-3, 1e-2);
        if (bad) fprintf(stderr, "variant %d (%s, peephole %d): %d mismatches\n", variant, block ? "BlockLSTM" : "LSTMBlockCell", peep, bad);
        CHECK_EQ_INT(bad, 0);
        free_ins(&in);
        vg_graph_free(g);
    }
}

/* LSTMBlockFusedCell with sequence lengths == static_rnn over LSTMBlockCell with them. */
static void test_fused_rnn_sequence_length(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){T, B, I}, 2 + 1, "x");
    vg_output len = vg_const_i32_vec(g, (int32_t[]){2, 4, 0}, 3, "len");
    vg_rnn_cell *fused = vg_lstm_block_fused_cell_new(U, 1.0f, 0, false);
    vg_output out, fin[2];
    vg_status st;
    CHECK_OK(vg_fused_rnn(fused, g, x, NULL, VG_FLOAT, len, &out, fin, &st), &st);
    CHECK(vg_graph_op_by_name(g, "lstm_fused_cell/kernel") != NULL);
    vg_op *bl = vg_graph_op_by_name(g, "lstm_fused_cell/BlockLSTM");
    CHECK(bl && strcmp(vg_op_type(bl), "BlockLSTM") == 0);
    vg_rnn_cell *step = vg_lstm_block_cell_new(U, 1.0f, 0, false);
    vg_op *xs = vg_unpack(g, x, T, 0, NULL);
    vg_output xl[T], outs[T], fin2[2];
    for (int t = 0; t < T; t++) xl[t] = vg_out(xs, t);
    CHECK_OK(vg_static_rnn(step, g, xl, T, NULL, VG_FLOAT, len, NULL, outs, fin2, &st), &st);
    vg_tensor *xv = kt_rand_f32((int64_t[]){T, B, I}, 3, 1, 2), *kv = kt_rand_f32((int64_t[]){I + U, 4 * U}, 2, 2, 1.2),
              *bv = kt_rand_f32((int64_t[]){4 * U}, 1, 3, 1);
    vg_output feeds[5] = {x, vg_graph_output_by_name(g, "lstm_fused_cell/kernel/read", &st),
                          vg_graph_output_by_name(g, "lstm_fused_cell/bias/read", &st),
                          vg_graph_output_by_name(g, "rnn/lstm_cell/kernel/read", &st),
                          vg_graph_output_by_name(g, "rnn/lstm_cell/bias/read", &st)};
    vg_tensor *vals[5] = {xv, kv, bv, kv, bv};
    vg_output fetch[5] = {out, fin[0], fin[1], fin2[0], fin2[1]};
    vg_output stacked = vg_pack(g, outs, T, 0, NULL);
    vg_tensor *r[5] = {0}, *rs = NULL;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 5, fetch, r, 5, NULL, 0, NULL, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 5, &stacked, &rs, 1, NULL, 0, NULL, &st), &st);
    CHECK_EQ_INT(max_diff_count(r[0], rs, 1e-5), 0);
    CHECK_EQ_INT(max_diff_count(r[1], r[3], 1e-5), 0);
    CHECK_EQ_INT(max_diff_count(r[2], r[4], 1e-5), 0);
    /* row 2 has length 0: its final state is the (zero) initial state */
    for (int j = 0; r[2] && j < U; j++) CHECK(at(r[2], 2 * U + j) == 0.0f);
    for (int i = 0; i < 5; i++) vg_tensor_free(r[i]);
    vg_tensor_free(rs); vg_tensor_free(xv); vg_tensor_free(kv); vg_tensor_free(bv);
    vg_session_free(s);
    vg_rnn_cell_free(fused);
    vg_rnn_cell_free(step);
    vg_graph_free(g);
}

static void test_bad_input(void) {
    vg_graph *g = vg_graph_new();
    ins in;
    make_ins(g, &in, false, T);
    vg_output wbad = vg_placeholder(g, VG_FLOAT, (int64_t[]){I + U + 1, 4 * U}, 2, "wbad");
    CHECK(vg_lstm_block_cell(g, in.p[1], in.p[2], in.p[3], wbad, in.p[5], in.p[6], in.p[7], in.p[8], 1, -1, false,
                             NULL) == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "w's first dimension");
    free_ins(&in);
    vg_graph_free(g);

    g = vg_graph_new();
    make_ins(g, &in, true, T);
    vg_output seq32 = vg_const_i32(g, 2, "s32");
    CHECK(vg_block_lstm(g, seq32, in.p[1], in.p[2], in.p[3], in.p[4], in.p[5], in.p[6], in.p[7], in.p[8], 1, -1, false,
                        NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "seq_len_max");
    free_ins(&in);
    vg_graph_free(g);

    /* run time: shapes unknown at build time, wrong at run time */
    g = vg_graph_new();
    vg_output p[8];
    const char *nm[8] = {"x", "cs", "h", "w", "wci", "wcf", "wco", "b"};
    for (int k = 0; k < 8; k++) p[k] = vg_placeholder(g, VG_FLOAT, NULL, -1, nm[k]);
    vg_op *op = vg_lstm_block_cell(g, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], 1, -1, false, NULL);
    CHECK(op != NULL);
    vg_tensor *v[8] = {kt_rand_f32((int64_t[]){B, I}, 2, 1, 1), kt_rand_f32((int64_t[]){B, U}, 2, 2, 1), kt_rand_f32((int64_t[]){B, U + 1}, 2, 3, 1),
                       kt_rand_f32((int64_t[]){I + U, 4 * U}, 2, 4, 1), kt_rand_f32((int64_t[]){U}, 1, 5, 1), kt_rand_f32((int64_t[]){U}, 1, 6, 1),
                       kt_rand_f32((int64_t[]){U}, 1, 7, 1), kt_rand_f32((int64_t[]){4 * U}, 1, 8, 1)};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *out = NULL;
    vg_output h = vg_out(op, 6);
    CHECK_STATUS(vg_session_run(s, NULL, p, v, 8, &h, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT, "h_prev");
    vg_tensor_free(out);
    for (int k = 0; k < 8; k++) vg_tensor_free(v[k]);
    vg_session_free(s);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_block_cell_matches_cells);
    RUN_TEST(test_block_lstm_forward);
    RUN_TEST(test_block_gradients);
    RUN_TEST(test_fused_rnn_sequence_length);
    RUN_TEST(test_bad_input);
    TEST_MAIN_END();
}
