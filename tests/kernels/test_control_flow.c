/* test_control_flow.c - tf.while_loop / tf.cond / tf.case built from C callbacks and
 * run by the frame executor: values against hand computation, nesting, deadness,
 * parallel_iterations, maximum_iterations, shape invariants, cancellation by timeout
 * and by closing the session, GraphDef export/import round trip, independent body
 * nodes running at once on the inter-op threads. */
#include "test_util.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static int64_t run_i32(vg_graph *g, vg_output y, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    vg_tensor *t = NULL;
    int64_t v = -999999;
    if (s && vg_session_run1(s, y, &t, st) == VG_OK) v = *(int32_t *)vg_tensor_data(t);
    else fprintf(stderr, "run failed: %s\n", st->msg);
    vg_tensor_free(t);
    vg_session_free(s);
    return v;
}

/* ---- sum 0..9 ------------------------------------------------------------ */
CF_COND(lt10, vg_less(g, v[0], vg_const_i32(g, 10, "ten"), NULL))
static vg_code sum_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, "one"), NULL);
    o[1] = vg_add(g, v[1], v[0], NULL);
    return VG_OK;
}

static void test_while_sum(void) {
    int pis[3] = {1, 2, 32};
    for (int k = 0; k < 3; k++) {
        vg_graph *g = vg_graph_new();
        vg_status st;
        vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_i32(g, 0, "s")}, o[2];
        CHECK_OK(vg_while_loop(g, lt10, sum_body, NULL, v, 2, NULL, pis[k], vg_out(NULL, 0), NULL, o, &st), &st);
        CHECK_EQ_INT(run_i32(g, o[0], &st), 10);
        CHECK_EQ_INT(run_i32(g, o[1], &st), 45);
        /* TF's op names */
        CHECK(vg_graph_op_by_name(g, "while/Enter") && vg_graph_op_by_name(g, "while/Enter_1"));
        CHECK(vg_graph_op_by_name(g, "while/Merge") && vg_graph_op_by_name(g, "while/Switch"));
        CHECK(vg_graph_op_by_name(g, "while/Identity") && vg_graph_op_by_name(g, "while/NextIteration"));
        CHECK(vg_graph_op_by_name(g, "while/Exit_1") && vg_graph_op_by_name(g, "while/LoopCond"));
        const char *fname = NULL;
        size_t len = 0;
        CHECK(vg_op_attr_string(vg_graph_op_by_name(g, "while/Enter"), "frame_name", &fname, &len));
        CHECK(len == strlen("while/while_context") && !memcmp(fname, "while/while_context", len));
        int64_t pi = 0;
        CHECK(vg_op_attr_int(vg_graph_op_by_name(g, "while/Enter"), "parallel_iterations", &pi) && pi == pis[k]);
        vg_graph_free(g);
    }
}

/* ---- a captured outer tensor, a fed bound --------------------------------- */
typedef struct cap {
    vg_output bound, step;
} cap;
CF_COND(lt_bound, vg_less(g, v[0], ((cap *)u)->bound, NULL))
CF_BODY1(add_step, vg_add(g, v[0], ((cap *)u)->step, NULL))

static void test_while_capture_and_feed(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    cap c = {vg_placeholder(g, VG_INT32, NULL, 0, "bound"), vg_const_i32(g, 3, "step")};
    vg_output v = vg_const_i32(g, 0, "x"), o;
    CHECK_OK(vg_while_loop(g, lt_bound, add_step, &c, &v, 1, NULL, 10, vg_out(NULL, 0), "loop", &o, &st), &st);
    /* the outer tensors went in through Enters with is_constant */
    int nconst = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++) {
        vg_op *op = vg_graph_op(g, i);
        bool b = false;
        if (!strcmp(vg_op_type(op), "Enter") && vg_op_attr_bool(op, "is_constant", &b) && b) nconst++;
    }
    CHECK_EQ_INT(nconst, 2);
    vg_session *s = vg_session_new(g, NULL, &st);
    int32_t bounds[3] = {0, 10, 11};
    int32_t want[3] = {0, 12, 12};
    for (int k = 0; k < 3; k++) {
        vg_tensor *b = vg_tensor_new(VG_INT32, NULL, 0, &st), *t = NULL;
        *(int32_t *)vg_tensor_data(b) = bounds[k];
        CHECK_OK(vg_session_run(s, NULL, &c.bound, &b, 1, &o, &t, 1, NULL, 0, NULL, &st), &st);
        if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), want[k]);
        vg_tensor_free(t);
        vg_tensor_free(b);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- nested loops: sum over i<3, j<4 of (i*4+j) ------------------------------ */
