/* test_nn_sparse_xent_nd.c - tf.nn.sparse_softmax_cross_entropy_with_logits for logits of
 * any rank (vg_sparse_softmax_cross_entropy_with_logits: reshape to [-1, classes], the
 * op, reshape back, as TF's nn_ops.py) with costs computed by hand (log-sum-exp), its
 * gradient against softmax - one_hot computed by hand, the rank-mismatch error; and StridedSlice of a
 * string tensor (x[:n] on words, as tensorflow/nmt's src[:src_max_len]). */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>
#include <string.h>

/* logits [2, 3, 4] (time major, as nmt's decoder output), labels [2, 3] */
static const float X[24] = {0.1f, 0.2f, -0.3f, 1.0f,  2.0f, 0.0f, 0.5f,  -1.0f, 0.3f, 0.3f, 0.3f,  0.3f,
                            -2.f, 1.5f, 0.25f, 0.75f, 0.f,  1.f,  -0.5f, 0.2f,  1.2f, 0.4f, -0.7f, 0.9f};
static const int32_t L[6] = {3, 0, 2, 1, 1, 3};

static double xent_by_hand(int row) {
    double m = -1e30, s = 0;
    for (int c = 0; c < 4; c++) m = fmax(m, X[row * 4 + c]);
    for (int c = 0; c < 4; c++) s += exp(X[row * 4 + c] - m);
    return m + log(s) - X[row * 4 + L[row]];
}

static void test_rank3(bool dynamic) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output logits = dynamic ? vg_placeholder(g, VG_FLOAT, (const int64_t[]){-1, -1, -1}, 3, "logits")
                               : vg_placeholder(g, VG_FLOAT, (const int64_t[]){2, 3, 4}, 3, "logits");
    vg_output labels = vg_placeholder(g, VG_INT32, (const int64_t[]){-1, -1}, 2, "labels");
    vg_output cost = vg_sparse_softmax_cross_entropy_with_logits(g, labels, logits, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strncmp(vg_op_name(cost.op), "SparseSoftmaxCrossEntropyWithLogits/", 36) == 0);
    vg_output loss = vg_reduce_sum(g, cost, NULL, -1, false, NULL);
    vg_output grad;
    CHECK_OK(vg_gradients(g, &loss, 1, &logits, 1, NULL, &grad, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_tensor *xv = vg_tensor_new_copy(VG_FLOAT, (const int64_t[]){2, 3, 4}, 3, X, sizeof X, &st);
    vg_tensor *lv = vg_tensor_new_copy(VG_INT32, (const int64_t[]){2, 3}, 2, L, sizeof L, &st);
    vg_output feeds[2] = {logits, labels};
    vg_tensor *vals[2] = {xv, lv}, *out[2] = {NULL, NULL};
    vg_output fetch[2] = {cost, grad};
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, fetch, out, 2, NULL, 0, NULL, &st), &st);
    if (out[0]) {
        CHECK_EQ_INT(vg_tensor_ndims(out[0]), 2);
        CHECK(vg_tensor_dim(out[0], 0) == 2 && vg_tensor_dim(out[0], 1) == 3);
        const float *c = vg_tensor_data(out[0]);
        for (int i = 0; i < 6; i++) CHECK_NEAR(c[i], xent_by_hand(i), 1e-5);
    }
    if (out[1]) { /* d/dx of the summed costs: softmax - one_hot */
        const float *gr = vg_tensor_data(out[1]);
        for (int i = 0; i < 24; i++) {
            int row = i / 4;
            double m = -1e30, sum = 0;
            for (int c = 0; c < 4; c++) m = fmax(m, X[row * 4 + c]);
            for (int c = 0; c < 4; c++) sum += exp(X[row * 4 + c] - m);
            double want = exp(X[i] - m) / sum - (L[row] == i % 4);
            CHECK_NEAR(gr[i], want, 1e-5);
        }
    }
    kt_teardown(g, s, (vg_tensor *[]){out[0], out[1], xv, lv}, 4, NULL, 0);
}
static void test_rank3_static(void) { test_rank3(false); }
static void test_rank3_dynamic(void) { test_rank3(true); }

