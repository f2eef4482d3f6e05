/*
 * vigil/metrics.h - tf.metrics (TF 1.15 metrics_impl.py): streaming metrics kept in
 * local variables. Each metric returns a value tensor and an update op; run the update
 * op once per batch and read the value at the end (the update op also yields the value
 * after its own update). The variables are zero-initialized local variables, added to
 * the "local_variables" and "metric_variables" collections, so
 * vg_local_variables_initializer resets them.
 *
 *     vg_metric acc = vg_metrics_accuracy(g, y, vg_argmax(g, x, 1, VG_INT64, NULL), NULL);
 *     vg_op *init = vg_local_variables_initializer(g);
 *     (void)init; // run init, then acc.update per batch; fetch acc.value at the end
 *
 * Names follow TF: the metric's scope ("accuracy", "mean", "auc", ... made unique, or
 * opts->name), variables "<scope>/total" and "<scope>/count" (mean, accuracy,
 * mean_squared_error, mean_absolute_error), "<scope>/count" (true_positives, ...),
 * "<scope>/true_positives/count" and "<scope>/false_positives/count" (precision),
 * "<scope>/true_positives" ... (the [num_thresholds] variables of auc and of the
 * *_at_thresholds metrics), "<scope>/total_confusion_matrix" (mean_iou, float64),
 * "recall_at_<k>/true_positive_at_<k>" (float64). The value tensor is "<scope>/value"
 * where TF names it so, the update "<scope>/update_op".
 *
 * On failure a builder returns value and update {NULL, 0} and records the graph's
 * sticky error: INVALID_ARGUMENT when labels and predictions have incompatible shapes
 * ("Shapes (2, 3) and (2, 4) are incompatible", after TF's squeeze of a trailing 1),
 * weights that cannot broadcast, num_thresholds < 2, num_classes < 1, k < 1, an
 * unknown curve or summation method; RESOURCE_EXHAUSTED. At run time auc and the
 * *_at_thresholds metrics fail with INVALID_ARGUMENT ("predictions must be in [0, 1]")
 * for predictions outside [0, 1], mean_iou for labels or predictions outside
 * [0, num_classes). Nothing returned is owned by the caller beyond the graph.
 */
#ifndef VIGIL_METRICS_H
#define VIGIL_METRICS_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef VG_METRIC_VARIABLES
#define VG_METRIC_VARIABLES "metric_variables"
#endif

/* A metric: (value, update_op) as TF returns them. */
typedef struct vg_metric {
    vg_output value;  /* the metric computed from the variables */
    vg_output update; /* updates the variables with a batch and yields the new value */
} vg_metric;

/* Options shared by the metrics; a zeroed struct (or NULL) gives TF's defaults. */
typedef struct vg_metric_opts {
    vg_output weights;              /* {NULL, 0}: every element weighs 1 */
    const char *name;               /* NULL: the metric's default scope name */
    const char *metrics_collection; /* NULL: none; else the value is added to it */
    const char *updates_collection; /* NULL: none; else the update is added to it */
} vg_metric_opts;

/* tf.metrics.mean(values): total / count (div_no_nan). */
VG_API vg_metric vg_metrics_mean(vg_graph *g, vg_output values, const vg_metric_opts *opts);
/* tf.metrics.accuracy(labels, predictions): mean of Equal(predictions, labels)
 * (predictions cast to the labels' dtype). */
