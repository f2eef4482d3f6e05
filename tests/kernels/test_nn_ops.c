/* test_nn_ops.c - the dense nn ops: MatMul (every transpose combination, float and
 * double, the threaded split against a naive loop), BiasAdd/BiasAddGrad, Relu,
 * Sigmoid, Tanh and their *Grad ops, Softmax, LogSoftmax, the two cross-entropy ops
 * (values, stability, bad labels), error paths, and a finite-difference gradient
 * check for every differentiable op (float64). */
#include "test_util.h"
#include "op_test_util.h"
#include "count_alloc_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* ---- helpers ----------------------------------------------------------- */

/* Deterministic pseudo-random values in [-1, 1) (op_test_util.h, the sequence started at + 1). */
static double *randv1(int64_t n, unsigned seed) { return randv_from(n, seed, 1); }

/* ---- MatMul ------------------------------------------------------------ */

/* C = op(A) op(B) with A = [[1,2,3],[4,5,6]] (2x3) and B = [[7,8],[9,10],[11,12]] (3x2)
 * stored transposed as each flag asks. */
static void test_nn__matmul_transposes(void) {
    static const double A[6] = {1, 2, 3, 4, 5, 6}, At[6] = {1, 4, 2, 5, 3, 6};
    static const double B[6] = {7, 8, 9, 10, 11, 12}, Bt[6] = {7, 9, 11, 8, 10, 12};
    static const double C[4] = {58, 64, 139, 154};
    vg_dtype dts[2] = {VG_FLOAT, VG_DOUBLE};
    for (int d = 0; d < 2; d++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                vg_graph *g = vg_graph_new();
                int64_t ad[2] = {ta ? 3 : 2, ta ? 2 : 3}, bd[2] = {tb ? 2 : 3, tb ? 3 : 2};
                vg_output a = vg_placeholder(g, dts[d], ad, 2, "a"), b = vg_placeholder(g, dts[d], bd, 2, "b");
                vg_output c = vg_matmul(g, a, b, ta, tb, NULL);
                vg_shape cs = vg_output_shape(c);
                CHECK_EQ_INT(cs.ndims, 2);
                CHECK_EQ_INT(cs.dims[0], 2);
                CHECK_EQ_INT(cs.dims[1], 2);
                vg_tensor *av = mk(dts[d], ad, 2, ta ? At : A), *bv = mk(dts[d], bd, 2, tb ? Bt : B), *out = NULL;
                vg_output feeds[2] = {a, b};
                vg_tensor *vals[2] = {av, bv};
                vg_status st;
                CHECK_OK(run_threads(g, 1, feeds, vals, 2, &c, &out, 1, &st), &st);
                check_elems(out, C, 4, 1e-6);
                if (out) CHECK_EQ_INT(vg_tensor_dtype(out), dts[d]);
                bool attr = !ta;
                CHECK(vg_op_attr_bool(c.op, "transpose_a", &attr) && attr == (bool)ta);
                vg_dtype T = VG_DTYPE_INVALID;
                CHECK(vg_op_attr_type_(c.op, "T", &T) && T == dts[d]);
                vg_tensor_free(out);
                vg_tensor_free(av);
                vg_tensor_free(bv);
                vg_graph_free(g);
            }
}

/* Large enough for the threaded split (by rows, by columns, and of the reduction when
 * K is long and C small: partial sums added after), against a naive loop. */
static void test_nn__matmul_threaded(void) {
    const int64_t shapes[][3] = {{200, 150, 70}, {40, 300, 200}, {64, 200, 300}, {32, 48, 4000}, {20, 24, 6007}};
    for (int s = 0; s < 5; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                double *A = randv1(M * K, 1), *B = randv1(K * N, 2);
                vg_graph *g = vg_graph_new();
                int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
                vg_output a = vg_placeholder(g, VG_FLOAT, ad, 2, "a"), b = vg_placeholder(g, VG_FLOAT, bd, 2, "b");
                vg_output c = vg_matmul(g, a, b, ta, tb, NULL);
                vg_tensor *av = mk(VG_FLOAT, ad, 2, A), *bv = mk(VG_FLOAT, bd, 2, B), *out = NULL;
                vg_output feeds[2] = {a, b};
                vg_tensor *vals[2] = {av, bv};
                vg_status st;
                CHECK_OK(run_threads(g, 3, feeds, vals, 2, &c, &out, 1, &st), &st);
                int bad = 0;
                const float *fa = vg_tensor_data(av), *fb = vg_tensor_data(bv);
                for (int64_t i = 0; out && i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double want = 0;
                        for (int64_t k = 0; k < K; k++)
                            want += (double)(ta ? fa[k * M + i] : fa[i * K + k]) * (tb ? fb[j * K + k] : fb[k * N + j]);
                        if (fabs(get(out, i * N + j) - want) > 1e-3 * (1 + fabs(want)) && bad++ < 3)
                            fprintf(stderr, "matmul %d%d [%lld,%lld] = %g, want %g\n", ta, tb, (long long)i,
                                    (long long)j, get(out, i * N + j), want);
                    }
                CHECK(out != NULL);
                CHECK_EQ_INT(bad, 0);
                vg_tensor_free(out);
                vg_tensor_free(av);
                vg_tensor_free(bv);
                vg_graph_free(g);
                free(A);
                free(B);
            }
}

