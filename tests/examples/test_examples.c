/* test_examples.c - runs the example programs (built to VG_BINDIR/<name> when
 * VIGIL_EXAMPLES is on) and checks that each exits 0 and prints a final loss below
 * its threshold. When the examples were not built, the test says so and passes. */
#include "test_util.h"
#include <sys/wait.h>
#include <unistd.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif

/* Runs path; returns its exit status (-1 if it could not run) and the value printed
 * on its "final loss" line in *loss (NAN if none). */
static int run_example(const char *path, double *loss) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' 2>&1", path);
    *loss = NAN;
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        fputs(line, stderr);
        double v;
        if (sscanf(line, "final loss %lf", &v) == 1) *loss = v;
    }
    int status = pclose(f);
    if (status == -1 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static int skipped = 0;

static void check_example(const char *name, double threshold) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", VG_BINDIR, name);
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "SKIP %s: %s not built (configure with -DVIGIL_EXAMPLES=ON)\n", name, path);
        skipped++;
        return;
    }
    double loss;
    int rc = run_example(path, &loss);
    CHECK_EQ_INT(rc, 0);
    CHECK(!isnan(loss));
    CHECK(loss < threshold);
    fprintf(stderr, "%s: exit %d, final loss %g (threshold %g)\n", name, rc, loss, threshold);
}

static void test_examples__logreg(void) { check_example("logreg", 0.1); }
static void test_examples__mlp_synthetic(void) { check_example("mlp_synthetic", 0.05); }
/* tensorflow/ecosystem docker/mnist.py: TFRecord queue input, 3 epochs, ends at data end */
static void test_examples__ecosystem_mnist(void) { check_example("ecosystem_mnist", 0.5); }
/* magenta sequence_example_lib: SequenceExamples, shuffle queue, dynamic-padded batches */
static void test_examples__magenta_sequence_example(void) { check_example("magenta_sequence_example", 0.3); }

int main(void) {
    RUN_TEST(test_examples__logreg);
    RUN_TEST(test_examples__mlp_synthetic);
    RUN_TEST(test_examples__ecosystem_mnist);
    RUN_TEST(test_examples__magenta_sequence_example);
    if (skipped) fprintf(stderr, "%d example(s) skipped\n", skipped);
    TEST_MAIN_END();
}
