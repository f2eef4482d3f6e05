/* test_file_writer.c - vg_file_writer (tf.summary.FileWriter): file name and first
 * record, every add_* in order with its step, max_queue and flush_secs flushing, close
 * and reopen, flush on free, the writer cache, thread-safety, metadata stripping, bad
 * directories, write errors (file size limit) and allocation failures. Event files are
 * read back with the io layer's event reader. */
#include "io/io.h"
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "vigil/summary.h"
#include "vigil/vigil.h"
#include <ctype.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- reading event files back ---- */

typedef struct event {
    vg__event_info info;
    uint8_t *raw; /* the record; info's payload points into it */
    size_t len;
} event;

typedef struct events {
    event ev[512];
    int n;
} events;

static void events_free(events *e) {
    for (int i = 0; i < e->n; i++) free(e->ev[i].raw);
    e->n = 0;
}

/* Reads every complete record of the file. Returns the count (-1: cannot open). */
static int read_events(const char *path, events *e) {
    vg_status st;
    vg__tfrecord_reader *r = vg__tfrecord_reader_open(path, &st);
    e->n = 0;
    if (!r) return -1;
    const uint8_t *data;
    size_t len;
    while (e->n < 512 && vg__tfrecord_reader_next(r, &data, &len, &st) == VG_OK) {
        event *ev = &e->ev[e->n];
        ev->raw = malloc(len ? len : 1);
        memcpy(ev->raw, data, len);
        ev->len = len;
        CHECK_OK(vg__event_decode(ev->raw, len, &ev->info, &st), &st);
        e->n++;
    }
    vg__tfrecord_reader_close(r);
    return e->n;
}

static int count_events(const char *path) {
    events *e = malloc(sizeof *e);
    int n = read_events(path, e);
    events_free(e);
    free(e);
    return n;
}

/* String field `field` of a message, or NULL. */
static bool pb_string(const uint8_t *p, size_t len, int field, const char *want) {
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK)
        if (f.number == field && f.wiretype == VG__PB_LEN) return f.len == strlen(want) && !memcmp(f.data, want, f.len);
    return false;
}

/* The only value of a summary event. */
static bool summary_scalar(const event *ev, const char *tag, double value) {
    if (ev->info.kind != VG__EVENT_SUMMARY) return false;
    vg__summary_iter it;
    vg__summary_value v;
    vg_status st;
    vg__summary_iter_init(&it, ev->info.payload, ev->info.payload_len);
    if (vg__summary_next(&it, &v, &st) != VG_OK) return false;
    return v.tag_len == strlen(tag) && !memcmp(v.tag, tag, v.tag_len) && v.has_scalar && v.scalar == value;
}

#define TMPDIR_TAG "file_writer"
#include "tmpdir_util.h"

static char *make_dir(const char *name, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s", g_dir, name);
    return buf;
}

