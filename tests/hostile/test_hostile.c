/* test_hostile.c - regression tests for issue 9 (hostile input and crash hygiene),
 * library level. Each test names the failure number of the issue it pins down:
 *   #1  unusable `checkpoint` state files are DATA_LOSS naming the file; listing fallback
 *   #2  IDX counts and bundle index sizes validated before anything is allocated
 *   #3  vg_shape_num_elements overflow
 *   #5  stale temporaries and orphaned checkpoints removed on recover
 *   #7  long status messages keep their ending; a hook failing silently gets a message
 *   #8  FIFOs and devices rejected without blocking
 *   #9  vg_graph_output_by_name index range check
 *   #10 100k listed checkpoint paths parse in linear time
 * The CLI-level ones (#1 refusal, #3 options, #4 NaN, #6 test set, #11 lock) are in
 * test_cli_hostile.c. */
#include "io/io.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include "vigil/import.h"
#include "kernels_fixture.h"
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define TMPDIR_TAG "hostile"
#include "tmpdir_util.h"

static void path_in(char *out, size_t n, const char *sub, const char *name) {
    snprintf(out, n, "%s/%s/%s", g_dir, sub, name);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return; }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static bool exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* A complete one-tensor V2 checkpoint at prefix. */
static void write_ckpt(const char *prefix, float v) {
    vg_status st;
    vg__bundle_writer *w = vg__bundle_writer_new(prefix, &st);
    CHECK(w != NULL);
    if (!w) return;
    int64_t one = 1;
    CHECK_OK(vg__bundle_writer_add(w, "v", VG__DT_FLOAT, &one, 1, &v, 4, &st), &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
}

/* CPU time of the process: bounds on work done (quadratic loops, reads of what a file
 * only claims to hold) that a starved test process on a loaded machine still meets;
 * wall-clock bounds stay for what must not block (FIFOs). */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- #1 ---- */

static void test_hostile__unusable_state_file_is_data_loss(void) {
    char dir[300], state[400], p5[400], buf[4096];
    snprintf(dir, sizeof dir, "%s/state", g_dir);
    mkdir(dir, 0755);
    snprintf(state, sizeof state, "%s/checkpoint", dir);
    snprintf(p5, sizeof p5, "%s/model.ckpt-5", dir);
    write_ckpt(p5, 5.0f);
    vg_status st;
    /* the good case first: the named checkpoint */
    const char good[] = "model_checkpoint_path: \"model.ckpt-5\"\nall_model_checkpoint_paths: \"model.ckpt-5\"\n";
    write_bytes(state, good, sizeof good - 1);
    CHECK_OK(vg_checkpoint_find_latest(dir, buf, sizeof buf, &st), &st);
    CHECK(strcmp(buf, p5) == 0);
    /* the variants: each is DATA_LOSS naming the state file, never NOT_FOUND
     * (which would mean "start from step 0") */
    static const struct { const char *text; size_t len; } bad[] = {
        {"model_checkpoint_path: \"model.ckpt-5\"\0\n", 38},   /* one NUL byte after the path */
        {"\x9f\x01\xff\x13garbage\x80", 12},                      /* random bytes */
        {"model_checkpoint_path: \"model.ckpt-5\n", 37},        /* unterminated quote */
        {"model_checkpoint_path: \"\"\n", 26},                  /* empty path */
        {"model_checkpoint_path: \"model.ckpt-5\"\nlast_preserved_timestamp: 0x\n", 67},
        {"model_checkpoint_path: \"model.ckpt\\0005\"\n", 41},  /* an escaped NUL inside */
        {"", 0},                                                  /* empty file */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_bytes(state, bad[i].text, bad[i].len);
        vg_code c = vg_checkpoint_find_latest(dir, buf, sizeof buf, &st);
        if (c != VG_DATA_LOSS) fprintf(stderr, "variant %zu: %s\n", i, st.msg);
        CHECK_STATUS(c, &st, VG_DATA_LOSS, state);
        CHECK_STR_CONTAINS(st.msg, "refusing to start over");
    }
    /* a dangling symlink named checkpoint */
    unlink(state);
    CHECK(symlink("/nonexistent/checkpoint-target", state) == 0);
    CHECK_STATUS(vg_checkpoint_find_latest(dir, buf, sizeof buf, &st), &st, VG_DATA_LOSS, state);
    unlink(state);
    /* permission denied (meaningless as root) */
    if (geteuid() != 0) {
        write_bytes(state, good, sizeof good - 1);
        chmod(state, 0);
        CHECK_STATUS(vg_checkpoint_find_latest(dir, buf, sizeof buf, &st), &st, VG_DATA_LOSS, state);
        unlink(state);
    }
    /* #8: a FIFO named checkpoint: rejected at once, not a blocking open() */
    CHECK(mkfifo(state, 0644) == 0);
    double t0 = tu_now_s();
    CHECK_STATUS(vg_checkpoint_find_latest(dir, buf, sizeof buf, &st), &st, VG_DATA_LOSS, "FIFO");
    CHECK(tu_now_s() - t0 < 5);
    vg_checkpoint_state *cs = NULL;
    CHECK_CODE(vg_get_checkpoint_state(dir, &cs, &st), VG_FAILED_PRECONDITION);
    unlink(state);
    /* no state file, .index files present: the newest complete checkpoint by listing */
    char p9[400], p12[400];
    snprintf(p9, sizeof p9, "%s/model.ckpt-9", dir);
    snprintf(p12, sizeof p12, "%s/model.ckpt-12", dir);
    write_ckpt(p9, 9.0f);
    write_ckpt(p12, 12.0f);
    char data12[500];
    snprintf(data12, sizeof data12, "%s.data-00000-of-00001", p12);
    CHECK(truncate(data12, 1) == 0); /* -12 is incomplete: its tensor lies past the end */
    CHECK_OK(vg_checkpoint_find_latest(dir, buf, sizeof buf, &st), &st);
    CHECK(strcmp(buf, p9) == 0);
    /* a state file naming a missing checkpoint: falls back to a complete one */
    const char gone[] = "model_checkpoint_path: \"model.ckpt-77\"\n";
    write_bytes(state, gone, sizeof gone - 1);
    CHECK_OK(vg_checkpoint_find_latest(dir, buf, sizeof buf, &st), &st);
    CHECK(strcmp(buf, p9) == 0);
    /* nothing complete at all: DATA_LOSS, not a fresh start */
    unlink(state);
    char idx[500];
    snprintf(idx, sizeof idx, "%s.data-00000-of-00001", p9);
    unlink(idx);
    snprintf(idx, sizeof idx, "%s.data-00000-of-00001", p5);
    unlink(idx);
    CHECK_STATUS(vg_checkpoint_find_latest(dir, buf, sizeof buf, &st), &st, VG_DATA_LOSS, "no complete checkpoint");
    /* an empty directory: NOT_FOUND, the only case that means a fresh start */
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", g_dir);
    mkdir(empty, 0755);
    CHECK_CODE(vg_checkpoint_find_latest(empty, buf, sizeof buf, &st), VG_NOT_FOUND);
}

/* ---- #2 ---- */

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void test_hostile__idx_count_checked_before_allocation(void) {
    char p[300];
    vg_status st;
    /* count 0xFFFFFFFF with 28x28 records in a 2 KB file (plain and gzip'd) */
    uint8_t f[16 + 2048];
    memset(f, 7, sizeof f);
    f[0] = f[1] = 0, f[2] = 8, f[3] = 3;
    put_be32(f + 4, 0xFFFFFFFFu);
    put_be32(f + 8, 28);
    put_be32(f + 12, 28);
    snprintf(p, sizeof p, "%s/liar-idx3-ubyte", g_dir);
    write_bytes(p, f, sizeof f);
    vg__idx_reader *r = vg__idx_reader_open(p, VG__IDX_U8, &st);
    CHECK(r == NULL);
    CHECK_STATUS(st.code, &st, VG_DATA_LOSS, p);
    CHECK_STR_CONTAINS(st.msg, "offset 4");
    vg__idx_reader_close(r);
    int64_t dims[4];
    int nd;
    void *data = NULL;
    size_t n;
    CHECK_CODE(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), VG_DATA_LOSS);
    CHECK(data == NULL);
    /* the second case: 0x18000000 records in a 1.6 MB file */
    put_be32(f + 4, 0x18000000u);
    write_bytes(p, f, sizeof f);
    double t0 = cpu_s();
    CHECK_CODE(vg__idx_read(p, 0, dims, &nd, &data, &n, &st), VG_DATA_LOSS);
    CHECK(cpu_s() - t0 < 1.0);
    /* gzip'd: more than the deflate ratio allows */
    snprintf(p, sizeof p, "%s/liar-idx3-ubyte.gz", g_dir);
    gzFile gz = gzopen(p, "wb");
    put_be32(f + 4, 0xFFFFFFFFu);
    gzwrite(gz, f, sizeof f);
    gzclose(gz);
    r = vg__idx_reader_open(p, VG__IDX_U8, &st);
    CHECK(r == NULL);
    CHECK_STATUS(st.code, &st, VG_DATA_LOSS, "gzip'd");
    vg__idx_reader_close(r);
}

