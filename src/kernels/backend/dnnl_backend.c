/*
 * dnnl_backend.c - the backend switch (vigil/backend.h) and the oneDNN GEMM.
 *
 * Why oneDNN by default: Debian's OpenBLAS picks its kernels from a table of CPU
 * models; on a CPU newer than the build it falls back to generic SSE3 kernels
 * ("Prescott", ~6x below the AVX-512 peak). oneDNN JIT-generates its kernels from the
 * ISA bits (cpuid), so a new CPU gets its best vector width. Measured on an Intel Xeon
 * (Sapphire Rapids, AVX-512) on the MLP's GEMM shapes, best of 30, 1 thread: dnnl_sgemm
 * 152 GFLOP/s, OpenBLAS SkylakeX kernels 129, OpenBLAS Prescott 41.
 *
 * Threading: Debian's libdnnl uses OpenMP. vigil splits work over its own pool, so each
 * call runs with the calling thread's OpenMP team size set to 1 (and restored), which
 * keeps oneDNN from starting a second set of threads.
 */
#include "kernels/backend/dnnl_backend.h"
#include "kernels/backend/cpu_features.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef VIGIL_HAVE_DNNL
#include <dnnl.h>
extern void omp_set_num_threads(int n);
extern int omp_get_max_threads(void);
#define HAVE_DNNL 1
#else
#define HAVE_DNNL 0
#endif

/* 0: not resolved yet; else a vg_backend (never AUTO). */
static atomic_int g_backend;
static atomic_int g_reason; /* why (index into reasons) */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

enum { R_CPU_AVX2, R_CPU_BASE, R_NO_DNNL, R_ENV, R_SET };
static const char *const reasons[] = {
    "auto: the CPU has AVX2+FMA and oneDNN dispatches on ISA bits",
    "auto: the CPU lacks AVX2+FMA",
    "auto: built without oneDNN",
    "environment VG_BACKEND",
    "vg_backend_set"};

static void log_choice(void) {
    char buf[512];
    vg_logf(VG_LOG_DEBUG, "%s", vg_backend_describe(buf, sizeof buf));
    const vg__cpu *c = vg__cpu_get();
    const char *core = vg__blas_corename();
    if (vg__blas_below_cpu(c, core) && atomic_load(&g_backend) == VG_BACKEND_OPENBLAS)
        vg_logf(VG_LOG_WARN,
                "OpenBLAS runs its %s kernels, below what this CPU supports; float32 GEMMs are slower than "
                "they could be%s",
                core, HAVE_DNNL ? " (VG_BACKEND=dnnl uses oneDNN)" : " (build with oneDNN or set OPENBLAS_CORETYPE)");
}

static int auto_choice(int *reason) {
    const char *env = getenv("VG_BACKEND");
    if (env && *env && strcasecmp(env, "auto")) {
        if (!strcasecmp(env, "openblas")) {
            *reason = R_ENV;
            return VG_BACKEND_OPENBLAS;
        }
        if (!strcasecmp(env, "dnnl") || !strcasecmp(env, "onednn")) {
            if (HAVE_DNNL) {
                *reason = R_ENV;
                return VG_BACKEND_DNNL;
            }
            vg_logf(VG_LOG_WARN, "VG_BACKEND=%s: vigil was built without oneDNN; choosing automatically", env);
        } else {
            vg_logf(VG_LOG_WARN, "VG_BACKEND=%s is not openblas, dnnl or auto; choosing automatically", env);
        }
    }
    if (!HAVE_DNNL) {
        *reason = R_NO_DNNL;
        return VG_BACKEND_OPENBLAS;
    }
    if (vg__cpu_isa_level(vg__cpu_get()) >= VG__ISA_AVX2) {
        *reason = R_CPU_AVX2;
        return VG_BACKEND_DNNL;
    }
    *reason = R_CPU_BASE;
    return VG_BACKEND_OPENBLAS;
}

vg_backend vg_backend_get(void) {
    int b = atomic_load_explicit(&g_backend, memory_order_relaxed);
    if (b) return (vg_backend)b;
    pthread_mutex_lock(&g_mu);
    bool chose = false;
    if (!(b = atomic_load(&g_backend))) {
        int reason = 0;
        b = auto_choice(&reason);
        atomic_store(&g_reason, reason);
        atomic_store(&g_backend, b);
        chose = true;
    }
    pthread_mutex_unlock(&g_mu);
    if (chose) log_choice();
    return (vg_backend)b;
}

