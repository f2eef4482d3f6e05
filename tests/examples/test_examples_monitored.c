/* test_examples_monitored.c - runs the seed's two examples (issue item 8): the
 * SingularMonitoredSession loop with checkpoint and summary hooks (twice: the second run
 * resumes from the checkpoint) and the run_step_fn example. */
#include "test_util.h"
#include "example_test_util.h"
#include <stdlib.h>
#include <unistd.h>


static void test_examples__monitored_basic_and_resume(void) {
    char dir[64], cmd[512], out[4096];
    CHECK(tu_mkdtemp(dir, sizeof dir, "ex")[0] != 0);
    snprintf(cmd, sizeof cmd, VG_BINDIR "/monitored_basic %s 200", dir);
    CHECK_EQ_INT(ex_run(cmd, out, sizeof out, 0, NULL), 0);
    CHECK_STR_CONTAINS(out, "final_step=200");
    /* the second run restores step 200 and stops at 200 + 100 */
    snprintf(cmd, sizeof cmd, VG_BINDIR "/monitored_basic %s 100", dir);
    CHECK_EQ_INT(ex_run(cmd, out, sizeof out, 0, NULL), 0);
    CHECK_STR_CONTAINS(out, "final_step=300");
    CHECK(ex_dir_has(dir, "model.ckpt-300.index"));
    CHECK(ex_dir_has(dir, "events.out.tfevents"));
    CHECK(tu_rmrf(dir) == 0);
}

static void test_examples__step_fn(void) {
    char out[1024];
    CHECK_EQ_INT(ex_run(VG_BINDIR "/step_fn", out, sizeof out, 0, NULL), 0);
    CHECK_STR_CONTAINS(out, "result=0.6 iterations=1 hook_runs=1");
}

int main(void) {
    RUN_TEST(test_examples__monitored_basic_and_resume);
    RUN_TEST(test_examples__step_fn);
    TEST_MAIN_END();
}
