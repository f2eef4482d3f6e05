/* test_rnn.c - TF1's RNN cells and static_rnn (vigil/rnn.h): TF's variable names, the
 * forward math against a hand-written reference (rnn_cell_impl.py's equations, in
 * double), gradients by finite differences, sequence_length masking, DropoutWrapper
 * and ResidualWrapper, bad input. */
#include "test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include <math.h>
#include <string.h>

enum { B = 2, I = 3, T = 3 };

typedef enum { C_RNN, C_BASIC_LSTM, C_LSTM, C_GRU } ckind;

typedef struct spec {
    ckind kind;
    int U, P; /* P: projection size (LSTMCell num_proj), 0 = none */
    bool peep;
    double clip, fb;
} spec;

static double urand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 65535.0 - 0.5;
}

static vg_tensor *rnd(vg_dtype dt, const int64_t *d, int nd, unsigned seed, double scale) {
    vg_tensor *t = vg_tensor_new(dt, d, nd, NULL);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        double v = urand(&seed) * scale;
        if (dt == VG_DOUBLE) ((double *)vg_tensor_data(t))[i] = v;
        else ((float *)vg_tensor_data(t))[i] = (float)v;
    }
    return t;
}

static double at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_DOUBLE ? ((const double *)vg_tensor_data(t))[i]
                                           : ((const float *)vg_tensor_data(t))[i];
}

