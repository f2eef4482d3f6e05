/* test_data_capture.c - tf.data functions that capture values of the outer graph
 * (vg_dataset_capture): TF 1.15's map_test.py capture cases (testCaptureHashTable,
 * testCaptureIterator, testCaptureVariable, testCaptureUninitializedVariableError,
 * testCaptureConstantsWithConflictingDevices as plain constants), a placeholder fed at
 * the initializer (the initializable-iterator pattern), captures in filter, flat_map,
 * interleave (sequential and parallel), parallel map, reduce and a window's flat_map,
 * a capture inside a flat_map's inner map (nested), a ref variable captured by value,
 * tensorflow/nmt's vocabulary lookup (index_table_from_file over a TextLineDataset +
 * string_split), saved iterator states with captured values, the export of a graph
 * with such a function, and the errors. Expected values are computed by hand. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* ---- helpers ------------------------------------------------------------ */

/* Runs `init` (feeding feed = v when feed.op) and reads the int64 / int32 / float
 * scalars of `next` until the end: *n values into out; returns the code that ended
 * it (OUT_OF_RANGE at the normal end). */
static vg_code drain(vg_session *s, vg_op *next, int comp, double *out, int max, int *n, vg_status *st) {
    *n = 0;
    for (;;) {
        vg_tensor *t = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, comp), &t, st);
        if (rc != VG_OK) return rc;
        if (*n < max) out[*n] = vg_tensor_scalar(t);
        (*n)++;
        vg_tensor_free(t);
    }
}

static vg_code run_init(vg_session *s, vg_op *init, vg_output feed, vg_tensor *v, vg_status *st) {
    return vg_session_run(s, NULL, feed.op ? &feed : NULL, feed.op ? &v : NULL, feed.op ? 1 : 0, NULL, NULL, 0, &init,
                          1, NULL, st);
}

static void check_seq(const double *got, int n, const double *want, int nw) {
    CHECK_EQ_INT(n, nw);
    for (int i = 0; i < n && i < nw; i++) CHECK_NEAR(got[i], want[i], 1e-9);
}

/* ---- capture callbacks --------------------------------------------------- */

/* payload: the outer output to capture; element -> element * captured */
static vg_code times_captured(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output k = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    outs[0] = vg_mul(fg, args[0], k, NULL);
    *nouts = 1;
    return VG_OK;
}

/* element -> element + captured */
static vg_code plus_captured(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output k = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    outs[0] = vg_add(fg, args[0], k, NULL);
    *nouts = 1;
    return VG_OK;
}

/* ---- testCaptureConstantsWithConflictingDevices (plain constants) ---------- */

typedef struct two_outputs {
    vg_output a, b;
} two_outputs;

static vg_code add_two_captured(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)args, (void)nargs;
    const two_outputs *t = p;
    outs[0] = vg_add(fg, vg_dataset_capture(fg, t->a, NULL), vg_dataset_capture(fg, t->b, NULL), NULL);
    *nouts = 1;
    return VG_OK;
}

static void test_capture_constants(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    two_outputs t = {vg_const_f32(g, 3.0f, "a"), vg_const_f32(g, 5.0f, "b")};
    vg_output ds = vg_dataset_repeat(g, vg_dataset_from_tensors(g, (vg_output[]){vg_const_i32(g, 0, NULL)}, 1, NULL),
                                     10, NULL);
    ds = vg_dataset_map(g, ds, add_two_captured, &t, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* the captures are the MapDataset's other_arguments (Targuments: two floats) */
    const vg_dtype *targs;
    int nt = 0;
    CHECK(vg_op_attr_type_list(ds.op, "Targuments", &targs, &nt));
    CHECK_EQ_INT(nt, 2);
    if (nt == 2) CHECK(targs[0] == VG_FLOAT && targs[1] == VG_FLOAT);
    CHECK_EQ_INT(vg_op_num_inputs(ds.op), 3);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_init(s, init, (vg_output){0}, NULL, &st), &st);
    double got[16];
    int n;
    CHECK_CODE(drain(s, next, 0, got, 16, &n, &st), VG_OUT_OF_RANGE);
    double want[10];
    for (int i = 0; i < 10; i++) want[i] = 8.0;
    check_seq(got, n, want, 10);
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- a placeholder fed at the initializer -------------------------------- */

static void test_capture_placeholder_at_init(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_INT64, NULL, 0, "x");
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 5, 1, NULL), times_captured, &x, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *two = vg_tensor_new_scalar_i64(2, &st), *ten = vg_tensor_new_scalar_i64(10, &st);
    double got[16];
    int n;
    CHECK_OK(run_init(s, init, x, two, &st), &st);
    /* the value at the initializer's run is what every element sees */
    CHECK_CODE(drain(s, next, 0, got, 16, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){0, 2, 4, 6, 8}, 5);
    CHECK_OK(run_init(s, init, x, ten, &st), &st);
    CHECK_CODE(drain(s, next, 0, got, 16, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){0, 10, 20, 30, 40}, 5);
    /* not fed: the initializer fails (the dataset op evaluates its captured input) */
    CHECK_CODE(run_init(s, init, (vg_output){0}, NULL, &st), VG_INVALID_ARGUMENT);
    kt_teardown(g, s, (vg_tensor *[]){two, ten}, 2, NULL, 0);
}