static void test_nn__matmul_empty(void) {
    vg_graph *g = vg_graph_new();
    int64_t ad[2] = {2, 0}, bd[2] = {0, 3}, ed[2] = {0, 4};
    vg_output a = vg_placeholder(g, VG_FLOAT, ad, 2, "a"), b = vg_placeholder(g, VG_FLOAT, bd, 2, "b");
    vg_output e = vg_placeholder(g, VG_FLOAT, ed, 2, "e");
    vg_output fetch[2] = {vg_matmul(g, a, b, false, false, NULL),  /* (2,0)x(0,3): zeros (2,3) */
                          vg_matmul(g, e, e, false, true, NULL)};  /* (0,4)x(4,0): (0,0) */
    vg_tensor *av = mk(VG_FLOAT, ad, 2, NULL), *bv = mk(VG_FLOAT, bd, 2, NULL), *ev = mk(VG_FLOAT, ed, 2, NULL);
    vg_output feeds[3] = {a, b, e};
    vg_tensor *vals[3] = {av, bv, ev}, *out[2] = {NULL, NULL};
    vg_status st;
    CHECK_OK(run_threads(g, 1, feeds, vals, 3, fetch, out, 2, &st), &st);
    static const double z[6] = {0, 0, 0, 0, 0, 0};
    check_elems(out[0], z, 6, 0);
    CHECK(out[1] && vg_tensor_num_elements(out[1]) == 0);
    kt_teardown(g, NULL, (vg_tensor *[]){out[0], out[1], av, bv, ev}, 5, NULL, 0);
}

