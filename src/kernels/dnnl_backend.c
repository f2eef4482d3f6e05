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
#include "kernels/dnnl_backend.h"
#include "kernels/cpu_features.h"
#include <pthread.h>
#include <stdatomic.h>
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
    int old = omp_get_max_threads();
    if (old != 1) omp_set_num_threads(1);
    dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    if (old != 1) omp_set_num_threads(old);
    return s == dnnl_success;
#else
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C,
        (void)ldc;
    return false;
#endif
}
