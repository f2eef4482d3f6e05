/* test_bfloat16.c - VG_BFLOAT16 (TF's DT_BFLOAT16, issue 34 item 1: storage, casts,
 * checkpoints, GraphDef): the conversions against an independent reference (exhaustive
 * bfloat16 -> float; float -> bfloat16 rounding to nearest even by double arithmetic over
 * edge cases and a sweep), Cast to and from every numeric dtype and half, its gradient,
 * Fill / OnesLike, a bfloat16 variable saved and restored with TF's dtype number, GraphDef
 * half_val round trips, and a compute op refusing bfloat16 with a clear status. */
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

/* Round to the 8-bit significand grid by arithmetic in double, ties to even: the
 * reference for finite floats (bfloat16 has float32's exponent range, so subnormals keep
 * the grid 2^-133 and overflow happens at 2^128 - 2^119). */
static uint16_t ref_f2b(float f) {
    if (isnan(f)) return 0x7fc0;
    uint16_t sign = (fbits(f) >> 16) & 0x8000u;
    double a = fabs((double)f);
    if (a == 0) return sign;
    if (isinf(f)) return sign | 0x7f80u;
    int e;
    frexp(a, &e);
    if (e < -125) e = -125; /* subnormal range: fixed ulp 2^-133 */
    double ulp = ldexp(1, e - 8);
    double q = nearbyint(a / ulp) * ulp;
    if (q >= ldexp(1, 128)) return sign | 0x7f80u;
    float qf = (float)q; /* exact: q is on the bfloat16 grid */
    return (uint16_t)(sign | (fbits(qf) >> 16));
}

static void test_bfloat16__scalar_values(void) {
    CHECK_EQ_INT(VG_BFLOAT16, 14);
    CHECK_EQ_INT(vg_dtype_size(VG_BFLOAT16), 2);
    CHECK(strcmp(vg_dtype_name(VG_BFLOAT16), "bfloat16") == 0);
    CHECK(vg_bfloat16_to_float(0x3f80) == 1.0f);
    CHECK(vg_bfloat16_to_float(0xc049) == -3.140625f);
    CHECK_EQ_INT(vg_float_to_bfloat16(1.0f), 0x3f80);
    CHECK_EQ_INT(vg_float_to_bfloat16(3.14159265f), 0x4049);      /* 3.140625 */
    CHECK_EQ_INT(vg_float_to_bfloat16(bitsf(0x3f808000u)), 0x3f80); /* a tie: to even */
    CHECK_EQ_INT(vg_float_to_bfloat16(bitsf(0x3f818000u)), 0x3f82); /* a tie: to even (up) */
    CHECK_EQ_INT(vg_float_to_bfloat16(bitsf(0x3f808001u)), 0x3f81); /* above the tie */
    CHECK_EQ_INT(vg_float_to_bfloat16(bitsf(0x7f7fffffu)), 0x7f80); /* FLT_MAX rounds to inf */
    CHECK_EQ_INT(vg_float_to_bfloat16(-INFINITY), 0xff80);
    CHECK_EQ_INT(vg_float_to_bfloat16(NAN), 0x7fc0);                /* TF's quiet NaN */
    CHECK_EQ_INT(vg_float_to_bfloat16(bitsf(0xffc12345u)), 0x7fc0);
    CHECK_EQ_INT(vg_float_to_bfloat16(bitsf(0x00008000u)), 0x0000); /* a subnormal tie: to even */
    CHECK_EQ_INT(vg_float_to_bfloat16(bitsf(0x00018000u)), 0x0002);
    CHECK_EQ_INT(vg_float_to_bfloat16(-0.0f), 0x8000);
}

static void test_bfloat16__against_reference(void) {
    /* every bfloat16 to float and back is exact (NaNs become the quiet NaN) */
    int bad = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        float f = vg__bf16_to_float((uint16_t)b);
        if (fbits(f) != b << 16) bad++;
        uint16_t back = vg__float_to_bf16(f);
        if (isnan(f) ? back != 0x7fc0 : back != b) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* a sweep of floats (every 4099th bit pattern plus the neighbours of each bfloat16
     * tie): scalar, bulk and reference agree */
    enum { N = 4096 };
    static float f[N];
    static uint16_t out[N];
    uint32_t u = 0;
    int mismatches = 0;
    for (int round = 0; round < 256; round++) {
        for (int i = 0; i < N; i++, u += 4099u) {
            uint32_t v = (i % 3 == 0) ? ((u & 0xffff0000u) | 0x8000u) + (uint32_t)(i % 5) - 2u : u;
            f[i] = bitsf(v);
        }
        vg__float_to_bf16_n(f, out, N);
        for (int i = 0; i < N; i++) {
            uint16_t r = ref_f2b(f[i]);
            if (out[i] != r || vg__float_to_bf16(f[i]) != r) mismatches++;
        }
    }
    CHECK_EQ_INT(mismatches, 0);
}

/* Cast: float/double/int32/int64/uint8/bool/half -> bfloat16 through float (as
 * tensorflow::bfloat16(float)), and back. */
