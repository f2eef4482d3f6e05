/* fuzz_wav.c - the WAV reader behind DecodeWav (src/kernels/media/audio_internal.h:
 * vg__wav_decode, TF's wav_io.cc rules). Byte 0 picks desired_channels (-1, 1, 2, 3)
 * and desired_samples (-1, 0, 1, 100) for the remap into DecodeWav's output; the rest
 * is the file. The reader checks every chunk against the input's length before
 * allocating, so the samples never exceed the input's bytes / 2. */
#include "fuzz_util.h"
#include "kernels/media/audio_internal.h"
#include "core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int k_ch[4] = {-1, 1, 2, 3}, k_smp[4] = {-1, 0, 1, 100};
    int want_ch = k_ch[data[0] & 3], want_s = k_smp[(data[0] >> 2) & 3];
    vg_status st;
    float *samples = NULL;
    uint32_t frames = 0, rate = 0;
    uint16_t channels = 0;
    if (vg__wav_decode(data + 1, size - 1, &samples, &frames, &channels, &rate, &st) == VG_OK) {
        if ((size_t)frames * channels > (size - 1) / 2) __builtin_trap(); /* more samples than bytes */
        int64_t out_s = want_s < 0 ? (int64_t)frames : want_s, out_c = want_ch < 0 ? (int64_t)channels : want_ch;
        float *out = malloc((size_t)(out_s * out_c > 0 ? out_s * out_c : 1) * sizeof(float));
        if (out) vg__wav_remap(samples, frames, channels, out_s, out_c, out);
        free(out);
    }
    vg__free(samples);
    return 0;
}
