/* test_cf_tf_cond.c - TF 1.15's tensorflow/python/kernel_tests/control_flow_ops_py_test.py
 * translated to C, part 1: tf.cond, tf.case, Switch/Merge, ref variables through the
 * control-flow ops, with_dependencies / group / tuple (ControlFlowTest, TupleTest and
 * the cond half of ControlFlowContextCheckTest). Each test cites the TF test method it
 * translates; the values are those of TF's own assertions. Loops: test_cf_tf_while.c;
 * gradients: test_cf_tf_grad.c.
 *
 * Not translated (and why):
 *  - testCondBool: a Python bool as predicate is a Python TypeError; vg_cond takes a
 *    tensor (a non-bool tensor is rejected: test_control_flow.c).
 *  - testSwitchMergeIndexedSlices, testCondIndexedSlices, testCondIndexedSlicesDifferentTypes,
 *    testCondMismatchedIndexedSlices, testCondSparseTensor, testCondRaggedTensor,
 *    testSparseIdentity, testSparseEnterExit: composite tensors (IndexedSlices,
 *    SparseTensor, RaggedTensor) are Python-level structures; vigil's C API has none.
 *  - testCheckNestedOutputStruct, testDictOutput, testEmbeddedListOutput,
 *    testEmbeddedTupleOutput, testEmbeddedDictOutput: Python nest structures of branch
 *    outputs (C branches fill a flat array of nouts outputs); testTupleOutput is
 *    testCondListOutput in C (translated together).
 *  - testCondColocation, testCond_Device,
 *    testCondSwitchColocatedWithInputWhenInputExplicitlyPlacedOnCPU,
 *    testCondSwitchColocatedWithInputWhenInputPlacedOnCPU,
 *    testCondSwitchColocatedWithInputWhenInputOnGPU,
 *    testCondRecvIdentity, testDependenciesDevice: device placement and colocation
 *    (GPU-only or partition checks); testCondRecvIdentity's graph on one CPU is
 *    testCondSwitchIdentity.
 *  - testCondAccessTrueBranchTensorInFalseBranchRaises,
 *    testSwitchCaseAccessBranch1TensorInBranch4Raises, testDisableLoweringSwitchMerge:
 *    control flow v2 / tf.function only.
 *  - testCondPredicateTensor: a defun's second output as predicate (function lowering).
 *  - testCondPruning's defun half and testCondAutoControlDeps' defun / wrap_function
 *    halves: tf.function only (the graph-mode halves are translated).
 *  - testFetchable: Graph.is_fetchable bookkeeping of the Python graph (vigil has no
 *    not-fetchable marks for cond tensors; fetching a dead tensor is testSwitchDeadBranch).
 *  - testRefSelect: no RefSelect builder in vigil (a shape-function test of that op).
 *  - testQIntSwitchMerge, testQIntRefSwitchMerge, testUInt64SwitchMerge, testQIntArgAndRet:
 *    vigil has no qint8 / uint64 dtypes (and Defun).
 *  - testSwitchEagerMode and EagerTest: eager mode.
 *  - AssertTest.testGuardedAssertDoesNotCopyWhenTrue: GPU memcpy statistics.
 */
#include "cf_tf_util.h"
#include "kernels_fixture.h"

/* ---- Switch / Merge ------------------------------------------------------------- */
static vg_output data6(vg_graph *g) { return vg_const_i32_vec(g, (int32_t[]){1, 2, 3, 4, 5, 6}, 6, "data"); }

