/* test_audio_ops.c - ReadFile / WriteFile, DecodeWav / EncodeWav, AudioSpectrogram and
 * Mfcc (src/kernels/media/audio_ops.c). Translated from TF's
 * core/kernels/decode_wav_op_test.cc, core/lib/wav/wav_io_test.cc,
 * core/kernels/spectrogram_test.cc and core/kernels/mfcc_test.cc (each test names
 * its TF test); spectrogram values are compared with a direct double-precision DFT
 * written here. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>

#define D(...) ((const int64_t[]){__VA_ARGS__})

static vg_output bytes_const(vg_graph *g, const void *p, size_t n, const char *name) {
    vg_tensor *t = vg_tensor_new_string_scalar((const char *)p, n, NULL);
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

static vg_output f32_const(vg_graph *g, const float *v, const int64_t *dims, int nd) {
    return vg_const_array(g, VG_FLOAT, dims, nd, v, NULL);
}

/* The WAV of TF's DecodeWavOpTest.DecodeWavTest: mono, 14099 Hz, 4 samples. */
static const uint8_t k_wav[] = {
    'R', 'I', 'F', 'F', 44, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0,
    1, 0,                /* PCM */
    1, 0,                /* channels */
    0x13, 0x37, 0, 0,    /* 14099 Hz */
    0x26, 0x6e, 0, 0,    /* 2 * 14099 bytes per second */
    2, 0, 16, 0,         /* block align, bits */
    'd', 'a', 't', 'a', 8, 0, 0, 0,
    0, 0, 0xff, 0x3f, 0xff, 0x7f, 0x00, 0x80, /* 0, 16383, 32767, -32768 */
};

static void check_decoded_k_wav(vg_tensor *audio, vg_tensor *rate) {
    CHECK_EQ_INT(vg_tensor_ndims(audio), 2);
    CHECK_EQ_INT(vg_tensor_dim(audio, 0), 4);
    CHECK_EQ_INT(vg_tensor_dim(audio, 1), 1);
    const float *a = vg_tensor_data(audio);
    CHECK_NEAR(a[0], 0.0, 1e-4);
    CHECK_NEAR(a[1], 0.5, 1e-4);
    CHECK_NEAR(a[2], 1.0, 1e-4);
    CHECK_NEAR(a[3], -1.0, 1e-4);
    CHECK(a[1] == 16383.0f / 32768.0f && a[3] == -1.0f); /* scaled by 1/32768 exactly */
    CHECK_EQ_INT(*(int32_t *)vg_tensor_data(rate), 14099);
}

/* Decodes the n bytes wav (a Const named const_name) with DecodeWav (named op_name, the
 * file's own channels and samples) and checks it is k_wav's audio. */
static void decode_wav_is_k_wav(const uint8_t *wav, size_t n, const char *const_name, const char *op_name) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_decode_wav(g, bytes_const(g, wav, n, const_name), -1, -1, op_name);
    vg_output f[2] = {a, vg_out(a.op, 1)};
    vg_tensor *out[2] = {0};
    vg_status st;
    CHECK_OK(kt_run(g, f, 2, out, &st), &st);
    if (out[0]) check_decoded_k_wav(out[0], out[1]);
    kt_teardown(g, NULL, (vg_tensor *[]){out[0], out[1]}, 2, NULL, 0);
}

/* TF: DecodeWavOpTest.DecodeWavTest */
static void test_decode_wav(void) {
    decode_wav_is_k_wav(k_wav, sizeof k_wav, "content_op", "decode_wav_op");
}

/* TF: DecodeWavOpTest.DecodeWavWithJunkChunkTest (a 28-byte JUNK chunk before "fmt ") */
static void test_decode_wav_junk_chunk(void) {
    uint8_t w[sizeof k_wav + 36];
    memcpy(w, k_wav, 12);
    memcpy(w + 12, "JUNK", 4);
    w[16] = 28, w[17] = w[18] = w[19] = 0;
    memset(w + 20, 0, 28);
    memcpy(w + 48, k_wav + 12, sizeof k_wav - 12);
    w[4] = 76;
    decode_wav_is_k_wav(w, sizeof w, NULL, NULL);
}

