/* test_core_session.c - sessions and the executor: feeds, fetches, targets, pruning,
 * plan cache, concurrent runs, parallel execution, close/cancel, run metadata, and the
 * error paths (bad feeds, foreign ops, unknown names, uninitialized variables). Test
 * ops are registered through the vg__ops_test table. */
#include "test_util.h"
#include "kernels/kernel.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "thread_run_fixture.h"
#include "session_test_util.h"
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_int count_runs;

static vg_code shape_scalar_f(vg_op *op, vg_status *st) {
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_FLOAT, vg_shape_make(NULL, 0));
    return VG_OK;
}
static vg_code k_count(vg__kctx *ctx) {
    atomic_fetch_add(&count_runs, 1);
    vg_tensor *t;
    if (vg__kctx_alloc_output(ctx, 0, VG_FLOAT, NULL, 0, &t)) return vg__kctx_status(ctx)->code;
    *(float *)vg_tensor_data(t) = 1.0f;
    return VG_OK;
}

/* TestBlock: waits until the session is closed (resource cancel), then CANCELLED. */
typedef struct blocker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool cancelled;
} blocker;
static void *blocker_new(void *arg, vg_status *st) {
    blocker *b = calloc(1, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    return b;
}
static void blocker_cancel(void *r) {
    blocker *b = r;
    pthread_mutex_lock(&b->mu);
    b->cancelled = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}
static void blocker_free(void *r) { free(r); }
static const vg__resource_ops blocker_ops = {blocker_cancel, blocker_free};
static vg_code k_block(vg__kctx *ctx) {
    blocker *b;
    if (vg__session_resource(vg__kctx_session(ctx), "blocker", &blocker_ops, blocker_new, NULL, (void **)&b,
                             vg__kctx_status(ctx)))
        return vg__kctx_status(ctx)->code;
    pthread_mutex_lock(&b->mu);
    while (!b->cancelled) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    return vg_status_set(vg__kctx_status(ctx), VG_CANCELLED, "blocked op cancelled");
}
/* TestSleep: sleeps 30 ms, outputs its thread id. */
static vg_code k_sleep(vg__kctx *ctx) {
    usleep(30000);
    vg_tensor *t;
    if (vg__kctx_alloc_output(ctx, 0, VG_FLOAT, NULL, 0, &t)) return vg__kctx_status(ctx)->code;
    *(float *)vg_tensor_data(t) = 1.0f;
    return VG_OK;
}

/* TestSleep5: sleeps 5 ms, outputs 1. */
static vg_code k_sleep5(vg__kctx *ctx) {
    usleep(5000);
    vg_tensor *t;
    if (vg__kctx_alloc_output(ctx, 0, VG_FLOAT, NULL, 0, &t)) return vg__kctx_status(ctx)->code;
    *(float *)vg_tensor_data(t) = 1.0f;
    return VG_OK;
}

/* TestSleep200: sleeps 200 ms, outputs 1 (a long node whose end leaves room for a
 * loaded machine's scheduling delays). */
static vg_code k_sleep200(vg__kctx *ctx) {
    usleep(200000);
    vg_tensor *t;
    if (vg__kctx_alloc_output(ctx, 0, VG_FLOAT, NULL, 0, &t)) return vg__kctx_status(ctx)->code;
    *(float *)vg_tensor_data(t) = 1.0f;
    return VG_OK;
}

const vg__op_def vg__ops_test[] = {
    {"TestCount", 0, -1, VG__OP_STATEFUL, 0, shape_scalar_f, k_count, NULL},
    {"TestBlock", 0, 0, VG__OP_STATEFUL | VG__OP_BLOCKING, 0, shape_scalar_f, k_block, NULL},
    {"TestSleep", 0, -1, VG__OP_STATEFUL, 0, shape_scalar_f, k_sleep, NULL},
    {"TestSleep5", 0, -1, VG__OP_STATEFUL, 0, shape_scalar_f, k_sleep5, NULL},
    {"TestSleep200", 0, -1, VG__OP_STATEFUL, 0, shape_scalar_f, k_sleep200, NULL},
    {0},
};

static vg_output test_op(vg_graph *g, const char *type, const vg_output *in, int n, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, type, name);
    vg_op_builder_add_inputs(b, in, n);
    return vg_out(vg_op_builder_finish(b), 0);
}

