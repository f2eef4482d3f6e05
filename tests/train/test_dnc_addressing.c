/* test_dnc_addressing.c - the DNC port's util and addressing functions
 * (examples/tf1/dnc/util.c, addressing.c) against hand-computed values: cases translated
 * from google-deepmind/dnc dnc/addressing_test.py and util_test.py (WeightedSoftmax,
 * CosineWeights values and divide-by-zero, TemporalLinkage module and precedence
 * weights, Freeness module, write allocation weights, allocation and their gradients,
 * batch_invert_permutation, batch_gather, reduce_prod). */
#include "gradcheck.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include "../examples/tf1/dnc/util.c"
#include "../examples/tf1/dnc/addressing.c"

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) { /* xorshift64, uniform [0, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand() + 1e-12)) * cos(6.283185307179586 * urand()); }

static vg_tensor *tensor(const int64_t *dims, int nd, const float *v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_FLOAT, dims, nd, &st);
    memcpy(vg_tensor_data(t), v, vg_tensor_nbytes(t));
    return t;
}

/* runs fetches with feeds; out[i] owned by the caller */
static bool run(vg_graph *g, const vg_output *feeds, vg_tensor *const *vals, int nf, const vg_output *fetch, int n,
                vg_tensor **out) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) return fprintf(stderr, "session: %s\n", st.msg), false;
    vg_code c = vg_session_run(s, NULL, feeds, vals, nf, fetch, out, n, NULL, 0, NULL, &st);
    if (c) fprintf(stderr, "run: %s\n", st.msg);
    vg_session_free(s);
    return c == VG_OK;
}

static const float *F(const vg_tensor *t) { return vg_tensor_data(t); }

static void test_batch_invert_permutation_and_gather(void) {
    vg_graph *g = vg_graph_new();
    const int32_t p[8] = {0, 2, 1, 3, 3, 0, 1, 2};
    vg_output perms = vg_const_array(g, VG_INT32, (const int64_t[]){2, 4}, 2, p, "p");
    vg_output inv = dnc_batch_invert_permutation(g, perms);
    const float v[8] = {10, 11, 12, 13, 20, 21, 22, 23};
    vg_output gathered = dnc_batch_gather(g, vg_const_array(g, VG_FLOAT, (const int64_t[]){2, 4}, 2, v, "v"), perms);
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = 0.5f + 0.25f * (float)i;
    vg_output prod = dnc_reduce_prod(g, vg_const_array(g, VG_FLOAT, (const int64_t[]){2, 3, 2}, 3, x, "x"), 1, NULL);
    vg_tensor *o[3] = {NULL, NULL, NULL};
    CHECK(run(g, NULL, NULL, 0, (const vg_output[]){inv, gathered, prod}, 3, o));
    if (o[0] && o[1] && o[2]) {
        const int32_t want_inv[8] = {0, 2, 1, 3, 1, 2, 3, 0};
        const float want_g[8] = {10, 12, 11, 13, 23, 20, 21, 22};
        for (int i = 0; i < 8; i++) {
            CHECK_EQ_INT(((const int32_t *)vg_tensor_data(o[0]))[i], want_inv[i]);
            CHECK_NEAR(F(o[1])[i], want_g[i], 0);
        }
        CHECK_EQ_INT(vg_tensor_ndims(o[2]), 2);
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 2; j++)
                CHECK_NEAR(F(o[2])[b * 2 + j], x[b * 6 + j] * x[b * 6 + 2 + j] * x[b * 6 + 4 + j], 1e-5);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
    vg_graph_free(g);
}

/* WeightedSoftmaxTest.testValues: with softplus(strength) = 1 it is a plain softmax */
static void test_weighted_softmax(void) {
    enum { B = 5, H = 3, N = 7 };
    vg_graph *g = vg_graph_new();
    float act[B * H * N], w[B * H];
    for (int i = 0; i < B * H * N; i++) act[i] = (float)nrand();
    for (int i = 0; i < B * H; i++) w[i] = (float)log(exp(1.0) - 1.0);
    vg_output y = dnc_weighted_softmax(g, vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H, N}, 3, act, "a"),
                                       vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H}, 2, w, "w"));
    vg_tensor *o = NULL;
    CHECK(run(g, NULL, NULL, 0, &y, 1, &o));
    for (int r = 0; o && r < B * H; r++) {
        double sum = 0;
        for (int k = 0; k < N; k++) sum += exp(act[r * N + k]);
        for (int k = 0; k < N; k++) CHECK_NEAR(F(o)[r * N + k], exp(act[r * N + k]) / sum, 1e-5);
    }
    kt_teardown(g, NULL, &o, 1, NULL, 0);
}

