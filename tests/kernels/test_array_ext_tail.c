/* test_array_ext_tail.c - the long-tail array ops of issue 31 (src/kernels/array/array_ext_ops.c):
 * tf.sequence_mask (array_ops_test.py SequenceMaskTest: testExceptions,
 * testOneDimensionalWithMaxlen, testOneDimensionalDtypeWithoutMaxlen,
 * testOneDimensionalWithoutMaxlen, testTwoDimensional), ReverseSequence
 * (reverse_sequence_op_test.py: testFloat/testInt32 via _testBasic,
 * testFloatReverseSequenceGrad, testShapeFunctionEdgeCases), BroadcastTo
 * (broadcast_to_ops_test.py: testBroadcastToBasic, testBroadcastToString,
 * testBroadcastToShapeInnerDim, testBroadcastToScalar, testBroadcastToBadOutputShape,
 * testGradientForScalar, testGradientWithSameRank, testGradientWithIncreasingRank),
 * UnsortedSegmentMax/Min/Prod/Mean/SqrtN (segment_reduction_ops_test.py
 * UnsortedSegmentTest: testValues, testGradients, testBadIndices, testDropNegatives),
 * tf.norm (norm_op_test.py: testBadOrder, testInvalidAxis, the vector and matrix norms
 * against numpy.linalg.norm's values, computed by hand here) and tf.boolean_mask with an
 * N-D mask and an axis (array_ops_test.py BooleanMaskTest: test2DArray, testMaskWithAxis,
 * testMaskIsScalarRaises, testMaskShapeDifferentThanFirstPartOfTensorShapeRaises,
 * testMaskDimensionsSetToNoneRaises). Every new gradient is checked by finite
 * differences. */
#include "gradcheck.h"
#include "op_test_util.h"
#include "vigil/ops_ext.h"
#include "kernels_fixture.h"

static void expect_build_error(vg_graph *g, vg_code code, const char *msg) {
    vg_status st;
    CHECK_CODE(vg_graph_status(g, &st), code);
    CHECK_STR_CONTAINS(st.msg, msg);
}

/* ---- sequence_mask ---- */

