/* test_math_binary.c - forward values of the math family's broadcasting binary ops
 * (AddV2, Sub, Mul, RealDiv, Maximum, Minimum, Pow, SquaredDifference, comparisons,
 * logical ops), their fast paths and general N-d broadcasting, and the error paths. */
#include "test_util.h"
#include "op_test_util.h"
#include "vigil/vigil.h"
#include "kernels/kernel.h"
#include "kernels_fixture.h"

/* ---- helpers ------------------------------------------------------------ */

typedef vg_output (*binop_builder)(vg_graph *, vg_output, vg_output, const char *);

/* Builds op(a, b) from Consts, runs it, compares with expect. */
static void check_bin(binop_builder fn, vg_dtype dt, const int64_t *da, int na, const double *va, const int64_t *db,
                      int nb, const double *vb, vg_dtype odt, const int64_t *dout, int nout, const double *vout) {
    vg_graph *g = vg_graph_new();
    vg_output y = fn(g, cst(g, dt, da, na, va), cst(g, dt, db, nb, vb), NULL);
    vg_status st;
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "build failed: %s\n", st.msg);
        vg_test_failures++;
    } else {
        vg_shape s = vg_output_shape(y);
        CHECK_EQ_INT(s.ndims, nout);
        vg_tensor *t = run(g, y);
        check_values(t, odt, dout, nout, vout, 1e-6);
        vg_tensor_free(t);
    }
    vg_graph_free(g);
}

/* ---- tests -------------------------------------------------------------- */

static void test_math__add_same_shape(void) {
    int64_t d[2] = {2, 3};
    double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60}, e[6] = {11, 22, 33, 44, 55, 66};
    check_bin(vg_add, VG_FLOAT, d, 2, a, d, 2, b, VG_FLOAT, d, 2, e);
    check_bin(vg_add_legacy, VG_DOUBLE, d, 2, a, d, 2, b, VG_DOUBLE, d, 2, e);
    check_bin(vg_add, VG_INT32, d, 2, a, d, 2, b, VG_INT32, d, 2, e);
    check_bin(vg_add, VG_INT64, d, 2, a, d, 2, b, VG_INT64, d, 2, e);
}

static void test_math__add_row_vector(void) { /* [2,3] + [3] */
    int64_t d[2] = {2, 3}, dv[1] = {3};
    double a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, e[6] = {11, 22, 33, 14, 25, 36};
    check_bin(vg_add, VG_FLOAT, d, 2, a, dv, 1, b, VG_FLOAT, d, 2, e);
    double e2[6] = {11, 22, 33, 14, 25, 36};
    check_bin(vg_add, VG_FLOAT, dv, 1, b, d, 2, a, VG_FLOAT, d, 2, e2);
}

static void test_math__add_outer(void) { /* [2,1] + [1,3] -> [2,3] */
    int64_t da[2] = {2, 1}, db[2] = {1, 3}, d[2] = {2, 3};
    double a[2] = {1, 2}, b[3] = {10, 20, 30}, e[6] = {11, 21, 31, 12, 22, 32};
    check_bin(vg_add, VG_FLOAT, da, 2, a, db, 2, b, VG_FLOAT, d, 2, e);
    check_bin(vg_add, VG_INT32, da, 2, a, db, 2, b, VG_INT32, d, 2, e);
}

static void test_math__scalar(void) {
    int64_t d[2] = {2, 3};
    double a[6] = {1, 2, 3, 4, 5, 6}, s[1] = {2};
    double e1[6] = {-1, 0, 1, 2, 3, 4}, e2[6] = {1, 0, -1, -2, -3, -4};
    check_bin(vg_sub, VG_FLOAT, d, 2, a, NULL, 0, s, VG_FLOAT, d, 2, e1);
    check_bin(vg_sub, VG_FLOAT, NULL, 0, s, d, 2, a, VG_FLOAT, d, 2, e2);
    double e3[1] = {4};
    check_bin(vg_mul, VG_INT64, NULL, 0, s, NULL, 0, s, VG_INT64, NULL, 0, e3);
}

