/* magenta_sequence_example_lib.h - port of magenta/common/sequence_example_lib.py (the
 * input side of magenta's RNN models: make_sequence_example, get_padded_batch with its
 * optional shuffle queue, count_records, flatten_maybe_padded_sequences), shared by
 * magenta_sequence_example.c and magenta_events_rnn.c. See examples/tf1/README.md for
 * the mapping. Static inline functions: include it in one program. */
#ifndef MAGENTA_SEQUENCE_EXAMPLE_LIB_H
#define MAGENTA_SEQUENCE_EXAMPLE_LIB_H

#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define QUEUE_CAPACITY 500
#define SHUFFLE_MIN_AFTER_DEQUEUE (QUEUE_CAPACITY / 5)

/* make_sequence_example(inputs, labels): feature lists 'inputs' (FloatList per step)
 * and 'labels' (Int64List per step). */
static inline const void *make_sequence_example(vg_sequence_example *se, const float *inputs, int input_size,
                                                const int64_t *labels, int steps, size_t *len, vg_status *st) {
    for (int t = 0; t < steps; t++) {
        if (vg_sequence_example_append_float(se, "inputs", inputs + t * input_size, input_size, st) != VG_OK) return NULL;
        if (vg_sequence_example_append_int64(se, "labels", labels + t, 1, st) != VG_OK) return NULL;
    }
    return vg_sequence_example_serialize(se, len, st);
}

/* Writes make_sequence_example(inputs, labels) as one record of w: 0, or 1 with st set. */
static inline int write_sequence_example(vg_tfrecord_writer *w, const float *inputs, int input_size,
                                         const int64_t *labels, int steps, vg_status *st) {
    vg_sequence_example *se = vg_sequence_example_new();
    size_t len;
    const void *b = make_sequence_example(se, inputs, input_size, labels, steps, &len, st);
    int rc = !b || vg_tfrecord_writer_write(w, b, len, st) != VG_OK;
    vg_sequence_example_free(se);
    return rc;
}

/* The end of writing a record file: closes w; rc (0 / 1) becomes 1 when the close
 * fails; the status message on stderr when it is 1. */
static inline int close_records(vg_tfrecord_writer *w, int rc, vg_status *st) {
    if (vg_tfrecord_writer_close(w, st) != VG_OK) rc = 1;
    if (rc) fprintf(stderr, "%s\n", st->msg);
    return rc;
}

/* Fills one example's inputs [steps, input_size] and labels [steps] (room for
 * max_steps) and returns its steps. */
typedef int (*sequence_fill_fn)(void *ctx, float *inputs, int64_t *labels);

/* Writes n examples made by fill to the TFRecord file path: 0, or 1 with the reason on
 * stderr. */
static inline int write_sequence_examples(const char *path, int n, int input_size, int max_steps, sequence_fill_fn fill,
                                          void *ctx) {
    vg_status st;
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
    if (!w) return fprintf(stderr, "%s\n", st.msg), 1;
    float *inputs = calloc((size_t)max_steps * (size_t)input_size, sizeof *inputs);
    int64_t *labels = calloc((size_t)max_steps, sizeof *labels);
    int rc = !inputs || !labels;
    if (rc) vg_status_set(&st, VG_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < n && !rc; i++) {
        int steps = fill(ctx, inputs, labels);
        rc = write_sequence_example(w, inputs, input_size, labels, steps, &st);
    }
    free(inputs);
    free(labels);
    return close_records(w, rc, &st);
}

/* count_records(file_list, stop_at): records of the files, up to stop_at (0 = all). */
static inline int64_t count_records(const char *const *files, int nfiles, int64_t stop_at) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output names = vg_const_array(g, VG_STRING, (const int64_t[]){nfiles}, 1, files, "file_list");
    vg_output ds = vg_dataset_tfrecord(g, names, "", NULL);
    if (stop_at > 0) ds = vg_dataset_take(g, ds, stop_at, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    vg_session *s = vg_graph_status(g, &st) == VG_OK ? vg_session_new(g, NULL, &st) : NULL;
    int64_t n = 0;
    for (vg_tensor *t = NULL; s && vg_session_run1(s, vg_out(next, 0), &t, &st) == VG_OK; t = NULL) {
        vg_tensor_free(t);
        n++;
    }
    vg_session_free(s);
    vg_graph_free(g);
    return n;
}

/* _shuffle_inputs: a RandomShuffleQueue of the tensors' dtypes (no shapes), one enqueue
 * op run by num_threads threads; the dequeued tensors get the inputs' shapes back
 * (set_shape: a Reshape to the known rank here). */