static void test_sequence_mask(void) {
    vg_graph *g = vg_graph_new();
    /* testOneDimensionalWithMaxlen */
    int64_t d3[1] = {3};
    vg_output len = cst(g, VG_INT32, d3, 1, (double[]){1, 3, 2});
    double e1[15] = {1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0};
    int64_t d35[2] = {3, 5};
    expect(run(g, vg_sequence_mask(g, len, vg_const_i32(g, 5, NULL), VG_BOOL, NULL)), VG_BOOL, d35, 2, e1);
    /* testOneDimensionalDtypeWithoutMaxlen / testOneDimensionalWithoutMaxlen */
    vg_output len2 = cst(g, VG_INT32, d3, 1, (double[]){0, 1, 4});
    double e2[12] = {0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
    int64_t d34[2] = {3, 4};
    expect(run(g, vg_sequence_mask(g, len2, (vg_output){NULL, 0}, VG_FLOAT, NULL)), VG_FLOAT, d34, 2, e2);
    expect(run(g, vg_sequence_mask(g, len2, (vg_output){NULL, 0}, VG_BOOL, NULL)), VG_BOOL, d34, 2, e2);
    /* testTwoDimensional (float64, without maxlen) */
    int64_t d23[2] = {2, 3};
    vg_output len3 = cst(g, VG_INT32, d23, 2, (double[]){0, 1, 4, 1, 2, 3});
    double e3[24] = {0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0};
    int64_t d234[3] = {2, 3, 4};
    expect(run(g, vg_sequence_mask(g, len3, (vg_output){NULL, 0}, VG_DOUBLE, NULL)), VG_DOUBLE, d234, 3, e3);
    /* int64 lengths with an int32 maxlen (testDtypes): Cast of the lengths */
    vg_output len4 = cst(g, VG_INT64, d3, 1, (double[]){1, 3, 2});
    expect(run(g, vg_sequence_mask(g, len4, vg_const_i32(g, 5, NULL), VG_BOOL, NULL)), VG_BOOL, d35, 2, e1);
    /* int32 lengths, int64 maxlen: an int64 Range, lengths cast to int64; int32 output */
    vg_output m64 = vg_sequence_mask(g, len, vg_const_i64(g, 5, NULL), VG_INT32, NULL);
    expect(run(g, m64), VG_INT32, d35, 2, e1);
    /* lengths fed at run time, maxlen from them */
    vg_output pl = vg_placeholder(g, VG_INT64, (int64_t[]){-1}, 1, "pl");
    vg_tensor *plv = mk(VG_INT64, (int64_t[]){2}, 1, (double[]){2, 0});
    vg_status st;
    expect(run_feeds(g, vg_sequence_mask(g, pl, (vg_output){NULL, 0}, VG_BOOL, NULL), &pl, &plv, 1, &st), VG_BOOL,
           (int64_t[]){2, 2}, 2, (double[]){1, 1, 0, 0});
    vg_tensor_free(plv);
    /* the graph: the mask op is SequenceMask/Less */
    vg_output m = vg_sequence_mask(g, len, vg_const_i32(g, 5, NULL), VG_BOOL, NULL);
    CHECK(m.op && !strcmp(vg_op_type(m.op), "Less"));
    CHECK(m.op && strstr(vg_op_name(m.op), "SequenceMask") == vg_op_name(m.op));
    vg_graph_free(g);
    /* testExceptions: maxlen must be scalar */
    g = vg_graph_new();
    vg_output bad = vg_const_i32_vec(g, (int32_t[]){10, 2}, 2, NULL);
    CHECK(vg_sequence_mask(g, vg_const_i32_vec(g, (int32_t[]){1, 2}, 2, NULL), bad, VG_BOOL, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "maxlen must be scalar for sequence_mask");
    vg_graph_free(g);
}

/* ---- ReverseSequence ---- */

/* _testBasic: orig [3][2][4] = 1..24, x = orig transposed (2,1,0) to [4][2][3]
 * (trailing 1x1 dims dropped), seq_dim 0, batch_dim 2, seq_lengths [3, 0, 4]. */
static void rs_basic(vg_dtype dt, vg_dtype len_dt) {
    double orig[24], truth_orig[24] = {3, 2, 1, 4, 7, 6, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                       20, 19, 18, 17, 24, 23, 22, 21};
    double x[24], truth[24];
    for (int i = 0; i < 24; i++) orig[i] = i + 1;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++) {
                x[a * 6 + b * 3 + c] = orig[c * 8 + b * 4 + a];
                truth[a * 6 + b * 3 + c] = truth_orig[c * 8 + b * 4 + a];
            }
    vg_graph *g = vg_graph_new();
    int64_t d[3] = {4, 2, 3}, d3[1] = {3};
    vg_output in = cst(g, dt, d, 3, x), sl = cst(g, len_dt, d3, 1, (double[]){3, 0, 4});
    vg_output y = vg_reverse_sequence(g, in, sl, 0, 2, NULL);
    CHECK(y.op && !strcmp(vg_op_type(y.op), "ReverseSequence"));
    expect(run(g, y), dt, d, 3, truth);
    vg_graph_free(g);
}

static void test_reverse_sequence(void) {
    rs_basic(VG_FLOAT, VG_INT64); /* testFloat */
    rs_basic(VG_INT32, VG_INT32); /* testInt32 */
    rs_basic(VG_DOUBLE, VG_INT32);
    rs_basic(VG_UINT8, VG_INT64);
    /* batch_dim 0, seq_dim 1 (tf.nn.bidirectional_dynamic_rnn's use) */
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 4}, d2[1] = {2};
    vg_output y = vg_reverse_sequence(g, cst(g, VG_FLOAT, d, 2, NULL), cst(g, VG_INT32, d2, 1, (double[]){2, 4}), 1, 0,
                                      NULL);
    expect(run(g, y), VG_FLOAT, d, 2, (double[]){1, 0, 2, 3, 7, 6, 5, 4});
    /* strings */
    vg_tensor *s = vg_tensor_new(VG_STRING, (int64_t[]){1, 3}, 2, NULL);
    const char *w[3] = {"a", "bb", "ccc"};
    for (int i = 0; i < 3; i++) vg_tensor_set_string(s, i, w[i], strlen(w[i]), NULL);
    vg_output ys = vg_reverse_sequence(g, vg_const(g, s, NULL), cst(g, VG_INT64, (int64_t[]){1}, 1, (double[]){2}), 1,
                                       0, NULL);
    vg_tensor_free(s);
    vg_tensor *r = run(g, ys);
    if (r) {
        size_t n;
        const char *p0 = vg_tensor_string(r, 0, &n);
        CHECK(n == 2 && !memcmp(p0, "bb", 2));
        const char *p1 = vg_tensor_string(r, 1, &n);
        CHECK(n == 1 && !memcmp(p1, "a", 1));
        const char *p2 = vg_tensor_string(r, 2, &n);
        CHECK(n == 3 && !memcmp(p2, "ccc", 3));
    }
    vg_tensor_free(r);
    /* run-time errors (lengths fed) */
    vg_output lp = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "lp");
    vg_output yr = vg_reverse_sequence(g, cst(g, VG_FLOAT, d, 2, NULL), lp, 1, 0, NULL);
    vg_tensor *lv = mk(VG_INT32, d2, 1, (double[]){5, 1});
    expect_run_error(g, yr, &lp, &lv, 1, VG_INVALID_ARGUMENT, "seq_lens(0) > input.dims(1)");
    set(lv, 0, -1);
    expect_run_error(g, yr, &lp, &lv, 1, VG_INVALID_ARGUMENT, "seq_lens(0) < 0");
    vg_tensor_free(lv);
    lv = mk(VG_INT32, (int64_t[]){3}, 1, (double[]){1, 1, 1});
    expect_run_error(g, yr, &lp, &lv, 1, VG_INVALID_ARGUMENT, "Length of seq_lengths != input.dims(0), (3 vs. 2)");
    vg_tensor_free(lv);
    vg_output same = vg_reverse_sequence(g, cst(g, VG_FLOAT, d, 2, NULL), lp, 1, 1, NULL);
    lv = mk(VG_INT32, (int64_t[]){4}, 1, (double[]){1, 1, 1, 1});
    expect_run_error(g, same, &lp, &lv, 1, VG_INVALID_ARGUMENT, "batch_dim == seq_dim == 1");
    vg_tensor_free(lv);
    vg_graph_free(g);
    /* testShapeFunctionEdgeCases */
    g = vg_graph_new();
    vg_output p3 = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1, -1}, 3, "p3");
    vg_output l1 = vg_placeholder(g, VG_INT64, (int64_t[]){-1}, 1, "l1");
    CHECK(vg_reverse_sequence(g, p3, l1, 0, 3, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "batch_dim must be < input rank: 3 vs. 3");
    vg_graph_free(g);
    g = vg_graph_new();
    p3 = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1, -1}, 3, "p3");
    l1 = vg_placeholder(g, VG_INT64, (int64_t[]){-1}, 1, "l1");
    CHECK(vg_reverse_sequence(g, p3, l1, 3, 0, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "seq_dim must be < input rank: 3 vs. 3");
    vg_graph_free(g);
    g = vg_graph_new();
    p3 = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1, -1}, 3, "p3");
    vg_output l2 = vg_placeholder(g, VG_INT64, (int64_t[]){-1, -1}, 2, "l2");
    CHECK(vg_reverse_sequence(g, p3, l2, 2, 0, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "Shape must be rank 1 but is rank 2");
    vg_graph_free(g);
    g = vg_graph_new();
    p3 = vg_placeholder(g, VG_FLOAT, (int64_t[]){32, 2, 3}, 3, "p3");
    l1 = vg_placeholder(g, VG_INT64, (int64_t[]){33}, 1, "l1");
    CHECK(vg_reverse_sequence(g, p3, l1, 2, 0, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "Dimensions must be equal, but are 32 and 33");
    vg_graph_free(g);
    /* the static shape takes the batch size from seq_lengths */
    g = vg_graph_new();
    p3 = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2, 3}, 3, "p3");
    l1 = vg_placeholder(g, VG_INT64, (int64_t[]){7}, 1, "l1");
    vg_shape os = vg_output_shape(vg_reverse_sequence(g, p3, l1, 2, 0, NULL));
    CHECK(os.ndims == 3 && os.dims[0] == 7 && os.dims[1] == 2 && os.dims[2] == 3);
    vg_graph_free(g);
    /* testFloatReverseSequenceGrad */
    g = vg_graph_new();
    double x[24];
    for (int i = 0; i < 24; i++) x[i] = i + 1;
    vg_tensor *tx;
    int64_t dx[3] = {4, 2, 3};
    vg_output px = ph(g, VG_DOUBLE, dx, 3, x, &tx);
    vg_output gy = vg_reverse_sequence(g, px, cst(g, VG_INT64, (int64_t[]){3}, 1, (double[]){3, 0, 4}), 0, 2, NULL);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, gy, 1e-6, 1e-8), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

