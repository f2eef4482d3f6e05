/* hook_test_util.h - helpers shared by the hook / scaffold / MonitoredTrainingSession
 * tests (test_hooks_*.c, test_scaffold.c, test_mts.c): a mocked clock, a small model
 * whose train op increments the global step after the hooks' global-step read, a
 * wrapper hook that hides after_create_session (TF's tests drive a bare _HookedSession
 * that never calls it), log capture, temporary directories, checkpoint and event-file
 * readers. Include after test_util.h. */
#ifndef VG_HOOK_TEST_UTIL_H
#define VG_HOOK_TEST_UTIL_H
#include "vigil/hooks.h"
#include "vigil/vigil.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- mocked clock (vg_hooks_set_clock) ---- */
static double ht_now_value = 1484695987.209386; /* TF's tests use a realistic start time */
static inline double ht_fake_now(void) { return ht_now_value; }
static inline void ht_clock_mock(double t) {
    ht_now_value = t;
    vg_hooks_set_clock(ht_fake_now);
}
static inline void ht_clock_restore(void) { vg_hooks_set_clock(NULL); }

static inline double ht_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static inline void ht_sleep(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- log capture (vg_log_set) ---- */
static char ht_log_buf[1 << 16];
static int ht_log_warnings;
static inline void ht_log_fn(void *p, vg_log_level level, const char *msg) {
    (void)p;
    if (level >= VG_LOG_WARN) ht_log_warnings++;
    size_t n = strlen(ht_log_buf);
    if (n + strlen(msg) + 2 < sizeof ht_log_buf) {
        memcpy(ht_log_buf + n, msg, strlen(msg));
        ht_log_buf[n + strlen(msg)] = '\n';
        ht_log_buf[n + strlen(msg) + 1] = 0;
    }
}
static inline void ht_log_capture(void) {
    ht_log_buf[0] = 0;
    ht_log_warnings = 0;
    vg_log_set(ht_log_fn, NULL, VG_LOG_INFO);
}
static inline void ht_log_release(void) { vg_log_set(NULL, NULL, VG_LOG_WARN); }

/* ---- a model: global step, train op = AssignAdd(global_step, 1) that runs after the
 * hooks' read tensor (TF's training_util._increment_global_step), and an op setting the
 * global step to a fed value (for a raw session). ---- */
typedef struct ht_model {
    vg_graph *g;
    vg_output gs;      /* the global step variable */
    vg_output read;    /* "global_step/add" (the hooks' cached read) */
    vg_op *train;      /* global_step += 1 */
    vg_output new_gs;  /* int64 placeholder */
    vg_op *set_gs;     /* global_step = new_gs */
} ht_model;

static inline ht_model ht_model_make_on(vg_graph *g) {
    ht_model m;
    vg_status st;
    m.g = g;
    m.gs = vg_get_or_create_global_step(m.g);
    m.read.op = NULL;
    m.read.index = 0;
    if (vg_global_step_read(m.g, &m.read, &st) != VG_OK) fprintf(stderr, "global step read: %s\n", st.msg);
    vg_graph_push_control_deps(m.g, &m.read.op, 1);
    m.train = vg_assign_add(m.g, m.gs, vg_const_i64(m.g, 1, "one"), "train").op;
    vg_graph_pop_control_deps(m.g);
    m.new_gs = vg_placeholder(m.g, VG_INT64, NULL, 0, "new_gs");
    m.set_gs = vg_assign(m.g, m.gs, m.new_gs, true, "set_gs").op;
    return m;
}
static inline ht_model ht_model_make(void) { return ht_model_make_on(vg_graph_new()); }

/* Sets the global step on a raw session. */
static inline vg_code ht_set_gs(vg_session *sess, const ht_model *m, int64_t v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new_scalar_i64(v, NULL);
    vg_code rc = vg_session_run(sess, NULL, &m->new_gs, &t, 1, NULL, NULL, 0, (vg_op *const *)&m->set_gs, 1, NULL, &st);
    if (rc != VG_OK) fprintf(stderr, "set_gs: %s\n", st.msg);
    vg_tensor_free(t);
    return rc;
}
static inline int64_t ht_get_gs(vg_session *sess, const ht_model *m) {
    vg_status st;
    vg_tensor *t = NULL;
    if (vg_session_run1(sess, m->gs, &t, &st) != VG_OK) return -1;
    int64_t v = *(const int64_t *)vg_tensor_data(t);
    vg_tensor_free(t);
    return v;
}

/* One monitored run of the train op (no fetches). */
static inline vg_code ht_run_train(vg_monitored_session *ms, const ht_model *m, vg_status *st) {
    vg_run_args a = {0};
    a.targets = (vg_op *const *)&m->train;
    a.ntargets = 1;
    return vg_monitored_session_run(ms, &a, NULL, NULL, st);
}
/* One monitored run with nothing of the caller's (the hooks' fetches only). */
static inline vg_code ht_run_nothing(vg_monitored_session *ms, vg_status *st) {
    vg_run_args a = {0};
    return vg_monitored_session_run(ms, &a, NULL, NULL, st);
}

/* Runs the monitored session fetching f: f's scalar value (-1 when nothing came back),
 * the run's code in *rc. */
static inline double ht_fetch_scalar(vg_monitored_session *ms, vg_output f, vg_code *rc, vg_status *st) {
    vg_run_args a = {0};
    vg_tensor *out[1] = {NULL};
    a.fetches = &f;
    a.nfetches = 1;
    *rc = vg_monitored_session_run(ms, &a, out, NULL, st);
    double v = out[0] ? vg_tensor_scalar(out[0]) : -1;
    vg_tensor_free(out[0]);
    return v;
}

/* ---- a wrapper hook without after_create_session: TF's hook tests drive a bare
 * _HookedSession, which never calls it. The wrapper owns the inner hook. ---- */
static inline vg_code nacs_begin(void *p, vg_graph *g, vg_status *st) {
    vg_hook *h = p;
    return h->begin ? h->begin(h->payload, g, st) : VG_OK;
}
static inline vg_code nacs_before(void *p, vg_run_context *ctx, vg_run_args *a, vg_status *st) {
    vg_hook *h = p;
    return h->before_run ? h->before_run(h->payload, ctx, a, st) : VG_OK;
}
static inline vg_code nacs_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    vg_hook *h = p;
    return h->after_run ? h->after_run(h->payload, ctx, v, st) : VG_OK;
}
static inline vg_code nacs_end(void *p, vg_session *s, vg_status *st) {
    vg_hook *h = p;
    return h->end ? h->end(h->payload, s, st) : VG_OK;
}
static inline void nacs_destroy(void *p) {
    vg_hook *h = p;
    vg_hook_free(h);
    free(h);
}
static inline vg_hook ht_without_after_create(vg_hook inner) {
    vg_hook *h = malloc(sizeof *h);
    *h = inner;
    vg_hook w = {"no_after_create", nacs_begin, NULL, nacs_before, nacs_after, nacs_end, nacs_destroy, h};
    return w;
}