/* testSwitchMergeLess */
static void test_switch_merge_less(void) {
    vg_graph *g = vg_graph_new();
    vg_output data = data6(g);
    vg_output less = vg_less(g, vg_const_i32(g, 0, NULL), vg_const_i32(g, 1, NULL), NULL);
    vg_op *sw = vg_switch(g, data, less, NULL);
    vg_output in[2] = {vg_out(sw, 0), vg_out(sw, 1)};
    vg_op *m = vg_merge(g, in, 2, NULL);
    vg_session *s = cf_session(g);
    EXPECT_VEC(s, vg_out(m, 0), 6, ((double[]){1, 2, 3, 4, 5, 6}), NOFEED);
    EXPECT_VAL(s, vg_out(m, 1), 1, NOFEED); /* value_index: the true side */
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* data6 switched on the constant ports: merge(false side + 1, true_side(true side)). */
static vg_output identity_of(vg_graph *g, vg_output x) { return vg_identity(g, x, NULL); }
static vg_output times5_of(vg_graph *g, vg_output x) { return vg_mul(g, x, vg_const_i32(g, 5, NULL), NULL); }
static vg_op *switch_add_merge(vg_graph *g, bool ports, vg_output (*true_side)(vg_graph *, vg_output)) {
    vg_output data = data6(g);
    vg_op *sw = vg_switch(g, data, vg_const_bool(g, ports, "ports"), NULL);
    vg_output add = vg_add(g, vg_out(sw, 0), vg_const_i32(g, 1, NULL), NULL);
    return vg_merge(g, (vg_output[]){add, true_side(g, vg_out(sw, 1))}, 2, NULL);
}

/* testSwitchMergeAddIdentity */
static void test_switch_merge_add_identity(void) {
    vg_graph *g = vg_graph_new();
    vg_op *m = switch_add_merge(g, false, identity_of);
    EXPECT_VEC_ONCE(g, false, vg_out(m, 0), 6, ((double[]){2, 3, 4, 5, 6, 7}), NOFEED);
}

/* testSwitchMergeAddMul */
static void test_switch_merge_add_mul(void) {
    vg_graph *g = vg_graph_new();
    vg_op *m = switch_add_merge(g, true, times5_of);
    EXPECT_VEC_ONCE(g, false, vg_out(m, 0), 6, ((double[]){5, 10, 15, 20, 25, 30}), NOFEED);
}

/* testSwitchDeadBranch: fetching a tensor of the untaken side fails (TF: "Retval[0]
 * does not have value") */
static void test_switch_dead_branch(void) {
    vg_graph *g = vg_graph_new();
    vg_output data = data6(g);
    vg_op *sw = vg_switch(g, data, vg_const_bool(g, true, "ports"), NULL);
    vg_output dead = vg_identity(g, vg_out(sw, 0), NULL);
    vg_session *s = cf_session(g);
    EXPECT_CODE(s, dead, VG_INVALID_ARGUMENT, "dead", NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testMergeShapes: Merge's shape function */
static void check_merge_shape(vg_shape a, vg_shape b, vg_shape want, int line) {
    vg_graph *g = vg_graph_new();
    vg_output p1 = vg_placeholder(g, VG_FLOAT, a.dims, a.ndims, NULL);
    vg_output p2 = vg_placeholder(g, VG_FLOAT, b.dims, b.ndims, NULL);
    vg_op *m = vg_merge(g, (vg_output[]){p1, p2}, 2, NULL);
    vg_shape s = vg_output_shape(vg_out(m, 0)), ix = vg_output_shape(vg_out(m, 1));
    bool ok = s.ndims == want.ndims;
    for (int i = 0; ok && i < s.ndims; i++) ok = s.dims[i] == want.dims[i];
    if (!ok || ix.ndims != 0) {
        char x[64], y[64];
        fprintf(stderr, "%s:%d: merge shape %s, expected %s (index rank %d)\n", __FILE__, line, vg_shape_str(&s, x, 64),
                vg_shape_str(&want, y, 64), ix.ndims);
        vg_test_failures++;
    }
    vg_graph_free(g);
}
#define SH(...) vg_shape_make((int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
static void test_merge_shapes(void) {
    vg_graph *g = vg_graph_new();
    vg_output p[3];
    for (int i = 0; i < 3; i++) p[i] = vg_placeholder(g, VG_FLOAT, NULL, -1, NULL);
    vg_op *m = vg_merge(g, p, 3, NULL); /* all inputs unknown */
    CHECK(vg_output_shape(vg_out(m, 0)).ndims == -1);
    CHECK(vg_output_shape(vg_out(m, 1)).ndims == 0);
    vg_graph_free(g);
    check_merge_shape(SH(1, 2), SH(1, 2, 3), vg_shape_unknown(), __LINE__); /* different ranks */
    check_merge_shape(SH(1, 2), SH(2, 1), SH(-1, -1), __LINE__);
    check_merge_shape(SH(1, 2), SH(-1, 2), SH(-1, 2), __LINE__);
    check_merge_shape(SH(1, 2), SH(2, 2), SH(-1, 2), __LINE__);
    check_merge_shape(SH(1, 2), SH(1, 2), SH(1, 2), __LINE__);
    check_merge_shape(SH(-1, 2), SH(-1, 2), SH(-1, 2), __LINE__);
    check_merge_shape(SH(-1, -1), SH(-1, -1), SH(-1, -1), __LINE__);
}

/* ---- refs through Identity / Switch / Enter ------------------------------------ */

/* testRefIdentity */
static void test_ref_identity(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_i32(g, 7, NULL), 0);
    vg_output r = vg_identity(g, v.ref, NULL); /* control_flow_ops._Identity: RefIdentity */
    vg_output op = vg_assign(g, r, vg_const_i32(g, 9, NULL), true, NULL);
    vg_output v2 = with_dep(g, op.op, r);
    EXPECT_VAL_ONCE(g, true, v2, 9, NOFEED);
}

/* testRefEnter */
static void test_ref_enter(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_i32(g, 7, NULL), 0);
    vg_output enter_v = vg_enter(g, v.ref, "foo_1", true, 10, NULL);
    vg_output enter_nine = vg_enter(g, vg_const_i32(g, 9, NULL), "foo_1", false, 10, NULL);
    vg_output op = vg_assign(g, enter_v, enter_nine, true, NULL);
    vg_output v2 = with_dep(g, op.op, enter_v);
    vg_output v3 = vg_exit(g, v2, NULL);
    EXPECT_VAL_ONCE(g, true, v3, 9, NOFEED);
}

/* testRefSwitch */
static void test_ref_switch(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_i32(g, 7, NULL), 0);
    vg_op *sw = vg_switch(g, v.ref, vg_const_bool(g, true, NULL), NULL); /* _SwitchRefOrTensor: RefSwitch */
    vg_output v2 = vg_assign(g, vg_out(sw, 1), vg_const_i32(g, 9, NULL), true, NULL);
    EXPECT_VAL_ONCE(g, true, v2, 9, NOFEED);
}

/* testUninitializedRefIdentity: a ref Switch and ref Identity pass an uninitialized
 * reference without reading it */
static void test_uninitialized_ref_identity(void) {
    vg_graph *g = vg_graph_new();
    vg_output v = vg_variable_op(g, VG_FLOAT, (int64_t[]){1}, 1, "v");
    vg_output inited = vg_is_variable_initialized(g, v, NULL);
    vg_op *sw = vg_switch(g, v, inited, NULL);
    vg_output v_f_op = vg_identity(g, vg_out(sw, 0), NULL);
    vg_output v_t_op = vg_identity(g, vg_out(sw, 1), NULL);
    vg_graph_push_control_deps(g, &v_f_op.op, 1);
    float one = 1.0f;
    vg_output assign_v = vg_assign(g, v, vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &one, NULL), true, NULL);
    vg_graph_pop_control_deps(g);
    vg_output orig_v = with_dep(g, v_t_op.op, v);
    vg_op *merged = vg_merge(g, (vg_output[]){assign_v, orig_v}, 2, NULL);
    EXPECT_VEC_ONCE(g, false, vg_out(merged, 0), 1, ((double[]){1.0}), NOFEED);
}

