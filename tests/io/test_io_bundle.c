/* test_io_bundle.c - V2 checkpoints: the TF-written vectors, byte-exact re-encoding of
 * TF's index files, write/read round trips for every dtype, corruption, missing files,
 * crash safety on write errors, big-endian / multi-shard / versioned bundles. */
#include "io/io.h"
#include "io_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define TD VG_TESTDATA

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define TMPDIR_TAG "bundle"
#include "tmpdir_util.h"

static uint8_t *slurp(const char *path, size_t *n) {
    uint8_t *d;
    if (vg__io_read_file(path, &d, n, NULL)) return NULL;
    return d;
}

static bool files_equal(const char *a, const char *b) {
    size_t na, nb;
    uint8_t *x = slurp(a, &na), *y = slurp(b, &nb);
    bool eq = x && y && na == nb && memcmp(x, y, na) == 0;
    vg__free(x);
    vg__free(y);
    return eq;
}

/* Files in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    if (d) closedir(d);
    return n;
}

static float read_scalar_f(vg__bundle_reader *r, const char *name) {
    float v = -12345.0f;
    vg_status st;
    CHECK_OK(vg__bundle_reader_read(r, name, &v, 4, &st), &st);
    return v;
}

/* ---- TF-written checkpoints ---- */

/* The tensor bundle at prefix (checked to open; the reason on stderr when not). */
static vg__bundle_reader *open_bundle(const char *prefix) {
    vg_status st;
    return io_fx_opened(vg__bundle_reader_open(prefix, &st), prefix, &st);
}

static void test_io_bundle__tf_half_plus_two_snappy(void) {
    vg__bundle_reader *r = open_bundle(TD "/serving_half_plus_two_cpu_tf1.14/variables/variables");
    if (!r) return;
    CHECK_EQ_INT(vg__bundle_reader_num_entries(r), 5);
    const char *names[] = {"a", "a2", "b", "c", "c2"};
    float vals[] = {0.5f, 0.5f, 2.0f, 3.0f, 3.0f};
    for (int i = 0; i < 5; i++) {
        const vg__bundle_entry *e = vg__bundle_reader_entry(r, (size_t)i);
        CHECK(e && strcmp(e->name, names[i]) == 0 && e->dtype == VG__DT_FLOAT && e->ndims == 0);
        CHECK(e && e->offset == (uint64_t)(4 * i) && e->nbytes == 4);
        CHECK(read_scalar_f(r, names[i]) == vals[i]);
    }
    CHECK_EQ_INT(vg__bundle_reader_find(r, "b")->masked_crc, 0x4f78fd10u);
    vg__bundle_reader_free(r);
}

static void test_io_bundle__tf_half_plus_three_and_counter(void) {
    vg_status st;
    vg__bundle_reader *r = open_bundle(TD "/serving_half_plus_three_tf1.0/variables/variables");
    if (r) {
        CHECK_EQ_INT(vg__bundle_reader_num_entries(r), 3);
        CHECK(read_scalar_f(r, "a") == 0.5f);
        CHECK(read_scalar_f(r, "b") == 3.0f);
        CHECK(read_scalar_f(r, "c") == 3.0f);
        vg__bundle_reader_free(r);
    }
    r = open_bundle(TD "/serving_counter_tf1.5/variables/variables");
    if (r) {
        CHECK_EQ_INT(vg__bundle_reader_num_entries(r), 1);
        CHECK(read_scalar_f(r, "counter") == 0.0f);
        int dtype = 0, nd = -1;
        int64_t dims[VG__IO_MAX_DIMS];
        CHECK_OK(vg__bundle_reader_lookup(r, "counter", &dtype, dims, &nd, &st), &st);
        CHECK(dtype == VG__DT_FLOAT && nd == 0);
        EXPECT_CODE_MSG(vg__bundle_reader_lookup(r, "nope", &dtype, dims, &nd, &st), &st, VG_NOT_FOUND,
                        "Key nope not found in checkpoint");
        CHECK_STR_CONTAINS(st.msg, "serving_counter_tf1.5/variables/variables");
        vg__bundle_reader_free(r);
    }
}