/* A SingularMonitoredSession with a scaffold and hooks (owned by the session). */
static inline vg_monitored_session *ht_singular(vg_graph *g, vg_scaffold *sc, const char *ckpt_dir,
                                                vg_hook *hooks, int n, vg_status *st) {
    vg_singular_options o = {0};
    o.hooks = hooks;
    o.nhooks = n;
    o.scaffold = sc;
    o.checkpoint_dir = ckpt_dir;
    vg_monitored_session *ms = vg_singular_monitored_session_new(g, &o, st);
    if (!ms) fprintf(stderr, "singular session: %s\n", st->msg);
    return ms;
}


/* ChiefSessionCreator / WorkerSessionCreator as a value (tests only; an empty creator
 * on failure, which makes vg_monitored_session_new use a default one) */
static inline vg_session_creator ht_creator(vg_graph *g, vg_scaffold *sc, const char *dir, const char *path,
                                    double max_wait, bool chief) {
    vg_session_creator_options o = {0};
    vg_session_creator c;
    o.scaffold = sc;
    o.checkpoint_dir = dir;
    o.checkpoint_filename_with_path = path;
    if (max_wait >= 0) o.max_wait_secs = max_wait;
    if ((chief ? vg_chief_session_creator(g, &o, &c, NULL) : vg_worker_session_creator(g, &o, &c, NULL)) != VG_OK)
        fprintf(stderr, "session creator failed\n");
    return c;
}