static void test_nn__matmul_errors(void) {
    vg_status st;
    /* build time: inner dims differ */
    vg_graph *g = vg_graph_new();
    int64_t ad[2] = {2, 3}, bd[2] = {4, 5}, ud[2] = {-1, -1};
    vg_output a = vg_placeholder(g, VG_FLOAT, ad, 2, "a"), b = vg_placeholder(g, VG_FLOAT, bd, 2, "b");
    vg_output c = vg_matmul(g, a, b, false, false, "mm");
    CHECK(c.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "MatMul");
    CHECK_STR_CONTAINS(st.msg, "[2,3]");
    vg_graph_free(g);
    /* dtype mismatch and non-float dtype */
    g = vg_graph_new();
    a = vg_placeholder(g, VG_FLOAT, ad, 2, "a");
    b = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3, 2}, 2, "b");
    CHECK(vg_matmul(g, a, b, false, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "MatMul");
    vg_graph_free(g);
    g = vg_graph_new();
    a = vg_placeholder(g, VG_STRING, ad, 2, "a");
    CHECK(vg_matmul(g, a, a, false, true, NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* rank 3 */
    g = vg_graph_new();
    a = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3, 4}, 3, "a");
    CHECK(vg_matmul(g, a, a, false, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "rank 2");
    vg_graph_free(g);
    /* run time: unknown dims at build time */
    g = vg_graph_new();
    a = vg_placeholder(g, VG_FLOAT, ud, 2, "a");
    b = vg_placeholder(g, VG_FLOAT, ud, 2, "b");
    c = vg_matmul(g, a, b, false, false, "mm");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *av = mk(VG_FLOAT, ad, 2, (double[]){1, 2, 3, 4, 5, 6});
    vg_tensor *bv = mk(VG_FLOAT, bd, 2, (double[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    vg_output feeds[2] = {a, b};
    vg_tensor *vals[2] = {av, bv}, *out = NULL;
    CHECK_STATUS(run_threads(g, 1, feeds, vals, 2, &c, &out, 1, &st), &st, VG_INVALID_ARGUMENT,
        "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]");
    CHECK_STR_CONTAINS(st.msg, "mm");
    CHECK(out == NULL);
    kt_teardown(g, NULL, (vg_tensor *[]){av, bv}, 2, NULL, 0);
}

/* ---- BiasAdd, activations ---------------------------------------------- */

static void test_nn__bias_add(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[3] = {2, 2, 3}, bd[1] = {3};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 3, "x"), b = vg_placeholder(g, VG_FLOAT, bd, 1, "b");
    vg_output fetch[2] = {vg_bias_add(g, x, b, NULL), vg_bias_add_grad(g, x, NULL)};
    vg_shape s = vg_output_shape(fetch[1]);
    CHECK_EQ_INT(s.ndims, 1);
    CHECK_EQ_INT(s.dims[0], 3);
    const char *df;
    size_t len;
    CHECK(vg_op_attr_string(fetch[0].op, "data_format", &df, &len) && len == 4 && !memcmp(df, "NHWC", 4));
    vg_tensor *xv = mk(VG_FLOAT, xd, 3, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    vg_tensor *bv = mk(VG_FLOAT, bd, 1, (double[]){10, 20, 30}), *out[2] = {NULL, NULL};
    vg_output feeds[2] = {x, b};
    vg_tensor *vals[2] = {xv, bv};
    vg_status st;
    CHECK_OK(run_threads(g, 1, feeds, vals, 2, fetch, out, 2, &st), &st);
    check_elems(out[0], (double[]){11, 22, 33, 14, 25, 36, 17, 28, 39, 20, 31, 42}, 12, 1e-6);
    check_elems(out[1], (double[]){22, 26, 30}, 3, 1e-6);
    vg_tensor_free(out[0]);
    vg_tensor_free(out[1]);
    vg_tensor_free(xv);
    vg_tensor_free(bv);
    vg_graph_free(g);

    /* a big one: threaded BiasAddGrad partial sums */
    g = vg_graph_new();
    int64_t bx[2] = {5000, 37};
    x = vg_placeholder(g, VG_FLOAT, bx, 2, "x");
    vg_output gsum = vg_bias_add_grad(g, x, NULL);
    double *xs = randv1(5000 * 37, 3);
    xv = mk(VG_FLOAT, bx, 2, xs);
    vg_tensor *o = NULL;
    CHECK_OK(run_threads(g, 2, &x, &xv, 1, &gsum, &o, 1, &st), &st);
    double want[37] = {0};
    for (int64_t r = 0; r < 5000; r++)
        for (int c = 0; c < 37; c++) want[c] += (float)xs[r * 37 + c];
    check_elems(o, want, 37, 1e-4);
    vg_tensor_free(o);
    vg_tensor_free(xv);
    free(xs);
    vg_graph_free(g);

    /* errors: wrong bias size (build), rank-1 input */
    kt_expect_binary_build_error(vg_bias_add, VG_FLOAT, xd, 3, VG_FLOAT, (int64_t[]){4}, 1, "BiasAdd",
                                 "Must provide as many biases as the last dimension of the input tensor");
    kt_expect_binary_build_error(vg_bias_add, VG_FLOAT, (int64_t[]){3}, 1, VG_FLOAT, bd, 1, "at least 2D", NULL);
    /* run time: unknown bias size */
    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1}, 2, "x");
    b = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "b");
    vg_output y = vg_bias_add(g, x, b, "ba");
    xv = mk(VG_FLOAT, (int64_t[]){1, 2}, 2, (double[]){1, 2});
    bv = mk(VG_FLOAT, (int64_t[]){3}, 1, (double[]){1, 2, 3});
    feeds[0] = x; feeds[1] = b; vals[0] = xv; vals[1] = bv;
    o = NULL;
    CHECK_STATUS(run_threads(g, 1, feeds, vals, 2, &y, &o, 1, &st), &st, VG_INVALID_ARGUMENT,
        "Must provide as many biases");
    kt_teardown(g, NULL, (vg_tensor *[]){xv, bv}, 2, NULL, 0);
}

static void test_nn__activations(void) {
    static const double xs[6] = {-2, -0.5, 0, 0.5, 2, 30};
    vg_dtype dts[2] = {VG_FLOAT, VG_DOUBLE};
    for (int d = 0; d < 2; d++) {
        vg_graph *g = vg_graph_new();
        int64_t xd[2] = {2, 3};
        vg_output x = vg_placeholder(g, dts[d], xd, 2, "x"), dy = vg_placeholder(g, dts[d], xd, 2, "dy");
        vg_output f[7] = {vg_relu(g, x, NULL), vg_sigmoid(g, x, NULL), vg_tanh(g, x, NULL),
                          vg_relu_grad(g, dy, x, NULL), vg_sigmoid_grad(g, x, dy, NULL), vg_tanh_grad(g, x, dy, NULL),
                          vg_sigmoid(g, vg_neg(g, vg_mul(g, x, x, NULL), NULL), NULL)};
        vg_tensor *xv = mk(dts[d], xd, 2, xs), *dv = mk(dts[d], xd, 2, (double[]){1, 2, 3, 4, 5, 6});
        vg_output feeds[2] = {x, dy};
        vg_tensor *vals[2] = {xv, dv}, *out[7] = {0};
        vg_status st;
        CHECK_OK(run_threads(g, 1, feeds, vals, 2, f, out, 7, &st), &st);
        double want[6][6];
        for (int i = 0; i < 6; i++) {
            double v = xs[i], gv = i + 1;
            want[0][i] = v > 0 ? v : 0;
            want[1][i] = 1 / (1 + exp(-v));
            want[2][i] = tanh(v);
            want[3][i] = v > 0 ? gv : 0;
            want[4][i] = gv * v * (1 - v);
            want[5][i] = gv * (1 - v * v);
        }
        for (int k = 0; k < 6; k++) check_elems(out[k], want[k], 6, 1e-6);
        /* sigmoid(-900): no NaN, exactly 0 */
        CHECK(out[6] && get(out[6], 5) == 0.0);
        kt_teardown(g, NULL, out, 7, NULL, 0);
        vg_tensor_free(xv);
        vg_tensor_free(dv);
    }
    /* errors: ReluGrad shapes differ, Relu on int32 */
    kt_expect_binary_build_error(vg_relu_grad, VG_FLOAT, (int64_t[]){2, 3}, 2, VG_FLOAT, (int64_t[]){2, 4}, 2, "ReluGrad",
                                 NULL);
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_INT32, (int64_t[]){2}, 1, "a");
    CHECK(vg_relu(g, a, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Relu");
    vg_graph_free(g);
}

/* ---- Softmax, LogSoftmax, cross-entropy -------------------------------- */

/* Runs the loss and backprop outputs of the cross-entropy op with feeds[0..2) = vals,
 * checking them against loss[2] and back[6]. */
static void check_xent_run(vg_graph *g, vg_op *op, const vg_output *feeds, vg_tensor *const *vals, const double *loss,
                           const double *back) {
    vg_status st;
    vg_output f[2] = {vg_out(op, 0), vg_out(op, 1)};
    vg_tensor *out[2] = {0};
    CHECK_OK(run_threads(g, 1, feeds, vals, 2, f, out, 2, &st), &st);
    check_elems(out[0], loss, 2, 1e-5);
    check_elems(out[1], back, 6, 1e-6);
    vg_tensor_free(out[0]);
    vg_tensor_free(out[1]);
}

static void softmax_ref(const double *x, int C, double *sm, double *lsm) {
    double m = x[0], s = 0;
    for (int c = 1; c < C; c++) m = x[c] > m ? x[c] : m;
    for (int c = 0; c < C; c++) s += exp(x[c] - m);
    for (int c = 0; c < C; c++) {
        sm[c] = exp(x[c] - m) / s;
        lsm[c] = x[c] - m - log(s);
    }
}

static void test_nn__softmax(void) {
    /* rows: ordinary, huge (stability), constant; 3-D input exercises "last dim" */
    static const double xs[12] = {1, 2, 3, 0.5, 1000, 1001, 1002, 999, -3, -3, -3, -3};
    double sm[12], lsm[12];
    for (int r = 0; r < 3; r++) softmax_ref(xs + 4 * r, 4, sm + 4 * r, lsm + 4 * r);
    vg_dtype dts[2] = {VG_FLOAT, VG_DOUBLE};
    for (int d = 0; d < 2; d++) {
        vg_graph *g = vg_graph_new();
        int64_t xd[3] = {3, 1, 4};
        vg_output x = vg_placeholder(g, dts[d], xd, 3, "x");
        vg_output f[2] = {vg_softmax(g, x, NULL), vg_log_softmax(g, x, NULL)};
        vg_tensor *xv = mk(dts[d], xd, 3, xs), *out[2] = {0};
        vg_status st;
        CHECK_OK(run_threads(g, 1, &x, &xv, 1, f, out, 2, &st), &st);
        check_elems(out[0], sm, 12, 1e-6);
        check_elems(out[1], lsm, 12, 1e-5);
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        vg_tensor_free(xv);
        vg_graph_free(g);
    }
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output s = vg_placeholder(g, VG_FLOAT, NULL, 0, "s");
    CHECK(vg_softmax(g, s, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Softmax");
    vg_graph_free(g);
}

static void test_nn__xent(void) {
    static const double logits[6] = {1, 2, 3, 1000, 0, -1000};
    static const double labels[6] = {0, 0.5, 0.5, 1, 0, 0};
    double sm[6], lsm[6], loss[2] = {0, 0}, back[6];
    for (int r = 0; r < 2; r++) softmax_ref(logits + 3 * r, 3, sm + 3 * r, lsm + 3 * r);
    for (int i = 0; i < 6; i++) {
        loss[i / 3] -= labels[i] * lsm[i];
        back[i] = sm[i] - labels[i];
    }
    vg_dtype dts[2] = {VG_FLOAT, VG_DOUBLE};
    for (int d = 0; d < 2; d++) {
        vg_graph *g = vg_graph_new();
        int64_t xd[2] = {2, 3};
        vg_output x = vg_placeholder(g, dts[d], xd, 2, "x"), l = vg_placeholder(g, dts[d], xd, 2, "l");
        vg_op *op = vg_softmax_xent(g, x, l, NULL);
        CHECK(op != NULL);
        vg_shape s0 = vg_output_shape(vg_out(op, 0));
        CHECK(s0.ndims == 1 && s0.dims[0] == 2);
        vg_tensor *xv = mk(dts[d], xd, 2, logits), *lv = mk(dts[d], xd, 2, labels);
        check_xent_run(g, op, (vg_output[]){x, l}, (vg_tensor *[]){xv, lv}, loss, back);
        kt_teardown(g, NULL, (vg_tensor *[]){xv, lv}, 2, NULL, 0);
    }
    /* mismatched sizes */
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "x");
    vg_output l = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 4}, 2, "l");
    CHECK(vg_softmax_xent(g, x, l, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "SoftmaxCrossEntropyWithLogits");
    CHECK_STR_CONTAINS(st.msg, "logits and labels must be same size");
    vg_graph_free(g);
}

static void test_nn__sparse_xent(void) {
    static const double logits[6] = {1, 2, 3, 1000, 0, -1000};
    double sm[6], lsm[6];
    for (int r = 0; r < 2; r++) softmax_ref(logits + 3 * r, 3, sm + 3 * r, lsm + 3 * r);
    const int lab[2] = {2, 1};
    double loss[2] = {-lsm[2], -lsm[4]}, back[6];
    for (int i = 0; i < 6; i++) back[i] = sm[i] - (i % 3 == lab[i / 3] ? 1 : 0);
    vg_dtype ldts[2] = {VG_INT32, VG_INT64};
    for (int d = 0; d < 2; d++) {
        vg_graph *g = vg_graph_new();
        int64_t xd[2] = {2, 3}, ld[1] = {2};
        vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), l = vg_placeholder(g, ldts[d], ld, 1, "l");
        vg_op *op = vg_sparse_softmax_xent(g, x, l, NULL);
        CHECK(op != NULL);
        vg_dtype tl = VG_DTYPE_INVALID;
        CHECK(op && vg_op_attr_type_(op, "Tlabels", &tl) && tl == ldts[d]);
        vg_output f[2] = {vg_out(op, 0), vg_out(op, 1)};
        vg_tensor *xv = mk(VG_FLOAT, xd, 2, logits), *lv = mk(ldts[d], ld, 1, (double[]){2, 1}), *out[2] = {0};
        vg_output feeds[2] = {x, l};
        vg_tensor *vals[2] = {xv, lv};
        vg_status st;
        check_xent_run(g, op, feeds, vals, loss, back);
        vg_tensor_free(lv);
        /* out-of-range label */
        lv = mk(ldts[d], ld, 1, (double[]){1, 12});
        vals[1] = lv;
        out[0] = out[1] = NULL;
        int64_t xd10[2] = {2, 10};
        vg_tensor_free(xv);
        vg_graph_free(g);
        g = vg_graph_new();
        x = vg_placeholder(g, VG_FLOAT, xd10, 2, "x");
        l = vg_placeholder(g, ldts[d], ld, 1, "l");
        op = vg_sparse_softmax_xent(g, x, l, "xent");
        f[0] = vg_out(op, 0);
        double zeros[20] = {0};
        xv = mk(VG_FLOAT, xd10, 2, zeros);
        feeds[0] = x; feeds[1] = l; vals[0] = xv;
        CHECK_STATUS(run_threads(g, 1, feeds, vals, 2, f, out, 1, &st), &st, VG_INVALID_ARGUMENT,
            "Received a label value of 12 which is outside the valid range of [0, 10)");
        CHECK(out[0] == NULL);
        vg_tensor_free(lv);
        lv = mk(ldts[d], ld, 1, (double[]){-1, 0});
        vals[1] = lv;
        CHECK_STATUS(run_threads(g, 1, feeds, vals, 2, f, out, 1, &st), &st, VG_INVALID_ARGUMENT,
            "Received a label value of -1");
        vg_tensor_free(lv);
        vg_tensor_free(xv);
        vg_graph_free(g);
    }
    /* float labels are rejected */
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "x");
    vg_output l = vg_placeholder(g, VG_FLOAT, (int64_t[]){2}, 1, "l");
    CHECK(vg_sparse_softmax_xent(g, x, l, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "SparseSoftmaxCrossEntropyWithLogits");
    vg_graph_free(g);
}

/* ---- gradients --------------------------------------------------------- */

#define GC_EPS 1e-6
#define GC_TOL 1e-5

static void test_nn__grad_matmul(void) {
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            vg_graph *g = vg_graph_new();
            int64_t ad[2] = {ta ? 4 : 3, ta ? 3 : 4}, bd[2] = {tb ? 2 : 4, tb ? 4 : 2};
            vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, ad, 2, "a"), vg_placeholder(g, VG_DOUBLE, bd, 2, "b")};
            vg_output y = vg_matmul(g, xs[0], xs[1], ta, tb, NULL);
            double *av = randv1(12, 5), *bv = randv1(8, 6);
            vg_tensor *vals[2] = {mk(VG_DOUBLE, ad, 2, av), mk(VG_DOUBLE, bd, 2, bv)};
            CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, y, GC_EPS, GC_TOL), 0);
            vg_tensor_free(vals[0]);
            vg_tensor_free(vals[1]);
            free(av);
            free(bv);
            vg_graph_free(g);
        }
    /* float32 with the brief's looser settings */
    vg_graph *g = vg_graph_new();
    int64_t ad[2] = {3, 4}, bd[2] = {4, 2};
    vg_output xs[2] = {vg_placeholder(g, VG_FLOAT, ad, 2, "a"), vg_placeholder(g, VG_FLOAT, bd, 2, "b")};
    double *av = randv1(12, 7), *bv = randv1(8, 8);
    vg_tensor *vals[2] = {mk(VG_FLOAT, ad, 2, av), mk(VG_FLOAT, bd, 2, bv)};
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, vg_matmul(g, xs[0], xs[1], false, false, NULL), 1e-2, 2e-2), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){vals[0], vals[1]}, 2, (void *[]){av, bv}, 2);
}

