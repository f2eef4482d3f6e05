/* input_data.c - port of tensorflow/examples/speech_commands/input_data.py:
 * which_set (SHA-1 of the file name with _nohash_ stripped), AudioProcessor
 * (prepare_data_index, prepare_background_data, prepare_processing_graph, set_size,
 * get_data). See README.md for the line-by-line map. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include "input_data.h"
#include <ctype.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- SHA-1 (FIPS 180-4), ported for hashlib.sha1: vigil links no crypto library ---- */
static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const unsigned char *p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)
            f = (b & c) | (~b & d), k = 0x5A827999u;
        else if (i < 40)
            f = b ^ c ^ d, k = 0x6ED9EBA1u;
        else if (i < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDCu;
        else
            f = b ^ c ^ d, k = 0xCA62C1D6u;
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d, d = c, c = rol(b, 30), b = a, a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void sha1(const void *data, size_t len, unsigned char digest[20]) {
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    const unsigned char *p = data;
    size_t n = len;
    for (; n >= 64; n -= 64, p += 64) sha1_block(h, p);
    unsigned char last[128] = {0};
    memcpy(last, p, n);
    last[n] = 0x80;
    size_t total = n + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) last[total - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha1_block(h, last);
    if (total == 128) sha1_block(h, last + 64);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) digest[4 * i + j] = (unsigned char)(h[i] >> (24 - 8 * j));
}

int which_set(const char *filename, double validation_percentage, double testing_percentage) {
    const char *slash = strrchr(filename, '/');
    const char *base_name = slash ? slash + 1 : filename;
    /* re.sub(r'_nohash_.*$', '', base_name) */
    size_t n = strlen(base_name);
    const char *nohash = strstr(base_name, "_nohash_");
    if (nohash) n = (size_t)(nohash - base_name);
    unsigned char d[20];
    sha1(base_name, n, d);
    /* int(hexdigest, 16) % (MAX_NUM_WAVS_PER_CLASS + 1): the low 27 bits */
    uint32_t low = ((uint32_t)d[16] << 24 | (uint32_t)d[17] << 16 | (uint32_t)d[18] << 8 | d[19]) &
                   (uint32_t)MAX_NUM_WAVS_PER_CLASS;
    double percentage_hash = (double)low * (100.0 / MAX_NUM_WAVS_PER_CLASS);
    if (percentage_hash < validation_percentage) return SET_VALIDATION;
    if (percentage_hash < testing_percentage + validation_percentage) return SET_TESTING;
    return SET_TRAINING;
}

/* ---- the PRNG (splitmix64) ---- */
static uint64_t rng_next(sc_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
double rng_uniform(sc_rng *r, double lo, double hi) { return lo + (hi - lo) * (double)(rng_next(r) >> 11) * 0x1p-53; }
int64_t rng_randint(sc_rng *r, int64_t lo, int64_t hi) {
    return hi <= lo ? lo : lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo));
}
/* random.shuffle */
static void shuffle(sc_rng *r, sc_sample *v, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_randint(r, 0, i + 1);
        sc_sample t = v[i];
        v[i] = v[j], v[j] = t;
    }
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int list_append(sc_list *l, const char *label, const char *file) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        sc_sample *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return 1;
        l->v = v, l->cap = cap;
    }
    l->v[l->n].label = dupstr(label);
    l->v[l->n].file = dupstr(file);
    l->n++;
    return 0;
}

static void list_free(sc_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i].label), free(l->v[i].file);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int word_lookup(char **words, int n, const char *w) {
    for (int i = 0; i < n; i++)
        if (!strcmp(words[i], w)) return i;
    return -1;
}

