/* op_test_util.h - helpers shared by the op tests of the TF1 model-building library
 * (test_math_ext_ops.c, test_nn_ext_ops.c, ...): typed element access, Consts from
 * double arrays, one-shot runs and value comparison. */
#ifndef VG_OP_TEST_UTIL_H
#define VG_OP_TEST_UTIL_H
#include "test_util.h"
#include "vigil/vigil.h"

static inline double ot_get(const vg_tensor *t, int64_t i) {
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

static inline void ot_set(vg_tensor *t, int64_t i, double v) {
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

static inline vg_tensor *ot_mk(vg_dtype dt, const int64_t *dims, int nd, const double *v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(dt, dims, nd, &st);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) ot_set(t, i, v[i]);
    return t;
}

static inline vg_output ot_const(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, const double *v) {
    vg_tensor *t = ot_mk(dt, dims, nd, v);
    vg_output o = vg_const(g, t, NULL);
    vg_tensor_free(t);
    return o;
}

/* Runs y once in a fresh session; NULL on failure (st set). */
static inline vg_tensor *ot_run_st(vg_graph *g, vg_output y, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return NULL;
    vg_tensor *out = NULL;
    vg_session_run1(s, y, &out, st);
    vg_session_free(s);
    return out;
}

static inline vg_tensor *ot_run(vg_graph *g, vg_output y) {
    vg_status st;
    vg_code c = vg_graph_status(g, &st);
    if (c != VG_OK) {
        fprintf(stderr, "graph error: %s\n", st.msg);
        vg_test_failures++;
        return NULL;
    }
    vg_tensor *t = ot_run_st(g, y, &st);
    if (!t) {
        fprintf(stderr, "run failed: %s\n", st.msg);
        vg_test_failures++;
    }
    return t;
}

/* Checks t's dtype, shape and values (NaN matches NaN, infinities exactly); frees t. */
static inline void ot_expect(vg_tensor *t, vg_dtype dt, const int64_t *dims, int nd, const double *v, double tol) {
    if (!t) { vg_test_failures++; return; }
    CHECK_EQ_INT(vg_tensor_dtype(t), dt);
    CHECK_EQ_INT(vg_tensor_ndims(t), nd);
    if (vg_tensor_ndims(t) == nd) {
        for (int i = 0; i < nd; i++) CHECK_EQ_INT(vg_tensor_dim(t, i), dims[i]);
        for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
            if (isnan(v[i])) CHECK(isnan(ot_get(t, i)));
            else if (isinf(v[i])) CHECK(ot_get(t, i) == v[i]);
            else if (fabs(ot_get(t, i) - v[i]) > tol * (1 + fabs(v[i]))) {
                fprintf(stderr, "  element %lld: got %.9g expected %.9g\n", (long long)i, ot_get(t, i), v[i]);
                vg_test_failures++;
            }
        }
    }
    vg_tensor_free(t);
}

/* A Placeholder of dt/dims and a matching tensor filled from v (for gradcheck). */
static inline vg_output ot_ph(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, const double *v, vg_tensor **val) {
    *val = ot_mk(dt, dims, nd, v);
    return vg_placeholder(g, dt, dims, nd, NULL);
}
#endif
