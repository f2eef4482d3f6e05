/* kernels_fixture.h - per-test helpers shared by the kernel, dataset, exec, hostile and
 * example tests (tests/kernels, tests/dataset, tests/exec, tests/hostile, tests/examples):
 * the status check that nearly every error case makes (a call's code, then the message it
 * left in a vg_status), and a per-test fixture holding the graph, the session and the
 * status a test works with, freed in one place. Include after test_util.h; every helper
 * is static inline (unused ones cost nothing). */
#ifndef VG_KERNELS_FIXTURE_H
#define VG_KERNELS_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"

/* The check behind CHECK_STATUS: got (the code `expr` returned) must be want, and st->msg
 * must contain msg; each mismatch counts as one failed check, reported at file:line. */
static inline void check_status_at(const char *file, int line, const char *expr, int got, const vg_status *st,
                                   int want, const char *msg) {
    if (got != want) {
        fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", file, line, expr, got, want);
        vg_test_failures++;
    }
    if (!strstr(st->msg, msg)) {
        fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", file, line, st->msg, msg);
        vg_test_failures++;
    }
}
/* CHECK_STATUS(expr, st, code, msg): expr (evaluated once, before st is read) returns
 * code and leaves a message containing msg in *st. */
#define CHECK_STATUS(expr, st, code, msg) \
    check_status_at(__FILE__, __LINE__, #expr, (int)(expr), (st), (int)(code), (msg))

/* The end of a test: frees the nt tensors ts, the nb malloc'd buffers bufs, then the
 * session s and the graph g (any of them may be NULL; ts / bufs may be NULL when their
 * count is 0). One call where a test ended with a line per thing it made. */
static inline void kt_teardown(vg_graph *g, vg_session *s, vg_tensor *const *ts, int nt, void *const *bufs, int nb) {
    for (int i = 0; i < nt; i++) vg_tensor_free(ts[i]);
    for (int i = 0; i < nb; i++) free(bufs[i]);
    vg_session_free(s);
    vg_graph_free(g);
}

#endif
