/* magenta_sequence_example.c - port of magenta/common/sequence_example_lib.py (the
 * input side: make_sequence_example, get_padded_batch with its optional shuffle
 * queue, count_records, flatten_maybe_padded_sequences) feeding a simple per-step
 * softmax classifier under MonitoredTrainingSession until the RNN issue lands. See
 * examples/tf1/README.md for the mapping.
 *
 * Usage: magenta_sequence_example [--train_dir T] [--num_epochs 8] [--batch_size 16]
 *                                 [--shuffle 1] [--num_enqueuing_threads 4]
 * It writes 240 SequenceExamples of 3..12 steps (inputs: 8 floats per step, labels: the
 * index of the step's largest input) into a temporary TFRecord file, batches them with
 * dynamic padding and trains until the input ends. Prints "final loss <x>". */
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INPUT_SIZE 8
#define QUEUE_CAPACITY 500
#define SHUFFLE_MIN_AFTER_DEQUEUE (QUEUE_CAPACITY / 5)

/* make_sequence_example(inputs, labels): feature lists 'inputs' (FloatList per step)
 * and 'labels' (Int64List per step). */
static const void *make_sequence_example(vg_sequence_example *se, const float *inputs, const int64_t *labels, int steps,
                                         size_t *len, vg_status *st) {
    for (int t = 0; t < steps; t++) {
        if (vg_sequence_example_append_float(se, "inputs", inputs + t * INPUT_SIZE, INPUT_SIZE, st) != VG_OK) return NULL;
        if (vg_sequence_example_append_int64(se, "labels", labels + t, 1, st) != VG_OK) return NULL;
    }
    return vg_sequence_example_serialize(se, len, st);
}

/* count_records(file_list, stop_at): records of the files, up to stop_at (0 = all). */
static int64_t count_records(const char *const *files, int nfiles, int64_t stop_at) {
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
static void shuffle_inputs(vg_graph *g, vg_output *t, int n, int capacity, int min_after_dequeue, int num_threads) {
    vg_dtype types[3];
    for (int i = 0; i < n; i++) types[i] = vg_output_dtype(t[i]);
    vg_output q = vg_random_shuffle_queue(g, types, NULL, n, capacity, min_after_dequeue, 0, 0, NULL);
    vg_op *enq = vg_queue_enqueue(g, q, t, n, NULL);
    vg_op *ops[8];
    for (int i = 0; i < num_threads && i < 8; i++) ops[i] = enq;
    vg_add_queue_runner(g, q, ops, num_threads < 8 ? num_threads : 8);
    vg_op *deq = vg_queue_dequeue(g, q, NULL);
    t[0] = vg_reshape_c(g, vg_out(deq, 0), (const int64_t[]){-1, INPUT_SIZE}, 2, NULL);
    t[1] = vg_reshape_c(g, vg_out(deq, 1), (const int64_t[]){-1}, 1, NULL);
    t[2] = vg_reshape_c(g, vg_out(deq, 2), NULL, 0, NULL);
}

/* get_padded_batch(file_list, batch_size, input_size, num_enqueuing_threads, shuffle)
 * -> inputs [batch, num_steps, input_size] float, labels [batch, num_steps] int64,
 * lengths [batch] int32. */
static int get_padded_batch(vg_graph *g, const char *const *files, int nfiles, int batch_size, int64_t num_epochs,
                            int num_enqueuing_threads, bool shuffle, vg_output out[3]) {
    vg_output names = vg_const_array(g, VG_STRING, (const int64_t[]){nfiles}, 1, files, "file_list");
    vg_output file_queue = vg_string_input_producer(g, names, num_epochs, true, 0, 32, NULL);
    vg_output reader = vg_tfrecord_reader(g, NULL, NULL);
    vg_op *read = vg_reader_read(g, reader, file_queue, NULL);
    vg_sequence_feature_spec sequence_features[2] = {
        {"inputs", VG_FLOAT, false, vg_shape_make((const int64_t[]){INPUT_SIZE}, 1), false},
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
        shuffle_inputs(g, input_tensors, 3, QUEUE_CAPACITY, (int)min_after_dequeue, shuffle_threads);
        num_enqueuing_threads -= shuffle_threads;
    }
    vg_batch_ex(g, input_tensors, 3, batch_size, num_enqueuing_threads, QUEUE_CAPACITY, false, true /* dynamic_pad */,
                false /* allow_smaller_final_batch */, NULL, out);
    return 0;
}

/* flatten_maybe_padded_sequences(maybe_padded_sequences, lengths): the steps within
 * each sequence's length, [sum(lengths), ...] (where(sequence_mask(lengths)) ->
 * gather_nd). */
static vg_output flatten_maybe_padded_sequences(vg_graph *g, vg_output x, vg_output lengths) {
    vg_graph_push_scope(g, "SequenceMask");
    vg_output maxlen = vg_reduce_max(g, lengths, NULL, -1, false, "Max");
    vg_output r = vg_range(g, vg_const_i32(g, 0, "Const"), maxlen, vg_const_i32(g, 1, "Const_1"), "Range");
    vg_output mask = vg_less(g, vg_expand_dims(g, r, 0, "ExpandDims"), vg_expand_dims(g, lengths, 1, "ExpandDims_1"),
                             "Less");
    vg_graph_pop_scope(g);
    vg_output indices = vg_where(g, mask, "Where");
    return vg_gather_nd(g, x, indices, "GatherNd");
}

static int make_data(const char *path, int n) {
    vg_status st;
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
    if (!w) return fprintf(stderr, "%s\n", st.msg), 1;
    unsigned seed = 7;
    float inputs[12 * INPUT_SIZE];
    int64_t labels[12];
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        int steps = 3 + (int)(rand_r(&seed) % 10);
        for (int t = 0; t < steps; t++) {
            labels[t] = rand_r(&seed) % INPUT_SIZE;
            for (int k = 0; k < INPUT_SIZE; k++)
                inputs[t * INPUT_SIZE + k] = (k == labels[t] ? 1.0f : 0.0f) + 0.3f * ((float)(rand_r(&seed) % 1000) / 1000.0f);
        }
        vg_sequence_example *se = vg_sequence_example_new();
        size_t len;
        const void *b = make_sequence_example(se, inputs, labels, steps, &len, &st);
        if (!b || vg_tfrecord_writer_write(w, b, len, &st) != VG_OK) rc = 1;
        vg_sequence_example_free(se);
    }
    if (vg_tfrecord_writer_close(w, &st) != VG_OK) rc = 1;
    if (rc) fprintf(stderr, "%s\n", st.msg);
    return rc;
}

