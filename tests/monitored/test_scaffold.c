/* test_scaffold.c - Scaffold, the session creators and SessionManager against the
 * checklist of docs/tf1-semantics.md (items 85-104) and TF's ScaffoldTest /
 * session_manager behaviour. TestNotReady (a test op) reports an uninitialized variable
 * for its first `not_ready_left` runs, to drive wait_for_session's polling. */
#include "test_util.h"
#include "status_fixture.h"
#include "kernels/kernel.h"
#include "hook_test_util.h"
#include "monitored/monitored_internal.h"
#include <math.h>
#include <stdatomic.h>

/* ---- TestNotReady: a 1-D string tensor, ["v"] while not_ready_left > 0, then [] ---- */
static atomic_int not_ready_left;
static atomic_int not_ready_runs;
static vg_code shape_nr(vg_op *op, vg_status *st) {
    int64_t d = -1;
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_STRING, vg_shape_make(&d, 1));
    return VG_OK;
}
static vg_code k_not_ready(vg__kctx *ctx) {
    atomic_fetch_add(&not_ready_runs, 1);
    int64_t n = atomic_fetch_sub(&not_ready_left, 1) > 0 ? 1 : 0;
    vg_tensor *t;
    if (vg__kctx_alloc_output(ctx, 0, VG_STRING, &n, 1, &t)) return vg__kctx_status(ctx)->code;
    if (n) return vg_tensor_set_string(t, 0, "v", 1, vg__kctx_status(ctx));
    return VG_OK;
}
/* TestUninitialized: fails with FAILED_PRECONDITION while uninit_left > 0 (its message
 * mentions "uninitialized" unless other_error), then returns []. */
static atomic_int uninit_left;
static atomic_int uninit_runs;
static bool other_error;
static vg_code k_uninitialized(vg__kctx *ctx) {
    atomic_fetch_add(&uninit_runs, 1);
    if (atomic_fetch_sub(&uninit_left, 1) > 0)
        return vg_status_set(vg__kctx_status(ctx), VG_FAILED_PRECONDITION, "%s",
                             other_error ? "the table is not ready" : "Attempting to use uninitialized value t");
    int64_t n = 0;
    vg_tensor *t;
    if (vg__kctx_alloc_output(ctx, 0, VG_STRING, &n, 1, &t)) return vg__kctx_status(ctx)->code;
    return VG_OK;
}
const vg__op_def vg__ops_test[] = {
    {"TestNotReady", 0, 0, VG__OP_STATEFUL, 0, shape_nr, k_not_ready, NULL},
    {"TestUninitialized", 0, 0, VG__OP_STATEFUL, 0, shape_nr, k_uninitialized, NULL},
    {0},
};
static vg_output not_ready_op(vg_graph *g) {
    vg_op_builder *b = vg_op_builder_new(g, "TestNotReady", "not_ready");
    return vg_out(vg_op_builder_finish(b), 0);
}

/* Runs a 1-D string op; writes "a,b" into buf. Returns the element count (-1 on error). */
static int run_names(vg_session *s, vg_output op, char *buf, size_t len) {
    vg_status st;
    vg_tensor *t = NULL;
    buf[0] = 0;
    if (vg_session_run1(s, op, &t, &st) != VG_OK) {
        fprintf(stderr, "run_names: %s\n", st.msg);
        return -1;
    }
    int n = (int)vg_tensor_num_elements(t);
    size_t o = 0;
    for (int i = 0; i < n && o < len; i++) {
        size_t sl;
        const char *s1 = vg_tensor_string(t, i, &sl);
        o += (size_t)snprintf(buf + o, len - o, "%s%.*s", i ? "," : "", (int)sl, s1);
    }
    vg_tensor_free(t);
    return n;
}
static double run_f(vg_session *s, vg_output o) {
    vg_status st;
    vg_tensor *t = NULL;
    if (vg_session_run1(s, o, &t, &st) != VG_OK) return NAN;
    double v = vg_tensor_scalar(t);
    vg_tensor_free(t);
    return v;
}

/* ------------------------------------------------------------------------ */
/* Scaffold */

/* item 85: nothing is created before finalize (and nothing is added to the graph) */
static void test_scaffold__nothing_created_before_finalize(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "my_var", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    int nops = vg_graph_num_ops(g);
    vg_scaffold *s = vg_scaffold_new(NULL);
    CHECK(s != NULL);
    CHECK(!vg_scaffold_finalized(s));
    CHECK(vg_scaffold_init_op(s) == NULL);
    CHECK(vg_scaffold_ready_op(s).op == NULL);
    CHECK(vg_scaffold_ready_for_local_init_op(s).op == NULL);
    CHECK(vg_scaffold_local_init_op(s) == NULL);
    CHECK(vg_scaffold_summary_op(s).op == NULL);
    CHECK(vg_scaffold_saver(s) == NULL);
    vg_prepare_options po = {0};
    vg__scaffold_prepare_options(s, &po);
    CHECK(po.init_fn == NULL && po.ninit_feeds == 0 && po.init_feeds == NULL);
    CHECK_EQ_INT(vg_graph_num_ops(g), nops);
    int n;
    vg_graph_collection(g, VG_INIT_OP, &n);
    CHECK_EQ_INT(n, 0);
    vg_scaffold_free(s);
    vg_graph_free(g);
}

