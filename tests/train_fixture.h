/* train_fixture.h - per-test setup shared by the tests of tests/train (and any test that
 * trains variables): a session whose variables are initialized. Include after
 * test_util.h. */
#ifndef VG_TRAIN_FIXTURE_H
#define VG_TRAIN_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"
#include <stdarg.h>
#include <stdbool.h>
#include <sys/stat.h>

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

/* Whether a file or directory exists at path. */
static inline bool path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Whether a file or directory exists at the path printf(fmt, ...) makes (paths up to
 * 1023 bytes; a longer one does not exist). */
static inline bool path_existsf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline bool path_existsf(const char *fmt, ...) {
    char p[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p, sizeof p, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < sizeof p && path_exists(p);
}

/* The usual end of a saver test: frees s (may be NULL), then sv (may be NULL), then g. */
static inline void free_session_saver_graph(vg_session *s, vg_saver *sv, vg_graph *g) {
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);
}


/* The usual end of a training test: frees s (may be NULL), then opt (may be NULL), then
 * g. */
static inline void free_session_optimizer_graph(vg_session *s, vg_optimizer *opt, vg_graph *g) {
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

#endif
