/* test_example_fast_decode.c - vg__example_decode's fast path (the C++ serializer's
 * layout) against the general protobuf decoder: random Examples built with
 * vg_example_* (bytes, float and int64 lists, empty lists, duplicated keys) and the
 * same bytes mutated (flipped bytes, truncations, inserted bytes, tags of other
 * fields or wire types) must decode to the same features, or fail with the same code
 * and message. */
#include "io/example_io.h"
#include "test_util.h"
#include "vigil/vigil.h"

static uint64_t g_x = 88172645463325252ull;
static uint32_t rnd(void) {
    g_x ^= g_x << 13;
    g_x ^= g_x >> 7;
    g_x ^= g_x << 17;
    return (uint32_t)(g_x >> 11);
}

/* Decodes buf both ways; counts a disagreement as a failure. */
static int compare(const uint8_t *buf, size_t n) {
    vg__features a = {0}, b = {0};
    vg_status sa, sb;
    vg_status_clear(&sa);
    vg_status_clear(&sb);
    vg_code ra = vg__example_decode(buf, n, &a, &sa), rb = vg__example_decode_general(buf, n, &b, &sb);
    int bad = 0;
    if (ra != rb || (ra != VG_OK && strcmp(sa.msg, sb.msg))) bad = 1;
    if (ra == VG_OK && rb == VG_OK) {
        if (a.n != b.n) bad = 1;
        for (size_t i = 0; !bad && i < a.n; i++) {
            const vg__feature *x = &a.v[i], *y = &b.v[i];
            if (x->klen != y->klen || memcmp(x->key, y->key, x->klen) || x->kind != y->kind ||
                x->list_len != y->list_len || (x->list_len && x->list != y->list))
                bad = 1;
        }
    }
    vg__features_free(&a);
    vg__features_free(&b);
    return bad;
}

static void test_random_examples(void) {
    vg_status st;
    int bad = 0, cases = 0, ok_fast_layout = 0;
    uint8_t mut[4096];
    for (int it = 0; it < 400; it++) {
        vg_example *ex = vg_example_new();
        int nf = (int)(rnd() % 6);
        for (int f = 0; f < nf; f++) {
            char key[16];
            snprintf(key, sizeof key, "k%u", rnd() % 4); /* duplicated keys happen */
            int kind = (int)(rnd() % 3), cnt = (int)(rnd() % 5);
            if (kind == 0) {
                const char *vals[4] = {"", "a", "hello", "\x00\xff\x80"};
                size_t lens[4] = {0, 1, 5, 3};
                vg_example_add_bytes(ex, key, vals, lens, (size_t)(cnt % 5 > 4 ? 4 : cnt % 5), &st);
            } else if (kind == 1) {
                float v[4] = {1.5f, -2.0f, 0.0f, 1e30f};
                vg_example_add_float(ex, key, v, (size_t)(cnt % 5 > 4 ? 4 : cnt % 5), &st);
            } else {
                int64_t v[4] = {0, -1, 300, INT64_MAX};
                vg_example_add_int64(ex, key, v, (size_t)(cnt % 5 > 4 ? 4 : cnt % 5), &st);
            }
        }
        size_t len;
        const uint8_t *b = vg_example_serialize(ex, &len, &st);
        if (b && len <= sizeof mut - 8) {
            cases++;
            bad += compare(b, len);
            vg__features fs = {0};
            vg_status s2;
            if (vg__example_decode(b, len, &fs, &s2) == VG_OK) ok_fast_layout++;
            vg__features_free(&fs);
            for (int m = 0; m < 20; m++) { /* mutations */
                size_t n = len;
                memcpy(mut, b, len);
                int what = (int)(rnd() % 4);
                if (what == 0 && n) mut[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8));
                else if (what == 1 && n) n = rnd() % n;
                else if (what == 2) { /* insert a byte */
                    size_t at = n ? rnd() % n : 0;
                    memmove(mut + at + 1, mut + at, n - at);
                    mut[at] = (uint8_t)rnd();
                    n++;
                } else if (n) { /* a tag of another field / wire type where a tag may be */
                    static const uint8_t tags[] = {0x08, 0x10, 0x0b, 0x0c, 0x22, 0x2a, 0x0d, 0x09, 0x1a, 0x12};
                    mut[rnd() % n] = tags[rnd() % sizeof tags];
                }
                bad += compare(mut, n);
                cases++;
            }
        }
        vg_example_free(ex);
    }
    CHECK(cases > 2000);
    CHECK(ok_fast_layout > 300);
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "%d of %d decodes disagree\n", bad, cases);
}

/* Hand-made records: non-minimal varints, a 6-byte length, an empty record, a key
 * without value and a value without key, unknown fields. */
static void test_edge_records(void) {
    static const struct {
        const char *b;
        size_t n;
    } recs[] = {
        {"", 0},
        {"\x0a\x00", 2},
        {"\x0a\x80\x00", 3},                                 /* non-minimal length 0 */
        {"\x0a\x05\x0a\x03\x0a\x01k", 7},                    /* key only */
        {"\x0a\x06\x0a\x04\x12\x02\x1a\x00", 8},             /* value only: int64 list, empty */
        {"\x0a\x80\x80\x80\x80\x80\x00", 7},                 /* 6-byte length */
        {"\x10\x01\x0a\x00", 4},                             /* an unknown varint field first */
        {"\x0a\x04\x0a\x02\x22\x00", 6},                     /* an unknown field in an entry */
        {"\x0a\x08\x0a\x06\x12\x04\x0a\x00\x1a\x00", 10},    /* two oneof members: the last wins */
        {"\x0a\x03\x0a\x01", 4},                             /* truncated */
    };
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) CHECK(compare((const uint8_t *)recs[i].b, recs[i].n) == 0);
}

int main(void) {
    RUN_TEST(test_random_examples);
    RUN_TEST(test_edge_records);
    TEST_MAIN_END();
}
