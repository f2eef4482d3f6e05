/* test_io_ckpt_state.c - the `checkpoint` text file: TF-written files, exact output,
 * escapes, timestamps, atomic replace, errors. */
#include "io/io.h"
#include "test_util.h"
#include "status_fixture.h"
#include <math.h>
#include <dirent.h>
#include <ftw.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

static char g_dir[64];

static char *format(const vg__ckpt_state *s) {
    vg__pb_buf b;
    vg__pb_init(&b);
    vg_status st;
    CHECK_OK(vg__ckpt_state_format(s, &b, &st), &st);
    vg__pb_put_raw(&b, "", 1);
    return (char *)b.data;
}

static void test_io_ckpt_state__tf_files(void) {
    const char *files[] = {VG_TESTDATA "/checkpoint_state/serving_bad_half_plus_two.checkpoint",
                           VG_TESTDATA "/checkpoint_state/tf_half_plus_two.checkpoint",
                           VG_TESTDATA "/checkpoint_state/tf_half_plus_two_sharded.checkpoint"};
    const char *paths[] = {"/tmp/bad_half_plus_two/00000123/export", "/tmp/saved_model/half_plus_two/saved_model_variables",
                           "/tmp/saved_model/half_plus_two/variables/saved_model_variables-\?\?\?\?\?-of-00001"};
    for (int i = 0; i < 3; i++) {
        vg_status st;
        vg__ckpt_state s;
        CHECK_OK(vg__ckpt_state_read(files[i], &s, &st), &st);
        CHECK(s.model_checkpoint_path && strcmp(s.model_checkpoint_path, paths[i]) == 0);
        CHECK(s.n_all == 1 && strcmp(s.all_paths[0], paths[i]) == 0);
        CHECK(s.n_ts == 0 && s.last_preserved_timestamp == 0);
        /* formatting reproduces the file byte for byte */
        uint8_t *raw;
        size_t n;
        vg__io_read_file(files[i], &raw, &n, NULL);
        char *out = format(&s);
        CHECK(out && strlen(out) == n && memcmp(out, raw, n) == 0);
        vg__free(out);
        vg__free(raw);
        vg__ckpt_state_free(&s);
        CHECK(s.model_checkpoint_path == NULL && s.n_all == 0);
    }
}

static void test_io_ckpt_state__format_exact(void) {
    char *all[] = {"/tmp/train/model.ckpt-1000", "/tmp/train/model.ckpt-2000"};
    vg__ckpt_state s = {.model_checkpoint_path = all[1], .all_paths = all, .n_all = 2};
    char *out = format(&s);
    CHECK(strcmp(out, "model_checkpoint_path: \"/tmp/train/model.ckpt-2000\"\n"
                      "all_model_checkpoint_paths: \"/tmp/train/model.ckpt-1000\"\n"
                      "all_model_checkpoint_paths: \"/tmp/train/model.ckpt-2000\"\n") == 0);
    vg__free(out);

    /* escapes (Python CEscape) and timestamps (Python repr) */
    char *odd[] = {"a\"b\\c'd\ne\tf\x01g\xc3\xa9"};
    double ts[] = {1601611588.861176, 1601611588.0, 1e16, 0.0001, 1.5e-05};
    vg__ckpt_state t = {.model_checkpoint_path = odd[0], .all_paths = odd, .n_all = 1, .timestamps = ts, .n_ts = 5,
                        .last_preserved_timestamp = 1601611500.25};
    out = format(&t);
    const char *want = "model_checkpoint_path: \"a\\\"b\\\\c\\'d\\ne\\tf\\001g\\303\\251\"\n"
                       "all_model_checkpoint_paths: \"a\\\"b\\\\c\\'d\\ne\\tf\\001g\\303\\251\"\n"
                       "all_model_checkpoint_timestamps: 1601611588.861176\n"
                       "all_model_checkpoint_timestamps: 1601611588.0\n"
                       "all_model_checkpoint_timestamps: 1e+16\n"
                       "all_model_checkpoint_timestamps: 0.0001\n"
                       "all_model_checkpoint_timestamps: 1.5e-05\n"
                       "last_preserved_timestamp: 1601611500.25\n";
    CHECK(strcmp(out, want) == 0);
    if (strcmp(out, want)) fprintf(stderr, "%s", out);
    /* and it parses back to the same values */
    vg__ckpt_state u;
    vg_status st;
    CHECK_OK(vg__ckpt_state_parse(out, strlen(out), &u, &st), &st);
    CHECK(u.model_checkpoint_path && strcmp(u.model_checkpoint_path, odd[0]) == 0);
    CHECK(u.n_ts == 5 && u.timestamps[0] == ts[0] && u.timestamps[4] == ts[4]);
    CHECK(u.last_preserved_timestamp == 1601611500.25);
    vg__ckpt_state_free(&u);
    vg__free(out);
}

