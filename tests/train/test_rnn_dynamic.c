/* test_rnn_dynamic.c - tf.nn.dynamic_rnn and bidirectional_dynamic_rnn (vigil/rnn.h) on
 * the while loop and TensorArrays: the same values as static_rnn with the same weights
 * (batch-major and time-major, with and without sequence_length, MultiRNNCell), TF's
 * names, gradients by finite differences through the loop, and the bidirectional RNN
 * against static_rnn over hand-reversed sequences. */
#include "test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include <math.h>
#include <string.h>

enum { B = 3, T = 4, I = 2, U = 3 };

static vg_tensor *rnd(vg_dtype dt, const int64_t *d, int nd, unsigned seed, double scale) {
    vg_tensor *t = vg_tensor_new(dt, d, nd, NULL);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        seed = seed * 1103515245u + 12345u;
        double v = (((seed >> 8) & 0xffff) / 65535.0 - 0.5) * scale;
        if (dt == VG_DOUBLE) ((double *)vg_tensor_data(t))[i] = v;
        else ((float *)vg_tensor_data(t))[i] = (float)v;
    }
    return t;
}
static double at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_DOUBLE ? ((const double *)vg_tensor_data(t))[i] : ((const float *)vg_tensor_data(t))[i];
}

static vg_rnn_cell *make(int kind) {
    if (kind == 0) return vg_basic_lstm_cell_new(U, 1.0f, true);
    if (kind == 1) return vg_gru_cell_new(U);
    vg_rnn_cell *c[2] = {vg_lstm_cell_new(U, NULL), vg_basic_rnn_cell_new(U, VG_ACT_NONE)};
    return vg_multi_rnn_cell_new(c, 2);
}

/* the variables of cell kind `kind` under scope sc, as read outputs */
static int reads(vg_graph *g, int kind, const char *sc, vg_output *out) {
    static const char *const names[3][4] = {{"basic_lstm_cell/kernel", "basic_lstm_cell/bias"},
                                           {"gru_cell/gates/kernel", "gru_cell/gates/bias", "gru_cell/candidate/kernel",
                                            "gru_cell/candidate/bias"},
                                           {"multi_rnn_cell/cell_0/lstm_cell/kernel", "multi_rnn_cell/cell_0/lstm_cell/bias",
                                            "multi_rnn_cell/cell_1/basic_rnn_cell/kernel",
                                            "multi_rnn_cell/cell_1/basic_rnn_cell/bias"}};
    int n = kind == 0 ? 2 : 4;
    vg_status st;
    for (int k = 0; k < n; k++) {
        char full[160];
        snprintf(full, sizeof full, "%s/%s/read", sc, names[kind][k]);
        out[k] = vg_graph_output_by_name(g, full, &st);
        if (!out[k].op) fprintf(stderr, "missing %s\n", full);
        CHECK(out[k].op != NULL);
    }
    return n;
}

static vg_tensor *value_like(vg_output o, unsigned seed) {
    vg_shape s = vg_output_shape(o);
    return rnd(vg_output_dtype(o), s.dims, s.ndims, seed, 1.5);
}