/* ---- BroadcastTo ---- */

static void test_broadcast_to(void) {
    vg_graph *g = vg_graph_new();
    int64_t d3[1] = {3}, d33[2] = {3, 3};
    /* testBroadcastToBasic */
    vg_output x = cst(g, VG_INT32, d3, 1, (double[]){1, 2, 3});
    vg_output y = vg_broadcast_to_c(g, x, d33, 2, NULL);
    CHECK(y.op && !strcmp(vg_op_type(y.op), "BroadcastTo"));
    vg_shape ys = vg_output_shape(y);
    CHECK(ys.ndims == 2 && ys.dims[0] == 3 && ys.dims[1] == 3);
    expect(run(g, y), VG_INT32, d33, 2, (double[]){1, 2, 3, 1, 2, 3, 1, 2, 3});
    /* testBroadcastToScalar */
    expect(run(g, vg_broadcast_to_c(g, vg_const_i32(g, 1, NULL), d33, 2, NULL)), VG_INT32, d33, 2,
           (double[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
    /* a column: [3,1] to [3,3]; and rank 0 -> [2,3,4] floats (testBroadcastScalarToNonScalar) */
    expect(run(g, vg_broadcast_to_c(g, cst(g, VG_FLOAT, (int64_t[]){3, 1}, 2, (double[]){1, 2, 3}), d33, 2, NULL)),
           VG_FLOAT, d33, 2, (double[]){1, 1, 1, 2, 2, 2, 3, 3, 3});
    /* testBroadcastToShapeInnerDim: [2,1,3] -> [2,5,3] with an int64 shape */
    double xi[6] = {1, 2, 3, 4, 5, 6}, ei[30];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 5; b++)
            for (int c = 0; c < 3; c++) ei[a * 15 + b * 3 + c] = xi[a * 3 + c];
    vg_output shp64 = cst(g, VG_INT64, d3, 1, (double[]){2, 5, 3});
    expect(run(g, vg_broadcast_to(g, cst(g, VG_DOUBLE, (int64_t[]){2, 1, 3}, 3, xi), shp64, NULL)), VG_DOUBLE,
           (int64_t[]){2, 5, 3}, 3, ei);
    /* testBroadcastToString */
    vg_tensor *s = vg_tensor_new(VG_STRING, d3, 1, NULL);
    for (int i = 0; i < 3; i++) vg_tensor_set_string(s, i, (const char[]){(char)('1' + i)}, 1, NULL);
    vg_output sy = vg_broadcast_to_c(g, vg_const(g, s, NULL), d33, 2, NULL);
    vg_tensor_free(s);
    vg_tensor *r = run(g, sy);
    for (int i = 0; r && i < 9; i++) {
        size_t n;
        const char *p = vg_tensor_string(r, i, &n);
        CHECK(n == 1 && p[0] == '1' + i % 3);
    }
    vg_tensor_free(r);
    /* testBroadcastToBadOutputShape: [0, 1] to [2, 1] at run time; [3] to [2] */
    vg_output sp = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "sp");
    vg_output bad = vg_broadcast_to(g, cst(g, VG_INT32, (int64_t[]){2}, 1, (double[]){0, 1}), sp, NULL);
    vg_tensor *sv = mk(VG_INT32, (int64_t[]){2}, 1, (double[]){2, 1});
    expect_run_error(g, bad, &sp, &sv, 1, VG_INVALID_ARGUMENT, "Unable to broadcast tensor of shape [2] to tensor of shape [2,1]");
    vg_tensor_free(sv);
    sv = mk(VG_INT32, (int64_t[]){1}, 1, (double[]){3});
    expect_run_error(g, bad, &sp, &sv, 1, VG_INVALID_ARGUMENT, "Incompatible shapes: [2] vs. [3]");
    vg_tensor_free(sv);
    sv = mk(VG_INT32, (int64_t[]){0}, 1, NULL);
    expect_run_error(g, bad, &sp, &sv, 1, VG_INVALID_ARGUMENT,
                     "Rank of input (1) must be no greater than rank of output shape (0).");
    vg_tensor_free(sv);
    vg_graph_free(g);
    /* build-time shape errors */
    g = vg_graph_new();
    CHECK(vg_broadcast_to_c(g, cst(g, VG_INT32, d3, 1, NULL), (int64_t[]){2}, 1, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "Dimensions must be equal, but are 3 and 2");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_broadcast_to_c(g, cst(g, VG_INT32, d33, 2, NULL), (int64_t[]){3}, 1, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "Shape must be at most rank 1 but is rank 2");
    vg_graph_free(g);
    /* testGradientForScalar, testGradientWithSameRank, testGradientWithIncreasingRank */
    struct { int64_t in[3]; int nin; int64_t out[3]; int nout; } gc[] = {
        {{0}, 0, {2, 4, 3}, 3}, {{2, 1, 3}, 3, {2, 5, 3}, 3}, {{2, 1}, 2, {5, 2, 3}, 3}, {{1, 3}, 2, {4, 3}, 2},
    };
    for (size_t k = 0; k < sizeof gc / sizeof gc[0]; k++) {
        g = vg_graph_new();
        vg_tensor *tx;
        double xv[8] = {0.5, -1.5, 2.25, 3, -0.75, 1.25, 2, 4};
        vg_output px = ph(g, VG_DOUBLE, gc[k].in, gc[k].nin, xv, &tx);
        double od[3] = {(double)gc[k].out[0], (double)gc[k].out[1], (double)gc[k].out[2]};
        vg_output by = k % 2 ? vg_broadcast_to_c(g, px, gc[k].out, gc[k].nout, NULL) /* int32 shape */
                             : vg_broadcast_to(g, px, cst(g, VG_INT64, (int64_t[]){gc[k].nout}, 1, od), NULL);
        CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, by, 1e-6, 1e-8), 0);
        vg_tensor_free(tx);
        vg_graph_free(g);
    }
}

