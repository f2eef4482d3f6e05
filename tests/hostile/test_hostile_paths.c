/* test_hostile_paths.c - issue 29 items 1 and 4: vigil stays inside the directories it
 * was given.
 *   #1  a checkpoint state file naming "/abs/x", "../x" or a path through a symlinked
 *       directory never makes max_to_keep pruning or the crash clean-up delete those
 *       files; a symlink planted at a checkpoint's name is removed, not followed
 *   #4  symlinks planted at the names vigil creates (event files, saver temporaries,
 *       the lock's pid file) are never followed, and an existing event file is never
 *       truncated
 * Every victim file lies outside the directory vigil was given and must keep its bytes. */
#include "io/io.h"
#include "test_util.h"
#include "vigil/monitored.h"
#include "vigil/ops.h"
#include "vigil/saver.h"
#include "vigil/session.h"
#include "vigil/summary.h"
#include "vigil/variables.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif

static char g_root[256]; /* /tmp/vg_hpaths_XXXXXX: holds ckpt/ (vigil's) and outside/ (not) */

static bool exists_l(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Fresh <root>/<sub>/ckpt and <root>/<sub>/outside; returns them in ck and out. */
static void make_dirs(const char *sub, char *ck, char *out, size_t len) {
    char base[300];
    snprintf(base, sizeof base, "%s/%s", g_root, sub);
    mkdir(base, 0755);
    snprintf(ck, len, "%s/ckpt", base);
    snprintf(out, len, "%s/outside", base);
    CHECK(mkdir(ck, 0755) == 0);
    CHECK(mkdir(out, 0755) == 0);
}

/* make_dirs, then a file "victim" (holding "victim") in out: *victim its path. */
static void make_victim_dirs(const char *sub, char *ck, char *out, size_t len, char *victim, size_t vlen) {
    make_dirs(sub, ck, out, len);
    snprintf(victim, vlen, "%s/victim", out);
    tu_write_text(victim, "victim");
}

/* The three files of a (fake) checkpoint "<dir>/<name>", each holding "victim". */
static void plant_victim_ckpt(const char *dir, const char *name) {
    static const char *const suf[] = {".index", ".meta", ".data-00000-of-00001"};
    char p[700];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s%s", dir, name, suf[i]);
        tu_write_text(p, "victim");
    }
}

static bool victim_ckpt_intact(const char *dir, const char *name) {
    static const char *const suf[] = {".index", ".meta", ".data-00000-of-00001"};
    char p[700];
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s%s", dir, name, suf[i]);
        ok = ok && tu_file_holds(p, "victim");
    }
    return ok;
}

typedef struct model {
    vg_graph *g;
    vg_saver *saver;
    vg_session *sess;
} model;

