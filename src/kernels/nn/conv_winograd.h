/*
 * conv_winograd.h - Winograd F(2x2,5x5) float32 convolutions (NHWC input, HWIO
 * filter, 5x5 window, stride 1, any padding) on AVX-512, used by conv_ops.c for the
 * forward pass (bias / ReLU fused), the input gradient (the forward algorithm on dy
 * with the filter rotated by 180 degrees and its channels swapped) and the filter
 * gradient (F(5x5,2x2) in the same transform domain, summed over every tile of the
 * batch). 6x6 input tiles, interpolation points 0, +-1, +-2 and infinity: 36
 * multiplies per 2x2 output tile instead of 100.
 *
 * Callers split the batch over their threads (images [i0, i1) per call) and give
 * each call its own scratch. Nothing here allocates, locks or fails.
 */
#ifndef VG_CONV_WINOGRAD_H
#define VG_CONV_WINOGRAD_H

#include "core/core.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when this CPU runs the kernels (AVX-512F); false elsewhere (the caller then
 * uses another path). */
VG_HIDDEN bool vg__wino_cpu_ok(void);

/* True when channel counts ic (input) and oc (output) suit the kernels: both a
 * positive multiple of 16. */
VG_HIDDEN bool vg__wino_channels_ok(int64_t ic, int64_t oc);

/* One convolution as the kernels see it: out(y, x, o) = sum over ky, kx, c of
 * in(y - pt + ky, x - pl + kx, c) * f(ky, kx, c, o) [+ bias(o)] [ReLU], with
 * input rows/columns outside the image read as zero. */
typedef struct vg__wino_conv {
    int64_t ih, iw, ic;   /* input image (NHWC, per image) */
    int64_t oh, ow, oc;   /* output image */
    int64_t pt, pl;       /* padding before (top, left) */
    const float *U;       /* transformed filter: vg__wino_filter (36 * ic * oc floats) */
    const float *bias;    /* oc floats or NULL */
    bool relu;
} vg__wino_conv;

/* Floats of the transformed filter: 36 * ic * oc. */
VG_HIDDEN size_t vg__wino_filter_floats(int64_t ic, int64_t oc);

/* Transforms the HWIO 5x5 filter f (5, 5, ci, co) into U (36, ic, oc), rows [k0, k1)
 * of each point's (ic x oc) matrix (all: 0, ic; slices can run on several threads).
 * For the forward pass ic = ci, oc = co; with rot180 (input gradient) ic = co, oc = ci
 * and the filter is used rotated by 180 degrees with its channels swapped. Requires ci
 * and co multiples of 16. */
VG_HIDDEN void vg__wino_filter(const float *f, int64_t ci, int64_t co, bool rot180, float *U, int64_t k0, int64_t k1);

/* Floats of scratch that one vg__wino_conv_images call needs (64-byte aligned). */
VG_HIDDEN size_t vg__wino_conv_scratch_floats(const vg__wino_conv *c);

/* Images [i0, i1) of in (n, ih, iw, ic) into out (n, oh, ow, oc). After each image,
 * done(arg, img) is called when done is not NULL (e.g. to pool it while in cache). */
VG_HIDDEN void vg__wino_conv_images(const vg__wino_conv *c, const float *in, float *out, int64_t i0, int64_t i1,
                                    float *scratch, void (*done)(void *arg, int64_t img), void *arg);

/* Floats of scratch for vg__wino_bf_images calls of at most max_images images each
 * (64-byte aligned). */
VG_HIDDEN size_t vg__wino_bf_scratch_floats(const vg__wino_conv *c, int64_t max_images);

/* Filter gradient, F(5x5,2x2): x images (n, ih, iw, ic), dy (n, oh, ow, oc), same
 * geometry as the forward vg__wino_conv c (U, bias, relu unused). acc (36 * ic * oc
 * floats) receives the transform-domain sum over images [i0, i1) (overwritten when
 * zero_acc, else added to); sums of several calls add up, then vg__wino_filter_grad_out
 * turns one sum into the HWIO gradient. */
VG_HIDDEN void vg__wino_bf_images(const vg__wino_conv *c, const float *x, const float *dy, int64_t i0, int64_t i1,
                                  float *acc, bool zero_acc, float *scratch);
/* df (5, 5, ic, oc) = the inverse transform of acc (36, ic, oc), for the elements
 * [e0, e1) of each (ic x oc) matrix (multiples of 16; all: 0, ic * oc). */
VG_HIDDEN void vg__wino_filter_grad_out(const float *acc, int64_t ic, int64_t oc, float *df, int64_t e0, int64_t e1);

#endif
