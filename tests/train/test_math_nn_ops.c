/* test_math_nn_ops.c - vigil/math_nn_ops.h: tf.nn.dropout with a keep_prob tensor and
 * tf.math.confusion_matrix (TF 1.15 nn_ops.py / confusion_matrix.py), checked against
 * TF's own tests (named per case) and values computed by hand. */
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <math.h>
#include <string.h>

static vg_tensor *scalar(float v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_FLOAT, NULL, 0, &st);
    *(float *)vg_tensor_data(t) = v;
    return t;
}

/* nn_test.py DropoutTest.testDropout: x = ones [dim=32, 100]; with keep_prob k the
 * kept values are 1 / k and their count is about k * n. Plus keep_prob 1: identity,
 * and the gradient of sum(y) with respect to x: y / x (the mask times 1 / k). */
static void test_dropout(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 7);
    int64_t dims[2] = {32, 100};
    vg_output x = vg_placeholder(g, VG_FLOAT, dims, 2, "x");
    vg_output keep = vg_placeholder(g, VG_FLOAT, NULL, -1, "keep_prob");
    vg_output y = vg_nn_dropout(g, x, keep, 0, NULL);
    CHECK(y.op != NULL);
    CHECK(strcmp(vg_op_name(y.op), "dropout/mul_1") == 0);
    vg_shape ys = vg_output_shape(y);
    CHECK_EQ_INT(ys.ndims, 2);
    CHECK_EQ_INT(ys.dims[1], 100);
    vg_output dx = {NULL, 0};
    CHECK_OK(vg_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_tensor *xv = vg_tensor_new(VG_FLOAT, dims, 2, &st);
    float *xp = vg_tensor_data(xv);
    for (int i = 0; i < 3200; i++) xp[i] = 1.0f + (float)(i % 7) * 0.25f;
    static const float keeps[3] = {0.1f, 0.5f, 0.9f};
    for (int k = 0; k < 3; k++) {
        vg_tensor *kv = scalar(keeps[k]);
        vg_output feeds[2] = {x, keep};
        vg_tensor *vals[2] = {xv, kv};
        vg_output fetch[2] = {y, dx};
        vg_tensor *out[2] = {NULL, NULL};
        CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, fetch, out, 2, NULL, 0, NULL, &st), &st);
        if (out[0]) {
            const float *yp = vg_tensor_data(out[0]), *gp = vg_tensor_data(out[1]);
            int kept = 0, bad = 0;
            for (int i = 0; i < 3200; i++) {
                if (yp[i] != 0.0f) {
                    kept++;
                    if (fabsf(yp[i] - xp[i] / keeps[k]) > 1e-5f * yp[i]) bad++;
                }
                if (fabsf(gp[i] - yp[i] / xp[i]) > 1e-5f) bad++;
            }
            CHECK_EQ_INT(bad, 0);
            /* binomial(3200, k): within 5 standard deviations */
            double mean = 3200.0 * keeps[k], sd = sqrt(3200.0 * keeps[k] * (1 - keeps[k]));
            fprintf(stderr, "keep_prob %.1f: kept %d of 3200\n", keeps[k], kept);
            CHECK(fabs(kept - mean) < 5 * sd);
        }
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        vg_tensor_free(kv);
    }
    /* keep_prob 1: y == x */
    vg_tensor *one = scalar(1.0f);
    vg_output feeds[2] = {x, keep};
    vg_tensor *vals[2] = {xv, one};
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, &y, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK(out && memcmp(vg_tensor_data(out), xp, 3200 * sizeof(float)) == 0);
    vg_tensor_free(out);
    vg_tensor_free(one);
    vg_tensor_free(xv);
    free_session_graph(s, g);

    /* build errors: an integer x, a vector keep_prob */
    g = vg_graph_new();
    vg_output xi = vg_placeholder(g, VG_INT32, dims, 2, "xi");
    y = vg_nn_dropout(g, xi, vg_const_f32(g, 0.5f, NULL), 0, NULL);
    CHECK(y.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    int64_t two = 2;
    y = vg_nn_dropout(g, vg_placeholder(g, VG_FLOAT, dims, 2, "x"), vg_placeholder(g, VG_FLOAT, &two, 1, "k"), 0, NULL);
    CHECK(y.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* confusion_matrix_test.py ConfusionMatrixTest: testExample (labels [1, 2, 4],
 * predictions [2, 2, 4], num_classes 5 -> the docstring's matrix) and
 * testDifferentWithSameKey-like duplicates (counts add); int64 inputs, float dtype
 * (testOutputIsFloat-like), and testLabelsTooLarge / testNegative at run time. */
static void test_confusion_matrix(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t three = 3;
    int32_t l[3] = {1, 2, 4}, p[3] = {2, 2, 4};
    vg_output cm = vg_confusion_matrix(g, vg_const_array(g, VG_INT32, &three, 1, l, NULL),
                                       vg_const_array(g, VG_INT32, &three, 1, p, NULL), 5, VG_INT32, NULL);
    CHECK(cm.op != NULL);
    vg_tensor *out = run1(g, cm, &st);
    CHECK(out != NULL);
    if (out) {
        static const int32_t want[25] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        CHECK_EQ_INT(vg_tensor_dtype(out), VG_INT32);
        CHECK_EQ_INT(vg_tensor_num_elements(out), 25);
        CHECK(memcmp(vg_tensor_data(out), want, sizeof want) == 0);
    }
    vg_tensor_free(out);
    vg_graph_free(g);

    g = vg_graph_new();
    int64_t six = 6;
    int64_t l64[6] = {0, 1, 1, 2, 2, 2}, p64[6] = {0, 1, 0, 2, 2, 1};
    cm = vg_confusion_matrix(g, vg_const_array(g, VG_INT64, &six, 1, l64, NULL),
                             vg_const_array(g, VG_INT64, &six, 1, p64, NULL), 3, VG_FLOAT, NULL);
    out = run1(g, cm, &st);
    CHECK(out != NULL);
    if (out) {
        static const float want[9] = {1, 0, 0, 1, 1, 0, 0, 1, 2};
        CHECK_EQ_INT(vg_tensor_dtype(out), VG_FLOAT);
        CHECK(memcmp(vg_tensor_data(out), want, sizeof want) == 0);
    }
    vg_tensor_free(out);
    vg_graph_free(g);

    /* labels too large / negative: INVALID_ARGUMENT at run time */
    for (int neg = 0; neg < 2; neg++) {
        g = vg_graph_new();
        int32_t bad[3] = {1, neg ? -1 : 5, 0};
        cm = vg_confusion_matrix(g, vg_const_array(g, VG_INT32, &three, 1, bad, NULL),
                                 vg_const_array(g, VG_INT32, &three, 1, p, NULL), 5, VG_INT32, NULL);
        CHECK(cm.op != NULL);
        out = run1(g, cm, &st);
        EXPECT_REFUSED(out, &st, VG_INVALID_ARGUMENT);
        vg_tensor_free(out);
        vg_graph_free(g);
    }

    /* build errors */
    g = vg_graph_new();
    cm = vg_confusion_matrix(g, vg_const_array(g, VG_INT32, &three, 1, l, NULL),
                             vg_const_array(g, VG_INT32, &three, 1, p, NULL), 0, VG_INT32, NULL);
    CHECK(cm.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    cm = vg_confusion_matrix(g, vg_const_f32(g, 1.0f, NULL), vg_const_f32(g, 1.0f, NULL), 2, VG_INT32, NULL);
    CHECK(cm.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_dropout);
    RUN_TEST(test_confusion_matrix);
    TEST_MAIN_END();
}
