/* test_array_basic.c - forward values and error paths of the array family's basic ops:
 * Const and its helpers, Placeholder (fed / not fed), PlaceholderWithDefault,
 * Identity, StopGradient, NoOp/group, Reshape, Shape, Size, Rank, Fill, ZerosLike,
 * OnesLike, ExpandDims, Squeeze, Range, Where, BroadcastGradientArgs,
 * InvertPermutation; build-time shapes and TF's op names; allocation failures. */
#include "test_util.h"
#include "op_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------ */

static void expect_shape(vg_output o, const int64_t *dims, int nd) {
    vg_shape s = vg_output_shape(o);
    CHECK_EQ_INT(s.ndims, nd);
    for (int i = 0; i < nd && i < s.ndims; i++) CHECK_EQ_INT(s.dims[i], dims[i]);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

/* ---- tests -------------------------------------------------------------- */

static void test_array__const(void) {
    vg_graph *g = vg_graph_new();
    expect(run(g, vg_const_f32(g, 2.5f, NULL)), VG_FLOAT, NULL, 0, V(2.5));
    expect(run(g, vg_const_f64(g, -1.25, NULL)), VG_DOUBLE, NULL, 0, V(-1.25));
    expect(run(g, vg_const_i32(g, 7, NULL)), VG_INT32, NULL, 0, V(7));
    expect(run(g, vg_const_i64(g, 1ll << 40, NULL)), VG_INT64, NULL, 0, V((double)(1ll << 40)));
    expect(run(g, vg_const_bool(g, true, NULL)), VG_BOOL, NULL, 0, V(1));
    int32_t v[3] = {4, 5, 6};
    expect(run(g, vg_const_i32_vec(g, v, 3, NULL)), VG_INT32, D(3), 1, V(4, 5, 6));
    float a[4] = {1, 2, 3, 4};
    vg_output ca = vg_const_array(g, VG_FLOAT, D(2, 2), 2, a, "arr");
    expect_shape(ca, D(2, 2), 2);
    expect(run(g, ca), VG_FLOAT, D(2, 2), 2, V(1, 2, 3, 4));
    expect(run(g, vg_const_fill(g, VG_DOUBLE, D(2, 3), 2, 0.5, NULL)), VG_DOUBLE, D(2, 3), 2, V(.5, .5, .5, .5, .5, .5));
    expect(run(g, vg_const_fill(g, VG_INT64, D(0), 1, 3, NULL)), VG_INT64, D(0), 1, NULL);
    /* strings */
    vg_tensor *s = run(g, vg_const_string(g, "hello", NULL));
    size_t len = 0;
    CHECK(s && strcmp(vg_tensor_string(s, 0, &len), "hello") == 0 && len == 5);
    vg_tensor_free(s);
    const char *strs[2] = {"a", "bc"};
    s = run(g, vg_const_array(g, VG_STRING, D(2), 1, strs, NULL));
    CHECK(s && strcmp(vg_tensor_string(s, 1, &len), "bc") == 0);
    vg_tensor_free(s);
    /* names: Const, Const_1, ...; explicit names kept */
    CHECK(vg_graph_op_by_name(g, "Const") != NULL);
    CHECK(vg_graph_op_by_name(g, "Const_1") != NULL);
    CHECK_EQ_INT(strcmp(vg_op_name(ca.op), "arr"), 0);
    CHECK_EQ_INT(strcmp(vg_op_type(ca.op), "Const"), 0);
    vg_dtype dt;
    CHECK(vg_op_attr_type_(ca.op, "dtype", &dt) && dt == VG_FLOAT);
    CHECK_OK(vg_graph_status(g, NULL), &(vg_status){0});
    vg_graph_free(g);
}

static void test_array__placeholder(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, D(-1, 784), 2, "x");
    expect_shape(x, D(-1, 784), 2);
    CHECK_EQ_INT(vg_output_dtype(x), VG_FLOAT);
    vg_output y = vg_identity(g, x, NULL);
    expect_shape(y, D(-1, 784), 2);
    /* not fed: TF's message */
    expect_run_error(g, y, NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "You must feed a value for placeholder tensor 'x' with dtype float and shape [?,784]");
    vg_output u = vg_placeholder(g, VG_INT32, NULL, -1, "u");
    expect_run_error(g, u, NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "You must feed a value for placeholder tensor 'u' with dtype int32");
    /* fed */
    vg_tensor *v = mk(VG_FLOAT, D(1, 784), 2, NULL);
    vg_status st;
    vg_tensor *o = run_feeds(g, y, &x, &v, 1, &st);
    CHECK(o && vg_tensor_dim(o, 1) == 784 && get(o, 783) == 783);
    vg_tensor_free(o);
    vg_tensor_free(v);
    /* PlaceholderWithDefault: identity unless fed */
    vg_output d = vg_placeholder_with_default(g, cst(g, VG_INT32, D(2), 1, V(1, 2)), D(-1), 1, "pwd");
    expect_shape(d, D(-1), 1);
    expect(run(g, d), VG_INT32, D(2), 1, V(1, 2));
    vg_tensor *f = mk(VG_INT32, D(3), 1, V(7, 8, 9));
    expect(run_feeds(g, d, &d, &f, 1, &st), VG_INT32, D(3), 1, V(7, 8, 9));
    vg_tensor_free(f);
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* an incompatible default is a build error */
    vg_output bad = vg_placeholder_with_default(g, cst(g, VG_INT32, D(2), 1, V(1, 2)), D(3), 1, "bad");
    CHECK(bad.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "not compatible");
    vg_graph_free(g);
}