static void test_math__column_broadcast(void) { /* [2,3] * [2,1] */
    int64_t d[2] = {2, 3}, dc[2] = {2, 1};
    double a[6] = {1, 2, 3, 4, 5, 6}, c[2] = {2, -1}, e[6] = {2, 4, 6, -4, -5, -6};
    check_bin(vg_mul, VG_FLOAT, d, 2, a, dc, 2, c, VG_FLOAT, d, 2, e);
    check_bin(vg_mul, VG_DOUBLE, d, 2, a, dc, 2, c, VG_DOUBLE, d, 2, e);
}

/* General N-d broadcasting against a naive reference: [2,1,3,1] op [4,1,2]. */
static void test_math__general_nd(void) {
    int64_t da[4] = {2, 1, 3, 1}, db[3] = {4, 1, 2}, dout[4] = {2, 4, 3, 2};
    double a[6], b[8], e[48];
    for (int i = 0; i < 6; i++) a[i] = i + 1;
    for (int i = 0; i < 8; i++) b[i] = (i + 1) * 10;
    for (int i0 = 0; i0 < 2; i0++)
        for (int i1 = 0; i1 < 4; i1++)
            for (int i2 = 0; i2 < 3; i2++)
                for (int i3 = 0; i3 < 2; i3++)
                    e[((i0 * 4 + i1) * 3 + i2) * 2 + i3] = a[i0 * 3 + i2] - b[i1 * 2 + i3];
    check_bin(vg_sub, VG_FLOAT, da, 4, a, db, 3, b, VG_FLOAT, dout, 4, e);
    check_bin(vg_sub, VG_INT64, da, 4, a, db, 3, b, VG_INT64, dout, 4, e);
}

/* One row of a table of check_bin cases on 4-element vectors: a of dt with b of dt (shape
 * db[nb]: [4], [1] or a scalar) gives e of odt, shape [4]. */
typedef struct bin4_row {
    const char *name;
    binop_builder fn;
    vg_dtype dt;
    const double *a;
    const int64_t *db;
    int nb;
    const double *b;
    vg_dtype odt;
    const double *e;
} bin4_row;

/* check_bin on each of the n rows; a failing row is named on stderr. */
static void check_bin4_rows(const bin4_row *rows, int n) {
    static const int64_t d4[1] = {4};
    for (int i = 0; i < n; i++) {
        int before = vg_test_failures;
        check_bin(rows[i].fn, rows[i].dt, d4, 1, rows[i].a, rows[i].db, rows[i].nb, rows[i].b, rows[i].odt, d4, 1,
                  rows[i].e);
        if (vg_test_failures != before) fprintf(stderr, "  case %s (row %d) failed\n", rows[i].name, i);
    }
}

