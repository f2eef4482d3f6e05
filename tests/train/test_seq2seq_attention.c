/* test_seq2seq_attention.c - BahdanauAttention, LuongAttention and AttentionWrapper
 * (vigil/seq2seq.h) against hand computations for a [2, 3, 2] memory with lengths
 * {3, 2} (masking, softmax, context, attention layer, cell_input_fn concat,
 * output_attention, the state layout), TF's variable names, finite-difference
 * gradients through dynamic_rnn and dynamic_decode over the wrapper, and a tiny copy
 * task trained with attention through dynamic_decode to a low loss, then decoded
 * greedily and by beam search. */
#include "gradcheck.h"
#include "test_util.h"
#include "vigil/vigil.h"

enum { B = 2, T = 3, D = 2, U = 2, H = 2 };

static const double MEM[B * T * D] = {0.5, -0.2, 0.1, 0.4, -0.3, 0.8, 0.7, 0.1, -0.6, 0.2, 0.9, -0.9};
static const int32_t LEN[B] = {3, 2};

/* the wrapped cell: out = tanh(concat(x, attention) C), state' = out + 0.5 state */
typedef struct inner {
    int64_t in_depth;
} inner;

static double cval(int r, int c) { return 0.3 * (double)((r * 3 + c * 5) % 7) / 7.0 - 0.1 * r + 0.05 * c; }

static vg_code inner_call(vg_graph *g, vg_output x, const vg_output *s, vg_output *out, vg_output *ns, void *user) {
    inner *in = user;
    vg_dtype dt = vg_output_dtype(x);
    int64_t depth = vg_output_shape(x).dims[1];
    in->in_depth = depth;
    double c[64];
    for (int r = 0; r < depth; r++)
        for (int k = 0; k < H; k++) c[r * H + k] = cval(r, k);
    vg_output C = vg_const_values(g, dt, c, depth * H, NULL, 0, (const int64_t[]){depth, H}, 2, false, "C");
    *out = vg_tanh(g, vg_matmul(g, x, C, false, false, NULL), NULL);
    ns[0] = vg_add(g, *out, vg_mul(g, s[0], vg_const_fill(g, dt, NULL, 0, 0.5, NULL), NULL), NULL);
    return vg_graph_status(g, NULL);
}

static vg_output cv(vg_graph *g, vg_dtype dt, const double *v, int64_t n, const int64_t *dims, int nd,
                    const char *name) {
    return vg_const_values(g, dt, v, n, NULL, 0, dims, nd, false, name);
}

static vg_rnn_cell *inner_cell(inner *in) {
    vg_shape sh = vg_shape_make((const int64_t[]){H}, 1);
    vg_rnn_cell_def def = {"inner", 1, &sh, H, NULL, inner_call, in};
    return vg_custom_rnn_cell_new(&def);
}

/* a fed variable value: its "<name>/read" output and a tensor */
typedef struct fed {
    const char *name;
    int n;
    int64_t dims[2];
    int ndims;
    double v[16];
} fed;

static vg_tensor *fed_tensor(const fed *f, vg_dtype dt) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(dt, f->dims, f->ndims, &st);
    for (int i = 0; i < f->n; i++) {
        if (dt == VG_DOUBLE) ((double *)vg_tensor_data(t))[i] = f->v[i];
        else ((float *)vg_tensor_data(t))[i] = (float)f->v[i];
    }
    return t;
}

static vg_output read_of(vg_graph *g, const char *name) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s/read", name);
    vg_op *op = vg_graph_op_by_name(g, buf);
    CHECK(op != NULL);
    if (!op) fprintf(stderr, "  no op %s\n", buf);
    return vg_out(op, 0);
}

/* hand computation of one wrapper step for batch b */
typedef struct ref_step {
    double align[T], ctx[D], att[4], cell_out[H], cell_state[H];
} ref_step;

static void ref_keys(const double *wm, double keys[B][T][U], double vals[B][T][D]) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            for (int d = 0; d < D; d++) vals[b][t][d] = t < LEN[b] ? MEM[(b * T + t) * D + d] : 0.0;
            for (int u = 0; u < U; u++) {
                keys[b][t][u] = 0;
                for (int d = 0; d < D; d++) keys[b][t][u] += vals[b][t][d] * wm[d * U + u];
            }
        }
}

static void ref_finish(int b, const double *score, double vals[B][T][D], const double *wa, int A, ref_step *r) {
    double mx = -1e300, sum = 0;
    for (int t = 0; t < LEN[b]; t++) mx = score[t] > mx ? score[t] : mx;
    for (int t = 0; t < T; t++) {
        r->align[t] = t < LEN[b] ? exp(score[t] - mx) : 0.0;
        sum += r->align[t];
    }
    for (int t = 0; t < T; t++) r->align[t] /= sum;
    for (int d = 0; d < D; d++) {
        r->ctx[d] = 0;
        for (int t = 0; t < T; t++) r->ctx[d] += r->align[t] * vals[b][t][d];
    }
    if (!wa) {
        for (int d = 0; d < D; d++) r->att[d] = r->ctx[d];
        return;
    }
    double cat[H + D];
    for (int k = 0; k < H; k++) cat[k] = r->cell_out[k];
    for (int d = 0; d < D; d++) cat[H + d] = r->ctx[d];
    for (int a = 0; a < A; a++) {
        r->att[a] = 0;
        for (int k = 0; k < H + D; k++) r->att[a] += cat[k] * wa[k * A + a];
    }
}