/* ---- temporary directories (tu_mkdtemp, tu_rmrf of test_util.h) ---- */
static inline bool ht_exists(const char *dir, const char *name) {
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}
/* Files in dir whose name starts with prefix and ends with suffix. */
static inline int ht_count_files(const char *dir, const char *prefix, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name), ls = strlen(suffix);
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && l >= ls && strcmp(e->d_name + l - ls, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* ---- checkpoints ---- */
/* The global step stored in the newest checkpoint of dir, -1 if none. */
static inline int64_t ht_ckpt_gs(const char *dir) {
    char path[4096];
    vg_status st;
    if (!vg_latest_checkpoint(dir, path, sizeof path)) return -1;
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    if (!r) return -1;
    vg_tensor *t = vg_checkpoint_reader_read(r, "global_step", &st);
    int64_t v = t ? *(const int64_t *)vg_tensor_data(t) : -1;
    vg_tensor_free(t);
    vg_checkpoint_reader_free(r);
    return v;
}

/* ---- event files: everything the hooks wrote into a directory ---- */
typedef struct ht_value {
    int64_t step;
    char tag[128];
    bool has_scalar;
    double value;
} ht_value;

typedef struct ht_events {
    ht_value v[512];   /* summary values, file order */
    int nv;
    int nsummary_events;
    int64_t start_steps[16];      /* SessionLog START */
    int nstart;
    int64_t ckpt_steps[64];       /* SessionLog CHECKPOINT */
    int nckpt;
    int ngraph, nmeta;            /* graph_def / meta_graph_def events */
    bool meta_has_saver;          /* a meta graph naming the saver's filename tensor */
    char rm_tags[16][64];         /* tagged run metadata */
    int64_t rm_steps[16];
    int nrm;
} ht_events;

static inline bool ht_mem_has(const uint8_t *p, size_t n, const char *s) {
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, s, k)) return true;
    return false;
}

static inline void ht_read_event_file(const char *path, ht_events *e) {
    vg_status st;
    vg_event_reader *r = vg_event_reader_open(path, &st);
    if (!r) {
        fprintf(stderr, "cannot open %s: %s\n", path, st.msg);
        return;
    }
    vg_event ev;
    while (vg_event_reader_next(r, &ev, &st) == VG_OK) {
        switch (ev.kind) {
        case VG_EVENT_SUMMARY: {
            e->nsummary_events++;
            vg_summary_iter it;
            vg_summary_value v;
            vg_summary_iter_init(&it, ev.payload, ev.payload_len);
            while (vg_summary_iter_next(&it, &v, &st) == VG_OK && e->nv < 512) {
                ht_value *o = &e->v[e->nv++];
                o->step = ev.step;
                snprintf(o->tag, sizeof o->tag, "%.*s", (int)v.tag_len, v.tag);
                o->has_scalar = v.has_scalar;
                o->value = v.scalar;
            }
            break;
        }
        case VG_EVENT_SESSION_LOG:
            if (ev.session_log_status == VG_SESSION_LOG_START && e->nstart < 16) e->start_steps[e->nstart++] = ev.step;
            if (ev.session_log_status == VG_SESSION_LOG_CHECKPOINT && e->nckpt < 64) e->ckpt_steps[e->nckpt++] = ev.step;
            break;
        case VG_EVENT_GRAPH_DEF: e->ngraph++; break;
        case VG_EVENT_META_GRAPH_DEF:
            e->nmeta++;
            if (ht_mem_has(ev.payload, ev.payload_len, "save/Const:0")) e->meta_has_saver = true;
            break;
        case VG_EVENT_TAGGED_RUN_METADATA:
            if (e->nrm >= 16) break;
            snprintf(e->rm_tags[e->nrm], 64, "%.*s", (int)ev.tag_len, ev.tag ? ev.tag : "");
            e->rm_steps[e->nrm++] = ev.step;
            break;
        default: break;
        }
    }
    vg_event_reader_close(r);
}

