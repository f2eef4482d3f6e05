/* test_math_grad.c - finite-difference gradient checks (gradcheck.h) for every
 * differentiable op of the math family, with broadcasting, with build-time-known
 * and run-time-only shapes, second-order helper ops, and the non-differentiable ops. */
#include "test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* ---- helpers ------------------------------------------------------------ */

static unsigned g_seed = 12345;
static double urand(double lo, double hi) {
    g_seed = g_seed * 1103515245u + 12345u;
    return lo + (hi - lo) * (double)((g_seed >> 8) & 0xFFFFFF) / 16777216.0;
}

/* Random tensor with values in [lo, hi); when avoid_small, |v| >= 0.2. */
static vg_tensor *randt(vg_dtype dt, const int64_t *dims, int nd, double lo, double hi, bool avoid_small) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(dt, dims, nd, &st);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        double v;
        do v = urand(lo, hi);
        while (avoid_small && fabs(v) < 0.2);
        gc_set(t, i, v);
    }
    return t;
}

static int count_ops(vg_graph *g, const char *type) {
    int n = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++)
        if (!strcmp(vg_op_type(vg_graph_op(g, i)), type)) n++;
    return n;
}

typedef vg_output (*binop_builder)(vg_graph *, vg_output, vg_output, const char *);

typedef struct shape_case {
    int na, nb;
    int64_t a[3], b[3];
} shape_case;

static const shape_case k_shapes[] = {
    {2, 2, {2, 3}, {2, 3}},
    {2, 1, {2, 3}, {3}},
    {2, 2, {2, 1}, {1, 3}},
    {2, 0, {2, 3}, {0}},
    {0, 2, {0}, {2, 3}},
    {3, 2, {2, 1, 3}, {2, 1}},
};

/* Gradient check of fn(a, b) for every shape case, with placeholders of known shape
 * and (dynamic) with unknown dims. */
static void check_binary(binop_builder fn, double lo_a, double hi_a, double lo_b, double hi_b, bool avoid_small) {
    for (size_t c = 0; c < sizeof k_shapes / sizeof k_shapes[0]; c++) {
        const shape_case *sc = &k_shapes[c];
        for (int dyn = 0; dyn < 2; dyn++) {
            int64_t ua[3] = {-1, -1, -1}, ub[3] = {-1, -1, -1};
            vg_graph *g = vg_graph_new();
            vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, dyn ? ua : sc->a, sc->na, "a"),
                               vg_placeholder(g, VG_DOUBLE, dyn ? ub : sc->b, sc->nb, "b")};
            vg_tensor *xv[2] = {randt(VG_DOUBLE, sc->a, sc->na, lo_a, hi_a, avoid_small),
                                randt(VG_DOUBLE, sc->b, sc->nb, lo_b, hi_b, avoid_small)};
            vg_output y = fn(g, xs[0], xs[1], "op");
            int bad = vg_gradcheck(g, xs, xv, 2, y, 1e-6, 1e-5);
            if (bad) fprintf(stderr, "  shape case %zu dyn %d\n", c, dyn);
            CHECK_EQ_INT(bad, 0);
            /* build-time shapes need no BroadcastGradientArgs */
            if (!dyn) CHECK_EQ_INT(count_ops(g, "BroadcastGradientArgs"), 0);
            vg_tensor_free(xv[0]);
            vg_tensor_free(xv[1]);
            vg_graph_free(g);
        }
    }
}

typedef vg_output (*unop_builder)(vg_graph *, vg_output, const char *);

static void check_unary(unop_builder fn, double lo, double hi, bool avoid_small) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    vg_output x = vg_placeholder(g, VG_DOUBLE, d, 2, "x");
    vg_tensor *xv = randt(VG_DOUBLE, d, 2, lo, hi, avoid_small);
    vg_output y = fn(g, x, "op");
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-5), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

/* ---- tests -------------------------------------------------------------- */

static void test_math__grad_add_sub(void) {
    check_binary(vg_add, -1, 1, -1, 1, false);
    check_binary(vg_add_legacy, -1, 1, -1, 1, false);
    check_binary(vg_sub, -1, 1, -1, 1, false);
}

static void test_math__grad_mul_div(void) {
    check_binary(vg_mul, -2, 2, -2, 2, false);
    check_binary(vg_div, -2, 2, 0.5, 2, true);
}

