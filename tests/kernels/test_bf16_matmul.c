/* test_bf16_matmul.c - bfloat16 MatMul on oneDNN (issue 34, item 1): VG_BFLOAT16 inputs
 * in all four transpose combinations against the float32 MatMul of the same (bfloat16)
 * values, within bfloat16's rounding of the result; its gradients (the same MatMuls, in
 * bfloat16) against float32's; and a MatMul painted by the mixed-precision rewrite
 * (float32 edges carrying bfloat16 values). */
#include "test_util.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Deterministic values in [-2, 2) with full float32 mantissas. */
static void fill(float *v, int n, uint32_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffffff) / (float)(1 << 22) - 2.0f;
    }
}

static vg_tensor *f32(const float *v, int64_t r, int64_t c, vg_status *st) {
    int64_t d[2] = {r, c};
    return vg_tensor_new_copy(VG_FLOAT, d, 2, v, sizeof(float) * (size_t)(r * c), st);
}

static vg_tensor *bf16(const float *v, int64_t r, int64_t c, vg_status *st) {
    int64_t d[2] = {r, c};
    vg_tensor *t = vg_tensor_new(VG_BFLOAT16, d, 2, st);
    uint16_t *p = vg_tensor_data(t);
    for (int64_t i = 0; i < r * c; i++) p[i] = vg_float_to_bfloat16(v[i]);
    return t;
}

/* |got - want| <= 2^-8 |want| + atol: one bfloat16 rounding of the result (the float32
 * sums of products of bfloat16 values agree to float32 precision). */
static int count_bad(const float *got, const float *want, int n, double atol) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= fabs((double)want[i]) / 256.0 + atol)) bad++;
    return bad;
}

static void test_bf16_matmul__transposes(void) {
    enum { M = 37, K = 70, N = 29 };
    float av[M * K], bv[K * N];
    fill(av, M * K, 1);
    fill(bv, K * N, 2);
    for (int i = 0; i < M * K; i++) av[i] = vg_bfloat16_to_float(vg_float_to_bfloat16(av[i]));
    for (int i = 0; i < K * N; i++) bv[i] = vg_bfloat16_to_float(vg_float_to_bfloat16(bv[i]));
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            vg_status st = {0};
            vg_graph *g = vg_graph_new();
            /* the stored layouts of op(A) = A^T and op(B) = B^T */
            float at[M * K], bt[K * N];
            for (int i = 0; i < M; i++)
                for (int k = 0; k < K; k++) at[k * M + i] = av[i * K + k];
            for (int k = 0; k < K; k++)
                for (int j = 0; j < N; j++) bt[j * K + k] = bv[k * N + j];
            const float *as = ta ? at : av, *bs = tb ? bt : bv;
            int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
            vg_tensor *a16 = bf16(as, ar, ac, &st), *b16 = bf16(bs, br, bc, &st);
            vg_tensor *a32 = f32(as, ar, ac, &st), *b32 = f32(bs, br, bc, &st);
            vg_output y16 = vg_matmul(g, vg_const(g, a16, "a16"), vg_const(g, b16, "b16"), ta, tb, "mm16");
            vg_output y32 = vg_matmul(g, vg_const(g, a32, "a32"), vg_const(g, b32, "b32"), ta, tb, "mm32");
            CHECK_EQ_INT(vg_output_dtype(y16), VG_BFLOAT16);
            vg_session *s = vg_session_new(g, NULL, &st);
            vg_output f[2] = {y16, y32};
            vg_tensor *o[2] = {NULL, NULL};
            CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 2, NULL, 0, NULL, &st), &st);
            CHECK_EQ_INT(vg_tensor_dtype(o[0]), VG_BFLOAT16);
            CHECK_EQ_INT(vg_tensor_dim(o[0], 0), M);
            CHECK_EQ_INT(vg_tensor_dim(o[0], 1), N);
            float got[M * N];
            const uint16_t *p = vg_tensor_data(o[0]);
            for (int i = 0; i < M * N; i++) got[i] = vg_bfloat16_to_float(p[i]);
            CHECK_EQ_INT(count_bad(got, vg_tensor_data(o[1]), M * N, 1e-5), 0);
            for (int i = 0; i < 2; i++) vg_tensor_free(o[i]);
            vg_session_free(s);
            vg_tensor_free(a16), vg_tensor_free(b16), vg_tensor_free(a32), vg_tensor_free(b32);
            vg_graph_free(g);
        }
}

/* The gradient of bfloat16 MatMul (TF's _MatMulGrad: MatMul(dy, b^T), MatMul(a^T, dy),
 * in bfloat16) against float32's, with dy = ones. */