/* Found by fuzz_sstable / fuzz_idx: lengths claimed by a Snappy preamble and by IDX
 * dimensions of an empty file must not size an allocation either. */
static void test_hostile__fuzz_findings(void) {
    vg_status st;
    /* varint 0x3fffffff (1 GiB) then 3 bytes: far more than Snappy can expand to */
    const uint8_t lie[] = {0xff, 0xff, 0xff, 0xff, 0x03, 0x00, 0x01, 0x02};
    uint8_t *out = NULL;
    size_t n = 0;
    CHECK_CODE(vg__snappy_uncompress(lie, sizeof lie, (size_t)1 << 30, &out, &n, &st), VG_DATA_LOSS);
    CHECK(out == NULL);
    /* 0 records of 525056 x 768 bytes: readers would allocate one 400 MB record */
    const uint8_t idx[] = {0, 0, 8, 3, 0, 0, 0, 0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 0, 3, 0, 4, 0};
    char p[300];
    snprintf(p, sizeof p, "%s/empty_huge_records", g_dir);
    write_bytes(p, idx, sizeof idx);
    vg__idx_reader *r = vg__idx_reader_open(p, 0, &st);
    CHECK(r == NULL);
    CHECK_CODE(st.code, VG_DATA_LOSS);
    vg__idx_reader_close(r);
}

