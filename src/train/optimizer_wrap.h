/* optimizer_wrap.h - the hook through which an optimizer wraps another (src/train only;
 * not installed): MixedPrecisionLossScaleOptimizer (loss_scale.c). A wrapping
 * vg_optimizer sends vg_optimizer_compute_gradients / apply_gradients to these
 * functions; its gate and learning-rate setters and its name are the inner
 * optimizer's. */
#ifndef VG_TRAIN_OPTIMIZER_WRAP_H
#define VG_TRAIN_OPTIMIZER_WRAP_H

#include "vigil/optimizer.h"

typedef struct vg__optimizer_wrap_ops {
    vg_code (*compute_gradients)(void *ctx, vg_optimizer *inner, vg_graph *g, vg_output loss,
                                 const vg_output *var_list, int nvars, vg_output *grads_out, vg_status *st);
    vg_op *(*apply_gradients)(void *ctx, vg_optimizer *inner, vg_graph *g, const vg_output *grads,
                              const vg_output *vars, int n, vg_output global_step, const char *name);
    void (*free_ctx)(void *ctx);
} vg__optimizer_wrap_ops;

/* A new optimizer wrapping inner (owned from now on, with ctx: vg_optimizer_free frees
 * both). NULL on allocation failure (inner and ctx stay the caller's). */
vg_optimizer *vg__optimizer_wrap(vg_optimizer *inner, const vg__optimizer_wrap_ops *ops, void *ctx);
/* The wrapper's ops, ctx and inner optimizer; NULL when opt wraps nothing. */
const vg__optimizer_wrap_ops *vg__optimizer_wrap_of(const vg_optimizer *opt, void **ctx, vg_optimizer **inner);

#endif
