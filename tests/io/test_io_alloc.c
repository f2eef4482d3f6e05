/* test_io_alloc.c - allocation failure injection (STYLE.md 32): for each io operation,
 * make allocation N fail for N = 1, 2, ... until the operation succeeds. Every failure
 * must come back as RESOURCE_EXHAUSTED (never swallowed, never another code) with no
 * leaked allocation and no leftover temp file. */
#include "io/io.h"
#include "test_util.h"
#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

static long g_count, g_fail_at, g_live;
static char g_dir[64];

static void *t_alloc(void *payload, size_t size, size_t align) {
    if (g_fail_at && ++g_count == g_fail_at) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1)) return NULL;
    g_live++;
    return p;
}
static void t_free(void *payload, void *p) {
    g_live--;
    free(p);
}

typedef vg_code (*op_fn)(vg_status *st);

static void run(const char *name, op_fn op) {
    vg_allocator a = {t_alloc, t_free, NULL};
    vg_allocator_set(&a);
    int failures = 0;
    long n;
    for (n = 1; n < 100000; n++) {
        vg_status st;
        vg_status_clear(&st);
        long live0 = g_live;
        g_count = 0;
        g_fail_at = n;
        vg_code c = op(&st);
        bool injected = g_count >= n;
        g_fail_at = 0;
        if (g_live != live0) {
            fprintf(stderr, "%s: N=%ld leaked %ld allocations (code %d)\n", name, n, g_live - live0, c);
            failures++;
        }
        if (c == VG_OK && !injected) break; /* ran to completion with no failure left */
        if (c == VG_OK) {
            fprintf(stderr, "%s: N=%ld allocation failure swallowed\n", name, n);
            failures++;
        } else if (c != VG_RESOURCE_EXHAUSTED) {
            fprintf(stderr, "%s: N=%ld returned %s: %s\n", name, n, vg_code_name(c), st.msg);
            failures++;
        }
        if (failures > 5) break;
    }
    vg_allocator_set(NULL);
    fprintf(stderr, "  %s: %ld allocation points\n", name, n - 1);
    CHECK_EQ_INT(failures, 0);
    CHECK(n > 1);
}

/* ---- operations ---- */

static vg_code op_bundle_write(vg_status *st) {
    char p[256];
    snprintf(p, sizeof p, "%s/ck/model.ckpt-1", g_dir);
    vg__bundle_writer *w = vg__bundle_writer_new(p, st);
    if (!w) return st->code;
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t d[2] = {2, 3};
    const char *s[] = {"a", "bc"};
    vg_code c = VG_OK;
    char name[16];
    for (int i = 0; i < 40 && !c; i++) { /* enough entries to rehash and grow */
        snprintf(name, sizeof name, "v%02d", 39 - i);
        c = vg__bundle_writer_add(w, name, VG__DT_FLOAT, d, 2, x, sizeof x, st);
    }
    if (!c) c = vg__bundle_writer_add_strings(w, "s", d, 1, s, NULL, 2, st);
    if (!c) c = vg__bundle_writer_finish(w, st);
    vg__bundle_writer_free(w);
    return c;
}

static vg_code read_bundle(const char *prefix, const char *fname, const char *sname, vg_status *st) {
    vg__bundle_reader *r = vg__bundle_reader_open(prefix, st);
    if (!r) return st->code;
    float f;
    vg_code c = vg__bundle_reader_read(r, fname, &f, 4, st);
    if (!c && sname) {
        char **s;
        size_t *l;
        int64_t n;
        c = vg__bundle_reader_read_strings(r, sname, &s, &l, &n, st);
        if (!c) vg__bundle_strings_free(s, l, n);
    }
    vg__bundle_reader_free(r);
    return c;
}

static vg_code op_bundle_read_tf2(vg_status *st) {
    return read_bundle(VG_TESTDATA "/serving_half_plus_two_tf2_cpu/variables/variables",
                       "a/.ATTRIBUTES/VARIABLE_VALUE", "_CHECKPOINTABLE_OBJECT_GRAPH", st);
}

static vg_code op_bundle_read_snappy(vg_status *st) {
    return read_bundle(VG_TESTDATA "/serving_half_plus_two_cpu_tf1.14/variables/variables", "c2", NULL, st);
}

static vg_code op_bundle_read_own(vg_status *st) {
    char p[256];
    snprintf(p, sizeof p, "%s/ck/model.ckpt-1", g_dir);
    vg__bundle_reader *r = vg__bundle_reader_open(p, st);
    if (!r) return st->code;
    char **s;
    size_t *l;
    int64_t n;
    vg_code c = vg__bundle_reader_read_strings(r, "s", &s, &l, &n, st);
    if (!c) vg__bundle_strings_free(s, l, n);
    vg__bundle_reader_free(r);
    return c;
}

static vg_code op_sstable_minigo(vg_status *st) {
    vg__sstable *t = vg__sstable_open(VG_TESTDATA "/index_only/minigo.index", st);
    if (!t) return st->code;
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, st);
    vg_code c = b ? VG_OK : st->code;
    for (size_t i = 0; !c && i < vg__sstable_count(t); i++) {
        const uint8_t *k, *v;
        size_t kl, vl;
        vg__sstable_entry(t, i, &k, &kl, &v, &vl);
        c = vg__sstable_builder_add(b, k, kl, v, vl, st);
    }
    if (!c) c = vg__sstable_builder_finish(b, st);
    vg__sstable_builder_free(b);
    vg__sstable_free(t);
    return c;
}

