/* test_cf_tf_grad.c - TF 1.15's tensorflow/python/kernel_tests/control_flow_ops_py_test.py
 * translated to C, part 3: gradients through tf.cond and tf.while_loop (nested loops
 * and conds, variables and resource variables read in loops, TensorArrays through
 * map_fn, gradients computed inside a branch or a loop body, stop_gradient of loop
 * outputs and inside bodies, training a variable through a loop). Each test cites the
 * TF test method it translates; the values are TF's assertions (or TF's None: a
 * {NULL, 0} gradient).
 *
 * Not translated (and why):
 *  - testWhileGrad_NoGradient: vg_while_loop has no back_prop argument.
 *  - testWhileGrad_ColocateGradients, testGpuResourceAccess: device placement /
 *    colocate_gradients_with_ops.
 *  - testCondComputeGradAfterSessRunFails, testWhileGradGradFail (second-order gradients
 *    of functional_ops.scan: no scan builder), testXLAGradInLoop and the XLA tests:
 *    control flow v2 / XLA only.
 *  - testWhileGrad_EagerResourceVariable, testWhileGrad_ResourceVarInFunctionCall,
 *    testWhileGrad_ResourceVarInNestedFunctionCall, testWhileGrad_ResourceVarInLoopInFunctionCall,
 *    testWhileCondGrad_ResourceVarInFunctionCall: eager mode / tf.function calls.
 *  - testWhileGrad_IndexedSlices, testWhileGrad_SparseTensor: composite loop variables
 *    (Python-level structures).
 *  - testCondGradMultiDevice, testWhileCondGradMultiDevice: the device scopes are left
 *    out (one CPU); their gradient values (and the first's None second derivative, as
 *    TF's v1 control flow gives) are checked.
 *  - testNestedResourceAccess: TF does not assert the v1 gradient ("v1 control flow
 *    gets the wrong answer"); the forward value is checked.
 */
#include "cf_tf_util.h"
#include "kernels_fixture.h"

static vg_output f32v(vg_graph *g, const float *v, int n, const char *name) {
    return vg_const_array(g, VG_FLOAT, (int64_t[]){n}, 1, v, name);
}
#define NONE(o) CHECK((o).op == NULL)

/* map_fn(fn, elems, parallel_iterations) as TF's functional_ops.map_fn builds it: the
 * elements unstacked into a TensorArray, a while loop (maximum_iterations n) that reads
 * element i, applies fn and writes it to a second TensorArray, which is stacked. */
typedef vg_output (*map_fn_t)(vg_graph *g, vg_output x, void *user);
typedef struct map_state {
    map_fn_t fn;
    void *user;
    vg_tensor_array elems;
    vg_output handle;
    vg_dtype out;
    vg_output n;
    vg_shape elem_shape; /* fn's output shape (TF's inferred element shape) */
} map_state;
CF_COND(map_cond, vg_less(g, v[0], ((map_state *)u)->n, NULL))
static vg_code map_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    map_state *m = u;
    vg_output x = vg_tensor_array_read(g, m->elems, v[0], NULL);
    vg_output y = m->fn(g, x, m->user);
    if (!y.op) return VG_INTERNAL;
    m->elem_shape = vg_output_shape(y);
    vg_tensor_array acc = {m->handle, v[1], m->out};
    acc = vg_tensor_array_write(g, acc, v[0], y, NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = acc.flow;
    return VG_OK;
}
static vg_output map_fn(vg_graph *g, map_fn_t fn, void *user, vg_output elems, vg_dtype out, int parallel_iterations) {
    vg_status st;
    vg_graph_push_scope(g, "map");
    vg_shape es = vg_output_shape(elems);
    vg_output n = es.ndims > 0 && es.dims[0] >= 0
                      ? i32c(g, (int)es.dims[0])
                      : vg_strided_slice_c(g, vg_shape_op(g, elems, VG_INT32, NULL), (int32_t[]){0}, (int32_t[]){1},
                                           NULL, 1, &(vg_strided_slice_masks){0, 0, 0, 0, 1}, NULL);
    /* TF's TensorArray(infer_shape=True).unstack(elems) knows its element shape */
    vg_shape el = vg_shape_unknown();
    if (es.ndims > 0) {
        el.ndims = es.ndims - 1;
        for (int i = 1; i < es.ndims; i++) el.dims[i - 1] = es.dims[i];
    }
    vg_tensor_array ta = vg_tensor_array_new(g, vg_output_dtype(elems), n, false, true, &el, "TensorArray");
    ta = vg_tensor_array_unstack(g, ta, elems, NULL);
    vg_tensor_array acc = vg_tensor_array_new(g, out, n, false, true, NULL, "TensorArray_1");
    map_state m = {fn, user, ta, acc.handle, out, n, vg_shape_unknown()};
    vg_output v[2] = {i32c(g, 0), acc.flow}, r[2] = {{NULL, 0}, {NULL, 0}};
    vg_code rc = vg_while_loop(g, map_cond, map_body, &m, v, 2, NULL, parallel_iterations, n, "while", r, &st);
    vg_output res = {NULL, 0};
    if (rc == VG_OK)
        res = vg_tensor_array_stack(g, (vg_tensor_array){acc.handle, r[1], out}, NULL);
    else
        fprintf(stderr, "map_fn: %s\n", st.msg);
    /* r.set_shape([n_static] + element shape) */
    if (res.op && m.elem_shape.ndims >= 0 && m.elem_shape.ndims < VG_MAX_DIMS) {
        int64_t dims[VG_MAX_DIMS];
        dims[0] = es.ndims > 0 ? es.dims[0] : -1;
        for (int i = 0; i < m.elem_shape.ndims; i++) dims[i + 1] = m.elem_shape.dims[i];
        vg_set_shape(res, dims, m.elem_shape.ndims + 1, &st);
    }
    vg_graph_pop_scope(g);
    return res;
}

/* ---- cond ----------------------------------------------------------------------------- */
CF_BRANCH1(br_add1, vg_add(g, ((env *)u)->a, i32c(g, 1), NULL))
CF_BRANCH1(br_sub1, vg_sub(g, ((env *)u)->a, i32c(g, 1), NULL))
CF_BRANCH1(br_a, ((env *)u)->a)
CF_BRANCH1(br_b, ((env *)u)->b)
CF_BRANCH1(br_id_a, vg_identity(g, ((env *)u)->a, NULL))

/* testCondInt: no gradient for an int32 tensor */
static void test_cond_int(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    vg_output p = vg_placeholder(g, VG_BOOL, NULL, 0, "p");
    e.a = i32c(g, 10);
    vg_output y;
    CHECK_OK(vg_cond(g, p, br_add1, br_sub1, &e, 1, &y, NULL, &st), &st);
    NONE(GRAD(g, y, e.a));
    vg_graph_free(g);
}