static void test_math__arith_ops(void) {
    int64_t d[1] = {4};
    double a[4] = {1, -2, 3, 0.5}, b[4] = {2, 4, -1, 0.25};
    double div[4] = {0.5, -0.5, -3, 2}, mx[4] = {2, 4, 3, 0.5}, mn[4] = {1, -2, -1, 0.25};
    double sq[4] = {1, 36, 16, 0.0625}, pw[4] = {1, 16, 1.0 / 3, 0.84089641525371450};
    double ia[4] = {3, -7, 5, 0}, ib[4] = {2, 3, -9, 0};
    double imx[4] = {3, 3, 5, 0}, imn[4] = {2, -7, -9, 0}, isq[4] = {1, 100, 196, 0}, imul[4] = {6, -21, -45, 0};
    double pb[4] = {2, 3, 0, 5}, ipw[4] = {9, -343, 1, 0};
    const bin4_row rows[] = {
        {"div f32", vg_div, VG_FLOAT, a, d, 1, b, VG_FLOAT, div},
        {"div f64", vg_div, VG_DOUBLE, a, d, 1, b, VG_DOUBLE, div},
        {"maximum f32", vg_maximum, VG_FLOAT, a, d, 1, b, VG_FLOAT, mx},
        {"minimum f64", vg_minimum, VG_DOUBLE, a, d, 1, b, VG_DOUBLE, mn},
        {"squared_difference f32", vg_squared_difference, VG_FLOAT, a, d, 1, b, VG_FLOAT, sq},
        {"pow f64", vg_pow, VG_DOUBLE, a, d, 1, b, VG_DOUBLE, pw},
        {"maximum i32", vg_maximum, VG_INT32, ia, d, 1, ib, VG_INT32, imx},
        {"minimum i64", vg_minimum, VG_INT64, ia, d, 1, ib, VG_INT64, imn},
        {"squared_difference i32", vg_squared_difference, VG_INT32, ia, d, 1, ib, VG_INT32, isq},
        {"mul i32", vg_mul, VG_INT32, ia, d, 1, ib, VG_INT32, imul},
        {"pow i32", vg_pow, VG_INT32, ia, d, 1, pb, VG_INT32, ipw},
        {"pow i64", vg_pow, VG_INT64, ia, d, 1, pb, VG_INT64, ipw},
    };
    check_bin4_rows(rows, (int)(sizeof rows / sizeof rows[0]));
}

static void test_math__int_wraps(void) {
    int64_t d[1] = {2};
    double a[2] = {2147483647.0, -2147483648.0}, b[2] = {1, -1}, e[2] = {-2147483648.0, 2147483647.0};
    check_bin(vg_add, VG_INT32, d, 1, a, d, 1, b, VG_INT32, d, 1, e);
}