/* a parallel map with a captured value: the same elements in order */
static void test_capture_parallel_map(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_INT64, NULL, 0, "x");
    vg_output ds = vg_dataset_map_parallel(g, vg_dataset_range(g, 0, 100, 1, NULL), plus_captured, &x, 4, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v = vg_tensor_new_scalar_i64(1000, &st);
    CHECK_OK(run_init(s, init, x, v, &st), &st);
    double got[128], want[100];
    int n;
    CHECK_CODE(drain(s, next, 0, got, 128, &n, &st), VG_OUT_OF_RANGE);
    for (int i = 0; i < 100; i++) want[i] = 1000 + i;
    check_seq(got, n, want, 100);
    kt_teardown(g, s, (vg_tensor *[]){v}, 1, NULL, 0);
}

/* ---- testCaptureHashTable ------------------------------------------------- */

static vg_code split_words(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output line = vg_reshape(fg, args[0], vg_const_i32_vec(fg, (const int32_t[]){1}, 1, NULL), NULL); /* [x] */
    vg_op *sp = vg_string_split(fg, line, " ", true, NULL, NULL);
    outs[0] = sp ? vg_out(sp, 1) : (vg_output){0}; /* .values */
    *nouts = 1;
    return VG_OK;
}

/* table.lookup(words) with the table's handle and default value captured */
static vg_code lookup_words(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_lookup_table t = *(const vg_lookup_table *)p;
    t.handle = vg_dataset_capture(fg, t.handle, NULL);
    t.default_value = vg_dataset_capture(fg, t.default_value, NULL);
    outs[0] = vg_lookup_table_lookup(fg, &t, args[0], NULL);
    *nouts = 1;
    return VG_OK;
}

static vg_tensor *strings(const char *const *s, int n, vg_status *st) {
    int64_t d = n;
    vg_tensor *t = vg_tensor_new(VG_STRING, &d, 1, st);
    for (int i = 0; t && i < n; i++) vg_tensor_set_string(t, i, s[i], strlen(s[i]), st);
    return t;
}

static void test_capture_hash_table(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *keys[] = {"brain", "salad", "surgery"};
    vg_tensor *kt = strings(keys, 3, &st);
    vg_table_initializer ini =
        vg_key_value_tensor_initializer(vg_const(g, kt, "keys"), vg_const_array(g, VG_INT64, (const int64_t[]){3}, 1,
                                                                                 (const int64_t[]){0, 1, 2}, "values"),
                                        NULL);
    vg_lookup_table table = vg_hash_table(g, &ini, vg_const_i64(g, -1, "default"), NULL);
    const char *sent[] = {"brain brain tank salad surgery", "surgery brain"};
    vg_tensor *stt = strings(sent, 2, &st);
    vg_output ds = vg_dataset_from_tensor_slices(g, (vg_output[]){vg_const(g, stt, "sentences")}, 1, NULL);
    ds = vg_dataset_map(g, ds, split_words, NULL, NULL);
    ds = vg_dataset_map(g, ds, lookup_words, &table, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_op *tinit = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &tinit, 1, &st), &st); /* sess.run(table.initializer) */
    CHECK_OK(run_init(s, init, (vg_output){0}, NULL, &st), &st);
    const int64_t want0[] = {0, 0, -1, 1, 2}, want1[] = {2, 0};
    const int64_t *want[] = {want0, want1};
    int64_t nw[] = {5, 2};
    for (int e = 0; e < 2; e++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (!t) continue;
        CHECK(vg_tensor_dtype(t) == VG_INT64);
        CHECK_EQ_INT(vg_tensor_num_elements(t), nw[e]);
        for (int64_t i = 0; i < nw[e] && i < vg_tensor_num_elements(t); i++)
            CHECK_EQ_INT(((const int64_t *)vg_tensor_data(t))[i], want[e][i]);
        vg_tensor_free(t);
    }
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE);
    vg_session_free(s);
    /* a table left uninitialized: the lookup in the function fails as the table op does */
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_init(s, init, (vg_output){0}, NULL, &st), &st);
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_FAILED_PRECONDITION);
    kt_teardown(g, s, (vg_tensor *[]){kt, stt}, 2, NULL, 0);
}

