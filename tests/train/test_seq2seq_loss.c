/* test_seq2seq_loss.c - tf.contrib.seq2seq.sequence_loss's sum_over_timesteps /
 * sum_over_batch (vg_sequence_loss_ex), translated from TF 1.15's
 * contrib/seq2seq/python/kernel_tests/loss_test.py (LossTest.testSumReduction,
 * testWeightedSumReduction), plus non-unit weights worked by hand (the sums divide by
 * the count of nonzero weights, the averages by their sum) and the flag conflicts. */
#include "test_util.h"
#include "vigil/vigil.h"

enum { B = 2, T = 3, C = 5 };
static const double LN5 = 1.6094379124341003; /* loss_test's expected_loss 1.60944 */

/* logits[:, t, :] = t + 0.5 everywhere, targets[:, t] = t: every step's loss is ln 5 */
static vg_tensor *run_loss(const float *w, bool avg_t, bool avg_b, bool sum_t, bool sum_b, vg_code *code) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    float lg[B * T * C];
    int32_t tg[B * T];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            tg[b * T + t] = t;
            for (int c = 0; c < C; c++) lg[(b * T + t) * C + c] = (float)t + 0.5f;
        }
    vg_output logits = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, T, C}, 3, lg, "logits");
    vg_output targets = vg_const_array(g, VG_INT32, (const int64_t[]){B, T}, 2, tg, "targets");
    vg_output weights = vg_const_array(g, VG_FLOAT, (const int64_t[]){B, T}, 2, w, "weights");
    vg_sequence_loss_options o = {.no_average_across_timesteps = !avg_t, .no_average_across_batch = !avg_b,
                                  .sum_over_timesteps = sum_t, .sum_over_batch = sum_b};
    vg_output l = vg_sequence_loss_ex(g, logits, targets, weights, &o);
    *code = vg_graph_status(g, NULL);
    vg_tensor *out = NULL;
    if (*code == VG_OK) {
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run1(s, l, &out, &st), &st);
        vg_session_free(s);
    }
    vg_graph_free(g);
    return out;
}

static void check_all(vg_tensor *t, int ndims, int64_t d0, int64_t d1, const double *want) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_ndims(t), ndims);
    if (ndims >= 1) CHECK_EQ_INT(vg_tensor_dim(t, 0), d0);
    if (ndims >= 2) CHECK_EQ_INT(vg_tensor_dim(t, 1), d1);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) CHECK_NEAR(((const float *)vg_tensor_data(t))[i], want[i], 1e-5);
    vg_tensor_free(t);
}

/* LossTest.testSumReduction */
static void test_sum_reduction(void) {
    const float ones[B * T] = {1, 1, 1, 1, 1, 1};
    const double e6[6] = {LN5, LN5, LN5, LN5, LN5, LN5};
    vg_code c;
    check_all(run_loss(ones, false, false, true, true, &c), 0, 0, 0, e6);
    check_all(run_loss(ones, false, false, false, true, &c), 1, T, 0, e6);
    check_all(run_loss(ones, false, false, true, false, &c), 1, B, 0, e6);
    check_all(run_loss(ones, false, false, false, false, &c), 2, B, T, e6);
}

/* LossTest.testWeightedSumReduction: the last step has zero weight */
static void test_weighted_sum_reduction(void) {
    const float w[B * T] = {1, 1, 0, 1, 1, 0};
    vg_code c;
    check_all(run_loss(w, false, false, true, true, &c), 0, 0, 0, (const double[]){LN5});
    check_all(run_loss(w, false, false, false, true, &c), 1, T, 0, (const double[]){LN5, LN5, 0});
    check_all(run_loss(w, false, false, true, false, &c), 1, B, 0, (const double[]){LN5, LN5});
}

/* weights {0.5, 2, 0} for both rows: weighted losses 0.5 ln5, 2 ln5, 0 per row */
static void test_sum_counts_nonzero_weights(void) {
    const float w[B * T] = {0.5f, 2, 0, 0.5f, 2, 0};
    vg_code c;
    /* sums / count_nonzero: (2 * 2.5 ln5) / 4 */
    check_all(run_loss(w, false, false, true, true, &c), 0, 0, 0, (const double[]){1.25 * LN5});
    /* averages / sum of weights: (2 * 2.5 ln5) / 5 */
    check_all(run_loss(w, true, true, false, false, &c), 0, 0, 0, (const double[]){LN5});
    /* over time per row: 2.5 ln5 / 2 */
    check_all(run_loss(w, false, false, true, false, &c), 1, B, 0, (const double[]){1.25 * LN5, 1.25 * LN5});
    /* over the batch per step: (0.5 ln5 * 2) / 2, (2 ln5 * 2) / 2, 0 / 0 = 0 */
    check_all(run_loss(w, false, false, false, true, &c), 1, T, 0, (const double[]){0.5 * LN5, 2 * LN5, 0});
    /* average over time with sum_over_batch: TF averages over time and ignores the sum */
    check_all(run_loss(w, true, false, false, true, &c), 1, B, 0, (const double[]){LN5, LN5});
}

static void test_conflicting_flags(void) {
    const float ones[B * T] = {1, 1, 1, 1, 1, 1};
    vg_code c;
    CHECK(run_loss(ones, true, false, true, false, &c) == NULL);
    CHECK_EQ_INT(c, VG_INVALID_ARGUMENT);
    CHECK(run_loss(ones, false, true, false, true, &c) == NULL);
    CHECK_EQ_INT(c, VG_INVALID_ARGUMENT);
}

int main(void) {
    RUN_TEST(test_sum_reduction);
    RUN_TEST(test_weighted_sum_reduction);
    RUN_TEST(test_sum_counts_nonzero_weights);
    RUN_TEST(test_conflicting_flags);
    TEST_MAIN_END();
}