static double sig(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Variables of a cell: name (under the scope), dims. */
typedef struct wdef {
    const char *name;
    int64_t d0, d1; /* d1 0 = vector */
} wdef;

static int weights(const spec *s, wdef *w) {
    int U = s->U, H = s->P ? s->P : s->U, n = 0;
    switch (s->kind) {
    case C_RNN:
        w[n++] = (wdef){"basic_rnn_cell/kernel", I + U, U};
        w[n++] = (wdef){"basic_rnn_cell/bias", U, 0};
        break;
    case C_BASIC_LSTM:
        w[n++] = (wdef){"basic_lstm_cell/kernel", I + U, 4 * U};
        w[n++] = (wdef){"basic_lstm_cell/bias", 4 * U, 0};
        break;
    case C_LSTM:
        w[n++] = (wdef){"lstm_cell/kernel", I + H, 4 * U};
        w[n++] = (wdef){"lstm_cell/bias", 4 * U, 0};
        if (s->peep) {
            w[n++] = (wdef){"lstm_cell/w_f_diag", U, 0};
            w[n++] = (wdef){"lstm_cell/w_i_diag", U, 0};
            w[n++] = (wdef){"lstm_cell/w_o_diag", U, 0};
        }
        if (s->P) w[n++] = (wdef){"lstm_cell/projection/kernel", U, s->P};
        break;
    case C_GRU:
        w[n++] = (wdef){"gru_cell/gates/kernel", I + U, 2 * U};
        w[n++] = (wdef){"gru_cell/gates/bias", 2 * U, 0};
        w[n++] = (wdef){"gru_cell/candidate/kernel", I + U, U};
        w[n++] = (wdef){"gru_cell/candidate/bias", U, 0};
        break;
    }
    return n;
}

static vg_rnn_cell *make_cell(const spec *s) {
    switch (s->kind) {
    case C_RNN: return vg_basic_rnn_cell_new(s->U, VG_ACT_NONE);
    case C_BASIC_LSTM: return vg_basic_lstm_cell_new(s->U, (float)s->fb, true);
    case C_GRU: return vg_gru_cell_new(s->U);
    default: {
        vg_lstm_cell_options o = {0};
        o.use_peepholes = s->peep;
        o.cell_clip = (float)s->clip;
        o.num_proj = s->P;
        o.forget_bias = (float)s->fb;
        o.zero_forget_bias = s->fb == 0; /* {0} would be TF's 1.0 */
        return vg_lstm_cell_new(s->U, &o);
    }
    }
}

/* xh = [x_b, h_b] times column j of a row-major [I+H, N] kernel */
static double dot(const double *x, const double *h, int H, const vg_tensor *k, int N, int j) {
    double v = 0;
    for (int r = 0; r < I; r++) v += x[r] * at(k, r * N + j);
    for (int r = 0; r < H; r++) v += h[r] * at(k, (I + r) * N + j);
    return v;
}

/* One step of the reference for one batch row: c (may be NULL), h updated in place. */
static void ref_step(const spec *s, vg_tensor *const *w, const double *x, double *c, double *h) {
    int U = s->U, H = s->P ? s->P : U;
    double nc[16], nh[16];
    switch (s->kind) {
    case C_RNN:
        for (int j = 0; j < U; j++) nh[j] = tanh(dot(x, h, U, w[0], U, j) + at(w[1], j));
        break;
    case C_GRU: {
        double r[16], u[16], rh[16];
        for (int j = 0; j < U; j++) {
            r[j] = sig(dot(x, h, U, w[0], 2 * U, j) + at(w[1], j));
            u[j] = sig(dot(x, h, U, w[0], 2 * U, U + j) + at(w[1], U + j));
            rh[j] = r[j] * h[j];
        }
        for (int j = 0; j < U; j++) {
            double cand = tanh(dot(x, rh, U, w[2], U, j) + at(w[3], j));
            nh[j] = u[j] * h[j] + (1 - u[j]) * cand;
        }
        break;
    }
    default: {
        double m[16];
        for (int j = 0; j < U; j++) {
            double gi = dot(x, h, H, w[0], 4 * U, j) + at(w[1], j);
            double gj = dot(x, h, H, w[0], 4 * U, U + j) + at(w[1], U + j);
            double gf = dot(x, h, H, w[0], 4 * U, 2 * U + j) + at(w[1], 2 * U + j);
            double go = dot(x, h, H, w[0], 4 * U, 3 * U + j) + at(w[1], 3 * U + j);
            double wf = 0, wi = 0, wo = 0;
            if (s->peep) {
                wf = at(w[2], j);
                wi = at(w[3], j);
                wo = at(w[4], j);
            }
            nc[j] = sig(gf + s->fb + wf * c[j]) * c[j] + sig(gi + wi * c[j]) * tanh(gj);
            if (s->clip > 0) nc[j] = fmax(-s->clip, fmin(s->clip, nc[j]));
            m[j] = sig(go + wo * nc[j]) * tanh(nc[j]);
        }
        if (s->P) {
            for (int p = 0; p < s->P; p++) {
                nh[p] = 0;
                for (int j = 0; j < U; j++) nh[p] += m[j] * at(w[s->peep ? 5 : 2], j * s->P + p);
            }
        } else {
            memcpy(nh, m, sizeof(double) * (size_t)U);
        }
        memcpy(c, nc, sizeof(double) * (size_t)U);
    }
    }
    memcpy(h, nh, sizeof(double) * (size_t)H);
}

static bool lstm_like(ckind k) { return k == C_BASIC_LSTM || k == C_LSTM; }

/* Builds static_rnn over T placeholders with a placeholder initial state; returns the
 * feeds: x_0..x_{T-1}, state..., weights... (count in *nf) and their values. */
typedef struct net {
    vg_graph *g;
    vg_output feeds[16];
    vg_tensor *vals[16];
    int nf, nw, ns;
    vg_output outs[T], fin[2];
} net;

static void build_net(const spec *s, net *n, vg_output seq_len) {
    memset(n, 0, sizeof *n);
    n->g = vg_graph_new();
    vg_graph *g = n->g;
    int U = s->U, H = s->P ? s->P : U;
    vg_rnn_cell *cell = make_cell(s);
    char nm[32];
    vg_output xs[T];
    for (int t = 0; t < T; t++) {
        snprintf(nm, sizeof nm, "x%d", t);
        n->feeds[n->nf] = xs[t] = vg_placeholder(g, VG_DOUBLE, (int64_t[]){B, I}, 2, nm);
        n->vals[n->nf++] = rnd(VG_DOUBLE, (int64_t[]){B, I}, 2, 100u + (unsigned)t, 2.0);
    }
    n->ns = vg_rnn_cell_state_count(cell);
    CHECK_EQ_INT(n->ns, lstm_like(s->kind) ? 2 : 1);
    vg_output init[2];
    for (int i = 0; i < n->ns; i++) {
        int64_t sz = vg_rnn_cell_state_size(cell, i);
        CHECK_EQ_INT(sz, lstm_like(s->kind) && i == 0 ? U : H);
        snprintf(nm, sizeof nm, "s%d", i);
        n->feeds[n->nf] = init[i] = vg_placeholder(g, VG_DOUBLE, (int64_t[]){B, sz}, 2, nm);
        n->vals[n->nf++] = rnd(VG_DOUBLE, (int64_t[]){B, sz}, 2, 200u + (unsigned)i, 1.0);
    }
    vg_status st;
    CHECK_OK(vg_static_rnn(cell, g, xs, T, init, VG_DOUBLE, seq_len, NULL, n->outs, n->fin, &st), &st);
    CHECK_EQ_INT(vg_rnn_cell_output_size(cell), H);
    wdef w[8];
    n->nw = weights(s, w);
    for (int k = 0; k < n->nw; k++) {
        char full[128];
        snprintf(full, sizeof full, "rnn/%s", w[k].name);
        vg_op *v = vg_graph_op_by_name(g, full);
        CHECK(v && strcmp(vg_op_type(v), "VariableV2") == 0);
        if (!v) { fprintf(stderr, "missing variable %s\n", full); continue; }
        vg_shape sh = vg_output_shape(vg_out(v, 0));
        CHECK_EQ_INT(sh.ndims, w[k].d1 ? 2 : 1);
        CHECK_EQ_INT(sh.dims[0], w[k].d0);
        if (w[k].d1) CHECK_EQ_INT(sh.dims[1], w[k].d1);
        snprintf(full, sizeof full, "rnn/%s/read", w[k].name);
        n->feeds[n->nf] = vg_graph_output_by_name(g, full, &st);
        int64_t d[2] = {w[k].d0, w[k].d1};
        n->vals[n->nf++] = rnd(VG_DOUBLE, d, w[k].d1 ? 2 : 1, 300u + (unsigned)k * 7, 1.5);
    }
    vg_rnn_cell_free(cell);
}

static void free_net(net *n) {
    for (int i = 0; i < n->nf; i++) vg_tensor_free(n->vals[i]);
    vg_graph_free(n->g);
}

static const spec k_specs[] = {
    {C_RNN, 4, 0, false, 0, 1.0},          {C_BASIC_LSTM, 4, 0, false, 0, 1.0},
    {C_BASIC_LSTM, 3, 0, false, 0, 0.5},   {C_LSTM, 4, 0, false, 0, 1.0},
    {C_LSTM, 4, 3, true, 0.375, 1.0},        {C_LSTM, 3, 0, true, 0, 0.0},
    {C_GRU, 4, 0, false, 0, 1.0},
};

/* Forward: every output and the final state against the reference. */
static void test_cells_forward(void) {
    for (size_t k = 0; k < sizeof k_specs / sizeof k_specs[0]; k++) {
        const spec *s = &k_specs[k];
        net n;
        build_net(s, &n, (vg_output){NULL, 0});
        vg_status st;
        vg_session *sess = vg_session_new(n.g, NULL, &st);
        vg_output fetch[T + 2];
        memcpy(fetch, n.outs, sizeof n.outs);
        for (int i = 0; i < n.ns; i++) fetch[T + i] = n.fin[i];
        vg_tensor *got[T + 2] = {0};
        CHECK_OK(vg_session_run(sess, NULL, n.feeds, n.vals, n.nf, fetch, got, T + n.ns, NULL, 0, NULL, &st), &st);
        int U = s->U, H = s->P ? s->P : U;
        int bad = 0;
        for (int b = 0; b < B; b++) {
            double c[16] = {0}, h[16] = {0};
            const vg_tensor *s0 = n.vals[T], *s1 = n.ns > 1 ? n.vals[T + 1] : n.vals[T];
            if (n.ns > 1)
                for (int j = 0; j < U; j++) c[j] = at(s0, b * U + j);
            for (int j = 0; j < H; j++) h[j] = at(s1, b * H + j);
            for (int t = 0; t < T; t++) {
                double x[I];
                for (int i = 0; i < I; i++) x[i] = at(n.vals[t], b * I + i);
                ref_step(s, n.vals + T + n.ns, x, c, h);
                for (int j = 0; j < H; j++)
                    if (got[t] && fabs(at(got[t], b * H + j) - h[j]) > 1e-12) bad++;
            }
            for (int j = 0; got[T] && j < (n.ns > 1 ? U : H); j++)
                if (fabs(at(got[T], b * (n.ns > 1 ? U : H) + j) - (n.ns > 1 ? c[j] : h[j])) > 1e-12) bad++;
            for (int j = 0; n.ns > 1 && got[T + 1] && j < H; j++)
                if (fabs(at(got[T + 1], b * H + j) - h[j]) > 1e-12) bad++;
        }
        if (bad) fprintf(stderr, "spec %zu: %d values differ from the reference\n", k, bad);
        CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < T + n.ns; i++) vg_tensor_free(got[i]);
        vg_session_free(sess);
        free_net(&n);
    }
}