/* TF: DecodeWavOpTest.DecodeWav_ShapeFn */
static void test_decode_wav_shape_fn(void) {
    vg_graph *g = vg_graph_new();
    vg_output c = bytes_const(g, k_wav, sizeof k_wav, NULL);
    vg_shape s = vg_output_shape(vg_decode_wav(g, c, -1, -1, NULL));
    CHECK(s.ndims == 2 && s.dims[0] == -1 && s.dims[1] == -1);
    vg_output d = vg_decode_wav(g, c, -1, 42, NULL);
    s = vg_output_shape(d);
    CHECK(s.ndims == 2 && s.dims[0] == 42 && s.dims[1] == -1);
    CHECK_EQ_INT(vg_output_shape(vg_out(d.op, 1)).ndims, 0);
    s = vg_output_shape(vg_decode_wav(g, c, 2, -1, NULL));
    CHECK(s.ndims == 2 && s.dims[0] == -1 && s.dims[1] == 2);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_graph_free(g);

    g = vg_graph_new();
    CHECK(vg_decode_wav(g, bytes_const(g, k_wav, sizeof k_wav, NULL), -1, -2, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "samples must be non-negative, got -2");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_decode_wav(g, bytes_const(g, k_wav, sizeof k_wav, NULL), -2, -1, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "channels must be non-negative, got -2");
    vg_graph_free(g);
    /* "Shape must be rank 0 but is rank 1" in TF */
    g = vg_graph_new();
    vg_output v = vg_const_string(g, "x", NULL);
    vg_output two[2] = {v, v};
    CHECK(vg_decode_wav(g, vg_pack(g, two, 2, 0, NULL), -1, -1, NULL).op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* EncodeWav's bytes, or NULL with *code set. */
static vg_tensor *encode(const float *audio, int64_t frames, int64_t ch, int32_t rate, vg_code *code, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output e = vg_encode_wav(g, f32_const(g, audio, D(frames, ch), 2), vg_const_i32(g, rate, NULL), NULL);
    vg_tensor *out = NULL;
    *code = kt_run(g, &e, 1, &out, st);
    vg_graph_free(g);
    return out;
}

/* TF: WavIO.BasicMono, WavIO.BasicStereo (byte-exact files, saturation at +-1) */
static void test_encode_wav_bytes(void) {
    static const uint8_t mono[] = {'R', 'I', 'F', 'F', 44, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0,
                                   1, 0, 1, 0, 0x44, 0xac, 0, 0, 0x88, 0x58, 0x1, 0, 2, 0, 16, 0,
                                   'd', 'a', 't', 'a', 8, 0, 0, 0, 0, 0, 0xff, 0x7f, 0, 0, 0x00, 0x80};
    static const uint8_t stereo[] = {'R', 'I', 'F', 'F', 44, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0,
                                     1, 0, 2, 0, 0x44, 0xac, 0, 0, 0x10, 0xb1, 0x2, 0, 4, 0, 16, 0,
                                     'd', 'a', 't', 'a', 8, 0, 0, 0, 0, 0, 0xff, 0x7f, 0, 0, 0x00, 0x80};
    const float audio[] = {0.0f, 1.0f, 0.0f, -1.0f};
    vg_status st;
    vg_code c;
    vg_tensor *t = encode(audio, 4, 1, 44100, &c, &st);
    CHECK_OK(c, &st);
    size_t n = 0;
    if (t) {
        const char *b = vg_tensor_string(t, 0, &n);
        CHECK_EQ_INT(n, sizeof mono);
        CHECK(n == sizeof mono && memcmp(b, mono, n) == 0);
    }
    vg_tensor_free(t);
    t = encode(audio, 2, 2, 44100, &c, &st);
    CHECK_OK(c, &st);
    if (t) {
        const char *b = vg_tensor_string(t, 0, &n);
        CHECK(n == sizeof stereo && memcmp(b, stereo, n) == 0);
    }
    vg_tensor_free(t);
    /* TF: WavIO.BasicEven / BasicOdd: 44 header bytes + 2 per sample */
    const float six[] = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
    t = encode(six, 3, 2, 44100, &c, &st);
    if (t) {
        vg_tensor_string(t, 0, &n);
        CHECK_EQ_INT(n, 56);
    }
    vg_tensor_free(t);
    t = encode(six, 5, 1, 22050, &c, &st);
    if (t) {
        vg_tensor_string(t, 0, &n);
        CHECK_EQ_INT(n, 54);
    }
    vg_tensor_free(t);
    /* TF: WavIO.BadArguments (the ones an op can reach) */
    t = encode(six, 3, 2, 0, &c, &st);
    CHECK(!t && c == VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "sample_rate must be in (0, 2^32), got: 0");
    t = encode(six, 0, 0, 44100, &c, &st);
    CHECK(!t && c == VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "num_channels must be in (0, 2^16), got: 0");
}

/* TF: WavIO.EncodeThenDecode, through the ops, plus desired_channels / desired_samples
 * (decode_wav_op.cc: truncation, zero padding, the last channel repeated). */
static void test_encode_then_decode(void) {
    const float audio[] = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f}; /* 3 frames x 2 channels */
    vg_graph *g = vg_graph_new();
    vg_output wav = vg_encode_wav(g, f32_const(g, audio, D(3, 2), 2), vg_const_i32(g, 44100, NULL), NULL);
    vg_output all = vg_decode_wav(g, wav, -1, -1, NULL);
    vg_output mono = vg_decode_wav(g, wav, 1, 2, NULL);   /* first channel, 2 frames */
    vg_output three = vg_decode_wav(g, wav, 3, 5, NULL);  /* channel 1 repeated, padded */
    vg_output f[4] = {all, vg_out(all.op, 1), mono, three};
    vg_tensor *o[4] = {0};
    vg_status st;
    CHECK_OK(kt_run(g, f, 4, o, &st), &st);
    if (o[0]) {
        CHECK(vg_tensor_dim(o[0], 0) == 3 && vg_tensor_dim(o[0], 1) == 2);
        for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)vg_tensor_data(o[0]))[i], audio[i], 1e-4);
        /* round(x * 32768) / 32768 */
        CHECK(((float *)vg_tensor_data(o[0]))[1] == roundf(0.1f * 32768.0f) / 32768.0f);
        CHECK_EQ_INT(*(int32_t *)vg_tensor_data(o[1]), 44100);
        CHECK(vg_tensor_dim(o[2], 0) == 2 && vg_tensor_dim(o[2], 1) == 1);
        const float *m = vg_tensor_data(o[2]);
        CHECK_NEAR(m[0], 0.0, 1e-4);
        CHECK_NEAR(m[1], 0.2, 1e-4);
        CHECK(vg_tensor_dim(o[3], 0) == 5 && vg_tensor_dim(o[3], 1) == 3);
        const float *t = vg_tensor_data(o[3]);
        const float want[15] = {0, 0.1f, 0.1f, 0.2f, 0.3f, 0.3f, 0.4f, 0.5f, 0.5f, 0, 0, 0, 0, 0, 0};
        for (int i = 0; i < 15; i++) CHECK_NEAR(t[i], want[i], 1e-4);
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(o[i]);
    vg_graph_free(g);
}

