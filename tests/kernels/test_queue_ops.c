/* test_queue_ops.c - FIFOQueueV2 / RandomShuffleQueueV2 and the queue ops: order,
 * capacity blocking, DequeueMany / DequeueUpTo, close and drain, cancellation,
 * shuffling with min_after_dequeue, timeouts, session close, error paths. */
#include "test_util.h"
#include "vigil/ops.h"
#include "vigil/queue.h"
#include "vigil/session.h"
#include "kernels_fixture.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

/* A float queue of [2] rows with the usual ops around it. */
typedef struct qgraph {
    vg_graph *g;
    vg_output q, x, xs, n, size;
    vg_op *enq, *enq_many, *deq, *deq_many, *deq_up_to, *close, *cancel;
    vg_session *s;
} qgraph;

static void qgraph_init(qgraph *t, bool shuffle, int capacity, int min_after, int64_t seed) {
    vg_status st;
    t->g = vg_graph_new();
    vg_dtype dt = VG_FLOAT;
    vg_shape sh = vg_shape_make((int64_t[]){2}, 1);
    t->q = shuffle ? vg_random_shuffle_queue(t->g, &dt, &sh, 1, capacity, min_after, seed, 0, "q")
                   : vg_fifo_queue(t->g, &dt, &sh, 1, capacity, "q");
    t->x = vg_placeholder(t->g, VG_FLOAT, (int64_t[]){2}, 1, "x");
    t->xs = vg_placeholder(t->g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "xs");
    t->n = vg_placeholder(t->g, VG_INT32, NULL, 0, "n");
    t->enq = vg_queue_enqueue(t->g, t->q, &t->x, 1, NULL);
    t->enq_many = vg_queue_enqueue_many(t->g, t->q, &t->xs, 1, NULL);
    t->deq = vg_queue_dequeue(t->g, t->q, NULL);
    t->deq_many = vg_queue_dequeue_many(t->g, t->q, t->n, NULL);
    t->deq_up_to = vg_queue_dequeue_up_to(t->g, t->q, t->n, NULL);
    t->close = vg_queue_close(t->g, t->q, false, NULL);
    t->cancel = vg_queue_close(t->g, t->q, true, NULL);
    t->size = vg_queue_size(t->g, t->q, NULL);
    CHECK_OK(vg_graph_status(t->g, &st), &st);
    t->s = vg_session_new(t->g, NULL, &st);
    CHECK(t->s != NULL);
}

static void qgraph_free(qgraph *t) {
    vg_session_free(t->s);
    vg_graph_free(t->g);
}

static vg_code enqueue(qgraph *t, float a, float b, vg_status *st) {
    vg_tensor *v = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){2}, 1, (float[]){a, b}, 8, st);
    vg_code rc = vg_session_run(t->s, NULL, &t->x, &v, 1, NULL, NULL, 0, &t->enq, 1, NULL, st);
    vg_tensor_free(v);
    return rc;
}

/* Enqueues rows [first, first+n) as (i, 10*i). */
static vg_code enqueue_many(qgraph *t, int first, int n, vg_status *st) {
    float buf[256];
    for (int i = 0; i < n; i++) buf[2 * i] = (float)(first + i), buf[2 * i + 1] = (float)(10 * (first + i));
    vg_tensor *v = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){n, 2}, 2, buf, sizeof(float) * 2 * (size_t)n, st);
    vg_code rc = vg_session_run(t->s, NULL, &t->xs, &v, 1, NULL, NULL, 0, &t->enq_many, 1, NULL, st);
    vg_tensor_free(v);
    return rc;
}

/* Dequeues one row; *a gets its first value. */
static vg_code dequeue(qgraph *t, const vg_run_options *ro, float *a, vg_status *st) {
    vg_output f = vg_out(t->deq, 0);
    vg_tensor *out;
    vg_code rc = vg_session_run(t->s, ro, NULL, NULL, 0, &f, &out, 1, NULL, 0, NULL, st);
    if (rc == VG_OK) {
        if (vg_tensor_ndims(out) != 1 || vg_tensor_dim(out, 0) != 2) rc = VG_INTERNAL;
        *a = ((float *)vg_tensor_data(out))[0];
        vg_tensor_free(out);
    }
    return rc;
}

/* DequeueMany / UpTo of n rows; *out gets the tensor (caller frees). */
static vg_code dequeue_n(qgraph *t, vg_op *op, int n, vg_tensor **out, vg_status *st) {
    vg_tensor *nv = vg_tensor_new_scalar_i32(n, st);
    vg_output f = vg_out(op, 0);
    vg_code rc = vg_session_run(t->s, NULL, &t->n, &nv, 1, &f, out, 1, NULL, 0, NULL, st);
    vg_tensor_free(nv);
    return rc;
}

static int32_t qsize(qgraph *t) {
    vg_status st;
    vg_tensor *out = NULL;
    if (vg_session_run1(t->s, t->size, &out, &st) != VG_OK) return -1;
    int32_t v = *(int32_t *)vg_tensor_data(out);
    vg_tensor_free(out);
    return v;
}

static vg_code run_op(qgraph *t, vg_op *op, vg_status *st) { return vg_session_run_targets(t->s, &op, 1, st); }