/* Gradients of all outputs and the final state w.r.t. inputs, initial state and weights. */
static void test_cells_gradcheck(void) {
    for (size_t k = 0; k < sizeof k_specs / sizeof k_specs[0]; k++) {
        const spec *s = &k_specs[k];
        if (s->clip > 0) continue; /* clipping has kinks; checked without it */
        net n;
        build_net(s, &n, (vg_output){NULL, 0});
        vg_output parts[T + 2];
        memcpy(parts, n.outs, sizeof n.outs);
        int np = T;
        for (int i = 0; i < n.ns; i++) parts[np++] = n.fin[i];
        vg_output y = vg_concat_c(n.g, parts, np, 1, "all");
        int bad = vg_gradcheck(n.g, n.feeds, n.vals, n.nf, y, 1e-6, 1e-6);
        if (bad) fprintf(stderr, "spec %zu: %d gradient mismatches\n", k, bad);
        CHECK_EQ_INT(bad, 0);
        free_net(&n);
    }
}

/* static_rnn with sequence_length: zero outputs past the end, state copied through. */
static void test_static_rnn_sequence_length(void) {
    spec s = {C_BASIC_LSTM, 3, 0, false, 0, 1.0};
    vg_graph *g = vg_graph_new();
    vg_rnn_cell *cell = make_cell(&s);
    vg_output xs[T], outs[T], fin[2];
    vg_tensor *xv[T];
    for (int t = 0; t < T; t++) {
        char nm[8];
        snprintf(nm, sizeof nm, "x%d", t);
        xs[t] = vg_placeholder(g, VG_DOUBLE, (int64_t[]){B, I}, 2, nm);
        xv[t] = rnd(VG_DOUBLE, (int64_t[]){B, I}, 2, 7u + (unsigned)t, 2.0);
    }
    vg_output seq = vg_const_i32_vec(g, (int32_t[]){1, 3}, 2, "seq");
    vg_status st;
    CHECK_OK(vg_static_rnn(cell, g, xs, T, NULL, VG_DOUBLE, seq, "my_rnn", outs, fin, &st), &st);
    CHECK(vg_graph_op_by_name(g, "my_rnn/basic_lstm_cell/kernel") != NULL);
    /* the same cell type without lengths, in a second graph with the same weights */
    vg_graph *g2 = vg_graph_new();
    vg_rnn_cell *cell2 = make_cell(&s);
    vg_output xs2[T], outs2[T], fin2[2];
    for (int t = 0; t < T; t++) {
        char nm[8];
        snprintf(nm, sizeof nm, "x%d", t);
        xs2[t] = vg_placeholder(g2, VG_DOUBLE, (int64_t[]){B, I}, 2, nm);
    }
    CHECK_OK(vg_static_rnn(cell2, g2, xs2, T, NULL, VG_DOUBLE, (vg_output){NULL, 0}, "my_rnn", outs2, fin2, &st), &st);
    vg_tensor *kv = rnd(VG_DOUBLE, (int64_t[]){I + 3, 12}, 2, 99u, 1.5), *bv = rnd(VG_DOUBLE, (int64_t[]){12}, 1, 98u, 1.0);
    vg_output f1[T + 2], f2[T + 2];
    vg_tensor *v1[T + 2];
    for (int t = 0; t < T; t++) { f1[t] = xs[t]; f2[t] = xs2[t]; v1[t] = xv[t]; }
    f1[T] = vg_graph_output_by_name(g, "my_rnn/basic_lstm_cell/kernel/read", &st);
    f1[T + 1] = vg_graph_output_by_name(g, "my_rnn/basic_lstm_cell/bias/read", &st);
    f2[T] = vg_graph_output_by_name(g2, "my_rnn/basic_lstm_cell/kernel/read", &st);
    f2[T + 1] = vg_graph_output_by_name(g2, "my_rnn/basic_lstm_cell/bias/read", &st);
    v1[T] = kv;
    v1[T + 1] = bv;
    vg_output q1[T + 2] = {outs[0], outs[1], outs[2], fin[0], fin[1]}, q2[T + 2] = {outs2[0], outs2[1], outs2[2], fin2[0], fin2[1]};
    vg_tensor *r1[T + 2] = {0}, *r2[T + 2] = {0};
    vg_session *s1 = vg_session_new(g, NULL, &st), *s2 = vg_session_new(g2, NULL, &st);
    CHECK_OK(vg_session_run(s1, NULL, f1, v1, T + 2, q1, r1, T + 2, NULL, 0, NULL, &st), &st);
    CHECK_OK(vg_session_run(s2, NULL, f2, v1, T + 2, q2, r2, T + 2, NULL, 0, NULL, &st), &st);
    if (r1[0] && r2[0]) {
        /* row 0 has length 1: outputs 1, 2 zero; final state = the state after step 0 */
        for (int j = 0; j < 3; j++) {
            CHECK_NEAR(at(r1[0], j), at(r2[0], j), 1e-12);
            CHECK(at(r1[1], j) == 0.0 && at(r1[2], j) == 0.0);
            CHECK_NEAR(at(r1[T + 1], j), at(r2[0], j), 1e-12); /* h */
            /* row 1 has the full length */
            for (int t = 0; t < T; t++) CHECK_NEAR(at(r1[t], 3 + j), at(r2[t], 3 + j), 1e-12);
            CHECK_NEAR(at(r1[T], 3 + j), at(r2[T], 3 + j), 1e-12);
            CHECK_NEAR(at(r1[T + 1], 3 + j), at(r2[T + 1], 3 + j), 1e-12);
        }
        CHECK(fabs(at(r1[T], 0) - at(r2[T], 0)) > 1e-9); /* c of row 0 did stop */
    }
    for (int i = 0; i < T + 2; i++) { vg_tensor_free(r1[i]); vg_tensor_free(r2[i]); }
    for (int t = 0; t < T; t++) vg_tensor_free(xv[t]);
    vg_tensor_free(kv);
    vg_tensor_free(bv);
    vg_session_free(s1);
    vg_session_free(s2);
    vg_rnn_cell_free(cell);
    vg_rnn_cell_free(cell2);
    vg_graph_free(g);
    vg_graph_free(g2);
}