static void test_io_bundle__tf2_strings(void) {
    vg_status st;
    vg__bundle_reader *r = open_bundle(TD "/serving_half_plus_two_tf2_cpu/variables/variables");
    if (!r) return;
    CHECK_EQ_INT(vg__bundle_reader_num_entries(r), 4);
    const vg__bundle_entry *e = vg__bundle_reader_entry(r, 0);
    CHECK(strcmp(e->name, "_CHECKPOINTABLE_OBJECT_GRAPH") == 0 && e->dtype == VG__DT_STRING && e->offset == 12 &&
          e->nbytes == 619);
    char **s;
    size_t *l;
    int64_t n;
    CHECK_OK(vg__bundle_reader_read_strings(r, "_CHECKPOINTABLE_OBJECT_GRAPH", &s, &l, &n, &st), &st);
    CHECK(n == 1 && l && l[0] == 613 && (uint8_t)s[0][0] == 0x0a && (uint8_t)s[0][1] == 0x98 && s[0][613] == 0);
    vg__bundle_strings_free(s, l, n);
    CHECK(read_scalar_f(r, "a/.ATTRIBUTES/VARIABLE_VALUE") == 0.5f);
    CHECK(read_scalar_f(r, "b/.ATTRIBUTES/VARIABLE_VALUE") == 2.0f);
    CHECK(read_scalar_f(r, "c/.ATTRIBUTES/VARIABLE_VALUE") == 3.0f);
    float f;
    CHECK_CODE(vg__bundle_reader_read(r, "_CHECKPOINTABLE_OBJECT_GRAPH", &f, 4, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg__bundle_reader_read_strings(r, "a/.ATTRIBUTES/VARIABLE_VALUE", &s, &l, &n, &st), VG_INVALID_ARGUMENT);
    vg__bundle_reader_free(r);
}

static void test_io_bundle__tf_rust_regression(void) {
    vg_status st;
    vg__bundle_reader *r = open_bundle(TD "/rust_regression_model_tf1.2/variables/variables");
    if (!r) return;
    int dtype, nd;
    int64_t dims[VG__IO_MAX_DIMS];
    CHECK_OK(vg__bundle_reader_lookup(r, "w", &dtype, dims, &nd, &st), &st);
    CHECK(dtype == VG__DT_FLOAT && nd == 1 && dims[0] == 1);
    float w = 0, b = 1;
    CHECK_OK(vg__bundle_reader_read(r, "w", &w, 4, &st), &st);
    CHECK_OK(vg__bundle_reader_read(r, "b", &b, 4, &st), &st);
    CHECK(w == -0.8578622341156006f);
    CHECK(b == 0.0f);
    CHECK_CODE(vg__bundle_reader_read(r, "w", &w, 8, &st), VG_INVALID_ARGUMENT);
    vg__bundle_reader_free(r);
}

static void test_io_bundle__index_only(void) {
    vg_status st;
    vg__sstable *t = vg__sstable_open(TD "/index_only/minigo.index", &st);
    CHECK(t && vg__sstable_count(t) == 334);
    vg__sstable_free(t);
    t = vg__sstable_open(TD "/index_only/style.index", &st);
    CHECK(t && vg__sstable_count(t) == 93);
    vg__sstable_free(t);
    vg__bundle_reader *r = open_bundle(TD "/index_only/minigo");
    if (r) {
        CHECK_EQ_INT(vg__bundle_reader_num_entries(r), 333);
        const vg__bundle_entry *g = vg__bundle_reader_find(r, "global_step");
        CHECK(g && g->dtype == VG__DT_INT64 && g->ndims == 0 && g->offset == 182702864 && g->nbytes == 8);
        int floats = 0;
        for (size_t i = 0; i < vg__bundle_reader_num_entries(r); i++)
            floats += vg__bundle_reader_entry(r, i)->dtype == VG__DT_FLOAT;
        CHECK_EQ_INT(floats, 332);
        int64_t v;
        CHECK_CODE(vg__bundle_reader_read(r, "global_step", &v, 8, &st), VG_NOT_FOUND); /* no data file */
        CHECK_STR_CONTAINS(st.msg, "minigo.data-00000-of-00001");
        vg__bundle_reader_free(r);
    }
    r = open_bundle(TD "/index_only/style");
    if (r) {
        CHECK_EQ_INT(vg__bundle_reader_num_entries(r), 92);
        const vg__bundle_entry *e = vg__bundle_reader_find(r, "conv1.conv2d.weight");
        CHECK(e && e->ndims == 4 && e->dims[0] == 32 && e->dims[1] == 3 && e->dims[2] == 9 && e->dims[3] == 9);
        CHECK(e && e->nbytes == 32 * 3 * 9 * 9 * 4);
        vg__bundle_reader_free(r);
    }
}

/* ---- byte-exact re-encoding ---- */

/* Re-encodes every key/value of a TF index with our builder. */
static vg__sstable_builder *reencode(const char *path, vg__sstable **out_t) {
    vg_status st;
    vg__sstable *t = vg__sstable_open(path, &st);
    CHECK(t != NULL);
    if (!t) return NULL;
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, &st);
    for (size_t i = 0; i < vg__sstable_count(t); i++) {
        const uint8_t *k, *v;
        size_t kl, vl;
        vg__sstable_entry(t, i, &k, &kl, &v, &vl);
        CHECK_OK(vg__sstable_builder_add(b, k, kl, v, vl, &st), &st);
    }
    CHECK_OK(vg__sstable_builder_finish(b, &st), &st);
    *out_t = t;
    return b;
}

static void test_io_bundle__reencode_raw_indexes(void) {
    const char *files[] = {TD "/serving_half_plus_three_tf1.0/variables/variables.index",
                           TD "/serving_counter_tf1.5/variables/variables.index",
                           TD "/rust_regression_model_tf1.2/variables/variables.index", TD "/index_only/style.index"};
    for (int i = 0; i < 4; i++) {
        vg__sstable *t = NULL;
        vg__sstable_builder *b = reencode(files[i], &t);
        size_t n, fn;
        const uint8_t *mine = b ? vg__sstable_builder_data(b, &n) : NULL;
        uint8_t *tf = slurp(files[i], &fn);
        CHECK(mine && tf && n == fn && memcmp(mine, tf, n) == 0);
        if (!(mine && tf && n == fn && memcmp(mine, tf, n) == 0)) fprintf(stderr, "  differs: %s\n", files[i]);
        vg__free(tf);
        vg__sstable_builder_free(b);
        vg__sstable_free(t);
    }
}

