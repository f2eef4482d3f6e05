/*
 * audio_ops.c - files and audio (TF 1.15's io_ops.cc ReadFile/WriteFile and
 * audio_ops.cc): ReadFile, WriteFile, DecodeWav, EncodeWav, AudioSpectrogram, Mfcc.
 *
 * DecodeWav / EncodeWav follow tensorflow/core/lib/wav/wav_io.cc (16-bit PCM only,
 * samples scaled by 1/32768, TF's header checks and messages). AudioSpectrogram follows
 * kernels/spectrogram.cc: a periodic Hann window of window_size samples, zero-padded to
 * the next power of two, a real FFT (kissfft, float), frames every `stride` samples,
 * output [channels, frames, fft_length/2 + 1] of squared magnitudes (or magnitudes).
 * Mfcc follows kernels/mfcc.cc, mfcc_mel_filterbank.cc and mfcc_dct.cc (in double, as
 * TF). None of the audio ops has a gradient (as TF).
 */
#include "kernels/media/audio_internal.h"
#include "kernels/kernel.h"
#include "io/io.h"
#include "vigil/audio.h"

#include <kiss_fftr.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* WAV (wav_io.cc) */

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

/* IncrementOffset: advances *off by inc within n bytes. */
static vg_code wav_advance(uint64_t *off, uint64_t inc, size_t n, vg_status *st) {
    if (*off > n) return vg_status_set(st, VG_INVALID_ARGUMENT, "Initial offset is outside data range: %llu", (unsigned long long)*off);
    if (inc > n - *off) return vg_status_set(st, VG_INVALID_ARGUMENT, "Data too short when trying to read string");
    *off += inc;
    return VG_OK;
}

static vg_code wav_take(const uint8_t *d, size_t n, uint64_t *off, uint64_t len, const uint8_t **p, vg_status *st) {
    uint64_t o = *off;
    if (wav_advance(off, len, n, st)) return st->code;
    *p = d + o;
    return VG_OK;
}

