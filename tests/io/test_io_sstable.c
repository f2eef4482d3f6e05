/* test_io_sstable.c - Snappy wrapper, SSTable builder rules and reader checks. */
#include "io/io.h"
#include "test_util.h"


/* The number of entries of the table t[n] as read back from a copy of its bytes (the
 * reader owns the copy); -1 when it cannot be opened. */
static int64_t reopened_count(const uint8_t *t, size_t n) {
    vg_status st;
    uint8_t *copy = vg__malloc(n);
    memcpy(copy, t, n);
    vg__sstable *r = vg__sstable_open_buffer(copy, n, "mem", &st);
    int64_t count = r ? (int64_t)vg__sstable_count(r) : -1;
    vg__sstable_free(r);
    return count;
}
static void test_io_sstable__snappy(void) {
    vg_status st;
    char in[1000];
    for (int i = 0; i < 1000; i++) in[i] = "abcdefgh"[i % 8];
    uint8_t *z, *back;
    size_t zn, bn;
    CHECK_CODE(vg__snappy_compress(in, sizeof in, &z, &zn, &st), VG_OK);
    CHECK(zn < 100);
    CHECK_CODE(vg__snappy_uncompress(z, zn, 1 << 20, &back, &bn, &st), VG_OK);
    CHECK(bn == sizeof in && memcmp(back, in, bn) == 0);
    vg__free(back);
    CHECK_CODE(vg__snappy_uncompress(z, zn, 999, &back, &bn, &st), VG_DATA_LOSS); /* over the limit */
    z[zn - 1] ^= 0xff;
    z[2] = 0xff;
    vg_code c = vg__snappy_uncompress(z, zn, 1 << 20, &back, &bn, &st);
    CHECK_CODE(c, VG_DATA_LOSS);
    if (!c) vg__free(back);
    CHECK_CODE(vg__snappy_uncompress("\xff\xff\xff\xff\xff\xff", 6, 1 << 20, &back, &bn, &st), VG_DATA_LOSS);
    vg__free(z);
}

/* Index block entries of a built table: keys and handles. */
typedef struct idx_ent {
    char key[32];
    uint64_t off, size;
} idx_ent;

static int parse_index(const uint8_t *t, size_t n, idx_ent *out, int max) {
    const uint8_t *f = t + n - 48, *q = f;
    uint64_t h[4];
    for (int i = 0; i < 4; i++) vg__pb_get_varint(&q, f + 40, &h[i]);
    const uint8_t *b = t + h[2], *end = b + h[3];
    uint32_t nrest = vg__get_le32(end - 4);
    end -= 4 + 4 * nrest;
    int k = 0;
    char last[32] = "";
    while (b < end && k < max) {
        uint64_t sh, ns, vl;
        vg__pb_get_varint(&b, end, &sh);
        vg__pb_get_varint(&b, end, &ns);
        vg__pb_get_varint(&b, end, &vl);
        memcpy(out[k].key, last, sh);
        memcpy(out[k].key + sh, b, ns);
        out[k].key[sh + ns] = 0;
        strcpy(last, out[k].key);
        b += ns;
        const uint8_t *v = b;
        vg__pb_get_varint(&v, b + vl, &out[k].off);
        vg__pb_get_varint(&v, b + vl, &out[k].size);
        b += vl;
        k++;
    }
    return k;
}

