/* test_cf_tf_while.c - TF 1.15's tensorflow/python/kernel_tests/control_flow_ops_py_test.py
 * translated to C, part 2: tf.while_loop (loop variables, nested loops,
 * parallel_iterations, maximum_iterations, shape invariants, loops with variables and
 * assigns, queues, stacks, TensorArrays in loops), the Enter/Exit/NextIteration
 * primitives, and the while half of ControlFlowContextCheckTest. Each test cites the TF
 * test method it translates; the values are TF's assertions (or computed by hand where
 * TF's test only runs the graph). The manual loops (testLoop_*) rewire a Merge input as
 * TF's Operation._update_input does, through vg__cf_set_input (a white-box test).
 *
 * Not translated (and why):
 *  - testWhile_Device, testBufferForwarding: GPU placement / allocation statistics of
 *    run metadata (testWhile_Gpu_1/_2 run on the CPU here).
 *  - testWhileAutoControlDeps, testFunctionInWhile, testTfFunctionInV1WhileLoop,
 *    testWhileFuncBasic (Defun), the XLA tests (testXLAGradInLoop,
 *    testSingleNestedMaximumIterationsWhileLoopGradientInXLAContext,
 *    testInvalidMaximumIterationsWhileLoopGradientInXLAContext,
 *    testInvalidMaximumIterationsFromSiblingContextWhileLoopInXLAContext,
 *    testNestedWhileLoopWithMaxItersFromOuterContextInXLAContext): control flow v2,
 *    tf.function / Defun, or XLA contexts, none of which vigil has.
 *  - testWhileBadBodyReturn, testWhile_NestedInput, testWhile_NestedBadArityFails,
 *    testWhileWithNonTensorInput_Scalar, testWhileShapeInvariantTensorSpec,
 *    testWhileShapeInvariantWrongTypeSpecType, testWhileShapeInvariantBadType: Python
 *    structures, conversions and TensorSpec (a C body fills exactly n outputs).
 *  - testWhileShapeInferenceSparseTensor, testWhileBadShapeSparseTensor,
 *    testWhileShapeInferenceIndexedSlices, testWhileBadShapeIndexedSlices,
 *    testWhileShapeInferenceRaggedTensor, testWhileShapeInferenceRaggedTensorRaggedRank2:
 *    composite tensors (Python-level).
 *  - ControlFlowContextCheckTest.testInvalidContext: TF raises when a root op is
 *    created with a loop tensor as input (a check at op creation, which vigil's graph
 *    layer does not have); vigil's executor rejects such a run instead. The checks for
 *    ops built inside a cond or loop are translated (testInvalidContextInCond,
 *    testInvalidContextInWhile, testInvalidNestedContexts).
 *  - WhileOpBenchmark: benchmarks; EagerTest: eager mode.
 * Translated with a substitute: testWhileUpdateVariable_1, _2 and _3 use ResourceScatterUpdate
 * on a resource variable (vigil has no ScatterUpdate on a ref variable);
 * testNestedWhile_2 passes x through Identity where TF has Print (no Print op in vigil).
 */
#include "cf_tf_util.h"
#include "kernels/control/control_flow_internal.h"
#include "kernels_fixture.h"


/* ---- Enter / Exit / NextIteration ------------------------------------------------- */

/* testEnterMulExit */
static void test_enter_mul_exit(void) {
    vg_graph *g = vg_graph_new();
    vg_output data = vg_const_i32_vec(g, (int32_t[]){1, 2, 3, 4, 5, 6}, 6, "data");
    vg_output enter_data = vg_enter(g, data, "foo_1", false, 10, NULL);
    vg_output enter_five = vg_enter(g, i32c(g, 5), "foo_1", false, 10, NULL);
    vg_output mul = vg_mul(g, enter_data, enter_five, NULL);
    vg_output ex = vg_exit(g, mul, NULL);
    EXPECT_VEC_ONCE(g, false, ex, 6, ((double[]){5, 10, 15, 20, 25, 30}), NOFEED);
}

/* testEnterShapePropagation: a constant Enter keeps its input's shape, another does not */
static void test_enter_shape_propagation(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_fill(g, VG_FLOAT, (int64_t[]){2}, 1, 0.0, NULL), 0);
    vg_output c = vg_enter(g, v.read, "frame1", true, 10, NULL);
    vg_shape sc = vg_output_shape(c);
    CHECK(sc.ndims == 1 && sc.dims[0] == 2);
    vg_output nc = vg_enter(g, v.read, "frame2", false, 10, NULL);
    CHECK_EQ_INT(vg_output_shape(nc).ndims, -1);
    vg_graph_free(g);
}

/* testLoop_false: a loop whose predicate (a non-constant Enter) only reaches iteration 0 */
static void test_loop_false(void) {
    vg_graph *g = vg_graph_new();
    vg_output enter_false = vg_enter(g, vg_const_bool(g, false, NULL), "foo_1", false, 10, NULL);
    vg_output enter_n = vg_enter(g, i32c(g, 10), "foo_1", false, 10, NULL);
    vg_op *merge_n = vg_merge(g, (vg_output[]){enter_n, enter_n}, 2, "merge_n");
    vg_op *switch_n = vg_switch(g, vg_out(merge_n, 0), enter_false, NULL);
    vg_output exit_n = vg_exit(g, vg_out(switch_n, 0), NULL);
    vg_output next_n = vg_next_iteration(g, vg_out(switch_n, 0), NULL);
    vg__cf_set_input(merge_n, 1, next_n); /* merge_n.op._update_input(1, next_n) */
    EXPECT_VAL_ONCE(g, false, exit_n, 10, NOFEED);
}

/* testLoop_1, testLoop_2 (their device scopes aside, the same graph) */
static void test_loop_1_2(void) {
    vg_graph *g = vg_graph_new();
    vg_output enter_i = vg_enter(g, i32c(g, 0), "foo", false, 10, NULL);
    vg_output enter_one = vg_enter(g, i32c(g, 1), "foo", true, 10, NULL);
    vg_output enter_n = vg_enter(g, i32c(g, 10), "foo", true, 10, NULL);
    vg_op *merge_i = vg_merge(g, (vg_output[]){enter_i, enter_i}, 2, NULL);
    vg_output less = vg_less(g, vg_out(merge_i, 0), enter_n, NULL);
    vg_output cond = vg_loop_cond(g, less, NULL);
    vg_op *switch_i = vg_switch(g, vg_out(merge_i, 0), cond, NULL);
    vg_output add_i = vg_add(g, vg_out(switch_i, 1), enter_one, NULL);
    vg_output next_i = vg_next_iteration(g, add_i, NULL);
    vg__cf_set_input(merge_i, 1, next_i);
    vg_output exit_i = vg_exit(g, vg_out(switch_i, 0), NULL);
    EXPECT_VAL_ONCE(g, false, exit_i, 10, NOFEED);
}