static vg_code wav_expect(const uint8_t *d, size_t n, uint64_t *off, const char *text, vg_status *st) {
    const uint8_t *p = NULL;
    if (wav_take(d, n, off, 4, &p, st)) return st->code;
    if (memcmp(p, text, 4) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Header mismatch: Expected %s but found %.4s", text, (const char *)p);
    return VG_OK;
}

static bool wav_padding_chunk(const uint8_t *id) {
    static const char *const k[] = {"JUNK", "bext", "iXML", "qlty", "mext", "levl", "link", "axml"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (memcmp(id, k[i], 4) == 0) return true;
    return false;
}

vg_code vg__wav_decode(const uint8_t *d, size_t n, float **samples, uint32_t *frames, uint16_t *channels,
                       uint32_t *sample_rate, vg_status *st) {
    *samples = NULL;
    *frames = 0;
    uint64_t off = 0;
    const uint8_t *p = NULL;
    if (wav_expect(d, n, &off, "RIFF", st) || wav_take(d, n, &off, 4, &p, st) || wav_expect(d, n, &off, "WAVE", st) ||
        wav_take(d, n, &off, 4, &p, st))
        return st->code;
    while (memcmp(p, "fmt ", 4) != 0) {
        if (!wav_padding_chunk(p)) return vg_status_set(st, VG_INVALID_ARGUMENT, "Unexpected field %.4s", (const char *)p);
        if (wav_take(d, n, &off, 4, &p, st) || wav_advance(&off, rd32(p), n, st) || wav_take(d, n, &off, 4, &p, st))
            return st->code;
    }
    if (wav_take(d, n, &off, 4, &p, st)) return st->code;
    uint32_t fmt_size = rd32(p);
    if (fmt_size != 16 && fmt_size != 18)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Bad format chunk size for WAV: Expected 16 or 18, but got%u", fmt_size);
    if (wav_take(d, n, &off, 2, &p, st)) return st->code;
    if (rd16(p) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Bad audio format for WAV: Expected 1 (PCM), but got%u", rd16(p));
    if (wav_take(d, n, &off, 2, &p, st)) return st->code;
    *channels = rd16(p);
    if (*channels < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Bad number of channels for WAV: Expected at least 1, but got %u",
                             *channels);
    if (wav_take(d, n, &off, 4, &p, st)) return st->code;
    *sample_rate = rd32(p);
    if (wav_take(d, n, &off, 4, &p, st)) return st->code;
    uint32_t bytes_per_second = rd32(p);
    if (wav_take(d, n, &off, 2, &p, st)) return st->code;
    uint16_t bytes_per_sample = rd16(p);
    if (wav_take(d, n, &off, 2, &p, st)) return st->code;
    uint16_t bits = rd16(p);
    if (bits != 16)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Can only read 16-bit WAV files, but received %u", bits);
    uint32_t want_bps = ((uint32_t)bits * *channels + 7) / 8;
    if (bytes_per_sample != want_bps)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Bad bytes per sample in WAV header: Expected %u but got %u",
                             want_bps, bytes_per_sample);
    uint32_t want_bpsec = (uint32_t)bytes_per_sample * *sample_rate; /* uint32 arithmetic, as TF */
    if (bytes_per_second != want_bpsec)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Bad bytes per second in WAV header: Expected %u but got %u (sample_rate=%u, "
                             "bytes_per_sample=%u)",
                             want_bpsec, bytes_per_second, *sample_rate, bytes_per_sample);
    if (fmt_size == 18) off += 2;
    bool found = false;
    while (off < n) {
        const uint8_t *id = NULL;
        if (wav_take(d, n, &off, 4, &id, st) || wav_take(d, n, &off, 4, &p, st)) goto fail;
        uint32_t size = rd32(p);
        if (size > INT32_MAX) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "WAV data chunk '%.4s' is too large: %u bytes, but the limit is %d",
                          (const char *)id, size, INT32_MAX);
            goto fail;
        }
        if (memcmp(id, "data", 4) == 0) {
            if (found) {
                vg_status_set(st, VG_INVALID_ARGUMENT, "More than one data chunk found in WAV");
                goto fail;
            }
            found = true;
            *frames = size / bytes_per_sample;
            uint64_t count = (uint64_t)*frames * *channels;
            uint64_t probe = off;
            if (wav_advance(&probe, 2 * count, n, st)) goto fail;
            if (count) {
                *samples = vg__malloc(count * sizeof(float));
                if (!*samples) {
                    vg_status_set(st, VG_RESOURCE_EXHAUSTED, "DecodeWav: out of memory for %llu samples",
                                  (unsigned long long)count);
                    goto fail;
                }
                for (uint64_t i = 0; i < count; i++) (*samples)[i] = (float)(int16_t)rd16(d + off + 2 * i) * (1.0f / 32768.0f);
            }
            off += 2 * count;
        } else {
            off += size;
        }
    }
    if (!found) return vg_status_set(st, VG_INVALID_ARGUMENT, "No data chunk found in WAV");
    return VG_OK;
fail:
    vg__free(*samples);
    *samples = NULL;
    *frames = 0;
    return st->code;
}

void vg__wav_remap(const float *samples, uint32_t frames, uint16_t channels, int64_t out_frames, int64_t out_channels,
                   float *out) {
    for (int64_t s = 0; s < out_frames; s++)
        for (int64_t c = 0; c < out_channels; c++) {
            int64_t src = c < channels ? c : channels - 1;
            out[s * out_channels + c] = s < (int64_t)frames ? samples[s * channels + src] : 0.0f;
        }
}

static int16_t float_to_s16(float x) {
    if (isnan(x)) return 0;
    float r = roundf(x * 32768.0f);
    if (r < -32768.0f) r = -32768.0f;
    if (r > 32767.0f) r = 32767.0f;
    return (int16_t)r;
}

/* ------------------------------------------------------------------------ */
/* helpers */