static vg_file_writer *new_writer(const char *dir, int max_queue, double flush_secs) {
    vg_file_writer_options o = {0};
    o.max_queue = max_queue;
    o.flush_secs = flush_secs;
    vg_status st;
    vg_file_writer *w = vg_file_writer_new(dir, &o, &st);
    if (!w) fprintf(stderr, "vg_file_writer_new(%s): %s\n", dir, st.msg);
    return w;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- tests ---- */

static void test_file_writer__name_and_first_record(void) {
    char dir[128];
    vg_status st;
    vg_file_writer *w = vg_file_writer_new(make_dir("a/b", dir, sizeof dir), NULL, &st); /* made recursively */
    CHECK(w != NULL);
    if (!w) return;
    CHECK(strcmp(vg_file_writer_logdir(w), dir) == 0);
    const char *path = vg_file_writer_path(w);
    char prefix[160], host[256];
    snprintf(prefix, sizeof prefix, "%s/events.out.tfevents.", dir);
    CHECK(strncmp(path, prefix, strlen(prefix)) == 0);
    const char *p = path + strlen(prefix);
    for (int i = 0; i < 10; i++) CHECK(isdigit((unsigned char)p[i]));
    CHECK(p[10] == '.');
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    CHECK(strcmp(p + 11, host) == 0);
    long long secs = atoll(p);
    CHECK(llabs(secs - (long long)time(NULL)) <= 5);

    events *e = malloc(sizeof *e);
    CHECK_EQ_INT(read_events(path, e), 1); /* the version record is flushed at once */
    if (e->n == 1) {
        CHECK_EQ_INT(e->ev[0].info.kind, VG__EVENT_FILE_VERSION);
        CHECK(e->ev[0].info.payload_len == 13 && !memcmp(e->ev[0].info.payload, "brain.Event:2", 13));
        CHECK_NEAR(e->ev[0].info.wall_time, (double)secs, 0);
        CHECK_EQ_INT(e->ev[0].info.step, 0);
    }
    events_free(e);
    free(e);
    vg_file_writer_free(w);

    /* filename_suffix */
    vg_file_writer_options o = {0};
    o.filename_suffix = ".eval";
    w = vg_file_writer_new(make_dir("suffix", dir, sizeof dir), &o, &st);
    CHECK(w != NULL);
    if (w) {
        const char *ps = vg_file_writer_path(w);
        CHECK(strlen(ps) > 5 && strcmp(ps + strlen(ps) - 5, ".eval") == 0);
    }
    vg_file_writer_free(w);
}

static void test_file_writer__events_in_order(void) {
    char dir[128];
    vg_file_writer *w = new_writer(make_dir("order", dir, sizeof dir), 100, 1e9);
    CHECK(w != NULL);
    if (!w) return;
    vg_status st;
    vg__pb_buf s;
    vg__pb_init(&s);
    vg__summary_add_scalar(&s, "loss", 0.25f);
    double t0 = vg__wall_secs();
    CHECK_OK(vg_file_writer_add_summary(w, s.data, s.len, 1, &st), &st);
    vg__pb_free(&s);
    CHECK_OK(vg_file_writer_add_scalar(w, "acc", 0.5, 2, &st), &st);
    CHECK_OK(vg_file_writer_add_session_log(w, VG_SESSION_LOG_START, NULL, NULL, 3, &st), &st);
    CHECK_OK(vg_file_writer_add_session_log(w, VG_SESSION_LOG_CHECKPOINT, "/tmp/model.ckpt-4", "saved", 4, &st), &st);
    CHECK_OK(vg_file_writer_add_session_log(w, VG_SESSION_LOG_STOP, NULL, NULL, 5, &st), &st);
    vg_run_metadata *md = vg_run_metadata_new();
    CHECK_OK(vg_file_writer_add_run_metadata(w, md, "step_6", 6, &st), &st);
    CHECK_STATUS(vg_file_writer_add_run_metadata(w, md, "step_6", 7, &st), &st, VG_INVALID_ARGUMENT, "already used");
    vg_run_metadata_free(md);
    CHECK_OK(vg_file_writer_add_meta_graph(w, "\x0a\x00", 2, 7, &st), &st);
    vg_graph *g = vg_graph_new();
    vg_const_f32(g, 1, "my_const");
    CHECK_OK(vg_file_writer_add_graph(w, g, 0, &st), &st);
    vg_graph_free(g);
    CHECK_EQ_INT(vg_file_writer_add_session_log(w, (vg_session_log_status)9, NULL, NULL, 0, &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_file_writer_add_summary(w, "\x0a\x09", 2, 0, &st), VG_INVALID_ARGUMENT);

    /* nothing reached the file yet: queue not full, flush_secs far away */
    CHECK_EQ_INT(count_events(vg_file_writer_path(w)), 1);
    CHECK_OK(vg_file_writer_flush(w, &st), &st);
    double t1 = vg__wall_secs();

    events *e = malloc(sizeof *e);
    CHECK_EQ_INT(read_events(vg_file_writer_path(w), e), 9);
    if (e->n == 9) {
        event *v = e->ev;
        CHECK(summary_scalar(&v[1], "loss", 0.25));
        CHECK_EQ_INT(v[1].info.step, 1);
        CHECK(summary_scalar(&v[2], "acc", 0.5));
        CHECK_EQ_INT(v[2].info.step, 2);
        CHECK_EQ_INT(v[3].info.kind, VG__EVENT_SESSION_LOG);
        CHECK_EQ_INT(v[3].info.session_status, VG__SESSION_LOG_START);
        CHECK_EQ_INT(v[3].info.step, 3);
        CHECK_EQ_INT(v[4].info.session_status, VG__SESSION_LOG_CHECKPOINT);
        CHECK(pb_string(v[4].info.payload, v[4].info.payload_len, 2, "/tmp/model.ckpt-4"));
        CHECK(pb_string(v[4].info.payload, v[4].info.payload_len, 3, "saved"));
        CHECK_EQ_INT(v[4].info.step, 4);
        CHECK_EQ_INT(v[5].info.session_status, VG__SESSION_LOG_STOP);
        CHECK_EQ_INT(v[5].info.step, 5);
        CHECK_EQ_INT(v[6].info.kind, VG__EVENT_TAGGED_RUN_METADATA);
        CHECK(pb_string(v[6].info.payload, v[6].info.payload_len, 1, "step_6"));
        CHECK_EQ_INT(v[6].info.step, 6);
        CHECK_EQ_INT(v[7].info.kind, VG__EVENT_META_GRAPH_DEF);
        CHECK_EQ_INT(v[7].info.payload_len, 2);
        CHECK_EQ_INT(v[7].info.step, 7);
        CHECK_EQ_INT(v[8].info.kind, VG__EVENT_GRAPH_DEF);
        CHECK_EQ_INT(v[8].info.step, 0);
        /* GraphDef { node { name: "my_const" ... } } */
        CHECK(v[8].info.payload_len > 10 && memmem(v[8].info.payload, v[8].info.payload_len, "my_const", 8));
        for (int i = 1; i < 9; i++) {
            CHECK(v[i].info.wall_time >= t0 - 1e-3 && v[i].info.wall_time <= t1 + 1e-3);
            if (i > 1) CHECK(v[i].info.wall_time >= v[i - 1].info.wall_time);
        }
    }
    events_free(e);
    free(e);
    vg_file_writer_free(w);
}

static void test_file_writer__max_queue(void) {
    char dir[128];
    vg_file_writer *w = new_writer(make_dir("maxq", dir, sizeof dir), 2, 1e12);
    CHECK(w != NULL);
    if (!w) return;
    vg_status st;
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 1, 1, &st), &st);
    CHECK_EQ_INT(count_events(vg_file_writer_path(w)), 1);
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 2, 2, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 3, 3, &st), &st);
    CHECK_EQ_INT(count_events(vg_file_writer_path(w)), 3); /* the 2nd add filled the queue */
    char path[512];
    snprintf(path, sizeof path, "%s", vg_file_writer_path(w));
    vg_file_writer_free(w); /* flushes the third */
    CHECK_EQ_INT(count_events(path), 4);
}

