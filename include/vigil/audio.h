/* vigil/audio.h - files, audio ops and the float32 part of tf.signal.
 *
 * Ops (src/kernels/media/audio_ops.c, TF 1.15's io_ops / audio_ops): ReadFile, WriteFile,
 * DecodeWav, EncodeWav, AudioSpectrogram, Mfcc. The FFT is kissfft's real transform
 * (Debian libkissfft-dev, float). tf.signal functions (src/train/signal.c, TF 1.15's
 * tensorflow/python/ops/signal/): frame, overlap_and_add, hann_window, hamming_window,
 * linear_to_mel_weight_matrix, stft, inverse_stft, inverse_stft_window_fn,
 * mfccs_from_log_mel_spectrograms (on the FFT ops of vigil/ops_ext.h, fft_ops.c).
 *
 * Builders follow the rest of the API: a failed input ({NULL, 0}) propagates, and
 * build-time errors are recorded on the graph (vg_graph_status) with {NULL, 0}
 * returned; run-time errors (bad WAV bytes, a missing file) fail vg_session_run with
 * INVALID_ARGUMENT / NOT_FOUND and TF's messages. name NULL: TF's default name.
 *
 *     vg_output wav = vg_io_read_file(g, vg_const_string(g, "a.wav", NULL), NULL);
 *     vg_output audio = vg_decode_wav(g, wav, 1, 16000, NULL);       // [16000, 1]
 *     vg_output rate = vg_out(audio.op, 1);                           // int32 scalar
 *     vg_output spec = vg_audio_spectrogram(g, audio, 480, 160, true, NULL);
 *     vg_output mfcc = vg_mfcc(g, spec, rate, NULL, NULL);            // [1, 98, 13]
 */
#ifndef VIGIL_AUDIO_H
#define VIGIL_AUDIO_H

#include "vigil/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- files (tf.io.read_file / tf.io.write_file) --------------------------------- */
/* ReadFile: the whole file named by the string scalar `filename`, as a string scalar.
 * Run time: NOT_FOUND / PERMISSION_DENIED from the file system; INVALID_ARGUMENT
 * "Input filename tensor must be scalar, but had shape: [2]". */
VG_API vg_output vg_io_read_file(vg_graph *g, vg_output filename, const char *name);
/* WriteFile: writes the string scalar `contents` to `filename` (atomically: a
 * temporary file renamed), creating the directory when missing; no outputs: run the
 * returned op as a target. NULL on a build error (recorded on the graph). */
VG_API vg_op *vg_io_write_file(vg_graph *g, vg_output filename, vg_output contents, const char *name);

/* ---- audio ops (tf.audio / contrib.framework.python.ops.audio_ops) -------------- */
/* DecodeWav: output 0 float32 [samples, channels] in [-1, 1) (16-bit PCM / 32768),
 * output 1 (vg_out(result.op, 1)) the int32 sample rate. desired_channels -1: the
 * file's; more than the file has: the last channel repeated; fewer: the first ones.
 * desired_samples -1: all; more: zero-padded; fewer: truncated. Only 16-bit PCM WAV
 * is read (TF: "Can only read 16-bit WAV files, but received 8"); other header errors
 * are INVALID_ARGUMENT with wav_io.cc's messages. Build time: desired_* < -1. */
VG_API vg_output vg_decode_wav(vg_graph *g, vg_output contents, int desired_channels, int desired_samples,
                               const char *name);
/* EncodeWav: float32 audio [samples, channels] (clipped to [-1, 1), rounded to 16-bit
 * PCM) and an int32 scalar sample_rate -> the WAV file as a string scalar. Run time
 * INVALID_ARGUMENT: sample_rate <= 0, 0 or more than 65535 channels, over 4 GiB. */
VG_API vg_output vg_encode_wav(vg_graph *g, vg_output audio, vg_output sample_rate, const char *name);
/* AudioSpectrogram: input float32 [samples, channels] -> [channels, frames, fft/2 + 1]
 * where fft is the next power of two >= window_size and frames = 1 + (samples -
 * window_size) / stride (0 when samples < window_size). Each frame is multiplied by a
 * periodic Hann window; values are |X|^2 when magnitude_squared, else |X|. Build time
 * INVALID_ARGUMENT: window_size <= 1, stride <= 0. No gradient (as TF). */
VG_API vg_output vg_audio_spectrogram(vg_graph *g, vg_output input, int window_size, int stride,
                                      bool magnitude_squared, const char *name);