static void test_bfloat16__cast(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t four = 4;
    float fv[4] = {1.0f, -2.5f, 3.14159265f, 1e-40f};
    vg_tensor *ft = vg_tensor_new_copy(VG_FLOAT, &four, 1, fv, sizeof fv, &st);
    vg_output x = vg_const(g, ft, "x");
    vg_output b = vg_cast(g, x, VG_BFLOAT16, "to_bf16");
    vg_output back = vg_cast(g, b, VG_FLOAT, "back");
    vg_output as_half = vg_cast(g, b, VG_HALF, "as_half");
    vg_output as_i32 = vg_cast(g, b, VG_INT32, "as_i32");
    CHECK_EQ_INT(vg_output_dtype(b), VG_BFLOAT16);
    vg_tensor *tb = run1(g, b, &st), *tf = run1(g, back, &st), *th = run1(g, as_half, &st), *ti = run1(g, as_i32, &st);
    CHECK(tb && tf && th && ti);
    if (tb && tf && th && ti) {
        const uint16_t *bb = vg_tensor_data(tb);
        for (int i = 0; i < 4; i++) {
            CHECK_EQ_INT(bb[i], ref_f2b(fv[i]));
            CHECK(((float *)vg_tensor_data(tf))[i] == vg_bfloat16_to_float(bb[i]));
            CHECK_EQ_INT(((uint16_t *)vg_tensor_data(th))[i], vg_float_to_half(vg_bfloat16_to_float(bb[i])));
        }
        const int32_t *iv = vg_tensor_data(ti);
        CHECK(iv[0] == 1 && iv[1] == -2 && iv[2] == 3 && iv[3] == 0);
    }
    vg_tensor_free(tb); vg_tensor_free(tf); vg_tensor_free(th); vg_tensor_free(ti);
    /* from double and int64: through float, then rounded */
    double dv[2] = {257.0, 1.0 / 3.0};
    int64_t two = 2;
    vg_tensor *dt = vg_tensor_new_copy(VG_DOUBLE, &two, 1, dv, sizeof dv, &st);
    int64_t lv[2] = {257, -65535};
    vg_tensor *lt = vg_tensor_new_copy(VG_INT64, &two, 1, lv, sizeof lv, &st);
    vg_tensor *od = run1(g, vg_cast(g, vg_const(g, dt, "d"), VG_BFLOAT16, NULL), &st);
    vg_tensor *ol = run1(g, vg_cast(g, vg_const(g, lt, "l"), VG_BFLOAT16, NULL), &st);
    CHECK(od && ol);
    if (od && ol) {
        CHECK_EQ_INT(((uint16_t *)vg_tensor_data(od))[0], 0x4380); /* 257 -> 256 (tie to even) */
        CHECK_EQ_INT(((uint16_t *)vg_tensor_data(od))[1], ref_f2b((float)(1.0 / 3.0)));
        CHECK_EQ_INT(((uint16_t *)vg_tensor_data(ol))[0], 0x4380);
        CHECK_EQ_INT(((uint16_t *)vg_tensor_data(ol))[1], ref_f2b(-65535.0f));
    }
    vg_tensor_free(od); vg_tensor_free(ol);
    /* ones and fills */
    vg_tensor *ones = run1(g, vg_ones_like(g, b, NULL), &st);
    CHECK(ones && vg_tensor_dtype(ones) == VG_BFLOAT16 && ((uint16_t *)vg_tensor_data(ones))[3] == 0x3f80);
    vg_tensor_free(ones);
    vg_tensor_free(ft); vg_tensor_free(dt); vg_tensor_free(lt);
    vg_graph_free(g);
}

/* _CastGrad between floating types: d/dx of sum(c * float(bf16(x))) is bf16-rounded c. */
static void test_bfloat16__cast_gradient(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t three = 3;
    float xv[3] = {0.3f, -1.7f, 5.0f}, cv[3] = {0.5f, -2.0f, 0.1f};
    vg_tensor *xt = vg_tensor_new_copy(VG_FLOAT, &three, 1, xv, sizeof xv, &st);
    vg_tensor *ct = vg_tensor_new_copy(VG_FLOAT, &three, 1, cv, sizeof cv, &st);
    vg_output x = vg_const(g, xt, "x");
    vg_output b = vg_cast(g, x, VG_BFLOAT16, "b");
    vg_output y = vg_cast(g, b, VG_FLOAT, "y");
    vg_output L = vg_reduce_sum(g, vg_mul(g, y, vg_const(g, ct, "c"), "m"), NULL, -1, false, "L");
    vg_output dx = {0};
    CHECK_OK(vg_gradients(g, &L, 1, &x, 1, NULL, &dx, &st), &st);
    CHECK(dx.op != NULL);
    vg_tensor *o = dx.op ? run1(g, dx, &st) : NULL;
    CHECK(o != NULL);
    if (o)
        for (int i = 0; i < 3; i++)
            CHECK(((float *)vg_tensor_data(o))[i] == vg_bfloat16_to_float(vg_float_to_bfloat16(cv[i])));
    vg_tensor_free(o);
    vg_tensor_free(xt); vg_tensor_free(ct);
    vg_graph_free(g);
}

