/* test_moving_averages.c - the library calls the research/resnet port needed:
 * moving_averages.assign_moving_average (plain and zero_debias: values by hand, TF's
 * variable and op names incl. the doubled scope of the debias variables and the "_1"
 * suffix of a second update), uniform_unit_scaling_initializer (TF's bound), the
 * SparseToDense op (TF's sparse_to_dense_op_test cases, errors, gradient by finite
 * differences), tf.pad and tf.nn.xw_plus_b. */
#include "gradcheck.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "vigil/vigil.h"

static vg_tensor *f32(const float *v, const int64_t *dims, int nd) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_FLOAT, dims, nd, &st);
    memcpy(vg_tensor_data(t), v, vg_tensor_nbytes(t));
    return t;
}

static float run_scalar_at(vg_session *s, vg_output o, int64_t i) {
    vg_status st;
    vg_tensor *t = NULL;
    if (vg_session_run1(s, o, &t, &st) != VG_OK) {
        fprintf(stderr, "run: %s\n", st.msg);
        return NAN;
    }
    float v = ((const float *)vg_tensor_data(t))[i];
    vg_tensor_free(t);
    return v;
}

static void test_assign_moving_average_plain(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "s", NULL);
    vg_get_variable_opts o = {0};
    o.dims = (int64_t[]){2};
    o.ndims = 1;
    o.has_init = true;
    o.init = vg_init_constant(1.0);
    o.not_trainable = true;
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2}, 1, "x");
    vg_output upd = vg_assign_moving_average(g, v.ref, x, 0.9, false, NULL);
    vg_variable_scope_pop(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(upd.op), "s/AssignMovingAvg") == 0);
    CHECK(strcmp(vg_op_type(upd.op), "AssignSub") == 0);
    CHECK(vg_graph_op_by_name(g, "s/AssignMovingAvg/decay") != NULL);
    CHECK(vg_graph_op_by_name(g, "s/AssignMovingAvg/mul") != NULL);
    /* no debias variables without zero_debias */
    int nv = 0;
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 1);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_tensor *xv = f32((float[]){3.0f, -1.0f}, (int64_t[]){2}, 1);
    vg_tensor *out = NULL;
    /* v = 1 - (1 - 3) * 0.1 = 1.2; then 1.2 - (1.2 - 3) * 0.1 = 1.38 */
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &upd, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(((float *)vg_tensor_data(out))[0], 1.2, 1e-6);
    CHECK_NEAR(((float *)vg_tensor_data(out))[1], 0.8, 1e-6);
    vg_tensor_free(out);
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &upd, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(((float *)vg_tensor_data(out))[0], 1.38, 1e-6);
    vg_tensor_free(out);
    vg_tensor_free(xv);
    vg_session_free(s);

    /* decay as a tensor (TF's "1.0 - decay" Sub), with zero_debias, and a named scope */
    vg_output d = vg_placeholder(g, VG_FLOAT, NULL, 0, "d");
    vg_output u2 = vg_assign_moving_average_t(g, v.ref, x, d, true, "ema_update");
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(u2.op), "ema_update") == 0);
    CHECK(vg_graph_op_by_name(g, "ema_update/sub") != NULL);
    /* at the top-level variable scope the debias variables are "<var>/biased", "<var>/local_step" */
    CHECK(vg_graph_op_by_name(g, "s/v/biased") != NULL);
    CHECK(vg_graph_op_by_name(g, "s/v/local_step") != NULL);
    init = vg_global_variables_initializer(g);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    xv = f32((float[]){2.0f, 4.0f}, (int64_t[]){2}, 1);
    vg_tensor *dv = f32((float[]){0.5f}, NULL, 0);
    vg_output feeds[2] = {x, d};
    vg_tensor *vals[2] = {xv, dv};
    /* debiased after one update: exactly the value */
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, &u2, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(((float *)vg_tensor_data(out))[1], 4.0, 1e-6);
    vg_tensor_free(out);
    vg_tensor_free(xv);
    vg_tensor_free(dv);
    vg_session_free(s);

    /* a value of another shape is INVALID_ARGUMENT naming the variable */
    vg_output bad = vg_placeholder(g, VG_FLOAT, (int64_t[]){3}, 1, "bad");
    CHECK(vg_assign_moving_average(g, v.ref, bad, 0.9, false, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "s/v");
    vg_graph_free(g);
}

