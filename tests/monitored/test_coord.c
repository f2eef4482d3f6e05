/* test_coord.c - tf.train.Coordinator and LooperThread: stop requests, first error
 * wins, clean-stop codes, join with grace period and stragglers, wait_for_stop,
 * clear_stop, loopers. */
#include "test_util.h"
#include "status_fixture.h"
#include "vigil/coordinator.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

static vg_status make_err(vg_code code, const char *msg) {
    vg_status st;
    vg_status_set(&st, code, "%s", msg);
    return st;
}

/* A well-behaved thread: loops until a stop is requested. */
static void loop_until_stop(vg_coord *c, void *payload) {
    atomic_int *iters = payload;
    while (!vg_coord_should_stop(c)) {
        if (iters) atomic_fetch_add(iters, 1);
        sleep_ms(1);
    }
}

static void test_coord__should_stop(void) {
    vg_coord *c = vg_coord_new(NULL, 0);
    CHECK(c != NULL);
    CHECK(!vg_coord_should_stop(c));
    vg_coord_request_stop(c, NULL);
    CHECK(vg_coord_should_stop(c));
    vg_status st;
    CHECK_CODE(vg_coord_join(c, 1, false, &st), VG_OK);
    CHECK_CODE(vg_coord_raise_requested_exception(c, &st), VG_OK);
    vg_coord_free(c);
}

static void test_coord__first_error_wins(void) {
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_status e1 = make_err(VG_UNKNOWN, "first"), e2 = make_err(VG_INTERNAL, "second"), st;
    vg_coord_request_stop(c, &e1);
    vg_coord_request_stop(c, &e2);
    CHECK(vg_coord_should_stop(c));
    EXPECT_CODE_MSG(vg_coord_raise_requested_exception(c, &st), &st, VG_UNKNOWN, "first");
    EXPECT_CODE_MSG(vg_coord_join(c, 1, false, &st), &st, VG_UNKNOWN, "first");
    vg_coord_free(c);

    /* A plain stop first: a later error is not kept (TF ignores calls after stop). */
    c = vg_coord_new(NULL, 0);
    vg_coord_request_stop(c, NULL);
    vg_coord_request_stop(c, &e1);
    CHECK_CODE(vg_coord_join(c, 1, false, &st), VG_OK);
    vg_coord_free(c);
}

static void test_coord__clean_stop_codes(void) {
    vg_status oor = make_err(VG_OUT_OF_RANGE, "End of sequence"), st;
    /* default: OUT_OF_RANGE is a clean stop */
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_coord_request_stop(c, &oor);
    CHECK(vg_coord_should_stop(c));
    CHECK_CODE(vg_coord_join(c, 1, false, &st), VG_OK);
    vg_coord_free(c);
    /* empty list: it is an error */
    vg_code none[1] = {VG_OK};
    c = vg_coord_new(none, 0);
    vg_coord_request_stop(c, &oor);
    EXPECT_CODE_MSG(vg_coord_join(c, 1, false, &st), &st, VG_OUT_OF_RANGE, "End of sequence");
    vg_coord_free(c);
    /* custom list */
    vg_code cancel_only[1] = {VG_CANCELLED};
    c = vg_coord_new(cancel_only, 1);
    vg_status can = make_err(VG_CANCELLED, "cancelled");
    vg_coord_request_stop(c, &can);
    CHECK_CODE(vg_coord_join(c, 1, false, &st), VG_OK);
    vg_coord_clear_stop(c);
    vg_coord_request_stop(c, &oor);
    CHECK_CODE(vg_coord_join(c, 1, false, &st), VG_OUT_OF_RANGE);
    vg_coord_free(c);
}

static void test_coord__threads_join(void) {
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_status st;
    atomic_int iters[8];
    for (int i = 0; i < 8; i++) {
        atomic_init(&iters[i], 0);
        CHECK_OK(vg_coord_start_thread(c, "worker", loop_until_stop, &iters[i], &st), &st);
    }
    sleep_ms(20);
    vg_coord_request_stop(c, NULL);
    double t0 = tu_now_s();
    CHECK_CODE(vg_coord_join(c, 10, false, &st), VG_OK);
    CHECK(tu_now_s() - t0 < 2.0);
    for (int i = 0; i < 8; i++) CHECK(atomic_load(&iters[i]) > 0);
    vg_coord_free(c);
}

