/* models.c - port of tensorflow/examples/speech_commands/models.py:
 * prepare_model_settings, create_model ('single_fc' and 'conv'),
 * load_variables_from_checkpoint. See README.md for the line-by-line map. */
#include "models.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* _next_power_of_two(x): 1 if x == 0 else 2 ** (int(x) - 1).bit_length() */
static int64_t next_power_of_two(int64_t x) {
    if (x == 0) return 1;
    int64_t v = x - 1, bits = 0;
    while (v > 0) v >>= 1, bits++;
    return (int64_t)1 << bits;
}

int prepare_model_settings(int64_t label_count, int64_t sample_rate, int64_t clip_duration_ms, double window_size_ms,
                           double window_stride_ms, int64_t feature_bin_count, const char *preprocess,
                           model_settings *out) {
    memset(out, 0, sizeof *out);
    int64_t desired_samples = (int64_t)(sample_rate * clip_duration_ms / 1000.0);
    int64_t window_size_samples = (int64_t)(sample_rate * window_size_ms / 1000.0);
    int64_t window_stride_samples = (int64_t)(sample_rate * window_stride_ms / 1000.0);
    int64_t length_minus_window = desired_samples - window_size_samples;
    int64_t spectrogram_length =
        length_minus_window < 0 ? 0 : 1 + (int64_t)((double)length_minus_window / (double)window_stride_samples);
    int64_t average_window_width, fingerprint_width;
    if (!strcmp(preprocess, "average")) {
        double fft_bin_count = 1 + (double)next_power_of_two(window_size_samples) / 2;
        average_window_width = (int64_t)floor(fft_bin_count / (double)feature_bin_count);
        fingerprint_width = (int64_t)ceil(fft_bin_count / (double)average_window_width);
    } else if (!strcmp(preprocess, "mfcc")) {
        average_window_width = -1;
        fingerprint_width = feature_bin_count;
    } else {
        /* 'micro' needs the TF Lite micro frontend op, which vigil does not have */
        fprintf(stderr, "Unknown preprocess mode \"%s\" (should be \"mfcc\", \"average\", or \"micro\")\n", preprocess);
        return 1;
    }
    out->desired_samples = desired_samples;
    out->window_size_samples = window_size_samples;
    out->window_stride_samples = window_stride_samples;
    out->spectrogram_length = spectrogram_length;
    out->fingerprint_width = fingerprint_width;
    out->fingerprint_size = fingerprint_width * spectrogram_length;
    out->label_count = label_count;
    out->sample_rate = sample_rate;
    snprintf(out->preprocess, sizeof out->preprocess, "%s", preprocess);
    out->average_window_width = average_window_width;
    return 0;
}

static vg_output get_variable(vg_graph *g, const char *name, const int64_t *dims, int ndims, vg_initializer init) {
    return vg_get_variable(g, name, VG_FLOAT, dims, ndims, init, VG_VAR_TRAINABLE).read;
}

/* create_single_fc_model */
static vg_output create_single_fc_model(vg_graph *g, vg_output fingerprint_input, const model_settings *ms,
                                        bool is_training, vg_output *dropout_prob) {
    if (is_training) *dropout_prob = vg_placeholder(g, VG_FLOAT, NULL, -1, "dropout_prob");
    int64_t wd[2] = {ms->fingerprint_size, ms->label_count};
    vg_output weights = get_variable(g, "weights", wd, 2, vg_init_truncated_normal(0.0, 0.001, 0));
    vg_output bias = get_variable(g, "bias", &ms->label_count, 1, vg_init_zeros());
    return vg_add(g, vg_matmul(g, fingerprint_input, weights, false, false, NULL), bias, NULL);
}