/* The first data block (after Snappy decompression when stored with type 1). */
static uint8_t *first_block(const uint8_t *f, size_t n, size_t *bn) {
    const uint8_t *q = f + n - 48, *ib;
    uint64_t h[4], off, size;
    for (int i = 0; i < 4; i++) vg__pb_get_varint(&q, f + n - 8, &h[i]);
    ib = f + h[2];
    q = ib;
    uint64_t sh, ns, vl;
    vg__pb_get_varint(&q, ib + h[3], &sh);
    vg__pb_get_varint(&q, ib + h[3], &ns);
    vg__pb_get_varint(&q, ib + h[3], &vl);
    q += ns;
    vg__pb_get_varint(&q, ib + h[3], &off);
    vg__pb_get_varint(&q, ib + h[3], &size);
    uint8_t *out = NULL;
    if (f[off + size] == 1) {
        vg__snappy_uncompress(f + off, size, 1 << 24, &out, bn, NULL);
    } else {
        out = vg__malloc(size);
        memcpy(out, f + off, size);
        *bn = size;
    }
    return out;
}

static void test_io_bundle__reencode_snappy_indexes(void) {
    const char *files[] = {TD "/serving_half_plus_two_cpu_tf1.14/variables/variables.index",
                           TD "/serving_half_plus_two_tf2_cpu/variables/variables.index", TD "/index_only/minigo.index"};
    size_t raw_sizes[] = {100, 192, 12620};
    for (int i = 0; i < 3; i++) {
        vg__sstable *t = NULL;
        vg__sstable_builder *b = reencode(files[i], &t);
        size_t n, fn, an = 0, bn = 0;
        const uint8_t *mine = b ? vg__sstable_builder_data(b, &n) : NULL;
        uint8_t *tf = slurp(files[i], &fn);
        uint8_t *x = mine ? first_block(mine, n, &an) : NULL, *y = tf ? first_block(tf, fn, &bn) : NULL;
        CHECK(x && y && an == raw_sizes[i] && an == bn && memcmp(x, y, an) == 0);
        vg__free(x);
        vg__free(y);
        vg__free(tf);
        vg__sstable_builder_free(b);
        vg__sstable_free(t);
    }
}

/* Finishes and frees w (writing the bundle at prefix p) and checks that its index and
 * data files equal, byte for byte, those of TF's bundle at tf_prefix. */
static void finish_matches_tf(vg__bundle_writer *w, const char *p, const char *tf_prefix) {
    vg_status st;
    char a[600], b[600];
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
    const char *suffix[2] = {".index", ".data-00000-of-00001"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s%s", p, suffix[i]);
        snprintf(b, sizeof b, "%s%s", tf_prefix, suffix[i]);
        if (!files_equal(a, b)) fprintf(stderr, "  %s differs from %s\n", a, b);
        CHECK(files_equal(a, b));
    }
}

/* Our bundle writer, given the tensors TF saved, writes TF's exact files. */
static void test_io_bundle__writer_matches_tf(void) {
    vg_status st;
    char p[512];
    float half_three[3] = {0.5f, 3.0f, 3.0f};
    const char *n3[] = {"c", "a", "b"}; /* add order differs from key order: data order follows add order */
    vg__bundle_writer *w = vg__bundle_writer_new(tmp_path(p, "h3"), &st);
    CHECK(w != NULL);
    if (!w) return;
    /* TF wrote a, b, c at offsets 0, 4, 8 */
    const float *vals[] = {&half_three[2], &half_three[0], &half_three[1]};
    (void)n3;
    CHECK_OK(vg__bundle_writer_add(w, "a", VG__DT_FLOAT, NULL, 0, vals[1], 4, &st), &st);
    CHECK_OK(vg__bundle_writer_add(w, "b", VG__DT_FLOAT, NULL, 0, vals[2], 4, &st), &st);
    CHECK_OK(vg__bundle_writer_add(w, "c", VG__DT_FLOAT, NULL, 0, vals[0], 4, &st), &st);
    finish_matches_tf(w, p, TD "/serving_half_plus_three_tf1.0/variables/variables");

    /* rust regression: b [1] = 0, w [1] = -0.8578622341156006 */
    w = vg__bundle_writer_new(tmp_path(p, "sub/dir/rr"), &st); /* creates the directories */
    CHECK(w != NULL);
    if (!w) return;
    int64_t one = 1;
    float bv = 0.0f, wv = -0.8578622341156006f;
    CHECK_OK(vg__bundle_writer_add(w, "b", VG__DT_FLOAT, &one, 1, &bv, 4, &st), &st);
    CHECK_OK(vg__bundle_writer_add(w, "w", VG__DT_FLOAT, &one, 1, &wv, 4, &st), &st);
    finish_matches_tf(w, p, TD "/rust_regression_model_tf1.2/variables/variables");
    CHECK_EQ_INT(count_files(g_dir, "h3"), 2); /* no temp files left */
}