static void test_math__int_pow_negative_exponent(void) {
    vg_graph *g = vg_graph_new();
    vg_output y = vg_pow(g, vg_const_i32(g, 2, NULL), vg_const_i32(g, -1, NULL), NULL);
    vg_status st;
    CHECK(run_feeds(g, y, NULL, NULL, 0, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "negative integer powers");
    vg_graph_free(g);
}

static void test_math__comparisons(void) {
    int64_t d[1] = {4}, ds[1] = {1};
    double a[4] = {1, 2, 3, 4}, b[4] = {2, 2, 2, 2}, s[1] = {2};
    double gt[4] = {0, 0, 1, 1}, ge[4] = {0, 1, 1, 1}, lt[4] = {1, 0, 0, 0}, le[4] = {1, 1, 0, 0};
    double eq[4] = {0, 1, 0, 0}, ne[4] = {1, 0, 1, 1};
    double ba[4] = {0, 0, 1, 1}, bb[4] = {0, 1, 0, 1};
    double band[4] = {0, 0, 0, 1}, bor[4] = {0, 1, 1, 1}, beq[4] = {1, 0, 0, 1};
    const bin4_row rows[] = {
        {"greater f32", vg_greater, VG_FLOAT, a, d, 1, b, VG_BOOL, gt},
        {"greater_equal f64 [1]", vg_greater_equal, VG_DOUBLE, a, ds, 1, s, VG_BOOL, ge},
        {"less i32 scalar", vg_less, VG_INT32, a, NULL, 0, s, VG_BOOL, lt},
        {"less_equal i64", vg_less_equal, VG_INT64, a, d, 1, b, VG_BOOL, le},
        {"equal f32", vg_equal, VG_FLOAT, a, d, 1, b, VG_BOOL, eq},
        {"not_equal i32", vg_not_equal, VG_INT32, a, d, 1, b, VG_BOOL, ne},
        {"equal u8", vg_equal, VG_UINT8, a, d, 1, b, VG_BOOL, eq},
        {"logical_and", vg_logical_and, VG_BOOL, ba, d, 1, bb, VG_BOOL, band},
        {"logical_or", vg_logical_or, VG_BOOL, ba, d, 1, bb, VG_BOOL, bor},
        {"equal bool", vg_equal, VG_BOOL, ba, d, 1, bb, VG_BOOL, beq},
    };
    check_bin4_rows(rows, (int)(sizeof rows / sizeof rows[0]));
    /* TF's attrs: comparisons carry T, logical ops none */
    vg_graph *g = vg_graph_new();
    vg_output t = vg_const_bool(g, true, NULL);
    vg_dtype dt;
    CHECK(!vg_op_attr_type_(vg_logical_or(g, t, t, NULL).op, "T", &dt));
    CHECK(vg_op_attr_type_(vg_less(g, vg_const_i64(g, 1, NULL), vg_const_i64(g, 2, NULL), NULL).op, "T", &dt));
    CHECK_EQ_INT(dt, VG_INT64);
    vg_graph_free(g);
    /* broadcast comparison [2,1] > [3] */
    int64_t dc[2] = {2, 1}, dr[1] = {3}, dgt[2] = {2, 3};
    double c[2] = {1, 3}, r[3] = {0, 2, 4}, egt[6] = {1, 0, 0, 1, 1, 0};
    check_bin(vg_greater, VG_FLOAT, dc, 2, c, dr, 1, r, VG_BOOL, dgt, 2, egt);
}

static void test_math__empty(void) { /* [0,3] + [3] -> [0,3] */
    int64_t d0[2] = {0, 3}, d3[1] = {3};
    double b[3] = {1, 2, 3};
    check_bin(vg_add, VG_FLOAT, d0, 2, NULL, d3, 1, b, VG_FLOAT, d0, 2, NULL);
}

/* Large tensors take the parallel path; compare with a naive loop. */
static void test_math__large_parallel(void) {
    enum { N = 300, C = 257 };
    vg_status st;
    vg_tensor *a = vg_tensor_new(VG_FLOAT, (int64_t[]){N, C}, 2, &st);
    vg_tensor *b = vg_tensor_new(VG_FLOAT, (int64_t[]){C}, 1, &st);
    float *pa = vg_tensor_data(a), *pb = vg_tensor_data(b);
    for (int i = 0; i < N * C; i++) pa[i] = (float)((i * 37) % 101) - 50.0f;
    for (int i = 0; i < C; i++) pb[i] = (float)i * 0.5f;
    vg_graph *g = vg_graph_new();
    vg_output pa_ = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, C}, 2, "a");
    vg_output pb_ = vg_placeholder(g, VG_FLOAT, (int64_t[]){C}, 1, "b");
    vg_output ys[3] = {vg_add(g, pa_, pb_, NULL), vg_mul(g, pa_, vg_const_f32(g, 3, NULL), NULL),
                       vg_maximum(g, pa_, pa_, NULL)};
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output feeds[2] = {pa_, pb_};
    vg_tensor *fv[2] = {a, b}, *out[3] = {NULL, NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, feeds, fv, 2, ys, out, 3, NULL, 0, NULL, &st), &st);
    if (out[0] && out[1] && out[2]) {
        const float *o0 = vg_tensor_data(out[0]), *o1 = vg_tensor_data(out[1]), *o2 = vg_tensor_data(out[2]);
        int bad = 0;
        for (int i = 0; i < N * C; i++) {
            if (o0[i] != pa[i] + pb[i % C]) bad++;
            if (o1[i] != pa[i] * 3.0f) bad++;
            if (o2[i] != pa[i]) bad++;
        }
        CHECK_EQ_INT(bad, 0);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    kt_teardown(g, s, (vg_tensor *[]){a, b}, 2, NULL, 0);
}