VG_API vg_metric vg_metrics_accuracy(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts);
/* tf.metrics.mean_squared_error / mean_absolute_error. */
VG_API vg_metric vg_metrics_mean_squared_error(vg_graph *g, vg_output labels, vg_output predictions,
                                               const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_mean_absolute_error(vg_graph *g, vg_output labels, vg_output predictions,
                                                const vg_metric_opts *opts);
/* tf.metrics.root_mean_squared_error: Sqrt of mean_squared_error's value and update
 * (variables "root_mean_squared_error/total", ".../count"). */
VG_API vg_metric vg_metrics_root_mean_squared_error(vg_graph *g, vg_output labels, vg_output predictions,
                                                    const vg_metric_opts *opts);

/* tf.metrics.mean_relative_error(labels, predictions, normalizer): mean of
 * |labels - predictions| / normalizer (0 where normalizer is 0). */
VG_API vg_metric vg_metrics_mean_relative_error(vg_graph *g, vg_output labels, vg_output predictions,
                                                vg_output normalizer, const vg_metric_opts *opts);
/* tf.metrics.mean_cosine_distance(labels, predictions, dim): 1 - mean of the sums along
 * dim of predictions * labels (unit vectors expected). */
VG_API vg_metric vg_metrics_mean_cosine_distance(vg_graph *g, vg_output labels, vg_output predictions, int dim,
                                                 const vg_metric_opts *opts);
/* tf.metrics.percentage_below(values, threshold): the fraction of values < threshold
 * (scope "percentage_below_threshold"). */
VG_API vg_metric vg_metrics_percentage_below(vg_graph *g, vg_output values, double threshold,
                                             const vg_metric_opts *opts);
/* tf.metrics.mean_tensor(values): element-wise mean over the batches (variables
 * "mean/total_tensor", "mean/count_tensor" of values' fully defined shape). */
VG_API vg_metric vg_metrics_mean_tensor(vg_graph *g, vg_output values, const vg_metric_opts *opts);
/* tf.metrics.mean_per_class_accuracy(labels, predictions, num_classes): the mean over
 * the classes of correct / seen (scope "mean_accuracy", variables "total" and "count"
 * [num_classes]; classes never seen count as 0, as TF). The update yields the
 * [num_classes] per-class accuracies (TF's update_op), the value their mean. Labels outside
 * [0, num_classes) fail at run time with INVALID_ARGUMENT. */
VG_API vg_metric vg_metrics_mean_per_class_accuracy(vg_graph *g, vg_output labels, vg_output predictions,
                                                    int num_classes, const vg_metric_opts *opts);

/* tf.metrics.true_positives / false_positives / true_negatives / false_negatives:
 * weighted count of the condition, labels and predictions cast to bool. */
VG_API vg_metric vg_metrics_true_positives(vg_graph *g, vg_output labels, vg_output predictions,
                                           const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_false_positives(vg_graph *g, vg_output labels, vg_output predictions,
                                            const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_true_negatives(vg_graph *g, vg_output labels, vg_output predictions,
                                           const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_false_negatives(vg_graph *g, vg_output labels, vg_output predictions,
                                            const vg_metric_opts *opts);
/* tf.metrics.precision: tp / (tp + fp), 0 while tp + fp == 0. */
VG_API vg_metric vg_metrics_precision(vg_graph *g, vg_output labels, vg_output predictions,
                                      const vg_metric_opts *opts);
/* tf.metrics.recall: tp / (tp + fn), 0 while tp + fn == 0. */
VG_API vg_metric vg_metrics_recall(vg_graph *g, vg_output labels, vg_output predictions, const vg_metric_opts *opts);

/* tf.metrics.{true,false}_{positives,negatives}_at_thresholds: [nthresholds] float32
 * counts; a prediction p counts as positive at threshold t when p > t. Predictions in
 * [0, 1]. */
VG_API vg_metric vg_metrics_true_positives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                         const double *thresholds, int nthresholds,
                                                         const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_false_positives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                          const double *thresholds, int nthresholds,
                                                          const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_true_negatives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                         const double *thresholds, int nthresholds,
                                                         const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_false_negatives_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                          const double *thresholds, int nthresholds,
                                                          const vg_metric_opts *opts);

/* tf.metrics.precision_at_thresholds / recall_at_thresholds: [nthresholds] values
 * tp / (1e-7 + tp + fp) and tp / (1e-7 + tp + fn). */
VG_API vg_metric vg_metrics_precision_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                    const double *thresholds, int nthresholds,
                                                    const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_recall_at_thresholds(vg_graph *g, vg_output labels, vg_output predictions,
                                                 const double *thresholds, int nthresholds,
                                                 const vg_metric_opts *opts);

/* tf.metrics.auc(labels, predictions, num_thresholds=200, curve='ROC',
 * summation_method='trapezoidal'): thresholds -1e-7, 1/(n-1), ..., (n-2)/(n-1), 1+1e-7;
 * curve "ROC" or "PR" (NULL: "ROC"); summation "trapezoidal", "minoring" or "majoring"
 * (NULL: "trapezoidal"; "careful_interpolation" is not implemented: UNIMPLEMENTED). */
VG_API vg_metric vg_metrics_auc(vg_graph *g, vg_output labels, vg_output predictions, int num_thresholds,
                                const char *curve, const char *summation_method, const vg_metric_opts *opts);

/* tf.metrics.sensitivity_at_specificity(labels, predictions, specificity,
 * num_thresholds=200) / specificity_at_sensitivity(..., sensitivity, ...): auc's
 * thresholds; at the threshold whose specificity (sensitivity) is nearest the target,
 * tp / (tp + fn + 1e-7) (tn / (tn + fp + 1e-7)). A target outside [0, 1] is
 * INVALID_ARGUMENT. */
VG_API vg_metric vg_metrics_sensitivity_at_specificity(vg_graph *g, vg_output labels, vg_output predictions,
                                                       double specificity, int num_thresholds,
                                                       const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_specificity_at_sensitivity(vg_graph *g, vg_output labels, vg_output predictions,
                                                       double sensitivity, int num_thresholds,
                                                       const vg_metric_opts *opts);

/* tf.metrics.mean_iou(labels, predictions, num_classes): mean over the classes present
 * of TP / (TP + FP + FN) from a float64 confusion matrix; labels and predictions
 * integer (or float, truncated as TF's cast to int64) class ids. */
VG_API vg_metric vg_metrics_mean_iou(vg_graph *g, vg_output labels, vg_output predictions, int num_classes,
                                     const vg_metric_opts *opts);

/* tf.metrics.recall_at_k(labels, predictions, k, class_id): predictions [batch,
 * classes] scores, labels int32/int64 [batch] or [batch, num_labels] class ids (unique
 * within a row; ids outside [0, classes) count as false negatives). class_id < 0: all
 * classes. value = tp / (tp + fn) (NaN before any label, as TF), float64 variables
 * "recall_at_<k>[_class<id>]/true_positive_at_<k>[_class<id>]" and
 * ".../false_negative_at_<k>...". weights: scalar or [batch] (one per row). */
VG_API vg_metric vg_metrics_recall_at_k(vg_graph *g, vg_output labels, vg_output predictions, int k, int class_id,
                                        const vg_metric_opts *opts);
/* tf.metrics.recall_at_top_k: the same with predictions_idx [batch, k] (the indices of
 * the top k, e.g. TopKV2's output 1). */
VG_API vg_metric vg_metrics_recall_at_top_k(vg_graph *g, vg_output labels, vg_output predictions_idx, int k,
                                            int class_id, const vg_metric_opts *opts);
/* tf.metrics.precision_at_k / precision_at_top_k: tp / (tp + fp) over the top k
 * predictions, variables ".../true_positive_at_<k>", ".../false_positive_at_<k>". */
VG_API vg_metric vg_metrics_precision_at_k(vg_graph *g, vg_output labels, vg_output predictions, int k, int class_id,
                                           const vg_metric_opts *opts);
VG_API vg_metric vg_metrics_precision_at_top_k(vg_graph *g, vg_output labels, vg_output predictions_idx, int k,
                                               int class_id, const vg_metric_opts *opts);

/* tf.contrib.metrics.aggregate_metric_map({name: (value, update_op)}): the map split
 * into its values and its update ops, in the same order: values[i] = metrics[i].value,
 * updates[i] = metrics[i].update (tf.contrib.metrics.aggregate_metrics is the same on
 * a list). Returns INVALID_ARGUMENT when an array is NULL with n > 0, or n < 0. */
VG_API vg_code vg_aggregate_metric_map(const vg_metric *metrics, int n, vg_output *values, vg_output *updates);

#ifdef __cplusplus
}
#endif
#endif
