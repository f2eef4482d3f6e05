/* test_complex_ops.c - the complex64 / complex128 dtypes (storage, feeds and fetches,
 * GraphDef and checkpoint encodings, Cast, element-wise math, reductions, shape ops,
 * gradients) and complex_ops.c's Complex, Real, Imag, Conj, Angle, ComplexAbs.
 * Translated tests cite TF 1.15's python/kernel_tests/cwise_ops_test.py
 * (ComplexMakeRealImagTest) and math_grad_test.py; expected values are worked by hand
 * or, for transcendental functions, from C99's <complex.h>. */
#include "test_util.h"
#include "session_test_util.h"
#include "op_test_util.h"
#include "gradcheck.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <complex.h>

/* A complex tensor from n (re, im) pairs. */
static vg_tensor *cmk(vg_dtype dt, const int64_t *dims, int nd, const double *ri) {
    vg_tensor *t = vg_tensor_new(dt, dims, nd, NULL);
    for (int64_t i = 0; i < 2 * vg_tensor_num_elements(t); i++) {
        if (dt == VG_COMPLEX64) ((float *)vg_tensor_data(t))[i] = (float)ri[i];
        else ((double *)vg_tensor_data(t))[i] = ri[i];
    }
    return t;
}
static vg_output ccst(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, const double *ri) {
    return kt_const_take(g, cmk(dt, dims, nd, ri), NULL);
}
static double complex cget(const vg_tensor *t, int64_t i) {
    if (vg_tensor_dtype(t) == VG_COMPLEX64) {
        const float *f = vg_tensor_data(t);
        return f[2 * i] + I * f[2 * i + 1];
    }
    const double *d = vg_tensor_data(t);
    return d[2 * i] + I * d[2 * i + 1];
}
/* Checks dtype, element count and the values of a complex result, then frees it. */
static void cexpect(vg_tensor *t, vg_dtype dt, int64_t n, const double complex *want, double tol) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_dtype(t), dt);
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    for (int64_t i = 0; i < n && i < vg_tensor_num_elements(t); i++) {
        CHECK_NEAR(creal(cget(t, i)), creal(want[i]), tol);
        CHECK_NEAR(cimag(cget(t, i)), cimag(want[i]), tol);
    }
    vg_tensor_free(t);
}

static void test_dtype_basics(void) {
    CHECK_EQ_INT(VG_COMPLEX64, 8);
    CHECK_EQ_INT(VG_COMPLEX128, 18);
    CHECK_EQ_INT(vg_dtype_size(VG_COMPLEX64), 8);
    CHECK_EQ_INT(vg_dtype_size(VG_COMPLEX128), 16);
    CHECK(!strcmp(vg_dtype_name(VG_COMPLEX64), "complex64"));
    CHECK(!strcmp(vg_dtype_name(VG_COMPLEX128), "complex128"));
    CHECK_EQ_INT(sizeof(float _Complex), 8);
    /* feed a complex64 placeholder from C and fetch it back through Identity */
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {2};
    vg_output p = vg_placeholder(g, VG_COMPLEX64, d, 1, "p");
    vg_output y = vg_identity(g, p, "y");
    float _Complex buf[2] = {1.5f + 2.0f * I, -3.0f - 0.25f * I};
    vg_status st;
    vg_tensor *in = vg_tensor_new_copy(VG_COMPLEX64, d, 1, buf, sizeof buf, &st);
    CHECK(in != NULL);
    vg_tensor *out = run_feeds(g, y, &p, &in, 1, &st);
    cexpect(out, VG_COMPLEX64, 2, (const double complex[]){1.5 + 2.0 * I, -3.0 - 0.25 * I}, 0);
    vg_tensor_free(in);
    vg_graph_free(g);
}

/* TF: ComplexMakeRealImagTest.testMake / testRealImag / testAngle / testConjugate, and
 * ComplexAbs (cwise_ops_test.py's _compareCpu of tf.abs on complex) */
