/* gradcheck.h - finite-difference gradient check for tests (like ggml's "grad" mode).
 *
 * vg_gradcheck(g, xs, xvals, n, y, eps, tol): with L = sum(y * C) for a fixed random C,
 * compares vg_gradients(L, xs) with central differences (L(x+eps) - L(x-eps)) / 2eps
 * for every element of every x (fed through feeds; x may be any output, usually a
 * Placeholder). Works for float32 and float64 xs. Returns the number of mismatches
 * (printing the first few). Extra feeds (not differentiated) can be given in
 * extra_feeds/extra_vals. */
#ifndef VG_GRADCHECK_H
#define VG_GRADCHECK_H
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double gc_get(const vg_tensor *t, int64_t i) {
    if (vg_tensor_dtype(t) == VG_DOUBLE) return ((const double *)vg_tensor_data(t))[i];
    return ((const float *)vg_tensor_data(t))[i];
}
static void gc_set(vg_tensor *t, int64_t i, double v) {
    if (vg_tensor_dtype(t) == VG_DOUBLE) ((double *)vg_tensor_data(t))[i] = v;
    else ((float *)vg_tensor_data(t))[i] = (float)v;
}

static inline int vg_gradcheck_ex(vg_graph *g, const vg_output *xs, vg_tensor *const *xvals, int n,
                           const vg_output *extra_feeds, vg_tensor *const *extra_vals, int nextra,
                           vg_output y, double eps, double tol) {
    vg_status st;
    int bad = 0, nf = n + nextra;
    vg_output *feeds = malloc(sizeof(vg_output) * (size_t)(nf + 1));
    vg_tensor **fv = malloc(sizeof(vg_tensor *) * (size_t)(nf + 1));
    for (int i = 0; i < n; i++) { feeds[i] = xs[i]; fv[i] = vg_tensor_copy(xvals[i], &st); }
    for (int i = 0; i < nextra; i++) { feeds[n + i] = extra_feeds[i]; fv[n + i] = extra_vals[i]; }
    /* Shape of y from one run. */
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) { fprintf(stderr, "gradcheck: session: %s\n", st.msg); return 1; }
    vg_tensor *yv = NULL;
    if (vg_session_run(s, NULL, feeds, fv, nf, &y, &yv, 1, NULL, 0, NULL, &st)) {
        fprintf(stderr, "gradcheck: forward: %s\n", st.msg); vg_session_free(s); return 1;
    }
    vg_session_free(s);
    vg_dtype ydt = vg_tensor_dtype(yv);
    vg_tensor *c = vg_tensor_new(ydt, vg_tensor_dims(yv), vg_tensor_ndims(yv), &st);
    srand(1234);
    for (int64_t i = 0; i < vg_tensor_num_elements(c); i++) gc_set(c, i, (rand() / (double)RAND_MAX) * 2 - 1);
    vg_tensor_free(yv);
    vg_output L = vg_reduce_sum(g, vg_mul(g, y, vg_const(g, c, "gc_c"), "gc_mul"), NULL, -1, false, "gc_L");
    vg_tensor_free(c);
    vg_output *dx = calloc((size_t)n, sizeof(vg_output));
    if (vg_gradients(g, &L, 1, xs, n, NULL, dx, &st) != VG_OK) {
        fprintf(stderr, "gradcheck: gradients: %s\n", st.msg); return 1;
    }
    s = vg_session_new(g, NULL, &st);
    if (!s) { fprintf(stderr, "gradcheck: session: %s\n", st.msg); return 1; }
    for (int k = 0; k < n; k++) {
        if (!dx[k].op) { fprintf(stderr, "gradcheck: no gradient for x%d\n", k); bad++; continue; }
        vg_tensor *an = NULL;
        if (vg_session_run(s, NULL, feeds, fv, nf, &dx[k], &an, 1, NULL, 0, NULL, &st)) {
            fprintf(stderr, "gradcheck: backward: %s\n", st.msg); bad++; continue;
        }
        for (int64_t i = 0; i < vg_tensor_num_elements(fv[k]); i++) {
            double x0 = gc_get(fv[k], i), lp, lm;
            vg_tensor *o = NULL;
            gc_set(fv[k], i, x0 + eps);
            vg_session_run(s, NULL, feeds, fv, nf, &L, &o, 1, NULL, 0, NULL, &st);
            lp = vg_tensor_scalar(o); vg_tensor_free(o);
            gc_set(fv[k], i, x0 - eps);
            vg_session_run(s, NULL, feeds, fv, nf, &L, &o, 1, NULL, 0, NULL, &st);
            lm = vg_tensor_scalar(o); vg_tensor_free(o);
            gc_set(fv[k], i, x0);
            double num = (lp - lm) / (2 * eps), a = gc_get(an, i);
            if (!(fabs(num - a) <= tol * (1 + fabs(num)))) {
                if (bad < 8) fprintf(stderr, "gradcheck x%d[%lld]: analytic %.6g numeric %.6g\n", k, (long long)i, a, num);
                bad++;
            }
        }
        vg_tensor_free(an);
    }
    vg_session_free(s);
    for (int i = 0; i < n; i++) vg_tensor_free(fv[i]);
    free(feeds); free(fv); free(dx);
    return bad;
}

static inline int vg_gradcheck(vg_graph *g, const vg_output *xs, vg_tensor *const *xvals, int n,
                        vg_output y, double eps, double tol) {
    return vg_gradcheck_ex(g, xs, xvals, n, NULL, NULL, 0, y, eps, tol);
}
#endif