/* CosineWeightsTest.testShape / testValues */
static void test_cosine_weights(void) {
    enum { B = 5, H = 4, N = 10, W = 2 };
    vg_graph *g = vg_graph_new();
    float mem[B * N * W], keys[B * H * W], str[B * H];
    for (int i = 0; i < B * N * W; i++) mem[i] = (float)nrand();
    for (int i = 0; i < B * H * W; i++) keys[i] = (float)nrand();
    for (int i = 0; i < B * H; i++) str[i] = (float)nrand();
    const float m0[6] = {1, 2, 3, 4, 5, 6}, k0[8] = {5, 6, 1, 2, 5, 6, 3, 4};
    memcpy(mem, m0, sizeof m0);
    memcpy(keys, k0, sizeof k0);
    vg_output pm = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, N, W}, 3, "mem");
    vg_output pk = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, H, W}, 3, "keys");
    vg_output ps = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, H}, 2, "strengths");
    vg_output y = dnc_cosine_weights(g, pm, pk, ps, NULL);
    vg_shape s = vg_output_shape(y);
    CHECK(s.ndims == 3 && s.dims[0] == B && s.dims[1] == H && s.dims[2] == N);
    vg_tensor *vals[3] = {tensor((const int64_t[]){B, N, W}, 3, mem), tensor((const int64_t[]){B, H, W}, 3, keys),
                          tensor((const int64_t[]){B, H}, 2, str)};
    vg_tensor *o = NULL;
    CHECK(run(g, (const vg_output[]){pm, pk, ps}, vals, 3, &y, 1, &o));
    for (int b = 0; o && b < B; b++)
        for (int h = 0; h < H; h++) {
            double sp = log(1 + exp(str[b * H + h])), sim[N], sum = 0;
            const float *key = keys + (b * H + h) * W;
            double kn = sqrt(key[0] * key[0] + key[1] * key[1]);
            for (int m = 0; m < N; m++) {
                const float *row = mem + (b * N + m) * W;
                sim[m] = exp((key[0] * row[0] + key[1] * row[1]) / (kn * sqrt(row[0] * row[0] + row[1] * row[1])) * sp);
                sum += sim[m];
            }
            for (int m = 0; m < N; m++) CHECK_NEAR(F(o)[(b * H + h) * N + m], sim[m] / sum, 1e-4);
        }
    vg_tensor_free(o);
    for (int i = 0; i < 3; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
}

/* CosineWeightsTest.testDivideByZero: one non-zero memory row; no NaN in the output nor
 * in the gradients w.r.t. memory, keys and strengths */
static void test_cosine_weights_divide_by_zero(void) {
    enum { B = 5, H = 4, N = 10, W = 2 };
    vg_graph *g = vg_graph_new();
    vg_status st;
    float keys[B * H * W], str[B * H], mem[B * N * W] = {0};
    for (int i = 0; i < B * H * W; i++) keys[i] = (float)nrand();
    for (int i = 0; i < B * H; i++) str[i] = (float)nrand();
    for (int b = 0; b < B; b++) mem[b * N * W] = mem[b * N * W + 1] = 1;
    vg_output pm = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, N, W}, 3, mem, "mem");
    vg_output pk = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H, W}, 3, keys, "keys");
    vg_output ps = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H}, 2, str, "strengths");
    vg_output y = dnc_cosine_weights(g, pm, pk, ps, NULL);
    vg_output d[3];
    CHECK_OK(vg_gradients(g, &y, 1, (const vg_output[]){pm, pk, ps}, 3, NULL, d, &st), &st);
    vg_tensor *o[4] = {NULL, NULL, NULL, NULL};
    CHECK(run(g, NULL, NULL, 0, (const vg_output[]){y, d[0], d[1], d[2]}, 4, o));
    for (int k = 0; k < 4; k++) {
        for (int64_t i = 0; o[k] && i < vg_tensor_num_elements(o[k]); i++) CHECK(!isnan(F(o[k])[i]));
        vg_tensor_free(o[k]);
    }
    vg_graph_free(g);
}

