/* status_fixture.h - per-test helpers shared by the tests of several folders (train,
 * monitored, api, graph, io, core, cli): checks of a graph's recorded status (a failing
 * check prints the caller's file:line) and the usual teardown. Include after
 * test_util.h. */
#ifndef VG_STATUS_FIXTURE_H
#define VG_STATUS_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"

/* Checks that g's recorded status has code and (msg != NULL) a message that contains msg.
 * Use through EXPECT_GRAPH_ERROR so that a failure names the calling line. */
static inline void expect_graph_error_at(const char *file, int line, vg_graph *g, vg_code code, const char *msg) {
    vg_status st;
    memset(&st, 0, sizeof st);
    int got = (int)vg_graph_status(g, &st);
    if (got != (int)code) {
        fprintf(stderr, "%s:%d: graph status %d (%s), expected %d\n", file, line, got, st.msg, (int)code);
        vg_test_failures++;
    } else if (msg && !strstr(st.msg, msg)) {
        fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", file, line, st.msg, msg);
        vg_test_failures++;
    }
}
#define EXPECT_GRAPH_ERROR(g, code, msg) expect_graph_error_at(__FILE__, __LINE__, (g), (code), (msg))

/* The usual end of a test that ran its graph in a session: frees s (may be NULL), then
 * g. */
static inline void free_session_graph(vg_session *s, vg_graph *g) {
    vg_session_free(s);
    vg_graph_free(g);
}

/* Checks that got (what an expression returned, named what) is code and (msg != NULL)
 * that st's message then contains msg; each failing check prints the caller's file:line.
 * Use through EXPECT_CODE_MSG. */
static inline void expect_code_msg_at(const char *file, int line, const char *what, int got, const vg_status *st,
                                      vg_code code, const char *msg) {
    if (got != (int)code) {
        fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", file, line, what, got, (int)code);
        vg_test_failures++;
    }
    if (msg && !strstr(st->msg, msg)) {
        fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", file, line, st->msg, msg);
        vg_test_failures++;
    }
}
#define EXPECT_CODE_MSG(expr, st, code, msg) \
    expect_code_msg_at(__FILE__, __LINE__, #expr, (int)(expr), (st), (code), (msg))


/* Checks that a status st has code and (msg != NULL) a message that contains msg; each
 * mismatch printed with the caller's file:line. */
#define EXPECT_STATUS(st, want, msg) \
    expect_code_msg_at(__FILE__, __LINE__, "the status", (int)(st)->code, (st), (want), (msg))

/* Checks that a constructor refused: it returned got == NULL and set st's code to code.
 * Use through EXPECT_REFUSED. */
static inline void expect_refused_at(const char *file, int line, const void *got, const vg_status *st, vg_code code) {
    if (got != NULL) {
        fprintf(stderr, "%s:%d: got an object, expected NULL\n", file, line);
        vg_test_failures++;
    }
    expect_code_msg_at(file, line, "the status", (int)st->code, st, code, NULL);
}
#define EXPECT_REFUSED(got, st, code) expect_refused_at(__FILE__, __LINE__, (got), (st), (code))

#endif
