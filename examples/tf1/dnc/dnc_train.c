/* dnc_train.c - train.py of google-deepmind/dnc (859834212572054d866c671577f7dd370ad09561):
 * trains the DNC on the repeat-copy task. dynamic_rnn (time major) over the DNC core,
 * the masked sigmoid cross-entropy, gradients clipped by global norm, RMSProp with
 * epsilon, a global step, an optional CheckpointSaverHook, SingularMonitoredSession
 * restoring from --checkpoint_dir. Same flags and defaults as the Python; extra flags:
 * --seed (graph seed, 0 = none) and --quiet 1 (no sample printouts). Prints
 * "start iteration <n>", the reports, then "first block loss <x>", "last block loss <x>"
 * (means over the first and last --report_interval iterations of this run), "final loss <x>". */
#include "dnc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    int64_t hidden_size, memory_size, word_size, num_write_heads, num_read_heads, clip_value;
    double max_grad_norm, learning_rate, optimizer_epsilon;
    int batch_size, num_bits, min_length, max_length, min_repeats, max_repeats;
    int64_t num_training_iterations, report_interval, checkpoint_interval, seed;
    const char *checkpoint_dir;
    int quiet;
} FLAGS = {64, 16, 16, 1, 4, 20, 50, 1e-4, 1e-10, 16, 4, 1, 2, 1, 2, 100000, 100, -1, 0, "/tmp/tf/dnc", 0};

/* bitstring_readable for the first batch element (to_human_readable) */
static void print_readable(const vg_tensor *obs, const vg_tensor *targ, const vg_tensor *out) {
    int64_t T = vg_tensor_dim(obs, 0), B = vg_tensor_dim(obs, 1), no = vg_tensor_dim(obs, 2), nt = vg_tensor_dim(targ, 2);
    const float *o = vg_tensor_data(obs), *t = vg_tensor_data(targ), *y = vg_tensor_data(out);
    const char *titles[3] = {"Observations:", "Targets:", "Model Output:"};
    for (int k = 0; k < 3; k++) {
        const float *p = k == 0 ? o : k == 1 ? t : y;
        int64_t nc = k == 0 ? no : nt;
        printf("%s%s\n", k ? "\n" : "\n", titles[k]);
        for (int64_t c = 0; c < nc; c++) {
            putchar('+');
            for (int64_t s = 0; s < T; s++) {
                float v = p[(s * B) * nc + c];
                if (k == 0 && c == nc - 1) v = (float)(int)(v * 10 + 0.5f); /* unnormalise num-reps */
                if (v == 0) printf("%s-", s ? " " : "");
                else printf("%s%d", s ? " " : "", (int)v);
            }
            printf("+\n");
        }
    }
}

static int parse_flags(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) || i + 1 >= argc) return fprintf(stderr, "bad argument %s\n", a), 2;
        const char *k = a + 2, *v = argv[++i];
#define I(name) else if (!strcmp(k, #name)) FLAGS.name = atoi(v)
#define L(name) else if (!strcmp(k, #name)) FLAGS.name = atoll(v)
#define D(name) else if (!strcmp(k, #name)) FLAGS.name = atof(v)
        if (0) {
        }
        L(hidden_size); L(memory_size); L(word_size); L(num_write_heads); L(num_read_heads); L(clip_value);
        D(max_grad_norm); D(learning_rate); D(optimizer_epsilon);
        I(batch_size); I(num_bits); I(min_length); I(max_length); I(min_repeats); I(max_repeats);
        L(num_training_iterations); L(report_interval); L(checkpoint_interval); L(seed); I(quiet);
        else if (!strcmp(k, "checkpoint_dir")) FLAGS.checkpoint_dir = v;
        else return fprintf(stderr, "unknown flag --%s\n", k), 2;
#undef I
#undef L
#undef D
    }
    if (FLAGS.report_interval <= 0 || FLAGS.batch_size <= 0 || FLAGS.num_bits <= 0 || FLAGS.min_length < 1 ||
        FLAGS.max_length < FLAGS.min_length || FLAGS.min_repeats < 1 || FLAGS.max_repeats < FLAGS.min_repeats ||
        FLAGS.num_write_heads < 1 || FLAGS.num_write_heads > 16 || FLAGS.num_read_heads < 1)
        return fprintf(stderr, "bad flag values\n"), 2;
    return 0;
}

