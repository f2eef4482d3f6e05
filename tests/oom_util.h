/* oom_util.h - the fail-allocation-N hook for allocation-failure tests (SQLite-style):
 * install {failing_alloc, plain_free} (oom_install) before creating anything, arm(n)
 * makes the n-th allocation from now fail, arm(0) disarms; oom_build_each and
 * oom_run_each are the loops over n of a model's build and run. */
#ifndef VG_OOM_UTIL_H
#define VG_OOM_UTIL_H
#include <stdbool.h>
#include <stdlib.h>
#include "test_util.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <string.h>

static long g_count, g_fail_at;

static void *failing_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    if (g_fail_at > 0 && ++g_count == g_fail_at) return NULL;
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    return p;
}
static void plain_free(void *payload, void *p) {
    (void)payload;
    free(p);
}
/* Installs {failing_alloc, plain_free} (disarmed until arm(n)). */
static inline void oom_install(void) {
    vg_allocator a = {failing_alloc, plain_free, NULL};
    vg_allocator_set(&a);
}
static void arm(long n) {
    g_count = 0;
    g_fail_at = n;
}
/* True if the armed failure was reached (allocation n happened). */
static inline bool injected(long n) { return g_count >= n; }

/* The two loops of a model's allocation-failure test. The model is msize bytes at m,
 * zeroed before each build; build(g, m) builds it into g and returns the graph's code.
 * Each returns the number of failures (the first 50 printed) and sets *last to the n it
 * stopped at: the first n whose allocation was never reached (max at the most). */

/* Builds with allocation n failing, n = 1, 2, ...: the build must end OK with every
 * op complete(m) wants, or RESOURCE_EXHAUSTED. */
static inline int oom_build_each(long max, void *m, size_t msize, vg_code (*build)(vg_graph *g, void *m),
                                 bool (*complete)(const void *m), long *last) {
    int bad = 0;
    long n;
    for (n = 1; n < max; n++) {
        arm(n);
        vg_graph *g = vg_graph_new();
        if (!g) continue;
        memset(m, 0, msize);
        vg_code rc = build(g, m);
        bool hit = injected(n);
        arm(0);
        if (rc == VG_OK && !complete(m)) {
            fprintf(stderr, "  alloc %ld: OK but an op is missing\n", n);
            bad++;
        }
        if (rc != VG_OK && rc != VG_RESOURCE_EXHAUSTED) {
            vg_status st;
            vg_graph_status(g, &st);
            if (bad < 50) fprintf(stderr, "  alloc %ld: code %d: %s\n", n, rc, st.msg);
            bad++;
        }
        vg_graph_free(g);
        if (!hit) break; /* built without reaching allocation n: done */
    }
    *last = n;
    return bad;
}

/* Builds without failures, then runs run(g, m, &session, st) with allocation n failing,
 * n = 1, 2, ...: it must end OK or RESOURCE_EXHAUSTED. The session run makes (*s, NULL
 * when none) is freed here, after the failure is disarmed. */
static inline int oom_run_each(long max, void *m, size_t msize, vg_code (*build)(vg_graph *g, void *m),
                               vg_code (*run)(vg_graph *g, void *m, vg_session **s, vg_status *st), long *last) {
    int bad = 0;
    long n;
    for (n = 1; n < max; n++) {
        arm(0);
        vg_graph *g = vg_graph_new();
        memset(m, 0, msize);
        if (build(g, m) != VG_OK) {
            bad++;
            vg_graph_free(g);
            break;
        }
        arm(n);
        vg_status st;
        vg_session *s = NULL;
        vg_code rc = run(g, m, &s, &st);
        bool hit = injected(n);
        arm(0);
        if (rc != VG_OK && rc != VG_RESOURCE_EXHAUSTED) {
            if (bad < 50) fprintf(stderr, "  alloc %ld: code %d: %s\n", n, rc, st.msg);
            bad++;
        }
        vg_session_free(s);
        vg_graph_free(g);
        if (!hit) break;
    }
    *last = n;
    return bad;
}
/* For oom_run_each's run: a session (*sp) on g with one intra- and one inter-op thread
 * runs init, then train, then fetches each of fetches[n] in turn; the first failure's
 * code (OK when all ran). */