static void expect_decode_error(const uint8_t *w, size_t n, const char *msg) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_decode_wav(g, bytes_const(g, w, n, NULL), -1, -1, NULL);
    vg_tensor *out = NULL;
    vg_status st;
    CHECK_STATUS(kt_run(g, &a, 1, &out, &st), &st, VG_INVALID_ARGUMENT, msg);
    CHECK(out == NULL);
    vg_graph_free(g);
}

/* wav_io.cc's header checks; TF: WavIO.ChunkSizeOverflow for the oversized chunk. */
static void test_decode_wav_errors(void) {
    uint8_t w[sizeof k_wav + 16];
    memcpy(w, k_wav, sizeof k_wav);
    w[0] = 'X';
    expect_decode_error(w, sizeof k_wav, "Header mismatch: Expected RIFF but found XIFF");
    memcpy(w, k_wav, sizeof k_wav);
    w[34] = 8; /* 8-bit */
    expect_decode_error(w, sizeof k_wav, "Can only read 16-bit WAV files, but received 8");
    memcpy(w, k_wav, sizeof k_wav);
    w[20] = 3; /* IEEE float */
    expect_decode_error(w, sizeof k_wav, "Bad audio format for WAV: Expected 1 (PCM), but got3");
    memcpy(w, k_wav, sizeof k_wav);
    w[32] = 4;
    expect_decode_error(w, sizeof k_wav, "Bad bytes per sample in WAV header: Expected 2 but got 4");
    memcpy(w, k_wav, sizeof k_wav);
    w[28] = 0;
    expect_decode_error(w, sizeof k_wav, "Bad bytes per second in WAV header");
    memcpy(w, k_wav, sizeof k_wav);
    memcpy(w + 12, "LIST", 4);
    expect_decode_error(w, sizeof k_wav, "Unexpected field LIST");
    expect_decode_error(k_wav, sizeof k_wav - 2, "Data too short when trying to read string");
    expect_decode_error(k_wav, 20, "Data too short when trying to read string");
    expect_decode_error(k_wav, 36, "No data chunk found in WAV");
    /* a second chunk claiming 0xf8ffffff bytes */
    memcpy(w, k_wav, sizeof k_wav);
    memcpy(w + sizeof k_wav, "fooo\xff\xff\xff\xf8", 8);
    memset(w + sizeof k_wav + 8, 0, 8);
    expect_decode_error(w, sizeof k_wav + 16, "too large");
    /* two data chunks */
    memcpy(w, k_wav, sizeof k_wav);
    memcpy(w + sizeof k_wav, "data\x00\x00\x00\x00", 8);
    expect_decode_error(w, sizeof k_wav + 8, "More than one data chunk found in WAV");
}