static void model_build(model *m, int max_to_keep) {
    m->g = vg_graph_new();
    int64_t one = 1;
    vg_get_variable(m->g, "v", VG_FLOAT, &one, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_op *init = vg_global_variables_initializer(m->g);
    vg_status st;
    vg_saver_options o = {0};
    o.max_to_keep = max_to_keep;
    m->saver = vg_saver_new(m->g, &o, &st);
    CHECK(m->saver != NULL);
    m->sess = vg_session_new(m->g, NULL, &st);
    CHECK_OK(vg_session_run_targets(m->sess, &init, 1, &st), &st);
}

static void model_free(model *m) {
    vg_session_free(m->sess);
    vg_saver_free(m->saver);
    vg_graph_free(m->g);
}

/* Writes <ck>/checkpoint naming `paths` (the newest last), reads it back with
 * vg_get_checkpoint_state and adopts its list as a restarted trainer does
 * (session_manager: vg_saver_recover_last_checkpoints_in with the checkpoint dir). */
static void adopt_state(model *m, const char *ck, const char *const *paths, int n) {
    char p[600], text[4096];
    int k = snprintf(text, sizeof text, "model_checkpoint_path: \"%s\"\n", paths[n - 1]);
    for (int i = 0; i < n; i++) k += snprintf(text + k, sizeof text - (size_t)k, "all_model_checkpoint_paths: \"%s\"\n", paths[i]);
    snprintf(p, sizeof p, "%s/checkpoint", ck);
    tu_write_text(p, text);
    vg_checkpoint_state *cs = NULL;
    vg_status st;
    CHECK_OK(vg_get_checkpoint_state(ck, &cs, &st), &st);
    if (!cs) return;
    CHECK_EQ_INT(cs->n_all, n);
    vg_saver_recover_last_checkpoints_in(m->saver, ck, (const char *const *)cs->all_model_checkpoint_paths, cs->n_all);
    vg_checkpoint_state_free(cs);
}

/* model_build(m, max_to_keep), then adopt_state(m, ck, paths, n). */
static void model_adopting(model *m, int max_to_keep, const char *ck, const char *const *paths, int n) {
    model_build(m, max_to_keep);
    adopt_state(m, ck, paths, n);
}

static void save_step(model *m, const char *ck, int step) {
    char prefix[600];
    vg_status st;
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", ck);
    CHECK_OK(vg_saver_save(m->saver, m->sess, prefix, step, NULL, 0, &st), &st);
}

/* A model (max_to_keep 1) that adopts the n checkpoint paths as its saver's state in ck,
 * then saves steps step and step + 1 there (pruning what falls out) and is freed. */
static void adopt_and_save_two(const char *ck, const char *const *paths, int n, int step) {
    model m;
    model_adopting(&m, 1, ck, paths, n);
    save_step(&m, ck, step);
    save_step(&m, ck, step + 1);
    model_free(&m);
}

/* ---- #1 ---- */

/* An absolute path elsewhere, named exactly like the saver's checkpoints: adopted into the
 * list (TF keeps it) but never deleted when max_to_keep drops it. */
static void test_hostile_paths__prune_absolute_path_outside(void) {
    char ck[400], out[400], abs_name[600];
    make_dirs("abs", ck, out, sizeof ck);
    plant_victim_ckpt(out, "model.ckpt-1");
    snprintf(abs_name, sizeof abs_name, "%s/model.ckpt-1", out);
    model m;
    model_adopting(&m, 1, ck, (const char *[]){abs_name}, 1);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(m.saver), 1); /* adopted, as TF does */
    save_step(&m, ck, 2);                                     /* max_to_keep 1: -1 falls out */
    save_step(&m, ck, 3);                                     /* and -2 (our own) is pruned */
    CHECK(victim_ckpt_intact(out, "model.ckpt-1"));
    char p[700];
    snprintf(p, sizeof p, "%s/model.ckpt-2.index", ck);
    CHECK(!exists_l(p)); /* our own checkpoints still rotate */
    snprintf(p, sizeof p, "%s/model.ckpt-3.index", ck);
    CHECK(exists_l(p));
    model_free(&m);
}

/* "../outside/model.ckpt-1" relative to the checkpoint directory. */
static void test_hostile_paths__prune_dotdot_path(void) {
    char ck[400], out[400];
    make_dirs("dotdot", ck, out, sizeof ck);
    plant_victim_ckpt(out, "model.ckpt-1");
    plant_victim_ckpt(ck, "model.ckpt-1"); /* a real one of the same name inside stays ours */
    adopt_and_save_two(ck, (const char *[]){"../outside/model.ckpt-1", "model.ckpt-1"}, 2, 2);
    CHECK(victim_ckpt_intact(out, "model.ckpt-1"));
    char p[700];
    snprintf(p, sizeof p, "%s/model.ckpt-1.index", ck);
    CHECK(!exists_l(p)); /* the listed one inside the directory is pruned as before */
}

/* A symlinked directory planted inside the checkpoint directory, pointing outside, and a
 * symlink planted at a checkpoint file's name: the first is not followed for deletion,
 * the second is removed without touching its target. */
static void test_hostile_paths__prune_through_planted_symlinks(void) {
    char ck[400], out[400], p[700], q[700];
    make_dirs("symlink", ck, out, sizeof ck);
    plant_victim_ckpt(out, "model.ckpt-1");
    snprintf(p, sizeof p, "%s/sub", ck);
    CHECK(symlink(out, p) == 0);
    /* model.ckpt-2 inside: its .index is a link to a file outside */
    snprintf(q, sizeof q, "%s/precious", out);
    tu_write_text(q, "victim");
    snprintf(p, sizeof p, "%s/model.ckpt-2.index", ck);
    CHECK(symlink(q, p) == 0);
    adopt_and_save_two(ck, (const char *[]){"sub/model.ckpt-1", "model.ckpt-2"}, 2, 3);
    CHECK(victim_ckpt_intact(out, "model.ckpt-1"));
    CHECK(tu_file_holds(q, "victim"));
    CHECK(!exists_l(p)); /* the planted link itself is gone (it was named like ours) */
}

