/* test_saver.c - tf.train.Saver: save/restore round trips for float, int64, double and
 * string variables; the `checkpoint` file exactly as TF writes it (absolute and
 * relative directories); max_to_keep, keep_checkpoint_every_n_hours, recovery;
 * restoring TF-written checkpoints; error paths (missing key, dtype and shape
 * mismatch, corrupt or truncated data, missing directory) leaving variables untouched. */
#include "io/io.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "train_fixture.h"
#include "session_test_util.h"
#include "vigil/graphdef.h"
#include "vigil/ops.h"
#include "vigil/saver.h"
#include "vigil/session.h"
#include "vigil/variables.h"
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#define TD VG_TESTDATA

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define TMPDIR_TAG "saver"
#include "tmpdir_util.h"
static void reset_tmpdir(void) {
    remove_tmpdir();
    mkdir(g_dir, 0755);
}


static bool ckpt_files_exist(const char *prefix) {
    char p[600];
    snprintf(p, sizeof p, "%s.index", prefix);
    bool a = path_exists(p);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    bool b = path_exists(p);
    snprintf(p, sizeof p, "%s.meta", prefix);
    bool c = path_exists(p);
    if (a != b || b != c) fprintf(stderr, "  %s: index %d data %d meta %d\n", prefix, a, b, c);
    return a && b && c;
}

static char *read_text(const char *path) {
    uint8_t *d;
    size_t n;
    if (vg__io_read_file(path, &d, &n, NULL)) return NULL;
    return (char *)d;
}

/* ------------------------------------------------------------------------ */
/* a model with one variable of each dtype */

typedef struct model {
    vg_graph *g;
    vg_variable f, i, d, s;
    vg_saver *saver;
    vg_session *sess;
} model;

static const float k_f[6] = {1, 2, 3, 4, 5, 6};
static const double k_d[4] = {0.5, -1.25, 1e300, 3};

static void model_build(model *m, const vg_saver_options *opts) {
    memset(m, 0, sizeof *m);
    m->g = vg_graph_new();
    int64_t d23[2] = {2, 3}, d4 = 4, d2 = 2;
    m->f = vg_variable_new(m->g, "weights", vg_const_array(m->g, VG_FLOAT, d23, 2, k_f, NULL), VG_VAR_TRAINABLE);
    m->i = vg_variable_new(m->g, "step", vg_const_i64(m->g, 42, NULL), 0);
    m->d = vg_variable_new(m->g, "dense/bias", vg_const_array(m->g, VG_DOUBLE, &d4, 1, k_d, NULL), VG_VAR_TRAINABLE);
    vg_tensor *st = vg_tensor_new(VG_STRING, &d2, 1, NULL);
    vg_tensor_set_string(st, 0, "hello", 5, NULL);
    vg_tensor_set_string(st, 1, "", 0, NULL);
    m->s = vg_variable_new(m->g, "vocab", vg_const(m->g, st, NULL), 0);
    vg_tensor_free(st);
    vg_status s;
    m->saver = vg_saver_new(m->g, opts, &s);
    CHECK(m->saver != NULL);
    if (!m->saver) fprintf(stderr, "  saver: %s\n", s.msg);
    m->sess = vg_session_new(m->g, NULL, &s);
    CHECK(m->sess != NULL);
}


static void model_free(model *m) {
    vg_session_free(m->sess);
    vg_saver_free(m->saver);
    vg_graph_free(m->g);
}

/* The variables hold the initial values (k_f, 42, k_d, {"hello", ""}). */
static void check_model_values(model *m) {
    vg_tensor *f = fetch(m->sess, m->f.ref), *i = fetch(m->sess, m->i.ref), *d = fetch(m->sess, m->d.ref),
              *s = fetch(m->sess, m->s.ref);
    CHECK(f && i && d && s);
    if (f) CHECK(vg_tensor_dim(f, 0) == 2 && vg_tensor_dim(f, 1) == 3 && memcmp(vg_tensor_data(f), k_f, 24) == 0);
    if (i) CHECK(*(int64_t *)vg_tensor_data(i) == 42);
    if (d) CHECK(memcmp(vg_tensor_data(d), k_d, sizeof k_d) == 0);
    if (s) {
        size_t n0, n1;
        const char *s0 = vg_tensor_string(s, 0, &n0), *s1 = vg_tensor_string(s, 1, &n1);
        CHECK(s0 && n0 == 5 && memcmp(s0, "hello", 5) == 0 && s1 && n1 == 0);
    }
    vg_tensor_free(f);
    vg_tensor_free(i);
    vg_tensor_free(d);
    vg_tensor_free(s);
}

