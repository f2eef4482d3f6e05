/* test_math_unary.c - forward values of the math family's unary ops (Neg, Square,
 * Sqrt, Rsqrt, Exp, Log, Abs, Sign, Reciprocal, LogicalNot, IsFinite), Select, AddN,
 * Cast and CheckNumerics, with their error paths. */
#include "test_util.h"
#include "op_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* ---- helpers ------------------------------------------------------------ */

typedef vg_output (*unop_builder)(vg_graph *, vg_output, const char *);

static void check_un(unop_builder fn, vg_dtype dt, int n, const double *x, vg_dtype odt, const double *e) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {n};
    vg_output y = fn(g, cst(g, dt, d, 1, x), NULL);
    vg_status st;
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "build failed: %s\n", st.msg);
        vg_test_failures++;
    } else {
        vg_tensor *t = run(g, y);
        check_values(t, odt, d, 1, e, 1e-6);
        vg_tensor_free(t);
    }
    vg_graph_free(g);
}

/* ---- tests -------------------------------------------------------------- */

static void test_math__unary_float(void) {
    double x[4] = {0.25, 1, 4, 9};
    double sq[4] = {0.0625, 1, 16, 81}, sr[4] = {0.5, 1, 2, 3}, rs[4] = {2, 1, 0.5, 1.0 / 3};
    double ex[4] = {1.2840254166877414, 2.718281828459045, 54.598150033144236, 8103.083927575384};
    double lg[4] = {-1.3862943611198906, 0, 1.3862943611198906, 2.1972245773362196};
    double rc[4] = {4, 1, 0.25, 1.0 / 9};
    for (int k = 0; k < 2; k++) {
        vg_dtype dt = k ? VG_DOUBLE : VG_FLOAT;
        check_un(vg_square, dt, 4, x, dt, sq);
        check_un(vg_sqrt, dt, 4, x, dt, sr);
        check_un(vg_rsqrt, dt, 4, x, dt, rs);
        check_un(vg_exp, dt, 4, x, dt, ex);
        check_un(vg_log, dt, 4, x, dt, lg);
        check_un(vg_reciprocal, dt, 4, x, dt, rc);
    }
    double y[5] = {-2.5, -0.0, 0, 3, -1};
    double ng[5] = {2.5, 0, 0, -3, 1}, ab[5] = {2.5, 0, 0, 3, 1}, sg[5] = {-1, 0, 0, 1, -1};
    check_un(vg_neg, VG_FLOAT, 5, y, VG_FLOAT, ng);
    check_un(vg_abs, VG_DOUBLE, 5, y, VG_DOUBLE, ab);
    check_un(vg_sign, VG_FLOAT, 5, y, VG_FLOAT, sg);
    double l0[1] = {0}, nanv[1] = {NAN}, minf[1] = {-INFINITY};
    check_un(vg_log, VG_FLOAT, 1, l0, VG_FLOAT, minf);
    check_un(vg_sqrt, VG_FLOAT, 1, minf, VG_FLOAT, nanv);
}

static void test_math__unary_int(void) {
    double x[4] = {-3, 0, 7, -2147483648.0};
    double ng[4] = {3, 0, -7, -2147483648.0}, sq[4] = {9, 0, 49, 0}, ab[4] = {3, 0, 7, -2147483648.0};
    double sg[4] = {-1, 0, 1, -1};
    check_un(vg_neg, VG_INT32, 4, x, VG_INT32, ng);
    check_un(vg_square, VG_INT32, 4, x, VG_INT32, sq);
    check_un(vg_abs, VG_INT32, 4, x, VG_INT32, ab);
    check_un(vg_sign, VG_INT32, 4, x, VG_INT32, sg);
    double x64[3] = {-3, 0, 7}, ng64[3] = {3, 0, -7}, sg64[3] = {-1, 0, 1};
    check_un(vg_neg, VG_INT64, 3, x64, VG_INT64, ng64);
    check_un(vg_sign, VG_INT64, 3, x64, VG_INT64, sg64);
}

static void test_math__logical_not_is_finite(void) {
    double b[3] = {0, 1, 0}, nb[3] = {1, 0, 1};
    check_un(vg_logical_not, VG_BOOL, 3, b, VG_BOOL, nb);
    double f[4] = {1, NAN, INFINITY, -INFINITY}, fin[4] = {1, 0, 0, 0};
    check_un(vg_is_finite, VG_FLOAT, 4, f, VG_BOOL, fin);
    check_un(vg_is_finite, VG_DOUBLE, 4, f, VG_BOOL, fin);
}

static void test_math__unary_dtype_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    CHECK(vg_sqrt(g, vg_const_i32(g, 4, NULL), "s").op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Sqrt");
    CHECK_STR_CONTAINS(st.msg, "int32");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_logical_not(g, vg_const_f32(g, 1, NULL), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "LogicalNot");
    vg_graph_free(g);
}

