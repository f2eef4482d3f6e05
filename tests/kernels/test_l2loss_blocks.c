/* test_l2loss_blocks.c - L2Loss's blockwise float32 sum (src/kernels/nn/nn_loss_ops.c) at
 * the shapes of the PTB language model's tf.clip_by_global_norm (bench/models/ptb_lm.c:
 * the gradients of the embedding [10000, 256], the LSTM kernels [768, 2048] and
 * [1024, 2048], softmax_w [512, 10000], the biases [2048] and [10000]) and at sizes around
 * the 4096-element block (1, 4095, 4096, 4097, 12289): the value against a sum in double
 * (nn_test.py L2LossTest's definition, sum(t ** 2) / 2), the same bits at 1, 2 and 4
 * intra-op threads, and the gradient (t * dy, nn_grad.py _L2LossGrad) against central
 * finite differences, exact for a quadratic up to rounding. */
#include "test_util.h"
#include "vigil/vigil.h"

static vg_tensor *uniform(const int64_t *d, int nd, unsigned seed, double lo, double hi) {
    vg_status st = {0};
    vg_tensor *t = vg_tensor_new(VG_FLOAT, d, nd, &st);
    float *p = vg_tensor_data(t);
    srand(seed);
    for (int64_t i = 0, n = vg_tensor_num_elements(t); i < n; i++) p[i] = (float)(lo + (hi - lo) * rand() / RAND_MAX);
    return t;
}

/* Runs L2Loss(x) (and its gradient w.r.t. x when grad != NULL) at `threads` intra-op threads. */
static float run_l2(const vg_tensor *xv, int threads, vg_tensor **grad) {
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    vg_shape s = vg_tensor_shape(xv);
    vg_output x = vg_placeholder(g, VG_FLOAT, s.dims, s.ndims, "x");
    vg_output l = vg_l2_loss(g, x, "L2Loss");
    vg_output dx = {NULL, 0};
    if (grad) CHECK_OK(vg_gradients(g, &l, 1, &x, 1, NULL, &dx, &st), &st);
    vg_session_options so = {0};
    so.intra_op_threads = threads;
    so.inter_op_threads = 1;
    vg_session *sess = vg_session_new(g, &so, &st);
    CHECK(sess != NULL);
    vg_output fetch[2] = {l, dx};
    vg_tensor *out[2] = {NULL, NULL};
    vg_tensor *feed = (vg_tensor *)xv;
    float v = NAN;
    if (sess) {
        CHECK_OK(vg_session_run(sess, NULL, &x, &feed, 1, fetch, out, grad ? 2 : 1, NULL, 0, NULL, &st), &st);
        if (out[0]) v = *(const float *)vg_tensor_data(out[0]);
        vg_tensor_free(out[0]);
        if (grad) *grad = out[1];
        vg_session_free(sess);
    }
    vg_graph_free(g);
    return v;
}

static double ref_l2(const vg_tensor *t) {
    const float *p = vg_tensor_data(t);
    double s = 0;
    for (int64_t i = 0, n = vg_tensor_num_elements(t); i < n; i++) s += (double)p[i] * p[i];
    return s / 2;
}

static void test_values_and_threads(void) {
    static const int64_t shapes[][2] = {{10000, 256}, {768, 2048}, {1024, 2048}, {512, 10000}, {2048, 1},
                                        {10000, 1},   {1, 1},      {4095, 1},    {4096, 1},    {4097, 1},
                                        {12289, 1}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        /* the PTB model's variables start in uniform(-0.05, 0.05); the gradients are of that order */
        vg_tensor *t = uniform(shapes[k], 2, 7 + (unsigned)k, -0.05, 0.05);
        double want = ref_l2(t);
        float v1 = run_l2(t, 1, NULL), v2 = run_l2(t, 2, NULL), v4 = run_l2(t, 4, NULL);
        CHECK_NEAR(v1, want, 1e-6);
        CHECK(memcmp(&v1, &v2, sizeof v1) == 0);
        CHECK(memcmp(&v1, &v4, sizeof v1) == 0);
        vg_tensor_free(t);
    }
    /* L2LossTest.testL2Loss: [[1, 2, 3], [4, 5, 6]] -> 45.5 */
    float six[6] = {1, 2, 3, 4, 5, 6};
    vg_status st = {0};
    vg_tensor *t = vg_tensor_new(VG_FLOAT, (int64_t[]){2, 3}, 2, &st);
    memcpy(vg_tensor_data(t), six, sizeof six);
    CHECK_NEAR(run_l2(t, 2, NULL), 45.5, 1e-7);
    vg_tensor_free(t);
    /* an empty tensor sums to 0 */
    t = vg_tensor_new(VG_FLOAT, (int64_t[]){0, 3}, 2, &st);
    CHECK_NEAR(run_l2(t, 1, NULL), 0.0, 0.0);
    vg_tensor_free(t);
}

/* d L2Loss / d x_i = x_i: the graph's gradient at the LSTM kernel's shape against central
 * differences (f(x + e) - f(x - e)) / 2e on sampled elements, each difference computed in
 * double from the float sums of the two perturbed tensors (e = 0.5: the quadratic makes the
 * difference exact, the float sums' rounding (~1e-4 of 650) stays far below 2e x_i). */
static void test_gradient_finite_differences(void) {
    int64_t d[2] = {768, 2048};
    vg_tensor *t = uniform(d, 2, 11, -0.05, 0.05);
    vg_tensor *grad = NULL;
    run_l2(t, 2, &grad);
    CHECK(grad != NULL);
    if (!grad) return;
    float *p = vg_tensor_data(t);
    const float *gp = vg_tensor_data(grad);
    const double e = 0.5;
    int64_t n = vg_tensor_num_elements(t);
    for (int s = 0; s < 12; s++) {
        int64_t i = (int64_t)s * 131071 % n;
        float keep = p[i];
        p[i] = keep + (float)e;
        double fp = run_l2(t, 1, NULL);
        p[i] = keep - (float)e;
        double fm = run_l2(t, 1, NULL);
        p[i] = keep;
        double fd = (fp - fm) / (2 * e);
        CHECK_NEAR(gp[i], keep, 0.0);  /* _L2LossGrad: x * dy with dy = 1 */
        CHECK(fabs(fd - keep) <= 2e-4); /* the sums' rounding over 2e */
    }
    vg_tensor_free(grad);
    vg_tensor_free(t);
}

int main(void) {
    RUN_TEST(test_values_and_threads);
    RUN_TEST(test_gradient_finite_differences);
    TEST_MAIN_END();
}