/* create_conv_model: cnn-trad-fpool3 */
static vg_output create_conv_model(vg_graph *g, vg_output fingerprint_input, const model_settings *ms, bool is_training,
                                   vg_output *dropout_prob) {
    if (is_training) *dropout_prob = vg_placeholder(g, VG_FLOAT, NULL, -1, "dropout_prob");
    int64_t input_frequency_size = ms->fingerprint_width;
    int64_t input_time_size = ms->spectrogram_length;
    int64_t d4[4] = {-1, input_time_size, input_frequency_size, 1};
    vg_output fingerprint_4d = vg_reshape_c(g, fingerprint_input, d4, 4, NULL);
    const int64_t first_filter_width = 8, first_filter_height = 20, first_filter_count = 64;
    int64_t fw[4] = {first_filter_height, first_filter_width, 1, first_filter_count};
    vg_output first_weights = get_variable(g, "first_weights", fw, 4, vg_init_truncated_normal(0.0, 0.01, 0));
    vg_output first_bias = get_variable(g, "first_bias", &first_filter_count, 1, vg_init_zeros());
    static const int64_t ones[4] = {1, 1, 1, 1}, twos[4] = {1, 2, 2, 1};
    vg_output first_conv = vg_add(g, vg_conv2d(g, fingerprint_4d, first_weights, ones, "SAME", NULL), first_bias, NULL);
    vg_output first_relu = vg_relu(g, first_conv, NULL);
    vg_output first_dropout = is_training ? vg_nn_dropout(g, first_relu, *dropout_prob, 0, NULL) : first_relu;
    vg_output max_pool = vg_max_pool(g, first_dropout, twos, twos, "SAME", NULL);
    const int64_t second_filter_width = 4, second_filter_height = 10, second_filter_count = 64;
    int64_t sw[4] = {second_filter_height, second_filter_width, first_filter_count, second_filter_count};
    vg_output second_weights = get_variable(g, "second_weights", sw, 4, vg_init_truncated_normal(0.0, 0.01, 0));
    vg_output second_bias = get_variable(g, "second_bias", &second_filter_count, 1, vg_init_zeros());
    vg_output second_conv = vg_add(g, vg_conv2d(g, max_pool, second_weights, ones, "SAME", NULL), second_bias, NULL);
    vg_output second_relu = vg_relu(g, second_conv, NULL);
    vg_output second_dropout = is_training ? vg_nn_dropout(g, second_relu, *dropout_prob, 0, NULL) : second_relu;
    if (!second_dropout.op) return second_dropout;
    vg_shape second_conv_shape = vg_output_shape(second_dropout);
    int64_t second_conv_output_width = second_conv_shape.dims[2];
    int64_t second_conv_output_height = second_conv_shape.dims[1];
    int64_t second_conv_element_count = second_conv_output_width * second_conv_output_height * second_filter_count;
    int64_t fd[2] = {-1, second_conv_element_count};
    vg_output flattened_second_conv = vg_reshape_c(g, second_dropout, fd, 2, NULL);
    int64_t label_count = ms->label_count;
    int64_t ffw[2] = {second_conv_element_count, label_count};
    vg_output final_fc_weights = get_variable(g, "final_fc_weights", ffw, 2, vg_init_truncated_normal(0.0, 0.01, 0));
    vg_output final_fc_bias = get_variable(g, "final_fc_bias", &label_count, 1, vg_init_zeros());
    return vg_add(g, vg_matmul(g, flattened_second_conv, final_fc_weights, false, false, NULL), final_fc_bias, NULL);
}

vg_output create_model(vg_graph *g, vg_output fingerprint_input, const model_settings *ms,
                       const char *model_architecture, bool is_training, vg_output *dropout_prob) {
    if (!strcmp(model_architecture, "single_fc"))
        return create_single_fc_model(g, fingerprint_input, ms, is_training, dropout_prob);
    if (!strcmp(model_architecture, "conv"))
        return create_conv_model(g, fingerprint_input, ms, is_training, dropout_prob);
    fprintf(stderr,
            "model_architecture argument \"%s\" not recognized, should be one of \"single_fc\", \"conv\" (this port "
            "has not ported \"low_latency_conv\", \"low_latency_svdf\", \"tiny_conv\", \"tiny_embedding_conv\")\n",
            model_architecture);
    vg_output none = {NULL, 0};
    return none;
}

vg_code load_variables_from_checkpoint(vg_graph *g, vg_session *sess, const char *start_checkpoint, vg_status *st) {
    vg_saver *saver = vg_saver_new(g, NULL, st);
    if (!saver) return st->code;
    vg_code c = vg_saver_restore(saver, sess, start_checkpoint, st);
    vg_saver_free(saver);
    return c;
}
