/* conv_ref_fixture.h - the naive NHWC Conv2D reference the convolution tests of
 * tests/kernels compare the kernels with (test_nn_conv, test_backend). Include after
 * op_test_util.h (win). */
#ifndef VG_CONV_REF_FIXTURE_H
#define VG_CONV_REF_FIXTURE_H
#include "op_test_util.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A convolution's shapes: batch n, input h x w x ci, kernel kh x kw to co channels,
 * strides sh, sw, SAME (same) or VALID padding. */
typedef struct conv_cfg {
    int64_t n, h, w, ci, kh, kw, co, sh, sw;
    bool same;
} conv_cfg;

/* mode 0: y = conv(x, f); 1: dx (in x) from dy (in y), f; 2: df (in f) from x, dy. The
 * output is zeroed first. With round_f32 the operands are rounded to float32 (what the
 * float kernels see); with sc, each output's sum of |terms| is added to sc. */
static inline void conv_ref_ex(const conv_cfg *c, int mode, double *x, double *f, double *y, double *sc,
                               bool round_f32) {
    int64_t oh, ow, pt, pl;
    win(c->h, c->kh, c->sh, c->same, &oh, &pt);
    win(c->w, c->kw, c->sw, c->same, &ow, &pl);
    double *dst = mode == 0 ? y : mode == 1 ? x : f;
    int64_t ndst = mode == 0   ? c->n * oh * ow * c->co
                   : mode == 1 ? c->n * c->h * c->w * c->ci
                               : c->kh * c->kw * c->ci * c->co;
    memset(dst, 0, sizeof(double) * (size_t)ndst);
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t ky = 0; ky < c->kh; ky++)
                    for (int64_t kx = 0; kx < c->kw; kx++) {
                        int64_t iy = oy * c->sh - pt + ky, ix = ox * c->sw - pl + kx;
                        if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
                        for (int64_t ci = 0; ci < c->ci; ci++)
                            for (int64_t co = 0; co < c->co; co++) {
                                int64_t xi = ((n * c->h + iy) * c->w + ix) * c->ci + ci;
                                int64_t fi = ((ky * c->kw + kx) * c->ci + ci) * c->co + co;
                                int64_t yi = ((n * oh + oy) * ow + ox) * c->co + co;
                                double xv = x[xi], fv = f[fi], yv = y[yi];
                                if (round_f32) xv = (float)xv, fv = (float)fv, yv = (float)yv;
                                int64_t o = mode == 0 ? yi : mode == 1 ? xi : fi;
                                double t = mode == 0 ? xv * fv : mode == 1 ? yv * fv : xv * yv;
                                dst[o] += t;
                                if (sc) sc[o] += fabs(t);
                            }
                    }
}
#endif