/* rank 2 is the op itself; a rank mismatch is TF's ValueError */
static void test_rank2_and_mismatch(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output logits = vg_placeholder(g, VG_FLOAT, (const int64_t[]){-1, 4}, 2, "x");
    vg_output labels = vg_placeholder(g, VG_INT32, (const int64_t[]){-1}, 1, "y");
    vg_output cost = vg_sparse_softmax_cross_entropy_with_logits(g, labels, logits, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(cost.op), "SparseSoftmaxCrossEntropyWithLogits") == 0);
    vg_output x3 = vg_placeholder(g, VG_FLOAT, (const int64_t[]){2, 3, 4}, 3, "x3");
    vg_output bad = vg_sparse_softmax_cross_entropy_with_logits(g, labels, x3, NULL);
    CHECK(bad.op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Rank mismatch: Rank of labels (received 1) should equal rank of logits minus 1 "
                               "(received 3).");
    vg_graph_free(g);
}

/* StridedSlice of strings: words[:3], words[1:4:2], words[::-1] */
static void test_strided_slice_strings(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output w = vg_placeholder(g, VG_STRING, (const int64_t[]){-1}, 1, "words");
    vg_output a = vg_strided_slice_c(g, w, (const int32_t[]){0}, (const int32_t[]){3}, NULL, 1, NULL, NULL);
    vg_output b = vg_strided_slice_c(g, w, (const int32_t[]){1}, (const int32_t[]){4}, (const int32_t[]){2}, 1, NULL,
                                     NULL);
    vg_strided_slice_masks m = {.begin_mask = 1, .end_mask = 1};
    vg_output c = vg_strided_slice_c(g, w, (const int32_t[]){0}, (const int32_t[]){0}, (const int32_t[]){-1}, 1, &m,
                                     NULL);
    vg_output d = vg_strided_slice_c(g, w, (const int32_t[]){0}, (const int32_t[]){50}, NULL, 1, NULL, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    const char *words[5] = {"the", "cat", "", "sat", "down"};
    vg_tensor *wv = vg_tensor_new(VG_STRING, (const int64_t[]){5}, 1, &st);
    for (int i = 0; i < 5; i++) vg_tensor_set_string(wv, i, words[i], strlen(words[i]), &st);
    vg_output f[4] = {a, b, c, d};
    vg_tensor *o[4] = {0};
    CHECK_OK(vg_session_run(s, NULL, &w, &wv, 1, f, o, 4, NULL, 0, NULL, &st), &st);
    const char *want_a[] = {"the", "cat", ""}, *want_b[] = {"cat", "sat"},
               *want_c[] = {"down", "sat", "", "cat", "the"};
    const char **want[4] = {want_a, want_b, want_c, words};
    int nwant[4] = {3, 2, 5, 5};
    for (int k = 0; k < 4; k++) {
        if (!o[k]) continue;
        CHECK(vg_tensor_dtype(o[k]) == VG_STRING);
        CHECK_EQ_INT(vg_tensor_num_elements(o[k]), nwant[k]);
        for (int i = 0; i < nwant[k] && i < vg_tensor_num_elements(o[k]); i++) {
            size_t len;
            const char *sv = vg_tensor_string(o[k], i, &len);
            CHECK(len == strlen(want[k][i]) && memcmp(sv, want[k][i], len) == 0);
        }
        vg_tensor_free(o[k]);
    }
    kt_teardown(g, s, (vg_tensor *[]){wv}, 1, NULL, 0);
}

int main(void) {
    RUN_TEST(test_rank3_static);
    RUN_TEST(test_rank3_dynamic);
    RUN_TEST(test_rank2_and_mismatch);
    RUN_TEST(test_strided_slice_strings);
    TEST_MAIN_END();
}
