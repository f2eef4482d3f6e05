/* test_api_null.c - public functions called with NULL out-parameters and NULL arrays
 * with a count: INVALID_ARGUMENT naming the culprit (or the parameter is documented as
 * optional and ignored), never a crash. Issue 8: vg_session_run /
 * vg_monitored_session_run with nfetches > 0 and out == NULL crashed in memset. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "status_fixture.h"
#include "vigil/hooks.h"
#include "vigil/vigil.h"

static vg_code step_null_out(vg_step_context *sc, void *payload, vg_status *st) {
    const vg_output *f = payload;
    vg_run_args a = {0};
    a.fetches = f;
    a.nfetches = 1;
    return vg_step_context_run_with_hooks(sc, &a, NULL, NULL, st);
}

static void test_null__session_run(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_f32(g, 2.0f, "c");
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    CHECK_STATUS(vg_session_run(s, NULL, NULL, NULL, 0, &c, NULL, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "out is NULL");
    vg_tensor *out[1] = {NULL};
    CHECK_STATUS(vg_session_run(s, NULL, NULL, NULL, 0, NULL, out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "fetches is NULL");
    CHECK_STATUS(vg_session_run(s, NULL, &x, NULL, 1, &c, out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "feed_values is NULL");
    CHECK_STATUS(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, NULL, 2, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "targets is NULL");
    /* st itself may be NULL: the code still comes back */
    CHECK_CODE(vg_session_run(s, NULL, NULL, NULL, 0, &c, NULL, 1, NULL, 0, NULL, NULL), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_session_run(NULL, NULL, NULL, NULL, 0, &c, out, 1, NULL, 0, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK(out[0] == NULL);
    /* a correct call still works after them */
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &c, out, 1, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(out[0]), 2.0, 0);
    vg_tensor_free(out[0]);
    CHECK_OK(vg_session_run1(s, c, NULL, &st), &st); /* out optional there (documented) */
    free_session_graph(s, g);
}