static void ref_cell(const double *x, int xd, const double *att, int A, const double *s0, ref_step *r) {
    double cat[8];
    for (int i = 0; i < xd; i++) cat[i] = x[i];
    for (int a = 0; a < A; a++) cat[xd + a] = att[a];
    for (int k = 0; k < H; k++) {
        double z = 0;
        for (int i = 0; i < xd + A; i++) z += cat[i] * cval(i, k);
        r->cell_out[k] = tanh(z);
        r->cell_state[k] = r->cell_out[k] + 0.5 * s0[k];
    }
}

static void check_names(vg_graph *g, const char *const *names, int n) {
    int nv = 0;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, n);
    for (int i = 0; i < n && i < nv; i++) {
        if (strcmp(vg_op_name(vars[i].op), names[i]) != 0)
            fprintf(stderr, "  variable %d: %s, expected %s\n", i, vg_op_name(vars[i].op), names[i]);
        CHECK(strcmp(vg_op_name(vars[i].op), names[i]) == 0);
    }
}

/* One step of AttentionWrapper(inner, BahdanauAttention(2, memory, lengths),
 * attention_layer_size 2): the state's attention entry is set (cell_input_fn sees it). */
static void test_bahdanau_wrapper_step(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output mem = cv(g, VG_DOUBLE, MEM, B * T * D, (const int64_t[]){B, T, D}, 3, "memory");
    vg_output len = vg_const_array(g, VG_INT32, (const int64_t[]){B}, 1, LEN, "len");
    vg_attention_mechanism *m = vg_bahdanau_attention_new(g, U, mem, len, false, NULL);
    CHECK(m != NULL);
    inner in = {0};
    vg_attention_wrapper_options o = {0};
    o.attention_layer_size = 2;
    vg_attention_wrapper *w = vg_attention_wrapper_new(inner_cell(&in), m, &o);
    CHECK(w != NULL);
    vg_rnn_cell *cell = vg_attention_wrapper_cell(w);
    CHECK_EQ_INT(vg_rnn_cell_state_count(cell), 4);
    CHECK_EQ_INT(vg_rnn_cell_output_size(cell), 2);
    CHECK_EQ_INT(vg_rnn_cell_state_size(cell, 2), T);
    const double s0v[B * H] = {0.2, -0.1, 0.05, 0.3};
    vg_output s0 = cv(g, VG_DOUBLE, s0v, B * H, (const int64_t[]){B, H}, 2, "s0");
    vg_output state[4], ns[4], out;
    CHECK_OK(vg_attention_wrapper_zero_state(w, g, B, vg_out(NULL, 0), VG_DOUBLE, &s0, state), &st);
    CHECK(state[0].op == s0.op);
    const double a0v[B * 2] = {0.3, -0.4, 0.6, 0.1};
    state[1] = cv(g, VG_DOUBLE, a0v, B * 2, (const int64_t[]){B, 2}, 2, "attention0");
    const double xv[B] = {0.7, -0.5};
    vg_output x = cv(g, VG_DOUBLE, xv, B, (const int64_t[]){B, 1}, 2, "x");
    CHECK_OK(vg_rnn_cell_call(cell, g, x, state, &out, ns), &st);
    const char *names[] = {"memory_layer/kernel", "attention_wrapper/bahdanau_attention/query_layer/kernel",
                           "attention_wrapper/bahdanau_attention/attention_v", "attention_wrapper/attention_layer/kernel"};
    check_names(g, names, 4);
    fed f[4] = {{names[0], 4, {D, U}, 2, {0.6, -0.3, 0.2, 0.9}},
                {names[1], 4, {H, U}, 2, {0.4, 0.1, -0.7, 0.5}},
                {names[2], 2, {U}, 1, {1.2, -0.8}},
                {names[3], 8, {H + D, 2}, 2, {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8}}};
    vg_output feeds[4];
    vg_tensor *fv[4];
    for (int i = 0; i < 4; i++) {
        feeds[i] = read_of(g, f[i].name);
        fv[i] = fed_tensor(&f[i], VG_DOUBLE);
    }
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v[5] = {NULL, NULL, NULL, NULL, NULL};
    vg_output fetch[5] = {out, ns[0], ns[1], ns[2], ns[3]};
    CHECK_OK(vg_session_run(s, NULL, feeds, fv, 4, fetch, v, 5, NULL, 0, NULL, &st), &st);
    double keys[B][T][U], vals[B][T][D];
    ref_keys(f[0].v, keys, vals);
    for (int b = 0; b < B && v[0] && v[4]; b++) {
        ref_step r;
        ref_cell(&xv[b], 1, &a0v[b * 2], 2, &s0v[b * H], &r);
        double pq[U] = {0, 0}, score[T];
        for (int u = 0; u < U; u++)
            for (int k = 0; k < H; k++) pq[u] += r.cell_out[k] * f[1].v[k * U + u];
        for (int t = 0; t < T; t++) {
            score[t] = 0;
            for (int u = 0; u < U; u++) score[t] += f[2].v[u] * tanh(keys[b][t][u] + pq[u]);
        }
        ref_finish(b, score, vals, f[3].v, 2, &r);
        const double *po = vg_tensor_data(v[0]), *pc = vg_tensor_data(v[1]), *pa = vg_tensor_data(v[2]),
                     *pal = vg_tensor_data(v[3]), *pas = vg_tensor_data(v[4]);
        for (int a = 0; a < 2; a++) {
            CHECK_NEAR(po[b * 2 + a], r.att[a], 1e-12); /* output_attention */
            CHECK_NEAR(pa[b * 2 + a], r.att[a], 1e-12);
        }
        for (int k = 0; k < H; k++) CHECK_NEAR(pc[b * H + k], r.cell_state[k], 1e-12);
        for (int t = 0; t < T; t++) {
            CHECK_NEAR(pal[b * T + t], r.align[t], 1e-12);
            CHECK_NEAR(pas[b * T + t], r.align[t], 1e-12);
        }
    }
    /* masked: batch 1's last memory step gets no weight */
    if (v[3]) CHECK(((const double *)vg_tensor_data(v[3]))[1 * T + 2] == 0.0);
    for (int i = 0; i < 5; i++) vg_tensor_free(v[i]);
    for (int i = 0; i < 4; i++) vg_tensor_free(fv[i]);
    vg_session_free(s);
    vg_attention_wrapper_free(w);
    vg_attention_mechanism_free(m);
    vg_graph_free(g);
}

