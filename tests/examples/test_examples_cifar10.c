/* test_examples_cifar10.c - runs the CIFAR-10 port (examples/tf1/cifar10) with small
 * sizes on Fashion-MNIST written in CIFAR-10's binary format: cifar10_train must exit
 * 0 with its loss falling and a checkpoint holding exactly the variable names TF gives
 * this graph; cifar10_eval must restore the ExponentialMovingAverage shadows into the
 * model's variables (variables_to_restore) and report precision @ 1. Skips when the
 * examples were not built or Fashion-MNIST is not installed. */
#include "test_util.h"
#include "example_test_util.h"
#include "vigil/vigil.h"
#include <sys/wait.h>
#include <unistd.h>

#define DATA_DIR "/usr/share/datasets/fashion-mnist"

static char g_dir[512];
static char g_out[1 << 16];

static int run(const char *cmd) { return ex_run(cmd, g_out, sizeof g_out, EX_STDERR | EX_ECHO, "is illegal; using"); }

static void test_cifar10_train_and_eval(void) {
    char train[1024], eval[1024], cmd[4096];
    snprintf(train, sizeof train, "%s/cifar10_train", VG_BINDIR);
    snprintf(eval, sizeof eval, "%s/cifar10_eval", VG_BINDIR);
    if (access(train, X_OK) != 0 || access(eval, X_OK) != 0) {
        fprintf(stderr, "SKIP: cifar10 examples not built (-DVIGIL_EXAMPLES=ON)\n");
        return;
    }
    if (access(DATA_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        fprintf(stderr, "SKIP: Fashion-MNIST not installed in %s (Debian package dataset-fashion-mnist)\n", DATA_DIR);
        return;
    }
    snprintf(cmd, sizeof cmd,
             "'%s' --data_dir %s/data --train_dir %s/train --max_steps 60 --batch_size 16 --limit 1000 "
             "--num_preprocess_threads 4",
             train, g_dir, g_dir);
    CHECK_EQ_INT(run(cmd), 0);
    double first = NAN, final = NAN;
    const char *p = strstr(g_out, "first loss ");
    if (p) sscanf(p, "first loss %lf", &first);
    p = strstr(g_out, "final loss ");
    if (p) sscanf(p, "final loss %lf", &final);
    /* the means of the first and of the last 10 steps */
    fprintf(stderr, "cifar10_train: first loss %g, final loss %g\n", first, final);
    CHECK(!isnan(first) && !isnan(final) && final < first);
    CHECK(strstr(g_out, "step 10, loss = ") != NULL);

    /* the checkpoint: TF's names for cifar10_train.py's graph */
    static const char *expected[] = {
        "Variable",
        "conv1/biases", "conv1/biases/ExponentialMovingAverage", "conv1/weight_loss/avg", "conv1/weights",
        "conv1/weights/ExponentialMovingAverage",
        "conv2/biases", "conv2/biases/ExponentialMovingAverage", "conv2/weight_loss/avg", "conv2/weights",
        "conv2/weights/ExponentialMovingAverage",
        "cross_entropy/avg",
        "local3/biases", "local3/biases/ExponentialMovingAverage", "local3/weight_loss/avg", "local3/weights",
        "local3/weights/ExponentialMovingAverage",
        "local4/biases", "local4/biases/ExponentialMovingAverage", "local4/weight_loss/avg", "local4/weights",
        "local4/weights/ExponentialMovingAverage",
        "softmax_linear/biases", "softmax_linear/biases/ExponentialMovingAverage", "softmax_linear/weight_loss/avg",
        "softmax_linear/weights", "softmax_linear/weights/ExponentialMovingAverage",
        "total_loss/avg",
    };
    int ne = (int)(sizeof expected / sizeof expected[0]);
    vg_status st;
    vg_checkpoint_reader *r = ex_open_ckpt(g_dir, "train/model.ckpt-59", &st);
    if (r) {
        ex_check_ckpt_keys(r, expected, ne);
        /* the averages differ from the variables they shadow (a real EMA) */
        vg_tensor *b = vg_checkpoint_reader_read(r, "local4/weights", &st);
        vg_tensor *a = vg_checkpoint_reader_read(r, "local4/weights/ExponentialMovingAverage", &st);
        CHECK(a && b && memcmp(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_nbytes(a)) != 0);
        vg_tensor_free(a);
        vg_tensor_free(b);
        vg_checkpoint_reader_free(r);
    }

    snprintf(cmd, sizeof cmd,
             "'%s' --data_dir %s/data --checkpoint_dir %s/train --eval_dir %s/eval --run_once --num_examples 64 "
             "--batch_size 16 --num_preprocess_threads 2",
             eval, g_dir, g_dir, g_dir);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_STR_CONTAINS(g_out, "Restoring parameters from");
    CHECK_STR_CONTAINS(g_out, "restore conv1/weights <- conv1/weights/ExponentialMovingAverage");
    CHECK_STR_CONTAINS(g_out, "restore softmax_linear/biases <- softmax_linear/biases/ExponentialMovingAverage");
    CHECK_STR_CONTAINS(g_out, "precision @ 1 = ");
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "cifar10")[0]) return 1;
    RUN_TEST(test_cifar10_train_and_eval);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
