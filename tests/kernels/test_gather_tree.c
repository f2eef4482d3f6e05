/* test_gather_tree.c - the GatherTree op (tf.contrib.seq2seq.gather_tree), translated
 * from TF 1.15's contrib/seq2seq/python/kernel_tests/beam_search_ops_test.py
 * (GatherTreeTest) plus hand-made cases. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* TF's tests write [batch, time, beam]; the op takes [time, batch, beam]. */
static void transpose_bt(const int32_t *in, int32_t *out, int B, int T, int K) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int k = 0; k < K; k++) out[(t * B + b) * K + k] = in[(b * T + t) * K + k];
}

static vg_code run_gather_tree(const int32_t *step_bt, const int32_t *par_bt, const int32_t *lens, int B, int T,
                               int K, int32_t end_token, int32_t *out_tbk, vg_status *st) {
    int32_t step[256], par[256];
    transpose_bt(step_bt, step, B, T, K);
    transpose_bt(par_bt, par, B, T, K);
    vg_graph *g = vg_graph_new();
    int64_t dims[3] = {T, B, K};
    vg_output s = vg_const_array(g, VG_INT32, dims, 3, step, "step_ids");
    vg_output p = vg_const_array(g, VG_INT32, dims, 3, par, "parent_ids");
    vg_output l = vg_const_array(g, VG_INT32, (int64_t[]){B}, 1, lens, "max_sequence_lengths");
    vg_output beams = vg_gather_tree(g, s, p, l, vg_const_i32(g, end_token, "end_token"), NULL);
    CHECK(strcmp(vg_op_type(beams.op), "GatherTree") == 0);
    vg_shape bs = vg_output_shape(beams);
    CHECK_EQ_INT(bs.ndims, 3);
    if (bs.ndims == 3) CHECK(bs.dims[0] == T && bs.dims[1] == B && bs.dims[2] == K);
    vg_session *sess = vg_session_new(g, NULL, st);
    vg_tensor *o = NULL;
    vg_code rc = vg_session_run1(sess, beams, &o, st);
    if (rc == VG_OK) memcpy(out_tbk, vg_tensor_data(o), sizeof(int32_t) * (size_t)(T * B * K));
    vg_tensor_free(o);
    vg_session_free(sess);
    vg_graph_free(g);
    return rc;
}

/* GatherTreeTest.testGatherTreeOne (r1.15: end_token 10 fills past the length). */
static void test_gather_tree_one(void) {
    const int32_t step[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -1, -1};
    const int32_t par[] = {0, 0, 0, 0, 1, 1, 2, 1, 2, -1, -1, -1};
    const int32_t expected_bt[] = {2, 2, 2, 6, 5, 6, 7, 8, 9, 10, 10, 10};
    int32_t expected[12], out[12];
    transpose_bt(expected_bt, expected, 1, 4, 3);
    vg_status st;
    CHECK_OK(run_gather_tree(step, par, (const int32_t[]){3}, 1, 4, 3, 10, out, &st), &st);
    for (int i = 0; i < 12; i++) CHECK_EQ_INT(out[i], expected[i]);
}

/* GatherTreeTest.testBadParentValuesOnCPU */
static void test_gather_tree_bad_parent(void) {
    const int32_t step[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -1, -1};
    const int32_t par[] = {0, 0, 0, 0, -1, 1, 2, 1, 2, -1, -1, -1};
    int32_t out[12];
    vg_status st;
    CHECK_STATUS(run_gather_tree(step, par, (const int32_t[]){3}, 1, 4, 3, 10, out, &st), &st, VG_INVALID_ARGUMENT,
        "parent id -1 at (batch, time, beam) == (0, 0, 1)");
    /* a parent equal to the beam width is refused too (TF only checks > beam_width) */
    const int32_t par3[] = {0, 0, 0, 0, 3, 1, 2, 1, 2, -1, -1, -1};
    CHECK_STATUS(run_gather_tree(step, par3, (const int32_t[]){3}, 1, 4, 3, 10, out, &st), &st, VG_INVALID_ARGUMENT,
        "parent id 3 at (batch, time, beam) == (0, 0, 1)");
}

/* The arrays of the older GatherTreeTest.testGatherTreeBatch (max_time 4, batch 4,
 * beam 5, lengths 0..3), with end_token 9 (no step id is 9, so the beams are the
 * traced-back ids and 9 past each length; TF's r1.15 version of this test draws random
 * ids and checks these properties). */