/* Luong with scale, no attention layer (attention = context), output_attention false,
 * under a variable scope "dec"; and Bahdanau's normalize variables. */
static void test_luong_scale_and_bahdanau_normalize(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output mem = cv(g, VG_DOUBLE, MEM, B * T * D, (const int64_t[]){B, T, D}, 3, "memory");
    vg_output len = vg_const_array(g, VG_INT32, (const int64_t[]){B}, 1, LEN, "len");
    vg_attention_mechanism *m = vg_luong_attention_new(g, U, mem, len, true, NULL);
    inner in = {0};
    vg_attention_wrapper_options o = {0};
    o.no_output_attention = true;
    vg_attention_wrapper *w = vg_attention_wrapper_new(inner_cell(&in), m, &o);
    vg_rnn_cell *cell = vg_attention_wrapper_cell(w);
    CHECK_EQ_INT(vg_rnn_cell_output_size(cell), H);
    CHECK_EQ_INT(vg_rnn_cell_state_size(cell, 1), D); /* attention = context: memory depth */
    vg_output state[4], ns[4], out;
    CHECK_OK(vg_attention_wrapper_zero_state(w, g, B, vg_out(NULL, 0), VG_DOUBLE, NULL, state), &st);
    const double xv[B] = {0.9, -0.4};
    vg_output x = cv(g, VG_DOUBLE, xv, B, (const int64_t[]){B, 1}, 2, "x");
    vg_variable_scope_push(g, "dec", NULL);
    CHECK_OK(vg_rnn_cell_call(cell, g, x, state, &out, ns), &st);
    vg_variable_scope_pop(g);
    const char *names[] = {"memory_layer/kernel", "dec/attention_wrapper/luong_attention/attention_g"};
    check_names(g, names, 2);
    fed f[2] = {{names[0], 4, {D, U}, 2, {0.6, -0.3, 0.2, 0.9}}, {names[1], 1, {0}, 0, {2.5}}};
    vg_output feeds[2] = {read_of(g, names[0]), read_of(g, names[1])};
    vg_tensor *fv[2] = {fed_tensor(&f[0], VG_DOUBLE), fed_tensor(&f[1], VG_DOUBLE)};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v[3] = {NULL, NULL, NULL};
    vg_output fetch[3] = {out, ns[1], ns[2]};
    CHECK_OK(vg_session_run(s, NULL, feeds, fv, 2, fetch, v, 3, NULL, 0, NULL, &st), &st);
    double keys[B][T][U], vals[B][T][D];
    ref_keys(f[0].v, keys, vals);
    const double zero[4] = {0, 0, 0, 0};
    for (int b = 0; b < B && v[0] && v[2]; b++) {
        ref_step r;
        ref_cell(&xv[b], 1, zero, D, zero, &r);
        double score[T];
        for (int t = 0; t < T; t++) {
            score[t] = 0;
            for (int u = 0; u < U; u++) score[t] += r.cell_out[u] * keys[b][t][u];
            score[t] *= 2.5;
        }
        ref_finish(b, score, vals, NULL, 0, &r);
        for (int k = 0; k < H; k++) CHECK_NEAR(((const double *)vg_tensor_data(v[0]))[b * H + k], r.cell_out[k], 1e-12);
        for (int d = 0; d < D; d++) CHECK_NEAR(((const double *)vg_tensor_data(v[1]))[b * D + d], r.ctx[d], 1e-12);
        for (int t = 0; t < T; t++) CHECK_NEAR(((const double *)vg_tensor_data(v[2]))[b * T + t], r.align[t], 1e-12);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(v[i]);
    for (int i = 0; i < 2; i++) vg_tensor_free(fv[i]);
    vg_session_free(s);
    vg_attention_wrapper_free(w);
    vg_attention_mechanism_free(m);

    /* Bahdanau normalize: score = sum(g v / |v| * tanh(keys + pq + b)) */
    vg_attention_mechanism *bm = vg_bahdanau_attention_new(g, U, mem, vg_out(NULL, 0), true, "bahdanau");
    vg_output q = cv(g, VG_DOUBLE, (const double[]){0.3, -0.2, 0.1, 0.5}, 4, (const int64_t[]){B, 2}, 2,
                                  "q");
    vg_output al;
    CHECK_OK(vg_attention_mechanism_call(bm, g, q, &al), &st);
    /* the second mechanism's memory layer is made unique, as tf.layers does for a named
     * layer object (default_name) */
    const char *bnames[] = {"memory_layer/kernel", "dec/attention_wrapper/luong_attention/attention_g",
                            "memory_layer_1/kernel", "bahdanau_attention/query_layer/kernel",
                            "bahdanau_attention/attention_v", "bahdanau_attention/attention_g",
                            "bahdanau_attention/attention_b"};
    check_names(g, bnames, 7);
    fed bf[5] = {{bnames[2], 4, {D, U}, 2, {0.6, -0.3, 0.2, 0.9}},
                 {bnames[3], 4, {2, U}, 2, {0.4, 0.1, -0.7, 0.5}},
                 {bnames[4], 2, {U}, 1, {1.2, -0.8}},
                 {bnames[5], 1, {0}, 0, {0.7}},
                 {bnames[6], 2, {U}, 1, {0.1, -0.2}}};
    vg_output bfeeds[5];
    vg_tensor *bfv[5];
    for (int i = 0; i < 5; i++) {
        bfeeds[i] = read_of(g, bf[i].name);
        bfv[i] = fed_tensor(&bf[i], VG_DOUBLE);
    }
    s = vg_session_new(g, NULL, &st);
    vg_tensor *av = NULL;
    CHECK_OK(vg_session_run(s, NULL, bfeeds, bfv, 5, &al, &av, 1, NULL, 0, NULL, &st), &st);
    double qv[4] = {0.3, -0.2, 0.1, 0.5}, nrm = sqrt(1.2 * 1.2 + 0.8 * 0.8);
    for (int b = 0; b < B && av; b++) {
        double pq[U] = {0, 0}, score[T], sum = 0, k0[T];
        for (int u = 0; u < U; u++)
            for (int k = 0; k < 2; k++) pq[u] += qv[b * 2 + k] * bf[1].v[k * U + u];
        for (int t = 0; t < T; t++) {
            score[t] = 0;
            for (int u = 0; u < U; u++) {
                double key = 0;
                for (int d = 0; d < D; d++) key += MEM[(b * T + t) * D + d] * bf[0].v[d * U + u];
                score[t] += 0.7 * bf[2].v[u] / nrm * tanh(key + pq[u] + bf[4].v[u]);
            }
            k0[t] = exp(score[t]);
            sum += k0[t];
        }
        for (int t = 0; t < T; t++) CHECK_NEAR(((const double *)vg_tensor_data(av))[b * T + t], k0[t] / sum, 1e-12);
    }
    vg_tensor_free(av);
    for (int i = 0; i < 5; i++) vg_tensor_free(bfv[i]);
    vg_session_free(s);
    vg_attention_mechanism_free(bm);
    vg_graph_free(g);
}

/* Finite differences through dynamic_rnn over AttentionWrapper(Bahdanau, layer 2):
 * w.r.t. the memory, the inputs and the variables (fed through their reads). */
static void test_attention_gradient(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output mem = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){B, T, D}, 3, "memory");
    vg_output len = vg_const_array(g, VG_INT32, (const int64_t[]){B}, 1, LEN, "len");
    vg_attention_mechanism *m = vg_bahdanau_attention_new(g, U, mem, len, true, NULL);
    inner in = {0};
    vg_attention_wrapper_options o = {0};
    o.attention_layer_size = 2;
    vg_attention_wrapper *w = vg_attention_wrapper_new(inner_cell(&in), m, &o);
    vg_output x = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){B, 3, 1}, 3, "x");
    vg_output init[4], outs, fin[4];
    vg_attention_wrapper_zero_state(w, g, B, vg_out(NULL, 0), VG_DOUBLE, NULL, init);
    CHECK_OK(vg_dynamic_rnn(vg_attention_wrapper_cell(w), g, x, vg_out(NULL, 0), init, VG_DOUBLE, 0, false, NULL, &outs,
                            fin, &st),
             &st);
    vg_output y = vg_add(g, vg_reduce_sum(g, outs, NULL, -1, false, NULL),
                         vg_add(g, vg_reduce_sum(g, vg_mul(g, fin[2], fin[2], NULL), NULL, -1, false, NULL),
                                vg_reduce_sum(g, vg_mul(g, fin[0], fin[1], NULL), NULL, -1, false, NULL), NULL),
                         NULL);
    const char *names[] = {"memory_layer/kernel", "rnn/attention_wrapper/bahdanau_attention/query_layer/kernel",
                           "rnn/attention_wrapper/bahdanau_attention/attention_v",
                           "rnn/attention_wrapper/bahdanau_attention/attention_g",
                           "rnn/attention_wrapper/bahdanau_attention/attention_b",
                           "rnn/attention_wrapper/attention_layer/kernel"};
    check_names(g, names, 6);
    fed f[6] = {{names[0], 4, {D, U}, 2, {0.6, -0.3, 0.2, 0.9}},
                {names[1], 4, {H, U}, 2, {0.4, 0.1, -0.7, 0.5}},
                {names[2], 2, {U}, 1, {1.2, -0.8}},
                {names[3], 1, {0}, 0, {0.9}},
                {names[4], 2, {U}, 1, {0.1, -0.2}},
                {names[5], 8, {H + D, 2}, 2, {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8}}};
    vg_output xs[8];
    vg_tensor *xv[8];
    xs[0] = mem;
    xv[0] = vg_tensor_new(VG_DOUBLE, (const int64_t[]){B, T, D}, 3, &st);
    memcpy(vg_tensor_data(xv[0]), MEM, sizeof MEM);
    xs[1] = x;
    xv[1] = vg_tensor_new(VG_DOUBLE, (const int64_t[]){B, 3, 1}, 3, &st);
    for (int i = 0; i < B * 3; i++) ((double *)vg_tensor_data(xv[1]))[i] = 0.2 * i - 0.4;
    for (int i = 0; i < 6; i++) {
        xs[2 + i] = read_of(g, f[i].name);
        xv[2 + i] = fed_tensor(&f[i], VG_DOUBLE);
    }
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 8, y, 1e-6, 1e-5), 0);
    for (int i = 0; i < 8; i++) vg_tensor_free(xv[i]);
    vg_attention_wrapper_free(w);
    vg_attention_mechanism_free(m);
    vg_graph_free(g);
}