/* TemporalLinkageTest.testModule */
static void test_temporal_linkage(void) {
    enum { B = 7, N = 4, R = 11, H = 5, STEPS = 5 };
    vg_graph *g = vg_graph_new();
    dnc_temporal_linkage m = {N, H};
    vg_output pl = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, H, N, N}, 4, "prev_link");
    vg_output pp = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, H, N}, 3, "prev_precedence");
    vg_output pw = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, H, N}, 3, "write_weights");
    vg_output link, prec;
    dnc_temporal_linkage_call(g, &m, pw, pl, pp, &link, &prec);
    static float L[B * H * N * N], P[B * H * N], WW[B * H * N];
    memset(L, 0, sizeof L);
    memset(P, 0, sizeof P);
    bool ok = true;
    for (int i = 0; i < STEPS && ok; i++) {
        for (int r = 0; r < B * H; r++) {
            double s = 0;
            for (int k = 0; k < N; k++) s += (WW[r * N + k] = (float)urand());
            for (int k = 0; k < N; k++) WW[r * N + k] /= (float)(s + 1);
        }
        /* simulate (in the final steps) link 0 --> 1 in head 0 and 3 --> 2 in head 1 */
        if (i >= STEPS - 2) {
            int a = i == STEPS - 2 ? 0 : 1, c = i == STEPS - 2 ? 3 : 2;
            for (int k = 0; k < N; k++) {
                WW[0 * N + k] = k == a ? 1.0f : 0.0f;
                WW[1 * N + k] = k == c ? 1.0f : 0.0f;
            }
        }
        vg_tensor *vals[3] = {tensor((const int64_t[]){B, H, N, N}, 4, L), tensor((const int64_t[]){B, H, N}, 3, P),
                              tensor((const int64_t[]){B, H, N}, 3, WW)};
        vg_tensor *o[2] = {NULL, NULL};
        ok = run(g, (const vg_output[]){pl, pp, pw}, vals, 3, (const vg_output[]){link, prec}, 2, o);
        if (ok) {
            memcpy(L, vg_tensor_data(o[0]), sizeof L);
            memcpy(P, vg_tensor_data(o[1]), sizeof P);
        }
        for (int k = 0; k < 3; k++) vg_tensor_free(vals[k]);
        vg_tensor_free(o[0]);
        vg_tensor_free(o[1]);
    }
    CHECK(ok);
    float mn = 1, mx = 0, rowmax = 0, colmax = 0;
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < N; i++) {
            float rs = 0, cs = 0;
            for (int j = 0; j < N; j++) {
                float v = L[(bh * N + i) * N + j];
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
                rs += v;
                cs += L[(bh * N + j) * N + i];
                if (i == j) CHECK_NEAR(v, 0, 0); /* the diagonal is zero */
            }
            rowmax = rs > rowmax ? rs : rowmax;
            colmax = cs > colmax ? cs : colmax;
        }
    CHECK(mn >= 0 && mx <= 1);
    CHECK(rowmax <= 1 + 1e-6 && colmax <= 1 + 1e-6);
    /* records the transitions in batch 0: head 0: 0 -> 1, head 1: 3 -> 2 */
    for (int k = 0; k < N; k++) {
        CHECK_NEAR(L[(0 * N + k) * N + 0], k == 1, 0);
        CHECK_NEAR(L[((1) * N + k) * N + 3], k == 2, 0);
    }
    /* forward and backward read weights */
    static float RW[B * R * N];
    for (int i = 0; i < B * R * N; i++) RW[i] = (float)urand();
    for (int k = 0; k < N; k++) {
        RW[5 * N + k] = k == 0; /* read 5, position 0 */
        RW[6 * N + k] = k == 2; /* read 6, position 2 */
    }
    vg_output lc = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H, N, N}, 4, L, "link_c");
    vg_output rc = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, R, N}, 3, RW, "rw_c");
    vg_output fw = dnc_directional_read_weights(g, &m, lc, rc, true);
    vg_output bw = dnc_directional_read_weights(g, &m, lc, rc, false);
    vg_shape fs = vg_output_shape(fw);
    CHECK(fs.ndims == 4 && fs.dims[1] == R && fs.dims[2] == H && fs.dims[3] == N);
    vg_tensor *o[2] = {NULL, NULL};
    CHECK(run(g, NULL, NULL, 0, (const vg_output[]){fw, bw}, 2, o));
    for (int k = 0; o[0] && o[1] && k < N; k++) {
        CHECK_NEAR(F(o[0])[((0 * R + 5) * H + 0) * N + k], k == 1, 0); /* read 5, write 0 */
        CHECK_NEAR(F(o[1])[((0 * R + 6) * H + 1) * N + k], k == 3, 0); /* read 6, write 1 */
    }
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    vg_graph_free(g);
}

