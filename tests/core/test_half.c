/* test_half.c - VG_HALF (TF's DT_HALF): binary16 conversions (portable C and F16C,
 * exhaustive over all 65,536 halves and on float edge cases), Cast to and from half,
 * its gradient, byte-generic ops on half, and a compute op refusing half. */
#include "test_util.h"
#include "core_fixture.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "core/half.h"
#include "io/io.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Round to nearest even by arithmetic in double (independent of the bit-twiddling code):
 * the reference for finite floats. */
static uint16_t ref_f2h(float f) {
    uint16_t sign = (fbits(f) >> 16) & 0x8000u;
    double a = fabs((double)f);
    if (isnan(f)) return 0;
    if (a >= 65520.0) return sign | 0x7c00u;
    if (a < ldexp(1, -14)) { /* subnormal grid 2^-24 */
        double q = a / ldexp(1, -24), r = nearbyint(q); /* default rounding: ties to even */
        return (uint16_t)(sign | (uint16_t)r);
    }
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    double ulp = ldexp(1, e - 11);
    double q = nearbyint(a / ulp) * ulp; /* may reach 2^e: still the right value */
    /* encode q */
    int qe;
    double m = frexp(q, &qe); /* q = m*2^qe */
    int exp = qe - 1 + 15;
    uint16_t man = (uint16_t)((m * 2 - 1) * 1024);
    if (exp >= 31) return sign | 0x7c00u;
    return (uint16_t)(sign | (exp << 10) | man);
}

static void test_half__scalar_values(void) {
    CHECK_EQ_INT(vg_dtype_size(VG_HALF), 2);
    CHECK(strcmp(vg_dtype_name(VG_HALF), "half") == 0);
    CHECK_EQ_INT(VG_HALF, 19);
    CHECK(vg__half_to_float(0x3c00) == 1.0f);
    CHECK(vg__half_to_float(0xc000) == -2.0f);
    CHECK(vg__half_to_float(0x7bff) == 65504.0f);
    CHECK(vg__half_to_float(0x0001) == ldexpf(1, -24));
    CHECK(vg__half_to_float(0x03ff) == ldexpf(1023, -24));
    CHECK(vg__half_to_float(0x0400) == ldexpf(1, -14));
    CHECK(vg__half_to_float(0x3555) == 0.333251953125f);
    CHECK(isinf(vg__half_to_float(0xfc00)) && vg__half_to_float(0xfc00) < 0);
    CHECK(isnan(vg__half_to_float(0x7e00)));
    CHECK(fbits(vg__half_to_float(0x8000)) == 0x80000000u);
    CHECK(vg_half_to_float(0x3c00) == 1.0f && vg_float_to_half(-2.0f) == 0xc000); /* public wrappers */
    {
        vg_status st;
        int64_t one = 1;
        vg_tensor *h = vg_tensor_new(VG_HALF, &one, 1, &st);
        CHECK(h != NULL);
        if (h) {
            *(uint16_t *)vg_tensor_data(h) = 0xc100; /* -2.5 */
            CHECK(vg_tensor_scalar(h) == -2.5);
            vg_tensor_free(h);
        }
    }
    CHECK_EQ_INT(vg__float_to_half(1.0f), 0x3c00);
    CHECK_EQ_INT(vg__float_to_half(65504.0f), 0x7bff);
    CHECK_EQ_INT(vg__float_to_half(65519.0f), 0x7bff);
    CHECK_EQ_INT(vg__float_to_half(65520.0f), 0x7c00); /* tie at the top rounds to even: inf */
    CHECK_EQ_INT(vg__float_to_half(1e10f), 0x7c00);
    CHECK_EQ_INT(vg__float_to_half(-1e10f), 0xfc00);
    CHECK_EQ_INT(vg__float_to_half(1.0f + ldexpf(1, -11)), 0x3c00);     /* tie -> even */
    CHECK_EQ_INT(vg__float_to_half(1.0f + 3 * ldexpf(1, -11)), 0x3c02); /* tie -> even (up) */
    CHECK_EQ_INT(vg__float_to_half(ldexpf(1, -25)), 0x0000);            /* tie with zero -> 0 */
    CHECK_EQ_INT(vg__float_to_half(ldexpf(3, -26)), 0x0001);            /* above the tie */
    CHECK_EQ_INT(vg__float_to_half(ldexpf(3, -25)), 0x0002);            /* 1.5 ulp -> 2 */
    CHECK_EQ_INT(vg__float_to_half(ldexpf(1023.5f, -24)), 0x0400);      /* carries into normal */
    CHECK_EQ_INT(vg__float_to_half(-0.0f), 0x8000);
    CHECK_EQ_INT(vg__float_to_half(1e-30f), 0x0000);
    CHECK_EQ_INT(vg__float_to_half(-INFINITY), 0xfc00);
    uint16_t qn = vg__float_to_half(NAN);
    CHECK((qn & 0x7c00) == 0x7c00 && (qn & 0x3ff) != 0);
    CHECK_EQ_INT(vg__float_to_half(bitsf(0x7f800001u)) & 0x7e00, 0x7e00); /* sNaN -> quiet NaN */
}