/* Finite differences through dynamic_decode (TrainingHelper's tf.cond inside the while
 * loop, impute_finished with lengths {3, 2}) over AttentionWrapper(Luong, scale):
 * w.r.t. the memory, the decoder inputs and the variables. */
static void test_attention_decode_gradient(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output mem = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){B, T, D}, 3, "memory");
    vg_output len = vg_const_array(g, VG_INT32, (const int64_t[]){B}, 1, LEN, "len");
    vg_attention_mechanism *m = vg_luong_attention_new(g, U, mem, len, true, NULL);
    inner in = {0};
    vg_attention_wrapper_options o = {0};
    o.attention_layer_size = 2;
    vg_attention_wrapper *w = vg_attention_wrapper_new(inner_cell(&in), m, &o);
    vg_output x = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){B, 3, 1}, 3, "x");
    vg_output init[4], outs[2], fin[4];
    vg_attention_wrapper_zero_state(w, g, B, vg_out(NULL, 0), VG_DOUBLE, NULL, init);
    vg_decoder_helper *h = vg_training_helper_new(g, x, len, false, NULL);
    vg_decoder *d = vg_basic_decoder_new(vg_attention_wrapper_cell(w), h, init, NULL);
    vg_dynamic_decode_options dopt = {0};
    dopt.impute_finished = true;
    CHECK_OK(vg_dynamic_decode(g, d, &dopt, outs, fin, NULL, &st), &st);
    vg_output y = vg_add(g, vg_reduce_sum(g, outs[0], NULL, -1, false, NULL),
                         vg_reduce_sum(g, vg_mul(g, fin[1], fin[1], NULL), NULL, -1, false, NULL), NULL);
    const char *names[] = {"memory_layer/kernel", "decoder/attention_wrapper/luong_attention/attention_g",
                           "decoder/attention_wrapper/attention_layer/kernel"};
    check_names(g, names, 3);
    fed f[3] = {{names[0], 4, {D, U}, 2, {0.6, -0.3, 0.2, 0.9}},
                {names[1], 1, {0}, 0, {1.3}},
                {names[2], 8, {H + D, 2}, 2, {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8}}};
    vg_output xs[5];
    vg_tensor *xv[5];
    xs[0] = mem;
    xv[0] = vg_tensor_new(VG_DOUBLE, (const int64_t[]){B, T, D}, 3, &st);
    memcpy(vg_tensor_data(xv[0]), MEM, sizeof MEM);
    xs[1] = x;
    xv[1] = vg_tensor_new(VG_DOUBLE, (const int64_t[]){B, 3, 1}, 3, &st);
    for (int i = 0; i < B * 3; i++) ((double *)vg_tensor_data(xv[1]))[i] = 0.3 * i - 0.5;
    for (int i = 0; i < 3; i++) {
        xs[2 + i] = read_of(g, f[i].name);
        xv[2 + i] = fed_tensor(&f[i], VG_DOUBLE);
    }
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 5, y, 1e-6, 1e-5), 0);
    for (int i = 0; i < 5; i++) vg_tensor_free(xv[i]);
    vg_decoder_free(d);
    vg_decoder_helper_free(h);
    vg_attention_wrapper_free(w);
    vg_attention_mechanism_free(m);
    vg_graph_free(g);
}

