/* test_cli_train_input.c - `vigil train --input queue|tfdata|tfrecord PATH` on a
 * TFRecord file of Examples that `vigil convert` writes from a slice of Fashion-MNIST
 * (GZIP-compressed, recognised from its bytes): both pipelines train to
 * test_accuracy=; with tf.data the iterator position is checkpointed with the model
 * (the "<iterator>_position" variable equals global_step, and a run stopped at step 4
 * and resumed ends with both at the full count); errors (missing file, --train-limit
 * with queue, a bad --input kind) exit non-zero with a message. Skips (passes) when the
 * dataset or the vigil binary is absent. */
#include "test_util.h"
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif
#define DATA_DIR "/usr/share/datasets/fashion-mnist"

#include "cli_test_util.h"

static char g_rec[400];

/* A scalar int64 of the latest checkpoint in dir, via `vigil ckpt --tensor`; -1 on error. */
static long long ckpt_scalar(const char *dir, const char *name) {
    const char *args[] = {"ckpt", dir, "--tensor", name, NULL};
    if (run_vigil(args, "ckpt.out", "ckpt.err") != 0) {
        fprintf(stderr, "%s\n", slurp("ckpt.err"));
        return -1;
    }
    const char *s = slurp("ckpt.out");
    const char *nl = strchr(s, '\n');
    return nl ? atoll(nl + 1) : -1;
}

static bool ends_with_accuracy(void) { return strstr(slurp("train.out"), "test_accuracy=") != NULL; }

static void test_tfdata_resume(void) {
    char ck[400];
    cli_tmp_path(ck, sizeof ck, "ck_tfdata");
    /* 640 records, batch 64: 10 steps per epoch, 20 for 2 epochs; stop at 4 first */
    const char *a1[] = {"train", "--input", "tfdata", g_rec, "--epochs", "2", "--steps", "4", "--checkpoint-dir", ck,
                        "--save-checkpoint-steps", "2", "--threads", "2", "--quiet", NULL};
    CHECK_EQ_INT(run_vigil(a1, "train.out", "train.err"), 0);
    CHECK(ends_with_accuracy());
    CHECK_EQ_INT(ckpt_scalar(ck, "global_step"), 4);
    CHECK_EQ_INT(ckpt_scalar(ck, "Iterator_position"), 4);
    const char *a2[] = {"train", "--input", "tfrecord", g_rec, "--epochs", "2", "--checkpoint-dir", ck,
                        "--threads", "2", "--quiet", NULL};
    CHECK_EQ_INT(run_vigil(a2, "train.out", "train.err"), 0);
    if (!ends_with_accuracy()) fprintf(stderr, "%s\n", slurp("train.err"));
    CHECK(ends_with_accuracy());
    CHECK_EQ_INT(ckpt_scalar(ck, "global_step"), 20);
    CHECK_EQ_INT(ckpt_scalar(ck, "Iterator_position"), 20);
}

static void test_queue(void) {
    char ck[400];
    cli_tmp_path(ck, sizeof ck, "ck_queue");
    const char *a[] = {"train", "--input", "queue", g_rec, "--epochs", "1", "--checkpoint-dir", ck, "--threads", "2",
                       "--quiet", NULL};
    CHECK_EQ_INT(run_vigil(a, "train.out", "train.err"), 0);
    if (!ends_with_accuracy()) fprintf(stderr, "%s\n", slurp("train.err"));
    CHECK(ends_with_accuracy());
    CHECK_EQ_INT(ckpt_scalar(ck, "global_step"), 10);
}

static void test_errors(void) {
    char ck[400], missing[400];
    cli_tmp_path(ck, sizeof ck, "ck_err");
    cli_tmp_path(missing, sizeof missing, "no_such.tfrecord");
    const char *a1[] = {"train", "--input", "tfdata", missing, "--checkpoint-dir", ck, "--quiet", NULL};
    CHECK_EQ_INT(run_vigil(a1, "train.out", "train.err"), 1);
    CHECK_STR_CONTAINS(slurp("train.err"), "NOT_FOUND");
    CHECK_STR_CONTAINS(slurp("train.err"), "no_such.tfrecord");
    const char *a2[] = {"train", "--input", "queue", g_rec, "--train-limit", "100", "--checkpoint-dir", ck, NULL};
    CHECK_EQ_INT(run_vigil(a2, "train.out", "train.err"), 1);
    CHECK_STR_CONTAINS(slurp("train.err"), "--train-limit is not supported with --input queue");
    const char *a3[] = {"train", "--input", "csv", g_rec, NULL};
    CHECK_EQ_INT(run_vigil(a3, "train.out", "train.err"), 2);
    CHECK_STR_CONTAINS(slurp("train.err"), "--input needs idx, queue, tfdata or tfrecord");
    const char *a4[] = {"train", "--input", "tfdata", NULL};
    CHECK_EQ_INT(run_vigil(a4, "train.out", "train.err"), 2);
    CHECK_STR_CONTAINS(slurp("train.err"), "needs a TFRecord file");
}

static const char *skip(void) {
    return access(DATA_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0 ? "Fashion-MNIST not installed in " DATA_DIR : NULL;
}

static int setup(void) {
    cli_tmp_path(g_rec, sizeof g_rec, "train.tfrecord");
    const char *conv[] = {"convert", "--images", DATA_DIR "/train-images-idx3-ubyte.gz", "--labels",
                          DATA_DIR "/train-labels-idx1-ubyte.gz", "-o", g_rec, "--compression", "GZIP", "--limit", "640",
                          NULL};
    CHECK_EQ_INT(run_vigil(conv, "conv.out", "conv.err"), 0);
    return 0;
}

static const cli_case cases[] = {
    CLI_CASE(test_tfdata_resume),
    CLI_CASE(test_queue),
    CLI_CASE(test_errors),
};
static const cli_suite suite = {.tag = "cli_input", .skip = skip, .setup = setup};
CLI_TEST_MAIN(suite, cases)