static void test_assign_moving_average_zero_debias(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "scope1", NULL);
    vg_variable_scope_push(g, "scope2", NULL);
    vg_get_variable_opts o = {0};
    o.dims = (int64_t[]){2};
    o.ndims = 1;
    o.has_init = true;
    o.init = vg_init_zeros();
    o.not_trainable = true;
    vg_variable v = vg_get_variable_ex(g, "foo", &o);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2}, 1, "x");
    /* the docstring's example: two updates of one variable */
    vg_output u1 = vg_assign_moving_average(g, v.ref, x, 0.9, true, NULL);
    vg_output u2 = vg_assign_moving_average(g, v.ref, x, 0.5, true, NULL);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(u1.op), "scope1/scope2/AssignMovingAvg") == 0);
    CHECK(strcmp(vg_op_type(u1.op), "Assign") == 0);
    CHECK(strcmp(vg_op_name(u2.op), "scope1/scope2/AssignMovingAvg_1") == 0);
    static const char *names[] = {"scope1/scope2/foo", "scope1/scope2/scope1/scope2/foo/biased",
                                  "scope1/scope2/scope1/scope2/foo/local_step",
                                  "scope1/scope2/scope1/scope2/foo/biased_1",
                                  "scope1/scope2/scope1/scope2/foo/local_step_1"};
    int nv = 0;
    const vg_output *vars = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 5);
    for (int i = 0; i < nv && i < 5; i++) {
        if (strcmp(vg_op_name(vars[i].op), names[i])) fprintf(stderr, "var %d: %s\n", i, vg_op_name(vars[i].op));
        CHECK(strcmp(vg_op_name(vars[i].op), names[i]) == 0);
    }
    int nt = 0;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nt);
    CHECK_EQ_INT(nt, 0);
    vg_op *ls = vg_graph_op_by_name(g, "scope1/scope2/scope1/scope2/foo/local_step");
    CHECK(ls && vg_output_shape(vg_out(ls, 0)).ndims == 0);
    CHECK(vg_graph_op_by_name(g, "scope1/scope2/AssignMovingAvg/Pow") != NULL);
    CHECK(vg_graph_op_by_name(g, "scope1/scope2/AssignMovingAvg/truediv") != NULL);

    vg_session *s = initialized_session(g);
    vg_tensor *xv = f32((float[]){3.0f, -2.0f}, (int64_t[]){2}, 1);
    vg_tensor *out = NULL;
    /* step 1: biased = 0.3, factor 1 - 0.9 = 0.1 -> exactly the value (debiased) */
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &u1, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(((float *)vg_tensor_data(out))[0], 3.0, 1e-5);
    CHECK_NEAR(((float *)vg_tensor_data(out))[1], -2.0, 1e-5);
    vg_tensor_free(out);
    vg_tensor_free(xv);
    /* step 2 with value 1: biased = 0.3*0.9 + 0.1 = 0.37, factor 1 - 0.81 = 0.19 */
    xv = f32((float[]){1.0f, 1.0f}, (int64_t[]){2}, 1);
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &u1, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(((float *)vg_tensor_data(out))[0], 0.37 / 0.19, 1e-5);
    vg_tensor_free(out);
    vg_output lsv = vg_out(ls, 0);
    CHECK_NEAR(run_scalar_at(s, lsv, 0), 2.0, 0);
    vg_tensor_free(xv);
    vg_session_free(s);

    /* bad input: not a variable, integer variable */
    vg_graph *g2 = vg_graph_new();
    vg_output c = vg_const_f32(g2, 1.0f, "c");
    vg_output r = vg_assign_moving_average(g2, c, c, 0.9, true, NULL);
    CHECK(r.op == NULL);
    EXPECT_GRAPH_ERROR(g2, VG_INVALID_ARGUMENT, "c is not a variable");
    vg_graph_free(g2);
    vg_graph_free(g);
}

