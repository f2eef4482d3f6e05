/* test_math_ext_ops.c - Floor, Ceil, Round, Rint, FloorDiv, FloorMod, TruncateDiv,
 * Sin, Cos, Erf, Log1p, Expm1 and ClipByValue / tf.clip_by_value: forward values
 * (hand-computed or from libm / Python's floor semantics computed independently),
 * finite-difference gradients, TF's None gradients and the error paths.
 * Mirrors TF 1.15's math_ops_test.py RoundingTest / ModTest and cwise_ops_binary_test.py
 * DivAndModTest (intTestData / floatTestData, floordiv and floormod against Python's
 * // and %), clip_ops_test.py ClipTest (testClipByValue*). */
#include "gradcheck.h"
#include "op_test_util.h"
#include "kernels_fixture.h"
#include <limits.h>

static void test_floor_ceil_round_rint(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {10};
    double x[10] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6, 3.7, -3.2};
    vg_output c = cst(g, VG_FLOAT, d, 1, x);
    double fl[10] = {-3, -2, -1, 0, 1, 2, 0, -1, 3, -4};
    double ce[10] = {-2, -1, -0.0, 1, 2, 3, 1, -0.0, 4, -3};
    double ro[10] = {-2, -2, 0, 0, 2, 2, 0, -1, 4, -3}; /* half to even */
    expect_tol(run(g, vg_floor(g, c, NULL)), VG_FLOAT, d, 1, fl, 0);
    expect_tol(run(g, vg_ceil(g, c, NULL)), VG_FLOAT, d, 1, ce, 0);
    expect_tol(run(g, vg_round(g, c, NULL)), VG_FLOAT, d, 1, ro, 0);
    expect_tol(run(g, vg_rint(g, c, NULL)), VG_FLOAT, d, 1, ro, 0);
    /* RoundingTest._compare over np.arange(-5, 5, .25) in float64: np.rint == libm rint */
    double xs[40], ex[40];
    for (int i = 0; i < 40; i++) { xs[i] = -5 + 0.25 * i; ex[i] = rint(xs[i]); }
    int64_t d40[1] = {40};
    expect_tol(run(g, vg_round(g, cst(g, VG_DOUBLE, d40, 1, xs), NULL)), VG_DOUBLE, d40, 1, ex, 0);
    expect_tol(run(g, vg_rint(g, cst(g, VG_DOUBLE, d40, 1, xs), NULL)), VG_DOUBLE, d40, 1, ex, 0);
    /* Round on integers is the identity (TF registers int32/int64) */
    double iv[3] = {-7, 0, 9};
    int64_t d3[1] = {3};
    expect_tol(run(g, vg_round(g, cst(g, VG_INT32, d3, 1, iv), NULL)), VG_INT32, d3, 1, iv, 0);
    expect_tol(run(g, vg_round(g, cst(g, VG_INT64, d3, 1, iv), NULL)), VG_INT64, d3, 1, iv, 0);
    /* NaN / inf pass through */
    double sp[3] = {NAN, INFINITY, -INFINITY};
    expect_tol(run(g, vg_round(g, cst(g, VG_FLOAT, d3, 1, sp), NULL)), VG_FLOAT, d3, 1, sp, 0);
    expect_tol(run(g, vg_floor(g, cst(g, VG_FLOAT, d3, 1, sp), NULL)), VG_FLOAT, d3, 1, sp, 0);
    vg_graph_free(g);

    /* Floor on int32 has no kernel: INVALID_ARGUMENT naming the op and dtype at build */
    kt_expect_no_int32_kernel(vg_floor, "Floor");
}

/* Python's floor semantics, computed independently of the kernels. */
static double py_floordiv(double x, double y) { return floor(x / y); }
static double py_mod(double x, double y) { return x - y * floor(x / y); }