vg_code vg_backend_set(vg_backend b, vg_status *st) {
    if (b != VG_BACKEND_AUTO && b != VG_BACKEND_OPENBLAS && b != VG_BACKEND_DNNL)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_backend_set: unknown backend %d", (int)b);
    if (b == VG_BACKEND_DNNL && !HAVE_DNNL)
        return vg_status_set(st, VG_UNIMPLEMENTED, "vg_backend_set: vigil was built without oneDNN");
    pthread_mutex_lock(&g_mu);
    atomic_store(&g_reason, R_SET);
    atomic_store(&g_backend, (int)b); /* AUTO (0): resolved again at the next use */
    pthread_mutex_unlock(&g_mu);
    if (b != VG_BACKEND_AUTO) log_choice();
    return VG_OK;
}

const char *vg_backend_name(vg_backend b) {
    switch (b) {
    case VG_BACKEND_OPENBLAS: return "openblas";
    case VG_BACKEND_DNNL: return "dnnl";
    case VG_BACKEND_AUTO: return "auto";
    }
    return "unknown";
}

char *vg_backend_describe(char *buf, size_t len) {
    if (!buf || !len) return buf;
    vg_backend b = vg_backend_get();
    const vg__cpu *c = vg__cpu_get();
    char flags[256];
    vg__cpu_flags_str(c, flags, sizeof flags);
    const char *core = vg__blas_corename();
    int r = atomic_load(&g_reason);
    snprintf(buf, len, "compute backend %s (%s); CPU %s family %u model %u [%s]; OpenBLAS core %s%s",
             vg_backend_name(b), reasons[r >= 0 && r < (int)(sizeof reasons / sizeof reasons[0]) ? r : 0],
             c->vendor, c->family, c->model, flags, core,
             vg__blas_below_cpu(c, core) ? " (below the CPU's ISA: generic fallback or forced core type)" : "");
    return buf;
}

const char *vg_backend_openblas_coretype_hint(void) {
    if (vg_backend_get() != VG_BACKEND_OPENBLAS) return NULL;
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (env && *env) return NULL; /* the user chose one */
    const vg__cpu *c = vg__cpu_get();
    if (!vg__blas_below_cpu(c, vg__blas_corename())) return NULL;
    const char *core = vg__blas_core_for(c);
    return core && vg__blas_core_level(core) > vg__blas_core_level(vg__blas_corename()) ? core : NULL;
}

bool vg__backend_use_dnnl(void) { return vg_backend_get() == VG_BACKEND_DNNL; }

bool vg__dnnl_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
#ifdef VIGIL_HAVE_DNNL
    int old = vg__dnnl_one_thread_begin();
    dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    vg__dnnl_one_thread_end(old);
    return s == dnnl_success;
#else
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C,
        (void)ldc;
    return false;
#endif
}