/* Found by fuzz_graphdef: a NodeDef whose second `op` field holds a NUL byte made the
 * import free the first op string and free it again on clean-up (double free). */
static void test_hostile__graphdef_import_nul_op(void) {
    static const uint8_t gd[] = {0x0a, 0x2a, 0x12, 0x01, 0x61, 0x12, 0x0b, 0x50, 0x6c, 0x00, 0x00, 0x00, 0x00, 0x68, 0x6f, 0x6c, 0x64, 0x65, 0x72, 0x2a, 0x0b, 0x0a, 0x05, 0x64, 0x74, 0x79, 0x70, 0x65, 0x12, 0x02, 0x35, 0x01, 0x2a, 0x0b, 0x0a, 0x05, 0x73, 0x68, 0x61, 0x70, 0x65, 0x12, 0x02, 0x3a, 0x00, 0x0a, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x50, 0x6c, 0x61, 0x63, 0x65, 0x68, 0x6f, 0x6c, 0x64, 0x65, 0x72, 0x2a, 0x0b, 0x0a, 0x05, 0x64, 0x74, 0x79, 0x70, 0x65, 0x09};
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_code c = vg_graph_import_graph_def(g, gd, sizeof gd, NULL, &st);
    CHECK(c != VG_OK);
    CHECK_STR_CONTAINS(st.msg, "NUL byte");
    vg_graph_free(g);
}