/* a MutableHashTable (the session's instance: an insert after the initializer is seen
 * by the next call) and index_table_from_tensor with an OOV bucket */
static void test_capture_mutable_and_tensor_tables(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_lookup_table mt = vg_mutable_hash_table(g, VG_INT64, VG_INT64, vg_const_i64(g, -1, NULL), NULL);
    vg_op *ins13 = vg_lookup_table_insert(
        g, &mt, vg_const_array(g, VG_INT64, (const int64_t[]){2}, 1, (const int64_t[]){1, 3}, NULL),
        vg_const_array(g, VG_INT64, (const int64_t[]){2}, 1, (const int64_t[]){10, 30}, NULL), NULL);
    vg_op *ins2 = vg_lookup_table_insert(g, &mt, vg_const_array(g, VG_INT64, (const int64_t[]){1}, 1, (const int64_t[]){2}, NULL),
                                         vg_const_array(g, VG_INT64, (const int64_t[]){1}, 1, (const int64_t[]){20}, NULL),
                                         NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 4, 1, NULL), lookup_words, &mt, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &ins13, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    double got[8];
    for (int i = 0; i < 2; i++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        got[i] = t ? vg_tensor_scalar(t) : 0;
        vg_tensor_free(t);
    }
    check_seq(got, 2, (double[]){-1, 10}, 2);
    CHECK_OK(vg_session_run_targets(s, &ins2, 1, &st), &st);
    int n;
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){20, 30}, 2);
    vg_session_free(s);
    vg_graph_free(g);

    g = vg_graph_new();
    const char *vocab[] = {"a", "b"}, *words[] = {"b", "zz", "a"};
    vg_tensor *vt = strings(vocab, 2, &st), *wt = strings(words, 3, &st);
    vg_index_table_options o = {0};
    o.num_oov_buckets = 1;
    vg_lookup_table tt = vg_index_table_from_tensor(g, vg_const(g, vt, "vocab"), &o, NULL);
    ds = vg_dataset_from_tensor_slices(g, (vg_output[]){vg_const(g, wt, "words")}, 1, NULL);
    ds = vg_dataset_map(g, ds, lookup_words, &tt, NULL);
    it = vg_make_initializable_iterator(g, ds, &init, NULL);
    next = vg_iterator_get_next(g, it, NULL);
    vg_op *tinit = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &tinit, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){1, 2, 0}, 3); /* "zz": size 2 + the one bucket 0 */
    kt_teardown(g, s, (vg_tensor *[]){vt, wt}, 2, NULL, 0);
}

/* ---- testCaptureIterator --------------------------------------------------- */

static vg_code times_next_of_captured(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                      void *p) {
    (void)nargs;
    vg_output h = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    vg_op *gn = vg_iterator_get_next(fg, h, NULL);
    outs[0] = gn ? vg_mul(fg, args[0], vg_out(gn, 0), NULL) : (vg_output){0};
    *nouts = 1;
    return VG_OK;
}

static void test_capture_iterator(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_op *cinit, *init;
    vg_output captured = vg_make_initializable_iterator(g, vg_dataset_range(g, 0, 10, 1, NULL), &cinit, "captured");
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 10, 1, NULL), times_next_of_captured, &captured, NULL);
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &cinit, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    double got[16], want[10];
    int n;
    CHECK_CODE(drain(s, next, 0, got, 16, &n, &st), VG_OUT_OF_RANGE);
    for (int i = 0; i < 10; i++) want[i] = i * i;
    check_seq(got, n, want, 10);
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- testCaptureVariable / testCaptureUninitializedVariableError ------------ */