/* prepare_data_index */
static int prepare_data_index(audio_processor *ap, double silence_percentage, double unknown_percentage,
                              char **wanted_words, int nwanted, double validation_percentage,
                              double testing_percentage) {
    /* Make sure the shuffling and picking of unknowns is deterministic. */
    sc_rng random = {RANDOM_SEED};
    sc_list unknown_index[3] = {{0}};
    char search_path[4096];
    snprintf(search_path, sizeof search_path, "%s/*/*.wav", ap->data_dir);
    glob_t gl;
    int rc = 1;
    if (glob(search_path, 0, NULL, &gl) != 0) gl.gl_pathc = 0, gl.gl_pathv = NULL;
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        const char *wav_path = gl.gl_pathv[i];
        /* _, word = os.path.split(os.path.dirname(wav_path)); word = word.lower() */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", wav_path);
        char *s = strrchr(dir, '/');
        if (s) *s = 0;
        s = strrchr(dir, '/');
        char *word = s ? s + 1 : dir;
        for (char *c = word; *c; c++) *c = (char)tolower((unsigned char)*c);
        if (!strcmp(word, BACKGROUND_NOISE_DIR_NAME)) continue;
        if (word_lookup(ap->all_words, ap->nall, word) < 0) {
            char **aw = realloc(ap->all_words, (size_t)(ap->nall + 1) * sizeof *aw);
            int *wi = realloc(ap->word_index, (size_t)(ap->nall + 1) * sizeof *wi);
            if (aw) ap->all_words = aw;
            if (wi) ap->word_index = wi;
            if (!aw || !wi) goto out;
            ap->all_words[ap->nall] = dupstr(word);
            int k = word_lookup(wanted_words, nwanted, word);
            ap->word_index[ap->nall++] = k >= 0 ? k + 2 : UNKNOWN_WORD_INDEX;
        }
        int set_index = which_set(wav_path, validation_percentage, testing_percentage);
        if (word_lookup(wanted_words, nwanted, word) >= 0) {
            if (list_append(&ap->data_index[set_index], word, wav_path)) goto out;
        } else if (list_append(&unknown_index[set_index], word, wav_path)) {
            goto out;
        }
    }
    if (ap->nall == 0) {
        fprintf(stderr, "No .wavs found at %s\n", search_path);
        goto out;
    }
    for (int i = 0; i < nwanted; i++) {
        if (word_lookup(ap->all_words, ap->nall, wanted_words[i]) < 0) {
            fprintf(stderr, "Expected to find %s in labels but only found", wanted_words[i]);
            for (int j = 0; j < ap->nall; j++) fprintf(stderr, "%s %s", j ? "," : "", ap->all_words[j]);
            fprintf(stderr, "\n");
            goto out;
        }
    }
    if (ap->data_index[SET_TRAINING].n == 0) {
        fprintf(stderr, "No training wavs of the wanted words (IndexError in the Python)\n");
        goto out;
    }
    /* We need an arbitrary file to load as the input for the silence samples. */
    char *silence_wav_path = dupstr(ap->data_index[SET_TRAINING].v[0].file);
    static const int order[3] = {SET_VALIDATION, SET_TESTING, SET_TRAINING};
    for (int o = 0; o < 3; o++) {
        int set_index = order[o];
        int set_size = ap->data_index[set_index].n;
        int silence_size = (int)ceil(set_size * silence_percentage / 100);
        for (int i = 0; i < silence_size; i++) list_append(&ap->data_index[set_index], SILENCE_LABEL, silence_wav_path);
        /* Pick some unknowns to add to each partition of the data set. */
        shuffle(&random, unknown_index[set_index].v, unknown_index[set_index].n);
        int unknown_size = (int)ceil(set_size * unknown_percentage / 100);
        for (int i = 0; i < unknown_size && i < unknown_index[set_index].n; i++)
            list_append(&ap->data_index[set_index], unknown_index[set_index].v[i].label,
                        unknown_index[set_index].v[i].file);
    }
    free(silence_wav_path);
    /* Make sure the ordering is random. */
    for (int o = 0; o < 3; o++) shuffle(&random, ap->data_index[order[o]].v, ap->data_index[order[o]].n);
    /* Prepare the rest of the result data structure. */
    ap->nwords = nwanted + 2;
    ap->words_list = calloc((size_t)ap->nwords, sizeof *ap->words_list);
    if (!ap->words_list) goto out;
    ap->words_list[0] = dupstr(SILENCE_LABEL);
    ap->words_list[1] = dupstr(UNKNOWN_WORD_LABEL);
    for (int i = 0; i < nwanted; i++) ap->words_list[i + 2] = dupstr(wanted_words[i]);
    rc = 0;
out:
    for (int i = 0; i < 3; i++) list_free(&unknown_index[i]);
    if (gl.gl_pathv) globfree(&gl);
    return rc;
}