static vg_code check_input(vg_op *op, int i, vg_dtype dt, int rank, const char *what, vg_status *st) {
    if (vg__op_input_dtype(op, i) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be %s, got %s", vg_op_type(op), what, vg_dtype_name(dt),
                             vg_dtype_name(vg__op_input_dtype(op, i)));
    vg_shape s = vg__op_input_shape(op, i);
    if (rank >= 0 && s.ndims >= 0 && s.ndims != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be rank %d, got rank %d", vg_op_type(op), what, rank,
                             s.ndims);
    return VG_OK;
}

/* "[2,3]" for messages. */
static const char *shape_str(const vg_tensor *t, char *buf, size_t len) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < vg_tensor_ndims(t) && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)vg_tensor_dim(t, i));
    if (o < len) snprintf(buf + o, len - o, "]");
    return buf;
}

/* INVALID_ARGUMENT with message msg (its one %s: t's shape) unless t has rank `rank`. */
static vg_code need_rank(vg_status *st, const vg_tensor *t, int rank, const char *msg) {
    char sb[64];
    if (vg_tensor_ndims(t) == rank) return VG_OK;
    return vg_status_set(st, VG_INVALID_ARGUMENT, msg, shape_str(t, sb, sizeof sb));
}

static vg_code string_output(vg__kctx *ctx, const void *p, size_t len) {
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out);
    if (c != VG_OK) return c;
    return vg_tensor_set_string(out, 0, len ? (const char *)p : "", len, vg__kctx_status(ctx));
}

/* ------------------------------------------------------------------------ */
/* ReadFile / WriteFile */

static vg_code shape_read_file(vg_op *op, vg_status *st) {
    if (check_input(op, 0, VG_STRING, 0, "filename", st)) return st->code;
    return vg__op_set_single_output(op, VG_STRING, vg_shape_make(NULL, 0));
}

static vg_code kernel_read_file(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *f = vg__kctx_input(ctx, 0);
    if (need_rank(st, f, 0, "Input filename tensor must be scalar, but had shape: %s")) return st->code;
    size_t n;
    const char *name = vg_tensor_string(f, 0, &n);
    if (memchr(name, 0, n)) return vg_status_set(st, VG_INVALID_ARGUMENT, "ReadFile: filename contains a NUL byte");
    uint8_t *data = NULL;
    size_t len = 0;
    vg_code c = vg__io_read_file(name, &data, &len, st);
    if (c != VG_OK) return c;
    c = string_output(ctx, data, len);
    vg__free(data);
    return c;
}

static vg_code shape_write_file(vg_op *op, vg_status *st) {
    if (check_input(op, 0, VG_STRING, 0, "filename", st) || check_input(op, 1, VG_STRING, 0, "contents", st))
        return st->code;
    return vg__op_set_no_outputs(op);
}

static vg_code kernel_write_file(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *f = vg__kctx_input(ctx, 0), *contents = vg__kctx_input(ctx, 1);
    if (need_rank(st, f, 0, "Input filename tensor must be scalar, but had shape: %s")) return st->code;
    if (need_rank(st, contents, 0, "Contents tensor must be scalar, but had shape: %s")) return st->code;
    size_t n, len;
    const char *name = vg_tensor_string(f, 0, &n);
    if (memchr(name, 0, n)) return vg_status_set(st, VG_INVALID_ARGUMENT, "WriteFile: filename contains a NUL byte");
    const char *data = vg_tensor_string(contents, 0, &len);
    /* TF creates the file's directory when it is missing. */
    const char *slash = strrchr(name, '/');
    if (slash && slash != name) {
        size_t dl = (size_t)(slash - name);
        char *dir = vg__malloc(dl + 1);
        if (!dir) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "WriteFile: out of memory");
        memcpy(dir, name, dl);
        dir[dl] = 0;
        vg_code c = vg__io_mkdirs(dir, st);
        vg__free(dir);
        if (c != VG_OK) return c;
    }
    return vg__io_write_file_atomic(name, data, len, st);
}

/* ------------------------------------------------------------------------ */
/* DecodeWav / EncodeWav */

