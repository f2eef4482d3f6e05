/*
 * vigil/losses.h - tf.losses (TF 1.15 losses_impl.py) and the contrib l1/l2
 * regularizers: each loss computes per-element losses, weights them and reduces them
 * as compute_weighted_loss does, under the loss's name scope ("absolute_difference",
 * "mean_squared_error", "huber_loss", "hinge_loss", "log_loss",
 * "sigmoid_cross_entropy_loss", "softmax_cross_entropy_loss",
 * "sparse_softmax_cross_entropy_loss", "cosine_distance_loss"), and adds the result to
 * the loss collection ("losses" by default).
 *
 * On failure a builder returns {NULL, 0} and records the graph's sticky error:
 * INVALID_ARGUMENT when labels and predictions have incompatible shapes ("Shapes (2, 3)
 * and (2, 4) are incompatible"), weights cannot broadcast to the losses ("weights can
 * not be broadcast to values."), a negative regularizer scale, or no losses for
 * get_total_loss. Nothing returned is owned by the caller beyond the graph.
 */
#ifndef VIGIL_LOSSES_H
#define VIGIL_LOSSES_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef VG_REGULARIZATION_LOSSES
#define VG_REGULARIZATION_LOSSES "regularization_losses"
#endif

/* tf.losses.Reduction. The zero value is TF's default SUM_BY_NONZERO_WEIGHTS. */
typedef enum vg_reduction {
    VG_REDUCTION_SUM_BY_NONZERO_WEIGHTS = 0, /* sum / number of non-zero weights */
    VG_REDUCTION_NONE,                       /* weighted element losses */
    VG_REDUCTION_SUM,                        /* sum of weighted losses */
    VG_REDUCTION_SUM_OVER_BATCH_SIZE,        /* sum / number of elements */
    VG_REDUCTION_MEAN                        /* sum / sum of weights */
} vg_reduction;

/* Options shared by the losses; a zeroed struct (or NULL) gives TF's defaults. */
typedef struct vg_loss_opts {
    vg_output weights;           /* {NULL, 0}: 1.0; else scalar or broadcastable to the losses */
    const char *scope;           /* NULL: the loss's default name */
    const char *loss_collection; /* NULL: "losses"; "" adds to none */
    vg_reduction reduction;
} vg_loss_opts;

/* tf.losses.compute_weighted_loss(losses, weights, scope "weighted_loss", ...). */
VG_API vg_output vg_losses_compute_weighted_loss(vg_graph *g, vg_output losses, const vg_loss_opts *opts);
VG_API vg_output vg_losses_absolute_difference(vg_graph *g, vg_output labels, vg_output predictions,
                                               const vg_loss_opts *opts);
VG_API vg_output vg_losses_mean_squared_error(vg_graph *g, vg_output labels, vg_output predictions,
                                              const vg_loss_opts *opts);
/* delta: TF's default 1.0. */
VG_API vg_output vg_losses_huber_loss(vg_graph *g, vg_output labels, vg_output predictions, double delta,
                                      const vg_loss_opts *opts);
/* labels in {0, 1}: relu(1 - (2 * labels - 1) * logits). */
VG_API vg_output vg_losses_hinge_loss(vg_graph *g, vg_output labels, vg_output logits, const vg_loss_opts *opts);
/* epsilon: TF's default 1e-7. */
VG_API vg_output vg_losses_log_loss(vg_graph *g, vg_output labels, vg_output predictions, double epsilon,
                                    const vg_loss_opts *opts);
VG_API vg_output vg_losses_sigmoid_cross_entropy(vg_graph *g, vg_output multi_class_labels, vg_output logits,
                                                 double label_smoothing, const vg_loss_opts *opts);
/* onehot_labels [batch, classes] (cast to the logits' dtype); label smoothing as TF. */
VG_API vg_output vg_losses_softmax_cross_entropy(vg_graph *g, vg_output onehot_labels, vg_output logits,
                                                 double label_smoothing, const vg_loss_opts *opts);
/* labels int32/int64 [batch], logits [batch, classes]. */
VG_API vg_output vg_losses_sparse_softmax_cross_entropy(vg_graph *g, vg_output labels, vg_output logits,
                                                        const vg_loss_opts *opts);
/* 1 - sum(labels * predictions, axis, keepdims) (inputs unit-normalised by the caller). */
VG_API vg_output vg_losses_cosine_distance(vg_graph *g, vg_output labels, vg_output predictions, int axis,
                                           const vg_loss_opts *opts);
/* tf.losses.add_loss(loss, collection NULL = "losses"). */
VG_API vg_code vg_losses_add_loss(vg_graph *g, vg_output loss, const char *collection);
/* tf.losses.get_regularization_loss(name "total_regularization_loss"): AddN of the
 * REGULARIZATION_LOSSES collection, or a Const 0.0 when empty. */
VG_API vg_output vg_losses_get_regularization_loss(vg_graph *g, const char *name);
/* tf.losses.get_total_loss(add_regularization_losses, name "total_loss"): AddN of
 * LOSSES (+ REGULARIZATION_LOSSES). INVALID_ARGUMENT "No losses found" when empty. */
VG_API vg_output vg_losses_get_total_loss(vg_graph *g, bool add_regularization_losses, const char *name);
/* tf.contrib.layers.l2_regularizer(scale)(weights): scale * L2Loss(weights) named
 * "l2_regularizer"; l1: scale * sum(|weights|) named "l1_regularizer". scale 0 gives
 * {NULL, 0} without error (TF returns None); a negative scale is INVALID_ARGUMENT. The
 * result is not added to any collection (callers add it to REGULARIZATION_LOSSES). */
VG_API vg_output vg_l2_regularizer(vg_graph *g, double scale, vg_output weights);
VG_API vg_output vg_l1_regularizer(vg_graph *g, double scale, vg_output weights);

#ifdef __cplusplus
}
#endif
#endif