/* A thread that reports an error; join (without any request_stop from main) returns it. */
static void report_error(vg_coord *c, void *payload) {
    vg_status e = make_err(VG_INVALID_ARGUMENT, "bad record 17");
    vg_coord_request_stop(c, &e);
}

static void test_coord__thread_error_reaches_join(void) {
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_status st;
    CHECK_OK(vg_coord_start_thread(c, "well", loop_until_stop, NULL, &st), &st);
    CHECK_OK(vg_coord_start_thread(c, "failing", report_error, NULL, &st), &st);
    EXPECT_CODE_MSG(vg_coord_join(c, 10, false, &st), &st, VG_INVALID_ARGUMENT, "bad record 17");
    vg_coord_free(c);
}

/* A thread that ignores the stop until the test releases it. */
typedef struct stubborn {
    atomic_bool release;
    atomic_bool exited;
} stubborn;

static void ignore_stop(vg_coord *c, void *payload) {
    stubborn *s = payload;
    while (!atomic_load(&s->release)) sleep_ms(1);
    atomic_store(&s->exited, true);
}

static void release_and_wait(stubborn *s) {
    atomic_store(&s->release, true);
    while (!atomic_load(&s->exited)) sleep_ms(1);
    sleep_ms(20); /* let the detached thread finish its last lines */
}

static void test_coord__straggler(void) {
    stubborn s;
    atomic_init(&s.release, false);
    atomic_init(&s.exited, false);
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_status st;
    CHECK_OK(vg_coord_start_thread(c, "good", loop_until_stop, NULL, &st), &st);
    CHECK_OK(vg_coord_start_thread(c, "reader", ignore_stop, &s, &st), &st);
    vg_coord_request_stop(c, NULL);
    double t0 = tu_now_s();
    CHECK_CODE(vg_coord_join(c, 0.2, false, &st), VG_FAILED_PRECONDITION); /* TF: RuntimeError */
    double dt = tu_now_s() - t0;
    CHECK(dt >= 0.19 && dt < 2.0);
    CHECK_STR_CONTAINS(st.msg, "Coordinator stopped with threads still running: reader");
    CHECK(strstr(st.msg, "good") == NULL);
    /* The coordinator may be freed while the straggler still runs. */
    vg_coord_free(c);
    release_and_wait(&s);

    /* ignore_live_threads: only logged */
    atomic_store(&s.release, false);
    atomic_store(&s.exited, false);
    c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_coord_start_thread(c, "reader", ignore_stop, &s, &st), &st);
    vg_coord_request_stop(c, NULL);
    CHECK_CODE(vg_coord_join(c, 0.05, true, &st), VG_OK);
    release_and_wait(&s);
    vg_coord_free(c);

    /* A stored error wins over live threads. */
    atomic_store(&s.release, false);
    atomic_store(&s.exited, false);
    c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_coord_start_thread(c, "reader", ignore_stop, &s, &st), &st);
    vg_status e = make_err(VG_DATA_LOSS, "corrupt");
    vg_coord_request_stop(c, &e);
    EXPECT_CODE_MSG(vg_coord_join(c, 0.05, false, &st), &st, VG_DATA_LOSS, "corrupt");
    release_and_wait(&s);
    vg_coord_free(c);
}

static void *stop_later(void *arg) {
    sleep_ms(50);
    vg_coord_request_stop(arg, NULL);
    return NULL;
}

static void test_coord__wait_for_stop(void) {
    vg_coord *c = vg_coord_new(NULL, 0);
    double t0 = tu_now_s();
    CHECK(!vg_coord_wait_for_stop(c, 0.1));
    double dt = tu_now_s() - t0;
    CHECK(dt >= 0.09 && dt < 1.5);
    CHECK(!vg_coord_wait_for_stop(c, 0));
    pthread_t th;
    pthread_create(&th, NULL, stop_later, c);
    t0 = tu_now_s();
    CHECK(vg_coord_wait_for_stop(c, 10));
    CHECK(tu_now_s() - t0 < 2.0);
    pthread_join(th, NULL);
    CHECK(vg_coord_wait_for_stop(c, -1));
    vg_coord_clear_stop(c);
    CHECK(!vg_coord_should_stop(c));
    vg_coord_free(c);
}