/* A bfloat16 variable (get_variable's float32 initial value, then Cast, as for half) is
 * saved with TF's dtype number 14 and restored bit for bit. */
static void test_bfloat16__checkpoint_round_trip(void) {
    vg_status st;
    ckpt_round_trip rt = ckpt_round_trip_begin("bf16");
    int64_t dims[2] = {3, 5};
    vg_variable w = vg_get_variable(rt.g, "w", VG_BFLOAT16, dims, 2, vg_init_random_uniform(-4, 4, 7), VG_VAR_TRAINABLE);
    vg_op *ini = vg_global_variables_initializer(rt.g);
    vg_saver *sv = vg_saver_new(rt.g, NULL, &st);
    CHECK_OK(vg_graph_status(rt.g, &st), &st);
    CHECK(sv != NULL && w.var != NULL);
    if (!sv || !w.var) { vg_graph_free(rt.g); tu_rmrf(rt.dir); return; }
    CHECK_EQ_INT(vg_output_dtype(w.read), VG_BFLOAT16);
    vg_session *s = vg_session_new(rt.g, NULL, &st);
    char path[400];
    vg_tensor *v0 = init_fetch_save(s, ini, sv, w.read, rt.prefix, path, sizeof path);
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    CHECK(r != NULL);
    if (r && v0) {
        vg_dtype dt;
        CHECK(strcmp(vg_checkpoint_reader_tensor(r, 0, &dt, NULL), "w") == 0 && dt == VG_BFLOAT16);
        vg_tensor *raw = vg_checkpoint_reader_read(r, "w", &st);
        CHECK(raw && memcmp(vg_tensor_data(raw), vg_tensor_data(v0), 30) == 0);
        const uint16_t *h = vg_tensor_data(v0);
        int bad = 0;
        for (int i = 0; i < 15; i++) {
            float f = vg_bfloat16_to_float(h[i]);
            if (!(f >= -4 && f <= 4)) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(raw);
    }
    vg_checkpoint_reader_free(r);
    check_restored(rt.g, sv, &s, path, w.read, v0, VG_BFLOAT16, 30);
    free_session_saver_graph(s, sv, rt.g);
    tu_rmrf(rt.dir);
}

/* GraphDef: bfloat16 constants export in half_val (bits as int32, as TF) or
 * tensor_content and import back bit-identical; a compute op refuses bfloat16. */
static void test_bfloat16__graphdef_and_refusal(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    static const uint16_t many[3] = {0x3f80, 0xc049, 0x0001}, one[1] = {0xff80};
    int64_t d3 = 3, d1 = 1;
    vg_tensor *a = vg_tensor_new_copy(VG_BFLOAT16, &d3, 1, many, 6, &st), *b = vg_tensor_new_copy(VG_BFLOAT16, &d1, 1, one, 2, &st);
    CHECK(a && b);
    vg_const(g, a, "many");
    vg_const(g, b, "one");
    vg_tensor_free(a); vg_tensor_free(b);
    void *bytes;
    size_t len, tlen;
    char *text = graphdef_and_text(g, &bytes, &len, &tlen);
    text_holds_all(text, (const char *const[]){"DT_BFLOAT16", "half_val: 65408" /* 0xff80 */}, 2);
    vg_free(text);
    vg_graph *g2 = vg_graph_new();
    CHECK_OK(vg_graph_import_graph_def(g2, bytes, len, NULL, &st), &st);
    const char *names[2] = {"many", "one"};
    const uint16_t *want[2] = {many, one};
    int64_t n[2] = {3, 1};
    for (int k = 0; k < 2; k++) {
        vg_op *op = vg_graph_op_by_name(g2, names[k]);
        const vg_tensor *v = NULL;
        CHECK(op && vg_op_attr_tensor(op, "value", &v) && v);
        if (v) {
            CHECK_EQ_INT(vg_tensor_dtype(v), VG_BFLOAT16);
            CHECK(vg_tensor_num_elements(v) == n[k] && memcmp(vg_tensor_data(v), want[k], (size_t)n[k] * 2) == 0);
        }
    }
    vg_free(bytes);
    /* Add has no bfloat16 kernel yet: a clear refusal naming the dtype, not a wrong sum */
    vg_output m = vg_graph_op_by_name(g, "many") ? vg_out(vg_graph_op_by_name(g, "many"), 0) : (vg_output){0};
    vg_add(g, m, m, "sum");
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "bfloat16");
    vg_graph_free(g2);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_bfloat16__scalar_values);
    RUN_TEST(test_bfloat16__against_reference);
    RUN_TEST(test_bfloat16__cast);
    RUN_TEST(test_bfloat16__cast_gradient);
    RUN_TEST(test_bfloat16__checkpoint_round_trip);
    RUN_TEST(test_bfloat16__graphdef_and_refusal);
    TEST_MAIN_END();
}