/* testDifferentFrame */
static void test_different_frame(void) {
    vg_graph *g = vg_graph_new();
    vg_output data = vg_placeholder(g, VG_FLOAT, NULL, 0, "data");
    vg_output e1 = vg_enter(g, data, "foo_1", false, 10, NULL);
    vg_output e2 = vg_enter(g, data, "foo_2", false, 10, NULL);
    vg_output res = vg_add(g, e1, e2, NULL);
    vg_session *s = cf_session(g);
    EXPECT_CODE(s, res, VG_INVALID_ARGUMENT, "has inputs from different frames", FEEDS(fd(data, 1.0)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- basic loops ------------------------------------------------------------------- */
CF_COND(lt_k, vg_less(g, v[0], i32c(g, ((env *)u)->k), NULL))
CF_BODY1(add_b, vg_add(g, v[0], ((env *)u)->b, NULL))
CF_BODY1(square_c_plus_i, vg_add(g, vg_square(g, ((env *)u)->c, NULL), v[0], NULL))

/* testFeedable: tensors outside the loop may be fed, those inside may not */
static void test_feedable(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.c = vg_const_i32(g, 2, "c");
    e.k = 1000;
    vg_output i0 = vg_const_i32(g, 0, "i0"), r;
    CHECK_OK(vg_while_loop(g, lt_k, square_c_plus_i, &e, &i0, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r, 1000, FEEDS(fd(i0, 0)));
    EXPECT_VAL(s, r, 1003, FEEDS(fd(i0, 3)));  /* 3 + 4k */
    EXPECT_VAL(s, r, 1008, FEEDS(fd(e.c, 3))); /* 9k */
    vg_output inside = vg_graph_output_by_name(g, "while/Identity:0", &st);
    CHECK(inside.op != NULL);
    if (inside.op) EXPECT_CODE(s, r, VG_INVALID_ARGUMENT, NULL, FEEDS(fd(inside, 3)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhile_1 */
static void test_while_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.k = 10000;
    e.b = i32c(g, 1);
    vg_output n = i32c(g, 0), r;
    CHECK_OK(vg_while_loop(g, lt_k, add_b, &e, &n, 1, NULL, 20, vg_out(NULL, 0), NULL, &r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 10000, NOFEED);
}

/* isum(s, maximum_iterations) of TF's test file */
CF_COND(isum_c, vg_less(g, v[0], i32c(g, 10), NULL))
CF_COUNTED_BODY(isum_b, vg_add(g, v[0], v[1], NULL))
static vg_output isum(vg_graph *g, vg_output s, vg_output maximum_iterations) {
    vg_status st;
    vg_output v[2] = {vg_const_i32(g, 0, "i"), s}, r[2];
    CHECK_OK(vg_while_loop(g, isum_c, isum_b, NULL, v, 2, NULL, 10, maximum_iterations, NULL, r, &st), &st);
    return r[1];
}

/* testWhile_2, testWhileWithMaximumIterations */
static void test_while_2_max_iterations(void) {
    vg_graph *g = vg_graph_new();
    vg_output r = isum(g, i32c(g, 0), vg_out(NULL, 0));
    vg_output rm = isum(g, vg_const_i32_vec(g, (int32_t[]){1, 2, 3, 4, 5}, 5, NULL), i32c(g, 3));
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r, 45, NOFEED);
    EXPECT_VEC(s, rm, 5, ((double[]){1 + 3, 2 + 3, 3 + 3, 4 + 3, 5 + 3}), NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileWithMaximumIterationsAndSingleArgument */
static void test_while_max_iterations_single_argument(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.k = 3;
    e.b = i32c(g, 1);
    vg_output x = i32c(g, 0), r;
    CHECK_OK(vg_while_loop(g, lt_k, add_b, &e, &x, 1, NULL, 10, i32c(g, 1), NULL, &r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 1, NOFEED);
}

/* testWhile_3: more than 10 parallel iterations */
CF_COND(w3_c, vg_less(g, v[0], ((env *)u)->d, NULL))
static vg_code w3_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_output m = vg_add(g, v[1], i32c(g, 1), NULL), c = vg_add(g, v[2], i32c(g, 1), NULL);
    vg_output oo = vg_add(g, vg_add(g, v[3], m, NULL), c, NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = m;
    o[2] = c;
    o[3] = oo;
    return VG_OK;
}
static void test_while_3(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.d = i32c(g, 100);
    vg_output v[4] = {i32c(g, 0), i32c(g, 0), i32c(g, 0), i32c(g, 0)}, r[4];
    CHECK_OK(vg_while_loop(g, w3_c, w3_b, &e, v, 4, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r[3], 10100, NOFEED);
}

/* testWhile_4 */
static vg_code w4_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    env *e = u;
    vg_output m = vg_gather(g, e->a, v[0], 0, NULL), c = vg_gather(g, e->a, v[0], 0, NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = m;
    o[2] = c;
    o[3] = vg_add(g, vg_add(g, v[3], m, NULL), c, NULL);
    return VG_OK;
}
static void test_while_4(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_i32_vec(g, (int32_t[]){1, 2, 3, 4, 5, 6}, 6, NULL);
    e.d = vg_size(g, e.a, NULL);
    vg_output v[4] = {i32c(g, 0), i32c(g, 0), i32c(g, 0), i32c(g, 0)}, r[4];
    CHECK_OK(vg_while_loop(g, w3_c, w4_b, &e, v, 4, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r[3], 42, NOFEED);
}

/* testWhile_5: a growing loop variable under unknown shape invariants */
static vg_code w5_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    env *e = u;
    vg_output b = vg_expand_dims(g, v[0], 0, NULL);
    vg_output c = vg_strided_slice(g, e->a, b, vg_add(g, i32c(g, 1), b, NULL),
                                   vg_const_i32_vec(g, (int32_t[]){1}, 1, NULL), NULL, NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = c;
    o[2] = vg_concat(g, (vg_output[]){v[2], c}, 2, i32c(g, 0), NULL);
    return VG_OK;
}
CF_COND(w5_c, vg_less(g, v[0], ((env *)u)->d, NULL))
static void test_while_5(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_i32_vec(g, (int32_t[]){1, 2, 3, 4, 5, 6}, 6, NULL);
    e.d = vg_size(g, e.a, NULL);
    vg_output v[3] = {i32c(g, 0), vg_const_i32_vec(g, (int32_t[]){0}, 1, NULL),
                      vg_const_i32_vec(g, (int32_t[]){0}, 1, NULL)},
              r[3];
    vg_shape inv[3] = {vg_shape_make(NULL, 0), vg_shape_unknown(), vg_shape_unknown()};
    CHECK_OK(vg_while_loop(g, w5_c, w5_b, &e, v, 3, inv, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    EXPECT_VEC_ONCE(g, false, r[2], 7, ((double[]){0, 1, 2, 3, 4, 5, 6}), NOFEED);
}

/* testWhile_Gpu_1, testWhile_Gpu_2 (on the CPU) */
CF_COND(ltf_10, vg_less(g, v[0], f32c(g, 10.0f), NULL))
static vg_code addf_1(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    if (u) vg_graph_push_device(g, "/cpu:0");
    o[0] = vg_add(g, v[0], f32c(g, 1.0f), NULL);
    if (u) vg_graph_pop_device(g);
    return VG_OK;
}
static void test_while_gpu_1_2(void) {
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output n = f32c(g, 1.0f), r;
        CHECK_OK(
            vg_while_loop(g, ltf_10, addf_1, k ? (void *)1 : NULL, &n, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st),
            &st);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, r, 10.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* ---- shapes -------------------------------------------------------------------------- */
CF_COUNTED_BODY(tile_b, vg_tile(g, v[1], vg_const_i32_vec(g, (int32_t[]){2, 2}, 2, NULL), NULL))
CF_COUNTED_BODY(concat_b, vg_concat(g, (vg_output[]){v[1], v[1]}, 2, i32c(g, 0), NULL))
static vg_output ones22(vg_graph *g) { return vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 2}, 2, 1.0, "ones"); }

/* testWhileShape */
static void test_while_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.k = 2;
    vg_output v[2] = {i32c(g, 0), ones22(g)}, r[2];
    vg_shape inv[2] = {vg_shape_make(NULL, 0), vg_shape_unknown()};
    CHECK_OK(vg_while_loop(g, lt_k, tile_b, &e, v, 2, inv, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output y = vg_mul(g, r[1], vg_const_fill(g, VG_FLOAT, (int64_t[]){8, 8}, 2, 1.0, NULL), NULL);
    vg_session *s = cf_session(g);
    double ones[64];
    for (int i = 0; i < 64; i++) ones[i] = 1.0;
    cf_expect(s, y, NOFEED, ones, 64, (int64_t[]){8, 8}, 2, 0, __FILE__, __LINE__);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileBadShape: an invariant that does not fit the entry shape */
CF_COUNTED_BODY(xplus1_b, vg_add(g, v[1], f32c(g, 1.0f), NULL))
static void test_while_bad_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.k = 10;
    float xv[2] = {2.0f, 4.0f};
    vg_output v[2] = {i32c(g, 0), vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, xv, "values")}, r[2];
    vg_shape inv[2] = {vg_shape_make(NULL, 0), vg_shape_make((int64_t[]){5}, 1)};
    CHECK_STATUS(vg_while_loop(g, lt_k, xplus1_b, &e, v, 2, inv, 10, vg_out(NULL, 0), NULL, r, &st), &st, VG_INVALID_ARGUMENT,
        "is not compatible with");
    vg_graph_free(g);
}

/* testWhileWithNonTensorInput_Vector: an int64 [1] vector (np.array([0])) */
static vg_code x0_lt(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {
    (void)n;
    (void)u;
    vg_strided_slice_masks m = {0, 0, 0, 0, 1};
    vg_output x0 = vg_strided_slice_c(g, v[0], (int32_t[]){0}, (int32_t[]){1}, NULL, 1, &m, NULL);
    *p = vg_less(g, x0, vg_const_i64(g, 10000, NULL), NULL);
    return VG_OK;
}
static vg_code x0_stack(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_strided_slice_masks m = {0, 0, 0, 0, 1};
    vg_output x0 = vg_strided_slice_c(g, v[0], (int32_t[]){0}, (int32_t[]){1}, NULL, 1, &m, NULL);
    vg_output nx = vg_add(g, x0, vg_const_i64(g, 1, NULL), NULL);
    o[0] = vg_pack(g, &nx, 1, 0, NULL);
    return VG_OK;
}
static void test_while_non_tensor_input_vector(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output n = vg_const_values(g, VG_INT64, (double[]){0}, 1, NULL, 0, (int64_t[]){1}, 1, false, NULL), r;
    CHECK_OK(vg_while_loop(g, x0_lt, x0_stack, NULL, &n, 1, NULL, 20, vg_out(NULL, 0), NULL, &r, &st), &st);
    EXPECT_VEC_ONCE(g, false, r, 1, ((double[]){10000}), NOFEED);
}

/* testWhileShapeInference */
static void test_while_shape_inference(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.k = 2;
    vg_output v[2] = {i32c(g, 0), ones22(g)}, r[2];
    vg_shape inv[2] = {vg_shape_make(NULL, 0), vg_shape_make((int64_t[]){-1, 2}, 2)};
    CHECK_OK(vg_while_loop(g, lt_k, concat_b, &e, v, 2, inv, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_shape rs = vg_output_shape(r[1]);
    CHECK(rs.ndims == 2 && rs.dims[0] == -1 && rs.dims[1] == 2); /* compatible with [8, 2] */
    vg_session *s = cf_session(g);
    double ones[16];
    for (int i = 0; i < 16; i++) ones[i] = 1.0;
    cf_expect(s, r[1], NOFEED, ones, 16, (int64_t[]){8, 2}, 2, 0, __FILE__, __LINE__);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileShapeInferenceBadShape */
static void test_while_shape_inference_bad_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.k = 2;
    vg_output v[2] = {i32c(g, 0), ones22(g)}, r[2];
    CHECK_CODE(vg_while_loop(g, lt_k, concat_b, &e, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Input tensor 'ones");
    CHECK_STR_CONTAINS(st.msg, "enters the loop with shape");
    CHECK_STR_CONTAINS(st.msg, "after one iteration. To allow the shape to vary across iterations, use the "
                               "`shape_invariants` argument of tf.while_loop to specify a less-specific shape.");
    vg_graph_free(g);
}

/* testWhileOutputShapeWithShapeInvariantsUnknownRank, testWhileOutputShapeWithShapeInvariantsPartialShape */
CF_COND(never, vg_const_bool(g, false, NULL))
CF_BODY1(const_1vec, vg_const_i32_vec(g, (int32_t[]){1}, 1, NULL))
static void test_while_output_shape_with_invariants(void) {
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output r0 = vg_const_i32_vec(g, (int32_t[]){1, 2}, 2, NULL), r;
        vg_shape inv = k == 0 ? vg_shape_unknown() : vg_shape_make((int64_t[]){-1}, 1);
        CHECK_OK(vg_while_loop(g, never, const_1vec, NULL, &r0, 1, &inv, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
        vg_shape rs = vg_output_shape(r);
        if (k == 0)
            CHECK_EQ_INT(rs.ndims, -1);
        else
            CHECK(rs.ndims == 1 && rs.dims[0] == -1);
        vg_session *s = cf_session(g);
        EXPECT_VEC(s, r, 2, ((double[]){1, 2}), NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* ---- nested loops ------------------------------------------------------------------- */
static vg_code cpu_sum_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    vg_graph_push_device(g, "/cpu:0");
    o[1] = vg_add(g, v[0], v[1], NULL);
    vg_graph_pop_device(g);
    return VG_OK;
}
static vg_output cpu_sum(vg_graph *g, vg_output n, vg_output s) {
    vg_status st;
    env e = {0};
    e.k = 10;
    vg_output v[2] = {n, s}, r[2];
    if (vg_while_loop(g, lt_k, cpu_sum_b, &e, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st) != VG_OK)
        return vg_out(NULL, 0);
    return r[1];
}
static vg_code nw1_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    env *e = u;
    vg_output cs = cpu_sum(g, e->a, e->a);
    if (!cs.op) return VG_INTERNAL;
    o[0] = vg_add(g, v[0], cs, NULL);
    return VG_OK;
}
/* testNestedWhile_1 */
static void test_nested_while_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = i32c(g, 0);
    e.k = 200;
    vg_output r;
    CHECK_OK(vg_while_loop(g, lt_k, nw1_b, &e, &e.a, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 225, NOFEED);
}

/* testNestedWhile_2 */
CF_COND(ltf_20, vg_less(g, v[0], f32c(g, 20.0f), NULL))
CF_COND(ltf_3000, vg_less(g, v[0], f32c(g, 3000.0f), NULL))
CF_BODY1(double_b, vg_add(g, v[0], v[0], NULL))
static vg_code nw2_outer_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output x = vg_identity(g, v[0], NULL), r; /* TF: logging_ops.Print(x, [x]) */
    vg_code rc = vg_while_loop(g, ltf_20, double_b, NULL, &x, 1, NULL, 1, vg_out(NULL, 0), NULL, &r, &st);
    if (rc != VG_OK) return rc;
    vg_graph_push_device(g, "/cpu:0");
    o[0] = vg_square(g, r, NULL);
    vg_graph_pop_device(g);
    return VG_OK;
}
static void test_nested_while_2(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output s0 = f32c(g, 2.0f), r;
    CHECK_OK(vg_while_loop(g, ltf_3000, nw2_outer_b, NULL, &s0, 1, NULL, 1, vg_out(NULL, 0), NULL, &r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 1048576.0, NOFEED);
}

/* ---- control dependencies ------------------------------------------------------------ */
static vg_code ctl1_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)u;
    int last = n - 1;
    if (n == 2) o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    vg_graph_push_control_deps(g, &v[last].op, 1);
    o[last] = vg_const_i32(g, 12, NULL);
    vg_graph_pop_control_deps(g);
    return VG_OK;
}
/* testWhileWithControl_1, testWhileWithControl_2 */
static void test_while_with_control_1_2(void) {
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        e.k = 10;
        vg_output v[2] = {i32c(g, 0), i32c(g, 0)}, r[2];
        int nv = k == 0 ? 2 : 1;
        CHECK_OK(vg_while_loop(g, lt_k, ctl1_b, &e, v, nv, NULL, 1, vg_out(NULL, 0), NULL, r, &st), &st);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, r[nv - 1], 12, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

CF_BODY1(add_id_c, vg_add(g, v[0], vg_identity(g, ((env *)u)->c, NULL), NULL))
static vg_code add_c_under_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    env *e = u;
    vg_graph_push_control_deps(g, &e->b.op, 1);
    o[0] = vg_add(g, v[0], e->c, NULL);
    vg_graph_pop_control_deps(g);
    return VG_OK;
}
CF_BODY1(add_c, vg_add(g, v[0], ((env *)u)->c, NULL))
/* testWhileWithControl_3, testWhileWithControl_4, testWhileWithControl_5: a loop under (or a body with) a control dependency
 * on a fed placeholder */
static void test_while_with_control_345(void) {
    vg_while_body_fn bodies[3] = {add_c, add_id_c, add_c_under_b};
    for (int k = 0; k < 3; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        e.k = 10;
        e.b = vg_placeholder(g, VG_BOOL, NULL, -1, "b");
        e.c = i32c(g, 1);
        vg_output x0 = i32c(g, 0), r;
        if (k < 2) vg_graph_push_control_deps(g, &e.b.op, 1);
        CHECK_OK(vg_while_loop(g, lt_k, bodies[k], &e, &x0, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
        if (k < 2) vg_graph_pop_control_deps(g);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, r, 10, FEEDS(fd(e.b, 1)));
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileCondWithControl: conds as the loop's condition and body under an outer
 * control dependency */
CF_BRANCH1(br_true, vg_const_bool(g, true, NULL))
CF_BRANCH1(br_false, vg_const_bool(g, false, NULL))
CF_BRANCH1(br_dec, vg_sub(g, *(vg_output *)u, i32c(g, 1), NULL))
CF_BRANCH1(br_same, *(vg_output *)u)
static vg_code wcc_c(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {
    (void)n;
    (void)u;
    vg_status st;
    return vg_cond(g, vg_greater(g, v[0], i32c(g, 0), NULL), br_true, br_false, NULL, 1, p, NULL, &st);
}
static vg_code wcc_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output i = v[0];
    return vg_cond(g, vg_greater(g, v[0], i32c(g, 0), NULL), br_dec, br_same, &i, 1, o, NULL, &st);
}
static void test_while_cond_with_control(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_op *noop = vg_no_op(g, NULL);
    vg_output x = i32c(g, 5), r;
    vg_graph_push_control_deps(g, &noop, 1);
    CHECK_OK(vg_while_loop(g, wcc_c, wcc_b, NULL, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_graph_pop_control_deps(g);
    EXPECT_VAL_ONCE(g, false, r, 0, NOFEED);
}

/* testWhileCondWithControl_1: a cond in the body assigns v = v^2 four times */
static vg_code br_assign_sq(vg_graph *g, void *u, vg_output *o) {
    vg_variable *v = u;
    o[0] = vg_assign(g, v->ref, vg_square(g, v->read, NULL), true, NULL);
    return VG_OK;
}
CF_BRANCH1(br_v, ((vg_variable *)u)->read)
static vg_code wcc1_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    vg_output some_cond;
    vg_code rc = vg_cond(g, vg_const_bool(g, true, NULL), br_assign_sq, br_v, u, 1, &some_cond, NULL, &st);
    if (rc != VG_OK) return rc;
    vg_graph_push_control_deps(g, &some_cond.op, 1);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    vg_graph_pop_control_deps(g);
    return VG_OK;
}
CF_COND(lt4, vg_less(g, v[0], i32c(g, 4), NULL))
static void test_while_cond_with_control_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_constant(2), 0);
    vg_output i0 = i32c(g, 0), r;
    CHECK_OK(vg_while_loop(g, lt4, wcc1_b, &v, &i0, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VAL(s, r, 4, NOFEED);
    EXPECT_VAL(s, v.read, 65536.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileCondExitControl: a control edge from a loop's Exit inside a cond branch */
CF_COND(lt100, vg_less(g, v[0], i32c(g, 100), NULL))
static vg_code assign_i_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_output x = vg_assign(g, ((vg_variable *)u)->ref, v[0], true, NULL);
    o[0] = vg_add(g, x, i32c(g, 1), NULL);
    return VG_OK;
}
CF_BRANCH1(br_const1f, f32c(g, 1.0f))
static vg_code br_loop_then_6(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    vg_output i0 = i32c(g, 0), loop;
    vg_code rc = vg_while_loop(g, lt100, assign_i_b, u, &i0, 1, NULL, 10, vg_out(NULL, 0), NULL, &loop, &st);
    if (rc != VG_OK) return rc;
    vg_graph_push_control_deps(g, &loop.op, 1);
    o[0] = f32c(g, 6.0f);
    vg_graph_pop_control_deps(g);
    return VG_OK;
}
static void test_while_cond_exit_control(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable v = vg_variable_new(g, "v", i32c(g, 1), 0);
    vg_output r;
    CHECK_OK(vg_cond(g, vg_const_bool(g, false, NULL), br_const1f, br_loop_then_6, &v, 1, &r, NULL, &st), &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VAL(s, r, 6.0, NOFEED);
    EXPECT_VAL(s, v.read, 99, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileExternalControlDependencies, testWhileExternalControlDependenciesNoInput: an assign_add outside the loop that
 * the body depends on runs once */
CF_COND(lt_2, vg_less(g, v[0], i32c(g, 2), NULL))
CF_COND(lt_5, vg_less(g, v[0], i32c(g, 5), NULL))
static vg_code ext_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    env *e = u;
    vg_graph_push_control_deps(g, &e->op, 1);
    o[0] = e->k ? vg_const_i32(g, 5, "five") : vg_add(g, v[0], i32c(g, 1), NULL);
    vg_graph_pop_control_deps(g);
    return VG_OK;
}
static void test_while_external_control_dependencies(void) {
    for (int k = 0; k < 2; k++) { /* 1: ...NoInput */
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_variable v = vg_variable_new(g, "v", f32c(g, 0.0f), 0);
        env e = {0};
        e.op = vg_assign_add(g, v.ref, f32c(g, 1.0f), NULL).op;
        e.k = k;
        vg_output x0 = i32c(g, k ? 0 : 1), r;
        CHECK_OK(vg_while_loop(g, k ? lt_5 : lt_2, ext_b, &e, &x0, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
        vg_session *s = cf_session(g);
        RUN_TARGET(s, v.initializer);
        EXPECT_VAL(s, r, k ? 5 : 2, NOFEED);
        EXPECT_VAL(s, v.read, 1.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* ---- refs and variables in loops ---------------------------------------------------- */

/* testWhileWithRefs_1: a ref loop variable */
static vg_code ref_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = vg_identity(g, v[1], NULL); /* gen_array_ops.ref_identity */
    return VG_OK;
}
static void test_while_with_refs_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable x = vg_variable_new(g, "x", i32c(g, 0), 0);
    env e = {0};
    e.k = 100;
    vg_output v[2] = {i32c(g, 0), x.ref}, r[2];
    CHECK_OK(vg_while_loop(g, lt_k, ref_b, &e, v, 2, NULL, 5, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    vg_tensor *t[2] = {NULL, NULL};
    CHECK_OK(cf_run(s, r, t, 2, NULL, 0, NOFEED, &st), &st);
    if (t[0] && t[1]) {
        CHECK_EQ_INT(get(t[0], 0), 100);
        CHECK_EQ_INT(get(t[1], 0), 0);
    }
    kt_teardown(g, s, (vg_tensor *[]){t[0], t[1]}, 2, NULL, 0);
}

/* testWhileUpdateVariable_1, testWhileUpdateVariable_2, testWhileUpdateVariable_3 (ResourceScatterUpdate for state_ops.scatter_update) */
typedef struct upd {
    vg_output h1, h2;
    int which; /* 1, 2, 3 */
} upd;
CF_COND(lt_3, vg_less(g, v[0], i32c(g, 3), NULL))
static vg_code upd_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    upd *d = u;
    vg_op *ns1 = vg_resource_scatter_update(g, d->h1, v[0], f32c(g, 10.0f), NULL);
    vg_output nj = vg_add(g, v[0], i32c(g, 1), NULL);
    if (d->which == 3) {
        o[0] = nj;
        o[1] = vg_resource_variable_read_after(g, d->h1, ns1); /* the scatter's ref output */
        return VG_OK;
    }
    vg_op *ops[2] = {ns1, d->which == 2 ? vg_resource_scatter_update(g, d->h2, v[0], f32c(g, 10.0f), NULL) : NULL};
    vg_op *op = vg_group(g, ops, d->which == 2 ? 2 : 1, NULL);
    o[0] = with_dep(g, op, nj);
    return VG_OK;
}
static void test_while_update_variable_123(void) {
    for (int which = 1; which <= 3; which++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        float init[3] = {3, 4, 5};
        vg_resource_variable s1 =
            vg_resource_variable_new(g, "select1", vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, init, NULL), 0);
        vg_resource_variable s2 =
            vg_resource_variable_new(g, "select2", vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, init, NULL), 0);
        upd d = {s1.handle, s2.handle, which};
        vg_output v[2] = {i32c(g, 0), vg_identity(g, s1.value, NULL)}, r[2];
        CHECK_OK(vg_while_loop(g, lt_3, upd_b, &d, v, which == 3 ? 2 : 1, NULL, 1, vg_out(NULL, 0), NULL, r, &st), &st);
        vg_session *s = cf_session(g);
        RUN_INIT(s, g);
        double ten[3] = {10, 10, 10};
        if (which == 3) {
            EXPECT_VEC(s, r[1], 3, ten, NOFEED);
        } else {
            EXPECT_VAL(s, r[0], 3, NOFEED);
            EXPECT_VEC(s, s1.value, 3, ten, NOFEED);
            if (which == 2) EXPECT_VEC(s, s2.value, 3, ten, NOFEED);
        }
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileUpdateVariable_4, testWhileUpdateVariable_5, testWhileUpdateVariable_6 */
typedef struct ab_vars {
    vg_variable a, b;
    vg_output asn1;
} ab_vars;
static vg_code upd4_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    ab_vars *w = u;
    vg_output asn2 = vg_assign_add(g, w->b.ref, w->asn1, "b_add");
    o[0] = kt_inc_after(g, asn2.op, v[0], NULL, "i_add");
    return VG_OK;
}
CF_COND(lt_10, vg_less(g, v[0], i32c(g, 10), NULL))
CF_COND(upd5_c, vg_less(g, ((ab_vars *)u)->b.read, i32c(g, 10), NULL))
static vg_code upd5_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)v;
    (void)n;
    ab_vars *w = u;
    vg_op *asn[2] = {vg_assign_add(g, w->a.ref, vg_const_i32(g, 1, NULL), "a_add").op,
                     vg_assign_add(g, w->b.ref, vg_const_i32(g, 1, NULL), "b_add").op};
    o[0] = with_deps(g, asn, 2, w->b.read, NULL);
    return VG_OK;
}
static vg_code upd6_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    ab_vars *w = u;
    vg_output asn1 = vg_assign_add(g, w->a.ref, i32c(g, 1), "a_add");
    vg_graph_push_control_deps(g, &asn1.op, 1);
    vg_output asn2 = vg_assign_add(g, w->b.ref, w->a.read, "b_add");
    vg_graph_pop_control_deps(g);
    o[0] = kt_inc_after(g, asn2.op, v[0], NULL, "i_add");
    return VG_OK;
}
static void test_while_update_variable_456(void) {
    for (int k = 4; k <= 6; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        ab_vars w;
        w.a = vg_variable_new(g, "a", i32c(g, 0), 0);
        w.b = vg_variable_new(g, "b", i32c(g, 0), 0);
        vg_op *init = vg_global_variables_initializer(g);
        vg_output c = vg_const_i32(g, 0, "c"), lpa;
        if (k == 4) w.asn1 = vg_assign_add(g, w.a.ref, i32c(g, 1), "a_add");
        if (k == 4)
            CHECK_OK(vg_while_loop(g, lt_10, upd4_b, &w, &c, 1, NULL, 1, vg_out(NULL, 0), NULL, &lpa, &st), &st);
        if (k == 5)
            CHECK_OK(vg_while_loop(g, upd5_c, upd5_b, &w, &w.b.read, 1, NULL, 1, vg_out(NULL, 0), "loop", &lpa, &st),
                     &st);
        if (k == 6)
            CHECK_OK(vg_while_loop(g, lt_10, upd6_b, &w, &c, 1, NULL, 1, vg_out(NULL, 0), "loop", &lpa, &st), &st);
        vg_session *s = cf_session(g);
        RUN_TARGET(s, init);
        EXPECT_VAL(s, w.b.read, 0, NOFEED);
        RUN_TARGET(s, lpa.op);
        EXPECT_VAL(s, w.b.read, k == 6 ? 55 : 10, NOFEED);
        if (k != 4) EXPECT_VAL(s, w.a.read, 10, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* ---- queues, stacks, TensorArrays, py_func ----------------------------------------- */

/* testWhileQueue_1 */
static vg_code q_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_op *enq = vg_queue_enqueue(g, *(vg_output *)u, &v[0], 1, NULL);
    o[0] = with_dep(g, enq, vg_add(g, v[0], i32c(g, 1), NULL));
    return VG_OK;
}
static void test_while_queue_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_dtype dt = VG_INT32;
    vg_output q = vg_fifo_queue(g, &dt, NULL, 1, -1, NULL);
    env e = {0};
    e.k = 10;
    vg_output i = i32c(g, 0), r;
    (void)e;
    CHECK_OK(vg_while_loop(g, isum_c, q_b, &q, &i, 1, NULL, 1, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_op *deq = vg_queue_dequeue(g, q, NULL);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r, 10, NOFEED);
    for (int k = 0; k < 10; k++) EXPECT_VAL(s, vg_out(deq, 0), k, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileTimeOut */
CF_COND(always, vg_const_bool(g, true, NULL))
CF_BODY1(plus1, vg_add(g, v[0], i32c(g, 1), NULL))
static void test_while_time_out(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output n = i32c(g, 0), r;
    CHECK_OK(vg_while_loop(g, always, plus1, NULL, &n, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_session *s = cf_session(g);
    vg_run_options ro = {0};
    ro.timeout_in_ms = 1;
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run(s, &ro, NULL, NULL, 0, &r, &t, 1, NULL, 0, NULL, &st), VG_DEADLINE_EXCEEDED);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

/* testWhileStack_1: one loop pushes, a second pops */
static vg_code push_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_output push = vg_stack_push(g, *(vg_output *)u, v[0], NULL);
    o[0] = with_dep(g, push.op, vg_add(g, v[0], i32c(g, 1), NULL));
    return VG_OK;
}
CF_COND(gt0, vg_greater(g, v[0], i32c(g, 0), NULL))
static vg_code pop_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    o[0] = vg_sub(g, v[0], i32c(g, 1), NULL);
    o[1] = vg_add(g, v[1], vg_stack_pop(g, *(vg_output *)u, VG_INT32, NULL), NULL);
    return VG_OK;
}
static void test_while_stack_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output s0 = vg_stack(g, VG_INT32, "foo", NULL);
    vg_output i = i32c(g, 0), r;
    CHECK_OK(vg_while_loop(g, isum_c, push_b, &s0, &i, 1, NULL, 1, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_output v[2] = {r, i32c(g, 0)}, rx[2];
    vg_shape inv[2] = {vg_output_shape(r), vg_shape_unknown()};
    CHECK_OK(vg_while_loop(g, gt0, pop_b, &s0, v, 2, inv, 1, vg_out(NULL, 0), NULL, rx, &st), &st);
    EXPECT_VAL_ONCE(g, false, rx[1], 45, NOFEED);
}

/* testNestedWhileAndTensorArray: a TensorArray written in the inner of two loops */
typedef struct ta_env {
    vg_output n, handle;
} ta_env;
CF_COND(col_le_n, vg_less_equal(g, v[1], ((ta_env *)u)->n, NULL))
static vg_code inner_ta_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    ta_env *te = u;
    vg_output row = v[0], col = v[1];
    vg_output idx = vg_cast(g,
                            vg_sub(g, vg_add(g, vg_mul(g, te->n, vg_sub(g, row, f32c(g, 1.0f), NULL), NULL), col, NULL),
                                   f32c(g, 1.0f), NULL),
                            VG_INT32, NULL);
    vg_tensor_array ta = {te->handle, v[2], VG_FLOAT};
    ta = vg_tensor_array_write(g, ta, idx, vg_mul(g, row, col, NULL), NULL);
    o[0] = row;
    o[1] = vg_add(g, col, f32c(g, 1.0f), NULL);
    o[2] = ta.flow;
    return VG_OK;
}
CF_COND(row_le_n, vg_less_equal(g, v[0], ((ta_env *)u)->n, NULL))
static vg_code outer_ta_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    vg_output iv[3] = {v[0], f32c(g, 1.0f), v[1]}, io[3];
    vg_code rc = vg_while_loop(g, col_le_n, inner_ta_b, u, iv, 3, NULL, 10, vg_out(NULL, 0), NULL, io, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], f32c(g, 1.0f), NULL);
    o[1] = io[2];
    return VG_OK;
}
static void test_nested_while_and_tensor_array(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    ta_env te;
    te.n = f32c(g, 3.0f);
    vg_tensor_array ta = vg_tensor_array_new(g, VG_FLOAT, i32c(g, 9), false, true, NULL, NULL);
    te.handle = ta.handle;
    vg_output v[2] = {f32c(g, 1.0f), ta.flow}, r[2];
    CHECK_OK(vg_while_loop(g, row_le_n, outer_ta_b, &te, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_tensor_array out = {ta.handle, r[1], VG_FLOAT};
    vg_output output = vg_reshape_c(g, vg_tensor_array_stack(g, out, NULL), (int64_t[]){3, 3}, 2, NULL);
    vg_session *s = cf_session(g);
    cf_expect(s, output, NOFEED, (double[]){1, 2, 3, 2, 4, 6, 3, 6, 9}, 9, (int64_t[]){3, 3}, 2, 0, __FILE__, __LINE__);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhilePyFuncBasic */
static vg_code square_fn(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)nin;
    (void)nout;
    (void)user;
    float x = *(const float *)vg_tensor_data(in[0]);
    out[0] = vg_tensor_new_scalar_f32(x * x, st);
    return out[0] ? VG_OK : VG_RESOURCE_EXHAUSTED;
}
static vg_code pyfunc_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_dtype tout = VG_FLOAT;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = vg_out(vg_py_func(g, square_fn, NULL, &v[1], 1, &tout, 1, true, NULL, NULL, NULL), 0);
    return VG_OK;
}
static void test_while_py_func_basic(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v[2] = {i32c(g, 0), f32c(g, 2.0f)}, r[2];
    vg_shape inv[2] = {vg_shape_unknown(), vg_shape_unknown()};
    CHECK_OK(vg_while_loop(g, lt4, pyfunc_b, NULL, v, 2, inv, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r[1], 65536.0, NOFEED);
}

/* testRunLoopTensor: a tensor made in the body cannot be fetched */
static vg_output escaped;
CF_COND(lt_5c, vg_less(g, v[0], i32c(g, 5), NULL))
static vg_code escape_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)v;
    (void)n;
    (void)u;
    escaped = i32c(g, 5);
    o[0] = i32c(g, 10);
    return VG_OK;
}
static void test_run_loop_tensor(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = i32c(g, 4), r;
    CHECK_OK(vg_while_loop(g, lt_5c, escape_b, NULL, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r, 10, NOFEED);
    EXPECT_CODE(s, escaped, VG_INVALID_ARGUMENT, NULL, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- cond and while nested ------------------------------------------------------------ */
CF_COND(ltn, vg_less(g, v[0], ((env *)u)->d, NULL))
/* testWhileCond_1 adds and subtracts the outer tensor `one`; _2 and _3 a constant made
 * in the branch */
static vg_code br_add_one(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_add(g, e->a, e->k == 1 ? e->c : i32c(g, 1), NULL);
    return VG_OK;
}
static vg_code br_sub_one(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_sub(g, e->a, e->k == 1 ? e->c : i32c(g, 1), NULL);
    return VG_OK;
}
CF_BRANCH1(br_ret_n, ((env *)u)->b)
static vg_code wc_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    env e = *(env *)u;
    e.a = v[0];
    vg_output pred = e.k == 3 ? vg_less(g, i32c(g, 0), i32c(g, 1), NULL) : vg_const_bool(g, true, NULL);
    return vg_cond(g, pred, br_add_one, e.k == 2 ? br_ret_n : br_sub_one, &e, 1, o, NULL, &st);
}
/* testWhileCond_1, testWhileCond_2, testWhileCond_3 */
static void test_while_cond_123(void) {
    for (int k = 1; k <= 3; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        e.k = k;
        e.b = vg_const_i32(g, 0, "n");
        e.c = vg_const_i32(g, 1, "one");
        e.d = vg_const_i32(g, 10, "ten");
        vg_output i = vg_const_i32(g, 0, "i"), r;
        CHECK_OK(vg_while_loop(g, ltn, wc_b, &e, &i, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, r, 10, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

CF_COND(lt10, vg_less(g, v[0], i32c(g, 10), NULL))
static vg_code br_loop(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    return vg_while_loop(g, lt10, plus1, NULL, (vg_output *)u, 1, NULL, 10, vg_out(NULL, 0), NULL, o, &st);
}
CF_BRANCH1(br_n, *(vg_output *)u)
CF_BRANCH1(br_n_plus1, vg_add(g, *(vg_output *)u, i32c(g, 1), NULL))
/* testCondWhile_1, testCondWhile_2 */
static void test_cond_while_12(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output n = vg_const_i32(g, 0, "n"), r1, r2;
    CHECK_OK(vg_cond(g, vg_less(g, i32c(g, 0), i32c(g, 1), NULL), br_loop, br_n, &n, 1, &r1, NULL, &st), &st);
    CHECK_OK(vg_cond(g, vg_less(g, i32c(g, 1), i32c(g, 0), NULL), br_n_plus1, br_loop, &n, 1, &r2, NULL, &st), &st);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r1, 10, NOFEED);
    EXPECT_VAL(s, r2, 10, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- ControlFlowContextCheckTest (while) --------------------------------------------- */
CF_BRANCH1(br_const0, i32c(g, 0))
static vg_output while_tensor;
static vg_code keep_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    if (!while_tensor.op) while_tensor = i32c(g, 1);
    o[0] = vg_add(g, v[0], while_tensor, NULL);
    return VG_OK;
}
/* _getWhileTensor: a tensor made in a loop body */
static vg_code get_while_tensor(vg_graph *g) {
    vg_status st;
    while_tensor = vg_out(NULL, 0);
    vg_output x = i32c(g, 0), r;
    return vg_while_loop(g, lt10, keep_b, NULL, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st);
}
CF_BODY1(use_wt_b, u ? while_tensor : vg_add(g, i32c(g, 1), while_tensor, NULL))
CF_BRANCH1(br_add_wt, vg_add(g, i32c(g, 1), while_tensor, NULL))

/* testInvalidContextInCond */
static void test_invalid_context_in_cond(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    CHECK_OK(get_while_tensor(g), &st);
    vg_output r;
    CHECK_CODE(vg_cond(g, one_lt_two(g), br_add_wt, br_const0, NULL, 1, &r, NULL, &st),
               VG_INVALID_ARGUMENT);
    char want[256];
    snprintf(want, sizeof want, "Cannot use '%s' as input to 'cond/", vg_op_name(while_tensor.op));
    CHECK_STR_CONTAINS(st.msg, want);
    snprintf(want, sizeof want, "because '%s' is in a while loop. See info log for more details.",
             vg_op_name(while_tensor.op));
    CHECK_STR_CONTAINS(st.msg, want);
    vg_graph_free(g);
}

/* testInvalidContextInWhile */
static void test_invalid_context_in_while(void) {
    for (int direct = 0; direct < 2; direct++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        CHECK_OK(get_while_tensor(g), &st);
        vg_output x = i32c(g, 0), r;
        CHECK_CODE(vg_while_loop(g, lt10, use_wt_b, direct ? (void *)1 : NULL, &x, 1, NULL, 10, vg_out(NULL, 0), NULL,
                                 &r, &st),
                   VG_INVALID_ARGUMENT);
        char want[256];
        snprintf(want, sizeof want, "Cannot use '%s' as input to 'while_1/%s", vg_op_name(while_tensor.op),
                 direct ? "NextIteration" : "");
        CHECK_STR_CONTAINS(st.msg, want);
        CHECK_STR_CONTAINS(st.msg, "because they are in different while loops. See info log for more details.");
        vg_graph_free(g);
    }
}

/* testValidWhileContext: a tensor of the outer body used in a nested loop */
CF_BODY1(plus_c, vg_add(g, v[0], *(vg_output *)u, NULL))
CF_COND(lt3c, vg_less(g, v[0], i32c(g, 3), NULL))
static vg_code valid_outer_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)v;
    (void)n;
    (void)u;
    vg_status st;
    vg_output c = i32c(g, 1), x = i32c(g, 0);
    return vg_while_loop(g, lt3c, plus_c, &c, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, o, &st);
}
static void test_valid_while_context(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = i32c(g, 0), r;
    CHECK_OK(vg_while_loop(g, lt_5c, valid_outer_b, NULL, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_graph_free(g);
}

/* testValidNestedContexts: a cond tensor used in a loop inside another cond, all in a
 * loop body */
static vg_code br_made(vg_graph *g, void *u, vg_output *o) {
    vg_output *t = u;
    if (!t->op) *t = i32c(g, 1);
    o[0] = *t;
    return VG_OK;
}
static vg_code br_loop_plus_ct(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    vg_output x = i32c(g, 0);
    return vg_while_loop(g, lt3c, plus_c, u, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, o, &st);
}
static vg_code nested_ctx_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)v;
    (void)n;
    (void)u;
    vg_status st;
    vg_output ct = {NULL, 0}, r;
    vg_output p = one_lt_two(g);
    vg_code rc = vg_cond(g, p, br_made, br_const0, &ct, 1, &r, NULL, &st);
    if (rc != VG_OK) return rc;
    return vg_cond(g, one_lt_two(g), br_loop_plus_ct, br_const0, &ct, 1, o, NULL, &st);
}
static void test_valid_nested_contexts(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = i32c(g, 0), r;
    CHECK_OK(vg_while_loop(g, lt_5c, nested_ctx_b, NULL, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_graph_free(g);
}

/* testInvalidNestedContexts: a loop tensor used by another loop, inside a cond */
static vg_code br_invalid_nested(vg_graph *g, void *u, vg_output *o) {
    (void)u;
    vg_status st;
    vg_code rc = get_while_tensor(g);
    if (rc != VG_OK) return rc;
    vg_output x = i32c(g, 0);
    return vg_while_loop(g, lt3c, plus_c, &while_tensor, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, o, &st);
}
static void test_invalid_nested_contexts(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output r;
    CHECK_CODE(
        vg_cond(g, one_lt_two(g), br_invalid_nested, br_const0, NULL, 1, &r, NULL, &st),
        VG_INVALID_ARGUMENT);
    char want[256];
    snprintf(want, sizeof want, "Cannot use '%s' as input to 'cond/while_1/", vg_op_name(while_tensor.op));
    CHECK_STR_CONTAINS(st.msg, want);
    CHECK_STR_CONTAINS(st.msg, "because they are in different while loops");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_enter_mul_exit);
    RUN_TEST(test_enter_shape_propagation);
    RUN_TEST(test_loop_false);
    RUN_TEST(test_loop_1_2);
    RUN_TEST(test_different_frame);
    RUN_TEST(test_feedable);
    RUN_TEST(test_while_1);
    RUN_TEST(test_while_2_max_iterations);
    RUN_TEST(test_while_max_iterations_single_argument);
    RUN_TEST(test_while_3);
    RUN_TEST(test_while_4);
    RUN_TEST(test_while_5);
    RUN_TEST(test_while_gpu_1_2);
    RUN_TEST(test_while_shape);
    RUN_TEST(test_while_bad_shape);
    RUN_TEST(test_while_non_tensor_input_vector);
    RUN_TEST(test_while_shape_inference);
    RUN_TEST(test_while_shape_inference_bad_shape);
    RUN_TEST(test_while_output_shape_with_invariants);
    RUN_TEST(test_nested_while_1);
    RUN_TEST(test_nested_while_2);
    RUN_TEST(test_while_with_control_1_2);
    RUN_TEST(test_while_with_control_345);
    RUN_TEST(test_while_cond_with_control);
    RUN_TEST(test_while_cond_with_control_1);
    RUN_TEST(test_while_cond_exit_control);
    RUN_TEST(test_while_external_control_dependencies);
    RUN_TEST(test_while_with_refs_1);
    RUN_TEST(test_while_update_variable_123);
    RUN_TEST(test_while_update_variable_456);
    RUN_TEST(test_while_queue_1);
    RUN_TEST(test_while_time_out);
    RUN_TEST(test_while_stack_1);
    RUN_TEST(test_nested_while_and_tensor_array);
    RUN_TEST(test_while_py_func_basic);
    RUN_TEST(test_run_loop_tensor);
    RUN_TEST(test_while_cond_123);
    RUN_TEST(test_cond_while_12);
    RUN_TEST(test_invalid_context_in_cond);
    RUN_TEST(test_invalid_context_in_while);
    RUN_TEST(test_valid_while_context);
    RUN_TEST(test_valid_nested_contexts);
    RUN_TEST(test_invalid_nested_contexts);
    TEST_MAIN_END();
}
