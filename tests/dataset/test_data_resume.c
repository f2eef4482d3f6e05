/* test_data_resume.c - resumable input under kill -9 (issue 12, "Resumable input"): a
 * child process reads range(30).shuffle(10, seed).repeat(3) through
 * vg_iterator_get_next_resumable, logging each element with its position and saving a
 * checkpoint (Saver) after each step; the parent kills it with SIGKILL at random moments
 * 25 times, restarting it each time (it restores the newest checkpoint), then lets it
 * finish. Elements logged after the checkpoint a restart resumed from were lost with the
 * kill and are dropped; what remains must be each value exactly 3 times (one pass per
 * epoch: no element lost, none repeated), in the uninterrupted order. The parent kills
 * when the log has grown by a random 0..40 bytes since the child started (about 0..4
 * steps), so the kills land mid-stream whatever the speed of the machine and disk. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "train_fixture.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 30
#define EPOCHS 3
#define KILLS 25

static char g_dir[64], g_log[128];

static void log_line(int fd, const char *fmt, long long a, long long b) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, fmt, a, b);
    if (write(fd, buf, (size_t)n) != n) _exit(3); /* one write: a kill cannot split a line */
}

static vg_graph *build(vg_op **next, vg_output *pos) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_shuffle(g, vg_dataset_range(g, 0, N, 1, NULL), 10, 5, true, NULL);
    ds = vg_dataset_repeat(g, ds, EPOCHS, NULL);
    *next = vg_iterator_get_next_resumable(g, vg_make_one_shot_iterator(g, ds, NULL), pos, NULL);
    return g;
}

/* The trainer: restore or initialize, then step until the end of the data. */
static int child(void) {
    vg_status st;
    vg_op *next;
    vg_output pos;
    vg_graph *g = build(&next, &pos);
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver_options so = {0};
    so.no_meta_graph = true;
    so.max_to_keep = 2;
    vg_saver *sv = vg_saver_new(g, &so, &st);
    vg_session *s = sv ? vg_session_new(g, NULL, &st) : NULL;
    if (!s) return 2;
    int fd = open(g_log, O_WRONLY | O_APPEND | O_CREAT, 0644);
    char ckpt[512], prefix[256];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", g_dir);
    long long resumed = 0;
    if (vg_checkpoint_find_latest(g_dir, ckpt, sizeof ckpt, &st) == VG_OK) {
        if (vg_saver_restore(sv, s, ckpt, &st) != VG_OK) return 4;
        vg_tensor *t = NULL;
        if (vg_session_run1(s, pos, &t, &st) != VG_OK) return 5;
        resumed = *(int64_t *)vg_tensor_data(t);
        vg_tensor_free(t);
    } else if (vg_session_run_targets(s, &init, 1, &st) != VG_OK) {
        return 6;
    }
    log_line(fd, "R %lld %lld\n", resumed, 0);
    for (long long k = resumed + 1;; k++) { /* k: the position after this element */
        vg_tensor *out = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &out, &st);
        if (rc == VG_OUT_OF_RANGE) break;
        if (rc != VG_OK) return 7;
        long long v = *(int64_t *)vg_tensor_data(out);
        vg_tensor_free(out);
        log_line(fd, "S %lld %lld\n", k, v);
        if (vg_saver_save(sv, s, prefix, k, NULL, 0, &st) != VG_OK) return 8;
    }
    log_line(fd, "E %lld %lld\n", 0, 0);
    close(fd);
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);
    return 0;
}

static void test_kill9_resume(void) {
    unsigned seed = (unsigned)time(NULL);
    int killed = 0;
    for (int i = 0; i <= KILLS; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(child());
        int status = 0;
        if (i < KILLS) {
            struct stat sb;
            off_t start = stat(g_log, &sb) == 0 ? sb.st_size : 0, grow = rand_r(&seed) % 41;
            bool reaped = false;
            for (int t = 0; t < 50000 && !reaped; t++) { /* at most ~10 s */
                if (stat(g_log, &sb) == 0 && sb.st_size - start >= grow) break;
                reaped = waitpid(pid, &status, WNOHANG) == pid;
                if (!reaped) usleep(200);
            }
            if (!reaped) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
            }
            if (WIFSIGNALED(status)) killed++;
            else CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* finished before the kill */
        } else {
            for (int t = 0; t < 6000 && waitpid(pid, &status, WNOHANG) == 0; t++) usleep(10000);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
    }
    fprintf(stderr, "%d kill(s) mid-run\n", killed);
    CHECK(killed >= 20);
    /* replay the log: a run's steps beyond the next run's resume point were lost */
    FILE *f = fopen(g_log, "r");
    CHECK(f != NULL);
    if (!f) return;
    static long long ks[100000], vs[100000];
    static int run_of[100000];
    static long long seq[N * EPOCHS];
    static int have[N * EPOCHS + 1];
    long long resume[200];
    int nrun = 0, n = 0, ended = 0;
    char c;
    long long a, b;
    while (fscanf(f, " %c %lld %lld", &c, &a, &b) == 3 && n < 100000) {
        if (c == 'R' && nrun < 200) resume[nrun++] = a;
        else if (c == 'S' && nrun > 0) ks[n] = a, vs[n] = b, run_of[n++] = nrun - 1;
        else if (c == 'E') ended++;
    }
    fclose(f);
    CHECK(ended >= 1); /* runs started after the end resume at the end and end at once */
    CHECK(nrun >= 1 && nrun <= KILLS + 1); /* a run killed while starting logs nothing */
    bool consistent = true;
    for (int i = 0; i < n; i++) {
        int r = run_of[i];
        long long limit = r + 1 < nrun ? resume[r + 1] : N * EPOCHS;
        if (ks[i] > limit || ks[i] <= resume[r] || ks[i] < 1 || ks[i] > N * EPOCHS) continue; /* lost with a kill */
        if (have[ks[i]] && seq[ks[i] - 1] != vs[i]) consistent = false; /* a replay gave another element */
        seq[ks[i] - 1] = vs[i];
        have[ks[i]] = 1;
    }
    CHECK(consistent);
    int progressed = 0;
    for (int r = 0; r + 1 < nrun; r++) progressed += resume[r + 1] > resume[r];
    fprintf(stderr, "%d of %d killed runs advanced the checkpointed position\n", progressed, nrun - 1);
    int count[N] = {0}, missing = 0;
    for (int k = 1; k <= N * EPOCHS; k++) {
        if (!have[k]) missing++;
        else if (seq[k - 1] >= 0 && seq[k - 1] < N) count[seq[k - 1]]++;
    }
    CHECK_EQ_INT(missing, 0);
    /* and the order is the uninterrupted run's */
    vg_status st;
    vg_op *next;
    vg_output pos;
    vg_graph *g = build(&next, &pos);
    vg_session *s = initialized_session(g);
    bool same = true;
    for (int k = 0; k < N * EPOCHS; k++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (t) same = same && (!have[k + 1] || *(int64_t *)vg_tensor_data(t) == seq[k]);
        vg_tensor_free(t);
    }
    CHECK(same);
    vg_session_free(s);
    vg_graph_free(g);
    if (missing && getenv("VG_KEEP_LOG")) fprintf(stderr, "log kept in %s\n", g_log);
    bool three = true;
    for (int v = 0; v < N; v++) three = three && count[v] == EPOCHS;
    CHECK(three);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "resume")[0]) return 1;
    snprintf(g_log, sizeof g_log, "%s/consumed.log", g_dir);
    RUN_TEST(test_kill9_resume);
    if (!getenv("VG_KEEP_LOG") && tu_rmrf(g_dir) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    TEST_MAIN_END();
}