static vg_code shape_decode_wav(vg_op *op, vg_status *st) {
    if (check_input(op, 0, VG_STRING, 0, "contents", st)) return st->code;
    int64_t ch = vg__attr_int_or(op, "desired_channels", -1), smp = vg__attr_int_or(op, "desired_samples", -1);
    /* TF's shape function: -1 is unknown, other negatives are errors */
    if (ch < -1) return vg_status_set(st, VG_INVALID_ARGUMENT, "channels must be non-negative, got %lld", (long long)ch);
    if (smp < -1) return vg_status_set(st, VG_INVALID_ARGUMENT, "samples must be non-negative, got %lld", (long long)smp);
    if (ch > INT32_MAX || smp > INT32_MAX) /* int32 attrs in TF */
        return vg_status_set(st, VG_INVALID_ARGUMENT, "DecodeWav: desired_channels / desired_samples must fit in int32");
    vg__op_set_default_attr_int(op, "desired_channels", -1);
    vg__op_set_default_attr_int(op, "desired_samples", -1);
    int64_t dims[2] = {smp, ch};
    return vg__op_set_two_outputs(op, VG_FLOAT, vg_shape_make(dims, 2), VG_INT32, vg_shape_make(NULL, 0));
}

static vg_code kernel_decode_wav(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    if (need_rank(st, in, 0, "contents must be scalar, got shape %s")) return st->code;
    size_t n;
    const uint8_t *d = (const uint8_t *)vg_tensor_string(in, 0, &n);
    if (n > INT32_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "WAV contents are too large for int: %zu", n);
    float *samples;
    uint32_t frames, rate;
    uint16_t channels;
    if (vg__wav_decode(d, n, &samples, &frames, &channels, &rate, st) != VG_OK) return st->code;
    int64_t want_ch = vg__attr_int_or(op, "desired_channels", -1), want_s = vg__attr_int_or(op, "desired_samples", -1);
    int64_t out_s = want_s == -1 ? (int64_t)frames : want_s, out_c = want_ch == -1 ? (int64_t)channels : want_ch;
    vg_code c = VG_OK;
    vg_tensor *out, *sr;
    int64_t dims[2] = {out_s, out_c};
    if ((c = vg__kctx_alloc_output(ctx, 0, VG_FLOAT, dims, 2, &out)) == VG_OK) {
        vg__wav_remap(samples, frames, channels, out_s, out_c, vg_tensor_data(out));
        if ((c = vg__kctx_alloc_output(ctx, 1, VG_INT32, NULL, 0, &sr)) == VG_OK) *(int32_t *)vg_tensor_data(sr) = (int32_t)rate;
    }
    vg__free(samples);
    return c;
}

static vg_code shape_encode_wav(vg_op *op, vg_status *st) {
    if (check_input(op, 0, VG_FLOAT, 2, "audio", st) || check_input(op, 1, VG_INT32, 0, "sample_rate", st)) return st->code;
    return vg__op_set_single_output(op, VG_STRING, vg_shape_make(NULL, 0));
}

static vg_code kernel_encode_wav(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *audio = vg__kctx_input(ctx, 0), *srt = vg__kctx_input(ctx, 1);
    if (need_rank(st, audio, 2, "audio must be 2-dimensional%s")) return st->code;
    if (need_rank(st, srt, 0, "Input sample_rate should be a scalar tensor, got %s instead.")) return st->code;
    if (vg_tensor_num_elements(audio) >= INT32_MAX)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Cannot encode audio with >= max int32 elements");
    int32_t rate = *(const int32_t *)vg_tensor_data(srt);
    uint64_t frames = (uint64_t)vg_tensor_dim(audio, 0), ch = (uint64_t)vg_tensor_dim(audio, 1);
    /* size_t(sample_rate) as TF: a negative rate reads as a huge one. */
    if (rate <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "sample_rate must be in (0, 2^32), got: %llu",
                             (unsigned long long)(size_t)(int64_t)rate);
    if (ch == 0 || ch > 65535)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "num_channels must be in (0, 2^16), got: %llu", (unsigned long long)ch);
    uint64_t nsamp = frames * ch, size = 44 + nsamp * 2;
    if (size > UINT32_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "Provided channels and frames cannot be encoded as a WAV.");
    uint8_t *b = vg__malloc(size);
    if (!b) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "EncodeWav: out of memory");
    memcpy(b, "RIFF", 4);
    wr32(b + 4, (uint32_t)(size - 8));
    memcpy(b + 8, "WAVEfmt ", 8);
    wr32(b + 16, 16);
    wr16(b + 20, 1);
    wr16(b + 22, (uint16_t)ch);
    wr32(b + 24, (uint32_t)rate);
    wr32(b + 28, (uint32_t)((uint64_t)rate * 2 * ch));
    wr16(b + 32, (uint16_t)(2 * ch));
    wr16(b + 34, 16);
    memcpy(b + 36, "data", 4);
    wr32(b + 40, (uint32_t)(nsamp * 2));
    const float *x = vg_tensor_data(audio);
    for (uint64_t i = 0; i < nsamp; i++) wr16(b + 44 + 2 * i, (uint16_t)float_to_s16(x[i]));
    vg_code c = string_output(ctx, b, size);
    vg__free(b);
    return c;
}