/* ---- tf.cond ------------------------------------------------------------------- */
CF_BRANCH1(br_add1, vg_add(g, ((env *)u)->a, vg_const_i32(g, 1, NULL), NULL))
CF_BRANCH1(br_sub1, vg_sub(g, ((env *)u)->a, vg_const_i32(g, 1, NULL), NULL))
static vg_code br_nested_add1(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    vg_status st;
    vg_output r;
    vg_code rc = vg_cond(g, e->b, br_add1, br_sub1, e, 1, &r, NULL, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, r, vg_const_i32(g, 1, NULL), NULL);
    return VG_OK;
}

/* testCond_1, testCond_2, testCond_3 */
static void test_cond_123(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_i32(g, 10, "x");
    e.b = one_lt_two(g);
    vg_output r1, r2, r3;
    CHECK_OK(vg_cond(g, e.b, br_add1, br_sub1, &e, 1, &r1, NULL, &st), &st); /* testCond_1 */
    vg_output p0 = vg_less(g, vg_const_i32(g, 1, NULL), vg_const_i32(g, 0, NULL), NULL);
    CHECK_OK(vg_cond(g, p0, br_add1, br_sub1, &e, 1, &r2, NULL, &st), &st);         /* testCond_2 */
    CHECK_OK(vg_cond(g, e.b, br_nested_add1, br_sub1, &e, 1, &r3, NULL, &st), &st); /* testCond_3 */
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r1, 11, NOFEED);
    EXPECT_VAL(s, r2, 9, NOFEED);
    EXPECT_VAL(s, r3, 12, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCondOutputShape */
CF_BRANCH1(br_square, vg_square(g, ((env *)u)->a, NULL))
CF_BRANCH1(br_sub1f, vg_sub(g, ((env *)u)->a, vg_const_f32(g, 1.0f, NULL), NULL))
static void test_cond_output_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_f32(g, 1.0f, NULL);
    vg_output b;
    CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), br_square, br_sub1f, &e, 1, &b, NULL, &st), &st);
    CHECK_EQ_INT(vg_output_shape(b).ndims, 0);
    vg_graph_free(g);
}

/* testCondResource: the predicate is a resource variable's value; the taken branch
 * assigns it */