/* TemporalLinkageTest.testPrecedenceWeights */
static void test_precedence_weights(void) {
    enum { B = 7, N = 3, H = 5 };
    vg_graph *g = vg_graph_new();
    dnc_temporal_linkage m = {N, H};
    float prev[B * H * N], ww[B * H * N], link0[B * H * N * N] = {0};
    for (int r = 0; r < B * H; r++) {
        double s1 = 0, s2 = 0;
        for (int k = 0; k < N; k++) s1 += (prev[r * N + k] = (float)urand()), s2 += (ww[r * N + k] = (float)urand());
        for (int k = 0; k < N; k++) prev[r * N + k] /= (float)(s1 + 1), ww[r * N + k] /= (float)(s2 + 1);
    }
    double s = 0;
    for (int k = 0; k < N; k++) ww[(0 * H + 1) * N + k] = 0; /* batch 0 head 1: no writing */
    for (int k = 0; k < N; k++) s += ww[(1 * H + 2) * N + k];
    for (int k = 0; k < N; k++) ww[(1 * H + 2) * N + k] /= (float)s; /* b1 h2: all writing */
    vg_output link, prec;
    dnc_temporal_linkage_call(g, &m, vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H, N}, 3, ww, "ww"),
                              vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H, N, N}, 4, link0, "l"),
                              vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H, N}, 3, prev, "p"), &link, &prec);
    vg_tensor *o = NULL;
    CHECK(run(g, NULL, NULL, 0, &prec, 1, &o));
    for (int i = 0; o && i < B * H * N; i++) CHECK(F(o)[i] >= 0 && F(o)[i] <= 1);
    for (int k = 0; o && k < N; k++) {
        CHECK_NEAR(F(o)[(0 * H + 1) * N + k], prev[(0 * H + 1) * N + k], 1e-6);
        CHECK_NEAR(F(o)[(1 * H + 2) * N + k], ww[(1 * H + 2) * N + k], 1e-6);
    }
    kt_teardown(g, NULL, &o, 1, NULL, 0);
}

/* FreenessTest.testModule */
static void test_freeness_module(void) {
    enum { B = 5, N = 11, R = 3, H = 7 };
    vg_graph *g = vg_graph_new();
    dnc_freeness m = {N};
    float fg[B * R], rw[B * R * N], ww[B * H * N], pu[B * N];
    for (int i = 0; i < B * R; i++) fg[i] = (float)urand();
    for (int i = 0; i < B * R * N; i++) rw[i] = (float)urand();
    for (int r = 0; r < R; r++) rw[(1 * R + r) * N + 3] = 0; /* no read at batch 1, position 3 */
    for (int r = 0; r < B * R; r++) {
        double s = 0;
        for (int k = 0; k < N; k++) s += rw[r * N + k];
        for (int k = 0; k < N; k++) rw[r * N + k] /= (float)s;
    }
    for (int r = 0; r < B * H; r++) {
        double s = 0;
        for (int k = 0; k < N; k++) s += (ww[r * N + k] = (float)urand());
        for (int k = 0; k < N; k++) ww[r * N + k] /= (float)s;
    }
    for (int i = 0; i < B * N; i++) pu[i] = (float)urand();
    ww[(1 * H + 2) * N + 3] = 1; /* full write in batch 1, head 2, position 3 */
    rw[(2 * R + 0) * N + 4] = 1; /* full read at batch 2, head 0, position 4 */
    fg[2 * R + 0] = 1;           /* can free up all locations for batch 2, read head 0 */
    vg_output u = dnc_freeness_call(g, &m, vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H, N}, 3, ww, "ww"),
                                    vg_const_array(g, VG_FLOAT, (const int64_t[]){B, R}, 2, fg, "fg"),
                                    vg_const_array(g, VG_FLOAT, (const int64_t[]){B, R, N}, 3, rw, "rw"),
                                    vg_const_array(g, VG_FLOAT, (const int64_t[]){B, N}, 2, pu, "pu"));
    vg_tensor *o = NULL;
    CHECK(run(g, NULL, NULL, 0, &u, 1, &o));
    for (int i = 0; o && i < B * N; i++) CHECK(F(o)[i] >= 0 && F(o)[i] <= 1);
    if (o) {
        CHECK_NEAR(F(o)[1 * N + 3], 1, 0);
        CHECK_NEAR(F(o)[2 * N + 4], 0, 0);
    }
    kt_teardown(g, NULL, &o, 1, NULL, 0);
}

