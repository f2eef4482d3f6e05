/* test_cli_tools.c - `vigil ckpt`, `vigil events` and `vigil plot` on files written by
 * TensorFlow (tests/data/tf, values from its README) and by vigil's FileWriter:
 * tensor listings and values (Snappy index, TF2 string tensor), scalar TSV, torn and
 * corrupt event files (reported, never a crash, exit 0), SVG output, usage errors.
 * Skips (passes) when the vigil binary was not built. */
#include "test_util.h"
#include "train_fixture.h"
#include "vigil/vigil.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif
#ifndef VG_TESTDATA
#define VG_TESTDATA "tests/data/tf"
#endif

#include "cli_test_util.h"

/* stdout and stderr of the last run go to tmpdir/out and tmpdir/err */
static int run_tool(const char *const *args) { return run_vigil(args, "out", "err"); }

static char out_buf[1 << 20], err_buf[1 << 16];

static const char *out_text(void) { return read_into("out", out_buf, sizeof out_buf); }
static const char *err_text(void) { return read_into("err", err_buf, sizeof err_buf); }

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* The value printed after "# <name> ..." by `vigil ckpt --tensor`. */
static double tensor_value(const char *ckpt, const char *name) {
    const char *args[] = {"ckpt", ckpt, "--tensor", name, NULL};
    CHECK_EQ_INT(run_tool(args), 0);
    const char *s = out_text(), *nl = strchr(s, '\n');
    if (!nl) return NAN;
    nl++;
    while (*nl == '[' || *nl == ' ') nl++;
    return strtod(nl, NULL);
}

static void test_cli_ckpt__tf_written(void) {
    /* TF 1.2 regression model: b = [0], w = [-0.8578622341156006] */
    const char *reg = VG_TESTDATA "/rust_regression_model_tf1.2/variables/variables";
    const char *a1[] = {"ckpt", reg, NULL};
    CHECK_EQ_INT(run_tool(a1), 0);
    const char *s = out_text();
    CHECK_STR_CONTAINS(s, "name");
    CHECK(strstr(s, "\nb ") && strstr(s, "\nw "));
    CHECK_STR_CONTAINS(s, "float");
    CHECK_STR_CONTAINS(s, "[1]");
    CHECK_STR_CONTAINS(s, "# 2 tensors, 8 bytes");
    CHECK_NEAR(tensor_value(reg, "w"), -0.8578622341156006, 1e-7);
    CHECK_NEAR(tensor_value(reg, "b"), 0.0, 1e-12);
    /* a SavedModel directory resolves to variables/variables; Snappy-compressed index */
    const char *snappy = VG_TESTDATA "/serving_half_plus_two_cpu_tf1.14";
    const char *a2[] = {"ckpt", snappy, "--stats", NULL};
    CHECK_EQ_INT(run_tool(a2), 0);
    s = out_text();
    CHECK(strstr(s, "\na ") && strstr(s, "\na2 ") && strstr(s, "\nb ") && strstr(s, "\nc ") && strstr(s, "\nc2 "));
    CHECK_STR_CONTAINS(s, "# 5 tensors, 20 bytes");
    CHECK_NEAR(tensor_value(snappy, "a"), 0.5, 1e-9);
    CHECK_NEAR(tensor_value(snappy, "b"), 2.0, 1e-9);
    CHECK_NEAR(tensor_value(snappy, "c"), 3.0, 1e-9);
    /* TF 2.14 object-based checkpoint with a 613-byte string tensor */
    const char *tf2 = VG_TESTDATA "/serving_half_plus_two_tf2_cpu/variables/variables.index";
    const char *a3[] = {"ckpt", tf2, NULL};
    CHECK_EQ_INT(run_tool(a3), 0);
    s = out_text();
    CHECK_STR_CONTAINS(s, "_CHECKPOINTABLE_OBJECT_GRAPH");
    CHECK_STR_CONTAINS(s, "string");
    CHECK_STR_CONTAINS(s, "613");
    CHECK_STR_CONTAINS(s, "a/.ATTRIBUTES/VARIABLE_VALUE");
    CHECK_NEAR(tensor_value(tf2, "b/.ATTRIBUTES/VARIABLE_VALUE"), 2.0, 1e-9);
    const char *a4[] = {"ckpt", tf2, "--tensor", "_CHECKPOINTABLE_OBJECT_GRAPH", NULL};
    CHECK_EQ_INT(run_tool(a4), 0);
    CHECK_STR_CONTAINS(out_text(), "\"\\n");
    /* index without its data: listing works, values fail cleanly */
    const char *minigo = VG_TESTDATA "/index_only/minigo";
    const char *a5[] = {"ckpt", minigo, NULL};
    CHECK_EQ_INT(run_tool(a5), 0);
    CHECK_STR_CONTAINS(out_text(), "# 333 tensors, 182702872 bytes");
    const char *a6[] = {"ckpt", minigo, "--tensor", "global_step", NULL};
    CHECK_EQ_INT(run_tool(a6), 1);
    CHECK_STR_CONTAINS(err_text(), "vigil: NOT_FOUND: ");
}