/* An index whose one entry says what we want (a hand-made lie). */
static void write_lying_index(const char *prefix, int dtype, int64_t dim0, uint64_t size) {
    vg_status st;
    vg__pb_buf hdr, ver, ent, shape, dim;
    vg__pb_init(&hdr), vg__pb_init(&ver), vg__pb_init(&ent), vg__pb_init(&shape), vg__pb_init(&dim);
    vg__pb_put_int32(&hdr, 1, 1); /* num_shards */
    vg__pb_put_int32(&ver, 1, 1); /* producer */
    vg__pb_put_message(&hdr, 3, &ver);
    vg__pb_put_int64(&dim, 1, dim0);
    vg__pb_put_message(&shape, 2, &dim);
    vg__pb_put_int32(&ent, 1, dtype);
    vg__pb_put_message(&ent, 2, &shape);
    vg__pb_put_uint64(&ent, 5, size);
    vg__pb_put_fixed32_field(&ent, 6, 0x12345678u);
    char path[400];
    snprintf(path, sizeof path, "%s.index", prefix);
    FILE *f = fopen(path, "wb");
    vg__sstable_builder *b = vg__sstable_builder_new(f, false, &st);
    CHECK_OK(vg__sstable_builder_add(b, "", 0, hdr.data, hdr.len, &st), &st);
    CHECK_OK(vg__sstable_builder_add(b, "t", 1, ent.data, ent.len, &st), &st);
    CHECK_OK(vg__sstable_builder_finish(b, &st), &st);
    vg__sstable_builder_free(b);
    fclose(f);
    snprintf(path, sizeof path, "%s.data-00000-of-00001", prefix);
    write_bytes(path, "abcdefgh", 8);
    vg__pb_free(&hdr), vg__pb_free(&ver), vg__pb_free(&ent), vg__pb_free(&shape), vg__pb_free(&dim);
}

static void test_hostile__bundle_sizes_checked_before_allocation(void) {
    char prefix[300];
    vg_status st;
    /* a string tensor of shape [134217728] stored in 4 bytes: rejected at open */
    snprintf(prefix, sizeof prefix, "%s/lie_strings", g_dir);
    write_lying_index(prefix, VG__DT_STRING, 134217728, 4);
    vg__bundle_reader *r = vg__bundle_reader_open(prefix, &st);
    CHECK(r == NULL);
    CHECK_STATUS(st.code, &st, VG_DATA_LOSS, "tensor t");
    CHECK_STR_CONTAINS(st.msg, ".index");
    vg__bundle_reader_free(r);
    vg_checkpoint_reader *cr = vg_checkpoint_reader_new(prefix, &st);
    CHECK(cr == NULL);
    CHECK_CODE(st.code, VG_DATA_LOSS);
    /* a float tensor whose size is consistent with its shape (2^38 x 4 = 2^40 bytes)
     * but not with the 8-byte data file: DATA_LOSS naming file and offset, before any
     * 1 TB allocation */
    snprintf(prefix, sizeof prefix, "%s/lie_size", g_dir);
    write_lying_index(prefix, VG__DT_FLOAT, (int64_t)1 << 38, (uint64_t)1 << 40);
    cr = vg_checkpoint_reader_new(prefix, &st);
    CHECK(cr != NULL);
    if (cr) {
        vg_tensor *t = vg_checkpoint_reader_read(cr, "t", &st);
        CHECK(t == NULL);
        CHECK_STATUS(st.code, &st, VG_DATA_LOSS, "data-00000-of-00001");
        CHECK_STR_CONTAINS(st.msg, "at offset 0");
        vg_tensor_free(t);
        vg_checkpoint_reader_free(cr);
    }
    /* size disagreeing with shape x dtype: rejected at open */
    snprintf(prefix, sizeof prefix, "%s/lie_mismatch", g_dir);
    write_lying_index(prefix, VG__DT_FLOAT, 3, 8);
    r = vg__bundle_reader_open(prefix, &st);
    CHECK(r == NULL);
    CHECK_STR_CONTAINS(st.msg, "does not match");
    vg__bundle_reader_free(r);
}

