/* test_matrix_diag_ops.c - MatrixSetDiag / MatrixDiagPart (tf.linalg.set_diag,
 * tf.linalg.diag_part: TF's matrix_set_diag_op_test / matrix_diag_op_test cases for
 * square, wide, tall and batched inputs), their gradients by finite differences, the
 * shape errors, and vg_invert_permutation. */
#include "gradcheck.h"
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static void test_set_diag_square_and_batched(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    /* TF's testSquare: [[0,1,0],[1,0,1],[1,1,1]] with diag [3,4,5] */
    const float m[9] = {0, 1, 0, 1, 0, 1, 1, 1, 1}, d[3] = {3, 4, 5};
    vg_output x = vg_const_array(g, VG_FLOAT, (const int64_t[]){3, 3}, 2, m, "x");
    vg_output dg = vg_const_array(g, VG_FLOAT, (const int64_t[]){3}, 1, d, "d");
    vg_output y = vg_matrix_set_diag(g, x, dg, NULL);
    vg_shape s = vg_output_shape(y);
    CHECK_EQ_INT(s.ndims, 2);
    vg_tensor *t = run1(g, y, &st);
    CHECK(t != NULL);
    const float want[9] = {3, 1, 0, 1, 4, 1, 1, 1, 5};
    for (int i = 0; t && i < 9; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], want[i], 0);
    vg_tensor_free(t);
    /* rectangular, batched: [2, 2, 3] with diag [2, 2]; and diag_part of it */
    float b[12];
    for (int i = 0; i < 12; i++) b[i] = (float)(i + 1);
    const float bd[4] = {-1, -2, -3, -4};
    vg_output xb = vg_const_array(g, VG_FLOAT, (const int64_t[]){2, 2, 3}, 3, b, "xb");
    vg_output yb = vg_matrix_set_diag(g, xb, vg_const_array(g, VG_FLOAT, (const int64_t[]){2, 2}, 2, bd, "bd"), NULL);
    vg_output pb = vg_matrix_diag_part(g, yb, NULL);
    CHECK_EQ_INT(vg_output_shape(pb).ndims, 2);
    CHECK_EQ_INT(vg_output_shape(pb).dims[1], 2);
    t = run1(g, yb, &st);
    const float wantb[12] = {-1, 2, 3, 4, -2, 6, -3, 8, 9, 10, -4, 12};
    for (int i = 0; t && i < 12; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], wantb[i], 0);
    vg_tensor_free(t);
    t = run1(g, pb, &st);
    for (int i = 0; t && i < 4; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], bd[i], 0);
    vg_tensor_free(t);
    /* tall [3, 2]: diag_part takes 2 */
    const float tall[6] = {1, 2, 3, 4, 5, 6};
    t = run1(g, vg_matrix_diag_part(g, vg_const_array(g, VG_FLOAT, (const int64_t[]){3, 2}, 2, tall, "tall"), NULL), &st);
    CHECK(t && vg_tensor_num_elements(t) == 2);
    if (t) CHECK_NEAR(((float *)vg_tensor_data(t))[1], 4, 0);
    vg_tensor_free(t);
    vg_graph_free(g);
}

static void test_set_diag_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_const_fill(g, VG_FLOAT, (const int64_t[]){2, 3, 3}, 3, 0.0, "x");
    vg_matrix_set_diag(g, x, vg_const_fill(g, VG_FLOAT, (const int64_t[]){2, 4}, 2, 0.0, "d"), NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "diagonal dimension 1");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_matrix_diag_part(g, vg_const_fill(g, VG_FLOAT, (const int64_t[]){3}, 1, 0.0, "v"), NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static void test_set_diag_gradients(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){2, 3, 4}, 3, "x");
    vg_output d = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){2, 3}, 2, "d");
    vg_output y = vg_matrix_set_diag(g, vg_mul(g, x, x, NULL), vg_mul(g, d, d, NULL), NULL);
    y = vg_add(g, y, vg_matrix_set_diag(g, y, vg_matrix_diag_part(g, vg_mul(g, y, x, NULL), NULL), NULL), NULL);
    vg_tensor *xv = vg_tensor_new(VG_DOUBLE, (const int64_t[]){2, 3, 4}, 3, &st);
    vg_tensor *dv = vg_tensor_new(VG_DOUBLE, (const int64_t[]){2, 3}, 2, &st);
    for (int i = 0; i < 24; i++) ((double *)vg_tensor_data(xv))[i] = 0.1 * (i % 7) - 0.3;
    for (int i = 0; i < 6; i++) ((double *)vg_tensor_data(dv))[i] = 0.2 * i - 0.5;
    vg_tensor *vals[2] = {xv, dv};
    CHECK_EQ_INT(vg_gradcheck(g, (const vg_output[]){x, d}, vals, 2, y, 1e-6, 1e-6), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xv, dv}, 2, NULL, 0);
}

static void test_invert_permutation(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    const int32_t p[5] = {3, 4, 0, 2, 1};
    vg_tensor *t = run1(g, vg_invert_permutation(g, vg_const_i32_vec(g, p, 5, "p"), NULL), &st);
    const int32_t want[5] = {2, 4, 3, 0, 1};
    CHECK(t != NULL);
    for (int i = 0; t && i < 5; i++) CHECK_EQ_INT(((int32_t *)vg_tensor_data(t))[i], want[i]);
    vg_tensor_free(t);
    const int32_t bad[3] = {0, 0, 1};
    t = run1(g, vg_invert_permutation(g, vg_const_i32_vec(g, bad, 3, "bad"), NULL), &st);
    CHECK(t == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "duplicated");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_set_diag_square_and_batched);
    RUN_TEST(test_set_diag_errors);
    RUN_TEST(test_set_diag_gradients);
    RUN_TEST(test_invert_permutation);
    TEST_MAIN_END();
}