/* ---- unsorted segment reductions ---- */

static void test_segments(void) {
    vg_graph *g = vg_graph_new();
    /* data [6, 2], ids [0, 2, 0, -1, 2, 0] into 4 segments (segment 1, 3 empty; row 3 dropped) */
    int64_t d62[2] = {6, 2}, d6[1] = {6}, d42[2] = {4, 2};
    double x[12] = {1, -2, 3, 4, 5, 0.5, 7, 8, -1, 2, 2, 6};
    vg_output data = cst(g, VG_FLOAT, d62, 2, x);
    vg_output ids = cst(g, VG_INT32, d6, 1, (double[]){0, 2, 0, -1, 2, 0});
    vg_output num = vg_const_i32(g, 4, NULL);
    /* testValues (by hand): max, min, prod, mean, sqrt_n, sum */
    double lo = -3.4028234663852886e38, hi = 3.4028234663852886e38;
    expect(run(g, vg_unsorted_segment_max(g, data, ids, num, NULL)), VG_FLOAT, d42, 2,
           (double[]){5, 6, lo, lo, 3, 4, lo, lo});
    expect(run(g, vg_unsorted_segment_min(g, data, ids, num, NULL)), VG_FLOAT, d42, 2,
           (double[]){1, -2, hi, hi, -1, 2, hi, hi});
    expect(run(g, vg_unsorted_segment_prod(g, data, ids, num, NULL)), VG_FLOAT, d42, 2,
           (double[]){10, -6, 1, 1, -3, 8, 1, 1});
    expect(run(g, vg_unsorted_segment_mean(g, data, ids, num, NULL)), VG_FLOAT, d42, 2,
           (double[]){8.0 / 3, 4.5 / 3, 0, 0, 1, 3, 0, 0});
    expect(run(g, vg_unsorted_segment_sqrt_n(g, data, ids, num, NULL)), VG_FLOAT, d42, 2,
           (double[]){8 / sqrt(3), 4.5 / sqrt(3), 0, 0, 2 / sqrt(2), 6 / sqrt(2), 0, 0});
    /* int32 / int64 data with int64 ids, and 2-D ids */
    vg_output di = cst(g, VG_INT64, (int64_t[]){2, 3}, 2, (double[]){4, -7, 2, 9, 1, 3});
    vg_output ids2 = cst(g, VG_INT64, (int64_t[]){2, 3}, 2, (double[]){1, 1, 0, 0, -1, 1});
    expect(run(g, vg_unsorted_segment_max(g, di, ids2, vg_const_i64(g, 3, NULL), NULL)), VG_INT64, (int64_t[]){3}, 1,
           (double[]){9, 4, (double)INT64_MIN});
    expect(run(g, vg_unsorted_segment_min(g, cst(g, VG_INT32, (int64_t[]){2, 3}, 2, (double[]){4, -7, 2, 9, 1, 3}),
                                          ids2, vg_const_i32(g, 2, NULL), NULL)),
           VG_INT32, (int64_t[]){2}, 1, (double[]){2, -7});
    /* the op types */
    CHECK(!strcmp(vg_op_type(vg_unsorted_segment_prod(g, data, ids, num, NULL).op), "UnsortedSegmentProd"));
    /* testBadIndices: an id >= num_segments, named by its coordinates */
    vg_output big = cst(g, VG_INT32, (int64_t[]){2, 2}, 2, (double[]){1, 2, 7, 0});
    expect_run_error(g, vg_unsorted_segment_max(g, cst(g, VG_FLOAT, (int64_t[]){2, 2}, 2, NULL), big,
                                                vg_const_i32(g, 7, NULL), NULL),
                     NULL, NULL, 0, VG_INVALID_ARGUMENT, "segment_ids[1,0] = 7 is out of range [0, 7)");
    vg_output pid = vg_placeholder(g, VG_INT32, (int64_t[]){-1, -1}, 2, "pid");
    vg_tensor *bigv = mk(VG_INT32, (int64_t[]){2, 2}, 2, (double[]){1, 2, 7, 0});
    expect_run_error(g, vg_unsorted_segment_prod(g, cst(g, VG_FLOAT, (int64_t[]){3, 2}, 2, NULL), pid,
                                                 vg_const_i32(g, 9, NULL), NULL),
                     &pid, &bigv, 1, VG_INVALID_ARGUMENT,
                     "data.shape = [3,2] does not start with segment_ids.shape = [2,2]");
    vg_tensor_free(bigv);
    vg_graph_free(g);
    /* the same mismatch at build time */
    g = vg_graph_new();
    CHECK(vg_unsorted_segment_prod(g, cst(g, VG_FLOAT, (int64_t[]){3, 2}, 2, NULL),
                                   cst(g, VG_INT32, (int64_t[]){2, 2}, 2, NULL), vg_const_i32(g, 9, NULL), NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "Dimensions must be equal, but are 3 and 2");
    vg_graph_free(g);
    /* build-time: a string dtype */
    g = vg_graph_new();
    CHECK(vg_unsorted_segment_min(g, vg_const_string(g, "a", NULL), vg_const_i32(g, 0, NULL), vg_const_i32(g, 1, NULL),
                                  NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "UnsortedSegmentMin: T must be float, double, int32 or int64");
    vg_graph_free(g);
    /* testGradients: max/min (distinct values in each segment), prod (no zero, one zero,
     * two zeros in a segment), mean, sqrt_n */
    const double gx[4][12] = {
        {1, -2, 3, 4, 5, 0.5, 7, 8, -1, 2, 2, 6},
        {1, 4, 3, 4, 5, 0.5, 7, 8, -1, 2, 3, 6},
        {1, -2, 0, 4, 5, 0.5, 7, 8, -1, 2, 2, 1.5},
        {0, -2, 0, 4, 5, 0.5, 7, 8, -1, 2, 2, 0},
    };
    for (int v = 0; v < 4; v++)
        for (int op = 0; op < 5; op++) {
            g = vg_graph_new();
            vg_tensor *tx;
            vg_output px = ph(g, VG_DOUBLE, d62, 2, gx[v], &tx);
            vg_output gi = cst(g, VG_INT32, d6, 1, (double[]){0, 2, 0, -1, 2, 0});
            vg_output n = vg_const_i32(g, 4, NULL), y;
            switch (op) {
            case 0: y = vg_unsorted_segment_max(g, px, gi, n, NULL); break;
            case 1: y = vg_unsorted_segment_min(g, px, gi, n, NULL); break;
            case 2: y = vg_unsorted_segment_prod(g, px, gi, n, NULL); break;
            case 3: y = vg_unsorted_segment_mean(g, px, gi, n, NULL); break;
            default: y = vg_unsorted_segment_sqrt_n(g, px, gi, n, NULL); break;
            }
            /* the non-empty segments 0 and 2 (max / min of an empty one is a constant) */
            vg_output ys = vg_gather(g, y, vg_const_i32_vec(g, (int32_t[]){0, 2}, 2, NULL), 0, NULL);
            CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, ys, 1e-6, 1e-6), 0);
            vg_tensor_free(tx);
            vg_graph_free(g);
        }
    /* a tie in max: data column [4, 4, 1] in one segment, dy 1 -> 0.5, 0.5, 0 */
    g = vg_graph_new();
    vg_tensor *tv;
    vg_output pt = ph(g, VG_FLOAT, (int64_t[]){3}, 1, (double[]){4, 4, 1}, &tv);
    vg_output ym = vg_unsorted_segment_max(g, pt, cst(g, VG_INT32, (int64_t[]){3}, 1, (double[]){0, 0, 0}),
                                           vg_const_i32(g, 1, NULL), NULL);
    vg_output gr;
    vg_status st;
    CHECK_OK(vg_gradients(g, &ym, 1, &pt, 1, NULL, &gr, &st), &st);
    expect(run_feeds(g, gr, &pt, &tv, 1, &st), VG_FLOAT, (int64_t[]){3}, 1, (double[]){0.5, 0.5, 0});
    vg_tensor_free(tv);
    vg_graph_free(g);
}

