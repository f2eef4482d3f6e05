/* cf_tf_util.h - helpers for the translations of TF 1.15's control_flow_ops_py_test.py
 * (test_cf_tf_cond.c, test_cf_tf_while.c, test_cf_tf_grad.c): run a fetch with feeds
 * and compare it with the values TF's assertions name, TF's Python helpers that are
 * plain graph idioms (with_dependencies, tuple, map_fn), and the gradient call. */
#ifndef VG_CF_TF_UTIL_H
#define VG_CF_TF_UTIL_H
#include "test_util.h"
#include "op_test_util.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"

/* ---- feeds ------------------------------------------------------------------ */
typedef struct cf_feed {
    vg_output x;
    vg_tensor *t; /* freed by the cf_* run helpers */
} cf_feed;

/* A scalar feed of x's dtype (dt when x's dtype is not known). */
static inline cf_feed fd(vg_output x, double v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(vg_output_dtype(x), NULL, 0, &st);
    if (t) set(t, 0, v);
    return (cf_feed){x, t};
}
/* A 1-D feed of x's dtype. */
static inline cf_feed fdv(vg_output x, const double *v, int n) {
    vg_status st;
    int64_t d = n;
    vg_tensor *t = vg_tensor_new(vg_output_dtype(x), &d, 1, &st);
    for (int i = 0; t && i < n; i++) set(t, i, v[i]);
    return (cf_feed){x, t};
}
#define FEEDS(...) (cf_feed[]){__VA_ARGS__}, (int)(sizeof((cf_feed[]){__VA_ARGS__}) / sizeof(cf_feed))
#define NOFEED NULL, 0

/* Runs fetches y[0..ny) and targets with feeds (freed here). Returns the run's code;
 * out[i] get the values (caller frees). */
static inline vg_code cf_run(vg_session *s, const vg_output *y, vg_tensor **out, int ny, vg_op *const *targets, int nt,
                             const cf_feed *f, int nf, vg_status *st) {
    vg_output xs[16] = {{NULL, 0}};
    vg_tensor *vs[16] = {NULL};
    for (int i = 0; i < nf && i < 16; i++) {
        xs[i] = f[i].x;
        vs[i] = f[i].t;
    }
    for (int i = 0; i < ny; i++) out[i] = NULL;
    vg_code rc = vg_session_run(s, NULL, nf ? xs : NULL, nf ? vs : NULL, nf, y, out, ny, targets, nt, NULL, st);
    for (int i = 0; i < nf; i++) vg_tensor_free(f[i].t);
    return rc;
}

/* Fetches y and compares it elementwise with want[0..n) (n == 1 and a scalar y: a
 * scalar); dims (ndims >= 0) also checks the shape. */
static inline void cf_expect(vg_session *s, vg_output y, const cf_feed *f, int nf, const double *want, int n,
                             const int64_t *dims, int ndims, double tol, const char *file, int line) {
    vg_status st;
    vg_tensor *t = NULL;
    vg_code rc = cf_run(s, &y, &t, 1, NULL, 0, f, nf, &st);
    if (rc != VG_OK) {
        fprintf(stderr, "%s:%d: run of %s failed: code %d: %s\n", file, line, y.op ? vg_op_name(y.op) : "?", rc,
                st.msg);
        vg_test_failures++;
        return;
    }
    int64_t ne = vg_tensor_num_elements(t);
    bool bad = ne != n;
    if (ndims >= 0) {
        bad |= vg_tensor_ndims(t) != ndims;
        for (int i = 0; !bad && i < ndims; i++) bad |= vg_tensor_dim(t, i) != dims[i];
    }
    for (int64_t i = 0; !bad && i < ne; i++) {
        double a = get(t, i), b = want[i];
        bad |= !(fabs(a - b) <= tol * (1.0 + fabs(b)));
    }
    if (bad) {
        fprintf(stderr, "%s:%d: %s = [", file, line, vg_op_name(y.op));
        for (int64_t i = 0; i < ne && i < 16; i++) fprintf(stderr, "%s%.9g", i ? ", " : "", get(t, i));
        fprintf(stderr, "] (%lld elements, rank %d), expected [", (long long)ne, vg_tensor_ndims(t));
        for (int i = 0; i < n && i < 16; i++) fprintf(stderr, "%s%.9g", i ? ", " : "", want[i]);
        fprintf(stderr, "]\n");
        vg_test_failures++;
    }
    vg_tensor_free(t);
}
#define EXPECT_VAL(s, y, want, ...) \
    cf_expect(s, y, __VA_ARGS__, (double[]){want}, 1, NULL, -1, 1e-6, __FILE__, __LINE__)
#define EXPECT_VEC(s, y, n, wantarr, ...) cf_expect(s, y, __VA_ARGS__, wantarr, n, NULL, -1, 1e-6, __FILE__, __LINE__)

/* Runs y (a fetch) or target (when y.op is NULL) and expects code, with msg in the
 * message when msg is not NULL. */
