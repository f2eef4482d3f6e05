/* test_cli_train_lstm.c - `vigil train --model lstm` (docs/rnn.md): a short run of the
 * row-by-row LSTM classifier learns (loss falls), writes a checkpoint holding TF's
 * LSTMBlockFusedCell variables under rnn/, and a second command resumes from its global
 * step. Small: 2048 training images, 16 + 16 steps (each run evaluates the test set). */
#include "test_util.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_test_util.h"

#define DATA_DIR "/usr/share/datasets/fashion-mnist"

static void test_lstm_train_and_resume(void) {
    char dir[300];
    cli_tmp_path(dir, sizeof dir, "lstm");
    const char *a1[] = {"train", "--model", "lstm", "--train-limit", "2048", "--epochs", "2", "--steps", "16",
                        "--checkpoint-dir", dir, "--log-step-count-steps", "4", NULL};
    int rc = run_vigil(a1, "l1.out", "l1.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) fprintf(stderr, "%s\n", slurp("l1.err"));
    char line[256];
    const char *out = slurp("l1.out");
    CHECK_STR_CONTAINS(out, "test_accuracy=");
    CHECK_STR_CONTAINS(slurp("l1.err"), "lstm training on 2048 images");
    /* the checkpoint holds the fused cell's variables with TF's names and shapes */
    const char *a2[] = {"ckpt", dir, NULL};
    CHECK_EQ_INT(run_vigil(a2, "c.out", "c.err"), 0);
    const char *ck = slurp("c.out");
    CHECK_STR_CONTAINS(ck, "rnn/lstm_fused_cell/kernel");
    CHECK_STR_CONTAINS(ck, "rnn/lstm_fused_cell/bias");
    CHECK_STR_CONTAINS(ck, "dense/kernel");
    /* resume: the second command continues at step 16 and stops at 32 */
    const char *a3[] = {"train", "--model", "lstm", "--train-limit", "2048", "--epochs", "2", "--steps", "32",
                        "--checkpoint-dir", dir, "--log-step-count-steps", "4", NULL};
    rc = run_vigil(a3, "l2.out", "l2.err");
    CHECK_EQ_INT(rc, 0);
    const char *err = slurp("l2.err");
    CHECK_STR_CONTAINS(err, "resuming from checkpoint");
    CHECK_STR_CONTAINS(err, "at global step 16");
    CHECK_STR_CONTAINS(err, "done at step 32");
    snprintf(line, sizeof line, "%s", strstr(slurp("l2.out"), "test_accuracy=") ? "ok" : "missing");
    CHECK(!strcmp(line, "ok"));
    double acc = -1;
    const char *p = strstr(slurp("l2.out"), "test_accuracy=");
    if (p) acc = atof(p + 14);
    fprintf(stderr, "test_accuracy after 32 steps: %g\n", acc);
    CHECK(acc > 0.3 && acc <= 1.0); /* well above chance (0.1) after 32 steps */
}

static const cli_case cases[] = {
    CLI_CASE(test_lstm_train_and_resume),
};
static const cli_suite suite = {.tag = "cli_lstm", .needs_mnist = true};
CLI_TEST_MAIN(suite, cases)