/* cell_input_fn: the wrapped cell sees inputs + attention (added, not concatenated):
 * with attention_layer_size 1 and inputs of depth 1 the inner cell's C has one row. */
static vg_output add_input_fn(vg_graph *g, vg_output inputs, vg_output attention, void *user) {
    int *calls = user;
    (*calls)++;
    return vg_add(g, inputs, attention, "add_inputs");
}

static void test_cell_input_fn(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output mem = cv(g, VG_DOUBLE, MEM, B * T * D, (const int64_t[]){B, T, D}, 3, "memory");
    vg_attention_mechanism *m = vg_bahdanau_attention_new(g, U, mem, vg_out(NULL, 0), false, NULL);
    inner in = {0};
    int calls = 0;
    vg_attention_wrapper_options o = {0};
    o.attention_layer_size = 1;
    o.cell_input_fn = add_input_fn;
    o.cell_input_fn_user = &calls;
    vg_attention_wrapper *w = vg_attention_wrapper_new(inner_cell(&in), m, &o);
    vg_output state[4], ns[4], out;
    vg_attention_wrapper_zero_state(w, g, B, vg_out(NULL, 0), VG_DOUBLE, NULL, state);
    state[1] = cv(g, VG_DOUBLE, (const double[]){0.25, -0.5}, 2, (const int64_t[]){B, 1}, 2, "attention0");
    vg_output x = cv(g, VG_DOUBLE, (const double[]){0.5, 0.5}, 2, (const int64_t[]){B, 1}, 2, "x");
    CHECK_OK(vg_rnn_cell_call(vg_attention_wrapper_cell(w), g, x, state, &out, ns), &st);
    CHECK_EQ_INT(calls, 1);
    CHECK_EQ_INT(in.in_depth, 1);
    /* the cell's state' = tanh((x + a) C[0]) + 0.5 * 0 */
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v = NULL;
    CHECK_OK(vg_session_run1(s, ns[0], &v, &st), &st);
    const double xa[B] = {0.75, 0.0};
    for (int b = 0; b < B && v; b++)
        for (int k = 0; k < H; k++) CHECK_NEAR(((const double *)vg_tensor_data(v))[b * H + k], tanh(xa[b] * cval(0, k)), 1e-12);
    vg_tensor_free(v);
    vg_session_free(s);
    vg_attention_wrapper_free(w);
    vg_attention_mechanism_free(m);
    vg_graph_free(g);
}