/* TF2 vector (strings, data order != key order): same data file, same key/values. */
static void test_io_bundle__writer_matches_tf2_strings(void) {
    vg_status st;
    char p[512], a[512];
    vg__bundle_reader *r = vg__bundle_reader_open(TD "/serving_half_plus_two_tf2_cpu/variables/variables", &st);
    if (!r) { CHECK(0); return; }
    char **s;
    size_t *l;
    int64_t n;
    CHECK_OK(vg__bundle_reader_read_strings(r, "_CHECKPOINTABLE_OBJECT_GRAPH", &s, &l, &n, &st), &st);
    vg__bundle_writer *w = vg__bundle_writer_new(tmp_path(p, "tf2"), &st);
    const char *names[] = {"a/.ATTRIBUTES/VARIABLE_VALUE", "b/.ATTRIBUTES/VARIABLE_VALUE", "c/.ATTRIBUTES/VARIABLE_VALUE"};
    for (int i = 0; i < 3; i++) {
        float v = read_scalar_f(r, names[i]);
        CHECK_OK(vg__bundle_writer_add(w, names[i], VG__DT_FLOAT, NULL, 0, &v, 4, &st), &st);
    }
    CHECK_OK(vg__bundle_writer_add_strings(w, "_CHECKPOINTABLE_OBJECT_GRAPH", NULL, 0, (const char *const *)s, l, n, &st),
             &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
    vg__bundle_strings_free(s, l, n);
    vg__bundle_reader_free(r);
    snprintf(a, sizeof a, "%s.data-00000-of-00001", p);
    CHECK(files_equal(a, TD "/serving_half_plus_two_tf2_cpu/variables/variables.data-00000-of-00001"));
    snprintf(a, sizeof a, "%s.index", p);
    vg__sstable *x = vg__sstable_open(a, &st), *y = vg__sstable_open(TD "/serving_half_plus_two_tf2_cpu/variables/variables.index", &st);
    CHECK(x && y && vg__sstable_count(x) == vg__sstable_count(y));
    for (size_t i = 0; x && y && i < vg__sstable_count(x); i++) {
        const uint8_t *k1, *v1, *k2, *v2;
        size_t kl1, vl1, kl2, vl2;
        vg__sstable_entry(x, i, &k1, &kl1, &v1, &vl1);
        vg__sstable_entry(y, i, &k2, &kl2, &v2, &vl2);
        CHECK(kl1 == kl2 && memcmp(k1, k2, kl1) == 0 && vl1 == vl2 && memcmp(v1, v2, vl1) == 0);
    }
    vg__sstable_free(x);
    vg__sstable_free(y);
}

/* ---- round trip ---- */

typedef struct tcase {
    const char *name;
    int dtype;
    int ndims;
    int64_t dims[4];
} tcase;

static void fill(uint8_t *p, size_t n, int seed) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 131 + (size_t)seed * 17 + (i >> 8));
}