/* ------------------------------------------------------------------------ */

static void test_queue__fifo_order(void) {
    qgraph t;
    qgraph_init(&t, false, 10, 0, 0);
    vg_status st;
    CHECK_EQ_INT(qsize(&t), 0);
    for (int i = 0; i < 3; i++) CHECK_OK(enqueue(&t, (float)i, -1, &st), &st);
    CHECK_OK(enqueue_many(&t, 3, 4, &st), &st);
    CHECK_EQ_INT(qsize(&t), 7);
    for (int i = 0; i < 7; i++) {
        float a = -1;
        CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
        CHECK_EQ_INT((int)a, i);
    }
    CHECK_EQ_INT(qsize(&t), 0);
    /* wrap around the ring several times */
    for (int round = 0; round < 5; round++) {
        CHECK_OK(enqueue_many(&t, round * 7, 7, &st), &st);
        vg_tensor *out = NULL;
        CHECK_OK(dequeue_n(&t, t.deq_many, 7, &out, &st), &st);
        if (out) {
            CHECK_EQ_INT(vg_tensor_dim(out, 0), 7);
            CHECK_EQ_INT(vg_tensor_dim(out, 1), 2);
            const float *p = vg_tensor_data(out);
            for (int i = 0; i < 7; i++) {
                CHECK_EQ_INT((int)p[2 * i], round * 7 + i);
                CHECK_EQ_INT((int)p[2 * i + 1], 10 * (round * 7 + i));
            }
        }
        vg_tensor_free(out);
    }
    /* n = 0 gives an empty [0, 2] batch at once */
    vg_tensor *out = NULL;
    CHECK_OK(dequeue_n(&t, t.deq_many, 0, &out, &st), &st);
    CHECK(out && vg_tensor_ndims(out) == 2 && vg_tensor_dim(out, 0) == 0 && vg_tensor_dim(out, 1) == 2);
    vg_tensor_free(out);
    CHECK_STATUS(dequeue_n(&t, t.deq_many, -1, &out, &st), &st, VG_INVALID_ARGUMENT, "requested -1 < 0 elements");
    qgraph_free(&t);
}

static void test_queue__build_time_shapes(void) {
    qgraph t;
    qgraph_init(&t, false, 10, 0, 0);
    vg_shape s = vg_output_shape(vg_out(t.deq, 0));
    CHECK(s.ndims == 1 && s.dims[0] == 2);
    s = vg_output_shape(vg_out(t.deq_many, 0));
    CHECK(s.ndims == 2 && s.dims[0] == -1 && s.dims[1] == 2);
    CHECK(vg_output_dtype(vg_out(t.deq, 0)) == VG_FLOAT);
    CHECK(vg_output_dtype(t.q) == VG_RESOURCE);
    CHECK(strcmp(vg_op_name(t.enq), "q_enqueue") == 0);
    CHECK(strcmp(vg_op_name(t.enq_many), "q_EnqueueMany") == 0);
    CHECK(strcmp(vg_op_name(t.deq_many), "q_DequeueMany") == 0);
    CHECK(strcmp(vg_op_name(t.close), "q_Close") == 0);
    CHECK(strcmp(vg_op_name(t.cancel), "q_Close_1") == 0);
    /* a Const n gives a known batch dim */
    vg_op *d5 = vg_queue_dequeue_many(t.g, t.q, vg_const_i32(t.g, 5, "five"), NULL);
    s = vg_output_shape(vg_out(d5, 0));
    CHECK(s.ndims == 2 && s.dims[0] == 5 && s.dims[1] == 2);
    /* wrong dtype / component count / shape rejected when building */
    vg_status st;
    vg_graph *g2 = vg_graph_new();
    vg_dtype dt = VG_FLOAT;
    vg_shape sh = vg_shape_make((int64_t[]){2}, 1);
    vg_output q = vg_fifo_queue(g2, &dt, &sh, 1, 5, "q");
    vg_output xi = vg_placeholder(g2, VG_INT32, (int64_t[]){2}, 1, "xi");
    CHECK(vg_queue_enqueue(g2, q, &xi, 1, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g2, &st), &st, VG_INVALID_ARGUMENT, "int32");
    vg_graph_free(g2);
    g2 = vg_graph_new();
    q = vg_fifo_queue(g2, &dt, &sh, 1, 5, "q");
    vg_output x3 = vg_placeholder(g2, VG_FLOAT, (int64_t[]){3}, 1, "x3");
    CHECK(vg_queue_enqueue(g2, q, &x3, 1, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g2, &st), &st, VG_INVALID_ARGUMENT, "[3]");
    vg_graph_free(g2);
    g2 = vg_graph_new();
    vg_shape partial = vg_shape_make((int64_t[]){-1}, 1);
    vg_fifo_queue(g2, &dt, &partial, 1, 5, "q");
    CHECK_STATUS(vg_graph_status(g2, &st), &st, VG_INVALID_ARGUMENT, "not fully defined");
    vg_graph_free(g2);
    qgraph_free(&t);
}

