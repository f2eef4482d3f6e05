/* test_fusion_matmul_sum.c - plan-time fusion of AddN(MatMul, ...) into one GEMM over the
 * stacked reduction dimension (src/exec/fuse_matmul.c, kernel _VigilFusedMatMulSum[TA] in
 * src/kernels/nn/nn_ops.c): the weight gradient of an unrolled RNN (the same W at every
 * step) equals the unfused plan's and runs one fused node; products with different K,
 * transpose_a false, float64; left alone when a product is fetched too or transposes b. */
#include "test_util.h"
#include "op_test_util.h"
#include "exec/exec.h"
#include "vigil/vigil.h"

static int count(vg_run_metadata *md, const char *type) {
    int n = 0;
    for (int i = 0; i < vg_run_metadata_num_nodes(md); i++) n += !strcmp(vg_run_metadata_node(md, i)->op_type, type);
    return n;
}

static int run_g(vg_graph *g, const vg_output *feeds, vg_tensor **vals, int nfeeds, const vg_output *fetch, int nfetch,
                 vg_tensor **outs, bool fused, const char *type) {
    bool old = vg__plan_set_fusion(fused);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int n = -1;
    if (s && md) {
        CHECK_OK(vg_session_run(s, &ro, feeds, vals, nfeeds, fetch, outs, nfetch, NULL, 0, md, &st), &st);
        if (st.code == VG_OK) n = count(md, type);
    }
    vg_run_metadata_free(md);
    vg_session_free(s);
    vg__plan_set_fusion(old);
    return n;
}

static double maxrel(const vg_tensor *a, const vg_tensor *b) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(a); i++) {
        double d = fabs(get(a, i) - get(b, i));
        m = d > m ? d : m;
        s = fabs(get(b, i)) > s ? fabs(get(b, i)) : s;
    }
    return m / (1 + s);
}

static double *randv_libc(int64_t n, unsigned seed) {
    double *v = malloc(sizeof(double) * (size_t)n);
    srand(seed);
    for (int64_t i = 0; i < n; i++) v[i] = 2.0 * rand() / RAND_MAX - 1.0;
    return v;
}

/* h_t = tanh(x_t W + h_{t-1} U), loss = sum(h_T * w8): dW and dU are sums of T products. */
static void test_matmul_sum__unrolled_rnn(void) {
    enum { T = 7, B = 5, I = 6, H = 9 };
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {B, I}, wd[2] = {I, H}, ud[2] = {H, H}, hd[2] = {B, H};
    vg_output W = vg_placeholder(g, VG_FLOAT, wd, 2, "W"), U = vg_placeholder(g, VG_FLOAT, ud, 2, "U");
    vg_output feeds[T + 2], h = vg_const_fill(g, VG_FLOAT, hd, 2, 0.0, "h0");
    feeds[0] = W, feeds[1] = U;
    for (int t = 0; t < T; t++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", t);
        feeds[2 + t] = vg_placeholder(g, VG_FLOAT, xd, 2, nm);
        h = vg_tanh(g, vg_add(g, vg_matmul(g, feeds[2 + t], W, false, false, NULL), vg_matmul(g, h, U, false, false, NULL), NULL),
                    NULL);
    }
    vg_output L = vg_reduce_sum(g, vg_mul(g, h, h, NULL), NULL, -1, false, NULL), wrt[2] = {W, U}, d[2];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, wrt, 2, NULL, d, &st), &st);
    vg_tensor *vals[T + 2];
    double *wv = randv_libc(I * H, 1), *uv = randv_libc(H * H, 2);
    vals[0] = mk(VG_FLOAT, wd, 2, wv), vals[1] = mk(VG_FLOAT, ud, 2, uv);
    for (int t = 0; t < T; t++) {
        double *xv = randv_libc(B * I, 10 + t);
        vals[2 + t] = mk(VG_FLOAT, xd, 2, xv);
        free(xv);
    }
    vg_tensor *f[2], *u[2];
    CHECK_EQ_INT(run_g(g, feeds, vals, T + 2, d, 2, f, true, "_VigilFusedMatMulSumTA"), 2);
    CHECK_EQ_INT(run_g(g, feeds, vals, T + 2, d, 2, u, false, "_VigilFusedMatMulSumTA"), 0);
    for (int i = 0; i < 2; i++) {
        CHECK(maxrel(f[i], u[i]) < 1e-5);
        vg_tensor_free(f[i]), vg_tensor_free(u[i]);
    }
    for (int i = 0; i < T + 2; i++) vg_tensor_free(vals[i]);
    free(wv), free(uv);
    vg_graph_free(g);
}

/* sum_t A_t B_t with A_t [M, K_t] (transpose_a false), K_t different, float64; then the
 * same with one product also fetched (not fused) and with transpose_b (not fused). */
static void test_matmul_sum__shapes_and_exclusions(void) {
    enum { M = 4, N = 3 };
    static const int64_t K[3] = {2, 5, 1};
    for (int variant = 0; variant < 3; variant++) {
        vg_graph *g = vg_graph_new();
        vg_output feeds[6], prods[3];
        vg_tensor *vals[6];
        double ref[M * N] = {0};
        for (int t = 0; t < 3; t++) {
            int64_t ad[2] = {M, K[t]}, bd[2] = {variant == 2 ? N : K[t], variant == 2 ? K[t] : N};
            feeds[t] = vg_placeholder(g, VG_DOUBLE, ad, 2, NULL);
            feeds[3 + t] = vg_placeholder(g, VG_DOUBLE, bd, 2, NULL);
            prods[t] = vg_matmul(g, feeds[t], feeds[3 + t], false, variant == 2, NULL);
            double *av = randv_libc(M * K[t], 20 + t), *bv = randv_libc(K[t] * N, 30 + t);
            vals[t] = mk(VG_DOUBLE, ad, 2, av), vals[3 + t] = mk(VG_DOUBLE, bd, 2, bv);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++)
                    for (int k = 0; k < K[t]; k++)
                        ref[i * N + j] += av[i * K[t] + k] * (variant == 2 ? bv[j * K[t] + k] : bv[k * N + j]);
            free(av), free(bv);
        }
        vg_output fetch[2] = {vg_add_n(g, prods, 3, NULL), prods[1]};
        vg_tensor *o[2] = {NULL, NULL};
        int n = run_g(g, feeds, vals, 6, fetch, variant == 1 ? 2 : 1, o, true, "_VigilFusedMatMulSum");
        CHECK_EQ_INT(n, variant == 0 ? 1 : 0);
        for (int i = 0; i < M * N; i++) CHECK_NEAR(get(o[0], i), ref[i], 1e-12);
        vg_tensor_free(o[0]), vg_tensor_free(o[1]);
        for (int i = 0; i < 6; i++) vg_tensor_free(vals[i]);
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_matmul_sum__unrolled_rnn);
    RUN_TEST(test_matmul_sum__shapes_and_exclusions);
    TEST_MAIN_END();
}