static void test_io_ckpt_state__parse_variants(void) {
    vg_status st;
    vg__ckpt_state s;
    const char *txt = "# comment\n all_model_checkpoint_paths : 'x-1'  all_model_checkpoint_paths: \"x-\" \"2\"\n"
                      "model_checkpoint_path:\"x\\0622\";\nall_model_checkpoint_timestamps: [1.5, 2e3]\n"
                      "last_preserved_timestamp: 7\n";
    CHECK_OK(vg__ckpt_state_parse(txt, strlen(txt), &s, &st), &st);
    CHECK(s.model_checkpoint_path && strcmp(s.model_checkpoint_path, "x22") == 0);
    CHECK(s.n_all == 2 && strcmp(s.all_paths[0], "x-1") == 0 && strcmp(s.all_paths[1], "x-2") == 0);
    CHECK(s.n_ts == 2 && s.timestamps[1] == 2000.0 && s.last_preserved_timestamp == 7.0);
    vg__ckpt_state_free(&s);

    const char *no_model[] = {"", "all_model_checkpoint_paths: \"a\"\n"}; /* TF's ValueError */
    for (size_t i = 0; i < sizeof no_model / sizeof no_model[0]; i++) {
        CHECK_CODE(vg__ckpt_state_parse(no_model[i], strlen(no_model[i]), &s, &st), VG_INVALID_ARGUMENT);
        CHECK(s.model_checkpoint_path == NULL && s.all_paths == NULL);
    }
    const char *bad[] = {"model_checkpoint_path \"a\"\n",
                         "model_checkpoint_path: \"a\n", "bogus_field: 1\n", "model_checkpoint_path: \"\\q\"\n",
                         "model_checkpoint_path: \"a\"\nlast_preserved_timestamp: x\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_CODE(vg__ckpt_state_parse(bad[i], strlen(bad[i]), &s, &st), VG_DATA_LOSS);
        CHECK(s.model_checkpoint_path == NULL && s.all_paths == NULL);
    }
    EXPECT_CODE_MSG(vg__ckpt_state_read("/nonexistent/checkpoint", &s, &st), &st, VG_NOT_FOUND,
                    "/nonexistent/checkpoint");
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void test_io_ckpt_state__atomic_write(void) {
    vg_status st;
    char path[256];
    snprintf(path, sizeof path, "%s/checkpoint", g_dir);
    char *all[] = {"model.ckpt-1", "model.ckpt-2"};
    vg__ckpt_state s = {.model_checkpoint_path = all[0], .all_paths = all, .n_all = 1};
    CHECK_OK(vg__ckpt_state_write(path, &s, &st), &st);
    s.model_checkpoint_path = all[1];
    s.n_all = 2;
    CHECK_OK(vg__ckpt_state_write(path, &s, &st), &st); /* replaces */
    CHECK_EQ_INT(count_entries(g_dir), 1);             /* no temp files */
    vg__ckpt_state r;
    CHECK_OK(vg__ckpt_state_read(path, &r, &st), &st);
    CHECK(r.n_all == 2 && strcmp(r.model_checkpoint_path, "model.ckpt-2") == 0);
    vg__ckpt_state_free(&r);
    CHECK_CODE(vg__ckpt_state_write("/nonexistent/dir/checkpoint", &s, &st), VG_NOT_FOUND);
}

/* Found by fuzz_ckpt_state: last_preserved_timestamp -0.0 was left out of the formatted
 * text (-0.0 == 0), so parse -> format -> parse turned it into +0.0. Proto text keeps a
 * double whose bits are not the default's. */
static void test_io_ckpt_state__negative_zero_round_trip(void) {
    const char *text = "model_checkpoint_path: \"m-1\"\nlast_preserved_timestamp: -0\n";
    vg_status st;
    vg__ckpt_state a, b;
    CHECK_OK(vg__ckpt_state_parse(text, strlen(text), &a, &st), &st);
    CHECK(a.last_preserved_timestamp == 0 && signbit(a.last_preserved_timestamp));
    char *out = format(&a);
    CHECK(out && strstr(out, "last_preserved_timestamp: -0.0\n") != NULL);
    CHECK_OK(vg__ckpt_state_parse(out, strlen(out), &b, &st), &st);
    CHECK(signbit(b.last_preserved_timestamp));
    vg__free(out);
    vg__ckpt_state_free(&a);
    vg__ckpt_state_free(&b);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "ckst")[0]) return 1;
    RUN_TEST(test_io_ckpt_state__tf_files);
    RUN_TEST(test_io_ckpt_state__format_exact);
    RUN_TEST(test_io_ckpt_state__parse_variants);
    RUN_TEST(test_io_ckpt_state__atomic_write);
    RUN_TEST(test_io_ckpt_state__negative_zero_round_trip);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