/* word_to_index[label] */
static int word_to_index(const audio_processor *ap, const char *label) {
    if (!strcmp(label, SILENCE_LABEL)) return SILENCE_INDEX;
    int k = word_lookup(ap->all_words, ap->nall, label);
    return k >= 0 ? ap->word_index[k] : UNKNOWN_WORD_INDEX;
}

/* prepare_background_data: a graph and session of its own, as the Python */
static int prepare_background_data(audio_processor *ap) {
    char background_dir[4096];
    snprintf(background_dir, sizeof background_dir, "%s/%s", ap->data_dir, BACKGROUND_NOISE_DIR_NAME);
    struct stat sb;
    if (stat(background_dir, &sb) != 0) return 0;
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output wav_filename_placeholder = vg_placeholder(g, VG_STRING, NULL, 0, NULL);
    vg_output wav_loader = vg_io_read_file(g, wav_filename_placeholder, NULL);
    vg_output wav_decoder = vg_decode_wav(g, wav_loader, 1, -1, NULL);
    vg_session *sess = vg_graph_status(g, &st) == VG_OK ? vg_session_new(g, NULL, &st) : NULL;
    char search_path[4200];
    snprintf(search_path, sizeof search_path, "%s/*.wav", background_dir);
    glob_t gl;
    int rc = 1;
    if (glob(search_path, 0, NULL, &gl) != 0) gl.gl_pathc = 0, gl.gl_pathv = NULL;
    if (!sess) {
        fprintf(stderr, "background graph: %s\n", st.msg);
        goto out;
    }
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        vg_tensor *name = vg_tensor_new_string_scalar(gl.gl_pathv[i], strlen(gl.gl_pathv[i]), &st);
        vg_tensor *audio = NULL;
        vg_code c = name ? vg_session_run(sess, NULL, &wav_filename_placeholder, &name, 1, &wav_decoder, &audio, 1,
                                          NULL, 0, NULL, &st)
                         : st.code;
        vg_tensor_free(name);
        if (c != VG_OK) {
            fprintf(stderr, "%s: %s\n", gl.gl_pathv[i], st.msg);
            goto out;
        }
        int64_t n = vg_tensor_num_elements(audio);
        float *copy = malloc((size_t)(n ? n : 1) * sizeof(float));
        float **bd = realloc(ap->background_data, (size_t)(ap->nbackground + 1) * sizeof *bd);
        int64_t *bl = realloc(ap->background_len, (size_t)(ap->nbackground + 1) * sizeof *bl);
        if (bd) ap->background_data = bd;
        if (bl) ap->background_len = bl;
        if (!copy || !bd || !bl) {
            free(copy);
            vg_tensor_free(audio);
            goto out;
        }
        memcpy(copy, vg_tensor_data(audio), (size_t)n * sizeof(float)); /* .audio.flatten() */
        vg_tensor_free(audio);
        ap->background_data[ap->nbackground] = copy;
        ap->background_len[ap->nbackground++] = n;
    }
    if (ap->nbackground == 0) {
        fprintf(stderr, "No background wav files were found in %s\n", search_path);
        goto out;
    }
    rc = 0;
out:
    if (gl.gl_pathv) globfree(&gl);
    vg_session_free(sess);
    vg_graph_free(g);
    return rc;
}