/* MultiRNNCell names (rnn/multi_rnn_cell/cell_<i>/lstm_cell/...), wrappers keep them,
 * the state is the children's states in order; ResidualWrapper adds the input. */
static void test_multi_and_wrappers(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, 4}, 2, "x");
    vg_rnn_cell *cells[3] = {vg_dropout_wrapper_new(vg_lstm_cell_new(4, NULL), 1.0, 1.0, 1.0, 0),
                             vg_residual_wrapper_new(vg_lstm_cell_new(4, NULL)), vg_gru_cell_new(5)};
    vg_rnn_cell *m = vg_multi_rnn_cell_new(cells, 3);
    CHECK_EQ_INT(vg_rnn_cell_state_count(m), 5);
    CHECK_EQ_INT(vg_rnn_cell_state_size(m, 4), 5);
    CHECK_EQ_INT(vg_rnn_cell_state_size(m, 5), -1);
    CHECK_EQ_INT(vg_rnn_cell_output_size(m), 5);
    vg_output outs[2], fin[5];
    vg_status st;
    CHECK_OK(vg_static_rnn(m, g, (vg_output[]){x, x}, 2, NULL, VG_FLOAT, (vg_output){NULL, 0}, NULL, outs, fin, &st), &st);
    const char *names[] = {"rnn/multi_rnn_cell/cell_0/lstm_cell/kernel", "rnn/multi_rnn_cell/cell_0/lstm_cell/bias",
                           "rnn/multi_rnn_cell/cell_1/lstm_cell/kernel", "rnn/multi_rnn_cell/cell_2/gru_cell/gates/kernel",
                           "rnn/multi_rnn_cell/cell_2/gru_cell/candidate/bias"};
    for (int i = 0; i < 5; i++) {
        vg_op *op = vg_graph_op_by_name(g, names[i]);
        CHECK(op && strcmp(vg_op_type(op), "VariableV2") == 0);
        if (!op) fprintf(stderr, "missing %s\n", names[i]);
    }
    int nv;
    vg_graph_collection(g, "trainable_variables", &nv);
    CHECK_EQ_INT(nv, 8); /* 2 + 2 + 4: the second step reused them */
    vg_rnn_cell_free(m);
    vg_graph_free(g);

    /* ResidualWrapper: output = x + inner output, compared with an unwrapped cell */
    vg_graph *g1 = vg_graph_new(), *g2 = vg_graph_new();
    vg_output x1 = vg_placeholder(g1, VG_DOUBLE, (int64_t[]){B, 3}, 2, "x");
    vg_output x2 = vg_placeholder(g2, VG_DOUBLE, (int64_t[]){B, 3}, 2, "x");
    vg_rnn_cell *r = vg_residual_wrapper_new(vg_basic_rnn_cell_new(3, VG_ACT_NONE)), *p = vg_basic_rnn_cell_new(3, VG_ACT_NONE);
    vg_output st1[1], st2[1], o1, o2, n1[1], n2[1];
    vg_rnn_cell_zero_state(r, g1, B, (vg_output){NULL, 0}, VG_DOUBLE, st1);
    vg_rnn_cell_zero_state(p, g2, B, (vg_output){NULL, 0}, VG_DOUBLE, st2);
    CHECK_OK(vg_rnn_cell_call(r, g1, x1, st1, &o1, n1), &st);
    CHECK_OK(vg_rnn_cell_call(p, g2, x2, st2, &o2, n2), &st);
    vg_tensor *xv = rnd(VG_DOUBLE, (int64_t[]){B, 3}, 2, 5u, 2.0), *kv = rnd(VG_DOUBLE, (int64_t[]){6, 3}, 2, 6u, 1.0);
    vg_output fa[2] = {x1, vg_graph_output_by_name(g1, "basic_rnn_cell/kernel/read", &st)};
    vg_output fb[2] = {x2, vg_graph_output_by_name(g2, "basic_rnn_cell/kernel/read", &st)};
    vg_tensor *fv[2] = {xv, kv}, *ra = NULL, *rb = NULL, *ia = NULL;
    vg_op *init_a = vg_global_variables_initializer(g1), *init_b = vg_global_variables_initializer(g2);
    vg_session *sa = vg_session_new(g1, NULL, &st), *sb = vg_session_new(g2, NULL, &st);
    CHECK_OK(vg_session_run(sa, NULL, NULL, NULL, 0, NULL, NULL, 0, &init_a, 1, NULL, &st), &st);
    CHECK_OK(vg_session_run(sb, NULL, NULL, NULL, 0, NULL, NULL, 0, &init_b, 1, NULL, &st), &st);
    vg_output fetch_a[2] = {o1, n1[0]};
    vg_tensor *outa[2] = {0};
    CHECK_OK(vg_session_run(sa, NULL, fa, fv, 2, fetch_a, outa, 2, NULL, 0, NULL, &st), &st);
    CHECK_OK(vg_session_run(sb, NULL, fb, fv, 2, &o2, &rb, 1, NULL, 0, NULL, &st), &st);
    ra = outa[0];
    ia = outa[1];
    for (int i = 0; ra && rb && i < B * 3; i++) {
        CHECK_NEAR(at(ra, i), at(xv, i) + at(rb, i), 1e-12);
        CHECK_NEAR(at(ia, i), at(rb, i), 1e-12); /* the state is the inner cell's */
    }
    vg_tensor_free(ra); vg_tensor_free(rb); vg_tensor_free(ia); vg_tensor_free(xv); vg_tensor_free(kv);
    vg_session_free(sa); vg_session_free(sb);
    vg_rnn_cell_free(r); vg_rnn_cell_free(p);
    vg_graph_free(g1); vg_graph_free(g2);
}