static void test_uniform_unit_scaling(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 7);
    vg_get_variable_opts o = {0};
    o.dims = (int64_t[]){12, 3, 50};
    o.ndims = 3;
    o.has_init = true;
    o.init = vg_init_uniform_unit_scaling(2.0, 0);
    vg_variable v = vg_get_variable_ex(g, "DW", &o);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_graph_op_by_name(g, "DW/Initializer/random_uniform") != NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, v.read, &t, &st), &st);
    /* max_val = sqrt(3 / (12 * 3)) * 2 */
    double bound = sqrt(3.0 / 36.0) * 2.0, mx = 0;
    const float *p = vg_tensor_data(t);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) mx = fmax(mx, fabs(p[i]));
    CHECK(mx <= bound + 1e-6);
    CHECK(mx > bound * 0.95); /* 1800 draws reach close to the bound */
    /* the same graph seed and op seed draw the same values; another op seed others */
    vg_graph *g2 = vg_graph_new();
    vg_graph_set_seed(g2, 7);
    vg_variable v2 = vg_get_variable_ex(g2, "DW", &o);
    o.init = vg_init_uniform_unit_scaling(2.0, 5);
    vg_variable v3 = vg_get_variable_ex(g2, "DW2", &o);
    vg_session *s2 = initialized_session(g2);
    vg_tensor *t2 = NULL, *t3 = NULL;
    CHECK_OK(vg_session_run1(s2, v2.read, &t2, &st), &st);
    CHECK_OK(vg_session_run1(s2, v3.read, &t3, &st), &st);
    CHECK(t2 && memcmp(vg_tensor_data(t), vg_tensor_data(t2), vg_tensor_nbytes(t)) == 0);
    CHECK(t3 && memcmp(vg_tensor_data(t2), vg_tensor_data(t3), vg_tensor_nbytes(t2)) != 0);
    vg_tensor_free(t2);
    vg_tensor_free(t3);
    free_session_graph(s2, g2);
    vg_tensor_free(t);
    free_session_graph(s, g);
}

