/* test_queue_runner.c - QueueRunner + Coordinator: producer threads fill queues, the
 * main thread dequeues; epoch-limited producers end with OUT_OF_RANGE after exactly
 * num_epochs * limit elements; errors of enqueue ops reach the coordinator; a stop
 * unblocks producers stuck on a full queue; closing the session ends the threads. */
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/ops.h"
#include "vigil/queue.h"
#include "vigil/session.h"
#include "vigil/variables.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static vg_session *new_session_with_locals(vg_graph *g) {
    vg_status st;
    vg_op *init = vg_local_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s && init) CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    return s;
}

/* range_input_producer with epochs: exactly num_epochs * limit indices, each index
 * num_epochs times, then OUT_OF_RANGE; join is clean. */
/* The end of a test with queue runners: frees c, then s and g. */
static void free_coord_session_graph(vg_coord *c, vg_session *s, vg_graph *g) {
    vg_coord_free(c);
    free_session_graph(s, g);
}

/* A FIFOQueue "q" of one component of dtype dt, scalars when scalar (else any shape),
 * holding cap elements at most. */
static vg_output queue_q(vg_graph *g, vg_dtype dt, bool scalar, int cap) {
    vg_shape sh = vg_shape_make(NULL, 0);
    return vg_fifo_queue(g, &dt, scalar ? &sh : NULL, 1, cap, "q");
}

static void check_epochs(bool shuffle) {
    enum { LIMIT = 10, EPOCHS = 3 };
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output q = vg_range_input_producer(g, LIMIT, EPOCHS, shuffle, 5, 4, NULL);
    vg_op *deq = vg_queue_dequeue(g, q, "next");
    vg_session *s = new_session_with_locals(g);
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
    int count[LIMIT] = {0}, total = 0, order[LIMIT * EPOCHS];
    for (;;) {
        vg_tensor *out = NULL;
        vg_output f = vg_out(deq, 0);
        vg_code rc = fetch_timeout(s, &f, &out, 1, &st);
        if (rc == VG_OUT_OF_RANGE) {
            CHECK_STR_CONTAINS(st.msg, "is closed and has insufficient elements");
            break;
        }
        CHECK_OK(rc, &st);
        if (rc != VG_OK) break;
        int v = *(int32_t *)vg_tensor_data(out);
        vg_tensor_free(out);
        CHECK(v >= 0 && v < LIMIT);
        if (v >= 0 && v < LIMIT) count[v]++;
        if (total < LIMIT * EPOCHS) order[total] = v;
        total++;
    }
    CHECK_EQ_INT(total, LIMIT * EPOCHS);
    for (int i = 0; i < LIMIT; i++) CHECK_EQ_INT(count[i], EPOCHS);
    bool sorted = true;
    for (int i = 0; i < total && i < LIMIT * EPOCHS; i++) sorted = sorted && order[i] == i % LIMIT;
    CHECK(sorted == !shuffle);
    vg_coord_request_stop(c, NULL);
    CHECK_CODE(vg_coord_join(c, 5, false, &st), VG_OK);
    free_coord_session_graph(c, s, g);
}

static void test_qr__epochs_in_order(void) { check_epochs(false); }
static void test_qr__epochs_shuffled(void) { check_epochs(true); }