/* ReadFile / WriteFile (io_ops.cc): round trip with a NUL byte, the directory made,
 * a missing file NOT_FOUND. */
static void test_read_write_file(void) {
    char dir[256], path[512];
    tu_mkdtemp(dir, sizeof dir, "audio");
    CHECK(dir[0]);
    snprintf(path, sizeof path, "%s/sub/a.wav", dir);
    vg_graph *g = vg_graph_new();
    vg_output name = vg_const_string(g, path, NULL);
    vg_op *wr = vg_io_write_file(g, name, bytes_const(g, k_wav, sizeof k_wav, NULL), NULL);
    CHECK(wr != NULL);
    CHECK(strcmp(vg_op_type(wr), "WriteFile") == 0);
    vg_output rd = vg_io_read_file(g, name, NULL);
    vg_output dec = vg_decode_wav(g, rd, -1, -1, NULL);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &wr, 1, NULL, &st), &st);
    vg_output f[3] = {rd, dec, vg_out(dec.op, 1)};
    vg_tensor *o[3] = {0};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 3, NULL, 0, NULL, &st), &st);
    if (o[0]) {
        size_t n;
        const char *b = vg_tensor_string(o[0], 0, &n);
        CHECK(n == sizeof k_wav && memcmp(b, k_wav, n) == 0);
        check_decoded_k_wav(o[1], o[2]);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(o[i]);
    vg_session_free(s);
    vg_graph_free(g);

    g = vg_graph_new();
    snprintf(path, sizeof path, "%s/missing.wav", dir);
    rd = vg_io_read_file(g, vg_const_string(g, path, NULL), NULL);
    vg_tensor *out = NULL;
    CHECK_CODE(kt_run(g, &rd, 1, &out, &st), VG_NOT_FOUND);
    vg_graph_free(g);
    tu_rmrf(dir);
}