static vg_code br_assign_false(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    vg_op *as = vg_assign_variable_op(g, e->a, vg_const_bool(g, false, NULL), NULL);
    o[0] = with_dep(g, as, e->b);
    return VG_OK;
}
CF_BRANCH1(br_ret_b, ((env *)u)->b)
static void test_cond_resource(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_resource_variable rv = vg_resource_variable_new(g, "rv", vg_const_bool(g, true, NULL), 0);
    env e = {0};
    e.a = rv.handle;
    e.b = vg_const_f32(g, 1.0f, NULL);
    vg_output r;
    CHECK_OK(vg_cond(g, vg_resource_variable_read_value(g, rv.handle), br_assign_false, br_ret_b, &e, 1, &r, NULL, &st),
             &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VAL(s, r, 1.0, NOFEED);
    EXPECT_VAL(s, rv.value, 0, NOFEED); /* the true branch ran */
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCondPruning (graph mode): only the ops the fetched output needs run */
static vg_code br_prune_t(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    vg_op *a1 = vg_assign(g, e->a, vg_const_i32(g, 1, NULL), true, NULL).op;
    vg_op *a2 = vg_assign(g, e->b, vg_const_i32(g, 2, NULL), true, NULL).op;
    /* TF returns the ops themselves (.op); a group of one op is the op-valued output */
    o[0] = vg_out(vg_group(g, &a1, 1, NULL), 0);
    o[1] = vg_out(vg_group(g, &a2, 1, NULL), 0);
    return VG_OK;
}
static vg_code br_prune_f(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    vg_op *a3 = vg_assign(g, e->c, vg_const_i32(g, 3, NULL), true, NULL).op;
    vg_op *c10 = vg_const_i32(g, 10, NULL).op;
    o[0] = vg_out(vg_group(g, &a3, 1, NULL), 0);
    o[1] = vg_out(vg_group(g, &c10, 1, NULL), 0);
    return VG_OK;
}
static void test_cond_pruning(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable v1 = vg_variable_new(g, "v1", vg_const_i32(g, 7, NULL), 0);
    vg_variable v2 = vg_variable_new(g, "v2", vg_const_i32(g, 7, NULL), 0);
    vg_variable v3 = vg_variable_new(g, "v3", vg_const_i32(g, 7, NULL), 0);
    env e = {.a = v1.ref, .b = v2.ref, .c = v3.ref};
    vg_output pred = vg_greater(g, vg_const_i32(g, 3, "age"), vg_const_i32(g, 2, "max_age"), NULL);
    vg_output r[2];
    CHECK_OK(vg_cond(g, pred, br_prune_t, br_prune_f, &e, 2, r, NULL, &st), &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VAL(s, r[1], 1 /* True */, NOFEED);
    EXPECT_VAL(s, v1.read, 7, NOFEED);
    EXPECT_VAL(s, v2.read, 2, NOFEED);
    EXPECT_VAL(s, v3.read, 7, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCond_5: ten chained conds */
static vg_code br5_t(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_less(g, vg_const_i32(g, e->k, NULL), vg_const_i32(g, 3, NULL), NULL);
    o[1] = vg_add(g, e->b, vg_const_i32(g, 1, NULL), NULL);
    return VG_OK;
}
static vg_code br5_f(vg_graph *g, void *u, vg_output *o) {
    (void)g;
    env *e = u;
    o[0] = e->a;
    o[1] = e->b;
    return VG_OK;
}
static void test_cond_5(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_bool(g, true, "alive");
    e.b = vg_const_i32(g, 0, "count");
    for (int i = 0; i < 10; i++) {
        vg_output r[2];
        e.k = i;
        CHECK_OK(vg_cond(g, e.a, br5_t, br5_f, &e, 2, r, NULL, &st), &st);
        e.a = r[0];
        e.b = r[1];
    }
    EXPECT_VAL_ONCE(g, false, e.b, 4, NOFEED);
}

/* testCond_6: a branch returns a variable */
CF_BRANCH1(br_ret_a, ((env *)u)->a)
static void test_cond_6(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int32_t seven = 7;
    vg_variable v1 = vg_variable_new(g, "v1", vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, &seven, NULL), 0);
    env e = {0};
    e.a = vg_const_i32(g, 3, "age");
    e.b = v1.read;
    vg_output pred = vg_greater(g, e.a, vg_const_i32(g, 4, NULL), NULL), r;
    CHECK_OK(vg_cond(g, pred, br_ret_a, br_ret_b, &e, 1, &r, NULL, &st), &st);
    EXPECT_VEC_ONCE(g, true, r, 1, ((double[]){7}), NOFEED);
}

/* testCond_7, testCondListOutput, testTupleOutput: two outputs */
static vg_code br7_t(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_add(g, e->a, e->k ? e->b : vg_const_i32(g, 1, NULL), NULL);
    o[1] = vg_add(g, e->a, e->k ? e->b : vg_const_i32(g, 2, NULL), NULL);
    return VG_OK;
}
CF_BRANCH1(br7_f, o[1] = ((env *)u)->b)
static void test_cond_7_list_output(void) {
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        e.a = vg_const_i32(g, 10, "x");
        e.b = vg_const_i32(g, 200, "y");
        e.k = k; /* 0: testCond_7 (x+1, x+2); 1: testCondListOutput (x+y, x+y) */
        vg_output pred = one_lt_two(g), r[2];
        CHECK_OK(vg_cond(g, pred, br7_t, br7_f, &e, 2, r, NULL, &st), &st);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, r[0], k ? 210 : 11, NOFEED);
        EXPECT_VAL(s, r[1], k ? 210 : 12, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testCondRef: the untaken branch returns an uninitialized ref variable */
static vg_code br_const2(vg_graph *g, void *u, vg_output *o) {
    (void)u;
    float two = 2.0f;
    o[0] = vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &two, NULL);
    return VG_OK;
}
static void test_cond_ref(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_variable_op(g, VG_FLOAT, (int64_t[]){1}, 1, "x");
    vg_output r;
    CHECK_OK(vg_cond(g, vg_const_bool(g, false, NULL), br_ret_a, br_const2, &e, 1, &r, NULL, &st), &st);
    EXPECT_VEC_ONCE(g, false, r, 1, ((double[]){2.0}), NOFEED);
}

/* testCondWithControl: a control dependency on a fed placeholder inside a branch */
static vg_code br_ctl_t(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    vg_graph_push_control_deps(g, &e->b.op, 1);
    (void)vg_add(g, e->a, vg_const_i32(g, 1, NULL), NULL);
    vg_graph_pop_control_deps(g);
    o[0] = vg_add(g, e->a, vg_const_i32(g, 2, NULL), NULL);
    return VG_OK;
}
CF_BRANCH1(br_const1, vg_const_i32(g, 1, NULL))
static void test_cond_with_control(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.b = vg_placeholder(g, VG_FLOAT, NULL, 0, "control_holder");
    e.a = vg_const_i32(g, 3, "a");
    vg_output r;
    CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), br_ctl_t, br_const1, &e, 1, &r, NULL, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 5, FEEDS(fd(e.b, 5.0)));
}

/* testCondSwitchIdentity (and testCondRecvIdentity's graph): the untaken branch's
 * Assert(False) never runs */
CF_BRANCH1(br_noop, vg_out(vg_no_op(g, NULL), 0))
static vg_code br_assert_false(vg_graph *g, void *u, vg_output *o) {
    (void)u;
    vg_output msg = vg_const_string(g, "Wrong branch!!!", NULL);
    o[0] = vg_out(vg_assert(g, vg_const_bool(g, false, NULL), &msg, 1, 3, NULL), 0);
    return VG_OK;
}
static void test_cond_switch_identity(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output r;
    CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), br_noop, br_assert_false, NULL, 1, &r, NULL, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 1, NOFEED);
}