static void test_file_writer__flush_secs(void) {
    char dir[128];
    vg_file_writer *w = new_writer(make_dir("flushsecs", dir, sizeof dir), 100, 0.1);
    CHECK(w != NULL);
    if (!w) return;
    vg_status st;
    sleep_ms(150); /* past the first deadline: the next event is written at once */
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 1, 1, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 2, 2, &st), &st);
    int64_t start = vg__now_ns();
    int n = 0;
    while ((n = count_events(vg_file_writer_path(w))) < 3 && vg__now_ns() - start < 3000000000LL) sleep_ms(10);
    CHECK_EQ_INT(n, 3);
    CHECK(vg__now_ns() - start < 1000000000LL);
    /* an event added right after a flush waits ~flush_secs, then appears */
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 3, 3, &st), &st);
    start = vg__now_ns();
    while ((n = count_events(vg_file_writer_path(w))) < 4 && vg__now_ns() - start < 3000000000LL) sleep_ms(10);
    CHECK_EQ_INT(n, 4);
    CHECK(vg__now_ns() - start < 1000000000LL);
    vg_file_writer_free(w);
}

static void test_file_writer__close_reopen(void) {
    char dir[128], path1[512];
    vg_file_writer *w = new_writer(make_dir("reopen", dir, sizeof dir), 10, 1e9);
    CHECK(w != NULL);
    if (!w) return;
    vg_status st;
    CHECK_OK(vg_file_writer_reopen(w, &st), &st); /* open: no-op */
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 1, 1, &st), &st);
    CHECK_OK(vg_file_writer_close(w, &st), &st);
    CHECK_OK(vg_file_writer_close(w, &st), &st); /* twice is harmless */
    snprintf(path1, sizeof path1, "%s", vg_file_writer_path(w));
    CHECK_EQ_INT(count_events(path1), 2);
    CHECK_OK(vg_file_writer_add_scalar(w, "dropped", 2, 2, &st), &st); /* no-op while closed */
    CHECK_OK(vg_file_writer_flush(w, &st), &st);
    CHECK_OK(vg_file_writer_reopen(w, &st), &st);
    CHECK(strcmp(vg_file_writer_path(w), path1) != 0);
    CHECK_OK(vg_file_writer_add_scalar(w, "y", 3, 3, &st), &st);
    CHECK_OK(vg_file_writer_flush(w, &st), &st);
    events *e = malloc(sizeof *e);
    CHECK_EQ_INT(read_events(vg_file_writer_path(w), e), 2);
    if (e->n == 2) {
        CHECK_EQ_INT(e->ev[0].info.kind, VG__EVENT_FILE_VERSION);
        CHECK(summary_scalar(&e->ev[1], "y", 3));
    }
    events_free(e);
    CHECK_EQ_INT(read_events(path1, e), 2);
    if (e->n == 2) CHECK(summary_scalar(&e->ev[1], "x", 1));
    events_free(e);
    free(e);
    vg_file_writer_free(w);
}

