/* test_cli_untrusted.c - issue 29 items 5, 6 and 8 from crafted files the test writes:
 * a SavedModel whose main op is a SaveV2 (refused by `vigil run` and by the loader's
 * refuse_file_writes, PERMISSION_DENIED naming the op; run with --allow-file-writes and
 * by the plain loader it writes its file), a SavedModel whose while_loop never exits
 * (`vigil run --timeout 1`: DEADLINE_EXCEEDED, exit 1, well before the test's own
 * limit), string and uint8 outputs printed (escaped, as numbers), an event file whose
 * tag holds a tab, a newline and ESC and a checkpoint with such a tensor name (escaped
 * in `vigil events` and `vigil ckpt`: no forged rows, no raw control bytes), and event
 * files with steps near 2^63 and values near FLT_MAX plotted without NaN or inf
 * coordinates; a TFRecord whose 71st record lacks its label, given to `vigil train
 * --input tfdata|queue` (plain and GZIP): the error names the file, record 70 and its
 * byte offset. Skips (passes) when the vigil binary was not built. */
#include "test_util.h"
#include "train_fixture.h"
#include "status_fixture.h"
#include "vigil/vigil.h"
#include <float.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif

#include "cli_test_util.h"

static bool exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* No byte of s is a control character other than newline (ESC, BEL, tab, CR, DEL). */
static bool no_raw_controls(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f) return false;
    return true;
}

/* ---- item 5: a model whose main op writes a checkpoint --------------------------- */

/* dir: y = 2 x, main op a SaveV2 of a constant to prefix `target`. */
static void write_saving_model(const char *dir, const char *target) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_output y = vg_mul(g, x, vg_const_f32(g, 2.0f, NULL), "y");
    vg_op_builder *b = vg_op_builder_new(g, "SaveV2", "planted_save");
    vg_op_builder_add_input(b, vg_const_string(g, target, "prefix"));
    const char *names[1] = {"planted"}, *slices[1] = {""};
    vg_op_builder_add_input(b, vg_const_array(g, VG_STRING, (const int64_t[]){1}, 1, names, "tensor_names"));
    vg_op_builder_add_input(b, vg_const_array(g, VG_STRING, (const int64_t[]){1}, 1, slices, "shape_and_slices"));
    vg_op_builder_add_input(b, vg_const_f32(g, 42.0f, "payload"));
    vg_op_builder_set_attr_type_list(b, "dtypes", (const vg_dtype[]){VG_FLOAT}, 1);
    vg_op *save = vg_op_builder_finish(b);
    CHECK(save != NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_signature_tensor in = {"x", x}, out = {"y", y};
    vg_signature_def sig = {"serving_default", NULL, &in, 1, &out, 1};
    CHECK_OK(vg_saved_model_save(g, s, NULL, dir, (const char *[]){"serve"}, 1, &sig, 1, save, &st), &st);
    free_session_graph(s, g);
}

static void test_run_refuses_file_writes(void) {
    char dir[400], target[400], index[420];
    cli_tmp_path(dir, sizeof dir, "saving_model");
    cli_tmp_path(target, sizeof target, "outside/planted");
    snprintf(index, sizeof index, "%s.index", target);
    write_saving_model(dir, target);
    /* the CLI refuses by default, before anything runs */
    const char *a1[] = {"run", dir, "--input", "x=3", NULL};
    CHECK_EQ_INT(run_vigil(a1, "out", "err"), 1);
    CHECK_STR_CONTAINS(slurp("err"), "PERMISSION_DENIED");
    CHECK_STR_CONTAINS(slurp("err"), "'planted_save' (SaveV2)");
    CHECK_STR_CONTAINS(slurp("err"), "--allow-file-writes");
    CHECK(!exists(index));
    /* the loader option: the same refusal, with its code */
    vg_status st;
    vg_saved_model *m = (vg_saved_model *)1;
    vg_saved_model_load_options lo = {0};
    lo.refuse_file_writes = true;
    CHECK_EQ_INT(vg_saved_model_load_ex(dir, (const char *[]){"serve"}, 1, &lo, &m, &st), VG_PERMISSION_DENIED);
    CHECK(m == NULL);
    CHECK_STR_CONTAINS(st.msg, "planted_save");
    CHECK(!exists(index));
    CHECK_EQ_INT(vg_saved_model_load_ex(dir, (const char *[]){"serve"}, 1, &lo, NULL, &st), VG_INVALID_ARGUMENT);
    /* lifted: the main op runs (TF's behaviour) and writes the checkpoint */
    const char *a2[] = {"run", dir, "--input", "x=3", "--allow-file-writes", NULL};
    CHECK_EQ_INT(run_vigil(a2, "out", "err"), 0);
    CHECK_STR_CONTAINS(slurp("out"), "y float []: 6");
    CHECK(exists(index));
    unlink(index);
    /* the plain loader keeps TF's behaviour */
    CHECK_OK(vg_saved_model_load(dir, (const char *[]){"serve"}, 1, NULL, &m, &st), &st);
    vg_saved_model_free(m);
    CHECK(exists(index));
}