/* One-input gradient check of y = build(x) for x of the given dims (values from randv
 * scaled by `scale`, shifted away from 0 by `away` when > 0: for Relu's kink). */
typedef vg_output (*build1_fn)(vg_graph *g, vg_output x);

static int gc_unary(build1_fn build, const int64_t *dims, int nd, double scale, double away, unsigned seed) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, dims, nd, "x");
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    double *v = randv1(n, seed);
    for (int64_t i = 0; i < n; i++) {
        v[i] *= scale;
        if (away > 0) v[i] += v[i] >= 0 ? away : -away;
    }
    vg_tensor *xv = mk(VG_DOUBLE, dims, nd, v);
    vg_output y = build(g, x);
    int bad = y.op ? vg_gradcheck(g, &x, &xv, 1, y, GC_EPS, GC_TOL) : 1;
    vg_tensor_free(xv);
    free(v);
    vg_graph_free(g);
    return bad;
}

static vg_output b_relu(vg_graph *g, vg_output x) { return vg_relu(g, x, NULL); }
static vg_output b_sigmoid(vg_graph *g, vg_output x) { return vg_sigmoid(g, x, NULL); }
static vg_output b_tanh(vg_graph *g, vg_output x) { return vg_tanh(g, x, NULL); }
static vg_output b_softmax(vg_graph *g, vg_output x) { return vg_softmax(g, x, NULL); }
static vg_output b_log_softmax(vg_graph *g, vg_output x) { return vg_log_softmax(g, x, NULL); }
static vg_output b_bias_add_grad(vg_graph *g, vg_output x) { return vg_bias_add_grad(g, x, NULL); }
/* second order: d/dx of SigmoidGrad(sigmoid(x), x^2) etc. goes through both inputs */
static vg_output b_sigmoid_grad(vg_graph *g, vg_output x) {
    return vg_sigmoid_grad(g, vg_sigmoid(g, x, NULL), vg_mul(g, x, x, NULL), NULL);
}
static vg_output b_tanh_grad(vg_graph *g, vg_output x) {
    return vg_tanh_grad(g, vg_tanh(g, x, NULL), vg_mul(g, x, x, NULL), NULL);
}
static vg_output b_relu_grad(vg_graph *g, vg_output x) { return vg_relu_grad(g, vg_mul(g, x, x, NULL), x, NULL); }