static void test_math__select(void) {
    int64_t d[2] = {2, 2}, dv[1] = {2};
    double c[4] = {1, 0, 0, 1}, t[4] = {1, 2, 3, 4}, e[4] = {-1, -2, -3, -4};
    double r1[4] = {1, -2, -3, 4};
    vg_graph *g = vg_graph_new();
    vg_output ct = cst(g, VG_FLOAT, d, 2, t), ce = cst(g, VG_FLOAT, d, 2, e);
    vg_tensor *v = run(g, vg_select(g, cst(g, VG_BOOL, d, 2, c), ct, ce, NULL));
    check_values(v, VG_FLOAT, d, 2, r1, 0);
    vg_tensor_free(v);
    /* vector condition picks whole rows */
    double cv[2] = {0, 1}, r2[4] = {-1, -2, 3, 4};
    v = run(g, vg_select(g, cst(g, VG_BOOL, dv, 1, cv), ct, ce, NULL));
    check_values(v, VG_FLOAT, d, 2, r2, 0);
    vg_tensor_free(v);
    /* scalar condition */
    v = run(g, vg_select(g, vg_const_bool(g, false, NULL), ct, ce, NULL));
    check_values(v, VG_FLOAT, d, 2, e, 0);
    vg_tensor_free(v);
    /* int64 and bool payloads */
    v = run(g, vg_select(g, cst(g, VG_BOOL, d, 2, c), cst(g, VG_INT64, d, 2, t), cst(g, VG_INT64, d, 2, e), NULL));
    check_values(v, VG_INT64, d, 2, r1, 0);
    vg_tensor_free(v);
    double eb[4] = {1, 1, 0, 0}, r3[4] = {1, 1, 0, 1};
    v = run(g, vg_select(g, cst(g, VG_BOOL, d, 2, c), cst(g, VG_BOOL, d, 2, c), cst(g, VG_BOOL, d, 2, eb), NULL));
    check_values(v, VG_BOOL, d, 2, r3, 0);
    vg_tensor_free(v);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* bad condition shape */
    int64_t d3[1] = {3};
    double c3[3] = {1, 1, 1};
    CHECK(vg_select(g, cst(g, VG_BOOL, d3, 1, c3), ct, ce, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Select");
    vg_graph_free(g);
}

static void test_math__add_n(void) {
    int64_t d[2] = {2, 2};
    double a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, c[4] = {100, 200, 300, 400};
    double e2[4] = {11, 22, 33, 44}, e3[4] = {111, 222, 333, 444};
    vg_graph *g = vg_graph_new();
    vg_output in[3] = {cst(g, VG_FLOAT, d, 2, a), cst(g, VG_FLOAT, d, 2, b), cst(g, VG_FLOAT, d, 2, c)};
    vg_output y2 = vg_add_n(g, in, 2, NULL), y3 = vg_add_n(g, in, 3, "sum3");
    CHECK(y3.op && !strcmp(vg_op_type(y3.op), "AddN"));
    int64_t n = 0;
    CHECK(vg_op_attr_int(y3.op, "N", &n) && n == 3);
    vg_tensor *t = run(g, y2);
    check_values(t, VG_FLOAT, d, 2, e2, 0);
    vg_tensor_free(t);
    t = run(g, y3);
    check_values(t, VG_FLOAT, d, 2, e3, 0);
    vg_tensor_free(t);
    vg_output ii[3] = {cst(g, VG_INT32, d, 2, a), cst(g, VG_INT32, d, 2, b), cst(g, VG_INT32, d, 2, c)};
    t = run(g, vg_add_n(g, ii, 3, NULL));
    check_values(t, VG_INT32, d, 2, e3, 0);
    vg_tensor_free(t);
    CHECK(vg_add_n(g, in, 1, NULL).op == in[0].op); /* one input: returned as is */
    /* shape mismatch at build time */
    int64_t d3[1] = {3};
    vg_output bad[2] = {in[0], cst(g, VG_FLOAT, d3, 1, a)};
    CHECK(vg_add_n(g, bad, 2, NULL).op == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "AddN");
    vg_graph_free(g);
}

static void test_math__add_n_runtime_mismatch(void) {
    vg_graph *g = vg_graph_new();
    vg_output p[2] = {vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "a"),
                      vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "b")};
    vg_output y = vg_add_n(g, p, 2, NULL);
    double v[3] = {1, 2, 3};
    vg_tensor *fv[2] = {mk(VG_FLOAT, (int64_t[]){2}, 1, v), mk(VG_FLOAT, (int64_t[]){3}, 1, v)};
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *out = NULL;
    CHECK_STATUS(vg_session_run(s, NULL, p, fv, 2, &y, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "same size and shape");
    kt_teardown(g, s, (vg_tensor *[]){fv[0], fv[1]}, 2, NULL, 0);
}

static void check_cast(vg_dtype src, vg_dtype dst, int n, const double *x, const double *e) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {n};
    vg_output y = vg_cast(g, cst(g, src, d, 1, x), dst, NULL);
    vg_dtype a;
    CHECK(vg_op_attr_type_(y.op, "SrcT", &a) && a == src);
    CHECK(vg_op_attr_type_(y.op, "DstT", &a) && a == dst);
    bool tr = true;
    CHECK(vg_op_attr_bool(y.op, "Truncate", &tr) && !tr);
    vg_tensor *t = run(g, y);
    check_values(t, dst, d, 1, e, 1e-6);
    vg_tensor_free(t);
    vg_graph_free(g);
}

