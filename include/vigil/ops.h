/*
 * vigil/ops.h - typed builders for the core ops, one per TensorFlow op, named after
 * it (MatMul -> vg_matmul). Each adds one op (sometimes a few helper Consts) to the
 * graph and returns its output; on any failure it returns {NULL, 0} and records the
 * graph's sticky error (see vigil/graph.h). `name` may be NULL: the op type is used,
 * made unique under the current name scope ("MatMul", "MatMul_1", ...). Attrs carry
 * TensorFlow's names ("T", "transpose_a", "dtype", "shape", ...), so graphs export to
 * GraphDef as TensorFlow writes them.
 *
 * Axes and shapes that TF takes as tensors are vg_output inputs; the `_c` variants
 * take C arrays and create the Const for you.
 */
#ifndef VIGIL_OPS_H
#define VIGIL_OPS_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- array ops (src/kernels/array/array_shape_ops.c, array_index_ops.c) ------- */
/* Placeholder(dtype, shape); ndims == -1 for unknown rank, -1 dims unknown. */
VG_API vg_output vg_placeholder(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const char *name);
VG_API vg_output vg_placeholder_with_default(vg_graph *g, vg_output def, const int64_t *dims, int ndims, const char *name);
/* Const holding t (the graph takes a new reference; t must not be modified after). */
VG_API vg_output vg_const(vg_graph *g, vg_tensor *t, const char *name);
VG_API vg_output vg_const_f32(vg_graph *g, float v, const char *name);
VG_API vg_output vg_const_f64(vg_graph *g, double v, const char *name);
VG_API vg_output vg_const_i32(vg_graph *g, int32_t v, const char *name);
VG_API vg_output vg_const_i64(vg_graph *g, int64_t v, const char *name);
VG_API vg_output vg_const_bool(vg_graph *g, bool v, const char *name);
VG_API vg_output vg_const_string(vg_graph *g, const char *s, const char *name);
/* Const of dtype dt with the given dims from values (copied; len = elements*size). */
VG_API vg_output vg_const_array(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const void *values, const char *name);
/* 1-D int32 Const from n ints. */
VG_API vg_output vg_const_i32_vec(vg_graph *g, const int32_t *v, int n, const char *name);
/* Const of dtype dt filled with value, shape dims (scalar when ndims == 0). */
VG_API vg_output vg_const_fill(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, double value, const char *name);
/* tf.constant(value, dtype, shape, verify_shape) of TF 1.15 (constant_v1 /
 * make_tensor_proto) for a numeric value list: values[0..n) row-major, of shape
 * value_dims (NULL: a flat list [n]), converted to dt (float, double, int32, int64,
 * uint8, bool, half), for a Const of shape dims. Fewer values than elements: the last
 * value fills the rest (zeros when n == 0), as TF reads a short TensorProto. Fails
 * ({NULL}, graph error INVALID_ARGUMENT) with TF's messages: "Too many elements provided.
 * Needed at most S, but received n" (ValueError); with verify_shape a value shape other
 * than dims: "Expected Tensor's shape: (2, 4), got (6,)." (TF's TypeError); also a
 * string dtype, a negative dimension, n not matching value_dims. name NULL: "Const".
 * values are copied. */
VG_API vg_output vg_const_values(vg_graph *g, vg_dtype dt, const double *values, int64_t n, const int64_t *value_dims,
                                 int value_ndims, const int64_t *dims, int ndims, bool verify_shape, const char *name);
VG_API vg_output vg_identity(vg_graph *g, vg_output x, const char *name);
/* tf.identity_n: one IdentityN op forwarding xs[0..n) (n >= 1, any dtypes) as its n
 * outputs; gradients pass through. Returns the op (borrowed; output i is xs[i]'s
 * value), NULL with the graph's error (INVALID_ARGUMENT for n < 1). name NULL:
 * "IdentityN". */