static void test_cli_ckpt__errors(void) {
    const char *a1[] = {"ckpt", "/nonexistent/ckpt", NULL};
    CHECK_EQ_INT(run_tool(a1), 1);
    CHECK_STR_CONTAINS(err_text(), "/nonexistent/ckpt");
    const char *a2[] = {"ckpt", VG_TESTDATA "/serving_counter_tf1.5", "--tensor", "nope", NULL};
    CHECK_EQ_INT(run_tool(a2), 1);
    CHECK_STR_CONTAINS(err_text(), "counter"); /* lists what is there */
    const char *a3[] = {"ckpt", tmpdir, NULL}; /* a directory without a checkpoint */
    CHECK_EQ_INT(run_tool(a3), 1);
    CHECK_STR_CONTAINS(err_text(), "no checkpoint");
    const char *a4[] = {"ckpt", NULL};
    CHECK_EQ_INT(run_tool(a4), 2);
    const char *a5[] = {"ckpt", "x", "--bogus", NULL};
    CHECK_EQ_INT(run_tool(a5), 2);
}

static void test_cli_events__tf_written(void) {
    /* 25 records: file_version + 24 scalar summaries without a step field */
    const char *f = VG_TESTDATA "/events/tb_end_to_end_a.tfevents";
    const char *a1[] = {"events", f, NULL};
    CHECK_EQ_INT(run_tool(a1), 0);
    const char *s = out_text();
    CHECK(!strncmp(s, "step\twall_time\ttag\tvalue\n", 25));
    CHECK_EQ_INT(count_lines(s), 25);
    CHECK_STR_CONTAINS(s, "\n0\t1551753597.");
    CHECK_STR_CONTAINS(s, "\ttrain_begin\t0\n");
    CHECK_STR_CONTAINS(s, "\tpredict_end\t0\n");
    CHECK_EQ_INT(err_text()[0], 0);
    const char *a2[] = {"events", f, "--tags", "train_begin,train_end", NULL};
    CHECK_EQ_INT(run_tool(a2), 0);
    CHECK_EQ_INT(count_lines(out_text()), 3);
    /* a directory: the two .tfevents files (24 scalars each); the subdirectories'
     * graph-only files are not in it */
    const char *a3[] = {"events", VG_TESTDATA "/events", NULL};
    CHECK_EQ_INT(run_tool(a3), 0);
    CHECK_EQ_INT(count_lines(out_text()), 49);
    CHECK_STR_CONTAINS(out_text(), "\tprofile/");
    /* graph and meta-graph events only: header, no scalars */
    const char *a4[] = {"events", VG_TESTDATA "/events/yehoon_ex", NULL};
    CHECK_EQ_INT(run_tool(a4), 0);
    CHECK_EQ_INT(count_lines(out_text()), 1);
}

