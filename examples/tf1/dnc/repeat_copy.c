/* repeat_copy.c - dnc/repeat_copy.py: the synthetic repeat-copy task built in the graph
 * (each run draws new random patterns, lengths and repeat counts) and its masked
 * sigmoid cross-entropy cost. */
#include "dnc.h"
#include <math.h>
#include <stdlib.h>

static vg_output fconst(vg_graph *g, double v, const char *name) { return vg_const_f32(g, (float)v, name); }
static vg_output iconst(vg_graph *g, int v, const char *name) { return vg_const_i32(g, v, name); }

/* tf.random.uniform(shape, minval, maxval, dtype=tf.int32) with TF's seeds */
static vg_output random_int(vg_graph *g, vg_output shape, vg_output lo, vg_output hi, const char *name) {
    int64_t seed, seed2;
    vg_graph_get_seed(g, 0, &seed, &seed2);
    return vg_random_uniform_int(g, shape, lo, hi, seed, seed2, name);
}

/* x[i] of a 1-D tensor */
static vg_output at(vg_graph *g, vg_output x, int i) {
    vg_strided_slice_masks m = {0, 0, 0, 0, 1};
    return vg_strided_slice_c(g, x, (const int32_t[]){i}, (const int32_t[]){i + 1}, NULL, 1, &m, "strided_slice");
}

/* tf.zeros / tf.ones of a shape given as a list of scalars (packed) */
static vg_output fill_dyn(vg_graph *g, const vg_output *dims, int n, double v, const char *name) {
    vg_output shape = vg_pack(g, dims, n, 0, "shape");
    return v == 0.0 ? vg_zeros(g, shape, VG_FLOAT, name) : vg_ones(g, shape, VG_FLOAT, name);
}

