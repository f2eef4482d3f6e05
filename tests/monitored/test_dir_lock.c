/* test_dir_lock.c - the library's guards on a checkpoint directory (vigil additions; TF
 * has neither): one trainer per directory (vg_checkpoint_dir_lock_acquire, taken by the
 * chief's session creator of MonitoredTrainingSession / SingularMonitoredSession) —
 * a second session in this process, a second process (fork), release on free and when
 * the holder dies, workers and no_checkpoint_dir_lock not locking — and a corrupt
 * "checkpoint" state file failing session creation with DATA_LOSS instead of a silent
 * start from scratch. */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"
#include <signal.h>
#include <sys/wait.h>

static vg_monitored_session *mts_on(vg_graph *g, const char *dir, bool no_lock, vg_status *st) {
    vg_mts_options o = {0};
    o.checkpoint_dir = dir;
    o.no_summaries = true;
    o.no_step_counter = true;
    o.no_checkpoint_dir_lock = no_lock;
    return vg_monitored_training_session_new(g, &o, st);
}

static void close_ms(vg_monitored_session *ms) {
    if (!ms) return;
    ht_close_session(ms);
}

static void pid_str(char *buf, size_t len, long pid) { snprintf(buf, len, "(pid %ld", pid); }

/* The lock API alone: the pid file while held, the same directory refused in this
 * process, released (pid file gone) and taken again; missing parents are created; a
 * regular file is no directory. */