/* probability_fn = hardmax and a finite score_mask_value: with Luong scores against
 * memory_layer = identity the alignment is one-hot at the best unmasked key; a mask
 * value above every score makes the masked step the argmax (as TF would). */
static void test_probability_fn_and_mask_value(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output mem = cv(g, VG_DOUBLE, MEM, B * T * D, (const int64_t[]){B, T, D}, 3, "memory");
    vg_output len = vg_const_array(g, VG_INT32, (const int64_t[]){B}, 1, LEN, "len");
    vg_attention_mechanism *m = vg_luong_attention_new(g, U, mem, len, false, NULL);
    vg_attention_mechanism_set_probability_fn(m, vg_hardmax, NULL);
    vg_output q = cv(g, VG_DOUBLE, (const double[]){1, 0, 0, 1}, 4, (const int64_t[]){B, 2}, 2, "q");
    vg_output al;
    CHECK_OK(vg_attention_mechanism_call(m, g, q, &al), &st);
    vg_attention_mechanism *m2 = vg_luong_attention_new(g, U, mem, len, false, NULL);
    vg_attention_mechanism_set_probability_fn(m2, vg_hardmax, NULL);
    vg_attention_mechanism_set_score_mask_value(m2, 100.0);
    vg_output al2;
    CHECK_OK(vg_attention_mechanism_call(m2, g, q, &al2), &st);
    fed f = {"memory_layer/kernel", 4, {D, U}, 2, {1, 0, 0, 1}};
    fed f2 = {"memory_layer_1/kernel", 4, {D, U}, 2, {1, 0, 0, 1}};
    vg_output feeds[2] = {read_of(g, f.name), read_of(g, f2.name)};
    vg_tensor *fv[2] = {fed_tensor(&f, VG_DOUBLE), fed_tensor(&f2, VG_DOUBLE)};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v[2] = {NULL, NULL};
    vg_output fetch[2] = {al, al2};
    CHECK_OK(vg_session_run(s, NULL, feeds, fv, 2, fetch, v, 2, NULL, 0, NULL, &st), &st);
    /* scores: batch 0 (q = e0): keys' first column 0.5, 0.1, -0.3 -> step 0;
     * batch 1 (q = e1): 0.1, 0.2, (step 2 masked) -> step 1; with mask value 100 the
     * masked step 2 wins for batch 1 */
    const double want[2][B * T] = {{1, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 0, 1}};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < B * T && v[k]; i++) CHECK_NEAR(((const double *)vg_tensor_data(v[k]))[i], want[k][i], 0);
    for (int k = 0; k < 2; k++) {
        vg_tensor_free(v[k]);
        vg_tensor_free(fv[k]);
    }
    vg_session_free(s);
    vg_attention_mechanism_free(m);
    vg_attention_mechanism_free(m2);
    vg_graph_free(g);
}

static void test_attention_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_output mem2 = vg_const_fill(g, VG_FLOAT, (const int64_t[]){2, 3}, 2, 0, "m");
    CHECK(vg_bahdanau_attention_new(g, 2, mem2, vg_out(NULL, 0), false, NULL) == NULL);
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output mem = vg_const_fill(g, VG_FLOAT, (const int64_t[]){2, 3, 4}, 3, 0, "m");
    vg_attention_mechanism *m = vg_luong_attention_new(g, 2, mem, vg_out(NULL, 0), false, NULL);
    CHECK(m != NULL);
    vg_output al;
    /* Luong needs query depth == num_units */
    CHECK_CODE(vg_attention_mechanism_call(m, g, vg_const_fill(g, VG_FLOAT, (const int64_t[]){2, 3}, 2, 0, "q"), &al),
               VG_INVALID_ARGUMENT);
    vg_attention_wrapper_options o = {0};
    o.alignment_history = true;
    CHECK(vg_attention_wrapper_new(vg_gru_cell_new(2), m, &o) == NULL);
    vg_attention_mechanism_free(m);
    vg_graph_free(g);
}

