/* test_softmax_rows.c - the float32 softmax / log_softmax / cross-entropy rows
 * (src/kernels/nn/nn_ops.c: 16-lane max and exp-sum with kernels/vmath.h's exp, issue 30):
 * values against double at the PTB language model's width (10,000 classes) and at row
 * lengths that leave a tail (37), the cross-entropy's backprop (softmax - labels) at the
 * same widths, the same bits at 1 and 2 threads, and NaN kept: a row holding a NaN comes
 * out NaN (as the plain loop), the other rows are unaffected. */
#include "test_util.h"
#include "op_test_util.h"
#include "vigil/vigil.h"

static void check_width(int64_t R, int64_t C, bool with_nan) {
    vg_graph *g = vg_graph_new();
    int64_t xd[2] = {R, C}, ld[1] = {R};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), lab = vg_placeholder(g, VG_INT32, ld, 1, "labels");
    vg_op *xe = vg_sparse_softmax_xent(g, x, lab, NULL);
    vg_output fetch[4] = {vg_softmax(g, x, NULL), vg_log_softmax(g, x, NULL), vg_out(xe, 0), vg_out(xe, 1)};
    double *xv = malloc(sizeof(double) * (size_t)(R * C)), lv[8];
    srand(7);
    for (int64_t i = 0; i < R * C; i++) xv[i] = 20.0 * rand() / RAND_MAX - 10.0;
    if (with_nan) xv[1 * C + C / 2] = NAN;
    for (int r = 0; r < R; r++) lv[r] = (double)((r * 7919) % C);
    vg_tensor *vals[2] = {mk(VG_FLOAT, xd, 2, xv), mk(VG_INT32, ld, 1, lv)};
    vg_output feeds[2] = {x, lab};
    vg_tensor *o1[4], *o2[4];
    vg_status st;
    for (int t = 1; t <= 2; t++) {
        vg_session_options so = {0};
        so.intra_op_threads = so.inter_op_threads = t;
        vg_session *s = vg_session_new(g, &so, &st);
        CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, fetch, t == 1 ? o1 : o2, 4, NULL, 0, NULL, &st), &st);
        vg_session_free(s);
    }
    for (int k = 0; k < 4; k++)
        CHECK(!memcmp(vg_tensor_data(o1[k]), vg_tensor_data(o2[k]), vg_tensor_nbytes(o1[k])));
    for (int64_t r = 0; r < R; r++) {
        const double *xr = xv + r * C;
        bool nan_row = with_nan && r == 1;
        double m = xr[0], sum = 0;
        for (int64_t c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < C; c++) sum += exp(xr[c] - m);
        double lse = log(sum) + m;
        int64_t k = (int64_t)lv[r];
        if (nan_row) {
            CHECK(isnan(get(o1[0], r * C)) && isnan(get(o1[1], r * C + 3)) && isnan(get(o1[2], r)) &&
                  isnan(get(o1[3], r * C + C - 1)));
            continue;
        }
        CHECK_NEAR(get(o1[2], r), lse - xr[k], 1e-5);
        for (int64_t c = 0; c < C; c += (C > 100 ? 97 : 1)) {
            double p = exp(xr[c] - lse);
            CHECK_NEAR(get(o1[0], r * C + c), p, 1e-6);
            CHECK_NEAR(get(o1[1], r * C + c), xr[c] - lse, 1e-5);
            CHECK_NEAR(get(o1[3], r * C + c), p - (c == k ? 1.0 : 0.0), 1e-6);
        }
    }
    for (int k = 0; k < 4; k++) vg_tensor_free(o1[k]), vg_tensor_free(o2[k]);
    vg_tensor_free(vals[0]), vg_tensor_free(vals[1]);
    free(xv);
    vg_graph_free(g);
}

static void test_softmax_rows__wide(void) { check_width(4, 10000, false); }
static void test_softmax_rows__tail(void) { check_width(5, 37, false); }
static void test_softmax_rows__nan_row(void) {
    check_width(3, 10000, true);
    check_width(3, 37, true);
}

int main(void) {
    RUN_TEST(test_softmax_rows__wide);
    RUN_TEST(test_softmax_rows__tail);
    RUN_TEST(test_softmax_rows__nan_row);
    TEST_MAIN_END();
}
