/*
 * simd.h - runtime ISA dispatch for plain-C loops: VG_SIMD_CLONES on a function makes
 * GCC compile it three times (x86-64-v4: AVX-512 F/BW/DQ/VL; x86-64-v3: AVX2+FMA; baseline x86-64) and pick the clone
 * from cpuid when the program loads (an ifunc), so the binary still runs on any
 * x86-64 and vectorizes with the widest registers the CPU has. No -march flags.
 * Elsewhere (clang, other architectures, sanitizer builds) it expands to nothing.
 */
#ifndef VG_SIMD_H
#define VG_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define VG_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VG_SIMD_CLONES
#endif

#endif