/* ---- #3 ---- */

static void test_hostile__shape_num_elements_overflow(void) {
    int64_t d[2] = {(int64_t)1 << 62, 8};
    vg_shape s = vg_shape_make(d, 2);
    CHECK_EQ_INT(vg_shape_num_elements(&s), -1);
    int64_t z[3] = {(int64_t)1 << 62, 8, 0};
    s = vg_shape_make(z, 3);
    CHECK_EQ_INT(vg_shape_num_elements(&s), 0);
    int64_t ok[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
    s = vg_shape_make(ok, 2);
    CHECK_EQ_INT(vg_shape_num_elements(&s), (int64_t)1 << 62);
}

/* ---- #5 ---- */

static void test_hostile__saver_removes_temporaries_and_orphans(void) {
    char dir[300], p[2000];
    snprintf(dir, sizeof dir, "%s/orphans", g_dir);
    mkdir(dir, 0755);
    char pre[4][400];
    for (int i = 0; i < 4; i++) {
        snprintf(pre[i], sizeof pre[i], "%s/model.ckpt-%d", dir, (i + 1) * 10);
        write_ckpt(pre[i], (float)i);
    }
    const char *temps[] = {"model.ckpt-50.data-00000-of-00001.tempstate0123456789abcdef",
                           "model.ckpt-50.index.tempstatefedcba9876543210", "checkpoint.tempstate00112233445566ff"};
    for (int i = 0; i < 3; i++) {
        path_in(p, sizeof p, "orphans", temps[i]);
        write_bytes(p, "x", 1);
    }
    /* not ours: kept */
    const char *keep[] = {"notes.tempstate0123456789abcdef", "other-1.index", "model.ckpt-5x.index",
                          "model.ckpt-99.index"};
    for (int i = 0; i < 4; i++) {
        path_in(p, sizeof p, "orphans", keep[i]);
        write_bytes(p, "x", 1);
    }
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_status st;
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    CHECK(sv != NULL);
    /* the list names -20 and -40: -10 and -30 are orphans (older than -40) */
    const char *listed[2] = {pre[1], pre[3]};
    vg_saver_recover_last_checkpoints(sv, listed, 2);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(sv), 2);
    for (int i = 0; i < 3; i++) {
        path_in(p, sizeof p, "orphans", temps[i]);
        CHECK(!exists(p));
    }
    for (int i = 0; i < 4; i++) {
        path_in(p, sizeof p, "orphans", keep[i]);
        CHECK(exists(p));
    }
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s.index", pre[i]);
        CHECK(exists(p) == (i == 1 || i == 3));
        snprintf(p, sizeof p, "%s.data-00000-of-00001", pre[i]);
        CHECK(exists(p) == (i == 1 || i == 3));
    }
    vg_saver_free(sv);
    /* max_to_keep = 0 (keep everything): orphans stay */
    write_ckpt(pre[0], 0.0f);
    vg_saver_options o = {0};
    o.keep_all_checkpoints = true;
    sv = vg_saver_new(g, &o, &st);
    vg_saver_recover_last_checkpoints(sv, listed, 2);
    snprintf(p, sizeof p, "%s.index", pre[0]);
    CHECK(exists(p));
    vg_saver_free(sv);
    vg_graph_free(g);
}

/* ---- #7 ---- */

