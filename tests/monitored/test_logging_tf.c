/* test_logging_tf.c - logging as TF 1.15 does it: with no sink set, INFO goes to stderr
 * (Python's logging default, so LoggingTensorHook is visible), and TF's lines are logged
 * at the same moments: "Graph was finalized." (Scaffold.finalize), "Restoring parameters
 * from <path>" (Saver.restore), "Running local_init_op." / "Done running
 * local_init_op." (SessionManager._try_run_local_init_op), "Saving checkpoints for N
 * into <path>." (CheckpointSaverHook._save). Mirrors the log assertions of
 * monitored_session_test.py / basic_session_run_hooks_test.py (test_save_secs_saves_in_
 * first_step's "Saving checkpoints" line) through the log callback. */
#include "test_util.h"
#include "hook_test_util.h"
#include <fcntl.h>

/* no vg_log_set yet: INFO reaches stderr in "INFO:vigil:<msg>" form; WARN too */
static void test_logging__default_sink_is_stderr(void) {
    char path[] = "/tmp/vg_logXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    vg_logf(VG_LOG_INFO, "loss = %g, step = %d", 0.25, 10);
    vg_logf(VG_LOG_WARN, "careful");
    vg_logf(VG_LOG_DEBUG, "hidden");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[256] = {0};
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unlink(path);
    CHECK(n > 0);
    CHECK(!strcmp(buf, "INFO:vigil:loss = 0.25, step = 10\nWARNING:vigil:careful\n"));
}

static const char *after(const char *hay, const char *needle) {
    const char *p = hay ? strstr(hay, needle) : NULL;
    if (!p) fprintf(stderr, "log line missing (in order): %s\n", needle);
    return p ? p + strlen(needle) : NULL;
}

static void test_logging__tf_lines_in_order(void) {
    vg_status st;
    char dir[64], line[512];
    tu_mkdtemp(dir, sizeof dir, "log");
    for (int round = 0; round < 2; round++) {
        ht_model m = ht_model_make();
        vg_variable loc = vg_get_variable(m.g, "loc", VG_FLOAT, NULL, 0, vg_init_zeros(), VG_VAR_LOCAL);
        (void)loc;
        vg_checkpoint_saver_options o = {0};
        o.checkpoint_dir = dir;
        o.save_steps = 100;
        vg_hook h;
        CHECK_OK(vg_checkpoint_saver_hook(&o, &h, &st), &st);
        ht_log_capture();
        vg_monitored_session *ms = ht_singular(m.g, NULL, dir, &h, 1, &st);
        if (!ms) return;
        for (int i = 0; i < 3; i++) CHECK_OK(ht_run_train(ms, &m, &st), &st);
        CHECK_OK(ht_end_free(ms, &st), &st);
        const char *p = ht_log_buf;
        p = after(p, "Graph was finalized.\n");
        if (round == 1) {
            snprintf(line, sizeof line, "Restoring parameters from %s/model.ckpt-3\n", dir);
            p = after(p, line);
        } else {
            CHECK(strstr(ht_log_buf, "Restoring parameters") == NULL);
        }
        p = after(p, "Running local_init_op.\n");
        p = after(p, "Done running local_init_op.\n");
        snprintf(line, sizeof line, "Saving checkpoints for %d into %s/model.ckpt.\n", round * 3, dir);
        p = after(p, line);
        snprintf(line, sizeof line, "Saving checkpoints for %d into %s/model.ckpt.\n", round * 3 + 3, dir);
        p = after(p, line);
        CHECK(p != NULL);
        ht_log_release();
        vg_graph_free(m.g);
        vg_file_writer_cache_clear();
    }
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_logging__default_sink_is_stderr); /* first: before any vg_log_set */
    RUN_TEST(test_logging__tf_lines_in_order);
    TEST_MAIN_END();
}