CF_COND(lt4, vg_less(g, v[0], vg_const_i32(g, 4, NULL), NULL))
CF_COND(lt3, vg_less(g, v[0], vg_const_i32(g, 3, NULL), NULL))
typedef struct outer_i {
    vg_output i;
} outer_i;
static vg_code inner_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    outer_i *oi = u;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
    vg_output val = vg_add(g, vg_mul(g, oi->i, vg_const_i32(g, 4, NULL), NULL), v[0], NULL);
    o[1] = vg_add(g, v[1], val, NULL);
    return VG_OK;
}
static vg_code outer_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    outer_i oi = {v[0]};
    vg_output iv[2] = {vg_const_i32(g, 0, "j"), v[1]}, io[2];
    vg_code rc = vg_while_loop(g, lt4, inner_body, &oi, iv, 2, NULL, 10, vg_out(NULL, 0), "inner", io, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
    o[1] = io[1];
    return VG_OK;
}

/* Builds a while loop over (i = 0, acc = 0) named acc_name with cond c, body b and
 * parallel_iterations par, and checks acc's final value and that the graph has op_name. */
static void check_while_acc(vg_while_cond_fn c, vg_while_body_fn b, const char *acc_name, int par, int want,
                            const char *op_name) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_i32(g, 0, acc_name)}, o[2];
    CHECK_OK(vg_while_loop(g, c, b, NULL, v, 2, NULL, par, vg_out(NULL, 0), NULL, o, &st), &st);
    CHECK_EQ_INT(run_i32(g, o[1], &st), want);
    CHECK(vg_graph_op_by_name(g, op_name) != NULL);
    vg_graph_free(g);
}

static void test_nested_while(void) {
    check_while_acc(lt3, outer_body, "acc", 10, 66, "while/inner/Enter"); /* 0 + 1 + ... + 11 */
}

/* ---- cond ------------------------------------------------------------------ */
typedef struct ab {
    vg_output a, b;
} ab;
CF_BRANCH1(br_add, vg_add(g, ((ab *)u)->a, ((ab *)u)->b, NULL))
CF_BRANCH1(br_mul, vg_mul(g, ((ab *)u)->a, vg_const_i32(g, 10, NULL), NULL))

/* Runs o on s with the bool p fed false (k = 0), then true (k = 1), checking its int32
 * value is want[k]; with untaken, also that fetching the tensor named untaken[k] (of the
 * branch not taken) fails as dead. */
static void check_cond_runs(vg_session *s, vg_graph *g, vg_output p, vg_output o, const int32_t want[2],
                            const char *const untaken[2]) {
    vg_status st;
    for (int k = 0; k < 2; k++) {
        vg_tensor *pv = vg_tensor_new(VG_BOOL, NULL, 0, &st), *t = NULL;
        *(bool *)vg_tensor_data(pv) = k == 1;
        CHECK_OK(vg_session_run(s, NULL, &p, &pv, 1, &o, &t, 1, NULL, 0, NULL, &st), &st);
        if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), want[k]);
        vg_tensor_free(t);
        if (untaken) { /* fetching a tensor of the untaken branch: an error, not a crash */
            vg_output inner = vg_graph_output_by_name(g, untaken[k], &st);
            CHECK(inner.op != NULL);
            CHECK_STATUS(vg_session_run(s, NULL, &p, &pv, 1, &inner, &t, 1, NULL, 0, NULL, &st), &st,
                         VG_INVALID_ARGUMENT, "dead");
        }
        vg_tensor_free(pv);
    }
}

