/*
 * bf16_dnnl.c - bfloat16 matrix products on oneDNN's matmul primitive: bfloat16 A and
 * B, float32 accumulation and result (TF's bfloat16 MatMul rounds that result to
 * bfloat16; the caller does). oneDNN picks its kernel from the CPU: AMX tiles
 * (brg:avx512_core_amx_bf16), AVX512-BF16 (brg:avx512_core_bf16), plain AVX-512
 * (bfloat16 emulated); without any of them it has no primitive and the product runs in
 * float32 on converted copies (vg__nn_gemm1), which the log says once.
 *
 * Used by MatMul for VG_BFLOAT16 inputs and for the MatMuls the mixed-precision rewrite
 * painted (exec/amp.c). A primitive is built per shape and transpose pair, cached for
 * the life of the process (at most BF16_CACHE_MAX), and runs on the calling thread with
 * a scratchpad of its own per call.
 */
#include "core/bf16_round.h"
#include "core/half.h"
#include "kernels/backend/bf16.h"
#include "kernels/backend/cpu_features.h"
#include "kernels/backend/dnnl_backend.h"
#include "kernels/nn/nn_internal.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef VIGIL_HAVE_DNNL
#include <dnnl.h>

typedef struct bmm_plan {
    bool ta, tb;
    int64_t M, N, K;
    bool failed;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t a_md, b_md, c_md, sp_md;
    size_t sp_bytes;
} bmm_plan;

#define BF16_CACHE_MAX 512
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static bmm_plan *g_cache[BF16_CACHE_MAX];
static int g_n;

static bool bmm_build(bmm_plan *p) {
    return vg__dnnl_matmul_build(vg__dnnl_engine(), p->ta, p->tb, p->M, p->N, p->K, p->ta ? p->M : p->K,
                                 p->tb ? p->K : p->N, p->N, dnnl_bf16, dnnl_f32, &p->a_md, &p->b_md, &p->c_md,
                                 &p->sp_md, &p->sp_bytes, &p->prim, "bfloat16 MatMul");
}

static const bmm_plan *bmm_get(bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
    pthread_mutex_lock(&g_mu);
    bmm_plan *found = NULL;
    for (int i = 0; i < g_n && !found; i++) {
        bmm_plan *p = g_cache[i];
        if (p->ta == ta && p->tb == tb && p->M == M && p->N == N && p->K == K) found = p;
    }
    if (!found && g_n < BF16_CACHE_MAX) {
        bmm_plan *p = vg__dnnl_engine() ? calloc(1, sizeof *p) : NULL;
        if (p) {
            p->ta = ta, p->tb = tb, p->M = M, p->N = N, p->K = K;
            int old = vg__dnnl_one_thread_begin();
            p->failed = !bmm_build(p);
            vg__dnnl_one_thread_end(old);
            g_cache[g_n++] = found = p;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return found && !found->failed ? found : NULL;
}

static bool bmm_exec(const bmm_plan *p, const uint16_t *A, const uint16_t *B, float *C) {
    void *sp = p->sp_bytes ? aligned_alloc(128, (p->sp_bytes + 127) / 128 * 128) : NULL;
    if (p->sp_bytes && !sp) return false;
    dnnl_engine_t eng = vg__dnnl_engine();
    dnnl_memory_t m[4] = {NULL};
    bool ok = !dnnl_memory_create(&m[0], &p->a_md, eng, (void *)A) &&
              !dnnl_memory_create(&m[1], &p->b_md, eng, (void *)B) &&
              !dnnl_memory_create(&m[2], &p->c_md, eng, C) &&
              (!sp || !dnnl_memory_create(&m[3], &p->sp_md, eng, sp));
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DST, m[2]},
                                   {DNNL_ARG_SCRATCHPAD, m[3]}};
        ok = vg__dnnl_run(eng, p->prim, sp ? 4 : 3, args);
    }
    for (int i = 0; i < 4; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    free(sp);
    return ok;
}
#endif

static atomic_bool g_logged;

static void log_fallback_once(void) {
    if (atomic_exchange(&g_logged, true)) return;
    const vg__cpu *c = vg__cpu_get();
    vg_logf(VG_LOG_WARN,
            "bfloat16 MatMul: %s; the products run in float32 on the bfloat16 values (same results, no speed-up)",
            !c->amx_bf16 && !c->avx512_bf16 ? "this CPU has neither AMX-BF16 nor AVX512-BF16 and oneDNN has no "
                                              "bfloat16 matmul for it"
                                            : "oneDNN has no bfloat16 matmul here");
}

bool vg__bf16_cpu_native(void) {
    const vg__cpu *c = vg__cpu_get();
    return c->amx_bf16 || c->avx512_bf16;
}

/* Row-major C (M x N, float32) = op(A) op(B), A and B bfloat16 as uint16 arrays with
 * leading dimensions K or M (A) and N or K (B) as in vg__nn_gemm. */
void vg__bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t *A, const uint16_t *B,
                   float *C) {
#ifdef VIGIL_HAVE_DNNL
    const bmm_plan *p = bmm_get(ta, tb, M, N, K);
    if (p && bmm_exec(p, A, B, C)) return;
#endif
    log_fallback_once();
    float *fa = malloc(sizeof(float) * (size_t)(M * K)), *fb = malloc(sizeof(float) * (size_t)(K * N));
    if (fa && fb) {
        vg__bf16_to_float_n(A, fa, (size_t)(M * K));
        vg__bf16_to_float_n(B, fb, (size_t)(K * N));
        vg__nn_gemm1(VG_FLOAT, ta, tb, M, N, K, fa, ta ? M : K, fb, tb ? K : N, 0.0, C, N);
    } else {
        /* no memory for copies: the plain loop */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += vg__bf16_to_float(A[ta ? k * M + i : i * K + k]) *
                           vg__bf16_to_float(B[tb ? j * K + k : k * N + j]);
                C[i * N + j] = acc;
            }
    }
    free(fa);
    free(fb);
}

/* MatMul's bfloat16 path: a and b VG_BFLOAT16 (c VG_BFLOAT16) or float32 whose values
 * are rounded to bfloat16 (a painted MatMul; c float32, rounded by the executor). */
vg_code vg__bf16_matmul(vg__kctx *ctx, const vg_tensor *a, const vg_tensor *b, bool ta, bool tb, int64_t M, int64_t N,
                        int64_t K, vg_tensor *c) {
    vg_status *st = vg__kctx_status(ctx);
    bool in16 = vg_tensor_dtype(a) == VG_BFLOAT16;
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    uint16_t *a16 = in16 ? NULL : malloc(2 * na + 2), *b16 = in16 ? NULL : malloc(2 * nb + 2);
    float *c32 = vg_tensor_dtype(c) == VG_FLOAT ? NULL : malloc(4 * nc + 4);
    vg_code rc = VG_OK;
    if ((!in16 && (!a16 || !b16)) || (vg_tensor_dtype(c) != VG_FLOAT && !c32)) {
        rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in a bfloat16 MatMul");
        goto out;
    }
    if (!in16) {
        vg__f32_to_bf16_n(vg_tensor_data(a), a16, na);
        vg__f32_to_bf16_n(vg_tensor_data(b), b16, nb);
    }
    float *dst = c32 ? c32 : vg_tensor_data(c);
    vg__bf16_gemm(ta, tb, M, N, K, in16 ? vg_tensor_data(a) : a16, in16 ? vg_tensor_data(b) : b16, dst);
    if (c32) vg__f32_to_bf16_n(c32, vg_tensor_data(c), nc);
out:
    free(a16);
    free(b16);
    free(c32);
    return rc;
}