static inline void shuffle_inputs(vg_graph *g, vg_output *t, int n, int input_size, int capacity, int min_after_dequeue,
                                  int num_threads) {
    vg_dtype types[3];
    for (int i = 0; i < n; i++) types[i] = vg_output_dtype(t[i]);
    vg_output q = vg_random_shuffle_queue(g, types, NULL, n, capacity, min_after_dequeue, 0, 0, NULL);
    vg_op *enq = vg_queue_enqueue(g, q, t, n, NULL);
    vg_op *ops[8];
    for (int i = 0; i < num_threads && i < 8; i++) ops[i] = enq;
    vg_add_queue_runner(g, q, ops, num_threads < 8 ? num_threads : 8);
    vg_op *deq = vg_queue_dequeue(g, q, NULL);
    t[0] = vg_reshape_c(g, vg_out(deq, 0), (const int64_t[]){-1, input_size}, 2, NULL);
    t[1] = vg_reshape_c(g, vg_out(deq, 1), (const int64_t[]){-1}, 1, NULL);
    t[2] = vg_reshape_c(g, vg_out(deq, 2), NULL, 0, NULL);
}

/* get_padded_batch(file_list, batch_size, input_size, num_enqueuing_threads, shuffle)
 * -> inputs [batch, num_steps, input_size] float, labels [batch, num_steps] int64,
 * lengths [batch] int32. */
static inline int get_padded_batch(vg_graph *g, const char *const *files, int nfiles, int batch_size, int input_size,
                                   int64_t num_epochs, int num_enqueuing_threads, bool shuffle, vg_output out[3]) {
    vg_output names = vg_const_array(g, VG_STRING, (const int64_t[]){nfiles}, 1, files, "file_list");
    vg_output file_queue = vg_string_input_producer(g, names, num_epochs, true, 0, 32, NULL);
    vg_output reader = vg_tfrecord_reader(g, NULL, NULL);
    vg_op *read = vg_reader_read(g, reader, file_queue, NULL);
    vg_sequence_feature_spec sequence_features[2] = {
        {"inputs", VG_FLOAT, false, vg_shape_make((const int64_t[]){input_size}, 1), false},
        {"labels", VG_INT64, false, vg_shape_make(NULL, 0), false},
    };
    vg_output sequence[2];
    vg_parse_single_sequence_example(g, vg_out(read, 1), NULL, 0, sequence_features, 2, NULL, NULL, sequence, NULL, NULL);
    /* length = tf.shape(sequence['inputs'])[0] */
    vg_strided_slice_masks m = {0, 0, 0, 0, 1};
    vg_output length = vg_strided_slice_c(g, vg_shape_op(g, sequence[0], VG_INT32, NULL), (const int32_t[]){0},
                                          (const int32_t[]){1}, NULL, 1, &m, NULL);
    vg_output input_tensors[3] = {sequence[0], sequence[1], length};
    if (shuffle) {
        if (num_enqueuing_threads < 2) {
            fprintf(stderr, "`num_enqueuing_threads` must be at least 2 when shuffling.\n");
            return 2;
        }
        int shuffle_threads = (int)(ceil((double)num_enqueuing_threads) / 2.0);
        /* Since there may be fewer records than SHUFFLE_MIN_AFTER_DEQUEUE, take the
         * minimum of that number and the number of records. */
        int64_t min_after_dequeue = count_records(files, nfiles, SHUFFLE_MIN_AFTER_DEQUEUE);
        shuffle_inputs(g, input_tensors, 3, input_size, QUEUE_CAPACITY, (int)min_after_dequeue, shuffle_threads);
        num_enqueuing_threads -= shuffle_threads;
    }
    vg_batch_ex(g, input_tensors, 3, batch_size, num_enqueuing_threads, QUEUE_CAPACITY, false, true /* dynamic_pad */,
                false /* allow_smaller_final_batch */, NULL, out);
    return 0;
}

/* flatten_maybe_padded_sequences(maybe_padded_sequences, lengths): the steps within
 * each sequence's length, [sum(lengths), ...] (where(sequence_mask(lengths)) ->
 * gather_nd). */
static inline vg_output flatten_maybe_padded_sequences(vg_graph *g, vg_output x, vg_output lengths) {
    vg_graph_push_scope(g, "SequenceMask");
    vg_output maxlen = vg_reduce_max(g, lengths, NULL, -1, false, "Max");
    vg_output r = vg_range(g, vg_const_i32(g, 0, "Const"), maxlen, vg_const_i32(g, 1, "Const_1"), "Range");
    vg_output mask = vg_less(g, vg_expand_dims(g, r, 0, "ExpandDims"), vg_expand_dims(g, lengths, 1, "ExpandDims_1"),
                             "Less");
    vg_graph_pop_scope(g);
    vg_output indices = vg_where(g, mask, "Where");
    return vg_gather_nd(g, x, indices, "GatherNd");
}

#endif
