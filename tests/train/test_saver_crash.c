/* test_saver_crash.c - crash safety of vg_saver_save: a child process resumes from the
 * latest checkpoint and saves in a loop (the variables hold the step number before each
 * save); the parent SIGKILLs it at a random moment, 60 times, reusing the same
 * directory so that kills land in every phase (data, index, .meta, state file, deletion
 * of old checkpoints, restore at start-up). After every kill, latest_checkpoint must
 * restore cleanly and hold exactly the step its path names, and the latest step never
 * goes backwards.
 *
 * Timing: the child reports the start and end of each save through a pipe. The parent
 * kills it during start-up, or lets it finish 0-1 saves and kills it after a random
 * delay of 0-20 ms, or of 0 to the longest save time seen so far (at most 100 ms) when
 * saves take longer (each save fsyncs several times, which can take 5-150 ms on a busy
 * disk), so the kill may land anywhere in a save rather than only in its first fsync. */
#include "test_util.h"
#include "vigil/ops.h"
#include "vigil/saver.h"
#include "vigil/session.h"
#include "vigil/variables.h"
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NW 16384 /* floats in w */
#define KILLS 60

static char g_dir[64];
static int g_pipe[2];

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Child -> parent: 'S' at the start of a save, 'E' + duration (ms, double) at its end. */
static void report(char what, double ms) {
    char msg[1 + sizeof(double)];
    msg[0] = what;
    memcpy(msg + 1, &ms, sizeof ms);
    if (write(g_pipe[1], msg, sizeof msg) < 0) _exit(7);
}


typedef struct model {
    vg_graph *g;
    vg_variable w, step;
    vg_output w_in, step_in;
    vg_op *set, *init;
    vg_saver *saver;
    vg_session *sess;
} model;