static void test_math__shape_inference(void) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "a");
    vg_output b = vg_placeholder(g, VG_FLOAT, (int64_t[]){4, 1, 1}, 3, "b");
    vg_output c = vg_placeholder(g, VG_FLOAT, NULL, -1, "c");
    vg_shape s = vg_output_shape(vg_add(g, a, b, NULL));
    CHECK_EQ_INT(s.ndims, 3);
    CHECK_EQ_INT(s.dims[0], 4);
    CHECK_EQ_INT(s.dims[1], -1);
    CHECK_EQ_INT(s.dims[2], 3);
    s = vg_output_shape(vg_mul(g, a, c, NULL));
    CHECK_EQ_INT(s.ndims, -1);
    CHECK_EQ_INT(vg_output_dtype(vg_less(g, a, b, NULL)), VG_BOOL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* the helper itself */
    vg_shape x = vg_shape_make((int64_t[]){2, 3}, 2), y = vg_shape_make((int64_t[]){4}, 1), o;
    CHECK_STATUS(vg__shape_broadcast(&x, &y, &o, &st), &st, VG_INVALID_ARGUMENT, "Incompatible shapes: [2,3] vs. [4]");
    vg_shape u = vg_shape_make((int64_t[]){-1, 0}, 2), v = vg_shape_make((int64_t[]){-1}, 1);
    CHECK_OK(vg__shape_broadcast(&u, &v, &o, &st), &st);
    CHECK_EQ_INT(o.ndims, 2);
    CHECK_EQ_INT(o.dims[0], -1);
    CHECK_EQ_INT(o.dims[1], 0);
    vg_graph_free(g);
}

static void test_math__build_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "a");
    vg_output b = vg_placeholder(g, VG_FLOAT, (int64_t[]){4}, 1, "b");
    vg_output y = vg_add(g, a, b, NULL);
    CHECK(y.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "AddV2");
    CHECK_STR_CONTAINS(st.msg, "Incompatible shapes: [2,3] vs. [4]");
    /* later builders just pass the failure along */
    CHECK(vg_mul(g, y, a, NULL).op == NULL);
    vg_graph_free(g);

    const int64_t d2[1] = {2};
    kt_expect_binary_build_error(vg_sub, VG_FLOAT, d2, 1, VG_INT32, d2, 1, "Sub", "int32");
    /* RealDiv is floating-point only */
    kt_expect_binary_build_error(vg_div, VG_INT32, d2, 1, VG_INT32, d2, 1, "RealDiv", NULL);
    kt_expect_binary_build_error(vg_logical_and, VG_FLOAT, d2, 1, VG_FLOAT, d2, 1, "LogicalAnd", NULL);
}

static void test_math__runtime_incompatible(void) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, -1}, 2, "a");
    vg_output b = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "b");
    vg_output y = vg_add(g, a, b, "sum");
    double va[6] = {0}, vb[4] = {0};
    vg_tensor *ta = mk(VG_FLOAT, (int64_t[]){2, 3}, 2, va), *tb = mk(VG_FLOAT, (int64_t[]){4}, 1, vb);
    vg_output f[2] = {a, b};
    vg_tensor *fv[2] = {ta, tb};
    vg_status st;
    CHECK(run_feeds(g, y, f, fv, 2, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Incompatible shapes: [2,3] vs. [4]");
    CHECK_STR_CONTAINS(st.msg, "sum");
    kt_teardown(g, NULL, (vg_tensor *[]){ta, tb}, 2, NULL, 0);
}

int main(void) {
    RUN_TEST(test_math__add_same_shape);
    RUN_TEST(test_math__add_row_vector);
    RUN_TEST(test_math__add_outer);
    RUN_TEST(test_math__scalar);
    RUN_TEST(test_math__column_broadcast);
    RUN_TEST(test_math__general_nd);
    RUN_TEST(test_math__arith_ops);
    RUN_TEST(test_math__int_wraps);
    RUN_TEST(test_math__int_pow_negative_exponent);
    RUN_TEST(test_math__comparisons);
    RUN_TEST(test_math__empty);
    RUN_TEST(test_math__large_parallel);
    RUN_TEST(test_math__shape_inference);
    RUN_TEST(test_math__build_errors);
    RUN_TEST(test_math__runtime_incompatible);
    TEST_MAIN_END();
}