/* ---- AudioSpectrogram ---------------------------------------------------------------- */

static void sine(int64_t n, double rate, double freq, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = (float)sin(2 * M_PI * freq * (double)i / rate);
}

/* Frames of AudioSpectrogram over n samples (the op's output dim 1). */
static int64_t spectrogram_frames(int64_t n, int window, int stride) {
    float *x = calloc((size_t)(n ? n : 1), sizeof(float));
    sine(n, 44100, 1000, x);
    vg_graph *g = vg_graph_new();
    vg_output sp = vg_audio_spectrogram(g, f32_const(g, x, D(n, 1), 2), window, stride, false, NULL);
    vg_tensor *out = NULL;
    vg_status st;
    int64_t frames = -1;
    if (kt_run(g, &sp, 1, &out, &st) == VG_OK) {
        frames = vg_tensor_dim(out, 1);
        CHECK_EQ_INT(vg_output_shape(sp).dims[1], frames); /* build-time shape agrees */
    } else {
        fprintf(stderr, "spectrogram: %s\n", st.msg);
    }
    vg_tensor_free(out);
    vg_graph_free(g);
    free(x);
    return frames;
}

/* TF: SpectrogramTest.TooLittleDataYieldsNoFrames, StepSizeSmallerThanWindow,
 * StepSizeBiggerThanWindow, StepSizeBiggerThanWindow2, StepSizeEqualToWindowWorks
 * (sample counts of their SineWave(44100, 1000, duration) inputs). */
static void test_spectrogram_frame_counts(void) {
    CHECK_EQ_INT(spectrogram_frames(44, 400, 200), 0);
    CHECK_EQ_INT(spectrogram_frames(661, 400, 200), 2);
    CHECK_EQ_INT(spectrogram_frames(882, 200, 400), 2);
    CHECK_EQ_INT(spectrogram_frames(706, 200, 400), 2);
    CHECK_EQ_INT(spectrogram_frames(2205, 200, 200), 11);
}

/* Values against a direct DFT in double of the periodic-Hann-windowed frames, zero
 * padded to the next power of two (spectrogram.cc), for a power-of-two window (256)
 * and TF's non-power-of-two case (400 -> 512 bins). Two channels, squared and not. */
static void check_spectrogram_values(int window, int stride, int64_t n) {
    float *x = malloc((size_t)n * 2 * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        x[2 * i] = (float)sin(2 * M_PI * 1000.0 * (double)i / 44100.0);
        x[2 * i + 1] = (float)(0.5 * cos(2 * M_PI * 3000.0 * (double)i / 44100.0) + 0.1 * sin(0.37 * (double)i * i));
    }
    vg_graph *g = vg_graph_new();
    vg_output in = f32_const(g, x, D(n, 2), 2);
    vg_output f[2] = {vg_audio_spectrogram(g, in, window, stride, true, NULL),
                      vg_audio_spectrogram(g, in, window, stride, false, NULL)};
    vg_tensor *o[2] = {0};
    vg_status st;
    CHECK_OK(kt_run(g, f, 2, o, &st), &st);
    int fft = 1;
    while (fft < window) fft <<= 1;
    int64_t bins = fft / 2 + 1, frames = 1 + (n - window) / stride;
    if (o[0]) {
        CHECK(vg_tensor_dim(o[0], 0) == 2 && vg_tensor_dim(o[0], 1) == frames && vg_tensor_dim(o[0], 2) == bins);
        const float *sq = vg_tensor_data(o[0]), *mag = vg_tensor_data(o[1]);
        int bad = 0;
        double maxv = 0;
        for (int c = 0; c < 2; c++)
            for (int64_t fr = 0; fr < frames; fr++)
                for (int64_t k = 0; k < bins; k++) {
                    double re = 0, im = 0;
                    for (int j = 0; j < window; j++) {
                        double w = 0.5 - 0.5 * cos(2 * M_PI * j / window);
                        double v = x[(fr * stride + j) * 2 + c] * w;
                        re += v * cos(2 * M_PI * (double)k * j / fft);
                        im -= v * sin(2 * M_PI * (double)k * j / fft);
                    }
                    double want = re * re + im * im;
                    int64_t i = (c * frames + fr) * bins + k;
                    if (want > maxv) maxv = want;
                    if (fabs(sq[i] - want) > 2e-4 * (1 + want) || fabs(mag[i] - sqrt(want)) > 2e-4 * (1 + sqrt(want))) {
                        if (bad++ < 3)
                            fprintf(stderr, "spectrogram c=%d f=%lld k=%lld: %g / %g, want %g\n", c, (long long)fr,
                                    (long long)k, sq[i], mag[i], want);
                    }
                }
        CHECK_EQ_INT(bad, 0);
        CHECK(maxv > 100); /* the sine's peak is there: not comparing zeros */
    }
    kt_teardown(g, NULL, (vg_tensor *[]){o[0], o[1]}, 2, (void *[]){x}, 1);
}