static void test_make_real_imag(void) {
    for (int k = 0; k < 2; k++) {
        vg_dtype rt = k ? VG_DOUBLE : VG_FLOAT, ct = k ? VG_COMPLEX128 : VG_COMPLEX64;
        vg_graph *g = vg_graph_new();
        int64_t d[2] = {2, 2}, d1[1] = {2};
        vg_output re = cst(g, rt, d, 2, (const double[]){3, -1, 0, 0.5});
        vg_output im = cst(g, rt, d1, 1, (const double[]){4, 2}); /* broadcast over rows */
        vg_output z = vg_complex(g, re, im, "z");
        CHECK_EQ_INT(vg_output_dtype(z), ct);
        const double complex zv[4] = {3 + 4 * I, -1 + 2 * I, 0 + 4 * I, 0.5 + 2 * I};
        cexpect(run(g, z), ct, 4, zv, 1e-7);
        expect(run(g, vg_real(g, z, NULL)), rt, d, 2, (const double[]){3, -1, 0, 0.5});
        expect(run(g, vg_imag(g, z, NULL)), rt, d, 2, (const double[]){4, 2, 4, 2});
        const double complex cv[4] = {3 - 4 * I, -1 - 2 * I, 0 - 4 * I, 0.5 - 2 * I};
        cexpect(run(g, vg_conj(g, z, NULL)), ct, 4, cv, 1e-7);
        vg_tensor *a = run(g, vg_angle(g, z, NULL));
        check_values(a, rt, d, 2, (const double[]){atan2(4, 3), atan2(2, -1), M_PI / 2, atan2(2, 0.5)}, 1e-6);
        vg_tensor_free(a);
        vg_tensor *m = run(g, vg_complex_abs(g, z, NULL));
        check_values(m, rt, d, 2, (const double[]){5, sqrt(5), 4, sqrt(4.25)}, 1e-6);
        vg_tensor_free(m);
        vg_graph_free(g);
    }
}

