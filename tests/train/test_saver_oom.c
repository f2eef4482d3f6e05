/* test_saver_oom.c - allocation failures (SQLite-style): allocation N fails, for
 * N = 1, 2, ... until the call succeeds, in GraphDef / MetaGraphDef / text export,
 * vg_saver_new, vg_saver_save, vg_saver_restore and the checkpoint reader. Each failure
 * must be RESOURCE_EXHAUSTED, with no crash, no leak (ASan), no temp file left behind
 * and, for restore, no variable changed. */
#include "test_util.h"
#include "train_fixture.h"
#include "vigil/vigil.h"
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include "oom_util.h"

static char g_dir[64];

static int count_temp_files(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tempstate")) n++;
    if (d) closedir(d);
    return n;
}

typedef struct model {
    vg_graph *g;
    vg_variable w, b;
    vg_op *init;
} model;

static vg_code build(model *m) {
    m->g = vg_graph_new();
    if (!m->g) return VG_RESOURCE_EXHAUSTED;
    int64_t d[2] = {2, 3};
    m->w = vg_get_variable(m->g, "dense/kernel", VG_FLOAT, d, 2, vg_init_constant(1.5), VG_VAR_TRAINABLE);
    m->b = vg_get_variable(m->g, "dense/bias", VG_FLOAT, d + 1, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output x = vg_placeholder(m->g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    vg_output y = vg_bias_add(m->g, vg_matmul(m->g, x, m->w.read, false, false, NULL), m->b.read, "y");
    vg_graph_add_to_collection(m->g, VG_LOSSES, y);
    m->init = vg_global_variables_initializer(m->g);
    return vg_graph_status(m->g, NULL);
}

/* Every test installs the failing allocator (disarmed) before creating anything and
 * removes it after freeing everything: memory must go back to the hook that made it. */
static void test_oom__export(void) {
    oom_install();
    model m;
    CHECK_OK(build(&m), &(vg_status){0});
    int bad = 0;
    for (int what = 0; what < 3; what++) {
        long n;
        for (n = 1; n < 100000; n++) {
            arm(n);
            vg_status st;
            void *bytes = NULL;
            char *text = NULL;
            size_t len;
            vg_saver_def sd = {"save/Const:0", "save/control_dependency:0", "save/restore_all", 5, false, 1e4f};
            vg_code c = what == 0   ? vg_graph_to_graphdef(m.g, &bytes, &len, &st)
                        : what == 1 ? vg_graph_to_meta_graph(m.g, &sd, &bytes, &len, &st)
                                    : vg_graph_to_graphdef_text(m.g, &text, &len, &st);
            bool inj = injected(n);
            arm(0);
            if (c != VG_OK && c != VG_RESOURCE_EXHAUSTED) bad++;
            if (c == VG_OK && !bytes && !text) bad++;
            if (c != VG_OK && (bytes || text)) bad++;
            vg_free(bytes);
            vg_free(text);
            if (!inj) break;
        }
        CHECK(n > 1);
    }
    CHECK_EQ_INT(bad, 0);
    vg_graph_free(m.g);
    vg_allocator_set(NULL);
}

/* One vg_saver_new with allocation n failing, in a child process: 0 = fine (failed
 * with RESOURCE_EXHAUSTED or succeeded), 1 = wrong code, 2 = n was beyond the last
 * allocation; exit() so that LeakSanitizer checks the child too. */
static void saver_new_child(long n) {
    model m;
    oom_install();
    if (build(&m)) exit(3);
    arm(n);
    vg_status st;
    vg_saver *s = vg_saver_new(m.g, NULL, &st);
    bool inj = injected(n);
    arm(0);
    int rc = !s && st.code != VG_RESOURCE_EXHAUSTED ? 1 : 0;
    if (rc) fprintf(stderr, "  alloc %ld: code %d: %s\n", n, st.code, st.msg);
    vg_saver_free(s);
    vg_graph_free(m.g);
    vg_allocator_set(NULL);
    exit(rc ? rc : inj ? 0 : 2);
}

/* Each allocation of vg_saver_new fails once (in a child process, so that a crash is
 * counted rather than ending the test). */
static void test_oom__saver_new(void) {
    int bad = 0, crashed = 0;
    long n;
    for (n = 1; n < 100000; n++) {
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) saver_new_child(n);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status)) {
            if (crashed++ < 5) fprintf(stderr, "  alloc %ld: crashed with signal %d\n", n, WTERMSIG(status));
            continue;
        }
        int code = WEXITSTATUS(status);
        if (code == 2) break;
        if (code) bad++;
    }
    CHECK_EQ_INT(crashed, 0);
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 10);
}

