/* magenta_sequence_example.c - port of magenta/common/sequence_example_lib.py (the
 * input side: make_sequence_example, get_padded_batch with its optional shuffle
 * queue, count_records, flatten_maybe_padded_sequences) feeding a simple per-step
 * softmax classifier under MonitoredTrainingSession (the library itself is in
 * magenta_sequence_example_lib.h, shared with magenta_events_rnn.c). See
 * examples/tf1/README.md for the mapping.
 *
 * Usage: magenta_sequence_example [--train_dir T] [--num_epochs 8] [--batch_size 16]
 *                                 [--shuffle 1] [--num_enqueuing_threads 4]
 * It writes 240 SequenceExamples of 3..12 steps (inputs: 8 floats per step, labels: the
 * index of the step's largest input) into a temporary TFRecord file, batches them with
 * dynamic padding and trains until the input ends. Prints "final loss <x>". */
#include "magenta_sequence_example_lib.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INPUT_SIZE 8

/* 3..12 steps of one-hot labels plus noise as inputs. ctx: the rand_r seed. */
static int noisy_example(void *ctx, float *inputs, int64_t *labels) {
    unsigned *seed = ctx;
    int steps = 3 + (int)(rand_r(seed) % 10);
    for (int t = 0; t < steps; t++) {
        labels[t] = rand_r(seed) % INPUT_SIZE;
        for (int k = 0; k < INPUT_SIZE; k++)
            inputs[t * INPUT_SIZE + k] =
                (k == labels[t] ? 1.0f : 0.0f) + 0.3f * ((float)(rand_r(seed) % 1000) / 1000.0f);
    }
    return steps;
}

static int make_data(const char *path, int n) {
    unsigned seed = 7;
    return write_sequence_examples(path, n, INPUT_SIZE, 12, noisy_example, &seed);
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
    int prc = get_padded_batch(g, files, 1, batch_size, INPUT_SIZE, num_epochs, threads, shuffle, batch);
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
    vg_mts_options o = {0};
    o.checkpoint_dir = train_dir;
    o.no_step_counter = true;
    vg_monitored_session *sess = vg_monitored_training_session_new(g, &o, &st);
    if (!sess) return fprintf(stderr, "session: %s\n", st.msg), 1;
    vg_run_args a = {0};
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