int main(int argc, char **argv) {
    const char *train_dir = NULL;
    int64_t num_epochs = 8;
    int batch_size = 16, threads = 4;
    bool shuffle = true;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--train_dir")) train_dir = v;
        else if (!strcmp(k, "--num_epochs")) num_epochs = atoll(v);
        else if (!strcmp(k, "--batch_size")) batch_size = atoi(v);
        else if (!strcmp(k, "--shuffle")) shuffle = atoi(v) != 0;
        else if (!strcmp(k, "--num_enqueuing_threads")) threads = atoi(v);
        else return fprintf(stderr, "unknown flag %s\n", k), 2;
    }
    char tmp[64] = "/tmp/vg_magenta_seq_XXXXXX", path[128];
    if (!mkdtemp(tmp)) return 1;
    snprintf(path, sizeof path, "%s/train.tfrecord", tmp);
    if (make_data(path, 240)) return 1;
    if (!train_dir) train_dir = tmp;
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *files[1] = {path};
    vg_output batch[3];
    int prc = get_padded_batch(g, files, 1, batch_size, num_epochs, threads, shuffle, batch);
    if (prc) return prc;
    vg_output lengths = batch[2];
    /* a simple model over the real (unpadded) steps: softmax regression per step */
    vg_output x = flatten_maybe_padded_sequences(g, batch[0], lengths);
    vg_output y = flatten_maybe_padded_sequences(g, batch[1], lengths);
    x = vg_reshape_c(g, x, (const int64_t[]){-1, INPUT_SIZE}, 2, NULL);
    vg_output logits = vg_layers_dense(g, x, INPUT_SIZE, VG_ACT_NONE, "logits");
    vg_op *xent = vg_sparse_softmax_xent(g, logits, y, "xentropy");
    vg_output loss = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "loss");
    vg_summary_scalar(g, "loss", loss);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *opt = vg_optimizer_new_adam(0.05, 0.9, 0.999, 1e-8);
    vg_op *train_op = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    if (vg_graph_status(g, &st) != VG_OK) return fprintf(stderr, "graph: %s\n", st.msg), 1;
    vg_mts_options o = VG_MTS_OPTIONS_INIT;
    o.checkpoint_dir = train_dir;
    o.log_step_count_steps = 0;
    vg_monitored_session *sess = vg_monitored_training_session_new(g, &o, &st);
    if (!sess) return fprintf(stderr, "session: %s\n", st.msg), 1;
    vg_run_args a = VG_RUN_ARGS_INIT;
    vg_output fetch[2] = {loss, batch[0]};
    a.fetches = fetch;
    a.nfetches = 2;
    a.targets = &train_op;
    a.ntargets = 1;
    vg_code rc = VG_OK;
    double first = NAN, last = NAN;
    int64_t steps = 0, padded_steps_max = 0;
    while (rc == VG_OK && !vg_monitored_session_should_stop(sess)) {
        vg_tensor *out[2] = {NULL, NULL};
        rc = vg_monitored_session_run(sess, &a, out, NULL, &st);
        if (rc == VG_OK) {
            last = vg_tensor_scalar(out[0]);
            if (steps++ == 0) first = last;
            if (vg_tensor_dim(out[1], 1) > padded_steps_max) padded_steps_max = vg_tensor_dim(out[1], 1);
        }
        vg_tensor_free(out[0]), vg_tensor_free(out[1]);
    }
    rc = vg_monitored_session_end(sess, rc, &st); /* OUT_OF_RANGE after the last epoch: a clean end */
    vg_monitored_session_free(sess);
    if (rc != VG_OK) fprintf(stderr, "training: %s: %s\n", vg_code_name(rc), st.msg);
    printf("steps %lld, longest padded batch %lld steps\nfirst loss %.6f\nfinal loss %.6f\n", (long long)steps,
           (long long)padded_steps_max, first, last);
    vg_optimizer_free(opt);
    vg_file_writer_cache_clear();
    vg_graph_free(g);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return rc == VG_OK && steps > 0 ? 0 : 1;
}