/* Mfcc attributes; {0}: TF's 4000, 20, 40, 13. */
typedef struct vg_mfcc_options {
    float upper_frequency_limit;  /* Hz, highest frequency of the mel filterbank (0: 4000) */
    float lower_frequency_limit;  /* Hz, lowest (0: 20; 0 Hz: zero_lower_frequency_limit) */
    int filterbank_channel_count; /* mel channels (0: 40) */
    int dct_coefficient_count;    /* cepstral coefficients kept, <= the channels (0: 13) */
    bool zero_lower_frequency_limit; /* true: lower_frequency_limit 0 Hz */
} vg_mfcc_options;
/* Mfcc: spectrogram float32 [channels, frames, bins] (AudioSpectrogram with
 * magnitude_squared = true) and an int32 scalar sample_rate -> [channels, frames,
 * dct_coefficient_count]: HTK-style mel filterbank over sqrt(spectrogram) (DC bin
 * excluded), log (floor 1e-12), DCT-II scaled by sqrt(2 / channels). opts NULL:
 * defaults. Run time INVALID_ARGUMENT "Mfcc initialization failed for channel count
 * <bins> and sample rate <rate>" (bins < 2, rate <= 0, lower < 0, upper <= lower,
 * coefficients above channels). No gradient (as TF). */
VG_API vg_output vg_mfcc(vg_graph *g, vg_output spectrogram, vg_output sample_rate, const vg_mfcc_options *opts,
                         const char *name);

/* ---- tf.signal ------------------------------------------------------------------ */
/* tf.signal.frame(signal, frame_length, frame_step, pad_end, pad_value, axis): frames
 * of frame_length samples every frame_step samples along `axis` (negative counts from
 * the end): shape [..., frames, frame_length, ...]. frames = max(0, 1 + (len -
 * frame_length) // frame_step), or with pad_end ceil(len / frame_step), the end padded
 * with pad_value (converted to the signal's dtype). Any numeric dtype; the rank must
 * be known, the length may be unknown (then the indices are computed in the graph).
 * Built from GatherV2 (plus Pad, Range, Cast, Mul, Add for pad_end), so differentiable.
 * INVALID_ARGUMENT: unknown rank or rank 0, axis out of range, frame_length < 0,
 * frame_step <= 0. */
VG_API vg_output vg_signal_frame(vg_graph *g, vg_output signal, int64_t frame_length, int64_t frame_step, bool pad_end,
                                 double pad_value, int axis, const char *name);
/* tf.signal.overlap_and_add(signal [..., frames, frame_length], frame_step): the frames
 * summed at offsets of frame_step: [..., (frames - 1) * frame_step + frame_length].
 * TF 1.15's construction from Pad / Reshape / Transpose / Slice / Sum (a Reshape when
 * frame_step == frame_length), so differentiable; dimensions may be unknown (shapes
 * are then computed in the graph), the rank must be known. INVALID_ARGUMENT: rank < 2
 * or unknown, frame_step <= 0. */
VG_API vg_output vg_signal_overlap_and_add(vg_graph *g, vg_output signal, int64_t frame_step, const char *name);
/* hann_window / hamming_window(window_length, periodic, dtype): a [window_length] Const
 * of dtype VG_FLOAT or VG_DOUBLE, w[n] = a - b * cos(2 pi n / N) with N = window_length
 * - 1, plus 1 when periodic and window_length is even (TF's _raised_cosine_window,
 * evaluated in dtype); hann a = b = 0.5, hamming a = 0.54, b = 0.46; length 1 gives
 * [1], 0 gives []. INVALID_ARGUMENT: window_length < 0, another dtype. */
VG_API vg_output vg_signal_hann_window(vg_graph *g, int64_t window_length, bool periodic, vg_dtype dtype,
                                       const char *name);
VG_API vg_output vg_signal_hamming_window(vg_graph *g, int64_t window_length, bool periodic, vg_dtype dtype,
                                          const char *name);
/* tf.signal.linear_to_mel_weight_matrix (TF 1.15 mel_ops.py: HTK mel scale 1127 ln(1 +
 * f / 700), triangular bands between num_mel_bins + 2 edges, the DC bin's row zeroed),
 * evaluated in dtype (VG_FLOAT or VG_DOUBLE) as TF's ops would: a Const
 * [num_spectrogram_bins, num_mel_bins]. TF's defaults: 20, 129, 8000, 125.0, 3800.0,
 * VG_FLOAT. INVALID_ARGUMENT with TF's ValueError messages ("num_mel_bins must be
 * positive. Got: 0", "lower_edge_hertz 100.0 >= upper_edge_hertz 10.0",
 * "upper_edge_hertz must not be larger than the Nyquist frequency ..."); also
 * num_spectrogram_bins <= 0 and another dtype. */