static void test_qr__graph_layout(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output q = vg_range_input_producer(g, 10, 2, true, 1, 32, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(q.op), "input_producer") == 0);
    const char *names[] = {"input_producer/range/start", "input_producer/range", "input_producer/RandomShuffle",
                           "input_producer/limit_epochs/epochs", "input_producer/limit_epochs/CountUpTo",
                           "input_producer/limit_epochs", "input_producer/input_producer_EnqueueMany",
                           "input_producer/input_producer_Close", "input_producer/input_producer_Close_1"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        vg_op *op = vg_graph_op_by_name(g, names[i]);
        if (!op) fprintf(stderr, "missing op %s\n", names[i]);
        CHECK(op != NULL);
    }
    CHECK_EQ_INT(vg_graph_num_queue_runners(g), 1);
    int n = 0;
    const vg_output *locals = vg_graph_collection(g, VG_LOCAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK(strcmp(vg_op_name(locals[0].op), "input_producer/limit_epochs/epochs") == 0);
    vg_graph_collection(g, VG_QUEUE_RUNNERS, &n);
    CHECK_EQ_INT(n, 1);
    /* A second producer gets the next unique scope. */
    vg_output q2 = vg_range_input_producer(g, 5, 0, false, 0, 8, NULL);
    CHECK(q2.op && strcmp(vg_op_name(q2.op), "input_producer_1") == 0);
    CHECK(vg_graph_op_by_name(g, "input_producer_1/input_producer_1_EnqueueMany") != NULL);
    vg_graph_collection(g, VG_LOCAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 1); /* no epoch limit: no counter */
    /* errors */
    vg_range_input_producer(g, 5, -1, false, 0, 8, NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* An enqueue op that fails (uninitialized variable) stops the coordinator with it. */
static void test_qr__error_reaches_coord(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_output q = queue_q(g, VG_FLOAT, true, 5);
    vg_op *enq = vg_queue_enqueue(g, q, &v.read, 1, NULL);
    CHECK_OK(vg_add_queue_runner(g, q, &enq, 1), &st);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
    CHECK(vg_coord_wait_for_stop(c, 5));
    EXPECT_CODE_MSG(vg_coord_join(c, 5, false, &st), &st, VG_FAILED_PRECONDITION, "uninitialized value v");
    free_coord_session_graph(c, s, g);
}

/* Producers blocked on a full queue end promptly on a stop (the cancel op). */
static void test_qr__stop_unblocks_producers(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output q = queue_q(g, VG_INT32, true, 2);
    vg_output one = vg_const_i32(g, 1, "one");
    vg_op *enq = vg_queue_enqueue(g, q, &one, 1, NULL);
    vg_op *ops[3] = {enq, enq, enq};
    CHECK_OK(vg_add_queue_runner(g, q, ops, 3), &st);
    vg_output size = vg_queue_size(g, q, NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
    /* starting again while running starts nothing new */
    CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
    usleep(50 * 1000);
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run1(s, size, &out, &st), &st);
    if (out) CHECK_EQ_INT(*(int32_t *)vg_tensor_data(out), 2);
    vg_tensor_free(out);
    double t0 = tu_now_s();
    vg_coord_request_stop(c, NULL);
    CHECK_CODE(vg_coord_join(c, 5, false, &st), VG_OK);
    CHECK(tu_now_s() - t0 < 2.0);
    free_coord_session_graph(c, s, g);
}

/* Closing the session under running runners: threads end, join is clean. */
static void test_qr__session_close(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output q = vg_range_input_producer(g, 100, 0, false, 0, 4, NULL);
    (void)q;
    vg_session *s = new_session_with_locals(g);
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
    usleep(20 * 1000);
    vg_session_close(s, &st);
    CHECK_CODE(vg_coord_join(c, 5, false, &st), VG_OK);
    CHECK(vg_coord_should_stop(c));
    free_coord_session_graph(c, s, g);
}

/* Two enqueue threads over an epoch-limited input: the batch queue is closed once
 * both saw OUT_OF_RANGE, and all elements come through. */
static void test_qr__two_threads_close_once(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output in = vg_range_input_producer(g, 50, 2, false, 0, 8, NULL);
    vg_op *one = vg_queue_dequeue(g, in, NULL);
    vg_output x = vg_out(one, 0), out1;
    CHECK_OK(vg_batch(g, &x, 1, 5, 2, 16, false, NULL, &out1), &st);
    vg_session *s = new_session_with_locals(g);
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
    int counts[50] = {0}, batches = 0;
    for (;;) {
        vg_tensor *b = NULL;
        vg_code rc = fetch_timeout(s, &out1, &b, 1, &st);
        if (rc == VG_OUT_OF_RANGE) break;
        CHECK_OK(rc, &st);
        if (rc) break;
        batches++;
        for (int i = 0; i < 5; i++) counts[((int32_t *)vg_tensor_data(b))[i]]++;
        vg_tensor_free(b);
    }
    CHECK_EQ_INT(batches, 20);
    for (int i = 0; i < 50; i++) CHECK_EQ_INT(counts[i], 2);
    vg_coord_request_stop(c, NULL);
    CHECK_CODE(vg_coord_join(c, 5, false, &st), VG_OK);
    free_coord_session_graph(c, s, g);
}

/* Regression test for the executor: queue kernels block, so a pool thread running
 * one must not hold up runs that queued helper tasks behind it. Small queues and
 * parallel plans (x feeds two ops) on a default session; a watchdog turns a
 * deadlock into a failure. */
static atomic_long g_progress;

static void *watchdog(void *arg) {
    atomic_bool *done = arg;
    long last = -1;
    double since = tu_now_s();
    while (!atomic_load(done)) {
        usleep(50 * 1000);
        long p = atomic_load(&g_progress);
        if (p != last) {
            last = p;
            since = tu_now_s();
        } else if (tu_now_s() - since > 10) {
            fprintf(stderr, "test_qr__blocking_ops_on_pool_threads: no progress for 10 s after %ld batches: "
                            "the executor deadlocked (a pool thread is blocked in a queue op while runs wait "
                            "for helpers queued behind it)\n", p);
            _exit(1);
        }
    }
    return NULL;
}

static void test_qr__blocking_ops_on_pool_threads(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output in = vg_range_input_producer(g, 1000000, 0, false, 0, 2, NULL);
    vg_output x = vg_out(vg_queue_dequeue(g, in, NULL), 0);
    vg_output ins[2] = {x, vg_mul(g, x, vg_const_i32(g, 2, "two"), "y")}, outs[2];
    CHECK_OK(vg_batch(g, ins, 2, 1, 3, 2, false, NULL, outs), &st);
    vg_op *init = vg_local_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st); /* default options: inter-op pool */
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(s, c, &st), &st);
    atomic_bool done;
    atomic_init(&done, false);
    atomic_store(&g_progress, 0);
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, &done);
    int bad = 0;
    for (int i = 0; i < 3000; i++) {
        vg_tensor *v[2] = {NULL, NULL};
        if (vg_session_run(s, NULL, NULL, NULL, 0, outs, v, 2, NULL, 0, NULL, &st) != VG_OK) {
            CHECK_OK(st.code, &st);
            break;
        }
        bad += ((int32_t *)vg_tensor_data(v[1]))[0] != 2 * ((int32_t *)vg_tensor_data(v[0]))[0];
        vg_tensor_free(v[0]);
        vg_tensor_free(v[1]);
        atomic_fetch_add(&g_progress, 1);
    }
    CHECK_EQ_INT(bad, 0);
    vg_coord_request_stop(c, NULL);
    CHECK_CODE(vg_coord_join(c, 10, false, &st), VG_OK);
    atomic_store(&done, true);
    pthread_join(wd, NULL);
    free_coord_session_graph(c, s, g);
}

static void test_qr__bad_args(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output q = queue_q(g, VG_INT32, false, 2);
    CHECK_CODE(vg_add_queue_runner(g, q, NULL, 0), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS((vg_graph_status(g, &st), st.msg), "Must provide queue and enqueue_ops.");
    vg_graph_free(g);
    CHECK_CODE(vg_start_queue_runners(NULL, NULL, &st), VG_INVALID_ARGUMENT);
}

int main(void) {
    RUN_TEST(test_qr__epochs_in_order);
    RUN_TEST(test_qr__epochs_shuffled);
    RUN_TEST(test_qr__graph_layout);
    RUN_TEST(test_qr__error_reaches_coord);
    RUN_TEST(test_qr__stop_unblocks_producers);
    RUN_TEST(test_qr__session_close);
    RUN_TEST(test_qr__two_threads_close_once);
    RUN_TEST(test_qr__bad_args);
    RUN_TEST(test_qr__blocking_ops_on_pool_threads);
    TEST_MAIN_END();
}