/* items 86, 87: defaults on a graph with a global and a local variable; 92: the graph is
 * finalized */
static void test_scaffold__defaults_empty_graph(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "my_var", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_get_variable(g, "my_local_var", VG_FLOAT, NULL, 0, vg_init_zeros(), VG_VAR_LOCAL);
    vg_scaffold *s = vg_scaffold_new(NULL);
    CHECK_OK(vg_scaffold_finalize(s, g, &st), &st);
    CHECK(vg_scaffold_finalized(s));
    CHECK(vg_scaffold_init_op(s) != NULL);
    CHECK(vg_scaffold_ready_op(s).op != NULL);
    CHECK(vg_scaffold_ready_for_local_init_op(s).op != NULL);
    CHECK(vg_scaffold_local_init_op(s) != NULL);
    CHECK(vg_scaffold_saver(s) != NULL);
    CHECK(vg_scaffold_summary_op(s).op == NULL); /* no summaries: None, no collection item */
    int n;
    vg_graph_collection(g, VG_SUMMARY_OP, &n);
    CHECK_EQ_INT(n, 0);
    vg_graph_collection(g, VG_SAVERS, &n);
    CHECK_EQ_INT(n, 1);
    CHECK(vg_graph_finalized(g)); /* 92 */
    vg_session *sess = vg_session_new(g, NULL, &st);
    char names[256];
    CHECK_EQ_INT(run_names(sess, vg_scaffold_ready_op(s), names, sizeof names), 2); /* 86 */
    CHECK(!strcmp(names, "my_var,my_local_var"));
    CHECK_EQ_INT(run_names(sess, vg_scaffold_ready_for_local_init_op(s), names, sizeof names), 1);
    CHECK(!strcmp(names, "my_var"));
    vg_op *init = vg_scaffold_init_op(s);
    CHECK_OK(vg_session_run_targets(sess, &init, 1, &st), &st); /* 87 */
    CHECK_EQ_INT(run_names(sess, vg_scaffold_ready_for_local_init_op(s), names, sizeof names), 0);
    CHECK_EQ_INT(run_names(sess, vg_scaffold_ready_op(s), names, sizeof names), 1);
    CHECK(!strcmp(names, "my_local_var"));
    vg_op *local = vg_scaffold_local_init_op(s);
    CHECK_OK(vg_session_run_targets(sess, &local, 1, &st), &st);
    CHECK_EQ_INT(run_names(sess, vg_scaffold_ready_op(s), names, sizeof names), 0);
    vg_session_free(sess);
    /* 92: adding an op now fails */
    CHECK(vg_const_f32(g, 1.0f, "late").op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified");
    vg_scaffold_free(s);
    vg_graph_free(g);
}

/* item 88: a graph without variables: TF's Scaffold makes an empty allow_empty saver
 * (no checkpoint; its save() writes only the .meta). */
static void test_scaffold__defaults_no_variables(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_const_f32(g, 1.0f, "c");
    vg_scaffold *s = vg_scaffold_new(NULL);
    CHECK_OK(vg_scaffold_finalize(s, g, &st), &st);
    CHECK(vg_scaffold_init_op(s) != NULL);
    CHECK(vg_scaffold_ready_op(s).op != NULL);
    CHECK(vg_scaffold_ready_for_local_init_op(s).op != NULL);
    CHECK(vg_scaffold_local_init_op(s) != NULL);
    /* TF's Scaffold: Saver(sharded=True, allow_empty=True), in the savers collection */
    vg_saver *sv = vg_scaffold_saver(s);
    CHECK(sv != NULL);
    int nsavers = 0;
    vg_graph_collection(g, VG_SAVERS, &nsavers);
    CHECK_EQ_INT(nsavers, 1);
    vg_session *sess = vg_session_new(g, NULL, &st);
    char path[256] = "x", dir[64], prefix[128], meta[160];
    tu_mkdtemp(dir, sizeof dir, "scaffold_empty");
    snprintf(prefix, sizeof prefix, "%s/sub/model.ckpt", dir);
    CHECK_OK(vg_saver_save(sv, sess, prefix, 1, path, sizeof path, &st), &st);
    CHECK_EQ_INT(path[0], 0); /* no checkpoint (TF returns None), only the .meta TF exports */
    snprintf(meta, sizeof meta, "%s-1.meta", prefix);
    CHECK(access(meta, F_OK) == 0);
    snprintf(meta, sizeof meta, "%s-1.index", prefix);
    CHECK(access(meta, F_OK) != 0);
    tu_rmrf(dir);
    CHECK_OK(vg_saver_restore(sv, sess, "/nonexistent_dir/model.ckpt-1", &st), &st);
    char names[64];
    CHECK_EQ_INT(run_names(sess, vg_scaffold_ready_op(s), names, sizeof names), 0);
    vg_session_free(sess);
    /* a monitored session over it works (no saver needed) */
    vg_graph_unfinalize(g);
    vg_monitored_session *ms = vg_monitored_session_new(g, &(vg_monitored_options){0}, &st);
    CHECK(ms != NULL);
    if (ms) {
        CHECK_OK(ht_end_free(ms, &st), &st);
    }
    vg_scaffold_free(s);
    vg_graph_free(g);
}

/* item 89: two default scaffolds in one graph share every default piece */
static void test_scaffold__caches_values(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "my_var", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_summary_scalar(g, "s", vg_const_f32(g, 1.0f, NULL));
    vg_scaffold *a = vg_scaffold_new(NULL), *b = vg_scaffold_new(NULL);
    CHECK_OK(vg_scaffold_finalize(a, g, &st), &st);
    CHECK_OK(vg_scaffold_finalize(b, g, &st), &st);
    CHECK(vg_scaffold_init_op(a) == vg_scaffold_init_op(b));
    CHECK(vg_scaffold_ready_op(a).op == vg_scaffold_ready_op(b).op);
    CHECK(vg_scaffold_ready_for_local_init_op(a).op == vg_scaffold_ready_for_local_init_op(b).op);
    CHECK(vg_scaffold_local_init_op(a) == vg_scaffold_local_init_op(b));
    CHECK(vg_scaffold_summary_op(a).op != NULL);
    CHECK(vg_scaffold_summary_op(a).op == vg_scaffold_summary_op(b).op);
    CHECK(vg_scaffold_saver(a) != NULL && vg_scaffold_saver(a) == vg_scaffold_saver(b));
    int n;
    vg_graph_collection(g, VG_READY_OP, &n);
    CHECK_EQ_INT(n, 1);
    vg_scaffold_free(a);
    vg_scaffold_free(b);
    vg_graph_free(g);
}

/* item 90: two savers in the "savers" collection */
static void test_scaffold__raise_error_if_more_than_one_cached_item(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "my_var", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_saver_options so = {0};
    vg_saver *s1 = vg_saver_new(g, &so, &st);
    so.name = "save_2";
    vg_saver *s2 = vg_saver_new(g, &so, &st);
    vg_graph_add_to_collection(g, VG_SAVERS, vg_out(vg_saver_restore_op(s1), 0));
    vg_graph_add_to_collection(g, VG_SAVERS, vg_out(vg_saver_restore_op(s2), 0));
    vg_scaffold *s = vg_scaffold_new(NULL);
    EXPECT_CODE_MSG(vg_scaffold_finalize(s, g, &st), &st, VG_FAILED_PRECONDITION, "More than one item");
    /* likewise for any other default piece */
    vg_graph *g2 = vg_graph_new();
    vg_output c = vg_const_f32(g2, 1.0f, "c");
    vg_graph_add_to_collection(g2, VG_READY_OP, c);
    vg_graph_add_to_collection(g2, VG_READY_OP, c);
    vg_scaffold *s3 = vg_scaffold_new(NULL);
    EXPECT_CODE_MSG(vg_scaffold_finalize(s3, g2, &st), &st, VG_FAILED_PRECONDITION,
                    "More than one item in the collection \"ready_op\"");
    vg_scaffold_free(s3);
    vg_graph_free(g2);
    vg_scaffold_free(s);
    vg_saver_free(s1);
    vg_saver_free(s2);
    vg_graph_free(g);
}

static int init_fn_calls;
static vg_code count_init_fn(void *p, vg_scaffold *sc, vg_session *sess, vg_status *st) {
    init_fn_calls++;
    return VG_OK;
}

/* item 91: explicitly passed pieces are kept verbatim; init_fn is callable */
static void test_scaffold__uses_passed_values(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "my_var", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_op *init = vg_no_op(g, "my_init");
    vg_op *local = vg_no_op(g, "my_local_init");
    vg_output ready = vg_const_f32(g, 1.0f, "my_ready");
    vg_output ready_local = vg_const_f32(g, 2.0f, "my_ready_local");
    vg_output summ = vg_const_string(g, "", "my_summary");
    vg_saver *saver = vg_saver_new(g, NULL, &st);
    vg_output feed = vg_placeholder(g, VG_FLOAT, NULL, 0, "feed");
    vg_tensor *fv = vg_tensor_new_scalar_f32(3.0f, NULL);
    vg_scaffold_options o = {0};
    o.init_op = init;
    o.init_feeds = &feed;
    o.init_feed_values = &fv;
    o.ninit_feeds = 1;
    o.init_fn = count_init_fn;
    o.ready_op = ready;
    o.ready_for_local_init_op = ready_local;
    o.local_init_op = local;
    o.summary_op = summ;
    o.saver = saver;
    vg_scaffold *s = vg_scaffold_new(&o);
    vg_tensor_free(fv); /* the scaffold keeps its own reference */
    CHECK(vg_scaffold_init_op(s) == init); /* before finalize: exactly what was passed */
    CHECK_OK(vg_scaffold_finalize(s, g, &st), &st);
    CHECK(vg_scaffold_init_op(s) == init);
    CHECK(vg_scaffold_ready_op(s).op == ready.op);
    CHECK(vg_scaffold_ready_for_local_init_op(s).op == ready_local.op);
    CHECK(vg_scaffold_local_init_op(s) == local);
    CHECK(vg_scaffold_summary_op(s).op == summ.op);
    CHECK(vg_scaffold_saver(s) == saver);
    int n;
    vg_graph_collection(g, VG_INIT_OP, &n); /* passed pieces are not added to collections */
    CHECK_EQ_INT(n, 0);
    vg_graph_collection(g, VG_SAVERS, &n);
    CHECK_EQ_INT(n, 0);
    vg_prepare_options po = {0};
    vg__scaffold_prepare_options(s, &po);
    CHECK(po.init_fn == count_init_fn);
    CHECK_EQ_INT(po.ninit_feeds, 1);
    CHECK(po.init_feeds[0].op == feed.op);
    CHECK(vg_tensor_scalar(po.init_feed_values[0]) == 3.0);
    init_fn_calls = 0;
    CHECK_OK(po.init_fn(po.init_fn_payload, s, NULL, &st), &st);
    CHECK_EQ_INT(init_fn_calls, 1);
    vg_scaffold_free(s);
    vg_saver_free(saver);
    vg_graph_free(g);
}

/* item 93: copy_from_scaffold (94, TypeError for a non-Scaffold, cannot happen in C) */
static void test_scaffold__new_scaffold_from_scaffold(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "my_var", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_op *init = vg_no_op(g, "my_init"), *init2 = vg_no_op(g, "my_init2");
    vg_op *local = vg_no_op(g, "my_local_init");
    vg_output ready = vg_const_f32(g, 1.0f, "my_ready"), ready2 = vg_const_f32(g, 2.0f, "my_ready2");
    vg_saver *saver = vg_saver_new(g, NULL, &st);
    /* from an empty scaffold: the explicit args */
    vg_scaffold *empty = vg_scaffold_new(NULL);
    vg_scaffold_options o = {0};
    o.init_op = init;
    o.ready_op = ready;
    o.copy_from_scaffold = empty;
    vg_scaffold *a = vg_scaffold_new(&o);
    CHECK(vg_scaffold_init_op(a) == init);
    CHECK(vg_scaffold_ready_op(a).op == ready.op);
    CHECK(vg_scaffold_local_init_op(a) == NULL);
    CHECK(vg_scaffold_saver(a) == NULL);
    /* from an existing one: explicit args win, the rest (init_fn too) is copied */
    vg_scaffold_options base = {0};
    base.init_op = init;
    base.init_fn = count_init_fn;
    base.ready_op = ready;
    base.local_init_op = local;
    base.saver = saver;
    vg_scaffold *src = vg_scaffold_new(&base);
    vg_scaffold_options o2 = {0};
    o2.init_op = init2;
    o2.ready_op = ready2;
    o2.copy_from_scaffold = src;
    vg_scaffold *b = vg_scaffold_new(&o2);
    CHECK(vg_scaffold_init_op(b) == init2);
    CHECK(vg_scaffold_ready_op(b).op == ready2.op);
    CHECK(vg_scaffold_local_init_op(b) == local);
    CHECK(vg_scaffold_saver(b) == saver);
    vg_prepare_options po = {0};
    vg__scaffold_prepare_options(b, &po);
    CHECK(po.init_fn == count_init_fn);
    vg_scaffold_free(a);
    vg_scaffold_free(b);
    vg_scaffold_free(src);
    vg_scaffold_free(empty);
    vg_saver_free(saver);
    vg_graph_free(g);
}

/* ------------------------------------------------------------------------ */
/* SessionManager */

/* v (global, 0), l (local, = v + 1), w (global, 0), and ops to set v */
typedef struct sm_model {
    vg_graph *g;
    vg_output v, l, w;
    vg_output p;          /* float placeholder */
    vg_op *set_v_from_p;  /* v = p */
    vg_op *set_v_10;      /* v = 10 */
    vg_op *init_v;        /* initializes v only */
    vg_op *init_all;      /* global_variables_initializer */
    vg_op *local_init;    /* local_variables_initializer */
    vg_output ready, ready_local;
} sm_model;

static sm_model sm_model_make(void) {
    sm_model m;
    m.g = vg_graph_new();
    vg_variable v = vg_get_variable(m.g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    m.v = v.ref;
    vg_variable l = vg_variable_new(m.g, "l", vg_add(m.g, v.read, vg_const_f32(m.g, 1.0f, NULL), "l_init"),
                                    VG_VAR_LOCAL);
    m.l = l.ref;
    m.w = vg_get_variable(m.g, "w", VG_FLOAT, NULL, 0, vg_init_zeros(), 0).ref;
    m.p = vg_placeholder(m.g, VG_FLOAT, NULL, 0, "p");
    m.set_v_from_p = vg_assign(m.g, m.v, m.p, true, "set_v").op;
    m.set_v_10 = vg_assign(m.g, m.v, vg_const_f32(m.g, 10.0f, NULL), true, "set_v_10").op;
    m.init_v = vg_variables_initializer(m.g, &m.v, 1, "init_v");
    m.init_all = vg_global_variables_initializer(m.g);
    m.local_init = vg_local_variables_initializer(m.g);
    m.ready = vg_report_uninitialized_variables(m.g, NULL, 0, NULL);
    int n;
    const vg_output *globals = vg_graph_collection(m.g, VG_GLOBAL_VARIABLES, &n);
    m.ready_local = vg_report_uninitialized_variables(m.g, globals, n, "ready_local");
    return m;
}

static vg_session_manager *sm_new(sm_model *m, bool local, double recovery_wait) {
    vg_session_manager_options o = {0};
    if (local) {
        o.local_init_op = m->local_init;
        o.ready_for_local_init_op = m->ready_local;
    }
    o.ready_op = m->ready;
    if (recovery_wait >= 0) o.recovery_wait_secs = recovery_wait;
    return vg_session_manager_new(m->g, &o, NULL);
}

typedef struct init_probe {
    sm_model *m;
    int calls;
    double v_seen;
} init_probe;
static vg_code probe_init_fn(void *p, vg_scaffold *sc, vg_session *sess, vg_status *st) {
    init_probe *ip = p;
    ip->calls++;
    ip->v_seen = run_f(sess, ip->m->v);
    return vg_session_run_targets(sess, &ip->m->set_v_10, 1, st);
}

/* Saves v = value as <dir>/model.ckpt-<step> with saver (in its own session). */
static void save_v(sm_model *m, vg_saver *saver, const char *dir, float value, int64_t step) {
    vg_status st;
    char prefix[200];
    vg_session *s = vg_session_new(m->g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &m->init_all, 1, &st), &st);
    vg_tensor *t = vg_tensor_new_scalar_f32(value, NULL);
    CHECK_OK(vg_session_run(s, NULL, &m->p, &t, 1, NULL, NULL, 0, &m->set_v_from_p, 1, NULL, &st), &st);
    vg_tensor_free(t);
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
    CHECK_OK(vg_saver_save(saver, s, prefix, step, NULL, 0, &st), &st);
    vg_session_free(s);
}

/* item 98: no checkpoint: init_op (with its feed dict), then init_fn, then local_init_op */
static void test_session_manager__prepare_session_initializes(void) {
    vg_status st;
    sm_model m = sm_model_make();
    vg_session_manager *sm = sm_new(&m, true, -1);
    /* init_op = "v = p" after initializing everything: built as a control dependency */
    vg_graph_push_control_deps(m.g, &m.init_all, 1);
    vg_op *init_then_set = vg_assign(m.g, m.v, m.p, true, "init_then_set").op;
    vg_graph_pop_control_deps(m.g);
    vg_tensor *three = vg_tensor_new_scalar_f32(3.0f, NULL);
    init_probe ip = {&m, 0, 0};
    vg_prepare_options po = {0};
    po.init_op = init_then_set;
    po.init_feeds = &m.p;
    po.init_feed_values = &three;
    po.ninit_feeds = 1;
    po.init_fn = probe_init_fn;
    po.init_fn_payload = &ip;
    vg_session *s = vg_session_manager_prepare_session(sm, &po, &st);
    CHECK(s != NULL);
    if (s) {
        CHECK_EQ_INT(ip.calls, 1);
        CHECK_NEAR(ip.v_seen, 3.0, 0);     /* init_op (fed 3) ran before init_fn */
        CHECK_NEAR(run_f(s, m.v), 10.0, 0);
        CHECK_NEAR(run_f(s, m.l), 11.0, 0); /* local_init_op ran after init_fn */
        vg_session_free(s);
    }
    vg_tensor_free(three);
    vg_session_manager_free(sm);
    vg_graph_free(m.g);
}

/* items 99, 104: a restorable checkpoint: no init_op, no init_fn, but local_init_op; the
 * saver adopts the state file's list (existing checkpoints only) */
static void test_session_manager__prepare_session_restores(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "sm");
    sm_model m = sm_model_make();
    vg_saver_options so = {0};
    vg_saver *writer = vg_saver_new(m.g, &so, &st);
    so.name = "save_b";
    vg_saver *reader = vg_saver_new(m.g, &so, &st);
    save_v(&m, writer, dir, 5.0f, 1);
    save_v(&m, writer, dir, 6.0f, 2);
    save_v(&m, writer, dir, 7.0f, 3);
    char first[200];
    snprintf(first, sizeof first, "%s/model.ckpt-1.index", dir);
    CHECK(unlink(first) == 0); /* the oldest is gone: not adopted */
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(reader), 0);
    vg_session_manager *sm = sm_new(&m, true, -1);
    init_probe ip = {&m, 0, 0};
    vg_prepare_options po = {0};
    po.init_op = m.init_all;
    po.init_fn = probe_init_fn;
    po.init_fn_payload = &ip;
    po.saver = reader;
    po.checkpoint_dir = dir;
    vg_session *s = vg_session_manager_prepare_session(sm, &po, &st);
    CHECK(s != NULL);
    if (s) {
        CHECK_EQ_INT(ip.calls, 0);          /* 99: no init_fn */
        CHECK_NEAR(run_f(s, m.v), 7.0, 0);  /* restored, init_op (v = 0) did not run */
        CHECK_NEAR(run_f(s, m.w), 0.0, 0);
        CHECK_NEAR(run_f(s, m.l), 8.0, 0);  /* local_init_op ran after the restore */
        vg_session_free(s);
    }
    /* 104 */
    vg_checkpoint_state *cs = NULL;
    CHECK_OK(vg_get_checkpoint_state(dir, &cs, &st), &st);
    CHECK_EQ_INT(vg_saver_num_last_checkpoints(reader), 2);
    if (cs && cs->n_all == 3 && vg_saver_num_last_checkpoints(reader) == 2) {
        CHECK(!strcmp(vg_saver_last_checkpoint(reader, 0), cs->all_model_checkpoint_paths[1]));
        CHECK(!strcmp(vg_saver_last_checkpoint(reader, 1), cs->all_model_checkpoint_paths[2]));
    }
    vg_checkpoint_state_free(cs);
    /* recover_session: restored and ready */
    bool ok = false;
    s = vg_session_manager_recover_session(sm, &po, &ok, &st);
    CHECK(s != NULL && ok);
    if (s) CHECK_NEAR(run_f(s, m.v), 7.0, 0);
    vg_session_free(s);
    /* checkpoint_filename_with_path restores that checkpoint */
    char two[200];
    snprintf(two, sizeof two, "%s/model.ckpt-2", dir);
    po.checkpoint_dir = NULL;
    po.checkpoint_filename_with_path = two;
    s = vg_session_manager_prepare_session(sm, &po, &st);
    CHECK(s != NULL);
    if (s) CHECK_NEAR(run_f(s, m.v), 6.0, 0);
    vg_session_free(s);
    vg_session_manager_free(sm);
    vg_saver_free(writer);
    vg_saver_free(reader);
    vg_graph_free(m.g);
    tu_rmrf(dir);
}

