/* test_bf16_fallback.c - bfloat16 compute on a CPU where oneDNN has no bfloat16 kernels
 * (issue 34, item 1): oneDNN capped at AVX2 (ONEDNN_MAX_CPU_ISA, read at its first use)
 * has no bfloat16 matmul or convolution, as on a CPU without AMX or AVX512-BF16 (or
 * AVX-512 at all). The same graphs run: MatMul with bfloat16 inputs and a painted MatMul
 * compute in float32 on the bfloat16 values (the same sums), painted convolutions use the
 * float32 kernels, and the log says so once (WARN). */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int g_warns;
static void on_log(void *payload, vg_log_level level, const char *msg) {
    (void)payload;
    if (level == VG_LOG_WARN && strstr(msg, "bfloat16 MatMul") && strstr(msg, "float32")) g_warns++;
}

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float rb(float f) { return vg_bfloat16_to_float(vg_float_to_bfloat16(f)); }

static void fill(float *v, int n, uint32_t seed) { kt_fill_lcg(v, n, seed, 22, 2.0f); }

enum { M = 12, K = 40, N = 20 };

static void test_bf16_fallback__matmul(void) {
    float av[M * K], bv[K * N];
    fill(av, M * K, 7);
    fill(bv, K * N, 8);
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    int64_t da[2] = {M, K}, db[2] = {K, N};
    vg_tensor *a16 = vg_tensor_new(VG_BFLOAT16, da, 2, &st), *b16 = vg_tensor_new(VG_BFLOAT16, db, 2, &st);
    for (int i = 0; i < M * K; i++) ((uint16_t *)vg_tensor_data(a16))[i] = vg_float_to_bfloat16(av[i]);
    for (int i = 0; i < K * N; i++) ((uint16_t *)vg_tensor_data(b16))[i] = vg_float_to_bfloat16(bv[i]);
    vg_tensor *a32 = vg_tensor_new_copy(VG_FLOAT, da, 2, av, sizeof av, &st);
    vg_tensor *b32 = vg_tensor_new_copy(VG_FLOAT, db, 2, bv, sizeof bv, &st);
    vg_output y16 = vg_matmul(g, vg_const(g, a16, "a16"), vg_const(g, b16, "b16"), false, false, "mm16");
    vg_output yp = vg_matmul(g, vg_const(g, a32, "a32"), vg_const(g, b32, "b32"), false, false, "mmp");
    vg_output f[2] = {y16, vg_identity(g, yp, "out")};
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_set_auto_mixed_precision(s, true, &st), &st);
    for (int run = 0; run < 2; run++) {
        vg_tensor *o[2] = {NULL};
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 2, NULL, 0, NULL, &st), &st);
        const uint16_t *p16 = vg_tensor_data(o[0]);
        const float *pp = vg_tensor_data(o[1]);
        int bad = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float acc = 0; /* float32 on the bfloat16 values, k in order */
                for (int k = 0; k < K; k++) acc += rb(av[i * K + k]) * rb(bv[k * N + j]);
                float want = rb(acc);
                double tol = fabs((double)want) / 128.0 + 1e-5;
                if (!(fabs(vg_bfloat16_to_float(p16[i * N + j]) - want) <= tol)) bad++;
                if (!(fabs(pp[i * N + j] - want) <= tol) || (fbits(pp[i * N + j]) & 0xffffu)) bad++;
            }
        CHECK_EQ_INT(bad, 0);
        vg_tensor_free(o[0]), vg_tensor_free(o[1]);
    }
    CHECK_EQ_INT(g_warns, 1); /* once per process */
    vg_session_free(s);
    vg_tensor_free(a16), vg_tensor_free(b16), vg_tensor_free(a32), vg_tensor_free(b32);
    vg_graph_free(g);
}

/* A painted Conv2D (32 input channels: oneDNN's bfloat16 primitive where it has one)
 * runs the float32 kernels on the rounded operands: bfloat16 results within tolerance. */
static void test_bf16_fallback__conv(void) {
    enum { B = 2, H = 6, W = 6, CI = 32, CO = 16 };
    static float xv[B * H * W * CI], fv[3 * 3 * CI * CO];
    fill(xv, B * H * W * CI, 9);
    fill(fv, 3 * 3 * CI * CO, 10);
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    int64_t dx[4] = {B, H, W, CI}, df[4] = {3, 3, CI, CO}, strides[4] = {1, 1, 1, 1};
    vg_tensor *tx = vg_tensor_new_copy(VG_FLOAT, dx, 4, xv, sizeof xv, &st);
    vg_tensor *tf = vg_tensor_new_copy(VG_FLOAT, df, 4, fv, sizeof fv, &st);
    vg_output y = vg_identity(g, vg_conv2d(g, vg_const(g, tx, "x"), vg_const(g, tf, "f"), strides, "VALID", "conv"), "y");
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_set_auto_mixed_precision(s, true, &st), &st);
    vg_tensor *o = NULL;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &y, &o, 1, NULL, 0, NULL, &st), &st);
    const float *p = vg_tensor_data(o);
    int bad = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < H - 2; i++)
            for (int j = 0; j < W - 2; j++)
                for (int co = 0; co < CO; co++) {
                    double acc = 0;
                    for (int di = 0; di < 3; di++)
                        for (int dj = 0; dj < 3; dj++)
                            for (int ci = 0; ci < CI; ci++)
                                acc += (double)rb(xv[((b * H + i + di) * W + j + dj) * CI + ci]) *
                                       rb(fv[((di * 3 + dj) * CI + ci) * CO + co]);
                    float got = p[((b * (H - 2) + i) * (W - 2) + j) * CO + co];
                    if (!(fabs(got - acc) <= fabs(acc) / 128.0 + 1e-3) || (fbits(got) & 0xffffu)) bad++;
                }
    CHECK_EQ_INT(bad, 0);
    vg_tensor_free(o);
    vg_session_free(s);
    vg_tensor_free(tx), vg_tensor_free(tf);
    vg_graph_free(g);
}

int main(void) {
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1); /* before oneDNN's first use */
    setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
    vg_log_set(on_log, NULL, VG_LOG_DEBUG);
    RUN_TEST(test_bf16_fallback__matmul);
    RUN_TEST(test_bf16_fallback__conv);
    TEST_MAIN_END();
}