VG_API vg_op *vg_identity_n(vg_graph *g, const vg_output *xs, int n, const char *name);
/* StopGradient: identity that blocks gradients. */
VG_API vg_output vg_stop_gradient(vg_graph *g, vg_output x, const char *name);
VG_API vg_op *vg_no_op(vg_graph *g, const char *name);
/* tf.group: a NoOp with control inputs on every op of ops. */
VG_API vg_op *vg_group(vg_graph *g, vg_op *const *ops, int n, const char *name);
VG_API vg_output vg_reshape(vg_graph *g, vg_output x, vg_output shape, const char *name);
VG_API vg_output vg_reshape_c(vg_graph *g, vg_output x, const int64_t *dims, int ndims, const char *name);
/* Shape(x) with out_type VG_INT32 or VG_INT64. */
VG_API vg_output vg_shape_op(vg_graph *g, vg_output x, vg_dtype out_type, const char *name);
VG_API vg_output vg_size(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_rank(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_transpose(vg_graph *g, vg_output x, vg_output perm, const char *name);
VG_API vg_output vg_transpose_c(vg_graph *g, vg_output x, const int32_t *perm, int n, const char *name);
/* ConcatV2(values..., axis) */
VG_API vg_output vg_concat(vg_graph *g, const vg_output *values, int n, vg_output axis, const char *name);
VG_API vg_output vg_concat_c(vg_graph *g, const vg_output *values, int n, int axis, const char *name);
VG_API vg_output vg_slice(vg_graph *g, vg_output x, vg_output begin, vg_output size, const char *name);
VG_API vg_output vg_slice_c(vg_graph *g, vg_output x, const int64_t *begin, const int64_t *size, int n, const char *name);
/* Fill(dims, value) */
VG_API vg_output vg_fill(vg_graph *g, vg_output dims, vg_output value, const char *name);
VG_API vg_output vg_zeros_like(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_ones_like(vg_graph *g, vg_output x, const char *name);
/* tf.zeros_like(x, dtype) / tf.ones_like(x, dtype): x's shape, dtype dt (VG_DTYPE_INVALID
 * or x's own dtype: the ZerosLike / OnesLike op above). For another dtype: a Const named
 * "zeros_like" / "ones_like" (or name) when x's shape is fully known at build time, else
 * "<scope>/Shape", "<scope>/Const" and the Fill "<scope>" with x's static shape. dt must
 * be numeric or bool (else INVALID_ARGUMENT through the graph's status). */
VG_API vg_output vg_zeros_like_dtype(vg_graph *g, vg_output x, vg_dtype dt, const char *name);
VG_API vg_output vg_ones_like_dtype(vg_graph *g, vg_output x, vg_dtype dt, const char *name);
/* Tensor.set_shape(shape): refines t's static (build-time) shape in the graph; later
 * ops built on t see it. dims entries -1 = unknown, ndims -1 = unknown rank (no
 * change). The shapes merge as TF's ShapeRefiner does: unknown dimensions take the
 * known ones. Fails (the shape unchanged, the graph's status untouched: TF raises
 * ValueError, which a caller may catch) with INVALID_ARGUMENT "Shapes must be equal rank,
 * but are 2 and 3" or "Dimension 0 in both shapes must be equal, but are 4 and 3.
 * Shapes are [4,3] and [3,4].", or for a NULL op or bad arguments. Nothing is checked
 * at run time (as in TF, the shape is a promise).
 *
 *     vg_output p = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "p");
 *     if (vg_set_shape(p, (int64_t[]){4, 3}, 2, &st) != VG_OK) return st.code;  // [4,3]
 */
VG_API vg_code vg_set_shape(vg_output t, const int64_t *dims, int ndims, vg_status *st);
/* Pack (tf.stack) along axis. */
VG_API vg_output vg_pack(vg_graph *g, const vg_output *values, int n, int axis, const char *name);
VG_API vg_output vg_expand_dims(vg_graph *g, vg_output x, int axis, const char *name);
/* Squeeze: naxes == 0 squeezes all size-1 dims. */
VG_API vg_output vg_squeeze(vg_graph *g, vg_output x, const int32_t *axes, int naxes, const char *name);
/* Range(start, limit, delta) */
VG_API vg_output vg_range(vg_graph *g, vg_output start, vg_output limit, vg_output delta, const char *name);
/* tf.invert_permutation (InvertPermutation): x a 1-D int32/int64 permutation of
 * 0..n-1; y[x[i]] = i. Run-time INVALID_ARGUMENT when x is not a permutation. Not
 * differentiable (as TF). */
VG_API vg_output vg_invert_permutation(vg_graph *g, vg_output x, const char *name);
/* Where(cond): int64 [num_true, rank] coordinates. */
VG_API vg_output vg_where(vg_graph *g, vg_output cond, const char *name);
/* GatherV2(params, indices, axis) */
VG_API vg_output vg_gather(vg_graph *g, vg_output params, vg_output indices, int axis, const char *name);
/* tf.math.unsorted_segment_sum(data, segment_ids, num_segments) -> UnsortedSegmentSum:
 * out[i, ...] = sum of data[j..., ...] over the j with segment_ids[j...] == i; shape
 * [num_segments] + data.shape[segment_ids.rank:]. data float/double/int32/int64,
 * segment_ids and num_segments (a scalar) int32/int64; a negative id drops its row.
 * Build-time INVALID_ARGUMENT for other dtypes or segment_ids of higher rank than data;
 * run-time INVALID_ARGUMENT "data.shape = [...] does not start with segment_ids.shape =
 * [...]" and "indices[3] = 7 is not in [0, 5)" for an id >= num_segments. The gradient
 * gathers dy at the ids. */
VG_API vg_output vg_unsorted_segment_sum(vg_graph *g, vg_output data, vg_output segment_ids, vg_output num_segments,
                                         const char *name);
/* tf.boolean_mask for a 1-D mask over axis 0 (built from Reshape/Where/Squeeze/GatherV2). */
VG_API vg_output vg_boolean_mask(vg_graph *g, vg_output x, vg_output mask, const char *name);
/* OneHot(indices, depth, on, off), axis -1. */
VG_API vg_output vg_one_hot(vg_graph *g, vg_output indices, int depth, float on, float off, const char *name);
/* Tile(x, multiples) */
VG_API vg_output vg_tile(vg_graph *g, vg_output x, vg_output multiples, const char *name);
/* BroadcastGradientArgs(s0, s1) -> outputs 0 (r0) and 1 (r1). Returns the op. */
VG_API vg_op *vg_broadcast_gradient_args(vg_graph *g, vg_output s0, vg_output s1, const char *name);

/* ---- random ops (src/kernels/math/random_ops.c) ------------------------------ */
/* Raw ops; seed/seed2 as TF attrs (use vg_graph_get_seed for TF's rules). */
VG_API vg_output vg_random_uniform(vg_graph *g, vg_output shape, vg_dtype dt, int64_t seed, int64_t seed2, const char *name);
VG_API vg_output vg_random_standard_normal(vg_graph *g, vg_output shape, vg_dtype dt, int64_t seed, int64_t seed2, const char *name);
VG_API vg_output vg_truncated_normal(vg_graph *g, vg_output shape, vg_dtype dt, int64_t seed, int64_t seed2, const char *name);
/* RandomShuffle along the first dimension. */
VG_API vg_output vg_random_shuffle(vg_graph *g, vg_output x, int64_t seed, int64_t seed2, const char *name);

/* ---- math ops (src/kernels/math/math_cwise_ops.c, math_reduce_ops.c) -------- */
/* Binary ops broadcast as NumPy/TF. vg_add emits AddV2; vg_add_legacy emits Add. */
VG_API vg_output vg_add(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_add_legacy(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_sub(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_mul(vg_graph *g, vg_output a, vg_output b, const char *name);
/* RealDiv */
VG_API vg_output vg_div(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_maximum(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_minimum(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_pow(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_squared_difference(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_greater(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_greater_equal(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_less(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_less_equal(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_equal(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_not_equal(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_logical_and(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_logical_or(vg_graph *g, vg_output a, vg_output b, const char *name);
VG_API vg_output vg_logical_not(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_neg(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_square(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_sqrt(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_rsqrt(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_exp(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_log(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_abs(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_sign(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_reciprocal(vg_graph *g, vg_output x, const char *name);
/* Select(cond, t, e) (TF1 Select: cond same shape as t, or a vector over dim 0). */
VG_API vg_output vg_select(vg_graph *g, vg_output cond, vg_output t, vg_output e, const char *name);
/* AddN(inputs) */
VG_API vg_output vg_add_n(vg_graph *g, const vg_output *inputs, int n, const char *name);
VG_API vg_output vg_cast(vg_graph *g, vg_output x, vg_dtype dt, const char *name);
VG_API vg_output vg_is_finite(vg_graph *g, vg_output x, const char *name);
/* CheckNumerics: INVALID_ARGUMENT "<message> : Tensor had NaN values" (or Inf). */
VG_API vg_output vg_check_numerics(vg_graph *g, vg_output x, const char *message, const char *name);
/* Reductions: Sum/Mean/Max/Min/Prod/All/Any(x, reduction_indices, keep_dims). */
VG_API vg_output vg_sum(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name);
VG_API vg_output vg_mean(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name);
VG_API vg_output vg_max(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name);
VG_API vg_output vg_min(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name);
VG_API vg_output vg_prod(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name);
VG_API vg_output vg_all(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name);
VG_API vg_output vg_any(vg_graph *g, vg_output x, vg_output axes, bool keep_dims, const char *name);
/* tf.reduce_*: axes from a C array; naxes < 0 reduces over all axes (as axis=None). */
VG_API vg_output vg_reduce_sum(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name);
VG_API vg_output vg_reduce_mean(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name);
VG_API vg_output vg_reduce_max(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name);
VG_API vg_output vg_reduce_min(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name);
VG_API vg_output vg_reduce_all(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name);
VG_API vg_output vg_reduce_any(vg_graph *g, vg_output x, const int32_t *axes, int naxes, bool keep_dims, const char *name);
/* ArgMax(x, dimension) with output_type VG_INT64 or VG_INT32. */
VG_API vg_output vg_argmax(vg_graph *g, vg_output x, int axis, vg_dtype output_type, const char *name);
VG_API vg_output vg_argmin(vg_graph *g, vg_output x, int axis, vg_dtype output_type, const char *name);

/* ---- nn ops (src/kernels/nn/nn_ops.c) -------------------------------------- */
VG_API vg_output vg_matmul(vg_graph *g, vg_output a, vg_output b, bool transpose_a, bool transpose_b, const char *name);
VG_API vg_output vg_bias_add(vg_graph *g, vg_output x, vg_output bias, const char *name);
VG_API vg_output vg_relu(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_sigmoid(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_tanh(vg_graph *g, vg_output x, const char *name);
VG_API vg_output vg_softmax(vg_graph *g, vg_output logits, const char *name);
VG_API vg_output vg_log_softmax(vg_graph *g, vg_output logits, const char *name);
/* SoftmaxCrossEntropyWithLogits(features, labels): output 0 loss [batch], 1 backprop. */
VG_API vg_op *vg_softmax_xent(vg_graph *g, vg_output logits, vg_output labels, const char *name);
/* SparseSoftmaxCrossEntropyWithLogits(features, labels int32/int64): same outputs. */
VG_API vg_op *vg_sparse_softmax_xent(vg_graph *g, vg_output logits, vg_output labels, const char *name);
/* tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name): labels [d0..dn-1]
 * int32/int64, logits [d0..dn-1, classes]; the cost [d0..dn-1]. Rank 2 logits: the op
 * itself (named name or "SparseSoftmaxCrossEntropyWithLogits"); other ranks: reshaped to
 * [-1, classes] and back to the labels' shape in that name scope, as TF's nn_ops.py.
 * {NULL, 0} with graph error INVALID_ARGUMENT for NULL inputs, logits of rank 0 or
 * unknown rank (other than 2), "Rank mismatch: Rank of labels (received 1) should equal
 * rank of logits minus 1 (received 3)." */
VG_API vg_output vg_sparse_softmax_cross_entropy_with_logits(vg_graph *g, vg_output labels, vg_output logits,
                                                             const char *name);
/* Conv2D NHWC; strides[4]; padding "SAME" or "VALID". filter is [kh, kw, in, out]. */
VG_API vg_output vg_conv2d(vg_graph *g, vg_output x, vg_output filter, const int64_t strides[4], const char *padding, const char *name);
VG_API vg_output vg_max_pool(vg_graph *g, vg_output x, const int64_t ksize[4], const int64_t strides[4], const char *padding, const char *name);
VG_API vg_output vg_avg_pool(vg_graph *g, vg_output x, const int64_t ksize[4], const int64_t strides[4], const char *padding, const char *name);
/* Gradient ops, also usable directly. */
VG_API vg_output vg_relu_grad(vg_graph *g, vg_output dy, vg_output features, const char *name);
VG_API vg_output vg_sigmoid_grad(vg_graph *g, vg_output y, vg_output dy, const char *name);
VG_API vg_output vg_tanh_grad(vg_graph *g, vg_output y, vg_output dy, const char *name);
VG_API vg_output vg_bias_add_grad(vg_graph *g, vg_output dy, const char *name);
VG_API vg_output vg_conv2d_backprop_input(vg_graph *g, vg_output input_sizes, vg_output filter, vg_output dy, const int64_t strides[4], const char *padding, const char *name);
VG_API vg_output vg_conv2d_backprop_filter(vg_graph *g, vg_output input, vg_output filter_sizes, vg_output dy, const int64_t strides[4], const char *padding, const char *name);
VG_API vg_output vg_max_pool_grad(vg_graph *g, vg_output x, vg_output y, vg_output dy, const int64_t ksize[4], const int64_t strides[4], const char *padding, const char *name);
VG_API vg_output vg_avg_pool_grad(vg_graph *g, vg_output input_shape, vg_output dy, const int64_t ksize[4], const int64_t strides[4], const char *padding, const char *name);

/* ---- state ops (src/kernels/state/state_ops.c) -------------------------------- */
/* VariableV2(shape, dtype): a variable that lives in each session. Output 0 is the
 * variable's reference (TF's ref edge): consumers that write (Assign, Apply*) take it
 * as a ref input; Identity and the control-flow ops pass it on; every other consumer
 * reads the variable's value when that consumer runs, after all it depends on (data
 * or control), so under control_dependencies([update]) it sees the update, and inside
 * a while loop the value live in that iteration. A value once read does not change
 * (writers copy a buffer still held). A fetch reads it when the fetched op completes;
 * the fetched tensor is a copy the caller owns. */
VG_API vg_output vg_variable_op(vg_graph *g, vg_dtype dt, const int64_t *dims, int ndims, const char *name);
VG_API vg_output vg_assign(vg_graph *g, vg_output ref, vg_output value, bool validate_shape, const char *name);
VG_API vg_output vg_assign_add(vg_graph *g, vg_output ref, vg_output value, const char *name);
VG_API vg_output vg_assign_sub(vg_graph *g, vg_output ref, vg_output value, const char *name);
VG_API vg_output vg_is_variable_initialized(vg_graph *g, vg_output ref, const char *name);
/* Assert(condition, data...): a run fails with INVALID_ARGUMENT "assertion failed: [...]". */
VG_API vg_op *vg_assert(vg_graph *g, vg_output cond, const vg_output *data, int ndata, int summarize, const char *name);

/* ---- training apply ops (src/kernels/state/training_ops.c) -------------------- */
VG_API vg_output vg_apply_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output delta, bool use_locking, const char *name);
VG_API vg_output vg_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad, vg_output momentum, bool use_locking, bool use_nesterov, const char *name);
VG_API vg_output vg_apply_adam(vg_graph *g, vg_output var, vg_output m, vg_output v, vg_output beta1_power, vg_output beta2_power, vg_output lr, vg_output beta1, vg_output beta2, vg_output epsilon, vg_output grad, bool use_locking, bool use_nesterov, const char *name);
/* ApplyAdagrad (update_slots: TF's default true), ApplyAdadelta, ApplyFtrl, ApplyFtrlV2,
 * ApplyProximalGradientDescent: TF's training_ops with TF's input order; the slots are
 * ref inputs like var. Ftrl fails at run time with INVALID_ARGUMENT for lr <= 0,
 * lr_power > 0 or a negative l1, l2 or l2_shrinkage. */
VG_API vg_output vg_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad, bool use_locking, bool update_slots, const char *name);
VG_API vg_output vg_apply_adadelta(vg_graph *g, vg_output var, vg_output accum, vg_output accum_update, vg_output lr, vg_output rho, vg_output epsilon, vg_output grad, bool use_locking, const char *name);
VG_API vg_output vg_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad, vg_output lr, vg_output l1, vg_output l2, vg_output lr_power, bool use_locking, const char *name);
VG_API vg_output vg_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad, vg_output lr, vg_output l1, vg_output l2, vg_output l2_shrinkage, vg_output lr_power, bool use_locking, const char *name);
VG_API vg_output vg_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output l1, vg_output l2, vg_output delta, bool use_locking, const char *name);
/* The sparse forms: grad [N] + var.shape[1:], indices [N] (int32/int64); only the
 * indexed rows of var and its slots change, a repeated index is applied once per
 * occurrence. An index outside [0, var.shape[0]) fails at run time with
 * INVALID_ARGUMENT ("Index 7 at offset 1 in indices is out of range") before any row
 * changes. */
VG_API vg_output vg_sparse_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad, vg_output indices, bool use_locking, bool update_slots, const char *name);
VG_API vg_output vg_sparse_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad, vg_output indices, vg_output momentum, bool use_locking, bool use_nesterov, const char *name);
VG_API vg_output vg_sparse_apply_adadelta(vg_graph *g, vg_output var, vg_output accum, vg_output accum_update, vg_output lr, vg_output rho, vg_output epsilon, vg_output grad, vg_output indices, bool use_locking, const char *name);
VG_API vg_output vg_sparse_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad, vg_output indices, vg_output lr, vg_output l1, vg_output l2, vg_output lr_power, bool use_locking, const char *name);
VG_API vg_output vg_sparse_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad, vg_output indices, vg_output lr, vg_output l1, vg_output l2, vg_output l2_shrinkage, vg_output lr_power, bool use_locking, const char *name);
VG_API vg_output vg_sparse_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output l1, vg_output l2, vg_output grad, vg_output indices, bool use_locking, const char *name);
VG_API vg_output vg_sparse_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom, vg_output lr, vg_output rho, vg_output momentum, vg_output epsilon, vg_output grad, vg_output indices, bool use_locking, const char *name);
VG_API vg_output vg_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom, vg_output lr, vg_output rho, vg_output momentum, vg_output epsilon, vg_output grad, bool use_locking, const char *name);

#ifdef __cplusplus
}
#endif
#endif
