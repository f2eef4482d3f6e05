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

/* A unary op builder of the public API (vg_floor, vg_lgamma, ...). */
typedef vg_output (*kt_unary_op)(vg_graph *g, vg_output x, const char *name);

/* Checks that op has no int32 kernel: built on an int32 Const in a fresh graph, it
 * returns no op and the graph fails with INVALID_ARGUMENT naming op_name and int32. */
static inline void kt_expect_no_int32_kernel(kt_unary_op op, const char *op_name) {
    vg_graph *g = vg_graph_new();
    vg_output r = op(g, vg_const_i32(g, 3, NULL), NULL);
    vg_status st;
    CHECK(r.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, op_name);
    CHECK_STR_CONTAINS(st.msg, "int32");
    vg_graph_free(g);
}

/* A float32 tensor of shape d[nd] holding deterministic pseudo-random values in
 * [-scale / 2, scale / 2) (an LCG from seed); the caller frees it. */
static inline vg_tensor *kt_rand_f32(const int64_t *d, int nd, unsigned seed, double scale) {
    vg_tensor *t = vg_tensor_new(VG_FLOAT, d, nd, NULL);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        seed = seed * 1103515245u + 12345u;
        ((float *)vg_tensor_data(t))[i] = (float)((((seed >> 8) & 0xffff) / 65535.0 - 0.5) * scale);
    }
    return t;
}

/* Fills v[n] from the LCG seed = seed * 1664525 + 1013904223: each step's bits 8..31 over
 * 2^shift, minus offset (shift 24, offset 0.5: values in [-0.5, 0.5)). */
static inline void kt_fill_lcg(float *v, int64_t n, uint32_t seed, int shift, float offset) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffffff) / (float)(1 << shift) - offset;
    }
}

/* Runs the n fetches f of g into o (checked to succeed) in a fresh session with automatic
 * mixed precision set to amp. */
static inline void kt_run_amp(vg_graph *g, bool amp, const vg_output *f, vg_tensor **o, int n) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_set_auto_mixed_precision(s, amp, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, n, NULL, 0, NULL, &st), &st);
    vg_session_free(s);
}

/* Runs the n fetches f of g in a fresh session (default options) into out; the run's
 * code (the session's when it cannot start), with *st set. */
static inline vg_code kt_run(vg_graph *g, const vg_output *f, int n, vg_tensor **out, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return st->code;
    vg_code c = vg_session_run(s, NULL, NULL, NULL, 0, f, out, n, NULL, 0, NULL, st);
    vg_session_free(s);
    return c;
}

/* A Const (named name, NULL: the default) holding t, which it takes: t is freed. */
static inline vg_output kt_const_take(vg_graph *g, vg_tensor *t, const char *name) {
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

/* A vg_cond / vg_case branch whose one output is the int32 Const (int32_t)(intptr_t)u
 * (tests pass the value a branch should produce as its user pointer). */
static inline vg_code kt_i32_branch(vg_graph *g, void *u, vg_output *o) {
    o[0] = vg_const_i32(g, (int32_t)(intptr_t)u, NULL);
    return VG_OK;
}

/* n doubles uniform in [lo, hi] from rand() after srand(seed); the caller frees them. */
static inline double *kt_randv_range(int64_t n, unsigned seed, double lo, double hi) {
    double *v = malloc(sizeof(double) * (size_t)n);
    srand(seed);
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * rand() / (double)RAND_MAX;
    return v;
}

/* g exported as a binary GraphDef and imported (with io, which may be NULL) into a new
 * graph, which is returned (the caller frees it); a failed step is a test failure. */
static inline vg_graph *kt_reimported(vg_graph *g, const vg_import_options *io) {
    vg_status st;
    void *bytes = NULL;
    size_t len = 0;
    vg_graph *h = vg_graph_new();
    if (vg_graph_to_graphdef(g, &bytes, &len, &st) != VG_OK || vg_graph_import_graph_def(h, bytes, len, io, &st) != VG_OK) {
        fprintf(stderr, "  GraphDef round trip: %s\n", st.msg);
        vg_test_failures++;
    }
    vg_free(bytes);
    return h;
}

/* A binary op builder of the public API (vg_sub, vg_bias_add, ...). */
typedef vg_output (*kt_binary_op)(vg_graph *g, vg_output a, vg_output b, const char *name);

/* op on the placeholders a (dtype ta, shape da[na]) and b (tb, db[nb]) in a new graph:
 * the builder gives no op and the graph's status is INVALID_ARGUMENT with a message that
 * contains what and, unless NULL, msg. */
static inline void kt_expect_binary_build_error(kt_binary_op op, vg_dtype ta, const int64_t *da, int na, vg_dtype tb,
                                                const int64_t *db, int nb, const char *what, const char *msg) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, ta, da, na, "a"), b = vg_placeholder(g, tb, db, nb, "b");
    CHECK(op(g, a, b, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, what);
    if (msg) CHECK_STR_CONTAINS(st.msg, msg);
    vg_graph_free(g);
}

/* A new float64 tensor of shape dims[nd] whose element i is sin(freq * i), or
 * cos(freq * i) when cosine (smooth gradient-check inputs); the caller frees it. */
static inline vg_tensor *kt_wave_f64(const int64_t *dims, int nd, bool cosine, double freq) {
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, dims, nd, NULL);
    double *v = t ? vg_tensor_data(t) : NULL;
    for (int64_t i = 0; v && i < vg_tensor_num_elements(t); i++)
        v[i] = cosine ? cos(freq * (double)i) : sin(freq * (double)i);
    return t;
}

/* TF's `with tf.control_dependencies([dep]): x + 1`: an int32 Const 1 named const_name (NULL:
 * the default) and the Add named name, both under the control dependency on dep. */
static inline vg_output kt_inc_after(vg_graph *g, vg_op *dep, vg_output x, const char *const_name, const char *name) {
    vg_graph_push_control_deps(g, &dep, 1);
    vg_output y = vg_add(g, x, vg_const_i32(g, 1, const_name), name);
    vg_graph_pop_control_deps(g);
    return y;
}

#endif