static void test_array__identity_noop_group(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = cst(g, VG_DOUBLE, D(3), 1, V(1, 2, 3));
    expect(run(g, vg_identity(g, c, NULL)), VG_DOUBLE, D(3), 1, V(1, 2, 3));
    expect(run(g, vg_stop_gradient(g, c, NULL)), VG_DOUBLE, D(3), 1, V(1, 2, 3));
    vg_op *n = vg_no_op(g, NULL);
    CHECK(n && strcmp(vg_op_type(n), "NoOp") == 0 && vg_op_num_outputs(n) == 0);
    vg_op *ops[2] = {n, c.op};
    vg_op *grp = vg_group(g, ops, 2, NULL);
    CHECK(grp && strcmp(vg_op_name(grp), "group_deps") == 0 && vg_op_num_control_inputs(grp) == 2);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &grp, 1, &st), &st);
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_array__reshape(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(2, 3), 2, NULL);
    vg_output r = vg_reshape_c(g, x, D(3, -1), 2, NULL);
    expect_shape(r, D(3, 2), 2); /* -1 inferred at build time */
    CHECK(vg_graph_op_by_name(g, "Reshape/shape") != NULL);
    CHECK_EQ_INT(strcmp(vg_op_name(r.op), "Reshape"), 0);
    expect(run(g, r), VG_FLOAT, D(3, 2), 2, V(0, 1, 2, 3, 4, 5));
    expect(run(g, vg_reshape_c(g, x, D(-1), 1, NULL)), VG_FLOAT, D(6), 1, V(0, 1, 2, 3, 4, 5));
    expect(run(g, vg_reshape_c(g, cst(g, VG_INT32, D(1, 1), 2, V(9)), NULL, 0, NULL)), VG_INT32, NULL, 0, V(9));
    CHECK(vg_graph_op_by_name(g, "Reshape_1/shape") != NULL);
    /* empty tensors */
    vg_output e = cst(g, VG_FLOAT, D(0, 4), 2, NULL);
    expect(run(g, vg_reshape_c(g, e, D(2, 0, -1), 3, NULL)), VG_FLOAT, D(2, 0, 2), 3, NULL); /* as TF */
    /* runtime shape: fed placeholder */
    vg_output p = vg_placeholder(g, VG_FLOAT, D(-1, 3), 2, "p");
    vg_output sh = vg_placeholder(g, VG_INT32, D(2), 1, "sh");
    vg_output rp = vg_reshape(g, p, sh, NULL);
    expect_shape(rp, D(-1, -1), 2);
    vg_tensor *pv = mk(VG_FLOAT, D(2, 3), 2, NULL), *s1 = mk(VG_INT32, D(2), 1, V(2, 2)),
              *s2 = mk(VG_INT32, D(2), 1, V(-1, -1)), *s3 = mk(VG_INT32, D(2), 1, V(4, -1));
    vg_output f[2] = {p, sh};
    vg_tensor *fv[2] = {pv, s1};
    expect_run_error(g, rp, f, fv, 2, VG_INVALID_ARGUMENT,
                     "Input to reshape is a tensor with 6 values, but the requested shape has 4");
    fv[1] = s2;
    expect_run_error(g, rp, f, fv, 2, VG_INVALID_ARGUMENT, "Only one input size may be -1");
    fv[1] = s3;
    expect_run_error(g, rp, f, fv, 2, VG_INVALID_ARGUMENT, "requested shape requires a multiple of 4");
    vg_tensor_free(pv), vg_tensor_free(s1), vg_tensor_free(s2), vg_tensor_free(s3);
    /* shape from Shape(y) is known at build time */
    vg_output z = cst(g, VG_FLOAT, D(3, 2), 2, NULL);
    expect_shape(vg_reshape(g, x, vg_shape_op(g, z, VG_INT32, NULL), NULL), D(3, 2), 2);
    /* build-time mismatch */
    vg_status st;
    CHECK(vg_graph_status(g, &st) == VG_OK);
    vg_output bad = vg_reshape_c(g, x, D(4), 1, NULL);
    CHECK(bad.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "Cannot reshape a tensor with 6 elements to shape [4]");
    CHECK_STR_CONTAINS(st.msg, "Reshape");
    vg_graph_free(g);
}