/* dynamic_rnn == static_rnn over the unstacked inputs, same weights. */
static void test_dynamic_matches_static(void) {
    for (int variant = 0; variant < 12; variant++) {
        int kind = variant % 3;
        bool time_major = (variant / 3) & 1, with_len = variant / 6;
        vg_graph *g = vg_graph_new();
        int64_t xd[3] = {time_major ? T : B, time_major ? B : T, I};
        vg_output x = vg_placeholder(g, VG_DOUBLE, xd, 3, "x");
        vg_output len = with_len ? vg_const_i32_vec(g, (int32_t[]){2, 4, 0}, 3, "len") : (vg_output){NULL, 0};
        vg_rnn_cell *dc = make(kind), *sc = make(kind);
        vg_output dout, dfin[4], souts[T], sfin[4];
        vg_status st;
        CHECK_OK(vg_dynamic_rnn(dc, g, x, len, NULL, VG_DOUBLE, 0, time_major, NULL, &dout, dfin, &st), &st);
        vg_op *xs = vg_unpack(g, x, T, time_major ? 0 : 1, NULL);
        vg_output xl[T];
        for (int t = 0; t < T; t++) xl[t] = vg_out(xs, t);
        CHECK_OK(vg_static_rnn(sc, g, xl, T, NULL, VG_DOUBLE, len, "srnn", souts, sfin, &st), &st);
        vg_op *w = vg_graph_op_by_name(g, "rnn/while/LoopCond");
        if (!w) w = vg_graph_op_by_name(g, "rnn/while/LoopCond_1");
        CHECK(w != NULL);
        vg_shape os = vg_output_shape(dout);
        CHECK_EQ_INT(os.ndims, 3);
        CHECK_EQ_INT(os.dims[2], U);
        vg_output rd[4], rs[4];
        int nw = reads(g, kind, "rnn", rd);
        reads(g, kind, "srnn", rs);
        vg_output feeds[9];
        vg_tensor *vals[9];
        int nf = 0;
        feeds[nf] = x;
        vals[nf++] = rnd(VG_DOUBLE, xd, 3, 3u + (unsigned)variant, 2.0);
        for (int k = 0; k < nw; k++) {
            feeds[nf] = rd[k];
            vals[nf++] = value_like(rd[k], 40u + (unsigned)k);
            feeds[nf] = rs[k];
            vals[nf] = vg_tensor_copy(vals[nf - 1], &st);
            nf++;
        }
        int ns = vg_rnn_cell_state_count(dc);
        vg_output st_stack = vg_pack(g, souts, T, time_major ? 0 : 1, NULL);
        vg_output fetch[10] = {dout, st_stack};
        for (int i = 0; i < ns; i++) { fetch[2 + 2 * i] = dfin[i]; fetch[3 + 2 * i] = sfin[i]; }
        vg_tensor *r[10] = {0};
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run(s, NULL, feeds, vals, nf, fetch, r, 2 + 2 * ns, NULL, 0, NULL, &st), &st);
        int bad = 0;
        for (int k = 0; k < 1 + ns; k++) {
            if (!r[2 * k] || !r[2 * k + 1] || vg_tensor_num_elements(r[2 * k]) != vg_tensor_num_elements(r[2 * k + 1])) {
                bad++;
                continue;
            }
            for (int64_t i = 0; i < vg_tensor_num_elements(r[2 * k]); i++)
                if (fabs(at(r[2 * k], i) - at(r[2 * k + 1], i)) > 1e-12) bad++;
        }
        if (bad) fprintf(stderr, "variant %d (kind %d, time_major %d, lengths %d): %d differences\n", variant, kind,
                         time_major, with_len, bad);
        CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < 2 + 2 * ns; i++) vg_tensor_free(r[i]);
        for (int i = 0; i < nf; i++) vg_tensor_free(vals[i]);
        vg_session_free(s);
        vg_rnn_cell_free(dc);
        vg_rnn_cell_free(sc);
        vg_graph_free(g);
    }
}

/* Gradients through the while loop: inputs, initial state, weights. */
static void test_dynamic_gradients(void) {
    for (int variant = 0; variant < 2; variant++) {
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){B, T, I}, 3, "x");
        vg_output h0 = vg_placeholder(g, VG_DOUBLE, (int64_t[]){B, U}, 2, "h0");
        vg_output len = variant ? vg_const_i32_vec(g, (int32_t[]){1, 4, 3}, 3, "len") : (vg_output){NULL, 0};
        vg_rnn_cell *c = vg_gru_cell_new(U);
        vg_output out, fin[1];
        vg_status st;
        CHECK_OK(vg_dynamic_rnn(c, g, x, len, &h0, VG_DOUBLE, 0, false, NULL, &out, fin, &st), &st);
        vg_output y = vg_concat_c(g, (vg_output[]){vg_reshape_c(g, out, (int64_t[]){B, T * U}, 2, NULL), fin[0]}, 2, 1, "y");
        vg_output xs[6] = {x, h0};
        int n = 2 + reads(g, 1, "rnn", xs + 2);
        vg_tensor *v[6] = {rnd(VG_DOUBLE, (int64_t[]){B, T, I}, 3, 5u, 2.0), rnd(VG_DOUBLE, (int64_t[]){B, U}, 2, 6u, 1.0)};
        for (int k = 2; k < n; k++) v[k] = value_like(xs[k], 50u + (unsigned)k);
        int bad = vg_gradcheck(g, xs, v, n, y, 1e-6, 1e-6);
        if (bad) fprintf(stderr, "variant %d: %d mismatches\n", variant, bad);
        CHECK_EQ_INT(bad, 0);
        for (int k = 0; k < n; k++) vg_tensor_free(v[k]);
        vg_rnn_cell_free(c);
        vg_graph_free(g);
    }
}

/* bidirectional: fw == dynamic_rnn; bw == static_rnn over each row reversed within its
 * length, reversed back; names under bidirectional_rnn/{fw,bw}. */