static void test_queue__runtime_shape_check(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_dtype dt = VG_FLOAT;
    vg_shape sh = vg_shape_make((int64_t[]){2}, 1);
    vg_output q = vg_fifo_queue(g, &dt, &sh, 1, 5, "q");
    vg_output x = vg_placeholder(g, VG_FLOAT, NULL, -1, "x");
    vg_op *enq = vg_queue_enqueue(g, q, &x, 1, NULL);
    vg_op *enqm = vg_queue_enqueue_many(g, q, &x, 1, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *v = vg_tensor_new_zeros(VG_FLOAT, (int64_t[]){3}, 1, &st);
    CHECK_STATUS(vg_session_run(s, NULL, &x, &v, 1, NULL, NULL, 0, &enq, 1, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "Shape mismatch in tuple component 0. Expected [2], got [3]");
    CHECK_STR_CONTAINS(st.msg, "q_enqueue");
    vg_tensor_free(v);
    v = vg_tensor_new_zeros(VG_FLOAT, (int64_t[]){4, 3}, 2, &st);
    CHECK_STATUS(vg_session_run(s, NULL, &x, &v, 1, NULL, NULL, 0, &enqm, 1, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "Expected [4,2], got [4,3]");
    vg_tensor_free(v);
    v = vg_tensor_new_zeros(VG_FLOAT, NULL, 0, &st);
    CHECK_CODE(vg_session_run(s, NULL, &x, &v, 1, NULL, NULL, 0, &enqm, 1, NULL, &st), VG_INVALID_ARGUMENT);
    kt_teardown(g, s, (vg_tensor *[]){v}, 1, NULL, 0);
}

/* The fed tensor is only borrowed: changing it after the run must not change the queue. */
static void test_queue__feeds_are_copied(void) {
    qgraph t;
    qgraph_init(&t, false, 10, 0, 0);
    vg_status st;
    vg_tensor *v = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){2}, 1, (float[]){1, 2}, 8, &st);
    CHECK_OK(vg_session_run(t.s, NULL, &t.x, &v, 1, NULL, NULL, 0, &t.enq, 1, NULL, &st), &st);
    ((float *)vg_tensor_data(v))[0] = 99;
    vg_tensor_free(v);
    float a = 0;
    CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
    CHECK_NEAR(a, 1, 0);
    qgraph_free(&t);
}

typedef struct bg_call {
    qgraph *t;
    int kind; /* 0 enqueue(value), 1 dequeue, 2 close, 3 dequeue_many(n), 4 enqueue_many(first, n) */
    float value;
    int n;
    vg_code rc;
    vg_status st;
    float got;
    vg_tensor *out;
    atomic_bool done;
    pthread_t th;
} bg_call;

static void *bg_main(void *arg) {
    bg_call *c = arg;
    switch (c->kind) {
    case 0: c->rc = enqueue(c->t, c->value, 0, &c->st); break;
    case 1: c->rc = dequeue(c->t, NULL, &c->got, &c->st); break;
    case 2: c->rc = run_op(c->t, c->t->close, &c->st); break;
    case 3: c->rc = dequeue_n(c->t, c->t->deq_many, c->n, &c->out, &c->st); break;
    case 4: c->rc = enqueue_many(c->t, (int)c->value, c->n, &c->st); break;
    }
    atomic_store(&c->done, true);
    return NULL;
}

static void bg_start(bg_call *c, qgraph *t, int kind, float value, int n) {
    memset(c, 0, sizeof *c);
    c->t = t;
    c->kind = kind;
    c->value = value;
    c->n = n;
    atomic_init(&c->done, false);
    pthread_create(&c->th, NULL, bg_main, c);
}

static void bg_join(bg_call *c) {
    pthread_join(c->th, NULL);
    vg_tensor_free(c->out);
    c->out = NULL;
}

static void test_queue__capacity_blocks(void) {
    qgraph t;
    qgraph_init(&t, false, 3, 0, 0);
    vg_status st;
    for (int i = 0; i < 3; i++) CHECK_OK(enqueue(&t, (float)i, 0, &st), &st);
    bg_call c;
    bg_start(&c, &t, 0, 3, 0);
    sleep_ms(50);
    CHECK(!atomic_load(&c.done)); /* blocked: the queue is full */
    CHECK_EQ_INT(qsize(&t), 3);
    float a = -1;
    CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
    CHECK_EQ_INT((int)a, 0);
    bg_join(&c);
    CHECK_CODE(c.rc, VG_OK);
    CHECK_EQ_INT(qsize(&t), 3);
    for (int i = 1; i <= 3; i++) {
        CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
        CHECK_EQ_INT((int)a, i);
    }
    qgraph_free(&t);
}

static void test_queue__dequeue_many_waits(void) {
    qgraph t;
    qgraph_init(&t, false, 3, 0, 0); /* n larger than the capacity works (partial takes) */
    vg_status st;
    bg_call c;
    bg_start(&c, &t, 3, 0, 8);
    sleep_ms(20);
    CHECK(!atomic_load(&c.done));
    CHECK_OK(enqueue_many(&t, 0, 5, &st), &st); /* 3 fit, the dequeuer makes room */
    sleep_ms(20);
    CHECK(!atomic_load(&c.done));
    CHECK_OK(enqueue_many(&t, 5, 4, &st), &st);
    pthread_join(c.th, NULL);
    CHECK_CODE(c.rc, VG_OK);
    if (c.out) {
        CHECK_EQ_INT(vg_tensor_dim(c.out, 0), 8);
        const float *p = vg_tensor_data(c.out);
        for (int i = 0; i < 8; i++) CHECK_EQ_INT((int)p[2 * i], i);
    }
    vg_tensor_free(c.out);
    CHECK_EQ_INT(qsize(&t), 1);
    qgraph_free(&t);
}

static void test_queue__close_drain(void) {
    qgraph t;
    qgraph_init(&t, false, 10, 0, 0);
    vg_status st;
    CHECK_OK(enqueue_many(&t, 0, 2, &st), &st);
    CHECK_OK(run_op(&t, t.close, &st), &st);
    /* enqueue after close */
    CHECK_STATUS(enqueue(&t, 5, 5, &st), &st, VG_CANCELLED, "FIFOQueue '_");
    CHECK_STR_CONTAINS(st.msg, "_q' is closed.");
    /* closing again */
    CHECK_STATUS(run_op(&t, t.close, &st), &st, VG_CANCELLED, "is already closed.");
    CHECK_OK(run_op(&t, t.cancel, &st), &st); /* close+cancel of a closed queue is fine */
    /* DequeueMany wanting more than is left fails but keeps the elements */
    vg_tensor *out = NULL;
    CHECK_CODE(dequeue_n(&t, t.deq_many, 3, &out, &st), VG_OUT_OF_RANGE);
    CHECK(out == NULL);
    CHECK_STR_CONTAINS(st.msg, "is closed and has insufficient elements (requested 3, current size 2)");
    CHECK_EQ_INT(qsize(&t), 2);
    /* UpTo returns what is left */
    CHECK_OK(dequeue_n(&t, t.deq_up_to, 3, &out, &st), &st);
    if (out) {
        CHECK_EQ_INT(vg_tensor_dim(out, 0), 2);
        CHECK_EQ_INT(vg_tensor_dim(out, 1), 2);
        const float *p = vg_tensor_data(out);
        CHECK_EQ_INT((int)p[0], 0);
        CHECK_EQ_INT((int)p[2], 1);
        CHECK_EQ_INT((int)p[3], 10);
    }
    vg_tensor_free(out);
    out = NULL;
    CHECK_CODE(dequeue_n(&t, t.deq_up_to, 3, &out, &st), VG_OUT_OF_RANGE);
    float a;
    CHECK_STATUS(dequeue(&t, NULL, &a, &st), &st, VG_OUT_OF_RANGE, "(requested 1, current size 0)");
    qgraph_free(&t);
}

/* A blocked DequeueMany with a partial batch gives it back when the queue closes. */
static void test_queue__close_wakes_partial_dequeue(void) {
    qgraph t;
    qgraph_init(&t, false, 10, 0, 0);
    vg_status st;
    CHECK_OK(enqueue_many(&t, 0, 3, &st), &st);
    bg_call c;
    bg_start(&c, &t, 3, 0, 5);
    sleep_ms(30);
    CHECK(!atomic_load(&c.done));
    CHECK_EQ_INT(qsize(&t), 0); /* the waiting dequeue took the 3 already */
    CHECK_OK(run_op(&t, t.close, &st), &st);
    bg_join(&c);
    CHECK_CODE(c.rc, VG_OUT_OF_RANGE);
    CHECK_STR_CONTAINS(c.st.msg, "(requested 2, current size 0)"); /* TF's counts */
    CHECK_EQ_INT(qsize(&t), 3);
    vg_tensor *out = NULL;
    CHECK_OK(dequeue_n(&t, t.deq_up_to, 10, &out, &st), &st);
    if (out) {
        CHECK_EQ_INT(vg_tensor_dim(out, 0), 3);
        const float *p = vg_tensor_data(out);
        for (int i = 0; i < 3; i++) CHECK_EQ_INT((int)p[2 * i], i);
    }
    vg_tensor_free(out);
    qgraph_free(&t);
}

static void test_queue__cancel_pending_enqueues(void) {
    qgraph t;
    qgraph_init(&t, false, 2, 0, 0);
    vg_status st;
    CHECK_OK(enqueue_many(&t, 0, 2, &st), &st);
    bg_call c1, c2;
    bg_start(&c1, &t, 0, 7, 0);
    bg_start(&c2, &t, 4, 20, 3);
    sleep_ms(30);
    CHECK(!atomic_load(&c1.done) && !atomic_load(&c2.done));
    CHECK_OK(run_op(&t, t.cancel, &st), &st);
    bg_join(&c1);
    bg_join(&c2);
    CHECK_CODE(c1.rc, VG_CANCELLED);
    CHECK_STR_CONTAINS(c1.st.msg, "Enqueue operation was cancelled");
    CHECK_CODE(c2.rc, VG_CANCELLED);
    CHECK_EQ_INT(qsize(&t), 2);
    float a;
    CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
    CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
    CHECK_CODE(dequeue(&t, NULL, &a, &st), VG_OUT_OF_RANGE);
    qgraph_free(&t);
}

/* A plain close waits behind a blocked enqueue, which completes first. */
static void test_queue__close_after_pending_enqueue(void) {
    qgraph t;
    qgraph_init(&t, false, 2, 0, 0);
    vg_status st;
    CHECK_OK(enqueue_many(&t, 0, 2, &st), &st);
    bg_call e, c;
    bg_start(&e, &t, 0, 2, 0);
    sleep_ms(20);
    bg_start(&c, &t, 2, 0, 0);
    sleep_ms(20);
    CHECK(!atomic_load(&e.done));
    CHECK(!atomic_load(&c.done));
    float a;
    CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
    bg_join(&e);
    bg_join(&c);
    CHECK_CODE(e.rc, VG_OK);
    CHECK_CODE(c.rc, VG_OK);
    CHECK_CODE(enqueue(&t, 1, 1, &st), VG_CANCELLED);
    for (int i = 1; i <= 2; i++) {
        CHECK_OK(dequeue(&t, NULL, &a, &st), &st);
        CHECK_EQ_INT((int)a, i);
    }
    CHECK_CODE(dequeue(&t, NULL, &a, &st), VG_OUT_OF_RANGE);
    qgraph_free(&t);
}

static void test_queue__timeout(void) {
    qgraph t;
    qgraph_init(&t, false, 1, 0, 0);
    vg_status st;
    vg_run_options ro = {0};
    ro.timeout_in_ms = 100;
    float a;
    double t0 = tu_now_s();
    CHECK_CODE(dequeue(&t, &ro, &a, &st), VG_DEADLINE_EXCEEDED);
    double dt = tu_now_s() - t0;
    CHECK(dt >= 0.09 && dt < 2.0);
    CHECK_STR_CONTAINS(st.msg, "Timed out waiting for notification");
    /* blocked enqueue times out too */
    CHECK_OK(enqueue(&t, 1, 1, &st), &st);
    vg_tensor *v = vg_tensor_new_zeros(VG_FLOAT, (int64_t[]){2}, 1, &st);
    CHECK_CODE(vg_session_run(t.s, &ro, &t.x, &v, 1, NULL, NULL, 0, &t.enq, 1, NULL, &st), VG_DEADLINE_EXCEEDED);
    vg_tensor_free(v);
    CHECK_EQ_INT(qsize(&t), 1);
    CHECK_OK(dequeue(&t, &ro, &a, &st), &st);
    CHECK_EQ_INT((int)a, 1);
    qgraph_free(&t);
}

static void test_queue__session_close_cancels(void) {
    qgraph t;
    qgraph_init(&t, false, 1, 0, 0);
    vg_status st;
    bg_call d;
    bg_start(&d, &t, 1, 0, 0);
    CHECK_OK(enqueue(&t, 5, 5, &st), &st); /* consumed by the waiting dequeue */
    CHECK_OK(enqueue(&t, 6, 6, &st), &st);
    bg_join(&d);
    CHECK_CODE(d.rc, VG_OK);
    CHECK_EQ_INT((int)d.got, 5);
    bg_call e, d2;
    bg_start(&e, &t, 0, 7, 0); /* blocks: full */
    sleep_ms(30);
    CHECK(!atomic_load(&e.done));
    double t0 = tu_now_s();
    vg_session_close(t.s, &st);
    bg_join(&e);
    CHECK(tu_now_s() - t0 < 2.0);
    CHECK_CODE(e.rc, VG_CANCELLED);
    CHECK_STR_CONTAINS(e.st.msg, "Enqueue operation was cancelled");
    /* and a dequeue blocked on an empty queue */
    qgraph t2;
    qgraph_init(&t2, false, 1, 0, 0);
    bg_start(&d2, &t2, 1, 0, 0);
    sleep_ms(30);
    CHECK(!atomic_load(&d2.done));
    vg_session_close(t2.s, &st);
    bg_join(&d2);
    CHECK_CODE(d2.rc, VG_CANCELLED);
    CHECK_STR_CONTAINS(d2.st.msg, "Dequeue operation was cancelled");
    qgraph_free(&t2);
    qgraph_free(&t);
}

/* Dequeues everything as a sorted-check of a permutation of 0..n-1; returns whether
 * the order was the identity. */
static bool check_permutation(const float *p, int n) {
    int seen[256] = {0};
    bool identity = true;
    for (int i = 0; i < n; i++) {
        int v = (int)p[2 * i];
        CHECK(v >= 0 && v < n);
        if (v >= 0 && v < n) seen[v]++;
        CHECK_EQ_INT((int)p[2 * i + 1], 10 * v);
        if (v != i) identity = false;
    }
    for (int i = 0; i < n; i++) CHECK_EQ_INT(seen[i], 1);
    return identity;
}

static void test_queue__shuffle(void) {
    float first[2][50];
    for (int run = 0; run < 2; run++) {
        qgraph t;
        qgraph_init(&t, true, 100, 0, 42);
        vg_status st;
        CHECK_OK(enqueue_many(&t, 0, 50, &st), &st);
        vg_tensor *out = NULL;
        CHECK_OK(dequeue_n(&t, t.deq_many, 50, &out, &st), &st);
        if (out) {
            const float *p = vg_tensor_data(out);
            CHECK(!check_permutation(p, 50));
            for (int i = 0; i < 50; i++) first[run][i] = p[2 * i];
        }
        vg_tensor_free(out);
        qgraph_free(&t);
    }
    /* same seed, same order */
    CHECK(memcmp(first[0], first[1], sizeof first[0]) == 0);
}

static void test_queue__shuffle_min_after_dequeue(void) {
    qgraph t;
    qgraph_init(&t, true, 20, 5, 7);
    vg_status st;
    vg_run_options ro = {0};
    ro.timeout_in_ms = 50;
    CHECK_OK(enqueue_many(&t, 0, 7, &st), &st);
    float a;
    CHECK_OK(dequeue(&t, &ro, &a, &st), &st);
    CHECK_OK(dequeue(&t, &ro, &a, &st), &st);
    CHECK_CODE(dequeue(&t, &ro, &a, &st), VG_DEADLINE_EXCEEDED); /* 5 left = min_after_dequeue */
    CHECK_EQ_INT(qsize(&t), 5);
    /* DequeueMany takes only what is above the minimum, then waits for more */
    bg_call c;
    bg_start(&c, &t, 3, 0, 4);
    CHECK_OK(enqueue_many(&t, 7, 2, &st), &st);
    sleep_ms(30);
    CHECK(!atomic_load(&c.done));
    CHECK_EQ_INT(qsize(&t), 5);
    CHECK_OK(enqueue_many(&t, 9, 2, &st), &st);
    bg_join(&c);
    CHECK_CODE(c.rc, VG_OK);
    CHECK_EQ_INT(qsize(&t), 5);
    /* closed: the minimum no longer applies */
    CHECK_OK(run_op(&t, t.close, &st), &st);
    for (int i = 0; i < 5; i++) CHECK_OK(dequeue(&t, &ro, &a, &st), &st);
    CHECK_STATUS(dequeue(&t, &ro, &a, &st), &st, VG_OUT_OF_RANGE, "RandomShuffleQueue '");
    CHECK_STR_CONTAINS(st.msg, "insufficient elements (requested 1, current size 0)");
    qgraph_free(&t);
}

/* Shuffle storage: growth while holding elements, interleaved dequeues, a partial
 * DequeueMany given back on close, and element-mode (unspecified shapes) leftovers
 * freed with the session. */
static void test_queue__shuffle_storage(void) {
    qgraph t;
    qgraph_init(&t, true, 1000, 0, 11);
    vg_status st;
    int seen[300] = {0}, got = 0;
    for (int round = 0; round < 10; round++) {
        CHECK_OK(enqueue_many(&t, round * 30, 30, &st), &st); /* grows 16 -> 32 -> ... */
        vg_tensor *out = NULL;
        CHECK_OK(dequeue_n(&t, t.deq_many, 7, &out, &st), &st);
        for (int i = 0; out && i < 7; i++) {
            int v = (int)((float *)vg_tensor_data(out))[2 * i];
            CHECK_EQ_INT((int)((float *)vg_tensor_data(out))[2 * i + 1], 10 * v);
            if (v >= 0 && v < 300) seen[v]++;
            got++;
        }
        vg_tensor_free(out);
    }
    CHECK_EQ_INT(qsize(&t), 300 - 70);
    CHECK_OK(run_op(&t, t.close, &st), &st);
    vg_tensor *out = NULL;
    CHECK_CODE(dequeue_n(&t, t.deq_many, 231, &out, &st), VG_OUT_OF_RANGE);
    CHECK_EQ_INT(qsize(&t), 230);
    CHECK_OK(dequeue_n(&t, t.deq_up_to, 1000, &out, &st), &st);
    for (int i = 0; out && i < vg_tensor_dim(out, 0); i++) {
        int v = (int)((float *)vg_tensor_data(out))[2 * i];
        CHECK_EQ_INT((int)((float *)vg_tensor_data(out))[2 * i + 1], 10 * v);
        if (v >= 0 && v < 300) seen[v]++;
        got++;
    }
    vg_tensor_free(out);
    CHECK_EQ_INT(got, 300);
    int bad = 0;
    for (int i = 0; i < 300; i++) bad += seen[i] != 1;
    CHECK_EQ_INT(bad, 0);
    qgraph_free(&t);

    /* partial DequeueMany on a shuffle queue, then close: the batch goes back */
    qgraph_init(&t, true, 10, 0, 5);
    CHECK_OK(enqueue_many(&t, 0, 3, &st), &st);
    bg_call c;
    bg_start(&c, &t, 3, 0, 5);
    for (int i = 0; i < 200 && qsize(&t) != 0; i++) sleep_ms(1);
    CHECK_EQ_INT(qsize(&t), 0);
    CHECK_OK(run_op(&t, t.close, &st), &st);
    bg_join(&c);
    CHECK_CODE(c.rc, VG_OUT_OF_RANGE);
    CHECK_EQ_INT(qsize(&t), 3);
    qgraph_free(&t);

    /* element mode in a shuffle queue */
    vg_graph *g = vg_graph_new();
    vg_dtype f = VG_FLOAT;
    vg_output q = vg_random_shuffle_queue(g, &f, NULL, 1, 100, 0, 9, 0, "uq");
    vg_output ux = vg_placeholder(g, VG_FLOAT, NULL, -1, "ux");
    vg_op *enq = vg_queue_enqueue(g, q, &ux, 1, NULL);
    vg_op *deq = vg_queue_dequeue(g, q, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    float sum = 0;
    for (int i = 0; i < 40; i++) {
        int len = i % 3 + 1;
        vg_tensor *v = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){len}, 1, (float[]){(float)i, 0, 0},
                                          4 * (size_t)len, &st);
        CHECK_OK(vg_session_run(s, NULL, &ux, &v, 1, NULL, NULL, 0, &enq, 1, NULL, &st), &st);
        vg_tensor_free(v);
    }
    for (int i = 0; i < 30; i++) {
        vg_tensor *o = NULL;
        CHECK_OK(vg_session_run1(s, vg_out(deq, 0), &o, &st), &st);
        if (o) {
            int v = (int)((float *)vg_tensor_data(o))[0];
            CHECK_EQ_INT(vg_tensor_dim(o, 0), v % 3 + 1);
            sum += (float)v;
        }
        vg_tensor_free(o);
    }
    CHECK(sum > 0);
    vg_session_free(s); /* 10 elements left: freed here */
    vg_graph_free(g);
}