static void test_array__reshape_shares_buffer(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, D(2, 3), 2, "p");
    vg_output r = vg_reshape_c(g, p, D(6), 1, NULL);
    vg_output e = vg_expand_dims(g, r, 0, NULL);
    vg_tensor *pv = mk(VG_FLOAT, D(2, 3), 2, NULL);
    vg_status st;
    vg_tensor *o = run_feeds(g, e, &p, &pv, 1, &st);
    CHECK(o && vg_tensor_ndims(o) == 2 && vg_tensor_dim(o, 1) == 6 && get(o, 5) == 5);
    kt_teardown(g, NULL, (vg_tensor *[]){o, pv}, 2, NULL, 0);
}

static void test_array__shape_size_rank(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(2, 3, 4), 3, NULL);
    vg_output s = vg_shape_op(g, x, VG_INT32, NULL);
    expect_shape(s, D(3), 1);
    expect(run(g, s), VG_INT32, D(3), 1, V(2, 3, 4));
    expect(run(g, vg_shape_op(g, x, VG_INT64, NULL)), VG_INT64, D(3), 1, V(2, 3, 4));
    expect(run(g, vg_size(g, x, NULL)), VG_INT32, NULL, 0, V(24));
    expect(run(g, vg_rank(g, x, NULL)), VG_INT32, NULL, 0, V(3));
    vg_output sc = vg_const_f32(g, 1, NULL);
    expect(run(g, vg_shape_op(g, sc, VG_INT32, NULL)), VG_INT32, D(0), 1, NULL);
    expect(run(g, vg_size(g, sc, NULL)), VG_INT32, NULL, 0, V(1));
    expect(run(g, vg_rank(g, sc, NULL)), VG_INT32, NULL, 0, V(0));
    vg_output e = cst(g, VG_FLOAT, D(3, 0), 2, NULL);
    expect(run(g, vg_size(g, e, NULL)), VG_INT32, NULL, 0, V(0));
    vg_graph_free(g);
}

