/*
 * audio_internal.h - the WAV reader behind DecodeWav (src/kernels/media/audio_ops.c), for
 * the op and for fuzz/fuzz_wav.c.
 */
#ifndef VG_AUDIO_INTERNAL_H
#define VG_AUDIO_INTERNAL_H

#include "core/tensor_internal.h"

/* TF's wav::DecodeLin16WaveAsFloatVector: a RIFF/WAVE file of 16-bit PCM (JUNK, bext
 * and the other padding chunks TF skips may precede "fmt "; chunks other than "data"
 * after it are skipped; exactly one data chunk). *samples (vg__malloc'd, frames *
 * channels floats, interleaved, each int16 / 32768; NULL when there are none) is the
 * caller's to vg__free. INVALID_ARGUMENT with TF's messages ("Header mismatch:
 * Expected RIFF but found ...", "Can only read 16-bit WAV files, but received 8",
 * "Data too short when trying to read string", "No data chunk found in WAV", ...);
 * RESOURCE_EXHAUSTED. The samples are never more than the input's bytes / 2. */
VG_HIDDEN vg_code vg__wav_decode(const uint8_t *d, size_t n, float **samples, uint32_t *frames, uint16_t *channels,
                                 uint32_t *sample_rate, vg_status *st);
/* DecodeWav's output from decoded samples: out [out_frames, out_channels]; frames past
 * the decoded ones are 0, channels past the decoded ones repeat the last one. */
VG_HIDDEN void vg__wav_remap(const float *samples, uint32_t frames, uint16_t channels, int64_t out_frames,
                             int64_t out_channels, float *out);

#endif