static void test_cond(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output p = vg_placeholder(g, VG_BOOL, NULL, 0, "p");
    ab x = {vg_const_i32(g, 3, "a"), vg_const_i32(g, 4, "b")};
    vg_output o;
    CHECK_OK(vg_cond(g, p, br_add, br_mul, &x, 1, &o, NULL, &st), &st);
    CHECK(vg_graph_op_by_name(g, "cond/Switch") && vg_graph_op_by_name(g, "cond/switch_t") &&
          vg_graph_op_by_name(g, "cond/switch_f") && vg_graph_op_by_name(g, "cond/pred_id") &&
          vg_graph_op_by_name(g, "cond/Merge"));
    vg_session *s = vg_session_new(g, NULL, &st);
    check_cond_runs(s, g, p, o, (const int32_t[]){30, 7}, (const char *const[]){"cond/AddV2:0", "cond/Mul:0"});
    vg_session_free(s);
    /* a non-bool predicate */
    CHECK_CODE(vg_cond(g, x.a, br_add, br_mul, &x, 1, &o, NULL, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* ---- cond inside while: sum over i<10 of (i < 5 ? 1 : 2) --------------------- */
typedef struct ivar {
    vg_output i;
} ivar;
CF_BRANCH1(one_br, vg_const_i32(g, 1, NULL))
CF_BRANCH1(two_br, vg_const_i32(g, 2, NULL))
static vg_code cond_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_status st;
    vg_output c;
    vg_code rc = vg_cond(g, vg_less(g, v[0], vg_const_i32(g, 5, NULL), NULL), one_br, two_br, NULL, 1, &c, NULL, &st);
    if (rc != VG_OK) return rc;
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
    o[1] = vg_add(g, v[1], c, NULL);
    return VG_OK;
}

static void test_cond_in_while(void) { check_while_acc(lt10, cond_body, "s", 4, 15, "while/cond/Merge"); }

/* ---- a while loop on the untaken side of a cond ---------------------------------- */
static vg_code loop_br(vg_graph *g, void *u, vg_output *o) {
    (void)u;
    vg_status st;
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_i32(g, 0, "s")}, r[2];
    vg_code rc = vg_while_loop(g, lt10, sum_body, NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL, r, &st);
    o[0] = r[1];
    return rc;
}

static void test_while_in_cond(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output p = vg_placeholder(g, VG_BOOL, NULL, 0, "p"), o;
    CHECK_OK(vg_cond(g, p, loop_br, two_br, NULL, 1, &o, NULL, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    check_cond_runs(s, g, p, o, (const int32_t[]){2, 45}, NULL);
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- tf.case ------------------------------------------------------------------ */

static void test_case(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output x = vg_placeholder(g, VG_INT32, NULL, 0, "x"), o;
    vg_output preds[2] = {vg_less(g, x, vg_const_i32(g, 0, NULL), NULL),
                          vg_less(g, x, vg_const_i32(g, 10, NULL), NULL)};
    vg_cond_branch_fn fns[2] = {kt_i32_branch, kt_i32_branch};
    void *users[2] = {(void *)(intptr_t)100, (void *)(intptr_t)200};
    CHECK_OK(vg_case(g, preds, fns, users, 2, kt_i32_branch, (void *)(intptr_t)300, 1, &o, NULL, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    int32_t xs[3] = {-5, 5, 50}, want[3] = {100, 200, 300};
    for (int k = 0; k < 3; k++) {
        vg_tensor *xv = vg_tensor_new(VG_INT32, NULL, 0, &st), *t = NULL;
        *(int32_t *)vg_tensor_data(xv) = xs[k];
        CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &o, &t, 1, NULL, 0, NULL, &st), &st);
        if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), want[k]);
        vg_tensor_free(t);
        vg_tensor_free(xv);
    }
    vg_session_free(s);
    /* exclusive: two true preds fail the run */
    vg_output oe;
    CHECK_OK(vg_case_exclusive(g, preds, fns, users, 2, kt_i32_branch, (void *)(intptr_t)300, 1, &oe, NULL, &st), &st);
    s = vg_session_new(g, NULL, &st);
    for (int k = 0; k < 3; k++) {
        vg_tensor *xv = vg_tensor_new(VG_INT32, NULL, 0, &st), *t = NULL;
        *(int32_t *)vg_tensor_data(xv) = xs[k];
        vg_code rc = vg_session_run(s, NULL, &x, &xv, 1, &oe, &t, 1, NULL, 0, NULL, &st);
        if (k == 0) { /* -5 < 0 and -5 < 10 */
            CHECK_STATUS(rc, &st, VG_INVALID_ARGUMENT, "assertion failed");
        } else {
            CHECK_OK(rc, &st);
            if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), want[k]);
        }
        vg_tensor_free(t);
        vg_tensor_free(xv);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- maximum_iterations ------------------------------------------------------ */
CF_COND(always, vg_const_bool(g, true, NULL))
CF_BODY1(inc, vg_add(g, v[0], vg_const_i32(g, 2, NULL), NULL))

static void test_max_iterations(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v = vg_const_i32(g, 1, "x"), o;
    CHECK_OK(vg_while_loop(g, always, inc, NULL, &v, 1, NULL, 10, vg_const_i32(g, 7, "max"), NULL, &o, &st), &st);
    CHECK_EQ_INT(run_i32(g, o, &st), 15);
    CHECK(vg_graph_op_by_name(g, "while/iteration_counter") != NULL);
    /* an ordinary condition still ends it first */
    vg_output w = vg_const_i32(g, 0, "w"), wo;
    CHECK_OK(vg_while_loop(g, lt10, inc, NULL, &w, 1, NULL, 10, vg_const_i32(g, 100, NULL), NULL, &wo, &st), &st);
    CHECK_EQ_INT(run_i32(g, wo, &st), 10);
    vg_graph_free(g);
}

/* ---- shape invariants ---------------------------------------------------------- */
CF_COND(lt_f,
        vg_less(g, vg_sum(g, v[0], vg_const_i32_vec(g, (int32_t[]){0}, 1, NULL), false, NULL), vg_const_f32(g, 100.0f, NULL), NULL))
static vg_code grow(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_output axis = vg_const_i32(g, 0, NULL);
    vg_output parts[2] = {v[0], v[0]};
    o[0] = vg_concat(g, parts, 2, axis, NULL);
    return VG_OK;
}

static vg_output f32_vec(vg_graph *g, const float *v, int n, const char *name) {
    vg_status st;
    int64_t d = n;
    vg_tensor *t = vg_tensor_new(VG_FLOAT, &d, 1, &st);
    memcpy(vg_tensor_data(t), v, sizeof(float) * (size_t)n);
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

static void test_shape_invariants(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v = f32_vec(g, (float[]){1, 2}, 2, "xs"), o;
    CHECK_CODE(vg_while_loop(g, lt_f, grow, NULL, &v, 1, NULL, 10, vg_out(NULL, 0), NULL, &o, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "'xs'");
    CHECK_STR_CONTAINS(st.msg, "shape_invariants");
    vg_graph_free(g);
    g = vg_graph_new();
    v = f32_vec(g, (float[]){1, 2}, 2, "xs");
    vg_shape inv = vg_shape_make((int64_t[]){-1}, 1);
    CHECK_OK(vg_while_loop(g, lt_f, grow, NULL, &v, 1, &inv, 10, vg_out(NULL, 0), NULL, &o, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, o, &t, &st), &st);
    if (t) CHECK_EQ_INT(vg_tensor_dim(t, 0), 128); /* 2 -> 4 -> ... -> 128 (sum 192) */
    vg_tensor_free(t);
    vg_session_free(s);
    /* an invariant that does not fit the entry shape */
    vg_shape bad = vg_shape_make((int64_t[]){3}, 1);
    CHECK_CODE(vg_while_loop(g, lt_f, grow, NULL, &v, 1, &bad, 10, vg_out(NULL, 0), NULL, &o, &st),
               VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "xs");
    vg_graph_free(g);
}

/* ---- cancellation -------------------------------------------------------------- */
typedef struct closer {
    vg_session *s;
} closer;
static void *close_later(void *arg) {
    closer *c = arg;
    usleep(100000);
    vg_status st;
    vg_session_close(c->s, &st);
    return NULL;
}

static void test_cancel(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v = vg_const_i32(g, 0, "x"), o;
    CHECK_OK(vg_while_loop(g, always, inc, NULL, &v, 1, NULL, 10, vg_out(NULL, 0), NULL, &o, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_run_options ro = {0};
    ro.timeout_in_ms = 100;
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run(s, &ro, NULL, NULL, 0, &o, &t, 1, NULL, 0, NULL, &st), VG_DEADLINE_EXCEEDED);
    CHECK(t == NULL);
    closer c = {s};
    pthread_t th;
    pthread_create(&th, NULL, close_later, &c);
    CHECK_CODE(vg_session_run(s, NULL, NULL, NULL, 0, &o, &t, 1, NULL, 0, NULL, &st), VG_CANCELLED);
    pthread_join(th, NULL);
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- GraphDef round trip --------------------------------------------------------- */
static void test_graphdef_round_trip(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_i32(g, 0, "acc")}, o[2];
    CHECK_OK(vg_while_loop(g, lt3, outer_body, NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_graph *h = kt_reimported(g, NULL);
    CHECK_EQ_INT(vg_graph_num_ops(h), vg_graph_num_ops(g));
    vg_output y = vg_graph_output_by_name(h, vg_op_name(o[1].op), &st);
    CHECK(y.op != NULL);
    if (y.op) CHECK_EQ_INT(run_i32(h, y, &st), 66);
    vg_graph_free(h);
    vg_graph_free(g);
}

/* a loop built under tf.control_dependencies: the loop's ops do not take the outside
 * control inputs (the Enters do), so it runs, after the dependency */
static void test_while_under_control_deps(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_variable c = vg_variable_new(g, "c", vg_const_i32(g, 0, NULL), 0);
    vg_output bump = vg_assign_add(g, c.ref, vg_const_i32(g, 5, NULL), "bump");
    vg_graph_push_control_deps(g, &bump.op, 1);
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_i32(g, 0, "s")}, o[2];
    CHECK_OK(vg_while_loop(g, lt10, sum_body, NULL, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_graph_pop_control_deps(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &c.initializer, 1, &st), &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, o[1], &t, &st), &st);
    if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), 45);
    vg_tensor_free(t);
    CHECK_OK(vg_session_run1(s, c.read, &t, &st), &st);
    if (t) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t), 5);
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

/* ---- independent nodes of a loop body run at once (inter-op threads >= 2) --------
 * The body has two branches, each a custom op that sleeps 60 ms and adds 1; every
 * kernel call records its start and end. With two inter-op threads the two calls of
 * each iteration overlap in time; with one they never do. */
#define NAP_CALLS 64
static struct {
    pthread_mutex_t mu;
    int n;
    double t0[NAP_CALLS], t1[NAP_CALLS];
    int64_t iter[NAP_CALLS];
} naps = {PTHREAD_MUTEX_INITIALIZER, 0, {0}, {0}, {0}};

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static vg_code nap_kernel(vg_custom_kernel_ctx *ctx, void *user) {
    (void)user;
    const vg_tensor *x = vg_custom_input(ctx, 0), *i = vg_custom_input(ctx, 1);
    vg_tensor *y = vg_custom_alloc_output(ctx, 0, VG_FLOAT, NULL, 0);
    if (!y) return VG_RESOURCE_EXHAUSTED;
    double t0 = mono_s();
    usleep(60000);
    *(float *)vg_tensor_data(y) = *(const float *)vg_tensor_data(x) + 1.0f;
    pthread_mutex_lock(&naps.mu);
    if (naps.n < NAP_CALLS) {
        naps.t0[naps.n] = t0;
        naps.t1[naps.n] = mono_s();
        naps.iter[naps.n] = *(const int32_t *)vg_tensor_data(i);
        naps.n++;
    }
    pthread_mutex_unlock(&naps.mu);
    return VG_OK;
}
static vg_code nap_body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    (void)u;
    vg_output a[2] = {v[1], v[0]}, b[2] = {v[2], v[0]};
    vg_op_builder *ba = vg_op_builder_new(g, "CfNap", "nap_a");
    vg_op_builder_add_input(ba, a[0]);
    vg_op_builder_add_input(ba, a[1]);
    vg_op *oa = vg_op_builder_finish(ba);
    vg_op_builder *bb = vg_op_builder_new(g, "CfNap", "nap_b");
    vg_op_builder_add_input(bb, b[0]);
    vg_op_builder_add_input(bb, b[1]);
    vg_op *ob = vg_op_builder_finish(bb);
    o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);
    o[1] = vg_out(oa, 0);
    o[2] = vg_out(ob, 0);
    return (oa && ob) ? VG_OK : VG_INTERNAL;
}
CF_COND(lt3_nap, vg_less(g, v[0], vg_const_i32(g, 3, NULL), NULL))

static int nap_overlaps(int inter_threads) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output v[3] = {vg_const_i32(g, 0, "i"), vg_const_f32(g, 0.0f, "a"), vg_const_f32(g, 10.0f, "b")}, o[3];
    CHECK_OK(vg_while_loop(g, lt3_nap, nap_body, NULL, v, 3, NULL, 10, vg_out(NULL, 0), NULL, o, &st), &st);
    vg_session_options so = {0};
    so.inter_op_threads = inter_threads;
    so.intra_op_threads = 1;
    vg_session *s = vg_session_new(g, &so, &st);
    CHECK(s != NULL);
    naps.n = 0;
    vg_tensor *t[3] = {NULL, NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, o, t, 3, NULL, 0, NULL, &st), &st);
    if (t[0] && t[1] && t[2]) {
        CHECK_EQ_INT(*(int32_t *)vg_tensor_data(t[0]), 3);
        CHECK_NEAR(*(float *)vg_tensor_data(t[1]), 3.0, 1e-6);
        CHECK_NEAR(*(float *)vg_tensor_data(t[2]), 13.0, 1e-6);
    }
    for (int k = 0; k < 3; k++) vg_tensor_free(t[k]);
    vg_session_free(s);
    vg_graph_free(g);
    CHECK_EQ_INT(naps.n, 6);
    int overlaps = 0; /* iterations whose two calls overlap */
    for (int a = 0; a < naps.n; a++)
        for (int b = a + 1; b < naps.n; b++)
            if (naps.iter[a] == naps.iter[b] && naps.t0[a] < naps.t1[b] && naps.t0[b] < naps.t1[a]) overlaps++;
    return overlaps;
}

static void test_parallel_body_nodes(void) {
    vg_status st;
    vg_custom_op_def d = {"CfNap", 2, 2, true, NULL, nap_kernel, NULL, NULL};
    CHECK_OK(vg_register_op(&d, &st), &st);
    CHECK_EQ_INT(nap_overlaps(1), 0);
    /* 3 iterations; on a loaded machine a pool thread may wake late, so ask for most */
    int ov = nap_overlaps(2);
    CHECK(ov >= 2);
}

int main(void) {
    RUN_TEST(test_while_under_control_deps);
    RUN_TEST(test_while_sum);
    RUN_TEST(test_while_capture_and_feed);
    RUN_TEST(test_nested_while);
    RUN_TEST(test_cond);
    RUN_TEST(test_cond_in_while);
    RUN_TEST(test_while_in_cond);
    RUN_TEST(test_case);
    RUN_TEST(test_max_iterations);
    RUN_TEST(test_shape_invariants);
    RUN_TEST(test_cancel);
    RUN_TEST(test_graphdef_round_trip);
    RUN_TEST(test_parallel_body_nodes);
    TEST_MAIN_END();
}