/* _ -> counter.assign_add(1) (the value after the update) */
static vg_code count_up(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)args, (void)nargs;
    vg_output h = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    vg_op *add = vg_assign_add_variable_op(fg, h, vg_const_i32(fg, 1, NULL), NULL);
    vg_graph_push_control_deps(fg, &add, 1);
    outs[0] = vg_read_variable_op(fg, h, VG_INT32, NULL);
    vg_graph_pop_control_deps(fg);
    *nouts = 1;
    return VG_OK;
}

static void test_capture_resource_variable(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_resource_variable counter = vg_resource_variable_new(g, "counter", vg_const_i32(g, 0, NULL), 0);
    vg_output ds = vg_dataset_repeat(g, vg_dataset_from_tensors(g, (vg_output[]){vg_const_i32(g, 0, NULL)}, 1, NULL),
                                     10, NULL);
    ds = vg_dataset_map(g, ds, count_up, &counter.handle, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &counter.initializer, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    for (int i = 0; i < 10; i++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, counter.value, &t, &st), &st); /* the session's variable */
        if (t) CHECK_EQ_INT(vg_tensor_scalar(t), i);
        vg_tensor_free(t);
        t = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (t) CHECK_EQ_INT(vg_tensor_scalar(t), i + 1);
        vg_tensor_free(t);
    }
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, counter.value, &t, &st), &st);
    if (t) CHECK_EQ_INT(vg_tensor_scalar(t), 10);
    vg_tensor_free(t);
    t = NULL;
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE);
    CHECK_OK(vg_session_run1(s, counter.value, &t, &st), &st);
    if (t) CHECK_EQ_INT(vg_tensor_scalar(t), 10);
    vg_tensor_free(t);
    vg_session_free(s);
    /* testCaptureUninitializedVariableError: NotFoundError at get_next */
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    t = NULL;
    CHECK_STATUS(vg_session_run1(s, vg_out(next, 0), &t, &st), &st, VG_NOT_FOUND, "counter");
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- a ref variable (VariableV2) is captured by value ------------------------ */

static vg_code assign_add_captured(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                   void *p) {
    (void)args, (void)nargs;
    vg_output r = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    outs[0] = vg_assign_add(fg, r, vg_const_i64(fg, 1, NULL), NULL);
    *nouts = 1;
    return VG_OK;
}

static void test_capture_ref_variable(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_i64(g, 5, NULL), 0);
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 3, 1, NULL), plus_captured, &v.read, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_output seven = vg_assign(g, v.ref, vg_const_i64(g, 7, NULL), true, "set7");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &v.initializer, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
    if (t) CHECK_EQ_INT(vg_tensor_scalar(t), 5);
    vg_tensor_free(t);
    t = NULL;
    /* the variable changes: the dataset keeps the value it had at the initializer */
    CHECK_OK(vg_session_run_targets(s, (vg_op *const[]){seven.op}, 1, &st), &st);
    double got[8];
    int n;
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){6, 7}, 2);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){7, 8, 9}, 3);
    vg_session_free(s);
    /* writing through the captured value: it is not a variable reference */
    vg_dataset_map(g, vg_dataset_range(g, 0, 3, 1, NULL), assign_add_captured, &v.ref, "writes");
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "must be a variable reference");
    vg_graph_free(g);
}

/* ---- filter, flat_map, interleave, reduce, window --------------------------- */

/* x % captured == 0 */
static vg_code multiple_of_captured(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                    void *p) {
    (void)nargs;
    vg_output m = vg_dataset_capture(fg, *(const vg_output *)p, "m");
    outs[0] = vg_equal(fg, vg_floor_mod(fg, args[0], m, NULL), vg_const_i64(fg, 0, NULL), NULL);
    *nouts = 1;
    return VG_OK;
}