/* FreenessTest.testWriteAllocationWeights */
static void test_write_allocation_weights(void) {
    enum { B = 7, N = 23, H = 5 };
    vg_graph *g = vg_graph_new();
    dnc_freeness m = {N};
    float usage[B * N], gates[B * H];
    for (int i = 0; i < B * N; i++) usage[i] = (float)urand();
    for (int i = 0; i < B * H; i++) gates[i] = (float)urand();
    gates[1] = gates[3] = 0; /* heads 1 and 3 of batch 0 off: same weights for (1, 2) and (3, 4) */
    gates[0] = gates[2] = 1;
    for (int k = 0; k < N; k++) usage[N + k] = usage[N + k] * 0.9f + 0.1f;
    usage[N + 4] = 0;    /* write head 0 gets position 4 */
    usage[N + 3] = 1e-4f; /* write head 1 gets position 3 */
    gates[H + 0] = gates[H + 1] = 1;
    vg_output w = dnc_write_allocation_weights(g, &m, vg_const_array(g, VG_FLOAT, (const int64_t[]){B, N}, 2, usage, "u"),
                                               vg_const_array(g, VG_FLOAT, (const int64_t[]){B, H}, 2, gates, "g"), H);
    vg_tensor *o = NULL;
    CHECK(run(g, NULL, NULL, 0, &w, 1, &o));
    if (o) {
        const float *p = F(o);
        for (int i = 0; i < B * H * N; i++) CHECK(p[i] >= 0 && p[i] <= 1);
        for (int r = 0; r < B * H; r++) {
            double s = 0;
            for (int k = 0; k < N; k++) s += p[r * N + k];
            CHECK_NEAR(s, 1, 1e-3);
        }
        double d01 = 0, d23 = 0, d12 = 0, d34 = 0;
        for (int k = 0; k < N; k++) {
            d01 = fmax(d01, fabs(p[0 * N + k] - p[1 * N + k]));
            d12 = fmax(d12, fabs(p[1 * N + k] - p[2 * N + k]));
            d23 = fmax(d23, fabs(p[2 * N + k] - p[3 * N + k]));
            d34 = fmax(d34, fabs(p[3 * N + k] - p[4 * N + k]));
        }
        CHECK(d01 > 0.1 && d23 > 0.1);
        CHECK_NEAR(d12, 0, 0);
        CHECK_NEAR(d34, 0, 0);
        for (int k = 0; k < N; k++) {
            CHECK_NEAR(p[(1 * H + 0) * N + k], k == 4, 1e-3);
            CHECK_NEAR(p[(1 * H + 1) * N + k], k == 3, 1e-3);
        }
    }
    kt_teardown(g, NULL, &o, 1, NULL, 0);
}

/* FreenessTest.testAllocation: the largest allocation goes to the least used slot and
 * vice versa; allocations sum to almost 1 */
static void test_allocation(void) {
    enum { B = 7, N = 13 };
    vg_graph *g = vg_graph_new();
    dnc_freeness m = {N};
    float usage[B * N];
    for (int i = 0; i < B * N; i++) usage[i] = (float)urand();
    vg_output a = dnc_allocation(g, &m, vg_const_array(g, VG_FLOAT, (const int64_t[]){B, N}, 2, usage, "u"));
    vg_tensor *o = NULL;
    CHECK(run(g, NULL, NULL, 0, &a, 1, &o));
    for (int b = 0; o && b < B; b++) {
        int umin = 0, umax = 0, amin = 0, amax = 0;
        double s = 0;
        for (int k = 0; k < N; k++) {
            const float *u = usage + b * N, *p = F(o) + b * N;
            if (u[k] < u[umin]) umin = k;
            if (u[k] > u[umax]) umax = k;
            if (p[k] < p[amin]) amin = k;
            if (p[k] > p[amax]) amax = k;
            s += p[k];
        }
        CHECK_EQ_INT(umin, amax);
        CHECK_EQ_INT(umax, amin);
        CHECK_NEAR(s, 1, 0.01);
    }
    kt_teardown(g, NULL, &o, 1, NULL, 0);
}

