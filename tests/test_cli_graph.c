/* test_cli_graph.c - `vigil graph FILE` and `vigil run DIR` on TF-written files: a GraphDef vigil runs (exit
 * 0, histogram), one with op types vigil lacks (exit 1, listed), a SavedModel
 * (collections, signatures), and bad input (missing file, corrupt bytes). */
#include "test_util.h"
#include "vigil/vigil.h"
#include "cli_test_util.h"
#include <stdlib.h>

#define TDL VG_SRCDIR "/tests/data/tf"

static char out_buf[1 << 16], err_buf[1 << 14];

static const char *read_into(const char *name, char *buf, size_t cap) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int run_graph(const char *file) {
    const char *args[] = {"graph", file, NULL};
    int rc = run_vigil(args, "out", "err");
    read_into("out", out_buf, sizeof out_buf);
    read_into("err", err_buf, sizeof err_buf);
    return rc;
}

static void test_cli_graph__graph_def(void) {
    CHECK_EQ_INT(run_graph(TDL "/graphs/rust_multiplication_tf0.pb"), 0);
    CHECK_STR_CONTAINS(out_buf, "nodes: 3");
    CHECK_STR_CONTAINS(out_buf, "Placeholder");
    CHECK(strstr(out_buf, "cannot run") == NULL);
    /* a graph using op types vigil lacks: exit 1 and the list (ParseExample) */
    CHECK_EQ_INT(run_graph(TDL "/serving_half_plus_two_cpu_tf1.14"), 1);
    CHECK_STR_CONTAINS(out_buf, "nodes: 74");
    CHECK_STR_CONTAINS(out_buf, "op types vigil cannot run");
    CHECK_STR_CONTAINS(out_buf, "ParseExample");
}

static void test_cli_graph__saved_model(void) {
    run_graph(TDL "/serving_matrix_half_plus_two_tf1.2");
    CHECK_STR_CONTAINS(out_buf, "(SavedModel)");
    CHECK_STR_CONTAINS(out_buf, "serving_default (tensorflow/serving/predict)");
    CHECK_STR_CONTAINS(out_buf, "input x: x:0 (float [?,3,3])");
    CHECK_STR_CONTAINS(out_buf, "output y: y:0");
}

/* vigil run: TF-written SavedModels evaluated from the command line. */
static void test_cli_run(void) {
    const char *a1[] = {"run", TDL "/serving_matrix_half_plus_two_tf1.2", "--input", "x=1,2,3,4,5,6,7,8,-2", NULL};
    CHECK_EQ_INT(run_vigil(a1, "out", "err"), 0);
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "y float [1,3,3]: 2.5 3 3.5 4 4.5 5 5.5 6 1"); /* 0.5 x + 2 */
    const char *a2[] = {"run", TDL "/serving_counter_tf1.5", "--signature", "incr_counter_by", "--input", "delta=2.5", NULL};
    CHECK_EQ_INT(run_vigil(a2, "out", "err"), 0);
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "output float []: 2.5");
    const char *a3[] = {"run", TDL "/serving_counter_tf1.5", "--signature", "nope", NULL};
    CHECK_EQ_INT(run_vigil(a3, "out", "err"), 1);
    read_into("err", err_buf, sizeof err_buf);
    CHECK_STR_CONTAINS(err_buf, "'nope'");
    const char *a4[] = {"run", TDL "/serving_matrix_half_plus_two_tf1.2", "--input", "x=1,zz", NULL};
    CHECK_EQ_INT(run_vigil(a4, "out", "err"), 1);
    const char *a5[] = {"run", TDL "/serving_half_plus_two_cpu_tf1.14", "--input", "x=1", NULL};
    CHECK_EQ_INT(run_vigil(a5, "out", "err"), 1);
    read_into("err", err_buf, sizeof err_buf);
    CHECK_STR_CONTAINS(err_buf, "UNIMPLEMENTED");
}

static void test_cli_graph__errors(void) {
    CHECK_EQ_INT(run_graph(TDL "/no/such/file.pb"), 1);
    CHECK_STR_CONTAINS(err_buf, "no/such/file.pb");
    char bad[512];
    snprintf(bad, sizeof bad, "%s/bad.pb", tmpdir);
    FILE *f = fopen(bad, "wb");
    fwrite("\x0a\x7f\x01", 1, 3, f); /* a node claiming 127 bytes, 1 present */
    fclose(f);
    CHECK_EQ_INT(run_graph(bad), 1);
    CHECK_STR_CONTAINS(err_buf, "DATA_LOSS");
    CHECK_EQ_INT(run_graph("--bogus"), 2);
}

int main(void) {
    snprintf(vigil, sizeof vigil, "%s/vigil", VG_BINDIR);
    if (access(vigil, X_OK) != 0) {
        fprintf(stderr, "SKIP: %s not built (configure with -DVIGIL_TOOLS=ON)\n", vigil);
        return 0;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vigil_cli_graph_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    RUN_TEST(test_cli_graph__graph_def);
    RUN_TEST(test_cli_graph__saved_model);
    RUN_TEST(test_cli_graph__errors);
    RUN_TEST(test_cli_run);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    TEST_MAIN_END();
}