/* §8 readiness test: a ready op failing with FAILED_PRECONDITION "...uninitialized..."
 * means "not ready" (wait_for_session keeps polling); any other FAILED_PRECONDITION is
 * raised */
static void test_session_manager__ready_op_failing_uninitialized(void) {
    vg_status st;
    sm_model m = sm_model_make();
    vg_op_builder *b = vg_op_builder_new(m.g, "TestUninitialized", "uninit_ready");
    vg_output ready = vg_out(vg_op_builder_finish(b), 0);
    vg_session_manager_options o = {0};
    o.ready_op = ready;
    o.recovery_wait_secs = 0.02;
    vg_session_manager *sm = vg_session_manager_new(m.g, &o, NULL);
    vg_prepare_options po = {0};
    po.max_wait_secs = 5;
    other_error = false;
    atomic_store(&uninit_left, 2);
    atomic_store(&uninit_runs, 0);
    vg_session *s = vg_session_manager_wait_for_session(sm, &po, &st);
    CHECK(s != NULL);
    CHECK_EQ_INT(atomic_load(&uninit_runs), 3);
    vg_session_free(s);
    /* prepare_session reports the error text as the reason */
    atomic_store(&uninit_left, 1);
    po.init_op = m.init_all;
    CHECK(vg_session_manager_prepare_session(sm, &po, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "Init operations did not make model ready");
    CHECK_STR_CONTAINS(st.msg, "Attempting to use uninitialized value t");
    /* another FAILED_PRECONDITION is raised as is */
    other_error = true;
    atomic_store(&uninit_left, 1);
    po.init_op = NULL;
    CHECK(vg_session_manager_wait_for_session(sm, &po, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "the table is not ready");
    other_error = false;
    vg_session_manager_free(sm);
    vg_graph_free(m.g);
}

/* recover_session without a checkpoint: a session, not initialized, init_op not run;
 * local_init_op is still tried (TF: "Always try to run local_init_op") */
static void test_session_manager__recover_session_without_checkpoint(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "sm");
    sm_model m = sm_model_make();
    vg_saver *saver = vg_saver_new(m.g, NULL, &st);
    vg_session_manager *sm = sm_new(&m, true, -1);
    vg_prepare_options po = {0};
    po.init_op = m.init_all;
    po.saver = saver;
    po.checkpoint_dir = dir;
    bool ok = true;
    vg_session *s = vg_session_manager_recover_session(sm, &po, &ok, &st);
    CHECK(s != NULL);
    CHECK(!ok);
    if (s) {
        char names[64];
        CHECK_EQ_INT(run_names(s, m.ready, names, sizeof names), 3);
    }
    vg_session_free(s);
    vg_session_manager_free(sm);
    /* a local init op that is ready to run (no ready_for_local_init_op) runs */
    vg_variable l2 = vg_get_variable(m.g, "l2", VG_FLOAT, NULL, 0, vg_init_constant(2.0), VG_VAR_LOCAL);
    vg_session_manager_options o = {0};
    o.local_init_op = vg_variables_initializer(m.g, &l2.ref, 1, "init_l2");
    o.ready_op = m.ready;
    sm = vg_session_manager_new(m.g, &o, NULL);
    ok = true;
    s = vg_session_manager_recover_session(sm, &po, &ok, &st);
    CHECK(s != NULL);
    CHECK(!ok);
    if (s) CHECK_NEAR(run_f(s, l2.ref), 2.0, 0);
    vg_session_free(s);
    vg_session_manager_free(sm);
    vg_saver_free(saver);
    vg_graph_free(m.g);
    tu_rmrf(dir);
}

/* item 100: no restore and nothing to initialize with */
static void test_session_manager__prepare_session_without_init(void) {
    vg_status st;
    sm_model m = sm_model_make();
    vg_session_manager *sm = sm_new(&m, false, -1);
    vg_prepare_options po = {0};
    CHECK(vg_session_manager_prepare_session(sm, &po, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION,
                    "Model is not initialized and no init_op or init_fn or local_init_op was given");
    vg_session_manager_free(sm);
    vg_graph_free(m.g);
}

/* item 101: ready_op still reports a variable after init -> "did not make model ready",
 * naming it; the same for ready_for_local_init_op */
static void test_session_manager__prepare_session_not_ready(void) {
    vg_status st;
    sm_model m = sm_model_make();
    vg_session_manager_options smo = {0};
    vg_output vw[2] = {m.v, m.w};
    smo.ready_op = vg_report_uninitialized_variables(m.g, vw, 2, "ready_vw");
    vg_session_manager *sm = vg_session_manager_new(m.g, &smo, NULL);
    vg_prepare_options po = {0};
    po.init_op = m.init_v; /* w stays uninitialized */
    CHECK(vg_session_manager_prepare_session(sm, &po, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "Init operations did not make model ready");
    CHECK_STR_CONTAINS(st.msg, "Variables not initialized: w");
    vg_session_manager_free(sm);
    sm = sm_new(&m, true, -1);
    po.init_op = m.init_v;
    CHECK(vg_session_manager_prepare_session(sm, &po, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "Init operations did not make model ready for local_init");
    CHECK_STR_CONTAINS(st.msg, "Variables not initialized: w");
    vg_session_manager_free(sm);
    vg_graph_free(m.g);
}

/* item 102: wait_for_session on a model that never becomes ready: with max_wait_secs
 * smaller than recovery_wait_secs TF gives up at once (time left - recovery wait < 0);
 * with a short recovery wait it polls until max_wait_secs */
static void test_session_manager__wait_for_session_deadline(void) {
    vg_status st;
    sm_model m = sm_model_make();
    vg_session_manager *sm = sm_new(&m, false, 30.0);
    vg_prepare_options po = {0};
    po.max_wait_secs = 1.0;
    double t0 = ht_wall();
    CHECK(vg_session_manager_wait_for_session(sm, &po, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_DEADLINE_EXCEEDED, "Session was not ready after waiting 1 secs.");
    CHECK(ht_wall() - t0 < 0.5); /* no sleep */
    vg_session_manager_free(sm);
    sm = sm_new(&m, false, 0.05);
    po.max_wait_secs = 0.3;
    t0 = ht_wall();
    CHECK(vg_session_manager_wait_for_session(sm, &po, &st) == NULL);
    double took = ht_wall() - t0;
    CHECK_EQ_INT(st.code, VG_DEADLINE_EXCEEDED);
    CHECK(took >= 0.2 && took < 2.0);
    vg_session_manager_free(sm);
    vg_graph_free(m.g);
}

/* item 103: wait_for_session returns as soon as local init succeeds and ready_op is empty
 * (TestNotReady reports "v" for its first two runs) */
static void test_session_manager__wait_for_session_ready(void) {
    vg_status st;
    sm_model m = sm_model_make();
    vg_output nr = not_ready_op(m.g);
    vg_session_manager_options o = {0};
    o.local_init_op = m.init_all; /* a worker's local init: here the globals */
    o.ready_op = nr;
    o.recovery_wait_secs = 0.05;
    vg_session_manager *sm = vg_session_manager_new(m.g, &o, NULL);
    atomic_store(&not_ready_left, 2);
    atomic_store(&not_ready_runs, 0);
    vg_prepare_options po = {0};
    po.max_wait_secs = 5;
    double t0 = ht_wall();
    vg_session *s = vg_session_manager_wait_for_session(sm, &po, &st);
    double took = ht_wall() - t0;
    CHECK(s != NULL);
    CHECK_EQ_INT(atomic_load(&not_ready_runs), 3);
    CHECK(took >= 0.09 && took < 2.0);
    if (s) CHECK_NEAR(run_f(s, m.w), 0.0, 0); /* local init ran in the returned session */
    vg_session_free(s);
    /* ready at once: returns without waiting */
    atomic_store(&not_ready_left, 0);
    o.recovery_wait_secs = 30;
    vg_session_manager_free(sm);
    sm = vg_session_manager_new(m.g, &o, NULL);
    t0 = ht_wall();
    s = vg_session_manager_wait_for_session(sm, &po, &st);
    CHECK(s != NULL);
    CHECK(ht_wall() - t0 < 1.0);
    vg_session_free(s);
    vg_session_manager_free(sm);
    vg_graph_free(m.g);
}

/* ------------------------------------------------------------------------ */
/* Session creators */

/* item 95: ChiefSessionCreator over a directory with a checkpoint restores it and runs
 * neither init_op nor init_fn */
static void test_session_creator__chief_restores(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "cr");
    sm_model m = sm_model_make();
    init_probe ip = {&m, 0, 0};
    vg_scaffold_options so = {0};
    so.init_fn = probe_init_fn;
    so.init_fn_payload = &ip;
    vg_scaffold *sc = vg_scaffold_new(&so);
    CHECK_OK(vg_scaffold_finalize(sc, m.g, &st), &st);
    /* no checkpoint yet: init_op + init_fn */
    vg_session_creator c = ht_creator(m.g, sc, dir, NULL, -1, true);
    vg_session *s = c.create_session(c.payload, &st);
    CHECK(s != NULL);
    CHECK_EQ_INT(ip.calls, 1);
    if (s) {
        CHECK_NEAR(run_f(s, m.v), 10.0, 0);
        char prefix[200];
        snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
        CHECK_OK(vg_saver_save(vg_scaffold_saver(sc), s, prefix, 1, NULL, 0, &st), &st);
        vg_tensor *t = vg_tensor_new_scalar_f32(4.0f, NULL);
        CHECK_OK(vg_session_run(s, NULL, &m.p, &t, 1, NULL, NULL, 0, &m.set_v_from_p, 1, NULL, &st), &st);
        vg_tensor_free(t);
        vg_session_free(s);
    }
    s = c.create_session(c.payload, &st);
    CHECK(s != NULL);
    CHECK_EQ_INT(ip.calls, 1); /* restored: no init_fn */
    if (s) {
        CHECK_NEAR(run_f(s, m.v), 10.0, 0);
        CHECK_NEAR(run_f(s, m.l), 11.0, 0);
    }
    vg_session_free(s);
    c.destroy(c.payload);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
    tu_rmrf(dir);
}

/* item 96: checkpoint_dir and checkpoint_filename_with_path together */
static void test_session_creator__chief_dir_and_filename(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "cr");
    sm_model m = sm_model_make();
    vg_session_creator c = ht_creator(m.g, NULL, dir, "/tmp/vg_no_such/model.ckpt-1", -1, true);
    CHECK(c.create_session != NULL);
    vg_session *s = c.create_session(c.payload, &st);
    CHECK(s == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT,
                    "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
    c.destroy(c.payload);
    /* through a SingularMonitoredSession: fails at construction */
    vg_graph_unfinalize(m.g);
    vg_singular_options o = {0};
    o.checkpoint_dir = dir;
    o.checkpoint_filename_with_path = "/tmp/vg_no_such/model.ckpt-1";
    vg_monitored_session *ms = vg_singular_monitored_session_new(m.g, &o, &st);
    CHECK(ms == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    vg_graph_free(m.g);
    tu_rmrf(dir);
}

/* item 97: MonitoredTrainingSession's max_wait_secs default (7200 s, its {0}:
 * test_options_zero__mts_resolution). A worker creator never initialises: on a model
 * nobody initialises it fails with DEADLINE_EXCEEDED. */
static void test_session_creator__worker(void) {
    vg_status st;
    sm_model m = sm_model_make();
    init_probe ip = {&m, 0, 0};
    vg_scaffold_options so = {0};
    so.init_fn = probe_init_fn;
    so.init_fn_payload = &ip;
    vg_scaffold *sc = vg_scaffold_new(&so);
    vg_session_creator c = ht_creator(m.g, sc, NULL, NULL, 1.0, false);
    double t0 = ht_wall();
    vg_session *s = c.create_session(c.payload, &st);
    CHECK(s == NULL);
    CHECK_EQ_INT(st.code, VG_DEADLINE_EXCEEDED);
    CHECK(ht_wall() - t0 < 0.5); /* 1 s < recovery_wait_secs (30): no wait */
    CHECK_EQ_INT(ip.calls, 0);
    c.destroy(c.payload);
    vg_scaffold_free(sc);
    vg_graph_free(m.g);
}

int main(void) {
    RUN_TEST(test_scaffold__nothing_created_before_finalize);
    RUN_TEST(test_scaffold__defaults_empty_graph);
    RUN_TEST(test_scaffold__defaults_no_variables);
    RUN_TEST(test_scaffold__caches_values);
    RUN_TEST(test_scaffold__raise_error_if_more_than_one_cached_item);
    RUN_TEST(test_scaffold__uses_passed_values);
    RUN_TEST(test_scaffold__new_scaffold_from_scaffold);
    RUN_TEST(test_session_manager__prepare_session_initializes);
    RUN_TEST(test_session_manager__prepare_session_restores);
    RUN_TEST(test_session_manager__ready_op_failing_uninitialized);
    RUN_TEST(test_session_manager__recover_session_without_checkpoint);
    RUN_TEST(test_session_manager__prepare_session_without_init);
    RUN_TEST(test_session_manager__prepare_session_not_ready);
    RUN_TEST(test_session_manager__wait_for_session_deadline);
    RUN_TEST(test_session_manager__wait_for_session_ready);
    RUN_TEST(test_session_creator__chief_restores);
    RUN_TEST(test_session_creator__chief_dir_and_filename);
    RUN_TEST(test_session_creator__worker);
    TEST_MAIN_END();
}
