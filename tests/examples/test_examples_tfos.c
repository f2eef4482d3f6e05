/* test_examples_tfos.c - runs examples/tf1/tfos_mnist (the TensorFlowOnSpark
 * mnist_dist.py port, issue 12) on its self-written TFRecords (2000 images in two
 * part files, 2 epochs, 2 interleaved readers): the run must end cleanly at the end of
 * the data, the loss must fall, and the chief must leave a checkpoint and an event
 * file; the same with --format csv2 (text lines parsed by StringSplit + DecodeCSV); with --steps the StopAtStepHook ends it at that global step. */
#include "test_util.h"
#include "example_test_util.h"
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>




static char out[1 << 16];

/* Trains tfos_mnist with flags (its model directory a new one, /tmp/vg_<tag>_*): it
 * ends at the end of the data after 38 steps and the loss falls by more than 20%.
 * 2000 records x 2 epochs / batch 100 = 40 batches; the global_step fetched with
 * train_op is read before its increment, so step 0 is seen twice and the accuracy run
 * at step 0 takes two batches: 38 training steps, then OUT_OF_RANGE. With check_files,
 * the chief's checkpoint of step 38 and its event file are there too. */
static void tfos_trains_to_data_end(const char *flags, const char *tag, bool echo, bool check_files) {
    if (!ex_built(VG_BINDIR "/tfos_mnist")) return;
    char dir[64], cmd[512];
    CHECK(tu_mkdtemp(dir, sizeof dir, tag)[0] != 0);
    snprintf(cmd, sizeof cmd, VG_BINDIR "/tfos_mnist %s--model %s 2>&1", flags, dir);
    CHECK_EQ_INT(ex_run(cmd, out, sizeof out, 0, NULL), 0);
    if (echo) fputs(out, stderr);
    CHECK_EQ_INT((int)ex_value_after(out, "\nsteps "), 38);
    double first = ex_value_after(out, "first loss "), last = ex_value_after(out, "final loss ");
    CHECK(isfinite(first) && isfinite(last));
    CHECK(last < 0.8 * first);
    if (check_files) {
        CHECK(ex_dir_has(dir, "model.ckpt-38.index"));
        CHECK(ex_dir_has(dir, "events.out.tfevents"));
    }
    CHECK(tu_rmrf(dir) == 0);
}

static void test_examples_tfos__loss_falls_and_ends_at_data_end(void) {
    tfos_trains_to_data_end("", "tfos_test", true, true);
}

/* --format csv2: TextLineDataset lines "label|pixels", _parse_csv with StringSplit,
 * a 784-column DecodeCSV, StringToNumber and one_hot */
static void test_examples_tfos__csv2(void) { tfos_trains_to_data_end("--format csv2 ", "tfos_csv", false, false); }

static void test_examples_tfos__stop_at_step_hook(void) {
    if (!ex_built(VG_BINDIR "/tfos_mnist")) return;
    CHECK_EQ_INT(ex_run(VG_BINDIR "/tfos_mnist --steps 12 2>&1", out, sizeof out, 0, NULL), 0);
    CHECK_EQ_INT((int)ex_value_after(out, "\nsteps "), 12);
    CHECK_STR_CONTAINS(out, "step 11 loss"); /* the global step before the 12th increment */
    CHECK(strstr(out, "step 12 loss") == NULL);
}

static void test_examples_tfos__bad_flags(void) {
    if (!ex_built(VG_BINDIR "/tfos_mnist")) return;
    CHECK_EQ_INT(ex_run(VG_BINDIR "/tfos_mnist --batch_size 0 2>&1", out, sizeof out, 0, NULL), 2);
    CHECK_STR_CONTAINS(out, "must be positive");
    CHECK_EQ_INT(ex_run(VG_BINDIR "/tfos_mnist --format csv 2>&1", out, sizeof out, 0, NULL), 2);
    CHECK_STR_CONTAINS(out, "must be tfr or csv2");
    /* a directory without part-* files: list_files' run-time INVALID_ARGUMENT, exit 1 */
    char dir[64], cmd[512];
    CHECK(tu_mkdtemp(dir, sizeof dir, "tfos_empty")[0] != 0);
    snprintf(cmd, sizeof cmd, VG_BINDIR "/tfos_mnist --images_labels %s --model %s 2>&1", dir, dir);
    CHECK_EQ_INT(ex_run(cmd, out, sizeof out, 0, NULL), 1);
    CHECK_STR_CONTAINS(out, "No files matched pattern");
    CHECK(tu_rmrf(dir) == 0);
}

int main(void) {
    RUN_TEST(test_examples_tfos__loss_falls_and_ends_at_data_end);
    RUN_TEST(test_examples_tfos__csv2);
    RUN_TEST(test_examples_tfos__stop_at_step_hook);
    RUN_TEST(test_examples_tfos__bad_flags);
    TEST_MAIN_END();
}