/* testCondResourceGradShape */
CF_BRANCH1(br_read_a, vg_resource_variable_read_value(g, ((env *)u)->a))
CF_BRANCH1(br_read_b, vg_resource_variable_read_value(g, ((env *)u)->b))
static void test_cond_resource_grad_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_resource_variable rv1 = vg_resource_variable_new(g, "rv1", f32v(g, (float[]){1, 2}, 2, NULL), VG_VAR_TRAINABLE);
    vg_resource_variable rv2 = vg_resource_variable_new(g, "rv2", f32v(g, (float[]){3, 4}, 2, NULL), VG_VAR_TRAINABLE);
    env e = {0};
    e.a = rv1.handle;
    e.b = rv2.handle;
    vg_output r, d[2];
    CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), br_read_a, br_read_b, &e, 1, &r, NULL, &st), &st);
    CHECK_OK(vg_gradients(g, &r, 1, (vg_output[]){rv1.handle, rv2.handle}, 2, NULL, d, &st), &st);
    for (int i = 0; i < 2; i++) {
        CHECK(d[i].op != NULL);
        if (!d[i].op) continue;
        vg_shape s = vg_output_shape(d[i]);
        CHECK(s.ndims == 1 && s.dims[0] == 2);
    }
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    /* TF's test checks the shapes only; rv1's gradient can be run (the taken side),
     * rv2's comes from the untaken branch and is dead, as in TF */
    EXPECT_VEC(s, d[0], 2, ((double[]){1, 1}), NOFEED);
    EXPECT_CODE(s, d[1], VG_INVALID_ARGUMENT, "dead", NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCondWithTensorArrayGrad: map_fn on one side of a cond */
static vg_output times2(vg_graph *g, vg_output z, void *u) {
    (void)u;
    return vg_mul(g, z, f32c(g, 2.0f), NULL);
}
static vg_code br_map(vg_graph *g, void *u, vg_output *o) {
    o[0] = map_fn(g, times2, NULL, ((env *)u)->a, VG_FLOAT, 10);
    return o[0].op ? VG_OK : VG_INTERNAL;
}
CF_BRANCH1(br_ones3, f32v(g, (float[]){1, 1, 1}, 3, NULL))
static void test_cond_with_tensor_array_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output pred = vg_placeholder(g, VG_BOOL, NULL, 0, "pred");
    env e = {0};
    e.a = f32v(g, (float[]){1, 2, 3}, 3, "x");
    vg_output y;
    CHECK_OK(vg_cond(g, pred, br_map, br_ones3, &e, 1, &y, NULL, &st), &st);
    vg_output dx = GRAD(g, y, e.a);
    vg_session *s = cf_session(g);
    EXPECT_VEC(s, dx, 3, ((double[]){2, 2, 2}), FEEDS(fd(pred, 1)));
    EXPECT_VEC(s, dx, 3, ((double[]){0, 0, 0}), FEEDS(fd(pred, 0)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCondResourceGrad (float32 and float64): the untaken side is a constant */
static void test_cond_resource_grad(void) {
    vg_dtype dts[2] = {VG_FLOAT, VG_DOUBLE};
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output init = vg_const_values(g, dts[k], (double[]){7}, 1, NULL, 0, (int64_t[]){1}, 1, false, NULL);
        vg_variable v1 = vg_variable_new(g, "v1", init, VG_VAR_TRAINABLE);
        env e = {0};
        e.a = vg_const_fill(g, dts[k], NULL, 0, 3.0, "age");
        e.b = v1.read;
        vg_output pred = vg_greater(g, e.a, vg_const_fill(g, dts[k], NULL, 0, 4.0, NULL), NULL), r;
        CHECK_OK(vg_cond(g, pred, br_a, br_b, &e, 1, &r, NULL, &st), &st);
        vg_output grad = GRAD(g, r, v1.ref);
        vg_session *s = cf_session(g);
        RUN_INIT(s, g);
        EXPECT_VEC(s, grad, 1, ((double[]){1.0}), NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* The cond of TF's testCondGrad tests on g: c < 2 ? t(e) : f(e); its output. */
static vg_output cond_c_lt_2(vg_graph *g, vg_output c, vg_cond_branch_fn t, vg_cond_branch_fn f, env *e) {
    vg_status st;
    vg_output r = {NULL, 0};
    CHECK_OK(vg_cond(g, vg_less(g, c, i32c(g, 2), NULL), t, f, e, 1, &r, NULL, &st), &st);
    return r;
}

/* y (n values) in a fresh session on g (after the global initializer when init) with
 * the int32 c fed 1, then 3: at1, then at3; frees g. */
static void expect_at_c_1_3(vg_graph *g, bool init, vg_output c, vg_output y, int n, const double *at1,
                            const double *at3, const char *file, int line) {
    vg_session *s = cf_session(g);
    if (s && init) cf_targets(s, (vg_op *[]){vg_global_variables_initializer(g)}, 1, file, line);
    if (s) {
        cf_expect(s, y, FEEDS(fd(c, 1)), at1, n, NULL, -1, 1e-6, file, line);
        cf_expect(s, y, FEEDS(fd(c, 3)), at3, n, NULL, -1, 1e-6, file, line);
    }
    kt_teardown(g, s, NULL, 0, NULL, 0);
}
#define EXPECT_AT_C_1_3(g, init, c, y, n, at1, at3) expect_at_c_1_3(g, init, c, y, n, at1, at3, __FILE__, __LINE__)

/* A trainable resource variable called name of n float ones. */
static vg_resource_variable ones_rvar(vg_graph *g, const char *name, int64_t n) {
    return vg_resource_variable_new(g, name, vg_const_fill(g, VG_FLOAT, &n, 1, 1.0, NULL), VG_VAR_TRAINABLE);
}

/* testCondGrad_1 */
static void test_cond_grad_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_f32(g, 10.0f, "x");
    vg_output r, pred = one_lt_two(g);
    CHECK_OK(vg_cond(g, pred, br_id_a, br_id_a, &e, 1, &r, NULL, &st), &st);
    vg_output grad = GRAD(g, r, e.a);
    EXPECT_VAL_ONCE(g, false, grad, 1.0, NOFEED);
}

/* testCondComputeGradAfterSessRun, testNestedCondComputeGradAfterSessRun: gradients
 * built after the session ran the forward graph */
static vg_code br_x4(vg_graph *g, void *u, vg_output *o) {
    vg_output x = ((env *)u)->a, a = vg_mul(g, x, x, NULL);
    o[0] = vg_mul(g, a, a, NULL);
    return VG_OK;
}
static vg_code br_x2(vg_graph *g, void *u, vg_output *o) {
    vg_output x = ((env *)u)->a;
    o[0] = vg_mul(g, x, x, NULL);
    return VG_OK;
}
static vg_code br_nested_x4(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    return vg_cond(g, vg_const_bool(g, true, NULL), br_x4, br_x2, u, 1, o, NULL, &st);
}
static void test_cond_compute_grad_after_sess_run(void) {
    for (int nested = 0; nested < 2; nested++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        e.a = vg_const_f32(g, 10.0f, "x");
        vg_output r, pred = one_lt_two(g);
        CHECK_OK(vg_cond(g, pred, nested ? br_nested_x4 : br_x4, br_x2, &e, 1, &r, NULL, &st), &st);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, r, 10000.0, NOFEED);
        vg_output grad = GRAD(g, r, e.a);
        EXPECT_VAL(s, grad, 4000.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testCondGrad_2 */
CF_BRANCH1(br_mul_b, vg_mul(g, ((env *)u)->a, ((env *)u)->b, NULL))
CF_BRANCH1(br_mul_c, vg_mul(g, ((env *)u)->a, ((env *)u)->c, NULL))
static void test_cond_grad_2(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = vg_placeholder(g, VG_INT32, NULL, 0, "c");
    env e = {0};
    e.a = f32c(g, 10.0f);
    e.b = f32c(g, 42.0f);
    e.c = f32c(g, 3.0f);
    vg_output r = cond_c_lt_2(g, c, br_mul_b, br_mul_c, &e);
    vg_output grad = GRAD(g, r, e.a);
    EXPECT_AT_C_1_3(g, false, c, grad, 1, ((double[]){42.0}), ((double[]){3.0}));
}

/* testCondGrad_3: a gradient computed inside a branch */
static vg_code br_grad_inside(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    vg_output m = vg_mul(g, e->b, e->b, NULL);
    o[0] = GRAD(g, m, e->a);
    return o[0].op ? VG_OK : VG_INTERNAL;
}
CF_BRANCH1(br_ox3, vg_mul(g, ((env *)u)->a, f32c(g, 3.0f), NULL))
static void test_cond_grad_3(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = vg_placeholder(g, VG_INT32, NULL, 0, "c");
    env e = {0};
    e.a = f32c(g, 10.0f);                      /* ox */
    e.b = vg_mul(g, f32c(g, 7.0f), e.a, NULL); /* y */
    vg_output r = cond_c_lt_2(g, c, br_grad_inside, br_ox3, &e);
    EXPECT_AT_C_1_3(g, false, c, r, 1, ((double[]){980.0}), ((double[]){30.0}));
}

/* testCondGradMultiDevice (one CPU) */
static vg_code br_xy2(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_mul(g, vg_mul(g, e->a, e->b, NULL), f32c(g, 2.0f), NULL);
    return VG_OK;
}
CF_BRANCH1(br_2f, f32c(g, 2.0f))
static void test_cond_grad_multi_device(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output pred = vg_placeholder(g, VG_BOOL, NULL, 0, "pred");
    env e = {0};
    e.a = vg_placeholder(g, VG_FLOAT, NULL, -1, "x");
    e.b = vg_placeholder(g, VG_FLOAT, NULL, -1, "y");
    vg_output z;
    CHECK_OK(vg_cond(g, pred, br_xy2, br_2f, &e, 1, &z, NULL, &st), &st);
    vg_output grad = GRAD(g, z, e.a);
    /* v1 control flow: the second derivative is None (x reaches the gradient only
     * through int32 shapes) */
    NONE(GRAD(g, grad, e.a));
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, grad, 4.0, FEEDS(fd(pred, 1), fd(e.a, 1.0), fd(e.b, 2.0)));
    EXPECT_VAL(s, grad, 0.0, FEEDS(fd(pred, 0), fd(e.a, 1.0), fd(e.b, 2.0)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testNestedCond_Simple */
static vg_code br_inner_cond(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    env *e = u;
    return vg_cond(g, vg_less(g, e->a, f32c(g, 1.0f), NULL), br_a, br_a, u, 1, o, NULL, &st);
}
static void test_nested_cond_simple(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_f32(g, 0.0f, "X");
    vg_output y, z;
    CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), br_a, br_inner_cond, &e, 1, &y, NULL, &st), &st);
    vg_output gy = GRAD(g, y, e.a);
    CHECK_OK(vg_cond(g, vg_const_bool(g, false, NULL), br_a, br_inner_cond, &e, 1, &z, NULL, &st), &st);
    vg_output gz = GRAD(g, z, e.a);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, gy, 1.0, NOFEED);
    EXPECT_VAL(s, gz, 1.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCondGrad_Gather: the gradient of a Gather (IndexedSlices in TF) added to a dense one */
CF_BRANCH1(br_gather11, vg_gather(g, ((env *)u)->a, vg_const_i32_vec(g, (int32_t[]){1, 1}, 2, NULL), 0, NULL))
static void test_cond_grad_gather(void) {
    vg_graph *g = vg_graph_new();
    vg_variable v1 = vg_variable_new(g, "v1", f32v(g, (float[]){1, 42}, 2, NULL), VG_VAR_TRAINABLE);
    vg_output c = vg_placeholder(g, VG_INT32, NULL, 0, "c");
    env e = {0};
    e.a = v1.read;
    vg_output r = cond_c_lt_2(g, c, br_id_a, br_gather11, &e);
    vg_output grad = GRAD(g, r, v1.ref);
    EXPECT_AT_C_1_3(g, true, c, grad, 2, ((double[]){1, 1}), ((double[]){0, 2}));
}

/* The two ResourceVar tests' start: env a = the handle of "var", a trainable [4, 2]
 * resource variable of ones. */
static env var_env(vg_graph *g) {
    env e = {0};
    e.a = vg_resource_variable_new(g, "var", vg_const_fill(g, VG_FLOAT, (int64_t[]){4, 2}, 2, 1.0, NULL),
                                   VG_VAR_TRAINABLE)
              .handle;
    return e;
}

/* testCondGrad_ResourceVarSparseRead */
static vg_code br_sparse_sum(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    vg_output rd = vg_resource_variable_sparse_read(g, e->a, vg_const_i32_vec(g, (int32_t[]){1, 2}, 2, NULL), NULL);
    o[0] = vg_mul(g, e->b, vg_reduce_sum(g, rd, NULL, -1, false, NULL), NULL);
    return VG_OK;
}
CF_BRANCH1(br_zeros23, vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 3}, 2, 0.0, NULL))
static void test_cond_grad_resource_var_sparse_read(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = var_env(g);
    e.b = f32c(g, 1.0f);
    vg_output r;
    CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), br_sparse_sum, br_zeros23, &e, 1, &r, NULL, &st), &st);
    vg_output grad = GRAD(g, r, e.a);
    EXPECT_VEC_ONCE(g, true, grad, 8, ((double[]){0, 0, 1, 1, 1, 1, 0, 0}), NOFEED);
}

/* testCondGrad_MultiGather (built in a tf.function in TF; the graph is the same) */
static vg_code br_mg_t(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_resource_variable_sparse_read(g, e->a, vg_const_i32_vec(g, (int32_t[]){1, 2}, 2, NULL), NULL);
    o[1] = vg_mul(g, vg_gather(g, e->b, vg_const_i32_vec(g, (int32_t[]){2}, 1, NULL), 0, NULL), e->c, NULL);
    o[2] = vg_mul(g, e->c, f32v(g, (float[]){1, 1, 1}, 3, NULL), NULL);
    return VG_OK;
}
static vg_code br_mg_f(vg_graph *g, void *u, vg_output *o) {
    env *e = u;
    o[0] = vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 2}, 2, 0.0, NULL);
    o[1] = vg_mul(g, vg_gather(g, e->b, vg_const_i32_vec(g, (int32_t[]){2}, 1, NULL), 0, NULL), e->c, NULL);
    o[2] = vg_gather(g, e->b, vg_const_i32_vec(g, (int32_t[]){2}, 1, NULL), 0, NULL);
    return VG_OK;
}
static void test_cond_grad_multi_gather(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = var_env(g);
    e.b = vg_const_fill(g, VG_FLOAT, (int64_t[]){3, 3}, 2, 1.0, "x1");
    e.c = vg_const_f32(g, 2.0f, "x2");
    vg_output r[3], d[3];
    CHECK_OK(vg_cond(g, vg_const_bool(g, true, NULL), br_mg_t, br_mg_f, &e, 3, r, NULL, &st), &st);
    CHECK_OK(vg_gradients(g, r, 3, (vg_output[]){e.a, e.b, e.c}, 3, NULL, d, &st), &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VEC(s, d[0], 8, ((double[]){0, 0, 1, 1, 1, 1, 0, 0}), NOFEED);
    EXPECT_VEC(s, d[1], 9, ((double[]){0, 0, 0, 0, 0, 0, 2, 2, 2}), NOFEED);
    EXPECT_VAL(s, d[2], 6.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- while ------------------------------------------------------------------------- */
CF_COND(ltf_100, vg_less(g, v[0], f32c(g, 100.0f), NULL))
CF_BODY1(square_b, vg_square(g, v[0], NULL))
static vg_output square_loop(vg_graph *g, vg_output v) { /* while v < 100: v = v^2 */
    vg_status st;
    vg_output r = {NULL, 0};
    CHECK_OK(vg_while_loop(g, ltf_100, square_b, NULL, &v, 1, NULL, 1, vg_out(NULL, 0), NULL, &r, &st), &st);
    return r;
}

/* testWhileGrad_Square */
static void test_while_grad_square(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.b = vg_const_f32(g, 2.0f, "v");
    e.a = square_loop(g, e.b);
    vg_output r;
    CHECK_OK(vg_cond(g, one_lt_two(g), br_a, br_b, &e, 1, &r, NULL, &st), &st);
    vg_output grad = GRAD(g, r, e.b);
    EXPECT_VAL_ONCE(g, false, grad, 1024.0, NOFEED);
}

/* testWhileGrad_MultipleUses, testWhileGrad_LoopAdd */
static void test_while_grad_multiple_uses_loop_add(void) {
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_output v = vg_const_f32(g, 2.0f, "v");
        vg_output r = square_loop(g, v);
        r = k == 0 ? vg_mul(g, r, r, NULL) : vg_add(g, r, r, NULL);
        vg_output grad = GRAD(g, r, v);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, grad, k == 0 ? 524288.0 : 2048.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileGrad_Shape: x of unknown length */
CF_COND(lt_5, vg_less(g, v[0], i32c(g, 5), NULL))
CF_COUNTED_BODY(mul_x_b, vg_mul(g, ((env *)u)->x, v[1], NULL))
static void test_while_grad_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "x");
    vg_output v[2] = {vg_const_i32(g, 0, "n"), f32v(g, (float[]){2}, 1, "v")}, r[2];
    vg_shape inv[2] = {vg_shape_make(NULL, 0), vg_shape_unknown()};
    CHECK_OK(vg_while_loop(g, lt_5, mul_x_b, &e, v, 2, inv, 1, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output grad = GRAD(g, r[1], e.x);
    if (grad.op) {
        vg_shape gs = vg_output_shape(grad);
        CHECK(gs.ndims == 1 && gs.dims[0] == -1);
    }
    EXPECT_VEC_ONCE(g, false, grad, 2, ((double[]){810, 2560}), FEEDS(fdv(e.x, (double[]){3, 4}, 2)));
}

/* testWhileGrad_BaseShape: a loop that runs no iteration */
CF_COND(never, vg_const_bool(g, false, NULL))
CF_BODY1(mul_x1_b, vg_mul(g, v[0], ((env *)u)->x, NULL))
static void test_while_grad_base_shape(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "x");
    vg_output v0 = f32v(g, (float[]){2, 2}, 2, "v"), r;
    CHECK_OK(vg_while_loop(g, never, mul_x1_b, &e, &v0, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_output y = vg_square(g, e.x, NULL);
    vg_output grad = cf_grad_ex(g, (vg_output[]){r, y}, 2, e.x, NULL, __FILE__, __LINE__);
    EXPECT_VEC_ONCE(g, false, grad, 2, ((double[]){2, 4}), FEEDS(fdv(e.x, (double[]){1, 2}, 2)));
}

/* testWhileGradAfterSessionRun, testNestedWhileGradAfterSessionRun */
CF_COND(always, vg_const_bool(g, true, NULL))
CF_BODY1(vv_b, vg_mul(g, v[0], v[0], NULL))
CF_BODY1(x_times_outer, vg_mul(g, v[0], *(vg_output *)u, NULL))
static vg_code nested_pow_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output outer = v[0], inner_v0 = f32c(g, 1.0f);
    return vg_while_loop(g, always, x_times_outer, &outer, &inner_v0, 1, NULL, 10, i32c(g, 2), NULL, o, &st);
}
static void test_while_grad_after_session_run(void) {
    for (int nested = 0; nested < 2; nested++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output v0 = f32c(g, 2.0f), r;
        CHECK_OK(
            vg_while_loop(g, always, nested ? nested_pow_b : vv_b, NULL, &v0, 1, NULL, 10, i32c(g, 3), NULL, &r, &st),
            &st);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, r, 256.0, NOFEED);
        vg_output grad = GRAD(g, r, v0);
        EXPECT_VAL(s, grad, 1024.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileGrad_Mul (parallel_iterations 1 and 10) */
CF_BODY1(mul_a_b, vg_mul(g, v[0], ((env *)u)->a, NULL))
static void test_while_grad_mul(void) {
    int pis[2] = {1, 10};
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        e.a = vg_const_f32(g, 3.0f, "a");
        vg_output v = vg_const_f32(g, 2.0f, "v"), r, d[2];
        CHECK_OK(vg_while_loop(g, ltf_100, mul_a_b, &e, &v, 1, NULL, pis[k], vg_out(NULL, 0), NULL, &r, &st), &st);
        CHECK_OK(vg_gradients(g, &r, 1, (vg_output[]){e.a, v}, 2, NULL, d, &st), &st);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, d[0], 216.0, NOFEED);
        EXPECT_VAL(s, d[1], 81.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileGradInControlDeps (a tf.function in TF; the same graph) */
CF_COND(lt_2, vg_less(g, v[0], i32c(g, 2), NULL))
CF_COUNTED_BODY(pow2_b, vg_pow(g, v[1], f32c(g, 2.0f), NULL))
static void test_while_grad_in_control_deps(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x_init = f32c(g, 2.0f);
    vg_output v[2] = {i32c(g, 0), x_init}, r[2];
    CHECK_OK(vg_while_loop(g, lt_2, pow2_b, NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_graph_push_control_deps(g, &r[1].op, 1);
    vg_output grad = GRAD(g, r[1], x_init);
    vg_graph_pop_control_deps(g);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, grad, 4.0 * 8.0, NOFEED); /* 4 * x_init^3 */
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testNestedWhileCondWhileGrad (and testNestedWhileCondWhileGradGpu: the same on the CPU) */
CF_COND(lt4i, vg_less(g, v[0], i32c(g, 4), NULL))
CF_COUNTED_BODY(i1_x2_b, vg_mul(g, v[1], f32c(g, 2.0f), NULL))
static vg_output inner_loop_x16(vg_graph *g, vg_output s) { /* 4 iterations of x * 2 */
    vg_status st;
    vg_output v[2] = {i32c(g, 0), s}, r[2] = {{NULL, 0}, {NULL, 0}};
    if (vg_while_loop(g, lt4i, i1_x2_b, NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st) != VG_OK)
        fprintf(stderr, "inner loop: %s\n", st.msg);
    return r[1];
}
static vg_code br_sq_inner(vg_graph *g, void *u, vg_output *o) {
    vg_output in = inner_loop_x16(g, ((env *)u)->a);
    o[0] = vg_square(g, in, NULL);
    return in.op ? VG_OK : VG_INTERNAL;
}
CF_BRANCH1(br_x_times2, vg_mul(g, ((env *)u)->a, f32c(g, 2.0f), NULL))
CF_COND(ltf_128, vg_less(g, v[0], f32c(g, 128.0f), NULL))
static vg_code nwcw_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    env e = {0};
    e.a = v[0];
    return vg_cond(g, vg_const_bool(g, true, NULL), br_sq_inner, br_x_times2, &e, 1, o, NULL, &st);
}
static void test_nested_while_cond_while_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v = f32c(g, 1.0f), r;
    CHECK_OK(vg_while_loop(g, ltf_128, nwcw_b, NULL, &v, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_output grad = GRAD(g, r, v);
    EXPECT_VAL_ONCE(g, false, grad, 512.0, NOFEED);
}

/* testWhileGrad_Variable, testWhileGrad_ResourceVariable */
CF_BODY1(mul_resource_b, vg_mul(g, v[0], vg_resource_variable_read_value(g, ((env *)u)->a), NULL))
static void test_while_grad_variable(void) {
    for (int resource = 0; resource < 2; resource++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        vg_output x;
        if (resource) {
            vg_resource_variable a = vg_resource_variable_new(g, "a", f32c(g, 3.0f), VG_VAR_TRAINABLE);
            e.a = x = a.handle;
        } else {
            vg_variable a = vg_variable_new(g, "a", f32c(g, 3.0f), VG_VAR_TRAINABLE);
            e.a = a.read;
            x = a.ref;
        }
        vg_output v = vg_const_f32(g, 2.0f, "v"), r;
        CHECK_OK(vg_while_loop(g, ltf_100, resource ? mul_resource_b : mul_a_b, &e, &v, 1, NULL, 1, vg_out(NULL, 0),
                               NULL, &r, &st),
                 &st);
        vg_output grad = GRAD(g, r, x);
        vg_session *s = cf_session(g);
        RUN_INIT(s, g);
        EXPECT_VAL(s, grad, 216.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileGrad_ResourceVarSparseRead */
CF_COND(lt_3, vg_less(g, v[0], i32c(g, 3), NULL))
static vg_code sparse_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_output rd =
        vg_resource_variable_sparse_read(g, ((env *)u)->a, vg_const_i32_vec(g, (int32_t[]){1, 3}, 2, NULL), NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = vg_mul(g, v[1], vg_reduce_sum(g, rd, NULL, -1, false, NULL), NULL);
    return VG_OK;
}
static void test_while_grad_resource_var_sparse_read(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_resource_variable var = ones_rvar(g, "var", 5);
    env e = {0};
    e.a = var.handle;
    vg_output v[2] = {i32c(g, 0), f32c(g, 1.0f)}, r[2];
    CHECK_OK(vg_while_loop(g, lt_3, sparse_b, &e, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output grad = GRAD(g, r[1], var.handle);
    EXPECT_VEC_ONCE(g, true, grad, 5, ((double[]){0, 12, 0, 12, 0}), NOFEED);
}

/* testWhileGrad_MultiResourceVarSparseRead */
static vg_code multi_sparse_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    env *e = u;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = vg_resource_variable_sparse_read(g, e->a, vg_const_i32_vec(g, (int32_t[]){1, 3}, 2, NULL), NULL);
    o[2] = vg_mul(g, v[2], f32c(g, 2.0f), NULL);
    vg_output y3 = vg_resource_variable_sparse_read(g, e->b, vg_const_i32_vec(g, (int32_t[]){0}, 1, NULL), NULL);
    o[3] = vg_mul(g, v[3], vg_reduce_sum(g, y3, NULL, -1, false, NULL), NULL);
    return VG_OK;
}
static void test_while_grad_multi_resource_var_sparse_read(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_resource_variable var1 = ones_rvar(g, "var1", 5);
    vg_resource_variable var2 = ones_rvar(g, "var2", 3);
    env e = {0};
    e.a = var1.handle;
    e.b = var2.handle;
    vg_output v[4] = {i32c(g, 0), f32v(g, (float[]){0, 0}, 2, NULL), f32c(g, 1.0f), f32c(g, 1.0f)}, r[4], d[2];
    CHECK_OK(vg_while_loop(g, lt_3, multi_sparse_b, &e, v, 4, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    CHECK_OK(vg_gradients(g, r + 1, 3, (vg_output[]){var1.handle, var2.handle}, 2, NULL, d, &st), &st);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    EXPECT_VEC(s, d[0], 5, ((double[]){0, 1, 0, 1, 0}), NOFEED);
    EXPECT_VEC(s, d[1], 3, ((double[]){3, 0, 0}), NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileGrad_Gather, testWhileGrad_GatherNoFanOut */
static vg_code gather_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_output gx = vg_gather(g, v[1], vg_const_i32_vec(g, (int32_t[]){0}, 1, NULL), 0, NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = u ? gx : vg_add(g, v[1], gx, NULL);
    return VG_OK;
}
static void test_while_grad_gather(void) {
    for (int no_fan_out = 0; no_fan_out < 2; no_fan_out++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output x = vg_const_fill(g, VG_FLOAT, (int64_t[]){5}, 1, 1.0, NULL);
        vg_output x1 = vg_strided_slice_c(g, x, (int32_t[]){0}, (int32_t[]){1}, NULL, 1, NULL, NULL); /* x[:1] */
        vg_output v[2] = {i32c(g, 0), x1}, r[2];
        CHECK_OK(vg_while_loop(g, lt_3, gather_b, no_fan_out ? (void *)1 : NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL,
                               r, &st),
                 &st);
        vg_output z = vg_mul(g, r[1], f32c(g, 3.0f), NULL);
        vg_output grad = GRAD(g, z, x);
        vg_session *s = cf_session(g);
        EXPECT_VEC(s, r[1], 1, ((double[]){no_fan_out ? 1.0 : 8.0}), NOFEED);
        EXPECT_VEC(s, grad, 5, ((double[]){no_fan_out ? 3.0 : 24.0, 0, 0, 0, 0}), NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileGradInCond: a loop and its gradient inside a branch */
CF_COND(ltf_10, vg_less(g, v[0], f32c(g, 10.0f), NULL))
CF_BODY1(add_x_b, vg_add(g, v[0], ((env *)u)->x, NULL))
static vg_code br_loop_grad(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    env *e = u;
    vg_shape inv = vg_shape_unknown();
    vg_output r;
    vg_code rc = vg_while_loop(g, ltf_10, add_x_b, e, &e->a, 1, &inv, 10, vg_out(NULL, 0), NULL, &r, &st);
    if (rc != VG_OK) return rc;
    o[0] = GRAD(g, r, e->x);
    return o[0].op ? VG_OK : VG_INTERNAL;
}
CF_BRANCH1(br_x, ((env *)u)->x)
static void test_while_grad_in_cond(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = vg_const_f32(g, 1.0f, "n");
    e.x = vg_placeholder(g, VG_FLOAT, NULL, -1, "x");
    vg_output r;
    CHECK_OK(vg_cond(g, one_lt_two(g), br_loop_grad, br_x, &e, 1, &r, NULL, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 9.0, FEEDS(fd(e.x, 1.0)));
}

/* testGradInWhileWrtInitialLoopVal: not supported, as in TF */
static vg_code grad_wrt_init_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    vg_output z = vg_mul(g, v[1], f32c(g, 2.0f), NULL), dx = {NULL, 0};
    vg_code rc = vg_gradients(g, &z, 1, &((env *)u)->x, 1, NULL, &dx, &st);
    if (rc != VG_OK) {
        vg_graph_set_error(g, rc, "%s", st.msg);
        return rc;
    }
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = dx;
    return VG_OK;
}
static void test_grad_in_while_wrt_initial_loop_val(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_output y = vg_add(g, e.x, f32c(g, 1.0f), NULL);
    vg_output v[2] = {i32c(g, 0), y}, r[2];
    CHECK_CODE(vg_while_loop(g, lt_3, grad_wrt_init_b, &e, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Cannot compute gradient inside while loop with respect to op 'x'. We do not support "
                               "taking the gradient wrt or through the initial value of a loop variable. Gradients "
                               "can be computed through loop invariants or wrt the input parameters to the loop "
                               "body.");
    vg_graph_free(g);
}

/* testWhileGradInWhile: a loop and its gradient inside a loop body */
CF_COND(ltf_6, vg_less(g, v[0], f32c(g, 6.0f), NULL))
static vg_code loop_grad_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    env *e = u;
    vg_shape inv = vg_shape_unknown();
    vg_output r;
    vg_code rc = vg_while_loop(g, ltf_10, add_x_b, e, v, 1, &inv, 10, vg_out(NULL, 0), NULL, &r, &st);
    if (rc != VG_OK) fprintf(stderr, "inner loop: %s\n", st.msg);
    if (rc != VG_OK) return rc;
    o[0] = GRAD(g, r, e->x);
    return o[0].op ? VG_OK : VG_INTERNAL;
}
static void test_while_grad_in_while(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.x = vg_placeholder(g, VG_FLOAT, NULL, -1, "x");
    vg_output n = vg_const_f32(g, 1.0f, "n"), r;
    vg_shape inv = vg_shape_unknown();
    CHECK_OK(vg_while_loop(g, ltf_6, loop_grad_b, &e, &n, 1, &inv, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r, 9.0, FEEDS(fd(e.x, 1.0)));
}

/* testCondGradInNestedWhiles: the gradient of a cond inside a loop inside a loop */
CF_BRANCH1(br_2x, vg_mul(g, f32c(g, 2.0f), *(vg_output *)u, NULL))
CF_BRANCH1(br_same, *(vg_output *)u)
static vg_code cgnw_inner_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output x = v[1], y;
    vg_code rc = vg_cond(g, vg_less(g, x, f32c(g, 1.0f), NULL), br_2x, br_same, &x, 1, &y, NULL, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = GRAD(g, y, x);
    return o[1].op ? VG_OK : VG_INTERNAL;
}
static vg_code cgnw_outer_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output iv[2] = {i32c(g, 0), f32c(g, 0.0f)}, io[2];
    vg_code rc = vg_while_loop(g, lt_3, cgnw_inner_b, NULL, iv, 2, NULL, 10, vg_out(NULL, 0), NULL, io, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = io[1];
    return VG_OK;
}
static void test_cond_grad_in_nested_whiles(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v[2] = {i32c(g, 0), f32c(g, 0.0f)}, r[2];
    CHECK_OK(vg_while_loop(g, lt_3, cgnw_outer_b, NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r[0], 3, NOFEED);
    EXPECT_VAL(s, r[1], 1.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testNestedResourceAccess (the forward value) */
static vg_code lt_3j(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) { return lt_3(g, v, n, u, p); }
CF_COUNTED_BODY(sq_var_b, vg_add(g, v[1], vg_square(g, vg_resource_variable_read_value(g, *(vg_output *)u), NULL), NULL))
typedef struct nra {
    vg_output var, y;
} nra;
static vg_code br_nra_loop(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    nra *a = u;
    vg_output v[2] = {i32c(g, 0), a->y}, r[2];
    vg_code rc = vg_while_loop(g, lt_3j, sq_var_b, &a->var, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st);
    o[0] = r[1];
    return rc;
}
CF_BRANCH1(br_0f, f32c(g, 0.0f))
static vg_code nra_outer_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    nra a = {*(vg_output *)u, v[1]};
    vg_output c;
    vg_code rc = vg_cond(g, vg_const_bool(g, true, NULL), br_nra_loop, br_0f, &a, 1, &c, NULL, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = vg_add(g, v[1], c, NULL);
    return VG_OK;
}
static void test_nested_resource_access(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_resource_variable var = vg_resource_variable_new(g, "var", f32c(g, 3.0f), VG_VAR_TRAINABLE);
    vg_output v[2] = {i32c(g, 0), f32c(g, 0.0f)}, r[2];
    CHECK_OK(vg_while_loop(g, lt_2, nra_outer_b, &var.handle, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    EXPECT_VAL_ONCE(g, true, r[1], 81.0, NOFEED);
}

/* testWhileGrad_ys_xs */
static vg_code ys_xs_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_output y1 = vg_add(g, v[0], v[1], NULL);
    o[0] = vg_mul(g, v[0], y1, NULL);
    o[1] = y1;
    return VG_OK;
}
static void test_while_grad_ys_xs(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_const_f32(g, 3.0f, "x"), y = vg_const_f32(g, 2.0f, "y");
    vg_output v[2] = {x, y}, r[2];
    CHECK_OK(vg_while_loop(g, ltf_100, ys_xs_b, NULL, v, 2, NULL, 1, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output d1 = cf_grad_ex(g, r, 2, x, NULL, __FILE__, __LINE__);
    vg_output d2 = cf_grad_ex(g, r, 2, y, NULL, __FILE__, __LINE__);
    vg_output d3 = cf_grad_ex(g, r, 1, x, NULL, __FILE__, __LINE__);
    vg_output d4 = cf_grad_ex(g, r, 1, y, NULL, __FILE__, __LINE__);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, d1, 304.0, NOFEED);
    EXPECT_VAL(s, d2, 124.0, NOFEED);
    EXPECT_VAL(s, d3, 295.0, NOFEED);
    EXPECT_VAL(s, d4, 120.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileGrad_Dependency: an int32 loop output among the ys */
CF_COND(lt_10, vg_less(g, v[0], i32c(g, 10), NULL))
static vg_code x2_i1_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    o[1] = vg_mul(g, v[1], f32c(g, 2.0f), NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    return VG_OK;
}
static void test_while_grad_dependency(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_const_f32(g, 2.0f, "x");
    vg_output v[2] = {vg_const_i32(g, 0, "i"), x}, r[2];
    CHECK_OK(vg_while_loop(g, lt_10, x2_i1_b, NULL, v, 2, NULL, 1, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output d1 = cf_grad_ex(g, r, 2, x, NULL, __FILE__, __LINE__);
    vg_output d2 = GRAD(g, r[1], x);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, d1, 1024.0, NOFEED);
    EXPECT_VAL(s, d2, 1024.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileGrad_NoDependency: a variable passed through the loop unchanged */
static vg_code pass_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = v[1];
    o[2] = v[1];
    return VG_OK;
}
static void test_while_grad_no_dependency(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable variable =
        vg_variable_new(g, "Variable", vg_const_fill(g, VG_FLOAT, (int64_t[]){2, 3}, 2, 1.0, NULL), VG_VAR_TRAINABLE);
    vg_output duration = vg_const_fill(g, VG_INT32, NULL, 0, 0, "zeros");
    vg_output v[3] = {duration, variable.read, variable.read}, r[3];
    CHECK_OK(vg_while_loop(g, lt_10, pass_b, NULL, v, 3, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output cost = vg_reduce_sum(g, r[2], NULL, -1, false, NULL);
    vg_output grad = GRAD(g, cost, variable.ref);
    EXPECT_VEC_ONCE(g, true, grad, 6, ((double[]){1, 1, 1, 1, 1, 1}), NOFEED);
}

/* testWhileGrad_Const: the loop replaces the variable by a constant: a zero gradient */
CF_COND(lt_1, vg_less(g, v[0], i32c(g, 1), NULL))
CF_COUNTED_BODY(ret_c1_b, *(vg_output *)u)
static void test_while_grad_const(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output c0 = vg_const_f32(g, 0.0f, "c0"), c1 = vg_const_f32(g, 1.0f, "c1");
    vg_output v[2] = {vg_const_i32(g, 0, "t"), c0}, r[2];
    CHECK_OK(vg_while_loop(g, lt_1, ret_c1_b, &c1, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output cost = vg_reduce_sum(g, r[1], NULL, -1, false, NULL);
    vg_output grad = GRAD(g, cost, c0);
    EXPECT_VAL_ONCE(g, false, grad, 0.0, NOFEED);
}

/* testWhileGrad_SerialTwoLoops, testWhileGrad_ParallelTwoLoops */
static vg_output x2_5times(vg_graph *g, vg_output i, vg_output x) {
    vg_status st;
    vg_output v[2] = {i, x}, r[2] = {{NULL, 0}, {NULL, 0}};
    CHECK_OK(vg_while_loop(g, lt_5, x2_i1_b, NULL, v, 2, NULL, 1, vg_out(NULL, 0), NULL, r, &st), &st);
    return r[1];
}
static void test_while_grad_two_loops(void) {
    for (int parallel = 0; parallel < 2; parallel++) {
        vg_graph *g = vg_graph_new();
        vg_output i = vg_const_i32(g, 0, "i"), x = vg_const_f32(g, 2.0f, "x"), rx;
        if (parallel)
            rx = vg_add(g, x2_5times(g, i, x), x2_5times(g, i, x), NULL);
        else
            rx = x2_5times(g, i, x2_5times(g, i, x));
        vg_output grad = GRAD(g, rx, x);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, grad, parallel ? 64.0 : 1024.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileGrad_OneOutputWithControlDependencyOnSecond */
static vg_code one_out_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    o[0] = vg_add(g, v[0], i32c(g, 1), "inc");
    o[1] = vg_identity(g, v[1], "xi");
    o[2] = vg_add(g, v[1], v[2], "xi_plus_yi");
    return VG_OK;
}
static void test_while_grad_one_output_with_control_dependency(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_const_f32(g, 1.0f, "x"), y = vg_const_f32(g, 1.0f, "y");
    vg_output v[3] = {vg_const_i32(g, 0, "i"), x, y}, r[3];
    CHECK_OK(vg_while_loop(g, lt_1, one_out_b, NULL, v, 3, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output y_f_d = with_deps(g, &r[1].op, 1, r[2], "y_f_d");
    vg_output grad = GRAD(g, y_f_d, x);
    CHECK(grad.op != NULL);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, y_f_d, 2.0, NOFEED);
    EXPECT_VAL(s, grad, 1.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testNestedWhileGrad_Simple */
CF_COND(ltf_4, vg_less(g, v[0], f32c(g, 4.0f), NULL))
CF_COND(ltf_2, vg_less(g, v[0], f32c(g, 2.0f), NULL))
CF_BODY1(times2_b, vg_mul(g, v[0], f32c(g, 2.0f), NULL))
static vg_code nws_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output in;
    vg_code rc = vg_while_loop(g, ltf_4, times2_b, NULL, v, 1, NULL, 10, vg_out(NULL, 0), NULL, &in, &st);
    o[0] = vg_mul(g, in, f32c(g, 2.0f), NULL);
    return rc;
}
static void test_nested_while_grad_simple(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v = f32c(g, 1.0f), r;
    CHECK_OK(vg_while_loop(g, ltf_2, nws_b, NULL, &v, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
    vg_output grad = GRAD(g, r, v);
    EXPECT_VAL_ONCE(g, false, grad, 8.0, NOFEED);
}

/* testNestedWhileGrad_SerialInner, testNestedWhileGrad_ParallelInner */
static vg_code serial_inner_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    if (u) { /* parallel */
        vg_output a = inner_loop_x16(g, v[0]), b = inner_loop_x16(g, v[0]);
        o[0] = vg_mul(g, a, b, NULL);
        return a.op && b.op ? VG_OK : VG_INTERNAL;
    }
    vg_output a = inner_loop_x16(g, v[0]);
    o[0] = a.op ? inner_loop_x16(g, a) : a;
    return o[0].op ? VG_OK : VG_INTERNAL;
}
static void test_nested_while_grad_serial_parallel_inner(void) {
    for (int parallel = 0; parallel < 2; parallel++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output v = f32c(g, 1.0f), r;
        CHECK_OK(vg_while_loop(g, ltf_128, serial_inner_b, parallel ? (void *)1 : NULL, &v, 1, NULL, 10,
                               vg_out(NULL, 0), NULL, &r, &st),
                 &st);
        vg_output grad = GRAD(g, r, v);
        vg_session *s = cf_session(g);
        EXPECT_VAL(s, grad, parallel ? 512.0 : 256.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testNestedWhileGrad_ParallelIterations: nested map_fn (parallel_iterations 10)
 * trained by Adam */
static vg_output plus_var_sq(vg_graph *g, vg_output n, void *u) {
    return vg_add(g, n, vg_square(g, *(vg_output *)u, NULL), NULL);
}
static vg_output inner_map(vg_graph *g, vg_output t, void *u) { return map_fn(g, plus_var_sq, u, t, VG_FLOAT, 10); }
static void test_nested_while_grad_parallel_iterations(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable var = vg_variable_new(g, "Variable", f32c(g, 3.0f), VG_VAR_TRAINABLE);
    float in[6] = {1, 2, 3, 4, 5, 6};
    vg_output inp = vg_const_array(g, VG_FLOAT, (int64_t[]){3, 2}, 2, in, NULL);
    vg_output res = map_fn(g, inner_map, &var.read, inp, VG_FLOAT, 10);
    vg_output loss = vg_reduce_mean(g, vg_square(g, res, NULL), NULL, -1, false, NULL);
    vg_optimizer *opt = vg_optimizer_new_adam(0.001, 0.9, 0.999, 1e-8);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_out(NULL, 0), NULL);
    vg_optimizer_free(opt);
    CHECK(train != NULL);
    if (!train) fprintf(stderr, "%s\n", (vg_graph_status(g, &st), st.msg));
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    RUN_TARGET(s, train);
    EXPECT_VAL(s, var.read, 2.999, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileCondGrad_Simple, testWhileCondGrad_UnknownShape */
CF_COND(lt_n, vg_less(g, v[0], ((env *)u)->b, NULL))
CF_BRANCH1(br_sq, vg_square(g, ((env *)u)->a, NULL))
CF_BRANCH1(br_minus_one, vg_sub(g, ((env *)u)->a, ((env *)u)->c, NULL))
static vg_code wcg_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    env e = *(env *)u;
    e.a = v[0];
    return vg_cond(g, vg_const_bool(g, true, NULL), br_sq, br_minus_one, &e, 1, o, NULL, &st);
}
static void test_while_cond_grad_simple_unknown_shape(void) {
    for (int unknown = 0; unknown < 2; unknown++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        env e = {0};
        vg_output v = unknown ? vg_placeholder(g, VG_FLOAT, NULL, -1, "v") : vg_const_f32(g, 2.0f, "v"), r;
        e.b = vg_const_f32(g, 100.0f, "n");
        e.c = vg_const_f32(g, 1.0f, "one");
        CHECK_OK(vg_while_loop(g, lt_n, wcg_b, &e, &v, 1, NULL, 10, vg_out(NULL, 0), NULL, &r, &st), &st);
        vg_output grad = GRAD(g, r, v);
        vg_session *s = cf_session(g);
        if (unknown)
            EXPECT_VAL(s, grad, 1024.0, FEEDS(fd(v, 2.0)));
        else
            EXPECT_VAL(s, grad, 1024.0, NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testWhileGrad_Concat: SGD through a loop that concatenates a variable */
CF_COUNTED_BODY(concat_x_b, vg_concat(g, (vg_output[]){v[1], *(vg_output *)u}, 2, i32c(g, 0), NULL))
static void test_while_grad_concat(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    float xv[2] = {1, 2};
    /* get_variable("x", initializer=[[1., 2.]]): the value is the initial value */
    vg_variable x =
        vg_variable_new(g, "x", vg_const_array(g, VG_FLOAT, (int64_t[]){1, 2}, 2, xv, NULL), VG_VAR_TRAINABLE);
    vg_output v[2] = {i32c(g, 0), vg_const_fill(g, VG_FLOAT, (int64_t[]){0, 2}, 2, 0.0, NULL)}, r[2];
    vg_shape inv[2] = {vg_shape_make(NULL, 0), vg_shape_make((int64_t[]){-1, 2}, 2)};
    CHECK_OK(vg_while_loop(g, lt_2, concat_x_b, &x.read, v, 2, inv, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output sum = vg_reduce_sum(g, r[1], NULL, -1, false, NULL);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.01);
    vg_op *op = vg_optimizer_minimize(opt, g, sum, NULL, 0, vg_out(NULL, 0), NULL);
    vg_optimizer_free(opt);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    RUN_TARGET(s, op);
    EXPECT_VEC(s, x.read, 2, ((double[]){0.98000002, 1.98000002}), NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileWithRefsWithGradients_1: a ref loop variable, grad_ys from an int variable */
CF_COUNTED_BODY(ref_b, vg_identity(g, v[1], NULL))
static void test_while_with_refs_with_gradients_1(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable x = vg_variable_new(g, "x", f32c(g, 0.0f), VG_VAR_TRAINABLE);
    vg_output v[2] = {i32c(g, 0), x.ref}, r[2];
    CHECK_OK(vg_while_loop(g, lt_10, ref_b, NULL, v, 2, NULL, 5, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_variable gy = vg_variable_new(g, "gy", i32c(g, 73), 0);
    vg_output grad = cf_grad_ex(g, &r[1], 1, x.ref, &gy.ref, __FILE__, __LINE__);
    vg_session *s = cf_session(g);
    RUN_INIT(s, g);
    vg_tensor *t[3] = {NULL, NULL, NULL};
    if (grad.op) {
        CHECK_OK(cf_run(s, (vg_output[]){r[0], r[1], grad}, t, 3, NULL, 0, NOFEED, &st), &st);
        if (t[0] && t[1] && t[2]) {
            CHECK_EQ_INT(get(t[0], 0), 10);
            CHECK_EQ_INT(get(t[1], 0), 0);
            CHECK_EQ_INT(get(t[2], 0), 73);
        }
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(t[i]);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testCallGradInLoop: a gradient of outside tensors computed in the body */
static vg_code call_grad_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    env *e = u;
    vg_output data = vg_mul(g, f32v(g, (float[]){1, 2, 3}, 3, NULL), e->b, NULL);
    vg_output dp = GRAD(g, data, e->a);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = vg_add(g, v[1], dp, NULL);
    return dp.op ? VG_OK : VG_INTERNAL;
}
static void test_call_grad_in_loop(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    env e = {0};
    e.a = f32c(g, 5.0f);
    e.b = vg_square(g, e.a, NULL);
    vg_output v[2] = {i32c(g, 0), f32c(g, 0.0f)}, r[2];
    CHECK_OK(vg_while_loop(g, lt_10, call_grad_b, &e, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    EXPECT_VAL_ONCE(g, false, r[1], 600.0, NOFEED);
}

/* testWhileAndTensorArray: map_fn in a loop body, differentiated */
static vg_output times_param(vg_graph *g, vg_output x, void *u) { return vg_mul(g, x, *(vg_output *)u, NULL); }
static vg_code map_in_loop_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = map_fn(g, times_param, u, v[1], VG_FLOAT, 10);
    return o[1].op ? VG_OK : VG_INTERNAL;
}
static void test_while_and_tensor_array(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output param = f32c(g, 2.0f);
    vg_output v[2] = {i32c(g, 0), f32v(g, (float[]){1, 2, 3, 4, 5, 6}, 6, "elems")}, r[2];
    CHECK_OK(vg_while_loop(g, lt_10, map_in_loop_b, &param, v, 2, NULL, 1, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output grad = cf_grad_ex(g, r, 2, param, NULL, __FILE__, __LINE__);
    EXPECT_VAL_ONCE(g, false, grad, 107520.0, NOFEED);
}

/* ---- stop_gradient ---------------------------------------------------------------------- */
static vg_code stop_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_output y1 = vg_square(g, v[1], u ? "stopped" : NULL);
    if (u) y1 = vg_stop_gradient(g, y1, NULL);
    o[0] = vg_add(g, vg_square(g, v[0], NULL), y1, NULL);
    o[1] = y1;
    return VG_OK;
}
CF_COND(sum_lt_100, vg_less(g, vg_reduce_sum(g, v[0], NULL, -1, false, NULL), f32c(g, 100.0f), NULL))

/* testWhileGrad_StopGrad */
static void test_while_grad_stop_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_const_f32(g, 3.0f, "x"), y = vg_const_f32(g, 2.0f, "y");
    vg_output v[2] = {x, y}, r[2];
    CHECK_OK(vg_while_loop(g, ltf_100, stop_b, NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output rx = r[0], ry = r[1];
    vg_output d1 = GRAD(g, rx, y), d2 = GRAD(g, ry, y);
    NONE(GRAD(g, vg_stop_gradient(g, rx, NULL), y));
    NONE(GRAD(g, vg_stop_gradient(g, ry, NULL), y));
    NONE(GRAD(g, vg_stop_gradient(g, vg_square(g, rx, NULL), NULL), y));
    NONE(GRAD(g, vg_stop_gradient(g, vg_add(g, rx, ry, NULL), NULL), x));
    NONE(GRAD(g, vg_stop_gradient(g, vg_add(g, rx, ry, NULL), NULL), y));
    vg_output d3 = GRAD(g, vg_add(g, rx, ry, NULL), y);
    vg_output d4 = GRAD(g, vg_add(g, rx, vg_stop_gradient(g, ry, NULL), NULL), y);
    vg_output d5 = GRAD(g, vg_add(g, vg_stop_gradient(g, rx, NULL), ry, NULL), y);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, d1, 136.0, NOFEED);
    EXPECT_VAL(s, d2, 32.0, NOFEED);
    EXPECT_VAL(s, d3, 168.0, NOFEED);
    EXPECT_VAL(s, d4, 136.0, NOFEED);
    EXPECT_VAL(s, d5, 32.0, NOFEED);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileGrad_StopGradInside, testWhileGrad_StopGradInsideNoShape */
static void test_while_grad_stop_grad_inside(void) {
    for (int noshape = 0; noshape < 2; noshape++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output x = noshape ? vg_placeholder(g, VG_FLOAT, NULL, -1, "x") : vg_const_f32(g, 3.0f, "x");
        vg_output y = noshape ? vg_placeholder(g, VG_FLOAT, NULL, -1, "y") : vg_const_f32(g, 2.0f, "y");
        vg_output v[2] = {x, y}, r[2];
        CHECK_OK(vg_while_loop(g, noshape ? sum_lt_100 : ltf_100, stop_b, (void *)1, v, 2, NULL, 10, vg_out(NULL, 0),
                               NULL, r, &st),
                 &st);
        vg_output gy = GRAD(g, r[0], y), gx = GRAD(g, r[0], x);
        vg_session *s = cf_session(g);
        if (noshape) {
            EXPECT_VEC(s, gy, 2, ((double[]){0, 0}), FEEDS(fdv(x, (double[]){3, 4}, 2), fdv(y, (double[]){2, 3}, 2)));
            EXPECT_VEC(s, gx, 2, ((double[]){156, 400}),
                       FEEDS(fdv(x, (double[]){3, 4}, 2), fdv(y, (double[]){2, 3}, 2)));
            for (int i = 0; i < vg_graph_num_ops(g); i++)
                CHECK(!strstr(vg_op_name(vg_graph_op(g, i)), "gradients/while/stopped_grad"));
        } else {
            EXPECT_VAL(s, gy, 0.0, NOFEED);
            EXPECT_VAL(s, gx, 156.0, NOFEED);
        }
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testStopGradOnWhileGrad */
CF_BODY1(mul_y_b, vg_mul(g, v[0], *(vg_output *)u, NULL))
static void test_stop_grad_on_while_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_const_f32(g, 2.0f, "x"), y = vg_const_f32(g, 2.0f, "y"), rx;
    CHECK_OK(vg_while_loop(g, ltf_100, mul_y_b, &y, &x, 1, NULL, 10, vg_out(NULL, 0), NULL, &rx, &st), &st);
    vg_output rg = vg_stop_gradient(g, GRAD(g, rx, y), NULL);
    vg_output r = vg_add(g, vg_add(g, vg_square(g, y, NULL), rx, NULL), rg, NULL);
    vg_output grad = GRAD(g, r, y);
    EXPECT_VAL_ONCE(g, false, grad, 388.0, NOFEED);
}

/* testWhileGradientWithNontrainablePath1, testWhileGradientWithNontrainablePath2 */
typedef struct path_env {
    vg_output q;
    int which;
} path_env;
CF_COND(path_c2, ((path_env *)u)->which == 2 ? vg_equal(g, v[1], f32c(g, 0.0f), NULL) : vg_const_bool(g, false, NULL))
static vg_code path_b2(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    path_env *pe = u;
    o[0] = pe->which == 2 ? vg_const_i64(g, 0, NULL) : v[0];
    o[1] = vg_add(g, vg_cast(g, v[0], VG_FLOAT, NULL), vg_reduce_sum(g, pe->q, NULL, -1, false, NULL), NULL);
    return VG_OK;
}
static void test_while_gradient_with_nontrainable_path(void) {
    for (int which = 1; which <= 2; which++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_variable q = vg_variable_new(g, "q", f32v(g, (float[]){7, 8}, 2, NULL), VG_VAR_TRAINABLE);
        path_env pe = {q.read, which};
        vg_output v[2] = {vg_argmin(g, q.read, 0, VG_INT64, NULL), f32c(g, 0.0f)}, r[2];
        CHECK_OK(vg_while_loop(g, path_c2, path_b2, &pe, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
        vg_output dy_dq = GRAD(g, r[1], q.ref);
        CHECK(dy_dq.op != NULL);
        vg_session *s = cf_session(g);
        RUN_TARGET(s, q.initializer);
        EXPECT_VEC(s, dy_dq, 2, ((double[]){which == 2 ? 1.0 : 0.0, which == 2 ? 1.0 : 0.0}), NOFEED);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* testIssue16504: a gradient inside the body, then the gradient of the loop output */
typedef struct i16504 {
    vg_output c;
} i16504;
CF_COND(i16504_c,
        vg_logical_and(g, vg_less(g, v[0], i32c(g, 10), NULL), vg_greater(g, v[2], f32c(g, 1e-3f), NULL), NULL))
static vg_code i16504_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_output c = ((i16504 *)u)->c, w = v[1];
    vg_output loss = vg_neg(g, vg_reduce_sum(g, vg_mul(g, w, c, NULL), NULL, -1, false, NULL), NULL);
    vg_output grad = GRAD(g, loss, w);
    if (!grad.op) return VG_INTERNAL;
    vg_output w_n = vg_mul(g, w, vg_exp(g, vg_mul(g, f32c(g, -0.1f), grad, NULL), NULL), NULL);
    w_n = vg_div(g, w_n, vg_reduce_sum(g, w_n, NULL, -1, false, NULL), NULL);
    vg_output chg = vg_div(g, vg_reduce_sum(g, vg_abs(g, vg_sub(g, w_n, w, NULL), NULL), NULL, -1, false, NULL),
                           vg_reduce_sum(g, vg_abs(g, w, NULL), NULL, -1, false, NULL), NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = w_n;
    o[2] = chg;
    return VG_OK;
}
static void test_issue_16504(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    float cv[100];
    for (int i = 0; i < 100; i++) cv[i] = (float)i;
    i16504 d = {vg_const_array(g, VG_FLOAT, (int64_t[]){100}, 1, cv, NULL)};
    vg_variable wv =
        vg_variable_new(g, NULL, vg_const_fill(g, VG_FLOAT, (int64_t[]){100}, 1, 1.0, NULL), VG_VAR_TRAINABLE);
    vg_output w = vg_div(g, wv.read, f32c(g, 100.0f), NULL);
    vg_variable k = vg_variable_new(g, NULL, i32c(g, 0), VG_VAR_TRAINABLE);
    vg_output v[3] = {k.read, w, f32c(g, INFINITY)}, r[3];
    CHECK_OK(vg_while_loop(g, i16504_c, i16504_b, &d, v, 3, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    vg_output grad = GRAD(g, r[1], d.c);
    CHECK(grad.op != NULL);
    vg_graph_free(g);
}

/* testStopGradMultiFlows: a variable made in the body (outside the loop, as TF's
 * init_scope), the norm of one gradient stopped and added to the loss */
static vg_code lt_1b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) { return lt_1(g, v, n, u, p); }
static vg_code multi_flows_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_variable x = vg_get_variable(g, "x", VG_FLOAT, NULL, 0, vg_init_ones(), VG_VAR_TRAINABLE);
    vg_output y = vg_mul(g, v[1], x.read, NULL);
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    o[1] = y;
    o[2] = vg_add(g, v[2], vg_reduce_sum(g, y, NULL, -1, false, NULL), NULL);
    return x.var ? VG_OK : VG_INTERNAL;
}
static void test_stop_grad_multi_flows(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v[3] = {i32c(g, 0), vg_const_fill(g, VG_FLOAT, (int64_t[]){5}, 1, 1.0, NULL), f32c(g, 0.0f)}, r[3];
    CHECK_OK(vg_while_loop(g, lt_1b, multi_flows_b, NULL, v, 3, NULL, 10, vg_out(NULL, 0), NULL, r, &st), &st);
    int nvars = 0;
    const vg_output *vars = vg_graph_collection(g, "variables", &nvars);
    CHECK_EQ_INT(nvars, 1);
    if (nvars < 1) {
        vg_graph_free(g);
        return;
    }
    vg_output var = vars[0];
    vg_output gr = GRAD(g, r[2], var);
    vg_output norm = vg_sqrt(g, vg_reduce_sum(g, vg_square(g, gr, NULL), NULL, -1, false, NULL), NULL);
    vg_output z = vg_add(g, r[2], vg_stop_gradient(g, vg_reduce_sum(g, norm, NULL, -1, false, NULL), NULL), NULL);
    vg_output result = GRAD(g, z, var);
    EXPECT_VAL_ONCE(g, true, result, 5.0, NOFEED);
}

/* testCondWhile_3: a loop on one side of a cond, differentiated */
static vg_code br_loop_n(vg_graph *g, void *u, vg_output *o) {
    vg_status st;
    return vg_while_loop(g, ltf_10, add_x_b, u, &((env *)u)->a, 1, NULL, 10, vg_out(NULL, 0), NULL, o, &st);
}
CF_BRANCH1(br_n_times2, vg_mul(g, ((env *)u)->a, f32c(g, 2.0f), NULL))
static void test_cond_while_3(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output p = vg_placeholder(g, VG_BOOL, NULL, -1, "p");
    env e = {0};
    e.a = f32c(g, 0.0f);
    e.x = f32c(g, 1.0f);
    vg_output r;
    CHECK_OK(vg_cond(g, p, br_loop_n, br_n_times2, &e, 1, &r, NULL, &st), &st);
    vg_output r1 = GRAD(g, r, e.a);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, r, 10.0, FEEDS(fd(p, 1)));
    EXPECT_VAL(s, r1, 1.0, FEEDS(fd(p, 1)));
    EXPECT_VAL(s, r, 0.0, FEEDS(fd(p, 0)));
    EXPECT_VAL(s, r1, 2.0, FEEDS(fd(p, 0)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* testWhileCondGradMultiDevice (one CPU) */
CF_BRANCH1(br_x2f, vg_mul(g, *(vg_output *)u, f32c(g, 2.0f), NULL))
CF_BRANCH1(br_10f, f32c(g, 10.0f))
static vg_code wcgmd_b(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    vg_status st;
    vg_output x = v[1];
    o[0] = vg_add(g, v[0], i32c(g, 1), NULL);
    return vg_cond(g, *(vg_output *)u, br_x2f, br_10f, &x, 1, &o[1], NULL, &st);
}
static void test_while_cond_grad_multi_device(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output pred = vg_placeholder(g, VG_BOOL, NULL, 0, "pred");
    vg_output x_init = f32c(g, 1.0f);
    vg_output v[2] = {i32c(g, 0), x_init}, z[2];
    CHECK_OK(vg_while_loop(g, lt_3, wcgmd_b, &pred, v, 2, NULL, 10, vg_out(NULL, 0), NULL, z, &st), &st);
    vg_output grad = cf_grad_ex(g, z, 2, x_init, NULL, __FILE__, __LINE__);
    vg_session *s = cf_session(g);
    EXPECT_VAL(s, grad, 8.0, FEEDS(fd(pred, 1)));
    EXPECT_VAL(s, grad, 0.0, FEEDS(fd(pred, 0)));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

int main(void) {
    RUN_TEST(test_cond_int);
    RUN_TEST(test_cond_resource_grad_shape);
    RUN_TEST(test_cond_with_tensor_array_grad);
    RUN_TEST(test_cond_resource_grad);
    RUN_TEST(test_cond_grad_1);
    RUN_TEST(test_cond_compute_grad_after_sess_run);
    RUN_TEST(test_cond_grad_2);
    RUN_TEST(test_cond_grad_3);
    RUN_TEST(test_cond_grad_multi_device);
    RUN_TEST(test_nested_cond_simple);
    RUN_TEST(test_cond_grad_gather);
    RUN_TEST(test_cond_grad_resource_var_sparse_read);
    RUN_TEST(test_cond_grad_multi_gather);
    RUN_TEST(test_cond_while_3);
    RUN_TEST(test_while_cond_grad_multi_device);
    RUN_TEST(test_while_grad_square);
    RUN_TEST(test_while_grad_multiple_uses_loop_add);
    RUN_TEST(test_while_grad_shape);
    RUN_TEST(test_while_grad_base_shape);
    RUN_TEST(test_while_grad_after_session_run);
    RUN_TEST(test_while_grad_mul);
    RUN_TEST(test_while_grad_in_control_deps);
    RUN_TEST(test_nested_while_cond_while_grad);
    RUN_TEST(test_while_grad_variable);
    RUN_TEST(test_while_grad_resource_var_sparse_read);
    RUN_TEST(test_while_grad_multi_resource_var_sparse_read);
    RUN_TEST(test_while_grad_gather);
    RUN_TEST(test_while_grad_in_cond);
    RUN_TEST(test_grad_in_while_wrt_initial_loop_val);
    RUN_TEST(test_while_grad_in_while);
    RUN_TEST(test_cond_grad_in_nested_whiles);
    RUN_TEST(test_nested_resource_access);
    RUN_TEST(test_while_grad_ys_xs);
    RUN_TEST(test_while_grad_dependency);
    RUN_TEST(test_while_grad_no_dependency);
    RUN_TEST(test_while_grad_const);
    RUN_TEST(test_while_grad_two_loops);
    RUN_TEST(test_while_grad_one_output_with_control_dependency);
    RUN_TEST(test_nested_while_grad_simple);
    RUN_TEST(test_nested_while_grad_serial_parallel_inner);
    RUN_TEST(test_nested_while_grad_parallel_iterations);
    RUN_TEST(test_while_cond_grad_simple_unknown_shape);
    RUN_TEST(test_while_grad_concat);
    RUN_TEST(test_while_with_refs_with_gradients_1);
    RUN_TEST(test_call_grad_in_loop);
    RUN_TEST(test_while_and_tensor_array);
    RUN_TEST(test_while_grad_stop_grad);
    RUN_TEST(test_while_grad_stop_grad_inside);
    RUN_TEST(test_stop_grad_on_while_grad);
    RUN_TEST(test_while_gradient_with_nontrainable_path);
    RUN_TEST(test_issue_16504);
    RUN_TEST(test_stop_grad_multi_flows);
    TEST_MAIN_END();
}