/* Requests a stop on c and joins its threads (5 s at most): no error. */
static void stop_and_join(vg_coord *c) {
    vg_status st;
    vg_coord_request_stop(c, NULL);
    CHECK_CODE(vg_coord_join(c, 5, false, &st), VG_OK);
}

static void test_coord__clear_stop(void) {
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_status e = make_err(VG_UNKNOWN, "boom"), st;
    vg_coord_request_stop(c, &e);
    CHECK_CODE(vg_coord_join(c, 1, false, &st), VG_UNKNOWN);
    vg_coord_clear_stop(c);
    CHECK(!vg_coord_should_stop(c));
    CHECK_CODE(vg_coord_raise_requested_exception(c, &st), VG_OK);
    /* usable again */
    CHECK_OK(vg_coord_start_thread(c, "again", loop_until_stop, NULL, &st), &st);
    stop_and_join(c);
    vg_coord_free(c);
}

typedef struct looper_state {
    atomic_int calls;
    int fail_at;
} looper_state;

static vg_code count_calls(void *payload, vg_status *st) {
    looper_state *s = payload;
    int n = atomic_fetch_add(&s->calls, 1) + 1;
    if (s->fail_at && n >= s->fail_at) return vg_status_set(st, VG_UNAVAILABLE, "looper failed at call %d", n);
    return VG_OK;
}

/* A new coordinator running the looper `name` (count_calls on *s, zeroed first; failing
 * from call fail_at on, 0 never) every interval seconds. */
static vg_coord *coord_with_looper(const char *name, double interval, looper_state *s, int fail_at) {
    vg_status st;
    vg_coord *c = vg_coord_new(NULL, 0);
    *s = (looper_state){0};
    atomic_init(&s->calls, 0);
    s->fail_at = fail_at;
    CHECK_OK(vg_coord_start_looper(c, name, interval, count_calls, s, &st), &st);
    return c;
}

static void test_coord__looper(void) {
    vg_status st;
    /* The first call comes at once, not after the interval: with a 60 s interval it
     * must still arrive (within 2 s; polled, so a loaded machine cannot make it flaky). */
    looper_state s0;
    vg_coord *c = coord_with_looper("slow_looper", 60, &s0, 0);
    for (int i = 0; i < 200 && atomic_load(&s0.calls) < 1; i++) sleep_ms(10);
    CHECK_EQ_INT(atomic_load(&s0.calls), 1);
    stop_and_join(c);
    vg_coord_free(c);

    looper_state s;
    c = coord_with_looper("looper", 0.02, &s, 0);
    sleep_ms(205);
    stop_and_join(c);
    int calls = atomic_load(&s.calls);
    CHECK(calls >= 5 && calls <= 14); /* ~11 expected */
    vg_coord_free(c);

    /* An error from the looper requests a stop with it; the looper stops calling. */
    looper_state f;
    c = coord_with_looper("failing_looper", 0.001, &f, 3);
    CHECK(vg_coord_wait_for_stop(c, 5));
    EXPECT_CODE_MSG(vg_coord_join(c, 5, false, &st), &st, VG_UNAVAILABLE, "looper failed at call 3");
    CHECK_EQ_INT(atomic_load(&f.calls), 3);
    vg_coord_free(c);

    /* interval <= 0: back-to-back calls */
    looper_state b;
    c = coord_with_looper("busy", 0, &b, 0);
    sleep_ms(20);
    stop_and_join(c);
    CHECK(atomic_load(&b.calls) > 20);
    vg_coord_free(c);
}

static void test_coord__bad_args(void) {
    vg_coord *c = vg_coord_new(NULL, 0);
    vg_status st;
    CHECK_CODE(vg_coord_start_thread(c, "x", NULL, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_coord_start_looper(c, "x", 1, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_coord_join(c, 1, false, &st), VG_OK); /* nothing registered */
    vg_coord_free(c);
    vg_coord_free(NULL);
}

int main(void) {
    RUN_TEST(test_coord__should_stop);
    RUN_TEST(test_coord__first_error_wins);
    RUN_TEST(test_coord__clean_stop_codes);
    RUN_TEST(test_coord__threads_join);
    RUN_TEST(test_coord__thread_error_reaches_join);
    RUN_TEST(test_coord__straggler);
    RUN_TEST(test_coord__wait_for_stop);
    RUN_TEST(test_coord__clear_stop);
    RUN_TEST(test_coord__looper);
    RUN_TEST(test_coord__bad_args);
    TEST_MAIN_END();
}