/* DropoutWrapper(output_keep_prob=0.5): each output is 0 or twice the undropped one;
 * state_keep_prob leaves an LSTM's c alone. */
static void test_dropout_wrapper(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 7);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){64, 3}, 2, "x");
    vg_rnn_cell *plain = vg_basic_lstm_cell_new(8, 1.0f, true);
    vg_rnn_cell *drop = vg_dropout_wrapper_new(vg_basic_lstm_cell_new(8, 1.0f, true), 1.0, 0.5, 0.5, 3);
    vg_rnn_cell_set_name(plain, "plain");
    vg_output s0[2], o1, n1[2], o2, n2[2];
    vg_status st;
    vg_rnn_cell_zero_state(plain, g, 64, (vg_output){NULL, 0}, VG_FLOAT, s0);
    CHECK_OK(vg_rnn_cell_call(plain, g, x, s0, &o1, n1), &st);
    CHECK_OK(vg_rnn_cell_call(drop, g, x, s0, &o2, n2), &st);
    vg_tensor *kv = rnd(VG_FLOAT, (int64_t[]){11, 32}, 2, 3u, 1.0), *bv = rnd(VG_FLOAT, (int64_t[]){32}, 1, 4u, 1.0),
              *xv = rnd(VG_FLOAT, (int64_t[]){64, 3}, 2, 8u, 2.0);
    vg_output feeds[5] = {x, vg_graph_output_by_name(g, "plain/kernel/read", &st),
                          vg_graph_output_by_name(g, "plain/bias/read", &st),
                          vg_graph_output_by_name(g, "basic_lstm_cell/kernel/read", &st),
                          vg_graph_output_by_name(g, "basic_lstm_cell/bias/read", &st)};
    vg_tensor *vals[5] = {xv, kv, bv, kv, bv};
    vg_output fetch[6] = {o1, o2, n1[0], n2[0], n1[1], n2[1]};
    vg_tensor *r[6] = {0};
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 5, fetch, r, 6, NULL, 0, NULL, &st), &st);
    int zeros = 0, kept = 0, bad = 0;
    for (int i = 0; r[0] && i < 64 * 8; i++) {
        double a = at(r[0], i), b = at(r[1], i);
        if (b == 0.0) zeros++;
        else if (fabs(b - 2 * a) < 1e-5) kept++;
        else bad++;
        if (fabs(at(r[2], i) - at(r[3], i)) > 1e-6) bad++; /* c untouched */
        double h = at(r[5], i);
        if (!(h == 0.0 || fabs(h - 2 * at(r[4], i)) < 1e-5)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(zeros > 64 * 8 / 4 && kept > 64 * 8 / 4);
    for (int i = 0; i < 6; i++) vg_tensor_free(r[i]);
    vg_tensor_free(kv); vg_tensor_free(bv); vg_tensor_free(xv);
    vg_session_free(s);
    vg_rnn_cell_free(plain);
    vg_rnn_cell_free(drop);
    vg_graph_free(g);
}

static void test_bad_input(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, -1}, 2, "x");
    vg_rnn_cell *c = vg_gru_cell_new(3);
    vg_output s0[1], o, n[1];
    vg_rnn_cell_zero_state(c, g, 2, (vg_output){NULL, 0}, VG_FLOAT, s0);
    CHECK_CODE(vg_rnn_cell_call(c, g, x, s0, &o, n), VG_INVALID_ARGUMENT);
    vg_status st;
    vg_graph_status(g, &st);
    CHECK_STR_CONTAINS(st.msg, "gru_cell");
    vg_rnn_cell_free(c);
    vg_graph_free(g);
    CHECK(vg_basic_lstm_cell_new(0, 1.0f, true) == NULL);
    CHECK(vg_dropout_wrapper_new(vg_gru_cell_new(2), 0.0, 1.0, 1.0, 0) == NULL);
    CHECK(vg_multi_rnn_cell_new(NULL, 0) == NULL);
    g = vg_graph_new();
    c = vg_lstm_block_fused_cell_new(3, 1.0f, 0, false);
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "x");
    vg_output s2[2] = {x, x}, n2[2];
    CHECK_CODE(vg_rnn_cell_call(c, g, x, s2, &o, n2), VG_INVALID_ARGUMENT);
    vg_rnn_cell_free(c);
    vg_graph_free(g);
}