static void test_file_writer__free_flushes(void) {
    char dir[128], path[512];
    vg_file_writer *w = new_writer(make_dir("freeflush", dir, sizeof dir), 100, 1e9);
    CHECK(w != NULL);
    if (!w) return;
    vg_status st;
    for (int i = 0; i < 5; i++) CHECK_OK(vg_file_writer_add_scalar(w, "x", i, i, &st), &st);
    snprintf(path, sizeof path, "%s", vg_file_writer_path(w));
    CHECK_EQ_INT(count_events(path), 1);
    vg_file_writer_free(w);
    CHECK_EQ_INT(count_events(path), 6);
    vg_file_writer_free(NULL);
}

static void test_file_writer__cache(void) {
    char a[128], b[128];
    make_dir("cache_a", a, sizeof a);
    make_dir("cache_b", b, sizeof b);
    vg_status st;
    vg_file_writer *w1 = vg_file_writer_cache_get(a, &st);
    vg_file_writer *w2 = vg_file_writer_cache_get(a, &st);
    vg_file_writer *w3 = vg_file_writer_cache_get(b, &st);
    CHECK(w1 != NULL && w3 != NULL);
    CHECK(w1 == w2);
    CHECK(w1 != w3);
    if (w1 && w3) {
        CHECK(strcmp(vg_file_writer_logdir(w1), a) == 0);
        CHECK(strcmp(vg_file_writer_logdir(w3), b) == 0);
        CHECK_OK(vg_file_writer_add_scalar(w1, "x", 1, 1, &st), &st);
    }
    char path[512];
    snprintf(path, sizeof path, "%s", w1 ? vg_file_writer_path(w1) : "");
    vg_file_writer_cache_clear(); /* flushes and frees */
    CHECK_EQ_INT(count_events(path), 2);
    EXPECT_REFUSED(vg_file_writer_cache_get(NULL, &st), &st, VG_INVALID_ARGUMENT);
    vg_file_writer_cache_clear();
}