static void copy_file(const char *from, const char *to, long keep, long flip) {
    FILE *f = fopen(from, "rb");
    static unsigned char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    if (keep >= 0 && (size_t)keep < n) n = (size_t)keep;
    if (flip >= 0 && (size_t)flip < n) buf[flip] ^= 0x5a;
    FILE *g = fopen(to, "wb");
    if (g) {
        fwrite(buf, 1, n, g);
        fclose(g);
    }
}

static void test_cli_events__damaged(void) {
    const char *f = VG_TESTDATA "/events/tb_end_to_end_a.tfevents";
    char p[512];
    /* torn: cut inside the 24th record */
    cli_tmp_path(p, sizeof p, "torn.tfevents");
    copy_file(f, p, 1000, -1);
    const char *a1[] = {"events", p, NULL};
    CHECK_EQ_INT(run_tool(a1), 0);
    int lines = count_lines(out_text());
    CHECK(lines > 10 && lines < 25);
    CHECK_STR_CONTAINS(err_text(), "torn record at offset");
    CHECK_STR_CONTAINS(err_text(), "torn.tfevents");
    /* cut in every possible place: never a crash, always exit 0 */
    for (long keep = 0; keep <= 1242; keep += 13) {
        copy_file(f, p, keep, -1);
        int rc = run_tool(a1);
        if (rc != 0) fprintf(stderr, "cut at %ld: exit %d\n", keep, rc);
        CHECK_EQ_INT(rc, 0);
    }
    /* a flipped byte in the data of one record: that record skipped, the rest read */
    cli_tmp_path(p, sizeof p, "corrupt.tfevents");
    copy_file(f, p, -1, 600);
    const char *a2[] = {"events", p, NULL};
    CHECK_EQ_INT(run_tool(a2), 0);
    CHECK_EQ_INT(count_lines(out_text()), 24);
    CHECK_STR_CONTAINS(err_text(), "corrupted record at offset");
    /* flipped bytes everywhere in turn */
    for (long flip = 0; flip < 1242; flip += 11) {
        copy_file(f, p, -1, flip);
        int rc = run_tool(a2);
        if (rc != 0) fprintf(stderr, "flip at %ld: exit %d\n", flip, rc);
        CHECK_EQ_INT(rc, 0);
    }
    const char *a3[] = {"events", "/nonexistent/events", NULL};
    CHECK_EQ_INT(run_tool(a3), 1);
    CHECK_STR_CONTAINS(err_text(), "/nonexistent/events");
}

/* An event dir written by vigil's FileWriter: loss/accuracy over 50 steps. */
static void write_events(const char *dir) {
    vg_status st;
    vg_file_writer *w = vg_file_writer_new(dir, NULL, &st);
    CHECK(w != NULL);
    if (!w) return;
    for (int s = 1; s <= 50; s++) {
        CHECK_OK(vg_file_writer_add_scalar(w, "loss", 2.3 * exp(-s / 15.0), s, &st), &st);
        CHECK_OK(vg_file_writer_add_scalar(w, "accuracy", 1 - 0.9 * exp(-s / 10.0), s, &st), &st);
        CHECK_OK(vg_file_writer_add_scalar(w, "a<b&c", s, s, &st), &st);
    }
    vg_file_writer_free(w);
}