/* embedding_lookup: rows by id; the gradient sums the rows' gradients per id */
static void test_embedding_lookup(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_DOUBLE, (int64_t[]){5, 3}, 2, "params");
    vg_output ids = vg_const_i32_vec(g, (int32_t[]){4, 0, 4, 2}, 4, "ids");
    vg_output e = vg_embedding_lookup(g, p, ids, NULL);
    CHECK(vg_graph_op_by_name(g, "embedding_lookup") != NULL);
    vg_shape s = vg_output_shape(e);
    CHECK_EQ_INT(s.ndims, 2);
    CHECK_EQ_INT(s.dims[0], 4);
    vg_tensor *pv = rnd(VG_DOUBLE, (int64_t[]){5, 3}, 2, 11u, 2.0), *ev = NULL;
    vg_status st;
    vg_session *sess = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(sess, NULL, &p, &pv, 1, &e, &ev, 1, NULL, 0, NULL, &st), &st);
    static const int rows[4] = {4, 0, 4, 2};
    for (int i = 0; ev && i < 4; i++)
        for (int j = 0; j < 3; j++) CHECK(at(ev, i * 3 + j) == at(pv, rows[i] * 3 + j));
    vg_tensor_free(ev);
    vg_session_free(sess);
    CHECK_EQ_INT(vg_gradcheck(g, &p, &pv, 1, vg_square(g, e, NULL), 1e-6, 1e-6), 0);
    vg_tensor_free(pv);
    vg_graph_free(g);
}