static void test_capture_filter(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output m = vg_placeholder(g, VG_INT64, NULL, 0, "m");
    vg_output ds = vg_dataset_filter(g, vg_dataset_range(g, 0, 10, 1, NULL), multiple_of_captured, &m, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *three = vg_tensor_new_scalar_i64(3, &st), *four = vg_tensor_new_scalar_i64(4, &st);
    double got[16];
    int n;
    CHECK_OK(run_init(s, init, m, three, &st), &st);
    CHECK_CODE(drain(s, next, 0, got, 16, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){0, 3, 6, 9}, 4);
    CHECK_OK(run_init(s, init, m, four, &st), &st);
    CHECK_CODE(drain(s, next, 0, got, 16, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){0, 4, 8}, 3);
    kt_teardown(g, s, (vg_tensor *[]){three, four}, 2, NULL, 0);
}

/* x -> from_tensor_slices(captured_vector + x) */
static vg_code slices_plus(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output c = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    vg_output sum = vg_add(fg, c, args[0], NULL);
    outs[0] = vg_dataset_from_tensor_slices(fg, &sum, 1, NULL);
    *nouts = 1;
    return VG_OK;
}

/* x -> from_tensors(x + captured).repeat(2) */
static vg_code twice_plus(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output sum = vg_add(fg, args[0], vg_dataset_capture(fg, *(const vg_output *)p, NULL), NULL);
    outs[0] = vg_dataset_repeat(fg, vg_dataset_from_tensors(fg, &sum, 1, NULL), 2, NULL);
    *nouts = 1;
    return VG_OK;
}

static void expect_pipeline(vg_graph *g, vg_output ds, vg_output feed, vg_tensor *v, const double *want, int nw) {
    vg_status st;
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    if (!next) return;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_init(s, init, feed, v, &st), &st);
    double got[64];
    int n;
    CHECK_CODE(drain(s, next, 0, got, 64, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, want, nw);
    vg_session_free(s);
}

static void test_capture_flat_map_interleave(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output c = vg_const_array(g, VG_INT64, (const int64_t[]){2}, 1, (const int64_t[]){10, 20}, "c");
    vg_output ds = vg_dataset_flat_map(g, vg_dataset_range(g, 0, 3, 1, NULL), slices_plus, &c, NULL);
    expect_pipeline(g, ds, (vg_output){0}, NULL, (const double[]){10, 20, 11, 21, 12, 22}, 6);
    vg_graph_free(g);

    g = vg_graph_new();
    vg_output off = vg_placeholder(g, VG_INT64, NULL, 0, "off");
    vg_tensor *hundred = vg_tensor_new_scalar_i64(100, &st);
    /* cycle 2, block 1: [100 100] and [101 101] in turn, then [102 102] */
    const double want[] = {100, 101, 100, 101, 102, 102};
    ds = vg_dataset_interleave(g, vg_dataset_range(g, 0, 3, 1, NULL), twice_plus, &off, 2, 1, NULL);
    expect_pipeline(g, ds, off, hundred, want, 6);
    ds = vg_dataset_interleave_parallel(g, vg_dataset_range(g, 0, 3, 1, NULL), twice_plus, &off, 2, 1, 2, NULL);
    expect_pipeline(g, ds, off, hundred, want, 6);
    vg_tensor_free(hundred);
    vg_graph_free(g);
}

/* a capture inside a flat_map's inner map: the top graph's placeholder reaches the
 * inner function through the flat_map's function (captured there first) */
typedef struct nested_ctx {
    vg_output k;
} nested_ctx;

static vg_code inner_times_k(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    const nested_ctx *c = p;
    outs[0] = vg_mul(fg, args[0], vg_dataset_capture(fg, c->k, NULL), NULL);
    *nouts = 1;
    return VG_OK;
}

static vg_code pair_then_map(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output pair = vg_pack(fg, (vg_output[]){args[0], args[0]}, 2, 0, NULL);
    vg_output inner = vg_dataset_from_tensor_slices(fg, &pair, 1, NULL);
    outs[0] = vg_dataset_map(fg, inner, inner_times_k, p, NULL);
    *nouts = 1;
    return VG_OK;
}

/* window w -> w.map(v + captured) */
static vg_code window_plus(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    outs[0] = vg_dataset_map(fg, args[0], plus_captured, p, NULL);
    *nouts = 1;
    return VG_OK;
}

static void test_capture_nested(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    nested_ctx c = {vg_placeholder(g, VG_INT64, NULL, 0, "k")};
    vg_output ds = vg_dataset_flat_map(g, vg_dataset_range(g, 0, 3, 1, NULL), pair_then_map, &c, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* the flat_map captured k (for its inner map) */
    const vg_dtype *targs;
    int nt = 0;
    CHECK(ds.op && vg_op_attr_type_list(ds.op, "Targuments", &targs, &nt) && nt == 1);
    vg_tensor *five = vg_tensor_new_scalar_i64(5, &st);
    expect_pipeline(g, ds, c.k, five, (const double[]){0, 0, 5, 5, 10, 10}, 6);

    /* windows of range(4), size 2, each mapped to v + k */
    vg_output w = vg_dataset_window(g, vg_dataset_range(g, 0, 4, 1, NULL), 2, -1, 1, false, NULL);
    ds = vg_dataset_flat_map(g, w, window_plus, &c.k, NULL);
    expect_pipeline(g, ds, c.k, five, (const double[]){5, 6, 7, 8}, 4);
    vg_tensor_free(five);
    vg_graph_free(g);
}

/* (state, x) -> state + x * captured */
static vg_code sum_scaled(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output k = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    outs[0] = vg_add(fg, args[0], vg_mul(fg, args[1], k, NULL), NULL);
    *nouts = 1;
    return VG_OK;
}

static void test_capture_reduce(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output k = vg_placeholder(g, VG_INT64, NULL, 0, "k");
    vg_output init = vg_const_i64(g, 0, NULL), out;
    CHECK_EQ_INT(vg_dataset_reduce(g, vg_dataset_range(g, 0, 5, 1, NULL), &init, 1, sum_scaled, &k, &out, NULL), 1);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *two = vg_tensor_new_scalar_i64(2, &st), *t = NULL;
    CHECK_OK(vg_session_run(s, NULL, &k, &two, 1, &out, &t, 1, NULL, 0, NULL, &st), &st);
    if (t) CHECK_EQ_INT(vg_tensor_scalar(t), 20); /* 2 * (0+1+2+3+4) */
    kt_teardown(g, s, (vg_tensor *[]){t, two}, 2, NULL, 0);
}

/* ---- tensorflow/nmt: src_dataset.map(lambda src: tf.cast(src_vocab_table.lookup(src), tf.int32)) */

static vg_code lookup_cast_i32(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    vg_output ids;
    lookup_words(fg, args, nargs, &ids, nouts, p);
    outs[0] = vg_cast(fg, ids, VG_INT32, NULL);
    *nouts = 1;
    return VG_OK;
}

static bool write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fputs(text, f);
    return fclose(f) == 0;
}

static void test_capture_nmt_vocab(void) {
    vg_status st;
    char dir[64], vocab[128], src[128];
    tu_mkdtemp(dir, sizeof dir, "capture");
    CHECK(dir[0]);
    snprintf(vocab, sizeof vocab, "%s/vocab.src", dir);
    snprintf(src, sizeof src, "%s/train.src", dir);
    CHECK(write_file(vocab, "<unk>\n<s>\n</s>\nthe\ncat\nsat\n"));
    CHECK(write_file(src, "the cat sat\nthe dog  sat\n\ncat\n"));
    vg_graph *g = vg_graph_new();
    vg_index_table_options o = {0};
    o.has_default_value = true;
    o.default_value = 0; /* UNK_ID */
    vg_lookup_table table = vg_index_table_from_file(g, vocab, &o, NULL);
    vg_output files = vg_const_string(g, src, "src_file");
    vg_output ds = vg_dataset_text_line(g, files, "", NULL);
    ds = vg_dataset_map(g, ds, split_words, NULL, NULL);
    ds = vg_dataset_map(g, ds, lookup_cast_i32, &table, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_op *tinit = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &tinit, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    const int32_t w0[] = {3, 4, 5}, w1[] = {3, 0, 5}, w3[] = {4};
    const int32_t *want[] = {w0, w1, NULL, w3};
    int nw[] = {3, 3, 0, 1};
    for (int e = 0; e < 4; e++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (!t) continue;
        CHECK(vg_tensor_dtype(t) == VG_INT32);
        CHECK_EQ_INT(vg_tensor_num_elements(t), nw[e]);
        for (int i = 0; i < nw[e] && i < vg_tensor_num_elements(t); i++)
            CHECK_EQ_INT(((const int32_t *)vg_tensor_data(t))[i], want[e][i]);
        vg_tensor_free(t);
    }
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), VG_OUT_OF_RANGE);
    vg_session_free(s);
    vg_graph_free(g);
    CHECK_EQ_INT(tu_rmrf(dir), 0);
}

