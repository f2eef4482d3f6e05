/* test_cli_graph.c - `vigil graph FILE`, `vigil run DIR` on TF-written files and
 * `vigil train --meta-graph` on an exported graph: a GraphDef vigil runs (exit
 * 0, histogram), one with op types vigil lacks (exit 1, listed), a SavedModel
 * (collections, signatures), and bad input (missing file, corrupt bytes). */
#include "test_util.h"
#include "vigil/vigil.h"
#include "cli_test_util.h"
#include <stdlib.h>

#define TDL VG_SRCDIR "/tests/data/tf"

static char out_buf[1 << 16], err_buf[1 << 14];

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
    /* every op type of TF 1.14's half_plus_two, its sharded saver's included
     * (StringJoin, ShardedFilename, MergeV2Checkpoints): exit 0; its asset listed */
    CHECK_EQ_INT(run_graph(TDL "/serving_half_plus_two_cpu_tf1.14"), 0);
    CHECK_STR_CONTAINS(out_buf, "nodes: 74");
    CHECK(strstr(out_buf, "cannot run") == NULL);
    CHECK_STR_CONTAINS(out_buf, "assets (1):");
    CHECK_STR_CONTAINS(out_buf, "foo.txt <- Const:0");
    /* TF 2.14's SavedModel: its function calls inline, every op type runs: exit 0 */
    CHECK_EQ_INT(run_graph(TDL "/serving_half_plus_two_tf2_cpu"), 0);
    CHECK_STR_CONTAINS(out_buf, "StatefulPartitionedCall");
    CHECK(strstr(out_buf, "cannot run") == NULL);
    /* a graph using op types vigil lacks: exit 1 and the list */
    FILE *f = fopen("missing.pbtxt", "w");
    CHECK(f != NULL);
    if (f) {
        fputs("node { name: 'a' op: 'NoSuchOpAnywhere' }\nnode { name: 'b' op: 'NoOp' }\n", f);
        fclose(f);
    }
    CHECK_EQ_INT(run_graph("missing.pbtxt"), 1);
    CHECK_STR_CONTAINS(out_buf, "op types vigil cannot run");
    CHECK_STR_CONTAINS(out_buf, "NoSuchOpAnywhere");
    remove("missing.pbtxt");
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
    /* TF 2 SavedModels carry their own save function (SaveV2 in the graph): trusted only */
    const char *a6[] = {"run", TDL "/serving_half_plus_two_tf2_cpu", "--input", "x=3", "--allow-file-writes", NULL};
    CHECK_EQ_INT(run_vigil(a6, "out", "err"), 0); /* TF 2: y = 0.5 x + 2 */
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "y float [1]: 3.5");
    const char *a3[] = {"run", TDL "/serving_counter_tf1.5", "--signature", "nope", NULL};
    CHECK_EQ_INT(run_vigil(a3, "out", "err"), 1);
    read_into("err", err_buf, sizeof err_buf);
    CHECK_STR_CONTAINS(err_buf, "'nope'");
    const char *a4[] = {"run", TDL "/serving_matrix_half_plus_two_tf1.2", "--input", "x=1,zz", NULL};
    CHECK_EQ_INT(run_vigil(a4, "out", "err"), 1);
    const char *a5[] = {"run", TDL "/serving_half_plus_two_cpu_tf1.14", "--input", "x=1", NULL};
    CHECK_EQ_INT(run_vigil(a5, "out", "err"), 0); /* y = 0.5 x + 2 since ParseExample exists */
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "y float [1,1]: 2.5");
}

/* vigil run with .npy input (NumPy's float64, converted to the float input) and
 * --outdir writing each output as KEY.npy. */