static void test_saver__round_trip_all_dtypes(void) {
    reset_tmpdir();
    model m;
    vg_saver_options o = {0};
    model_build(&m, &o);
    vg_op *init = vg_global_variables_initializer(m.g);
    vg_session_free(m.sess);
    vg_status st;
    m.sess = vg_session_new(m.g, NULL, &st);
    CHECK_OK(vg_session_run_targets(m.sess, &init, 1, &st), &st);
    char prefix[512], path[512], expect[600];
    tmp_path(prefix, "model.ckpt");
    CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, 7, path, sizeof path, &st), &st);
    snprintf(expect, sizeof expect, "%s-7", prefix);
    CHECK(strcmp(path, expect) == 0);
    CHECK(ckpt_files_exist(expect));
    char cp[512];
    CHECK(path_exists(tmp_path(cp, "checkpoint")));
    /* a fresh session: variables uninitialized until restored */
    vg_session *s2 = vg_session_new(m.g, NULL, &st);
    CHECK(fetch(s2, m.f.ref) == NULL);
    CHECK_OK(vg_saver_restore(m.saver, s2, path, &st), &st);
    vg_session *keep = m.sess;
    m.sess = s2;
    check_model_values(&m);
    m.sess = keep;
    vg_session_free(s2);
    /* checkpoint keys = variable names, data as TF stores it */
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    CHECK(r && vg_checkpoint_reader_num_tensors(r) == 4);
    const char *names[4] = {"dense/bias", "step", "vocab", "weights"};
    for (int i = 0; r && i < 4; i++) CHECK(strcmp(vg_checkpoint_reader_tensor(r, i, NULL, NULL), names[i]) == 0);
    vg_checkpoint_reader_free(r);
    model_free(&m);
}

/* The .meta is a MetaGraphDef naming the saver's tensors. */
static void test_saver__meta_file(void) {
    reset_tmpdir();
    model m;
    model_build(&m, NULL);
    vg_op *init = vg_global_variables_initializer(m.g);
    vg_status st;
    vg_session_free(m.sess);
    m.sess = vg_session_new(m.g, NULL, &st);
    vg_session_run_targets(m.sess, &init, 1, &st);
    vg_graph_finalize(m.g);
    char prefix[512], path[512];
    tmp_path(prefix, "model.ckpt");
    CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, -1, path, sizeof path, &st), &st);
    CHECK(strcmp(path, prefix) == 0);
    char meta[600];
    snprintf(meta, sizeof meta, "%s.meta", prefix);
    uint8_t *d;
    size_t n;
    CHECK_OK(vg__io_read_file(meta, &d, &n, &st), &st);
    void *expect;
    size_t en;
    vg_saver_def sd = {"save/Const:0", "save/control_dependency:0", "save/restore_all", 5, false, 10000.0f};
    CHECK_OK(vg_graph_to_meta_graph(m.g, &sd, &expect, &en, &st), &st);
    CHECK(n == en && memcmp(d, expect, n) == 0);
    vg__free(d);
    vg_free(expect);
    /* the second save reuses the cached bytes */
    CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, 2, path, sizeof path, &st), &st);
    CHECK(path_existsf("%s.meta", path));
    model_free(&m);
}

/* A model with a single float variable "v" and an op setting it to a fed value. */
typedef struct small {
    vg_graph *g;
    vg_variable v;
    vg_output feed;
    vg_op *set;
    vg_saver *saver;
    vg_session *sess;
} small;