static void test_nn__grad_activations(void) {
    int64_t d23[2] = {2, 3}, d234[3] = {2, 3, 4};
    CHECK_EQ_INT(gc_unary(b_relu, d23, 2, 1.0, 0.1, 11), 0);
    CHECK_EQ_INT(gc_unary(b_sigmoid, d23, 2, 3.0, 0, 12), 0);
    CHECK_EQ_INT(gc_unary(b_tanh, d23, 2, 2.0, 0, 13), 0);
    CHECK_EQ_INT(gc_unary(b_softmax, d234, 3, 2.0, 0, 14), 0);
    CHECK_EQ_INT(gc_unary(b_log_softmax, d23, 2, 2.0, 0, 15), 0);
    CHECK_EQ_INT(gc_unary(b_bias_add_grad, d234, 3, 1.0, 0, 16), 0);
    CHECK_EQ_INT(gc_unary(b_sigmoid_grad, d23, 2, 1.5, 0, 17), 0);
    CHECK_EQ_INT(gc_unary(b_tanh_grad, d23, 2, 1.5, 0, 18), 0);
    CHECK_EQ_INT(gc_unary(b_relu_grad, d23, 2, 1.0, 0.1, 19), 0);
    /* float32 relu/sigmoid with eps 1e-2 / tol 2e-2 */
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, d23, 2, "x");
    vg_tensor *xv = mk(VG_FLOAT, d23, 2, (double[]){-1, -0.5, 0.3, 0.7, 1.2, 2});
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, vg_sigmoid(g, vg_relu(g, x, NULL), NULL), 1e-2, 2e-2), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