/* ---- norm ---- */

static void test_norm(void) {
    vg_graph *g = vg_graph_new();
    int64_t d22[2] = {2, 2};
    vg_output x = cst(g, VG_FLOAT, d22, 2, (double[]){1, -2, 3, -4});
    /* numpy.linalg.norm by hand: euclidean of all = sqrt(30) */
    expect(run(g, vg_norm(g, x, VG_NORM_EUCLIDEAN, NULL, 0, false, NULL)), VG_FLOAT, NULL, 0, (double[]){sqrt(30)});
    int64_t d11[2] = {1, 1};
    expect(run(g, vg_norm(g, x, VG_NORM_EUCLIDEAN, NULL, 0, true, NULL)), VG_FLOAT, d11, 2, (double[]){sqrt(30)});
    int32_t ax1 = 1, ax0 = 0, ax01[2] = {0, 1}, ax10[2] = {1, 0};
    int64_t d2[1] = {2};
    expect(run(g, vg_norm(g, x, 2, &ax1, 1, false, NULL)), VG_FLOAT, d2, 1, (double[]){sqrt(5), 5});
    expect(run(g, vg_norm(g, x, 1, &ax0, 1, false, NULL)), VG_FLOAT, d2, 1, (double[]){4, 6});
    expect(run(g, vg_norm(g, x, INFINITY, &ax1, 1, false, NULL)), VG_FLOAT, d2, 1, (double[]){2, 4});
    expect(run(g, vg_norm(g, x, 3, &ax1, 1, false, NULL)), VG_FLOAT, d2, 1, (double[]){cbrt(9), cbrt(91)});
    /* matrix norms: 1 = max column abs sum, inf = max row abs sum, fro */
    expect(run(g, vg_norm(g, x, 1, ax01, 2, false, NULL)), VG_FLOAT, NULL, 0, (double[]){6});
    expect(run(g, vg_norm(g, x, INFINITY, ax01, 2, false, NULL)), VG_FLOAT, NULL, 0, (double[]){7});
    expect(run(g, vg_norm(g, x, 1, ax10, 2, false, NULL)), VG_FLOAT, NULL, 0, (double[]){7});
    expect(run(g, vg_norm(g, x, VG_NORM_EUCLIDEAN, ax01, 2, true, NULL)), VG_FLOAT, d11, 2, (double[]){sqrt(30)});
    /* the composition: norm/Squeeze of norm/Sqrt */
    vg_output n = vg_norm(g, x, VG_NORM_EUCLIDEAN, NULL, 0, false, NULL);
    CHECK(n.op && !strcmp(vg_op_type(n.op), "Squeeze"));
    vg_graph_free(g);
    /* testBadOrder, testInvalidAxis: each refused at build on a [2, 2] float Const */
    static const struct {
        double ord;
        int32_t axes[2];
        int naxes;
        vg_code code;
        const char *msg;
    } bad[] = {
        {-1, {0, 0}, 0, VG_INVALID_ARGUMENT, "'ord' must be a supported vector norm"},
        {3, {0, 1}, 2, VG_INVALID_ARGUMENT, "'ord' must be a supported matrix norm"},
        {1, {1, 1}, 2, VG_INVALID_ARGUMENT, "'axis' must be None, an integer, or a tuple of 2 unique integers"},
        {2, {0, 1}, 2, VG_UNIMPLEMENTED, "matrix 2-norm"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g = vg_graph_new();
        x = cst(g, VG_FLOAT, d22, 2, NULL);
        vg_output n = vg_norm(g, x, bad[i].ord, bad[i].naxes ? bad[i].axes : NULL, bad[i].naxes, false, NULL);
        if (n.op != NULL) fprintf(stderr, "  norm case %zu (%s): built\n", i, bad[i].msg);
        CHECK(n.op == NULL);
        expect_build_error(g, bad[i].code, bad[i].msg);
        vg_graph_free(g);
    }
    /* gradients come from the parts */
    const double ords[4] = {VG_NORM_EUCLIDEAN, 1, INFINITY, 3};
    for (int k = 0; k < 4; k++) {
        g = vg_graph_new();
        vg_tensor *tx;
        vg_output px = ph(g, VG_DOUBLE, (int64_t[]){2, 3}, 2, (double[]){1, -2, 3.5, -4, 0.5, 2.5}, &tx);
        vg_output y = vg_norm(g, px, ords[k], &ax1, 1, false, NULL);
        CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, y, 1e-6, 1e-6), 0);
        vg_tensor_free(tx);
        vg_graph_free(g);
    }
}