static void test_bf16_matmul__gradient(void) {
    enum { M = 8, K = 16, N = 12 };
    float av[M * K], bv[K * N], ones[M * N];
    fill(av, M * K, 3);
    fill(bv, K * N, 4);
    for (int i = 0; i < M * K; i++) av[i] = vg_bfloat16_to_float(vg_float_to_bfloat16(av[i]));
    for (int i = 0; i < K * N; i++) bv[i] = vg_bfloat16_to_float(vg_float_to_bfloat16(bv[i]));
    for (int i = 0; i < M * N; i++) ones[i] = 1.0f;
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    vg_tensor *t[6] = {bf16(av, M, K, &st), bf16(bv, K, N, &st), bf16(ones, M, N, &st), f32(av, M, K, &st),
                       f32(bv, K, N, &st), f32(ones, M, N, &st)};
    vg_output a16 = vg_const(g, t[0], "a16"), b16 = vg_const(g, t[1], "b16"), d16 = vg_const(g, t[2], "d16");
    vg_output a32 = vg_const(g, t[3], "a32"), b32 = vg_const(g, t[4], "b32"), d32 = vg_const(g, t[5], "d32");
    vg_output y16 = vg_matmul(g, a16, b16, false, false, "y16"), y32 = vg_matmul(g, a32, b32, false, false, "y32");
    vg_output x16[2] = {a16, b16}, x32[2] = {a32, b32}, dx16[2], dx32[2];
    CHECK_OK(vg_gradients(g, &y16, 1, x16, 2, &d16, dx16, &st), &st);
    CHECK_OK(vg_gradients(g, &y32, 1, x32, 2, &d32, dx32, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output f[4] = {dx16[0], dx16[1], dx32[0], dx32[1]};
    vg_tensor *o[4] = {NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 4, NULL, 0, NULL, &st), &st);
    for (int w = 0; w < 2; w++) {
        CHECK_EQ_INT(vg_tensor_dtype(o[w]), VG_BFLOAT16);
        int64_t n = vg_tensor_num_elements(o[w]);
        CHECK_EQ_INT(n, vg_tensor_num_elements(o[w + 2]));
        float got[K * N];
        const uint16_t *p = vg_tensor_data(o[w]);
        for (int64_t i = 0; i < n; i++) got[i] = vg_bfloat16_to_float(p[i]);
        CHECK_EQ_INT(count_bad(got, vg_tensor_data(o[w + 2]), (int)n, 1e-5), 0);
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(o[i]);
    for (int i = 0; i < 6; i++) vg_tensor_free(t[i]);
    vg_session_free(s);
    vg_graph_free(g);
}

/* A MatMul the rewrite painted: float32 in and out, the inputs rounded to bfloat16, the
 * result rounded to bfloat16 (every value has zero low 16 bits), within bfloat16's
 * tolerance of the float32 product; without the rewrite the same graph keeps float32. */
static void test_bf16_matmul__painted(void) {
    enum { M = 16, K = 64, N = 24 };
    float av[M * K], bv[K * N];
    fill(av, M * K, 5);
    fill(bv, K * N, 6);
    for (int amp = 0; amp < 2; amp++) {
        vg_status st = {0};
        vg_graph *g = vg_graph_new();
        vg_tensor *ta = f32(av, M, K, &st), *tb = f32(bv, K, N, &st);
        vg_output y = vg_matmul(g, vg_const(g, ta, "a"), vg_const(g, tb, "b"), false, false, "mm");
        vg_output out = vg_identity(g, y, "out"); /* the fetched node is preserved, as TF */
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_set_auto_mixed_precision(s, amp, &st), &st);
        vg_tensor *o = NULL;
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &out, &o, 1, NULL, 0, NULL, &st), &st);
        CHECK_EQ_INT(vg_tensor_dtype(o), VG_FLOAT);
        const float *p = vg_tensor_data(o);
        int low = 0, bad = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double ref = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    ref += (double)av[i * K + k] * bv[k * N + j];
                    mag += fabs((double)av[i * K + k] * bv[k * N + j]);
                }
                if (fbits(p[i * N + j]) & 0xffffu) low++;
                /* bfloat16 inputs: each product off by <= 2^-8 relative; the result's rounding */
                if (!(fabs(p[i * N + j] - ref) <= mag / 128.0 + fabs(ref) / 256.0 + 1e-6)) bad++;
            }
        CHECK_EQ_INT(bad, 0);
        if (amp) CHECK_EQ_INT(low, 0);
        else CHECK(low > M * N / 2);
        /* a second run leaves the state the same (the rewrite is per plan) */
        vg_tensor_free(o);
        CHECK_CODE(vg_session_set_auto_mixed_precision(s, !amp, &st), VG_FAILED_PRECONDITION);
        vg_session_free(s);
        vg_tensor_free(ta), vg_tensor_free(tb);
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_bf16_matmul__transposes);
    RUN_TEST(test_bf16_matmul__gradient);
    RUN_TEST(test_bf16_matmul__painted);
    TEST_MAIN_END();
}