static void test_sparse_to_dense(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    /* sparse_to_dense_op_test: testInt / 2-D / default value */
    vg_output i1 = vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 3}, "i1");
    vg_output s1 = vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, (int32_t[]){5}, "s1");
    vg_output d1 = vg_sparse_to_dense(g, i1, s1, vg_const_f32(g, 1.0f, NULL), vg_const_f32(g, 0.0f, NULL), true, NULL);
    vg_output i2 = vg_const_array(g, VG_INT64, (int64_t[]){3, 2}, 2, (int64_t[]){0, 1, 1, 0, 2, 2}, "i2");
    vg_output s2 = vg_const_array(g, VG_INT64, (int64_t[]){2}, 1, (int64_t[]){3, 3}, "s2");
    vg_output v2 = vg_placeholder(g, VG_FLOAT, (int64_t[]){3}, 1, "v2");
    vg_output dv = vg_placeholder(g, VG_FLOAT, NULL, 0, "dv");
    vg_output d2 = vg_sparse_to_dense(g, i2, s2, v2, dv, true, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK_EQ_INT(vg_output_shape(d2).ndims, 2);
    CHECK_EQ_INT(vg_output_shape(d2).dims[1], 3);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, d1, &t, &st), &st);
    float e1[5] = {0, 1, 0, 1, 0};
    for (int i = 0; i < 5; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], e1[i], 0);
    vg_tensor_free(t);
    vg_tensor *vv = f32((float[]){1.5f, 2.5f, 3.5f}, (int64_t[]){3}, 1);
    vg_tensor *dvv = f32((float[]){-1.0f}, NULL, 0);
    vg_output feeds[2] = {v2, dv};
    vg_tensor *vals[2] = {vv, dvv};
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, &d2, &t, 1, NULL, 0, NULL, &st), &st);
    float e2[9] = {-1, 1.5f, -1, 2.5f, -1, -1, -1, -1, 3.5f};
    for (int i = 0; i < 9; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], e2[i], 0);
    vg_tensor_free(t);
    vg_session_free(s);
    /* gradient w.r.t. values and default value */
    CHECK_EQ_INT(vg_gradcheck(g, feeds, vals, 2, d2, 1e-3, 1e-2), 0);
    vg_tensor_free(vv);
    vg_tensor_free(dvv);

    /* errors: out of bounds, out of order, repeated (validate_indices), bad shapes */
    vg_output ib = vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 7}, "ib");
    vg_output db = vg_sparse_to_dense(g, ib, s1, vg_const_f32(g, 1.0f, NULL), vg_const_f32(g, 0.0f, NULL), true, "bad");
    vg_output io = vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){3, 1}, "io");
    vg_output dord = vg_sparse_to_dense(g, io, s1, vg_const_f32(g, 1.0f, NULL), vg_const_f32(g, 0.0f, NULL), true, NULL);
    vg_output dnov = vg_sparse_to_dense(g, io, s1, vg_const_f32(g, 1.0f, NULL), vg_const_f32(g, 0.0f, NULL), false, NULL);
    vg_output ir = vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){2, 2}, "ir");
    vg_output drep = vg_sparse_to_dense(g, ir, s1, vg_const_f32(g, 1.0f, NULL), vg_const_f32(g, 0.0f, NULL), true, NULL);
    vg_output wrongv = vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, (float[]){1, 2, 3}, "wv");
    vg_output dwv = vg_sparse_to_dense(g, i1, s1, wrongv, vg_const_f32(g, 0.0f, NULL), true, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    s = vg_session_new(g, NULL, &st);
    CHECK_STATUS(vg_session_run1(s, db, &t, &st), &st, VG_INVALID_ARGUMENT,
                 "indices[1] = [7] is out of bounds: need 0 <= index < [5]");
    CHECK_STATUS(vg_session_run1(s, dord, &t, &st), &st, VG_INVALID_ARGUMENT, "out of order");
    CHECK_STATUS(vg_session_run1(s, drep, &t, &st), &st, VG_INVALID_ARGUMENT, "repeated");
    CHECK_STATUS(vg_session_run1(s, dwv, &t, &st), &st, VG_INVALID_ARGUMENT, "sparse_values has incorrect shape");
    CHECK_OK(vg_session_run1(s, dnov, &t, &st), &st);
    vg_tensor_free(t);
    vg_session_free(s);
    /* build-time: mismatched value/default dtypes */
    vg_output dbad = vg_sparse_to_dense(g, i1, s1, vg_const_f32(g, 1.0f, NULL), vg_const_i32(g, 0, NULL), true, NULL);
    CHECK(dbad.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

static void test_pad_and_xw_plus_b(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "x");
    vg_output w = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 2}, 2, "w");
    vg_output b = vg_placeholder(g, VG_FLOAT, (int64_t[]){2}, 1, "b");
    vg_output y = vg_xw_plus_b(g, x, w, b, NULL);
    vg_output p = vg_pad(g, y, vg_const_array(g, VG_INT32, (int64_t[]){2, 2}, 2, (int32_t[]){0, 1, 1, 1}, "paddings"),
                         NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(y.op), "xw_plus_b") == 0 && strcmp(vg_op_type(y.op), "BiasAdd") == 0);
    CHECK(vg_graph_op_by_name(g, "xw_plus_b/MatMul") != NULL);
    CHECK_EQ_INT(vg_output_shape(p).dims[0], 3);
    CHECK_EQ_INT(vg_output_shape(p).dims[1], 4);
    vg_tensor *xv = f32((float[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2);
    vg_tensor *wv = f32((float[]){1, 0, 0, 1, 1, 1}, (int64_t[]){3, 2}, 2);
    vg_tensor *bv = f32((float[]){10, 20}, (int64_t[]){2}, 1);
    vg_output feeds[3] = {x, w, b};
    vg_tensor *vals[3] = {xv, wv, bv};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 3, &p, &t, 1, NULL, 0, NULL, &st), &st);
    /* y = [[1+3+10, 2+3+20], [4+6+10, 5+6+20]] padded by a column each side, a row below */
    float e[12] = {0, 14, 25, 0, 0, 20, 31, 0, 0, 0, 0, 0};
    for (int i = 0; i < 12; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], e[i], 1e-5);
    vg_tensor_free(t);
    vg_session_free(s);
    CHECK_EQ_INT(vg_gradcheck(g, feeds, vals, 3, p, 1e-2, 1e-2), 0);
    vg_tensor_free(xv);
    vg_tensor_free(wv);
    vg_tensor_free(bv);
    vg_graph_free(g);
}


/* moving_averages_test.py testAssignMovingAverageNewNamingMultipleCallsWithReuse: two
 * debiased updates of scope1/Var, then two more in scope1 re-entered with reuse=True
 * share the debias variables instead of failing (_maybe_get_unique keeps the plain names
 * under reuse). */