/* ------------------------------------------------------------------------ */
/* GEMM path choice (vg__dnnl_gemm). Measured per shape on the model suite's GEMMs
 * (bench_matmul --suite; Intel Xeon with AVX-512, oneDNN 2.6.3, OpenBLAS 0.3.21, one
 * thread, CPU time, machine loaded; see bench/README.md):
 *  - a skinny product with a transposed weight, C[20, 768] = A[20, 2048] B[768, 2048]^T
 *    (the PTB LSTM's per-step input/state gradients): oneDNN's matmul primitive
 *    (brgemm) 88-89 GFLOP/s, dnnl_sgemm 72-78, OpenBLAS 56-58; computing C^T instead
 *    (the weight as the non-transposed left operand) 80 / 65. The primitive wins.
 *  - a product of <= 1024 columns (graph network's
 *    [12288, 384] x [384, 128] 147-150 vs dnnl_sgemm 127-138, its [12288, 128] x
 *    [384, 128]^T 142-150 vs 133-134, the PTB softmax's dlogits [700, 10000] x
 *    [512, 10000]^T 147-148 vs 128-132; the graph network's 2048-row products within
 *    noise of each other): the primitive.
 *  - the PTB softmax forward [700, 512] x [512, 10000] (10000 columns): dnnl_sgemm
 *    171-172, the primitive 140-142, OpenBLAS 145-154: dnnl_sgemm.
 *  - a transposed left operand: the weight gradients X^T dY. [512, 700]^T x [700, 10000]
 *    (the softmax weight): OpenBLAS (SkylakeX kernels) 145-149, dnnl_sgemm 126-132, the
 *    primitive 105-113: OpenBLAS, where it runs AVX-512 kernels (on an AVX2-only CPU or
 *    with OpenBLAS's generic kernels nothing was measured ahead of dnnl_sgemm). With
 *    <= 1024 columns the primitive: [384, 12288]^T x [12288, 128] 114-121 vs dnnl_sgemm
 *    104-108; [128, 12288]^T x [12288, 128] and [256, 2048]^T x [2048, 128] within noise.
 * Without AVX-512 (measured with DNNL_MAX_CPU_ISA=AVX2) oneDNN 2.6's matmul primitive is
 * its gemm:jit implementation, the kernel dnnl_sgemm runs: 72 vs 73 and 84 vs 87 GFLOP/s
 * on the per-step and graph-network products, so the choice costs an AVX2 CPU nothing.
 * Packed weights were not tried: OpenBLAS has no sgemm_pack and oneDNN 2.6's C API no
 * packed sgemm; a blocked-weight primitive would reorder the weight at every call.
 * The primitive costs a stream and four memory objects per call (a few microseconds)
 * and one creation per shape (cached), so it is used only on products of >= 28 MFLOP:
 * on the MLP shapes of bench_matmul (8-26 MFLOP) it was 2-4% behind dnnl_sgemm, and half
 * of the PTB per-step product (what a 2-thread split gives each thread) is 31.5. */

#define GEMM_MATMUL_MIN_FLOPS 28.0e6

/* OpenBLAS runs AVX-512 kernels (SkylakeX or newer) and not below the CPU: the one case
 * its sgemm was measured ahead of oneDNN's (0: not resolved yet, 1 yes, 2 no). */
static atomic_int g_blas_avx512;

static bool blas_avx512(void) {
    int v = atomic_load_explicit(&g_blas_avx512, memory_order_relaxed);
    if (!v) {
        const char *core = vg__blas_corename();
        v = vg__blas_core_level(core) >= VG__ISA_AVX512 && !vg__blas_below_cpu(vg__cpu_get(), core) ? 1 : 2;
        atomic_store_explicit(&g_blas_avx512, v, memory_order_relaxed);
    }
    return v == 1;
}

int vg__dnnl_gemm_path(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float beta) {
    (void)tb;
    if (!HAVE_DNNL || !vg__backend_use_dnnl()) return VG__GEMM_BLAS;
    double flops = 2.0 * (double)M * (double)N * (double)K;
    if (flops < GEMM_MATMUL_MIN_FLOPS) return VG__GEMM_DNNL_SGEMM;
    /* a transposed left operand and a wide product: OpenBLAS's own AVX-512 kernels */
    if (ta && N >= 4096 && blas_avx512()) return VG__GEMM_BLAS;
    if (beta != 0.0f) return VG__GEMM_DNNL_SGEMM; /* the primitive is built for beta 0 */
    /* up to 1024 columns: the matmul primitive (brgemm); wider (the 10000-word softmax)
     * dnnl_sgemm, which packs the wide right operand */
    if (N <= 1024) return VG__GEMM_DNNL_MATMUL;
    return VG__GEMM_DNNL_SGEMM;
}

bool vg__dnnl_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    switch (vg__dnnl_gemm_path(ta, tb, M, N, K, beta)) {
    case VG__GEMM_DNNL_MATMUL:
        if (vg__dnnl_matmul(ta, tb, M, N, K, A, lda, B, ldb, C, ldc)) return true;
        return vg__dnnl_sgemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    case VG__GEMM_DNNL_SGEMM: return vg__dnnl_sgemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    default: return false;
    }
}

#ifdef VIGIL_HAVE_DNNL
static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

/* oneDNN lays out a user scratchpad assuming its base is aligned to 128 bytes (its
 * memory_tracking default alignment) and aligns each buffer inside it up from there;
 * from a base that is only 64-aligned its AVX2 1x1 filter gradient wrote 36 bytes past
 * the scratchpad's size (seen with 2.6.3 and DNNL_MAX_CPU_ISA=AVX2: the partial
 * gradient placed after it came back wrong). The plan books this much slack and
 * vg__dconv_exec aligns the caller's pointer up. */