static void test_math__cast(void) {
    double f[5] = {1.7, -1.7, 0, 255.9, -0.5};
    double fi[5] = {1, -1, 0, 255, 0}, fb[5] = {1, 1, 0, 1, 1}, fu[5] = {1, 255, 0, 255, 0};
    check_cast(VG_FLOAT, VG_INT32, 5, f, fi);
    check_cast(VG_DOUBLE, VG_INT64, 5, f, fi);
    check_cast(VG_FLOAT, VG_BOOL, 5, f, fb);
    check_cast(VG_FLOAT, VG_UINT8, 5, f, fu);
    double u[3] = {0, 128, 255};
    check_cast(VG_UINT8, VG_FLOAT, 3, u, u);
    check_cast(VG_UINT8, VG_INT64, 3, u, u);
    double b[3] = {1, 0, 1};
    check_cast(VG_BOOL, VG_FLOAT, 3, b, b);
    check_cast(VG_BOOL, VG_INT32, 3, b, b);
    double i[4] = {-5, 0, 7, 1 << 24}, ib[4] = {1, 0, 1, 1};
    check_cast(VG_INT32, VG_FLOAT, 4, i, i);
    check_cast(VG_INT32, VG_INT64, 4, i, i);
    check_cast(VG_INT64, VG_DOUBLE, 4, i, i);
    check_cast(VG_INT64, VG_BOOL, 4, i, ib);
    double wrap[2] = {300, -1}, wrapped[2] = {44, 255};
    check_cast(VG_INT32, VG_UINT8, 2, wrap, wrapped);
    double d[2] = {0.1, -2.5};
    check_cast(VG_DOUBLE, VG_FLOAT, 2, d, d);
    check_cast(VG_FLOAT, VG_FLOAT, 2, d, d); /* same dtype: forwarded */
}

static void test_math__check_numerics(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {3};
    double ok[3] = {1, 2, 3}, withnan[3] = {1, NAN, 3}, withinf[3] = {1, -INFINITY, 3}, both[3] = {NAN, INFINITY, 0};
    vg_tensor *t = run(g, vg_check_numerics(g, cst(g, VG_FLOAT, d, 1, ok), "fine", NULL));
    check_values(t, VG_FLOAT, d, 1, ok, 0);
    vg_tensor_free(t);
    CHECK(run_st(g, vg_check_numerics(g, cst(g, VG_FLOAT, d, 1, withnan), "my check", "cn"), &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "my check : Tensor had NaN values");
    CHECK(run_st(g, vg_check_numerics(g, cst(g, VG_DOUBLE, d, 1, withinf), "m2", NULL), &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "m2 : Tensor had Inf values");
    CHECK(run_st(g, vg_check_numerics(g, cst(g, VG_FLOAT, d, 1, both), "m3", NULL), &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "m3 : Tensor had Inf and NaN values");
    CHECK(vg_check_numerics(g, vg_const_i32(g, 1, NULL), "m", NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "CheckNumerics");
    vg_graph_free(g);
}

/* Large unary / cast inputs take the parallel path. */
static void test_math__large(void) {
    enum { N = 100000 };
    vg_status st;
    vg_tensor *x = vg_tensor_new(VG_FLOAT, (int64_t[]){N}, 1, &st);
    float *px = vg_tensor_data(x);
    for (int i = 0; i < N; i++) px[i] = (float)(i % 1000) * 0.01f - 5.0f;
    vg_graph *g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){N}, 1, "x");
    vg_output ys[3] = {vg_exp(g, p, NULL), vg_cast(g, p, VG_INT32, NULL), vg_abs(g, p, NULL)};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *out[3] = {NULL, NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, &p, &x, 1, ys, out, 3, NULL, 0, NULL, &st), &st);
    if (out[0] && out[1] && out[2]) {
        const float *e = vg_tensor_data(out[0]), *a = vg_tensor_data(out[2]);
        const int32_t *c = vg_tensor_data(out[1]);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            if (e[i] != expf(px[i])) bad++;
            if (c[i] != (int32_t)px[i]) bad++;
            if (a[i] != fabsf(px[i])) bad++;
        }
        CHECK_EQ_INT(bad, 0);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    kt_teardown(g, s, (vg_tensor *[]){x}, 1, NULL, 0);
}

int main(void) {
    RUN_TEST(test_math__unary_float);
    RUN_TEST(test_math__unary_int);
    RUN_TEST(test_math__logical_not_is_finite);
    RUN_TEST(test_math__unary_dtype_errors);
    RUN_TEST(test_math__select);
    RUN_TEST(test_math__add_n);
    RUN_TEST(test_math__add_n_runtime_mismatch);
    RUN_TEST(test_math__cast);
    RUN_TEST(test_math__check_numerics);
    RUN_TEST(test_math__large);
    TEST_MAIN_END();
}
