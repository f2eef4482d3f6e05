/* bf16_round.h - bulk float32 -> bfloat16 rounding (bf16_round.c), as TF's
 * round_to_bfloat16: nearest even, subnormals kept, NaN -> 0x7fc0. */
#ifndef VG_BF16_ROUND_H
#define VG_BF16_ROUND_H

#include "core/core.h"
#include <stddef.h>
#include <stdint.h>

/* b[i] = bfloat16(f[i]) (f and b must not overlap). */
VG_HIDDEN void vg__f32_to_bf16_n(const float *f, uint16_t *b, size_t n);
/* dst[i] = float(bfloat16(src[i])); dst may be src (in place). */
VG_HIDDEN void vg__bf16_round_n(const float *src, float *dst, size_t n);

#endif