#define DNNL_SCRATCH_ALIGN 128

static dnnl_engine_t g_gemm_eng;
static pthread_mutex_t g_gemm_eng_mu = PTHREAD_MUTEX_INITIALIZER;

dnnl_engine_t vg__dnnl_engine(void) {
    pthread_mutex_lock(&g_gemm_eng_mu);
    if (!g_gemm_eng && dnnl_engine_create(&g_gemm_eng, dnnl_cpu, 0)) g_gemm_eng = NULL;
    dnnl_engine_t e = g_gemm_eng;
    pthread_mutex_unlock(&g_gemm_eng_mu);
    return e;
}

int vg__dnnl_one_thread_begin(void) {
    int old = omp_get_max_threads();
    if (old != 1) omp_set_num_threads(1);
    return old;
}

void vg__dnnl_one_thread_end(int old) {
    if (old != 1) omp_set_num_threads(old);
}

bool vg__dnnl_run(dnnl_engine_t eng, dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args) {
    dnnl_stream_t s;
    if (dnnl_stream_create(&s, eng, dnnl_stream_default_flags)) return false;
    int old = vg__dnnl_one_thread_begin();
    dnnl_status_t r = dnnl_primitive_execute(prim, s, nargs, args);
    vg__dnnl_one_thread_end(old);
    dnnl_stream_destroy(s);
    return r == dnnl_success;
}

/* A cached matmul primitive for one shape and layout. Published into the table with
 * release stores and never changed or freed after, so lookups take no lock. */
typedef struct gemm_key {
    int64_t M, N, K, lda, ldb, ldc;
    int ta, tb;
} gemm_key;

typedef struct gemm_plan {
    gemm_key key;
    bool failed; /* no primitive for this key: cached so it is not retried */
    dnnl_primitive_t prim;
    dnnl_memory_desc_t a_md, b_md, c_md, scratch_md;
    size_t scratch_bytes; /* 0: none; else with DNNL_SCRATCH_ALIGN slack */
} gemm_plan;

#define GEMM_CACHE_SLOTS 512 /* open addressing; at most half filled */
static _Atomic(gemm_plan *) g_gemm_cache[GEMM_CACHE_SLOTS];
static int g_gemm_n;
static pthread_mutex_t g_gemm_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t gemm_hash(const gemm_key *k) {
    uint64_t h = 1469598103934665603ull;
    const int64_t v[8] = {k->M, k->N, k->K, k->lda, k->ldb, k->ldc, k->ta, k->tb};
    for (int i = 0; i < 8; i++) h = (h ^ (uint64_t)v[i]) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29)) % GEMM_CACHE_SLOTS;
}

static bool gemm_key_eq(const gemm_key *a, const gemm_key *b) {
    return a->M == b->M && a->N == b->N && a->K == b->K && a->lda == b->lda && a->ldb == b->ldb &&
           a->ldc == b->ldc && a->ta == b->ta && a->tb == b->tb;
}

bool vg__dnnl_matmul_build(dnnl_engine_t eng, bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda,
                           int64_t ldb, int64_t ldc, dnnl_data_type_t abdt, dnnl_data_type_t cdt,
                           dnnl_memory_desc_t *a_md, dnnl_memory_desc_t *b_md, dnnl_memory_desc_t *c_md,
                           dnnl_memory_desc_t *sp_md, size_t *sp_bytes, dnnl_primitive_t *prim, const char *what) {
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N};
    dnnl_dims_t as = {ta ? 1 : lda, ta ? lda : 1}, bs = {tb ? 1 : ldb, tb ? ldb : 1}, cs = {ldc, 1};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_matmul_desc_t md;
    bool ok = false;
    if (dnnl_memory_desc_init_by_strides(a_md, 2, ad, abdt, as) ||
        dnnl_memory_desc_init_by_strides(b_md, 2, bd, abdt, bs) ||
        dnnl_memory_desc_init_by_strides(c_md, 2, cd, cdt, cs) ||
        dnnl_matmul_desc_init(&md, a_md, b_md, NULL, c_md) || dnnl_primitive_attr_create(&attr) ||
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ||
        dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL))
        goto out;
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (sp) *sp_md = *sp;
    *sp_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (dnnl_primitive_create(prim, pd)) goto out;
    if (what) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        vg_logf(VG_LOG_DEBUG, "%s %lldx%lldx%lld: oneDNN %s", what, (long long)M, (long long)K, (long long)N,
                impl ? impl : "?");
    }
    ok = true;
out:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return ok;
}

/* Builds p's primitive (called with one OpenMP thread, so that oneDNN blocks for one). */
static bool gemm_build(gemm_plan *p, dnnl_engine_t eng) {
    const gemm_key *k = &p->key;
    size_t sp_bytes = 0;
    bool ok = vg__dnnl_matmul_build(eng, k->ta, k->tb, k->M, k->N, k->K, k->lda, k->ldb, k->ldc, dnnl_f32, dnnl_f32,
                                    &p->a_md, &p->b_md, &p->c_md, &p->scratch_md, &sp_bytes, &p->prim, NULL);
    p->scratch_bytes = sp_bytes ? round64(sp_bytes) + DNNL_SCRATCH_ALIGN : 0;
    return ok;
}

static const gemm_plan *gemm_plan_get(const gemm_key *key) {
    size_t h = gemm_hash(key);
    for (size_t i = 0; i < GEMM_CACHE_SLOTS; i++) { /* lock-free lookup */
        gemm_plan *p = atomic_load_explicit(&g_gemm_cache[(h + i) % GEMM_CACHE_SLOTS], memory_order_acquire);
        if (!p) break;
        if (gemm_key_eq(&p->key, key)) return p->failed ? NULL : p;
    }
    dnnl_engine_t eng = vg__dnnl_engine();
    if (!eng) return NULL;
    pthread_mutex_lock(&g_gemm_mu);
    gemm_plan *found = NULL;
    size_t slot = GEMM_CACHE_SLOTS;
    for (size_t i = 0; i < GEMM_CACHE_SLOTS; i++) {
        size_t s = (h + i) % GEMM_CACHE_SLOTS;
        gemm_plan *p = atomic_load_explicit(&g_gemm_cache[s], memory_order_relaxed);
        if (!p) {
            slot = s;
            break;
        }
        if (gemm_key_eq(&p->key, key)) {
            found = p;
            break;
        }
    }
    if (!found && slot < GEMM_CACHE_SLOTS && g_gemm_n < GEMM_CACHE_SLOTS / 2) {
        gemm_plan *p = calloc(1, sizeof *p);
        if (p) {
            p->key = *key;
            int old = vg__dnnl_one_thread_begin();
            p->failed = !gemm_build(p, eng);
            vg__dnnl_one_thread_end(old);
            if (p->failed)
                vg_logf(VG_LOG_DEBUG, "oneDNN has no matmul for %lldx%lldx%lld (ta %d, tb %d): dnnl_sgemm runs it",
                        (long long)key->M, (long long)key->N, (long long)key->K, key->ta, key->tb);
            atomic_store_explicit(&g_gemm_cache[slot], p, memory_order_release);
            g_gemm_n++;
            found = p;
        }
    }
    pthread_mutex_unlock(&g_gemm_mu);
    return found && !found->failed ? found : NULL;
}
#endif

bool vg__dnnl_matmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float *C, int64_t ldc) {
#ifdef VIGIL_HAVE_DNNL
    gemm_key key;
    memset(&key, 0, sizeof key);
    key.M = M, key.N = N, key.K = K, key.lda = lda, key.ldb = ldb, key.ldc = ldc, key.ta = ta, key.tb = tb;
    if (M <= 0 || N <= 0 || K <= 0 || lda < (ta ? M : K) || ldb < (tb ? K : N) || ldc < N) return false;
    const gemm_plan *p = gemm_plan_get(&key);
    if (!p) return false;
    void *scratch = NULL;
    if (p->scratch_bytes && !(scratch = vg__malloc(p->scratch_bytes))) return false;
    dnnl_engine_t eng = vg__dnnl_engine();
    dnnl_memory_t m[4] = {NULL, NULL, NULL, NULL};
    bool ok = false;
    if (dnnl_memory_create(&m[0], &p->a_md, eng, (void *)A) || dnnl_memory_create(&m[1], &p->b_md, eng, (void *)B) ||
        dnnl_memory_create(&m[2], &p->c_md, eng, C))
        goto out;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DST, m[2]}, {0, NULL}};
    int n = 3;
    if (scratch) {
        uintptr_t a = ((uintptr_t)scratch + DNNL_SCRATCH_ALIGN - 1) & ~(uintptr_t)(DNNL_SCRATCH_ALIGN - 1);
        if (dnnl_memory_create(&m[3], &p->scratch_md, eng, (void *)a)) goto out;
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[3]};
    }
    ok = vg__dnnl_run(eng, p->prim, n, args);
