/*
 * cpu_features.c - cpuid/xgetbv feature detection and the OpenBLAS core check (see
 * cpu_features.h). Bits from the Intel SDM vol. 2A, CPUID leaf 7 and XCR0.
 */
#include "kernels/backend/cpu_features.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

extern char *openblas_get_corename(void);

static vg__cpu g_cpu;
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static void detect(void) {
    vg__cpu *c = &g_cpu;
    unsigned r[4];
    cpuid(0, 0, r);
    unsigned max_leaf = r[0];
    memcpy(c->vendor, &r[1], 4);
    memcpy(c->vendor + 4, &r[3], 4);
    memcpy(c->vendor + 8, &r[2], 4);
    c->vendor[12] = 0;
    if (max_leaf < 1) return;
    cpuid(1, 0, r);
    unsigned fam = (r[0] >> 8) & 0xf, mod = (r[0] >> 4) & 0xf;
    if (fam == 0xf) fam += (r[0] >> 20) & 0xff;
    if (fam == 0x6 || fam >= 0xf) mod += ((r[0] >> 16) & 0xf) << 4;
    c->family = fam;
    c->model = mod;
    unsigned ecx1 = r[2];
    bool osxsave = ecx1 & (1u << 27);
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    bool ymm = (xcr0 & 0x6) == 0x6;            /* SSE + AVX state */
    bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;   /* opmask, ZMM_Hi256, Hi16_ZMM */
    bool tile = (xcr0 & 0x60000) == 0x60000;   /* XTILECFG, XTILEDATA */
    c->sse42 = ecx1 & (1u << 20);
    c->avx = ymm && (ecx1 & (1u << 28));
    c->fma = ymm && (ecx1 & (1u << 12));
    if (max_leaf < 7) return;
    cpuid(7, 0, r);
    unsigned ebx7 = r[1], edx7 = r[3], max_sub = r[0];
    c->avx2 = ymm && (ebx7 & (1u << 5));
    c->avx512f = zmm && (ebx7 & (1u << 16));
    c->avx512dq = zmm && (ebx7 & (1u << 17));
    c->avx512bw = zmm && (ebx7 & (1u << 30));
    c->avx512vl = zmm && (ebx7 & (1u << 31));
    c->avx512_vnni = zmm && (r[2] & (1u << 11));
    c->avx512_fp16 = zmm && (edx7 & (1u << 23));
    c->amx_bf16 = tile && (edx7 & (1u << 22));
    c->amx_tile = tile && (edx7 & (1u << 24));
    c->amx_int8 = tile && (edx7 & (1u << 25));
    if (max_sub >= 1) {
        cpuid(7, 1, r);
        c->avx_vnni = ymm && (r[0] & (1u << 4));
        c->avx512_bf16 = zmm && (r[0] & (1u << 5));
    }
}
#else
static void detect(void) { strcpy(g_cpu.vendor, "unknown"); }
#endif

const vg__cpu *vg__cpu_get(void) {
    pthread_once(&g_cpu_once, detect);
    return &g_cpu;
}

int vg__cpu_isa_level(const vg__cpu *c) {
    if (c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq && c->fma) return VG__ISA_AVX512;
    if (c->avx2 && c->fma) return VG__ISA_AVX2;
    return VG__ISA_BASE;
}

void vg__cpu_flags_str(const vg__cpu *c, char *buf, size_t len) {
    struct { bool on; const char *name; } f[] = {
        {c->sse42, "sse4.2"}, {c->avx, "avx"}, {c->avx2, "avx2"}, {c->fma, "fma"}, {c->avx512f, "avx512f"},
        {c->avx512bw, "avx512bw"}, {c->avx512vl, "avx512vl"}, {c->avx512dq, "avx512dq"},
        {c->avx512_bf16, "avx512_bf16"}, {c->avx512_vnni, "avx512_vnni"}, {c->avx_vnni, "avx_vnni"},
        {c->avx512_fp16, "avx512_fp16"}, {c->amx_tile, "amx_tile"}, {c->amx_bf16, "amx_bf16"},
        {c->amx_int8, "amx_int8"}};
    size_t used = 0;
    if (len) buf[0] = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0] && len; i++) {
        if (!f[i].on) continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", f[i].name);
        if (n < 0 || (size_t)n >= len - used) break;
        used += (size_t)n;
    }
}

int vg__blas_core_level(const char *core) {
    if (!core) return VG__ISA_BASE;
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    static const char *const avx2[] = {"Haswell", "Zen", "Excavator"};
    for (size_t i = 0; i < sizeof avx512 / sizeof avx512[0]; i++)
        if (!strcasecmp(core, avx512[i])) return VG__ISA_AVX512;
    for (size_t i = 0; i < sizeof avx2 / sizeof avx2[0]; i++)
        if (!strcasecmp(core, avx2[i])) return VG__ISA_AVX2;
    return VG__ISA_BASE;
}

const char *vg__blas_core_for(const vg__cpu *c) {
    int level = vg__cpu_isa_level(c);
    if (level == VG__ISA_AVX512) return c->avx512_bf16 ? "Cooperlake" : "SkylakeX";
    if (level == VG__ISA_AVX2) return "Haswell";
    return c->avx ? "Sandybridge" : NULL;
}

const char *vg__blas_corename(void) {
    const char *n = openblas_get_corename();
    return n ? n : "unknown";
}

bool vg__blas_below_cpu(const vg__cpu *c, const char *corename) {
    return vg__blas_core_level(corename) < vg__cpu_isa_level(c);
}
