/*
 * half.h - IEEE-754 binary16 <-> binary32 conversion (TF's DT_HALF / Eigen::half).
 * float -> half rounds to nearest, ties to even; overflow gives +-inf; NaN stays NaN
 * (quiet, sign and top payload bits kept, as F16C's vcvtps2ph does). half -> float is exact.
 * The bulk functions use F16C (vcvtph2ps / vcvtps2ph) when the CPU has it, the
 * portable code otherwise; both give the same bits.
 */
#ifndef VG_CORE_HALF_H
#define VG_CORE_HALF_H

#include "core/core.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Portable scalar conversions. */
VG_HIDDEN float vg__half_to_float(uint16_t h);
VG_HIDDEN uint16_t vg__float_to_half(float f);

/* n elements; dispatch to F16C where available (and allowed: vg__half_set_f16c). */
VG_HIDDEN void vg__half_to_float_n(const uint16_t *h, float *f, size_t n);
VG_HIDDEN void vg__float_to_half_n(const float *f, uint16_t *h, size_t n);

/* bfloat16 (TF's DT_BFLOAT16): the high half of a float32. to_float is exact; from float
 * rounds to nearest even (TF's round_to_bfloat16), every NaN becomes 0x7fc0. */
VG_HIDDEN float vg__bf16_to_float(uint16_t b);
VG_HIDDEN uint16_t vg__float_to_bf16(float f);
VG_HIDDEN void vg__bf16_to_float_n(const uint16_t *b, float *f, size_t n);
VG_HIDDEN void vg__float_to_bf16_n(const float *f, uint16_t *b, size_t n);

/* Whether the CPU has F16C (and the build can use it). */
VG_HIDDEN bool vg__half_has_f16c(void);
/* Force the bulk functions onto the portable path (false) or back to dispatch (true);
 * for tests. Returns the previous setting. */
VG_HIDDEN bool vg__half_set_f16c(bool allow);

#endif
