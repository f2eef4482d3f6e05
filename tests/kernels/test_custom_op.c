/* test_custom_op.c - ops registered from user code (shape function, kernel, gradient
 * checked by finite differences), their errors (duplicate types, a kernel's status, the
 * session staying usable), and the py_func-like C callback op (values, stateful /
 * stateless, wrong dtype or missing outputs naming the op, no gradient unless given). */
#include "gradcheck.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "thread_run_fixture.h"
#include <pthread.h>

static vg_code scale_shape(vg_op *op, vg_status *st, void *user) {
    (void)st, (void)user;
    vg_output in = vg_op_input(op, 0);
    vg_custom_shape_set_output(op, 0, vg_output_dtype(in), vg_output_shape(in));
    return VG_OK;
}

/* y = k * x for float / double, k = *(double *)user; fails on negative inputs */
static vg_code scale_kernel(vg_custom_kernel_ctx *ctx, void *user) {
    double k = *(const double *)user;
    const vg_tensor *x = vg_custom_input(ctx, 0);
    vg_tensor *y = vg_custom_alloc_output(ctx, 0, vg_tensor_dtype(x), vg_tensor_dims(x), vg_tensor_ndims(x));
    if (!y) return VG_RESOURCE_EXHAUSTED;
    int64_t n = vg_tensor_num_elements(x);
    for (int64_t i = 0; i < n; i++) {
        double v = vg_tensor_dtype(x) == VG_FLOAT ? ((const float *)vg_tensor_data(x))[i] : ((const double *)vg_tensor_data(x))[i];
        if (v < -1000) return vg_status_set(vg_custom_status(ctx), VG_OUT_OF_RANGE, "Scale: input %g is too small", v);
        if (v < -999) return VG_DATA_LOSS; /* no message */
        if (vg_tensor_dtype(x) == VG_FLOAT) ((float *)vg_tensor_data(y))[i] = (float)(k * v);
        else ((double *)vg_tensor_data(y))[i] = k * v;
    }
    return VG_OK;
}

static vg_code scale_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx, void *user) {
    double k = *(const double *)user;
    dx[0] = vg_mul(g, dy[0], vg_const_fill(g, vg_output_dtype(dy[0]), NULL, 0, k, "k"), "mul");
    (void)op;
    return vg_graph_status(g, NULL);
}

static double k3 = 3.0;

static vg_op *build_scale(vg_graph *g, vg_output x, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "TestScale", name);
    vg_op_builder_add_input(b, x);
    return vg_op_builder_finish(b);
}

static void test_register_and_run(void) {
    vg_status st;
    vg_custom_op_def d = {"TestScale", 1, 1, false, scale_shape, scale_kernel, scale_grad, &k3};
    CHECK_OK(vg_register_op(&d, &st), &st);
    CHECK_STATUS(vg_register_op(&d, &st), &st, VG_ALREADY_EXISTS, "TestScale is already registered");
    vg_custom_op_def m = {"MatMul", 2, 2, false, NULL, scale_kernel, NULL, NULL};
    CHECK_EQ_INT(vg_register_op(&m, &st), VG_ALREADY_EXISTS);
    vg_custom_op_def bad = {"NoKernel", 1, 1, false, NULL, NULL, NULL, NULL};
    CHECK_EQ_INT(vg_register_op(&bad, &st), VG_INVALID_ARGUMENT);

    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){3}, 1, "x");
    vg_op *y = build_scale(g, x, "scale");
    CHECK(y && vg_output_shape(vg_out(y, 0)).dims[0] == 3);
    vg_output other = vg_mul(g, x, x, "sq");
    vg_session *s = vg_session_new(g, NULL, &st);
    float xv[3] = {1, -2, 0.5f};
    vg_tensor *xt = vg_tensor_new(VG_FLOAT, (int64_t[]){3}, 1, &st), *out = NULL;
    memcpy(vg_tensor_data(xt), xv, sizeof xv);
    vg_output f = vg_out(y, 0);
    CHECK_OK(vg_session_run(s, NULL, &x, &xt, 1, &f, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK(out && ((float *)vg_tensor_data(out))[1] == -6);
    vg_tensor_free(out);
    /* a kernel error: its status, with the op name; the session still runs */
    ((float *)vg_tensor_data(xt))[0] = -2000;
    CHECK_STATUS(vg_session_run(s, NULL, &x, &xt, 1, &f, &out, 1, NULL, 0, NULL, &st), &st, VG_OUT_OF_RANGE,
        "Scale: input -2000 is too small");
    CHECK_STR_CONTAINS(st.msg, "scale");
    ((float *)vg_tensor_data(xt))[0] = -999.5f;
    CHECK_STATUS(vg_session_run(s, NULL, &x, &xt, 1, &f, &out, 1, NULL, 0, NULL, &st), &st, VG_DATA_LOSS,
        "kernel of TestScale failed");
    CHECK_OK(vg_session_run(s, NULL, &x, &xt, 1, &other, &out, 1, NULL, 0, NULL, &st), &st);
    vg_tensor_free(out);
    vg_tensor_free(xt);
    vg_session_free(s);
    vg_graph_free(g);

    /* the gradient, by finite differences */
    g = vg_graph_new();
    vg_output xd = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2, 2}, 2, "x");
    vg_output yd = vg_out(build_scale(g, vg_square(g, xd, "sq"), "scale"), 0);
    vg_tensor *v = vg_tensor_new(VG_DOUBLE, (int64_t[]){2, 2}, 2, &st);
    for (int i = 0; i < 4; i++) ((double *)vg_tensor_data(v))[i] = 0.3 * i - 0.4;
    CHECK_EQ_INT(vg_gradcheck(g, &xd, &v, 1, yd, 1e-6, 1e-6), 0);
    vg_tensor_free(v);
    vg_graph_free(g);
}

