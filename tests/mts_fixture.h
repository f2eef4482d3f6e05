/* mts_fixture.h - a MonitoredTrainingSession as the kernels and dataset tests open it:
 * checkpoints in a directory, no global step counter, an optional StopAtStepHook.
 * Include after test_util.h; every helper is static inline. */
#ifndef VG_MTS_FIXTURE_H
#define VG_MTS_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"
#include <stdint.h>

/* A MonitoredTrainingSession on g that checkpoints to dir, has no step counter and (when
 * last_step >= 0) stops at last_step; checked to open (NULL with *st set if not). */
static inline vg_monitored_session *mts_no_counter(vg_graph *g, const char *dir, int64_t last_step, vg_status *st) {
    vg_hook hooks[1];
    int nhooks = 0;
    if (last_step >= 0) {
        CHECK_OK(vg_stop_at_step_hook(-1, last_step, &hooks[0], st), st);
        nhooks = 1;
    }
    vg_mts_options o = {.checkpoint_dir = dir, .hooks = hooks, .nhooks = nhooks, .no_step_counter = true};
    vg_monitored_session *ms = vg_monitored_training_session_new(g, &o, st);
    CHECK(ms != NULL);
    return ms;
}

/* Runs the nf (<= 4) fetches f under a SingularMonitoredSession on g until the input
 * ends (OUT_OF_RANGE, checked; at most 101 steps), handing each step's values to
 * each(out, u); ends the session (checked) and frees g. Returns the steps run, -1 when
 * the session did not open. */
typedef void (*mts_step_fn)(vg_tensor *const *out, void *u);
static inline int mts_singular_until_end(vg_graph *g, const vg_output *f, int nf, mts_step_fn each, void *u) {
    vg_status st;
    vg_singular_options o = {0};
    vg_monitored_session *ms = vg_singular_monitored_session_new(g, &o, &st);
    CHECK(ms != NULL);
    if (!ms) {
        fprintf(stderr, "monitored session: %s\n", st.msg);
        vg_graph_free(g);
        return -1;
    }
    vg_run_args a = {.fetches = f, .nfetches = nf};
    int steps = 0;
    vg_code rc;
    while (steps <= 100) {
        vg_tensor *out[4] = {0};
        rc = vg_monitored_session_run(ms, &a, out, NULL, &st);
        if (rc != VG_OK) break;
        each(out, u);
        steps++;
        for (int i = 0; i < nf; i++) vg_tensor_free(out[i]);
    }
    CHECK_CODE(rc, VG_OUT_OF_RANGE);
    CHECK_OK(vg_monitored_session_end(ms, rc, &st), &st);
    vg_monitored_session_free(ms);
    vg_graph_free(g);
    return steps;
}

/* One run of ms: fetches *fetch into *out when fetch is set, runs target when set. */
static inline vg_code mts_run1(vg_monitored_session *ms, const vg_output *fetch, vg_op *target, vg_tensor **out,
                               vg_status *st) {
    vg_run_args a = {.fetches = fetch, .nfetches = fetch ? 1 : 0, .targets = target ? &target : NULL,
                     .ntargets = target ? 1 : 0};
    return vg_monitored_session_run(ms, &a, out, NULL, st);
}
#endif