static inline vg_code oom_session_steps(vg_graph *g, vg_op *init, vg_op *train, const vg_output *fetches, int n,
                                        vg_session **sp, vg_status *st) {
    vg_code rc = VG_OK;
    vg_session_options opts = {.intra_op_threads = 1, .inter_op_threads = 1};
    vg_session *s = *sp = vg_session_new(g, &opts, st);
    if (!s) rc = st->code;
    if (rc == VG_OK) rc = vg_session_run_targets(s, &init, 1, st);
    if (rc == VG_OK) rc = vg_session_run_targets(s, &train, 1, st);
    for (int i = 0; i < n && rc == VG_OK; i++) {
        vg_tensor *t = NULL;
        rc = vg_session_run1(s, fetches[i], &t, st);
        vg_tensor_free(t);
    }
    return rc;
}
/* An OOM test's build drill over one model (m, msize bytes; build and complete as for
 * oom_build_each, up to max allocations): installs the failing allocator, checks that
 * every failure surfaced cleanly and that more than min_n allocations were exercised,
 * and restores the default allocator. */
static inline void oom_check_build(long max, void *m, size_t msize, vg_code (*build)(vg_graph *g, void *m),
                                   bool (*complete)(const void *m), long min_n) {
    oom_install();
    long n;
    int bad = oom_build_each(max, m, msize, build, complete, &n);
    vg_allocator_set(NULL);
    CHECK_EQ_INT(bad, 0);
    CHECK(n > min_n);
    fprintf(stderr, "  build: %ld allocations exercised\n", n);
}

/* The run drill likewise (oom_run_each over build and run, up to max allocations). */
static inline void oom_check_run(long max, void *m, size_t msize, vg_code (*build)(vg_graph *g, void *m),
                                 vg_code (*run)(vg_graph *g, void *m, vg_session **s, vg_status *st)) {
    oom_install();
    long n;
    int bad = oom_run_each(max, m, msize, build, run, &n);
    vg_allocator_set(NULL);
    CHECK_EQ_INT(bad, 0);
    fprintf(stderr, "  run: %ld allocations exercised\n", n);
}

/* An OOM test program's main: the build drill (at least min_n allocations) and the run
 * drill over one model, each reported "ok"/"FAIL" as RUN_TEST does; returns the exit
 * status (TEST_MAIN_END's). */
static inline int oom_test_main(long max, void *m, size_t msize, vg_code (*build)(vg_graph *g, void *m),
                                bool (*complete)(const void *m), long min_n,
                                vg_code (*run)(vg_graph *g, void *m, vg_session **s, vg_status *st)) {
    int before = vg_test_failures;
    oom_check_build(max, m, msize, build, complete, min_n);
    fprintf(stderr, "%s oom build drill\n", vg_test_failures == before ? "ok  " : "FAIL");
    before = vg_test_failures;
    oom_check_run(max, m, msize, build, run);
    fprintf(stderr, "%s oom run drill\n", vg_test_failures == before ? "ok  " : "FAIL");
    TEST_MAIN_END();
}

/* The model of both OOM tests: a train op, the variables' initializer and the nfetch
 * (1 or 2, set by build) outputs fetched after a training step. */
typedef struct oom_model {
    vg_op *train, *init;
    vg_output fetch[2];
    int nfetch;
} oom_model;

/* For oom_build_each's complete: every op of an oom_model is there. */
static inline bool oom_model_complete(const void *mp) {
    const oom_model *m = mp;
    bool ok = m->train && m->init && m->nfetch > 0;
    for (int i = 0; i < m->nfetch; i++) ok = ok && m->fetch[i].op;
    return ok;
}

/* For oom_run_each's run: init, a training step and the fetches in a new session (*sp). */
static inline vg_code oom_model_steps(vg_graph *g, void *mp, vg_session **sp, vg_status *st) {
    oom_model *m = mp;
    return oom_session_steps(g, m->init, m->train, m->fetch, m->nfetch, sp, st);
}

/* The input both models start from: the float constant "x" = [[1, 2], [3, 4]]. */
static inline vg_output oom_model_input(vg_graph *g) {
    static const float xv[4] = {1, 2, 3, 4};
    return vg_const_array(g, VG_FLOAT, (int64_t[]){2, 2}, 2, xv, "x");
}

/* The main of an OOM test over an oom_model built by build. */
static inline int oom_model_main(long max, vg_code (*build)(vg_graph *g, void *m), long min_n) {
    oom_model m;
    return oom_test_main(max, &m, sizeof m, build, oom_model_complete, min_n, oom_model_steps);
}
#endif