/* ---- item 6 and 8: a loop that never ends, string and uint8 outputs --------------- */

static vg_code loop_cond(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {
    (void)n, (void)u;
    *p = vg_less(g, v[0], vg_const_i32(g, 10, NULL), NULL);
    return VG_OK;
}

static vg_code loop_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n, (void)u;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 0, NULL), NULL); /* never moves towards 10 */
    return VG_OK;
}

/* dir: n -> while (n < 10) n += 0 (ends only when n >= 10 is fed), plus a string and
 * a uint8 output. */
static void write_loop_model(const char *dir) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output n = vg_placeholder(g, VG_INT32, NULL, 0, "n"), out;
    CHECK_OK(vg_while_loop(g, loop_cond, loop_body, NULL, &n, 1, NULL, 10, vg_out(NULL, 0), "while", &out, &st), &st);
    vg_output s = vg_const_string(g, "a\tb\n\x1b[31mred\\", "s");
    const uint8_t bytes[3] = {0, 7, 255};
    vg_output u = vg_const_array(g, VG_UINT8, (const int64_t[]){3}, 1, bytes, "u");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *sess = vg_session_new(g, NULL, &st);
    CHECK(sess != NULL);
    vg_signature_tensor in = {"n", n}, outs[3] = {{"out", out}, {"s", s}, {"u\x1b[2J", u}};
    vg_signature_def sig = {"serving_default", NULL, &in, 1, outs, 3};
    CHECK_OK(vg_saved_model_save(g, sess, NULL, dir, (const char *[]){"serve"}, 1, &sig, 1, NULL, &st), &st);
    free_session_graph(sess, g);
}

