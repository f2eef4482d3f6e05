/* test_bitcast.c - tf.bitcast (Bitcast, src/kernels/array/array_ext_ops.c), translated from
 * TF's bitcast_op_test.py (BitcastTest: testSmaller, testLarger, testSameDtype,
 * testSameSize, testErrors, testEmpty, testUnknownShape): the output bytes are the input
 * bytes, with TF's shapes and errors; no gradient. */
#include "op_test_util.h"
#include "vigil/gradients.h"
#include "vigil/ops_ext.h"
#include "kernels_fixture.h"

/* The output holds the input's bytes with the expected dtype and dims. */
static void check_bits(vg_graph *g, vg_output x, vg_dtype to, const int64_t *dims, int nd) {
    vg_output y = vg_bitcast(g, x, to, NULL);
    CHECK(y.op != NULL);
    if (!y.op) return;
    vg_shape s = vg_output_shape(y);
    CHECK_EQ_INT(s.ndims, nd);
    vg_tensor *xv = run(g, x), *yv = run(g, y);
    if (xv && yv) {
        CHECK_EQ_INT(vg_tensor_dtype(yv), to);
        CHECK_EQ_INT(vg_tensor_ndims(yv), nd);
        for (int i = 0; i < nd && i < vg_tensor_ndims(yv); i++) CHECK_EQ_INT(vg_tensor_dim(yv, i), dims[i]);
        CHECK_EQ_INT(vg_tensor_nbytes(yv), vg_tensor_nbytes(xv));
        CHECK(memcmp(vg_tensor_data(yv), vg_tensor_data(xv), vg_tensor_nbytes(xv)) == 0);
    }
    vg_tensor_free(xv);
    vg_tensor_free(yv);
}

static void test_shapes_and_bytes(void) {
    vg_graph *g = vg_graph_new();
    double v[6] = {1.5, -2.25, 3e10, 0.1, -0.0, 7};
    /* testSmaller: float64 [2,3] -> uint8 [2,3,8] */
    check_bits(g, cst(g, VG_DOUBLE, (int64_t[]){2, 3}, 2, v), VG_UINT8, (int64_t[]){2, 3, 8}, 3);
    /* testLarger: uint8 [3,4] -> int32 [3] (the bytes of 1, 2, 3 little-endian) */
    double b[12] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
    vg_output bx = cst(g, VG_UINT8, (int64_t[]){3, 4}, 2, b);
    check_bits(g, bx, VG_INT32, (int64_t[]){3}, 1);
    expect(run(g, vg_bitcast(g, bx, VG_INT32, NULL)), VG_INT32, (int64_t[]){3}, 1, (double[]){1, 2, 3});
    /* testSameDtype and testSameSize: float32 -> float32, float32 -> int32 */
    vg_output f = cst(g, VG_FLOAT, (int64_t[]){2, 3}, 2, v);
    check_bits(g, f, VG_FLOAT, (int64_t[]){2, 3}, 2);
    check_bits(g, f, VG_INT32, (int64_t[]){2, 3}, 2);
    expect(run(g, vg_bitcast(g, vg_const_f32(g, 1.0f, NULL), VG_INT32, NULL)), VG_INT32, NULL, 0,
           (double[]){1065353216}); /* 0x3f800000 */
    /* half <-> int64 via a larger type: half [2,4] -> int64 [2] */
    check_bits(g, cst(g, VG_HALF, (int64_t[]){2, 4}, 2, (double[]){1, 2, 3, 4, 5, 6, 7, 8}), VG_INT64,
               (int64_t[]){2}, 1);
    /* testEmpty: float32 [0] -> uint8 [0, 4] */
    check_bits(g, cst(g, VG_FLOAT, (int64_t[]){0}, 1, NULL), VG_UINT8, (int64_t[]){0, 4}, 2);
    vg_graph_free(g);
}

static void test_errors(void) {
    /* testErrors: uint8 [2,3] -> float32: the last dimension is not 4 */
    vg_graph *g = vg_graph_new();
    vg_bitcast(g, cst(g, VG_UINT8, (int64_t[]){2, 3}, 2, NULL), VG_FLOAT, NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Cannot bitcast due to shape. 3 does not match 4");
    vg_graph_free(g);
    /* the same at run time, through a placeholder of unknown shape (testUnknownShape) */
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_UINT8, NULL, -1, "p");
    vg_output y = vg_bitcast(g, p, VG_FLOAT, NULL);
    CHECK(vg_output_shape(y).ndims == -1);
    vg_tensor *v = mk(VG_UINT8, (int64_t[]){2, 3}, 2, NULL);
    expect_run_error(g, y, &p, &v, 1, VG_INVALID_ARGUMENT, "Cannot bitcast from uint8 to float: shape [2,3]");
    vg_tensor_free(v);
    v = mk(VG_UINT8, (int64_t[]){2, 4}, 2, NULL);
    vg_tensor *out = run_feeds(g, y, &p, &v, 1, &st);
    CHECK(out && vg_tensor_ndims(out) == 1 && vg_tensor_dim(out, 0) == 2);
    vg_tensor_free(out);
    vg_tensor_free(v);
    /* no gradient, as TF */
    vg_output dx;
    vg_output fy = vg_cast(g, y, VG_FLOAT, NULL);
    CHECK(vg_gradients(g, &fy, 1, &p, 1, NULL, &dx, &st) != VG_OK || dx.op == NULL);
    vg_graph_free(g);
    /* bool and string are not bitcast */
    g = vg_graph_new();
    vg_bitcast(g, vg_const_bool(g, true, NULL), VG_UINT8, NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "Value for attr 'T' of bool is not in the list of allowed values");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_bitcast(g, vg_const_f32(g, 1, NULL), VG_STRING, NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "because one of the type sizes is zero");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_shapes_and_bytes);
    RUN_TEST(test_errors);
    TEST_MAIN_END();
}