/* A copy task: an encoder GRU over embedded source tokens gives the memory; a GRU
 * decoder wrapped in Bahdanau attention reads the target shifted right (start token
 * 0) through TrainingHelper / BasicDecoder / dynamic_decode, with a dense output
 * layer; sequence_loss trained with Adam drops from ~ln(6) to near 0. The same model is
 * built again in the re-entered variable scope "model" with reuse (TF's separate
 * inference model) for greedy decoding (GreedyEmbeddingHelper) and for beam search
 * (BeamSearchDecoder, width 3, memory and encoder state tiled with tile_batch): both
 * copy the sources. */
enum { CN = 8, CL = 4, CV = 6, CE = 8, CH = 16, CK = 3 };

typedef struct copy_model {
    vg_rnn_cell *enc;
    vg_attention_mechanism *m;
    vg_attention_wrapper *w;
    vg_decoder_helper *h;
    vg_layer *proj;
    vg_decoder *d;
    vg_output outs[4];
} copy_model;

/* mode 0: training (TrainingHelper), 1: greedy, 2: beam search */
static void build_copy_model(vg_graph *g, vg_output src, vg_output tgt_in, int mode, copy_model *cm) {
    vg_status st;
    memset(cm, 0, sizeof *cm);
    vg_variable_scope_opts vo;
    memset(&vo, 0, sizeof vo);
    vo.reuse = mode ? VG_REUSE_TRUE : VG_REUSE_INHERIT;
    vg_variable_scope_push(g, "model", &vo);
    vg_initializer un = vg_init_random_uniform(-0.5, 0.5, 0);
    vg_variable es = vg_get_variable(g, "embedding_src", VG_FLOAT, (const int64_t[]){CV, CE}, 2, un, VG_VAR_TRAINABLE);
    vg_variable et = vg_get_variable(g, "embedding_tgt", VG_FLOAT, (const int64_t[]){CV, CE}, 2, un, VG_VAR_TRAINABLE);
    vg_output lens = vg_const_fill(g, VG_INT32, (const int64_t[]){CN}, 1, CL, "lens");
    cm->enc = vg_gru_cell_new(CH);
    vg_output mem, enc_state;
    CHECK_OK(vg_dynamic_rnn(cm->enc, g, vg_embedding_lookup(g, es.read, src, NULL), lens, NULL, VG_FLOAT, 0, false,
                            "encoder", &mem, &enc_state, &st),
             &st);
    int tile = mode == 2 ? CK : 1;
    if (tile > 1) {
        mem = vg_tile_batch(g, mem, tile, NULL);
        enc_state = vg_tile_batch(g, enc_state, tile, NULL);
        lens = vg_tile_batch(g, lens, tile, NULL);
    }
    cm->m = vg_bahdanau_attention_new(g, CH, mem, lens, false, NULL);
    vg_attention_wrapper_options o = {0};
    o.attention_layer_size = CH;
    cm->w = vg_attention_wrapper_new(vg_gru_cell_new(CH), cm->m, &o);
    vg_rnn_cell *cell = vg_attention_wrapper_cell(cm->w);
    vg_output init[4];
    CHECK_OK(vg_attention_wrapper_zero_state(cm->w, g, CN * tile, vg_out(NULL, 0), VG_FLOAT, &enc_state, init), &st);
    vg_layer_config lc = {.kind = VG_LAYER_DENSE};
    lc.units = CV;
    lc.no_bias = true;
    lc.name = "output_projection";
    cm->proj = vg_layer_new(&lc);
    vg_output start = vg_const_fill(g, VG_INT32, (const int64_t[]){CN}, 1, 0, "start");
    if (mode == 0) {
        cm->h = vg_training_helper_new(g, vg_embedding_lookup(g, et.read, tgt_in, NULL), lens, false, NULL);
        cm->d = vg_basic_decoder_new(cell, cm->h, init, cm->proj);
    } else if (mode == 1) {
        cm->h = vg_greedy_embedding_helper_new(g, et.read, start, CV); /* no end token: CV is out of range */
        cm->d = vg_basic_decoder_new(cell, cm->h, init, cm->proj);
    } else {
        cm->d = vg_beam_search_decoder_new(g, cell, et.read, start, CV - 1, init, CK, cm->proj, 0.0);
    }
    CHECK(cm->d != NULL);
    vg_dynamic_decode_options go = {0};
    if (mode) go.maximum_iterations = vg_const_i32(g, CL, "max_len");
    vg_output fin[8];
    if (cm->d) CHECK_OK(vg_dynamic_decode(g, cm->d, &go, cm->outs, fin, NULL, &st), &st);
    vg_variable_scope_pop(g);
}

static void free_copy_model(copy_model *cm) {
    vg_decoder_free(cm->d);
    vg_decoder_helper_free(cm->h);
    vg_layer_free(cm->proj);
    vg_attention_wrapper_free(cm->w);
    vg_attention_mechanism_free(cm->m);
    vg_rnn_cell_free(cm->enc);
}