static void test_math__grad_max_min(void) {
    check_binary(vg_maximum, -1, 1, -1, 1, false);
    check_binary(vg_minimum, -1, 1, -1, 1, false);
}

static void test_math__grad_pow_sqdiff(void) {
    check_binary(vg_pow, 0.5, 2, -1.5, 2, false);
    check_binary(vg_squared_difference, -2, 2, -2, 2, false);
}

/* Pow's gradient w.r.t. the exponent is 0 where x <= 0 (no NaN from log). */
static void test_math__grad_pow_nonpositive_base(void) {
    vg_graph *g = vg_graph_new();
    double xv[3] = {0, -2, 3}, yv[3] = {2, 2, 2};
    vg_output x = vg_const_array(g, VG_DOUBLE, (int64_t[]){3}, 1, xv, "x");
    vg_output e = vg_const_array(g, VG_DOUBLE, (int64_t[]){3}, 1, yv, "e");
    vg_output z = vg_pow(g, x, e, NULL);
    vg_output dx[2];
    vg_status st;
    CHECK_OK(vg_gradients(g, &z, 1, (vg_output[]){x, e}, 2, NULL, dx, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *out[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, dx, out, 2, NULL, 0, NULL, &st), &st);
    if (out[0] && out[1]) {
        const double *gx = vg_tensor_data(out[0]), *ge = vg_tensor_data(out[1]);
        CHECK_NEAR(gx[0], 0, 1e-12);
        CHECK_NEAR(gx[1], -4, 1e-12);
        CHECK_NEAR(gx[2], 6, 1e-12);
        CHECK_NEAR(ge[0], 0, 1e-12);
        CHECK_NEAR(ge[1], 0, 1e-12);
        CHECK_NEAR(ge[2], 9 * log(3.0), 1e-12);
    }
    kt_teardown(g, s, (vg_tensor *[]){out[0], out[1]}, 2, NULL, 0);
}

static void test_math__grad_unary(void) {
    check_unary(vg_neg, -1, 1, false);
    check_unary(vg_square, -2, 2, false);
    check_unary(vg_sqrt, 0.5, 3, false);
    check_unary(vg_rsqrt, 0.5, 3, false);
    check_unary(vg_exp, -2, 2, false);
    check_unary(vg_log, 0.5, 3, false);
    check_unary(vg_abs, -2, 2, true);
    check_unary(vg_sign, -2, 2, true);
    check_unary(vg_reciprocal, 0.5, 3, false);
    check_unary(vg_reciprocal, -3, -0.5, false);
}

static vg_output sqrt_grad_of(vg_graph *g, vg_output x, const char *name) {
    vg_output y = vg_sqrt(g, x, name), dx;
    vg_gradients(g, &y, 1, &x, 1, NULL, &dx, NULL);
    return dx;
}
static vg_output rsqrt_grad_of(vg_graph *g, vg_output x, const char *name) {
    vg_output y = vg_rsqrt(g, x, name), dx;
    vg_gradients(g, &y, 1, &x, 1, NULL, &dx, NULL);
    return dx;
}
static vg_output reciprocal_grad_of(vg_graph *g, vg_output x, const char *name) {
    vg_output y = vg_reciprocal(g, x, name), dx;
    vg_gradients(g, &y, 1, &x, 1, NULL, &dx, NULL);
    return dx;
}

/* Second order: the gradients of SqrtGrad, RsqrtGrad, ReciprocalGrad. */
static void test_math__grad_second_order(void) {
    check_unary(sqrt_grad_of, 0.5, 3, false);
    check_unary(rsqrt_grad_of, 0.5, 3, false);
    check_unary(reciprocal_grad_of, 0.5, 3, false);
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3}, 1, "x");
    vg_output d = sqrt_grad_of(g, x, NULL);
    CHECK(d.op && !strcmp(vg_op_type(d.op), "SqrtGrad"));
    vg_graph_free(g);
}