/* testCondFeedConstantPredicate, testCondFeedPlaceholderWithDefaultPredicate */
CF_BRANCH1(br_const0f, vg_const_f32(g, 0.0f, NULL))
static void test_cond_feed_predicate(void) {
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        e.b = vg_const_f32(g, 37.0f, "value");
        vg_output pred = k == 0 ? vg_const_bool(g, true, "predicate")
                                : vg_placeholder_with_default(g, vg_const_bool(g, true, NULL), NULL, 0, "predicate");
        vg_output r;
        CHECK_OK(vg_cond(g, pred, br_const0f, br_ret_b, &e, 1, &r, NULL, &st), &st);
        vg_output result = vg_identity(g, r, NULL);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, result, 37.0, FEEDS(fd(pred, 0)));
        EXPECT_VAL(s, result, 0.0, FEEDS(fd(pred, 1)));
        EXPECT_VAL(s, result, 0.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testCondAutoControlDeps (graph mode): of the branch's three prints only "C", the
 * control dependency of the returned constant, runs. The prints are stateful py_funcs
 * that record their letter. */
static char printed[64];
static vg_code print_fn(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)in;
    (void)nin;
    (void)out;
    (void)nout;
    (void)st;
    size_t n = strlen(printed);
    if (n + 1 < sizeof printed) printed[n] = *(const char *)user;
    return VG_OK;
}
static vg_op *enqueue_print_op(vg_graph *g, const char *letter) {
    return vg_py_func(g, print_fn, (void *)letter, NULL, 0, NULL, 0, true, NULL, NULL, "PrintV2");
}
static vg_code branch_fn(vg_graph *g, void *u, vg_output *o) {
    (void)u;
    enqueue_print_op(g, "A");
    enqueue_print_op(g, "B");
    vg_op *c = enqueue_print_op(g, "C");
    vg_graph_push_control_deps(g, &c, 1);
    o[0] = vg_const_i32(g, 10, NULL);
    vg_graph_pop_control_deps(g);
    return VG_OK;
}
CF_BRANCH1(br_const0, vg_const_i32(g, 0, NULL))
static vg_code build_cond_fn(vg_graph *g, void *u, vg_output *o) {
    (void)u;
    vg_status st;
    return vg_cond(g, vg_const_bool(g, true, NULL), branch_fn, br_const0, NULL, 1, o, NULL, &st);
}
static void test_cond_auto_control_deps(void) {
    for (int nested = 0; nested < 2; nested++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output r;
        if (nested)
            CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), build_cond_fn, br_const0, NULL, 1, &r, NULL, &st), &st);
        else
            CHECK_OK(build_cond_fn(g, NULL, &r), &st);
        vg_session *s = cf_session(g);
        printed[0] = 0;
        EXPECT_VAL(s, r, 10, NOFEED);
        CHECK(strcmp(printed, "C") == 0);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testOneValueCond */
