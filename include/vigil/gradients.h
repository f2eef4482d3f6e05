/*
 * vigil/gradients.h - symbolic differentiation (tf.gradients).
 *
 *     vg_output dw;
 *     vg_gradients(g, &loss, 1, &w, 1, NULL, &dw, &st);   // adds ops under "gradients/"
 *
 * The gradient ops are added to the graph under a unique "gradients" name scope, each
 * op's under "gradients/<op name>_grad/", exactly as TensorFlow lays them out. Gradients
 * flowing into the same tensor from several consumers are summed with AddN.
 */
#ifndef VIGIL_GRADIENTS_H
#define VIGIL_GRADIENTS_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds d(sum ys)/d(xs) to the graph. grad_ys (may be NULL) gives the initial gradient
 * of each y (default: ones of y's shape, "gradients/Fill"). dxs[i] gets the gradient
 * for xs[i], or {NULL, 0} when xs[i] does not depend on ys (TF's None).
 * Fails with: LOOKUP-style INVALID_ARGUMENT "No gradient defined for operation 'X'
 * (op type: T)" when an op on the path has no gradient; the graph's sticky error;
 * FAILED_PRECONDITION when the graph is finalized. */
VG_API vg_code vg_gradients(vg_graph *g, const vg_output *ys, int nys, const vg_output *xs, int nxs,
                            const vg_output *grad_ys, vg_output *dxs, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