static void test_bidirectional(void) {
    for (int with_len = 0; with_len < 2; with_len++) {
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){B, T, I}, 3, "x");
        static const int32_t lens[B] = {2, 4, 3};
        vg_output len = with_len ? vg_const_i32_vec(g, lens, B, "len") : (vg_output){NULL, 0};
        vg_rnn_cell *fw = vg_basic_lstm_cell_new(U, 1.0f, true), *bw = vg_gru_cell_new(U);
        vg_output outs[2], ffw[2], fbw[1];
        vg_status st;
        CHECK_OK(vg_bidirectional_dynamic_rnn(fw, bw, g, x, len, NULL, NULL, VG_DOUBLE, 0, false, NULL, outs, ffw, fbw, &st),
                 &st);
        vg_output rf[2], rb[4];
        reads(g, 0, "bidirectional_rnn/fw", rf);
        reads(g, 1, "bidirectional_rnn/bw", rb);
        vg_tensor *xv = rnd(VG_DOUBLE, (int64_t[]){B, T, I}, 3, 9u, 2.0);
        vg_output feeds[7] = {x, rf[0], rf[1], rb[0], rb[1], rb[2], rb[3]};
        vg_tensor *vals[7] = {xv};
        for (int k = 1; k < 7; k++) vals[k] = value_like(feeds[k], 60u + (unsigned)k);
        vg_output fetch[3] = {outs[0], outs[1], fbw[0]};
        vg_tensor *r[3] = {0};
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run(s, NULL, feeds, vals, 7, fetch, r, 3, NULL, 0, NULL, &st), &st);
        vg_session_free(s);
        /* reference for bw: a second graph, one row at a time through static_rnn */
        int bad = 0;
        for (int b = 0; b < B && r[1]; b++) {
            int L = with_len ? lens[b] : T;
            vg_graph *g2 = vg_graph_new();
            vg_rnn_cell *c2 = vg_gru_cell_new(U);
            vg_output xl[T], o2[T], f2[1];
            double xr[T][I];
            for (int t = 0; t < L; t++)
                for (int i = 0; i < I; i++) xr[t][i] = at(xv, (b * T + (L - 1 - t)) * I + i);
            for (int t = 0; t < L; t++) xl[t] = vg_const_array(g2, VG_DOUBLE, (int64_t[]){1, I}, 2, xr[t], NULL);
            if (L > 0) CHECK_OK(vg_static_rnn(c2, g2, xl, L, NULL, VG_DOUBLE, (vg_output){NULL, 0}, "bw", o2, f2, &st), &st);
            vg_output r2[4];
            reads(g2, 1, "bw", r2);
            vg_session *s2 = vg_session_new(g2, NULL, &st);
            vg_output f[T + 1];
            for (int t = 0; t < L; t++) f[t] = o2[t];
            f[L] = f2[0];
            vg_tensor *q[T + 1] = {0};
            CHECK_OK(vg_session_run(s2, NULL, r2, vals + 3, 4, f, q, L + 1, NULL, 0, NULL, &st), &st);
            for (int t = 0; t < T; t++)
                for (int u = 0; u < U; u++) {
                    double got = at(r[1], (b * T + t) * U + u);
                    double want = t < L ? at(q[L - 1 - t], u) : 0.0; /* past the length: zeros */
                    if (fabs(got - want) > 1e-12) bad++;
                }
            for (int u = 0; u < U; u++)
                if (fabs(at(r[2], b * U + u) - at(q[L], u)) > 1e-12) bad++;
            for (int t = 0; t <= L; t++) vg_tensor_free(q[t]);
            vg_session_free(s2);
            vg_rnn_cell_free(c2);
            vg_graph_free(g2);
        }
        if (bad) fprintf(stderr, "bidirectional (lengths %d): %d differences\n", with_len, bad);
        CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < 3; i++) vg_tensor_free(r[i]);
        for (int k = 0; k < 7; k++) vg_tensor_free(vals[k]);
        vg_rnn_cell_free(fw);
        vg_rnn_cell_free(bw);
        vg_graph_free(g);
    }
}

static void test_bad_input(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, T}, 2, "x");
    vg_rnn_cell *c = vg_gru_cell_new(U);
    vg_output out, fin[1];
    vg_status st;
    CHECK_CODE(vg_dynamic_rnn(c, g, x, (vg_output){NULL, 0}, NULL, VG_FLOAT, 0, false, NULL, &out, fin, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "rank 3");
    vg_rnn_cell_free(c);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_dynamic_matches_static);
    RUN_TEST(test_dynamic_gradients);
    RUN_TEST(test_bidirectional);
    RUN_TEST(test_bad_input);
    TEST_MAIN_END();
}
