/* train_fixture.h - per-test setup shared by the tests of tests/train (and any test that
 * trains variables): a session whose variables are initialized. Include after
 * test_util.h. */
#ifndef VG_TRAIN_FIXTURE_H
#define VG_TRAIN_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"

/* A session on g (default options) in which tf.global_variables_initializer() has run;
 * both steps are checked. NULL (a failed check) when the session cannot be made. The
 * caller frees the session. */
static inline vg_session *initialized_session(vg_graph *g) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s) CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    return s;
}

#endif