/* TF: SpectrogramTest.ComputedSquaredMagnitudeDataAgreeWithMatlab and
 * ComputedNonPowerOfTwoComplexDataAgreeWithMatlab (their reference is a MATLAB
 * file; ours is the DFT above). */
static void test_spectrogram_values(void) {
    check_spectrogram_values(256, 128, 1000);
    check_spectrogram_values(400, 200, 1500);
}

static void test_spectrogram_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_output in = vg_placeholder(g, VG_FLOAT, D(-1, 1), 2, "x");
    CHECK(vg_audio_spectrogram(g, in, 1, 1, false, NULL).op == NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "window_size must be > 1, got 1");
    vg_graph_free(g);
    g = vg_graph_new();
    in = vg_placeholder(g, VG_FLOAT, D(-1, 1), 2, "x");
    CHECK(vg_audio_spectrogram(g, in, 4, 0, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "stride must be > 0, got 0");
    vg_graph_free(g);
}

/* ---- Mfcc ------------------------------------------------------------------------------ */

static vg_tensor *mfcc_run(const float *spec, int64_t bins, int32_t rate, const vg_mfcc_options *o, vg_code *code,
                           vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output m = vg_mfcc(g, f32_const(g, spec, D(1, 1, bins), 3), vg_const_i32(g, rate, NULL), o, NULL);
    vg_tensor *out = NULL;
    *code = kt_run(g, &m, 1, &out, st);
    vg_graph_free(g);
    return out;
}

/* TF: MfccTest.AgreesWithPythonGoldenValues */
static void test_mfcc_golden(void) {
    float in[513];
    for (int i = 0; i < 513; i++) in[i] = (float)(i + 1);
    vg_status st;
    vg_code c;
    vg_tensor *o = mfcc_run(in, 513, 22050, NULL, &c, &st);
    CHECK_OK(c, &st);
    static const double want[13] = {29.13970072, -6.41568601, -0.61903012, -0.96778652, -0.26819878,
                                    -0.40907028, -0.15614748, -0.23203119, -0.10481487, -0.1543029,
                                    -0.0769791,  -0.10806114, -0.06047613};
    if (o) {
        CHECK(vg_tensor_ndims(o) == 3 && vg_tensor_dim(o, 2) == 13);
        for (int i = 0; i < 13; i++) CHECK_NEAR(((float *)vg_tensor_data(o))[i], want[i], 1e-4);
    }
    vg_tensor_free(o);
}