/* ---- boolean_mask with an N-D mask ---- */

static void test_boolean_mask_nd(void) {
    vg_graph *g = vg_graph_new();
    /* test2DArray */
    int64_t d23[2] = {2, 3};
    vg_output arr = cst(g, VG_FLOAT, d23, 2, (double[]){1, 2, 3, 4, 5, 6});
    vg_output m = cst(g, VG_BOOL, d23, 2, (double[]){1, 0, 1, 0, 1, 0});
    expect(run(g, vg_boolean_mask_nd(g, arr, m, 0, NULL)), VG_FLOAT, (int64_t[]){3}, 1, (double[]){1, 3, 5});
    /* testMaskWithAxis: tensor [2, 3, 2], mask [3, 2] at axis 1 -> [2, 3] */
    vg_output t = cst(g, VG_INT32, (int64_t[]){2, 3, 2}, 3, NULL);
    vg_output m2 = cst(g, VG_BOOL, (int64_t[]){3, 2}, 2, (double[]){1, 0, 0, 1, 1, 1});
    vg_output y = vg_boolean_mask_nd(g, t, m2, 1, NULL);
    vg_shape ys = vg_output_shape(y);
    CHECK(ys.ndims == 2 && ys.dims[0] == 2);
    expect(run(g, y), VG_INT32, (int64_t[]){2, 4}, 2, (double[]){0, 3, 4, 5, 6, 9, 10, 11});
    /* a 1-D mask over axis 1 */
    vg_output m1 = cst(g, VG_BOOL, (int64_t[]){3}, 1, (double[]){0, 1, 1});
    expect(run(g, vg_boolean_mask_nd(g, arr, m1, 1, NULL)), VG_FLOAT, (int64_t[]){2, 2}, 2, (double[]){2, 3, 5, 6});
    /* testWorksWithDimensionsEqualToNoneDuringGraphBuild */
    vg_output pt = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1}, 2, "pt");
    vg_output pm = vg_placeholder(g, VG_BOOL, (int64_t[]){-1}, 1, "pm");
    vg_output yp = vg_boolean_mask_nd(g, pt, pm, 0, NULL);
    vg_tensor *fv[2] = {mk(VG_FLOAT, d23, 2, (double[]){1, 2, 3, 4, 5, 6}), mk(VG_BOOL, (int64_t[]){2}, 1, (double[]){0, 1})};
    vg_output fo[2] = {pt, pm};
    vg_status st;
    expect(run_feeds(g, yp, fo, fv, 2, &st), VG_FLOAT, (int64_t[]){1, 3}, 2, (double[]){4, 5, 6});
    vg_tensor_free(fv[0]);
    vg_tensor_free(fv[1]);
    vg_graph_free(g);
    /* testMaskIsScalarRaises, testMaskShapeDifferentThanFirstPartOfTensorShapeRaises,
     * testMaskDimensionsSetToNoneRaises */
    g = vg_graph_new();
    CHECK(vg_boolean_mask_nd(g, cst(g, VG_FLOAT, d23, 2, NULL), vg_const_bool(g, true, NULL), 0, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "mask cannot be scalar.");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_boolean_mask_nd(g, cst(g, VG_FLOAT, (int64_t[]){1, 5}, 2, NULL),
                             cst(g, VG_BOOL, (int64_t[]){5}, 1, NULL), 0, NULL).op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "Shapes (1,) and (5,) are incompatible");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_boolean_mask_nd(g, cst(g, VG_FLOAT, d23, 2, NULL), vg_placeholder(g, VG_BOOL, NULL, -1, "u"), 0, NULL)
              .op == NULL);
    expect_build_error(g, VG_INVALID_ARGUMENT, "Number of mask dimensions must be specified");
    vg_graph_free(g);
    /* the gradient flows through GatherV2 into the reshaped tensor */
    g = vg_graph_new();
    vg_tensor *tx;
    vg_output px = ph(g, VG_DOUBLE, (int64_t[]){2, 3, 2}, 3, NULL, &tx);
    vg_output gy = vg_boolean_mask_nd(g, px, cst(g, VG_BOOL, (int64_t[]){3, 2}, 2, (double[]){1, 0, 0, 1, 1, 1}), 1,
                                      NULL);
    CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, gy, 1e-6, 1e-8), 0);
    vg_tensor_free(tx);
    vg_graph_free(g);
}

