/* thread_run_fixture.h - session runs repeated from other threads (the concurrency
 * tests of tests/exec and tests/kernels): each runner runs a target or fetches a value
 * n times and counts the runs that failed. Include after test_util.h. */
#ifndef VG_THREAD_RUN_FIXTURE_H
#define VG_THREAD_RUN_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"
#include <pthread.h>
#include <stdbool.h>

/* One runner: n runs of target when it is set, else n fetches of fetch (a run whose
 * first float is not want counts as failed when check is set); fails counts the failed
 * runs, rc is the last run's code. */
typedef struct tr_runner {
    vg_session *s;
    vg_op *target;
    vg_output fetch;
    int n;
    bool check;
    float want;
    int fails;
    vg_code rc;
} tr_runner;

/* The thread function of a tr_runner (pthread_create(&t, NULL, tr_main, &runner)). */
static inline void *tr_main(void *p) {
    tr_runner *r = p;
    for (int i = 0; i < r->n; i++) {
        vg_status st;
        vg_tensor *out = NULL;
        r->rc = r->target ? vg_session_run_targets(r->s, &r->target, 1, &st) : vg_session_run1(r->s, r->fetch, &out, &st);
        if (r->rc != VG_OK || (r->check && (!out || ((float *)vg_tensor_data(out))[0] != r->want))) r->fails++;
        vg_tensor_free(out);
    }
    return NULL;
}
#endif