static void test_assign_moving_average_reuse(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = {0};
    o.dims = NULL;
    o.ndims = 0;
    vg_variable_scope_push(g, "scope1", NULL);
    vg_variable var = vg_get_variable_ex(g, "Var", &o);
    vg_output zero = vg_const_f32(g, 0.0f, "zero");
    vg_assign_moving_average(g, var.ref, zero, 0.99, true, NULL);
    vg_assign_moving_average(g, var.ref, zero, 0.99, true, NULL);
    vg_variable_scope_pop(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    int nv = 0;
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 5); /* Var, biased, local_step, biased_1, local_step_1 */
    vg_variable_scope_opts ro = {0};
    ro.reuse = VG_REUSE_TRUE;
    vg_variable_scope_push(g, "scope1", &ro);
    vg_variable var2 = vg_get_variable_ex(g, "Var", &o);
    CHECK(var2.var == var.var);
    vg_output u3 = vg_assign_moving_average(g, var2.ref, zero, 0.99, true, NULL);
    vg_output u4 = vg_assign_moving_average(g, var2.ref, zero, 0.99, true, NULL);
    vg_variable_scope_pop(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(u3.op && u4.op);
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 5);
    CHECK(vg_graph_op_by_name(g, "scope1/scope1/Var/biased") != NULL);
    CHECK(vg_graph_op_by_name(g, "scope1/scope1/Var/biased_1") != NULL);
    vg_graph_free(g);
}

/* testWeightedMovingAverage: decay 0.5, scalar placeholders; the two runs' results are
 * the ratios of the hand-computed numerator and denominator averages. */
static void test_weighted_moving_average(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    double decay = 0.5;
    vg_output weight = vg_placeholder(g, VG_FLOAT, NULL, 0, "weight");
    vg_output val = vg_placeholder(g, VG_FLOAT, NULL, 0, "val");
    vg_output wma = vg_weighted_moving_average(g, val, decay, weight, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(wma.op && strcmp(vg_op_name(wma.op), "WeightedMovingAvg/WeightedMovingAvg") == 0);
    CHECK(vg_graph_op_by_name(g, "WeightedMovingAvg/value_x_weight") != NULL);
    CHECK(vg_graph_op_by_name(g, "WeightedMovingAvg/weight") != NULL);
    int nt = 0, ng = 0;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nt);
    vg_graph_collection(g, VG_GLOBAL_VARIABLES, &ng);
    CHECK_EQ_INT(nt, 0);
    CHECK_EQ_INT(ng, 2);
    vg_session *s = initialized_session(g);
    vg_output feeds[2] = {val, weight};
    double val_1 = 3.0, weight_1 = 4.0;
    vg_tensor *vals[2] = {f32((float[]){(float)val_1}, NULL, 0), f32((float[]){(float)weight_1}, NULL, 0)};
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, &wma, &out, 1, NULL, 0, NULL, &st), &st);
    double num1 = val_1 * weight_1 * (1.0 - decay), den1 = weight_1 * (1.0 - decay);
    if (out) CHECK_NEAR(((float *)vg_tensor_data(out))[0], num1 / den1, 1e-6);
    vg_tensor_free(out);
    vg_tensor_free(vals[0]);
    vg_tensor_free(vals[1]);
    double val_2 = 11.0, weight_2 = 22.0;
    vals[0] = f32((float[]){(float)val_2}, NULL, 0);
    vals[1] = f32((float[]){(float)weight_2}, NULL, 0);
    out = NULL;
    CHECK_OK(vg_session_run(s, NULL, feeds, vals, 2, &wma, &out, 1, NULL, 0, NULL, &st), &st);
    double num2 = num1 * decay + val_2 * weight_2 * (1.0 - decay), den2 = den1 * decay + weight_2 * (1.0 - decay);
    if (out) CHECK_NEAR(((float *)vg_tensor_data(out))[0], num2 / den2, 1e-6);
    vg_tensor_free(out);
    vg_tensor_free(vals[0]);
    vg_tensor_free(vals[1]);
    vg_session_free(s);
    /* a second one in the same graph: "WeightedMovingAvg_1" */
    vg_output w2 = vg_weighted_moving_average(g, val, decay, weight, NULL);
    CHECK(w2.op && strcmp(vg_op_name(w2.op), "WeightedMovingAvg_1/WeightedMovingAvg_1") == 0);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_assign_moving_average_plain);
    RUN_TEST(test_assign_moving_average_zero_debias);
    RUN_TEST(test_uniform_unit_scaling);
    RUN_TEST(test_sparse_to_dense);
    RUN_TEST(test_pad_and_xw_plus_b);
    RUN_TEST(test_assign_moving_average_reuse);
    RUN_TEST(test_weighted_moving_average);
    TEST_MAIN_END();
}