static void test_math__grad_select(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    bool cv[6] = {true, false, false, true, true, false};
    vg_output c = vg_const_array(g, VG_BOOL, d, 2, cv, "c");
    vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, d, 2, "t"), vg_placeholder(g, VG_DOUBLE, d, 2, "e")};
    vg_tensor *xv[2] = {randt(VG_DOUBLE, d, 2, -1, 1, false), randt(VG_DOUBLE, d, 2, -1, 1, false)};
    vg_output y = vg_select(g, c, xs[0], xs[1], NULL);
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 2, y, 1e-6, 1e-5), 0);
    /* vector condition */
    bool rv[2] = {false, true};
    vg_output y2 = vg_select(g, vg_const_array(g, VG_BOOL, (int64_t[]){2}, 1, rv, "r"), xs[0], xs[1], NULL);
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 2, y2, 1e-6, 1e-5), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xv[0], xv[1]}, 2, NULL, 0);
}

static void test_math__grad_add_n(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 2};
    vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, d, 2, "a"), vg_placeholder(g, VG_DOUBLE, d, 2, "b")};
    vg_tensor *xv[2] = {randt(VG_DOUBLE, d, 2, -1, 1, false), randt(VG_DOUBLE, d, 2, -1, 1, false)};
    vg_output in[3] = {xs[0], vg_square(g, xs[1], NULL), xs[0]};
    vg_output y = vg_add_n(g, in, 3, NULL);
    CHECK_EQ_INT(vg_gradcheck(g, xs, xv, 2, y, 1e-6, 1e-5), 0);
    kt_teardown(g, NULL, (vg_tensor *[]){xv[0], xv[1]}, 2, NULL, 0);
}

static void test_math__grad_cast(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {4};
    vg_output x = vg_placeholder(g, VG_FLOAT, d, 1, "x");
    vg_tensor *xv = randt(VG_FLOAT, d, 1, -1, 1, false);
    vg_output y = vg_square(g, vg_cast(g, x, VG_DOUBLE, NULL), NULL);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-2, 2e-2), 0);
    /* through an integer: no gradient (TF's None) */
    vg_output z = vg_cast(g, vg_cast(g, x, VG_INT32, NULL), VG_FLOAT, NULL), dz;
    vg_status st;
    CHECK_OK(vg_gradients(g, &z, 1, &x, 1, NULL, &dz, &st), &st);
    CHECK(dz.op == NULL);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

static void test_math__grad_check_numerics(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    vg_output x = vg_placeholder(g, VG_DOUBLE, d, 2, "x");
    vg_tensor *xv = randt(VG_DOUBLE, d, 2, -1, 1, false);
    vg_output y = vg_check_numerics(g, vg_square(g, x, NULL), "sq", NULL);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-5), 0);
    CHECK(count_ops(g, "CheckNumerics") >= 2); /* the gradient is checked too */
    vg_tensor_free(xv);
    vg_graph_free(g);
}

/* A non-differentiable op on the path just stops the gradient. */
static void test_math__grad_not_differentiable(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {6};
    vg_output x = vg_placeholder(g, VG_DOUBLE, d, 1, "x");
    vg_tensor *xv = randt(VG_DOUBLE, d, 1, -1, 1, true);
    vg_output pos = vg_cast(g, vg_greater(g, x, vg_const_f64(g, 0, NULL), NULL), VG_DOUBLE, NULL);
    vg_output am = vg_cast(g, vg_argmax(g, vg_reshape_c(g, x, (int64_t[]){2, 3}, 2, NULL), 1, VG_INT64, NULL),
                           VG_DOUBLE, NULL);
    vg_output y = vg_add(g, vg_mul(g, x, pos, NULL), vg_reduce_sum(g, am, NULL, -1, false, NULL), NULL);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-5), 0);
    vg_tensor_free(xv);
    vg_graph_free(g);
}

typedef vg_output (*red_builder)(vg_graph *, vg_output, const int32_t *, int, bool, const char *);

/* Gradient check of a reduction over axes, with the input shape known or unknown
 * (rank known) at build time. */
static void check_reduce(red_builder fn, const int32_t *axes, int naxes, bool keep) {
    int64_t d[3] = {2, 3, 4}, u[3] = {-1, -1, -1};
    for (int dyn = 0; dyn < 2; dyn++) {
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_DOUBLE, dyn ? u : d, 3, "x");
        vg_tensor *xv = randt(VG_DOUBLE, d, 3, -1, 1, false);
        vg_output y = fn(g, x, axes, naxes, keep, NULL);
        int bad = vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-5);
        if (bad) fprintf(stderr, "  naxes %d keep %d dyn %d\n", naxes, keep, dyn);
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(xv);
        vg_graph_free(g);
    }
}

