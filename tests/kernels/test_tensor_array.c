/* test_tensor_array.c - TensorArrayV3 and its ops: values, dynamic_size,
 * clear_after_read, element_shape, TF's error cases, and gradients (finite
 * differences), including a TensorArray read and written inside a while loop (the
 * dynamic_rnn pattern). */
#include "test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static vg_tensor *vec(const double *v, const int64_t *dims, int nd) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, dims, nd, &st);
    memcpy(vg_tensor_data(t), v, vg_tensor_nbytes(t));
    return t;
}

static vg_code run1(vg_graph *g, vg_output y, vg_tensor **out, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    vg_code rc = s ? vg_session_run1(s, y, out, st) : st->code;
    vg_session_free(s);
    return rc;
}

static void test_basic(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_tensor_array ta = vg_tensor_array_new(g, VG_FLOAT, vg_const_i32(g, 3, NULL), false, true, NULL, "ta");
    for (int i = 0; i < 3; i++) ta = vg_tensor_array_write(g, ta, vg_const_i32(g, i, NULL), vg_const_f32(g, 10.0f * i + 1, NULL), NULL);
    vg_output st_ = vg_tensor_array_stack(g, ta, NULL);
    vg_tensor *t = NULL;
    CHECK_OK(run1(g, st_, &t, &st), &st);
    if (t) {
        CHECK_EQ_INT(vg_tensor_dim(t, 0), 3);
        const float *f = vg_tensor_data(t);
        CHECK_NEAR(f[0], 1, 0);
        CHECK_NEAR(f[1], 11, 0);
        CHECK_NEAR(f[2], 21, 0);
    }
    vg_tensor_free(t);
    CHECK_OK(run1(g, vg_tensor_array_size(g, ta, NULL), &t, &st), &st);
    if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), 3);
    vg_tensor_free(t);
    /* reading twice with clear_after_read */
    vg_output r1 = vg_tensor_array_read(g, ta, vg_const_i32(g, 1, NULL), NULL);
    vg_output r2 = vg_tensor_array_read(g, (vg_tensor_array){ta.handle, r1, VG_FLOAT}, vg_const_i32(g, 1, NULL), NULL);
    CHECK_STATUS(run1(g, r2, &t, &st), &st, VG_INVALID_ARGUMENT, "clear_after_read");
    /* an unwritten index */
    vg_tensor_array ta2 = vg_tensor_array_new(g, VG_FLOAT, vg_const_i32(g, 2, NULL), false, true, NULL, "ta2");
    CHECK_STATUS(run1(g, vg_tensor_array_read(g, ta2, vg_const_i32(g, 1, NULL), NULL), &t, &st), &st, VG_INVALID_ARGUMENT,
        "not yet been written");
    /* out of range of a fixed size; then dynamic_size grows */
    vg_tensor_array w = vg_tensor_array_write(g, ta2, vg_const_i32(g, 5, NULL), vg_const_f32(g, 1, NULL), NULL);
    CHECK_STATUS(run1(g, w.flow, &t, &st), &st, VG_INVALID_ARGUMENT, "not resizeable");
    vg_tensor_array d = vg_tensor_array_new(g, VG_FLOAT, vg_const_i32(g, 0, NULL), true, true, NULL, "dyn");
    d = vg_tensor_array_write(g, d, vg_const_i32(g, 4, NULL), vg_const_f32(g, 7, NULL), NULL);
    CHECK_OK(run1(g, vg_tensor_array_size(g, d, NULL), &t, &st), &st);
    if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), 5);
    vg_tensor_free(t);
    /* writing twice */
    vg_tensor_array w2 = vg_tensor_array_write(g, w.handle.op ? ta2 : ta2, vg_const_i32(g, 0, NULL), vg_const_f32(g, 1, NULL), NULL);
    w2 = vg_tensor_array_write(g, w2, vg_const_i32(g, 0, NULL), vg_const_f32(g, 2, NULL), NULL);
    CHECK_STATUS(run1(g, w2.flow, &t, &st), &st, VG_INVALID_ARGUMENT, "already been written");
    /* element_shape */
    vg_shape es = vg_shape_make((int64_t[]){2}, 1);
    vg_tensor_array e = vg_tensor_array_new(g, VG_FLOAT, vg_const_i32(g, 1, NULL), false, true, &es, "es");
    e = vg_tensor_array_write(g, e, vg_const_i32(g, 0, NULL), vg_const_f32(g, 1, NULL), NULL);
    CHECK_STATUS(run1(g, e.flow, &t, &st), &st, VG_INVALID_ARGUMENT, "element shape");
    /* dtype mismatch */
    vg_tensor_array dm = vg_tensor_array_new(g, VG_FLOAT, vg_const_i32(g, 1, NULL), false, true, NULL, "dm");
    dm = vg_tensor_array_write(g, dm, vg_const_i32(g, 0, NULL), vg_const_i32(g, 1, NULL), NULL);
    CHECK_CODE(run1(g, dm.flow, &t, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* A 2-element double TensorArray split from x's rows in lengths {l0, l1} (an int64 Const
 * called name); *lens gets the lengths tensor (the caller frees it). */
static vg_tensor_array split2(vg_graph *g, vg_output x, int64_t l0, int64_t l1, const char *name, vg_tensor **lens) {
    vg_tensor_array sp = vg_tensor_array_new(g, VG_DOUBLE, vg_const_i32(g, 2, NULL), false, true, NULL, NULL);
    *lens = vg_tensor_new_copy(VG_INT64, (int64_t[]){2}, 1, (int64_t[]){l0, l1}, 2 * sizeof(int64_t), NULL);
    return vg_tensor_array_split(g, sp, x, vg_const(g, *lens, name), NULL);
}

static void test_scatter_gather_split_concat(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t dims[2] = {3, 2};
    vg_tensor *xv = vec((double[]){1, 2, 3, 4, 5, 6}, dims, 2);
    vg_output x = vg_const(g, xv, "x");
    vg_tensor_array ta = vg_tensor_array_new(g, VG_DOUBLE, vg_const_i32(g, 3, NULL), false, false, NULL, NULL);
    ta = vg_tensor_array_unstack(g, ta, x, NULL);
    vg_output gth = vg_tensor_array_gather(g, ta, vg_const_i32_vec(g, (int32_t[]){2, 0}, 2, NULL), NULL);
    vg_tensor *t = NULL;
    CHECK_OK(run1(g, gth, &t, &st), &st);
    if (t) {
        const double *d = vg_tensor_data(t);
        CHECK(d[0] == 5 && d[1] == 6 && d[2] == 1 && d[3] == 2);
    }
    vg_tensor_free(t);
    /* split rows [1, 2] then concat */
    vg_tensor *lv, *lv2;
    vg_tensor_array sp = split2(g, x, 1, 2, "lens", &lv);
    vg_output lens;
    vg_output cc = vg_tensor_array_concat(g, sp, &lens, NULL);
    CHECK_OK(run1(g, cc, &t, &st), &st);
    if (t) {
        CHECK_EQ_INT(vg_tensor_dim(t, 0), 3);
        CHECK(((double *)vg_tensor_data(t))[5] == 6);
    }
    vg_tensor_free(t);
    /* lengths that do not add up */
    vg_tensor_array sp2 = split2(g, x, 1, 5, "lens2", &lv2);
    CHECK_CODE(run1(g, sp2.flow, &t, &st), VG_INVALID_ARGUMENT);
    kt_teardown(g, NULL, (vg_tensor *[]){lv, lv2, xv}, 3, NULL, 0);
}

static void test_grads(void) {
    vg_graph *g = vg_graph_new();
    int64_t dims[2] = {3, 2};
    vg_output x = vg_placeholder(g, VG_DOUBLE, dims, 2, "x");
    vg_tensor_array ta = vg_tensor_array_new(g, VG_DOUBLE, vg_const_i32(g, 3, NULL), false, true, NULL, NULL);
    ta = vg_tensor_array_unstack(g, ta, x, NULL);
    vg_output a = vg_tensor_array_gather(g, ta, vg_const_i32_vec(g, (int32_t[]){2, 0}, 2, NULL), NULL);
    vg_output b = vg_tensor_array_read(g, ta, vg_const_i32(g, 1, NULL), NULL);
    vg_output y1 = vg_add(g, vg_reduce_sum(g, vg_mul(g, a, a, NULL), NULL, -1, false, NULL),
                          vg_reduce_sum(g, vg_sin(g, b, NULL), NULL, -1, false, NULL), NULL);
    /* split / concat */
    vg_tensor *lv;
    vg_tensor_array sp = split2(g, x, 2, 1, "lens", &lv);
    vg_tensor_free(lv);
    vg_output cc = vg_tensor_array_concat(g, sp, NULL, NULL);
    vg_output y = vg_add(g, y1, vg_reduce_sum(g, vg_mul(g, cc, vg_cos(g, cc, NULL), NULL), NULL, -1, false, NULL), NULL);
    vg_tensor *xv = vec((double[]){0.1, -0.5, 1.2, 0.7, -1.1, 0.3}, dims, 2);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-6), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

/* out[t] = sin(in[t]) * w for t < T, in a while loop over TensorArrays */
typedef struct rnnish {
    vg_tensor_array in, out;
    vg_output w;
} rnnish;
static vg_code r_cond(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {
    (void)n;
    (void)u;
    *p = vg_less(g, v[0], vg_const_i32(g, 3, NULL), NULL);
    return VG_OK;
}
static vg_code r_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    rnnish *r = u;
    vg_output xi = vg_tensor_array_read(g, r->in, v[0], NULL);
    vg_output h = vg_mul(g, vg_sin(g, vg_add(g, xi, v[2], NULL), NULL), r->w, NULL);
    vg_tensor_array out = {r->out.handle, v[1], VG_DOUBLE};
    out = vg_tensor_array_write(g, out, v[0], h, NULL);
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
    o[1] = out.flow;
    o[2] = h; /* carried state */
    return VG_OK;
}

static void test_loop_grad(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t dims[2] = {3, 2}, d2 = 2;
    vg_output x = vg_placeholder(g, VG_DOUBLE, dims, 2, "x");
    vg_output w = vg_placeholder(g, VG_DOUBLE, &d2, 1, "w");
    vg_output h0 = vg_placeholder(g, VG_DOUBLE, &d2, 1, "h0");
    rnnish r;
    vg_shape es = vg_shape_make(&d2, 1);
    r.in = vg_tensor_array_new(g, VG_DOUBLE, vg_const_i32(g, 3, NULL), false, true, &es, "in");
    r.in = vg_tensor_array_unstack(g, r.in, x, NULL);
    r.out = vg_tensor_array_new(g, VG_DOUBLE, vg_const_i32(g, 3, NULL), false, true, NULL, "out");
    r.w = w;
    vg_output v[3] = {vg_const_i32(g, 0, "t"), r.out.flow, h0}, o[3];
    CHECK_OK(vg_while_loop(g, r_cond, r_body, &r, v, 3, NULL, 10, vg_out(NULL, 0), "rnn", o, &st), &st);
    vg_tensor_array fin = {r.out.handle, o[1], VG_DOUBLE};
    vg_output y = vg_add(g, vg_tensor_array_stack(g, fin, NULL), vg_reduce_sum(g, o[2], NULL, -1, false, NULL), NULL);
    vg_tensor *xv[3] = {vec((double[]){0.1, -0.5, 1.2, 0.7, -1.1, 0.3}, dims, 2), vec((double[]){0.8, -1.3}, &d2, 1),
                        vec((double[]){0.2, 0.4}, &d2, 1)};
    vg_output xs[3] = {x, w, h0};
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 3, y, 1e-6, 1e-6), 0);
    for (int i = 0; i < 3; i++) vg_tensor_free(xv[i]);
    vg_graph_free(g);
}