/* sequence_loss against the weighted cross-entropy computed by hand, and its gradient */
static void test_sequence_loss(void) {
    enum { SB = 2, ST = 3, SC = 4 };
    for (int mode = 0; mode < 4; mode++) {
        bool at_t = mode & 1, at_b = mode & 2;
        vg_graph *g = vg_graph_new();
        vg_output lg = vg_placeholder(g, VG_DOUBLE, (int64_t[]){SB, ST, SC}, 3, "logits");
        static const int32_t tg[SB * ST] = {1, 3, 0, 2, 2, 1};
        static const double wt[SB * ST] = {1, 1, 0, 0.5, 0, 0}; /* row 1's last two weigh 0; time 2 sums to 0 */
        vg_output tgt = vg_const_i32_vec(g, tg, SB * ST, "t");
        tgt = vg_reshape_c(g, tgt, (int64_t[]){SB, ST}, 2, NULL);
        vg_output w = vg_const_array(g, VG_DOUBLE, (int64_t[]){SB, ST}, 2, wt, "w");
        vg_output loss = vg_sequence_loss(g, lg, tgt, w, at_t, at_b, NULL);
        vg_tensor *lv = rnd(VG_DOUBLE, (int64_t[]){SB, ST, SC}, 3, 21u, 4.0), *out = NULL;
        vg_status st;
        vg_session *sess = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run(sess, NULL, &lg, &lv, 1, &loss, &out, 1, NULL, 0, NULL, &st), &st);
        double ce[SB * ST];
        for (int i = 0; i < SB * ST; i++) {
            double m = -1e300, z = 0;
            for (int c = 0; c < SC; c++) m = fmax(m, at(lv, i * SC + c));
            for (int c = 0; c < SC; c++) z += exp(at(lv, i * SC + c) - m);
            ce[i] = (m + log(z) - at(lv, i * SC + tg[i])) * wt[i];
        }
        if (out) {
            if (at_t && at_b) {
                double sum = 0, wsum = 0;
                for (int i = 0; i < SB * ST; i++) { sum += ce[i]; wsum += wt[i]; }
                CHECK_EQ_INT(vg_tensor_ndims(out), 0);
                CHECK_NEAR(at(out, 0), sum / wsum, 1e-12);
            } else if (at_t) { /* per batch row */
                CHECK_EQ_INT(vg_tensor_num_elements(out), SB);
                for (int b = 0; b < SB; b++) {
                    double sum = 0, wsum = 0;
                    for (int t = 0; t < ST; t++) { sum += ce[b * ST + t]; wsum += wt[b * ST + t]; }
                    CHECK_NEAR(at(out, b), sum / wsum, 1e-12);
                }
            } else if (at_b) { /* per time step; time 2 has weight sum 0 -> 0 */
                CHECK_EQ_INT(vg_tensor_num_elements(out), ST);
                for (int t = 0; t < ST; t++) {
                    double sum = 0, wsum = 0;
                    for (int b = 0; b < SB; b++) { sum += ce[b * ST + t]; wsum += wt[b * ST + t]; }
                    CHECK_NEAR(at(out, t), wsum ? sum / wsum : 0.0, 1e-12);
                }
            } else {
                CHECK_EQ_INT(vg_tensor_num_elements(out), SB * ST);
                for (int i = 0; i < SB * ST; i++) CHECK_NEAR(at(out, i), ce[i], 1e-12);
            }
        }
        vg_tensor_free(out);
        vg_session_free(sess);
        CHECK_EQ_INT(vg_gradcheck(g, &lg, &lv, 1, loss, 1e-6, 1e-6), 0);
        vg_tensor_free(lv);
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_cells_forward);
    RUN_TEST(test_cells_gradcheck);
    RUN_TEST(test_static_rnn_sequence_length);
    RUN_TEST(test_multi_and_wrappers);
    RUN_TEST(test_dropout_wrapper);
    RUN_TEST(test_embedding_lookup);
    RUN_TEST(test_sequence_loss);
    RUN_TEST(test_bad_input);
    TEST_MAIN_END();
}