static void test_run_timeout_and_outputs(void) {
    char dir[400];
    cli_tmp_path(dir, sizeof dir, "loop_model");
    write_loop_model(dir);
    /* the loop ends: every output printed, the string escaped, uint8 as numbers */
    const char *a1[] = {"run", dir, "--input", "n=12", "--timeout", "30", NULL};
    CHECK_EQ_INT(run_vigil(a1, "out", "err"), 0);
    const char *o = slurp("out");
    CHECK_STR_CONTAINS(o, "out int32 []: 12\n");
    CHECK_STR_CONTAINS(o, "s string []: \"a\\tb\\n\\x1b[31mred\\\\\"\n");
    CHECK_STR_CONTAINS(o, "u\\x1b[2J uint8 [3]: 0 7 255\n"); /* the key, from the model, escaped too */
    CHECK(no_raw_controls(o));
    CHECK_EQ_INT(count_lines(o), 3);
    /* vigil graph lists the model's keys escaped too; library messages quoting a name
     * lose their control bytes */
    const char *g1[] = {"graph", dir, NULL};
    CHECK_EQ_INT(run_vigil(g1, "out", "err"), 0);
    CHECK_STR_CONTAINS(slurp("out"), "    output u\\x1b[2J: u:0 (uint8 [3])\n");
    CHECK(no_raw_controls(slurp("out")));
    const char *g2[] = {"run", dir, "--input", "n=12", "--output", "zz\x1b[2J", NULL};
    CHECK_EQ_INT(run_vigil(g2, "out", "err"), 1);
    CHECK_STR_CONTAINS(slurp("err"), "'zz\\x1b[2J'");
    CHECK(strchr(slurp("err"), '\x1b') == NULL);
    /* the loop never ends: --timeout 1 stops it */
    const char *a2[] = {"run", dir, "--input", "n=0", "--timeout", "1", NULL};
    pid_t pid = spawn_vigil(a2, "out", "err");
    CHECK_EQ_INT(wait_vigil(pid, 60), 1);
    CHECK_STR_CONTAINS(slurp("err"), "DEADLINE_EXCEEDED");
    CHECK_STR_CONTAINS(slurp("err"), "--timeout 1 s");
    /* bad values are usage errors */
    const char *a3[] = {"run", dir, "--input", "n=0", "--timeout", "0", NULL};
    CHECK_EQ_INT(run_vigil(a3, "out", "err"), 2);
    const char *a4[] = {"run", dir, "--input", "n=0", "--timeout", "soon", NULL};
    CHECK_EQ_INT(run_vigil(a4, "out", "err"), 2);
    /* the library: the same bound through vg_saved_model_run_ex */
    vg_status st;
    vg_saved_model *m = NULL;
    CHECK_OK(vg_saved_model_load(dir, (const char *[]){"serve"}, 1, NULL, &m, &st), &st);
    if (m) {
        vg_run_options ro = {0};
        ro.timeout_in_ms = 300;
        vg_tensor *n = vg_tensor_new_scalar_i32(0, &st), *out = NULL;
        CHECK_EQ_INT(vg_saved_model_run_ex(m, &ro, "serving_default", (const char *[]){"n"}, &n, 1,
                                           (const char *[]){"out"}, &out, 1, &st),
                     VG_DEADLINE_EXCEEDED);
        CHECK(out == NULL);
        vg_tensor_free(n);
        vg_saved_model_free(m);
    }
}

/* ---- item 8: names with tabs, newlines and escape sequences ---------------------- */

#define EVIL "evil\ttag\nforged\t1\t2\x1b[2J\x7f"
#define EVIL_ESCAPED "evil\\ttag\\nforged\\t1\\t2\\x1b[2J\\x7f"

/* A file writer on the directory tmpdir/sub (its path into dir, len bytes); NULL (a
 * failed check) when it cannot be made. */
static vg_file_writer *writer_in(const char *sub, char *dir, size_t len) {
    vg_status st;
    snprintf(dir, len, "%s/%s", tmpdir, sub);
    vg_file_writer *w = vg_file_writer_new(dir, NULL, &st);
    CHECK(w != NULL);
    return w;
}

static void test_events_escape(void) {
    char dir[400];
    vg_status st;
    vg_file_writer *w = writer_in("ev_evil", dir, sizeof dir);
    if (!w) return;
    CHECK_OK(vg_file_writer_add_scalar(w, EVIL, 1.5, 7, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "loss", 0.25, 7, &st), &st);
    vg_file_writer_free(w);
    vg_file_writer_cache_clear();
    const char *a[] = {"events", dir, NULL};
    CHECK_EQ_INT(run_vigil(a, "out", "err"), 0);
    const char *o = slurp("out");
    CHECK_EQ_INT(count_lines(o), 3); /* header and two rows: none forged */
    CHECK_STR_CONTAINS(o, "\t" EVIL_ESCAPED "\t1.5\n");
    CHECK_STR_CONTAINS(o, "\tloss\t0.25\n");
    /* every row has exactly 4 fields */
    int tabs = 0;
    for (const char *p = o; *p; p++) tabs += *p == '\t';
    CHECK_EQ_INT(tabs, 9);
    CHECK(strchr(o, '\x1b') == NULL && strchr(o, '\x7f') == NULL);
}