static void check_reduce_all_cases(red_builder fn) {
    check_reduce(fn, (int32_t[]){1}, 1, false);
    check_reduce(fn, (int32_t[]){-1}, 1, true);
    check_reduce(fn, (int32_t[]){0, 2}, 2, false);
    check_reduce(fn, NULL, -1, false);
    check_reduce(fn, NULL, -1, true);
}

static void test_math__grad_sum_mean(void) {
    check_reduce_all_cases(vg_reduce_sum);
    check_reduce_all_cases(vg_reduce_mean);
}

static void test_math__grad_max_min_reduce(void) {
    check_reduce_all_cases(vg_reduce_max);
    check_reduce_all_cases(vg_reduce_min);
}

/* Ties share the gradient evenly (TF's _MinOrMaxGrad). */
static void test_math__grad_max_ties(void) {
    vg_graph *g = vg_graph_new();
    double xv[4] = {1, 3, 3, 2};
    vg_output x = vg_const_array(g, VG_DOUBLE, (int64_t[]){4}, 1, xv, "x");
    vg_output y = vg_reduce_max(g, x, NULL, -1, false, NULL), dx;
    vg_status st;
    CHECK_OK(vg_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, dx, &t, &st), &st);
    if (t) {
        const double *v = vg_tensor_data(t);
        CHECK_NEAR(v[0], 0, 0);
        CHECK_NEAR(v[1], 0.5, 1e-12);
        CHECK_NEAR(v[2], 0.5, 1e-12);
        CHECK_NEAR(v[3], 0, 0);
    }
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

/* Unknown rank and axes fed at run time: the fully dynamic reduced-shape path. */
static void test_math__grad_reduce_dynamic_axes(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, NULL, -1, "x");
    vg_output ax = vg_placeholder(g, VG_INT64, (int64_t[]){-1}, 1, "axes");
    int64_t d[3] = {2, 3, 2};
    vg_tensor *xv = randt(VG_DOUBLE, d, 3, -1, 1, false);
    vg_status st;
    vg_tensor *av = vg_tensor_new_copy(VG_INT64, (int64_t[]){2}, 1, (int64_t[]){-1, 0}, 2 * sizeof(int64_t), &st);
    vg_output ys[3] = {vg_sum(g, x, ax, false, NULL), vg_mean(g, x, ax, true, NULL), vg_max(g, x, ax, false, NULL)};
    for (int i = 0; i < 3; i++) {
        int bad = vg_gradcheck_ex(g, &x, &xv, 1, &ax, &av, 1, ys[i], 1e-6, 1e-5);
        if (bad) fprintf(stderr, "  reduction %d\n", i);
        CHECK_EQ_INT(bad, 0);
    }
    kt_teardown(g, NULL, (vg_tensor *[]){xv, av}, 2, NULL, 0);
}

/* Partially known shapes: the reduction axes are still decided at build time when
 * possible ([-1,3] + [3], [-1,1] * [1,3] fed as [2,1] and as [1,1]). */
static void test_math__grad_partial_shapes(void) {
    struct { int64_t pa[2], pb[2]; int nb; int64_t fa[2], fb[2]; binop_builder fn; } cases[] = {
        {{-1, 3}, {3}, 1, {4, 3}, {3}, vg_add},
        {{-1, 1}, {1, 3}, 2, {2, 1}, {1, 3}, vg_mul},
        {{-1, 1}, {1, 3}, 2, {1, 1}, {1, 3}, vg_mul},
        {{-1, 1}, {1, 3}, 2, {2, 1}, {1, 3}, vg_squared_difference},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vg_graph *g = vg_graph_new();
        vg_output xs[2] = {vg_placeholder(g, VG_DOUBLE, cases[c].pa, 2, "a"),
                           vg_placeholder(g, VG_DOUBLE, cases[c].pb, cases[c].nb, "b")};
        vg_tensor *xv[2] = {randt(VG_DOUBLE, cases[c].fa, 2, -1, 1, false),
                            randt(VG_DOUBLE, cases[c].fb, cases[c].nb, -1, 1, false)};
        vg_output y = cases[c].fn(g, xs[0], xs[1], NULL), dxs[2];
        vg_status st;
        CHECK_OK(vg_gradients(g, &y, 1, xs, 2, NULL, dxs, &st), &st);
        CHECK_EQ_INT(count_ops(g, "BroadcastGradientArgs"), 0);
        int bad = vg_gradcheck(g, xs, xv, 2, y, 1e-6, 1e-5);
        if (bad) fprintf(stderr, "  case %zu\n", c);
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(xv[0]);
        vg_tensor_free(xv[1]);
        vg_graph_free(g);
    }
}