static void small_build(small *m, const vg_saver_options *o) {
    m->g = vg_graph_new();
    int64_t one = 1;
    m->v = vg_get_variable(m->g, "v", VG_FLOAT, &one, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    m->feed = vg_placeholder(m->g, VG_FLOAT, &one, 1, "value");
    m->set = vg_assign(m->g, m->v.ref, m->feed, true, "set").op;
    vg_op *init = vg_global_variables_initializer(m->g);
    vg_status st;
    m->saver = vg_saver_new(m->g, o, &st);
    CHECK(m->saver != NULL);
    m->sess = vg_session_new(m->g, NULL, &st);
    CHECK_OK(vg_session_run_targets(m->sess, &init, 1, &st), &st);
}

static void small_set(small *m, float x) {
    int64_t one = 1;
    vg_tensor *t = vg_tensor_new_copy(VG_FLOAT, &one, 1, &x, 4, NULL);
    vg_status st;
    CHECK_OK(vg_session_run(m->sess, NULL, &m->feed, &t, 1, NULL, NULL, 0, &m->set, 1, NULL, &st), &st);
    vg_tensor_free(t);
}

static float small_get(small *m) {
    vg_tensor *t = fetch(m->sess, m->v.ref);
    float x = t ? *(float *)vg_tensor_data(t) : -999.0f;
    vg_tensor_free(t);
    return x;
}

static void small_free(small *m) {
    vg_session_free(m->sess);
    vg_saver_free(m->saver);
    vg_graph_free(m->g);
}

/* max_to_keep = 2, three saves into an absolute directory: TF's two-field state file
 * with absolute paths, model.ckpt-1 deleted (index, data, meta). */
static void test_saver__checkpoint_file_absolute(void) {
    reset_tmpdir();
    small m;
    vg_saver_options o = {0};
    o.max_to_keep = 2;
    small_build(&m, &o);
    char prefix[512], path[512], p[600];
    vg_status st;
    tmp_path(prefix, "model.ckpt");
    for (int step = 1; step <= 3; step++) {
        small_set(&m, (float)step);
        CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, step, path, sizeof path, &st), &st);
    }
    char *text = read_text(tmp_path(p, "checkpoint")), expect[2048];
    snprintf(expect, sizeof expect,
             "model_checkpoint_path: \"%s-3\"\nall_model_checkpoint_paths: \"%s-2\"\n"
             "all_model_checkpoint_paths: \"%s-3\"\n",
             prefix, prefix, prefix);
    CHECK(text && strcmp(text, expect) == 0);
    if (text && strcmp(text, expect)) fprintf(stderr, "got:\n%s\nexpected:\n%s\n", text, expect);
    vg__free(text);
    CHECK(!path_existsf("%s-1.index", prefix));
    CHECK(!path_existsf("%s-1.data-00000-of-00001", prefix));
    CHECK(!path_existsf("%s-1.meta", prefix));
    snprintf(p, sizeof p, "%s-2", prefix);
    CHECK(ckpt_files_exist(p));
    snprintf(p, sizeof p, "%s-3", prefix);
    CHECK(ckpt_files_exist(p));
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(m.saver), 2);
    snprintf(p, sizeof p, "%s-2", prefix);
    CHECK(strcmp(vg_saver_last_checkpoint(m.saver, 0), p) == 0);
    /* latest_checkpoint and restore of the newest and of an older one */
    char buf[600];
    snprintf(p, sizeof p, "%s-3", prefix);
    const char *latest = vg_latest_checkpoint(g_dir, buf, sizeof buf);
    CHECK(latest && strcmp(latest, p) == 0);
    small_set(&m, -1);
    CHECK_OK(vg_saver_restore(m.saver, m.sess, latest, &st), &st);
    CHECK(small_get(&m) == 3.0f);
    snprintf(p, sizeof p, "%s-2", prefix);
    CHECK_OK(vg_saver_restore(m.saver, m.sess, p, &st), &st);
    CHECK(small_get(&m) == 2.0f);
    /* saving the same path again keeps one entry, moved to the end */
    CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, 2, path, sizeof path, &st), &st);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(m.saver), 2);
    CHECK(strcmp(vg_saver_last_checkpoint(m.saver, 1), p) == 0);
    small_free(&m);
}

/* A relative save directory: the state file holds paths relative to it, and
 * latest_checkpoint joins them again (relative and absolute dirs). */
static void test_saver__checkpoint_file_relative(void) {
    reset_tmpdir();
    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(g_dir) == 0);
    mkdir("runs", 0755);
    mkdir("runs/m", 0755);
    small m;
    vg_saver_options o = {0};
    o.max_to_keep = 2;
    small_build(&m, &o);
    char path[512], buf[600], p[600];
    vg_status st;
    for (int step = 1; step <= 3; step++)
        CHECK_OK(vg_saver_save(m.saver, m.sess, "runs/m/model.ckpt", step, path, sizeof path, &st), &st);
    CHECK(strcmp(path, "runs/m/model.ckpt-3") == 0);
    char *text = read_text("runs/m/checkpoint");
    const char *expect = "model_checkpoint_path: \"model.ckpt-3\"\nall_model_checkpoint_paths: \"model.ckpt-2\"\n"
                         "all_model_checkpoint_paths: \"model.ckpt-3\"\n";
    CHECK(text && strcmp(text, expect) == 0);
    vg__free(text);
    CHECK(!path_exists("runs/m/model.ckpt-1.index"));
    const char *latest = vg_latest_checkpoint("runs/m", buf, sizeof buf);
    CHECK(latest && strcmp(latest, "runs/m/model.ckpt-3") == 0);
    snprintf(p, sizeof p, "%s/runs/m", g_dir);
    latest = vg_latest_checkpoint(p, buf, sizeof buf);
    snprintf(p, sizeof p, "%s/runs/m/model.ckpt-3", g_dir);
    CHECK(latest && strcmp(latest, p) == 0);
    latest = vg_latest_checkpoint("runs/m/", buf, sizeof buf);
    CHECK(latest && strcmp(latest, "runs/m/model.ckpt-3") == 0);
    vg_checkpoint_state *cs = NULL;
    CHECK_OK(vg_get_checkpoint_state("runs/m", &cs, &st), &st);
    CHECK(cs && cs->n_all == 2 && strcmp(cs->all_model_checkpoint_paths[0], "runs/m/model.ckpt-2") == 0);
    vg_checkpoint_state_free(cs);
    /* "./runs/m/..." normalizes the same way (os.path.relpath) */
    CHECK_OK(vg_saver_save(m.saver, m.sess, "./runs/m/model.ckpt", 4, path, sizeof path, &st), &st);
    text = read_text("runs/m/checkpoint");
    CHECK(text && strstr(text, "model_checkpoint_path: \"model.ckpt-4\"\n") == text);
    vg__free(text);
    /* no directory part: state file in the cwd */
    CHECK_OK(vg_saver_save(m.saver, m.sess, "model.ckpt", 1, path, sizeof path, &st), &st);
    text = read_text("checkpoint");
    CHECK(text && strstr(text, "model_checkpoint_path: \"model.ckpt-1\"\n") == text);
    vg__free(text);
    latest = vg_latest_checkpoint("", buf, sizeof buf);
    CHECK(latest && strcmp(latest, "model.ckpt-1") == 0);
    small_free(&m);
    CHECK(chdir(cwd) == 0);
}