/* TF: MfccTest.AvoidsNansWithZeroInput */
static void test_mfcc_zero_input(void) {
    float in[513] = {0};
    vg_status st;
    vg_code c;
    vg_tensor *o = mfcc_run(in, 513, 22050, NULL, &c, &st);
    CHECK_OK(c, &st);
    if (o) {
        CHECK_EQ_INT(vg_tensor_num_elements(o), 13);
        for (int i = 0; i < 13; i++) CHECK(!isnan(((float *)vg_tensor_data(o))[i]));
        /* log(1e-12) in every channel: only c0 is non-zero */
        CHECK_NEAR(((float *)vg_tensor_data(o))[0], log(1e-12) * 40 * sqrt(2.0 / 40), 1e-5);
        CHECK_NEAR(((float *)vg_tensor_data(o))[1], 0.0, 1e-4);
    }
    vg_tensor_free(o);
}

/* TF: MfccTest.SimpleInputSaneResult */
static void test_mfcc_simple_input(void) {
    float in[129] = {0};
    in[10] = 1.0f;
    vg_mfcc_options opt = {.upper_frequency_limit = 3800.0f, .lower_frequency_limit = 125.0f,
                           .filterbank_channel_count = 40, .dct_coefficient_count = 40};
    vg_status st;
    vg_code c;
    vg_tensor *o = mfcc_run(in, 129, 8000, &opt, &c, &st);
    CHECK_OK(c, &st);
    if (o) {
        const float *v = vg_tensor_data(o);
        int arg = 0;
        for (int i = 1; i < 40; i++)
            if (v[i] > v[arg]) arg = i;
        CHECK_EQ_INT(arg, 1);
    }
    vg_tensor_free(o);
    /* more coefficients than channels: MfccDct's initialization fails */
    opt.dct_coefficient_count = 41;
    o = mfcc_run(in, 129, 8000, &opt, &c, &st);
    CHECK(o == NULL && c == VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Mfcc initialization failed for channel count 129 and sample rate 8000");
}

/* AudioSpectrogram -> Mfcc over a WAV (the speech_commands pipeline): shapes. */
static void test_wav_to_mfcc_pipeline(void) {
    enum { N = 16000 };
    float *x = malloc(N * sizeof(float));
    sine(N, 16000, 400, x); /* 40-sample period: every 160-sample stride sees the same frame */
    vg_graph *g = vg_graph_new();
    vg_output wav = vg_encode_wav(g, f32_const(g, x, D(N, 1), 2), vg_const_i32(g, 16000, NULL), NULL);
    vg_output audio = vg_decode_wav(g, wav, 1, N, NULL);
    vg_output spec = vg_audio_spectrogram(g, audio, 480, 160, true, NULL);
    vg_output m = vg_mfcc(g, spec, vg_out(audio.op, 1), NULL, NULL);
    vg_shape s = vg_output_shape(m);
    CHECK(s.ndims == 3 && s.dims[0] == 1 && s.dims[1] == 98 && s.dims[2] == 13);
    vg_tensor *o = NULL;
    vg_status st;
    CHECK_OK(kt_run(g, &m, 1, &o, &st), &st);
    if (o) {
        CHECK(vg_tensor_dim(o, 0) == 1 && vg_tensor_dim(o, 1) == 98 && vg_tensor_dim(o, 2) == 13);
        const float *v = vg_tensor_data(o);
        for (int64_t i = 0; i < vg_tensor_num_elements(o); i++) CHECK(isfinite(v[i]));
        CHECK(fabsf(v[0] - v[13]) < 1e-2f); /* a steady tone: frames alike */
    }
    kt_teardown(g, NULL, (vg_tensor *[]){o}, 1, (void *[]){x}, 1);
}

/* tf.data over WAV files, the speech_commands input: ReadFile -> DecodeWav ->
 * AudioSpectrogram -> Mfcc in a map function, batched; each element equals the same
 * ops run directly on its file. */
static vg_code wav_features_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                               void *payload) {
    (void)nargs, (void)payload;
    vg_output audio = vg_decode_wav(fg, vg_io_read_file(fg, args[0], NULL), 1, 1000, NULL);
    vg_output spec = vg_audio_spectrogram(fg, audio, 256, 128, true, NULL);
    outs[0] = vg_mfcc(fg, spec, vg_out(audio.op, 1), NULL, NULL);
    *nouts = 1;
    return VG_OK;
}

