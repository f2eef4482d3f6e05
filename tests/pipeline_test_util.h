/* pipeline_test_util.h - a graph whose input pipeline runs on queue runners: pipe_start
 * initializes the local variables (epoch counters), opens a session and starts the
 * queue runners under a coordinator; pipe_stop stops and joins them and frees the
 * session and the graph. Include after test_util.h. */
#ifndef VG_PIPELINE_TEST_UTIL_H
#define VG_PIPELINE_TEST_UTIL_H
#include "vigil/coordinator.h"
#include "vigil/queue.h"
#include "vigil/session.h"
#include "vigil/variables.h"

typedef struct pipe {
    vg_graph *g;
    vg_session *s;
    vg_coord *c;
} pipe_t;

static void pipe_start(pipe_t *p) {
    vg_status st;
    vg_op *init = vg_local_variables_initializer(p->g);
    CHECK_OK(vg_graph_status(p->g, &st), &st);
    p->s = vg_session_new(p->g, NULL, &st);
    CHECK(p->s != NULL);
    CHECK_OK(vg_session_run_targets(p->s, &init, 1, &st), &st);
    p->c = vg_coord_new(NULL, 0);
    CHECK_OK(vg_start_queue_runners(p->s, p->c, &st), &st);
}

static void pipe_stop(pipe_t *p) {
    vg_status st;
    vg_coord_request_stop(p->c, NULL);
    CHECK_CODE(vg_coord_join(p->c, 5, false, &st), VG_OK);
    vg_coord_free(p->c);
    vg_session_free(p->s);
    vg_graph_free(p->g);
}
#endif