/* max_to_keep 0: nothing deleted, the state file lists only the newest. */
static void test_saver__max_to_keep_zero(void) {
    reset_tmpdir();
    small m;
    vg_saver_options o = {0};
    o.keep_all_checkpoints = true;
    small_build(&m, &o);
    char prefix[512], path[512], p[600];
    vg_status st;
    tmp_path(prefix, "m");
    for (int step = 1; step <= 7; step++)
        CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, step, path, sizeof path, &st), &st);
    for (int step = 1; step <= 7; step++) {
        snprintf(p, sizeof p, "%s-%d", prefix, step);
        CHECK(ckpt_files_exist(p));
    }
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(m.saver), 0);
    char *text = read_text(tmp_path(p, "checkpoint")), expect[1200];
    snprintf(expect, sizeof expect, "model_checkpoint_path: \"%s-7\"\nall_model_checkpoint_paths: \"%s-7\"\n", prefix,
             prefix);
    CHECK(text && strcmp(text, expect) == 0);
    vg__free(text);
    small_free(&m);
}

/* keep_checkpoint_every_n_hours: a checkpoint leaving the window after the deadline
 * stays on disk but leaves the list. */
static void test_saver__keep_every_n_hours(void) {
    reset_tmpdir();
    small m;
    vg_saver_options o = {0};
    o.max_to_keep = 1;
    o.keep_checkpoint_every_n_hours = 1e-3 / 3600.0; /* 1 ms */
    small_build(&m, &o);
    char prefix[512], path[512], p[600];
    vg_status st;
    tmp_path(prefix, "m");
    for (int step = 1; step <= 3; step++) {
        usleep(5000);
        CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, step, path, sizeof path, &st), &st);
    }
    for (int step = 1; step <= 3; step++) {
        snprintf(p, sizeof p, "%s-%d", prefix, step);
        CHECK(ckpt_files_exist(p));
    }
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(m.saver), 1);
    small_free(&m);
    /* default (10000 h): deleted */
    reset_tmpdir();
    o.keep_checkpoint_every_n_hours = 10000;
    small_build(&m, &o);
    for (int step = 1; step <= 3; step++)
        CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, step, path, sizeof path, &st), &st);
    CHECK(!path_existsf("%s-1.index", prefix));
    CHECK(!path_existsf("%s-2.index", prefix));
    small_free(&m);
}

/* recover_last_checkpoints adopts the existing paths (ignoring deleted ones) so that
 * later saves delete them. */
static void test_saver__recover_last_checkpoints(void) {
    reset_tmpdir();
    small m;
    vg_saver_options o = {0};
    o.max_to_keep = 2;
    small_build(&m, &o);
    char prefix[512], path[512], p[3][600];
    vg_status st;
    tmp_path(prefix, "m");
    for (int step = 1; step <= 3; step++)
        CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, step, path, sizeof path, &st), &st);
    small_free(&m);
    small_build(&m, &o); /* a restart */
    vg_checkpoint_state *cs = NULL;
    CHECK_OK(vg_get_checkpoint_state(g_dir, &cs, &st), &st);
    for (int i = 0; i < 3; i++) snprintf(p[i], 600, "%s-%d", prefix, i + 1);
    const char *paths[3] = {p[0], p[1], p[2]};
    vg_saver_recover_last_checkpoints(m.saver, paths, 3);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(m.saver), 2); /* -1 is gone */
    CHECK(cs && cs->n_all == 2);
    vg_checkpoint_state_free(cs);
    CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, 4, path, sizeof path, &st), &st);
    CHECK(!ckpt_files_exist(p[1]));
    CHECK(ckpt_files_exist(p[2]));
    small_free(&m);
}