static void test_array__fill_like(void) {
    vg_graph *g = vg_graph_new();
    vg_output dims = cst(g, VG_INT32, D(2), 1, V(2, 2));
    vg_output f = vg_fill(g, dims, vg_const_f32(g, 1.5f, NULL), NULL);
    expect_shape(f, D(2, 2), 2);
    expect(run(g, f), VG_FLOAT, D(2, 2), 2, V(1.5, 1.5, 1.5, 1.5));
    expect(run(g, vg_fill(g, cst(g, VG_INT64, D(1), 1, V(3)), vg_const_i64(g, -2, NULL), NULL)), VG_INT64, D(3), 1,
           V(-2, -2, -2));
    expect(run(g, vg_fill(g, cst(g, VG_INT32, D(2), 1, V(0, 5)), vg_const_bool(g, true, NULL), NULL)), VG_BOOL, D(0, 5),
           2, NULL);
    vg_tensor *s = run(g, vg_fill(g, cst(g, VG_INT32, D(1), 1, V(2)), vg_const_string(g, "ab", NULL), NULL));
    CHECK(s && vg_tensor_num_elements(s) == 2 && strcmp(vg_tensor_string(s, 1, NULL), "ab") == 0);
    vg_tensor_free(s);
    vg_output x = cst(g, VG_DOUBLE, D(3), 1, V(4, 5, 6));
    expect(run(g, vg_zeros_like(g, x, NULL)), VG_DOUBLE, D(3), 1, V(0, 0, 0));
    expect(run(g, vg_ones_like(g, x, NULL)), VG_DOUBLE, D(3), 1, V(1, 1, 1));
    vg_output xi = cst(g, VG_INT32, D(2), 1, V(4, 5));
    expect(run(g, vg_ones_like(g, xi, NULL)), VG_INT32, D(2), 1, V(1, 1));
    CHECK(vg_graph_op_by_name(g, "zeros_like") && vg_graph_op_by_name(g, "ones_like"));
    /* negative dims: build-time error with a Const */
    vg_status st;
    vg_output bad = vg_fill(g, cst(g, VG_INT32, D(1), 1, V(-1)), vg_const_f32(g, 0, NULL), NULL);
    CHECK(bad.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Dimension -1 must be >= 0");
    vg_graph_free(g);
    /* run-time */
    g = vg_graph_new();
    vg_output d = vg_placeholder(g, VG_INT32, D(-1), 1, "d");
    vg_output ff = vg_fill(g, d, vg_const_f32(g, 0, NULL), NULL);
    vg_tensor *dv = mk(VG_INT32, D(2), 1, V(2, -3));
    expect_run_error(g, ff, &d, &dv, 1, VG_INVALID_ARGUMENT, "Dimension -3 must be >= 0");
    vg_tensor_free(dv);
    vg_graph_free(g);
}

static void test_array__expand_squeeze(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(2, 3), 2, NULL);
    vg_output e0 = vg_expand_dims(g, x, 0, NULL), e1 = vg_expand_dims(g, x, -1, NULL), e2 = vg_expand_dims(g, x, 1, NULL);
    expect_shape(e0, D(1, 2, 3), 3);
    expect_shape(e1, D(2, 3, 1), 3);
    expect_shape(e2, D(2, 1, 3), 3);
    CHECK(vg_graph_op_by_name(g, "ExpandDims/dim") && vg_graph_op_by_name(g, "ExpandDims_1/dim"));
    expect(run(g, e1), VG_FLOAT, D(2, 3, 1), 3, V(0, 1, 2, 3, 4, 5));
    expect(run(g, vg_expand_dims(g, vg_const_f32(g, 3, NULL), 0, NULL)), VG_FLOAT, D(1), 1, V(3));
    vg_output y = cst(g, VG_INT32, D(1, 2, 1, 3, 1), 5, NULL);
    vg_output s_all = vg_squeeze(g, y, NULL, 0, NULL);
    expect_shape(s_all, D(2, 3), 2);
    expect(run(g, s_all), VG_INT32, D(2, 3), 2, V(0, 1, 2, 3, 4, 5));
    int32_t ax[2] = {0, -1};
    expect(run(g, vg_squeeze(g, y, ax, 2, NULL)), VG_INT32, D(2, 1, 3), 3, V(0, 1, 2, 3, 4, 5));
    /* errors */
    vg_status st;
    int32_t bad_ax = 1;
    CHECK(vg_squeeze(g, y, &bad_ax, 1, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "Can not squeeze dim[1], expected a dimension of 1, got 2");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_expand_dims(g, cst(g, VG_FLOAT, D(2), 1, NULL), 3, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "Tried to expand dim index 3 for tensor with 1 dimensions.");
    vg_graph_free(g);
    /* runtime squeeze with unknown dims */
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, D(-1, -1), 2, "p");
    vg_output sq = vg_squeeze(g, p, NULL, 0, NULL);
    CHECK_EQ_INT(vg_output_shape(sq).ndims, -1);
    int32_t a1 = 1;
    vg_output sq1 = vg_squeeze(g, p, &a1, 1, NULL);
    expect_shape(sq1, D(-1), 1);
    vg_tensor *pv = mk(VG_FLOAT, D(3, 1), 2, NULL), *pv2 = mk(VG_FLOAT, D(3, 2), 2, NULL);
    expect(run_feeds(g, sq, &p, &pv, 1, &st), VG_FLOAT, D(3), 1, V(0, 1, 2));
    expect_run_error(g, sq1, &p, &pv2, 1, VG_INVALID_ARGUMENT, "Can not squeeze dim[1]");
    vg_tensor_free(pv), vg_tensor_free(pv2);
    vg_graph_free(g);
}