/* Blocks of two 200 KB entries: separator and successor keys as LevelDB makes them. */
static void test_io_sstable__blocks_and_separators(void) {
    vg_status st;
    const char *keys[] = {"a1", "a2", "c", "d1", "d2", "x"};
    size_t vn = 200 * 1024;
    uint8_t *val = malloc(vn);
    for (size_t i = 0; i < vn; i++) val[i] = (uint8_t)(i * 31 + (i >> 9));
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, &st);
    for (int i = 0; i < 6; i++) {
        val[0] = (uint8_t)i;
        CHECK_CODE(vg__sstable_builder_add(b, keys[i], strlen(keys[i]), val, vn, &st), VG_OK);
    }
    CHECK_CODE(vg__sstable_builder_add(b, "b", 1, val, 1, &st), VG_INVALID_ARGUMENT); /* out of order */
    CHECK_CODE(vg__sstable_builder_add(b, "x", 1, val, 1, &st), VG_INVALID_ARGUMENT); /* duplicate */
    CHECK_CODE(vg__sstable_builder_finish(b, &st), VG_OK);
    size_t n;
    const uint8_t *t = vg__sstable_builder_data(b, &n);
    idx_ent ie[8];
    int k = parse_index(t, n, ie, 8);
    CHECK_EQ_INT(k, 3);
    if (k == 3) {
        CHECK(strcmp(ie[0].key, "b") == 0);
        CHECK(strcmp(ie[1].key, "d1") == 0);
        CHECK(strcmp(ie[2].key, "y") == 0);
        CHECK_EQ_INT(ie[0].off, 0);
        CHECK_EQ_INT(ie[1].off, ie[0].size + 5);
    }
    /* read back */
    uint8_t *copy = vg__malloc(n);
    memcpy(copy, t, n);
    vg__sstable *r = vg__sstable_open_buffer(copy, n, "mem", &st);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(vg__sstable_count(r), 6);
        for (int i = 0; i < 6; i++) {
            const uint8_t *v;
            size_t vl;
            CHECK_CODE(vg__sstable_get(r, keys[i], strlen(keys[i]), &v, &vl, &st), VG_OK);
            CHECK(vl == vn && v[0] == i && memcmp(v + 1, val + 1, vn - 1) == 0);
        }
        const uint8_t *v;
        size_t vl;
        CHECK_CODE(vg__sstable_get(r, "d", 1, &v, &vl, &st), VG_NOT_FOUND);
        CHECK_EQ_INT(vg__sstable_find(r, "zz", 2), -1);
        vg__sstable_free(r);
    }
    vg__sstable_builder_free(b);
    free(val);
}

/* An entry >= 2 * block size first flushes the current block (TF's addition). */
static void test_io_sstable__huge_entry_flush(void) {
    vg_status st;
    size_t big = 2 * VG__SSTABLE_BLOCK_SIZE;
    uint8_t *val = calloc(1, big);
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, &st);
    CHECK_CODE(vg__sstable_builder_add(b, "a", 1, "x", 1, &st), VG_OK);
    CHECK_CODE(vg__sstable_builder_add(b, "b", 1, val, big - 1, &st), VG_OK);
    CHECK_CODE(vg__sstable_builder_add(b, "c", 1, "y", 1, &st), VG_OK);
    CHECK_CODE(vg__sstable_builder_finish(b, &st), VG_OK);
    size_t n;
    const uint8_t *t = vg__sstable_builder_data(b, &n);
    idx_ent ie[8];
    int k = parse_index(t, n, ie, 8);
    CHECK_EQ_INT(k, 3); /* [a] [b] [c] */
    if (k == 3) {
        CHECK(strcmp(ie[0].key, "a") == 0); /* separator("a","b") cannot shorten */
        CHECK(strcmp(ie[1].key, "b") == 0);
        CHECK(strcmp(ie[2].key, "d") == 0);
    }
    CHECK_EQ_INT(reopened_count(t, n), 3);
    vg__sstable_builder_free(b);
    free(val);
}

static void test_io_sstable__empty_and_snappy(void) {
    vg_status st;
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, &st);
    CHECK_CODE(vg__sstable_builder_finish(b, &st), VG_OK);
    size_t n;
    const uint8_t *t = vg__sstable_builder_data(b, &n);
    /* metaindex (8 + 5) + index (8 + 5) + footer */
    CHECK_EQ_INT(n, 13 + 13 + 48);
    CHECK_EQ_INT(vg__get_le32(t + n - 8), 0x8b80fb57u);
    CHECK_EQ_INT(reopened_count(t, n), 0);
    vg__sstable_builder_free(b);

    /* compressible values with snappy on: block type 1, reads back */
    b = vg__sstable_builder_new(NULL, true, &st);
    char key[16], val[200];
    memset(val, 'z', sizeof val);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "key%04d", i);
        CHECK_CODE(vg__sstable_builder_add(b, key, strlen(key), val, sizeof val, &st), VG_OK);
    }
    CHECK_CODE(vg__sstable_builder_finish(b, &st), VG_OK);
    t = vg__sstable_builder_data(b, &n);
    idx_ent ie[4];
    CHECK_EQ_INT(parse_index(t, n, ie, 4), 1);
    CHECK_EQ_INT(t[ie[0].size], 1);
    CHECK(n < 2000);
    uint8_t *copy = vg__malloc(n);
    memcpy(copy, t, n);
    vg__sstable *r = vg__sstable_open_buffer(copy, n, "mem", &st);
    CHECK(r && vg__sstable_count(r) == 100);
    if (r) {
        const uint8_t *k, *v;
        size_t kl, vl;
        vg__sstable_entry(r, 42, &k, &kl, &v, &vl);
        CHECK(kl == 7 && strcmp((const char *)k, "key0042") == 0 && vl == 200 && v[199] == 'z');
    }
    vg__sstable_free(r);
    vg__sstable_builder_free(b);
}