static void test_cli_run_npy(void) {
    vg_status st;
    char dir[256], x[300], y[300], arg[320], outdir[300];
    tu_mkdtemp(dir, sizeof dir, "clinpy");
    snprintf(x, sizeof x, "%s/x.npy", dir);
    snprintf(y, sizeof y, "%s/y.npy", dir);
    snprintf(arg, sizeof arg, "x=%s", x);
    snprintf(outdir, sizeof outdir, "%s", dir);
    double xv[3] = {1, 2, 5};
    vg_tensor *xt = vg_tensor_new_copy(VG_DOUBLE, (int64_t[]){3, 1}, 2, xv, sizeof xv, &st);
    CHECK_OK(vg_npy_write(x, xt, &st), &st);
    vg_tensor_free(xt);
    const char *a[] = {"run", TDL "/serving_half_plus_two_cpu_tf1.14", "--input", arg, "--outdir", outdir, NULL};
    CHECK_EQ_INT(run_vigil(a, "out", "err"), 0);
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "y float [3,1]: 2.5 3 4.5");
    vg_tensor *yt = vg_npy_read(y, &st);
    CHECK(yt && vg_tensor_dtype(yt) == VG_FLOAT && vg_tensor_num_elements(yt) == 3);
    if (yt) CHECK_NEAR(((const float *)vg_tensor_data(yt))[2], 4.5, 0);
    vg_tensor_free(yt);
    /* y.npy exists now: refused without --overwrite */
    CHECK_EQ_INT(run_vigil(a, "out", "err"), 1);
    read_into("err", err_buf, sizeof err_buf);
    CHECK_STR_CONTAINS(err_buf, "--overwrite");
    const char *b[] = {"run", TDL "/serving_half_plus_two_cpu_tf1.14", "--input", arg, "--outdir", outdir,
                       "--overwrite", NULL};
    CHECK_EQ_INT(run_vigil(b, "out", "err"), 0);
    /* --input_examples: tf.train.Examples through the regression signature's
     * ParseExample (y = 0.5 x + 2), and through y2 = 0.5 x + 3 (c) */
    const char *e1[] = {"run", TDL "/serving_half_plus_two_cpu_tf1.14", "--signature", "regress_x_to_y",
                        "--input_examples", "inputs=[{\"x\":[1.0]}, {'x': [3.0]}]", NULL};
    CHECK_EQ_INT(run_vigil(e1, "out", "err"), 0);
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "outputs float [2,1]: 2.5 3.5");
    const char *e2[] = {"run", TDL "/serving_half_plus_two_cpu_tf1.14", "--signature", "regress_x_to_y2",
                        "--input_examples", "inputs=[{\"x\":[4.0]}]", NULL};
    CHECK_EQ_INT(run_vigil(e2, "out", "err"), 0);
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "outputs float [1,1]: 5");
    const char *e3[] = {"run", TDL "/serving_half_plus_two_cpu_tf1.14", "--signature", "regress_x_to_y",
                        "--input_examples", "inputs=[{\"x\":[1.0]", NULL};
    CHECK_EQ_INT(run_vigil(e3, "out", "err"), 1);
    read_into("err", err_buf, sizeof err_buf);
    CHECK_STR_CONTAINS(err_buf, "--input_examples");
    /* a corrupt .npy */
    FILE *f = fopen(x, "wb");
    if (f) {
        fputs("\x93NUMPY garbage", f);
        fclose(f);
    }
    CHECK_EQ_INT(run_vigil(a, "out", "err"), 1);
    read_into("err", err_buf, sizeof err_buf);
    CHECK_STR_CONTAINS(err_buf, "x.npy");
    tu_rmrf(dir);
}

/* vigil train --meta-graph: a regression whose input pipeline (random batches through a
 * FIFOQueue and its QueueRunner) is inside the graph, trained to step 20, then resumed
 * to step 30 from the checkpoint. */
static void write_meta(const char *path) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    int64_t shp[2] = {8, 1};
    vg_tensor *st_shape = vg_tensor_new_copy(VG_INT32, (int64_t[]){2}, 1, (int32_t[]){8, 1}, 8, &st);
    vg_output shape = vg_const(g, st_shape, "shape");
    vg_tensor_free(st_shape);
    vg_output xr = vg_random_uniform(g, shape, VG_FLOAT, 1, 2, "xr");
    vg_output yr = vg_add(g, vg_mul(g, xr, vg_const_f32(g, 0.1f, NULL), NULL), vg_const_f32(g, 0.3f, NULL), "yr");
    vg_shape ss[2] = {vg_shape_make(shp, 2), vg_shape_make(shp, 2)};
    vg_output q = vg_fifo_queue(g, (vg_dtype[]){VG_FLOAT, VG_FLOAT}, ss, 2, 4, "input_queue");
    vg_op *enq = vg_queue_enqueue(g, q, (vg_output[]){xr, yr}, 2, "enqueue");
    vg_add_queue_runner(g, q, &enq, 1);
    vg_op *deq = vg_queue_dequeue(g, q, "batch");
    vg_variable w = vg_get_variable(g, "w", VG_FLOAT, (int64_t[]){1, 1}, 2, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "b", VG_FLOAT, (int64_t[]){1}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output yhat = vg_add(g, vg_matmul(g, vg_out(deq, 0), w.read, false, false, NULL), b.read, "y_hat");
    vg_output loss = vg_reduce_mean(g, vg_square(g, vg_sub(g, yhat, vg_out(deq, 1), NULL), NULL), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, "train");
    vg_optimizer_free(opt);
    CHECK_OK(vg_graph_status(g, &st), &st);
    void *m = NULL;
    size_t n = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &m, &n, &st), &st);
    FILE *f = fopen(path, "wb");
    if (f && m) fwrite(m, 1, n, f);
    if (f) fclose(f);
    vg_free(m);
    vg_graph_free(g);
}

