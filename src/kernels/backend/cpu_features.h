/*
 * cpu_features.h - what the x86-64 CPU can do (cpuid + xgetbv: the ISA extensions the
 * OS has enabled) and whether OpenBLAS runs kernels below that (its generic fallback
 * on a CPU its build does not know, or a forced OPENBLAS_CORETYPE).
 */
#ifndef VG_CPU_FEATURES_H
#define VG_CPU_FEATURES_H

#include "core/core.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct vg__cpu {
    char vendor[13];
    unsigned family, model;
    /* Usable: the CPU has it and the OS saves its registers (XCR0). */
    bool sse42, avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512dq, avx512_bf16, avx512_vnni, avx_vnni,
        avx512_fp16, amx_tile, amx_bf16, amx_int8;
} vg__cpu;

/* ISA levels, as used for kernel dispatch. */
enum { VG__ISA_BASE = 0, VG__ISA_AVX2 = 1, VG__ISA_AVX512 = 2 };

/* The CPU's features, detected once (thread-safe). Static storage; never NULL. On
 * other architectures every flag is false. */
VG_HIDDEN const vg__cpu *vg__cpu_get(void);

/* VG__ISA_AVX512 (F+BW+VL+DQ, "avx512_core"), VG__ISA_AVX2 (AVX2+FMA) or VG__ISA_BASE. */
VG_HIDDEN int vg__cpu_isa_level(const vg__cpu *c);

/* The flags as a space-separated list ("avx2 fma avx512f ..."), into buf (NUL-terminated). */
VG_HIDDEN void vg__cpu_flags_str(const vg__cpu *c, char *buf, size_t len);

/* ISA level of an OpenBLAS core name (openblas_get_corename(), case-insensitive):
 * SkylakeX/Cooperlake/SapphireRapids -> AVX512, Haswell/Zen/Excavator -> AVX2, any
 * other (Prescott, Core2, Nehalem, Sandybridge, ...) -> BASE. NULL -> BASE. */
VG_HIDDEN int vg__blas_core_level(const char *corename);

/* The OPENBLAS_CORETYPE whose kernels match the CPU best: "Cooperlake" (AVX-512 with
 * BF16), "SkylakeX" (AVX-512 F/BW/VL/DQ), "Haswell" (AVX2+FMA), "Sandybridge" (AVX) or
 * NULL (nothing above the generic kernels). Static string. */
VG_HIDDEN const char *vg__blas_core_for(const vg__cpu *c);

/* The core name of the linked OpenBLAS (static string, never NULL). */
VG_HIDDEN const char *vg__blas_corename(void);

/* True when OpenBLAS runs kernels of a lower ISA level than the CPU supports (the
 * generic fallback, or an OPENBLAS_CORETYPE below the CPU). */
VG_HIDDEN bool vg__blas_below_cpu(const vg__cpu *c, const char *corename);

#endif