/* prepare_processing_graph */
static int prepare_processing_graph(audio_processor *ap, vg_graph *g, const model_settings *ms,
                                    const char *summaries_dir) {
    vg_graph_push_scope(g, "data");
    int64_t desired_samples = ms->desired_samples;
    ap->wav_filename_placeholder_ = vg_placeholder(g, VG_STRING, NULL, 0, "wav_filename");
    vg_output wav_loader = vg_io_read_file(g, ap->wav_filename_placeholder_, NULL);
    vg_output wav_decoder = vg_decode_wav(g, wav_loader, 1, (int)desired_samples, NULL);
    /* Allow the audio sample's volume to be adjusted. */
    ap->foreground_volume_placeholder_ = vg_placeholder(g, VG_FLOAT, NULL, 0, "foreground_volume");
    vg_output scaled_foreground = vg_mul(g, wav_decoder, ap->foreground_volume_placeholder_, NULL);
    /* Shift the sample's start position, and pad any gaps with zeros. */
    int64_t d22[2] = {2, 2}, d2[1] = {2};
    ap->time_shift_padding_placeholder_ = vg_placeholder(g, VG_INT32, d22, 2, "time_shift_padding");
    ap->time_shift_offset_placeholder_ = vg_placeholder(g, VG_INT32, d2, 1, "time_shift_offset");
    vg_output padded_foreground = vg_pad(g, scaled_foreground, ap->time_shift_padding_placeholder_, NULL);
    int32_t size[2] = {(int32_t)desired_samples, -1};
    vg_output sliced_foreground =
        vg_slice(g, padded_foreground, ap->time_shift_offset_placeholder_, vg_const_i32_vec(g, size, 2, NULL), NULL);
    /* Mix in background noise. */
    int64_t bd[2] = {desired_samples, 1};
    ap->background_data_placeholder_ = vg_placeholder(g, VG_FLOAT, bd, 2, "background_data");
    ap->background_volume_placeholder_ = vg_placeholder(g, VG_FLOAT, NULL, 0, "background_volume");
    vg_output background_mul = vg_mul(g, ap->background_data_placeholder_, ap->background_volume_placeholder_, NULL);
    vg_output background_add = vg_add(g, background_mul, sliced_foreground, NULL);
    vg_output background_clamp =
        vg_clip_by_value(g, background_add, vg_const_f32(g, -1.0f, NULL), vg_const_f32(g, 1.0f, NULL), NULL);
    /* Run the spectrogram and MFCC ops to get a 2D 'fingerprint' of the audio. */
    vg_output spectrogram = vg_audio_spectrogram(g, background_clamp, (int)ms->window_size_samples,
                                                 (int)ms->window_stride_samples, true, NULL);
    vg_output summaries[2];
    int nsum = 0;
    summaries[nsum++] = vg_summary_image(g, "spectrogram", vg_expand_dims(g, spectrogram, -1, NULL), 1);
    if (!strcmp(ms->preprocess, "average")) {
        /* tf.nn.pool(window_shape=[1, w], strides=[1, w], pooling_type='AVG', padding='SAME') */
        int64_t k[4] = {1, 1, ms->average_window_width, 1};
        ap->output_ = vg_avg_pool(g, vg_expand_dims(g, spectrogram, -1, NULL), k, k, "SAME", NULL);
        summaries[nsum++] = vg_summary_image(g, "shrunk_spectrogram", ap->output_, 1);
    } else {
        vg_mfcc_options mo = {.dct_coefficient_count = (int)ms->fingerprint_width};
        ap->output_ = vg_mfcc(g, spectrogram, vg_out(wav_decoder.op, 1), &mo, NULL);
        summaries[nsum++] = vg_summary_image(g, "mfcc", vg_expand_dims(g, ap->output_, -1, NULL), 1);
    }
    /* merge_all(scope='data'): the summaries made above */
    if (summaries_dir && summaries_dir[0]) ap->merged_summaries_ = vg_summary_merge(g, summaries, nsum, NULL);
    vg_graph_pop_scope(g);
    vg_status st;
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "prepare_processing_graph: %s\n", st.msg);
        return 1;
    }
    return 0;
}

audio_processor *audio_processor_new(vg_graph *g, const char *data_url, const char *data_dir, double silence_percentage,
                                     double unknown_percentage, char **wanted_words, int nwanted,
                                     double validation_percentage, double testing_percentage, const model_settings *ms,
                                     const char *summaries_dir) {
    audio_processor *ap = calloc(1, sizeof *ap);
    if (!ap) return NULL;
    ap->np_random.s = (uint64_t)time(NULL); /* np.random is not seeded in the Python */
    if (data_dir && data_dir[0]) {
        ap->data_dir = dupstr(data_dir);
        /* maybe_download_and_extract_dataset: no network here */
        if (data_url && data_url[0]) {
            fprintf(stderr, "--data_url: downloading is not supported; pass --data_url= and a --data_dir\n");
            goto fail;
        }
        if (prepare_data_index(ap, silence_percentage, unknown_percentage, wanted_words, nwanted, validation_percentage,
                               testing_percentage) ||
            prepare_background_data(ap))
            goto fail;
    }
    if (prepare_processing_graph(ap, g, ms, summaries_dir)) goto fail;
    return ap;
fail:
    audio_processor_free(ap);
    return NULL;
}

