/* test_hooks_timer.c - SecondOrStepTimer (TF's SecondOrStepTimerTest), checklist items
 * 139-142 of docs/tf1-semantics.md, with a mocked clock (vg_hooks_set_clock). */
#include "test_util.h"
#include "status_fixture.h"
#include "hook_test_util.h"

/* item 139: both or neither of every_secs / every_steps -> INVALID_ARGUMENT (ValueError) */
static void test_timer__both_or_neither_raises(void) {
    vg_status st;
    vg_timer t;
    EXPECT_CODE_MSG(vg_timer_init(&t, 1.0, 1, &st), &st, VG_INVALID_ARGUMENT,
                    "Can not provide both every_secs and every_steps.");
    EXPECT_CODE_MSG(vg_timer_init(&t, -1.0, -1, &st), &st, VG_INVALID_ARGUMENT,
                    "Either every_secs or every_steps should be provided.");
    /* 0 counts as "not given" in C (TF's None) */
    CHECK_CODE(vg_timer_init(&t, 0.0, 0, &st), VG_INVALID_ARGUMENT);
    CHECK_OK(vg_timer_init(&t, 1.0, 0, &st), &st);
    CHECK_OK(vg_timer_init(&t, 0.0, 3, &st), &st);
}

/* item 140: every_secs=1 */
static void test_timer__every_secs(void) {
    vg_status st;
    vg_timer t;
    ht_clock_mock(1000.0);
    CHECK_OK(vg_timer_init(&t, 1.0, -1, &st), &st);
    CHECK(vg_timer_should_trigger_for_step(&t, 1)); /* never triggered: true */
    vg_timer_update_last_triggered_step(&t, 1, NULL, NULL);
    CHECK(!vg_timer_should_trigger_for_step(&t, 1));
    CHECK(!vg_timer_should_trigger_for_step(&t, 2));
    ht_now_value += 0.999;
    CHECK(!vg_timer_should_trigger_for_step(&t, 2));
    ht_now_value += 0.001; /* exactly one second later: now >= last + every_secs */
    CHECK(!vg_timer_should_trigger_for_step(&t, 1)); /* same step never triggers twice */
    CHECK(vg_timer_should_trigger_for_step(&t, 2));
    ht_clock_restore();
}

/* item 141: every_steps=3 */
static void test_timer__every_steps(void) {
    vg_status st;
    vg_timer t;
    ht_clock_mock(1000.0);
    CHECK_OK(vg_timer_init(&t, -1.0, 3, &st), &st);
    CHECK(vg_timer_should_trigger_for_step(&t, 1));
    vg_timer_update_last_triggered_step(&t, 1, NULL, NULL);
    CHECK(!vg_timer_should_trigger_for_step(&t, 1));
    CHECK(!vg_timer_should_trigger_for_step(&t, 2));
    ht_now_value += 1e6; /* time does not matter in steps mode */
    CHECK(!vg_timer_should_trigger_for_step(&t, 3));
    CHECK(vg_timer_should_trigger_for_step(&t, 4));
    CHECK(vg_timer_should_trigger_for_step(&t, 100));
    ht_clock_restore();
}

/* item 142: update_last_triggered_step returns the elapsed time and steps since the
 * previous trigger; (None, None) on the first trigger is (0, 0) in C, with
 * last_triggered_step() == -1 telling that there was none. reset() forgets. */
static void test_timer__update_last_triggered_step(void) {
    vg_status st;
    vg_timer t;
    double secs = -1;
    int64_t steps = -1;
    ht_clock_mock(1000.0);
    CHECK_OK(vg_timer_init(&t, 1.0, -1, &st), &st);
    CHECK_EQ_INT(vg_timer_last_triggered_step(&t), -1);
    vg_timer_update_last_triggered_step(&t, 1, &secs, &steps);
    CHECK_NEAR(secs, 0.0, 0);
    CHECK_EQ_INT(steps, 0);
    CHECK_EQ_INT(vg_timer_last_triggered_step(&t), 1);
    ht_now_value += 0.25;
    vg_timer_update_last_triggered_step(&t, 5, &secs, &steps);
    CHECK(secs > 0);
    CHECK_NEAR(secs, 0.25, 1e-9);
    CHECK_EQ_INT(steps, 4);
    ht_now_value += 0.5;
    vg_timer_update_last_triggered_step(&t, 7, &secs, &steps);
    CHECK_NEAR(secs, 0.5, 1e-9);
    CHECK_EQ_INT(steps, 2);
    CHECK_EQ_INT(vg_timer_last_triggered_step(&t), 7);
    vg_timer_reset(&t);
    CHECK_EQ_INT(vg_timer_last_triggered_step(&t), -1);
    CHECK(vg_timer_should_trigger_for_step(&t, 7));
    ht_clock_restore();
    /* the default clock is monotonic and advances */
    double a = vg_hooks_now();
    ht_sleep(0.002);
    CHECK(vg_hooks_now() > a);
}

/* every_secs on the default clock, whose per-step check reads the coarse clock first:
 * not triggered before the deadline (far from it, and within the coarse clock's slack
 * of it), triggered once it has passed, measured against the precise clock. */
static void test_timer__every_secs_default_clock(void) {
    vg_status st;
    vg_timer t;
    CHECK_OK(vg_timer_init(&t, 0.3, -1, &st), &st);
    vg_timer_update_last_triggered_step(&t, 0, NULL, NULL);
    double t0 = vg_hooks_now();
    for (int64_t s = 1; s <= 1000; s++) CHECK(!vg_timer_should_trigger_for_step(&t, s) || vg_hooks_now() >= t0 + 0.3);
    /* 20 ms before the deadline: inside the 50 ms slack, the precise clock decides */
    double wait = t0 + 0.28 - vg_hooks_now();
    if (wait > 0) ht_sleep(wait);
    bool early = vg_timer_should_trigger_for_step(&t, 1001);
    CHECK(!early || vg_hooks_now() >= t0 + 0.3);
    wait = t0 + 0.31 - vg_hooks_now();
    if (wait > 0) ht_sleep(wait);
    CHECK(vg_timer_should_trigger_for_step(&t, 1002));
    /* a longer period: far from the deadline, never triggered */
    CHECK_OK(vg_timer_init(&t, 600.0, -1, &st), &st);
    vg_timer_update_last_triggered_step(&t, 0, NULL, NULL);
    CHECK(!vg_timer_should_trigger_for_step(&t, 1));
}

int main(void) {
    RUN_TEST(test_timer__both_or_neither_raises);
    RUN_TEST(test_timer__every_secs);
    RUN_TEST(test_timer__every_steps);
    RUN_TEST(test_timer__update_last_triggered_step);
    RUN_TEST(test_timer__every_secs_default_clock);
    TEST_MAIN_END();
}