/* Reductions of a scalar (no axes) and of size-1 dims only. */
static void test_math__grad_reduce_trivial(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, NULL, 0, "x");
    vg_tensor *xv = randt(VG_DOUBLE, NULL, 0, -1, 1, false);
    CHECK_EQ_INT(vg_gradcheck(g, &x, &xv, 1, vg_reduce_sum(g, vg_square(g, x, NULL), NULL, -1, false, NULL),
                              1e-6, 1e-5), 0);
    vg_tensor_free(xv);
    vg_output z = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3, 1}, 2, "z");
    vg_tensor *zv = randt(VG_DOUBLE, (int64_t[]){3, 1}, 2, -1, 1, false);
    CHECK_EQ_INT(vg_gradcheck(g, &z, &zv, 1, vg_reduce_max(g, z, (int32_t[]){1}, 1, false, NULL), 1e-6, 1e-5), 0);
    CHECK_EQ_INT(vg_gradcheck(g, &z, &zv, 1, vg_reduce_mean(g, z, (int32_t[]){1}, 1, true, NULL), 1e-6, 1e-5), 0);
    vg_tensor_free(zv);
    vg_graph_free(g);
}

/* The MLP bias pattern [N,C] + [C] (N unknown): one Sum over a Const axis. */
static void test_math__grad_bias_pattern_ops(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 256}, 2, "x");
    vg_output b = vg_placeholder(g, VG_FLOAT, (int64_t[]){256}, 1, "b");
    vg_output y = vg_add(g, x, b, NULL), dx[2];
    vg_status st;
    int before = vg_graph_num_ops(g);
    CHECK_OK(vg_gradients(g, &y, 1, (vg_output[]){x, b}, 2, NULL, dx, &st), &st);
    CHECK_EQ_INT(count_ops(g, "Sum"), 1);
    CHECK_EQ_INT(count_ops(g, "Reshape"), 0);
    CHECK_EQ_INT(count_ops(g, "BroadcastGradientArgs"), 0);
    CHECK(vg_graph_num_ops(g) - before <= 8);
    vg_graph_free(g);
}

static void test_math__grad_prod_undefined(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_DOUBLE, (int64_t[]){3}, 1, "x");
    vg_output y = vg_prod(g, x, vg_const_i32(g, 0, NULL), false, NULL), dx;
    vg_status st;
    CHECK_STATUS(vg_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), &st, VG_INVALID_ARGUMENT, "Prod");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_math__grad_add_sub);
    RUN_TEST(test_math__grad_mul_div);
    RUN_TEST(test_math__grad_max_min);
    RUN_TEST(test_math__grad_pow_sqdiff);
    RUN_TEST(test_math__grad_pow_nonpositive_base);
    RUN_TEST(test_math__grad_unary);
    RUN_TEST(test_math__grad_second_order);
    RUN_TEST(test_math__grad_select);
    RUN_TEST(test_math__grad_add_n);
    RUN_TEST(test_math__grad_cast);
    RUN_TEST(test_math__grad_check_numerics);
    RUN_TEST(test_math__grad_not_differentiable);
    RUN_TEST(test_math__grad_sum_mean);
    RUN_TEST(test_math__grad_max_min_reduce);
    RUN_TEST(test_math__grad_max_ties);
    RUN_TEST(test_math__grad_reduce_dynamic_axes);
    RUN_TEST(test_math__grad_partial_shapes);
    RUN_TEST(test_math__grad_reduce_trivial);
    RUN_TEST(test_math__grad_bias_pattern_ops);
    RUN_TEST(test_math__grad_prod_undefined);
    TEST_MAIN_END();
}