/* train(num_training_iterations, report_interval) */
static int train(int64_t num_training_iterations, int64_t report_interval) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    if (FLAGS.seed) vg_graph_set_seed(g, FLAGS.seed);
    dnc_repeat_copy dataset = {FLAGS.num_bits, FLAGS.batch_size, FLAGS.min_length, FLAGS.max_length,
                               FLAGS.min_repeats, FLAGS.max_repeats, 10.0, false, false};
    vg_output observations, target, mask;
    dnc_repeat_copy_build(g, &dataset, &observations, &target, &mask);
    dnc_train_config cfg = {FLAGS.hidden_size, FLAGS.memory_size, FLAGS.word_size, FLAGS.num_write_heads,
                            FLAGS.num_read_heads, (double)FLAGS.clip_value, FLAGS.max_grad_norm, FLAGS.learning_rate,
                            FLAGS.optimizer_epsilon, FLAGS.batch_size};
    dnc_train_graph tg;
    int rc = 1;
    vg_saver *saver = NULL;
    vg_monitored_session *sess = NULL;
    /* run_model, the loss, clipped gradients, RMSProp (train_graph.c) */
    if (dnc_train_graph_build(g, &cfg, observations, target, mask, dataset.num_bits + 1, dataset.time_average_cost,
                              dataset.log_prob_in_bits, &tg, &st) != VG_OK)
        goto done;
    vg_output output = tg.output, train_loss = tg.train_loss, global_step = tg.global_step;
    vg_op *train_step = tg.train_step;
    saver = vg_saver_new(g, NULL, &st);
    if (!saver || vg_graph_status(g, &st) != VG_OK) goto done;
    vg_hook hooks[1];
    int nhooks = 0;
    if (FLAGS.checkpoint_interval > 0) {
        vg_checkpoint_saver_options co = {0};
        co.checkpoint_dir = FLAGS.checkpoint_dir;
        co.save_steps = FLAGS.checkpoint_interval;
        co.saver = saver;
        if (vg_checkpoint_saver_hook(&co, &hooks[0], &st) != VG_OK) goto done;
        nhooks = 1;
    }
    /* train */
    vg_singular_options so = {0};
    so.hooks = hooks;
    so.nhooks = nhooks;
    so.checkpoint_dir = FLAGS.checkpoint_dir;
    sess = vg_singular_monitored_session_new(g, &so, &st);
    if (!sess) goto done;
    vg_run_args a = {0};
    vg_tensor *gs = NULL;
    a.fetches = &global_step;
    a.nfetches = 1;
    if (vg_monitored_session_run(sess, &a, &gs, NULL, &st) != VG_OK) goto done;
    int64_t start_iteration = *(const int64_t *)vg_tensor_data(gs);
    vg_tensor_free(gs);
    printf("start iteration %lld\n", (long long)start_iteration);
    double total_loss = 0, first_block = 0, last_block = 0, final_loss = 0;
    int64_t nblock_first = 0;
    vg_output fetch[1] = {train_loss};
    vg_code c = VG_OK;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t it = start_iteration, ran = 0;
    double *recent = calloc((size_t)report_interval, sizeof(double));
    for (; it < num_training_iterations && c == VG_OK && !vg_monitored_session_should_stop(sess); it++) {
        vg_tensor *loss = NULL;
        vg_run_args ra = {0};
        ra.fetches = fetch;
        ra.nfetches = 1;
        ra.targets = &train_step;
        ra.ntargets = 1;
        c = vg_monitored_session_run(sess, &ra, &loss, NULL, &st);
        if (c != VG_OK) break;
        final_loss = vg_tensor_scalar(loss);
        vg_tensor_free(loss);
        total_loss += final_loss;
        if (nblock_first < report_interval) first_block += final_loss, nblock_first++;
        recent[ran % report_interval] = final_loss;
        ran++;
        if ((it + 1) % report_interval == 0) {
            vg_output f3[4] = {observations, target, mask, output};
            vg_tensor *v[4] = {NULL, NULL, NULL, NULL};
            vg_run_args rb = {0};
            rb.fetches = f3;
            rb.nfetches = 4;
            c = vg_monitored_session_run(sess, &rb, v, NULL, &st);
            if (c == VG_OK) {
                printf("%lld: Avg training loss %f.\n", (long long)it, total_loss / (double)report_interval);
                if (!FLAGS.quiet) print_readable(v[0], v[1], v[3]);
            }
            for (int k = 0; k < 4; k++) vg_tensor_free(v[k]);
            total_loss = 0;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t nlast = ran < report_interval ? ran : report_interval;
    for (int64_t k = 0; k < nlast; k++) last_block += recent[k];
    free(recent);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    c = vg_monitored_session_end(sess, c, &st);
    if (c != VG_OK) goto done;
    if (ran > 0) {
        printf("steps %lld, %.3f ms/step\n", (long long)ran, 1e3 * secs / (double)ran);
        printf("first block loss %.6f\nlast block loss %.6f\nfinal loss %.6f\n", first_block / (double)nblock_first,
               last_block / (double)nlast, final_loss);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "dnc_train: %s: %s\n", vg_code_name(st.code), st.msg);
    vg_monitored_session_free(sess);
    vg_saver_free(saver);
    dnc_train_graph_free(&tg);
    vg_file_writer_cache_clear();
    vg_graph_free(g);
    return rc;
}

int main(int argc, char **argv) {
    int rc = parse_flags(argc, argv);
    if (rc) return rc;
    return train(FLAGS.num_training_iterations, FLAGS.report_interval);
}