vg_code audio_processor_open_writer(audio_processor *ap, vg_graph *g, const char *summaries_dir, vg_status *st) {
    if (!summaries_dir || !summaries_dir[0]) return VG_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/data", summaries_dir);
    ap->summary_writer_ = vg_file_writer_new(path, NULL, st);
    if (!ap->summary_writer_) return st->code;
    return vg_file_writer_add_graph(ap->summary_writer_, g, 0, st);
}

void audio_processor_free(audio_processor *ap) {
    if (!ap) return;
    for (int i = 0; i < 3; i++) list_free(&ap->data_index[i]);
    for (int i = 0; i < ap->nwords; i++) free(ap->words_list[i]);
    free(ap->words_list);
    for (int i = 0; i < ap->nall; i++) free(ap->all_words[i]);
    free(ap->all_words);
    free(ap->word_index);
    for (int i = 0; i < ap->nbackground; i++) free(ap->background_data[i]);
    free(ap->background_data);
    free(ap->background_len);
    if (ap->summary_writer_) vg_file_writer_close(ap->summary_writer_, NULL);
    vg_file_writer_free(ap->summary_writer_);
    free(ap->data_dir);
    free(ap);
}

int audio_processor_set_size(const audio_processor *ap, int mode) { return ap->data_index[mode].n; }

static vg_tensor *scalar_f32(float v, vg_status *st) {
    vg_tensor *t = vg_tensor_new(VG_FLOAT, NULL, 0, st);
    if (t) *(float *)vg_tensor_data(t) = v;
    return t;
}