/* Several components, unspecified shapes (element storage) and strings. */
static void test_queue__components_and_element_mode(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_dtype dts[2] = {VG_INT64, VG_STRING};
    vg_shape shs[2] = {vg_shape_make(NULL, 0), vg_shape_make((int64_t[]){2}, 1)};
    vg_output q = vg_fifo_queue(g, dts, shs, 2, 10, "sq");
    vg_output ids = vg_placeholder(g, VG_INT64, (int64_t[]){-1}, 1, "ids");
    vg_output strs = vg_placeholder(g, VG_STRING, (int64_t[]){-1, 2}, 2, "strs");
    vg_output comps[2] = {ids, strs};
    vg_op *enq = vg_queue_enqueue_many(g, q, comps, 2, NULL);
    vg_op *deq = vg_queue_dequeue_many(g, q, vg_const_i32(g, 2, "two"), NULL);
    vg_op *deq1 = vg_queue_dequeue(g, q, NULL);
    /* unspecified shapes */
    vg_dtype f = VG_FLOAT;
    vg_output uq = vg_fifo_queue(g, &f, NULL, 1, 10, "uq");
    vg_output ux = vg_placeholder(g, VG_FLOAT, NULL, -1, "ux");
    vg_op *uenq = vg_queue_enqueue(g, uq, &ux, 1, NULL);
    vg_op *udeq = vg_queue_dequeue(g, uq, NULL);
    vg_op *udeqm = vg_queue_dequeue_many(g, uq, vg_const_i32(g, 1, "one"), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);

    vg_tensor *idv = vg_tensor_new_copy(VG_INT64, (int64_t[]){3}, 1, (int64_t[]){10, 11, 12}, 24, &st);
    vg_tensor *sv = vg_tensor_new(VG_STRING, (int64_t[]){3, 2}, 2, &st);
    const char *words[6] = {"a0", "a1", "b0", "b1", "c0", "c1"};
    for (int i = 0; i < 6; i++) vg_tensor_set_string(sv, i, words[i], 2, &st);
    vg_tensor *vals[2] = {idv, sv};
    CHECK_OK(vg_session_run(s, NULL, comps, vals, 2, NULL, NULL, 0, &enq, 1, NULL, &st), &st);
    vg_tensor_free(idv);
    vg_tensor_free(sv);
    vg_output fo[2] = {vg_out(deq, 0), vg_out(deq, 1)};
    vg_tensor *out[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fo, out, 2, NULL, 0, NULL, &st), &st);
    if (out[0] && out[1]) {
        CHECK_EQ_INT(((int64_t *)vg_tensor_data(out[0]))[1], 11);
        CHECK_EQ_INT(vg_tensor_dim(out[1], 0), 2);
        CHECK_EQ_INT(vg_tensor_dim(out[1], 1), 2);
        size_t len;
        const char *w = vg_tensor_string(out[1], 3, &len);
        CHECK(len == 2 && memcmp(w, "b1", 2) == 0);
    }
    vg_tensor_free(out[0]);
    vg_tensor_free(out[1]);
    vg_output f1[2] = {vg_out(deq1, 0), vg_out(deq1, 1)};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f1, out, 2, NULL, 0, NULL, &st), &st);
    if (out[0] && out[1]) {
        CHECK_EQ_INT(vg_tensor_ndims(out[0]), 0);
        CHECK_EQ_INT(*(int64_t *)vg_tensor_data(out[0]), 12);
        size_t len;
        const char *w = vg_tensor_string(out[1], 0, &len);
        CHECK(len == 2 && memcmp(w, "c0", 2) == 0);
    }
    vg_tensor_free(out[0]);
    vg_tensor_free(out[1]);

    /* unspecified shapes: any shape goes in, DequeueMany is refused */
    vg_tensor *a = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){3}, 1, (float[]){1, 2, 3}, 12, &st);
    vg_tensor *b = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){1, 1}, 2, (float[]){4}, 4, &st);
    CHECK_OK(vg_session_run(s, NULL, &ux, &a, 1, NULL, NULL, 0, &uenq, 1, NULL, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, &ux, &b, 1, NULL, NULL, 0, &uenq, 1, NULL, &st), &st);
    ((float *)vg_tensor_data(a))[0] = 100; /* copied at enqueue */
    vg_tensor_free(a);
    vg_tensor_free(b);
    vg_tensor *o = NULL;
    CHECK_STATUS(vg_session_run1(s, vg_out(udeqm, 0), &o, &st), &st, VG_INVALID_ARGUMENT,
        "require the components to have specified shapes");
    CHECK_OK(vg_session_run1(s, vg_out(udeq, 0), &o, &st), &st);
    if (o) {
        CHECK_EQ_INT(vg_tensor_dim(o, 0), 3);
        CHECK_NEAR(((float *)vg_tensor_data(o))[0], 1, 0);
    }
    vg_tensor_free(o);
    CHECK_OK(vg_session_run1(s, vg_out(udeq, 0), &o, &st), &st);
    if (o) CHECK(vg_tensor_ndims(o) == 2 && ((float *)vg_tensor_data(o))[0] == 4);
    vg_tensor_free(o);
    /* an element left in the queue is freed with the session */
    a = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){1}, 1, (float[]){5}, 4, &st);
    CHECK_OK(vg_session_run(s, NULL, &ux, &a, 1, NULL, NULL, 0, &uenq, 1, NULL, &st), &st);
    kt_teardown(g, s, (vg_tensor *[]){a}, 1, NULL, 0);
}