static void test_dir_lock__api(void) {
    char dir[64], sub[128], pidfile[200], want[64];
    tu_mkdtemp(dir, sizeof dir, "dirlock");
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    vg_status st;
    vg_dir_lock *l = vg_checkpoint_dir_lock_acquire(sub, &st);
    CHECK(l != NULL);
    snprintf(pidfile, sizeof pidfile, "%s/.vigil-train.pid", sub);
    FILE *f = fopen(pidfile, "r");
    long got = -1;
    CHECK(f != NULL);
    if (f) {
        CHECK(fscanf(f, "%ld", &got) == 1);
        fclose(f);
    }
    CHECK_EQ_INT(got, (long)getpid());
    CHECK(vg_checkpoint_dir_lock_acquire(sub, &st) == NULL);
    CHECK_CODE(st.code, VG_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(st.msg, sub);
    pid_str(want, sizeof want, (long)getpid());
    CHECK_STR_CONTAINS(st.msg, want);
    CHECK_STR_CONTAINS(st.msg, "this process");
    vg_checkpoint_dir_lock_release(l);
    CHECK(access(pidfile, F_OK) != 0);
    l = vg_checkpoint_dir_lock_acquire(sub, &st);
    CHECK(l != NULL);
    vg_checkpoint_dir_lock_release(l);
    vg_checkpoint_dir_lock_release(NULL);
    char file[200];
    snprintf(file, sizeof file, "%s/plain", dir);
    f = fopen(file, "w");
    if (f) fclose(f);
    CHECK(vg_checkpoint_dir_lock_acquire(file, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "not a directory");
    CHECK(vg_checkpoint_dir_lock_acquire("", &st) == NULL);
    CHECK_CODE(st.code, VG_INVALID_ARGUMENT);
    tu_rmrf(dir);
}

/* Two MonitoredTrainingSessions on one directory in one process: the second fails at
 * once naming the directory and the holder; after the first is freed a new one starts
 * (and restores what the first saved). no_checkpoint_dir_lock turns the guard off. */
static void test_dir_lock__two_sessions_one_process(void) {
    char dir[64], want[64];
    tu_mkdtemp(dir, sizeof dir, "dirlock2");
    vg_status st;
    ht_model m = ht_model_make();
    vg_monitored_session *a = mts_on(m.g, dir, false, &st);
    CHECK(a != NULL);
    if (a) CHECK_OK(ht_run_train(a, &m, &st), &st);
    vg_monitored_session *b = mts_on(m.g, dir, false, &st);
    CHECK(b == NULL);
    CHECK_CODE(st.code, VG_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(st.msg, dir);
    pid_str(want, sizeof want, (long)getpid());
    CHECK_STR_CONTAINS(st.msg, want);
    /* SingularMonitoredSession is refused the same way */
    vg_singular_options so = {0};
    so.checkpoint_dir = dir;
    CHECK(vg_singular_monitored_session_new(m.g, &so, &st) == NULL);
    CHECK_CODE(st.code, VG_FAILED_PRECONDITION);
    /* the guard off: a second session may share the directory */
    b = mts_on(m.g, dir, true, &st);
    CHECK(b != NULL);
    close_ms(b);
    close_ms(a); /* end() saves step 1; free releases the lock */
    b = mts_on(m.g, dir, false, &st);
    CHECK(b != NULL);
    if (b) {
        vg_run_args ra = {0};
        vg_tensor *out[1] = {NULL};
        ra.fetches = &m.gs;
        ra.nfetches = 1;
        CHECK_OK(vg_monitored_session_run(b, &ra, out, NULL, &st), &st);
        if (out[0]) CHECK_EQ_INT(*(const int64_t *)vg_tensor_data(out[0]), 1);
        vg_tensor_free(out[0]);
    }
    close_ms(b);
    ht_cleanup(NULL, m.g, dir);
}

/* A worker (is_chief false) never locks: it starts while the chief's lock is held. */
static void test_dir_lock__worker_does_not_lock(void) {
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "dirlockw");
    vg_status st;
    vg_dir_lock *chief = vg_checkpoint_dir_lock_acquire(dir, &st);
    CHECK(chief != NULL);
    vg_graph *g = vg_graph_new();
    vg_const_f32(g, 1.0f, "c"); /* no variables: a worker finds the model ready at once */
    vg_mts_options o = {0};
    o.not_chief = true;
    o.checkpoint_dir = dir;
    vg_monitored_session *w = vg_monitored_training_session_new(g, &o, &st);
    if (!w) fprintf(stderr, "worker: %s\n", st.msg);
    CHECK(w != NULL);
    close_ms(w);
    vg_checkpoint_dir_lock_release(chief);
    ht_cleanup(NULL, g, dir);
}

/* A second process: a child holds the directory through its MonitoredTrainingSession;
 * this process fails at once with the child's pid; once the child is killed (SIGKILL:
 * no clean-up) the kernel has dropped the lock and a session starts here. */
static void test_dir_lock__second_process(void) {
    char dir[64], want[64];
    tu_mkdtemp(dir, sizeof dir, "dirlockp");
    int ready[2];
    CHECK(pipe(ready) == 0);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        vg_status cst;
        ht_model cm = ht_model_make();
        vg_monitored_session *ms = mts_on(cm.g, dir, false, &cst);
        char c = ms ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1) _exit(3);
        for (;;) pause();
    }
    close(ready[1]);
    char c = 0;
    CHECK(read(ready[0], &c, 1) == 1);
    close(ready[0]);
    CHECK(c == 'y');
    vg_status st;
    ht_model m = ht_model_make();
    double t0 = ht_wall();
    vg_monitored_session *ms = mts_on(m.g, dir, false, &st);
    CHECK(ms == NULL);
    CHECK(ht_wall() - t0 < 10);
    CHECK_CODE(st.code, VG_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(st.msg, dir);
    snprintf(want, sizeof want, "(pid %ld)", (long)child);
    CHECK_STR_CONTAINS(st.msg, want);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ms = mts_on(m.g, dir, false, &st);
    if (!ms) fprintf(stderr, "after the holder died: %s\n", st.msg);
    CHECK(ms != NULL);
    close_ms(ms);
    ht_cleanup(NULL, m.g, dir);
}

/* A "checkpoint" state file that exists but cannot be parsed: creating the session fails
 * with DATA_LOSS naming it (never a fresh start that later overwrites the run), and the
 * failed creation leaves the directory unlocked. */
static void test_dir_lock__corrupt_state_file(void) {
    char dir[64], state[128];
    tu_mkdtemp(dir, sizeof dir, "dirlockc");
    snprintf(state, sizeof state, "%s/checkpoint", dir);
    FILE *f = fopen(state, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite("\x9f\x01\xffgarbage\x80", 1, 11, f);
        fclose(f);
    }
    vg_status st;
    ht_model m = ht_model_make();
    vg_monitored_session *ms = mts_on(m.g, dir, false, &st);
    CHECK(ms == NULL);
    CHECK_CODE(st.code, VG_DATA_LOSS);
    CHECK_STR_CONTAINS(st.msg, state);
    vg_singular_options so = {0};
    so.checkpoint_dir = dir;
    CHECK(vg_singular_monitored_session_new(m.g, &so, &st) == NULL);
    CHECK_CODE(st.code, VG_DATA_LOSS);
    CHECK_STR_CONTAINS(st.msg, state);
    CHECK(!ht_exists(dir, "model.ckpt-0.index")); /* nothing was saved over it */
    vg_dir_lock *l = vg_checkpoint_dir_lock_acquire(dir, &st);
    CHECK(l != NULL);
    vg_checkpoint_dir_lock_release(l);
    /* removed: a fresh start */
    unlink(state);
    ms = mts_on(m.g, dir, false, &st);
    CHECK(ms != NULL);
    close_ms(ms);
    ht_cleanup(NULL, m.g, dir);
}

int main(void) {
    vg_log_set(NULL, NULL, VG_LOG_WARN);
    RUN_TEST(test_dir_lock__second_process); /* first: fork before this process starts any thread */
    RUN_TEST(test_dir_lock__api);
    RUN_TEST(test_dir_lock__two_sessions_one_process);
    RUN_TEST(test_dir_lock__worker_does_not_lock);
    RUN_TEST(test_dir_lock__corrupt_state_file);
    TEST_MAIN_END();
}