vg_code audio_processor_get_data(audio_processor *ap, int64_t how_many, int64_t offset, const model_settings *ms,
                                 double background_frequency, double background_volume_range, int64_t time_shift,
                                 int mode, vg_session *sess, vg_tensor **data_out, vg_tensor **labels_out,
                                 vg_status *st) {
    /* Pick one of the partitions to choose samples from. */
    const sc_list *candidates = &ap->data_index[mode];
    int64_t sample_count = how_many == -1 ? candidates->n : how_many;
    if (how_many != -1) {
        sample_count = candidates->n - offset < how_many ? candidates->n - offset : how_many;
        if (sample_count < 0) sample_count = 0;
    }
    int64_t dd[2] = {sample_count, ms->fingerprint_size};
    vg_tensor *data = vg_tensor_new(VG_FLOAT, dd, 2, st);
    vg_tensor *labels = vg_tensor_new(VG_INT64, &sample_count, 1, st);
    int64_t desired_samples = ms->desired_samples;
    vg_tensor *background_reshaped = vg_tensor_new(VG_FLOAT, (int64_t[]){desired_samples, 1}, 2, st);
    vg_tensor *pad = vg_tensor_new(VG_INT32, (int64_t[]){2, 2}, 2, st);
    vg_tensor *off = vg_tensor_new(VG_INT32, (int64_t[]){2}, 1, st);
    vg_code rc = VG_OK;
    if (!data || !labels || !background_reshaped || !pad || !off) {
        rc = VG_RESOURCE_EXHAUSTED;
        goto out;
    }
    bool use_background = ap->nbackground > 0 && mode == SET_TRAINING;
    bool pick_deterministically = mode != SET_TRAINING;
    float *bg = vg_tensor_data(background_reshaped);
    for (int64_t i = offset; i < offset + sample_count; i++) {
        /* Pick which audio sample to use. */
        int64_t sample_index =
            how_many == -1 || pick_deterministically ? i : rng_randint(&ap->np_random, 0, candidates->n);
        const sc_sample *sample = &candidates->v[sample_index];
        bool silence = !strcmp(sample->label, SILENCE_LABEL);
        /* If we're time shifting, set up the offset for this sample. */
        int64_t time_shift_amount = time_shift > 0 ? rng_randint(&ap->np_random, -time_shift, time_shift) : 0;
        int32_t *p = vg_tensor_data(pad), *o = vg_tensor_data(off);
        if (time_shift_amount > 0) {
            p[0] = (int32_t)time_shift_amount, p[1] = 0, p[2] = 0, p[3] = 0;
            o[0] = 0, o[1] = 0;
        } else {
            p[0] = 0, p[1] = (int32_t)-time_shift_amount, p[2] = 0, p[3] = 0;
            o[0] = (int32_t)-time_shift_amount, o[1] = 0;
        }
        /* Choose a section of background noise to mix in. */
        float background_volume;
        if (use_background || silence) {
            if (ap->nbackground == 0) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "silence samples need a %s folder",
                                   BACKGROUND_NOISE_DIR_NAME);
                goto out;
            }
            int64_t background_index = rng_randint(&ap->np_random, 0, ap->nbackground);
            const float *background_samples = ap->background_data[background_index];
            int64_t blen = ap->background_len[background_index];
            if (blen <= desired_samples) {
                rc = vg_status_set(
                    st, VG_INVALID_ARGUMENT,
                    "Background sample is too short! Need more than %lld samples but only %lld were found",
                    (long long)desired_samples, (long long)blen);
                goto out;
            }
            int64_t background_offset = rng_randint(&ap->np_random, 0, blen - desired_samples);
            memcpy(bg, background_samples + background_offset, (size_t)desired_samples * sizeof(float));
            if (silence)
                background_volume = (float)rng_uniform(&ap->np_random, 0, 1);
            else if (rng_uniform(&ap->np_random, 0, 1) < background_frequency)
                background_volume = (float)rng_uniform(&ap->np_random, 0, background_volume_range);
            else
                background_volume = 0;
        } else {
            memset(bg, 0, (size_t)desired_samples * sizeof(float));
            background_volume = 0;
        }
        /* If we want silence, mute out the main sample but leave the background. */
        vg_tensor *fname = vg_tensor_new_string_scalar(sample->file, strlen(sample->file), st);
        vg_tensor *bvol = scalar_f32(background_volume, st);
        vg_tensor *fvol = scalar_f32(silence ? 0.0f : 1.0f, st);
        vg_output feeds[6] = {ap->wav_filename_placeholder_,      ap->time_shift_padding_placeholder_,
                              ap->time_shift_offset_placeholder_, ap->background_data_placeholder_,
                              ap->background_volume_placeholder_, ap->foreground_volume_placeholder_};
        vg_tensor *vals[6] = {fname, pad, off, background_reshaped, bvol, fvol};
        vg_output fetches[2] = {ap->output_, ap->merged_summaries_};
        vg_tensor *outs[2] = {NULL, NULL};
        int nfetch = ap->summary_writer_ && ap->merged_summaries_.op ? 2 : 1;
        /* Run the graph to produce the output audio. */
        rc = fname && bvol && fvol
                 ? vg_session_run(sess, NULL, feeds, vals, 6, fetches, outs, nfetch, NULL, 0, NULL, st)
                 : VG_RESOURCE_EXHAUSTED;
        vg_tensor_free(fname);
        vg_tensor_free(bvol);
        vg_tensor_free(fvol);
        if (rc == VG_OK && nfetch == 2) {
            size_t len = 0;
            const char *bytes = vg_tensor_string(outs[1], 0, &len);
            rc = vg_file_writer_add_summary(ap->summary_writer_, bytes, len, 0, st);
        }
        if (rc == VG_OK) {
            memcpy((float *)vg_tensor_data(data) + (i - offset) * ms->fingerprint_size, vg_tensor_data(outs[0]),
                   (size_t)ms->fingerprint_size * sizeof(float)); /* data_tensor.flatten() */
            ((int64_t *)vg_tensor_data(labels))[i - offset] = word_to_index(ap, sample->label);
        }
        vg_tensor_free(outs[0]);
        vg_tensor_free(outs[1]);
        if (rc != VG_OK) goto out;
    }
out:
    vg_tensor_free(background_reshaped);
    vg_tensor_free(pad);
    vg_tensor_free(off);
    if (rc != VG_OK) {
        vg_tensor_free(data);
        vg_tensor_free(labels);
        data = labels = NULL;
    }
    *data_out = data;
    *labels_out = labels;
    return rc;
}