static void test_cli_plot__svg(void) {
    char dir[300], svg[300];
    write_events(cli_tmp_path(dir, sizeof dir, "ev"));
    cli_tmp_path(svg, sizeof svg, "curves.svg");
    const char *a1[] = {"plot", dir, "-o", svg, NULL};
    CHECK_EQ_INT(run_tool(a1), 0);
    char buf[1 << 16];
    FILE *f = fopen(svg, "r");
    CHECK(f != NULL);
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    CHECK(!strncmp(buf, "<?xml", 5));
    CHECK_STR_CONTAINS(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
    CHECK_STR_CONTAINS(buf, "</svg>\n");
    CHECK_STR_CONTAINS(buf, ">loss</text>");
    CHECK_STR_CONTAINS(buf, ">accuracy</text>");
    CHECK_STR_CONTAINS(buf, ">step</text>");
    CHECK_STR_CONTAINS(buf, "<polyline");
    CHECK(strstr(buf, "a&lt;b") == NULL); /* not a default tag */
    /* balanced tags: every <text ...> closed */
    int open = 0, close = 0;
    for (const char *p = buf; (p = strstr(p, "<text")); p++) open++;
    for (const char *p = buf; (p = strstr(p, "</text>")); p++) close++;
    CHECK_EQ_INT(open, close);
    CHECK(open > 10); /* tick labels */
    /* --tags, with XML escaping */
    const char *a2[] = {"plot", dir, "-o", svg, "--tags", "a<b&c,loss", NULL};
    CHECK_EQ_INT(run_tool(a2), 0);
    f = fopen(svg, "r");
    n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    CHECK_STR_CONTAINS(buf, ">a&lt;b&amp;c</text>");
    CHECK(strstr(buf, "a<b") == NULL);
    /* TF's files: every scalar at step 0 and value 0 (degenerate ranges) */
    const char *a3[] = {"plot", VG_TESTDATA "/events/tb_end_to_end_b.tfevents", "-o", svg, NULL};
    CHECK_EQ_INT(run_tool(a3), 0);
    /* no scalars at all / no such tag: error */
    const char *a4[] = {"plot", VG_TESTDATA "/events/yehoon_ex", "-o", svg, NULL};
    CHECK_EQ_INT(run_tool(a4), 1);
    const char *a5[] = {"plot", dir, "-o", svg, "--tags", "nope", NULL};
    CHECK_EQ_INT(run_tool(a5), 1);
    const char *a6[] = {"plot", NULL};
    CHECK_EQ_INT(run_tool(a6), 2);
}

static void test_cli__usage(void) {
    const char *a1[] = {"--help", NULL};
    CHECK_EQ_INT(run_tool(a1), 0);
    CHECK_STR_CONTAINS(out_text(), "train");
    const char *a2[] = {"frobnicate", NULL};
    CHECK_EQ_INT(run_tool(a2), 2);
    const char *cmds[] = {"train", "ckpt", "events", "plot"};
    for (int i = 0; i < 4; i++) {
        const char *a[] = {cmds[i], "--help", NULL};
        CHECK_EQ_INT(run_tool(a), 0);
        CHECK_STR_CONTAINS(out_text(), "usage: vigil ");
    }
}

/* A float16 variable (DT_HALF): listed as half, its value printed as a float. */
static void test_cli_ckpt__half(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t dims[1] = {3};
    vg_variable h = vg_get_variable(g, "h16", VG_HALF, dims, 1, vg_init_constant(0.1), VG_VAR_TRAINABLE);
    vg_op *ini = vg_global_variables_initializer(g);
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(h.var && sv && s);
    char prefix[300], path[400];
    cli_tmp_path(prefix, sizeof prefix, "half.ckpt");
    if (h.var && sv && s) {
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &ini, 1, NULL, &st), &st);
        CHECK_OK(vg_saver_save(sv, s, prefix, -1, path, sizeof path, &st), &st);
        const char *a1[] = {"ckpt", path, NULL};
        CHECK_EQ_INT(run_tool(a1), 0);
        CHECK_STR_CONTAINS(out_text(), "h16");
        CHECK_STR_CONTAINS(out_text(), "half");
        CHECK_NEAR(tensor_value(path, "h16"), 0.0999755859375, 1e-5); /* 0.1 rounded to binary16, printed %.5g */
    }
    free_session_saver_graph(s, sv, g);
}

static void teardown(void) {
    vg_file_writer_cache_clear();
}

static const cli_case cases[] = {
    CLI_CASE(test_cli__usage),
    CLI_CASE(test_cli_ckpt__tf_written),
    CLI_CASE(test_cli_ckpt__errors),
    CLI_CASE(test_cli_ckpt__half),
    CLI_CASE(test_cli_events__tf_written),
    CLI_CASE(test_cli_events__damaged),
    CLI_CASE(test_cli_plot__svg),
};
static const cli_suite suite = {.tag = "cli_tools", .teardown = teardown};
CLI_TEST_MAIN(suite, cases)