static void test_hostile__long_messages_keep_their_ending(void) {
    char path[4200];
    memset(path, 'a', sizeof path);
    memcpy(path, "/tmp/", 5);
    path[4096] = 0;
    vg_status st;
    vg_status_set(&st, VG_INVALID_ARGUMENT, "cannot open %s: %s", path, strerror(ENAMETOOLONG));
    CHECK(strlen(st.msg) < VG_STATUS_MSG_MAX);
    CHECK_STR_CONTAINS(st.msg, "cannot open /tmp/aaa");
    CHECK_STR_CONTAINS(st.msg, "...");
    size_t n = strlen(st.msg), k = strlen("File name too long");
    CHECK(n >= k && strcmp(st.msg + n - k, "File name too long") == 0);
    /* prefixing keeps the ending too */
    vg_status_set(&st, VG_DATA_LOSS, "%s at offset 12345", path);
    vg_status_prefix(&st, "reading %s: ", "x");
    n = strlen(st.msg);
    CHECK(strncmp(st.msg, "reading x: /tmp/", 16) == 0);
    CHECK(n > 15 && strcmp(st.msg + n - 15, "at offset 12345") == 0);
    /* a short message is untouched */
    vg_status_set(&st, VG_DATA_LOSS, "short %d", 1);
    CHECK(strcmp(st.msg, "short 1") == 0);
    /* UTF-8 is not cut in the middle of a character */
    char utf[3000];
    size_t o = 0;
    while (o + 2 < sizeof utf - 1) utf[o++] = '\xc3', utf[o++] = '\xa9'; /* é */
    utf[o] = 0;
    vg_status_set(&st, VG_DATA_LOSS, "%s", utf);
    const unsigned char *q = (const unsigned char *)st.msg;
    bool whole = true;
    for (size_t i = 0; q[i]; i++) {
        if (q[i] == 0xc3 && q[i + 1] != 0xa9) whole = false;
        if (q[i] == 0xa9 && (i == 0 || q[i - 1] != 0xc3)) whole = false;
    }
    CHECK(whole);
    CHECK_STR_CONTAINS(st.msg, "\xc3\xa9...\xc3\xa9");
}

static vg_code silent_fail(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    (void)p, (void)ctx, (void)v, (void)st;
    return VG_INTERNAL; /* no message, status untouched */
}

static void test_hostile__hook_error_without_message(void) {
    vg_graph *g = vg_graph_new();
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output inc = vg_assign_add(g, gs, vg_const_i64(g, 1, NULL), "train");
    vg_hook h;
    memset(&h, 0, sizeof h);
    h.name = "SilentHook";
    h.after_run = silent_fail;
    vg_status st;
    vg_monitored_session *ms = vg_monitored_session_new(g, &(vg_monitored_options){.hooks = &h, .nhooks = 1}, &st);
    CHECK(ms != NULL);
    if (ms) {
        vg_run_args a = {0};
        a.targets = &inc.op;
        a.ntargets = 1;
        vg_status_clear(&st);
        vg_code rc = vg_monitored_session_run(ms, &a, NULL, NULL, &st);
        CHECK_EQ_INT(rc, VG_INTERNAL);
        CHECK_STATUS(st.code, &st, VG_INTERNAL, "SilentHook");
        CHECK_STR_CONTAINS(st.msg, "after_run");
        vg_status end;
        vg_monitored_session_end(ms, rc, &end);
        vg_monitored_session_free(ms);
    }
    vg_graph_free(g);
}

/* ---- #8 ---- */

static void test_hostile__special_files_rejected(void) {
    vg_status st;
    double t0 = tu_now_s();
    vg__tfrecord_reader *r = vg__tfrecord_reader_open("/dev/zero", &st);
    CHECK(r == NULL);
    CHECK_STATUS(st.code, &st, VG_FAILED_PRECONDITION, "/dev/zero is not a regular file");
    vg__event_reader *er = vg__event_reader_open("/dev/zero", &st);
    CHECK(er == NULL);
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    uint8_t *data = NULL;
    size_t n;
    CHECK_STATUS(vg__io_read_file(fifo, &data, &n, &st), &st, VG_FAILED_PRECONDITION, "a FIFO");
    CHECK(vg__idx_reader_open(fifo, 0, &st) == NULL);
    CHECK(vg__sstable_open(fifo, &st) == NULL);
    CHECK(vg__io_read_file(g_dir, &data, &n, &st) == VG_FAILED_PRECONDITION);
    CHECK(tu_now_s() - t0 < 5);
}