/* The kernels over the intra-op pool: 4 threads give the values a loop computes here. */
static void test_threads(void) {
    vg_graph *g = vg_graph_new();
    enum { R = 4000, C = 64, NS = 37 };
    double *x = malloc(sizeof(double) * R * C), *ids = malloc(sizeof(double) * R), *mx = malloc(sizeof(double) * NS * C);
    for (int i = 0; i < R * C; i++) x[i] = (double)((i * 7919) % 1000) - 500;
    for (int i = 0; i < R; i++) ids[i] = i % 41 == 0 ? -1 : i % NS;
    for (int i = 0; i < NS * C; i++) mx[i] = -3.4028234663852886e38;
    for (int i = 0; i < R; i++)
        for (int c = 0; ids[i] >= 0 && c < C; c++)
            if (x[i * C + c] > mx[(int)ids[i] * C + c]) mx[(int)ids[i] * C + c] = x[i * C + c];
    vg_output data = cst(g, VG_FLOAT, (int64_t[]){R, C}, 2, x);
    vg_output y = vg_unsorted_segment_max(g, data, cst(g, VG_INT64, (int64_t[]){R}, 1, ids), vg_const_i32(g, NS, NULL),
                                          NULL);
    vg_status st;
    vg_tensor *out = NULL;
    CHECK_OK(run_threads(g, 4, NULL, NULL, 0, &y, &out, 1, &st), &st);
    check_values(out, VG_FLOAT, (int64_t[]){NS, C}, 2, mx, 0);
    vg_tensor_free(out);
    /* ReverseSequence over [R, C] rows (seq 1, batch 0) and BroadcastTo [C] -> [R, C] */
    double *len = malloc(sizeof(double) * R), *rv = malloc(sizeof(double) * R * C), *bv = malloc(sizeof(double) * R * C);
    for (int i = 0; i < R; i++) len[i] = i % (C + 1);
    for (int i = 0; i < R; i++)
        for (int c = 0; c < C; c++) {
            int L = (int)len[i];
            rv[i * C + c] = x[i * C + (c < L ? L - 1 - c : c)];
            bv[i * C + c] = x[c];
        }
    vg_output r = vg_reverse_sequence(g, data, cst(g, VG_INT32, (int64_t[]){R}, 1, len), 1, 0, NULL);
    CHECK_OK(run_threads(g, 4, NULL, NULL, 0, &r, &out, 1, &st), &st);
    check_values(out, VG_FLOAT, (int64_t[]){R, C}, 2, rv, 0);
    vg_tensor_free(out);
    vg_output b = vg_broadcast_to_c(g, cst(g, VG_FLOAT, (int64_t[]){C}, 1, x), (int64_t[]){R, C}, 2, NULL);
    CHECK_OK(run_threads(g, 4, NULL, NULL, 0, &b, &out, 1, &st), &st);
    check_values(out, VG_FLOAT, (int64_t[]){R, C}, 2, bv, 0);
    kt_teardown(g, NULL, (vg_tensor *[]){out}, 1, (void *[]){x, ids, mx, len, rv, bv}, 6);
}

