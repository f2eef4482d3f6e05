/* op_test_util.h - helpers shared by the op tests (test_array_*.c, test_math_*.c, test_nn_*.c):
 * element access by index as double whatever the dtype, tensors and Consts from double
 * arrays, one-shot session runs (optionally with N intra-op threads), and value checks. Include after test_util.h. */
#ifndef VG_OP_TEST_UTIL_H
#define VG_OP_TEST_UTIL_H
#include "test_util.h"
#include "vigil/vigil.h"

/* Element i of t as a double (NAN for dtypes without a numeric reading). */
static inline double get(const vg_tensor *t, int64_t i) {
    const void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: return ((const float *)d)[i];
    case VG_DOUBLE: return ((const double *)d)[i];
    case VG_INT32: return ((const int32_t *)d)[i];
    case VG_INT64: return (double)((const int64_t *)d)[i];
    case VG_UINT8: return ((const uint8_t *)d)[i];
    case VG_BOOL: return ((const uint8_t *)d)[i];
    default: return NAN;
    }
}

/* Sets element i of t from a double (bool: v != 0). */
static inline void set(vg_tensor *t, int64_t i, double v) {
    void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: ((float *)d)[i] = (float)v; break;
    case VG_DOUBLE: ((double *)d)[i] = v; break;
    case VG_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case VG_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    case VG_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case VG_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: break;
    }
}

/* New tensor of dtype dt and shape dims holding v (v == NULL: 0, 1, 2, ...). */
static inline vg_tensor *mk(vg_dtype dt, const int64_t *dims, int nd, const double *v) {
    vg_tensor *t = vg_tensor_new(dt, dims, nd, NULL);
    if (!t) return NULL;
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) set(t, i, v ? v[i] : (double)i);
    return t;
}

/* A Const holding mk(dt, dims, nd, v). */
static inline vg_output cst(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, const double *v) {
    vg_tensor *t = mk(dt, dims, nd, v);
    vg_output o = vg_const(g, t, NULL);
    vg_tensor_free(t);
    return o;
}

/* Runs fetches with feeds on a fresh session with `threads` intra-op threads (and one
 * inter-op thread). */
static inline vg_code run_threads(vg_graph *g, int threads, const vg_output *feeds, vg_tensor *const *vals,
                                  int nfeeds, const vg_output *fetches, vg_tensor **out, int nfetches, vg_status *st) {
    vg_session_options o = {0};
    o.intra_op_threads = threads;
    o.inter_op_threads = 1;
    vg_session *s = vg_session_new(g, &o, st);
    if (!s) return st->code;
    vg_code c = vg_session_run(s, NULL, feeds, vals, nfeeds, fetches, out, nfetches, NULL, 0, NULL, st);
    vg_session_free(s);
    return c;
}

/* Runs y with feeds in a fresh session: the value, or NULL with *st set. */
static inline vg_tensor *run_feeds(vg_graph *g, vg_output y, const vg_output *f, vg_tensor *const *fv, int nf,
                                   vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return NULL;
    vg_tensor *out = NULL;
    vg_session_run(s, NULL, f, fv, nf, &y, &out, 1, NULL, 0, NULL, st);
    vg_session_free(s);
    return out;
}

/* Runs y without feeds; a failure counts as a failed check (and returns NULL). */
static inline vg_tensor *run(vg_graph *g, vg_output y) {
    vg_status st;
    vg_tensor *t = run_feeds(g, y, NULL, NULL, 0, &st);
    if (!t) {
        fprintf(stderr, "run failed: %s\n", st.msg);
        vg_test_failures++;
    }
    return t;
}

/* Checks dtype, dims and values (within tol, relative; an expected NaN or infinity must
 * match exactly); t stays the caller's. */
static inline void check_values(const vg_tensor *t, vg_dtype dt, const int64_t *dims, int nd, const double *v,
                                double tol) {
    if (!t) { vg_test_failures++; return; }
    CHECK_EQ_INT(vg_tensor_dtype(t), dt);
    CHECK_EQ_INT(vg_tensor_ndims(t), nd);
    if (vg_tensor_ndims(t) != nd) return;
    for (int i = 0; i < nd; i++) CHECK_EQ_INT(vg_tensor_dim(t, i), dims[i]);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        if (isnan(v[i])) CHECK(isnan(get(t, i)));
        else if (isinf(v[i])) CHECK(get(t, i) == v[i]);
        else CHECK_NEAR(get(t, i), v[i], tol);
    }
}

/* Checks the element count and the n values of t (within tol, relative). */
static inline void check_elems(const vg_tensor *t, const double *want, int64_t n, double tol) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(vg_tensor_num_elements(t), n);
    for (int64_t i = 0; i < n && i < vg_tensor_num_elements(t); i++) CHECK_NEAR(get(t, i), want[i], tol);
}

/* check_values with tol 1e-6, then frees t. */
static inline void expect(vg_tensor *t, vg_dtype dt, const int64_t *dims, int nd, const double *v) {
    check_values(t, dt, dims, nd, v, 1e-6);
    vg_tensor_free(t);
}