/* Reads every event file of dir (sorted by name) into *e (zeroed first). Returns the
 * number of event files. */
static inline int ht_read_events(const char *dir, ht_events *e) {
    memset(e, 0, sizeof *e);
    DIR *d = opendir(dir);
    if (!d) return 0;
    char names[16][512];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 16)
        if (strncmp(de->d_name, "events.out.tfevents.", 20) == 0) snprintf(names[n++], 512, "%s", de->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            if (strcmp(names[k], names[i]) < 0) {
                char t[512];
                memcpy(t, names[i], 512);
                memcpy(names[i], names[k], 512);
                memcpy(names[k], t, 512);
            }
    for (int i = 0; i < n; i++) {
        char p[4700];
        snprintf(p, sizeof p, "%.4000s/%.500s", dir, names[i]);
        ht_read_event_file(p, e);
    }
    return n;
}

/* Steps of the summary values with this tag, in order; returns the count. */
static inline int ht_steps_of(const ht_events *e, const char *tag, int64_t *steps, double *values, int max) {
    int n = 0;
    for (int i = 0; i < e->nv; i++)
        if (!strcmp(e->v[i].tag, tag)) {
            if (n < max) {
                if (steps) steps[n] = e->v[i].step;
                if (values) values[n] = e->v[i].value;
            }
            n++;
        }
    return n;
}
static inline bool ht_has_tag(const ht_events *e, const char *tag) { return ht_steps_of(e, tag, NULL, NULL, 0) > 0; }

/* Flushes the cached writer of dir (the hooks' writers are cached per directory). */
static inline void ht_flush_dir(const char *dir) {
    vg_status st;
    vg_file_writer *w = vg_file_writer_cache_get(dir, &st);
    if (w) vg_file_writer_flush(w, &st);
}

/* Test fixtures shared by the tests of tests/monitored. */

/* The start of a test that writes into a fresh directory on the mocked clock: makes dir
 * (n bytes; /tmp/vg_<tag>_XXXXXX, dir[0] == 0 on failure) and sets the clock to the
 * start time of TF's hook tests. End the test with ht_end_dir. */
static inline void ht_begin_dir(char *dir, size_t n, const char *tag) {
    tu_mkdtemp(dir, n, tag);
    ht_clock_mock(1484695987.209386);
}
/* The end of such a test: the real clock again, and dir removed. */
static inline void ht_end_dir(const char *dir) {
    ht_clock_restore();
    tu_rmrf(dir);
}

/* Ends ms as a with-block that exits normally does (end(VG_OK); its status is not
 * checked here) and frees it. */
static inline void ht_close_session(vg_monitored_session *ms) {
    vg_status st;
    vg_monitored_session_end(ms, VG_OK, &st);
    vg_monitored_session_free(ms);
}

/* TF's StepCounterHookTest.test_global_step_name graph: a new graph whose global step is
 * get_variable('foo', dtype, initializer=0) under variable_scope('bar') ("bar/foo"),
 * added to GLOBAL_STEP; *gs receives the variable. */
static inline vg_graph *ht_graph_with_bar_foo_step(vg_dtype dtype, vg_variable *gs) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "bar", NULL); /* with variable_scope('bar') */
    *gs = vg_get_variable(g, "foo", dtype, NULL, 0, vg_init_zeros(), 0);
    vg_variable_scope_pop(g);
    vg_graph_add_to_collection(g, VG_GLOBAL_STEP, gs->ref);
    return g;
}

/* The usual end of a test on a graph g: frees ms (may be NULL), then g. */
static inline void ht_free_session_graph(vg_monitored_session *ms, vg_graph *g) {
    vg_monitored_session_free(ms);
    vg_graph_free(g);
}
/* ht_close_session(ms), then frees g. */
static inline void ht_close_session_graph(vg_monitored_session *ms, vg_graph *g) {
    ht_close_session(ms);
    vg_graph_free(g);
}