static vg_code op_ckpt_state(vg_status *st) {
    vg__ckpt_state s;
    vg_code c = vg__ckpt_state_read(VG_TESTDATA "/checkpoint_state/tf_half_plus_two.checkpoint", &s, st);
    if (c) return c;
    const char *txt = "model_checkpoint_path: \"b\"\nall_model_checkpoint_paths: \"a\"\nall_model_checkpoint_paths: \"b\"\n"
                      "all_model_checkpoint_timestamps: 1.5\nall_model_checkpoint_timestamps: 2.5\n";
    vg__ckpt_state t;
    c = vg__ckpt_state_parse(txt, strlen(txt), &t, st);
    char p[256];
    snprintf(p, sizeof p, "%s/checkpoint", g_dir);
    if (!c) {
        c = vg__ckpt_state_write(p, &t, st);
        vg__ckpt_state_free(&t);
    }
    vg__ckpt_state_free(&s);
    return c;
}

static vg_code op_events(vg_status *st) {
    vg__pb_buf h, sum, ev;
    vg__pb_init(&h);
    vg__pb_init(&sum);
    vg__pb_init(&ev);
    double v[] = {1, 2, 3, -1};
    vg_code c = vg__histogram_encode_doubles(&h, v, 4, "h", st);
    if (!c) {
        vg__summary_add_histo(&sum, "h", &h);
        vg__summary_add_scalar(&sum, "loss", 1.0f);
        c = vg__pb_buf_status(&sum, "summary", st);
    }
    if (!c) {
        vg__event e = {.wall_time = 1, .step = 2, .kind = VG__EVENT_SUMMARY, .data = sum.data, .len = sum.len};
        vg__event_encode(&ev, &e);
        vg__event l = {.kind = VG__EVENT_SESSION_LOG, .status = 1, .msg = "m"};
        vg__event_encode(&ev, &l);
        c = vg__pb_buf_status(&ev, "event", st);
    }
    vg__pb_free(&h);
    vg__pb_free(&sum);
    vg__pb_free(&ev);
    return c;
}

static vg_code op_event_file(vg_status *st) {
    char d[256];
    snprintf(d, sizeof d, "%s/ev", g_dir);
    vg__event_writer *w = vg__event_writer_open(d, ".x", st);
    if (!w) return st->code;
    vg__event e = {.wall_time = 1, .kind = VG__EVENT_LOG_MESSAGE, .status = 20, .msg = "hello"};
    vg_code c = vg__event_writer_write_event(w, &e, st);
    char path[512];
    snprintf(path, sizeof path, "%s", vg__event_writer_path(w));
    vg_code c2 = vg__event_writer_close(w, st);
    if (!c) c = c2;
    vg__event_reader *r = c ? NULL : vg__event_reader_open(path, st);
    if (!c && !r) c = st->code;
    vg__event_info ev;
    while (r && (c = vg__event_reader_next(r, &ev, st)) == VG_OK) {}
    vg__event_reader_close(r);
    unlink(path); /* event files are never truncated: each open would take a new name */
    return c == VG_OUT_OF_RANGE ? VG_OK : c;
}

static vg_code op_idx(vg_status *st) {
    char p[256];
    snprintf(p, sizeof p, "%s/lab.gz", g_dir);
    int64_t dims[4];
    int nd;
    void *data;
    size_t n;
    vg_code c = vg__idx_read(p, 0, dims, &nd, &data, &n, st);
    if (!c) vg__free(data);
    if (c) return c;
    vg__idx_reader *r = vg__idx_reader_open(p, 0, st);
    if (!r) return st->code;
    uint8_t rec;
    while ((c = vg__idx_reader_next_record(r, &rec, st)) == VG_OK) {}
    vg__idx_reader_close(r);
    return c == VG_OUT_OF_RANGE ? VG_OK : c;
}

static int count_temps(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += strstr(e->d_name, "tempstate") != NULL;
    if (d) closedir(d);
    return n;
}


static void test_io_alloc__failure_injection(void) {
    run("bundle_write", op_bundle_write);
    char ck[256];
    snprintf(ck, sizeof ck, "%s/ck", g_dir);
    CHECK_EQ_INT(count_temps(ck), 0);
    run("bundle_read_tf2", op_bundle_read_tf2);
    run("bundle_read_snappy", op_bundle_read_snappy);
    run("bundle_read_own", op_bundle_read_own);
    run("sstable_minigo", op_sstable_minigo);
    run("ckpt_state", op_ckpt_state);
    CHECK_EQ_INT(count_temps(g_dir), 0);
    run("events", op_events);
    run("event_file", op_event_file);
    char p[256];
    snprintf(p, sizeof p, "%s/lab.gz", g_dir);
    gzFile g = gzopen(p, "wb");
    gzwrite(g, "\0\0\x08\x01\0\0\0\x03\x01\x02\x03", 11);
    gzclose(g);
    run("idx", op_idx);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "alloc")[0]) return 1;
    RUN_TEST(test_io_alloc__failure_injection);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