static vg_tensor *scalar_f32(float v) { return vg_tensor_new_scalar_f32(v, NULL); }

static void test_core__feeds_fetches_targets(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, 0, "x");
    vg_output c = vg_const_f32(g, 2.0f, "c");
    vg_output y = vg_add(g, x, c, "y");
    vg_output z = vg_mul(g, y, y, "z");
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *xv = scalar_f32(3.0f), *out[2];
    vg_output fetches[2] = {y, z};
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, fetches, out, 2, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(out[0]), 5.0, 0);
    CHECK_NEAR(vg_tensor_scalar(out[1]), 25.0, 0);
    vg_tensor_free(out[0]);
    vg_tensor_free(out[1]);
    /* feeding an intermediate tensor prunes what produces it: x need not be fed */
    vg_tensor *yv = scalar_f32(10.0f);
    CHECK_OK(vg_session_run(s, NULL, &y, &yv, 1, &z, out, 1, NULL, 0, NULL, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(out[0]), 100.0, 0);
    vg_tensor_free(out[0]);
    /* fetching a fed tensor returns its value, in a tensor the caller owns (TF hands
     * back a copy): writing into it leaves the fed tensor alone */
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &x, out, 1, NULL, 0, NULL, &st), &st);
    CHECK(out[0] != xv);
    CHECK_NEAR(vg_tensor_scalar(out[0]), 3.0, 0);
    *(float *)vg_tensor_data(out[0]) = 7.0f;
    CHECK_NEAR(vg_tensor_scalar(xv), 3.0, 0);
    vg_tensor_free(out[0]);
    /* not feeding the placeholder */
    CHECK_STATUS(vg_session_run(s, NULL, NULL, NULL, 0, &z, out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT, "x");
    CHECK(out[0] == NULL);
    kt_teardown(g, s, (vg_tensor *[]){xv, yv}, 2, NULL, 0);
}

static void test_core__pruning_and_cache(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = test_op(g, "TestCount", NULL, 0, "a");
    vg_output b = test_op(g, "TestCount", NULL, 0, "b");
    vg_output sum = vg_add(g, a, a, "sum");
    (void)b;
    vg_session *s = vg_session_new(g, NULL, &st);
    atomic_store(&count_runs, 0);
    vg_tensor *o;
    for (int i = 0; i < 5; i++) {
        CHECK_OK(vg_session_run1(s, sum, &o, &st), &st);
        CHECK_NEAR(vg_tensor_scalar(o), 2.0, 0);
        vg_tensor_free(o);
    }
    CHECK_EQ_INT(atomic_load(&count_runs), 5); /* b never ran, a once per run */
    vg_session_free(s);
    vg_graph_free(g);
}

/* A float variable "v" on g, *init assigning it init_value (named init_name) and *inc
 * adding 1 to it (named inc_name). */
static vg_output counter_var(vg_graph *g, float init_value, const char *init_name, const char *inc_name,
                             vg_output *init, vg_output *inc) {
    vg_output v = vg_variable_op(g, VG_FLOAT, NULL, 0, "v");
    *init = vg_assign(g, v, vg_const_f32(g, init_value, NULL), true, init_name);
    *inc = vg_assign_add(g, v, vg_const_f32(g, 1.0f, NULL), inc_name);
    return v;
}