static void test_ckpt_escape(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, (const int64_t[]){2}, 1, vg_init_constant(0.5), 0);
    vg_op *ini = vg_global_variables_initializer(g);
    vg_saver_options so = {0};
    const char *keys[1] = {EVIL};
    so.var_list = &v.ref;
    so.nvars = 1;
    so.var_names = keys;
    so.no_meta_graph = true;
    vg_saver *sv = vg_saver_new(g, &so, &st);
    vg_session *s = sv ? vg_session_new(g, NULL, &st) : NULL;
    CHECK(sv && s);
    char prefix[400], path[500];
    cli_tmp_path(prefix, sizeof prefix, "evil.ckpt");
    if (sv && s) {
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &ini, 1, NULL, &st), &st);
        CHECK_OK(vg_saver_save(sv, s, prefix, -1, path, sizeof path, &st), &st);
        const char *a1[] = {"ckpt", path, NULL};
        CHECK_EQ_INT(run_vigil(a1, "out", "err"), 0);
        const char *o = slurp("out");
        CHECK_STR_CONTAINS(o, "\n" EVIL_ESCAPED "  float");
        CHECK_EQ_INT(count_lines(o), 4); /* "# checkpoint", header, one tensor, "# 1 tensors" */
        CHECK(no_raw_controls(o));
        const char *a2[] = {"ckpt", path, "--tensor", EVIL, NULL};
        CHECK_EQ_INT(run_vigil(a2, "out", "err"), 0);
        o = slurp("out");
        CHECK_STR_CONTAINS(o, "# " EVIL_ESCAPED " float [2]\n");
        CHECK(no_raw_controls(o));
        const char *a3[] = {"ckpt", path, "--tensor", "nope\x1b[2J", NULL};
        CHECK_EQ_INT(run_vigil(a3, "out", "err"), 1);
        CHECK_STR_CONTAINS(slurp("err"), "'nope\\x1b[2J'");
        CHECK_STR_CONTAINS(slurp("err"), "  " EVIL_ESCAPED "\n");
        CHECK(no_raw_controls(slurp("err")));
    }
    free_session_saver_graph(s, sv, g);
}

/* The escaping of bytes beyond ASCII: valid UTF-8 kept, the rest \xNN. */
static void test_events_escape_utf8(void) {
    char dir[400];
    vg_status st;
    vg_file_writer *w = writer_in("ev_utf8", dir, sizeof dir);
    if (!w) return;
    /* "é" kept; a lone 0xff, a truncated sequence and U+009B (C1 CSI) escaped */
    CHECK_OK(vg_file_writer_add_scalar(w, "caf\xc3\xa9|\xff|\xe2\x82|\xc2\x9b", 1, 1, &st), &st);
    vg_file_writer_free(w);
    vg_file_writer_cache_clear();
    const char *a[] = {"events", dir, NULL};
    CHECK_EQ_INT(run_vigil(a, "out", "err"), 0);
    CHECK_STR_CONTAINS(slurp("out"), "\tcaf\xc3\xa9|\\xff|\\xe2\\x82|\\xc2\\x9b\t1\n");
}

/* ---- item 8: plotting steps near 2^63 -------------------------------------------- */

static void test_plot_huge_steps(void) {
    char dir[400], svg[400];
    cli_tmp_path(svg, sizeof svg, "huge.svg");
    vg_status st;
    vg_file_writer *w = writer_in("ev_huge", dir, sizeof dir);
    if (!w) return;
    /* one point at INT64_MAX (a degenerate x range whose +1 a double cannot hold), a
     * series across the whole int64 range, one whose 1000-step range is below a
     * double's resolution at 2^62, and values at +-FLT_MAX (simple_value is a float) */
    CHECK_OK(vg_file_writer_add_scalar(w, "single", 0.5, INT64_MAX, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "wide", 1, INT64_MIN, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "wide", 2, 0, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "wide", 3, INT64_MAX, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "narrow", 1, ((int64_t)1 << 62), &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "narrow", 2, ((int64_t)1 << 62) + 1000, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "big", FLT_MAX, INT64_MAX - 2, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "big", -FLT_MAX, INT64_MAX - 1, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "bigflat", FLT_MAX, INT64_MAX - 1, &st), &st);
    CHECK_OK(vg_file_writer_add_scalar(w, "bigflat", FLT_MAX, INT64_MAX, &st), &st);
    vg_file_writer_free(w);
    vg_file_writer_cache_clear();
    const char *a[] = {"plot", dir, "-o", svg, "--tags", "single,wide,narrow,big,bigflat", NULL};
    pid_t pid = spawn_vigil(a, "out", "err");
    CHECK_EQ_INT(wait_vigil(pid, 60), 0); /* no endless tick loop either */
    FILE *f = fopen(svg, "r");
    CHECK(f != NULL);
    static char buf[1 << 18];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    CHECK_STR_CONTAINS(buf, "</svg>");
    CHECK(strstr(buf, "nan") == NULL && strstr(buf, "NaN") == NULL);
    CHECK(strstr(buf, "inf") == NULL);
    /* every series drawn: 5 polylines, each with its points */
    int lines = 0;
    for (const char *p = buf; (p = strstr(p, "<polyline")); p++) lines++;
    CHECK_EQ_INT(lines, 5);
    /* the single point sits at the left edge (offset 0 of a range of 1) */
    CHECK_STR_CONTAINS(buf, "points=\"78.00,");
}