/* ------------------------------------------------------------------------ */
/* AudioSpectrogram (spectrogram.cc, spectrogram_op.cc) */

static int64_t next_pow2(int64_t x) {
    int64_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

static vg_code shape_spectrogram(vg_op *op, vg_status *st) {
    if (check_input(op, 0, VG_FLOAT, 2, "input", st)) return st->code;
    int64_t w = vg__attr_int_or(op, "window_size", 0), s = vg__attr_int_or(op, "stride", 0);
    if (s > INT32_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "stride must fit in int32, got %lld", (long long)s);
    if (w <= 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "window_size must be > 1, got %lld", (long long)w);
    if (s <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "stride must be > 0, got %lld", (long long)s);
    if (w > (1 << 24)) return vg_status_set(st, VG_INVALID_ARGUMENT, "AudioSpectrogram: window_size %lld is too large", (long long)w);
    vg__op_set_default_attr_bool(op, "magnitude_squared", false);
    vg_shape in = vg__op_input_shape(op, 0);
    int64_t frames = -1, ch = -1;
    if (in.ndims == 2) {
        ch = in.dims[1];
        if (in.dims[0] >= 0) frames = in.dims[0] < w ? 0 : 1 + (in.dims[0] - w) / s;
    }
    int64_t dims[3] = {ch, frames, next_pow2(w) / 2 + 1};
    return vg__op_set_single_output(op, VG_FLOAT, vg_shape_make(dims, 3));
}

static vg_code kernel_spectrogram(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    if (need_rank(st, in, 2, "input must be 2-dimensional%s")) return st->code;
    int64_t w = vg__attr_int_or(op, "window_size", 0), stride = vg__attr_int_or(op, "stride", 0);
    bool squared = vg__attr_bool_or(op, "magnitude_squared", false);
    int64_t n = vg_tensor_dim(in, 0), ch = vg_tensor_dim(in, 1);
    int64_t fft = next_pow2(w), bins = fft / 2 + 1;
    int64_t frames = n < w ? 0 : 1 + (n - w) / stride;
    int64_t dims[3] = {ch, frames, bins};
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_FLOAT, dims, 3, &out);
    if (c != VG_OK || frames == 0 || ch == 0) return c;
    kiss_fftr_cfg cfg = kiss_fftr_alloc((int)fft, 0, NULL, NULL);
    double *win = vg__malloc((size_t)w * sizeof(double));
    float *buf = vg__malloc((size_t)fft * sizeof(float));
    kiss_fft_cpx *spec = vg__malloc((size_t)bins * sizeof(kiss_fft_cpx));
    if (!cfg || !win || !buf || !spec) {
        c = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "AudioSpectrogram: out of memory");
        goto done;
    }
    const double pi = atan(1.0) * 4;
    for (int64_t i = 0; i < w; i++) win[i] = 0.5 - 0.5 * cos((2 * pi * (double)i) / (double)w);
    const float *x = vg_tensor_data(in);
    float *y = vg_tensor_data(out);
    for (int64_t c0 = 0; c0 < ch; c0++)
        for (int64_t f = 0; f < frames; f++) {
            const float *src = x + f * stride * ch + c0;
            for (int64_t j = 0; j < w; j++) buf[j] = (float)(src[j * ch] * win[j]);
            for (int64_t j = w; j < fft; j++) buf[j] = 0.0f;
            kiss_fftr(cfg, buf, spec);
            float *row = y + (c0 * frames + f) * bins;
            for (int64_t k = 0; k < bins; k++) {
                double re = spec[k].r, im = spec[k].i, m = re * re + im * im;
                row[k] = squared ? (float)m : sqrtf((float)m);
            }
        }
