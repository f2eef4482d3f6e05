/* vigil/math_nn_ops.h - two TF 1.15 Python library calls built from existing ops
 * (src/train/math_nn_ops.c, public API only):
 *   tf.nn.dropout(x, keep_prob) with keep_prob a tensor (nn_ops.py, the v1 signature,
 *   which TF 1.15 turns into dropout_v2(x, rate=1 - keep_prob));
 *   tf.math.confusion_matrix(labels, predictions, num_classes) (confusion_matrix.py).
 *
 *     vg_output keep = vg_placeholder(g, VG_FLOAT, NULL, 0, "dropout_prob");
 *     vg_output h = vg_nn_dropout(g, x, keep, 0, NULL);   // x * (1 / keep) * (u >= 1 - keep)
 *     vg_output cm = vg_confusion_matrix(g, y, x, 4, VG_INT32, NULL);
 */
#ifndef VIGIL_MATH_NN_OPS_H
#define VIGIL_MATH_NN_OPS_H

#include "vigil/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tf.nn.dropout(x, keep_prob, seed=seed, name=name) (TF 1.15's v1 form): rate = 1 -
 * keep_prob (op "sub" in the caller's scope), then, under name scope name (NULL:
 * "dropout"), TF's dropout_v2: keep_prob = 1 - rate, scale = 1 / keep_prob,
 * random_uniform(shape(x), seed) >= rate, x * scale * cast(mask), with x's static shape
 * (set_shape). keep_prob: a float scalar tensor of x's dtype (fed at run time, as
 * train.py's dropout_prob); seed 0: the graph's seed rules (vg_graph_get_seed).
 * keep_prob 1 gives x (u >= 0 always). Differentiable (Mul, Cast). Build errors as the
 * other builders: {NULL, 0} and the graph's status (INVALID_ARGUMENT: x not
 * float/double, keep_prob of another dtype or not a scalar). */
VG_API vg_output vg_nn_dropout(vg_graph *g, vg_output x, vg_output keep_prob, int64_t seed, const char *name);

/* tf.math.confusion_matrix(labels, predictions, num_classes, dtype=dtype, name=name):
 * labels and predictions int32/int64 [n] (cast to int64), the [num_classes,
 * num_classes] matrix counting pair (labels[i], predictions[i]) at row labels[i],
 * column predictions[i], of dtype (VG_INT32, TF's default, VG_INT64, VG_FLOAT,
 * VG_DOUBLE). Built as ScatterNd of ones at stack([labels, predictions], 1) (duplicates
 * summed: the same matrix TF's SparseTensorDenseAdd of a zero matrix gives). Run time:
 * a value outside [0, num_classes) fails with INVALID_ARGUMENT (TF's assert_less /
 * assert_non_negative fail likewise). Build time INVALID_ARGUMENT: num_classes <= 0,
 * other dtypes, ranks other than 1. name NULL: "confusion_matrix". */
VG_API vg_output vg_confusion_matrix(vg_graph *g, vg_output labels, vg_output predictions, int64_t num_classes,
                                     vg_dtype dtype, const char *name);

#ifdef __cplusplus
}
#endif
#endif