/* ---- item 8: a bad record in `vigil train --input` names its file and position ---- */

/* path: n Fashion-MNIST-like Examples (image_raw 784 bytes, label int64); record `bad`
 * lacks its label. */
static uint64_t write_records(const char *path, vg_compression comp, int n, int bad) {
    vg_status st;
    uint64_t offset = 0, bad_offset = 0; /* of the uncompressed records: 12-byte header, data, 4-byte CRC */
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, comp, &st);
    CHECK(w != NULL);
    if (!w) return 0;
    static char pixels[784];
    for (int i = 0; i < n; i++) {
        vg_example *ex = vg_example_new();
        memset(pixels, i, sizeof pixels);
        const char *pv = pixels;
        CHECK_OK(vg_example_add_bytes(ex, "image_raw", &pv, (const size_t[]){784}, 1, &st), &st);
        int64_t label = i % 10;
        if (i != bad) CHECK_OK(vg_example_add_int64(ex, "label", &label, 1, &st), &st);
        size_t len = 0;
        const void *b = vg_example_serialize(ex, &len, &st);
        CHECK_OK(vg_tfrecord_writer_write(w, b, len, &st), &st);
        if (i == bad) bad_offset = offset;
        offset += 12 + len + 4;
        vg_example_free(ex);
    }
    CHECK_OK(vg_tfrecord_writer_close(w, &st), &st);
    return bad_offset;
}

static void test_train_input_bad_record(void) {
    if (access("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", R_OK) != 0) {
        fprintf(stderr, "SKIP: Fashion-MNIST not installed (vigil train evaluates on its test set)\n");
        return;
    }
    const char *kinds[2] = {"tfdata", "queue"};
    for (int c = 0; c < 2; c++) {
        char rec[400], ck[400];
        snprintf(rec, sizeof rec, "%s/bad%d.tfrecord", tmpdir, c);
        snprintf(ck, sizeof ck, "%s/ck_bad%d", tmpdir, c);
        uint64_t off = write_records(rec, c ? VG_COMPRESSION_GZIP : VG_COMPRESSION_NONE, 100, 70);
        char at[64];
        snprintf(at, sizeof at, "at byte offset %llu%s", (unsigned long long)off, c ? " of its decompressed GZIP" : ")");
        const char *a[] = {"train", "--input", kinds[c], rec, "--checkpoint-dir", ck, "--batch-size", "10", "--quiet", NULL};
        CHECK_EQ_INT(run_vigil(a, "out", "err"), 1);
        const char *e = slurp("err");
        CHECK_STR_CONTAINS(e, rec);
        CHECK_STR_CONTAINS(e, "record 70 (the 71st");
        CHECK_STR_CONTAINS(e, "Feature: label is required");
        CHECK_STR_CONTAINS(e, at);
        CHECK(strstr(e, "(record 0)") == NULL); /* the old, misleading position */
    }
}

static int setup(void) {
    char outside[400];
    mkdir(cli_tmp_path(outside, sizeof outside, "outside"), 0755);
    return 0;
}

static const cli_case cases[] = {
    CLI_CASE(test_run_refuses_file_writes),
    CLI_CASE(test_run_timeout_and_outputs),
    CLI_CASE(test_events_escape),
    CLI_CASE(test_events_escape_utf8),
    CLI_CASE(test_ckpt_escape),
    CLI_CASE(test_plot_huge_steps),
    CLI_CASE(test_train_input_bad_record),
};
static const cli_suite suite = {.tag = "cli_untrusted", .setup = setup};
CLI_TEST_MAIN(suite, cases)