void dnc_repeat_copy_build(vg_graph *g, const dnc_repeat_copy *d, vg_output *obs_out, vg_output *targ_out,
                           vg_output *mask_out) {
    int num_bits = d->num_bits, batch_size = d->batch_size;
    vg_graph_push_scope(g, "repeat_copy");
    /* one dimension for the num-repeats and one for the start-marker; one target
     * dimension for the end-marker */
    int full_obs_size = num_bits + 2, full_targ_size = num_bits + 1;
    int start_end_flag_idx = full_obs_size - 2, num_repeats_channel_idx = full_obs_size - 1;
    /* samples each batch index's sequence length and the number of repeats */
    vg_output bshape = vg_const_i32_vec(g, (const int32_t[]){batch_size}, 1, "random_uniform/shape");
    vg_output sub_seq_length_batch = random_int(g, bshape, iconst(g, d->min_length, "random_uniform/min"),
                                                iconst(g, d->max_length + 1, "random_uniform/max"), "random_uniform");
    vg_output num_repeats_batch = random_int(g, bshape, iconst(g, d->min_repeats, "random_uniform_1/min"),
                                             iconst(g, d->max_repeats + 1, "random_uniform_1/max"), "random_uniform_1");
    /* pads all the batches to have the same total sequence length */
    vg_output total_length_batch =
        vg_add(g, vg_mul(g, sub_seq_length_batch, vg_add(g, num_repeats_batch, iconst(g, 1, "add/y"), "add"), "mul"),
               iconst(g, 3, "add_1/y"), "add_1");
    vg_output max_length_batch = vg_reduce_max(g, total_length_batch, NULL, -1, false, "Max");
    vg_output residual_length_batch = vg_sub(g, max_length_batch, total_length_batch, "sub");

    vg_output *obs_t = calloc((size_t)batch_size * 3, sizeof(vg_output)), *targ_t = obs_t + batch_size,
              *mask_t = targ_t + batch_size;
    vg_output one = iconst(g, 1, "one"), two = iconst(g, 2, "two"), nb = iconst(g, num_bits, "num_bits");
    vg_output fo = iconst(g, full_obs_size, "full_obs_size"), ft = iconst(g, full_targ_size, "full_targ_size");
    /* generates patterns for each batch element independently */
    for (int b = 0; b < batch_size; b++) {
        vg_output sub_seq_len = at(g, sub_seq_length_batch, b);
        vg_output num_reps = at(g, num_repeats_batch, b);
        /* the observation pattern is a sequence of random binary vectors */
        vg_output obs_pattern = vg_cast(
            g, random_int(g, vg_pack(g, (const vg_output[]){sub_seq_len, nb}, 2, 0, "stack"), iconst(g, 0, "min"),
                          two, "random_uniform"),
            VG_FLOAT, "Cast");
        /* the target pattern is the observation pattern repeated n times */
        vg_output reps_len = vg_mul(g, sub_seq_len, num_reps, "mul");
        vg_output flat_obs_pattern = vg_reshape_c(g, obs_pattern, (const int64_t[]){-1}, 1, "Reshape");
        vg_output flat_targ_pattern = vg_tile(g, flat_obs_pattern, vg_pack(g, &num_reps, 1, 0, "stack_1"), "Tile");
        vg_output targ_pattern = vg_reshape(g, flat_targ_pattern,
                                            vg_pack(g, (const vg_output[]){reps_len, nb}, 2, 0, "stack_2"), "Reshape_1");
        /* expand the obs_pattern with two extra channels for the flags */
        vg_output obs_flag_channel_pad = fill_dyn(g, (const vg_output[]){sub_seq_len, two}, 2, 0.0, "zeros");
        vg_output obs_start_flag = vg_one_hot(g, vg_const_i32_vec(g, (const int32_t[]){start_end_flag_idx}, 1, "one_hot/indices"),
                                              full_obs_size, 1.0f, 0.0f, "one_hot");
        /* one_hot(on_value=normalise(num_reps)): a one-hot of 1 scaled by the value */
        vg_output norm_reps = vg_div(g, vg_cast(g, num_reps, VG_FLOAT, "Cast_1"), fconst(g, d->norm_max, "truediv/y"),
                                     "truediv");
        vg_output num_reps_flag = vg_mul(
            g, vg_one_hot(g, vg_const_i32_vec(g, (const int32_t[]){num_repeats_channel_idx}, 1, "one_hot_1/indices"),
                          full_obs_size, 1.0f, 0.0f, "one_hot_1"),
            norm_reps, "one_hot_1/on_value");
        vg_output obs = vg_concat_c(g, (const vg_output[]){obs_pattern, obs_flag_channel_pad}, 2, 1, "concat");
        obs = vg_concat_c(g, (const vg_output[]){obs_start_flag, obs}, 2, 0, "concat_1");
        obs = vg_concat_c(g, (const vg_output[]){obs, num_reps_flag}, 2, 0, "concat_2");
        /* the same for the targ_pattern (one extra channel) */
        vg_output targ_flag_channel_pad = fill_dyn(g, (const vg_output[]){reps_len, one}, 2, 0.0, "zeros_1");
        vg_output targ_end_flag = vg_one_hot(
            g, vg_const_i32_vec(g, (const int32_t[]){start_end_flag_idx}, 1, "one_hot_2/indices"), full_targ_size, 1.0f,
            0.0f, "one_hot_2");
        vg_output targ = vg_concat_c(g, (const vg_output[]){targ_pattern, targ_flag_channel_pad}, 2, 1, "concat_3");
        targ = vg_concat_c(g, (const vg_output[]){targ, targ_end_flag}, 2, 0, "concat_4");
        /* zeros at the end of obs and the beginning of targ align them */
        vg_output reps_len1 = vg_add(g, reps_len, one, "add");
        vg_output sub2 = vg_add(g, sub_seq_len, two, "add_1");
        vg_output obs_end_pad = fill_dyn(g, (const vg_output[]){reps_len1, fo}, 2, 0.0, "zeros_2");
        vg_output targ_start_pad = fill_dyn(g, (const vg_output[]){sub2, ft}, 2, 0.0, "zeros_3");
        /* the mask is zero during the obs and one during the targ */
        vg_output mask_off = fill_dyn(g, &sub2, 1, 0.0, "zeros_4");
        vg_output mask_on = fill_dyn(g, &reps_len1, 1, 1.0, "ones");
        obs_t[b] = vg_concat_c(g, (const vg_output[]){obs, obs_end_pad}, 2, 0, "concat_5");
        targ_t[b] = vg_concat_c(g, (const vg_output[]){targ_start_pad, targ}, 2, 0, "concat_6");
        mask_t[b] = vg_concat_c(g, (const vg_output[]){mask_off, mask_on}, 2, 0, "concat_7");
    }
    /* zero padding so that every batch element's sequence has the same length */
    for (int b = 0; b < batch_size; b++) {
        vg_output r = at(g, residual_length_batch, b);
        obs_t[b] = vg_concat_c(g, (const vg_output[]){obs_t[b], fill_dyn(g, (const vg_output[]){r, fo}, 2, 0.0, "zeros")},
                               2, 0, "concat");
        targ_t[b] = vg_concat_c(g, (const vg_output[]){targ_t[b], fill_dyn(g, (const vg_output[]){r, ft}, 2, 0.0, "zeros")},
                                2, 0, "concat");
        mask_t[b] = vg_concat_c(g, (const vg_output[]){mask_t[b], fill_dyn(g, &r, 1, 0.0, "zeros")}, 2, 0, "concat");
    }
    /* concatenate each batch element into a single tensor */
    vg_output bs = iconst(g, batch_size, "batch_size");
    *obs_out = vg_reshape(g, vg_concat_c(g, obs_t, batch_size, 1, "concat"),
                          vg_pack(g, (const vg_output[]){max_length_batch, bs, fo}, 3, 0, "stack"), "Reshape");
    *targ_out = vg_reshape(g, vg_concat_c(g, targ_t, batch_size, 1, "concat"),
                           vg_pack(g, (const vg_output[]){max_length_batch, bs, ft}, 3, 0, "stack"), "Reshape");
    vg_output m = vg_reshape(g, vg_concat_c(g, mask_t, batch_size, 0, "concat"),
                             vg_pack(g, (const vg_output[]){bs, max_length_batch}, 2, 0, "stack"), "Reshape");
    *mask_out = vg_transpose_c(g, m, (const int32_t[]){1, 0}, 2, "transpose");
    /* the static shapes TF infers for the two reshapes ([?, batch, size]) */
    *obs_out = vg_reshape_c(g, *obs_out, (const int64_t[]){-1, batch_size, full_obs_size}, 3, "observations");
    *targ_out = vg_reshape_c(g, *targ_out, (const int64_t[]){-1, batch_size, full_targ_size}, 3, "target");
    free(obs_t);
    vg_graph_pop_scope(g);
}