static void test_file_writer__bad_dirs_and_options(void) {
    vg_status st;
    char file[128], dir[160];
    make_dir("plain_file", file, sizeof file);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(dir, sizeof dir, "%s/sub", file);
    CHECK(vg_file_writer_new(dir, NULL, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_FAILED_PRECONDITION); /* ENOTDIR */
    CHECK_STR_CONTAINS(st.msg, file);
    CHECK(vg_file_writer_new(file, NULL, &st) == NULL); /* a file, not a directory */
    CHECK(st.code != VG_OK);

    if (geteuid() != 0) {
        char ro[128];
        make_dir("readonly", ro, sizeof ro);
        mkdir(ro, 0555);
        chmod(ro, 0555);
        CHECK(vg_file_writer_new(ro, NULL, &st) == NULL);
        EXPECT_STATUS(&st, VG_PERMISSION_DENIED, ro);
        snprintf(dir, sizeof dir, "%s/sub", ro);
        EXPECT_REFUSED(vg_file_writer_new(dir, NULL, &st), &st, VG_PERMISSION_DENIED);
        chmod(ro, 0755);
    } else {
        /* root ignores mode bits; sysfs refuses new entries (EPERM) */
        CHECK(vg_file_writer_new("/sys/vigil_file_writer_test/logs", NULL, &st) == NULL);
        CHECK(st.code == VG_PERMISSION_DENIED || st.code == VG_NOT_FOUND || st.code == VG_FAILED_PRECONDITION);
        CHECK_STR_CONTAINS(st.msg, "/sys/vigil_file_writer_test");
    }
    CHECK(vg_file_writer_new("/proc/vigil_file_writer_test", NULL, &st) == NULL);
    CHECK(st.code != VG_OK);

    vg_file_writer_options o = {0};
    o.max_queue = -1;
    EXPECT_REFUSED(vg_file_writer_new(g_dir, &o, &st), &st, VG_INVALID_ARGUMENT);
    o.max_queue = 1;
    o.flush_secs = -1;
    EXPECT_REFUSED(vg_file_writer_new(g_dir, &o, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_file_writer_new(NULL, NULL, &st), &st, VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_file_writer_flush(NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_file_writer_add_scalar(NULL, "x", 1, 1, &st), VG_INVALID_ARGUMENT);
}

/* Write errors: a 4 KiB file size limit (EFBIG -> RESOURCE_EXHAUSTED). */
static void test_file_writer__write_error_reported(void) {
    char dir[128], path[512];
    vg_file_writer *w = new_writer(make_dir("efbig", dir, sizeof dir), 100, 0.05);
    CHECK(w != NULL);
    if (!w) return;
    snprintf(path, sizeof path, "%s", vg_file_writer_path(w));
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 4096;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    char tag[6000];
    memset(tag, 't', sizeof tag - 1);
    tag[sizeof tag - 1] = 0;
    vg_status st;
    /* explicit flush: the error comes back from it */
    CHECK_OK(vg_file_writer_add_scalar(w, tag, 1, 1, &st), &st);
    CHECK_STATUS(vg_file_writer_flush(w, &st), &st, VG_RESOURCE_EXHAUSTED, path);
    /* the file's first error sticks (a torn record): later calls keep failing */
    CHECK_EQ_INT(vg_file_writer_flush(w, &st), VG_RESOURCE_EXHAUSTED);
    /* background flush: the next call reports it */
    CHECK_EQ_INT(vg_file_writer_close(w, &st), VG_RESOURCE_EXHAUSTED);
    CHECK_OK(vg_file_writer_reopen(w, &st), &st);
    CHECK(strcmp(vg_file_writer_path(w), path) != 0);
    snprintf(path, sizeof path, "%s", vg_file_writer_path(w));
    CHECK_OK(vg_file_writer_add_scalar(w, tag, 2, 2, &st), &st);
    sleep_ms(400);
    vg_code c = vg_file_writer_add_scalar(w, "small", 3, 3, &st);
    CHECK_EQ_INT(c, VG_RESOURCE_EXHAUSTED);
    if (c) CHECK_STR_CONTAINS(st.msg, path);
    CHECK_STR_CONTAINS(st.msg, "not written");
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    /* with room again, a reopened file works */
    CHECK_EQ_INT(vg_file_writer_close(w, &st), VG_RESOURCE_EXHAUSTED);
    CHECK_OK(vg_file_writer_reopen(w, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, tag, 4, 4, &st), &st);
    CHECK_OK(vg_file_writer_flush(w, &st), &st);
    CHECK_EQ_INT(count_events(vg_file_writer_path(w)), 2);
    vg_file_writer_free(w);
}

/* ---- threads ---- */

typedef struct thread_arg {
    vg_file_writer *w;
    int id;
    int failures;
} thread_arg;

#define NTHREADS 4
#define PER_THREAD 100

static void *adder(void *p) {
    thread_arg *a = p;
    vg_status st;
    for (int i = 0; i < PER_THREAD; i++)
        if (vg_file_writer_add_scalar(a->w, "x", i, a->id * 1000 + i, &st) != VG_OK) a->failures++;
    return NULL;
}

static void test_file_writer__threads(void) {
    char dir[128];
    vg_file_writer *w = new_writer(make_dir("threads", dir, sizeof dir), 7, 0.005);
    CHECK(w != NULL);
    if (!w) return;
    pthread_t th[NTHREADS];
    thread_arg args[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (thread_arg){w, t + 1, 0};
        pthread_create(&th[t], NULL, adder, &args[t]);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK_EQ_INT(args[t].failures, 0);
    }
    vg_status st;
    CHECK_OK(vg_file_writer_flush(w, &st), &st);
    events *e = malloc(sizeof *e);
    CHECK_EQ_INT(read_events(vg_file_writer_path(w), e), 1 + NTHREADS * PER_THREAD);
    int next[NTHREADS] = {0};
    for (int i = 1; i < e->n; i++) {
        int64_t step = e->ev[i].info.step;
        int t = (int)(step / 1000) - 1;
        CHECK(t >= 0 && t < NTHREADS);
        if (t < 0 || t >= NTHREADS) continue;
        CHECK_EQ_INT(step % 1000, next[t]); /* each thread's events in its order */
        next[t] = (int)(step % 1000) + 1;
    }
    for (int t = 0; t < NTHREADS; t++) CHECK_EQ_INT(next[t], PER_THREAD);
    events_free(e);
    free(e);
    vg_file_writer_free(w);
}

/* writer.py: a Value's metadata is written only the first time its tag is seen. */
static void test_file_writer__metadata_once(void) {
    char dir[128];
    vg_file_writer *w = new_writer(make_dir("meta", dir, sizeof dir), 10, 1e9);
    CHECK(w != NULL);
    if (!w) return;
    /* Summary { value { tag "t" metadata { plugin_data { plugin_name "scalars" } }
     *           simple_value 1.0 } value { tag "u" simple_value 2.0 } } */
    const uint8_t s[] = {0x0a, 0x15, 0x0a, 0x01, 't', 0x4a, 0x0b, 0x0a, 0x09, 0x0a, 0x07, 's', 'c', 'a', 'l', 'a',
                         'r', 's', 0x15, 0x00, 0x00, 0x80, 0x3f, 0x0a, 0x08, 0x0a, 0x01, 'u', 0x15, 0x00, 0x00,
                         0x00, 0x40};
    vg_status st;
    CHECK_OK(vg_file_writer_add_summary(w, s, sizeof s, 1, &st), &st);
    CHECK_OK(vg_file_writer_add_summary(w, s, sizeof s, 2, &st), &st);
    CHECK_OK(vg_file_writer_flush(w, &st), &st);
    events *e = malloc(sizeof *e);
    CHECK_EQ_INT(read_events(vg_file_writer_path(w), e), 3);
    if (e->n == 3) {
        CHECK_EQ_INT(e->ev[1].info.payload_len, sizeof s);
        CHECK(!memcmp(e->ev[1].info.payload, s, sizeof s));
        CHECK_EQ_INT(e->ev[2].info.payload_len, sizeof s - 13); /* metadata field gone */
        CHECK(!memmem(e->ev[2].info.payload, e->ev[2].info.payload_len, "scalars", 7));
        vg__summary_iter it;
        vg__summary_value v;
        vg__summary_iter_init(&it, e->ev[2].info.payload, e->ev[2].info.payload_len);
        CHECK_OK(vg__summary_next(&it, &v, &st), &st);
        CHECK(v.tag_len == 1 && v.tag[0] == 't' && v.scalar == 1.0);
        CHECK_OK(vg__summary_next(&it, &v, &st), &st);
        CHECK(v.tag_len == 1 && v.tag[0] == 'u' && v.scalar == 2.0);
    }
    events_free(e);
    free(e);
    vg_file_writer_free(w);
}

/* ---- allocation failures ---- */

static atomic_int g_fail_at = -1, g_count;

static void *fail_alloc(void *payload, size_t size, size_t align) {
    if (atomic_load(&g_fail_at) >= 0 && atomic_fetch_add(&g_count, 1) == atomic_load(&g_fail_at)) return NULL;
    void *p = NULL;
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}

static void fail_free(void *payload, void *p) { free(p); }

static void test_file_writer__alloc_failures(void) {
    vg_allocator a = {fail_alloc, fail_free, NULL};
    vg_allocator_set(&a);
    bool ok = false;
    for (int n = 0; n < 100 && !ok; n++) {
        char dir[128], sub[32];
        snprintf(sub, sizeof sub, "alloc/%d", n);
        make_dir(sub, dir, sizeof dir);
        atomic_store(&g_count, 0);
        atomic_store(&g_fail_at, n);
        vg_status st;
        vg_file_writer *w = vg_file_writer_new(dir, NULL, &st);
        vg_code c = w ? vg_file_writer_add_scalar(w, "x", 1, 1, &st) : st.code;
        if (!c) c = vg_file_writer_flush(w, &st);
        if (c) CHECK_EQ_INT(c, VG_RESOURCE_EXHAUSTED);
        vg_file_writer_free(w);
        if (w && c == VG_OK) ok = true;
    }
    atomic_store(&g_fail_at, -1);
    vg_allocator_set(NULL);
    CHECK(ok);
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_file_writer__name_and_first_record);
    RUN_TEST(test_file_writer__events_in_order);
    RUN_TEST(test_file_writer__max_queue);
    RUN_TEST(test_file_writer__flush_secs);
    RUN_TEST(test_file_writer__close_reopen);
    RUN_TEST(test_file_writer__free_flushes);
    RUN_TEST(test_file_writer__cache);
    RUN_TEST(test_file_writer__bad_dirs_and_options);
    RUN_TEST(test_file_writer__write_error_reported);
    RUN_TEST(test_file_writer__threads);
    RUN_TEST(test_file_writer__metadata_once);
    RUN_TEST(test_file_writer__alloc_failures);
    if (tu_rmrf(g_dir) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    TEST_MAIN_END();
}