static void test_one_value_cond(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output c = vg_placeholder(g, VG_INT32, NULL, 0, "c");
    env e = {0};
    e.a = vg_const_i32(g, 1, "one");
    e.b = vg_const_i32(g, 2, "two");
    vg_output p = vg_greater_equal(g, c, vg_const_i32(g, 1, NULL), NULL), i;
    CHECK_OK(vg_cond(g, p, br_ret_a, br_ret_b, &e, 1, &i, NULL, &st), &st);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, i, 1, FEEDS(fd(c, 2)));
    EXPECT_VAL(s, i, 2, FEEDS(fd(c, 0)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testExampleCond */
CF_BRANCH1(br_l2, vg_sqrt(g, vg_reduce_sum(g, vg_square(g, ((env *)u)->a, NULL), NULL, -1, false, NULL), NULL))
CF_BRANCH1(br_l1, vg_reduce_sum(g, vg_abs(g, ((env *)u)->a, NULL), NULL, -1, false, NULL))
static void test_example_cond(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    float xv[2] = {-2.0f, 2.0f};
    e.a = vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, xv, "x");
    vg_output d = vg_placeholder(g, VG_INT32, NULL, 0, "d"), i;
    CHECK_OK(vg_cond(g, vg_equal(g, d, vg_const_i32(g, 2, NULL), NULL), br_l2, br_l1, &e, 1, &i, NULL, &st), &st);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, i, 4.0, FEEDS(fd(d, 1)));
    EXPECT_VAL(s, i, 2.0 * sqrt(2.0), FEEDS(fd(d, 2)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- tf.case --------------------------------------------------------------------- */

/* testCase */
static void test_case(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_const_i32(g, 1, "x"), y = vg_const_i32(g, 2, "y"), z = vg_const_i32(g, 3, "z");
    vg_cond_branch_fn fns[2] = {kt_i32_branch, kt_i32_branch};
    void *f12[2] = {(void *)(intptr_t)17, (void *)(intptr_t)23};
    void *f3 = (void *)(intptr_t)-1;
    vg_output r1, r2, r3, r4, r5, r6;
    vg_output p1[2] = {vg_less(g, x, y, NULL), vg_greater(g, x, z, NULL)};
    CHECK_OK(vg_case_exclusive(g, p1, fns, f12, 2, kt_i32_branch, f3, 1, &r1, NULL, &st), &st);
    vg_output p2[2] = {vg_greater(g, y, z, NULL), vg_greater(g, y, x, NULL)};
    CHECK_OK(vg_case(g, p2, fns, f12, 2, kt_i32_branch, f3, 1, &r2, NULL, &st), &st);
    /* duplicate events: the first is selected */
    vg_output p3[2] = {vg_less(g, x, y, NULL), vg_less(g, x, y, NULL)};
    CHECK_OK(vg_case(g, p3, fns, f12, 2, kt_i32_branch, f3, 1, &r3, NULL, &st), &st);
    /* ... and are an error when exclusive */
    CHECK_OK(vg_case_exclusive(g, p3, fns, f12, 2, kt_i32_branch, f3, 1, &r4, NULL, &st), &st);
    vg_output p5 = vg_greater(g, x, y, NULL);
    CHECK_OK(vg_case(g, &p5, fns, f12, 1, kt_i32_branch, f3, 1, &r5, NULL, &st), &st);
    vg_output p6[2] = {vg_less(g, x, y, NULL), vg_greater(g, x, y, NULL)};
    void *f01[2] = {(void *)(intptr_t)0, (void *)(intptr_t)1};
    CHECK_OK(vg_case(g, p6, fns, f01, 2, kt_i32_branch, (void *)(intptr_t)2, 1, &r6, NULL, &st), &st);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r1, 17, NOFEED);
    EXPECT_VAL(s, r2, 23, NOFEED);
    EXPECT_VAL(s, r3, 17, NOFEED);
    EXPECT_CODE(s, r4, VG_INVALID_ARGUMENT, "Input error:", NOFEED);
    EXPECT_VAL(s, r5, -1, NOFEED);
    EXPECT_VAL(s, r6, 0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCaseSideEffects: only the selected branch's assignment runs */
typedef struct side {
    vg_output var;
    int val;
} side;
static vg_code side_br(vg_graph *g, void *u, vg_output *o) {
    side *sd = u;
    vg_output as = vg_assign(g, sd->var, vg_const_i32(g, sd->val, NULL), true, NULL);
    o[0] = with_dep(g, as.op, vg_const_i32(g, sd->val, NULL));
    return VG_OK;
}
static void test_case_side_effects(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable v[3];
    for (int i = 0; i < 3; i++) v[i] = vg_variable_new(g, NULL, vg_const_i32(g, -1, NULL), 0);
    side sd[3] = {{v[0].ref, 0}, {v[1].ref, 1}, {v[2].ref, 2}};
    vg_output x = vg_const_i32(g, 1, "x"), y = vg_const_i32(g, 2, "y");
    vg_cond_branch_fn fns[2] = {side_br, side_br};
    void *ab[2] = {&sd[0], &sd[1]};
    vg_output r[3];
    vg_output p0[2] = {vg_less(g, x, y, NULL), vg_greater(g, x, y, NULL)};
    vg_output p1[2] = {vg_greater(g, x, y, NULL), vg_less(g, x, y, NULL)};
    vg_output p2[2] = {vg_greater(g, x, y, NULL), vg_greater(g, x, y, NULL)};
    CHECK_OK(vg_case_exclusive(g, p0, fns, ab, 2, side_br, &sd[2], 1, &r[0], NULL, &st), &st);
    CHECK_OK(vg_case_exclusive(g, p1, fns, ab, 2, side_br, &sd[2], 1, &r[1], NULL, &st), &st);
    CHECK_OK(vg_case_exclusive(g, p2, fns, ab, 2, side_br, &sd[2], 1, &r[2], NULL, &st), &st);
    vg_session *s = cf_session(g);
    int want[3][3] = {{0, -1, -1}, {-1, 1, -1}, {-1, -1, 2}};
    for (int k = 2; k >= 0; k--) { /* r2, r1, r0 as TF's test */
        RUN_INIT(s, g);
        for (int i = 0; i < 3; i++) EXPECT_VAL(s, v[i].read, -1, NOFEED);
        EXPECT_VAL(s, r[k], k, NOFEED);
        for (int i = 0; i < 3; i++) EXPECT_VAL(s, v[i].read, want[k][i], NOFEED);
    }
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testOneOpCond: branches that assign; the predicate's Const is fed */
static vg_code br_assign_a(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_assign(g, e->c, e->a, true, NULL);
    return VG_OK;
}
static vg_code br_assign_b(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_assign(g, e->c, e->b, true, NULL);
    return VG_OK;
}
static void test_one_op_cond(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable v = vg_variable_new(g, "v", vg_const_i32(g, 0, NULL), 0);
    vg_output c = vg_const_i32(g, 0, "c");
    env e = {0};
    e.a = vg_const_i32(g, 1, "one");
    e.b = vg_const_i32(g, 2, "two");
    e.c = v.ref;
    vg_output p = vg_greater_equal(g, c, vg_const_i32(g, 1, NULL), NULL), i;
    CHECK_OK(vg_cond(g, p, br_assign_a, br_assign_b, &e, 1, &i, NULL, &st), &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VAL(s, v.read, 0, NOFEED);
    EXPECT_VAL(s, i, 1, FEEDS(fd(c, 2)));
    EXPECT_VAL(s, v.read, 1, NOFEED);
    EXPECT_VAL(s, i, 2, FEEDS(fd(c, 0)));
    EXPECT_VAL(s, v.read, 2, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- with_dependencies, group, tuple ----------------------------------------------- */
#define UNINIT "Attempting to use uninitialized value"

/* testWithOpsDependencies */
static void test_with_ops_dependencies(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 0.0f, NULL), 0);
    vg_output c = vg_const_i32(g, 10, NULL);
    vg_session *s = cf_session(g);
    vg_status st;
    vg_tensor *t[2] = {NULL, NULL};
    CHECK_STATUS(cf_run(s, (vg_output[]){c, v.ref}, t, 2, NULL, 0, NOFEED, &st), &st, VG_FAILED_PRECONDITION, UNINIT);
    vg_output real_v = with_deps(g, &v.initializer, 1, v.ref, "real_tensor");
    CHECK_OK(cf_run(s, (vg_output[]){c, real_v}, t, 2, NULL, 0, NOFEED, &st), &st);
    if (t[0] && t[1]) {
        CHECK_EQ_INT(get(t[0], 0), 10);
        CHECK_NEAR(get(t[1], 0), 0.0, 1e-9);
    }
    kt_teardown(g, s, (vg_tensor *[]){t[0], t[1]}, 2, NULL, 0);
}

/* testWithTensorDependencies */
static void test_with_tensor_dependencies(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 0.0f, NULL), 0);
    vg_output c1 = vg_const_i32(g, 10, NULL), c2 = vg_const_i32(g, 20, NULL);
    vg_output c1_with_init_v = with_deps(g, &v.initializer, 1, c1, "c1_with_init_v");
    vg_output c2_with_c1_dep = with_deps(g, &c1_with_init_v.op, 1, c2, "c2_with_c1_dep");
    vg_session *s = cf_session(g);
    EXPECT_CODE(s, v.read, VG_FAILED_PRECONDITION, UNINIT, NOFEED);
    EXPECT_VAL(s, c2_with_c1_dep, 20, NOFEED);
    EXPECT_VAL(s, v.read, 0.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWithIndexedSlicesDependencies: with_dependencies on IndexedSlices is an identity
 * of its values (the indices pass through) */
static void test_with_indexed_slices_dependencies(void) {
    vg_graph *g = vg_graph_new();
    float vv[6] = {0, 1, 10, 11, 20, 21};
    vg_variable v = vg_variable_new(g, "v", vg_const_array(g, VG_FLOAT, (int64_t[]){3, 2}, 2, vv, NULL), 0);
    vg_output idx = vg_const_i32_vec(g, (int32_t[]){1}, 1, NULL);
    vg_output gather_v_at_1 = vg_gather(g, v.read, idx, 0, NULL);
    vg_output values_after_init = with_deps(g, &v.initializer, 1, v.ref, NULL);
    vg_output gather_after_init = vg_gather(g, values_after_init, idx, 0, NULL);
    vg_session *s = cf_session(g);
    EXPECT_CODE(s, gather_v_at_1, VG_FAILED_PRECONDITION, UNINIT, NOFEED);
    EXPECT_VEC(s, gather_after_init, 2, ((double[]){10, 11}), NOFEED);
    EXPECT_VEC(s, v.read, 6, ((double[]){0, 1, 10, 11, 20, 21}), NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testGroup, testGroupEmpty */
static void test_group(void) {
    vg_graph *g = vg_graph_new();
    float z = 0.0f, o = 1.0f;
    vg_variable v1 = vg_variable_new(g, "v1", vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &z, NULL), 0);
    vg_variable v2 = vg_variable_new(g, "v2", vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &o, NULL), 0);
    vg_op *init = vg_group(g, (vg_op *[]){v1.initializer, v2.initializer}, 2, NULL);
    vg_session *s = cf_session(g);
    EXPECT_CODE(s, v1.read, VG_FAILED_PRECONDITION, UNINIT, NOFEED);
    RUN_TARGET(s, init);
    EXPECT_VEC(s, v1.read, 1, ((double[]){0.0}), NOFEED);
    EXPECT_VEC(s, v2.read, 1, ((double[]){1.0}), NOFEED);
    vg_session_free(s);
    vg_op *empty = vg_group(g, NULL, 0, NULL);
    CHECK(empty && !strcmp(vg_op_type(empty), "NoOp"));
    if (empty) CHECK_EQ_INT(vg_op_num_control_inputs(empty), 0);
    vg_graph_free(g);
}

/* control_flow_ops.tuple(tensors, control_inputs): a group of the tensors' ops (and
 * control_inputs), each tensor passed through with_dependencies on it */
static void tuple(vg_graph *g, const vg_output *ts, int n, vg_op *const *control, int nc, vg_output *out) {
    vg_op *gating[16];
    int ng = 0;
    for (int i = 0; i < n; i++)
        if (ts[i].op) gating[ng++] = ts[i].op;
    for (int i = 0; i < nc; i++) gating[ng++] = control[i];
    vg_op *gate = vg_group(g, gating, ng, NULL);
    for (int i = 0; i < n; i++) out[i] = ts[i].op ? with_dep(g, gate, ts[i]) : vg_out(NULL, 0);
}

/* TupleTest.testTensors */
static void test_tuple_tensors(void) {
    for (int v1_first = 1; v1_first >= 0; v1_first--) {
        vg_graph *g = vg_graph_new();
        float one = 1.0f, ten = 10.0f;
        vg_variable v1 = vg_variable_new(g, "v1", vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &one, NULL), 0);
        vg_output add1 = vg_add(g, with_deps(g, &v1.initializer, 1, v1.ref, NULL), vg_const_f32(g, 2.0f, NULL), NULL);
        vg_variable v2 = vg_variable_new(g, "v2", vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &ten, NULL), 0);
        vg_output add2 = vg_add(g, with_deps(g, &v2.initializer, 1, v2.ref, NULL), vg_const_f32(g, 20.0f, NULL), NULL);
        vg_output t[3];
        tuple(g, (vg_output[]){add1, {NULL, 0}, add2}, 3, NULL, 0, t);
        CHECK(t[1].op == NULL);
        vg_session *s = cf_session(g);
        EXPECT_CODE(s, v1.read, VG_FAILED_PRECONDITION, UNINIT, NOFEED);
        EXPECT_CODE(s, v2.read, VG_FAILED_PRECONDITION, UNINIT, NOFEED);
        if (v1_first) {
            EXPECT_VEC(s, t[0], 1, ((double[]){3.0}), NOFEED); /* getting t1 initializes v2 */
            EXPECT_VEC(s, v2.read, 1, ((double[]){10.0}), NOFEED);
        } else {
            EXPECT_VEC(s, t[2], 1, ((double[]){30.0}), NOFEED); /* getting t2 initializes v1 */
            EXPECT_VEC(s, v1.read, 1, ((double[]){1.0}), NOFEED);
        }
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* TupleTest.testIndexedSlices: the values of two IndexedSlices through tuple */
static void test_tuple_indexed_slices(void) {
    for (int v1_first = 1; v1_first >= 0; v1_first--) {
        vg_graph *g = vg_graph_new();
        float a[6] = {0.0f, 1.0f, 10.0f, 11.0f, 20.0f, 21.0f}, b[6] = {0.1f, 1.1f, 10.1f, 11.1f, 20.1f, 21.1f};
        vg_variable v1 = vg_variable_new(g, "v1", vg_const_array(g, VG_FLOAT, (int64_t[]){3, 2}, 2, a, NULL), 0);
        vg_output v1_vals = with_deps(g, &v1.initializer, 1, v1.ref, NULL);
        vg_output i1 = vg_const_i32_vec(g, (int32_t[]){1}, 1, NULL);
        vg_variable v2 = vg_variable_new(g, "v2", vg_const_array(g, VG_FLOAT, (int64_t[]){3, 2}, 2, b, NULL), 0);
        vg_output v2_vals = with_deps(g, &v2.initializer, 1, v2.ref, NULL);
        vg_output i2 = vg_const_i32_vec(g, (int32_t[]){1}, 1, NULL);
        /* tuple of IndexedSlices: the gate groups values and indices; both are passed on */
        vg_output t[4];
        tuple(g, (vg_output[]){v1_vals, i1, v2_vals, i2}, 4, NULL, 0, t);
        vg_output g1 = vg_gather(g, t[0], t[1], 0, NULL), g2 = vg_gather(g, t[2], t[3], 0, NULL);
        vg_session *s = cf_session(g);
        EXPECT_CODE(s, v1.read, VG_FAILED_PRECONDITION, UNINIT, NOFEED);
        EXPECT_CODE(s, v2.read, VG_FAILED_PRECONDITION, UNINIT, NOFEED);
        if (v1_first) {
            EXPECT_VEC(s, g1, 2, ((double[]){10.0, 11.0}), NOFEED);
            EXPECT_VEC(s, v2.read, 6, ((double[]){0.1, 1.1, 10.1, 11.1, 20.1, 21.1}), NOFEED);
        } else {
            EXPECT_VEC(s, g2, 2, ((double[]){10.1, 11.1}), NOFEED);
            EXPECT_VEC(s, v1.read, 6, ((double[]){0, 1, 10, 11, 20, 21}), NOFEED);
        }
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* TupleTest.testAcceptTensorsAsControlInputs */
static void test_tuple_control_inputs(void) {
    vg_graph *g = vg_graph_new();
    vg_variable var = vg_variable_new(g, "var", vg_const_i32(g, 0, NULL), 0);
    vg_output assign = vg_assign(g, var.ref, vg_const_i32(g, 1, NULL), true, NULL);
    vg_output t;
    tuple(g, (vg_output[]){vg_const_i32(g, 0, NULL)}, 1, &assign.op, 1, &t);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VAL(s, t, 0, NOFEED);
    EXPECT_VAL(s, var.read, 1, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- ControlFlowContextCheckTest (cond) ------------------------------------------- */
static vg_output made; /* a tensor made inside a branch (the test's cond_tensor) */
static vg_code br_make_const1(vg_graph *g, void *u, vg_output *o) {
    (void)u;
    if (!made.op) made = vg_const_i32(g, 1, NULL);
    o[0] = made;
    return VG_OK;
}
static vg_code br_const0_b(vg_graph *g, void *u, vg_output *o) { return br_const0(g, u, o); }

/* cond(1 < 2, br_make_const1, false_fn) on g with made cleared first: its output. */
static vg_output made_cond(vg_graph *g, vg_cond_branch_fn false_fn) {
    vg_status st;
    vg_output r = {NULL, 0};
    made = vg_out(NULL, 0);
    CHECK_OK(vg_cond(g, one_lt_two(g), br_make_const1, false_fn, NULL, 1, &r, NULL, &st), &st);
    return r;
}

/* testValidCondContext: a tensor of a cond branch used outside (valid, although it is
 * dead when the branch is not taken) */
static void test_valid_cond_context(void) {
    vg_graph *g = vg_graph_new();
    made_cond(g, br_const0_b);
    vg_output sum = vg_add(g, vg_const_i32(g, 1, NULL), made, NULL);
    CHECK(sum.op != NULL);
    EXPECT_VAL_ONCE(g, false, sum, 2, NOFEED);
}

/* testValidCondContextBranches: a tensor of the true branch returned by the false
 * branch (valid, although dangerous) */
static void test_valid_cond_context_branches(void) {
    vg_graph *g = vg_graph_new();
    EXPECT_VAL_ONCE(g, false, made_cond(g, br_make_const1), 1, NOFEED);
}

int main(void) {
    RUN_TEST(test_switch_merge_less);
    RUN_TEST(test_switch_merge_add_identity);
    RUN_TEST(test_switch_merge_add_mul);
    RUN_TEST(test_switch_dead_branch);
    RUN_TEST(test_merge_shapes);
    RUN_TEST(test_ref_identity);
    RUN_TEST(test_ref_enter);
    RUN_TEST(test_ref_switch);
    RUN_TEST(test_uninitialized_ref_identity);
    RUN_TEST(test_cond_123);
    RUN_TEST(test_cond_output_shape);
    RUN_TEST(test_cond_resource);
    RUN_TEST(test_cond_pruning);
    RUN_TEST(test_cond_5);
    RUN_TEST(test_cond_6);
    RUN_TEST(test_cond_7_list_output);
    RUN_TEST(test_cond_ref);
    RUN_TEST(test_cond_with_control);
    RUN_TEST(test_cond_switch_identity);
    RUN_TEST(test_cond_feed_predicate);
    RUN_TEST(test_cond_auto_control_deps);
    RUN_TEST(test_one_value_cond);
    RUN_TEST(test_example_cond);
    RUN_TEST(test_case);
    RUN_TEST(test_case_side_effects);
    RUN_TEST(test_one_op_cond);
    RUN_TEST(test_with_ops_dependencies);
    RUN_TEST(test_with_tensor_dependencies);
    RUN_TEST(test_with_indexed_slices_dependencies);
    RUN_TEST(test_group);
    RUN_TEST(test_tuple_tensors);
    RUN_TEST(test_tuple_indexed_slices);
    RUN_TEST(test_tuple_control_inputs);
    RUN_TEST(test_valid_cond_context);
    RUN_TEST(test_valid_cond_context_branches);
    TEST_MAIN_END();
}