/* Runs y (with feeds) and expects a failure with code and a message containing msg. */
static inline void expect_run_error(vg_graph *g, vg_output y, const vg_output *f, vg_tensor *const *fv, int nf,
                                    vg_code code, const char *msg) {
    vg_status st;
    vg_tensor *t = run_feeds(g, y, f, fv, nf, &st);
    CHECK(t == NULL);
    vg_tensor_free(t);
    CHECK_EQ_INT(st.code, code);
    CHECK_STR_CONTAINS(st.msg, msg);
}

/* Runs y without feeds: the value, or NULL with *st set (no check counted). */
static inline vg_tensor *run_st(vg_graph *g, vg_output y, vg_status *st) {
    return run_feeds(g, y, NULL, NULL, 0, st);
}

/* check_values with tolerance tol, then frees t. */
static inline void expect_tol(vg_tensor *t, vg_dtype dt, const int64_t *dims, int nd, const double *v, double tol) {
    check_values(t, dt, dims, nd, v, tol);
    vg_tensor_free(t);
}

/* A Placeholder of dt/dims and a matching tensor filled from v (for gradcheck). */
static inline vg_output ph(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, const double *v, vg_tensor **val) {
    *val = mk(dt, dims, nd, v);
    return vg_placeholder(g, dt, dims, nd, NULL);
}

/* n deterministic pseudo-random values in [-1, 1) (an LCG started from seed * 2654435761 + add);
 * the caller frees them. */
static inline double *randv_from(int64_t n, unsigned seed, unsigned add) {
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    unsigned s = seed * 2654435761u + add;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        v[i] = ((s >> 8) & 0xffff) / 32768.0 - 1.0;
    }
    return v;
}
static inline double *randv(int64_t n, unsigned seed) { return randv_from(n, seed, 7); }

/* TF's window arithmetic, written independently of the library: the output size of a
 * window k with stride s over in elements, and the padding before it (SAME or VALID). */
static inline void win(int64_t in, int64_t k, int64_t s, bool same, int64_t *out, int64_t *pad) {
    if (same) {
        *out = (in + s - 1) / s;
        int64_t t = (*out - 1) * s + k - in;
        *pad = t > 0 ? t / 2 : 0;
    } else {
        *out = (in - k + s) / s;
        *pad = 0;
    }
}

/* The largest |a[i] - b[i]| (infinite where either is NaN) over 1 + max |b[i]|: the
 * fused-against-unfused comparisons of the fusion tests. */
static inline double tu_rel_diff(const vg_tensor *a, const vg_tensor *b) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(a); i++) {
        double d = fabs(get(a, i) - get(b, i));
        if (d > m || d != d) m = d != d ? INFINITY : d;
        if (fabs(get(b, i)) > s) s = fabs(get(b, i));
    }
    return m / (1.0 + s);
}

/* Runs the gradients dws[0..n) (n <= 8) with 2 intra-op threads and the nf feeds,
 * checking each has the static shape of its variable ws[i]; frees the gradients (the
 * feeds stay the caller's). */
static inline void check_grad_shapes(vg_graph *g, const vg_output *feeds, vg_tensor *const *vals, int nf,
                                     const vg_output *ws, const vg_output *dws, int n) {
    vg_status st;
    vg_tensor *out[8] = {0};
    CHECK_OK(run_threads(g, 2, feeds, vals, nf, dws, out, n, &st), &st);
    for (int i = 0; i < n; i++) {
        CHECK(out[i] != NULL);
        if (!out[i]) continue;
        vg_shape s = vg_tensor_shape(out[i]), want = vg_output_shape(ws[i]);
        CHECK_EQ_INT(s.ndims, want.ndims);
        for (int k = 0; k < s.ndims; k++) CHECK_EQ_INT(s.dims[k], want.dims[k]);
        vg_tensor_free(out[i]);
    }
}

/* For a graph whose two trainable variables are a layer's beta and gamma (float, C values
 * each): d[0..3) = the gradients of L with respect to x and to the two variables' snapshots,
 * init[0..3) = the global initializer and the assignments of gb[0] and gb[1] to the
 * variables. False (after a failed check) where g does not have exactly two. */
static inline bool two_var_grads_init(vg_graph *g, vg_output L, vg_output x, double *const gb[2], int64_t C,
                                      vg_output d[3], vg_op *init[3]) {
    int nv = 0;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 2);
    if (nv != 2) return false;
    vg_output wrt[3] = {x, vg_variable_snapshot(vars[0].op), vg_variable_snapshot(vars[1].op)};
    vg_status st;
    CHECK_OK(vg_gradients(g, &L, 1, wrt, 3, NULL, d, &st), &st);
    init[0] = vg_global_variables_initializer(g);
    for (int i = 0; i < 2; i++) init[1 + i] = vg_assign(g, vars[i], cst(g, VG_FLOAT, &C, 1, gb[i]), true, NULL).op;
    return true;
}

#endif