/* the TensorArray loop exported as a GraphDef and imported runs to the same values */
static void test_loop_graphdef_round_trip(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t dims[2] = {3, 2}, d2 = 2;
    vg_tensor *xv = vec((double[]){0.1, -0.5, 1.2, 0.7, -1.1, 0.3}, dims, 2), *wv = vec((double[]){0.8, -1.3}, &d2, 1);
    vg_output x = vg_const(g, xv, "x"), w = vg_const(g, wv, "w"), h0 = vg_const(g, wv, "h0");
    rnnish r;
    vg_shape es = vg_shape_make(&d2, 1);
    r.in = vg_tensor_array_unstack(g, vg_tensor_array_new(g, VG_DOUBLE, vg_const_i32(g, 3, NULL), false, true, &es, "in"), x, NULL);
    r.out = vg_tensor_array_new(g, VG_DOUBLE, vg_const_i32(g, 3, NULL), false, true, NULL, "out");
    r.w = w;
    vg_output v[3] = {vg_const_i32(g, 0, "t"), r.out.flow, h0}, o[3];
    CHECK_OK(vg_while_loop(g, r_cond, r_body, &r, v, 3, NULL, 10, vg_out(NULL, 0), "rnn", o, &st), &st);
    vg_output y = vg_tensor_array_stack(g, (vg_tensor_array){r.out.handle, o[1], VG_DOUBLE}, "ys");
    vg_tensor *a = NULL, *b = NULL;
    CHECK_OK(run1(g, y, &a, &st), &st);
    vg_graph *h = kt_reimported(g, NULL);
    vg_output yh = vg_graph_output_by_name(h, vg_op_name(y.op), &st);
    CHECK(yh.op != NULL);
    if (yh.op) CHECK_OK(run1(h, yh, &b, &st), &st);
    if (a && b) {
        CHECK_EQ_INT(vg_tensor_num_elements(a), 6);
        CHECK(vg_tensor_num_elements(b) == 6 && !memcmp(vg_tensor_data(a), vg_tensor_data(b), 6 * sizeof(double)));
    }
    vg_tensor_free(a);
    vg_tensor_free(b);
    vg_tensor_free(xv);
    vg_tensor_free(wv);
    vg_graph_free(h);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_loop_graphdef_round_trip);
    RUN_TEST(test_basic);
    RUN_TEST(test_scatter_gather_split_concat);
    RUN_TEST(test_grads);
    RUN_TEST(test_loop_grad);
    TEST_MAIN_END();
}