static void test_make_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_output i = vg_const_i32(g, 1, NULL);
    vg_output c = vg_complex(g, i, i, NULL);
    CHECK(c.op == NULL);
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output f = cst(g, VG_FLOAT, NULL, 0, (const double[]){1.5});
    CHECK(vg_angle(g, f, NULL).op == NULL); /* the op takes complex only */
    CHECK_CODE(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* math_ops.real / conj of a real tensor: the tensor; imag: zeros */
    g = vg_graph_new();
    f = cst(g, VG_FLOAT, NULL, 0, (const double[]){1.5});
    CHECK(vg_real(g, f, NULL).op == f.op && vg_conj(g, f, NULL).op == f.op);
    expect(run(g, vg_imag(g, f, NULL)), VG_FLOAT, NULL, 0, (const double[]){0});
    vg_graph_free(g);
    /* Abs, Maximum and Greater take no complex (TF's op defs) */
    const double one[2] = {1, 1};
    g = vg_graph_new();
    vg_output z = ccst(g, VG_COMPLEX64, NULL, 0, (const double[]){3, -4});
    vg_output a = vg_abs(g, z, NULL); /* tf.abs on complex: ComplexAbs, real output */
    CHECK(a.op && !strcmp(vg_op_type(a.op), "ComplexAbs"));
    expect(run(g, a), VG_FLOAT, NULL, 0, (const double[]){5});
    vg_op_builder *bd = vg_op_builder_new(g, "Abs", NULL); /* the raw Abs op refuses complex */
    vg_op_builder_add_input(bd, z);
    CHECK(vg_op_builder_finish(bd) == NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    z = ccst(g, VG_COMPLEX64, NULL, 0, one);
    CHECK(vg_maximum(g, z, z, NULL).op == NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    z = ccst(g, VG_COMPLEX128, NULL, 0, one);
    CHECK(vg_greater(g, z, z, NULL).op == NULL);
    vg_graph_free(g);
}

/* Element-wise math on complex (cwise_ops_test.py ComplexOpTest-style checks against
 * the C library). */
static void test_cwise(void) {
    for (int k = 0; k < 2; k++) {
        vg_dtype ct = k ? VG_COMPLEX128 : VG_COMPLEX64;
        double tol = k ? 1e-12 : 1e-5;
        vg_graph *g = vg_graph_new();
        int64_t d[1] = {3};
        const double xa[6] = {1, 2, -0.5, 0.25, 3, -4}, ya[6] = {3, -1, 2, 2, -1, 0.5};
        vg_output x = ccst(g, ct, d, 1, xa), y = ccst(g, ct, d, 1, ya);
        double complex xv[3], yv[3], w[3];
        for (int i = 0; i < 3; i++) xv[i] = xa[2 * i] + I * xa[2 * i + 1], yv[i] = ya[2 * i] + I * ya[2 * i + 1];
        /* (1+2i)(3-i) = 5+5i by hand */
        vg_tensor *m = run(g, vg_mul(g, x, y, NULL));
        CHECK(m && creal(cget(m, 0)) == 5 && cimag(cget(m, 0)) == 5);
        vg_tensor_free(m);
        for (int i = 0; i < 3; i++) w[i] = xv[i] + yv[i];
        cexpect(run(g, vg_add(g, x, y, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = xv[i] - yv[i];
        cexpect(run(g, vg_sub(g, x, y, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = xv[i] / yv[i];
        cexpect(run(g, vg_div(g, x, y, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = -xv[i];
        cexpect(run(g, vg_neg(g, x, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = xv[i] * xv[i];
        cexpect(run(g, vg_square(g, x, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = cexp(xv[i]);
        cexpect(run(g, vg_exp(g, x, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = clog(xv[i]);
        cexpect(run(g, vg_log(g, x, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = csqrt(xv[i]);
        cexpect(run(g, vg_sqrt(g, x, NULL)), ct, 3, w, tol);
        for (int i = 0; i < 3; i++) w[i] = 1.0 / xv[i];
        cexpect(run(g, vg_reciprocal(g, x, NULL)), ct, 3, w, tol);
        /* broadcasting a complex scalar */
        vg_output s = ccst(g, ct, NULL, 0, (const double[]){0, 1}); /* i */
        for (int i = 0; i < 3; i++) w[i] = xv[i] * I;
        cexpect(run(g, vg_mul(g, x, s, NULL)), ct, 3, w, tol);
        vg_output ins[3] = {x, y, x};
        for (int i = 0; i < 3; i++) w[i] = 2 * xv[i] + yv[i];
        cexpect(run(g, vg_add_n(g, ins, 3, NULL)), ct, 3, w, tol);
        vg_tensor *e = run(g, vg_equal(g, x, vg_identity(g, x, NULL), NULL));
        check_values(e, VG_BOOL, d, 1, (const double[]){1, 1, 1}, 0);
        vg_tensor_free(e);
        vg_graph_free(g);
    }
}

/* Cast between complex and real / integer types (cast_op_test.py's complex cases:
 * real -> complex has imaginary part 0, complex -> real keeps the real part). */
static void test_cast(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {2};
    vg_output f = cst(g, VG_FLOAT, d, 1, (const double[]){1.5, -2});
    cexpect(run(g, vg_cast(g, f, VG_COMPLEX64, NULL)), VG_COMPLEX64, 2, (const double complex[]){1.5, -2}, 0);
    vg_output i = cst(g, VG_INT32, d, 1, (const double[]){7, -3});
    cexpect(run(g, vg_cast(g, i, VG_COMPLEX128, NULL)), VG_COMPLEX128, 2, (const double complex[]){7, -3}, 0);
    vg_output z = ccst(g, VG_COMPLEX128, d, 1, (const double[]){2.75, 9, -1.5, -4});
    expect(run(g, vg_cast(g, z, VG_FLOAT, NULL)), VG_FLOAT, d, 1, (const double[]){2.75, -1.5});
    expect(run(g, vg_cast(g, z, VG_INT64, NULL)), VG_INT64, d, 1, (const double[]){2, -1});
    cexpect(run(g, vg_cast(g, z, VG_COMPLEX64, NULL)), VG_COMPLEX64, 2,
            (const double complex[]){2.75 + 9 * I, -1.5 - 4 * I}, 0);
    vg_graph_free(g);
}

/* Sum / Mean / Prod over complex (reduction_ops_test.py's complex64/complex128 cases). */
static void test_reductions(void) {
    for (int k = 0; k < 2; k++) {
        vg_dtype ct = k ? VG_COMPLEX128 : VG_COMPLEX64;
        vg_graph *g = vg_graph_new();
        int64_t d[2] = {2, 2};
        vg_output x = ccst(g, ct, d, 2, (const double[]){1, 1, 2, -1, 0, 3, 1, 0});
        /* rows: (1+i, 2-i), (3i, 1) */
        cexpect(run(g, vg_reduce_sum(g, x, (const int32_t[]){1}, 1, false, NULL)), ct, 2,
                (const double complex[]){3, 1 + 3 * I}, 1e-6);
        cexpect(run(g, vg_reduce_mean(g, x, (const int32_t[]){0}, 1, false, NULL)), ct, 2,
                (const double complex[]){0.5 + 2 * I, 1.5 - 0.5 * I}, 1e-6);
        /* (1+i)(2-i) = 3+i; (3i)(1) = 3i */
        cexpect(run(g, vg_prod(g, x, vg_const_i32(g, 1, NULL), false, NULL)), ct, 2,
                (const double complex[]){3 + I, 3 * I}, 1e-6);
        vg_graph_free(g);
    }
}

/* A [2, 3] complex128 Const of w[i] = (re0 + i) + (im_step * i) i, i = 0..5 (w filled too). */
static vg_output c128_2x3(vg_graph *g, double re0, double im_step, double complex *w) {
    double v[12];
    for (int i = 0; i < 6; i++) v[2 * i] = re0 + i, v[2 * i + 1] = im_step * i, w[i] = (re0 + i) + im_step * i * I;
    return ccst(g, VG_COMPLEX128, (const int64_t[]){2, 3}, 2, v);
}

/* Shape and array ops move complex elements as 8- / 16-byte units. */
static void test_array_ops(void) {
    vg_graph *g = vg_graph_new();
    double complex w[6];
    vg_output x = c128_2x3(g, 0, -10, w);
    cexpect(run(g, vg_reshape_c(g, x, (const int64_t[]){3, 2}, 2, NULL)), VG_COMPLEX128, 6, w, 0);
    const double complex tw[6] = {w[0], w[3], w[1], w[4], w[2], w[5]};
    cexpect(run(g, vg_transpose_c(g, x, (const int32_t[]){1, 0}, 2, NULL)), VG_COMPLEX128, 6, tw, 0);
    vg_output two[2] = {x, x};
    vg_tensor *c = run(g, vg_concat_c(g, two, 2, 1, NULL));
    CHECK(c && vg_tensor_dim(c, 1) == 6 && cget(c, 4) == w[1] && cget(c, 11) == w[5]);
    vg_tensor_free(c);
    vg_tensor *p = run(g, vg_pack(g, two, 2, 0, NULL));
    CHECK(p && vg_tensor_ndims(p) == 3 && cget(p, 7) == w[1]);
    vg_tensor_free(p);
    cexpect(run(g, vg_slice_c(g, x, (const int64_t[]){1, 1}, (const int64_t[]){1, 2}, 2, NULL)), VG_COMPLEX128, 2,
            (const double complex[]){w[4], w[5]}, 0);
    cexpect(run(g, vg_zeros_like(g, x, NULL)), VG_COMPLEX128, 6, (const double complex[]){0, 0, 0, 0, 0, 0}, 0);
    cexpect(run(g, vg_ones_like(g, x, NULL)), VG_COMPLEX128, 6, (const double complex[]){1, 1, 1, 1, 1, 1}, 0);
    vg_graph_free(g);
}

/* More array ops on complex128 (16-byte elements): Tile, GatherV2, StridedSlice,
 * ReverseV2, Pad, ExpandDims, Squeeze, Fill, Select, BroadcastTo, GatherNd, Diag. */
static void test_array_ops_more(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    double complex w[6];
    vg_output x = c128_2x3(g, 1, 0.5, w);
    cexpect(run(g, vg_tile(g, x, vg_const_i32_vec(g, (const int32_t[]){1, 2}, 2, NULL), NULL)), VG_COMPLEX128, 12,
            (const double complex[]){w[0], w[1], w[2], w[0], w[1], w[2], w[3], w[4], w[5], w[3], w[4], w[5]}, 0);
    cexpect(run(g, vg_gather(g, x, vg_const_i32_vec(g, (const int32_t[]){2, 0}, 2, NULL), 1, NULL)), VG_COMPLEX128, 4,
            (const double complex[]){w[2], w[0], w[5], w[3]}, 0);
    cexpect(run(g, vg_strided_slice_c(g, x, (const int32_t[]){0, 2}, (const int32_t[]){2, -4}, (const int32_t[]){1, -2},
                                      2, NULL, NULL)),
            VG_COMPLEX128, 4, (const double complex[]){w[2], w[0], w[5], w[3]}, 0);
    cexpect(run(g, vg_reverse_c(g, x, (const int32_t[]){0}, 1, NULL)), VG_COMPLEX128, 6,
            (const double complex[]){w[3], w[4], w[5], w[0], w[1], w[2]}, 0);
    vg_output pads = vg_const_array(g, VG_INT32, (const int64_t[]){2, 2}, 2, (const int32_t[]){0, 1, 1, 0}, NULL);
    cexpect(run(g, vg_pad(g, x, pads, NULL)), VG_COMPLEX128, 12,
            (const double complex[]){0, w[0], w[1], w[2], 0, w[3], w[4], w[5], 0, 0, 0, 0}, 0);
    vg_tensor *e = run(g, vg_squeeze(g, vg_expand_dims(g, x, 1, NULL), (const int32_t[]){1}, 1, NULL));
    CHECK(e && vg_tensor_ndims(e) == 2);
    cexpect(e, VG_COMPLEX128, 6, w, 0);
    vg_output one = ccst(g, VG_COMPLEX128, NULL, 0, (const double[]){2, -1});
    cexpect(run(g, vg_fill(g, vg_const_i32_vec(g, (const int32_t[]){3}, 1, NULL), one, NULL)), VG_COMPLEX128, 3,
            (const double complex[]){2 - I, 2 - I, 2 - I}, 0);
    vg_tensor *bt = vg_tensor_new(VG_BOOL, d, 2, NULL);
    bool *b = vg_tensor_data(bt);
    for (int i = 0; i < 6; i++) b[i] = i % 2;
    vg_output cond = vg_const(g, bt, NULL);
    vg_tensor_free(bt);
    vg_output zeros = vg_zeros_like(g, x, NULL);
    cexpect(run(g, vg_select(g, cond, x, zeros, NULL)), VG_COMPLEX128, 6, (const double complex[]){0, w[1], 0, w[3], 0, w[5]},
            0);
    cexpect(run(g, vg_broadcast_to_c(g, one, (const int64_t[]){2}, 1, NULL)), VG_COMPLEX128, 2,
            (const double complex[]){2 - I, 2 - I}, 0);
    vg_output idx = vg_const_array(g, VG_INT32, (const int64_t[]){2, 2}, 2, (const int32_t[]){1, 2, 0, 1}, NULL);
    cexpect(run(g, vg_gather_nd(g, x, idx, NULL)), VG_COMPLEX128, 2, (const double complex[]){w[5], w[1]}, 0);
    vg_output z64 = ccst(g, VG_COMPLEX64, (const int64_t[]){2}, 1, (const double[]){1, 2, 3, 4});
    cexpect(run(g, vg_diag(g, z64, NULL)), VG_COMPLEX64, 4, (const double complex[]){1 + 2 * I, 0, 0, 3 + 4 * I}, 0);
    vg_graph_free(g);
}

/* GraphDef: a scalar / repeated Const as scomplex_val / dcomplex_val (re, im pairs), a
 * vector as tensor_content; export then import gives the same values. */
static void test_graphdef_roundtrip(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {2};
    ccst(g, VG_COMPLEX64, NULL, 0, (const double[]){1.5, -2.5});
    ccst(g, VG_COMPLEX128, d, 1, (const double[]){1, 2, 3, 4});
    ccst(g, VG_COMPLEX128, d, 1, (const double[]){7, 8, 7, 8}); /* all equal: one dcomplex_val pair */
    vg_status st;
    void *bytes;
    size_t len, tlen;
    char *text = graphdef_and_text(g, &bytes, &len, &tlen);
    if (text) {
        CHECK_STR_CONTAINS(text, "DT_COMPLEX64");
        CHECK_STR_CONTAINS(text, "scomplex_val");
        CHECK_STR_CONTAINS(text, "dcomplex_val");
        vg_free(text);
    }
    vg_graph *h = vg_graph_new();
    CHECK_OK(vg_graph_import_graph_def(h, bytes, len, NULL, &st), &st);
    vg_free(bytes);
    vg_op *c0 = vg_graph_op_by_name(h, "Const"), *c1 = vg_graph_op_by_name(h, "Const_1"), *c2 = vg_graph_op_by_name(h, "Const_2");
    CHECK(c0 && c1 && c2);
    if (c0 && c1 && c2) {
        cexpect(run(h, vg_out(c0, 0)), VG_COMPLEX64, 1, (const double complex[]){1.5 - 2.5 * I}, 0);
        cexpect(run(h, vg_out(c1, 0)), VG_COMPLEX128, 2, (const double complex[]){1 + 2 * I, 3 + 4 * I}, 0);
        cexpect(run(h, vg_out(c2, 0)), VG_COMPLEX128, 2, (const double complex[]){7 + 8 * I, 7 + 8 * I}, 0);
    }
    vg_graph_free(h);
    vg_graph_free(g);
    /* a text GraphDef written by TF: scomplex_val holds re, im pairs; one pair fills the shape */
    const char *pbtxt = "node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_COMPLEX64 } }\n"
                        "  attr { key: \"value\" value { tensor { dtype: DT_COMPLEX64 tensor_shape { dim { size: 3 } }\n"
                        "  scomplex_val: 1 scomplex_val: 2 scomplex_val: 3 scomplex_val: 4 } } } }\n";
    h = vg_graph_new();
    vg_import_options io = {0};
    io.format = VG_IMPORT_TEXT;
    CHECK_OK(vg_graph_import_graph_def(h, pbtxt, strlen(pbtxt), &io, &st), &st);
    vg_op *c = vg_graph_op_by_name(h, "c");
    if (c) cexpect(run(h, vg_out(c, 0)), VG_COMPLEX64, 3, (const double complex[]){1 + 2 * I, 3 + 4 * I, 3 + 4 * I}, 0);
    else CHECK(c != NULL);
    vg_graph_free(h);
}

/* A complex variable saved and restored through a checkpoint (bundle: raw bytes, dtype 8). */
static void test_checkpoint(void) {
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "cplx");
    CHECK(dir[0]);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/model", dir);
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {2};
    vg_variable v = vg_variable_new(g, "v", ccst(g, VG_COMPLEX64, d, 1, (const double[]){1, -1, 0.5, 2}), 0);
    CHECK(v.var != NULL);
    vg_status st;
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    CHECK(sv != NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &v.initializer, 1, NULL, &st), &st);
    char path[256];
    CHECK_OK(vg_saver_save(sv, s, prefix, -1, path, sizeof path, &st), &st);
    vg_session_free(s);
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, &st);
    CHECK(r != NULL);
    if (r) {
        vg_tensor *t = vg_checkpoint_reader_read(r, "v", &st);
        cexpect(t, VG_COMPLEX64, 2, (const double complex[]){1 - I, 0.5 + 2 * I}, 0);
        vg_checkpoint_reader_free(r);
    }
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_saver_restore(sv, s, prefix, &st), &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &v.read, &t, 1, NULL, 0, NULL, &st), &st);
    cexpect(t, VG_COMPLEX64, 2, (const double complex[]){1 - I, 0.5 + 2 * I}, 0);
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);
    tu_rmrf(dir);
}

/* Gradients through complex ops, checked by finite differences on real inputs that
 * enter through Complex and leave through Real / Imag (math_grad_test.py's
 * ComplexGradTest-style checks; TF's convention dz = dL/dre + i dL/dim). */
typedef vg_output (*cfn)(vg_graph *g, vg_output z, vg_output w);
static vg_output f_mul(vg_graph *g, vg_output z, vg_output w) { return vg_mul(g, z, w, NULL); }
static vg_output f_div(vg_graph *g, vg_output z, vg_output w) { return vg_div(g, z, w, NULL); }
static vg_output f_add_sub(vg_graph *g, vg_output z, vg_output w) {
    return vg_sub(g, vg_add(g, z, w, NULL), vg_mul(g, w, w, NULL), NULL);
}
static vg_output f_square_exp(vg_graph *g, vg_output z, vg_output w) {
    return vg_add(g, vg_square(g, z, NULL), vg_exp(g, w, NULL), NULL);
}
static vg_output f_log_sqrt(vg_graph *g, vg_output z, vg_output w) {
    return vg_add(g, vg_log(g, z, NULL), vg_sqrt(g, w, NULL), NULL);
}
static vg_output f_recip_rsqrt(vg_graph *g, vg_output z, vg_output w) {
    return vg_add(g, vg_reciprocal(g, z, NULL), vg_rsqrt(g, w, NULL), NULL);
}
static vg_output f_conj_neg(vg_graph *g, vg_output z, vg_output w) {
    return vg_mul(g, vg_conj(g, z, NULL), vg_neg(g, w, NULL), NULL);
}
static vg_output f_sum_mean(vg_graph *g, vg_output z, vg_output w) {
    vg_output s = vg_reduce_sum(g, vg_mul(g, z, z, NULL), (const int32_t[]){1}, 1, true, NULL);
    return vg_add(g, s, vg_reduce_mean(g, w, (const int32_t[]){0}, 1, true, NULL), NULL);
}
static vg_output f_addn(vg_graph *g, vg_output z, vg_output w) {
    vg_output ins[3] = {z, vg_mul(g, z, w, NULL), w};
    return vg_add_n(g, ins, 3, NULL);
}

static void gradcheck_complex(cfn f, bool real_out_angle_abs) {
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {2, 3};
    vg_output xr = vg_placeholder(g, VG_DOUBLE, d, 2, "xr"), xi = vg_placeholder(g, VG_DOUBLE, d, 2, "xi");
    vg_output yr = vg_placeholder(g, VG_DOUBLE, d, 2, "yr"), yi = vg_placeholder(g, VG_DOUBLE, d, 2, "yi");
    vg_output z = vg_complex(g, xr, xi, NULL), w = vg_complex(g, yr, yi, NULL);
    vg_output y;
    if (real_out_angle_abs) {
        y = vg_add(g, vg_angle(g, z, NULL), vg_mul(g, vg_complex_abs(g, w, NULL), vg_real(g, z, NULL), NULL), NULL);
    } else {
        vg_output r = f(g, z, w);
        y = vg_add(g, vg_real(g, r, NULL), vg_mul(g, vg_imag(g, r, NULL), cst(g, VG_DOUBLE, NULL, 0, (const double[]){0.7}), NULL), NULL);
    }
    const double a[6] = {0.7, -1.2, 0.4, 1.5, -0.3, 0.9}, b[6] = {0.5, 0.8, -1.1, 0.2, 1.3, -0.6};
    const double c[6] = {-0.4, 1.1, 0.6, -0.8, 0.35, 1.4}, e[6] = {1.2, -0.5, 0.9, 0.45, -1.0, 0.3};
    vg_tensor *vals[4] = {mk(VG_DOUBLE, d, 2, a), mk(VG_DOUBLE, d, 2, b), mk(VG_DOUBLE, d, 2, c), mk(VG_DOUBLE, d, 2, e)};
    vg_output xs[4] = {xr, xi, yr, yi};
    CHECK_EQ_INT(vg_gradcheck(g, xs, vals, 4, y, 1e-6, 1e-6), 0);
    for (int i = 0; i < 4; i++) vg_tensor_free(vals[i]);
    vg_graph_free(g);
}

static void test_gradients(void) {
    gradcheck_complex(f_mul, false);
    gradcheck_complex(f_div, false);
    gradcheck_complex(f_add_sub, false);
    gradcheck_complex(f_square_exp, false);
    gradcheck_complex(f_log_sqrt, false);
    gradcheck_complex(f_recip_rsqrt, false);
    gradcheck_complex(f_conj_neg, false);
    gradcheck_complex(f_sum_mean, false);
    gradcheck_complex(f_addn, false);
    gradcheck_complex(NULL, true); /* Angle, ComplexAbs, Real */
}

/* Cast's gradient between real and complex (TF's _CastGrad: both in the float/complex
 * set): d/dx of Real(Cast(x, complex) * c) = Re(c). */
static void test_cast_gradient(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {2};
    vg_output x = vg_placeholder(g, VG_FLOAT, d, 1, "x");
    vg_output c = ccst(g, VG_COMPLEX64, d, 1, (const double[]){2, 5, -3, 1});
    vg_output y = vg_reduce_sum(g, vg_real(g, vg_mul(g, vg_cast(g, x, VG_COMPLEX64, NULL), c, NULL), NULL), NULL, -1,
                                false, NULL);
    vg_output dx;
    vg_status st;
    CHECK_OK(vg_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), &st);
    vg_tensor *xv = mk(VG_FLOAT, d, 1, (const double[]){1, 1});
    vg_tensor *gv = run_feeds(g, dx, &x, &xv, 1, &st);
    check_values(gv, VG_FLOAT, d, 1, (const double[]){2, -3}, 1e-6);
    kt_teardown(g, NULL, (vg_tensor *[]){gv, xv}, 2, NULL, 0);
}

/* The fused element-wise planner takes float32 chains only: a complex chain of the
 * shapes it fuses (Mul/Add/Sub/Neg/Square...) runs op by op and gives C's answers. */
static void test_not_fused(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {4096};
    vg_output p = vg_placeholder(g, VG_COMPLEX64, d, 1, "p");
    vg_output q = vg_square(g, vg_add(g, vg_mul(g, p, p, NULL), p, NULL), NULL);
    vg_output y = vg_neg(g, vg_sub(g, q, vg_mul(g, p, ccst(g, VG_COMPLEX64, NULL, 0, (const double[]){0, 2}), NULL), NULL),
                         NULL);
    vg_tensor *in = vg_tensor_new(VG_COMPLEX64, d, 1, NULL);
    float _Complex *v = vg_tensor_data(in);
    for (int i = 0; i < 4096; i++) v[i] = (float)(i % 7) * 0.25f - 0.5f + I * (float)(i % 5) * 0.125f;
    vg_status st;
    vg_tensor *out = run_feeds(g, y, &p, &in, 1, &st);
    CHECK(out != NULL);
    if (out) {
        int bad = 0;
        for (int i = 0; i < 4096; i++) {
            double complex z = v[i], t = z * z + z, want = -(t * t - z * (2.0 * I));
            double complex got = cget(out, i);
            if (cabs(got - want) > 1e-4 * (1 + cabs(want))) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(out);
    }
    vg_tensor_free(in);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_dtype_basics);
    RUN_TEST(test_make_real_imag);
    RUN_TEST(test_make_errors);
    RUN_TEST(test_cwise);
    RUN_TEST(test_cast);
    RUN_TEST(test_reductions);
    RUN_TEST(test_array_ops);
    RUN_TEST(test_array_ops_more);
    RUN_TEST(test_graphdef_roundtrip);
    RUN_TEST(test_checkpoint);
    RUN_TEST(test_gradients);
    RUN_TEST(test_cast_gradient);
    RUN_TEST(test_not_fused);
    TEST_MAIN_END();
}