VG_API vg_output vg_signal_linear_to_mel_weight_matrix(vg_graph *g, int64_t num_mel_bins, int64_t num_spectrogram_bins,
                                                       double sample_rate, double lower_edge_hertz,
                                                       double upper_edge_hertz, vg_dtype dtype, const char *name);

/* ---- tf.signal: stft, inverse_stft, mfccs (src/train/signal.c) ------------------ */
/* A window_fn (TF's callable window_fn(length, dtype=...)): a [length] window of dtype
 * (VG_FLOAT / VG_DOUBLE); ctx is what the caller passed alongside the function. */
typedef vg_output (*vg_signal_window_fn)(vg_graph *g, int64_t length, vg_dtype dtype, const void *ctx);
/* TF's default window_fn: hann_window(length, periodic=True, dtype); hamming likewise.
 * ctx unused (NULL). */
VG_API vg_output vg_signal_hann_window_fn(vg_graph *g, int64_t length, vg_dtype dtype, const void *ctx);
VG_API vg_output vg_signal_hamming_window_fn(vg_graph *g, int64_t length, vg_dtype dtype, const void *ctx);
/* tf.signal.inverse_stft_window_fn(frame_step, forward_window_fn): pass
 * vg_signal_inverse_stft_window_fn as window_fn with a vg_signal_inverse_window as ctx
 * (forward NULL: hann). The window is forward / denom, denom the squared forward window
 * summed over its frame_step phases, built from TF's ops (Square, Pad, Reshape, Sum,
 * Tile, Slice, RealDiv). */
typedef struct vg_signal_inverse_window {
    int64_t frame_step;
    vg_signal_window_fn forward;
    const void *forward_ctx;
} vg_signal_inverse_window;
VG_API vg_output vg_signal_inverse_stft_window_fn(vg_graph *g, int64_t length, vg_dtype dtype, const void *ctx);
/* tf.signal.stft(signals [..., samples] float32/float64, frame_length, frame_step,
 * fft_length, window_fn, pad_end): frame, times window_fn(frame_length) (window_fn NULL:
 * no window, TF's None), zero-padded to fft_length, RFFT: [..., frames, fft_length / 2 +
 * 1] complex64/complex128. fft_length <= 0: the smallest power of two >= frame_length
 * (TF's default). Differentiable. INVALID_ARGUMENT: another dtype, frame_length or
 * frame_step <= 0, the rank unknown (vg_signal_frame's errors).
 *
 *     vg_output spec = vg_signal_stft(g, x, 400, 160, 0, vg_signal_hann_window_fn, NULL, false, NULL);
 *     vg_signal_inverse_window iw = {160, NULL, NULL};
 *     vg_output back = vg_signal_inverse_stft(g, spec, 400, 160, 0, vg_signal_inverse_stft_window_fn, &iw, NULL);
 */
VG_API vg_output vg_signal_stft(vg_graph *g, vg_output signals, int64_t frame_length, int64_t frame_step,
                                int64_t fft_length, vg_signal_window_fn window_fn, const void *window_ctx,
                                bool pad_end, const char *name);
/* tf.signal.inverse_stft(stfts [..., frames, bins] complex, frame_length, frame_step,
 * fft_length, window_fn): IRFFT (bins padded to fft_length / 2 + 1), frames cropped or
 * zero-padded to frame_length, times window_fn(frame_length) of the real dtype, then
 * overlap_and_add: [..., (frames - 1) * frame_step + frame_length]. For a reconstruction
 * use vg_signal_inverse_stft_window_fn. INVALID_ARGUMENT: a real dtype, rank < 2 or
 * unknown, frame_length or frame_step <= 0. */
VG_API vg_output vg_signal_inverse_stft(vg_graph *g, vg_output stfts, int64_t frame_length, int64_t frame_step,
                                        int64_t fft_length, vg_signal_window_fn window_fn, const void *window_ctx,
                                        const char *name);
/* tf.signal.mfccs_from_log_mel_spectrograms: the unnormalized DCT-II of the last dim
 * (dct_ops.py: through an RFFT of twice its length) times rsqrt(2 * num_mel_bins).
 * INVALID_ARGUMENT "num_mel_bins must be positive. Got: 0"; the last dim must be known
 * at build time (TF also takes a dynamic one); float32/float64 only. */
VG_API vg_output vg_signal_mfccs_from_log_mel_spectrograms(vg_graph *g, vg_output log_mel_spectrograms,
                                                           const char *name);

#ifdef __cplusplus
}
#endif

#endif