static void test_floordiv_floormod_int(void) {
    /* intTestData: nums = arange(-10, 10).reshape(20, 1), divs = arange(-3, 4, 2).reshape(1, 4) */
    double nums[20], divs[4] = {-3, -1, 1, 3}, efd[80], efm[80];
    for (int i = 0; i < 20; i++) nums[i] = -10 + i;
    for (int i = 0; i < 20; i++)
        for (int j = 0; j < 4; j++) {
            efd[i * 4 + j] = py_floordiv(nums[i], divs[j]);
            efm[i * 4 + j] = py_mod(nums[i], divs[j]);
        }
    int64_t dn[2] = {20, 1}, dd[2] = {1, 4}, dout[2] = {20, 4};
    vg_dtype types[2] = {VG_INT32, VG_INT64};
    for (int k = 0; k < 2; k++) {
        vg_graph *g = vg_graph_new();
        vg_output a = cst(g, types[k], dn, 2, nums), b = cst(g, types[k], dd, 2, divs);
        expect_tol(run(g, vg_floor_div(g, a, b, NULL)), types[k], dout, 2, efd, 0);
        expect_tol(run(g, vg_floor_mod(g, a, b, NULL)), types[k], dout, 2, efm, 0);
        vg_graph_free(g);
    }
    /* TruncateDiv rounds toward zero */
    vg_graph *g = vg_graph_new();
    int64_t d4[1] = {4};
    double x[4] = {-7, 7, -7, 7}, y[4] = {2, 2, -2, -2}, et[4] = {-3, 3, 3, -3};
    expect_tol(run(g, vg_truncate_div(g, cst(g, VG_INT32, d4, 1, x), cst(g, VG_INT32, d4, 1, y), NULL)),
              VG_INT32, d4, 1, et, 0);
    /* INT_MIN // -1 and INT_MIN % -1 wrap / give 0 as two's complement, never trap */
    double mn[1] = {(double)INT32_MIN}, m1[1] = {-1}, emn[1] = {(double)INT32_MIN}, ez[1] = {0};
    int64_t d1[1] = {1};
    expect_tol(run(g, vg_floor_div(g, cst(g, VG_INT32, d1, 1, mn), cst(g, VG_INT32, d1, 1, m1), NULL)),
              VG_INT32, d1, 1, emn, 0);
    expect_tol(run(g, vg_floor_mod(g, cst(g, VG_INT32, d1, 1, mn), cst(g, VG_INT32, d1, 1, m1), NULL)),
              VG_INT32, d1, 1, ez, 0);
    /* integer division by zero: INVALID_ARGUMENT as TF's safe_div functors */
    double z[4] = {1, 0, 2, 3};
    const char *ops[3] = {"FloorDiv", "FloorMod", "TruncateDiv"};
    for (int k = 0; k < 3; k++) {
        vg_output a = cst(g, VG_INT32, d4, 1, x), b = cst(g, VG_INT32, d4, 1, z);
        vg_output r = k == 0 ? vg_floor_div(g, a, b, NULL) : k == 1 ? vg_floor_mod(g, a, b, NULL)
                                                                    : vg_truncate_div(g, a, b, NULL);
        vg_status st;
        vg_tensor *t = run_st(g, r, &st);
        CHECK(t == NULL);
        CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "Integer division by zero");
        CHECK_STR_CONTAINS(st.msg, ops[k]);
    }
    /* TruncateDiv has no float kernel in TF 1.15 */
    vg_status st;
    CHECK(vg_truncate_div(g, vg_const_f32(g, 1, NULL), vg_const_f32(g, 2, NULL), NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static void test_floordiv_floormod_float(void) {
    /* floatTestData: nums = arange(-10, 10, .25).reshape(80, 1), divs non-zero in (-3, 3) */
    double nums[80], divs[8] = {-3, -2.25, -1.5, -0.75, 0.75, 1.5, 2.25, 3}, efd[640], efm[640];
    for (int i = 0; i < 80; i++) nums[i] = -10 + 0.25 * i;
    for (int i = 0; i < 80; i++)
        for (int j = 0; j < 8; j++) {
            efd[i * 8 + j] = py_floordiv(nums[i], divs[j]);
            efm[i * 8 + j] = py_mod(nums[i], divs[j]);
        }
    int64_t dn[2] = {80, 1}, dd[2] = {1, 8}, dout[2] = {80, 8};
    vg_graph *g = vg_graph_new();
    vg_output a = cst(g, VG_DOUBLE, dn, 2, nums), b = cst(g, VG_DOUBLE, dd, 2, divs);
    expect_tol(run(g, vg_floor_div(g, a, b, NULL)), VG_DOUBLE, dout, 2, efd, 0);
    expect_tol(run(g, vg_floor_mod(g, a, b, NULL)), VG_DOUBLE, dout, 2, efm, 1e-12);
    a = cst(g, VG_FLOAT, dn, 2, nums), b = cst(g, VG_FLOAT, dd, 2, divs);
    expect_tol(run(g, vg_floor_mod(g, a, b, NULL)), VG_FLOAT, dout, 2, efm, 1e-5);
    /* ModTest.testFloat: x % 3 with x = [5.9, 10, 11, ...] -> sign of the divisor */
    double xm[4] = {-5.5, 5.5, -5.5, 5.5}, ym[4] = {2, 2, -2, -2}, em[4] = {0.5, 1.5, -1.5, -0.5};
    int64_t d4[1] = {4};
    expect_tol(run(g, vg_floor_mod(g, cst(g, VG_FLOAT, d4, 1, xm), cst(g, VG_FLOAT, d4, 1, ym), NULL)),
              VG_FLOAT, d4, 1, em, 0);
    /* incompatible shapes */
    int64_t d3[1] = {3}, d2[1] = {2};
    double v3[3] = {1, 2, 3};
    vg_status st;
    CHECK(vg_floor_mod(g, cst(g, VG_FLOAT, d3, 1, v3), cst(g, VG_FLOAT, d2, 1, v3), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Incompatible shapes");
    vg_graph_free(g);
}

static void test_rounding_grads(void) {
    /* Floor, Ceil, Round, Rint, FloorDiv, TruncateDiv: TF's gradient is None */
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {3};
    double xv[3] = {0.3, 1.7, -2.2};
    vg_output x = vg_placeholder(g, VG_FLOAT, d, 1, "x");
    vg_output ys[5] = {vg_floor(g, x, NULL), vg_ceil(g, x, NULL), vg_round(g, x, NULL), vg_rint(g, x, NULL),
                       vg_floor_div(g, x, vg_const_f32(g, 2, NULL), NULL)};
    for (int k = 0; k < 5; k++) {
        vg_output dx;
        vg_status st;
        CHECK_OK(vg_gradients(g, &ys[k], 1, &x, 1, NULL, &dx, &st), &st);
        CHECK(dx.op == NULL);
    }
    vg_graph_free(g);
    /* FloorMod: (grad, -grad * floor(x / y)), with broadcasting of y; away from jumps */
    g = vg_graph_new();
    int64_t dx2[2] = {2, 3}, dy1[1] = {3};
    double xv2[6] = {5.3, -4.1, 7.7, 0.4, -9.2, 3.3}, yv[3] = {2.1, 1.6, -2.9};
    vg_tensor *tx, *ty;
    vg_output px = ph(g, VG_DOUBLE, dx2, 2, xv2, &tx), py = ph(g, VG_DOUBLE, dy1, 1, yv, &ty);
    vg_output ins[2] = {px, py};
    vg_tensor *vals[2] = {tx, ty};
    CHECK_EQ_INT(vg_gradcheck(g, ins, vals, 2, vg_floor_mod(g, px, py, NULL), 1e-6, 1e-6), 0);
    vg_tensor_free(tx);
    vg_tensor_free(ty);
    vg_graph_free(g);
    (void)xv;
}

static void test_special_forward_and_grads(void) {
    int64_t d[1] = {6};
    double x[6] = {-0.8, -0.4, 0.0, 0.2, 0.9, 2.5}; /* log1p needs x > -1 */
    double (*ref[5])(double) = {sin, cos, erf, log1p, expm1};
    vg_output (*build[5])(vg_graph *, vg_output, const char *) = {vg_sin, vg_cos, vg_erf, vg_log1p, vg_expm1};
    for (int k = 0; k < 5; k++) {
        vg_graph *g = vg_graph_new();
        double e[6];
        for (int i = 0; i < 6; i++) e[i] = ref[k](x[i]);
        expect_tol(run(g, build[k](g, cst(g, VG_DOUBLE, d, 1, x), NULL)), VG_DOUBLE, d, 1, e, 1e-15);
        expect_tol(run(g, build[k](g, cst(g, VG_FLOAT, d, 1, x), NULL)), VG_FLOAT, d, 1, e, 1e-6);
        vg_tensor *tx;
        vg_output px = ph(g, VG_DOUBLE, d, 1, x, &tx);
        CHECK_EQ_INT(vg_gradcheck(g, &px, &tx, 1, build[k](g, px, NULL), 1e-6, 1e-7), 0);
        vg_tensor_free(tx);
        vg_graph_free(g);
    }
    /* hand values */
    vg_graph *g = vg_graph_new();
    int64_t d2[1] = {2};
    double a[2] = {0, 1e-10}, e1[2] = {0, 1e-10};
    expect_tol(run(g, vg_log1p(g, cst(g, VG_DOUBLE, d2, 1, a), NULL)), VG_DOUBLE, d2, 1, e1, 1e-12);
    expect_tol(run(g, vg_expm1(g, cst(g, VG_DOUBLE, d2, 1, a), NULL)), VG_DOUBLE, d2, 1, e1, 1e-12);
    vg_graph_free(g);
}

static void test_clip_by_value(void) {
    vg_graph *g = vg_graph_new();
    /* ClipTest.testClipByValue: [[-5, 2, 3], [4, 5, 6]] clipped to [-4.4, 4.4] */
    int64_t d[2] = {2, 3};
    double x[6] = {-5.0, 2.0, 3.0, 4.0, 5.0, 6.0}, e[6] = {-4.4, 2.0, 3.0, 4.0, 4.4, 4.4};
    vg_output c = cst(g, VG_FLOAT, d, 2, x);
    vg_output clip = vg_clip_by_value(g, c, vg_const_f32(g, -4.4f, NULL), vg_const_f32(g, 4.4f, NULL), NULL);
    CHECK(clip.op && strcmp(vg_op_name(clip.op), "clip_by_value") == 0);
    CHECK(vg_graph_op_by_name(g, "clip_by_value/Minimum") != NULL);
    expect_tol(run(g, clip), VG_FLOAT, d, 2, e, 1e-7);
    expect_tol(run(g, vg_clip_by_value_op(g, c, vg_const_f32(g, -4.4f, NULL), vg_const_f32(g, 4.4f, NULL), NULL)),
              VG_FLOAT, d, 2, e, 1e-7);
    /* testClipByValueNonFinite and tensor bounds: min/max of t's shape */
    double lo[6] = {-1, -1, 3.5, 0, 0, 0}, hi[6] = {1, 1, 4, 3, 6, 10}, e2[6] = {-1, 1, 3.5, 3, 5, 6};
    expect_tol(run(g, vg_clip_by_value_op(g, c, cst(g, VG_FLOAT, d, 2, lo), cst(g, VG_FLOAT, d, 2, hi), NULL)),
              VG_FLOAT, d, 2, e2, 0);
    int64_t d3[1] = {3};
    double iv[3] = {-9, 4, 12}, ie[3] = {0, 4, 10};
    expect_tol(run(g, vg_clip_by_value_op(g, cst(g, VG_INT32, d3, 1, iv), vg_const_i32(g, 0, NULL),
                                            vg_const_i32(g, 10, NULL), NULL)),
              VG_INT32, d3, 1, ie, 0);
    /* bounds of another shape: INVALID_ARGUMENT (op), and broadcasting t (composite) */
    vg_status st;
    CHECK(vg_clip_by_value_op(g, c, cst(g, VG_FLOAT, d3, 1, iv), vg_const_f32(g, 1, NULL), NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "must be either scalars or have the same shape");
    vg_graph_free(g);
    g = vg_graph_new();
    int64_t d23[3] = {2, 2, 3};
    double big[12] = {0};
    CHECK(vg_clip_by_value(g, cst(g, VG_FLOAT, d, 2, x), vg_const_f32(g, 0, NULL), cst(g, VG_FLOAT, d23, 3, big),
                           NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);

    /* gradients: of the op w.r.t. t, min and max (tensor bounds), away from the kinks */
    g = vg_graph_new();
    double xv[6] = {-5.0, 2.0, 3.7, 4.0, 5.0, 6.0};
    vg_tensor *tx, *tl, *th;
    vg_output px = ph(g, VG_DOUBLE, d, 2, xv, &tx), pl = ph(g, VG_DOUBLE, d, 2, lo, &tl);
    vg_output phi = ph(g, VG_DOUBLE, d, 2, hi, &th);
    vg_output ins[3] = {px, pl, phi};
    vg_tensor *vals[3] = {tx, tl, th};
    CHECK_EQ_INT(vg_gradcheck(g, ins, vals, 3, vg_clip_by_value_op(g, px, pl, phi, NULL), 1e-6, 1e-7), 0);
    /* scalar bounds: their gradient is the sum over clipped elements */
    vg_tensor *sl = mk(VG_DOUBLE, NULL, 0, (double[]){-4.4}), *sh = mk(VG_DOUBLE, NULL, 0, (double[]){4.4});
    vg_output psl = vg_placeholder(g, VG_DOUBLE, NULL, 0, NULL), psh = vg_placeholder(g, VG_DOUBLE, NULL, 0, NULL);
    vg_output ins2[3] = {px, psl, psh};
    vg_tensor *vals2[3] = {tx, sl, sh};
    CHECK_EQ_INT(vg_gradcheck(g, ins2, vals2, 3, vg_clip_by_value_op(g, px, psl, psh, NULL), 1e-6, 1e-7), 0);
    CHECK_EQ_INT(vg_gradcheck(g, ins2, vals2, 3, vg_clip_by_value(g, px, psl, psh, NULL), 1e-6, 1e-7), 0);
    vg_tensor_free(tx), vg_tensor_free(tl), vg_tensor_free(th), vg_tensor_free(sl), vg_tensor_free(sh);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_floor_ceil_round_rint);
    RUN_TEST(test_floordiv_floormod_int);
    RUN_TEST(test_floordiv_floormod_float);
    RUN_TEST(test_rounding_grads);
    RUN_TEST(test_special_forward_and_grads);
    RUN_TEST(test_clip_by_value);
    TEST_MAIN_END();
}