/* masked_sigmoid_cross_entropy(logits, target, mask, time_average, log_prob_in_bits) */
vg_output dnc_masked_sigmoid_cross_entropy(vg_graph *g, vg_output logits, vg_output target, vg_output mask,
                                           bool time_average, bool log_prob_in_bits) {
    vg_output xent = vg_sigmoid_cross_entropy_with_logits(g, target, logits, NULL);
    vg_output loss_time_batch = vg_reduce_sum(g, xent, (const int32_t[]){2}, 1, false, "Sum");
    vg_output loss_batch = vg_reduce_sum(g, vg_mul(g, loss_time_batch, mask, "mul"), (const int32_t[]){0}, 1, false, "Sum_1");
    vg_strided_slice_masks sm = {0, 0, 0, 0, 1};
    vg_output batch_size = vg_cast(g, vg_strided_slice_c(g, vg_shape_op(g, logits, VG_INT32, "Shape"), (const int32_t[]){1},
                                                         (const int32_t[]){2}, NULL, 1, &sm, "strided_slice"),
                                   VG_FLOAT, "Cast");
    if (time_average) {
        vg_output mask_count = vg_reduce_sum(g, mask, (const int32_t[]){0}, 1, false, "Sum_2");
        loss_batch = vg_div(g, loss_batch, vg_add(g, mask_count, fconst(g, 1.1920929e-07, "add/y"), "add"), "truediv");
    }
    vg_output loss = vg_div(g, vg_reduce_sum(g, loss_batch, NULL, -1, false, "Sum_3"), batch_size, "truediv_1");
    if (log_prob_in_bits) loss = vg_div(g, loss, fconst(g, log(2.0), "truediv_2/y"), "truediv_2");
    return loss;
}
