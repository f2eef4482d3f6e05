/* input_data.h - port of tensorflow/examples/speech_commands/input_data.py (see README.md). */
#ifndef SPEECH_COMMANDS_INPUT_DATA_H
#define SPEECH_COMMANDS_INPUT_DATA_H

#include "models.h"

#define SILENCE_LABEL "_silence_"
#define SILENCE_INDEX 0
#define UNKNOWN_WORD_LABEL "_unknown_"
#define UNKNOWN_WORD_INDEX 1
#define BACKGROUND_NOISE_DIR_NAME "_background_noise_"
#define RANDOM_SEED 59185
#define MAX_NUM_WAVS_PER_CLASS ((1 << 27) - 1) /* ~134M */

enum { SET_VALIDATION = 0, SET_TESTING = 1, SET_TRAINING = 2 };

/* SHA-1 (FIPS 180-4) of len bytes into digest (20 bytes): hashlib.sha1 for which_set. */
void sha1(const void *data, size_t len, unsigned char digest[20]);

/* which_set(filename, validation_percentage, testing_percentage): SET_*. */
int which_set(const char *filename, double validation_percentage, double testing_percentage);

/* A small PRNG standing in for Python's random / np.random (see README.md). */
typedef struct sc_rng {
    uint64_t s;
} sc_rng;
double rng_uniform(sc_rng *r, double lo, double hi);    /* [lo, hi) */
int64_t rng_randint(sc_rng *r, int64_t lo, int64_t hi); /* [lo, hi) */

typedef struct sc_sample {
    char *label;
    char *file;
} sc_sample;

typedef struct sc_list {
    sc_sample *v;
    int n, cap;
} sc_list;

typedef struct audio_processor {
    char *data_dir;
    sc_list data_index[3]; /* validation, testing, training */
    char **words_list;     /* prepare_words_list(wanted_words) */
    int nwords;
    char **all_words; /* word_to_index: all_words[i] -> word_index[i] */
    int *word_index;
    int nall;
    float **background_data;
    int64_t *background_len;
    int nbackground;
    sc_rng np_random; /* np.random */
    /* the processing graph (in the training graph, under name scope "data") */
    vg_output wav_filename_placeholder_, foreground_volume_placeholder_, time_shift_padding_placeholder_,
        time_shift_offset_placeholder_, background_data_placeholder_, background_volume_placeholder_, output_,
        merged_summaries_;
    vg_file_writer *summary_writer_;
} audio_processor;

/* AudioProcessor(data_url, data_dir, silence_percentage, unknown_percentage,
 * wanted_words, validation_percentage, testing_percentage, model_settings,
 * summaries_dir): the data index, the background data and the processing graph built
 * in g. Returns NULL with a message on stderr (Python's exceptions). */
audio_processor *audio_processor_new(vg_graph *g, const char *data_url, const char *data_dir, double silence_percentage,
                                     double unknown_percentage, char **wanted_words, int nwanted,
                                     double validation_percentage, double testing_percentage, const model_settings *ms,
                                     const char *summaries_dir);
/* The summary writer needs the graph complete; train.c calls this after building. */
vg_code audio_processor_open_writer(audio_processor *ap, vg_graph *g, const char *summaries_dir, vg_status *st);
void audio_processor_free(audio_processor *ap);

int audio_processor_set_size(const audio_processor *ap, int mode);

/* get_data(how_many, offset, model_settings, background_frequency,
 * background_volume_range, time_shift, mode, sess): *data [n, fingerprint_size] float
 * and *labels [n] int64 as new tensors (free with vg_tensor_free). */
vg_code audio_processor_get_data(audio_processor *ap, int64_t how_many, int64_t offset, const model_settings *ms,
                                 double background_frequency, double background_volume_range, int64_t time_shift,
                                 int mode, vg_session *sess, vg_tensor **data, vg_tensor **labels, vg_status *st);

#endif