/* The events of dir's event files (ht_read_events) in a new ht_events; the caller frees
 * it (free). NULL when out of memory. */
static inline ht_events *ht_events_of(const char *dir) {
    ht_events *e = malloc(sizeof *e);
    if (e) ht_read_events(dir, e);
    return e;
}

/* Ends ms with VG_OK, frees it, and returns end()'s code (*st set by it). */
static inline vg_code ht_end_free(vg_monitored_session *ms, vg_status *st) {
    vg_code rc = vg_monitored_session_end(ms, VG_OK, st);
    vg_monitored_session_free(ms);
    return rc;
}

/* The user's summary of TF's MonitoredTrainingSession tests: my_summary_tag = 2 *
 * (global_step += 1), on m's train op. */
static inline void ht_user_summary(ht_model *m) {
    vg_output twice = vg_mul(m->g, vg_out(m->train, 0), vg_const_i64(m->g, 2, NULL), "twice");
    vg_summary_scalar(m->g, "my_summary_tag", twice);
}

/* The usual end of a hook test that wrote into dir: frees sc (may be NULL) and g, drops
 * the cached file writers (closing their event files) and removes dir. */
static inline void ht_cleanup(vg_scaffold *sc, vg_graph *g, const char *dir) {
    vg_scaffold_free(sc);
    vg_graph_free(g);
    vg_file_writer_cache_clear();
    tu_rmrf(dir);
}

/* The setting of most hook tests: a new temporary directory dir (/tmp/vg_<tag>_XXXXXX,
 * dir[0] == 0 on failure; ht_begin_dir's mocked clock as well when mock_clock), the
 * model of ht_model_make and an empty scaffold sc (ht_fx_make; ht_fx_make_bare: none,
 * sc NULL). ht_fx_end frees it all and removes dir. */
typedef struct ht_fx {
    char dir[64];
    ht_model m;
    vg_scaffold *sc;
    bool mock_clock;
} ht_fx;
static inline ht_fx ht_fx_make(const char *tag, bool mock_clock) {
    ht_fx f;
    if (mock_clock) ht_begin_dir(f.dir, sizeof f.dir, tag);
    else tu_mkdtemp(f.dir, sizeof f.dir, tag);
    f.m = ht_model_make();
    f.sc = vg_scaffold_new(NULL);
    f.mock_clock = mock_clock;
    return f;
}
static inline ht_fx ht_fx_make_bare(const char *tag, bool mock_clock) {
    ht_fx f;
    if (mock_clock) ht_begin_dir(f.dir, sizeof f.dir, tag);
    else tu_mkdtemp(f.dir, sizeof f.dir, tag);
    f.m = ht_model_make();
    f.sc = NULL;
    f.mock_clock = mock_clock;
    return f;
}
/* ht_cleanup of f's scaffold, graph and directory; the real clock again when it was
 * mocked. */
static inline void ht_fx_end(ht_fx *f) {
    ht_cleanup(f->sc, f->m.g, f->dir);
    if (f->mock_clock) ht_clock_restore();
}

/* The end of a session whose events a test reads: ends ms (end()'s code checked) and
 * frees it, closes the cached file writers, and returns dir's events (ht_events_of; the
 * caller frees them). */
static inline ht_events *ht_end_events_of(vg_monitored_session *ms, const char *dir) {
    vg_status st;
    CHECK_OK(ht_end_free(ms, &st), &st);
    vg_file_writer_cache_clear();
    return ht_events_of(dir);
}

/* The setup of TF's StepCounterHookTest.test_global_step_name: a fresh test dir (ht_begin_dir,
 * clock mocked) and ht_graph_with_bar_foo_step's graph. */
static inline vg_graph *ht_begin_bar_foo(char *dir, size_t n, const char *tag, vg_dtype dtype, vg_variable *gs) {
    ht_begin_dir(dir, n, tag);
    return ht_graph_with_bar_foo_step(dtype, gs);
}

#endif