/* Variables named like the TF model's: restore TF-written checkpoints. */
static void test_saver__restore_tf_checkpoints(void) {
    vg_status st;
    {
        vg_graph *g = vg_graph_new();
        int64_t one = 1;
        vg_variable w = vg_get_variable(g, "w", VG_FLOAT, &one, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
        vg_variable b = vg_get_variable(g, "b", VG_FLOAT, &one, 1, vg_init_ones(), VG_VAR_TRAINABLE);
        vg_saver *sv = vg_saver_new(g, NULL, &st);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_saver_restore(sv, s, TD "/rust_regression_model_tf1.2/variables/variables", &st), &st);
        vg_tensor *tw = fetch(s, w.ref), *tb = fetch(s, b.ref);
        CHECK(tw && *(float *)vg_tensor_data(tw) == (float)-0.8578622341156006);
        CHECK(tb && *(float *)vg_tensor_data(tb) == 0.0f);
        vg_tensor_free(tw);
        vg_tensor_free(tb);
        free_session_saver_graph(s, sv, g);
    }
    {
        /* TF 1.14, Snappy-compressed index */
        vg_graph *g = vg_graph_new();
        vg_variable v[3];
        const char *names[3] = {"a", "b", "c"};
        const float want[3] = {0.5f, 2.0f, 3.0f};
        for (int i = 0; i < 3; i++) v[i] = vg_get_variable(g, names[i], VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
        vg_saver *sv = vg_saver_new(g, NULL, &st);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_saver_restore(sv, s, TD "/serving_half_plus_two_cpu_tf1.14/variables/variables", &st), &st);
        for (int i = 0; i < 3; i++) {
            vg_tensor *t = fetch(s, v[i].ref);
            CHECK(t && vg_tensor_ndims(t) == 0 && *(float *)vg_tensor_data(t) == want[i]);
            vg_tensor_free(t);
        }
        free_session_saver_graph(s, sv, g);
    }
}

/* A model with w [n] and b [1] set to 7 and 8, for the error paths. */
typedef struct twovar {
    vg_graph *g;
    vg_variable w, b;
    vg_saver *saver;
    vg_session *sess;
} twovar;

static void twovar_build(twovar *m, vg_dtype wdt, int64_t wn, bool extra) {
    m->g = vg_graph_new();
    int64_t one = 1;
    m->w = vg_get_variable(m->g, "w", wdt, &wn, 1, vg_init_constant(7), VG_VAR_TRAINABLE);
    m->b = vg_get_variable(m->g, "b", VG_FLOAT, &one, 1, vg_init_constant(8), VG_VAR_TRAINABLE);
    if (extra) vg_get_variable(m->g, "z", VG_FLOAT, &one, 1, vg_init_zeros(), 0);
    vg_op *init = vg_global_variables_initializer(m->g);
    vg_status st;
    m->saver = vg_saver_new(m->g, NULL, &st);
    m->sess = vg_session_new(m->g, NULL, &st);
    CHECK_OK(vg_session_run_targets(m->sess, &init, 1, &st), &st);
}

static bool twovar_untouched(twovar *m) {
    vg_tensor *w = fetch(m->sess, m->w.ref), *b = fetch(m->sess, m->b.ref);
    bool ok = w && b && vg_tensor_scalar(w) == 7.0 && vg_tensor_scalar(b) == 8.0;
    vg_tensor_free(w);
    vg_tensor_free(b);
    return ok;
}

static void twovar_free(twovar *m) {
    vg_session_free(m->sess);
    vg_saver_free(m->saver);
    vg_graph_free(m->g);
}

#define RUST_CKPT TD "/rust_regression_model_tf1.2/variables/variables"