/* Producers and consumers in parallel: every element comes out exactly once. */
typedef struct stress_arg {
    qgraph *t;
    int first, count;
    int *seen;
    pthread_mutex_t *mu;
    atomic_int *taken;
    int total;
    vg_code rc;
} stress_arg;

static void *producer(void *p) {
    stress_arg *a = p;
    vg_status st;
    for (int i = 0; i < a->count && a->rc == VG_OK; i += 10) a->rc = enqueue_many(a->t, a->first + i, 10, &st);
    return NULL;
}

static void *consumer(void *p) {
    stress_arg *a = p;
    vg_status st;
    for (;;) {
        vg_tensor *out = NULL;
        vg_code rc = dequeue_n(a->t, a->t->deq_up_to, 7, &out, &st);
        if (rc == VG_OUT_OF_RANGE) break;
        if (rc != VG_OK) {
            a->rc = rc;
            break;
        }
        const float *v = vg_tensor_data(out);
        pthread_mutex_lock(a->mu);
        for (int i = 0; i < vg_tensor_dim(out, 0); i++) a->seen[(int)v[2 * i]]++;
        pthread_mutex_unlock(a->mu);
        vg_tensor_free(out);
    }
    return NULL;
}

static void test_queue__stress(void) {
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        qgraph t;
        qgraph_init(&t, shuffle, 16, shuffle ? 4 : 0, 3);
        enum { NP = 3, NC = 2, PER = 300 };
        int seen[NP * PER] = {0};
        pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
        stress_arg pa[NP], ca[NC];
        pthread_t pt[NP], ct[NC];
        for (int i = 0; i < NC; i++) {
            ca[i] = (stress_arg){&t, 0, 0, seen, &mu, NULL, 0, VG_OK};
            pthread_create(&ct[i], NULL, consumer, &ca[i]);
        }
        for (int i = 0; i < NP; i++) {
            pa[i] = (stress_arg){&t, i * PER, PER, seen, &mu, NULL, 0, VG_OK};
            pthread_create(&pt[i], NULL, producer, &pa[i]);
        }
        for (int i = 0; i < NP; i++) pthread_join(pt[i], NULL);
        vg_status st;
        CHECK_OK(run_op(&t, t.close, &st), &st);
        for (int i = 0; i < NC; i++) pthread_join(ct[i], NULL);
        for (int i = 0; i < NP; i++) CHECK_CODE(pa[i].rc, VG_OK);
        for (int i = 0; i < NC; i++) CHECK_CODE(ca[i].rc, VG_OK);
        int bad = 0;
        for (int i = 0; i < NP * PER; i++) bad += seen[i] != 1;
        CHECK_EQ_INT(bad, 0);
        qgraph_free(&t);
    }
}

int main(void) {
    RUN_TEST(test_queue__fifo_order);
    RUN_TEST(test_queue__build_time_shapes);
    RUN_TEST(test_queue__runtime_shape_check);
    RUN_TEST(test_queue__feeds_are_copied);
    RUN_TEST(test_queue__capacity_blocks);
    RUN_TEST(test_queue__dequeue_many_waits);
    RUN_TEST(test_queue__close_drain);
    RUN_TEST(test_queue__close_wakes_partial_dequeue);
    RUN_TEST(test_queue__cancel_pending_enqueues);
    RUN_TEST(test_queue__close_after_pending_enqueue);
    RUN_TEST(test_queue__timeout);
    RUN_TEST(test_queue__session_close_cancels);
    RUN_TEST(test_queue__shuffle);
    RUN_TEST(test_queue__shuffle_min_after_dequeue);
    RUN_TEST(test_queue__shuffle_storage);
    RUN_TEST(test_queue__components_and_element_mode);
    RUN_TEST(test_queue__stress);
    TEST_MAIN_END();
}