out:
    for (int i = 0; i < 4; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    vg__free(scratch);
    return ok;
#else
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    return false;
#endif
}

/* ------------------------------------------------------------------------ */
/* oneDNN convolutions (see dnnl_backend.h). Measured on the CNN benchmark's conv2
 * (batch 64, 14x14x32 -> 64, 5x5 SAME), 1 thread, AMD EPYC (Zen 5, AVX-512): forward
 * (brgconv:avx512_core) 231 GFLOP/s, backward data and weights (jit:avx512_core)
 * ~220 GFLOP/s each, with the weights in oneDNN's blocked layout (format any); with
 * the weights forced to HWIO oneDNN falls back to its GEMM convolution at 80-120. */

#ifdef VIGIL_HAVE_DNNL

struct vg__dconv_plan {
    int mode;
    vg__dconv_geom g;
    bool failed;                 /* no primitive for this key: cached so it is not retried */
    dnnl_primitive_t prim;
    dnnl_primitive_t reorder;    /* HWIO -> plan layout (FWD, BWD_DATA) or back (BWD_WEIGHTS); NULL: none */
    dnnl_memory_desc_t src_md, dst_md, w_md, b_md, hwio_md, scratch_md; /* src: NHWC input, dst: NHWC output */
    size_t scratch_bytes, w_bytes;
};

#define DCONV_CACHE_MAX 256
static pthread_mutex_t g_dconv_mu = PTHREAD_MUTEX_INITIALIZER;
static vg__dconv_plan *g_dconv_cache[DCONV_CACHE_MAX];
static int g_dconv_n;
static dnnl_engine_t g_eng;


/* Builds the primitive(s) of p (p->mode, p->g set); false when oneDNN has none. Runs
 * with one OpenMP thread so that oneDNN sizes its scratchpad and blocking for one. */