/* GraphDef: the new ops export with TF's attrs and import into a graph that computes
 * the same values. */
static void test_graphdef_round_trip(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    vg_output x = cst(g, VG_FLOAT, d, 2, (double[]){1, 2, 3, 4, 5, 6});
    vg_output rs = vg_reverse_sequence(g, x, cst(g, VG_INT64, (int64_t[]){2}, 1, (double[]){3, 2}), 1, 0, "rs");
    vg_output bt = vg_broadcast_to_c(g, cst(g, VG_FLOAT, (int64_t[]){3}, 1, (double[]){7, 8, 9}), d, 2, "bt");
    vg_output sm = vg_unsorted_segment_max(g, x, cst(g, VG_INT32, (int64_t[]){2}, 1, (double[]){1, 1}),
                                           vg_const_i32(g, 2, NULL), "sm");
    vg_status st;
    char *text = NULL;
    size_t tlen = 0;
    CHECK_OK(vg_graph_to_graphdef_text(g, &text, &tlen, &st), &st);
    static const char *const attrs[] = {"op: \"ReverseSequence\"", "key: \"seq_dim\"", "key: \"batch_dim\"",
                                        "key: \"Tlen\"", "op: \"BroadcastTo\"", "key: \"Tidx\"",
                                        "key: \"Tnumsegments\""};
    for (size_t i = 0; text && i < sizeof attrs / sizeof attrs[0]; i++) CHECK_STR_CONTAINS(text, attrs[i]);
    vg_free(text);
    vg_graph *h = kt_reimported(g, NULL);
    const char *names[3] = {"rs:0", "bt:0", "sm:0"};
    vg_output outs[3] = {rs, bt, sm};
    for (int i = 0; i < 3; i++) {
        vg_tensor *a = run(g, outs[i]);
        vg_output o = vg_graph_output_by_name(h, names[i], &st);
        CHECK(o.op != NULL);
        vg_tensor *b = o.op ? run(h, o) : NULL;
        if (a && b) check_values(b, vg_tensor_dtype(a), vg_tensor_dims(a), vg_tensor_ndims(a), (double[]){
            get(a, 0), get(a, 1), get(a, 2), get(a, 3), get(a, 4), get(a, 5)}, 0);
        vg_tensor_free(a);
        vg_tensor_free(b);
    }
    vg_graph_free(h);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_sequence_mask);
    RUN_TEST(test_reverse_sequence);
    RUN_TEST(test_broadcast_to);
    RUN_TEST(test_segments);
    RUN_TEST(test_norm);
    RUN_TEST(test_boolean_mask_nd);
    RUN_TEST(test_threads);
    RUN_TEST(test_graphdef_round_trip);
    TEST_MAIN_END();
}