/* testAllocationGradient, testWriteAllocationWeightsGradient and the link update's
 * gradient (MatrixSetDiag) by finite differences */
static void test_gradients(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    dnc_freeness m5 = {5};
    vg_output u1 = vg_placeholder(g, VG_FLOAT, (const int64_t[]){1, 5}, 2, "u1");
    vg_output a = dnc_allocation(g, &m5, u1);
    const float uv[5] = {0.21f, 0.74f, 0.45f, 0.93f, 0.08f};
    vg_tensor *t = tensor((const int64_t[]){1, 5}, 2, uv);
    CHECK_EQ_INT(vg_gradcheck(g, &u1, &t, 1, a, 1e-3, 2e-2), 0);
    vg_tensor_free(t);
    vg_graph_free(g);

    g = vg_graph_new();
    enum { B = 3, N = 5, H = 3 };
    vg_output u = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, N}, 2, "u");
    vg_output gt = vg_placeholder(g, VG_FLOAT, (const int64_t[]){B, H}, 2, "gates");
    vg_output w = dnc_write_allocation_weights(g, &m5, u, gt, H);
    float us[B * N], gs[B * H];
    for (int i = 0; i < B * N; i++) us[i] = 0.05f + 0.9f * (float)((i * 7) % 15) / 15.0f;
    for (int i = 0; i < B * H; i++) gs[i] = 0.2f + 0.6f * (float)urand();
    vg_tensor *vals[2] = {tensor((const int64_t[]){B, N}, 2, us), tensor((const int64_t[]){B, H}, 2, gs)};
    CHECK_EQ_INT(vg_gradcheck(g, (const vg_output[]){u, gt}, vals, 2, w, 1e-3, 2e-2), 0);
    vg_tensor_free(vals[0]);
    vg_tensor_free(vals[1]);
    vg_graph_free(g);

    g = vg_graph_new();
    dnc_temporal_linkage lm = {4, 2};
    vg_output ww = vg_placeholder(g, VG_FLOAT, (const int64_t[]){2, 2, 4}, 3, "ww");
    vg_output pl = vg_placeholder(g, VG_FLOAT, (const int64_t[]){2, 2, 4, 4}, 4, "pl");
    vg_output pp = vg_placeholder(g, VG_FLOAT, (const int64_t[]){2, 2, 4}, 3, "pp");
    vg_output link, prec;
    dnc_temporal_linkage_call(g, &lm, ww, pl, pp, &link, &prec);
    vg_output y = vg_add(g, vg_reduce_sum(g, link, NULL, -1, false, NULL),
                         vg_reduce_sum(g, vg_mul(g, prec, prec, NULL), NULL, -1, false, NULL), NULL);
    float a1[16], a2[64], a3[16];
    for (int i = 0; i < 16; i++) a1[i] = 0.2f * (float)urand(), a3[i] = 0.2f * (float)urand();
    for (int i = 0; i < 64; i++) a2[i] = (float)urand();
    vg_tensor *lv[3] = {tensor((const int64_t[]){2, 2, 4}, 3, a1), tensor((const int64_t[]){2, 2, 4, 4}, 4, a2),
                        tensor((const int64_t[]){2, 2, 4}, 3, a3)};
    CHECK_EQ_INT(vg_gradcheck(g, (const vg_output[]){ww, pl, pp}, lv, 3, vg_mul(g, link, link, NULL), 1e-3, 2e-2), 0);
    CHECK_EQ_INT(vg_gradcheck(g, (const vg_output[]){ww, pl, pp}, lv, 3, y, 1e-3, 2e-2), 0);
    for (int i = 0; i < 3; i++) vg_tensor_free(lv[i]);
    (void)st;
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_batch_invert_permutation_and_gather);
    RUN_TEST(test_weighted_softmax);
    RUN_TEST(test_cosine_weights);
    RUN_TEST(test_cosine_weights_divide_by_zero);
    RUN_TEST(test_temporal_linkage);
    RUN_TEST(test_precedence_weights);
    RUN_TEST(test_freeness_module);
    RUN_TEST(test_write_allocation_weights);
    RUN_TEST(test_allocation);
    RUN_TEST(test_gradients);
    TEST_MAIN_END();
}