/* py_func callbacks */
static int calls;
static vg_code add_and_count(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)user;
    calls++;
    if (nin != 2 || nout != 2) return vg_status_set(st, VG_INVALID_ARGUMENT, "arity");
    int64_t n = vg_tensor_num_elements(in[0]);
    out[0] = vg_tensor_new(VG_FLOAT, vg_tensor_dims(in[0]), vg_tensor_ndims(in[0]), st);
    out[1] = vg_tensor_new(VG_INT64, NULL, 0, st);
    if (!out[0] || !out[1]) return st->code;
    for (int64_t i = 0; i < n; i++)
        ((float *)vg_tensor_data(out[0]))[i] = ((const float *)vg_tensor_data(in[0]))[i] + ((const float *)vg_tensor_data(in[1]))[i];
    *(int64_t *)vg_tensor_data(out[1]) = calls;
    return VG_OK;
}
static vg_code wrong_dtype(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)in, (void)nin, (void)nout, (void)user;
    out[0] = vg_tensor_new(VG_INT32, NULL, 0, st);
    return VG_OK;
}
static vg_code no_output(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)in, (void)nin, (void)out, (void)nout, (void)user, (void)st;
    return VG_OK;
}
static vg_code fails(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)in, (void)nin, (void)nout, (void)user;
    out[0] = vg_tensor_new(VG_FLOAT, NULL, 0, st); /* freed by vigil on failure */
    return vg_status_set(st, VG_FAILED_PRECONDITION, "callback says no");
}
static vg_code identity_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx, void *user) {
    (void)op, (void)user;
    dx[0] = dy[0];
    dx[1] = vg_neg(g, dy[0], "neg");
    return VG_OK;
}