static void test_io_bundle__round_trip_all_dtypes(void) {
    vg_status st;
    char p[512];
    tcase cases[] = {
        {"f32", VG__DT_FLOAT, 2, {3, 5}},     {"f64", VG__DT_DOUBLE, 1, {7}},       {"i32", VG__DT_INT32, 0, {0}},
        {"u8", VG__DT_UINT8, 3, {2, 3, 4}},   {"i16", VG__DT_INT16, 1, {9}},        {"i8", VG__DT_INT8, 1, {3}},
        {"c64", VG__DT_COMPLEX64, 1, {2}},    {"i64", VG__DT_INT64, 0, {0}},        {"bool", VG__DT_BOOL, 1, {5}},
        {"bf16", VG__DT_BFLOAT16, 1, {4}},    {"u16", VG__DT_UINT16, 1, {3}},       {"c128", VG__DT_COMPLEX128, 1, {2}},
        {"f16", VG__DT_HALF, 2, {2, 2}},      {"u32", VG__DT_UINT32, 1, {1}},       {"u64", VG__DT_UINT64, 1, {2}},
        {"empty", VG__DT_FLOAT, 1, {0}},      {"empty2", VG__DT_INT64, 2, {3, 0}},  {"r4", VG__DT_FLOAT, 4, {1, 2, 3, 4}},
        {"layer/sub/kernel/Adam_1", VG__DT_FLOAT, 2, {300, 200}},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    vg__bundle_writer *w = vg__bundle_writer_new(tmp_path(p, "rt/model.ckpt-7"), &st);
    CHECK(w != NULL);
    if (!w) return;
    for (int i = nc - 1; i >= 0; i--) { /* reverse order: the index must still be sorted */
        tcase *c = &cases[i];
        size_t n = vg__io_dtype_size(c->dtype);
        for (int d = 0; d < c->ndims; d++) n *= (size_t)c->dims[d];
        uint8_t *buf = malloc(n + 1);
        fill(buf, n, i);
        CHECK_OK(vg__bundle_writer_add(w, c->name, c->dtype, c->dims, c->ndims, buf, n, &st), &st);
        free(buf);
    }
    const char *strs[] = {"", "hello", "with\0nul", "\xff\xfe binary"};
    size_t lens[] = {0, 5, 8, 9};
    int64_t sd[2] = {2, 2}, zero = 0;
    CHECK_OK(vg__bundle_writer_add_strings(w, "strs", sd, 2, strs, lens, 4, &st), &st);
    CHECK_OK(vg__bundle_writer_add_strings(w, "str0", &zero, 1, NULL, NULL, 0, &st), &st);
    const char *one[] = {"scalar string"};
    CHECK_OK(vg__bundle_writer_add_strings(w, "str_scalar", NULL, 0, one, NULL, 1, &st), &st);
    /* validation errors leave the writer usable */
    float f = 1;
    CHECK_CODE(vg__bundle_writer_add(w, "f32", VG__DT_FLOAT, NULL, 0, &f, 4, &st), VG_ALREADY_EXISTS);
    CHECK_CODE(vg__bundle_writer_add(w, "strs", VG__DT_FLOAT, NULL, 0, &f, 4, &st), VG_ALREADY_EXISTS);
    CHECK_CODE(vg__bundle_writer_add(w, "", VG__DT_FLOAT, NULL, 0, &f, 4, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg__bundle_writer_add(w, "x", VG__DT_FLOAT, NULL, 0, &f, 3, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg__bundle_writer_add(w, "x", VG__DT_STRING, NULL, 0, &f, 4, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg__bundle_writer_add(w, "x", 20, NULL, 0, &f, 4, &st), VG_INVALID_ARGUMENT);
    int64_t neg = -1;
    CHECK_CODE(vg__bundle_writer_add(w, "x", VG__DT_FLOAT, &neg, 1, &f, 4, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg__bundle_writer_add_strings(w, "x", sd, 2, strs, lens, 3, &st), VG_INVALID_ARGUMENT);
    CHECK_OK(vg__bundle_writer_add(w, "x", VG__DT_FLOAT, NULL, 0, &f, 4, &st), &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    CHECK_CODE(vg__bundle_writer_finish(w, &st), VG_FAILED_PRECONDITION);
    vg__bundle_writer_free(w);

    vg__bundle_reader *r = open_bundle(p);
    if (!r) return;
    CHECK_EQ_INT(vg__bundle_reader_num_entries(r), nc + 4);
    for (size_t i = 1; i < vg__bundle_reader_num_entries(r); i++)
        CHECK(strcmp(vg__bundle_reader_entry(r, i - 1)->name, vg__bundle_reader_entry(r, i)->name) < 0);
    for (int i = 0; i < nc; i++) {
        tcase *c = &cases[i];
        int dtype = 0, nd = -1;
        int64_t dims[VG__IO_MAX_DIMS];
        CHECK_OK(vg__bundle_reader_lookup(r, c->name, &dtype, dims, &nd, &st), &st);
        CHECK(dtype == c->dtype && nd == c->ndims);
        for (int d = 0; d < nd && d < 4; d++) CHECK(dims[d] == c->dims[d]);
        size_t n = vg__io_dtype_size(c->dtype);
        for (int d = 0; d < c->ndims; d++) n *= (size_t)c->dims[d];
        uint8_t *want = malloc(n + 1), *got = malloc(n + 1);
        fill(want, n, i);
        CHECK_OK(vg__bundle_reader_read(r, c->name, got, n, &st), &st);
        CHECK(memcmp(want, got, n) == 0);
        free(want);
        free(got);
    }
    char **s;
    size_t *l;
    int64_t n;
    CHECK_OK(vg__bundle_reader_read_strings(r, "strs", &s, &l, &n, &st), &st);
    CHECK(n == 4);
    for (int i = 0; i < 4 && n == 4; i++) CHECK(l[i] == lens[i] && memcmp(s[i], strs[i], lens[i]) == 0 && !s[i][l[i]]);
    vg__bundle_strings_free(s, l, n);
    CHECK_OK(vg__bundle_reader_read_strings(r, "str0", &s, &l, &n, &st), &st);
    CHECK(n == 0 && vg__bundle_reader_find(r, "str0")->nbytes == 4);
    vg__bundle_strings_free(s, l, n);
    CHECK_OK(vg__bundle_reader_read_strings(r, "str_scalar", &s, &l, &n, &st), &st);
    CHECK(n == 1 && strcmp(s[0], "scalar string") == 0);
    vg__bundle_strings_free(s, l, n);
    const vg__bundle_entry *e = vg__bundle_reader_find(r, "empty");
    CHECK(e && e->nbytes == 0 && e->masked_crc == 0xa282ead8u);
    vg__bundle_reader_free(r);
}

/* ---- corruption and missing files ---- */

static void write_small(const char *prefix) {
    vg_status st;
    vg__bundle_writer *w = vg__bundle_writer_new(prefix, &st);
    float a[4] = {1, 2, 3, 4}, b = 5;
    int64_t d = 4;
    vg__bundle_writer_add(w, "a", VG__DT_FLOAT, &d, 1, a, sizeof a, &st);
    vg__bundle_writer_add(w, "b", VG__DT_FLOAT, NULL, 0, &b, 4, &st);
    const char *s[] = {"xyz"};
    vg__bundle_writer_add_strings(w, "s", NULL, 0, s, NULL, 1, &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
}

static void flip_byte(const char *path, long off) {
    FILE *f = fopen(path, "r+b");
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x20, f);
    fclose(f);
}

static void test_io_bundle__corruption(void) {
    vg_status st;
    char p[512], data[512], index[512];
    tmp_path(p, "corrupt");
    snprintf(data, sizeof data, "%s.data-00000-of-00001", p);
    snprintf(index, sizeof index, "%s.index", p);
    write_small(p);
    flip_byte(data, 5); /* inside tensor a */
    vg__bundle_reader *r = open_bundle(p);
    if (r) {
        float a[4], b;
        EXPECT_CODE_MSG(vg__bundle_reader_read(r, "a", a, sizeof a, &st), &st, VG_DATA_LOSS, "tensor a");
        CHECK_STR_CONTAINS(st.msg, data);
        CHECK_OK(vg__bundle_reader_read(r, "b", &b, 4, &st), &st);
        CHECK(b == 5);
        vg__bundle_reader_free(r);
    }
    flip_byte(data, 5);
    /* one flipped byte at a time (s starts at 20: varint, checksum, "xyz"): a string byte,
     * then the length checksum (which stays flipped for the cases below) */
    const long str_off[2] = {20 + 1 + 4 + 1, 20 + 2};
    for (int k = 0; k < 2; k++) {
        if (k) flip_byte(data, str_off[k - 1]);
        flip_byte(data, str_off[k]);
        r = vg__bundle_reader_open(p, &st);
        if (!r) continue;
        char **s;
        size_t *l;
        int64_t n;
        CHECK_CODE(vg__bundle_reader_read_strings(r, "s", &s, &l, &n, &st), VG_DATA_LOSS);
        if (k == 0) CHECK(s == NULL && n == 0);
        else CHECK_STR_CONTAINS(st.msg, "checksum");
        vg__bundle_reader_free(r);
    }
    /* truncated data file */
    CHECK(truncate(data, 10) == 0);
    r = vg__bundle_reader_open(p, &st);
    if (r) {
        float b;
        EXPECT_CODE_MSG(vg__bundle_reader_read(r, "b", &b, 4, &st), &st, VG_DATA_LOSS, "truncated");
        vg__bundle_reader_free(r);
    }
    /* truncated / corrupted index */
    size_t n;
    uint8_t *idx = slurp(index, &n);
    for (size_t cut = 0; idx && cut < n; cut += 5) {
        FILE *f = fopen(index, "wb");
        fwrite(idx, 1, cut, f);
        fclose(f);
        CHECK(vg__bundle_reader_open(p, &st) == NULL);
        CHECK_EQ_INT(st.code, VG_DATA_LOSS);
    }
    if (idx) {
        FILE *f = fopen(index, "wb");
        fwrite(idx, 1, n, f);
        fclose(f);
        flip_byte(index, 3);
        CHECK(vg__bundle_reader_open(p, &st) == NULL);
        CHECK_EQ_INT(st.code, VG_DATA_LOSS);
        CHECK_STR_CONTAINS(st.msg, index);
    }
    vg__free(idx);
}

static void test_io_bundle__missing(void) {
    vg_status st;
    char p[512];
    CHECK(vg__bundle_reader_open(tmp_path(p, "nothing_here"), &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_NOT_FOUND, "nothing_here.index");
    tmp_path(p, "nodata");
    write_small(p);
    char data[512];
    snprintf(data, sizeof data, "%s.data-00000-of-00001", p);
    unlink(data);
    vg__bundle_reader *r = open_bundle(p);
    if (r) {
        float b;
        CHECK_CODE(vg__bundle_reader_read(r, "b", &b, 4, &st), VG_NOT_FOUND);
        CHECK_STR_CONTAINS(st.msg, data);
        EXPECT_CODE_MSG(vg__bundle_reader_read(r, "zz", &b, 4, &st), &st, VG_NOT_FOUND,
                        "Key zz not found in checkpoint");
        vg__bundle_reader_free(r);
    }
}

/* ---- crash safety ---- */

static void test_io_bundle__abandon_and_overwrite(void) {
    vg_status st;
    char p[512];
    tmp_path(p, "ab/ckpt-1");
    write_small(p);
    char idx[512];
    snprintf(idx, sizeof idx, "%s.index", p);
    size_t n0;
    uint8_t *before = slurp(idx, &n0);
    /* abandoned writer: temp files removed, old checkpoint untouched */
    vg__bundle_writer *w = vg__bundle_writer_new(p, &st);
    float x[100] = {0};
    vg__bundle_writer_add(w, "other", VG__DT_FLOAT, NULL, 0, x, 4, &st);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ab", g_dir);
    CHECK_EQ_INT(count_files(dir, "ckpt-1"), 3); /* index, data, data temp */
    vg__bundle_writer_free(w);
    CHECK_EQ_INT(count_files(dir, "ckpt-1"), 2);
    CHECK(files_equal(idx, idx));
    size_t n1;
    uint8_t *after = slurp(idx, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    vg__free(after);
    /* finishing over the same prefix replaces it */
    w = vg__bundle_writer_new(p, &st);
    vg__bundle_writer_add(w, "other", VG__DT_FLOAT, NULL, 0, x, 4, &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
    vg__bundle_reader *r = vg__bundle_reader_open(p, &st);
    CHECK(r && vg__bundle_reader_num_entries(r) == 1 && vg__bundle_reader_find(r, "other"));
    vg__bundle_reader_free(r);
    CHECK_EQ_INT(count_files(dir, "ckpt-1"), 2);
    vg__free(before);
}

/* A write error (file size limit -> EFBIG) in a child process: the error names the
 * file, no temp files remain and the previous checkpoint is untouched. */
static void test_io_bundle__write_error(void) {
    char p1[512], p2[512], dir[512];
    tmp_path(p1, "we/ckpt-1");
    tmp_path(p2, "we/ckpt-2");
    snprintf(dir, sizeof dir, "%s/we", g_dir);
    write_small(p1);
    char i1[512];
    snprintf(i1, sizeof i1, "%s.index", p1);
    size_t n0;
    uint8_t *before = slurp(i1, &n0);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {64 * 1024, 64 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        vg_status st;
        vg__bundle_writer *w = vg__bundle_writer_new(p2, &st);
        if (!w) _exit(10);
        size_t big = 1 << 20;
        void *buf = calloc(1, big);
        int64_t d = (int64_t)(big / 4);
        vg_code c = vg__bundle_writer_add(w, "big", VG__DT_FLOAT, &d, 1, buf, big, &st);
        if (c == VG_OK) c = vg__bundle_writer_finish(w, &st);
        int bad = c != VG_RESOURCE_EXHAUSTED || !strstr(st.msg, "ckpt-2.data-00000-of-00001");
        float f = 0;
        /* sticky: later adds and finish fail too */
        bad |= vg__bundle_writer_add(w, "small", VG__DT_FLOAT, NULL, 0, &f, 4, NULL) != VG_RESOURCE_EXHAUSTED;
        bad |= vg__bundle_writer_finish(w, NULL) != VG_RESOURCE_EXHAUSTED;
        bad |= count_files(dir, "ckpt-2") != 0; /* temp removed at the failure, before free */
        vg__bundle_writer_free(w);
        free(buf);
        if (bad) fprintf(stderr, "child: code %d msg %s\n", c, st.msg);
        _exit(bad ? 11 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_INT(count_files(dir, "ckpt-2"), 0);
    CHECK_EQ_INT(count_files(dir, "ckpt-1"), 2);
    size_t n1;
    uint8_t *after = slurp(i1, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    vg__free(before);
    vg__free(after);
    CHECK_EQ_INT(vg__io_errno_code(ENOSPC), VG_RESOURCE_EXHAUSTED);
    CHECK_EQ_INT(vg__io_errno_code(EACCES), VG_PERMISSION_DENIED);
    CHECK_EQ_INT(vg__io_errno_code(EIO), VG_UNKNOWN);
}

/* ---- hand-built bundles: big-endian, shards, versions, slices ---- */

static void craft(const char *prefix, const uint8_t *hdr, size_t hn, const char *const *names, vg__pb_buf *vals,
                  int n) {
    vg_status st;
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, &st);
    vg__sstable_builder_add(b, "", 0, hdr, hn, &st);
    for (int i = 0; i < n; i++) vg__sstable_builder_add(b, names[i], strlen(names[i]), vals[i].data, vals[i].len, &st);
    vg__sstable_builder_finish(b, &st);
    size_t len;
    const uint8_t *d = vg__sstable_builder_data(b, &len);
    char path[512];
    snprintf(path, sizeof path, "%s.index", prefix);
    FILE *f = fopen(path, "wb");
    fwrite(d, 1, len, f);
    fclose(f);
    vg__sstable_builder_free(b);
}

static void entry(vg__pb_buf *v, int dtype, int64_t dim0, int shard, uint64_t off, uint64_t size, const void *data) {
    vg__pb_init(v);
    vg__pb_put_uint64(v, 1, (uint64_t)dtype);
    vg__pb_buf shape, dim;
    vg__pb_init(&shape);
    vg__pb_init(&dim);
    vg__pb_put_uint64(&dim, 1, (uint64_t)dim0);
    vg__pb_put_message(&shape, 2, &dim);
    vg__pb_put_message(v, 2, &shape);
    if (shard) vg__pb_put_uint64(v, 3, (uint64_t)shard);
    if (off) vg__pb_put_uint64(v, 4, off);
    vg__pb_put_uint64(v, 5, size);
    vg__pb_put_fixed32_field(v, 6, vg__crc32c_mask(vg__crc32c(data, size)));
    vg__pb_free(&shape);
    vg__pb_free(&dim);
}

static void write_bytes(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(d, 1, n, f);
    fclose(f);
}

static void test_io_bundle__big_endian_and_shards(void) {
    vg_status st;
    char p[512], path[512];
    tmp_path(p, "be");
    /* shard 0: int32 [2] = {1, -2} big-endian; shard 1: double [1] = 1.5 big-endian */
    const uint8_t s0[] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe};
    const uint8_t s1[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
    snprintf(path, sizeof path, "%s.data-00000-of-00002", p);
    write_bytes(path, s0, 8);
    snprintf(path, sizeof path, "%s.data-00001-of-00002", p);
    write_bytes(path, s1, 8);
    const uint8_t hdr[] = {0x08, 0x02, 0x10, 0x01, 0x1a, 0x02, 0x08, 0x01};
    vg__pb_buf v[2];
    entry(&v[0], VG__DT_INT32, 2, 0, 0, 8, s0);
    entry(&v[1], VG__DT_DOUBLE, 1, 1, 0, 8, s1);
    const char *names[] = {"i", "j"};
    craft(p, hdr, sizeof hdr, names, v, 2);
    vg__bundle_reader *r = open_bundle(p);
    if (r) {
        int32_t iv[2] = {0, 0};
        double dv = 0;
        CHECK_OK(vg__bundle_reader_read(r, "i", iv, 8, &st), &st);
        CHECK(iv[0] == 1 && iv[1] == -2);
        CHECK_OK(vg__bundle_reader_read(r, "j", &dv, 8, &st), &st);
        CHECK(dv == 1.5);
        vg__bundle_reader_free(r);
    }
    vg__pb_free(&v[0]);
    vg__pb_free(&v[1]);
}

static void test_io_bundle__versions_and_slices(void) {
    vg_status st;
    char p[512];
    tmp_path(p, "ver");
    const uint8_t min2[] = {0x08, 0x01, 0x1a, 0x04, 0x08, 0x01, 0x10, 0x02};
    craft(p, min2, sizeof min2, NULL, NULL, 0);
    CHECK(vg__bundle_reader_open(p, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    const uint8_t bad1[] = {0x08, 0x01, 0x1a, 0x04, 0x08, 0x01, 0x18, 0x01};
    craft(p, bad1, sizeof bad1, NULL, NULL, 0);
    CHECK(vg__bundle_reader_open(p, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    const uint8_t ok_future[] = {0x08, 0x01, 0x1a, 0x06, 0x08, 0x05, 0x10, 0x01, 0x18, 0x03};
    /* sliced entry: dtype, shape, slices */
    vg__pb_buf v;
    vg__pb_init(&v);
    vg__pb_put_uint64(&v, 1, VG__DT_FLOAT);
    vg__pb_put_bytes(&v, 2, "\x12\x02\x08\x04", 4);
    vg__pb_put_bytes(&v, 7, "\x0a\x00", 2);
    const char *names[] = {"part"};
    craft(p, ok_future, sizeof ok_future, names, &v, 1);
    vg__pb_free(&v);
    vg__bundle_reader *r = open_bundle(p);
    if (r) {
        CHECK(vg__bundle_reader_find(r, "part") && vg__bundle_reader_find(r, "part")->sliced);
        float f[4];
        CHECK_CODE(vg__bundle_reader_read(r, "part", f, sizeof f, &st), VG_UNIMPLEMENTED);
        vg__bundle_reader_free(r);
    }
    const uint8_t no_shards[] = {0x1a, 0x02, 0x08, 0x01};
    craft(p, no_shards, sizeof no_shards, NULL, NULL, 0);
    CHECK(vg__bundle_reader_open(p, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_DATA_LOSS);
}

/* Keys are byte strings, names C strings: "a\0x" and "a\0y" would both be named "a",
 * and a lookup by name could answer with the other entry's dtype (fuzz_bundle found a
 * string entry returned for a float's name). Such an index is refused as corrupt. */
static void test_io_bundle__nul_in_name(void) {
    vg_status st;
    char p[512], path[512];
    tmp_path(p, "nul");
    const float one = 1.0f;
    snprintf(path, sizeof path, "%s.data-00000-of-00001", p);
    write_bytes(path, &one, 4);
    const uint8_t hdr[] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};
    vg__pb_buf v;
    entry(&v, VG__DT_FLOAT, 1, 0, 0, 4, &one);
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, &st);
    vg__sstable_builder_add(b, "", 0, hdr, sizeof hdr, &st);
    vg__sstable_builder_add(b, "a\0x", 3, v.data, v.len, &st);
    vg__sstable_builder_add(b, "a\0y", 3, v.data, v.len, &st);
    CHECK_OK(vg__sstable_builder_finish(b, &st), &st);
    size_t len;
    const uint8_t *d = vg__sstable_builder_data(b, &len);
    snprintf(path, sizeof path, "%s.index", p);
    write_bytes(path, d, len);
    vg__sstable_builder_free(b);
    vg__pb_free(&v);
    CHECK(vg__bundle_reader_open(p, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_DATA_LOSS);
    CHECK(strstr(st.msg, "NUL") != NULL);
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_io_bundle__tf_half_plus_two_snappy);
    RUN_TEST(test_io_bundle__tf_half_plus_three_and_counter);
    RUN_TEST(test_io_bundle__tf2_strings);
    RUN_TEST(test_io_bundle__tf_rust_regression);
    RUN_TEST(test_io_bundle__index_only);
    RUN_TEST(test_io_bundle__reencode_raw_indexes);
    RUN_TEST(test_io_bundle__reencode_snappy_indexes);
    RUN_TEST(test_io_bundle__writer_matches_tf);
    RUN_TEST(test_io_bundle__writer_matches_tf2_strings);
    RUN_TEST(test_io_bundle__round_trip_all_dtypes);
    RUN_TEST(test_io_bundle__corruption);
    RUN_TEST(test_io_bundle__missing);
    RUN_TEST(test_io_bundle__abandon_and_overwrite);
    RUN_TEST(test_io_bundle__write_error);
    RUN_TEST(test_io_bundle__big_endian_and_shards);
    RUN_TEST(test_io_bundle__versions_and_slices);
    RUN_TEST(test_io_bundle__nul_in_name);
    remove_tmpdir();
    TEST_MAIN_END();
}