static inline void cf_expect_code(vg_session *s, vg_output y, vg_op *target, const cf_feed *f, int nf, vg_code code,
                                  const char *msg, const char *file, int line) {
    vg_status st;
    vg_tensor *t = NULL;
    vg_code rc = y.op ? cf_run(s, &y, &t, 1, NULL, 0, f, nf, &st) : cf_run(s, NULL, NULL, 0, &target, 1, f, nf, &st);
    vg_tensor_free(t);
    if (rc != code) {
        fprintf(stderr, "%s:%d: run returned %d (%s), expected %d\n", file, line, rc, rc ? st.msg : "", code);
        vg_test_failures++;
    } else if (msg && rc != VG_OK && !strstr(st.msg, msg)) {
        fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", file, line, st.msg, msg);
        vg_test_failures++;
    }
}
#define EXPECT_CODE(s, y, code, msg, ...) cf_expect_code(s, y, NULL, __VA_ARGS__, code, msg, __FILE__, __LINE__)

/* Runs targets; a failure is a test failure. */
static inline void cf_targets(vg_session *s, vg_op *const *t, int n, const char *file, int line) {
    vg_status st;
    if (vg_session_run_targets(s, t, n, &st) != VG_OK) {
        fprintf(stderr, "%s:%d: running targets failed: %s\n", file, line, st.msg);
        vg_test_failures++;
    }
}
#define RUN_TARGET(s, op)                          \
    do {                                           \
        vg_op *_t = (op);                          \
        cf_targets(s, &_t, 1, __FILE__, __LINE__); \
    } while (0)
#define RUN_INIT(s, g) RUN_TARGET(s, vg_global_variables_initializer(g))

static inline vg_session *cf_session(vg_graph *g) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) {
        fprintf(stderr, "session failed: %s\n", st.msg);
        vg_test_failures++;
    }
    return s;
}

/* ---- TF's Python helpers ------------------------------------------------------ */
/* control_flow_ops.with_dependencies(deps, t): identity(t) under control_dependencies. */
static inline vg_output with_deps(vg_graph *g, vg_op *const *deps, int n, vg_output t, const char *name) {
    vg_graph_push_control_deps(g, deps, n);
    vg_output r = vg_identity(g, t, name);
    vg_graph_pop_control_deps(g);
    return r;
}
static inline vg_output with_dep(vg_graph *g, vg_op *dep, vg_output t) { return with_deps(g, &dep, 1, t, NULL); }

/* tf.gradients(y, x)[0]; {NULL, 0} is TF's None. A failure is a test failure. */
static inline vg_output cf_grad_ex(vg_graph *g, const vg_output *ys, int ny, vg_output x, const vg_output *gys,
                                   const char *file, int line) {
    vg_status st;
    vg_output dx = {NULL, 0};
    if (vg_gradients(g, ys, ny, &x, 1, gys, &dx, &st) != VG_OK) {
        fprintf(stderr, "%s:%d: vg_gradients failed: %s\n", file, line, st.msg);
        vg_test_failures++;
        return vg_out(NULL, 0);
    }
    return dx;
}
#define GRAD(g, y, x) cf_grad_ex(g, (vg_output[]){y}, 1, x, NULL, __FILE__, __LINE__)

/* ---- shared by the three translations ------------------------------------------- */
/* The state the tests hand their branch and loop callbacks. */
typedef struct env {
    vg_output a, b, c, d, e, x, y;
    vg_op *op;
    int k;
} env;

static inline vg_output i32c(vg_graph *g, int v) { return vg_const_i32(g, v, NULL); }
static inline vg_output f32c(vg_graph *g, float v) { return vg_const_f32(g, v, NULL); }

/* cf_expect in a fresh session on g (after the global variables' initializer when
 * init), then frees g. */
static inline void cf_expect_once(vg_graph *g, bool init, vg_output y, const cf_feed *f, int nf, const double *want,
                                  int n, const char *file, int line) {
    vg_session *s = cf_session(g);
    if (s && init) cf_targets(s, (vg_op *[]){vg_global_variables_initializer(g)}, 1, file, line);
    if (s) cf_expect(s, y, f, nf, want, n, NULL, -1, 1e-6, file, line);
    vg_session_free(s);
    vg_graph_free(g);
}
#define EXPECT_VAL_ONCE(g, init, y, want, ...) \
    cf_expect_once(g, init, y, __VA_ARGS__, (double[]){want}, 1, __FILE__, __LINE__)
#define EXPECT_VEC_ONCE(g, init, y, n, wantarr, ...) \
    cf_expect_once(g, init, y, __VA_ARGS__, wantarr, n, __FILE__, __LINE__)

/* The constant predicate of TF's tests, math_ops.less(1, 2). */
static inline vg_output one_lt_two(vg_graph *g) { return vg_less(g, i32c(g, 1), i32c(g, 2), NULL); }

#endif