static void test_gather_tree_batch(void) {
    const int32_t step[] = {3, 4, 0, 4, 0, 4, 2, 0, 3, 1, 1, 1, 3, 2, 2, 3, 1, 2, 3, 4,
                            3, 4, 0, 4, 0, 4, 2, 0, 3, 1, 1, 1, 3, 2, 2, 3, 1, 2, 3, 4,
                            1, 2, 3, 4, 2, 2, 1, 1, 3, 2, 3, 0, 1, 0, 0, 3, 4, 0, 2, 4,
                            0, 2, 2, 3, 1, 3, 2, 2, 2, 3, 3, 4, 3, 0, 3, 1, 2, 2, 2, 4};
    const int32_t par[] = {4, 2, 4, 3, 4, 3, 4, 0, 2, 0, 3, 1, 3, 2, 2, 0, 2, 1, 4, 2,
                           4, 2, 4, 3, 4, 3, 4, 0, 2, 0, 3, 1, 3, 2, 2, 0, 2, 1, 4, 2,
                           3, 0, 0, 4, 0, 1, 2, 4, 2, 2, 4, 4, 0, 3, 0, 2, 4, 4, 3, 0,
                           3, 1, 4, 1, 3, 3, 2, 4, 0, 4, 1, 0, 1, 4, 2, 0, 3, 2, 0, 1};
    const int32_t e = 9;
    const int32_t expected_bt[] = {e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e,
                                   3, 4, 0, 4, 0, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e,
                                   2, 3, 2, 3, 3, 2, 1, 1, 3, 2, e, e, e, e, e, e, e, e, e, e,
                                   2, 3, 2, 1, 1, 2, 3, 2, 3, 2, 3, 4, 3, 0, 3, e, e, e, e, e};
    int32_t expected[80], out[80];
    transpose_bt(expected_bt, expected, 4, 4, 5);
    vg_status st;
    CHECK_OK(run_gather_tree(step, par, (const int32_t[]){0, 1, 2, 3}, 4, 4, 5, e, out, &st), &st);
    for (int i = 0; i < 80; i++) CHECK_EQ_INT(out[i], expected[i]);
}

/* By hand: entries after a beam's first end token become end tokens (a broken
 * trajectory), and a length past max_time is clipped to max_time. */
static void test_gather_tree_end_token_fill(void) {
    /* batch 1, time 3, beam 2; beam 0 reaches end token 0 at t=1, then emits 5 */
    const int32_t step[] = {7, 8, 0, 6, 5, 4};
    const int32_t par[] = {0, 0, 0, 1, 0, 1};
    int32_t out[6];
    vg_status st;
    CHECK_OK(run_gather_tree(step, par, (const int32_t[]){10}, 1, 3, 2, 0, out, &st), &st);
    /* beam 0: t2 5 (parent 0) <- t1 step[1][0] = 0 (parent 0) <- t0 7: 7, 0, then 0 (filled)
     * beam 1: t2 4 (parent 1) <- t1 step[1][1] = 6 (parent 1) <- t0 8: 8, 6, 4 */
    const int32_t want[] = {7, 8, 0, 6, 0, 4};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(out[i], want[i]);
}

static void test_gather_tree_shape_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_output s = vg_const_fill(g, VG_INT32, (int64_t[]){2, 3}, 2, 0, "s");
    vg_output l = vg_const_fill(g, VG_INT32, (int64_t[]){3}, 1, 1, "l");
    vg_output b = vg_gather_tree(g, s, s, l, vg_const_i32(g, 1, "e"), NULL);
    CHECK(b.op == NULL);
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output s3 = vg_const_fill(g, VG_INT32, (int64_t[]){2, 3, 4}, 3, 0, "s");
    b = vg_gather_tree(g, s3, s3, vg_const_fill(g, VG_INT32, (int64_t[]){2}, 1, 1, "l"), vg_const_i32(g, 1, "e"), NULL);
    CHECK(b.op == NULL); /* batch 3 against 2 lengths */
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_gather_tree_one);
    RUN_TEST(test_gather_tree_bad_parent);
    RUN_TEST(test_gather_tree_batch);
    RUN_TEST(test_gather_tree_end_token_fill);
    RUN_TEST(test_gather_tree_shape_errors);
    TEST_MAIN_END();
}