/* ---- #9 ---- */

static void test_hostile__output_index_range_checked(void) {
    vg_graph *g = vg_graph_new();
    vg_output loss = vg_const_f32(g, 1.0f, "loss");
    vg_status st;
    vg_output o = vg_graph_output_by_name(g, "loss:0", &st);
    CHECK(o.op == loss.op && o.index == 0);
    const char *bad[] = {"loss:4294967296", "loss:2147483648", "loss:99999999999999999999", "loss:-1", "loss:",
                         "loss:1x", "loss: 0", "loss:+0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = vg_graph_output_by_name(g, bad[i], &st);
        CHECK(o.op == NULL);
        CHECK_CODE(st.code, VG_INVALID_ARGUMENT);
    }
    o = vg_graph_output_by_name(g, "loss:1", &st);
    CHECK(o.op == NULL); /* in range for int, but the op has one output */
    vg_graph_free(g);
}

/* ---- #10 ---- */

static void test_hostile__state_file_linear(void) {
    const int n = 100000;
    vg__pb_buf b;
    vg__pb_init(&b);
    char line[128];
    for (int i = 0; i < n; i++) {
        int k = snprintf(line, sizeof line, "all_model_checkpoint_paths: \"/some/run/dir/model.ckpt-%d\"\n", i);
        vg__pb_put_raw(&b, line, (size_t)k);
    }
    vg__pb_put_raw(&b, "model_checkpoint_path: \"model.ckpt-99999\"\n", 42);
    vg__ckpt_state s;
    vg_status st;
    double t0 = cpu_s();
    CHECK_OK(vg__ckpt_state_parse((const char *)b.data, b.len, &s, &st), &st);
    double secs = cpu_s() - t0;
    fprintf(stderr, "parsed %d listed paths in %.3f s of CPU\n", n, secs);
    CHECK_EQ_INT(s.n_all, n);
    CHECK(secs < 3.0); /* quadratic growth took minutes under ASan */
    vg__pb_buf out;
    vg__pb_init(&out);
    CHECK_OK(vg__ckpt_state_format(&s, &out, &st), &st);
    vg__ckpt_state s2;
    CHECK_OK(vg__ckpt_state_parse((const char *)out.data, out.len, &s2, &st), &st);
    CHECK_EQ_INT(s2.n_all, n);
    CHECK(s2.n_all == n && strcmp(s2.all_paths[n - 1], s.all_paths[n - 1]) == 0);
    vg__ckpt_state_free(&s);
    vg__ckpt_state_free(&s2);
    vg__pb_free(&out);
    vg__pb_free(&b);
}

int main(void) {
    vg_log_set(NULL, NULL, VG_LOG_ERROR);
    make_tmpdir();
    RUN_TEST(test_hostile__unusable_state_file_is_data_loss);
    RUN_TEST(test_hostile__idx_count_checked_before_allocation);
    RUN_TEST(test_hostile__bundle_sizes_checked_before_allocation);
    RUN_TEST(test_hostile__fuzz_findings);
    RUN_TEST(test_hostile__graphdef_import_nul_op);
    RUN_TEST(test_hostile__shape_num_elements_overflow);
    RUN_TEST(test_hostile__saver_removes_temporaries_and_orphans);
    RUN_TEST(test_hostile__long_messages_keep_their_ending);
    RUN_TEST(test_hostile__hook_error_without_message);
    RUN_TEST(test_hostile__special_files_rejected);
    RUN_TEST(test_hostile__output_index_range_checked);
    RUN_TEST(test_hostile__state_file_linear);
    remove_tmpdir();
    TEST_MAIN_END();
}