static void test_nn__grad_bias_add(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[3] = {2, 3, 4}, bd[1] = {4};
    vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, xd, 3, "x"), vg_placeholder(g, VG_DOUBLE, bd, 1, "b")};
    double *xv = randv1(24, 21), *bv = randv1(4, 22);
    vg_tensor *vals[2] = {mk(VG_DOUBLE, xd, 3, xv), mk(VG_DOUBLE, bd, 1, bv)};
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, vg_bias_add(g, xs[0], xs[1], NULL), GC_EPS, GC_TOL), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){vals[0], vals[1]}, 2, (void *[]){xv, bv}, 2);
}

static void test_nn__grad_xent(void) {
    /* dense: gradients for logits and labels; loss and backprop both used by L */
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {3, 4};
    vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, xd, 2, "x"), vg_placeholder(g, VG_DOUBLE, xd, 2, "l")};
    double *xv = randv1(12, 31), *lv = randv1(12, 32);
    for (int r = 0; r < 3; r++) { /* labels: a probability distribution per row */
        double s = 0;
        for (int c = 0; c < 4; c++) s += (lv[r * 4 + c] = fabs(lv[r * 4 + c]) + 0.1);
        for (int c = 0; c < 4; c++) lv[r * 4 + c] /= s;
    }
    vg_tensor *vals[2] = {mk(VG_DOUBLE, xd, 2, xv), mk(VG_DOUBLE, xd, 2, lv)};
    vg_op *op = vg_softmax_xent(g, xs[0], xs[1], NULL);
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 2, vg_out(op, 0), GC_EPS, GC_TOL), 0);
    vg_graph_free(g);
    /* through the backprop output too (second-order term) */
    g = vg_graph_new();
    xs[0] = vg_placeholder(g, VG_DOUBLE, xd, 2, "x");
    xs[1] = vg_placeholder(g, VG_DOUBLE, xd, 2, "l");
    op = vg_softmax_xent(g, xs[0], xs[1], NULL);
    vg_output y = vg_add(g, vg_reduce_sum(g, vg_out(op, 1), (int32_t[]){1}, 1, false, NULL), vg_out(op, 0), NULL);
    CHECK_EQ_INT(vg_gradcheck_ex(g, xs, vals, 1, &xs[1], &vals[1], 1, y, GC_EPS, GC_TOL), 0);
    vg_graph_free(g);
    vg_tensor_free(vals[0]);
    vg_tensor_free(vals[1]);
    free(xv);
    free(lv);
    /* sparse: gradient for logits; labels fed as an extra feed */
    g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, xd, 2, "x");
    vg_output l = vg_placeholder(g, VG_INT64, (int64_t[]){3}, 1, "l");
    xv = randv1(12, 33);
    vg_tensor *xt = mk(VG_DOUBLE, xd, 2, xv), *lt = mk(VG_INT64, (int64_t[]){3}, 1, (double[]){3, 0, 2});
    op = vg_sparse_softmax_xent(g, x, l, NULL);
    CHECK_EQ_INT(vg_gradcheck_ex(g, &x, &xt, 1, &l, &lt, 1, vg_out(op, 0), GC_EPS, GC_TOL), 0);
    /* labels get no gradient */
    vg_output loss = vg_out(op, 0), dl = {NULL, 0};
    vg_status st;
    CHECK_OK(vg_gradients(g, &loss, 1, &l, 1, NULL, &dl, &st), &st);
    CHECK(dl.op == NULL);
    kt_teardown(g, NULL, (vg_tensor *[]){xt, lt}, 2, (void *[]){xv}, 1);
}