static bool values_are(vg_session *sess, model *m, float w, float b) {
    vg_tensor *tw = NULL, *tb = NULL;
    vg_session_run1(sess, m->w.ref, &tw, NULL);
    vg_session_run1(sess, m->b.ref, &tb, NULL);
    bool ok = tw && tb && ((float *)vg_tensor_data(tw))[5] == w && ((float *)vg_tensor_data(tb))[2] == b;
    vg_tensor_free(tw);
    vg_tensor_free(tb);
    return ok;
}

static void test_oom__save_and_restore(void) {
    oom_install();
    model m;
    vg_status st;
    CHECK_OK(build(&m), &st);
    vg_saver *s = vg_saver_new(m.g, NULL, &st);
    vg_session *sess = vg_session_new(m.g, NULL, &st);
    CHECK_OK(vg_session_run_targets(sess, &m.init, 1, &st), &st);
    char prefix[512], path[512];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", g_dir);
    int bad = 0;
    long n;
    for (n = 1; n < 100000; n++) {
        arm(n);
        vg_code c = vg_saver_save(s, sess, prefix, n, path, sizeof path, &st);
        bool inj = injected(n);
        arm(0);
        if (c != VG_OK && c != VG_RESOURCE_EXHAUSTED) {
            fprintf(stderr, "  save alloc %ld: code %d: %s\n", n, c, st.msg);
            bad++;
        }
        if (count_temp_files()) {
            fprintf(stderr, "  save alloc %ld: temp files left\n", n);
            bad++;
        }
        if (!inj) break;
    }
    CHECK(n > 10);
    /* restore the last good save into a session whose variables hold other values */
    vg_output bump_w = vg_assign(m.g, m.w.ref, vg_const_fill(m.g, VG_FLOAT, (int64_t[]){2, 3}, 2, 9, NULL), true, NULL);
    vg_output bump_b = vg_assign(m.g, m.b.ref, vg_const_fill(m.g, VG_FLOAT, (int64_t[]){3}, 1, 9, NULL), true, NULL);
    vg_session *s2 = vg_session_new(m.g, NULL, &st);
    vg_op *bumps[2] = {bump_w.op, bump_b.op};
    CHECK_OK(vg_session_run_targets(s2, bumps, 2, &st), &st);
    for (n = 1; n < 100000; n++) {
        arm(n);
        vg_code c = vg_saver_restore(s, s2, path, &st);
        bool inj = injected(n);
        arm(0);
        if (c != VG_OK && c != VG_RESOURCE_EXHAUSTED) {
            fprintf(stderr, "  restore alloc %ld: code %d: %s\n", n, c, st.msg);
            bad++;
        }
        if (c != VG_OK && !values_are(s2, &m, 9, 9)) {
            fprintf(stderr, "  restore alloc %ld: variables changed by a failed restore\n", n);
            bad++;
        }
        if (c == VG_OK && !values_are(s2, &m, 1.5f, 0)) bad++;
        if (!inj) break;
    }
    CHECK(n > 10);
    CHECK_EQ_INT(bad, 0);
    vg_session_free(s2);
    free_session_saver_graph(sess, s, m.g);
    vg_allocator_set(NULL);
}

static void test_oom__checkpoint_reader(void) {
    char prefix[512];
    snprintf(prefix, sizeof prefix, VG_TESTDATA "/serving_half_plus_two_tf2_cpu/variables/variables");
    oom_install();
    int bad = 0;
    long n;
    for (n = 1; n < 100000; n++) {
        arm(n);
        vg_status st;
        vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, &st);
        vg_tensor *t = r ? vg_checkpoint_reader_read(r, "_CHECKPOINTABLE_OBJECT_GRAPH", &st) : NULL;
        vg_checkpoint_state *cs = NULL;
        if (t) vg_get_checkpoint_state(g_dir, &cs, &st);
        bool inj = injected(n);
        arm(0);
        if ((!r || !t) && st.code != VG_RESOURCE_EXHAUSTED) {
            fprintf(stderr, "  reader alloc %ld: code %d: %s\n", n, st.code, st.msg);
            bad++;
        }
        if (t && !cs && st.code != VG_RESOURCE_EXHAUSTED) bad++;
        vg_checkpoint_state_free(cs);
        vg_tensor_free(t);
        vg_checkpoint_reader_free(r);
        if (!inj) break;
    }
    vg_allocator_set(NULL);
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 5);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "saver_oom")[0]) return 1;
    RUN_TEST(test_oom__export);
    RUN_TEST(test_oom__saver_new);
    RUN_TEST(test_oom__save_and_restore);
    RUN_TEST(test_oom__checkpoint_reader);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
