/* dist_fixture.h - what the tests of tests/dist share: joining and leaving the world in
 * main, and the plain (1-rank) run that starts `mpiexec -np 2` on itself with a rank that
 * dies on purpose. */
#ifndef VG_DIST_FIXTURE_H
#define VG_DIST_FIXTURE_H
#include "mpi_self_util.h"
#include "test_util.h"
#include <vigil/vigil.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* Joins the world (vg_dist_init; a failure is a failed check) and sets *rank and *size. */
static inline void dist_fx_init(int *rank, int *size) {
    vg_status st;
    CHECK_OK(vg_dist_init(&st), &st);
    *rank = vg_dist_rank();
    *size = vg_dist_size();
}

/* Leaves the world (vg_dist_finalize; a failure is a failed check) and returns main's
 * exit status: 1 when a check failed, else 0. */
static inline int dist_fx_end(void) {
    vg_status st;
    CHECK_OK(vg_dist_finalize(&st), &st);
    TEST_MAIN_END();
}

/* The plain (1-rank) run of a test whose job has a rank that dies: runs `mpiexec -np 2`
 * on this executable with --die (killed past timeout_s), reports it as `what`, and checks
 * that the job ended with a non-zero status within within_s seconds. Rank output lands in
 * out. Returns false (nothing run, nothing checked) under mpiexec already, in a build
 * without MPI, or with no mpiexec on the PATH. */
static inline bool dist_fx_dying_job(const char *what, double timeout_s, double within_s, char *out, size_t outlen) {
    out[0] = 0;
    if (vg_dist_size() != 1 || !vg_dist_mpi_built() || getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE"))
        return false;
    double took = 0;
    int rc = tu_mpiexec_self(2, "--die", timeout_s, out, outlen, &took);
    if (rc == 127) return false; /* no mpiexec on the PATH */
    fprintf(stderr, "%s: mpiexec status %d after %.2f s; %s\n", what, rc, took,
            out[0] ? out : "(killed by mpirun first)\n");
    CHECK(rc > 0);
    CHECK(took < within_s);
    return true;
}

/* A run of s on a thread of its own (a collective that waits for peers, while the test
 * closes the session): fetches f[0..n) into out[0..n) (owned by the caller). Start it
 * with dist_fx_bg_start; dist_fx_bg_join waits for it and returns the run's code. */
typedef struct dist_fx_bg {
    pthread_t th;
    vg_session *s;
    const vg_output *f;
    vg_tensor **out;
    int n;
    vg_code rc;
} dist_fx_bg;
static inline void *dist_fx_bg_main(void *p) {
    dist_fx_bg *r = p;
    vg_status st;
    r->rc = vg_session_run(r->s, NULL, NULL, NULL, 0, r->f, r->out, r->n, NULL, 0, NULL, &st);
    return NULL;
}
static inline void dist_fx_bg_start(dist_fx_bg *r, vg_session *s, const vg_output *f, vg_tensor **out, int n) {
    r->s = s, r->f = f, r->out = out, r->n = n, r->rc = VG_OK;
    pthread_create(&r->th, NULL, dist_fx_bg_main, r);
}
static inline vg_code dist_fx_bg_join(dist_fx_bg *r) {
    pthread_join(r->th, NULL);
    return r->rc;
}

/* A new buffer (the caller frees it) of n elements of dt (VG_FLOAT, VG_DOUBLE, VG_INT32
 * or VG_INT64): element i is v(k, i, r), times int_scale (truncated) for the integers. */
static inline void *dist_fx_fill(vg_dtype dt, int64_t n, double (*v)(int, int64_t, int), int k, int r,
                                 double int_scale) {
    void *p = malloc(n ? (size_t)n * vg_dtype_size(dt) : 1);
    for (int64_t i = 0; p && i < n; i++) {
        double x = v(k, i, r);
        if (dt == VG_FLOAT) ((float *)p)[i] = (float)x;
        else if (dt == VG_DOUBLE) ((double *)p)[i] = x;
        else if (dt == VG_INT32) ((int32_t *)p)[i] = (int32_t)(x * int_scale);
        else ((int64_t *)p)[i] = (int64_t)(x * int_scale);
    }
    return p;
}

/* A new graph g with loss = sum(y) ("loss") for x = ones [1, 4] ("x") and y = dense(x,
 * 3 units, ReLU) (kernel 48 B, bias 12 B), followed when second by dense(y, 2 units, no
 * activation) (kernel 24 B, bias 8 B) (vg_layers_dense's default names and
 * initializers), and opt: SGD at rate 0.1. dist_fx_model_free frees both. */
typedef struct dist_fx_model {
    vg_graph *g;
    vg_output loss;
    vg_optimizer *opt;
} dist_fx_model;
static inline dist_fx_model dist_fx_dense_model(bool second) {
    dist_fx_model m = {vg_graph_new(), {NULL, 0}, vg_optimizer_new_sgd(0.1)};
    vg_output x = vg_const_fill(m.g, VG_FLOAT, (int64_t[]){1, 4}, 2, 1.0, "x");
    vg_output y = vg_layers_dense(m.g, x, 3, VG_ACT_RELU, NULL);
    if (second) y = vg_layers_dense(m.g, y, 2, VG_ACT_NONE, NULL);
    m.loss = vg_reduce_sum(m.g, y, NULL, 0, false, "loss");
    return m;
}
static inline void dist_fx_model_free(dist_fx_model *m) {
    vg_optimizer_free(m->opt);
    vg_graph_free(m->g);
}

/* One run of ms with the single target op and no fetches; its code (*st set by it). */
static inline vg_code dist_fx_run_op(vg_monitored_session *ms, vg_op *op, vg_status *st) {
    vg_run_args a = {0};
    a.targets = &op;
    a.ntargets = 1;
    return vg_monitored_session_run(ms, &a, NULL, NULL, st);
}

/* One run of ms fetching x into *out (the caller frees it); its code (*st set by it). */
static inline vg_code dist_fx_fetch(vg_monitored_session *ms, vg_output x, vg_tensor **out, vg_status *st) {
    vg_run_args a = {0};
    a.fetches = &x;
    a.nfetches = 1;
    return vg_monitored_session_run(ms, &a, out, NULL, st);
}
#endif