static void test_array__range(void) {
    vg_graph *g = vg_graph_new();
    vg_output r = vg_range(g, vg_const_i32(g, 0, NULL), vg_const_i32(g, 5, NULL), vg_const_i32(g, 2, NULL), NULL);
    expect_shape(r, D(3), 1);
    CHECK_EQ_INT(strcmp(vg_op_name(r.op), "range"), 0);
    expect(run(g, r), VG_INT32, D(3), 1, V(0, 2, 4));
    expect(run(g, vg_range(g, vg_const_i64(g, 5, NULL), vg_const_i64(g, 1, NULL), vg_const_i64(g, -2, NULL), NULL)),
           VG_INT64, D(2), 1, V(5, 3));
    expect(run(g, vg_range(g, vg_const_f32(g, 0, NULL), vg_const_f32(g, 1, NULL), vg_const_f32(g, 0.25f, NULL), NULL)),
           VG_FLOAT, D(4), 1, V(0, .25, .5, .75));
    expect(run(g, vg_range(g, vg_const_f64(g, 1, NULL), vg_const_f64(g, 1, NULL), vg_const_f64(g, 1, NULL), NULL)),
           VG_DOUBLE, D(0), 1, NULL);
    vg_status st;
    CHECK(vg_range(g, vg_const_i32(g, 0, NULL), vg_const_i32(g, 5, NULL), vg_const_i32(g, 0, NULL), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Requires delta != 0");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output lim = vg_placeholder(g, VG_INT32, D(0), 0, "lim");
    vg_output rr = vg_range(g, vg_const_i32(g, 3, NULL), lim, vg_const_i32(g, 1, NULL), NULL);
    expect_shape(rr, D(-1), 1);
    vg_tensor *lv = vg_tensor_new_scalar_i32(1, NULL);
    expect_run_error(g, rr, &lim, &lv, 1, VG_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: 3/1");
    vg_tensor_free(lv);
    vg_graph_free(g);
}

static void test_array__where(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = cst(g, VG_BOOL, D(2, 3), 2, V(1, 0, 1, 0, 0, 1));
    vg_output w = vg_where(g, c, NULL);
    expect_shape(w, D(-1, 2), 2);
    expect(run(g, w), VG_INT64, D(3, 2), 2, V(0, 0, 0, 2, 1, 2));
    expect(run(g, vg_where(g, cst(g, VG_FLOAT, D(4), 1, V(0, 2, 0, -1)), NULL)), VG_INT64, D(2, 1), 2, V(1, 3));
    expect(run(g, vg_where(g, cst(g, VG_BOOL, D(3), 1, V(0, 0, 0)), NULL)), VG_INT64, D(0, 1), 2, NULL);
    vg_graph_free(g);
}

static void bga_case(const double *s0, int n0, const double *s1, int n1, const double *r0, int k0, const double *r1,
                     int k1) {
    vg_graph *g = vg_graph_new();
    vg_op *op = vg_broadcast_gradient_args(g, cst(g, VG_INT32, (int64_t[]){n0}, 1, s0),
                                           cst(g, VG_INT32, (int64_t[]){n1}, 1, s1), NULL);
    vg_output outs[2] = {vg_out(op, 0), vg_out(op, 1)};
    vg_tensor *o[2] = {NULL, NULL};
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, outs, o, 2, NULL, 0, NULL, &st), &st);
    expect(o[0], VG_INT32, (int64_t[]){k0}, 1, r0);
    expect(o[1], VG_INT32, (int64_t[]){k1}, 1, r1);
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_array__broadcast_gradient_args(void) {
    bga_case(V(2, 3), 2, V(3), 1, NULL, 0, V(0), 1);
    bga_case(V(2, 1), 2, V(1, 3), 2, V(1), 1, V(0), 1);
    bga_case(V(5, 1, 4), 3, V(1, 3, 1), 3, V(1), 1, V(0, 2), 2);
    bga_case(V(1, 3), 2, V(3), 1, NULL, 0, NULL, 0);       /* all-ones dims are not reduced */
    bga_case(V(4, 4), 2, V(4, 4), 2, NULL, 0, NULL, 0);
    bga_case(V(1), 1, V(2, 2), 2, V(0, 1), 2, NULL, 0);
    /* incompatible */
    vg_graph *g = vg_graph_new();
    vg_op *op = vg_broadcast_gradient_args(g, cst(g, VG_INT32, D(2), 1, V(2, 3)), cst(g, VG_INT32, D(1), 1, V(4)), NULL);
    expect_run_error(g, vg_out(op, 0), NULL, NULL, 0, VG_INVALID_ARGUMENT, "Incompatible shapes: [2,3] vs. [4]");
    vg_graph_free(g);
}

static vg_output invert_perm(vg_graph *g, vg_output p) {
    vg_op_builder *b = vg_op_builder_new(g, "InvertPermutation", NULL);
    vg_op_builder_add_input(b, p);
    return vg_out(vg_op_builder_finish(b), 0);
}

static void test_array__invert_permutation(void) {
    vg_graph *g = vg_graph_new();
    expect(run(g, invert_perm(g, cst(g, VG_INT32, D(5), 1, V(3, 4, 0, 2, 1)))), VG_INT32, D(5), 1, V(2, 4, 3, 0, 1));
    expect(run(g, invert_perm(g, cst(g, VG_INT64, D(0), 1, NULL))), VG_INT64, D(0), 1, NULL);
    expect_run_error(g, invert_perm(g, cst(g, VG_INT32, D(3), 1, V(0, 0, 1))), NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "0 is duplicated in the input.");
    expect_run_error(g, invert_perm(g, cst(g, VG_INT32, D(2), 1, V(0, 2))), NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "2 is not between 0 and 2");
    vg_graph_free(g);
}

static void test_array__build_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    /* Reshape's shape must be an int vector */
    CHECK(vg_reshape(g, vg_const_f32(g, 1, NULL), vg_const_f32(g, 1, NULL), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "shape must be int32 or int64");
    vg_graph_free(g);
    /* a failed input propagates without a new error */
    g = vg_graph_new();
    vg_output bad = vg_reshape_c(g, vg_const_f32(g, 1, NULL), D(2), 1, "first");
    CHECK(bad.op == NULL);
    vg_graph_status(g, &st);
    char first[VG_STATUS_MSG_MAX];
    strcpy(first, st.msg);
    CHECK(vg_identity(g, bad, NULL).op == NULL);
    CHECK(vg_squeeze(g, bad, NULL, 0, NULL).op == NULL);
    vg_graph_status(g, &st);
    CHECK_EQ_INT(strcmp(first, st.msg), 0);
    vg_graph_free(g);
}

/* ---- allocation failures (STYLE 32) -------------------------------------- */

static long g_count, g_fail_at;
static void *t_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    if (g_fail_at && ++g_count == g_fail_at) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1)) return NULL;
    return p;
}
static void t_free(void *payload, void *p) { (void)payload; free(p); }