/* The crash clean-up on recovery (issue 9 #5) runs in the newest listed checkpoint's
 * directory: when the state file names one outside the checkpoint directory, nothing
 * there is deleted (neither "orphans" nor "temporaries"). */
static void test_hostile_paths__recover_cleanup_stays_inside(void) {
    char ck[400], out[400], newest[600], p[700];
    make_dirs("cleanup", ck, out, sizeof ck);
    plant_victim_ckpt(out, "model.ckpt-100");
    plant_victim_ckpt(out, "model.ckpt-50"); /* an "orphan" older than the newest listed */
    snprintf(p, sizeof p, "%s/model.ckpt-100.index.tempstate0123456789abcdef", out);
    tu_write_text(p, "victim");
    snprintf(newest, sizeof newest, "%s/model.ckpt-100", out);
    model m;
    model_adopting(&m, 5, ck, (const char *[]){newest}, 1);
    CHECK(victim_ckpt_intact(out, "model.ckpt-50"));
    CHECK(victim_ckpt_intact(out, "model.ckpt-100"));
    CHECK(tu_file_holds(p, "victim"));
    model_free(&m);
    /* the same through "..": ck/../outside */
    model_build(&m, 5);
    const char *rel[1] = {"../outside/model.ckpt-100"};
    adopt_state(&m, ck, rel, 1);
    CHECK(victim_ckpt_intact(out, "model.ckpt-50"));
    CHECK(tu_file_holds(p, "victim"));
    model_free(&m);
    /* inside the directory the clean-up still works */
    plant_victim_ckpt(ck, "model.ckpt-100");
    plant_victim_ckpt(ck, "model.ckpt-50");
    char tmp_in[700];
    snprintf(tmp_in, sizeof tmp_in, "%s/model.ckpt-100.index.tempstate0123456789abcdef", ck);
    tu_write_text(tmp_in, "x");
    model_build(&m, 5);
    const char *in[1] = {"model.ckpt-100"};
    adopt_state(&m, ck, in, 1);
    snprintf(p, sizeof p, "%s/model.ckpt-50.index", ck);
    CHECK(!exists_l(p));
    CHECK(!exists_l(tmp_in));
    CHECK(victim_ckpt_intact(ck, "model.ckpt-100"));
    model_free(&m);
}

/* Names that are not "<base>[-<step>]" are never deleted, even inside the directory. */
static void test_hostile_paths__prune_only_own_names(void) {
    char ck[400], out[400];
    make_dirs("names", ck, out, sizeof ck);
    plant_victim_ckpt(ck, "notes");
    adopt_and_save_two(ck, (const char *[]){"notes"}, 1, 1);
    CHECK(victim_ckpt_intact(ck, "notes"));
}

/* ---- #4 ---- */