/* ---- saved iterator states ---------------------------------------------------- */

static vg_code captured_dataset(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)args, (void)nargs;
    outs[0] = vg_dataset_capture(fg, *(const vg_output *)p, NULL);
    *nouts = 1;
    return VG_OK;
}

static void test_capture_saved_state(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_INT64, NULL, 0, "x");
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 6, 1, NULL), times_captured, &x, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, "Iterator");
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_output saveable = vg_make_saveable_from_iterator(g, it, NULL);
    vg_output state_in = vg_placeholder(g, VG_STRING, NULL, 0, "state_in");
    vg_op *restore = vg_saveable_restore(g, saveable, state_in, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *three = vg_tensor_new_scalar_i64(3, &st), *state = NULL, *t = NULL;
    CHECK_OK(run_init(s, init, x, three, &st), &st);
    for (int i = 0; i < 2; i++) {
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (t) CHECK_EQ_INT(vg_tensor_scalar(t), 3 * i);
        vg_tensor_free(t);
        t = NULL;
    }
    CHECK_OK(vg_session_run1(s, saveable, &state, &st), &st);
    vg_session_free(s);
    /* another session: restored without the initializer (x is never fed there), the
     * captured value comes from the state */
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, &state_in, &state, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
    double got[8];
    int n;
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){6, 9, 12, 15}, 4);
    vg_session_free(s);
    vg_tensor_free(state);
    vg_tensor_free(three);
    vg_graph_free(g);

    /* an interleave with a capture saved with open cycle elements: the restore re-runs
     * the function on their arguments with the saved captured value */
    g = vg_graph_new();
    vg_output off = vg_placeholder(g, VG_INT64, NULL, 0, "off");
    ds = vg_dataset_interleave(g, vg_dataset_range(g, 0, 3, 1, NULL), twice_plus, &off, 2, 1, NULL);
    it = vg_make_initializable_iterator(g, ds, &init, "Iterator");
    next = vg_iterator_get_next(g, it, NULL);
    saveable = vg_make_saveable_from_iterator(g, it, NULL);
    state_in = vg_placeholder(g, VG_STRING, NULL, 0, "state_in");
    restore = vg_saveable_restore(g, saveable, state_in, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    s = vg_session_new(g, NULL, &st);
    vg_tensor *hundred = vg_tensor_new_scalar_i64(100, &st);
    CHECK_OK(run_init(s, init, off, hundred, &st), &st);
    for (int i = 0; i < 3; i++) { /* 100 101 100 */
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
        if (t) CHECK_EQ_INT(vg_tensor_scalar(t), i == 1 ? 101 : 100);
        vg_tensor_free(t);
        t = NULL;
    }
    state = NULL;
    CHECK_OK(vg_session_run1(s, saveable, &state, &st), &st);
    vg_session_free(s);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, &state_in, &state, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){101, 102, 102}, 3);
    vg_session_free(s);
    vg_tensor_free(state);
    vg_tensor_free(hundred);
    vg_graph_free(g);

    /* a captured resource (a dataset handle) cannot be saved: UNIMPLEMENTED naming the op */
    g = vg_graph_new();
    vg_output inner = vg_dataset_range(g, 0, 2, 1, "inner");
    ds = vg_dataset_flat_map(g, vg_dataset_range(g, 0, 2, 1, NULL), captured_dataset, &inner, NULL);
    it = vg_make_initializable_iterator(g, ds, &init, "Iterator");
    next = vg_iterator_get_next(g, it, NULL);
    saveable = vg_make_saveable_from_iterator(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE); /* the captured dataset, twice */
    check_seq(got, n, (double[]){0, 1, 0, 1}, 4);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_STATUS(vg_session_run1(s, saveable, &state, &st), &st, VG_UNIMPLEMENTED, "FlatMapDataset");
    CHECK_STR_CONTAINS(st.msg, "resource");
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* ---- export, errors ----------------------------------------------------------- */