static void test_io_sstable__corruption(void) {
    vg_status st;
    vg__sstable_builder *b = vg__sstable_builder_new(NULL, false, &st);
    vg__sstable_builder_add(b, "k1", 2, "v1", 2, &st);
    vg__sstable_builder_add(b, "k2", 2, "v2", 2, &st);
    vg__sstable_builder_finish(b, &st);
    size_t n;
    const uint8_t *t = vg__sstable_builder_data(b, &n);
    int bad = 0;
    for (size_t i = 0; i < n; i++) { /* every single-byte flip is caught */
        uint8_t *c = vg__malloc(n);
        memcpy(c, t, n);
        c[i] ^= 0x01;
        vg__sstable *r = vg__sstable_open_buffer(c, n, "flip.index", &st);
        if (r) {
            /* only the footer's zero padding may change undetected */
            if (!(i >= n - 48 && i < n - 8)) bad++;
            vg__sstable_free(r);
        } else if (st.code != VG_DATA_LOSS || !strstr(st.msg, "flip.index")) {
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    for (size_t cut = 0; cut < n; cut += 7) { /* truncations */
        uint8_t *c = vg__malloc(cut + 1);
        memcpy(c, t, cut);
        vg__sstable *r = vg__sstable_open_buffer(c, cut, "cut.index", &st);
        CHECK(r == NULL);
        CHECK_EQ_INT(st.code, VG_DATA_LOSS);
        vg__sstable_free(r);
    }
    CHECK(vg__sstable_open("/nonexistent.index", &st) == NULL);
    CHECK_EQ_INT(st.code, VG_NOT_FOUND);
    vg__sstable_builder_free(b);
}

/* FILE-backed builder gives the same bytes as the memory one. */
static void test_io_sstable__file_output(void) {
    vg_status st;
    FILE *f = tmpfile();
    vg__sstable_builder *a = vg__sstable_builder_new(f, false, &st), *m = vg__sstable_builder_new(NULL, false, &st);
    char key[16];
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "t/%03d", i);
        vg__sstable_builder_add(a, key, strlen(key), key, 3, &st);
        vg__sstable_builder_add(m, key, strlen(key), key, 3, &st);
    }
    CHECK_CODE(vg__sstable_builder_finish(a, &st), VG_OK);
    CHECK_CODE(vg__sstable_builder_finish(m, &st), VG_OK);
    size_t n;
    const uint8_t *t = vg__sstable_builder_data(m, &n);
    long fn = ftell(f);
    CHECK_EQ_INT(fn, n);
    uint8_t *buf = malloc(n);
    rewind(f);
    CHECK(fread(buf, 1, n, f) == n && memcmp(buf, t, n) == 0);
    free(buf);
    fclose(f);
    vg__sstable_builder_free(a);
    vg__sstable_builder_free(m);
}

int main(void) {
    RUN_TEST(test_io_sstable__snappy);
    RUN_TEST(test_io_sstable__blocks_and_separators);
    RUN_TEST(test_io_sstable__huge_entry_flush);
    RUN_TEST(test_io_sstable__empty_and_snappy);
    RUN_TEST(test_io_sstable__corruption);
    RUN_TEST(test_io_sstable__file_output);
    TEST_MAIN_END();
}