static void test_core__variables(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output init, inc, v = counter_var(g, 1.5f, "v/init", "inc", &init, &inc);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *o = NULL;
    CHECK_STATUS(vg_session_run1(s, v, &o, &st), &st, VG_FAILED_PRECONDITION, "uninitialized value v");
    CHECK(o == NULL);
    CHECK_OK(vg_session_run_targets(s, &init.op, 1, &st), &st);
    CHECK_OK(vg_session_run1(s, v, &o, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(o), 1.5, 0);
    /* the fetched value is a snapshot: a later in-place update must not change it */
    CHECK_OK(vg_session_run_targets(s, &inc.op, 1, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(o), 1.5, 0);
    vg_tensor_free(o);
    CHECK_OK(vg_session_run1(s, v, &o, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(o), 2.5, 0);
    vg_tensor_free(o);
    /* variables live in the session: a second session starts uninitialized */
    vg_session *s2 = vg_session_new(g, NULL, &st);
    CHECK_CODE(vg_session_run1(s2, v, &o, &st), VG_FAILED_PRECONDITION);
    vg_session_free(s2);
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_core__concurrent_runs(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output init, inc, v = counter_var(g, 0.0f, NULL, NULL, &init, &inc);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init.op, 1, &st), &st);
    pthread_t t[2];
    tr_runner a[2] = {{.s = s, .target = inc.op, .n = 2000}, {.s = s, .target = inc.op, .n = 2000}};
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, tr_main, &a[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK_EQ_INT(a[0].fails + a[1].fails, 0);
    vg_tensor *o;
    CHECK_OK(vg_session_run1(s, v, &o, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(o), 4000.0, 0);
    kt_teardown(g, s, (vg_tensor *[]){o}, 1, NULL, 0);
}

static void test_core__bad_feeds_and_names(void) {
    vg_status st;
    vg_graph *g = vg_graph_new(), *g2 = vg_graph_new();
    int64_t dims[2] = {-1, 3};
    vg_output x = vg_placeholder(g, VG_FLOAT, dims, 2, "x");
    vg_output y = vg_identity(g, x, "y");
    vg_output other = vg_const_f32(g2, 1.0f, "other");
    vg_session *s = vg_session_new(g, NULL, &st);
    int64_t d1[2] = {2, 4};
    vg_tensor *bad_shape = vg_tensor_new_zeros(VG_FLOAT, d1, 2, &st);
    vg_tensor *bad_type = vg_tensor_new_zeros(VG_INT32, dims + 1, 1, &st), *o;
    CHECK_STATUS(vg_session_run(s, NULL, &x, &bad_shape, 1, &y, &o, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "x:0");
    CHECK_STR_CONTAINS(st.msg, "[2,4]");
    CHECK_STATUS(vg_session_run(s, NULL, &x, &bad_type, 1, &y, &o, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "int32");
    CHECK_STATUS(vg_session_run1(s, other, &o, &st), &st, VG_INVALID_ARGUMENT, "other");
    vg_output none = vg_graph_output_by_name(g, "nope:0", &st);
    CHECK(none.op == NULL && st.code == VG_NOT_FOUND);
    vg_output y0 = vg_graph_output_by_name(g, "y:0", &st);
    CHECK(y0.op == y.op && y0.index == 0);
    vg_graph_output_by_name(g, "y:3", &st);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    /* an op added after the session was created */
    vg_output late = vg_identity(g, y, "late");
    CHECK_CODE(vg_session_run1(s, late, &o, &st), VG_INVALID_ARGUMENT);
    vg_tensor_free(bad_shape);
    vg_tensor_free(bad_type);
    vg_session_free(s);
    vg_graph_free(g);
    vg_graph_free(g2);
}

/* Two input-less test ops on g, kind[0..3] their type, name, type, name, into sl[2]. */
static void two_test_ops(vg_graph *g, const char *kind[4], vg_output sl[2]) {
    sl[0] = test_op(g, kind[0], NULL, 0, kind[1]);
    sl[1] = test_op(g, kind[2], NULL, 0, kind[3]);
}

static void test_core__close_cancels(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output blk = test_op(g, "TestBlock", NULL, 0, "blk");
    vg_output c = vg_const_f32(g, 1.0f, "c");
    vg_session *s = threaded_session(g, 2);
    tr_runner a = {.s = s, .fetch = blk, .n = 1};
    pthread_t t;
    pthread_create(&t, NULL, tr_main, &a);
    usleep(50000);
    /* a blocked run does not starve other runs of the same session */
    for (int i = 0; i < 100; i++) {
        vg_tensor *o1 = NULL;
        CHECK_OK(vg_session_run1(s, c, &o1, &st), &st);
        vg_tensor_free(o1);
    }
    vg_session_close(s, &st);
    pthread_join(t, NULL);
    CHECK_EQ_INT(a.rc, VG_CANCELLED);
    vg_tensor *o;
    CHECK_STATUS(vg_session_run1(s, c, &o, &st), &st, VG_FAILED_PRECONDITION, "closed");
    vg_session_close(s, &st); /* twice is harmless */
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_core__parallel_and_trace(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output sl[2];
    two_test_ops(g, (const char *[4]){"TestSleep", "a", "TestSleep", "b"}, sl);
    vg_output sum = vg_add(g, sl[0], sl[1], "sum");
    vg_session_options opts = {.intra_op_threads = 1, .inter_op_threads = 2};
    vg_session *s = vg_session_new(g, &opts, &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    vg_tensor *o;
    CHECK_OK(vg_session_run(s, &ro, NULL, NULL, 0, &sum, &o, 1, NULL, 0, md, &st), &st);
    CHECK_NEAR(vg_tensor_scalar(o), 2.0, 0);
    vg_tensor_free(o);
    CHECK_EQ_INT(vg_run_metadata_num_nodes(md), 3);
    int ta = -1, tb = -1;
    int64_t sa = 0, ea = 0, sb = 0, eb = 0;
    for (int i = 0; i < vg_run_metadata_num_nodes(md); i++) {
        const vg_node_stats *ns = vg_run_metadata_node(md, i);
        CHECK(ns->end_us >= ns->start_us);
        if (!strcmp(ns->node_name, "a")) ta = ns->thread_id, sa = ns->start_us, ea = ns->end_us;
        if (!strcmp(ns->node_name, "b")) tb = ns->thread_id, sb = ns->start_us, eb = ns->end_us;
        if (!strcmp(ns->node_name, "sum")) CHECK(strcmp(ns->op_type, "AddV2") == 0 && ns->bytes_allocated == 4);
    }
    /* the two sleeps ran on different threads, overlapping in time */
    CHECK(ta != tb);
    CHECK(sa < eb && sb < ea);
    vg_run_metadata_free(md);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

static void test_core__graph_names_scopes_collections(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = vg_const_f32(g, 1, "a");
    vg_output a1 = vg_const_f32(g, 1, "a");
    CHECK(strcmp(vg_op_name(a.op), "a") == 0);
    CHECK(strcmp(vg_op_name(a1.op), "a_1") == 0);
    vg_graph_push_scope(g, "dense");
    vg_output k = vg_const_f32(g, 1, "kernel");
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "dense");
    vg_output k2 = vg_const_f32(g, 1, "kernel");
    vg_graph_pop_scope(g);
    CHECK(strcmp(vg_op_name(k.op), "dense/kernel") == 0);
    CHECK(strcmp(vg_op_name(k2.op), "dense_1/kernel") == 0);
    vg_graph_push_scope(g, "dense/");
    vg_output k3 = vg_const_f32(g, 1, "bias");
    vg_graph_pop_scope(g);
    CHECK(strcmp(vg_op_name(k3.op), "dense/bias") == 0);
    CHECK(vg_graph_op_by_name(g, "dense_1/kernel") == k2.op);
    /* control dependency scope */
    vg_graph_push_control_deps(g, &a.op, 1);
    vg_output d = vg_identity(g, a1, "d");
    vg_graph_pop_control_deps(g);
    CHECK_EQ_INT(vg_op_num_control_inputs(d.op), 1);
    CHECK(vg_op_control_input(d.op, 0) == a.op);
    /* collections */
    int n;
    vg_graph_add_to_collection(g, VG_SUMMARIES, a);
    vg_graph_add_to_collection(g, VG_SUMMARIES, d);
    const vg_output *items = vg_graph_collection(g, VG_SUMMARIES, &n);
    CHECK(n == 2 && items[1].op == d.op);
    CHECK(vg_graph_collection(g, "none", &n) == NULL && n == 0);
    /* attrs carry TF's names */
    vg_dtype dt;
    CHECK(vg_op_attr_type_(a.op, "dtype", &dt) && dt == VG_FLOAT);
    /* sticky error: a bad op fails, later builders on its output fail quietly */
    vg_output bad = vg_add(g, a, vg_const_i32(g, 1, NULL), "bad");
    CHECK(bad.op == NULL);
    vg_output worse = vg_identity(g, bad, "worse");
    CHECK(worse.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "bad");
    CHECK(vg_session_new(g, NULL, &st) == NULL);
    vg_graph_free(g);
    /* finalize */
    g = vg_graph_new();
    vg_graph_finalize(g);
    CHECK(vg_const_f32(g, 1, "x").op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
    vg_graph_free(g);
    /* unknown op type */
    g = vg_graph_new();
    vg_op_builder *b = vg_op_builder_new(g, "NoSuchOp", NULL);
    CHECK(vg_op_builder_finish(b) == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_NOT_FOUND);
    vg_graph_free(g);
}

/* The traced stats of node `name` in md, or NULL. */
static const vg_node_stats *node_stats(const vg_run_metadata *md, const char *name) {
    for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
        if (!strcmp(vg_run_metadata_node(md, i)->node_name, name)) return vg_run_metadata_node(md, i);
    return NULL;
}

/* On a session of g with 2 inter- and 2 intra-op threads: 3 runs of fetch[n] to warm up,
 * then 5 traced runs, each checked by check(its metadata, its values); frees g. */
typedef void (*traced_check)(const vg_run_metadata *md, vg_tensor *const *o);
static void warm_then_traced(vg_graph *g, const vg_output *fetch, int n, traced_check check) {
    vg_status st;
    vg_session *s = threaded_session(g, 2);
    vg_tensor *o[2] = {NULL, NULL};
    vg_run_options ro = {0};
    vg_run_metadata *md = vg_run_metadata_new();
    for (int r = 0; r < 8; r++) {
        ro.trace_level = r < 3 ? VG_TRACE_NONE : VG_TRACE_FULL;
        vg_run_metadata_clear(md);
        CHECK_OK(vg_session_run(s, &ro, NULL, NULL, 0, fetch, o, n, NULL, 0, r < 3 ? NULL : md, &st), &st);
        if (r >= 3) check(md, o);
        for (int i = 0; i < n; i++) vg_tensor_free(o[i]);
    }
    vg_run_metadata_free(md);
    vg_session_free(s);
    vg_graph_free(g);
}

/* The two MatMuls a and b of the sum 2 * 256 * 0.125 + 1 ran one at a time. */
static void one_at_a_time(const vg_run_metadata *md, vg_tensor *const *o) {
    CHECK_NEAR(((float *)vg_tensor_data(o[0]))[0], 2 * 256 * 0.125 + 1, 0);
    const vg_node_stats *na = node_stats(md, "a"), *nb = node_stats(md, "b");
    CHECK(na && nb);
    if (na && nb) CHECK(na->end_us <= nb->start_us || nb->end_us <= na->start_us);
}

/* The MatMul m (256 * 0.125) started before the long sleep s1 ended. */
static void beside_long(const vg_run_metadata *md, vg_tensor *const *o) {
    CHECK_NEAR(((float *)vg_tensor_data(o[1]))[0], 256 * 0.125, 0);
    const vg_node_stats *n1 = node_stats(md, "s1"), *nm = node_stats(md, "m");
    CHECK(n1 && nm);
    if (n1 && nm) CHECK(nm->start_us < n1->end_us);
}

/* Two sleep ops sl[0], sl[1] on g (types and names kind[0..3]: type, name, type, name),
 * then x = 0.5 (256x256) * sl[x_after] "x" and *y = 0.25 (256x256) "y"; returns x. */
static vg_output sleeps_and_operands(vg_graph *g, const char *kind[4], int x_after, vg_output sl[2], vg_output *y) {
    int64_t d[2] = {256, 256};
    two_test_ops(g, kind, sl);
    vg_output x = vg_mul(g, vg_const_fill(g, VG_FLOAT, d, 2, 0.5, NULL), sl[x_after], "x");
    *y = vg_const_fill(g, VG_FLOAT, d, 2, 0.25, "y");
    return x;
}

/* With intra-op threads, two independent nodes whose kernels split over the intra-op
 * pool (MatMuls of 256x256) run one after the other, each on every thread, not side by
 * side on the caller and an inter-op helper (executor.c, split_waits). The first runs
 * measure the nodes; the traced runs check the times. */
static void test_core__split_nodes_one_at_a_time(void) {
    vg_graph *g = vg_graph_new();
    /* two sleeps: the caller runs one, a helper the other; the MatMuls become ready
     * when the helper's sleep is done (through the Mul it then runs), while the caller
     * may still sleep or be about to take one */
    vg_output sl[2], y;
    vg_output x = sleeps_and_operands(g, (const char *[4]){"TestSleep", "s1", "TestSleep", "s2"}, 1, sl, &y);
    vg_output a = vg_matmul(g, x, y, false, false, "a"), b = vg_matmul(g, y, x, false, false, "b");
    vg_output sum = vg_add(g, vg_add(g, a, b, NULL), sl[0], "sum");
    warm_then_traced(g, &sum, 1, one_at_a_time);
}

/* A split node does not wait for the caller's long unsplit node (a 200 ms sleep; 30 ms
 * left too little room for the wake-up of a helper on a loaded 2-core machine): a helper
 * runs it meanwhile. The caller and a helper take the two sleeps; the MatMul becomes
 * ready after the 5 ms one. */
static void test_core__split_node_beside_long_node(void) {
    vg_graph *g = vg_graph_new();
    vg_output sl[2], y;
    vg_output x = sleeps_and_operands(g, (const char *[4]){"TestSleep5", "s5", "TestSleep200", "s1"}, 0, sl, &y);
    vg_output m = vg_matmul(g, x, y, false, false, "m");
    vg_output fetch[2] = {sl[1], m};
    warm_then_traced(g, fetch, 2, beside_long);
}

/* ...but while the caller waits in a blocking node (a dequeue), a helper takes such a
 * node when the dequeue needs its result (the enqueue of a split MatMul's output in the
 * same run): no hang. */
static void test_core__blocking_caller_split_node(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {256, 256};
    vg_dtype dt = VG_FLOAT;
    vg_output q = vg_fifo_queue(g, &dt, NULL, 1, -1, "q");
    vg_output x = vg_const_fill(g, VG_FLOAT, d, 2, 0.5, "x");
    vg_output m = vg_matmul(g, x, x, false, false, "m");
    vg_op *enq = vg_queue_enqueue(g, q, &m, 1, "enq");
    vg_op *deq = vg_queue_dequeue(g, q, "deq");
    vg_output got = vg_out(deq, 0);
    vg_session *s = threaded_session(g, 2);
    vg_run_options ro = {0};
    ro.timeout_in_ms = 10000;
    for (int i = 0; i < 50; i++) {
        vg_tensor *o = NULL;
        CHECK_OK(vg_session_run(s, &ro, NULL, NULL, 0, &got, &o, 1, &enq, 1, NULL, &st), &st);
        if (o) CHECK_NEAR(((float *)vg_tensor_data(o))[0], 256 * 0.25, 0);
        vg_tensor_free(o);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_core__feeds_fetches_targets);
    RUN_TEST(test_core__pruning_and_cache);
    RUN_TEST(test_core__variables);
    RUN_TEST(test_core__concurrent_runs);
    RUN_TEST(test_core__bad_feeds_and_names);
    RUN_TEST(test_core__close_cancels);
    RUN_TEST(test_core__parallel_and_trace);
    RUN_TEST(test_core__split_nodes_one_at_a_time);
    RUN_TEST(test_core__split_node_beside_long_node);
    RUN_TEST(test_core__blocking_caller_split_node);
    RUN_TEST(test_core__graph_names_scopes_collections);
    TEST_MAIN_END();
}