done:
    kiss_fftr_free(cfg);
    vg__free(win);
    vg__free(buf);
    vg__free(spec);
    return c;
}

/* ------------------------------------------------------------------------ */
/* Mfcc (mfcc.cc, mfcc_mel_filterbank.cc, mfcc_dct.cc) */

typedef struct mfcc_plan {
    int nchan, ncoef, input_length, start, end;
    int *band;       /* [input_length] */
    double *weights; /* [input_length] */
    double *cosines; /* [ncoef][nchan] */
} mfcc_plan;

static double freq_to_mel(double f) { return 1127.0 * log1p(f / 700.0); }

static void mfcc_plan_free(mfcc_plan *p) {
    vg__free(p->band);
    vg__free(p->weights);
    vg__free(p->cosines);
}

/* Mfcc::Initialize: false (plan empty) where TF's initialization fails. */
static bool mfcc_plan_init(mfcc_plan *p, int input_length, double rate, int nchan, double lower, double upper, int ncoef,
                           vg_status *st) {
    memset(p, 0, sizeof *p);
    if (nchan < 1 || rate <= 0 || input_length < 2 || lower < 0 || upper <= lower) return false;
    if (ncoef < 1 || ncoef > nchan) return false;
    p->nchan = nchan, p->ncoef = ncoef, p->input_length = input_length;
    double *centers = vg__malloc(((size_t)nchan + 1) * sizeof(double));
    p->band = vg__malloc((size_t)input_length * sizeof(int));
    p->weights = vg__malloc((size_t)input_length * sizeof(double));
    p->cosines = vg__malloc((size_t)ncoef * (size_t)nchan * sizeof(double));
    if (!centers || !p->band || !p->weights || !p->cosines) {
        vg__free(centers);
        mfcc_plan_free(p);
        memset(p, 0, sizeof *p);
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "Mfcc: out of memory");
        return false;
    }
    double mel_low = freq_to_mel(lower), mel_hi = freq_to_mel(upper);
    double spacing = (mel_hi - mel_low) / (double)(nchan + 1);
    for (int i = 0; i < nchan + 1; i++) centers[i] = mel_low + spacing * (i + 1);
    double hz_per_sbin = 0.5 * rate / (double)(input_length - 1);
    double b = 1.5 + lower / hz_per_sbin, e = upper / hz_per_sbin;
    p->start = b > INT32_MAX ? INT32_MAX : (int)b;
    p->end = e > INT32_MAX ? INT32_MAX : (int)e;
    int channel = 0;
    for (int i = 0; i < input_length; i++) {
        double melf = freq_to_mel(i * hz_per_sbin);
        if (i < p->start || i > p->end) {
            p->band[i] = -2;
        } else {
            while (channel < nchan && centers[channel] < melf) ++channel;
            p->band[i] = channel - 1;
        }
    }
    for (int i = 0; i < input_length; i++) {
        int ch = p->band[i];
        if (i < p->start || i > p->end)
            p->weights[i] = 0.0;
        else if (ch >= 0)
            p->weights[i] = (centers[ch + 1] - freq_to_mel(i * hz_per_sbin)) / (centers[ch + 1] - centers[ch]);
        else
            p->weights[i] = (centers[0] - freq_to_mel(i * hz_per_sbin)) / (centers[0] - mel_low);
    }
    vg__free(centers);
    double fnorm = sqrt(2.0 / nchan), arg = (atan(1.0) * 4) / nchan;
    for (int i = 0; i < ncoef; i++)
        for (int j = 0; j < nchan; j++) p->cosines[(size_t)i * nchan + j] = fnorm * cos(i * arg * (j + 0.5));
    return true;
}