static void test_saver__restore_errors_leave_variables(void) {
    vg_status st;
    twovar m;
    /* a key missing from the checkpoint */
    twovar_build(&m, VG_FLOAT, 1, true);
    CHECK_STATUS(vg_saver_restore(m.saver, m.sess, RUST_CKPT, &st), &st, VG_NOT_FOUND, "Key z not found in checkpoint");
    CHECK(twovar_untouched(&m));
    twovar_free(&m);
    /* shape mismatch, naming the tensor */
    twovar_build(&m, VG_FLOAT, 2, false);
    CHECK_STATUS(vg_saver_restore(m.saver, m.sess, RUST_CKPT, &st), &st, VG_INVALID_ARGUMENT, "tensor w has shape [1]");
    CHECK_STR_CONTAINS(st.msg, "lhs shape= [2] rhs shape= [1]");
    CHECK(twovar_untouched(&m));
    /* the same through the raw ops: the Assign fails, but only after RestoreV2 read all */
    twovar_free(&m);
    /* dtype mismatch */
    twovar_build(&m, VG_DOUBLE, 1, false);
    CHECK_STATUS(vg_saver_restore(m.saver, m.sess, RUST_CKPT, &st), &st, VG_INVALID_ARGUMENT,
                 "tensor_name = w; expected dtype double does not equal original dtype float");
    CHECK(twovar_untouched(&m));
    /* and from the kernel itself when the restore op is run directly */
    vg_output feed = vg_saver_filename_tensor(m.saver);
    vg_tensor *fn = vg_tensor_new_string_scalar(RUST_CKPT, strlen(RUST_CKPT), &st);
    vg_op *restore = vg_saver_restore_op(m.saver);
    CHECK_CODE(vg_session_run(m.sess, NULL, &feed, &fn, 1, NULL, NULL, 0, &restore, 1, NULL, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "tensor_name = w; expected dtype double does not equal original dtype float");
    CHECK(twovar_untouched(&m));
    vg_tensor_free(fn);
    twovar_free(&m);
    /* not a checkpoint at all / missing directory */
    twovar_build(&m, VG_FLOAT, 1, false);
    /* saver_test.py testBadPath / ValueError -> INVALID_ARGUMENT, TF's message */
    CHECK_STATUS(vg_saver_restore(m.saver, m.sess, "/nonexistent_dir_vg/model.ckpt-1", &st), &st, VG_INVALID_ARGUMENT,
                 "The passed save_path is not a valid checkpoint: /nonexistent_dir_vg/model.ckpt-1");
    CHECK_CODE(vg_saver_restore(m.saver, m.sess, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK(twovar_untouched(&m));
    twovar_free(&m);
}

/* Writes a copy of a file with byte `at` xor'ed (or truncated to `at` bytes). */
static void corrupt_copy(const char *src, const char *dst, long at, bool truncate) {
    uint8_t *d;
    size_t n;
    if (vg__io_read_file(src, &d, &n, NULL)) return;
    if (!truncate && at >= 0 && (size_t)at < n) d[at] ^= 0x40;
    FILE *f = fopen(dst, "wb");
    if (f) {
        fwrite(d, 1, truncate ? (size_t)at : n, f);
        fclose(f);
    }
    vg__free(d);
}

static void test_saver__corrupt_checkpoints(void) {
    reset_tmpdir();
    vg_status st;
    twovar m;
    twovar_build(&m, VG_FLOAT, 1, false);
    char prefix[512], path[512], p[600], q[600];
    tmp_path(prefix, "good");
    CHECK_OK(vg_saver_save(m.saver, m.sess, prefix, -1, path, sizeof path, &st), &st);
    /* bad: a flipped data byte in w (data order b, w: offset 4) */
    snprintf(p, sizeof p, "%s.index", prefix);
    snprintf(q, sizeof q, "%s/bad.index", g_dir);
    corrupt_copy(p, q, -1, false);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    snprintf(q, sizeof q, "%s/bad.data-00000-of-00001", g_dir);
    corrupt_copy(p, q, 5, false);
    /* trunc: data file cut short */
    snprintf(q, sizeof q, "%s/trunc.data-00000-of-00001", g_dir);
    corrupt_copy(p, q, 6, true);
    snprintf(p, sizeof p, "%s.index", prefix);
    snprintf(q, sizeof q, "%s/trunc.index", g_dir);
    corrupt_copy(p, q, -1, false);
    /* badindex: a flipped byte in the index's data block */
    snprintf(q, sizeof q, "%s/badindex.index", g_dir);
    corrupt_copy(p, q, 3, false);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    snprintf(q, sizeof q, "%s/badindex.data-00000-of-00001", g_dir);
    corrupt_copy(p, q, -1, false);
    /* try to restore each broken copy */
    const char *bad[3] = {"bad", "trunc", "badindex"};
    for (int i = 0; i < 3; i++) {
        CHECK_CODE(vg_saver_restore(m.saver, m.sess, tmp_path(p, bad[i]), &st), VG_DATA_LOSS);
        CHECK(twovar_untouched(&m));
    }
    CHECK_STATUS(vg_saver_restore(m.saver, m.sess, tmp_path(p, "bad"), &st), &st, VG_DATA_LOSS, "w");
    CHECK_OK(vg_saver_restore(m.saver, m.sess, prefix, &st), &st);
    CHECK(twovar_untouched(&m));
    twovar_free(&m);
}

static void test_saver__save_errors(void) {
    reset_tmpdir();
    vg_status st;
    twovar m;
    twovar_build(&m, VG_FLOAT, 1, false);
    char prefix[512], path[512];
    /* missing directory */
    tmp_path(prefix, "missing/dir/model.ckpt");
    /* saver_test.py testSaveToNonexistingPath: ValueError -> INVALID_ARGUMENT */
    CHECK_CODE(vg_saver_save(m.saver, m.sess, prefix, 1, path, sizeof path, &st), VG_INVALID_ARGUMENT);
    char want[600];
    snprintf(want, sizeof want, "Parent directory of %s doesn't exist, can't save.", prefix);
    CHECK_STR_CONTAINS(st.msg, want);
    CHECK(path[0] == 0);
    /* a save path that collides with the state file */
    tmp_path(prefix, "checkpoint");
    CHECK_CODE(vg_saver_save(m.saver, m.sess, prefix, -1, path, sizeof path, &st), VG_INVALID_ARGUMENT);
    /* uninitialized variables */
    vg_session *fresh = vg_session_new(m.g, NULL, &st);
    tmp_path(prefix, "model.ckpt");
    CHECK_STATUS(vg_saver_save(m.saver, fresh, prefix, 1, path, sizeof path, &st), &st, VG_FAILED_PRECONDITION,
                 "uninitialized");
    vg_session_free(fresh);
    char p[600];
    CHECK(!path_exists(tmp_path(p, "checkpoint")));
    CHECK(!path_exists(tmp_path(p, "model.ckpt-1.meta"))); /* removed with the failed save */
    CHECK(!path_exists(tmp_path(p, "model.ckpt-1.index")));
    /* path_out too small: still saved, reported */
    char tiny[4];
    CHECK_CODE(vg_saver_save(m.saver, m.sess, prefix, 1, tiny, sizeof tiny, &st), VG_INVALID_ARGUMENT);
    twovar_free(&m);
}

/* saver_test.py testSaveToNonexistingPath: each of the three paths (a missing parent,
 * missing grandparents, a parent that is a file) fails with TF's ValueError message,
 * exactly, as INVALID_ARGUMENT (vigil's ValueError); testInvalidPath: restoring "invalid
 * path" is ValueError "The passed save_path is not a valid checkpoint: invalid path". */
static void test_saver__value_errors(void) {
    reset_tmpdir();
    vg_status st;
    twovar m;
    twovar_build(&m, VG_FLOAT, 1, false);
    char file[512];
    FILE *f = fopen(tmp_path(file, "actually_a_file"), "w");
    if (f) fclose(f);
    const char *rel[3] = {"nonexisting_dir/path", "other_nonexisting_dir/path1/path2", "actually_a_file/path"};
    for (int i = 0; i < 3; i++) {
        char prefix[512], want[700];
        tmp_path(prefix, rel[i]);
        CHECK_CODE(vg_saver_save(m.saver, m.sess, prefix, -1, NULL, 0, &st), VG_INVALID_ARGUMENT);
        snprintf(want, sizeof want, "Parent directory of %s doesn't exist, can't save.", prefix);
        CHECK(strcmp(st.msg, want) == 0);
        if (strcmp(st.msg, want)) fprintf(stderr, "got: %s\n", st.msg);
    }
    CHECK_CODE(vg_saver_restore(m.saver, m.sess, "invalid path", &st), VG_INVALID_ARGUMENT);
    CHECK(strcmp(st.msg, "The passed save_path is not a valid checkpoint: invalid path") == 0);
    CHECK(twovar_untouched(&m));
    twovar_free(&m);
}

static void test_saver__constructor_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    CHECK(vg_saver_new(g, NULL, &st) == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "No variables to save");
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_saver_options o = {0};
    o.var_list = &x;
    o.nvars = 1;
    EXPECT_REFUSED(vg_saver_new(g, &o, &st), &st, VG_INVALID_ARGUMENT);
    int64_t one = 1;
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, &one, 1, vg_init_zeros(), 0);
    vg_output two[2] = {v.ref, v.ref};
    o.var_list = two;
    o.nvars = 2;
    CHECK(vg_saver_new(g, &o, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "At least two variables have the same name: v");
    /* a second saver gets its own scope */
    vg_saver *s1 = vg_saver_new(g, NULL, &st), *s2 = vg_saver_new(g, NULL, &st);
    CHECK(s1 && s2);
    if (s1 && s2) {
        CHECK(strcmp(vg_op_name(vg_saver_filename_tensor(s1).op), "save/Const") == 0);
        CHECK(strcmp(vg_op_name(vg_saver_save_tensor(s1).op), "save/control_dependency") == 0);
        CHECK(strcmp(vg_op_name(vg_saver_restore_op(s2)), "save_1/restore_all") == 0);
    }
    vg_saver_free(s1);
    vg_saver_free(s2);
    vg_graph_finalize(g);
    EXPECT_REFUSED(vg_saver_new(g, NULL, &st), &st, VG_FAILED_PRECONDITION);
    vg_graph_free(g);
}

/* A var_list subset: only those are saved and restored. */
static void test_saver__var_list(void) {
    reset_tmpdir();
    vg_status st;
    twovar m;
    twovar_build(&m, VG_FLOAT, 1, false);
    vg_saver_options o = {0};
    o.var_list = &m.b.ref;
    o.nvars = 1;
    o.name = "only_b";
    vg_saver *sb = vg_saver_new(m.g, &o, &st);
    CHECK(sb != NULL);
    CHECK(sb && strcmp(vg_op_name(vg_saver_restore_op(sb)), "only_b/restore_all") == 0);
    vg_session *s = vg_session_new(m.g, NULL, &st); /* w stays uninitialized here */
    vg_session_free(m.sess);
    m.sess = s;
    char prefix[512], path[512];
    tmp_path(prefix, "b_only");
    /* uninitialized w does not matter: only b is saved */
    vg_op *binit = m.b.initializer;
    CHECK_OK(vg_session_run_targets(s, &binit, 1, &st), &st);
    CHECK_OK(vg_saver_save(sb, s, prefix, -1, path, sizeof path, &st), &st);
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    CHECK(r && vg_checkpoint_reader_num_tensors(r) == 1);
    vg_checkpoint_reader_free(r);
    vg_saver_free(sb);
    twovar_free(&m);
}

/* Big tensors are read in parallel chunks (8 MiB) whose CRCs are combined: values, a
 * flipped byte in the middle chunk, a truncated file; nothing assigned on failure. */
static void test_saver__big_tensor_chunked(void) {
    reset_tmpdir();
    vg_status st;
    enum { N = 5 * 1000 * 1000 + 3 }; /* 20 MB: chunks of 8, 8 and 4 MiB-ish */
    float *v = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) v[i] = (float)i * 0.5f;
    int64_t n = N;
    vg_graph *g = vg_graph_new();
    vg_variable big = vg_variable_new(g, "big", vg_const_array(g, VG_FLOAT, &n, 1, v, NULL), 0);
    vg_variable small = vg_get_variable(g, "small", VG_FLOAT, NULL, 0, vg_init_constant(3), 0);
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    char prefix[512], path[512], p[600], q[600];
    tmp_path(prefix, "big");
    CHECK_OK(vg_saver_save(sv, s, prefix, -1, path, sizeof path, &st), &st);
    vg_session *s2 = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_saver_restore(sv, s2, path, &st), &st);
    vg_tensor *t = fetch(s2, big.ref), *u = fetch(s2, small.ref);
    CHECK(t && vg_tensor_num_elements(t) == N && memcmp(vg_tensor_data(t), v, sizeof(float) * N) == 0);
    CHECK(u && vg_tensor_scalar(u) == 3.0);
    vg_tensor_free(t);
    vg_tensor_free(u);
    /* corrupt copies: data file order is big (offset 0), small */
    snprintf(p, sizeof p, "%s.index", prefix);
    snprintf(q, sizeof q, "%s/flip.index", g_dir);
    corrupt_copy(p, q, -1, false);
    snprintf(q, sizeof q, "%s/cut.index", g_dir);
    corrupt_copy(p, q, -1, false);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    snprintf(q, sizeof q, "%s/flip.data-00000-of-00001", g_dir);
    corrupt_copy(p, q, 10 * 1000 * 1000, false);
    snprintf(q, sizeof q, "%s/cut.data-00000-of-00001", g_dir);
    corrupt_copy(p, q, 12 * 1000 * 1000, true);
    vg_session *s3 = vg_session_new(g, NULL, &st);
    CHECK_STATUS(vg_saver_restore(sv, s3, tmp_path(p, "flip"), &st), &st, VG_DATA_LOSS,
                 "Checksum does not match for tensor big");
    CHECK(fetch(s3, big.ref) == NULL && fetch(s3, small.ref) == NULL); /* nothing assigned */
    CHECK_STATUS(vg_saver_restore(sv, s3, tmp_path(p, "cut"), &st), &st, VG_DATA_LOSS, "truncated");
    CHECK(fetch(s3, big.ref) == NULL && fetch(s3, small.ref) == NULL);
    vg_session_free(s3);
    vg_session_free(s2);
    free_session_saver_graph(s, sv, g);
    free(v);
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_saver__round_trip_all_dtypes);
    RUN_TEST(test_saver__meta_file);
    RUN_TEST(test_saver__checkpoint_file_absolute);
    RUN_TEST(test_saver__checkpoint_file_relative);
    RUN_TEST(test_saver__max_to_keep_zero);
    RUN_TEST(test_saver__keep_every_n_hours);
    RUN_TEST(test_saver__recover_last_checkpoints);
    RUN_TEST(test_saver__restore_tf_checkpoints);
    RUN_TEST(test_saver__restore_errors_leave_variables);
    RUN_TEST(test_saver__corrupt_checkpoints);
    RUN_TEST(test_saver__save_errors);
    RUN_TEST(test_saver__value_errors);
    RUN_TEST(test_saver__constructor_errors);
    RUN_TEST(test_saver__var_list);
    RUN_TEST(test_saver__big_tensor_chunked);
    remove_tmpdir();
    TEST_MAIN_END();
}
