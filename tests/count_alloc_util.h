/* count_alloc_util.h - an allocator hook that counts allocations and fails one chosen
 * by countdown, and the loop over every allocation of a session run (the kernels'
 * allocation-failure tests). Install {count_alloc, count_free} with vg_allocator_set
 * before creating anything. Include after test_util.h. */
#ifndef VG_COUNT_ALLOC_UTIL_H
#define VG_COUNT_ALLOC_UTIL_H
#include "test_util.h"
#include "vigil/vigil.h"

static long alloc_countdown = -1; /* fail when it reaches 0; -1 = never */
static long alloc_count;          /* allocations so far */
static inline void *count_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    alloc_count++;
    if (alloc_countdown >= 0 && alloc_countdown-- == 0) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1)) return NULL;
    return p;
}
static inline void count_free(void *payload, void *p) {
    (void)payload;
    free(p);
}

/* Runs fetches d[nd] (at most 8) with feeds in[nin] = vals once (checked: the plan is
 * cached, so the failures below hit the kernels), counts the allocations of a second
 * good run, then fails each of them in turn: every run must succeed or fail with
 * RESOURCE_EXHAUSTED. Returns the number of runs that failed (some failures are
 * absorbed by design: a parallel_for that cannot queue runs inline). */
static inline int fail_each_alloc_of_run(vg_session *s, const vg_output *in, vg_tensor *const *vals, int nin,
                                         const vg_output *d, int nd) {
    vg_status st;
    vg_tensor *out[8] = {NULL};
    if (s) CHECK_OK(vg_session_run(s, NULL, in, vals, nin, d, out, nd, NULL, 0, NULL, &st), &st);
    for (int i = 0; i < nd; i++) vg_tensor_free(out[i]);
    alloc_count = 0;
    if (s) CHECK_OK(vg_session_run(s, NULL, in, vals, nin, d, out, nd, NULL, 0, NULL, &st), &st);
    for (int i = 0; i < nd; i++) vg_tensor_free(out[i]);
    long total = alloc_count;
    int failures = 0;
    for (long n = 0; s && n < total; n++) {
        for (int i = 0; i < nd; i++) out[i] = NULL;
        alloc_countdown = n;
        vg_code c = vg_session_run(s, NULL, in, vals, nin, d, out, nd, NULL, 0, NULL, &st);
        alloc_countdown = -1;
        for (int i = 0; i < nd; i++) vg_tensor_free(out[i]);
        if (c == VG_OK) continue;
        failures++;
        if (c != VG_RESOURCE_EXHAUSTED) fprintf(stderr, "alloc %ld: %s\n", n, st.msg);
        CHECK_CODE(c, VG_RESOURCE_EXHAUSTED);
    }
    return failures;
}

/* fail_each_alloc_of_run on a new session of g with 2 intra-op threads and 1 inter-op
 * thread (checked to open; freed after). */
static inline int fail_each_alloc_threaded(vg_graph *g, const vg_output *in, vg_tensor *const *vals, int nin,
                                           const vg_output *d, int nd) {
    vg_status st;
    vg_session_options o = {.intra_op_threads = 2, .inter_op_threads = 1};
    vg_session *s = vg_session_new(g, &o, &st);
    CHECK(s != NULL);
    int failures = fail_each_alloc_of_run(s, in, vals, nin, d, nd);
    vg_session_free(s);
    return failures;
}
#endif