/* Kernels under allocation failure: allocation N of a run fails for N = 1, 2, ...; every
 * failing run must be RESOURCE_EXHAUSTED (leaks show under ASan). Building the graph and
 * the session, and a first run that caches the plan, allocate without failures. */
static void test_array__alloc_failures(void) {
    vg_allocator a = {t_alloc, t_free, NULL};
    vg_allocator_set(&a); /* one hook for every object of this test; failures armed per run */
    g_fail_at = 0;
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_STRING, D(2, 3), 2, "p");
    vg_output y = vg_reshape_c(g, p, D(3, 2), 2, NULL);
    vg_output w = vg_where(g, cst(g, VG_BOOL, D(4), 1, V(1, 0, 1, 1)), NULL);
    vg_op *bga = vg_broadcast_gradient_args(g, cst(g, VG_INT32, D(2), 1, V(2, 1)), cst(g, VG_INT32, D(1), 1, V(3)), NULL);
    vg_output fill = vg_fill(g, cst(g, VG_INT32, D(1), 1, V(3)), vg_const_string(g, "abc", NULL), NULL);
    vg_output fetches[5] = {y, w, vg_out(bga, 0), vg_out(bga, 1), fill};
    vg_tensor *pv = vg_tensor_new(VG_STRING, D(2, 3), 2, NULL);
    for (int i = 0; i < 6; i++) vg_tensor_set_string(pv, i, "xy", 2, NULL);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *warm[5] = {NULL};
    /* a first run builds and caches the plan: the failures below hit the kernels */
    CHECK_OK(vg_session_run(s, NULL, &p, &pv, 1, fetches, warm, 5, NULL, 0, NULL, &st), &st);
    for (int i = 0; i < 5; i++) vg_tensor_free(warm[i]);
    int bad = 0;
    long n;
    for (n = 1; n < 10000 && bad < 5; n++) {
        vg_tensor *out[5] = {NULL};
        g_count = 0;
        g_fail_at = n;
        vg_code c = vg_session_run(s, NULL, &p, &pv, 1, fetches, out, 5, NULL, 0, NULL, &st);
        bool injected = g_count >= n;
        g_fail_at = 0;
        for (int i = 0; i < 5; i++) vg_tensor_free(out[i]);
        if (c == VG_OK && !injected) break;
        if (c != VG_RESOURCE_EXHAUSTED) {
            fprintf(stderr, "alloc failure %ld: code %d: %s\n", n, c, st.msg);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 5); /* the failures were really injected */
    vg_tensor_free(pv);
    vg_session_free(s);
    vg_graph_free(g);
    vg_allocator_set(NULL);
}

int main(void) {
    RUN_TEST(test_array__const);
    RUN_TEST(test_array__placeholder);
    RUN_TEST(test_array__identity_noop_group);
    RUN_TEST(test_array__reshape);
    RUN_TEST(test_array__reshape_shares_buffer);
    RUN_TEST(test_array__shape_size_rank);
    RUN_TEST(test_array__fill_like);
    RUN_TEST(test_array__expand_squeeze);
    RUN_TEST(test_array__range);
    RUN_TEST(test_array__where);
    RUN_TEST(test_array__broadcast_gradient_args);
    RUN_TEST(test_array__invert_permutation);
    RUN_TEST(test_array__build_errors);
    RUN_TEST(test_array__alloc_failures);
    TEST_MAIN_END();
}