static void test_cli_train_meta_graph(void) {
    char meta[512], dir[512];
    write_meta(cli_tmp_path(meta, sizeof meta, "model.meta"));
    cli_tmp_path(dir, sizeof dir, "run");
    const char *a1[] = {"train", "--meta-graph", meta, "--steps", "20", "--checkpoint-dir", dir, NULL};
    CHECK_EQ_INT(run_vigil(a1, "out", "err"), 0);
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "global_step 20");
    char buf[512];
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) != NULL);
    CHECK_STR_CONTAINS(buf, "model.ckpt-20");
    const char *a2[] = {"train", "--meta-graph", meta, "--steps", "30", "--checkpoint-dir", dir, NULL};
    CHECK_EQ_INT(run_vigil(a2, "out", "err"), 0);
    read_into("out", out_buf, sizeof out_buf);
    CHECK_STR_CONTAINS(out_buf, "global_step 30");
    /* the trained coefficients approach y = 0.1 x + 0.3 */
    vg_status st;
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) != NULL);
    CHECK_STR_CONTAINS(buf, "model.ckpt-30");
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(buf, &st);
    CHECK(r != NULL);
    if (r) {
        vg_tensor *bt = vg_checkpoint_reader_read(r, "b", &st);
        CHECK(bt && fabs(vg_tensor_scalar(bt) - 0.3) < 0.1);
        vg_tensor_free(bt);
        vg_checkpoint_reader_free(r);
    }
    const char *a3[] = {"train", "--meta-graph", meta, "--steps", "x", "--checkpoint-dir", dir, NULL};
    CHECK_EQ_INT(run_vigil(a3, "out", "err"), 2);
}

static void test_cli_graph__errors(void) {
    CHECK_EQ_INT(run_graph(TDL "/no/such/file.pb"), 1);
    CHECK_STR_CONTAINS(err_buf, "no/such/file.pb");
    char bad[512];
    cli_tmp_path(bad, sizeof bad, "bad.pb");
    FILE *f = fopen(bad, "wb");
    fwrite("\x0a\x7f\x01", 1, 3, f); /* a node claiming 127 bytes, 1 present */
    fclose(f);
    CHECK_EQ_INT(run_graph(bad), 1);
    CHECK_STR_CONTAINS(err_buf, "DATA_LOSS");
    CHECK_EQ_INT(run_graph("--bogus"), 2);
}

/* x -> x * 2 (a tf.data map function) */
static vg_code cli_double(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_mul(fg, args[0], vg_const_i64(fg, 2, "two"), "mul");
    *nouts = 1;
    return VG_OK;
}

/* a .meta of a tf.data pipeline: its map function is listed (and it imports) */
static void test_cli_graph__dataset_functions(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_dataset_map(g, vg_dataset_range(g, 0, 4, 1, NULL), cli_double, NULL, "doubled");
    void *meta = NULL;
    size_t ml = 0;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &meta, &ml, &st), &st);
    char path[512];
    cli_tmp_path(path, sizeof path, "pipeline.meta");
    CHECK_OK(vg_write_file_atomic(path, meta, ml, &st), &st);
    CHECK_EQ_INT(run_graph(path), 0);
    CHECK_STR_CONTAINS(out_buf, "functions (1):");
    CHECK_STR_CONTAINS(out_buf, "__inference_Dataset_map_doubled_0: 1 input, 1 output, 2 nodes");
    CHECK(strstr(out_buf, "not importable") == NULL);
    vg_free(meta);
    vg_graph_free(g);
}

static const cli_case cases[] = {
    CLI_CASE(test_cli_graph__graph_def),
    CLI_CASE(test_cli_graph__saved_model),
    CLI_CASE(test_cli_graph__errors),
    CLI_CASE(test_cli_graph__dataset_functions),
    CLI_CASE(test_cli_run),
    CLI_CASE(test_cli_run_npy),
    CLI_CASE(test_cli_train_meta_graph),
};
static const cli_suite suite = {.tag = "cli_graph"};
CLI_TEST_MAIN(suite, cases)
