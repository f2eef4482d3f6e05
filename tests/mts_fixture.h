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
#endif