static bool dconv_build(vg__dconv_plan *p) {
    const vg__dconv_geom *g = &p->g;
    bool grouped = g->groups > 1;
    int wnd = grouped ? 5 : 4;
    dnnl_dims_t sd = {g->n, g->ci, g->h, g->w}, wd = {g->co, g->ci, g->kh, g->kw}, dd = {g->n, g->co, g->oh, g->ow};
    if (grouped) { /* (G, O/G, I/G, KH, KW); TF's [KH, KW, C, M] is hwigo with I/G = 1 */
        if (g->ci % g->groups || g->co % g->groups) return false;
        wd[0] = g->groups, wd[1] = g->co / g->groups, wd[2] = g->ci / g->groups, wd[3] = g->kh, wd[4] = g->kw;
    }
    dnnl_dims_t bd = {g->co}, st = {g->sh, g->sw}, pl = {g->pt, g->pl};
    dnnl_dims_t pr = {(g->oh - 1) * g->sh + g->kh - g->h - g->pt, (g->ow - 1) * g->sw + g->kw - g->w - g->pl};
    dnnl_memory_desc_t smd, wany, dmd, bmd, s16, w16, d16;
    /* bfloat16 (g->bf16): the operands bfloat16, the results float32 (see the header) */
    dnnl_data_type_t lo = g->bf16 ? dnnl_bf16 : dnnl_f32;
    bool fwd = p->mode == VG__DCONV_FWD, bwd_w = p->mode == VG__DCONV_BWD_WEIGHTS;
    if (dnnl_memory_desc_init_by_tag(&smd, 4, sd, fwd || bwd_w ? lo : dnnl_f32, dnnl_nhwc) ||
        dnnl_memory_desc_init_by_tag(&dmd, 4, dd, fwd ? dnnl_f32 : lo, dnnl_nhwc) ||
        dnnl_memory_desc_init_by_tag(&wany, wnd, wd, bwd_w ? dnnl_f32 : lo, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&s16, 4, sd, lo, dnnl_nhwc) || dnnl_memory_desc_init_by_tag(&d16, 4, dd, lo, dnnl_nhwc) ||
        dnnl_memory_desc_init_by_tag(&w16, wnd, wd, lo, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&p->hwio_md, wnd, wd, dnnl_f32, grouped ? dnnl_hwigo : dnnl_hwio) ||
        dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x))
        return false;
    bool ok = false;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t hint = NULL, pd = NULL, rpd = NULL;
    dnnl_convolution_desc_t fd, cd;
    const dnnl_memory_desc_t *bias = g->bias ? &bmd : NULL;
    if (dnnl_primitive_attr_create(&attr) || dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user))
        goto out;
    if (p->mode == VG__DCONV_FWD && g->relu) {
        if (dnnl_post_ops_create(&po) || dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) ||
            dnnl_primitive_attr_set_post_ops(attr, po))
            goto out;
    }
    /* the backward modes' forward hint: the operand type throughout */
    if (dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, fwd ? &smd : &s16,
                                           fwd ? &wany : &w16, fwd ? bias : &bmd, fwd ? &dmd : &d16, st, pl, pr))
        goto out;
    if (p->mode == VG__DCONV_FWD) {
        if (dnnl_primitive_desc_create(&pd, &fd, attr, g_eng, NULL)) goto out;
    } else {
        if (dnnl_primitive_desc_create(&hint, &fd, NULL, g_eng, NULL)) goto out;
        if (p->mode == VG__DCONV_BWD_DATA
                ? dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &smd, &wany, &dmd, st, pl, pr)
                : dnnl_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &smd, &wany, bias, &dmd,
                                                               st, pl, pr))
            goto out;
        if (dnnl_primitive_desc_create(&pd, &cd, attr, g_eng, hint)) goto out;
    }
    const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(
        pd, p->mode == VG__DCONV_BWD_WEIGHTS ? dnnl_query_diff_weights_md : dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (!w) goto out;
    p->w_md = *w;
    p->src_md = smd;
    p->dst_md = dmd;
    p->b_md = bmd;
    if (sp) p->scratch_md = *sp;
    size_t sp_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
    p->scratch_bytes = sp_bytes ? round64(sp_bytes) + DNNL_SCRATCH_ALIGN : 0;
    if (!dnnl_memory_desc_equal(w, &p->hwio_md)) {
        p->w_bytes = round64(dnnl_memory_desc_get_size(w));
        if (p->mode == VG__DCONV_BWD_WEIGHTS ? dnnl_reorder_primitive_desc_create(&rpd, w, g_eng, &p->hwio_md, g_eng, NULL)
                                              : dnnl_reorder_primitive_desc_create(&rpd, &p->hwio_md, g_eng, w, g_eng, NULL))
            goto out;
        if (dnnl_primitive_create(&p->reorder, rpd)) goto out;
    }
    if (dnnl_primitive_create(&p->prim, pd)) goto out;
    ok = true;
out:
    if (!ok && p->reorder) {
        dnnl_primitive_destroy(p->reorder);
        p->reorder = NULL;
    }
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return ok;
}

static bool dconv_key_eq(const vg__dconv_plan *p, int mode, const vg__dconv_geom *g) {
    return p->mode == mode && !memcmp(&p->g, g, sizeof *g);
}

const vg__dconv_plan *vg__dconv_plan_get(int mode, const vg__dconv_geom *g) {
    vg__dconv_geom key;
    memset(&key, 0, sizeof key); /* the padding bytes take part in memcmp */
    key = *g;
    if (mode != VG__DCONV_FWD) key.relu = 0;
    if (mode == VG__DCONV_BWD_DATA) key.bias = 0;
    pthread_mutex_lock(&g_dconv_mu);
    vg__dconv_plan *found = NULL;
    for (int i = 0; i < g_dconv_n && !found; i++)
        if (dconv_key_eq(g_dconv_cache[i], mode, &key)) found = g_dconv_cache[i];
    if (!found && g_dconv_n < DCONV_CACHE_MAX) {
        if (!g_eng) g_eng = vg__dnnl_engine();
        vg__dconv_plan *p = g_eng ? calloc(1, sizeof *p) : NULL;
        if (p) {
            p->mode = mode;
            p->g = key;
            int old = vg__dnnl_one_thread_begin();
            p->failed = !dconv_build(p);
            vg__dnnl_one_thread_end(old);
            if (p->failed)
                vg_logf(VG_LOG_DEBUG, "oneDNN has no convolution for mode %d, %lldx%lldx%lldx%lld filter %lldx%lld "
                        "-> %lld: vigil's kernels run it", mode, (long long)g->n, (long long)g->h, (long long)g->w,
                        (long long)g->ci, (long long)g->kh, (long long)g->kw, (long long)g->co);
            g_dconv_cache[g_dconv_n++] = found = p;
        }
    }
    pthread_mutex_unlock(&g_dconv_mu);
    return found && !found->failed ? found : NULL;
}

