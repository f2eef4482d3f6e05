/* dist_internal.h - what optimizer.c and dist_optimizer.c share (src/train only; not
 * installed). */
#ifndef VG_TRAIN_DIST_INTERNAL_H
#define VG_TRAIN_DIST_INTERNAL_H

#include "vigil/graph.h"
#include "vigil/status.h"

/* compute_gradients' distributed step (issue 28): in a world of more than one rank
 * (vg_dist_initialized() and vg_dist_size() > 1) grads[0..n) become their mean over
 * the ranks, as vg_dist_allreduce_gradients with the default options builds it, so that
 * a plain minimize keeps the replicas equal. A no-op in a world of one rank and inside
 * vg_dist_compute_gradients (which reduces with its own options: never twice). Fails
 * with vg_dist_allreduce_gradients' errors. */
vg_code vg__dist_auto_average(vg_graph *g, vg_output *grads, int n, vg_status *st);

#endif