/* Mfcc::Compute on one spectrogram frame of input_length bins; work: [nchan]. */
static void mfcc_compute(const mfcc_plan *p, const float *in, double *work, float *out) {
    int len = 0;
    if (p->input_length > p->end) { /* else TF logs "Input too short" and the DCT sees nothing */
        len = p->nchan;
        for (int c = 0; c < p->nchan; c++) work[c] = 0.0;
        for (int i = p->start; i <= p->end; i++) {
            double v = sqrt((double)in[i]), wt = v * p->weights[i];
            int ch = p->band[i];
            if (ch >= 0) work[ch] += wt;
            ch++;
            if (ch < p->nchan) work[ch] += v - wt;
        }
        for (int c = 0; c < p->nchan; c++) work[c] = log(work[c] < 1e-12 ? 1e-12 : work[c]);
    }
    for (int i = 0; i < p->ncoef; i++) {
        double s = 0.0;
        for (int j = 0; j < len; j++) s += p->cosines[(size_t)i * p->nchan + j] * work[j];
        out[i] = (float)s;
    }
}

static vg_code shape_mfcc(vg_op *op, vg_status *st) {
    if (check_input(op, 0, VG_FLOAT, 3, "spectrogram", st) || check_input(op, 1, VG_INT32, 0, "sample_rate", st))
        return st->code;
    vg__op_set_default_attr_int(op, "filterbank_channel_count", 40);
    vg__op_set_default_attr_int(op, "dct_coefficient_count", 13);
    int64_t ncoef = vg__attr_int_or(op, "dct_coefficient_count", 13);
    vg_shape in = vg__op_input_shape(op, 0);
    int64_t dims[3] = {in.ndims == 3 ? in.dims[0] : -1, in.ndims == 3 ? in.dims[1] : -1, ncoef};
    return vg__op_set_single_output(op, VG_FLOAT, vg_shape_make(dims, 3));
}

static vg_code kernel_mfcc(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *spec = vg__kctx_input(ctx, 0), *srt = vg__kctx_input(ctx, 1);
    if (need_rank(st, spec, 3, "spectrogram must be 3-dimensional%s")) return st->code;
    if (need_rank(st, srt, 0, "Input sample_rate should be a scalar tensor, got %s instead.")) return st->code;
    int32_t rate = *(const int32_t *)vg_tensor_data(srt);
    int64_t ach = vg_tensor_dim(spec, 0), frames = vg_tensor_dim(spec, 1), bins = vg_tensor_dim(spec, 2);
    int64_t nchan = vg__attr_int_or(op, "filterbank_channel_count", 40),
            ncoef = vg__attr_int_or(op, "dct_coefficient_count", 13);
    mfcc_plan p;
    st->code = VG_OK;
    if (bins > INT32_MAX || nchan > (1 << 20) || ncoef > (1 << 20) ||
        !mfcc_plan_init(&p, (int)bins, rate, (int)nchan, vg__attr_float_or(op, "lower_frequency_limit", 20.0f),
                        vg__attr_float_or(op, "upper_frequency_limit", 4000.0f), (int)ncoef, st)) {
        if (st->code != VG_OK) return st->code;
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Mfcc initialization failed for channel count %lld and sample rate %d",
                             (long long)bins, rate);
    }
    int64_t dims[3] = {ach, frames, ncoef};
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_FLOAT, dims, 3, &out);
    double *work = c == VG_OK ? vg__malloc((size_t)nchan * sizeof(double)) : NULL;
    if (c == VG_OK && !work) c = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "Mfcc: out of memory");
    if (c == VG_OK) {
        const float *x = vg_tensor_data(spec);
        float *y = vg_tensor_data(out);
        for (int64_t r = 0; r < ach * frames; r++) mfcc_compute(&p, x + r * bins, work, y + r * ncoef);
    }
    vg__free(work);
    mfcc_plan_free(&p);
    return c;
}