static bool is_regular(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* "<dir>/events.out.tfevents.<secs>.<host><suffix>" (TF's EventsWriter name). */
static void event_name(char *buf, size_t len, const char *dir, long long secs, const char *suffix) {
    char host[256];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    snprintf(buf, len, "%s/events.out.tfevents.%010lld.%s%s", dir, secs, host, suffix);
}

/* Symlinks to a file outside planted at this second's event file name and the next ones,
 * and an existing event file (a run killed in the same second) after them: the writer
 * takes a free name, follows no link and leaves the old file's bytes alone. */
static void test_hostile_paths__event_file_never_follows_or_truncates(void) {
    char ck[400], out[400], victim[600], name[800];
    make_victim_dirs("events", ck, out, sizeof ck, victim, sizeof victim);
    long long now = (long long)time(NULL);
    for (int k = 0; k < 5; k++) {
        event_name(name, sizeof name, ck, now + k, "");
        CHECK(symlink(victim, name) == 0);
    }
    char old[800];
    event_name(old, sizeof old, ck, now + 5, "");
    tu_write_text(old, "old events");
    vg_status st;
    vg__event_writer *w = vg__event_writer_open(ck, NULL, &st);
    CHECK(w != NULL);
    if (w) {
        const char *p = vg__event_writer_path(w);
        CHECK(is_regular(p));
        for (int k = 0; k <= 5; k++) {
            event_name(name, sizeof name, ck, now + k, "");
            CHECK(strcmp(p, name) != 0);
        }
        CHECK_OK(vg__event_writer_close(w, &st), &st);
    }
    CHECK(tu_file_holds(victim, "victim"));
    CHECK(tu_file_holds(old, "old events"));
    /* the public writer (a summary writer reopened in the same second) likewise */
    vg_file_writer_options o = {0};
    o.filename_suffix = ".v2";
    now = (long long)time(NULL);
    for (int k = 0; k < 3; k++) {
        event_name(name, sizeof name, ck, now + k, ".v2");
        CHECK(symlink(victim, name) == 0);
    }
    vg_file_writer *fw = vg_file_writer_new(ck, &o, &st);
    CHECK(fw != NULL);
    if (fw) CHECK_OK(vg_file_writer_add_scalar(fw, "loss", 1.5, 1, &st), &st);
    vg_file_writer_free(fw);
    CHECK(tu_file_holds(victim, "victim"));
}

/* The saver writes .meta, .data, .index and `checkpoint` through new temporaries renamed
 * over the final names: symlinks planted at those names are replaced, never written
 * through. */
static void test_hostile_paths__saver_replaces_planted_symlinks(void) {
    char ck[400], out[400], victim[600], p[700];
    make_victim_dirs("saver_names", ck, out, sizeof ck, victim, sizeof victim);
    const char *names[] = {"model.ckpt-1.index", "model.ckpt-1.meta", "model.ckpt-1.data-00000-of-00001", "checkpoint"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", ck, names[i]);
        CHECK(symlink(victim, p) == 0);
    }
    model m;
    model_build(&m, 5);
    save_step(&m, ck, 1);
    CHECK(tu_file_holds(victim, "victim"));
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", ck, names[i]);
        CHECK(is_regular(p));
    }
    char latest[700];
    snprintf(p, sizeof p, "%s/model.ckpt-1", ck);
    CHECK(vg_latest_checkpoint(ck, latest, sizeof latest) != NULL && strcmp(latest, p) == 0);
    model_free(&m);
}

/* The lock's pid file: a symlink or a hard link planted at ".vigil-train.pid" is
 * replaced by a new file; neither target changes. */
static void test_hostile_paths__dir_lock_pid_file(void) {
    char ck[400], out[400], victim[600], pid[700], want[32];
    make_victim_dirs("lock", ck, out, sizeof ck, victim, sizeof victim);
    snprintf(pid, sizeof pid, "%s/.vigil-train.pid", ck);
    snprintf(want, sizeof want, "%ld\n", (long)getpid());
    for (int kind = 0; kind < 2; kind++) {
        CHECK((kind == 0 ? symlink(victim, pid) : link(victim, pid)) == 0);
        vg_status st;
        vg_dir_lock *lk = vg_checkpoint_dir_lock_acquire(ck, &st);
        CHECK(lk != NULL);
        CHECK(tu_file_holds(victim, "victim"));
        CHECK(is_regular(pid) && tu_file_holds(pid, want));
        vg_checkpoint_dir_lock_release(lk);
        CHECK(!exists_l(pid));
        CHECK(tu_file_holds(victim, "victim"));
    }
}

/* ---- the command line ---- */

static char g_vigil[600];

/* True when the vigil CLI (g_vigil) is built; otherwise prints SKIP. */
static bool vigil_built(void) {
    if (access(g_vigil, X_OK) == 0) return true;
    fprintf(stderr, "SKIP: %s not built\n", g_vigil);
    return false;
}

static int run_cli(const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = g_vigil;
    for (int i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        char err[400];
        snprintf(err, sizeof err, "%s/cli.err", g_root); /* printed when a check fails */
        int dn = open("/dev/null", O_WRONLY), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (dn >= 0) dup2(dn, 1);
        if (fe >= 0) dup2(fe, 2);
        execv(g_vigil, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (rc != 0) { /* show why */
        char err[400], buf[4096];
        snprintf(err, sizeof err, "%s/cli.err", g_root);
        FILE *f = fopen(err, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = 0;
        fprintf(stderr, "vigil %s: exit %d:\n%s", args[0], rc, buf);
    }
    return rc;
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A tiny IDX u8 file: images [n, side, side] or labels [n] (i % 10). */
static void write_idx_sized(const char *path, uint32_t n, uint32_t side, bool labels) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    uint8_t h[16] = {0, 0, 8, labels ? 1 : 3};
    put_be32(h + 4, n);
    put_be32(h + 8, side);
    put_be32(h + 12, side);
    fwrite(h, 1, labels ? 8 : 16, f);
    uint32_t rec = labels ? 1u : side * side;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < rec; k++) fputc(labels ? (int)(i % 10) : (int)((k % 10 == i % 10 ? 200 : 20) + k % 7), f);
    fclose(f);
}

static void write_idx(const char *path, uint32_t n, bool labels) { write_idx_sized(path, n, 2, labels); }

/* `vigil plot -o X.png` once wrote its SVG to "X.png.tmp.svg" through whatever was
 * there; `-o X.svg` and `vigil convert -o OUT` wrote through a symlink at the output
 * name. Now every output is a new temporary renamed over the name. */
static void test_hostile_paths__cli_outputs_never_follow_symlinks(void) {
    snprintf(g_vigil, sizeof g_vigil, "%s/vigil", VG_BINDIR);
    if (!vigil_built()) return;
    char ck[400], out[400], victim[600], p[700], q[700];
    make_victim_dirs("cli", ck, out, sizeof ck, victim, sizeof victim);
    /* an event file with a scalar to plot */
    vg_status st;
    vg_file_writer *fw = vg_file_writer_new(ck, NULL, &st);
    CHECK(fw != NULL);
    for (int i = 1; fw && i <= 3; i++) CHECK_OK(vg_file_writer_add_scalar(fw, "loss", 1.0 / i, i, &st), &st);
    vg_file_writer_free(fw);
    /* -o X.png: the old temporary name and the output are links to the victim */
    snprintf(p, sizeof p, "%s/curves.png.tmp.svg", ck);
    CHECK(symlink(victim, p) == 0);
    snprintf(q, sizeof q, "%s/curves.png", ck);
    CHECK(symlink(victim, q) == 0);
    const char *a1[] = {"plot", ck, "-o", q, NULL};
    int rc = run_cli(a1); /* 0, or 1 without rsvg-convert / ImageMagick */
    CHECK(rc == 0 || rc == 1);
    CHECK(tu_file_holds(victim, "victim"));
    CHECK(rc != 0 || is_regular(q));
    /* -o X.svg through a symlink */
    snprintf(q, sizeof q, "%s/curves.svg", ck);
    CHECK(symlink(victim, q) == 0);
    const char *a2[] = {"plot", ck, "-o", q, NULL};
    CHECK_EQ_INT(run_cli(a2), 0);
    CHECK(tu_file_holds(victim, "victim"));
    CHECK(is_regular(q));
    /* vigil convert -o OUT through a symlink, both formats */
    char img[700], lab[700];
    snprintf(img, sizeof img, "%s/images.idx", out);
    snprintf(lab, sizeof lab, "%s/labels.idx", out);
    write_idx(img, 5, false);
    write_idx(lab, 5, true);
    const char *fmts[] = {"tfrecord", "fixed"};
    for (int i = 0; i < 2; i++) {
        snprintf(q, sizeof q, "%s/out.%s", ck, fmts[i]);
        CHECK(symlink(victim, q) == 0);
        const char *a3[] = {"convert", "--images", img, "--labels", lab, "-o", q, "--format", fmts[i], NULL};
        CHECK_EQ_INT(run_cli(a3), 0);
        CHECK(tu_file_holds(victim, "victim"));
        CHECK(is_regular(q));
    }
    snprintf(q, sizeof q, "%s/out.fixed", ck);
    struct stat sb;
    CHECK(stat(q, &sb) == 0 && sb.st_size == 5 * 5); /* 5 records of 1 label + 4 pixels */
}

/* `vigil train` with symlinks to a file outside planted at the names it creates in the
 * checkpoint directory (the lock's pid file, graph.pbtxt, the event file names of the
 * next 30 seconds), then restarted on a state file that
 * also lists "../outside/model.ckpt-1" and "<abs>/outside/model.ckpt-2" (real-looking
 * checkpoint files there): the victim and the outside checkpoints survive both runs
 * while max_to_keep keeps rotating the run's own checkpoints. */
static void test_hostile_paths__cli_train_stays_inside(void) {
    if (!vigil_built()) return;
    char ck[400], out[400], victim[600], p[800], data[500];
    make_victim_dirs("train", ck, out, sizeof ck, victim, sizeof victim);
    snprintf(data, sizeof data, "%s/data", out);
    mkdir(data, 0755);
    const char *files[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                            "t10k-labels-idx1-ubyte"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", data, files[i]);
        write_idx_sized(p, i < 2 ? 128 : 32, 28, i % 2 == 1);
    }
    /* (not checkpoint files: index files without a state file make it refuse to start;
     * test_hostile_paths__saver_replaces_planted_symlinks plants those) */
    const char *plant[] = {".vigil-train.pid", "graph.pbtxt"};
    for (size_t i = 0; i < sizeof plant / sizeof *plant; i++) {
        snprintf(p, sizeof p, "%s/%s", ck, plant[i]);
        CHECK(symlink(victim, p) == 0);
    }
    long long now = (long long)time(NULL);
    for (int k = 0; k < 30; k++) {
        event_name(p, sizeof p, ck, now + k, "");
        CHECK(symlink(victim, p) == 0);
    }
#define TRAIN_ARGS(epochs) "train", "--data-dir", data, "--checkpoint-dir", ck, "--batch-size", "32", "--epochs", epochs, \
        "--save-checkpoint-steps", "2", "--save-summaries-steps", "0", "--log-step-count-steps", "0", "--threads", "1", NULL
    const char *a1[] = {TRAIN_ARGS("1")};
    CHECK_EQ_INT(run_cli(a1), 0);
    CHECK(tu_file_holds(victim, "victim"));
    /* the restart: a state file naming checkpoints outside as the oldest */
    plant_victim_ckpt(out, "model.ckpt-1");
    plant_victim_ckpt(out, "model.ckpt-2");
    vg_checkpoint_state *cs = NULL;
    vg_status st;
    CHECK_OK(vg_get_checkpoint_state(ck, &cs, &st), &st);
    if (!cs) return;
    char text[8192];
    int k = snprintf(text, sizeof text,
                     "model_checkpoint_path: \"%s\"\nall_model_checkpoint_paths: \"../outside/model.ckpt-1\"\n"
                     "all_model_checkpoint_paths: \"%s/model.ckpt-2\"\n",
                     cs->model_checkpoint_path, out);
    for (int i = 0; i < cs->n_all; i++)
        k += snprintf(text + k, sizeof text - (size_t)k, "all_model_checkpoint_paths: \"%s\"\n",
                      cs->all_model_checkpoint_paths[i]);
    char first_own[700] = "";
    if (cs->n_all > 0) snprintf(first_own, sizeof first_own, "%s.index", cs->all_model_checkpoint_paths[0]);
    CHECK(first_own[0] && exists_l(first_own));
    vg_checkpoint_state_free(cs);
    snprintf(p, sizeof p, "%s/checkpoint", ck);
    tu_write_text(p, text);
    const char *a2[] = {TRAIN_ARGS("3")};
    CHECK_EQ_INT(run_cli(a2), 0);
#undef TRAIN_ARGS
    CHECK(tu_file_holds(victim, "victim"));
    CHECK(victim_ckpt_intact(out, "model.ckpt-1"));
    CHECK(victim_ckpt_intact(out, "model.ckpt-2"));
    /* the run's own checkpoints still rotate: 5 listed (max_to_keep), the two outside
     * ones rotated out of the list first, then the oldest of the first run deleted */
    CHECK_OK(vg_get_checkpoint_state(ck, &cs, &st), &st);
    if (cs) {
        CHECK_EQ_INT(cs->n_all, 5);
        for (int i = 0; i < cs->n_all; i++) CHECK(!strstr(cs->all_model_checkpoint_paths[i], "outside"));
    }
    vg_checkpoint_state_free(cs);
    CHECK(!exists_l(first_own));
}

int main(void) {
    tu_mkdtemp(g_root, sizeof g_root, "hpaths");
    if (!g_root[0]) return 1;
    RUN_TEST(test_hostile_paths__prune_absolute_path_outside);
    RUN_TEST(test_hostile_paths__prune_dotdot_path);
    RUN_TEST(test_hostile_paths__prune_through_planted_symlinks);
    RUN_TEST(test_hostile_paths__recover_cleanup_stays_inside);
    RUN_TEST(test_hostile_paths__prune_only_own_names);
    RUN_TEST(test_hostile_paths__event_file_never_follows_or_truncates);
    RUN_TEST(test_hostile_paths__saver_replaces_planted_symlinks);
    RUN_TEST(test_hostile_paths__dir_lock_pid_file);
    RUN_TEST(test_hostile_paths__cli_outputs_never_follow_symlinks);
    RUN_TEST(test_hostile_paths__cli_train_stays_inside);
    tu_rmrf(g_root);
    TEST_MAIN_END();
}