static void test_copy_task_with_attention(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_graph_set_seed(g, 7);
    int32_t src[CN * CL], tin[CN * CL];
    uint32_t r = 12345;
    for (int i = 0; i < CN * CL; i++) {
        r = r * 1103515245u + 12345u;
        src[i] = 1 + (int32_t)((r >> 16) % (CV - 2)); /* tokens 1 .. CV-2; CV-1 is the beam's end token */
    }
    for (int b = 0; b < CN; b++)
        for (int t = 0; t < CL; t++) tin[b * CL + t] = t == 0 ? 0 : src[b * CL + t - 1];
    vg_output s = vg_const_array(g, VG_INT32, (const int64_t[]){CN, CL}, 2, src, "src");
    vg_output ti = vg_const_array(g, VG_INT32, (const int64_t[]){CN, CL}, 2, tin, "tgt_in");
    copy_model train, greedy, beam;
    build_copy_model(g, s, ti, 0, &train);
    const char *names[] = {"model/embedding_src", "model/embedding_tgt", "model/encoder/gru_cell/gates/kernel",
                           "model/encoder/gru_cell/gates/bias", "model/encoder/gru_cell/candidate/kernel",
                           "model/encoder/gru_cell/candidate/bias", "model/memory_layer/kernel",
                           "model/decoder/attention_wrapper/gru_cell/gates/kernel",
                           "model/decoder/attention_wrapper/gru_cell/gates/bias",
                           "model/decoder/attention_wrapper/gru_cell/candidate/kernel",
                           "model/decoder/attention_wrapper/gru_cell/candidate/bias",
                           "model/decoder/attention_wrapper/bahdanau_attention/query_layer/kernel",
                           "model/decoder/attention_wrapper/bahdanau_attention/attention_v",
                           "model/decoder/attention_wrapper/attention_layer/kernel",
                           "model/decoder/output_projection/kernel"};
    check_names(g, names, 15);
    vg_output loss = vg_sequence_loss(g, train.outs[0], s,
                                      vg_const_fill(g, VG_FLOAT, (const int64_t[]){CN, CL}, 2, 1, NULL), true, true, NULL);
    vg_optimizer *adam = vg_optimizer_new_adam(0.03, 0.9, 0.999, 1e-8);
    vg_op *trainop = vg_optimizer_minimize(adam, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
    CHECK(trainop != NULL);
    build_copy_model(g, s, ti, 1, &greedy);
    build_copy_model(g, s, ti, 2, &beam);
    int nv = 0;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 15); /* the inference models share every variable */
    vg_op *initop = vg_global_variables_initializer(g);
    vg_session *sess = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(sess, &initop, 1, &st), &st);
    double first = -1, last = -1;
    for (int step = 0; step < 300 && sess; step++) {
        vg_tensor *lv = NULL;
        if (vg_session_run(sess, NULL, NULL, NULL, 0, &loss, &lv, 1, &trainop, 1, NULL, &st) != VG_OK) {
            CHECK_OK(st.code, &st);
            break;
        }
        double l = ((const float *)vg_tensor_data(lv))[0];
        if (step == 0) first = l;
        last = l;
        vg_tensor_free(lv);
    }
    fprintf(stderr, "  copy task loss: %.4f -> %.4f\n", first, last);
    CHECK(first > 1.2);
    CHECK(last < 0.05);
    vg_tensor *ids = NULL, *bids = NULL;
    CHECK_OK(vg_session_run1(sess, greedy.outs[1], &ids, &st), &st);
    if (ids) {
        CHECK_EQ_INT(vg_tensor_dim(ids, 1), CL);
        int same = 0;
        for (int i = 0; i < CN * CL; i++) same += ((const int32_t *)vg_tensor_data(ids))[i] == src[i];
        CHECK_EQ_INT(same, CN * CL);
    }
    /* beam search: predicted_ids [batch, time, beam]; the best beam copies */
    CHECK_OK(vg_session_run1(sess, beam.outs[0], &bids, &st), &st);
    if (bids) {
        CHECK_EQ_INT(vg_tensor_dim(bids, 1), CL);
        CHECK_EQ_INT(vg_tensor_dim(bids, 2), CK);
        int same = 0;
        for (int b = 0; b < CN; b++)
            for (int t = 0; t < CL; t++) same += ((const int32_t *)vg_tensor_data(bids))[(b * CL + t) * CK] == src[b * CL + t];
        CHECK_EQ_INT(same, CN * CL);
    }
    vg_tensor_free(ids);
    vg_tensor_free(bids);
    vg_session_free(sess);
    vg_optimizer_free(adam);
    free_copy_model(&train);
    free_copy_model(&greedy);
    free_copy_model(&beam);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_bahdanau_wrapper_step);
    RUN_TEST(test_luong_scale_and_bahdanau_normalize);
    RUN_TEST(test_attention_gradient);
    RUN_TEST(test_attention_decode_gradient);
    RUN_TEST(test_cell_input_fn);
    RUN_TEST(test_probability_fn_and_mask_value);
    RUN_TEST(test_attention_errors);
    RUN_TEST(test_copy_task_with_attention);
    TEST_MAIN_END();
}