/* ------------------------------------------------------------------------ */
/* builders */

static vg_op_builder *bnew(vg_graph *g, const char *type, const vg_output *in, int n, const char *name) {
    if (!g) return NULL;
    for (int i = 0; i < n; i++)
        if (!in[i].op) return NULL; /* an earlier builder failed; its error is recorded */
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : type);
    for (int i = 0; b && i < n; i++) vg_op_builder_add_input(b, in[i]);
    return b;
}

vg_output vg_io_read_file(vg_graph *g, vg_output filename, const char *name) {
    vg_op_builder *b = bnew(g, "ReadFile", &filename, 1, name);
    return b ? vg_out(vg_op_builder_finish(b), 0) : vg_out(NULL, 0);
}

vg_op *vg_io_write_file(vg_graph *g, vg_output filename, vg_output contents, const char *name) {
    vg_output in[2] = {filename, contents};
    vg_op_builder *b = bnew(g, "WriteFile", in, 2, name);
    return b ? vg_op_builder_finish(b) : NULL;
}

vg_output vg_decode_wav(vg_graph *g, vg_output contents, int desired_channels, int desired_samples, const char *name) {
    vg_op_builder *b = bnew(g, "DecodeWav", &contents, 1, name);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_int(b, "desired_channels", desired_channels);
    vg_op_builder_set_attr_int(b, "desired_samples", desired_samples);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_encode_wav(vg_graph *g, vg_output audio, vg_output sample_rate, const char *name) {
    vg_output in[2] = {audio, sample_rate};
    vg_op_builder *b = bnew(g, "EncodeWav", in, 2, name);
    return b ? vg_out(vg_op_builder_finish(b), 0) : vg_out(NULL, 0);
}

vg_output vg_audio_spectrogram(vg_graph *g, vg_output input, int window_size, int stride, bool magnitude_squared,
                               const char *name) {
    vg_op_builder *b = bnew(g, "AudioSpectrogram", &input, 1, name);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_int(b, "window_size", window_size);
    vg_op_builder_set_attr_int(b, "stride", stride);
    vg_op_builder_set_attr_bool(b, "magnitude_squared", magnitude_squared);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_mfcc(vg_graph *g, vg_output spectrogram, vg_output sample_rate, const vg_mfcc_options *opts,
                  const char *name) {
    vg_mfcc_options o = {0};
    if (opts) o = *opts;
    /* TF's defaults for the zero fields */
    if (o.upper_frequency_limit == 0.0f) o.upper_frequency_limit = 4000.0f;
    if (o.zero_lower_frequency_limit) o.lower_frequency_limit = 0.0f;
    else if (o.lower_frequency_limit == 0.0f) o.lower_frequency_limit = 20.0f;
    if (o.filterbank_channel_count == 0) o.filterbank_channel_count = 40;
    if (o.dct_coefficient_count == 0) o.dct_coefficient_count = 13;
    vg_output in[2] = {spectrogram, sample_rate};
    vg_op_builder *b = bnew(g, "Mfcc", in, 2, name);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_float(b, "upper_frequency_limit", o.upper_frequency_limit);
    vg_op_builder_set_attr_float(b, "lower_frequency_limit", o.lower_frequency_limit);
    vg_op_builder_set_attr_int(b, "filterbank_channel_count", o.filterbank_channel_count);
    vg_op_builder_set_attr_int(b, "dct_coefficient_count", o.dct_coefficient_count);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_audio[] = {
    {"ReadFile", 1, 1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_read_file, kernel_read_file, NULL},
    {"WriteFile", 2, 2, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_write_file, kernel_write_file, NULL},
    {"DecodeWav", 1, 1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_decode_wav, kernel_decode_wav, NULL},
    {"EncodeWav", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_encode_wav, kernel_encode_wav, NULL},
    {"AudioSpectrogram", 1, 1, 0, 0, shape_spectrogram, kernel_spectrogram, NULL},
    {"Mfcc", 2, 2, 0, 0, shape_mfcc, kernel_mfcc, NULL},
    {0},
};