/* Gradients built while the shapes are unknown (rank -1): axes come from run time. */
static void test_nn__grad_unknown_shapes(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, NULL, -1, "x"), l = vg_placeholder(g, VG_DOUBLE, NULL, -1, "l");
    vg_op *xe = vg_softmax_xent(g, x, l, NULL);
    vg_output y = vg_add(g, vg_add(g, vg_softmax(g, x, NULL), vg_log_softmax(g, x, NULL), NULL),
                         vg_expand_dims(g, vg_out(xe, 0), 1, NULL), NULL);
    vg_tensor *xt = mk(VG_DOUBLE, (int64_t[]){2, 3}, 2, (double[]){0.1, 0.5, -0.3, 1.2, 0.7, -1});
    vg_tensor *lt = mk(VG_DOUBLE, (int64_t[]){2, 3}, 2, (double[]){0.2, 0.3, 0.5, 1, 0, 0});
    CHECK_EQ_INT(vg_gradcheck_ex(g, &x, &xt, 1, &l, &lt, 1, y, GC_EPS, GC_TOL), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xt, lt}, 2, NULL, 0);
}

/* The MLP's forward + backward through the gradient builders, 2 threads, float32:
 * a smoke test that the gradient graph of a Dense-Relu-Dense-xent model runs. */