static float edge_floats[4096];
static int n_edge;

static void build_edges(void) {
    n_edge = 0;
    static const float fixed[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.996f, 65520.0f, 65536.0f, 3.4028235e38f,
                                  1.17549435e-38f, 1.4e-45f, 5.96e-8f, 2.98e-8f, 6.1e-5f, 6.097e-5f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        edge_floats[n_edge++] = fixed[i];
        edge_floats[n_edge++] = -fixed[i];
    }
    static const uint32_t nans[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
                                    0x7fa00000u, 0x7fffffffu, 0xff802000u, 0x7fc01234u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) edge_floats[n_edge++] = bitsf(nans[i]);
    /* ties between neighbouring halves and their float neighbours, over the range */
    for (uint32_t h = 0; h < 0x7c00u && n_edge + 3 <= 4096; h += 23) {
        float a = vg__half_to_float((uint16_t)h), b = vg__half_to_float((uint16_t)(h + 1));
        float mid = (float)(((double)a + (double)b) / 2);
        edge_floats[n_edge++] = mid;
        edge_floats[n_edge++] = nextafterf(mid, 0);
        edge_floats[n_edge++] = nextafterf(mid, INFINITY);
    }
}

static void test_half__exhaustive(void) {
    static uint16_t hs[65536], back[65536], back2[65536];
    static float fa[65536], fb[65536];
    for (uint32_t i = 0; i < 65536; i++) hs[i] = (uint16_t)i;
    bool f16c = vg__half_has_f16c();
    fprintf(stderr, "half: F16C %s\n", f16c ? "available: comparing it with the portable code" : "not available");
    /* half -> float: portable scalar vs bulk (F16C where present) */
    bool prev = vg__half_set_f16c(false);
    vg__half_to_float_n(hs, fa, 65536);
    vg__half_set_f16c(true);
    vg__half_to_float_n(hs, fb, 65536);
    int bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        if (fbits(fa[i]) != fbits(fb[i]) || fbits(fa[i]) != fbits(vg__half_to_float((uint16_t)i))) bad++;
        bool nan = (i & 0x7c00u) == 0x7c00u && (i & 0x3ffu);
        if (!nan && vg__float_to_half(fa[i]) != i) bad++; /* exact round trip */
        if (nan && !isnan(fa[i])) bad++;
        /* value check against arithmetic for finite halves */
        if ((i & 0x7c00u) != 0x7c00u) {
            int e = (int)((i >> 10) & 0x1f), m = (int)(i & 0x3ff);
            double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
            if (i & 0x8000u) v = -v;
            if ((double)fa[i] != v) bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    /* float -> half on every half value, portable vs bulk */
    vg__half_set_f16c(false);
    vg__float_to_half_n(fa, back, 65536);
    vg__half_set_f16c(true);
    vg__float_to_half_n(fa, back2, 65536);
    bad = 0;
    for (uint32_t i = 0; i < 65536; i++)
        if (back[i] != back2[i]) bad++;
    CHECK_EQ_INT(bad, 0);
    /* float edge cases and ties, plus a deterministic sweep of float bit patterns */
    build_edges();
    vg__half_set_f16c(false);
    vg__float_to_half_n(edge_floats, back, (size_t)n_edge);
    vg__half_set_f16c(true);
    vg__float_to_half_n(edge_floats, back2, (size_t)n_edge);
    bad = 0;
    for (int i = 0; i < n_edge; i++) {
        if (back[i] != back2[i]) {
            if (bad < 5) fprintf(stderr, "edge %08x: portable %04x f16c %04x\n", fbits(edge_floats[i]), back[i], back2[i]);
            bad++;
        }
        if (!isnan(edge_floats[i]) && back[i] != ref_f2h(edge_floats[i])) {
            if (bad < 5) fprintf(stderr, "edge %08x: %04x, reference %04x\n", fbits(edge_floats[i]), back[i], ref_f2h(edge_floats[i]));
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    bad = 0;
    uint32_t x = 12345u;
    for (int blk = 0; blk < 16; blk++) {
        for (int i = 0; i < 65536; i++) { x = x * 1664525u + 1013904223u; fa[i] = bitsf(x); }
        vg__half_set_f16c(false);
        vg__float_to_half_n(fa, back, 65536);
        vg__half_set_f16c(true);
        vg__float_to_half_n(fa, back2, 65536);
        for (int i = 0; i < 65536; i++) {
            if (back[i] != back2[i]) bad++;
            if (!isnan(fa[i]) && back[i] != ref_f2h(fa[i])) bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    vg__half_set_f16c(prev);
}

static void test_half__cast(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t n = 5000; /* above the parallel threshold */
    vg_tensor *xf = vg_tensor_new(VG_FLOAT, &n, 1, &st);
    float *xp = vg_tensor_data(xf);
    for (int64_t i = 0; i < n; i++) xp[i] = (float)((i - 2500) * 0.37 + (i % 7) * 1e-3);
    xp[0] = 1e6f; xp[1] = -1e6f; xp[2] = NAN; xp[3] = ldexpf(3, -26); xp[4] = 0.1f;
    vg_output x = vg_const(g, xf, "x");
    vg_output h = vg_cast(g, x, VG_HALF, "to_half");
    vg_output back = vg_cast(g, h, VG_FLOAT, "to_float");
    vg_output hd = vg_cast(g, h, VG_DOUBLE, "to_double");
    vg_output hi = vg_cast(g, h, VG_INT32, "to_int32");
    vg_output hl = vg_cast(g, h, VG_INT64, "to_int64");
    vg_output hb = vg_cast(g, h, VG_BOOL, "to_bool");
    vg_output hu = vg_cast(g, h, VG_UINT8, "to_uint8");
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK_EQ_INT(vg_output_dtype(h), VG_HALF);
    vg_tensor *th = run1(g, h, &st);
    CHECK(th != NULL);
    if (!th) { vg_tensor_free(xf); vg_graph_free(g); return; }
    CHECK_EQ_INT(vg_tensor_dtype(th), VG_HALF);
    CHECK_EQ_INT(vg_tensor_nbytes(th), 2 * n);
    const uint16_t *hp = vg_tensor_data(th);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (i != 2 && hp[i] != ref_f2h(xp[i])) bad++;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(hp[0], 0x7c00);
    CHECK_EQ_INT(hp[1], 0xfc00);
    CHECK((hp[2] & 0x7c00) == 0x7c00 && (hp[2] & 0x3ff));
    CHECK_EQ_INT(hp[3], 0x0001);
    CHECK_EQ_INT(hp[4], 0x2e66); /* 0.1 -> 0.0999755859375 */
    vg_tensor *tb = run1(g, back, &st), *td = run1(g, hd, &st), *ti = run1(g, hi, &st), *tl = run1(g, hl, &st),
              *tbo = run1(g, hb, &st), *tu = run1(g, hu, &st);
    CHECK(tb && td && ti && tl && tbo && tu);
    if (tb && td && ti && tl && tbo && tu) {
        bad = 0;
        for (int64_t i = 5; i < n; i++) {
            float f = vg__half_to_float(hp[i]);
            if (((float *)vg_tensor_data(tb))[i] != f) bad++;
            if (((double *)vg_tensor_data(td))[i] != (double)f) bad++;
            if (((int32_t *)vg_tensor_data(ti))[i] != (int32_t)f) bad++;
            if (((int64_t *)vg_tensor_data(tl))[i] != (int64_t)f) bad++;
            if (((uint8_t *)vg_tensor_data(tbo))[i] != (f != 0)) bad++;
            if (((uint8_t *)vg_tensor_data(tu))[i] != (uint8_t)(uint32_t)(int32_t)f) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK(((float *)vg_tensor_data(tb))[4] == 0.0999755859375f);
        CHECK(isinf(((float *)vg_tensor_data(tb))[0]));
    }
    vg_tensor_free(tb); vg_tensor_free(td); vg_tensor_free(ti); vg_tensor_free(tl); vg_tensor_free(tbo); vg_tensor_free(tu);
    vg_tensor_free(th);
    vg_tensor_free(xf);
    vg_graph_free(g);

    /* other sources into half: double (through float, as Eigen::half), int32, int64, bool, uint8 */
    g = vg_graph_new();
    int64_t four = 4;
    vg_tensor *td2 = vg_tensor_new(VG_DOUBLE, &four, 1, &st), *ti2 = vg_tensor_new(VG_INT32, &four, 1, &st),
              *tl2 = vg_tensor_new(VG_INT64, &four, 1, &st), *tb2 = vg_tensor_new(VG_BOOL, &four, 1, &st),
              *tu2 = vg_tensor_new(VG_UINT8, &four, 1, &st);
    double dv[4] = {0.5, -3.25, 1e9, 2049.0};
    int32_t iv[4] = {0, -7, 70000, 2049};
    int64_t lv[4] = {1, -65504, 4097, 123456789};
    uint8_t bv[4] = {0, 1, 0, 1}, uv[4] = {0, 255, 17, 3};
    memcpy(vg_tensor_data(td2), dv, sizeof dv); memcpy(vg_tensor_data(ti2), iv, sizeof iv);
    memcpy(vg_tensor_data(tl2), lv, sizeof lv); memcpy(vg_tensor_data(tb2), bv, sizeof bv);
    memcpy(vg_tensor_data(tu2), uv, sizeof uv);
    vg_output outs[5] = {vg_cast(g, vg_const(g, td2, "d"), VG_HALF, "dh"), vg_cast(g, vg_const(g, ti2, "i"), VG_HALF, "ih"),
                         vg_cast(g, vg_const(g, tl2, "l"), VG_HALF, "lh"), vg_cast(g, vg_const(g, tb2, "b"), VG_HALF, "bh"),
                         vg_cast(g, vg_const(g, tu2, "u"), VG_HALF, "uh")};
    static const uint16_t want[5][4] = {
        {0x3800, 0xc280, 0x7c00, 0x6800},  /* 2049 -> 2048 (tie to even) */
        {0x0000, 0xc700, 0x7c00, 0x6800},  /* 70000 -> inf */
        {0x3c00, 0xfbff, 0x6c00, 0x7c00},  /* 4097 -> 4096 */
        {0x0000, 0x3c00, 0x0000, 0x3c00},
        {0x0000, 0x5bf8, 0x4c40, 0x4200},
    };
    for (int k = 0; k < 5; k++) {
        vg_tensor *o = run1(g, outs[k], &st);
        CHECK(o != NULL);
        if (!o) continue;
        for (int i = 0; i < 4; i++) {
            if (((uint16_t *)vg_tensor_data(o))[i] != want[k][i])
                fprintf(stderr, "cast %d[%d]: %04x want %04x\n", k, i, ((uint16_t *)vg_tensor_data(o))[i], want[k][i]);
            CHECK_EQ_INT(((uint16_t *)vg_tensor_data(o))[i], want[k][i]);
        }
        vg_tensor_free(o);
    }
    vg_tensor_free(td2); vg_tensor_free(ti2); vg_tensor_free(tl2); vg_tensor_free(tb2); vg_tensor_free(tu2);
    vg_graph_free(g);
}

/* d/dx sum(c * float(half(x))) = float(half(c)): the gradient of each Cast is a Cast back. */
static void test_half__cast_gradient(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t three = 3;
    vg_tensor *xt = vg_tensor_new(VG_FLOAT, &three, 1, &st), *ct = vg_tensor_new(VG_FLOAT, &three, 1, &st);
    float xv[3] = {0.3f, -1.7f, 5.0f}, cv[3] = {0.5f, -2.0f, 0.1f};
    memcpy(vg_tensor_data(xt), xv, sizeof xv);
    memcpy(vg_tensor_data(ct), cv, sizeof cv);
    vg_output x = vg_const(g, xt, "x");
    vg_output h = vg_cast(g, x, VG_HALF, "h");
    vg_output y = vg_cast(g, h, VG_FLOAT, "y");
    vg_output L = vg_reduce_sum(g, vg_mul(g, y, vg_const(g, ct, "c"), "m"), NULL, -1, false, "L");
    vg_output dx = {0}, dh = {0};
    CHECK_OK(vg_gradients(g, &L, 1, &x, 1, NULL, &dx, &st), &st);
    CHECK_OK(vg_gradients(g, &L, 1, &h, 1, NULL, &dh, &st), &st);
    CHECK(dx.op != NULL && dh.op != NULL);
    if (dx.op && dh.op) {
        CHECK_EQ_INT(vg_output_dtype(dx), VG_FLOAT);
        CHECK_EQ_INT(vg_output_dtype(dh), VG_HALF);
        vg_tensor *o = run1(g, dx, &st), *oh = run1(g, dh, &st);
        CHECK(o && oh);
        if (o && oh) {
            for (int i = 0; i < 3; i++) {
                CHECK(((float *)vg_tensor_data(o))[i] == vg__half_to_float(vg__float_to_half(cv[i])));
                CHECK_EQ_INT(((uint16_t *)vg_tensor_data(oh))[i], vg__float_to_half(cv[i]));
            }
            CHECK(((float *)vg_tensor_data(o))[2] == 0.0999755859375f);
        }
        vg_tensor_free(o); vg_tensor_free(oh);
    }
    vg_tensor_free(xt); vg_tensor_free(ct);
    vg_graph_free(g);
}

/* Byte-generic ops carry half unchanged; a compute op refuses it with a clear status. */
static void test_half__generic_ops_and_refusal(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t dims[2] = {2, 3};
    vg_tensor *t = vg_tensor_new(VG_HALF, dims, 2, &st);
    CHECK(t != NULL);
    CHECK_EQ_INT(vg_tensor_nbytes(t), 12);
    uint16_t *p = vg_tensor_data(t);
    for (int i = 0; i < 6; i++) p[i] = (uint16_t)(0x3c00 + i);
    vg_tensor *c = vg_tensor_copy(t, &st);
    CHECK(c && memcmp(vg_tensor_data(c), p, 12) == 0);
    vg_tensor_free(c);
    vg_output x = vg_const(g, t, "x");
    vg_output id = vg_identity(g, x, "id");
    vg_output tr = vg_transpose(g, x, vg_const_i32_vec(g, (const int32_t[]){1, 0}, 2, "perm"), "tr");
    vg_output rs = vg_reshape(g, x, vg_const_i32_vec(g, (const int32_t[]){6}, 1, "shape"), "rs");
    vg_output parts[2] = {x, x};
    vg_output cc = vg_concat_c(g, parts, 2, 0, "cc");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *o = run1(g, id, &st);
    CHECK(o && vg_tensor_dtype(o) == VG_HALF && memcmp(vg_tensor_data(o), p, 12) == 0);
    vg_tensor_free(o);
    o = run1(g, rs, &st);
    CHECK(o && vg_tensor_ndims(o) == 1 && memcmp(vg_tensor_data(o), p, 12) == 0);
    vg_tensor_free(o);
    o = run1(g, tr, &st);
    CHECK(o != NULL);
    if (o) {
        const uint16_t *q = vg_tensor_data(o);
        CHECK_EQ_INT(q[0], p[0]); CHECK_EQ_INT(q[1], p[3]); CHECK_EQ_INT(q[2], p[1]); CHECK_EQ_INT(q[5], p[5]);
    }
    vg_tensor_free(o);
    o = run1(g, cc, &st);
    CHECK(o && vg_tensor_dim(o, 0) == 4 && memcmp((uint16_t *)vg_tensor_data(o) + 6, p, 12) == 0);
    vg_tensor_free(o);
    vg_graph_free(g);

    g = vg_graph_new();
    vg_output a = vg_const(g, t, "a");
    vg_add(g, a, a, "Sum");
    EXPECT_CODE_MSG(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "half");
    fprintf(stderr, "refusal: %s\n", st.msg);
    vg_graph_free(g);
    vg_tensor_free(t);
}


/* A half variable (float initializer, then Cast, as tf.get_variable(dtype=tf.float16))
 * saves to a V2 bundle with dtype 19, 2 little-endian bytes per element, and restores. */
static void test_half__checkpoint_round_trip(void) {
    vg_status st;
    ckpt_round_trip rt = ckpt_round_trip_begin("half");
    int64_t dims[2] = {3, 5};
    vg_output init = vg_initializer_build(rt.g, vg_init_random_uniform(-4, 4, 7), VG_FLOAT, dims, 2);
    vg_variable w = vg_variable_new(rt.g, "w", vg_cast(rt.g, init, VG_HALF, "Cast"), VG_VAR_TRAINABLE);
    vg_op *ini = vg_global_variables_initializer(rt.g);
    vg_saver *sv = vg_saver_new(rt.g, NULL, &st);
    CHECK(sv != NULL && w.var != NULL);
    CHECK_OK(vg_graph_status(rt.g, &st), &st);
    CHECK_EQ_INT(vg_output_dtype(w.read), VG_HALF);
    vg_session *s = vg_session_new(rt.g, NULL, &st);
    CHECK(s != NULL);
    if (!s || !sv) { vg_graph_free(rt.g); tu_rmrf(rt.dir); return; }
    char path[400];
    vg_tensor *v0 = init_fetch_save(s, ini, sv, w.read, rt.prefix, path, sizeof path);
    vg__bundle_reader *r = vg__bundle_reader_open(path, &st);
    CHECK(r != NULL);
    if (r && v0) {
        int dt = 0, nd = 0;
        int64_t d[VG__IO_MAX_DIMS];
        CHECK_OK(vg__bundle_reader_lookup(r, "w", &dt, d, &nd, &st), &st);
        CHECK_EQ_INT(dt, 19);
        CHECK_EQ_INT(nd, 2);
        CHECK_EQ_INT(d[0], 3); CHECK_EQ_INT(d[1], 5);
        uint8_t raw[30];
        CHECK_OK(vg__bundle_reader_read(r, "w", raw, sizeof raw, &st), &st);
        const uint16_t *h = vg_tensor_data(v0);
        int bad = 0;
        for (int i = 0; i < 15; i++)
            if ((uint16_t)(raw[2 * i] | (raw[2 * i + 1] << 8)) != h[i]) bad++;
        CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < 15; i++) {
            float f = vg__half_to_float(h[i]);
            CHECK(f >= -4 && f <= 4 && vg__float_to_half(f) == h[i]);
        }
    }
    if (r) vg__bundle_reader_free(r);
    /* overwrite, then restore */
    check_restored(rt.g, sv, &s, path, w.read, v0, VG_HALF, 30);
    free_session_saver_graph(s, sv, rt.g);
    tu_rmrf(rt.dir);
}

/* GraphDef: half constants export as tensor_content (several values) or half_val (bit
 * patterns as int32, as TF) and import back bit-identical, in binary and text form. */
static void check_half_const(vg_graph *g, const char *name, const uint16_t *want, int64_t n) {
    vg_op *op = vg_graph_op_by_name(g, name);
    const vg_tensor *v = NULL;
    CHECK(op != NULL && vg_op_attr_tensor(op, "value", &v) && v != NULL);
    if (!v) return;
    CHECK_EQ_INT(vg_tensor_dtype(v), VG_HALF);
    CHECK_EQ_INT(vg_tensor_num_elements(v), n);
    CHECK(memcmp(vg_tensor_data(v), want, (size_t)n * 2) == 0);
}

static void test_half__graphdef_round_trip(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    static const uint16_t many[4] = {0x3c00, 0xc000, 0x7bff, 0x0001}, one[1] = {0xfc00}, same[3] = {0x3555, 0x3555, 0x3555};
    int64_t d4 = 4, d1 = 1, d3 = 3;
    vg_tensor *a = vg_tensor_new(VG_HALF, &d4, 1, &st), *b = vg_tensor_new(VG_HALF, &d1, 1, &st),
              *c = vg_tensor_new(VG_HALF, &d3, 1, &st);
    memcpy(vg_tensor_data(a), many, 8); memcpy(vg_tensor_data(b), one, 2); memcpy(vg_tensor_data(c), same, 6);
    vg_output ca = vg_const(g, a, "many"), cb = vg_const(g, b, "one"), cc = vg_const(g, c, "same");
    vg_cast(g, ca, VG_FLOAT, "cast_many");
    (void)cb; (void)cc;
    vg_tensor_free(a); vg_tensor_free(b); vg_tensor_free(c);
    void *bytes;
    size_t len, tlen;
    char *text = graphdef_and_text(g, &bytes, &len, &tlen);
    text_holds_all(text,
                   (const char *const[]){"DT_HALF", "half_val: 64512" /* 0xfc00 */,
                                         "half_val: 13653" /* 0x3555, one value for three equal */, "tensor_content"},
                   4);
    vg_graph *g2 = vg_graph_new();
    CHECK_OK(vg_graph_import_graph_def(g2, bytes, len, NULL, &st), &st);
    check_half_const(g2, "many", many, 4);
    check_half_const(g2, "one", one, 1);
    check_half_const(g2, "same", same, 3);
    vg_op *cast = vg_graph_op_by_name(g2, "cast_many");
    CHECK(cast != NULL);
    if (cast) {
        vg_tensor *o = run1(g2, vg_out(cast, 0), &st);
        CHECK(o && ((float *)vg_tensor_data(o))[2] == 65504.0f && ((float *)vg_tensor_data(o))[3] == ldexpf(1, -24));
        vg_tensor_free(o);
    }
    vg_graph_free(g2);
    if (text) {
        char dir[256], path[300];
        tu_mkdtemp(dir, sizeof dir, "halfgd");
        snprintf(path, sizeof path, "%s/graph.pbtxt", dir);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) { fwrite(text, 1, tlen, f); fclose(f); }
        vg_graph *g3 = vg_graph_new();
        CHECK_OK(vg_graph_import_graph_def_file(g3, path, NULL, &st), &st);
        check_half_const(g3, "many", many, 4);
        check_half_const(g3, "one", one, 1);
        check_half_const(g3, "same", same, 3);
        vg_graph_free(g3);
        tu_rmrf(dir);
    }
    vg_free(text);
    vg_free(bytes);
    vg_graph_free(g);
}

/* tf.get_variable(dtype=tf.float16): a float32 initializer then a Cast; under
 * float32_variable_storage_getter the stored variable is float32 and the read a Cast. */
static void test_half__variables_and_storage_getter(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t dims[2] = {2, 2};
    vg_variable h = vg_get_variable(g, "h", VG_HALF, dims, 2, vg_init_constant(0.1), VG_VAR_TRAINABLE);
    CHECK(h.var != NULL);
    CHECK_EQ_INT(vg_output_dtype(h.ref), VG_HALF);
    vg_variable_scope_push(g, "fp16", &(vg_variable_scope_opts){.custom_getter = vg_float32_variable_storage_getter});
    vg_variable w = vg_get_variable(g, "w", VG_HALF, dims, 2, vg_init_constant(0.1), VG_VAR_TRAINABLE);
    vg_variable k = vg_get_variable(g, "k", VG_HALF, dims, 2, vg_init_zeros(), 0); /* not trainable: half storage */
    vg_variable_scope_pop(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(w.var != NULL && k.var != NULL);
    CHECK(strcmp(vg_op_name(w.var), "fp16/w") == 0);
    CHECK_EQ_INT(vg_output_dtype(w.ref), VG_FLOAT);
    CHECK_EQ_INT(vg_output_dtype(w.read), VG_HALF);
    CHECK_EQ_INT(vg_output_dtype(k.ref), VG_HALF);
    CHECK_EQ_INT(vg_output_dtype(k.read), VG_HALF);
    /* the gradient of a float32 loss of the half read reaches the float32 master */
    vg_output L = vg_reduce_sum(g, vg_cast(g, w.read, VG_FLOAT, "up"), NULL, -1, false, "L");
    vg_output dw = {0};
    CHECK_OK(vg_gradients(g, &L, 1, &w.ref, 1, NULL, &dw, &st), &st);
    vg_op *ini = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL && dw.op != NULL);
    if (s && dw.op) {
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &ini, 1, NULL, &st), &st);
        vg_output outs[4] = {h.read, w.ref, w.read, dw};
        vg_tensor *o[4] = {0};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, outs, o, 4, NULL, 0, NULL, &st), &st);
        if (o[0] && o[1] && o[2] && o[3]) {
            for (int i = 0; i < 4; i++) {
                CHECK_EQ_INT(((uint16_t *)vg_tensor_data(o[0]))[i], 0x2e66);
                CHECK(((float *)vg_tensor_data(o[1]))[i] == 0.1f);
                CHECK_EQ_INT(((uint16_t *)vg_tensor_data(o[2]))[i], 0x2e66);
                CHECK(((float *)vg_tensor_data(o[3]))[i] == 1.0f);
            }
        }
        for (int i = 0; i < 4; i++) vg_tensor_free(o[i]);
    }
    free_session_graph(s, g);
}

int main(void) {
    RUN_TEST(test_half__scalar_values);
    RUN_TEST(test_half__exhaustive);
    RUN_TEST(test_half__cast);
    RUN_TEST(test_half__cast_gradient);
    RUN_TEST(test_half__generic_ops_and_refusal);
    RUN_TEST(test_half__checkpoint_round_trip);
    RUN_TEST(test_half__graphdef_round_trip);
    RUN_TEST(test_half__variables_and_storage_getter);
    TEST_MAIN_END();
}
