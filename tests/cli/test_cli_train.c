/* test_cli_train.c - `vigil train` end to end on a slice of Fashion-MNIST: the loss
 * falls (read back from the event files with `vigil events`), test_accuracy= is the
 * last stdout line, the outputs exist (checkpoints, checkpoint, graph.pbtxt, .meta,
 * event files with loss/accuracy/global_step/sec and kernel histograms), a rerun
 * resumes the global step without re-initialising and honours the epoch count, and a
 * missing data directory is a clear error. Skips (passes) when the dataset or the
 * vigil binary is absent. */
#include "io/io.h"
#include "test_util.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif
#define DATA_DIR "/usr/share/datasets/fashion-mnist"

#include "cli_test_util.h"

/* The last non-empty line of a file. */
static void last_line(const char *name, char *line, size_t len) {
    const char *s = slurp(name);
    size_t n = strlen(s);
    while (n && s[n - 1] == '\n') n--;
    size_t b = n;
    while (b && s[b - 1] != '\n') b--;
    snprintf(line, len, "%.*s", (int)(n - b), s + b);
}

/* Values of one scalar tag in step order, via `vigil events --tags`. */
static int scalars(const char *dir, const char *tag, double *v, long long *steps, int cap) {
    const char *args[] = {"events", dir, "--tags", tag, NULL};
    CHECK_EQ_INT(run_vigil(args, "events.out", "events.err"), 0);
    const char *s = slurp("events.out");
    int n = 0;
    const char *p = strchr(s, '\n'); /* header */
    CHECK(!strncmp(s, "step\twall_time\ttag\tvalue\n", 25));
    while (p && *++p && n < cap) {
        long long step;
        double wall, val;
        char t[128];
        if (sscanf(p, "%lld\t%lf\t%127[^\t]\t%lf", &step, &wall, t, &val) == 4 && !strcmp(t, tag)) {
            steps[n] = step;
            v[n++] = val;
        }
        p = strchr(p, '\n');
    }
    return n;
}

static bool file_exists(const char *dir, const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Histogram values named tag in the event files of dir (read with the io layer). */
static int count_histograms(const char *dir, const char *tag) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, "tfevents")) continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        vg_status st;
        vg__event_reader *r = vg__event_reader_open(p, &st);
        if (!r) continue;
        vg__event_info ev;
        while (vg__event_reader_next(r, &ev, &st) == VG_OK) {
            if (ev.kind != VG__EVENT_SUMMARY) continue;
            vg__summary_iter it;
            vg__summary_iter_init(&it, ev.payload, ev.payload_len);
            vg__summary_value v;
            while (vg__summary_next(&it, &v, &st) == VG_OK)
                if (v.kind == VG__VALUE_HISTO && v.tag_len == strlen(tag) && !memcmp(v.tag, tag, v.tag_len)) count++;
        }
        vg__event_reader_close(r);
    }
    closedir(d);
    return count;
}

#define TRAIN_ARGS(dir) "train", "--train-limit", "2048", "--epochs", "2", "--batch-size", "64", "--model", "mlp", \
    "--checkpoint-dir", dir, "--save-summaries-steps", "4", "--log-step-count-steps", "16"