static int model_build(model *m) {
    vg_status st;
    int64_t n = NW;
    m->g = vg_graph_new();
    m->w = vg_get_variable(m->g, "w", VG_FLOAT, &n, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    m->step = vg_get_variable(m->g, "step", VG_INT64, NULL, 0, vg_init_zeros(), 0);
    m->w_in = vg_placeholder(m->g, VG_FLOAT, &n, 1, "w_in");
    m->step_in = vg_placeholder(m->g, VG_INT64, NULL, 0, "step_in");
    vg_op *a[2] = {vg_assign(m->g, m->w.ref, m->w_in, true, NULL).op,
                   vg_assign(m->g, m->step.ref, m->step_in, true, NULL).op};
    m->set = vg_group(m->g, a, 2, "set");
    m->init = vg_global_variables_initializer(m->g);
    vg_saver_options o = {0};
    o.max_to_keep = 3;
    m->saver = vg_saver_new(m->g, &o, &st);
    m->sess = m->saver ? vg_session_new(m->g, NULL, &st) : NULL;
    return m->sess ? 0 : -1;
}

static void model_free(model *m) {
    vg_session_free(m->sess);
    vg_saver_free(m->saver);
    vg_graph_free(m->g);
}

static long long step_of_path(const char *p) {
    const char *dash = strrchr(p, '-');
    return dash ? atoll(dash + 1) : -1;
}

/* The child: resume from the latest checkpoint, then save steps forever. */
static void child_main(void) {
    model m;
    vg_status st;
    char buf[512], prefix[512], path[512];
    if (model_build(&m)) _exit(2);
    long long step = 1;
    const char *latest = vg_latest_checkpoint(g_dir, buf, sizeof buf);
    if (latest) {
        if (vg_saver_restore(m.saver, m.sess, latest, &st)) _exit(3);
        step = step_of_path(latest) + 1;
        vg_checkpoint_state *cs = NULL;
        if (vg_get_checkpoint_state(g_dir, &cs, &st) == VG_OK) {
            vg_saver_recover_last_checkpoints(m.saver, (const char *const *)cs->all_model_checkpoint_paths,
                                              cs->n_all);
            vg_checkpoint_state_free(cs);
        }
    } else if (vg_session_run_targets(m.sess, &m.init, 1, &st)) {
        _exit(4);
    }
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", g_dir);
    int64_t n = NW;
    vg_tensor *w = vg_tensor_new(VG_FLOAT, &n, 1, &st);
    for (int k = 0; k < 100000; k++, step++) {
        float *x = vg_tensor_data(w);
        for (int i = 0; i < NW; i++) x[i] = (float)step;
        vg_tensor *s = vg_tensor_new_scalar_i64(step, &st);
        vg_output feeds[2] = {m.w_in, m.step_in};
        vg_tensor *vals[2] = {w, s};
        if (vg_session_run(m.sess, NULL, feeds, vals, 2, NULL, NULL, 0, &m.set, 1, NULL, &st)) _exit(5);
        vg_tensor_free(s);
        double t0 = now_ms();
        report('S', 0);
        if (vg_saver_save(m.saver, m.sess, prefix, step, path, sizeof path, &st)) _exit(6);
        report('E', now_ms() - t0);
    }
    _exit(0);
}

/* Restores the latest checkpoint in a fresh session; returns its step (0 if none, -1
 * on a failure). */
static long long verify_latest(void) {
    char buf[512];
    const char *latest = vg_latest_checkpoint(g_dir, buf, sizeof buf);
    if (!latest) return 0;
    model m;
    vg_status st;
    long long want = step_of_path(latest), got = -1;
    if (model_build(&m)) return -1;
    if (vg_saver_restore(m.saver, m.sess, latest, &st) != VG_OK) {
        fprintf(stderr, "restore of %s failed: %s\n", latest, st.msg);
    } else {
        vg_tensor *w = NULL, *s = NULL;
        vg_session_run1(m.sess, m.w.ref, &w, &st);
        vg_session_run1(m.sess, m.step.ref, &s, &st);
        bool ok = w && s && *(int64_t *)vg_tensor_data(s) == want;
        for (int i = 0; ok && i < NW; i++) ok = ((float *)vg_tensor_data(w))[i] == (float)want;
        if (ok) got = want;
        else fprintf(stderr, "%s holds other values than step %lld\n", latest, want);
        vg_tensor_free(w);
        vg_tensor_free(s);
    }
    model_free(&m);
    return got;
}

/* Waits (at most 5 s) for the child's next message of kind `what`; false on timeout or
 * when the child is gone. Updates *max_ms with save durations. */
static bool wait_for(char what, double *max_ms) {
    char msg[1 + sizeof(double)];
    for (;;) {
        struct pollfd pf = {g_pipe[0], POLLIN, 0};
        if (poll(&pf, 1, 5000) <= 0 || read(g_pipe[0], msg, sizeof msg) != (ssize_t)sizeof msg) return false;
        if (msg[0] == 'E') {
            double ms;
            memcpy(&ms, msg + 1, sizeof ms);
            if (ms > *max_ms) *max_ms = ms;
        }
        if (msg[0] == what) return true;
    }
}

static void drain_pipe(void) {
    char buf[256];
    while (read(g_pipe[0], buf, sizeof buf) > 0) {
    }
}

static void test_saver_crash__kill_anywhere(void) {
    unsigned seed = (unsigned)time(NULL);
    fprintf(stderr, "seed %u\n", seed);
    long long last = 0;
    int kills = 0, saves_seen = 0;
    double max_save_ms = 20.0;
    if (pipe(g_pipe) != 0) return;
    fcntl(g_pipe[0], F_SETFL, O_NONBLOCK);
    for (int round = 0; round < KILLS; round++) {
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) child_main();
        CHECK(pid > 0);
        if (pid < 0) return;
        /* after start-up (sometimes killed during it), 0-1 complete saves, then a random moment */
        int full = rand_r(&seed) % 3 - 1;
        bool ok = full < 0 || wait_for('S', &max_save_ms);
        for (int k = 0; ok && k < full; k++) ok = wait_for('E', &max_save_ms);
        double range = max_save_ms < 100 ? max_save_ms : 100;
        usleep((useconds_t)(rand_r(&seed) % ((unsigned)(range * 1000) + 1)));
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status)) kills++;
        else fprintf(stderr, "child exited with %d\n", WEXITSTATUS(status));
        drain_pipe();
        long long got = verify_latest();
        CHECK(got >= 0);
        CHECK(got >= last); /* a completed checkpoint never disappears */
        if (got > last) saves_seen++;
        if (got >= 0) last = got;
    }
    fprintf(stderr, "%d kills, latest step %lld, progress in %d rounds, longest save %.1f ms\n", kills, last,
            saves_seen, max_save_ms);
    close(g_pipe[0]);
    close(g_pipe[1]);
    CHECK(kills >= 50);
    CHECK(last > 0);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "crash")[0]) return 1;
    RUN_TEST(test_saver_crash__kill_anywhere);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
