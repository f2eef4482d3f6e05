/* models.h - port of tensorflow/examples/speech_commands/models.py (see README.md). */
#ifndef SPEECH_COMMANDS_MODELS_H
#define SPEECH_COMMANDS_MODELS_H

#include "vigil/vigil.h"

/* prepare_model_settings' dictionary. */
typedef struct model_settings {
    int64_t desired_samples;
    int64_t window_size_samples;
    int64_t window_stride_samples;
    int64_t spectrogram_length;
    int64_t fingerprint_width;
    int64_t fingerprint_size;
    int64_t label_count;
    int64_t sample_rate;
    char preprocess[16]; /* "mfcc" or "average" */
    int64_t average_window_width;
} model_settings;

/* prepare_model_settings(...); returns non-zero (message on stderr) for an unknown
 * preprocess mode (Python's ValueError). */
int prepare_model_settings(int64_t label_count, int64_t sample_rate, int64_t clip_duration_ms, double window_size_ms,
                           double window_stride_ms, int64_t feature_bin_count, const char *preprocess,
                           model_settings *out);

/* create_model(fingerprint_input, model_settings, model_architecture, is_training):
 * the logits; with is_training *dropout_prob gets the dropout placeholder ("single_fc"
 * makes one too, unused, as the Python). {NULL, 0} for an unknown architecture (message
 * on stderr) or a graph error. */
vg_output create_model(vg_graph *g, vg_output fingerprint_input, const model_settings *ms,
                       const char *model_architecture, bool is_training, vg_output *dropout_prob);

/* load_variables_from_checkpoint(sess, start_checkpoint): Saver(global_variables())
 * restore. */
vg_code load_variables_from_checkpoint(vg_graph *g, vg_session *sess, const char *start_checkpoint, vg_status *st);

#endif