/* A short run: loss falls, test_accuracy= last, outputs present. */
static void test_cli_train__short_run(void) {
    char dir[300];
    cli_tmp_path(dir, sizeof dir, "run1");
    const char *args[] = {TRAIN_ARGS(dir), NULL};
    int rc = run_vigil(args, "train.out", "train.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) dump("train.err");
    char line[256];
    last_line("train.out", line, sizeof line);
    double acc = -1;
    CHECK(sscanf(line, "test_accuracy=%lf", &acc) == 1);
    CHECK(acc > 0.5 && acc <= 1.0);
    /* plain log lines (stdout is not a terminal): LoggingTensorHook + StepCounterHook */
    const char *err = slurp("train.err");
    CHECK_STR_CONTAINS(err, "INFO: loss = ");
    CHECK_STR_CONTAINS(err, "global_step/sec: ");
    /* outputs */
    CHECK(file_exists(dir, "checkpoint"));
    CHECK(file_exists(dir, "graph.pbtxt"));
    CHECK(file_exists(dir, "model.ckpt-64.index"));
    CHECK(file_exists(dir, "model.ckpt-64.data-00000-of-00001"));
    CHECK(file_exists(dir, "model.ckpt-64.meta"));
    CHECK_EQ_INT(ckpt_step(dir), 64);
    /* the loss falls: last logged loss below the first */
    double v[256];
    long long steps[256];
    int n = scalars(dir, "loss", v, steps, 256);
    CHECK(n >= 10);
    if (n >= 2) {
        fprintf(stderr, "loss %g (step %lld) -> %g (step %lld)\n", v[0], steps[0], v[n - 1], steps[n - 1]);
        CHECK(v[n - 1] < v[0]);
        CHECK(v[0] > 1.5); /* near ln(10) at the start */
    }
    CHECK(scalars(dir, "accuracy", v, steps, 256) >= 10);
    CHECK(scalars(dir, "global_step/sec", v, steps, 256) >= 1);
    CHECK(count_histograms(dir, "weights/dense") >= 1);
    CHECK(count_histograms(dir, "weights/dense_2") >= 1);
}

/* --steps 40, then the same command without --steps: the global step continues from
 * 40 (no re-initialisation: the first loss of the second run is already low) and stops
 * at exactly epochs * steps_per_epoch = 64. A third run only evaluates. */
static void test_cli_train__resume(void) {
    char dir[300];
    cli_tmp_path(dir, sizeof dir, "run2");
    const char *a1[] = {TRAIN_ARGS(dir), "--steps", "40", NULL};
    CHECK_EQ_INT(run_vigil(a1, "r1.out", "r1.err"), 0);
    CHECK_EQ_INT(ckpt_step(dir), 40);
    double v1[64], v2[64];
    long long s1[64], s2[64];
    int n1 = scalars(dir, "loss", v1, s1, 64);
    const char *a2[] = {TRAIN_ARGS(dir), NULL};
    int rc = run_vigil(a2, "r2.out", "r2.err");
    CHECK_EQ_INT(rc, 0);
    const char *err = slurp("r2.err");
    CHECK_STR_CONTAINS(err, "resuming from checkpoint");
    CHECK_STR_CONTAINS(err, "at global step 40 (1 complete epochs)");
    if (rc) dump("r2.err");
    CHECK_EQ_INT(ckpt_step(dir), 64);
    char line[256];
    last_line("r2.out", line, sizeof line);
    CHECK(!strncmp(line, "test_accuracy=", 14));
    /* events of both runs: the second run's first loss (step > 40) is far below the
     * first run's first loss (a re-initialised model would start near 2.3) */
    int n2 = scalars(dir, "loss", v2, s2, 64);
    CHECK(n1 >= 5 && n2 > n1);
    if (n1 >= 1 && n2 > n1) {
        CHECK(s2[n1] > 40);
        fprintf(stderr, "first loss run 1: %g; run 2 (step %lld): %g\n", v1[0], s2[n1], v2[n1]);
        CHECK(v2[n1] < v1[0] - 0.5);
    }
    /* a third run: nothing left to train; evaluates the checkpoint */
    CHECK_EQ_INT(run_vigil(a2, "r3.out", "r3.err"), 0);
    CHECK_STR_CONTAINS(slurp("r3.err"), "already trained to step 64");
    last_line("r3.out", line, sizeof line);
    CHECK(!strncmp(line, "test_accuracy=", 14));
    CHECK_EQ_INT(ckpt_step(dir), 64);
}

static void test_cli_train__errors(void) {
    char dir[300];
    cli_tmp_path(dir, sizeof dir, "run3");
    const char *a1[] = {"train", "--data-dir", "/nonexistent/fmnist", "--checkpoint-dir", dir, NULL};
    CHECK_EQ_INT(run_vigil(a1, "e.out", "e.err"), 1);
    CHECK_STR_CONTAINS(slurp("e.err"), "/nonexistent/fmnist");
    const char *a2[] = {"train", "--model", "rnn", NULL};
    CHECK_EQ_INT(run_vigil(a2, "e.out", "e.err"), 2);
    CHECK_STR_CONTAINS(slurp("e.err"), "--model");
    const char *a3[] = {"train", "--epochs", "x", NULL};
    CHECK_EQ_INT(run_vigil(a3, "e.out", "e.err"), 2);
    const char *a4[] = {"train", "--save-checkpoint-steps", "5", "--save-checkpoint-secs", "5", NULL};
    CHECK_EQ_INT(run_vigil(a4, "e.out", "e.err"), 2);
    const char *a4b[] = {"train", "--compression", "fp8", NULL}; /* issue 33's wire options */
    CHECK_EQ_INT(run_vigil(a4b, "e.out", "e.err"), 2);
    CHECK_STR_CONTAINS(slurp("e.err"), "--compression needs none or fp16");
    const char *a4c[] = {"train", "--fusion-threshold-mb", "-1", NULL};
    CHECK_EQ_INT(run_vigil(a4c, "e.out", "e.err"), 2);
    CHECK_STR_CONTAINS(slurp("e.err"), "--fusion-threshold-mb");
    /* a library error is "vigil: <CODE>: <message>", exit 1: a CNN on an MLP checkpoint */
    char prev[300];
    cli_tmp_path(prev, sizeof prev, "run1");
    const char *a5[] = {"train", "--model", "cnn", "--train-limit", "2048", "--epochs", "3", "--checkpoint-dir",
                        prev, NULL};
    CHECK_EQ_INT(run_vigil(a5, "e.out", "e.err"), 1);
    CHECK_STR_CONTAINS(slurp("e.err"), "vigil: NOT_FOUND: ");
}

static const cli_case cases[] = {
    CLI_CASE(test_cli_train__short_run),
    CLI_CASE(test_cli_train__resume),
    CLI_CASE(test_cli_train__errors),
};
static const cli_suite suite = {.tag = "cli_train", .needs_mnist = true};
CLI_TEST_MAIN(suite, cases)