static void test_capture_export(void) {
    /* vigil exports a dataset op's function as a FunctionDef of GraphDef.library: a
     * re-imported graph keeps the op, its captured inputs and Targuments, and its
     * iterator yields element * captured again (x = 3: 0, 3, 6, 9, 12) */
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_INT64, NULL, 0, "x");
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 5, 1, NULL), times_captured, &x, "mapped");
    vg_op *init;
    vg_make_initializable_iterator(g, ds, &init, "Iterator");
    CHECK_OK(vg_graph_status(g, &st), &st);
    const char *ret_ops[] = {vg_op_name(init)};
    vg_op *init2 = NULL;
    vg_import_options io = {.n_return_ops = 1, .return_ops = ret_ops, .return_ops_out = &init2};
    vg_graph *g2 = kt_reimported(g, &io);
    vg_op *m = vg_graph_op_by_name(g2, "mapped");
    CHECK(m != NULL);
    if (m) {
        CHECK_EQ_INT(vg_op_num_inputs(m), 2);
        CHECK(!strcmp(vg_op_name(vg_op_input(m, 1).op), "x"));
    }
    vg_op *it2 = vg_graph_op_by_name(g2, "Iterator");
    CHECK(it2 != NULL);
    vg_op *next2 = it2 ? vg_iterator_get_next(g2, vg_out(it2, 0), NULL) : NULL;
    if (init2 && next2) {
        vg_session *s = vg_session_new(g2, NULL, &st);
        vg_tensor *v = vg_tensor_new_scalar_i64(1, &st);
        vg_output x2 = {vg_graph_op_by_name(g2, "x"), 0};
        vg_tensor_free(v);
        v = vg_tensor_new_scalar_i64(3, &st);
        CHECK_OK(run_init(s, init2, x2, v, &st), &st);
        double got[8];
        int n;
        CHECK_CODE(drain(s, next2, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
        check_seq(got, n, (double[]){0, 3, 6, 9, 12}, 5);
        vg_tensor_free(v);
        vg_session_free(s);
    }
    vg_graph_free(g2);
    vg_graph_free(g);
}

static void test_capture_errors(void) {
    vg_status st;
    /* outside a function callback */
    vg_graph *g = vg_graph_new(), *other = vg_graph_new();
    vg_output c = vg_const_i64(g, 1, NULL);
    CHECK(vg_dataset_capture(other, c, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(other, &st), &st, VG_INVALID_ARGUMENT, "not a tf.data function");
    /* a value of a graph that neither owns the dataset nor encloses it */
    vg_graph *third = vg_graph_new();
    vg_output foreign = vg_const_i64(third, 2, "foreign");
    vg_dataset_map(g, vg_dataset_range(g, 0, 3, 1, NULL), times_captured, &foreign, NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "foreign");
    vg_graph_free(third);
    vg_graph_free(other);
    vg_graph_free(g);
    /* a captured table makes the function stateful: its iterator state cannot be saved */
    g = vg_graph_new();
    vg_lookup_table table =
        vg_hash_table(g, (vg_table_initializer[]){vg_key_value_tensor_initializer(
                             vg_const_array(g, VG_INT64, (const int64_t[]){2}, 1, (const int64_t[]){1, 2}, NULL),
                             vg_const_array(g, VG_INT64, (const int64_t[]){2}, 1, (const int64_t[]){10, 20}, NULL),
                             NULL)},
                      vg_const_i64(g, -1, NULL), NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 3, 1, NULL), lookup_words, &table, NULL);
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, "Iterator");
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_output saveable = vg_make_saveable_from_iterator(g, it, NULL);
    vg_op *tinit = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &tinit, 1, &st), &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    double got[8];
    int n;
    CHECK_CODE(drain(s, next, 0, got, 8, &n, &st), VG_OUT_OF_RANGE);
    check_seq(got, n, (double[]){-1, 10, 20}, 3);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_tensor *state = NULL;
    CHECK_STATUS(vg_session_run1(s, saveable, &state, &st), &st, VG_INVALID_ARGUMENT, "stateful");
    vg_session_free(s);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_capture_constants);
    RUN_TEST(test_capture_placeholder_at_init);
    RUN_TEST(test_capture_parallel_map);
    RUN_TEST(test_capture_hash_table);
    RUN_TEST(test_capture_mutable_and_tensor_tables);
    RUN_TEST(test_capture_iterator);
    RUN_TEST(test_capture_resource_variable);
    RUN_TEST(test_capture_ref_variable);
    RUN_TEST(test_capture_filter);
    RUN_TEST(test_capture_flat_map_interleave);
    RUN_TEST(test_capture_nested);
    RUN_TEST(test_capture_reduce);
    RUN_TEST(test_capture_nmt_vocab);
    RUN_TEST(test_capture_saved_state);
    RUN_TEST(test_capture_export);
    RUN_TEST(test_capture_errors);
    TEST_MAIN_END();
}