static void test_dataset_of_wav_files(void) {
    char dir[256], paths[3][512];
    tu_mkdtemp(dir, sizeof dir, "audio_ds");
    CHECK(dir[0]);
    vg_graph *g = vg_graph_new();
    vg_op *writes[3];
    float *x = malloc(900 * sizeof(float));
    for (int f = 0; f < 3; f++) {
        snprintf(paths[f], sizeof paths[f], "%s/%d.wav", dir, f);
        sine(900, 8000, 300.0 * (f + 1), x); /* 900 samples: padded to 1000 by DecodeWav */
        vg_output wav = vg_encode_wav(g, f32_const(g, x, D(900, 1), 2), vg_const_i32(g, 8000, NULL), NULL);
        writes[f] = vg_io_write_file(g, vg_const_string(g, paths[f], NULL), wav, NULL);
    }
    free(x);
    vg_tensor *names = vg_tensor_new(VG_STRING, D(3), 1, NULL);
    for (int f = 0; f < 3; f++) vg_tensor_set_string(names, f, paths[f], strlen(paths[f]), NULL);
    vg_output files = vg_const(g, names, "files");
    vg_tensor_free(names);
    vg_output ds = vg_dataset_from_tensor_slices(g, &files, 1, NULL);
    ds = vg_dataset_map(g, ds, wav_features_fn, NULL, NULL);
    ds = vg_dataset_batch(g, ds, 3, false, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    /* the same features built directly for file 1 */
    vg_output direct[1];
    vg_output one = vg_const_string(g, paths[1], NULL);
    int n1;
    wav_features_fn(g, &one, 1, direct, &n1, NULL);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, writes, 3, NULL, &st), &st);
    vg_output f[2] = {vg_out(next, 0), direct[0]};
    vg_tensor *o[2] = {0};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 2, NULL, 0, NULL, &st), &st);
    if (o[0] && o[1]) {
        /* [batch 3, channels 1, frames 1 + (1000 - 256) / 128 = 6, 13 coefficients] */
        CHECK(vg_tensor_ndims(o[0]) == 4 && vg_tensor_dim(o[0], 0) == 3 && vg_tensor_dim(o[0], 1) == 1 &&
              vg_tensor_dim(o[0], 2) == 6 && vg_tensor_dim(o[0], 3) == 13);
        CHECK_EQ_INT(vg_tensor_num_elements(o[1]), 6 * 13);
        const float *b = vg_tensor_data(o[0]), *d = vg_tensor_data(o[1]);
        for (int i = 0; i < 6 * 13; i++) CHECK(b[6 * 13 + i] == d[i]);
        bool differ = false;
        for (int i = 0; i < 6 * 13; i++) differ |= b[i] != b[6 * 13 + i];
        CHECK(differ); /* other files, other features */
    }
    vg_tensor_free(o[0]);
    vg_tensor_free(o[1]);
    vg_session_free(s);
    vg_graph_free(g);
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_decode_wav);
    RUN_TEST(test_decode_wav_junk_chunk);
    RUN_TEST(test_decode_wav_shape_fn);
    RUN_TEST(test_encode_wav_bytes);
    RUN_TEST(test_encode_then_decode);
    RUN_TEST(test_decode_wav_errors);
    RUN_TEST(test_read_write_file);
    RUN_TEST(test_spectrogram_frame_counts);
    RUN_TEST(test_spectrogram_values);
    RUN_TEST(test_spectrogram_errors);
    RUN_TEST(test_mfcc_golden);
    RUN_TEST(test_mfcc_zero_input);
    RUN_TEST(test_mfcc_simple_input);
    RUN_TEST(test_wav_to_mfcc_pipeline);
    RUN_TEST(test_dataset_of_wav_files);
    TEST_MAIN_END();
}