size_t vg__dconv_scratch_bytes(const vg__dconv_plan *p) { return p->scratch_bytes; }
size_t vg__dconv_weights_bytes(const vg__dconv_plan *p) { return p->w_bytes; }

/* Runs prim with args on a fresh stream with one OpenMP thread. */
static bool dconv_run(dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args) {
    return vg__dnnl_run(g_eng, prim, nargs, args);
}

static dnnl_memory_t dconv_mem(const dnnl_memory_desc_t *md, const void *ptr) {
    dnnl_memory_t m = NULL;
    if (dnnl_memory_create(&m, md, g_eng, (void *)ptr)) return NULL;
    return m;
}

bool vg__dconv_reorder_weights(const vg__dconv_plan *p, const float *src, float *dst) {
    if (!p->reorder) return false;
    bool back = p->mode == VG__DCONV_BWD_WEIGHTS;
    dnnl_memory_t a = dconv_mem(back ? &p->w_md : &p->hwio_md, src), b = dconv_mem(back ? &p->hwio_md : &p->w_md, dst);
    bool ok = false;
    if (a && b) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
        ok = dconv_run(p->reorder, 2, args);
    }
    if (a) dnnl_memory_destroy(a);
    if (b) dnnl_memory_destroy(b);
    return ok;
}

bool vg__dconv_exec(const vg__dconv_plan *p, const float *in, const float *w, const float *bias, float *out,
                    float *dbias, void *scratch) {
    const dnnl_memory_desc_t *wmd = p->w_bytes ? &p->w_md : &p->hwio_md;
    dnnl_memory_t m[5] = {NULL};
    dnnl_exec_arg_t args[5];
    int n = 0;
    bool ok = false;
    switch (p->mode) {
    case VG__DCONV_FWD:
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m[0] = dconv_mem(&p->src_md, in)};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m[1] = dconv_mem(wmd, w)};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, m[2] = dconv_mem(&p->dst_md, out)};
        if (p->g.bias) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, m[3] = dconv_mem(&p->b_md, bias)};
        break;
    case VG__DCONV_BWD_DATA:
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m[0] = dconv_mem(&p->dst_md, in)};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m[1] = dconv_mem(wmd, w)};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, m[2] = dconv_mem(&p->src_md, out)};
        break;
    default:
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m[0] = dconv_mem(&p->src_md, in)};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m[1] = dconv_mem(&p->dst_md, w)};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, m[2] = dconv_mem(wmd, out)};
        if (p->g.bias) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, m[3] = dconv_mem(&p->b_md, dbias)};
        break;
    }
    if (p->scratch_bytes) {
        uintptr_t a = ((uintptr_t)scratch + DNNL_SCRATCH_ALIGN - 1) & ~(uintptr_t)(DNNL_SCRATCH_ALIGN - 1);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[4] = dconv_mem(&p->scratch_md, (void *)a)};
    }
    bool all = true;
    for (int i = 0; i < n; i++) all = all && args[i].memory;
    if (all) ok = dconv_run(p->prim, n, args);
    for (int i = 0; i < 5; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    return ok;
}

#else /* !VIGIL_HAVE_DNNL */

const vg__dconv_plan *vg__dconv_plan_get(int mode, const vg__dconv_geom *g) {
    (void)mode, (void)g;
    return NULL;
}
size_t vg__dconv_scratch_bytes(const vg__dconv_plan *p) { (void)p; return 0; }
size_t vg__dconv_weights_bytes(const vg__dconv_plan *p) { (void)p; return 0; }
bool vg__dconv_reorder_weights(const vg__dconv_plan *p, const float *src, float *dst) {
    (void)p, (void)src, (void)dst;
    return false;
}
bool vg__dconv_exec(const vg__dconv_plan *p, const float *in, const float *w, const float *bias, float *out,
                    float *dbias, void *scratch) {
    (void)p, (void)in, (void)w, (void)bias, (void)out, (void)dbias, (void)scratch;
    return false;
}

#endif