static void test_py_func(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_FLOAT, (int64_t[]){2}, 1, "a");
    vg_output b = vg_const_fill(g, VG_FLOAT, (int64_t[]){2}, 1, 10, "b");
    vg_output ins[2] = {a, b};
    vg_dtype tout[2] = {VG_FLOAT, VG_INT64};
    vg_op *pf = vg_py_func(g, add_and_count, NULL, ins, 2, tout, 2, true, NULL, NULL, "my_func");
    CHECK(pf && strcmp(vg_op_type(pf), "PyFunc") == 0 && vg_op_num_outputs(pf) == 2);
    vg_op *pl = vg_py_func(g, add_and_count, NULL, ins, 2, tout, 2, false, identity_grad, NULL, NULL);
    CHECK(pl && strcmp(vg_op_type(pl), "PyFuncStateless") == 0);
    vg_dtype f1[1] = {VG_FLOAT};
    vg_op *wd = vg_py_func(g, wrong_dtype, NULL, ins, 2, f1, 1, true, NULL, NULL, "bad_dtype");
    vg_op *no = vg_py_func(g, no_output, NULL, ins, 2, f1, 1, true, NULL, NULL, "no_out");
    vg_op *fl = vg_py_func(g, fails, NULL, ins, 2, f1, 1, true, NULL, NULL, "fails");
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *av = vg_tensor_new(VG_FLOAT, (int64_t[]){2}, 1, &st);
    ((float *)vg_tensor_data(av))[0] = 1;
    ((float *)vg_tensor_data(av))[1] = 2;
    vg_output fe[2] = {vg_out(pf, 0), vg_out(pf, 1)};
    vg_tensor *o[2] = {0};
    calls = 0;
    CHECK_OK(vg_session_run(s, NULL, &a, &av, 1, fe, o, 2, NULL, 0, NULL, &st), &st);
    CHECK(o[0] && ((float *)vg_tensor_data(o[0]))[1] == 12);
    CHECK(o[1] && *(int64_t *)vg_tensor_data(o[1]) == 1);
    for (int i = 0; i < 2; i++) vg_tensor_free(o[i]);
    CHECK_OK(vg_session_run(s, NULL, &a, &av, 1, fe, o, 2, NULL, 0, NULL, &st), &st);
    CHECK(o[1] && *(int64_t *)vg_tensor_data(o[1]) == 2); /* stateful: called again */
    for (int i = 0; i < 2; i++) vg_tensor_free(o[i]);
    vg_output f = vg_out(wd, 0);
    vg_tensor *out = NULL;
    CHECK_STATUS(vg_session_run(s, NULL, &a, &av, 1, &f, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "bad_dtype: the callback returned a int32 tensor for output 0, expected float");
    f = vg_out(no, 0);
    CHECK_STATUS(vg_session_run(s, NULL, &a, &av, 1, &f, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "no_out: the callback returned no tensor for output 0");
    f = vg_out(fl, 0);
    CHECK_STATUS(vg_session_run(s, NULL, &a, &av, 1, &f, &out, 1, NULL, 0, NULL, &st), &st, VG_FAILED_PRECONDITION,
        "callback says no");
    /* still usable */
    CHECK_OK(vg_session_run(s, NULL, &a, &av, 1, fe, o, 2, NULL, 0, NULL, &st), &st);
    for (int i = 0; i < 2; i++) vg_tensor_free(o[i]);
    vg_tensor_free(av);
    vg_session_free(s);
    /* gradients: none for a py_func without one, the given one otherwise */
    vg_output ga[1];
    vg_output loss = vg_reduce_sum(g, vg_out(pf, 0), NULL, -1, false, "loss");
    CHECK(vg_gradients(g, &loss, 1, &a, 1, NULL, ga, &st) != VG_OK);
    CHECK_STR_CONTAINS(st.msg, "No gradient defined for operation 'my_func' (op type: PyFunc)");
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK); /* the graph stays usable, as TF's LookupError */
    vg_graph_free(g);

    g = vg_graph_new();
    a = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2}, 1, "a");
    b = vg_placeholder(g, VG_DOUBLE, (int64_t[]){2}, 1, "b");
    vg_output i2[2] = {a, b};
    vg_dtype td[1] = {VG_DOUBLE};
    pl = vg_py_func(g, add_and_count, NULL, i2, 2, td, 1, false, identity_grad, NULL, NULL);
    vg_output y = vg_out(pl, 0);
    CHECK(y.op != NULL);
    loss = vg_reduce_sum(g, y, NULL, -1, false, "loss");
    vg_output grads[2];
    CHECK_OK(vg_gradients(g, &loss, 1, i2, 2, NULL, grads, &st), &st);
    CHECK(grads[0].op && grads[1].op && strcmp(vg_op_type(grads[1].op), "Neg") == 0);
    vg_graph_free(g);
    /* bad arguments */
    g = vg_graph_new();
    CHECK(vg_py_func(g, NULL, NULL, NULL, 0, NULL, 0, true, NULL, NULL, NULL) == NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* Threads: registering op types while other threads run a session whose stateless
 * py_func and registered op execute concurrently (TSan checks the registry locks). */
static vg_code plus_one(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)nin, (void)nout, (void)user;
    out[0] = vg_tensor_new(VG_FLOAT, vg_tensor_dims(in[0]), vg_tensor_ndims(in[0]), st);
    if (!out[0]) return st->code;
    for (int64_t i = 0; i < vg_tensor_num_elements(in[0]); i++)
        ((float *)vg_tensor_data(out[0]))[i] = ((const float *)vg_tensor_data(in[0]))[i] + 1;
    return VG_OK;
}

static void *register_thread(void *p) {
    (void)p;
    for (int i = 0; i < 20; i++) {
        char type[32];
        snprintf(type, sizeof type, "ThreadOp%d", i);
        vg_custom_op_def d = {type, 1, 1, false, NULL, scale_kernel, NULL, &k3};
        vg_status st;
        vg_register_op(&d, &st);
    }
    return NULL;
}

static void test_threads(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_f32(g, 2, "c");
    vg_dtype f1[1] = {VG_FLOAT};
    vg_op *pf = vg_py_func(g, plus_one, NULL, &c, 1, f1, 1, false, NULL, NULL, NULL); /* 3 */
    vg_op *sc = build_scale(g, vg_out(pf, 0), "scale");                                /* 9 */
    vg_output y = vg_sub(g, vg_out(sc, 0), vg_const_f32(g, 2, "two"), "y");            /* 7 */
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    tr_runner a[3];
    pthread_t t[4];
    for (int i = 0; i < 3; i++) {
        a[i] = (tr_runner){.s = s, .fetch = y, .n = 200, .check = true, .want = 7};
        pthread_create(&t[i], NULL, tr_main, &a[i]);
    }
    pthread_create(&t[3], NULL, register_thread, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(a[i].fails, 0);
    vg_session_free(s);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_register_and_run);
    RUN_TEST(test_py_func);
    RUN_TEST(test_threads);
    TEST_MAIN_END();
}