static void test_null__monitored(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_f32(g, 2.0f, "c");
    vg_monitored_session *ms = vg_monitored_session_new(g, &(vg_monitored_options){.stop_grace_period_secs = 1}, &st);
    CHECK(ms != NULL);
    if (!ms) return;
    vg_run_args a = {0};
    a.fetches = &c;
    a.nfetches = 1;
    CHECK_STATUS(vg_monitored_session_run(ms, &a, NULL, NULL, &st), &st, VG_INVALID_ARGUMENT, "out is NULL");
    vg_tensor *out[1];
    a.fetches = NULL;
    CHECK_STATUS(vg_monitored_session_run(ms, &a, out, NULL, &st), &st, VG_INVALID_ARGUMENT, "fetches is NULL");
    CHECK(out[0] == NULL);
    a.fetches = &c;
    CHECK_CODE(vg_monitored_session_run(NULL, &a, out, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_monitored_session_run_step_fn(ms, step_null_out, &c, &st), &st, VG_INVALID_ARGUMENT, "out is NULL");
    CHECK_CODE(vg_monitored_session_run_step_fn(ms, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_monitored_session_run_step_fn(NULL, step_null_out, &c, &st), VG_INVALID_ARGUMENT);
    CHECK(!vg_monitored_session_should_stop(ms)); /* none of them hurt the session */
    CHECK_OK(vg_monitored_session_run(ms, &a, out, NULL, &st), &st);
    vg_tensor_free(out[0]);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, NULL), &st);
    vg_monitored_session_free(ms);
    /* NULL graph, NULL hooks with a count */
    vg_monitored_options grace = {.stop_grace_period_secs = 1}, two_hooks = {.nhooks = 2, .stop_grace_period_secs = 1};
    EXPECT_REFUSED(vg_monitored_session_new(NULL, &grace, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_monitored_session_new(g, &two_hooks, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_singular_monitored_session_new(NULL, NULL, &st), &st, VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static void test_null__hooks(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_f32(g, 2.0f, "c");
    CHECK_STATUS(vg_stop_at_step_hook(-1, 3, NULL, &st), &st, VG_INVALID_ARGUMENT, "out");
    CHECK_CODE(vg_nan_tensor_hook(c, true, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_global_step_waiter_hook(1, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_step_counter_hook(&(vg_step_counter_options){.every_n_steps = 10, .every_n_secs = -1}, NULL, &st),
               VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_final_ops_hook(&(vg_final_ops_options){.final_ops = &c, .nfinal_ops = 1}, NULL, &st),
               VG_INVALID_ARGUMENT);
    CHECK_CODE(
        vg_profiler_hook(
            &(vg_profiler_options){.save_steps = 10, .save_secs = -1, .output_dir = "/tmp", .no_show_dataflow = true},
            NULL, &st),
        VG_INVALID_ARGUMENT);
    vg_checkpoint_saver_options co = {0};
    co.checkpoint_dir = "/tmp";
    co.save_steps = 1;
    CHECK_CODE(vg_checkpoint_saver_hook(&co, NULL, &st), VG_INVALID_ARGUMENT);
    vg_hook h;
    CHECK_CODE(vg_checkpoint_saver_hook(NULL, &h, &st), VG_INVALID_ARGUMENT);
    CHECK(h.payload == NULL);
    vg_summary_saver_options so = {0};
    CHECK_CODE(vg_summary_saver_hook(&so, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_summary_saver_hook(NULL, &h, &st), VG_INVALID_ARGUMENT);
    vg_logging_tensor_options lo = {0};
    CHECK_CODE(vg_logging_tensor_hook(&lo, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_logging_tensor_hook(NULL, &h, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_timer_init(NULL, 1, -1, &st), VG_INVALID_ARGUMENT);
    /* final ops values: n optional; a hook without payload gives nothing */
    CHECK_OK(vg_final_ops_hook(&(vg_final_ops_options){.final_ops = &c, .nfinal_ops = 1}, &h, &st), &st);
    CHECK(vg_final_ops_hook_values(&h, NULL) == NULL);
    vg_hook_free(&h);
    int n = 7;
    CHECK(vg_final_ops_hook_values(&h, &n) == NULL);
    CHECK_EQ_INT(n, 0);
    vg_hook_free(NULL);
    vg_graph_free(g);
}

static void test_null__session_manager_and_coord(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_session_manager *sm = vg_session_manager_new(g, NULL, NULL);
    CHECK(sm != NULL);
    /* initialized is optional */
    vg_session *s = vg_session_manager_recover_session(sm, NULL, NULL, &st);
    CHECK(s != NULL);
    vg_session_free(s);
    EXPECT_REFUSED(vg_session_manager_recover_session(NULL, NULL, NULL, &st), &st, VG_INVALID_ARGUMENT);
    vg_session_manager_free(sm);
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_status err;
    vg_status_set(&err, VG_INTERNAL, "x");
    vg_coord_request_stop(c, &err);
    CHECK_CODE(vg_coord_raise_requested_exception(c, NULL), VG_INTERNAL);
    CHECK_CODE(vg_coord_join(c, 1, false, NULL), VG_INTERNAL);
    vg_coord_free(c);
    vg_graph_free(g);
}

/* the rest of the audit: optional out-parameters are ignored, required ones (and a
 * NULL object) give INVALID_ARGUMENT or a documented neutral answer */
static void test_null__audit(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_f32(g, 1.0f, "c");
    vg_graph_get_seed(g, 1, NULL, NULL);
    CHECK(vg_graph_collection(g, "x", NULL) == NULL);
    CHECK(vg_op_attr_tensor(c.op, "value", NULL));
    CHECK_CODE(vg_graph_to_graphdef(g, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_graph_to_graphdef_text(g, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_graph_to_meta_graph(g, NULL, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_get_checkpoint_state("/tmp", NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_coord_join(NULL, 1, false, &st), VG_INVALID_ARGUMENT);
    CHECK(vg_coord_should_stop(NULL));
    CHECK_CODE(vg_coord_raise_requested_exception(NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_coord_request_stop(NULL, NULL), VG_INVALID_ARGUMENT);
    vg_coord_clear_stop(NULL);
    CHECK(vg_coord_wait_for_stop(NULL, 0));
    CHECK_CODE(vg_monitored_session_close(NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_monitored_session_end(NULL, VG_OK, &st), VG_INVALID_ARGUMENT);
    CHECK(vg_monitored_session_should_stop(NULL));
    CHECK(vg_monitored_session_raw_session(NULL) == NULL);
    CHECK(vg_monitored_session_graph(NULL) == NULL);
    vg_monitored_session_free(NULL);
    CHECK_CODE(vg_scaffold_finalize(NULL, g, &st), VG_INVALID_ARGUMENT);
    vg_scaffold_free(NULL);
    EXPECT_REFUSED(vg_session_manager_prepare_session(NULL, NULL, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_session_manager_wait_for_session(NULL, NULL, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_monitored_training_session_new(NULL, NULL, &st), &st, VG_INVALID_ARGUMENT);
    vg_session_creator cr;
    CHECK_CODE(vg_chief_session_creator(NULL, NULL, &cr, &st), VG_INVALID_ARGUMENT);
    CHECK(cr.create_session == NULL);
    CHECK_CODE(vg_worker_session_creator(g, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* NULL objects and NULL arrays with a count in the core, graph and train layers */
static void test_null__objects_and_arrays(void) {
    vg_status st;
    char buf[32];
    CHECK(!vg_shape_is_fully_defined(NULL));
    CHECK_EQ_INT(vg_shape_num_elements(NULL), -1);
    CHECK(!strcmp(vg_shape_str(NULL, buf, sizeof buf), "<unknown>"));
    CHECK(vg_tensor_new(VG_FLOAT, NULL, 2, &st) == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "dims is NULL");
    EXPECT_REFUSED(vg_tensor_new_copy(VG_FLOAT, NULL, 0, NULL, 4, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_tensor_new_string_scalar(NULL, 3, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_tensor_copy(NULL, &st), &st, VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_tensor_dtype(NULL), VG_DTYPE_INVALID);
    CHECK_EQ_INT(vg_tensor_ndims(NULL), -1);
    CHECK_EQ_INT(vg_tensor_dim(NULL, 0), -1);
    CHECK_EQ_INT(vg_tensor_num_elements(NULL), 0);
    CHECK(vg_tensor_data(NULL) == NULL);
    CHECK(vg_tensor_string(NULL, 0, NULL) == NULL);
    CHECK_EQ_INT(vg_tensor_shape(NULL).ndims, -1);
    CHECK(vg_session_graph(NULL) == NULL);
    CHECK(vg_session_closed(NULL));
    vg_run_metadata_clear(NULL);
    CHECK_EQ_INT(vg_run_metadata_num_nodes(NULL), 0);
    CHECK(vg_op_input(NULL, 0).op == NULL);
    CHECK_EQ_INT(vg_op_num_inputs(NULL), 0);
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    CHECK_CODE(vg_gradients(g, NULL, 1, NULL, 1, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_batch(g, &v.read, 1, 4, 1, 10, false, NULL, NULL), VG_INVALID_ARGUMENT);
    vg_graph *g2 = vg_graph_new();
    CHECK(vg_variables_initializer(g2, NULL, 2, NULL) == NULL);
    EXPECT_GRAPH_ERROR(g2, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g2);
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    vg_saver_recover_last_checkpoints(sv, NULL, 2);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(sv), 0);
    vg_saver_free(sv);
    CHECK_CODE(vg_graph_set_error(NULL, VG_INTERNAL, "x"), VG_INTERNAL);
    vg_timer_reset(NULL);
    CHECK(!vg_timer_should_trigger_for_step(NULL, 1));
    CHECK_EQ_INT(vg_timer_last_triggered_step(NULL), -1);
    vg_timer_update_last_triggered_step(NULL, 1, NULL, NULL);
    CHECK(vg_run_context_session(NULL) == NULL);
    CHECK(vg_step_context_session(NULL) == NULL);
    vg_graph_free(g);
}

/* Issue 29 item 7: out-parameters and paths found unchecked by a pass over every public
 * function with a pointer argument (vg_saved_model_load(..., out = NULL) segfaulted;
 * NULL paths reached open()). */
static void test_null__outs_and_paths(void) {
    vg_status st;
    /* saved model: NULL out is refused before export_dir is looked at */
    CHECK_STATUS(vg_saved_model_load("/nonexistent_vg_dir", NULL, 0, NULL, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "out is NULL");
    vg_saved_model *m = (vg_saved_model *)&st;
    CHECK_STATUS(vg_saved_model_load(NULL, NULL, 0, NULL, &m, &st), &st, VG_INVALID_ARGUMENT, "export_dir");
    CHECK(m == NULL);
    CHECK_STATUS(vg_saved_model_run(NULL, "serving_default", NULL, NULL, 0, NULL, NULL, 1, &st), &st,
                 VG_INVALID_ARGUMENT, "outputs is NULL");
    CHECK_STATUS(vg_saved_model_run(NULL, "serving_default", NULL, NULL, 2, NULL, NULL, 0, &st), &st,
                 VG_INVALID_ARGUMENT, "inputs is NULL");
    /* compression names */
    CHECK_STATUS(vg_compression_parse("GZIP", NULL, &st), &st, VG_INVALID_ARGUMENT, "out is NULL");
    vg_compression comp = VG_COMPRESSION_GZIP;
    CHECK_OK(vg_compression_parse(NULL, &comp, &st), &st); /* NULL = "" (documented) */
    CHECK_EQ_INT(comp, VG_COMPRESSION_NONE);
    /* GraphDef listings: types and n are required, counts optional */
    const char *text = "node { name: 'a' op: 'NoOp' }";
    char **types = NULL;
    int *counts = NULL, n = -1;
    CHECK_STATUS(vg_graph_def_op_types(text, strlen(text), VG_IMPORT_TEXT, NULL, &counts, &n, &st), &st,
                 VG_INVALID_ARGUMENT, "types is NULL");
    CHECK_CODE(vg_graph_def_op_types(text, strlen(text), VG_IMPORT_TEXT, &types, &counts, NULL, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "n is NULL");
    CHECK_STATUS(vg_graph_def_missing_ops(text, strlen(text), VG_IMPORT_TEXT, NULL, NULL, &n, &st), &st,
                 VG_INVALID_ARGUMENT, "types is NULL");
    CHECK_STATUS(vg_graph_def_missing_ops(NULL, 5, VG_IMPORT_AUTO, &types, NULL, &n, &st), &st, VG_INVALID_ARGUMENT,
                 "bytes is NULL");
    CHECK_OK(vg_graph_def_op_types(text, strlen(text), VG_IMPORT_TEXT, &types, NULL, &n, &st), &st);
    CHECK_EQ_INT(n, 1);
    CHECK(types && !strcmp(types[0], "NoOp"));
    vg_import_free_strings(types, n);
    const void *gd = NULL;
    size_t gdl = 0;
    CHECK_STATUS(vg_meta_graph_def_graph_def("", 0, false, NULL, 0, NULL, &gdl, &st), &st, VG_INVALID_ARGUMENT,
                 "graph_def is NULL");
    CHECK_STATUS(vg_meta_graph_def_graph_def("", 0, false, NULL, 0, &gd, NULL, &st), &st, VG_INVALID_ARGUMENT,
                 "graph_def_len is NULL");
    CHECK_STATUS(vg_meta_graph_def_graph_def(NULL, 8, false, NULL, 0, &gd, &gdl, &st), &st, VG_INVALID_ARGUMENT,
                 "bytes is NULL");
    /* NULL paths: refused by name, never passed to open() */
    vg_graph *g = vg_graph_new();
    CHECK_STATUS(vg_graph_import_graph_def_file(g, NULL, NULL, &st), &st, VG_INVALID_ARGUMENT, "path is NULL");
    vg_meta_graph *mg = NULL;
    CHECK_STATUS(vg_import_meta_graph_file(g, NULL, NULL, &mg, &st), &st, VG_INVALID_ARGUMENT, "path is NULL");
    CHECK_STATUS(vg_import_saved_model_graph(g, NULL, NULL, 0, NULL, &mg, &st), &st, VG_INVALID_ARGUMENT,
                 "saved_model_pb is NULL");
    CHECK(mg == NULL);
    CHECK_EQ_INT(vg_graph_num_ops(g), 0);
    /* the path functions that already refused NULL keep doing so */
    EXPECT_REFUSED(vg_event_reader_open(NULL, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_tfrecord_writer_open(NULL, VG_COMPRESSION_NONE, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_npy_read(NULL, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_checkpoint_reader_new(NULL, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_file_writer_new(NULL, NULL, &st), &st, VG_INVALID_ARGUMENT);
    EXPECT_REFUSED(vg_checkpoint_dir_lock_acquire(NULL, &st), &st, VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_write_file_atomic(NULL, "x", 1, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_saved_model_add_assets_extra(NULL, NULL, 0, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_init_from_checkpoint(g, NULL, NULL, NULL, 0, &st), VG_INVALID_ARGUMENT);
    CHECK(!vg_checkpoint_exists(NULL));
    CHECK(vg_latest_checkpoint(NULL, NULL, 0) == NULL);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_null__outs_and_paths);
    RUN_TEST(test_null__objects_and_arrays);
    RUN_TEST(test_null__audit);
    RUN_TEST(test_null__session_run);
    RUN_TEST(test_null__monitored);
    RUN_TEST(test_null__hooks);
    RUN_TEST(test_null__session_manager_and_coord);
    TEST_MAIN_END();
}