static void test_nn__mlp_gradients_run(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {8, 20}, w1d[2] = {20, 16}, w2d[2] = {16, 5};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x");
    vg_output w1 = vg_placeholder(g, VG_FLOAT, w1d, 2, "w1"), w2 = vg_placeholder(g, VG_FLOAT, w2d, 2, "w2");
    vg_output b1 = vg_placeholder(g, VG_FLOAT, (int64_t[]){16}, 1, "b1");
    vg_output l = vg_placeholder(g, VG_INT32, (int64_t[]){8}, 1, "l");
    vg_output h = vg_relu(g, vg_bias_add(g, vg_matmul(g, x, w1, false, false, NULL), b1, NULL), NULL);
    vg_op *xe = vg_sparse_softmax_xent(g, vg_matmul(g, h, w2, false, false, NULL), l, NULL);
    vg_output loss = vg_reduce_mean(g, vg_out(xe, 0), NULL, -1, false, NULL);
    vg_output ws[3] = {w1, w2, b1}, dws[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &loss, 1, ws, 3, NULL, dws, &st), &st);
    double *xv = randv1(160, 41), *w1v = randv1(320, 42), *w2v = randv1(80, 43), *b1v = randv1(16, 44);
    vg_tensor *vals[5] = {mk(VG_FLOAT, xd, 2, xv), mk(VG_FLOAT, w1d, 2, w1v), mk(VG_FLOAT, w2d, 2, w2v),
                          mk(VG_FLOAT, (int64_t[]){16}, 1, b1v),
                          mk(VG_INT32, (int64_t[]){8}, 1, (double[]){0, 1, 2, 3, 4, 0, 1, 2})};
    vg_output feeds[5] = {x, w1, w2, b1, l};
    check_grad_shapes(g, feeds, vals, 5, ws, dws, 3);
    for (int i = 0; i < 5; i++) vg_tensor_free(vals[i]);
    kt_teardown(g, NULL, NULL, 0, (void *[]){xv, w1v, w2v, b1v}, 4);
}

/* ---- allocation failures ---------------------------------------------- */

/* Fails allocation N = 0, 1, ... of a run (plan cached by a first good run) until it
 * succeeds: every failure is RESOURCE_EXHAUSTED and leaks nothing (ASan). */
static void test_nn__alloc_failures(void) {
    vg_allocator al = {count_alloc, count_free, NULL};
    vg_allocator_set(&al);
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {2048, 40}, wd[2] = {40, 40};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), w = vg_placeholder(g, VG_FLOAT, wd, 2, "w");
    vg_output b = vg_placeholder(g, VG_FLOAT, (int64_t[]){40}, 1, "b");
    vg_output h = vg_tanh(g, vg_bias_add(g, vg_matmul(g, x, w, false, false, NULL), b, NULL), NULL);
    vg_op *xe = vg_softmax_xent(g, h, vg_softmax(g, x, NULL), NULL);
    vg_output L = vg_reduce_sum(g, vg_out(xe, 0), NULL, -1, false, NULL);
    vg_output in[3] = {x, w, b}, d[3];
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, in, 3, NULL, d, &st), &st);
    double *xv = randv1(2048 * 40, 1), *wv = randv1(1600, 2), *bv = randv1(40, 3);
    vg_tensor *vals[3] = {mk(VG_FLOAT, xd, 2, xv), mk(VG_FLOAT, wd, 2, wv), mk(VG_FLOAT, (int64_t[]){40}, 1, bv)};
    CHECK(fail_each_alloc_threaded(g, in, vals, 3, d, 3) > 5);
    kt_teardown(g, NULL, vals, 3, (void *[]){xv, wv, bv}, 3);
    vg_allocator_set(NULL);
}

int main(void) {
    RUN_TEST(test_nn__matmul_transposes);
    RUN_TEST(test_nn__matmul_threaded);
    RUN_TEST(test_nn__matmul_empty);
    RUN_TEST(test_nn__matmul_errors);
    RUN_TEST(test_nn__bias_add);
    RUN_TEST(test_nn__activations);
    RUN_TEST(test_nn__softmax);
    RUN_TEST(test_nn__xent);
    RUN_TEST(test_nn__sparse_xent);
    RUN_TEST(test_nn__grad_matmul);
    RUN_TEST(test_nn__grad_activations);
    RUN_TEST(test_nn__grad_bias_add);
    RUN_TEST(test_nn__grad_xent);
    RUN_TEST(test_nn__grad_unknown_shapes);
    RUN_TEST(test_nn__mlp_gradients_run);
    RUN_TEST(test_nn__alloc_failures);
    TEST_MAIN_END();
}
